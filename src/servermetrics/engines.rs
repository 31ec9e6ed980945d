//! Engine name maps: each engine's metric names → one set of concepts.

use std::collections::BTreeMap;

use serde::Serialize;

use super::parse::{Kind, Page};

/// The serving engine a page comes from, told by its metric name prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Vllm,
    Sglang,
    Tgi,
    LlamaCpp,
    TensorrtLlm,
    /// NVIDIA Dynamo's own names (`dynamo_*`): its HTTP frontend, or a worker's runtime.
    Dynamo,
    Unknown,
}

impl Engine {
    /// The name written to result files (`server_engine`).
    pub fn key(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Tgi => "tgi",
            Engine::LlamaCpp => "llama.cpp",
            Engine::TensorrtLlm => "tensorrt_llm",
            Engine::Dynamo => "dynamo",
            Engine::Unknown => "unknown",
        }
    }

    fn of_name(name: &str) -> Engine {
        if name.starts_with("vllm:") {
            Engine::Vllm
        } else if name.starts_with("sglang:") {
            Engine::Sglang
        } else if name.starts_with("tgi_") {
            Engine::Tgi
        } else if name.starts_with("llamacpp:") {
            Engine::LlamaCpp
        } else if name.starts_with("trtllm_")
            || name.starts_with("trtllm:")
            || name.starts_with("nv_trt_llm_")
        {
            Engine::TensorrtLlm
        } else if name.starts_with("dynamo_") {
            Engine::Dynamo
        } else {
            Engine::Unknown
        }
    }
}

/// What a metric means, whichever engine exports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Concept {
    /// Requests in the running batch (gauge).
    Running,
    /// Requests waiting to be scheduled (gauge).
    Waiting,
    /// KV-cache usage, 0..1 (gauge).
    KvUsage,
    /// Preempted requests (counter).
    Preemptions,
    /// Prefix-cache hits, in tokens (counter; rate = hits / queries).
    PrefixHits,
    /// Prefix-cache queries, in tokens (counter).
    PrefixQueries,
    /// Prefix-cache hit rate as the engine reports it, 0..1 (gauge; SGLang).
    PrefixHitRate,
    /// Prompt tokens computed, cached ones left out (counter; llama.cpp's
    /// `prompt_tokens_total`): with [`Concept::PrefixHits`] it makes the queries.
    PromptTokensComputed,
    /// Server-side time to first token (histogram, seconds).
    ServerTtft,
    /// Server-side inter-token latency (histogram, seconds).
    ServerItl,
    /// Server-side end-to-end request latency (histogram, seconds).
    ServerE2e,
    /// Time in the waiting queue (histogram, seconds).
    ServerQueueTime,
    /// Generated tokens (counter).
    GeneratedTokens,
}

impl Concept {
    /// The key used in time series lines and result keys.
    pub fn key(self) -> &'static str {
        match self {
            Concept::Running => "running",
            Concept::Waiting => "waiting",
            Concept::KvUsage => "kv_usage",
            Concept::Preemptions => "preemptions",
            Concept::PrefixHits => "prefix_hits",
            Concept::PrefixQueries => "prefix_queries",
            Concept::PrefixHitRate => "prefix_hit_rate",
            Concept::PromptTokensComputed => "prompt_tokens_computed",
            Concept::ServerTtft => "ttft",
            Concept::ServerItl => "itl",
            Concept::ServerE2e => "e2e",
            Concept::ServerQueueTime => "queue_time",
            Concept::GeneratedTokens => "generated_tokens",
        }
    }

    /// Gauges summed over label sets (data-parallel ranks, models); the rest take the max.
    fn sums(self) -> bool {
        matches!(self, Concept::Running | Concept::Waiting)
    }
}

