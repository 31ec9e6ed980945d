//! Reports of a result folder: golden summary.md / summary.csv, the HTML charts, the seed
//! script's keys, and `ladder report` end to end.
//!
//! Golden files live in tests/golden/report/. After an intended change to the output,
//! regenerate them with
//!
//!     LADDER_BLESS=1 cargo test --test report
//!
//! and review the diff before committing. To look at the rendered pages, set
//! `LADDER_REPORT_OUT=/some/dir`: the HTML tests copy report.html, compare.html and
//! failed.html there (then e.g. `chromium --headless --screenshot ... file:///some/dir/report.html`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[path = "support/skip.rs"]
mod skip;

use assert_cmd::Command;
use ladder::metrics::analysis::KneeReason;
use ladder::metrics::{summarize, Latency, RungContext, RungSummary, Stats};
use ladder::record::{ErrorClass, RequestError, RequestRecord};
use ladder::report::{self, VerdictRow};
use ladder::results::{
    requests_file_name, result_file_name, HostInfo, RunInfo, RunStatus, RunWriter, RungEntry,
    RESULTS_FORMAT_VERSION,
};
use predicates::prelude::PredicateBooleanExt;

/// One synthetic rung: rate, QPS, median TTFT and TPOT (ms), failures by class.
struct Shape {
    rate: f64,
    qps: f64,
    ttft: f64,
    tpot: f64,
    errors: &'static [(&'static str, u64)],
    lag_p99: f64,
}

/// Every error class key, as the real summariser lists them.
fn classes() -> Vec<&'static str> {
    ErrorClass::ALL.iter().map(|c| c.key()).collect()
}

/// A run that saturates at 30 req/s: throughput stalls (+0.8 of +10 offered) and median TTFT
/// jumps 2.2x past the 3000 ms SLO there; at 40 req/s 16 % of requests fail.
const SATURATING: [Shape; 6] = [
    Shape {
        rate: 1.0,
        qps: 1.0,
        ttft: 480.0,
        tpot: 30.0,
        errors: &[],
        lag_p99: 0.4,
    },
    Shape {
        rate: 5.0,
        qps: 4.9,
        ttft: 520.0,
        tpot: 32.0,
        errors: &[],
        lag_p99: 0.5,
    },
    Shape {
        rate: 10.0,
        qps: 9.8,
        ttft: 700.0,
        tpot: 36.0,
        errors: &[],
        lag_p99: 0.6,
    },
    Shape {
        rate: 20.0,
        qps: 19.2,
        ttft: 1800.0,
        tpot: 48.0,
        errors: &[("timeout", 2)],
        lag_p99: 0.9,
    },
    Shape {
        rate: 30.0,
        qps: 20.0,
        ttft: 4000.0,
        tpot: 70.0,
        errors: &[("timeout", 6)],
        lag_p99: 2.5,
    },
    Shape {
        rate: 40.0,
        qps: 19.4,
        ttft: 6500.0,
        tpot: 90.0,
        errors: &[("rate_limit", 10), ("server_5xx", 22)],
        lag_p99: 7.0,
    },
];

