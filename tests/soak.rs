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
    let live = spawn_run(&p, &out);
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
    // The report shows what the folder holds, labelled as a run that did not finish.
    let rep =
        spawn(ladder_cmd(&["report", folder.to_str().unwrap()])).finish(Duration::from_secs(60));
    assert_eq!(rep.status.code(), Some(0), "{}", rep.all());
    let md = std::fs::read_to_string(folder.join("summary.md")).unwrap();
    assert!(
        md.contains("the run did not finish")
            && md.contains(&format!("rung 40 req/s is shown from the partial summary saved at its last interval ({done} requests finished)"))
            && md.contains("| 40 (partial) |")
            && md.contains("**Knee:** none: no rungs"),
        "{md}"
    );
}

#[test]
fn report_of_a_soak_killed_in_its_second_rung_shows_both_rungs() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "  rates: [20, 40]\n  duration: 3s\n  interval: 500ms\n",
        "",
    );
    let out = dir.path().join("out");
    let live = spawn_run(&p, &out);
    live.wait_line("rate 40 req/s 0:01 / 0:03", Duration::from_secs(60));
    live.signal("KILL");
    let r = live.finish(Duration::from_secs(30));
    assert!(!r.status.success());
    let folder = run_dir(&out).expect("a result folder");
    assert_eq!(json(&folder.join("run.json"))["status"], "running");
    let rep =
        spawn(ladder_cmd(&["report", folder.to_str().unwrap()])).finish(Duration::from_secs(60));
    assert_eq!(rep.status.code(), Some(0), "{}", rep.all());
    let md = std::fs::read_to_string(folder.join("summary.md")).unwrap();
    assert!(
        md.contains("the run did not finish")
            && md.contains("| 20 (baseline) |")
            && md.contains("| 40 (partial) |")
            && md.contains("rung 40 req/s is shown from the partial summary"),
        "{md}"
    );
    // A second of the rung in progress is no ground for a knee or an SLO verdict.
    assert!(!md.contains("**Knee:** 40"), "{md}");
    assert!(!md.contains("within SLO:** 40"), "{md}");
    assert!(!md.contains("40 (knee)"), "{md}");
    // Still no result to compare with.
    let c = spawn(ladder_cmd(&[
        "compare",
        folder.to_str().unwrap(),
        folder.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    assert_eq!(c.status.code(), Some(2), "{}", c.all());
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
    let live = spawn_run(&p, &out);
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
    let cut = result["interrupted_requests"].as_u64().unwrap_or(0);
    assert_eq!(
        l.len() as u64,
        result["num_prompts"].as_u64().unwrap() + cut
    );
    assert!(!l.is_empty());
    // Its one rung never finished: compare names the interruption, bless refuses it.
    let f = folder.to_str().unwrap();
    let r = spawn(ladder_cmd(&["compare", f, f])).finish(Duration::from_secs(60));
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr.contains(
            "was interrupted before any rung completed (status `interrupted` in its run.json"
        ),
        "{}",
        r.all()
    );
    let golden = dir.path().join("golden");
    let r = spawn(ladder_cmd(&[
        "bless",
        f,
        "--golden",
        golden.to_str().unwrap(),
        "--force",
    ]))
    .finish(Duration::from_secs(60));
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("no rung completed"), "{}", r.all());
    assert!(!golden.join("rel").exists());
}

#[test]
fn repeats_flag_is_refused_with_a_duration_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "  rates: [10]\n  duration: 2s\n", "");
    let out = dir.path().join("out");
    let golden = dir.path().join("golden");
    for args in [
        vec!["run", p.to_str().unwrap(), "--repeats", "2"],
        vec![
            "gate",
            p.to_str().unwrap(),
            "--golden",
            golden.to_str().unwrap(),
            "--repeats",
            "2",
        ],
    ] {
        let mut args = args;
        args.extend(["--out", out.to_str().unwrap()]);
        let r = spawn(ladder_cmd(&args)).finish(Duration::from_secs(60));
        no_panic(&r);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.all());
        assert!(
            r.stderr
                .contains("--repeats 2 does not combine with `load.duration`")
                && r.stderr.contains("rel.yaml"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(run_dir(&out).is_none(), "{args:?} made a result folder");
    }
}

/// A simulator seed whose two preflight probes (its requests 0 and 1) draw no fault when
/// `stall` of the streams stall (the simulator's draw, docs/sim.md "Determinism").
fn probes_never_stall(stall: f64) -> u64 {
    use rand::{Rng, SeedableRng};
    (0..1000)
        .find(|&seed| {
            (0..2).all(|i| {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                rng.set_stream(i);
                rng.gen::<f64>() >= stall
            })
        })
        .expect("a seed")
}

/// A rung at 10 req/s whose streams stall 30 % of the time for a minute (longer than the
/// run), with a request timeout longer than the stop's grace.
fn stalling(dir: &Path, load: &str, workload: &str) -> PathBuf {
    faulty(
        dir,
        &format!("  rates: [10]\n{load}"),
        workload,
        "  fault_stall: 0.3\n  stall_ms: 60000\n",
        0.3,
    )
}

