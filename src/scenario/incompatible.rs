//! The one table of settings that do not combine: each row names a setting, the setting (or
//! kind of scenario) it does not combine with, why, and what to do. The checks of
//! `load.search` (`search`), `workload.sessions` (`sessions`), `load.duration` (`soak`),
//! embeddings batches and `api: rerank` (`endpoints`) and `workload.images` (`images`) decide
//! whether their side is in the scenario and then read their rows here with [`check`], in
//! table order.
//!
//! The `--repeats` flag's refusals (`runner::error`, `RepeatsWithSearch`, `RepeatsWithSoak`)
//! are the command line's, worded for the flag and the file; they say what the
//! `load.repeats` rows here say.

use serde_json::Value;

use super::diagnostic::Problem;
use super::shapes::{get, p};

/// The side a row's setting does not combine with; its check has found it set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum With {
    /// `load.search`.
    Search,
    /// `workload.sessions`.
    Sessions,
    /// `load.duration` (a soak).
    Duration,
    /// `endpoint.api: embeddings` with a `batch_size` above 1.
    Batch,
    /// `endpoint.api: rerank`.
    Rerank,
    /// `workload.images`.
    Images,
}

/// When a row's setting counts as set.
#[derive(Debug, Clone, Copy)]
enum When {
    /// Present and not null.
    Set,
    /// Set to anything but the number 1 (`repeats: 1` is one run).
    NotOne,
    /// A number above 1.
    AboveOne,
    /// The string given.
    Is(&'static str),
}

/// Where the diagnostic points.
#[derive(Debug, Clone, Copy)]
enum At {
    /// At the key of the row's setting.
    Key,
    /// At its value.
    Value,
    /// At the key of another setting (the side it does not combine with).
    KeyOf(&'static [&'static str]),
}

/// One pair that does not combine.
struct Row {
    with: With,
    /// The setting, as a path of keys.
    setting: &'static [&'static str],
    when: When,
    at: At,
    /// The refusal, word for word.
    message: &'static str,
    /// What to do.
    hint: &'static str,
}

const fn row(
    with: With,
    setting: &'static [&'static str],
    when: When,
    at: At,
    message: &'static str,
    hint: &'static str,
) -> Row {
    Row {
        with,
        setting,
        when,
        at,
        message,
        hint,
    }
}

use At::{Key, KeyOf, Value as AtValue};
use When::{AboveOne, Is, NotOne, Set};
use With::{Batch, Duration, Images, Rerank, Search, Sessions};

