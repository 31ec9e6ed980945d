//! The SLO a capacity search holds the server to, and one probe's verdict on it.

use serde::{Deserialize, Serialize};

use super::interval;

/// What a request contributes to the SLO: its outcome and latencies (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Obs {
    /// The request failed (any error class but `interrupted`, which is not observed).
    pub failed: bool,
    /// It succeeded and met every per-request bound of the scenario's `slo:` block: the
    /// request the rung files' `request_goodput` counts (decided by the runner with that
    /// one rule, `metrics::meets_slo`).
    pub good: bool,
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2el_ms: Option<f64>,
}

/// A per-request latency an SLO may bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    Ttft,
    Tpot,
    E2el,
}

impl Latency {
    fn key(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft_ms",
            Latency::Tpot => "tpot_ms",
            Latency::E2el => "e2el_ms",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Latency::Ttft => "TTFT",
            Latency::Tpot => "TPOT",
            Latency::E2el => "E2E latency",
        }
    }

    fn of(self, o: &Obs) -> Option<f64> {
        match self {
            Latency::Ttft => o.ttft_ms,
            Latency::Tpot => o.tpot_ms,
            Latency::E2el => o.e2el_ms,
        }
    }
}

/// The metric of one SLO term: a latency percentile, the error rate or the goodput fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SloMetric {
    /// The `q`-quantile (0 < q < 1) of a latency over the probe's requests.
    Quantile { q: f64, of: Latency },
    /// Failed over measured requests.
    ErrorRate,
    /// Good requests ([`Obs::good`]) over measured requests: bounded from below.
    Goodput,
}

/// Why a name is no SLO metric ([`SloMetric::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SloMetricError {
    /// Not a metric name at all.
    #[error("unknown SLO metric `{name}`")]
    Unknown { name: String },
    /// A percentile outside (0, 100); `found` as written.
    #[error("`{name}`: a percentile is between 0 and 100 (exclusive), found {found}")]
    PercentileRange { name: String, found: String },
    /// A mean (`mean_<latency>`).
    #[error(
        "`{name}`: a mean has no distribution-free interval (one slow request moves it \
         without bound); bound a percentile instead, e.g. `median_{latency}`"
    )]
    Mean { name: String, latency: String },
    /// A percentile of inter-token gaps.
    #[error(
        "`{name}`: inter-token gaps are many per request, so their percentile \
         has no per-request interval; bound `tpot_ms` instead"
    )]
    InterTokenGaps { name: String },
}

/// The metric names a search's SLO accepts, for hints.
pub const SLO_METRICS_HINT: &str = "a latency percentile `p<N>_<latency>` or `median_<latency>` \
    with latency `ttft_ms`, `tpot_ms` or `e2el_ms` (e.g. `p99_ttft_ms`, `p95_tpot_ms`), \
    `error_rate`, or `goodput` (with `min`)";

impl SloMetric {
    /// Parse `p99_ttft_ms`, `p99.9_e2el_ms`, `median_tpot_ms`, `error_rate`, `goodput`.
    pub fn parse(name: &str) -> Result<SloMetric, SloMetricError> {
        let unknown = || SloMetricError::Unknown { name: name.into() };
        if name == "error_rate" {
            return Ok(SloMetric::ErrorRate);
        }
        if name == "goodput" {
            return Ok(SloMetric::Goodput);
        }
        let (q, rest) = if let Some(rest) = name.strip_prefix("median_") {
            (0.5, rest)
        } else if let Some(rest) = name.strip_prefix('p') {
            let (num, rest) = rest.split_once('_').ok_or_else(unknown)?;
            let pct: f64 = num.parse().map_err(|_| unknown())?;
            if !(pct > 0.0 && pct < 100.0) {
                return Err(SloMetricError::PercentileRange {
                    name: name.into(),
                    found: num.into(),
                });
            }
            (pct / 100.0, rest)
        } else if let Some(rest) = name.strip_prefix("mean_") {
            return Err(SloMetricError::Mean {
                name: name.into(),
                latency: rest.into(),
            });
        } else {
            return Err(unknown());
        };
        let of = match rest {
            "ttft_ms" => Latency::Ttft,
            "tpot_ms" => Latency::Tpot,
            "e2el_ms" => Latency::E2el,
            "itl_ms" => return Err(SloMetricError::InterTokenGaps { name: name.into() }),
            _ => return Err(unknown()),
        };
        Ok(SloMetric::Quantile { q, of })
    }

