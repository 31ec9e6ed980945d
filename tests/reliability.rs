//! Reliability and security of `ladder run` end to end: the real binary against raw TCP fault
//! servers, a `ladder sim` child killed mid-rung, signals at several moments, unwritable and
//! full output folders, key redaction and redirects, the open-file limit, and a replay of the
//! fuzz corpus for the SSE parser, the chunk parser and the scenario loader.
//!
//! All traffic stays on 127.0.0.1; every child process runs under a watchdog. RELIABILITY.md
//! lists each case with the test that proves it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ladder::results::{ResultDir, RunStatus};

mod support;
use support::*;

// ---- the fault matrix ---------------------------------------------------------------------

/// Runs a full ladder (2 rungs × 3 requests, 3 s timeout) against a server that answers the
/// preflight correctly and then misbehaves; returns the loaded folder and the output.
fn run_fault(fault: Fault) -> (ResultDir, Ran, tempfile::TempDir) {
    let server = fault_server(fault, PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let sc = Sc::new(server.url()).write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&sc, &out, Duration::from_secs(90));
    no_panic(&ran);
    let dir = run_dir(&out).unwrap_or_else(|| panic!("{fault:?}: no folder\n{}", ran.all()));
    let rd = check_folder(&dir);
    assert_finished(&ran, &rd);
    assert_eq!(rd.info.status, RunStatus::Complete, "{fault:?}");
    assert_eq!(rd.rungs.len(), 2, "{fault:?}");
    // Every measured request reached the server (plus the two probes); one closed with no answer
    // is sent exactly once more, on a new connection (client::send, `resent`).
    let sends = if fault == Fault::AcceptClose { 2 } else { 1 };
    assert_eq!(
        server.posts.load(Ordering::SeqCst),
        PROBES + sends * 6,
        "{fault:?}"
    );
    for g in &rd.rungs {
        for l in rd.requests(g).unwrap() {
            assert_eq!(
                l.resent,
                fault == Fault::AcceptClose,
                "{fault:?}: {}",
                l.index
            );
        }
    }
    (rd, ran, tmp)
}

/// The error classes and worst end-to-end time of every measured request of a run.
fn classes(rd: &ResultDir) -> (Vec<Option<String>>, f64) {
    let mut out = Vec::new();
    let mut worst: f64 = 0.0;
    for rung in &rd.rungs {
        for l in rd.requests(rung).unwrap() {
            out.push(l.error_class.map(|c| {
                serde_json::to_value(c)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            }));
            worst = worst.max(l.e2e_ms);
        }
    }
    (out, worst)
}

#[test]
fn fault_matrix_every_request_ends_in_one_class_and_the_run_finishes() {
    // (fault, the class every measured request must land in; None = success)
    let cases = [
        (Fault::AcceptClose, Some("reset")),
        (Fault::Garbage, Some("malformed")),
        (Fault::HeadersStall, Some("timeout")),
        (Fault::HugeLine, Some("malformed")),
        (Fault::CloseMidChunk, Some("reset")),
        (Fault::Http10NoLength, None),
        (Fault::SlowDrip, Some("timeout")),
    ];
    // Run the cases side by side: each one is mostly waiting on timeouts.
    let handles: Vec<_> = cases
        .into_iter()
        .map(|(fault, want)| thread::spawn(move || (fault, want, run_fault(fault))))
        .collect();
    for h in handles {
        let (fault, want, (rd, ran, _tmp)) = h.join().unwrap();
        let (got, worst_ms) = classes(&rd);
        assert_eq!(got.len(), 6, "{fault:?}");
        for c in &got {
            assert_eq!(c.as_deref(), want, "{fault:?}: {got:?}\n{}", ran.all());
        }
        // Every request ended within its 3 s timeout (generous slack for a loaded machine).
        assert!(worst_ms < 3000.0 + 5000.0, "{fault:?}: e2e {worst_ms} ms");
        if fault == Fault::HugeLine {
            let detail = rd
                .requests(&rd.rungs[0])
                .unwrap()
                .into_iter()
                .find_map(|l| l.error_detail)
                .unwrap();
            assert!(detail.contains("exceeded 1048576 bytes"), "{detail}");
        }
    }
}

