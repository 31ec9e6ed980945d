//! `extends: base.yaml`: a scenario written as changes to another one, so a team keeps one
//! base and many variants. The base is read (and its own `extends` followed) before anything
//! else is checked; the files are merged into one tree that the usual checks then see.
//!
//! Merge rules: mappings merge key by key (the extending file wins), lists and scalars are
//! replaced whole, and a key set to `null` in the extending file removes the base's value.
//! The chain, as written, replaces `extends` in the merged scenario (`extends: [base.yaml,
//! ../common.yaml]`), so run.json and the configuration diff show it. Every node keeps the
//! file it came from, so an error in a base file is reported at that file's line.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::diagnostic::Diagnostic;
use super::migrate::OLDEST_VERSION;
use super::types::CURRENT_VERSION;
use super::validate::resolve_against;
use super::yaml::{self, Kind, Node, Style};

/// Files in one chain at most (the scenario and its bases); a longer chain is refused.
pub const MAX_EXTENDS_CHAIN: usize = 8;

/// A scenario's text, or why it cannot be had (a [`Diagnostic`] about that file).
pub(crate) type ReadFn<'a> = &'a dyn Fn(&Path) -> Result<String, Diagnostic>;

/// A key an extending file set to `null` (which removes the base's value), and where: a
/// problem about that key being missing points here, not at the merged tree's root.
#[derive(Debug, Clone)]
pub(crate) struct Removed {
    /// The key's path from the root.
    pub path: Vec<String>,
    /// The key's position (its file included).
    pub pos: super::yaml::Pos,
}

/// Every `key: null` of `n` (a mapping of one file of the chain), at any depth.
fn nulls(n: &Node, at: &mut Vec<String>, out: &mut Vec<Removed>) {
    if let Kind::Map(m) = &n.kind {
        for (k, kpos, v) in m {
            at.push(k.clone());
            if matches!(v.kind, Kind::Scalar(Value::Null, _)) {
                out.push(Removed {
                    path: at.clone(),
                    pos: *kpos,
                });
            } else {
                nulls(v, at, out);
            }
            at.pop();
        }
    }
}

/// Follows `extends` from `top` (the tree of `path`) and merges the chain. Returns the merged
/// tree and the chain's files (`path` first; a node's `pos.file` indexes this list).
pub(crate) fn resolve(
    top: Node,
    path: &Path,
    read: ReadFn<'_>,
) -> Result<(Node, Vec<PathBuf>), Vec<Diagnostic>> {
    resolve_removing(top, path, read).map(|(n, f, _)| (n, f))
}

