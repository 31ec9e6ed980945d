//! Shared harness of the end-to-end tests: the `ladder` binary under a watchdog, a scenario
//! builder, result-folder checks and a raw-TCP fault server on 127.0.0.1. Each test file uses
//! what it needs (`mod support;`), so unused items are expected per file.
#![allow(dead_code)]

pub mod pooled;
pub mod real;
pub mod serve;
pub mod skip;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ladder::results::{RequestLine, ResultDir};

pub const BIN: &str = env!("CARGO_BIN_EXE_ladder");
pub const TOKENIZER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/scenarios/tokenizers/ladder-tiny.json"
);
pub const KEY_VAR: &str = "LADDER_RELIABILITY_KEY";
pub const KEY: &str = "sk-rel-SECRET-4242-do-not-print";

// ---- scenarios ----------------------------------------------------------------------------

pub struct Sc {
    pub base_url: String,
    pub timeout: &'static str,
    pub key: bool,
    pub model: &'static str,
    pub output_tokens: u32,
    pub n: u32,
    pub baseline: f64,
    pub rates: &'static str,
    pub cooldown: &'static str,
    pub max_concurrency: Option<u32>,
    pub extra: &'static str,
}

impl Sc {
    pub fn new(base_url: impl Into<String>) -> Sc {
        Sc {
            base_url: base_url.into(),
            timeout: "3s",
            key: false,
            model: "m",
            output_tokens: 4,
            n: 3,
            baseline: 20.0,
            rates: "[40]",
            cooldown: "0s",
            max_concurrency: None,
            extra: "",
        }
    }

    pub fn write(&self, dir: &Path) -> PathBuf {
        let key = if self.key {
            format!("  api_key_env: {KEY_VAR}\n")
        } else {
            String::new()
        };
        let mc = self
            .max_concurrency
            .map(|c| format!("  max_concurrency: {c}\n"))
            .unwrap_or_default();
        let text = format!(
            "version: 1\nname: rel\nendpoint:\n  base_url: {}\n  api: completions\n  request_timeout: {}\n{key}\
             model: {}\ntokenizer: {TOKENIZER}\nworkload:\n  dataset: random\n  input_tokens: 16\n  \
             output_tokens: {}\n  requests_per_rung: {}\n  seed: 0\nload:\n  arrival: poisson\n  \
             baseline_rate: {}\n  rates: {}\n  warmup_requests: 0\n  cooldown: {}\n{mc}{}",
            self.base_url,
            self.timeout,
            self.model,
            self.output_tokens,
            self.n,
            self.baseline,
            self.rates,
            self.cooldown,
            self.extra
        );
        let p = dir.join("rel.yaml");
        std::fs::write(&p, text).unwrap();
        p
    }
}

// ---- running the binary under a watchdog --------------------------------------------------

pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

pub fn ladder_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env(KEY_VAR, KEY)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Spawned child with its stderr lines streamed to a channel (for "wait until it says X").
pub struct Live {
    pub child: Child,
    pub lines: mpsc::Receiver<String>,
    pub err: Arc<Mutex<String>>,
    pub out: thread::JoinHandle<String>,
}

pub fn spawn(mut cmd: Command) -> Live {
    let mut child = cmd.spawn().expect("spawn ladder");
    let stderr = child.stderr.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let err = Arc::new(Mutex::new(String::new()));
    let e2 = err.clone();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            e2.lock().unwrap().push_str(&(line.clone() + "\n"));
            let _ = tx.send(line);
        }
    });
    let out = thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    Live {
        child,
        lines: rx,
        err,
        out,
    }
}

