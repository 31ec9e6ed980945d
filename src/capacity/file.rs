//! `capacity.json`: a search's path, verdicts and answer, written beside the probes' rung
//! files and read back by `compare` / `gate` and `report`.

use serde::{Deserialize, Serialize};

use super::search::{round_sig, Answer, Over, Precision, Search, Stop};
use super::slo::{PerRequest, ProbeVerdict, SloMetric, SloTerm};

/// The file's name in a result folder.
pub const CAPACITY_FILE: &str = "capacity.json";

/// Version of the file's layout.
pub const CAPACITY_FORMAT_VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFile {
    pub format_version: u32,
    /// `rate` (req/s, open loop) or `users` (closed loop).
    pub over: String,
    /// `req/s` or `users`.
    pub unit: String,
    /// The SLO searched for: every term must hold.
    pub slo: Vec<SloLine>,
    /// Two-sided level of each probe verdict's interval.
    pub confidence: f64,
    /// The precision asked: `5%` or an absolute width.
    pub precision: String,
    /// Every probe in the order first measured.
    pub probes: Vec<ProbeLine>,
    pub answer: Answer,
    /// The answer for humans: `capacity 37.5 req/s [35.1, 39.8] at p99 TTFT <= 500 ms`.
    pub text: String,
    /// Requests sent by every probe, warmup included.
    pub requests: u64,
    /// Time spent by the probes, the cooldowns before them included, seconds.
    pub spent_s: f64,
    /// Contradicting verdicts and other caveats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One SLO term: `metric <= max` (a percentile, the error rate) or `metric >= min`
/// (goodput, with the per-request bounds that count a request good).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloLine {
    pub metric: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request: Option<PerRequest>,
}

impl SloLine {
    /// The term as the scenario declared it.
    pub fn of(t: &SloTerm) -> SloLine {
        let floor = t.metric.is_floor();
        SloLine {
            metric: t.metric.name(),
            max: (!floor).then_some(t.bound),
            min: floor.then_some(t.bound),
            per_request: floor.then_some(t.per_request),
        }
    }

    /// Its bound, whichever side it is on.
    pub fn bound(&self) -> Option<f64> {
        self.max.or(self.min)
    }

    /// The term for humans, as the search said it: `p99 TTFT <= 500 ms`.
    pub fn describe(&self) -> String {
        let term = SloMetric::parse(&self.metric).ok().and_then(|metric| {
            Some(SloTerm {
                metric,
                bound: self.bound()?,
                per_request: self.per_request.unwrap_or_default(),
            })
        });
        match (term, self.max, self.min) {
            (Some(t), _, _) => t.describe(),
            (None, Some(max), _) => format!("{} <= {max}", self.metric),
            (None, None, Some(min)) => format!("{} >= {min}", self.metric),
            (None, None, None) => self.metric.clone(),
        }
    }
}

/// One probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeLine {
    /// Its rate (req/s) or users; its rung files are named after it.
    pub level: f64,
    /// Measurements pooled (1 + extensions).
    pub measurements: u32,
    /// Measured requests behind its verdict.
    pub requests: usize,
    pub verdict: ProbeVerdict,
    /// One per SLO term, in the SLO's order.
    pub terms: Vec<TermLine>,
    /// `[highest inside, lowest outside]` once this probe was judged (`null`: none yet).
    pub bracket: [Option<f64>; 2],
    /// Its repeats as a bound of the bracket, each judged alone (`verdict` is then
    /// `uncertain` when one of them disagreed: a disputed probe bounds nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RepeatLine>,
}

/// One repeat of a bounding probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatLine {
    pub requests: usize,
    pub verdict: ProbeVerdict,
    pub terms: Vec<TermLine>,
}

/// One SLO term's verdict on one probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TermLine {
    pub metric: String,
    /// The sample percentile, error rate or goodput fraction; `null` when infinite (failed requests count as
    /// infinitely slow) or not measured.
    pub value: Option<f64>,
    /// Its interval at `confidence`; `null` for an end the sample cannot bound.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub n: usize,
    pub verdict: ProbeVerdict,
}

