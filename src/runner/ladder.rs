//! The rungs of one ladder, each measured `load.repeats` times.
//!
//! Repeats are interleaved: the whole ladder runs once, then again, so that slow drift of
//! the server or the machine spreads over every rung instead of lining up with one (a rung
//! measured N times in a row would take all of a drift that happened while it ran). Each
//! repeat of a rung replays the same workload: the same prompt lengths and the same arrival
//! schedule (both from `workload.seed`, as a baseline and a candidate share them; with
//! `workload.cache: cold` each repeat writes new words, so no repeat meets a cache the one
//! before filled), so the spread between repeats is the server's and the machine's, not the
//! schedule's. Every
//! repeat sends its own warmup requests and is followed by the cooldown like any rung. A rung's files are written once its last repeat
//! has run; the server's `/metrics` are scraped during the first repeat only.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    failures, print_outcome, progress, rung, rung_plan, shard, sim_host, soak, warnings,
    RunContext, RunError, RunOutcome, STOP_GRACE,
};
use crate::client::Client;
use crate::metrics::{repeats, summarize, RungContext, RungSummary};
use crate::record::RequestRecord;
use crate::results::{server_metrics_file_name, RunStatus, RunWriter};
use crate::scenario::Scenario;
use crate::servermetrics::{self, ScrapeSetup, ServerSummary};
use crate::workload;

/// What one ladder needs to run.
pub(super) struct Ladder<'a> {
    pub ctx: &'a RunContext<'a>,
    pub scenario: &'a Scenario,
    pub client: &'a Arc<Client>,
    /// Where prompt token counts come from (`tokenizer:`).
    pub tokens: workload::Tokens<'a>,
    pub scrape: Option<&'a ScrapeSetup>,
    pub sim: Option<&'a sim_host::SimHost>,
    /// Preflight warned that the scenario's tokenizer is likely not the served model's:
    /// the rungs' token warnings then name it, not a chat template.
    pub tokenizer_mismatch: bool,
    /// The prompt tokens preflight measured the server adding to every prompt (its chat
    /// template, a BOS): shared by every request, so its cache hits are expected.
    pub prompt_overhead: Option<i64>,
    /// Connections refused in a row at the end of the last rung: the next rung goes on
    /// counting them (`rejection::Refusals`), so a server that went down between short
    /// rungs stops the run as one that went down within a long rung does.
    pub refused: std::sync::Mutex<super::rejection::Refusals>,
}

/// One rung's measurements so far, repeat by repeat.
#[derive(Default)]
pub(super) struct Held {
    pub(super) records: Vec<Vec<RequestRecord>>,
    pub(super) summaries: Vec<RungSummary>,
    /// False once a repeat was cut short.
    pub(super) whole: bool,
    pub(super) server_text: Option<String>,
}

/// One measured repeat of one rung.
pub(super) struct Measured {
    pub(super) records: Vec<RequestRecord>,
    pub(super) summary: RungSummary,
    pub(super) interrupted: bool,
    pub(super) rejected: Option<super::RungRejected>,
    /// The server-metrics file text, when scraped.
    pub(super) server_text: Option<String>,
}

impl Held {
    /// A rung not measured yet.
    pub(super) fn new() -> Held {
        Held {
            whole: true,
            ..Held::default()
        }
    }

    /// Keeps a measurement of this rung; gives back whether it was interrupted and why it
    /// was rejected, if it was.
    pub(super) fn keep(&mut self, m: Measured) -> (bool, Option<super::RungRejected>) {
        if m.server_text.is_some() {
            self.server_text = m.server_text;
        }
        self.whole &= !m.interrupted && m.rejected.is_none();
        self.records.push(m.records);
        self.summaries.push(m.summary);
        (m.interrupted, m.rejected)
    }
}

/// A ladder between its measurements: each rung's repeats so far, the lines of run.log, the
/// warnings said, and a shard's timeline of rung starts.
struct Climb {
    rates: Vec<f64>,
    held: Vec<Held>,
    log: Vec<String>,
    said: Said,
    timeline: Option<shard::Timeline>,
}

/// Wait out the scenario's cooldown between two measurements; true when a signal came
/// first.
pub(super) async fn cooled_down(scenario: &Scenario, stop: &watch::Receiver<bool>) -> bool {
    let mut s = stop.clone();
    tokio::select! {
        _ = tokio::time::sleep(scenario.load.cooldown.0) => false,
        _ = s.changed() => true,
    }
}

