//! Reading a scenario file: size and encoding guards, YAML with positions, version and
//! migration, `{{ env.NAME }}` templates, JSON Schema and semantic checks, then the typed
//! [`Scenario`]. Every problem found on the way is reported, with its location.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::diagnostic::{Diagnostic, Diagnostics, Problem};
use super::migrate::{migrate, OLDEST_VERSION};
use super::types::{Scenario, CURRENT_VERSION};
use super::validate::{self, resolve_against, TokenizerCheck};
use super::yaml::{self, path_string, Kind, Node, Pos, Seg, Style};
use super::{extends, schema, template};

/// Scenario files are short text; anything larger is refused before it is read.
pub const MAX_SCENARIO_BYTES: u64 = 1024 * 1024;

/// A scenario that passed every check, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The scenario, migrated to the current version with templates rendered.
    pub scenario: Scenario,
    /// The file it was read from, as given.
    pub path: PathBuf,
    /// Notes for the user: migration (empty for a current-version file), and warnings
    /// about a valid soak (`scenario::soak::notes`).
    pub notes: Vec<String>,
    /// Names of the `endpoint.headers` whose values came from `{{ env.NAME }}`: secrets,
    /// never written to results.
    pub env_headers: Vec<String>,
    /// Keys of `endpoint.extra_body` whose values hold a `{{ env.NAME }}`: treated like
    /// secret headers (sent, never written to results, scrubbed from server replies).
    pub env_body: Vec<String>,
    /// Values from the environment in the scenario's URLs, headers and `extra_body`: secrets
    /// (masked in results, scrubbed from everything a server sends back).
    pub env_secrets: Vec<super::template::EnvSecret>,
    /// Every environment variable the file (and its `extends:` bases) reads with
    /// `{{ env.NAME }}`, in order of first use: `ladder kube` passes them to its pods.
    pub env_vars: Vec<String>,
    /// The `extends:` chain's files after this one, as resolved (empty without `extends:`).
    pub bases: Vec<PathBuf>,
}

impl Loaded {
    /// Resolve a path written in the scenario (tokenizer, dataset) against the scenario
    /// file's directory; absolute paths are returned as they are.
    pub fn resolve(&self, p: &Path) -> PathBuf {
        resolve_against(&self.path, p)
    }

    /// The tokenizer file, resolved.
    pub fn tokenizer_path(&self) -> PathBuf {
        self.resolve(&self.scenario.tokenizer)
    }

    /// The dataset file of a jsonl / ShareGPT workload, resolved.
    pub fn dataset_path(&self) -> Option<PathBuf> {
        self.scenario
            .workload
            .path
            .as_deref()
            .map(|p| self.resolve(p))
    }
}

/// A problem found after loading (e.g. by `runner::prepare`): the key it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Key path of the value at fault, e.g. `["sim", "max_num_seqs"]`.
    pub path: Vec<Seg>,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Finding {
    /// A finding about the value at `keys` (mapping keys only).
    pub fn at(keys: &[&str], message: impl Into<String>) -> Finding {
        Finding {
            path: keys.iter().map(|k| Seg::Key((*k).into())).collect(),
            message: message.into(),
            hint: None,
        }
    }
    /// With a hint.
    pub fn hint(mut self, h: impl Into<String>) -> Finding {
        self.hint = Some(h.into());
        self
    }
}

impl Loaded {
    /// Diagnostics with `file:line:col` for findings about this scenario; the file is read
    /// again for the positions (the value's line, or the nearest enclosing key's).
    pub fn diagnose(&self, findings: &[Finding]) -> Vec<Diagnostic> {
        let tree = source_tree(&self.path);
        let mut diags: Vec<Diagnostic> = findings
            .iter()
            .map(|f| {
                let (pos, file) = match &tree {
                    Some((t, files)) => {
                        let pos = t.locate(&f.path);
                        (pos, files[usize::from(pos.file)].clone())
                    }
                    None => (Pos::at(0, 0), self.path.clone()),
                };
                Diagnostic {
                    file,
                    line: pos.line,
                    col: pos.col,
                    key_path: path_string(&f.path),
                    message: f.message.clone(),
                    hint: f.hint.clone(),
                }
            })
            .collect();
        diags.sort_by_key(|d| (d.line, d.col));
        diags
    }
}

