mod support;
use support::real::real;
use support::*;

// `tokenizer: server` (the server's own /tokenize counts the prompts) and `tokenizer: none`
// (dataset prompts go out uncounted, the server's usage counts them), against the simulator,
// a server without /tokenize, and the real llama-server that .ci/run starts.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use serde_json::Value;

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A one-rung scenario named `rel` at 50 req/s; `workload` is the block's body.
fn scenario(dir: &Path, base_url: &str, api: &str, tokenizer: &str, workload: &str) -> PathBuf {
    let sim = if base_url == "sim" {
        "sim:\n  speed: 20\n  chat_template_tokens: 31\n"
    } else {
        ""
    };
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: {base_url}\n  api: {api}\n  \
         request_timeout: 60s\nmodel: m\ntokenizer: {tokenizer}\nworkload:\n{workload}  seed: 0\n\
         load:\n  arrival: constant\n  rates: [50]\n  warmup_requests: 0\n  cooldown: 0s\n{sim}"
    );
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run_ok(sc: &Path, out: &Path) -> (Ran, PathBuf) {
    let r = run_ladder(sc, out, Duration::from_secs(120));
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    (r, run_dir(out).expect("a result folder"))
}

#[test]
fn server_tokenizer_makes_prompts_exactly_as_long_as_the_server_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(
        tmp.path(),
        "sim",
        "completions",
        "server",
        "  dataset: random\n  input_tokens: 40\n  output_tokens: 4\n  range_ratio: 0.5\n  \
         requests_per_rung: 12\n",
    );
    let (r, dir) = run_ok(&sc, tmp.path());
    assert!(
        r.stderr
            .contains("/tokenize (vllm shape) counts the prompts"),
        "{}",
        r.stderr
    );
    let ls = lines(&dir.join("requests_rate_50.jsonl"));
    assert_eq!(ls.len(), 12);
    let mut lengths = std::collections::BTreeSet::new();
    for l in &ls {
        assert_eq!(l["ok"], true, "{l}");
        // ladder's count is the server's count, request by request, across drawn lengths.
        assert_eq!(l["input_tokens"], l["server_prompt_tokens"], "{l}");
        let n = l["input_tokens"].as_u64().unwrap();
        assert!((20..=60).contains(&n), "{l}");
        lengths.insert(n);
    }
    assert!(
        lengths.len() > 3,
        "range_ratio drew several lengths: {lengths:?}"
    );
    let info = json(&dir.join("run.json"));
    assert_eq!(info["tokenizer_source"]["kind"], "server", "{info}");
    assert_eq!(info["tokenizer_source"]["tokenize_api"], "vllm", "{info}");
    assert!(info["tokenizer_source"].get("path").is_none(), "{info}");
    let fp = info["tokenizer_sha256"].as_str().unwrap();
    assert_eq!(
        fp.len(),
        64,
        "a fingerprint of the server's tokenizer: {info}"
    );
}

#[test]
fn server_tokenizer_with_chat_and_input_length_server_hits_the_length_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(
        tmp.path(),
        "sim",
        "chat",
        "server",
        "  dataset: random\n  input_tokens: 64\n  output_tokens: 4\n  input_length: server\n  \
         requests_per_rung: 6\n",
    );
    let (_, dir) = run_ok(&sc, tmp.path());
    for l in lines(&dir.join("requests_rate_50.jsonl")) {
        // The sim's chat template adds 31 tokens; the text is 31 shorter by the server's count.
        assert_eq!(l["server_prompt_tokens"], 64, "{l}");
        assert_eq!(l["input_tokens"], 64, "{l}");
    }
    assert_eq!(json(&dir.join("run.json"))["prompt_overhead"], 31);
}

