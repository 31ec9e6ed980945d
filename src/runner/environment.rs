//! Facts recorded in run.json: host, git commit, tokenizer hash, redacted scenario.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::results::HostInfo;

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

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// Header names whose values are credentials and never written to a result.
fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "authorization",
        "cookie",
        "key",
        "token",
        "secret",
        "password",
    ]
    .iter()
    .any(|s| n.contains(s))
}

/// The scenario as written to run.json: secret-looking header values replaced, and the
/// key's value (should a template have put it anywhere) removed by `redact`.
pub fn redacted_scenario(
    scenario: &crate::scenario::Scenario,
    redact: &dyn Fn(&str) -> String,
) -> serde_json::Value {
    let mut s = scenario.clone();
    for (name, value) in s.endpoint.headers.iter_mut() {
        if is_secret_header(name) {
            *value = "<redacted>".into();
        }
    }
    let text = serde_json::to_string(&s).expect("scenario serialises");
    serde_json::from_str(&redact(&text)).unwrap_or(serde_json::Value::Null)
}

/// The endpoint as recorded: `sim`, or the base URL without credentials.
pub fn endpoint_label(base_url: &str) -> String {
    match base_url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((_, host)) => format!("{scheme}://{host}"),
            None => base_url.to_string(),
        },
        None => base_url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_label_drops_credentials() {
        assert_eq!(
            endpoint_label("https://user:pw@gw.example/api"),
            "https://gw.example/api"
        );
        assert_eq!(endpoint_label("sim"), "sim");
    }

    #[test]
    fn secret_headers() {
        assert!(is_secret_header("Authorization"));
        assert!(is_secret_header("X-Api-Key"));
        assert!(!is_secret_header("X-Request-Source"));
    }
}
