//! End-to-end tests of `ladder run`: the real binary over loopback, against the in-process
//! simulator (`base_url: sim`), a separate `ladder sim` process, or tiny raw TCP servers.
//!
//! Scenarios are written into temp dirs; results go to `--out <tempdir>`. Rungs are small and
//! the simulator runs at `speed >= 10`, so the file runs in seconds. No assertion depends on
//! wall-clock speed: arrival checks use the scheduled offsets (deterministic for a seed), and
//! the achieved-rate check only guards against gross dispatch failures.
//!
//! Interrupts, server restarts and raw fault servers for the client live in
//! tests/reliability.rs; this file covers the run as a whole.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ladder::results::{RequestLine, ResultDir, RunStatus};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_ladder");
/// Longest any single `ladder` invocation may take before the test kills it and fails.
const RUN_LIMIT: Duration = Duration::from_secs(90);

fn tokenizer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json")
}

/// A scenario file in its own temp dir, with an output root beside it.
struct Scenario {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl Scenario {
    /// Writes `yaml` (with `{TOK}` replaced by the tokenizer's absolute path) as s.yaml.
    fn new(yaml: &str) -> Scenario {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.yaml");
        let text = yaml.replace("{TOK}", &tokenizer().display().to_string());
        std::fs::write(&path, text).unwrap();
        Scenario { dir, path }
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    /// `ladder run s.yaml --out <out> ARGS` with `envs` set (and `unset` removed).
    fn run(&self, args: &[&str], envs: &[(&str, &str)], unset: &[&str]) -> Output {
        let mut cmd = Command::new(BIN);
        cmd.arg("run")
            .arg(&self.path)
            .arg("--out")
            .arg(self.out())
            .args(args);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        for k in unset {
            cmd.env_remove(k);
        }
        run_bounded(cmd)
    }

    /// The single result folder `<out>/<name>/<timestamp>/`.
    fn result_dir(&self) -> PathBuf {
        let mut found = Vec::new();
        for scen in std::fs::read_dir(self.out()).expect("an output root") {
            for run in std::fs::read_dir(scen.unwrap().path()).unwrap() {
                found.push(run.unwrap().path());
            }
        }
        assert_eq!(found.len(), 1, "one result folder expected: {found:?}");
        found.remove(0)
    }
}

/// Runs `cmd` to completion, killing it (and failing) past [`RUN_LIMIT`].
fn run_bounded(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("ladder starts");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        out.read_to_end(&mut b).unwrap();
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        err.read_to_end(&mut b).unwrap();
        b
    });
    let limit = Instant::now() + RUN_LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ladder did not finish within {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts a successful exit, showing stderr otherwise.
fn assert_ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn assert_exit2(o: &Output) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    err
}

/// A `ladder sim --speed 20` process, killed on drop.
struct SimProc(support::serve::SimProc);

impl SimProc {
    fn start(args: &[&str], envs: &[(&str, &str)]) -> SimProc {
        let mut all = vec!["--speed", "20"];
        all.extend_from_slice(args);
        SimProc(support::serve::SimProc::start_env(&all, envs))
    }

    fn url(&self) -> String {
        self.0.url()
    }

    /// A counter from `GET /metrics` (summed over label sets).
    fn metric(&self, name: &str) -> f64 {
        let body = http_get(self.0.addr.parse().unwrap(), "/metrics");
        body.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter(|l| {
                let rest = &l[name.len()..];
                rest.starts_with('{') || rest.starts_with(' ')
            })
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    }
}

fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    resp.split_once("\r\n\r\n")
        .map(|x| x.1.to_string())
        .unwrap()
}

/// A loopback port with nothing listening on it.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn read_lines(p: &Path) -> Vec<RequestLine> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every file under `dir`, hidden ones included.
fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn assert_no_secret(secret: &str, dir: &Path, o: &Output) {
    let files = all_files(dir);
    assert!(!files.is_empty(), "nothing written under {}", dir.display());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !text(&bytes).contains(secret),
            "the API key is in {}",
            f.display()
        );
    }
    assert!(
        !text(&o.stdout).contains(secret),
        "the API key is on stdout"
    );
    assert!(
        !text(&o.stderr).contains(secret),
        "the API key is on stderr"
    );
}

// ---------------------------------------------------------------------------------------
// The simulator's fault draw, replicated: request i (arrival order, the preflight's two
// probes are requests 0 and 1, see `SIM_PROBES`) draws `ChaCha8(seed, stream i).gen::<f64>()` and walks the fault fractions in
// `SimConfig::fault_fractions` order (docs/sim.md, "Determinism"). The set of request indices
// is fixed, so the number of each fault over a rung is known exactly, whatever the order the
// requests arrive in.

/// Fault names in the simulator's draw order, with the error class each must land in.
const FAULTS: [(&str, &str); 7] = [
    ("fault_http_500", "server_5xx"),
    ("fault_http_429", "rate_limit"),
    ("fault_drop_mid_stream", "reset"),
    ("fault_malformed_chunk", "malformed"),
    ("fault_stream_error", "stream_error"),
    ("fault_stall", "timeout"),
    ("fault_unknown_model", "client_4xx"),
];

/// Requests of the preflight (the short probe, then the longest prompt), before any rung.
const SIM_PROBES: u64 = 2;

/// Neither preflight probe of `seed` draws a fault.
fn probes_pass(seed: u64, fractions: &[f64]) -> bool {
    (0..SIM_PROBES).all(|i| sim_fault(seed, i, fractions).is_none())
}

/// The fault (index into `fractions`) request `index` draws, if any.
fn sim_fault(seed: u64, index: u64, fractions: &[f64]) -> Option<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    let draw: f64 = rng.gen();
    let mut acc = 0.0;
    for (i, f) in fractions.iter().enumerate() {
        acc += f;
        if draw < acc {
            return Some(i);
        }
    }
    None
}

/// Expected count per fault over requests 1..=n.
fn expected_faults(seed: u64, n: u64, fractions: &[f64]) -> Vec<u64> {
    let mut counts = vec![0; fractions.len()];
    for i in SIM_PROBES..SIM_PROBES + n {
        if let Some(f) = sim_fault(seed, i, fractions) {
            counts[f] += 1;
        }
    }
    counts
}

// ---------------------------------------------------------------------------------------
// Preflight failures: exit 2, a message naming the cause, nothing written.

