//! `--color auto|always|never`, `NO_COLOR` and `CLICOLOR_FORCE`: verdicts (stdout) and
//! error / warning labels (stderr) are coloured only when asked or on a terminal, never when
//! piped in auto, and colour never lets a folder's or a path's own escape codes through.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const ESC: char = '\u{1b}';

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vllm-benchmark-serving-0.8")
        .display()
        .to_string()
}

/// `ladder ARGS` with stdout and stderr piped (not a terminal) and the colour variables
/// of the test's own environment removed, then `env` set.
fn ladder(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ladder"));
    c.args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("ladder runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn verdicts_are_coloured_only_when_asked() {
    let f = fixture();
    let compare = |color: Option<&str>, env: &[(&str, &str)]| {
        // `--drift 0`: a folder against itself judged on its requests alone, so latency
        // checks decide and the line is PASS (with the assumed drift only the throughput
        // checks below saturation pass, and they decide nothing: NO VERDICT).
        let mut args = vec!["compare", f.as_str(), f.as_str(), "--drift", "0"];
        if let Some(c) = color {
            args.extend(["--color", c]);
        }
        ladder(&args, env)
    };
    let plain = compare(None, &[]);
    let text = out(&plain);
    assert!(text.contains("PASS: "), "{text}");
    // Piped, auto: no colour.
    assert!(!text.contains(ESC), "{text}");
    assert!(!out(&compare(Some("never"), &[])).contains(ESC));
    assert!(!out(&compare(Some("auto"), &[("NO_COLOR", "1")])).contains(ESC));
    // always: the summary word and each row's verdict coloured, nothing else changed.
    let always = compare(Some("always"), &[]);
    let coloured = out(&always);
    assert!(coloured.contains("\u{1b}[32mPASS\u{1b}[0m: "), "{coloured}");
    assert!(coloured.contains("\u{1b}[32mpass\u{1b}[0m\n"), "{coloured}");
    assert!(
        coloured.contains("\u{1b}[33minconclusive\u{1b}[0m\n"),
        "{coloured}"
    );
    let stripped = coloured
        .replace("\u{1b}[32m", "")
        .replace("\u{1b}[33m", "")
        .replace("\u{1b}[1;31m", "")
        .replace("\u{1b}[0m", "");
    assert_eq!(stripped, text, "colour adds escapes and nothing else");
    assert_eq!(always.status.code(), plain.status.code());
    // A flag wins over NO_COLOR; CLICOLOR_FORCE colours a pipe in auto.
    assert!(out(&compare(Some("always"), &[("NO_COLOR", "1")])).contains(ESC));
    assert!(out(&compare(None, &[("CLICOLOR_FORCE", "1")])).contains(ESC));
    assert!(!out(&compare(None, &[("CLICOLOR_FORCE", "0")])).contains(ESC));
    // --json is never coloured.
    let j = ladder(&["compare", &f, &f, "--json", "--color", "always"], &[]);
    assert!(!out(&j).contains(ESC));
}

#[test]
fn error_labels_are_coloured_and_outside_escapes_stay_text() {
    let t = tempfile::tempdir().unwrap();
    // A file name carrying its own escape sequence (clear screen).
    let bad = t.path().join("bad\u{1b}[2J.yaml");
    std::fs::write(&bad, "version: 2\n").unwrap();
    let b = bad.to_str().unwrap();
    let never = ladder(&["validate", b, "--color", "never"], &[]);
    assert_eq!(never.status.code(), Some(2));
    assert!(!err(&never).contains(ESC), "{}", err(&never));
    assert!(err(&never).contains(": error: "));
    let always = ladder(&["validate", b, "--color", "always"], &[]);
    assert_eq!(always.status.code(), Some(2));
    let e = err(&always);
    assert!(e.contains(": \u{1b}[1;31merror:\u{1b}[0m "), "{e}");
    // The file name's own sequence is still shown as text, never sent.
    assert!(e.contains("\\u{1b}[2J"), "{e}");
    assert!(!e.contains("\u{1b}[2J"), "{e}");
    assert!(!err(&ladder(&["validate", b], &[("NO_COLOR", "1")])).contains(ESC));
}
