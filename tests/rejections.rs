//! A server that rejects every request the same way (llama.cpp's 400
//! `exceed_context_size_error` for prompts longer than its context) is diagnosed, not
//! averaged: the ladder stops after a few identical rejections, exits 2 naming the server's
//! message and the likely cause, and the folder says `failed` with that reason. A run whose
//! failures are mostly rejections is never called overloaded.

mod support;
use support::*;

use std::sync::atomic::Ordering;
use std::time::Duration;

use ladder::results::{ResultDir, RunStatus};

/// A ladder of `n` requests a rung (baseline 20 req/s, then `rates`) against a fault server
/// that answers the preflight probes and the next `good - PROBES` requests, then `fault`.
fn run_against(
    fault: Fault,
    good: usize,
    n: u32,
    rates: &'static str,
) -> (FaultServer, tempfile::TempDir, std::path::PathBuf, Ran) {
    let server = fault_server(fault, good);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.n = n;
    sc.baseline = 20.0;
    sc.rates = rates;
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&path, &out, Duration::from_secs(90));
    no_panic(&ran);
    (server, tmp, out, ran)
}

#[test]
fn identical_context_overflow_rejections_stop_the_ladder_with_the_servers_message() {
    // The two probes are answered; every measured request gets the 400.
    let (server, _tmp, out, ran) = run_against(Fault::ContextOverflow400, PROBES, 40, "[40, 80]");
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    let err = ran.stderr.clone();
    assert!(err.contains("exceed_context_size_error"), "{err}");
    assert!(err.contains("HTTP 400"), "{err}");
    assert!(err.contains("not overload"), "{err}");
    assert!(err.contains("input_tokens"), "the likely cause: {err}");
    assert!(!err.contains(": overloaded"), "{err}");
    // Stopped on the first rung: far fewer than the 120 requests of the ladder were sent
    // (those already in flight when the fifth rejection came back still went out).
    let (dir, rd) = stopped_early_and_failed(&server, &out, "exceed_context_size_error");
    assert_eq!(rd.rungs.len(), 1, "only the first rung ran");
    assert!(!rd.rungs[0].entry.complete);
    // The reason reaches the reports too.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("exceed_context_size_error"), "{md}");
    // The knee names the rejection, not an error-rate overload.
    let analysis: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("analysis.json")).unwrap()).unwrap();
    assert_eq!(
        analysis["knee"]["reasons"],
        serde_json::json!(["rejected"]),
        "{analysis}"
    );
}

/// A key that stops working during a rung (revoked, rotated: the server answers 401 to
/// every request after the first 10 of the rung succeeded) stops that rung after five 401s
/// in a row, instead of sending the rest of it into 401s; the run says the key stopped
/// working, and the folder is `failed` with that reason.
#[test]
fn a_key_revoked_mid_rung_stops_the_rung_and_says_so() {
    let (server, _tmp, out, ran) = run_against(Fault::KeyRevoked401, PROBES + 10, 60, "[40]");
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    let err = ran.stderr.clone();
    assert!(err.contains("key stopped working"), "{err}");
    assert!(err.contains("after 10 had succeeded"), "{err}");
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(!err.contains(": overloaded"), "{err}");
    // The baseline rung (60 requests) stopped long before its end.
    stopped_early_and_failed(&server, &out, "key stopped working");
}

/// The ladder sent fewer than 40 measured requests, and its folder is `failed` with a
/// reason that says `says`; the folder and its loaded results.
fn stopped_early_and_failed(
    server: &FaultServer,
    out: &std::path::Path,
    says: &str,
) -> (std::path::PathBuf, ResultDir) {
    let posts = server.posts.load(Ordering::SeqCst);
    assert!(posts < PROBES + 40, "{posts} requests sent");
    let dir = run_dir(out).expect("a folder");
    let rd = ResultDir::open(&dir).unwrap();
    assert_eq!(rd.info.status, RunStatus::Failed);
    let detail = rd.info.status_detail.clone().unwrap_or_default();
    assert!(detail.contains(says), "{detail}");
    (dir, rd)
}