/// Load and check a scenario (everything except loading the tokenizer, which the caller does
/// anyway). Errors hold every problem found.
pub fn load(path: &Path) -> Result<Loaded, Diagnostics> {
    match check_file(path, None) {
        (Some(l), d) if d.is_empty() => Ok(l),
        (_, d) => Err(Diagnostics(d)),
    }
}

/// Every problem of a scenario file, including whether its tokenizer loads (through the
/// injected `tokenizer_check`, e.g. `ladder::tokens::check`). Empty when valid.
pub fn validate_file(path: &Path, tokenizer_check: TokenizerCheck<'_>) -> Vec<Diagnostic> {
    check_file(path, Some(tokenizer_check)).1
}

/// Like [`validate_file`], also returning the loaded scenario (and its migration notes)
/// when it is valid.
pub fn check_file(
    path: &Path,
    tokenizer_check: Option<TokenizerCheck<'_>>,
) -> (Option<Loaded>, Vec<Diagnostic>) {
    match read_text(path) {
        Ok(text) => check_text(path, &text, tokenizer_check),
        Err(d) => (None, vec![d]),
    }
}

/// A scenario file's text, or a diagnostic saying why it cannot be used (line 0: the whole
/// file, e.g. missing or too large).
pub(crate) fn read_text(path: &Path) -> Result<String, Diagnostic> {
    read_source(path).map_err(|e| match e {
        Source::Whole(message, hint) => Diagnostic {
            file: path.to_path_buf(),
            line: 0,
            col: 0,
            key_path: String::new(),
            message,
            hint: hint.map(String::from),
        },
        Source::At(pos, message) => Diagnostic {
            file: path.to_path_buf(),
            line: pos.line,
            col: pos.col,
            key_path: String::new(),
            message,
            hint: Some("a scenario is a UTF-8 YAML text file".into()),
        },
    })
}

/// The merged tree of a scenario file and its `extends` chain, and the chain's files.
fn source_tree(path: &Path) -> Option<(Node, Vec<PathBuf>)> {
    let tree = yaml::parse(&read_text(path).ok()?).ok()?;
    extends::resolve(tree, path, &read_text).ok()
}

/// [`check_file`] on a scenario's text that is not (yet) in a file, e.g. one `ladder init` is
/// about to write to `path` (relative paths inside it resolve against `path`'s folder).
pub fn check_text(
    path: &Path,
    text: &str,
    tokenizer_check: Option<TokenizerCheck<'_>>,
) -> (Option<Loaded>, Vec<Diagnostic>) {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let metric_keys = super::metric_keys::rung_metric_keys();
    analyse(path, text, &vars, tokenizer_check, &metric_keys)
}

enum Source {
    Whole(String, Option<&'static str>),
    At(Pos, String),
}

fn read_source(path: &Path) -> Result<String, Source> {
    use crate::fileread::{read_bounded, ReadError};
    let bytes = read_bounded(path, MAX_SCENARIO_BYTES).map_err(|e| match e {
        ReadError::NotFound(_) => Source::Whole("file does not exist".into(), None),
        ReadError::Directory(_) => Source::Whole(
            "is a directory, not a scenario file".into(),
            Some("pass the .yaml file(s) inside it"),
        ),
        ReadError::TooLarge { size, .. } => Source::Whole(
            format!(
                "file is {}; scenario files are small YAML text (at most {} KiB)",
                size.map_or_else(
                    || "larger than the limit".into(),
                    |n| format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
                ),
                MAX_SCENARIO_BYTES / 1024
            ),
            Some("is this the right file? datasets go in `workload.path`, not in the scenario"),
        ),
        e @ ReadError::NotRegular { .. } => Source::Whole(
            e.reason(),
            Some("a scenario is a YAML text file; copy it to a file first"),
        ),
        e @ ReadError::Io { .. } => Source::Whole(e.reason(), None),
    })?;
    if let Some(i) = bytes.iter().position(|b| *b == 0) {
        return Err(Source::At(
            byte_pos(&bytes, i),
            "binary data (a NUL byte), not YAML text".into(),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let i = e.utf8_error().valid_up_to();
        Source::At(
            byte_pos(e.as_bytes(), i),
            "not UTF-8 text (invalid byte sequence)".into(),
        )
    })?;
    Ok(text
        .strip_prefix('\u{feff}')
        .map(String::from)
        .unwrap_or(text))
}

/// The `null` that removed the key a "missing required field" problem is about, if any.
fn removed_here<'a>(removed: &'a [extends::Removed], p: &Problem) -> Option<&'a extends::Removed> {
    let name = p
        .message
        .strip_prefix("missing required field `")?
        .strip_suffix('`')?;
    let mut want: Vec<String> = p
        .path
        .iter()
        .map(|s| match s {
            Seg::Key(k) => k.clone(),
            Seg::Index(i) => i.to_string(),
        })
        .collect();
    want.push(name.to_string());
    removed.iter().find(|r| r.path == want)
}

