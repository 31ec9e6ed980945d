//! The CI gate end to end against the built-in simulator: bless a run, gate an unchanged
//! rerun (passes), gate a build whose decode is 30 % slower (fails with exit 1).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ladder(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ladder"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("ladder runs")
}

fn tokenizer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json")
}

/// A short two-rung ladder; `decode_scale` models a slower (or faster) build.
fn scenario(dir: &Path, decode_scale: f64) -> PathBuf {
    let text = format!(
        r#"version: 1
name: gate-check
endpoint:
  base_url: sim
  request_timeout: 30s
model: sim-model
tokenizer: {tok}
workload:
  input_tokens: 32
  output_tokens: 32
  requests_per_rung: 40
  seed: 7
load:
  arrival: poisson
  baseline_rate: 8
  rates: [16]
  cooldown: 0s
gate:
  - {{ metric: median_tpot_ms, max_increase: 10% }}
  - {{ metric: request_throughput, max_decrease: 5% }}
  - {{ metric: error_rate, max: 0.02 }}
sim:
  speed: 2
  seed: 7
  decode_scale: {decode_scale}
"#,
        tok = tokenizer().display()
    );
    let p = dir.join(format!("gate-check-{decode_scale}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn gate_passes_unchanged_and_fails_a_30_percent_slower_decode() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let base = scenario(dir, 1.0);
    let slow = scenario(dir, 1.3);

    // Baseline: run, then bless into golden/.
    let run = ladder(
        &["run", base.to_str().unwrap(), "--out", "results", "--quiet"],
        dir,
    );
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let runs: Vec<_> = std::fs::read_dir(dir.join("results/gate-check"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1);
    let bless = ladder(
        &["bless", runs[0].to_str().unwrap(), "--golden", "golden"],
        dir,
    );
    assert_eq!(bless.status.code(), Some(0), "{}", text(&bless));
    assert!(dir.join("golden/gate-check/run.json").is_file());

    // Unchanged rerun: no regression.
    let same = ladder(
        &[
            "gate",
            base.to_str().unwrap(),
            "--golden",
            "golden",
            "--out",
            "results",
            "--junit",
            "same.xml",
            // `--summary "$GITHUB_STEP_SUMMARY"` outside GitHub Actions: empty, so no file.
            "--summary",
            "",
        ],
        dir,
    );
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
    assert!(
        String::from_utf8_lossy(&same.stderr).contains("note: --summary is empty"),
        "{}",
        text(&same)
    );
    let junit = std::fs::read_to_string(dir.join("same.xml")).unwrap();
    assert!(junit.contains("<testsuite"), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");

    // 30 % slower decode: TPOT regresses past +10 %, so the gate fails with exit 1.
    let slower = ladder(
        &[
            "gate",
            slow.to_str().unwrap(),
            "--golden",
            "golden",
            "--out",
            "results",
            "--junit",
            "slow.xml",
            "--summary",
            "slow.md",
        ],
        dir,
    );
    assert_eq!(slower.status.code(), Some(1), "{}", text(&slower));
    let out = String::from_utf8_lossy(&slower.stdout);
    assert!(out.contains("median_tpot_ms"), "{}", text(&slower));
    assert!(
        out.to_lowercase().contains("regression"),
        "{}",
        text(&slower)
    );
    // The config diff shows what changed between the two folders.
    assert!(out.contains("decode_scale"), "{}", text(&slower));
    let junit = std::fs::read_to_string(dir.join("slow.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    let md = std::fs::read_to_string(dir.join("slow.md")).unwrap();
    assert!(md.contains("median_tpot_ms"), "{md}");

    // Every fresh run folder a gate made has the same reports as one `ladder run` made.
    let mut runs: Vec<_> = std::fs::read_dir(dir.join("results/gate-check"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 3, "{runs:?}");
    for run in &runs {
        for f in ["report.html", "summary.md", "summary.csv", "analysis.json"] {
            assert!(run.join(f).is_file(), "{} has no {f}", run.display());
        }
    }
    // The gate said where its run's report is, after the verdict (the newest folder: the
    // slower build).
    let err = String::from_utf8_lossy(&slower.stdout);
    let newest = runs.last().unwrap();
    let name = newest.file_name().unwrap().to_string_lossy();
    assert!(
        err.lines()
            .any(|l| l.starts_with("report: ") && l.contains(&*name) && l.ends_with("report.html")),
        "{}",
        text(&slower)
    );
    let html = std::fs::read_to_string(newest.join("report.html")).unwrap();
    assert!(html.contains("ladder report: gate-check"), "{html}");
}
