//! The search itself: which level to probe next, from the verdicts so far. No I/O: the
//! runner measures what [`Search::next`] asks for and hands the requests back to
//! [`Search::record`].
//!
//! Bracket, then bisect. While nothing is outside the SLO the level grows by `growth` from
//! the highest probe (up to `max`); while nothing is inside it shrinks by `growth` from the
//! lowest (down to `min`). Once a probe is inside and a higher one outside, the widest gap
//! between them (on a log scale; uncertain probes split it) is probed at its geometric
//! midpoint until the bracket is as narrow as `precision`, or the budget is spent. A probe
//! whose verdict is uncertain at its size is extended by another measurement of the same
//! level (its requests pooled) up to `max_extensions` times; after that it stays uncertain
//! and only marks where the SLO is crossed: it is never taken for inside or outside.
//!
//! Before it stops for having narrowed the bracket, the search measures each probe that
//! bounds the bracket `confirm` more times, each repeat with requests of its own and judged
//! alone. A bound stands only when every repeat gives its verdict again; one that does not
//! is *disputed* and counts as uncertain from then on, so the bracket widens past it and the
//! search goes on (and confirms the new bounds). One probe judged once cannot see how much
//! another run at the same level would differ (near saturation a queue's bursts make runs
//! disagree by more than the spread within one); repeats of the bounds can.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::slo::{Obs, ProbeVerdict, SloTerm, TermJudgement};

/// What the levels count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// Offered requests per second (open loop).
    Rate,
    /// Closed-loop users (whole numbers).
    Users,
}

/// How narrow the bracket must get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Precision {
    /// `hi / lo − 1` at most this.
    Relative(f64),
    /// `hi − lo` at most this, in the level's unit.
    Absolute(f64),
}

/// Everything the search needs to decide.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    pub over: Over,
    pub slo: Vec<SloTerm>,
    pub start: f64,
    pub min: f64,
    pub max: f64,
    /// Factor between bracketing probes (> 1).
    pub growth: f64,
    pub precision: Precision,
    /// Two-sided level of each verdict's interval.
    pub confidence: f64,
    /// Requests one measurement sends, warmup included: what a probe or an extension costs.
    pub chunk_requests: u64,
    /// Requests one measurement judges (warmup excluded): `workload.requests_per_rung`.
    pub probe_requests: u64,
    /// Extra measurements an uncertain probe may get.
    pub max_extensions: u32,
    /// Repeats of each probe bounding the final bracket, each judged alone: a bound stands
    /// when every repeat agrees with its verdict (0: bounds are not repeated).
    pub confirm: u32,
    pub budget_requests: Option<u64>,
    pub budget_time: Option<Duration>,
}

/// One probed level and what the search made of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub level: f64,
    /// Measurements pooled into it (1 + extensions).
    pub chunks: u32,
    /// Its measured requests, every measurement's (its repeats' are in `repeats`).
    pub obs: Vec<Obs>,
    /// One per SLO term.
    pub terms: Vec<TermJudgement>,
    /// What the search takes it for: its measurements' verdict, or uncertain once a repeat
    /// disputed it.
    pub verdict: ProbeVerdict,
    /// Its repeats as a bound of the bracket: each one's requests and verdict, judged alone.
    pub repeats: Vec<Repeat>,
    /// The bracket `(highest inside, lowest outside)` once this probe was judged.
    pub bracket: (Option<f64>, Option<f64>),
}

/// One repeat of a bounding probe, judged on its own requests: the probe's test run again,
/// extended as the probe was while uncertain.
#[derive(Debug, Clone, PartialEq)]
pub struct Repeat {
    /// Measurements pooled into it (1 + extensions).
    pub chunks: u32,
    pub obs: Vec<Obs>,
    pub terms: Vec<TermJudgement>,
    pub verdict: ProbeVerdict,
}

impl Probe {
    /// A repeat gave another verdict than its measurements: it bounds nothing.
    pub fn disputed(&self) -> bool {
        self.dispute().is_some()
    }

    /// How a repeat disputed it: `Some(Uncertain)` when every repeat that differs stayed
    /// uncertain (not confirmed, not contradicted), else the first contrary verdict; `None`
    /// when it is not disputed.
    pub fn dispute(&self) -> Option<ProbeVerdict> {
        let mut differing = self
            .repeats
            .iter()
            .map(|r| r.verdict)
            .filter(|&v| v != self.measured())
            .peekable();
        differing.peek()?;
        Some(
            differing
                .find(|&v| v != ProbeVerdict::Uncertain)
                .unwrap_or(ProbeVerdict::Uncertain),
        )
    }

    /// Every measurement of it: its own, its extensions, its repeats'.
    pub fn measurements(&self) -> u32 {
        self.chunks + self.repeats.iter().map(|r| r.chunks).sum::<u32>()
    }

    /// The verdict of its own measurements (extensions pooled), before any repeat.
    pub fn measured(&self) -> ProbeVerdict {
        ProbeVerdict::all(self.terms.iter().map(|t| t.verdict))
    }
}

/// Why a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The bracket is as narrow as `precision`.
    Converged,
    /// The budget would be overspent by the next measurement.
    Budget,
    /// A probe at `max` stands inside: the capacity is above it.
    AboveMax,
    /// A probe at `min` stands outside: the capacity is below it.
    BelowMin,
    /// The next midpoint rounds to a level already probed (users are whole numbers; rates
    /// keep three significant digits).
    Resolution,
    /// Every gap left is narrower than `precision` but the bracket is not: uncertain probes
    /// fill it, so the SLO is crossed somewhere among them.
    UncertainZone,
    /// Stopped by a signal.
    Interrupted,
    /// The run failed under it: the server rejected every request the same way, or went
    /// down (the folder's status says which); the verdicts measured before stand.
    Failed,
}

impl Stop {
    /// For the terminal and capacity.json.
    pub fn describe(self) -> &'static str {
        match self {
            Stop::Converged => "converged: the bracket is as narrow as the precision asked",
            Stop::Budget => "budget spent before the search could end; its warning says what was left",
            Stop::AboveMax => "inside the SLO at the search's max: the capacity is above it",
            Stop::BelowMin => "outside the SLO at the search's min: the capacity is below it",
            Stop::Resolution => "the next probe would repeat a level already measured",
            Stop::UncertainZone => {
                "the levels left between inside and outside were all uncertain after their extensions"
            }
            Stop::Interrupted => "interrupted",
            Stop::Failed => {
                "failed: the server rejected the requests or went down (the folder's status \
                 says why)"
            }
        }
    }
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Measure `level`; `extension` 0 is a new probe, k > 0 its k-th further measurement
    /// (an extension of an uncertain probe, or with `repeat` a repeat of a bound).
    Measure {
        level: f64,
        extension: u32,
        repeat: bool,
    },
    Stop(Stop),
}