#[test]
fn no_tokenizer_sends_dataset_prompts_and_records_the_servers_count() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("p.jsonl");
    let mut text = String::new();
    for i in 0..5 {
        let words: Vec<String> = (0..(7 + 3 * i)).map(|j| format!("w{j}")).collect();
        text.push_str(&format!(
            "{}\n",
            serde_json::json!({ "prompt": words.join(" "), "output_tokens": 3 })
        ));
    }
    std::fs::write(&data, text).unwrap();
    let sc = scenario(
        tmp.path(),
        "sim",
        "completions",
        "none",
        "  dataset: jsonl\n  path: p.jsonl\n  output_tokens: 4\n  requests_per_rung: 5\n",
    );
    let (r, dir) = run_ok(&sc, tmp.path());
    // The long probe names the longest text by its characters (nothing counted its tokens).
    assert!(
        r.stderr
            .contains("the longest prompt (65 characters, 19 by the server's count)"),
        "{}",
        r.stderr
    );
    let mut got: Vec<(u64, u64)> = lines(&dir.join("requests_rate_50.jsonl"))
        .iter()
        .map(|l| {
            assert_eq!(l["ok"], true, "{l}");
            assert_eq!(l["requested_output_tokens"], 3, "{l}");
            (
                l["input_tokens"].as_u64().unwrap(),
                l["server_prompt_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    // The sim counts one token per word: 7, 10, 13, 16, 19.
    assert_eq!(got, vec![(7, 7), (10, 10), (13, 13), (16, 16), (19, 19)]);
    let rung = json(&dir.join("result_rate_50.json"));
    assert_eq!(rung["total_input_tokens"], 65, "{rung}");
    let info = json(&dir.join("run.json"));
    assert_eq!(info["tokenizer_source"]["kind"], "none", "{info}");
    assert_eq!(info["tokenizer_sha256"], "", "{info}");
}

#[test]
fn no_tokenizer_refuses_random_prompts_before_any_load() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(
        tmp.path(),
        "sim",
        "completions",
        "none",
        "  dataset: random\n  input_tokens: 16\n  output_tokens: 4\n  requests_per_rung: 5\n",
    );
    let r = ladder_cmd(&["validate", sc.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("rel.yaml:8:"), "the tokenizer line: {err}");
    assert!(err.contains("needs a tokenizer"), "{err}");
    assert!(err.contains("`server`"), "names the alternative: {err}");
}

/// Serves `/v1/models` and streams completions like a server, but has no `/tokenize` (404,
/// as a gateway that does not forward it). Counts the completion POSTs.
fn server_without_tokenize() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let completions = Arc::new(AtomicUsize::new(0));
    let c2 = completions.clone();
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let c3 = c2.clone();
            thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let Ok((head, mut body)) = read_head(&mut s) else {
                    return;
                };
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while body.len() < len {
                    let mut b = vec![0u8; len - body.len()];
                    match s.read(&mut b) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => body.extend_from_slice(&b[..n]),
                    }
                }
                let reply = if head.starts_with("GET /v1/models") {
                    let b = r#"{"data":[{"id":"m"}]}"#;
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                        b.len()
                    )
                } else if head.starts_with("POST /v1/completions") {
                    c3.fetch_add(1, Ordering::SeqCst);
                    format!("{SSE_HEAD}{GOOD_STREAM}")
                } else {
                    let b = r#"{"detail":"Not Found"}"#;
                    format!(
                        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                        b.len()
                    )
                };
                let _ = s.write_all(reply.as_bytes());
            });
        }
    });
    (url, completions)
}

#[test]
fn a_server_without_tokenize_is_named_at_preflight_and_no_load_is_sent() {
    let (url, completions) = server_without_tokenize();
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(
        tmp.path(),
        &url,
        "completions",
        "server",
        "  dataset: random\n  input_tokens: 16\n  output_tokens: 2\n  requests_per_rung: 5\n",
    );
    let r = run_ladder(&sc, tmp.path(), Duration::from_secs(60));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("/tokenize answered 404"), "{}", r.stderr);
    assert!(r.stderr.contains("use a local tokenizer"), "{}", r.stderr);
    // Only preflight's short probe reached the completions endpoint; no folder was written.
    assert_eq!(completions.load(Ordering::SeqCst), 1);
    assert!(run_dir(tmp.path()).is_none());
}

// ---- the real llama-server (.ci/run starts it; skipped without it) -------------------------

/// The real server's `/tokenize` count of `text` (llama.cpp's shape, no BOS).
fn llama_tokenize(url: &str, text: &str) -> usize {
    let addr = url.trim_start_matches("http://");
    let body = serde_json::json!({ "content": text, "add_special": false }).to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST /tokenize HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (_, json_body) = reply.split_once("\r\n\r\n").expect("an HTTP answer");
    let v: Value = serde_json::from_str(json_body.trim()).expect("a JSON body");
    v["tokens"].as_array().expect("tokens").len()
}

#[test]
fn real_server_tokenizer_matches_the_local_tokenizer_and_the_servers_usage() {
    let Some(s) = real("real_server_tokenizer", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    // The same texts, counted by the GGUF's own tokenizer through /tokenize and by the
    // tokenizer.json converted from it: they agree.
    let local = ladder::tokens::load(Path::new(&s.tokenizer)).unwrap();
    for text in [
        "The quick brown fox jumps over the lazy dog.",
        "Größe, naïve café; 東京 — ¿qué? {\"json\": [1, 2.5e-3]}",
        "  leading spaces and\ttabs\nand newlines  ",
    ] {
        assert_eq!(
            llama_tokenize(&s.url, text),
            ladder::tokens::count(&local, text) as usize,
            "{text:?}"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: {}\n  api: completions\n  \
         request_timeout: 60s\nmodel: {}\ntokenizer: server\nworkload:\n  dataset: random\n  \
         input_tokens: 48\n  output_tokens: 4\n  ignore_eos: true\n  requests_per_rung: 3\n  \
         seed: 0\nload:\n  arrival: constant\n  rates: [2]\n  warmup_requests: 0\n  \
         cooldown: 0s\n",
        s.url, s.model
    );
    let sc = tmp.path().join("rel.yaml");
    std::fs::write(&sc, text).unwrap();
    let r = run_ladder(&sc, tmp.path(), Duration::from_secs(180));
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    assert!(r.stderr.contains("(llama.cpp shape)"), "{}", r.stderr);
    let dir = run_dir(tmp.path()).unwrap();
    let ls = lines(&dir.join("requests_rate_2.jsonl"));
    assert_eq!(ls.len(), 3);
    for l in &ls {
        // Synthesised with the server's tokenizer, exactly as long by the server's usage.
        assert_eq!(l["input_tokens"], 48, "{l}");
        assert_eq!(l["server_prompt_tokens"], 48, "{l}");
    }
    let info = json(&dir.join("run.json"));
    assert_eq!(
        info["tokenizer_source"]["tokenize_api"], "llama.cpp",
        "{info}"
    );
}
