//! A rung written while it runs (a rung run for a duration): its request lines are appended
//! as they come and flushed every interval, and its summary file is rewritten every interval
//! (atomically, marked `"partial": true`) until the final one replaces it. A crash then
//! loses at most one interval: the folder keeps the lines and the summary of the last
//! interval, and run.json still says `running` with the rung's progress in
//! `status_detail`.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use super::names::{requests_file_name, result_file_name};
use super::types::{RequestLineRef, RungEntry};
use super::write::{atomic_write, vllm_run_keys, RunWriter, WriteError};
use crate::metrics::RungSummary;
use crate::record::RequestRecord;
use crate::scenario::rate_label;

/// The key that marks a summary file written before its rung ended.
pub const PARTIAL_KEY: &str = "partial";

/// The open request-lines file of a rung being streamed.
#[derive(Debug)]
pub struct RequestStream {
    rate: f64,
    path: PathBuf,
    out: BufWriter<fs::File>,
    lines: u64,
}

fn io(path: &std::path::Path, source: std::io::Error) -> WriteError {
    WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl RequestStream {
    /// Append one request's line (buffered until the next [`RequestStream::flush`]).
    pub fn append(&mut self, r: &RequestRecord) -> Result<(), WriteError> {
        serde_json::to_writer(&mut self.out, &RequestLineRef::from(r))
            .map_err(|e| io(&self.path, e.into()))?;
        self.out.write_all(b"\n").map_err(|e| io(&self.path, e))?;
        self.lines += 1;
        Ok(())
    }

    /// Push the buffered lines to the file and to the disk.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        self.out.flush().map_err(|e| io(&self.path, e))?;
        self.out
            .get_ref()
            .sync_data()
            .map_err(|e| io(&self.path, e))
    }

    /// Lines appended so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }
}

impl RunWriter {
    /// Open the request-lines file of a rung at `rate` for streaming. Refused when a rung
    /// of the same label was written already.
    pub fn stream_rung(&self, rate: f64) -> Result<RequestStream, WriteError> {
        let label = rate_label(rate);
        if let Some(e) = self
            .info()
            .rungs
            .iter()
            .find(|e| rate_label(e.rate) == label)
        {
            return Err(WriteError::Refused(format!(
                "rung {rate} would overwrite the files of rung {} (both are labelled {label})",
                e.rate
            )));
        }
        let path = self.dir().join(requests_file_name(rate));
        let f = fs::File::create(&path).map_err(|e| io(&path, e))?;
        Ok(RequestStream {
            rate,
            path,
            out: BufWriter::with_capacity(1 << 16, f),
            lines: 0,
        })
    }

    /// Rewrite the rung's summary file with what it has so far, marked partial, and say in
    /// run.json's `status_detail` how far the rung is (`progress`).
    pub fn write_partial_rung(
        &mut self,
        summary: &RungSummary,
        progress: String,
    ) -> Result<(), WriteError> {
        let mut map = summary.to_json_map();
        map.extend(vllm_run_keys(self.info()));
        map.insert(PARTIAL_KEY.into(), true.into());
        let json = serde_json::to_vec_pretty(&map).expect("summary serialises");
        atomic_write(&self.dir().join(result_file_name(summary.rate)), &json)?;
        self.info_mut().status_detail = Some(progress);
        self.write_run_json()
    }

    /// End a streamed rung: its last lines flushed, its final summary in place of the
    /// partial one, and its entry in run.json.
    pub fn finish_streamed_rung(
        &mut self,
        summary: &RungSummary,
        mut stream: RequestStream,
        complete: bool,
    ) -> Result<(), WriteError> {
        stream.flush()?;
        let mut map = summary.to_json_map();
        map.extend(vllm_run_keys(self.info()));
        let json = serde_json::to_vec_pretty(&map).expect("summary serialises");
        let result_file = result_file_name(stream.rate);
        atomic_write(&self.dir().join(&result_file), &json)?;
        let info = self.info_mut();
        info.status_detail = None;
        info.rungs.push(RungEntry {
            rate: stream.rate,
            result_file,
            requests_file: requests_file_name(stream.rate),
            complete,
        });
        self.write_run_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{ResultDir, RunStatus};

    #[test]
    fn a_streamed_rung_reads_back_like_a_written_one() {
        let root = tempfile::tempdir().unwrap();
        let mut w = RunWriter::create(
            root.path(),
            crate::results::write::tests::sample_info("soak"),
        )
        .unwrap();
        let mut stream = w.stream_rung(4.0).unwrap();
        let recs: Vec<RequestRecord> = (0..3)
            .map(|i| RequestRecord {
                index: i,
                output_tokens: 2,
                ..Default::default()
            })
            .collect();
        stream.append(&recs[0]).unwrap();
        stream.flush().unwrap();
        let ctx = crate::metrics::RungContext {
            rate: 4.0,
            ..Default::default()
        };
        let partial = crate::metrics::summarize(&recs[..1], &ctx);
        w.write_partial_rung(&partial, "1s of 5s".into()).unwrap();
        // Mid-rung: the line is on disk, the summary says partial, run.json says running.
        let dir = w.dir().to_path_buf();
        let lines = fs::read_to_string(dir.join("requests_rate_4.jsonl")).unwrap();
        assert_eq!(lines.lines().count(), 1);
        let v: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join("result_rate_4.json")).unwrap()).unwrap();
        assert_eq!(v[PARTIAL_KEY], true);
        assert_eq!(v["completed"], 1);
        let run: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(run["status"], "running");
        assert_eq!(run["status_detail"], "1s of 5s");
        for r in &recs[1..] {
            stream.append(r).unwrap();
        }
        assert_eq!(stream.lines(), 3);
        w.finish_streamed_rung(&crate::metrics::summarize(&recs, &ctx), stream, true)
            .unwrap();
        w.finish(RunStatus::Complete, None, chrono::Utc::now())
            .unwrap();
        let back = ResultDir::open(&dir).unwrap();
        assert_eq!(back.rungs.len(), 1);
        assert_eq!(back.rungs[0].summary.completed, 3);
        assert_eq!(back.requests(&back.rungs[0]).unwrap().len(), 3);
        let v: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join("result_rate_4.json")).unwrap()).unwrap();
        assert!(v.get(PARTIAL_KEY).is_none());
        // A second rung of the same label is refused before it writes anything.
        assert!(w.stream_rung(4.0000001).is_err());
    }
}