/// Line and column (in characters, 1-based) of byte offset `i`.
fn byte_pos(bytes: &[u8], i: usize) -> Pos {
    let before = &bytes[..i];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    let col = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    Pos::at(line, col)
}

/// The checking pipeline on text already read, with the environment passed in (tests).
pub(crate) fn analyse(
    path: &Path,
    text: &str,
    vars: &BTreeMap<String, String>,
    tokenizer_check: Option<TokenizerCheck<'_>>,
    metric_keys: &[String],
) -> (Option<Loaded>, Vec<Diagnostic>) {
    let tree = match mapping_of(path, text) {
        Ok(t) => t,
        Err(ds) => return (None, ds),
    };
    let (mut tree, files, removed) = match extends::resolve_removing(tree, path, &read_text) {
        Ok(resolved) => resolved,
        Err(ds) => return (None, ds),
    };
    let mut problems: Vec<Problem> = vec![];
    let notes = match versioned(&mut tree, &mut problems) {
        Ok(notes) => notes,
        Err(pr) => return (None, vec![diagnostic(&files, &tree, pr)]),
    };
    let env = EnvFacts::of(&tree, vars);
    let json = rendered_and_checked(
        &mut tree,
        &mut problems,
        (path, vars),
        &env,
        tokenizer_check,
        metric_keys,
    );
    let diags = diagnostics(problems, &removed, &files, &tree);
    if !diags.is_empty() {
        return (None, diags);
    }
    match serde_path_to_error::deserialize::<_, Scenario>(json) {
        Ok(scenario) => (
            Some(Loaded {
                notes: notes
                    .into_iter()
                    .chain(super::soak::notes(&scenario))
                    .collect(),
                scenario,
                path: path.to_path_buf(),
                env_headers: env.headers,
                env_body: env.body,
                env_secrets: env.secrets,
                env_vars: env.vars,
                bases: files[1..].to_vec(),
            }),
            vec![],
        ),
        Err(e) => {
            let at = typed_path(e.path());
            let pr = Problem::value(at, format!("cannot read this value: {}", e.inner()))
                .hint("the value has the wrong type or is out of range for this key (see `ladder schema`)");
            (None, vec![diagnostic(&files, &tree, pr)])
        }
    }
}

/// A problem as the user reads it: the file of the `extends:` chain (`files`) and the line
/// and column of its key or value in `tree`.
fn diagnostic(files: &[PathBuf], tree: &Node, pr: Problem) -> Diagnostic {
    let mut pos = if pr.at_key {
        tree.locate_key(&pr.path)
    } else {
        tree.locate(&pr.path)
    };
    // A block string starts on its own line: point at the line inside it.
    if let Some(l) = pr.line_in_value {
        if tree
            .at(&pr.path)
            .is_some_and(|n| matches!(n.kind, Kind::Scalar(_, Style::Block)))
        {
            pos.line += l.saturating_sub(1);
        }
    }
    Diagnostic {
        file: files[usize::from(pos.file)].clone(),
        line: pos.line,
        col: pos.col,
        key_path: path_string(&pr.path),
        message: pr.message,
        hint: pr.hint,
    }
}

/// The file's YAML tree, which must be a mapping of settings.
fn mapping_of(path: &Path, text: &str) -> Result<Node, Vec<Diagnostic>> {
    let tree = match yaml::parse(text) {
        Ok(t) => t,
        Err(ps) => {
            return Err(ps
                .into_iter()
                .map(|p| Diagnostic {
                    file: path.to_path_buf(),
                    line: p.pos.line,
                    col: p.pos.col,
                    key_path: path_string(&p.path),
                    hint: p.message.starts_with("invalid YAML").then(|| {
                        "check indentation, quotes and brackets on this line and the lines above"
                            .to_string()
                    }),
                    message: p.message,
                })
                .collect())
        }
    };
    if matches!(tree.kind, Kind::Map(_)) {
        return Ok(tree);
    }
    let json = tree.to_json();
    let msg = if json.is_null() {
        "the file has no settings (it is empty or only comments)".to_string()
    } else {
        format!(
            "a scenario is a YAML mapping of settings, found {}",
            schema::describe(&json)
        )
    };
    let pr = Problem::value(vec![], msg).hint("start from scenarios/quickstart.yaml");
    Err(vec![diagnostic(&[path.to_path_buf()], &tree, pr)])
}

