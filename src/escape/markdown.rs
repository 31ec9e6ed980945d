//! Markdown (GitHub-flavoured): text from outside as plain text or as a code span, never as
//! markup. Every Markdown writer (summary.md, gate `--markdown`, history `--summary`) puts
//! outside text through [`text`], [`code`] or [`cell`].

/// `s` as plain Markdown text on one line, fit to start a line: every character that could
/// open markup is backslash-escaped (emphasis `*`, `_` at a word's edge, a code span, raw
/// HTML or an autolink `<`, an entity `&name;`, a link or image `](` / `][`, a table border
/// `|`, strikethrough `~~`; at the start: a heading, quote, list item or rule), and line
/// breaks become spaces. What cannot open markup (`[0.96, 1.04]`, `-5%`, `16.06`,
/// `median_ttft_ms`) is left as it is, so ladder's own words read the same.
pub fn text(s: &str) -> String {
    escape(s, true)
}

/// The characters of `s` that could open markup, escaped; with `line_start`, also the block
/// markers a line may start with.
fn escape(s: &str, line_start: bool) -> String {
    let chars: Vec<char> = one_line(s).chars().collect();
    let at = |j: usize| chars.get(j).copied();
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let gap = |c: Option<char>| c.is_none_or(|c| c == ' ');
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let first = line_start && chars[..i].iter().all(|c| *c == ' ');
        let prev = i.checked_sub(1).and_then(at);
        let next = at(i + 1);
        let escape = match c {
            '\\' | '`' | '*' | '<' | '|' => true,
            '_' => !(word(prev) && word(next)),
            ']' => matches!(next, Some('(' | '[' | ':')),
            '~' => prev == Some('~') || next == Some('~'),
            '&' => next.is_some_and(|n| n == '#' || n.is_ascii_alphabetic()),
            '>' => first,
            '#' | '-' | '+' => first && (gap(next) || c == '#' && next == Some('#')),
            '=' => first,
            // `1.` / `1)` start an ordered list: digits first on the line, then a gap.
            '.' | ')' => {
                line_start
                    && gap(next)
                    && i > 0
                    && chars[..i]
                        .iter()
                        .skip_while(|c| **c == ' ')
                        .all(char::is_ascii_digit)
                    && prev.is_some_and(|p| p.is_ascii_digit())
            }
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Ladder's own message with outside text in it (a warning naming a server's model ids, a
/// status detail), as Markdown on one line after ladder's own words (a list marker, a
/// label, a table border: never a line's start): the code spans it holds are kept (their text is
/// literal in Markdown, and writers put outside values in them with [`code`]), everything
/// else is [`text`]. A backtick run with no closing run of the same length is escaped, so no
/// input can leave a span open.
pub fn inline(s: &str) -> String {
    let s = one_line(s);
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len() + 8);
    let mut plain_from = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let open = i;
        while i < b.len() && b[i] == b'`' {
            i += 1;
        }
        let n = i - open;
        let Some(close) = closing_run(b, i, n) else {
            // Unpaired: escaped with the text around it.
            continue;
        };
        out.push_str(&escape(&s[plain_from..open], false));
        out.push_str(&s[open..close + n]);
        i = close + n;
        plain_from = i;
    }
    out.push_str(&escape(&s[plain_from..], false));
    out
}

/// Where the next run of exactly `n` backticks at or after `from` starts.
fn closing_run(b: &[u8], from: usize, n: usize) -> Option<usize> {
    let mut j = from;
    while j < b.len() {
        if b[j] != b'`' {
            j += 1;
            continue;
        }
        let s = j;
        while j < b.len() && b[j] == b'`' {
            j += 1;
        }
        if j - s == n {
            return Some(s);
        }
    }
    None
}

