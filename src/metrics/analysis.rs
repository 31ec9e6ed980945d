//! Run-level analysis over a ladder's rung summaries: where the server saturates (the
//! knee), the highest rate that still meets every SLO, and the seed document's baseline
//! method (every rung's latency and throughput as multiples of the baseline rung, and the
//! "best value" range where throughput still grows faster than latency).
//!
//! Definitions (all over rungs sorted by offered rate):
//!
//! * **Knee**: the first rung where any of these holds (several may hold at once):
//!   - *error rate*: `error_rate > slo.max_error_rate` (default [`DEFAULT_MAX_ERROR_RATE`],
//!     the seed's 5 % overload line);
//!   - *first rung past saturation* (open loop, the first rung only, reported as a throughput
//!     plateau): the server answered less than [`FIRST_RUNG_MIN_FRACTION`] (half) of what
//!     keeping up would have answered, `n / duration < 0.5 x n / (n / achieved_rate +
//!     min_e2e)` (n measured requests: sent at `achieved_rate`, the last answered no sooner
//!     than the quickest request took; with repeats, each repeat's times summed); the queue
//!     grew through the rung. A rung with failures is not judged so (a timeout stretches
//!     its duration);
//!   - *throughput plateau*: the throughput gained over the previous rung is less than
//!     [`PLATEAU_FRACTION`] (10 %) of the offered rate added, i.e.
//!     `qps[i] - qps[i-1] < 0.10 * (rate[i] - rate[i-1])`;
//!   - *TTFT jump*: `median_ttft[i] > 2 x median_ttft[i-1]` ([`TTFT_JUMP_FACTOR`]) and, when
//!     `slo.ttft_ms` is set, `median_ttft[i] > slo.ttft_ms` (a jump that stays inside the SLO
//!     is not a knee).
//! * **Meets the SLO** (per rung): at least one request completed, `error_rate <=
//!   max_error_rate`, and, when any latency bound (`ttft_ms`, `tpot_ms`, `e2e_ms`) is set,
//!   `request_goodput >= 0.95 x request_throughput` ([`GOODPUT_MIN_FRACTION`]: at least 95 % of
//!   completed requests meet every latency bound).
//! * **Highest rate within SLO**: the highest rate R such that the rung at R *and every lower
//!   rung* meet the SLO (a lucky rung above a failing one does not count).
//! * **Multiples**: against the baseline rung (the rung at `baseline_rate`, else the first):
//!   `qps / qps_base`, `median_ttft / median_ttft_base`, `median_tpot / median_tpot_base`;
//!   the *latency multiple* is the larger of the TTFT and TPOT multiples (the worse one is
//!   what users feel). A multiple is absent when the baseline value is zero.
//! * **Best-value range**: from the baseline rung up to the last rung of the unbroken run of
//!   rungs above it where the throughput multiple grows by a larger factor than the latency
//!   multiple over the previous rung (`tm[i]/tm[i-1] > lm[i]/lm[i-1]`). Absent when even the
//!   first rung above the baseline does not qualify.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::latency::Latency;
use super::summary::RungSummary;
use crate::format::trimmed;
use crate::scenario::types::Slo;
use crate::scenario::LoadKind;

/// Error-rate bound used when the scenario's SLO sets none (the seed's overload line).
pub const DEFAULT_MAX_ERROR_RATE: f64 = 0.05;
/// Throughput plateau: less than this fraction of the offered increase was realised.
pub const PLATEAU_FRACTION: f64 = 0.10;
/// TTFT jump: the median TTFT grew by more than this factor over the previous rung.
pub const TTFT_JUMP_FACTOR: f64 = 2.0;
/// A rung meets its latency SLOs when goodput is at least this fraction of throughput.
pub const GOODPUT_MIN_FRACTION: f64 = 0.95;
/// A first open-loop rung is past saturation when the server answered less than this
/// fraction of what keeping up would have answered over the rung. Half: the allowance for
/// the rung's last answer is its quickest request's time, so a rung that kept up but ended
/// on a long answer (varied output lengths) answers less than it, though rarely under half
/// (200 requests at 2 req/s ending on a 40 s answer: 72 %).
pub const FIRST_RUNG_MIN_FRACTION: f64 = 0.5;