fn summary(s: &Shape, speedup: f64) -> RungSummary {
    let failed: u64 = s.errors.iter().map(|e| e.1).sum();
    let completed = 200 - failed;
    let qps = s.qps * speedup;
    let mut errors_by_class: BTreeMap<String, u64> =
        classes().iter().map(|c| (c.to_string(), 0)).collect();
    for (c, n) in s.errors {
        errors_by_class.insert(c.to_string(), *n);
    }
    let stats = |median: f64| Stats {
        count: completed,
        mean: median * 1.05,
        median,
        std: median * 0.2,
        p90: median * 1.4,
        p95: median * 1.6,
        p99: median * 2.0,
        p999: median * 2.2,
        min: median * 0.5,
        max: median * 2.3,
    };
    let mut latency = BTreeMap::new();
    latency.insert(Latency::Ttft, stats(s.ttft / speedup));
    latency.insert(Latency::Tpot, stats(s.tpot / speedup));
    latency.insert(
        Latency::E2el,
        stats(s.ttft / speedup + 255.0 * s.tpot / speedup),
    );
    latency.insert(
        Latency::DispatchLag,
        Stats {
            count: 200,
            median: s.lag_p99 / 4.0,
            p90: s.lag_p99 / 2.0,
            p99: s.lag_p99,
            max: s.lag_p99 * 1.5,
            ..Default::default()
        },
    );
    let duration_s = completed as f64 / qps;
    RungSummary {
        rate: s.rate,
        load: Default::default(),
        burstiness: 1.0,
        max_concurrency: None,
        num_prompts: 200,
        warmup_requests: 0,
        duration_s,
        completed,
        failed,
        errors_by_class,
        total_input_tokens: completed * 512,
        total_output_tokens: completed * 256,
        request_throughput: qps,
        // Everything within SLO below the knee, nothing at or past it.
        request_goodput: if s.ttft / speedup <= 3000.0 { qps } else { 0.0 },
        output_throughput: completed as f64 * 256.0 / duration_s,
        total_token_throughput: completed as f64 * 768.0 / duration_s,
        achieved_rate: s.rate,
        max_concurrent_requests: (s.rate * 4.0) as u64,
        max_output_tokens_per_s: s.qps * 256.0,
        retokenized_outputs: 0,
        inexact_prompts: 0,
        interrupted: false,
        interrupted_requests: 0,
        tokens: Default::default(),
        reasoning: None,
        prefix: None,
        sessions: None,
        latency,
        server: Default::default(),
        repeats: Vec::new(),
        offered_rate: None,
        ramp: None,
        pooling: None,
        models: Vec::new(),
    }
}

/// Write a result folder the way the runner lays it out (run.json + result_rate_<r>.json),
/// using the real `RungSummary` serialisation. `speedup` scales throughput up and latency down.
fn write_run(dir: &Path, name: &str, speedup: f64) {
    fs::create_dir_all(dir).unwrap();
    let mut rungs = Vec::new();
    for s in &SATURATING {
        let sum = summary(s, speedup);
        let file = result_file_name(s.rate);
        fs::write(dir.join(&file), serde_json::to_string_pretty(&sum).unwrap()).unwrap();
        rungs.push(RungEntry {
            rate: s.rate,
            result_file: file,
            requests_file: requests_file_name(s.rate),
            complete: true,
        });
    }
    let mut info = run_info(name, rungs);
    // What the "what was run" block shows, with markup in the description to escape.
    let extra = serde_json::json!({
        "description": "saturation fixture: chat <b>model</b> | 512/256 *tokens*",
        "model": "llama-3-8b",
        "tokenizer": "tokenizers/llama-3.json",
        "endpoint": { "base_url": "sim", "api": "chat" },
        "workload": {
            "dataset": "random", "input_tokens": 512, "output_tokens": 256,
            "range_ratio": 0.25, "requests_per_rung": 200
        },
    });
    for (k, v) in extra.as_object().unwrap() {
        info.scenario[k] = v.clone();
    }
    info.scenario["load"]["arrival"] = "poisson".into();
    info.scenario["load"]["warmup_requests"] = 10.into();
    // The candidate of an overlay runs on a newer server: the block marks the line.
    info.server = Some(ladder::servermetrics::ServerIdentity {
        engine: "vllm".into(),
        source: "/version".into(),
        version: Some(if speedup == 1.0 { "0.8.5" } else { "0.9.0" }.into()),
        model: None,
    });
    fs::write(
        dir.join("run.json"),
        serde_json::to_string_pretty(&info).unwrap(),
    )
    .unwrap();
}

