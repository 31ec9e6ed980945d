//! Folders of vLLM `benchmark_serving.py` / `vllm bench serve` result files as input to
//! `compare`, `gate` (as the baseline) and `report`: summary-only files compared on their
//! values (saying noise is not judged), `--save-detailed` files with full verdicts.
//! Fixtures carry vLLM's real key set, Python's `Infinity` included.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_ladder");

fn ladder(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("ladder runs")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Deterministic per-request latencies in seconds: `base` plus a spread.
fn spread(n: usize, base: f64, i_scale: f64) -> Vec<f64> {
    (0..n)
        .map(|i| base * (1.0 + i_scale * ((i * 37 % 101) as f64 / 100.0 - 0.5)))
        .collect()
}

fn pct(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = p / 100.0 * (s.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (rank - lo as f64)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// One vLLM result file for `rate`, TTFT and TPOT scaled by `slow`, as `bench serve` writes
/// it; with `detailed`, the per-request lists of `--save-detailed`.
fn vllm_result(rate: f64, slow: f64, detailed: bool, n: usize) -> Value {
    let out_len = 64usize;
    let ttfts = spread(n, 0.050 * slow * (1.0 + rate / 20.0), 0.4);
    let tpots = spread(n, 0.010 * slow, 0.2);
    let lat: Vec<f64> = ttfts
        .iter()
        .zip(&tpots)
        .map(|(t, p)| t + p * (out_len - 1) as f64)
        .collect();
    let itls: Vec<Vec<f64>> = tpots.iter().map(|p| vec![*p; out_len - 1]).collect();
    let starts: Vec<f64> = (0..n).map(|i| 1000.0 + i as f64 / rate).collect();
    let duration = starts[n - 1] - starts[0] + lat[n - 1];
    let ms = |v: &[f64]| v.iter().map(|x| x * 1000.0).collect::<Vec<f64>>();
    let all_itl: Vec<f64> = itls.iter().flatten().copied().collect();
    let mut o = json!({
        "date": "20250601-101500",
        "endpoint_type": "openai",
        "backend": "openai",
        "label": null,
        "model_id": "/models/DeepSeek-R1-Distill-Llama-70B",
        "tokenizer_id": "/models/DeepSeek-R1-Distill-Llama-70B",
        "num_prompts": n,
        "request_rate": rate,
        "burstiness": 1.0,
        "max_concurrency": null,
        "duration": duration,
        "completed": n,
        "failed": 0,
        "total_input_tokens": 512 * n,
        "total_output_tokens": out_len * n,
        "request_throughput": n as f64 / duration,
        "request_goodput": null,
        "output_throughput": (out_len * n) as f64 / duration,
        "total_token_throughput": ((512 + out_len) * n) as f64 / duration,
        "latencies": lat,
        "queue_times": vec![0.0; n],
        "max_output_tokens_per_s": 1234.0,
        "max_concurrent_requests": 9,
        "rtfx": 0.0,
    });
    let m = o.as_object_mut().unwrap();
    for (key, v) in [
        ("ttft", ms(&ttfts)),
        ("tpot", ms(&tpots)),
        ("itl", ms(&all_itl)),
    ] {
        m.insert(format!("mean_{key}_ms"), json!(mean(&v)));
        m.insert(format!("median_{key}_ms"), json!(pct(&v, 50.0)));
        m.insert(format!("std_{key}_ms"), json!(0.0));
        m.insert(format!("p99_{key}_ms"), json!(pct(&v, 99.0)));
    }
    if detailed {
        m.insert("input_lens".into(), json!(vec![512; n]));
        m.insert("output_lens".into(), json!(vec![out_len; n]));
        m.insert("ttfts".into(), json!(ttfts));
        m.insert("itls".into(), json!(itls));
        m.insert("start_times".into(), json!(starts));
        m.insert("generated_texts".into(), json!(vec!["x"; n]));
        m.insert("errors".into(), json!(vec![""; n]));
    }
    o
}

/// A folder like the seed's `benchmark_results/concurrency_test/`: one file per rate. The
/// first file's burstiness is written as Python writes an infinite float: `Infinity`.
fn vllm_folder(root: &Path, name: &str, slow: f64, detailed: bool) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (i, rate) in [5.0, 10.0, 20.0].into_iter().enumerate() {
        let mut s = serde_json::to_string_pretty(&vllm_result(rate, slow, detailed, 300)).unwrap();
        if i == 0 {
            s = s.replace("\"burstiness\": 1.0", "\"burstiness\": Infinity");
            assert!(s.contains("Infinity"));
        }
        std::fs::write(dir.join(format!("result_rate_{rate}.json")), s).unwrap();
    }
    std::fs::write(dir.join("concurrency_test.log"), "not json").unwrap();
    dir
}

#[test]
fn summary_only_vllm_folders_compare_on_values_and_say_noise_is_not_judged() {
    let t = tempfile::tempdir().unwrap();
    let base = vllm_folder(t.path(), "base", 1.0, false);
    vllm_folder(t.path(), "same", 1.0, false);
    let slow = vllm_folder(t.path(), "slow", 1.5, false);
    let thr = ["--threshold", "median_ttft_ms=+10%"];
    let o = ladder(
        &[&["compare", "base", "same"][..], &thr[..]].concat(),
        t.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let all = text(&o);
    assert!(all.contains("noise not judged"), "{all}");
    assert!(all.contains("vLLM result files"), "{all}");
    let o = ladder(
        &[
            &["compare", base.to_str().unwrap(), slow.to_str().unwrap()][..],
            &thr[..],
        ]
        .concat(),
        t.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).to_lowercase().contains("regression"),
        "{}",
        text(&o)
    );
}

#[test]
fn detailed_vllm_folders_get_full_verdicts() {
    let t = tempfile::tempdir().unwrap();
    vllm_folder(t.path(), "base", 1.0, true);
    vllm_folder(t.path(), "same", 1.0, true);
    vllm_folder(t.path(), "slow", 1.3, true);
    // One run per side judged on the requests' noise (the default 5 % assumed drift is
    // tested in tests/compare.rs): the per-request data give the intervals.
    let thr = ["--threshold", "median_tpot_ms=+10%", "--drift", "0"];
    let o = ladder(
        &[&["compare", "base", "same"][..], &thr[..]].concat(),
        t.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("noise not judged"), "{}", text(&o));
    // Intervals from the per-request data, not point values.
    assert!(text(&o).contains("x[0.9"), "{}", text(&o));
    let o = ladder(
        &[&["compare", "base", "slow"][..], &thr[..]].concat(),
        t.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("median_tpot_ms"), "{}", text(&o));
}

#[test]
fn a_vllm_folder_is_a_gate_baseline_and_reports() {
    let t = tempfile::tempdir().unwrap();
    let tok = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json");
    // The team's existing vLLM results become golden/<scenario>/ as they are.
    let golden = t.path().join("golden");
    std::fs::create_dir_all(&golden).unwrap();
    vllm_folder(&golden, "from-vllm", 1.0, true);
    // A fresh ladder run with a different prompt length: the gate refuses the comparison
    // (the lengths per request are all an imported baseline records).
    let scenario = t.path().join("s.yaml");
    std::fs::write(
        &scenario,
        format!(
            "version: 1\nname: from-vllm\nendpoint: {{ base_url: sim }}\nmodel: m\n\
             tokenizer: {}\nworkload: {{ input_tokens: 32, output_tokens: 64, requests_per_rung: 20 }}\n\
             load: {{ rates: [5, 10], cooldown: 0s }}\nsim: {{ speed: 20 }}\n\
             gate:\n  - {{ metric: median_ttft_ms, max_increase: 10% }}\n",
            tok.display()
        ),
    )
    .unwrap();
    let o = ladder(
        &[
            "gate",
            scenario.to_str().unwrap(),
            "--golden",
            "golden",
            "--out",
            "results",
        ],
        t.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("different prompt length"), "{}", text(&o));

    // `ladder report` renders the imported folder like any result folder.
    let out = t.path().join("rep");
    let o = ladder(
        &[
            "report",
            golden.join("from-vllm").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        t.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| 20 |"), "{md}");
}

#[test]
fn broken_vllm_files_are_refused_naming_the_file() {
    let t = tempfile::tempdir().unwrap();
    let dir = vllm_folder(t.path(), "dup", 1.0, true);
    // Two files for one rate.
    std::fs::copy(dir.join("result_rate_5.json"), dir.join("again.json")).unwrap();
    let o = ladder(&["compare", "dup", "dup"], t.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("again.json"), "{}", text(&o));
    std::fs::remove_file(dir.join("again.json")).unwrap();
    // Lists that disagree with the summary.
    let p = dir.join("result_rate_10.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["completed"] = json!(250);
    std::fs::write(&p, v.to_string()).unwrap();
    let o = ladder(&["compare", "dup", "dup"], t.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("result_rate_10.json"), "{}", text(&o));
    // request_rate "inf" without a concurrency cap is neither kind of rung.
    v["completed"] = json!(300);
    v["request_rate"] = json!("inf");
    std::fs::write(&p, v.to_string()).unwrap();
    let o = ladder(&["compare", "dup", "dup"], t.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("without a max_concurrency"),
        "{}",
        text(&o)
    );
    // With one it is a concurrency rung, which a rate ladder's folder cannot hold.
    v["max_concurrency"] = json!(8);
    std::fs::write(&p, v.to_string()).unwrap();
    let o = ladder(&["compare", "dup", "dup"], t.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("a concurrency file beside rate ones"),
        "{}",
        text(&o)
    );
}

/// vLLM's concurrency sweep (`--request-rate inf --max-concurrency N`, one file per N) is a
/// concurrency ladder: rungs at N users, compared with ladder's own concurrency runs' rules.
#[test]
fn a_vllm_concurrency_sweep_imports_as_a_concurrency_ladder() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("sweep");
    std::fs::create_dir_all(&dir).unwrap();
    for users in [4u32, 16] {
        let mut v = vllm_result(20.0, 1.0, true, 300);
        v["request_rate"] = json!("inf");
        v["max_concurrency"] = json!(users);
        std::fs::write(
            dir.join(format!("concurrency_{users}.json")),
            serde_json::to_string_pretty(&v).unwrap(),
        )
        .unwrap();
    }
    let o = ladder(&["report", "sweep"], t.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = ladder(&["compare", "--drift", "0", "sweep", "sweep"], t.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("16 users"), "{out}");
    assert!(!out.contains("req/s ("), "{out}");
    let (info, rungs) = ladder::results::vllm::open(&dir).unwrap().unwrap();
    assert_eq!(info.load, ladder::scenario::LoadKind::Concurrency);
    assert_eq!(info.scenario["load"]["concurrency"], json!([4.0, 16.0]));
    assert_eq!(
        rungs.iter().map(|r| r.summary.rate).collect::<Vec<_>>(),
        vec![4.0, 16.0]
    );
}

/// The fixture folder of vLLM 0.8 `benchmark_serving.py --save-detailed` files (the seed
/// guide's script): per-request `ttfts` and `itls` but no `latencies`, `start_times` or
/// `failed` (tests/fixtures/vllm-benchmark-serving-0.8/make_fixture.py writes them).
fn old_fixture(root: &Path, name: &str) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vllm-benchmark-serving-0.8");
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for rate in [5, 10] {
        let f = format!("result_rate_{rate}.json");
        std::fs::copy(src.join(&f), dir.join(&f)).unwrap();
    }
    dir
}

#[test]
fn old_benchmark_serving_detailed_files_get_per_request_verdicts() {
    let t = tempfile::tempdir().unwrap();
    let base = old_fixture(t.path(), "base");
    // The fixture is the real key set, Python's `Infinity` and the goodput key's stray colon
    // included, and has none of the newer lists.
    let raw = std::fs::read_to_string(base.join("result_rate_5.json")).unwrap();
    assert!(raw.contains("\"burstiness\": Infinity"), "{raw}");
    assert!(raw.contains("\"request_goodput:\": null"));
    for absent in ["\"latencies\"", "\"start_times\"", "\"failed\""] {
        assert!(!raw.contains(absent), "{absent} in the fixture");
    }
    old_fixture(t.path(), "same");
    // A slower server: every gap 30 % longer (TTFT unchanged).
    let slow = old_fixture(t.path(), "slow");
    for rate in [5, 10] {
        let p = slow.join(format!("result_rate_{rate}.json"));
        let text = std::fs::read_to_string(&p)
            .unwrap()
            .replace("Infinity", "\"Infinity\"");
        let mut v: Value = serde_json::from_str(&text).unwrap();
        for gaps in v["itls"].as_array_mut().unwrap() {
            for g in gaps.as_array_mut().unwrap() {
                *g = json!(g.as_f64().unwrap() * 1.3);
            }
        }
        for k in [
            "mean_tpot_ms",
            "median_tpot_ms",
            "p99_tpot_ms",
            "mean_itl_ms",
            "median_itl_ms",
            "p99_itl_ms",
        ] {
            v[k] = json!(v[k].as_f64().unwrap() * 1.3);
        }
        std::fs::write(&p, v.to_string()).unwrap();
    }
    let checks = [
        "--threshold",
        "median_tpot_ms=+10%",
        "--threshold",
        "median_e2el_ms=+10%",
        "--threshold",
        "request_throughput=-10%",
        "--drift",
        "0",
    ];
    let o = ladder(
        &[&["compare", "base", "same"][..], &checks[..]].concat(),
        t.path(),
    );
    let all = text(&o);
    assert_eq!(o.status.code(), Some(0), "{all}");
    // Latencies are resampled from the requests (intervals, no summary-only note); the
    // e2e latency is derived from ttfts + itls; throughput, without send times, is the
    // files' summary value.
    assert!(!all.contains("saved without --save-detailed"), "{all}");
    assert!(all.contains("x[0.9"), "{all}");
    assert!(all.contains("median_e2el_ms"), "{all}");
    assert!(all.contains("without start_times"), "{all}");
    let o = ladder(
        &[&["compare", "base", "slow"][..], &checks[..]].concat(),
        t.path(),
    );
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(all.to_lowercase().contains("regression"), "{all}");
    assert!(all.contains("median_tpot_ms"), "{all}");

    // The failed request (an error text, no tokens) is counted as failed, not dropped.
    let out = t.path().join("rep");
    let o = ladder(
        &[
            "report",
            base.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        t.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    // run, rate, num_prompts, completed, failed
    assert!(csv.contains("base,5,30,29,1,"), "{csv}");
}

/// A scenario against the simulator at `speed`, gated on TPOT and E2E latency.
fn gate_scenario(dir: &Path, speed: f64) -> PathBuf {
    let tok = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json");
    let p = dir.join(format!("s-{speed}.yaml"));
    std::fs::write(
        &p,
        format!(
            "version: 1\nname: from-vllm\nendpoint: {{ base_url: sim }}\nmodel: m\n\
             tokenizer: {}\nworkload: {{ input_tokens: 32, output_tokens: 24, requests_per_rung: 40 }}\n\
             load: {{ rates: [8, 16], cooldown: 0s }}\nsim: {{ speed: {speed} }}\n\
             gate:\n  - {{ metric: median_tpot_ms, max_increase: 100% }}\n  - {{ metric: median_e2el_ms, max_increase: 100% }}\n",
            tok.display()
        ),
    )
    .unwrap();
    p
}

/// A ladder result folder rewritten as `vllm bench serve --save-result --save-detailed`
/// files (the current upstream key set: `latencies`, `start_times`, `queue_times`), so a
/// vLLM baseline can be measured against the same simulator.
fn as_vllm_folder(run: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    for rung in info["rungs"].as_array().unwrap() {
        let file = |k: &str| run.join(rung[k].as_str().unwrap());
        let s: Value =
            serde_json::from_str(&std::fs::read_to_string(file("result_file")).unwrap()).unwrap();
        let lines: Vec<Value> = std::fs::read_to_string(file("requests_file"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|l: &Value| l["warmup"] == json!(false))
            .collect();
        let secs = |v: &Value| v.as_f64().unwrap_or(0.0) / 1000.0;
        let per = |f: &dyn Fn(&Value) -> Value| lines.iter().map(f).collect::<Vec<Value>>();
        let mut o = serde_json::Map::new();
        for k in [
            "date",
            "endpoint_type",
            "backend",
            "label",
            "model_id",
            "tokenizer_id",
            "num_prompts",
            "request_rate",
            "burstiness",
            "max_concurrency",
            "duration",
            "completed",
            "failed",
            "total_input_tokens",
            "total_output_tokens",
            "request_throughput",
            "request_goodput",
            "output_throughput",
            "total_token_throughput",
        ] {
            o.insert(k.into(), s[k].clone());
        }
        o.insert(
            "input_lens".into(),
            json!(per(&|l| l["input_tokens"].clone())),
        );
        o.insert(
            "output_lens".into(),
            json!(per(&|l| l["output_tokens"].clone())),
        );
        o.insert("ttfts".into(), json!(per(&|l| json!(secs(&l["ttft_ms"])))));
        o.insert(
            "itls".into(),
            json!(per(&|l| json!(l["itl_ms"]
                .as_array()
                .unwrap()
                .iter()
                .map(secs)
                .collect::<Vec<f64>>()))),
        );
        o.insert(
            "latencies".into(),
            json!(per(&|l| json!(secs(&l["e2e_ms"])))),
        );
        o.insert(
            "start_times".into(),
            json!(per(&|l| json!(100.0 + secs(&l["sent_ms"])))),
        );
        o.insert("queue_times".into(), json!(per(&|_| json!(0.0))));
        o.insert("generated_texts".into(), json!(per(&|_| json!(""))));
        o.insert(
            "errors".into(),
            json!(per(&|l| json!(l["error_detail"].as_str().unwrap_or("")))),
        );
        for k in ["max_output_tokens_per_s", "max_concurrent_requests"] {
            o.insert(k.into(), s[k].clone());
        }
        o.insert("rtfx".into(), json!(0.0));
        for m in ["ttft", "tpot", "itl", "e2el"] {
            for stat in ["mean", "median", "std", "p99"] {
                let k = format!("{stat}_{m}_ms");
                o.insert(k.clone(), s[&k].clone());
            }
        }
        std::fs::write(
            dest.join(format!("result_rate_{}.json", s["request_rate"])),
            Value::Object(o).to_string(),
        )
        .unwrap();
    }
}

/// `ladder gate` against a vLLM result folder as the baseline: the same simulator passes,
/// a simulator at a quarter of the speed is a regression.
#[test]
fn gate_against_a_vllm_baseline_passes_the_same_server_and_catches_a_slower_one() {
    let t = tempfile::tempdir().unwrap();
    let fast = gate_scenario(t.path(), 2.0);
    let o = ladder(
        &["run", fast.to_str().unwrap(), "--out", "measured"],
        t.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = std::fs::read_dir(t.path().join("measured/from-vllm"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let golden = t.path().join("golden/from-vllm");
    as_vllm_folder(&run, &golden);
    assert!(std::fs::read_to_string(golden.join("result_rate_8.0.json"))
        .unwrap()
        .contains("\"start_times\""));
    let gate = |scenario: &Path, out: &str| {
        ladder(
            &[
                "gate",
                scenario.to_str().unwrap(),
                "--golden",
                "golden",
                "--out",
                out,
                "--summary",
                &format!("{out}.md"),
            ],
            t.path(),
        )
    };
    let o = gate(&fast, "same");
    let all = text(&o);
    assert_eq!(o.status.code(), Some(0), "{all}");
    assert!(all.contains("PASS"), "{all}");
    assert!(!all.contains("noise not judged"), "{all}");
    let md = std::fs::read_to_string(t.path().join("same.md")).unwrap();
    assert!(md.contains("from-vllm"), "{md}");
    // Both sides' "what was run", the import's unrecorded settings said once and left out
    // of the configuration diff (not ~40 lines of empty values against real ones).
    assert!(
        md.contains("| **endpoint (differs)** | not recorded | sim |"),
        "{md}"
    );
    assert!(
        md.contains("| **rung size (differs)** | 40 prompts (vLLM --num-prompts) | 40 requests |"),
        "{md}"
    );
    assert_eq!(
        md.matches("left out of the configuration diff").count(),
        1,
        "{md}"
    );
    let diff = &md[md.find("```diff").unwrap()..];
    let diff = &diff[..diff[3..].find("```").unwrap()];
    for empty in [
        "\"hostname\"",
        "\"base_url\"",
        "\"tokenizer_sha256\"",
        "\"slo\"",
    ] {
        assert!(!diff.contains(empty), "{empty} in the diff:\n{diff}");
    }
    assert!(diff.lines().count() < 25, "{diff}");

    let slow = gate_scenario(t.path(), 0.5);
    let o = gate(&slow, "slower");
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(
        all.contains("REGRESSION") || all.contains("regression"),
        "{all}"
    );
    assert!(all.contains("median_tpot_ms"), "{all}");
}

/// A file over the 512 MiB limit is refused before it is read, the file named (a sparse
/// file: it takes no disk space).
#[test]
fn a_vllm_file_over_the_size_limit_is_refused_unread() {
    let t = tempfile::tempdir().unwrap();
    let dir = old_fixture(t.path(), "big");
    let f = std::fs::File::create(dir.join("result_rate_20.json")).unwrap();
    f.set_len((512 << 20) + 1).unwrap();
    drop(f);
    let o = ladder(&["compare", "big", "big"], t.path());
    let all = text(&o);
    assert_eq!(o.status.code(), Some(2), "{all}");
    assert!(all.contains("result_rate_20.json"), "{all}");
    assert!(all.contains("512 MiB"), "{all}");
}

/// Summary values no benchmark writes (NaN, negative, a string) and per-request lists of
/// strings are damage: refused naming the file and the key, never read as a value (NaN
/// throughput: an inconclusive PASS; `ttfts` as strings: dropped, an "improvement").
/// A damaged-file case: its name, the edit, the key the refusal must name.
type Damage = (&'static str, Box<dyn Fn(&mut Value)>, &'static str);

#[test]
fn damaged_vllm_values_are_refused_naming_file_and_key() {
    let t = tempfile::tempdir().unwrap();
    let good = vllm_folder(t.path(), "good", 1.0, true);
    let p = |d: &Path| d.join("result_rate_10.json");
    let original = std::fs::read_to_string(p(&good)).unwrap();
    let cases: Vec<Damage> = vec![
        (
            "nan",
            Box::new(|v| v["request_throughput"] = json!("NaN")),
            "`request_throughput` is NaN",
        ),
        (
            "negttft",
            Box::new(|v| v["median_ttft_ms"] = json!(-5.0)),
            "`median_ttft_ms` is -5, not a value a benchmark measures",
        ),
        (
            "negdur",
            Box::new(|v| v["duration"] = json!(-30.0)),
            "`duration` is -30",
        ),
        (
            "strttft",
            Box::new(|v| {
                let s: Vec<Value> = v["ttfts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| json!(x.to_string()))
                    .collect();
                v["ttfts"] = json!(s);
            }),
            "request 0: `ttfts` is \"0.",
        ),
        (
            "strlen",
            Box::new(|v| v["output_lens"][3] = json!("64")),
            "request 3: `output_lens` is \"64\", not a token count",
        ),
    ];
    for (name, edit, want) in cases {
        let dir = vllm_folder(t.path(), name, 1.0, true);
        let mut v: Value = serde_json::from_str(&original).unwrap();
        edit(&mut v);
        // Python's json writes NaN as a bare token.
        let body = v.to_string().replace("\"NaN\"", "NaN");
        std::fs::write(p(&dir), body).unwrap();
        let o = ladder(&["compare", "good", name], t.path());
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        assert!(
            text(&o).contains("result_rate_10.json") && text(&o).contains(want),
            "{name}: want {want:?} in {}",
            text(&o)
        );
        assert!(text(&o).contains("damaged"), "{name}: {}", text(&o));
    }
    // null is vLLM's "not computed" (goodput without --goodput): still accepted (judged on
    // the requests alone, `--drift 0`, the folder against itself passes).
    let o = ladder(&["compare", "good", "good", "--drift", "0"], t.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("damaged"), "{}", text(&o));
}

/// A vLLM folder records no goodput (without `--goodput`), no dispatch lag and no endpoint:
/// its reports say "not recorded" (an empty CSV cell), leave out the columns and the chart
/// no rung has, say so once, and never print `NaN`. Its "what was run" block names the
/// model and the request count vLLM recorded; advice names `--num-prompts` beside
/// `workload.requests_per_rung`.
#[test]
fn a_vllm_folder_reports_not_recorded_never_nan_and_advice_names_num_prompts() {
    let t = tempfile::tempdir().unwrap();
    vllm_folder(t.path(), "v", 1.0, true);
    vllm_folder(t.path(), "w", 1.0, true);
    let o = ladder(&["report", "v", "--out", "rep"], t.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let read = |f: &str| std::fs::read_to_string(t.path().join("rep").join(f)).unwrap();
    let (md, html, csv) = (read("summary.md"), read("report.html"), read("summary.csv"));
    for (name, s) in [
        ("summary.md", &md),
        ("report.html", &html),
        ("summary.csv", &csv),
    ] {
        assert!(!s.contains("NaN"), "{name} prints NaN:\n{s}");
    }
    assert!(md.contains("| endpoint | not recorded |"), "{md}");
    assert!(md.contains("endpoint not recorded ·"), "{md}");
    assert!(
        md.contains("| model | /models/DeepSeek-R1-Distill-Llama-70B |"),
        "{md}"
    );
    assert!(
        md.contains("| rung size | 300 prompts (vLLM --num-prompts) |"),
        "{md}"
    );
    // The fixture, like `vllm bench serve` by default, writes no E2E percentiles either.
    assert!(
        md.contains(
            "- **Not recorded:** left out of the table and the charts, as its vLLM result files hold none: \
             goodput, E2E p50 (ms), E2E p99 (ms), lag p99 (ms)"
        ),
        "{md}"
    );
    assert_eq!(md.matches("left out of the table").count(), 1, "{md}");
    let header = md
        .lines()
        .find(|l| l.starts_with("| rate (req/s)"))
        .unwrap();
    assert!(
        !header.contains("goodput") && !header.contains("lag"),
        "{header}"
    );
    assert!(
        html.contains(
            "Not recorded: left out of the table and the charts, as its vLLM result files hold none"
        ),
        "{html}"
    );
    assert!(!html.contains("chart-dispatch-lag"), "{html}");
    // No E2E percentile in the files: no E2E chart (not one saying "no successful request"),
    // and no legend entry for the p90 the files do not hold.
    assert!(!html.contains("chart-e2e"), "{html}");
    assert!(!html.contains("nothing to plot"), "{html}");
    assert!(!html.contains("TTFT p90"), "{html}");
    assert!(html.contains("TTFT p99"), "{html}");
    assert!(!html.contains("goodput (within SLO)"), "{html}");
    // CSV keeps its columns (a stable shape for scripts), the unrecorded cells empty.
    let mut lines = csv.lines();
    let cols: Vec<&str> = lines.next().unwrap().split(',').collect();
    let goodput = cols.iter().position(|c| *c == "request_goodput").unwrap();
    let lag = cols
        .iter()
        .position(|c| *c == "p99_dispatch_lag_ms")
        .unwrap();
    for row in lines {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!((cells[goodput], cells[lag]), ("", ""), "{row}");
    }

    // Too few requests for a p99 bound: the advice names both knobs.
    let o = ladder(
        &["compare", "v", "w", "--threshold", "p99_ttft_ms=+20%"],
        t.path(),
    );
    let all = text(&o);
    assert!(
        all.contains("raise workload.requests_per_rung (a vLLM benchmark: --num-prompts) to ≥"),
        "{all}"
    );
}
