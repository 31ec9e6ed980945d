//! Warnings about a finished rung: the seed's pitfalls, caught by the tool.

use crate::metrics::{Latency, RungSummary};
use crate::results::rate_label;
use crate::scenario::types::Api;
use crate::servermetrics::ScrapeSetupError;

/// Dispatch lag p99 above this may mean the client, not the server, limited the rung.
pub const LAG_WARN_MS: f64 = 10.0;

/// Lag above [`LAG_WARN_MS`] matters only when it is a material part of what the rung
/// measured: at least this share of the median TTFT (latencies are measured from the
/// scheduled send, so the lag is in them) or, on a rate rung, of the mean gap between
/// arrivals (the offered rate was not held). 12 ms of lag beside an 8 s TTFT at 2 req/s
/// changes neither.
pub const LAG_MATERIAL_SHARE: f64 = 0.05;

/// Scraping that cannot be set up costs the server-side metrics, never the run: `None`
/// and one warning (passed through `redact`) instead of an error.
pub fn scrape_or_warning<T>(
    setup: Result<Option<T>, ScrapeSetupError>,
    redact: impl Fn(&str) -> String,
) -> (Option<T>, Option<String>) {
    match setup {
        Ok(s) => (s, None),
        Err(e) => (
            None,
            Some(format!(
                "server metrics are not scraped ({}); the run goes on without them",
                redact(&e.to_string())
            )),
        ),
    }
}

/// `1.5s`, or `40 ms` below a second (short rungs would read `0.0s`).
fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else {
        format!("{s:.1}s")
    }
}

/// The client's limits as they stand, for the client-failure warning ("" when unknown).
fn limits_now() -> String {
    let now = crate::client::client_limits();
    if now.is_empty() {
        now
    } else {
        format!("; this process has {now}")
    }
}

/// Warnings for one rung of a count of requests, each a full sentence with what to do.
#[cfg(test)]
pub fn rung_warnings(s: &RungSummary) -> Vec<String> {
    rung_warnings_for(s, None)
}

