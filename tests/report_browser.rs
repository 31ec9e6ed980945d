//! report.html in a real browser: headless Debian `chromium` lays the page out and a small
//! script appended to a copy of it measures every chart (its SVG's text boxes inside the
//! chart, so no title is clipped; its paths non-empty; some curve drawn), writing the result
//! into the DOM that `--dump-dom` prints. A screenshot is taken too (kept, with the pages,
//! under `LADDER_REPORT_OUT` when set). Without chromium the test says it skipped
//! (tests/support/skip.rs); `.ci/run` installs it so CI runs it.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::{ladder_cmd, run_dir, skip::skip, spawn};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Measures each chart; runs at the end of the page, after layout.
const PROBE: &str = r#"<pre id="ladder-probe"></pre><script>
const out = [];
for (const f of document.querySelectorAll('figure.chart')) {
  const svg = f.querySelector('svg');
  // On screen, after any rotation (the y axis label): each text inside its chart.
  const box = svg.getBoundingClientRect();
  const texts = [...svg.querySelectorAll('text')].map(t => {
    const b = t.getBoundingClientRect();
    return { s: t.textContent.trim(), l: b.left - box.left, t: b.top - box.top,
             r: b.right - box.left, b: b.bottom - box.top };
  });
  const clipped = texts
    .filter(b => b.r > b.l && (b.l < -1 || b.t < -1 || b.r > box.width + 1 || b.b > box.height + 1))
    .map(b => b.s);
  const paths = [...svg.querySelectorAll('path, polyline')];
  const empty = paths.filter(p => !((p.getAttribute('d') || p.getAttribute('points') || '').trim())).length;
  const drawn = paths.filter(p => p.getTotalLength() > 0).length;
  out.push({ id: f.id, title: texts.length ? texts[0].s : '', clipped, empty, drawn,
             width: svg.getBoundingClientRect().width, texts: texts.length });
}
document.getElementById('ladder-probe').textContent = JSON.stringify(out);
</script>"#;