impl<'c> Ladder<'c> {
    /// The refusals in a row the last rung ended on.
    fn refusals_carried(&self) -> super::rejection::Refusals {
        self.refused.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Keep the refusals in a row a rung ended on, for the next.
    fn carry_refusals(&self, r: &super::rejection::Refusals) {
        if let Ok(mut held) = self.refused.lock() {
            *held = r.clone();
        }
    }

    /// What planning a rung reads of the ladder.
    fn plan_inputs(&self) -> rung_plan::Inputs<'c> {
        rung_plan::Inputs {
            ctx: self.ctx,
            scenario: self.scenario,
            client: self.client,
            tokens: self.tokens,
        }
    }

    /// Run every repeat of every rung into `writer`'s folder and finish it.
    pub async fn run(
        &self,
        writer: &mut RunWriter,
        stop: watch::Receiver<bool>,
    ) -> Result<RunOutcome, RunError> {
        let scenario = self.scenario;
        let rates = scenario.rungs();
        let mut c = Climb {
            held: (0..rates.len()).map(|_| Held::new()).collect(),
            rates,
            log: Vec::new(),
            said: Said::default(),
            // A shard starts every rung at the instant all shards share (the cooldown
            // included).
            timeline: self.ctx.opts.shard.as_ref().map(|s| {
                shard::Timeline::new(
                    s.start_at,
                    s.drain.unwrap_or(scenario.endpoint.request_timeout.0),
                    scenario.load.cooldown.0,
                )
            }),
        };
        let interrupted = self.climb(&mut c, writer, &stop).await?;
        if interrupted {
            self.flush(writer, &c.rates, &mut c.held)?;
        }
        self.finish_ladder(writer, c, interrupted)
    }