fn run_info(name: &str, rungs: Vec<RungEntry>) -> RunInfo {
    RunInfo {
        format_version: RESULTS_FORMAT_VERSION,
        tool_version: "0.1.0".into(),
        scenario_name: name.into(),
        scenario_file: format!("scenarios/{name}.yaml"),
        load: Default::default(),
        scenario: serde_json::json!({
            "version": 1,
            "name": name,
            "load": { "baseline_rate": 1.0, "rates": [5, 10, 20, 30, 40] },
            "slo": { "ttft_ms": 3000.0, "max_error_rate": 0.05 }
        }),
        git_commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        tokenizer_sha256: "00".repeat(32),
        tokenizer_source: None,
        endpoint: "sim".into(),
        host: HostInfo {
            hostname: "ci".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            cpus: 2,
        },
        started_at: "2026-01-02T03:04:05Z".parse().unwrap(),
        ended_at: Some("2026-01-02T03:14:05Z".parse().unwrap()),
        status: RunStatus::Complete,
        status_detail: None,
        rungs,
        warnings: vec!["rung 40: client dispatch lag p99 7.0 ms".into()],
        server: None,
        prompt_overhead: None,
        prompt_nonce: None,
        trace: None,
        shard: None,
        shards: None,
    }
}

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/report")
        .join(name);
    if std::env::var_os("LADDER_BLESS").is_some() {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, actual).unwrap();
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `LADDER_BLESS=1 cargo test --test report` to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{name} differs from {}; if the change is intended, rerun with LADDER_BLESS=1 and review the diff.\n--- actual ---\n{actual}",
        path.display()
    );
}

#[test]
fn analysis_of_the_fixture_finds_the_knee_and_slo_rate() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path(), "sat", 1.0);
    let run = report::RunReport::load(tmp.path(), "sat").unwrap();
    let a = &run.analysis;
    let knee = a.knee.as_ref().expect("knee");
    assert_eq!(knee.rate, 30.0);
    assert_eq!(
        knee.reasons,
        vec![KneeReason::ThroughputPlateau, KneeReason::TtftJump]
    );
    // 30 req/s misses the TTFT SLO (goodput 0), so 20 is the highest within SLO.
    assert_eq!(a.max_rate_within_slo, Some(20.0));
    assert_eq!(a.baseline_rate, Some(1.0));
    let r20 = a.rung(20.0).unwrap();
    assert!((r20.throughput_multiple.unwrap() - 19.2).abs() < 1e-9);
    assert!((r20.ttft_multiple.unwrap() - 3.75).abs() < 1e-9); // 1800 / 480
    assert!((r20.tpot_multiple.unwrap() - 1.6).abs() < 1e-9); // 48 / 30
}

#[test]
fn summary_md_and_csv_match_golden_files() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path(), "sat", 1.0);
    report::write_all(tmp.path()).unwrap();
    golden(
        "summary.md",
        &fs::read_to_string(tmp.path().join("summary.md")).unwrap(),
    );
    golden(
        "summary.csv",
        &fs::read_to_string(tmp.path().join("summary.csv")).unwrap(),
    );
    let analysis: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(tmp.path().join("analysis.json")).unwrap())
            .unwrap();
    assert_eq!(analysis["knee"]["rate"], 30.0);
    assert_eq!(analysis["max_rate_within_slo"], 20.0);
}

#[test]
fn comparison_summary_matches_golden_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, cand, out) = (
        tmp.path().join("base"),
        tmp.path().join("cand"),
        tmp.path().join("out"),
    );
    write_run(&base, "sat", 1.0);
    write_run(&cand, "sat", 1.1);
    let verdicts = vec![VerdictRow {
        rate: 20.0,
        metric: "median_ttft_ms".into(),
        base: 1800.0,
        candidate: 1636.4,
        change: "-9.1 % [-12.0, -6.2]".into(),
        verdict: "within noise".into(),
        detail: "max_increase 10%".into(),
    }];
    let verdicts = report::Verdicts {
        headline: "PASS: 0 regression(s), 0 inconclusive, 0 improvement(s), 1 pass over 1 check(s)"
            .into(),
        rows: verdicts,
    };
    report::write_comparison(&base, &cand, &out, Some(verdicts)).unwrap();
    if let Some(keep) = std::env::var_os("LADDER_REPORT_OUT") {
        fs::create_dir_all(&keep).unwrap();
        fs::copy(
            out.join("report.html"),
            Path::new(&keep).join("compare.html"),
        )
        .unwrap();
    }
    golden(
        "compare.md",
        &fs::read_to_string(out.join("summary.md")).unwrap(),
    );
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("within noise"));
    assert!(html.contains("\nbase knee 30 req/s\n</text>"));
    assert!(html.contains("\ncandidate knee 30 req/s\n</text>"));
}

