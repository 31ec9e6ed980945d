//! `ladder validate` refuses what `ladder run` refuses, no input panics, templates are
//! bounded (RELIABILITY.md, "Scenario input: validate refuses what run refuses").
mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A small valid scenario against the simulator; `edit` replaces whole lines or appends.
fn scenario(dir: &Path, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  request_timeout: 5s\nmodel: m\n\
         tokenizer: {TOKENIZER}\nworkload:\n  input_tokens: 16\n  output_tokens: 4\n  \
         requests_per_rung: 3\n  seed: 0\nload:\n  baseline_rate: 50\n  rates: [100]\n  \
         cooldown: 0s\n"
    );
    for (old, new) in edits {
        if old.is_empty() {
            text.push_str(new);
            text.push('\n');
        } else {
            assert!(text.contains(old), "no `{old}` in the base scenario");
            text = text.replacen(old, new, 1);
        }
    }
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn validate(p: &Path) -> Ran {
    spawn(ladder_cmd(&["validate", p.to_str().unwrap()])).finish(Duration::from_secs(60))
}

/// Refused by validate at `file:line:col` with the key, and by run before any folder exists.
fn refused_everywhere(name: &str, edits: &[(&str, &str)], at: &str, says: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.jsonl"), "not json\n").unwrap();
    std::fs::write(dir.path().join("bad.json"), "[{\"conversations\": 5}]").unwrap();
    let p = scenario(dir.path(), edits);
    let v = validate(&p);
    no_panic(&v);
    assert_eq!(
        v.status.code(),
        Some(2),
        "{name}: validate accepted it:\n{}",
        v.all()
    );
    let want = format!("rel.yaml:{at}");
    assert!(
        v.stderr
            .lines()
            .any(|l| l.contains(&want) && l.contains(": error: ") && l.contains(says)),
        "{name}: want `{want}` … `{says}` in:\n{}",
        v.stderr
    );
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(60));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{name}: run:\n{}", r.all());
    assert!(r.stderr.contains(&want), "{name}: run says:\n{}", r.stderr);
    assert!(run_dir(&out).is_none(), "{name}: run left a result folder");
}

#[test]
fn what_run_refuses_after_load_validate_refuses_with_its_position() {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case] = &[
        ("sim setting", &[("", "sim: { max_num_seqs: 0 }")], "17:22: error: sim.max_num_seqs", "at least 1"),
        ("sim faults", &[("", "sim:\n  fault_http_500: 0.7\n  fault_http_429: 0.7")], "18:19: error: sim.fault_http_500", "add up to"),
        ("header name", &[("  request_timeout: 5s\n", "  request_timeout: 5s\n  headers: { \"bad header\": x }\n")], "6:28: error: endpoint.headers.bad header", "header name"),
        ("header value", &[("  request_timeout: 5s\n", "  request_timeout: 5s\n  headers:\n    x-a: \"line\\nbreak\"\n")], "7:10", "cannot be sent"),
        ("jsonl", &[("  input_tokens: 16\n", "  dataset: jsonl\n  path: bad.jsonl\n")], "10:9: error: workload.path", "bad.jsonl:1"),
        ("sharegpt", &[("  input_tokens: 16\n", "  dataset: sharegpt\n  path: bad.json\n")], "10:9: error: workload.path", "bad.json"),
        ("template filter", &[("  seed: 0\n", "  seed: 0\n  prompt_template: \"{{ prompt | nosuchfilter }}\"\n")], "13:20: error: workload.prompt_template", "unknown filter"),
        ("template room", &[("  seed: 0\n", "  seed: 0\n  prompt_template: \"{{ prompt }}{% for i in range(300) %} word{% endfor %}\"\n")], "13:20", "leaves no room"),
        ("rung size", &[("  input_tokens: 16", "  input_tokens: 4000000000"), ("requests_per_rung: 3", "requests_per_rung: 4000000000")], "11:22: error: workload.requests_per_rung", "limit of 1000000"),
        ("tokens per rung", &[("  input_tokens: 16", "  input_tokens: 1000000"), ("requests_per_rung: 3", "requests_per_rung: 1000")], "9:17: error: workload.input_tokens", "held in memory"),
        ("tiny rate", &[("baseline_rate: 50", "baseline_rate: 1e-20")], "14:18: error: load.baseline_rate", "rate 1e-20 is below the lowest rate"),
        ("tiny rates entry", &[("rates: [100]", "rates: [1e-30, 100]")], "15:11: error: load.rates[0]", "below the lowest rate"),
        ("burstiness huge", &[("", "  arrival: gamma\n  burstiness: 1e308")], "18:15: error: load.burstiness", "outside [0.001, 1000]"),
        ("burstiness tiny", &[("", "  arrival: gamma\n  burstiness: 1e-300")], "18:15: error: load.burstiness", "outside"),
        ("typed read deep", &[("output_tokens: 4", "output_tokens: 5000000000")], "10:18: error: workload.output_tokens", "cannot read this value"),
    ];
    for (name, edits, at, says) in cases {
        refused_everywhere(name, edits, at, says);
    }
}