fn term_lines(slo: &[SloTerm], terms: &[super::slo::TermJudgement]) -> Vec<TermLine> {
    slo.iter()
        .zip(terms)
        .map(|(t, j)| TermLine {
            metric: t.metric.name(),
            value: finite(j.value),
            lo: finite(j.lo),
            hi: finite(j.hi),
            n: j.n,
            verdict: j.verdict,
        })
        .collect()
}

fn verdict_word(v: ProbeVerdict) -> &'static str {
    match v {
        ProbeVerdict::Inside => "inside",
        ProbeVerdict::Outside => "outside",
        ProbeVerdict::Uncertain => "uncertain",
    }
}

/// What ran out when a search stopped on its budget, and what to change.
fn budget_advice(s: &Search) -> String {
    let c = s.config();
    let (requests, elapsed) = s.spent();
    let mut spent = Vec::new();
    if let Some(b) = c.budget_requests {
        spent.push(format!("{requests} of {b} requests"));
    }
    if let Some(t) = c.budget_time {
        spent.push(format!(
            "{:.0} s of {:.0} s",
            elapsed.as_secs_f64(),
            t.as_secs_f64()
        ));
    }
    if s.narrowed() {
        // What the budget cut off was the repeats of the ends, not the narrowing.
        return format!(
            "the budget ran out ({} spent; the next measurement of {} requests would \
             overspend it) after the bracket was narrowed as far as the search takes it, before \
             its ends were repeated load.search.confirm times: raise load.search.budget (requests \
             or duration) to confirm them",
            spent.join(", "),
            c.chunk_requests
        );
    }
    format!(
        "the budget ran out ({} spent; the next measurement of {} requests would overspend \
         it) before the bracket was as narrow as the precision asked: raise \
         load.search.budget (requests or duration), start nearer the capacity \
         (load.search.start), or accept a coarser load.search.precision",
        spent.join(", "),
        c.chunk_requests
    )
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// `p99 TTFT <= 500 ms and error rate <= 0.01`.
pub fn slo_text(slo: &[SloTerm]) -> String {
    slo.iter()
        .map(SloTerm::describe)
        .collect::<Vec<_>>()
        .join(" and ")
}

/// `p99 TTFT <= 500 ms and error rate <= 0.01`, from a file's terms.
pub fn slo_lines_text(slo: &[SloLine]) -> String {
    slo.iter()
        .map(SloLine::describe)
        .collect::<Vec<_>>()
        .join(" and ")
}

/// A level for humans: three significant digits.
pub fn level_text(x: f64) -> String {
    let r = round_sig(x, 3);
    let s = format!("{r:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The answer in one line.
pub fn answer_text(a: &Answer, unit: &str, slo: &str) -> String {
    let t = level_text;
    match (a.capacity, a.lo, a.hi) {
        (Some(c), Some(lo), Some(hi)) => {
            format!("capacity {} {unit} [{}, {}] at {slo}", t(c), t(lo), t(hi))
        }
        (_, Some(lo), None) if a.status == Stop::AboveMax => {
            format!(
                "capacity above {} {unit} (the search's max, inside) at {slo}",
                t(lo)
            )
        }
        (_, Some(lo), None) => format!(
            "capacity at least {} {unit} at {slo} (no probe was outside: {})",
            t(lo),
            a.status.describe()
        ),
        (_, None, Some(hi)) if a.status == Stop::BelowMin => {
            format!(
                "capacity below {} {unit} (the search's min, outside) at {slo}",
                t(hi)
            )
        }
        (_, None, Some(hi)) => format!(
            "capacity below {} {unit} at {slo} (no probe was inside: {})",
            t(hi),
            a.status.describe()
        ),
        _ => format!(
            "no capacity found at {slo}: no probe was inside or outside ({})",
            a.status.describe()
        ),
    }
}

/// Least a level read back from a file may be: the lowest rate ladder runs
/// (`scenario::limits::MIN_RATE`, which a test holds equal; capacity sits below scenario).
pub const MIN_LEVEL: f64 = 0.001;

/// Most a level read back from a file may be (req/s or users): far past any server, and a
/// chart's axis stays drawable (a level of 1e300 or a subnormal one is not a level a search
/// probed, it is a damaged file).
pub const MAX_LEVEL: f64 = 1e12;

/// `s` for a message about a damaged file: its Debug form (controls escaped), cut at 40
/// characters (a hand-edited file may hold megabytes in one string).
fn shown(s: &str) -> String {
    let cut = crate::format::first_chars(s, 40);
    if cut.len() < s.len() {
        format!("{cut:?}...")
    } else {
        format!("{cut:?}")
    }
}

/// Why a level read back is not one a search could have probed; `None` when it is.
fn level_problem(x: f64, users: bool) -> Option<String> {
    let min = MIN_LEVEL;
    if !(x.is_finite() && x > 0.0) {
        return Some(format!("level {x} is not a positive number"));
    }
    if x < min {
        return Some(format!(
            "level {x:e} is below the lowest level ladder runs, {min}"
        ));
    }
    if x > MAX_LEVEL {
        return Some(format!(
            "level {x:e} is past {MAX_LEVEL:e}, more than any search probes"
        ));
    }
    (users && (x < 1.0 || x.fract() != 0.0))
        .then(|| format!("level {x} is no number of users (a whole number, at least 1)"))
}

/// A term's number read back: a measured value (`values::measured`), at most 1 for a
/// fraction.
fn value_problem(x: f64, fraction: bool) -> Option<String> {
    match crate::values::measured(x) {
        Err(why) => Some(format!("{x} is not a measured value ({why:?})")),
        Ok(x) if fraction && x > 1.0 => Some(format!("{x} is a fraction above 1")),
        Ok(_) => None,
    }
}

impl CapacityFile {
    /// A file read back from a result folder, checked as the runner writes it (RELIABILITY.md,
    /// the `capacity.json` row): the layout version this ladder reads, `over` and `unit` one
    /// of the two pairs, every SLO term one a search holds with its bound, every level one a
    /// search could probe (at least [`MIN_LEVEL`], at most [`MAX_LEVEL`], whole
    /// users), every number a measured value, and the answer consistent with its probes (a
    /// point exactly when both ends are found, `lo < hi`, the point between them, `lo` the
    /// level of a probe judged inside and `hi` of one judged outside). The file's own `text`
    /// is not kept: it is made again from the checked answer ([`answer_text`]), so no reader
    /// prints a line the numbers do not say. `Err` says which key is wrong and how.
    pub fn checked(mut self) -> Result<CapacityFile, String> {
        let v = self.format_version;
        if v != CAPACITY_FORMAT_VERSION {
            return Err(if v > CAPACITY_FORMAT_VERSION {
                format!(
                    "format_version {v} is newer than this ladder reads \
                     ({CAPACITY_FORMAT_VERSION}): read it with the ladder that wrote it, or \
                     upgrade"
                )
            } else {
                format!("format_version {v} is not one ladder wrote (it writes {CAPACITY_FORMAT_VERSION})")
            });
        }
        let users = match (self.over.as_str(), self.unit.as_str()) {
            ("rate", "req/s") => false,
            ("users", "users") => true,
            (o, u) => {
                return Err(format!(
                    "over {} with unit {}: a search is over `rate` (unit `req/s`) or `users` \
                     (unit `users`)",
                    shown(o),
                    shown(u)
                ))
            }
        };
        if self.slo.is_empty() {
            return Err("slo is empty: a search holds at least one term".into());
        }
        for t in &self.slo {
            let metric = SloMetric::parse(&t.metric).map_err(|_| {
                format!(
                    "slo metric {} is not one a search holds ({})",
                    shown(&t.metric),
                    super::slo::SLO_METRICS_HINT
                )
            })?;
            let bound = match (metric.is_floor(), t.max, t.min) {
                (false, Some(b), None) | (true, None, Some(b)) => b,
                _ => {
                    return Err(format!(
                        "slo term {}: a percentile or the error rate has `max` alone, goodput \
                         `min` alone",
                        metric.name()
                    ))
                }
            };
            if let Some(why) = value_problem(bound, metric.is_fraction()) {
                return Err(format!("slo term {}: its bound {why}", metric.name()));
            }
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(format!(
                "confidence {} is not a level between 0 and 1",
                self.confidence
            ));
        }
        if let Some(why) = value_problem(self.spent_s, false) {
            return Err(format!("spent_s {why}"));
        }
        for (i, p) in self.probes.iter().enumerate() {
            let at = |why: String| format!("probes[{i}]: {why}");
            if let Some(why) = level_problem(p.level, users) {
                return Err(at(why));
            }
            for end in p.bracket.iter().flatten() {
                if let Some(why) = level_problem(*end, users) {
                    return Err(at(format!("bracket: {why}")));
                }
            }
            let terms = std::iter::once(&p.terms).chain(p.repeats.iter().map(|r| &r.terms));
            for t in terms.flatten() {
                let metric = SloMetric::parse(&t.metric)
                    .map_err(|_| at(format!("term metric {} is not an SLO's", shown(&t.metric))))?;
                for x in [t.value, t.lo, t.hi].into_iter().flatten() {
                    if let Some(why) = value_problem(x, metric.is_fraction()) {
                        return Err(at(format!("{}: {why}", metric.name())));
                    }
                }
            }
        }
        self.check_answer()?;
        self.text = answer_text(&self.answer, &self.unit, &slo_lines_text(&self.slo));
        Ok(self)
    }

    /// The answer against its probes ([`CapacityFile::checked`]).
    fn check_answer(&self) -> Result<(), String> {
        let a = &self.answer;
        for (name, x) in [("capacity", a.capacity), ("lo", a.lo), ("hi", a.hi)] {
            if let Some(why) = x.and_then(|x| level_problem(x, false)) {
                return Err(format!("answer.{name}: {why}"));
            }
        }
        if a.capacity.is_some() != (a.lo.is_some() && a.hi.is_some()) {
            return Err(
                "answer: a search gives a point exactly when it found both ends of its interval"
                    .into(),
            );
        }
        if let (Some(c), Some(lo), Some(hi)) = (a.capacity, a.lo, a.hi) {
            if !(lo < hi && lo <= c && c <= hi) {
                return Err(format!(
                    "answer: capacity {c} with interval [{lo}, {hi}]: a point lies inside an \
                     interval whose lower end is below its upper"
                ));
            }
        }
        let probed =
            |x: f64, v: ProbeVerdict| self.probes.iter().any(|p| p.level == x && p.verdict == v);
        if let Some(lo) = a.lo.filter(|lo| !probed(*lo, ProbeVerdict::Inside)) {
            return Err(format!(
                "answer.lo {lo} is not the level of a probe judged inside (probes[].verdict)"
            ));
        }
        if let Some(hi) = a.hi.filter(|hi| !probed(*hi, ProbeVerdict::Outside)) {
            return Err(format!(
                "answer.hi {hi} is not the level of a probe judged outside (probes[].verdict)"
            ));
        }
        Ok(())
    }

    /// Whether two searches held the same SLO (its terms in any order) over the same levels:
    /// else their capacities are different quantities.
    pub fn same_quantity(&self, other: &CapacityFile) -> bool {
        let sorted = |f: &CapacityFile| {
            let mut v = f.slo.clone();
            v.sort_by(|a, b| a.metric.cmp(&b.metric));
            v
        };
        self.over == other.over && sorted(self) == sorted(other)
    }
}

impl CapacityFile {
    /// The file of a finished (or stopped) search.
    pub fn of(s: &Search, answer: Answer) -> CapacityFile {
        let c = s.config();
        let unit = match c.over {
            Over::Rate => "req/s",
            Over::Users => "users",
        };
        let slo = slo_text(&c.slo);
        let mut warnings: Vec<String> = s
            .contradictions()
            .into_iter()
            .map(|(inside, outside)| {
                format!(
                    "inside the SLO at {} {unit} but outside at {} {unit}, below it: the metric \
                     did not grow with the load there (noise at the bound, or the server changed \
                     during the search); the interval uses the lowest outside level",
                    level_text(inside),
                    level_text(outside)
                )
            })
            .collect();
        warnings.extend(s.look_advice());
        if let Some(((low, at_low), (next, at_next))) = s.errors_without_load() {
            warnings.push(format!(
                "errors did not fall with the load: {:.1} % of requests failed at {} {unit}, \
                 the lowest level probed, and {:.1} % at {} {unit}: a server that fails \
                 requests at any load is not at its capacity, and no level was inside the SLO \
                 for that reason; read the failures' classes (`errors` in the rung's results, \
                 `error_detail` in its request lines), fix them, then search again",
                at_low * 100.0,
                level_text(low),
                at_next * 100.0,
                level_text(next)
            ));
        }
        if answer.status == Stop::UncertainZone {
            warnings.push(format!(
                "the probes between {} and {} {unit} stayed uncertain after their extensions: \
                 the SLO's metric is within its noise of the bound there; more requests per \
                 probe (workload.requests_per_rung) or more extensions narrow it",
                answer.lo.map_or("-".into(), level_text),
                answer.hi.map_or("-".into(), level_text)
            ));
        }
        for p in s.probes().iter().filter(|p| p.disputed()) {
            let uncertain_only = p.dispute() == Some(ProbeVerdict::Uncertain);
            warnings.push(format!(
                "{} {unit} was judged {} by its measurements but not by each of its repeats \
                 ({}): it bounds nothing",
                level_text(p.level),
                verdict_word(p.measured()),
                if uncertain_only {
                    "a repeat stayed uncertain: it did not confirm the verdict"
                } else {
                    "runs at that level disagree"
                }
            ));
        }
        if answer.status == Stop::Budget {
            warnings.push(budget_advice(s));
        }
        if c.confirm > 0 && !s.confirmed() {
            warnings.push(format!(
                "the bracket's ends were not repeated {} time(s) each before the search \
                 stopped ({}): the interval holds the sampling noise of one run at each end, \
                 not the run-to-run noise",
                c.confirm,
                answer.status.describe()
            ));
        }
        let (requests, spent) = s.spent();
        CapacityFile {
            format_version: CAPACITY_FORMAT_VERSION,
            over: match c.over {
                Over::Rate => "rate".into(),
                Over::Users => "users".into(),
            },
            unit: unit.into(),
            slo: c.slo.iter().map(SloLine::of).collect(),
            confidence: c.confidence,
            precision: match c.precision {
                Precision::Relative(p) => format!("{}%", p * 100.0),
                Precision::Absolute(a) => format!("{a}"),
            },
            probes: s
                .probes()
                .iter()
                .map(|p| ProbeLine {
                    level: p.level,
                    measurements: p.chunks,
                    requests: p.obs.len(),
                    verdict: p.verdict,
                    terms: term_lines(&c.slo, &p.terms),
                    bracket: [p.bracket.0, p.bracket.1],
                    repeats: p
                        .repeats
                        .iter()
                        .map(|r| RepeatLine {
                            requests: r.obs.len(),
                            verdict: r.verdict,
                            terms: term_lines(&c.slo, &r.terms),
                        })
                        .collect(),
                })
                .collect(),
            text: answer_text(&answer, unit, &slo),
            answer,
            requests,
            spent_s: spent.as_secs_f64(),
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_reads_as_a_value_with_its_interval_and_the_slo() {
        let a = Answer {
            status: Stop::Converged,
            capacity: Some(37.4823),
            lo: Some(35.1),
            hi: Some(39.8),
        };
        assert_eq!(
            answer_text(&a, "req/s", "p99 TTFT <= 500 ms"),
            "capacity 37.5 req/s [35.1, 39.8] at p99 TTFT <= 500 ms"
        );
        let above = Answer {
            status: Stop::AboveMax,
            capacity: None,
            lo: Some(200.0),
            hi: None,
        };
        assert_eq!(
            answer_text(&above, "req/s", "error rate <= 0.01"),
            "capacity above 200 req/s (the search's max, inside) at error rate <= 0.01"
        );
        // A search that found an inside level and no standing outside one (a max left
        // uncertain): at least, never "above the max".
        let open = Answer {
            status: Stop::UncertainZone,
            capacity: None,
            lo: Some(50.0),
            hi: None,
        };
        assert!(
            answer_text(&open, "req/s", "x").starts_with("capacity at least 50 req/s at x"),
            "{}",
            answer_text(&open, "req/s", "x")
        );
        let line = SloLine::of(&SloTerm::at_most(SloMetric::ErrorRate, 0.01));
        assert_eq!(line.describe(), "error rate <= 0.01");
        let json = serde_json::to_value(a).unwrap();
        assert_eq!(json["status"], "converged");
        assert_eq!(serde_json::from_value::<Answer>(json).unwrap(), a);
    }

    /// A search against a server that fails a share `failing(level)` of requests (each
    /// one fast, or failed: deterministic, every `k`-th request), with an error-rate term.
    fn against_failures(failing: impl Fn(f64) -> f64) -> CapacityFile {
        use crate::capacity::search::{Over, Precision, SearchConfig, Step};
        use crate::capacity::slo::Obs;
        let mut s = Search::new(SearchConfig {
            over: Over::Rate,
            slo: vec![SloTerm::at_most(SloMetric::ErrorRate, 0.05)],
            start: 20.0,
            min: 5.0,
            max: 200.0,
            growth: 2.0,
            precision: Precision::Relative(0.05),
            confidence: 0.9,
            chunk_requests: 200,
            probe_requests: 200,
            max_extensions: 1,
            confirm: 0,
            budget_requests: Some(20_000),
            budget_time: None,
        });
        loop {
            match s.next() {
                Step::Measure { level, .. } => {
                    let share = failing(level);
                    let obs = (0..200)
                        .map(|i| Obs {
                            failed: (i as f64 + 0.5) / 200.0 < share,
                            ttft_ms: Some(10.0),
                            ..Obs::default()
                        })
                        .collect();
                    s.record(level, obs, 200, std::time::Duration::from_secs(1));
                }
                Step::Stop(stop) => return CapacityFile::of(&s, s.answer(stop)),
            }
        }
    }

    /// Errors at every load (a broken deployment answering 500 to 30 % of requests) leave
    /// no level inside the SLO; the search says the errors did not fall with the load, so
    /// "capacity below 5 req/s" is not read as a capacity. A server whose errors come with
    /// overload (none below 40 req/s, 30 % above) gets no such warning.
    #[test]
    fn errors_that_do_not_fall_with_the_load_are_not_called_a_capacity() {
        let broken = against_failures(|_| 0.3);
        assert_eq!(broken.answer.lo, None, "{:?}", broken.answer);
        let w = broken
            .warnings
            .iter()
            .find(|w| w.starts_with("errors did not fall with the load"))
            .unwrap_or_else(|| panic!("{:?}", broken.warnings));
        assert!(
            w.contains("30.0 % of requests failed at 5 req/s, the lowest level probed, and 30.0 % at 10 req/s"),
            "{w}"
        );
        let overloaded = against_failures(|level| if level < 40.0 { 0.0 } else { 0.3 });
        assert!(overloaded.answer.lo.is_some(), "{:?}", overloaded.answer);
        assert!(
            !overloaded
                .warnings
                .iter()
                .any(|w| w.starts_with("errors did not fall")),
            "{:?}",
            overloaded.warnings
        );
        // Below the min, from overload alone (errors fall as the load falls, but not to
        // zero by the min): no warning either.
        let steep = against_failures(|level| (level / 40.0).min(1.0) * 0.5);
        assert_eq!(steep.answer.lo, None, "{:?}", steep.answer);
        assert!(
            !steep
                .warnings
                .iter()
                .any(|w| w.starts_with("errors did not fall")),
            "{:?}",
            steep.warnings
        );
    }
}
