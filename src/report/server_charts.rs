//! Charts of the server's own metrics (scraped `/metrics`): queue, batch and KV usage over
//! the ladder, and the TTFT decomposition (server queue + server TTFT vs the client's TTFT).
//! Drawn only when some rung has them.

use super::chart_data::{knee_markers, max_rate, runs, x_name};
use super::chart_model::{ChartSpec, Line, BLUE_, GREEN_, GREY_, ORANGE_, PURPLE_, RED_};
use super::Report;
use crate::metrics::{Latency, RungSummary};

/// Points of a `server_*` key, leaving out rungs that lack it.
fn server_series(rungs: &[RungSummary], key: &str, scale: f64) -> Vec<(f64, f64)> {
    rungs
        .iter()
        .filter_map(|r| r.server.get(key).map(|v| (r.rate, v * scale)))
        .collect()
}

/// The server charts of the report, empty when no rung was scraped.
pub fn specs(report: &Report) -> Vec<ChartSpec> {
    let any = report
        .runs
        .iter()
        .flat_map(|r| r.rungs.iter())
        .any(|r| r.server.get("server_scrapes").unwrap_or(0.0) > 0.0);
    if !any {
        return vec![];
    }
    let markers = knee_markers(report);
    let x_max = max_rate(report);
    let mut load = Vec::new();
    let mut kv = Vec::new();
    let mut ttft = Vec::new();
    for (run, prefix, dashed) in runs(report) {
        let line = |label: &str, key: &str, scale: f64, color| Line {
            label: format!("{prefix}{label}"),
            points: server_series(&run.rungs, key, scale),
            color,
            dashed,
            under: false,
        };
        load.push(line("waiting (max)", "server_max_waiting", 1.0, RED_));
        load.push(line("waiting (mean)", "server_mean_waiting", 1.0, ORANGE_));
        load.push(line("running (max)", "server_max_running", 1.0, BLUE_));
        load.push(line("running (mean)", "server_mean_running", 1.0, GREEN_));
        kv.push(line("KV usage (max)", "server_max_kv_usage", 100.0, RED_));
        kv.push(line(
            "KV usage (mean)",
            "server_mean_kv_usage",
            100.0,
            BLUE_,
        ));
        ttft.push(Line {
            label: format!("{prefix}client TTFT (mean)"),
            points: run
                .rungs
                .iter()
                .map(|r| (r.rate, r.stats(Latency::Ttft)))
                .filter(|(_, s)| s.count > 0)
                .map(|(rate, s)| (rate, s.mean))
                .collect(),
            color: GREY_,
            dashed,
            under: true,
        });
        ttft.push(line(
            "server TTFT (mean)",
            "server_mean_ttft_ms",
            1.0,
            BLUE_,
        ));
        ttft.push(line(
            "server queue time (mean)",
            "server_mean_queue_time_ms",
            1.0,
            PURPLE_,
        ));
    }
    let keep = |lines: Vec<Line>| -> Vec<Line> {
        lines.into_iter().filter(|l| !l.points.is_empty()).collect()
    };
    let mut out = Vec::new();
    for (id, title, y_desc, lines) in [
        (
            "server-load",
            format!(
                "Server queue and batch vs {} (scraped /metrics)",
                x_name(report)
            ),
            "requests",
            keep(load),
        ),
        (
            "server-kv",
            format!("Server KV-cache usage vs {}", x_name(report)),
            "% of the KV cache",
            keep(kv),
        ),
        (
            "ttft-decomposition",
            "TTFT: server's own vs the client's".to_string(),
            "ms",
            keep(ttft),
        ),
    ] {
        if lines.is_empty() {
            continue;
        }
        // Without a client TTFT (an endpoint that streams no tokens: embeddings) the chart is
        // the server's queue time alone, and says so in its title.
        let client = lines
            .iter()
            .any(|l| l.label.ends_with("client TTFT (mean)"));
        let (title, note) = match id {
            "ttft-decomposition" if !client => (
                format!("Server queue time vs {}", x_name(report)),
                vec!["no TTFT: this endpoint's requests stream no tokens".to_string()],
            ),
            "ttft-decomposition" => (title, decomposition_note(&lines)),
            _ => (title, vec![]),
        };
        out.push(ChartSpec {
            id,
            title,
            y_desc: y_desc.into(),
            lines,
            markers: markers.clone(),
            hline: None,
            x_max,
            extra: super::chart_model::Extra {
                note,
                ..Default::default()
            },
        });
    }
    out
}

/// What the TTFT decomposition shows, and why a server curve is missing: the gap between
/// the client's TTFT and the server's is network, gateway and client; a server that exports
/// no TTFT histogram (llama.cpp) or no queue time leaves only the client's line.
fn decomposition_note(lines: &[Line]) -> Vec<String> {
    let has = |what: &str| lines.iter().any(|l| l.label.ends_with(what));
    let mut note = Vec::new();
    match (has("server TTFT (mean)"), has("server queue time (mean)")) {
        (true, true) => note.push("gap above the server's TTFT: network, gateway, client".into()),
        (true, false) => {
            note.push("gap above the server's TTFT: network, gateway, client".into());
            note.push("no queue-time curve: the server exports no queue-time histogram".into());
        }
        (false, true) => {
            note.push("no server TTFT curve: the server exports no TTFT histogram".into());
        }
        (false, false) => {
            note.push("client TTFT only: the server's /metrics have no TTFT".into());
            note.push("or queue-time histogram (llama.cpp exports neither)".into());
        }
    }
    note
}