#[test]
fn preflight_failures_are_reported_not_panicked() {
    // Faults hit on the probe itself: preflight stops the run with exit 2 and no folder.
    for fault in [Fault::AcceptClose, Fault::Garbage, Fault::HugeLine] {
        let server = fault_server(fault, 0);
        let tmp = tempfile::tempdir().unwrap();
        let sc = Sc::new(server.url()).write(tmp.path());
        let out = tmp.path().join("out");
        let ran = run_ladder(&sc, &out, Duration::from_secs(60));
        no_panic(&ran);
        assert_eq!(ran.status.code(), Some(2), "{fault:?}\n{}", ran.all());
        assert!(ran.stderr.contains("preflight failed"), "{}", ran.stderr);
        assert!(run_dir(&out).is_none(), "{fault:?}: a folder without load");
        // A probe closed with no answer is sent once more (client::send), then given up.
        let sends = if fault == Fault::AcceptClose { 2 } else { 1 };
        assert_eq!(server.posts.load(Ordering::SeqCst), sends, "{fault:?}");
    }
}

// ---- server restart mid-rung --------------------------------------------------------------

fn start_sim(port: u16) -> Option<(Child, SocketAddr)> {
    let mut c = Command::new(BIN)
        .args([
            "sim",
            "--port",
            &port.to_string(),
            "--served-model-names",
            "m",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(c.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    match first.trim().strip_prefix("listening on http://") {
        Some(a) => Some((c, a.parse().unwrap())),
        None => {
            let _ = c.kill();
            let _ = c.wait();
            None
        }
    }
}

#[test]
fn server_restart_mid_rung_counts_errors_and_the_run_continues() {
    let (mut sim, addr) = start_sim(0).expect("sim starts");
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(format!("http://{addr}"));
    sc.n = 60;
    sc.baseline = 10.0; // 6 s of load
    sc.rates = "[20]";
    sc.timeout = "5s";
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let live = spawn_run(&path, &out);
    live.wait_line("writing", Duration::from_secs(60));
    thread::sleep(Duration::from_secs(2));
    sim.kill().unwrap();
    sim.wait().unwrap();
    thread::sleep(Duration::from_millis(1500));
    let mut restarted = None;
    for _ in 0..50 {
        if let Some(s) = start_sim(addr.port()) {
            restarted = Some(s);
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    let (mut sim2, _) = restarted.expect("the simulator restarts on the same port");
    let ran = live.finish(Duration::from_secs(120));
    let _ = sim2.kill();
    let _ = sim2.wait();
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());
    let rd = check_folder(&run_dir(&out).unwrap());
    assert_eq!(rd.info.status, RunStatus::Complete);
    let first = &rd.rungs[0].summary;
    let broken = first.errors_by_class["connect"] + first.errors_by_class["reset"];
    assert!(broken > 0, "{:?}", first.errors_by_class);
    assert_eq!(
        broken, first.failed,
        "only connect/reset errors: {:?}",
        first.errors_by_class
    );
    assert!(first.completed > 0);
    // After the restart the next rung is served again.
    assert!(
        rd.rungs[1].summary.completed > 0,
        "{:?}",
        rd.rungs[1].summary
    );
}

// ---- interruption -------------------------------------------------------------------------

fn interrupted_folder(out: &Path, ran: &Ran) -> ResultDir {
    no_panic(ran);
    // Documented: an interrupted run exits 2 (unusable as a complete run).
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    assert!(ran.stderr.contains("interrupted:"), "{}", ran.stderr);
    let rd = check_folder(&run_dir(out).expect("a folder"));
    assert_eq!(rd.info.status, RunStatus::Interrupted);
    assert!(rd.info.ended_at.is_some());
    rd
}

#[test]
fn signal_mid_rung_keeps_a_valid_folder() {
    for sig in ["INT", "TERM"] {
        let server = fault_server(Fault::None, 0);
        let tmp = tempfile::tempdir().unwrap();
        let mut sc = Sc::new(server.url());
        sc.n = 400;
        sc.baseline = 10.0; // 40 s rung
        sc.rates = "[20]";
        let path = sc.write(tmp.path());
        let out = tmp.path().join("out");
        let live = spawn_run(&path, &out);
        // Mid-rung: preflight's two probes (the short one and the longest prompt) and at
        // least five of the rung's requests have reached the server, so at least five lines
        // are written (each finishes in the grace). Waiting for six posts left this racing
        // the next arrival: four rung requests, then the signal.
        let end = Instant::now() + Duration::from_secs(60);
        while server.posts.load(Ordering::SeqCst) < 7 {
            assert!(Instant::now() < end, "{sig}: the rung never started");
            thread::sleep(Duration::from_millis(50));
        }
        live.signal(sig);
        let ran = live.finish(Duration::from_secs(40));
        let rd = interrupted_folder(&out, &ran);
        assert_eq!(rd.rungs.len(), 1, "{sig}");
        assert!(
            !rd.rungs[0].entry.complete,
            "{sig}: the partial rung says so"
        );
        let lines = rd.requests(&rd.rungs[0]).unwrap();
        assert!(
            lines.len() >= 5 && lines.len() < 400,
            "{sig}: {}",
            lines.len()
        );
        assert!(
            lines.iter().all(|l| l.ok),
            "{sig}: in-flight requests finished in the grace"
        );
    }
}

#[test]
fn signal_during_cooldown_keeps_finished_rungs_complete() {
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new("sim");
    sc.n = 5;
    sc.baseline = 50.0;
    sc.rates = "[100]";
    sc.cooldown = "120s";
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let live = spawn_run(&path, &out);
    live.wait_line("writing", Duration::from_secs(60));
    // Wait until run.json lists the first rung: the run is now in its cooldown.
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = run_dir(&out)
            .and_then(|d| std::fs::read(d.join("run.json")).ok())
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v["rungs"].as_array().is_some_and(|r| r.len() == 1));
        if listed {
            break;
        }
        assert!(Instant::now() < end, "the first rung never finished");
        thread::sleep(Duration::from_millis(100));
    }
    live.signal("TERM");
    // Well before the 120 s cooldown would end.
    let ran = live.finish(Duration::from_secs(30));
    let rd = interrupted_folder(&out, &ran);
    assert_eq!(rd.rungs.len(), 1);
    assert!(rd.rungs[0].entry.complete);
    assert_eq!(rd.rungs[0].summary.completed, 5);
    assert!(
        ran.stderr.contains("1 of 2 rungs complete"),
        "{}",
        ran.stderr
    );
}

#[test]
fn signal_during_preflight_stops_without_a_folder() {
    // The third case starts ladder with SIGINT ignored, as a shell starts a background job:
    // its stop handler, installed before preflight, still ends the run.
    for (sig, inherit_ignored) in [("INT", false), ("TERM", false), ("INT", true)] {
        let server = fault_server(Fault::StallModels, 0);
        let tmp = tempfile::tempdir().unwrap();
        let mut sc = Sc::new(server.url());
        sc.timeout = "60s";
        let path = sc.write(tmp.path());
        let out = tmp.path().join("out");
        let mut cmd = ladder_cmd(&[
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        if inherit_ignored {
            use std::os::unix::process::CommandExt;
            // SAFETY: signal(2) is async-signal-safe, as pre_exec requires.
            unsafe {
                cmd.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_IGN);
                    Ok(())
                });
            }
        }
        let live = spawn(cmd);
        live.wait_line("preflight:", Duration::from_secs(60));
        // Wait until the models request is in (preflight is blocked on it).
        let end = Instant::now() + Duration::from_secs(30);
        while server.heads.lock().unwrap().is_empty() {
            assert!(Instant::now() < end);
            thread::sleep(Duration::from_millis(50));
        }
        live.signal(sig);
        let ran = live.finish(Duration::from_secs(30));
        no_panic(&ran);
        assert_eq!(ran.status.code(), Some(2), "{sig}: {}", ran.stderr);
        assert!(
            ran.stderr.contains(&format!(
                "stopped by SIG{sig} during preflight; no load was sent"
            )),
            "{sig}: {}",
            ran.stderr
        );
        // Nothing was measured yet: no folder, and no load request was sent.
        assert!(run_dir(&out).is_none(), "{sig}");
        assert_eq!(server.posts.load(Ordering::SeqCst), 0, "{sig}");
    }
}

// ---- output folder problems ---------------------------------------------------------------

#[test]
fn unwritable_output_fails_before_the_load() {
    let server = fault_server(Fault::None, 0);
    let tmp = tempfile::tempdir().unwrap();
    let sc = Sc::new(server.url()).write(tmp.path());
    let not_a_dir = tmp.path().join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let ran = run_ladder(&sc, &not_a_dir, Duration::from_secs(60));
    no_panic(&ran);
    assert_eq!(ran.status.code(), Some(2));
    assert!(
        ran.stderr.contains("cannot write results under"),
        "{}",
        ran.stderr
    );
    // Only the preflight probes were sent: no rung started.
    assert_eq!(server.posts.load(Ordering::SeqCst), PROBES);
}

#[test]
fn full_disk_never_leaves_a_json_claiming_completion() {
    let mnt = tempfile::tempdir().unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=12k", "tmpfs"])
        .arg(mnt.path())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        support::skip::skip(
            "reliability::full_disk_never_leaves_a_json_claiming_completion",
            "cannot mount a tmpfs here (needs root)",
        );
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(mnt.path());
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new("sim");
    sc.n = 200; // ~80 KB of request lines: more than the 12 KB disk
    sc.baseline = 200.0;
    sc.rates = "[400]";
    let path = sc.write(tmp.path());
    let out = mnt.path().join("out");
    let ran = run_ladder(&path, &out, Duration::from_secs(120));
    no_panic(&ran);
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    assert!(ran.stderr.contains("No space left"), "{}", ran.stderr);
    let dir = run_dir(&out).expect("run.json fitted");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "temp file left: {name}");
        if name.ends_with(".json") {
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(&p).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        names.push(name);
    }
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_ne!(info["status"], "complete", "{info}");
    assert!(
        !names.iter().any(|n| n.starts_with("requests_")),
        "{names:?}"
    );
}

