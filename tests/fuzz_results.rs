//! Structural fuzzing of what ladder reads back: result folders (run.json, result_rate_*.json,
//! requests_rate_*.jsonl) and folders of vLLM result files, mutated at random (JSON-aware:
//! values replaced by extremes, keys dropped, lists cut or grown; byte-level: truncated,
//! bytes flipped, lines doubled or dropped), then read by `compare`, `report` and `history`
//! in-process. None may panic; a refusal names the folder or file. A sample of the cases also
//! runs through the binary: exit 0, 1 or 2, never a crash, and a refusal starts with
//! `error:`. Seeded (stable); `LADDER_FUZZ_ITERS` sets the number of cases (RELIABILITY.md
//! records the long runs).
mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

/// A small complete ladder result folder (two rungs of 5 requests against the simulator).
fn ladder_folder(root: &Path) -> PathBuf {
    let mut sc = Sc::new("sim");
    sc.n = 5;
    let p = sc.write(root);
    let out = root.join("runs");
    let r = run_ladder(&p, &out, Duration::from_secs(120));
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    run_dir(&out).expect("a result folder")
}

/// A folder of vLLM files: the 0.8 `--save-detailed` fixture plus one current-format file.
fn vllm_folder(root: &Path) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vllm-benchmark-serving-0.8");
    let dir = root.join("vllm");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["result_rate_5.json", "result_rate_10.json"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let n = 4;
    let current = json!({
        "date": "20250601-101500", "endpoint_type": "openai", "backend": "openai",
        "label": null, "model_id": "m", "tokenizer_id": "m", "num_prompts": n,
        "request_rate": 20.0, "burstiness": 1.0, "max_concurrency": null,
        "duration": 1.0, "completed": n, "failed": 0, "total_input_tokens": 512 * n,
        "total_output_tokens": 32 * n, "request_throughput": 4.0, "request_goodput": null,
        "output_throughput": 128.0, "total_token_throughput": 2176.0,
        "input_lens": vec![512; n], "output_lens": vec![32; n],
        "ttfts": vec![0.05; n], "itls": vec![vec![0.01; 31]; n],
        "latencies": vec![0.36; n], "start_times": [10.0, 10.05, 10.1, 10.15],
        "queue_times": vec![0.0; n], "generated_texts": vec![""; n], "errors": vec![""; n],
        "max_output_tokens_per_s": 100.0, "max_concurrent_requests": 4, "rtfx": 0.0,
        "mean_ttft_ms": 50.0, "median_ttft_ms": 50.0, "std_ttft_ms": 0.0, "p99_ttft_ms": 50.0,
        "mean_tpot_ms": 10.0, "median_tpot_ms": 10.0, "std_tpot_ms": 0.0, "p99_tpot_ms": 10.0,
    });
    std::fs::write(dir.join("result_rate_20.json"), current.to_string()).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Values that break assumptions: wrong types, extremes, strings where numbers go.
fn hostile(rng: &mut ChaCha8Rng) -> Value {
    let pick = [
        json!(null),
        json!(-1),
        json!(0),
        json!(1e308),
        json!(-1e308),
        json!(u64::MAX),
        json!(i64::MIN),
        json!("inf"),
        json!("NaN"),
        json!("-Infinity"),
        json!(""),
        json!("../../etc/passwd"),
        json!("/tmp/x"),
        json!([]),
        json!({}),
        json!([1, 2, 3]),
        json!(true),
        json!(0.5),
        json!("x".repeat(10_000)),
        json!({"a": [null, {"b": []}]}),
    ];
    pick[rng.gen_range(0..pick.len())].clone()
}

/// Visit a random node of `v` and mutate it (or its parent's entry for it).
fn mutate_value(v: &mut Value, rng: &mut ChaCha8Rng, depth: u32) {
    let descend = depth < 4 && rng.gen_bool(0.6);
    match v {
        Value::Object(m) if !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = keys[rng.gen_range(0..keys.len())].clone();
            if descend && (m[&k].is_object() || m[&k].is_array()) {
                mutate_value(m.get_mut(&k).unwrap(), rng, depth + 1);
            } else if rng.gen_bool(0.3) {
                m.remove(&k);
            } else {
                m.insert(k, hostile(rng));
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let i = rng.gen_range(0..a.len());
            if descend && (a[i].is_object() || a[i].is_array()) {
                mutate_value(&mut a[i], rng, depth + 1);
            } else {
                match rng.gen_range(0..4) {
                    0 => {
                        a.remove(i);
                    }
                    1 => {
                        let x = a[i].clone();
                        a.push(x);
                    }
                    2 => a.truncate(i),
                    _ => a[i] = hostile(rng),
                }
            }
        }
        _ => *v = hostile(rng),
    }
}

/// Mutate one file of `dir` in place; returns a description.
fn mutate_file(dir: &Path, rng: &mut ChaCha8Rng) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.ends_with(".json") || n.ends_with(".jsonl")
        })
        .collect();
    files.sort();
    let p = files[rng.gen_range(0..files.len())].clone();
    let name = p.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&p).unwrap();
    let jsonl = name.ends_with(".jsonl");
    let what = rng.gen_range(0..10);
    let new = match what {
        // Byte-level.
        0 => text[..rng.gen_range(0..=text.len())]
            .trim_end_matches(|c: char| !c.is_ascii())
            .to_string(),
        1 => {
            let mut b = text.into_bytes();
            if !b.is_empty() {
                let i = rng.gen_range(0..b.len());
                b[i] = rng.gen();
            }
            String::from_utf8_lossy(&b).into_owned()
        }
        2 => String::new(),
        3 if jsonl => {
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let i = rng.gen_range(0..lines.len());
                if rng.gen_bool(0.5) {
                    lines.insert(i, lines[i]);
                } else {
                    lines.remove(i);
                }
            }
            lines.join("\n") + "\n"
        }
        // JSON-aware (each line of a JSONL file is a document).
        _ if jsonl => {
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            if !lines.is_empty() {
                let i = rng.gen_range(0..lines.len());
                if let Ok(mut v) = serde_json::from_str::<Value>(&lines[i]) {
                    mutate_value(&mut v, rng, 0);
                    lines[i] = v.to_string();
                }
            }
            lines.join("\n") + "\n"
        }
        _ => {
            let std = text
                .replace("Infinity", "\"Infinity\"")
                .replace("-\"Infinity\"", "\"-Infinity\"");
            match serde_json::from_str::<Value>(&std) {
                Ok(mut v) => {
                    for _ in 0..rng.gen_range(1..=3) {
                        mutate_value(&mut v, rng, 0);
                    }
                    v.to_string()
                }
                Err(_) => text,
            }
        }
    };
    std::fs::write(&p, new).unwrap();
    format!("{name} (mutation {what})")
}

