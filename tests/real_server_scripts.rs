//! `scripts/real-server/start.sh` without llama.cpp: a stand-in `llama-server` (a Python HTTP
//! server that answers /health and writes down its arguments) checks the script's contract —
//! the arguments `.ci/run` passes, extra server arguments after `--`, a fixed port from
//! `--port` or `LADDER_REAL_SERVER_PORT` kept across a restart, and the refusals.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FAKE_SERVER: &str = r#"#!/usr/bin/env python3
import http.server, json, os, sys
argv = sys.argv[1:]
port = int(argv[argv.index("--port") + 1])
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "argv-%d.json" % port), "w") as f:
    json.dump(argv, f)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"#;

struct Fixture {
    dir: tempfile::TempDir,
}

/// Every server name the test starts (or tries to), stopped when the fixture drops.
const NAMES: [&str; 6] = ["plain", "keyed", "np1", "other", "envport", "x"];

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("llama-server");
        std::fs::write(&bin, FAKE_SERVER).unwrap();
        let mut perm = std::fs::metadata(&bin).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&bin, perm).unwrap();
        std::fs::write(dir.path().join("model.gguf"), b"not a model").unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `start.sh ARGS…` with the fixture's state folder and `env` set.
    fn script(&mut self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real-server/start.sh");
        let mut cmd = Command::new("bash");
        cmd.arg(script)
            .args(args)
            .env("LADDER_REAL_SERVER_STATE", self.path("state"))
            .env("LADDER_REAL_SERVER_LIFETIME", "120")
            .env("LADDER_REAL_SERVER_WAIT", "30")
            .env_remove("LADDER_REAL_SERVER_PORT");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// `start.sh start …` that must succeed: the URL it printed.
    fn start(&mut self, args: &[&str], env: &[(&str, &str)]) -> String {
        let mut all = vec!["start"];
        all.extend_from_slice(args);
        let out = self.script(&all, env);
        assert!(
            out.status.success(),
            "start.sh {all:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// The arguments the stand-in server on `port` was started with.
    fn argv(&self, port: u16) -> Vec<String> {
        let text = std::fs::read_to_string(self.path(&format!("argv-{port}.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        for name in NAMES {
            let _ = self.script(&["stop", name], &[]);
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A port P with P + 1 free too (the harness's base server and its fresh servers).
fn free_port_pair() -> u16 {
    loop {
        let first = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        if port < u16::MAX && TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

const DEFAULTS: [&str; 7] = ["-t", "1", "-np", "4", "-c", "8192", "--metrics"];

#[test]
fn start_sh_keeps_ci_calls_and_takes_server_args_and_a_fixed_port() {
    let mut f = Fixture::new();
    let bin = f.path("llama-server").display().to_string();
    let model = f.path("model.gguf").display().to_string();

    // As .ci/run calls it: a free port, the default arguments and nothing after them.
    let url = f.start(&["plain", &bin, &model], &[]);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let argv = f.argv(port_of(&url));
    assert_eq!(argv[..2], ["-m".to_owned(), model.clone()]);
    assert!(argv.windows(7).any(|w| w == DEFAULTS), "{argv:?}");
    assert_eq!(argv.last().unwrap(), "smollm2-135m", "{argv:?}");
    let url_key = f.start(&["keyed", &bin, &model, "fake-key"], &[]);
    assert_eq!(
        f.argv(port_of(&url_key)).last_chunk::<2>().unwrap(),
        &["--api-key".to_owned(), "fake-key".to_owned()]
    );

    // A fixed port and server arguments after `--`, appended after the defaults (the last
    // value of a repeated flag is the one llama-server keeps).
    let port = free_port();
    let p = port.to_string();
    let url = f.start(
        &[
            "--port", &p, "np1", &bin, &model, "--", "-np", "1", "-t", "2",
        ],
        &[],
    );
    assert_eq!(url, format!("http://127.0.0.1:{port}"));
    let argv = f.argv(port);
    assert_eq!(
        argv.last_chunk::<4>().unwrap(),
        &["-np", "1", "-t", "2"].map(String::from)
    );
    assert!(argv.windows(7).any(|w| w == DEFAULTS), "{argv:?}");

    // `start` again under the same name is a restart on the same port.
    std::fs::remove_file(f.path(&format!("argv-{port}.json"))).unwrap();
    let again = f.start(&["--port", &p, "np1", &bin, &model, "--", "-np", "2"], &[]);
    assert_eq!(again, url);
    assert_eq!(
        f.argv(port).last_chunk::<2>().unwrap(),
        &["-np", "2"].map(String::from)
    );

    // A second server asking for that port is refused, saying what to do.
    let out = f.script(&["start", "--port", &p, "other", &bin, &model], &[]);
    assert_eq!(out.status.code(), Some(31));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("port {port} is taken")), "{err}");

    // The port from the environment; an empty key with server arguments.
    let env_port = free_port();
    let ep = env_port.to_string();
    let url = f.start(
        &["envport", &bin, &model, "", "--", "-np", "1"],
        &[("LADDER_REAL_SERVER_PORT", &ep)],
    );
    assert_eq!(port_of(&url), env_port);
    let argv = f.argv(env_port);
    assert!(!argv.contains(&"--api-key".to_owned()), "{argv:?}");
    assert_eq!(
        argv.last_chunk::<2>().unwrap(),
        &["-np", "1"].map(String::from)
    );

    // Refusals with exit 30: a port the script owns, a port that is not a number, a stray
    // argument where `--` belongs.
    for (args, says) in [
        (
            vec!["start", "x", &bin, &model, "--", "--port", "9"],
            "may not set --port",
        ),
        (
            vec!["start", "--port", "http", "x", &bin, &model],
            "bad port 'http'",
        ),
        (
            vec!["start", "--port", "70000", "x", &bin, &model],
            "bad port '70000'",
        ),
        (
            vec!["start", "x", &bin, &model, "key", "-np"],
            "unexpected argument '-np'",
        ),
    ] {
        let out = f.script(&args, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(30), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `scripts/bench/calibrate_real.py` end to end against `ladder sim` run as a separate
/// server (its `--server sim`): the plan's runs, every baseline kind, every check of the
/// scenario's full rule set in every gate, and the table.
#[test]
fn calibrate_real_collects_and_judges_full_gates_against_a_sim_server() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench/calibrate_real.py");
    let json = dir.path().join("calib.json");
    let base = free_port_pair();
    let out = Command::new("python3")
        .arg(&script)
        .args([
            "all",
            "--server",
            "sim",
            "--ladder",
            env!("CARGO_BIN_EXE_ladder"),
        ])
        .arg("--out")
        .arg(dir.path().join("runs"))
        .args([
            "--port",
            &base.to_string(),
            "--requests",
            "20",
            "--rates",
            "20",
            "40",
        ])
        .args(["--baseline-runs", "3", "--cycles", "1", "--sim-speed", "50"])
        .args([
            "--cases",
            "warm",
            "restart",
            "np1",
            "--server-lifetime",
            "300",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = result["manifest"]["runs"].as_array().unwrap();
    let kinds: Vec<&str> = runs.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "prime",
            "baseline",
            "baseline",
            "baseline",
            "warm",
            "restart",
            "np1 fresh",
            "np1 warm"
        ]
    );
    assert!(runs.iter().all(|r| r["exit"] == 0), "{stderr}");
    // The base server's runs share one instance; every fresh server is its own.
    let instances: Vec<u64> = runs
        .iter()
        .map(|r| r["instance"].as_u64().unwrap())
        .collect();
    assert_eq!(instances, [0, 0, 0, 0, 0, 1, 2, 2]);

    let gates = result["gates"].as_array().unwrap();
    // 4 candidates, judged against each of the three baseline kinds.
    assert_eq!(gates.len(), 12, "{stdout}");
    for g in gates {
        // 2 rungs x the quickstart's 4 rules: the full rule set, not one check.
        assert_eq!(g["checks"], 8, "{g}");
        let counted: u64 = g["counts"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(counted, 8, "{g}");
        let exit = g["exit"].as_i64().unwrap();
        assert!(exit == 0 || exit == 1, "{g}");
        assert_eq!(
            exit == 1,
            !g["failed_checks"].as_array().unwrap().is_empty(),
            "{g}"
        );
    }
    let three = gates.iter().find(|g| g["baseline"] == "3run").unwrap();
    assert_eq!(three["baseline_runs"], serde_json::json!([1, 2, 3]));
    for row in [
        "| 1v1 | warm |",
        "| 1v1-cold | restart |",
        "| 3run | np1 fresh |",
    ] {
        assert!(stdout.contains(row), "no row {row} in:\n{stdout}");
    }
}