/// `s` as an inline code span: the fence is one backtick longer than the longest run of
/// backticks in `s`, padded with a space when `s` starts or ends with a backtick (or a
/// space), so nothing in `s` can close the span early. Line breaks become spaces.
pub fn code(s: &str) -> String {
    let s = one_line(s);
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']) || s.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// `body` as a fenced code block with info string `lang`: the fence is longer than any run
/// of backticks in `body`, so no line of it can close the block early.
pub fn fenced(lang: &str, body: &str) -> String {
    let mut longest = 0;
    for line in body.lines() {
        let t = line.trim_start();
        longest = longest.max(t.len() - t.trim_start_matches('`').len());
    }
    let fence = "`".repeat(longest.max(2) + 1);
    let mut out = format!("{fence}{lang}\n{body}");
    if !body.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

/// A table cell's text: already-escaped Markdown (from [`text`] or [`code`], or ladder's own
/// words) with `|` escaped so the row keeps its cells (GitHub removes the backslash inside a
/// code span too) and line breaks as spaces.
pub fn cell(s: &str) -> String {
    let s = one_line(s);
    let mut out = String::with_capacity(s.len());
    let mut backslashes = 0;
    for c in s.chars() {
        // `\|` already escaped by `text` stays as it is.
        if c == '|' && backslashes % 2 == 0 {
            out.push('\\');
        }
        backslashes = if c == '\\' { backslashes + 1 } else { 0 };
        out.push(c);
    }
    out
}

/// `s` with every line break (and other control character) as a space.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// Whether every backtick run of `md` that is not backslash-escaped is closed by a run of
/// the same length on its line: no code span is left open (a check for every writer's tests).
pub fn code_spans_balanced(md: &str) -> bool {
    md.lines().all(|line| {
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'`' => {
                    let open = i;
                    while i < b.len() && b[i] == b'`' {
                        i += 1;
                    }
                    match closing_run(b, i, i - open) {
                        Some(close) => i = close + (i - open),
                        None => return false,
                    }
                }
                _ => i += 1,
            }
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_open_markup() {
        let hostile =
            "![x](http://e/i.png) <img src=x onerror=alert(1)> [l](u) *b* `c` a|b ~~s~~ &amp;";
        let t = text(hostile);
        assert_eq!(
            t,
            "![x\\](http://e/i.png) \\<img src=x onerror=alert(1)> [l\\](u) \\*b\\* \\`c\\` a\\|b \\~\\~s\\~\\~ \\&amp;"
        );
        assert!(!t.contains('\n'));
        assert_eq!(
            text("line1\n# heading\r\n- item"),
            "line1 # heading  - item"
        );
        assert_eq!(text("# heading"), "\\# heading");
        assert_eq!(text("- item"), "\\- item");
        assert_eq!(text("> quote"), "\\> quote");
        assert_eq!(text("12. x 3. y"), "12\\. x 3. y");
        assert_eq!(text("a -> b <= c"), "a -> b \\<= c");
        // Intraword underscores stay; one at a word's edge is escaped.
        assert_eq!(text("median_ttft_ms _x_"), "median_ttft_ms \\_x\\_");
        assert_eq!(text("a\\b"), "a\\\\b");
        // What cannot open markup reads as written.
        assert_eq!(
            text("-5% 16.06 x[0.9, 1.1] a & b ~2"),
            "-5% 16.06 x[0.9, 1.1] a & b ~2"
        );
        // Inline (after ladder's own words) leaves block markers alone.
        assert_eq!(inline("- 1. # >"), "- 1. # >");
    }

    #[test]
    fn a_code_span_picks_a_fence_longer_than_any_backtick_run() {
        assert_eq!(code("model"), "`model`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("a``b`"), "``` a``b` ```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code(""), "`  `");
        assert_eq!(code("a\nb"), "`a b`");
        for s in ["a`b", "``", "x```y````z", "` `", "\n`"] {
            let c = code(s);
            assert!(code_spans_balanced(&c), "{s:?} -> {c}");
        }
        assert!(!code_spans_balanced("`a`b`"));
    }

    #[test]
    fn inline_keeps_balanced_code_spans_and_escapes_the_rest() {
        assert_eq!(
            inline("set `load.repeats: 3` now"),
            "set `load.repeats: 3` now"
        );
        assert_eq!(
            inline(&format!("model {} is not in <url>", code("a`b"))),
            "model ``a`b`` is not in \\<url>"
        );
        // A hostile id written without `code`: its backtick cannot stay open.
        let m = inline("model `a`b` is ![x](y) <b>");
        assert_eq!(m, "model `a`b\\` is ![x\\](y) \\<b>");
        for s in ["`", "a ``` b", "`a`` b`", "x\n`y`"] {
            assert!(code_spans_balanced(&inline(s)), "{s:?} -> {}", inline(s));
        }
    }

    #[test]
    fn a_fence_is_longer_than_any_backtick_run_in_the_block() {
        assert_eq!(fenced("diff", "-a\n+b\n"), "```diff\n-a\n+b\n```\n");
        let f = fenced("diff", "x\n````\ny");
        assert!(
            f.starts_with("`````diff\n") && f.ends_with("\n`````\n"),
            "{f}"
        );
    }

    #[test]
    fn a_cell_escapes_pipes_once() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(cell(&text("a|b")), "a\\|b");
        assert_eq!(cell(&code("a|b")), "`a\\|b`");
    }
}
