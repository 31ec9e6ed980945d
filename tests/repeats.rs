//! Repeats end to end against the built-in simulator: a folder holds every repeat of every
//! rung, summaries carry the per-repeat values and their spread, the simulator's drift gives
//! each repeat its own speed, `bless --add` grows a baseline by a run, and a gate against a
//! baseline of several runs says its intervals include run-to-run noise, where a comparison
//! of single runs says that noise is unknown, in every output format.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ladder::results::ResultDir;

const LIMIT: Duration = Duration::from_secs(120);

/// A scenario of one rung of 30 requests at 20 req/s plus the baseline rung, `repeats`
/// times, on a fast simulator with 5 % drift.
fn scenario(dir: &Path, repeats: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let extra = format!(
        "  repeats: {repeats}\nsim:\n  seed: 0\n  speed: 4\n  served_model_names: [m]\n  drift: 0.05\n  drift_seed: 7\n"
    );
    let sc = Sc {
        n: 30,
        baseline: 10.0,
        rates: "[20]",
        output_tokens: 8,
        extra: Box::leak(extra.into_boxed_str()),
        ..Sc::new("sim")
    };
    sc.write(dir)
}

fn run(scenario: &Path, out: &Path, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let r = spawn(ladder_cmd(&args)).finish(LIMIT);
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out.join("rel"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs.pop().expect("a run folder")
}

fn ladder(args: &[&str]) -> Ran {
    let r = spawn(ladder_cmd(args)).finish(LIMIT);
    no_panic(&r);
    r
}

#[test]
fn a_run_of_three_repeats_keeps_every_repeat_and_their_spread() {
    let t = tempfile::tempdir().unwrap();
    let sc = scenario(t.path(), 3);
    let dir = run(&sc, &t.path().join("out"), &[]);
    // The loader checks each repeat's lines against its own summary, and the pool.
    let d = ResultDir::open_finished(&dir).unwrap();
    assert_eq!(d.rungs.len(), 2);
    for r in &d.rungs {
        assert!(r.entry.complete);
        let lines = d.requests(r).unwrap();
        for k in 1..=3 {
            assert_eq!(
                lines.iter().filter(|l| l.repeat == k).count(),
                30,
                "repeat {k}"
            );
        }
        assert_eq!(lines.len(), 90);
        assert_eq!(r.summary.num_prompts, 90);
        assert_eq!(r.summary.repeats.len(), 3);
        let sum: f64 = r.summary.repeats.iter().map(|x| x.duration_s).sum();
        assert!((r.summary.duration_s - sum).abs() < 1e-9);
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result_rate_20.json")).unwrap())
            .unwrap();
    let spread = &v["repeats"]["spread"];
    assert_eq!(v["repeats"]["count"], 3);
    for k in ["request_throughput", "median_tpot_ms", "median_ttft_ms"] {
        assert_eq!(spread[k]["values"].as_array().unwrap().len(), 3, "{k}");
        assert!(
            spread[k]["cv"].as_f64().is_some_and(|c| c >= 0.0),
            "{k}: {spread}"
        );
    }
    // The drift gives each repeat its own, seeded simulator speed.
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    let cfg = ladder::sim::SimConfig {
        drift: 0.05,
        drift_seed: 7,
        ..Default::default()
    };
    for k in 0..3u64 {
        let line = format!(
            "repeat {} of 3 (simulator speed x{:.3})",
            k + 1,
            cfg.drift_factor(k)
        );
        assert!(log.contains(&line), "{line} not in\n{log}");
    }
    missing_repeat_and_missing_file(&dir, t.path());
    // `--repeats` replaces the scenario's count, and the resolved scenario says so.
    let one = run(&sc, &t.path().join("out1"), &["--repeats", "1"]);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("run.json")).unwrap()).unwrap();
    assert!(info["scenario"]["load"].get("repeats").is_none(), "{info}");
    let text = std::fs::read_to_string(one.join("requests_rate_20.jsonl")).unwrap();
    assert!(
        !text.contains("\"repeat\""),
        "one repeat writes no repeat field"
    );
}

/// The error of loading `dir` and its rung 20's request lines (the loader may check them
/// as it opens the folder).
fn load_error(dir: &Path) -> String {
    match ResultDir::open_finished(dir) {
        Err(e) => e.to_string(),
        Ok(d) => {
            let rung = d.rungs.iter().find(|r| r.entry.rate == 20.0).unwrap();
            d.requests(rung).unwrap_err().to_string()
        }
    }
}

