//! `ladder compare` / `gate` / `bless` on synthetic result folders, and the statistics on
//! samples with known answers. Golden outputs live in tests/golden/compare/; regenerate them
//! with `LADDER_BLESS=1 cargo test --test compare`.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

use ladder::compare::evidence::{evidence, Levels, Side, Slo};
use ladder::compare::stats::{self, Groups, Statistic};
use ladder::compare::verdict::{decide, Counts, Evidence, Method};
use ladder::compare::{self, Bound, CompareOptions, Verdict};
use ladder::metrics::{Latency, RungSummary, Stats};
use ladder::record::TokenSource;
use ladder::report::comparison::{ComparisonExporter, Junit, Markdown, Terminal};
use ladder::results::{
    requests_file_name, result_file_name, HostInfo, RequestLine, RunInfo, RunStatus, RungEntry,
    RESULTS_FORMAT_VERSION,
};
use ladder::scenario::Threshold;

// ---------- synthetic result folders ----------

/// What a synthetic run looks like.
#[derive(Clone)]
struct Spec {
    rates: Vec<f64>,
    requests: usize,
    seed: u64,
    /// Multiplies TTFT / TPOT at each rate (default 1).
    ttft_scale: BTreeMap<u64, f64>,
    tpot_scale: f64,
    model: String,
    status: RunStatus,
    /// Rates at which every request fails with a 401.
    all_fail: Vec<f64>,
    /// Every second request (odd indices) fails with a 401, at every rate.
    half_fail: bool,
    gate: serde_json::Value,
    cooldown: &'static str,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            rates: vec![1.0, 5.0, 10.0],
            requests: 200,
            seed: 1,
            ttft_scale: BTreeMap::new(),
            tpot_scale: 1.0,
            model: "sim-model".into(),
            status: RunStatus::Complete,
            all_fail: vec![],
            half_fail: false,
            gate: serde_json::Value::Null,
            cooldown: "10s",
        }
    }
}

fn np_quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let k = pos.floor() as usize;
    let f = pos - k as f64;
    if k + 1 < sorted.len() {
        sorted[k] + f * (sorted[k + 1] - sorted[k])
    } else {
        sorted[k]
    }
}

fn stats_of(mut v: Vec<f64>) -> Stats {
    if v.is_empty() {
        return Stats::default();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    Stats {
        count: v.len() as u64,
        mean,
        median: np_quantile(&v, 0.5),
        std: (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt(),
        p90: np_quantile(&v, 0.9),
        p95: np_quantile(&v, 0.95),
        p99: np_quantile(&v, 0.99),
        p999: np_quantile(&v, 0.999),
        min: v[0],
        max: v[v.len() - 1],
    }
}

fn lines_for(spec: &Spec, rate: f64) -> Vec<RequestLine> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed * 1000 + rate as u64);
    let noise = LogNormal::new(0.0, 0.3).unwrap();
    let scale = spec.ttft_scale.get(&(rate as u64)).copied().unwrap_or(1.0);
    let all_fail = spec.all_fail.contains(&rate);
    (0..spec.requests)
        .map(|i| {
            let fail = all_fail || (spec.half_fail && i % 2 == 1);
            let sent = i as f64 * 1000.0 / rate;
            let ttft = 50.0 * scale * noise.sample(&mut rng);
            let tpot = 10.0 * spec.tpot_scale * noise.sample(&mut rng);
            let out = 16u32;
            let itl: Vec<f64> = (0..out - 1).map(|_| tpot).collect();
            let e2e = ttft + tpot * f64::from(out - 1);
            RequestLine {
                index: i as u32,
                scheduled_ms: sent,
                sent_ms: sent,
                first_token_ms: (!fail).then_some(sent + ttft),
                end_ms: sent + if fail { 5.0 } else { e2e },
                ttft_ms: (!fail).then_some(ttft),
                tpot_ms: (!fail).then_some(tpot),
                e2e_ms: if fail { 5.0 } else { e2e },
                input_tokens: 32,
                output_tokens: if fail { 0 } else { out },
                token_source: TokenSource::Usage,
                itl_ms: if fail { vec![] } else { itl },
                ok: !fail,
                error_class: fail.then_some(ladder::record::ErrorClass::Auth),
                status: fail.then_some(401),
                error_detail: fail.then(|| "missing key".to_string()),
                server_prompt_tokens: (!fail).then_some(32),
                server_completion_tokens: (!fail).then_some(out),
                requested_output_tokens: Some(out),
                ..RequestLine::default()
            }
        })
        .collect()
}

fn summary_for(rate: f64, lines: &[RequestLine]) -> RungSummary {
    let ok: Vec<&RequestLine> = lines.iter().filter(|r| r.ok).collect();
    let first = lines
        .iter()
        .map(|r| r.sent_ms)
        .fold(f64::INFINITY, f64::min);
    let last = lines.iter().map(|r| r.end_ms).fold(0.0, f64::max);
    let dur = (last - first) / 1000.0;
    let out: u64 = ok.iter().map(|r| u64::from(r.output_tokens)).sum();
    let inp: u64 = ok.iter().map(|r| u64::from(r.input_tokens)).sum();
    let mut errors_by_class = BTreeMap::new();
    for c in ladder::record::ErrorClass::ALL {
        let n = lines.iter().filter(|r| r.error_class == Some(c)).count() as u64;
        errors_by_class.insert(c.key().to_string(), n);
    }
    let mut latency = BTreeMap::new();
    latency.insert(
        Latency::Ttft,
        stats_of(ok.iter().filter_map(|r| r.ttft_ms).collect()),
    );
    latency.insert(
        Latency::Tpot,
        stats_of(ok.iter().filter_map(|r| r.tpot_ms).collect()),
    );
    latency.insert(
        Latency::Itl,
        stats_of(ok.iter().flat_map(|r| r.itl_ms.clone()).collect()),
    );
    latency.insert(
        Latency::E2el,
        stats_of(ok.iter().map(|r| r.e2e_ms).collect()),
    );
    // The loader checks every distribution against the lines, as the writer computes it.
    latency.insert(
        Latency::TtftSched,
        stats_of(
            ok.iter()
                .filter_map(|r| r.first_token_ms.map(|f| f - r.scheduled_ms))
                .collect(),
        ),
    );
    latency.insert(
        Latency::E2elSched,
        stats_of(ok.iter().map(|r| r.end_ms - r.scheduled_ms).collect()),
    );
    latency.insert(
        Latency::E2elAll,
        stats_of(lines.iter().map(|r| r.e2e_ms).collect()),
    );
    latency.insert(
        Latency::DispatchLag,
        stats_of(lines.iter().map(|r| r.sent_ms - r.scheduled_ms).collect()),
    );
    // The keys the loader recomputes with the writer's code (peaks, goodput under the
    // scenario's SLO, token accounting), from the lines read back as records.
    let records: Vec<_> = lines
        .iter()
        .map(ladder::record::RequestRecord::from)
        .collect();
    let slo = ladder::scenario::Slo {
        ttft_ms: Some(3000.0),
        tpot_ms: Some(100.0),
        ..Default::default()
    };
    let ctx = ladder::metrics::RungContext {
        rate,
        slo,
        ..Default::default()
    };
    let w = ladder::metrics::summarize(&records, &ctx);
    RungSummary {
        rate,
        burstiness: 1.0,
        num_prompts: lines.len() as u64,
        duration_s: dur,
        completed: ok.len() as u64,
        failed: (lines.len() - ok.len()) as u64,
        errors_by_class,
        total_input_tokens: inp,
        total_output_tokens: out,
        request_throughput: ok.len() as f64 / dur,
        request_goodput: w.request_goodput,
        output_throughput: out as f64 / dur,
        total_token_throughput: (out + inp) as f64 / dur,
        achieved_rate: w.achieved_rate,
        max_concurrent_requests: w.max_concurrent_requests,
        max_output_tokens_per_s: w.max_output_tokens_per_s,
        retokenized_outputs: w.retokenized_outputs,
        tokens: w.tokens,
        latency,
        server: Default::default(),
        ..Default::default()
    }
}

