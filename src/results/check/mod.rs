//! What a result folder must satisfy before anything is read from it or done with it. Folders
//! arrive as CI artifacts and in pull requests, so every name, path and number in them is
//! treated as hostile: a folder passes only if it is one ladder could have written.
//!
//! [`run_info`] and [`rung_file`] check what `run.json` names (the scenario folder, the rung
//! files), [`summary`] a rung's summary against its entry, [`lines`] a rung's request lines
//! against its summary (counts, times, and the summary's statistics recomputed from them).
//! `ResultDir` runs them as it loads, so every reader goes through them. The summary's
//! derived keys are recomputed in `derived`, its latency statistics in `latency`, a pooled
//! rung's in `pooled`.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

mod derived;
mod latency;
mod pooled;

use super::load_error::LoadError;
use super::names::{requests_file_name, result_file_name};
use super::types::{RequestLine, RunInfo, RungEntry};
use crate::metrics::RungSummary;
use crate::scenario::{is_scenario_name, rate_label};
use crate::values::measured;
pub(crate) use derived::models_of;
pub(super) use derived::Derived;
pub(super) use latency::latency_stats;
pub(crate) use latency::samples;

pub(super) fn bad(path: &Path, problem: impl Into<String>) -> LoadError {
    LoadError::Tampered {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// Floats written by ladder and read back agree to far better than this: a microsecond
/// (or a millionth, relatively). Anything further apart was edited.
pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-3 + 1e-6 * a.abs().max(b.abs())
}

/// `run.json` itself: the scenario name is one plain folder name, every rung is listed once
/// with the very file names the writer gives its rate.
pub(crate) fn run_info(run_json: &Path, info: &RunInfo) -> Result<(), LoadError> {
    if !is_scenario_name(&info.scenario_name) {
        return Err(bad(
            run_json,
            format!(
                "scenario_name {:?} is not a scenario name (letters, digits, `.`, `_`, `-`; not `.`, `..` or `.replaced`), \
                 and it names the golden/<scenario> folder",
                info.scenario_name
            ),
        ));
    }
    let mut labels: Vec<(String, f64)> = Vec::new();
    for e in &info.rungs {
        entry(run_json, e)?;
        let label = rate_label(e.rate);
        if let Some((_, other)) = labels.iter().find(|(l, _)| *l == label) {
            return Err(bad(
                run_json,
                if *other == e.rate {
                    format!("rung {} is listed twice", e.rate)
                } else {
                    format!(
                        "rungs {other} and {} share the files of label {label}",
                        e.rate
                    )
                },
            ));
        }
        labels.push((label, e.rate));
    }
    derived::planned_rungs(run_json, info)
}

fn entry(run_json: &Path, e: &RungEntry) -> Result<(), LoadError> {
    if !(e.rate.is_finite() && e.rate > 0.0) {
        return Err(bad(
            run_json,
            format!("a rung has rate {}, not a positive rate", e.rate),
        ));
    }
    for (key, found, expected) in [
        ("result_file", &e.result_file, result_file_name(e.rate)),
        (
            "requests_file",
            &e.requests_file,
            requests_file_name(e.rate),
        ),
    ] {
        if *found != expected {
            return Err(bad(
                run_json,
                format!(
                    "rung {} lists {key} {found:?}, but ladder names that file {expected:?} \
                     (a path outside the folder is never read)",
                    e.rate
                ),
            ));
        }
    }
    Ok(())
}

/// `dir/name` as a file to read: a regular file, or a symlink to one inside `dir`. Never a
/// FIFO or device (reading one could block forever), never a link out of the folder.
pub(crate) fn rung_file(dir: &Path, name: &str) -> Result<PathBuf, LoadError> {
    let p = dir.join(name);
    let io = |source| LoadError::Io {
        path: p.clone(),
        source,
    };
    let meta = fs::symlink_metadata(&p).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            LoadError::MissingFile {
                path: p.clone(),
                dir: dir.to_path_buf(),
            }
        } else {
            io(source)
        }
    })?;
    if meta.file_type().is_symlink() {
        let target = fs::canonicalize(&p).map_err(io)?;
        let root = fs::canonicalize(dir).map_err(io)?;
        if target.parent() != Some(root.as_path()) {
            return Err(bad(
                &p,
                format!(
                    "is a symlink to {}, outside the result folder; refusing to read it",
                    target.display()
                ),
            ));
        }
        if !target.is_file() {
            return Err(bad(&p, "is a symlink to something that is not a file"));
        }
    } else if !meta.is_file() {
        return Err(bad(&p, "is not a regular file"));
    }
    Ok(p)
}

