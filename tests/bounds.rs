//! Issue 32, "Bounded, always" and "Server values and robustness": every file goes through one
//! bounded reader, replays and waits are bounded, server values are sanitised, a closed pipe
//! is not a crash (RELIABILITY.md, "Bounds and server values").
mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A small valid scenario against the simulator, with `extra` appended (YAML lines).
fn scenario(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  request_timeout: 5s\nmodel: m\n\
         tokenizer: {TOKENIZER}\nworkload:\n  input_tokens: 16\n  output_tokens: 4\n  \
         requests_per_rung: 3\n  seed: 0\nload:\n  baseline_rate: 50\n  rates: [100]\n  \
         cooldown: 0s\n{extra}"
    );
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn validate(p: &Path) -> Ran {
    spawn(ladder_cmd(&["validate", p.to_str().unwrap()])).finish(Duration::from_secs(60))
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo");
}

/// `/dev/zero` reports a size of 0 and never ends; a FIFO blocks whoever opens it. As the
/// scenario, an `extends:` base, a trace, a dataset or a tokenizer, each is refused at once,
/// naming the file and what it is (was: gigabytes read, or `validate` hung forever).
#[test]
fn devices_and_fifos_are_refused_on_every_file_channel() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("base.fifo");
    mkfifo(&fifo);
    let fifo_s = fifo.to_str().unwrap();
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        ("scenario", PathBuf::from("/dev/zero"), "character device"),
        (
            "extends base",
            scenario(dir.path(), "a.yaml", "extends: /dev/zero\n"),
            "character device",
        ),
        (
            "extends FIFO",
            scenario(dir.path(), "b.yaml", &format!("extends: {fifo_s}\n")),
            "FIFO",
        ),
        (
            "trace",
            trace_at(dir.path(), "c.yaml", Path::new("/dev/zero"), "[1]"),
            "character device",
        ),
        (
            "dataset",
            {
                let p = dir.path().join("d.yaml");
                let t = std::fs::read_to_string(scenario(dir.path(), "d.yaml", ""))
                    .unwrap()
                    .replace(
                        "workload:\n",
                        &format!("workload:\n  dataset: jsonl\n  path: {fifo_s}\n"),
                    );
                std::fs::write(&p, t).unwrap();
                p
            },
            "FIFO",
        ),
        (
            "tokenizer",
            {
                let p = dir.path().join("e.yaml");
                let t = std::fs::read_to_string(scenario(dir.path(), "e.yaml", ""))
                    .unwrap()
                    .replace(TOKENIZER, "/dev/zero");
                std::fs::write(&p, t).unwrap();
                p
            },
            "character device",
        ),
    ];
    for (what, p, says) in cases {
        let t0 = Instant::now();
        let v = validate(&p);
        no_panic(&v);
        assert_eq!(v.status.code(), Some(2), "{what}: {}", v.all());
        assert!(
            v.stderr.contains(says) && v.stderr.contains("not a regular file"),
            "{what}: want `{says}` in:\n{}",
            v.stderr
        );
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{what}: took {:?}",
            t0.elapsed()
        );
    }
}

/// A trace scenario replaying `lines` at `speed`.
fn trace_scenario(dir: &Path, name: &str, lines: &str, speed: &str) -> PathBuf {
    let tr = dir.join(format!("{name}.jsonl"));
    std::fs::write(&tr, lines).unwrap();
    trace_at(dir, name, &tr, speed)
}

/// A scenario replaying the trace at `trace`.
fn trace_at(dir: &Path, name: &str, trace: &Path, speed: &str) -> PathBuf {
    let p = dir.join(name);
    let t = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  request_timeout: 5s\nmodel: m\n\
         tokenizer: {TOKENIZER}\nworkload:\n  seed: 0\nload:\n  warmup_requests: 0\n  \
         cooldown: 0s\n  trace:\n    path: {}\n    speed: {speed}\n",
        trace.display()
    );
    std::fs::write(&p, t).unwrap();
    p
}