impl Live {
    /// Waits (bounded) for a stderr line containing `needle`.
    pub fn wait_line(&self, needle: &str, limit: Duration) -> String {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(_) => panic!(
                    "no stderr line with {needle:?} within {limit:?}; stderr so far:\n{}",
                    self.err.lock().unwrap()
                ),
            }
        }
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig}");
    }

    /// Waits for exit; a child still running after `limit` is killed and the test fails.
    pub fn finish(mut self, limit: Duration) -> Ran {
        let end = Instant::now() + limit;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "ladder did not finish within {limit:?}; stderr:\n{}",
                    self.err.lock().unwrap()
                );
            }
            thread::sleep(Duration::from_millis(50));
        };
        let stdout = self.out.join().unwrap();
        // Let the stderr reader drain.
        while self.lines.recv_timeout(Duration::from_millis(200)).is_ok() {}
        let stderr = self.err.lock().unwrap().clone();
        Ran {
            status,
            stdout,
            stderr,
        }
    }
}

/// `ladder run SCENARIO --out OUT`, spawned: its stderr lines can be waited for.
pub fn spawn_run(scenario: &Path, out: &Path) -> Live {
    spawn(ladder_cmd(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]))
}

pub fn run_ladder(scenario: &Path, out: &Path, limit: Duration) -> Ran {
    spawn_run(scenario, out).finish(limit)
}

pub fn no_panic(r: &Ran) {
    assert!(
        !r.all().contains("panicked"),
        "a panic in the output:\n{}",
        r.all()
    );
}

/// A run that finished its ladder: exit 0, or, when no request of any rung of `rd` succeeded,
/// exit 2 with the "nothing was measured" error (README: `ladder run`'s exit codes).
pub fn assert_finished(ran: &Ran, rd: &ResultDir) {
    let nothing = !rd.rungs.is_empty() && rd.rungs.iter().all(|r| r.summary.completed == 0);
    if nothing {
        assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
        assert!(
            ran.stderr
                .contains("no request of any rung succeeded, so nothing was measured"),
            "{}",
            ran.stderr
        );
    } else {
        assert!(ran.status.success(), "exit {:?}\n{}", ran.status, ran.all());
    }
}

// ---- result folders -----------------------------------------------------------------------

/// The single run folder under `out/rel/`, if any.
pub fn run_dir(out: &Path) -> Option<PathBuf> {
    let parent = out.join("rel");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(parent)
        .ok()?
        .map(|e| e.unwrap().path())
        .collect();
    assert!(dirs.len() <= 1, "{dirs:?}");
    dirs.pop()
}

/// Every file parses (JSON, JSON lines, text); no temp file is left; the loader accepts the
/// folder; every listed rung has consistent counts. Returns the loaded folder.
pub fn check_folder(dir: &Path) -> ResultDir {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "temp file left: {name}");
        let bytes = std::fs::read(&p).unwrap();
        if name.ends_with(".jsonl") {
            for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                serde_json::from_slice::<serde_json::Value>(line)
                    .unwrap_or_else(|e| panic!("{name}: bad line: {e}"));
            }
        } else if name.ends_with(".json") {
            serde_json::from_slice::<serde_json::Value>(&bytes)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    let rd = ResultDir::open(dir).expect("the folder loads");
    for rung in &rd.rungs {
        let lines = rd.requests(rung).unwrap();
        // Requests abandoned in flight by a stop have a line each and no outcome.
        let abandoned =
            |l: &&RequestLine| l.error_class == Some(ladder::record::ErrorClass::Interrupted);
        let cut = lines.iter().filter(abandoned).count() as u64;
        assert_eq!(
            cut, rung.summary.interrupted_requests,
            "rung {}",
            rung.summary.rate
        );
        let measured: Vec<_> = lines
            .iter()
            .filter(|l| !l.warmup && !abandoned(l))
            .collect();
        for l in &measured {
            // Exactly one outcome per request: ok, or one error class.
            assert_eq!(l.ok, l.error_class.is_none(), "{l:?}");
        }
        let s = &rung.summary;
        let ok = measured.iter().filter(|l| l.ok).count() as u64;
        assert_eq!(s.completed, ok, "rung {}", s.rate);
        assert_eq!(s.failed, measured.len() as u64 - ok, "rung {}", s.rate);
        assert_eq!(
            s.errors_by_class.values().sum::<u64>(),
            s.failed,
            "rung {}",
            s.rate
        );
        if rung.entry.complete {
            assert_eq!(s.completed + s.failed, s.num_prompts, "rung {}", s.rate);
        }
    }
    rd
}

