//! `ladder history` end to end: dated folders written the way the runner lays them out
//! (run.json + result_rate_<rate>.json), a known step, exit codes, vLLM folders, and
//! folders that cannot be used.

mod support;
use support::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ladder::metrics::{summarize, RungContext};
use ladder::record::RequestRecord;
use ladder::results::{
    requests_file_name, HostInfo, RunInfo, RunStatus, RunWriter, RungEntry, RESULTS_FORMAT_VERSION,
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

/// The requests of one rung, summarised and written by the real pipeline (records →
/// `metrics::summarize` → `RunWriter`): 20 requests, each with TTFT `ttft` ms and 11 output
/// tokens `tpot` ms apart, except request 0, which ends last, at 20 / `qps` s: so the median
/// TTFT and TPOT are `ttft` and `tpot` and request_throughput is `qps`, whatever the TTFT.
fn records(qps: f64, ttft: f64, tpot: f64) -> Vec<RequestRecord> {
    let ms = |v: f64| Duration::from_secs_f64(v / 1000.0);
    let n = 20;
    (0..n)
        .map(|i| {
            let sent = ms(i as f64 * 900.0 / qps);
            let first = sent + ms(ttft);
            let end = if i == 0 {
                ms(n as f64 * 1000.0 / qps)
            } else {
                first + ms(10.0 * tpot)
            };
            RequestRecord {
                index: i,
                scheduled: sent,
                sent,
                first_token: Some(first),
                end,
                input_tokens: 512,
                output_tokens: 11,
                requested_output_tokens: 11,
                itl: vec![ms(tpot); 10].into(),
                ..Default::default()
            }
        })
        .collect()
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
        prompt_nonce: None,
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
    let stepped = i >= step_at;
    let started = format!("{}T00:00:00Z", day.format("%Y-%m-%d"));
    let info = run_info(&started, if stepped { 16 } else { 8 }, Vec::new());
    let mut w = RunWriter::create_exact(&dir, info).unwrap();
    for (r, &rate) in RATES.iter().enumerate() {
        let ttft = (50.0 + noise(i, r, 0)) * if stepped { ttft_factor } else { 1.0 };
        let qps = rate * (0.98 + 0.01 * noise(i, r, 1));
        let tpot = 10.0 + 0.2 * noise(i, r, 2);
        let recs = records(qps, ttft, tpot);
        let ctx = RungContext {
            rate,
            burstiness: 1.0,
            ..Default::default()
        };
        w.write_rung(&summarize(&recs, &ctx), &recs, true).unwrap();
    }
    w.finish(RunStatus::Complete, None, started.parse().unwrap())
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

/// A folder whose summary was edited, or whose requests file is missing or empty, is
/// skipped with a note naming it and why (docs/history.md), never believed: the edited
/// newest folder here would otherwise be a TTFT regression (exit 1).
#[test]
fn edited_folders_and_missing_or_empty_requests_files_are_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/hist");
    let dirs: Vec<PathBuf> = (1..=12).map(|i| write_folder(&root, i, 99, 1.0)).collect();
    let r = history(&[s(&root)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(!r.stderr.contains("skipped"), "{}", r.stderr);

    let edited = &dirs[11];
    let file = edited.join(ladder::results::result_file_name(5.0));
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    v["median_ttft_ms"] = (v["median_ttft_ms"].as_f64().unwrap() * 1.5).into();
    fs::write(&file, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    fs::remove_file(dirs[10].join(requests_file_name(10.0))).unwrap();
    fs::write(dirs[9].join(requests_file_name(5.0)), "").unwrap();
    let r = history(&[s(&root)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(!r.stdout.contains("regression"), "{}", r.stdout);
    assert!(r.stdout.contains("history: 9 folders"), "{}", r.stdout);
    for (dir, why) in [
        (edited, "median of ttft"),
        (&dirs[10], "requests_rate_10.jsonl"),
        (&dirs[9], "the file is empty"),
    ] {
        let name = dir.file_name().unwrap().to_str().unwrap();
        let line = r
            .stderr
            .lines()
            .find(|l| l.starts_with("note: skipped") && l.contains(name))
            .unwrap_or_else(|| panic!("no skip note for {name}: {}", r.stderr));
        assert!(line.contains(why), "{line}");
    }
}

/// An interrupted run keeps the rungs it finished in the default view, and the rung it cut
/// short is named, with why, rather than silently dropped from every folder's view.
#[test]
fn an_interrupted_run_keeps_its_finished_rungs_and_names_the_one_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/hist");
    for i in 1..=6 {
        write_folder(&root, i, 99, 1.0);
    }
    // Folder 7: rung 5 finished, rung 10 cut short by Ctrl-C.
    let day = "2026-01-08";
    let started = format!("{day}T00:00:00Z");
    let dir = root.join(format!("{day}T00-00-00Z"));
    let mut w = RunWriter::create_exact(&dir, run_info(&started, 8, Vec::new())).unwrap();
    for (rate, n, interrupted) in [(5.0, 20, false), (10.0, 7, true)] {
        let recs: Vec<RequestRecord> = records(rate, 50.0, 10.0).into_iter().take(n).collect();
        let ctx = RungContext {
            rate,
            burstiness: 1.0,
            interrupted,
            ..Default::default()
        };
        w.write_rung(&summarize(&recs, &ctx), &recs, !interrupted)
            .unwrap();
    }
    w.finish(
        RunStatus::Interrupted,
        Some("Ctrl-C".into()),
        started.parse().unwrap(),
    )
    .unwrap();
    let r = history(&[s(&root)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.stdout.contains("history: 7 folders"), "{}", r.stdout);
    assert!(r.stdout.contains("rates 5, 10"), "{}", r.stdout);
    let note = r
        .stderr
        .lines()
        .find(|l| l.starts_with("note: rate 10:"))
        .unwrap_or_else(|| panic!("no note for rate 10: {}", r.stderr));
    assert!(
        note.contains("2026-01-08T00-00-00Z") && note.contains("cut short (run interrupted)"),
        "{note}"
    );
    assert!(!r.stderr.contains("note: rate 5:"), "{}", r.stderr);
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

/// A hundred folders load, each checked with its request lines. How long it takes is a
/// benchmark figure (docs/history.md), not a test bound.
#[test]
fn a_hundred_folders_load_and_pass_the_check() {
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
    // `ladder bless` copies the folder as it is.
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

/// A capacity search's answer written into folder `dir` (as `ladder run` writes
/// capacity.json): `point` with the interval ±3 %, or above its max when `None`.
fn write_capacity(dir: &Path, point: Option<f64>) {
    let (status, lo, hi, text) = match point {
        Some(p) => (
            "converged",
            Some(p * 0.97),
            Some(p * 1.03),
            format!("capacity {p} req/s at p90 TTFT <= 200 ms"),
        ),
        None => (
            "above_max",
            Some(400.0),
            None,
            "capacity above 400 req/s (the search's max, inside) at p90 TTFT <= 200 ms".into(),
        ),
    };
    let probe = |level: f64, verdict: &str| {
        serde_json::json!({
            "level": level, "measurements": 1, "requests": 400, "verdict": verdict,
            "terms": [], "bracket": [null, null]
        })
    };
    let probes: Vec<serde_json::Value> = [
        lo.map(|l| probe(l, "inside")),
        hi.map(|h| probe(h, "outside")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let file = serde_json::json!({
        "format_version": 1,
        "over": "rate",
        "unit": "req/s",
        "slo": [{ "metric": "p90_ttft_ms", "max": 200.0 }],
        "confidence": 0.9,
        "precision": "5%",
        // The probes the answer's ends are (the reader checks each end against them).
        "probes": probes,
        "answer": { "status": status, "capacity": point, "lo": lo, "hi": hi },
        "text": text,
        "requests": 2000,
        "spent_s": 30.0,
    });
    fs::write(dir.join("capacity.json"), file.to_string()).unwrap();
}

/// Folders 1–8 of a scenario searched for its capacity, about 100 req/s and 70 from folder
/// 8 on: the history follows capacity.json by default (the newest folder is a search), names
/// the step with its config diff and fails on it while it is the newest; folders without a
/// usable answer are each left out with a one-line note.
#[test]
fn capacity_searches_have_a_history_with_change_points() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results/hist");
    let dirs: Vec<PathBuf> = (1..=8).map(|i| write_folder(&root, i, 8, 1.0)).collect();
    for (i, d) in dirs.iter().enumerate() {
        let n = i + 1;
        match n {
            3 => {}                       // a plain ladder: no capacity.json
            5 => write_capacity(d, None), // above its max: no point
            6 => fs::write(d.join("capacity.json"), "{ not json").unwrap(),
            8 => write_capacity(d, Some(70.0)),
            _ => write_capacity(d, Some(100.0 + noise(n, 0, 3))),
        }
    }
    let md = tmp.path().join("h.md");
    let html = tmp.path().join("h.html");
    let r = history(&[s(&root), "--summary", s(&md), "--html", s(&html)]);
    assert_eq!(r.status.code(), Some(1), "{}", r.all());
    assert!(
        r.stdout
            .contains("regression: the newest folder (#8) is a change point for capacity"),
        "{}",
        r.stdout
    );
    let step = r
        .stdout
        .lines()
        .find(|l| l.contains("step at"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        step.starts_with("  capacity: step at #8 2026-01-09T00-00-00Z"),
        "{step}"
    );
    assert!(step.contains("-> 70 (-30."), "{step}");
    assert!(
        r.stdout.contains("+      \"max_num_seqs\": 16"),
        "{}",
        r.stdout
    );
    // The table: one row per folder with an answer, the step marked, the one-sided answer.
    assert!(
        r.stdout.contains("capacity (req/s) at p90 TTFT <= 200 ms"),
        "{}",
        r.stdout
    );
    let row = |n: &str| {
        r.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{n} ")) && l.contains("2026-"))
            .map(str::to_string)
    };
    let eight = row("8").unwrap();
    assert!(
        eight.contains("70 v") && eight.contains("[67.9, 72.1]"),
        "{eight}"
    );
    let five = row("5").unwrap();
    assert!(
        five.contains("[400, -]") && five.contains("above_max"),
        "{five}"
    );
    assert!(row("3").is_none() && row("6").is_none(), "{}", r.stdout);
    // One note per folder left out, and the default said aloud.
    for says in [
        "note: capacity: skipped #3 2026-01-04T00-00-00Z: no capacity.json",
        "note: capacity: #5 2026-01-06T00-00-00Z has no point to follow",
        "note: capacity: skipped #6 2026-01-07T00-00-00Z: unreadable capacity.json",
        "note: the newest folder is a capacity search",
    ] {
        assert_eq!(r.stderr.matches(says).count(), 1, "{says}: {}", r.stderr);
    }
    let md = fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("### capacity (req/s) at p90 TTFT \\<= 200 ms")
            && md.contains("| 8 | 2026-01-09T00-00-00Z |")
            && md.contains("capacity: step at #8"),
        "{md}"
    );
    let page = fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<svg").count(), 1, "the capacity chart");
    assert!(page.contains("#8 -30"), "its change point marker");
    // JSON: the answers by folder, null where there is none; the step has no level.
    let r = history(&[s(&root), "--json"]);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    let values = v["capacity"]["values"].as_array().unwrap();
    assert_eq!(values.len(), 8);
    assert!(values[2].is_null() && values[5].is_null());
    assert_eq!(values[7]["capacity"], 70.0);
    assert_eq!(values[4]["status"], "above_max");
    assert_eq!(v["change_points"][0]["metric"], "capacity");
    assert!(v["change_points"][0]["level"].is_null());
    // A folder later the step is no longer the newest: named at #8, exit 0.
    let nine = write_folder(&root, 9, 8, 1.0);
    write_capacity(&nine, Some(71.0));
    let r = history(&[s(&root)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.stdout.contains("capacity: step at #8"), "{}", r.stdout);
    assert!(r
        .stdout
        .contains("ok: no change point at the newest folder (#9)"));
    // A hand-edited answer (a negative capacity) is damaged: left out with a note.
    let ten = write_folder(&root, 10, 8, 1.0);
    write_capacity(&ten, Some(-5.0));
    // It is the newest folder: nothing there to judge, so no "ok" (exit 2).
    let r = history(&[s(&root)]);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr.contains(
            "note: capacity: skipped #10 2026-01-11T00-00-00Z: unreadable capacity.json: "
        ) && r
            .stderr
            .contains("damaged capacity file: probes[0]: level -4.85 is not a positive number"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout
            .contains("no verdict: the newest folder (#10) has no capacity answer to judge"),
        "{}",
        r.stdout
    );
    fs::remove_dir_all(&ten).unwrap();
    // Rung metrics and capacity together: both tables.
    let r = history(&[
        s(&root),
        "--metric",
        "capacity",
        "--metric",
        "median_ttft_ms",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(
        r.stdout.contains("rates 5, 10 and capacity"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("median_ttft_ms") && r.stdout.contains("capacity (req/s)"));
    // No folder is a search: `--metric capacity` has nothing to follow.
    let plain = tmp.path().join("plain");
    for i in 1..=3 {
        write_folder(&plain, i, 99, 1.0);
    }
    let r = history(&[s(&plain), "--metric", "capacity"]);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("none of the 3 folders holds a capacity.json"),
        "{}",
        r.stderr
    );
    // Without `--metric`, a plain history is as before.
    let r = history(&[s(&plain)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(!r.stdout.contains("capacity"), "{}", r.stdout);
}
