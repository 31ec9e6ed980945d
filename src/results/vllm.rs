//! A folder of vLLM `bench serve` / `benchmark_serving.py` result files read as a result
//! folder, so a team's existing results (the seed guide's
//! `benchmark_results/concurrency_test/result_rate_<rate>.json`) are a baseline on day one.
//!
//! A vLLM result file is one JSON object per rate: the run's settings (`date`, `backend`,
//! `model_id`, `request_rate`, `burstiness`, `num_prompts`, ...), the summary keys ladder
//! also writes (`request_throughput`, `median_ttft_ms`, ...) and, when saved with
//! `--save-detailed`, per-request lists (`ttfts`, `itls`, `latencies` in seconds,
//! `start_times`, `input_lens`, `output_lens`, `errors`). Older `benchmark_serving.py`
//! (as in vLLM 0.8; the seed guide's script) saved only `input_lens`, `output_lens`,
//! `ttfts`, `itls`, `generated_texts` and `errors`, with no `failed` count: there a
//! request's end-to-end latency is derived (TTFT plus the sum of its gaps), its failure is
//! read from its error text, and its start time is unknown (all requests sent at 0, so
//! nothing is judged from send times). Files are detected by their keys,
//! not their names. Python's `json` writes `Infinity` / `NaN` for an infinite burstiness
//! (constant arrivals): those are read as such.

use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

use super::load_error::LoadError;
use super::names::{requests_file_name, result_file_name};
use super::types::{HostInfo, RequestLine, RunInfo, RunStatus, RungEntry, RESULTS_FORMAT_VERSION};
use crate::metrics::{Latency, RungSummary, Stats};
use crate::record::{ErrorClass, TokenSource};
use crate::scenario::LoadKind;
use crate::values::{measured, NotAValue};

/// Largest vLLM result file read (a detailed file of 100k requests is tens of MB).
pub const MAX_VLLM_FILE_BYTES: u64 = 512 << 20;

/// One imported rung: its summary and, for `--save-detailed` files, its requests.
#[derive(Debug, Clone)]
pub struct ImportedRung {
    pub entry: RungEntry,
    pub summary: RungSummary,
    pub lines: Option<Vec<RequestLine>>,
    /// True when `lines` carry the requests' send times (`start_times`).
    pub send_times: bool,
    /// Settings of the file, for the synthesised run.json scenario.
    settings: Map<String, Value>,
}

/// Python's non-standard `Infinity`, `-Infinity` and `NaN` tokens (outside strings) as the
/// strings `"Infinity"`, `"-Infinity"`, `"NaN"`, so the text parses as standard JSON.
fn standard_json(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut in_str, mut esc) = (0, false, false);
    let mut last = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_str = true;
            i += 1;
            continue;
        }
        let token = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| b[i..].starts_with(t.as_bytes()));
        match token {
            Some(t) => {
                out.push_str(&text[last..i]);
                out.push('"');
                out.push_str(t);
                out.push('"');
                i += t.len();
                last = i;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[last..]);
    out
}

/// A number, or one of the strings vLLM and Python use for infinities.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "inf" | "Infinity" => Some(f64::INFINITY),
            "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
            "NaN" | "nan" => Some(f64::NAN),
            _ => None,
        },
        _ => None,
    }
}

/// True for an object with the summary keys of a vLLM result file (and not ladder's own).
pub fn looks_like_vllm(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    ["completed", "duration", "request_throughput"]
        .iter()
        .all(|k| o.contains_key(*k))
        && [
            "date",
            "backend",
            "endpoint_type",
            "model_id",
            "request_rate",
        ]
        .iter()
        .any(|k| o.contains_key(*k))
        && !o.contains_key("errors_by_class")
}

/// A result file's name and its parsed object.
type NamedFile = (String, Map<String, Value>);

