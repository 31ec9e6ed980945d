//! How many requests a look at a probe needs before it can show an SLO term inside.
//!
//! A probe is judged after each of its measurements, each look at [`look_level`]. A term is
//! inside when its whole interval is on the right side of its bound, and an interval is only
//! so narrow for a sample so large: a p99's upper end needs `0.99^n <= (1 − level) / 2`
//! however fast every request was. A probe smaller than that is never inside on its first
//! look, so every inside verdict costs a second measurement (the search is slower than it
//! need be), and a search whose every look together is smaller can never find a level
//! inside at all (refused by `ladder validate`).

use super::slo::{Obs, ProbeVerdict, SloMetric, SloTerm};

/// The two-sided level of each look at a probe judged up to `1 + max_extensions` times:
/// the looks share the verdict's error (Bonferroni), `1 − (1 − confidence) / looks`.
pub fn look_level(confidence: f64, max_extensions: u32) -> f64 {
    1.0 - (1.0 - confidence) / f64::from(1 + max_extensions)
}

/// The fewest requests, none failed and every one inside the bound, that the term's own
/// verdict ([`SloTerm::judge`]) at two-sided `level` calls inside; `None` when no number
/// can (a bound of 0). The closed forms of its intervals give the start:
///
/// - a `q`-quantile: the upper order-statistic end exists, `q^n <= (1 − level) / 2`;
/// - the error rate: the Wilson upper end of 0 failures, `z² / (n + z²) <= max`;
/// - goodput: the Wilson lower end of n good in n, `n / (n + z²) >= min`.
///
/// Requests that queued together count as fewer (the design effect), so a probe near the
/// bound may need more; far from it, this is exact.
pub fn least_to_show_inside(term: &SloTerm, level: f64) -> Option<u64> {
    let alpha = (1.0 - level) / 2.0;
    let z = crate::stats::z_for(level);
    let z2 = z * z;
    let b = term.bound;
    let guess = match term.metric {
        SloMetric::Quantile { q, .. } if q > 0.0 && q < 1.0 => alpha.ln() / q.ln(),
        SloMetric::ErrorRate if b > 0.0 && b < 1.0 => z2 * (1.0 - b) / b,
        SloMetric::Goodput if b > 0.0 && b < 1.0 => z2 * b / (1.0 - b),
        _ => return None,
    };
    if !guess.is_finite() || guess > 1e8 {
        return None;
    }
    // A request that met every bound: not failed, good, every latency 0 ms.
    let clean = Obs {
        failed: false,
        good: true,
        ttft_ms: Some(0.0),
        tpot_ms: Some(0.0),
        e2el_ms: Some(0.0),
    };
    let shows =
        |n: u64| term.judge(&vec![clean; n as usize], level).verdict == ProbeVerdict::Inside;
    // The closed form up to rounding: step to the exact least from it.
    let mut n = (guess.ceil() as u64).max(1);
    while n > 1 && shows(n - 1) {
        n -= 1;
    }
    while !shows(n) {
        n += 1;
    }
    Some(n)
}

/// What a probe of `probe_requests` measured requests can show of `term`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortfall {
    /// The first look can show it inside.
    None,
    /// Only the pooled requests of `looks` measurements can (`needed` of them): every probe
    /// inside is measured that many times. `fewer`: the most extensions at which a probe's
    /// first look would suffice, with what that look needs (`None` when none would).
    FirstLook {
        needed: u64,
        looks: u32,
        fewer: Option<(u32, u64)>,
    },
    /// Not even all `1 + max_extensions` measurements pooled: no probe is ever inside.
    Never { needed: Option<u64> },
}

/// [`Shortfall`] of `term` for probes of `probe_requests` requests, looks at
/// [`look_level`]`(confidence, max_extensions)`.
pub fn shortfall(
    term: &SloTerm,
    probe_requests: u64,
    confidence: f64,
    max_extensions: u32,
) -> Shortfall {
    let Some(needed) = least_to_show_inside(term, look_level(confidence, max_extensions)) else {
        return Shortfall::Never { needed: None };
    };
    if probe_requests >= needed {
        return Shortfall::None;
    }
    let looks = needed.div_ceil(probe_requests.max(1));
    if looks > u64::from(1 + max_extensions) {
        return Shortfall::Never {
            needed: Some(needed),
        };
    }
    let fewer = (0..max_extensions).rev().find_map(|k| {
        least_to_show_inside(term, look_level(confidence, k))
            .filter(|n| *n <= probe_requests)
            .map(|n| (k, n))
    });
    Shortfall::FirstLook {
        needed,
        looks: looks as u32,
        fewer,
    }
}

