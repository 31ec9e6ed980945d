//! The summary keys a rung's request lines give beyond its counts, throughputs and latency
//! statistics (`check::lines` checks those): the achieved rate, the peak number in flight,
//! the peak output rate, goodput, the token accounting, the reasoning, prefix and session
//! splits. Each is recomputed from the lines with the code the writer ran on the records
//! (`metrics`), and the whole summary compared key by key, so any key the lines give and a
//! reader may use (compare, gate, history, report) is refused when edited. Also the keys a
//! summary file repeats (`qps`, `error_rate`, `request_rate`) against what they repeat.
//!
//! Also run.json's rungs against the ones its resolved scenario plans.
//!
//! Not from the lines, so not checked here: `inexact_prompts` (the prompts' tokenization),
//! `server_*` (the server's scrapes), a trace's or ramp's offered `request_rate` and a
//! ramp's window table (the plan).

use std::path::Path;

use serde_json::{Map, Value};

use super::{bad, close};
use crate::metrics::compute::{
    achieved_rate, max_in_flight_of, meets_slo, peak_output_rate, stats,
};
use crate::metrics::models::{ModelSummary, MODEL_LATENCIES};
use crate::metrics::prefix::PrefixSplit;
use crate::metrics::reasoning::Reasoning;
use crate::metrics::sessions::SessionSummary;
use crate::metrics::{RungSummary, TokenAccounting};
use crate::record::{RequestRecord, TokenSource};
use crate::results::load_error::LoadError;
use crate::results::names::result_file_name;
use crate::results::types::{gap_of, ns};
use crate::results::types::{RequestLine, RunInfo, RunStatus};
use crate::scenario::{rate_label, Scenario, Slo};

/// What the lines give besides counts and latencies, for one run of a rung (not a pool).
pub(crate) struct Derived<'a> {
    /// The scenario's SLO, as run.json records it (goodput counts requests meeting it).
    pub slo: &'a Slo,
    /// run.json warns that requests of a streamed (soak) rung arrived out of send order:
    /// the writer's peak in flight and peak output rate may then be off by them.
    pub late_arrivals: bool,
}

impl Derived<'_> {
    /// The summary `s` of one run against what `all` (its lines, warmup included) give.
    pub(crate) fn check(
        &self,
        path: &Path,
        s: &RungSummary,
        all: &[(usize, &RequestLine)],
    ) -> Result<(), LoadError> {
        let measured: Vec<&RequestLine> =
            all.iter().map(|&(_, l)| l).filter(|l| !l.warmup).collect();
        let ok = || measured.iter().copied().filter(|l| l.ok);
        let per_s = |x: u64| {
            if s.duration_s > 0.0 {
                x as f64 / s.duration_s
            } else {
                0.0
            }
        };
        let mut r = s.clone();
        r.achieved_rate = achieved_rate(
            measured.len() as u64,
            measured.iter().map(|l| ns(l.sent_ms)).min(),
            measured.iter().map(|l| ns(l.sent_ms)).max(),
        );
        if !self.late_arrivals {
            r.max_concurrent_requests =
                max_in_flight_of(all.iter().map(|(_, l)| (ns(l.sent_ms), ns(l.end_ms))));
            // NaN: a file written before the key existed.
            if !s.max_output_tokens_per_s.is_nan() {
                r.max_output_tokens_per_s = peak_output_rate(|| {
                    ok().map(|l| {
                        let gaps = l.itl_ms.iter().map(|&g| gap_of(g));
                        (ns(l.sent_ms), l.first_token_ms.map(ns), gaps)
                    })
                });
            }
        }
        r.request_goodput = per_s(
            ok().filter(|l| meets_slo(&l.bare_record(), self.slo))
                .count() as u64,
        );
        r.retokenized_outputs = ok()
            .filter(|l| l.token_source != TokenSource::Usage)
            .count() as u64;
        r.tokens = TokenAccounting::from_records(
            measured.iter().map(|l| l.bare_record()),
            ok().map(RequestLine::bare_record),
        );
        // The lines keep the reason's text, the records a constant: the count is checked.
        r.tokens.untrusted_usage_reason = s.tokens.untrusted_usage_reason.clone();
        r.reasoning =
            Reasoning::from_parts(ok().map(|l| (l.reasoning_tokens, l.output_tokens, l.ttfc_ms())));
        if let (Some(r), Some(s)) = (&mut r.reasoning, &s.reasoning) {
            // TTFC's statistics are checked with the other latencies.
            r.ttfc = s.ttfc;
        }
        r.prefix = PrefixSplit::from_parts(
            measured
                .iter()
                .map(|l| (l.prefix_group, l.prefix_first, l.ttft_ms.filter(|_| l.ok))),
        );
        let turns: Vec<RequestRecord> = measured
            .iter()
            .filter(|l| l.session.is_some())
            .map(|l| l.bare_record())
            .collect();
        r.sessions = SessionSummary::of(&turns.iter().collect::<Vec<_>>());
        r.models = models_of(&measured, s.duration_s, s.pooling.is_some());
        same_models(path, s, &r.models)?;
        models_add_up(path, s)?;
        differs(path, s, &r, "these request lines give")
    }
}

