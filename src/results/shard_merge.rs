//! `ladder merge`: the folders of a sharded run (`ladder run --shard i/N`) made into one
//! ordinary result folder.
//!
//! Nothing is averaged: every rung's summary is computed again, by the same
//! `metrics::summarize` a single-machine run uses, from the union of the shards' request
//! lines (read back as records, to the nanosecond and microsecond they were written at), so
//! the merged percentiles are exact and equal to those of the same requests measured in one
//! folder. The lines are written in request order. What only one place can know comes from
//! there: the server's `/metrics` summary from shard 0 (the only shard that scrapes), the
//! prompts that missed their length from every shard's count.
//!
//! Refused: a shard missing or given twice, shards of different runs (scenario, seed, tool
//! version, shard count, start time), and a shard that did not complete (it stopped the run).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::load::{LoadedRung, ResultDir};
use super::load_error::LoadError;
use super::shard_info::{MergedShard, MergedShards, ShardRungLag};
use super::types::{RequestLine, RunInfo, RunStatus, RungEntry};
use super::write::{atomic_write, vllm_run_keys, WriteError};
use crate::metrics::{repeats, summarize, Latency, RungContext, RungSummary};
use crate::record::RequestRecord;
use crate::scenario::Slo;

/// Why shards could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{0}")]
    Load(#[from] LoadError),
    #[error("{0}")]
    Write(#[from] WriteError),
    #[error("{0}")]
    Refused(String),
}

/// What a merge did.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The merged folder.
    pub dir: PathBuf,
    /// Its run.json.
    pub info: RunInfo,
}

impl Merged {
    /// One line for the terminal.
    pub fn describe(&self) -> String {
        let s = self
            .info
            .shards
            .as_ref()
            .expect("a merged folder lists its shards");
        let requests: u64 = s
            .shards
            .iter()
            .flat_map(|m| &m.rungs)
            .map(|r| r.requests)
            .sum();
        format!(
            "merged {} shards ({} rungs, {requests} measured requests; largest start error {:.3} ms) into {}",
            s.count,
            self.info.rungs.len(),
            s.max_start_error_ms,
            self.dir.display()
        )
    }
}

fn refused(m: impl Into<String>) -> MergeError {
    MergeError::Refused(m.into())
}

