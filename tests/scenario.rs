//! `ladder validate` and `ladder schema`, run as the real binary.
//!
//! Golden error output: every `tests/corpus/scenario/bad/*.yaml` is validated with the working
//! directory set to that folder (so paths in messages are stable), and its stderr must equal
//! the `*.stderr` file beside it. After an intended change of messages, regenerate them with
//!
//!     LADDER_BLESS=1 cargo test --test scenario
//!
//! and review the diff before committing.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary with a clean, predictable environment for templated values.
fn ladder() -> Command {
    let mut c = Command::cargo_bin("ladder").expect("binary builds");
    for v in [
        "LADDER_MODEL",
        "LADDER_BASE_URL",
        "LADDER_TOKENIZER",
        "LADDER_CORPUS_UNSET_URL",
    ] {
        c.env_remove(v);
    }
    c
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn validate_in(dir: &Path, args: &[&str]) -> Out {
    let o = ladder()
        .current_dir(dir)
        .arg("validate")
        .args(args)
        .output()
        .expect("runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[test]
fn bad_corpus_matches_golden_stderr() {
    let dir = root().join("tests/corpus/scenario/bad");
    let bless = std::env::var_os("LADDER_BLESS").is_some();
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "corpus went missing: {files:?}");
    let mut failures = vec![];
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let out = validate_in(&dir, &[name]);
        if out.code != 2 || !out.stdout.is_empty() {
            failures.push(format!(
                "{name}: expected exit 2 and no stdout, got {} / {:?}",
                out.code, out.stdout
            ));
        }
        if !out.stderr.contains(": error: ") {
            failures.push(format!("{name}: no error line in {:?}", out.stderr));
        }
        let golden = f.with_extension("stderr");
        if bless {
            fs::write(&golden, &out.stderr).unwrap();
            continue;
        }
        let want = fs::read_to_string(&golden).unwrap_or_default();
        if want != out.stderr {
            failures.push(format!(
                "{name}: stderr differs from {}\n--- want\n{want}--- got\n{}",
                golden.display(),
                out.stderr
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(after an intended change: LADDER_BLESS=1 cargo test --test scenario)",
        failures.join("\n")
    );
}

/// The examples shipped in scenarios/. A scenario a user saves there (the README's, with a
/// real tokenizer path) is theirs, not a test fixture: it must not break `cargo test`.
/// Examples every checkout has; any other `scenarios/*.yaml` is checked the same way.
const SHIPPED_EXAMPLES: [&str; 4] = [
    "quickstart.yaml",
    "quickstart-variant.yaml",
    "vllm-ladder.yaml",
    "input-length-sweep.yaml",
];

#[test]
fn every_example_scenario_validates() {
    let dir = root().join("scenarios");
    let mut listed: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    listed.sort();
    for n in SHIPPED_EXAMPLES {
        assert!(listed.iter().any(|l| l == n), "{n} missing from scenarios/");
    }
    let names: Vec<&str> = listed.iter().map(String::as_str).collect();
    let files: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    for f in &files {
        assert!(f.is_file(), "{} missing from scenarios/", f.display());
    }
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        assert!(
            text.starts_with("# yaml-language-server: $schema=../schemas/scenario.v1.json\n"),
            "{} lacks the schema modeline",
            f.display()
        );
    }
    // vllm-ladder.yaml takes its tokenizer from $LADDER_TOKENIZER (default: a local model
    // directory that does not exist here); point it at the shipped fixture so the whole
    // check, tokenizer load included, runs on every example.
    let o = ladder()
        .current_dir(&dir)
        .env("LADDER_TOKENIZER", dir.join("tokenizers/ladder-tiny.json"))
        .arg("validate")
        .args(&names)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{stderr}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let want: String = names.iter().map(|n| format!("ok: {n}\n")).collect();
    assert_eq!(stdout, want);
}

#[test]
fn vllm_example_without_its_model_dir_names_the_tokenizer() {
    let out = validate_in(&root().join("scenarios"), &["vllm-ladder.yaml"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("error: tokenizer: tokenizer file /models/")
            && out.stderr.contains("does not exist")
            // Where the path came from: the template's default, as the variable is unset.
            && out.stderr.contains(
                "(this value is the template's default: $LADDER_TOKENIZER is not set; set it to change it)"
            ),
        "{}",
        out.stderr
    );
}

#[test]
fn schema_file_is_fresh() {
    let o = ladder().arg("schema").output().unwrap();
    assert!(o.status.success());
    let printed = String::from_utf8(o.stdout).unwrap();
    let path = root().join("schemas/scenario.v1.json");
    let on_disk = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        printed == on_disk,
        "schemas/scenario.v1.json is stale; regenerate it with:\n    \
         cargo run -q -- schema > schemas/scenario.v1.json"
    );
    let v: serde_json::Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(v["title"], "Scenario");
    assert!(v["required"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("version")));
}

#[test]
fn v0_file_is_migrated_with_a_note() {
    let dir = root().join("tests/corpus/scenario");
    let out = validate_in(&dir, &["v0-seed-style.yaml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "ok: v0-seed-style.yaml\n");
    assert_eq!(
        out.stderr,
        "v0-seed-style.yaml: note: scenario version 0 was upgraded to version 1 in memory; \
         update the file to silence this note\n\
         v0-seed-style.yaml: note: `load.request_rates` (version 0) is read as `load.rates`\n\
         v0-seed-style.yaml: note: `workload.num_prompts` (version 0) is read as \
         `workload.requests_per_rung`\n\
         v0-seed-style.yaml: warning: gate check `p99_ttft_ms` can never be decided at 200 \
         requests per rung: at the per-check level 99.88 % it needs at least 670 samples per \
         side (raise workload.requests_per_rung to ≥ 670)\n"
    );
}

#[test]
fn file_problems_missing_directory_binary_non_utf8_and_huge() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::create_dir(d.join("dir.yaml")).unwrap();
    let mut garbage = b"version: 1\nname: x\n".to_vec();
    garbage.extend([0x00, 0xff, 0x13, 0x37, 0x00]);
    fs::write(d.join("garbage.yaml"), &garbage).unwrap();
    fs::write(d.join("latin1.yaml"), b"version: 1\nname: caf\xe9\n").unwrap();
    // 50 MB, written in chunks; refused by size before it is read.
    {
        use std::io::Write;
        let mut f = fs::File::create(d.join("huge.yaml")).unwrap();
        let line = "# filler filler filler filler filler filler filler filler filler\n";
        let chunk = line.repeat(16 * 1024);
        let mut written = 0;
        while written < 50 * 1000 * 1000 {
            f.write_all(chunk.as_bytes()).unwrap();
            written += chunk.len();
        }
    }
    let cases = [
        ("nope.yaml", "nope.yaml: error: file does not exist\n"),
        (
            "dir.yaml",
            "dir.yaml: error: is a directory, not a scenario file\n  hint: pass the .yaml file(s) inside it\n",
        ),
        (
            "garbage.yaml",
            "garbage.yaml:3:1: error: binary data (a NUL byte), not YAML text\n  hint: a scenario is a UTF-8 YAML text file\n",
        ),
        (
            "latin1.yaml",
            "latin1.yaml:2:10: error: not UTF-8 text (invalid byte sequence)\n  hint: a scenario is a UTF-8 YAML text file\n",
        ),
        (
            "huge.yaml",
            "huge.yaml: error: file is 47.7 MiB; scenario files are small YAML text (at most 1024 KiB)\n  hint: is this the right file? datasets go in `workload.path`, not in the scenario\n",
        ),
    ];
    for (name, want) in cases {
        let out = validate_in(d, &[name]);
        assert_eq!(out.code, 2, "{name}");
        assert_eq!(out.stdout, "", "{name}");
        assert_eq!(out.stderr, want, "{name}");
    }
}

#[test]
fn several_files_report_each_and_fail_if_any_is_bad() {
    let scen = root().join("scenarios");
    let bad = root().join("tests/corpus/scenario/bad/empty-rates.yaml");
    let out = validate_in(
        &scen,
        &["quickstart.yaml", bad.to_str().unwrap(), "nope.yaml"],
    );
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "ok: quickstart.yaml\n");
    assert!(out.stderr.contains("empty-rates.yaml:"), "{}", out.stderr);
    assert!(out.stderr.contains("nope.yaml: error: file does not exist"));
}

/// Every field of the schema (one level into each section; `sim`'s own fields are documented
/// by the simulator) has a row in the "Scenario reference" (docs/scenarios.md, linked from the
/// README).
#[test]
fn readme_reference_lists_every_schema_field() {
    let readme = fs::read_to_string(root().join("docs/scenarios.md")).unwrap();
    let start = readme
        .find("# Scenario reference")
        .expect("docs/scenarios.md has a Scenario reference section");
    let section = &readme[start..];
    let schema: serde_json::Value = serde_json::from_str(&ladder::scenario::schema_json()).unwrap();
    let defs = &schema["definitions"];
    let mut missing = vec![];
    for (top, sub) in schema["properties"].as_object().unwrap() {
        let mut names = vec![];
        let s = resolve(defs, sub);
        if top == "sim" {
            names.push(top.clone());
        } else if let Some(props) = s["properties"].as_object() {
            names.extend(props.keys().map(|k| format!("{top}.{k}")));
        } else if let Some(props) = resolve(defs, &s["items"])["properties"].as_object() {
            names.extend(props.keys().map(|k| format!("{top}[].{k}")));
        } else {
            names.push(top.clone());
        }
        for n in names {
            if !section.contains(&format!("| `{n}` |")) {
                missing.push(n);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/scenarios.md lacks rows for: {missing:?}"
    );
}

/// Follow `$ref`, one-element `allOf` and the non-null branch of `anyOf`.
fn resolve<'a>(defs: &'a serde_json::Value, mut s: &'a serde_json::Value) -> &'a serde_json::Value {
    for _ in 0..8 {
        if let Some(r) = s["$ref"].as_str() {
            s = &defs[r.trim_start_matches("#/definitions/")];
        } else if let Some(a) = s["allOf"].as_array().filter(|a| a.len() == 1) {
            s = &a[0];
        } else if let Some(a) = s["anyOf"].as_array() {
            s = a.iter().find(|b| b["type"] != "null").unwrap_or(s);
        } else {
            break;
        }
    }
    s
}
