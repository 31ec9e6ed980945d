//! Arrival schedules: precomputed absolute send offsets for one rung.

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma};

use crate::scenario::types::Arrival;

/// Keeps the arrival RNG stream apart from the prompt RNG stream even when both use the same seed.
const ARRIVAL_STREAM: u64 = 0x6172_7269_7661_6c73; // "arrivals"

/// Absolute send offsets from the start of a rung, one per request, nondecreasing.
///
/// The first request is sent at offset 0 and gap `i` separates request `i` from `i + 1`
/// (vLLM's benchmark sends, then sleeps), so every process has the same mean gap `1 / rate`:
/// - `Poisson`: exponential gaps with mean `1 / rate`;
/// - `Gamma`: gamma gaps with shape `burstiness` (default 1.0, which is Poisson) and
///   scale `1 / (rate * shape)`, so the mean stays `1 / rate` and the coefficient of
///   variation is `1 / sqrt(shape)`;
/// - `Constant`: request `i` at exactly `i / rate`.
///
/// The same `seed` gives the same schedule. An infinite rate sends everything at once
/// (vLLM's `--request-rate inf`); a zero, negative or NaN rate is refused by scenario
/// validation and is treated here like an infinite rate. A rate or burstiness whose gaps
/// cannot be drawn or do not fit a `Duration` is an error, never a panic (validation keeps
/// both inside `scenario::limits`).
pub fn schedule(
    arrival: Arrival,
    rate: f64,
    burstiness: Option<f64>,
    n: usize,
    seed: u64,
) -> Result<Vec<Duration>, ScheduleError> {
    if !(rate > 0.0 && rate.is_finite()) {
        return Ok(vec![Duration::ZERO; n]);
    }
    let at = |i: usize, t: f64| {
        Duration::try_from_secs_f64(t).map_err(|_| ScheduleError::TooLong {
            rate,
            request: i,
            secs: t,
        })
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ARRIVAL_STREAM);
    let Some(mut gap) = gap_sampler(arrival, rate, burstiness)? else {
        // Multiply rather than accumulate so spacing is exact, not drifting with rounding.
        return (0..n).map(|i| at(i, i as f64 / rate)).collect();
    };
    let mut t = 0.0_f64;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if i > 0 {
            t += gap(&mut rng);
        }
        out.push(at(i, t)?);
    }
    Ok(out)
}

/// Send offsets of a ramp rung (`load.ramp`): the arrival process of `arrival` run at a
/// rate rising from `ramp.from` to `ramp.to` over `ramp.over`, by time rescaling. Arrivals
/// are drawn in "operational time" `u` at rate 1 (exponential gaps for `Poisson`, gamma gaps
/// of mean 1 and shape `burstiness` for `Gamma`, gaps of exactly 1 for `Constant`), from
/// `u = 0`, while `u <= Λ(T)` (the ramp's expected count), and each is sent at `Λ⁻¹(u)`. A
/// Poisson ramp is then an inhomogeneous Poisson process with rate `r(t)`; a constant one
/// sends request `i` when `i` requests were due. The count is random (Poisson: mean and
/// variance `Λ(T)`), the same for the same `seed`.
pub fn ramp_schedule(
    ramp: &crate::scenario::RampLoad,
    arrival: Arrival,
    burstiness: Option<f64>,
    seed: u64,
) -> Result<Vec<Duration>, ScheduleError> {
    let total = ramp.total();
    let bad = |reason: String| ScheduleError::Distribution {
        rate: ramp.to,
        reason,
    };
    if !(total.is_finite() && total >= 0.0)
        || total > crate::scenario::limits::MAX_REQUESTS_PER_RUNG as f64
    {
        return Err(bad(format!(
            "the ramp's expected count {total} is out of range"
        )));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ARRIVAL_STREAM);
    let mut gap: Box<dyn FnMut(&mut ChaCha8Rng) -> f64> = match arrival {
        Arrival::Constant => Box::new(|_| 1.0),
        Arrival::Poisson => {
            let exp = Exp::new(1.0).map_err(|e| bad(e.to_string()))?;
            Box::new(move |r| exp.sample(r))
        }
        Arrival::Gamma => {
            let shape = burstiness
                .filter(|b| *b > 0.0 && b.is_finite())
                .unwrap_or(1.0);
            let g = Gamma::new(shape, 1.0 / shape)
                .map_err(|e| bad(format!("burstiness {shape}: {e}")))?;
            Box::new(move |r| g.sample(r))
        }
    };
    let mut out = Vec::with_capacity(total.ceil() as usize + 1);
    let mut u = 0.0_f64;
    // Constant gaps are counted, not summed, so the i-th send is exactly at Λ⁻¹(i).
    let mut i = 0u64;
    while u <= total {
        let t = ramp.time_of(u);
        out.push(Duration::try_from_secs_f64(t).map_err(|e| bad(e.to_string()))?);
        i += 1;
        u = match arrival {
            Arrival::Constant => i as f64,
            _ => u + gap(&mut rng),
        };
        if out.len() as u64 > crate::scenario::limits::MAX_REQUESTS_PER_RUNG {
            return Err(bad("more requests than a rung may hold".into()));
        }
    }
    Ok(out)
}

