//! `model` as a weighted mix, end to end against the built-in simulator: the requests spread
//! over the names about as the weights say, in the sequence the seed fixes; each request line
//! names its model; each rung's results break down by model and add up to the rung; a
//! slower adapter (`sim.models`) shows a slower per-model TPOT; preflight refuses a name the
//! server does not serve, with the list it serves.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ladder::scenario::{ModelSpec, WeightedModel};
use serde_json::Value;
use support::{check_folder, no_panic, run_dir, run_ladder, TOKENIZER};

const LIMIT: Duration = Duration::from_secs(120);

/// A 2:1 mix of `base` and `sql-lora` on the simulator, the adapter decoding at `speed`.
fn write(dir: &Path, n: u32, speed: f64, extra: &str) -> PathBuf {
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  api: completions\n  \
         request_timeout: 20s\nmodel:\n  - name: base\n    weight: 2\n  - name: sql-lora\n    \
         weight: 1\ntokenizer: {TOKENIZER}\nworkload:\n  dataset: random\n  input_tokens: 16\n  \
         output_tokens: 16\n  requests_per_rung: {n}\n  seed: 5\nload:\n  arrival: constant\n  \
         rates: [30]\n  warmup_requests: 0\n  cooldown: 0s\nsim:\n  models:\n    - name: \
         sql-lora\n      speed: {speed}\n{extra}"
    );
    let p = dir.join("mix.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn mix() -> ModelSpec {
    ModelSpec::Mix(vec![
        WeightedModel {
            name: "base".into(),
            weight: 2.0,
        },
        WeightedModel {
            name: "sql-lora".into(),
            weight: 1.0,
        },
    ])
}

#[test]
fn a_two_to_one_mix_splits_about_two_to_one_and_the_slow_adapter_shows_its_tpot() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = run_ladder(&write(tmp.path(), 150, 0.5, ""), &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    assert!(
        r.all()
            .contains("the mix's other models answered too (sql-lora)"),
        "{}",
        r.all()
    );
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    let rung = &rd.rungs[0];
    let lines = rd.requests(rung).unwrap();
    // Each line names its model, the one the seed and its index draw.
    let spec = mix();
    for l in &lines {
        assert_eq!(
            l.model.as_deref(),
            Some(spec.pick(5, u64::from(l.index))),
            "{l:?}"
        );
    }
    let s = &rung.summary;
    assert_eq!(s.models.len(), 2, "{:?}", s.models);
    let base = s.model("base").unwrap();
    let lora = s.model("sql-lora").unwrap();
    // About 2:1 (a draw per request, as vLLM's --lora-modules: not exactly).
    let ratio = base.num_prompts as f64 / lora.num_prompts as f64;
    assert!(
        (1.4..2.9).contains(&ratio),
        "{} : {}",
        base.num_prompts,
        lora.num_prompts
    );
    // The breakdown adds up to the rung.
    assert_eq!(base.completed + lora.completed, s.completed);
    assert_eq!(base.num_prompts + lora.num_prompts, s.num_prompts);
    assert_eq!(
        base.total_output_tokens + lora.total_output_tokens,
        s.total_output_tokens
    );
    let sum = base.request_throughput + lora.request_throughput;
    assert!(
        (sum - s.request_throughput).abs() < 1e-9,
        "{sum} vs {}",
        s.request_throughput
    );
    // The adapter decodes at half speed: its TPOT is about twice the base's.
    let (tb, tl) = (
        base.stats(ladder::metrics::Latency::Tpot).median,
        lora.stats(ladder::metrics::Latency::Tpot).median,
    );
    assert!(tl > 1.6 * tb, "base TPOT {tb} ms, sql-lora TPOT {tl} ms");
    // The rung's JSON holds the breakdown under `models`, named as the rung's keys.
    let v: Value =
        serde_json::from_slice(&std::fs::read(dir.join("result_rate_30.json")).unwrap()).unwrap();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models[0]["model"], "base", "{v}");
    assert!(models[1]["median_tpot_ms"].as_f64().unwrap() > 0.0, "{v}");
    // The breakdown is checked against the lines: an edited count or model name is refused.
    tampered(&dir, "result_rate_30.json", |t| {
        t.replacen("\"model\": \"sql-lora\"", "\"model\": \"other\"", 1)
    });
    let mut v2 = v.clone();
    v2["models"][1]["completed"] = (lora.completed + 1).into();
    v2["models"][1]["num_prompts"] = (lora.num_prompts + 1).into();
    tampered(&dir, "result_rate_30.json", |_| v2.to_string());
    let mut v3 = v.clone();
    v3["models"][0]["median_tpot_ms"] = (tb * 2.0).into();
    tampered(&dir, "result_rate_30.json", |_| v3.to_string());
    tampered(&dir, "requests_rate_30.jsonl", |t| {
        t.replacen("\"model\":\"base\"", "\"model\":\"sql-lora\"", 1)
    });
    // The reports show a Models table with each model's row, and the mix in "what was run".
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let table = &md[md
        .find("Models: ")
        .unwrap_or_else(|| panic!("no Models table: {md}"))..];
    assert!(
        table.contains("| 30 | sql-lora | 45 |") || table.contains("| sql-lora |"),
        "{table}"
    );
    assert!(md.contains("base×2, sql-lora×1"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("<h3>Models</h3>") && html.contains(">sql-lora<"),
        "no Models table in report.html"
    );
    // run.json keeps the mix as written.
    let run: Value = serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["scenario"]["model"][1]["name"], "sql-lora", "{run}");
}