/// Timestamps 0 and 1e15 ms (or 1e308) are a replay of 31 700 years: refused like a
/// `load.duration` past its limit, at `load.trace.path`, with the replay's length (was:
/// validated, and the run waited "forever"). A replay within the limit says how long it takes.
#[test]
fn a_trace_span_past_the_limit_is_refused_and_a_valid_one_states_its_length() {
    let dir = tempfile::tempdir().unwrap();
    for (name, last) in [("far.yaml", "1e15"), ("farther.yaml", "1e308")] {
        let lines = format!(
            "{{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 2}}\n\
             {{\"timestamp\": 1, \"input_length\": 8, \"output_length\": 2}}\n\
             {{\"timestamp\": {last}, \"input_length\": 8, \"output_length\": 2}}\n"
        );
        let p = trace_scenario(dir.path(), name, &lines, "[1, 2]");
        let v = validate(&p);
        no_panic(&v);
        assert_eq!(v.status.code(), Some(2), "{name}: {}", v.all());
        assert!(
            v.stderr.contains("load.trace.path")
                && v.stderr.contains("replayed at speed 1 that takes")
                && v.stderr.contains("more than the limit of 7days"),
            "{name}: {}",
            v.stderr
        );
    }
    let lines = "{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 2}\n\
                 {\"timestamp\": 500, \"input_length\": 8, \"output_length\": 2}\n\
                 {\"timestamp\": 90000, \"input_length\": 8, \"output_length\": 2}\n";
    let p = trace_scenario(dir.path(), "ok.yaml", lines, "[1, 2]");
    let v = validate(&p);
    assert_eq!(v.status.code(), Some(0), "{}", v.all());
    assert!(
        v.stderr
            .contains("note: the replay of 3 trace lines takes 1m 30s at speed 1, 45s at speed 2"),
        "{}",
        v.stderr
    );
}

/// A loopback server answering every request with `page` as a Prometheus metrics page.
fn metrics_server(page: &'static str) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = read_head(&mut s);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{page}",
                    page.len()
                );
            });
        }
    });
    url
}

/// A `/metrics` page with a negative gauge, a 1e308 gauge, a NaN and an +Inf: the run
/// completes, warns once naming what was dropped, and writes a folder ladder itself reads
/// (was: exit 0, then every reader refused the folder as "edited or damaged"). NaN and +Inf
/// are both "no value": the key is absent, never 0.0.
#[test]
fn absurd_server_metric_values_are_dropped_with_a_warning_and_the_folder_stays_usable() {
    let url = metrics_server(
        "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting -3\n\
         # TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1e308\n\
         # TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc NaN\n\
         # TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total +Inf\n\
         # TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total 12\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let p = scenario(
        dir.path(),
        "m.yaml",
        &format!("server_metrics:\n  url: {url}\n  interval: 100ms\n"),
    );
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(120));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let warnings: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("gave values that are not values"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", r.stderr);
    assert!(
        warnings[0].contains("first: vllm:num_requests_waiting = -3"),
        "{}",
        warnings[0]
    );
    let run = run_dir(&out).expect("a folder");
    let rd = check_folder(&run);
    for rung in &rd.rungs {
        let s = &rung.summary.server;
        for k in [
            "server_max_waiting",
            "server_max_running",
            "server_max_kv_usage",
        ] {
            assert_eq!(s.get(k), None, "{k} in rung {}", rung.summary.rate);
        }
        assert_eq!(s.get("server_preemptions"), None);
        assert!(s.get("server_scrapes").is_some_and(|n| n >= 1.0));
    }
    // Every reader takes the folder: the report is written.
    let rep = spawn(ladder_cmd(&["report", run.to_str().unwrap()])).finish(Duration::from_secs(60));
    assert_eq!(rep.status.code(), Some(0), "{}", rep.all());
}

/// A pipe whose read end is already closed: every write to the other end fails with EPIPE.
fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe() fills two new descriptors; each is owned exactly once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fds[0] is a fresh descriptor owned here; dropping it closes the read end.
    drop(unsafe { std::os::fd::OwnedFd::from_raw_fd(fds[0]) });
    // SAFETY: fds[1] is a fresh descriptor, handed to the child's Stdio.
    std::process::Stdio::from(unsafe { std::os::fd::OwnedFd::from_raw_fd(fds[1]) })
}

