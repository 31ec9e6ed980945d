//! Progress bars and the end-of-run table (indicatif), hidden with `--quiet`. When stderr is
//! not a terminal (piped, a CI log) the bars are not drawn and progress is plain lines
//! instead: one when each rung ends and a heartbeat every [`HEARTBEAT`] of a long rung, so a
//! CI log never looks hung.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::rung::{Interval, RungObserver};
use super::soak::clock;
use crate::metrics::{Latency, LiveStats, RungSummary};
use crate::results::rate_label;
use crate::scenario::LoadKind;

/// How often a rung off a terminal says how far it got.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

/// The bar of one rung.
pub struct RungBar {
    bar: ProgressBar,
    last: Instant,
    quiet: bool,
    /// The bar is not drawn (stderr is not a terminal): progress goes out as plain lines.
    plain: bool,
    /// `rung 2/8 ` (this rung's place among every rung of every repeat), or empty.
    step: String,
    /// The rung's measured requests.
    total: u64,
    started: Instant,
    /// When the last heartbeat line was printed.
    beat: Instant,
    /// A rung run for a duration: its length, and when the bar started (the bar shows time,
    /// not requests).
    timed: Option<(Duration, Instant)>,
    /// The rung's name in its live lines (`rate 1000`).
    name: String,
    /// Elapsed time at the previous live line.
    prev: Duration,
    /// Where the plain lines go (off a terminal, or with the bar hidden).
    notes: crate::notes::Notes,
}

impl RungBar {
    /// A bar for `total` requests at `level` (a rate, or users for `kind`); hidden when
    /// `quiet`.
    pub fn new(kind: LoadKind, level: f64, total: u64, quiet: bool) -> RungBar {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
        };
        bar.set_style(
            ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(kind.level(level));
        let plain = !quiet && bar.is_hidden();
        RungBar {
            bar,
            last: Instant::now() - Duration::from_secs(1),
            quiet,
            plain,
            step: String::new(),
            total,
            started: Instant::now(),
            beat: Instant::now(),
            timed: None,
            name: kind.rung(level),
            prev: Duration::ZERO,
            notes: crate::notes::Notes::default(),
        }
    }

    /// The bar's plain lines go to `notes` (by default nowhere).
    pub fn with_notes(mut self, notes: crate::notes::Notes) -> RungBar {
        self.notes = notes;
        self
    }

