//! Reports of a result folder: `summary.md` (GitHub-flavoured Markdown), `summary.csv`,
//! `report.html` (one self-contained file with inline SVG charts) and `analysis.json`.
//!
//! Like hyperfine's `export/`, each format is one file behind the [`Exporter`] trait; they all
//! render the same [`Report`]: one run, or two runs overlaid (base and candidate) with the
//! comparer's verdicts as plain rows ([`VerdictRow`]).

mod chart_data;
pub(crate) mod chart_model;
mod chart_rung;
mod chart_specs;
mod chart_tokens;
pub(crate) mod charts;
pub mod comparison;
pub(crate) mod csv;
pub(crate) mod facts;
pub(crate) mod focus;
pub mod history;
pub(crate) mod html;
pub(crate) mod markdown;
mod models;
mod server_charts;
pub(crate) mod sessions;
mod unfinished;

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::metrics::analysis::{analyze, Analysis};
use crate::metrics::{Latency, RungSummary};
use crate::results::{rate_label, LoadError, ResultDir, RunInfo};
use crate::scenario::types::Slo;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The result folder could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The folder's `capacity.json` is damaged or cannot be read.
    #[error(transparent)]
    Capacity(#[from] crate::results::CapacityReadError),
    /// The folder has a run.json but no finished rung.
    #[error("{0}: the run has no finished rung, nothing to report")]
    NoRungs(PathBuf),
    /// The run never finished (`running`) and left no rung, finished or partial.
    #[error(
        "{0}: the run did not finish (run.json says `running`: its process was killed or \
         crashed, or is still running) and left no rung to report, finished or partial; \
         run it again"
    )]
    Unfinished(PathBuf),
    /// An output file could not be written.
    #[error("{path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Two runs of different kinds of ladder (rates and concurrency levels) share no axis.
    #[error("cannot overlay a {base} ladder (base) with a {cand} ladder (candidate): their rungs are not on the same axis; report each run on its own")]
    LoadKinds {
        base: &'static str,
        cand: &'static str,
    },
    /// `ladder report` was given neither one folder nor two.
    #[error("a report is of one result folder, or of two (BASE CANDIDATE), not of {0}")]
    Folders(usize),
    /// `--rung` names a level the run has no rung at.
    #[error("{dir}: no rung at {level} (--rung); its rungs: {levels}")]
    NoSuchRung {
        dir: PathBuf,
        level: String,
        levels: String,
    },
    /// A chart failed to draw (a plotters error).
    #[error("chart `{chart}` failed to draw: {message}")]
    Chart { chart: String, message: String },
}

/// One run as the report sees it.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// `base` / `candidate` in an overlay; the scenario name for a single run.
    pub label: String,
    /// The result folder.
    pub dir: PathBuf,
    /// Its run.json.
    pub info: RunInfo,
    /// Its rung summaries, sorted by rate.
    pub rungs: Vec<RungSummary>,
    /// The SLO from the resolved scenario (default when absent).
    pub slo: Slo,
    /// The analysis of `rungs` against `slo`.
    pub analysis: Analysis,
    /// A capacity search's `capacity.json` (docs/capacity.md), when the folder has one.
    pub capacity: Option<crate::capacity::CapacityFile>,
    /// The rung looked at closely (the knee, else the highest), from its request lines;
    /// `None` when built from parts or its lines hold no success.
    pub focus: Option<focus::Focus>,
}

impl RunReport {
    /// Load a result folder and analyse it; the knee (else the highest rung) is looked at
    /// closely.
    pub fn load(dir: &Path, label: &str) -> Result<RunReport, ReportError> {
        RunReport::load_at(dir, label, None)
    }

