//! The warning for a rung whose server error rate passed the seed's 5 % line, naming what
//! the failures say about the server instead of calling every one of them overload.
//!
//! Only errors that grew with the load are overload. A dead or restarting server refuses
//! connections at any load; a server that answers 500 at the lowest rung has a fault; a
//! rate limiter's 429s are its policy; broken streams and malformed answers are a server or
//! gateway bug. The warning names the dominant kind, and calls a rung overloaded only when
//! its error rate rose from the rung below it. One cause keeps one name over a run: once 429s
//! grew with the load from a clean rung, every rung above that still sheds with 429s is called
//! overloaded too, not "rate-limited" because its own rung below had already failed; and once
//! other failures (5xx such as 503, timeouts) grew with the load from a clean rung, a rung
//! above that fails the same way is overloaded too, not "a server fault".

use crate::metrics::RungSummary;
use crate::record::CLIENT_RESOURCE_KEY;

/// A server error rate above this gets a warning (the seed's 5 % overload line).
pub const OVERLOAD_ERROR_RATE: f64 = 0.05;

/// The rung below this one in the same repeat, as far as the failure warning needs it.
#[derive(Debug, Clone)]
pub struct LowerRung {
    /// Its level for humans (`2 req/s`, `4 users`).
    pub level: String,
    /// Its server error rate (client-side failures left out).
    pub error_rate: f64,
    /// The level at which 429s first grew with the load from a clean rung below, when a
    /// rung at or below this one was called overloaded for it: the rungs above keep that
    /// story.
    pub shed_from: Option<String>,
    /// The level at which other failures (5xx, timeouts: not 429s, refused connections,
    /// broken answers or resets) first grew with the load from a clean rung below.
    pub failing_from: Option<String>,
}

impl LowerRung {
    /// What the failure warning needs of `s`; none when it measured no request on the
    /// server (all warmup, or all failed on the client): its 0 % says nothing.
    pub fn of(s: &RungSummary) -> Option<Self> {
        let measured = (s.completed + s.failed).saturating_sub(s.client_failures());
        (measured > 0).then(|| Self {
            level: s.load.level(s.rate),
            error_rate: s.server_error_rate(),
            shed_from: None,
            failing_from: None,
        })
    }

    /// The rung just below a rung, from every rung measured below it in the same repeat (any
    /// order), with the level from which 429s grew with the load, if they did.
    pub fn below(rungs: &[&RungSummary]) -> Option<Self> {
        let mut sorted: Vec<&RungSummary> = rungs.to_vec();
        sorted.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let mut prev: Option<Self> = None;
        let mut shed_from: Option<String> = None;
        let mut failing_from: Option<String> = None;
        for s in sorted {
            let Some(here) = Self::of(s) else { continue };
            match grew_with_load(s, prev.as_ref()) {
                Some(Grew::RateLimit) if shed_from.is_none() => {
                    shed_from = Some(here.level.clone())
                }
                Some(Grew::Errors) if failing_from.is_none() => {
                    failing_from = Some(here.level.clone())
                }
                _ => {}
            }
            prev = Some(here);
        }
        prev.map(|p| Self {
            shed_from,
            failing_from,
            ..p
        })
    }
}

/// What most (at least half) of a rung's failures are, the client's own left out, in the
/// order the warning names them: one reading for [`cause`] and [`grew_with_load`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dominant {
    /// 429s.
    RateLimit,
    /// Refused connections.
    Connect,
    /// Broken or unparsable answers (`stream_error`, `malformed`, `unclassified`).
    Broken,
    /// Streams cut off mid-answer.
    Reset,
    /// Anything else (5xx, timeouts); `timeouts` when most are timeouts.
    Other { timeouts: bool },
}

fn dominant(s: &RungSummary) -> Dominant {
    let count = |k: &str| s.errors_by_class.get(k).copied().unwrap_or(0);
    let failed: u64 = s
        .errors_by_class
        .iter()
        .filter(|(k, _)| k.as_str() != CLIENT_RESOURCE_KEY)
        .map(|(_, n)| n)
        .sum();
    let most = |n: u64| n > 0 && n.saturating_mul(2) >= failed;
    let broken = count("stream_error") + count("malformed") + count("unclassified");
    if most(count("rate_limit")) {
        Dominant::RateLimit
    } else if most(count("connect")) {
        Dominant::Connect
    } else if most(broken) {
        Dominant::Broken
    } else if most(count("reset")) {
        Dominant::Reset
    } else {
        Dominant::Other {
            timeouts: most(count("timeout")),
        }
    }
}

