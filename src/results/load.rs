//! Loading a result folder back: `run.json`, every rung's summary, and on demand the
//! per-request lines. Errors name the file and what is wrong with it.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::check;
use super::line_scan;
use super::load_error::LoadError;
use super::types::{RequestLine, RunInfo, RunStatus, RungEntry, RESULTS_FORMAT_VERSION};
use crate::metrics::RungSummary;

/// One rung loaded back.
#[derive(Debug, Clone)]
pub struct LoadedRung {
    /// Its entry in run.json.
    pub entry: RungEntry,
    /// Its `result_rate_<rate>.json`.
    pub summary: RungSummary,
}

/// A result folder loaded back.
#[derive(Debug, Clone)]
pub struct ResultDir {
    /// The folder.
    pub path: PathBuf,
    /// Its run.json.
    pub info: RunInfo,
    /// Its rungs, in run order.
    pub rungs: Vec<LoadedRung>,
    /// For a folder of vLLM result files: each rung's requests (from `--save-detailed`
    /// lists), `None` where the files hold summaries only. `None` for ladder's own folders.
    pub imported: Option<Vec<Option<Vec<RequestLine>>>>,
    /// For a folder of vLLM result files: whether each rung's requests carry their send
    /// times (`start_times`; older `benchmark_serving.py` files lack them). Empty otherwise.
    pub imported_send_times: Vec<bool>,
}

/// Largest `run.json` or rung summary read (ladder writes a few hundred KB at most).
pub const MAX_RESULT_JSON_BYTES: u64 = 64 << 20;

/// Largest `server_metrics_rate_*.jsonl` series copied by `merge` (a week's soak scraped
/// every second stays below it).
pub const MAX_SERIES_BYTES: u64 = 1 << 30;

/// A result folder's JSON file, through the bounded reader.
pub fn read_result_json(path: &Path) -> Result<String, LoadError> {
    read(path)
}