/// A scenario against the simulator with `faults` (`sim:` keys, their fractions adding up
/// to `total`), seeded so that the preflight's probes draw none.
fn faulty(dir: &Path, load: &str, workload: &str, faults: &str, total: f64) -> PathBuf {
    let seed = probes_never_stall(total);
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  request_timeout: 120s\nmodel: m\n\
         tokenizer: {TOKENIZER}\nworkload:\n  input_tokens: 16\n  output_tokens: 8\n  seed: 3\n\
         {workload}load:\n  cooldown: 0s\n{load}\
         sim:\n  speed: 20\n  seed: {seed}\n{faults}"
    );
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

/// After Ctrl-C and the grace period: every request sent has a line, the stalled ones of
/// class `interrupted`, counted apart from failures and the error rate, and said so.
fn assert_in_flight_recorded(out: &Path, r: &Ran) {
    no_panic(r);
    assert!(!r.status.success(), "{}", r.all());
    let folder = run_dir(out).expect("a result folder");
    let rd = check_folder(&folder);
    let s = &rd.rungs[0].summary;
    assert!(s.interrupted_requests > 0, "{}", r.all());
    assert_eq!(s.failed, 0, "a stall is not a failure: {}", r.all());
    assert_eq!(s.error_rate(), 0.0);
    let log = std::fs::read_to_string(folder.join("run.log")).unwrap();
    let sent: u64 = log
        .split("sent ")
        .nth(1)
        .and_then(|x| x.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no sent count in run.log: {log}"));
    assert_eq!(
        sent,
        s.warmup_requests + s.completed + s.failed + s.interrupted_requests,
        "{log}"
    );
    let l = lines(&folder.join("requests_rate_10.jsonl"));
    assert_eq!(l.len() as u64, sent);
    let cut = l
        .iter()
        .filter(|x| x["error_class"] == "interrupted")
        .count() as u64;
    assert_eq!(cut, s.interrupted_requests);
    let result = json(&folder.join("result_rate_10.json"));
    assert_eq!(result["interrupted_requests"], s.interrupted_requests);
    assert_eq!(result["errors_by_class"].get("interrupted"), None);
    // The folder passes the tamper check (`report` runs it): its summaries are what its
    // lines give with the interrupted lines left out, as the writer left them out.
    let rep =
        spawn(ladder_cmd(&["report", folder.to_str().unwrap()])).finish(Duration::from_secs(60));
    assert_eq!(rep.status.code(), Some(0), "{}", rep.all());
    assert!(
        r.stderr.contains(&match s.interrupted_requests {
            1 => "1 request in flight at the interrupt was recorded as interrupted".to_string(),
            n => format!("{n} requests in flight at the interrupt were recorded as interrupted"),
        }),
        "{}",
        r.stderr
    );
}

#[test]
fn requests_in_flight_at_ctrl_c_are_recorded_as_interrupted_in_a_soak() {
    let dir = tempfile::tempdir().unwrap();
    let p = stalling(dir.path(), "  duration: 60s\n  interval: 1s\n", "");
    let out = dir.path().join("out");
    let live = spawn_run(&p, &out);
    live.wait_line("0:03 / 1:00", Duration::from_secs(60));
    live.signal("INT");
    let r = live.finish(Duration::from_secs(60));
    assert_in_flight_recorded(&out, &r);
}

#[test]
fn requests_in_flight_at_ctrl_c_are_recorded_as_interrupted_in_a_counted_rung() {
    let dir = tempfile::tempdir().unwrap();
    let p = stalling(dir.path(), "", "  requests_per_rung: 200\n");
    let out = dir.path().join("out");
    let live = spawn_run(&p, &out);
    // The rung sends for 20 s; stop it a few seconds in (once its requests file exists).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while run_dir(&out).is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    live.signal("INT");
    let r = live.finish(Duration::from_secs(60));
    assert_in_flight_recorded(&out, &r);
}

#[test]
fn the_live_lines_add_up_to_the_summary_draining_and_last_interval_included() {
    let dir = tempfile::tempdir().unwrap();
    // Some requests fail at once, some stall for 2.5 s: the rung drains past its duration.
    let p = faulty(
        dir.path(),
        "  rates: [20]\n  duration: 3s\n  interval: 1s\n",
        "",
        "  fault_http_500: 0.2\n  fault_stall: 0.1\n  stall_ms: 2500\n",
        0.3,
    );
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(90));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let folder = run_dir(&out).expect("a result folder");
    let s = &check_folder(&folder).rungs[0].summary;
    let live: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("rate 20") && l.contains(" done), "))
        .collect();
    let count = |l: &str, before: &str, after: &str| -> u64 {
        let tail = l.split(before).nth(1).unwrap_or_else(|| panic!("{l}"));
        tail.split(after)
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{l}"))
    };
    let done: u64 = live.iter().map(|l| count(l, "req/s (", " done")).sum();
    let errors: u64 = live.iter().map(|l| count(l, "errors ", " (")).sum();
    assert!(s.failed > 0 && s.completed > 0, "{}", r.all());
    assert_eq!((done, errors), (s.completed, s.failed), "{}", r.stderr);
    assert!(
        live.iter()
            .any(|l| l.contains("draining +") && l.contains(" in flight: ")),
        "{}",
        r.stderr
    );
    assert!(
        live.last().unwrap().contains(", end (last "),
        "{}",
        r.stderr
    );
}