/// Warnings for one rung, each a full sentence with what to do; `duration` is the rung's
/// `load.duration` when it ran for one (its length is then raised with that key, not with
/// `requests_per_rung`).
pub fn rung_warnings_for(s: &RungSummary, duration: Option<std::time::Duration>) -> Vec<String> {
    let mut w = Vec::new();
    let rate = s.load.level(s.rate);
    let closed = s.load == crate::scenario::LoadKind::Concurrency;
    // A replay or a ramp is not meant to reach a steady state, and its length is the
    // trace's or the ramp's, not requests_per_rung: no "too short" advice.
    let shaped = s.offered_rate.is_some();
    let e2e = s.stats(Latency::E2el).median / 1000.0;
    let window = if s.rate > 0.0 {
        s.num_prompts as f64 / s.rate
    } else {
        0.0
    };
    // Arrivals spanning less than ~3 request lifetimes never reach steady state: ramp-up
    // and drain dominate and QPS looks capped with no errors (the seed's pitfall). A server
    // that kept up would have served n requests in (window + one request time); when the
    // measured throughput is well below even that, the server is saturated instead and the
    // knee analysis, not this warning, has the story.
    let keeping_up_qps = if window + e2e > 0.0 {
        s.completed as f64 / (window + e2e)
    } else {
        0.0
    };
    let saturated = s.request_throughput < 0.9 * keeping_up_qps;
    // A concurrency rung is in steady state once every user has had a few turns: its
    // users' first requests all start together and its last ones drain alone.
    let per_user = s.num_prompts as f64 / s.rate.max(1.0);
    // A rung cut short by a stop is short because of it, and the stop is reported already.
    let cut = s.interrupted;
    // A rung run for a duration is lengthened with `load.duration`: three request times
    // (for a concurrency rung, three turns of each user, think time aside).
    // The time the rung's warmup took stays; `extra` seconds more of measured sending.
    let longer = |count: u64, extra: f64| match duration {
        Some(d) => format!(
            "raise load.duration to at least {}s",
            (d.as_secs_f64() + extra.max(0.0))
                .ceil()
                .max(d.as_secs_f64().floor() + 1.0) as u64
        ),
        None => format!("raise workload.requests_per_rung to at least {count}"),
    };
    if closed && !cut && s.completed > 0 && per_user < 3.0 {
        w.push(format!(
            "rung {rate} is too short to reach steady state: {} requests over {} users is {per_user:.1} \
             per user, fewer than 3; {}",
            s.num_prompts,
            rate_label(s.rate),
            longer((3.0 * s.rate).ceil() as u64, (3.0 - per_user) * e2e)
        ));
    }
    if !closed && !shaped && !cut && s.completed > 0 && window < 3.0 * e2e && !saturated {
        w.push(format!(
            "rung {rate} is too short to reach steady state: {} over {}, \
             less than 3x the median request time ({}); {}",
            match s.num_prompts {
                1 => "1 request arrives".to_string(),
                n => format!("{n} requests arrive"),
            },
            seconds(window),
            seconds(e2e),
            longer((3.0 * e2e * s.rate).ceil() as u64, 3.0 * e2e - window)
        ));
    }
    let lag = s.stats(Latency::DispatchLag).p99;
    let material = lag_is_material(s, closed);
    // Under a concurrency cap, requests wait for a free slot by design: that wait is lag,
    // but it is the cap, not a slow client, that held them back.
    let capped = !closed
        && s.max_concurrency
            .is_some_and(|c| c > 0 && s.max_concurrent_requests >= u64::from(c));
    if lag > LAG_WARN_MS && capped {
        w.push(format!(
            "rung {rate}: requests waited for one of the load.max_concurrency {} slots \
             (dispatch lag p99 {lag:.1} ms): the cap, not the arrival rate, set the load on \
             this rung",
            s.max_concurrency.unwrap_or_default()
        ));
    } else if lag > LAG_WARN_MS && closed && material {
        w.push(format!(
            "rung {rate}: dispatch lag p99 is {lag:.1} ms (> {LAG_WARN_MS} ms): users waited that \
             long between being ready (previous request done, think time over) and their next \
             send, so this rung measures the client as much as the server"
        ));
    } else if lag > LAG_WARN_MS && material {
        w.push(format!(
            "rung {rate}: dispatch lag p99 is {lag:.1} ms (> {LAG_WARN_MS} ms): the client \
             fell behind its schedule, so this rung measures the client as much as the server"
        ));
    }
    let client = s.client_failures();
    if client > 0 {
        w.push(format!(
            "rung {rate}: {client} of {} requests failed on the client, not the server \
             (client_resource: out of open files, local ports or socket memory{}); {}. This \
             rung does not measure the server: the analysis and compare/gate leave it out; \
             the requests file says which limit each one hit",
            s.num_prompts,
            limits_now(),
            crate::record::CLIENT_RESOURCE_FIX
        ));
    }
    w
}

/// Whether a rung's dispatch lag p99 is a material part of what it measured
/// ([`LAG_MATERIAL_SHARE`]): of its median TTFT (its median E2E for requests with no first
/// token: embeddings, rerank; unknown counts as material) or, on a rate rung, of the mean
/// gap between arrivals.
fn lag_is_material(s: &RungSummary, closed: bool) -> bool {
    let lag = s.stats(Latency::DispatchLag).p99;
    let part_of = |whole: f64| whole.is_nan() || whole <= 0.0 || lag >= LAG_MATERIAL_SHARE * whole;
    // A replay's or a ramp's `rate` is its speed or final rate: its own offered rate counts.
    let per_s = s.offered_rate.unwrap_or(s.rate);
    let gap_ms = 1000.0 / per_s;
    let ttft = s.stats(Latency::Ttft).median;
    let measured = if ttft.is_nan() {
        s.stats(Latency::E2el).median
    } else {
        ttft
    };
    part_of(measured) || (!closed && per_s > 0.0 && part_of(gap_ms))
}

/// Server-counted tokens may differ from ladder's by this many per request (a BOS token, a
/// prompt off by one), or by this fraction, before it is worth a warning.
pub const TOKEN_TOLERANCE: f64 = 2.0;
/// See [`TOKEN_TOLERANCE`].
pub const TOKEN_TOLERANCE_FRACTION: f64 = 0.02;

