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

#[test]
fn identical_context_overflow_rejections_stop_the_ladder_with_the_servers_message() {
    // The probe is answered; every measured request gets the 400.
    let server = fault_server(Fault::ContextOverflow400, 1);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.n = 40;
    sc.baseline = 20.0;
    sc.rates = "[40, 80]";
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_ladder(&path, &out, Duration::from_secs(90));
    no_panic(&ran);
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    let err = ran.stderr.clone();
    assert!(err.contains("exceed_context_size_error"), "{err}");
    assert!(err.contains("HTTP 400"), "{err}");
    assert!(err.contains("not overload"), "{err}");
    assert!(err.contains("input_tokens"), "the likely cause: {err}");
    assert!(!err.contains(": overloaded"), "{err}");
    // Stopped on the first rung: far fewer than the 120 requests of the ladder were sent
    // (those already in flight when the fifth rejection came back still went out).
    let posts = server.posts.load(Ordering::SeqCst);
    assert!(posts < 1 + 40, "{posts} requests sent");
    let dir = run_dir(&out).expect("a folder");
    let rd = ResultDir::open(&dir).unwrap();
    assert_eq!(rd.info.status, RunStatus::Failed);
    let detail = rd.info.status_detail.clone().unwrap_or_default();
    assert!(detail.contains("exceed_context_size_error"), "{detail}");
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