    /// [`RunReport::load`], looking closely at the rung at level `rung` when given (its
    /// distributions and time series); an error when the run has no rung there.
    pub fn load_at(dir: &Path, label: &str, rung: Option<f64>) -> Result<RunReport, ReportError> {
        let rd = ResultDir::open(dir)?;
        let mut info = rd.info.clone();
        let mut rungs: Vec<RungSummary> = rd.rungs.iter().map(|r| r.summary.clone()).collect();
        if info.status == crate::results::RunStatus::Running {
            let partial = unfinished::partial_rungs(dir, &info);
            if rungs.is_empty() && partial.is_empty() {
                return Err(ReportError::Unfinished(dir.to_path_buf()));
            }
            info.warnings.insert(0, unfinished::note(&info, &partial));
            rungs.extend(partial);
        }
        if rungs.is_empty() {
            return Err(ReportError::NoRungs(dir.to_path_buf()));
        }
        let mut run = RunReport::from_parts(label, dir, info, rungs);
        if let Some(level) = rung {
            if !run
                .rungs
                .iter()
                .any(|r| rate_label(r.rate) == rate_label(level))
            {
                return Err(ReportError::NoSuchRung {
                    dir: dir.to_path_buf(),
                    level: rate_label(level),
                    levels: run
                        .rungs
                        .iter()
                        .map(|r| rate_label(r.rate))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        let knee = run.analysis.knee.as_ref().map(|k| k.rate);
        run.focus = focus::of(&rd, knee, rung);
        Ok(run)
    }

    /// Build from already loaded parts (the runner, right after a run).
    pub fn from_parts(
        label: &str,
        dir: &Path,
        info: RunInfo,
        mut rungs: Vec<RungSummary>,
    ) -> RunReport {
        rungs.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let slo = slo_of(&info);
        let baseline = baseline_rate_of(&info);
        // A run that never finished (killed): its rung in progress is drawn from a partial
        // summary, a few seconds of it, and is no ground for a knee or an SLO verdict.
        let analysis = if info.status == crate::results::RunStatus::Running {
            let whole: Vec<RungSummary> =
                rungs.iter().filter(|r| !r.interrupted).cloned().collect();
            analyze(&whole, &slo, baseline)
        } else {
            analyze(&rungs, &slo, baseline)
        };
        let capacity = capacity_of(dir);
        let analysis = if capacity.is_some() {
            analysis.of_search()
        } else {
            analysis
        };
        RunReport {
            label: label.to_string(),
            dir: dir.to_path_buf(),
            info,
            rungs,
            slo,
            analysis,
            capacity,
            focus: None,
        }
    }
}

/// The folder's `capacity.json` through the one checked reader (`results::read_capacity`):
/// `ladder report` refuses a damaged one up front ([`check`]); a report made another way
/// (the run's own, just written) draws what it can.
fn capacity_of(dir: &Path) -> Option<crate::capacity::CapacityFile> {
    crate::results::read_capacity_in(dir).ok().flatten()
}

/// A folder `ladder report` is asked to draw, checked as `compare` checks it: its summaries
/// and every rung's request lines (`results::check`), and its `capacity.json` when it has one
/// (`results::read_capacity`), so an edited or damaged folder is
/// refused with the file and what is wrong, never drawn as if ladder had measured it.
pub fn check(dir: &Path) -> Result<(), ReportError> {
    let rd = ResultDir::open(dir)?;
    for r in &rd.rungs {
        rd.requests(r)?;
    }
    crate::results::read_capacity(&rd)?;
    Ok(())
}

/// The SLO of the resolved scenario stored in run.json.
pub fn slo_of(info: &RunInfo) -> Slo {
    info.scenario
        .get("slo")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// `load.baseline_rate` of the resolved scenario stored in run.json.
pub fn baseline_rate_of(info: &RunInfo) -> Option<f64> {
    info.scenario
        .get("load")
        .and_then(|l| l.get("baseline_rate"))
        .and_then(serde_json::Value::as_f64)
}

/// One row of the comparer's verdict table, as plain data so the report does not depend on
/// the comparer's types (`compare` converts its verdicts into these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRow {
    /// Rung rate (req/s).
    pub rate: f64,
    /// Metric key, e.g. `median_ttft_ms`.
    pub metric: String,
    /// Baseline value.
    pub base: f64,
    /// Candidate value.
    pub candidate: f64,
    /// The change as shown, e.g. `+12.0 % [+8.1, +15.9]`.
    pub change: String,
    /// `regression`, `improvement`, `within noise`, `inconclusive`, ...
    pub verdict: String,
    /// Threshold or explanation.
    pub detail: String,
}

/// The comparer's answer for an overlay: its headline and its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdicts {
    /// The one-line verdict `ladder compare` ends with (`PASS: 0 regression(s), …`, `FAIL:
    /// …`, `NO VERDICT: …`), or why the runs were not compared (then `rows` is empty).
    pub headline: String,
    /// One row per rung × check.
    pub rows: Vec<VerdictRow>,
}

/// What every exporter renders: one run, or base + candidate with optional verdicts.
#[derive(Debug, Clone)]
pub struct Report {
    /// One run, or two (base first).
    pub runs: Vec<RunReport>,
    /// The comparer's verdicts (overlays only).
    pub verdicts: Option<Verdicts>,
}

impl Report {
    /// What the rungs' levels count (req/s or users): the first run's, which every run
    /// shares ([`write_comparison`] refuses a mix).
    pub fn load(&self) -> crate::scenario::LoadKind {
        self.runs.first().map(|r| r.info.load).unwrap_or_default()
    }

    /// The x axis of the report's charts.
    pub fn x_desc(&self) -> &'static str {
        match self.load() {
            crate::scenario::LoadKind::Rate => "offered rate (req/s)",
            crate::scenario::LoadKind::Concurrency => "concurrency (users)",
            crate::scenario::LoadKind::Trace => "trace replay speed (x)",
            crate::scenario::LoadKind::Ramp => "ramp final rate (req/s)",
        }
    }

    /// True when two runs are overlaid.
    pub fn is_overlay(&self) -> bool {
        self.runs.len() > 1
    }
}

/// One output format.
pub trait Exporter {
    /// File name written into the output folder.
    fn file_name(&self) -> &'static str;
    /// The file's content.
    fn render(&self, report: &Report) -> Result<String, ReportError>;
}

/// Every format, in write order.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(markdown::Markdown),
        Box::new(csv::Csv),
        Box::new(html::Html),
    ]
}

