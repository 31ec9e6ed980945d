//! Run-to-run drift as a variance component of its own.
//!
//! A check's statistic moves for two reasons: the requests a run happened to draw (within-run
//! sampling noise, measured well by the requests of every run) and the run itself (drift: a
//! server restarted, a neighbour on the machine, a warmer cache; measured only by the runs, of
//! which a baseline has a handful). The two are estimated and bounded apart:
//!
//! - **within**: the interval of the pooled requests (bootstrap, large-sample or one big
//!   side, [`super::evidence`]), at the per-check level of half the family's error budget
//!   (Bonferroni over the checks: their within-run noises are separate draws);
//! - **between**: τ², the variance of a run's log statistic that the requests do not explain,
//!   by moments on each side with repeats: the sample variance of the runs' log statistics
//!   less the part within-run noise gives it (R × the pooled statistic's within variance),
//!   floored at 0, pooled over the sides by their degrees of freedom (R − 1 each). A side of
//!   one run has a run effect too and borrows the pooled τ². The log ratio's between part has
//!   variance τ²·(1/R_b + 1/R_c), bounded by Student's t with the pooled degrees of freedom at
//!   the other half of the family's budget, once for the whole family: a run's drift is one
//!   draw shared by every rung and metric of that run, so it is one event, not one per check.
//!
//! The interval is the within interval widened on the log scale by the between half-width
//! (a union bound: the family errs only when the requests of some check or the runs' drift
//! fall outside their bounds, each at most half the budget). Runs that agree give τ² ≈ 0 and
//! the within interval itself: three runs that agree to 0.1 % decide what one run against one
//! decides. Runs that disagree widen it by t, and the advice says how many runs would settle it.
//!
//! With one run on each side nothing measures drift: an assumed τ (`--drift`, docs/gate.md)
//! is then taken as known (normal quantile), or none (the intervals cover within-run noise
//! only, as the verdict's note says).

use super::stats::{self, BootstrapResult, Interval};

/// The run-to-run part of a check's interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    /// Variance of one run's log statistic between runs (τ²).
    pub tau2: f64,
    /// Degrees of freedom of `tau2`; 0 when it was assumed (`--drift`), not measured.
    pub df: usize,
    /// Runs behind the baseline and the candidate.
    pub runs: [usize; 2],
    /// Half-width on the log scale that drift adds to the ratio's interval.
    pub half: f64,
    /// Half-width on the log scale of the ratio's within-run interval (for the advice).
    pub within_half: f64,
    /// Two-sided level of the between bound (half the family's error budget).
    pub level: f64,
    /// What a pooled estimate needs to widen this check again: its within-run interval and
    /// each side's unfloored excess; None when the drift was assumed, not measured.
    pub pool: Option<PoolInput>,
}

/// A check's own measurement of drift, kept so that the checks of one metric can pool it
/// ([`pool`], [`rewiden`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolInput {
    /// The interval of the pooled requests at the within level, before drift.
    pub within: BootstrapResult,
    /// Each side's excess between-run variance, not floored at 0, and its degrees of
    /// freedom (None for a side of one run).
    pub excess: [Option<(f64, usize)>; 2],
}

impl Drift {
    /// The drift half-width of a log ratio with `rb` and `rc` runs and `df` degrees of freedom.
    pub fn half_for(&self, rb: usize, rc: usize, df: usize) -> f64 {
        let q = quantile(self.level, df);
        q * (self.tau2 * (1.0 / rb.max(1) as f64 + 1.0 / rc.max(1) as f64)).sqrt()
    }

    /// τ as a relative run-to-run spread (coefficient of variation), e.g. 0.05 for 5 %.
    pub fn cv(&self) -> f64 {
        self.tau2.sqrt()
    }
}

/// The between bound's quantile: Student's t with `df` degrees of freedom, or the normal's
/// z for an assumed (known) τ.
fn quantile(level: f64, df: usize) -> f64 {
    if df == 0 {
        stats::z_for(level)
    } else {
        crate::stats::t_for(level, df as u32)
    }
}

/// The two halves of a family's error budget when drift is in the intervals: the within-run
/// level of each check and the level of the one between-run bound.
pub fn split_levels(per_check: f64, family: f64) -> (f64, f64) {
    (1.0 - (1.0 - per_check) / 2.0, 1.0 - (1.0 - family) / 2.0)
}