/// The file's `version`, migrated to the current one: the migration's notes, or the one
/// problem that stops the checks (a version newer than this build, or not a version). A
/// missing version is a problem in `problems`, and the current version stands in for it.
fn versioned(tree: &mut Node, problems: &mut Vec<Problem>) -> Result<Vec<String>, Problem> {
    let version_path = vec![Seg::Key("version".into())];
    let Some(v) = tree.get("version").map(Node::to_json) else {
        problems.push(
            Problem::value(version_path, "missing required field `version`").hint(format!(
                "add `version: {CURRENT_VERSION}` as the first line"
            )),
        );
        if let Kind::Map(m) = &mut tree.kind {
            let pos = Pos::at(1, 1);
            let v = Node {
                pos,
                kind: Kind::Scalar(Value::from(CURRENT_VERSION), Style::Plain),
            };
            m.insert(0, ("version".into(), pos, v));
        }
        return Ok(vec![]);
    };
    match v.as_i64() {
        Some(n) if n == i64::from(CURRENT_VERSION) => Ok(vec![]),
        Some(n) if n > i64::from(CURRENT_VERSION) => Err(Problem::value(
            version_path,
            format!(
                "scenario version {n} is newer than this build of ladder reads \
                 (versions {OLDEST_VERSION} to {CURRENT_VERSION})"
            ),
        )
        .hint("upgrade ladder, or write the scenario for version 1")),
        Some(n) if n >= OLDEST_VERSION => match migrate(tree, n) {
            Ok(notes) => Ok(notes),
            Err(ps) => {
                problems.extend(ps);
                Ok(vec![])
            }
        },
        _ => Err(Problem::value(
            version_path,
            format!(
                "unknown scenario version {}; this build reads versions \
                 {OLDEST_VERSION} to {CURRENT_VERSION}",
                match &v {
                    Value::String(s) => format!("`{s}`"),
                    other => other.to_string(),
                }
            ),
        )
        .hint(format!("write `version: {CURRENT_VERSION}` (an integer)"))),
    }
}

/// What the file reads from the environment, found before its templates are rendered.
struct EnvFacts {
    /// `endpoint.headers` names whose values come from the environment.
    headers: Vec<String>,
    /// `endpoint.extra_body` keys whose values do.
    body: Vec<String>,
    /// Each value that reads the environment, and the variables it reads.
    uses: Vec<(Vec<Seg>, Vec<String>)>,
    /// The values from the environment that are secrets.
    secrets: Vec<super::template::EnvSecret>,
    /// Every variable read, in order of first use.
    vars: Vec<String>,
}

impl EnvFacts {
    fn of(tree: &Node, vars: &BTreeMap<String, String>) -> EnvFacts {
        let env_under = |section: &str| -> Vec<String> {
            let mut names: Vec<String> = template::env_paths(tree)
                .into_iter()
                .filter_map(|p| match p.as_slice() {
                    [Seg::Key(a), Seg::Key(b), Seg::Key(name), ..]
                        if a == "endpoint" && b == section =>
                    {
                        Some(name.clone())
                    }
                    _ => None,
                })
                .collect();
            names.dedup();
            names
        };
        let headers = env_under("headers");
        let body = env_under("extra_body");
        let uses = template::env_uses(tree);
        let secrets = template::env_secrets(&uses, vars);
        let mut env_vars: Vec<String> = vec![];
        for name in uses.iter().flat_map(|(_, names)| names) {
            if !env_vars.contains(name) {
                env_vars.push(name.clone());
            }
        }
        EnvFacts {
            headers,
            body,
            uses,
            secrets,
            vars: env_vars,
        }
    }
}

