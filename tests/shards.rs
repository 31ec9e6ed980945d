//! Shards (`ladder run --shard`), `ladder merge`, and the manifests of `ladder slurm` /
//! `ladder kube` (docs/scale-out.md).
//!
//! - three shards against one `ladder sim` on loopback, merged: every request index of the
//!   one-machine schedule exactly once, at its one-machine send time;
//! - a real run split into shard folders and merged gives byte-for-byte the same rung files
//!   as the run itself (same records in one folder → identical metrics), with repeats too;
//! - merge refuses a missing, duplicated, failed or foreign shard;
//! - the Kubernetes manifests deserialize into k8s-openapi's generated `batch/v1` Job and
//!   `v1` ConfigMap types (the Kubernetes OpenAPI schema, offline) and serialize back to the
//!   same JSON, so no field is unknown or mistyped; the API key comes from a Secret.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ladder::record::RequestRecord;
use ladder::results::shard_merge::rung_summary;
use ladder::results::{RequestLine, ResultDir, RunStatus, RunWriter, ShardInfo};
use support::*;

fn scenario(dir: &Path, base_url: &str, extra_load: &str) -> PathBuf {
    let text = format!(
        "version: 1\nname: sharded\nendpoint:\n  base_url: {base_url}\n  api: completions\n  request_timeout: 10s\n\
         model: sim-model\ntokenizer: {TOKENIZER}\nworkload:\n  input_tokens: 32\n  output_tokens: 8\n  \
         requests_per_rung: 48\n  seed: 7\nload:\n  arrival: poisson\n  rates: [30, 60]\n  warmup_requests: 3\n  \
         cooldown: 1s\n{extra_load}sim:\n  seed: 1\n"
    );
    let p = dir.join("sharded.yaml");
    fs::write(&p, text).unwrap();
    p
}

/// A `ladder sim --port 0` on loopback, killed on drop.
fn start_sim() -> support::serve::SimProc {
    support::serve::SimProc::start(&[])
}