fn run_closed(args: &[&str]) -> std::process::ExitStatus {
    let mut c = std::process::Command::new(BIN);
    c.args(args)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(closed_pipe())
        .stderr(closed_pipe());
    let mut child = c.spawn().unwrap();
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("ladder {args:?} did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `ladder … 2>&1 | head` / `| grep -q`: stdout and stderr closed by the reader. Each command
/// keeps its own exit code (0 for a valid scenario and a completed run, whose folder is
/// written; 2 for an invalid one); was: a panic, exit 101.
#[test]
fn a_closed_stdout_and_stderr_keep_each_commands_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let good = scenario(dir.path(), "good.yaml", "");
    let bad = scenario(dir.path(), "bad.yaml", "nonsense_key: 1\n");
    let g = good.to_str().unwrap();
    assert_eq!(run_closed(&["validate", g]).code(), Some(0));
    assert_eq!(
        run_closed(&["validate", bad.to_str().unwrap()]).code(),
        Some(2)
    );
    assert_eq!(run_closed(&["completions", "bash"]).code(), Some(0));
    let out = dir.path().join("out");
    let s = run_closed(&["run", g, "--out", out.to_str().unwrap()]);
    assert_eq!(s.code(), Some(0));
    let run = run_dir(&out).expect("a folder");
    check_folder(&run);
    assert!(run.join("report.html").is_file());
}

/// Ctrl-C in the second ladder of a sweep: the first ladder's folder, finished, gets its
/// report.html, summary.md, summary.csv and analysis.json like any finished run (was: none of
/// them; only the interrupted folder got reports).
#[test]
fn ctrl_c_in_a_sweeps_second_ladder_still_reports_the_finished_first() {
    let dir = tempfile::tempdir().unwrap();
    let p = scenario(
        dir.path(),
        "sweep.yaml",
        "sweep:\n  field: output_tokens\n  values: [2, 2000]\n",
    );
    let t = std::fs::read_to_string(&p)
        .unwrap()
        .replace("request_timeout: 5s", "request_timeout: 60s");
    std::fs::write(&p, t).unwrap();
    let out = dir.path().join("out");
    let live = spawn_run(&p, &out);
    let first = live.wait_line("writing ", Duration::from_secs(60));
    let second = live.wait_line("writing ", Duration::from_secs(60));
    assert_ne!(first, second);
    // Each of the second ladder's requests takes about 20 s (2000 tokens at 10 ms a step).
    std::thread::sleep(Duration::from_millis(800));
    live.signal("INT");
    let r = live.finish(Duration::from_secs(60));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    let first_dir = PathBuf::from(first.trim_start_matches("writing ").trim());
    let rd = check_folder(&first_dir);
    assert_eq!(
        rd.info.status,
        ladder::results::RunStatus::Complete,
        "{first_dir:?}"
    );
    for f in ["report.html", "summary.md", "summary.csv", "analysis.json"] {
        assert!(
            first_dir.join(f).is_file(),
            "{f} missing in {first_dir:?}\n{}",
            r.stderr
        );
    }
}

/// A chat sessions scenario against the simulator (`extra` appended).
fn sessions_scenario(dir: &Path, name: &str, workload: &str, extra: &str) -> PathBuf {
    let p = dir.join(name);
    let t = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  api: chat\n  request_timeout: 10s\n\
         model: m\ntokenizer: {TOKENIZER}\nworkload:\n  requests_per_rung: 2\n  seed: 0\n\
         {workload}load:\n  warmup_requests: 0\n  rates: [50]\n  cooldown: 0s\n{extra}"
    );
    std::fs::write(&p, t).unwrap();
    p
}

/// A session's last turn carries the whole conversation. 1000 turns of 4096-token messages
/// and answers is a history of 8 million tokens: refused at `workload.sessions.turns` (was:
/// validated). A history past the server's context (4 turns of 40 + 40 tokens against a
/// 200-token context) fails the preflight's long probe, before any folder (was: preflight
/// passed, and every session failed from its third turn).
#[test]
fn a_sessions_longest_history_is_bounded_and_probed_at_preflight() {
    let dir = tempfile::tempdir().unwrap();
    let p = sessions_scenario(
        dir.path(),
        "huge.yaml",
        "  input_tokens: 4096\n  output_tokens: 4096\n  sessions:\n    turns: 1000\n",
        "",
    );
    let v = validate(&p);
    no_panic(&v);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(
        v.stderr.contains("workload.sessions.turns")
            && v.stderr
                .contains("8187904 tokens, more than the limit of 4194304"),
        "{}",
        v.stderr
    );
    let p = sessions_scenario(
        dir.path(),
        "ctx.yaml",
        "  input_tokens: 40\n  output_tokens: 40\n  sessions:\n    turns: 4\n",
        "sim:\n  max_model_len: 200\n",
    );
    let v = validate(&p);
    assert_eq!(v.status.code(), Some(0), "{}", v.all());
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(120));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("preflight failed") && r.stderr.contains("longest prompt"),
        "{}",
        r.stderr
    );
    assert!(
        run_dir(&out).is_none(),
        "no folder after a failed preflight"
    );
}

/// A base scenario (`base.yaml`) and a scenario extending it, in `dir`.
fn chain(dir: &Path, base_version: &str, child: &str) -> PathBuf {
    let base = std::fs::read_to_string(scenario(dir, "base.yaml", ""))
        .unwrap()
        .replace("version: 1\n", &format!("version: {base_version}\n"));
    std::fs::write(dir.join("base.yaml"), base).unwrap();
    let p = dir.join("child.yaml");
    std::fs::write(&p, format!("version: 1\nextends: base.yaml\n{child}")).unwrap();
    p
}

