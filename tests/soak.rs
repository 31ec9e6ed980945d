//! Rungs run for a duration (`load.duration`, docs/soak.md) against the built-in simulator:
//! they end at their duration with the requests their arrivals drew, print a live line per
//! interval, and keep their result folder current while they run, so a process killed
//! mid-rung leaves parseable partial results.
mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ladder::scenario::Arrival;
use ladder::workload::Arrivals;

fn write(dir: &Path, load: &str, workload: &str) -> PathBuf {
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  request_timeout: 10s\nmodel: m\n\
         tokenizer: {TOKENIZER}\nworkload:\n  input_tokens: 16\n  output_tokens: 8\n  seed: 3\n\
         {workload}load:\n  cooldown: 0s\n{load}"
    );
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_rate_rung_runs_for_its_duration_and_sends_what_its_arrivals_drew() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "  rates: [60]\n  duration: 3s\n  interval: 1s\n  warmup_requests: 4\n",
        "  prompt_pool: 25\n",
    );
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(90));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    // The arrivals of the rung (rung 0's seed): exactly what was drawn before 3 s.
    let seed = ladder::runner::rung_seed(3, 0);
    let drawn = Arrivals::new(Arrival::Poisson, 60.0, None, seed, Duration::from_secs(3))
        .unwrap()
        .count();
    // Poisson: 1 + Poisson(180) arrivals; within 5 standard deviations (±67).
    assert!(
        (drawn as f64 - 181.0).abs() < 5.0 * 180f64.sqrt(),
        "{drawn} arrivals in 3 s at 60 req/s"
    );
    let folder = run_dir(&out).expect("a result folder");
    let rd = check_folder(&folder);
    assert_eq!(rd.rungs.len(), 1);
    assert!(rd.rungs[0].entry.complete);
    let s = &rd.rungs[0].summary;
    assert_eq!(s.warmup_requests, 4);
    assert_eq!(s.num_prompts + s.warmup_requests, drawn as u64);
    assert_eq!(s.completed, s.num_prompts, "the simulator fails nothing");
    let l = lines(&folder.join("requests_rate_60.jsonl"));
    assert_eq!(l.len(), drawn);
    // No request was scheduled at or after the duration.
    let last = l
        .iter()
        .map(|x| x["scheduled_ms"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(last < 3000.0, "a request scheduled at {last} ms");
    // The final summary replaced the partial one; run.json says complete.
    let result = json(&folder.join("result_rate_60.json"));
    assert!(result.get("partial").is_none(), "{result}");
    let run = json(&folder.join("run.json"));
    assert_eq!(run["status"], "complete");
    assert!(run["status_detail"].is_null());
    // A live line per interval, with the elapsed and total time.
    let live: Vec<&str> = r
        .stderr
        .lines()
        .filter(|x| x.contains(" / 0:03: ") && x.contains("p99 TTFT"))
        .collect();
    assert!(live.len() >= 2, "live lines:\n{}", r.stderr);
    assert!(live[0].contains("rate 60"), "{}", live[0]);
}

#[test]
fn a_concurrency_rung_runs_for_its_duration_cycling_its_pool() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "  concurrency: [3]\n  duration: 2s\n  interval: 500ms\n",
        "  prompt_pool: 4\n",
    );
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(90));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let folder = run_dir(&out).expect("a result folder");
    let rd = check_folder(&folder);
    let s = &rd.rungs[0].summary;
    let l = lines(&folder.join("requests_rate_3.jsonl"));
    assert_eq!(l.len() as u64, s.num_prompts);
    // Far more requests than the pool holds: the pool was cycled.
    assert!(s.completed > 12, "{} completed", s.completed);
    assert!(l
        .iter()
        .all(|x| x["scheduled_ms"].as_f64().unwrap() < 2000.0));
    assert_eq!(s.max_concurrency, Some(3));
}

#[test]
fn a_soak_killed_mid_rung_leaves_its_partial_results() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "  rates: [40]\n  duration: 60s\n  interval: 1s\n",
        "",
    );
    let out = dir.path().join("out");
    let live = spawn(ladder_cmd(&[
        "run",
        p.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    // Two intervals in: the folder has been updated twice.
    live.wait_line("0:02 / 1:00", Duration::from_secs(60));
    live.signal("KILL");
    let r = live.finish(Duration::from_secs(30));
    assert!(!r.status.success());
    let folder = run_dir(&out).expect("a result folder");
    let run = json(&folder.join("run.json"));
    assert_eq!(
        run["status"], "running",
        "SIGKILL leaves no chance to say more"
    );
    let detail = run["status_detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("rate 40") && detail.contains("of 1m"),
        "{detail}"
    );
    let partial = json(&folder.join("result_rate_40.json"));
    assert_eq!(partial["partial"], true);
    let done = partial["num_prompts"].as_u64().unwrap();
    assert!(done > 10, "{partial}");
    assert_eq!(
        partial["completed"].as_u64().unwrap() + partial["failed"].as_u64().unwrap(),
        done
    );
    assert!(partial["median_ttft_ms"].as_f64().unwrap() > 0.0);
    // Every line flushed by the last interval is on disk and parses; more may follow it.
    // (A kill during a rewrite may leave that rewrite's hidden temp file; the named files
    // are whole, as read here.)
    let l = lines(&folder.join("requests_rate_40.jsonl"));
    assert!(
        l.len() as u64 >= done,
        "{} lines, {done} in the summary",
        l.len()
    );
}

#[test]
fn validate_refuses_a_duration_with_requests_per_rung() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "  rates: [10]\n  duration: 5s\n",
        "  requests_per_rung: 50\n",
    );
    let v = spawn(ladder_cmd(&["validate", p.to_str().unwrap()])).finish(Duration::from_secs(60));
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(
        v.stderr.contains("rel.yaml:12:")
            && v.stderr
                .contains("`requests_per_rung` does not combine with `load.duration`")
            && v.stderr.contains("prompt_pool"),
        "{}",
        v.stderr
    );
}

#[test]
fn ctrl_c_ends_a_soak_with_its_final_summary_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "  rates: [40]\n  duration: 60s\n  interval: 1s\n",
        "",
    );
    let out = dir.path().join("out");
    let live = spawn(ladder_cmd(&[
        "run",
        p.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    live.wait_line("0:01 / 1:00", Duration::from_secs(60));
    live.signal("INT");
    let r = live.finish(Duration::from_secs(60));
    no_panic(&r);
    assert!(!r.status.success(), "{}", r.all());
    let folder = run_dir(&out).expect("a result folder");
    let run = json(&folder.join("run.json"));
    assert_eq!(run["status"], "interrupted");
    assert_eq!(run["rungs"][0]["complete"], false);
    let result = json(&folder.join("result_rate_40.json"));
    assert!(result.get("partial").is_none(), "{result}");
    assert_eq!(result["interrupted"], true);
    let l = lines(&folder.join("requests_rate_40.jsonl"));
    assert_eq!(l.len() as u64, result["num_prompts"].as_u64().unwrap());
    assert!(!l.is_empty());
}