#[test]
fn three_shards_against_one_simulator_merge_to_the_one_machine_schedule() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = start_sim();
    let sc = scenario(tmp.path(), &sim.url(), "");
    let out = tmp.path().join("out");
    let start = chrono::Utc::now().timestamp() + 10;
    let at = format!("@{start}");
    let shards: Vec<Live> = (0..3)
        .map(|i| {
            spawn(ladder_cmd(&[
                "run",
                sc.to_str().unwrap(),
                "--shard",
                &format!("{i}/3"),
                "--start-at",
                &at,
                "--drain",
                "3s",
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ]))
        })
        .collect();
    for (i, s) in shards.into_iter().enumerate() {
        let r = s.finish(Duration::from_secs(90));
        no_panic(&r);
        assert!(r.status.success(), "shard {i}:\n{}", r.all());
        let note = format!("note: shard {i}/3 starts its first rung at ");
        assert!(r.stderr.contains(&note), "shard {i}:\n{}", r.stderr);
    }
    drop(sim);
    let parent = fs::read_dir(out.join("sharded.shards"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let merged = tmp.path().join("merged");
    let r = spawn(ladder_cmd(&[
        "merge",
        "--wait",
        "30s",
        parent.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
        "--json",
    ]))
    .finish(Duration::from_secs(60));
    assert!(r.status.success(), "{}", r.all());
    assert!(r.stderr.contains("merged 3 shards"), "{}", r.stderr);
    // --json: stdout is one document (docs/json.md), the folder's path in it.
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect(&r.stdout);
    assert_eq!(v["version"], 1);
    assert_eq!(v["command"], "merge");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["dir"], merged.to_str().unwrap());
    assert_eq!(v["shards"], 3);
    assert_eq!(v["rungs"], 2);
    assert!(v["measured_requests"].as_u64().unwrap() > 0, "{v}");
    let d = check_folder(&merged);
    assert_eq!(d.info.status, RunStatus::Complete);
    assert!(d.info.shard.is_none());
    let m = d
        .info
        .shards
        .as_ref()
        .expect("merged run.json lists its shards");
    assert_eq!(m.count, 3);
    assert_eq!(
        m.shards.iter().map(|s| s.shard.index).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    for s in &m.shards {
        // Every rung (two) started at a recorded, shared instant.
        assert_eq!(s.shard.rung_starts.len(), 2, "{s:?}");
        assert_eq!(s.rungs.len(), 2);
        assert_eq!(s.shard.start_at.timestamp(), start);
    }
    // The planned starts are the same instants on every shard.
    let planned: Vec<_> = m.shards[0]
        .shard
        .rung_starts
        .iter()
        .map(|r| r.planned)
        .collect();
    for s in &m.shards[1..] {
        let p: Vec<_> = s.shard.rung_starts.iter().map(|r| r.planned).collect();
        assert_eq!(p, planned);
    }
    for (k, rung) in d.rungs.iter().enumerate() {
        let lines = d.requests(rung).unwrap();
        // Every index of the one-machine rung (3 warmup + 48) exactly once, in order.
        let idx: Vec<u32> = lines.iter().map(|l| l.index).collect();
        assert_eq!(
            idx,
            (0..51).collect::<Vec<u32>>(),
            "rung {}",
            rung.entry.rate
        );
        // At the one-machine schedule's send times.
        let want = ladder::workload::schedule(
            ladder::scenario::Arrival::Poisson,
            rung.entry.rate,
            None,
            51,
            ladder::runner::rung_seed(7, k),
        )
        .unwrap();
        for (l, w) in lines.iter().zip(&want) {
            assert!(
                (l.scheduled_ms - w.as_secs_f64() * 1000.0).abs() < 1e-6,
                "request {}: {} vs {:?}",
                l.index,
                l.scheduled_ms,
                w
            );
        }
        assert_eq!(rung.summary.num_prompts, 48);
        assert_eq!(rung.summary.warmup_requests, 3);
        // Each shard holds its share: index % 3.
        let per: u64 = m.shards.iter().map(|s| s.rungs[k].requests).sum();
        assert_eq!(per, 48);
    }
    // compare and report take the merged folder as any other.
    // (Judged on the requests' noise: 48 requests a rung decide nothing under the default
    // assumed drift, and a merged folder is judged like any other.)
    let r = spawn(ladder_cmd(&[
        "compare",
        "--drift",
        "0",
        merged.to_str().unwrap(),
        merged.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(merged.join("report.html").is_file());
}

/// Write shard folders holding `run`'s requests split by index (as `ladder run --shard`
/// would have measured them), each with its share's summaries.
fn split(run: &ResultDir, n: u32, root: &Path) -> Vec<PathBuf> {
    split_by(run, n, root, &|l, i| (l.index % n == i).then(|| l.clone()))
}

/// [`split`] with the lines each shard gets (possibly changed) chosen by `take(line, shard)`.
fn split_by(
    run: &ResultDir,
    n: u32,
    root: &Path,
    take: &dyn Fn(&RequestLine, u32) -> Option<RequestLine>,
) -> Vec<PathBuf> {
    let slo = run
        .info
        .scenario
        .get("slo")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    (0..n)
        .map(|i| {
            let mut info = run.info.clone();
            info.rungs.clear();
            info.status = RunStatus::Running;
            info.shard = Some(ShardInfo {
                index: i,
                count: n,
                start_at: run.info.started_at,
                drain_ms: 1000.0,
                clock: None,
                rung_starts: vec![],
            });
            let dir = root.join(format!("shard-{i}-of-{n}"));
            let mut w = RunWriter::create_exact(&dir, info).unwrap();
            for rung in &run.rungs {
                let lines: Vec<RequestLine> = run
                    .requests(rung)
                    .unwrap()
                    .iter()
                    .filter_map(|l| take(l, i))
                    .collect();
                let mut part = rung.summary.clone();
                if i > 0 {
                    // Only shard 0 scrapes the server and counts the prompts' lengths.
                    part.inexact_prompts = 0;
                    part.server = Default::default();
                    for r in &mut part.repeats {
                        r.inexact_prompts = 0;
                        r.server = Default::default();
                    }
                }
                let summary = rung_summary(&lines, &[&part], &slo);
                let per: Vec<Vec<_>> = match rung.summary.repeats.len() {
                    0 => vec![lines.iter().map(RequestRecord::from).collect()],
                    k => (1..=k as u32)
                        .map(|r| {
                            lines
                                .iter()
                                .filter(|l| l.repeat == r)
                                .map(RequestRecord::from)
                                .collect()
                        })
                        .collect(),
                };
                let per: Vec<&[_]> = per.iter().map(Vec::as_slice).collect();
                w.write_rung_repeats(&summary, &per, rung.entry.complete)
                    .unwrap();
            }
            w.finish(RunStatus::Complete, None, run.info.ended_at.unwrap())
                .unwrap();
            dir
        })
        .collect()
}

/// A rung file split into its lines from the records (compared byte for byte) and its
/// `server_*` values (from shard 0's scrape, read back from JSON: equal to a unit in the
/// last place).
fn metrics_and_server(bytes: &[u8]) -> (String, Vec<(String, f64)>) {
    let text = String::from_utf8_lossy(bytes);
    let (server, own): (Vec<&str>, Vec<&str>) = text
        .lines()
        .partition(|l| l.trim_start().starts_with("\"server_"));
    let server = server
        .iter()
        .filter_map(|l| {
            let (k, v) = l.trim().trim_end_matches(',').split_once(": ")?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect();
    (own.join("\n"), server)
}

fn rung_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("result_rate_")
        })
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A 2:1 mix of two names (each request line names its model; each rung breaks down by it).
const MIX: &str = "model:\n  - name: sim-model\n    weight: 2\n  - name: sim-lora\n    weight: 1\n";

fn one_run(extra_load: &str, mix: bool) -> (tempfile::TempDir, ResultDir) {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "sim", extra_load);
    if mix {
        let text = fs::read_to_string(&sc).unwrap();
        fs::write(&sc, text.replace("model: sim-model\n", MIX)).unwrap();
    }
    let out = tmp.path().join("out");
    let r = spawn(ladder_cmd(&[
        "run",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .finish(Duration::from_secs(120));
    assert!(r.status.success(), "{}", r.all());
    let dir = fs::read_dir(out.join("sharded"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let d = ResultDir::open_finished(&dir).unwrap();
    (tmp, d)
}

#[test]
fn a_run_split_into_shards_and_merged_has_byte_for_byte_the_same_metrics() {
    // With a model mix too: the merged rungs' per-model breakdown (pooled over the repeats)
    // is the run's own.
    for (extra, mix) in [
        ("", false),
        ("  repeats: 2\n", false),
        ("", true),
        ("  repeats: 2\n", true),
    ] {
        let (tmp, run) = one_run(extra, mix);
        let want = rung_files(&run.path);
        assert_eq!(want.len(), 2);
        assert_eq!(
            want.iter()
                .all(|(_, b)| String::from_utf8_lossy(b).contains("\"sim-lora\"")),
            mix,
            "{extra:?}"
        );
        for n in [1u32, 3, 4] {
            let shards = split(&run, n, &tmp.path().join(format!("split-{n}")));
            let out = tmp.path().join(format!("merged-{n}"));
            let m = ladder::results::shard_merge::merge(&shards, &out).unwrap();
            assert_eq!(m.info.shards.as_ref().unwrap().count, n);
            let got = rung_files(&out);
            for ((wn, wb), (gn, gb)) in want.iter().zip(&got) {
                assert_eq!(wn, gn);
                let (w, ws) = metrics_and_server(wb);
                let (g, gs) = metrics_and_server(gb);
                assert!(
                    w == g,
                    "{extra:?} mix {mix} {n} shards: {wn} differs:\n--- run\n{w}\n--- merged\n{g}"
                );
                assert_eq!(ws.len(), gs.len());
                for ((wk, wv), (gk, gv)) in ws.iter().zip(&gs) {
                    assert_eq!(wk, gk);
                    assert!(
                        (wv - gv).abs() <= 1e-12 * wv.abs().max(1.0),
                        "{wk}: {wv} vs {gv}"
                    );
                }
            }
            assert_eq!(got.len(), want.len());
        }
    }
}

#[test]
fn merge_refuses_missing_duplicate_failed_and_foreign_shards() {
    let (tmp, run) = one_run("", false);
    let shards = split(&run, 3, &tmp.path().join("split"));
    let refuse = |dirs: Vec<PathBuf>, needle: &str| {
        let out = tmp.path().join(format!("m-{}", needle.len()));
        let _ = fs::remove_dir_all(&out);
        let e = ladder::results::shard_merge::merge(&dirs, &out)
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "want {needle:?} in: {e}");
    };
    refuse(
        vec![shards[0].clone(), shards[2].clone()],
        "shard 1 of 3 is missing",
    );
    refuse(
        vec![shards[0].clone(), shards[1].clone()],
        "shard 2 of 3 is missing",
    );
    refuse(
        vec![shards[0].clone(), shards[1].clone(), shards[1].clone()],
        "given twice",
    );
    refuse(vec![run.path.clone()], "not a shard's folder");
    let edit = |i: usize, f: &dyn Fn(&mut serde_json::Value)| -> PathBuf {
        let dir = tmp.path().join(format!("edited-{i}-{}", rand_suffix()));
        copy_dir(&shards[i], &dir);
        let p = dir.join("run.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
        f(&mut v);
        fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        dir
    };
    let seed = edit(1, &|v| v["scenario"]["workload"]["seed"] = 8.into());
    refuse(
        vec![shards[0].clone(), seed, shards[2].clone()],
        "seeds (workload.seed) differ",
    );
    let version = edit(2, &|v| v["tool_version"] = "0.0.1".into());
    refuse(
        vec![shards[0].clone(), shards[1].clone(), version],
        "ladder versions differ",
    );
    let count = edit(2, &|v| v["shard"]["count"] = 4.into());
    refuse(
        vec![shards[0].clone(), shards[1].clone(), count],
        "shard counts differ",
    );
    let failed = edit(1, &|v| {
        v["status"] = "failed".into();
        v["status_detail"] = "not ready".into();
    });
    refuse(
        vec![shards[0].clone(), failed, shards[2].clone()],
        "ended `failed` (not ready)",
    );
    // Issue 32: a shard still running is said to be running, with what to do.
    let running = edit(1, &|v| v["status"] = "running".into());
    refuse(
        vec![shards[0].clone(), running, shards[2].clone()],
        "shard 1 is still running (its run.json says `running`): merge once every shard has \
         finished, e.g. `ladder merge --wait 2h",
    );
    // The run's shards folder given twice is "given twice", not "not a result folder".
    let root = tmp.path().join("split");
    let e = ladder::results::shard_merge::shard_dirs(
        &[root.clone(), root.join(".")],
        None,
        &ladder::notes::Notes::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("is given twice"), "{e}");
    // The three as written merge.
    ladder::results::shard_merge::merge(&shards, &tmp.path().join("ok")).unwrap();
}

/// A shard's lines are the ones it owns: `index % N == i`, below the rung's count. Lines
/// dealt to the wrong shard, or renumbered past the rung's requests, make folders that pass
/// every summary check (the summaries are recomputed from them) but are refused by merge,
/// naming the file and line.
#[test]
fn merge_refuses_lines_a_shard_does_not_own() {
    let (tmp, run) = one_run("", false);
    // Shard i gets the lines of shard (i + 1) % 3: every index once overall.
    let swapped = split_by(&run, 3, &tmp.path().join("swapped"), &|l, i| {
        (l.index % 3 == (i + 1) % 3).then(|| l.clone())
    });
    let e = ladder::results::shard_merge::merge(&swapped, &tmp.path().join("m1"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("shard-0-of-3/requests_rate_30.jsonl:1: request 1 belongs to shard 1 of 3")
            && e.contains("not to this shard 0")
            && e.contains("run the shards again"),
        "{e}"
    );
    // Shard 2's last line renumbered past the rung's 3 + 48 requests (its own residue).
    let past = split_by(&run, 3, &tmp.path().join("past"), &|l, i| {
        let mut l = l.clone();
        if l.index == 50 {
            l.index = 53;
        }
        (l.index % 3 == i).then_some(l)
    });
    let e = ladder::results::shard_merge::merge(&past, &tmp.path().join("m2"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("shard-2-of-3/requests_rate_30.jsonl:")
            && e.contains("request 53 is past the rung's 51 requests"),
        "{e}"
    );
}

/// One shard's folder holds 1/N of every rung: bless, compare and gate refuse it as a whole
/// run and say to merge first.
#[test]
fn a_shard_folder_is_not_a_whole_run() {
    let (tmp, run) = one_run("", false);
    let shards = split(&run, 2, &tmp.path().join("split"));
    let golden = tmp.path().join("golden");
    let want = "is shard 1 of 2: it holds 1/2 of every rung's requests, not the whole run: merge \
                the shards first (ladder merge ";
    let r = spawn(ladder_cmd(&[
        "bless",
        shards[1].to_str().unwrap(),
        "--golden",
        golden.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.all().contains(want), "{}", r.all());
    assert!(!golden.join("sharded").exists());
    for (base, cand) in [(&run.path, &shards[1]), (&shards[1], &run.path)] {
        let r = spawn(ladder_cmd(&[
            "compare",
            base.to_str().unwrap(),
            cand.to_str().unwrap(),
        ]))
        .finish(Duration::from_secs(60));
        assert_eq!(r.status.code(), Some(2), "{}", r.all());
        assert!(r.all().contains(want), "{}", r.all());
    }
    // The gate's baseline: a shard's folder copied into golden/.
    copy_dir(&shards[1], &golden.join("sharded"));
    let e = ladder::commands::gate_outcome(
        &ladder::commands::GateOptions {
            golden: Some(golden.clone()),
            ..Default::default()
        },
        &ladder::runner::RunOutcome {
            dir: run.path.clone(),
            info: run.info.clone(),
            rungs: run.rungs.iter().map(|r| r.summary.clone()).collect(),
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(want), "{e}");
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn a_shard_late_for_its_start_stops_and_is_marked_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "sim", "");
    let out = tmp.path().join("out");
    let past = format!("@{}", chrono::Utc::now().timestamp() - 30);
    let r = spawn(ladder_cmd(&[
        "run",
        sc.to_str().unwrap(),
        "--shard",
        "1/2",
        "--start-at",
        &past,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .finish(Duration::from_secs(60));
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("not ready for rung 30"), "{}", r.stderr);
    let dir = fs::read_dir(out.join("sharded.shards"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let d = ResultDir::open(&dir.join("shard-1-of-2")).unwrap();
    assert_eq!(d.info.status, RunStatus::Failed);
    assert!(d.rungs.is_empty(), "nothing was measured");
    // Without --start-at a shard is refused before anything is sent.
    let r = spawn(ladder_cmd(&["run", sc.to_str().unwrap(), "--shard", "0/2"]))
        .finish(Duration::from_secs(30));
    assert_eq!(r.status.code(), Some(2));
    assert!(r.stderr.contains("needs --start-at"), "{}", r.stderr);
}

/// Deserialize `v` as `T` (k8s-openapi's type, generated from the Kubernetes OpenAPI
/// schema) and serialize it back: equal JSON means every field is known and well typed.
fn schema_round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(v: &serde_json::Value) {
    let typed: T = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("not a valid {}: {e}\n{v:#}", std::any::type_name::<T>()));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &back,
        v,
        "fields unknown to {} were dropped",
        std::any::type_name::<T>()
    );
}

#[test]
fn kube_manifests_match_the_kubernetes_schema_and_take_the_key_from_a_secret() {
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::ConfigMap;
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "http://vllm.default.svc:8000", "");
    let text = fs::read_to_string(&sc).unwrap().replace(
        "  request_timeout: 10s\n",
        "  request_timeout: 10s\n  api_key_env: GATEWAY_API_KEY\n",
    );
    fs::write(&sc, text).unwrap();
    let file = tmp.path().join("k8s.json");
    let r = spawn(ladder_cmd(&[
        "kube",
        sc.to_str().unwrap(),
        "--shards",
        "4",
        "--image",
        "registry.example/ladder:1",
        "--start-at",
        "2026-12-04T15:00:00Z",
        "--namespace",
        "bench",
        "--cpu",
        "2",
        "-o",
        file.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(30));
    assert!(r.status.success(), "{}", r.all());
    let list: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    schema_round_trip::<ConfigMap>(&items[0]);
    schema_round_trip::<Job>(&items[1]);
    schema_round_trip::<Job>(&items[2]);
    let job: Job = serde_json::from_value(items[1].clone()).unwrap();
    let spec = job.spec.unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(
        (spec.completions, spec.parallelism, spec.backoff_limit),
        (Some(4), Some(4), Some(0))
    );
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    let c = &pod.containers[0];
    let cmd = c.command.clone().unwrap();
    assert_eq!(
        &cmd[..5],
        ["ladder", "run", "/scenario/sharded.yaml", "--shard", "auto"]
    );
    assert_eq!(cmd[6], "2026-12-04T15:00:00.000Z");
    let env = c.env.clone().unwrap();
    let shards = env.iter().find(|e| e.name == "LADDER_SHARDS").unwrap();
    assert_eq!(shards.value.as_deref(), Some("4"));
    let key = env.iter().find(|e| e.name == "GATEWAY_API_KEY").unwrap();
    assert!(
        key.value.is_none(),
        "the key's value is never in a manifest"
    );
    let r = key
        .value_from
        .as_ref()
        .unwrap()
        .secret_key_ref
        .as_ref()
        .unwrap();
    assert_eq!(
        (r.name.as_str(), r.key.as_str()),
        ("ladder-api-key", "api-key")
    );
    assert!(pod.volumes.unwrap().iter().any(|v| v
        .persistent_volume_claim
        .as_ref()
        .is_some_and(|p| p.claim_name == "ladder-results")));
    let merge: Job = serde_json::from_value(items[2].clone()).unwrap();
    let mc = merge.spec.unwrap().template.spec.unwrap().containers[0]
        .command
        .clone()
        .unwrap();
    assert_eq!(
        mc,
        [
            "ladder",
            "merge",
            "--wait",
            "12h",
            "/results/sharded.shards/2026-12-04T15-00-00Z",
            "--out",
            "/results/sharded/2026-12-04T15-00-00Z"
        ]
    );
    assert_eq!(job.metadata.namespace.as_deref(), Some("bench"));
    // A concurrency ladder with fewer users than shards is refused with the reason.
    let few = scenario(tmp.path(), "sim", "");
    let text = fs::read_to_string(&few).unwrap().replace(
        "  arrival: poisson\n  rates: [30, 60]\n",
        "  concurrency: [2, 8]\n",
    );
    fs::write(&few, text).unwrap();
    let r = spawn(ladder_cmd(&[
        "kube",
        few.to_str().unwrap(),
        "--shards",
        "4",
        "--image",
        "i",
    ]))
    .finish(Duration::from_secs(30));
    assert_eq!(r.status.code(), Some(2));
    assert!(
        r.stderr.contains("fewer users than the 4 shards"),
        "{}",
        r.stderr
    );
    // A trace replay or a ramp is not sharded (merge would lose its offered rate and windows).
    for (example, kind) in [("trace-replay.yaml", "trace"), ("ramp.yaml", "ramp")] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(example);
        let r = spawn(ladder_cmd(&[
            "kube",
            path.to_str().unwrap(),
            "--shards",
            "2",
            "--image",
            "i",
            "-o",
            tmp.path().join("no.json").to_str().unwrap(),
        ]))
        .finish(Duration::from_secs(30));
        assert_eq!(r.status.code(), Some(2), "{}", r.all());
        assert!(
            r.stderr
                .contains(&format!("a {kind} ladder cannot be sharded yet")),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn the_slurm_script_starts_every_shard_at_one_instant_and_merges() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "sim", "");
    let r = spawn(ladder_cmd(&[
        "slurm",
        sc.to_str().unwrap(),
        "--shards",
        "4",
        "--time",
        "00:30:00",
        "--drain",
        "5s",
    ]))
    .finish(Duration::from_secs(30));
    assert!(r.status.success(), "{}", r.all());
    let s = r.stdout;
    assert!(
        s.starts_with("#!/bin/bash\n#SBATCH --job-name=ladder-sharded\n#SBATCH --ntasks=4\n"),
        "{s}"
    );
    assert!(s.contains("#SBATCH --time=00:30:00\n"), "{s}");
    assert!(s.contains("START=$(( $(date +%s) + 60 ))"), "{s}");
    assert!(s.contains(&format!("srun --ntasks=4 --kill-on-bad-exit=1 ladder run {} --shard auto --start-at \"@$START\" --out \"$OUT\" --quiet --drain 5s", sc.display())), "{s}");
    assert!(
        s.contains("ladder merge \"$OUT/sharded.shards/$STAMP\" --out \"$OUT/sharded/$STAMP\""),
        "{s}"
    );
    // bash accepts it.
    let file = tmp.path().join("job.sh");
    fs::write(&file, &s).unwrap();
    let ok = std::process::Command::new("bash")
        .args(["-n", file.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn the_shipped_scale_out_example_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let r = spawn(ladder_cmd(&[
        "validate",
        dir.join("scale-out.yaml").to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(30));
    assert!(r.status.success(), "{}", r.all());
    let text = fs::read_to_string(dir.join("scale-out.yaml")).unwrap();
    assert!(text.starts_with("# yaml-language-server: $schema=../schemas/scenario.v1.json\n"));
}
