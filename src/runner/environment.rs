//! Facts recorded in run.json: host, git commit, tokenizer hash, redacted scenario.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::client::{
    is_secret_name, strings_of, without_userinfo, Redactor, MASK, MIN_SECRET_CHARS,
};
use crate::results::HostInfo;
use crate::scenario::EnvSecret;

/// The client machine.
pub fn host_info() -> HostInfo {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".into());
    HostInfo {
        hostname,
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    }
}

/// `git rev-parse HEAD` in the current directory, if it is a repository.
pub fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// SHA-256 of a tokenizer file, hex (read through the bounded reader, at most the tokenizer
/// limit).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let bytes = crate::fileread::read_bounded(path, crate::tokens::MAX_TOKENIZER_BYTES)
        .map_err(crate::fileread::ReadError::into_io)?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// A URL (`base_url`, `server_metrics.url`) as shown and stored: without `user:password@`;
/// the values of secret-looking query parameters (`?key=…`, `?token=…`) and of any query
/// parameter holding one of `secrets` (values from the environment, `?sig={{ env.SIG }}`)
/// masked; and any other occurrence of one of `secrets` (a host or path segment from the
/// environment) masked too.
pub fn shown_url(url: &str, secrets: &[String]) -> String {
    let shown = without_userinfo(url);
    let holds_secret = |v: &str| {
        secrets
            .iter()
            .any(|s| !s.is_empty() && v.contains(s.as_str()))
    };
    let masked_rest = |text: String| {
        secrets
            .iter()
            .filter(|s| !s.is_empty())
            .fold(text, |t, s| t.replace(s.as_str(), MASK))
    };
    let Ok(mut parsed) = url::Url::parse(&shown) else {
        return masked_rest(shown);
    };
    if !parsed
        .query_pairs()
        .any(|(k, v)| is_secret_name(&k) || holds_secret(&v))
    {
        return masked_rest(shown);
    }
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| {
            let v = if is_secret_name(&k) || holds_secret(&v) {
                MASK.to_string()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    masked_rest(parsed.to_string())
}

/// The one rule for a named value the user sends (a header, an `extra_body` field at any
/// depth): a secret when its name looks like one ([`is_secret_name`]) or its value came from
/// `{{ env.NAME }}`.
pub fn is_secret_entry(name: &str, from_env: bool) -> bool {
    from_env || is_secret_name(name)
}

/// `value` (an `extra_body` field's value) with every field under a secret-looking name, at
/// any depth, replaced by `<redacted>`; the texts replaced are pushed to `found`.
fn redact_secret_fields(value: &mut serde_json::Value, found: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_secret_entry(k, false) {
                    strings_of(v, found);
                    *v = "<redacted>".into();
                } else {
                    redact_secret_fields(v, found);
                }
            }
        }
        serde_json::Value::Array(items) => items
            .iter_mut()
            .for_each(|v| redact_secret_fields(v, found)),
        _ => {}
    }
}

/// The scenario as written to run.json, and the redactor fit for the user's own text.
pub struct ShownScenario {
    /// The scenario value: base URL shown without credentials, every secret-looking header
    /// and every header whose value came from `{{ env.NAME }}` as `<redacted>`, then the
    /// secrets scrubbed from its strings and keys (the value, never its serialized text).
    pub value: serde_json::Value,
    /// `redactor` without the secrets that are short or that the scenario itself contains:
    /// applying those would change the scenario's meaning (a key `10` and `rates: [10]`).
    pub own: Redactor,
    /// Labels of the secrets left out of `own` (for a warning; never their values).
    pub unreliable: Vec<String>,
}

/// See [`ShownScenario`].
pub fn redacted_scenario(
    scenario: &crate::scenario::Scenario,
    env_headers: &[String],
    env_body: &[String],
    env_secrets: &[EnvSecret],
    redactor: &Redactor,
) -> ShownScenario {
    let mut s = scenario.clone();
    let env_values = env_values(env_secrets);
    if s.endpoint.base_url != "sim" {
        s.endpoint.base_url = shown_url(&s.endpoint.base_url, &env_values);
    }
    if let Some(u) = s.server_metrics.as_mut().and_then(|m| m.url.as_mut()) {
        *u = shown_url(u, &env_values);
    }
    for (name, value) in s.endpoint.headers.iter_mut() {
        if is_secret_entry(name, env_headers.contains(name)) {
            *value = "<redacted>".into();
        }
    }
    for (name, value) in s.endpoint.extra_body.iter_mut() {
        if is_secret_entry(name, env_body.contains(name)) {
            *value = "<redacted>".into();
        } else {
            redact_secret_fields(value, &mut Vec::new());
        }
    }
    let mut value = serde_json::to_value(&s).expect("scenario serialises");
    // A rung run for a duration has no count of requests: its default would read as one.
    if s.load.duration.is_some() {
        if let Some(w) = value.get_mut("workload").and_then(|w| w.as_object_mut()) {
            w.remove("requests_per_rung");
        }
    }
    let mut own_text = Vec::new();
    strings_of(&value, &mut own_text);
    let (own, mut unreliable) = redactor.for_own_text(&own_text);
    for label in redactor.short_labels() {
        if !unreliable.contains(&label) {
            unreliable.push(label);
        }
    }
    own.redact_value(&mut value);
    ShownScenario {
        value,
        own,
        unreliable,
    }
}