/// Every report opens with what was run: the scenario's description (README: "shown in
/// reports"), model, lengths, rung size, load, tokenizer, server and endpoint, escaped for
/// its format.
#[test]
fn every_report_opens_with_what_was_run_and_the_description() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path(), "sat", 1.0);
    report::write_all(tmp.path()).unwrap();
    let md = fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("no {s:?} in {md}"));
    assert!(
        at("| description | saturation fixture: chat \\<b>model\\</b> \\| 512/256 \\*tokens\\* |")
            < at("## Run")
    );
    for line in [
        "| model | llama-3-8b |",
        "| API | chat |",
        "| prompts | random, input 512 / output 256 tokens (range_ratio 0.25: lengths uniform within ±25 %) |",
        "| rung size | 200 requests + 10 warmup |",
        "| load | rates 5, 10, 20, 30, 40 req/s, poisson arrivals |",
        "| tokenizer | tokenizers/llama-3.json |",
        "| server | vllm 0.8.5 |",
        "| endpoint | sim |",
    ] {
        assert!(at(line) < at("## Run"), "{line}");
    }
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let facts = html.find("<table class=\"facts\">").expect("facts block");
    assert!(facts < html.find("<h2>").unwrap(), "{html}");
    assert!(html.contains(
        "<tr><th>description</th><td>saturation fixture: chat &lt;b&gt;model&lt;/b&gt; | 512/256 *tokens*</td></tr>"
    ));
    assert!(!html.contains("<b>model"), "{html}");
}

/// The `<figure>` of chart `id`.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<figure class=\"chart\" id=\"chart-{id}\">"))
        .unwrap_or_else(|| panic!("chart {id} missing"));
    let end = start + html[start..].find("</figure>").unwrap();
    &html[start..end]
}

#[test]
fn html_is_self_contained_with_every_chart_drawn_and_the_knee_marked() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path(), "sat", 1.0);
    report::write_all(tmp.path()).unwrap();
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    // To look at the page (e.g. headless chromium): LADDER_REPORT_OUT=/tmp/x cargo test ...
    if let Some(keep) = std::env::var_os("LADDER_REPORT_OUT") {
        fs::create_dir_all(&keep).unwrap();
        fs::write(Path::new(&keep).join("report.html"), &html).unwrap();
    }

    // Nothing fetched: no scripts, stylesheets, images or links to follow.
    for bad in [
        "<script", "<link", "<img", "src=", "href=", "@import", "url(",
    ] {
        assert!(!html.contains(bad), "report.html contains `{bad}`");
    }
    for id in [
        "throughput",
        "ttft",
        "tpot",
        "e2e",
        "errors",
        "dispatch-lag",
    ] {
        let fig = figure(&html, id);
        let svg_start = fig
            .find("<svg")
            .unwrap_or_else(|| panic!("{id}: no inline svg"));
        assert!(fig[svg_start..].contains("</svg>"), "{id}: svg not closed");
        let curves = fig.matches("<polyline").count() + fig.matches("<path").count();
        assert!(curves >= 3, "{id}: only {curves} plotted paths");
        // Paths with real points, not empty ones (polylines merged into paths).
        assert!(
            fig.contains("d=\"M") && !fig.contains("d=\"\"") && !fig.contains("points=\"\""),
            "{id}: empty path"
        );
        assert!(fig.contains("<circle"), "{id}: no data points");
        assert!(
            fig.contains("\nknee 30 req/s\n</text>"),
            "{id}: knee not marked"
        );
        assert!(fig.contains("<figcaption>"), "{id}: no legend");
        // Rates 1 … 40 span more than 10x: a log x axis, so the low rungs are not crowded.
        assert!(
            fig.contains("log scale"),
            "{id}: linear x axis for a 40x span"
        );
    }
    // The error chart shows the classes that occurred and the SLO line.
    let errs = figure(&html, "errors");
    for c in ["rate_limit", "server_5xx", "timeout", "SLO 5.0 %"] {
        assert!(errs.contains(c), "errors chart lacks {c}");
    }
    assert!(
        !errs.contains(">auth<"),
        "a class that never occurred is drawn"
    );
    // The rung table with the knee row highlighted.
    assert!(html.contains("<tr class=\"knee miss\"><td>30 (knee)</td>"));
}

