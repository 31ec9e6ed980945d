//! A rung's summary folded record by record, so a long (soak) rung keeps no records: memory
//! is bounded by the spread of its latencies and by the requests in flight, not by the
//! number of requests done.
//!
//! [`RungFold::summary`] gives what [`super::summarize`] gives on the same records, with one
//! documented difference: each latency is counted in whole microseconds (rounded to the
//! nearest), so a latency statistic is exact for whole-microsecond latencies and otherwise
//! within 0.5 µs (0.0005 ms) of `summarize`'s. Everything else (counts, tokens, throughputs,
//! the peak number in flight, the peak output rate) is exact.
//!
//! Two keys depend on the order of events in time, which records arriving in completion
//! order do not give: the peak number of requests in flight (a sweep over send and end
//! times) and the peak output rate (token chunks per whole second since the first
//! successful send). Their events are held back until [`RungFold::settle`] says no later
//! record was sent before a time; only events after it stay held, i.e. those of the
//! requests in flight.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::time::Duration;

use super::compute::{achieved_rate, meets_slo, RungContext};
use super::counts::MicrosCounts;
use super::latency::Latency;
use super::models::{ModelSummary, MODEL_LATENCIES};
use super::prefix::PrefixSplit;
use super::reasoning::Reasoning;
use super::summary::RungSummary;
use super::tokens::TokenAccounting;
use crate::record::{ErrorClass, ItlGaps, RequestRecord, TokenSource};
use crate::scenario::Slo;

/// A rung's records folded as they arrive.
#[derive(Debug, Clone)]
pub struct RungFold {
    slo: Slo,
    measured: u64,
    ok: u64,
    warmup: u64,
    /// Requests abandoned in flight by a stop (class `interrupted`), warmup included.
    interrupted: u64,
    good: u64,
    retokenized: u64,
    errors: BTreeMap<String, u64>,
    first_sent: Option<Duration>,
    last_sent: Option<Duration>,
    last_end: Option<Duration>,
    input_tokens: u64,
    output_tokens: u64,
    latency: BTreeMap<Latency, MicrosCounts>,
    tokens: Tokens,
    reasoning: ReasoningFold,
    prefix: Option<PrefixFold>,
    /// A model mix's breakdown, in the order the models first appear.
    models: Vec<ModelFold>,
    in_flight: InFlight,
    peak_rate: PeakRate,
    settled: Duration,
    late: u64,
}

/// Token accounting sums (means are taken at the end, as `TokenAccounting::of` takes them).
#[derive(Debug, Clone, Default)]
struct Tokens {
    requested_out: u64,
    server_in: (u64, u64),
    server_out: (u64, u64),
    untrusted: u64,
    untrusted_reason: Option<&'static str>,
}

#[derive(Debug, Clone, Default)]
struct ReasoningFold {
    requests: u64,
    reasoning: u64,
    output: u64,
    ttfc: MicrosCounts,
}

#[derive(Debug, Clone, Default)]
struct PrefixFold {
    groups: BTreeSet<u32>,
    cold: MicrosCounts,
    warm: MicrosCounts,
}

/// One model's share of a mix, folded as [`super::models::ModelSummary::of`] computes it.
#[derive(Debug, Clone)]
struct ModelFold {
    name: String,
    measured: u64,
    ok: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// TTFT, TPOT, ITL and E2E of its successes (`MODEL_LATENCIES`).
    latency: BTreeMap<Latency, MicrosCounts>,
}

impl ModelFold {
    fn add(&mut self, r: &RequestRecord) {
        self.measured += 1;
        if !r.ok() {
            return;
        }
        self.ok += 1;
        self.input_tokens += u64::from(r.input_tokens);
        self.output_tokens += u64::from(r.output_tokens);
        let mut put = |l: Latency, d: Option<Duration>| {
            if let Some(d) = d {
                self.latency.entry(l).or_default().add(d);
            }
        };
        put(Latency::E2el, Some(r.e2e()));
        put(Latency::Ttft, r.ttft());
        put(Latency::Tpot, r.tpot());
        let itl = self.latency.entry(Latency::Itl).or_default();
        for &us in r.itl.micros() {
            itl.add_micros(u64::from(us));
        }
    }