/// The family names (without `_total` / `_bucket`…) of each engine, and what they mean.
/// Older vLLM names stay beside the v1 ones: a server exports one or the other.
const NAMES: &[(&str, Concept)] = &[
    ("vllm:num_requests_running", Concept::Running),
    ("vllm:num_requests_waiting", Concept::Waiting),
    ("vllm:kv_cache_usage_perc", Concept::KvUsage),
    ("vllm:gpu_cache_usage_perc", Concept::KvUsage),
    ("vllm:num_preemptions", Concept::Preemptions),
    ("vllm:prefix_cache_hits", Concept::PrefixHits),
    ("vllm:prefix_cache_queries", Concept::PrefixQueries),
    // vLLM v0's gauge (its hit rate over recent queries), before the v1 counters.
    ("vllm:gpu_prefix_cache_hit_rate", Concept::PrefixHitRate),
    ("vllm:time_to_first_token_seconds", Concept::ServerTtft),
    ("vllm:inter_token_latency_seconds", Concept::ServerItl),
    ("vllm:time_per_output_token_seconds", Concept::ServerItl),
    ("vllm:e2e_request_latency_seconds", Concept::ServerE2e),
    ("vllm:request_queue_time_seconds", Concept::ServerQueueTime),
    ("vllm:generation_tokens", Concept::GeneratedTokens),
    ("sglang:num_running_reqs", Concept::Running),
    ("sglang:num_queue_reqs", Concept::Waiting),
    ("sglang:token_usage", Concept::KvUsage),
    ("sglang:cache_hit_rate", Concept::PrefixHitRate),
    ("sglang:time_to_first_token_seconds", Concept::ServerTtft),
    ("sglang:inter_token_latency_seconds", Concept::ServerItl),
    ("sglang:time_per_output_token_seconds", Concept::ServerItl),
    ("sglang:e2e_request_latency_seconds", Concept::ServerE2e),
    ("sglang:queue_time_seconds", Concept::ServerQueueTime),
    ("sglang:generation_tokens", Concept::GeneratedTokens),
    ("tgi_queue_size", Concept::Waiting),
    ("tgi_batch_current_size", Concept::Running),
    ("tgi_request_duration", Concept::ServerE2e),
    ("tgi_request_queue_duration", Concept::ServerQueueTime),
    (
        "tgi_request_mean_time_per_token_duration",
        Concept::ServerItl,
    ),
    // llama.cpp: tools/server (`--metrics`); checked against a recorded page
    // (fixtures/llamacpp_real.prom). `kv_cache_usage_ratio` is in older builds only.
    ("llamacpp:requests_processing", Concept::Running),
    ("llamacpp:requests_deferred", Concept::Waiting),
    ("llamacpp:kv_cache_usage_ratio", Concept::KvUsage),
    ("llamacpp:tokens_predicted", Concept::GeneratedTokens),
    // Its prompt cache (a slot's KV, and `--cache-ram`'s host copies): `prompt_tokens_total`
    // counts the tokens computed, `prompt_tokens_cached_total` those reused (tools/server
    // server-task.cpp, `to_metrics`).
    ("llamacpp:prompt_tokens_cached", Concept::PrefixHits),
    ("llamacpp:prompt_tokens", Concept::PromptTokensComputed),
    // TensorRT-LLM (`trtllm-serve`, and passed through by Dynamo): the `MetricsCollector`
    // names of tensorrt_llm/metrics/collector.py (NVIDIA/TensorRT-LLM), also listed in
    // Dynamo's docs/backends/trtllm/prometheus.md. `time_per_output_token_seconds` is a
    // per-request TPOT histogram, read as ITL as vLLM's old name is.
    ("trtllm_num_requests_running", Concept::Running),
    ("trtllm_num_requests_waiting", Concept::Waiting),
    ("trtllm_kv_cache_utilization", Concept::KvUsage),
    ("trtllm_kv_cache_hit_rate", Concept::PrefixHitRate),
    ("trtllm_time_to_first_token_seconds", Concept::ServerTtft),
    ("trtllm_time_per_output_token_seconds", Concept::ServerItl),
    ("trtllm_e2e_request_latency_seconds", Concept::ServerE2e),
    (
        "trtllm_request_queue_time_seconds",
        Concept::ServerQueueTime,
    ),
    ("trtllm_generation_tokens", Concept::GeneratedTokens),
    // Dynamo 0.7 added the prefix as `trtllm:` (its docs/observability/metrics.md and the
    // 0.7.0 TensorRT-LLM metrics page list these four histograms so).
    ("trtllm:time_to_first_token_seconds", Concept::ServerTtft),
    ("trtllm:time_per_output_token_seconds", Concept::ServerItl),
    ("trtllm:e2e_request_latency_seconds", Concept::ServerE2e),
    (
        "trtllm:request_queue_time_seconds",
        Concept::ServerQueueTime,
    ),
    // NVIDIA Dynamo (docs/observability/metrics.md of ai-dynamo/dynamo). The frontend's
    // `queued_requests` counts requests from the HTTP handler's start to their first token
    // (prefill included); its `inflight_requests` (queued + generating) is kept raw, as it
    // is no batch size. The frontend's histograms are the server side of a client's TTFT,
    // ITL and e2e. The workers' kvstats gauges are 0..1.
    ("dynamo_frontend_queued_requests", Concept::Waiting),
    (
        "dynamo_frontend_time_to_first_token_seconds",
        Concept::ServerTtft,
    ),
    (
        "dynamo_frontend_inter_token_latency_seconds",
        Concept::ServerItl,
    ),
    (
        "dynamo_frontend_request_duration_seconds",
        Concept::ServerE2e,
    ),
    (
        "dynamo_component_kvstats_gpu_cache_usage_percent",
        Concept::KvUsage,
    ),
    (
        "dynamo_component_kvstats_gpu_prefix_cache_hit_rate",
        Concept::PrefixHitRate,
    ),
];