/// A rung summary against its run.json entry, and against itself (`raw`: the file's keys as
/// written, the repeated ones among them included).
pub(crate) fn summary(
    path: &Path,
    e: &RungEntry,
    raw: &serde_json::Map<String, serde_json::Value>,
    s: &RungSummary,
) -> Result<(), LoadError> {
    if !close(s.rate, e.rate) || rate_label(s.rate) != rate_label(e.rate) {
        return Err(bad(
            path,
            format!(
                "summary is for rate {}, but run.json lists this file for rung {}",
                s.rate, e.rate
            ),
        ));
    }
    if let Some((k, v)) = s
        .to_json_map()
        .into_iter()
        .find(|(_, v)| v.as_f64().is_some_and(|x| measured(x).is_err()))
    {
        return Err(bad(path, format!("`{k}` is {v}; it is never negative")));
    }
    if s.completed.checked_add(s.failed) != Some(s.num_prompts) {
        return Err(bad(
            path,
            format!(
                "completed {} + failed {} is not num_prompts {}",
                s.completed, s.failed, s.num_prompts
            ),
        ));
    }
    // Checked: counts from a tampered file may add up past u64::MAX.
    let by_class = s
        .errors_by_class
        .values()
        .try_fold(0u64, |a, &b| a.checked_add(b));
    if by_class != Some(s.failed) {
        return Err(bad(
            path,
            format!(
                "errors_by_class adds up to {}, but failed is {}",
                by_class.map_or("more than 2^64".into(), |n| n.to_string()),
                s.failed
            ),
        ));
    }
    derived::repeated_keys(path, raw, s)
}

fn ms(d: Option<f64>) -> String {
    d.map_or("null".into(), |v| v.to_string())
}

/// One request line on its own: times are real durations that fit together.
fn line(path: &Path, n: usize, l: &RequestLine) -> Result<(), LoadError> {
    let at = |problem: String| bad(path, format!("line {n} (request {}): {problem}", l.index));
    let times = [
        ("scheduled_ms", Some(l.scheduled_ms)),
        ("sent_ms", Some(l.sent_ms)),
        ("first_token_ms", l.first_token_ms),
        ("end_ms", Some(l.end_ms)),
        ("ttft_ms", l.ttft_ms),
        ("tpot_ms", l.tpot_ms),
        ("e2e_ms", Some(l.e2e_ms)),
    ];
    for (k, v) in times {
        if v.is_some_and(|x| measured(x).is_err()) {
            return Err(at(format!("{k} is {}; times are never negative", ms(v))));
        }
    }
    if l.itl_ms.iter().any(|x| measured(*x).is_err()) {
        return Err(at("itl_ms holds a negative gap".into()));
    }
    if !close(l.e2e_ms, (l.end_ms - l.sent_ms).max(0.0)) {
        return Err(at(format!(
            "e2e_ms {} is not end_ms - sent_ms ({})",
            l.e2e_ms,
            l.end_ms - l.sent_ms
        )));
    }
    if let (Some(t), Some(f)) = (l.ttft_ms, l.first_token_ms) {
        if !close(t, (f - l.sent_ms).max(0.0)) {
            return Err(at(format!(
                "ttft_ms {t} is not first_token_ms - sent_ms ({})",
                f - l.sent_ms
            )));
        }
    }
    if let Some(t) = l.ttft_ms.filter(|t| *t > l.e2e_ms && !close(*t, l.e2e_ms)) {
        return Err(at(format!(
            "ttft_ms {t} is longer than e2e_ms {}",
            l.e2e_ms
        )));
    }
    let tpot = derived::tpot_of(l);
    if !matches!((l.tpot_ms, tpot), (None, None))
        && !l.tpot_ms.zip(tpot).is_some_and(|(a, b)| close(a, b))
    {
        return Err(at(format!(
            "tpot_ms {} is not (e2e_ms - ttft_ms) / (output_tokens - 1) ({})",
            ms(l.tpot_ms),
            ms(tpot)
        )));
    }
    if l.ok == l.error_class.is_some() {
        return Err(at(format!(
            "ok is {} but error_class is {:?}",
            l.ok, l.error_class
        )));
    }
    Ok(())
}

