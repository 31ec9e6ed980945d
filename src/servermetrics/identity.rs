//! The server's identity (engine version, model), asked once per run where an engine exposes
//! it cheaply: vLLM `GET /version` → `{"version"}`, llama.cpp `GET /props` → `build_info`,
//! `model_path`, SGLang `GET /get_server_info` → `version`, `model_path`. Best effort: a
//! short timeout, any failure is just no identity, and never a failed run. The page is on
//! the endpoint's own origin (`base_url` without its `/v1`), redirects are not followed, so
//! the endpoint's key never reaches another host.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client::{ApiKey, Redactor, TextFetcher};

/// Longest wait for the identity page.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Largest identity page read (SGLang's server info is a few KiB).
const MAX_BYTES: usize = 1024 * 1024;
/// Longest value kept.
const MAX_CHARS: usize = 200;

/// What a server says it is (run.json `server`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerIdentity {
    /// `vllm`, `llama.cpp` or `sglang` (as told from its metric names).
    pub engine: String,
    /// The page asked, e.g. `/version`.
    pub source: String,
    /// Engine version or build (`0.8.5`, llama.cpp's `b5123-abcdef0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The model the server loaded (a path or name), where the page says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The identity page of an engine (by its `server_engine` name), if it has one.
pub fn page_of(engine: &str) -> Option<&'static str> {
    match engine {
        "vllm" => Some("/version"),
        "llama.cpp" => Some("/props"),
        "sglang" => Some("/get_server_info"),
        _ => None,
    }
}

/// `<base_url's origin and path without a trailing /v1><page>`, or `None` when base_url is
/// no http(s) URL.
pub fn url_of(base_url: &str, page: &str) -> Option<String> {
    let mut u = url::Url::parse(base_url).ok()?;
    if !matches!(u.scheme(), "http" | "https") {
        return None;
    }
    let path = u.path().trim_end_matches('/');
    let path = path.strip_suffix("/v1").unwrap_or(path).to_string();
    u.set_path(&format!("{path}{page}"));
    u.set_query(None);
    u.set_fragment(None);
    Some(u.to_string())
}

/// Text from a server, fit for run.json and a terminal: printable, at most 200 characters.
fn plain(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    let s: String = s
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_CHARS)
        .collect();
    (!s.is_empty()).then_some(s)
}

/// Read an identity page's body; `None` when it says nothing ladder knows.
pub fn parse(engine: &str, body: &str) -> Option<ServerIdentity> {
    let page = page_of(engine)?;
    let v: Value = serde_json::from_str(body).ok()?;
    let (version, model) = match engine {
        "vllm" => (plain(&v["version"]), None),
        "llama.cpp" => (
            plain(&v["build_info"]),
            plain(&v["model_path"]).or_else(|| plain(&v["model_alias"])),
        ),
        _ => (plain(&v["version"]), plain(&v["model_path"])),
    };
    (version.is_some() || model.is_some()).then(|| ServerIdentity {
        engine: engine.to_string(),
        source: page.to_string(),
        version,
        model,
    })
}

/// Ask the server at `base_url` who it is (see the module notes); `None` on any failure. The
/// page is scrubbed of `redactor`'s secrets before it is read.
pub async fn fetch(
    engine: &str,
    base_url: &str,
    key: Option<ApiKey>,
    redactor: &Redactor,
) -> Option<ServerIdentity> {
    let url = url_of(base_url, page_of(engine)?)?;
    let fetcher = TextFetcher::no_redirects(&url, key, TIMEOUT, MAX_BYTES)
        .ok()?
        .scrubbed_by(redactor);
    parse(engine, &fetcher.get().await.ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_on_the_endpoints_own_origin() {
        assert_eq!(
            url_of("http://127.0.0.1:8000/v1", "/version").as_deref(),
            Some("http://127.0.0.1:8000/version")
        );
        assert_eq!(
            url_of("https://gw.example/llm/v1/?k=secret", "/props").as_deref(),
            Some("https://gw.example/llm/props")
        );
        assert_eq!(url_of("sim", "/version"), None);
        assert_eq!(page_of("tgi"), None);
    }

    #[test]
    fn each_engines_page_is_read() {
        let v = parse("vllm", r#"{"version":"0.8.5.post1"}"#).unwrap();
        assert_eq!(v.version.as_deref(), Some("0.8.5.post1"));
        assert_eq!(v.source, "/version");
        let l = parse(
            "llama.cpp",
            r#"{"build_info":"b5123-abc","model_path":"/m/x.gguf","total_slots":4}"#,
        )
        .unwrap();
        assert_eq!(
            (l.version.as_deref(), l.model.as_deref()),
            (Some("b5123-abc"), Some("/m/x.gguf"))
        );
        let s = parse(
            "sglang",
            r#"{"version":"0.4.6","model_path":"meta-llama/Llama-3.1-8B-Instruct"}"#,
        )
        .unwrap();
        assert_eq!(s.model.as_deref(), Some("meta-llama/Llama-3.1-8B-Instruct"));
        // Not JSON, nothing known, or a control-character payload: kept plain or dropped.
        assert_eq!(parse("vllm", "<html>"), None);
        assert_eq!(parse("vllm", r#"{"other":1}"#), None);
        let e = parse("vllm", "{\"version\":\"1.0\\u001b[2J\"}").unwrap();
        assert_eq!(e.version.as_deref(), Some("1.0[2J"));
    }

    /// The page is asked of base_url's host with the endpoint's key; a redirect elsewhere
    /// is not followed, so the key never reaches another host.
    #[tokio::test]
    async fn a_redirect_is_not_followed_so_the_key_stays_on_its_host() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let other_addr = other.local_addr().unwrap();
        let first = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = first.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = first.accept().await.unwrap();
            let mut buf = vec![0; 8192];
            let n = s.read(&mut buf).await.unwrap();
            let req = String::from_utf8_lossy(&buf[..n]).into_owned();
            let resp = format!(
                "HTTP/1.1 302 Found\r\nLocation: http://{other_addr}/version\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            s.write_all(resp.as_bytes()).await.unwrap();
            req
        });
        let key = ApiKey::new("fake-test-key");
        let got = fetch(
            "vllm",
            &format!("http://{addr}/v1"),
            Some(key),
            &Redactor::default(),
        )
        .await;
        assert_eq!(got, None);
        let req = server.await.unwrap();
        assert!(req.starts_with("GET /version "), "{req}");
        assert!(
            req.to_lowercase().contains("authorization: bearer"),
            "{req}"
        );
        // A followed redirect would have connected before `fetch` returned.
        let followed = tokio::time::timeout(Duration::from_millis(50), other.accept()).await;
        assert!(followed.is_err(), "the redirect was followed");
    }
}
