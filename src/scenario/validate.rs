//! Semantic checks the schema cannot express: rate ladders, ranges, names, URLs, files.
//!
//! They run on the JSON value (after templates and migration) rather than on the typed
//! [`super::Scenario`], so they still run, and every problem is still reported, when the
//! schema has already found type errors elsewhere. A check skips a field whose type is
//! wrong: the schema reports that one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::diagnostic::{nearest, Problem};
use super::identity::{is_scenario_name, rate_label};
use super::limits;
use super::template::check_prompt_template;
use super::types::MinChange;
use super::yaml::Seg;

/// Checks a tokenizer file; injected so this module does not depend on the tokenizers crate.
pub type TokenizerCheck<'a> = &'a dyn Fn(&Path) -> Result<(), Box<dyn std::error::Error>>;

fn k(s: &str) -> Seg {
    Seg::Key(s.into())
}

fn p(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|s| k(s)).collect()
}

fn get<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(v, |cur, key| cur.get(*key))
}

fn num(v: &Value, keys: &[&str]) -> Option<f64> {
    get(v, keys).and_then(Value::as_f64)
}

fn string<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    get(v, keys).and_then(Value::as_str)
}

/// Resolve a path written in the scenario against the scenario file's directory.
pub(crate) fn resolve_against(scenario_file: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        return p.to_path_buf();
    }
    match scenario_file.parent() {
        Some(dir) => dir.join(p),
        None => p.to_path_buf(),
    }
}

/// Every semantic problem of `v`. `file` is the scenario file (for relative paths); the
/// tokenizer is only loaded when `tokenizer_check` is given.
pub(crate) fn check(
    v: &Value,
    file: &Path,
    tokenizer_check: Option<TokenizerCheck<'_>>,
    metric_keys: &[String],
) -> Vec<Problem> {
    let mut out = vec![];
    check_name(v, &mut out);
    check_endpoint(v, &mut out);
    check_workload(v, file, &mut out);
    check_load(v, &mut out);
    check_slo(v, &mut out);
    check_gate(v, metric_keys, &mut out);
    check_sweep(v, &mut out);
    check_sizes(v, &mut out);
    super::server_metrics::check(v, &mut out);
    super::extra_body::check(v, &mut out);
    super::load_kind::check(v, &mut out);
    super::shapes::check(v, &mut out);
    super::sessions::check(v, &mut out);
    super::endpoints::check(v, &mut out);
    super::images::check(v, &mut out);
    super::soak::check(v, &mut out);
    super::search::check(v, &mut out);
    super::models::check(v, &mut out);
    if let (Some(t), Some(check)) = (string(v, &["tokenizer"]), tokenizer_check) {
        let resolved = resolve_against(file, Path::new(t));
        // A hub id that is not a local path is looked up in the Hugging Face cache (or
        // downloaded) by `runner::prepare`, which `ladder validate` runs too.
        let hub = !resolved.exists() && super::hub_id::HubId::parse(t).is_some();
        let fileless = [super::types::TOKENIZER_SERVER, super::types::TOKENIZER_NONE].contains(&t);
        let checked = if hub || fileless {
            Ok(())
        } else {
            check(&resolved)
        };
        if let Err(e) = checked {
            let mut pr = Problem::value(p(&["tokenizer"]), e.to_string());
            if !resolved.exists() && !Path::new(t).is_absolute() {
                pr = pr.hint("relative paths are resolved against the scenario file's directory");
            }
            out.push(pr);
        }
    }
    out
}

fn check_name(v: &Value, out: &mut Vec<Problem>) {
    if let Some(n) = string(v, &["name"]) {
        if !is_scenario_name(n) {
            out.push(
                Problem::value(
                    p(&["name"]),
                    format!("`{n}` is not a valid name; it becomes a folder name"),
                )
                .hint(if n == "." || n == ".." {
                    "`.` and `..` name no folder of their own; pick a name such as `my-ladder`"
                } else if n == super::identity::REPLACED_DIR {
                    "`.replaced` is where `ladder bless` keeps replaced baselines; pick another name"
                } else {
                    "use only letters, digits, `.`, `_` and `-`"
                }),
            );
        }
    }
}