/// Write a synthetic result folder the way the runner's writer does (same serde shapes).
fn write_run(dir: &Path, spec: &Spec) {
    std::fs::create_dir_all(dir).unwrap();
    let mut rungs = Vec::new();
    for &rate in &spec.rates {
        let lines = lines_for(spec, rate);
        let s = summary_for(rate, &lines);
        std::fs::write(
            dir.join(result_file_name(rate)),
            serde_json::to_string_pretty(&s).unwrap(),
        )
        .unwrap();
        let jsonl: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect();
        std::fs::write(dir.join(requests_file_name(rate)), jsonl).unwrap();
        rungs.push(RungEntry {
            rate,
            result_file: result_file_name(rate),
            requests_file: requests_file_name(rate),
            complete: true,
        });
    }
    let mut scenario = serde_json::json!({
        "version": 1,
        "name": "quick",
        "endpoint": { "base_url": "sim", "api": "completions", "request_timeout": "2m" },
        "model": spec.model,
        "tokenizer": "tokenizers/ladder-tiny.json",
        "workload": { "dataset": "random", "input_tokens": 32, "output_tokens": 16, "requests_per_rung": spec.requests, "seed": 0 },
        "load": { "arrival": "poisson", "rates": spec.rates, "cooldown": spec.cooldown },
        "slo": { "ttft_ms": 3000.0, "tpot_ms": 100.0 },
    });
    if !spec.gate.is_null() {
        scenario["gate"] = spec.gate.clone();
    }
    let info = RunInfo {
        format_version: RESULTS_FORMAT_VERSION,
        tool_version: "0.1.0".into(),
        scenario_name: "quick".into(),
        scenario_file: "scenarios/quick.yaml".into(),
        load: Default::default(),
        scenario,
        git_commit: None,
        tokenizer_sha256: "ab".repeat(32),
        tokenizer_source: None,
        endpoint: "sim".into(),
        host: HostInfo {
            hostname: "ci".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            cpus: 2,
        },
        started_at: "2026-01-01T00:00:00Z".parse().unwrap(),
        ended_at: Some("2026-01-01T00:10:00Z".parse().unwrap()),
        status: spec.status,
        status_detail: (spec.status == RunStatus::Interrupted).then(|| "Ctrl-C".to_string()),
        rungs,
        warnings: vec![],
        server: None,
        prompt_overhead: None,
        prompt_nonce: None,
        trace: None,
        shard: None,
        shards: None,
    };
    std::fs::write(
        dir.join("run.json"),
        serde_json::to_string_pretty(&info).unwrap(),
    )
    .unwrap();
}

fn ladder() -> Command {
    Command::cargo_bin("ladder").unwrap()
}

fn pair(base: &Spec, cand: &Spec) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("base"), t.path().join("cand"));
    write_run(&b, base);
    write_run(&c, cand);
    (t, b, c)
}

// ---------- statistics with known answers ----------

fn lognormal(n: usize, sigma: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let d = LogNormal::new(4.0, sigma).unwrap();
    (0..n).map(|_| vec![d.sample(&mut rng)]).collect()
}

/// One run per side judged on the requests' noise alone (`--drift 0`): the within-run
/// mechanics these tests check, without the default assumed drift (tested on its own in
/// `one_run_per_side_assumes_the_default_drift`).
fn within_only() -> CompareOptions {
    CompareOptions {
        drift: None,
        ..CompareOptions::default()
    }
}

fn scaled(v: &[Vec<f64>], k: f64) -> Vec<Vec<f64>> {
    v.iter()
        .map(|g| g.iter().map(|x| x * k).collect())
        .collect()
}

fn verdict_of(base: &[Vec<f64>], cand: &[Vec<f64>], stat: Statistic, bound: Bound) -> Verdict {
    let (base, cand) = (Groups::from(base), Groups::from(cand));
    let r = stats::bootstrap(&base, &cand, stat, stats::SEED, stats::CONFIDENCE);
    let e = Evidence {
        base: r.base,
        cand: r.cand,
        ratio: Some(r.ratio),
        diff: Some(r.diff),
        cand_ci: Some(r.cand_ci),
        method: Method::Bootstrap,
        level: stats::CONFIDENCE,
        requests: base.len().min(cand.len()),
        counts: None,
        too_few: None,
        repeats: [1, 1],
        drift: None,
        blocks: [1, 1],
    };
    decide(bound, 0.0, &e).verdict
}

const UP10: Bound = Bound::Increase(Threshold::Relative(0.10));

#[test]
fn identical_samples_pass() {
    let s = lognormal(500, 0.3, 7);
    assert_eq!(
        verdict_of(&s, &s, Statistic::Quantile(0.5), UP10),
        Verdict::Pass
    );
    assert_eq!(verdict_of(&s, &s, Statistic::Mean, UP10), Verdict::Pass);
}

#[test]
fn a_doubling_is_a_regression() {
    let b = lognormal(200, 0.5, 1);
    let c = scaled(&lognormal(200, 0.5, 2), 2.0);
    assert_eq!(
        verdict_of(&b, &c, Statistic::Quantile(0.5), UP10),
        Verdict::Regression
    );
    assert_eq!(
        verdict_of(&b, &c, Statistic::Mean, UP10),
        Verdict::Regression
    );
}

