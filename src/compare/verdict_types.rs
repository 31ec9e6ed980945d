//! What a check is judged on and what it decides, shared by the files that decide
//! ([`super::verdict`]), gather the evidence ([`super::evidence`]) and write the words of an
//! inconclusive check's note ([`super::explain`], [`super::settle`]): the evidence of one
//! metric on one rung, the conditions a bound sets on its intervals, and the verdict.

use std::fmt;

use super::stats::Interval;

/// The outcome of one check on one rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Within the threshold, beyond noise.
    Pass,
    /// Wholly beyond the threshold on the good side.
    Improvement,
    /// A latency check on a rung past saturation in either run: latency there measures how
    /// long the queue grew during the rung, not the server's speed, so it is not judged
    /// (the rung's throughput and error rate are; `--judge-saturated` judges it anyway).
    PastSaturation,
    /// The interval straddles the threshold, or too few samples to tell.
    Inconclusive,
    /// Wholly beyond the threshold on the bad side.
    Regression,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "pass",
            Verdict::Improvement => "improvement",
            Verdict::PastSaturation => "past saturation",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Regression => "regression",
        })
    }
}

/// Which quantity an interval describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// candidate / baseline.
    Ratio,
    /// candidate − baseline.
    Diff,
    /// The candidate value itself.
    Value,
}

/// How an interval was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Seeded percentile bootstrap over requests.
    Bootstrap,
    /// Large-sample intervals by linearization (Woodruff's for quantiles), for sides of
    /// at least [`super::large::LARGE_SAMPLE`] requests (see [`super::large`]).
    LargeSample,
    /// Wilson interval / Newcombe difference interval of proportions.
    Proportion,
    /// No noise model: the summary values are compared as they are.
    Plain,
    /// Exact rank test of too few requests for the bootstrap ([`super::small`]).
    Rank,
    /// Two capacity searches' intervals ([`super::capacity`]).
    Search,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Bootstrap => "bootstrap",
            Method::LargeSample => "large-sample",
            Method::Proportion => "wilson/newcombe",
            Method::Plain => "plain",
            Method::Rank => "rank test",
            Method::Search => "search intervals",
        })
    }
}

/// What the statistics say about one metric on one rung, before a bound is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// Summary values (`result_rate_<rate>.json`).
    pub base: f64,
    pub cand: f64,
    /// Intervals, when the method gives them.
    pub ratio: Option<Interval>,
    pub diff: Option<Interval>,
    pub cand_ci: Option<Interval>,
    pub method: Method,
    /// Two-sided level of the intervals (the per-check level of the family).
    pub level: f64,
    /// Requests per side behind the interval (the smaller side); 0 when not applicable.
    pub requests: usize,
    /// For proportions: the error counts behind the interval.
    pub counts: Option<Counts>,
    /// Set when the samples are too few for an interval: says how many are needed.
    pub too_few: Option<String>,
    /// Runs (repeats) behind the baseline's and the candidate's samples; `[1, 1]` for one
    /// run each, when the intervals cannot include run-to-run noise.
    pub repeats: [usize; 2],
    /// The run-to-run part of the intervals, when a side has repeats or a drift is assumed.
    pub drift: Option<super::components::Drift>,
    /// Requests resampled together in blocks of consecutive ones, per side (the longest
    /// block of its repeats; 1: one by one), when queueing correlates neighbours
    /// ([`crate::stats::block_length`]).
    pub blocks: [usize; 2],
}

/// The error counts behind a proportion's interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counts {
    /// (failed, measured) of the baseline and the candidate, over every repeat.
    pub sides: [(u64, u64); 2],
    /// Each side's overdispersion φ ≥ 1 ([`super::stats::dispersion`]): 1 for one run with
    /// nothing to borrow. The intervals count measured / φ effective requests.
    pub dispersion: [f64; 2],
}

impl Counts {
    /// Counts without overdispersion (one run per side).
    pub fn binomial(base: (u64, u64), cand: (u64, u64)) -> Counts {
        Counts {
            sides: [base, cand],
            dispersion: [1.0, 1.0],
        }
    }

    /// True when run-to-run spread widened the intervals.
    pub fn overdispersed(&self) -> bool {
        self.dispersion.iter().any(|d| *d > 1.0)
    }
}

impl Evidence {
    /// True when the intervals come from the hierarchical bootstrap (a side has repeats).
    pub fn hierarchical(&self) -> bool {
        matches!(self.method, Method::Bootstrap | Method::LargeSample)
            && self.repeats.iter().any(|r| *r >= 2)
    }
}

impl Evidence {
    /// Plain comparison of two values.
    pub fn plain(base: f64, cand: f64) -> Self {
        let ratio = if base == 0.0 {
            if cand == 0.0 {
                1.0
            } else {
                f64::INFINITY
            }
        } else {
            cand / base
        };
        Evidence {
            base,
            cand,
            ratio: Some(Interval::point(ratio)),
            diff: Some(Interval::point(cand - base)),
            cand_ci: Some(Interval::point(cand)),
            method: Method::Plain,
            level: 1.0,
            requests: 0,
            counts: None,
            too_few: None,
            repeats: [1, 1],
            drift: None,
            blocks: [1, 1],
        }
    }
}

/// A decided check: the verdict, the interval it rests on and a note for humans.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub interval: Option<(Scale, Interval)>,
    pub note: String,
}

/// One condition of a check: an interval against a limit, in "high is bad" orientation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cond {
    pub(super) scale: Scale,
    /// The interval as computed (original orientation), for the table and the note.
    pub(super) iv: Interval,
    /// The bad-side limit (original orientation).
    pub(super) bad: f64,
    /// The good-side limit, when the check has an improvement verdict.
    pub(super) good: Option<f64>,
    /// +1 when a high value is bad, −1 when a low value is.
    pub(super) sign: f64,
}

impl Cond {
    fn oriented(&self) -> (f64, f64) {
        if self.sign > 0.0 {
            (self.iv.lo, self.iv.hi)
        } else {
            (-self.iv.hi, -self.iv.lo)
        }
    }
    pub(super) fn beyond_bad(&self) -> bool {
        self.oriented().0 > self.sign * self.bad
    }
    pub(super) fn beyond_good(&self) -> bool {
        self.good.is_some_and(|g| self.oriented().1 < self.sign * g)
    }
    pub(super) fn within(&self) -> bool {
        self.oriented().1 <= self.sign * self.bad
    }
}