    /// Every repeat of every rung, repeats interleaved; true when a signal (or a
    /// measurement cut short) stopped the ladder.
    async fn climb(
        &self,
        c: &mut Climb,
        writer: &mut RunWriter,
        stop: &watch::Receiver<bool>,
    ) -> Result<bool, RunError> {
        let n_repeats = self.scenario.load.repeats.max(1);
        for repeat in 0..n_repeats {
            if n_repeats > 1 {
                self.start_repeat(repeat, n_repeats, &mut c.log);
            }
            for idx in 0..c.rates.len() {
                if *stop.borrow() {
                    return Ok(true);
                }
                if self.rung_once(c, writer, stop, idx, repeat).await? {
                    return Ok(true);
                }
                let last = repeat + 1 == n_repeats && idx + 1 == c.rates.len();
                if !last && c.timeline.is_none() && cooled_down(self.scenario, stop).await {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The line before repeat `repeat` of a repeated ladder (and the simulator's new
    /// speed, when it drifts).
    fn start_repeat(&self, repeat: u32, n_repeats: u32, log: &mut Vec<String>) {
        let factor = self.sim.map(|s| s.start_run(u64::from(repeat)));
        let drift = factor
            .filter(|f| *f != 1.0)
            .map(|f| format!(" (simulator speed x{f:.3})"))
            .unwrap_or_default();
        if !self.ctx.opts.quiet {
            self.ctx
                .opts
                .notes
                .err(&format!("repeat {} of {n_repeats}{drift}", repeat + 1));
        }
        log.push(format!("repeat {} of {n_repeats}{drift}", repeat + 1));
    }

    /// Measure repeat `repeat` of rung `idx` and keep it; write the rung's files after its
    /// last repeat. True when the measurement was cut short; a rejection writes what the
    /// ladder holds and ends it with the error.
    async fn rung_once(
        &self,
        c: &mut Climb,
        writer: &mut RunWriter,
        stop: &watch::Receiver<bool>,
        idx: usize,
        repeat: u32,
    ) -> Result<bool, RunError> {
        let rate = c.rates[idx];
        // Shard 0 alone scrapes: every shard would read the same server.
        let first_shard = self
            .ctx
            .opts
            .shard
            .as_ref()
            .is_none_or(|s| s.shard.index == 0);
        let scrape = self.scrape.filter(|_| repeat == 0 && first_shard);
        // The last rung measured below this one in this repeat, for the failure
        // warning's "did it grow with the load".
        let below: Vec<&RungSummary> = c.held[..idx]
            .iter()
            .filter_map(|h| h.summaries.get(repeat as usize))
            .filter(|s| s.rate < rate)
            .collect();
        let lower = failures::LowerRung::below(&below);
        let at = At {
            idx,
            rate,
            repeat,
            lower,
            scrape,
            timeline: c.timeline.as_mut(),
        };
        let out = Out {
            stop,
            writer,
            log: &mut c.log,
            said: &mut c.said,
        };
        let m = self.measure(at, out).await?;
        let h = &mut c.held[idx];
        let (cut, rejected) = h.keep(m);
        if let Some(why) = rejected {
            h.whole = false;
            self.flush(writer, &c.rates, &mut c.held)?;
            writer.warn(why.to_string());
            let _ = writer.write_file("run.log", (c.log.join("\n") + "\n").as_bytes());
            return Err(why.into());
        }
        if cut {
            return Ok(true);
        }
        // A rung run for a duration wrote its files as it ran.
        let last = repeat + 1 == self.scenario.load.repeats.max(1);
        if last && !writer.info().rungs.iter().any(|e| e.rate == rate) {
            self.write(writer, rate, h)?;
        }
        Ok(false)
    }

    /// After the last rung (or a stop) with every measured rung written: the outlier
    /// warnings, run.log, the folder's status, and the outcome on the terminal.
    fn finish_ladder(
        &self,
        writer: &mut RunWriter,
        mut c: Climb,
        interrupted: bool,
    ) -> Result<RunOutcome, RunError> {
        let scenario = self.scenario;
        let rates = &c.rates;
        let summaries: Vec<RungSummary> = writer
            .info()
            .rungs
            .iter()
            .filter_map(|e| {
                let i = rates.iter().position(|r| *r == e.rate)?;
                Some(pooled(&c.held[i], scenario))
            })
            .collect();
        self.outlier_warnings(&summaries, writer, &mut c.log);
        let _ = writer.write_file("run.log", (c.log.join("\n") + "\n").as_bytes());
        let complete = writer.info().rungs.iter().filter(|e| e.complete).count();
        let (status, detail) = if interrupted {
            (
                RunStatus::Interrupted,
                Some(format!(
                    "stopped by a signal after {complete} of {} rungs",
                    c.rates.len()
                )),
            )
        } else {
            (RunStatus::Complete, None)
        };
        let info = writer
            .finish(status, detail, Utc::now())
            .map_err(RunError::from)?;
        let dir = writer.dir().to_path_buf();
        print_outcome(self.ctx.opts, &dir, scenario, &summaries);
        if interrupted {
            return Err(RunError::Interrupted {
                dir,
                complete,
                total: c.rates.len(),
            });
        }
        Ok(RunOutcome {
            dir,
            info,
            rungs: summaries,
        })
    }

    /// A repeat far from the others (a cold cache, a restart): said now, and refused by
    /// `ladder bless` without --force.
    fn outlier_warnings(
        &self,
        summaries: &[RungSummary],
        writer: &mut RunWriter,
        log: &mut Vec<String>,
    ) {
        for s in summaries.iter().filter(|s| s.repeats.len() >= 2) {
            for o in crate::metrics::outliers::of_rung(s.rate, &s.repeats) {
                let w = format!(
                    "rung {}: a repeat far from the others: {}; `ladder bless` refuses this run \
                     without --force (docs/gate.md, \"Outlier runs\")",
                    self.scenario.load_kind().level(s.rate),
                    o.describe()
                );
                if !self.ctx.opts.quiet {
                    self.ctx.opts.notes.err(&format!("warning: {w}"));
                }
                log.push(format!("warning: {w}"));
                writer.warn(w);
            }
        }
    }

    /// Write every rung measured at least once and not yet written, with what it has
    /// (incomplete: it lacks repeats, or one was cut short).
    fn flush(
        &self,
        writer: &mut RunWriter,
        rates: &[f64],
        held: &mut [Held],
    ) -> Result<(), RunError> {
        for (idx, &rate) in rates.iter().enumerate() {
            let h = &mut held[idx];
            let written = writer.info().rungs.iter().any(|e| e.rate == rate);
            if !written && !h.summaries.is_empty() {
                h.whole = false;
                self.write(writer, rate, h)?;
            }
        }
        Ok(())
    }

    /// Write a rung's files from every repeat it has.
    fn write(&self, writer: &mut RunWriter, rate: f64, h: &Held) -> Result<(), RunError> {
        let summary = pooled(h, self.scenario);
        let per: Vec<&[RequestRecord]> = h.records.iter().map(Vec::as_slice).collect();
        let complete = h.whole && h.summaries.len() == self.scenario.load.repeats.max(1) as usize;
        writer
            .write_rung_repeats(&summary, &per, complete)
            .map_err(RunError::from)?;
        if let Some(text) = &h.server_text {
            writer
                .write_file(&server_metrics_file_name(rate), text.as_bytes())
                .map_err(RunError::from)?;
        }
        Ok(())
    }

    /// Measure one repeat of one rung ([`At`]) into `out`; returns the measurement with,
    /// when scraped, the server-metrics file text.
    pub(super) async fn measure(&self, at: At<'_>, out: Out<'_>) -> Result<Measured, RunError> {
        let At {
            idx,
            rate,
            repeat,
            lower,
            scrape,
            timeline,
        } = at;
        let Out {
            stop,
            writer,
            log,
            said,
        } = out;
        let rung_at = rung_plan::RungAt { idx, rate, repeat };
        let mut planned =
            rung_plan::plan_rung(self.plan_inputs(), rung_at, stop, writer, log, timeline).await?;
        let kind = planned.kind;
        let mut bar = self.bar(&planned, idx, rate, repeat);
        let base = self.rung_context(&planned, rate);
        let mut sink = open_sink(writer, &planned, &base)?;
        let scraper = start_scraper(scrape, planned.warmed_rx.take(), &planned);
        let rung_plan::RungPlan {
            send,
            warmup,
            n,
            timed,
            replay,
            inexact,
            groups,
            ..
        } = planned;
        let mut run = rung::run_rung(
            self.client.clone(),
            send,
            stop.clone(),
            STOP_GRACE,
            &mut bar,
            sink.as_mut().map(|s| s as &mut dyn rung::RecordSink),
            self.refusals_carried(),
        )
        .await;
        self.carry_refusals(&run.refusals);
        let scraped = match scraper {
            Some(s) => Some(s.finish().await),
            None => None,
        };
        tag_prefix_groups(&mut run.records, &groups);
        let cut = run.interrupted || run.rejected.is_some();
        let ctx = RungContext {
            interrupted: cut,
            ..base
        };
        let (mut summary, streamed) = self.summary_of(&run.records, sink, &ctx)?;
        summary.offered_rate = self.offered_rate(replay, rate, warmup + n);
        let level = kind.level(rate);
        let server_text = match (&scraped, scrape) {
            (Some(sc), Some(setup)) => {
                let told = &mut Told {
                    writer: &mut *writer,
                    said: &mut *said,
                    bar: &mut bar,
                };
                self.server_part(sc, setup, &mut summary, &level, told)
                    .await
            }
            _ => None,
        };
        bar.finish(&summary);
        let which = if self.scenario.load.repeats > 1 {
            format!(" (repeat {})", repeat + 1)
        } else {
            String::new()
        };
        log.push(log_line(rate, &which, run.sent, &summary));
        let said_of = RungSaid {
            level: &level,
            which: &which,
            abandoned: run.abandoned,
            stopped: run.rejected.is_some(),
            inexact,
            replayed: replay.is_some(),
            timed,
            lower: lower.as_ref(),
        };
        let mut told = Told {
            writer,
            said,
            bar: &mut bar,
        };
        self.rung_warnings(&summary, &said_of, &mut told);
        if let Some((stream, late)) = streamed {
            streamed_rung(&summary, stream, late, cut, &level, &mut told)?;
        }
        let rejected = run.rejected.clone().map(|rejection| super::RungRejected {
            kind,
            rate,
            rejection,
        });
        Ok(Measured {
            records: run.records,
            summary,
            interrupted: run.interrupted,
            rejected,
            server_text,
        })
    }

    /// The rate a ramp or a trace replay offered (`None` for a steady rung): a trace's at
    /// its speed, a ramp's over its length.
    fn offered_rate(
        &self,
        replay: Option<&super::prepare::Replay>,
        rate: f64,
        requests: usize,
    ) -> Option<f64> {
        match (replay, &self.scenario.load.ramp) {
            (Some(r), _) => Some(r.trace.offered_rate(rate)),
            (None, Some(ramp)) => Some(requests as f64 / ramp.over.0.as_secs_f64()),
            _ => None,
        }
    }

    /// The rung's summary (a timed rung's from its streamed files, with the stream and its
    /// late arrivals), its ramp's window table included.
    fn summary_of(
        &self,
        records: &[RequestRecord],
        sink: Option<soak::SoakSink>,
        ctx: &RungContext,
    ) -> Result<(RungSummary, Streamed), RunError> {
        let (mut summary, streamed) = match sink {
            Some(sink) => {
                let (summary, stream, late, failed) = sink.finish(ctx);
                if let Some(e) = failed {
                    return Err(e.into());
                }
                (summary, Some((stream, late)))
            }
            None => (summarize(records, ctx), None),
        };
        if let Some(ramp) = &self.scenario.load.ramp {
            summary.ramp = Some(crate::metrics::ramp::report(
                records,
                ramp,
                &self.scenario.slo,
            ));
        }
        Ok((summary, streamed))
    }

    /// The rung's progress bar, at its step of the whole ladder.
    fn bar(
        &self,
        planned: &rung_plan::RungPlan<'_>,
        idx: usize,
        rate: f64,
        repeat: u32,
    ) -> progress::RungBar {
        let quiet = self.ctx.opts.quiet;
        let rungs = self.scenario.rungs().len();
        let repeats = self.scenario.load.repeats.max(1);
        match planned.timed {
            Some(d) => progress::RungBar::timed(planned.kind, rate, d, quiet),
            None => {
                progress::RungBar::new(planned.kind, rate, planned.requests_total as u64, quiet)
            }
        }
        .at_step(idx + 1, rungs, repeat + 1, repeats)
        .with_notes(self.ctx.opts.notes.clone())
    }

    /// The rung's context for its summary, from its plan (not interrupted).
    fn rung_context(&self, planned: &rung_plan::RungPlan<'_>, rate: f64) -> RungContext {
        let scenario = self.scenario;
        RungContext {
            rate,
            load: planned.kind,
            // vLLM writes its default burstiness (1) for a concurrency run.
            burstiness: if planned.closed.is_some() {
                1.0
            } else {
                planned.burstiness
            },
            max_concurrency: planned
                .closed
                .map_or(planned.max_concurrency, |u| Some(u.count)),
            slo: scenario.slo.clone(),
            inexact_prompts: planned.inexact,
            interrupted: false,
            pooling: (!scenario.endpoint.api.generates()).then_some(scenario.endpoint.api),
        }
    }

    /// The server's side of a scraped rung: its summary into `summary`, the warnings said once
    /// a run (a failed scrape, dropped values), the server's identity (asked once), and the
    /// server-metrics file text.
    async fn server_part(
        &self,
        sc: &servermetrics::RungScrapes,
        setup: &ScrapeSetup,
        summary: &mut RungSummary,
        level: &str,
        told: &mut Told<'_>,
    ) -> Option<String> {
        summary.server = ServerSummary::from_scrapes(&sc.scrapes, sc.failures);
        if let (Some(e), false) = (&sc.first_error, told.said.scrape_failed) {
            told.said.scrape_failed = true;
            let w = format!(
                "cannot scrape server metrics at {}: {e}; the run goes on without them \
                 (set server_metrics.url, or server_metrics.enabled: false)",
                setup.shown_url
            );
            told.bar.println(&format!("warning: {w}"));
            told.writer.warn(w);
        }
        if let (Some(first), false) = (&sc.dropped.first, told.said.dropped) {
            told.said.dropped = true;
            // A metric name comes from the server: it may echo the key.
            let first = self.client.redactor().redact(first).into_owned();
            let w = format!(
                "the server metrics page at {} gave values that are not values, dropped from \
                 the results: {} in rung {level} (first: {first}); values are kept when finite, \
                 at most {:e} and, for counters, histograms and mapped metrics, not negative",
                setup.shown_url,
                sc.dropped.count,
                servermetrics::sanitize::MAX_SERVER_VALUE,
            );
            told.bar.println(&format!("warning: {w}"));
            told.writer.warn(w);
        }
        if let (Some(engine), false) = (&summary.server.engine, told.said.identity_asked) {
            told.said.identity_asked = true;
            if let Some(mut id) = setup.identify(engine).await {
                let r = self.client.redactor();
                for v in [&mut id.version, &mut id.model].into_iter().flatten() {
                    *v = r.redact(v).into_owned();
                }
                told.writer.set_server(id);
            }
        }
        if sc.scrapes.is_empty() {
            return None;
        }
        let mut text = String::new();
        for s in &sc.scrapes {
            text.push_str(&servermetrics::series_line(s).to_string());
            text.push('\n');
        }
        Some(text)
    }

    /// The rung's warnings: abandoned requests, inexact prompts, and the summary's own
    /// (rung, failure, token and cache warnings), each said once a run.
    fn rung_warnings(&self, summary: &RungSummary, r: &RungSaid<'_>, told: &mut Told<'_>) {
        let scenario = self.scenario;
        let level = r.level;
        if r.abandoned > 0 {
            // A rung stopped for deterministic rejections abandons its stragglers the same way.
            let when = if r.stopped {
                "when the rung was stopped"
            } else {
                "at the interrupt"
            };
            let (requests, were) = if r.abandoned == 1 {
                ("request", "was")
            } else {
                ("requests", "were")
            };
            told.warn(format!(
                "rung {level}: {} {requests} in flight {when} {were} recorded as interrupted \
                 (request lines of class `interrupted`; not failures, not in the error rate)",
                r.abandoned
            ));
        }
        if r.inexact > 0 {
            let length = if r.replayed {
                "their recorded length".to_string()
            } else {
                format!("exactly {} tokens long", scenario.workload.input_tokens)
            };
            told.warn(format!(
                "rung {level}: {} prompts could not be made {length} (within 1 token)",
                r.inexact
            ));
        }
        let token_warnings = warnings::token_warnings(
            summary,
            scenario.endpoint.api,
            scenario.workload.ignore_eos,
            self.tokenizer_mismatch,
        );
        let failure = failures::failure_warning(summary, r.lower);
        let cache = warnings::cache_warning(
            summary,
            &scenario.workload,
            r.timed.is_some(),
            self.prompt_overhead,
        );
        for w in warnings::rung_warnings_for(summary, r.timed)
            .into_iter()
            .chain(failure)
            .chain(token_warnings)
            .chain(cache)
        {
            told.warn(format!("{w}{}", r.which));
        }
    }
}

/// A timed rung's request stream and its late arrivals.
type Streamed = Option<(crate::results::RequestStream, u64)>;

/// Which measurement [`Ladder::measure`] takes: repeat `repeat` of rung `idx` at `rate`.
pub(super) struct At<'s> {
    pub idx: usize,
    pub rate: f64,
    pub repeat: u32,
    /// The last rung measured below this one, for the failure warning's "did it grow with
    /// the load".
    pub lower: Option<failures::LowerRung>,
    /// The scrape of the server's metrics, when this measurement scrapes.
    pub scrape: Option<&'s ScrapeSetup>,
    /// A shard's shared timeline of rung starts.
    pub timeline: Option<&'s mut shard::Timeline>,
}

/// Where a measurement goes and what it has said: shared by every measurement of a ladder
/// (its rungs and repeats, or a search's probes).
pub(super) struct Out<'o> {
    pub stop: &'o watch::Receiver<bool>,
    pub writer: &'o mut RunWriter,
    pub log: &'o mut Vec<String>,
    pub said: &'o mut Said,
}

/// Warnings a run says once, whichever measurement meets them first.
#[derive(Default)]
pub(super) struct Said {
    scrape_failed: bool,
    dropped: bool,
    identity_asked: bool,
}

/// The terminal line and the result folder a warning goes to.
struct Told<'t> {
    writer: &'t mut RunWriter,
    said: &'t mut Said,
    bar: &'t mut progress::RungBar,
}

impl Told<'_> {
    /// A warning said once: a repeat says what the first one said.
    fn warn(&mut self, w: String) {
        if !self.writer.info().warnings.contains(&w) {
            self.bar.println(&format!("warning: {w}"));
            self.writer.warn(w);
        }
    }
}

/// What a rung's warnings are about, beside its summary.
struct RungSaid<'r> {
    level: &'r str,
    /// ` (repeat N)` when the rung is repeated.
    which: &'r str,
    abandoned: u64,
    /// The rung was stopped for deterministic rejections.
    stopped: bool,
    inexact: u64,
    replayed: bool,
    timed: Option<Duration>,
    lower: Option<&'r failures::LowerRung>,
}

