//! Unit tests of the run analysis (knee, SLO, multiples).

use super::*;
use crate::metrics::latency::Stats;

/// A rung with the given rate, QPS, median TTFT/TPOT (ms) and failure count out of 200.
fn rung(rate: f64, qps: f64, ttft: f64, tpot: f64, failed: u64) -> RungSummary {
    let mut r = RungSummary {
        rate,
        num_prompts: 200,
        completed: 200 - failed,
        failed,
        request_throughput: qps,
        request_goodput: qps,
        ..Default::default()
    };
    for (k, m) in [(Latency::Ttft, ttft), (Latency::Tpot, tpot)] {
        r.latency.insert(
            k,
            Stats {
                count: 200 - failed,
                median: m,
                ..Default::default()
            },
        );
    }
    r
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn saturating_curve_has_its_knee_at_the_plateau() {
    // Throughput follows the offered rate up to 20, then stalls at ~21.
    let rungs = vec![
        rung(1.0, 1.0, 100.0, 20.0, 0),
        rung(5.0, 5.0, 110.0, 21.0, 0),
        rung(10.0, 9.9, 120.0, 22.0, 0),
        rung(20.0, 19.5, 150.0, 25.0, 0),
        rung(30.0, 20.2, 180.0, 30.0, 0), // +0.7 of +10 offered: 7 %
        rung(40.0, 20.6, 190.0, 31.0, 0),
    ];
    let a = analyze(&rungs, &Slo::default(), Some(1.0));
    let k = a.knee.clone().expect("knee");
    assert_eq!(k.rate, 30.0);
    assert_eq!(k.reasons, vec![KneeReason::ThroughputPlateau]);
    // No latency bound and no errors: every rung meets the SLO, and the sentence says
    // that this includes rungs past the knee.
    assert_eq!(a.max_rate_within_slo, Some(40.0));
    assert_eq!(
        a.slo_text(),
        "40 req/s (the SLO bounds only the error rate, so rungs at and past the knee at \
         30 req/s meet it; set slo.ttft_ms, tpot_ms or e2e_ms to bound latency too)"
    );
    // With a latency bound the rung's goodput decides: the plain level.
    let slo = Slo {
        ttft_ms: Some(1000.0),
        ..Default::default()
    };
    let a = analyze(&rungs, &slo, Some(1.0));
    assert_eq!(a.slo_text(), "40 req/s");
}

#[test]
fn flat_growth_has_no_knee() {
    let rungs: Vec<_> = [1.0, 5.0, 10.0, 20.0]
        .iter()
        .map(|&r| rung(r, r * 0.98, 100.0 + r, 20.0, 0))
        .collect();
    let a = analyze(&rungs, &Slo::default(), None);
    assert_eq!(a.knee, None);
    assert!(a.knee_text().starts_with("none"));
    assert_eq!(a.max_rate_within_slo, Some(20.0));
    // No knee: nothing past it to warn of.
    assert_eq!(a.slo_text(), "20 req/s");
    assert_eq!(
        a.best_value,
        Some(RateRange {
            from: 1.0,
            to: 20.0
        })
    );
}

/// A best-value range never runs over rungs that miss the SLO: rerank rungs where 19 of 20
/// requests timed out had "best value 1 to 3 req/s" from the one that completed. Growth that
/// is good value stops at the first rung past the error bound; a baseline that misses it has
/// no range.
#[test]
fn the_best_value_range_stops_at_a_rung_that_misses_the_slo() {
    let slo = Slo::default();
    // Throughput grows faster than latency everywhere, but 10 req/s fails 30 of 200.
    let rungs = vec![
        rung(1.0, 1.0, 100.0, 20.0, 0),
        rung(5.0, 5.0, 101.0, 20.0, 0),
        rung(10.0, 10.0, 102.0, 20.0, 60),
        rung(20.0, 20.0, 103.0, 20.0, 0),
    ];
    let a = analyze(&rungs, &slo, Some(1.0));
    assert_eq!(a.best_value, Some(RateRange { from: 1.0, to: 5.0 }));
    let failing = vec![
        rung(1.0, 0.05, 100.0, 20.0, 190),
        rung(3.0, 0.05, 100.0, 20.0, 190),
    ];
    let a = analyze(&failing, &slo, Some(1.0));
    assert_eq!(a.best_value, None);
    assert!(
        a.best_value_text().starts_with(
            "none: the baseline rung (1 req/s) already misses the SLO (error rate 95.0 %"
        ),
        "{}",
        a.best_value_text()
    );
}

#[test]
fn failing_first_rung_is_the_knee_and_nothing_meets_the_slo() {
    // A missing API key: every request is a 401.
    let rungs = vec![rung(1.0, 0.0, 0.0, 0.0, 200), rung(5.0, 0.0, 0.0, 0.0, 200)];
    let slo = Slo {
        max_error_rate: Some(0.02),
        ..Default::default()
    };
    let a = analyze(&rungs, &slo, Some(1.0));
    let k = a.knee.clone().expect("knee");
    assert_eq!(k.rate, 1.0);
    assert_eq!(k.reasons, vec![KneeReason::ErrorRate]);
    assert_eq!(a.max_rate_within_slo, None);
    assert!(a.slo_text().contains("first rung"));
    assert_eq!(a.rungs[0].throughput_multiple, None);
    assert_eq!(a.best_value, None);
    assert!(a.best_value_text().contains("baseline rung has no"));
    // The server went down after a rung that measured: the later rung completed nothing, so
    // it has no latency multiple (its medians read 0; "x TTFT 0.00" would call it fast).
    let rungs = vec![
        rung(0.5, 0.5, 392.0, 20.0, 0),
        rung(1.0, 0.0, 0.0, 0.0, 200),
    ];
    let a = analyze(&rungs, &slo, Some(0.5));
    let down = &a.rungs[1];
    assert_eq!(down.throughput_multiple, Some(0.0));
    assert_eq!(
        (
            down.ttft_multiple,
            down.tpot_multiple,
            down.latency_multiple
        ),
        (None, None, None)
    );
    assert_eq!(
        a.best_value_text(),
        "none: the first rung above the baseline (1 req/s) misses the SLO (no request \
         completed, error rate 100.0 % > 2.0 %)"
    );
}

#[test]
fn ttft_jump_without_plateau_is_a_knee_only_above_the_slo() {
    let rungs = vec![
        rung(5.0, 5.0, 400.0, 20.0, 0),
        rung(10.0, 10.0, 500.0, 21.0, 0),
        rung(20.0, 19.0, 1200.0, 25.0, 0), // 2.4x, still under a 3000 ms SLO
        rung(30.0, 28.0, 3600.0, 30.0, 0), // 3x and over the SLO
    ];
    let slo = Slo {
        ttft_ms: Some(3000.0),
        ..Default::default()
    };
    let a = analyze(&rungs, &slo, None);
    let k = a.knee.clone().expect("knee");
    assert_eq!(k.rate, 30.0);
    assert_eq!(k.reasons, vec![KneeReason::TtftJump]);
    // Without an SLO the first 2x jump counts.
    let a = analyze(&rungs, &Slo::default(), None);
    assert_eq!(a.knee.unwrap().rate, 20.0);
}

#[test]
fn error_rate_on_a_later_rung_is_the_knee() {
    let rungs = vec![
        rung(1.0, 1.0, 100.0, 20.0, 0),
        rung(5.0, 5.0, 100.0, 20.0, 4),    // 2 %
        rung(10.0, 10.0, 100.0, 20.0, 12), // 6 % > default 5 %
    ];
    let a = analyze(&rungs, &Slo::default(), None);
    assert_eq!(a.knee.unwrap().rate, 10.0);
    assert_eq!(a.max_rate_within_slo, Some(5.0));
    assert_eq!(a.max_error_rate, DEFAULT_MAX_ERROR_RATE);
}

#[test]
fn goodput_below_95_percent_misses_a_latency_slo() {
    let mut r = rung(10.0, 10.0, 100.0, 20.0, 0);
    r.request_goodput = 9.4;
    let ok = rung(5.0, 5.0, 100.0, 20.0, 0);
    let slo = Slo {
        tpot_ms: Some(50.0),
        ..Default::default()
    };
    let a = analyze(&[ok.clone(), r.clone()], &slo, None);
    assert!(!a.rungs[1].meets_slo);
    assert!(a.rungs[1].slo_misses[0].contains("goodput"));
    assert_eq!(a.max_rate_within_slo, Some(5.0));
    // Without latency bounds goodput is not consulted.
    let a = analyze(&[ok, r], &Slo::default(), None);
    assert_eq!(a.max_rate_within_slo, Some(10.0));
}

#[test]
fn multiples_match_hand_computed_values() {
    // Baseline rung is rate 1 even though it is listed last.
    let rungs = vec![
        rung(5.0, 4.8, 600.0, 25.0, 0),
        rung(10.0, 9.0, 900.0, 40.0, 0),
        rung(20.0, 12.0, 3000.0, 60.0, 0),
        rung(1.0, 1.2, 500.0, 20.0, 0),
    ];
    let a = analyze(&rungs, &Slo::default(), Some(1.0));
    assert_eq!(a.baseline_rate, Some(1.0));
    let r5 = a.rung(5.0).unwrap();
    assert!(close(r5.throughput_multiple.unwrap(), 4.0)); // 4.8 / 1.2
    assert!(close(r5.ttft_multiple.unwrap(), 1.2)); // 600 / 500
    assert!(close(r5.tpot_multiple.unwrap(), 1.25)); // 25 / 20
    assert!(close(r5.latency_multiple.unwrap(), 1.25));
    let r20 = a.rung(20.0).unwrap();
    assert!(close(r20.throughput_multiple.unwrap(), 10.0)); // 12 / 1.2
    assert!(close(r20.ttft_multiple.unwrap(), 6.0)); // 3000 / 500
    assert!(close(r20.tpot_multiple.unwrap(), 3.0));
    // Steps: 1→5: tput x4.0 vs latency x1.25 → in; 5→10: x1.875 vs 2.0/1.25=x1.6 → in;
    // 10→20: x1.333 vs 6.0/2.0=x3.0 → out.
    assert_eq!(
        a.best_value,
        Some(RateRange {
            from: 1.0,
            to: 10.0
        })
    );
    // Unknown baseline rate falls back to the lowest rung.
    let b = analyze(&rungs, &Slo::default(), Some(7.0));
    assert_eq!(b.baseline_rate, Some(1.0));
}

#[test]
fn analysis_round_trips_through_json_and_renders_text() {
    let rungs = vec![
        rung(1.0, 1.0, 100.0, 20.0, 0),
        rung(5.0, 1.05, 900.0, 60.0, 0),
    ];
    let a = analyze(&rungs, &Slo::default(), None);
    let text = serde_json::to_string(&a).unwrap();
    assert!(text.contains("\"throughput_plateau\""));
    let back: Analysis = serde_json::from_str(&text).unwrap();
    assert_eq!(back, a);
    let shown = a.to_string();
    assert!(
        shown.contains("Knee:                    5 req/s"),
        "{shown}"
    );
    assert!(shown.contains("Multiples vs the 1 req/s baseline"));
}

#[test]
fn client_limited_rungs_are_never_the_knee_nor_within_slo() {
    // 10 req/s: half the requests failed with EMFILE on the client, and its throughput
    // halved. Counted as errors (or as a plateau) that would be a knee at 10: it is neither.
    let mut limited = rung(10.0, 4.0, 100.0, 20.0, 100);
    limited
        .errors_by_class
        .insert(crate::record::CLIENT_RESOURCE_KEY.into(), 100);
    let rungs = vec![
        rung(1.0, 1.0, 100.0, 20.0, 0),
        rung(5.0, 5.0, 100.0, 20.0, 0),
        limited.clone(),
    ];
    let a = analyze(&rungs, &Slo::default(), None);
    assert_eq!(a.knee, None, "{a:?}");
    assert_eq!(a.client_limited, vec![10.0]);
    assert!(
        a.knee_text().contains("left out: 10 req/s"),
        "{}",
        a.knee_text()
    );
    assert_eq!(a.max_rate_within_slo, Some(5.0));
    let r = a.rung(10.0).unwrap();
    assert!(!r.meets_slo);
    assert!(
        r.slo_misses[0].contains("failed on the client"),
        "{:?}",
        r.slo_misses
    );
    assert!(
        !r.slo_misses.iter().any(|m| m.contains("error rate")),
        "{:?}",
        r.slo_misses
    );
    assert!(a.to_string().contains("Client-limited rungs:    10 req/s"));
    // A rung above it that measured the server is still analysed (plateau against 5).
    let mut more = rungs.clone();
    more.push(rung(20.0, 5.1, 100.0, 20.0, 0));
    assert_eq!(
        analyze(&more, &Slo::default(), None).knee.map(|k| k.rate),
        Some(20.0)
    );
    // An analysis.json written before the class existed still loads.
    let old = serde_json::to_string(&analyze(&rungs[..2], &Slo::default(), None)).unwrap();
    assert!(!old.contains("client_limited"), "{old}");
    let back: Analysis = serde_json::from_str(&old).unwrap();
    assert!(back.client_limited.is_empty());
}

/// An open-loop rung of `n` requests sent at `sent` req/s over `duration_s`, the quickest
/// request taking `min_e2e_ms`.
fn timed_rung(rate: f64, n: u64, sent: f64, duration_s: f64, min_e2e_ms: f64) -> RungSummary {
    let mut r = rung(rate, n as f64 / duration_s, 100.0, 20.0, 0);
    r.num_prompts = n;
    r.completed = n;
    r.achieved_rate = sent;
    r.duration_s = duration_s;
    r.latency.insert(
        Latency::E2el,
        Stats {
            count: n,
            min: min_e2e_ms,
            median: min_e2e_ms * 1.5,
            ..Default::default()
        },
    );
    r
}

#[test]
fn a_first_rung_past_saturation_is_the_knee() {
    // Sent 40 requests at 2 req/s (20 s); the server answered them over 60 s. Keeping up it
    // would have answered the last one a quickest request (0.5 s) after the last send.
    let rungs = vec![
        timed_rung(2.0, 40, 2.0, 60.0, 500.0),
        timed_rung(5.0, 40, 5.0, 60.0, 500.0),
    ];
    let a = analyze(&rungs, &Slo::default(), None);
    let k = a.knee.expect("knee");
    assert_eq!(k.rate, 2.0);
    assert_eq!(k.reasons, vec![KneeReason::ThroughputPlateau]);
    assert!(
        k.detail[0].starts_with(
            "the first rung is already past saturation: the server answered 0.67 req/s of \
             the 2.00 req/s sent (34 % of the 1.95 req/s keeping up would answer"
        ),
        "{}",
        k.detail[0]
    );
    // A rung that kept up but ended on a long answer (varied output lengths): 200 requests
    // at 2 req/s, the quickest 0.2 s, the last one 40 s: 72 % of keeping up, not a knee.
    let tail = vec![timed_rung(2.0, 200, 2.0, 139.5, 200.0)];
    assert!(analyze(&tail, &Slo::default(), None).knee.is_none());
    // One timeout at the end stretches the rung: a rung with failures is not judged so.
    let mut timed_out = rungs.clone();
    timed_out[0].failed = 1;
    assert!(analyze(&timed_out[..1], &Slo::default(), None)
        .knee
        .is_none());
    // Repeats: each repeat's sending window and quickest answer, summed. Three repeats of
    // 10 requests at 5 req/s, each taking 8 s (10 s a repeat: 100 % alone) are no knee;
    // the pool's 30 requests over 30 s against one 6 s window plus 8 s would read 47 %.
    let mut repeated = timed_rung(5.0, 30, 5.0, 30.0, 8000.0);
    repeated.repeats = vec![timed_rung(5.0, 10, 5.0, 10.0, 8000.0); 3];
    assert!(analyze(&[repeated.clone()], &Slo::default(), None)
        .knee
        .is_none());
    // The same repeats each answered over 25 s: 40 % of keeping up, the knee.
    repeated.repeats = vec![timed_rung(5.0, 10, 5.0, 25.0, 8000.0); 3];
    repeated.duration_s = 75.0;
    assert!(analyze(&[repeated], &Slo::default(), None).knee.is_some());
    // A closed loop's first rung answers what its users allow: no such test.
    let mut closed = vec![rungs[0].clone()];
    closed[0].load = LoadKind::Concurrency;
    assert!(analyze(&closed, &Slo::default(), None).knee.is_none());
}

#[test]
fn a_short_first_rung_of_slow_requests_that_kept_up_is_not_a_knee() {
    // 10 requests at 1 req/s, each taking 4–5 s: the rung lasts 15 s (0.67 req/s answered),
    // which is 93 % of the 0.71 req/s a server keeping up answers over it.
    let one = vec![timed_rung(1.0, 10, 1.0, 15.0, 4000.0)];
    let a = analyze(&one, &Slo::default(), None);
    assert!(a.knee.is_none(), "{:?}", a.knee);
    // One rung cannot show that throughput kept growing.
    assert_eq!(
        a.knee_text(),
        "none seen: one rung cannot show where throughput stops growing (errors within \
         bound); add rates"
    );
    // Two such rungs can.
    let two = vec![
        timed_rung(1.0, 10, 1.0, 15.0, 4000.0),
        timed_rung(2.0, 10, 2.0, 10.0, 4000.0),
    ];
    assert!(analyze(&two, &Slo::default(), None)
        .knee_text()
        .starts_with("none within the tested rates (throughput kept growing"));
}
