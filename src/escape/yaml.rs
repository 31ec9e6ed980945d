//! YAML written by ladder (`ladder init`): a comment holds text from outside (a pasted
//! command line) on comment lines only.

/// `text` as YAML comment lines, each `# …` and ending in a newline: every line break YAML
/// knows (`\n`, `\r`, and YAML 1.1's `\u{85}`, `\u{2028}`, `\u{2029}`) starts a new comment
/// line, and other control characters become spaces, so nothing in `text` can end the
/// comment and become a key.
pub fn comment(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for line in text.split(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']) {
        let line: String = line
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let line = line.trim_end();
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::comment;

    #[test]
    fn every_line_of_a_comment_is_commented() {
        assert_eq!(comment("a b"), "# a b\n");
        assert_eq!(
            comment("x\nname: evil\r\nmodel: m\u{2028}k: v\u{85}z"),
            "# x\n# name: evil\n#\n# model: m\n# k: v\n# z\n"
        );
        assert_eq!(comment("tab\there\u{0}"), "# tab here\n");
        for line in comment("a\n\rb\u{2029}c").lines() {
            assert!(line.starts_with('#'), "{line:?}");
        }
    }
}
