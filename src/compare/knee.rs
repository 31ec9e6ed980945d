//! Saturation point of a run, for the "did the knee move" line of a comparison.
//!
//! A small finder local to compare (metrics::analysis was not on main when this was
//! written): the knee is the lowest rung where the server stops keeping up or an SLO breaks.

use crate::metrics::RungSummary;

/// Served / offered below this fraction means the server no longer keeps up.
pub const KEEP_UP: f64 = 0.90;
/// Error rate above which a rung is overloaded when the scenario sets no `max_error_rate`
/// (the seed's overload line).
pub const DEFAULT_MAX_ERROR_RATE: f64 = 0.05;

/// SLO bounds on rung medians used by the knee.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KneeSlo {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub max_error_rate: Option<f64>,
}

impl KneeSlo {
    /// From a resolved scenario's `slo` object.
    pub fn from_scenario(s: &serde_json::Value) -> Self {
        let g = |k: &str| s.get("slo").and_then(|o| o.get(k)).and_then(|v| v.as_f64());
        KneeSlo {
            ttft_ms: g("ttft_ms"),
            tpot_ms: g("tpot_ms"),
            max_error_rate: g("max_error_rate"),
        }
    }
}

/// Why a rung is past the knee, or `None` when it is fine.
pub fn breach(r: &RungSummary, slo: &KneeSlo) -> Option<String> {
    if r.rate > 0.0 && r.request_throughput < KEEP_UP * r.rate {
        return Some(format!(
            "throughput {:.2} req/s < {:.0} % of offered {}",
            r.request_throughput,
            KEEP_UP * 100.0,
            r.rate
        ));
    }
    let max_err = slo.max_error_rate.unwrap_or(DEFAULT_MAX_ERROR_RATE);
    if r.error_rate() > max_err {
        return Some(format!("error rate {:.3} > {max_err}", r.error_rate()));
    }
    if let Some(b) = slo.ttft_ms {
        let m = r.stats(crate::metrics::Latency::Ttft).median;
        if m > b {
            return Some(format!("median TTFT {m:.1} ms > SLO {b} ms"));
        }
    }
    if let Some(b) = slo.tpot_ms {
        let m = r.stats(crate::metrics::Latency::Tpot).median;
        if m > b {
            return Some(format!("median TPOT {m:.1} ms > SLO {b} ms"));
        }
    }
    None
}

/// The lowest offered rate whose rung breaches, with the reason; `None` when every rung holds.
pub fn knee<'a>(
    rungs: impl IntoIterator<Item = &'a RungSummary>,
    slo: &KneeSlo,
) -> Option<(f64, String)> {
    let mut v: Vec<&RungSummary> = rungs.into_iter().collect();
    v.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    v.into_iter()
        .find_map(|r| breach(r, slo).map(|why| (r.rate, why)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rung(rate: f64, thr: f64) -> RungSummary {
        RungSummary {
            rate,
            request_throughput: thr,
            completed: 100,
            ..Default::default()
        }
    }

    #[test]
    fn knee_is_first_rung_that_stops_keeping_up() {
        let rs = [
            rung(10.0, 9.8),
            rung(1.0, 1.0),
            rung(20.0, 15.0),
            rung(30.0, 15.5),
        ];
        let (rate, why) = knee(&rs, &KneeSlo::default()).unwrap();
        assert_eq!(rate, 20.0);
        assert!(why.contains("throughput"));
        assert!(knee(&rs[..2], &KneeSlo::default()).is_none());
    }
}
