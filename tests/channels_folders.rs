mod support;
use support::*;

// Folders from elsewhere (issue 32, "a property test per channel"): result folders a
// colleague hands over, golden folders read by `gate`, `compare` and `bless --add`, shard
// folders read by `merge`. Real folders from the simulator are edited, seeded: names, model
// ids, the server's identity, warnings and reasons given markup, line breaks, control
// sequences, paths and 10,000 characters; counts and times (of summaries and of request
// lines) given absurd numbers (negative, 1e308, u64::MAX, NaN). Every command either refuses (exit 2, `error:`) or exits 0/1 with
// outputs that parse back: Markdown inert, HTML and JUnit without a tag from the input, no
// control sequence on the terminal, the key of the environment nowhere, merged folders that
// ladder itself reads. Then the gate end to end on a sample too small to judge and on an
// outage. All traffic stays on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// Hostile text: each piece aims at one output format.
const HOSTILE: [&str; 7] = [
    "![x](http://evil.example/i.png) <img src=x onerror=alert(1)> <script>alert(2)</script> \
     ``` `x` [l](http://evil.example) | *b* </testcase><failure>",
    "ok\u{1b}[2J\u{1b}]0;owned\u{7}\u{8}\u{0}end",
    "line1\nline2\r\n# heading\u{2028}x",
    "../../../../tmp/ladder-escape",
    "a|b`c``d\\",
    "]]><!-- &amp; &#x1b; <x/>",
    "",
];

/// What must never come out of ladder from [`HOSTILE`] unescaped, in any format.
const RAW: [&str; 6] = [
    "<img src=x",
    "<script>alert",
    "</testcase><failure>",
    "<x/>",
    "<!-- &amp;",
    "](http://evil.example",
];

fn long() -> String {
    "L".repeat(10_000)
}

/// A hostile string for case `rng`.
fn hostile(rng: &mut ChaCha8Rng) -> String {
    match rng.gen_range(0..=HOSTILE.len()) {
        i if i == HOSTILE.len() => long(),
        i => HOSTILE[i].to_string(),
    }
}

