//! The scraper: its own task, polling the metrics page during a rung at a fixed interval,
//! plus one scrape at the measured start and one at the end.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::engines::snapshot;
use super::parse::parse;
use super::sanitize::sanitize;
use super::summary::Scraped;
use crate::client::{is_secret_name, ApiKey, FetcherBuildError, Redactor, TextFetcher};
use crate::scenario::types::ServerMetrics;

/// What a rung's scraping produced.
#[derive(Debug, Default)]
pub struct RungScrapes {
    /// Successful scrapes, in time order.
    pub scrapes: Vec<Scraped>,
    /// Failed attempts.
    pub failures: u64,
    /// The first failure, for the run's one warning.
    pub first_error: Option<String>,
    /// Values the sanitizer dropped ([`super::sanitize`]), for the run's one warning.
    pub dropped: super::sanitize::Dropped,
}

/// A scraper running for one rung; [`Scraper::finish`] takes the last scrape and stops it.
pub struct Scraper {
    stop: oneshot::Sender<()>,
    task: JoinHandle<RungScrapes>,
}

impl Scraper {
    /// Start scraping: first at `first_at` (the rung's first measured send), then every
    /// `interval`. The task only sleeps and awaits the fetch: the dispatch loop never waits
    /// for it.
    pub fn start(fetcher: Arc<TextFetcher>, interval: Duration, first_at: Instant) -> Scraper {
        let (_known, when) = watch::channel(Some(first_at));
        Scraper::start_when(fetcher, interval, when)
    }

    /// [`Scraper::start`] once `when` holds the first measured send (a concurrency rung
    /// knows it only when its warmup requests have finished). Nothing is scraped when the
    /// rung ends, or `when`'s sender is dropped, before that.
    pub fn start_when(
        fetcher: Arc<TextFetcher>,
        interval: Duration,
        mut when: watch::Receiver<Option<Instant>>,
    ) -> Scraper {
        let (stop, mut stopped) = oneshot::channel::<()>();
        // At most a year: any longer interval scrapes the same (once at the start, once at the
        // stop), and `next += interval` must not overflow an Instant (`interval:
        // 18446744073709551615s` validates).
        let interval = interval.clamp(
            Duration::from_millis(100),
            Duration::from_secs(365 * 24 * 3600),
        );
        let task = tokio::spawn(async move {
            let mut out = RungScrapes::default();
            let first_at = loop {
                if let Some(t) = *when.borrow_and_update() {
                    break t;
                }
                tokio::select! {
                    changed = when.changed() => if changed.is_err() { return out },
                    _ = &mut stopped => return out,
                }
            };
            let mut next = first_at;
            loop {
                let stop_now = tokio::select! {
                    _ = tokio::time::sleep_until(next) => false,
                    _ = &mut stopped => true,
                };
                one(&fetcher, first_at, &mut out).await;
                if stop_now {
                    break;
                }
                next += interval;
                // A slow page: skip the missed ticks rather than scrape back to back.
                let now = Instant::now();
                while next <= now {
                    next += interval;
                }
            }
            out
        });
        Scraper { stop, task }
    }

