//! What every chart over the ladder reads from the [`Report`]: its runs with their labels and
//! dashes, their knees, the top offered rate, the x axis' name and the rungs with errors.

use super::chart_model::{Marker, GREY_, KNEE};
use super::{Report, RunReport};

/// Label prefix and dash for each run: a single run is plain; in an overlay the base is dashed.
pub(super) fn runs(report: &Report) -> Vec<(&RunReport, String, bool)> {
    if report.is_overlay() {
        report
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| (r, format!("{} ", r.label), i == 0))
            .collect()
    } else {
        vec![(&report.runs[0], String::new(), false)]
    }
}

pub(super) fn knee_markers(report: &Report) -> Vec<Marker> {
    runs(report)
        .into_iter()
        .filter_map(|(run, prefix, dashed)| {
            run.analysis.knee.as_ref().map(|k| Marker {
                rate: k.rate,
                label: format!("{prefix}knee {}", run.info.load.level(k.rate)),
                color: if dashed { GREY_ } else { KNEE },
            })
        })
        .collect()
}

/// What the x axis holds, for chart titles: "offered rate" on a rate ladder, else the
/// ladder's own axis ("concurrency (users)", …).
pub(super) fn x_name(report: &Report) -> &'static str {
    match report.load() {
        crate::scenario::LoadKind::Rate => "offered rate",
        other => other.axis(),
    }
}

/// The rungs where some run had errors, with the highest error rate there: marked on the
/// charts over the ladder, so a median that falls as requests are turned away (only the
/// fast ones complete) is not read as an improvement.
pub(super) fn error_flags(report: &Report) -> Vec<(f64, String)> {
    let mut by: Vec<(f64, f64)> = Vec::new();
    for r in report.runs.iter().flat_map(|r| r.rungs.iter()) {
        let e = r.error_rate();
        if e.is_nan() || e <= 0.0 {
            continue;
        }
        match by.iter_mut().find(|b| b.0 == r.rate) {
            Some(b) => b.1 = b.1.max(e),
            None => by.push((r.rate, e)),
        }
    }
    by.sort_by(|a, b| a.0.total_cmp(&b.0));
    by.into_iter()
        .map(|(rate, e)| (rate, error_label(e)))
        .collect()
}

pub(super) fn max_rate(report: &Report) -> f64 {
    report
        .runs
        .iter()
        .flat_map(|r| r.rungs.iter().map(|r| r.rate))
        .fold(0.0, f64::max)
}

/// `67 % err`, `0.4 % err`.
pub(super) fn error_label(rate: f64) -> String {
    let pct = rate * 100.0;
    if pct >= 1.0 {
        format!("{pct:.0}% err")
    } else {
        format!("{pct:.1}% err")
    }
}