/// An absurd number (or NaN, written as the bare token JSON has not got).
fn absurd(rng: &mut ChaCha8Rng) -> Value {
    match rng.gen_range(0..6) {
        0 => Value::from(-1),
        1 => serde_json::json!(1e308),
        2 => serde_json::json!(-1e308),
        3 => Value::from(u64::MAX),
        4 => Value::from(-0.5),
        _ => Value::String("NaN-PLACEHOLDER".into()),
    }
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// `v` written to `p`, the NaN placeholder as a bare `NaN`.
fn write_json(p: &Path, v: &Value) {
    let text = serde_json::to_string_pretty(v)
        .unwrap()
        .replace("\"NaN-PLACEHOLDER\"", "NaN");
    std::fs::write(p, text).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// One to three edits of `dir` (a result folder): strings of run.json, numbers of a rung
/// summary. Returns what was done, for the failure message.
fn edit(dir: &Path, rng: &mut ChaCha8Rng) -> Vec<String> {
    let mut done = Vec::new();
    let run = dir.join("run.json");
    let mut info = read_json(&run);
    let rungs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("result_rate_") && n.ends_with(".json")
        })
        .collect();
    for _ in 0..rng.gen_range(1..=3) {
        match rng.gen_range(0..11) {
            0 => info["scenario"]["model"] = hostile(rng).into(),
            1 => info["scenario"]["description"] = hostile(rng).into(),
            2 => info["scenario"]["name"] = hostile(rng).into(),
            3 => info["scenario_name"] = hostile(rng).into(),
            4 => {
                info["server"] = serde_json::json!({
                    "engine": hostile(rng), "source": hostile(rng),
                    "version": hostile(rng), "model": hostile(rng),
                })
            }
            5 => info["warnings"]
                .as_array_mut()
                .unwrap()
                .push(hostile(rng).into()),
            6 => info["status_detail"] = hostile(rng).into(),
            7 => info["endpoint"] = hostile(rng).into(),
            8 => info["scenario"]["workload"]["dataset"] = hostile(rng).into(),
            // A request line's times (the report's distributions and time series read them).
            9 => {
                let p = &rungs[rng.gen_range(0..rungs.len())];
                let lines = p.with_file_name(
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .replace("result_rate_", "requests_rate_")
                        .replace(".json", ".jsonl"),
                );
                let text = std::fs::read_to_string(&lines).unwrap();
                let mut all: Vec<String> = text.lines().map(str::to_string).collect();
                let i = rng.gen_range(0..all.len());
                let mut l: Value = serde_json::from_str(&all[i]).unwrap();
                let k = [
                    "sent_ms",
                    "end_ms",
                    "ttft_ms",
                    "scheduled_ms",
                    "first_token_ms",
                ][rng.gen_range(0..5)];
                l[k] = absurd(rng);
                all[i] = serde_json::to_string(&l)
                    .unwrap()
                    .replace("\"NaN-PLACEHOLDER\"", "NaN");
                std::fs::write(&lines, all.join("\n") + "\n").unwrap();
                done.push(format!("{} line {i} {k} = {}", lines.display(), l[k]));
                continue;
            }
            _ => {
                let p = &rungs[rng.gen_range(0..rungs.len())];
                let mut s = read_json(p);
                let keys = [
                    "num_prompts",
                    "completed",
                    "failed",
                    "median_ttft_ms",
                    "request_throughput",
                    "duration_s",
                    "p99_ttft_ms",
                ];
                let k = keys[rng.gen_range(0..keys.len())];
                if s.get(k).is_some() {
                    s[k] = absurd(rng);
                    done.push(format!("{} {k} = {}", p.display(), s[k]));
                    write_json(p, &s);
                }
                continue;
            }
        }
        done.push("a string of run.json".to_string());
    }
    write_json(&run, &info);
    done
}

/// The command's output: no panic, an exit of 0, 1 or 2 (2 with `error:`), no control
/// sequence and no key on the terminal.
fn judge(what: &str, r: &Ran) -> i32 {
    no_panic(r);
    let code = r.status.code().unwrap_or(-1);
    assert!((0..=2).contains(&code), "{what}: exit {code}\n{}", r.all());
    if code == 2 {
        // A refusal says so; a comparison that judged nothing says that instead.
        assert!(
            r.stderr.contains("error") || r.stdout.contains("NO VERDICT"),
            "{what}: {}",
            r.all()
        );
    }
    let all = r.all();
    assert!(!all.contains(KEY), "{what}: the key was printed");
    for c in ['\u{1b}', '\u{7}', '\u{0}', '\u{8}'] {
        assert!(
            !all.contains(c),
            "{what}: {c:?} reached the terminal:\n{all}"
        );
    }
    code
}