// ---- secrets ------------------------------------------------------------------------------

#[test]
fn key_echoed_by_the_server_never_reaches_files_or_output() {
    let server = fault_server(Fault::EchoKey, PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.key = true;
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&path, &out, Duration::from_secs(60));
    no_panic(&ran);
    // The server really did receive (and echo) the key.
    assert!(server.heads.lock().unwrap().iter().any(|h| h.contains(KEY)));
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    assert_finished(&ran, &rd);
    let (got, _) = classes(&rd);
    assert!(
        got.iter().any(|c| c.as_deref() == Some("server_5xx")),
        "{got:?}"
    );
    assert!(
        got.iter().any(|c| c.as_deref() == Some("stream_error")),
        "{got:?}"
    );
    // The echoed text is kept, with the key replaced.
    let files = all_text_under(&dir);
    assert!(files.contains("Bearer ***"), "redacted echo kept");
    // Reports rendered from the folder.
    let report_dir = tmp.path().join("report");
    let rep = ladder_cmd(&[
        "report",
        dir.to_str().unwrap(),
        "--out",
        report_dir.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let rep_out = format!(
        "{}{}",
        String::from_utf8_lossy(&rep.stdout),
        String::from_utf8_lossy(&rep.stderr)
    );
    let reports = if report_dir.exists() {
        all_text_under(&report_dir)
    } else {
        String::new()
    };
    for (what, text) in [
        ("stdout/stderr", ran.all()),
        ("result files", files),
        ("report output", rep_out),
        ("report files", reports),
    ] {
        assert!(!text.contains(KEY), "the key leaked into {what}");
        assert!(
            !text.contains("SECRET-4242"),
            "part of the key leaked into {what}"
        );
    }
}

#[test]
fn key_echoed_at_preflight_is_redacted_in_the_error() {
    let server = fault_server(Fault::ModelsEchoKey401, 0);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.key = true;
    let path = sc.write(tmp.path());
    let ran = run_ladder(&path, &tmp.path().join("out"), Duration::from_secs(60));
    no_panic(&ran);
    assert_eq!(ran.status.code(), Some(2));
    assert!(ran.stderr.contains("401"), "{}", ran.stderr);
    assert!(!ran.all().contains(KEY), "{}", ran.all());
}

#[test]
fn authorization_is_not_forwarded_on_a_redirect_to_another_port() {
    let other = fault_server(Fault::None, 0);
    let server = fault_server(Fault::RedirectTo(other.addr.port()), PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.key = true;
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&path, &out, Duration::from_secs(60));
    no_panic(&ran);
    let rd = check_folder(&run_dir(&out).unwrap());
    assert_finished(&ran, &rd);
    let (got, _) = classes(&rd);
    assert!(
        got.iter().all(|c| c.as_deref() == Some("client_4xx")),
        "a cross-origin redirect is a client error: {got:?}"
    );
    for h in other.heads.lock().unwrap().iter() {
        assert!(!h.to_ascii_lowercase().contains("authorization"), "{h}");
        assert!(!h.contains(KEY));
    }
    assert!(!ran.all().contains(KEY));
}

/// A warning said at preflight (the model is not among the served ones) is said once, and
/// reaches run.json, summary.md and report.html, not only the terminal.
#[test]
fn preflight_warnings_reach_run_json_and_the_reports() {
    let server = fault_server(Fault::None, 0);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.model = "not-served";
    let p = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&p, &out, Duration::from_secs(60));
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());
    let said = "model `not-served` is not in";
    assert_eq!(ran.stderr.matches(said).count(), 1, "{}", ran.stderr);
    let dir = run_dir(&out).expect("a result folder");
    let rd = check_folder(&dir);
    assert!(
        rd.info.warnings.iter().any(|w| w.contains(said)),
        "{:?}",
        rd.info.warnings
    );
    for f in ["summary.md", "report.html"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(text.contains(said), "{f} lacks the warning:\n{text}");
    }
}