/// A result folder written by the real pipeline: request records → `metrics::summarize` →
/// `RunWriter`. Each rung has 20 measured requests sent 100 ms apart, TTFT 50 ms, TPOT 10 ms
/// (11 output tokens), and `failed_per_rung` rate-limited failures. Returns the folder.
fn write_real_run(root: &Path, rates: &[f64], failed_per_rung: u32) -> PathBuf {
    let mut info = run_info("real", Vec::new());
    info.status = RunStatus::Running;
    let mut w = RunWriter::create(root, info).unwrap();
    for &rate in rates {
        let records: Vec<RequestRecord> = (0..20u32)
            .map(|i| {
                let sent = Duration::from_millis(100 * i as u64);
                if i < failed_per_rung {
                    RequestRecord {
                        index: i,
                        scheduled: sent,
                        sent,
                        end: sent + Duration::from_millis(5),
                        input_tokens: 512,
                        error: Some(RequestError {
                            class: ErrorClass::RateLimit,
                            status: Some(429),
                            detail: "rate limited".into(),
                        }),
                        ..Default::default()
                    }
                } else {
                    RequestRecord {
                        index: i,
                        scheduled: sent,
                        sent,
                        first_token: Some(sent + Duration::from_millis(50)),
                        end: sent + Duration::from_millis(150),
                        input_tokens: 512,
                        output_tokens: 11,
                        itl: vec![Duration::from_millis(10); 10].into(),
                        ..Default::default()
                    }
                }
            })
            .collect();
        let ctx = RungContext {
            rate,
            burstiness: 1.0,
            ..Default::default()
        };
        w.write_rung(&summarize(&records, &ctx), &records, true)
            .unwrap();
    }
    w.finish(
        RunStatus::Complete,
        None,
        "2026-01-02T03:14:05Z".parse().unwrap(),
    )
    .unwrap();
    w.dir().to_path_buf()
}

/// The seed document's snippet reads result_rate_<rate>.json and the keys qps,
/// median_ttft_ms, median_tpot_ms and error_rate. Check they exist with the seed's meaning
/// in files the real writer produces.
#[test]
fn result_files_carry_the_seed_scripts_keys_with_their_meaning() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_real_run(tmp.path(), &[1.0, 5.0], 3);
    for rate in [1, 5] {
        let p = dir.join(format!("result_rate_{rate}.json"));
        let data: serde_json::Value = serde_json::from_str(&fs::read_to_string(&p).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let f = |k: &str| {
            data[k]
                .as_f64()
                .unwrap_or_else(|| panic!("{}: key {k} missing or not a number", p.display()))
        };
        let (completed, failed, duration) = (f("completed"), f("failed"), f("duration"));
        assert_eq!((completed, failed), (17.0, 3.0));
        // QPS: completed requests per second of rung wall time (first send 0 ms, last
        // completion 1900 + 150 ms).
        assert!((duration - 2.05).abs() < 1e-9, "duration {duration}");
        assert!((f("qps") - completed / duration).abs() < 1e-9);
        assert_eq!(f("qps"), f("request_throughput"));
        // Error rate: failed share of measured requests.
        assert!((f("error_rate") - 3.0 / 20.0).abs() < 1e-12);
        assert!((f("median_ttft_ms") - 50.0).abs() < 1e-6);
        assert!((f("median_tpot_ms") - 10.0).abs() < 1e-6);
        // vLLM's run-level keys, with vLLM's meaning.
        assert_eq!(data["backend"], "openai");
        assert_eq!(data["endpoint_type"], "openai");
        assert_eq!(data["label"], "real");
        assert_eq!(data["date"], "20260102-030405");
        assert!(data.get("model_id").is_some() && data.get("tokenizer_id").is_some());
        // 17 successes sent 100 ms apart, one token chunk each plus 10 gaps of 10 ms: at
        // most 10 requests' 11 chunks fall in one second.
        assert!(f("max_output_tokens_per_s") > 0.0);
        assert!(f("max_output_tokens_per_s") <= 110.0);
    }
    // And the report reads the same folder.
    report::write_all(&dir).unwrap();
    let md = fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| 5 | 17 | 3 | 15.0 % |"), "{md}");
    // Rates 1 and 5 span less than 10x: the x axis stays linear.
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("offered rate (req/s)"), "no x axis label");
    assert!(!html.contains("log scale"), "log x axis for a 5x span");
}