/// Send offsets drawn one at a time, for a rung run for a duration (`load.duration`):
/// exactly [`schedule`]'s offsets, in order, without holding them, ending before `until`.
/// No offset at or after `until` is ever given.
pub struct Arrivals {
    gap: Box<dyn FnMut(&mut ChaCha8Rng) -> f64 + Send>,
    rng: ChaCha8Rng,
    rate: f64,
    constant: bool,
    i: u64,
    t: f64,
    until: Duration,
}

/// Draws the gap to the next arrival.
type Gap = Box<dyn FnMut(&mut ChaCha8Rng) -> f64 + Send>;

/// The gap sampler of `arrival` at `rate` (shared by [`schedule`] and [`Arrivals`], so both
/// draw the same offsets from one seed); `None` for constant arrivals, which have no draw.
fn gap_sampler(
    arrival: Arrival,
    rate: f64,
    burstiness: Option<f64>,
) -> Result<Option<Gap>, ScheduleError> {
    let bad = |reason: String| ScheduleError::Distribution { rate, reason };
    Ok(match arrival {
        Arrival::Constant => None,
        Arrival::Poisson => {
            let exp = Exp::new(rate).map_err(|e| bad(e.to_string()))?;
            Some(Box::new(move |r| exp.sample(r)))
        }
        Arrival::Gamma => {
            let shape = burstiness
                .filter(|b| *b > 0.0 && b.is_finite())
                .unwrap_or(1.0);
            let g = Gamma::new(shape, 1.0 / (rate * shape))
                .map_err(|e| bad(format!("burstiness {shape}: {e}")))?;
            Some(Box::new(move |r| g.sample(r)))
        }
    })
}

impl Arrivals {
    /// The offsets of [`schedule`] (same arrival process, rate, burstiness and seed) before
    /// `until`. An infinite or unusable rate sends nothing, as no count bounds it.
    pub fn new(
        arrival: Arrival,
        rate: f64,
        burstiness: Option<f64>,
        seed: u64,
        until: Duration,
    ) -> Result<Arrivals, ScheduleError> {
        let bad = |reason: String| ScheduleError::Distribution { rate, reason };
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(bad("a rung run for a duration needs a finite rate".into()));
        }
        // A constant rung's offsets are multiplied out in `next`; its gap is never drawn.
        let gap = gap_sampler(arrival, rate, burstiness)?.unwrap_or_else(|| Box::new(|_| 0.0));
        Ok(Arrivals {
            gap,
            rng: ChaCha8Rng::seed_from_u64(seed ^ ARRIVAL_STREAM),
            rate,
            constant: arrival == Arrival::Constant,
            i: 0,
            t: 0.0,
            until,
        })
    }
}

impl Iterator for Arrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.constant {
            // Multiplied, as `schedule` does, so the spacing does not drift.
            self.t = self.i as f64 / self.rate;
        } else if self.i > 0 {
            self.t += (self.gap)(&mut self.rng);
        }
        self.i += 1;
        Duration::try_from_secs_f64(self.t)
            .ok()
            .filter(|at| *at < self.until)
    }
}

