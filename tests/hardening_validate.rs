//! `ladder validate` refuses what `ladder run` refuses, no input panics, templates are
//! bounded (RELIABILITY.md, "Scenario input: validate refuses what run refuses").
mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A small valid scenario against the simulator; `edit` replaces whole lines or appends.
fn scenario(dir: &Path, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  request_timeout: 5s\nmodel: m\n\
         tokenizer: {TOKENIZER}\nworkload:\n  input_tokens: 16\n  output_tokens: 4\n  \
         requests_per_rung: 3\n  seed: 0\nload:\n  baseline_rate: 50\n  rates: [100]\n  \
         cooldown: 0s\n"
    );
    for (old, new) in edits {
        if old.is_empty() {
            text.push_str(new);
            text.push('\n');
        } else {
            assert!(text.contains(old), "no `{old}` in the base scenario");
            text = text.replacen(old, new, 1);
        }
    }
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn validate(p: &Path) -> Ran {
    spawn(ladder_cmd(&["validate", p.to_str().unwrap()])).finish(Duration::from_secs(60))
}

/// Refused by validate at `file:line:col` with the key, and by run before any folder exists.
fn refused_everywhere(name: &str, edits: &[(&str, &str)], at: &str, says: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.jsonl"), "not json\n").unwrap();
    std::fs::write(dir.path().join("bad.json"), "[{\"conversations\": 5}]").unwrap();
    let p = scenario(dir.path(), edits);
    let v = validate(&p);
    no_panic(&v);
    assert_eq!(
        v.status.code(),
        Some(2),
        "{name}: validate accepted it:\n{}",
        v.all()
    );
    let want = format!("rel.yaml:{at}");
    assert!(
        v.stderr
            .lines()
            .any(|l| l.contains(&want) && l.contains(": error: ") && l.contains(says)),
        "{name}: want `{want}` … `{says}` in:\n{}",
        v.stderr
    );
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(60));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{name}: run:\n{}", r.all());
    assert!(r.stderr.contains(&want), "{name}: run says:\n{}", r.stderr);
    assert!(run_dir(&out).is_none(), "{name}: run left a result folder");
}

#[test]
fn what_run_refuses_after_load_validate_refuses_with_its_position() {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case] = &[
        ("sim setting", &[("", "sim: { max_num_seqs: 0 }")], "17:22: error: sim.max_num_seqs", "at least 1"),
        ("sim faults", &[("", "sim:\n  fault_http_500: 0.7\n  fault_http_429: 0.7")], "18:19: error: sim.fault_http_500", "add up to"),
        ("header name", &[("  request_timeout: 5s\n", "  request_timeout: 5s\n  headers: { \"bad header\": x }\n")], "6:28: error: endpoint.headers.bad header", "header name"),
        ("header value", &[("  request_timeout: 5s\n", "  request_timeout: 5s\n  headers:\n    x-a: \"line\\nbreak\"\n")], "7:10", "cannot be sent"),
        ("jsonl", &[("  input_tokens: 16\n", "  dataset: jsonl\n  path: bad.jsonl\n")], "10:9: error: workload.path", "bad.jsonl:1"),
        ("sharegpt", &[("  input_tokens: 16\n", "  dataset: sharegpt\n  path: bad.json\n")], "10:9: error: workload.path", "bad.json"),
        ("template filter", &[("  seed: 0\n", "  seed: 0\n  prompt_template: \"{{ prompt | nosuchfilter }}\"\n")], "13:20: error: workload.prompt_template", "unknown filter"),
        ("template room", &[("  seed: 0\n", "  seed: 0\n  prompt_template: \"{{ prompt }}{% for i in range(300) %} word{% endfor %}\"\n")], "13:20", "leaves no room"),
        ("rung size", &[("  input_tokens: 16", "  input_tokens: 4000000000"), ("requests_per_rung: 3", "requests_per_rung: 4000000000")], "11:22: error: workload.requests_per_rung", "limit of 1000000"),
        ("tokens per rung", &[("  input_tokens: 16", "  input_tokens: 1000000"), ("requests_per_rung: 3", "requests_per_rung: 1000")], "9:17: error: workload.input_tokens", "held in memory"),
        ("tiny rate", &[("baseline_rate: 50", "baseline_rate: 1e-20")], "14:18: error: load.baseline_rate", "rate 1e-20 is below the lowest rate"),
        ("tiny rates entry", &[("rates: [100]", "rates: [1e-30, 100]")], "15:11: error: load.rates[0]", "below the lowest rate"),
        ("burstiness huge", &[("", "  arrival: gamma\n  burstiness: 1e308")], "18:15: error: load.burstiness", "outside [0.001, 1000]"),
        ("burstiness tiny", &[("", "  arrival: gamma\n  burstiness: 1e-300")], "18:15: error: load.burstiness", "outside"),
        ("typed read deep", &[("output_tokens: 4", "output_tokens: 5000000000")], "10:18: error: workload.output_tokens", "cannot read this value"),
    ];
    for (name, edits, at, says) in cases {
        refused_everywhere(name, edits, at, says);
    }
}