#[test]
fn rates_on_the_command_line_get_the_same_limit_and_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let p = scenario(dir.path(), &[]);
    let out = dir.path().join("out");
    // Refused before any load (exit 2, no folder), saying `says`.
    let refused = |rates: &str, says: &str| {
        let r = spawn(ladder_cmd(&[
            "run",
            p.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--rates",
            rates,
        ]))
        .finish(Duration::from_secs(60));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(2), "--rates {rates}:\n{}", r.all());
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(run_dir(&out).is_none());
    };
    for rates in ["1e-30", "0.0001,5", "5,NaN"] {
        refused(rates, "error: --rates: rate ");
    }
    // The scenario's baseline is 50: rates at or under it are refused as validate refuses
    // them in the file (they ran, and the analysis compared every rung with a baseline above
    // it).
    for rates in ["25", "30,100"] {
        refused(rates, "not above the scenario's load.baseline_rate 50");
    }
}

#[test]
fn seeds_above_2_pow_63_are_seeds() {
    let dir = tempfile::tempdir().unwrap();
    for seed in ["18446744073709551615", "9223372036854775809"] {
        let p = scenario(dir.path(), &[("  seed: 0", &format!("  seed: {seed}"))]);
        let v = validate(&p);
        assert_eq!(v.status.code(), Some(0), "{}", v.all());
        let out = dir.path().join(format!("out-{seed}"));
        let r = run_ladder(&p, &out, Duration::from_secs(90));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(0), "{}", r.all());
        let info = check_folder(&run_dir(&out).unwrap());
        assert_eq!(info.info.scenario["workload"]["seed"].to_string(), seed);
    }
}

#[test]
fn a_looping_template_cannot_hang_validate() {
    let dir = tempfile::tempdir().unwrap();
    let lp = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    let cases = [
        (
            format!("  prompt_template: \"{lp}{{{{ prompt }}}}\""),
            "13:20: error: workload.prompt_template",
        ),
        (
            "  prompt_template: \"{{ prompt }}{{ 'x' * 90000000 }}{{ 'x' * 90000000 }}\""
                .to_string(),
            "13:20",
        ),
    ];
    for (line, at) in cases {
        let p = scenario(dir.path(), &[("  seed: 0", &format!("  seed: 0\n{line}"))]);
        let t0 = Instant::now();
        let v = validate(&p);
        no_panic(&v);
        assert_eq!(v.status.code(), Some(2), "{}", v.all());
        assert!(v.stderr.contains(at), "{}", v.stderr);
        assert!(
            v.stderr.contains("too much work") || v.stderr.contains("MiB (the limit)"),
            "{}",
            v.stderr
        );
        assert!(t0.elapsed() < Duration::from_secs(50));
    }
    let p = scenario(dir.path(), &[("", &format!("description: \"{lp}\""))]);
    let v = validate(&p);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(
        v.stderr
            .contains("rel.yaml:17:14: error: description: the template does too much work"),
        "{}",
        v.stderr
    );
}

// ---- property: structural fuzzing of the scenario type -----------------------------------

/// Values YAML can spell for a number, the edges first.
const EDGES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "0.5",
    "1e-30",
    "1e-300",
    "1e308",
    "1e20",
    ".nan",
    ".inf",
    "-.inf",
    "18446744073709551615",
    "-9223372036854775808",
    "9223372036854775809",
    "4294967296",
    "1e-20",
    "100",
    "4194305",
    "3",
];

/// Values YAML can spell for a duration, the edges first.
const DUR_EDGES: &[&str] = &[
    "0s",
    "0ms",
    "1ns",
    "1ms",
    "99ms",
    "100ms",
    "-1s",
    "1.5s",
    "18446744073709551615s",
    "18446744073709551616s",
    "1e308s",
    "99999999999999999999h",
    "584942417355y",
    "5s",
    "2m",
    "abc",
    "",
    "10",
];

/// How a field is spelled: a number, a duration, a threshold (`10%` or a number), or a
/// floor (a number or a duration).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Num,
    Dur,
    Thr,
    Floor,
}

