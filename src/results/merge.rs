//! `ladder bless --add`: one more run added to a golden baseline as further repeats.
//!
//! The baseline stays one result folder: its rungs' request lines gain the added run's
//! lines (renumbered as repeats after the baseline's own), and each rung summary becomes
//! the pool of every repeat (`metrics::repeats`), exactly the shape a run with
//! `load.repeats` writes. Compare and gate then see a baseline of several runs.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use super::check::samples;
use super::load::ResultDir;
use super::load_error::LoadError;
use super::types::{RequestLine, RungEntry};
use super::write::{atomic_write, vllm_run_keys, WriteError};
use crate::metrics::compute::stats;
use crate::metrics::prefix::PrefixSplit;
use crate::metrics::reasoning::Reasoning;
use crate::metrics::{repeats, Latency, RungSummary};

/// Why a run could not be added.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{0}")]
    Load(#[from] LoadError),
    #[error("{0}")]
    Write(#[from] WriteError),
    #[error("{0}")]
    Refused(String),
}

/// The runs (repeats) of one rung: its own summaries, one per run.
fn runs_of(s: &RungSummary) -> Vec<RungSummary> {
    if s.repeats.is_empty() {
        vec![s.clone()]
    } else {
        s.repeats.clone()
    }
}

/// Write into `to` (a new folder) the baseline `base` with the run `add` as its next
/// repeats. Both must hold the same complete rungs.
pub fn add_run(base: &ResultDir, add: &ResultDir, to: &Path) -> Result<(), MergeError> {
    if base.imported.is_some() || add.imported.is_some() {
        return Err(MergeError::Refused(
            "a folder of vLLM result files cannot take or give repeats; bless a ladder run".into(),
        ));
    }
    if base.info.load != add.info.load {
        return Err(MergeError::Refused(format!(
            "the baseline is a {} ladder and {} a {} ladder: a run added to a baseline must \
             measure the same rungs",
            base.info.load.name(),
            add.path.display(),
            add.info.load.name()
        )));
    }
    let rates = |d: &ResultDir| -> Vec<f64> {
        let mut r: Vec<f64> = d.rungs.iter().map(|r| r.entry.rate).collect();
        r.sort_by(f64::total_cmp);
        r
    };
    if rates(base) != rates(add) {
        return Err(MergeError::Refused(format!(
            "the baseline has rungs {:?} {} and {} has {:?}: a run added to a baseline must \
             measure the same rungs",
            rates(base),
            base.info.load.unit(),
            add.path.display(),
            rates(add)
        )));
    }
    fs::create_dir_all(to).map_err(|source| WriteError::Io {
        path: to.to_path_buf(),
        source,
    })?;
    let mut info = base.info.clone();
    info.rungs.clear();
    for rung in &base.rungs {
        let other = add.rung(rung.entry.rate).expect("same rates");
        let (mut lb, mut la) = (base.requests(rung)?, add.requests(other)?);
        let (rb, ra) = (runs_of(&rung.summary), runs_of(&other.summary));
        for l in &mut lb {
            l.repeat = l.repeat.max(1);
        }
        for l in &mut la {
            l.repeat = l.repeat.max(1) + rb.len() as u32;
        }
        lb.append(&mut la);
        let measured: Vec<&RequestLine> = lb
            .iter()
            .filter(|l| !l.warmup && !l.interrupted())
            .collect();
        let latency: BTreeMap<Latency, _> = Latency::ALL
            .into_iter()
            .map(|w| (w, stats(samples(w, &measured))))
            .collect();
        let reasoning = Reasoning::from_parts(
            measured
                .iter()
                .filter(|l| l.ok)
                .map(|l| (l.reasoning_tokens, l.output_tokens, l.ttfc_ms())),
        );
        let mut pooled = repeats::pool(rb.into_iter().chain(ra).collect(), latency, reasoning);
        pooled.prefix = PrefixSplit::from_parts(
            measured
                .iter()
                .map(|l| (l.prefix_group, l.prefix_first, l.ttft_ms.filter(|_| l.ok))),
        );
        // Each model's share of every repeat's requests, as the runner pools repeats.
        pooled.models =
            super::check::models_of(&measured, pooled.duration_s, pooled.pooling.is_some());
        let mut text = Vec::new();
        for l in &lb {
            serde_json::to_writer(&mut text, l).expect("a request line serialises");
            text.write_all(b"\n").expect("writing to memory");
        }
        atomic_write(&to.join(&rung.entry.requests_file), &text)?;
        let mut map = pooled.to_json_map();
        map.extend(vllm_run_keys(&info));
        let json = serde_json::to_vec_pretty(&map).expect("summary serialises");
        atomic_write(&to.join(&rung.entry.result_file), &json)?;
        let metrics = super::names::server_metrics_file_name(rung.entry.rate);
        if let Ok(bytes) =
            crate::fileread::read_bounded(&base.path.join(&metrics), super::load::MAX_SERIES_BYTES)
        {
            atomic_write(&to.join(&metrics), &bytes)?;
        }
        info.rungs.push(RungEntry {
            complete: rung.entry.complete && other.entry.complete,
            ..rung.entry.clone()
        });
    }
    info.warnings.push(format!(
        "`ladder bless --add` added the run of {} (started {}, commit {}, ladder {}) as repeats {}..{}",
        add.path.display(),
        add.info.started_at.to_rfc3339(),
        add.info.git_commit.as_deref().unwrap_or("unknown"),
        add.info.tool_version,
        base.rungs.first().map_or(1, |r| runs_of(&r.summary).len() + 1),
        base.rungs
            .first()
            .map_or(1, |r| runs_of(&r.summary).len() + add.rungs.first().map_or(1, |a| runs_of(&a.summary).len()))
    ));
    let text = serde_json::to_vec_pretty(&info).expect("RunInfo serialises");
    atomic_write(&to.join("run.json"), &text)?;
    // Everything written passes the loader's checks, or nothing is blessed.
    let merged = ResultDir::open_finished(to)?;
    for r in &merged.rungs {
        merged.requests(r)?;
    }
    Ok(())
}
