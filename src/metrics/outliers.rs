//! A run far from the others: among the repeats of one rung (`load.repeats`, or the runs of
//! a baseline grown with `ladder bless --add`), one whose key metric sits far from the
//! rest. Such a run (a cold cache, a server restarted mid-run, a rung at capacity that
//! queued in one run only) would make the baseline's run-to-run spread say "anything goes"
//! on that rung for as long as the baseline lives.
//!
//! The rule (docs/gate.md, "Outlier runs"), per rung and per key metric with a value in at
//! least three runs: with `m` the median of the runs' values and `MAD` the median absolute
//! deviation from it, run `i` is an outlier when
//!
//! - median TTFT, median TPOT, output throughput (on the log scale):
//!   `|ln(x_i / m)| > max(K · 1.4826 · MAD, ln(LOG_FLOOR))`, MAD of the `ln x`;
//! - error rate (absolute): `|x_i − m| > max(K · 1.4826 · MAD, ERROR_FLOOR)`.
//!
//! Two runs have no "others" to tell which one is off; they are flagged together as a
//! disagreement when they are more than `TWO_RUN_FACTOR` apart (an error rate
//! `2 · ERROR_FLOOR` apart).

use super::summary::RungSummary;
use crate::format::num;

/// Robust z a run must pass: 1.4826 · MAD estimates a normal spread, and 5 of them is
/// beyond any chance spread of three to a hundred runs (ratios to the median beyond it are
/// also past the floor).
pub const K: f64 = 5.0;
/// A run closer than this factor to the median is never an outlier: run-to-run drift of a
/// shared machine (5 %), the sampling noise of a median of tens of requests, and the queue
/// of a rung near capacity stay inside it. On the simulator with 5 % drift a rung past
/// capacity (16 req/s against 11.5) queued in some unchanged runs and not in others: median
/// TTFT 35–42 ms or 112–150 ms (×3.6 at most from the median of three); floors of ×2 and ×3
/// refused 29 and 11 of 66 three-run baselines, each of three unchanged runs (×4: 6 of
/// 136). A cold cache is ×14 on the real llama.cpp server (335 against 23 ms), a run at
/// capacity there ×180 (5,044 against 25–28 ms).
pub const LOG_FLOOR: f64 = 4.0;
/// Two runs have no majority: they are flagged together when they are more than this factor
/// apart (a cold run against a warm one, ×14, is; the queueing above, ×4.2, is not).
pub const TWO_RUN_FACTOR: f64 = 8.0;
/// An error rate closer than this (absolute) to the median is never an outlier.
pub const ERROR_FLOOR: f64 = 0.05;

/// The metrics checked, as `result_rate_*.json` names them, with whether they are compared
/// as ratios (log scale).
pub const METRICS: [(&str, bool); 4] = [
    ("median_ttft_ms", true),
    ("median_tpot_ms", true),
    ("output_throughput", true),
    ("error_rate", false),
];

/// One run far from the others on one rung and metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Outlier {
    /// The rung's level (req/s or users).
    pub rate: f64,
    /// 1-based run (repeat) number.
    pub run: usize,
    pub metric: &'static str,
    pub value: f64,
    /// The other runs' values, in run order.
    pub others: Vec<f64>,
    /// The median of all runs' values.
    pub median: f64,
}

impl Outlier {
    /// `run 3: median_ttft_ms 5044 against 25.1, 28.3 in the other runs (median 28.3)`,
    /// the rung left to the caller (it knows how to name the level).
    pub fn describe(&self) -> String {
        let others: Vec<String> = self.others.iter().map(|v| num(*v)).collect();
        format!(
            "run {}: {} {} against {} in the other run{} (median of all {})",
            self.run,
            self.metric,
            num(self.value),
            others.join(", "),
            if self.others.len() == 1 { "" } else { "s" },
            num(self.median)
        )
    }
}

/// The median by the one quantile convention ([`crate::stats`]).
fn median(v: &mut [f64]) -> f64 {
    crate::stats::quantile(v, 0.5)
}

