//! Trace replay (`load.trace`) and the ramp rung (`load.ramp`) through the real binary on the
//! simulator: a trace replayed at 1x and 2x with every request's scheduled time checked
//! against the trace, a ramp whose result carries its per-window table, and validation of
//! both with key paths and hints. Times are checked on the recorded schedule, never on
//! wall-clock timings.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ladder::results::{RequestLine, ResultDir};
use ladder::scenario::LoadKind;
use sha2::{Digest, Sha256};

fn ladder(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ladder"))
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

fn tokenizer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json")
}

fn write_scenario(dir: &Path, name: &str, workload: &str, load: &str) -> PathBuf {
    let text = format!(
        r#"version: 1
name: {name}
endpoint:
  base_url: sim
  request_timeout: 30s
model: sim-model
tokenizer: {tok}
workload:
  ignore_eos: true
  seed: 5
{workload}
load:
{load}
  cooldown: 0s
slo:
  ttft_ms: 2000
sim:
  seed: 5
  step_base_ms: 2
  step_per_seq_ms: 0.1
"#,
        tok = tokenizer().display()
    );
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

fn newest(out: &Path, name: &str) -> PathBuf {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(out.join(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    runs.pop().expect("a run folder")
}

/// (timestamp ms, input_length, output_length, hash_ids): the trace of the replay test. It
/// starts at 5000 ms (offsets are from the first line), has two lines at the same instant
/// and lines that share prefix blocks.
const TRACE: [(u64, u32, u32, &str); 8] = [
    (5000, 40, 6, "[1, 2, 3]"),
    (5000, 12, 4, "[]"),
    (5120, 35, 5, "[1, 2, 9]"),
    (5400, 20, 3, "[1, 2]"),
    (5405, 64, 8, "[]"),
    (5900, 16, 2, "[7]"),
    (6300, 50, 7, "[1, 2, 3, 4]"),
    (6750, 9, 3, "[]"),
];

#[test]
fn a_trace_replays_at_its_timestamps_over_the_speed() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let body: String = TRACE
        .iter()
        .map(|(ts, i, o, h)| {
            format!("{{\"timestamp\": {ts}, \"input_length\": {i}, \"output_length\": {o}, \"hash_ids\": {h}}}\n")
        })
        .collect();
    std::fs::write(dir.join("trace.jsonl"), &body).unwrap();
    let sha = hex::encode(Sha256::digest(body.as_bytes()));
    let sc = write_scenario(
        dir,
        "replay",
        "",
        "  trace:\n    path: trace.jsonl\n    speed: [1, 2]\n    block_tokens: 8\n  warmup_requests: 1",
    );
    let run = ladder(&["run", sc.to_str().unwrap(), "--out", "out"], dir);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let folder = ResultDir::open_finished(&newest(&dir.join("out"), "replay")).unwrap();
    assert_eq!(folder.info.load, LoadKind::Trace);
    let info = folder
        .info
        .trace
        .as_ref()
        .expect("run.json records the trace");
    assert_eq!(info.path, "trace.jsonl");
    assert_eq!(info.sha256, sha);
    assert_eq!((info.requests, info.file_lines), (8, 8));
    assert_eq!(info.span_ms, 1750.0);
    assert_eq!(folder.rungs.len(), 2);

    for (rung, speed) in folder.rungs.iter().zip([1.0, 2.0]) {
        assert_eq!(rung.entry.rate, speed);
        let s = &rung.summary;
        assert_eq!(s.load, LoadKind::Trace);
        // Every line once, the first as warmup; the rest measured and all completed.
        assert_eq!(s.num_prompts, 7);
        assert_eq!(s.completed, 7, "{}", text(&run));
        let json = s.to_json_map();
        assert_eq!(json["load"], "trace");
        // The mean offered rate: 7 gaps over 1.75 s / speed.
        let offered = json["request_rate"].as_f64().unwrap();
        assert!((offered - 7.0 / 1.75 * speed).abs() < 1e-9, "{offered}");

        let mut lines: Vec<RequestLine> = folder.requests(rung).unwrap();
        lines.sort_by_key(|l| l.index);
        assert_eq!(lines.len(), TRACE.len());
        assert!(lines[0].warmup && lines[1..].iter().all(|l| !l.warmup));
        for (l, (ts, input, output, _)) in lines.iter().zip(TRACE) {
            let want = (ts - 5000) as f64 / speed;
            assert!(
                (l.scheduled_ms - want).abs() < 1e-6,
                "speed {speed}: line {} scheduled at {} ms, the trace says {want} ms",
                l.index,
                l.scheduled_ms
            );
            assert!(l.sent_ms >= l.scheduled_ms);
            // Prompts are the recorded length (a word-level tokenizer: exact), max_tokens
            // the recorded output, and ignore_eos makes the simulator produce all of it.
            assert_eq!(l.input_tokens, input, "line {}", l.index);
            assert_eq!(l.requested_output_tokens, Some(output));
            assert_eq!(l.output_tokens, output);
        }
    }
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("speed")),
        "{out}"
    );
    assert!(out.contains("Fastest speed within SLO"), "{out}");
    let md = std::fs::read_to_string(folder.path.join("summary.md")).unwrap();
    assert!(md.contains("| trace speed (x) |"), "{md}");
    let html = std::fs::read_to_string(folder.path.join("report.html")).unwrap();
    assert!(html.contains("trace replay speed (x)"), "x axis label");

    // The same path with other contents is another workload: compare refuses it by hash.
    std::fs::write(
        dir.join("trace.jsonl"),
        body.replace("\"output_length\": 6", "\"output_length\": 9"),
    )
    .unwrap();
    let again = ladder(
        &["run", sc.to_str().unwrap(), "--out", "out2", "--quiet"],
        dir,
    );
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let other = newest(&dir.join("out2"), "replay");
    let cmp = ladder(
        &[
            "compare",
            folder.path.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
        dir,
    );
    assert_eq!(cmp.status.code(), Some(2), "{}", text(&cmp));
    assert!(
        text(&cmp).contains("different trace (sha256"),
        "{}",
        text(&cmp)
    );
}

#[test]
fn a_ramp_reports_its_windows() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let sc = write_scenario(
        dir,
        "ramp",
        "  input_tokens: 16\n  output_tokens: 4",
        "  arrival: constant\n  ramp:\n    from: 3\n    to: 33\n    over: 2s\n    windows: 4",
    );
    let run = ladder(&["run", sc.to_str().unwrap(), "--out", "out"], dir);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let folder = ResultDir::open_finished(&newest(&dir.join("out"), "ramp")).unwrap();
    assert_eq!(folder.info.load, LoadKind::Ramp);
    assert_eq!(folder.rungs.len(), 1);
    let rung = &folder.rungs[0];
    assert_eq!(rung.entry.rate, 33.0);
    let s = &rung.summary;
    // Constant arrivals: request i when i were due, for i = 0..=Λ(2 s) = (3 + 33) / 2 x 2.
    assert_eq!(s.num_prompts, 37);
    let ramp = s
        .ramp
        .as_ref()
        .expect("the result file has the ramp's windows");
    assert_eq!(ramp.windows.len(), 4);
    assert_eq!(
        ramp.windows.iter().map(|w| w.requests).sum::<u64>(),
        s.num_prompts
    );
    // Window k holds the requests due in it, i in [Λ(a), Λ(b)) with Λ(t) = 3t + 7.5t²
    // (not a whole number at any inner window boundary), and the last one the final request.
    let lambda = |t: f64| 3.0 * t + 7.5 * t * t;
    for (k, w) in ramp.windows.iter().enumerate() {
        let (a, b) = (k as f64 * 0.5, (k + 1) as f64 * 0.5);
        assert_eq!((w.start_s, w.end_s), (a, b));
        assert!((w.offered_rate_start - (3.0 + 15.0 * a)).abs() < 1e-9);
        assert!((w.offered_rate - (lambda(b) - lambda(a)) / 0.5).abs() < 1e-9);
        let due = (lambda(b).ceil() - lambda(a).ceil()) as u64 + u64::from(k == 3);
        assert_eq!(w.requests, due, "window {k}");
        assert_eq!(w.completed, w.requests);
        assert!(w.median_ttft_ms.is_some() && w.meets_slo.is_some());
    }
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(out.contains("Ramp 3 -> 33 req/s, by window"), "{out}");
    assert!(out.contains("p50 TTFT"), "{out}");
    let md = std::fs::read_to_string(folder.path.join("summary.md")).unwrap();
    assert!(md.contains("| window | offered | achieved |"), "{md}");
    assert!(
        md.contains("| 0-0.5s |") && md.contains("| 1.5-2s |"),
        "{md}"
    );
    // The window verdict replaces a knee over rungs (a ramp is one rung).
    assert!(md.contains("- **Ramp:** SLO "), "{md}");
    assert!(!md.contains("**Knee:**"), "{md}");
    let html = std::fs::read_to_string(folder.path.join("report.html")).unwrap();
    assert!(html.contains("req/s by window</h3>"), "the window table");
    let raw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.path.join(&rung.entry.result_file)).unwrap(),
    )
    .unwrap();
    assert_eq!(raw["load"], "ramp");

    // Two repeats replay the same schedule; the windows pool both repeats' requests.
    let twice = ladder(
        &[
            "run",
            sc.to_str().unwrap(),
            "--out",
            "out2",
            "--repeats",
            "2",
            "--quiet",
        ],
        dir,
    );
    assert_eq!(twice.status.code(), Some(0), "{}", text(&twice));
    let pooled = ResultDir::open_finished(&newest(&dir.join("out2"), "ramp")).unwrap();
    let p = &pooled.rungs[0].summary;
    assert_eq!(p.num_prompts, 74);
    let pr = p.ramp.as_ref().expect("pooled windows");
    for (a, b) in pr.windows.iter().zip(&ramp.windows) {
        assert_eq!(a.requests, 2 * b.requests);
    }
    assert_eq!(raw["ramp"]["windows"].as_array().unwrap().len(), 4);
    assert!((raw["request_rate"].as_f64().unwrap() - 37.0 / 2.0).abs() < 1e-9);
}