/// The concept of a family name, if ladder knows it.
pub fn concept(family: &str) -> Option<Concept> {
    NAMES.iter().find(|(n, _)| *n == family).map(|(_, c)| *c)
}

/// A cumulative histogram: upper bounds (seconds, `+Inf` last) and counts at each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hist {
    pub bounds: Vec<f64>,
    pub cumulative: Vec<f64>,
    pub sum: f64,
    pub count: f64,
}

/// One scrape reduced to concepts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub engine: Option<Engine>,
    pub gauges: BTreeMap<Concept, f64>,
    pub counters: BTreeMap<Concept, f64>,
    pub hists: BTreeMap<Concept, Hist>,
    /// Metrics ladder does not map, summed over label sets (histogram parts left out).
    pub raw: BTreeMap<String, f64>,
    /// `…_info` metrics (server identity): name → labels.
    pub info: BTreeMap<String, BTreeMap<String, String>>,
}

/// At most this many unknown metrics are kept per scrape (a page can hold thousands).
const MAX_RAW: usize = 200;

/// Reduce a page to concepts, detecting the engine from the names.
pub fn snapshot(page: &Page) -> Snapshot {
    let mut snap = Snapshot::default();
    let mut votes: BTreeMap<Engine, usize> = BTreeMap::new();
    // Per (concept, family), so aliases exported side by side are not added together.
    let mut bucket_sets: BTreeMap<Concept, BTreeMap<u64, (f64, f64)>> = BTreeMap::new();
    for s in &page.samples {
        let e = Engine::of_name(&s.name);
        if e != Engine::Unknown {
            *votes.entry(e).or_default() += 1;
        }
        let kind = page.kind_of(&s.name);
        if s.name.ends_with("_info") {
            let labels = s.labels.iter().cloned().collect();
            snap.info.insert(s.name.clone(), labels);
            continue;
        }
        let (family, part) = split(&s.name, kind);
        let Some(c) = concept(family) else {
            if matches!(part, None | Some(Part::Total))
                && !s.name.ends_with("_created")
                && snap.raw.len() < MAX_RAW
                && s.value.is_finite()
            {
                *snap.raw.entry(s.name.clone()).or_default() += s.value;
            }
            continue;
        };
        match (kind, part) {
            (Kind::Histogram, Some(Part::Bucket)) => {
                let Some(le) = s.label("le").and_then(|v| match v {
                    "+Inf" | "Inf" => Some(f64::INFINITY),
                    v => v.parse::<f64>().ok(),
                }) else {
                    continue;
                };
                let entry = bucket_sets.entry(c).or_default();
                let slot = entry.entry(le.to_bits()).or_insert((le, 0.0));
                slot.1 += s.value;
            }
            (Kind::Histogram, Some(Part::Sum)) => snap.hists.entry(c).or_default().sum += s.value,
            (Kind::Histogram, Some(Part::Count)) => {
                snap.hists.entry(c).or_default().count += s.value
            }
            (Kind::Histogram | Kind::Summary, _) => {}
            (Kind::Counter, _) => *snap.counters.entry(c).or_default() += s.value,
            _ if part == Some(Part::Total) => *snap.counters.entry(c).or_default() += s.value,
            _ => {
                let g = snap.gauges.entry(c).or_insert(0.0);
                *g = if c.sums() {
                    *g + s.value
                } else {
                    g.max(s.value)
                };
            }
        }
    }
    for (c, set) in bucket_sets {
        let mut pairs: Vec<(f64, f64)> = set.into_values().collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let h = snap.hists.entry(c).or_default();
        h.bounds = pairs.iter().map(|p| p.0).collect();
        h.cumulative = pairs.iter().map(|p| p.1).collect();
    }
    snap.hists.retain(|_, h| !h.bounds.is_empty());
    snap.engine = votes
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(e, _)| e)
        .or(Some(Engine::Unknown));
    snap
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Bucket,
    Sum,
    Count,
    Total,
}