#[test]
fn rates_on_the_command_line_get_the_same_limit_and_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let p = scenario(dir.path(), &[]);
    let out = dir.path().join("out");
    for rates in ["1e-30", "0.0001,5", "5,NaN"] {
        let r = spawn(ladder_cmd(&[
            "run",
            p.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--rates",
            rates,
        ]))
        .finish(Duration::from_secs(60));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(2), "--rates {rates}:\n{}", r.all());
        assert!(
            r.stderr.starts_with("error: --rates: rate "),
            "{}",
            r.stderr
        );
        assert!(run_dir(&out).is_none());
    }
}

#[test]
fn seeds_above_2_pow_63_are_seeds() {
    let dir = tempfile::tempdir().unwrap();
    for seed in ["18446744073709551615", "9223372036854775809"] {
        let p = scenario(dir.path(), &[("  seed: 0", &format!("  seed: {seed}"))]);
        let v = validate(&p);
        assert_eq!(v.status.code(), Some(0), "{}", v.all());
        let out = dir.path().join(format!("out-{seed}"));
        let r = run_ladder(&p, &out, Duration::from_secs(90));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(0), "{}", r.all());
        let info = check_folder(&run_dir(&out).unwrap());
        assert_eq!(info.info.scenario["workload"]["seed"].to_string(), seed);
    }
}

#[test]
fn a_looping_template_cannot_hang_validate() {
    let dir = tempfile::tempdir().unwrap();
    let lp = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    let cases = [
        (
            format!("  prompt_template: \"{lp}{{{{ prompt }}}}\""),
            "13:20: error: workload.prompt_template",
        ),
        (
            "  prompt_template: \"{{ prompt }}{{ 'x' * 90000000 }}{{ 'x' * 90000000 }}\""
                .to_string(),
            "13:20",
        ),
    ];
    for (line, at) in cases {
        let p = scenario(dir.path(), &[("  seed: 0", &format!("  seed: 0\n{line}"))]);
        let t0 = Instant::now();
        let v = validate(&p);
        no_panic(&v);
        assert_eq!(v.status.code(), Some(2), "{}", v.all());
        assert!(v.stderr.contains(at), "{}", v.stderr);
        assert!(
            v.stderr.contains("too much work") || v.stderr.contains("MiB (the limit)"),
            "{}",
            v.stderr
        );
        assert!(t0.elapsed() < Duration::from_secs(50));
    }
    let p = scenario(dir.path(), &[("", &format!("description: \"{lp}\""))]);
    let v = validate(&p);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(
        v.stderr
            .contains("rel.yaml:17:14: error: description: the template does too much work"),
        "{}",
        v.stderr
    );
}

// ---- property: structural fuzzing of the scenario type -----------------------------------

/// Values YAML can spell for a number, the edges first.
const EDGES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "0.5",
    "1e-30",
    "1e-300",
    "1e308",
    "1e20",
    ".nan",
    ".inf",
    "-.inf",
    "18446744073709551615",
    "-9223372036854775808",
    "9223372036854775809",
    "4294967296",
    "1e-20",
    "100",
    "4194305",
    "3",
];

/// (line to replace, template with `{}` for the value); sim fields are appended.
const FIELDS: &[(&str, &str)] = &[
    ("  input_tokens: 16", "  input_tokens: {}"),
    ("  output_tokens: 4", "  output_tokens: {}"),
    ("  requests_per_rung: 3", "  requests_per_rung: {}"),
    ("  seed: 0", "  seed: {}"),
    ("  baseline_rate: 50", "  baseline_rate: {}"),
    ("  rates: [100]", "  rates: [{}]"),
    ("", "  arrival: gamma\n  burstiness: {}"),
    ("", "  max_concurrency: {}"),
    ("", "  warmup_requests: {}"),
    (
        "  input_tokens: 16",
        "  input_tokens: 16\n  range_ratio: {}",
    ),
    ("", "slo: {{ ttft_ms: {}, max_error_rate: 0.5 }}"),
    ("", "sim: {{ speed: {} }}"),
    ("", "sim: {{ max_num_seqs: {} }}"),
    ("", "sim: {{ step_base_ms: {} }}"),
    ("", "sim: {{ max_queue_wait_ms: {} }}"),
    ("", "sweep: {{ field: input_tokens, values: [{}] }}"),
];

