//! Per-rung aggregates of the scrapes: gauge statistics, counter deltas (resets handled),
//! histogram bucket deltas with estimated quantiles.

use crate::format::json_number as num;
use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::engines::{Concept, Hist, Snapshot};

/// One successful scrape, timed from the rung's measured start.
#[derive(Debug, Clone, PartialEq)]
pub struct Scraped {
    pub at: Duration,
    pub snap: Snapshot,
}

/// The server's side of one rung: the `server_*` keys of `result_rate_<rate>.json`.
/// Empty when nothing was scraped (and in files written before this existed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSummary {
    /// `vllm`, `sglang`, `tgi`, `llama.cpp`, `tensorrt_llm`, `dynamo` or `unknown`.
    pub engine: Option<String>,
    /// Numeric keys, each starting with `server_`. Keys ending `_est` are quantiles
    /// estimated from histogram buckets (linear within a bucket), not exact.
    pub values: BTreeMap<String, f64>,
    /// `…_info` metrics (engine version, cache / model config): metric → labels.
    pub identity: BTreeMap<String, BTreeMap<String, String>>,
}

/// The rung's prefix-cache share: prompt tokens the server reused from its cache over the
/// prompt tokens it was sent (0..1).
pub const CACHE_SHARE: &str = "server_cache_share";

/// `server_*` keys of result files that other parts of ladder write.
const NOT_OURS: [&str; 1] = ["server_usage_requests"];

const GAUGES: [Concept; 4] = [
    Concept::Running,
    Concept::Waiting,
    Concept::KvUsage,
    Concept::PrefixHitRate,
];
const COUNTERS: [Concept; 2] = [Concept::Preemptions, Concept::GeneratedTokens];
const HISTS: [Concept; 4] = [
    Concept::ServerTtft,
    Concept::ServerItl,
    Concept::ServerE2e,
    Concept::ServerQueueTime,
];

impl ServerSummary {
    /// Aggregate a rung's scrapes (in time order) and the count of failed attempts.
    pub fn from_scrapes(scrapes: &[Scraped], failures: u64) -> ServerSummary {
        let mut out = ServerSummary::default();
        if scrapes.is_empty() {
            if failures > 0 {
                out.values
                    .insert("server_scrape_failures".into(), failures as f64);
            }
            return out;
        }
        let mut put = |k: String, v: f64| {
            if v.is_finite() {
                out.values.insert(k, v);
            }
        };
        put("server_scrapes".into(), scrapes.len() as f64);
        put("server_scrape_failures".into(), failures as f64);
        for c in GAUGES {
            let mut xs: Vec<f64> = scrapes
                .iter()
                .filter_map(|s| s.snap.gauges.get(&c).copied())
                .filter(|v| v.is_finite())
                .collect();
            if xs.is_empty() {
                continue;
            }
            xs.sort_by(f64::total_cmp);
            let k = c.key();
            put(format!("server_max_{k}"), xs[xs.len() - 1]);
            put(
                format!("server_mean_{k}"),
                xs.iter().sum::<f64>() / xs.len() as f64,
            );
            put(format!("server_p95_{k}"), nearest_rank(&xs, 0.95));
        }
        for c in COUNTERS {
            if let Some(d) = counter_delta(scrapes, c) {
                put(format!("server_{}", c.key()), d);
            }
        }
        let hits = counter_delta(scrapes, Concept::PrefixHits);
        // vLLM counts the queries; llama.cpp the tokens it computed beside those it reused.
        let queries = counter_delta(scrapes, Concept::PrefixQueries).or_else(|| {
            let computed = counter_delta(scrapes, Concept::PromptTokensComputed)?;
            Some(computed + hits?)
        });
        let mut share = None;
        if let (Some(h), Some(q)) = (hits, queries) {
            if q > 0.0 {
                put("server_prefix_hit_rate".into(), h / q);
                share = Some(h / q);
            }
        }
        // The rung's cache share: the counters' ratio, else the mean of the engine's own
        // hit-rate gauge (SGLang, vLLM v0, TensorRT-LLM, Dynamo).
        let gauge = || {
            let xs: Vec<f64> = scrapes
                .iter()
                .filter_map(|s| s.snap.gauges.get(&Concept::PrefixHitRate).copied())
                .filter(|v| v.is_finite())
                .collect();
            (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
        };
        if let Some(v) = share.or_else(gauge) {
            put(CACHE_SHARE.into(), v.clamp(0.0, 1.0));
        }
        for c in HISTS {
            let Some(h) = hist_delta(scrapes, c) else {
                continue;
            };
            let k = c.key();
            put(format!("server_{k}_count"), h.count);
            if h.count > 0.0 {
                put(format!("server_mean_{k}_ms"), h.sum / h.count * 1000.0);
                for (name, q) in [("median", 0.5), ("p90", 0.9), ("p99", 0.99)] {
                    if let Some(v) = quantile(&h, q) {
                        put(format!("server_{name}_{k}_ms_est"), v * 1000.0);
                    }
                }
            }
        }
        out.engine = scrapes
            .iter()
            .rev()
            .find_map(|s| s.snap.engine)
            .map(|e| e.key().to_string());
        out.identity = scrapes
            .last()
            .map(|s| s.snap.info.clone())
            .unwrap_or_default();
        out
    }

    /// True when there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.engine.is_none() && self.values.is_empty() && self.identity.is_empty()
    }

