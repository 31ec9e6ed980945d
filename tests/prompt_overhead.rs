//! `workload.input_length`: preflight measures the tokens a server adds to every prompt (here
//! the simulator's chat template) from its usage; `text` (the default) records and notes it,
//! `server` shortens the text by it so the server counts exactly `input_tokens`.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn scenario(dir: &Path, input_tokens: u32, input_length: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  api: chat\n\
         model: m\ntokenizer: {TOKENIZER}\nworkload:\n  dataset: random\n  \
         input_tokens: {input_tokens}\n  range_ratio: 0.2\n  input_length: {input_length}\n  \
         output_tokens: 4\n  requests_per_rung: 20\n  seed: 0\n\
         load:\n  arrival: poisson\n  rates: [20]\n  warmup_requests: 0\n  cooldown: 0s\n\
         sim:\n  seed: 0\n  speed: 4\n  served_model_names: [m]\n  chat_template_tokens: 12\n"
    );
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(sc: &Path, out: &Path) -> Ran {
    let r = spawn_run(sc, out).finish(LIMIT);
    no_panic(&r);
    r
}

#[test]
fn server_length_makes_the_server_count_exactly_input_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = run(&scenario(tmp.path(), 40, "server"), &out);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.all().contains("adds 12 tokens"), "{}", r.all());
    let rd = check_folder(&run_dir(&out).unwrap());
    assert_eq!(rd.info.prompt_overhead, Some(12));
    let lines = rd.requests(&rd.rungs[0]).unwrap();
    assert_eq!(lines.len(), 20);
    for l in &lines {
        // Each request's drawn length (32..=48) is what the server counted.
        assert_eq!(l.server_prompt_tokens, Some(l.input_tokens), "{l:?}");
        assert!((32..=48).contains(&l.input_tokens), "{l:?}");
    }
    assert!(
        rd.info
            .warnings
            .iter()
            .all(|w| !w.contains("prompt tokens")),
        "{:?}",
        rd.info.warnings
    );
}

#[test]
fn text_length_records_the_overhead_and_says_how_to_compensate() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = run(&scenario(tmp.path(), 40, "text"), &out);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.all().contains("input_length: server"), "{}", r.all());
    let rd = check_folder(&run_dir(&out).unwrap());
    assert_eq!(rd.info.prompt_overhead, Some(12));
    for l in rd.requests(&rd.rungs[0]).unwrap() {
        assert_eq!(l.server_prompt_tokens, Some(l.input_tokens + 12), "{l:?}");
    }
}

#[test]
fn an_overhead_that_leaves_no_room_for_text_stops_before_load() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // 12 drawn as low as 9 by range_ratio 0.2: the template alone is longer.
    let r = run(&scenario(tmp.path(), 12, "server"), &out);
    assert_ne!(r.status.code(), Some(0), "{}", r.all());
    assert!(r.all().contains("adds 12 tokens"), "{}", r.all());
    assert!(r.all().contains("workload.input_length"), "{}", r.all());
}
