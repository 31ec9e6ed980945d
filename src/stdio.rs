//! Terminal output that survives a closed pipe. Rust ignores SIGPIPE, so a write to a closed
//! stdout or stderr (`ladder run X 2>&1 | head`, `| grep -q`) fails with EPIPE, and the std
//! `println!` / `eprintln!` panic on it (exit 101, before the folder is written or instead of
//! the gate's verdict). The binary's own `println!`, `print!` and `eprintln!` (defined in
//! `main.rs`, shadowing std's in every `cli*.rs`) write through here and drop the error:
//! output nobody reads is not a failure, and the command keeps its own exit code. The library
//! never prints: it speaks through `notes::Notes`, which the binary points at this module.

use std::fmt::Arguments;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// `--color`: when verdicts and warnings are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (non-empty) or `TERM=dumb`; off a terminal
    /// only with `CLICOLOR_FORCE` (non-empty, not `0`).
    #[default]
    Auto,
    /// Always (overrides `NO_COLOR`: a flag given on the command line wins, as
    /// no-color.org asks).
    Always,
    /// Never.
    Never,
}

/// What colour a painted word gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A pass or an improvement (green).
    Good,
    /// A regression, a failure, an error (bold red).
    Bad,
    /// A warning, an inconclusive check, no verdict (yellow).
    Warn,
}

static COLOR_OUT: AtomicBool = AtomicBool::new(false);
static COLOR_ERR: AtomicBool = AtomicBool::new(false);

/// Decide once, at start-up, whether stdout and stderr get colour (both off until then, so
/// library tests and other callers print plain text).
pub fn set_color(choice: ColorChoice) {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let decide = |terminal: bool| match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            if env("NO_COLOR").is_some() {
                false
            } else if env("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
                true
            } else {
                terminal && env("TERM").is_none_or(|t| t != "dumb")
            }
        }
    };
    COLOR_OUT.store(decide(std::io::stdout().is_terminal()), Ordering::Relaxed);
    COLOR_ERR.store(decide(std::io::stderr().is_terminal()), Ordering::Relaxed);
}

fn sgr(style: Style) -> &'static str {
    match style {
        Style::Good => "\x1b[32m",
        Style::Bad => "\x1b[1;31m",
        Style::Warn => "\x1b[33m",
    }
}

/// `text` coloured for stdout when stdout gets colour, else as it is. Call it on text that
/// has been through [`crate::escape::terminal::line`] (or is ladder's own words): the
/// escapes it adds are the only ones that reach the terminal.
pub fn paint(style: Style, text: &str) -> String {
    paint_if(COLOR_OUT.load(Ordering::Relaxed), style, text)
}

fn paint_if(on: bool, style: Style, text: &str) -> String {
    if on && !text.is_empty() {
        format!("{}{text}\x1b[0m", sgr(style))
    } else {
        text.to_string()
    }
}

/// A stderr line's `error:` / `warning:` label coloured (after escaping: the line's own
/// control characters are already shown as text). Labels are found at the start
/// (`error: …`) or after a location (`file:3:5: error: …`, `file: warning: …`).
fn paint_label(line: &str) -> String {
    const LABELS: [(&str, Style); 3] = [
        ("error:", Style::Bad),
        ("warning:", Style::Warn),
        ("WARNING:", Style::Warn),
    ];
    for (label, style) in LABELS {
        let at = if line.starts_with(label) {
            Some(0)
        } else {
            line.find(&format!(": {label} ")).map(|i| i + 2)
        };
        if let Some(i) = at {
            let end = i + label.len();
            return format!(
                "{}{}{}",
                &line[..i],
                paint_if(true, style, &line[i..end]),
                &line[end..]
            );
        }
    }
    line.to_string()
}

/// Write `args` (and a newline when `nl`) to stdout; errors are dropped.
pub fn out(args: Arguments<'_>, nl: bool) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_fmt(args);
    if nl {
        let _ = o.write_all(b"\n");
    }
    let _ = o.flush();
}

/// Write `args` (and a newline when `nl`) to stderr; errors are dropped. Everything on
/// stderr is a message, so control characters in it (from a path, a flag, a folder's text)
/// are shown as escapes, never sent to the terminal ([`crate::escape::terminal::line`]).
pub fn err(args: Arguments<'_>, nl: bool) {
    let text = match args.as_str() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(args.to_string()),
    };
    let mut text = crate::escape::terminal::line(&text);
    if COLOR_ERR.load(Ordering::Relaxed) {
        text = paint_label(&text);
    }
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    if nl {
        let _ = e.write_all(b"\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_coloured_where_they_stand_and_nowhere_else() {
        assert_eq!(paint_label("error: x"), "\x1b[1;31merror:\x1b[0m x");
        assert_eq!(
            paint_label("a.yaml:3:5: error: bad"),
            "a.yaml:3:5: \x1b[1;31merror:\x1b[0m bad"
        );
        assert_eq!(
            paint_label("a.yaml: warning: w"),
            "a.yaml: \x1b[33mwarning:\x1b[0m w"
        );
        assert_eq!(paint_label("note: no error: here"), "note: no error: here");
        assert_eq!(paint_if(false, Style::Bad, "FAIL"), "FAIL");
    }
}
