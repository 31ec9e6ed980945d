//! What `ladder validate` says about a scenario's gate at its size: the checks that can
//! never be decided with its requests (or sessions) per rung, where every gate would leave
//! them inconclusive, and a gate of such checks alone would end with no verdict (exit 2).

use super::evidence::Model;
use super::stats::{self, MIN_REQUESTS};
use super::threshold::{self, Check};
use crate::scenario::Scenario;

/// Warnings for the checks of `sc` (its `gate:` rules, else the defaults) that its rung
/// size can never decide; empty when every check can be, or when the size is not known
/// before the run (a soak's duration, a trace, a ramp).
pub fn warnings(sc: &Scenario) -> Vec<String> {
    if sc.load.duration.is_some() || sc.load.trace.is_some() || sc.load.ramp.is_some() {
        return Vec::new();
    }
    let Ok(checks) = (if sc.gate.is_empty() {
        Ok(threshold::defaults_for(sc.endpoint.api))
    } else {
        threshold::from_gate_rules(&sc.gate)
    }) else {
        return Vec::new();
    };
    let n = sc.workload.requests_per_rung as usize;
    let unit = if sc.workload.sessions.is_some() {
        "sessions"
    } else {
        "requests"
    };
    let rungs = sc.load.rates.len().max(sc.load.concurrency.len())
        + usize::from(sc.load.baseline_rate.is_some());
    let modelled = checks
        .iter()
        .filter(|c| Model::of(&c.metric) != Model::Plain)
        .count();
    let level = stats::family_level(stats::CONFIDENCE, (modelled * rungs).max(1));
    let mut out = Vec::new();
    let mut never = 0;
    for c in &checks {
        if let Some(w) = never_judged(c, n, unit, level) {
            never += 1;
            out.push(w);
        }
    }
    if never == checks.len() && !checks.is_empty() {
        out.push(format!(
            "no gate check can ever be decided at {n} {unit} per rung: every `ladder gate` of \
             this scenario would end with no verdict (exit 2); raise workload.requests_per_rung"
        ));
    }
    out
}

/// Why `check` can never be decided at `n` per rung and the per-check `level`, or `None`.
fn never_judged(c: &Check, n: usize, unit: &str, level: f64) -> Option<String> {
    let alpha = (1.0 - level) / 2.0;
    let per = format!("{n} {unit} per rung");
    match Model::of(&c.metric) {
        Model::Throughput(_) if n < MIN_REQUESTS => Some(format!(
            "gate check `{}` can never be decided at {per}: its interval needs at least \
             {MIN_REQUESTS} per rung (raise workload.requests_per_rung to ≥ {MIN_REQUESTS})",
            c.metric
        )),
        Model::Latency(stat, _) if n < MIN_REQUESTS => {
            // The rank test's smallest p-value: every candidate value past every baseline one.
            let best = super::small::tail(n, n, n * n);
            let bounded = matches!(
                c.bound,
                super::Bound::Increase(_) | super::Bound::Decrease(_)
            );
            (best > alpha || !bounded || matches!(stat, stats::Statistic::Std)).then(|| {
                format!(
                    "gate check `{} {}` can never be decided at {per}: below {MIN_REQUESTS} only \
                     a rank test judges a latency change, and it cannot reach the per-check \
                     level {} with so few (raise workload.requests_per_rung to ≥ {MIN_REQUESTS})",
                    c.metric,
                    c.bound,
                    stats::level_text(level)
                )
            })
        }
        Model::Latency(stat, _) if n < stat.min_samples(level) => Some(format!(
            "gate check `{}` can never be decided at {per}: at the per-check level {} it needs \
             at least {} samples per side (raise workload.requests_per_rung to ≥ {})",
            c.metric,
            stats::level_text(level),
            stat.min_samples(level),
            stat.min_samples(level)
        )),
        _ => None,
    }
}