/// Whether a sample can never be negative: a counter, a histogram's or summary's part, a
/// `…_total`, or any metric ladder maps to a concept (all counts, ratios and times).
pub(super) fn never_negative(name: &str, kind: Kind) -> bool {
    let (family, part) = split(name, kind);
    matches!(kind, Kind::Counter | Kind::Histogram | Kind::Summary)
        || part.is_some()
        || concept(family).is_some()
}

/// Split a sample name into its family and the suffix that names the part.
fn split(name: &str, kind: Kind) -> (&str, Option<Part>) {
    if kind == Kind::Histogram || kind == Kind::Summary {
        for (suf, part) in [
            ("_bucket", Part::Bucket),
            ("_sum", Part::Sum),
            ("_count", Part::Count),
        ] {
            if let Some(b) = name.strip_suffix(suf) {
                return (b, Some(part));
            }
        }
    }
    if let Some(b) = name.strip_suffix("_total") {
        if concept(b).is_some() || kind == Kind::Counter {
            return (b, Some(Part::Total));
        }
    }
    (name, None)
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse;
    use super::*;

    #[test]
    fn gauges_sum_over_ranks_and_aliases_do_not_add_up() {
        let p = parse(
            "# TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{engine=\"0\"} 3\n\
             vllm:num_requests_running{engine=\"1\"} 4\n\
             # TYPE vllm:kv_cache_usage_perc gauge\n\
             vllm:kv_cache_usage_perc 0.5\n\
             # TYPE vllm:gpu_cache_usage_perc gauge\n\
             vllm:gpu_cache_usage_perc 0.5\n\
             # TYPE vllm:num_preemptions_total counter\n\
             vllm:num_preemptions_total 7\n\
             some_other_metric 2\n\
             vllm:cache_config_info{block_size=\"16\",gpu_memory_utilization=\"0.9\"} 1\n",
        );
        let s = snapshot(&p);
        assert_eq!(s.engine, Some(Engine::Vllm));
        assert_eq!(s.gauges[&Concept::Running], 7.0);
        assert_eq!(s.gauges[&Concept::KvUsage], 0.5);
        assert_eq!(s.counters[&Concept::Preemptions], 7.0);
        assert_eq!(s.raw["some_other_metric"], 2.0);
        assert_eq!(s.info["vllm:cache_config_info"]["block_size"], "16");
    }

    #[test]
    fn histogram_buckets_are_merged_over_label_sets_and_sorted() {
        let p = parse(
            "# TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",m=\"a\"} 4\n\
             vllm:time_to_first_token_seconds_bucket{le=\"0.1\",m=\"a\"} 1\n\
             vllm:time_to_first_token_seconds_bucket{le=\"0.1\",m=\"b\"} 2\n\
             vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",m=\"b\"} 2\n\
             vllm:time_to_first_token_seconds_sum{m=\"a\"} 0.9\n\
             vllm:time_to_first_token_seconds_count{m=\"a\"} 4\n\
             vllm:time_to_first_token_seconds_count{m=\"b\"} 2\n",
        );
        let h = &snapshot(&p).hists[&Concept::ServerTtft];
        assert_eq!(h.bounds, vec![0.1, f64::INFINITY]);
        assert_eq!(h.cumulative, vec![3.0, 6.0]);
        assert_eq!(h.count, 6.0);
    }
}

/// Recorded pages of each engine (hand-written from their documented names).
#[cfg(test)]
mod fixtures {
    use super::super::parse::parse;
    use super::*;

    fn page(text: &str) -> Snapshot {
        let p = parse(text);
        assert_eq!(p.bad_lines, 0);
        snapshot(&p)
    }