    fn summary(&self, duration_s: f64, pooled: bool) -> ModelSummary {
        let latency = MODEL_LATENCIES
            .into_iter()
            .filter(|l| !(pooled && l.is_token_timing()))
            .map(|l| {
                let c = self.latency.get(&l).cloned().unwrap_or_default();
                let s = match l {
                    Latency::Itl => c.stats_micros(),
                    _ => c.stats(),
                };
                (l, s)
            })
            .collect();
        ModelSummary::from_counts(
            &self.name,
            self.measured,
            self.ok,
            self.input_tokens,
            self.output_tokens,
            duration_s,
            latency,
        )
    }
}

/// The sweep of send (+1) and end (−1) edges for the peak number in flight: edges before
/// the settled time are swept, later ones wait in a heap.
#[derive(Debug, Clone, Default)]
struct InFlight {
    held: BinaryHeap<Reverse<(Duration, i8)>>,
    current: i64,
    peak: i64,
}

impl InFlight {
    fn sweep(&mut self, before: Option<Duration>) {
        while let Some(Reverse((t, d))) = self.held.peek().copied() {
            if before.is_some_and(|b| t >= b) {
                break;
            }
            self.held.pop();
            self.current += i64::from(d);
            self.peak = self.peak.max(self.current);
        }
    }

    /// The peak so far, the held edges included (without sweeping them).
    fn peak_now(&self) -> u64 {
        let mut held: Vec<(Duration, i8)> = self.held.iter().map(|r| r.0).collect();
        // Ends sort before starts at the same instant, as `max_in_flight` orders them.
        held.sort_unstable();
        let (mut cur, mut peak) = (self.current, self.peak);
        for (_, d) in held {
            cur += i64::from(d);
            peak = peak.max(cur);
        }
        peak.max(0) as u64
    }
}

/// Token chunks per whole second since the first successful send. That first send is only
/// known once no earlier one can still come; until then successful requests' chunk times
/// are held (the requests of the first moments of the rung).
#[derive(Debug, Clone, Default)]
struct PeakRate {
    /// Earliest successful send seen.
    t0: Option<Duration>,
    /// True once `t0` can no longer move.
    fixed: bool,
    held: Vec<(Duration, ItlGaps)>,
    buckets: BTreeMap<u64, u64>,
}

impl PeakRate {
    fn add_to(buckets: &mut BTreeMap<u64, u64>, t0: Duration, first: Duration, itl: &ItlGaps) {
        let mut t = first;
        *buckets.entry(t.saturating_sub(t0).as_secs()).or_default() += 1;
        for gap in itl.iter() {
            t += gap;
            *buckets.entry(t.saturating_sub(t0).as_secs()).or_default() += 1;
        }
    }

    fn add(&mut self, sent: Duration, first: Option<Duration>, itl: &ItlGaps) -> bool {
        let late = self.fixed && self.t0.is_some_and(|t0| sent < t0);
        self.t0 = Some(self.t0.map_or(sent, |t| t.min(sent)));
        let Some(first) = first else { return late };
        match (self.fixed, self.t0) {
            (true, Some(t0)) => Self::add_to(&mut self.buckets, t0, first, itl),
            _ => self.held.push((first, itl.clone())),
        }
        late
    }

    fn settle(&mut self, settled: Duration) {
        if let (false, Some(t0)) = (self.fixed, self.t0) {
            if settled >= t0 {
                self.fixed = true;
                for (first, itl) in std::mem::take(&mut self.held) {
                    Self::add_to(&mut self.buckets, t0, first, &itl);
                }
            }
        }
    }

    fn peak_now(&self) -> f64 {
        let Some(t0) = self.t0 else { return 0.0 };
        let peak = if self.held.is_empty() {
            self.buckets.values().copied().max()
        } else {
            let mut b = self.buckets.clone();
            for (first, itl) in &self.held {
                Self::add_to(&mut b, t0, *first, itl);
            }
            b.values().copied().max()
        };
        peak.unwrap_or(0) as f64
    }
}

impl RungFold {
    /// An empty fold; `slo` decides goodput as records arrive.
    pub fn new(slo: Slo) -> RungFold {
        RungFold {
            slo,
            measured: 0,
            ok: 0,
            warmup: 0,
            interrupted: 0,
            good: 0,
            retokenized: 0,
            errors: ErrorClass::ALL
                .iter()
                .map(|c| (c.key().to_string(), 0))
                .collect(),
            first_sent: None,
            last_sent: None,
            last_end: None,
            input_tokens: 0,
            output_tokens: 0,
            latency: Latency::ALL
                .iter()
                .map(|&l| (l, MicrosCounts::default()))
                .collect(),
            tokens: Tokens::default(),
            reasoning: ReasoningFold::default(),
            prefix: None,
            models: Vec::new(),
            in_flight: InFlight::default(),
            peak_rate: PeakRate::default(),
            settled: Duration::ZERO,
            late: 0,
        }
    }