/// A mix's breakdown from the measured lines of one run, as `metrics::models` makes it from
/// the records (each model's counts, tokens, throughputs over the rung's `duration_s`, and
/// its TTFT, TPOT, ITL and E2E statistics).
pub(crate) fn models_of(
    measured: &[&RequestLine],
    duration_s: f64,
    pooled: bool,
) -> Vec<ModelSummary> {
    let mut names: Vec<&str> = Vec::new();
    for l in measured {
        if let Some(m) = l.model.as_deref() {
            if !names.contains(&m) {
                names.push(m);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let mine: Vec<&RequestLine> = measured
                .iter()
                .copied()
                .filter(|l| l.model.as_deref() == Some(name) && !l.interrupted())
                .collect();
            let ok = || mine.iter().filter(|l| l.ok);
            let latency = MODEL_LATENCIES
                .into_iter()
                .filter(|l| !(pooled && l.is_token_timing()))
                .map(|which| (which, stats(super::latency::samples(which, &mine))))
                .collect();
            ModelSummary::from_counts(
                name,
                mine.len() as u64,
                ok().count() as u64,
                ok().map(|l| u64::from(l.input_tokens)).sum(),
                ok().map(|l| u64::from(l.output_tokens)).sum(),
                duration_s,
                latency,
            )
        })
        .collect()
}

/// A pool of repeats' breakdown against the one every repeat's lines give together (the
/// pool's throughputs over its summed duration, as the runner pools them).
pub(crate) fn pooled_models(
    path: &Path,
    s: &RungSummary,
    all: &[(usize, &RequestLine)],
) -> Result<(), LoadError> {
    // A pool without a breakdown claims none: pools written before they carried one (merged
    // shards with repeats and `bless --add`, from c5550e0 to 5328e68) stay readable. A single
    // run's rung has carried its breakdown since model mixes exist, and is held to it above.
    if s.models.is_empty() {
        return Ok(());
    }
    let measured: Vec<&RequestLine> = all.iter().map(|&(_, l)| l).filter(|l| !l.warmup).collect();
    let mut r = s.clone();
    r.models = models_of(&measured, s.duration_s, s.pooling.is_some());
    same_models(path, s, &r.models)?;
    models_add_up(path, s)?;
    differs(path, s, &r, "its repeats' request lines together give")
}

/// The stored breakdown names the models the lines name, in the same order.
fn same_models(path: &Path, s: &RungSummary, lines: &[ModelSummary]) -> Result<(), LoadError> {
    let stored: Vec<&str> = s.models.iter().map(|m| m.model.as_str()).collect();
    let given: Vec<&str> = lines.iter().map(|m| m.model.as_str()).collect();
    if stored == given {
        return Ok(());
    }
    Err(bad(
        path,
        format!(
            "{} breaks its requests down by the models [{}], but its request lines name [{}]",
            result_file_name(s.rate),
            stored.join(", "),
            given.join(", ")
        ),
    ))
}

/// A mix's breakdown adds up to its rung: requests, successes, failures and tokens.
pub(crate) fn models_add_up(path: &Path, s: &RungSummary) -> Result<(), LoadError> {
    if s.models.is_empty() {
        return Ok(());
    }
    let sum = |f: fn(&ModelSummary) -> u64| s.models.iter().map(f).fold(0u64, u64::saturating_add);
    for (key, parts, whole) in [
        ("num_prompts", sum(|m| m.num_prompts), s.num_prompts),
        ("completed", sum(|m| m.completed), s.completed),
        ("failed", sum(|m| m.failed), s.failed),
        (
            "total_input_tokens",
            sum(|m| m.total_input_tokens),
            s.total_input_tokens,
        ),
        (
            "total_output_tokens",
            sum(|m| m.total_output_tokens),
            s.total_output_tokens,
        ),
    ] {
        if parts != whole {
            return Err(bad(
                path,
                format!(
                    "{}: the models' `{key}` add up to {parts}, but the rung's is {whole}",
                    result_file_name(s.rate)
                ),
            ));
        }
    }
    Ok(())
}

/// run.json's rungs against the rungs its resolved scenario plans (`Scenario::rungs`: the
/// baseline, then `load.rates`; or the concurrency levels, trace speeds, the ramp): every
/// rung listed is planned, and a complete run lists every planned one. A scenario this build
/// cannot read back (a folder of an older layout) is not checked here.
pub(super) fn planned_rungs(run_json: &Path, info: &RunInfo) -> Result<(), LoadError> {
    let Ok(scenario) = serde_json::from_value::<Scenario>(info.scenario.clone()) else {
        return Ok(());
    };
    // A search's probes are chosen as it runs: each lies within its bounds.
    if let Some(search) = &scenario.load.search {
        let (min, max) = (search.min_level(), search.max);
        return match info.rungs.iter().find(|e| e.rate < min || e.rate > max) {
            Some(e) => Err(bad(
                run_json,
                format!(
                    "rung {} lies outside its capacity search's range ({} to {})",
                    rate_label(e.rate),
                    rate_label(min),
                    rate_label(max)
                ),
            )),
            None => Ok(()),
        };
    }
    let planned: Vec<String> = scenario.rungs().into_iter().map(rate_label).collect();
    let plan = planned.join(", ");
    if let Some(e) = info
        .rungs
        .iter()
        .find(|e| !planned.contains(&rate_label(e.rate)))
    {
        return Err(bad(
            run_json,
            format!(
                "rung {} is not a rung of its scenario (`scenario.load` plans {plan})",
                rate_label(e.rate)
            ),
        ));
    }
    let listed = |p: &String| info.rungs.iter().any(|e| rate_label(e.rate) == *p);
    match planned.iter().find(|p| !listed(p)) {
        Some(p) if info.status == RunStatus::Complete => Err(bad(
            run_json,
            format!(
                "the run is complete, but `scenario.load` plans rung {p}, which it does not list \
                 (it plans {plan})"
            ),
        )),
        _ => Ok(()),
    }
}

/// The `tpot_ms` the writer derives from a line's times and token count
/// (`RequestRecord::tpot`: (e2e − TTFT) / (output tokens − 1), for a success of two tokens
/// or more; none otherwise).
pub(super) fn tpot_of(l: &RequestLine) -> Option<f64> {
    let first_token = l.first_token_ms.map(ns);
    crate::record::tpot_of(
        l.ok,
        l.output_tokens,
        ns(l.sent_ms),
        first_token,
        ns(l.end_ms),
    )
    .map(crate::results::types::ms)
}

/// A pooled summary (several repeats) against the pool of its repeats' summaries, as the
/// runner and `bless --add` make it (`metrics::repeats::pool`), its prefix split from every
/// repeat's lines.
pub(super) fn pooled(
    path: &Path,
    s: &RungSummary,
    all: &[(usize, &RequestLine)],
) -> Result<(), LoadError> {
    let mut r = crate::metrics::repeats::pool(s.repeats.clone(), s.latency.clone(), None);
    r.reasoning = s.reasoning.clone();
    r.prefix = PrefixSplit::from_parts(
        all.iter()
            .map(|&(_, l)| l)
            .filter(|l| !l.warmup)
            .map(|l| (l.prefix_group, l.prefix_first, l.ttft_ms.filter(|_| l.ok))),
    );
    // Not from the repeats: the run's plan and its scrapes.
    r.server = s.server.clone();
    r.ramp = s.ramp.clone();
    r.offered_rate = s.offered_rate;
    differs(path, s, &r, "its repeats give")
}

/// The keys a summary file holds against the summary read from it: a key written twice
/// (`qps` beside `request_throughput`, `request_rate` beside `rate`) or derived on writing
/// (`error_rate`) must say what the key it repeats says.
pub(super) fn repeated_keys(
    path: &Path,
    raw: &Map<String, Value>,
    s: &RungSummary,
) -> Result<(), LoadError> {
    let written = Value::Object(s.to_json_map());
    // Keys the summary does not read back (another tool's, a newer ladder's) are left alone.
    match first_difference(&Value::Object(raw.clone()), &written, String::new(), false) {
        None => Ok(()),
        Some((key, found, expected)) => Err(bad(
            path,
            format!("`{key}` is {found}, but the keys it repeats or derives from give {expected}"),
        )),
    }
}

/// `stored` against `recomputed`: the first key (in file order) on which they disagree.
fn differs(
    path: &Path,
    stored: &RungSummary,
    recomputed: &RungSummary,
    source: &str,
) -> Result<(), LoadError> {
    let (a, b) = (
        Value::Object(stored.to_json_map()),
        Value::Object(recomputed.to_json_map()),
    );
    match first_difference(&a, &b, String::new(), true).or_else(|| missing(&b, &a)) {
        None => Ok(()),
        Some((key, found, expected)) => Err(bad(
            path,
            format!(
                "{} says {key} {found}, but {source} {expected}",
                result_file_name(stored.rate)
            ),
        )),
    }
}

/// A top-level key `b` has and `a` lacks (a split the lines give, missing from the file).
fn missing(a: &Value, b: &Value) -> Option<(String, String, String)> {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return None;
    };
    a.iter()
        .find(|(k, _)| !b.contains_key(*k))
        .map(|(k, v)| (k.clone(), "nothing".into(), v.to_string()))
}

