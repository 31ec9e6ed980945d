//! Verdicts end to end: absolute floors on change thresholds, the family-wise level shown
//! in every output, inconclusive notes that name `workload.requests_per_rung`, and the
//! scenario checks of `min_change`. Two short simulator runs on loopback, each under a
//! watchdog.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

/// A one-rung simulator run of 60 requests; `prefill_us` per prompt token (16 tokens) sets
/// the TTFT. Returns the run folder.
fn sim_run(dir: &Path, prefill_us: u32, extra: &'static str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let text = format!(
        "{extra}sim:\n  seed: 0\n  served_model_names: [m]\n  prefill_per_token_us: {prefill_us}\n"
    );
    let sc = Sc {
        n: 60,
        baseline: 5.0,
        rates: "[10]",
        output_tokens: 8,
        extra: Box::leak(text.into_boxed_str()),
        ..Sc::new("sim")
    };
    let path = sc.write(dir);
    let out = dir.join("out");
    let r = run_ladder(&path, &out, LIMIT);
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    run_dir(&out).expect("a run folder")
}

fn compare(base: &Path, cand: &Path, extra: &[&str]) -> Ran {
    let mut args = vec![
        "compare",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
        "--allow-config-change",
    ];
    args.extend_from_slice(extra);
    let r = spawn(ladder_cmd(&args)).finish(LIMIT);
    no_panic(&r);
    r
}

/// The row of `metric` in the verdict table.
fn row<'a>(out: &'a str, metric: &str) -> &'a str {
    out.lines()
        .find(|l| l.split_whitespace().nth(1) == Some(metric))
        .unwrap_or_else(|| panic!("no {metric} row in:\n{out}"))
}

#[test]
fn a_ttft_rise_is_a_regression_only_past_the_floor() {
    let t = tempfile::tempdir().unwrap();
    // 16 prompt tokens × 750 µs: the candidate's TTFT is about 12 ms longer.
    let base = sim_run(&t.path().join("a"), 20, "");
    let cand = sim_run(&t.path().join("b"), 770, "");
    let up = |floor: &str| {
        let rule = format!("median_ttft_ms=+10%,floor={floor}");
        compare(&base, &cand, &["--threshold", &rule])
    };
    let low = up("5ms");
    assert_eq!(low.status.code(), Some(1), "{}", low.all());
    assert!(
        row(&low.stdout, "median_ttft_ms").contains("REGRESSION"),
        "{}",
        low.stdout
    );
    assert!(
        low.stdout.contains("median_ttft_ms +10%,floor=5ms"),
        "{}",
        low.stdout
    );
    // The same change against a 40 ms floor (also `0.04s`) is no regression anyone cares about.
    for floor in ["40ms", "0.04s"] {
        let high = up(floor);
        assert_eq!(high.status.code(), Some(0), "{}", high.all());
        assert!(
            row(&high.stdout, "median_ttft_ms").contains("pass"),
            "{}",
            high.stdout
        );
    }
}

#[test]
fn every_output_states_the_family_wise_level_and_inconclusive_notes_name_requests_per_rung() {
    let t = tempfile::tempdir().unwrap();
    let base = sim_run(&t.path().join("a"), 20, "");
    let cand = sim_run(&t.path().join("b"), 20, "");
    let md = t.path().join("s.md");
    let xml = t.path().join("j.xml");
    let r = compare(
        &base,
        &cand,
        &[
            "--drift",
            "0",
            "--threshold",
            "error_rate<=0.02",
            "--summary",
            md.to_str().unwrap(),
            "--junit",
            xml.to_str().unwrap(),
        ],
    );
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    // Defaults minus error_rate's own (replaced) = 5 bootstrapped + 1 error-rate check per
    // rung, 2 rungs: 12 checks, each at 1 − 0.05/12.
    let level = "95 % family-wise over 12 checks: each interval at 99.58 % (Bonferroni)";
    assert!(r.stdout.contains(level), "{}", r.stdout);
    // Default floors are listed.
    assert!(
        r.stdout.contains("median_ttft_ms +10%,floor=2ms")
            && r.stdout.contains("median_tpot_ms +10%,floor=0.5ms")
            && r.stdout.contains("request_throughput -5%,floor=0"),
        "{}",
        r.stdout
    );
    // 0 errors in 60 requests cannot bound the error rate under 2 %: the note says how many.
    let note = r
        .stdout
        .lines()
        .find(|l| l.contains("error_rate<=0.02"))
        .unwrap_or_else(|| panic!("no error_rate note:\n{}", r.stdout));
    assert!(
        note.contains("0 errors in 60 requests cannot show error_rate <= 0.02 at this level: raise workload.requests_per_rung to ≥ "),
        "{note}"
    );
    let n: u64 = note
        .rsplit("≥ ")
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no number in {note}"));
    // Wilson at z(99.58 %) = 2.86: z²·0.98/0.02 ≈ 401.
    assert!((395..=410).contains(&n), "{note}");
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains(level), "{md}");
    let xml = std::fs::read_to_string(xml).unwrap();
    assert!(
        xml.contains(level) && xml.contains("99.58 % interval"),
        "{xml}"
    );
}

#[test]
fn scenario_floors_are_checked_before_any_load() {
    let t = tempfile::tempdir().unwrap();
    let write = |name: &str, gate: &str| {
        let sc = Sc {
            extra: Box::leak(format!("gate:\n{gate}").into_boxed_str()),
            ..Sc::new("sim")
        };
        let p = sc.write(t.path());
        let q = t.path().join(name);
        std::fs::rename(p, &q).unwrap();
        q
    };
    let ok = write(
        "ok.yaml",
        "  - { metric: median_ttft_ms, max_increase: 10%, min_change: 5ms }\n  - { metric: request_throughput, max_decrease: 5%, min_change: 0.5 }\n",
    );
    let r = spawn(ladder_cmd(&["validate", ok.to_str().unwrap()])).finish(LIMIT);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    for (name, gate, says) in [
        (
            "unit.yaml",
            "  - { metric: request_throughput, max_decrease: 5%, min_change: 5ms }\n",
            "takes no time unit",
        ),
        (
            "nochange.yaml",
            "  - { metric: median_ttft_ms, max: 100, min_change: 5ms }\n",
            "a floor needs a change threshold",
        ),
        (
            "bad.yaml",
            "  - { metric: median_ttft_ms, max_increase: 10%, min_change: soon }\n",
            "is not a floor",
        ),
    ] {
        let p = write(name, gate);
        let r = spawn(ladder_cmd(&["validate", p.to_str().unwrap()])).finish(LIMIT);
        assert_eq!(r.status.code(), Some(2), "{name}: {}", r.all());
        assert!(
            r.stderr.contains("error:") && r.all().contains(says),
            "{name}: {}",
            r.all()
        );
        assert!(r.all().contains("min_change"), "{name}: {}", r.all());
    }
}
