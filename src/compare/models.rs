//! A gate rule on one model of a mix (`gate: [{…, model: sql-lora}]`): the rung seen as that
//! model alone. Its summary is the model's breakdown (`models[…]` of the rung's file), its
//! request lines are the lines that named it, so every check (intervals, bootstrap, the
//! error-rate test) judges that model's requests exactly as a whole rung's.

use super::CompareError;
use crate::metrics::RungSummary;
use crate::record::ErrorClass;
use crate::results::RequestLine;

/// The rung `s` (whose lines are `lines`) as model `model` alone: its breakdown as the
/// summary, its lines; `None` when the rung names no such model.
pub fn view(
    s: &RungSummary,
    lines: &[RequestLine],
    model: &str,
) -> Option<(RungSummary, Vec<RequestLine>)> {
    let m = s.model(model)?;
    let mine: Vec<RequestLine> = lines
        .iter()
        .filter(|l| l.model.as_deref() == Some(model))
        .cloned()
        .collect();
    let mut errors_by_class: std::collections::BTreeMap<String, u64> = ErrorClass::ALL
        .iter()
        .map(|c| (c.key().to_string(), 0))
        .collect();
    for l in mine
        .iter()
        .filter(|l| !l.warmup && !l.ok && !l.interrupted())
    {
        let class = l.error_class.unwrap_or(ErrorClass::Unclassified);
        *errors_by_class.entry(class.key().to_string()).or_default() += 1;
    }
    let per_s = |x: u64| {
        if s.duration_s > 0.0 {
            x as f64 / s.duration_s
        } else {
            0.0
        }
    };
    let summary = RungSummary {
        rate: s.rate,
        load: s.load,
        burstiness: s.burstiness,
        max_concurrency: s.max_concurrency,
        num_prompts: m.num_prompts,
        duration_s: s.duration_s,
        completed: m.completed,
        failed: m.failed,
        errors_by_class,
        total_input_tokens: m.total_input_tokens,
        total_output_tokens: m.total_output_tokens,
        request_throughput: m.request_throughput,
        output_throughput: m.output_throughput,
        total_token_throughput: per_s(m.total_input_tokens + m.total_output_tokens),
        latency: m.latency.clone(),
        pooling: s.pooling,
        offered_rate: s.offered_rate,
        ..RungSummary::default()
    };
    Some((summary, mine))
}

/// Both sides of a rung as `model` alone, or the error naming the side that lacks it.
pub fn views(
    rate: f64,
    model: &str,
    base: (&RungSummary, &[RequestLine]),
    cand: (&RungSummary, &[RequestLine]),
) -> Result<[(RungSummary, Vec<RequestLine>); 2], CompareError> {
    let one = |side: &'static str, (s, l): (&RungSummary, &[RequestLine])| {
        view(s, l, model).ok_or_else(|| CompareError::ModelMissing {
            rate,
            side,
            model: model.to_string(),
            listed: s.models.iter().map(|m| m.model.clone()).collect(),
        })
    };
    Ok([one("baseline", base)?, one("candidate", cand)?])
}

/// The two sides of a rung break down by different models (each side's names, sorted): no
/// per-model rows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the two runs mix different models (baseline [{}], candidate [{}]): no per-model rows",
    base.join(", "),
    cand.join(", ")
)]
pub struct MixedModels {
    pub base: Vec<String>,
    pub cand: Vec<String>,
}

/// The main metrics of every model of a rung both sides break down by the same names, as
/// (model, metric, baseline, candidate); empty when either side has no breakdown or the two
/// name different models (then `Err` says which).
pub fn rows(
    base: &RungSummary,
    cand: &RungSummary,
) -> Result<Vec<(String, &'static str, f64, f64)>, MixedModels> {
    if base.models.is_empty() && cand.models.is_empty() {
        return Ok(Vec::new());
    }
    let names =
        |s: &RungSummary| -> Vec<String> { s.models.iter().map(|m| m.model.clone()).collect() };
    let (mut bn, mut cn) = (names(base), names(cand));
    bn.sort();
    cn.sort();
    if bn != cn {
        return Err(MixedModels { base: bn, cand: cn });
    }
    let pooled = base.pooling.is_some() || cand.pooling.is_some();
    let metrics: &[&'static str] = if pooled {
        &[
            "request_throughput",
            "error_rate",
            "median_e2el_ms",
            "p99_e2el_ms",
        ]
    } else {
        &[
            "request_throughput",
            "output_throughput",
            "error_rate",
            "median_ttft_ms",
            "p99_ttft_ms",
            "median_tpot_ms",
            "p99_tpot_ms",
        ]
    };
    let mut out = Vec::new();
    for name in &bn {
        let (Some(b), Some(c)) = (base.model(name), cand.model(name)) else {
            continue;
        };
        for &k in metrics {
            out.push((
                name.clone(),
                k,
                b.metric(k).unwrap_or(f64::NAN),
                c.metric(k).unwrap_or(f64::NAN),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::models::ModelSummary;

    fn rung(models: &[&str]) -> RungSummary {
        RungSummary {
            models: models
                .iter()
                .map(|m| ModelSummary {
                    model: m.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..RungSummary::default()
        }
    }

    #[test]
    fn sides_of_different_models_give_no_rows_and_name_both_lists() {
        let e = rows(&rung(&["b", "a"]), &rung(&["a", "c"])).unwrap_err();
        assert_eq!(
            e,
            MixedModels {
                base: vec!["a".into(), "b".into()],
                cand: vec!["a".into(), "c".into()],
            }
        );
        assert_eq!(
            e.to_string(),
            "the two runs mix different models (baseline [a, b], candidate [a, c]): no per-model rows"
        );
        // The same models in another order are the same breakdown.
        let same = rows(&rung(&["b", "a"]), &rung(&["a", "b"])).unwrap();
        assert_eq!(same.len(), 2 * 7);
    }
}