#[test]
fn a_small_noisy_twelve_percent_shift_is_inconclusive() {
    let b = lognormal(30, 0.5, 3);
    let c0 = lognormal(30, 0.5, 4);
    // Scale the candidate so its sample mean is exactly 12 % above the baseline's.
    let mean = |v: &[Vec<f64>]| v.iter().map(|g| g[0]).sum::<f64>() / v.len() as f64;
    let c = scaled(&c0, 1.12 * mean(&b) / mean(&c0));
    assert!((mean(&c) / mean(&b) - 1.12).abs() < 1e-9);
    let r = stats::bootstrap(
        &Groups::from(b.as_slice()),
        &Groups::from(c.as_slice()),
        Statistic::Mean,
        stats::SEED,
        stats::CONFIDENCE,
    );
    assert!(r.ratio.lo < 1.10 && r.ratio.hi > 1.10, "{r:?}");
    assert_eq!(
        verdict_of(&b, &c, Statistic::Mean, UP10),
        Verdict::Inconclusive
    );
}

#[test]
fn a_clear_thirty_percent_improvement_is_an_improvement() {
    let b = lognormal(200, 0.3, 5);
    let c = scaled(&lognormal(200, 0.3, 6), 0.7);
    assert_eq!(
        verdict_of(&b, &c, Statistic::Quantile(0.5), UP10),
        Verdict::Improvement
    );
}

#[test]
fn itl_bootstrap_resamples_requests_and_p99_needs_299() {
    let spec = Spec::default();
    let lines = lines_for(&spec, 5.0);
    let s = summary_for(5.0, &lines);
    let side = Side {
        summary: &s,
        lines: &lines,
        slo: Slo::default(),
    };
    // 200 requests: p99 TTFT cannot be bounded; the note says how many are needed.
    let e = evidence(
        "p99_ttft_ms",
        &side,
        &side,
        Levels::new(stats::CONFIDENCE, stats::CONFIDENCE),
    )
    .unwrap();
    let note = e.too_few.expect("p99 with 200 samples must be flagged");
    assert!(note.contains("299"), "{note}");
    // ITL has 15 gaps per request: 3000 samples, so its p99 is bounded, and each resample
    // keeps whole requests (flattened sample counts stay multiples of 15).
    let groups = ladder::compare::evidence::latency_groups(&lines, Latency::Itl);
    assert_eq!(groups.len(), 200);
    assert!(groups.iter().all(|g| g.len() == 15));
    let e = evidence(
        "p99_itl_ms",
        &side,
        &side,
        Levels::new(stats::CONFIDENCE, stats::CONFIDENCE),
    )
    .unwrap();
    assert!(e.too_few.is_none());
    // Error rate uses the proportion intervals.
    let e = evidence(
        "error_rate",
        &side,
        &side,
        Levels::new(stats::CONFIDENCE, stats::CONFIDENCE),
    )
    .unwrap();
    assert_eq!(e.method, Method::Proportion);
}

#[test]
fn error_rate_gate_with_absolute_threshold() {
    let bound = Bound::Increase(Threshold::Absolute(0.01));
    let big = |fb, fc| Evidence {
        base: fb as f64 / 2000.0,
        cand: fc as f64 / 2000.0,
        ratio: None,
        diff: Some(stats::newcombe(fb, 2000, fc, 2000, stats::CONFIDENCE)),
        cand_ci: Some(stats::wilson(fc, 2000, stats::CONFIDENCE)),
        method: Method::Proportion,
        level: stats::CONFIDENCE,
        requests: 2000,
        counts: Some(Counts::binomial((fb, 2000), (fc, 2000))),
        too_few: None,
        repeats: [1, 1],
        drift: None,
        blocks: [1, 1],
    };
    assert_eq!(decide(bound, 0.0, &big(0, 0)).verdict, Verdict::Pass);
    assert_eq!(
        decide(bound, 0.0, &big(10, 200)).verdict,
        Verdict::Regression
    );
    let d = decide(bound, 0.0, &big(10, 40));
    assert_eq!(d.verdict, Verdict::Inconclusive);
    assert!(
        d.note.contains("raise workload.requests_per_rung to ≥ "),
        "{}",
        d.note
    );
}

// ---------- whole comparisons ----------

fn regression_pair() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let base = Spec {
        rates: vec![1.0, 5.0, 10.0, 20.0],
        ..Spec::default()
    };
    let mut cand = Spec {
        seed: 2,
        rates: vec![1.0, 5.0, 10.0],
        cooldown: "5s",
        ..Spec::default()
    };
    cand.ttft_scale.insert(10, 1.6);
    pair(&base, &cand)
}

#[test]
fn comparison_finds_the_regressed_rung_and_reports_the_rest() {
    let (_t, b, c) = regression_pair();
    let cmp = compare::compare_dirs(&b, &c, &within_only()).unwrap();
    let at = |rate: f64, metric: &str| {
        cmp.rows
            .iter()
            .find(|r| r.rate == rate && r.check.metric == metric)
            .unwrap()
            .decision
            .verdict
    };
    assert_eq!(at(10.0, "median_ttft_ms"), Verdict::Regression);
    assert_eq!(at(5.0, "median_ttft_ms"), Verdict::Pass);
    assert_eq!(at(5.0, "p99_ttft_ms"), Verdict::Inconclusive);
    assert!(cmp
        .warnings
        .iter()
        .any(|w| w.contains("20 req/s is only in the baseline")));
    assert!(cmp
        .config_diff
        .as_deref()
        .unwrap()
        .contains("\"cooldown\": \"5s\""));
    assert_eq!(cmp.exit_code(false), 1);
    // 6 default checks × 3 common rungs.
    assert_eq!(cmp.rows.len(), 18);
}

#[test]
fn unchanged_rerun_passes_and_says_no_configuration_change() {
    let (_t, b, c) = pair(
        &Spec::default(),
        &Spec {
            seed: 9,
            ..Spec::default()
        },
    );
    let cmp = compare::compare_dirs(&b, &c, &within_only()).unwrap();
    assert!(cmp.config_diff.is_none());
    assert_eq!(cmp.count(Verdict::Regression), 0, "{:#?}", cmp.rows);
    assert_eq!(cmp.exit_code(false), 0);
    let text = Terminal.render(&cmp, false);
    assert!(text.contains("no configuration change"));
    assert!(text.contains("PASS"));
}