/// The runs of one side as a check sees them.
#[derive(Debug, Clone, Copy)]
pub struct SideRuns<'a> {
    /// Each run's statistic (one entry for a side of one run).
    pub per_run: &'a [f64],
    /// Variance of the log of the side's pooled statistic from its requests.
    pub within: f64,
}

impl SideRuns<'_> {
    /// The side's excess between-run variance and its degrees of freedom (None with fewer
    /// than two runs, or a statistic that is not positive in some run).
    fn excess(&self) -> Option<(f64, usize)> {
        self.raw_excess().map(|(e, df)| (e.max(0.0), df))
    }

    /// [`Self::excess`] before the floor at 0: pooled over checks, the negative parts
    /// cancel the chance excesses of others instead of biasing the pool upward.
    fn raw_excess(&self) -> Option<(f64, usize)> {
        let r = self.per_run.len();
        if r < 2
            || self
                .per_run
                .iter()
                .any(|v| v.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !v.is_finite())
        {
            return None;
        }
        let logs: Vec<f64> = self.per_run.iter().map(|v| v.ln()).collect();
        let m = logs.iter().sum::<f64>() / r as f64;
        let s2 = logs.iter().map(|l| (l - m) * (l - m)).sum::<f64>() / (r - 1) as f64;
        // One run's within-run variance is about R times that of the R runs pooled.
        let within_one = if self.within.is_finite() {
            self.within * r as f64
        } else {
            0.0
        };
        Some((s2 - within_one, r - 1))
    }
}

/// τ² pooled over the sides that have repeats, with its degrees of freedom; `assumed` (a
/// relative spread, e.g. 0.05) when neither side has two runs. None when nothing measures
/// or assumes drift.
pub fn estimate(base: SideRuns, cand: SideRuns, assumed: Option<f64>) -> Option<(f64, usize)> {
    let parts: Vec<(f64, usize)> = [base, cand].iter().filter_map(SideRuns::excess).collect();
    let df: usize = parts.iter().map(|p| p.1).sum();
    if df > 0 {
        let tau2 = parts.iter().map(|(t, d)| t * *d as f64).sum::<f64>() / df as f64;
        return Some((tau2, df));
    }
    assumed.filter(|a| *a > 0.0).map(|a| (a * a, 0))
}

/// The within-run variance of a side's log statistic read off its interval at `level`.
pub fn within_of(ci: Interval, level: f64) -> f64 {
    if ci.lo.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
        || !ci.hi.is_finite()
        || ci.hi < ci.lo
    {
        return f64::NAN;
    }
    ((ci.hi.ln() - ci.lo.ln()) / (2.0 * stats::z_for(level))).powi(2)
}

/// `within` (intervals of the pooled requests at the within level) widened by the drift
/// bound of `tau2` (df `df`) at `drift_level`, for sides of `runs` runs.
pub fn widen(
    within: BootstrapResult,
    tau2: f64,
    df: usize,
    runs: [usize; 2],
    drift_level: f64,
) -> (BootstrapResult, Drift) {
    let [rb, rc] = runs.map(|r| r.max(1));
    let q = quantile(drift_level, df);
    let h = q * (tau2 * (1.0 / rb as f64 + 1.0 / rc as f64)).sqrt();
    let hc = q * (tau2 / rc as f64).sqrt();
    let p = if within.base != 0.0 {
        within.cand / within.base
    } else {
        f64::NAN
    };
    let within_half = if within.ratio.lo > 0.0 && within.ratio.hi.is_finite() {
        (within.ratio.hi.ln() - within.ratio.lo.ln()) / 2.0
    } else {
        f64::INFINITY
    };
    let scale = |iv: Interval, h: f64| Interval {
        lo: iv.lo * (-h).exp(),
        hi: iv.hi * h.exp(),
    };
    let ratio_scaled = p.is_finite();
    let widened = BootstrapResult {
        base: within.base,
        cand: within.cand,
        ratio: if ratio_scaled {
            scale(within.ratio, h)
        } else {
            within.ratio
        },
        diff: widen_diff(&within, h, ratio_scaled),
        cand_ci: if within.cand_ci.lo >= 0.0 {
            scale(within.cand_ci, hc)
        } else {
            within.cand_ci
        },
    };
    (
        widened,
        Drift {
            tau2,
            df,
            runs: [rb, rc],
            half: h,
            within_half,
            level: drift_level,
            pool: None,
        },
    )
}