/// The seed's first pitfall: a missing API key turns every request into a 401. The report
/// must still render, put the knee at the first rung and say nothing meets the SLO.
#[test]
fn all_failed_run_reports_the_first_rung_as_the_knee() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_real_run(tmp.path(), &[1.0, 5.0], 20);
    report::write_all(&dir).unwrap();
    let analysis: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("analysis.json")).unwrap()).unwrap();
    assert_eq!(analysis["knee"]["rate"], 1.0);
    assert_eq!(analysis["knee"]["reasons"][0], "error_rate");
    assert!(analysis["max_rate_within_slo"].is_null());
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    if let Some(keep) = std::env::var_os("LADDER_REPORT_OUT") {
        fs::create_dir_all(&keep).unwrap();
        fs::write(Path::new(&keep).join("failed.html"), &html).unwrap();
    }
    assert!(html.contains("the first rung (1 req/s) already misses it"));
    let errs = figure(&html, "errors");
    assert!(errs.contains("\nknee 1 req/s\n</text>"));
    assert!(errs.contains("rate_limit"));
    // No success, no latency: the TTFT chart says so instead of plotting 0 ms.
    let ttft = figure(&html, "ttft");
    assert!(ttft.contains("nothing to plot"));
    assert!(!ttft.contains("<circle"));
    // Nor do the tables: the six latency cells of every rung are "-", not 0.0.
    let md = fs::read_to_string(dir.join("summary.md")).unwrap();
    let rows: Vec<Vec<&str>> = md
        .lines()
        .filter(|l| l.starts_with("| 1 ") || l.starts_with("| 5 "))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{md}");
    for row in rows {
        assert_eq!(row[8..14], ["-"; 6], "{md}");
    }
}

