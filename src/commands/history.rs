//! `ladder history`: analyze many result folders of one scenario (`history::analyze`), print
//! the tables and change points, write the Markdown summary and HTML page it is asked for
//! (`report::history`).

use std::path::PathBuf;

use crate::history::HistoryOptions;
use crate::report::history::{json, verdict_line, HistoryExporter, Html, Markdown, Terminal};

/// `ladder history`: analyze, print the tables and change points on stdout (notes and
/// skipped folders on stderr), write `--summary` / `--html`; returns the exit code
/// (0 no regression step at the newest folder, 1 one, 2 unusable input).
pub fn history(opts: &HistoryOptions) -> i32 {
    let h = match crate::history::analyze(opts) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            if opts.json {
                println!("{}", error_document("history", &e));
            }
            return crate::exit::BAD_INPUT;
        }
    };
    for s in &h.skipped {
        eprintln!("note: skipped {}: {}", s.path.display(), s.reason);
    }
    for n in &h.notes {
        eprintln!("note: {n}");
    }
    if !opts.json {
        let text = match Terminal.render(&h) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {e}");
                return crate::exit::BAD_INPUT;
            }
        };
        print!("{}", crate::escape::terminal::line(&text));
    }
    let mut outputs: Vec<(&PathBuf, Result<String, String>)> = Vec::new();
    if let Some(p) = &opts.summary {
        outputs.push((p, Markdown.render(&h).map_err(|e| e.to_string())));
    }
    if let Some(p) = &opts.html {
        outputs.push((p, Html.render(&h).map_err(|e| e.to_string())));
    }
    for (path, text) in outputs {
        let written = text.and_then(|t| {
            crate::results::atomic_write(path, t.as_bytes()).map_err(|e| e.to_string())
        });
        match written {
            Ok(()) => eprintln!("wrote {}", path.display()),
            Err(e) => {
                eprintln!(
                    "error: {}: cannot write: {e}; choose a writable path",
                    path.display()
                );
                if opts.json {
                    println!(
                        "{}",
                        error_document(
                            "history",
                            &format!("{}: cannot write: {e}", path.display())
                        )
                    );
                }
                return crate::exit::BAD_INPUT;
            }
        }
    }
    if opts.json {
        println!("{}", crate::escape::json::document(&json::document(&h)));
    } else {
        let line = crate::escape::terminal::line(&verdict_line(&h));
        // The verdict word coloured when stdout gets colour (`--color`).
        let (word, style) = if h.exit_code() == crate::exit::OK {
            ("ok:", crate::stdio::Style::Good)
        } else {
            ("regression:", crate::stdio::Style::Bad)
        };
        match line.strip_prefix(word) {
            Some(rest) => println!("{}{rest}", crate::stdio::paint(style, word)),
            None => println!("{line}"),
        }
    }
    h.exit_code()
}

/// The JSON document of a command that ended with unusable input (exit 2), for `--json`.
fn error_document(command: &str, message: &str) -> String {
    crate::escape::json::document(&serde_json::json!({
        "version": json::VERSION,
        "command": command,
        "exit_code": crate::exit::BAD_INPUT,
        "error": message,
    }))
}
