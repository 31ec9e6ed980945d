//! Evidence for one metric on one rung: which samples each metric key draws from the
//! per-request lines, and which test gives its interval.

use super::groups::Groups;
use super::large::{self, SideEstimate, LARGE_SAMPLE};
pub use super::samples::latency_groups;
pub(crate) use super::samples::runs_in;
use super::samples::{
    by_repeat, error_runs, latency_blocks, rate_of, rate_of_runs, throughput_groups,
};
pub use super::samples::{Slo, Weight};
use super::stats::{self, Statistic};
use super::verdict_types::{Counts, Evidence, Method};
use super::{components, mixed};
use crate::metrics::{Latency, RungSummary};
use crate::results::RequestLine;

/// How a metric key is tested.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// A latency statistic, bootstrapped from per-request samples.
    Latency(Statistic, Latency),
    /// A per-second rate over the rung's window, bootstrapped over requests.
    Throughput(Weight),
    /// Failed / measured: Wilson and Newcombe intervals.
    ErrorRate,
    /// Anything else (counts, min/max, duration): plain comparison.
    Plain,
}

impl Model {
    /// The model of a metric key.
    pub fn of(key: &str) -> Model {
        match key {
            "request_throughput" | "qps" => return Model::Throughput(Weight::Requests),
            "output_throughput" => return Model::Throughput(Weight::OutputTokens),
            "total_token_throughput" => return Model::Throughput(Weight::AllTokens),
            "request_goodput" => return Model::Throughput(Weight::GoodRequests),
            "error_rate" => return Model::ErrorRate,
            _ => {}
        }
        if let Some(rest) = key.strip_suffix("_ms") {
            for which in Latency::ALL.into_iter().chain([Latency::Ttfc]) {
                if let Some(stat) = rest.strip_suffix(&format!("_{}", which.key())) {
                    if let Some(s) = Statistic::from_prefix(stat) {
                        return Model::Latency(s, which);
                    }
                }
            }
        }
        Model::Plain
    }

    /// True when the metric only exists for successful requests.
    pub fn needs_successes(&self) -> bool {
        matches!(
            self,
            Model::Latency(
                _,
                Latency::Ttft
                    | Latency::Tpot
                    | Latency::Itl
                    | Latency::E2el
                    | Latency::TtftSched
                    | Latency::E2elSched
                    | Latency::Ttfc
            )
        )
    }
}

/// One side of a rung: its summary and, for bootstrapped metrics, its request lines.
pub struct Side<'a> {
    pub summary: &'a RungSummary,
    pub lines: &'a [RequestLine],
    pub slo: Slo,
}

/// Why a metric cannot be compared on a rung at all (exit 2).
#[derive(Debug, Clone, PartialEq)]
pub struct NoSuccesses {
    /// "baseline" or "candidate".
    pub side: &'static str,
}