fn beyond_tolerance(server: f64, requested: f64) -> bool {
    (server - requested).abs() > TOKEN_TOLERANCE.max(TOKEN_TOLERANCE_FRACTION * requested)
}

/// The rung's prefix-cache share is high though its workload sends prompts no server has
/// seen (`servermetrics::cache`); `cycles`: the rung cycled a prompt pool; `overhead`: the
/// prompt tokens preflight measured the server adding
/// ([`crate::servermetrics::cache::template_share`]).
pub fn cache_warning(
    s: &RungSummary,
    workload: &crate::scenario::Workload,
    cycles: bool,
    overhead: Option<i64>,
) -> Option<String> {
    use crate::servermetrics::cache;
    let share = s.server.cache_share()?;
    let cold = workload.cache_nonce.is_some();
    if cache::expected_reuse(workload, cold, cycles).is_some() {
        return None;
    }
    let template = cache::template_share(
        s.tokens.mean_server_input_tokens,
        s.tokens.requested_input_tokens,
        overhead,
    );
    cache::high_share_warning(&s.load.level(s.rate), share, template)
}

/// Warnings from the rung's token accounting: the server counted other numbers of prompt or
/// output tokens than ladder asked for, or sent usage too absurd to trust. Each names the
/// likely cause for `api` (a chat template adds prompt tokens; completions should match),
/// or the tokenizer when preflight found it to be another model's (`tokenizer_mismatch`).
pub fn token_warnings(
    s: &RungSummary,
    api: Api,
    ignore_eos: bool,
    tokenizer_mismatch: bool,
) -> Vec<String> {
    let mut w = Vec::new();
    let rate = s.load.level(s.rate);
    let t = &s.tokens;
    if t.untrusted_usage > 0 {
        w.push(format!(
            "rung {rate}: {} of {} requests reported implausible usage ({}); ladder ignored \
             it and counted their output tokens itself (token_source and usage_rejected in \
             {}); check the server's or gateway's token accounting",
            t.untrusted_usage,
            s.num_prompts,
            t.untrusted_usage_reason
                .as_deref()
                .unwrap_or("absurd counts"),
            crate::results::requests_file_name(s.rate),
        ));
    }
    if let Some(server) = t.mean_server_input_tokens {
        let asked = t.requested_input_tokens;
        if beyond_tolerance(server, asked) {
            let diff = server - asked;
            let cause = match (api, diff > 0.0) {
                _ if tokenizer_mismatch => {
                    "the tokenizer mismatch preflight warned of (the server's count and \
                     ladder's grow apart with the prompt's length: `tokenizer` is likely not \
                     the served model's); ladder's input token counts and throughputs are in \
                     its tokenizer's tokens"
                }
                (Api::Chat, true) => {
                    "likely the chat template's overhead (api: chat wraps each message in role \
                     markers and may add a system prompt) and, with `workload.images`, the \
                     images' tokens; ladder's input token counts and throughputs cover the \
                     prompt text only"
                }
                // The server applies its chat template to a Messages or Responses request too
                // (llama-server: the same +30 as chat for SmolLM2).
                (Api::Messages | Api::Responses, true) => {
                    "likely the chat template's overhead (the server wraps the message or input \
                     in its chat template's role markers and may add a system prompt); ladder's \
                     input token counts and throughputs cover the prompt text only"
                }
                (_, true) => {
                    "likely a tokenizer/model mismatch (does `tokenizer` belong to the served \
                     model?) or tokens the server adds (BOS)"
                }
                (_, false) => {
                    "likely the server truncated the prompts (context limit or a truncation \
                     setting) or a tokenizer/model mismatch (does `tokenizer` belong to the \
                     served model?)"
                }
            };
            w.push(format!(
                "rung {rate}: the server counted {:.1} prompt tokens per request, ladder \
                 sent {asked:.1} ({diff:+.1}): {cause}",
                server
            ));
        }
    }
    if let Some(server) = t.mean_server_output_tokens {
        let asked = t.requested_output_tokens;
        // Without ignore_eos a model may stop early; only more than asked is then suspicious.
        let short = ignore_eos && server < asked;
        if beyond_tolerance(server, asked) && (short || server > asked) {
            let cause = if short {
                "the server does not honour ignore_eos, or it stopped at its context limit \
                 (truncation)"
            } else {
                "its usage counts tokens beyond the generated text (reasoning or special \
                 tokens), or a tokenizer/model mismatch"
            };
            w.push(format!(
                "rung {rate}: the server counted {server:.1} output tokens per request, \
                 {asked:.1} were asked for (max_tokens): {cause}"
            ));
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Stats;

    /// A metrics URL that cannot be set up (here a scheme the scraper refuses) is one
    /// warning, redacted, and no scraping: never a failed run.
    #[test]
    fn a_scrape_setup_failure_is_a_warning_not_an_error() {
        use crate::scenario::types::ServerMetrics;
        let cfg: ServerMetrics = serde_json::from_value(
            serde_json::json!({"url": "ftp://10.0.0.5/metrics?token=s3cr3t"}),
        )
        .unwrap();
        let setup = crate::servermetrics::ScrapeSetup::new(
            Some(&cfg),
            "http://127.0.0.1:9/v1",
            None,
            &crate::client::Redactor::default(),
            str::to_string,
        );
        assert!(setup.is_err());
        let (s, w) = scrape_or_warning(setup, |e| e.replace("s3cr3t", "***"));
        assert!(s.is_none());
        let w = w.expect("a warning");
        assert!(
            w.contains("not an http(s) URL") && w.contains("goes on"),
            "{w}"
        );
        assert!(!w.contains("s3cr3t"), "{w}");
        // Set up fine (here: turned off): no warning.
        let off: ServerMetrics =
            serde_json::from_value(serde_json::json!({"enabled": false})).unwrap();
        let (s, w) = scrape_or_warning(
            crate::servermetrics::ScrapeSetup::new(
                Some(&off),
                "http://127.0.0.1:9",
                None,
                &crate::client::Redactor::default(),
                str::to_string,
            ),
            str::to_string,
        );
        assert!(s.is_none() && w.is_none());
    }

    /// A rung whose server kept up: its throughput is what ramp-up and drain allow.
    fn rung(rate: f64, n: u64, e2e_ms: f64) -> RungSummary {
        let mut s = RungSummary {
            rate,
            num_prompts: n,
            completed: n,
            request_throughput: n as f64 / (n as f64 / rate + e2e_ms / 1000.0),
            ..Default::default()
        };
        s.latency.insert(
            Latency::E2el,
            Stats {
                median: e2e_ms,
                ..Default::default()
            },
        );
        s
    }

    #[test]
    fn short_rung_is_flagged_with_the_needed_count() {
        let w = rung_warnings(&rung(50.0, 200, 2000.0));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("at least 300"), "{}", w[0]);
        assert!(
            w[0].contains("over 4.0s") && w[0].contains("(2.0s)"),
            "{}",
            w[0]
        );
        let w = rung_warnings(&rung(400.0, 24, 30.0));
        assert!(
            w[0].contains("over 60 ms") && w[0].contains("(30 ms)"),
            "{}",
            w[0]
        );
        assert!(rung_warnings(&rung(5.0, 200, 2000.0)).is_empty());
    }

    #[test]
    fn a_short_rung_s_hint_fits_its_kind_and_an_interrupted_one_gets_none() {
        let timed = Some(std::time::Duration::from_secs(4));
        // A rate rung run for a duration: its length is load.duration, not a count.
        let w = rung_warnings_for(&rung(50.0, 200, 2000.0), timed);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("raise load.duration to at least 6s"),
            "{}",
            w[0]
        );
        assert!(!w[0].contains("requests_per_rung"), "{}", w[0]);
        // A concurrency rung: by count, requests_per_rung; for a duration, load.duration.
        let mut users = rung(8.0, 12, 2000.0);
        users.load = crate::scenario::LoadKind::Concurrency;
        let w = rung_warnings(&users);
        assert!(
            w[0].contains("requests_per_rung to at least 24"),
            "{}",
            w[0]
        );
        let w = rung_warnings_for(&users, timed);
        assert_eq!(w.len(), 1, "{w:?}");
        // 1.5 turns a user in 4 s; 1.5 more of 2 s each: 7 s.
        assert!(
            w[0].contains("raise load.duration to at least 7s"),
            "{}",
            w[0]
        );
        // Warmup took most of a 2 s rung: one measured request over 100 ms. The advice
        // keeps the warmup's time and adds what the measured part lacks (2 + 1.5 - 0.1).
        let w = rung_warnings_for(
            &rung(10.0, 1, 500.0),
            Some(std::time::Duration::from_secs(2)),
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("1 request arrives over 100 ms"), "{}", w[0]);
        assert!(
            w[0].contains("raise load.duration to at least 4s"),
            "{}",
            w[0]
        );
        // Cut short by a stop: short because of it, and the stop is reported already.
        for mut s in [rung(50.0, 200, 2000.0), users] {
            s.interrupted = true;
            assert!(rung_warnings(&s).is_empty());
            assert!(rung_warnings_for(&s, timed).is_empty());
        }
    }

    #[test]
    fn a_saturated_rung_is_not_called_short() {
        // 200 requests offered over 4 s with 2 s requests: a server keeping up would finish
        // in about 6 s (33 req/s); 10 req/s means it is saturated, not that the rung is short.
        let mut s = rung(50.0, 200, 2000.0);
        s.request_throughput = 10.0;
        assert!(rung_warnings(&s).is_empty());
        // Throughput explained by ramp-up and drain alone: the rung is too short.
        s.request_throughput = 32.0;
        assert_eq!(rung_warnings(&s).len(), 1);
    }

    #[test]
    fn lag_is_flagged_and_failures_are_left_to_their_own_warning() {
        let mut s = rung(5.0, 200, 100.0);
        s.latency.insert(
            Latency::DispatchLag,
            Stats {
                p99: 25.0,
                ..Default::default()
            },
        );
        s.completed = 100;
        s.failed = 100;
        s.errors_by_class.insert("auth".into(), 100);
        let w = rung_warnings(&s);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("dispatch lag"));
    }

    #[test]
    fn lag_small_beside_the_latencies_and_the_arrival_gap_is_not_flagged() {
        // As on the real llama.cpp server at 2 req/s past its capacity: 12 ms of lag
        // beside a median TTFT of 7.8 s and a mean gap of 500 ms between arrivals.
        let mut s = rung(2.0, 40, 11_000.0);
        let set = |s: &mut RungSummary, lag: f64, ttft: f64| {
            s.latency.insert(
                Latency::DispatchLag,
                Stats {
                    p99: lag,
                    ..Default::default()
                },
            );
            s.latency.insert(
                Latency::Ttft,
                Stats {
                    median: ttft,
                    ..Default::default()
                },
            );
        };
        s.request_throughput = 1.09;
        set(&mut s, 12.0, 7795.0);
        assert!(
            !rung_warnings(&s).iter().any(|w| w.contains("dispatch lag")),
            "{:?}",
            rung_warnings(&s)
        );
        // The same lag beside a 100 ms TTFT is 12 % of it: flagged.
        set(&mut s, 12.0, 100.0);
        assert!(rung_warnings(&s).iter().any(|w| w.contains("fell behind")));
        // A long TTFT but a rate whose gap between arrivals is 20 ms: flagged.
        s.rate = 50.0;
        set(&mut s, 12.0, 7795.0);
        assert!(rung_warnings(&s).iter().any(|w| w.contains("fell behind")));
        // A closed loop has no arrival gap: only the TTFT share counts.
        s.load = crate::scenario::LoadKind::Concurrency;
        assert!(!rung_warnings(&s).iter().any(|w| w.contains("dispatch lag")));
        set(&mut s, 12.0, 100.0);
        assert!(rung_warnings(&s).iter().any(|w| w.contains("users waited")));
    }

    /// Embeddings and rerank have no first token: the lag is weighed against their E2E (it
    /// used to count as material whatever its size: 13.6 ms beside 8.4 s warned).
    #[test]
    fn lag_beside_an_untimed_first_token_is_weighed_against_e2e() {
        let mut s = rung(2.0, 40, 11_000.0);
        s.request_throughput = 1.03;
        s.latency.insert(
            Latency::DispatchLag,
            Stats {
                p99: 13.6,
                ..Default::default()
            },
        );
        s.latency.insert(
            Latency::Ttft,
            Stats {
                median: f64::NAN,
                ..Default::default()
            },
        );
        let e2e = |s: &mut RungSummary, ms: f64| {
            s.latency.insert(
                Latency::E2el,
                Stats {
                    median: ms,
                    ..Default::default()
                },
            );
        };
        e2e(&mut s, 8437.0);
        assert!(
            !rung_warnings(&s).iter().any(|w| w.contains("dispatch lag")),
            "{:?}",
            rung_warnings(&s)
        );
        e2e(&mut s, 100.0);
        assert!(rung_warnings(&s).iter().any(|w| w.contains("fell behind")));
    }

    #[test]
    fn client_side_failures_are_named_and_never_called_overload() {
        let mut s = rung(5.0, 200, 100.0);
        s.completed = 100;
        s.failed = 100;
        s.errors_by_class
            .insert(crate::record::CLIENT_RESOURCE_KEY.into(), 100);
        let w = rung_warnings(&s);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("failed on the client"), "{}", w[0]);
        #[cfg(target_os = "linux")]
        assert!(w[0].contains("open-file limit (ulimit -n) "), "{}", w[0]);
        for fix in [
            "ulimit -n",
            "net.ipv4.ip_local_port_range",
            "max_concurrency",
        ] {
            assert!(w[0].contains(fix), "{}", w[0]);
        }
        assert!(!w.iter().any(|x| x.contains("overloaded")), "{w:?}");
    }

    #[test]
    fn lag_under_a_full_concurrency_cap_blames_the_cap() {
        let mut s = rung(5.0, 200, 100.0);
        s.latency.insert(
            Latency::DispatchLag,
            Stats {
                p99: 25.0,
                ..Default::default()
            },
        );
        s.max_concurrency = Some(4);
        s.max_concurrent_requests = 4;
        let w = rung_warnings(&s);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("max_concurrency 4 slots"), "{}", w[0]);
        assert!(!w[0].contains("fell behind"), "{}", w[0]);
        // A cap that was never reached does not explain the lag.
        s.max_concurrent_requests = 2;
        assert!(rung_warnings(&s)[0].contains("fell behind"));
    }

    fn tokens(asked_in: f64, server_in: f64, asked_out: f64, server_out: f64) -> RungSummary {
        let mut s = rung(2.0, 4, 100.0);
        s.tokens = crate::metrics::TokenAccounting {
            requested_input_tokens: asked_in,
            mean_server_input_tokens: Some(server_in),
            requested_output_tokens: asked_out,
            mean_server_output_tokens: Some(server_out),
            mean_output_tokens: server_out,
            server_usage_requests: 4,
            ..Default::default()
        };
        s
    }

    /// A cold rung answered from the cache is warned about; a warm one, a shared-prefix one
    /// and one whose high share the server's chat template explains are not.
    #[test]
    fn a_high_cache_share_is_warned_only_when_no_reuse_is_expected() {
        let mut s = tokens(64.0, 64.0, 8.0, 8.0);
        s.server
            .values
            .insert(crate::servermetrics::CACHE_SHARE.into(), 0.75);
        let mut cold: crate::scenario::Workload =
            serde_json::from_value(serde_json::json!({})).unwrap();
        cold.cache_nonce = Some(1);
        let w = cache_warning(&s, &cold, false, None).expect("a warning");
        assert!(
            w.starts_with("rung 2 req/s: the server answered 75%"),
            "{w}"
        );
        assert_eq!(cache_warning(&s, &cold, true, None), None, "a cycled pool");
        let mut warm = cold.clone();
        warm.cache = crate::scenario::CacheMode::Warm;
        assert_eq!(cache_warning(&s, &warm, false, None), None);
        let mut old = cold.clone();
        old.cache_nonce = None;
        assert_eq!(
            cache_warning(&s, &old, false, None),
            None,
            "no nonce: the seed's text"
        );
        // 30 of 94 prompt tokens are the server's own template: up to 52 % is expected.
        let mut chat = tokens(64.0, 94.0, 8.0, 8.0);
        chat.server
            .values
            .insert(crate::servermetrics::CACHE_SHARE.into(), 0.45);
        assert_eq!(cache_warning(&chat, &cold, false, None), None);
        // No share exported: nothing to say.
        assert_eq!(
            cache_warning(&tokens(64.0, 64.0, 8.0, 8.0), &cold, false, None),
            None
        );
        // input_length: server: the prompts were shortened by the 30 template tokens
        // preflight measured, so the server counts the 64 asked; 50 % shared is the
        // template's 47 % plus little, not another client.
        let mut fitted = tokens(64.0, 64.0, 8.0, 8.0);
        fitted
            .server
            .values
            .insert(crate::servermetrics::CACHE_SHARE.into(), 0.50);
        assert!(cache_warning(&fitted, &cold, false, None).is_some());
        assert_eq!(cache_warning(&fitted, &cold, false, Some(30)), None);
        // The measured overhead allows its own share, not any share.
        fitted
            .server
            .values
            .insert(crate::servermetrics::CACHE_SHARE.into(), 0.90);
        assert!(cache_warning(&fitted, &cold, false, Some(30)).is_some());
    }

    #[test]
    fn matching_token_counts_say_nothing() {
        assert!(token_warnings(
            &tokens(128.0, 128.0, 8.0, 8.0),
            Api::Completions,
            true,
            false
        )
        .is_empty());
        // Within tolerance: a BOS token.
        assert!(token_warnings(&tokens(128.0, 129.0, 8.0, 8.0), Api::Chat, true, false).is_empty());
        // Early EOS without ignore_eos is normal.
        assert!(token_warnings(
            &tokens(128.0, 128.0, 32.0, 5.0),
            Api::Completions,
            false,
            false
        )
        .is_empty());
    }

    #[test]
    fn token_mismatches_name_the_likely_cause() {
        let w = token_warnings(&tokens(128.0, 159.0, 8.0, 8.0), Api::Chat, true, false);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("159.0") && w[0].contains("+31.0"), "{}", w[0]);
        assert!(w[0].contains("chat template"), "{}", w[0]);
        let w = token_warnings(
            &tokens(128.0, 159.0, 8.0, 8.0),
            Api::Completions,
            true,
            false,
        );
        assert!(w[0].contains("tokenizer/model mismatch"), "{}", w[0]);
        // Preflight found the tokenizer to be another model's: chat names it, not a template.
        let w = token_warnings(&tokens(128.0, 159.0, 8.0, 8.0), Api::Chat, true, true);
        assert!(
            w[0].contains("the tokenizer mismatch preflight warned of")
                && !w[0].contains("chat template"),
            "{}",
            w[0]
        );
        // Servers template Messages and Responses requests as chat (llama-server: +30).
        for api in [Api::Messages, Api::Responses] {
            let w = token_warnings(&tokens(32.0, 62.0, 8.0, 8.0), api, true, false);
            assert!(
                w[0].contains("chat template") && !w[0].contains("mismatch"),
                "{}",
                w[0]
            );
        }
        let w = token_warnings(&tokens(512.0, 300.0, 8.0, 8.0), Api::Chat, true, false);
        assert!(w[0].contains("truncated"), "{}", w[0]);
        let w = token_warnings(
            &tokens(128.0, 128.0, 32.0, 5.0),
            Api::Completions,
            true,
            false,
        );
        assert!(w[0].contains("ignore_eos"), "{}", w[0]);
        let mut s = tokens(128.0, 128.0, 8.0, 8.0);
        s.tokens.untrusted_usage = 2;
        s.tokens.untrusted_usage_reason =
            Some("completion_tokens is more than twice max_tokens".into());
        let w = token_warnings(&s, Api::Completions, true, false);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("2 of 4 requests") && w[0].contains("twice max_tokens"),
            "{}",
            w[0]
        );
        // The real file name, not the rung's level ("requests_rate_5 req/s.jsonl").
        let file = crate::results::requests_file_name(s.rate);
        assert!(
            w[0].contains(&format!("usage_rejected in {file})")),
            "{}",
            w[0]
        );
        assert!(!w[0].contains("req/s.jsonl"), "{}", w[0]);
    }
}
