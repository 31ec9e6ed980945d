//! The scenario checks of the endpoints that generate no tokens (`endpoint.api:
//! embeddings`): what such a rung cannot measure (TTFT, TPOT, ITL) may not be asked of it, and
//! `workload.batch_size` belongs to them alone (docs/endpoints.md).

use serde_json::Value;

use super::diagnostic::Problem;
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
    let pooled = api == "embeddings";
    if let Some(b) = get(v, &["workload", "batch_size"]) {
        if !pooled {
            out.push(
                Problem::key(
                    p(&["workload", "batch_size"]),
                    format!("`batch_size` is the inputs of one embeddings request; `endpoint.api` is `{api}`"),
                )
                .hint("remove `batch_size`, or set `endpoint.api: embeddings`"),
            );
        } else if b.as_f64().is_some_and(|n| n > 1.0) {
            for (keys, why) in [
                (
                    &["workload", "shared_prefix"][..],
                    "prefix groups are per prompt",
                ),
                (
                    &["load", "trace"][..],
                    "a trace's lines are one request each",
                ),
            ] {
                if get(v, keys).is_some() {
                    out.push(
                        Problem::key(
                            p(keys),
                            format!(
                                "`{}` does not combine with a `batch_size` above 1: {why}",
                                keys.join(".")
                            ),
                        )
                        .hint("set `batch_size: 1` or remove it"),
                    );
                }
            }
            if get(v, &["workload", "input_length"]).and_then(Value::as_str) == Some("server") {
                out.push(
                    Problem::value(
                        p(&["workload", "input_length"]),
                        "`input_length: server` does not combine with a `batch_size` above 1: \
                         the server's overhead would be measured on a whole batch",
                    )
                    .hint("use `input_length: text`, or `batch_size: 1`"),
                );
            }
        }
    }
    if !pooled {
        return;
    }
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
