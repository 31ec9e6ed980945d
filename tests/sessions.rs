//! Multi-turn sessions (`workload.sessions`) end to end: the history each turn carries,
//! checked on the server side; TTFT rising with the history on the simulator; sessions ×
//! turns accounting on a concurrency rung; a failed turn ending its session; and the
//! scenario checks that refuse what sessions cannot do.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use ladder::results::{RequestLine, ResultDir};
use serde_json::Value;
use support::{no_panic, run_ladder, TOKENIZER};

const LIMIT: Duration = Duration::from_secs(90);

/// What the recording server saw: each chat request's `messages`, in arrival order, with the
/// answer text it streamed back.
type Seen = Arc<Mutex<Vec<(Vec<(String, String)>, String)>>>;

/// An OpenAI-compatible chat server on loopback that records every request's messages and
/// answers each with its own text (`answer-<n> ...`), so a later turn's history can be
/// matched against what was actually answered. Stops with the test process.
fn recording_server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = support::serve::listing("m")
        .route("/v1/chat/completions", post(chat))
        .with_state(seen.clone());
    (support::serve::serve(app), seen)
}

async fn chat(State(seen): State<Seen>, body: Bytes) -> axum::response::Response {
    let v: Value = serde_json::from_slice(&body).unwrap();
    let messages: Vec<(String, String)> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let words: usize = messages
        .iter()
        .map(|(_, c)| c.split_whitespace().count())
        .sum();
    let n = {
        let mut s = seen.lock().unwrap();
        let n = s.len();
        s.push((messages, format!("answer-{n} alpha beta gamma")));
        n
    };
    // Two content chunks, then usage and [DONE].
    let chunk = |text: &str| {
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]})
        )
    };
    let usage = serde_json::json!({"choices": [],
        "usage": {"prompt_tokens": words, "completion_tokens": 4, "total_tokens": words + 4}});
    let body = format!(
        "{}{}data: {usage}\n\ndata: [DONE]\n\n",
        chunk(&format!("answer-{n} alpha")),
        chunk(" beta gamma"),
    );
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from(body))
        .unwrap()
}

fn write_scenario(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("s.yaml");
    std::fs::write(&p, text.replace("{TOK}", TOKENIZER)).unwrap();
    p
}

