mod support;
use support::*;

// The server answers beside the load (issue 32, "Bounded, always" and "a property test per
// channel"): `/v1/models`, `/metrics`, `/version` and `/tokenize` each have a size cap. The
// fault server streams each page past its cap (never holding it in memory) and counts the
// bytes it got to write: the run reads no further than its cap (the server is cut off well
// before the end of its page), goes on or stops as the channel's rule says, and a control
// run with the same page under the cap shows the page is read at all. Then `/tokenize`
// answers with hostile values: each is refused before any load, naming what came back, with
// the key the server echoes scrubbed, and nothing is stored. All traffic stays on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use ladder::results::ResultDir;

const MIB: usize = 1 << 20;

/// A one-rung-and-baseline scenario against `server` with the key sent, `extra` appended.
fn scenario(dir: &Path, server: &FaultServer, extra: &'static str) -> PathBuf {
    let mut sc = Sc::new(server.url());
    sc.key = true;
    sc.extra = extra;
    sc.write(dir)
}

fn run(sc: &Path, out: &Path) -> Ran {
    let r = run_ladder(sc, out, Duration::from_secs(120));
    no_panic(&r);
    assert!(!r.all().contains(KEY), "the key was printed:\n{}", r.all());
    r
}

/// The run completed, its folder is whole and holds no key; returns the folder, loaded.
fn completed(r: &Ran, out: &Path) -> ResultDir {
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let dir = run_dir(out).expect("a result folder");
    assert!(!all_text_under(&dir).contains(KEY));
    check_folder(&dir)
}

/// The server began a page of `total` bytes and was cut off by the client after at most
/// `cap` plus what the sockets' buffers hold (well under 32 MiB on loopback).
fn cut_off(server: &FaultServer, cap: usize, total: usize) {
    let n = server.streamed.load(Ordering::SeqCst);
    assert!(n > 0, "the oversized page was never asked for");
    assert!(
        n < total,
        "the client read the whole {total}-byte page (the cap is {cap})"
    );
}

/// Over the cap: `total` bytes, the cap plus more than any socket buffers hold.
fn oversized(cap: usize) -> usize {
    cap + 32 * MIB
}

#[test]
fn a_models_list_over_its_cap_is_not_read_and_the_model_check_is_said_to_be_skipped() {
    let want = "answered more than 4 MiB, far more than a list of models: not read, so the \
                model was not checked against it";
    // Under the cap: read, the model is in it, nothing said.
    let small = fault_server(Fault::Big(Page::Models, 64 * 1024), 0);
    let t = tempfile::tempdir().unwrap();
    let r = run(&scenario(t.path(), &small, ""), &t.path().join("out"));
    completed(&r, &t.path().join("out"));
    assert!(!r.stderr.contains(want), "{}", r.stderr);
    assert!(!r.stderr.contains("is not in"), "{}", r.stderr);
    assert!(small.streamed.load(Ordering::SeqCst) >= 64 * 1024);

    let total = oversized(4 * MIB);
    let big = fault_server(Fault::Big(Page::Models, total), 0);
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let r = run(&scenario(t.path(), &big, ""), &out);
    let rd = completed(&r, &out);
    cut_off(&big, 4 * MIB, total);
    assert!(
        r.stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains(want)),
        "{}",
        r.stderr
    );
    assert!(
        rd.info.warnings.iter().any(|w| w.contains(want)),
        "{:?}",
        rd.info.warnings
    );
    // Not one padding entry of the list was kept anywhere.
    assert!(!all_text_under(&rd.path).contains("\"pad\""));
}