/// The shard folders to merge: `dirs` as given, or, for one folder that is not itself a
/// result folder (a run's `<scenario>.shards/<start>/`), the `shard-*` folders in it. With
/// `wait`, first wait up to that long until the folder holds every shard (the count its
/// shards' run.json give) and none of them is still `running`.
pub fn shard_dirs(
    dirs: &[PathBuf],
    wait: Option<Duration>,
    notes: &crate::notes::Notes,
) -> Result<Vec<PathBuf>, MergeError> {
    for (i, d) in dirs.iter().enumerate() {
        let same = |o: &PathBuf| match (fs::canonicalize(o), fs::canonicalize(d)) {
            (Ok(a), Ok(b)) => a == b,
            _ => o == d,
        };
        if dirs[..i].iter().any(same) {
            return Err(refused(format!(
                "{} is given twice; give each shard's folder once, or the run's \
                 <scenario>.shards/<start>/ folder alone",
                d.display()
            )));
        }
    }
    let parent = match dirs {
        [one] if !one.join("run.json").exists() => one,
        _ if wait.is_some() => {
            return Err(refused(
                "--wait takes one folder, the run's <scenario>.shards/<start>/ (the shards' folders appear in it as they start)",
            ))
        }
        _ => return Ok(dirs.to_vec()),
    };
    let deadline = wait.map(|w| std::time::Instant::now() + w);
    loop {
        let found = list_shards(parent);
        let ready = match &found {
            Ok(d) => shards_finished(d),
            Err(_) => false,
        };
        let out_of_time = deadline.is_none_or(|d| std::time::Instant::now() >= d);
        if ready || out_of_time {
            let found = found?;
            if found.is_empty() {
                return Err(refused(format!(
                    "{}: no shard folders (shard-<i>-of-<N>) in it; give the shards' folders, or the \
                     <scenario>.shards/<start>/ folder `ladder run --shard` wrote them into",
                    parent.display()
                )));
            }
            if !ready && wait.is_some() {
                notes.err(&format!(
                    "warning: waited {} for the shards in {}; merging what is there (a missing or unfinished shard is refused)",
                    humantime_secs(wait.unwrap_or_default()),
                    parent.display()
                ));
            }
            return Ok(found);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn humantime_secs(d: Duration) -> String {
    format!("{} s", d.as_secs())
}

fn list_shards(parent: &Path) -> Result<Vec<PathBuf>, MergeError> {
    let mut out: Vec<PathBuf> = fs::read_dir(parent)
        .map_err(|source| LoadError::Io {
            path: parent.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("shard-"))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// True when `dirs` hold as many shards as their run.json count, none still running.
fn shards_finished(dirs: &[PathBuf]) -> bool {
    let infos: Vec<RunInfo> = dirs
        .iter()
        .filter_map(|d| super::load::read(&d.join("run.json")).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect();
    let count = infos
        .first()
        .and_then(|i| i.shard.as_ref())
        .map(|s| s.count as usize);
    infos.len() == dirs.len()
        && count == Some(dirs.len())
        && infos.iter().all(|i| i.status != RunStatus::Running)
}

/// Merge the shard folders `dirs` into the new folder `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let mut shards = Vec::with_capacity(dirs.len());
    for d in dirs {
        let r = ResultDir::open(d)?;
        if r.info.shard.is_none() {
            return Err(refused(format!(
                "{}: not a shard's folder (its run.json has no `shard`); `ladder merge` takes the \
                 folders written by `ladder run --shard i/N`",
                d.display()
            )));
        }
        shards.push(r);
    }
    let shards = check_set(shards)?;
    if out.exists()
        && fs::read_dir(out)
            .map(|mut e| e.next().is_some())
            .unwrap_or(true)
    {
        return Err(refused(format!(
            "{} exists and is not empty: give --out a new folder",
            out.display()
        )));
    }
    fs::create_dir_all(out).map_err(|source| WriteError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    let first = &shards[0];
    let slo: Slo = first
        .info
        .scenario
        .get("slo")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let mut info = first.info.clone();
    info.shard = None;
    info.rungs.clear();
    info.status = RunStatus::Complete;
    info.status_detail = None;
    info.started_at = shards
        .iter()
        .map(|s| s.info.started_at)
        .min()
        .expect("shards");
    info.ended_at = shards.iter().filter_map(|s| s.info.ended_at).max();
    info.warnings = warnings(&shards);
    let mut merged_shards: Vec<MergedShard> = shards
        .iter()
        .zip(dirs_in_order(&shards))
        .map(|(s, folder)| MergedShard {
            shard: s.info.shard.clone().expect("checked"),
            folder,
            host: s.info.host.clone(),
            started_at: s.info.started_at,
            ended_at: s.info.ended_at,
            rungs: vec![],
        })
        .collect();
    for rung in &first.rungs {
        let rate = rung.entry.rate;
        let mut lines = Vec::new();
        let mut parts = Vec::with_capacity(shards.len());
        for (k, s) in shards.iter().enumerate() {
            let r = s.rung(rate).expect("checked: same rungs");
            let own = s.requests(r)?;
            owned_only(s, r, &own)?;
            lines.extend(own);
            let lag = r.summary.stats(Latency::DispatchLag);
            merged_shards[k].rungs.push(ShardRungLag {
                rate,
                requests: r.summary.num_prompts,
                dispatch_lag_median_ms: lag.median,
                dispatch_lag_p99_ms: lag.p99,
                dispatch_lag_max_ms: lag.max,
            });
            parts.push(&r.summary);
        }
        lines.sort_by_key(|l| (l.repeat, l.index));
        if let Some(w) = lines
            .windows(2)
            .find(|w| (w[0].repeat, w[0].index) == (w[1].repeat, w[1].index))
        {
            return Err(refused(format!(
                "rung {rate}: request {} is in two shards' folders: shards of one run own disjoint \
                 requests, so these folders were edited or come from different runs",
                w[0].index
            )));
        }
        let summary = rung_summary(&lines, &parts, &slo);
        let mut text = Vec::new();
        for l in &lines {
            serde_json::to_writer(&mut text, l).expect("a request line serialises");
            text.write_all(b"\n").expect("writing to memory");
        }
        atomic_write(&out.join(&rung.entry.requests_file), &text)?;
        let mut map = summary.to_json_map();
        map.extend(vllm_run_keys(&info));
        let json = serde_json::to_vec_pretty(&map).expect("summary serialises");
        atomic_write(&out.join(&rung.entry.result_file), &json)?;
        let metrics = super::names::server_metrics_file_name(rate);
        if let Ok(bytes) =
            crate::fileread::read_bounded(&first.path.join(&metrics), super::load::MAX_SERIES_BYTES)
        {
            atomic_write(&out.join(&metrics), &bytes)?;
        }
        info.rungs.push(RungEntry {
            complete: shards
                .iter()
                .all(|s| s.rung(rate).is_some_and(|r| r.entry.complete)),
            ..rung.entry.clone()
        });
    }
    let max_start_error_ms = merged_shards
        .iter()
        .flat_map(|m| &m.shard.rung_starts)
        .map(|r| r.start_error_ms.abs())
        .fold(0.0, f64::max);
    info.shards = Some(MergedShards {
        count: shards.len() as u32,
        shards: merged_shards,
        max_start_error_ms,
    });
    let text = serde_json::to_vec_pretty(&info).expect("RunInfo serialises");
    atomic_write(&out.join("run.json"), &text)?;
    // Everything written passes the loader's checks (lines against summaries), or it fails here.
    let back = ResultDir::open_finished(out)?;
    Ok(Merged {
        dir: out.to_path_buf(),
        info: back.info,
    })
}

/// Refuse a shard's line that is not one of its own: a shard owns the rung's request indices
/// `index % N == i` below the rung's count (`load.warmup_requests` +
/// `workload.requests_per_rung`), as `ladder run --shard i/N` sends them. A line outside it
/// was edited in, or comes from another shard or run; merging it would count a request twice
/// or one that was never scheduled.
fn owned_only(s: &ResultDir, r: &LoadedRung, lines: &[RequestLine]) -> Result<(), MergeError> {
    let sh = s.info.shard.as_ref().expect("checked: a shard's folder");
    let n = |p: &str| {
        s.info
            .scenario
            .pointer(p)
            .and_then(serde_json::Value::as_u64)
    };
    let count =
        n("/workload/requests_per_rung").map(|m| m + n("/load/warmup_requests").unwrap_or(0));
    for (k, l) in lines.iter().enumerate() {
        let index = u64::from(l.index);
        let why = if index % u64::from(sh.count) != u64::from(sh.index) {
            format!(
                "request {index} belongs to shard {} of {} (index % {} = {}), not to this shard {}",
                index % u64::from(sh.count),
                sh.count,
                sh.count,
                index % u64::from(sh.count),
                sh.index
            )
        } else if count.is_some_and(|c| index >= c) {
            format!(
                "request {index} is past the rung's {} requests (load.warmup_requests + \
                 workload.requests_per_rung): no shard sends it",
                count.unwrap_or_default()
            )
        } else {
            continue;
        };
        return Err(refused(format!(
            "{}:{}: {why}; a shard's folder holds only the requests `ladder run --shard {}` \
             sends, so this folder was edited or mixes shards: run the shards again",
            s.path.join(&r.entry.requests_file).display(),
            k + 1,
            sh.label()
        )));
    }
    Ok(())
}

/// The shards in index order, after checking they are all of one run, each once, complete.
fn check_set(mut shards: Vec<ResultDir>) -> Result<Vec<ResultDir>, MergeError> {
    shards.sort_by_key(|s| s.info.shard.as_ref().map(|i| i.index));
    let first = shards[0].info.clone();
    let sh = first.shard.clone().expect("checked");
    let name = |d: &ResultDir| d.path.display().to_string();
    for s in &shards {
        let i = s.info.shard.as_ref().expect("checked");
        let same = |what: &str, a: String, b: String| -> Result<(), MergeError> {
            if a == b {
                return Ok(());
            }
            Err(refused(format!(
                "{} and {} are not shards of one run: their {what} differ ({a} vs {b})",
                name(&shards[0]),
                name(s)
            )))
        };
        same("shard counts", sh.count.to_string(), i.count.to_string())?;
        same(
            "ladder versions",
            first.tool_version.clone(),
            s.info.tool_version.clone(),
        )?;
        same(
            "scenario names",
            first.scenario_name.clone(),
            s.info.scenario_name.clone(),
        )?;
        let seed = |r: &RunInfo| {
            r.scenario
                .pointer("/workload/seed")
                .map(|v| v.to_string())
                .unwrap_or_default()
        };
        same("seeds (workload.seed)", seed(&first), seed(&s.info))?;
        if first.scenario != s.info.scenario {
            return Err(refused(format!(
                "{} and {} are not shards of one run: their resolved scenarios differ (run.json \
                 `scenario`); every shard must run the same file with the same flags",
                name(&shards[0]),
                name(s)
            )));
        }
        same(
            "start times (--start-at)",
            sh.start_at.to_rfc3339(),
            i.start_at.to_rfc3339(),
        )?;
        if s.info.status == RunStatus::Running {
            return Err(refused(format!(
                "{}: shard {} is still running (its run.json says `running`): merge once every \
                 shard has finished, e.g. `ladder merge --wait 2h <scenario>.shards/<start>/` waits \
                 for them; if its process was killed, it never finishes: run all shards again",
                name(s),
                i.index,
            )));
        }
        if s.info.status != RunStatus::Complete {
            return Err(refused(format!(
                "{}: shard {} ended `{}`{}: a run with a shard that did not complete is not merged \
                 (its share of the load is missing or skewed); run all shards again",
                name(s),
                i.index,
                serde_json::to_value(s.info.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
                s.info.status_detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default()
            )));
        }
        let rates = |d: &ResultDir| {
            d.rungs
                .iter()
                .map(|r| r.entry.rate.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        same("rungs", rates(&shards[0]), rates(s))?;
    }
    for (want, s) in shards.iter().enumerate() {
        let i = s.info.shard.as_ref().expect("checked").index as usize;
        if i < want {
            return Err(refused(format!(
                "shard {i} of {} is given twice ({} and another folder); give each shard's folder once",
                sh.count,
                name(s)
            )));
        }
        if i > want {
            return Err(refused(format!(
                "shard {want} of {} is missing: give every shard's folder (found {})",
                sh.count,
                shards.len()
            )));
        }
    }
    if shards.len() != sh.count as usize {
        return Err(refused(format!(
            "shard {} of {} is missing: give every shard's folder (found {})",
            shards.len(),
            sh.count,
            shards.len()
        )));
    }
    Ok(shards)
}

fn dirs_in_order(shards: &[ResultDir]) -> Vec<String> {
    shards
        .iter()
        .map(|s| s.path.display().to_string())
        .collect()
}

/// Warnings of every shard: once when every shard raised it, else with the shard named.
fn warnings(shards: &[ResultDir]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in shards {
        let i = s.info.shard.as_ref().expect("checked");
        for w in &s.info.warnings {
            let everywhere = shards.iter().all(|o| o.info.warnings.contains(w));
            let line = if everywhere {
                w.clone()
            } else {
                format!("shard {}: {w}", i.label())
            };
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

impl super::shard_info::ShardInfo {
    /// `i/N`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

/// A rung's summary from the lines of all shards (sorted), as one machine's run computes it.
pub fn rung_summary(lines: &[RequestLine], parts: &[&RungSummary], slo: &Slo) -> RungSummary {
    let first = parts[0];
    let repeats_n = first.repeats.len();
    // The cap or users of the whole run: the shards' parts added up.
    let max_concurrency = parts
        .iter()
        .map(|p| p.max_concurrency)
        .try_fold(0u32, |a, c| c.map(|c| a + c));
    let ctx = |k: Option<usize>| {
        let of = |p: &RungSummary| match k {
            Some(k) => p.repeats.get(k).cloned().unwrap_or_default(),
            None => p.clone(),
        };
        RungContext {
            rate: first.rate,
            load: first.load,
            burstiness: first.burstiness,
            max_concurrency,
            slo: slo.clone(),
            inexact_prompts: parts.iter().map(|p| of(p).inexact_prompts).sum(),
            interrupted: parts.iter().any(|p| of(p).interrupted),
            pooling: first.pooling,
        }
    };
    let records = |repeat: Option<u32>| -> Vec<RequestRecord> {
        lines
            .iter()
            .filter(|l| repeat.is_none_or(|r| l.repeat == r))
            .map(RequestRecord::from)
            .collect()
    };
    if repeats_n == 0 {
        let mut s = summarize(&records(None), &ctx(None));
        s.server = first.server.clone();
        return s;
    }
    let runs: Vec<RungSummary> = (0..repeats_n)
        .map(|k| {
            let mut s = summarize(&records(Some(k as u32 + 1)), &ctx(Some(k)));
            s.server = first.repeats[k].server.clone();
            s
        })
        .collect();
    // As the runner pools repeats: latency over every repeat's requests together.
    let all = summarize(
        &records(None),
        &RungContext {
            slo: Slo::default(),
            inexact_prompts: 0,
            interrupted: false,
            ..ctx(None)
        },
    );
    // As the runner pools them: the cold / warm split over every repeat's requests.
    let mut pooled = repeats::pool(runs, all.latency, all.reasoning);
    pooled.prefix = all.prefix;
    // As the runner pools them: each model's share of every repeat's requests together.
    pooled.models = repeats::pool_models(all.models, pooled.duration_s);
    pooled
}