use super::base_url::base_url_problem;
pub use super::base_url::{without_userinfo, CREDENTIALS_IN_URL, FRAGMENT_IN_URL};
use super::env_name::env_name_problem;
#[cfg(test)]
use super::env_name::is_env_name;

fn check_endpoint(v: &Value, out: &mut Vec<Problem>) {
    if let Some(u) = string(v, &["endpoint", "base_url"]) {
        if let Some(pr) = base_url_problem(u) {
            out.push(pr);
        }
    }
    if let Some(e) = string(v, &["endpoint", "api_key_env"]) {
        if let Some(pr) = env_name_problem(e, p(&["endpoint", "api_key_env"]), "OPENAI_API_KEY") {
            out.push(pr);
        }
    }
    for key in ["request_timeout", "ttft_timeout"] {
        if let Some(d) = string(v, &["endpoint", key]) {
            if matches!(super::types::DurationStr::parse(d), Ok(x) if x.0.is_zero()) {
                out.push(Problem::value(
                    p(&["endpoint", key]),
                    "must be longer than zero",
                ));
            }
        }
    }
}

fn check_workload(v: &Value, file: &Path, out: &mut Vec<Problem>) {
    for key in ["input_tokens", "output_tokens", "requests_per_rung"] {
        if let Some(n) = num(v, &["workload", key]) {
            if n < 1.0 {
                out.push(Problem::value(
                    p(&["workload", key]),
                    format!("must be at least 1, found {n}"),
                ));
            }
        }
    }
    if let Some(r) = num(v, &["workload", "range_ratio"]) {
        if !(0.0..1.0).contains(&r) {
            out.push(
                Problem::value(
                    p(&["workload", "range_ratio"]),
                    format!("must be in [0, 1), found {r}"),
                )
                .hint("lengths are drawn from [len*(1-r), len*(1+r)]; 0 gives fixed lengths"),
            );
        }
    }
    let dataset = string(v, &["workload", "dataset"]).unwrap_or("random");
    if dataset == "jsonl" || dataset == "sharegpt" {
        match string(v, &["workload", "path"]) {
            None if get(v, &["workload", "path"]).is_none() => out.push(
                Problem::value(
                    p(&["workload", "dataset"]),
                    format!("dataset `{dataset}` needs `workload.path`"),
                )
                .hint("add `path:` with the dataset file, relative to the scenario file"),
            ),
            Some(f) => {
                let resolved = resolve_against(file, Path::new(f));
                if let Err(e) = crate::fileread::check_regular(&resolved) {
                    let m = match e {
                        crate::fileread::ReadError::NotFound(_) => "does not exist".to_string(),
                        e => e.reason(),
                    };
                    out.push(
                        Problem::value(
                            p(&["workload", "path"]),
                            format!("dataset file {} {m}", resolved.display()),
                        )
                        .hint("relative paths are resolved against the scenario file's directory"),
                    );
                }
            }
            None => {}
        }
    }
    if let Some(t) = string(v, &["workload", "prompt_template"]) {
        if let Err((e, line)) = check_prompt_template(t) {
            let mut pr = Problem::value(p(&["workload", "prompt_template"]), e);
            pr.line_in_value = line;
            out.push(pr);
        } else if !t.contains("prompt") {
            out.push(
                Problem::value(
                    p(&["workload", "prompt_template"]),
                    "the template never uses `prompt`, so every request would be the same text",
                )
                .hint("put `{{ prompt }}` where the synthesised prompt goes"),
            );
        }
    }
}