/// `edit` applied to `file` of a copy of the folder `dir` must make the folder refused.
fn tampered(dir: &Path, file: &str, edit: impl Fn(&str) -> String) {
    let copy = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, copy.path().join(p.file_name().unwrap())).unwrap();
    }
    let target = copy.path().join(file);
    let text = std::fs::read_to_string(&target).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit of {file} changed nothing");
    std::fs::write(&target, edited).unwrap();
    // The summaries are checked on opening, the request lines when they are read.
    let refused = match ladder::results::ResultDir::open(copy.path()) {
        Err(e) => e.to_string(),
        Ok(rd) => match rd.rungs.iter().find_map(|r| rd.requests(r).err()) {
            Some(e) => e.to_string(),
            None => panic!("an edited {file} was accepted"),
        },
    };
    eprintln!("refused as expected: {refused}");
}

/// A regression confined to the adapter (it decodes at 0.5 of the engine's speed instead of
/// 0.9) is caught by the gate rule on that model, and not by the same rule on the whole rung,
/// whose median request is the base model's.
#[test]
fn a_rule_on_one_model_catches_a_regression_the_whole_rung_rule_does_not() {
    let rules = "gate:\n  - { metric: median_tpot_ms, max_increase: 20%, model: sql-lora }\n  \
                 - { metric: median_tpot_ms, max_increase: 20% }\n";
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for (side, speed) in [("base", 0.9), ("cand", 0.5)] {
        let d = tmp.path().join(side);
        std::fs::create_dir_all(&d).unwrap();
        let out = d.join("out");
        let r = run_ladder(&write(&d, 150, speed, rules), &out, LIMIT);
        no_panic(&r);
        assert!(r.status.success(), "{side}: {}", r.all());
        dirs.push(run_dir(&out).unwrap());
    }
    let live = support::spawn(support::ladder_cmd(&[
        "compare",
        dirs[0].to_str().unwrap(),
        dirs[1].to_str().unwrap(),
        "--json",
    ]));
    let r = live.finish(LIMIT);
    no_panic(&r);
    // Exit 1: a regression.
    assert_eq!(r.status.code(), Some(1), "{}", r.all());
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let of = |model: Option<&str>| {
        rows.iter()
            .find(|row| row["metric"] == "median_tpot_ms" && row["model"].as_str() == model)
            .unwrap_or_else(|| panic!("no row for {model:?}: {v}"))
    };
    let (one, whole) = (of(Some("sql-lora")), of(None));
    assert_eq!(one["verdict"], "regression", "{one}");
    assert_ne!(whole["verdict"], "regression", "{whole}");
    assert!(one["pct_change"].as_f64().unwrap() > 40.0, "{one}");
    // The per-model rows show both models' numbers (same mix on both sides).
    let shown = v["model_rows"].as_array().unwrap();
    assert!(
        shown
            .iter()
            .any(|x| x["model"] == "base" && x["metric"] == "median_tpot_ms"),
        "{v}"
    );
    // The terminal table names the model of the rule.
    let live = support::spawn(support::ladder_cmd(&[
        "compare",
        dirs[0].to_str().unwrap(),
        dirs[1].to_str().unwrap(),
    ]));
    let t = live.finish(LIMIT);
    assert!(
        t.stdout.contains("median_tpot_ms [sql-lora]"),
        "{}",
        t.all()
    );
    assert!(t.stdout.contains("per model"), "{}", t.all());
    eprintln!("{}", t.stdout);
}