    #[test]
    fn vllm_v1_page() {
        let s = page(include_str!("fixtures/vllm_v1.prom"));
        assert_eq!(s.engine, Some(Engine::Vllm));
        assert_eq!(s.gauges[&Concept::Running], 12.0);
        assert_eq!(s.gauges[&Concept::Waiting], 3.0);
        assert_eq!(s.gauges[&Concept::KvUsage], 0.62);
        assert_eq!(s.counters[&Concept::Preemptions], 4.0);
        assert_eq!(s.counters[&Concept::PrefixHits], 250.0);
        assert_eq!(s.counters[&Concept::PrefixQueries], 1000.0);
        assert_eq!(s.counters[&Concept::GeneratedTokens], 5120.0);
        for c in [
            Concept::ServerTtft,
            Concept::ServerItl,
            Concept::ServerE2e,
            Concept::ServerQueueTime,
        ] {
            assert!(s.hists[&c].count > 0.0, "{c:?}");
        }
        assert_eq!(
            s.hists[&Concept::ServerTtft].cumulative,
            vec![1.0, 8.0, 10.0]
        );
        assert_eq!(s.info["vllm:cache_config_info"]["num_gpu_blocks"], "27000");
        assert_eq!(s.raw["python_gc_objects_collected_total"], 1234.0);
    }

    #[test]
    fn sglang_page() {
        let s = page(include_str!("fixtures/sglang.prom"));
        assert_eq!(s.engine, Some(Engine::Sglang));
        assert_eq!(s.gauges[&Concept::Running], 7.0);
        assert_eq!(s.gauges[&Concept::Waiting], 2.0);
        assert_eq!(s.gauges[&Concept::KvUsage], 0.28);
        assert!(s.gauges[&Concept::PrefixHitRate] > 0.0);
        assert_eq!(s.hists[&Concept::ServerTtft].count, 7.0);
        assert_eq!(s.hists[&Concept::ServerE2e].sum, 30.0);
        assert_eq!(s.raw["sglang:gen_throughput"], 355.3);
    }

    #[test]
    fn tgi_page() {
        let s = page(include_str!("fixtures/tgi.prom"));
        assert_eq!(s.engine, Some(Engine::Tgi));
        assert_eq!(s.gauges[&Concept::Waiting], 5.0);
        assert_eq!(s.gauges[&Concept::Running], 32.0);
        assert_eq!(
            s.hists[&Concept::ServerE2e].cumulative,
            vec![1.0, 3.0, 10.0, 10.0]
        );
        assert_eq!(s.hists[&Concept::ServerQueueTime].count, 10.0);
        assert_eq!(s.raw["tgi_request_count"], 10.0);
    }

    #[test]
    fn llamacpp_page() {
        let s = page(include_str!("fixtures/llamacpp.prom"));
        assert_eq!(s.engine, Some(Engine::LlamaCpp));
        assert_eq!(s.gauges[&Concept::Running], 4.0);
        assert_eq!(s.gauges[&Concept::Waiting], 1.0);
        assert_eq!(s.gauges[&Concept::KvUsage], 0.41);
        assert_eq!(s.counters[&Concept::GeneratedTokens], 640.0);
        assert_eq!(s.counters[&Concept::PromptTokensComputed], 2048.0);
    }

    /// Hand-written after the example output in Dynamo's docs/backends/trtllm/prometheus.md,
    /// plus the queue gauges of TensorRT-LLM's collector.py.
    #[test]
    fn tensorrt_llm_page() {
        let l = "model_name=\"Qwen/Qwen3-0.6B\",engine_type=\"trtllm\"";
        let s = page(&format!(
            "# TYPE trtllm_request_success_total counter\n\
             trtllm_request_success_total{{{l},finished_reason=\"stop\"}} 150.0\n\
             # TYPE trtllm_time_to_first_token_seconds histogram\n\
             trtllm_time_to_first_token_seconds_bucket{{le=\"0.05\",{l}}} 12.0\n\
             trtllm_time_to_first_token_seconds_bucket{{le=\"+Inf\",{l}}} 150.0\n\
             trtllm_time_to_first_token_seconds_count{{{l}}} 150.0\n\
             trtllm_time_to_first_token_seconds_sum{{{l}}} 8.75\n\
             # TYPE trtllm_time_per_output_token_seconds histogram\n\
             trtllm_time_per_output_token_seconds_bucket{{le=\"0.1\",{l}}} 120.0\n\
             trtllm_time_per_output_token_seconds_bucket{{le=\"+Inf\",{l}}} 150.0\n\
             trtllm_time_per_output_token_seconds_count{{{l}}} 150.0\n\
             trtllm_time_per_output_token_seconds_sum{{{l}}} 12.5\n\
             # TYPE trtllm_num_requests_running gauge\n\
             trtllm_num_requests_running{{{l}}} 7\n\
             # TYPE trtllm_num_requests_waiting gauge\n\
             trtllm_num_requests_waiting{{{l}}} 3\n\
             # TYPE trtllm_kv_cache_utilization gauge\n\
             trtllm_kv_cache_utilization{{{l}}} 0.62\n\
             # TYPE trtllm_generation_tokens_total counter\n\
             trtllm_generation_tokens_total{{{l}}} 4096\n"
        ));
        assert_eq!(s.engine, Some(Engine::TensorrtLlm));
        assert_eq!(s.gauges[&Concept::Running], 7.0);
        assert_eq!(s.gauges[&Concept::Waiting], 3.0);
        assert_eq!(s.gauges[&Concept::KvUsage], 0.62);
        assert_eq!(s.counters[&Concept::GeneratedTokens], 4096.0);
        assert_eq!(s.hists[&Concept::ServerTtft].count, 150.0);
        assert_eq!(s.hists[&Concept::ServerItl].sum, 12.5);
        assert_eq!(s.raw["trtllm_request_success_total"], 150.0);
    }

