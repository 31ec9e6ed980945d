//! The terminal: a line of ladder's output that may hold text from outside (a server's error
//! body, a model id, a folder's reason) shows control characters as escapes, so no input can
//! move the cursor, clear the screen, recolour or retitle the terminal (ANSI/OSC sequences),
//! or forge a line of its own.

/// `s` with every control character except a line break shown as its Rust escape (`\u{1b}`,
/// `\r`, `\t`) and Unicode line and paragraph separators as `\u{2028}` / `\u{2029}`. Line
/// breaks are kept: a message of several lines (a diagnostic's hint) stays readable; each is
/// ladder's own line prefix or the message's continuation.
pub fn line(s: &str) -> String {
    if !s
        .chars()
        .any(|c| (c.is_control() && c != '\n') || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if (c.is_control() && c != '\n') || matches!(c, '\u{2028}' | '\u{2029}') {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn control_sequences_are_shown_never_sent() {
        assert_eq!(line("plain text\nnext"), "plain text\nnext");
        assert_eq!(
            line("bad \u{1b}[2J\u{1b}]0;owned\u{7} x\rforged"),
            "bad \\u{1b}[2J\\u{1b}]0;owned\\u{7} x\\rforged"
        );
        assert!(!line("\u{9b}31m \u{2028}").chars().any(|c| c.is_control()));
    }
}