/// Why a rung is the knee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KneeReason {
    /// The error rate passed the SLO bound.
    ErrorRate,
    /// The error rate passed the SLO bound with requests the server rejected (`client_4xx`,
    /// `auth`): the requests are wrong (too long for the context, unknown model, missing
    /// key), so this is where the configuration fails, not where the server saturates.
    Rejected,
    /// Throughput stopped growing with the offered rate.
    ThroughputPlateau,
    /// Median TTFT jumped (and left the SLO, if one is set).
    TtftJump,
}

impl fmt::Display for KneeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KneeReason::ErrorRate => "error rate over SLO",
            KneeReason::Rejected => "requests rejected (client error, not overload)",
            KneeReason::ThroughputPlateau => "throughput plateau",
            KneeReason::TtftJump => "TTFT jump",
        })
    }
}

/// The saturation knee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Offered rate of the knee rung (req/s).
    pub rate: f64,
    /// Every test that fired on this rung, in the order error rate, plateau, TTFT.
    pub reasons: Vec<KneeReason>,
    /// One sentence per reason with the numbers behind it.
    pub detail: Vec<String>,
}

/// A range of offered rates, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateRange {
    pub from: f64,
    pub to: f64,
}

/// One rung as the analysis sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungAnalysis {
    /// Offered rate (req/s).
    pub rate: f64,
    /// Completed requests per second (the seed's QPS).
    pub qps: f64,
    /// Failed / measured.
    pub error_rate: f64,
    /// Median TTFT, ms; left out of analysis.json for a pooled rung (embeddings), which has
    /// none (NaN in memory).
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub median_ttft_ms: f64,
    /// Median TPOT, ms; left out like `median_ttft_ms`.
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub median_tpot_ms: f64,
    /// QPS / baseline QPS.
    pub throughput_multiple: Option<f64>,
    /// Median TTFT / baseline median TTFT.
    pub ttft_multiple: Option<f64>,
    /// Median TPOT / baseline median TPOT.
    pub tpot_multiple: Option<f64>,
    /// The larger of the TTFT and TPOT multiples.
    pub latency_multiple: Option<f64>,
    /// Whether the rung meets every SLO (see the module docs).
    pub meets_slo: bool,
    /// Why it does not, one short phrase each (empty when it does).
    pub slo_misses: Vec<String>,
    /// Requests that failed on the client itself (`client_resource`); a rung with any is
    /// left out of the knee search (absent in analyses written before the class existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub client_failures: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The analysis of one run, written as `analysis.json` and printed after `ladder run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Rate of the rung used as the baseline for multiples (None when there are no rungs).
    pub baseline_rate: Option<f64>,
    /// The first saturated rung, if any.
    pub knee: Option<Knee>,
    /// Highest rate such that it and every lower rung meet the SLO.
    pub max_rate_within_slo: Option<f64>,
    /// The seed's best-value range (see the module docs).
    pub best_value: Option<RateRange>,
    /// Error-rate bound used (the SLO's, else the default).
    pub max_error_rate: f64,
    /// Every rung, sorted by rate.
    pub rungs: Vec<RungAnalysis>,
    /// Rates of rungs where the client ran out of local resources: they measure the client,
    /// so no knee is found on them and none meets the SLO.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_limited: Vec<f64>,
    /// What the rungs' `rate` counts: req/s, or users on a concurrency ladder (then
    /// written as `"load": "concurrency"`; every rate above is then a number of users).
    #[serde(default, skip_serializing_if = "LoadKind::is_rate")]
    pub load: LoadKind,
    /// The SLO sets no latency bound (`ttft_ms`, `tpot_ms`, `e2e_ms`): only the error rate
    /// decides "within SLO", so a rung past the knee whose queued requests all finished meets
    /// it, and the highest rate within SLO says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub slo_bounds_errors_only: bool,
    /// The rungs are a capacity search's probes: "within SLO" is by the scenario's `slo:`
    /// block, not by the search's own terms (whose answer is capacity.json's), and its line
    /// says so rather than name a level the search judged outside as within.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub searched: bool,
}

fn nan() -> f64 {
    f64::NAN
}

fn is_nan(x: &f64) -> bool {
    x.is_nan()
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0 && num.is_finite()).then(|| num / den)
}

