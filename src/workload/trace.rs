//! Trace replay (`load.trace`): a JSONL trace of request timestamps and lengths in the
//! Mooncake format, its send offsets at a replay speed, and prompts synthesised to its
//! recorded lengths.
//!
//! A line is `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids":
//! [46, 47, ...]}`: `timestamp` in milliseconds, lengths in tokens, `hash_ids` optional (one
//! id per `block_tokens` of the prompt; equal leading ids mean an equal prompt prefix). Other
//! keys are ignored. Lines are replayed in file order, so timestamps must not decrease.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{synth, Prompt, PromptSet, WorkloadError};
use crate::scenario::limits;
use crate::scenario::shapes::MAX_TRACE_BYTES;
use crate::tokens::{self, Counter, Tokenizer};

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceLine {
    /// Milliseconds since the trace's start (any origin: offsets are from the first line).
    pub timestamp_ms: f64,
    /// Prompt length, tokens.
    pub input_length: u32,
    /// Output length, tokens (sent as `max_tokens`).
    pub output_length: u32,
    /// Prefix block ids, possibly empty.
    pub hash_ids: Vec<u64>,
}

/// A trace read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The file as resolved.
    pub path: PathBuf,
    /// SHA-256 of the whole file (hex), recorded in run.json.
    pub sha256: String,
    /// Lines replayed (after `max_requests`), in file order.
    pub lines: Vec<TraceLine>,
    /// Lines in the file (before `max_requests`), blank lines left out.
    pub file_lines: usize,
}

fn bad(path: &Path, line: usize, message: String) -> WorkloadError {
    WorkloadError::Malformed {
        path: path.to_path_buf(),
        line,
        message,
    }
}

/// Read and check a trace; `max_requests` keeps only its first lines.
pub fn load(path: &Path, max_requests: Option<u32>) -> Result<Trace, WorkloadError> {
    let io = |message: String| WorkloadError::Io {
        path: path.to_path_buf(),
        message,
    };
    let bytes = crate::fileread::read_bounded(path, MAX_TRACE_BYTES).map_err(|e| match e {
        crate::fileread::ReadError::TooLarge { .. } => io(format!(
            "{}; cut it (e.g. `head -n 100000`) or replay its first lines with \
             `load.trace.max_requests`",
            e.reason()
        )),
        crate::fileread::ReadError::NotFound(_) => io(format!(
            "{} (the path is relative to the scenario file)",
            e.reason()
        )),
        e => io(e.reason()),
    })?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let text = String::from_utf8(bytes).map_err(|e| io(format!("not UTF-8 text: {e}")))?;
    let mut lines = parse(&text, path)?;
    let file_lines = lines.len();
    if let Some(m) = max_requests {
        lines.truncate(m as usize);
    }
    let total: u64 = lines.iter().map(|l| u64::from(l.input_length)).sum();
    if let Some(m) = limits::rung_tokens_problem(lines.len() as u64, total) {
        return Err(io(format!(
            "{m}; replay fewer lines with `load.trace.max_requests`"
        )));
    }
    Ok(Trace {
        path: path.to_path_buf(),
        sha256,
        lines,
        file_lines,
    })
}