pub fn all_text_under(dir: &Path) -> String {
    let mut s = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            s.push_str(&all_text_under(&p));
        } else {
            s.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
    s
}

// ---- outputs parsed back ----------------------------------------------------------------

/// `md` with its code spans removed (their text is literal in Markdown).
pub fn outside_code_spans(md: &str) -> String {
    let mut out = String::new();
    for line in md.lines() {
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 1 < b.len() {
                out.push_str(&line[i..i + 2]);
                i += 2;
                continue;
            }
            if b[i] != b'`' {
                let c = line[i..].chars().next().unwrap();
                out.push(c);
                i += c.len_utf8();
                continue;
            }
            let open = i;
            while i < b.len() && b[i] == b'`' {
                i += 1;
            }
            let fence = &line[open..i];
            match line[i..].find(fence) {
                Some(j) => i += j + fence.len(),
                None => out.push_str(fence),
            }
        }
        out.push('\n');
    }
    out
}

/// `md` without its fenced code blocks (a line of three or more backticks up to a line of at
/// least as many, as `escape::markdown::fenced` writes them); an unclosed one leaves a bare
/// fence.
pub fn outside_fences(md: &str) -> String {
    let mut out = String::new();
    let mut open: Option<usize> = None;
    for line in md.lines() {
        let t = line.trim_start();
        let run = t.len() - t.trim_start_matches('`').len();
        match open {
            Some(n) if run >= n && t.trim_end().len() == run => open = None,
            Some(_) => {}
            None if run >= 3 => open = Some(run),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if open.is_some() {
        // Left open: kept as a bare fence, which the checks below refuse.
        out.push_str("```\n");
    }
    out
}

/// Markdown that renders no markup from the input: fenced blocks closed, code spans
/// balanced, and outside them no raw HTML, image or link opened by unescaped characters.
pub fn assert_markdown_inert(what: &str, md: &str) {
    let md = &outside_fences(md);
    assert!(
        ladder::escape::markdown::code_spans_balanced(md),
        "{what}: a code span left open:\n{md}"
    );
    let plain = outside_code_spans(md);
    let unescaped = |pat: &str| {
        plain
            .match_indices(pat)
            .any(|(i, _)| i == 0 || plain.as_bytes()[i - 1] != b'\\')
    };
    for pat in ["<img", "<script", "](http", "](", "```"] {
        assert!(
            !unescaped(pat),
            "{what}: {pat:?} outside a code span:\n{md}"
        );
    }
}

// ---- raw TCP fault servers ----------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// Every request answered correctly.
    None,
    AcceptClose,
    Garbage,
    HeadersStall,
    HugeLine,
    CloseMidChunk,
    Http10NoLength,
    SlowDrip,
    /// 500 with the received Authorization header echoed in the body, and (alternately) a
    /// stream whose error object echoes it.
    EchoKey,
    /// 307 to another port (the `u16`) on loopback.
    RedirectTo(u16),
    /// `GET /v1/models` never answered (for signals during preflight).
    StallModels,
    /// `GET /v1/models` answered 401 with the key echoed.
    ModelsEchoKey401,
    /// A good stream whose usage claims 4,000,000,000 completion tokens.
    AbsurdUsage,
    /// After `good`, 400 with llama.cpp's context-overflow error object.
    ContextOverflow400,
    /// After `good`, 401 "invalid api key" (a key revoked or rotated during the run; the
    /// models list still answers).
    KeyRevoked401,
    /// The Authorization header echoed in every encoding of [`echo_forms`]: as the model ids
    /// of `/v1/models` (without the scenario's model), then (after `good`) alternately in a
    /// 500 body and in a mid-stream error object.
    EchoEncoded,
    /// Every request (models and POSTs) answered 401 with [`echo_forms`] in the body.
    EchoEncoded401,
    /// After `good`, 500 with the whole request head (every header) echoed as a JSON string.
    EchoHead,
    /// After `good`, a stream whose one event is not JSON: 100 `x` then the Authorization
    /// header, so an excerpt cut at 120 bytes ends inside the key.
    MalformedEcho,
    /// Answered correctly after holding the request open for this many milliseconds (many
    /// connections open at once).
    HoldMs(u64),
    /// `KiB` kibibytes of generated text in ~1 KiB chunks, no usage chunk, then (when the
    /// `bool` is true) `[DONE]`, else the connection is held open until the client gives up.
    BigText(u32, bool),
    /// One page answered with a valid body padded to `usize` bytes, streamed in 64 KiB
    /// writes until done or the client closes; the bytes written are counted in
    /// [`FaultServer::streamed`] (see [`Page`]). Every other request answered correctly.
    Big(Page, usize),
    /// `POST /tokenize` answered with this status and body (`{auth}` replaced by the
    /// Authorization header received); every other request answered correctly.
    Tokenize(u16, &'static str),
}

/// The page a [`Fault::Big`] server pads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Page {
    /// `GET /v1/models`: a list holding the model `m`, then `{"id":"pad"}` entries.
    Models,
    /// `GET /metrics`: a vLLM page (one running request), then comment lines.
    Metrics,
    /// `GET /version` (asked because `/metrics` then shows a vLLM page):
    /// `{"version":"0.9.9-big","pad":"xxx…"}`.
    Version,
    /// `POST /tokenize`: `{"tokens":[7,7,…]}`.
    Tokenize,
}

/// Base64 of `b` (standard or URL-safe alphabet, padded or not), for echoing servers.
pub fn b64(b: &[u8], url_safe: bool, pad: bool) -> String {
    let a: &[u8] = if url_safe {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                out.push(a[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// `auth` (e.g. `Bearer <key>`) in the encodings a server may echo, each safe inside a JSON
/// string: JSON-escaped (`\/` and `\u00XX` upper and lower, mixed with literals),
/// URL-encoded (`%XX` and `+`), base64 standard padded and URL-safe unpadded, base64 of the
/// bare key, and the bare key HTML-escaped.
pub fn echo_forms(auth: &str) -> Vec<String> {
    let key = auth.strip_prefix("Bearer ").unwrap_or(auth);
    let json: String = auth
        .chars()
        .enumerate()
        .map(|(i, c)| match c {
            '/' => "\\/".to_string(),
            c if i % 3 == 0 => format!("\\u{:04X}", c as u32),
            c if i % 3 == 1 => format!("\\u{:04x}", c as u32),
            c => c.to_string(),
        })
        .collect();
    let url: String = auth
        .bytes()
        .map(|b| match b {
            b' ' => "+".to_string(),
            b if b.is_ascii_alphanumeric() && b % 2 == 0 => (b as char).to_string(),
            b if b % 3 == 0 => format!("%{b:02X}"),
            b => format!("%{b:02x}"),
        })
        .collect();
    let html: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("&#{};", c as u32)
            }
        })
        .collect();
    vec![
        json,
        url,
        b64(auth.as_bytes(), false, true),
        b64(auth.as_bytes(), true, false),
        b64(key.as_bytes(), false, false),
        html,
    ]
}

pub struct FaultServer {
    pub addr: SocketAddr,
    pub posts: Arc<AtomicUsize>,
    pub heads: Arc<Mutex<Vec<String>>>,
    /// The body of every POST received, in arrival order.
    pub bodies: Arc<Mutex<Vec<String>>>,
    /// Bytes of a [`Fault::Big`] body written before it ended or the client closed.
    pub streamed: Arc<AtomicUsize>,
}

impl FaultServer {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// POSTs of a run's preflight: the short probe and the longest-prompt probe.
pub const PROBES: usize = 2;

/// Answers `/v1/models` and the first `good` POSTs (the preflight probes, [`PROBES`]) correctly, then
/// misbehaves with `fault` on every later POST. One request per connection.
pub fn fault_server(fault: Fault, good: usize) -> FaultServer {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let posts = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let streamed = Arc::new(AtomicUsize::new(0));
    let (p2, h2, b2, st2) = (
        posts.clone(),
        heads.clone(),
        bodies.clone(),
        streamed.clone(),
    );
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let (p3, h3, b3, st3) = (p2.clone(), h2.clone(), b2.clone(), st2.clone());
            thread::spawn(move || {
                let _ = handle(s, fault, good, &p3, &h3, &b3, &st3);
            });
        }
    });
    FaultServer {
        addr,
        posts,
        heads,
        bodies,
        streamed,
    }
}