/// The `.json` files of `dir` that are vLLM result files, parsed; `None` when there are none.
fn vllm_files(dir: &Path) -> Result<Option<Vec<NamedFile>>, LoadError> {
    let io = |source| LoadError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut names: Vec<String> = Vec::new();
    for e in fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        let name = e.file_name().to_string_lossy().into_owned();
        // Regular files only: a symlink could point anywhere.
        let ft = e.file_type().map_err(io)?;
        if ft.is_file() && name.ends_with(".json") {
            names.push(name);
        }
    }
    names.sort();
    let mut files = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let text =
            crate::fileread::read_text_bounded(&path, MAX_VLLM_FILE_BYTES).map_err(
                |e| match e {
                    crate::fileread::ReadError::TooLarge { .. } => LoadError::Parse {
                        path: path.clone(),
                        message: e.reason(),
                    },
                    e => LoadError::Io {
                        path: path.clone(),
                        source: e.into_io(),
                    },
                },
            )?;
        let Ok(v) = serde_json::from_str::<Value>(&standard_json(&text)) else {
            continue;
        };
        if looks_like_vllm(&v) {
            if let Value::Object(o) = v {
                files.push((name, o));
            }
        }
    }
    Ok((!files.is_empty()).then_some(files))
}

fn bad(dir: &Path, file: &str, message: String) -> LoadError {
    LoadError::Parse {
        path: dir.join(file),
        message,
    }
}

/// Latency statistics of one distribution from the file's `<stat>_<key>_ms` keys; a
/// statistic the file lacks (vLLM writes only the percentiles asked for) is NaN.
fn stats_of(o: &Map<String, Value>, key: &str, count: u64) -> Stats {
    let g = |stat: &str| {
        o.get(&format!("{stat}_{key}_ms"))
            .and_then(number)
            .unwrap_or(f64::NAN)
    };
    Stats {
        count,
        mean: g("mean"),
        median: g("median"),
        std: g("std"),
        p90: g("p90"),
        p95: g("p95"),
        p99: g("p99"),
        p999: g("p99.9"),
        min: g("min"),
        max: g("max"),
    }
}

