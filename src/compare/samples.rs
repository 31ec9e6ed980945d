//! From a rung's request lines to the sample groups a check resamples: one group per
//! request (a session's turns in one), per latency distribution or as throughput triples,
//! split by repeat; and the rates those triples give.

use super::groups::Groups;
use crate::metrics::Latency;
use crate::results::RequestLine;

/// SLO bounds used to count good requests for `request_goodput`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Slo {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
}

impl Slo {
    /// Read from a resolved scenario's `slo` object.
    pub fn from_scenario(s: &serde_json::Value) -> Self {
        let g = |k: &str| s.get("slo").and_then(|o| o.get(k)).and_then(|v| v.as_f64());
        Slo {
            ttft_ms: g("ttft_ms"),
            tpot_ms: g("tpot_ms"),
            e2e_ms: g("e2e_ms"),
        }
    }

    pub(super) fn met(&self, r: &RequestLine) -> bool {
        let within = |v: Option<f64>, b: Option<f64>| match (v, b) {
            (_, None) => true,
            (Some(v), Some(b)) => v <= b,
            (None, Some(_)) => false,
        };
        r.ok && within(r.ttft_ms, self.ttft_ms)
            && within(r.tpot_ms, self.tpot_ms)
            && within(Some(r.e2e_ms), self.e2e_ms)
    }
}

/// What each request contributes to a throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    Requests,
    OutputTokens,
    AllTokens,
    GoodRequests,
}

/// Per-request sample groups of one latency distribution (measured requests only; the
/// success-only distributions skip failures). ITL keeps each request's gaps together.
pub fn latency_groups(lines: &[RequestLine], which: Latency) -> Groups {
    groups_of(lines.iter(), which)
}

/// A latency check's samples as resampling draws them: each repeat's per-request groups,
/// in the order the rung's lines were written (the order requests ended), merged into blocks
/// of consecutive requests when the series is autocorrelated.
///
/// Near and past a server's capacity requests queue together: a burst of slow ones, then a
/// drained queue. Resampling such requests one by one treats each as an independent draw and
/// understates how much the rung's median moves from run to run; the excess then looks like
/// drift between runs, of which a baseline measures a handful. Blocks of `stats::block_length`
/// consecutive requests (1, i.e. no blocks, when no autocorrelation of the per-request means
/// is significant) keep each burst together, so the within-run interval carries the
/// queueing noise it has. Sessions are already resampled whole and are not blocked.
pub(super) struct Blocked {
    /// Every repeat's blocks, one after the other (the requests' own groups, in file order,
    /// when nothing is blocked: the same groups as [`latency_groups`]).
    pub pooled: Groups,
    /// Each repeat's blocks.
    pub runs: Vec<Groups>,
    /// The block length of each repeat (1: requests resampled one by one).
    pub block: Vec<usize>,
    /// Requests (or sessions) with samples, over every repeat.
    pub requests: usize,
}

/// Fewer requests than this in a run are resampled one by one: the autocorrelation test
/// cannot tell a queue from chance there (its band is ±2·√(log₁₀ n / n), ±0.48 at 24
/// requests), and a block bootstrap would draw a handful of blocks.
const MIN_BLOCKED: usize = 50;

/// See [`Blocked`].
pub(super) fn latency_blocks(lines: &[RequestLine], which: Latency) -> Blocked {
    let per_request: Vec<Groups> = by_repeat(lines)
        .into_iter()
        .map(|r| groups_of(r.into_iter(), which))
        .collect();
    let sessions = lines.iter().any(|r| r.session.is_some());
    let block: Vec<usize> = per_request
        .iter()
        .map(|g| {
            if sessions || g.len() < MIN_BLOCKED {
                return 1;
            }
            let means: Vec<f64> = g
                .iter()
                .map(|s| s.iter().sum::<f64>() / s.len().max(1) as f64)
                .collect();
            crate::stats::block_length(&means)
        })
        .collect();
    let requests = per_request.iter().map(Groups::len).sum();
    if block.iter().all(|b| *b <= 1) {
        let pooled = if per_request.len() == 1 {
            per_request[0].clone()
        } else {
            latency_groups(lines, which)
        };
        return Blocked {
            pooled,
            runs: per_request,
            block,
            requests,
        };
    }
    let runs: Vec<Groups> = per_request
        .iter()
        .zip(&block)
        .map(|(g, b)| g.blocks(*b))
        .collect();
    Blocked {
        pooled: Groups::concat(&runs),
        runs,
        block,
        requests,
    }
}

/// One request's samples for a group: one value, a throughput's triple, or its ITL gaps.
enum Sample<'a> {
    One(f64),
    Triple([f64; 3]),
    Gaps(&'a [f64]),
}

impl Sample<'_> {
    fn as_slice(&self) -> &[f64] {
        match self {
            Sample::One(x) => std::slice::from_ref(x),
            Sample::Triple(t) => t,
            Sample::Gaps(g) => g,
        }
    }
}