fn validate(dir: &Path, name: &str, workload: &str, load: &str) -> String {
    let sc = write_scenario(dir, name, workload, load);
    let o = ladder(&["validate", sc.to_str().unwrap()], dir);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn validate_names_the_key_and_the_fix() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let missing = validate(dir, "a", "", "  trace:\n    path: nowhere.jsonl");
    assert!(
        missing.contains("load.trace.path") && missing.contains("nowhere.jsonl"),
        "{missing}"
    );
    std::fs::write(
        dir.join("unsorted.jsonl"),
        "{\"timestamp\": 9, \"input_length\": 3, \"output_length\": 1}\n{\"timestamp\": 4, \"input_length\": 3, \"output_length\": 1}\n",
    )
    .unwrap();
    let unsorted = validate(dir, "b", "", "  trace:\n    path: unsorted.jsonl");
    assert!(
        unsorted.contains("unsorted.jsonl:2:") && unsorted.contains("sort the file by timestamp"),
        "{unsorted}"
    );
    std::fs::write(dir.join("empty.jsonl"), "\n").unwrap();
    let empty = validate(dir, "c", "", "  trace:\n    path: empty.jsonl");
    assert!(
        empty.contains("empty.jsonl") && empty.contains("the trace has no requests"),
        "{empty}"
    );
    let speed = validate(
        dir,
        "d",
        "  requests_per_rung: 10",
        "  rates: [1]\n  trace:\n    path: unsorted.jsonl\n    speed: [0, 2, 2]",
    );
    for want in [
        "load.trace.speed[0]",
        "speed 0 is outside",
        "load.trace.speed[2]",
        "strictly increasing",
        "`rates` does not apply to a `trace` rung",
        "`requests_per_rung` does not apply",
    ] {
        assert!(speed.contains(want), "{want}: {speed}");
    }
    let ramp = validate(
        dir,
        "e",
        "",
        "  ramp:\n    from: 10\n    to: 5\n    over: 0s\n    windows: 0",
    );
    for want in [
        "load.ramp.to",
        "must be above `from`",
        "load.ramp.over",
        "load.ramp.windows",
    ] {
        assert!(ramp.contains(want), "{want}: {ramp}");
    }
    let ramp_sc = write_scenario(
        dir,
        "g",
        "",
        "  ramp:\n    from: 1\n    to: 5\n    over: 1s",
    );
    let rates = ladder(
        &[
            "run",
            ramp_sc.to_str().unwrap(),
            "--rates",
            "1,2",
            "--out",
            "out",
        ],
        dir,
    );
    assert_eq!(rates.status.code(), Some(2), "{}", text(&rates));
    assert!(
        text(&rates).contains("is a ramp (`load.ramp`)"),
        "{}",
        text(&rates)
    );
    assert!(!dir.join("out").exists(), "nothing ran");
    let ok = write_scenario(
        dir,
        "f",
        "",
        "  ramp:\n    from: 1\n    to: 5\n    over: 10s\n    shape: exponential",
    );
    let o = ladder(&["validate", ok.to_str().unwrap()], dir);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