/// Write summary.md, summary.csv, report.html and analysis.json into the result folder `dir`.
pub fn write_all(dir: &Path) -> Result<(), ReportError> {
    write_run(dir, dir).map(|_| ())
}

/// Report one run into `out` (created if needed); returns the paths written.
pub fn write_run(dir: &Path, out: &Path) -> Result<Vec<PathBuf>, ReportError> {
    write_run_at(dir, out, None)
}

/// [`write_run`], looking closely at the rung at level `rung` (`--rung`) instead of the knee.
pub fn write_run_at(
    dir: &Path,
    out: &Path,
    rung: Option<f64>,
) -> Result<Vec<PathBuf>, ReportError> {
    let run = RunReport::load_at(dir, &scenario_label(dir), rung)?;
    let analysis = serde_json::to_string_pretty(&run.analysis).expect("analysis serialises");
    let report = Report {
        runs: vec![run],
        verdicts: None,
    };
    let mut written = write_report(&report, out)?;
    let p = out.join("analysis.json");
    write_atomic(&p, &(analysis + "\n"))?;
    written.push(p);
    Ok(written)
}

/// Overlay two runs into `out`, with the comparer's verdict rows when given.
pub fn write_comparison(
    base: &Path,
    candidate: &Path,
    out: &Path,
    verdicts: Option<Verdicts>,
) -> Result<Vec<PathBuf>, ReportError> {
    write_comparison_at(base, candidate, out, verdicts, None)
}

/// [`write_comparison`], looking closely at the rung at level `rung` of both runs.
pub fn write_comparison_at(
    base: &Path,
    candidate: &Path,
    out: &Path,
    verdicts: Option<Verdicts>,
    rung: Option<f64>,
) -> Result<Vec<PathBuf>, ReportError> {
    let runs = vec![
        RunReport::load_at(base, "base", rung)?,
        RunReport::load_at(candidate, "candidate", rung)?,
    ];
    if runs[0].info.load != runs[1].info.load {
        return Err(ReportError::LoadKinds {
            base: runs[0].info.load.name(),
            cand: runs[1].info.load.name(),
        });
    }
    let report = Report { runs, verdicts };
    write_report(&report, out)
}