/// Renders the templates and runs the schema and semantic checks on the result, adding
/// their problems to `problems` (a value already rejected once is not reported again);
/// returns the rendered settings as JSON. `(path, vars)`: the file and the environment;
/// `env`: where the file reads it.
fn rendered_and_checked(
    tree: &mut Node,
    problems: &mut Vec<Problem>,
    (path, vars): (&Path, &BTreeMap<String, String>),
    env: &EnvFacts,
    tokenizer_check: Option<TokenizerCheck<'_>>,
    metric_keys: &[String],
) -> Value {
    let template_problems = template::render_env(tree, vars);
    let json = tree.to_json();
    let schema_problems = schema::check(&json);
    // A value already rejected (a template that did not render, a schema error) is not
    // reported again by the later checks.
    let schema_problems: Vec<Problem> = schema_problems
        .into_iter()
        .filter(|s| !template_problems.iter().any(|p| p.path == s.path))
        .collect();
    let semantic: Vec<Problem> = validate::check(&json, path, tokenizer_check, metric_keys)
        .into_iter()
        .filter(|s| {
            !template_problems
                .iter()
                .chain(&schema_problems)
                .any(|p| p.path == s.path)
        })
        .collect();
    problems.extend(template_problems);
    // A problem in a value a template rendered says where the value came from: a variable,
    // or the template's default because the variable is not set.
    problems.extend(schema_problems.into_iter().chain(semantic).map(|mut p| {
        if let Some((_, names)) = env.uses.iter().find(|(at, _)| p.path.starts_with(at)) {
            p.message = format!("{} ({})", p.message, template::origin(names, vars));
        }
        p
    }));
    json
}

/// The problems as diagnostics, in file order without repeats; a required key that an
/// extending file removed (`key: null`) is pointed at on that line.
fn diagnostics(
    problems: Vec<Problem>,
    removed: &[extends::Removed],
    files: &[PathBuf],
    tree: &Node,
) -> Vec<Diagnostic> {
    let mut diags: Vec<Diagnostic> = problems
        .into_iter()
        .map(|p| match removed_here(removed, &p) {
            Some(r) => Diagnostic {
                file: files[usize::from(r.pos.file)].clone(),
                line: r.pos.line,
                col: r.pos.col,
                key_path: r.path.join("."),
                message: p.message,
                hint: Some(format!(
                    "`{}: null` removes the base's value; set it here instead, or drop the line",
                    r.path.last().map_or("", String::as_str)
                )),
            },
            None => diagnostic(files, tree, p),
        })
        .collect();
    diags.sort_by_key(|d| (d.line, d.col));
    diags.dedup();
    diags
}

