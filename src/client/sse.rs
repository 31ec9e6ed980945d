//! Incremental Server-Sent-Events framing over raw byte chunks.
//!
//! Hand-written rather than `eventsource-stream` / `sse-stream`: those crates wrap a
//! `Stream` and allocate a `String` per event (and per field), have no cap on line length,
//! and hide the per-read boundary we take timestamps at. Here the caller hands in each network
//! read as it arrives (after taking one `Instant::now()`), and the parser calls back with each
//! complete event's `data` as a borrowed byte slice. Lines that fit inside one read are never
//! copied; the only buffers (a partial line, a multi-line event) are reused across events, so
//! a steady stream does no per-event allocation.
//!
//! Follows the WHATWG event-stream rules that OpenAI-compatible servers use: `\n`, `\r\n` and
//! bare `\r` line ends, `:` comment lines, `data:` with or without one following space,
//! several `data:` lines joined by `\n`, an event dispatched at a blank line, and `event:`,
//! `id:`, `retry:` and unknown fields ignored. A line longer than the cap is an error, so a
//! server that never sends a newline cannot grow memory without bound.

/// Default longest line (and longest event) held in memory: 1 MiB.
pub const DEFAULT_MAX_LINE: usize = 1 << 20;

/// The stream cannot be framed as SSE.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A line or an event grew past the cap without ending.
    #[error("an SSE line or event exceeded {limit} bytes")]
    TooLong {
        /// The cap that was exceeded.
        limit: usize,
    },
}

/// Incremental SSE parser: feed it each read, get events' `data` back.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of a line not yet ended by a newline (only when a line spans reads).
    partial: Vec<u8>,
    /// `data` of the event being built, joined by `\n` across `data:` lines.
    data: Vec<u8>,
    /// The event being built has at least one `data:` line (it may be empty).
    has_data: bool,
    /// The previous read ended in `\r`, so a leading `\n` in the next read belongs to it.
    after_cr: bool,
    max_line: usize,
    failed: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE)
    }
}