/// The capacity found: a point and the interval of levels the verdicts leave it in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub status: Stop,
    /// Point estimate: the level where the SLO margin crosses zero, interpolated between
    /// the probes around the crossing on a log scale; `None` unless bracketed.
    pub capacity: Option<f64>,
    /// Highest level judged inside the SLO (below the lowest judged outside).
    pub lo: Option<f64>,
    /// Lowest level judged outside the SLO.
    pub hi: Option<f64>,
}

/// A search in progress.
#[derive(Debug, Clone)]
pub struct Search {
    cfg: SearchConfig,
    probes: Vec<Probe>,
    requests: u64,
    elapsed: Duration,
    /// The probe the last measurement went to.
    last: Option<usize>,
}

impl Search {
    pub fn new(cfg: SearchConfig) -> Search {
        Search {
            cfg,
            probes: Vec::new(),
            requests: 0,
            elapsed: Duration::ZERO,
            last: None,
        }
    }

    pub fn config(&self) -> &SearchConfig {
        &self.cfg
    }

    /// Every probe in the order first measured.
    pub fn probes(&self) -> &[Probe] {
        &self.probes
    }

    /// Requests sent and time spent measuring so far.
    pub fn spent(&self) -> (u64, Duration) {
        (self.requests, self.elapsed)
    }

    /// The next measurement, or why the search is over.
    pub fn next(&self) -> Step {
        // A repeat judged uncertain is extended as a probe is.
        if let Some(p) = self.last.map(|i| &self.probes[i]) {
            if let Some(r) = p.repeats.last() {
                if r.verdict == ProbeVerdict::Uncertain && r.chunks <= self.cfg.max_extensions {
                    return if self.affordable(p.level) {
                        Step::Measure {
                            level: p.level,
                            extension: p.measurements(),
                            repeat: true,
                        }
                    } else {
                        Step::Stop(Stop::Budget)
                    };
                }
            }
        }
        if let Some(last) = self.probes.last() {
            if last.measured() == ProbeVerdict::Uncertain && last.chunks <= self.cfg.max_extensions
            {
                return if self.affordable(last.level) {
                    Step::Measure {
                        level: last.level,
                        extension: last.chunks,
                        repeat: false,
                    }
                } else {
                    Step::Stop(Stop::Budget)
                };
            }
        }
        match self.next_level() {
            // Narrowed as far as it goes: the bounds are repeated before the search ends.
            Err(stop @ (Stop::Converged | Stop::UncertainZone | Stop::Resolution))
            | Err(stop @ (Stop::AboveMax | Stop::BelowMin)) => match self.unconfirmed() {
                None => Step::Stop(stop),
                Some(p) if self.affordable(p.level) => Step::Measure {
                    level: p.level,
                    extension: p.measurements(),
                    repeat: true,
                },
                Some(_) => Step::Stop(Stop::Budget),
            },
            Err(stop) => Step::Stop(stop),
            Ok(level) if self.affordable(level) => Step::Measure {
                level,
                extension: 0,
                repeat: false,
            },
            Ok(_) => Step::Stop(Stop::Budget),
        }
    }

    /// The bracket's lower bound, then its upper, if it has had fewer than `confirm`
    /// repeats.
    fn unconfirmed(&self) -> Option<&Probe> {
        let (lo, hi) = self.bracket();
        [lo, hi]
            .into_iter()
            .flatten()
            .filter_map(|l| self.probes.iter().find(|p| p.level == l))
            .find(|p| (p.repeats.len() as u32) < self.cfg.confirm)
    }

    /// Whether both ends of the bracket (those it has) were repeated `confirm` times: they
    /// stand, since a disputed probe is no bound.
    pub fn confirmed(&self) -> bool {
        self.unconfirmed().is_none()
    }

    /// The index of the probe the last measurement went to.
    pub fn last_measured(&self) -> Option<usize> {
        self.last
    }

    /// Count a measurement that was cut short (by a signal) in what the search spent: its
    /// requests went out and its time passed, but it judges nothing. ([`Search::record`]
    /// counts every judged measurement the same way.)
    pub fn spend_cut(&mut self, sent: u64, elapsed: Duration) {
        self.requests += sent;
        self.elapsed += elapsed;
    }

    /// Record one measurement of `level` (its measured requests), what it sent (warmup
    /// included) and how long it took. A measurement of a level already probed extends it
    /// while its verdict is uncertain, and is a repeat of it otherwise (judged alone).
    pub fn record(&mut self, level: f64, obs: Vec<Obs>, sent: u64, elapsed: Duration) {
        self.spend_cut(sent, elapsed);
        let level_conf = self.look_level();
        let slo = self.cfg.slo.clone();
        let judge = |obs: &[Obs]| -> (Vec<TermJudgement>, ProbeVerdict) {
            let terms: Vec<TermJudgement> = slo.iter().map(|t| t.judge(obs, level_conf)).collect();
            let v = ProbeVerdict::all(terms.iter().map(|t| t.verdict));
            (terms, v)
        };
        let i = match self.probes.iter().position(|p| p.level == level) {
            Some(i) if self.probes[i].measured() != ProbeVerdict::Uncertain => {
                let max_ext = self.cfg.max_extensions;
                let p = &mut self.probes[i];
                match p.repeats.last_mut() {
                    Some(r) if r.verdict == ProbeVerdict::Uncertain && r.chunks <= max_ext => {
                        r.chunks += 1;
                        r.obs.extend(obs);
                        (r.terms, r.verdict) = judge(&r.obs);
                    }
                    _ => {
                        let (terms, verdict) = judge(&obs);
                        p.repeats.push(Repeat {
                            chunks: 1,
                            obs,
                            terms,
                            verdict,
                        });
                    }
                }
                i
            }
            Some(i) => {
                let p = &mut self.probes[i];
                p.chunks += 1;
                p.obs.extend(obs);
                (p.terms, _) = judge(&p.obs);
                i
            }
            None => {
                let (terms, _) = judge(&obs);
                self.probes.push(Probe {
                    level,
                    chunks: 1,
                    obs,
                    terms,
                    verdict: ProbeVerdict::Uncertain,
                    repeats: Vec::new(),
                    bracket: (None, None),
                });
                self.probes.len() - 1
            }
        };
        let p = &mut self.probes[i];
        p.verdict = if p.disputed() {
            ProbeVerdict::Uncertain
        } else {
            p.measured()
        };
        self.last = Some(i);
        let bracket = self.bracket();
        self.probes[i].bracket = bracket;
    }