/// Every numeric and duration field of the scenario type, as (section, key, kind, quick):
/// `quick` when any value `validate` accepts also makes a short run that succeeds against the
/// simulator (a field that can ask for long rungs, huge prompts, slow or failing simulated
/// requests is not run, only validated and prepared). `tests/hardening_validate.rs`'s
/// `the_field_table_covers_the_scenario_schema` keeps this list complete.
const FIELDS: &[(&str, &str, Kind, bool)] = &[
    ("", "version", Kind::Num, true),
    ("endpoint", "request_timeout", Kind::Dur, false),
    ("endpoint", "ttft_timeout", Kind::Dur, false),
    ("workload", "input_tokens", Kind::Num, false),
    ("workload", "output_tokens", Kind::Num, false),
    ("workload", "range_ratio", Kind::Num, true),
    ("workload", "requests_per_rung", Kind::Num, false),
    ("workload", "seed", Kind::Num, true),
    ("load", "burstiness", Kind::Num, false),
    ("load", "baseline_rate", Kind::Num, false),
    ("load", "rates", Kind::Num, false),
    ("load", "cooldown", Kind::Dur, false),
    ("load", "max_concurrency", Kind::Num, true),
    ("load", "warmup_requests", Kind::Num, false),
    ("load", "repeats", Kind::Num, false),
    ("load", "concurrency", Kind::Num, true),
    ("load", "think_time", Kind::Dur, false),
    ("load", "duration", Kind::Dur, false),
    ("load", "interval", Kind::Dur, false),
    ("workload", "prompt_pool", Kind::Num, false),
    ("workload", "batch_size", Kind::Num, false),
    ("workload", "query_tokens", Kind::Num, false),
    ("trace", "speed", Kind::Num, false),
    ("trace", "block_tokens", Kind::Num, true),
    ("trace", "max_requests", Kind::Num, true),
    ("ramp", "from", Kind::Num, false),
    ("ramp", "to", Kind::Num, false),
    ("ramp", "over", Kind::Dur, false),
    ("ramp", "windows", Kind::Num, true),
    ("images", "per_request", Kind::Num, false),
    ("images", "width", Kind::Num, false),
    ("images", "height", Kind::Num, false),
    ("sessions", "turns", Kind::Num, false),
    ("sessions", "think_time", Kind::Dur, false),
    ("slo", "ttft_ms", Kind::Num, true),
    ("slo", "tpot_ms", Kind::Num, true),
    ("slo", "e2e_ms", Kind::Num, true),
    ("slo", "max_error_rate", Kind::Num, true),
    ("gate", "max_increase", Kind::Thr, true),
    ("gate", "max_decrease", Kind::Thr, true),
    ("gate", "max", Kind::Num, true),
    ("gate", "min", Kind::Num, true),
    ("gate", "min_change", Kind::Floor, true),
    ("sweep", "values", Kind::Num, false),
    ("sim", "seed", Kind::Num, true),
    ("sim", "drift", Kind::Num, false),
    ("sim", "drift_seed", Kind::Num, true),
    ("sim", "step_jitter", Kind::Num, false),
    ("sim", "speed", Kind::Num, false),
    ("sim", "max_model_len", Kind::Num, false),
    ("sim", "max_num_seqs", Kind::Num, true),
    ("sim", "kv_cache_tokens", Kind::Num, false),
    ("sim", "max_num_batched_tokens", Kind::Num, false),
    ("sim", "step_base_ms", Kind::Num, false),
    ("sim", "step_per_seq_ms", Kind::Num, false),
    ("sim", "prefill_per_token_us", Kind::Num, false),
    ("sim", "decode_scale", Kind::Num, false),
    ("sim", "chunk_tokens", Kind::Num, true),
    ("sim", "max_waiting", Kind::Num, false),
    ("sim", "max_queue_wait_ms", Kind::Num, false),
    ("sim", "reject_status", Kind::Num, true),
    ("sim", "retry_after_s", Kind::Num, true),
    ("sim", "default_max_tokens", Kind::Num, true),
    ("sim", "chat_template_tokens", Kind::Num, true),
    ("sim", "reasoning_tokens", Kind::Num, true),
    ("sim", "fault_http_500", Kind::Num, false),
    ("sim", "fault_http_429", Kind::Num, false),
    ("sim", "fault_drop_mid_stream", Kind::Num, false),
    ("sim", "fault_malformed_chunk", Kind::Num, false),
    ("sim", "fault_stream_error", Kind::Num, false),
    ("sim", "fault_stall", Kind::Num, false),
    ("sim", "fault_unknown_model", Kind::Num, false),
    ("sim", "stall_ms", Kind::Num, true),
    ("sim", "prefix_cache_block_size", Kind::Num, true),
    ("sim", "prefix_cache_tokens", Kind::Num, true),
    ("server_metrics", "interval", Kind::Dur, true),
    // `model: [{name, weight}]` (written as a two-name mix) and `sim.models[].speed`.
    ("model", "weight", Kind::Num, true),
    ("sim_models", "speed", Kind::Num, false),
];

