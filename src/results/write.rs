//! Writing a result folder. Every file is written atomically (temp file in the same folder,
//! fsync, rename), so a reader never sees a half-written JSON, and `run.json` is rewritten
//! after each rung: an interrupted or crashed run keeps every finished rung, and says so.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::names::{requests_file_name, result_file_name};
use super::types::{RequestLineRef, RunInfo, RunStatus, RungEntry};
use crate::metrics::RungSummary;
use crate::record::RequestRecord;
use crate::scenario::{is_scenario_name, rate_label};

/// Why the result folder could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write results under {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A name or rate that would put a file where it does not belong.
    #[error("{0}")]
    Refused(String),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Write `bytes` to `path` atomically: temp file beside it, fsync, rename.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    atomic_write_with(path, |w| w.write_all(bytes))
}

/// Like [`atomic_write`], with the content streamed by `fill` through a buffered writer, so
/// a large file (a rung's request lines) is never held whole in memory.
pub(super) fn atomic_write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), WriteError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp"));
    let written = (|| {
        let f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
        let mut buf = BufWriter::with_capacity(1 << 16, f);
        fill(&mut buf).map_err(io_err(&tmp))?;
        let f = buf.into_inner().map_err(|e| io_err(&tmp)(e.into_error()))?;
        f.sync_all().map_err(io_err(&tmp))?;
        drop(f);
        fs::rename(&tmp, path).map_err(io_err(path))
    })();
    if written.is_err() {
        // A full disk must not leave a truncated temp file behind in the result folder.
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Folder name of a run started at `t`: `YYYY-MM-DDTHH-MM-SSZ`.
pub fn timestamp_dir_name(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H-%M-%SZ").to_string()
}

/// An open result folder being filled by a run.
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    info: RunInfo,
}

/// The run-level keys vLLM's result files carry beside the metrics, so scripts written for
/// them find them in ladder's: `date` (vLLM's `%Y%m%d-%H%M%S`), `backend` / `endpoint_type`
/// (`openai` for completions, `openai-chat` for chat, as vLLM names them), `label` (the
/// scenario name), `model_id` (the model sent) and `tokenizer_id` (the tokenizer path).
pub(crate) fn vllm_run_keys(info: &RunInfo) -> serde_json::Map<String, serde_json::Value> {
    let sc = &info.scenario;
    let text = |v: Option<&serde_json::Value>| {
        v.and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .into()
    };
    let backend = match sc.pointer("/endpoint/api").and_then(|v| v.as_str()) {
        Some("chat") => "openai-chat",
        _ => "openai",
    };
    let mut m = serde_json::Map::new();
    m.insert(
        "date".into(),
        info.started_at.format("%Y%m%d-%H%M%S").to_string().into(),
    );
    m.insert("backend".into(), backend.into());
    m.insert("endpoint_type".into(), backend.into());
    m.insert("label".into(), info.scenario_name.clone().into());
    m.insert("model_id".into(), text(sc.get("model")));
    m.insert("tokenizer_id".into(), text(sc.get("tokenizer")));
    m
}

