//! A folder whose run never finished (`run.json` still says `running`: the process was
//! killed, crashed, or is still running). A soak rewrites its rung's summary every interval
//! precisely so such a folder keeps its data (docs/soak.md): the report shows the rungs that
//! ended and the rung in progress from its last partial summary, and says the run did not
//! finish. `compare`, `gate` and `bless` still refuse the folder.

use std::path::Path;

use crate::metrics::RungSummary;
use crate::results::{result_file_name, RunInfo};

/// Largest partial summary read (a summary is a few KB; a bigger file was not written by a
/// rung).
const MAX_SUMMARY_BYTES: u64 = 16 * 1024 * 1024;

/// The summaries of rungs in progress when the run stopped: a rung of the scenario that
/// has no entry in run.json but a result file marked `"partial": true`. Each is marked
/// interrupted (its figures cover the requests finished by its last interval).
pub fn partial_rungs(dir: &Path, info: &RunInfo) -> Vec<RungSummary> {
    let mut out = Vec::new();
    for rate in scenario_levels(info) {
        if info.rungs.iter().any(|e| e.rate == rate) {
            continue;
        }
        let p = dir.join(result_file_name(rate));
        let Some(map) = crate::fileread::read_bounded(&p, MAX_SUMMARY_BYTES)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Map<_, _>>(&b).ok())
        else {
            continue;
        };
        // The key `RunWriter::write_partial_rung` adds.
        if map.get("partial") != Some(&serde_json::Value::Bool(true)) {
            continue;
        }
        if let Ok(mut s) = RungSummary::from_json_map(&map) {
            if s.rate == rate {
                s.interrupted = true;
                out.push(s);
            }
        }
    }
    out
}

/// The warning a report of an unfinished run leads with.
pub fn note(info: &RunInfo, partial: &[RungSummary]) -> String {
    let mut s = "the run did not finish: run.json still says `running` (its process was killed \
                 or crashed, or is still running); the figures are what the folder held when \
                 this report was made"
        .to_string();
    for r in partial {
        s.push_str(&format!(
            "; rung {} is shown from the partial summary saved at its last interval ({} \
             requests finished), marked (partial), and left out of the knee, the SLO range \
             and the baseline",
            info.load.level(r.rate),
            r.num_prompts + r.warmup_requests
        ));
    }
    if let Some(d) = &info.status_detail {
        s.push_str(&format!("; last progress: {d}"));
    }
    s
}

/// The levels of the scenario's rungs (rates with the baseline, or users).
fn scenario_levels(info: &RunInfo) -> Vec<f64> {
    let load = &info.scenario["load"];
    let list = |k: &str| -> Vec<f64> {
        load[k]
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
            .unwrap_or_default()
    };
    let mut levels = list("concurrency");
    if levels.is_empty() {
        levels.extend(load["baseline_rate"].as_f64());
        levels.extend(list("rates"));
    }
    levels
}