struct Case {
    path: PathBuf,
    edits: Vec<String>,
    quick: bool,
}

/// A value for a field of `kind`: an edge 70 % of the time, else a random number.
fn value(rng: &mut ChaCha8Rng, kind: Kind) -> String {
    let num = |rng: &mut ChaCha8Rng| {
        if rng.gen_bool(0.7) {
            EDGES[rng.gen_range(0..EDGES.len())].to_string()
        } else {
            format!("{}", rng.gen_range(-5.0..1e4_f64))
        }
    };
    match kind {
        Kind::Num => num(rng),
        Kind::Dur => DUR_EDGES[rng.gen_range(0..DUR_EDGES.len())].to_string(),
        Kind::Thr if rng.gen_bool(0.5) => format!("\"{}%\"", num(rng)),
        Kind::Floor if rng.gen_bool(0.5) => {
            DUR_EDGES[rng.gen_range(0..DUR_EDGES.len())].to_string()
        }
        Kind::Thr | Kind::Floor => num(rng),
    }
}

/// The base scenario of [`scenario`] with `set` (field index, value) applied: base lines
/// replaced, other fields inserted under their section, `gate`/`slo`/`sim`/`sweep`/
/// `server_metrics` written as one flow mapping each.
fn render(dir: &Path, set: &[(usize, String)]) -> PathBuf {
    let get = |sec: &str, key: &str| {
        set.iter()
            .find(|(f, _)| FIELDS[*f].0 == sec && FIELDS[*f].1 == key)
            .map(|(_, v)| v.clone())
    };
    let or = |sec: &str, key: &str, d: &str| get(sec, key).unwrap_or_else(|| d.to_string());
    let mut text = format!(
        "version: {}\nname: rel\nendpoint:\n  base_url: sim\n",
        or("", "version", "1")
    );
    text += &format!(
        "  request_timeout: {}\n",
        or("endpoint", "request_timeout", "5s")
    );
    // Sessions (`workload.sessions`) are chat conversations.
    let sessions = flow_of(set, "sessions");
    // Images (`workload.images`) go in chat content parts.
    let images = flow_of(set, "images");
    if !sessions.is_empty() || !images.is_empty() {
        text += "  api: chat\n";
    }
    if let Some(v) = get("endpoint", "ttft_timeout") {
        text += &format!("  ttft_timeout: {v}\n");
    }
    match get("model", "weight") {
        Some(w) => text += &format!("model: [{{ name: m, weight: {w} }}, {{ name: m2 }}]\n"),
        None => text += "model: m\n",
    }
    text += &format!("tokenizer: {TOKENIZER}\nworkload:\n");
    // A trace replay (`load.trace`) or a ramp (`load.ramp`) replaces the rates; neither
    // takes requests_per_rung, and a trace sets every length itself.
    let trace = flow_of(set, "trace");
    let ramp = flow_of(set, "ramp");
    // A rung run for a duration takes no requests_per_rung (its prompts are a pool).
    let timed = get("load", "duration")
        .or_else(|| get("load", "interval"))
        .or_else(|| get("workload", "prompt_pool"))
        .is_some();
    for (k, d) in [
        ("input_tokens", "16"),
        ("output_tokens", "4"),
        ("requests_per_rung", "3"),
        ("seed", "0"),
    ] {
        let shaped = !trace.is_empty() && k != "seed"
            || (!ramp.is_empty() || timed) && k == "requests_per_rung";
        match get("workload", k) {
            Some(v) => text += &format!("  {k}: {v}\n"),
            None if !shaped => text += &format!("  {k}: {d}\n"),
            None => {}
        }
    }
    if let Some(v) = get("workload", "range_ratio") {
        text += &format!("  range_ratio: {v}\n");
    }
    if !images.is_empty() {
        let mut kv = images.clone();
        for (k, d) in [("per_request", "1"), ("width", "8"), ("height", "8")] {
            if !kv.iter().any(|x| x.starts_with(&format!("{k}:"))) {
                kv.push(format!("{k}: {d}"));
            }
        }
        text += &format!("  images: {{ {} }}\n", kv.join(", "));
    }
    if !sessions.is_empty() {
        let mut kv = sessions.clone();
        if !kv.iter().any(|x| x.starts_with("turns:")) {
            kv.push("turns: 2".into());
        }
        text += &format!("  sessions: {{ {} }}\n", kv.join(", "));
    }
    if let Some(v) = get("workload", "prompt_pool") {
        text += &format!("  prompt_pool: {v}\n");
    }
    text += "load:\n";
    if let Some(v) = get("load", "burstiness") {
        text += &format!("  arrival: gamma\n  burstiness: {v}\n");
    }
    // A concurrency ladder replaces the rates (a ladder has one or the other).
    let (users, think) = (get("load", "concurrency"), get("load", "think_time"));
    if !trace.is_empty() {
        std::fs::write(
            dir.join("t.jsonl"),
            "{\"timestamp\": 0, \"input_length\": 16, \"output_length\": 4, \"hash_ids\": [1, 2]}\n\
             {\"timestamp\": 20, \"input_length\": 12, \"output_length\": 3, \"hash_ids\": [1]}\n\
             {\"timestamp\": 45, \"input_length\": 9, \"output_length\": 2}\n",
        )
        .unwrap();
        let mut kv = trace.clone();
        if let Some(s) = kv.iter_mut().find(|k| k.starts_with("speed:")) {
            *s = format!("speed: [{}]", &s["speed: ".len()..]);
        }
        text += &format!("  trace: {{ path: t.jsonl, {} }}\n", kv.join(", "));
    } else if !ramp.is_empty() {
        let mut kv = ramp.clone();
        for (k, d) in [("from", "50"), ("to", "100"), ("over", "100ms")] {
            if !kv.iter().any(|x| x.starts_with(&format!("{k}:"))) {
                kv.push(format!("{k}: {d}"));
            }
        }
        text += &format!("  ramp: {{ {} }}\n", kv.join(", "));
    } else if users.is_some() || think.is_some() {
        text += &format!("  concurrency: [{}]\n", users.unwrap_or_else(|| "2".into()));
        if let Some(v) = think {
            text += &format!("  think_time: {v}\n");
        }
    } else {
        text += &format!("  baseline_rate: {}\n", or("load", "baseline_rate", "50"));
        text += &format!("  rates: [{}]\n", or("load", "rates", "100"));
    }
    text += &format!("  cooldown: {}\n", or("load", "cooldown", "0s"));
    if timed {
        text += &format!("  duration: {}\n", or("load", "duration", "200ms"));
        if let Some(v) = get("load", "interval") {
            text += &format!("  interval: {v}\n");
        }
    }
    for k in ["max_concurrency", "warmup_requests"] {
        if let Some(v) = get("load", k) {
            text += &format!("  {k}: {v}\n");
        }
    }
    let flow = |sec: &str| -> Vec<String> {
        set.iter()
            .filter(|(f, _)| FIELDS[*f].0 == sec)
            .map(|(f, v)| format!("{}: {v}", FIELDS[*f].1))
            .collect()
    };
    for sec in ["slo", "sim", "server_metrics"] {
        let mut kv = flow(sec);
        if let (Some(v), "sim") = (get("sim_models", "speed"), sec) {
            kv.push(format!("models: [{{ name: m, speed: {v} }}]"));
        }
        if !kv.is_empty() {
            text += &format!("{sec}: {{ {} }}\n", kv.join(", "));
        }
    }
    let mut rule = flow("gate");
    if !rule.is_empty() {
        if !rule.iter().any(|r| !r.starts_with("min_change")) {
            rule.push("max_increase: 10%".into());
        }
        text += &format!(
            "gate:\n  - {{ metric: median_ttft_ms, {} }}\n",
            rule.join(", ")
        );
    }
    if let Some(v) = get("sweep", "values") {
        text += &format!("sweep: {{ field: input_tokens, values: [{v}] }}\n");
    }
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

/// `key: value` of every field of section `sec` in `set`.
fn flow_of(set: &[(usize, String)], sec: &str) -> Vec<String> {
    set.iter()
        .filter(|(f, _)| FIELDS[*f].0 == sec)
        .map(|(f, v)| format!("{}: {v}", FIELDS[*f].1))
        .collect()
}

/// Case `i`: field `i % FIELDS.len()` (so every field is drawn as often as any) and up to
/// two more, each with a value of its kind.
fn generate(dir: &Path, rng: &mut ChaCha8Rng, i: usize) -> Case {
    let sub = dir.join(format!("c{i}"));
    std::fs::create_dir_all(&sub).unwrap();
    let mut fields = vec![i % FIELDS.len()];
    for _ in 0..rng.gen_range(0..=2) {
        let f = rng.gen_range(0..FIELDS.len());
        if !fields.contains(&f) {
            fields.push(f);
        }
    }
    let set: Vec<(usize, String)> = fields
        .iter()
        .map(|&f| (f, value(rng, FIELDS[f].2)))
        .collect();
    let quick = fields.iter().all(|&f| FIELDS[f].3);
    let path = render(&sub, &set);
    Case {
        path,
        edits: set
            .iter()
            .map(|(f, v)| format!("{}.{}: {v}", FIELDS[*f].0, FIELDS[*f].1))
            .collect(),
        quick,
    }
}

/// `ladder validate` in-process (load and check, then run's own preparation, as the CLI
/// does): true when it accepts the file. A panic anywhere fails the test, naming the case.
fn validates(path: &Path, edits: &[String]) -> bool {
    let path = path.to_path_buf();
    let outcome = std::panic::catch_unwind(move || {
        // The tokenizer is the same file in every case and run's preparation loads it again:
        // loading it once per case is enough.
        let (loaded, diags) = ladder::scenario::check_file(&path, None);
        loaded
            .filter(|_| diags.is_empty())
            .is_some_and(|l| ladder::runner::prepare(&l, l.scenario.clone()).is_ok())
    });
    match outcome {
        Err(_) => panic!("check_file/prepare panicked on {edits:?}"),
        Ok(ok) => ok,
    }
}

/// The most extreme numbers and durations (a subset of [`EDGES`] and [`DUR_EDGES`]: every
/// case loads the tokenizer twice, so the full product would take minutes in a debug build).
const NUM_EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "0.5",
    "1e-30",
    "1e308",
    ".nan",
    "-.inf",
    "18446744073709551615",
    "-9223372036854775808",
    "4294967296",
];
const DUR_EXTREMES: &[&str] = &[
    "0s",
    "1ns",
    "-1s",
    "5s",
    "18446744073709551616s",
    "1e308s",
    "99999999999999999999h",
    "abc",
];