#[test]
fn a_metrics_page_over_its_cap_is_one_warning_and_the_run_goes_on() {
    // A scrape may take the interval: 3 s to read 8 MiB on a loaded machine.
    let extra = "server_metrics:\n  interval: 3s\n";
    // Under the cap: scraped (one request running on every scrape).
    let small = fault_server(Fault::Big(Page::Metrics, 256 * 1024), 0);
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let r = run(&scenario(t.path(), &small, extra), &out);
    let rd = completed(&r, &out);
    assert!(!r.stderr.contains("cannot scrape"), "{}", r.stderr);
    assert!(
        rd.rungs
            .iter()
            .any(|g| g.summary.server.get("server_max_running") == Some(1.0)),
        "the page under the cap was scraped"
    );

    let cap = ladder::servermetrics::MAX_PAGE_BYTES;
    let total = oversized(cap);
    let big = fault_server(Fault::Big(Page::Metrics, total), 0);
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let r = run(&scenario(t.path(), &big, extra), &out);
    let rd = completed(&r, &out);
    cut_off(&big, cap, total);
    let warnings: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("cannot scrape server metrics"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", r.stderr);
    assert!(
        warnings[0].contains(&format!("the page is larger than {cap} bytes")),
        "{}",
        warnings[0]
    );
    for g in &rd.rungs {
        assert_eq!(g.summary.server.get("server_max_running"), None);
        assert!(g
            .summary
            .server
            .get("server_scrape_failures")
            .is_some_and(|n| n >= 1.0));
    }
    assert!(!all_text_under(&rd.path).contains("padding padding"));
}

#[test]
fn an_identity_page_over_its_cap_is_no_identity() {
    // Under the cap: the version is read into run.json.
    let extra = "server_metrics:\n  interval: 100ms\n";
    let small = fault_server(Fault::Big(Page::Version, 4096), 0);
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let r = run(&scenario(t.path(), &small, extra), &out);
    let rd = completed(&r, &out);
    let server = rd.info.server.as_ref().expect("the identity under the cap");
    assert_eq!(server.version.as_deref(), Some("0.9.9-big"));

    let cap = MIB;
    let total = oversized(cap);
    let big = fault_server(Fault::Big(Page::Version, total), 0);
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let r = run(&scenario(t.path(), &big, extra), &out);
    let rd = completed(&r, &out);
    cut_off(&big, cap, total);
    assert!(rd.info.server.is_none(), "{:?}", rd.info.server);
    assert!(!all_text_under(&rd.path).contains("0.9.9-big"));
}

/// `tokenizer: server` against the fault server: the scenario's tokenizer line replaced.
fn server_tokenizer(dir: &Path, server: &FaultServer) -> PathBuf {
    let p = scenario(dir, server, "");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace(&format!("tokenizer: {TOKENIZER}"), "tokenizer: server");
    std::fs::write(&p, text).unwrap();
    p
}

/// A refused run: exit 2, `error:` with `want`, no folder, no key anywhere.
fn refused(r: &Ran, out: &Path, want: &str) {
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("error:"), "{}", r.stderr);
    assert!(r.stderr.contains(want), "want {want:?}:\n{}", r.stderr);
    assert!(run_dir(out).is_none(), "a folder was written");
}

#[test]
fn a_tokenize_answer_over_its_cap_is_refused_at_the_cap() {
    let cap = 16 * MIB;
    let total = oversized(cap);
    let big = fault_server(Fault::Big(Page::Tokenize, total), 0);
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let r = run(&server_tokenizer(t.path(), &big), &out);
    refused(
        &r,
        &out,
        "/tokenize answered more than 16 MiB, far more than a token list of any prompt: not read",
    );
    cut_off(&big, cap, total);
    // Only preflight's short probe was sent before the tokenizer; no load.
    assert_eq!(big.posts.load(Ordering::SeqCst), 1);
}

/// Hostile `/tokenize` answers: negative, fractional, huge or quoted ids, other shapes, a
/// count far past the text's length, an empty list, and the key echoed in a 200 and in a
/// 400. Each stops the run before any load with what came back (the key as `***`).
#[test]
fn hostile_tokenize_answers_are_refused_before_any_load_and_the_key_is_scrubbed() {
    let not_ids = "answered with something other than a list of token ids";
    let cases: Vec<(u16, &'static str, &str)> = vec![
        (200, r#"{"tokens":[-1,2,3]}"#, not_ids),
        (200, r#"{"tokens":[1.5,2]}"#, not_ids),
        (200, r#"{"tokens":[1e20]}"#, not_ids),
        (200, r#"{"tokens":[18446744073709551616]}"#, not_ids),
        (200, r#"{"tokens":"1 2 3"}"#, not_ids),
        (200, r#"{"tokens":["1","2"]}"#, not_ids),
        (200, r#"{"tokens":[{"id":1}]}"#, not_ids),
        (200, r#"{"count":3}"#, not_ids),
        (200, "[1,2,3]", not_ids),
        (200, "<html>tokenize</html>", not_ids),
        (
            200,
            r#"{"tokens":[]}"#,
            "counted no tokens in a non-empty text",
        ),
        (200, r#"{"error":"bad key {auth}","tokens":null}"#, not_ids),
        (
            400,
            r#"{"error":"bad key {auth}"}"#,
            "answered 400 Bad Request",
        ),
    ];
    for (status, body, want) in cases {
        let server = fault_server(Fault::Tokenize(status, body), 0);
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        let r = run(&server_tokenizer(t.path(), &server), &out);
        refused(&r, &out, want);
        assert_eq!(server.posts.load(Ordering::SeqCst), 1, "{body}");
        // What came back is quoted, the echoed key scrubbed from it (`run` checked it is
        // nowhere in the output).
        if body.contains("{auth}") {
            assert!(r.stderr.contains("bad key Bearer ***"), "{}", r.stderr);
        }
    }
    // Ids no tokenizer makes of a 30-byte text: 5000 of them.
    let many: &'static str =
        Box::leak(format!("{{\"tokens\":[{}1]}}", "7,".repeat(4999)).into_boxed_str());
    let server = fault_server(Fault::Tokenize(200, many), 0);
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let r = run(&server_tokenizer(t.path(), &server), &out);
    refused(
        &r,
        &out,
        "counted 5000 tokens in a text of 30 bytes: a tokenizer makes at most one token a byte",
    );
}
