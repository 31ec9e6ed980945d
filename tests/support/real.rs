//! The real llama.cpp `llama-server` that .ci/run builds and starts on loopback (see
//! docs/real-server.md), as the tests find it in their environment.

use std::sync::{Mutex, MutexGuard};

pub struct Real {
    pub url: String,
    pub model: String,
    pub tokenizer: String,
    /// Held for the test's life: the real-server tests take turns, so one test's load never
    /// changes what another measures on the same 2-core server (counts, not speed, are checked).
    _turn: MutexGuard<'static, ()>,
}

static REAL_SERVER_TURN: Mutex<()> = Mutex::new(());

/// The server from the environment, or `None` after saying why the test is skipped.
pub fn real(test: &str, url_var: &str) -> Option<Real> {
    let get = |v: &str| std::env::var(v).ok().filter(|s| !s.is_empty());
    match (
        get(url_var),
        get("LADDER_REAL_SERVER_MODEL"),
        get("LADDER_REAL_SERVER_TOKENIZER"),
    ) {
        (Some(url), Some(model), Some(tokenizer)) => Some(Real {
            url,
            model,
            tokenizer,
            _turn: REAL_SERVER_TURN
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        }),
        _ => {
            super::skip::skip(
                test,
                &format!(
                    "no real server ({url_var}, LADDER_REAL_SERVER_MODEL and \
                     LADDER_REAL_SERVER_TOKENIZER are set by .ci/run after scripts/real-server/ \
                     builds and starts llama-server; see docs/real-server.md)"
                ),
            );
            None
        }
    }
}
