//! minijinja in scenarios: `{{ env.NAME }}` / `{{ env.NAME | default("x") }}` in string values,
//! rendered at load time; `workload.prompt_template` is only syntax-checked here (it is
//! rendered per prompt by the workload with `{{ prompt }}`).

use std::collections::BTreeMap;

use minijinja::Environment;
use serde_json::Value;

use super::diagnostic::Problem;
use super::yaml::{Kind, Node, Seg};

/// Where the per-prompt template lives; never rendered at load time.
pub(crate) const PROMPT_TEMPLATE: [&str; 2] = ["workload", "prompt_template"];

fn has_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

fn strict_env() -> Environment<'static> {
    super::bounded::environment()
}

/// Render every templated string value in place with `env` as the variables. Rendered values
/// stay strings. Errors carry the key path of the value; their text never includes variable
/// values (one of them may be an API key).
pub(crate) fn render_env(root: &mut Node, vars: &BTreeMap<String, String>) -> Vec<Problem> {
    let mut metered = super::bounded::Metered::default();
    let ctx = minijinja::context! { env => vars };
    let mut problems = vec![];
    let mut path = vec![];
    walk(root, &mut path, &mut |path, s| {
        if path.len() == 2
            && path[0] == Seg::Key(PROMPT_TEMPLATE[0].into())
            && path[1] == Seg::Key(PROMPT_TEMPLATE[1].into())
        {
            return None;
        }
        if !has_template(s) {
            return None;
        }
        match metered.render_str(s, &ctx) {
            Ok(out) => Some(out),
            Err(e) => {
                let mut msg = template_error(&e);
                let unset: Vec<String> = env_names(s)
                    .into_iter()
                    .filter(|n| !vars.contains_key(n))
                    .map(|n| format!("${n}"))
                    .collect();
                if matches!(e.kind(), minijinja::ErrorKind::UndefinedError) && !unset.is_empty() {
                    msg = format!("{} is not set", unset.join(", "));
                }
                let mut pr = Problem::value(path.to_vec(), msg);
                if matches!(e.kind(), minijinja::ErrorKind::UndefinedError) {
                    pr = pr.hint(
                        "set the environment variable, or give a fallback: \
                         `{{ env.NAME | default(\"value\") }}`",
                    );
                }
                problems.push(pr);
                None
            }
        }
    });
    problems
}

/// Paths of the string values whose template reads an environment variable (`env.NAME`):
/// their rendered values may be secrets, so results record them as `<redacted>`.
pub(crate) fn env_paths(root: &Node) -> Vec<Vec<Seg>> {
    let mut out = vec![];
    walk(&mut root.clone(), &mut vec![], &mut |path, s| {
        if has_template(s) && !env_names(s).is_empty() {
            out.push(path.to_vec());
        }
        None
    });
    out
}

/// Every string value whose template reads environment variables, with the names it reads
/// (in the file as written, before rendering).
pub(crate) fn env_uses(root: &Node) -> Vec<(Vec<Seg>, Vec<String>)> {
    let mut out = vec![];
    walk(&mut root.clone(), &mut vec![], &mut |path, s| {
        // Rendered per prompt with `{{ prompt }}` only, never with the environment.
        let prompt_template = path.len() == 2
            && path[0] == Seg::Key(PROMPT_TEMPLATE[0].into())
            && path[1] == Seg::Key(PROMPT_TEMPLATE[1].into());
        if has_template(s) && !prompt_template {
            let names = env_names(s);
            if !names.is_empty() {
                out.push((path.to_vec(), names));
            }
        }
        None
    });
    out
}

/// A value read from the environment that the scenario sends as (part of) a credential or a
/// URL: a secret, never written or printed. Its `Debug` shows the variable's name only.
#[derive(Clone, PartialEq)]
pub struct EnvSecret {
    /// The variable (`SIG` for `{{ env.SIG }}`).
    pub var: String,
    /// What it contributes: its value, or for a whole URL from the environment its query
    /// values (the host and path stay visible).
    pub value: String,
}