fn same_rate(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Analyse a run's rungs (in any order) against its SLO.
pub fn analyze(rungs: &[RungSummary], slo: &Slo, baseline_rate: Option<f64>) -> Analysis {
    let max_error_rate = slo.max_error_rate.unwrap_or(DEFAULT_MAX_ERROR_RATE);
    let load = rungs.first().map_or(LoadKind::Rate, |r| r.load);
    let mut sorted: Vec<&RungSummary> = rungs.iter().collect();
    sorted.sort_by(|a, b| a.rate.total_cmp(&b.rate));

    let base = baseline_rate
        .and_then(|b| sorted.iter().position(|r| same_rate(r.rate, b)))
        .or(if sorted.is_empty() { None } else { Some(0) });
    let base_ttft = base.map(|i| sorted[i].stats(Latency::Ttft).median);
    let base_tpot = base.map(|i| sorted[i].stats(Latency::Tpot).median);
    let base_qps = base.map(|i| sorted[i].request_throughput);
    let base_e2e = base.map(|i| sorted[i].stats(Latency::E2el).median);

    let latency_bound = slo.ttft_ms.is_some() || slo.tpot_ms.is_some() || slo.e2e_ms.is_some();
    let per_rung: Vec<RungAnalysis> = sorted
        .iter()
        .map(|r| {
            let ttft = r.stats(Latency::Ttft).median;
            let tpot = r.stats(Latency::Tpot).median;
            // A rung with no completed request measured no latency (its medians read 0).
            let measured = r.completed > 0;
            let ttft_multiple = base_ttft.and_then(|b| ratio(ttft, b)).filter(|_| measured);
            let tpot_multiple = base_tpot.and_then(|b| ratio(tpot, b)).filter(|_| measured);
            let latency_multiple = match (ttft_multiple, tpot_multiple) {
                (Some(a), Some(b)) => Some(a.max(b)),
                // A pooled rung (embeddings) has no token timings: its whole latency.
                (None, None) if r.pooling.is_some() && measured => {
                    base_e2e.and_then(|b| ratio(r.stats(Latency::E2el).median, b))
                }
                (a, b) => a.or(b),
            };
            let mut misses = Vec::new();
            if r.completed == 0 {
                misses.push("no request completed".to_string());
            }
            if r.client_failures() > 0 {
                misses.push(format!(
                    "{} requests failed on the client (client_resource), not a measurement of the server",
                    r.client_failures()
                ));
            }
            if r.server_error_rate() > max_error_rate {
                misses.push(format!(
                    "error rate {} > {}",
                    pct(r.server_error_rate()),
                    pct(max_error_rate)
                ));
            }
            if latency_bound
                && r.completed > 0
                && r.request_goodput < GOODPUT_MIN_FRACTION * r.request_throughput
            {
                misses.push(format!(
                    "goodput {:.2} req/s < {:.0} % of throughput {:.2} req/s",
                    r.request_goodput,
                    GOODPUT_MIN_FRACTION * 100.0,
                    r.request_throughput
                ));
            }
            RungAnalysis {
                rate: r.rate,
                qps: r.request_throughput,
                error_rate: r.error_rate(),
                median_ttft_ms: ttft,
                median_tpot_ms: tpot,
                throughput_multiple: base_qps.and_then(|b| ratio(r.request_throughput, b)),
                ttft_multiple,
                tpot_multiple,
                latency_multiple,
                meets_slo: misses.is_empty(),
                slo_misses: misses,
                client_failures: r.client_failures(),
            }
        })
        .collect();

    // A rung whose requests failed on the client measured the client: the knee is looked for
    // only among rungs that measured the server.
    let measured: Vec<&RungSummary> = sorted
        .iter()
        .copied()
        .filter(|r| r.client_failures() == 0)
        .collect();
    let client_limited: Vec<f64> = sorted
        .iter()
        .filter(|r| r.client_failures() > 0)
        .map(|r| r.rate)
        .collect();
    let knee = find_knee(&measured, slo, max_error_rate);
    let max_rate_within_slo = per_rung
        .iter()
        .take_while(|r| r.meets_slo)
        .last()
        .map(|r| r.rate);
    let best_value = base.and_then(|b| best_value_range(&per_rung, b));

    Analysis {
        load,
        baseline_rate: base.map(|i| sorted[i].rate),
        knee,
        max_rate_within_slo,
        best_value,
        max_error_rate,
        rungs: per_rung,
        client_limited,
        slo_bounds_errors_only: !latency_bound,
        searched: false,
    }
}

fn find_knee(sorted: &[&RungSummary], slo: &Slo, max_error_rate: f64) -> Option<Knee> {
    for (i, r) in sorted.iter().enumerate() {
        let mut reasons = Vec::new();
        let mut detail = Vec::new();
        if r.server_error_rate() > max_error_rate && r.mostly_rejected() {
            reasons.push(KneeReason::Rejected);
            detail.push(format!(
                "error rate {} exceeds the {} bound, and the server rejected {} requests (client_4xx / auth): the requests are wrong for this server, it is not overloaded",
                pct(r.server_error_rate()),
                pct(max_error_rate),
                r.rejected()
            ));
        } else if r.server_error_rate() > max_error_rate {
            reasons.push(KneeReason::ErrorRate);
            detail.push(format!(
                "error rate {} exceeds the {} bound",
                pct(r.server_error_rate()),
                pct(max_error_rate)
            ));
        }
        if i == 0 && !r.mostly_rejected() {
            if let Some(line) = first_rung_shortfall(r) {
                reasons.push(KneeReason::ThroughputPlateau);
                detail.push(line);
            }
        }
        if i > 0 {
            let prev = sorted[i - 1];
            // Closed loop: more users offer more load in proportion (at unchanged latency
            // N users complete N times one user's requests), so the offered increase in
            // req/s is the previous throughput scaled by the growth in users.
            // A trace replay at a higher speed offers its requests proportionally faster too.
            let closed = r.load.proportional();
            let offered = if closed {
                prev.request_throughput * (r.rate - prev.rate) / prev.rate
            } else {
                r.rate - prev.rate
            };
            let realised = r.request_throughput - prev.request_throughput;
            if offered > 0.0 && realised < PLATEAU_FRACTION * offered {
                reasons.push(KneeReason::ThroughputPlateau);
                let what = if closed {
                    format!(
                        "+{:.2} req/s that {} -> {} would add at unchanged latency",
                        offered,
                        trimmed(prev.rate, 6),
                        r.load.level(r.rate)
                    )
                } else {
                    format!("offered +{} req/s", trimmed(offered, 6))
                };
                detail.push(format!(
                    "throughput {:.2} -> {:.2} req/s realised {:.0} % of the {what} (< {:.0} %)",
                    prev.request_throughput,
                    r.request_throughput,
                    100.0 * realised / offered,
                    PLATEAU_FRACTION * 100.0
                ));
            }
            let (t0, t1) = (
                prev.stats(Latency::Ttft).median,
                r.stats(Latency::Ttft).median,
            );
            let over_slo = slo.ttft_ms.is_none_or(|bound| t1 > bound);
            if t0 > 0.0 && t1 > TTFT_JUMP_FACTOR * t0 && over_slo {
                let slo_note = slo
                    .ttft_ms
                    .map(|b| format!(", above the {} ms SLO", trimmed(b, 6)))
                    .unwrap_or_default();
                reasons.push(KneeReason::TtftJump);
                detail.push(format!(
                    "median TTFT {:.1} -> {:.1} ms ({:.1}x{slo_note})",
                    t0,
                    t1,
                    t1 / t0
                ));
            }
        }
        if !reasons.is_empty() {
            // What the server's own metrics say saturated (when it was scraped).
            let prev = i.checked_sub(1).map(|j| &sorted[j].server);
            detail.extend(crate::servermetrics::saturation(&r.server, prev));
            return Some(Knee {
                rate: r.rate,
                reasons,
                detail,
            });
        }
    }
    None
}

/// The first rung of an open-loop ladder that the server could not keep up with: it answered
/// less than [`FIRST_RUNG_MIN_FRACTION`] of what a server keeping up would have answered over
/// the rung (its requests sent at the rate the client achieved, the last answered one
/// quickest-request later), so the queue grew through the rung. `None` when it kept up, or
/// when the rung cannot tell (closed loop, replay, ramp, nothing answered).
fn first_rung_shortfall(r: &RungSummary) -> Option<String> {
    // A failure (a timeout) stretches the rung by its own length: not judged so.
    if r.load != LoadKind::Rate || r.completed == 0 || r.failed > 0 {
        return None;
    }
    // Each repeat sends and drains on its own: their times are summed (as the pooled
    // summary's duration is).
    let runs: Vec<&RungSummary> = if r.repeats.is_empty() {
        vec![r]
    } else {
        r.repeats.iter().collect()
    };
    let (mut n, mut duration, mut expected) = (0.0, 0.0, 0.0);
    for run in runs {
        let k = run.completed as f64;
        if run.completed == 0 || run.failed > 0 {
            return None;
        }
        if !(run.achieved_rate > 0.0 && run.achieved_rate.is_finite() && run.duration_s > 0.0) {
            return None;
        }
        let quickest = run.stats(Latency::E2el).min / 1000.0;
        let quickest = if quickest.is_finite() {
            quickest.max(0.0)
        } else {
            0.0
        };
        n += k;
        duration += run.duration_s;
        expected += k / run.achieved_rate + quickest;
    }
    let keeping_up = n / expected;
    let answered = n / duration;
    if answered >= FIRST_RUNG_MIN_FRACTION * keeping_up {
        return None;
    }
    Some(format!(
        "the first rung is already past saturation: the server answered {:.2} req/s of the {:.2} req/s sent ({:.0} % of the {:.2} req/s keeping up would answer over this rung, < {:.0} %): start the ladder lower",
        answered,
        r.achieved_rate,
        100.0 * answered / keeping_up,
        keeping_up,
        FIRST_RUNG_MIN_FRACTION * 100.0
    ))
}

/// The rungs from the baseline up over which throughput grows faster than latency, each one
/// within the SLO: a rung that misses it (95 % of its requests timed out, its multiples from
/// the one that completed) is no value at any price, and ends the range.
fn best_value_range(rungs: &[RungAnalysis], base: usize) -> Option<RateRange> {
    if !rungs[base].meets_slo {
        return None;
    }
    let mut to = None;
    for i in base + 1..rungs.len() {
        let (p, c) = (&rungs[i - 1], &rungs[i]);
        if !c.meets_slo {
            break;
        }
        let grows_faster = match (
            p.throughput_multiple,
            c.throughput_multiple,
            p.latency_multiple,
            c.latency_multiple,
        ) {
            (Some(tp), Some(tc), Some(lp), Some(lc)) if tp > 0.0 && lp > 0.0 => tc / tp > lc / lp,
            _ => false,
        };
        if !grows_faster {
            break;
        }
        to = Some(c.rate);
    }
    to.map(|to| RateRange {
        from: rungs[base].rate,
        to,
    })
}

/// `0.05` → `5.0 %`.
fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

impl Analysis {
    /// `rates` or `concurrency levels`, for sentences about every rung.
    fn levels(&self) -> &'static str {
        match self.load {
            LoadKind::Rate => "rates",
            LoadKind::Concurrency => "concurrency levels",
            LoadKind::Trace => "replay speeds",
            LoadKind::Ramp => "ramp",
        }
    }

    /// A pooled API's run (embeddings, rerank): no rung has a TTFT.
    fn pooled(&self) -> bool {
        self.rungs.iter().all(|r| r.median_ttft_ms.is_nan())
    }

    /// The per-rung analysis at `rate`, if that rung exists.
    pub fn rung(&self, rate: f64) -> Option<&RungAnalysis> {
        self.rungs.iter().find(|r| same_rate(r.rate, rate))
    }

    /// One line for the knee: `20 req/s (throughput plateau: ...)` or a "no knee" sentence.
    pub fn knee_text(&self) -> String {
        match &self.knee {
            Some(k) => format!("{} ({})", self.load.level(k.rate), k.detail.join("; ")),
            None if self.rungs.is_empty() => "none: no rungs".to_string(),
            None if !self.client_limited.is_empty() => format!(
                "none among the rungs that measured the server (left out: {} {}, where the client ran out of resources)",
                self.client_limited_text(),
                self.load.unit()
            ),
            None if self.rungs.len() == 1 && matches!(self.load, LoadKind::Rate | LoadKind::Concurrency) => format!(
                "none seen: one rung cannot show where throughput stops growing (errors within bound); add {}",
                self.levels()
            ),
            None => format!("none within the tested {} (throughput kept growing, {} stayed steady, errors within bound)", self.levels(),
                // A pooled run (embeddings) has no TTFT: its whole latency.
                if self.pooled() { "latency" } else { "TTFT" }),
        }
    }

    /// The client-limited rates, `20, 40`.
    pub fn client_limited_text(&self) -> String {
        let v: Vec<String> = self.client_limited.iter().map(|r| trimmed(*r, 6)).collect();
        v.join(", ")
    }

    /// The highest rate within SLO as a sentence.
    pub fn slo_text(&self) -> String {
        let text = self.within_text();
        if self.searched {
            format!(
                "{text}; by the scenario's `slo:` block, not the search's SLO (the search's \
                 answer is its capacity line)"
            )
        } else {
            text
        }
    }

    /// The analysis of a capacity search's probes ([`Analysis::searched`]).
    pub fn of_search(mut self) -> Analysis {
        self.searched = true;
        self
    }

    fn within_text(&self) -> String {
        match self.max_rate_within_slo {
            Some(r) => match &self.knee {
                Some(k) if self.slo_bounds_errors_only && r >= k.rate => format!(
                    "{} (the SLO bounds only the error rate, so rungs at and past the knee at {} \
                     meet it; set slo.ttft_ms, tpot_ms or e2e_ms to bound latency too)",
                    self.load.level(r),
                    self.load.level(k.rate)
                ),
                _ => self.load.level(r),
            },
            None => match self.rungs.first() {
                Some(first) => format!(
                    "none: the first rung ({}) already misses it ({})",
                    self.load.level(first.rate),
                    first.slo_misses.join("; ")
                ),
                None => "none: no rungs".into(),
            },
        }
    }

    /// The best-value range as a sentence.
    pub fn best_value_text(&self) -> String {
        match self.best_value {
            Some(r) => format!(
                "{} to {} (throughput multiple grows faster than latency multiple)",
                trimmed(r.from, 6),
                self.load.level(r.to)
            ),
            None => {
                let base = self
                    .baseline_rate
                    .and_then(|b| self.rung(b))
                    .filter(|b| b.throughput_multiple.is_some() && b.latency_multiple.is_some());
                match base {
                    None => "none: the baseline rung has no throughput or latency to compare against".into(),
                    Some(b) if !b.meets_slo => format!(
                        "none: the baseline rung ({}) already misses the SLO ({})",
                        self.load.level(b.rate),
                        b.slo_misses.join(", ")
                    ),
                    Some(b) if self.rungs.last().is_some_and(|l| l.rate <= b.rate) => {
                        "none: no rung above the baseline".into()
                    }
                    Some(b) => match self.rungs.iter().find(|r| r.rate > b.rate) {
                        Some(next) if !next.meets_slo => format!(
                            "none: the first rung above the baseline ({}) misses the SLO ({})",
                            self.load.level(next.rate),
                            next.slo_misses.join(", ")
                        ),
                        Some(next) if next.latency_multiple.is_none() => format!(
                            "none: the first rung above the baseline ({}) measured no latency \
                             (no request completed)",
                            self.load.level(next.rate)
                        ),
                        _ => "none: already the first step above the baseline buys less throughput than it costs in latency".into(),
                    },
                }
            }
        }
    }
}