/// Runs `sc` (against the simulator) expecting preflight to stop it; returns stderr.
fn preflight_refusal(sc: &Sc) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&path, &out, Duration::from_secs(90));
    no_panic(&ran);
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    assert!(run_dir(&out).is_none(), "no result folder: {}", ran.all());
    assert!(!out.exists(), "nothing written: {}", ran.all());
    ran.stderr
}

#[test]
fn a_prompt_longer_than_the_servers_context_is_caught_at_preflight() {
    // 16-token prompts, a 12-token context: the short probe passes, the long one gets the
    // simulator's 400, and the run stops before any load with the server's own message.
    let mut sc = Sc::new("sim");
    sc.extra = "sim:\n  max_model_len: 12\n";
    let err = preflight_refusal(&sc);
    assert!(err.contains("preflight failed"), "{err}");
    assert!(err.contains("longest prompt (16 tokens"), "{err}");
    assert!(err.contains("answered 400"), "{err}");
    assert!(
        err.contains("maximum context length is 12 tokens"),
        "the server's message: {err}"
    );
    assert!(err.contains("longer than the server's context"), "{err}");
    assert!(err.contains("workload.input_tokens"), "what to do: {err}");
    assert!(!err.contains("not served"), "not a model problem: {err}");
}

#[test]
fn the_longest_prompt_of_any_sweep_value_is_probed() {
    // The first ladder (8 tokens) fits a 32-token context; the second (40) does not: caught
    // before the first ladder starts, so nothing is written at all.
    let mut sc = Sc::new("sim");
    sc.extra = "sweep: { field: input_tokens, values: [8, 40] }\nsim:\n  max_model_len: 32\n";
    let err = preflight_refusal(&sc);
    assert!(err.contains("longest prompt (40 tokens"), "{err}");
    assert!(err.contains("maximum context length is 32 tokens"), "{err}");

    // Within the context, the same sweep runs; the long probe is reported.
    let mut sc = Sc::new("sim");
    sc.extra = "sweep: { field: input_tokens, values: [8, 20] }\nsim:\n  max_model_len: 32\n";
    let tmp = tempfile::tempdir().unwrap();
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&path, &out, Duration::from_secs(90));
    assert!(ran.status.success(), "{}", ran.all());
    assert!(
        ran.stderr
            .contains("the longest prompt (20 tokens, 20 by the server's count) was accepted"),
        "{}",
        ran.stderr
    );
}

/// A server that goes down during the run (the simulator as a process of its own, killed
/// after the first rung): the ladder does not spend its remaining rungs on a port that
/// refuses connections. Refusals in a row for 5 s (at least five) stop it: exit 2 saying the
/// server went down, and the folder keeps the rung measured before, with the reason. (A restart within seconds: reliability.rs's
/// server_restart_mid_rung_counts_errors_and_the_run_continues.)
#[test]
fn a_server_that_goes_down_mid_run_stops_the_ladder_and_keeps_what_was_measured() {
    let mut sim = support::serve::SimProc::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(sim.url());
    sc.model = "sim-model";
    sc.n = 100;
    sc.baseline = 9.0;
    sc.rates = "[10, 10.5, 11]";
    sc.cooldown = "1s";
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let live = spawn_run(&path, &out);
    live.wait_line("done:", Duration::from_secs(60));
    let killed = std::time::Instant::now();
    sim.kill();
    let ran = live.finish(Duration::from_secs(90));
    no_panic(&ran);
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    let err = ran.stderr.clone();
    assert!(err.contains("connections in a row were refused"), "{err}");
    assert!(
        err.contains("went down or restarted during the run"),
        "{err}"
    );
    assert!(!err.contains("not overload"), "{err}");
    // Stopped about 5 s into the next rung, not after the three rungs left (3 x 100
    // requests at about 10 req/s and the cooldowns: over 30 s).
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(20), "{took:?} after the kill");
    assert!(took >= Duration::from_secs(5), "{took:?} after the kill");
    let dir = run_dir(&out).expect("a folder");
    let rd = ResultDir::open(&dir).unwrap();
    assert_eq!(rd.info.status, RunStatus::Failed);
    let detail = rd.info.status_detail.clone().unwrap_or_default();
    assert!(detail.contains("refused"), "{detail}");
    assert!(rd.rungs[0].entry.complete, "the first rung is kept whole");
    assert!(rd.rungs.len() <= 2, "{} rungs", rd.rungs.len());
}

