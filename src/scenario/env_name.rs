//! A field that names an environment variable (`api_key_env`, of the endpoint and of
//! `server_metrics`): the form a name takes, and the problem when the field holds something
//! else, which may be the key itself, pasted where its variable's name goes.

use super::diagnostic::Problem;
use super::yaml::Seg;

/// A field that names an environment variable (`api_key_env`) holding something else: the
/// problem, which never shows the value unless it reads as a variable name in the wrong case
/// (`openai_api_key`). Anything else may be the key itself, pasted where its variable's name
/// goes: it is described by its length, and the hint says what to do about a key now in the
/// file. `example` is a name to suggest.
pub(crate) fn env_name_problem(value: &str, at: Vec<Seg>, example: &str) -> Option<Problem> {
    if is_env_name(value) {
        return None;
    }
    let upper = super::identity::env_name_form(value);
    // Lower-case words of at most 12 characters joined by `_` or `-` (`vllm-api-key`):
    // keys are longer runs, mixed case, or both.
    let name_like = value.len() <= 40
        && value.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && value.split(['_', '-']).all(|w| w.len() <= 12);
    Some(if name_like {
        Problem::value(
            at,
            format!("`{value}` is not an environment variable name in upper-case form"),
        )
        .hint(format!(
            "name the variable in upper case: e.g. `{upper}` (A-Z, 0-9, _; not starting with a digit)"
        ))
    } else {
        Problem::value(
            at,
            format!(
                "this is not an environment variable name (A-Z, 0-9, _), and it is not shown: \
                 {} characters that may be the key itself",
                value.chars().count()
            ),
        )
        .hint(format!(
            "name the variable that holds the key, e.g. `{example}`, and export the key in it; \
             if this was the key, take it out of the file, and rotate it if the file was shared \
             or committed"
        ))
    })
}

/// `^[A-Z_][A-Z0-9_]*$`
pub(crate) fn is_env_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_uppercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}