/// Per-request lines of a `--save-detailed` file; `None` when the lists are absent.
fn detailed_lines(
    o: &Map<String, Value>,
    dir: &Path,
    file: &str,
) -> Result<Option<Vec<RequestLine>>, LoadError> {
    let list = |k: &str| o.get(k).and_then(Value::as_array);
    let Some(ttfts) = list("ttfts") else {
        return Ok(None);
    };
    let n = ttfts.len();
    let empty = Vec::new();
    let itls = list("itls").unwrap_or(&empty);
    // Older `benchmark_serving.py` (as in vLLM 0.8) saved `ttfts` and `itls` per request
    // but no `latencies`: a request's end-to-end latency is then derived as its TTFT plus
    // the sum of its inter-token gaps (the time of its last token, which is what vLLM's
    // own `latency` measured up to the stream's end, less the final [DONE] frame).
    let derived_e2e = list("latencies").is_none();
    if derived_e2e && list("itls").is_none() {
        return Ok(None);
    }
    let lat = list("latencies").unwrap_or(&empty);
    let starts = list("start_times").unwrap_or(&empty);
    let ins = list("input_lens").unwrap_or(&empty);
    let outs = list("output_lens").unwrap_or(&empty);
    let errors = list("errors").unwrap_or(&empty);
    for (k, l) in [
        ("latencies", lat),
        ("itls", itls),
        ("start_times", starts),
        ("input_lens", ins),
        ("output_lens", outs),
        ("errors", errors),
    ] {
        if !l.is_empty() && l.len() != n {
            return Err(bad(
                dir,
                file,
                format!("`{k}` has {} entries but `ttfts` has {n}", l.len()),
            ));
        }
    }
    let t0 = starts
        .iter()
        .filter_map(number)
        .filter(|t| t.is_finite())
        .fold(f64::INFINITY, f64::min);
    let secs = |v: Option<&Value>, what: &str, i: usize| -> Result<f64, LoadError> {
        // A value that is there but no number (`"0.05"`, null) is damage, not a zero: read
        // as 0 it would turn a request into a failure, or a slow one into a fast one.
        let x = match v {
            None => 0.0,
            Some(v) => number(v).ok_or_else(|| {
                bad(
                    dir,
                    file,
                    format!(
                        "request {i}: `{what}` is {v}, not a number of seconds: the file is \
                         damaged (vLLM writes numbers there); restore it or re-run the benchmark"
                    ),
                )
            })?,
        };
        if measured(x).is_ok() {
            Ok(x * 1000.0)
        } else {
            Err(bad(
                dir,
                file,
                format!("request {i}: `{what}` is {x}, not a duration"),
            ))
        }
    };
    let mut lines = Vec::with_capacity(n);
    for i in 0..n {
        let error = errors
            .get(i)
            .and_then(Value::as_str)
            .filter(|e| !e.trim().is_empty());
        let ttft = secs(ttfts.get(i), "ttfts", i)?;
        let count = |l: &[Value], what: &str| -> Result<u32, LoadError> {
            match l.get(i) {
                None => Ok(0),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        bad(
                            dir,
                            file,
                            format!(
                                "request {i}: `{what}` is {v}, not a token count: the file is \
                                 damaged; restore it or re-run the benchmark"
                            ),
                        )
                    }),
            }
        };
        let output_tokens = count(outs, "output_lens")?;
        let input_tokens = count(ins, "input_lens")?;
        let itl_ms = match itls.get(i).and_then(Value::as_array) {
            Some(gaps) => gaps
                .iter()
                .enumerate()
                .map(|(j, g)| secs(Some(g), &format!("itls[{j}]"), i))
                .collect::<Result<Vec<f64>, _>>()?,
            None => Vec::new(),
        };
        let e2e = match derived_e2e {
            true => ttft + itl_ms.iter().sum::<f64>(),
            false => secs(lat.get(i), "latencies", i)?,
        };
        // A request failed when it has an error text or took no time (vLLM writes 0 for a
        // failed request's TTFT and no gaps); files without `failed` are counted this way.
        let ok = error.is_none() && e2e > 0.0;
        let sent = match starts.get(i).and_then(number) {
            Some(t) if t.is_finite() && t0.is_finite() => (t - t0) * 1000.0,
            _ => 0.0,
        };
        lines.push(RequestLine {
            index: i as u32,
            scheduled_ms: sent,
            sent_ms: sent,
            first_token_ms: ok.then_some(sent + ttft),
            end_ms: sent + e2e,
            ttft_ms: ok.then_some(ttft),
            tpot_ms: (ok && output_tokens > 1).then(|| (e2e - ttft) / f64::from(output_tokens - 1)),
            e2e_ms: e2e,
            input_tokens,
            output_tokens,
            token_source: TokenSource::Usage,
            itl_ms,
            ok,
            error_class: (!ok).then_some(ErrorClass::Unclassified),
            error_detail: error.map(|e| e.chars().take(512).collect()),
            // vLLM records its own counts only, not the server's usage; no warmup, repeats,
            // reasoning, prefixes or sessions.
            ..RequestLine::default()
        });
    }
    Ok(Some(lines))
}