/// The run.log line of a measured rung.
fn log_line(rate: f64, which: &str, sent: u64, summary: &RungSummary) -> String {
    format!(
        "rung {rate}{which}: sent {sent} finished {} completed {} failed {} interrupted {} qps {:.3}",
        summary.num_prompts + summary.warmup_requests,
        summary.completed,
        summary.failed,
        summary.interrupted_requests,
        summary.request_throughput
    )
}

/// A rung run for a duration: its warnings and the end of its streamed files.
fn streamed_rung(
    summary: &RungSummary,
    stream: crate::results::RequestStream,
    late: u64,
    cut: bool,
    level: &str,
    told: &mut Told<'_>,
) -> Result<(), RunError> {
    if late > 0 {
        told.warn(format!(
            "rung {level}: {late} {}; max_concurrent_requests and \
             max_output_tokens_per_s may be off by them",
            crate::results::load::LATE_ARRIVALS
        ));
    }
    // A rung whose warmup took all of its duration measured nothing: not a result.
    let empty = summary.num_prompts == 0;
    if empty && !cut {
        told.warn(format!(
            "rung {level}: no request was measured: its {} warmup requests took all of \
             load.duration, so the rung is marked incomplete; lower \
             load.warmup_requests or raise load.duration",
            summary.warmup_requests
        ));
    }
    told.writer
        .finish_streamed_rung(summary, stream, !cut && !empty)
        .map_err(RunError::from)
}