    /// The two-sided level of each look at a probe: a probe may be judged up to
    /// `1 + max_extensions` times (after each measurement), and stopping at the first look
    /// that decides would make a wrong verdict likelier than one look's error. The looks
    /// share the verdict's error (Bonferroni): each is at `1 − (1 − confidence) / looks`, so
    /// the probe's verdict, however many looks it took, errs to one side with probability
    /// at most `(1 − confidence) / 2`.
    pub fn look_level(&self) -> f64 {
        super::looks::look_level(self.cfg.confidence, self.cfg.max_extensions)
    }

    /// Each SLO term a probe's first look cannot show inside, with the advice to say
    /// ([`super::looks`]): every inside verdict then costs more than one measurement.
    pub fn look_advice(&self) -> Vec<String> {
        let c = &self.cfg;
        c.slo
            .iter()
            .filter_map(|t| {
                let s =
                    super::looks::shortfall(t, c.probe_requests, c.confidence, c.max_extensions);
                super::looks::advice(
                    s,
                    &format!("{} inside", t.describe()),
                    c.probe_requests,
                    self.look_level(),
                )
            })
            .collect()
    }

    /// `(highest level inside, lowest level outside)`: the highest inside is taken below
    /// the lowest outside (an inside probe above it is a contradiction, see
    /// [`Search::contradictions`]).
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        let hi = self.levels(ProbeVerdict::Outside).min_by(f64::total_cmp);
        let lo = self
            .levels(ProbeVerdict::Inside)
            .filter(|l| hi.is_none_or(|h| *l < h))
            .max_by(f64::total_cmp);
        (lo, hi)
    }

    /// When no probe was inside and requests failed at the lowest level probed at least as
    /// often as at the next one up: `((low level, its failed share), (next level, its
    /// share))`. Errors that do not fall as the load falls are not overload, and "capacity
    /// below" would blame the load for them. Failures are counted over a probe's own
    /// measurements (extensions pooled), whatever terms the SLO has: a failed request is
    /// infinitely slow in every latency term too.
    pub fn errors_without_load(&self) -> Option<((f64, f64), (f64, f64))> {
        if self.bracket().0.is_some() {
            return None;
        }
        let share = |p: &Probe| {
            let failed = p.obs.iter().filter(|o| o.failed).count();
            (!p.obs.is_empty()).then(|| failed as f64 / p.obs.len() as f64)
        };
        let mut by_level: Vec<(f64, f64)> = self
            .probes
            .iter()
            .filter_map(|p| share(p).map(|s| (p.level, s)))
            .collect();
        by_level.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (low, next) = (*by_level.first()?, *by_level.get(1)?);
        (low.1 > 0.0 && low.1 >= next.1).then_some((low, next))
    }

    /// Pairs `(inside, outside)` with the inside level above the outside one: the metric
    /// did not grow with the load there (noise near the bound, or a server that changed
    /// during the search).
    pub fn contradictions(&self) -> Vec<(f64, f64)> {
        let Some(hi) = self.bracket().1 else {
            return Vec::new();
        };
        self.levels(ProbeVerdict::Inside)
            .filter(|l| *l > hi)
            .map(|l| (l, hi))
            .collect()
    }

    fn levels(&self, v: ProbeVerdict) -> impl Iterator<Item = f64> + '_ {
        self.probes
            .iter()
            .filter(move |p| p.verdict == v)
            .map(|p| p.level)
    }

    fn next_level(&self) -> Result<f64, Stop> {
        let c = &self.cfg;
        let all: Vec<f64> = self.probes.iter().map(|p| p.level).collect();
        if all.is_empty() {
            return Ok(self.round(c.start).clamp(c.min, c.max));
        }
        let top = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let bottom = all.iter().copied().fold(f64::INFINITY, f64::min);
        match self.bracket() {
            (lo, None) => {
                if top >= c.max {
                    // Above the max only when the probe at the max stands inside; a max
                    // left uncertain (or disputed) says the SLO is crossed near it.
                    return Err(if lo.is_some_and(|l| l >= top) {
                        Stop::AboveMax
                    } else {
                        Stop::UncertainZone
                    });
                }
                let next = self.round((top * c.growth).min(c.max));
                let next = if next <= top { self.step_up(top) } else { next };
                Ok(next.min(c.max))
            }
            (None, Some(hi)) => {
                if bottom <= c.min {
                    return Err(if hi <= bottom {
                        Stop::BelowMin
                    } else {
                        Stop::UncertainZone
                    });
                }
                let next = self.round((bottom / c.growth).max(c.min));
                let next = if next >= bottom {
                    self.step_down(bottom)
                } else {
                    next
                };
                Ok(next.max(c.min))
            }
            (Some(lo), Some(hi)) => {
                if self.precise(lo, hi) {
                    return Err(Stop::Converged);
                }
                let mut points: Vec<f64> = vec![lo, hi];
                points.extend(
                    self.levels(ProbeVerdict::Uncertain)
                        .filter(|l| *l > lo && *l < hi),
                );
                points.sort_by(f64::total_cmp);
                points.dedup();
                let (a, b) = points
                    .windows(2)
                    .map(|w| (w[0], w[1]))
                    .max_by(|x, y| (x.1 / x.0).total_cmp(&(y.1 / y.0)))
                    .expect("two points at least");
                if self.precise(a, b) {
                    return Err(Stop::UncertainZone);
                }
                let mid = self.round((a * b).sqrt());
                if mid <= a || mid >= b || all.contains(&mid) {
                    return Err(Stop::Resolution);
                }
                Ok(mid)
            }
        }
    }

    /// Whether the narrowing is over (the bracket is as narrow as the precision asks, or as
    /// it can get): what is left is repeating its ends.
    pub fn narrowed(&self) -> bool {
        !self.probes.is_empty() && self.next_level().is_err()
    }

    fn precise(&self, lo: f64, hi: f64) -> bool {
        match self.cfg.precision {
            Precision::Relative(p) => hi / lo - 1.0 <= p + 1e-9,
            Precision::Absolute(a) => hi - lo <= a + 1e-9,
        }
    }

    /// A level as probed: whole users, or a rate with three significant digits (its rung
    /// files are named after it).
    fn round(&self, x: f64) -> f64 {
        match self.cfg.over {
            Over::Users => x.round().max(1.0),
            Over::Rate => round_sig(x, 3),
        }
    }

    fn step_up(&self, x: f64) -> f64 {
        match self.cfg.over {
            Over::Users => x + 1.0,
            Over::Rate => round_sig(x * 1.01, 3),
        }
    }

    fn step_down(&self, x: f64) -> f64 {
        match self.cfg.over {
            Over::Users => (x - 1.0).max(1.0),
            Over::Rate => round_sig(x / 1.01, 3),
        }
    }

    fn affordable(&self, level: f64) -> bool {
        let c = &self.cfg;
        if c.budget_requests
            .is_some_and(|b| self.requests + c.chunk_requests > b)
        {
            return false;
        }
        if let Some(t) = c.budget_time {
            // An open-loop measurement takes at least its requests over its rate; a closed
            // loop's is guessed from the time per request so far.
            let guess = match c.over {
                Over::Rate => Duration::from_secs_f64(c.chunk_requests as f64 / level),
                Over::Users if self.requests > 0 => self
                    .elapsed
                    .mul_f64(c.chunk_requests as f64 / self.requests as f64),
                Over::Users => Duration::ZERO,
            };
            if self.elapsed + guess > t {
                return false;
            }
        }
        true
    }

    /// The answer as the verdicts so far give it, the search having ended for `status`.
    pub fn answer(&self, status: Stop) -> Answer {
        let (lo, hi) = self.bracket();
        let capacity = match (lo, hi) {
            (Some(l), Some(h)) => Some(self.interpolate(l, h)),
            _ => None,
        };
        Answer {
            status,
            capacity,
            lo,
            hi,
        }
    }

    /// Where the SLO margin (the worst term's `ln(value / max)`) crosses zero between the
    /// probes in `[lo, hi]`, linear in log level between the two probes around the first
    /// crossing; their geometric mean when the margins give no crossing.
    fn interpolate(&self, lo: f64, hi: f64) -> f64 {
        let mut pts: Vec<(f64, f64)> = self
            .probes
            .iter()
            .filter(|p| p.level >= lo && p.level <= hi)
            .map(|p| (p.level, self.margin(p)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in pts.windows(2) {
            let ((a, ma), (b, mb)) = (w[0], w[1]);
            if ma <= 0.0 && mb > 0.0 {
                let t = -ma / (mb - ma);
                let x = (a.ln() + t * (b.ln() - a.ln())).exp();
                return x.clamp(lo, hi);
            }
        }
        (lo * hi).sqrt()
    }

    /// The worst term's margin at a probe, on every request it measured (its repeats'
    /// pooled in: the point then averages over runs).
    fn margin(&self, p: &Probe) -> f64 {
        let pooled: Vec<TermJudgement>;
        let terms = if p.repeats.is_empty() {
            &p.terms
        } else {
            let all: Vec<Obs> = p
                .obs
                .iter()
                .chain(p.repeats.iter().flat_map(|r| &r.obs))
                .copied()
                .collect();
            let level = self.look_level();
            pooled = self.cfg.slo.iter().map(|t| t.judge(&all, level)).collect();
            &pooled
        };
        self.cfg
            .slo
            .iter()
            .zip(terms)
            .map(|(t, j)| t.margin(j.value))
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// `x` with `digits` significant digits.
pub fn round_sig(x: f64, digits: i32) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.log10().floor() as i32);
    let r = (x * scale).round() / scale;
    // Printed as written (37.4, not 37.400000000000006).
    format!("{r:.6}").parse().unwrap_or(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::slo::SloMetric;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A server whose TTFT is exponential with mean `50 / (1 − rate / 50)` ms (an M/M/1
    /// queue's response time): its p99 is 500 ms at `50 × (1 − 50 ln 100 / 500)` =
    /// 26.97 req/s.
    const TRUE_CAPACITY: f64 = 50.0 * (1.0 - 0.1 * 4.605_170_185_988_092);

    fn mean_ms(rate: f64) -> f64 {
        if rate >= 49.9 {
            1e6
        } else {
            50.0 / (1.0 - rate / 50.0)
        }
    }

    fn cfg() -> SearchConfig {
        SearchConfig {
            over: Over::Rate,
            slo: vec![SloTerm::at_most(
                SloMetric::parse("p99_ttft_ms").unwrap(),
                500.0,
            )],
            start: 2.0,
            min: 0.1,
            max: 200.0,
            growth: 2.0,
            precision: Precision::Relative(0.05),
            confidence: 0.9,
            chunk_requests: 400,
            probe_requests: 400,
            max_extensions: 2,
            confirm: 0,
            budget_requests: Some(20_000),
            budget_time: None,
        }
    }

    fn measure(rng: &mut ChaCha8Rng, rate: f64, n: usize) -> Vec<Obs> {
        (0..n)
            .map(|_| Obs {
                failed: false,
                ttft_ms: Some(-mean_ms(rate) * (1.0 - rng.gen::<f64>()).ln()),
                ..Obs::default()
            })
            .collect()
    }

    /// Runs a search to its end against the synthetic server.
    fn run(cfg: SearchConfig, seed: u64) -> (Search, Answer) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut s = Search::new(cfg);
        loop {
            match s.next() {
                Step::Measure { level, .. } => {
                    let obs = measure(&mut rng, level, 400);
                    s.record(level, obs, 400, Duration::from_secs_f64(400.0 / level));
                }
                Step::Stop(stop) => {
                    let a = s.answer(stop);
                    return (s, a);
                }
            }
        }
    }

    #[test]
    fn the_search_doubles_until_outside_then_bisects_to_the_precision() {
        let (s, a) = run(cfg(), 1);
        let levels: Vec<f64> = s.probes().iter().map(|p| p.level).collect();
        // Bracketing: 2, 4, 8, 16 inside, 32 outside (the p99 there is ~1.6 s).
        assert_eq!(levels[..5], [2.0, 4.0, 8.0, 16.0, 32.0], "{levels:?}");
        assert!(s.probes()[..4]
            .iter()
            .all(|p| p.verdict == ProbeVerdict::Inside));
        assert_eq!(s.probes()[4].verdict, ProbeVerdict::Outside);
        // Then geometric midpoints: the first is sqrt(16 × 32) = 22.6.
        assert_eq!(levels[5], 22.6);
        // Near the bound even 1200 requests may leave a probe uncertain: the search then
        // ends with uncertain probes filling a bracket wider than the precision.
        assert!(
            matches!(a.status, Stop::Converged | Stop::UncertainZone),
            "{a:?} {levels:?}"
        );
        let (lo, hi) = (a.lo.unwrap(), a.hi.unwrap());
        if a.status == Stop::Converged {
            assert!(hi / lo - 1.0 <= 0.05 + 1e-9, "[{lo}, {hi}]");
        } else {
            // Every gap left between inside, uncertain and outside levels is within the
            // precision: nothing is left to probe at 400 requests a measurement.
            let mut pts: Vec<f64> = s
                .probes()
                .iter()
                .map(|p| p.level)
                .filter(|l| *l >= lo && *l <= hi)
                .collect();
            pts.sort_by(f64::total_cmp);
            assert!(
                pts.windows(2).all(|w| w[1] / w[0] - 1.0 <= 0.05 + 1e-9),
                "{pts:?}"
            );
            assert!(
                s.probes()
                    .iter()
                    .filter(|p| p.level > lo && p.level < hi)
                    .all(|p| p.verdict == ProbeVerdict::Uncertain && p.chunks == 3),
                "only probes uncertain after both extensions lie inside the bracket"
            );
        }
        assert!(lo <= TRUE_CAPACITY && TRUE_CAPACITY <= hi, "[{lo}, {hi}]");
        let c = a.capacity.unwrap();
        assert!(lo <= c && c <= hi);
        // One seed: within 10 %; the coverage test holds the median error of many.
        assert!((c / TRUE_CAPACITY - 1.0).abs() < 0.1, "{c}");
    }

    #[test]
    fn an_uncertain_probe_is_extended_not_guessed() {
        let mut s = Search::new(SearchConfig {
            max_extensions: 1,
            ..cfg()
        });
        let Step::Measure {
            level, extension, ..
        } = s.next()
        else {
            panic!("a first probe")
        };
        assert_eq!((level, extension), (2.0, 0));
        // 200 requests cannot bound a p99 from above at 90 %: uncertain, extended once.
        // (Independent draws: a ramp in order would be one correlated block.)
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut fast = |n| {
            (0..n)
                .map(|_| Obs {
                    ttft_ms: Some(10.0 + rng.gen::<f64>() * 2.0),
                    ..Obs::default()
                })
                .collect::<Vec<_>>()
        };
        s.record(2.0, fast(200), 200, Duration::from_secs(100));
        assert_eq!(s.probes()[0].verdict, ProbeVerdict::Uncertain);
        assert_eq!(
            s.next(),
            Step::Measure {
                level: 2.0,
                extension: 1,
                repeat: false
            }
        );
        s.record(2.0, fast(200), 200, Duration::from_secs(100));
        assert_eq!(s.probes().len(), 1, "pooled into the same probe");
        assert_eq!(s.probes()[0].chunks, 2);
        assert_eq!(s.probes()[0].verdict, ProbeVerdict::Inside);
        assert_eq!(
            s.next(),
            Step::Measure {
                level: 4.0,
                extension: 0,
                repeat: false
            }
        );
    }

    #[test]
    fn uncertain_after_its_extensions_a_probe_splits_the_bracket_but_never_bounds_it() {
        let mut s = Search::new(SearchConfig {
            max_extensions: 0,
            ..cfg()
        });
        let obs = |v: f64, n: usize| {
            (0..n)
                .map(|_| Obs {
                    ttft_ms: Some(v),
                    ..Obs::default()
                })
                .collect::<Vec<_>>()
        };
        s.record(10.0, obs(100.0, 400), 400, Duration::ZERO);
        s.record(40.0, obs(900.0, 400), 400, Duration::ZERO);
        // 200 requests: the p99 cannot be bounded above, and all sit at 100 ms < 500.
        s.record(20.0, obs(100.0, 200), 200, Duration::ZERO);
        assert_eq!(s.probes()[2].verdict, ProbeVerdict::Uncertain);
        assert_eq!(s.bracket(), (Some(10.0), Some(40.0)));
        // The gaps 10..20 and 20..40 are equally wide (x2): the higher one is probed, at
        // its geometric midpoint, not the bracket's (20, already measured).
        assert_eq!(
            s.next(),
            Step::Measure {
                level: 28.3,
                extension: 0,
                repeat: false
            }
        );
    }

    #[test]
    fn a_capacity_beyond_max_or_below_min_says_so_with_a_one_sided_answer() {
        let (s, a) = run(SearchConfig { max: 10.0, ..cfg() }, 2);
        assert_eq!(a.status, Stop::AboveMax);
        assert_eq!(s.probes().last().unwrap().level, 10.0);
        assert_eq!((a.lo, a.hi, a.capacity), (Some(10.0), None, None));
        let (_, a) = run(
            SearchConfig {
                start: 48.0,
                min: 40.0,
                ..cfg()
            },
            3,
        );
        assert_eq!(a.status, Stop::BelowMin);
        assert_eq!((a.lo, a.hi.is_some()), (None, true));
    }

    #[test]
    fn the_budget_stops_the_search_before_it_is_overspent() {
        let (s, a) = run(
            SearchConfig {
                budget_requests: Some(2_000),
                ..cfg()
            },
            4,
        );
        assert_eq!(a.status, Stop::Budget);
        assert_eq!(
            s.spent().0,
            2_000,
            "every measurement costs 400: none is left"
        );
        let (_, a) = run(
            SearchConfig {
                budget_requests: None,
                // 2 req/s for 400 requests is 200 s alone.
                budget_time: Some(Duration::from_secs(300)),
                ..cfg()
            },
            4,
        );
        assert_eq!(a.status, Stop::Budget);
    }

    #[test]
    fn users_are_whole_and_stop_at_one_user_of_resolution() {
        let (s, a) = run(
            SearchConfig {
                over: Over::Users,
                start: 1.0,
                precision: Precision::Relative(0.01),
                ..cfg()
            },
            5,
        );
        assert!(s.probes().iter().all(|p| p.level.fract() == 0.0));
        assert_eq!(a.status, Stop::Resolution);
        // From the highest inside to the lowest outside every level is probed: one user
        // apart, the levels between uncertain.
        let (lo, hi) = (a.lo.unwrap(), a.hi.unwrap());
        let mut pts: Vec<f64> = s
            .probes()
            .iter()
            .map(|p| p.level)
            .filter(|l| *l >= lo && *l <= hi)
            .collect();
        pts.sort_by(f64::total_cmp);
        assert_eq!(pts.len() as f64, hi - lo + 1.0, "{a:?} {pts:?}");
    }

    /// The interval `[lo, hi]` holds the true capacity in at least its nominal share of
    /// searches: each bound is a verdict that errs to its side with probability at most
    /// 5 % (level 0.9), so at least 90 % of searches, less what other probes' errors move.
    #[test]
    fn the_answer_interval_covers_the_true_capacity_on_synthetic_data() {
        let trials = 300;
        let mut covered = 0;
        let mut errors = Vec::new();
        for seed in 0..trials {
            let (_, a) = run(cfg(), 1000 + seed);
            let (lo, hi) = (a.lo.unwrap(), a.hi.unwrap());
            if lo <= TRUE_CAPACITY && TRUE_CAPACITY <= hi {
                covered += 1;
            }
            errors.push((a.capacity.unwrap() / TRUE_CAPACITY - 1.0).abs());
        }
        let share = covered as f64 / trials as f64;
        errors.sort_by(f64::total_cmp);
        let median = errors[errors.len() / 2];
        // Printed for docs/capacity.md (`cargo test --lib coverage -- --nocapture`).
        eprintln!("coverage {covered}/{trials}, median |error| {median:.4}");
        assert!(share >= 0.88, "coverage {share}");
        assert!(median < 0.03, "median error {median}");
    }

    /// The synthetic server again, a request good when its TTFT is at most 500 ms:
    /// goodput is `1 − exp(−500 / mean)`, at least 0.95 while the mean is at most
    /// `500 / ln 20` ms, i.e. up to `50 × (1 − 0.1 ln 20)` = 35.02 req/s.
    const GOODPUT_CAPACITY: f64 = 50.0 * (1.0 - 0.1 * 2.995_732_273_553_991);

    fn goodput_cfg() -> SearchConfig {
        SearchConfig {
            slo: vec![SloTerm {
                metric: SloMetric::Goodput,
                bound: 0.95,
                per_request: crate::capacity::PerRequest {
                    ttft_ms: Some(500.0),
                    ..Default::default()
                },
            }],
            ..cfg()
        }
    }

    fn with_goodput(obs: Vec<Obs>) -> Vec<Obs> {
        obs.into_iter()
            .map(|o| Obs {
                good: o.ttft_ms.is_some_and(|t| t <= 500.0),
                ..o
            })
            .collect()
    }

    #[test]
    fn a_goodput_verdict_flips_where_the_scripted_curve_crosses_its_floor() {
        let term = goodput_cfg().slo[0];
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        // 4000 requests a level: every level 10 % or more from the crossing is decided,
        // inside below it and outside above it.
        for rate in [5.0, 15.0, 25.0, 30.0, 31.5, 38.5, 40.0, 45.0] {
            let obs = with_goodput(measure(&mut rng, rate, 4000));
            let j = term.judge(&obs, 0.967);
            let want = if rate < GOODPUT_CAPACITY {
                ProbeVerdict::Inside
            } else {
                ProbeVerdict::Outside
            };
            assert_eq!(j.verdict, want, "at {rate} req/s: {j:?}");
        }
        // A search brackets the crossing.
        let mut covered = 0;
        for seed in 0..20 {
            let mut rng = ChaCha8Rng::seed_from_u64(500 + seed);
            let mut s = Search::new(goodput_cfg());
            let a = loop {
                match s.next() {
                    Step::Measure { level, .. } => {
                        let obs = with_goodput(measure(&mut rng, level, 400));
                        s.record(level, obs, 400, Duration::from_secs_f64(400.0 / level));
                    }
                    Step::Stop(stop) => break s.answer(stop),
                }
            };
            let (lo, hi, c) = (a.lo.unwrap(), a.hi.unwrap(), a.capacity.unwrap());
            covered += usize::from(lo <= GOODPUT_CAPACITY && GOODPUT_CAPACITY <= hi);
            assert!((c / GOODPUT_CAPACITY - 1.0).abs() < 0.1, "{a:?}");
        }
        assert!(
            covered >= 17,
            "the interval held the crossing {covered} times in 20"
        );
    }

    /// A scripted server whose every request takes 100 ms up to a threshold level and
    /// 900 ms above it (a verdict no sample size leaves uncertain), the threshold `first`
    /// for a probe's own measurements and `repeat` for the repeats of a bound: runs that
    /// disagree about where the SLO is crossed.
    fn scripted(cfg: SearchConfig, first: f64, repeat: f64) -> (Search, Answer) {
        let mut s = Search::new(cfg);
        loop {
            match s.next() {
                Step::Measure {
                    level, repeat: r, ..
                } => {
                    let threshold = if r { repeat } else { first };
                    let ms = if level <= threshold { 100.0 } else { 900.0 };
                    let obs = (0..400)
                        .map(|_| Obs {
                            ttft_ms: Some(ms),
                            ..Obs::default()
                        })
                        .collect();
                    s.record(level, obs, 400, Duration::from_secs(1));
                }
                Step::Stop(stop) => return (s.clone(), s.answer(stop)),
            }
        }
    }

    /// "Above the max" (or "below the min") is said only of a probe at the max that stands
    /// inside (at the min, outside): a max whose repeat disputed it, or a search whose only
    /// level was disputed, crossed the SLO near there, and says so.
    #[test]
    fn above_max_and_below_min_need_a_probe_there_that_stands() {
        // Inside at 50 and at the max 100 on first runs; repeats are outside above 70.
        let cfg = SearchConfig {
            start: 50.0,
            max: 100.0,
            confirm: 1,
            ..cfg()
        };
        let (s, a) = scripted(cfg.clone(), 1000.0, 70.0);
        assert!(s.probes().iter().any(|p| p.level == 100.0 && p.disputed()));
        assert_eq!(a.status, Stop::UncertainZone, "{a:?}");
        assert_eq!((a.lo, a.hi), (Some(50.0), None));
        // Its line is "capacity at least 50 …", not "above 50 (the search's max)":
        // `file::tests::the_answer_reads_as_a_value_with_its_interval_and_the_slo`.
        // Everything inside on every run: above the max, as before.
        let (_, a) = scripted(cfg.clone(), 1000.0, 1000.0);
        assert_eq!((a.status, a.lo), (Stop::AboveMax, Some(100.0)));
        // One level (min = start = max), inside on its run and outside on its repeat: no
        // verdict stands, so neither above the max nor below the min.
        let one = SearchConfig {
            start: 100.0,
            min: 100.0,
            max: 100.0,
            ..cfg
        };
        let (_, a) = scripted(one.clone(), 1000.0, 10.0);
        assert_eq!((a.status, a.lo, a.hi), (Stop::UncertainZone, None, None));
        let (_, a) = scripted(one.clone(), 10.0, 1000.0);
        assert_eq!((a.status, a.lo, a.hi), (Stop::UncertainZone, None, None));
        // Outside on every run: below the min.
        let (_, a) = scripted(one, 10.0, 10.0);
        assert_eq!((a.status, a.hi), (Stop::BelowMin, Some(100.0)));
    }

    #[test]
    fn a_bound_its_repeat_disputes_bounds_nothing_and_the_bracket_widens_past_it() {
        // Without repeats the bracket closes around the first runs' threshold, 27, and
        // leaves out the repeats' 25.
        let (_, a) = scripted(cfg(), 27.0, 25.0);
        let (lo, hi) = (a.lo.unwrap(), a.hi.unwrap());
        assert!(lo > 25.0 && lo <= 27.0 && hi > 27.0, "{a:?}");
        // With one repeat of each bound: the lower bounds above 25 are disputed by their
        // repeats (outside there) and the search goes on below them until a bound's repeat
        // agrees.
        let (s, a) = scripted(
            SearchConfig {
                confirm: 1,
                ..cfg()
            },
            27.0,
            25.0,
        );
        let (lo, hi) = (a.lo.unwrap(), a.hi.unwrap());
        assert!(lo <= 25.0 && hi > 27.0, "{a:?}");
        assert!(s.confirmed());
        let disputed: Vec<&Probe> = s.probes().iter().filter(|p| p.disputed()).collect();
        assert!(!disputed.is_empty());
        for p in &disputed {
            assert_eq!(p.verdict, ProbeVerdict::Uncertain, "{}", p.level);
            assert_eq!(p.measured(), ProbeVerdict::Inside, "{}", p.level);
            assert!(p.level > 25.0 && p.level <= 27.0, "{}", p.level);
        }
        // The bounds that stand were each repeated once and agreed.
        for end in [lo, hi] {
            let p = s.probes().iter().find(|p| p.level == end).unwrap();
            assert_eq!(p.repeats.len(), 1, "{end}");
            assert_eq!(p.repeats[0].verdict, p.verdict, "{end}");
        }
        // Runs that agree: the repeats change nothing but the cost.
        let (s1, a1) = scripted(
            SearchConfig {
                confirm: 1,
                ..cfg()
            },
            27.0,
            27.0,
        );
        let (s0, a0) = scripted(cfg(), 27.0, 27.0);
        assert_eq!((a1.lo, a1.hi, a1.status), (a0.lo, a0.hi, a0.status));
        assert_eq!(s1.probes().len(), s0.probes().len());
        // The lower bound's repeat needs an extension (400 requests cannot show a p99
        // inside at the look's level, as its own first measurement could not), the upper
        // bound's does not.
        assert_eq!(
            s1.spent().0,
            s0.spent().0 + 1200,
            "three measurements of 400"
        );
    }

    #[test]
    fn a_search_that_cannot_afford_its_repeats_stops_on_the_budget_and_says_so() {
        let (s0, _) = scripted(cfg(), 27.0, 27.0);
        let budget = s0.spent().0 + 400;
        let (s, a) = scripted(
            SearchConfig {
                confirm: 1,
                budget_requests: Some(budget),
                ..cfg()
            },
            27.0,
            27.0,
        );
        assert_eq!(a.status, Stop::Budget);
        assert!(!s.confirmed());
        let file = crate::capacity::CapacityFile::of(&s, a);
        assert!(
            file.warnings.iter().any(|w| w.contains("not repeated")),
            "{:?}",
            file.warnings
        );
        // What ran out, and what to change.
        let spent = format!("{} of {budget} requests spent", s.spent().0);
        assert!(
            file.warnings
                .iter()
                .any(|w| w.contains(&spent) && w.contains("raise load.search.budget")),
            "{:?}",
            file.warnings
        );
        assert_eq!(
            file.probes.iter().map(|p| p.repeats.len()).sum::<usize>(),
            1
        );
        // A budget that pays for the narrowing and no repeat: what it cut off was the
        // repeats, and the warning says so, not "before the bracket was as narrow as the
        // precision asked" with advice to accept a coarser precision.
        let (s, a) = scripted(
            SearchConfig {
                confirm: 1,
                budget_requests: Some(s0.spent().0),
                ..cfg()
            },
            27.0,
            27.0,
        );
        assert_eq!(a.status, Stop::Budget);
        assert!(s.narrowed(), "{:?}", s.bracket());
        let file = crate::capacity::CapacityFile::of(&s, a);
        assert!(
            file.warnings.iter().any(|w| w.contains(
                "after the bracket was narrowed as far as the search takes it, before its ends were repeated"
            )) && !file.warnings.iter().any(|w| w.contains("coarser")),
            "{:?}",
            file.warnings
        );
    }

    #[test]
    fn a_repeat_that_stays_uncertain_leaves_its_bound_unconfirmed_not_contradicted() {
        // Runs agree that 100 ms is inside, but the lower bound's repeats get 100 requests a
        // measurement: with its extensions too few to show a p99 inside, it stays uncertain.
        let mut s = Search::new(SearchConfig {
            confirm: 1,
            ..cfg()
        });
        let lower_repeat = |s: &Search, level: f64| {
            s.probes()
                .iter()
                .any(|p| p.level == level && p.measured() == ProbeVerdict::Inside)
        };
        let stop = loop {
            match s.next() {
                Step::Measure { level, repeat, .. } => {
                    let ms = if level <= 27.0 { 100.0 } else { 900.0 };
                    let n = if repeat && lower_repeat(&s, level) {
                        100
                    } else {
                        400
                    };
                    let obs = (0..n)
                        .map(|_| Obs {
                            ttft_ms: Some(ms),
                            ..Obs::default()
                        })
                        .collect();
                    s.record(level, obs, n as u64, Duration::from_secs(1));
                }
                Step::Stop(stop) => break stop,
            }
        };
        let unconfirmed: Vec<&Probe> = s.probes().iter().filter(|p| p.disputed()).collect();
        assert!(!unconfirmed.is_empty());
        for p in &unconfirmed {
            assert_eq!(p.measured(), ProbeVerdict::Inside);
            assert!(p
                .repeats
                .iter()
                .all(|r| r.verdict == ProbeVerdict::Uncertain));
        }
        let file = crate::capacity::CapacityFile::of(&s, s.answer(stop));
        let said: Vec<&String> = file
            .warnings
            .iter()
            .filter(|w| w.contains("not by each of its repeats"))
            .collect();
        assert_eq!(said.len(), unconfirmed.len(), "{:?}", file.warnings);
        assert!(
            said.iter()
                .all(|w| w.contains("a repeat stayed uncertain") && !w.contains("disagree")),
            "{said:?}"
        );
        // A repeat outside is a disagreement (the scripted runs of the test above).
        let (s, a) = scripted(
            SearchConfig {
                confirm: 1,
                ..cfg()
            },
            27.0,
            25.0,
        );
        let file = crate::capacity::CapacityFile::of(&s, a);
        assert!(
            file.warnings
                .iter()
                .any(|w| w.contains("runs at that level disagree")),
            "{:?}",
            file.warnings
        );
    }

    /// The synthetic server with run-to-run noise: each measurement runs at its own speed,
    /// its capacity scaled by `exp(sigma Z)`, Z standard normal (a busy machine, a queue's
    /// bursts). Its capacity is where the share of all its runs' requests slower than 500 ms
    /// is 1 %: `E[exp(−500 / mean(rate / S))] = 0.01`, found by bisection on a quadrature
    /// over Z.
    fn noisy_truth(sigma: f64) -> f64 {
        let tail = |rate: f64| {
            let (mut sum, mut w) = (0.0, 0.0);
            for i in 0..=2000 {
                let z = -6.0 + 12.0 * f64::from(i) / 2000.0;
                let pdf = (-z * z / 2.0).exp();
                sum += pdf * (-500.0 / mean_ms(rate / (sigma * z).exp())).exp();
                w += pdf;
            }
            sum / w
        };
        let (mut a, mut b) = (10.0, 45.0);
        for _ in 0..60 {
            let m = (a + b) / 2.0;
            if tail(m) > 0.01 {
                b = m;
            } else {
                a = m;
            }
        }
        (a + b) / 2.0
    }

    fn noisy_coverage(cfg: SearchConfig, sigma: f64, trials: u64) -> (f64, f64, f64) {
        let truth = noisy_truth(sigma);
        let (mut covered, mut errors, mut spent) = (0, Vec::new(), Vec::new());
        for seed in 0..trials {
            let mut rng = ChaCha8Rng::seed_from_u64(7000 + seed);
            let mut s = Search::new(cfg.clone());
            let a = loop {
                match s.next() {
                    Step::Measure { level, .. } => {
                        // Box-Muller: one speed a measurement.
                        let (u, v): (f64, f64) = (rng.gen(), rng.gen());
                        let z = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                        let obs = measure(&mut rng, level / (sigma * z).exp(), 400);
                        s.record(level, obs, 400, Duration::from_secs_f64(400.0 / level));
                    }
                    Step::Stop(stop) => break s.answer(stop),
                }
            };
            let (lo, hi) = (a.lo.unwrap(), a.hi.unwrap());
            covered += u32::from(lo <= truth && truth <= hi);
            errors.push((a.capacity.unwrap() / truth - 1.0).abs());
            spent.push(s.spent().0 as f64);
        }
        errors.sort_by(f64::total_cmp);
        spent.sort_by(f64::total_cmp);
        let n = trials as usize;
        (f64::from(covered) / n as f64, errors[n / 2], spent[n / 2])
    }

    /// Run-to-run noise one search cannot see in a probe: with 15 % of it the bracket of
    /// single measurements misses the capacity far more often than its nominal level
    /// allows, and repeating its ends brings the coverage back up.
    #[test]
    fn repeats_of_the_bounds_put_run_to_run_noise_into_the_interval() {
        let trials = 200;
        let cfg = |confirm| SearchConfig {
            confirm,
            budget_requests: Some(100_000),
            ..cfg()
        };
        let (c0, e0, r0) = noisy_coverage(cfg(0), 0.15, trials);
        let (c1, e1, r1) = noisy_coverage(cfg(1), 0.15, trials);
        let (c2, e2, r2) = noisy_coverage(cfg(2), 0.15, trials);
        // Printed for docs/capacity.md (`cargo test --lib run_to_run -- --nocapture`).
        eprintln!(
            "truth {:.3}; confirm 0: coverage {c0:.3}, median |error| {e0:.4}, median requests \
             {r0}; confirm 1: {c1:.3}, {e1:.4}, {r1}; confirm 2: {c2:.3}, {e2:.4}, {r2}",
            noisy_truth(0.15)
        );
        assert!(c1 >= c0 + 0.1, "{c0} -> {c1}");
        assert!(c2 >= c1, "{c1} -> {c2}");
    }

    #[test]
    fn a_probe_too_small_for_its_first_look_is_said_with_the_size_it_needs() {
        // 400 requests, two extensions: each look at 96.7 % needs 408 for a p99.
        let advice = Search::new(cfg()).look_advice();
        assert_eq!(advice.len(), 1, "{advice:?}");
        assert!(
            advice[0].contains("needs 408") && advice[0].contains("measured 2 times"),
            "{advice:?}"
        );
        let big = SearchConfig {
            probe_requests: 408,
            chunk_requests: 408,
            ..cfg()
        };
        assert!(Search::new(big).look_advice().is_empty());
        let one = SearchConfig {
            max_extensions: 1,
            ..cfg()
        };
        assert!(Search::new(one).look_advice().is_empty());
    }

    #[test]
    fn rates_keep_three_significant_digits() {
        assert_eq!(round_sig(22.627_417, 3), 22.6);
        assert_eq!(round_sig(0.123_456, 3), 0.123);
        assert_eq!(round_sig(1234.5, 3), 1230.0);
    }
}