/// Every field of the table takes each extreme value of its kind, alone: nothing panics
/// (`validate` either accepts the file or refuses it with diagnostics), and most fields have
/// an extreme that is accepted, so the accepting paths are reached too.
#[test]
fn every_numeric_field_takes_every_extreme_value() {
    let dir = tempfile::tempdir().unwrap();
    // Two threads, each field on one: (cases tried, accepted anywhere) per field.
    let per_field: Vec<(usize, bool)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let dir = dir.path();
                scope.spawn(move || {
                    (0..FIELDS.len())
                        .filter(|f| f % 2 == t)
                        .map(|f| (f, field_extremes(dir, f)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<(usize, (usize, bool))> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort_by_key(|(f, _)| *f);
        all.into_iter().map(|(_, r)| r).collect()
    });
    let tried: usize = per_field.iter().map(|(n, _)| n).sum();
    let fields_valid = per_field.iter().filter(|(_, any)| *any).count();
    assert!(tried > 8 * FIELDS.len(), "only {tried} cases");
    assert!(
        fields_valid * 4 >= FIELDS.len() * 3,
        "only {fields_valid} of {} fields have an accepted extreme",
        FIELDS.len()
    );
}

/// Field `f` alone at each extreme value of its kind: (cases, whether any validated).
fn field_extremes(dir: &Path, f: usize) -> (usize, bool) {
    let (sec, key, kind, _) = FIELDS[f];
    let mut tried = 0;
    {
        let values: Vec<String> = match kind {
            Kind::Num => NUM_EXTREMES.iter().map(|v| v.to_string()).collect(),
            Kind::Dur => DUR_EXTREMES.iter().map(|v| v.to_string()).collect(),
            Kind::Thr => NUM_EXTREMES
                .iter()
                .map(|v| v.to_string())
                .chain(
                    ["\"1e308%\"", "\"-5%\"", "\"0%\"", "\".nan%\"", "\"10%\""].map(String::from),
                )
                .collect(),
            Kind::Floor => NUM_EXTREMES
                .iter()
                .chain(DUR_EXTREMES)
                .map(|v| v.to_string())
                .chain(["1e300ms".to_string()])
                .collect(),
        };
        let mut any = false;
        for v in values {
            let sub = dir.join(format!("f{f}-{tried}"));
            std::fs::create_dir_all(&sub).unwrap();
            let edits = vec![format!("{sec}.{key}: {v}")];
            let p = render(&sub, &[(f, v)]);
            tried += 1;
            any |= validates(&p, &edits);
        }
        (tried, any)
    }
}

/// For any generated scenario: loading, validating and preparing never panic; a scenario that
/// validates prepares (validate and run share `runner::prepare`); a sample of the valid ones
/// runs against the simulator to a complete folder (no failure on scenario grounds).
#[test]
fn property_valid_scenarios_prepare_and_run() {
    let iters: usize = std::env::var("LADDER_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0x1ad_de7);
    let mut valid = vec![];
    let t0 = Instant::now();
    for i in 0..iters {
        let case = generate(dir.path(), &mut rng, i);
        if validates(&case.path, &case.edits) {
            valid.push(case);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "too slow at {i}: {:?}",
            case_edits(&valid)
        );
    }
    assert!(
        valid.len() >= iters / 10,
        "only {} of {iters} valid: the generator is off",
        valid.len()
    );
    let quick: Vec<&Case> = valid.iter().filter(|c| c.quick).take(12).collect();
    assert!(quick.len() >= 8, "too few quick valid cases");
    for c in quick {
        let out = c.path.parent().unwrap().join("out");
        let r = run_ladder(&c.path, &out, Duration::from_secs(90));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(0), "{:?}:\n{}", c.edits, r.all());
        // one folder per ladder (a sweep has several, named `rel.<field>-<value>`)
        let mut folders = 0;
        for scen in std::fs::read_dir(&out).unwrap() {
            for run in std::fs::read_dir(scen.unwrap().path()).unwrap() {
                let folder = check_folder(&run.unwrap().path());
                assert_eq!(
                    folder.info.status,
                    ladder::results::RunStatus::Complete,
                    "{:?}",
                    c.edits
                );
                folders += 1;
            }
        }
        assert!(folders >= 1, "{:?}: no result folder", c.edits);
    }
}

fn case_edits(v: &[Case]) -> Vec<&Vec<String>> {
    v.iter().map(|c| &c.edits).collect()
}

/// Corpus inputs (tests/corpus/fuzz/scenario/, also the seeds of the `validate` cargo-fuzz
/// target) go through validate and prepare without a panic, next to the repository's tiny
/// tokenizer so that they get past the tokenizer check.
#[test]
fn validate_path_replays_the_scenario_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let tok = dir.path().join("tokenizers");
    std::fs::create_dir_all(&tok).unwrap();
    std::fs::copy(TOKENIZER, tok.join("ladder-tiny.json")).unwrap();
    let mut prepared = 0;
    for e in std::fs::read_dir(root.join("tests/corpus/fuzz/scenario")).unwrap() {
        let src = e.unwrap().path();
        let p = dir.path().join(src.file_name().unwrap());
        std::fs::copy(&src, &p).unwrap();
        let v = validate(&p);
        no_panic(&v);
        assert!(
            matches!(v.status.code(), Some(0 | 2)),
            "{}: {}",
            p.display(),
            v.all()
        );
        let name = src.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("prepare-") {
            // these pass the load checks and are refused by prepare, with a position
            assert_eq!(v.status.code(), Some(2), "{name}: {}", v.all());
            assert!(
                v.stderr.contains(&format!("{name}:")),
                "{name}: {}",
                v.stderr
            );
            prepared += 1;
        }
    }
    assert!(prepared >= 3);
}

/// The Limits table (docs/scenarios.md, the README's scenario reference) quotes the constants
/// `validate` and `run` enforce.
#[test]
fn the_readme_states_the_limits_the_code_enforces() {
    use ladder::scenario::limits::*;
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scenarios.md"))
            .unwrap();
    for row in [
        format!("| {MIN_RATE} requests per second |"),
        format!("| [{MIN_BURSTINESS}, {MAX_BURSTINESS}] |"),
        format!("| {MAX_REQUESTS_PER_RUNG} |"),
        format!("| {MAX_INPUT_TOKENS} tokens |"),
        format!("| {MAX_RUNG_PROMPT_TOKENS} |"),
        format!("| {TEMPLATE_FUEL} steps (minijinja fuel) |"),
        format!("| {PROMPT_TEMPLATE_FUEL} steps (minijinja fuel) |"),
        format!("| {} MiB |", MAX_TEMPLATE_OUTPUT_BYTES / (1024 * 1024)),
    ] {
        assert!(
            readme.contains(&row),
            "docs/scenarios.md's Limits table lacks `{row}`"
        );
    }
}

/// A failure after the folder exists (here the dataset turns bad between rungs) marks the
/// folder `failed` with the reason; it never stays `running`.
#[test]
fn an_error_after_the_folder_exists_marks_it_failed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("p.jsonl");
    std::fs::write(&data, "{\"prompt\": \"hello there\"}\n").unwrap();
    let p = scenario(
        dir.path(),
        &[
            (
                "  input_tokens: 16\n",
                "  dataset: jsonl\n  path: p.jsonl\n",
            ),
            ("cooldown: 0s", "cooldown: 4s"),
        ],
    );
    let out = dir.path().join("out");
    let live = spawn_run(&p, &out);
    live.wait_line("writing ", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::write(&data, "not json\n").unwrap();
    let r = live.finish(Duration::from_secs(60));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("p.jsonl:1"), "{}", r.stderr);
    let folder = run_dir(&out).expect("the folder of the first rung");
    let text = std::fs::read_to_string(folder.join("run.json")).unwrap();
    assert!(text.contains("\"status\": \"failed\""), "{text}");
    assert!(text.contains("p.jsonl:1"), "{text}");
}