/// A rung's request lines against its summary: every line sane, the counts equal, and the
/// summary's wall time, throughputs, latency statistics and every other key the lines give
/// (`derived`) what the lines give. A rung of several repeats: each repeat's lines
/// against its own summary, then the pool.
pub(crate) fn lines(
    path: &Path,
    s: &RungSummary,
    all: &[(usize, &RequestLine)],
    derived: &Derived,
) -> Result<(), LoadError> {
    let k = s.repeats.len();
    if let Some((n, l)) = all.iter().find(|(_, l)| {
        if k == 0 {
            l.repeat != 0
        } else {
            l.repeat == 0 || l.repeat as usize > k
        }
    }) {
        return Err(bad(
            path,
            format!(
                "line {n}: repeat {} is not a repeat of this rung ({} says {k} repeats)",
                l.repeat,
                result_file_name(s.rate)
            ),
        ));
    }
    if k == 0 {
        return one_run(path, s, all, "", derived);
    }
    for (i, run) in s.repeats.iter().enumerate() {
        if !close(run.rate, s.rate) {
            return Err(bad(
                path,
                format!("repeat {} is of rate {}, not {}", i + 1, run.rate, s.rate),
            ));
        }
        let group: Vec<(usize, &RequestLine)> = all
            .iter()
            .copied()
            .filter(|(_, l)| l.repeat as usize == i + 1)
            .collect();
        // A repeat without a line in a file that has others: its lines are missing.
        let missing = if group.is_empty() && !all.is_empty() {
            format!(
                " (no line of repeat {} in {}: its lines are missing)",
                i + 1,
                path.display()
            )
        } else {
            String::new()
        };
        one_run(path, run, &group, &missing, derived).map_err(|e| match e {
            LoadError::Tampered { path, problem } => LoadError::Tampered {
                path,
                problem: format!("repeat {}: {problem}", i + 1),
            },
            e => e,
        })?;
    }
    pooled::pooled(path, s, all)?;
    derived::pooled_models(path, s, all)
}

/// The request indexes seen so far: a bit per index when they are about as many as the
/// lines (ladder numbers a rung's requests 0, 1, 2, …), a hash set when they are spread out
/// (an edited file must not make a bitmap of four billion bits).
enum Seen {
    Bits(Vec<u64>),
    Set(HashSet<u32>),
}

impl Seen {
    fn new(indexes: impl Iterator<Item = u32> + Clone) -> Seen {
        let n = indexes.clone().count();
        match indexes.max() {
            Some(max) if (max as usize) < 4 * n + 64 => Seen::Bits(vec![0; max as usize / 64 + 1]),
            _ => Seen::Set(HashSet::with_capacity(n)),
        }
    }

    /// Whether `i` is new.
    fn insert(&mut self, i: u32) -> bool {
        match self {
            Seen::Bits(words) => {
                let (w, bit) = (i as usize / 64, 1u64 << (i % 64));
                let new = words[w] & bit == 0;
                words[w] |= bit;
                new
            }
            Seen::Set(set) => set.insert(i),
        }
    }
}

/// `missing`: what to say when `all` is empty though the file is not (a repeat's lines
/// missing), or "" to say the file is empty.
fn one_run(
    path: &Path,
    s: &RungSummary,
    all: &[(usize, &RequestLine)],
    missing: &str,
    derived: &Derived,
) -> Result<(), LoadError> {
    lines_once_each(path, all)?;
    // Requests abandoned in flight by a stop are in no count but their own.
    let finished: Vec<&RequestLine> = all
        .iter()
        .map(|&(_, l)| l)
        .filter(|l| !abandoned(l))
        .collect();
    let measured: Vec<&RequestLine> = finished.iter().copied().filter(|l| !l.warmup).collect();
    let ok: Vec<&RequestLine> = measured.iter().copied().filter(|l| l.ok).collect();
    let lines = Lines {
        all: all.len(),
        finished: &finished,
        measured: &measured,
        ok: &ok,
    };
    counts_agree(path, s, &lines, missing)?;
    let wall_ms = wall_time_agrees(path, s, &measured)?;
    rates_agree(path, s, ok.len(), wall_ms)?;
    latency_stats(path, s, &measured)?;
    let finished: Vec<(usize, &RequestLine)> =
        all.iter().copied().filter(|(_, l)| !abandoned(l)).collect();
    derived.check(path, s, &finished)
}