/// Every file `ladder` wrote under `dir`, parsed back by its format.
fn outputs_parse(what: &str, dir: &Path) {
    if !dir.exists() {
        return;
    }
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            outputs_parse(what, &p);
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        assert!(!text.contains(KEY), "{what}: the key in {name}");
        let at = format!("{what}: {}", p.display());
        if name.ends_with(".md") {
            md_inert(&at, &text);
        } else if name.ends_with(".html") || name.ends_with(".xml") || name.ends_with(".svg") {
            for raw in RAW.iter().filter(|r| r.starts_with('<')) {
                assert!(!text.contains(raw), "{at}: {raw:?} unescaped");
            }
            if name.ends_with(".xml") {
                assert!(
                    !text
                        .chars()
                        .any(|c| (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r')),
                    "{at}: a character XML cannot hold"
                );
            }
        }
    }
}

/// `raw` occurs in `text` only escaped (a backslash before it).
fn only_escaped(text: &str, raw: &str) -> bool {
    text.match_indices(raw)
        .all(|(i, _)| i > 0 && text.as_bytes()[i - 1] == b'\\')
}

/// Markdown inert, and no line of the input's own (a heading or line break carried over).
fn md_inert(at: &str, md: &str) {
    assert_markdown_inert(at, md);
    // Inside a fenced block a line is literal; outside, a line of the input's own is markup.
    for line in outside_fences(md).lines() {
        let l = line.trim_start();
        assert!(
            !l.starts_with("# heading") && !l.starts_with("line2"),
            "{at}: a line break from the input:\n{md}"
        );
    }
    let plain = outside_code_spans(&outside_fences(md));
    for raw in RAW {
        assert!(
            only_escaped(&plain, raw),
            "{at}: {raw:?} outside a code span:\n{md}"
        );
    }
}

fn ladder_run(args: &[&str]) -> Ran {
    spawn(ladder_cmd(args)).finish(Duration::from_secs(120))
}

/// The folder of the single run under `out/rel/`.
fn one_run(sc: &Path, out: &Path) -> PathBuf {
    let r = ladder_run(&[
        "run",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    run_dir(out).expect("a run folder")
}

/// Two shard folders of one sharded run against the simulator.
fn shard_run(sc: &Path, out: &Path) -> Vec<PathBuf> {
    let at = format!("@{}", chrono::Utc::now().timestamp() + 4);
    let live: Vec<Live> = (0..2)
        .map(|i| {
            spawn(ladder_cmd(&[
                "run",
                sc.to_str().unwrap(),
                "--shard",
                &format!("{i}/2"),
                "--start-at",
                &at,
                "--drain",
                "1s",
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ]))
        })
        .collect();
    for l in live {
        let r = l.finish(Duration::from_secs(90));
        assert_eq!(r.status.code(), Some(0), "{}", r.all());
    }
    let parent = std::fs::read_dir(out.join("rel.shards"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut v: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert_eq!(v.len(), 2, "{v:?}");
    v
}

fn sim_scenario(dir: &Path, n: u32) -> PathBuf {
    let mut sc = Sc::new("sim");
    sc.key = true;
    sc.n = n;
    sc.write(dir)
}

/// Seeded edits of real folders through compare, report (one folder and an overlay), bless
/// and bless --add, gate (the edited folder as the golden baseline) and merge (edited
/// shards); `LADDER_FUZZ_ITERS` cases (default 10).
#[test]
fn hostile_result_golden_and_shard_folders_are_refused_or_give_outputs_that_parse() {
    let iters: usize = std::env::var("LADDER_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let sc = sim_scenario(root, 20);
    let base = one_run(&sc, &root.join("b"));
    let cand = one_run(&sc, &root.join("c"));
    let shards = shard_run(&sc, &root.join("s"));
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_f032);
    let mut codes = std::collections::BTreeMap::<(&str, i32), usize>::new();
    let mut written = 0;
    for case in 0..iters {
        let dir = root.join(format!("case{case}"));
        let (b, c) = (dir.join("base"), dir.join("cand"));
        copy_dir(&base, &b);
        copy_dir(&cand, &c);
        let mut edits = Vec::new();
        match rng.gen_range(0..3) {
            0 => edits.extend(edit(&b, &mut rng)),
            1 => edits.extend(edit(&c, &mut rng)),
            _ => {
                edits.extend(edit(&b, &mut rng));
                edits.extend(edit(&c, &mut rng));
            }
        }
        let what = |cmd: &str| format!("case {case} ({edits:?}): {cmd}");
        let s = |p: &Path| p.to_str().unwrap().to_string();

        let md = dir.join("out/compare.md");
        let xml = dir.join("out/compare.xml");
        std::fs::create_dir_all(dir.join("out")).unwrap();
        let r = ladder_run(&[
            "compare",
            &s(&b),
            &s(&c),
            // No assumed drift: two runs of one configuration get verdicts, not NO VERDICT.
            "--drift",
            "0",
            "--summary",
            &s(&md),
            "--junit",
            &s(&xml),
        ]);
        *codes
            .entry(("compare", judge(&what("compare"), &r)))
            .or_default() += 1;
        written += usize::from(md.is_file() && xml.is_file());

        let r = ladder_run(&["report", &s(&c), "--out", &s(&dir.join("out/report"))]);
        *codes
            .entry(("report", judge(&what("report"), &r)))
            .or_default() += 1;
        let r = ladder_run(&[
            "report",
            &s(&b),
            &s(&c),
            "--out",
            &s(&dir.join("out/overlay")),
        ]);
        judge(&what("report overlay"), &r);

        // bless, then bless --add: nothing written outside the golden root.
        let golden = dir.join("golden");
        let r = ladder_run(&["bless", &s(&b), "--golden", &s(&golden)]);
        let blessed = judge(&what("bless"), &r);
        *codes.entry(("bless", blessed)).or_default() += 1;
        let r = ladder_run(&["bless", &s(&c), "--golden", &s(&golden), "--add"]);
        *codes
            .entry(("bless --add", judge(&what("bless --add"), &r)))
            .or_default() += 1;
        let mut inside: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        inside.sort();
        assert!(
            inside
                .iter()
                .all(|n| ["base", "cand", "golden", "out"].contains(&n.as_str())),
            "{}: {inside:?}",
            what("bless")
        );
        assert!(!Path::new("/tmp/ladder-escape").exists());

        // The gate reads the edited folder as golden/rel (as a colleague's copy), every
        // third case (each runs the simulator).
        if case % 3 == 0 {
            let g = dir.join("gate-golden");
            copy_dir(&b, &g.join("rel"));
            let r = ladder_run(&[
                "gate",
                &s(&sc),
                "--golden",
                &s(&g),
                "--out",
                &s(&dir.join("gate-results")),
                "--summary",
                &s(&dir.join("out/gate.md")),
                "--junit",
                &s(&dir.join("out/gate.xml")),
            ]);
            *codes.entry(("gate", judge(&what("gate"), &r))).or_default() += 1;
        }

        // Shards, both edited alike or one alone, merged.
        let (s0, s1) = (dir.join("shard-0-of-2"), dir.join("shard-1-of-2"));
        copy_dir(&shards[0], &s0);
        copy_dir(&shards[1], &s1);
        let mut sub = ChaCha8Rng::seed_from_u64(rng.gen());
        let shard_edits = edit(&s0, &mut sub);
        if rng.gen_bool(0.5) {
            // The same string edits in the other shard, so the shards' run.json agree.
            let mut info1 = read_json(&s1.join("run.json"));
            let info0 = read_json(&s0.join("run.json"));
            for k in [
                "scenario",
                "scenario_name",
                "server",
                "endpoint",
                "warnings",
            ] {
                info1[k] = info0[k].clone();
            }
            write_json(&s1.join("run.json"), &info1);
        }
        let merged = dir.join("merged");
        let wm = format!("case {case} ({shard_edits:?}): merge");
        let r = ladder_run(&["merge", &s(&s0), &s(&s1), "--out", &s(&merged)]);
        let code = judge(&wm, &r);
        *codes.entry(("merge", code)).or_default() += 1;
        if code == 0 {
            // What merge wrote, ladder reads: every file parses, the folder loads.
            check_folder(&merged);
            let r = ladder_run(&["report", &s(&merged), "--out", &s(&dir.join("out/merged"))]);
            assert_eq!(judge(&wm, &r), 0, "{wm}: report of the merged folder");
        }
        for d in [&dir.join("out"), &golden, &merged] {
            outputs_parse(&what("outputs"), d);
        }
    }
    eprintln!("exit codes by command: {codes:?}; compare wrote its outputs {written} times");
    assert!(written > 0, "no comparison reached its outputs: {codes:?}");
    // The cases reached both sides of the readers without a verdict: some refused, some read.
    for cmd in ["report", "merge"] {
        assert!(
            codes.contains_key(&(cmd, 2)),
            "{cmd} never refused a case: {codes:?}"
        );
        assert!(
            codes.iter().any(|((c, k), _)| *c == cmd && *k != 2),
            "{cmd} refused every case: {codes:?}"
        );
    }
}

/// The gate end to end on a golden of 4 requests a rung (below what any check needs): an
/// unchanged rerun has no verdict, exit 2, in every output; never PASS.
#[test]
fn a_gate_on_a_golden_too_small_to_judge_has_no_verdict_never_pass() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let sc = sim_scenario(root, 4);
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let run = one_run(&sc, &root.join("results"));
    let golden = root.join("golden");
    let r = ladder_run(&["bless", &s(&run), "--golden", &s(&golden)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let (md, xml) = (root.join("gate.md"), root.join("gate.xml"));
    let r = ladder_run(&[
        "gate",
        &s(&sc),
        "--golden",
        &s(&golden),
        "--out",
        &s(&root.join("results")),
        "--summary",
        &s(&md),
        "--junit",
        &s(&xml),
    ]);
    assert_eq!(judge("gate", &r), 2, "{}", r.all());
    assert!(
        r.stdout.contains("NO VERDICT: nothing could be judged"),
        "{}",
        r.all()
    );
    assert!(
        !r.stdout.lines().any(|l| l.starts_with("PASS")),
        "{}",
        r.all()
    );
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("NO VERDICT: nothing could be judged"), "{md}");
    // No green mark on a gate that exits 2 (was: ✅).
    assert!(md.lines().next().is_some_and(|l| l.ends_with("⚠️")), "{md}");
    assert!(!md.contains('✅') && !md.contains("**PASS"), "{md}");
    md_inert("gate.md", &md);
    let xml = std::fs::read_to_string(&xml).unwrap();
    assert!(xml.contains("<testsuite"), "{xml}");
}

/// The gate end to end against servers that fail, by the seed's rule that a client error is
/// not overload: nothing listening, and a 401 to the preflight probe, stop the gate before
/// any load (exit 2, the likely cause, no folder); a 401 to every request after preflight
/// passed is "requests rejected", the ladder stopped after a few (exit 2 naming the key,
/// the folder `failed`, never "overloaded", never a verdict); every request failing with
/// 500s and broken streams after preflight is an outage the error rate judges: a regression
/// (exit 1). The key the server echoes is in no output.
#[test]
fn a_gate_against_a_server_that_is_down_rejects_everything_or_fails_everything() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let scenario = |dir: &Path, url: String| {
        std::fs::create_dir_all(dir).unwrap();
        let mut sc = Sc::new(url);
        sc.key = true;
        sc.n = 30;
        sc.write(dir)
    };
    // The golden: 30 requests a rung, every one answered.
    let good = fault_server(Fault::None, 0);
    let run = one_run(
        &scenario(&root.join("good"), good.url()),
        &root.join("results"),
    );
    let golden = root.join("golden");
    let r = ladder_run(&["bless", &s(&run), "--golden", &s(&golden)]);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let gate = |sc: &Path, tag: &str| {
        let out = root.join(format!("gate-{tag}"));
        let r = ladder_run(&[
            "gate",
            &s(sc),
            "--golden",
            &s(&golden),
            "--out",
            &s(&out),
            "--summary",
            &s(&root.join(format!("{tag}.md"))),
            "--junit",
            &s(&root.join(format!("{tag}.xml"))),
        ]);
        (judge(tag, &r), r, out)
    };
    let no_verdict_line = |r: &Ran| {
        !r.stdout
            .lines()
            .any(|l| l.starts_with("PASS") || l.starts_with("FAIL") || l.starts_with("NO VERDICT"))
    };

    // Nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = scenario(&root.join("down"), format!("http://127.0.0.1:{port}"));
    let (code, r, out) = gate(&down, "down");
    assert_eq!(code, 2, "{}", r.all());
    assert!(
        r.stderr.contains("preflight") && r.stderr.contains("is it up?"),
        "{}",
        r.stderr
    );
    assert!(run_dir(&out).is_none());
    assert!(no_verdict_line(&r), "{}", r.all());

    // 401 to everything, the key echoed in every encoding: stopped at the preflight probe.
    let deny = fault_server(Fault::EchoEncoded401, 0);
    let (code, r, out) = gate(&scenario(&root.join("deny"), deny.url()), "deny");
    assert_eq!(code, 2, "{}", r.all());
    assert!(
        r.stderr.contains("401") && r.stderr.contains(&format!("${KEY_VAR}")),
        "{}",
        r.stderr
    );
    assert!(run_dir(&out).is_none());
    assert_eq!(deny.posts.load(std::sync::atomic::Ordering::SeqCst), 1);

    // Preflight passes, then every request is rejected with 401, the key echoed: rejected,
    // not overloaded, and no verdict from it.
    let reject = fault_server(Fault::ModelsEchoKey401, PROBES);
    let (code, r, out) = gate(&scenario(&root.join("reject"), reject.url()), "reject");
    assert_eq!(code, 2, "{}", r.all());
    assert!(
        r.stderr.contains("requests in a row the same way")
            && r.stderr.contains("a client error, not overload")
            && r.stderr.contains("check endpoint.api_key_env"),
        "{}",
        r.stderr
    );
    // Never called overloaded ("it is not overloaded" may be said).
    assert!(
        !r.all().contains(": overloaded") && !r.all().contains("overloaded:"),
        "{}",
        r.all()
    );
    assert!(no_verdict_line(&r), "{}", r.all());
    let fresh = run_dir(&out).expect("the stopped run's folder");
    let rd = check_folder(&fresh);
    assert_eq!(rd.info.status, ladder::results::RunStatus::Failed);
    assert!(
        rd.info
            .status_detail
            .as_deref()
            .is_some_and(|d| d.contains("a client error, not overload")),
        "{:?}",
        rd.info.status_detail
    );
    assert!(!all_text_under(&fresh).contains(KEY));

    // Preflight passes, then every request fails (500s echoing the key, broken streams): an
    // outage the error rate judges, exit 1.
    let outage = fault_server(Fault::EchoKey, PROBES);
    let (code, r, out) = gate(&scenario(&root.join("outage"), outage.url()), "outage");
    assert_eq!(code, 1, "{}", r.all());
    assert!(
        r.stdout.lines().any(|l| l.starts_with("FAIL")),
        "{}",
        r.all()
    );
    // Judged by the error rate; the latencies are not a number made up from no success.
    assert!(
        r.stdout
            .lines()
            .any(|l| l.contains("error_rate") && l.contains("REGRESSION")),
        "{}",
        r.all()
    );
    assert!(
        r.stdout
            .contains("no successes: all 30 candidate requests failed")
            || r.stdout.contains("past saturation"),
        "{}",
        r.all()
    );
    assert!(!r.stdout.contains("NaN"), "{}", r.all());
    assert!(!r.all().contains("overloaded:"), "{}", r.all());
    let fresh = run_dir(&out).expect("the outage's folder");
    let rd = check_folder(&fresh);
    assert!(rd.rungs.iter().all(|g| g.summary.completed == 0));
    assert!(!all_text_under(&fresh).contains(KEY));
    for tag in ["outage.md", "outage.xml"] {
        let text = std::fs::read_to_string(root.join(tag)).unwrap();
        assert!(!text.contains(KEY), "{tag}");
        assert!(text.contains("error_rate"), "{tag}: {text}");
    }
    md_inert(
        "outage.md",
        &std::fs::read_to_string(root.join("outage.md")).unwrap(),
    );
}