struct Case {
    path: PathBuf,
    edits: Vec<String>,
    quick: bool,
}

fn generate(dir: &Path, rng: &mut ChaCha8Rng, i: usize) -> Case {
    let sub = dir.join(format!("c{i}"));
    std::fs::create_dir_all(&sub).unwrap();
    let k = rng.gen_range(1..=3);
    let mut edits: Vec<(String, String)> = vec![];
    let mut used = vec![];
    let mut quick = true;
    for _ in 0..k {
        let f = rng.gen_range(0..FIELDS.len());
        // one edit per base line and at most one `sim:` mapping
        let (old, tmpl) = FIELDS[f];
        if used.contains(&f)
            || (tmpl.starts_with("sim:")
                && used
                    .iter()
                    .any(|u: &usize| FIELDS[*u].1.starts_with("sim:")))
            || (!old.is_empty() && edits.iter().any(|(o, _)| o == old))
        {
            continue;
        }
        used.push(f);
        let v = if rng.gen_bool(0.7) {
            EDGES[rng.gen_range(0..EDGES.len())].to_string()
        } else {
            format!("{}", rng.gen_range(-5.0..1e4_f64))
        };
        // Slow only through settings a real run would honour (long rungs), not failures.
        let slow = matches!(f, 2 | 4 | 5 | 8 | 11 | 13 | 14) || (f == 15 && v.len() > 3);
        quick &= !slow;
        edits.push((
            old.to_string(),
            tmpl.replace("{}", &v).replace("{{", "{").replace("}}", "}"),
        ));
    }
    let refs: Vec<(&str, &str)> = edits
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let path = scenario(&sub, &refs);
    Case {
        path,
        edits: edits.into_iter().map(|(_, b)| b).collect(),
        quick,
    }
}

/// For any generated scenario: loading, validating and preparing never panic; a scenario that
/// validates prepares (validate and run share `runner::prepare`); a sample of the valid ones
/// runs against the simulator to a complete folder (no failure on scenario grounds).
#[test]
fn property_valid_scenarios_prepare_and_run() {
    let iters: usize = std::env::var("LADDER_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0x1ad_de7);
    let mut valid = vec![];
    let t0 = Instant::now();
    for i in 0..iters {
        let case = generate(dir.path(), &mut rng, i);
        let path = case.path.clone();
        let outcome = std::panic::catch_unwind(move || {
            let (loaded, diags) =
                ladder::scenario::check_file(&path, Some(&ladder::workload::tokenizer::check));
            loaded.filter(|_| diags.is_empty()).map(|l| {
                let s = l.scenario.clone();
                ladder::runner::prepare(&l, s)
                    .map(|_| ())
                    .map_err(|f| l.diagnose(&f))
            })
        });
        match outcome {
            Err(_) => panic!("check_file/prepare panicked on {:?}", case.edits),
            Ok(Some(Ok(()))) => valid.push(case),
            Ok(_) => {}
        }
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "too slow at {i}: {:?}",
            case_edits(&valid)
        );
    }
    assert!(
        valid.len() >= iters / 10,
        "only {} of {iters} valid: the generator is off",
        valid.len()
    );
    let quick: Vec<&Case> = valid.iter().filter(|c| c.quick).take(6).collect();
    assert!(quick.len() >= 3, "too few quick valid cases");
    for c in quick {
        let out = c.path.parent().unwrap().join("out");
        let r = run_ladder(&c.path, &out, Duration::from_secs(90));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(0), "{:?}:\n{}", c.edits, r.all());
        // one folder per ladder (a sweep has several, named `rel.<field>-<value>`)
        let mut folders = 0;
        for scen in std::fs::read_dir(&out).unwrap() {
            for run in std::fs::read_dir(scen.unwrap().path()).unwrap() {
                let folder = check_folder(&run.unwrap().path());
                assert_eq!(
                    folder.info.status,
                    ladder::results::RunStatus::Complete,
                    "{:?}",
                    c.edits
                );
                folders += 1;
            }
        }
        assert!(folders >= 1, "{:?}: no result folder", c.edits);
    }
}

fn case_edits(v: &[Case]) -> Vec<&Vec<String>> {
    v.iter().map(|c| &c.edits).collect()
}

