//! Hardening of the client side: failures of the client's own resources are not server
//! overload, timeouts stay exact while outputs are re-tokenized, a second Ctrl-C stops at
//! once, and every CLI error starts with `error:`.

mod support;
use support::*;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use ladder::results::RunStatus;

/// `ladder run` under a shell `ulimit` (a hard limit: the runner cannot raise it).
fn run_under_ulimit(ulimit: &str, scenario: &Path, out: &Path) -> Ran {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("{ulimit} && exec \"$0\" run \"$1\" --out \"$2\""))
        .arg(BIN)
        .arg(scenario)
        .arg(out)
        .env(KEY_VAR, KEY)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    spawn(c).finish(Duration::from_secs(120))
}

// ---- client-side resource limits ----------------------------------------------------------

#[test]
fn out_of_open_files_is_the_clients_failure_not_server_overload() {
    // Every request is held open 1.5 s, 60 arrive at once: with the hard open-file limit at
    // 40 (no max_concurrency, so only a warning before the load) about half cannot open a
    // socket (EMFILE).
    let server = fault_server(Fault::HoldMs(1500), PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.n = 60;
    sc.baseline = 500.0;
    sc.rates = "[1000]";
    sc.timeout = "20s";
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_under_ulimit("ulimit -n 40", &path, &out);
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());
    let dir = run_dir(&out).expect("a folder");
    let rd = check_folder(&dir);
    let mut limited = 0;
    for r in &rd.rungs {
        let s = &r.summary;
        let client = s.errors_by_class["client_resource"];
        // Nothing the client could not send is blamed on the server or the network.
        for k in ["connect", "reset", "server_5xx", "timeout"] {
            assert_eq!(s.errors_by_class[k], 0, "{k}: {:?}", s.errors_by_class);
        }
        assert_eq!(client, s.failed, "{:?}", s.errors_by_class);
        if client > 0 {
            limited += 1;
            let lines = rd.requests(r).unwrap();
            let l = lines.iter().find(|l| !l.ok).unwrap();
            let detail = l.error_detail.as_deref().unwrap_or_default();
            assert!(
                detail.contains("open files") && detail.contains("ulimit -n"),
                "{detail}"
            );
        }
    }
    assert!(limited > 0, "no request hit the limit: {}", ran.all());
    // A warning naming the limit and the fixes; never "overloaded"; the analysis leaves
    // the rungs out of the knee.
    let all = ran.all();
    assert!(
        all.contains("failed on the client, not the server"),
        "{all}"
    );
    for fix in [
        "ulimit -n",
        "net.ipv4.ip_local_port_range",
        "max_concurrency",
    ] {
        assert!(all.contains(fix), "{fix}: {all}");
    }
    assert!(!all.contains("overloaded"), "{all}");
    assert!(all.contains("Client-limited rungs:"), "{all}");
    let analysis: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("analysis.json")).unwrap()).unwrap();
    assert!(analysis["knee"].is_null(), "{analysis}");
    assert!(
        !analysis["client_limited"].as_array().unwrap().is_empty(),
        "{analysis}"
    );

    // compare (and so gate) does not use such a rung; when none is left it says why.
    let d = dir.to_str().unwrap();
    let cmp = spawn(ladder_cmd(&["compare", d, d])).finish(Duration::from_secs(60));
    no_panic(&cmp);
    let all = cmp.all();
    assert!(all.contains("failed on the client"), "{all}");
    // bless refuses such a baseline (unless --force).
    let golden = tmp.path().join("golden");
    let bl = spawn(ladder_cmd(&[
        "bless",
        d,
        "--golden",
        golden.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    assert_eq!(bl.status.code(), Some(2), "{}", bl.all());
    assert!(
        bl.stderr.starts_with("error: refusing to bless") && bl.stderr.contains("client-side"),
        "{}",
        bl.stderr
    );
    assert!(!golden.join("rel").exists());
    if limited == rd.rungs.len() {
        assert_eq!(cmp.status.code(), Some(2), "{all}");
        assert!(cmp.stderr.starts_with("error: "), "{}", cmp.stderr);
        assert!(all.contains("client-side resource limit"), "{all}");
    }
}

#[test]
fn out_of_open_files_against_the_sim_is_the_clients_never_connect() {
    // The simulator (its own process, its own limits) holds each stream ≈ 1.5 s (60 tokens,
    // 25 ms steps); 80 requests arrive within ≈ 0.1 s while `ladder run` has a hard limit of
    // 40 open files, so later requests cannot open a socket (EMFILE).
    let sim = serve::SimProc::start(&[
        "--served-model-names",
        "m",
        "--step-base-ms",
        "25",
        "--step-per-seq-ms",
        "0",
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(sim.url());
    sc.n = 80;
    sc.output_tokens = 60;
    sc.baseline = 800.0;
    sc.rates = "[1000]";
    sc.timeout = "30s";
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_under_ulimit("ulimit -n 40", &path, &out);
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());
    let dir = run_dir(&out).expect("a folder");
    let rd = check_folder(&dir);
    let mut limited = 0;
    for r in &rd.rungs {
        let s = &r.summary;
        // Not one request the client could not open is blamed on the server.
        for k in ["connect", "reset", "server_5xx", "timeout", "malformed"] {
            assert_eq!(s.errors_by_class[k], 0, "{k}: {:?}", s.errors_by_class);
        }
        let client = s.errors_by_class["client_resource"];
        assert_eq!(client, s.failed, "{:?}", s.errors_by_class);
        if client == 0 {
            continue;
        }
        limited += 1;
        for l in rd.requests(r).unwrap().iter().filter(|l| !l.ok) {
            let detail = l.error_detail.as_deref().unwrap_or_default();
            // The per-request detail names the limit as it stood and the fix.
            assert!(
                detail.contains("ran out of open files (ulimit -n is 40, hard limit 40)")
                    && detail.contains("ulimit -n 65536")
                    && detail.contains("max_concurrency"),
                "{detail}"
            );
        }
    }
    assert!(limited > 0, "no request hit the limit: {}", ran.all());
    // The terminal warning names the class, the limit as it stands and the fixes, and the
    // same words are kept in run.json; never "overloaded", never a knee.
    let all = ran.all();
    for want in [
        "failed on the client, not the server",
        "client_resource",
        "open-file limit (ulimit -n) 40 (hard 40)",
        "ulimit -n 65536",
        "max_concurrency",
    ] {
        assert!(all.contains(want), "{want}: {all}");
    }
    assert!(!all.contains("overloaded"), "{all}");
    let run_json = std::fs::read_to_string(dir.join("run.json")).unwrap();
    assert!(
        run_json.contains("open-file limit (ulimit -n) 40 (hard 40)"),
        "{run_json}"
    );
    let analysis: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("analysis.json")).unwrap()).unwrap();
    assert!(analysis["knee"].is_null(), "{analysis}");
}

#[test]
fn under_any_low_open_file_limit_the_error_names_the_limit_never_the_server() {
    // From limits where the process could not even start its runtime up to ones where the
    // run passes: no panic, and every failure names the client's open-file limit and the
    // fix; none blames the server. (Whether a limit fails at start-up, at preflight or in
    // the rung depends on how many descriptors this platform's runtime takes.)
    let sim = serve::SimProc::start(&["--served-model-names", "m"]);
    let tmp = tempfile::tempdir().unwrap();
    let path = Sc::new(sim.url()).write(tmp.path());
    let mut passed = 0;
    for limit in 4..=24 {
        let out = tmp.path().join(format!("out{limit}"));
        let ran = run_under_ulimit(&format!("ulimit -n {limit}"), &path, &out);
        no_panic(&ran);
        let err = &ran.stderr;
        for wrong in [
            "refused",
            "is the server running",
            "unreachable",
            "timed out",
        ] {
            assert!(!err.contains(wrong), "{limit}: {wrong}: {err}");
        }
        if ran.status.success() {
            passed += 1;
            continue;
        }
        assert!(
            err.contains("ulimit -n") && err.contains("65536"),
            "{limit}: {err}"
        );
        if err.contains("error: preflight failed: this machine could not send") {
            assert!(
                err.contains("the server was not tried")
                    && err.contains("ran out of open files (ulimit -n is "),
                "{limit}: {err}"
            );
        } else if err.contains("error: preflight failed") {
            assert!(
                err.contains("too low for ladder to start"),
                "{limit}: {err}"
            );
        }
    }
    assert!(passed > 0, "not even 24 descriptors were enough");
}

// ---- exact timeouts while outputs are re-tokenized ----------------------------------------

#[test]
fn retokenizing_large_outputs_keeps_timeouts_exact_and_dispatch_on_time() {
    // Every request gets 256 KiB of text with no usage chunk, then the server holds the
    // stream open: each times out at 3 s with a large text to re-tokenize. Arrivals span
    // past the first timeouts, so counting overlaps dispatch and other requests' timeouts.
    let server = fault_server(Fault::BigText(256, false), PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.n = 20;
    sc.baseline = 5.0;
    sc.rates = "[8]";
    sc.timeout = "3s";
    sc.output_tokens = 100_000;
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&path, &out, Duration::from_secs(240));
    no_panic(&ran);
    let rd = check_folder(&run_dir(&out).unwrap());
    assert_finished(&ran, &rd);
    assert_eq!(rd.rungs.len(), 2);
    for r in &rd.rungs {
        let s = &r.summary;
        assert_eq!(s.errors_by_class["timeout"], 20, "{:?}", s.errors_by_class);
        for l in rd.requests(r).unwrap() {
            let e2e = l.e2e_ms;
            let lag = l.sent_ms - l.scheduled_ms;
            // Counted from the text (256 chunks of 200 words), off the async workers.
            assert_eq!(l.token_source, ladder::record::TokenSource::Retokenized);
            assert!(l.output_tokens > 256, "{}", l.output_tokens);
            // At the bound, not after other requests' counting: generous for a shared machine.
            assert!(
                (2900.0..5000.0).contains(&e2e),
                "rung {}: request {} ended after {e2e} ms with a 3 s timeout",
                s.rate,
                l.index
            );
            assert!(
                lag < 500.0,
                "rung {}: request {} sent {lag} ms late",
                s.rate,
                l.index
            );
        }
    }
}

// ---- a second Ctrl-C ----------------------------------------------------------------------

#[test]
fn a_second_signal_stops_at_once_with_a_valid_folder() {
    for (first, second) in [("INT", "INT"), ("TERM", "INT")] {
        // The two probes, the 5 baseline requests and the first 3 of the second rung are answered;
        // the other 5 are held for 30 s, far past the 10 s grace.
        let server = fault_server(Fault::HoldMs(30_000), PROBES + 8);
        let tmp = tempfile::tempdir().unwrap();
        let mut sc = Sc::new(server.url());
        sc.n = 5;
        sc.baseline = 50.0;
        sc.rates = "[100]";
        sc.timeout = "60s";
        let path = sc.write(tmp.path());
        let out = tmp.path().join("out");
        let live = spawn_run(&path, &out);
        let end = Instant::now() + Duration::from_secs(60);
        while server.posts.load(Ordering::SeqCst) < PROBES + 5 + 5 {
            assert!(Instant::now() < end, "the second rung never started");
            thread::sleep(Duration::from_millis(50));
        }
        thread::sleep(Duration::from_millis(300));
        live.signal(first);
        live.wait_line("Ctrl-C again to stop at once", Duration::from_secs(10));
        thread::sleep(Duration::from_millis(300));
        let second_at = Instant::now();
        live.signal(second);
        let ran = live.finish(Duration::from_secs(30));
        let took = second_at.elapsed();
        no_panic(&ran);
        assert!(
            took < Duration::from_secs(5),
            "{first}+{second}: exited {took:?} after the second signal (the grace is 10 s)"
        );
        assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
        assert!(ran.stderr.contains("stopping now"), "{}", ran.stderr);
        assert!(ran.stderr.contains("error: interrupted:"), "{}", ran.stderr);
        let rd = check_folder(&run_dir(&out).expect("a folder"));
        assert_eq!(rd.info.status, RunStatus::Interrupted);
        assert!(rd.info.ended_at.is_some());
        assert_eq!(rd.rungs.len(), 2, "{first}+{second}");
        assert!(
            rd.rungs[0].entry.complete,
            "the finished rung stays complete"
        );
        assert_eq!(rd.rungs[0].summary.completed, 5);
        assert!(!rd.rungs[1].entry.complete, "the cut rung says so");
        let lines = rd.requests(&rd.rungs[1]).unwrap();
        let (done, cut): (Vec<_>, Vec<_>) = lines.iter().partition(|l| l.ok);
        assert_eq!(
            done.len(),
            3,
            "the requests that finished are kept: {lines:?}"
        );
        // The 2 held ones were abandoned in flight: a line each, class `interrupted`, so the
        // rung's 5 requests all have one.
        assert_eq!(cut.len(), 2, "{lines:?}");
        assert!(cut
            .iter()
            .all(|l| l.error_class == Some(ladder::record::ErrorClass::Interrupted)));
        assert_eq!(rd.rungs[1].summary.interrupted_requests, 2);
        assert_eq!(rd.rungs[1].summary.failed, 0);
    }
}

// ---- messages -----------------------------------------------------------------------------

/// Prefixes of the progress lines `run` and `gate` print before any outcome.
const INFO: [&str; 5] = [
    "started the built-in simulator",
    "preflight",
    "writing ",
    "note: ",
    "warning: ",
];

/// Runs the binary (bounded) in `dir` and returns (exit code, stderr).
fn ladder_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut c = ladder_cmd(args);
    c.current_dir(dir).env_remove("LADDER_UNSET_KEY_VAR");
    let ran = spawn(c).finish(Duration::from_secs(60));
    no_panic(&ran);
    (ran.status.code(), ran.stderr)
}

