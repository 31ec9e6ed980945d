//! Driving a capacity search (`load.search`): each probe is measured as an ordinary rung of
//! the result folder (its usual files), its requests are judged against the SLO by
//! [`crate::capacity`], which picks the next probe, and the search's path and answer go to
//! `capacity.json`. An uncertain probe's extensions, and the repeats of the bracket's ends,
//! are further measurements of the same rung, each with arrivals and prompts of its own,
//! written as its repeats; a probe's files are written when the search ends (a bound may be
//! measured again after later probes): on a stop, a rejection or an error too, so nothing
//! measured is lost — but a process killed outright (SIGKILL, out of memory) leaves only
//! run.json and run.log.

use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;
use tokio::time::Instant;

use super::ladder::{cooled_down, pooled, At, Held, Ladder, Out, Said};
use super::{failures, print_outcome, RunError, RunOutcome};
use crate::capacity::file::{level_text, slo_text};
use crate::capacity::{
    CapacityFile, Obs, Over, PerRequest, Precision, Search, SearchConfig, SloMetric, SloTerm, Step,
    Stop, CAPACITY_FILE,
};
use crate::metrics::RungSummary;
use crate::record::RequestRecord;
use crate::results::{server_metrics_file_name, RunStatus, RunWriter};
use crate::scenario::{LoadKind, Scenario, SearchOver, Slo, SloBound, Threshold};

/// The search's settings from a scenario with `load.search`.
pub fn config_of(scenario: &Scenario) -> Result<SearchConfig, SearchConfigError> {
    let s = scenario
        .load
        .search
        .as_ref()
        .ok_or_else(|| SearchConfigError::NoSearch {
            scenario: scenario.name.clone(),
        })?;
    let slo = s
        .slo
        .iter()
        .map(|b| term_of(b, &scenario.slo))
        .collect::<Result<Vec<_>, SearchConfigError>>()?;
    let chunk =
        u64::from(scenario.workload.requests_per_rung) + u64::from(scenario.load.warmup_requests);
    let (budget_requests, budget_time) = match &s.budget {
        Some(b) => (b.requests, b.duration.map(|d| d.0)),
        None => (
            Some(chunk * crate::scenario::search::DEFAULT_BUDGET_MEASUREMENTS),
            None,
        ),
    };
    Ok(SearchConfig {
        over: match s.over {
            SearchOver::Rate => Over::Rate,
            SearchOver::Users => Over::Users,
        },
        slo,
        start: s.start,
        min: s.min_level(),
        max: s.max,
        growth: s.growth,
        precision: match s.precision {
            Threshold::Relative(r) => Precision::Relative(r),
            Threshold::Absolute(a) => Precision::Absolute(a),
        },
        confidence: s.confidence,
        chunk_requests: chunk,
        probe_requests: u64::from(scenario.workload.requests_per_rung),
        max_extensions: s.max_extensions,
        confirm: s.confirm,
        budget_requests,
        budget_time,
    })
}

/// One SLO term of `load.search`: a goodput term counts requests good by the scenario's
/// `slo:` block (the rule of `request_goodput`), and is bounded by `min`; every other term
/// by `max` (`ladder validate` has said which is missing).
fn term_of(b: &SloBound, per_request: &Slo) -> Result<SloTerm, SearchConfigError> {
    let metric = SloMetric::parse(&b.metric)?;
    let bound = if metric.is_floor() { b.min } else { b.max };
    let side = if metric.is_floor() { "min" } else { "max" };
    let bound = bound.ok_or_else(|| SearchConfigError::NoBound {
        metric: b.metric.clone(),
        side,
    })?;
    let mut term = SloTerm::at_most(metric, bound);
    if metric == SloMetric::Goodput {
        term.per_request = PerRequest {
            ttft_ms: per_request.ttft_ms,
            tpot_ms: per_request.tpot_ms,
            e2e_ms: per_request.e2e_ms,
        };
        if term.per_request.is_empty() {
            return Err(SearchConfigError::GoodputWithoutSlo);
        }
    }
    Ok(term)
}

