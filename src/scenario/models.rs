//! `model`: one served model name, or a weighted mix of names (a base model and its LoRA
//! adapters, or several models behind one gateway), and the seeded choice of a name for
//! each request (docs/endpoints.md, "Traffic mixes").

use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// Most names a mix may list.
pub const MAX_MIX_MODELS: usize = 64;
/// Largest weight of one name (weights are relative; this only keeps sums finite and exact).
pub const MAX_MODEL_WEIGHT: f64 = 1e6;

/// The scenario's `model`: a plain name (every request sends it; every output is as it was
/// before mixes existed), or a weighted list (each request sends one name, chosen by
/// [`ModelSpec::pick`]).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ModelSpec {
    /// One served model name, sent in every request.
    One(String),
    /// Served model names with relative weights: `[{name: base, weight: 2}, {name:
    /// sql-lora, weight: 1}]` sends about two requests to `base` for one to `sql-lora`.
    Mix(Vec<WeightedModel>),
}

/// One name of a mix and its relative weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightedModel {
    /// The served model (or adapter) name sent in the request's `model`.
    pub name: String,
    /// Relative share of the requests (default 1; above 0, at most 1e6).
    #[serde(default = "one")]
    pub weight: f64,
}

fn one() -> f64 {
    1.0
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec::One(String::new())
    }
}

impl From<String> for ModelSpec {
    fn from(s: String) -> Self {
        ModelSpec::One(s)
    }
}

impl From<&str> for ModelSpec {
    fn from(s: &str) -> Self {
        ModelSpec::One(s.to_string())
    }
}

impl PartialEq<str> for ModelSpec {
    fn eq(&self, other: &str) -> bool {
        matches!(self, ModelSpec::One(s) if s == other)
    }
}

impl PartialEq<&str> for ModelSpec {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

/// A plain name as written; a mix as `base×2, sql-lora×1`.
impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSpec::One(s) => f.write_str(s),
            ModelSpec::Mix(list) => {
                let parts: Vec<String> = list
                    .iter()
                    .map(|m| format!("{}×{}", m.name, crate::format::trimmed(m.weight, 3)))
                    .collect();
                f.write_str(&parts.join(", "))
            }
        }
    }
}