/// cargo-fuzz found it (tests/corpus/fuzz/scenario/fuzz-timeout-env-loop.yaml: a loop in a
/// value that is not `prompt_template`): each `{{ env }}` value had its own budget, so many
/// of them added up. All values of a file now share one budget.
#[test]
fn many_looping_values_share_one_template_budget() {
    let dir = tempfile::tempdir().unwrap();
    let lp = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    let gate: String = (0..300)
        .map(|i| format!("  - {{ metric: \"{lp}{i}\", max: 1 }}\n"))
        .collect();
    let p = scenario(dir.path(), &[("", &format!("gate:\n{gate}"))]);
    let t0 = Instant::now();
    let v = validate(&p);
    no_panic(&v);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(
        v.stderr
            .contains("rel.yaml:18:15: error: gate[0].metric: the template does too much work"),
        "{}",
        v.stderr
    );
    assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/fuzz/scenario/fuzz-timeout-env-loop.yaml");
    let t0 = Instant::now();
    let v = validate(&corpus);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
}

/// The field table of the structural tests lists every numeric, duration, threshold and floor
/// field of the scenario schema (`schemas/scenario.v1.json`, generated from the Rust types),
/// so a field added to the type is fuzzed too.
#[test]
fn the_field_table_covers_the_scenario_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/scenario.v1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let defs = &schema["definitions"];
    let refname = |v: &serde_json::Value| -> Option<String> {
        let r = v["$ref"]
            .as_str()
            .or_else(|| v["allOf"][0]["$ref"].as_str())
            .or_else(|| v["anyOf"][0]["$ref"].as_str())?;
        Some(r.trim_start_matches("#/definitions/").to_string())
    };
    let numeric = |v: &serde_json::Value| {
        let t = |s: &serde_json::Value| {
            let ty = s["type"].to_string();
            ty.contains("number") || ty.contains("integer")
        };
        t(v) || t(&v["items"])
    };
    let mut want = vec![];
    // (section in the table, its definition in the schema)
    let sections = [
        ("", None),
        ("endpoint", Some("Endpoint")),
        ("workload", Some("Workload")),
        ("load", Some("Load")),
        ("trace", Some("TraceLoad")),
        ("ramp", Some("RampLoad")),
        ("images", Some("Images")),
        ("sessions", Some("Sessions")),
        ("slo", Some("Slo")),
        ("gate", Some("GateRule")),
        ("sweep", Some("Sweep")),
        ("sim", Some("SimConfig")),
        ("server_metrics", Some("ServerMetrics")),
        ("model", Some("WeightedModel")),
        ("sim_models", Some("SimModel")),
    ];
    for (sec, def) in sections {
        let props = match def {
            None => &schema["properties"],
            Some(d) => &defs[d]["properties"],
        };
        for (key, v) in props.as_object().unwrap() {
            let r = refname(v);
            let scalar_ref = matches!(r.as_deref(), Some("Duration" | "Threshold" | "MinChange"));
            if numeric(v) || scalar_ref {
                want.push(format!("{sec}.{key}"));
            }
        }
    }
    let have: Vec<String> = FIELDS
        .iter()
        .map(|(s, k, _, _)| format!("{s}.{k}"))
        .collect();
    let missing: Vec<&String> = want.iter().filter(|w| !have.contains(w)).collect();
    assert!(
        missing.is_empty(),
        "fields the structural tests do not cover: {missing:?}"
    );
    assert!(want.len() >= 45, "the schema walk found only {want:?}");
}