/// `f` over `items` on every core (up to one thread per item), results in `items`' order.
/// Items are dealt round-robin, so cheap and costly checks (an error rate, a bootstrapped
/// percentile) spread over the threads.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let f = &f;
    let mut dealt: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    (t..items.len())
                        .step_by(threads)
                        .map(|i| (i, f(&items[i])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a check's evidence panicked"))
            .collect()
    });
    let mut out: Vec<(usize, R)> = dealt.drain(..).flatten().collect();
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// Evidence for `key` on one rung, with intervals at the two-sided `level`.
pub fn evidence(
    key: &str,
    base: &Side,
    cand: &Side,
    levels: Levels,
) -> Result<Evidence, NoSuccesses> {
    let level = levels.per_check;
    let value = |s: &Side| s.summary.metric(key).unwrap_or(f64::NAN);
    let (bv, cv) = (value(base), value(cand));
    let model = Model::of(key);
    let repeats = [runs_in(base.lines), runs_in(cand.lines)];
    let hier = repeats.iter().any(|r| *r >= 2);
    if model.needs_successes() {
        if base.summary.completed == 0 {
            return Err(NoSuccesses { side: "baseline" });
        }
        if cand.summary.completed == 0 {
            return Err(NoSuccesses { side: "candidate" });
        }
    }
    let mut e = match model {
        Model::Plain => Evidence::plain(bv, cv),
        Model::ErrorRate => {
            let n = |s: &RungSummary| s.completed.saturating_add(s.failed);
            let (b, c) = (base.summary, cand.summary);
            // Run-to-run spread of the error rate: each side's overdispersion over its
            // repeats; a side of one run borrows the other's, as the bootstrap borrows run
            // effects. The counts then stand for measured / φ independent requests.
            let dispersion = match (
                stats::dispersion(&error_runs(base.lines)),
                stats::dispersion(&error_runs(cand.lines)),
            ) {
                (Some(db), Some(dc)) => [db, dc],
                (Some(d), None) | (None, Some(d)) => [d, d],
                (None, None) => [1.0, 1.0],
            };
            let counts = Counts {
                sides: [(b.failed, n(b)), (c.failed, n(c))],
                dispersion,
            };
            let rate = |k: u64, m: u64| if m == 0 { 0.0 } else { k as f64 / m as f64 };
            let (pb, pc) = (rate(b.failed, n(b)), rate(c.failed, n(c)));
            let (nb, nc) = (n(b) as f64 / dispersion[0], n(c) as f64 / dispersion[1]);
            Evidence {
                base: bv,
                cand: cv,
                ratio: None,
                diff: Some(stats::newcombe_p(pb, nb, pc, nc, level)),
                cand_ci: Some(stats::wilson_p(pc, nc, level)),
                method: Method::Proportion,
                level,
                requests: n(b).min(n(c)) as usize,
                counts: Some(counts),
                too_few: (n(b) == 0 || n(c) == 0)
                    .then(|| "no measured requests on one side".to_string()),
                repeats,
                drift: None,
                blocks: [1, 1],
            }
        }
        Model::Latency(stat, which) => {
            let (b, c) = (
                latency_blocks(base.lines, which),
                latency_blocks(cand.lines, which),
            );
            let need = stat.min_samples(level);
            let (nb, nc) = (b.pooled.samples(), c.pooled.samples());
            let too_few = if b.requests < stats::MIN_REQUESTS || c.requests < stats::MIN_REQUESTS {
                Some(format!(
                    "too few requests with samples ({} baseline, {} candidate); the bootstrap needs at least {} per side: raise workload.requests_per_rung to ≥ {}",
                    b.requests,
                    c.requests,
                    stats::MIN_REQUESTS,
                    stats::MIN_REQUESTS
                ))
            } else if nb < need || nc < need {
                Some(format!(
                    "{key} needs at least {need} samples per side for a distribution-free bound at the per-check level {} (have {nb} baseline, {nc} candidate): raise workload.requests_per_rung to ≥ {need}", stats::level_text(level)
                ))
            } else {
                None
            };
            let runs = |s: &Side| -> Vec<Groups> {
                if std::ptr::eq(s.lines, base.lines) {
                    b.runs.clone()
                } else {
                    c.runs.clone()
                }
            };
            let z = stats::z_for(level);
            let mut e = resampled(
                [(base, &b.pooled), (cand, &c.pooled)],
                hier.then_some(runs),
                |r| large::latency(r, stat, z),
                |v| stat.compute(&mut v.concat()),
                |v| stat.compute(v),
                [bv, cv],
                levels,
            );
            e.too_few = too_few;
            e.requests = b.requests.min(c.requests);
            e.blocks = [b.block, c.block].map(|v| v.into_iter().max().unwrap_or(1));
            e
        }
        Model::Throughput(w) => {
            let bg = throughput_groups(base.lines.iter(), w, &base.slo);
            let cg = throughput_groups(cand.lines.iter(), w, &cand.slo);
            let runs = |s: &Side| -> Vec<Groups> {
                by_repeat(s.lines)
                    .into_iter()
                    .map(|r| throughput_groups(r.into_iter(), w, &s.slo))
                    .collect()
            };
            let mut e = resampled(
                [(base, &bg), (cand, &cg)],
                hier.then_some(runs),
                large::throughput,
                rate_of_runs,
                rate_of,
                [bv, cv],
                levels,
            );
            e.requests = bg.len().min(cg.len());
            if bg.len() < stats::MIN_REQUESTS || cg.len() < stats::MIN_REQUESTS {
                e.too_few = Some(format!(
                    "too few measured requests ({} baseline, {} candidate); the bootstrap needs at least {} per side: raise workload.requests_per_rung to ≥ {}",
                    bg.len(),
                    cg.len(),
                    stats::MIN_REQUESTS,
                    stats::MIN_REQUESTS
                ));
            }
            e
        }
    };
    if matches!(e.method, Method::Bootstrap | Method::LargeSample) {
        e.repeats = repeats;
    }
    Ok(e)
}

/// The levels a check's intervals are computed at, and the drift assumed without repeats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Levels {
    /// Two-sided level of each check's interval (the family's, Bonferroni over its checks).
    pub per_check: f64,
    /// The family-wise level (0.95).
    pub family: f64,
    /// Run-to-run spread assumed when neither side has two runs (`--drift`), e.g. 0.05.
    pub assumed_drift: Option<f64>,
}