pub(super) fn groups_of<'a>(
    lines: impl Iterator<Item = &'a RequestLine> + Clone,
    which: Latency,
) -> Groups {
    let sessions = lines.clone().any(|r| r.session.is_some());
    let measured = lines.filter(|r| !r.warmup && !r.interrupted());
    let one = |v: Option<f64>| v.map(Sample::One);
    by_session(
        sessions,
        measured.filter_map(|r| {
            let v = match which {
                Latency::Ttft => one(r.ttft_ms.filter(|_| r.ok)),
                Latency::Tpot => one(r.tpot_ms.filter(|_| r.ok)),
                Latency::Itl => {
                    Some(Sample::Gaps(&r.itl_ms)).filter(|_| r.ok && !r.itl_ms.is_empty())
                }
                Latency::E2el => one(Some(r.e2e_ms).filter(|_| r.ok)),
                Latency::TtftSched => one(r
                    .first_token_ms
                    .filter(|_| r.ok)
                    .map(|t| t - r.scheduled_ms)),
                Latency::E2elSched => one(Some(r.end_ms - r.scheduled_ms).filter(|_| r.ok)),
                Latency::E2elAll => one(Some(r.e2e_ms)),
                Latency::DispatchLag => one(Some(r.sent_ms - r.scheduled_ms)),
                Latency::Ttfc => one(r.ttfc_ms().filter(|_| r.ok)),
            };
            v.map(|v| (r.session, v))
        }),
    )
}

/// Groups of one session's turns merged into one (`workload.sessions`): a session's turns
/// share its history and its speed, so the session, not the turn, is the independent unit
/// that resampling (and the large-sample clusters) must draw. Other lines stay one group
/// each. Without sessions (`sessions` false) the samples go straight into their groups.
fn by_session<'a>(
    sessions: bool,
    items: impl Iterator<Item = (Option<u32>, Sample<'a>)>,
) -> Groups {
    let mut flat = Groups::default();
    if !sessions {
        for (_, v) in items {
            flat.push(v.as_slice());
        }
        return flat;
    }
    // A session's turns are spread over the rung: gathered first, in order of first turn.
    let mut out: Vec<Vec<f64>> = Vec::new();
    let mut at: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for (session, v) in items {
        match session.and_then(|id| at.get(&id).copied()) {
            Some(i) => out[i].extend_from_slice(v.as_slice()),
            None => {
                if let Some(id) = session {
                    at.insert(id, out.len());
                }
                out.push(v.as_slice().to_vec());
            }
        }
    }
    Groups::from(out)
}

/// Per-request `[sent_ms, end_ms, weight]` triples for a throughput bootstrap (a session's
/// turns in one group).
pub(super) fn throughput_groups<'a>(
    lines: impl Iterator<Item = &'a RequestLine> + Clone,
    w: Weight,
    slo: &Slo,
) -> Groups {
    // A session's triples stay together (see `by_session`); the rates read them three by
    // three, so a group may hold several.
    let sessions = lines.clone().any(|r| r.session.is_some());
    by_session(
        sessions,
        lines.filter(|r| !r.warmup && !r.interrupted()).map(|r| {
            let weight = match w {
                _ if !r.ok => 0.0,
                Weight::Requests => 1.0,
                Weight::OutputTokens => f64::from(r.output_tokens),
                Weight::AllTokens => f64::from(r.output_tokens + r.input_tokens),
                Weight::GoodRequests => f64::from(u8::from(slo.met(r))),
            };
            (r.session, Sample::Triple([r.sent_ms, r.end_ms, weight]))
        }),
    )
}

/// Sum of weights per second over first send to last end of a flattened resample.
pub(super) fn rate_of(v: &mut [f64]) -> f64 {
    let (mut first, mut last, mut total) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
    for t in v.chunks_exact(3) {
        first = first.min(t[0]);
        last = last.max(t[1]);
        total += t[2];
    }
    if last > first {
        total / ((last - first) / 1000.0)
    } else {
        f64::NAN
    }
}

/// Runs in a rung's lines: the largest `repeat` (0, in a one-run folder, counts as 1).
pub(crate) fn runs_in(lines: &[RequestLine]) -> usize {
    lines
        .iter()
        .map(|l| l.repeat as usize)
        .max()
        .unwrap_or(0)
        .max(1)
}

/// (failed, measured) of each repeat of a rung, warmup excluded.
pub(super) fn error_runs(lines: &[RequestLine]) -> Vec<(u64, u64)> {
    let mut runs = vec![(0u64, 0u64); runs_in(lines)];
    for l in lines.iter().filter(|l| !l.warmup && !l.interrupted()) {
        let r = &mut runs[(l.repeat as usize).max(1) - 1];
        r.0 += u64::from(!l.ok);
        r.1 += 1;
    }
    runs
}

/// A rung's lines split by repeat, in order (one group for a one-run folder).
pub(super) fn by_repeat(lines: &[RequestLine]) -> Vec<Vec<&RequestLine>> {
    let n = runs_in(lines);
    let mut out: Vec<Vec<&RequestLine>> = vec![Vec::new(); n];
    for l in lines {
        out[(l.repeat as usize).max(1) - 1].push(l);
    }
    out
}

/// Sum of weights per second over the summed windows (first send to last end) of each
/// repeat's resample: repeats ran at different times, so their windows add up.
pub(super) fn rate_of_runs(v: &mut [Vec<f64>]) -> f64 {
    let (mut total, mut span) = (0.0, 0.0);
    for r in v.iter() {
        let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
        for t in r.chunks_exact(3) {
            first = first.min(t[0]);
            last = last.max(t[1]);
            total += t[2];
        }
        if last > first {
            span += last - first;
        }
    }
    if span > 0.0 {
        total / (span / 1000.0)
    } else {
        f64::NAN
    }
}