pub fn read_head(s: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).into_owned();
            let rest = buf[i + 4..].to_vec();
            return Ok((head, rest));
        }
        let n = s.read(&mut b)?;
        if n == 0 || buf.len() > 1 << 16 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&b[..n]);
    }
}

/// The rest of a request's body after [`read_head`]: up to its `Content-Length` (a peer
/// that closes early leaves it short).
pub fn read_body(s: &mut TcpStream, head: &str, body: &mut Vec<u8>) -> std::io::Result<()> {
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while body.len() < len {
        let mut b = vec![0u8; len - body.len()];
        let n = s.read(&mut b)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&b[..n]);
    }
    Ok(())
}

pub const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
pub const GOOD_STREAM: &str = "data: {\"choices\":[{\"index\":0,\"text\":\"hello\"}]}\n\n\
    data: {\"choices\":[{\"index\":0,\"text\":\" world\"}]}\n\n\
    data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":2}}\n\n\
    data: [DONE]\n\n";

/// [`GOOD_STREAM`] with an overflowed-looking completion count.
pub const ABSURD_USAGE_STREAM: &str = "data: {\"choices\":[{\"index\":0,\"text\":\"hello\"}]}\n\n\
    data: {\"choices\":[{\"index\":0,\"text\":\" world\"}]}\n\n\
    data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":4000000000}}\n\n\
    data: [DONE]\n\n";

