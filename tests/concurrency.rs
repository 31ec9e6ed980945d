//! Concurrency ladders (`load.concurrency`): closed-loop accounting on the simulator, checked
//! on the recorded requests (never on wall-clock timings alone), validation, the analysis,
//! and the gate on a concurrency ladder.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ladder::metrics::{analyze, Latency, RungSummary, Stats};
use ladder::results::{RequestLine, ResultDir};
use ladder::scenario::{LoadKind, Slo};

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

// The simulated engine of the accounting test (docs/sim.md): every request is `IN` prompt
// tokens and exactly `OUT` output tokens; a step of `b` sequences takes
// `STEP_BASE_MS + STEP_PER_SEQ_MS * b` plus the prefill of the prompts in it.
const IN: u32 = 16;
const OUT: u32 = 8;
const STEP_BASE_MS: f64 = 10.0;
const STEP_PER_SEQ_MS: f64 = 0.5;
const PREFILL_PER_TOKEN_US: f64 = 20.0;
const THINK_MS: f64 = 100.0;
const REQUESTS: usize = 16;
const WARMUP: usize = 2;

fn write_scenario(dir: &Path, name: &str, load: &str, requests: usize, sim_extra: &str) -> PathBuf {
    let text = format!(
        r#"version: 1
name: {name}
endpoint:
  base_url: sim
  request_timeout: 30s
model: sim-model
tokenizer: {tok}
workload:
  input_tokens: {IN}
  output_tokens: {OUT}
  ignore_eos: true
  requests_per_rung: {requests}
  seed: 3
load:
{load}
  cooldown: 0s
gate:
  - {{ metric: median_tpot_ms, max_increase: 10% }}
  - {{ metric: error_rate, max: 0.05 }}
sim:
  seed: 3
  step_base_ms: {STEP_BASE_MS}
  step_per_seq_ms: {STEP_PER_SEQ_MS}
  prefill_per_token_us: {PREFILL_PER_TOKEN_US}
{sim_extra}"#,
        tok = tokenizer().display()
    );
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// The only run folder under `out/<name>/`... the newest one.
fn newest(out: &Path, name: &str) -> PathBuf {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(out.join(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    runs.pop().expect("a run folder")
}

/// Most requests in flight at once, from their send and end times (an end at the same
/// instant as a send frees its slot first).
fn max_in_flight(lines: &[RequestLine]) -> usize {
    let mut events: Vec<(f64, i32)> = lines
        .iter()
        .flat_map(|l| [(l.sent_ms, 1), (l.end_ms, -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// Checks that the requests form at most `users` sequential chains with `think_ms` between a
/// request's end and the next one's scheduled send (none after a warmup request). The warmup requests go out at the rung
/// start (at most one per user; every user's first request without warmup), and no measured
/// request is sent before the last warmup request ended (warmup is a phase of its own).
/// Taking requests in scheduled order and giving each a free predecessor (a distinct request
/// that ended at least `think_ms` before it was scheduled) when there is one: availability
/// only grows, so this greedy match leaves the fewest chains, which N users cannot exceed.
fn assert_user_chains(lines: &[RequestLine], users: usize, think_ms: f64, warmup: usize) {
    let at_start = lines.iter().filter(|l| l.scheduled_ms == 0.0).count();
    let expect = if warmup > 0 { users.min(warmup) } else { users };
    assert_eq!(at_start, expect, "requests scheduled at the rung start");
    let warm_end = lines
        .iter()
        .filter(|l| l.warmup)
        .map(|l| l.end_ms)
        .fold(0.0, f64::max);
    for l in lines.iter().filter(|l| !l.warmup) {
        assert!(
            l.sent_ms >= warm_end && l.scheduled_ms >= warm_end,
            "measured request {} sent at {} ms, before the warmup phase ended at {warm_end} ms",
            l.index,
            l.sent_ms
        );
    }
    let mut order: Vec<&RequestLine> = lines.iter().collect();
    order.sort_by(|a, b| a.scheduled_ms.total_cmp(&b.scheduled_ms));
    let mut used = vec![false; lines.len()];
    let mut chains = 0;
    for l in order {
        let pred = lines.iter().enumerate().position(|(j, p)| {
            // Warmup requests go back to back: no think time after one.
            let think = if p.warmup { 0.0 } else { think_ms };
            !used[j] && p.index != l.index && p.end_ms + think <= l.scheduled_ms + 1e-6
        });
        match pred {
            Some(j) => used[j] = true,
            None => chains += 1,
        }
    }
    assert!(
        (at_start..=users).contains(&chains),
        "{chains} chains of requests think_ms apart for {users} users"
    );
}

#[test]
fn users_and_think_time_set_the_throughput_on_the_simulator() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let load =
        format!("  concurrency: [1, 4]\n  think_time: {THINK_MS}ms\n  warmup_requests: {WARMUP}");
    let sc = write_scenario(dir, "closed", &load, REQUESTS, "");
    let run = ladder(
        &["run", sc.to_str().unwrap(), "--out", "out", "--quiet"],
        dir,
    );
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let folder = ResultDir::open_finished(&newest(&dir.join("out"), "closed")).unwrap();
    assert_eq!(folder.info.load, LoadKind::Concurrency);
    assert_eq!(folder.rungs.len(), 2);

    for rung in &folder.rungs {
        let users = rung.entry.rate as usize;
        let s = &rung.summary;
        assert_eq!(s.load, LoadKind::Concurrency);
        // vLLM's keys for a concurrency run.
        assert_eq!(s.max_concurrency, Some(users as u32));
        let json = s.to_json_map();
        assert_eq!(json["request_rate"], "inf");
        assert_eq!(json["max_concurrency"], users);
        assert_eq!(json["load"], "concurrency");

        // The count is exact: every request of the rung ran once, warmup first.
        let lines = folder.requests(rung).unwrap();
        let mut idx: Vec<u32> = lines.iter().map(|l| l.index).collect();
        idx.sort();
        assert_eq!(idx, (0..(REQUESTS + WARMUP) as u32).collect::<Vec<_>>());
        assert_eq!(lines.iter().filter(|l| l.warmup).count(), WARMUP);
        assert_eq!(s.num_prompts, REQUESTS as u64);
        assert_eq!(s.completed, REQUESTS as u64, "no failures on the simulator");

        // Never more than N in flight, and N reached (all users start the measured part
        // together).
        assert_eq!(max_in_flight(&lines), users);
        assert_eq!(s.max_concurrent_requests, users as u64);
        // Each user's requests are sequential, `think_time` apart.
        assert_user_chains(&lines, users, THINK_MS, WARMUP);
        // Dispatch lag is measured from when the user was ready: never negative.
        assert!(lines.iter().all(|l| l.sent_ms >= l.scheduled_ms));

        // Expected throughput from the simulator's configuration. A request of OUT tokens
        // takes OUT engine steps (its prompt's prefill step gives the first token); a step
        // of b sequences takes at least STEP_BASE + STEP_PER_SEQ * b ms, and at most one
        // step more is spent waiting for the step in progress when the request arrives.
        let step = |b: f64| STEP_BASE_MS + STEP_PER_SEQ_MS * b;
        let prefill = f64::from(IN) * PREFILL_PER_TOKEN_US / 1000.0;
        let r_min = f64::from(OUT) * step(1.0);
        let r_max = (f64::from(OUT) + 1.0) * step(users as f64) + prefill * users as f64;
        // The measured window runs from the first measured send to the last completion. The
        // busiest user sends at least k = ceil(n / N) of the measured requests, each taking
        // at least r_min, with think time between them: an upper bound that no machine can
        // beat (10 % slack for the simulator's clock catching up after a late step).
        let k = REQUESTS.div_ceil(users) as f64;
        let upper = REQUESTS as f64 / (k * r_min + (k - 1.0) * THINK_MS) * 1000.0;
        // A server that took r_max per request: N users complete N per cycle of
        // r_max + think. A busy test machine adds client and HTTP overhead on top, hence
        // the wide lower margin (half the modelled throughput); the upper one is physics.
        let modelled = users as f64 / (r_max + THINK_MS) * 1000.0;
        let qps = s.request_throughput;
        assert!(
            qps <= upper * 1.1,
            "{users} users: {qps:.2} req/s is above the most the simulator allows ({upper:.2})"
        );
        assert!(
            qps >= 0.5 * modelled,
            "{users} users: {qps:.2} req/s is far below the modelled {modelled:.2} req/s"
        );
        // Latency is the engine's, not the think time's.
        assert!(s.stats(Latency::E2el).median < THINK_MS + r_max * 3.0);
    }
    let qps: Vec<f64> = folder
        .rungs
        .iter()
        .map(|r| r.summary.request_throughput)
        .collect();
    // 4 users below the engine's batch limit complete close to 4 times what 1 user does.
    assert!(qps[1] > 2.5 * qps[0], "{qps:?}");

    // Humans see users, not req/s.
    let md = std::fs::read_to_string(folder.path.join("summary.md")).unwrap();
    assert!(md.contains("| concurrency (users) |"), "{md}");
    assert!(md.contains("against the 1 user rung"), "{md}");
    let html = std::fs::read_to_string(folder.path.join("report.html")).unwrap();
    assert!(html.contains("concurrency (users"), "x axis label");
    assert!(!html.contains("offered rate (req/s"), "no rate axis");
    assert!(!html.contains("ideal: throughput = offered rate"));
    assert!(
        html.contains("Throughput vs concurrency (users)"),
        "chart titles"
    );
    assert!(!html.contains("vs offered rate"), "chart titles");
    let stdout = ladder(&["run", sc.to_str().unwrap(), "--out", "out2"], dir);
    let table = String::from_utf8_lossy(&stdout.stdout);
    assert!(
        table.lines().any(|l| l.trim_start().starts_with("users")),
        "{}",
        text(&stdout)
    );
    assert!(table.contains("Most users within SLO"), "{table}");
}

fn problems(yaml_load: &str) -> Vec<String> {
    let t = tempfile::tempdir().unwrap();
    let text = format!(
        "version: 1\nname: v\nendpoint:\n  base_url: sim\nmodel: m\ntokenizer: {}\nworkload:\n  requests_per_rung: 48\nload:\n{yaml_load}\n",
        tokenizer().display()
    );
    let (_, diags) = ladder::scenario::check_text(&t.path().join("v.yaml"), &text, None);
    diags
        .iter()
        .map(|d| format!("{}: {}", d.key_path, d.message))
        .collect()
}

#[test]
fn validate_wants_exactly_one_of_rates_and_concurrency() {
    assert!(problems("  concurrency: [1, 4, 16]\n  think_time: 200ms").is_empty());
    // More users than requests: the level would never be reached.
    let over = problems("  concurrency: [1, 64]");
    assert!(
        over.iter()
            .any(|p| p.starts_with("load.concurrency[1]") && p.contains("64 users but only 48")),
        "{over:?}"
    );
    let both = problems("  rates: [1, 2]\n  concurrency: [1, 4]");
    assert!(
        both.iter()
            .any(|p| p.starts_with("load.concurrency") && p.contains("either `rates`")),
        "{both:?}"
    );
    let neither = problems("  cooldown: 1s");
    assert!(
        neither
            .iter()
            .any(|p| p.contains("no rungs: set `rates` or `concurrency`")),
        "{neither:?}"
    );
    let think = problems("  rates: [1, 2]\n  think_time: 1s");
    assert!(
        think.iter().any(|p| p.starts_with("load.think_time")),
        "{think:?}"
    );
    for key in [
        "baseline_rate: 1",
        "max_concurrency: 4",
        "arrival: constant",
    ] {
        let p = problems(&format!("  concurrency: [2, 4]\n  {key}"));
        let name = key.split(':').next().unwrap();
        assert!(
            p.iter().any(|x| x.starts_with(&format!("load.{name}"))
                && x.contains("applies to a `rates` ladder")),
            "{key}: {p:?}"
        );
    }
    let order = problems("  concurrency: [4, 4]");
    assert!(
        order
            .iter()
            .any(|p| p.starts_with("load.concurrency[1]") && p.contains("strictly increasing")),
        "{order:?}"
    );
    let zero = problems("  concurrency: [0, 2]");
    assert!(
        zero.iter()
            .any(|p| p.starts_with("load.concurrency[0]") && p.contains("whole number")),
        "{zero:?}"
    );
    let huge = problems("  concurrency: [100000]");
    assert!(
        huge.iter().any(|p| p.contains("from 1 to 10000")),
        "{huge:?}"
    );
}

fn rung(kind: LoadKind, level: f64, qps: f64, ttft: f64) -> RungSummary {
    let mut latency = std::collections::BTreeMap::new();
    for which in Latency::ALL {
        latency.insert(which, Stats::default());
    }
    latency.insert(
        Latency::Ttft,
        Stats {
            count: 100,
            median: ttft,
            ..Default::default()
        },
    );
    latency.insert(
        Latency::Tpot,
        Stats {
            count: 100,
            median: 10.0,
            ..Default::default()
        },
    );
    RungSummary {
        rate: level,
        load: kind,
        num_prompts: 100,
        completed: 100,
        request_throughput: qps,
        request_goodput: qps,
        latency,
        ..Default::default()
    }
}

#[test]
fn the_knee_of_a_concurrency_ladder_compares_throughput_with_the_growth_in_users() {
    // 1 -> 2 users doubles throughput; 2 -> 4 adds 1 req/s where 20 were on offer: a
    // plateau. The same numbers read as rates (2 -> 4 req/s offered +2, realised +1) are not.
    let levels = [(1.0, 10.0, 20.0), (2.0, 20.0, 21.0), (4.0, 21.0, 22.0)];
    let closed: Vec<RungSummary> = levels
        .iter()
        .map(|&(l, q, t)| rung(LoadKind::Concurrency, l, q, t))
        .collect();
    let a = analyze(&closed, &Slo::default(), None);
    assert_eq!(a.load, LoadKind::Concurrency);
    let knee = a.knee.as_ref().expect("a knee");
    assert_eq!(knee.rate, 4.0);
    assert!(a.knee_text().starts_with("4 users ("), "{}", a.knee_text());
    assert!(a.knee_text().contains("2 -> 4 users"), "{}", a.knee_text());
    let shown = a.to_string();
    assert!(
        shown.contains("Multiples vs the 1 user baseline"),
        "{shown}"
    );
    assert!(
        shown.contains("Most users within SLO:   4 users"),
        "{shown}"
    );
    assert_eq!(a.rung(2.0).unwrap().throughput_multiple, Some(2.0));
    let json = serde_json::to_value(&a).unwrap();
    assert_eq!(json["load"], "concurrency");

    let open: Vec<RungSummary> = levels
        .iter()
        .map(|&(l, q, t)| rung(LoadKind::Rate, l, q, t))
        .collect();
    let a = analyze(&open, &Slo::default(), None);
    assert!(a.knee.is_none(), "{:?}", a.knee);
    assert!(serde_json::to_value(&a).unwrap().get("load").is_none());
}

#[test]
fn the_gate_works_on_a_concurrency_ladder_and_compare_refuses_a_rate_ladder() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let load = "  concurrency: [2, 8]";
    let base = write_scenario(dir, "cgate", load, 40, "  speed: 2\n  decode_scale: 1.0\n");
    // The same ladder on a build whose decode is 30 % slower.
    let slow_dir = dir.join("slow");
    std::fs::create_dir_all(&slow_dir).unwrap();
    let slow = write_scenario(
        &slow_dir,
        "cgate",
        load,
        40,
        "  speed: 2\n  decode_scale: 1.3\n",
    );

    let run = ladder(
        &["run", base.to_str().unwrap(), "--out", "results", "--quiet"],
        dir,
    );
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let golden_src = newest(&dir.join("results"), "cgate");
    let bless = ladder(
        &["bless", golden_src.to_str().unwrap(), "--golden", "golden"],
        dir,
    );
    assert_eq!(bless.status.code(), Some(0), "{}", text(&bless));

    // Unchanged: PASS, with the rungs named as users.
    let same = ladder(
        &[
            "gate",
            base.to_str().unwrap(),
            "--golden",
            "golden",
            "--out",
            "results",
            // 40 requests a rung: judged on the requests' noise (the default assumed 5 %
            // drift leaves a +10 % TPOT rule undecidable from one run each).
            "--drift",
            "0",
        ],
        dir,
    );
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
    let out = String::from_utf8_lossy(&same.stdout);
    assert!(
        out.lines()
            .any(|l| l.starts_with("users ") && l.contains("metric")),
        "{}",
        text(&same)
    );

    // 30 % slower decode: TPOT regresses past +10 % on both rungs; the gate fails.
    let slower = ladder(
        &[
            "gate",
            slow.to_str().unwrap(),
            "--golden",
            "golden",
            "--out",
            "results",
            // 40 requests a rung: judged on the requests' noise (the default assumed 5 %
            // drift leaves a +10 % TPOT rule undecidable from one run each).
            "--drift",
            "0",
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
    let md = std::fs::read_to_string(dir.join("slow.md")).unwrap();
    assert!(md.contains("| users |"), "{md}");

    // A rate ladder is never matched with a concurrency ladder, even with rungs of the
    // same numbers and --allow-config-change.
    let rate = write_scenario(dir, "crate", "  rates: [2, 8]", 8, "  speed: 2\n");
    let run = ladder(
        &["run", rate.to_str().unwrap(), "--out", "results", "--quiet"],
        dir,
    );
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let rate_dir = newest(&dir.join("results"), "crate");
    let cmp = ladder(
        &[
            "compare",
            golden_src.to_str().unwrap(),
            rate_dir.to_str().unwrap(),
            "--allow-config-change",
        ],
        dir,
    );
    assert_eq!(cmp.status.code(), Some(2), "{}", text(&cmp));
    let err = String::from_utf8_lossy(&cmp.stderr);
    assert!(
        err.contains(
            "cannot compare a concurrency ladder (baseline) with a rate ladder (candidate)"
        ),
        "{}",
        text(&cmp)
    );
}