fn the_run(out: &Path, name: &str) -> ResultDir {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out.join(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    ResultDir::open(&dirs[0]).expect("the folder loads")
}

/// The measured and warmup lines of every rung, with their session and turn.
fn lines_of(rd: &ResultDir) -> Vec<Vec<RequestLine>> {
    rd.rungs.iter().map(|r| rd.requests(r).unwrap()).collect()
}

#[test]
fn each_turn_carries_the_earlier_turns_and_the_answers_the_server_gave() {
    let (url, seen) = recording_server();
    let dir = tempfile::tempdir().unwrap();
    let sc = write_scenario(
        dir.path(),
        &format!(
            "version: 1\nname: hist\nendpoint:\n  base_url: {url}\n  api: chat\n  request_timeout: 10s\n\
             model: m\ntokenizer: {{TOK}}\nworkload:\n  input_tokens: 12\n  output_tokens: 4\n  \
             requests_per_rung: 5\n  seed: 3\n  sessions:\n    turns: 3\n    think_time: 20ms\n\
             load:\n  rates: [20]\n  warmup_requests: 1\n  cooldown: 0s\n"
        ),
    );
    let out = dir.path().join("out");
    let ran = run_ladder(&sc, &out, LIMIT);
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());

    let seen = seen.lock().unwrap().clone();
    // What each conversation prefix was answered with, and when (arrival order).
    let answered: HashMap<Vec<(String, String)>, (usize, String)> = seen
        .iter()
        .enumerate()
        .map(|(i, (m, a))| (m.clone(), (i, a.clone())))
        .collect();
    let mut by_len: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, (messages, _)) in seen.iter().enumerate() {
        *by_len.entry(messages.len()).or_default() += 1;
        assert_eq!(messages.len() % 2, 1, "user, then (assistant, user) pairs");
        for (j, (role, _)) in messages.iter().enumerate() {
            let want = if j % 2 == 0 { "user" } else { "assistant" };
            assert_eq!(role, want, "request {i} message {j}");
        }
        if messages.len() == 1 {
            continue;
        }
        // Turn k carries turn k-1's messages exactly, then the answer the server gave to
        // them, which it sent before this request arrived.
        let before = &messages[..messages.len() - 2];
        let (at, answer) = answered
            .get(before)
            .unwrap_or_else(|| panic!("request {i}: its history was never sent as a turn"));
        assert!(*at < i, "request {i}: its previous turn arrived later");
        assert_eq!(&messages[messages.len() - 2].1, answer, "request {i}");
    }
    // 6 sessions (1 warmup + 5) of 3 turns: 6 requests of each length, plus preflight's
    // single-message probes.
    assert_eq!(by_len.get(&3), Some(&6), "{by_len:?}");
    assert_eq!(by_len.get(&5), Some(&6), "{by_len:?}");
    assert!(by_len[&1] >= 6, "{by_len:?}");
    assert_eq!(by_len.len(), 3, "{by_len:?}");
    // Every session's user messages are its own: no text is sent as two turns.
    let mut firsts: Vec<&str> = seen
        .iter()
        .filter(|(m, _)| m.len() == 5)
        .flat_map(|(m, _)| m.iter().step_by(2).map(|(_, c)| c.as_str()))
        .collect();
    let n = firsts.len();
    firsts.sort_unstable();
    firsts.dedup();
    assert_eq!(firsts.len(), n, "user messages repeat across sessions");

    // The request lines say which session and turn each was, and the server's prompt count
    // grows turn by turn within a session.
    let rd = the_run(&out, "hist");
    let lines = &lines_of(&rd)[0];
    assert_eq!(lines.len(), 18);
    assert_eq!(lines.iter().filter(|l| l.warmup).count(), 3);
    let mut sessions: BTreeMap<u32, Vec<&RequestLine>> = BTreeMap::new();
    for l in lines {
        assert!(l.ok, "{l:?}");
        assert_eq!(l.session_turns, Some(3));
        sessions.entry(l.session.unwrap()).or_default().push(l);
    }
    assert_eq!(sessions.len(), 6);
    for (s, mut turns) in sessions {
        turns.sort_by_key(|l| l.turn);
        let idx: Vec<u32> = turns.iter().map(|l| l.turn.unwrap()).collect();
        assert_eq!(idx, [0, 1, 2], "session {s}");
        assert_eq!(turns[0].warmup, s == 0, "the first session is warmup");
        for w in turns.windows(2) {
            assert!(
                w[1].sent_ms >= w[0].end_ms + 20.0 - 1.0,
                "think time: {w:?}"
            );
            assert!(
                w[1].server_prompt_tokens.unwrap() > w[0].server_prompt_tokens.unwrap(),
                "history grows: {w:?}"
            );
            // ladder's own count: the earlier user message and its answer were added.
            assert!(w[1].input_tokens > w[0].input_tokens, "{w:?}");
        }
    }
    let s = rd.rungs[0].summary.sessions.as_ref().expect("session keys");
    assert_eq!((s.sessions, s.completed, s.turns_not_sent), (5, 5, 0));
    assert_eq!(s.by_turn.len(), 3);
    assert_eq!(rd.rungs[0].summary.completed, 15, "completed counts turns");
}

/// A sim scenario of `sessions` sessions of `turns` turns with costly prefill.
fn sim_scenario(name: &str, load: &str, sessions: u32, turns: &str, sim_extra: &str) -> String {
    format!(
        "version: 1\nname: {name}\nendpoint:\n  base_url: sim\n  api: chat\n  request_timeout: 20s\n\
         model: ladder-sim\ntokenizer: {{TOK}}\nworkload:\n  input_tokens: 64\n  output_tokens: 8\n  \
         requests_per_rung: {sessions}\n  seed: 1\n  sessions:\n    turns: {turns}\n    think_time: 10ms\n\
         load:\n{load}\n  warmup_requests: 0\n  cooldown: 0s\n\
         sim:\n  seed: 0\n  prefill_per_token_us: 300\n{sim_extra}"
    )
}