/// The rung below, when the errors grew with the load from it: this rung's error rate
/// (`err`) is at least double the one below, which was itself under the line.
fn rose_from(lower: Option<&LowerRung>, err: f64) -> Option<&LowerRung> {
    lower.filter(|l| l.error_rate <= OVERLOAD_ERROR_RATE && err >= 2.0 * l.error_rate)
}

/// Which failures grew with the load at a rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grew {
    /// Mostly 429s.
    RateLimit,
    /// Mostly other failures that are no fault of their own kind (5xx, timeouts).
    Errors,
}

/// Which failures made `s` the rung where they grew with the load (above the line, from a
/// clean rung below at least doubled), if they did: 429s, or the 5xx and timeouts that
/// [`cause`] calls overload.
fn grew_with_load(s: &RungSummary, lower: Option<&LowerRung>) -> Option<Grew> {
    let err = s.server_error_rate();
    let grew = err > OVERLOAD_ERROR_RATE
        && !s.mostly_rejected()
        && s.client_failures() == 0
        && rose_from(lower, err).is_some();
    if !grew {
        return None;
    }
    match dominant(s) {
        Dominant::RateLimit => Some(Grew::RateLimit),
        Dominant::Connect | Dominant::Broken | Dominant::Reset => None,
        Dominant::Other { .. } => Some(Grew::Errors),
    }
}

/// The failure warning for `s`, if its server error rate is above the line. `lower` is the
/// rung below it (a lower level, the same repeat), when there is one.
pub fn failure_warning(s: &RungSummary, lower: Option<&LowerRung>) -> Option<String> {
    let rate = s.load.level(s.rate);
    let err = s.server_error_rate();
    if err <= OVERLOAD_ERROR_RATE {
        return None;
    }
    let head = format!(
        "rung {rate}: error rate {:.1}% is above {:.0}%",
        err * 100.0,
        OVERLOAD_ERROR_RATE * 100.0
    );
    if s.mostly_rejected() {
        return Some(format!(
            "{head}, but {} of the {} failures were rejected by the server (client_4xx / auth): the requests are wrong for this server (a prompt longer than its context, an unknown model, a bad parameter, a missing key), it is not overloaded; the requests files hold the server's messages",
            s.rejected(),
            s.failed
        ));
    }
    let mut classes: Vec<(String, u64)> = s
        .errors_by_class
        .iter()
        .filter(|(k, n)| **n > 0 && k.as_str() != CLIENT_RESOURCE_KEY)
        .map(|(k, n)| (k.clone(), *n))
        .collect();
    classes.sort();
    let listed = classes
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect::<Vec<_>>()
        .join(", ");
    // A client out of open files, ports or memory also times out and drops its own
    // connections: such a rung is never called overloaded (README, docs/client-limits.md).
    let starved = s.client_failures();
    if starved > 0 {
        return Some(format!(
            "{head}: not shown to be overload: the client itself ran out of resources in this \
             rung ({starved} client_resource failures, left out of this rate), so its other \
             failures may be the client's own too; fix the client's limit (the client-side \
             warning names it) and run the rung again [{listed}]"
        ));
    }
    let why = cause(s, lower, err);
    Some(format!("{head}: {why} [{listed}]"))
}