    /// Take the end-of-rung scrape and return everything scraped.
    pub async fn finish(self) -> RungScrapes {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

async fn one(fetcher: &TextFetcher, origin: Instant, out: &mut RungScrapes) {
    let t = Instant::now();
    match fetcher.get().await {
        Ok(text) => {
            // Parsed off the async workers: a large page must not delay a send. Every value
            // goes through the sanitizer before anything is computed from it.
            let (snap, dropped) = tokio::task::spawn_blocking(move || {
                let mut page = parse(&text);
                let dropped = sanitize(&mut page);
                (snapshot(&page), dropped)
            })
            .await
            .unwrap_or_default();
            out.dropped.count += dropped.count;
            if out.dropped.first.is_none() {
                out.dropped.first = dropped.first;
            }
            out.scrapes.push(Scraped {
                at: t.saturating_duration_since(origin),
                snap,
            });
        }
        Err(e) => {
            out.failures += 1;
            out.first_error.get_or_insert(e);
        }
    }
}

/// Why scraping cannot be set up ([`ScrapeSetup::new`]); the runner warns with it and goes
/// on without server metrics.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeSetupError {
    /// The metrics URL's scheme is not http or https (the scheme).
    #[error("`{0}` is not an http(s) URL")]
    Scheme(String),
    /// The metrics URL does not parse.
    #[error("the metrics URL is not a URL: {0}")]
    NotAUrl(#[source] url::ParseError),
    /// The page's HTTP client could not be built.
    #[error(transparent)]
    Fetcher(#[from] FetcherBuildError),
}

/// Scraping as set up for a run: the page, how often, and how it is shown in messages.
pub struct ScrapeSetup {
    fetcher: Arc<TextFetcher>,
    interval: Duration,
    /// The URL with any secret query value masked, for warnings.
    pub shown_url: String,
    /// The endpoint's base URL and key, for [`ScrapeSetup::identify`] (never the metrics
    /// page's own key: that one may belong to another host).
    base_url: String,
    endpoint_key: Option<ApiKey>,
    /// Every secret of the run: scrubbed from each page before it is parsed.
    redactor: Redactor,
}

impl ScrapeSetup {
    /// The secrets of the scenario's `server_metrics` section, labelled for the redactor:
    /// the page's own key (`api_key_env`) and the values of the URL's secret-looking query
    /// parameters.
    pub fn secrets(cfg: Option<&ServerMetrics>) -> Vec<(String, String)> {
        let Some(cfg) = cfg else {
            return vec![];
        };
        let mut out: Vec<(String, String)> = cfg
            .api_key_env
            .as_deref()
            .and_then(|v| std::env::var(v).ok().map(|k| (v, k)))
            .filter(|(_, k)| !k.is_empty())
            .map(|(v, k)| (format!("the metrics page's key (${v})"), k))
            .into_iter()
            .collect();
        if let Some(u) = cfg.url.as_deref().and_then(|u| url::Url::parse(u).ok()) {
            out.extend(
                u.query_pairs()
                    .filter(|(k, _)| is_secret_name(k))
                    .map(|(k, v)| {
                        (
                            format!("server_metrics.url query parameter `{k}`"),
                            v.into_owned(),
                        )
                    }),
            );
        }
        out
    }

    /// From the scenario's `server_metrics` (absent: on, at `<base_url>/metrics`).
    /// `base_url` is the resolved one (the simulator's own for `sim`); `endpoint_key` is
    /// sent when the page is on the endpoint's server; `redactor` holds every secret of the
    /// run (with [`ScrapeSetup::secrets`]): each page is scrubbed of them before it is
    /// parsed, so nothing scraped (metric names, label values, identity pages) can carry
    /// one into a result file. `None` when turned off.
    pub fn new(
        cfg: Option<&ServerMetrics>,
        base_url: &str,
        endpoint_key: Option<&ApiKey>,
        redactor: &Redactor,
        shown: impl Fn(&str) -> String,
    ) -> Result<Option<ScrapeSetup>, ScrapeSetupError> {
        let cfg = cfg.cloned().unwrap_or_default();
        if !cfg.enabled {
            return Ok(None);
        }
        let (url, key) = match &cfg.url {
            Some(u) => (
                u.clone(),
                cfg.api_key_env
                    .as_deref()
                    .and_then(|v| std::env::var(v).ok())
                    .filter(|k| !k.is_empty())
                    .map(ApiKey::new),
            ),
            None => (
                super::default_url(base_url),
                match cfg.api_key_env.as_deref() {
                    Some(v) => std::env::var(v)
                        .ok()
                        .filter(|k| !k.is_empty())
                        .map(ApiKey::new),
                    None => endpoint_key.cloned(),
                },
            ),
        };
        // Scenario validation refuses such a URL; a caller that skipped it gets the reason
        // here (and the runner a warning), not a scrape of something else.
        match url::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            Ok(u) => return Err(ScrapeSetupError::Scheme(u.scheme().to_string())),
            Err(e) => return Err(ScrapeSetupError::NotAUrl(e)),
        }
        let interval = cfg.interval.0.max(Duration::from_millis(100));
        // A scrape may take at most the interval (and never more than 5 s): a slow page
        // costs a sample, not the rung.
        let timeout = interval.min(Duration::from_secs(5));
        let fetcher =
            TextFetcher::new(&url, key, timeout, super::MAX_PAGE_BYTES)?.scrubbed_by(redactor);
        Ok(Some(ScrapeSetup {
            fetcher: Arc::new(fetcher),
            interval,
            shown_url: shown(&url),
            base_url: base_url.to_string(),
            endpoint_key: endpoint_key.cloned(),
            redactor: redactor.clone(),
        }))
    }

    /// Ask the endpoint's server who it is, once its metric names told its `engine`
    /// ([`super::identity`]); `None` for other engines and on any failure.
    pub async fn identify(&self, engine: &str) -> Option<super::ServerIdentity> {
        super::identity::fetch(
            engine,
            &self.base_url,
            self.endpoint_key.clone(),
            &self.redactor,
        )
        .await
    }

    /// Start scraping one rung whose first measured request is sent at `first_at`.
    pub fn start(&self, first_at: Instant) -> Scraper {
        Scraper::start(self.fetcher.clone(), self.interval, first_at)
    }

    /// Start scraping one rung once `when` says when its first measured request went out.
    pub fn start_when(&self, when: watch::Receiver<Option<Instant>>) -> Scraper {
        Scraper::start_when(self.fetcher.clone(), self.interval, when)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(url: &str) -> Result<Option<ScrapeSetup>, ScrapeSetupError> {
        let cfg: ServerMetrics = serde_json::from_value(serde_json::json!({ "url": url })).unwrap();
        ScrapeSetup::new(
            Some(&cfg),
            "http://127.0.0.1:9",
            None,
            &Redactor::default(),
            str::to_string,
        )
    }

    #[test]
    fn a_metrics_url_that_is_not_http_says_its_scheme() {
        let e = setup("ftp://10.0.0.5/metrics").err().expect("refused");
        assert!(
            matches!(&e, ScrapeSetupError::Scheme(s) if s == "ftp"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "`ftp` is not an http(s) URL");
    }

    #[test]
    fn a_metrics_url_that_does_not_parse_says_why() {
        let e = setup("not a url").err().expect("refused");
        assert!(
            matches!(
                &e,
                ScrapeSetupError::NotAUrl(url::ParseError::RelativeUrlWithoutBase)
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "the metrics URL is not a URL: relative URL without a base"
        );
    }
}
