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

/// Replaces every occurrence of the key in `text`, in any encoding (see [`Redactor`]), with
/// `***` (so `Bearer <key>` becomes `Bearer ***`). For repeated use build a [`Redactor`]
/// once; the client keeps one for all the secrets of a run.
///
/// [`Redactor`]: super::Redactor
pub fn redact(text: &str, key: Option<&ApiKey>) -> String {
    match key {
        Some(k) => super::Redactor::new([("the API key".to_string(), k.0.clone())])
            .redact(text)
            .into_owned(),
        None => text.to_owned(),
    }
}

/// Header names whose values are credentials (case-insensitive): `Authorization`,
/// `Proxy-Authorization`, `Cookie`, `X-Api-Key`, `Api-Key`, and anything naming an auth,
/// token, secret, key, password, credential or session.
pub fn is_secret_name(name: &str) -> bool {
    // A tokenizer (`LADDER_TOKENIZER`, `X-Tokenizer`) is no token.
    let n = name.to_ascii_lowercase().replace("tokenizer", "");
    [
        "auth",
        "cookie",
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "session",
        "signature",
    ]
    .iter()
    .any(|s| n.contains(s))
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
    fn secret_names() {
        for n in [
            "Authorization",
            "proxy-authorization",
            "Cookie",
            "X-Api-Key",
            "api-key",
            "X-Auth",
            "x-access-token",
            "X-Client-Secret",
            "db_password",
            "X-Session-Id",
            "tokenizer_token",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "X-Request-Source",
            "Content-Type",
            "User-Agent",
            "api-version",
            "LADDER_TOKENIZER",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn truncate_on_char_boundary() {
        assert_eq!(truncate("héllo".into(), 2), "h…");
        assert_eq!(truncate("abc".into(), 3), "abc");
    }
}