impl std::fmt::Debug for EnvSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EnvSecret(${}: ***)", self.var)
    }
}

/// Whether the value at `path` is sent to a server as a credential or a URL: the URLs
/// (`endpoint.base_url`, `server_metrics.url`), header values and `extra_body` fields at any
/// depth. A value from the environment in these places is a secret: the rule of
/// RELIABILITY.md's "Secrets" section ("a value from the environment is a secret unless it is
/// written in the file").
fn carries_secrets(path: &[Seg]) -> Option<bool> {
    let key = |i: usize| match path.get(i) {
        Some(Seg::Key(k)) => Some(k.as_str()),
        _ => None,
    };
    match (key(0)?, key(1)?) {
        ("endpoint", "base_url") | ("server_metrics", "url") => Some(true),
        ("endpoint", "headers") | ("endpoint", "extra_body") => Some(false),
        _ => None,
    }
}

/// The secrets that `{{ env.NAME }}` templates put into the scenario's credentials and URLs
/// (see [`carries_secrets`]); `vars` are the variables as rendered. Unset variables (a
/// `default(...)` was used) contribute nothing.
pub(crate) fn env_secrets(
    uses: &[(Vec<Seg>, Vec<String>)],
    vars: &BTreeMap<String, String>,
) -> Vec<EnvSecret> {
    let mut out: Vec<EnvSecret> = vec![];
    for (path, names) in uses {
        let Some(is_url) = carries_secrets(path) else {
            continue;
        };
        for name in names {
            let Some(value) = vars.get(name).filter(|v| !v.is_empty()) else {
                continue;
            };
            let parts: Vec<String> = match url::Url::parse(value) {
                // A whole URL from the environment: its query values are the secrets.
                Ok(u) if is_url && u.has_host() => u
                    .query_pairs()
                    .map(|(_, v)| v.into_owned())
                    .filter(|v| !v.is_empty())
                    .collect(),
                _ => vec![value.clone()],
            };
            for v in parts {
                if !out.iter().any(|e| e.value == v) {
                    out.push(EnvSecret {
                        var: name.clone(),
                        value: v,
                    });
                }
            }
        }
    }
    out
}