#[test]
fn preflight_connection_refused_names_the_url() {
    let port = closed_port();
    let s = Scenario::new(&format!(
        "version: 1\nname: refused\nendpoint: {{ base_url: 'http://127.0.0.1:{port}' }}\n\
         model: m\ntokenizer: {{TOK}}\nworkload: {{ requests_per_rung: 5 }}\n\
         load: {{ rates: [10] }}\n"
    ));
    let o = s.run(&[], &[], &[]);
    let err = assert_exit2(&o);
    assert!(err.contains("preflight failed"), "{err}");
    assert!(err.contains("no server at"), "{err}");
    assert!(err.contains("is it up"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(
        !s.out().exists(),
        "no result folder before preflight passes"
    );
}

#[test]
fn preflight_missing_key_variable_says_set_it() {
    // The server wants a key and the scenario's variable is unset (or empty): preflight gets
    // a 401 and says which variable to export. Nothing is written.
    let var = "LADDER_RUNTEST_UNSET_KEY";
    let sim = SimProc::start(&[], &[("LADDER_SIM_API_KEY", "needed-key-5c1e9a")]);
    let s = Scenario::new(&format!(
        "version: 1\nname: nokey\nendpoint: {{ base_url: '{}', api_key_env: {var} }}\n\
         model: sim-model\ntokenizer: {{TOK}}\nworkload: {{ requests_per_rung: 5 }}\n\
         load: {{ rates: [10] }}\n",
        sim.url()
    ));
    let unset = [var];
    for (env, unset) in [(&[][..], &unset[..]), (&[(var, "")][..], &[][..])] {
        let o = s.run(&[], env, unset);
        let err = assert_exit2(&o);
        assert!(err.contains("401"), "{err}");
        assert!(err.contains(&format!("${var} is not set")), "{err}");
        assert!(err.contains("export it"), "{err}");
        assert!(!s.out().exists());
    }
}

#[test]
fn unset_key_variable_sends_no_key_to_a_server_that_needs_none() {
    // A local server without auth: the same scenario runs with the variable unset, saying so.
    let var = "LADDER_RUNTEST_OPTIONAL_KEY";
    let s = Scenario::new(&format!(
        "version: 1\nname: optkey\nendpoint: {{ base_url: sim, api_key_env: {var} }}\n\
         model: m\ntokenizer: {{TOK}}\nworkload: {{ requests_per_rung: 5 }}\n\
         load: {{ rates: [10] }}\nsim: {{ speed: 20 }}\n"
    ));
    let o = s.run(&[], &[], &[var]);
    assert_ok(&o);
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("note: ${var} is not set: sending no API key")),
        "{err}"
    );
}

#[test]
fn preflight_wrong_key_is_a_401_naming_the_variable_never_the_key() {
    let right = "right-key-7b1f0c9a4e";
    let wrong = "wrong-key-2d93e5aa61";
    let var = "LADDER_RUNTEST_WRONG_KEY";
    let sim = SimProc::start(&[], &[("LADDER_SIM_API_KEY", right)]);
    let s = Scenario::new(&format!(
        "version: 1\nname: badkey\nendpoint: {{ base_url: '{}', api_key_env: {var} }}\n\
         model: sim-model\ntokenizer: {{TOK}}\nworkload: {{ requests_per_rung: 5 }}\n\
         load: {{ rates: [10] }}\n",
        sim.url()
    ));
    let o = s.run(&[], &[(var, wrong)], &[]);
    let err = assert_exit2(&o);
    assert!(err.contains("401"), "{err}");
    assert!(err.contains(&format!("${var}")), "{err}");
    assert!(err.contains("key not sent or invalid"), "{err}");
    assert!(!err.contains(wrong) && !err.contains(right), "{err}");
    assert!(!text(&o.stdout).contains(wrong));
    assert!(!s.out().exists());
    // The right key passes preflight against the same server.
    let o = s.run(&["--quiet"], &[(var, right)], &[]);
    assert_ok(&o);
    assert_no_secret(right, &s.out(), &o);
}

#[test]
fn preflight_unknown_model_lists_the_served_names() {
    let sim = SimProc::start(
        &["--served-model-names", "served-alpha", "served-beta"],
        &[],
    );
    let s = Scenario::new(&format!(
        "version: 1\nname: nomodel\nendpoint: {{ base_url: '{}' }}\n\
         model: not-served-model\ntokenizer: {{TOK}}\nworkload: {{ requests_per_rung: 5 }}\n\
         load: {{ rates: [10] }}\n",
        sim.url()
    ));
    let err = assert_exit2(&s.run(&[], &[], &[]));
    assert!(err.contains("`not-served-model` is not served"), "{err}");
    for name in ["sim-model", "served-alpha", "served-beta"] {
        assert!(err.contains(name), "{name} missing: {err}");
    }
    assert!(!s.out().exists());
}

#[test]
fn base_url_ending_in_v1_is_refused_before_any_connection() {
    let port = closed_port();
    let s = Scenario::new(&format!(
        "version: 1\nname: v1path\nendpoint: {{ base_url: 'http://127.0.0.1:{port}/v1' }}\n\
         model: m\ntokenizer: {{TOK}}\nworkload: {{ requests_per_rung: 5 }}\n\
         load: {{ rates: [10] }}\n"
    ));
    let mut cmd = Command::new(BIN);
    cmd.arg("validate").arg(&s.path);
    let v = run_bounded(cmd);
    let err = assert_exit2(&v);
    assert!(err.contains("base_url ends in `/v1`"), "{err}");
    assert!(
        err.contains(&format!("drop the path: `http://127.0.0.1:{port}`")),
        "{err}"
    );
    assert!(err.contains("s.yaml:"), "a file location: {err}");
    // `run` validates too: the message is about the path, not a refused connection.
    let err = assert_exit2(&s.run(&[], &[], &[]));
    assert!(err.contains("base_url ends in `/v1`"), "{err}");
    assert!(!err.contains("no server at"), "{err}");
    assert!(!s.out().exists());
}

