//! The one bounded reader of an HTTP answer's body (RELIABILITY.md, "one rule per channel"):
//! every body ladder reads whole (error bodies, `/v1/models`, `/tokenize`, `/metrics`, the
//! identity pages) is read here, chunk by chunk, and never holds more than its cap. The caller
//! decides what each ending means (an error body cut at its cap is a courtesy; a `/tokenize`
//! answer cut there is refused).

use tokio::time::{timeout_at, Instant};

/// How a body read ended.
#[derive(Debug)]
pub enum End {
    /// The server finished the body within the cap.
    Complete,
    /// The body passed the cap: `bytes` holds its first `cap` bytes, the rest was not read.
    OverCap,
    /// The body broke off (reset, a malformed chunk).
    Broken(reqwest::Error),
    /// The deadline passed before the body ended.
    TimedOut,
}

/// What was read, and how the read ended.
#[derive(Debug)]
pub struct Body {
    pub bytes: Vec<u8>,
    pub end: End,
}

/// Reads `resp`'s body, keeping at most `cap` bytes, until it ends, passes the cap, breaks
/// off or `deadline` passes (none: the client's own timeout bounds it).
pub async fn read_bounded(
    resp: &mut reqwest::Response,
    cap: usize,
    deadline: Option<Instant>,
) -> Body {
    let mut bytes = Vec::new();
    loop {
        let next = match deadline {
            Some(d) => match timeout_at(d, resp.chunk()).await {
                Ok(r) => r,
                Err(_) => {
                    return Body {
                        bytes,
                        end: End::TimedOut,
                    }
                }
            },
            None => resp.chunk().await,
        };
        match next {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > cap {
                    let take = cap - bytes.len();
                    bytes.extend_from_slice(&chunk[..take]);
                    return Body {
                        bytes,
                        end: End::OverCap,
                    };
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => {
                return Body {
                    bytes,
                    end: End::Complete,
                }
            }
            Err(e) => {
                return Body {
                    bytes,
                    end: End::Broken(e),
                }
            }
        }
    }
}