/// Render every format of `report` into `out`; returns the paths written.
pub fn write_report(report: &Report, out: &Path) -> Result<Vec<PathBuf>, ReportError> {
    fs::create_dir_all(out).map_err(|source| ReportError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for e in exporters() {
        let p = out.join(e.file_name());
        write_atomic(&p, &e.render(report)?)?;
        written.push(p);
    }
    Ok(written)
}

fn scenario_label(dir: &Path) -> String {
    ResultDir::open(dir)
        .map(|d| d.info.scenario_name)
        .unwrap_or_else(|_| dir.display().to_string())
}

/// Temp file + rename, so a reader never sees half a report.
fn write_atomic(path: &Path, text: &str) -> Result<(), ReportError> {
    let err = |source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    fs::write(&tmp, text).map_err(err)?;
    fs::rename(&tmp, path).map_err(err)
}

/// What the server-side tokens table shows, and why its counts differ from the client's.
pub(crate) const SERVER_TOKENS_NOTE: &str = "the server's own count of generated tokens is \
     its counter's increase from the rung's first scrape (at its first measured send) to its \
     last (after its last request ended). Warmup requests still running at the first scrape \
     are in it (llama.cpp adds a request's tokens when the request ends), so it can exceed the \
     measured requests' output tokens by up to the warmup's; a server that counts as it \
     generates (vLLM) counts only what it generated inside that window.";

/// Output tokens as the client counted them (measured requests) beside the server's
/// `server_generated_tokens`, and the difference. `None` when no rung has the server's.
pub(crate) fn server_tokens_table(
    run: &RunReport,
) -> Option<(Vec<&'static str>, Vec<Vec<String>>)> {
    let key = "server_generated_tokens";
    // No rung scraped the counter, or no rung generated tokens (an embeddings endpoint,
    // whose requests a server may still count as one token each).
    if run.rungs.iter().all(|r| r.server.get(key).is_none())
        || run.rungs.iter().all(|r| r.total_output_tokens == 0)
    {
        return None;
    }
    let header = vec![
        run.info.load.axis(),
        "measured output tokens",
        "server generated tokens",
        "server - measured",
        "warmup requests",
    ];
    let rows = run
        .rungs
        .iter()
        .map(|r| {
            let client = r.total_output_tokens as f64;
            let (server, diff) = match r.server.get(key) {
                Some(s) => (format!("{s:.0}"), format!("{:+.0}", s - client)),
                None => ("-".to_string(), "-".to_string()),
            };
            vec![
                rate_label(r.rate),
                r.total_output_tokens.to_string(),
                server,
                diff,
                r.warmup_requests.to_string(),
            ]
        })
        .collect();
    Some((header, rows))
}

/// What the shared-prefix table's columns mean.
pub(crate) const PREFIX_NOTE: &str = "cold is each prefix group's first request in the rung \
     (the server cannot have its prefix cached), warm the group's later requests; the server's \
     hit rate is its own prefix-cache counters over the rung, where it exposes them.";

/// The shared-prefix table: TTFT of cold vs warm requests per rung, with the server's
/// prefix-cache hit rate. `None` when no rung has prefix groups.
pub(crate) fn prefix_table(run: &RunReport) -> Option<(Vec<&'static str>, Vec<Vec<String>>)> {
    if run.rungs.iter().all(|r| r.prefix.is_none()) {
        return None;
    }
    let header = vec![
        run.info.load.axis(),
        "groups",
        "cold",
        "TTFT cold p50 (ms)",
        "warm",
        "TTFT warm p50 (ms)",
        "TTFT warm p99 (ms)",
        "server hit rate",
    ];
    let ms = |count: u64, v: f64| {
        if count == 0 {
            "-".to_string()
        } else {
            format!("{v:.1}")
        }
    };
    let rows = run
        .rungs
        .iter()
        .map(|r| {
            let mut row = vec![rate_label(r.rate)];
            let hit = r
                .server
                .values
                .get("server_prefix_hit_rate")
                .map_or("-".to_string(), |h| format!("{:.1}%", h * 100.0));
            match &r.prefix {
                Some(p) => row.extend([
                    p.groups.to_string(),
                    p.cold.count.to_string(),
                    ms(p.cold.count, p.cold.median),
                    p.warm.count.to_string(),
                    ms(p.warm.count, p.warm.median),
                    ms(p.warm.count, p.warm.p99),
                    hit,
                ]),
                None => row.extend(
                    ["0", "0", "-", "0", "-", "-"]
                        .map(String::from)
                        .into_iter()
                        .chain([hit]),
                ),
            }
            row
        })
        .collect();
    Some((header, rows))
}

/// The reasoning table: for runs of a reasoning model, time to the first *content* token
/// beside TTFT and where the output tokens went. `None` when no rung reasoned.
pub(crate) fn reasoning_table(run: &RunReport) -> Option<(Vec<&'static str>, Vec<Vec<String>>)> {
    if run.rungs.iter().all(|r| r.reasoning.is_none()) {
        return None;
    }
    let header = vec![
        run.info.load.axis(),
        "reasoning requests",
        "reasoning tokens",
        "content tokens",
        "TTFT p50 (ms)",
        "TTFC p50 (ms)",
        "TTFC p99 (ms)",
    ];
    let rows = run
        .rungs
        .iter()
        .map(|r| {
            let mut row = vec![rate_label(r.rate)];
            match &r.reasoning {
                Some(x) => row.extend([
                    x.requests.to_string(),
                    x.total_reasoning_tokens.to_string(),
                    x.total_content_tokens.to_string(),
                    format!("{:.1}", r.stats(Latency::Ttft).median),
                    format!("{:.1}", x.ttfc.median),
                    format!("{:.1}", x.ttfc.p99),
                ]),
                None => row.extend(["0", "0", "-", "-", "-", "-"].map(String::from)),
            }
            row
        })
        .collect();
    Some((header, rows))
}

/// A measured value with `decimals` decimals, or [`facts::NOT_RECORDED`] where the run's
/// files hold none (NaN: a vLLM file's goodput without `--goodput`, its dispatch lag).
pub(crate) fn fixed(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        facts::NOT_RECORDED.to_string()
    } else {
        format!("{v:.decimals$}")
    }
}