impl SseParser {
    /// A parser that refuses lines and events longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        SseParser {
            partial: Vec::new(),
            data: Vec::new(),
            has_data: false,
            after_cr: false,
            max_line,
            failed: false,
        }
    }

    /// Feeds one read. Calls `on_event` with the `data` of every event the read completes,
    /// in order; if `on_event` returns `false` the rest of the read is skipped (the caller is
    /// done with the stream). Once an error is returned the parser stays failed.
    pub fn feed<F>(&mut self, mut chunk: &[u8], mut on_event: F) -> Result<(), SseError>
    where
        F: FnMut(&[u8]) -> bool,
    {
        if self.failed {
            return Err(SseError::TooLong {
                limit: self.max_line,
            });
        }
        if self.after_cr {
            self.after_cr = false;
            if let [b'\n', rest @ ..] = chunk {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            let Some(pos) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') else {
                if self.partial.len() + chunk.len() > self.max_line {
                    return self.fail();
                }
                self.partial.extend_from_slice(chunk);
                return Ok(());
            };
            let ending = chunk[pos];
            let mut next = pos + 1;
            if ending == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let keep_going = if self.partial.is_empty() {
                if pos > self.max_line {
                    return self.fail();
                }
                self.line(&chunk[..pos], &mut on_event)?
            } else {
                if self.partial.len() + pos > self.max_line {
                    return self.fail();
                }
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&chunk[..pos]);
                let r = self.line(&line, &mut on_event);
                line.clear();
                self.partial = line;
                r?
            };
            if !keep_going {
                return Ok(());
            }
            chunk = &chunk[next..];
        }
        Ok(())
    }

    /// Ends the stream: a last event not followed by a blank line is still delivered (some
    /// servers close right after `data: [DONE]\n`). A trailing partial line counts as a line.
    pub fn finish<F>(&mut self, mut on_event: F) -> Result<(), SseError>
    where
        F: FnMut(&[u8]) -> bool,
    {
        if self.failed {
            return Err(SseError::TooLong {
                limit: self.max_line,
            });
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            if !self.line(&line, &mut on_event)? {
                return Ok(());
            }
        }
        if self.has_data {
            self.has_data = false;
            on_event(&self.data);
            self.data.clear();
        }
        Ok(())
    }

    fn fail(&mut self) -> Result<(), SseError> {
        self.failed = true;
        self.partial = Vec::new();
        self.data = Vec::new();
        Err(SseError::TooLong {
            limit: self.max_line,
        })
    }

    /// Handles one complete line (without its ending). Returns whether to keep going.
    fn line<F>(&mut self, line: &[u8], on_event: &mut F) -> Result<bool, SseError>
    where
        F: FnMut(&[u8]) -> bool,
    {
        if line.is_empty() {
            if !self.has_data {
                return Ok(true);
            }
            self.has_data = false;
            let go = on_event(&self.data);
            self.data.clear();
            return Ok(go);
        }
        if line[0] == b':' {
            return Ok(true);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            if self.data.len() + value.len() > self.max_line {
                self.fail()?;
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(parts: &[&[u8]]) -> Result<Vec<String>, SseError> {
        let mut p = SseParser::new(64);
        let mut out = Vec::new();
        for part in parts {
            p.feed(part, |d| {
                out.push(String::from_utf8(d.to_vec()).unwrap());
                true
            })?;
        }
        p.finish(|d| {
            out.push(String::from_utf8(d.to_vec()).unwrap());
            true
        })?;
        Ok(out)
    }

    const STREAM: &[u8] = b": keep-alive\r\n\r\nevent: message\nid: 7\ndata: {\"a\":1}\n\ndata:{\"b\":2}\r\n\r\ndata: x\ndata: y\n\nretry: 10\ndata: [DONE]\n\n";

    #[test]
    fn every_split_point_gives_the_same_events() {
        let want = vec!["{\"a\":1}", "{\"b\":2}", "x\ny", "[DONE]"];
        assert_eq!(collect(&[STREAM]).unwrap(), want);
        for i in 0..=STREAM.len() {
            for j in i..=STREAM.len() {
                let got = collect(&[&STREAM[..i], &STREAM[i..j], &STREAM[j..]]).unwrap();
                assert_eq!(got, want, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn bare_cr_line_ends_and_split_crlf() {
        assert_eq!(
            collect(&[b"data: a\r\rdata: b\r", b"\n\r\n"]).unwrap(),
            vec!["a", "b"]
        );
    }

    #[test]
    fn last_event_without_blank_line_is_delivered() {
        assert_eq!(collect(&[b"data: [DONE]"]).unwrap(), vec!["[DONE]"]);
        assert_eq!(collect(&[b"data: [DONE]\n"]).unwrap(), vec!["[DONE]"]);
    }

    #[test]
    fn empty_data_is_an_event_but_blank_lines_alone_are_not() {
        assert_eq!(collect(&[b"\n\n\ndata:\n\n"]).unwrap(), vec![""]);
    }

    #[test]
    fn over_long_line_fails_without_buffering_it() {
        let long = vec![b'a'; 100];
        let mut p = SseParser::new(64);
        let err = p
            .feed(&long[..50], |_| true)
            .and_then(|_| p.feed(&long[50..], |_| true));
        assert_eq!(err, Err(SseError::TooLong { limit: 64 }));
        assert!(p.partial.capacity() == 0);
        // stays failed
        assert!(p.feed(b"data: x\n\n", |_| true).is_err());
        // a long line inside one read fails too
        let mut line = b"data: ".to_vec();
        line.extend_from_slice(&long);
        line.extend_from_slice(b"\n\n");
        assert!(collect(&[&line]).is_err());
    }

    #[test]
    fn callback_can_stop_early() {
        let mut p = SseParser::default();
        let mut n = 0;
        p.feed(b"data: 1\n\ndata: 2\n\n", |_| {
            n += 1;
            false
        })
        .unwrap();
        assert_eq!(n, 1);
    }
}