/// A rung's request lines as its counts see them: how many in all, those that finished (not
/// abandoned in flight), of those the measured ones (not warmup), of those the successes.
struct Lines<'a> {
    all: usize,
    finished: &'a [&'a RequestLine],
    measured: &'a [&'a RequestLine],
    ok: &'a [&'a RequestLine],
}

/// Every line is a sane request line, and no request appears twice.
fn lines_once_each(path: &Path, all: &[(usize, &RequestLine)]) -> Result<(), LoadError> {
    let mut seen = Seen::new(all.iter().map(|(_, l)| l.index));
    for (n, l) in all {
        line(path, *n, l)?;
        if !seen.insert(l.index) {
            return Err(bad(
                path,
                format!("line {n}: request {} appears twice", l.index),
            ));
        }
    }
    Ok(())
}

/// The summary's counts (requests, tokens, failures by class) are the lines' counts.
fn counts_agree(
    path: &Path,
    s: &RungSummary,
    lines: &Lines<'_>,
    missing: &str,
) -> Result<(), LoadError> {
    let Lines {
        all,
        finished,
        measured,
        ok,
    } = *lines;
    let warmup = finished.len() - measured.len();
    let counts = [
        (
            "requests interrupted in flight",
            "interrupted_requests",
            (all - finished.len()) as u64,
            s.interrupted_requests,
        ),
        (
            "measured requests",
            "completed + failed",
            measured.len() as u64,
            s.completed.saturating_add(s.failed),
        ),
        (
            "successful requests",
            "completed",
            ok.len() as u64,
            s.completed,
        ),
        (
            "warmup requests",
            "warmup_requests",
            warmup as u64,
            s.warmup_requests,
        ),
        (
            "output tokens of successful requests",
            "total_output_tokens",
            ok.iter().map(|l| u64::from(l.output_tokens)).sum(),
            s.total_output_tokens,
        ),
        (
            "input tokens of successful requests",
            "total_input_tokens",
            ok.iter().map(|l| u64::from(l.input_tokens)).sum(),
            s.total_input_tokens,
        ),
    ];
    for (what, key, from_lines, in_summary) in counts {
        if from_lines != in_summary {
            let hint = match (all == 0, missing) {
                (false, _) => "",
                (true, "") => " (the file is empty)",
                (true, m) => m,
            };
            return Err(bad(
                path,
                format!(
                    "holds {from_lines} {what}{hint}, but {} says {key} {in_summary}",
                    result_file_name(s.rate)
                ),
            ));
        }
    }
    failures_agree(path, s, measured)
}

/// The summary's failures by class are the measured lines' classes.
fn failures_agree(
    path: &Path,
    s: &RungSummary,
    measured: &[&RequestLine],
) -> Result<(), LoadError> {
    for (class, n) in &s.errors_by_class {
        let from_lines = measured
            .iter()
            .filter(|l| l.error_class.is_some_and(|c| c.key() == class))
            .count() as u64;
        if from_lines != *n {
            return Err(bad(
                path,
                format!(
                    "holds {from_lines} `{class}` failures, but {} says {n}",
                    result_file_name(s.rate)
                ),
            ));
        }
    }
    Ok(())
}

/// The measured requests' wall time (first send to last end, ms), which no request outlasts
/// and which is the summary's duration.
fn wall_time_agrees(
    path: &Path,
    s: &RungSummary,
    measured: &[&RequestLine],
) -> Result<f64, LoadError> {
    let start = measured
        .iter()
        .map(|l| l.sent_ms)
        .fold(f64::INFINITY, f64::min);
    let end = measured.iter().map(|l| l.end_ms).fold(0.0, f64::max);
    let wall_ms = if measured.is_empty() {
        0.0
    } else {
        (end - start).max(0.0)
    };
    if let Some(l) = measured
        .iter()
        .find(|l| l.e2e_ms > wall_ms && !close(l.e2e_ms, wall_ms))
    {
        return Err(bad(
            path,
            format!(
                "request {} has e2e_ms {}, longer than the rung's wall time ({wall_ms} ms)",
                l.index, l.e2e_ms
            ),
        ));
    }
    if !close(wall_ms, s.duration_s * 1000.0) {
        return Err(bad(
            path,
            format!(
                "the requests span {wall_ms} ms, but {} says duration {} s",
                result_file_name(s.rate),
                s.duration_s
            ),
        ));
    }
    Ok(wall_ms)
}