/// One file as a rung.
fn rung_of(dir: &Path, file: &str, o: Map<String, Value>) -> Result<ImportedRung, LoadError> {
    let f = |k: &str| o.get(k).and_then(number);
    let u = |k: &str| o.get(k).and_then(Value::as_u64);
    let rate = f("request_rate").ok_or_else(|| {
        bad(
            dir,
            file,
            "no `request_rate`: cannot place the file on a rate ladder".into(),
        )
    })?;
    // `--request-rate inf --max-concurrency N` is vLLM's concurrency sweep: a rung of N
    // closed-loop users, as ladder's own concurrency ladders write it.
    let (rate, load) = match u("max_concurrency") {
        Some(n) if rate == f64::INFINITY && n >= 1 => (n as f64, LoadKind::Concurrency),
        _ if rate.is_finite() && rate > 0.0 => (rate, LoadKind::Rate),
        _ => {
            return Err(bad(
                dir,
                file,
                format!(
                    "request_rate {} without a max_concurrency: every request at once, neither a \
                     rate rung nor a concurrency rung; compare runs with a finite request_rate, \
                     or with --max-concurrency",
                    o.get("request_rate").cloned().unwrap_or(Value::Null)
                ),
            ))
        }
    };
    let completed =
        u("completed").ok_or_else(|| bad(dir, file, "`completed` is not a count".into()))?;
    measured_values(&o, dir, file)?;
    let lines = detailed_lines(&o, dir, file)?;
    let failed = match (u("failed"), &lines) {
        (Some(x), _) => x,
        (None, Some(l)) => l.iter().filter(|r| !r.ok).count() as u64,
        (None, None) => u("num_prompts").map_or(0, |n| n.saturating_sub(completed)),
    };
    if let Some(l) = &lines {
        let ok = l.iter().filter(|r| r.ok).count() as u64;
        if ok != completed || Some(l.len() as u64) != completed.checked_add(failed) {
            return Err(bad(
                dir,
                file,
                format!(
                    "the per-request lists hold {} requests ({ok} without an error) but the summary says {completed} completed and {failed} failed",
                    l.len()
                ),
            ));
        }
    }
    let mut errors_by_class: std::collections::BTreeMap<String, u64> = ErrorClass::ALL
        .iter()
        .map(|c| (c.key().to_string(), 0))
        .collect();
    // vLLM keeps only an error text per request: its failures have no class.
    errors_by_class.insert(ErrorClass::Unclassified.key().into(), failed);
    let mut latency = std::collections::BTreeMap::new();
    let count = |which: Latency| -> u64 {
        match (&lines, which) {
            (Some(l), Latency::Itl) => l
                .iter()
                .filter(|r| r.ok)
                .map(|r| r.itl_ms.len() as u64)
                .sum(),
            (Some(l), Latency::Tpot) => l.iter().filter(|r| r.tpot_ms.is_some()).count() as u64,
            _ => completed,
        }
    };
    for which in Latency::ALL {
        let s = match which {
            Latency::Ttft | Latency::Tpot | Latency::Itl | Latency::E2el => {
                stats_of(&o, which.key(), count(which))
            }
            _ => stats_of(&Map::new(), "", 0),
        };
        latency.insert(which, s);
    }
    let burstiness = f("burstiness").unwrap_or(1.0);
    let per_request = |total: Option<u64>| match (total, completed) {
        (Some(t), c) if c > 0 => t as f64 / c as f64,
        _ => 0.0,
    };
    let summary = RungSummary {
        rate,
        load,
        burstiness,
        max_concurrency: u("max_concurrency").map(|c| c.min(u64::from(u32::MAX)) as u32),
        num_prompts: u("num_prompts").unwrap_or(completed.saturating_add(failed)),
        warmup_requests: 0,
        duration_s: f("duration").unwrap_or(f64::NAN),
        completed,
        failed,
        errors_by_class,
        total_input_tokens: u("total_input_tokens").unwrap_or(0),
        total_output_tokens: u("total_output_tokens").unwrap_or(0),
        request_throughput: f("request_throughput").unwrap_or(f64::NAN),
        request_goodput: f("request_goodput").unwrap_or(f64::NAN),
        output_throughput: f("output_throughput").unwrap_or(f64::NAN),
        total_token_throughput: f("total_token_throughput").unwrap_or(f64::NAN),
        achieved_rate: f64::NAN,
        max_concurrent_requests: u("max_concurrent_requests").unwrap_or(0),
        max_output_tokens_per_s: f("max_output_tokens_per_s").unwrap_or(f64::NAN),
        retokenized_outputs: 0,
        inexact_prompts: 0,
        interrupted: false,
        interrupted_requests: 0,
        latency,
        // vLLM result files carry no server-side metrics, nor reasoning splits.
        server: Default::default(),
        reasoning: None,
        prefix: None,
        sessions: None,
        repeats: Vec::new(),
        offered_rate: None,
        ramp: None,
        // vLLM's embeddings and rerank benchmarks write latency (`*_e2el_ms`) and no TTFT
        // keys; its `backend` (`vllm-rerank`) tells a rerank run.
        pooling: (!o.contains_key("mean_ttft_ms") && o.contains_key("mean_e2el_ms")).then(
            || match o.get("backend").and_then(Value::as_str) {
                Some(b) if b.contains("rerank") => crate::scenario::Api::Rerank,
                _ => crate::scenario::Api::Embeddings,
            },
        ),
        // vLLM's file has no per-model breakdown (its `--lora-modules` spread is not recorded).
        models: Vec::new(),
        tokens: crate::metrics::tokens::TokenAccounting {
            requested_input_tokens: per_request(u("total_input_tokens")),
            mean_output_tokens: per_request(u("total_output_tokens")),
            ..Default::default()
        },
    };
    let send_times = lines.is_some()
        && o.get("start_times")
            .and_then(Value::as_array)
            .is_some_and(|s| !s.is_empty());
    let settings: Map<String, Value> = o
        .into_iter()
        .filter(|(k, v)| !v.is_array() && SETTINGS.contains(&k.as_str()))
        .collect();
    Ok(ImportedRung {
        send_times,
        entry: RungEntry {
            rate,
            result_file: file.to_string(),
            requests_file: String::new(),
            complete: true,
        },
        summary,
        lines,
        settings,
    })
}