pub(crate) fn read(path: &Path) -> Result<String, LoadError> {
    crate::fileread::read_text_bounded(path, MAX_RESULT_JSON_BYTES).map_err(|e| LoadError::Io {
        path: path.to_path_buf(),
        source: e.into_io(),
    })
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, LoadError> {
    serde_json::from_str(text).map_err(|e| LoadError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

impl ResultDir {
    /// Load `run.json` and every rung summary it lists, checking both as they are read
    /// (names, file paths, duplicate rungs, summaries against their entries).
    pub fn open(dir: &Path) -> Result<ResultDir, LoadError> {
        let run_path = dir.join("run.json");
        if fs::symlink_metadata(&run_path).is_err() {
            // No run.json: a folder of vLLM result files reads as one, detected by keys.
            if dir.is_dir() {
                if let Some((info, rungs)) = super::vllm::open(dir)? {
                    return Ok(ResultDir {
                        path: dir.to_path_buf(),
                        info,
                        imported: Some(rungs.iter().map(|r| r.lines.clone()).collect()),
                        imported_send_times: rungs.iter().map(|r| r.send_times).collect(),
                        rungs: rungs
                            .into_iter()
                            .map(|r| LoadedRung {
                                entry: r.entry,
                                summary: r.summary,
                            })
                            .collect(),
                    });
                }
            }
            if fs::symlink_metadata(dir).is_err() {
                return Err(LoadError::Missing(dir.to_path_buf()));
            }
            return Err(LoadError::NotAResultDir(dir.to_path_buf()));
        }
        let run_path = check::rung_file(dir, "run.json")?;
        let text = read(&run_path)?;
        // Check the format version before the full parse, so a future folder gets the
        // "upgrade" message rather than a field error.
        let raw: serde_json::Value = parse(&run_path, &text)?;
        let found = raw
            .get("format_version")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0) as u32;
        if found > RESULTS_FORMAT_VERSION {
            return Err(LoadError::FutureFormat {
                path: run_path,
                found,
                supported: RESULTS_FORMAT_VERSION,
            });
        }
        let info: RunInfo = parse(&run_path, &text)?;
        check::run_info(&run_path, &info)?;
        let mut rungs = Vec::with_capacity(info.rungs.len());
        for entry in &info.rungs {
            let p = check::rung_file(dir, &entry.result_file)?;
            let raw: serde_json::Map<String, serde_json::Value> = parse(&p, &read(&p)?)?;
            let summary = RungSummary::from_json_map(&raw).map_err(|e| LoadError::Parse {
                path: p.clone(),
                message: e.to_string(),
            })?;
            check::summary(&p, entry, &raw, &summary)?;
            rungs.push(LoadedRung {
                entry: entry.clone(),
                summary,
            });
        }
        Ok(ResultDir {
            path: dir.to_path_buf(),
            info,
            rungs,
            imported: None,
            imported_send_times: Vec::new(),
        })
    }

    /// False for a rung of vLLM result files saved without `--save-detailed`: it has
    /// summary values only, so its metrics can be compared but their noise cannot be judged.
    pub fn has_requests(&self, rung: &LoadedRung) -> bool {
        match &self.imported {
            None => true,
            Some(lines) => self
                .rungs
                .iter()
                .position(|r| std::ptr::eq(r, rung))
                .and_then(|i| lines[i].as_ref())
                .is_some(),
        }
    }

    /// False for a rung of vLLM result files whose per-request lists have no `start_times`
    /// (older `benchmark_serving.py`): its throughputs cannot be resampled from requests.
    pub fn has_send_times(&self, rung: &LoadedRung) -> bool {
        match &self.imported {
            None => true,
            Some(_) => self
                .rungs
                .iter()
                .position(|r| std::ptr::eq(r, rung))
                .and_then(|i| self.imported_send_times.get(i).copied())
                .unwrap_or(false),
        }
    }

    /// Open a folder to compare, gate against or bless: [`ResultDir::open`], refusing a run
    /// that never finished (`running`), with every rung's request lines checked against
    /// its summary up front.
    pub fn open_finished(dir: &Path) -> Result<ResultDir, LoadError> {
        let d = ResultDir::open_ended(dir)?;
        for r in &d.rungs {
            d.requests(r)?;
        }
        Ok(d)
    }

    /// [`ResultDir::open`], refusing a run that never finished (`running`); its rungs' lines
    /// are checked when read ([`ResultDir::requests`]): for a caller that reads every rung
    /// once anyway (`compare`), where checking them up front would read each file twice.
    pub fn open_ended(dir: &Path) -> Result<ResultDir, LoadError> {
        let d = ResultDir::open(dir)?;
        if d.info.status == RunStatus::Running {
            return Err(LoadError::NeverFinished(dir.join("run.json")));
        }
        Ok(d)
    }

    /// The per-request lines of one rung, warmup included (filter on `warmup`), checked
    /// against the rung's summary.
    pub fn requests(&self, rung: &LoadedRung) -> Result<Vec<RequestLine>, LoadError> {
        if let Some(imported) = &self.imported {
            // vLLM's lists were checked against their summary when the folder was read.
            let i = self
                .rungs
                .iter()
                .position(|r| std::ptr::eq(r, rung) || r.entry == rung.entry);
            return Ok(i.and_then(|i| imported[i].clone()).unwrap_or_default());
        }
        let p = check::rung_file(&self.path, &rung.entry.requests_file)?;
        let f = fs::File::open(&p).map_err(|source| LoadError::Io {
            path: p.clone(),
            source,
        })?;
        // Sized from the summary up front (a million-line rung grown by doubling would copy
        // its lines again and again), but never beyond what the file can hold: an edited
        // summary must not reserve memory for lines that are not there.
        let expected = rung
            .summary
            .completed
            .saturating_add(rung.summary.failed)
            .saturating_add(rung.summary.warmup_requests);
        let room = f.metadata().map_or(0, |m| m.len() / MIN_LINE_BYTES);
        let cap = usize::try_from(expected.min(room)).unwrap_or(0);
        let (mut out, mut numbers) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        // Lines are read where they lie in the reader's buffer (1 MiB reads: a big rung's
        // file is hundreds of MB), copied only when one straddles two reads.
        let mut reader = BufReader::with_capacity(1 << 20, f);
        let (mut n, mut gaps) = (0, Vec::new());
        let io = |source| LoadError::Io {
            path: p.clone(),
            source,
        };
        let mut one = |line: &[u8]| -> Result<(), LoadError> {
            n += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            // The lines ladder writes are read by the scanner; anything else, and every
            // error's wording, by serde_json (`line_scan`).
            let r = match line_scan::scan(line, &mut gaps) {
                Some(r) => r,
                None => serde_json::from_slice(line).map_err(|e| LoadError::Parse {
                    path: p.clone(),
                    message: format!("line {n}: {e}"),
                })?,
            };
            out.push(r);
            numbers.push(n);
            Ok(())
        };
        each_line(&mut reader, io, &mut one)?;
        // Line numbers beside the lines, not in them: a line is some 300 bytes, moved once.
        let numbered: Vec<(usize, &RequestLine)> = numbers.into_iter().zip(&out).collect();
        let slo = self.slo();
        let derived = check::Derived {
            slo: &slo,
            late_arrivals: self.info.warnings.iter().any(|w| w.contains(LATE_ARRIVALS)),
        };
        check::lines(&p, &rung.summary, &numbered, &derived)?;
        drop(numbered);
        Ok(out)
    }

    /// The scenario's SLO as run.json records it (none when it records none).
    fn slo(&self) -> crate::scenario::Slo {
        self.info
            .scenario
            .get("slo")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// The rung run at `rate`, if any.
    pub fn rung(&self, rate: f64) -> Option<&LoadedRung> {
        self.rungs.iter().find(|r| r.entry.rate == rate)
    }
}

/// `f` on each line of `reader`, its newline included (the last line may lack one), where
/// it lies in the reader's buffer: a line is copied only when it straddles two reads.
fn each_line<R: Read, E>(
    reader: &mut BufReader<R>,
    io: impl Fn(std::io::Error) -> E,
    mut f: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let mut carry = Vec::new();
    loop {
        let buf = reader.fill_buf().map_err(&io)?;
        if buf.is_empty() {
            break;
        }
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', buf) {
            if carry.is_empty() {
                f(&buf[start..=end])?;
            } else {
                carry.extend_from_slice(&buf[start..=end]);
                f(&carry)?;
                carry.clear();
            }
            start = end + 1;
        }
        carry.extend_from_slice(&buf[start..]);
        let used = buf.len();
        reader.consume(used);
    }
    if carry.is_empty() {
        Ok(())
    } else {
        f(&carry)
    }
}

/// What the runner's warning about a streamed rung's out-of-order arrivals says (then its
/// peak in flight and peak output rate may be off, and are not checked).
pub(crate) const LATE_ARRIVALS: &str = "requests arrived later than their send order allows";

/// Fewer bytes than any request line ladder writes (its keys alone take more).
const MIN_LINE_BYTES: u64 = 128;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_the_same_whatever_the_reads() {
        // Lines of 0 to 40 bytes, blank ones, a last line with and without its newline,
        // read through buffers smaller and larger than a line.
        let mut text = Vec::new();
        for i in 0..300u32 {
            let len = (i * 7919 % 41) as usize;
            text.extend((0..len).map(|k| b'a' + (k % 26) as u8));
            text.push(b'\n');
        }
        for tail in [&b""[..], b"no newline at the end"] {
            let mut all = text.clone();
            all.extend_from_slice(tail);
            let want: Vec<&[u8]> = all.split_inclusive(|b| *b == b'\n').collect();
            if tail.is_empty() {
                assert_eq!(want.len(), 300);
            } else {
                assert_eq!(want.last(), Some(&tail));
            }
            for cap in [1, 2, 3, 16, 40, 41, 64, 4096, 1 << 20] {
                let mut r = BufReader::with_capacity(cap, all.as_slice());
                let mut got: Vec<Vec<u8>> = Vec::new();
                each_line(
                    &mut r,
                    |e| e,
                    |l| -> std::io::Result<()> {
                        got.push(l.to_vec());
                        Ok(())
                    },
                )
                .unwrap();
                assert_eq!(got, want, "buffer of {cap}");
            }
        }
        // An error from `f` stops the reading and is returned.
        let mut r = BufReader::with_capacity(8, &b"a\nb\nc\n"[..]);
        let mut seen = 0;
        let e = each_line(
            &mut r,
            |e| e.to_string(),
            |_| {
                seen += 1;
                if seen == 2 {
                    Err("stop".to_string())
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!((e, seen), (Err("stop".to_string()), 2));
    }
}