impl RunWriter {
    /// Create `<root>/<scenario>/<timestamp>/` (suffixed `-2`, `-3`, … if taken), check it
    /// is writable, and write run.json with status `running`. Called before any load is
    /// sent, so an unwritable or full disk fails the run up front.
    pub fn create(root: &Path, info: RunInfo) -> Result<RunWriter, WriteError> {
        // Validation refuses such names first; this keeps a bad name from ever choosing a
        // folder outside `root`, whoever the caller.
        if !is_scenario_name(&info.scenario_name) {
            return Err(WriteError::Refused(format!(
                "scenario name {:?} cannot name a result folder: use letters, digits, `.`, `_`, `-` (not `.`, `..` or `.replaced`)",
                info.scenario_name
            )));
        }
        let parent = root.join(&info.scenario_name);
        fs::create_dir_all(&parent).map_err(io_err(&parent))?;
        let base = timestamp_dir_name(info.started_at);
        let mut dir = parent.join(&base);
        let mut n = 2;
        loop {
            match fs::create_dir(&dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    dir = parent.join(format!("{base}-{n}"));
                    n += 1;
                }
                Err(e) => return Err(io_err(&dir)(e)),
            }
        }
        let w = RunWriter { dir, info };
        w.write_run_json()?;
        Ok(w)
    }

    /// Create exactly `dir` (its parents as needed; refused when it exists) and write
    /// run.json with status `running`: a shard's folder, whose place the shard run chooses.
    pub fn create_exact(dir: &Path, info: RunInfo) -> Result<RunWriter, WriteError> {
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        fs::create_dir(dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => WriteError::Refused(format!(
                "{} exists already: a shard never writes into another run's folder; give a new \
                 --start-at (it names the folder) or another --out",
                dir.display()
            )),
            _ => io_err(dir)(e),
        })?;
        let w = RunWriter {
            dir: dir.to_path_buf(),
            info,
        };
        w.write_run_json()?;
        Ok(w)
    }

    /// The folder being written.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// run.json as last written.
    pub fn info(&self) -> &RunInfo {
        &self.info
    }

    /// Add a warning to run.json (written with the next update).
    pub fn warn(&mut self, message: String) {
        self.info.warnings.push(message);
    }

    /// Record the server's identity in run.json (written with the next update).
    pub fn set_server(&mut self, id: crate::servermetrics::ServerIdentity) {
        self.info.server = Some(id);
    }

    /// The shard record of a shard's folder (written with the next update); `None` for an
    /// unsharded run.
    pub fn shard_mut(&mut self) -> Option<&mut super::ShardInfo> {
        self.info.shard.as_mut()
    }

    /// run.json to be rewritten by [`RunWriter::write_run_json`] (a streamed rung's entry).
    pub(super) fn info_mut(&mut self) -> &mut RunInfo {
        &mut self.info
    }

    pub(super) fn write_run_json(&self) -> Result<(), WriteError> {
        let text = serde_json::to_vec_pretty(&self.info).expect("RunInfo serialises");
        atomic_write(&self.dir.join("run.json"), &text)
    }

    /// Write one rung's per-request lines and summary, then list it in run.json.
    pub fn write_rung(
        &mut self,
        summary: &RungSummary,
        records: &[RequestRecord],
        complete: bool,
    ) -> Result<(), WriteError> {
        self.write_rung_repeats(summary, &[records], complete)
    }

    /// Write a rung measured `repeats.len()` times: every repeat's request lines in one
    /// file (each line with its 1-based `repeat` when there are two or more), the pooled
    /// summary (with its per-repeat summaries), then list it in run.json.
    pub fn write_rung_repeats(
        &mut self,
        summary: &RungSummary,
        repeats: &[&[RequestRecord]],
        complete: bool,
    ) -> Result<(), WriteError> {
        let label = rate_label(summary.rate);
        if let Some(e) = self.info.rungs.iter().find(|e| rate_label(e.rate) == label) {
            return Err(WriteError::Refused(format!(
                "rung {} would overwrite the files of rung {} (both are labelled {label})",
                summary.rate, e.rate
            )));
        }
        let requests_file = requests_file_name(summary.rate);
        let result_file = result_file_name(summary.rate);
        let numbered = repeats.len() > 1;
        // Streamed line by line: the whole file in memory would cost more than the records.
        atomic_write_with(&self.dir.join(&requests_file), |w| {
            for (k, records) in repeats.iter().enumerate() {
                for r in records.iter() {
                    let mut line = RequestLineRef::from(r);
                    if numbered {
                        line.repeat = k as u32 + 1;
                    }
                    serde_json::to_writer(&mut *w, &line)?;
                    w.write_all(b"\n")?;
                }
            }
            Ok(())
        })?;
        let mut map = summary.to_json_map();
        map.extend(vllm_run_keys(&self.info));
        let json = serde_json::to_vec_pretty(&map).expect("summary serialises");
        atomic_write(&self.dir.join(&result_file), &json)?;
        self.info.rungs.push(RungEntry {
            rate: summary.rate,
            result_file,
            requests_file,
            complete,
        });
        self.write_run_json()
    }

    /// Write any other file of the folder (analysis, summaries, log) atomically.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), WriteError> {
        atomic_write(&self.dir.join(name), bytes)
    }

    /// Mark the run ended with `status`.
    pub fn finish(
        &mut self,
        status: RunStatus,
        detail: Option<String>,
        ended_at: DateTime<Utc>,
    ) -> Result<RunInfo, WriteError> {
        self.info.status = status;
        self.info.status_detail = detail;
        self.info.ended_at = Some(ended_at);
        self.write_run_json()?;
        Ok(self.info.clone())
    }
}