/// True for a key of a vLLM file that holds a measured duration, rate or latency statistic:
/// `duration`, the throughputs and goodput, `max_output_tokens_per_s`, and every
/// `<statistic>_<ttft|tpot|itl|e2el>_ms`.
fn measured_key(k: &str) -> bool {
    const PLAIN: &[&str] = &[
        "duration",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
    ];
    PLAIN.contains(&k)
        || k.strip_suffix("_ms").is_some_and(|rest| {
            ["ttft", "tpot", "itl", "e2el"]
                .iter()
                .any(|m| rest.ends_with(&format!("_{m}")))
        })
}

/// Refuse a measured summary value that no benchmark writes: NaN, infinite, negative, or
/// not a number (a string, a list). vLLM writes `null` for a metric it did not compute (the
/// goodput without `--goodput`): that is no value, and is left out.
fn measured_values(o: &Map<String, Value>, dir: &Path, file: &str) -> Result<(), LoadError> {
    for (k, v) in o.iter().filter(|(k, v)| measured_key(k) && !v.is_null()) {
        let why = match number(v).map(|x| (x, measured(x))) {
            Some((_, Ok(_))) => continue,
            Some((_, Err(NotAValue::NaN))) => "NaN, not a measured value".to_string(),
            Some((x, Err(_))) => {
                format!("{x}, not a value a benchmark measures (negative or infinite)")
            }
            None => format!("{v}, not a number"),
        };
        return Err(bad(
            dir,
            file,
            format!(
                "`{k}` is {why}: the file is damaged; restore it or re-run the benchmark \
                 (a value vLLM did not compute is written as null)"
            ),
        ));
    }
    Ok(())
}

/// The keys of a vLLM file that describe the run rather than measure it.
const SETTINGS: &[&str] = &[
    "date",
    "backend",
    "endpoint_type",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "burstiness",
    "max_concurrency",
];