/// A rung run for a duration writes its files as it runs: the sink they stream to.
fn open_sink<'w>(
    writer: &'w mut RunWriter,
    planned: &rung_plan::RungPlan<'_>,
    base: &RungContext,
) -> Result<Option<soak::SoakSink<'w>>, RunError> {
    match planned.timed {
        Some(d) => soak::SoakSink::open(
            writer,
            base.clone(),
            planned.kind,
            d,
            planned.groups.clone(),
        )
        .map(Some)
        .map_err(RunError::from),
        None => Ok(None),
    }
}

/// Scrape the server's metrics (when this measurement scrapes) from the rung's first
/// measured request on: a concurrency rung says when its warmup has finished (`warmed_rx`),
/// any other's is known from its plan.
fn start_scraper(
    scrape: Option<&ScrapeSetup>,
    warmed_rx: Option<watch::Receiver<Option<Instant>>>,
    planned: &rung_plan::RungPlan<'_>,
) -> Option<servermetrics::Scraper> {
    scrape.map(|s| match warmed_rx {
        Some(rx) => s.start_when(rx),
        None => s.start(
            planned
                .start
                .unwrap_or_else(|| Instant::now() + rung::START_LEAD)
                + planned.first_measured,
        ),
    })
}

/// Mark each record with its prompt's prefix group (`groups[index]`) and whether it was the
/// rung's first request of that group in send order; nothing without groups.
fn tag_prefix_groups(records: &mut [RequestRecord], groups: &[u32]) {
    if groups.is_empty() {
        return;
    }
    // The first index of each group in send order (the prompts' order).
    let mut first: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for (i, &g) in groups.iter().enumerate() {
        first.entry(g).or_insert(i as u32);
    }
    for r in records {
        if let Some(&g) = groups.get(r.index as usize) {
            r.prefix_group = Some(g);
            r.prefix_first = first.get(&g) == Some(&r.index);
        }
    }
}