impl<'de> Deserialize<'de> for ModelSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ModelSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a model name, or a list of `{name, weight}`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ModelSpec, E> {
                Ok(ModelSpec::One(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<ModelSpec, E> {
                Ok(ModelSpec::One(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ModelSpec, A::Error> {
                let mut list = Vec::new();
                while let Some(m) = seq.next_element::<WeightedModel>()? {
                    list.push(m);
                }
                Ok(ModelSpec::Mix(list))
            }
        }
        d.deserialize_any(V)
    }
}

impl ModelSpec {
    /// True for a weighted list (even of one name): request lines and rung summaries then
    /// carry the model of each request.
    pub fn is_mix(&self) -> bool {
        matches!(self, ModelSpec::Mix(_))
    }

    /// The first name: the one a single-model step (preflight's probe, `/tokenize`) uses.
    pub fn primary(&self) -> &str {
        match self {
            ModelSpec::One(s) => s,
            ModelSpec::Mix(list) => list.first().map_or("", |m| m.name.as_str()),
        }
    }

    /// Every name, in the order written.
    pub fn names(&self) -> Vec<&str> {
        match self {
            ModelSpec::One(s) => vec![s.as_str()],
            ModelSpec::Mix(list) => list.iter().map(|m| m.name.as_str()).collect(),
        }
    }

    /// Every problem with a mix, each with the index of the entry it is about (`None` for
    /// the list as a whole); empty for a plain name and a usable list.
    pub fn problems(&self) -> Vec<(Option<usize>, String)> {
        let ModelSpec::Mix(list) = self else {
            return Vec::new();
        };
        let mut p = Vec::new();
        if list.is_empty() {
            p.push((
                None,
                "the list of models is empty; name at least one".into(),
            ));
        }
        if list.len() > MAX_MIX_MODELS {
            p.push((
                None,
                format!("{} models listed; at most {MAX_MIX_MODELS}", list.len()),
            ));
        }
        for (i, m) in list.iter().enumerate() {
            if m.name.trim().is_empty() {
                p.push((Some(i), "a model name must not be empty".into()));
            }
            if list[..i].iter().any(|o| o.name == m.name) {
                p.push((
                    Some(i),
                    format!("model `{}` is listed twice; give it one entry", m.name),
                ));
            }
            if !(m.weight.is_finite() && m.weight > 0.0 && m.weight <= MAX_MODEL_WEIGHT) {
                p.push((
                    Some(i),
                    format!(
                        "weight must be above 0 and at most {MAX_MODEL_WEIGHT:e}, got {}",
                        m.weight
                    ),
                ));
            }
        }
        p
    }

    /// The name request `index` sends: a plain name always; from a mix, a draw weighted by
    /// the weights and fixed by `seed` and `index` alone (the same scenario sends the same
    /// sequence of names, every rung and every run; a session draws with its session index,
    /// so a conversation keeps one model). Not a round robin: like vLLM's `--lora-modules`,
    /// each request draws on its own, so the counts are about, not exactly, the weights.
    pub fn pick(&self, seed: u64, index: u64) -> &str {
        let ModelSpec::Mix(list) = self else {
            return self.primary();
        };
        let total: f64 = list.iter().map(|m| m.weight).sum();
        if list.is_empty() || total.is_nan() || total <= 0.0 {
            return self.primary();
        }
        let mut g = crate::stats::SplitMix64(
            seed ^ index.wrapping_mul(0x9E6C_63D0_676A_9A99) ^ 0x6D6F_6465_6C6D_6978,
        );
        // Two rounds so neighbouring indices decorrelate.
        g.next();
        let u = (g.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let mut acc = 0.0;
        for m in list {
            acc += m.weight;
            if u < acc {
                return &m.name;
            }
        }
        &list[list.len() - 1].name
    }
}

/// The semantic checks of `model` and of the gate rules' `model:` on the scenario's JSON
/// value (run by `ladder validate` and `run`): every bad entry of a mix at its own line, and
/// a gate rule naming a model the mix does not list.
pub(crate) fn check(v: &serde_json::Value, out: &mut Vec<super::diagnostic::Problem>) {
    use super::diagnostic::Problem;
    use super::yaml::Seg;
    let Some(raw) = v.get("model") else { return };
    // A type error is the schema's to report.
    let Ok(spec) = serde_json::from_value::<ModelSpec>(raw.clone()) else {
        return;
    };
    for (i, m) in spec.problems() {
        let mut path = vec![Seg::Key("model".into())];
        path.extend(i.map(Seg::Index));
        out.push(Problem::value(path, m));
    }
    let Some(rules) = v.get("gate").and_then(serde_json::Value::as_array) else {
        return;
    };
    let names = spec.names();
    for (i, rule) in rules.iter().enumerate() {
        let Some(m) = rule.get("model").and_then(serde_json::Value::as_str) else {
            continue;
        };
        let path = vec![
            Seg::Key("gate".into()),
            Seg::Index(i),
            Seg::Key("model".into()),
        ];
        if !spec.is_mix() {
            out.push(
                Problem::value(path, format!("`model: {m}` needs a mix: `model` is one name"))
                    .hint("drop `model:` (the rule judges the whole rung), or make `model` a weighted list"),
            );
        } else if !names.contains(&m) {
            out.push(
                Problem::value(path, format!("model `{m}` is not in the scenario's mix"))
                    .hint(format!("the mix lists: {}", names.join(", "))),
            );
        }
        if let Some(metric) = rule.get("metric").and_then(serde_json::Value::as_str) {
            if !is_model_metric(metric) {
                let path = vec![
                    Seg::Key("gate".into()),
                    Seg::Index(i),
                    Seg::Key("metric".into()),
                ];
                out.push(
                    Problem::value(
                        path,
                        format!("`{metric}` is not in a model's breakdown, so a rule with `model:` cannot judge it"),
                    )
                    .hint("a model has counts, error_rate, request_throughput, output_throughput and the TTFT, TPOT, ITL and E2E statistics (e.g. `p99_tpot_ms`)"),
                );
            }
        }
    }
}

/// True for a key of a model's breakdown (`metrics::models::ModelSummary::metric_keys`,
/// which a test there keeps equal to this): what a gate rule with `model:` may name.
pub fn is_model_metric(key: &str) -> bool {
    const PLAIN: [&str; 8] = [
        "num_prompts",
        "completed",
        "failed",
        "error_rate",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "output_throughput",
    ];
    const DISTRIBUTIONS: [&str; 4] = ["ttft", "tpot", "itl", "e2el"];
    const STATS: [&str; 9] = [
        "mean", "median", "std", "p90", "p95", "p99", "p99.9", "min", "max",
    ];
    if PLAIN.contains(&key) {
        return true;
    }
    if let Some(d) = key.strip_prefix("count_") {
        return DISTRIBUTIONS.contains(&d);
    }
    let Some(rest) = key.strip_suffix("_ms") else {
        return false;
    };
    STATS.iter().any(|s| {
        rest.strip_prefix(s)
            .and_then(|r| r.strip_prefix('_'))
            .is_some_and(|d| DISTRIBUTIONS.contains(&d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(w: &[(&str, f64)]) -> ModelSpec {
        ModelSpec::Mix(
            w.iter()
                .map(|(n, w)| WeightedModel {
                    name: n.to_string(),
                    weight: *w,
                })
                .collect(),
        )
    }

    #[test]
    fn a_plain_name_and_a_list_both_read() {
        let one: ModelSpec = serde_json::from_str("\"m\"").unwrap();
        assert_eq!(one, ModelSpec::One("m".into()));
        assert!(!one.is_mix());
        let list: ModelSpec =
            serde_json::from_str(r#"[{"name":"base","weight":2},{"name":"lora"}]"#).unwrap();
        assert_eq!(list, mix(&[("base", 2.0), ("lora", 1.0)]));
        assert_eq!(list.names(), ["base", "lora"]);
        assert_eq!(list.primary(), "base");
        // Written back as read: a plain name stays a string.
        assert_eq!(serde_json::to_string(&one).unwrap(), "\"m\"");
        let e = serde_json::from_str::<ModelSpec>(r#"[{"name":"a","wieght":2}]"#).unwrap_err();
        assert!(e.to_string().contains("wieght"), "{e}");
        assert!(serde_json::from_str::<ModelSpec>("3").is_err());
    }

    #[test]
    fn the_draw_follows_the_weights_and_the_seed_alone() {
        let m = mix(&[("base", 2.0), ("lora", 1.0)]);
        let n = 30_000;
        let base = (0..n).filter(|&i| m.pick(7, i) == "base").count() as f64;
        assert!((base / n as f64 - 2.0 / 3.0).abs() < 0.01, "{base}");
        let a: Vec<&str> = (0..50).map(|i| m.pick(7, i)).collect();
        let b: Vec<&str> = (0..50).map(|i| m.pick(7, i)).collect();
        assert_eq!(a, b);
        let c: Vec<&str> = (0..50).map(|i| m.pick(8, i)).collect();
        assert_ne!(a, c, "another seed draws another sequence");
        assert_eq!(ModelSpec::from("x").pick(1, 2), "x");
        // A tiny weight is still drawn now and then; a lone name always.
        let rare = mix(&[("a", 1000.0), ("b", 1.0)]);
        assert!((0..100_000).any(|i| rare.pick(0, i) == "b"));
        assert!((0..100).all(|i| mix(&[("only", 3.0)]).pick(0, i) == "only"));
    }

    #[test]
    fn every_bad_entry_is_named() {
        let p = mix(&[("a", 0.0), ("a", 1.0), ("", f64::NAN), ("b", 2e6)]).problems();
        let at: Vec<Option<usize>> = p.iter().map(|(i, _)| *i).collect();
        assert_eq!(at, [Some(0), Some(1), Some(2), Some(2), Some(3)], "{p:?}");
        assert_eq!(ModelSpec::Mix(vec![]).problems().len(), 1);
        assert!(ModelSpec::from("x").problems().is_empty());
    }
}