#[test]
fn key_over_plain_http_warns_only_off_loopback() {
    use ladder::client::{ApiKey, Client, ClientConfig};
    // Building a client sends nothing, so off-loopback URLs are safe to check here.
    let warns = |url: &str| {
        let c = Client::new(ClientConfig {
            base_url: url.to_string(),
            api: ladder::scenario::Api::Completions,
            api_key: Some(ApiKey::new(KEY.to_string())),
            model: "m".into(),
            request_timeout: Duration::from_secs(5),
            ttft_timeout: None,
            headers: Default::default(),
            ignore_eos: true,
            max_connections: 4,
            extra_body: Default::default(),
        })
        .unwrap();
        let w = c.warnings().to_vec();
        assert!(w.iter().all(|m| !m.contains(KEY)), "{w:?}");
        !w.is_empty()
    };
    for url in [
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "http://[::1]:8000",
        "http://127.0.0.2:9",
        "https://gpu-box.internal:8000",
    ] {
        assert!(!warns(url), "{url}");
    }
    for url in [
        "http://gpu-box.internal:8000",
        "http://10.0.0.5:8000",
        "http://localhost.evil.example",
        "http://127.0.0.1.nip.io",
    ] {
        assert!(warns(url), "{url}");
    }
}

// ---- resource limits ----------------------------------------------------------------------