/// The messages of issue 32: a quoted `"5"` threshold says which forms are expected; a field
/// whose minimum is 1 says 1 (was: "must be at least 0, found -5"); `workload: null` in an
/// extending file is reported at that line of that file (was: 1:8).
#[test]
fn messages_say_the_expected_form_the_real_minimum_and_the_right_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = chain(
        dir.path(),
        "1",
        "load:\n  max_concurrency: -5\nworkload:\n  shared_prefix: {prefix_tokens: -5, groups: 2, \
         prompts_per_group: 2}\ngate:\n  - { metric: median_ttft_ms, max_increase: \"5\" }\n",
    );
    let v = validate(&p);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    for want in [
        "child.yaml:4:20: error: load.max_concurrency: must be at least 1, found number `-5`",
        "child.yaml:6:34: error: workload.shared_prefix.prefix_tokens: must be at least 1, found number `-5`",
        "gate[0].max_increase: `\"5\"` is a quoted number; a threshold is a percentage such as `5%` \
         (relative) or an unquoted number such as `5`",
    ] {
        assert!(v.stderr.contains(want), "want {want:?} in:\n{}", v.stderr);
    }
    let p = chain(dir.path(), "1", "workload: null\n");
    let v = validate(&p);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    assert!(
        v.stderr
            .contains("child.yaml:3:1: error: workload: missing required field `workload`"),
        "{}",
        v.stderr
    );
}

/// A base of another version than the file extending it (2, 0), or of no known version, is
/// refused at the base's `version` line (was: accepted silently under the child's version,
/// or read without its migration).
#[test]
fn a_base_of_another_or_an_unknown_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (v, says) in [
        ("2", "has an unknown version 2"),
        ("\"one\"", "has an unknown version `one`"),
        ("0", "is version 0, but"),
    ] {
        let p = chain(dir.path(), v, "");
        let r = validate(&p);
        no_panic(&r);
        assert_eq!(r.status.code(), Some(2), "{v}: {}", r.all());
        assert!(
            r.stderr
                .contains("base.yaml:1:10: error: version: the base scenario")
                && r.stderr.contains(says),
            "{v}: {}",
            r.stderr
        );
    }
    let p = chain(dir.path(), "1", "");
    assert_eq!(validate(&p).status.code(), Some(0));
}

/// A chat server whose every answer is `words` words of text while its usage says 3 tokens.
fn lying_chat_server(words: usize) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let text = "baba ".repeat(words);
    let stream = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n\
         data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":3}}}}\n\ndata: [DONE]\n\n"
    );
    let stream: &'static str = Box::leak(stream.into_boxed_str());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                use std::io::Write;
                let Ok((head, mut body)) = read_head(&mut s) else {
                    return;
                };
                // A broken body is answered with what arrived, as before.
                let _ = read_body(&mut s, &head, &mut body);
                let _ = if head.starts_with("GET /v1/models") {
                    let b = "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"object\":\"model\"}]}";
                    write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n{b}",
                        b.len()
                    )
                } else if head.starts_with("POST") {
                    write!(s, "{SSE_HEAD}{stream}")
                } else {
                    write!(
                        s,
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                };
            });
        }
    });
    url
}

/// A session's next turn sends the earlier answers back as text, so the history is counted as
/// that text with the tokenizer: 2000 words of answer said to be 3 tokens by the server's
/// usage count 2000 in the next turn's prompt, and the rung warns that the usage was not
/// trusted (was: the history counted 3, without a word).
#[test]
fn a_sessions_history_is_counted_as_the_text_sent_back() {
    let url = lying_chat_server(2000);
    let dir = tempfile::tempdir().unwrap();
    let p = sessions_scenario(
        dir.path(),
        "lie.yaml",
        "  input_tokens: 16\n  output_tokens: 4\n  sessions:\n    turns: 2\n",
        "server_metrics:\n  enabled: false\n",
    );
    let t = std::fs::read_to_string(&p)
        .unwrap()
        .replace("base_url: sim", &format!("base_url: {url}"));
    std::fs::write(&p, t).unwrap();
    let out = dir.path().join("out");
    let r = run_ladder(&p, &out, Duration::from_secs(120));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let run = run_dir(&out).expect("a folder");
    let rd = check_folder(&run);
    let lines = rd.requests(&rd.rungs[0]).unwrap();
    let second: Vec<_> = lines.iter().filter(|l| l.turn == Some(1)).collect();
    assert!(!second.is_empty(), "{lines:?}");
    for l in &second {
        assert!(
            l.input_tokens >= 2000 + 2 * 16 - 4,
            "turn 1 counted {} input tokens",
            l.input_tokens
        );
    }
    let first: Vec<_> = lines.iter().filter(|l| l.turn == Some(0)).collect();
    assert!(first.iter().all(|l| l
        .usage_rejected
        .as_deref()
        .is_some_and(|u| u.contains("answer's text"))));
    let file = ladder::results::requests_file_name(rd.rungs[0].summary.rate);
    assert!(
        r.stderr
            .contains("reported implausible usage (completion_tokens disagrees")
            && r.stderr.contains(&format!("usage_rejected in {file})")),
        "{}",
        r.stderr
    );
}