impl Drop for RunWriter {
    /// A writer dropped before [`RunWriter::finish`] (an early return or a panic in its
    /// caller) still leaves a terminal status, so the folder never claims to be running.
    fn drop(&mut self) {
        if self.info.status == RunStatus::Running {
            let why = if std::thread::panicking() {
                "ladder stopped on an internal error (a panic) before the run ended"
            } else {
                "ladder stopped before the run ended, without recording why"
            };
            let _ = self.finish(RunStatus::Failed, Some(why.into()), Utc::now());
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::{HostInfo, ResultDir, RESULTS_FORMAT_VERSION};

    pub(crate) fn sample_info(name: &str) -> RunInfo {
        RunInfo {
            format_version: RESULTS_FORMAT_VERSION,
            tool_version: "test".into(),
            scenario_name: name.into(),
            scenario_file: "s.yaml".into(),
            load: Default::default(),
            scenario: serde_json::json!({"name": name}),
            git_commit: None,
            tokenizer_sha256: "00".into(),
            tokenizer_source: None,
            endpoint: "sim".into(),
            host: HostInfo {
                hostname: "h".into(),
                os: "linux".into(),
                arch: "x86_64".into(),
                cpus: 2,
            },
            started_at: DateTime::parse_from_rfc3339("2026-12-02T10:00:00Z")
                .unwrap()
                .with_timezone(&Utc),
            ended_at: None,
            status: RunStatus::Running,
            status_detail: None,
            rungs: vec![],
            warnings: vec![],
            server: None,
            prompt_overhead: None,
            prompt_nonce: None,
            trace: None,
            shard: None,
            shards: None,
        }
    }

    #[test]
    fn a_write_cut_before_its_rename_leaves_the_previous_file_whole() {
        // What SIGKILL or power loss mid-write leaves: the content half written to the temp
        // file, the rename never reached. The file keeps its previous whole content.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.json");
        atomic_write(&p, b"{\"status\": \"running\"}").unwrap();
        let cut = atomic_write_with(&p, |w| {
            w.write_all(b"{\"status\": \"compl")?;
            Err(std::io::Error::other("killed"))
        });
        assert!(cut.is_err());
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\"status\": \"running\"}");
        // No partial temp file is left in the folder either.
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["run.json".to_string()]);
    }

