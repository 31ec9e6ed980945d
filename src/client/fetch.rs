//! A plain GET of a text page (a server's `/metrics`), on a connection pool of its own so
//! it never queues behind, or takes a connection from, the requests under test.

use std::sync::Arc;
use std::time::Duration;

use super::send::closed_unanswered;
use super::{ApiKey, Redactor};

/// The HTTP client of a [`TextFetcher`] could not be built (reqwest's error).
#[derive(Debug, thiserror::Error)]
#[error("cannot build an HTTP client: {0}")]
pub struct FetcherBuildError(#[source] reqwest::Error);

/// Fetches one URL's body as text, bounded in size and time, with every secret of the run
/// scrubbed from it before anyone reads it ([`TextFetcher::scrubbed_by`]).
pub struct TextFetcher {
    http: reqwest::Client,
    url: String,
    key: Option<ApiKey>,
    max_bytes: usize,
    redactor: Arc<Redactor>,
}

impl TextFetcher {
    /// `timeout` covers the whole exchange; a body over `max_bytes` is an error.
    pub fn new(
        url: &str,
        key: Option<ApiKey>,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<TextFetcher, FetcherBuildError> {
        Self::with_redirects(
            url,
            key,
            timeout,
            max_bytes,
            reqwest::redirect::Policy::default(),
        )
    }

    /// As [`TextFetcher::new`], but a redirect is an error instead of being followed: for a
    /// page whose key must reach `url`'s host and no other.
    pub fn no_redirects(
        url: &str,
        key: Option<ApiKey>,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<TextFetcher, FetcherBuildError> {
        Self::with_redirects(
            url,
            key,
            timeout,
            max_bytes,
            reqwest::redirect::Policy::none(),
        )
    }

    fn with_redirects(
        url: &str,
        key: Option<ApiKey>,
        timeout: Duration,
        max_bytes: usize,
        redirects: reqwest::redirect::Policy,
    ) -> Result<TextFetcher, FetcherBuildError> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            // HTTP/1.1 as the load itself (reqwest's http2 is in the tree for hf-hub's downloads).
            .http1_only()
            .redirect(redirects)
            .pool_max_idle_per_host(1)
            // Below the 5 s after which common servers close an idle connection, as the load's.
            .pool_idle_timeout(super::IDLE_CONNECTION_TIMEOUT)
            .build()
            .map_err(FetcherBuildError)?;
        // The page's own key at least; the run's other secrets come with `scrubbed_by`.
        let redactor = Redactor::new(
            key.iter()
                .map(|k| ("the page's key".to_string(), k.expose().to_string())),
        );
        Ok(TextFetcher {
            http,
            url: url.to_string(),
            key,
            max_bytes,
            redactor: Arc::new(redactor),
        })
    }

    /// Scrubs every secret `redactor` holds (and this page's own key) from the bodies and
    /// errors [`TextFetcher::get`] returns: a page that echoes a key (as a metric name, a
    /// label value, a version string) never hands it to the caller.
    pub fn scrubbed_by(mut self, redactor: &Redactor) -> TextFetcher {
        let own: Vec<(String, String)> = self
            .key
            .iter()
            .map(|k| ("the page's key".to_string(), k.expose().to_string()))
            .collect();
        self.redactor = Arc::new(redactor.clone().with(own));
        self
    }

    /// The body with every secret scrubbed, or what went wrong in one line (no secret in
    /// it). Scrubbing a large page runs off the async workers.
    pub async fn get(&self) -> Result<String, String> {
        let body = self
            .get_raw()
            .await
            .map_err(|e| self.redactor.redact(&e).into_owned())?;
        if self.redactor.is_empty() {
            return Ok(body);
        }
        let redactor = self.redactor.clone();
        tokio::task::spawn_blocking(move || redactor.redact(&body).into_owned())
            .await
            .map_err(|e| format!("the page could not be read: {e}"))
    }

    async fn get_raw(&self) -> Result<String, String> {
        let mut resent = false;
        let mut resp = loop {
            let mut req = self.http.get(&self.url);
            if let Some(k) = &self.key {
                req = req.bearer_auth(k.expose());
            }
            match req.send().await {
                Ok(r) => break r,
                // A kept-alive connection the server closed as this GET went out: once more.
                Err(e) if closed_unanswered(&e) && !resent => resent = true,
                Err(e) => return Err(describe(&e)),
            }
        };
        let status = resp.status();
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 | 403 => " (does it want a key? set server_metrics.api_key_env)",
                404 => " (no metrics there: set server_metrics.url, or enabled: false)",
                _ => "",
            };
            return Err(format!("HTTP {status}{hint}"));
        }
        // The client's timeout bounds the whole exchange.
        let body = super::body::read_bounded(&mut resp, self.max_bytes, None).await;
        match body.end {
            super::body::End::Complete => Ok(String::from_utf8_lossy(&body.bytes).into_owned()),
            super::body::End::OverCap => {
                Err(format!("the page is larger than {} bytes", self.max_bytes))
            }
            super::body::End::Broken(e) => Err(describe(&e)),
            super::body::End::TimedOut => Err("timed out".into()),
        }
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection failed (is the server up, and is /metrics on this port?)".into()
    } else {
        // Without the URL: the caller names it, shown redacted.
        let s = e.to_string();
        match e.url() {
            Some(u) => s.replace(u.as_str(), "<url>"),
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_that_cannot_be_built_says_so_with_the_cause() {
        // Any reqwest error stands in for the builder's (which needs a broken TLS backend).
        let cause = reqwest::Client::new().get("not a url").build().unwrap_err();
        let shown = cause.to_string();
        let e = FetcherBuildError(cause);
        assert_eq!(
            e.to_string(),
            format!("cannot build an HTTP client: {shown}")
        );
        assert!(std::error::Error::source(&e).is_some());
    }
}