/// Copies of a run of three repeats, one without repeat 2's lines, one without a rung's
/// file: each error names what is missing and where.
fn missing_repeat_and_missing_file(dir: &Path, tmp: &Path) {
    let copy = |name: &str| {
        let to = tmp.join(name);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.path().is_file() {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
        to
    };
    let gap = copy("no-repeat-2");
    let file = gap.join("requests_rate_20.jsonl");
    let kept: String = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["repeat"] != 2)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, kept).unwrap();
    let e = load_error(&gap);
    assert!(
        e.contains("repeat 2: holds 0 measured requests (no line of repeat 2 in ")
            && e.contains("requests_rate_20.jsonl: its lines are missing)")
            && !e.contains("the file is empty"),
        "{e}"
    );
    let lost = copy("no-requests-file");
    std::fs::remove_file(lost.join("requests_rate_20.jsonl")).unwrap();
    let e = load_error(&lost);
    let want = format!(
        "{}: missing: {}/run.json lists this rung's file",
        lost.join("requests_rate_20.jsonl").display(),
        lost.display()
    );
    assert!(
        e.contains(&want) && e.contains("copy the whole result folder, or re-run"),
        "{e}"
    );
    assert!(!e.contains("os error"), "{e}");
}

#[test]
fn bless_add_then_gate_uses_the_baselines_runs_and_single_runs_say_noise_is_unknown() {
    let t = tempfile::tempdir().unwrap();
    let sc = scenario(t.path(), 1);
    let out = t.path().join("out");
    let (a, b) = (run(&sc, &out, &[]), run(&sc, &out, &[]));
    let golden = t.path().join("golden");
    let g = golden.to_str().unwrap();

    // Two single runs: every output says run-to-run noise is assumed (the default 5 %) and
    // how to measure it; `--drift 0` says it is unknown.
    let (md, xml) = (t.path().join("s.md"), t.path().join("j.xml"));
    let r = ladder(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(
        r.stdout.contains("run-to-run noise: assumed 5.0 % per run")
            && r.stdout.contains("load.repeats: 3"),
        "{}",
        r.all()
    );
    let r = ladder(&[
        "compare",
        "--drift",
        "0",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--summary",
        md.to_str().unwrap(),
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert!(matches!(r.status.code(), Some(0 | 1)), "{}", r.all());
    let md = std::fs::read_to_string(md).unwrap();
    let xml = std::fs::read_to_string(xml).unwrap();
    for (what, text) in [("terminal", &r.stdout), ("markdown", &md), ("junit", &xml)] {
        assert!(
            text.contains("run-to-run noise: unknown (one run per side)")
                && text.contains("load.repeats: 3"),
            "{what}:\n{text}"
        );
    }

    // bless, then --add a second run: the baseline holds two runs.
    let r = ladder(&["bless", a.to_str().unwrap(), "--golden", g]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let r = ladder(&["bless", "--add", b.to_str().unwrap(), "--golden", g]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.stdout.contains("added to the baseline"), "{}", r.all());
    assert!(
        r.stdout
            .contains("the baseline before this addition: the baseline of")
            && r.stdout
                .contains("(move it back to undo the addition; .replaced/ holds a .gitignore")
            && !r.stdout.contains("replaced:"),
        "{}",
        r.all()
    );
    let base = ResultDir::open_finished(&golden.join("rel")).unwrap();
    for rung in &base.rungs {
        assert_eq!(rung.summary.repeats.len(), 2);
        let lines = base.requests(rung).unwrap();
        assert_eq!(lines.iter().filter(|l| l.repeat == 2).count(), 30);
    }

    // The gate (one fresh run, 2 repeats) against it: intervals over runs, and no regression.
    // With two runs a side (2 degrees of freedom for the drift) and 30 requests a repeat,
    // whether any check is decided depends on how this machine's timing moved the runs: PASS
    // or NO VERDICT (exit 2), never a false FAIL.
    let r = ladder(&[
        "gate",
        sc.to_str().unwrap(),
        "--golden",
        g,
        "--out",
        out.to_str().unwrap(),
        "--repeats",
        "2",
    ]);
    assert!(
        r.stdout
            .contains("run-to-run noise: measured (baseline 2 runs, candidate 2 runs)"),
        "{}",
        r.all()
    );
    match r.status.code() {
        Some(0) => assert!(r.stdout.contains("\nPASS: 0 regression(s)"), "{}", r.all()),
        Some(2) => assert!(r.stdout.contains("\nNO VERDICT: "), "{}", r.all()),
        other => panic!(
            "exit {other:?}: an unchanged candidate failed the gate\n{}",
            r.all()
        ),
    }

    // --add to nothing, or of a run of another workload, is refused.
    let r = ladder(&[
        "bless",
        "--add",
        b.to_str().unwrap(),
        "--golden",
        t.path().join("empty").to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("no golden baseline"), "{}", r.all());
}