/// Two rungs must never write the same files: rates that differ only past the 6th decimal
/// share a file label (equal rates are reported by the ordering checks).
fn check_rung_labels(v: &Value, out: &mut Vec<Problem>) {
    let mut seen: Vec<(f64, Vec<Seg>)> = Vec::new();
    if let Some(b) = num(v, &["load", "baseline_rate"]).filter(|b| b.is_finite() && *b > 0.0) {
        seen.push((b, p(&["load", "baseline_rate"])));
    }
    let rates = get(v, &["load", "rates"]).and_then(Value::as_array);
    for (i, r) in rates.into_iter().flatten().enumerate() {
        let Some(r) = r.as_f64().filter(|r| r.is_finite() && *r > 0.0) else {
            continue;
        };
        let mut path = p(&["load", "rates"]);
        path.push(Seg::Index(i));
        let label = rate_label(r);
        if let Some((other, _)) = seen
            .iter()
            .find(|(o, _)| *o != r && rate_label(*o) == label)
        {
            out.push(
                Problem::value(
                    path.clone(),
                    format!(
                        "rate {r} and rate {other} would both write result_rate_{label}.json; \
                         rung files keep 6 decimals of the rate"
                    ),
                )
                .hint("make the rates differ within 6 decimals, or drop one"),
            );
        }
        seen.push((r, path));
    }
}

fn check_load(v: &Value, out: &mut Vec<Problem>) {
    let rates = get(v, &["load", "rates"]).and_then(Value::as_array);
    let mut first_rate = None;
    if let Some(rates) = rates {
        if rates.is_empty() {
            out.push(
                Problem::value(p(&["load", "rates"]), "the ladder has no rates").hint(
                    "list at least one rate in requests per second, e.g. `rates: [5, 10, 20]`",
                ),
            );
        }
        let mut prev: Option<f64> = None;
        for (i, r) in rates.iter().enumerate() {
            let Some(r) = r.as_f64() else {
                continue;
            };
            let mut path = p(&["load", "rates"]);
            path.push(Seg::Index(i));
            if let Some(m) = limits::rate_problem(r) {
                out.push(Problem::value(path, m));
                continue;
            }
            if first_rate.is_none() {
                first_rate = Some(r);
            }
            if let Some(pr) = prev {
                if r <= pr {
                    out.push(
                        Problem::value(
                            path,
                            format!("rates must be strictly increasing, but {r} follows {pr}"),
                        )
                        .hint("sort the rates and remove duplicates"),
                    );
                }
            }
            prev = Some(prev.map_or(r, |x: f64| x.max(r)));
        }
    }
    if let Some(b) = num(v, &["load", "baseline_rate"]) {
        if let Some(m) = limits::rate_problem(b) {
            out.push(Problem::value(p(&["load", "baseline_rate"]), m));
        } else if let Some(f) = first_rate.filter(|f| b >= *f) {
            out.push(
                Problem::value(
                    p(&["load", "baseline_rate"]),
                    format!("baseline rate {b} must be below the first rate ({f})"),
                )
                .hint("the baseline is the light-load reference rung run before `rates`"),
            );
        }
    }
    check_rung_labels(v, out);
    let arrival = string(v, &["load", "arrival"]).unwrap_or("poisson");
    if let Some(bv) = get(v, &["load", "burstiness"]).filter(|x| !x.is_null()) {
        if arrival != "gamma" {
            out.push(
                Problem::key(
                    p(&["load", "burstiness"]),
                    format!("burstiness only applies to `arrival: gamma`, not `{arrival}`"),
                )
                .hint("set `arrival: gamma` or remove `burstiness`"),
            );
        }
        if let Some(m) = bv.as_f64().and_then(limits::burstiness_problem) {
            out.push(
                Problem::value(p(&["load", "burstiness"]), m)
                    .hint("1 is Poisson; below 1 is burstier, above 1 is smoother"),
            );
        }
    }
    if let Some(r) = num(v, &["load", "repeats"]) {
        if !(1.0..=f64::from(super::types::MAX_REPEATS)).contains(&r) || r.fract() != 0.0 {
            out.push(
                Problem::value(
                    p(&["load", "repeats"]),
                    format!(
                        "must be a whole number from 1 to {}, found {r}",
                        super::types::MAX_REPEATS
                    ),
                )
                .hint("3 repeats measure run-to-run noise; 1 (the default) measures none"),
            );
        }
    }
    if let Some(c) = num(v, &["load", "max_concurrency"]) {
        if c < 1.0 {
            out.push(Problem::value(
                p(&["load", "max_concurrency"]),
                "must be at least 1 (or omitted for no cap)",
            ));
        }
    }
}