#[test]
fn ttft_rises_with_the_history_and_a_concurrency_rung_runs_every_session_whole() {
    let dir = tempfile::tempdir().unwrap();
    let sc = write_scenario(
        dir.path(),
        &sim_scenario("grow", "  concurrency: [1, 3]", 6, "4", ""),
    );
    let out = dir.path().join("out");
    let ran = run_ladder(&sc, &out, LIMIT);
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());
    assert!(ran.all().contains("TTFT p50 ms by turn"), "{}", ran.all());
    let rd = the_run(&out, "grow");
    assert_eq!(rd.rungs.len(), 2);
    for (rung, lines) in rd.rungs.iter().zip(lines_of(&rd)) {
        // Sessions x turns: every planned turn sent once, in order within its session.
        assert_eq!(lines.len(), 24, "rung {}", rung.summary.rate);
        let s = rung.summary.sessions.as_ref().unwrap();
        assert_eq!((s.sessions, s.completed, s.turns_planned), (6, 6, 24));
        assert_eq!(s.turns_not_sent, 0);
        assert!(s.mean_duration_ms > 0.0);
        let mut per: BTreeMap<u32, Vec<&RequestLine>> = BTreeMap::new();
        for l in &lines {
            per.entry(l.session.unwrap()).or_default().push(l);
        }
        assert_eq!(per.len(), 6);
        for turns in per.values_mut() {
            turns.sort_by_key(|l| l.turn);
            for w in turns.windows(2) {
                assert_eq!(w[1].turn.unwrap(), w[0].turn.unwrap() + 1);
                // The next turn is ready (scheduled) only after the previous answer.
                assert!(w[1].scheduled_ms >= w[0].end_ms, "{w:?}");
            }
        }
        // The 4th turn prefills 64 x 4 + 8 x 3 prompt words, the first 64: with 300 us a
        // word its TTFT is tens of milliseconds longer. With one user nothing else shares
        // the simulated engine's steps, so the difference is the history's alone.
        let t = &s.by_turn;
        assert_eq!(t.len(), 4);
        assert!(
            t[3].mean_prompt_tokens > 3.0 * t[0].mean_prompt_tokens,
            "{t:?}"
        );
        if rung.summary.rate == 1.0 {
            assert!(t[3].median_ttft_ms > t[0].median_ttft_ms, "{t:?}");
        }
        assert_eq!(rung.summary.completed, 24, "vLLM's keys count turns");
    }
    // One user runs one session at a time: its sessions never overlap.
    let first = &lines_of(&rd)[0];
    let mut spans: Vec<(f64, f64)> = Vec::new();
    let mut per: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    for l in first {
        let e = per
            .entry(l.session.unwrap())
            .or_insert((f64::INFINITY, 0.0));
        e.0 = e.0.min(l.sent_ms);
        e.1 = e.1.max(l.end_ms);
    }
    spans.extend(per.values());
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in spans.windows(2) {
        assert!(w[1].0 >= w[0].1, "sessions overlap at 1 user: {spans:?}");
    }
    let md = std::fs::read_to_string(rd.path.join("summary.md")).unwrap();
    assert!(md.contains("TTFT by turn"), "{md}");
    assert!(md.contains("Sessions:"), "{md}");
}

/// True when the simulator seeded `seed` draws an HTTP 500 (a fault of fraction `f`, the
/// first fault class) for its request `index` (the simulator's own rule).
fn sim_500(seed: u64, index: u64, f: f64) -> bool {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    rng.gen::<f64>() < f
}

