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

/// A sparse regular file one byte past its channel's limit (no disk used): a trace past 256
/// MiB, a dataset past 1 GiB (`ladder run`: refused before any request, no folder) and a
/// result folder's run.json past 64 MiB (`ladder report`, `ladder compare`): each refused
/// naming the file, its size and the limit.
#[test]
fn regular_files_past_their_limit_are_refused_end_to_end() {
    let t = tempfile::tempdir().unwrap();
    let sparse = |name: &str, len: u64| {
        let p = t.path().join(name);
        std::fs::File::create(&p).unwrap().set_len(len + 1).unwrap();
        p
    };
    let trace = sparse("big-trace.jsonl", 256 << 20);
    let data = sparse("big-data.jsonl", 1 << 30);
    let head = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  request_timeout: 5s\nmodel: m\n\
         tokenizer: {TOKENIZER}\n"
    );
    let cases = [
        (
            "trace",
            format!(
                "{head}workload:\n  seed: 0\nload:\n  cooldown: 0s\n  trace:\n    path: {}\n",
                trace.display()
            ),
            "more than the limit of 256 MiB",
        ),
        (
            "dataset",
            format!(
                "{head}workload:\n  dataset: jsonl\n  path: {}\n  output_tokens: 4\n  \
                 requests_per_rung: 3\nload:\n  rates: [40]\n  cooldown: 0s\n",
                data.display()
            ),
            "more than the limit of 1024 MiB",
        ),
    ];
    for (what, text, want) in cases {
        let sc = t.path().join(format!("{what}.yaml"));
        std::fs::write(&sc, text).unwrap();
        let out = t.path().join(format!("out-{what}"));
        let r = run_ladder(&sc, &out, Duration::from_secs(60));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(2), "{what}: {}", r.all());
        assert!(
            r.stderr.contains("error") && r.stderr.contains(want),
            "{what}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("big-"),
            "{what}: names the file: {}",
            r.stderr
        );
        assert!(run_dir(&out).is_none(), "{what}: a folder was written");
    }
    let folder = t.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    std::fs::File::create(folder.join("run.json"))
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    for args in [
        vec!["report", folder.to_str().unwrap()],
        vec![
            "compare",
            folder.to_str().unwrap(),
            folder.to_str().unwrap(),
        ],
    ] {
        let r = spawn(ladder_cmd(&args)).finish(Duration::from_secs(60));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.all());
        assert!(
            r.stderr.contains("run.json") && r.stderr.contains("more than the limit of 64 MiB"),
            "{args:?}: {}",
            r.stderr
        );
    }
}