fn check_slo(v: &Value, out: &mut Vec<Problem>) {
    for key in ["ttft_ms", "tpot_ms", "e2e_ms"] {
        if let Some(x) = num(v, &["slo", key]) {
            if x <= 0.0 {
                out.push(Problem::value(
                    p(&["slo", key]),
                    format!("must be a positive number of milliseconds, found {x}"),
                ));
            }
        }
    }
    if let Some(x) = num(v, &["slo", "max_error_rate"]) {
        if !(0.0..=1.0).contains(&x) {
            out.push(
                Problem::value(
                    p(&["slo", "max_error_rate"]),
                    format!("must be between 0 and 1, found {x}"),
                )
                .hint("a fraction: 0.05 means 5 %"),
            );
        }
    }
}

fn check_gate(v: &Value, metric_keys: &[String], out: &mut Vec<Problem>) {
    let Some(rules) = get(v, &["gate"]).and_then(Value::as_array) else {
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let base = vec![k("gate"), Seg::Index(i)];
        if rule.get("metric").and_then(Value::as_str) == Some(crate::capacity::CAPACITY_METRIC) {
            if get(v, &["load", "search"]).is_none_or(Value::is_null) {
                let mut path = base.clone();
                path.push(k("metric"));
                out.push(
                    Problem::value(path, "`capacity` is the answer of a capacity search, and this scenario has no `load.search`")
                        .hint("add `load.search` (docs/capacity.md), or gate a rung metric such as `request_throughput`"),
                );
            }
            for t in ["max_increase", "max"] {
                if rule.get(t).is_some_and(|x| !x.is_null()) {
                    let mut path = base.clone();
                    path.push(k(t));
                    out.push(
                        Problem::key(path, format!("`{t}` does not apply to `capacity`: a capacity regresses by falling"))
                            .hint("use `max_decrease: 5%` (against the baseline's capacity) or `min: 30` (a floor in req/s or users)"),
                    );
                }
            }
        }
        if let Some(m) = rule.get("metric").and_then(Value::as_str) {
            if m != crate::capacity::CAPACITY_METRIC && !metric_keys.iter().any(|x| x == m) {
                let mut path = base.clone();
                path.push(k("metric"));
                let pr = Problem::value(path, format!("unknown metric `{m}`"));
                // vLLM's files call the 50th percentile `median_*`; a bare `ttft` most
                // likely means its median in milliseconds.
                let alias = [
                    m.strip_prefix("p50_").map(|rest| format!("median_{rest}")),
                    Some(format!("median_{m}_ms")),
                    Some(format!("{m}_ms")),
                ]
                .into_iter()
                .flatten()
                .find(|a| metric_keys.contains(a));
                out.push(
                    match alias
                        .as_deref()
                        .or_else(|| nearest(m, metric_keys.iter().map(String::as_str)))
                    {
                        Some(n) => pr.hint(format!("did you mean `{n}`?")),
                        None => pr.hint("metrics are the numeric keys of result_rate_<rate>.json, e.g. `request_throughput`, `median_ttft_ms`, `error_rate`"),
                    },
                );
            }
        }
        if let Some(mc) = rule.get("min_change").filter(|v| !v.is_null()) {
            let mut path = base.clone();
            path.push(k("min_change"));
            let metric = rule.get("metric").and_then(Value::as_str).unwrap_or("");
            let problem = match serde_json::from_value::<MinChange>(mc.clone()) {
                Err(e) => Some(e.to_string()),
                Ok(m) => m.in_unit(metric).err().map(|e| e.to_string()),
            };
            if let Some(e) = problem {
                out.push(Problem::value(path.clone(), e));
            }
            if ["max_increase", "max_decrease"]
                .iter()
                .all(|t| rule.get(*t).is_none_or(Value::is_null))
            {
                out.push(
                    Problem::value(path, "a floor needs a change threshold to go with")
                        .hint("add `max_increase` or `max_decrease`; `max` / `min` bound the value itself and take no floor"),
                );
            }
        }
        if rule.is_object()
            && ["max_increase", "max_decrease", "max", "min"]
                .iter()
                .all(|t| rule.get(*t).is_none_or(Value::is_null))
        {
            out.push(
                Problem::value(base, "the rule sets no threshold")
                    .hint("add one of `max_increase`, `max_decrease`, `max`, `min`"),
            );
        }
    }
}

