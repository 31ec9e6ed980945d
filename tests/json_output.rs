//! `--json` of compare, gate, history, validate (merge: tests/shards.rs): stdout is exactly
//! one JSON document with `"version": 1`, its fields agree with the text output of the same
//! command on the same folders, diagnostics stay on stderr, and exit codes are unchanged.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// A short two-rung ladder on the built-in simulator; `decode_scale` models a slower build.
fn scenario(dir: &Path, decode_scale: f64) -> PathBuf {
    let text = format!(
        "version: 1\nname: json-check\nendpoint:\n  base_url: sim\n  request_timeout: 30s\n\
         model: sim-model\ntokenizer: {TOKENIZER}\nworkload:\n  input_tokens: 32\n  \
         output_tokens: 32\n  requests_per_rung: 40\n  seed: 7\nload:\n  arrival: poisson\n  \
         baseline_rate: 8\n  rates: [16]\n  cooldown: 0s\ngate:\n  - {{ metric: median_tpot_ms, \
         max_increase: 10% }}\n  - {{ metric: error_rate, max: 0.02 }}\nsim:\n  speed: 2\n  \
         seed: 7\n  decode_scale: {decode_scale}\n"
    );
    let p = dir.join(format!("json-check-{decode_scale}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

fn ladder(args: &[&str], cwd: &Path) -> Ran {
    let mut c = ladder_cmd(args);
    c.current_dir(cwd);
    spawn(c).finish(Duration::from_secs(120))
}

/// stdout parsed as one JSON document (and nothing else: serde refuses trailing text).
fn doc(r: &Ran) -> Value {
    no_panic(r);
    assert_eq!(
        r.stdout.trim_end().lines().count(),
        1,
        "stdout is one line of JSON:\n{}",
        r.all()
    );
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: not JSON:\n{}", r.all()))
}

/// The exit code a document's verdict stands for.
fn code_of(verdict: &str) -> i32 {
    match verdict {
        "pass" | "ok" => 0,
        "fail" | "regression" => 1,
        "no_verdict" => 2,
        v => panic!("unknown verdict {v}"),
    }
}

fn only_dir(root: &Path) -> PathBuf {
    let mut d: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    d.sort();
    d.pop().unwrap()
}

#[test]
fn compare_gate_and_history_print_one_versioned_document() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let (base, slow) = (scenario(dir, 1.0), scenario(dir, 1.3));
    for (sc, out) in [(&base, "a"), (&slow, "b")] {
        let r = ladder(&["run", sc.to_str().unwrap(), "--out", out, "--quiet"], dir);
        assert!(r.status.success(), "{}", r.all());
    }
    let a = only_dir(&dir.join("a/json-check"));
    let b = only_dir(&dir.join("b/json-check"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());

    // compare: the document and the text output agree, from the same comparison.
    let j = ladder(&["compare", a, b, "--json"], dir);
    let v = doc(&j);
    let text = ladder(&["compare", a, b], dir);
    assert_eq!(v["version"], 1);
    assert_eq!(v["command"], "compare");
    assert_eq!(j.status.code(), text.status.code(), "exit code unchanged");
    assert_eq!(v["exit_code"].as_i64(), j.status.code().map(i64::from));
    assert_eq!(
        code_of(v["verdict"].as_str().unwrap()),
        j.status.code().unwrap()
    );
    assert_eq!(
        text.stdout.trim_end().lines().last().unwrap(),
        v["summary"].as_str().unwrap(),
        "the summary line is the text output's last line"
    );
    assert_eq!(v["baseline"], a);
    assert_eq!(v["candidate"], b);
    assert_eq!(v["scenario"], "json-check");
    assert_eq!(v["load"], "rate");
    let rows = v["rows"].as_array().unwrap();
    // Two gate rules on two rungs (8 and 16 req/s).
    assert_eq!(rows.len(), 4, "{v}");
    assert_eq!(v["counts"]["checks"], 4);
    let counted: u64 = [
        "pass",
        "improvement",
        "past_saturation",
        "inconclusive",
        "regression",
    ]
    .iter()
    .map(|k| v["counts"][k].as_u64().unwrap())
    .sum();
    assert_eq!(counted, 4);
    for r in rows {
        let metric = r["metric"].as_str().unwrap();
        assert!(["median_tpot_ms", "error_rate"].contains(&metric), "{r}");
        assert!([8.0, 16.0].contains(&r["level"].as_f64().unwrap()), "{r}");
        assert!(r["base"].is_number() && r["candidate"].is_number(), "{r}");
        // The verdict of each row is in the text table on the row's line.
        let word = match r["verdict"].as_str().unwrap() {
            "regression" => "REGRESSION",
            "past_saturation" => "past saturation",
            w => w,
        };
        let rung = r["level"].as_f64().unwrap().to_string();
        assert!(
            text.stdout
                .lines()
                .any(|l| l.starts_with(&format!("{rung} "))
                    && l.contains(metric)
                    && l.trim_end().ends_with(word)),
            "row {r} not in the table:\n{}",
            text.stdout
        );
    }
    // The sim's config changed (decode_scale): the diff is there, as in the text.
    assert!(v["config_diff"].as_str().unwrap().contains("decode_scale"));
    assert!(!j.stderr.contains('{'), "stderr has no JSON: {}", j.stderr);

    // gate: bless a, gate the slower build; stdout is the document alone (no run table,
    // no `results:` or `report:` line), progress and the report path on stderr.
    let r = ladder(&["bless", a, "--golden", "golden"], dir);
    assert!(r.status.success(), "{}", r.all());
    let g = ladder(
        &["gate", slow.to_str().unwrap(), "--out", "c", "--json"],
        dir,
    );
    let v = doc(&g);
    assert_eq!(v["version"], 1);
    assert_eq!(v["command"], "gate");
    assert_eq!(v["exit_code"].as_i64(), g.status.code().map(i64::from));
    assert_eq!(
        code_of(v["verdict"].as_str().unwrap()),
        g.status.code().unwrap()
    );
    assert!(
        v["candidate"].as_str().unwrap().contains("json-check"),
        "{v}"
    );
    assert!(g.stderr.contains("report: "), "{}", g.stderr);

    // history over the three runs.
    let h = ladder(
        &[
            "history",
            "a/json-check",
            "b/json-check",
            "c/json-check",
            "--json",
        ],
        dir,
    );
    let v = doc(&h);
    assert_eq!(v["version"], 1);
    assert_eq!(v["command"], "history");
    assert_eq!(v["exit_code"].as_i64(), h.status.code().map(i64::from));
    assert_eq!(
        code_of(v["verdict"].as_str().unwrap()),
        h.status.code().unwrap()
    );
    assert_eq!(v["folders"].as_array().unwrap().len(), 3);
    assert_eq!(v["folders"][0]["number"], 1);
    let series = v["series"].as_array().unwrap();
    // Default metrics (4) at the two common rungs.
    assert_eq!(series.len(), 8, "{v}");
    assert!(series
        .iter()
        .all(|s| s["values"].as_array().unwrap().len() == 3));
    let text = ladder(
        &["history", "a/json-check", "b/json-check", "c/json-check"],
        dir,
    );
    assert_eq!(
        text.stdout.trim_end().lines().last().unwrap(),
        v["summary"].as_str().unwrap()
    );
}

#[test]
fn validate_lists_every_file_with_its_errors() {
    let t = tempfile::tempdir().unwrap();
    let good = scenario(t.path(), 1.0);
    let bad = t.path().join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&good)
            .unwrap()
            .replace("rates: [16]", "rates: [16]\n  rats: 3"),
    )
    .unwrap();
    let r = ladder(
        &[
            "validate",
            good.to_str().unwrap(),
            bad.to_str().unwrap(),
            "--json",
        ],
        t.path(),
    );
    let v = doc(&r);
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(v["version"], 1);
    assert_eq!(v["command"], "validate");
    assert_eq!(v["ok"], false);
    assert_eq!(v["exit_code"], 2);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["ok"], true);
    assert_eq!(files[0]["errors"].as_array().unwrap().len(), 0);
    assert_eq!(files[1]["ok"], false);
    let e = &files[1]["errors"][0];
    assert!(
        e["line"].as_u64().unwrap() > 0 && e["col"].as_u64().unwrap() > 0,
        "{e}"
    );
    assert!(e["key"].as_str().unwrap().contains("rats"), "{e}");
    // The human lines still go to stderr, and no `ok:` line pollutes stdout.
    assert!(r.stderr.contains(": error: "), "{}", r.stderr);
    assert!(!r.stdout.contains("ok: "), "{}", r.stdout);

    let r = ladder(&["validate", good.to_str().unwrap(), "--json"], t.path());
    assert_eq!(r.status.code(), Some(0));
    assert_eq!(doc(&r)["ok"], true);
}

#[test]
fn an_unusable_input_is_an_error_document_with_exit_2() {
    let t = tempfile::tempdir().unwrap();
    for args in [
        &["compare", "nope-a", "nope-b", "--json"][..],
        &["history", "nope", "--json"][..],
        &["merge", "nope", "--out", "m", "--json"][..],
    ] {
        let r = ladder(args, t.path());
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.all());
        let v = doc(&r);
        assert_eq!(v["version"], 1);
        assert_eq!(v["command"], args[0]);
        assert_eq!(v["exit_code"], 2);
        let e = v["error"].as_str().unwrap();
        assert!(!e.is_empty());
        // The same message as the `error:` line on stderr.
        let first = e.lines().next().unwrap();
        assert!(r.stderr.contains(&format!("error: {first}")), "{}", r.all());
    }
}