pub fn handle(
    mut s: TcpStream,
    fault: Fault,
    good: usize,
    posts: &AtomicUsize,
    heads: &Mutex<Vec<String>>,
    bodies: &Mutex<Vec<String>>,
    streamed: &AtomicUsize,
) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    s.set_write_timeout(Some(Duration::from_secs(20)))?;
    let (head, mut body) = read_head(&mut s)?;
    match (fault, page_of(&head)) {
        (Fault::Big(page, len), Some(asked)) if asked == page => {
            read_body(&mut s, &head, &mut body)?;
            return big(&mut s, page, len, streamed);
        }
        // A vLLM page, so that the run asks for its identity at `/version`.
        (Fault::Big(Page::Version, _), Some(Page::Metrics)) => {
            let b = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n";
            return write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            );
        }
        // No identity page otherwise (and no request counted for it).
        (Fault::Big(..) | Fault::Tokenize(..), Some(Page::Version)) => {
            return write!(
                s,
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
        (Fault::Tokenize(status, text), Some(Page::Tokenize)) => {
            read_body(&mut s, &head, &mut body)?;
            let b = text.replace("{auth}", &header_of(&head, "authorization"));
            return write!(
                s,
                "HTTP/1.1 {status} Hostile\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            );
        }
        _ => {}
    }
    // ladder's server-metrics scraper (on by default): an empty page, neither counted as a
    // request nor recorded, so the traffic under test is exactly what it was before.
    if head.starts_with("GET /metrics") {
        return write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
    }
    heads.lock().unwrap().push(head.clone());
    read_body(&mut s, &head, &mut body)?;
    let auth = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("authorization")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();

    if head.starts_with("GET /v1/models") {
        match fault {
            Fault::StallModels => {
                thread::sleep(Duration::from_secs(60));
                return Ok(());
            }
            Fault::ModelsEchoKey401 => {
                let b = format!("{{\"error\":\"key rejected: {auth}\"}}");
                return write!(
                    s,
                    "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                    b.len()
                );
            }
            Fault::EchoEncoded401 => return echo_encoded_401(&mut s, &auth),
            Fault::EchoEncoded => {
                let ids: Vec<String> = echo_forms(&auth)
                    .iter()
                    .map(|f| format!("{{\"id\":\"{f}\",\"object\":\"model\"}}"))
                    .collect();
                let b = format!("{{\"object\":\"list\",\"data\":[{}]}}", ids.join(","));
                return write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                    b.len()
                );
            }
            _ => {}
        }
        let b = r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#;
        return write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
            b.len()
        );
    }
    bodies
        .lock()
        .unwrap()
        .push(String::from_utf8_lossy(&body).into_owned());
    let nth = posts.fetch_add(1, Ordering::SeqCst);
    if fault == Fault::EchoEncoded401 {
        return echo_encoded_401(&mut s, &auth);
    }
    if nth < good || matches!(fault, Fault::None | Fault::Big(..) | Fault::Tokenize(..)) {
        s.write_all(SSE_HEAD.as_bytes())?;
        return s.write_all(GOOD_STREAM.as_bytes());
    }
    match fault {
        Fault::None | Fault::StallModels | Fault::Big(..) | Fault::Tokenize(..) => unreachable!(),
        Fault::ModelsEchoKey401 => {
            let b = format!("{{\"error\":\"key rejected: {auth}\"}}");
            write!(
                s,
                "HTTP/1.1 401 Unauthorized\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            )
        }
        Fault::KeyRevoked401 => {
            let b = r#"{"error":{"code":401,"message":"invalid api key","type":"authentication_error"}}"#;
            write!(
                s,
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            )
        }
        Fault::ContextOverflow400 => {
            let b = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#;
            write!(
                s,
                "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            )
        }
        Fault::AbsurdUsage => {
            s.write_all(SSE_HEAD.as_bytes())?;
            s.write_all(ABSURD_USAGE_STREAM.as_bytes())
        }
        Fault::AcceptClose => Ok(()),
        Fault::Garbage => s.write_all(b"\x00\x01GARBAGE \xff\xfe not http at all\r\n\r\n"),
        Fault::HeadersStall => {
            s.write_all(SSE_HEAD.as_bytes())?;
            thread::sleep(Duration::from_secs(30));
            Ok(())
        }
        Fault::HugeLine => {
            s.write_all(SSE_HEAD.as_bytes())?;
            s.write_all(b"data: ")?;
            let chunk = vec![b'a'; 64 * 1024];
            for _ in 0..160 {
                s.write_all(&chunk)?; // 10 MiB with no newline
            }
            Ok(())
        }
        Fault::CloseMidChunk => {
            s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
            )?;
            s.write_all(b"200\r\ndata: {\"choices\":[{\"index\":0,\"text\":\"hel")?;
            Ok(()) // closed 470 bytes short of the chunk
        }
        Fault::Http10NoLength => {
            s.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")?;
            s.write_all(GOOD_STREAM.as_bytes())
        }
        Fault::SlowDrip => {
            s.write_all(SSE_HEAD.as_bytes())?;
            for b in GOOD_STREAM.as_bytes() {
                s.write_all(&[*b])?;
                thread::sleep(Duration::from_secs(1));
            }
            Ok(())
        }
        Fault::EchoKey => {
            if nth % 2 == 1 {
                let b = format!("{{\"error\":{{\"message\":\"invalid credentials '{auth}'\"}}}}");
                write!(
                    s,
                    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                    b.len()
                )
            } else {
                s.write_all(SSE_HEAD.as_bytes())?;
                s.write_all(b"data: {\"choices\":[{\"index\":0,\"text\":\"hi\"}]}\n\n")?;
                write!(
                    s,
                    "data: {{\"error\":{{\"message\":\"token expired: {auth}\",\"code\":401}}}}\n\n"
                )
            }
        }
        Fault::EchoEncoded401 => unreachable!(),
        Fault::EchoEncoded => {
            let forms = echo_forms(&auth).join(" | ");
            if nth % 2 == 1 {
                let b = format!("{{\"error\":{{\"message\":\"credentials not accepted: {forms}\"}}}}");
                write!(
                    s,
                    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                    b.len()
                )
            } else {
                s.write_all(SSE_HEAD.as_bytes())?;
                s.write_all(b"data: {\"choices\":[{\"index\":0,\"text\":\"hi\"}]}\n\n")?;
                write!(
                    s,
                    "data: {{\"error\":{{\"message\":\"token expired: {forms}\",\"code\":401}}}}\n\n"
                )
            }
        }
        Fault::MalformedEcho => {
            s.write_all(SSE_HEAD.as_bytes())?;
            write!(s, "data: {} {auth} tail\n\ndata: [DONE]\n\n", "x".repeat(100))
        }
        Fault::EchoHead => {
            let b = format!(
                "{{\"error\":{{\"message\":{}}}}}",
                serde_json::to_string(&format!("upstream rejected: {head}")).unwrap()
            );
            write!(
                s,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            )
        }
        Fault::HoldMs(ms) => {
            thread::sleep(Duration::from_millis(ms));
            s.write_all(SSE_HEAD.as_bytes())?;
            s.write_all(GOOD_STREAM.as_bytes())
        }
        Fault::BigText(kib, done) => {
            s.write_all(SSE_HEAD.as_bytes())?;
            // Words the tiny tokenizer knows, so re-tokenizing does real work.
            let words = "baba babai babe bibo ".repeat(50);
            let event = format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{words}\"}}]}}\n\n");
            for _ in 0..kib {
                s.write_all(event.as_bytes())?;
            }
            if done {
                s.write_all(b"data: [DONE]\n\n")
            } else {
                thread::sleep(Duration::from_secs(30));
                Ok(())
            }
        }
        Fault::RedirectTo(port) => write!(
            s,
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:{port}/v1/completions\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    }
}