/// [`resolve`], also giving the keys the extending files removed with `null`.
pub(crate) fn resolve_removing(
    top: Node,
    path: &Path,
    read: ReadFn<'_>,
) -> Result<(Node, Vec<PathBuf>, Vec<Removed>), Vec<Diagnostic>> {
    let mut files = vec![path.to_path_buf()];
    let mut written: Vec<String> = Vec::new();
    // The chain is shown at the scenario's own `extends` key.
    let shown_at = top.key_pos("extends");
    let mut layers = vec![top];
    while let Some(ext) = layers.last().and_then(|l| l.get("extends")) {
        let k = layers.len() - 1;
        let here = |message: String, hint: Option<String>| {
            vec![Diagnostic {
                file: files[k].clone(),
                line: ext.pos.line,
                col: ext.pos.col,
                key_path: "extends".into(),
                message,
                hint,
            }]
        };
        let rel = match &ext.kind {
            Kind::Scalar(Value::String(s), _) if !s.trim().is_empty() => s.clone(),
            _ => return Err(here(
                "`extends` is the path of one base scenario file".into(),
                Some(
                    "e.g. `extends: base.yaml` (relative to this file); a base may extend another"
                        .into(),
                ),
            )),
        };
        if files.len() >= MAX_EXTENDS_CHAIN {
            return Err(here(
                format!("the extends chain is longer than {MAX_EXTENDS_CHAIN} files"),
                Some("flatten the chain: a base that extends a base is usually enough".into()),
            ));
        }
        let base = resolve_against(&files[k], Path::new(&rel));
        if let Some(i) = files.iter().position(|f| same_file(f, &base)) {
            let mut cycle: Vec<String> =
                files[i..].iter().map(|f| f.display().to_string()).collect();
            cycle.push(base.display().to_string());
            return Err(here(
                format!("`extends` makes a cycle: {}", cycle.join(" → ")),
                Some("a scenario cannot extend itself, directly or through its bases".into()),
            ));
        }
        let text = match read(&base) {
            Ok(t) => t,
            Err(d) if d.line == 0 => {
                return Err(here(
                    format!(
                        "cannot use the base scenario `{}`: {}",
                        base.display(),
                        d.message
                    ),
                    d.hint
                        .or_else(|| Some("the path is relative to the file that names it".into())),
                ))
            }
            Err(d) => return Err(vec![d]),
        };
        let mut tree = yaml::parse(&text).map_err(|ps| {
            ps.into_iter()
                .map(|p| Diagnostic {
                    file: base.clone(),
                    line: p.pos.line,
                    col: p.pos.col,
                    key_path: yaml::path_string(&p.path),
                    message: p.message,
                    hint: None,
                })
                .collect::<Vec<_>>()
        })?;
        if !matches!(tree.kind, Kind::Map(_)) {
            return Err(here(
                format!(
                    "the base scenario `{}` is not a mapping of settings",
                    base.display()
                ),
                None,
            ));
        }
        // A chain is one version: the merged tree takes the top file's `version`, so a base
        // written for another (or an unknown) one would be read silently under the wrong
        // rules.
        if let Some(bv) = tree.get("version") {
            let base_v = bv.to_json();
            let child_v = layers[k].get("version").map(Node::to_json);
            let known = base_v
                .as_i64()
                .is_some_and(|n| (OLDEST_VERSION..=i64::from(CURRENT_VERSION)).contains(&n));
            let show = |v: &Value| match v {
                Value::String(s) => format!("`{s}`"),
                other => other.to_string(),
            };
            let message = if !known {
                Some(format!(
                    "the base scenario `{}` has an unknown version {}; this build reads versions \
                     {OLDEST_VERSION} to {CURRENT_VERSION}",
                    base.display(),
                    show(&base_v)
                ))
            } else {
                match &child_v {
                    Some(c) if *c != base_v => Some(format!(
                        "the base scenario `{}` is version {}, but `{}`, which extends it, is \
                         version {}: every file of an extends chain has the same version",
                        base.display(),
                        show(&base_v),
                        files[k].display(),
                        show(c)
                    )),
                    _ => None,
                }
            };
            if let Some(message) = message {
                return Err(vec![Diagnostic {
                    file: base.clone(),
                    line: bv.pos.line,
                    col: bv.pos.col,
                    key_path: "version".into(),
                    message,
                    hint: Some(format!(
                        "write every file of the chain for version {CURRENT_VERSION} \
                         (`version: {CURRENT_VERSION}`)"
                    )),
                }]);
            }
        }
        // `files.len()` is at most MAX_EXTENDS_CHAIN, far below u16::MAX.
        mark(&mut tree, files.len() as u16);
        files.push(base);
        written.push(rel);
        layers.push(tree);
    }
    let mut removed = Vec::new();
    if layers.len() > 1 {
        for l in &layers[..layers.len() - 1] {
            nulls(l, &mut Vec::new(), &mut removed);
        }
    }
    let mut merged = layers.pop().expect("the scenario itself is a layer");
    while let Some(child) = layers.pop() {
        merged = overlay(merged, child);
    }
    if !written.is_empty() {
        if let (Kind::Map(m), Some(top_pos)) = (&mut merged.kind, shown_at) {
            let chain = Node {
                pos: top_pos,
                kind: Kind::Seq(
                    written
                        .into_iter()
                        .map(|w| Node {
                            pos: top_pos,
                            kind: Kind::Scalar(Value::String(w), Style::Quoted),
                        })
                        .collect(),
                ),
            };
            match m.iter_mut().find(|(k, _, _)| k == "extends") {
                Some(slot) => slot.2 = chain,
                None => m.push(("extends".into(), top_pos, chain)),
            }
        }
    }
    Ok((merged, files, removed))
}

