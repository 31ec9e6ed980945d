//! Reasoning models end to end against the built-in simulator (`sim.reasoning_tokens`): the
//! thinking counts as output, TTFT is the first token of any kind and TTFC the first token of
//! the answer, the reasoning and content tokens are split as the server reports them, every
//! output says so, and a gate can hold TTFC. A model that does not reason gets none of it.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// 24 requests at 10 req/s, 16 output tokens of which `reasoning` are thinking.
fn scenario(dir: &Path, api: &str, reasoning: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  api: {api}\n\
         model: m\ntokenizer: {TOKENIZER}\nworkload:\n  dataset: random\n  input_tokens: 16\n  \
         output_tokens: 16\n  ignore_eos: true\n  requests_per_rung: 24\n  seed: 0\n\
         load:\n  arrival: poisson\n  rates: [10]\n  warmup_requests: 0\n  cooldown: 0s\n\
         sim:\n  seed: 0\n  speed: 4\n  served_model_names: [m]\n  reasoning_tokens: {reasoning}\n"
    );
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(scenario: &Path, out: &Path) -> (PathBuf, Ran) {
    let r = spawn_run(scenario, out).finish(LIMIT);
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    (run_dir(out).expect("a run folder"), r)
}

#[test]
fn a_reasoning_model_gets_ttfc_and_a_token_split_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "chat", 10);
    let (dir, ran) = run(&sc, &tmp.path().join("out"));
    let rd = check_folder(&dir);
    let rung = &rd.rungs[0];
    let s = &rung.summary;
    assert_eq!(s.completed, 24, "{}", ran.all());
    // Thinking is output: 16 tokens per request, 10 of them reasoning, as usage says.
    assert_eq!(s.total_output_tokens, 24 * 16);
    let r = s.reasoning.as_ref().expect("reasoning keys");
    assert_eq!(r.requests, 24);
    assert_eq!(r.total_reasoning_tokens, 24 * 10);
    assert_eq!(r.total_content_tokens, 24 * 6);
    // Each request's answer starts after its thinking: TTFC is later than TTFT, by exactly
    // the ten inter-token gaps between the first reasoning token and the first content one.
    let lines = rd.requests(rung).unwrap();
    for l in &lines {
        assert_eq!(l.reasoning_tokens, Some(10), "{l:?}");
        let (ttft, ttfc) = (l.ttft_ms.unwrap(), l.ttfc_ms.unwrap());
        let ten: f64 = l.itl_ms[..10].iter().sum();
        assert!((ttfc - ttft - ten).abs() < 0.01, "{ttft} {ttfc} {ten}");
    }
    assert!(r.ttfc.median > s.stats(ladder::metrics::Latency::Ttft).median);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(&rung.entry.result_file)).unwrap()).unwrap();
    assert_eq!(json["total_reasoning_tokens"], 240);
    assert!(json["median_ttfc_ms"].as_f64().unwrap() > json["median_ttft_ms"].as_f64().unwrap());
    // The terminal, summary.md and report.html say it.
    assert!(ran.all().contains("p50 TTFC"), "{}", ran.all());
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| TTFC p50 (ms)"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h3>Reasoning</h3>"));

    // A gate on TTFC against itself passes with a bootstrapped verdict.
    let gate = spawn(ladder_cmd(&[
        "compare",
        dir.to_str().unwrap(),
        dir.to_str().unwrap(),
        "--threshold",
        "median_ttfc_ms=+50%",
    ]))
    .finish(LIMIT);
    no_panic(&gate);
    assert_eq!(gate.status.code(), Some(0), "{}", gate.all());
    assert!(gate.all().contains("median_ttfc_ms"), "{}", gate.all());

    // A model that thinks longer (14 of its 16 tokens before the answer instead of 10): TTFC
    // moves by four more inter-token gaps (about +30 %), TTFT does not, and the gate on TTFC
    // says so. The threshold leaves room for a loaded machine's noise at 24 requests (a
    // +20 % threshold made the check inconclusive under a load average of 4).
    let longer = scenario(&tmp.path().join("longer"), "chat", 14);
    let (cand, _) = run(&longer, &tmp.path().join("out-longer"));
    let gate = spawn(ladder_cmd(&[
        "compare",
        dir.to_str().unwrap(),
        cand.to_str().unwrap(),
        "--threshold",
        "median_ttfc_ms=+10%",
    ]))
    .finish(LIMIT);
    no_panic(&gate);
    assert_eq!(gate.status.code(), Some(1), "{}", gate.all());
    assert!(gate.all().contains("REGRESSION"), "{}", gate.all());
}

#[test]
fn a_model_that_does_not_reason_gets_no_reasoning_keys() {
    let tmp = tempfile::tempdir().unwrap();
    // Completions never reason, even on a simulator set to.
    let sc = scenario(tmp.path(), "completions", 10);
    let (dir, ran) = run(&sc, &tmp.path().join("out"));
    let rd = check_folder(&dir);
    let rung = &rd.rungs[0];
    assert!(rung.summary.reasoning.is_none());
    let text = std::fs::read_to_string(dir.join(&rung.entry.result_file)).unwrap();
    assert!(!text.contains("ttfc"), "{text}");
    let lines = std::fs::read_to_string(dir.join(&rung.entry.requests_file)).unwrap();
    assert!(!lines.contains("reasoning_tokens"));
    assert!(!ran.all().contains("TTFC"));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(!md.contains("TTFC"));
}