/// The advice for a shortfall of `term` (its description `what`), for the run's warning
/// and `ladder validate`'s refusal.
pub fn advice(s: Shortfall, what: &str, probe_requests: u64, level: f64) -> Option<String> {
    let pct = format!("{:.1}", level * 100.0);
    match s {
        Shortfall::None => None,
        Shortfall::FirstLook {
            needed,
            looks,
            fewer,
        } => Some(format!(
            "a probe of {probe_requests} requests cannot show {what} on its first look (each \
             look at {pct} % needs {needed}): every probe inside the SLO is measured {looks} \
             times; set workload.requests_per_rung to at least {needed}{}",
            match fewer {
                Some((k, n)) => format!(
                    ", or load.search.max_extensions: {k} (fewer looks, each at a lower level: \
                     {n} requests suffice)"
                ),
                None => String::new(),
            }
        )),
        Shortfall::Never {
            needed: Some(needed),
        } => Some(format!(
            "no probe can show {what}: each look is at {pct} % and needs {needed} requests, \
             more than a probe's {probe_requests} with all its extensions pooled; set \
             workload.requests_per_rung to at least {needed}, or more \
             load.search.max_extensions, or a lower load.search.confidence"
        )),
        Shortfall::Never { needed: None } => Some(format!("no sample can show {what}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::interval::quantile_ranks;
    use crate::capacity::slo::Latency;

    fn p99() -> SloTerm {
        SloTerm::at_most(
            SloMetric::Quantile {
                q: 0.99,
                of: Latency::Ttft,
            },
            150.0,
        )
    }

    #[test]
    fn the_least_requests_match_the_table_in_docs_capacity() {
        // docs/capacity.md, "Looks": p99, p95, error rate <= 1 % at the defaults' looks.
        let err = SloTerm::at_most(SloMetric::ErrorRate, 0.01);
        let p95 = SloTerm::at_most(
            SloMetric::Quantile {
                q: 0.95,
                of: Latency::Ttft,
            },
            150.0,
        );
        for (ext, want) in [
            (2, [408, 80, 449]),
            (1, [368, 72, 381]),
            (0, [299, 59, 268]),
        ] {
            let level = look_level(0.9, ext);
            let got = [&p99(), &p95, &err].map(|t| least_to_show_inside(t, level).unwrap());
            assert_eq!(got, want.map(|x: u64| x), "max_extensions {ext}");
        }
        // A goodput floor of 0.95 at 96.7 %: 87 good in 87 (86 / (86 + z²) = 0.94997).
        let good = SloTerm {
            metric: SloMetric::Goodput,
            bound: 0.95,
            per_request: Default::default(),
        };
        assert_eq!(least_to_show_inside(&good, look_level(0.9, 2)), Some(87));
    }

    #[test]
    fn the_least_is_exact_one_fewer_request_cannot_show_it() {
        let level = look_level(0.9, 2);
        let n = least_to_show_inside(&p99(), level).unwrap() as usize;
        assert!(quantile_ranks(n, 0.99, level).1.is_some());
        assert_eq!(quantile_ranks(n - 1, 0.99, level).1, None);
        let err = SloTerm::at_most(SloMetric::ErrorRate, 0.01);
        let n = least_to_show_inside(&err, level).unwrap();
        assert!(crate::stats::wilson(0, n, level).hi <= 0.01);
        assert!(crate::stats::wilson(0, n - 1, level).hi > 0.01);
    }

    #[test]
    fn a_short_probe_costs_more_looks_and_a_too_short_one_can_never_be_inside() {
        // 400 requests at the defaults (two extensions, looks at 96.7 %): p99 needs 408.
        assert_eq!(
            shortfall(&p99(), 400, 0.9, 2),
            Shortfall::FirstLook {
                needed: 408,
                looks: 2,
                fewer: Some((1, 368)),
            }
        );
        // 200 requests: no number of extensions lets one look suffice (even one look at
        // 90 % needs 299), so only a larger probe is advised.
        let s = shortfall(&p99(), 200, 0.9, 2);
        assert_eq!(
            s,
            Shortfall::FirstLook {
                needed: 408,
                looks: 3,
                fewer: None,
            }
        );
        let text = advice(s, "p99 TTFT inside", 200, 0.9667).unwrap();
        assert!(
            text.ends_with("requests_per_rung to at least 408")
                && text.contains("measured 3 times"),
            "{text}"
        );
        // One extension: looks at 95 %, 368 suffice.
        assert_eq!(shortfall(&p99(), 400, 0.9, 1), Shortfall::None);
        // 100 requests and one extension: 200 pooled never reach 368.
        assert_eq!(
            shortfall(&p99(), 100, 0.9, 1),
            Shortfall::Never { needed: Some(368) }
        );
        let text = advice(
            shortfall(&p99(), 400, 0.9, 2),
            "p99 TTFT inside",
            400,
            0.9667,
        )
        .unwrap();
        assert!(
            text.contains("needs 408")
                && text.contains("measured 2 times")
                && text.contains(
                    "max_extensions: 1 (fewer looks, each at a lower level: 368 requests suffice)"
                ),
            "{text}"
        );
        assert_eq!(advice(Shortfall::None, "x", 400, 0.95), None);
    }
}