    /// Records folded so far (warmup included).
    pub fn records(&self) -> u64 {
        self.measured + self.warmup
    }

    /// Records that arrived after [`RungFold::settle`] promised none would be sent that
    /// early: their peak in-flight and peak output-rate events were folded out of order.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Distinct latency values held, over every distribution (what the memory follows).
    pub fn distinct_values(&self) -> usize {
        let models: usize = self
            .models
            .iter()
            .flat_map(|m| m.latency.values())
            .map(MicrosCounts::distinct)
            .sum();
        self.latency
            .values()
            .map(MicrosCounts::distinct)
            .sum::<usize>()
            + models
    }

    /// No record folded from now on was sent before `t`: events before it are final.
    pub fn settle(&mut self, t: Duration) {
        if t <= self.settled {
            return;
        }
        self.settled = t;
        self.in_flight.sweep(Some(t));
        self.peak_rate.settle(t);
    }

    /// Fold one record.
    pub fn add(&mut self, r: &RequestRecord) {
        // Abandoned in flight by a stop: no outcome, counted apart (`summarize` does the same).
        if r.interrupted() {
            self.interrupted += 1;
            return;
        }
        let mut late = r.sent < self.settled;
        self.in_flight.held.push(Reverse((r.sent, 1)));
        self.in_flight.held.push(Reverse((r.end.max(r.sent), -1)));
        if r.warmup {
            self.warmup += 1;
            self.late += u64::from(late);
            return;
        }
        self.measured += 1;
        self.first_sent = Some(self.first_sent.map_or(r.sent, |t| t.min(r.sent)));
        self.last_sent = Some(self.last_sent.map_or(r.sent, |t| t.max(r.sent)));
        self.last_end = Some(self.last_end.map_or(r.end, |t| t.max(r.end)));
        if let Some(e) = &r.error {
            *self.errors.entry(e.class.key().to_string()).or_default() += 1;
        }
        if let Some(name) = r.model.as_deref() {
            let at = match self.models.iter().position(|m| m.name == name) {
                Some(i) => i,
                None => {
                    self.models.push(ModelFold {
                        name: name.to_string(),
                        measured: 0,
                        ok: 0,
                        input_tokens: 0,
                        output_tokens: 0,
                        latency: BTreeMap::new(),
                    });
                    self.models.len() - 1
                }
            };
            self.models[at].add(r);
        }
        let put = |f: &mut Self, l: Latency, d: Option<Duration>| {
            if let Some(d) = d {
                f.latency.get_mut(&l).expect("every latency").add(d);
            }
        };
        put(self, Latency::E2elAll, Some(r.e2e()));
        put(self, Latency::DispatchLag, Some(r.dispatch_lag()));
        if let Some(u) = r.usage_rejected {
            self.tokens.untrusted += 1;
            self.tokens.untrusted_reason.get_or_insert(u);
        }
        if let Some(g) = r.prefix_group {
            let p = self.prefix.get_or_insert_with(PrefixFold::default);
            p.groups.insert(g);
            if let Some(t) = r.ttft().filter(|_| r.ok()) {
                match r.prefix_first {
                    true => p.cold.add(t),
                    false => p.warm.add(t),
                }
            }
        }
        if r.ok() {
            self.ok += 1;
            self.input_tokens += u64::from(r.input_tokens);
            self.output_tokens += u64::from(r.output_tokens);
            self.good += u64::from(meets_slo(r, &self.slo));
            self.retokenized += u64::from(r.token_source != TokenSource::Usage);
            put(self, Latency::Ttft, r.ttft());
            put(self, Latency::Tpot, r.tpot());
            put(self, Latency::E2el, Some(r.e2e()));
            put(self, Latency::TtftSched, r.ttft_from_scheduled());
            put(self, Latency::E2elSched, Some(r.e2e_from_scheduled()));
            let itl = self.latency.get_mut(&Latency::Itl).expect("every latency");
            for &us in r.itl.micros() {
                itl.add_micros(u64::from(us));
            }
            let t = &mut self.tokens;
            t.requested_out += u64::from(r.requested_output_tokens);
            if let Some(n) = r.trusted_server_prompt_tokens() {
                t.server_in = (t.server_in.0 + 1, t.server_in.1 + u64::from(n));
            }
            if let Some(n) = r.trusted_server_completion_tokens() {
                t.server_out = (t.server_out.0 + 1, t.server_out.1 + u64::from(n));
            }
            let rs = &mut self.reasoning;
            if let Some(n) = r.reasoning_tokens.filter(|n| *n > 0) {
                rs.requests += 1;
                rs.reasoning = rs.reasoning.saturating_add(u64::from(n));
            }
            rs.output = rs.output.saturating_add(u64::from(r.output_tokens));
            if let Some(t) = r.ttfc() {
                rs.ttfc.add(t);
            }
            late |= self.peak_rate.add(r.sent, r.first_token, &r.itl);
        }
        self.late += u64::from(late);
    }