/// A capacity search whose server dies after its first probe: its probes are short (100
/// requests, 1–3 s each), shorter than the 5 s of refusals that stop a run, so the streak of
/// refusals is carried from probe to probe and the search stops a few seconds after the
/// kill, instead of bisecting the dead server probe after probe. The folder is `failed` and
/// keeps the search so far: capacity.json with status `failed` and probe 1's verdict.
#[test]
fn a_search_whose_server_goes_down_stops_and_keeps_its_capacity_file() {
    let mut sim = support::serve::SimProc::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("rel.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nname: rel\nendpoint: {{ base_url: {}, api: completions, request_timeout: 3s }}\n\
             model: sim-model\ntokenizer: {TOKENIZER}\n\
             workload: {{ dataset: random, input_tokens: 16, output_tokens: 4, requests_per_rung: 100, seed: 0 }}\n\
             load:\n  warmup_requests: 0\n  cooldown: 1s\n  search:\n    \
             slo: [ {{ metric: p90_ttft_ms, max: 1000 }} ]\n    start: 40\n    max: 5000\n    max_extensions: 0\n",
            sim.url()
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let live = spawn_run(&path, &out);
    live.wait_line("probe 1:", Duration::from_secs(60));
    let killed = std::time::Instant::now();
    sim.kill();
    let ran = live.finish(Duration::from_secs(90));
    no_panic(&ran);
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    assert!(
        ran.stderr.contains("connections in a row were refused"),
        "{}",
        ran.stderr
    );
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(20), "{took:?} after the kill");
    // At most the probes of the 5 s the refusals must last (each 1-3 s with its cooldown).
    let probes = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("probe "))
        .count();
    assert!(probes <= 6, "{probes} probe lines:\n{}", ran.stderr);
    let dir = run_dir(&out).expect("a folder");
    let rd = ResultDir::open(&dir).unwrap();
    assert_eq!(rd.info.status, RunStatus::Failed);
    let file = ladder::results::read_capacity(&rd)
        .expect("a capacity.json the reader accepts")
        .expect("the search so far is kept");
    assert_eq!(file.answer.status, ladder::capacity::Stop::Failed);
    assert_eq!(file.probes[0].level, 40.0);
    assert_eq!(
        file.probes[0].verdict,
        ladder::capacity::ProbeVerdict::Inside
    );
    assert!(
        ran.stderr
            .contains("search ended (failed: the server rejected the requests or went down"),
        "{}",
        ran.stderr
    );
}

/// A rung in which no request completed (a server answering 500 to all of them after
/// preflight) has no latency: summary.csv leaves its latency cells empty (README: what was
/// not recorded is an empty cell), never 0 ms, while the result file keeps vLLM's 0 beside
/// its `count` of 0.
#[test]
fn a_rung_with_no_completed_request_has_empty_latency_cells_in_the_csv() {
    let (_server, _tmp, out, _ran) = run_against(Fault::EchoKey, PROBES, 6, "[40]");
    let dir = run_dir(&out).expect("a folder");
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).expect(name);
    let mut rungs = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[col("completed")], "0", "{csv}");
        for name in [
            "median_ttft_ms",
            "p99_ttft_ms",
            "median_tpot_ms",
            "median_e2el_ms",
        ] {
            assert_eq!(
                cells[col(name)],
                "",
                "{name} of a rung with no completed request:\n{csv}"
            );
        }
        rungs += 1;
    }
    assert!(rungs >= 1, "{csv}");
}