/// Run scripts/seed_plot.py (the seed's snippet) on a folder the real writer produced when
/// Python with matplotlib is installed; otherwise say so and check only that the script
/// still reads the seed's keys.
#[test]
fn seed_plot_script_runs_unchanged_on_a_result_folder() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/seed_plot.py");
    let text = fs::read_to_string(&script).unwrap();
    for line in [
        "qps_values.append(data['qps'])",
        "ttft_values.append(data['median_ttft_ms'])",
        "tpot_values.append(data['median_tpot_ms'])",
        "error_rates.append(data.get('error_rate', 0))",
    ] {
        assert!(text.contains(line), "seed_plot.py lost the seed's `{line}`");
    }
    let has_mpl = std::process::Command::new("python3")
        .args(["-c", "import matplotlib"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_mpl {
        skip::skip(
            "report::seed_plot_script_runs_unchanged_on_a_result_folder",
            "python3 with matplotlib not found: seed_plot.py not executed (its lines were checked)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let rates = [5.0, 10.0, 20.0, 30.0, 40.0, 50.0];
    let dir = write_real_run(tmp.path(), &rates, 0);
    let png = tmp.path().join("seed.png");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(&dir)
        .arg(&png)
        .args(["5", "10", "20", "30", "40", "50"])
        .env("MPLBACKEND", "Agg")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "seed_plot.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::metadata(&png).unwrap().len() > 1000, "empty plot");
    // The README's short form: the folder alone plots every rung run.json lists, and a
    // number where OUT.png would be is a rate, not a file called `10`.
    for args in [&[][..], &["10", "20"][..]] {
        let _ = fs::remove_file(dir.join("seed_plot.png"));
        let out = std::process::Command::new("python3")
            .arg(&script)
            .arg(&dir)
            .args(args)
            .env("MPLBACKEND", "Agg")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "seed_plot.py {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(dir.join("seed_plot.png").is_file(), "{args:?}: no plot");
        assert!(!dir.join("10").exists(), "`10` taken as the output file");
    }
    // A folder of vLLM result files (no run.json, no `qps` key: `request_throughput`):
    // plotted from its file names' rates (was: KeyError 'qps').
    let vllm = tmp.path().join("vllm");
    fs::create_dir(&vllm).unwrap();
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vllm-benchmark-serving-0.8");
    for name in ["result_rate_5.json", "result_rate_10.json"] {
        let text = fs::read_to_string(fixture.join(name)).unwrap();
        assert!(!text.contains("\"qps\""), "the fixture is a vLLM file");
        fs::write(vllm.join(name), text).unwrap();
    }
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(&vllm)
        .env("MPLBACKEND", "Agg")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "seed_plot.py on a vLLM folder failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::metadata(vllm.join("seed_plot.png")).unwrap().len() > 1000);
}

#[test]
fn ladder_report_writes_and_prints_the_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, cand, out) = (
        tmp.path().join("base"),
        tmp.path().join("cand"),
        tmp.path().join("cmp"),
    );
    // `ladder report` checks its folders as compare does: real ones, with request lines.
    let base = write_real_run(&base, &[1.0, 5.0], 0);
    let cand = write_real_run(&cand, &[1.0, 5.0], 2);
    let a = Command::cargo_bin("ladder")
        .unwrap()
        .arg("report")
        .arg(&base)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    for f in ["summary.md", "summary.csv", "report.html", "analysis.json"] {
        assert!(base.join(f).is_file(), "{f} not written");
        assert!(stdout.contains(f), "{f} not printed: {stdout}");
    }
    Command::cargo_bin("ladder")
        .unwrap()
        .arg("report")
        .arg(&base)
        .arg(&cand)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let md = fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("## base") && md.contains("## candidate"));
    // A path that does not exist: exit 2, saying so (not "not a result folder").
    let missing = tmp.path().join("nope");
    Command::cargo_bin("ladder")
        .unwrap()
        .arg("report")
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("nope: no such file or folder"))
        .stderr(predicates::str::contains("not a result folder").not());
    // A folder that exists but holds no run: exit 2 with a message naming the folder.
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    Command::cargo_bin("ladder")
        .unwrap()
        .arg("report")
        .arg(&empty)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("empty: not a result folder"));
}

/// `--rung LEVEL` picks the rung whose distributions and time series are drawn (default: the
/// knee, else the highest rung); a level the run has no rung at, or one that is not a value
/// (NaN, negative), is refused with exit 2 naming the run's rungs.
#[test]
fn ladder_report_rung_picks_the_rung_looked_at_closely() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write_real_run(&tmp.path().join("r"), &[1.0, 5.0], 0);
    let out = tmp.path().join("o");
    let html = |args: &[&str]| {
        Command::cargo_bin("ladder")
            .unwrap()
            .arg("report")
            .arg(&run)
            .arg("--out")
            .arg(&out)
            .args(args)
            .assert()
            .success();
        fs::read_to_string(out.join("report.html")).unwrap()
    };
    let default = html(&[]);
    assert!(
        default.contains("id=\"chart-cdf-ttft\""),
        "no CDF by default"
    );
    assert!(!default.contains("(chosen)"));
    let chosen = html(&["--rung", "1"]);
    assert!(
        chosen.contains("TTFT distribution at 1 req/s (chosen)"),
        "the chosen rung is not drawn"
    );
    for (bad, says) in [
        ("7", "no rung at 7 (--rung); its rungs: 1, 5"),
        ("NaN", "--rung: not a rung level"),
        ("-1", "--rung: not a rung level"),
    ] {
        Command::cargo_bin("ladder")
            .unwrap()
            .args(["report", run.to_str().unwrap(), "--out"])
            .arg(&out)
            .arg(format!("--rung={bad}"))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
}