    /// The summary of what was folded so far (what `summarize` gives on those records, see
    /// the module doc); the fold goes on.
    pub fn summary(&self, ctx: &RungContext) -> RungSummary {
        let (start, end) = (
            self.first_sent.unwrap_or_default(),
            self.last_end.unwrap_or_default(),
        );
        let duration_s = end.saturating_sub(start).as_secs_f64();
        let per_s = |x: f64| {
            if duration_s > 0.0 {
                x / duration_s
            } else {
                0.0
            }
        };
        let achieved_rate = achieved_rate(self.measured, self.first_sent, self.last_sent);
        let latency = self
            .latency
            .iter()
            .map(|(&l, c)| {
                let s = match l {
                    Latency::Itl => c.stats_micros(),
                    _ => c.stats(),
                };
                (l, s)
            })
            .collect();
        let mean = |sum: u64, n: u64| (n > 0).then(|| sum as f64 / n as f64);
        let t = &self.tokens;
        let tokens = TokenAccounting {
            requested_input_tokens: mean(self.input_tokens, self.ok).unwrap_or(0.0),
            mean_server_input_tokens: mean(t.server_in.1, t.server_in.0),
            requested_output_tokens: mean(t.requested_out, self.ok).unwrap_or(0.0),
            mean_output_tokens: mean(self.output_tokens, self.ok).unwrap_or(0.0),
            mean_server_output_tokens: mean(t.server_out.1, t.server_out.0),
            server_usage_requests: t.server_out.0,
            untrusted_usage: t.untrusted,
            untrusted_usage_reason: t.untrusted_reason.map(str::to_string),
        };
        let rs = &self.reasoning;
        let reasoning = (rs.requests > 0).then(|| Reasoning {
            requests: rs.requests,
            total_reasoning_tokens: rs.reasoning,
            total_content_tokens: rs.output.saturating_sub(rs.reasoning),
            ttfc: rs.ttfc.stats(),
        });
        let prefix = self.prefix.as_ref().map(|p| PrefixSplit {
            groups: p.groups.len() as u64,
            cold: p.cold.stats(),
            warm: p.warm.stats(),
        });
        RungSummary {
            rate: ctx.rate,
            load: ctx.load,
            burstiness: ctx.burstiness,
            max_concurrency: ctx.max_concurrency,
            num_prompts: self.measured,
            warmup_requests: self.warmup,
            duration_s,
            completed: self.ok,
            failed: self.measured - self.ok,
            errors_by_class: self.errors.clone(),
            total_input_tokens: self.input_tokens,
            total_output_tokens: self.output_tokens,
            request_throughput: per_s(self.ok as f64),
            request_goodput: per_s(self.good as f64),
            output_throughput: per_s(self.output_tokens as f64),
            total_token_throughput: per_s((self.input_tokens + self.output_tokens) as f64),
            achieved_rate,
            max_concurrent_requests: self.in_flight.peak_now(),
            max_output_tokens_per_s: self.peak_rate.peak_now(),
            retokenized_outputs: self.retokenized,
            inexact_prompts: ctx.inexact_prompts,
            interrupted: ctx.interrupted,
            interrupted_requests: self.interrupted,
            tokens,
            reasoning,
            prefix,
            // Sessions never run for a duration (`validate` refuses it).
            sessions: None,
            latency,
            server: Default::default(),
            pooling: ctx.pooling,
            models: self
                .models
                .iter()
                .map(|m| m.summary(duration_s, ctx.pooling.is_some()))
                .collect(),
            repeats: Vec::new(),
            offered_rate: None,
            ramp: None,
        }
    }
}

#[cfg(test)]
#[path = "fold_tests.rs"]
mod tests;
