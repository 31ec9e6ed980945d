//! The capacity series of a history (`--metric capacity`, docs/history.md): each folder's
//! `capacity.json` answer, its point and interval `[lo, hi]`, in time order, and the change
//! points of the points. A capacity search's probes rarely share a rate with another
//! search's, so its rung tables have little in common; its answer is the one number to
//! follow.
//!
//! The change points are found on the points with the tests every rung series gets
//! ([`super::changepoint`]); the intervals are shown beside them, not tested (judging two
//! answers from their intervals is the `capacity` gate of `compare`).

use super::series::Folder;
use crate::capacity::file::slo_lines_text;
use crate::capacity::CapacityFile;

/// One folder's answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Its folder's position (time order) in the history.
    pub folder: usize,
    pub file: CapacityFile,
}

impl Answer {
    /// The point, when the search found one (not above its max or below its min).
    pub fn point(&self) -> Option<f64> {
        self.file.answer.capacity
    }
}

/// Every folder's answer that could be read.
#[derive(Debug, Clone)]
pub struct CapacitySeries {
    /// In time order; folders without a readable capacity.json are not here.
    pub answers: Vec<Answer>,
}

impl CapacitySeries {
    /// `(folder position, point)` of the answers with a point: the series tested for steps.
    pub fn points(&self) -> Vec<(usize, f64)> {
        self.answers
            .iter()
            .filter_map(|a| a.point().map(|p| (a.folder, p)))
            .collect()
    }

    /// The answer of the folder at `folder`, if it has one.
    pub fn of(&self, folder: usize) -> Option<&Answer> {
        self.answers.iter().find(|a| a.folder == folder)
    }

    /// The unit of the newest answer (`req/s` or `users`).
    pub fn unit(&self) -> &str {
        self.answers.last().map_or("", |a| a.file.unit.as_str())
    }

    /// The SLO of the newest answer, for humans.
    pub fn slo_text(&self) -> String {
        self.answers
            .last()
            .map_or_else(String::new, |a| slo_lines_text(&a.file.slo))
    }
}

/// Each folder's `capacity.json` (read as `compare` reads it, bounded). A folder without
/// one, or with one that cannot be read, is left out of the series with a one-line note; so
/// is the point of an answer that has none (a search that stopped above its max or below its
/// min: its row still shows the one-sided answer). Searches that held different SLOs or
/// searched over different levels get a note: their capacities are different quantities.
pub fn load(folders: &[Folder], notes: &mut Vec<String>) -> CapacitySeries {
    let mut answers = Vec::new();
    for (i, f) in folders.iter().enumerate() {
        match crate::results::read_capacity(&f.dir) {
            Ok(Some(file)) => {
                if file.answer.capacity.is_none() {
                    notes.push(format!(
                        "capacity: #{} {} has no point to follow ({}); left out of the series",
                        i + 1,
                        f.name,
                        file.text
                    ));
                }
                answers.push(Answer { folder: i, file });
            }
            Ok(None) => notes.push(format!(
                "capacity: skipped #{} {}: no capacity.json (not a capacity search)",
                i + 1,
                f.name
            )),
            Err(e) => notes.push(format!(
                "capacity: skipped #{} {}: unreadable capacity.json: {e}",
                i + 1,
                f.name
            )),
        }
    }
    if let Some(newest) = answers.last() {
        let differ: Vec<String> = answers
            .iter()
            .filter(|a| !a.file.same_quantity(&newest.file))
            .map(|a| {
                format!(
                    "#{} over {} at {}",
                    a.folder + 1,
                    a.file.over,
                    slo_lines_text(&a.file.slo)
                )
            })
            .collect();
        if !differ.is_empty() {
            notes.push(format!(
                "capacity: the searches held different SLOs or levels (the newest: over {} at \
                 {}; {}): a step may be a change of SLO",
                newest.file.over,
                slo_lines_text(&newest.file.slo),
                differ.join("; ")
            ));
        }
    }
    CapacitySeries { answers }
}
