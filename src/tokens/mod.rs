//! Counting tokens, one file per job: a local Hugging Face `tokenizer.json` ([`local`]),
//! where the scenario's `tokenizer:` comes from ([`source`]: a file, a model directory, a hub
//! id, `server` or `none`), what counts a batch of texts ([`counter`]: the local tokenizer or
//! one ladder cannot read), the server's own tokenizer through its `/tokenize`
//! ([`server`]), and the words that tokenizer keeps whole ([`server_words`]).
//!
//! The `/tokenize` request itself is the client's (`client::tokenize`): every request to the
//! server goes through the one client, with its timeouts, body cap and secret redaction. The
//! simulator's `/tokenize` (`sim::tokenize`) is the simulated *server's* tokenizer, which
//! ladder measures from outside, so it stays with the simulator.

mod counter;
mod local;
mod server;
pub(crate) mod server_words;
pub mod source;

pub use counter::{CountError, CountTokens, Counter};
pub use local::{check, count, load, without_truncation, LoadError, MAX_TOKENIZER_BYTES};
pub use server::ServerTokens;
pub use source::{SourceKind, TokenizerSource};
pub use tokenizers::Tokenizer;
