mod support;
use support::*;

// The file channels a scenario names (issue 32, "a property test per channel"): a dataset's
// prompts are the user's text, sent as written and never stored or shown. A dataset whose
// prompts carry Markdown and HTML meant to escape a report, terminal control sequences and a
// key-shaped string reaches the server (the simulator) and nothing else: no result file,
// report, stdout or stderr holds any of it, and the outputs parse.

use std::time::Duration;

/// Key-shaped text inside a prompt: must never be written.
const IN_PROMPT: &str = "sk_dataset_HOSTILE_5512_not_real";

fn hostile_prompt(i: usize) -> String {
    format!(
        "![x](http://evil.example/i{i}.png) <img src=x onerror=alert({i})> ``` `x` | *b* \
         \u{1b}[2J\u{1b}]0;owned\u{7} {IN_PROMPT} line\nbreak\r\u{2028}end"
    )
}

#[test]
fn hostile_dataset_prompts_are_sent_and_never_written_or_shown() {
    let t = tempfile::tempdir().unwrap();
    let mut data = String::new();
    for i in 0..4 {
        let line = serde_json::json!({ "prompt": hostile_prompt(i), "output_tokens": 4 });
        data.push_str(&line.to_string());
        data.push('\n');
    }
    std::fs::write(t.path().join("data.jsonl"), data).unwrap();
    let sc = t.path().join("files.yaml");
    std::fs::write(
        &sc,
        format!(
            "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  api: completions\n  \
             request_timeout: 10s\nmodel: m\ntokenizer: {TOKENIZER}\nworkload:\n  dataset: jsonl\n  \
             path: data.jsonl\n  output_tokens: 4\n  requests_per_rung: 6\n  seed: 0\nload:\n  \
             arrival: poisson\n  baseline_rate: 20\n  rates: [40]\n  cooldown: 0s\n"
        ),
    )
    .unwrap();
    let out = t.path().join("out");
    let ran = run_ladder(&sc, &out, Duration::from_secs(120));
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());
    let dir = run_dir(&out).expect("a result folder");
    check_folder(&dir);
    // The prompts were read and sent: every rung measured its requests.
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(summary.contains("| 40 |"), "{summary}");

    let rep = t.path().join("report");
    let r = spawn(ladder_cmd(&[
        "report",
        dir.to_str().unwrap(),
        "--out",
        rep.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());

    let written = format!(
        "{}{}{}{}",
        all_text_under(&dir),
        all_text_under(&rep),
        ran.all(),
        r.all()
    );
    for needle in [
        IN_PROMPT,
        "evil.example",
        "onerror",
        "owned",
        "\u{1b}",
        "\u{2028}",
    ] {
        assert!(
            !written.contains(needle),
            "{needle:?} from a dataset prompt was written or shown"
        );
    }
    // Every JSON file written parses.
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(&p).unwrap();
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
}