    /// The name as written (`p99_ttft_ms`).
    pub fn name(&self) -> String {
        match self {
            SloMetric::ErrorRate => "error_rate".into(),
            SloMetric::Goodput => "goodput".into(),
            SloMetric::Quantile { q, of } if *q == 0.5 => format!("median_{}", of.key()),
            SloMetric::Quantile { q, of } => format!("p{}_{}", pct_text(*q), of.key()),
        }
    }

    /// For humans: `p99 TTFT`, `error rate`.
    pub fn label(&self) -> String {
        match self {
            SloMetric::ErrorRate => "error rate".into(),
            SloMetric::Goodput => "goodput".into(),
            SloMetric::Quantile { q, of } if *q == 0.5 => format!("median {}", of.label()),
            SloMetric::Quantile { q, of } => format!("p{} {}", pct_text(*q), of.label()),
        }
    }

    /// The term holds when the metric is at least its bound (goodput), not at most.
    pub fn is_floor(&self) -> bool {
        matches!(self, SloMetric::Goodput)
    }

    /// A fraction of requests (error rate, goodput) rather than milliseconds.
    pub fn is_fraction(&self) -> bool {
        matches!(self, SloMetric::ErrorRate | SloMetric::Goodput)
    }
}

/// The per-request bounds a goodput term counts a request good by (the scenario's `slo:`
/// block), milliseconds; for its description and `capacity.json`: [`Obs::good`] is decided
/// by the runner.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PerRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
}

impl PerRequest {
    /// `TTFT <= 500 ms, TPOT <= 50 ms`.
    pub fn describe(&self) -> String {
        [
            ("TTFT", self.ttft_ms),
            ("TPOT", self.tpot_ms),
            ("E2E latency", self.e2e_ms),
        ]
        .iter()
        .filter_map(|(l, b)| b.map(|b| format!("{l} <= {} ms", num_text(b))))
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// No bound is set: every successful request would be good.
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2e_ms.is_none()
    }
}