impl Levels {
    /// Levels without an assumed drift.
    pub fn new(per_check: f64, family: f64) -> Levels {
        Levels {
            per_check,
            family,
            assumed_drift: None,
        }
    }
}

/// Evidence from per-request samples (`groups` of each side): the within-run interval by the
/// cheapest method that holds (large-sample intervals when both sides are big, the big
/// side's estimate against the small side's bootstrap when one is ([`mixed`]), else the
/// bootstrap, stratified by repeat when `runs` (each side's groups per repeat) is given),
/// then widened by the runs' drift ([`components`]) when a side has repeats or a drift is
/// assumed. `estimate` is a side's large-sample estimate, `of_runs` the statistic of
/// per-repeat resamples, `of_one` of one resample.
fn resampled<'a>(
    sides: [(&Side<'a>, &Groups); 2],
    runs: Option<impl Fn(&Side<'a>) -> Vec<Groups>>,
    estimate: impl Fn(&[Groups]) -> Option<SideEstimate>,
    of_runs: impl Fn(&mut [Vec<f64>]) -> f64,
    of_one: impl Fn(&mut [f64]) -> f64,
    [bv, cv]: [f64; 2],
    levels: Levels,
) -> Evidence {
    let [(base, bg), (cand, cg)] = sides;
    let per_run = runs.map(|runs| (runs(base), runs(cand)));
    let drift_on = per_run.is_some() || levels.assumed_drift.is_some();
    let (level, drift_level) = if drift_on {
        components::split_levels(levels.per_check, levels.family)
    } else {
        (levels.per_check, levels.family)
    };
    // One run's groups are `bg` / `cg` as they are: no second copy.
    let (rb, rc): (&[Groups], &[Groups]) = match &per_run {
        Some((b, c)) => (b, c),
        None => (std::slice::from_ref(bg), std::slice::from_ref(cg)),
    };
    let mut per_run_stats: Option<[Vec<f64>; 2]> = None;
    let (within, method) = 'within: {
        if bg.units() >= LARGE_SAMPLE && cg.units() >= LARGE_SAMPLE {
            if let Some((b, c)) = estimate(rb).zip(estimate(rc)) {
                per_run_stats = Some([b.runs.clone(), c.runs.clone()]);
                break 'within (large::compare(&b, &c, level), Method::LargeSample);
            }
        }
        if let Some(r) = mixed::one_big(rb, rc, &estimate, level, &of_runs) {
            break 'within (r, Method::Bootstrap);
        }
        let r = if per_run.is_some() {
            super::hier::bootstrap(rb, rc, stats::SEED, level, &of_runs)
        } else {
            stats::bootstrap_with(bg, cg, stats::SEED, level, &of_one)
        };
        (r, Method::Bootstrap)
    };
    let mut drift = None;
    let mut result = within;
    if drift_on {
        let [pb, pc] = per_run_stats.unwrap_or_else(|| {
            let of = |side: &[Groups]| -> Vec<f64> {
                if side.len() < 2 {
                    return Vec::new();
                }
                side.iter()
                    .map(|r| of_runs(&mut [r.values().to_vec()]))
                    .collect()
            };
            [of(rb), of(rc)]
        });
        let (r, d) = components::with_drift(
            within,
            level,
            drift_level,
            [&pb, &pc],
            [rb.len(), rc.len()],
            levels.assumed_drift,
        );
        result = r;
        drift = d;
    }
    let mut e = bootstrapped(result, bv, cv, level);
    e.method = method;
    e.drift = drift;
    e
}

/// The note on a verdict that rests on summary values alone.
pub const SUMMARY_ONLY: &str =
    "summary values only (vLLM files saved without --save-detailed): noise not judged";

/// The note on a throughput verdict from vLLM files without `start_times`.
pub const SUMMARY_ONLY_UNTIMED: &str =
    "summary value only (vLLM files without start_times): noise not judged";

/// Evidence for `key` when one side has summary values only (no per-request data): the two
/// values compared as they are, or no verdict when a side lacks the key.
pub fn summary_only(key: &str, base: &Side, cand: &Side) -> Evidence {
    let value = |s: &Side| s.summary.metric(key).filter(|v| v.is_finite());
    let mut e = Evidence::plain(
        value(base).unwrap_or(f64::NAN),
        value(cand).unwrap_or(f64::NAN),
    );
    let missing: Vec<&str> = [("baseline", value(base)), ("candidate", value(cand))]
        .into_iter()
        .filter(|(_, v)| v.is_none())
        .map(|(side, _)| side)
        .collect();
    if !missing.is_empty() {
        e.too_few = Some(format!(
            "{key} is not in the {} result file (vLLM writes only the percentiles it was asked for: --metric-percentiles)",
            missing.join(" and ")
        ));
    }
    e
}

/// Evidence from a bootstrap (flat or hierarchical) of the values `bv` and `cv`.
fn bootstrapped(r: stats::BootstrapResult, bv: f64, cv: f64, level: f64) -> Evidence {
    Evidence {
        base: bv,
        cand: cv,
        ratio: Some(r.ratio),
        diff: Some(r.diff),
        cand_ci: Some(r.cand_ci),
        method: Method::Bootstrap,
        level,
        requests: 0,
        counts: None,
        too_few: None,
        repeats: [1, 1],
        drift: None,
        blocks: [1, 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_keys_map_to_models() {
        assert_eq!(
            Model::of("p99_ttft_ms"),
            Model::Latency(Statistic::Quantile(0.99), Latency::Ttft)
        );
        assert_eq!(
            Model::of("p99.9_itl_ms"),
            Model::Latency(Statistic::Quantile(0.999), Latency::Itl)
        );
        assert_eq!(
            Model::of("median_ttft_sched_ms"),
            Model::Latency(Statistic::Quantile(0.5), Latency::TtftSched)
        );
        assert_eq!(
            Model::of("mean_e2el_all_ms"),
            Model::Latency(Statistic::Mean, Latency::E2elAll)
        );
        assert_eq!(Model::of("max_ttft_ms"), Model::Plain);
        assert_eq!(Model::of("qps"), Model::Throughput(Weight::Requests));
        assert_eq!(Model::of("error_rate"), Model::ErrorRate);
        assert_eq!(Model::of("completed"), Model::Plain);
    }

    /// A session's turns are one group (one cluster) for every latency and throughput;
    /// lines without a session stay a group each.
    #[test]
    fn a_sessions_turns_are_resampled_together() {
        let line = |i: u32, session: Option<u32>| -> RequestLine {
            let t = f64::from(i) * 10.0;
            RequestLine {
                index: i,
                scheduled_ms: t,
                sent_ms: t,
                first_token_ms: Some(t + 5.0),
                end_ms: t + 9.0,
                ttft_ms: Some(5.0),
                tpot_ms: Some(1.0),
                e2e_ms: 9.0,
                input_tokens: 8,
                output_tokens: 5,
                itl_ms: vec![1.0; 4],
                ok: true,
                status: Some(200),
                session,
                turn: session.map(|_| i % 4),
                session_turns: session.map(|_| 4),
                ..RequestLine::default()
            }
        };
        let sessions: Vec<RequestLine> = (0..12).map(|i| line(i, Some(i / 4))).collect();
        let ttft = latency_groups(&sessions, Latency::Ttft);
        assert_eq!(ttft.len(), 3);
        assert!(ttft.iter().all(|g| g.len() == 4));
        let itl = latency_groups(&sessions, Latency::Itl);
        assert_eq!(
            itl.iter().map(<[f64]>::len).collect::<Vec<_>>(),
            [16, 16, 16]
        );
        let t = throughput_groups(sessions.iter(), Weight::OutputTokens, &Slo::default());
        assert_eq!(t.len(), 3);
        assert_eq!(t.get(1)[..3], [40.0, 49.0, 5.0]);
        assert_eq!(t.get(1).len(), 12);
        // Sessions whose turns interleave: each session's turns still make one group, in
        // the order of its first turn.
        let spread: Vec<RequestLine> = (0..12).map(|i| line(i, Some(i % 3))).collect();
        let t = throughput_groups(spread.iter(), Weight::OutputTokens, &Slo::default());
        assert_eq!(t.len(), 3);
        let sent: Vec<f64> = t.get(1).chunks_exact(3).map(|c| c[0]).collect();
        assert_eq!(sent, [10.0, 40.0, 70.0, 100.0]);
        let single: Vec<RequestLine> = (0..12).map(|i| line(i, None)).collect();
        let ttft = latency_groups(&single, Latency::Ttft);
        assert_eq!(ttft.len(), 12);
        assert_eq!(ttft.values(), [5.0; 12]);
        let itl = latency_groups(&single, Latency::Itl);
        assert_eq!((itl.len(), itl.samples()), (12, 48));
    }

    #[test]
    fn rate_of_counts_weight_per_second() {
        let mut v = vec![0.0, 500.0, 1.0, 100.0, 2000.0, 1.0];
        assert_eq!(rate_of(&mut v), 1.0);
    }
}