/// Every pair, grouped by side, each side's rows in the order its check reports them.
#[rustfmt::skip]
const TABLE: &[Row] = &[
    row(Search, &["load", "rates"], Set, Key,
        "`load.rates` does not combine with `load.search`",
        "remove it: the search chooses the rates it probes; give the range as `search.start` and `search.max`"),
    row(Search, &["load", "concurrency"], Set, Key,
        "`load.concurrency` does not combine with `load.search`",
        "remove it: the search chooses the levels it probes; search over users with `search.over: users`"),
    row(Search, &["load", "baseline_rate"], Set, Key,
        "`load.baseline_rate` does not combine with `load.search`",
        "remove it: the search's first probe (`search.start`) is its light-load reference"),
    row(Search, &["load", "trace"], Set, Key,
        "`load.trace` does not combine with `load.search`",
        "remove it: a trace replay's load is the trace's own timing: its only knob is the speed, and a search over trace speeds is not implemented; search over `rate` with the trace's lengths as a dataset instead"),
    row(Search, &["load", "ramp"], Set, Key,
        "`load.ramp` does not combine with `load.search`",
        "remove it: a ramp is one rung of rising rate; a search runs rungs of steady load"),
    row(Search, &["load", "duration"], Set, Key,
        "`load.duration` does not combine with `load.search`",
        "remove it: a probe is sized by `workload.requests_per_rung` (its verdict's interval rests on that count), not by time; bound the search's time with `search.budget.duration`"),
    row(Search, &["load", "repeats"], NotOne, Key,
        "`load.repeats` does not combine with `load.search`",
        "remove it: the search measures an uncertain probe again itself (`search.max_extensions`) and repeats the bracket's ends (`search.confirm`) for run-to-run noise"),
    row(Search, &["workload", "sessions"], Set, Key,
        "`workload.sessions` does not combine with `load.search` yet",
        "a session rung's level is sessions started per second while its SLO is per turn, so the capacity's unit is unclear; search without sessions, or run a session ladder with `rates`"),

    row(Sessions, &["load", "trace"], Set, Key,
        "`load.trace` does not combine with `workload.sessions`: a trace replays independent requests at recorded times",
        "run sessions at `rates` or `concurrency` levels"),
    row(Sessions, &["load", "ramp"], Set, Key,
        "`load.ramp` does not combine with `workload.sessions`: a ramp's windows count independent requests",
        "run sessions at `rates` or `concurrency` levels"),
    row(Sessions, &["workload", "shared_prefix"], Set, Key,
        "`workload.shared_prefix` does not combine with `workload.sessions`: a session's history is its shared prefix already",
        "remove `shared_prefix` (each turn re-sends the conversation so far)"),

    row(Duration, &["workload", "requests_per_rung"], Set, Key,
        "`requests_per_rung` does not combine with `load.duration`",
        "a rung runs either for a count of requests or for a duration: remove `requests_per_rung` (a duration rung's prompts are `workload.prompt_pool`), or remove `duration`"),
    row(Duration, &["load", "trace"], Set, Key,
        "`trace` does not combine with `load.duration`",
        "a trace replay's length is its trace's: remove `duration`"),
    row(Duration, &["load", "ramp"], Set, Key,
        "`ramp` does not combine with `load.duration`",
        "a ramp's length is its `over`: remove `duration`"),
    row(Duration, &["workload", "sessions"], Set, Key,
        "`sessions` does not combine with `load.duration`",
        "sessions run for a count of sessions (`requests_per_rung`): remove `duration`"),
    row(Duration, &["load", "repeats"], AboveOne, Key,
        "`repeats` does not combine with `load.duration`",
        "a soak is measured once; run it again as its own run to see run-to-run noise"),

    row(Batch, &["workload", "shared_prefix"], Set, Key,
        "`workload.shared_prefix` does not combine with a `batch_size` above 1: prefix groups are per prompt",
        "set `batch_size: 1` or remove it"),
    row(Batch, &["load", "trace"], Set, Key,
        "`load.trace` does not combine with a `batch_size` above 1: a trace's lines are one request each",
        "set `batch_size: 1` or remove it"),
    row(Batch, &["workload", "input_length"], Is("server"), AtValue,
        "`input_length: server` does not combine with a `batch_size` above 1: the server's overhead would be measured on a whole batch",
        "use `input_length: text`, or `batch_size: 1`"),

    row(Rerank, &["workload", "shared_prefix"], Set, Key,
        "`workload.shared_prefix` does not combine with `endpoint.api: rerank`: prefix groups are per prompt",
        "remove it"),
    row(Rerank, &["workload", "sessions"], Set, Key,
        "`workload.sessions` does not combine with `endpoint.api: rerank`: a session is a chat conversation",
        "remove it"),
    row(Rerank, &["load", "trace"], Set, Key,
        "`load.trace` does not combine with `endpoint.api: rerank`: a trace's lines are one prompt each",
        "remove it"),
    row(Rerank, &["workload", "input_length"], Is("server"), AtValue,
        "`input_length: server` does not combine with `endpoint.api: rerank`: the server's overhead would be measured on query-document pairs",
        "use `input_length: text`"),

    row(Images, &["workload", "sessions"], Set, KeyOf(&["workload", "images"]),
        "`images` does not combine with `workload.sessions` (a turn's history is text)",
        "remove one of them"),
];

/// The refusals of the settings in `v` that do not combine with `with`, which the caller
/// has found in the scenario, in table order.
pub(super) fn check(v: &Value, with: With, out: &mut Vec<Problem>) {
    for r in TABLE.iter().filter(|r| r.with == with) {
        let Some(x) = get(v, r.setting) else { continue };
        let set = match r.when {
            Set => true,
            NotOne => x.as_f64() != Some(1.0),
            AboveOne => x.as_f64().is_some_and(|n| n > 1.0),
            Is(s) => x.as_str() == Some(s),
        };
        if !set {
            continue;
        }
        let problem = match r.at {
            Key => Problem::key(p(r.setting), r.message),
            AtValue => Problem::value(p(r.setting), r.message),
            KeyOf(keys) => Problem::key(p(keys), r.message),
        };
        out.push(problem.hint(r.hint));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row's message says what does not combine with what, and each setting appears
    /// once per side.
    #[test]
    fn rows_are_refusals_and_each_pair_is_listed_once() {
        for (i, r) in TABLE.iter().enumerate() {
            assert!(
                r.message.contains(" does not combine with "),
                "{}",
                r.message
            );
            assert!(!r.hint.is_empty(), "{}", r.message);
            assert!(
                !TABLE[..i]
                    .iter()
                    .any(|q| q.with == r.with && q.setting == r.setting),
                "{} listed twice",
                r.message
            );
        }
    }

    #[test]
    fn a_setting_is_refused_only_when_it_counts_as_set() {
        let v = serde_json::json!({"load": {"repeats": 1, "trace": null},
                                   "workload": {"input_length": "text"}});
        let mut out = Vec::new();
        for with in [Search, Duration, Batch, Rerank] {
            check(&v, with, &mut out);
        }
        assert!(
            out.is_empty(),
            "{:?}",
            out.iter().map(|p| &p.message).collect::<Vec<_>>()
        );
        let v = serde_json::json!({"load": {"repeats": 2, "trace": "t.jsonl"},
                                   "workload": {"input_length": "server"}});
        check(&v, Duration, &mut out);
        let msgs: Vec<&str> = out.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "`trace` does not combine with `load.duration`",
                "`repeats` does not combine with `load.duration`"
            ]
        );
        out.clear();
        check(&v, Rerank, &mut out);
        assert_eq!(out.len(), 2);
        assert!(
            !out[1].at_key,
            "input_length: server is refused at its value"
        );
    }
}