    /// Add the `server_*` keys to a result map.
    pub fn write_into(&self, m: &mut Map<String, Value>) {
        if let Some(e) = &self.engine {
            m.insert("server_engine".into(), Value::from(e.clone()));
        }
        for (k, v) in &self.values {
            if let Some(n) = serde_json::Number::from_f64(*v) {
                m.insert(k.clone(), Value::Number(n));
            }
        }
        if !self.identity.is_empty() {
            let id = self
                .identity
                .iter()
                .map(|(k, labels)| {
                    let l = labels
                        .iter()
                        .map(|(a, b)| (a.clone(), Value::from(b.clone())))
                        .collect();
                    (k.clone(), Value::Object(l))
                })
                .collect();
            m.insert("server_identity".into(), Value::Object(id));
        }
    }

    /// Read the `server_*` keys back; absent keys stay absent.
    pub fn read_from(m: &Map<String, Value>) -> ServerSummary {
        let mut out = ServerSummary::default();
        let ours = |k: &str| k.starts_with("server_") && !NOT_OURS.contains(&k);
        for (k, v) in m.iter().filter(|(k, _)| ours(k)) {
            match (k.as_str(), v) {
                ("server_engine", Value::String(s)) => out.engine = Some(s.clone()),
                ("server_identity", Value::Object(o)) => {
                    for (name, labels) in o {
                        let l = labels
                            .as_object()
                            .map(|l| {
                                l.iter()
                                    .filter_map(|(a, b)| Some((a.clone(), b.as_str()?.to_string())))
                                    .collect()
                            })
                            .unwrap_or_default();
                        out.identity.insert(name.clone(), l);
                    }
                }
                (_, Value::Number(n)) => {
                    if let Some(f) = n.as_f64() {
                        out.values.insert(k.clone(), f);
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// One numeric key (`server_max_waiting`, …).
    pub fn get(&self, key: &str) -> Option<f64> {
        self.values.get(key).copied()
    }

    /// The rung's prefix-cache share ([`CACHE_SHARE`]; in folders written before it, the
    /// hit rate or mean hit-rate gauge it is made of), where the server exported one.
    pub fn cache_share(&self) -> Option<f64> {
        self.get(CACHE_SHARE)
            .or_else(|| self.get("server_prefix_hit_rate"))
            .or_else(|| self.get("server_mean_prefix_hit_rate"))
    }
}

/// One line of `server_metrics_rate_<rate>.jsonl`: the scrape's time and concept values
/// (gauges as read, counters and histogram counts cumulative as the server reports them).
pub fn series_line(s: &Scraped) -> Value {
    let mut m = Map::new();
    m.insert("t_s".into(), num(s.at.as_secs_f64()));
    if let Some(e) = s.snap.engine {
        m.insert("engine".into(), Value::from(e.key()));
    }
    for (c, v) in s.snap.gauges.iter().chain(s.snap.counters.iter()) {
        m.insert(c.key().into(), num(*v));
    }
    for (c, h) in &s.snap.hists {
        m.insert(format!("{}_count", c.key()), num(h.count));
        m.insert(format!("{}_sum_s", c.key()), num(h.sum));
    }
    if !s.snap.raw.is_empty() {
        let raw = s
            .snap
            .raw
            .iter()
            .map(|(k, v)| (k.clone(), num(*v)))
            .collect();
        m.insert("raw".into(), Value::Object(raw));
    }
    Value::Object(m)
}

/// The nearest-rank quantile at `q` in (0, 1]: the smallest sample with at least `q` of them
/// at or below it. Deliberately not the linear quantile of [`crate::stats`]: a gauge's p95
/// over the scrapes is a value the server did report, and `server_p95_*` has always been
/// this one.
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Increase of a counter over the scrapes; a drop is a server restart, after which the
/// new value counts from zero.
fn counter_delta(scrapes: &[Scraped], c: Concept) -> Option<f64> {
    let xs: Vec<f64> = scrapes
        .iter()
        .filter_map(|s| s.snap.counters.get(&c).copied())
        .collect();
    if xs.is_empty() {
        return None;
    }
    Some(
        xs.windows(2)
            .map(|w| if w[1] >= w[0] { w[1] - w[0] } else { w[1] })
            .sum(),
    )
}

/// Bucket-wise increase of a histogram from the first scrape to the last, resets handled
/// as for counters (a drop in count, or changed bounds, restarts from zero).
fn hist_delta(scrapes: &[Scraped], c: Concept) -> Option<Hist> {
    let hs: Vec<&Hist> = scrapes
        .iter()
        .filter_map(|s| s.snap.hists.get(&c))
        .collect();
    let first = *hs.first()?;
    let mut acc = Hist {
        bounds: first.bounds.clone(),
        cumulative: vec![0.0; first.bounds.len()],
        sum: 0.0,
        count: 0.0,
    };
    for w in hs.windows(2) {
        let (a, b) = (w[0], w[1]);
        let reset = b.count < a.count || a.bounds != b.bounds;
        if b.bounds != acc.bounds {
            // The bucket layout changed (a restart with other settings): keep the newest.
            acc = Hist {
                bounds: b.bounds.clone(),
                cumulative: vec![0.0; b.bounds.len()],
                sum: 0.0,
                count: 0.0,
            };
        }
        for (i, v) in acc.cumulative.iter_mut().enumerate() {
            let prev = if reset { 0.0 } else { a.cumulative[i] };
            *v += (b.cumulative[i] - prev).max(0.0);
        }
        acc.sum += if reset {
            b.sum
        } else {
            (b.sum - a.sum).max(0.0)
        };
        acc.count += if reset { b.count } else { b.count - a.count };
    }
    Some(acc)
}

/// Estimated quantile `q` (seconds) of a cumulative histogram, linear within the bucket
/// it falls in (Prometheus' `histogram_quantile`); the `+Inf` bucket gives its lower bound.
pub fn quantile(h: &Hist, q: f64) -> Option<f64> {
    let total = *h.cumulative.last()?;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut prev_bound = 0.0;
    let mut prev_cum = 0.0;
    for (&bound, &cum) in h.bounds.iter().zip(&h.cumulative) {
        if cum >= rank && cum > prev_cum {
            if bound.is_infinite() {
                return Some(prev_bound);
            }
            return Some(prev_bound + (bound - prev_bound) * (rank - prev_cum) / (cum - prev_cum));
        }
        prev_bound = bound;
        prev_cum = cum;
    }
    Some(prev_bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(gauge: f64, counter: f64, hist: (Vec<f64>, f64, f64)) -> Snapshot {
        let mut s = Snapshot::default();
        s.gauges.insert(Concept::Waiting, gauge);
        s.counters.insert(Concept::Preemptions, counter);
        s.hists.insert(
            Concept::ServerTtft,
            Hist {
                bounds: vec![0.1, 0.2, f64::INFINITY],
                cumulative: hist.0,
                sum: hist.1,
                count: hist.2,
            },
        );
        s
    }

    fn at(ms: u64, snap: Snapshot) -> Scraped {
        Scraped {
            at: Duration::from_millis(ms),
            snap,
        }
    }

    #[test]
    fn gauges_counters_with_a_reset_and_histogram_deltas() {
        let scrapes = vec![
            at(0, snap(0.0, 10.0, (vec![5.0, 5.0, 5.0], 0.25, 5.0))),
            at(1000, snap(4.0, 15.0, (vec![5.0, 7.0, 7.0], 0.55, 7.0))),
            at(2000, snap(2.0, 18.0, (vec![5.0, 9.0, 9.0], 0.85, 9.0))),
            // Restart: the counter starts over at 3.
            at(3000, snap(0.0, 3.0, (vec![5.0, 9.0, 9.0], 0.85, 9.0))),
        ];
        let s = ServerSummary::from_scrapes(&scrapes, 1);
        assert_eq!(s.get("server_max_waiting"), Some(4.0));
        assert_eq!(s.get("server_mean_waiting"), Some(1.5));
        assert_eq!(s.get("server_p95_waiting"), Some(4.0));
        assert_eq!(s.get("server_preemptions"), Some(5.0 + 3.0 + 3.0));
        // 4 new observations, all in (0.1, 0.2]: the median is the bucket's middle.
        assert_eq!(s.get("server_ttft_count"), Some(4.0));
        let med = s.get("server_median_ttft_ms_est").unwrap();
        assert!((med - 150.0).abs() < 1e-6, "{med}");
        let mean = s.get("server_mean_ttft_ms").unwrap();
        assert!((mean - 150.0).abs() < 1e-6, "{mean}");
        assert_eq!(s.get("server_scrapes"), Some(4.0));
        assert_eq!(s.get("server_scrape_failures"), Some(1.0));
    }

    /// llama.cpp counts the prompt tokens it computed and those it reused; vLLM v1 the
    /// queries and hits; SGLang only a hit-rate gauge. Each gives the rung's share.
    #[test]
    fn cache_share_from_llamacpp_vllm_and_a_gauge() {
        let counters = |pairs: &[(Concept, f64)]| {
            let mut s = Snapshot::default();
            s.counters.extend(pairs.iter().copied());
            s
        };
        // llama.cpp: 6805 − 1700 reused of 6805 sent over the rung (the numbers).
        let llama = ServerSummary::from_scrapes(
            &[
                at(
                    0,
                    counters(&[
                        (Concept::PromptTokensComputed, 100.0),
                        (Concept::PrefixHits, 50.0),
                    ]),
                ),
                at(
                    1000,
                    counters(&[
                        (Concept::PromptTokensComputed, 1800.0),
                        (Concept::PrefixHits, 5155.0),
                    ]),
                ),
            ],
            0,
        );
        let share = llama.cache_share().unwrap();
        assert!((share - 5105.0 / 6805.0).abs() < 1e-12, "{share}");
        assert_eq!(llama.get(CACHE_SHARE), Some(share));
        assert_eq!(llama.get("server_prefix_hit_rate"), Some(share));
        // vLLM v1: hits / queries.
        let vllm = ServerSummary::from_scrapes(
            &[
                at(
                    0,
                    counters(&[(Concept::PrefixQueries, 0.0), (Concept::PrefixHits, 0.0)]),
                ),
                at(
                    1000,
                    counters(&[
                        (Concept::PrefixQueries, 1000.0),
                        (Concept::PrefixHits, 250.0),
                    ]),
                ),
            ],
            0,
        );
        assert_eq!(vllm.cache_share(), Some(0.25));
        // A gauge only (SGLang, vLLM v0): its mean over the rung.
        let gauge = |v: f64| {
            let mut s = Snapshot::default();
            s.gauges.insert(Concept::PrefixHitRate, v);
            s
        };
        let sglang = ServerSummary::from_scrapes(&[at(0, gauge(0.2)), at(1000, gauge(0.4))], 0);
        let g = sglang.get(CACHE_SHARE).unwrap();
        assert!((g - 0.3).abs() < 1e-12, "{g}");
        // Nothing about a cache: no share.
        let none = ServerSummary::from_scrapes(
            &[at(0, snap(1.0, 0.0, (vec![1.0, 1.0, 1.0], 0.05, 1.0)))],
            0,
        );
        assert_eq!(none.cache_share(), None);
        // A folder written before the key: its hit rate stands in.
        let mut old = ServerSummary::default();
        old.values.insert("server_prefix_hit_rate".into(), 0.5);
        assert_eq!(old.cache_share(), Some(0.5));
    }

    #[test]
    fn json_round_trip_and_old_files_without_keys() {
        let scrapes = vec![at(0, snap(1.0, 0.0, (vec![1.0, 1.0, 1.0], 0.05, 1.0)))];
        let mut s = ServerSummary::from_scrapes(&scrapes, 0);
        s.engine = Some("vllm".into());
        s.identity.insert(
            "vllm:cache_config_info".into(),
            [("block_size".to_string(), "16".to_string())].into(),
        );
        let mut m = Map::new();
        m.insert("server_usage_requests".into(), Value::from(3));
        s.write_into(&mut m);
        assert_eq!(ServerSummary::read_from(&m), s);
        assert!(ServerSummary::read_from(&Map::new()).is_empty());
    }

    #[test]
    fn quantiles_are_linear_within_a_bucket_and_inf_gives_its_lower_bound() {
        let h = Hist {
            bounds: vec![1.0, 2.0, f64::INFINITY],
            cumulative: vec![2.0, 4.0, 10.0],
            sum: 0.0,
            count: 10.0,
        };
        assert_eq!(quantile(&h, 0.1), Some(0.5));
        assert_eq!(quantile(&h, 0.3), Some(1.5));
        assert_eq!(quantile(&h, 0.9), Some(2.0));
        let empty = Hist {
            bounds: vec![1.0],
            cumulative: vec![0.0],
            ..Hist::default()
        };
        assert_eq!(quantile(&empty, 0.5), None);
    }
}

/// The server-side changes from `base` to `cand` in one line ("server queue time +38 ms,
/// max KV usage 0.62 → 0.97, preemptions 0 → 112"); `None` when neither side has any, or
/// nothing moved.
pub fn describe_change(base: &ServerSummary, cand: &ServerSummary) -> Option<String> {
    let mut parts = Vec::new();
    for (key, what) in [
        ("server_mean_queue_time_ms", "server queue time"),
        ("server_mean_ttft_ms", "server TTFT"),
        ("server_mean_e2e_ms", "server e2e"),
    ] {
        if let (Some(a), Some(b)) = (base.get(key), cand.get(key)) {
            if (b - a).abs() >= 1.0 {
                parts.push(format!("{what} {:+.0} ms", b - a));
            }
        }
    }
    for (key, what, step) in [
        ("server_max_waiting", "max waiting", 1.0),
        ("server_mean_running", "mean running", 0.1),
        ("server_max_kv_usage", "max KV usage", 0.01),
        ("server_preemptions", "preemptions", 1.0),
        ("server_prefix_hit_rate", "prefix hit rate", 0.01),
    ] {
        if let (Some(a), Some(b)) = (base.get(key), cand.get(key)) {
            if (b - a).abs() >= step {
                let digits = if step < 1.0 { 2 } else { 0 };
                parts.push(format!("{what} {a:.digits$} → {b:.digits$}"));
            }
        }
    }
    if parts.is_empty() {
        let scraped = |s: &ServerSummary| s.get("server_scrapes").unwrap_or(0.0) > 0.0;
        return match (scraped(base), scraped(cand)) {
            (true, false) => Some("scraped in the baseline only".into()),
            (false, true) => Some("scraped in the candidate only".into()),
            _ => None,
        };
    }
    Some(parts.join(", "))
}

#[cfg(test)]
mod change_tests {
    use super::*;

    fn with(pairs: &[(&str, f64)]) -> ServerSummary {
        ServerSummary {
            values: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..ServerSummary::default()
        }
    }

    #[test]
    fn the_changes_that_explain_a_verdict_in_one_line() {
        let a = with(&[
            ("server_scrapes", 5.0),
            ("server_mean_queue_time_ms", 2.0),
            ("server_max_kv_usage", 0.62),
            ("server_preemptions", 0.0),
            ("server_max_waiting", 3.0),
        ]);
        let b = with(&[
            ("server_scrapes", 5.0),
            ("server_mean_queue_time_ms", 40.0),
            ("server_max_kv_usage", 0.97),
            ("server_preemptions", 112.0),
            ("server_max_waiting", 3.0),
        ]);
        assert_eq!(
            describe_change(&a, &b).unwrap(),
            "server queue time +38 ms, max KV usage 0.62 → 0.97, preemptions 0 → 112"
        );
        assert_eq!(describe_change(&a, &a), None);
        assert_eq!(
            describe_change(&ServerSummary::default(), &a).unwrap(),
            "scraped in the candidate only"
        );
        assert_eq!(
            describe_change(&ServerSummary::default(), &ServerSummary::default()),
            None
        );
    }
}

/// The saturated resource a rung's server metrics show, for the knee ("server side:
/// waiting queue up to 36 (mean 20.5), batch full at 4 running, KV usage up to 0.97,
/// 12 preemptions"); `prev` is the rung below it. `None` when nothing points at the server.
pub fn saturation(s: &ServerSummary, prev: Option<&ServerSummary>) -> Option<String> {
    let mut parts = Vec::new();
    if let (Some(max), Some(mean)) = (s.get("server_max_waiting"), s.get("server_mean_waiting")) {
        let before = prev
            .and_then(|p| p.get("server_mean_waiting"))
            .unwrap_or(0.0);
        if max >= 1.0 && mean > before {
            parts.push(format!("waiting queue up to {max:.0} (mean {mean:.1})"));
            // Requests wait only while the batch (or the KV cache) has no room.
            if let Some(run) = s.get("server_max_running") {
                parts.push(format!("batch full at {run:.0} running"));
            }
        }
    }
    if let Some(kv) = s.get("server_max_kv_usage").filter(|kv| *kv >= 0.9) {
        parts.push(format!("KV usage up to {kv:.2}"));
    }
    if let Some(n) = s.get("server_preemptions").filter(|n| *n > 0.0) {
        parts.push(format!("{n:.0} preemptions"));
    }
    (!parts.is_empty()).then(|| format!("server side: {}", parts.join(", ")))
}

#[cfg(test)]
mod saturation_tests {
    use super::*;

    fn with(pairs: &[(&str, f64)]) -> ServerSummary {
        ServerSummary {
            values: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..ServerSummary::default()
        }
    }

    #[test]
    fn the_knee_names_the_queue_the_batch_the_kv_cache_and_preemptions() {
        let below = with(&[("server_mean_waiting", 0.0), ("server_max_running", 4.0)]);
        let knee = with(&[
            ("server_max_waiting", 36.0),
            ("server_mean_waiting", 20.5),
            ("server_max_running", 4.0),
            ("server_max_kv_usage", 0.97),
            ("server_preemptions", 12.0),
        ]);
        assert_eq!(
            saturation(&knee, Some(&below)).unwrap(),
            "server side: waiting queue up to 36 (mean 20.5), batch full at 4 running, \
             KV usage up to 0.97, 12 preemptions"
        );
        // An idle server says nothing; no server data says nothing.
        assert_eq!(saturation(&below, None), None);
        assert_eq!(saturation(&ServerSummary::default(), None), None);
    }
}
