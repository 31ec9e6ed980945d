//! The API key: hidden from `Debug`/`Display`, and scrubbed from anything a server echoes.

use std::fmt;

/// An API key. Printing it (`{}` or `{:?}`) shows `***`; only [`ApiKey::expose`] gives the
/// value, and only the client calls it, to build the `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (e.g. read from the scenario's `api_key_env` variable).
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself. Never log or store the result.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Replaces every occurrence of the key in `text` with `***` (so `Bearer <key>` becomes
/// `Bearer ***`). Servers and gateways echo keys back in error bodies; every detail string
/// the client keeps goes through this.
pub fn redact(text: &str, key: Option<&ApiKey>) -> String {
    match key {
        Some(k) if !k.0.is_empty() => text.replace(k.0.as_str(), "***"),
        _ => text.to_owned(),
    }
}

/// Cuts `text` to at most `max` bytes on a char boundary, marking the cut with `…`.
pub(crate) fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_never_prints() {
        let k = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{k} {k:?}"), "*** ***");
        assert_eq!(format!("{:?}", Some(k.clone())), "Some(***)");
        assert_eq!(
            redact("bad key Bearer sk-secret-123 (sk-secret-123)", Some(&k)),
            "bad key Bearer *** (***)"
        );
        assert_eq!(redact("x", Some(&ApiKey::new(""))), "x");
        assert_eq!(redact("sk-secret-123", None), "sk-secret-123");
    }

    #[test]
    fn truncate_on_char_boundary() {
        assert_eq!(truncate("héllo".into(), 2), "h…");
        assert_eq!(truncate("abc".into(), 3), "abc");
    }
}
