//! `endpoint.base_url`: the forms accepted, and the URL as it may be shown (never with
//! `user:password@`).

use super::diagnostic::Problem;
use super::yaml::Seg;

fn p(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|s| Seg::Key((*s).into())).collect()
}

/// Why `user:password@` in a base URL is refused (shared with the scenario check).
pub const CREDENTIALS_IN_URL: &str = "credentials in the URL (`user:password@`) are not \
    accepted: they would be shown and stored with results; put the key in an environment \
    variable named by endpoint.api_key_env, or send a header whose value is `{{ env.NAME }}` \
    (e.g. `Authorization: \"Basic {{ env.BASIC_AUTH }}\"`)";
/// Why a fragment in a base URL is refused.
pub const FRAGMENT_IN_URL: &str =
    "a fragment (`#…`) is never sent to a server; remove it (a query `?…` is kept on every request)";

/// `url` with any `user:password@` removed, textually (works on URLs that do not parse).
pub fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// `url` as a diagnostic shows it: without `user:password@`, and with its query and fragment
/// replaced by `?…` / `#…` (a query may carry a key, `?api_key=…`; nothing is known of a
/// fragment). Textual, so it works on URLs that do not parse.
fn shown_in_diagnostic(url: &str) -> String {
    let plain = without_userinfo(url);
    let Some(at) = plain.find(['?', '#']) else {
        return plain;
    };
    let (head, tail) = plain.split_at(at);
    let mut out = head.to_owned();
    if tail.starts_with('?') {
        out.push_str("?…");
    }
    if tail.contains('#') {
        out.push_str("#…");
    }
    out
}

/// Why `base_url` is unusable, if it is.
pub(crate) fn base_url_problem(raw: &str) -> Option<Problem> {
    let path = p(&["endpoint", "base_url"]);
    if raw == "sim" {
        return None;
    }
    // Never echo a password or a query's key: every message shows the URL without
    // `user:password@`, its query and fragment elided.
    let credentials = without_userinfo(raw).len() != raw.len();
    let shown = shown_in_diagnostic(raw);
    let u = shown.as_str();
    if credentials {
        return Some(
            Problem::value(
                path,
                format!("`{u}` carries credentials (`user:password@`), which ladder refuses"),
            )
            .hint(CREDENTIALS_IN_URL),
        );
    }
    let parsed = match url::Url::parse(raw) {
        Ok(x) => x,
        Err(e) => return Some(
            Problem::value(path, format!("`{u}` is not a URL ({e})")).hint(
                "write `http://HOST:PORT` (or `https://…`), or `sim` for the built-in simulator",
            ),
        ),
    };
    if parsed.scheme() != "http" && parsed.scheme() != "https" {
        return Some(
            Problem::value(
                path,
                format!("scheme `{}` is not supported", parsed.scheme()),
            )
            .hint("use `http://` or `https://`, or `sim` for the built-in simulator"),
        );
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Some(Problem::value(path, format!("`{u}` has no host")));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Some(
            Problem::value(
                path,
                format!("`{u}` carries credentials (`user:password@`), which ladder refuses"),
            )
            .hint(CREDENTIALS_IN_URL),
        );
    }
    if parsed.fragment().is_some() {
        return Some(Problem::value(path, format!("`{u}` has a fragment")).hint(FRAGMENT_IN_URL));
    }
    let trimmed = parsed.path().trim_end_matches('/');
    for suffix in ["/v1/chat/completions", "/v1/completions", "/v1"] {
        if let Some(base_path) = trimmed.strip_suffix(suffix) {
            let mut fixed = parsed.clone();
            fixed.set_path(base_path);
            let query = fixed.query().is_some();
            fixed.set_query(None);
            let mut fixed = fixed.as_str().trim_end_matches('/').to_string();
            if query {
                // The query as written stays; it is not shown (it may hold a key).
                fixed.push_str("?…");
            }
            return Some(
                Problem::value(
                    path,
                    format!("base_url ends in `{suffix}`; ladder adds the API path itself"),
                )
                .hint(if query {
                    format!("drop the path: `{fixed}` (`?…` the query as written)")
                } else {
                    format!("drop the path: `{fixed}`")
                }),
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_forms() {
        assert!(base_url_problem("sim").is_none());
        assert!(base_url_problem("http://127.0.0.1:8000").is_none());
        assert!(base_url_problem("https://gw.example/api").is_none());
        let pr = base_url_problem("http://127.0.0.1:8000/v1/completions").unwrap();
        assert_eq!(
            pr.hint.as_deref(),
            Some("drop the path: `http://127.0.0.1:8000`")
        );
        let pr = base_url_problem("https://gw.example/api/v1/").unwrap();
        assert_eq!(
            pr.hint.as_deref(),
            Some("drop the path: `https://gw.example/api`")
        );
        assert!(base_url_problem("http://h/v1/chat/completions").is_some());
        assert!(base_url_problem("localhost:8000").is_some());
        assert!(base_url_problem("127.0.0.1:8000").is_some());
        assert!(base_url_problem("ftp://h").is_some());
        assert!(
            base_url_problem("https://x.openai.azure.com/openai?api-version=2024-02-01").is_none()
        );
        let pr = base_url_problem("https://gw.example/api/v1?api-version=1").unwrap();
        assert_eq!(
            pr.hint.as_deref(),
            Some("drop the path: `https://gw.example/api?…` (`?…` the query as written)")
        );
        // A query or fragment may hold a key (`?api_key=…`): no diagnostic shows either.
        for u in [
            "http://127.0.0.1:1/v1?api_key=sk-QUERY-SECRET-1",
            "http://127.0.0.1:1/openai/v1?api-key=sk-QUERY-SECRET-1",
            "http://127.0.0.1:1/v1?api_key=sk-QUERY-SECRET-1#frag-SECRET",
            "http://127.0.0.1:1?api_key=sk-QUERY-SECRET-1#frag-SECRET",
            "http://127.0.0.1:1#sk-QUERY-SECRET-1",
            "ftp://127.0.0.1:1?api_key=sk-QUERY-SECRET-1",
            "http://?api_key=sk-QUERY-SECRET-1",
            "http://127.0.0.1:bad?api_key=sk-QUERY-SECRET-1",
        ] {
            let pr = base_url_problem(u).expect(u);
            let text = format!("{} {}", pr.message, pr.hint.clone().unwrap_or_default());
            assert!(!text.contains("SECRET"), "{u}: {text}");
        }
        assert!(base_url_problem("http://h:1/#frag")
            .unwrap()
            .hint
            .unwrap()
            .contains("fragment"));
        for u in [
            "http://alice:pw-VALIDATE-9@h:1",
            "http://alice:pw-VALIDATE-9@h:bad",
            "http://:pw-VALIDATE-9@h",
        ] {
            let pr = base_url_problem(u).expect(u);
            let text = format!("{} {}", pr.message, pr.hint.clone().unwrap_or_default());
            assert!(
                !text.contains("pw-VALIDATE-9") && !text.contains("alice"),
                "{text}"
            );
            assert!(text.contains("api_key_env"), "{u}: {text}");
        }
    }
}