/// The rung table shared by Markdown and HTML: header cells, one row of cells per rung, and
/// the note naming the columns left out because no rung recorded them (`None` when none was).
pub(crate) fn rung_table(run: &RunReport) -> (Vec<&'static str>, Vec<Vec<String>>, Option<String>) {
    // A pooled API's run (embeddings) generates no tokens: its token column is input tok/s,
    // and its TTFT and TPOT columns (all "not recorded") are left out below.
    let pooled = pooled(run);
    let header = vec![
        run.info.load.axis(),
        "completed",
        "failed",
        "error rate",
        "QPS",
        "goodput",
        if pooled {
            "input tok/s"
        } else {
            "output tok/s"
        },
        "TTFT p50 (ms)",
        "TTFT p99 (ms)",
        "TPOT p50 (ms)",
        "TPOT p99 (ms)",
        "E2E p50 (ms)",
        "E2E p99 (ms)",
        "lag p99 (ms)",
        "x QPS",
        // A pooled rung's latency multiple is its whole request's (E2E).
        if pooled { "x E2E" } else { "x TTFT" },
        "x TPOT",
        "SLO",
    ];
    let knee = run.analysis.knee.as_ref().map(|k| k.rate);
    let rows: Vec<Vec<String>> = run
        .rungs
        .iter()
        .map(|r| rung_row(run, r, knee, pooled))
        .collect();
    // A column no rung recorded is left out, and said once, rather than a column of
    // "not recorded" (a vLLM import has no goodput without --goodput, and no dispatch lag).
    let never: Vec<usize> = (1..header.len())
        .filter(|&i| !rows.is_empty() && rows.iter().all(|row| row[i] == facts::NOT_RECORDED))
        .collect();
    if never.is_empty() {
        return (header, rows, None);
    }
    let keep = |i: &usize| !never.contains(i);
    let names: Vec<&str> = never.iter().map(|&i| header[i]).collect();
    let whose = match facts::imported_from_vllm(&run.info) {
        true => "its vLLM result files hold none",
        false => "this run recorded none",
    };
    let note = format!(
        "left out of the table and the charts, as {whose}: {}",
        names.join(", ")
    );
    let header = header
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep(i))
        .map(|(_, h)| h)
        .collect();
    let rows = rows
        .into_iter()
        .map(|row| {
            row.into_iter()
                .enumerate()
                .filter(|(i, _)| keep(i))
                .map(|(_, c)| c)
                .collect()
        })
        .collect();
    (header, rows, Some(note))
}