/// Where a templated value came from, for a problem found in the rendered value: the
/// variables that were set (`$LADDER_TOKENIZER`), or, when none of them was, the template's
/// own `default(...)`. Names only; values are never shown (one may be a key).
pub(crate) fn origin(names: &[String], vars: &BTreeMap<String, String>) -> String {
    let (set, unset): (Vec<&String>, Vec<&String>) =
        names.iter().partition(|n| vars.contains_key(n.as_str()));
    let list = |v: &[&String]| {
        v.iter()
            .map(|n| format!("${n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (set.is_empty(), unset.is_empty()) {
        (true, _) => format!(
            "this value is the template's default: {} {} not set; set {} to change it",
            list(&unset),
            if unset.len() == 1 { "is" } else { "are" },
            if unset.len() == 1 { "it" } else { "them" }
        ),
        (false, true) => format!("this value comes from {}", list(&set)),
        (false, false) => format!(
            "this value comes from {} and the template's default for {} (not set)",
            list(&set),
            list(&unset)
        ),
    }
}

/// Names used as `env.NAME` in a template (names only; values are never shown).
fn env_names(s: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let mut rest = s;
    while let Some(i) = rest.find("env.") {
        let after = &rest[i + 4..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let before_ok =
            i == 0 || !rest[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if end > 0 && before_ok && !out.iter().any(|n| n == &after[..end]) {
            out.push(after[..end].to_string());
        }
        rest = &after[end..];
    }
    out
}

fn walk(node: &mut Node, path: &mut Vec<Seg>, f: &mut dyn FnMut(&[Seg], &str) -> Option<String>) {
    match &mut node.kind {
        Kind::Scalar(Value::String(s), _) => {
            if let Some(new) = f(path, s) {
                *s = new;
            }
        }
        Kind::Scalar(..) => {}
        Kind::Seq(items) => {
            for (i, n) in items.iter_mut().enumerate() {
                path.push(Seg::Index(i));
                walk(n, path, f);
                path.pop();
            }
        }
        Kind::Map(entries) => {
            for (k, _, n) in entries.iter_mut() {
                path.push(Seg::Key(k.clone()));
                walk(n, path, f);
                path.pop();
            }
        }
    }
}

fn template_error(e: &minijinja::Error) -> String {
    let what = match e.kind() {
        minijinja::ErrorKind::SyntaxError => "template syntax error",
        minijinja::ErrorKind::UndefinedError => "undefined variable in template",
        _ => "template error",
    };
    if let Some(m) = super::bounded::budget_message(e) {
        return m;
    }
    let detail = e.detail().unwrap_or("").to_string();
    let mut msg = what.to_string();
    if !detail.is_empty() {
        msg.push_str(&format!(": {detail}"));
    }
    if let Some(l) = e.line() {
        if l > 1 {
            msg.push_str(&format!(" (template line {l})"));
        }
    }
    msg
}

/// Syntax-check the per-prompt template without rendering it. The error carries the
/// 1-based line inside the template, when known.
pub fn check_prompt_template(src: &str) -> Result<(), (String, Option<usize>)> {
    let env = strict_env();
    env.template_from_str(src)
        .map(|_| ())
        .map_err(|e| (template_error(&e), e.line()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::yaml::parse;
    use serde_json::json;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn renders_env_with_and_without_default() {
        let mut n =
            parse("a: '{{ env.HOST }}:8000'\nb: '{{ env.MISSING | default(\"x\") }}'\nc: 5\n")
                .unwrap();
        let ps = render_env(&mut n, &vars(&[("HOST", "h")]));
        assert!(ps.is_empty(), "{ps:?}");
        assert_eq!(n.to_json(), json!({"a": "h:8000", "b": "x", "c": 5}));
    }

    #[test]
    fn undefined_variable_is_an_error_at_its_path() {
        let mut n = parse("endpoint:\n  base_url: '{{ env.NOPE }}'\n").unwrap();
        let ps = render_env(&mut n, &vars(&[]));
        assert_eq!(ps.len(), 1);
        assert_eq!(
            ps[0].path,
            vec![Seg::Key("endpoint".into()), Seg::Key("base_url".into())]
        );
        assert_eq!(ps[0].message, "$NOPE is not set");
        assert!(ps[0].hint.is_some());
    }

    #[test]
    fn prompt_template_is_not_rendered_but_checked() {
        let mut n = parse("workload:\n  prompt_template: 'Q: {{ prompt }}'\n").unwrap();
        assert!(render_env(&mut n, &vars(&[])).is_empty());
        assert_eq!(
            n.to_json()["workload"]["prompt_template"],
            json!("Q: {{ prompt }}")
        );
        assert!(check_prompt_template("Q: {{ prompt }}").is_ok());
        let (e, line) = check_prompt_template("a\nQ: {{ prompt }").unwrap_err();
        assert_eq!(line, Some(2));
        assert!(e.starts_with("template syntax error"), "{e}");
    }

    #[test]
    fn env_paths_name_the_values_read_from_the_environment() {
        let n = parse(
            "endpoint:\n  headers:\n    X-A: '{{ env.A }}'\n    X-B: b\n    X-C: '{{ 1 + 1 }}'\n",
        )
        .unwrap();
        assert_eq!(
            env_paths(&n),
            vec![vec![
                Seg::Key("endpoint".into()),
                Seg::Key("headers".into()),
                Seg::Key("X-A".into())
            ]]
        );
    }

    #[test]
    fn syntax_errors_in_values_are_reported() {
        let mut n = parse("model: '{{ env.X '\n").unwrap();
        let ps = render_env(&mut n, &vars(&[("X", "y")]));
        assert!(ps[0].message.starts_with("template syntax error"), "{ps:?}");
    }
}
