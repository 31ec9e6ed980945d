//! The EXAMPLES of `--help` (run, gate, bless, compare, report, history, init) are commands
//! clap accepts: each is run in an empty folder (so it stops at its missing file or folder,
//! after parsing, and sends nothing), and must not end in a usage error. `ladder sim --help`
//! shows a default for every flag.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ladder");

fn help(cmd: &str) -> String {
    let o = Command::new(BIN).args([cmd, "--help"]).output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap()
}

/// The example command lines of a help text: continuation lines joined, the comment, a pipe
/// or a redirection cut off, variables given a value.
fn examples(text: &str) -> Vec<Vec<String>> {
    let section = text
        .split("EXAMPLES:\n")
        .nth(1)
        .expect("an EXAMPLES section");
    let joined = section.replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("ladder "))
        .map(|l| {
            let l = l.split("   #").next().unwrap();
            let l = l.split(" | ").next().unwrap();
            let l = l.split(" > ").next().unwrap();
            let l = l
                .replace("$GITHUB_STEP_SUMMARY", "summary.md")
                .replace("$COMMON_ARGS", "--model m --num-prompts 10");
            shell_words::split(l.trim()).unwrap()
        })
        .collect()
}

#[test]
fn every_example_parses() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for cmd in [
        "run", "gate", "bless", "compare", "report", "history", "init",
    ] {
        let ex = examples(&help(cmd));
        assert!(ex.len() >= 2, "{cmd}: {ex:?}");
        for args in ex {
            assert_eq!(args[0], "ladder");
            assert_eq!(args[1], cmd, "{args:?}");
            let mut child = Command::new(BIN)
                .args(&args[1..])
                .current_dir(dir.path())
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let start = Instant::now();
            while child.try_wait().unwrap().is_none() {
                if start.elapsed() > Duration::from_secs(30) {
                    let _ = child.kill();
                    panic!("{args:?} still running after 30 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let o = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            for usage in [
                "Usage: ladder",
                "unexpected argument",
                "invalid value",
                "required arguments were not provided",
            ] {
                assert!(
                    !err.contains(usage),
                    "{args:?} is not a valid command:\n{err}"
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 20, "{seen}");
}

#[test]
fn sim_help_shows_every_default() {
    let text = help("sim");
    let options = text.split("Options:\n").nth(1).unwrap();
    // Each option's entry: its `--flag` line and the description lines under it.
    let mut entries: Vec<String> = Vec::new();
    for line in options.lines() {
        if line.trim_start().starts_with('-') {
            entries.push(line.to_string());
        } else if let Some(e) = entries.last_mut() {
            e.push_str(line);
        }
    }
    let mut checked = 0;
    for e in &entries {
        if e.contains("--help") || e.contains("--color") {
            continue;
        }
        assert!(e.contains("[default: "), "no default shown: {e}");
        checked += 1;
    }
    assert!(checked >= 35, "{checked} flags");
    // Defaults come from SimConfig::default.
    let d = ladder::sim::SimConfig::default();
    assert!(text.contains(&format!("[default: {}]", d.max_num_seqs)));
    assert!(text.contains(&format!("[default: {}]", d.step_per_seq_ms)));
}

#[test]
fn completions_help_says_how_to_install_for_every_shell() {
    let text = help("completions");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        assert!(
            text.contains(&format!("  {shell}:")),
            "{shell} missing:\n{text}"
        );
        let o = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(o.status.success() && o.stdout.len() > 1000, "{shell}");
    }
}