/// Why a rung failed, read from its failure classes (`failed` of them, the client's own
/// left out) and the rung below: overload (429s or failures that grew with the load), a
/// server that went down, broken answers, or a fault the load does not explain.
fn cause(s: &RungSummary, lower: Option<&LowerRung>, err: f64) -> String {
    let rose = rose_from(lower, err);
    let not_load = match lower {
        None => "already at the lowest rung, so the load does not explain it".to_string(),
        Some(l) => format!(
            "the rung below ({}) failed {:.1}% already, so the errors did not double from \
             a clean rung with the load",
            l.level,
            l.error_rate * 100.0
        ),
    };
    match dominant(s) {
        Dominant::RateLimit => match rose {
            Some(l) => format!(
                "overloaded: the server turned requests away with 429s as the load rose \
                 (failing {:.1}% at {}); if a rate limiter in front of it answered, raise its \
                 limit or send within it",
                l.error_rate * 100.0,
                l.level
            ),
            None => match lower.and_then(|l| l.shed_from.as_deref()) {
                // The same server, the same cause as the rung where 429s first grew.
                Some(from) => format!(
                    "overloaded: the server kept turning requests away with 429s (they grew \
                     with the load at {from}); if a rate limiter in front of it answered, \
                     raise its limit or send within it"
                ),
                None => "rate-limited (429s: a rate limiter answered, not a slow server; raise \
                         its limit or send within it)"
                    .to_string(),
            },
        },
        Dominant::Connect => match rose {
            _ if s.completed == 0 => "no request completed and the connections failed: the \
                 server is down or not listening at the endpoint; check it is up and read its \
                 log"
            .to_string(),
            // A server at its connection limit and one that just died look alike from here.
            Some(l) => format!(
                "connections failed from this rung on (failing {:.1}% at {}): the server \
                 went down, or reached its connection limit or accept queue; read its log",
                l.error_rate * 100.0,
                l.level
            ),
            None => format!(
                "connections to the server failed ({not_load}): it went down, restarted or \
                 refuses connections; read its log"
            ),
        },
        Dominant::Broken => "the server's answers broke off or did not parse (a server or \
                             gateway fault, not load); the requests files hold what came back"
            .to_string(),
        Dominant::Reset => match rose {
            Some(l) => format!(
                "streams broke off as the load rose (failing {:.1}% at {}): the server or a \
                 proxy dropped connections under load, or it went down; read its log",
                l.error_rate * 100.0,
                l.level
            ),
            None => format!(
                "the server's streams broke off ({not_load}): a server or gateway fault; the \
                 requests files say where each one broke"
            ),
        },
        Dominant::Other { timeouts } => match rose {
            Some(l) => format!(
                "overloaded: the error rate rose from {:.1}% at {}",
                l.error_rate * 100.0,
                l.level
            ),
            None => match lower.and_then(|l| l.failing_from.as_deref()) {
                // The same server, the same cause as the rung where the errors first grew.
                Some(from) => format!(
                    "overloaded: the server kept failing requests (the errors grew with the \
                     load at {from})"
                ),
                // Timeouts from the lowest rung on: requests slower than the timeout
                // allows, whatever the load.
                None if timeouts => format!(
                    "not shown to be overload ({not_load}): the requests ran past \
                     endpoint.request_timeout (or ttft_timeout): a server slower than the \
                     timeout allows for these lengths, or a load already past what it holds; \
                     raise the timeout, shorten input_tokens / output_tokens, or start lower"
                ),
                None => format!(
                    "not shown to be overload ({not_load}): a server fault, or a load \
                     already past what the server holds; the requests files hold the \
                     server's messages"
                ),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RungSummary;

    fn rung(rate: f64, completed: u64, failures: &[(&str, u64)]) -> RungSummary {
        let mut s = RungSummary {
            rate,
            completed,
            ..Default::default()
        };
        for (k, n) in failures {
            s.errors_by_class.insert((*k).into(), *n);
            s.failed += n;
        }
        s.num_prompts = s.completed + s.failed;
        s
    }

    fn lower(rate: f64, err: f64) -> LowerRung {
        LowerRung {
            level: format!("{rate} req/s"),
            error_rate: err,
            shed_from: None,
            failing_from: None,
        }
    }

    #[test]
    fn a_run_whose_429s_grew_with_the_load_keeps_calling_them_overload() {
        // The simulator's queue limit: clean at 4, 429s from 8 on, more at 16 and 32.
        let r4 = RungSummary {
            load: crate::scenario::LoadKind::Rate,
            ..rung(4.0, 100, &[])
        };
        let r8 = RungSummary {
            load: crate::scenario::LoadKind::Rate,
            ..rung(8.0, 70, &[("rate_limit", 30)])
        };
        let r16 = RungSummary {
            load: crate::scenario::LoadKind::Rate,
            ..rung(16.0, 40, &[("rate_limit", 60)])
        };
        let r32 = rung(32.0, 20, &[("rate_limit", 80)]);
        let at8 = LowerRung::below(&[&r4]);
        let w8 = failure_warning(&r8, at8.as_ref()).unwrap();
        assert!(
            w8.contains("overloaded: the server turned requests away"),
            "{w8}"
        );
        // Rung 16: its rung below (8) already failed, but the cause is the same.
        let at16 = LowerRung::below(&[&r8, &r4]);
        assert_eq!(at16.as_ref().unwrap().shed_from.as_deref(), Some("8 req/s"));
        let w16 = failure_warning(&r16, at16.as_ref()).unwrap();
        assert!(
            w16.contains("overloaded: the server kept turning requests away with 429s (they grew with the load at 8 req/s)"),
            "{w16}"
        );
        let at32 = LowerRung::below(&[&r4, &r8, &r16]);
        let w32 = failure_warning(&r32, at32.as_ref()).unwrap();
        assert!(!w32.contains("rate-limited"), "{w32}");
        // 429s from the lowest rung on stay a limiter's policy all the way up.
        let p4 = RungSummary {
            load: crate::scenario::LoadKind::Rate,
            ..rung(4.0, 50, &[("rate_limit", 50)])
        };
        let w8 = failure_warning(&r8, LowerRung::below(&[&p4]).as_ref()).unwrap();
        assert!(w8.contains("rate-limited (429s"), "{w8}");
    }

    #[test]
    fn a_run_whose_503s_grew_with_the_load_keeps_calling_them_overload() {
        // The simulator's queue limit answering 503: clean at 20, 503s from 60 on.
        let r20 = rung(20.0, 150, &[]);
        let r60 = rung(60.0, 80, &[("server_5xx", 70)]);
        let r120 = rung(120.0, 72, &[("server_5xx", 78)]);
        let w60 = failure_warning(&r60, LowerRung::below(&[&r20]).as_ref()).unwrap();
        assert!(
            w60.contains("overloaded: the error rate rose from 0.0% at 20 req/s"),
            "{w60}"
        );
        let at120 = LowerRung::below(&[&r60, &r20]);
        assert_eq!(
            at120.as_ref().unwrap().failing_from.as_deref(),
            Some("60 req/s")
        );
        let w120 = failure_warning(&r120, at120.as_ref()).unwrap();
        assert!(
            w120.contains("overloaded: the server kept failing requests (the errors grew with the load at 60 req/s)"),
            "{w120}"
        );
        // 503s from the lowest rung on stay "not shown to be overload" all the way up.
        let f20 = rung(20.0, 100, &[("server_5xx", 50)]);
        let w = failure_warning(&r60, LowerRung::below(&[&f20]).as_ref()).unwrap();
        assert!(w.contains("not shown to be overload"), "{w}");
        // Refused connections that grew with the load are not overload, and do not make
        // the rungs above it overloaded.
        let c60 = rung(60.0, 80, &[("connect", 70)]);
        let w = failure_warning(&r120, LowerRung::below(&[&c60, &r20]).as_ref()).unwrap();
        assert!(w.contains("not shown to be overload"), "{w}");
    }

    #[test]
    fn timeouts_at_the_lowest_rung_point_at_the_timeout() {
        let s = rung(1.0, 0, &[("timeout", 6)]);
        let w = failure_warning(&s, None).unwrap();
        assert!(
            w.contains("the requests ran past endpoint.request_timeout"),
            "{w}"
        );
        assert!(!w.contains("a server fault"), "{w}");
        // Timeouts that grew with the load are overload.
        let s = rung(8.0, 50, &[("timeout", 50)]);
        let w = failure_warning(&s, Some(&lower(4.0, 0.0))).unwrap();
        assert!(w.contains("overloaded: the error rate rose"), "{w}");
    }

    #[test]
    fn below_the_line_says_nothing() {
        let s = rung(4.0, 96, &[("server_5xx", 4)]);
        assert_eq!(failure_warning(&s, None), None);
    }

    #[test]
    fn errors_that_rose_with_the_load_are_overload() {
        let s = rung(8.0, 80, &[("timeout", 15), ("server_5xx", 5)]);
        let w = failure_warning(&s, Some(&lower(4.0, 0.01))).unwrap();
        assert!(
            w.contains("overloaded: the error rate rose from 1.0% at 4 req/s"),
            "{w}"
        );
        assert!(w.contains("[server_5xx=5, timeout=15]"), "{w}");
    }

    #[test]
    fn a_rung_that_also_failed_on_the_client_is_never_called_overloaded() {
        // The same timeouts that rose with the load above, but the client ran out too.
        let s = rung(
            8.0,
            80,
            &[
                ("timeout", 15),
                ("server_5xx", 5),
                (CLIENT_RESOURCE_KEY, 30),
            ],
        );
        let w = failure_warning(&s, Some(&lower(4.0, 0.01))).unwrap();
        assert!(!w.contains("overloaded"), "{w}");
        assert!(
            w.contains("not shown to be overload: the client itself ran out of resources"),
            "{w}"
        );
        assert!(w.contains("[server_5xx=5, timeout=15]"), "{w}");
    }

    #[test]
    fn errors_at_the_lowest_rung_or_as_high_below_are_not_overload() {
        let s = rung(1.0, 90, &[("server_5xx", 10)]);
        let w = failure_warning(&s, None).unwrap();
        assert!(!w.contains("overloaded"), "{w}");
        assert!(
            w.contains("not shown to be overload (already at the lowest rung"),
            "{w}"
        );
        // The same 10 % at the rung below: it did not grow with the load.
        let w = failure_warning(&s, Some(&lower(0.5, 0.10))).unwrap();
        assert!(!w.contains("overloaded"), "{w}");
        assert!(w.contains("failed 10.0% already"), "{w}");
        // Below the line below but not doubled (4 % -> 6 %): not shown either.
        let s = rung(2.0, 94, &[("server_5xx", 6)]);
        let w = failure_warning(&s, Some(&lower(1.0, 0.04))).unwrap();
        assert!(!w.contains("overloaded"), "{w}");
    }

    #[test]
    fn a_dead_server_is_named_down_not_overloaded() {
        let s = rung(2.0, 0, &[("connect", 50)]);
        let w = failure_warning(&s, None).unwrap();
        assert!(w.contains("the server is down or not listening"), "{w}");
        assert!(!w.contains("overload"), "{w}");
        // It died mid-ladder: the rung below was fine, but connect errors at a server
        // that still answered some requests and then stopped are not proof of overload
        // unless they grew from a clean rung below.
        let s = rung(2.0, 10, &[("connect", 40)]);
        let w = failure_warning(&s, Some(&lower(1.0, 0.5))).unwrap();
        assert!(
            w.contains("went down, restarted or refuses connections"),
            "{w}"
        );
        // From a clean rung below: a limit or a crash, never called overload.
        let w = failure_warning(&s, Some(&lower(1.0, 0.0))).unwrap();
        assert!(
            w.contains("went down, or reached its connection limit"),
            "{w}"
        );
        assert!(!w.contains("overload"), "{w}");
    }

    #[test]
    fn rate_limits_rejections_and_broken_streams_keep_their_own_names() {
        // 429s from the first rung on are a limiter's policy; 429s that grew from a clean
        // rung below are a server shedding load.
        let s = rung(8.0, 50, &[("rate_limit", 50)]);
        let w = failure_warning(&s, None).unwrap();
        assert!(w.contains("rate-limited (429s"), "{w}");
        let w = failure_warning(&s, Some(&lower(4.0, 0.1))).unwrap();
        assert!(w.contains("rate-limited (429s"), "{w}");
        let w = failure_warning(&s, Some(&lower(4.0, 0.0))).unwrap();
        assert!(
            w.contains("overloaded: the server turned requests away with 429s"),
            "{w}"
        );
        // A stream cut mid-answer (reset) at the lowest rung is a fault, not load.
        let s = rung(1.0, 50, &[("reset", 5)]);
        let w = failure_warning(&s, None).unwrap();
        assert!(
            w.contains("the server's streams broke off (already at the lowest rung"),
            "{w}"
        );
        assert!(!w.contains("overload"), "{w}");
        let s = rung(8.0, 50, &[("auth", 50)]);
        let w = failure_warning(&s, None).unwrap();
        assert!(w.contains("it is not overloaded"), "{w}");
        let s = rung(8.0, 50, &[("stream_error", 30), ("malformed", 20)]);
        let w = failure_warning(&s, Some(&lower(4.0, 0.0))).unwrap();
        assert!(
            w.contains("did not parse (a server or gateway fault"),
            "{w}"
        );
    }

    #[test]
    fn client_side_failures_are_left_out() {
        let s = rung(8.0, 90, &[(CLIENT_RESOURCE_KEY, 100), ("server_5xx", 10)]);
        let w = failure_warning(&s, Some(&lower(4.0, 0.0))).unwrap();
        assert!(w.contains("error rate 10.0%"), "{w}");
        // Left out of the counts (the message names them apart, as the client's own).
        assert!(!w.contains(&format!("{CLIENT_RESOURCE_KEY}=")), "{w}");
        assert!(w.ends_with("[server_5xx=10]"), "{w}");
        // A rung where the client ran out of resources is never called overloaded.
        assert!(!w.contains("overloaded"), "{w}");
        assert!(w.contains("not shown to be overload"), "{w}");
    }

    #[test]
    fn a_rung_below_that_measured_nothing_is_no_clean_rung() {
        let mut empty = RungSummary {
            rate: 1.0,
            ..Default::default()
        };
        assert!(LowerRung::of(&empty).is_none());
        empty.completed = 3;
        assert_eq!(LowerRung::of(&empty).map(|l| l.error_rate), Some(0.0));
    }
}