/// Why `load.search` cannot be turned into a search (`ladder validate` says the same
/// earlier, with the file's locations).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchConfigError {
    /// The scenario has no `load.search`.
    #[error("scenario `{scenario}` has no load.search")]
    NoSearch { scenario: String },
    /// A term's metric is no SLO metric.
    #[error(transparent)]
    Metric(#[from] crate::capacity::SloMetricError),
    /// A term without the bound its metric needs (`side`: `min` or `max`).
    #[error("SLO term `{metric}` needs `{side}`")]
    NoBound { metric: String, side: &'static str },
    /// A goodput term with no per-request bound to count good requests by.
    #[error(
        "a `goodput` SLO term needs a per-request bound in the scenario's \
                        `slo:` block (ttft_ms, tpot_ms or e2e_ms)"
    )]
    GoodputWithoutSlo,
}

/// What a measured request tells the SLO, `slo` the scenario's per-request bounds (what
/// makes it good); `None` for warmup and for requests abandoned by a stop (they have no
/// outcome).
pub fn obs_of(r: &RequestRecord, slo: &Slo) -> Option<Obs> {
    if r.warmup || r.interrupted() {
        return None;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Some(Obs {
        failed: !r.ok(),
        good: crate::metrics::compute::meets_slo(r, slo),
        ttft_ms: r.ttft().map(ms),
        tpot_ms: r.tpot().map(ms),
        e2el_ms: r.ok().then(|| ms(r.e2e())),
    })
}

/// A value of a probe line: `412`, `0.0123`, `inf`.
fn val(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else if x.is_infinite() {
        String::from(if x > 0.0 { "inf" } else { "-inf" })
    } else if x.abs() < 1.0 {
        format!("{x:.4}")
    } else {
        level_text(x)
    }
}

/// The terminal's line for the probe just judged: its level, size, verdict, each term's
/// value and interval, and the bracket now.
fn probe_line(s: &Search, kind: LoadKind) -> String {
    use crate::capacity::ProbeVerdict;
    let word = |v: ProbeVerdict| match v {
        ProbeVerdict::Inside => "inside",
        ProbeVerdict::Outside => "OUTSIDE",
        ProbeVerdict::Uncertain => "uncertain",
    };
    let i = s.last_measured().expect("a probe was just recorded");
    let p = &s.probes()[i];
    // A probe's measurements come first, its repeats (judged alone) after them.
    let (what, terms, verdict, requests, chunks) = match p.repeats.last() {
        Some(r) => (
            format!(" repeat {}", p.repeats.len()),
            &r.terms,
            r.verdict,
            r.obs.len(),
            r.chunks,
        ),
        None => (String::new(), &p.terms, p.verdict, p.obs.len(), p.chunks),
    };
    let terms: Vec<String> = s
        .config()
        .slo
        .iter()
        .zip(terms)
        .map(|(t, j)| {
            let (side, bound) = t.bound_text();
            format!(
                "{} {} [{}, {}] ({side} {})",
                t.metric.label(),
                val(j.value),
                val(j.lo),
                val(j.hi),
                val(bound)
            )
        })
        .collect();
    let measurements = match chunks {
        1 => String::new(),
        c => format!(", {c} measurements"),
    };
    let open = verdict == ProbeVerdict::Uncertain && chunks <= s.config().max_extensions;
    let standing = match (p.repeats.is_empty(), p.disputed()) {
        (true, _) => String::new(),
        (false, _) if open => "; the repeat is extended".to_string(),
        // A repeat that stayed uncertain did not contradict the probe; it failed to confirm it.
        (false, true) => match p.dispute() {
            Some(ProbeVerdict::Uncertain) | None => format!(
                "; not confirmed (a repeat stayed uncertain): {} bounds nothing",
                kind.level(p.level)
            ),
            Some(v) => format!(
                "; disputed (a repeat was {}): {} bounds nothing",
                word(v),
                kind.level(p.level)
            ),
        },
        (false, false) => format!("; {} stands", word(p.verdict)),
    };
    let end = |x: Option<f64>| x.map_or("-".to_string(), level_text);
    format!(
        "probe {}{what}: {} ({requests} requests{measurements}): {}: {}{standing}; bracket [{}, {}]",
        i + 1,
        kind.level(p.level),
        word(verdict),
        terms.join(", "),
        end(p.bracket.0),
        end(p.bracket.1)
    )
}

/// The terminal's line before a level is measured again: an extension of an uncertain
/// probe, a repeat of a bound, or an extension of an uncertain repeat; `None` for a new
/// probe.
fn again_line(
    s: &Search,
    kind: LoadKind,
    level: f64,
    extension: u32,
    repeat: bool,
) -> Option<String> {
    let i = s.probes().iter().position(|p| p.level == level)?;
    let p = &s.probes()[i];
    let open = p
        .repeats
        .last()
        .filter(|r| r.verdict == crate::capacity::ProbeVerdict::Uncertain);
    Some(match (repeat, open) {
        (true, Some(r)) => format!(
            "probe {}: repeat {} uncertain at {} requests; measuring {} again (its extension {} of {})",
            i + 1,
            p.repeats.len(),
            r.obs.len(),
            kind.level(level),
            r.chunks,
            s.config().max_extensions
        ),
        (true, None) => format!(
            "probe {}: bounds the bracket; measuring {} again to confirm its verdict (repeat {} of {})",
            i + 1,
            kind.level(level),
            p.repeats.len() + 1,
            s.config().confirm
        ),
        (false, _) if extension > 0 => format!(
            "probe {}: uncertain at {} requests; measuring {} again (extension {extension} of {})",
            i + 1,
            p.obs.len(),
            kind.level(level),
            s.config().max_extensions
        ),
        (false, _) => return None,
    })
}

/// The terminal's first line of a search: what it looks for, from where, how precisely,
/// within what budget.
fn intro_line(cfg: &SearchConfig, kind: LoadKind) -> String {
    let budget = match (cfg.budget_requests, cfg.budget_time) {
        (Some(r), Some(t)) => format!("{r} requests or {}", crate::scenario::DurationStr(t)),
        (Some(r), None) => format!("{r} requests"),
        (None, Some(t)) => crate::scenario::DurationStr(t).to_string(),
        (None, None) => "no limit".into(),
    };
    format!(
        "searching for the capacity at {} from {} up to {} (precision {}, each verdict at {} % \
         confidence over up to {} looks, budget {budget})",
        slo_text(&cfg.slo),
        kind.level(cfg.start),
        kind.level(cfg.max),
        match cfg.precision {
            Precision::Relative(r) => format!("{} %", r * 100.0),
            Precision::Absolute(a) => format!("{a} {}", kind.unit()),
        },
        cfg.confidence * 100.0,
        1 + cfg.max_extensions
    )
}

/// A search between its measurements: the search itself, what each level measured so far,
/// the warnings said, and the lines of run.log.
struct Probing {
    search: Search,
    held: Vec<(f64, Held)>,
    said: Said,
    log: Vec<String>,
    /// Measurements made so far (each seeds its own arrivals and prompts).
    measured: usize,
}

/// One measurement the search asks for ([`Step::Measure`]).
#[derive(Clone, Copy)]
struct Ask {
    level: f64,
    extension: u32,
    repeat: bool,
}

impl Ladder<'_> {
    /// Run the search of `load.search` into `writer`'s folder and finish it.
    pub(super) async fn run_search(
        &self,
        writer: &mut RunWriter,
        stop: watch::Receiver<bool>,
    ) -> Result<RunOutcome, RunError> {
        let cfg = config_of(self.scenario).map_err(super::ScenarioError::from)?;
        let intro = intro_line(&cfg, self.scenario.load_kind());
        self.say_search(&intro);
        let search = Search::new(cfg);
        // Said now, so the user can stop and resize; capacity.json keeps it too.
        for advice in search.look_advice() {
            self.say_search(&format!("warning: capacity: {advice}"));
        }
        let mut p = Probing {
            search,
            held: Vec::new(),
            said: Said::default(),
            log: vec![intro],
            measured: 0,
        };
        let stopped = loop {
            let ask = match p.search.next() {
                Step::Stop(s) => break s,
                Step::Measure {
                    level,
                    extension,
                    repeat,
                } => Ask {
                    level,
                    extension,
                    repeat,
                },
            };
            if let Some(s) = self.probe(&mut p, writer, &stop, ask).await? {
                break s;
            }
        };
        self.write_done(writer, &p.held)?;
        self.finish_search(writer, p, stopped)
    }

    /// A search's line for the terminal (unless quiet).
    fn say_search(&self, line: &str) {
        if !self.ctx.opts.quiet {
            self.ctx.opts.notes.err(line);
        }
    }

    /// Make the measurement `ask` and record it in the search; `Some` when the search
    /// stops here (a signal, or a measurement cut short). A rejected measurement, or an
    /// error, writes the probes held so far and ends the search with the error.
    async fn probe(
        &self,
        p: &mut Probing,
        writer: &mut RunWriter,
        stop: &watch::Receiver<bool>,
        ask: Ask,
    ) -> Result<Option<Stop>, RunError> {
        let Ask {
            level,
            extension,
            repeat,
        } = ask;
        let kind = self.scenario.load_kind();
        if *stop.borrow() {
            return Ok(Some(Stop::Interrupted));
        }
        let t0 = Instant::now();
        if p.measured > 0 && cooled_down(self.scenario, stop).await {
            return Ok(Some(Stop::Interrupted));
        }
        if let Some(line) = again_line(&p.search, kind, level, extension, repeat) {
            self.say_search(&line);
            p.log.push(line);
        }
        let lower = p
            .held
            .iter()
            .filter(|(l, _)| *l < level)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .and_then(|(_, h)| h.summaries.last())
            .and_then(failures::LowerRung::of);
        // Every measurement has arrivals and prompts of its own (`idx` seeds them); the
        // server's metrics are scraped during a probe's first measurement.
        let scrape = self.scrape.filter(|_| extension == 0);
        let at = At {
            idx: p.measured,
            rate: level,
            repeat: extension,
            lower,
            scrape,
            timeline: None,
        };
        let out = Out {
            stop,
            writer,
            log: &mut p.log,
            said: &mut p.said,
        };
        let m = match self.measure(at, out).await {
            Ok(m) => m,
            Err(e) => {
                // Nothing measured is lost: the probes held so far get their rung files,
                // and the search so far its capacity.json.
                let _ = self.write_done(writer, &p.held);
                let _ = self.write_capacity(writer, &p.search, Stop::Failed, &mut p.log);
                return Err(e);
            }
        };
        p.measured += 1;
        let obs: Vec<Obs> = m
            .records
            .iter()
            .filter_map(|r| obs_of(r, &self.scenario.slo))
            .collect();
        let sent = m.records.len() as u64;
        let i = match p.held.iter().position(|(l, _)| *l == level) {
            Some(i) => i,
            None => {
                p.held.push((level, Held::new()));
                p.held.len() - 1
            }
        };
        let (cut, rejected) = p.held[i].1.keep(m);
        if let Some(why) = rejected {
            self.write_done(writer, &p.held)?;
            writer.warn(why.to_string());
            // The verdicts measured before stand: capacity.json keeps them and the bracket
            // they left, with status `failed` (compare, report and history read it).
            self.write_capacity(writer, &p.search, Stop::Failed, &mut p.log)?;
            let _ = writer.write_file("run.log", (p.log.join("\n") + "\n").as_bytes());
            return Err(why.into());
        }
        if cut {
            p.search.spend_cut(sent, t0.elapsed());
            return Ok(Some(Stop::Interrupted));
        }
        p.search.record(level, obs, sent, t0.elapsed());
        let line = probe_line(&p.search, kind);
        self.say_search(&line);
        p.log.push(line);
        Ok(None)
    }

    /// After the search stopped (`stopped`) and its probes' files are written: capacity.json,
    /// run.log, the folder's status, and the outcome on the terminal.
    fn finish_search(
        &self,
        writer: &mut RunWriter,
        mut p: Probing,
        stopped: Stop,
    ) -> Result<RunOutcome, RunError> {
        let interrupted = stopped == Stop::Interrupted;
        let file = self.write_capacity(writer, &p.search, stopped, &mut p.log)?;
        let _ = writer.write_file("run.log", (p.log.join("\n") + "\n").as_bytes());
        let complete = writer.info().rungs.iter().filter(|e| e.complete).count();
        let (status, detail) = if interrupted {
            (
                RunStatus::Interrupted,
                Some(format!(
                    "stopped by a signal after {complete} probes of a capacity search"
                )),
            )
        } else {
            (RunStatus::Complete, None)
        };
        let info = writer
            .finish(status, detail, Utc::now())
            .map_err(RunError::from)?;
        let dir = writer.dir().to_path_buf();
        let mut summaries: Vec<RungSummary> = p
            .held
            .iter()
            .map(|(_, h)| pooled(h, self.scenario))
            .collect();
        summaries.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        self.print_search(&dir, &summaries, &file);
        if interrupted {
            return Err(RunError::Interrupted {
                dir,
                complete,
                total: p.search.probes().len(),
            });
        }
        Ok(RunOutcome {
            dir,
            info,
            rungs: summaries,
        })
    }

    /// Write capacity.json with the search's answer, say its warnings and its last line.
    fn write_capacity(
        &self,
        writer: &mut RunWriter,
        search: &Search,
        stopped: Stop,
        log: &mut Vec<String>,
    ) -> Result<CapacityFile, RunError> {
        let answer = search.answer(stopped);
        let file = CapacityFile::of(search, answer);
        let json = serde_json::to_string_pretty(&file).expect("capacity.json serialises");
        writer
            .write_file(CAPACITY_FILE, (json + "\n").as_bytes())
            .map_err(RunError::from)?;
        // The first-look advice was said before the first probe: kept in the files, not
        // said twice.
        let said = search.look_advice();
        for w in &file.warnings {
            if !said.contains(w) {
                self.say_search(&format!("warning: capacity: {w}"));
            }
            writer.warn(format!("capacity: {w}"));
        }
        let done = format!(
            "search ended ({}) after {} probes, {} requests, {:.0} s: {}",
            answer.status.describe(),
            search.probes().len(),
            file.requests,
            file.spent_s,
            file.text
        );
        log.push(done.clone());
        self.say_search(&done);
        Ok(file)
    }

    /// The search's outcome on stdout: the rung table and the answer, or one JSON document.
    fn print_search(&self, dir: &std::path::Path, summaries: &[RungSummary], file: &CapacityFile) {
        let opts = self.ctx.opts;
        if opts.json {
            let analysis = crate::metrics::analyze(summaries, &self.scenario.slo, None).of_search();
            let v = serde_json::json!({
                "version": 1,
                "command": "run",
                "dir": dir.display().to_string(),
                "rungs": summaries,
                "analysis": analysis,
                "capacity": file,
            });
            opts.notes
                .out_line(&serde_json::to_string(&v).expect("serialises"));
        } else {
            print_outcome(opts, dir, self.scenario, summaries);
            if !opts.quiet && !opts.no_stdout {
                opts.notes.out_line(&file.text);
            }
        }
    }

    /// Write the files of every probe measured and not yet written. A probe is complete
    /// when none of its measurements was cut short.
    fn write_done(&self, writer: &mut RunWriter, held: &[(f64, Held)]) -> Result<(), RunError> {
        for (level, h) in held.iter() {
            let written = writer.info().rungs.iter().any(|e| e.rate == *level);
            if written || h.summaries.is_empty() {
                continue;
            }
            let summary = pooled(h, self.scenario);
            let per: Vec<&[RequestRecord]> = h.records.iter().map(Vec::as_slice).collect();
            writer
                .write_rung_repeats(&summary, &per, h.whole)
                .map_err(RunError::from)?;
            if let Some(text) = &h.server_text {
                writer
                    .write_file(&server_metrics_file_name(*level), text.as_bytes())
                    .map_err(RunError::from)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(metric: &str, max: Option<f64>, min: Option<f64>) -> SloBound {
        SloBound {
            metric: metric.into(),
            max,
            min,
        }
    }

    #[test]
    fn each_unusable_slo_term_is_its_own_case_with_its_words() {
        let none = Slo::default();
        let e = term_of(&bound("p99_ttft_ms", None, Some(1.0)), &none).unwrap_err();
        assert_eq!(
            e,
            SearchConfigError::NoBound {
                metric: "p99_ttft_ms".into(),
                side: "max"
            }
        );
        assert_eq!(e.to_string(), "SLO term `p99_ttft_ms` needs `max`");
        let e = term_of(&bound("goodput", None, Some(0.9)), &none).unwrap_err();
        assert_eq!(e, SearchConfigError::GoodputWithoutSlo);
        assert!(e
            .to_string()
            .starts_with("a `goodput` SLO term needs a per-request bound"));
        let e = term_of(&bound("mean_ttft_ms", Some(5.0), None), &none).unwrap_err();
        assert!(matches!(
            e,
            SearchConfigError::Metric(crate::capacity::SloMetricError::Mean { .. })
        ));
        let slo = Slo {
            ttft_ms: Some(500.0),
            ..Slo::default()
        };
        assert!(term_of(&bound("goodput", None, Some(0.9)), &slo).is_ok());
    }
}