/// The [`Page`] a request head asks for, if any.
fn page_of(head: &str) -> Option<Page> {
    let first = head.lines().next().unwrap_or("");
    [
        ("GET /v1/models", Page::Models),
        ("GET /metrics", Page::Metrics),
        ("GET /version", Page::Version),
        ("POST /tokenize", Page::Tokenize),
    ]
    .into_iter()
    .find_map(|(p, page)| first.starts_with(p).then_some(page))
}

/// The value of header `name` (lower case) in `head`, or "".
fn header_of(head: &str, name: &str) -> String {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// A [`Fault::Big`] answer: `page`'s valid body padded to about `len` bytes, with no
/// `Content-Length` (closed at the end), written 64 KiB at a time and counted in `streamed`
/// as it goes, until done or the client closes.
fn big(s: &mut TcpStream, page: Page, len: usize, streamed: &AtomicUsize) -> std::io::Result<()> {
    let (ctype, open, pad, close): (&str, &str, &str, &str) = match page {
        Page::Models => (
            "application/json",
            "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"object\":\"model\"}",
            ",{\"id\":\"pad\"}",
            "]}",
        ),
        Page::Metrics => (
            "text/plain; version=0.0.4",
            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n",
            "# padding padding padding padding padding padding padding padding\n",
            "",
        ),
        Page::Version => (
            "application/json",
            "{\"version\":\"0.9.9-big\",\"pad\":\"",
            "xxxxxxxxxxxxxxxx",
            "\"}",
        ),
        Page::Tokenize => ("application/json", "{\"tokens\":[7", ",7", "]}"),
    };
    write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nConnection: close\r\n\r\n{open}"
    )?;
    let chunk = pad.repeat((64 * 1024) / pad.len());
    let mut sent = open.len();
    while sent < len {
        s.write_all(chunk.as_bytes())?;
        sent += chunk.len();
        streamed.store(sent, Ordering::SeqCst);
    }
    s.write_all(close.as_bytes())?;
    streamed.store(sent + close.len(), Ordering::SeqCst);
    Ok(())
}

fn echo_encoded_401(s: &mut TcpStream, auth: &str) -> std::io::Result<()> {
    let b = format!(
        "{{\"error\":\"invalid credentials: {}\"}}",
        echo_forms(auth).join(" | ")
    );
    write!(
        s,
        "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
        b.len()
    )
}