/// The summary of a rung from its repeats: the one repeat's own, or their pool.
pub(super) fn pooled(h: &Held, scenario: &Scenario) -> RungSummary {
    if h.summaries.len() == 1 {
        return h.summaries[0].clone();
    }
    let mut s = pooled_repeats(h);
    if let Some(ramp) = &scenario.load.ramp {
        let all: Vec<RequestRecord> = h.records.iter().flatten().cloned().collect();
        s.ramp = Some(crate::metrics::ramp::report(&all, ramp, &scenario.slo));
    }
    s
}

/// The pool of several repeats' summaries.
fn pooled_repeats(h: &Held) -> RungSummary {
    let all: Vec<RequestRecord> = h.records.iter().flatten().cloned().collect();
    let first = &h.summaries[0];
    let ctx = RungContext {
        rate: first.rate,
        load: first.load,
        burstiness: first.burstiness,
        max_concurrency: first.max_concurrency,
        slo: Default::default(),
        inexact_prompts: 0,
        interrupted: false,
        pooling: first.pooling,
    };
    let all = summarize(&all, &ctx);
    let mut pooled = repeats::pool(h.summaries.clone(), all.latency, all.reasoning);
    pooled.prefix = all.prefix;
    pooled.models = repeats::pool_models(all.models, pooled.duration_s);
    pooled
}
