mod support;
use support::*;

// Secrets end to end: the key, secret and env-templated header values and URL credentials
// never reach a result file, stdout, stderr or a report, in any encoding a server echoes;
// a short key does not corrupt run.json; a base URL's query is kept on every request path.
// All traffic stays on 127.0.0.1; every child runs under the harness's watchdog.

use std::path::Path;
use std::time::Duration;

/// A fake key with the characters encodings treat specially (`/`, `+`, `=`, `~`).
const HS_KEY: &str = "sk-hs/Fake+Key=9137~not-real";

fn run_with(scenario: &Path, out: &Path, env: &[(&str, &str)]) -> Ran {
    let mut cmd = ladder_cmd(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let ran = spawn(cmd).finish(Duration::from_secs(90));
    no_panic(&ran);
    ran
}

/// `ladder report DIR` output and files.
fn report_text(dir: &Path, tmp: &Path) -> String {
    let report_dir = tmp.join("report");
    let rep = spawn(ladder_cmd(&[
        "report",
        dir.to_str().unwrap(),
        "--out",
        report_dir.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    no_panic(&rep);
    assert!(rep.status.success(), "{}", rep.all());
    format!("{}\n{}", rep.all(), all_text_under(&report_dir))
}

/// Asserts none of `needles` occurs in any of the `(what, text)` pairs.
fn nowhere(needles: &[String], texts: &[(&str, &str)]) {
    for (what, text) in texts {
        for n in needles {
            assert!(
                !text.contains(n.as_str()),
                "{n:?} leaked into {what}:\n{text}"
            );
        }
    }
}

/// The key, pieces of it, and every encoded form the servers echo.
fn key_needles() -> Vec<String> {
    let mut v = vec![
        HS_KEY.to_string(),
        "Fake+Key".into(),
        "Key=9137".into(),
        "9137~not".into(),
    ];
    v.extend(echo_forms(&format!("Bearer {HS_KEY}")));
    v
}

#[test]
fn encoded_echoes_at_preflight_never_show_the_key() {
    let server = fault_server(Fault::EchoEncoded401, 0);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.key = true;
    let path = sc.write(tmp.path());
    let ran = run_with(&path, &tmp.path().join("out"), &[(KEY_VAR, HS_KEY)]);
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    assert!(
        ran.stderr.contains("error:") && ran.stderr.contains("401"),
        "{}",
        ran.stderr
    );
    // The echo is kept, scrubbed.
    assert!(
        ran.stderr.contains("invalid credentials: "),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.matches("***").count() >= 6, "{}", ran.stderr);
    assert!(server
        .heads
        .lock()
        .unwrap()
        .iter()
        .any(|h| h.contains(HS_KEY)));
    nowhere(&key_needles(), &[("stdout/stderr", &ran.all())]);
}

#[test]
fn encoded_echoes_in_model_ids_500s_and_stream_errors_never_reach_files_or_output() {
    let server = fault_server(Fault::EchoEncoded, PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.key = true;
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_with(&path, &out, &[(KEY_VAR, HS_KEY)]);
    // The model-id echo was printed (scrubbed): the scenario's model is not in the list.
    assert!(ran.stderr.contains("is not in"), "{}", ran.stderr);
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    assert_finished(&ran, &rd);
    let mut classes = vec![];
    for rung in &rd.rungs {
        for l in rd.requests(rung).unwrap() {
            classes.push(format!("{:?}", l.error_class));
        }
    }
    assert!(
        classes.iter().any(|c| c.contains("Server5xx")),
        "{classes:?}"
    );
    assert!(
        classes.iter().any(|c| c.contains("StreamError")),
        "{classes:?}"
    );
    let files = all_text_under(&dir);
    assert!(files.contains("credentials not accepted: "), "{files}");
    assert!(files.contains("token expired: Bearer *** | "), "{files}");
    let reports = report_text(&dir, tmp.path());
    nowhere(
        &key_needles(),
        &[
            ("stdout/stderr", &ran.all()),
            ("result files", &files),
            ("report", &reports),
        ],
    );
}

#[test]
fn a_short_key_keeps_run_json_scenario_and_its_gate_rules() {
    let server = fault_server(Fault::None, 0);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.key = true;
    sc.rates = "[10]";
    sc.baseline = 1.0;
    sc.n = 2;
    sc.extra = "gate:\n  - { metric: error_rate, max: 0.5 }\n  - { metric: request_throughput, max_decrease: 90% }\n";
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_with(&path, &out, &[(KEY_VAR, "10")]);
    assert!(ran.status.success(), "{}", ran.all());
    assert!(
        ran.stderr
            .contains("warning: the API key is shorter than 8 characters"),
        "{}",
        ran.stderr
    );
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    let s = &rd.info.scenario;
    assert!(s.is_object(), "run.json scenario: {s}");
    assert_eq!(s["load"]["rates"], serde_json::json!([10.0]), "{s}");
    assert_eq!(s["gate"][0]["metric"], "error_rate", "{s}");
    assert_eq!(s["gate"][1]["max_decrease"], "90%", "{s}");
    assert!(
        rd.info
            .warnings
            .iter()
            .any(|w| w.contains("shorter than 8")),
        "{:?}",
        rd.info.warnings
    );
    // compare reads the scenario's own rules, not the defaults.
    let cmp = spawn(ladder_cmd(&[
        "compare",
        dir.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    no_panic(&cmp);
    assert!(cmp.all().contains("scenario `gate:`"), "{}", cmp.all());
    assert!(!cmp.all().contains("defaults"), "{}", cmp.all());
}

#[test]
fn credentials_in_base_url_are_refused_and_the_password_shown_nowhere() {
    // A port nothing listens on: the server is down.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmp = tempfile::tempdir().unwrap();
    let secret = "pw-HS-userinfo-7731";
    for url in [
        format!("http://alice:{secret}@127.0.0.1:{port}"),
        format!("http://alice:{secret}@127.0.0.1:{port}/gw?api-version=1"),
        format!("http://alice:{secret}@127.0.0.1:notaport"),
    ] {
        let path = Sc::new(url.clone()).write(tmp.path());
        let out = tmp.path().join("out");
        let ran = run_with(&path, &out, &[]);
        assert_eq!(ran.status.code(), Some(2), "{url}: {}", ran.all());
        assert!(ran.stderr.contains("error:"), "{}", ran.stderr);
        assert!(
            ran.stderr.contains("api_key_env") && ran.stderr.contains("{{ env."),
            "{url}: the hint says where credentials go: {}",
            ran.stderr
        );
        assert!(run_dir(&out).is_none(), "{url}: no folder");
        let val = spawn(ladder_cmd(&["validate", path.to_str().unwrap()]))
            .finish(Duration::from_secs(30));
        assert_eq!(val.status.code(), Some(2), "{}", val.all());
        for text in [ran.all(), val.all()] {
            assert!(
                !text.contains(secret) && !text.contains("alice"),
                "{url}: {text}"
            );
        }
    }
}

#[test]
fn secret_and_env_headers_are_redacted_in_run_json_and_in_echoes() {
    let server = fault_server(Fault::EchoHead, PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.extra = "";
    let path = sc.write(tmp.path());
    // Headers under `endpoint:` (the builder writes it first; append to that mapping).
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "  api: completions\n",
        "  api: completions\n  headers:\n    X-Api-Key: \"{{ env.MY_SECRET }}\"\n    \
         Authorization: \"Bearer sk-literal-HS-5150\"\n    X-Note: \"{{ env.HS_NOTE }}\"\n    \
         X-Plain: visible-value\n",
    );
    std::fs::write(&path, text).unwrap();
    let out = tmp.path().join("out");
    let env_secret = "env-secret-HS-8080";
    let note = "note-from-env-HS-2121";
    let ran = run_with(&path, &out, &[("MY_SECRET", env_secret), ("HS_NOTE", note)]);
    // The server got every value in clear, and echoed them back.
    let heads = server.heads.lock().unwrap().join("\n");
    for v in [env_secret, "sk-literal-HS-5150", note, "visible-value"] {
        assert!(heads.contains(v), "{v} not sent");
    }
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    assert_finished(&ran, &rd);
    let headers = &rd.info.scenario["endpoint"]["headers"];
    assert_eq!(headers["X-Api-Key"], "<redacted>");
    assert_eq!(headers["Authorization"], "<redacted>");
    assert_eq!(headers["X-Note"], "<redacted>", "came from an env template");
    assert_eq!(headers["X-Plain"], "visible-value");
    let files = all_text_under(&dir);
    assert!(files.contains("upstream rejected"), "the echo is kept");
    let reports = report_text(&dir, tmp.path());
    let needles: Vec<String> = [env_secret, "sk-literal-HS-5150", note]
        .iter()
        .map(|s| s.to_string())
        .collect();
    nowhere(
        &needles,
        &[
            ("stdout/stderr", &ran.all()),
            ("result files", &files),
            ("report", &reports),
        ],
    );
}

#[test]
fn a_query_in_base_url_is_kept_on_every_request_path_and_a_fragment_is_refused() {
    let server = fault_server(Fault::None, 0);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(format!("{}/openai?api-version=2024-02-01", server.url()));
    sc.n = 2;
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_with(&path, &out, &[]);
    assert!(ran.status.success(), "{}", ran.all());
    let heads = server.heads.lock().unwrap().clone();
    let lines: Vec<&str> = heads.iter().filter_map(|h| h.lines().next()).collect();
    assert!(
        lines.contains(&"GET /openai/v1/models?api-version=2024-02-01 HTTP/1.1"),
        "{lines:?}"
    );
    let posts: Vec<&&str> = lines.iter().filter(|l| l.starts_with("POST")).collect();
    assert!(!posts.is_empty());
    for l in posts {
        assert_eq!(
            *l,
            "POST /openai/v1/completions?api-version=2024-02-01 HTTP/1.1"
        );
    }
    let rd = check_folder(&run_dir(&out).unwrap());
    assert_eq!(
        rd.info.endpoint,
        format!("{}/openai?api-version=2024-02-01", server.url())
    );

    let path = Sc::new(format!("{}/openai#section", server.url())).write(tmp.path());
    let ran = run_with(&path, &tmp.path().join("out2"), &[]);
    assert_eq!(ran.status.code(), Some(2), "{}", ran.all());
    assert!(
        ran.stderr.contains("error:") && ran.stderr.contains("fragment"),
        "{}",
        ran.stderr
    );
}

#[test]
fn an_echo_cut_inside_the_key_leaves_no_part_of_it() {
    let server = fault_server(Fault::MalformedEcho, PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new(server.url());
    sc.key = true;
    let path = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let ran = run_with(&path, &out, &[(KEY_VAR, HS_KEY)]);
    let dir = run_dir(&out).unwrap();
    assert_finished(&ran, &check_folder(&dir));
    let files = all_text_under(&dir);
    assert!(files.contains("xxxx Bearer ***"), "{files}");
    nowhere(
        &[HS_KEY[..9].to_string()],
        &[("stdout/stderr", &ran.all()), ("result files", &files)],
    );
}