fn num_text(x: f64) -> String {
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn pct_text(q: f64) -> String {
    let s = format!("{:.3}", q * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One term of the SLO: `metric <= bound`, or `metric >= bound` for a floor (goodput).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SloTerm {
    pub metric: SloMetric,
    /// The bound: the most a latency percentile or the error rate may be, the least the
    /// goodput fraction may be ([`SloMetric::is_floor`]).
    pub bound: f64,
    /// What makes a request good, for a goodput term (empty otherwise).
    pub per_request: PerRequest,
}

impl SloTerm {
    /// A term bounded from above (a percentile, the error rate).
    pub fn at_most(metric: SloMetric, max: f64) -> SloTerm {
        SloTerm {
            metric,
            bound: max,
            per_request: PerRequest::default(),
        }
    }

    /// `p99 TTFT <= 500 ms`, `error rate <= 0.01`, `goodput >= 0.95 (TTFT <= 500 ms)`; a
    /// goodput term whose per-request bounds are not known here (`ladder validate` reads the
    /// term alone) is `goodput >= 0.95`.
    pub fn describe(&self) -> String {
        match self.metric {
            SloMetric::ErrorRate => format!("{} <= {}", self.metric.label(), self.bound),
            SloMetric::Goodput if self.per_request.is_empty() => {
                format!("{} >= {}", self.metric.label(), self.bound)
            }
            SloMetric::Goodput => format!(
                "{} >= {} ({})",
                self.metric.label(),
                self.bound,
                self.per_request.describe()
            ),
            SloMetric::Quantile { .. } => {
                format!("{} <= {} ms", self.metric.label(), self.bound)
            }
        }
    }

    /// `max 500` or `min 0.95`, for a probe line.
    pub fn bound_text(&self) -> (&'static str, f64) {
        (
            if self.metric.is_floor() { "min" } else { "max" },
            self.bound,
        )
    }

    /// This term's verdict on a probe's requests, at two-sided confidence `level`.
    ///
    /// The requests are taken in the order they ended. Near capacity they queue together
    /// (a burst of slow ones, then a drained queue), so neighbours are not independent draws.
    /// The intervals then count n / d independent samples, d the design effect
    /// ([`crate::stats::design_effect`], 1 when no autocorrelation is significant) of the
    /// series that drives the verdict: for a percentile, whether each request was at or
    /// below the term's bound (the verdict is the test "P(value <= max) >= q", the interval
    /// that test inverted, and its variance is that indicator's long-run variance); for the
    /// error rate, whether it failed; for goodput, whether it was good. A probe whose
    /// requests all lie on one side of the bound has d = 1 however they queued: no ordering
    /// of them moves the verdict.
    pub fn judge(&self, obs: &[Obs], level: f64) -> TermJudgement {
        let (value, lo, hi, n, design) = match self.metric {
            SloMetric::ErrorRate => fraction(obs.iter().map(|o| o.failed), level),
            SloMetric::Goodput => fraction(obs.iter().map(|o| o.good), level),
            SloMetric::Quantile { q, of } => {
                // A failed request met no latency bound: it counts as infinitely slow, so
                // shedding load by refusing it never makes a percentile look better.
                let v: Vec<f64> = obs
                    .iter()
                    .filter_map(|o| {
                        if o.failed {
                            Some(f64::INFINITY)
                        } else {
                            of.of(o)
                        }
                    })
                    .collect();
                let design = quantile_design_effect(&v, self.bound);
                let e = if design > 1.0 {
                    interval::quantile_blocked(&v, q, level, design)
                } else {
                    interval::quantile(&v, q, level)
                };
                match e {
                    None => (f64::NAN, f64::NEG_INFINITY, f64::INFINITY, 0, 1.0),
                    Some(e) => (e.value, e.lo, e.hi, e.n, design),
                }
            }
        };
        // A floor holds when even the interval's lower end reaches it.
        let (inside, outside) = if self.metric.is_floor() {
            (lo >= self.bound, hi < self.bound)
        } else {
            (hi <= self.bound, lo > self.bound)
        };
        let verdict = if inside {
            ProbeVerdict::Inside
        } else if outside {
            ProbeVerdict::Outside
        } else {
            ProbeVerdict::Uncertain
        };
        TermJudgement {
            value,
            lo,
            hi,
            n,
            design,
            verdict,
        }
    }

    /// How far a value is past the bound, on a log scale: `ln(value / max)`, clamped to
    /// ±7 (a value of 0, or infinite, still orders). Negative inside, positive outside.
    /// For goodput, the share of requests that were not good against the share allowed:
    /// `ln((1 − value) / (1 − min))`, which grows with the load as an error rate does.
    pub fn margin(&self, value: f64) -> f64 {
        if value.is_nan() {
            return 0.0;
        }
        let ratio = if self.metric.is_floor() {
            (1.0 - value) / (1.0 - self.bound)
        } else {
            value / self.bound
        };
        ratio.ln().clamp(-7.0, 7.0)
    }
}

/// The share of `flags` that are set, with its Wilson interval at `level` over n / d
/// requests, d the design effect of the flags in order: `(value, lo, hi, n, d)`.
fn fraction(flags: impl Iterator<Item = bool>, level: f64) -> (f64, f64, f64, usize, f64) {
    let flags: Vec<f64> = flags.map(|f| f64::from(u8::from(f))).collect();
    let n = flags.len() as u64;
    let k = flags.iter().filter(|f| **f > 0.0).count() as u64;
    let design = crate::stats::design_effect(&flags);
    let (lo, hi) = if design > 1.0 && n > 0 {
        let p = k as f64 / n as f64;
        let iv = crate::stats::wilson_p(p, n as f64 / design, level);
        (iv.lo, iv.hi)
    } else {
        interval::wilson(k, n, level)
    };
    let value = if n == 0 {
        f64::NAN
    } else {
        k as f64 / n as f64
    };
    (value, lo, hi, n as usize, design)
}

/// Where a probe stands against the SLO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeVerdict {
    /// Every term's interval lies at or under its bound.
    Inside,
    /// Some term's interval lies wholly over its bound.
    Outside,
    /// Neither: some interval straddles its bound.
    Uncertain,
}

impl ProbeVerdict {
    /// The verdict of several terms: outside if any is, inside if all are.
    pub fn all(v: impl IntoIterator<Item = ProbeVerdict>) -> ProbeVerdict {
        let mut out = ProbeVerdict::Inside;
        for x in v {
            match x {
                ProbeVerdict::Outside => return ProbeVerdict::Outside,
                ProbeVerdict::Uncertain => out = ProbeVerdict::Uncertain,
                ProbeVerdict::Inside => {}
            }
        }
        out
    }
}

/// One term's verdict on one probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TermJudgement {
    /// The sample value (percentile or error rate).
    pub value: f64,
    /// Its interval; infinite ends when the sample cannot bound them.
    pub lo: f64,
    pub hi: f64,
    /// Samples behind it.
    pub n: usize,
    /// The design effect the interval allowed for: n / design independent samples (1: no
    /// significant autocorrelation).
    pub design: f64,
    pub verdict: ProbeVerdict,
}

/// The design effect of a percentile's test at `bound`: that of the indicator "at or below
/// it" in the order the requests ended (a failure, infinitely slow, is above).
fn quantile_design_effect(v: &[f64], value: f64) -> f64 {
    let below: Vec<f64> = v.iter().map(|x| f64::from(u8::from(*x <= value))).collect();
    crate::stats::design_effect(&below)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(ttft: f64) -> Obs {
        Obs {
            failed: false,
            good: true,
            ttft_ms: Some(ttft),
            tpot_ms: Some(10.0),
            e2el_ms: Some(ttft + 100.0),
        }
    }

    #[test]
    fn metric_names_parse_and_round_trip() {
        for name in [
            "p99_ttft_ms",
            "p99.9_e2el_ms",
            "median_tpot_ms",
            "p95_tpot_ms",
            "error_rate",
            "goodput",
        ] {
            assert_eq!(SloMetric::parse(name).unwrap().name(), name);
        }
        assert_eq!(SloMetric::parse("p99_ttft_ms").unwrap().label(), "p99 TTFT");
        for bad in [
            "p100_ttft_ms",
            "p0_ttft_ms",
            "mean_ttft_ms",
            "p99_itl_ms",
            "ttft",
        ] {
            assert!(SloMetric::parse(bad).is_err(), "{bad} accepted");
        }
        assert!(SloMetric::parse("mean_ttft_ms")
            .unwrap_err()
            .to_string()
            .contains("median_ttft_ms"));
    }

    #[test]
    fn each_refused_metric_name_says_why_in_its_own_words() {
        let err = |n: &str| SloMetric::parse(n).unwrap_err();
        assert_eq!(
            err("p100_ttft_ms"),
            SloMetricError::PercentileRange {
                name: "p100_ttft_ms".into(),
                found: "100".into()
            }
        );
        assert_eq!(
            err("p100_ttft_ms").to_string(),
            "`p100_ttft_ms`: a percentile is between 0 and 100 (exclusive), found 100"
        );
        assert_eq!(
            err("pxx_ttft_ms"),
            SloMetricError::Unknown {
                name: "pxx_ttft_ms".into()
            }
        );
        assert_eq!(err("ttft").to_string(), "unknown SLO metric `ttft`");
        assert!(matches!(
            err("p99_itl_ms"),
            SloMetricError::InterTokenGaps { .. }
        ));
        assert_eq!(
            err("mean_e2el_ms").to_string(),
            "`mean_e2el_ms`: a mean has no distribution-free interval (one slow request moves \
             it without bound); bound a percentile instead, e.g. `median_e2el_ms`"
        );
    }

    #[test]
    fn a_probe_is_inside_only_when_the_whole_interval_is_under_the_bound() {
        let term = SloTerm::at_most(SloMetric::parse("p90_ttft_ms").unwrap(), 500.0);
        // The values of a ramp, in a seeded random order: independent draws (in order, a
        // ramp is one long correlated block; see the test below).
        let fast: Vec<Obs> = shuffled(300).map(|i| ok(100.0 + i as f64)).collect();
        assert_eq!(term.judge(&fast, 0.9).verdict, ProbeVerdict::Inside);
        let slow: Vec<Obs> = shuffled(300).map(|i| ok(600.0 + i as f64)).collect();
        assert_eq!(term.judge(&slow, 0.9).verdict, ProbeVerdict::Outside);
        // Values 320, 320.7, … 529.3: the p90 is 508.4, its 90 % interval the order
        // statistics 261 and 279 (502.0 and 514.6), which straddle a bound of 508.
        let near: Vec<Obs> = shuffled(300).map(|i| ok(320.0 + i as f64 * 0.7)).collect();
        let term = SloTerm {
            bound: 508.0,
            ..term
        };
        let j = term.judge(&near, 0.9);
        assert_eq!(j.verdict, ProbeVerdict::Uncertain, "{j:?}");
        assert!(j.lo <= 508.0 && 508.0 < j.hi);
        assert!((j.value - 508.37).abs() < 0.01, "{j:?}");
    }

    /// 0..n in a seeded random order (Fisher–Yates).
    fn shuffled(n: usize) -> impl Iterator<Item = usize> {
        let mut rng = crate::stats::SplitMix64(11);
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            v.swap(i, rng.below(i + 1));
        }
        v.into_iter()
    }

    #[test]
    fn requests_that_queued_together_count_as_fewer_independent_draws() {
        let term = SloTerm::at_most(SloMetric::parse("p90_ttft_ms").unwrap(), 500.0);
        // One long queue burst: TTFT an AR(1) series around 300 ms (φ 0.95), 400 requests.
        let mut rng = crate::stats::SplitMix64(5);
        let mut x = 0.0;
        let bursty: Vec<Obs> = (0..400)
            .map(|_| {
                x = 0.95 * x + 0.1 * rng.normal();
                ok(300.0 * f64::exp(x))
            })
            .collect();
        let j = term.judge(&bursty, 0.9);
        assert!(j.design > 2.0, "{j:?}");
        // The same values in a random order: independent, and a narrower interval.
        let order: Vec<usize> = shuffled(400).collect();
        let mixed: Vec<Obs> = order.iter().map(|&i| bursty[i]).collect();
        let k = term.judge(&mixed, 0.9);
        assert_eq!((k.design, k.value), (1.0, j.value));
        assert!(
            j.hi - j.lo > k.hi - k.lo,
            "blocked {j:?} vs independent {k:?}"
        );
        // The same queued series against a bound none of it comes near: every request is
        // under it, the order cannot move the verdict, and it is inside on n requests (the
        // design effect of the sample percentile would have left its upper end unbounded).
        let far = SloTerm {
            bound: 5000.0,
            ..term
        };
        let f = far.judge(&bursty, 0.997);
        assert_eq!((f.design, f.verdict), (1.0, ProbeVerdict::Inside), "{f:?}");
        let at_value = quantile_design_effect(
            &bursty
                .iter()
                .map(|o| o.ttft_ms.unwrap())
                .collect::<Vec<_>>(),
            j.value,
        );
        assert!(at_value > 2.0, "{at_value}");
    }

    #[test]
    fn failures_count_as_infinitely_slow_and_in_the_error_rate() {
        // One failure after every ten successes (spread out: a run of 40 failures at the end
        // would be one burst, see the test above).
        let obs: Vec<Obs> = (0..440)
            .map(|i| {
                if i % 11 == 10 {
                    Obs {
                        failed: true,
                        ..Obs::default()
                    }
                } else {
                    ok(100.0)
                }
            })
            .collect();
        let p99 = SloTerm::at_most(SloMetric::parse("p99_ttft_ms").unwrap(), 500.0);
        assert_eq!(p99.judge(&obs, 0.9).verdict, ProbeVerdict::Outside);
        let errors = SloTerm::at_most(SloMetric::ErrorRate, 0.01);
        let j = errors.judge(&obs, 0.9);
        assert_eq!(j.verdict, ProbeVerdict::Outside);
        assert!((j.value - 40.0 / 440.0).abs() < 1e-12);
        // No failures in 200 requests cannot show an error rate under 1 % at 90 %.
        let clean: Vec<Obs> = (0..200).map(|_| ok(100.0)).collect();
        assert_eq!(errors.judge(&clean, 0.9).verdict, ProbeVerdict::Uncertain);
        let clean: Vec<Obs> = (0..400).map(|_| ok(100.0)).collect();
        assert_eq!(errors.judge(&clean, 0.9).verdict, ProbeVerdict::Inside);
    }

    fn goodput_term() -> SloTerm {
        SloTerm {
            metric: SloMetric::parse("goodput").unwrap(),
            bound: 0.95,
            per_request: PerRequest {
                ttft_ms: Some(500.0),
                tpot_ms: Some(50.0),
                e2e_ms: None,
            },
        }
    }

    /// 400 requests, the i-th good unless `bad(i)`.
    fn goodput_obs(bad: impl Fn(usize) -> bool) -> Vec<Obs> {
        (0..400)
            .map(|i| Obs {
                good: !bad(i),
                ..ok(100.0)
            })
            .collect()
    }

    #[test]
    fn goodput_is_the_share_of_good_requests_held_from_below() {
        let term = goodput_term();
        assert_eq!(term.metric.name(), "goodput");
        assert!(term.metric.is_floor() && term.metric.is_fraction());
        assert_eq!(
            term.describe(),
            "goodput >= 0.95 (TTFT <= 500 ms, TPOT <= 50 ms)"
        );
        assert_eq!(term.bound_text(), ("min", 0.95));
        // Every request good: the Wilson lower end at 96.7 % over 400 is 0.989 >= 0.95.
        let all = term.judge(&goodput_obs(|_| false), 0.967);
        assert_eq!(
            (all.value, all.verdict),
            (1.0, ProbeVerdict::Inside),
            "{all:?}"
        );
        assert!(all.lo > 0.95 && all.lo < 1.0, "{all:?}");
        // One in five missed (spread out): 0.8, wholly under the floor.
        let low = term.judge(&goodput_obs(|i| i % 5 == 0), 0.967);
        assert_eq!(
            (low.value, low.verdict),
            (0.8, ProbeVerdict::Outside),
            "{low:?}"
        );
        assert!(low.hi < 0.95, "{low:?}");
        // One in twenty: 0.95 exactly, its interval straddles the floor.
        let near = term.judge(&goodput_obs(|i| i % 20 == 0), 0.967);
        assert_eq!(near.verdict, ProbeVerdict::Uncertain, "{near:?}");
        assert!(
            near.lo < 0.95 && 0.95 < near.hi && near.design == 1.0,
            "{near:?}"
        );
        // The margin is the missed share against the share allowed: negative inside.
        assert!(term.margin(1.0) == -7.0 && term.margin(0.99) < 0.0);
        assert!((term.margin(0.9) - 2f64.ln()).abs() < 1e-12);
        assert!(term.margin(0.8) > term.margin(0.9));
    }

    #[test]
    fn missed_goodput_in_one_burst_counts_as_fewer_independent_draws() {
        let term = goodput_term();
        // 40 of 400 missed: one in ten, spread out, is clearly under 0.95 …
        let spread = term.judge(&goodput_obs(|i| i % 10 == 0), 0.9);
        assert_eq!(
            (spread.design, spread.verdict),
            (1.0, ProbeVerdict::Outside)
        );
        // … but the same 40 in one queue burst are a few independent looks at most: the
        // design effect of the good/missed indicator widens the interval over the floor.
        let burst = term.judge(&goodput_obs(|i| (200..240).contains(&i)), 0.9);
        assert_eq!(burst.value, spread.value);
        assert!(burst.design > 2.0, "{burst:?}");
        assert_eq!(burst.verdict, ProbeVerdict::Uncertain, "{burst:?}");
        assert!(burst.hi - burst.lo > spread.hi - spread.lo);
    }

    #[test]
    fn terms_combine_outside_first() {
        use ProbeVerdict::*;
        assert_eq!(ProbeVerdict::all([Inside, Uncertain, Outside]), Outside);
        assert_eq!(ProbeVerdict::all([Inside, Uncertain]), Uncertain);
        assert_eq!(ProbeVerdict::all([Inside, Inside]), Inside);
    }
}
