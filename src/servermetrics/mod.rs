//! Server-side metrics: scraping the engine's Prometheus `/metrics` page during each rung,
//! mapping each engine's names to one set of concepts, and reducing the scrapes to the
//! `server_*` keys of a rung's result file and a time series beside it.
//!
//! A scrape failure never fails a run: the runner notes it once and goes on.

pub(crate) mod cache;
pub(crate) mod engines;
pub(crate) mod identity;
pub(crate) mod parse;
pub(crate) mod sanitize;
pub(crate) mod scrape;
pub(crate) mod summary;

pub use engines::{Concept, Engine, Snapshot};
pub use identity::ServerIdentity;
pub use scrape::{RungScrapes, ScrapeSetup, ScrapeSetupError, Scraper};
pub use summary::{describe_change, saturation, series_line, ServerSummary, CACHE_SHARE};

/// Largest metrics page read; a bigger one is a scrape failure (vLLM's is ~100 KiB).
pub const MAX_PAGE_BYTES: usize = 8 * 1024 * 1024;

/// The default metrics URL of a server: `<base_url>/metrics`, without the base URL's query.
pub fn default_url(base_url: &str) -> String {
    match url::Url::parse(base_url) {
        Ok(mut u) => {
            let path = format!("{}/metrics", u.path().trim_end_matches('/'));
            u.set_path(&path);
            u.set_query(None);
            u.to_string()
        }
        Err(_) => format!("{}/metrics", base_url.trim_end_matches('/')),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_url_appends_metrics_and_drops_the_query() {
        assert_eq!(
            super::default_url("http://127.0.0.1:8000"),
            "http://127.0.0.1:8000/metrics"
        );
        assert_eq!(
            super::default_url("https://gw.example/api/?api-version=1"),
            "https://gw.example/api/metrics"
        );
    }
}
