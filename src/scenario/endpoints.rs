//! The scenario checks of the endpoints that generate no tokens (`endpoint.api:
//! embeddings`, `rerank`): what such a rung cannot measure (TTFT, TPOT, ITL) may not be asked
//! of it, `workload.batch_size` belongs to them alone, and `workload.query_tokens` to rerank
//! alone (docs/endpoints.md).

use serde_json::Value;

use super::diagnostic::Problem;
use super::incompatible::With;
use super::yaml::Seg;

fn p(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|k| Seg::Key((*k).into())).collect()
}

fn get<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter()
        .try_fold(v, |v, k| v.get(*k))
        .filter(|x| !x.is_null())
}

/// True for a metric key of a token timing (`median_ttft_ms`, `p99_itl_ms`, `count_tpot`…),
/// which a pooled rung does not have.
pub fn is_token_timing_key(metric: &str) -> bool {
    let m = metric.strip_suffix("_ms").unwrap_or(metric);
    ["ttft", "tpot", "itl", "ttft_sched", "ttfc"]
        .iter()
        .any(|t| m.ends_with(&format!("_{t}")))
}

/// The checks of `endpoint.api` against the rest of the scenario.
pub(super) fn check(v: &Value, out: &mut Vec<Problem>) {
    let api = get(v, &["endpoint", "api"])
        .and_then(Value::as_str)
        .unwrap_or("completions");
    let pooled = api == "embeddings" || api == "rerank";
    rerank(v, api, out);
    if let Some(b) = get(v, &["workload", "batch_size"]) {
        if !pooled {
            out.push(
                Problem::key(
                    p(&["workload", "batch_size"]),
                    format!("`batch_size` is the inputs of one embeddings request (a rerank request's documents); `endpoint.api` is `{api}`"),
                )
                .hint("remove `batch_size`, or set `endpoint.api: embeddings` or `rerank`"),
            );
        } else if api == "embeddings" && b.as_f64().is_some_and(|n| n > 1.0) {
            super::incompatible::check(v, With::Batch, out);
        }
    }
    if !pooled {
        return;
    }
    sizes(v, out);
    let no_tokens = format!(
        "an `{api}` request generates no tokens, so it has no first token or time per token"
    );
    for key in ["ttft_ms", "tpot_ms"] {
        if get(v, &["slo", key]).is_some() {
            out.push(
                Problem::key(p(&["slo", key]), format!("`slo.{key}`: {no_tokens}"))
                    .hint("bound the whole request's latency with `slo.e2e_ms`"),
            );
        }
    }
    if let Some(rules) = get(v, &["gate"]).and_then(Value::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            let Some(m) = rule.get("metric").and_then(Value::as_str) else {
                continue;
            };
            if is_token_timing_key(m) {
                out.push(
                    Problem::value(
                        vec![Seg::Key("gate".into()), Seg::Index(i), Seg::Key("metric".into())],
                        format!("`{m}`: {no_tokens}; its result files have no such key"),
                    )
                    .hint("gate `median_e2el_ms`, `p99_e2el_ms`, `request_throughput` or `total_token_throughput`"),
                );
            }
        }
    }
    if get(v, &["sweep", "field"]).and_then(Value::as_str) == Some("output_tokens") {
        out.push(
            Problem::value(
                p(&["sweep", "field"]),
                format!("{no_tokens}: sweeping `output_tokens` changes nothing it sends"),
            )
            .hint("sweep `input_tokens`"),
        );
    }
}

/// A pooled request's inputs against the stated limits: each rung builds (warmup included)
/// `requests × batch_size` prompts of `input_tokens` and, for rerank, `requests` queries of
/// `query_tokens`, all held in memory as a rung's prompts are.
fn sizes(v: &Value, out: &mut Vec<Problem>) {
    use super::limits::{MAX_INPUT_TOKENS, MAX_REQUESTS_PER_RUNG, MAX_RUNG_PROMPT_TOKENS};
    let int = |keys: &[&str], default: u64| match get(v, keys) {
        None => Some(default),
        Some(x) => x.as_u64(),
    };
    let (Some(n), Some(w), Some(len), Some(b), Some(q)) = (
        int(&["workload", "requests_per_rung"], 200),
        int(&["load", "warmup_requests"], 0),
        int(&["workload", "input_tokens"], 512),
        int(&["workload", "batch_size"], 1),
        int(&["workload", "query_tokens"], 0),
    ) else {
        return;
    };
    if q > MAX_INPUT_TOKENS {
        out.push(Problem::value(
            p(&["workload", "query_tokens"]),
            format!("a query of {q} tokens is longer than the limit of {MAX_INPUT_TOKENS}"),
        ));
        return;
    }
    let requests = n.saturating_add(w);
    let prompts = requests.saturating_mul(b);
    let tokens = prompts
        .saturating_mul(len)
        .saturating_add(requests.saturating_mul(q));
    if b > 1 && (prompts > MAX_REQUESTS_PER_RUNG || tokens > MAX_RUNG_PROMPT_TOKENS) {
        out.push(
            Problem::value(
                p(&["workload", "batch_size"]),
                format!(
                    "{requests} requests × {b} inputs = {prompts} prompts ({tokens} tokens) per \
                     rung, more than the limits of {MAX_REQUESTS_PER_RUNG} prompts and \
                     {MAX_RUNG_PROMPT_TOKENS} tokens held in memory"
                ),
            )
            .hint("lower `batch_size` or `requests_per_rung`"),
        );
    } else if tokens > MAX_RUNG_PROMPT_TOKENS {
        out.push(Problem::value(
            p(&["workload", "query_tokens"]),
            format!("{tokens} prompt tokens per rung, more than the limit of {MAX_RUNG_PROMPT_TOKENS} held in memory"),
        ));
    }
}

/// The checks of `api: rerank`: a query length is required (and belongs to rerank alone),
/// and what makes one prompt per request (prefix groups, a trace's lines, the server-side
/// length, sessions) does not combine with a query and its documents.
fn rerank(v: &Value, api: &str, out: &mut Vec<Problem>) {
    let query = get(v, &["workload", "query_tokens"]);
    if api != "rerank" {
        if query.is_some() {
            out.push(
                Problem::key(
                    p(&["workload", "query_tokens"]),
                    format!("`query_tokens` is the query of a rerank request; `endpoint.api` is `{api}`"),
                )
                .hint("remove `query_tokens`, or set `endpoint.api: rerank`"),
            );
        }
        return;
    }
    if query.is_none() {
        out.push(
            Problem::key(
                p(&["workload"]),
                "`endpoint.api: rerank` needs `workload.query_tokens`, the query's length",
            )
            .hint("add `query_tokens: 32` (and `batch_size`, the documents per request)"),
        );
    }
    super::incompatible::check(v, With::Rerank, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_timing_keys_are_told_from_the_rest() {
        for k in [
            "median_ttft_ms",
            "p99_tpot_ms",
            "p99.9_itl_ms",
            "mean_ttft_sched_ms",
            "count_itl",
            "median_ttfc_ms",
        ] {
            assert!(is_token_timing_key(k), "{k}");
        }
        for k in [
            "median_e2el_ms",
            "request_throughput",
            "p99_e2el_sched_ms",
            "error_rate",
            "p99_dispatch_lag_ms",
        ] {
            assert!(!is_token_timing_key(k), "{k}");
        }
    }
}