/// The difference interval of `within` widened by the same drift half-width `h` as its ratio
/// interval, so that the two tell one story (docs/gate.md, "Why `-np 1` was missed").
///
/// The ratio's bounds move on the log scale, `r_lo → r_lo·e^−h` and `r_hi → r_hi·e^h`; the
/// difference's bounds move by what that move is worth at the baseline's point value `b`:
///
/// ```text
/// d_lo' = d_lo − b · r_lo · (1 − e^−h)        d_hi' = d_hi + b · r_hi · (e^h − 1)
/// ```
///
/// i.e. `d' − d = b · (r' − r)` at each end: when the within intervals agree
/// (`d = b · (r − 1)`), the widened ones agree too (`d' = b · (r' − 1)`). The old widening
/// used the candidate's point value `c` at both ends (`d_lo − c · (1 − e^−h)`): for a large
/// change (`c ≫ b · r_lo`) it pulled the difference's lower bound far below what the ratio's
/// lower bound implies (x[2.38, 32.3] next to d[−985, +15,556] at b = 661 ms), so the floor
/// held back a check whose ratio lay wholly past its threshold. Without a usable ratio (a
/// baseline that is not positive, an unbounded or negative ratio bound) the point value
/// `|c|` stays the scale, as before.
fn widen_diff(within: &BootstrapResult, h: f64, ratio_scaled: bool) -> Interval {
    let (down, up) = (1.0 - (-h).exp(), h.exp() - 1.0);
    let r = within.ratio;
    let b = within.base;
    let usable = ratio_scaled && b > 0.0 && b.is_finite() && r.lo >= 0.0 && r.hi.is_finite();
    let (at_lo, at_hi) = if usable {
        (b * r.lo, b * r.hi)
    } else {
        let c = within.cand.abs();
        (c, c)
    };
    Interval {
        lo: within.diff.lo - at_lo * down,
        hi: within.diff.hi + at_hi * up,
    }
}

/// τ² pooled over the checks of one metric (its rungs), with the pooled degrees of freedom:
/// a run's drift is a property of the run, shared by its rungs, so k rungs measured with R
/// runs a side estimate it with k·(R − 1) degrees of freedom a side instead of R − 1. The
/// unfloored excesses are averaged by their degrees of freedom, then floored at 0. None
/// when no check measured drift.
pub fn pool<'a>(inputs: impl IntoIterator<Item = &'a PoolInput>) -> Option<(f64, usize)> {
    let (mut sum, mut df) = (0.0, 0usize);
    for (e, d) in inputs.into_iter().flat_map(|p| p.excess.iter().flatten()) {
        if e.is_finite() {
            sum += e * *d as f64;
            df += d;
        }
    }
    (df > 0).then(|| ((sum / df as f64).max(0.0), df))
}

/// A check widened again by a pooled τ² (`tau2`, `df`) instead of its own: the same
/// within-run interval and runs, the same level.
pub fn rewiden(d: &Drift, tau2: f64, df: usize) -> Option<(BootstrapResult, Drift)> {
    let p = d.pool?;
    let (r, mut nd) = widen(p.within, tau2, df, d.runs, d.level);
    nd.pool = d.pool;
    Some((r, nd))
}

/// `within` (intervals of the pooled requests at `level`) with the runs' drift added: τ²
/// estimated from each side's per-run statistics (`per_run`, empty for a side of one run)
/// beyond what the within-run variances read off `within` explain, or `assumed` with no
/// repeats; bounded at `drift_level` for sides of `runs` runs. The drift part is None when
/// nothing measures or assumes drift.
pub fn with_drift(
    within: BootstrapResult,
    level: f64,
    drift_level: f64,
    per_run: [&[f64]; 2],
    runs: [usize; 2],
    assumed: Option<f64>,
) -> (BootstrapResult, Option<Drift>) {
    let vc = within_of(within.cand_ci, level);
    let vb = (within_of(within.ratio, level) - vc).max(0.0);
    let sides = [
        SideRuns {
            per_run: per_run[0],
            within: vb,
        },
        SideRuns {
            per_run: per_run[1],
            within: vc,
        },
    ];
    match estimate(sides[0], sides[1], assumed) {
        Some((tau2, df)) => {
            let (r, mut d) = widen(within, tau2, df, runs, drift_level);
            let excess = sides.map(|s| s.raw_excess());
            if excess.iter().any(Option::is_some) {
                d.pool = Some(PoolInput { within, excess });
            }
            (r, Some(d))
        }
        None => (within, None),
    }
}

#[cfg(test)]
#[path = "components_tests.rs"]
mod tests;