/// A seeded property test of the two line-by-line file channels a scenario names, traces and
/// jsonl datasets (issue 32, "a property or fuzz test per channel"): a valid file with one
/// line replaced by a random hostile one (wrong types, NaN-like text, huge and negative
/// numbers, control characters and markup, a key-shaped string, a very long line) is either
/// refused by `ladder validate` with exit 2 naming the file and the line, or accepted; never a
/// panic, a hang or an echo of the key-shaped text.
#[test]
fn random_hostile_trace_and_dataset_lines_are_refused_by_line_or_accepted_never_echoed() {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const SECRET: &str = "sk_line_HOSTILE_7741_not_real";
    let values = |rng: &mut ChaCha8Rng| -> String {
        let pool: [String; 16] = [
            "-1".into(),
            "1e308".into(),
            "-1e308".into(),
            "1.5".into(),
            "18446744073709551616".into(),
            "\"12\"".into(),
            "null".into(),
            "true".into(),
            "[]".into(),
            "{}".into(),
            format!("\"{SECRET}\""),
            "\"\\u001b[2J<script>x</script>\"".into(),
            "0".into(),
            "4194305".into(),
            "NaN".into(),
            format!("\"{}\"", "x".repeat(70_000)),
        ];
        pool[rng.gen_range(0..pool.len())].clone()
    };
    let t = tempfile::tempdir().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0x32_7ace);
    let (mut refused, mut accepted) = (0, 0);
    for case in 0..24 {
        let trace = case % 2 == 0;
        let n = 6;
        let bad = rng.gen_range(0..n);
        let mut lines = Vec::new();
        for i in 0..n {
            let line = if i != bad {
                if trace {
                    format!(
                        "{{\"timestamp\": {}, \"input_length\": 16, \"output_length\": 4}}",
                        i * 100
                    )
                } else {
                    format!("{{\"prompt\": \"hello number {i}\", \"output_tokens\": 4}}")
                }
            } else {
                match rng.gen_range(0..5) {
                    // Not JSON at all (control bytes, markup, the key).
                    0 => format!("\u{1b}]0;x\u{7}<b>{SECRET}</b> {{"),
                    // A hostile value under a key the format ignores.
                    1 if trace => format!(
                        "{{\"timestamp\": {}, \"input_length\": 16, \"output_length\": 4, \
                         \"note\": {}}}",
                        i * 100,
                        values(&mut rng)
                    ),
                    1 => format!(
                        "{{\"prompt\": \"hi\", \"output_tokens\": 4, \"note\": {}}}",
                        values(&mut rng)
                    ),
                    // A field of the wrong type or value.
                    _ if trace => {
                        let field = ["timestamp", "input_length", "output_length", "hash_ids"]
                            [rng.gen_range(0..4)];
                        let mut obj = serde_json::json!({
                            "timestamp": i * 100, "input_length": 16, "output_length": 4
                        })
                        .to_string();
                        obj.pop();
                        format!("{obj}, \"{field}\": {}}}", values(&mut rng))
                    }
                    _ => {
                        let field = ["prompt", "output_tokens"][rng.gen_range(0..2)];
                        format!(
                            "{{\"prompt\": \"hi\", \"output_tokens\": 4, \"{field}\": {}}}",
                            values(&mut rng)
                        )
                    }
                }
            };
            lines.push(line);
        }
        let file = t.path().join(format!("c{case}.jsonl"));
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let (workload, load) = if trace {
            (
                "  seed: 0\n".to_string(),
                format!("  trace:\n    path: c{case}.jsonl\n  cooldown: 0s\n"),
            )
        } else {
            (
                format!(
                    "  dataset: jsonl\n  path: c{case}.jsonl\n  output_tokens: 4\n  \
                     requests_per_rung: 6\n"
                ),
                "  rates: [10]\n  cooldown: 0s\n".to_string(),
            )
        };
        let sc = t.path().join(format!("c{case}.yaml"));
        std::fs::write(
            &sc,
            format!(
                "version: 1\nname: lines\nendpoint:\n  base_url: sim\n  api: completions\n\
                 model: m\ntokenizer: {TOKENIZER}\nworkload:\n{workload}load:\n{load}"
            ),
        )
        .unwrap();
        let ran =
            spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(Duration::from_secs(60));
        no_panic(&ran);
        let all = ran.all();
        assert!(
            !all.contains(SECRET),
            "case {case}: the key-shaped text was shown:\n{all}"
        );
        // Markup is harmless on a terminal; raw control characters are not.
        assert!(
            !all.contains('\u{1b}') && !all.contains('\u{7}'),
            "case {case}: raw control characters reached the terminal:\n{all}"
        );
        match ran.status.code() {
            Some(0) => accepted += 1,
            Some(2) => {
                refused += 1;
                let at = format!("c{case}.jsonl:{}", bad + 1);
                assert!(
                    all.contains(&at) || all.contains(&format!("line {}", bad + 1)),
                    "case {case}: the refusal names neither {at} nor line {}:\n{all}",
                    bad + 1
                );
            }
            other => panic!("case {case}: exit {other:?}:\n{all}"),
        }
    }
    // Both outcomes happened: the generator exercised refusals and harmless lines.
    assert!(
        refused > 0 && accepted > 0,
        "refused {refused}, accepted {accepted}"
    );
}