/// `ladder report` refuses a folder compare refuses: a candidate whose summary was edited
/// (median TTFT halved) is an error naming the file, exit 2, and no overlay is written;
/// the same for the folder alone.
#[test]
fn ladder_report_refuses_an_edited_folder_as_compare_does() {
    let tmp = tempfile::tempdir().unwrap();
    let base = write_real_run(&tmp.path().join("b"), &[1.0, 5.0], 0);
    let cand = write_real_run(&tmp.path().join("c"), &[1.0, 5.0], 0);
    let file = cand.join(result_file_name(5.0));
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    v["median_ttft_ms"] = (v["median_ttft_ms"].as_f64().unwrap() / 2.0).into();
    fs::write(&file, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let out = tmp.path().join("cmp");
    for args in [vec![&base, &cand], vec![&cand]] {
        let a = Command::cargo_bin("ladder")
            .unwrap()
            .arg("report")
            .args(&args)
            .arg("--out")
            .arg(&out)
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        assert!(
            err.starts_with("error: ")
                && err.contains("result_rate_5.json")
                && err.contains("median of ttft")
                && err.contains("edited or damaged"),
            "{err}"
        );
        assert!(!out.join("summary.md").exists(), "an overlay was written");
    }
}

/// `ladder report BASE CANDIDATE` overlays the comparer's verdicts: the same table
/// `ladder compare` prints, in summary.md and report.html. Runs that cannot be compared
/// are still overlaid, without the table, and the command says why.
#[test]
fn ladder_report_overlay_carries_the_verdict_table() {
    let tmp = tempfile::tempdir().unwrap();
    let base = write_real_run(&tmp.path().join("b"), &[1.0, 5.0], 0);
    // 10 of 20 requests fail: error rate 0 → 0.5, a regression by every rule.
    let cand = write_real_run(&tmp.path().join("c"), &[1.0, 5.0], 10);
    let out = tmp.path().join("cmp");
    Command::cargo_bin("ladder")
        .unwrap()
        .arg("report")
        .arg(&base)
        .arg(&cand)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let md = fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("## Verdicts"), "{md}");
    let row = md
        .lines()
        .find(|l| l.contains("| error_rate |") && l.starts_with("| 5 "))
        .unwrap_or_else(|| panic!("no error_rate row at rate 5: {md}"));
    assert!(row.contains("REGRESSION"), "{row}");
    assert!(row.contains("0.500"), "{row}");
    // Every default check of every common rung has its row.
    let rows = md
        .lines()
        .filter(|l| l.starts_with("| 1 ") || l.starts_with("| 5 "))
        .count();
    assert!(rows >= 2 * 6, "{md}");
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2>Verdicts</h2>"), "{html}");
    assert!(html.contains("<td class=\"regression\">REGRESSION</td>"));
    // The verdict headline opens the overlay, as it opens gate Markdown: right under the
    // title, before both runs' "what was run" and the verdict table.
    let first: Vec<&str> = md.lines().take(3).collect();
    assert!(
        first[2].starts_with("**FAIL: ") && first[2].contains(" regression(s), "),
        "{md}"
    );
    assert!(
        md.find("| what was run | base | candidate |").unwrap() < md.find("## Verdicts").unwrap()
    );
    let head = html
        .find("<p class=\"headline fail\">FAIL: ")
        .unwrap_or_else(|| panic!("no headline: {html}"));
    assert!(head < html.find("<h2>").unwrap(), "{html}");
    assert!(
        head < html.find("<table class=\"facts\">").unwrap(),
        "{html}"
    );

    // No rung in common: overlaid without verdicts, with a note naming the reason.
    let other = write_real_run(&tmp.path().join("o"), &[2.0], 0);
    let out2 = tmp.path().join("cmp2");
    let a = Command::cargo_bin("ladder")
        .unwrap()
        .arg("report")
        .arg(&base)
        .arg(&other)
        .arg("--out")
        .arg(&out2)
        .assert()
        .success();
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.contains("no verdict table") && err.contains("no rung rate in common"),
        "{err}"
    );
    let md = fs::read_to_string(out2.join("summary.md")).unwrap();
    assert!(
        !md.contains("## Verdicts") && md.contains("## candidate"),
        "{md}"
    );
    assert!(
        md.contains("**NO VERDICT: the runs were not compared: the two runs have no rung"),
        "{md}"
    );
    let html = fs::read_to_string(out2.join("report.html")).unwrap();
    assert!(
        html.contains("<p class=\"headline none\">NO VERDICT: "),
        "{html}"
    );
}