fn ladder_under_ulimit(ulimit: &str, scenario: &Path, out: &Path) -> Ran {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("{ulimit} && exec \"$0\" run \"$1\" --out \"$2\""))
        .arg(BIN)
        .arg(scenario)
        .arg(out)
        .env(KEY_VAR, KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    spawn(c).finish(Duration::from_secs(180))
}

#[test]
fn open_file_limit_is_raised_or_refused_before_the_load() {
    // 300 requests in flight at once against the in-process simulator: ~600 descriptors.
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new("sim");
    sc.n = 300;
    sc.output_tokens = 16;
    sc.baseline = 2000.0;
    sc.rates = "[4000]";
    sc.max_concurrency = Some(300);
    sc.timeout = "60s";
    sc.extra = "sim:\n  max_num_seqs: 512\n  max_waiting: 1024\n  kv_cache_tokens: 1000000\n";
    let path = sc.write(tmp.path());

    // Soft limit 64, hard limit high: raised, and every request succeeds.
    let out = tmp.path().join("out");
    let ran = ladder_under_ulimit("ulimit -Sn 64", &path, &out);
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());
    assert!(
        ran.stderr.contains("raised the open-file limit"),
        "{}",
        ran.stderr
    );
    let rd = check_folder(&run_dir(&out).unwrap());
    for r in &rd.rungs {
        assert_eq!(r.summary.failed, 0, "{:?}", r.summary.errors_by_class);
    }

    // Hard limit 64: a clear error before any load, no folder.
    let out2 = tmp.path().join("out2");
    let ran = ladder_under_ulimit("ulimit -n 64", &path, &out2);
    no_panic(&ran);
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    assert!(ran.stderr.contains("max_concurrency 300"), "{}", ran.stderr);
    assert!(ran.stderr.contains("hard limit is 64"), "{}", ran.stderr);
    assert!(run_dir(&out2).is_none());
}

