//! What `ladder bless` refuses of the runs it makes a baseline of, against the built-in
//! simulator: a run the baseline already holds (again, as a copy, or the baseline folder
//! itself), and a run far from the others on some rung (docs/gate.md, "Outlier runs");
//! and what it accepts: runs apart by a 5 % drift, with `load.repeats` or with `--add`.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ladder::results::ResultDir;

const LIMIT: Duration = Duration::from_secs(120);

/// One rung of 30 requests at 20 req/s plus the baseline rung, on a fast simulator with 5 %
/// drift (`drift_seed` picks the runs' draws) and `sim_extra` settings; `repeats` times.
fn scenario(dir: &Path, repeats: u32, drift_seed: u32, sim_extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let extra = format!(
        "  repeats: {repeats}\nsim:\n  seed: 0\n  speed: 4\n  served_model_names: [m]\n  drift: 0.05\n  drift_seed: {drift_seed}\n{sim_extra}"
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

fn ladder(args: &[&str]) -> Ran {
    let r = spawn(ladder_cmd(args)).finish(LIMIT);
    no_panic(&r);
    r
}

/// Run `scenario`, returning the folder it wrote and what it said.
fn run(scenario: &Path, out: &Path) -> (PathBuf, Ran) {
    let before: Vec<PathBuf> = dirs(out);
    let r = ladder(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let dir = dirs(out)
        .into_iter()
        .find(|d| !before.contains(d))
        .expect("a new run folder");
    (dir, r)
}

fn dirs(out: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(out.join("rel"))
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Five re-adds and a self-add once made "run-to-run noise: measured (baseline 12 runs)"
/// out of copies of one run. Each is refused now, naming the run's start; a new run is
/// added, and then refused in turn when given again.
#[test]
fn bless_add_refuses_a_run_the_baseline_holds_and_the_baseline_itself() {
    let t = tempfile::tempdir().unwrap();
    let sc = scenario(&t.path().join("sc"), 1, 1, "");
    let out = t.path().join("out");
    let (a, _) = run(&sc, &out);
    let (b, _) = run(&sc, &out);
    let golden = t.path().join("golden");
    let g = golden.to_str().unwrap();
    let r = ladder(&["bless", a.to_str().unwrap(), "--golden", g]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let add = |dir: &Path| ladder(&["bless", "--add", dir.to_str().unwrap(), "--golden", g]);
    let refused = |r: &Ran, want: &str| {
        assert_eq!(r.status.code(), Some(2), "{}", r.all());
        assert!(r.stderr.contains(want), "want {want:?} in {}", r.all());
    };
    let held = "holds a run the baseline";
    // The blessed run again, and a copy of it.
    refused(&add(&a), held);
    let copy = t.path().join("copy-of-a");
    copy_dir(&a, &copy);
    refused(&add(&copy), held);
    // The baseline folder itself, by its own path and by another spelling of it.
    refused(&add(&golden.join("rel")), "is the baseline itself");
    refused(
        &add(&golden.join("..").join("golden").join("rel")),
        "is the baseline itself",
    );
    // A copy of the baseline elsewhere holds the same run.
    let gcopy = t.path().join("golden-copy");
    copy_dir(&golden.join("rel"), &gcopy);
    refused(&add(&gcopy), held);
    // A new run is added; given again (or the baseline that now holds it), refused.
    let r = add(&b);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    refused(&add(&b), held);
    let base = ResultDir::open_finished(&golden.join("rel")).unwrap();
    assert!(base.rungs.iter().all(|r| r.summary.repeats.len() == 2));
    let started = ResultDir::open_finished(&b).unwrap().info.started_at;
    let again = add(&b);
    assert!(
        again.stderr.contains(&started.to_rfc3339()),
        "the message names the run's start: {}",
        again.all()
    );
}

/// A run far from the others (here a build 12 times slower at decoding, like the 5 s TTFT
/// among 25-28 ms a real baseline took in) is shown per rung and metric and refused without
/// --force, by `bless --add` and by `bless` of a folder holding it; runs 5 % apart are not.
#[test]
fn an_outlier_run_is_refused_without_force() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let sc = scenario(&t.path().join("sc"), 1, 1, "");
    let (a, _) = run(&sc, &out);
    let (b, _) = run(&scenario(&t.path().join("sc2"), 1, 2, ""), &out);
    let slow_sc = scenario(&t.path().join("slow"), 1, 3, "  decode_scale: 12\n");
    let (slow, _) = run(&slow_sc, &out);
    let golden = t.path().join("golden");
    let g = golden.to_str().unwrap();
    assert_eq!(
        ladder(&["bless", a.to_str().unwrap(), "--golden", g])
            .status
            .code(),
        Some(0)
    );
    let r = ladder(&["bless", "--add", b.to_str().unwrap(), "--golden", g]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let r = ladder(&["bless", "--add", slow.to_str().unwrap(), "--golden", g]);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    for want in [
        "a run is far from the others",
        "rung 20 req/s: run 3: median_tpot_ms",
        "rung 10 req/s: run 3: median_tpot_ms",
        "in the other runs",
        "pass --force to keep it",
    ] {
        assert!(r.stderr.contains(want), "want {want:?} in {}", r.all());
    }
    let base = ResultDir::open_finished(&golden.join("rel")).unwrap();
    assert!(
        base.rungs.iter().all(|r| r.summary.repeats.len() == 2),
        "nothing was added"
    );
    let r = ladder(&[
        "bless",
        "--add",
        slow.to_str().unwrap(),
        "--golden",
        g,
        "--force",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    // A folder holding the outlier (the forced baseline, copied) is refused by a plain bless.
    let held = t.path().join("held");
    copy_dir(&golden.join("rel"), &held);
    let other = t.path().join("golden2");
    let r = ladder(&[
        "bless",
        held.to_str().unwrap(),
        "--golden",
        other.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("run 3: median_tpot_ms"), "{}", r.all());
}

/// A run the gate fails against the baseline (decoding 1.6 times slower: no outlier by the
/// x4 rule) is refused by `bless --add` with the regressed checks, and added with --force;
/// `compare` of a run against a baseline that holds it warns that it is one of its runs.
#[test]
fn bless_add_refuses_a_run_that_regresses_against_the_baseline() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let (a, _) = run(&scenario(&t.path().join("sc"), 1, 1, ""), &out);
    let (b, _) = run(&scenario(&t.path().join("sc2"), 1, 2, ""), &out);
    let slow_sc = scenario(&t.path().join("slow"), 1, 3, "  decode_scale: 1.6\n");
    let (slow, _) = run(&slow_sc, &out);
    let golden = t.path().join("golden");
    let g = golden.to_str().unwrap();
    let add = |dir: &Path, force: bool| {
        let mut args = vec!["bless", "--add", dir.to_str().unwrap(), "--golden", g];
        if force {
            args.push("--force");
        }
        ladder(&args)
    };
    let r = ladder(&["bless", a.to_str().unwrap(), "--golden", g]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let r = add(&b, false);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let r = add(&slow, false);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    for want in [
        "it regresses against it",
        "rung 20 req/s: median_tpot_ms",
        "the same regression would then pass the gate",
    ] {
        assert!(r.stderr.contains(want), "want {want:?} in {}", r.all());
    }
    assert!(!r.stderr.contains("far from the others"), "{}", r.all());
    let base = ResultDir::open_finished(&golden.join("rel")).unwrap();
    assert!(
        base.rungs.iter().all(|r| r.summary.repeats.len() == 2),
        "nothing was added"
    );
    // The baseline's own run compared against it: said, whatever the verdict.
    let r = ladder(&[
        "compare",
        golden.join("rel").to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert!(
        r.all()
            .contains("the candidate is one of the baseline's runs"),
        "{}",
        r.all()
    );
    let r = ladder(&[
        "compare",
        golden.join("rel").to_str().unwrap(),
        slow.to_str().unwrap(),
    ]);
    assert!(
        !r.all().contains("one of the baseline's runs"),
        "{}",
        r.all()
    );
    let r = add(&slow, true);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let base = ResultDir::open_finished(&golden.join("rel")).unwrap();
    assert!(base.rungs.iter().all(|r| r.summary.repeats.len() == 3));
}

/// Five repeats with 5 % drift: no repeat is flagged at run time, and the folder blesses.
#[test]
fn repeats_apart_by_drift_are_not_outliers() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let (dir, r) = run(&scenario(&t.path().join("sc"), 5, 4, ""), &out);
    assert!(!r.stderr.contains("far from the others"), "{}", r.all());
    let info = ResultDir::open_finished(&dir).unwrap().info;
    assert!(
        !info
            .warnings
            .iter()
            .any(|w| w.contains("far from the others")),
        "{:?}",
        info.warnings
    );
    let golden = t.path().join("golden");
    let r = ladder(&[
        "bless",
        dir.to_str().unwrap(),
        "--golden",
        golden.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
}