/// Requests × prompt length per rung against the stated limits, for each prompt length a
/// ladder will use (the sweep's `input_tokens` values too). Defaults as in `types`.
fn check_sizes(v: &Value, out: &mut Vec<Problem>) {
    let int = |keys: &[&str], default: u64| match get(v, keys) {
        None => Some(default),
        Some(x) => x.as_u64(),
    };
    let (Some(n), Some(w), Some(len)) = (
        int(&["workload", "requests_per_rung"], 200),
        int(&["load", "warmup_requests"], 0),
        int(&["workload", "input_tokens"], 512),
    ) else {
        return;
    };
    let requests = n.saturating_add(w);
    let dataset = string(v, &["workload", "dataset"]).unwrap_or("random");
    // File prompts have their own lengths: their size is checked when the file is read.
    let mut lens = vec![(
        if dataset == "random" { len } else { 0 },
        p(&["workload", "input_tokens"]),
    )];
    if string(v, &["sweep", "field"]) == Some("input_tokens") && dataset == "random" {
        if let Some(values) = get(v, &["sweep", "values"]).and_then(Value::as_array) {
            for (i, x) in values.iter().enumerate() {
                if let Some(x) = x.as_u64() {
                    let mut path = p(&["sweep", "values"]);
                    path.push(Seg::Index(i));
                    lens.push((x, path));
                }
            }
        }
    }
    for (len, path) in lens {
        if let Some(m) = limits::rung_size_problem(requests, len) {
            let path = if requests > limits::MAX_REQUESTS_PER_RUNG {
                p(&["workload", "requests_per_rung"])
            } else {
                path
            };
            out.push(Problem::value(path, m).hint(limits::RUNG_SIZE_HINT));
            return;
        }
    }
}