/// Corpus inputs (tests/corpus/fuzz/scenario/, also the seeds of the `validate` cargo-fuzz
/// target) go through validate and prepare without a panic, next to the repository's tiny
/// tokenizer so that they get past the tokenizer check.
#[test]
fn validate_path_replays_the_scenario_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let tok = dir.path().join("tokenizers");
    std::fs::create_dir_all(&tok).unwrap();
    std::fs::copy(TOKENIZER, tok.join("ladder-tiny.json")).unwrap();
    let mut prepared = 0;
    for e in std::fs::read_dir(root.join("tests/corpus/fuzz/scenario")).unwrap() {
        let src = e.unwrap().path();
        let p = dir.path().join(src.file_name().unwrap());
        std::fs::copy(&src, &p).unwrap();
        let v = validate(&p);
        no_panic(&v);
        assert!(
            matches!(v.status.code(), Some(0 | 2)),
            "{}: {}",
            p.display(),
            v.all()
        );
        let name = src.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("prepare-") {
            // these pass the load checks and are refused by prepare, with a position
            assert_eq!(v.status.code(), Some(2), "{name}: {}", v.all());
            assert!(
                v.stderr.contains(&format!("{name}:")),
                "{name}: {}",
                v.stderr
            );
            prepared += 1;
        }
    }
    assert!(prepared >= 3);
}

/// The README's Limits table quotes the constants `validate` and `run` enforce.
#[test]
fn the_readme_states_the_limits_the_code_enforces() {
    use ladder::scenario::limits::*;
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for row in [
        format!("| {MIN_RATE} requests per second |"),
        format!("| [{MIN_BURSTINESS}, {MAX_BURSTINESS}] |"),
        format!("| {MAX_REQUESTS_PER_RUNG} |"),
        format!("| {MAX_INPUT_TOKENS} tokens |"),
        format!("| {MAX_RUNG_PROMPT_TOKENS} |"),
        format!("| {TEMPLATE_FUEL} steps (minijinja fuel) |"),
        format!("| {PROMPT_TEMPLATE_FUEL} steps (minijinja fuel) |"),
        format!("| {} MiB |", MAX_TEMPLATE_OUTPUT_BYTES / (1024 * 1024)),
    ] {
        assert!(readme.contains(&row), "README's Limits table lacks `{row}`");
    }
}

/// A failure after the folder exists (here the dataset turns bad between rungs) marks the
/// folder `failed` with the reason; it never stays `running`.
#[test]
fn an_error_after_the_folder_exists_marks_it_failed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("p.jsonl");
    std::fs::write(&data, "{\"prompt\": \"hello there\"}\n").unwrap();
    let p = scenario(
        dir.path(),
        &[
            (
                "  input_tokens: 16\n",
                "  dataset: jsonl\n  path: p.jsonl\n",
            ),
            ("cooldown: 0s", "cooldown: 4s"),
        ],
    );
    let out = dir.path().join("out");
    let live = spawn(ladder_cmd(&[
        "run",
        p.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    live.wait_line("writing ", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::write(&data, "not json\n").unwrap();
    let r = live.finish(Duration::from_secs(60));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("p.jsonl:1"), "{}", r.stderr);
    let folder = run_dir(&out).expect("the folder of the first rung");
    let text = std::fs::read_to_string(folder.join("run.json")).unwrap();
    assert!(text.contains("\"status\": \"failed\""), "{text}");
    assert!(text.contains("p.jsonl:1"), "{text}");
}

/// cargo-fuzz found it (tests/corpus/fuzz/scenario/fuzz-timeout-env-loop.yaml: a loop in a
/// value that is not `prompt_template`): each `{{ env }}` value had its own budget, so many
/// of them added up. All values of a file now share one budget.
#[test]
fn many_looping_values_share_one_template_budget() {
    let dir = tempfile::tempdir().unwrap();
    let lp = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    let gate: String = (0..300)
        .map(|i| format!("  - {{ metric: \"{lp}{i}\", max: 1 }}\n"))
        .collect();
    let p = scenario(dir.path(), &[("", &format!("gate:\n{gate}"))]);
    let t0 = Instant::now();
    let v = validate(&p);
    no_panic(&v);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(
        v.stderr
            .contains("rel.yaml:18:15: error: gate[0].metric: the template does too much work"),
        "{}",
        v.stderr
    );
    assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/fuzz/scenario/fuzz-timeout-env-loop.yaml");
    let t0 = Instant::now();
    let v = validate(&corpus);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
}