#[test]
fn validate_warns_of_warmup_eating_the_duration_and_of_an_interval_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let validate = |load: &str| {
        let p = write(dir.path(), load, "");
        spawn(ladder_cmd(&["validate", p.to_str().unwrap()])).finish(Duration::from_secs(60))
    };
    // 30 warmup requests at 10 req/s: 3 s of a 5 s rung.
    let v = validate("  rates: [10]\n  duration: 5s\n  interval: 1s\n  warmup_requests: 30\n");
    assert_eq!(v.status.code(), Some(0), "{}", v.all());
    assert!(
        v.stderr.contains("note: load.warmup_requests: at rate 10 req/s, 30 warmup requests take about 60% of load.duration 5s"),
        "{}",
        v.stderr
    );
    // All of it: refused.
    let v = validate("  rates: [10]\n  duration: 5s\n  interval: 1s\n  warmup_requests: 50\n");
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(
        v.stderr
            .contains("no request of the rung would be measured"),
        "{}",
        v.stderr
    );
    // An interval (given or the default 10 s) not shorter than the duration.
    for load in [
        "  rates: [10]\n  duration: 5s\n  interval: 6s\n",
        "  rates: [10]\n  duration: 5s\n",
    ] {
        let v = validate(load);
        assert_eq!(v.status.code(), Some(0), "{}", v.all());
        assert!(
            v.stderr.contains("is not shorter than load.duration 5s")
                && v.stderr.contains("`interval: 1s`"),
            "{load}: {}",
            v.stderr
        );
    }
    // A short duration gets an interval below it, not one equal to it.
    let v = validate("  rates: [10]\n  duration: 500ms\n  interval: 2s\n");
    assert!(v.stderr.contains("`interval: 100ms`"), "{}", v.stderr);
    let v = validate("  rates: [10]\n  duration: 5s\n  interval: 1s\n");
    assert!(!v.stderr.contains("note:"), "{}", v.stderr);
}

#[test]
fn a_duration_rung_with_no_measured_request_says_so_and_is_not_complete() {
    let dir = tempfile::tempdir().unwrap();
    // One user, 200 warmup requests back to back: far more than 1 s of them.
    let p = write(
        dir.path(),
        "  concurrency: [1]\n  duration: 1s\n  interval: 500ms\n  warmup_requests: 200\n",
        "",
    );
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(120));
    no_panic(&r);
    let folder = run_dir(&out).expect("a result folder");
    let result = json(&folder.join("result_rate_1.json"));
    assert_eq!(result["num_prompts"], 0, "{result}");
    assert!(result["warmup_requests"].as_u64().unwrap() > 0);
    assert!(
        r.stderr.contains("rung 1 user: no request was measured"),
        "{}",
        r.all()
    );
    let run = json(&folder.join("run.json"));
    assert_eq!(run["rungs"][0]["complete"], false, "{run}");
    assert!(
        run["warnings"]
            .to_string()
            .contains("no request was measured"),
        "{run}"
    );
}

#[test]
fn a_soak_run_json_records_no_requests_per_rung_and_compare_takes_an_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "  rates: [20]\n  duration: 1s\n  interval: 500ms\n",
        "",
    );
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(90));
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let folder = run_dir(&out).expect("a result folder");
    let run = json(&folder.join("run.json"));
    let workload = &run["scenario"]["workload"];
    assert!(workload.get("requests_per_rung").is_none(), "{workload}");
    assert_eq!(workload["input_tokens"], 16);
    // A folder of an older build recorded the unused default: still the same workload.
    let older = dir.path().join("older");
    std::fs::create_dir(&older).unwrap();
    for e in std::fs::read_dir(&folder).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), older.join(e.file_name())).unwrap();
    }
    let mut old_run = run.clone();
    old_run["scenario"]["workload"]["requests_per_rung"] = 200.into();
    std::fs::write(older.join("run.json"), old_run.to_string()).unwrap();
    let c = spawn(ladder_cmd(&[
        "compare",
        older.to_str().unwrap(),
        folder.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    no_panic(&c);
    // The unused key is no configuration change either.
    assert!(!c.all().contains("different workload"), "{}", c.all());
    assert!(c.all().contains("no configuration change"), "{}", c.all());
    assert!(!c.all().contains("requests_per_rung"), "{}", c.all());
    // Read, not refused: a 1 s soak is too short to judge, so no verdict at most.
    assert!(!c.stderr.contains("error:"), "refused: {}", c.all());
    assert!(
        c.status.code() != Some(2) || c.stdout.contains("NO VERDICT"),
        "refused: {}",
        c.all()
    );
}