/// The first place where `found` says something else than `expected`: numbers differ by
/// more than [`close`], a number stands against a non-number, or an object key of `found`
/// holding a number is absent from `expected` (when `strict`). Keys `found` lacks are not
/// differences (a file older than the key); strings are not compared.
fn first_difference(
    found: &Value,
    expected: &Value,
    at: String,
    strict: bool,
) -> Option<(String, String, String)> {
    let here = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match (found, expected) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64()?, y.as_f64()?);
            (!close(x, y)).then(|| (at, x.to_string(), y.to_string()))
        }
        (Value::Number(x), other) | (other, Value::Number(x)) => {
            let (x, other) = (x.to_string(), other.to_string());
            Some(if found.is_number() {
                (at, x, other)
            } else {
                (at, other, x)
            })
        }
        (Value::Object(a), Value::Object(b)) => a.iter().find_map(|(k, v)| match b.get(k) {
            Some(w) => first_difference(v, w, here(k), strict),
            None if strict && v.is_number() => Some((here(k), v.to_string(), "nothing".into())),
            None => None,
        }),
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some((
                    at,
                    format!("{} items", a.len()),
                    format!("{} items", b.len()),
                ));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (v, w))| first_difference(v, w, format!("{at}[{i}]"), strict))
        }
        _ => None,
    }
}