#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    accepted: usize,
    refused: usize,
}

/// compare, then report or history, on `bad` (a mutation of `good`), in-process (case `i`
/// picks which). Panics are caught and returned; a refusal must name the mutated folder.
fn read_all(i: usize, good: &Path, bad: &Path, out: &Path, t: &mut Tally) -> Result<(), String> {
    let name = bad.file_name().unwrap().to_string_lossy().into_owned();
    let (good, bad, out) = (good.to_path_buf(), bad.to_path_buf(), out.to_path_buf());
    let r = std::panic::catch_unwind(move || {
        let opts = ladder::compare::CompareOptions {
            overrides: vec![],
            allow_config_change: true,
            candidate_rules_first: false,
            only: false,
            ..Default::default()
        };
        let mut results: Vec<Result<(), String>> = vec![];
        // Each case runs one compare (the mutated side as baseline or as candidate) and one
        // of report / history, in turn: the bootstrap and the charts are what take time.
        let (b, c) = if i % 2 == 0 {
            (&good, &bad)
        } else {
            (&bad, &good)
        };
        results.push(
            ladder::compare::compare_dirs(b, c, &opts)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        );
        if i % 4 < 2 {
            results.push(
                ladder::report::write_run(&bad, &out)
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
            );
        } else {
            results.push(
                ladder::history::analyze(&ladder::history::HistoryOptions {
                    dirs: vec![good.clone(), bad.clone()],
                    metrics: vec![],
                    rates: vec![],
                    detect: ladder::history::Config {
                        permutations: 99,
                        ..Default::default()
                    },
                    summary: None,
                    html: None,
                    json: false,
                })
                .map(|_| ())
                .map_err(|e| e.to_string()),
            );
        }
        results
    });
    let results = r.map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })?;
    for r in results {
        t.cases += 1;
        match r {
            Ok(()) => t.accepted += 1,
            Err(e) => {
                t.refused += 1;
                if !e.contains(&name) {
                    return Err(format!("a refusal that names no file: {e}"));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn mutated_result_folders_and_vllm_files_never_panic_the_readers() {
    let iters: usize = std::env::var("LADDER_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(80);
    let tmp = tempfile::tempdir().unwrap();
    let seeds = [ladder_folder(tmp.path()), vllm_folder(tmp.path())];
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_f022);
    let mut t = Tally::default();
    let mut cli_cases = vec![];
    for i in 0..iters {
        let good = &seeds[i % seeds.len()];
        let bad = tmp.path().join(format!("case-{i}"));
        copy_dir(good, &bad);
        let mut what = vec![];
        for _ in 0..rng.gen_range(1..=2) {
            what.push(mutate_file(&bad, &mut rng));
        }
        let out = tmp.path().join(format!("report-{i}"));
        if let Err(e) = read_all(i, good, &bad, &out, &mut t) {
            panic!("case {i} ({what:?}, from {}): {e}", good.display());
        }
        if i % 16 == 0 {
            cli_cases.push((good.clone(), bad));
        }
    }
    // Both outcomes are reached: the mutations are neither all harmless nor all fatal.
    assert!(t.refused > t.cases / 10, "{t:?}");
    assert!(t.accepted > t.cases / 20, "{t:?}");
    eprintln!("fuzz_results: {iters} folders, {t:?}");

    // Through the binary: no crash, exit 0/1/2, and a refusal starts with `error:`.
    for (good, bad) in cli_cases {
        for args in [
            vec!["compare", good.to_str().unwrap(), bad.to_str().unwrap()],
            vec!["history", good.to_str().unwrap(), bad.to_str().unwrap()],
        ] {
            let r = spawn(ladder_cmd(&args)).finish(Duration::from_secs(60));
            no_panic(&r);
            let code = r.status.code();
            assert!(matches!(code, Some(0..=2)), "{args:?}: {}", r.all());
            // Exit 2 is a refusal (`error:`) or a comparison that judged nothing.
            if code == Some(2) {
                assert!(
                    r.stderr.lines().any(|l| l.starts_with("error: "))
                        || r.all().contains("NO VERDICT: nothing could be judged"),
                    "{args:?}: {}",
                    r.all()
                );
            }
        }
    }
}