/// Human rendering, printed after `ladder run`.
impl fmt::Display for Analysis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (within, column) = match self.load {
            LoadKind::Rate => ("Highest rate within SLO:", "rate"),
            LoadKind::Concurrency => ("Most users within SLO:  ", "users"),
            LoadKind::Trace => ("Fastest speed within SLO:", "speed"),
            LoadKind::Ramp => ("Ramp within SLO:         ", "rate"),
        };
        writeln!(f, "Knee:                    {}", self.knee_text())?;
        writeln!(f, "{within} {}", self.slo_text())?;
        writeln!(f, "Best-value range:        {}", self.best_value_text())?;
        if !self.client_limited.is_empty() {
            writeln!(
                f,
                "Client-limited rungs:    {} {} (requests failed on the client: {})",
                self.client_limited_text(),
                self.load.unit(),
                crate::record::CLIENT_RESOURCE_FIX
            )?;
        }
        if let Some(b) = self.baseline_rate {
            writeln!(f, "Multiples vs the {} baseline:", self.load.level(b))?;
            // A pooled run (embeddings, rerank) has no token timings: its latency multiple
            // is the whole request's, one column instead of TTFT's and TPOT's.
            let pooled = self.pooled();
            let latency_columns = if pooled {
                format!("{:>8}", "x E2E")
            } else {
                format!("{:>8}  {:>8}", "x TTFT", "x TPOT")
            };
            writeln!(
                f,
                "  {:>8}  {:>8}  {latency_columns}  {:>8}  SLO",
                column, "x QPS", "err %"
            )?;
            for r in &self.rungs {
                let m = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
                let latency = if pooled {
                    format!("{:>8}", m(r.latency_multiple))
                } else {
                    format!("{:>8}  {:>8}", m(r.ttft_multiple), m(r.tpot_multiple))
                };
                writeln!(
                    f,
                    "  {:>8}  {:>8}  {latency}  {:>8.1}  {}",
                    trimmed(r.rate, 6),
                    m(r.throughput_multiple),
                    r.error_rate * 100.0,
                    if r.meets_slo {
                        "ok".to_string()
                    } else {
                        format!("miss: {}", r.slo_misses.join("; "))
                    }
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "analysis_tests.rs"]
mod tests;
