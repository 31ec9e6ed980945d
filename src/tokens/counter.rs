//! What counts a batch of texts: the local tokenizer, or one ladder cannot read (the server's
//! `/tokenize`, behind [`CountTokens`]).

use tokenizers::Tokenizer;

use crate::client::TokenizeError;

/// Why texts could not be counted.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CountError {
    /// The local tokenizer failed on a text (its own message).
    #[error("{0}")]
    Local(String),
    /// The server's `/tokenize` could not count.
    #[error(transparent)]
    Server(#[from] TokenizeError),
    /// A counter answered a number of counts other than the number of texts.
    #[error("{got} counts for {texts} texts")]
    Mismatch {
        /// Counts answered.
        got: usize,
        /// Texts asked.
        texts: usize,
    },
    /// The server's tokenizer keeps too few common words whole to synthesise prompts from.
    #[error(
        "the server's tokenizer keeps only {kept} of {of} common English words whole, too \
         few to synthesise random prompts of exact lengths with `tokenizer: server`; give a \
         local tokenizer (a tokenizer.json file, a model directory or a hub id) or a jsonl / \
         sharegpt dataset"
    )]
    FewWords {
        /// Words kept whole.
        kept: usize,
        /// Words tried.
        of: usize,
    },
}

/// Counts tokens with a tokenizer ladder cannot read itself (the server's `/tokenize`):
/// [`super::ServerTokens`] implements it over the client; the workload only asks.
pub trait CountTokens: Sync {
    /// Token counts of `texts` without special tokens, in order, or why they cannot be had.
    fn count(&self, texts: &[String]) -> Result<Vec<u32>, CountError>;
}

/// What counts a draft's tokens: the local tokenizer, or one ladder cannot read (the server's
/// `/tokenize`, through [`CountTokens`]).
#[derive(Clone, Copy)]
pub enum Counter<'a> {
    /// A local `tokenizer.json`.
    Local(&'a Tokenizer),
    /// A tokenizer ladder can only ask.
    Remote(&'a dyn CountTokens),
}

impl Counter<'_> {
    /// Token counts of `texts` without special tokens, in order.
    pub fn counts(&self, texts: &[String]) -> Result<Vec<u32>, CountError> {
        match self {
            Counter::Local(tok) => {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                Ok(tok
                    .encode_batch_fast(refs, false)
                    .map_err(|e| CountError::Local(e.to_string()))?
                    .iter()
                    .map(|e| e.len() as u32)
                    .collect())
            }
            Counter::Remote(c) => {
                let counts = c.count(texts)?;
                if counts.len() != texts.len() {
                    return Err(CountError::Mismatch {
                        got: counts.len(),
                        texts: texts.len(),
                    });
                }
                Ok(counts)
            }
        }
    }

    /// Token count of one text without special tokens.
    pub fn count(&self, text: &str) -> Result<u32, CountError> {
        match self {
            Counter::Local(tok) => Ok(tok
                .encode_fast(text, false)
                .map_err(|e| CountError::Local(e.to_string()))?
                .len() as u32),
            Counter::Remote(_) => Ok(self.counts(&[text.to_string()])?[0]),
        }
    }
}