/// `ladder sim` serves names from flags (`--served-model-names`, `--model-speed`); a mix
/// naming one it does not serve is refused at preflight with the list it serves, before any
/// load, as one unknown model is.
#[test]
fn preflight_refuses_a_name_of_the_mix_the_server_does_not_serve() {
    let sim = support::serve::SimProc::start(&[
        "--speed",
        "20",
        "--model-speed",
        "base=1",
        "--served-model-names",
        "other-lora",
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(write(tmp.path(), 10, 0.5, ""))
        .unwrap()
        .replace("base_url: sim", &format!("base_url: {}", sim.url()));
    let p = tmp.path().join("mix.yaml");
    std::fs::write(&p, text).unwrap();
    let r = run_ladder(&p, &tmp.path().join("out"), LIMIT);
    drop(sim);
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    let all = r.all();
    assert!(all.contains("model `sql-lora` is not served"), "{all}");
    assert!(all.contains("other-lora"), "the served list: {all}");
    assert!(!all.contains("rung 30"), "no load was sent: {all}");
}

#[test]
fn ladder_sim_refuses_a_model_speed_out_of_range() {
    for bad in ["sql-lora=0", "sql-lora=1.5", "sql-lora=x", "no-equals"] {
        let live = support::spawn(support::ladder_cmd(&["sim", "--model-speed", bad]));
        let r = live.finish(LIMIT);
        assert_eq!(r.status.code(), Some(2), "{bad}: {}", r.all());
        assert!(
            r.stderr.contains("sql-lora") || r.stderr.contains(bad),
            "{bad}: {}",
            r.all()
        );
    }
}

/// `ladder validate` names every bad entry of a mix and every gate rule it cannot judge.
#[test]
fn validate_names_each_bad_entry_of_a_mix_and_each_rule_it_cannot_judge() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(
        tmp.path(),
        10,
        0.5,
        "gate:\n  - { metric: median_tpot_ms, max_increase: 20%, model: nope }\n  \
         - { metric: p99_ttft_sched_ms, max_increase: 20%, model: base }\n",
    );
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("    weight: 1\n", "    weight: 0\n  - name: base\n");
    std::fs::write(&p, text).unwrap();
    let live = support::spawn(support::ladder_cmd(&["validate", p.to_str().unwrap()]));
    let r = live.finish(LIMIT);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    for want in [
        "model[1]: weight must be above 0",
        "model[2]: model `base` is listed twice",
        "gate[0].model: model `nope` is not in the scenario's mix",
        "gate[1].metric: `p99_ttft_sched_ms` is not in a model's breakdown",
    ] {
        assert!(r.stderr.contains(want), "{want}: {}", r.stderr);
    }
}

/// The breakdown of `s` adds up to it (requests, successes, output tokens, requests/s).
fn adds_up(s: &ladder::metrics::RungSummary) {
    assert_eq!(s.models.len(), 2, "{:?}", s.models);
    let sum = |f: fn(&ladder::metrics::models::ModelSummary) -> f64| -> f64 {
        s.models.iter().map(f).sum()
    };
    assert_eq!(sum(|m| m.num_prompts as f64), s.num_prompts as f64);
    assert_eq!(sum(|m| m.completed as f64), s.completed as f64);
    assert_eq!(
        sum(|m| m.total_output_tokens as f64),
        s.total_output_tokens as f64
    );
    let qps = sum(|m| m.request_throughput);
    assert!((qps - s.request_throughput).abs() < 1e-9, "{qps} vs {s:?}");
    assert!(s.models.iter().all(|m| m.completed > 0), "{:?}", s.models);
}

/// A timed (soak) rung folds its records as they come, and still breaks them down by model,
/// as the lines give it (`results::check` recomputes it from them and refuses an edit).
#[test]
fn a_timed_rung_breaks_its_requests_down_by_model() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), 1, 0.5, "");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("  requests_per_rung: 1\n", "")
        .replace(
            "rates: [30]\n",
            "rates: [30]\n  duration: 3s\n  interval: 1s\n",
        );
    std::fs::write(&p, text).unwrap();
    let out = tmp.path().join("out");
    let r = run_ladder(&p, &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    let s = &rd.rungs[0].summary;
    assert!(s.num_prompts > 50, "{s:?}");
    adds_up(s);
    let lines = rd.requests(&rd.rungs[0]).unwrap();
    let lora = s.model("sql-lora").unwrap();
    let named = lines
        .iter()
        .filter(|l| !l.warmup && l.model.as_deref() == Some("sql-lora"))
        .count();
    assert_eq!(lora.num_prompts, named as u64);
    let (tb, tl) = (
        s.model("base")
            .unwrap()
            .stats(ladder::metrics::Latency::Tpot)
            .median,
        lora.stats(ladder::metrics::Latency::Tpot).median,
    );
    assert!(tl > 1.6 * tb, "base TPOT {tb} ms, sql-lora TPOT {tl} ms");
    let v: Value =
        serde_json::from_slice(&std::fs::read(dir.join("result_rate_30.json")).unwrap()).unwrap();
    let mut edited = v.clone();
    edited["models"][1]["median_tpot_ms"] = (tl * 2.0).into();
    tampered(&dir, "result_rate_30.json", |_| edited.to_string());
    let mut dropped = v.clone();
    dropped.as_object_mut().unwrap().remove("models");
    tampered(&dir, "result_rate_30.json", |_| dropped.to_string());
}

