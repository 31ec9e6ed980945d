//! Semantic checks of the `server_metrics:` section.

use serde_json::Value;

use super::diagnostic::Problem;
use super::types::DurationStr;
use super::yaml::Seg;

fn at(key: &str) -> Vec<Seg> {
    vec![Seg::Key("server_metrics".into()), Seg::Key(key.into())]
}

/// Every problem of `server_metrics` in `v`.
pub(crate) fn check(v: &Value, out: &mut Vec<Problem>) {
    let Some(sm) = v.get("server_metrics") else {
        return;
    };
    if let Some(u) = sm.get("url").and_then(Value::as_str) {
        match url::Url::parse(u) {
            Ok(url) if !matches!(url.scheme(), "http" | "https") => out.push(
                Problem::value(
                    at("url"),
                    format!("`{}` is not an http(s) URL", url.scheme()),
                )
                .hint("write e.g. `http://10.0.0.5:8000/metrics`"),
            ),
            Ok(url) if !url.username().is_empty() || url.password().is_some() => out.push(
                Problem::value(
                    at("url"),
                    "credentials in the URL would be shown and stored",
                )
                .hint("put the token in a variable named by `server_metrics.api_key_env`"),
            ),
            Ok(_) => {}
            Err(e) => out.push(
                Problem::value(at("url"), format!("not a URL: {e}"))
                    .hint("write e.g. `http://10.0.0.5:8000/metrics`"),
            ),
        }
    }
    if let Some(d) = sm.get("interval").and_then(Value::as_str) {
        if matches!(DurationStr::parse(d), Ok(x) if x.0.as_millis() < 100) {
            out.push(
                Problem::value(at("interval"), "must be at least 100ms")
                    .hint("scraping faster than that costs the server more than it tells"),
            );
        }
    }
    if let Some(e) = sm.get("api_key_env").and_then(Value::as_str) {
        if let Some(pr) = super::env_name::env_name_problem(e, at("api_key_env"), "METRICS_TOKEN") {
            out.push(pr);
        }
    }
}
