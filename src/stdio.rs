//! Terminal output that survives a closed pipe. Rust ignores SIGPIPE, so a write to a closed
//! stdout or stderr (`ladder run X 2>&1 | head`, `| grep -q`) fails with EPIPE, and the std
//! `println!` / `eprintln!` panic on it (exit 101, before the folder is written or instead of
//! the gate's verdict). The crate's own `println!`, `print!`, `eprintln!` and `eprint!`
//! (defined in `lib.rs` and `main.rs`, shadowing std's everywhere in ladder) write through
//! here and drop the error: output nobody reads is not a failure, and the command keeps its
//! own exit code.

use std::fmt::Arguments;
use std::io::Write;

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
    let text = crate::escape::terminal::line(&text);
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    if nl {
        let _ = e.write_all(b"\n");
    }
}