/// The summary's throughputs are its counts over its duration (`ok`: the successes).
fn rates_agree(path: &Path, s: &RungSummary, ok: usize, wall_ms: f64) -> Result<(), LoadError> {
    let per_s = |x: f64| if wall_ms > 0.0 { x / s.duration_s } else { 0.0 };
    let rates = [
        ("request_throughput", s.request_throughput, per_s(ok as f64)),
        (
            "output_throughput",
            s.output_throughput,
            per_s(s.total_output_tokens as f64),
        ),
        (
            "total_token_throughput",
            s.total_token_throughput,
            per_s(s.total_input_tokens as f64 + s.total_output_tokens as f64),
        ),
    ];
    for (key, in_summary, from_lines) in rates {
        if !close(in_summary, from_lines) {
            return Err(bad(
                path,
                format!(
                    "{} says {key} {in_summary}, but these request lines give {from_lines}",
                    result_file_name(s.rate)
                ),
            ));
        }
    }
    Ok(())
}

/// A request line of class `interrupted`: abandoned in flight by a stop.
pub(super) fn abandoned(l: &RequestLine) -> bool {
    l.error_class == Some(crate::record::ErrorClass::Interrupted)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::results::ResultDir;

    #[test]
    fn the_committed_golden_baseline_passes_every_check() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/quickstart");
        let d = ResultDir::open_finished(&dir).unwrap();
        assert_eq!(d.rungs.len(), 5);
    }

    /// A repeated request index is found whether the indexes are dense (a bitmap) or
    /// spread over the whole u32 range (a hash set).
    #[test]
    fn repeated_indexes_are_found_dense_or_spread() {
        for indexes in [vec![0u32, 1, 2, 3, 2], vec![7, u32::MAX, 9, u32::MAX]] {
            let mut seen = Seen::new(indexes.iter().copied());
            let firsts: Vec<bool> = indexes.iter().map(|&i| seen.insert(i)).collect();
            let mut want = vec![true; indexes.len()];
            *want.last_mut().unwrap() = false;
            assert_eq!(firsts, want, "{indexes:?}");
        }
        assert!(matches!(Seen::new([0u32, 1, 2].into_iter()), Seen::Bits(_)));
        assert!(matches!(
            Seen::new([0u32, u32::MAX].into_iter()),
            Seen::Set(_)
        ));
    }

    #[test]
    fn rung_files_are_regular_files_or_links_that_stay_inside() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("run");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("a.json"), "{}").unwrap();
        fs::write(t.path().join("outside.json"), "{}").unwrap();
        assert!(rung_file(&dir, "a.json").is_ok());
        std::os::unix::fs::symlink("a.json", dir.join("inside.json")).unwrap();
        assert!(rung_file(&dir, "inside.json").is_ok());
        std::os::unix::fs::symlink(t.path().join("outside.json"), dir.join("out.json")).unwrap();
        let e = rung_file(&dir, "out.json").unwrap_err().to_string();
        assert!(
            e.contains("out.json") && e.contains("outside the result folder"),
            "{e}"
        );
        fs::create_dir(dir.join("d.json")).unwrap();
        let e = rung_file(&dir, "d.json").unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        // A FIFO would block a reader forever: refused without being opened.
        let fifo = dir.join("f.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = rung_file(&dir, "f.json").unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn entries_must_carry_the_writers_file_names_once() {
        let entry = |rate: f64, result: &str| RungEntry {
            rate,
            result_file: result.into(),
            requests_file: requests_file_name(rate),
            complete: true,
        };
        let p = Path::new("run.json");
        assert!(super::entry(p, &entry(5.0, "result_rate_5.json")).is_ok());
        for bad in [
            "../result_rate_5.json",
            "/tmp/result_rate_5.json",
            "x/result_rate_5.json",
        ] {
            let e = super::entry(p, &entry(5.0, bad)).unwrap_err().to_string();
            assert!(
                e.contains("result_rate_5.json") && e.contains("run.json"),
                "{e}"
            );
        }
        assert!(super::entry(p, &entry(-1.0, "result_rate_-1.json")).is_err());
        assert!(close(1.0, 1.0 + 1e-9) && !close(100.0, 100.01));
    }
}