    /// A bar for a rung run for `duration`: it fills with time, shows elapsed and remaining
    /// time, and prints a live line every interval.
    pub fn timed(kind: LoadKind, level: f64, duration: Duration, quiet: bool) -> RungBar {
        let mut b = RungBar::new(kind, level, duration.as_millis().max(1) as u64, quiet);
        b.bar.set_style(
            ProgressStyle::with_template("{prefix:>12} [{bar:30}] {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b.timed = Some((duration, Instant::now()));
        b
    }

    /// This rung is rung `step` (from 1) of `steps` in the ladder, measured for the
    /// `repeat`-th time (from 1) of `repeats`: the bar's prefix and the plain lines say so
    /// (`rung 2/4 repeat 3/3`; the repeat only when the rungs are repeated).
    pub fn at_step(mut self, step: usize, steps: usize, repeat: u32, repeats: u32) -> RungBar {
        let again = if repeats > 1 {
            format!("repeat {repeat}/{repeats} ")
        } else {
            String::new()
        };
        if steps > 1 || repeats > 1 {
            self.step = format!("rung {step}/{steps} {again}");
            let level = self.bar.prefix();
            self.bar
                .set_prefix(format!("{step}/{steps} {again}{level}"));
        }
        self
    }

    /// Close the bar with a one-line result; off a terminal, print it as a line.
    pub fn finish(&self, s: &RungSummary) {
        let ttfc = match &s.reasoning {
            Some(r) => format!(
                ", p50 TTFC {:.0} ms (after {:.0} reasoning tokens/request)",
                r.ttfc.median,
                r.total_reasoning_tokens as f64 / r.requests.max(1) as f64
            ),
            None => String::new(),
        };
        let prefix = match &s.prefix {
            Some(p) => format!(
                " (cold {}, warm {}{})",
                ms_or_dash(p.cold.count, p.cold.median),
                ms_or_dash(p.warm.count, p.warm.median),
                server_hit_rate(s)
                    .map(|h| format!(", server prefix hits {:.0}%", h * 100.0))
                    .unwrap_or_default()
            ),
            // Any other rung: the share of its prompt tokens the server's cache answered.
            None => s
                .server
                .cache_share()
                .map(|c| format!(" (server cache share {:.0}%)", c * 100.0))
                .unwrap_or_default(),
        };
        let (name, which) = lead_latency(s);
        let lead = s.stats(which);
        let done = format!(
            "done: {:.2} req/s, p50 {name} {}{prefix}{ttfc}, errors {:.1}%",
            s.request_throughput,
            ms_or_dash(lead.count, lead.median),
            s.error_rate() * 100.0
        );
        if self.plain {
            self.notes.err(&self.plain_end(s, &done));
        }
        self.bar.finish_with_message(done);
    }

    /// The line a rung ends with off a terminal: its place, name, result and length.
    fn plain_end(&self, s: &RungSummary, done: &str) -> String {
        let cut = if s.interrupted { ", INTERRUPTED" } else { "" };
        let (name, which) = lead_latency(s);
        let lead = s.stats(which);
        format!(
            "{}{} {done} (p99 {name} {}, {} completed, {} failed{cut}) in {}",
            self.step,
            self.name,
            ms_or_dash(lead.count, lead.p99),
            s.completed,
            s.failed,
            clock(self.started.elapsed())
        )
    }

    /// Off a terminal, a line every [`HEARTBEAT`] of a rung measured by requests (a timed
    /// rung prints its own interval lines).
    fn heartbeat(&mut self, live: &LiveStats, sent: u64) {
        if !self.plain || self.beat.elapsed() < HEARTBEAT {
            return;
        }
        self.beat = Instant::now();
        self.notes
            .err(&self.heartbeat_line(live, sent, self.started.elapsed()));
    }

    fn heartbeat_line(&self, live: &LiveStats, sent: u64, elapsed: Duration) -> String {
        format!(
            "{}{} {}: {}/{} done, sent {sent}, errors {}, {:.2} req/s, p50 TTFT {}",
            self.step,
            self.name,
            clock(elapsed),
            live.done,
            self.total,
            live.errors,
            live.qps(),
            live.p50_ttft_text()
        )
    }

    /// Print a line above the bar, or to stderr when the bar is not drawn (not a
    /// terminal); nothing with `--quiet`.
    pub fn println(&self, line: &str) {
        if self.quiet {
            return;
        }
        if self.bar.is_hidden() {
            self.notes.err(line);
        } else {
            self.bar.println(line);
        }
    }
}

impl RungObserver for RungBar {
    fn on_interval(&mut self, i: &Interval<'_>) {
        let Some((duration, _)) = self.timed else {
            return;
        };
        // Kept moving when no request finished in the interval.
        self.bar
            .set_position(i.elapsed.min(duration).as_millis() as u64);
        // The interval's own length: the last one may be shorter.
        let every = i.elapsed.saturating_sub(self.prev);
        self.prev = i.elapsed;
        self.println(&live_line(&self.name, duration, every, i));
    }

    fn on_record(&mut self, live: &LiveStats, sent: u64) {
        if let Some((duration, started)) = self.timed {
            if self.last.elapsed() >= Duration::from_millis(100) {
                self.last = Instant::now();
                let elapsed = started.elapsed().min(duration);
                self.bar.set_position(elapsed.as_millis() as u64);
                self.bar.set_message(format!(
                    "{} of {} ({} left) · sent {sent} done {} err {}",
                    clock(elapsed),
                    clock(duration),
                    clock(duration - elapsed),
                    live.done,
                    live.errors
                ));
            }
            return;
        }
        self.bar.set_position(live.done);
        self.heartbeat(live, sent);
        // Formatting the message ten times a second is plenty.
        if self.last.elapsed() >= Duration::from_millis(100) {
            self.last = Instant::now();
            self.bar.set_message(format!(
                "sent {sent} err {} · {:.1} req/s · p50 TTFT {}",
                live.errors,
                live.qps(),
                live.p50_ttft_text()
            ));
        }
    }
}

/// A timed rung's line for one interval: its own throughput, TTFT (`-` when no request of
/// the interval succeeded), completions and failures (these add up to the summary's
/// `completed` and `failed` over the rung's lines), and the requests sent so far. Past the
/// duration it says how many requests are still draining; the rung's last line says so.
fn live_line(name: &str, duration: Duration, every: Duration, i: &Interval<'_>) -> String {
    let w = i.window;
    let secs = every.as_secs_f64().max(1e-9);
    let measured = w.ok + w.errors;
    let ttft = |q: f64| match w.ttft_ms(q) {
        Some(ms) => format!("{ms:.1} ms"),
        None => "-".to_string(),
    };
    let at = format!("{} / {}", clock(i.elapsed.min(duration)), clock(duration));
    let when = if i.last {
        format!("{at}, end (last {:.1}s)", every.as_secs_f64())
    } else if i.stopping {
        format!("{at}, stopping, {} in flight", i.in_flight)
    } else if i.elapsed > duration {
        format!(
            "{at}, draining +{}, {} in flight",
            clock(i.elapsed - duration),
            i.in_flight
        )
    } else {
        at
    };
    format!(
        "{name} {when}: {:.1} req/s ({} done), {:.0} tok/s, p50 TTFT {}, p99 TTFT {}, \
         errors {} ({:.1}%), sent {}",
        w.ok as f64 / secs,
        w.ok,
        w.output_tokens as f64 / secs,
        ttft(0.5),
        ttft(0.99),
        w.errors,
        if measured == 0 {
            0.0
        } else {
            w.errors as f64 * 100.0 / measured as f64
        },
        i.sent,
    )
}

/// `12 ms`, or `-` for an empty distribution.
fn ms_or_dash(count: u64, v: f64) -> String {
    if count == 0 {
        "-".into()
    } else {
        format!("{v:.0} ms")
    }
}

/// The server's prefix-cache hit rate over the rung, where it exposes its counters.
fn server_hit_rate(s: &RungSummary) -> Option<f64> {
    s.server.values.get("server_prefix_hit_rate").copied()
}

/// [`rung_table`] of a pooled API's rungs (embeddings): no token timings, input tokens/s.
fn pooled_table(rungs: &[RungSummary], level: &str) -> String {
    let mut out = format!(
        "{:>9} {:>9} {:>10} {:>10} {:>10} {:>8} {:>10}\n",
        level, "qps", "in tok/s", "p50 E2E", "p99 E2E", "errors", "lag p99"
    );
    for s in rungs {
        let cut = if s.interrupted {
            "  interrupted (partial)"
        } else {
            ""
        };
        let e2e = s.stats(Latency::E2el);
        out.push_str(&format!(
            "{:>9} {:>9.2} {:>10.0} {:>8.1}ms {:>8.1}ms {:>7.1}% {:>8.2}ms{cut}\n",
            rate_label(s.rate),
            s.request_throughput,
            s.input_throughput(),
            e2e.median,
            e2e.p99,
            s.error_rate() * 100.0,
            s.stats(Latency::DispatchLag).p99,
        ));
    }
    out
}

/// The latency a rung's lines lead with: TTFT, or E2E for a pooled rung (embeddings), which
/// has no first token.
fn lead_latency(s: &RungSummary) -> (&'static str, Latency) {
    match s.pooling {
        Some(_) => ("E2E", Latency::E2el),
        None => ("TTFT", Latency::Ttft),
    }
}

/// The table of all rungs printed at the end of a run; the first column is the rung's rate
/// (req/s) or, on a concurrency ladder, its number of users.
pub fn rung_table(rungs: &[RungSummary]) -> String {
    let mut out = String::new();
    let level = match rungs.first().map(|s| s.load) {
        Some(LoadKind::Concurrency) => "users",
        Some(LoadKind::Trace) => "speed",
        _ => "rate",
    };
    if rungs.iter().any(|s| s.pooling.is_some()) {
        return pooled_table(rungs, level);
    }
    out.push_str(&format!(
        "{:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10}\n",
        level, "qps", "tok/s", "p50 TTFT", "p99 TTFT", "p50 TPOT", "p50 E2E", "errors", "lag p99"
    ));
    for s in rungs {
        // An interrupted rung's figures cover only what ran before the stop: say so on its row.
        let cut = if s.interrupted {
            "  interrupted (partial)"
        } else {
            ""
        };
        // A latency no request measured (every request failed) is a dash, not 0 ms.
        let cell = |l: Latency, pick: fn(&crate::metrics::Stats) -> f64, digits: usize| {
            let st = s.stats(l);
            if st.count == 0 {
                format!("{:>10}", "-")
            } else {
                format!("{:>8.digits$}ms", pick(&st))
            }
        };
        out.push_str(&format!(
            "{:>9} {:>9.2} {:>9.0} {} {} {} {} {:>7.1}% {:>8.2}ms{cut}\n",
            rate_label(s.rate),
            s.request_throughput,
            s.output_throughput,
            cell(Latency::Ttft, |st| st.median, 0),
            cell(Latency::Ttft, |st| st.p99, 0),
            cell(Latency::Tpot, |st| st.median, 1),
            cell(Latency::E2el, |st| st.median, 0),
            s.error_rate() * 100.0,
            s.stats(Latency::DispatchLag).p99,
        ));
    }
    if rungs.iter().any(|s| s.reasoning.is_some()) {
        out.push_str(&format!(
            "{:>9} {:>10} {:>10} {:>10} {:>12} {:>12}\n",
            level, "p50 TTFT", "p50 TTFC", "p99 TTFC", "reasoning", "content"
        ));
        for s in rungs {
            let r = s.reasoning.clone().unwrap_or_default();
            out.push_str(&format!(
                "{:>9} {:>8.0}ms {:>8.0}ms {:>8.0}ms {:>8} tok {:>8} tok\n",
                rate_label(s.rate),
                s.stats(Latency::Ttft).median,
                r.ttfc.median,
                r.ttfc.p99,
                r.total_reasoning_tokens,
                r.total_content_tokens,
            ));
        }
    }
    out.push_str(&session_lines(rungs, level));
    if rungs.iter().any(|s| s.prefix.is_some()) {
        out.push_str(&format!(
            "{:>9} {:>7} {:>11} {:>11} {:>11} {:>12}\n",
            level, "groups", "cold p50", "warm p50", "warm p99", "server hits"
        ));
        for s in rungs {
            let p = s.prefix.clone().unwrap_or_default();
            out.push_str(&format!(
                "{:>9} {:>7} {:>11} {:>11} {:>11} {:>12}\n",
                rate_label(s.rate),
                p.groups,
                ms_or_dash(p.cold.count, p.cold.median),
                ms_or_dash(p.warm.count, p.warm.median),
                ms_or_dash(p.warm.count, p.warm.p99),
                server_hit_rate(s).map_or("-".into(), |h| format!("{:.1}%", h * 100.0)),
            ));
        }
    }
    out
}

/// The terminal's lines: per rung, sessions and TTFT p50 by turn (empty without sessions).
fn session_lines(rungs: &[RungSummary], level: &str) -> String {
    let mut out = String::new();
    for r in rungs {
        let Some(s) = &r.sessions else { continue };
        let by_turn: Vec<String> = s
            .by_turn
            .iter()
            .map(|t| format!("{}: {}", t.turn, ms_text(t.median_ttft_ms)))
            .collect();
        out.push_str(&format!(
            "{level} {}: sessions {} complete {} (turns not sent {}), mean session {} ms; \
             TTFT p50 ms by turn {}\n",
            rate_label(r.rate),
            s.sessions,
            s.completed,
            s.turns_not_sent,
            ms_text(s.mean_duration_ms),
            by_turn.join(", ")
        ));
    }
    out
}

/// Milliseconds with one decimal, `-` when there is no value.
fn ms_text(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "-".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::live::Window;
    use crate::record::{ErrorClass, RequestError, RequestRecord};

    fn interval(w: &Window, secs: u64) -> Interval<'_> {
        Interval {
            window: w,
            elapsed: Duration::from_secs(secs),
            sent: 40,
            in_flight: 3,
            stopping: false,
            last: false,
        }
    }

    #[test]
    fn an_interval_without_a_success_shows_no_ttft() {
        let mut w = Window::default();
        w.record(&RequestRecord {
            error: Some(RequestError {
                class: ErrorClass::Timeout,
                status: None,
                detail: String::new(),
            }),
            ..Default::default()
        });
        let d = Duration::from_secs(60);
        let line = live_line("rate 10", d, Duration::from_secs(10), &interval(&w, 10));
        assert!(
            line.starts_with("rate 10 0:10 / 1:00: 0.0 req/s (0 done)")
                && line.contains("p50 TTFT -, p99 TTFT -, errors 1 (100.0%), sent 40"),
            "{line}"
        );
        w.record(&RequestRecord {
            first_token: Some(Duration::from_millis(12)),
            end: Duration::from_millis(20),
            ..Default::default()
        });
        let line = live_line("rate 10", d, Duration::from_secs(10), &interval(&w, 20));
        assert!(
            line.contains("(1 done)") && line.contains("p50 TTFT 12.0 ms"),
            "{line}"
        );
    }

    #[test]
    fn a_heartbeat_says_the_rungs_place_and_how_far_it_got() {
        let bar = RungBar::new(LoadKind::Rate, 2.0, 200, true).at_step(3, 8, 1, 1);
        let mut live = LiveStats::default();
        live.record(&RequestRecord {
            first_token: Some(Duration::from_millis(340)),
            end: Duration::from_millis(700),
            ..Default::default()
        });
        let line = bar.heartbeat_line(&live, 61, Duration::from_secs(95));
        assert!(
            line.starts_with("rung 3/8 rate 2 req/s 1:35: 1/200 done, sent 61, errors 0, "),
            "{line}"
        );
        // One rung alone has no counter.
        let one = RungBar::new(LoadKind::Rate, 2.0, 200, true).at_step(1, 1, 1, 1);
        let line = one.heartbeat_line(&live, 61, Duration::from_secs(5));
        assert!(line.starts_with("rate 2 req/s 0:05: "), "{line}");
        // One rung repeated: which repeat, not a rung count that grows with the repeats.
        let again = RungBar::new(LoadKind::Rate, 2.0, 200, true).at_step(1, 1, 2, 3);
        let line = again.heartbeat_line(&live, 61, Duration::from_secs(5));
        assert!(
            line.starts_with("rung 1/1 repeat 2/3 rate 2 req/s 0:05: "),
            "{line}"
        );
        // --quiet prints no plain lines at all.
        assert!(!bar.plain);
    }

    #[test]
    fn an_interrupted_rung_is_marked_in_the_table() {
        let whole = RungSummary {
            rate: 1.0,
            load: LoadKind::Rate,
            ..Default::default()
        };
        let cut = RungSummary {
            rate: 2.0,
            interrupted: true,
            ..whole.clone()
        };
        let table = rung_table(&[whole, cut]);
        let rows: Vec<&str> = table.lines().collect();
        assert!(!rows[1].contains("interrupted"), "{table}");
        assert!(rows[2].ends_with("interrupted (partial)"), "{table}");
    }

    /// A rung whose every request failed (the server went down) measured no latency: its
    /// cells are dashes, never "0ms"; a rung that measured some keeps its numbers.
    #[test]
    fn a_rung_with_no_completed_request_shows_dashes_not_zero_latency() {
        use crate::metrics::Stats;
        let mut served = RungSummary {
            rate: 0.5,
            load: LoadKind::Rate,
            completed: 10,
            failed: 20,
            num_prompts: 30,
            ..Default::default()
        };
        for l in [Latency::Ttft, Latency::Tpot, Latency::E2el] {
            served.latency.insert(
                l,
                Stats {
                    count: 10,
                    median: 392.0,
                    p99: 586.0,
                    ..Default::default()
                },
            );
        }
        let down = RungSummary {
            rate: 1.0,
            load: LoadKind::Rate,
            failed: 30,
            num_prompts: 30,
            ..Default::default()
        };
        let table = rung_table(&[served, down]);
        let rows: Vec<&str> = table.lines().collect();
        assert!(
            rows[1].contains("392ms") && rows[1].contains("586ms"),
            "{table}"
        );
        let cells: Vec<&str> = rows[2].split_whitespace().collect();
        assert_eq!(cells[3..7], ["-", "-", "-", "-"], "{table}");
        assert!(!rows[2].contains(" 0ms"), "{table}");
        // The columns stay aligned: both rows are as long.
        assert_eq!(rows[1].len(), rows[2].len(), "{table}");
    }

    #[test]
    fn lines_past_the_duration_say_draining_and_the_last_says_end() {
        let w = Window::default();
        let d = Duration::from_secs(60);
        let line = live_line("rate 10", d, Duration::from_secs(10), &interval(&w, 70));
        assert!(
            line.starts_with("rate 10 1:00 / 1:00, draining +0:10, 3 in flight: "),
            "{line}"
        );
        let last = Interval {
            last: true,
            ..interval(&w, 72)
        };
        let line = live_line("rate 10", d, Duration::from_secs(2), &last);
        assert!(
            line.starts_with("rate 10 1:00 / 1:00, end (last 2.0s): "),
            "{line}"
        );
    }
}
