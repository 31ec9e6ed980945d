//! `ladder history` end to end: dated folders written the way the runner lays them out
//! (run.json + result_rate_<rate>.json), a known step, exit codes, vLLM folders, and
//! folders that cannot be used.

mod support;
use support::*;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ladder::metrics::{Latency, RungSummary, Stats};
use ladder::results::{
    requests_file_name, result_file_name, HostInfo, RunInfo, RunStatus, RungEntry,
    RESULTS_FORMAT_VERSION,
};

const RATES: [f64; 2] = [5.0, 10.0];

/// Deterministic noise in [-1, 1] for folder `i`, rate `r`, metric `k`.
fn noise(i: usize, r: usize, k: usize) -> f64 {
    let mut z = (i as u64 * 1_000_003 + r as u64 * 7919 + k as u64 * 104_729)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= z >> 29;
    z = z.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 32;
    (z % 2001) as f64 / 1000.0 - 1.0
}

fn summary(rate: f64, qps: f64, ttft: f64, tpot: f64) -> RungSummary {
    let stats = |median: f64| Stats {
        count: 200,
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
    latency.insert(Latency::Ttft, stats(ttft));
    latency.insert(Latency::Tpot, stats(tpot));
    latency.insert(Latency::E2el, stats(ttft + 255.0 * tpot));
    RungSummary {
        rate,
        burstiness: 1.0,
        num_prompts: 200,
        duration_s: 200.0 / qps,
        completed: 200,
        failed: 0,
        total_input_tokens: 200 * 512,
        total_output_tokens: 200 * 256,
        request_throughput: qps,
        request_goodput: qps,
        output_throughput: qps * 256.0,
        total_token_throughput: qps * 768.0,
        achieved_rate: rate,
        max_concurrent_requests: (rate * 4.0) as u64,
        max_output_tokens_per_s: qps * 256.0,
        latency,
        ..Default::default()
    }
}

fn run_info(started: &str, max_num_seqs: u32, rungs: Vec<RungEntry>) -> RunInfo {
    RunInfo {
        format_version: RESULTS_FORMAT_VERSION,
        tool_version: "0.1.0".into(),
        scenario_name: "hist".into(),
        scenario_file: "scenarios/hist.yaml".into(),
        load: Default::default(),
        scenario: serde_json::json!({
            "version": 1,
            "name": "hist",
            "endpoint": { "base_url": "sim" },
            "sim": { "max_num_seqs": max_num_seqs },
            "load": { "rates": RATES },
        }),
        git_commit: Some(format!("c0ffee{max_num_seqs:034}")),
        tokenizer_sha256: "00".repeat(32),
        tokenizer_source: None,
        endpoint: "sim".into(),
        host: HostInfo {
            hostname: "ci".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            cpus: 2,
        },
        started_at: started.parse().unwrap(),
        ended_at: Some(started.parse().unwrap()),
        status: RunStatus::Complete,
        status_detail: None,
        rungs,
        warnings: vec![],
        server: None,
        prompt_overhead: None,
        trace: None,
        shard: None,
        shards: None,
    }
}

/// Folder `i` (1-based) of a daily series: median TTFT 50 ms ± 1 (× `ttft_factor` from
/// folder `step_at` on, where the scenario's max_num_seqs also changes), QPS ≈ rate.
fn write_folder(root: &Path, i: usize, step_at: usize, ttft_factor: f64) -> PathBuf {
    let day = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Days::new(i as u64);
    let name = format!("{}T00-00-00Z", day.format("%Y-%m-%d"));
    let dir = root.join(&name);
    fs::create_dir_all(&dir).unwrap();
    let stepped = i >= step_at;
    let mut rungs = Vec::new();
    for (r, &rate) in RATES.iter().enumerate() {
        let ttft = (50.0 + noise(i, r, 0)) * if stepped { ttft_factor } else { 1.0 };
        let qps = rate * (0.98 + 0.01 * noise(i, r, 1));
        let tpot = 10.0 + 0.2 * noise(i, r, 2);
        let file = result_file_name(rate);
        let s = summary(rate, qps, ttft, tpot);
        fs::write(dir.join(&file), serde_json::to_string_pretty(&s).unwrap()).unwrap();
        // Never read by history: a requests file that is not JSON at all.
        fs::write(dir.join(requests_file_name(rate)), "not json\n").unwrap();
        rungs.push(RungEntry {
            rate,
            result_file: file,
            requests_file: requests_file_name(rate),
            complete: true,
        });
    }
    let info = run_info(
        &format!("{}T00:00:00Z", day.format("%Y-%m-%d")),
        if stepped { 16 } else { 8 },
        rungs,
    );
    fs::write(
        dir.join("run.json"),
        serde_json::to_string_pretty(&info).unwrap(),
    )
    .unwrap();
    dir
}

fn history(args: &[&str]) -> Ran {
    let mut all = vec!["history"];
    all.extend_from_slice(args);
    let r = spawn(ladder_cmd(&all)).finish(Duration::from_secs(60));
    no_panic(&r);
    r
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_step_at_folder_8_of_12_is_named_with_its_config_diff_and_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/hist");
    for i in 1..=12 {
        write_folder(&root, i, 8, 1.4);
    }
    let md = tmp.path().join("history.md");
    let html = tmp.path().join("history.html");
    let r = history(&[s(&root), "--summary", s(&md), "--html", s(&html)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let steps: Vec<&str> = r.stdout.lines().filter(|l| l.contains("step at")).collect();
    assert_eq!(steps.len(), 2, "one TTFT step per rate: {}", r.all());
    for line in &steps {
        assert!(
            line.contains("median_ttft_ms: step at #8 2026-01-09T00-00-00Z"),
            "{line}"
        );
        assert!(
            line.contains("regression") && line.contains("e-divisive"),
            "{line}"
        );
    }
    assert!(
        r.stdout.contains("-      \"max_num_seqs\": 8"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("+      \"max_num_seqs\": 16"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("ok: no change point at the newest folder (#12)"),
        "{}",
        r.stdout
    );
    let md = fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("### Change points") && md.contains("step at #8"),
        "{md}"
    );
    assert!(md.contains("```diff"), "{md}");
    let page = fs::read_to_string(&html).unwrap();
    assert_eq!(
        page.matches("<svg").count(),
        4,
        "one chart per default metric"
    );
    assert!(page.contains("folder (# in time order)"));
    if let Some(out) = std::env::var_os("LADDER_HISTORY_OUT") {
        fs::write(Path::new(&out).join("history.html"), &page).unwrap();
    }
    assert!(
        page.contains("#8 +39"),
        "change point marker on the TTFT chart"
    );
}

#[test]
fn folders_are_ordered_by_start_time_not_by_argument_order() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/hist");
    let dirs: Vec<PathBuf> = (1..=12).map(|i| write_folder(&root, i, 8, 1.4)).collect();
    let mut args: Vec<&str> = dirs.iter().rev().map(|d| s(d)).collect();
    args.extend(["--metric", "median_ttft_ms", "--rate", "5"]);
    let r = history(&args);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(
        r.stdout
            .contains("rate 5 median_ttft_ms: step at #8 2026-01-09T00-00-00Z"),
        "{}",
        r.stdout
    );
    assert_eq!(r.stdout.matches("step at").count(), 1, "{}", r.stdout);
}

#[test]
fn a_regression_at_the_newest_folder_exits_1_and_an_improvement_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let worse = tmp.path().join("worse");
    let better = tmp.path().join("better");
    for i in 1..=8 {
        write_folder(&worse, i, 8, 1.4);
        write_folder(&better, i, 8, 0.6);
    }
    let r = history(&[s(&worse)]);
    assert_eq!(r.status.code(), Some(1), "{}", r.all());
    assert!(
        r.stdout.contains(
            "regression: the newest folder (#8) is a change point for median_ttft_ms at rate 5, median_ttft_ms at rate 10"
        ),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("recent-folders t test"));
    // One folder later the step is no longer the newest: still named at #8, exit 0.
    write_folder(&worse, 9, 8, 1.4);
    let r = history(&[s(&worse)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert_eq!(r.stdout.matches("step at #8 ").count(), 2, "{}", r.stdout);
    assert!(r
        .stdout
        .contains("ok: no change point at the newest folder (#9)"));
    let r = history(&[s(&better)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.stdout.contains("improvement"), "{}", r.stdout);
    assert!(r.stdout.contains("is a change point, but not a regression"));
}

#[test]
fn unusable_folders_are_skipped_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/hist");
    for i in 1..=6 {
        write_folder(&root, i, 99, 1.0);
    }
    let bad = |name: &str| {
        let d = root.join(name);
        fs::create_dir_all(&d).unwrap();
        d
    };
    fs::write(bad("0-garbage").join("run.json"), "{ not json").unwrap();
    bad("0-empty");
    let running = write_folder(&root, 7, 99, 1.0);
    let text = fs::read_to_string(running.join("run.json")).unwrap();
    fs::write(
        running.join("run.json"),
        text.replace("\"status\": \"complete\"", "\"status\": \"running\""),
    )
    .unwrap();
    let future = write_folder(&root, 8, 99, 1.0);
    let text = fs::read_to_string(future.join("run.json")).unwrap();
    fs::write(
        future.join("run.json"),
        text.replace("\"format_version\": 1", "\"format_version\": 99"),
    )
    .unwrap();
    let escape = write_folder(&root, 9, 99, 1.0);
    let text = fs::read_to_string(escape.join("run.json")).unwrap();
    fs::write(
        escape.join("run.json"),
        text.replace("\"result_rate_5.json\"", "\"../../../../etc/passwd\""),
    )
    .unwrap();
    fs::write(root.join("notes.txt"), "a file, not a folder").unwrap();
    let r = history(&[s(&root)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    for (name, why) in [
        ("0-garbage", "not valid ladder JSON"),
        ("0-empty", "not a result folder"),
        ("2026-01-08T00-00-00Z", "never finished"),
        ("2026-01-09T00-00-00Z", "upgrade ladder"),
        ("2026-01-10T00-00-00Z", "edited or damaged"),
    ] {
        let line = r
            .stderr
            .lines()
            .find(|l| l.starts_with("note: skipped") && l.contains(name))
            .unwrap_or_else(|| panic!("no skip note for {name}: {}", r.stderr));
        assert!(line.contains(why), "{line}");
    }
    assert!(r.stdout.contains("history: 6 folders"), "{}", r.stdout);

    // Nothing usable, a missing argument, a bad metric, a bad alpha: exit 2 with `error:`.
    let only_bad = tmp.path().join("only-bad");
    fs::create_dir_all(only_bad.join("x")).unwrap();
    let missing = tmp.path().join("missing");
    for (args, says) in [
        (vec![s(&only_bad)], "no usable result folder"),
        (vec![s(&missing)], "missing"),
        (vec![s(&root), "--metric", "median_ttft"], "did you mean"),
        (vec![s(&root), "--alpha", "2"], "not a probability"),
        (vec![s(&root), "--rate", "7"], "--rate 7"),
    ] {
        let r = history(&args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.all());
        assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

/// A summary-only vLLM result file (the keys `vllm bench serve` writes) for one rate.
fn vllm_result(date: &str, rate: f64, ttft: f64) -> serde_json::Value {
    let n = 200;
    let duration = n as f64 / rate;
    let mut o = serde_json::json!({
        "date": date,
        "endpoint_type": "openai",
        "backend": "openai",
        "model_id": "/models/m",
        "tokenizer_id": "/models/m",
        "num_prompts": n,
        "request_rate": rate,
        "burstiness": 1.0,
        "max_concurrency": null,
        "duration": duration,
        "completed": n,
        "failed": 0,
        "total_input_tokens": 512 * n,
        "total_output_tokens": 64 * n,
        "request_throughput": n as f64 / duration,
        "request_goodput": null,
        "output_throughput": (64 * n) as f64 / duration,
        "total_token_throughput": ((512 + 64) * n) as f64 / duration,
        "max_output_tokens_per_s": 1234.0,
        "max_concurrent_requests": 9,
    });
    let m = o.as_object_mut().unwrap();
    for (key, v) in [("ttft", ttft), ("tpot", 10.0), ("itl", 10.0)] {
        for stat in ["mean", "median", "p99"] {
            m.insert(format!("{stat}_{key}_ms"), serde_json::json!(v));
        }
        m.insert(format!("std_{key}_ms"), serde_json::json!(0.0));
    }
    o
}

#[test]
fn a_set_of_vllm_result_folders_has_a_history() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("benchmark_results");
    for i in 1..=12usize {
        let dir = root.join(format!("run{i:02}"));
        fs::create_dir_all(&dir).unwrap();
        for (r, rate) in [5.0, 10.0].into_iter().enumerate() {
            let ttft = (80.0 + 2.0 * noise(i, r, 0)) * if i >= 7 { 1.5 } else { 1.0 };
            let v = vllm_result(&format!("202506{i:02}-101500"), rate, ttft);
            fs::write(
                dir.join(format!("result_rate_{rate}.json")),
                serde_json::to_string_pretty(&v).unwrap(),
            )
            .unwrap();
        }
    }
    let r = history(&[s(&root), "--metric", "median_ttft_ms"]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert_eq!(
        r.stdout.matches("step at #7 run07").count(),
        2,
        "{}",
        r.all()
    );
    assert!(r.stdout.contains("history: 12 folders"), "{}", r.stdout);
}

/// A hundred folders load from their summaries alone (every requests file here is not
/// JSON, so reading one would fail the run). How long it takes is a benchmark figure
/// (docs/history.md), not a test bound.
#[test]
fn a_hundred_folders_load_from_their_summaries_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/hist");
    for i in 1..=100 {
        write_folder(&root, i, 60, 1.3);
    }
    let t = Instant::now();
    let r = history(&[s(&root)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.stdout.contains("history: 100 folders"), "{}", r.stdout);
    assert!(r.stdout.contains("step at #60"), "{}", r.stdout);
    eprintln!("100 folders: {:?}", t.elapsed());
}

#[test]
fn a_golden_folder_counts_once_and_sits_at_its_start_time() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/hist");
    let golden = tmp.path().join("golden");
    let dirs: Vec<PathBuf> = (1..=8).map(|i| write_folder(&root, i, 99, 1.0)).collect();
    // `ladder bless` copies the folder as it is (it would refuse these folders' stand-in
    // requests files, which history never reads).
    let g = golden.join("hist");
    fs::create_dir_all(&g).unwrap();
    for e in fs::read_dir(&dirs[2]).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), g.join(e.file_name())).unwrap();
    }
    // The blessed copy of a dated folder given too: the same run, counted once.
    let r = history(&[s(&root), s(&g)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.stdout.contains("history: 8 folders"), "{}", r.stdout);
    assert!(
        r.stderr.lines().any(|l| l.starts_with("note: skipped")
            && l.contains("golden/hist")
            && l.contains("the same run as")),
        "{}",
        r.stderr
    );
    // Golden alone (its dated folder pruned): it takes its place in time order.
    fs::remove_dir_all(&dirs[2]).unwrap();
    let r = history(&[s(&g), s(&root)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.stdout.contains("history: 8 folders"), "{}", r.stdout);
    assert!(
        r.stdout
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["3", "golden/hist"])),
        "{}",
        r.stdout
    );
}

#[test]
fn folders_written_by_ladder_run_have_a_history() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = Sc::new("sim").write(tmp.path());
    let out = tmp.path().join("results");
    for _ in 0..2 {
        let r = run_ladder(&sc, &out, Duration::from_secs(60));
        assert_eq!(r.status.code(), Some(0), "{}", r.all());
        // Folder names are UTC seconds.
        std::thread::sleep(Duration::from_millis(1100));
    }
    let r = history(&[s(&out.join("rel"))]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.stdout.contains("history: 2 folders"), "{}", r.stdout);
    assert!(r.stdout.contains("rates 20, 40"), "{}", r.stdout);
    assert!(r
        .stdout
        .contains("ok: no change point at the newest folder (#2)"));
    assert!(!r.stderr.contains("skipped"), "{}", r.stderr);
}

/// A scenario folder with more than `MAX_FOLDERS` sub-folders (a mistaken argument such as
/// `/`): only the newest 10 000 by name are read, so the oldest real run is never opened.
#[test]
fn only_the_newest_ten_thousand_sub_folders_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/s");
    let oldest = write_folder(&root, 1, 99, 1.0);
    for i in 0..10_000 {
        fs::create_dir_all(root.join(format!("2026-02-{i:05}"))).unwrap();
    }
    let newer = [
        write_folder(&root, 100, 99, 1.0),
        write_folder(&root, 101, 99, 1.0),
    ];
    let r = history(&[s(&root)]);
    let all = r.all();
    let oldest_name = oldest.file_name().unwrap().to_str().unwrap();
    assert!(
        !all.contains(oldest_name),
        "the oldest folder was read:\n{}",
        &all[..all.len().min(4000)]
    );
    // 10 003 sub-folders: the oldest real one and the two oldest empty ones are dropped.
    let skipped = r.stderr.lines().filter(|l| l.contains("skipped")).count();
    assert_eq!(skipped, 9_998, "{}", &r.stderr[..r.stderr.len().min(2000)]);
    assert!(
        !r.stderr.contains("2026-02-00000"),
        "an empty folder past the cap was read"
    );
    assert!(r.stderr.contains("2026-02-09999"));
    // The two newest real runs are the ones analysed.
    assert_eq!(r.status.code(), Some(0), "{}", &all[..all.len().min(4000)]);
    let _ = newer;
    assert_eq!(ladder::history::series::MAX_FOLDERS, 10_000);
}