#[test]
fn a_failed_turn_ends_its_session_and_later_turns_are_not_sent() {
    // A seed whose preflight probes (the simulator's requests 0 and 1) draw no fault.
    let seed = (0..1000)
        .find(|&s| !sim_500(s, 0, 0.25) && !sim_500(s, 1, 0.25))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sc = write_scenario(
        dir.path(),
        &sim_scenario(
            "fail",
            "  rates: [20]",
            12,
            "{ min: 3, max: 5 }",
            "  fault_http_500: 0.25\n",
        )
        .replace("sim:\n  seed: 0\n", &format!("sim:\n  seed: {seed}\n")),
    );
    let out = dir.path().join("out");
    let ran = run_ladder(&sc, &out, LIMIT);
    no_panic(&ran);
    let rd = the_run(&out, "fail");
    let lines = &lines_of(&rd)[0];
    let s = rd.rungs[0].summary.sessions.as_ref().unwrap();
    let mut per: BTreeMap<u32, Vec<&RequestLine>> = BTreeMap::new();
    for l in lines {
        per.entry(l.session.unwrap()).or_default().push(l);
    }
    let mut not_sent = 0;
    let mut failed_sessions = 0;
    for turns in per.values_mut() {
        turns.sort_by_key(|l| l.turn);
        let planned = turns[0].session_turns.unwrap();
        assert!((3..=5).contains(&planned));
        // Turns 0..k, all ok except possibly the last; nothing after a failure.
        for (k, l) in turns.iter().enumerate() {
            assert_eq!(l.turn, Some(k as u32));
            if !l.ok {
                assert_eq!(k + 1, turns.len(), "a turn was sent after a failed one");
                failed_sessions += 1;
            }
        }
        if turns.iter().all(|l| l.ok) {
            assert_eq!(
                turns.len() as u32,
                planned,
                "a whole session stops only on failure"
            );
        }
        not_sent += planned - turns.len() as u32;
    }
    assert!(failed_sessions > 0, "the 25% fault rate failed no turn");
    assert_eq!(s.turns_not_sent, u64::from(not_sent));
    assert_eq!(s.sessions, 12);
    assert_eq!(s.completed, 12 - failed_sessions);
    // Not-sent turns are no errors: failed counts the failed turns alone.
    let summary = &rd.rungs[0].summary;
    assert_eq!(summary.failed, failed_sessions);
    assert_eq!(summary.completed + summary.failed, lines.len() as u64);
}

fn validate(text: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let sc = write_scenario(dir.path(), text);
    let o = std::process::Command::new(support::BIN)
        .args(["validate", sc.to_str().unwrap()])
        .output()
        .unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn validate_accepts_sessions_and_refuses_what_they_cannot_do() {
    let base = sim_scenario("v", "  rates: [2]", 4, "3", "");
    let (ok, out) = validate(&base);
    assert!(ok, "{out}");
    let cases: [(&str, &str, &str); 6] = [
        ("api: chat", "api: completions", "endpoint.api: chat"),
        ("turns: 3", "turns: 0", "from 1 to"),
        ("turns: 3", "turns: { min: 4, max: 2 }", "below min"),
        ("cooldown: 0s", "cooldown: 0s\n  repeats: 2", "repeats"),
        (
            "  seed: 1\n",
            "  seed: 1\n  shared_prefix: { prefix_tokens: 8, groups: 1, prompts_per_group: 2 }\n",
            "shared_prefix",
        ),
        ("think_time: 10ms", "think_time: 2h", "limit of 1h"),
    ];
    for (from, to, says) in cases {
        let text = base.replacen(from, to, 1);
        assert_ne!(text, base, "{from}");
        let (ok, out) = validate(&text);
        assert!(!ok, "{to}: accepted\n{out}");
        assert!(out.contains(says), "{to}: {out}");
        assert!(out.contains("sessions") || out.contains("repeats"), "{out}");
    }
    // Every turn is a request: sessions x turns over the rung limit is refused up front.
    let big = base
        .replace("turns: 3", "turns: 1000")
        .replace("requests_per_rung: 4", "requests_per_rung: 2000");
    let (ok, out) = validate(&big);
    assert!(!ok && out.contains("2000000 requests in a rung"), "{out}");
    // A ramp is refused beside sessions (and says why).
    let ramp = base
        .replace("  rates: [2]\n", "  ramp: { from: 1, to: 4, over: 2s }\n")
        .replace("  requests_per_rung: 4\n", "");
    let (ok, out) = validate(&ramp);
    assert!(!ok && out.contains("load.ramp"), "{out}");
}

#[test]
fn a_session_ladder_refuses_to_be_sharded() {
    let dir = tempfile::tempdir().unwrap();
    let sc = write_scenario(dir.path(), &sim_scenario("sh", "  rates: [2]", 2, "2", ""));
    // A start within the limit (7 days ahead): only the scenario is refused.
    let soon = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let soon = format!("@{soon}");
    let o = std::process::Command::new(support::BIN)
        .args([
            "run",
            sc.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
            "--shard",
            "0/2",
            "--start-at",
            &soon,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("cannot be sharded"), "{text}");
    // One story with docs/scale-out.md: the refusal says what to do instead.
    assert!(
        text.contains("run it on one machine, without --shard, `ladder slurm` or `ladder kube`"),
        "{text}"
    );
}