    /// Hand-written from the frontend and kvstats names in Dynamo's
    /// docs/observability/metrics.md.
    #[test]
    fn dynamo_frontend_and_worker_pages() {
        let l = "model=\"qwen\"";
        let s = page(&format!(
            "# TYPE dynamo_frontend_inflight_requests gauge\n\
             dynamo_frontend_inflight_requests{{{l}}} 10\n\
             # TYPE dynamo_frontend_queued_requests gauge\n\
             dynamo_frontend_queued_requests{{{l}}} 7\n\
             # TYPE dynamo_frontend_time_to_first_token_seconds histogram\n\
             dynamo_frontend_time_to_first_token_seconds_bucket{{{l},le=\"0.25\"}} 120\n\
             dynamo_frontend_time_to_first_token_seconds_bucket{{{l},le=\"+Inf\"}} 130\n\
             dynamo_frontend_time_to_first_token_seconds_sum{{{l}}} 20.5\n\
             dynamo_frontend_time_to_first_token_seconds_count{{{l}}} 130\n\
             # TYPE dynamo_frontend_requests_total counter\n\
             dynamo_frontend_requests_total{{{l}}} 130\n"
        ));
        assert_eq!(s.engine, Some(Engine::Dynamo));
        assert_eq!(Engine::Dynamo.key(), "dynamo");
        assert_eq!(s.gauges[&Concept::Waiting], 7.0);
        // In flight is queued + generating: no batch size, so kept raw, not `running`.
        assert!(!s.gauges.contains_key(&Concept::Running));
        assert_eq!(s.raw["dynamo_frontend_inflight_requests"], 10.0);
        assert_eq!(s.hists[&Concept::ServerTtft].cumulative, vec![120.0, 130.0]);
        let w = page(
            "# TYPE dynamo_component_kvstats_gpu_cache_usage_percent gauge\n\
             dynamo_component_kvstats_gpu_cache_usage_percent{dynamo_component=\"worker\"} 0.8\n\
             # TYPE dynamo_component_kvstats_gpu_prefix_cache_hit_rate gauge\n\
             dynamo_component_kvstats_gpu_prefix_cache_hit_rate{dynamo_component=\"worker\"} 0.25\n",
        );
        assert_eq!(w.gauges[&Concept::KvUsage], 0.8);
        assert_eq!(w.gauges[&Concept::PrefixHitRate], 0.25);
    }

    /// A page recorded from a real llama-server under load: the same names map, nothing
    /// else is taken for a concept, and the rest stays raw.
    #[test]
    fn llamacpp_recorded_page() {
        let s = page(include_str!("fixtures/llamacpp_real.prom"));
        assert_eq!(s.engine, Some(Engine::LlamaCpp));
        assert_eq!(s.gauges[&Concept::Running], 4.0);
        assert_eq!(s.gauges[&Concept::Waiting], 2.0);
        assert_eq!(s.counters[&Concept::GeneratedTokens], 0.0);
        assert!(!s.gauges.contains_key(&Concept::KvUsage));
        assert!(s.hists.is_empty());
        assert_eq!(s.counters[&Concept::PromptTokensComputed], 16.0);
        assert_eq!(s.counters[&Concept::PrefixHits], 0.0);
        assert_eq!(s.raw["llamacpp:n_busy_slots_per_decode"], 3.5);
    }
}