    #[test]
    fn writes_a_folder_that_loads_back() {
        let root = tempfile::tempdir().unwrap();
        let mut w = RunWriter::create(root.path(), sample_info("demo")).unwrap();
        assert!(w.dir().ends_with("demo/2026-12-02T10-00-00Z"));
        let rec = RequestRecord {
            output_tokens: 3,
            ..Default::default()
        };
        let summary = crate::metrics::summarize(
            std::slice::from_ref(&rec),
            &crate::metrics::RungContext {
                rate: 2.5,
                ..Default::default()
            },
        );
        w.write_rung(&summary, &[rec], true).unwrap();
        w.finish(RunStatus::Complete, None, Utc::now()).unwrap();
        // No temp files left behind.
        let names: Vec<String> = fs::read_dir(w.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        let back = ResultDir::open(w.dir()).unwrap();
        assert_eq!(back.info.status, RunStatus::Complete);
        assert_eq!(back.rungs.len(), 1);
        assert_eq!(back.rungs[0].summary.rate, 2.5);
        let lines = back.requests(&back.rungs[0]).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].output_tokens, 3);
        // A second run in the same second gets its own folder.
        let w2 = RunWriter::create(root.path(), sample_info("demo")).unwrap();
        assert!(w2.dir().ends_with("demo/2026-12-02T10-00-00Z-2"));
    }

    /// The tamper check run on reading a rung's lines recomputes every derived key of its
    /// summary (peak in flight, peak output rate, goodput, token accounting, TPOT, ...):
    /// what the writer derived from the records, the check derives from the lines written
    /// of them, key for key. Times off the millisecond grid, ties of an end with a send,
    /// chunks across second boundaries, one-token outputs, server usage and a failure.
    #[test]
    fn a_rungs_summary_agrees_with_its_own_lines_on_every_derived_key() {
        let root = tempfile::tempdir().unwrap();
        let mut info = sample_info("agree");
        info.scenario =
            serde_json::json!({"name": "agree", "slo": {"e2e_ms": 60.0, "ttft_ms": 20.0}});
        let mut w = RunWriter::create(root.path(), info).unwrap();
        let us = std::time::Duration::from_micros;
        let records: Vec<RequestRecord> = (0..40u32)
            .map(|i| {
                let sent = us(u64::from(i) * 24_997 + u64::from(i % 3) * 333);
                let ttft = us(9_000 + u64::from(i * 7919 % 23) * 1_013);
                let gaps: Vec<std::time::Duration> = (0..i % 6)
                    .map(|k| us(10_001 + u64::from(k) * 977))
                    .collect();
                let decode: std::time::Duration = gaps.iter().sum();
                let out = 1 + gaps.len() as u32;
                let mut r = RequestRecord {
                    index: i,
                    scheduled: sent,
                    sent,
                    first_token: Some(sent + ttft),
                    end: sent + ttft + decode,
                    input_tokens: 16 + i % 4,
                    output_tokens: out,
                    requested_output_tokens: 5,
                    itl: gaps.into(),
                    server_completion_tokens: (i % 2 == 0).then_some(out),
                    server_prompt_tokens: (i % 2 == 0).then_some(16 + i % 4),
                    ..Default::default()
                };
                if i == 13 {
                    // A failure: no token, out of goodput and the token means.
                    r.first_token = None;
                    r.itl = Default::default();
                    r.output_tokens = 0;
                    r.error = Some(crate::record::RequestError {
                        class: crate::record::ErrorClass::from_status(500),
                        status: Some(500),
                        detail: "boom".into(),
                    });
                }
                if i == 20 {
                    // Ends exactly at the next request's send.
                    r.end = us(21 * 24_997);
                }
                r
            })
            .collect();
        let ctx = crate::metrics::RungContext {
            rate: 40.0,
            slo: crate::scenario::Slo {
                e2e_ms: Some(60.0),
                ttft_ms: Some(20.0),
                ..Default::default()
            },
            ..Default::default()
        };
        let summary = crate::metrics::summarize(&records, &ctx);
        assert!(summary.max_concurrent_requests >= 2, "{summary:?}");
        assert!(summary.request_goodput > 0.0);
        w.write_rung(&summary, &records, true).unwrap();
        w.finish(RunStatus::Complete, None, Utc::now()).unwrap();
        let back = ResultDir::open(w.dir()).unwrap();
        let lines = back
            .requests(&back.rungs[0])
            .unwrap_or_else(|e| panic!("the writer's own folder refused: {e}"));
        assert_eq!(lines.len(), 40);
    }

    #[test]
    fn names_and_rungs_that_would_leave_their_place_are_refused() {
        let root = tempfile::tempdir().unwrap();
        for name in [".", "..", "../x", "/abs", "a/b", ""] {
            let err = RunWriter::create(root.path(), sample_info(name)).unwrap_err();
            assert!(
                err.to_string().contains("cannot name a result folder"),
                "{name}"
            );
        }
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
        let mut w = RunWriter::create(root.path(), sample_info("demo")).unwrap();
        let at = |rate| RungSummary {
            rate,
            ..Default::default()
        };
        w.write_rung(&at(1.0000001), &[], true).unwrap();
        let err = w.write_rung(&at(1.0000002), &[], true).unwrap_err();
        assert!(err.to_string().contains("1.0000001"), "{err}");
        assert_eq!(w.info().rungs.len(), 1);
    }

    #[test]
    fn a_writer_dropped_unfinished_marks_the_folder_failed() {
        let root = tempfile::tempdir().unwrap();
        let w = RunWriter::create(root.path(), sample_info("demo")).unwrap();
        let dir = w.dir().to_path_buf();
        drop(w);
        let back = ResultDir::open(&dir).unwrap();
        assert_eq!(back.info.status, RunStatus::Failed);
        assert!(back.info.ended_at.is_some());
    }

    #[test]
    fn unwritable_root_fails_before_any_load() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("not-a-dir");
        fs::write(&file, "x").unwrap();
        let err = RunWriter::create(&file, sample_info("demo")).unwrap_err();
        assert!(err.to_string().contains("cannot write results under"));
    }
}