/// `ladder bless --add` pools a mix's breakdown over every run's requests, as a run with
/// `load.repeats` pools it; the pool is checked against all the lines.
#[test]
fn bless_add_pools_the_breakdown_of_both_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), 45, 0.5, "");
    let mut runs = Vec::new();
    for i in 0..2 {
        let out = tmp.path().join(format!("out{i}"));
        let r = run_ladder(&p, &out, LIMIT);
        no_panic(&r);
        assert!(r.status.success(), "{}", r.all());
        runs.push(run_dir(&out).unwrap());
    }
    let golden = tmp.path().join("golden");
    let g = golden.to_str().unwrap();
    for args in [
        vec!["bless", runs[0].to_str().unwrap(), "--golden", g],
        vec!["bless", "--add", runs[1].to_str().unwrap(), "--golden", g],
    ] {
        let r = support::spawn(support::ladder_cmd(&args)).finish(LIMIT);
        no_panic(&r);
        assert!(r.status.success(), "{args:?}: {}", r.all());
    }
    let rd = check_folder(&golden.join("rel"));
    let s = &rd.rungs[0].summary;
    assert_eq!(s.repeats.len(), 2, "{s:?}");
    assert_eq!(s.num_prompts, 90);
    adds_up(s);
    let pooled = s.model("sql-lora").unwrap().num_prompts;
    let each: u64 = runs
        .iter()
        .map(|d| {
            let one = check_folder(d);
            one.rungs[0].summary.model("sql-lora").unwrap().num_prompts
        })
        .sum();
    assert_eq!(pooled, each);
    let file = golden.join("rel").join("result_rate_30.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    v["models"][0]["p99_tpot_ms"] = 1e6.into();
    tampered(&golden.join("rel"), "result_rate_30.json", |_| {
        v.to_string()
    });
}