/// A serde key path as the tree's path, so a typed-read error points at the value.
fn typed_path(p: &serde_path_to_error::Path) -> Vec<Seg> {
    use serde_path_to_error::Segment;
    p.iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(Seg::Index(*index)),
            Segment::Map { key } => Some(Seg::Key(key.clone())),
            Segment::Enum { variant } => Some(Seg::Key(variant.clone())),
            Segment::Unknown => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
version: 1
name: t
endpoint:
  base_url: sim
model: m
tokenizer: tok.json
workload:
  input_tokens: 128
  output_tokens: 64
load:
  baseline_rate: 1
  rates: [2, 4]
  cooldown: 1s
";

    fn run(text: &str, vars: &[(&str, &str)]) -> (Option<Loaded>, Vec<Diagnostic>) {
        let vars = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let keys = vec!["error_rate".to_string(), "request_throughput".to_string()];
        analyse(Path::new("d/s.yaml"), text, &vars, None, &keys)
    }

    fn errors(text: &str) -> Vec<String> {
        run(text, &[]).1.iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn loads_a_good_scenario_and_resolves_paths() {
        let (l, d) = run(GOOD, &[]);
        assert!(d.is_empty(), "{d:?}");
        let l = l.unwrap();
        assert_eq!(l.scenario.rungs(), vec![1.0, 2.0, 4.0]);
        assert_eq!(
            l.scenario.load.cooldown.0,
            std::time::Duration::from_secs(1)
        );
        assert_eq!(l.tokenizer_path(), PathBuf::from("d/tok.json"));
        assert_eq!(l.scenario.tokenizer, PathBuf::from("tok.json"));
        assert_eq!(l.resolve(Path::new("/abs/x")), PathBuf::from("/abs/x"));
        assert!(l.notes.is_empty());
    }

    #[test]
    fn every_problem_at_once_with_locations() {
        let bad = GOOD
            .replace("  rates: [2, 4]", "  rates: [2, 2]\n  rate: 3")
            .replace("output_tokens: 64", "output_tokens: 0");
        let e = errors(&bad);
        assert_eq!(
            e,
            vec![
                "d/s.yaml:9:18: error: workload.output_tokens: must be at least 1, found number `0`",
                "d/s.yaml:12:14: error: load.rates[1]: rates must be strictly increasing, but 2 follows 2\n  hint: sort the rates and remove duplicates",
                "d/s.yaml:13:3: error: load.rate: unknown field `rate`\n  hint: did you mean `rates`?",
            ],
            "{e:#?}"
        );
    }

    #[test]
    fn version_missing_future_and_unknown() {
        let e = errors(&GOOD.replace("version: 1\n", ""));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("missing required field `version`"));
        let e = errors(&GOOD.replace("version: 1", "version: 7"));
        assert!(e[0].contains("version 7 is newer"), "{e:?}");
        let e = errors(&GOOD.replace("version: 1", "version: 'one'"));
        assert!(e[0].contains("unknown scenario version `one`"), "{e:?}");
    }

    #[test]
    fn version_0_is_migrated_with_notes() {
        let v0 = GOOD
            .replace("version: 1", "version: 0")
            .replace("  rates: [2, 4]", "  request_rates: [2, 4]")
            .replace(
                "  output_tokens: 64",
                "  output_tokens: 64\n  num_prompts: 30",
            );
        let (l, d) = run(&v0, &[]);
        assert!(d.is_empty(), "{d:?}");
        let l = l.unwrap();
        assert_eq!(l.scenario.version, 1);
        assert_eq!(l.scenario.load.rates, vec![2.0, 4.0]);
        assert_eq!(l.scenario.workload.requests_per_rung, 30);
        assert_eq!(l.notes.len(), 3, "{:?}", l.notes);
    }

    #[test]
    fn env_templates_render_and_undefined_ones_point_at_the_value() {
        let t = GOOD.replace("model: m", "model: \"{{ env.MODEL | default('m0') }}\"");
        assert_eq!(run(&t, &[]).0.unwrap().scenario.model, "m0");
        assert_eq!(run(&t, &[("MODEL", "m1")]).0.unwrap().scenario.model, "m1");
        let t = GOOD.replace("model: m", "model: \"{{ env.MODEL }}\"");
        let e = errors(&t);
        assert!(
            e[0].starts_with("d/s.yaml:5:8: error: model: $MODEL is not set"),
            "{e:?}"
        );
    }

    #[test]
    fn header_values_from_the_environment_are_marked() {
        let t = GOOD.replace(
            "  base_url: sim",
            "  base_url: sim\n  headers:\n    X-Api-Key: \"{{ env.MY_SECRET }}\"\n    X-Plain: v",
        );
        let l = run(&t, &[("MY_SECRET", "s3cr3t-value")]).0.unwrap();
        assert_eq!(l.scenario.endpoint.headers["X-Api-Key"], "s3cr3t-value");
        assert_eq!(l.env_headers, vec!["X-Api-Key".to_string()]);
    }

    #[test]
    fn malformed_yaml_and_wrong_shape() {
        let e = errors("version: 1\nload: [1, 2\n");
        assert!(e[0].contains("invalid YAML"), "{e:?}");
        let e = errors("- 1\n- 2\n");
        assert!(e[0].contains("a scenario is a YAML mapping"), "{e:?}");
    }

    #[test]
    fn typed_read_errors_point_at_the_value_and_u64_seeds_load() {
        let e = errors(&GOOD.replace("output_tokens: 64", "output_tokens: 5000000000"));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with(
                "d/s.yaml:9:18: error: workload.output_tokens: cannot read this value"
            ),
            "{e:?}"
        );
        let e = errors(&GOOD.replace("output_tokens: 64", "output_tokens: 64\n  seed: 1e30"));
        assert!(
            e[0].starts_with("d/s.yaml:10:9: error: workload.seed:"),
            "{e:?}"
        );
        for seed in [u64::MAX, (1 << 63) + 1] {
            let t = GOOD.replace(
                "output_tokens: 64",
                &format!("output_tokens: 64\n  seed: {seed}"),
            );
            let (l, d) = run(&t, &[]);
            assert!(d.is_empty(), "{d:?}");
            assert_eq!(l.unwrap().scenario.workload.seed, seed);
        }
    }

    #[test]
    fn byte_positions_count_lines_and_characters() {
        assert_eq!(byte_pos(b"ab\ncd", 4), Pos::at(2, 2));
        assert_eq!(byte_pos("é\nx".as_bytes(), 2), Pos::at(1, 2));
    }
}