/// The values the environment put into the scenario's URLs, headers and body.
pub fn env_values(env_secrets: &[EnvSecret]) -> Vec<String> {
    env_secrets.iter().map(|e| e.value.clone()).collect()
}

/// The secrets of the scenario itself, labelled for the redactor: the text values of the
/// `extra_body` entries that are secrets by [`is_secret_entry`] (from `{{ env.NAME }}`, or
/// under a secret-looking name at any depth), and every value from the environment in its
/// URLs, headers and body.
pub fn scenario_secrets(
    extra_body: &std::collections::BTreeMap<String, serde_json::Value>,
    env_body: &[String],
    env_secrets: &[EnvSecret],
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, v) in extra_body {
        let mut texts = Vec::new();
        if is_secret_entry(name, env_body.contains(name)) {
            strings_of(v, &mut texts);
        } else {
            redact_secret_fields(&mut v.clone(), &mut texts);
        }
        out.extend(
            texts
                .into_iter()
                .map(|t| (format!("the value of extra_body.{name}"), t)),
        );
    }
    out.extend(
        env_secrets
            .iter()
            .map(|e| (format!("the value of ${}", e.var), e.value.clone())),
    );
    out
}

/// The warning for secrets that cannot be scrubbed reliably (labels only, never values).
pub fn unreliable_warning(labels: &[String]) -> Option<String> {
    (!labels.is_empty()).then(|| {
        format!(
            "{} is shorter than {MIN_SECRET_CHARS} characters or also appears in the scenario's \
             own settings: too short or too common to scrub reliably. ladder still removes it from \
             everything the server sends back, but keeps the scenario's own text (run.json, the \
             endpoint) as written; use a long random secret",
            labels.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scenario::Scenario;

    #[test]
    fn shown_base_url_drops_credentials_and_masks_secret_query_values() {
        assert_eq!(
            shown_url("https://user:pw@gw.example/api", &[]),
            "https://gw.example/api"
        );
        assert_eq!(
            shown_url("https://gw.example/api?api-version=1&api_key=sk-q-1", &[]),
            "https://gw.example/api?api-version=1&api_key=***"
        );
        assert_eq!(shown_url("sim", &[]), "sim");
    }

    /// A value from the environment is a secret wherever it lands in a URL: a query value
    /// under a plain name (`sig=`), a host or path segment; a metrics URL's `?token=` is
    /// masked like base_url's.
    #[test]
    fn values_from_the_environment_are_masked_in_urls_whatever_their_name() {
        let env = vec!["S1gFromEnv-991".to_string(), "tenant-from-env".to_string()];
        assert_eq!(
            shown_url(
                "https://gw.example/api?api-version=1&sig=S1gFromEnv-991",
                &env
            ),
            "https://gw.example/api?api-version=1&sig=***"
        );
        assert_eq!(
            shown_url("https://gw.example/tenant-from-env/v1", &env),
            "https://gw.example/***/v1"
        );
        assert_eq!(
            shown_url("http://10.0.0.5:9400/metrics?token=tok-9&x=1", &[]),
            "http://10.0.0.5:9400/metrics?token=***&x=1"
        );
    }

    fn scenario(extra_header: (&str, &str)) -> Scenario {
        let mut v = serde_json::json!({
            "version": 1, "name": "t", "model": "m", "tokenizer": "t.json",
            "endpoint": {"base_url": "http://127.0.0.1:8000?key=sk-in-query-9"},
            "workload": {"input_tokens": 10, "output_tokens": 10},
            "load": {"baseline_rate": 1, "rates": [10], "cooldown": "10s"},
            "gate": [{"metric": "error_rate", "max": 0.1}],
        });
        v["endpoint"]["headers"] = serde_json::json!({
            "Authorization": "Bearer sk-literal-header-1",
            "X-Plain": "plain",
            extra_header.0: extra_header.1,
        });
        serde_json::from_value(v).unwrap()
    }

    /// The scenario in run.json: a base_url query value and a metrics URL query value from
    /// the environment, a metrics `?token=`, and `extra_body` fields under secret-looking
    /// names (at any depth) are masked, as a header of the same name is; the redactor gets
    /// every one of those values.
    #[test]
    fn env_values_metrics_urls_and_secret_body_fields_are_masked_by_one_rule() {
        let mut v = serde_json::json!({
            "version": 1, "name": "t", "model": "m", "tokenizer": "t.json",
            "endpoint": {
                "base_url": "https://gw.example/api?sig=S1gFromEnv-991",
                "headers": {"api_key": "hdr-secret-123456"},
                "extra_body": {
                    "api_key": "body-secret-123456",
                    "options": {"nested_token": "nested-secret-1234", "temperature": 0.5},
                    "top_k": 5
                }
            },
            "server_metrics": {"url": "http://10.0.0.5:9400/metrics?token=metrics-tok-77&job=a"},
            "workload": {"input_tokens": 10, "output_tokens": 10},
            "load": {"baseline_rate": 1, "rates": [10], "cooldown": "10s"},
        });
        let s: Scenario = serde_json::from_value(v.take()).unwrap();
        let env = vec![EnvSecret {
            var: "SIG".into(),
            value: "S1gFromEnv-991".into(),
        }];
        let secrets = scenario_secrets(&s.endpoint.extra_body, &[], &env);
        let values: Vec<&str> = secrets.iter().map(|(_, v)| v.as_str()).collect();
        for want in ["body-secret-123456", "nested-secret-1234", "S1gFromEnv-991"] {
            assert!(values.contains(&want), "{want} not a secret: {values:?}");
        }
        assert!(!values.contains(&"0.5"), "{values:?}");
        let red = Redactor::new(secrets);
        let shown = redacted_scenario(&s, &[], &[], &env, &red);
        let v = &shown.value;
        assert_eq!(v["endpoint"]["base_url"], "https://gw.example/api?sig=***");
        assert_eq!(v["endpoint"]["headers"]["api_key"], "<redacted>");
        assert_eq!(v["endpoint"]["extra_body"]["api_key"], "<redacted>");
        assert_eq!(
            v["endpoint"]["extra_body"]["options"]["nested_token"],
            "<redacted>"
        );
        assert_eq!(v["endpoint"]["extra_body"]["options"]["temperature"], 0.5);
        assert_eq!(v["endpoint"]["extra_body"]["top_k"], 5);
        assert_eq!(
            v["server_metrics"]["url"],
            "http://10.0.0.5:9400/metrics?token=***&job=a"
        );
        let text = v.to_string();
        for secret in [
            "S1gFromEnv-991",
            "hdr-secret-123456",
            "body-secret-123456",
            "nested-secret-1234",
            "metrics-tok-77",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(shown.unreliable.is_empty(), "{:?}", shown.unreliable);
    }

    #[test]
    fn a_duration_run_records_no_requests_per_rung() {
        let none = Redactor::new(Vec::<(String, String)>::new());
        let counted = redacted_scenario(&scenario(("X", "y")), &[], &[], &[], &none).value;
        assert_eq!(counted["workload"]["requests_per_rung"], 200);
        let mut s = scenario(("X", "y"));
        s.load.duration = Some(crate::scenario::DurationStr(
            std::time::Duration::from_secs(60),
        ));
        let timed = redacted_scenario(&s, &[], &[], &[], &none).value;
        assert!(
            timed["workload"].get("requests_per_rung").is_none(),
            "{timed}"
        );
        assert_eq!(timed["workload"]["input_tokens"], 10);
    }

    #[test]
    fn run_json_scenario_stays_the_scenario_whatever_the_key() {
        let s = scenario(("X-From-Env", "env-secret-value-1"));
        let original = serde_json::to_value(&s).unwrap();
        for key in ["10", "s", "m", "10s", "error_rate", "sk-a-long-enough-key"] {
            let red = Redactor::new([
                ("the API key".to_string(), key.to_string()),
                ("header".to_string(), "env-secret-value-1".to_string()),
                ("query".to_string(), "sk-in-query-9".to_string()),
            ]);
            let shown = redacted_scenario(&s, &["X-From-Env".to_string()], &[], &[], &red);
            let v = &shown.value;
            // Still a scenario, with its own gate rules and settings.
            let back: Scenario =
                serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{key}: {e}"));
            assert_eq!(v["gate"], original["gate"], "{key}");
            assert_eq!(back.load.rates, vec![10.0]);
            assert_eq!(v["endpoint"]["headers"]["Authorization"], "<redacted>");
            assert_eq!(v["endpoint"]["headers"]["X-From-Env"], "<redacted>");
            assert_eq!(v["endpoint"]["headers"]["X-Plain"], "plain");
            assert_eq!(v["endpoint"]["base_url"], "http://127.0.0.1:8000/?key=***");
            let text = v.to_string();
            for secret in ["env-secret-value-1", "sk-in-query-9", "sk-literal-header-1"] {
                assert!(!text.contains(secret), "{key}: {secret} in {text}");
            }
            let short_or_common = key.len() < MIN_SECRET_CHARS || text.contains(key);
            assert_eq!(
                shown.unreliable == vec!["the API key".to_string()],
                short_or_common,
                "{key}"
            );
            if let Some(w) = unreliable_warning(&shown.unreliable) {
                assert!(w.starts_with("the API key is shorter than 8"), "{w}");
            }
        }
    }
}
