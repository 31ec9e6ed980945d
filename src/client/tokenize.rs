//! `tokenizer: server`: counting tokens through the server's own `POST /tokenize`.
//!
//! Two request shapes exist in the wild, and the first call finds out which one the server
//! speaks ([`Client::tokenize_shape`]):
//! - vLLM (and SGLang, which copies it): `{"model", "prompt", "add_special_tokens": false}`
//!   → `{"tokens": [...], "count": n, "max_model_len": m}`;
//! - llama.cpp's `llama-server`: `{"content", "add_special": false}` → `{"tokens": [...]}`.
//!
//! A vLLM-shaped body sent to llama-server has no `content` and comes back as an empty token
//! list, which is how the two are told apart. Special tokens (BOS) are never added: counts
//! are of the text, as a local tokenizer counts them; the server's chat template and BOS are
//! what preflight measures as the prompt overhead.

use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::json;
use tokio::time::{timeout_at, Instant};

use super::secret::truncate;
use super::send::{chain, closed_unanswered};
use super::{Client, DETAIL_MAX};

/// Largest `/tokenize` answer read: a 128k-token prompt's id list is about 1 MB.
const TOKENIZE_BODY_CAP: usize = 16 * 1024 * 1024;
/// `/tokenize` calls in flight at once while counting a batch.
const IN_FLIGHT: usize = 8;
/// Tokens a text may count beyond its length in bytes: a tokenizer makes at most one token a
/// byte (special tokens are not asked for), plus a few for a prefix space or a merged start.
const SLACK_TOKENS: usize = 8;
/// A text every tokenizer splits into a few tokens, to tell the shapes apart.
const PROBE: &str = "Hello, world: counting tokens.";

/// Which `/tokenize` request shape the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizeShape {
    /// vLLM's (SGLang's too): `prompt` and `add_special_tokens`.
    Vllm,
    /// llama.cpp's `llama-server`: `content` and `add_special`.
    LlamaCpp,
}

impl TokenizeShape {
    /// How run.json names it.
    pub fn name(self) -> &'static str {
        match self {
            TokenizeShape::Vllm => "vllm",
            TokenizeShape::LlamaCpp => "llama.cpp",
        }
    }
}

/// Why the server could not count tokens, in words that say what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct TokenizeError(pub String);

#[derive(Deserialize)]
struct Reply {
    tokens: Vec<u64>,
}

impl Client {
    /// `{base}/tokenize`.
    pub fn tokenize_url(&self) -> &str {
        self.inner.tokenize_url.as_str()
    }

    /// Finds which `/tokenize` shape the server speaks (vLLM's first, then llama.cpp's).
    pub async fn tokenize_shape(&self) -> Result<TokenizeShape, TokenizeError> {
        for shape in [TokenizeShape::Vllm, TokenizeShape::LlamaCpp] {
            if self.tokenize(PROBE, shape).await? > 0 {
                return Ok(shape);
            }
        }
        Err(TokenizeError(format!(
            "{} answered but counted no tokens in a non-empty text in either the vLLM or the \
             llama.cpp request shape: this server's /tokenize is not one ladder speaks; use a \
             local tokenizer (a tokenizer.json file, a model directory or a hub id)",
            self.tokenize_url()
        )))
    }

    /// Token counts of `texts` (no special tokens added), in order, a few calls in flight.
    pub async fn count_tokens(
        &self,
        shape: TokenizeShape,
        texts: &[String],
    ) -> Result<Vec<u32>, TokenizeError> {
        stream::iter(texts.iter().map(|t| self.tokenize(t, shape)))
            .buffered(IN_FLIGHT)
            .try_collect()
            .await
    }

    /// The server's token count of one text.
    pub async fn tokenize(&self, text: &str, shape: TokenizeShape) -> Result<u32, TokenizeError> {
        let n = self.token_ids(text, shape).await?.len();
        u32::try_from(n)
            .map_err(|_| TokenizeError(format!("{} counted {n} tokens", self.tokenize_url())))
    }

    /// The server's token ids of one text (no special tokens added).
    pub async fn token_ids(
        &self,
        text: &str,
        shape: TokenizeShape,
    ) -> Result<Vec<u64>, TokenizeError> {
        let url = self.tokenize_url();
        let body = match shape {
            TokenizeShape::Vllm => json!({
                "model": self.inner.model,
                "prompt": text,
                "add_special_tokens": false,
            }),
            TokenizeShape::LlamaCpp => json!({ "content": text, "add_special": false }),
        };
        let deadline = Instant::now() + self.inner.request_timeout;
        let mut resent = false;
        let mut resp = loop {
            let send = self.http.post(url).json(&body).send();
            match timeout_at(deadline, send).await {
                Err(_) => {
                    return Err(TokenizeError(format!(
                        "{url} did not answer within request_timeout ({:?})",
                        self.inner.request_timeout
                    )))
                }
                // A kept-alive connection the server closed as this request went out: it never
                // read it, and counting tokens changes nothing, so it is sent once more (on a
                // fresh connection), as the load's own requests are.
                Ok(Err(e)) if closed_unanswered(&e) && !resent => resent = true,
                Ok(Err(e)) => {
                    let why = truncate(self.redact(&chain(&e)), DETAIL_MAX);
                    let again = if resent { ", sent twice" } else { "" };
                    return Err(TokenizeError(format!(
                        "cannot reach {url}: {why}{again} (is the server up?)"
                    )));
                }
                Ok(Ok(r)) => break r,
            }
        };
        let status = resp.status();
        let body = super::body::read_bounded(&mut resp, TOKENIZE_BODY_CAP, Some(deadline)).await;
        let bytes = body.bytes;
        match body.end {
            super::body::End::Complete | super::body::End::OverCap => {}
            super::body::End::Broken(_) | super::body::End::TimedOut => {
                return Err(TokenizeError(format!(
                    "{url} broke off or stalled in the middle of its answer"
                )))
            }
        }
        if matches!(body.end, super::body::End::OverCap) {
            // Cut there, it would only read as broken JSON: say what it was.
            return Err(TokenizeError(format!(
                "{url} answered more than {} MiB, far more than a token list of any prompt: \
                 not read (is this the server's /tokenize?)",
                TOKENIZE_BODY_CAP >> 20
            )));
        }
        let excerpt = || {
            truncate(
                self.redact(String::from_utf8_lossy(&bytes).trim()),
                DETAIL_MAX,
            )
        };
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 | 403 => {
                    "the server wants a key: set the variable `endpoint.api_key_env` names"
                }
                404 | 405 => {
                    "this server (or a gateway in front of it) has no /tokenize: vLLM, SGLang \
                     and llama.cpp's llama-server have one; otherwise use a local tokenizer \
                     (a tokenizer.json file, a model directory or a hub id)"
                }
                _ => "the server could not tokenize the text",
            };
            return Err(TokenizeError(format!(
                "{url} answered {status}: {} ({hint})",
                excerpt()
            )));
        }
        let reply: Reply = serde_json::from_slice(&bytes).map_err(|e| {
            TokenizeError(format!(
                "{url} answered with something other than a list of token ids ({e}): {}",
                excerpt()
            ))
        })?;
        // A count no tokenizer makes would size every prompt wrong: refused, not used.
        if reply.tokens.len() > text.len() + SLACK_TOKENS {
            return Err(TokenizeError(format!(
                "{url} counted {} tokens in a text of {} bytes: a tokenizer makes at most one \
                 token a byte, so this is not a token count (is this the server's /tokenize?); \
                 use a local tokenizer",
                reply.tokens.len(),
                text.len()
            )));
        }
        Ok(reply.tokens)
    }
}