/// Parse a trace's text; every line must be a JSON object with a non-negative
/// `timestamp` (ms) not below the previous line's, and `input_length` and `output_length` of
/// at least 1. Blank lines are skipped. The first bad line is the error, with its number.
pub fn parse(text: &str, path: &Path) -> Result<Vec<TraceLine>, WorkloadError> {
    let mut out: Vec<TraceLine> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        if out.len() as u64 >= limits::MAX_REQUESTS_PER_RUNG {
            return Err(bad(
                path,
                n,
                format!(
                    "the trace has more than {} lines, the most one rung holds; cut it or set \
                     `load.trace.max_requests`",
                    limits::MAX_REQUESTS_PER_RUNG
                ),
            ));
        }
        let v: Value = serde_json::from_str(raw).map_err(|e| {
            bad(
                path,
                n,
                format!("not a JSON object ({e}); each line is one request such as {{\"timestamp\": 0, \"input_length\": 512, \"output_length\": 64}}"),
            )
        })?;
        let Some(obj) = v.as_object() else {
            return Err(bad(path, n, "not a JSON object; each line is one request such as {\"timestamp\": 0, \"input_length\": 512, \"output_length\": 64}".into()));
        };
        let timestamp_ms = match obj.get("timestamp").and_then(Value::as_f64) {
            Some(t) if t.is_finite() && t >= 0.0 => t,
            Some(t) => return Err(bad(path, n, format!("`timestamp` {t} is negative; timestamps are milliseconds from the trace's start"))),
            None => return Err(bad(path, n, "no numeric `timestamp` (milliseconds since the trace's start)".into())),
        };
        let length = |key: &str| -> Result<u32, WorkloadError> {
            let max = limits::MAX_INPUT_TOKENS;
            match obj.get(key).map(|x| (x, x.as_u64())) {
                Some((_, Some(l))) if (1..=max).contains(&l) => Ok(l as u32),
                Some((_, Some(l))) => Err(bad(path, n, format!("`{key}` {l} is outside [1, {max}] tokens"))),
                Some((x, None)) => Err(bad(path, n, format!("`{key}` is {x}, not a whole number of tokens"))),
                None => Err(bad(path, n, format!("no `{key}` (tokens); a line needs `timestamp`, `input_length` and `output_length`"))),
            }
        };
        let input_length = length("input_length")?;
        let output_length = length("output_length")?;
        let hash_ids = match obj.get("hash_ids") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(ids)) => {
                if ids.len() as u64 > u64::from(input_length) {
                    return Err(bad(path, n, format!("{} `hash_ids` for {input_length} input tokens: more blocks than tokens", ids.len())));
                }
                ids.iter()
                    .map(|x| {
                        x.as_u64().ok_or_else(|| {
                            bad(
                                path,
                                n,
                                format!("`hash_ids` holds {x}, not a non-negative integer id"),
                            )
                        })
                    })
                    .collect::<Result<Vec<u64>, _>>()?
            }
            Some(x) => {
                return Err(bad(
                    path,
                    n,
                    format!("`hash_ids` is {x}, not a list of integer ids"),
                ))
            }
        };
        if let Some(prev) = out.last().filter(|p| timestamp_ms < p.timestamp_ms) {
            return Err(bad(
                path,
                n,
                format!(
                    "`timestamp` {timestamp_ms} is earlier than the previous line's {}; lines are \
                     replayed in file order: sort the file by timestamp (e.g. `jq -s -c \
                     'sort_by(.timestamp)[]' in.jsonl > out.jsonl`)",
                    prev.timestamp_ms
                ),
            ));
        }
        out.push(TraceLine {
            timestamp_ms,
            input_length,
            output_length,
            hash_ids,
        });
    }
    if out.is_empty() {
        return Err(WorkloadError::Io {
            path: path.to_path_buf(),
            message: "the trace has no requests: each line is one, such as {\"timestamp\": 0, \"input_length\": 512, \"output_length\": 64}".into(),
        });
    }
    Ok(out)
}

impl Trace {
    /// Send offsets at `speed`: line `i` at `(timestamp_i - timestamp_0) / speed`, rounded to
    /// the nanosecond, so the first line is sent at the rung start.
    pub fn schedule(&self, speed: f64) -> Vec<Duration> {
        let t0 = self.lines.first().map_or(0.0, |l| l.timestamp_ms);
        self.lines
            .iter()
            .map(|l| {
                let ns = ((l.timestamp_ms - t0) * 1e6 / speed).round();
                Duration::from_nanos(ns.min(u64::MAX as f64) as u64)
            })
            .collect()
    }

    /// How long the replay takes at `speed`: the last line's send offset (saturating: a span
    /// of 1e308 ms is "longer than any limit", never a wrap).
    pub fn replay_length(&self, speed: f64) -> Duration {
        let ms = self.span_ms() / speed;
        if ms.is_finite() && ms < Duration::MAX.as_millis() as f64 / 2.0 {
            Duration::from_secs_f64(ms / 1000.0)
        } else {
            Duration::MAX
        }
    }

    /// The recorded span, milliseconds: last timestamp minus the first.
    pub fn span_ms(&self) -> f64 {
        match (self.lines.first(), self.lines.last()) {
            (Some(a), Some(b)) => b.timestamp_ms - a.timestamp_ms,
            _ => 0.0,
        }
    }

    /// Mean offered rate at `speed`: requests over the span of their send times (req/s); the
    /// request count itself when every line has the same timestamp.
    pub fn offered_rate(&self, speed: f64) -> f64 {
        let span = self
            .schedule(speed)
            .last()
            .map_or(0.0, Duration::as_secs_f64);
        let n = self.lines.len() as f64;
        if span > 0.0 {
            (n - 1.0).max(1.0) / span
        } else {
            n
        }
    }