/// The runs of one rung that are outliers on some key metric: `runs` are the rung's runs in
/// order (each one run's summary, as `RungSummary::repeats` holds them).
pub fn of_rung(rate: f64, runs: &[RungSummary]) -> Vec<Outlier> {
    let mut out = Vec::new();
    for (metric, log) in METRICS {
        // (run index, value) of the runs where the metric has a usable value.
        let vals: Vec<(usize, f64)> = runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.metric(metric).map(|v| (i, v)))
            .filter(|(_, v)| v.is_finite() && (!log || *v > 0.0))
            .collect();
        if vals.len() < 2 {
            continue;
        }
        let t = |v: f64| if log { v.ln() } else { v };
        let floor = if log { LOG_FLOOR.ln() } else { ERROR_FLOOR };
        let mut xs: Vec<f64> = vals.iter().map(|(_, v)| t(*v)).collect();
        let m = median(&mut xs);
        let mut dev: Vec<f64> = vals.iter().map(|(_, v)| (t(*v) - m).abs()).collect();
        let mad = median(&mut dev);
        let limit = match (vals.len() >= 3, log) {
            (true, _) => (K * 1.4826 * mad).max(floor),
            // Each of two runs sits half their log distance from the middle.
            (false, true) => TWO_RUN_FACTOR.ln() / 2.0,
            (false, false) => floor,
        };
        let mut raw: Vec<f64> = vals.iter().map(|(_, v)| *v).collect();
        let mid = median(&mut raw);
        for (i, v) in &vals {
            if (t(*v) - m).abs() > limit {
                out.push(Outlier {
                    rate,
                    run: i + 1,
                    metric,
                    value: *v,
                    others: vals
                        .iter()
                        .filter(|(j, _)| j != i)
                        .map(|(_, x)| *x)
                        .collect(),
                    median: mid,
                });
            }
        }
    }
    out
}

/// The runs of a rung summary: its repeats, or itself for a single run.
pub fn runs_of(s: &RungSummary) -> Vec<RungSummary> {
    if s.repeats.is_empty() {
        vec![s.clone()]
    } else {
        s.repeats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::latency::Latency;

    fn run(ttft: f64, tpot: f64, out: f64, failed: u64) -> RungSummary {
        let mut s = RungSummary {
            completed: 100 - failed,
            failed,
            output_throughput: out,
            ..Default::default()
        };
        s.latency.entry(Latency::Ttft).or_default().median = ttft;
        s.latency.entry(Latency::Tpot).or_default().median = tpot;
        s
    }

    /// The baseline: 5 s TTFT at 2 req/s against 25-28 ms in the two other runs.
    #[test]
    fn a_run_of_5s_ttft_among_25_to_28ms_is_flagged_and_only_it() {
        let runs = [
            run(25.0, 8.0, 60.0, 0),
            run(28.0, 8.1, 61.0, 0),
            run(5044.0, 8.2, 59.0, 0),
        ];
        let o = of_rung(2.0, &runs);
        assert_eq!(o.len(), 1, "{o:?}");
        assert_eq!((o[0].run, o[0].metric), (3, "median_ttft_ms"));
        assert_eq!(o[0].others, [25.0, 28.0]);
        assert_eq!(
            o[0].describe(),
            "run 3: median_ttft_ms 5044 against 25, 28 in the other runs (median of all 28)"
        );
    }

    /// Drift of a few per cent, and of ±40 % (a median of few requests), is never flagged,
    /// however many runs; half the requests failing in one run of five is.
    #[test]
    fn drift_is_not_an_outlier_and_a_failing_run_is() {
        let drift: Vec<RungSummary> = (0..9)
            .map(|i| {
                let f = 1.0 + 0.05 * ((i * 7 % 5) as f64 - 2.0) / 2.0;
                run(25.0 * f, 8.0 / f, 60.0 * f, i % 2)
            })
            .collect();
        assert!(of_rung(1.0, &drift).is_empty());
        let wide = [
            run(20.0, 8.0, 60.0, 0),
            run(28.0, 8.0, 60.0, 0),
            run(34.0, 8.0, 60.0, 0),
        ];
        assert!(of_rung(1.0, &wide).is_empty());
        let mut failing = drift[..5].to_vec();
        failing[2] = run(25.0, 8.0, 60.0, 50);
        let o = of_rung(1.0, &failing);
        assert_eq!(o.len(), 1, "{o:?}");
        assert_eq!((o[0].run, o[0].metric), (3, "error_rate"));
    }

    /// Two runs: a disagreement past the floor on both sides of their middle flags both.
    #[test]
    fn two_runs_that_disagree_are_both_flagged() {
        let o = of_rung(2.0, &[run(28.0, 8.0, 60.0, 0), run(5044.0, 8.0, 60.0, 0)]);
        assert_eq!(o.iter().map(|o| o.run).collect::<Vec<_>>(), [1, 2]);
        assert!(of_rung(2.0, &[run(28.0, 8.0, 60.0, 0), run(40.0, 8.0, 60.0, 0)]).is_empty());
        // A rung near capacity queues in one run and not in another: not an outlier, with
        // two runs (×4.1) or three (×3.6 from the median); a cold run against a warm one
        // (×14) is.
        assert!(of_rung(16.0, &[run(28.36, 8.0, 60.0, 0), run(117.0, 8.0, 60.0, 0)]).is_empty());
        let queued = [
            run(40.44, 8.0, 60.0, 0),
            run(41.79, 8.0, 60.0, 0),
            run(150.0, 8.0, 60.0, 0),
        ];
        assert!(of_rung(16.0, &queued).is_empty());
        let cold = of_rung(0.4, &[run(23.0, 8.0, 60.0, 0), run(335.0, 8.0, 60.0, 0)]);
        assert_eq!(cold.len(), 2, "{cold:?}");
    }
}