// ---------- golden files ----------

fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/compare")
        .join(name);
    if std::env::var_os("LADDER_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} missing; run LADDER_BLESS=1 cargo test --test compare",
            path.display()
        )
    });
    assert_eq!(
        expected, actual,
        "{name} differs from its golden file; if the change is intended, regenerate with LADDER_BLESS=1 cargo test --test compare"
    );
}

#[test]
fn golden_terminal_markdown_and_junit() {
    let (_t, b, c) = regression_pair();
    let mut cmp = compare::compare_dirs(&b, &c, &CompareOptions::default()).unwrap();
    cmp.base_label = "golden/quick".into();
    cmp.cand_label = "results/quick/2026-01-01T00-00-00Z".into();
    check_golden("table.txt", &Terminal.render(&cmp, false));
    check_golden("summary.md", &Markdown.render(&cmp, false));
    check_golden("junit.xml", &Junit.render(&cmp, false));
    check_golden("junit-strict.xml", &Junit.render(&cmp, true));
}

// ---------- the binary: exit codes and messages ----------

#[test]
fn binary_exit_codes_pass_and_regression() {
    let (_t, b, c) = pair(
        &Spec::default(),
        &Spec {
            seed: 9,
            ..Spec::default()
        },
    );
    // One run per side at 200 requests: every latency check is inconclusive under the
    // assumed drift, and the throughput checks pass only because both runs served the
    // arrival schedule they share. That decides nothing about the server's speed: no
    // verdict (exit 2), where it used to read PASS.
    ladder()
        .args(["compare"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(2)
        .stdout(contains("NO VERDICT"))
        .stdout(contains("6 throughput pass(es) below saturation"));
    // The intervals of the requests alone (`--drift 0`) decide latency checks: PASS.
    ladder()
        .args(["compare", "--drift", "0"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(0)
        .stdout(contains("PASS"));
    let (_t2, b, c) = regression_pair();
    let dir = tempfile::tempdir().unwrap();
    let (md, xml) = (dir.path().join("s.md"), dir.path().join("j.xml"));
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .arg("--summary")
        .arg(&md)
        .arg("--junit")
        .arg(&xml)
        .assert()
        .code(1)
        .stdout(contains("REGRESSION"));
    assert!(std::fs::read_to_string(&md).unwrap().contains("❌"));
    assert!(std::fs::read_to_string(&xml).unwrap().contains("<failure"));
}

#[test]
fn strict_turns_inconclusive_into_failure() {
    let (_t, b, c) = pair(
        &Spec::default(),
        &Spec {
            seed: 9,
            ..Spec::default()
        },
    );
    // p99 at 200 requests is always inconclusive: alone, it decides nothing, so the
    // comparison has no verdict (exit 2); with the other checks, judged on the requests
    // alone (`--drift 0`: the latency checks decide), it passes.
    let args = ["--threshold", "p99_ttft_ms=+20%"];
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .args(args)
        .args(["--drift", "0"])
        .assert()
        .code(0);
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .args(args)
        .arg("--only")
        .assert()
        .code(2)
        .stdout(contains("NO VERDICT: nothing could be judged"));
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .args(args)
        .arg("--strict")
        .assert()
        .code(1)
        // 18 checks: each interval at 99.72 %, so p99 needs 586 samples (299 at 95 %).
        .stdout(contains("raise workload.requests_per_rung to ≥ 586"));
}

#[test]
fn bad_thresholds_exit_2_with_the_nearest_name() {
    let (_t, b, c) = pair(&Spec::default(), &Spec::default());
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .args(["--threshold", "p99_tft_ms=+15%"])
        .assert()
        .code(2)
        .stderr(contains("did you mean `p99_ttft_ms`"));
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .args(["--threshold", "p99_ttft_ms=15%"])
        .assert()
        .code(2)
        .stderr(contains("needs a sign"));
    // An unknown metric in the scenario's gate list is refused too.
    let (_t, b, c) = pair(
        &Spec::default(),
        &Spec {
            gate: serde_json::json!([{ "metric": "median_ttft", "max_increase": "10%" }]),
            ..Spec::default()
        },
    );
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .assert()
        .code(2)
        .stderr(contains("did you mean `median_ttft_ms`"));
}

#[test]
fn scenario_gate_list_is_used() {
    let (_t, b, c) = pair(
        &Spec::default(),
        &Spec {
            seed: 4,
            gate: serde_json::json!([{ "metric": "median_tpot_ms", "max_increase": "10%" }]),
            tpot_scale: 1.5,
            ..Spec::default()
        },
    );
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .assert()
        .code(1)
        .stdout(contains("candidate scenario `gate:`"))
        .stdout(contains("median_tpot_ms"));
}

/// `--only` applies the `--threshold` rules alone: the regressed TTFT (a default check)
/// is not judged when only TPOT is asked for, and `--only` without a rule is refused.
#[test]
fn only_applies_the_threshold_rules_alone() {
    let (_t, b, c) = regression_pair();
    let cmp = compare::compare_dirs(
        &b,
        &c,
        &CompareOptions {
            overrides: vec![compare::parse_override("median_tpot_ms=+10%").unwrap()],
            only: true,
            ..within_only()
        },
    )
    .unwrap();
    assert_eq!(cmp.checks_source, "--threshold only");
    assert!(cmp.rows.iter().all(|r| r.check.metric == "median_tpot_ms"));
    assert_eq!(cmp.rows.len(), 3, "one check on each of 3 common rungs");
    assert_eq!(cmp.exit_code(false), 0, "{:#?}", cmp.rows);
    // The same pair without --only judges the defaults too, and TTFT regressed.
    ladder()
        .args(["compare", "--threshold", "median_tpot_ms=+10%"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(1);
    ladder()
        .args([
            "compare",
            "--drift",
            "0",
            "--only",
            "--threshold",
            "median_tpot_ms=+10%",
        ])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(0)
        .stdout(contains("checks: --threshold only"));
    ladder()
        .args(["compare", "--only"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(2)
        .stderr(contains("--only applies the --threshold rules alone"));
}

/// A candidate folder (from a pull request, say) cannot loosen its own thresholds: two
/// folders are judged by the baseline's `gate:` rules, and the difference is said.
#[test]
fn a_candidate_cannot_loosen_the_baselines_gate_rules() {
    let (_t, b, c) = pair(
        &Spec {
            gate: serde_json::json!([{ "metric": "median_tpot_ms", "max_increase": "10%" }]),
            ..Spec::default()
        },
        &Spec {
            seed: 4,
            gate: serde_json::json!([{ "metric": "median_tpot_ms", "max_increase": "1000%" }]),
            tpot_scale: 1.5,
            ..Spec::default()
        },
    );
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .assert()
        .code(1)
        .stdout(contains("baseline scenario `gate:`"))
        .stdout(contains("rules differ: the baseline's are used"));
}

#[test]
fn unusable_inputs_exit_2_with_a_message() {
    let (t, b, c) = pair(&Spec::default(), &Spec::default());
    let run = |base: &Path, cand: &Path, msg: &str| {
        ladder()
            .arg("compare")
            .arg(base)
            .arg(cand)
            .assert()
            .code(2)
            .stderr(contains(msg.to_string()));
    };
    // Not a result folder.
    run(t.path(), &c, "not a result folder");
    // Truncated run.json.
    let trunc = t.path().join("trunc");
    write_run(&trunc, &Spec::default());
    let text = std::fs::read_to_string(trunc.join("run.json")).unwrap();
    std::fs::write(trunc.join("run.json"), &text[..text.len() / 2]).unwrap();
    run(&b, &trunc, "not valid ladder JSON");
    // Hand-edited rung summary with a wrong type.
    let typed = t.path().join("typed");
    write_run(&typed, &Spec::default());
    let p = typed.join(result_file_name(5.0));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["completed"] = serde_json::json!("lots");
    std::fs::write(&p, v.to_string()).unwrap();
    run(&b, &typed, "completed");
    // Truncated request lines.
    let lines = t.path().join("lines");
    write_run(&lines, &Spec::default());
    let p = lines.join(requests_file_name(1.0));
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, &text[..text.len() - 40]).unwrap();
    run(&b, &lines, "line 200");
    // A baseline from a future results format.
    let future = t.path().join("future");
    write_run(&future, &Spec::default());
    let p = future.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["format_version"] = serde_json::json!(RESULTS_FORMAT_VERSION + 1);
    std::fs::write(&p, v.to_string()).unwrap();
    run(&future, &c, "upgrade ladder");
    // Zero successful requests on a rung.
    let dead = t.path().join("dead");
    write_run(
        &dead,
        &Spec {
            all_fail: vec![5.0],
            ..Spec::default()
        },
    );
    // A baseline without successes is no baseline (a candidate's outage is a regression:
    // `an_outage_is_a_regression_not_unusable_input`).
    run(&dead, &b, "the baseline has 0 successful requests");
    // No common rungs.
    let other = t.path().join("other");
    write_run(
        &other,
        &Spec {
            rates: vec![2.0, 4.0],
            ..Spec::default()
        },
    );
    run(&b, &other, "no rung rate in common");
}

/// A run stopped before its first rung finished (a soak's one rung, cut short): compare
/// names the interruption, not empty rate lists, and bless refuses it even with --force.
#[test]
fn a_run_interrupted_before_any_rung_finished_is_named_and_never_blessed() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("base"), t.path().join("cand"));
    write_run(&b, &Spec::default());
    write_run(
        &c,
        &Spec {
            status: RunStatus::Interrupted,
            ..Spec::default()
        },
    );
    let p = c.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    for r in v["rungs"].as_array_mut().unwrap() {
        r["complete"] = false.into();
    }
    std::fs::write(&p, v.to_string()).unwrap();
    let want = format!(
        "the candidate run ({}) was interrupted before any rung completed (status `interrupted` in its run.json: Ctrl-C); nothing to compare",
        c.display()
    );
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .assert()
        .code(2)
        .stderr(contains(want))
        .stderr(contains("no rung rate in common").not());
    let golden = t.path().join("golden");
    ladder()
        .arg("bless")
        .arg(&c)
        .arg("--golden")
        .arg(&golden)
        .arg("--force")
        .assert()
        .code(2)
        .stderr(contains(
            "no rung completed (run status `interrupted`: Ctrl-C)",
        ))
        .stderr(contains("not even with --force"));
    assert!(!golden.join("quick").exists());
}

/// Ctrl-C and SIGTERM stop a long comparison with a message and exit 2, as they stop a
/// run. Rungs of 4,000 requests (below the large-sample switch) are bootstrapped: minutes
/// in a debug build, so the signal lands mid-comparison.
#[test]
fn ctrl_c_and_sigterm_stop_a_long_comparison() {
    let spec = Spec {
        requests: 4_000,
        ..Spec::default()
    };
    let (_t, b, c) = pair(
        &spec,
        &Spec {
            seed: 9,
            ..spec.clone()
        },
    );
    for (sig, name) in [("INT", "SIGINT"), ("TERM", "SIGTERM")] {
        let live = support::spawn(support::ladder_cmd(&[
            "compare",
            b.to_str().unwrap(),
            c.to_str().unwrap(),
        ]));
        // Past start-up and loading (a fraction of a second), into the bootstrap.
        std::thread::sleep(std::time::Duration::from_secs(3));
        live.signal(sig);
        // A bound for liveness, not a speed: without the fix the comparison runs on.
        let r = live.finish(std::time::Duration::from_secs(30));
        support::no_panic(&r);
        assert_eq!(r.status.code(), Some(2), "{sig}: {}", r.all());
        assert!(
            r.stderr
                .contains(&format!("stopped by {name} while comparing; no verdict")),
            "{}",
            r.all()
        );
        assert!(
            !r.stdout.contains("PASS:") && !r.stdout.contains("FAIL:"),
            "{}",
            r.all()
        );
    }
}

#[test]
fn different_model_is_refused_unless_allowed() {
    let (_t, b, c) = pair(
        &Spec::default(),
        &Spec {
            model: "other-model".into(),
            ..Spec::default()
        },
    );
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .assert()
        .code(2)
        .stderr(contains("different model"))
        .stderr(contains("--allow-config-change"));
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .arg("--allow-config-change")
        .assert()
        // Compared anyway: identical requests, one run per side, judge nothing of speed.
        .code(2)
        .stdout(contains("NO VERDICT"))
        .stdout(contains("WARNING: different model"))
        .stdout(contains("-    \"model\": \"sim-model\""));
}

#[test]
fn bless_refuses_an_interrupted_run_and_replaces_the_baseline() {
    let t = tempfile::tempdir().unwrap();
    let golden = t.path().join("golden");
    let run = t.path().join("run");
    write_run(
        &run,
        &Spec {
            status: RunStatus::Interrupted,
            ..Spec::default()
        },
    );
    ladder()
        .arg("bless")
        .arg(&run)
        .arg("--golden")
        .arg(&golden)
        .assert()
        .code(2)
        .stderr(contains("run status is `interrupted` (Ctrl-C)"))
        .stderr(contains("--force"));
    assert!(!golden.join("quick").exists());
    ladder()
        .arg("bless")
        .arg(&run)
        .arg("--golden")
        .arg(&golden)
        .arg("--force")
        .assert()
        .code(0);
    // A complete run replaces it; no temporary folders are left behind.
    let good = t.path().join("good");
    write_run(
        &good,
        &Spec {
            rates: vec![1.0, 2.0],
            ..Spec::default()
        },
    );
    ladder()
        .arg("bless")
        .arg(&good)
        .arg("--golden")
        .arg(&golden)
        .assert()
        .code(0)
        .stdout(contains("blessed"))
        // It says what it replaced, from the old baseline's run.json.
        .stdout(contains(
            "replaced: the baseline of 2026-01-01 00:00:00 UTC (no git commit recorded, ladder 0.1.0), kept in",
        ));
    let info: RunInfo =
        serde_json::from_str(&std::fs::read_to_string(golden.join("quick/run.json")).unwrap())
            .unwrap();
    assert_eq!(info.status, RunStatus::Complete);
    assert!(golden.join("quick").join(requests_file_name(2.0)).is_file());
    assert!(!golden.join("quick").join(requests_file_name(5.0)).exists());
    let mut names: Vec<String> = std::fs::read_dir(&golden)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // No temporary folders are left behind; the old baseline is kept, whole, under .replaced.
    assert_eq!(names, vec![".replaced".to_string(), "quick".to_string()]);
    let kept: Vec<PathBuf> = std::fs::read_dir(golden.join(".replaced/quick"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    // `git add golden/` commits the baseline, never the backup: .replaced/ ignores itself.
    assert_eq!(
        std::fs::read_to_string(golden.join(".replaced/.gitignore")).unwrap(),
        ladder::commands::replaced::GITIGNORE
    );
    let repo = golden.parent().unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(repo)
            .output()
            .expect("git runs")
    };
    assert!(
        git(&["init", "-q"]).status.success(),
        "git is needed: the test checks what `git add golden/` stages"
    );
    assert!(git(&["add", "golden"]).status.success());
    let staged = String::from_utf8(git(&["ls-files", "--cached"]).stdout).unwrap();
    assert!(staged.contains("golden/quick/run.json"), "{staged}");
    assert!(!staged.contains(".replaced"), "backups staged:\n{staged}");
    let old: RunInfo =
        serde_json::from_str(&std::fs::read_to_string(kept[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(old.status, RunStatus::Interrupted);
    assert!(kept[0].join(requests_file_name(5.0)).is_file());
    // Not a result folder.
    ladder()
        .arg("bless")
        .arg(t.path())
        .arg("--golden")
        .arg(&golden)
        .assert()
        .code(2);
}

/// Replaced baselines pile up under golden/.replaced/<scenario>/, one folder per bless;
/// gate and history never take them for the baseline; a `.replaced` that is a symlink
/// (golden/ arrives in pull requests) is refused, and nothing is moved.
#[test]
fn bless_keeps_every_replaced_baseline_and_nothing_mistakes_it_for_one() {
    let t = tempfile::tempdir().unwrap();
    let golden = t.path().join("golden");
    for seed in 1..=3 {
        let run = t.path().join(format!("run{seed}"));
        write_run(
            &run,
            &Spec {
                seed,
                ..Spec::default()
            },
        );
        ladder()
            .arg("bless")
            .arg(&run)
            .arg("--golden")
            .arg(&golden)
            .assert()
            .code(0);
    }
    let kept: Vec<PathBuf> = std::fs::read_dir(golden.join(".replaced/quick"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 2, "two blesses replaced a baseline: {kept:?}");
    // History labels golden/quick as the baseline, never a replaced one.
    let loaded =
        ladder::history::series::load(&[golden.join("quick"), golden.join(".replaced/quick")])
            .unwrap();
    let names: Vec<&str> = loaded.folders.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names.iter().filter(|n| n.starts_with("golden/")).count(),
        1,
        "{names:?}"
    );
    assert!(names.contains(&"golden/quick"), "{names:?}");
    // A run.json that names the scenario `.replaced` is refused by every reader.
    let bad = t.path().join("bad");
    write_run(&bad, &Spec::default());
    let p = bad.join("run.json");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replace("\"quick\"", "\".replaced\"")).unwrap();
    ladder()
        .arg("bless")
        .arg(&bad)
        .arg("--golden")
        .arg(&golden)
        .assert()
        .code(2)
        .stderr(contains("is not a scenario name"));
    // A planted symlink at golden/.replaced: refused, the baseline stays where it was.
    #[cfg(unix)]
    {
        let g2 = t.path().join("golden2");
        ladder()
            .arg("bless")
            .arg(t.path().join("run1"))
            .arg("--golden")
            .arg(&g2)
            .assert()
            .code(0);
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, g2.join(".replaced")).unwrap();
        ladder()
            .arg("bless")
            .arg(t.path().join("run2"))
            .arg("--golden")
            .arg(&g2)
            .assert()
            .code(2)
            .stderr(contains("not a folder (a symlink or a file)"));
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        let f = result_file_name(1.0);
        let read = |p: PathBuf| std::fs::read(p).unwrap();
        assert_eq!(
            read(g2.join("quick").join(&f)),
            read(t.path().join("run1").join(&f))
        );
        assert_ne!(
            read(t.path().join("run2").join(&f)),
            read(t.path().join("run1").join(&f))
        );
        let left: Vec<_> = std::fs::read_dir(&g2)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "no temporary folder left: {left:?}");
    }
}

#[test]
fn gate_exits_2_when_the_run_is_unusable() {
    let t = tempfile::tempdir().unwrap();
    ladder()
        .arg("gate")
        .arg(t.path().join("missing.yaml"))
        .arg("--golden")
        .arg(t.path().join("golden"))
        .assert()
        .code(2)
        .stderr(contains("error:"));
    ladder()
        .args(["gate", "x.yaml", "--threshold", "nope=+1%"])
        .assert()
        .code(2)
        .stderr(contains("unknown metric `nope`"));
}

// ---------- folders written by the real writer ----------

/// A folder written by `results::RunWriter` from `metrics::summarize`d records (the same
/// path the runner takes) compares, and the statistics recomputed from its request lines
/// agree with its summary.
#[test]
fn folders_from_the_real_writer_compare() {
    use ladder::metrics::compute::{summarize, RungContext};
    use ladder::record::RequestRecord;
    use ladder::results::{ResultDir, RunWriter};
    use std::time::Duration;

    let write = |root: &Path, seed: u64, slow: f64| -> PathBuf {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let noise = LogNormal::new(0.0, 0.3).unwrap();
        let mut info: RunInfo = serde_json::from_str(
            &std::fs::read_to_string({
                let d = root.join("template");
                write_run(
                    &d,
                    &Spec {
                        rates: vec![],
                        ..Spec::default()
                    },
                );
                d.join("run.json")
            })
            .unwrap(),
        )
        .unwrap();
        info.rungs.clear();
        info.status = RunStatus::Running;
        // The loader checks run.json's rungs against the ones its scenario plans.
        info.scenario["load"]["rates"] = serde_json::json!([2.0, 4.0]);
        let mut w = RunWriter::create(&root.join(format!("r{seed}")), info).unwrap();
        for rate in [2.0, 4.0] {
            let records: Vec<RequestRecord> = (0..100u32)
                .map(|i| {
                    let sent = Duration::from_secs_f64(f64::from(i) / rate);
                    let ttft = Duration::from_secs_f64(0.05 * slow * noise.sample(&mut rng));
                    let tpot = Duration::from_secs_f64(0.01 * noise.sample(&mut rng));
                    RequestRecord {
                        index: i,
                        scheduled: sent,
                        sent,
                        first_token: Some(sent + ttft),
                        end: sent + ttft + tpot * 15,
                        input_tokens: 32,
                        output_tokens: 16,
                        itl: vec![tpot; 15].into(),
                        ..Default::default()
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
            "2026-01-01T00:10:00Z".parse().unwrap(),
        )
        .unwrap();
        w.dir().to_path_buf()
    };
    let t = tempfile::tempdir().unwrap();
    let base = write(t.path(), 1, 1.0);
    let same = write(t.path(), 2, 1.0);
    let slow = write(t.path(), 3, 2.0);

    let d = ResultDir::open(&base).unwrap();
    let rung = &d.rungs[0];
    let lines = d.requests(rung).unwrap();
    let groups = ladder::compare::evidence::latency_groups(&lines, Latency::Ttft);
    let r = stats::bootstrap(
        &groups,
        &groups,
        Statistic::Quantile(0.5),
        stats::SEED,
        stats::CONFIDENCE,
    );
    let median = rung.summary.metric("median_ttft_ms").unwrap();
    assert!((r.base - median).abs() < 1e-6, "{} vs {median}", r.base);

    let opts = within_only();
    let ok = compare::compare_dirs(&base, &same, &opts).unwrap();
    assert_eq!(
        ok.count(Verdict::Regression),
        0,
        "{}",
        Terminal.render(&ok, false)
    );
    let bad = compare::compare_dirs(&base, &slow, &opts).unwrap();
    let median_rows: Vec<_> = bad
        .rows
        .iter()
        .filter(|r| r.check.metric == "median_ttft_ms")
        .collect();
    assert_eq!(median_rows.len(), 2);
    assert!(median_rows
        .iter()
        .all(|r| r.decision.verdict == Verdict::Regression));
}

/// The gate after its run: an unusable run, a missing baseline, a pass and a regression
/// (the run itself needs the runner; this drives the rest with a ready-made outcome).
#[test]
fn gate_after_the_run() {
    use ladder::commands::{gate_outcome, GateError, GateOptions};
    use ladder::runner::RunOutcome;

    let t = tempfile::tempdir().unwrap();
    let golden = t.path().join("golden");
    let outcome = |dir: PathBuf| RunOutcome {
        info: serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap())
            .unwrap(),
        dir,
        rungs: vec![],
    };
    let opts = GateOptions {
        golden: Some(golden.clone()),
        compare: within_only(),
        ..Default::default()
    };
    let fresh = t.path().join("fresh");
    write_run(
        &fresh,
        &Spec {
            seed: 5,
            ..Spec::default()
        },
    );
    match gate_outcome(&opts, &outcome(fresh.clone())) {
        Err(e @ GateError::NoBaseline(_)) => assert!(e.to_string().contains("ladder bless")),
        other => panic!("{other:?}"),
    }
    write_run(&golden.join("quick"), &Spec::default());
    let c = gate_outcome(&opts, &outcome(fresh)).unwrap();
    // Unchanged, one run per side at 200 requests: no latency check decides, and throughput
    // passes below saturation say nothing of speed: no verdict, not a failure.
    assert!(!c.failed(false));
    assert_eq!(
        c.exit_code(false),
        2,
        "{}",
        ladder::report::comparison::summary_line(&c, false)
    );
    let mut slow = Spec {
        seed: 6,
        ..Spec::default()
    };
    slow.ttft_scale.insert(5, 1.3);
    let slow_dir = t.path().join("slow");
    write_run(&slow_dir, &slow);
    let c = gate_outcome(&opts, &outcome(slow_dir)).unwrap();
    assert_eq!(c.exit_code(false), 1);
    let stopped = t.path().join("stopped");
    write_run(
        &stopped,
        &Spec {
            status: RunStatus::Interrupted,
            ..Spec::default()
        },
    );
    assert!(matches!(
        gate_outcome(&opts, &outcome(stopped)),
        Err(GateError::Run(m)) if m.contains("run status is `interrupted` (Ctrl-C)")
    ));
}

/// Rungs of 6,000 requests a side take the large-sample intervals, not the bootstrap: a
/// 25 % slower TPOT is a regression, an unchanged run passes, and the JUnit detail names
/// the method.
#[test]
fn big_rungs_are_judged_by_large_sample_intervals() {
    let big = Spec {
        rates: vec![5.0],
        requests: 6_000,
        gate: serde_json::json!([
            { "metric": "median_tpot_ms", "max_increase": "10%" },
            { "metric": "p90_ttft_ms", "max_increase": "10%" },
            { "metric": "output_throughput", "max_decrease": "10%" }
        ]),
        ..Spec::default()
    };
    let slower = Spec {
        seed: 9,
        tpot_scale: 1.25,
        ..big.clone()
    };
    let (t, b, c) = pair(&big, &slower);
    let junit = t.path().join("junit.xml");
    // The large-sample intervals alone (`--drift 0`): at the default assumed 5 % drift one
    // run per side cannot call +25 % TPOT past a +10 % threshold (see
    // `one_run_per_side_assumes_the_default_drift`).
    ladder()
        .arg("compare")
        .args(["--drift", "0"])
        .arg(&b)
        .arg(&c)
        .arg("--junit")
        .arg(&junit)
        .assert()
        .code(1)
        .stdout(contains("REGRESSION"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("by large-sample").count(), 3, "{xml}");
    assert!(!xml.contains("by bootstrap"), "{xml}");

    let same = Spec {
        seed: 9,
        ..big.clone()
    };
    let (_t2, b2, c2) = pair(&big, &same);
    ladder()
        .args(["compare", "--drift", "0"])
        .arg(&b2)
        .arg(&c2)
        .assert()
        .code(0);
}

/// Every candidate request of a ladder failed after preflight passed (an outage): a
/// regression the error rate judges (exit 1), whose latency checks say "no successes";
/// a baseline with no successes stays unusable (exit 2), as does an outage with no
/// error_rate check to judge it.
#[test]
fn an_outage_is_a_regression_not_unusable_input() {
    let t = tempfile::tempdir().unwrap();
    let (b, dead) = (t.path().join("b"), t.path().join("dead"));
    write_run(&b, &Spec::default());
    write_run(
        &dead,
        &Spec {
            all_fail: vec![1.0, 5.0, 10.0],
            ..Spec::default()
        },
    );
    let out = ladder().arg("compare").arg(&b).arg(&dead).assert().code(1);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("no successes: all 200 candidate requests failed (auth 200), so median_ttft_ms was not measured"),
        "{text}"
    );
    // Each rung: both throughputs and the error rate regress; the latencies say why not.
    assert!(
        text.contains("FAIL: 9 regression(s), 9 inconclusive"),
        "{text}"
    );
    assert!(!text.contains("NaN"), "{text}");
    ladder()
        .arg("compare")
        .arg(&dead)
        .arg(&b)
        .assert()
        .code(2)
        .stderr(contains("the baseline has 0 successful requests"));
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&dead)
        .args(["--only", "--threshold", "median_ttft_ms=+10%"])
        .assert()
        .code(2)
        .stderr(contains("cannot compare median_ttft_ms"));
}

/// Ten requests a rung, below the bootstrap's 20: an unchanged candidate decides nothing,
/// so the comparison has no verdict (exit 2, never an empty PASS; --strict: exit 1); a
/// candidate 38 times slower in TTFT is a regression by the rank test; one with half its
/// requests failing is a regression by the error-rate test pooled over the rungs.
#[test]
fn small_rungs_judge_what_they_can_and_otherwise_have_no_verdict() {
    let t = tempfile::tempdir().unwrap();
    let small = |seed: u64| Spec {
        requests: 10,
        seed,
        ..Spec::default()
    };
    let dir = |n: &str| t.path().join(n);
    write_run(&dir("base"), &small(1));
    write_run(&dir("same"), &small(2));
    let mut slow = small(3);
    for r in [1, 5, 10] {
        slow.ttft_scale.insert(r, 38.0);
    }
    write_run(&dir("slow"), &slow);
    write_run(
        &dir("half"),
        &Spec {
            half_fail: true,
            ..small(4)
        },
    );
    let compare = |cand: &str, extra: &[&str], code: i32| -> String {
        let out = ladder()
            .arg("compare")
            .arg(dir("base"))
            .arg(dir(cand))
            .args(extra)
            .assert()
            .code(code);
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let same = compare("same", &[], 2);
    assert!(
        same.contains("NO VERDICT: nothing could be judged: 18 of 18 check(s) inconclusive"),
        "{same}"
    );
    assert!(!same.contains("PASS"), "{same}");
    compare("same", &["--strict"], 1);
    let slow = compare("slow", &[], 1);
    assert!(
        slow.contains("exact rank test (Mann–Whitney)") && slow.contains("100 of 100 pairs above"),
        "{slow}"
    );
    assert!(slow.contains("rank test"), "{slow}");
    let half = compare("half", &[], 1);
    assert!(
        half.contains("exact stratified test") && half.contains("failed 15 of 30 against 0 of 30"),
        "{half}"
    );
}

/// One run per side: the default path assumes a run-to-run drift of 5 % (`--drift`'s
/// default) and says so; it widens the latency checks (a +25 % TPOT is no longer called
/// past a +10 % threshold from one run each: drift alone could give ±16 %), leaves an
/// open-loop rung's throughput below saturation as it is (the offered rate, whatever the
/// speed), and `--drift 0` takes the assumption away.
#[test]
fn one_run_per_side_assumes_the_default_drift() {
    let big = Spec {
        rates: vec![5.0],
        requests: 6_000,
        gate: serde_json::json!([
            { "metric": "median_tpot_ms", "max_increase": "10%" },
            { "metric": "request_throughput", "max_decrease": "10%" }
        ]),
        ..Spec::default()
    };
    let slower = Spec {
        seed: 9,
        tpot_scale: 1.25,
        ..big.clone()
    };
    let (_t, b, c) = pair(&big, &slower);
    let by_default = compare::compare_dirs(&b, &c, &CompareOptions::default()).unwrap();
    assert_eq!(by_default.run_noise.assumed, Some(compare::DEFAULT_DRIFT));
    assert!(
        by_default
            .run_noise
            .describe()
            .contains("assumed 5.0 % per run"),
        "{}",
        by_default.run_noise.describe()
    );
    let within = compare::compare_dirs(&b, &c, &within_only()).unwrap();
    let row = |c: &compare::Comparison, metric: &str| {
        c.rows
            .iter()
            .find(|r| r.check.metric == metric)
            .unwrap_or_else(|| panic!("no {metric} row"))
            .clone()
    };
    let (d, w) = (
        row(&by_default, "median_tpot_ms"),
        row(&within, "median_tpot_ms"),
    );
    assert_eq!(w.decision.verdict, Verdict::Regression, "{w:#?}");
    assert_eq!(d.decision.verdict, Verdict::Inconclusive, "{d:#?}");
    let width = |r: &compare::Row| {
        let (_, i) = r.decision.interval.expect("an interval");
        i.hi / i.lo
    };
    assert!(width(&d) > width(&w) * 1.2, "{d:#?} vs {w:#?}");
    // An open-loop rung below saturation: its throughput interval is not widened.
    let (dt, wt) = (
        row(&by_default, "request_throughput"),
        row(&within, "request_throughput"),
    );
    assert!((width(&dt) - width(&wt)).abs() < 1e-9, "{dt:#?} vs {wt:#?}");
    // The binary: the default says so on its noise line; --drift 0 takes it away.
    ladder()
        .arg("compare")
        .arg(&b)
        .arg(&c)
        .assert()
        .stdout(contains("run-to-run noise: assumed 5.0 % per run"));
    ladder()
        .args(["compare", "--drift", "0"])
        .arg(&b)
        .arg(&c)
        .assert()
        .code(1)
        .stdout(contains("run-to-run noise: unknown (one run per side)"));
}