    /// Prompts of the replay, one per line, deterministic for `seed`. A line without
    /// `hash_ids` gets a distinct synthesised prompt of `input_length` tokens; a line with
    /// them is made of one block of `block_tokens` words per id (the same words for the same
    /// id, drawn from `seed` and the id, and cut to the line's length in its last block),
    /// followed by words of its own up to `input_length`, so lines with equal leading ids
    /// send identical leading text. Token counts are exact when the tokenizer tokenizes
    /// each space-separated word alone; otherwise they are counted and marked inexact.
    pub fn prompts(
        &self,
        tok: &Tokenizer,
        block_tokens: u32,
        seed: u64,
    ) -> Result<PromptSet, WorkloadError> {
        let pool = synth::WordPool::new(tok)?;
        let render = |s: &str| Ok(s.to_string());
        let shaper = synth::Shaper {
            counter: Counter::Local(tok),
            render: &render,
            proven: pool.composes(tok),
            fixed: 0,
        };
        let plain: Vec<usize> = (0..self.lines.len())
            .filter(|&i| self.lines[i].hash_ids.is_empty())
            .collect();
        let targets: Vec<u32> = plain.iter().map(|&i| self.lines[i].input_length).collect();
        let mut rng = super::prompt_rng(seed, u64::from_le_bytes(*b"trace\0\0\0"));
        let mut made = synth::synthesise(&pool, &shaper, &targets, 0, &mut rng)?.into_iter();
        let mut blocks: HashMap<u64, Vec<&str>> = HashMap::new();
        let mut prompts = Vec::with_capacity(self.lines.len());
        for (i, line) in self.lines.iter().enumerate() {
            if line.hash_ids.is_empty() {
                let s = made.next().expect("one synthesised prompt per plain line");
                prompts.push(Prompt {
                    text: s.text,
                    input_tokens: s.tokens,
                    output_tokens: line.output_length,
                    exact: s.tokens == line.input_length,
                    batch: Vec::new(),
                    images: Vec::new(),
                });
                continue;
            }
            let want = line.input_length as usize;
            let mut words: Vec<&str> = Vec::with_capacity(want);
            for id in &line.hash_ids {
                if words.len() >= want {
                    break;
                }
                let block = blocks.entry(*id).or_insert_with(|| {
                    let mut r = super::prompt_rng(seed, id ^ 0x6861_7368_5f69_6473);
                    pool.block_words(block_tokens as usize, &mut r)
                });
                let take = block.len().min(want - words.len());
                words.extend_from_slice(&block[..take]);
            }
            if words.len() < want {
                let mut r = ChaCha8Rng::seed_from_u64(
                    seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                words.extend(pool.block_words(want - words.len(), &mut r));
            }
            let text = words.join(" ");
            let tokens = if shaper.proven {
                words.len() as u32
            } else {
                tokens::count(tok, &text)
            };
            prompts.push(Prompt {
                text,
                input_tokens: tokens,
                output_tokens: line.output_length,
                exact: tokens == line.input_length,
                batch: Vec::new(),
                images: Vec::new(),
            });
        }
        let mut notes = Vec::new();
        let inexact = prompts.iter().filter(|p| !p.exact).count();
        if inexact > 0 {
            notes.push(format!(
                "{inexact} of {} trace prompts could not be made exactly their recorded length \
                 with this tokenizer",
                prompts.len()
            ));
        }
        Ok(PromptSet {
            prompts,
            notes,
            prefix_groups: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Vec<TraceLine>, WorkloadError> {
        parse(s, Path::new("t.jsonl"))
    }

    const GOOD: &str = r#"{"timestamp": 1000, "input_length": 30, "output_length": 5, "hash_ids": [7, 8]}

{"timestamp": 1000, "input_length": 12, "output_length": 3}
{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47], "extra": "ignored"}
"#;

    #[test]
    fn parses_mooncake_lines() {
        let l = parse_str(GOOD).unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].hash_ids, vec![7, 8]);
        assert_eq!(l[1].hash_ids, Vec::<u64>::new());
        assert_eq!(l[2].timestamp_ms, 27482.0);
        assert_eq!((l[2].input_length, l[2].output_length), (6955, 52));
    }

    #[test]
    fn bad_lines_name_their_number_and_the_fix() {
        for (text, want) in [
            ("{\"timestamp\": 1, \"input_length\": 3}\n", "t.jsonl:1: no `output_length`"),
            ("\n{\"timestamp\": -1, \"input_length\": 3, \"output_length\": 1}", "t.jsonl:2: `timestamp` -1 is negative"),
            ("{\"input_length\": 3, \"output_length\": 1}", "no numeric `timestamp`"),
            ("{\"timestamp\": 5, \"input_length\": 0, \"output_length\": 1}", "`input_length` 0 is outside"),
            ("{\"timestamp\": 5, \"input_length\": 2.5, \"output_length\": 1}", "`input_length` is 2.5, not a whole number"),
            ("{\"timestamp\": 5, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [\"a\"]}", "`hash_ids` holds \"a\""),
            ("{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, 2]}", "more blocks than tokens"),
            ("[1, 2]", "t.jsonl:1: not a JSON object"),
            ("{\"timestamp\": 5", "t.jsonl:1: not a JSON object"),
            (
                "{\"timestamp\": 9, \"input_length\": 3, \"output_length\": 1}\n{\"timestamp\": 4, \"input_length\": 3, \"output_length\": 1}",
                "t.jsonl:2: `timestamp` 4 is earlier than the previous line's 9; lines are replayed in file order: sort",
            ),
            ("\n\n", "the trace has no requests"),
        ] {
            let e = parse_str(text).unwrap_err();
            assert!(e.to_string().contains(want), "{text:?}: {e}");
        }
        // The line's number is the variant's, and no line at all is no file to replay.
        let second = "\n{\"timestamp\": -1, \"input_length\": 3, \"output_length\": 1}";
        let e = parse_str(second).unwrap_err();
        assert!(
            matches!(&e, WorkloadError::Malformed { line: 2, .. }),
            "{e:?}"
        );
        let e = parse_str("\n\n").unwrap_err();
        assert!(matches!(&e, WorkloadError::Io { .. }), "{e:?}");
    }

    fn trace(stamps: &[f64]) -> Trace {
        Trace {
            path: "t".into(),
            sha256: String::new(),
            lines: stamps
                .iter()
                .map(|&t| TraceLine {
                    timestamp_ms: t,
                    input_length: 4,
                    output_length: 2,
                    hash_ids: vec![],
                })
                .collect(),
            file_lines: stamps.len(),
        }
    }

    #[test]
    fn equal_leading_hash_ids_share_leading_tokens() {
        let tok = crate::workload::testkit::byte_level_bpe();
        let line = |ids: &[u64], len: u32| TraceLine {
            timestamp_ms: 0.0,
            input_length: len,
            output_length: 7,
            hash_ids: ids.to_vec(),
        };
        let mut t = trace(&[]);
        t.lines = vec![
            line(&[1, 2, 3], 20),
            line(&[1, 2, 9], 19),
            line(&[1, 5], 12),
            line(&[], 15),
            line(&[4], 30),
        ];
        let set = t.prompts(&tok, 8, 42).unwrap();
        let ids = |i: usize| -> Vec<u32> {
            tok.encode_fast(set.prompts[i].text.as_str(), false)
                .unwrap()
                .get_ids()
                .to_vec()
        };
        let words = |i: usize| -> Vec<String> {
            set.prompts[i].text.split(' ').map(String::from).collect()
        };
        // Blocks of 8 words: lines 0 and 1 share two blocks (16 words), line 2 one block.
        assert_eq!(words(0)[..16], words(1)[..16]);
        assert_ne!(words(0)[16..19], words(1)[16..19]);
        assert_eq!(words(0)[..8], words(2)[..8]);
        assert_ne!(words(0)[8..], words(2)[8..]);
        // The shared prefix is a shared token prefix too.
        let (a, b) = (ids(0), ids(1));
        let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        assert!(common >= 15, "{common} shared leading tokens");
        for (p, l) in set.prompts.iter().zip(&t.lines) {
            assert_eq!(p.output_tokens, 7);
            if p.exact {
                assert_eq!(p.input_tokens, l.input_length);
            }
            assert_eq!(p.input_tokens as usize, ids_len(&tok, &p.text));
        }
        assert_eq!(set.prompts[4].text.split(' ').count(), 30);
        // Deterministic per seed, different across seeds.
        assert_eq!(t.prompts(&tok, 8, 42).unwrap().prompts, set.prompts);
        assert_ne!(t.prompts(&tok, 8, 43).unwrap().prompts[0], set.prompts[0]);
    }

    fn ids_len(tok: &Tokenizer, text: &str) -> usize {
        tok.encode_fast(text, false).unwrap().len()
    }

    #[test]
    fn schedule_is_offset_from_the_first_line_over_speed() {
        let t = trace(&[1000.0, 1000.0, 1250.0, 3000.0, 27482.0]);
        let ms = |v: &[Duration]| v.iter().map(|d| d.as_nanos()).collect::<Vec<_>>();
        assert_eq!(
            ms(&t.schedule(1.0)),
            vec![0, 0, 250_000_000, 2_000_000_000, 26_482_000_000]
        );
        assert_eq!(
            ms(&t.schedule(2.0)),
            vec![0, 0, 125_000_000, 1_000_000_000, 13_241_000_000]
        );
        assert_eq!(ms(&t.schedule(0.5))[3], 4_000_000_000);
        // 4 gaps over 26.482 s, twice as fast at speed 2.
        assert!((t.offered_rate(1.0) - 4.0 / 26.482).abs() < 1e-12);
        assert!((t.offered_rate(2.0) - 8.0 / 26.482).abs() < 1e-12);
    }
}
