//! Tampered result folders, terminal status, rung identity: result folders arrive as CI
//! artifacts and in pull requests, so every name, path and number in them is hostile. Each
//! folder here is one tiny `ladder run` against the built-in simulator, copied and edited.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(90);

fn ladder(args: &[&str]) -> Ran {
    let r = spawn(ladder_cmd(args)).finish(LIMIT);
    no_panic(&r);
    r
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Exit 2, an error line (`error:`, or a scenario diagnostic's `file:line:col: error:`), and
/// `needle` (the file at fault) in what it says.
fn refused(r: &Ran, needle: &str) {
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr
            .lines()
            .any(|l| l.starts_with("error:") || l.contains(": error: ")),
        "no error: line\n{}",
        r.all()
    );
    assert!(
        r.stderr.contains(needle),
        "{needle:?} not named\n{}",
        r.all()
    );
    assert!(!r.stdout.contains("PASS"), "{}", r.all());
}

/// One finished two-rung run (rates 20 and 40) against the simulator.
fn good_run(t: &Path) -> PathBuf {
    let sc = Sc::new("sim");
    let path = sc.write(t);
    let out = t.join("out");
    let r = run_ladder(&path, &out, LIMIT);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    check_folder(&run_dir(&out).unwrap());
    run_dir(&out).unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn edit_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

fn edit_lines(path: &Path, f: impl FnOnce(&mut Vec<Value>)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    f(&mut lines);
    let out: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(path, out).unwrap();
}

/// A directory outside golden/ that bless must never touch.
fn victim(t: &Path) -> PathBuf {
    let v = t.join("victim");
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(v.join("keep.txt"), "precious").unwrap();
    v
}

fn victim_intact(v: &Path) {
    assert_eq!(
        std::fs::read_to_string(v.join("keep.txt")).ok().as_deref(),
        Some("precious"),
        "the directory outside golden/ was touched"
    );
    assert_eq!(std::fs::read_dir(v).unwrap().count(), 1);
}

#[test]
fn a_hostile_scenario_name_never_lets_bless_leave_golden() {
    let t = tempfile::tempdir().unwrap();
    let good = good_run(t.path());
    let v = victim(t.path());
    let abs = v.display().to_string();
    for (i, name) in ["../victim", abs.as_str(), "a/b", ".", "..", ""]
        .iter()
        .enumerate()
    {
        let dir = t.path().join(format!("tampered{i}"));
        copy_tree(&good, &dir);
        edit_json(&dir.join("run.json"), |v| {
            v["scenario_name"] = (*name).into()
        });
        let golden = t.path().join(format!("golden{i}"));
        for force in [false, true] {
            let mut args = vec!["bless", s(&dir), "--golden", s(&golden)];
            if force {
                args.push("--force");
            }
            let r = ladder(&args);
            refused(&r, "run.json");
            assert!(r.stderr.contains("scenario_name"), "{}", r.all());
            victim_intact(&v);
            assert!(
                std::fs::read_dir(&golden).map_or(true, |d| d.count() == 0),
                "{name:?}: something was written under golden/"
            );
        }
        // compare reads the same run.json: refused too.
        refused(&ladder(&["compare", s(&good), s(&dir)]), "run.json");
    }
    // The untouched folder still blesses, into golden/rel and nowhere else.
    let golden = t.path().join("golden");
    let r = ladder(&["bless", s(&good), "--golden", s(&golden)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    assert!(golden.join("rel/run.json").is_file());
    victim_intact(&v);
}

#[test]
fn dot_names_are_refused_by_validate_and_run() {
    let t = tempfile::tempdir().unwrap();
    for name in [".", ".."] {
        let path = Sc::new("sim").write(t.path());
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("name: rel\n", &format!("name: \"{name}\"\n"));
        std::fs::write(&path, text).unwrap();
        let r = ladder(&["validate", s(&path)]);
        refused(&r, "name");
        let out = t.path().join("out");
        let r = ladder(&["run", s(&path), "--out", s(&out)]);
        refused(&r, "name");
        assert!(!out.exists(), "{name}: run created {}", out.display());
        // Nothing landed beside `out` either (out/.. is the temp dir itself).
        let stray: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with("20"))
            .collect();
        assert!(stray.is_empty(), "{stray:?}");
    }
}

#[test]
fn rung_files_must_be_the_writers_own_names_inside_the_folder() {
    let t = tempfile::tempdir().unwrap();
    let good = good_run(t.path());
    // Outside copies that parse perfectly: only the path checks can refuse them.
    let outside = t.path().join("outside");
    copy_tree(&good, &outside);
    let out_result = outside.join("result_rate_40.json");
    let out_requests = outside.join("requests_rate_40.jsonl");
    type Tamper = Box<dyn Fn(&Path)>;
    let (r1, r2) = (out_result.clone(), out_requests.clone());
    let r3 = out_result.clone();
    let cases: Vec<(&str, &str, Tamper)> = vec![
        (
            "relative escape",
            "run.json",
            Box::new(|d| {
                edit_json(&d.join("run.json"), |v| {
                    v["rungs"][1]["result_file"] = "../outside/result_rate_40.json".into()
                })
            }),
        ),
        (
            "/etc/passwd",
            "run.json",
            Box::new(|d| {
                edit_json(&d.join("run.json"), |v| {
                    v["rungs"][1]["result_file"] = "../../../../../../etc/passwd".into()
                })
            }),
        ),
        (
            "absolute path",
            "run.json",
            Box::new(move |d| {
                edit_json(&d.join("run.json"), |v| {
                    v["rungs"][1]["result_file"] = r1.display().to_string().into()
                })
            }),
        ),
        (
            "requests file escape",
            "run.json",
            Box::new(move |d| {
                edit_json(&d.join("run.json"), |v| {
                    v["rungs"][1]["requests_file"] = r2.display().to_string().into()
                })
            }),
        ),
        (
            "symlink out of the folder",
            "result_rate_40.json",
            Box::new(move |d| {
                let p = d.join("result_rate_40.json");
                std::fs::remove_file(&p).unwrap();
                std::os::unix::fs::symlink(&r3, &p).unwrap();
            }),
        ),
    ];
    for (i, (what, file, tamper)) in cases.iter().enumerate() {
        let dir = t.path().join(format!("cand{i}"));
        copy_tree(&good, &dir);
        tamper(&dir);
        let r = ladder(&["compare", s(&good), s(&dir)]);
        refused(&r, file);
        assert!(
            r.stderr.contains("ladder names that file") || r.stderr.contains("outside"),
            "{what}: {}",
            r.all()
        );
        let golden = t.path().join(format!("golden{i}"));
        refused(&ladder(&["bless", s(&dir), "--golden", s(&golden)]), file);
        assert!(!golden.join("rel").exists(), "{what}");
        let r = ladder(&["report", s(&dir)]);
        refused(&r, file);
    }
    // bless copies regular files only: a symlink anywhere in the folder is named and refused.
    let dir = t.path().join("linked");
    copy_tree(&good, &dir);
    std::os::unix::fs::symlink(t.path().join("victim-file"), dir.join("notes.txt")).unwrap();
    let golden = t.path().join("golden-linked");
    let r = ladder(&["bless", s(&dir), "--golden", s(&golden)]);
    refused(&r, "notes.txt");
    assert!(r.stderr.contains("symlink"), "{}", r.all());
    assert!(!golden.join("rel").exists());
    assert_eq!(
        std::fs::read_dir(&golden).unwrap().count(),
        0,
        "temp copy left"
    );
}

/// Start a run with a long cooldown, wait until its first rung is listed, SIGKILL it.
fn killed_run(t: &Path) -> PathBuf {
    let mut sc = Sc::new("sim");
    sc.cooldown = "120s";
    let path = sc.write(t);
    let out = t.join("killed");
    let live = spawn(ladder_cmd(&["run", s(&path), "--out", s(&out)]));
    let end = Instant::now() + LIMIT;
    loop {
        let listed = run_dir(&out)
            .and_then(|d| std::fs::read(d.join("run.json")).ok())
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| v["rungs"].as_array().is_some_and(|r| r.len() == 1));
        if listed {
            break;
        }
        assert!(Instant::now() < end, "the first rung never finished");
        thread::sleep(Duration::from_millis(100));
    }
    live.signal("KILL");
    live.finish(Duration::from_secs(30));
    let dir = run_dir(&out).unwrap();
    let v: Value = serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(v["status"], "running");
    dir
}

#[test]
fn a_folder_still_running_is_refused_by_compare_gate_and_bless() {
    let t = tempfile::tempdir().unwrap();
    let good = good_run(t.path());
    let killed = killed_run(t.path());
    // A second variant: a finished folder whose status was edited back to `running`.
    let edited = t.path().join("edited");
    copy_tree(&good, &edited);
    edit_json(&edited.join("run.json"), |v| v["status"] = "running".into());
    for dir in [&killed, &edited] {
        for (a, b) in [(&good, dir), (dir, &good)] {
            let r = ladder(&["compare", s(a), s(b)]);
            refused(&r, "run.json");
            assert!(r.stderr.contains("never finished"), "{}", r.all());
        }
        let golden = t.path().join("golden-running");
        for force in [false, true] {
            let mut args = vec!["bless", s(dir), "--golden", s(&golden)];
            if force {
                args.push("--force");
            }
            let r = ladder(&args);
            refused(&r, "never finished");
            assert!(!golden.join("rel").exists());
        }
    }
    // gate against a golden baseline that is a running folder.
    let golden = t.path().join("golden");
    copy_tree(&killed, &golden.join("rel"));
    let sc = Sc::new("sim").write(t.path());
    let r = ladder(&[
        "gate",
        s(&sc),
        "--golden",
        s(&golden),
        "--out",
        s(&t.path().join("gated")),
    ]);
    refused(&r, "never finished");
}

/// Run with a cooldown long enough to plant `obstacle` (a non-empty directory) where the
/// second rung's file goes; the write fails after the folder exists.
fn run_failing_at(t: &Path, obstacle: &str) -> (Ran, PathBuf) {
    let mut sc = Sc::new("sim");
    sc.cooldown = "3s";
    let path = sc.write(t);
    let out = t.join(format!("out-{obstacle}"));
    let live = spawn(ladder_cmd(&["run", s(&path), "--out", s(&out)]));
    let end = Instant::now() + LIMIT;
    let dir = loop {
        if let Some(d) = run_dir(&out) {
            if d.join("result_rate_20.json").is_file() {
                break d;
            }
        }
        assert!(Instant::now() < end, "the first rung never finished");
        thread::sleep(Duration::from_millis(20));
    };
    std::fs::create_dir_all(dir.join(obstacle).join("x")).unwrap();
    let r = live.finish(LIMIT);
    no_panic(&r);
    (r, dir)
}

#[test]
fn a_write_error_after_the_folder_exists_marks_it_failed() {
    let t = tempfile::tempdir().unwrap();
    for obstacle in ["requests_rate_40.jsonl", "result_rate_40.json"] {
        let (r, dir) = run_failing_at(t.path(), obstacle);
        refused(&r, obstacle);
        assert!(r.stderr.contains("marked failed"), "{}", r.all());
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(v["status"], "failed", "{obstacle}");
        assert!(v["ended_at"].is_string());
        let detail = v["status_detail"].as_str().unwrap();
        assert!(detail.contains(obstacle), "{detail}");
        // The finished rung is kept and still loads, and gets its reports.
        let rd = ladder::results::ResultDir::open(&dir).unwrap();
        assert_eq!(rd.rungs.len(), 1);
        rd.requests(&rd.rungs[0]).unwrap();
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(md.contains("| 20 (baseline) | 3 |"), "{md}");
    }
}

#[test]
fn rates_that_would_share_a_rung_file_are_refused_before_any_load() {
    let t = tempfile::tempdir().unwrap();
    let path = Sc::new("sim").write(t.path());
    let out = t.path().join("out");
    for (rates, a, b) in [
        ("20,40", "load.baseline_rate 20", "--rates value 20"),
        (
            "1.0000001,1.0000002",
            "--rates value 1.0000001",
            "--rates value 1.0000002",
        ),
        ("20.0000001,40", "load.baseline_rate 20", "20.0000001"),
    ] {
        let r = ladder(&["run", s(&path), "--rates", rates, "--out", s(&out)]);
        refused(&r, a);
        assert!(r.stderr.contains(b), "{}", r.all());
        assert!(!out.exists(), "{rates}: a folder was created");
    }
    for (baseline, rates, named) in [
        ("0.5", "[1.0000001, 1.0000002]", ["1.0000001", "1.0000002"]),
        ("1.0000001", "[1.0000002, 5]", ["1.0000001", "1.0000002"]),
    ] {
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("baseline_rate: 20", &format!("baseline_rate: {baseline}"))
            .replace("rates: [40]", &format!("rates: {rates}"));
        let p = t.path().join("clash.yaml");
        std::fs::write(&p, text).unwrap();
        for args in [
            vec!["validate", s(&p)],
            vec!["run", s(&p), "--out", s(&out)],
        ] {
            let r = ladder(&args);
            refused(&r, "clash.yaml");
            for n in named {
                assert!(r.stderr.contains(n), "{n}: {}", r.all());
            }
        }
        assert!(!out.exists());
    }
}

#[test]
fn numbers_that_do_not_add_up_are_refused_never_passed() {
    let t = tempfile::tempdir().unwrap();
    let good = good_run(t.path());
    let same = t.path().join("same");
    copy_tree(&good, &same);
    let r = ladder(&["compare", s(&good), s(&same)]);
    // The untouched copy is read, not refused: too small a run to judge, so no verdict (2),
    // never an `error:`.
    assert!(!r.stderr.contains("error:"), "{}", r.all());
    assert!(
        r.status.code() == Some(0)
            || (r.status.code() == Some(2) && r.stdout.contains("NO VERDICT")),
        "{}",
        r.all()
    );

    type Tamper = fn(&Path);
    let req = "requests_rate_40.jsonl";
    let cases: Vec<(&str, &str, Tamper)> = vec![
        ("empty", req, |d| {
            std::fs::write(d.join("requests_rate_40.jsonl"), "").unwrap()
        }),
        ("holds 2 measured", req, |d| {
            edit_lines(&d.join("requests_rate_40.jsonl"), |l| {
                l.pop();
            })
        }),
        ("holds 2 successful", req, |d| {
            edit_lines(&d.join("requests_rate_40.jsonl"), |l| {
                l[0]["ok"] = false.into();
                l[0]["error_class"] = "server_5xx".into();
                // A failure has no TPOT (the line's own check would refuse it first).
                l[0]["tpot_ms"] = Value::Null;
            })
        }),
        ("never negative", req, |d| {
            edit_lines(&d.join("requests_rate_40.jsonl"), |l| {
                l[1]["ttft_ms"] = (-5.0).into()
            })
        }),
        ("longer than e2e_ms", req, |d| {
            edit_lines(&d.join("requests_rate_40.jsonl"), |l| {
                let e2e = l[1]["e2e_ms"].as_f64().unwrap();
                let sent = l[1]["sent_ms"].as_f64().unwrap();
                l[1]["ttft_ms"] = (e2e + 500.0).into();
                l[1]["first_token_ms"] = (sent + e2e + 500.0).into();
            })
        }),
        ("e2e_ms", req, |d| {
            edit_lines(&d.join("requests_rate_40.jsonl"), |l| {
                let e2e = l[2]["e2e_ms"].as_f64().unwrap();
                l[2]["e2e_ms"] = (e2e + 3_600_000.0).into();
            })
        }),
        ("faster lines", req, |d| {
            // Every line made twice as fast, consistently: the summary no longer matches.
            edit_lines(&d.join("requests_rate_40.jsonl"), |l| {
                for x in l.iter_mut() {
                    let sent = x["sent_ms"].as_f64().unwrap();
                    for k in ["ttft_ms", "e2e_ms", "tpot_ms"] {
                        x[k] = (x[k].as_f64().unwrap() / 2.0).into();
                    }
                    x["first_token_ms"] = (sent + x["ttft_ms"].as_f64().unwrap()).into();
                    x["end_ms"] = (sent + x["e2e_ms"].as_f64().unwrap()).into();
                }
            })
        }),
        ("listed twice", "run.json", |d| {
            edit_json(&d.join("run.json"), |v| {
                let r = v["rungs"][1].clone();
                v["rungs"].as_array_mut().unwrap().push(r);
            })
        }),
        ("summary is for rate 41", "result_rate_40.json", |d| {
            edit_json(&d.join("result_rate_40.json"), |v| v["rate"] = 41.0.into())
        }),
        ("median of ttft", "result_rate_40.json", |d| {
            edit_json(&d.join("result_rate_40.json"), |v| {
                v["median_ttft_ms"] = (v["median_ttft_ms"].as_f64().unwrap() / 2.0).into()
            })
        }),
        ("never negative", "result_rate_40.json", |d| {
            edit_json(&d.join("result_rate_40.json"), |v| {
                v["request_throughput"] = (-1.0).into()
            })
        }),
        // Counts that add up only by wrapping past u64::MAX (found by tests/fuzz_results.rs).
        ("is not num_prompts", "result_rate_40.json", |d| {
            edit_json(&d.join("result_rate_40.json"), |v| {
                v["completed"] = u64::MAX.into();
                v["failed"] = 1.into();
                v["num_prompts"] = 0.into();
            })
        }),
    ];
    for (i, (what, file, tamper)) in cases.iter().enumerate() {
        let dir = t.path().join(format!("cand{i}"));
        copy_tree(&good, &dir);
        tamper(&dir);
        for (a, b) in [(&good, &dir), (&dir, &good)] {
            let r = ladder(&["compare", s(a), s(b)]);
            refused(&r, file);
            if *what != "faster lines" {
                assert!(r.stderr.contains(what), "{what}: {}", r.all());
            }
        }
        let golden = t.path().join(format!("golden{i}"));
        refused(&ladder(&["bless", s(&dir), "--golden", s(&golden)]), file);
        assert!(!golden.join("rel").exists(), "{what}");
    }
}