/// Read `dir` as a folder of vLLM result files; `Ok(None)` when it holds none.
pub fn open(dir: &Path) -> Result<Option<(RunInfo, Vec<ImportedRung>)>, LoadError> {
    let Some(files) = vllm_files(dir)? else {
        return Ok(None);
    };
    let mut rungs = Vec::new();
    for (name, o) in files {
        rungs.push(rung_of(dir, &name, o)?);
    }
    rungs.sort_by(|a, b| a.entry.rate.total_cmp(&b.entry.rate));
    let load = rungs[0].summary.load;
    if let Some(other) = rungs.iter().find(|r| r.summary.load != load) {
        return Err(bad(
            dir,
            &other.entry.result_file,
            format!(
                "a {} file beside {} ones ({}): a folder is one ladder, of rates or of \
                 concurrency levels; put each kind in its own folder",
                other.summary.load.name(),
                load.name(),
                rungs[0].entry.result_file
            ),
        ));
    }
    for w in rungs.windows(2) {
        if w[0].entry.rate == w[1].entry.rate {
            let what = match load {
                LoadKind::Concurrency => "max_concurrency",
                _ => "request_rate",
            };
            return Err(bad(
                dir,
                &w[1].entry.result_file,
                format!(
                    "{what} {} is also in {}: one file per rung",
                    w[1].entry.rate, w[0].entry.result_file
                ),
            ));
        }
    }
    // Keep ladder's own names for the rungs' files where they match, e.g. the seed's
    // result_rate_<rate>.json; the requests file never exists for an import.
    for r in &mut rungs {
        if r.entry.result_file == result_file_name(r.entry.rate) {
            r.entry.requests_file = requests_file_name(r.entry.rate);
        }
    }
    let first = &rungs[0].settings;
    let s = |k: &str| first.get(k).and_then(Value::as_str).map(str::to_string);
    let model = s("model_id").unwrap_or_default();
    let workload = serde_json::json!({
        "requests_per_rung": rungs[0].summary.num_prompts,
    });
    let scenario = serde_json::json!({
        "version": 1,
        "name": dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        "model": model,
        "tokenizer": s("tokenizer_id").unwrap_or_default(),
        "endpoint": { "base_url": "", "api": s("backend").or(s("endpoint_type")).unwrap_or_default() },
        "workload": workload,
        "load": { load_key(load): rungs.iter().map(|r| r.entry.rate).collect::<Vec<_>>() },
        "imported_from": "vllm",
    });
    let started_at = s("date")
        .and_then(|d| chrono::NaiveDateTime::parse_from_str(&d, "%Y%m%d-%H%M%S").ok())
        .map(|t| t.and_utc())
        .unwrap_or_default();
    let info = RunInfo {
        format_version: RESULTS_FORMAT_VERSION,
        tool_version: format!("vllm-import (backend {})", s("backend").unwrap_or_default()),
        scenario_name: sanitized_name(dir),
        scenario_file: String::new(),
        scenario,
        load,
        git_commit: None,
        tokenizer_sha256: String::new(),
        tokenizer_source: None,
        endpoint: String::new(),
        host: HostInfo {
            hostname: String::new(),
            os: String::new(),
            arch: String::new(),
            cpus: 0,
        },
        started_at,
        ended_at: Some(started_at),
        status: RunStatus::Complete,
        status_detail: Some("imported from vLLM result files".into()),
        rungs: rungs.iter().map(|r| r.entry.clone()).collect(),
        warnings: match rungs.iter().all(|r| r.lines.is_some()) {
            true => vec![],
            false => vec![
                "vLLM result files without per-request data (saved without --save-detailed): compared on summary values only, run-to-run and sampling noise cannot be judged".into(),
            ],
        },
        server: None,
        prompt_overhead: None,
        prompt_nonce: None,
        trace: None,
        shard: None,
        shards: None,
    };
    Ok(Some((info, rungs)))
}

/// The scenario key a ladder of `load` lists its rungs under.
fn load_key(load: LoadKind) -> &'static str {
    match load {
        LoadKind::Concurrency => "concurrency",
        _ => "rates",
    }
}

/// The folder's name in the characters a scenario name allows (it names golden/<name>/).
fn sanitized_name(dir: &Path) -> String {
    let raw = dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_start_matches('.').to_string();
    if s.is_empty() {
        "vllm-import".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_infinities_become_strings_outside_strings_only() {
        let t = r#"{"b": Infinity, "c": -Infinity, "d": NaN, "s": "Infinity NaN \" Infinity"}"#;
        let v: Value = serde_json::from_str(&standard_json(t)).unwrap();
        assert_eq!(number(&v["b"]), Some(f64::INFINITY));
        assert_eq!(number(&v["c"]), Some(f64::NEG_INFINITY));
        assert!(number(&v["d"]).unwrap().is_nan());
        assert_eq!(v["s"], "Infinity NaN \" Infinity");
    }
}
