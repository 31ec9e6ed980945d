//! The fold against `summarize` on the same records.

use std::time::Duration;

use serde_json::{Map, Value};

use super::*;
use crate::metrics::summarize;
use crate::record::RequestError;

/// A deterministic stream of pseudo-random numbers.
struct Rand(u64);

impl Rand {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `n` records of a busy rung: warmup, failures of several classes, reasoning, prefix
/// groups, untrusted usage, re-tokenized outputs. With `whole_us`, every latency is a whole
/// number of microseconds (TPOT included); otherwise times carry nanoseconds.
fn records(n: u32, seed: u64, whole_us: bool) -> Vec<RequestRecord> {
    let mut rng = Rand(seed);
    let unit = |rng: &mut Rand, us: u64| {
        let ns = if whole_us { 0 } else { rng.below(1000) };
        Duration::from_nanos(us * 1000 + ns)
    };
    let mut at = 0u64;
    (0..n)
        .map(|i| {
            at += rng.below(3_000);
            let scheduled = Duration::from_micros(at);
            let d = rng.below(400);
            let sent = scheduled + unit(&mut rng, d);
            let out = 1 + rng.below(40) as u32;
            let d = 5_000 + rng.below(200_000);
            let first = sent + unit(&mut rng, d);
            // Whole-µs TPOT: the decode time is a multiple of (out - 1) µs.
            let per = 200 + rng.below(30_000);
            let decode = Duration::from_micros(per * u64::from(out.max(2) - 1));
            let end = first + decode;
            let gaps: Vec<Duration> = (1..out)
                .map(|_| Duration::from_micros(rng.below(60_000)))
                .collect();
            let d = rng.below(2_000);
            let content = unit(&mut rng, d);
            let mut r = RequestRecord {
                index: i,
                warmup: i < 5,
                scheduled,
                sent,
                first_token: Some(first),
                first_content: Some(first + content),
                end,
                input_tokens: 100 + rng.below(20) as u32,
                server_prompt_tokens: (i % 4 != 0).then_some(110),
                output_tokens: out,
                server_completion_tokens: (i % 5 != 0).then_some(out),
                requested_output_tokens: 40,
                itl: gaps.into(),
                ..Default::default()
            };
            if i % 7 == 0 {
                r.reasoning_tokens = Some(out / 2);
            }
            if i % 11 == 0 {
                r.token_source = TokenSource::Retokenized;
            }
            if i % 13 == 0 {
                r.usage_rejected = Some("completion_tokens is more than twice max_tokens");
            }
            // A mix of three names (one request in 19 names none: a plain run's lines).
            if i % 19 != 0 {
                r.model = Some(["base", "lora-a", "lora-b"][(i % 3) as usize].into());
            }
            r.prefix_group = Some(i % 9);
            r.prefix_first = i < 9;
            if i % 17 == 3 {
                r.error = Some(RequestError {
                    class: [
                        ErrorClass::RateLimit,
                        ErrorClass::Timeout,
                        ErrorClass::Server5xx,
                    ][(i % 3) as usize],
                    status: None,
                    detail: "x".into(),
                });
                r.first_token = None;
                r.first_content = None;
                let d = rng.below(1_000_000);
                r.end = sent + unit(&mut rng, d);
            }
            r
        })
        .collect()
}

fn ctx() -> RungContext {
    RungContext {
        rate: 50.0,
        burstiness: 1.0,
        slo: Slo {
            ttft_ms: Some(100.0),
            tpot_ms: Some(20.0),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Fold `records` in completion order, settling as a runner does: once every record sent
/// before a time has arrived. Returns the fold and the records in that order.
fn fold_in_completion_order(
    mut recs: Vec<RequestRecord>,
    settle: bool,
) -> (RungFold, Vec<RequestRecord>) {
    recs.sort_by_key(|r| r.end);
    // The earliest send among the records still to come, after each one.
    let mut later_min = vec![Duration::MAX; recs.len() + 1];
    for i in (0..recs.len()).rev() {
        later_min[i] = later_min[i + 1].min(recs[i].sent);
    }
    let mut fold = RungFold::new(ctx().slo);
    for (i, r) in recs.iter().enumerate() {
        fold.add(r);
        if settle && later_min[i + 1] != Duration::MAX {
            fold.settle(later_min[i + 1]);
        }
    }
    (fold, recs)
}

/// Every key of two result maps, floats compared with `close` (`None`: to the bit).
fn assert_maps(a: &Map<String, Value>, b: &Map<String, Value>, close: Option<f64>) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "key sets"
    );
    for (k, va) in a {
        let vb = &b[k];
        match (va.as_f64(), vb.as_f64(), va.is_f64() || vb.is_f64()) {
            (Some(x), Some(y), true) => {
                let latency = k.ends_with("_ms");
                match close.filter(|_| latency) {
                    None => assert_eq!(x.to_bits(), y.to_bits(), "{k}: {x} vs {y}"),
                    Some(tol) => assert!((x - y).abs() <= tol, "{k}: {x} vs {y}"),
                }
            }
            // A mix's breakdown: each model's object compared as the rung's keys are.
            _ => match (va.as_array(), vb.as_array()) {
                (Some(xs), Some(ys)) if k == "models" => {
                    assert_eq!(xs.len(), ys.len(), "{k}");
                    for (x, y) in xs.iter().zip(ys) {
                        let (Some(x), Some(y)) = (x.as_object(), y.as_object()) else {
                            panic!("{k}: {x} vs {y}");
                        };
                        assert_maps(x, y, close);
                    }
                }
                _ => assert_eq!(va, vb, "{k}"),
            },
        }
    }
}

#[test]
fn folded_summary_is_summarize_to_the_bit_on_whole_microseconds() {
    for (n, seed) in [(1, 3), (2, 5), (60, 7), (3000, 11)] {
        let (fold, recs) = fold_in_completion_order(records(n, seed, true), true);
        assert_eq!(fold.late(), 0);
        let want = summarize(&recs, &ctx());
        let got = fold.summary(&ctx());
        assert_maps(&got.to_json_map(), &want.to_json_map(), None);
        assert!(want.reasoning.is_some() && want.prefix.is_some() || n < 8);
        assert!(want.models.len() == 3 || n < 3, "{:?}", want.models);
        assert_eq!(got, want, "{n} records");
    }
}

#[test]
fn folded_summary_is_within_half_a_microsecond_on_nanosecond_times() {
    let (fold, recs) = fold_in_completion_order(records(2500, 99, false), true);
    let want = summarize(&recs, &ctx());
    let got = fold.summary(&ctx());
    // 0.5 µs of rounding, plus float noise of a mean over thousands of values.
    assert_maps(&got.to_json_map(), &want.to_json_map(), Some(0.0005 + 1e-9));
    assert_eq!(got.max_concurrent_requests, want.max_concurrent_requests);
    assert_eq!(got.max_output_tokens_per_s, want.max_output_tokens_per_s);
}

#[test]
fn unsettled_fold_and_mid_rung_snapshots_agree_with_summarize() {
    let recs = records(800, 1234, true);
    let (fold, sorted) = fold_in_completion_order(recs.clone(), false);
    assert_eq!(fold.summary(&ctx()), summarize(&sorted, &ctx()));
    // A snapshot mid-rung is the summary of the records folded so far.
    let (mut fold, sorted) = fold_in_completion_order(Vec::new(), true);
    assert_eq!(fold.records(), 0);
    let mut sorted_all = recs;
    sorted_all.sort_by_key(|r| r.end);
    for (i, r) in sorted_all.iter().enumerate() {
        fold.add(r);
        if i == 400 {
            let want = summarize(&sorted_all[..=i], &ctx());
            assert_eq!(fold.summary(&ctx()), want);
        }
    }
    assert!(sorted.is_empty());
    assert!(fold.distinct_values() > 0);
}

#[test]
fn a_record_sent_before_the_settled_time_is_counted_late() {
    let recs = records(20, 8, true);
    let mut fold = RungFold::new(Slo::default());
    fold.settle(Duration::from_secs(3600));
    fold.add(&recs[10]);
    assert_eq!(fold.late(), 1);
}
