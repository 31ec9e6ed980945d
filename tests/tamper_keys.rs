//! Every summary key the request lines give is recomputed by the tamper check: a rung's
//! `result_rate_<rate>.json` edited on any one of them (with the lines left as written) is
//! refused by compare, naming the file and the key. Each folder is one tiny `ladder run`
//! against the built-in simulator, copied and edited.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(90);

/// How a test edits a number.
type Edit = fn(f64) -> f64;

fn ladder(args: &[&str]) -> Ran {
    let r = spawn(ladder_cmd(args)).finish(LIMIT);
    no_panic(&r);
    r
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A finished run of rungs 20 and 40 (8 requests each) with an SLO, so goodput counts.
fn good_run(t: &Path, extra: &'static str) -> PathBuf {
    let mut sc = Sc::new("sim");
    sc.n = 8;
    sc.extra = extra;
    let path = sc.write(t);
    let out = t.join("out");
    let r = run_ladder(&path, &out, LIMIT);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    check_folder(&run_dir(&out).unwrap());
    run_dir(&out).unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn edit_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// `key` of `v` (a path of object keys) set to what `f` makes of it.
fn set(v: &mut Value, key: &[&str], f: impl FnOnce(f64) -> f64) {
    let mut at = v;
    for k in key {
        at = &mut at[*k];
    }
    let old = at.as_f64().unwrap_or_else(|| panic!("{key:?} is {at}"));
    let new = f(old);
    assert_ne!(old, new, "{key:?}: the edit must change the value");
    *at = if new.fract() == 0.0 && new >= 0.0 {
        Value::from(new as u64)
    } else {
        Value::from(new)
    };
}

/// Compare of `good` against a copy whose `file` got `edit`: refused (exit 2), naming the
/// file and `key`.
fn refused_naming(
    t: &Path,
    good: &Path,
    i: usize,
    file: &str,
    key: &str,
    edit: &dyn Fn(&mut Value),
) {
    let dir = t.join(format!("cand{i}"));
    copy_tree(good, &dir);
    edit_json(&dir.join(file), edit);
    let r = ladder(&["compare", s(good), s(&dir)]);
    assert_eq!(r.status.code(), Some(2), "{key}: {}", r.all());
    assert!(
        r.stderr.contains(file) && r.stderr.contains(key),
        "{key} or {file} not named: {}",
        r.all()
    );
    assert!(!r.stdout.contains("REGRESSION"), "{key}: {}", r.all());
}

#[test]
fn every_key_the_lines_give_is_recomputed_and_an_edit_refused() {
    let t = tempfile::tempdir().unwrap();
    let good = good_run(t.path(), "slo:\n  e2e_ms: 60000\n");
    let same = t.path().join("same");
    copy_tree(&good, &same);
    let r = ladder(&["compare", s(&good), s(&same)]);
    // The unedited copy is read, not refused: no `error:`, and the two sides compared. 8
    // requests a rung are too few for the bootstrap, so whether a check is decided (PASS,
    // exit 0) rests on the exact rank test of the run's own spread of TPOT, which a loaded
    // machine widens: else NO VERDICT (exit 2), as for any run too small to judge.
    assert!(
        !r.stderr.contains("error:"),
        "an unedited copy refused: {}",
        r.all()
    );
    assert!(r.stdout.contains("no configuration change"), "{}", r.all());
    assert!(
        r.status.code() == Some(0)
            || (r.status.code() == Some(2)
                && r.stdout.contains("NO VERDICT: nothing could be judged")),
        "an unedited copy passes or is too small to judge: {}",
        r.all()
    );
    assert!(!r.stdout.contains("REGRESSION"), "{}", r.all());

    let file = "result_rate_40.json";
    let double = |x: f64| if x == 0.0 { 1.0 } else { x * 2.0 };
    let cases: &[(&str, Edit)] = &[
        ("achieved_rate", double),
        ("max_concurrent_requests", |x| x + 5.0),
        ("max_output_tokens_per_s", double),
        ("request_goodput", |x| x / 2.0),
        ("qps", double),
        ("error_rate", |x| x + 0.5),
        ("request_rate", double),
        ("mean_output_tokens", double),
        ("requested_input_tokens", |x| x + 1.0),
        ("requested_output_tokens", |x| x + 1.0),
        ("server_usage_requests", |x| x + 1.0),
        ("retokenized_outputs", |x| x + 1.0),
        ("untrusted_usage", |x| x + 1.0),
    ];
    for (i, (key, f)) in cases.iter().enumerate() {
        refused_naming(t.path(), &good, i, file, key, &|v| set(v, &[key], f));
    }
}

/// A rung of two repeats: a repeat's own key is checked against that repeat's lines, the
/// pool's against the pool of its repeats.
#[test]
fn repeats_and_their_pool_are_recomputed_too() {
    let t = tempfile::tempdir().unwrap();
    let good = good_run(t.path(), "  repeats: 2\n");
    let file = "result_rate_40.json";
    let text = std::fs::read_to_string(good.join(file)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let runs = v["repeats"]["runs"].as_array().map_or(0, Vec::len);
    assert_eq!(runs, 2, "{text}");
    let cases: &[(&[&str], &str, Edit)] = &[
        (&["achieved_rate"], "achieved_rate", |x| x * 2.0),
        (
            &["max_concurrent_requests"],
            "max_concurrent_requests",
            |x| x + 5.0,
        ),
        (&["mean_output_tokens"], "mean_output_tokens", |x| x * 2.0),
    ];
    for (i, (key, name, f)) in cases.iter().enumerate() {
        refused_naming(t.path(), &good, i, file, name, &|v| set(v, key, f));
    }
    refused_naming(t.path(), &good, 10, file, "max_concurrent_requests", &|v| {
        set(
            &mut v["repeats"]["runs"][0],
            &["max_concurrent_requests"],
            |x| x + 5.0,
        )
    });
    refused_naming(t.path(), &good, 11, file, "achieved_rate", &|v| {
        set(&mut v["repeats"]["runs"][0], &["achieved_rate"], |x| {
            x * 2.0
        })
    });
}

/// A line's `tpot_ms` must be what its own times and token count give ((e2e − TTFT) /
/// (output tokens − 1)): two lines' values swapped leave the TPOT distribution, so the
/// summary, unchanged, but each line is wrong.
#[test]
fn a_lines_tpot_must_follow_from_its_own_times() {
    let t = tempfile::tempdir().unwrap();
    let good = good_run(t.path(), "");
    let dir = t.path().join("swapped");
    copy_tree(&good, &dir);
    let p = dir.join("requests_rate_40.jsonl");
    let mut lines: Vec<Value> = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tpot = |l: &Value| l["tpot_ms"].as_f64();
    let a = (0..lines.len())
        .find(|&i| tpot(&lines[i]).is_some())
        .unwrap();
    let b = (0..lines.len())
        .find(|&i| tpot(&lines[i]).is_some_and(|x| (x - tpot(&lines[a]).unwrap()).abs() > 0.01))
        .expect("two lines with different TPOT");
    let (ta, tb) = (lines[a]["tpot_ms"].clone(), lines[b]["tpot_ms"].clone());
    lines[a]["tpot_ms"] = tb;
    lines[b]["tpot_ms"] = ta;
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&p, text).unwrap();
    let r = ladder(&["compare", s(&good), s(&dir)]);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("requests_rate_40.jsonl") && r.stderr.contains("tpot_ms"),
        "{}",
        r.all()
    );
}

/// run.json's `scenario.load.rates` must plan the rungs the folder holds: a rate taken out
/// of it (a rung left that was never planned) or added to it (a complete run missing a
/// planned rung) is refused, naming run.json.
#[test]
fn the_scenarios_rates_must_plan_the_rungs_present() {
    let t = tempfile::tempdir().unwrap();
    let good = good_run(t.path(), "");
    type Rates = fn(&mut Value);
    let cases: [(&str, Rates); 2] = [
        ("rung 40 is not a rung of its scenario", |v| {
            v["scenario"]["load"]["rates"] = serde_json::json!([])
        }),
        ("plans rung 80", |v| {
            v["scenario"]["load"]["rates"] = serde_json::json!([40.0, 80.0])
        }),
    ];
    for (i, (says, edit)) in cases.iter().enumerate() {
        let dir = t.path().join(format!("plan{i}"));
        copy_tree(&good, &dir);
        edit_json(&dir.join("run.json"), edit);
        let r = ladder(&["compare", s(&good), s(&dir)]);
        assert_eq!(r.status.code(), Some(2), "{says}: {}", r.all());
        assert!(
            r.stderr.contains("run.json") && r.stderr.contains(says),
            "{says}: {}",
            r.all()
        );
    }
}