/// Why a rung's send times cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// The distribution of the gaps cannot be built.
    #[error("no arrival gaps can be drawn at {rate} requests per second ({reason})")]
    Distribution {
        /// The rung's rate.
        rate: f64,
        /// What rand_distr said.
        reason: String,
    },
    /// A send time is beyond what a `Duration` holds.
    #[error("at {rate} requests per second request {request} would be sent after {secs:e} s, beyond any run")]
    TooLong {
        /// The rung's rate.
        rate: f64,
        /// 0-based request index.
        request: usize,
        /// Its offset, seconds.
        secs: f64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 20_000;

    fn gaps(s: &[Duration]) -> Vec<f64> {
        s.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect()
    }

    fn mean_cv(g: &[f64]) -> (f64, f64) {
        let n = g.len() as f64;
        let mean = g.iter().sum::<f64>() / n;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt() / mean)
    }

    fn assert_sorted(s: &[Duration]) {
        assert!(s.windows(2).all(|w| w[0] <= w[1]), "schedule not sorted");
    }

    #[test]
    fn lazy_arrivals_are_the_schedule_cut_at_the_duration() {
        for arrival in [Arrival::Poisson, Arrival::Gamma, Arrival::Constant] {
            let s = schedule(arrival, 40.0, Some(0.5), 400, 3).unwrap();
            let until = s[300] + Duration::from_nanos(1);
            let lazy: Vec<Duration> = Arrivals::new(arrival, 40.0, Some(0.5), 3, until)
                .unwrap()
                .collect();
            assert_eq!(lazy, s[..=300].to_vec(), "{arrival:?}");
            let lazy: Vec<Duration> = Arrivals::new(arrival, 40.0, Some(0.5), 3, s[300])
                .unwrap()
                .collect();
            assert!(lazy.iter().all(|t| *t < s[300]));
        }
        assert!(Arrivals::new(Arrival::Poisson, f64::INFINITY, None, 0, Duration::MAX).is_err());
    }

    #[test]
    fn poisson_mean_gap_and_cv() {
        for rate in [2.0, 50.0] {
            let s = schedule(Arrival::Poisson, rate, None, N, 7).unwrap();
            assert_eq!(s.len(), N);
            assert_eq!(s[0], Duration::ZERO);
            assert_sorted(&s);
            let (mean, cv) = mean_cv(&gaps(&s));
            assert!(
                (mean * rate - 1.0).abs() < 0.03,
                "rate {rate}: mean gap {mean}"
            );
            assert!((cv - 1.0).abs() < 0.05, "poisson cv {cv}");
        }
    }

    #[test]
    fn gamma_cv_follows_shape() {
        for shape in [0.5, 4.0] {
            let rate = 10.0;
            let s = schedule(Arrival::Gamma, rate, Some(shape), N, 11).unwrap();
            assert_sorted(&s);
            let (mean, cv) = mean_cv(&gaps(&s));
            let want = 1.0 / f64::sqrt(shape);
            assert!(
                (mean * rate - 1.0).abs() < 0.03,
                "shape {shape}: mean gap {mean}"
            );
            assert!(
                (cv - want).abs() / want < 0.05,
                "shape {shape}: cv {cv}, want {want}"
            );
        }
    }

    #[test]
    fn gamma_without_burstiness_is_poisson_like() {
        let (_, cv) = mean_cv(&gaps(&schedule(Arrival::Gamma, 5.0, None, N, 3).unwrap()));
        assert!((cv - 1.0).abs() < 0.05, "cv {cv}");
    }

    #[test]
    fn constant_is_evenly_spaced() {
        let s = schedule(Arrival::Constant, 4.0, None, 1001, 0).unwrap();
        for (i, t) in s.iter().enumerate() {
            assert_eq!(*t, Duration::from_secs_f64(i as f64 / 4.0));
        }
        assert_eq!(s[1000], Duration::from_secs(250));
        let g = gaps(&s);
        assert!(g.iter().all(|x| (x - 0.25).abs() < 1e-9));
    }

    #[test]
    fn deterministic_per_seed_and_different_across_seeds() {
        for arrival in [Arrival::Poisson, Arrival::Gamma] {
            let a = schedule(arrival, 10.0, Some(2.0), 500, 42).unwrap();
            let b = schedule(arrival, 10.0, Some(2.0), 500, 42).unwrap();
            let c = schedule(arrival, 10.0, Some(2.0), 500, 43).unwrap();
            assert_eq!(a, b);
            assert_ne!(a, c);
        }
    }

    #[test]
    fn infinite_rate_sends_everything_at_once() {
        let s = schedule(Arrival::Poisson, f64::INFINITY, None, 5, 0).unwrap();
        assert_eq!(s, vec![Duration::ZERO; 5]);
        assert!(schedule(Arrival::Constant, 1.0, None, 0, 0)
            .unwrap()
            .is_empty());
    }

    fn ramp(shape: crate::scenario::RampShape) -> crate::scenario::RampLoad {
        crate::scenario::RampLoad {
            from: 2.0,
            to: 50.0,
            over: crate::scenario::DurationStr(Duration::from_secs(60)),
            shape,
            windows: 10,
        }
    }

    /// Counts in the first and last tenth of a Poisson ramp match the integral of the rate
    /// there within 4 standard deviations (Poisson: variance = mean), for several seeds.
    #[test]
    fn poisson_ramp_counts_follow_the_rate_integral() {
        use crate::scenario::RampShape;
        for shape in [RampShape::Linear, RampShape::Exponential] {
            let r = ramp(shape);
            for seed in 0..5 {
                let s = ramp_schedule(&r, Arrival::Poisson, None, seed).unwrap();
                assert_eq!(s, ramp_schedule(&r, Arrival::Poisson, None, seed).unwrap());
                assert_sorted(&s);
                assert_eq!(s[0], Duration::ZERO);
                assert!(s.last().unwrap().as_secs_f64() <= 60.0);
                let count = |a: f64, b: f64| {
                    s.iter()
                        .filter(|t| (a..b).contains(&t.as_secs_f64()))
                        .count() as f64
                };
                for (a, b) in [(0.0, 6.0), (54.0, 60.0), (0.0, 60.0)] {
                    let want = r.expected(b) - r.expected(a);
                    let got = count(a, b);
                    assert!(
                        (got - want).abs() <= 4.0 * want.sqrt() + 1.0,
                        "{shape:?} seed {seed} [{a}, {b}): {got} arrivals, expected {want:.1}"
                    );
                }
                // The rate rises: the last tenth holds far more than the first.
                assert!(count(54.0, 60.0) > 3.0 * count(0.0, 6.0));
            }
            assert_ne!(
                ramp_schedule(&r, Arrival::Poisson, None, 1).unwrap(),
                ramp_schedule(&r, Arrival::Poisson, None, 2).unwrap()
            );
        }
    }

    #[test]
    fn constant_ramp_sends_when_each_request_is_due() {
        let r = ramp(crate::scenario::RampShape::Linear);
        let s = ramp_schedule(&r, Arrival::Constant, None, 0).unwrap();
        // (2 + 50) / 2 x 60 = 1560 expected: requests 0..=1560.
        assert_eq!(s.len(), 1561);
        for (i, t) in s.iter().enumerate() {
            assert!((r.expected(t.as_secs_f64()) - i as f64).abs() < 1e-6);
        }
        let gamma = ramp_schedule(&r, Arrival::Gamma, Some(4.0), 3).unwrap();
        assert_sorted(&gamma);
        assert!((gamma.len() as f64 - 1560.0).abs() < 4.0 * 1560f64.sqrt());
    }

    #[test]
    fn extreme_rates_and_shapes_are_errors_not_panics() {
        for arrival in [Arrival::Poisson, Arrival::Gamma, Arrival::Constant] {
            let e = schedule(arrival, 1e-20, None, 3, 0).unwrap_err();
            assert!(
                matches!(e, ScheduleError::TooLong { .. }),
                "{arrival:?}: {e}"
            );
        }
        assert!(schedule(Arrival::Gamma, 100.0, Some(1e308), 3, 0).is_err());
        for seed in 0..20 {
            let _ = schedule(Arrival::Gamma, 100.0, Some(1e-300), 50, seed);
        }
    }
}