/// Faults apply to the preflight probe (request 0) too: a probe that draws one fails preflight
/// with exit 2 and the server's answer, before any rung.
#[test]
fn a_faulted_probe_fails_preflight() {
    let fractions = [0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let seed = (0..1000)
        .find(|&s| sim_fault(s, 0, &fractions) == Some(0))
        .unwrap();
    let s = Scenario::new(&format!(
        "version: 1\nname: probe500\nendpoint: {{ base_url: sim }}\nmodel: m\n\
         tokenizer: {{TOK}}\nworkload: {{ requests_per_rung: 5 }}\nload: {{ rates: [10] }}\n\
         sim: {{ speed: 20, seed: {seed}, fault_http_500: 0.5 }}\n"
    ));
    let err = assert_exit2(&s.run(&[], &[], &[]));
    assert!(err.contains("answered 500"), "{err}");
    assert!(err.contains("the server failed"), "{err}");
    assert!(!s.out().exists());

    // A probe refused with 404 model_not_found for a model /v1/models does list is not
    // reported as "not served".
    let fractions = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5];
    let seed = (0..1000)
        .find(|&s| sim_fault(s, 0, &fractions) == Some(6))
        .unwrap();
    let s = Scenario::new(&format!(
        "version: 1\nname: probe404\nendpoint: {{ base_url: sim }}\nmodel: listed-model\n\
         tokenizer: {{TOK}}\nworkload: {{ requests_per_rung: 5 }}\nload: {{ rates: [10] }}\n\
         sim: {{ speed: 20, seed: {seed}, fault_unknown_model: 0.5 }}\n"
    ));
    let err = assert_exit2(&s.run(&[], &[], &[]));
    assert!(
        err.contains("answered 404 for model `listed-model`"),
        "{err}"
    );
    assert!(err.contains("/v1/models lists it"), "{err}");
    assert!(!err.contains("is not served"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Fault classes and error accounting.

#[test]
fn each_fault_class_lands_in_its_bucket_once() {
    fault_buckets("completions");
}

#[test]
fn each_fault_class_lands_in_its_bucket_once_with_chat() {
    fault_buckets("chat");
}

fn fault_buckets(api: &str) {
    let n: u64 = 70;
    let fractions = [0.07; 7];
    let total: f64 = fractions.iter().sum();
    // A seed whose probes draw no fault and whose rung draws every fault at least once.
    let seed = (0..10_000)
        .find(|&s| {
            probes_pass(s, &fractions) && expected_faults(s, n, &fractions).iter().all(|&c| c > 0)
        })
        .unwrap();
    let expected = expected_faults(seed, n, &fractions);
    let sim_faults: Vec<String> = FAULTS
        .iter()
        .map(|(k, _)| format!("{k}: {}", fractions[0]))
        .collect();
    assert!(total < 1.0);
    // Stalls last longer than the request timeout (the sim ends them at shutdown). The
    // timeout leaves room for a loaded machine, so only stalls can reach it.
    let s = Scenario::new(&format!(
        "version: 1\nname: faults\n\
         endpoint: {{ base_url: sim, api: {api}, request_timeout: 8s }}\nmodel: m\n\
         tokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 16, output_tokens: 8, requests_per_rung: {n}, seed: 3 }}\n\
         load: {{ arrival: poisson, rates: [50], cooldown: 0s }}\n\
         sim: {{ speed: 20, seed: {seed}, stall_ms: 60000, {} }}\n",
        sim_faults.join(", ")
    ));
    let o = s.run(&["--quiet"], &[], &[]);
    assert_ok(&o);
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_50.json"));
    let by_class = r["errors_by_class"].as_object().unwrap();
    let failed = r["failed"].as_u64().unwrap();
    let completed = r["completed"].as_u64().unwrap();
    assert_eq!(r["num_prompts"].as_u64(), Some(n));
    assert_eq!(completed + failed, n);
    let sum: u64 = by_class.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, failed, "{by_class:?}");
    for (i, (fault, class)) in FAULTS.iter().enumerate() {
        assert_eq!(
            by_class[*class].as_u64(),
            Some(expected[i]),
            "{fault} should give {} `{class}` errors: {by_class:?}",
            expected[i]
        );
    }
    assert_eq!(by_class["auth"].as_u64(), Some(0));
    assert_eq!(by_class["connect"].as_u64(), Some(0));
    assert_eq!(failed, expected.iter().sum::<u64>());
    let err_rate = r["error_rate"].as_f64().unwrap();
    assert!((err_rate - failed as f64 / n as f64).abs() < 1e-12);

    // Each line has exactly one class, consistent with `ok`, and the lines add up to the summary.
    let lines = read_lines(&dir.join("requests_rate_50.jsonl"));
    assert_eq!(lines.len() as u64, n);
    let mut counted: BTreeMap<String, u64> = BTreeMap::new();
    for l in &lines {
        assert_eq!(l.ok, l.error_class.is_none(), "{l:?}");
        if let Some(c) = l.error_class {
            let key = serde_json::to_value(c).unwrap();
            *counted
                .entry(key.as_str().unwrap().to_string())
                .or_default() += 1;
            assert!(l.error_detail.is_some(), "{l:?}");
        }
    }
    for (k, v) in by_class {
        assert_eq!(
            counted.get(k).copied().unwrap_or(0),
            v.as_u64().unwrap(),
            "class {k}: lines {counted:?} vs summary {by_class:?}"
        );
    }
    assert_eq!(counted.values().sum::<u64>(), failed);
    // Mid-stream faults fire after the first token: those failures saw output.
    for l in lines.iter().filter(|l| !l.ok) {
        let key = serde_json::to_value(l.error_class.unwrap()).unwrap();
        match key.as_str().unwrap() {
            "server_5xx" => assert_eq!(l.status, Some(500), "{l:?}"),
            "rate_limit" => assert_eq!(l.status, Some(429), "{l:?}"),
            "client_4xx" => assert_eq!(l.status, Some(404), "{l:?}"),
            "reset" | "malformed" | "stream_error" | "timeout" => {
                assert!(l.first_token_ms.is_some(), "{l:?}")
            }
            other => panic!("unexpected class {other}: {l:?}"),
        }
    }
    // Failures are not successes: the completed count matches the successful lines.
    assert_eq!(
        lines.iter().filter(|l| l.ok).count() as u64,
        completed,
        "{r}"
    );
    // Faults drawn at a fixed rate on a single rung are not shown to grow with the load:
    // the warning names them without calling the server overloaded.
    let warnings = read_json(&dir.join("run.json"))["warnings"].to_string();
    assert!(
        warnings.contains("not shown to be overload (already at the lowest rung"),
        "{warnings}"
    );
    assert!(!warnings.contains("overloaded"), "{warnings}");
}

// ---------------------------------------------------------------------------------------
// Token lengths.

#[test]
fn exact_token_lengths_reach_the_server() {
    let sim = SimProc::start(&[], &[]);
    let (n, input, output) = (30u64, 48u64, 12u64);
    let s = Scenario::new(&format!(
        "version: 1\nname: exact\nendpoint: {{ base_url: '{}' }}\nmodel: sim-model\n\
         tokenizer: {{TOK}}\n\
         workload: {{ input_tokens: {input}, output_tokens: {output}, range_ratio: 0, \
         ignore_eos: true, requests_per_rung: {n}, seed: 11 }}\n\
         load: {{ arrival: constant, rates: [40], cooldown: 0s }}\n",
        sim.url()
    ));
    assert_ok(&s.run(&["--quiet"], &[], &[]));
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_40.json"));
    assert_eq!(r["inexact_prompts"].as_u64(), Some(0));
    assert_eq!(r["completed"].as_u64(), Some(n));
    assert_eq!(r["total_input_tokens"].as_u64(), Some(n * input));
    assert_eq!(r["total_output_tokens"].as_u64(), Some(n * output));
    assert_eq!(r["retokenized_outputs"].as_u64(), Some(0));
    let lines = read_lines(&dir.join("requests_rate_40.jsonl"));
    assert_eq!(lines.len() as u64, n);
    for l in &lines {
        assert_eq!(l.input_tokens as u64, input, "{l:?}");
        assert_eq!(l.output_tokens as u64, output, "{l:?}");
        assert_eq!(
            l.itl_ms.len() as u64,
            output - 1,
            "one gap per later token: {l:?}"
        );
    }
    // The server counted the same prompt words: the prompts re-tokenize to exactly `input`
    // (the tiny tokenizer and the simulator both count words). The short probe adds a few
    // tokens, the longest-prompt probe exactly `input` (range_ratio 0) and one output token.
    let prompt_total = sim.metric("vllm:prompt_tokens_total") as u64;
    let probe = prompt_total
        .checked_sub((n + 1) * input)
        .unwrap_or_else(|| panic!("server saw {prompt_total} prompt tokens"));
    assert!((1..=8).contains(&probe), "server saw {prompt_total}");
    let gen_total = sim.metric("vllm:generation_tokens_total") as u64;
    let probe_out = gen_total.checked_sub(n * output + 1).unwrap();
    assert!((1..=4).contains(&probe_out), "server generated {gen_total}");
}

#[test]
fn range_ratio_keeps_lengths_within_bounds() {
    let n = 60u64;
    let s = Scenario::new(&format!(
        "version: 1\nname: ranged\nendpoint: {{ base_url: sim }}\nmodel: m\n\
         tokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 40, output_tokens: 10, range_ratio: 0.5, \
         ignore_eos: true, requests_per_rung: {n}, seed: 5 }}\n\
         load: {{ arrival: constant, rates: [60], cooldown: 0s }}\nsim: {{ speed: 20 }}\n"
    ));
    assert_ok(&s.run(&["--quiet"], &[], &[]));
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_60.json"));
    assert_eq!(r["inexact_prompts"].as_u64(), Some(0));
    assert_eq!(r["completed"].as_u64(), Some(n));
    let lines = read_lines(&dir.join("requests_rate_60.jsonl"));
    for l in &lines {
        assert!((20..=60).contains(&l.input_tokens), "{l:?}");
        assert!((5..=15).contains(&l.output_tokens), "{l:?}");
    }
    let distinct_in: std::collections::HashSet<u32> =
        lines.iter().map(|l| l.input_tokens).collect();
    let distinct_out: std::collections::HashSet<u32> =
        lines.iter().map(|l| l.output_tokens).collect();
    assert!(
        distinct_in.len() > 10,
        "input lengths vary: {distinct_in:?}"
    );
    assert!(
        distinct_out.len() > 3,
        "output lengths vary: {distinct_out:?}"
    );
    let sum_in: u64 = lines.iter().map(|l| l.input_tokens as u64).sum();
    assert_eq!(r["total_input_tokens"].as_u64(), Some(sum_in));
}

// ---------------------------------------------------------------------------------------
// Arrival processes.

/// Runs one rung of `arrival` and returns (target, achieved_rate, mean scheduled gap in s,
/// coefficient of variation of the scheduled gaps).
fn arrival_rung(arrival: &str, extra: &str) -> (f64, f64, f64, f64) {
    // 600 gaps: their mean is within 4.1 % (one sigma) of 1/rate for exponential gaps, 5.8 %
    // for gamma(0.5). The schedule is seeded, so the values are fixed (2.9 % and 3.9 % below
    // the target at this seed); the tolerances below are about two sigma.
    let (n, rate) = (600usize, 150.0);
    let s = Scenario::new(&format!(
        "version: 1\nname: arrival-{arrival}\nendpoint: {{ base_url: sim }}\nmodel: m\n\
         tokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 8, output_tokens: 2, requests_per_rung: {n}, seed: 2 }}\n\
         load: {{ arrival: {arrival}, {extra} rates: [{rate}], cooldown: 0s }}\n\
         sim: {{ zero_cost: true }}\n"
    ));
    assert_ok(&s.run(&["--quiet"], &[], &[]));
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_150.json"));
    assert_eq!(r["completed"].as_u64(), Some(n as u64), "{r}");
    let mut sched: Vec<f64> = read_lines(&dir.join("requests_rate_150.jsonl"))
        .iter()
        .map(|l| l.scheduled_ms / 1000.0)
        .collect();
    assert_eq!(sched.len(), n);
    sched.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = sched.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    eprintln!(
        "{arrival}: scheduled rate {:.2}, achieved_rate {}, gap CV {:.3}",
        1.0 / mean,
        r["achieved_rate"],
        var.sqrt() / mean
    );
    (
        rate,
        r["achieved_rate"].as_f64().unwrap(),
        mean,
        var.sqrt() / mean,
    )
}

fn check_rate(arrival: &str, target: f64, achieved: f64, gap: f64, tolerance: f64) {
    // The schedule itself (deterministic for the seed) is within a few % of the target.
    let scheduled_rate = 1.0 / gap;
    assert!(
        (scheduled_rate / target - 1.0).abs() < tolerance,
        "{arrival}: scheduled rate {scheduled_rate:.2} vs target {target}"
    );
    // Sends follow the schedule. Generous: a loaded machine delays sends, and bursts most.
    assert!(
        (achieved / scheduled_rate - 1.0).abs() < 0.3,
        "{arrival}: achieved_rate {achieved:.2} vs scheduled {scheduled_rate:.2}"
    );
}

#[test]
fn poisson_arrivals_reach_the_target_rate() {
    let (target, achieved, gap, cv) = arrival_rung("poisson", "");
    check_rate("poisson", target, achieved, gap, 0.08);
    assert!(
        (0.8..1.2).contains(&cv),
        "exponential gaps have CV 1, got {cv}"
    );
}

#[test]
fn gamma_arrivals_reach_the_target_rate_burstily() {
    // burstiness 0.5: gamma shape 0.5, CV of the gaps sqrt(2).
    let (target, achieved, gap, cv) = arrival_rung("gamma", "burstiness: 0.5,");
    check_rate("gamma", target, achieved, gap, 0.12);
    assert!(
        (1.2..1.7).contains(&cv),
        "gamma(0.5) gaps have CV 1.41, got {cv}"
    );
}

#[test]
fn constant_arrivals_are_evenly_spaced() {
    let (target, achieved, gap, cv) = arrival_rung("constant", "");
    check_rate("constant", target, achieved, gap, 0.001);
    assert!((gap * target - 1.0).abs() < 1e-3, "gap {gap}");
    assert!(cv < 0.01, "constant gaps, got CV {cv}");
}

// ---------------------------------------------------------------------------------------
// Metrics math, recomputed from the per-request lines.

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn summary_metrics_match_the_request_lines() {
    let (n, warmup) = (50u64, 4u64);
    let fractions = [0.15, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let seed = (0..1000)
        .find(|&s| probes_pass(s, &fractions) && expected_faults(s, n + warmup, &fractions)[0] > 0)
        .unwrap();
    let s = Scenario::new(&format!(
        "version: 1\nname: math\nendpoint: {{ base_url: sim }}\nmodel: m\ntokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 24, output_tokens: 10, requests_per_rung: {n}, seed: 9 }}\n\
         load: {{ arrival: poisson, rates: [30], cooldown: 0s, warmup_requests: {warmup} }}\n\
         sim: {{ speed: 20, seed: {seed}, fault_http_500: 0.15 }}\n"
    ));
    assert_ok(&s.run(&["--quiet"], &[], &[]));
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_30.json"));
    let all = read_lines(&dir.join("requests_rate_30.jsonl"));
    assert_eq!(all.len() as u64, n + warmup);
    assert_eq!(all.iter().filter(|l| l.warmup).count() as u64, warmup);
    let lines: Vec<&RequestLine> = all.iter().filter(|l| !l.warmup).collect();
    let ok: Vec<&RequestLine> = lines.iter().copied().filter(|l| l.ok).collect();
    let failed = lines.len() - ok.len();
    assert!(failed > 0, "the scenario should produce some failures");
    assert_eq!(r["num_prompts"].as_u64(), Some(n));
    assert_eq!(r["warmup_requests"].as_u64(), Some(warmup));
    assert_eq!(r["completed"].as_u64(), Some(ok.len() as u64));
    assert_eq!(r["failed"].as_u64(), Some(failed as u64));

    let start = lines
        .iter()
        .map(|l| l.sent_ms)
        .fold(f64::INFINITY, f64::min);
    let end = lines.iter().map(|l| l.end_ms).fold(0.0, f64::max);
    let duration_s = (end - start) / 1000.0;
    let get = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} missing"));
    assert!(
        close(get("duration"), duration_s),
        "{} vs {duration_s}",
        get("duration")
    );
    let throughput = ok.len() as f64 / duration_s;
    assert!(
        close(get("request_throughput"), throughput),
        "{} vs {throughput}",
        get("request_throughput")
    );
    assert!(close(get("qps"), throughput));
    let out_tokens: u64 = ok.iter().map(|l| l.output_tokens as u64).sum();
    assert!(close(
        get("output_throughput"),
        out_tokens as f64 / duration_s
    ));

    let ttft = median(ok.iter().map(|l| l.ttft_ms.unwrap()).collect());
    assert!(
        close(get("median_ttft_ms"), ttft),
        "{} vs {ttft}",
        get("median_ttft_ms")
    );
    let tpots: Vec<f64> = ok.iter().filter_map(|l| l.tpot_ms).collect();
    assert_eq!(
        tpots.len(),
        ok.len(),
        "every success has 10 tokens, so a TPOT"
    );
    let tpot = tpots.iter().sum::<f64>() / tpots.len() as f64;
    assert!(
        close(get("mean_tpot_ms"), tpot),
        "{} vs {tpot}",
        get("mean_tpot_ms")
    );
    // TPOT per line follows vLLM: (e2e - ttft) / (tokens - 1).
    for l in &ok {
        let want = (l.e2e_ms - l.ttft_ms.unwrap()) / (l.output_tokens as f64 - 1.0);
        assert!((l.tpot_ms.unwrap() - want).abs() < 1e-6, "{l:?}");
    }
    let e2e = median(ok.iter().map(|l| l.e2e_ms).collect());
    assert!(close(get("median_e2el_ms"), e2e));
    let error_rate = failed as f64 / lines.len() as f64;
    assert!(
        close(get("error_rate"), error_rate),
        "{} vs {error_rate}",
        get("error_rate")
    );
    assert_eq!(r["count_ttft"].as_u64(), Some(ok.len() as u64));
    assert_eq!(r["count_e2el_all"].as_u64(), Some(n));
    let lag_max = lines
        .iter()
        .map(|l| l.sent_ms - l.scheduled_ms)
        .fold(0.0, f64::max);
    assert!((get("max_dispatch_lag_ms") - lag_max).abs() < 1e-6);
}

// ---------------------------------------------------------------------------------------
// Result folders, overrides and output modes.

#[test]
fn result_folder_loads_back_with_overrides_and_json_output() {
    let var = "LADDER_RUNTEST_KEY_ENV";
    let key = "sk-runtest-e4c1d7f09a3b";
    let n = 12u64;
    let s = Scenario::new(&format!(
        "version: 1\nname: loadback\nendpoint: {{ base_url: sim, api_key_env: {var} }}\n\
         model: m\ntokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 16, output_tokens: 4, requests_per_rung: {n} }}\n\
         load: {{ baseline_rate: 10, rates: [100, 200], cooldown: 0s }}\nsim: {{ speed: 20 }}\n"
    ));
    let o = s.run(&["--rates", "20,40", "--json"], &[(var, key)], &[]);
    assert_ok(&o);
    let dir = s.result_dir();
    assert_no_secret(key, &s.out(), &o);
    // --json: one parseable JSON document on stdout, naming the folder and the rungs.
    let json: Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(json["dir"].as_str().map(PathBuf::from), Some(dir.clone()));
    let rates: Vec<f64> = json["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rate"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, [10.0, 20.0, 40.0], "baseline first, then --rates");

    let back = ResultDir::open(&dir).unwrap();
    assert_eq!(back.info.status, RunStatus::Complete);
    assert!(back.info.ended_at.is_some());
    assert_eq!(back.info.tool_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(back.info.scenario_name, "loadback");
    let sha = hex::encode(Sha256::digest(std::fs::read(tokenizer()).unwrap()));
    assert_eq!(back.info.tokenizer_sha256, sha);
    assert_eq!(back.info.scenario["endpoint"]["api_key_env"], var);
    assert_eq!(
        back.info.scenario["load"]["rates"],
        serde_json::json!([20.0, 40.0])
    );
    assert_eq!(back.info.endpoint, "sim");
    let loaded: Vec<f64> = back.rungs.iter().map(|r| r.summary.rate).collect();
    assert_eq!(loaded, [10.0, 20.0, 40.0]);
    for rung in &back.rungs {
        assert!(rung.entry.complete);
        assert_eq!(rung.summary.num_prompts, n);
        assert_eq!(rung.summary.completed, n);
        let lines = back.requests(rung).unwrap();
        assert_eq!(lines.len() as u64, n);
    }
    assert!(dir.join("run.log").is_file());
    let names: Vec<String> = all_files(&dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    // The folder is `<out>/<scenario>/<UTC timestamp>`.
    assert_eq!(dir.parent().unwrap(), s.out().join("loadback"));
    let stamp = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        stamp.len() == 20 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
        "{stamp}"
    );
}

#[test]
fn quiet_prints_nothing_on_success_and_the_table_otherwise() {
    let s = Scenario::new(
        "version: 1\nname: quiet\nendpoint: { base_url: sim }\nmodel: m\ntokenizer: {TOK}\n\
         workload: { input_tokens: 16, output_tokens: 4, requests_per_rung: 10 }\n\
         load: { rates: [20], cooldown: 0s }\nsim: { speed: 20 }\n",
    );
    let o = s.run(&["--quiet"], &[], &[]);
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "", "stdout under --quiet");
    assert_eq!(text(&o.stderr), "", "stderr under --quiet");
    let dir = s.result_dir();
    assert!(dir.join("result_rate_20.json").is_file());
    // Without --quiet, the run says where the results went.
    let o = s.run(&[], &[], &[]);
    assert_ok(&o);
    assert!(text(&o.stdout).contains("results: "), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("preflight ok"),
        "{}",
        text(&o.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// The API key never reaches a file or the terminal.

#[test]
fn api_key_is_never_written_with_a_key_checking_server() {
    let key = "sk-distinctive-0f5e2b7c9d41";
    let var = "LADDER_RUNTEST_SIM_KEY";
    let sim = SimProc::start(
        &["--fault-http-500", "0.2", "--fault-stream-error", "0.2"],
        &[("LADDER_SIM_API_KEY", key)],
    );
    // Seed 0's probes draw no fault (checked here so a sim change shows up clearly).
    assert!(probes_pass(0, &[0.2, 0.0, 0.0, 0.0, 0.2]));
    let s = Scenario::new(&format!(
        "version: 1\nname: secret\nendpoint: {{ base_url: '{}', api_key_env: {var} }}\n\
         model: sim-model\ntokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 16, output_tokens: 6, requests_per_rung: 20 }}\n\
         load: {{ baseline_rate: 20, rates: [40], cooldown: 0s }}\n",
        sim.url()
    ));
    let o = s.run(&[], &[(var, key)], &[]);
    assert_ok(&o);
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_40.json"));
    assert_eq!(
        r["errors_by_class"]["auth"].as_u64(),
        Some(0),
        "the key was sent"
    );
    assert!(r["completed"].as_u64().unwrap() > 0);
    assert_no_secret(key, &s.out(), &o);
    // And the report written from the folder does not have it either.
    let mut cmd = Command::new(BIN);
    cmd.arg("report").arg(&dir);
    let rep = run_bounded(cmd);
    assert_ok(&rep);
    assert_no_secret(key, &s.out(), &rep);
}

/// A raw HTTP/1.1 server (one request per connection) answering as its [`Echo`] mode says.
struct EchoServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

/// How [`EchoServer`] answers.
#[derive(Clone, Copy, PartialEq)]
enum Echo {
    /// 401 with the Authorization header echoed, to everything.
    All401,
    /// A short valid stream to the preflight probes, echoing 401s to everything else.
    Rung401,
    /// A valid stream without a usage chunk to everything (the client must count tokens).
    NoUsage,
}

/// Text of the [`Echo::NoUsage`] stream, one chunk per element.
const NO_USAGE_CHUNKS: [&str; 4] = ["ba ", "chai be", "ei ", "dou fa"];

impl EchoServer {
    fn start(mode: Echo) -> EchoServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        std::thread::spawn(move || echo_serve(sock, mode));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        EchoServer { addr, stop }
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn echo_serve(sock: TcpStream, mode: Echo) {
    sock.set_nonblocking(false).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(sock.try_clone().unwrap());
    let mut out = sock;
    let (mut auth, mut len) = (String::new(), 0usize);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            match k.to_ascii_lowercase().as_str() {
                "authorization" => auth = v.trim().to_string(),
                "content-length" => len = v.trim().parse().unwrap_or(0),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let chunks: &[&str] = match mode {
        // The preflight's probes: the short one, and the longest prompt with max_tokens 1.
        Echo::Rung401
            if text(&body).contains("Say hello.") || text(&body).contains("\"max_tokens\":1,") =>
        {
            &["hi ", "there "]
        }
        Echo::NoUsage => &NO_USAGE_CHUNKS,
        _ => &[],
    };
    if !chunks.is_empty() {
        let mut sse = String::new();
        for w in chunks {
            sse += &format!(
                "data: {{\"id\":\"x\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"text\":\"{w}\",\"finish_reason\":null}}]}}\n\n"
            );
        }
        if mode != Echo::NoUsage {
            sse += "data: {\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2,\"total_tokens\":4}}\n\n";
        }
        sse += "data: [DONE]\n\n";
        let _ = write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{sse}",
            sse.len()
        );
        return;
    }
    let reply = format!(
        "{{\"error\":{{\"message\":\"bad credentials: you sent Authorization: {auth}\",\"type\":\"auth\"}}}}"
    );
    let _ = write!(
        out,
        "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
        reply.len()
    );
}

#[test]
fn a_server_echoing_the_key_in_401s_does_not_leak_it() {
    let key = "sk-echoed-91ac3e6f2b07";
    let var = "LADDER_RUNTEST_ECHO_KEY";
    // 1. The probe gets an echoing 401: preflight fails, the message is redacted.
    let server = EchoServer::start(Echo::All401);
    let s = Scenario::new(&format!(
        "version: 1\nname: echo\nendpoint: {{ base_url: 'http://{}', api_key_env: {var} }}\n\
         model: m\ntokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 8, output_tokens: 2, requests_per_rung: 6 }}\n\
         load: {{ rates: [50], cooldown: 0s }}\n",
        server.addr
    ));
    let o = s.run(&[], &[(var, key)], &[]);
    let err = assert_exit2(&o);
    assert!(err.contains("401"), "{err}");
    assert!(
        err.contains("you sent Authorization: Bearer ***"),
        "echo redacted: {err}"
    );
    assert!(
        !err.contains(key) && !text(&o.stdout).contains(key),
        "{err}"
    );
    drop(server);

    // 2. The probe passes, every rung request gets an echoing 401: counted as auth, the
    //    echoed key redacted in the lines, nowhere in the folder; after five identical
    //    rejections the ladder stops (exit 2), blaming the key, not the server.
    let server = EchoServer::start(Echo::Rung401);
    let s = Scenario::new(&format!(
        "version: 1\nname: echo\nendpoint: {{ base_url: 'http://{}', api_key_env: {var} }}\n\
         model: m\ntokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 8, output_tokens: 2, requests_per_rung: 6 }}\n\
         load: {{ rates: [50], cooldown: 0s }}\n",
        server.addr
    ));
    let o = s.run(&[], &[(var, key)], &[]);
    let err = assert_exit2(&o);
    assert!(
        err.contains("the key is missing, wrong or not allowed"),
        "{err}"
    );
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_50.json"));
    let auth = r["errors_by_class"]["auth"].as_u64().unwrap_or(0);
    assert!((5..=6).contains(&auth), "{r}");
    assert_eq!(r["completed"].as_u64(), Some(0), "{r}");
    let lines = read_lines(&dir.join("requests_rate_50.jsonl"));
    assert!(lines.iter().all(|l| l
        .error_detail
        .as_deref()
        .is_some_and(|d| d.contains("Bearer ***"))));
    assert_no_secret(key, &s.out(), &o);
    // The warning blames what was sent, not the server.
    assert!(
        text(&o.stderr).contains("it is not overloaded"),
        "{}",
        text(&o.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// Warnings.

#[test]
fn a_tiny_rung_at_a_high_rate_is_flagged_too_short() {
    let s = Scenario::new(
        "version: 1\nname: short\nendpoint: { base_url: sim }\nmodel: m\ntokenizer: {TOK}\n\
         workload: { input_tokens: 16, output_tokens: 64, requests_per_rung: 3 }\n\
         load: { arrival: constant, rates: [500], cooldown: 0s }\nsim: { speed: 10 }\n",
    );
    let o = s.run(&[], &[], &[]);
    assert_ok(&o);
    let err = text(&o.stderr);
    assert!(err.contains("too short to reach steady state"), "{err}");
    assert!(err.contains("requests_per_rung"), "{err}");
    let warnings = read_json(&s.result_dir().join("run.json"))["warnings"].to_string();
    assert!(warnings.contains("too short"), "{warnings}");
    // A long enough rung of the same shape is not flagged.
    let s = Scenario::new(
        "version: 1\nname: long\nendpoint: { base_url: sim }\nmodel: m\ntokenizer: {TOK}\n\
         workload: { input_tokens: 16, output_tokens: 4, requests_per_rung: 20 }\n\
         load: { arrival: constant, rates: [20], cooldown: 0s }\nsim: { speed: 20 }\n",
    );
    let o = s.run(&[], &[], &[]);
    assert_ok(&o);
    assert!(
        !text(&o.stderr).contains("too short"),
        "{}",
        text(&o.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// Concurrency cap.

#[test]
fn max_concurrency_caps_requests_in_flight() {
    // Offered far above what 2 slots can serve: the cap, not the rate, limits the rung.
    let (n, cap) = (24u64, 2usize);
    let s = Scenario::new(&format!(
        "version: 1\nname: capped\nendpoint: {{ base_url: sim }}\nmodel: m\ntokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 16, output_tokens: 16, requests_per_rung: {n} }}\n\
         load: {{ arrival: constant, rates: [400], cooldown: 0s, max_concurrency: {cap} }}\n\
         sim: {{ speed: 10 }}\n"
    ));
    let o = s.run(&[], &[], &[]);
    assert_ok(&o);
    // The lag comes from the cap: the warning says so rather than blaming the client.
    let err = text(&o.stderr);
    assert!(err.contains("max_concurrency 2 slots"), "{err}");
    assert!(!err.contains("fell behind"), "{err}");
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_400.json"));
    assert_eq!(r["completed"].as_u64(), Some(n), "{r}");
    assert_eq!(r["max_concurrency"].as_u64(), Some(cap as u64));
    let reported = r["max_concurrent_requests"].as_u64().unwrap() as usize;
    assert!((1..=cap).contains(&reported), "{reported}");
    // Recount from the lines: never more than `cap` between send and end.
    let lines = read_lines(&dir.join("requests_rate_400.jsonl"));
    let mut edges: Vec<(f64, i32)> = lines
        .iter()
        .flat_map(|l| [(l.sent_ms, 1), (l.end_ms, -1)])
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut cur, mut most) = (0, 0);
    for (_, d) in edges {
        cur += d;
        most = most.max(cur);
    }
    assert!(most as usize <= cap, "{most} in flight");
    // Held back by the cap, later requests were sent well after their scheduled time, and
    // the coordinated-omission-aware latency shows it.
    assert!(r["max_dispatch_lag_ms"].as_f64().unwrap() > 0.0);
    assert!(r["median_e2el_sched_ms"].as_f64().unwrap() > r["median_e2el_ms"].as_f64().unwrap());
}

// ---------------------------------------------------------------------------------------
// Output tokens without a usage chunk.

#[test]
fn output_tokens_are_retokenized_when_the_server_sends_no_usage() {
    let server = EchoServer::start(Echo::NoUsage);
    let n = 8u64;
    let s = Scenario::new(&format!(
        "version: 1\nname: nousage\nendpoint: {{ base_url: 'http://{}' }}\nmodel: m\n\
         tokenizer: {{TOK}}\n\
         workload: {{ input_tokens: 8, output_tokens: 4, requests_per_rung: {n} }}\n\
         load: {{ rates: [40], cooldown: 0s }}\n",
        server.addr
    ));
    assert_ok(&s.run(&["--quiet"], &[], &[]));
    let tok = ladder::tokens::load(&tokenizer()).unwrap();
    let want = ladder::tokens::count(&tok, &NO_USAGE_CHUNKS.concat());
    assert!(want >= 4, "the chunks hold several tokens: {want}");
    let dir = s.result_dir();
    let r = read_json(&dir.join("result_rate_40.json"));
    assert_eq!(r["completed"].as_u64(), Some(n), "{r}");
    assert_eq!(r["retokenized_outputs"].as_u64(), Some(n));
    assert_eq!(r["total_output_tokens"].as_u64(), Some(n * want as u64));
    for l in read_lines(&dir.join("requests_rate_40.jsonl")) {
        assert_eq!(l.output_tokens, want, "{l:?}");
        assert_eq!(
            serde_json::to_value(l.token_source).unwrap(),
            "retokenized",
            "{l:?}"
        );
        assert_eq!(l.itl_ms.len(), NO_USAGE_CHUNKS.len() - 1, "{l:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Sweeps.

#[test]
fn a_sweep_writes_one_folder_per_value() {
    let s = Scenario::new(
        "version: 1\nname: sw\nendpoint: { base_url: sim }\nmodel: m\ntokenizer: {TOK}\n\
         workload: { input_tokens: 16, output_tokens: 4, requests_per_rung: 8 }\n\
         load: { rates: [20], cooldown: 0s }\n\
         sweep: { field: input_tokens, values: [12, 24] }\nsim: { speed: 20 }\n",
    );
    let o = s.run(&["--json"], &[], &[]);
    assert_ok(&o);
    // --json prints one JSON document per ladder, one per line.
    let docs: Vec<Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(docs.len(), 2, "{}", text(&o.stdout));
    for (doc, input) in docs.iter().zip([12u64, 24]) {
        // docs/json.md: every document says its shape's version.
        assert_eq!(doc["version"], 1);
        assert_eq!(doc["command"], "run");
        let dir = PathBuf::from(doc["dir"].as_str().unwrap());
        assert_eq!(
            dir.parent().unwrap(),
            s.out().join(format!("sw.input_tokens-{input}"))
        );
        let back = ResultDir::open(&dir).unwrap();
        assert_eq!(back.info.status, RunStatus::Complete);
        assert_eq!(back.info.scenario["workload"]["input_tokens"], input);
        let lines = back.requests(&back.rungs[0]).unwrap();
        assert_eq!(lines.len(), 8);
        assert!(lines.iter().all(|l| l.input_tokens as u64 == input));
    }
}

#[test]
fn errors_that_grow_with_the_load_are_called_overload_and_only_then() {
    // Two sequences and two waiting slots: 10 req/s fits, 500 req/s is turned away with
    // 503s. The first rung is clean, so the second's errors grew with the load.
    let s = Scenario::new(
        "version: 1\nname: overload\n\
         endpoint: { base_url: sim, api: completions }\nmodel: m\n\
         tokenizer: {TOK}\n\
         workload: { input_tokens: 16, output_tokens: 8, requests_per_rung: 30, seed: 3 }\n\
         load: { arrival: constant, rates: [10, 500], cooldown: 0s }\n\
         sim: { speed: 2, max_num_seqs: 2, max_waiting: 2, reject_status: 503 }\n",
    );
    let o = s.run(&["--quiet"], &[], &[]);
    assert_ok(&o);
    let dir = s.result_dir();
    let low = read_json(&dir.join("result_rate_10.json"));
    assert_eq!(low["failed"].as_u64(), Some(0), "{low}");
    let high = read_json(&dir.join("result_rate_500.json"));
    assert!(high["failed"].as_u64().unwrap() >= 5, "{high}");
    let warnings = read_json(&dir.join("run.json"))["warnings"].to_string();
    assert!(
        warnings.contains("rung 500 req/s: error rate")
            && warnings.contains("overloaded: the error rate rose from 0.0% at 10 req/s"),
        "{warnings}"
    );
}

/// Piped (as in a CI log), the run is not silent between "writing results" and the table:
/// every rung ends with a line saying which of how many it was, what it measured and how
/// long it took, and a repeated ladder counts every rung of every repeat.
#[test]
fn off_a_terminal_every_rung_ends_with_a_progress_line() {
    let s = Scenario::new(
        "version: 1\nname: plainprogress\nendpoint: { base_url: sim }\nmodel: m\n\
         tokenizer: {TOK}\nworkload: { requests_per_rung: 6 }\n\
         load: { rates: [20, 40], repeats: 2, cooldown: 0s }\nsim: { speed: 50 }\n",
    );
    let o = s.run(&[], &[], &[]);
    assert_ok(&o);
    let err = text(&o.stderr);
    for (step, repeat, rate) in [(1, 1, 20), (2, 1, 40), (1, 2, 20), (2, 2, 40)] {
        let head = format!("rung {step}/2 repeat {repeat}/2 rate {rate} req/s done: ");
        let line = err
            .lines()
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("no line starting {head:?} in:\n{err}"));
        assert!(
            line.contains("6 completed, 0 failed) in 0:0"),
            "the rung's counts and length: {line}"
        );
    }
    // --quiet keeps stderr free of progress.
    let q = Scenario::new(&std::fs::read_to_string(&s.path).unwrap());
    let o = q.run(&["--quiet"], &[], &[]);
    assert_ok(&o);
    assert!(!text(&o.stderr).contains("rung 1/2"), "{}", text(&o.stderr));
}