// ---- fuzzing: corpus replay plus seeded mutations -----------------------------------------
//
// cargo-fuzz needs a nightly toolchain; CI has stable only. So `cargo test` replays the
// committed corpus under tests/corpus/fuzz/ and a fixed number of seeded mutations of each
// file (LADDER_FUZZ_ITERS, default 200; raise it for a longer local run). Properties: no
// panic, no hang (a watchdog), memory bounded by the parser's line cap, and the SSE events
// do not depend on how the bytes were split into reads.

use ladder::client::chunk;
use ladder::client::sse::{SseError, SseParser};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn corpus(kind: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/fuzz")
        .join(kind);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

fn iterations() -> usize {
    std::env::var("LADDER_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// One mutation of `input`: bit flips, inserted framing bytes, duplicated or cut ranges.
fn mutate(rng: &mut ChaCha8Rng, input: &[u8]) -> Vec<u8> {
    const TOKENS: &[&[u8]] = &[
        b"\n", b"\r", b"\r\n", b"\n\n", b"data:", b"data: ", b":", b"[DONE]", b"{", b"}", b"\"",
        b"\\u0000", b"\xff", b"\x00", b"*a", b"&a ", b"- ", b"[", b"]", b"{{", b"}}",
    ];
    let mut v = input.to_vec();
    for _ in 0..rng.gen_range(1..6) {
        let at = rng.gen_range(0..=v.len());
        match rng.gen_range(0..5) {
            0 if !v.is_empty() => {
                let i = rng.gen_range(0..v.len());
                v[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => {
                let t = TOKENS[rng.gen_range(0..TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            2 if !v.is_empty() => {
                let end = rng.gen_range(at..=v.len());
                let copy = v[at..end].to_vec();
                v.splice(end..end, copy);
            }
            3 => v.truncate(at),
            _ => {
                let end = rng.gen_range(at..=v.len());
                v.drain(at..end);
            }
        }
    }
    v
}

/// Runs `f` on a thread and fails (instead of hanging) when it takes longer than `limit`.
fn with_watchdog(name: &str, limit: Duration, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(limit) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p)
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{name}: no result within {limit:?} (hang?)")
        }
    }
}

/// Events (and the error) of `input` fed in reads of the given sizes.
fn sse_events(input: &[u8], cuts: &[usize], max_line: usize) -> (Vec<Vec<u8>>, Option<SseError>) {
    let mut p = SseParser::new(max_line);
    let mut events = Vec::new();
    let mut rest = input;
    for &n in cuts {
        let n = n.min(rest.len());
        let (read, tail) = rest.split_at(n);
        rest = tail;
        if let Err(e) = p.feed(read, |d| {
            events.push(d.to_vec());
            true
        }) {
            return (events, Some(e));
        }
    }
    if let Err(e) = p.feed(rest, |d| {
        events.push(d.to_vec());
        true
    }) {
        return (events, Some(e));
    }
    let err = p
        .finish(|d| {
            events.push(d.to_vec());
            true
        })
        .err();
    (events, err)
}

#[test]
fn fuzz_sse_and_chunk_parsers_replay_corpus_and_mutations() {
    let limit = Duration::from_secs(60) + Duration::from_millis(10) * iterations() as u32;
    with_watchdog("sse fuzz", limit, || {
        let mut inputs: Vec<Vec<u8>> = corpus("sse").into_iter().map(|(_, b)| b).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let seeds = inputs.clone();
        for _ in 0..iterations() {
            let s = &seeds[rng.gen_range(0..seeds.len())];
            inputs.push(mutate(&mut rng, s));
        }
        for input in &inputs {
            // Split-independence: one read, one byte per read, random reads.
            let (whole, err) = sse_events(input, &[], 256);
            let bytes = sse_events(input, &vec![1; input.len()], 256);
            assert_eq!(
                (&whole, &err),
                (&bytes.0, &bytes.1),
                "{:?}",
                String::from_utf8_lossy(input)
            );
            let mut cuts = Vec::new();
            let mut left = input.len();
            while left > 0 {
                let n = rng.gen_range(1..=left.min(64));
                cuts.push(n);
                left -= n;
            }
            let random = sse_events(input, &cuts, 256);
            assert_eq!((&whole, &err), (&random.0, &random.1));
            // No event is longer than the cap; every event's data goes through the chunk parser.
            for ev in &whole {
                assert!(ev.len() <= 256, "event of {} bytes", ev.len());
                let _ = chunk::parse(ev);
            }
        }
        // Whole chunk documents (non-streaming bodies) and their mutations.
        let docs: Vec<Vec<u8>> = corpus("chunk").into_iter().map(|(_, b)| b).collect();
        for d in &docs {
            let _ = chunk::parse(d);
            for _ in 0..iterations() {
                let m = mutate(&mut rng, d);
                let _ = chunk::parse(&m);
            }
        }
        assert_eq!(chunk::parse(b"[DONE]"), chunk::Chunk::Done);
        assert!(matches!(chunk::parse(&docs[1]), chunk::Chunk::Data { .. }));
        // A deeply nested document is refused, not a stack overflow.
        let deep = vec![b'['; 100_000];
        assert!(matches!(chunk::parse(&deep), chunk::Chunk::Malformed(_)));
    });
}

#[test]
fn fuzz_sse_memory_is_bounded_by_the_line_cap() {
    // No newline at all, and an endless event of short lines: both refused at the cap, and the
    // parser stays failed instead of buffering what follows.
    let cap = 4096;
    let mut p = SseParser::new(cap);
    let mut err = None;
    for _ in 0..1024 {
        if let Err(e) = p.feed(&[b'a'; 1024], |_| true) {
            err = Some(e);
            break;
        }
    }
    assert_eq!(err, Some(SseError::TooLong { limit: cap }));
    assert!(p
        .feed(b"\n\n", |_| panic!("no event after failure"))
        .is_err());

    let mut p = SseParser::new(cap);
    let mut err = None;
    for _ in 0..100_000 {
        if let Err(e) = p.feed(b"data: x\n", |_| panic!("no blank line, no event")) {
            err = Some(e);
            break;
        }
    }
    assert_eq!(err, Some(SseError::TooLong { limit: cap }));
}

#[test]
fn fuzz_scenario_loader_replays_corpus_and_mutations() {
    let limit = Duration::from_secs(60) + Duration::from_millis(50) * iterations() as u32;
    with_watchdog("scenario fuzz", limit, || {
        let tmp = tempfile::tempdir().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(88);
        let seeds = corpus("scenario");
        // The known-good seed loads (the tokenizer path is resolved, not opened, by `load`).
        let mut n = 0;
        let mut slowest = (Duration::ZERO, Vec::new());
        let mut check = |name: &str, bytes: &[u8]| {
            let t = Instant::now();
            let p = tmp.path().join(format!("{n}.yaml"));
            n += 1;
            std::fs::write(&p, bytes).unwrap();
            let r = std::panic::catch_unwind(|| {
                let _ = ladder::scenario::load(&p);
                let _ = ladder::scenario::check_file(&p, None);
            });
            assert!(
                r.is_ok(),
                "the loader panicked on a mutation of {name}:\n{}",
                String::from_utf8_lossy(bytes)
            );
            let _ = std::fs::remove_file(&p);
            if t.elapsed() > slowest.0 {
                slowest = (t.elapsed(), bytes.to_vec());
            }
        };
        for (name, bytes) in &seeds {
            check(name, bytes);
        }
        for _ in 0..iterations() {
            let (name, bytes) = &seeds[rng.gen_range(0..seeds.len())];
            check(name, &mutate(&mut rng, bytes));
        }
        eprintln!(
            "slowest scenario input: {:?}, {} bytes",
            slowest.0,
            slowest.1.len()
        );
        // Over the size cap: refused without being parsed.
        let big = tmp.path().join("big.yaml");
        std::fs::write(
            &big,
            vec![b'#'; ladder::scenario::MAX_SCENARIO_BYTES as usize + 1],
        )
        .unwrap();
        let err = ladder::scenario::load(&big).unwrap_err().to_string();
        assert!(err.contains("KiB") || err.contains("large"), "{err}");
    });
}
