//! Capacity searches (`load.search`, docs/capacity.md) end to end: the real binary against
//! the in-process simulator, whose capacity is known (`SimConfig::capacity_rps`). Probes
//! are short (150 requests) and the simulator runs at speed 8 or more, so each search takes
//! seconds; every `ladder` call runs under a watchdog.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ladder::capacity::{CapacityFile, Stop};
use support::{check_folder, ladder_cmd, no_panic, run_ladder, spawn, Ran, TOKENIZER};

const LIMIT: Duration = Duration::from_secs(120);

/// A search scenario named `rel` against the simulator at `speed` (decode `decode_scale`
/// times slower), its p90 TTFT held to `ttft_ms`; `load_extra` / `top_extra` are added under
/// `load:` and at the top level.
fn scenario(dir: &Path, speed: f64, decode_scale: f64, ttft_ms: f64, extra: &str) -> PathBuf {
    let start = 5.0 * speed;
    let text = format!(
        "version: 1
name: rel
endpoint: {{ base_url: sim, request_timeout: 30s }}
model: ladder-sim
tokenizer: {TOKENIZER}
workload: {{ input_tokens: 128, output_tokens: 64, requests_per_rung: 150, seed: 0 }}
load:
  cooldown: 0s
  search:
    slo: [ {{ metric: p90_ttft_ms, max: {ttft_ms} }}, {{ metric: error_rate, max: 0.05 }} ]
    start: {start}
    max: 5000
    precision: 10%
    budget: {{ requests: 4000 }}
gate:
  - {{ metric: capacity, max_decrease: 5% }}
sim: {{ seed: 0, max_num_seqs: 16, speed: {speed}, decode_scale: {decode_scale} }}
{extra}"
    );
    let path = dir.join(format!("s-{speed}-{decode_scale}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The simulator's saturated throughput for the scenario's shape (docs/sim.md).
fn sim_capacity(speed: f64, decode_scale: f64) -> f64 {
    let cfg: ladder::sim::SimConfig = serde_json::from_value(serde_json::json!({
        "max_num_seqs": 16, "speed": speed, "decode_scale": decode_scale
    }))
    .unwrap();
    cfg.capacity_rps(128, 64)
}

/// Runs a search into `out` and returns its folder and capacity.json.
fn search(sc: &Path, out: &Path) -> (Ran, PathBuf, CapacityFile) {
    let r = run_ladder(sc, out, LIMIT);
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let (dir, file) = newest_search(out);
    (r, dir, file)
}

/// The newest search folder under `out` and its capacity.json.
fn newest_search(out: &Path) -> (PathBuf, CapacityFile) {
    let dir = std::fs::read_dir(out.join("rel"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    let file: CapacityFile =
        serde_json::from_slice(&std::fs::read(dir.join("capacity.json")).unwrap()).unwrap();
    (dir, file)
}

/// Two simulators, the second twice as fast with its SLO halved (the same server on a
/// clock twice as fast): each search brackets a capacity near the simulator's saturated
/// throughput, the second twice the first, and every probe is an ordinary rung.
#[test]
fn searches_converge_near_the_simulators_capacity_and_scale_with_its_speed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for (speed, ttft) in [(8.0, 200.0), (16.0, 100.0)] {
        let sc = scenario(tmp.path(), speed, 1.0, ttft, "");
        let out = tmp.path().join(format!("out-{speed}"));
        let (r, dir, file) = search(&sc, &out);
        let truth = sim_capacity(speed, 1.0);
        let a = file.answer;
        assert!(
            matches!(
                a.status,
                Stop::Converged | Stop::UncertainZone | Stop::Resolution
            ),
            "{a:?}"
        );
        let (c, lo, hi) = (a.capacity.unwrap(), a.lo.unwrap(), a.hi.unwrap());
        assert!(lo <= c && c <= hi && lo < hi, "{a:?}");
        // Probes of 150 requests see the queue only once it grows for the whole probe: the
        // SLO breaks a little past the saturated throughput, never far from it.
        assert!(
            (0.7..1.5).contains(&(c / truth)),
            "capacity {c} against the simulator's {truth}: {}",
            r.all()
        );
        // The terminal shows every probe and the bracket, then the answer.
        assert!(r.stderr.contains("probe 1: "), "{}", r.stderr);
        assert!(r.stderr.contains("bracket ["), "{}", r.stderr);
        assert!(r.stdout.contains(&file.text), "{}", r.stdout);
        assert!(file.text.starts_with("capacity "), "{}", file.text);
        // Every probe is a rung of an ordinary, loadable result folder.
        let rd = check_folder(&dir);
        let mut levels: Vec<f64> = file.probes.iter().map(|p| p.level).collect();
        levels.sort_by(f64::total_cmp);
        let mut rungs: Vec<f64> = rd.rungs.iter().map(|r| r.entry.rate).collect();
        rungs.sort_by(f64::total_cmp);
        assert_eq!(levels, rungs);
        assert!(rd.rungs.iter().all(|r| r.entry.complete));
        assert!(file.requests <= 4000);
        found.push(c);
    }
    let ratio = found[1] / found[0];
    assert!((1.5..2.6).contains(&ratio), "capacities {found:?}");
}

/// A goodput term (`goodput >= 0.9` of requests within the scenario's `slo:` TTFT bound)
/// finds the simulator's capacity as the p90 TTFT term does, and counts a request good by
/// the rule of the rung files' `request_goodput`: each probe's goodput in capacity.json is
/// its rung's good requests over its measured ones.
#[test]
fn a_goodput_term_searches_the_simulator_by_the_rung_files_own_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), 8.0, 1.0, 200.0, "slo: { ttft_ms: 200 }\n");
    let text = std::fs::read_to_string(&sc).unwrap().replace(
        "{ metric: p90_ttft_ms, max: 200 }",
        "{ metric: goodput, min: 0.9 }",
    );
    assert!(text.contains("metric: goodput"), "{text}");
    std::fs::write(&sc, text).unwrap();
    let (r, dir, file) = search(&sc, &tmp.path().join("out"));
    assert_eq!(file.slo[0].metric, "goodput");
    assert_eq!((file.slo[0].min, file.slo[0].max), (Some(0.9), None));
    assert_eq!(file.slo[0].per_request.unwrap().ttft_ms, Some(200.0));
    assert!(
        file.text.contains("goodput >= 0.9 (TTFT <= 200 ms)"),
        "{}",
        file.text
    );
    assert!(r.stderr.contains("(min 0.9"), "{}", r.stderr);
    let truth = sim_capacity(8.0, 1.0);
    let a = file.answer;
    let (c, lo, hi) = (a.capacity.unwrap(), a.lo.unwrap(), a.hi.unwrap());
    assert!(lo <= c && c <= hi && lo < hi, "{a:?}");
    assert!(
        (0.7..1.5).contains(&(c / truth)),
        "capacity {c} against the simulator's {truth}: {}",
        r.all()
    );
    // Inside probes hold at least 90 % good, outside ones less.
    let rd = check_folder(&dir);
    let mut seen = (false, false);
    for p in &file.probes {
        let t = &p.terms[0];
        let rung = rd
            .rungs
            .iter()
            .find(|r| r.entry.rate == p.level)
            .expect("every probe is a rung");
        let s = &rung.summary;
        let good = (s.request_goodput * s.duration_s).round();
        let measured = (s.completed + s.failed) as f64;
        // The rung pools the probe's own measurements and its repeats as a bound (each
        // judged apart in capacity.json).
        let own = p.requests + p.repeats.iter().map(|r| r.requests).sum::<usize>();
        assert_eq!(measured as usize, own, "probe at {}", p.level);
        let value = t.value.unwrap();
        let good_json = value * p.requests as f64
            + p.repeats
                .iter()
                .map(|r| r.terms[0].value.unwrap() * r.requests as f64)
                .sum::<f64>();
        assert!(
            (good_json - good).abs() < 1e-6,
            "probe at {}: capacity.json {good_json} good, rung file {good} good of {measured}",
            p.level
        );
        match p.verdict {
            ladder::capacity::ProbeVerdict::Inside => {
                seen.0 = true;
                assert!(t.lo.unwrap() >= 0.9 && value >= 0.9, "{p:?}");
            }
            ladder::capacity::ProbeVerdict::Outside => {
                seen.1 = true;
                assert!(t.hi.unwrap() < 0.9, "{p:?}");
            }
            ladder::capacity::ProbeVerdict::Uncertain => {}
        }
    }
    assert_eq!(seen, (true, true), "{:?}", file.probes);
}

/// A candidate whose decode is 50 % slower has a third less capacity: `compare` fails it on
/// the capacity row, in the terminal, Markdown and JUnit; the same build against itself
/// does not regress.
#[test]
fn a_gate_on_capacity_catches_a_slower_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let base = scenario(tmp.path(), 8.0, 1.0, 200.0, "");
    let cand = scenario(tmp.path(), 8.0, 1.5, 200.0, "");
    let (ran, bdir, bfile) = search(&base, &tmp.path().join("base"));
    let (_, cdir, cfile) = search(&cand, &tmp.path().join("cand"));
    // The rung analysis under a search says whose SLO its "within SLO" is: a level the search
    // judged outside is never called within the search's SLO.
    let within = ran
        .stdout
        .lines()
        .find(|l| l.starts_with("Highest rate within SLO:"))
        .unwrap_or_else(|| panic!("no within line:\n{}", ran.stdout));
    assert!(
        within.contains("by the scenario's `slo:` block, not the search's SLO"),
        "{within}"
    );
    assert!(
        cfile.answer.capacity.unwrap() < bfile.answer.capacity.unwrap(),
        "{} vs {}",
        cfile.text,
        bfile.text
    );
    let md = tmp.path().join("summary.md");
    let xml = tmp.path().join("junit.xml");
    let r = spawn(ladder_cmd(&[
        "compare",
        bdir.to_str().unwrap(),
        cdir.to_str().unwrap(),
        "--summary",
        md.to_str().unwrap(),
        "--junit",
        xml.to_str().unwrap(),
    ]))
    .finish(LIMIT);
    no_panic(&r);
    assert_eq!(r.status.code(), Some(1), "{}", r.all());
    let row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("search ") && l.contains("capacity"))
        .unwrap_or_else(|| panic!("no capacity row:\n{}", r.stdout));
    assert!(row.contains("REGRESSION"), "{row}");
    assert!(row.contains("x["), "the ratio interval is shown: {row}");
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("| search | capacity |"), "{md}");
    let xml = std::fs::read_to_string(xml).unwrap();
    assert!(
        xml.contains("capacity -5%") && xml.contains("<failure"),
        "{xml}"
    );
    // The baseline against itself: the capacity row passes or is inconclusive, never a
    // regression.
    let r = spawn(ladder_cmd(&[
        "compare",
        bdir.to_str().unwrap(),
        bdir.to_str().unwrap(),
    ]))
    .finish(LIMIT);
    assert_ne!(r.status.code(), Some(1), "{}", r.all());
    // The baseline's answer edited by hand into nonsense (an interval upside down, ends no
    // probe measured): compare, report and bless each refuse it, naming the key, instead of
    // a gate passing on it (RELIABILITY.md, the capacity.json row).
    let bad = tmp.path().join("tampered");
    let cp = std::process::Command::new("cp")
        .args(["-r", bdir.to_str().unwrap(), bad.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(cp.success());
    let path = bad.join("capacity.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["answer"]["lo"] = 1.0.into();
    v["answer"]["hi"] = 0.5.into();
    v["answer"]["capacity"] = 0.7.into();
    std::fs::write(&path, v.to_string()).unwrap();
    let golden = tmp.path().join("golden");
    for args in [
        vec!["compare", bad.to_str().unwrap(), cdir.to_str().unwrap()],
        vec!["report", bad.to_str().unwrap()],
        vec![
            "bless",
            bad.to_str().unwrap(),
            "--golden",
            golden.to_str().unwrap(),
        ],
    ] {
        let r = spawn(ladder_cmd(&args)).finish(LIMIT);
        no_panic(&r);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.all());
        assert!(
            r.stderr
                .contains("damaged capacity file: answer: capacity 0.7 with interval [1, 0.5]"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert!(!golden.join("capacity").exists(), "nothing was blessed");
}

/// `ladder history` follows the searches' answers: a plain ladder, three searches of the
/// simulator at speed 16, then three at speed 8 (half the capacity), all at the same SLO.
/// The history of the folder follows capacity.json by default, leaves the plain ladder out
/// with a note, and finds the step at the first slower search.
#[test]
fn history_follows_capacity_across_searches_and_finds_the_slower_server() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let plain = tmp.path().join("plain.yaml");
    std::fs::write(
        &plain,
        format!(
            "version: 1
name: rel
endpoint: {{ base_url: sim }}
model: ladder-sim
tokenizer: {TOKENIZER}
workload: {{ input_tokens: 128, output_tokens: 64, requests_per_rung: 20, seed: 0 }}
load: {{ rates: [20], cooldown: 0s }}
sim: {{ seed: 0, max_num_seqs: 16, speed: 16 }}
"
        ),
    )
    .unwrap();
    let r = run_ladder(&plain, &out, LIMIT);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let mut found = Vec::new();
    for speed in [16.0, 16.0, 16.0, 8.0, 8.0, 8.0] {
        let sc = scenario(tmp.path(), speed, 1.0, 200.0, "");
        let (_, _, file) = search(&sc, &out);
        found.push(file.answer.capacity.unwrap());
    }
    let md = tmp.path().join("h.md");
    let r = spawn(ladder_cmd(&[
        "history",
        out.join("rel").to_str().unwrap(),
        "--summary",
        md.to_str().unwrap(),
    ]))
    .finish(LIMIT);
    no_panic(&r);
    assert_eq!(
        r.status.code(),
        Some(0),
        "capacities {found:?}: {}",
        r.all()
    );
    assert!(
        r.stderr.contains("note: capacity: skipped #1 ")
            && r.stderr
                .contains("no capacity.json (not a capacity search)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout
            .contains("capacity (req/s) at p90 TTFT <= 200 ms and error rate <= 0.05"),
        "{}",
        r.stdout
    );
    let steps: Vec<&str> = r.stdout.lines().filter(|l| l.contains("step at")).collect();
    assert_eq!(steps.len(), 1, "capacities {found:?}: {}", r.stdout);
    assert!(
        steps[0].trim_start().starts_with("capacity: step at #5 ")
            && steps[0].contains("regression"),
        "capacities {found:?}: {}",
        r.stdout
    );
    // The configuration diff names the speed.
    assert!(r.stdout.contains("\"speed\": 8"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("ok: no change point at the newest folder (#7)"),
        "{}",
        r.stdout
    );
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("capacity: step at #5"), "{md}");
}

fn validate(dir: &Path, yaml_extra: &str) -> Ran {
    let sc = scenario(dir, 8.0, 1.0, 200.0, yaml_extra);
    let text = std::fs::read_to_string(&sc).unwrap();
    // Keys under `load:` go right after it.
    let text = match yaml_extra.strip_prefix("LOAD:") {
        Some(line) => text
            .replace(yaml_extra, "")
            .replace("load:\n", &format!("load:\n  {}\n", line.trim())),
        None => text,
    };
    std::fs::write(&sc, text).unwrap();
    spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT)
}

#[test]
fn a_search_is_refused_where_it_makes_no_sense_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let ok = validate(tmp.path(), "");
    assert_eq!(ok.status.code(), Some(0), "{}", ok.all());
    for (extra, says) in [
        (
            "LOAD: rates: [1, 2]",
            "`load.rates` does not combine with `load.search`",
        ),
        (
            "LOAD: trace: { path: t.jsonl }",
            "`load.trace` does not combine with `load.search`",
        ),
        (
            "LOAD: duration: 1m",
            "`load.duration` does not combine with `load.search`",
        ),
        (
            "LOAD: repeats: 3",
            "`load.repeats` does not combine with `load.search`",
        ),
    ] {
        let r = validate(tmp.path(), extra);
        assert_eq!(r.status.code(), Some(2), "{extra}: {}", r.all());
        assert!(r.stderr.contains(says), "{extra}: {}", r.stderr);
        assert!(
            r.stderr.contains("hint: remove it"),
            "{extra}: {}",
            r.stderr
        );
    }
    // Sessions: their unit is unclear.
    let sc = scenario(tmp.path(), 8.0, 1.0, 200.0, "");
    let text = std::fs::read_to_string(&sc)
        .unwrap()
        .replace("seed: 0 }", "seed: 0, sessions: { turns: 2 } }");
    std::fs::write(&sc, &text).unwrap();
    let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("`workload.sessions` does not combine with `load.search`"),
        "{}",
        r.stderr
    );
    // A bad SLO metric names the accepted ones; a capacity gate needs a search.
    let sc = scenario(tmp.path(), 8.0, 1.0, 200.0, "");
    let text = std::fs::read_to_string(&sc)
        .unwrap()
        .replace("p90_ttft_ms", "mean_ttft_ms");
    std::fs::write(&sc, &text).unwrap();
    let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
    assert_eq!(r.status.code(), Some(2));
    assert!(
        r.stderr
            .contains("a mean has no distribution-free interval"),
        "{}",
        r.stderr
    );
    let quick = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml");
    let gated = std::fs::read_to_string(quick).unwrap().replace(
        "gate:\n",
        "gate:\n  - { metric: capacity, max_decrease: 5% }\n",
    );
    let gated = gated.replace("tokenizers/ladder-tiny.json", TOKENIZER);
    let qp = tmp.path().join("q.yaml");
    std::fs::write(&qp, gated).unwrap();
    let r = spawn(ladder_cmd(&["validate", qp.to_str().unwrap()])).finish(LIMIT);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("has no `load.search`"), "{}", r.stderr);
}