fn check_sweep(v: &Value, out: &mut Vec<Problem>) {
    let Some(values) = get(v, &["sweep", "values"]).and_then(Value::as_array) else {
        return;
    };
    if values.is_empty() {
        out.push(
            Problem::value(p(&["sweep", "values"]), "the sweep has no values")
                .hint("list the values to try, e.g. `values: [128, 512, 2048]`"),
        );
    }
    for (i, x) in values.iter().enumerate() {
        if x.as_f64().is_some_and(|x| x < 1.0) {
            let mut path = p(&["sweep", "values"]);
            path.push(Seg::Index(i));
            out.push(Problem::value(path, "must be at least 1"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "version": 1, "name": "ok-name", "model": "m", "tokenizer": "t.json",
            "endpoint": {"base_url": "http://127.0.0.1:8000", "api_key_env": "VLLM_API_KEY"},
            "workload": {"input_tokens": 128, "output_tokens": 64, "requests_per_rung": 10},
            "load": {"baseline_rate": 1, "rates": [5, 10]},
            "gate": [{"metric": "error_rate", "max": 0.02}],
        })
    }

    fn problems(v: &Value) -> Vec<Problem> {
        let keys: Vec<String> = ["error_rate", "request_throughput", "median_ttft_ms"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        check(v, Path::new("dir/s.yaml"), None, &keys)
    }

    fn only(v: &Value) -> Problem {
        let ps = problems(v);
        assert_eq!(ps.len(), 1, "{ps:?}");
        ps.into_iter().next().unwrap()
    }

    /// A key pasted where its variable's name goes is never shown back (nor made into a
    /// name to suggest); a name in the wrong case is, with its upper-case form. The same
    /// rule holds for `server_metrics.api_key_env`.
    #[test]
    fn a_key_in_api_key_env_is_never_shown() {
        for key in [
            "sk-advE-SECRET-4242",
            "Bearer sk-advE-SECRET-4242",
            "hf_AbCdEfGhIjKlMnOpQrStUvWxYz12345678",
            "0123456789abcdef0123456789abcdef",
            "sk-proj-0123456789abcdefghij",
        ] {
            let mut v = base();
            v["endpoint"]["api_key_env"] = json!(key);
            v["server_metrics"] = json!({"api_key_env": key});
            let ps = problems(&v);
            assert_eq!(ps.len(), 2, "{ps:?}");
            for pr in ps {
                let text = format!("{} {}", pr.message, pr.hint.clone().unwrap_or_default());
                let core = &key[key.len() - 8..];
                assert!(!text.contains(core), "{key}: {text}");
                assert!(!text.contains(&core.to_ascii_uppercase()), "{key}: {text}");
                assert!(text.contains("may be the key itself"), "{text}");
            }
        }
        for (name, upper) in [
            ("openai_api_key", "OPENAI_API_KEY"),
            ("vllm-api-key", "VLLM_API_KEY"),
        ] {
            let mut v = base();
            v["endpoint"]["api_key_env"] = json!(name);
            let pr = only(&v);
            assert!(pr.message.contains(name), "{}", pr.message);
            assert!(pr.hint.as_deref().unwrap().contains(upper), "{:?}", pr.hint);
        }
    }

    #[test]
    fn a_good_scenario_has_no_problems() {
        assert!(problems(&base()).is_empty(), "{:?}", problems(&base()));
    }

    #[test]
    fn rates_must_be_positive_and_strictly_increasing() {
        let mut v = base();
        v["load"]["rates"] = json!([5, 5, 3]);
        let ps = problems(&v);
        assert_eq!(ps.len(), 2, "{ps:?}");
        assert_eq!(ps[0].path, vec![k("load"), k("rates"), Seg::Index(1)]);
        assert!(ps[1].message.contains("3 follows 5"));
        v["load"]["rates"] = json!([]);
        assert!(only(&v).message.contains("no rates"));
        v["load"]["rates"] = json!([-1, 5]);
        assert!(only(&v).message.contains("positive"));
    }

    #[test]
    fn baseline_must_be_below_the_first_rate() {
        let mut v = base();
        v["load"]["baseline_rate"] = json!(5);
        assert!(only(&v).message.contains("below the first rate"));
        v["load"]["baseline_rate"] = json!(0);
        assert!(only(&v).message.contains("positive"));
    }

    #[test]
    fn token_counts_ratio_and_requests() {
        let mut v = base();
        v["workload"]["output_tokens"] = json!(0);
        assert_eq!(only(&v).path, p(&["workload", "output_tokens"]));
        let mut v = base();
        v["workload"]["range_ratio"] = json!(1.0);
        assert!(only(&v).message.contains("[0, 1)"));
        let mut v = base();
        v["workload"]["requests_per_rung"] = json!(0);
        assert!(only(&v).message.contains("at least 1"));
    }

    #[test]
    fn burstiness_needs_gamma_and_a_positive_value() {
        let mut v = base();
        v["load"]["burstiness"] = json!(0.5);
        assert!(only(&v).message.contains("only applies"));
        v["load"]["arrival"] = json!("gamma");
        v["load"]["burstiness"] = json!(0);
        assert!(only(&v).message.contains("outside"));
        for extreme in [1e308, 1e-300] {
            v["load"]["burstiness"] = json!(extreme);
            assert!(only(&v).message.contains("outside"), "{extreme}");
        }
    }

    #[test]
    fn names_and_env_vars() {
        assert!(is_scenario_name("r1-70b_ladder.v2"));
        assert!(!is_scenario_name("a b"));
        assert!(!is_scenario_name("a/b"));
        assert!(is_env_name("VLLM_API_KEY"));
        assert!(is_env_name("_X1"));
        assert!(!is_env_name("vllm_api_key"));
        assert!(!is_env_name("1KEY"));
        let mut v = base();
        v["endpoint"]["api_key_env"] = json!("vllm-key");
        assert_eq!(
            only(&v).hint.as_deref().map(|h| h.contains("`VLLM_KEY`")),
            Some(true)
        );
        let mut v = base();
        v["name"] = json!("my scenario");
        assert_eq!(only(&v).path, p(&["name"]));
    }

    #[test]
    fn dot_names_and_rates_sharing_a_file_label_are_refused() {
        for n in [".", ".."] {
            let mut v = base();
            v["name"] = json!(n);
            assert_eq!(only(&v).path, p(&["name"]), "{n}");
        }
        let mut v = base();
        v["load"]["rates"] = json!([1.0000001, 1.0000002]);
        v["load"]["baseline_rate"] = json!(0.5);
        let pr = only(&v);
        assert!(pr.message.contains("1.0000002") && pr.message.contains("1.0000001"));
        let mut v = base();
        v["load"]["baseline_rate"] = json!(1.0000001);
        v["load"]["rates"] = json!([1.0000002, 5]);
        assert!(only(&v).message.contains("result_rate_1.json"));
    }

    #[test]
    fn gate_rules_name_known_metrics_and_a_threshold() {
        let mut v = base();
        let keys = vec!["median_ttft_ms".to_string(), "count_ttft".to_string()];
        let mut out = vec![];
        check_gate(
            &json!({"gate": [{"metric": "ttft", "max": 1}]}),
            &keys,
            &mut out,
        );
        assert_eq!(
            out[0].hint.as_deref(),
            Some("did you mean `median_ttft_ms`?")
        );
        v["gate"] = json!([{"metric": "error_rat", "max": 0.1}, {"metric": "error_rate"}]);
        let ps = problems(&v);
        assert_eq!(ps.len(), 2, "{ps:?}");
        assert_eq!(ps[0].hint.as_deref(), Some("did you mean `error_rate`?"));
        assert!(ps[1].message.contains("no threshold"));
    }

    #[test]
    fn sweep_values_and_datasets() {
        let mut v = base();
        v["sweep"] = json!({"field": "input_tokens", "values": []});
        assert!(only(&v).message.contains("no values"));
        v["sweep"] = json!({"field": "input_tokens", "values": [0, 5]});
        assert_eq!(only(&v).path, vec![k("sweep"), k("values"), Seg::Index(0)]);
        let mut v = base();
        v["workload"]["dataset"] = json!("jsonl");
        assert!(only(&v).message.contains("needs `workload.path`"));
        v["workload"]["path"] = json!("nope.jsonl");
        assert!(only(&v).message.contains("dir/nope.jsonl does not exist"));
    }

    #[test]
    fn tokenizer_check_is_injected_with_the_resolved_path() {
        let seen = std::cell::RefCell::new(None);
        let check_fn = |p: &Path| {
            *seen.borrow_mut() = Some(p.to_path_buf());
            Err("not a tokenizer".into())
        };
        let ps = check(
            &base(),
            Path::new("dir/s.yaml"),
            Some(&check_fn),
            &["error_rate".into()],
        );
        assert_eq!(ps.len(), 1, "{ps:?}");
        assert_eq!(ps[0].message, "not a tokenizer");
        assert_eq!(seen.borrow().as_deref(), Some(Path::new("dir/t.json")));
    }

    #[test]
    fn prompt_template_must_parse() {
        let mut v = base();
        v["workload"]["prompt_template"] = json!("Q: {{ prompt");
        assert!(only(&v).message.starts_with("template syntax error"));
    }
}