fn scenario(dir: &Path, name: &str, max_num_seqs: u32) -> PathBuf {
    let tok = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json");
    let text = format!(
        "version: 1\nname: {name}\n\
         description: \"browser check <img src=x onerror=alert(1)> & <b>bold</b>\"\n\
         endpoint:\n  base_url: sim\n  api: completions\n  request_timeout: 10s\n\
         model: ladder-sim\ntokenizer: {}\n\
         workload:\n  dataset: random\n  input_tokens: 32\n  output_tokens: 16\n  \
         requests_per_rung: 40\n  seed: 0\n\
         load:\n  arrival: poisson\n  rates: [5, 20, 80]\n  warmup_requests: 2\n  cooldown: 0s\n\
         slo:\n  ttft_ms: 200\n  tpot_ms: 20\n  e2e_ms: 1000\n  max_error_rate: 0.05\n\
         gate:\n  - {{ metric: p99_ttft_ms, max: 300 }}\n  - {{ metric: request_throughput, max_decrease: 15% }}\n\
         sim:\n  seed: 0\n  max_num_seqs: {max_num_seqs}\n  max_waiting: 2\n",
        tok.display()
    );
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

fn ladder(args: &[&str]) -> support::Ran {
    let r = spawn(ladder_cmd(args)).finish(Duration::from_secs(240));
    support::no_panic(&r);
    r
}

/// Runs chromium on `page` with `args`; its stdout, or why it failed.
fn chromium(page: &Path, profile: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("timeout")
        .arg("90")
        .arg(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "chromium exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The probe's JSON out of the dumped DOM.
fn probe_result(dom: &str) -> serde_json::Value {
    let start = dom
        .find("<pre id=\"ladder-probe\">")
        .expect("probe in the DOM")
        + 23;
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Lays `html` out in chromium and checks every chart; returns the chart ids.
fn check_page(html: &Path, work: &Path, name: &str, hostile: bool) -> Vec<String> {
    let text = std::fs::read_to_string(html).unwrap();
    // The page itself runs no script and fetches nothing: self-contained.
    assert!(!text.contains("<script"), "{name}: a script in the page");
    for fetch in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!text.contains(fetch), "{name}: fetches {fetch}");
    }
    // A hostile description is text, not markup.
    if hostile {
        assert!(
            text.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{name}"
        );
    }
    assert!(!text.contains("NaN"), "{name}: NaN on the page");
    assert!(
        !text.contains("<img"),
        "{name}: live markup from the description"
    );
    let probed = work.join(format!("{name}-probed.html"));
    std::fs::write(
        &probed,
        text.replace("</body>", &format!("{PROBE}\n</body>")),
    )
    .unwrap();
    let profile = work.join(format!("profile-{name}"));
    let dom = chromium(&probed, &profile, &["--window-size=1300,900", "--dump-dom"])
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let charts = probe_result(&dom);
    let charts = charts.as_array().unwrap();
    assert!(
        charts.len() >= 10,
        "{name}: {} charts: {charts:?}",
        charts.len()
    );
    let mut ids = Vec::new();
    for c in charts {
        let id = c["id"].as_str().unwrap().to_string();
        assert!(
            c["texts"].as_u64().unwrap() > 3,
            "{name} {id}: no text: {c}"
        );
        assert!(
            !c["title"].as_str().unwrap().is_empty(),
            "{name} {id}: no title"
        );
        assert_eq!(
            c["clipped"],
            serde_json::json!([]),
            "{name} {id}: text outside the chart: {c}"
        );
        assert_eq!(c["empty"], 0, "{name} {id}: an empty path: {c}");
        assert!(
            c["drawn"].as_u64().unwrap() > 5,
            "{name} {id}: nothing drawn: {c}"
        );
        assert!(
            c["width"].as_f64().unwrap() > 300.0,
            "{name} {id}: squeezed: {c}"
        );
        ids.push(id);
    }
    let shot = work.join(format!("{name}.png"));
    chromium(
        &probed,
        &profile,
        &[
            "--window-size=1300,6000",
            &format!("--screenshot={}", shot.display()),
        ],
    )
    .unwrap_or_else(|e| panic!("{name} screenshot: {e}"));
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 50_000,
        "{name}: screenshot {} bytes",
        png.len()
    );
    ids
}

#[test]
fn report_pages_lay_out_in_a_real_browser_with_every_chart_whole() {
    if !Path::new(CHROMIUM).is_file() {
        skip(
            "report_browser::report_pages_lay_out_in_a_real_browser_with_every_chart_whole",
            "no /usr/bin/chromium (apt-get install chromium; .ci/run installs it)",
        );
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let work = match std::env::var_os("LADDER_REPORT_OUT") {
        Some(d) => PathBuf::from(d),
        None => t.path().to_path_buf(),
    };
    std::fs::create_dir_all(&work).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    // Base with 2 sequences a batch, candidate with 4: both refuse requests at the top rung.
    let base_sc = scenario(t.path(), "rel", 2);
    std::fs::create_dir_all(t.path().join("c")).unwrap();
    let cand_sc = scenario(&t.path().join("c"), "rel", 4);
    let base_out = t.path().join("base");
    let cand_out = t.path().join("cand");
    for (sc, out) in [(&base_sc, &base_out), (&cand_sc, &cand_out)] {
        let r = ladder(&["run", &s(sc), "--out", &s(out)]);
        assert!(run_dir(out).is_some(), "{}", r.all());
    }
    let base = run_dir(&base_out).unwrap();
    let cand = run_dir(&cand_out).unwrap();

    let one = check_page(&base.join("report.html"), &work, "single", true);
    for id in [
        "chart-throughput",
        "chart-output-tokens",
        "chart-per-user-tokens",
        "chart-frontier",
        "chart-ttft",
        "chart-itl",
        "chart-cdf-ttft",
        "chart-cdf-e2e",
        "chart-timeline",
        "chart-timeline-ttft",
        "chart-errors",
    ] {
        assert!(one.iter().any(|i| i == id), "{id} missing: {one:?}");
    }
    let html = std::fs::read_to_string(base.join("report.html")).unwrap();
    // The top rung turned requests away: it is marked on the latency charts.
    assert!(
        html.contains("% err</text>") || html.contains("% err\n</text>"),
        "no rung marked with its errors"
    );
    // SLO lines on the latency charts.
    assert!(html.contains("SLO TTFT 200 ms"), "no TTFT SLO line");
    // The gate's absolute bound on the TTFT chart; its relative rule draws nothing.
    assert!(html.contains("gate: p99_ttft_ms &lt;= 300"), "no gate line");
    assert!(
        !html.contains("gate: request_throughput"),
        "a relative rule drawn"
    );

    let overlay = work.join("overlay");
    let r = ladder(&["report", &s(&base), &s(&cand), "--out", &s(&overlay)]);
    assert!(overlay.join("report.html").is_file(), "{}", r.all());
    check_page(&overlay.join("report.html"), &work, "overlay", true);
    // A folder of vLLM result files (per-request lists without send times): the
    // distributions are drawn, the time series left out, nothing reads NaN.
    let vllm = work.join("vllm");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vllm-benchmark-serving-0.8");
    let r = ladder(&["report", &s(&fixture), "--out", &s(&vllm)]);
    assert!(vllm.join("report.html").is_file(), "{}", r.all());
    let ids = check_page(&vllm.join("report.html"), &work, "vllm", false);
    assert!(ids.iter().any(|i| i == "chart-cdf-ttft"), "{ids:?}");

    let html = std::fs::read_to_string(overlay.join("report.html")).unwrap();
    // The verdict headline on top, and changes written on the charts.
    let head = html.find("class=\"headline").expect("a verdict headline");
    assert!(head < html.find("<h2>Charts").unwrap());
    assert!(
        html.lines().any(|l| {
            let l = l.trim();
            (l.starts_with('+') || l.starts_with('-')) && l.ends_with('%')
        }),
        "no % change on the overlay's charts"
    );
}