/// One rung's cells of [`rung_table`]: `knee` is the run's knee rate, `pooled` a pooled API's
/// run (its token column is input tok/s).
fn rung_row(run: &RunReport, r: &RungSummary, knee: Option<f64>, pooled: bool) -> Vec<String> {
    let a = run.analysis.rung(r.rate);
    let m = |f: fn(&crate::metrics::analysis::RungAnalysis) -> Option<f64>| {
        a.and_then(f)
            .map(|v| fixed(v, 2))
            .unwrap_or_else(|| "-".into())
    };
    let mut rate = rate_label(r.rate);
    if Some(r.rate) == knee {
        rate.push_str(" (knee)");
    }
    if Some(r.rate) == run.analysis.baseline_rate {
        rate.push_str(" (baseline)");
    }
    if r.interrupted {
        rate.push_str(" (partial)");
    }
    // A rung with no completed request measured no latency: "-", not 0.0.
    let lat = |v: f64| {
        if r.completed == 0 && !v.is_nan() {
            "-".to_string()
        } else {
            fixed(v, 1)
        }
    };
    let slo = match a {
        Some(a) if a.meets_slo => "ok".to_string(),
        Some(a) => format!("miss: {}", a.slo_misses.join("; ")),
        None => "-".into(),
    };
    vec![
        rate,
        r.completed.to_string(),
        r.failed.to_string(),
        format!("{:.1} %", r.error_rate() * 100.0),
        fixed(r.request_throughput, 2),
        fixed(r.request_goodput, 2),
        fixed(
            if pooled {
                r.input_throughput()
            } else {
                r.output_throughput
            },
            1,
        ),
        lat(r.stats(Latency::Ttft).median),
        lat(r.stats(Latency::Ttft).p99),
        lat(r.stats(Latency::Tpot).median),
        lat(r.stats(Latency::Tpot).p99),
        lat(r.stats(Latency::E2el).median),
        lat(r.stats(Latency::E2el).p99),
        fixed(r.stats(Latency::DispatchLag).p99, 1),
        m(|a| a.throughput_multiple),
        if pooled {
            m(|a| a.latency_multiple)
        } else {
            m(|a| a.ttft_multiple)
        },
        if pooled {
            facts::NOT_RECORDED.to_string()
        } else {
            m(|a| a.tpot_multiple)
        },
        slo,
    ]
}

/// A pooled API's run (embeddings, rerank): its rungs generated no tokens.
fn pooled(run: &RunReport) -> bool {
    run.rungs.iter().any(|r| r.pooling.is_some())
}

/// The multiples a run's tables show, for the line naming the baseline rung: a pooled API's
/// run (embeddings, rerank) has no token timings, so its latency multiple is E2E's.
pub(crate) fn multiples_named(run: &RunReport) -> &'static str {
    if pooled(run) {
        "multiples (x QPS, x E2E)"
    } else {
        "multiples (x QPS, x TTFT, x TPOT)"
    }
}

/// A line describing where and when a run happened.
pub(crate) fn run_meta(run: &RunReport) -> String {
    let i = &run.info;
    let endpoint = match i.endpoint.trim() {
        "" => facts::NOT_RECORDED,
        e => e,
    };
    let mut s = format!(
        "scenario {} · started {} · endpoint {} · status {} · ladder {}",
        i.scenario_name,
        i.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
        endpoint,
        serde_json::to_value(i.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        i.tool_version
    );
    if let Some(d) = &i.status_detail {
        s.push_str(&format!(" ({d})"));
    }
    if let Some(c) = &i.git_commit {
        s.push_str(&format!(" · git {}", crate::format::first_chars(c, 12)));
    }
    s
}

/// The SLO as a short phrase.
pub(crate) fn slo_text(run: &RunReport) -> String {
    let s = &run.slo;
    let mut parts = Vec::new();
    if let Some(v) = s.ttft_ms {
        parts.push(format!("TTFT <= {} ms", rate_label(v)));
    }
    if let Some(v) = s.tpot_ms {
        parts.push(format!("TPOT <= {} ms", rate_label(v)));
    }
    if let Some(v) = s.e2e_ms {
        parts.push(format!("E2E <= {} ms", rate_label(v)));
    }
    parts.push(format!(
        "error rate <= {:.1} %{}",
        run.analysis.max_error_rate * 100.0,
        if s.max_error_rate.is_none() {
            " (default)"
        } else {
            ""
        }
    ));
    parts.join(", ")
}
