//! The simulator's `GET /metrics`: vLLM's Prometheus names, from the engine's counters.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::app::App;
use super::engine::Histogram;

pub(super) async fn metrics(State(app): State<Arc<App>>) -> Response {
    let s = &app.stats;
    let m = &app.names[0];
    let cache = s.kv_used.load(Relaxed) as f64 / f64::from(app.cfg.kv_cache_tokens.max(1));
    let mut out = String::with_capacity(2048);
    let mut put = |name: &str, kind: &str, help: &str, samples: &[(&str, f64)]| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (labels, v) in samples {
            out.push_str(&format!("{name}{{{labels}model_name=\"{m}\"}} {v}\n"));
        }
    };
    put(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        &[("", s.running.load(Relaxed) as f64)],
    );
    put(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        &[("", s.waiting.load(Relaxed) as f64)],
    );
    put(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage, 1 means 100 percent.",
        &[("", cache)],
    );
    // The pre-v1 name, for dashboards that still read it.
    put(
        "vllm:gpu_cache_usage_perc",
        "gauge",
        "KV-cache usage, 1 means 100 percent (the pre-v1 name).",
        &[("", cache)],
    );
    put(
        "vllm:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        &[("", s.prompt_tokens.load(Relaxed) as f64)],
    );
    put(
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        &[("", s.generation_tokens.load(Relaxed) as f64)],
    );
    put(
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
        &[
            (
                "finished_reason=\"length\",",
                s.success_length.load(Relaxed) as f64,
            ),
            (
                "finished_reason=\"stop\",",
                s.success_stop.load(Relaxed) as f64,
            ),
        ],
    );
    let hist = |name: &str, help: &str, h: &Histogram| {
        let mut o = format!("# HELP {name} {help}\n# TYPE {name} histogram\n");
        let mut cumulative = 0;
        for (i, b) in h.buckets.iter().enumerate() {
            cumulative += b.load(Relaxed);
            let le = h
                .bounds
                .get(i)
                .map_or("+Inf".to_string(), |v| v.to_string());
            o.push_str(&format!(
                "{name}_bucket{{le=\"{le}\",model_name=\"{m}\"}} {cumulative}\n"
            ));
        }
        let sum = h.sum_ns.load(Relaxed) as f64 / 1e9;
        let count = h.count.load(Relaxed);
        o.push_str(&format!("{name}_sum{{model_name=\"{m}\"}} {sum}\n"));
        o.push_str(&format!("{name}_count{{model_name=\"{m}\"}} {count}\n"));
        o
    };
    let ttft_text = hist(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds (streamed requests, from the handler \
         start to the first token event).",
        &s.ttft,
    ) + &hist(
        "vllm:request_queue_time_seconds",
        "Histogram of time spent waiting for admission into the batch, in seconds.",
        &s.queue_time,
    ) + &hist(
        "vllm:e2e_request_latency_seconds",
        "Histogram of e2e request latency in seconds (hand-off to the engine until the last \
         token).",
        &s.e2e,
    ) + &hist(
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds (per generated token, in the engine).",
        &s.itl.0,
    );
    // What the KV cache is, as vLLM's info metric says it (the simulator counts the KV
    // budget in tokens: one token per block; the prefix cache has its own block size).
    let cache_info = format!(
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
         # TYPE vllm:cache_config_info gauge
         vllm:cache_config_info{{block_size=\"1\",cache_dtype=\"auto\",enable_prefix_caching=\"{}\",num_gpu_blocks=\"{}\"}} 1.0\n",
        if app.cfg.prefix_caching { "True" } else { "False" },
        app.cfg.kv_cache_tokens
    );
    if app.cfg.prefix_caching {
        put(
            "vllm:prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in prompt tokens.",
            &[("", s.prefix_queries.load(Relaxed) as f64)],
        );
        put(
            "vllm:prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in prompt tokens found cached.",
            &[("", s.prefix_hits.load(Relaxed) as f64)],
        );
    }
    put(
        "ladder_sim:prefill_tokens_total",
        "counter",
        "Prompt tokens prefilled by the engine (prompt tokens minus prefix-cache hits).",
        &[("", s.prefill_tokens.load(Relaxed) as f64)],
    );
    put(
        "ladder_sim:requests_rejected_total",
        "counter",
        "Requests rejected by the waiting-queue limits.",
        &[("", s.rejected.load(Relaxed) as f64)],
    );
    out.push_str(&ttft_text);
    out.push_str(&cache_info);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response()
}