/// The same file, even when named two ways (`./a.yaml`, `a.yaml`, a symlink).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Records `file` as the origin of every node (and key) of `n`.
fn mark(n: &mut Node, file: u16) {
    n.pos.file = file;
    match &mut n.kind {
        Kind::Scalar(..) => {}
        Kind::Seq(v) => v.iter_mut().for_each(|c| mark(c, file)),
        Kind::Map(m) => {
            for (_, kpos, c) in m.iter_mut() {
                kpos.file = file;
                mark(c, file);
            }
        }
    }
}

/// `child` laid over `base`: mappings merge, anything else is replaced, `null` removes.
fn overlay(base: Node, child: Node) -> Node {
    match (base.kind, child.kind) {
        (Kind::Map(mut b), Kind::Map(c)) => {
            for (k, kpos, v) in c {
                let removes = matches!(v.kind, Kind::Scalar(Value::Null, _));
                match b.iter().position(|(bk, _, _)| *bk == k) {
                    Some(i) if removes => {
                        b.remove(i);
                    }
                    Some(i) => {
                        let (_, _, old) = b.remove(i);
                        b.insert(i, (k, kpos, overlay(old, v)));
                    }
                    None if removes => {}
                    None => b.push((k, kpos, v)),
                }
            }
            Node {
                pos: child.pos,
                kind: Kind::Map(b),
            }
        }
        (_, kind) => Node {
            pos: child.pos,
            kind,
        },
    }
}

/// The `extends` setting: one base file as written in a scenario, the whole chain (the
/// scenario's base first) once loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct Extends(pub Vec<String>);

impl Extends {
    /// No base.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'de> serde::Deserialize<'de> for Extends {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum OneOrChain {
            One(String),
            Chain(Vec<String>),
        }
        Ok(match OneOrChain::deserialize(d)? {
            OneOrChain::One(s) => Extends(vec![s]),
            OneOrChain::Chain(v) => Extends(v),
        })
    }
}

impl schemars::JsonSchema for Extends {
    fn schema_name() -> String {
        "Extends".into()
    }
    fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        serde_json::from_value(serde_json::json!({
            "description": "A base scenario file this one changes (relative to this file). Once loaded, the chain of base files.",
            "oneOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string", "minLength": 1}}
            ]
        }))
        .expect("static schema is valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Node {
        yaml::parse(text).unwrap()
    }

    #[test]
    fn mappings_merge_lists_replace_and_null_removes() {
        let base = tree("a: 1\nm:\n  x: 1\n  y: [1, 2]\n  z: 3\nl: [1, 2, 3]\n");
        let child = tree("m:\n  y: [9]\n  z: null\n  w: 4\nl: [7]\nb: 2\n");
        let merged = overlay(base, child).to_json();
        assert_eq!(
            merged,
            serde_json::json!({"a": 1, "m": {"x": 1, "y": [9], "w": 4}, "l": [7], "b": 2})
        );
    }

    #[test]
    fn base_nodes_remember_their_file() {
        let mut base = tree("a:\n  b: 1\n");
        mark(&mut base, 2);
        let merged = overlay(base, tree("c: 1\n"));
        assert_eq!(merged.get("a").unwrap().get("b").unwrap().pos.file, 2);
        assert_eq!(merged.get("c").unwrap().pos.file, 0);
    }
}