#[test]
fn run_flags_and_shards_that_cannot_follow_a_search_are_refused_before_any_load() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), 8.0, 1.0, 200.0, "");
    let s = sc.to_str().unwrap();
    let future = format!("@{}", chrono::Utc::now().timestamp() + 3600);
    let out = tmp.path().join("out");
    for (mut args, says) in [
        (vec!["run", s, "--rates", "1,2"], "chooses its own rates"),
        (
            vec!["run", s, "--repeats", "3"],
            "does not combine with `load.search`",
        ),
        (
            vec!["run", s, "--shard", "1/2", "--start-at", future.as_str()],
            "a capacity search (`load.search`) chooses each probe",
        ),
        (
            vec!["slurm", s, "--shards", "2"],
            "a capacity search (`load.search`) chooses each probe",
        ),
    ] {
        if args[0] == "run" {
            args.extend(["--out", out.to_str().unwrap()]);
        }
        let r = spawn(ladder_cmd(&args)).finish(LIMIT);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.all());
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        // A shard that is refused does not first announce when it starts.
        assert!(
            !r.stderr.contains("starts its first rung"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert!(!out.exists(), "nothing was run");
}

/// A search stopped by Ctrl-C in the middle of a measurement: capacity.json says
/// `interrupted` and counts every request that measurement sent (its lines are in the
/// folder): the requests it spends are those of the folder's request files, warmups
/// included.
#[test]
fn an_interrupted_search_counts_the_requests_of_its_cut_measurement() {
    let tmp = tempfile::tempdir().unwrap();
    // At speed 1 the first probe (5 req/s, 150 requests) takes 30 s: a signal 3 s in cuts it.
    let sc = scenario(tmp.path(), 1.0, 1.0, 2000.0, "");
    let out = tmp.path().join("out");
    let live = support::spawn_run(&sc, &out);
    live.wait_line("searching for the capacity", LIMIT);
    std::thread::sleep(Duration::from_secs(3));
    live.signal("INT");
    let r = live.finish(LIMIT);
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    let (dir, file) = newest_search(&out);
    assert_eq!(file.answer.status, Stop::Interrupted, "{file:?}");
    let mut lines = 0u64;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("requests_") && name.ends_with(".jsonl") {
            lines += std::fs::read_to_string(&p).unwrap().lines().count() as u64;
        }
    }
    assert!(lines > 0, "the cut measurement's requests are kept");
    assert_eq!(file.requests, lines, "{}", r.all());
    assert!(file.spent_s >= 2.0, "{}", file.spent_s);
}
