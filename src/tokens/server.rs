//! `tokenizer: server`: the workload's token counts taken from the server's `/tokenize`
//! through the run's client ([`crate::client::Client::count_tokens`]).
//!
//! Workload code counts synchronously and runs before a rung, never on the send path; the
//! counter hands each batch to the run's (multi-threaded) runtime with `block_in_place`.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use tokio::runtime::Handle;

use super::{CountError, CountTokens};
use crate::client::{Client, TokenizeError, TokenizeShape};

/// A fixed text whose ids fingerprint the server's tokenizer: run.json's `tokenizer_sha256`
/// for `tokenizer: server` is the SHA-256 of these ids, so compare's config diff sees a
/// tokenizer change as it sees a changed tokenizer.json.
const FINGERPRINT_TEXT: &str = "The quick brown fox jumps over the lazy dog. 0123456789 \
    Größe, naïve café; 東京 — ¿qué? <tag> {\"json\": [1, 2.5e-3]}";

/// Counts through the server's `/tokenize`.
pub struct ServerTokens {
    client: Arc<Client>,
    shape: TokenizeShape,
    handle: Handle,
}

impl ServerTokens {
    /// Finds the server's `/tokenize` shape and fingerprints its tokenizer; call inside the
    /// run's runtime, after preflight has reached the server.
    pub async fn connect(client: Arc<Client>) -> Result<(ServerTokens, String), TokenizeError> {
        let shape = client.tokenize_shape().await?;
        let ids = client.token_ids(FINGERPRINT_TEXT, shape).await?;
        let mut h = Sha256::new();
        for id in ids {
            h.update(id.to_le_bytes());
        }
        let fingerprint = hex::encode(h.finalize());
        Ok((
            ServerTokens {
                client,
                shape,
                handle: Handle::current(),
            },
            fingerprint,
        ))
    }

    /// The request shape found (`vllm` or `llama.cpp`), for run.json.
    pub fn api_name(&self) -> &'static str {
        self.shape.name()
    }
}

impl CountTokens for ServerTokens {
    fn count(&self, texts: &[String]) -> Result<Vec<u32>, CountError> {
        Ok(tokio::task::block_in_place(|| {
            self.handle
                .block_on(self.client.count_tokens(self.shape, texts))
        })?)
    }
}