#[test]
fn every_cli_error_starts_with_error() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // A port with nothing listening: bound, then released.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let good = Sc::new("sim").write(d);
    let good = good.to_str().unwrap().to_string();
    let write = |name: &str, text: String| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let base = std::fs::read_to_string(&good).unwrap();
    let unknown_field = write("unknown.yaml", base.replace("rates:", "ratez:"));
    // The key variable is unset and the server wants a key (the simulator requires the
    // value of $PATH, which is always set): preflight's 401 names the unset variable.
    let no_key = write(
        "nokey.yaml",
        base.replace(
            "  request_timeout:",
            "  api_key_env: LADDER_UNSET_KEY_VAR\n  request_timeout:",
        ) + "sim:\n  api_key_env: PATH\n",
    );
    let down = write(
        "down.yaml",
        base.replace(
            "base_url: sim",
            &format!("base_url: http://127.0.0.1:{closed}"),
        ),
    );
    let no_tok = write(
        "notok.yaml",
        base.replace(
            TOKENIZER,
            &d.join("missing-tokenizer.json").display().to_string(),
        ),
    );
    let a_file = write("a-file", String::new());
    let missing = d.join("missing").display().to_string();
    let no_dir_file = d.join("missing").join("h.html").display().to_string();
    let sim_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = sim_port.local_addr().unwrap().port().to_string();

    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("unknown subcommand", vec!["frobnicate"]),
        ("bad flag value", vec!["run", &good, "--rates", "abc"]),
        (
            "rates not increasing",
            vec!["run", &good, "--rates", "10,5"],
        ),
        ("rates not positive", vec!["run", &good, "--rates", "0"]),
        ("scenario file missing", vec!["run", &missing]),
        ("scenario with an unknown key", vec!["run", &unknown_field]),
        ("key variable unset", vec!["run", &no_key]),
        ("server down", vec!["run", &down]),
        ("tokenizer missing", vec!["run", &no_tok]),
        ("--out is a file", vec!["run", &good, "--out", &a_file]),
        (
            "compare missing folders",
            vec!["compare", &missing, &missing],
        ),
        ("compare a file", vec!["compare", &a_file, &a_file]),
        (
            "bad --threshold",
            vec!["compare", &missing, &missing, "--threshold", "nope"],
        ),
        ("bless missing folder", vec!["bless", &missing]),
        ("report missing folder", vec!["report", &missing]),
        (
            "gate without a golden",
            vec!["gate", &good, "--golden", &missing, "--out", &missing],
        ),
        ("gate a bad scenario", vec!["gate", &unknown_field]),
        ("sim bad setting", vec!["sim", "--speed", "0"]),
        ("sim port in use", vec!["sim", "--port", &busy]),
        ("history missing folder", vec!["history", &missing]),
        ("history a file", vec!["history", &a_file]),
        ("history no folder", vec!["history"]),
        (
            "history --html unwritable",
            vec!["history", d.to_str().unwrap(), "--html", &no_dir_file],
        ),
        (
            "init bad number",
            vec!["init", "--from-vllm", "--num-prompts abc"],
        ),
        (
            "init unbalanced quote",
            vec!["init", "--from-vllm", "\"unbalanced"],
        ),
        ("init rates not increasing", vec!["init", "--rates", "10,5"]),
        (
            "init key variable not a name",
            vec!["init", "--api-key-env", "lower"],
        ),
        (
            "init unsupported scheme",
            vec!["init", "--base-url", "ftp://x"],
        ),
        ("init -o exists", vec!["init", "-o", &a_file]),
        (
            "completions unknown shell",
            vec!["completions", "nosuchshell"],
        ),
        ("completions no shell", vec!["completions"]),
        (
            "completions extra argument",
            vec!["completions", "bash", "extra"],
        ),
    ];
    let mut bad = Vec::new();
    for (what, args) in &cases {
        let (code, stderr) = ladder_in(d, args);
        // The first line that is not progress (what was started, probed, written).
        let first = stderr
            .lines()
            .find(|l| !INFO.iter().any(|p| l.starts_with(p)))
            .unwrap_or_default();
        if code != Some(2) || !first.starts_with("error: ") {
            bad.push(format!(
                "{what} ({args:?}): exit {code:?}, first stderr line {first:?}"
            ));
        }
    }
    drop(sim_port);
    assert!(bad.is_empty(), "\n{}", bad.join("\n"));

    // `validate` reports each problem compiler-style, with its location first.
    let (code, stderr) = ladder_in(d, &["validate", &unknown_field]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.lines().next().unwrap().contains("unknown.yaml:") && stderr.contains(": error: "),
        "{stderr}"
    );
}
