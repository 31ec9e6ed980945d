//! A YAML document as a tree that remembers where every key and value starts, so schema and
//! semantic errors can point at `line:col`. Built from yaml-rust2's marked events.

use std::collections::HashMap;

use serde_json::{Map, Value};
use yaml_rust2::parser::{MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::{Event, Yaml};

/// A 1-based position in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Pos {
    pub line: usize,
    pub col: usize,
    /// Which file of an `extends:` chain: 0 is the scenario itself, 1 its base, and so on.
    pub file: u16,
}

impl Pos {
    /// Line and column in the scenario file itself.
    pub fn at(line: usize, col: usize) -> Pos {
        Pos { line, col, file: 0 }
    }
}

impl From<Marker> for Pos {
    fn from(m: Marker) -> Self {
        // yaml-rust2 columns are 0-based in practice; report 1-based like compilers do.
        Pos::at(m.line(), m.col() + 1)
    }
}

/// One step of a key path: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A sequence index, 0-based.
    Index(usize),
}

/// Render a path as `load.rates[2]`.
pub(crate) fn path_string(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// How a scalar was written; block and quoted strings never resolve to numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    Quoted,
    Block,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Scalar(Value, Style),
    Seq(Vec<Node>),
    /// Entries in file order: key, position of the key, value.
    Map(Vec<(String, Pos, Node)>),
}

/// A YAML node and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub pos: Pos,
    pub kind: Kind,
}

/// A problem found while building the tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParseProblem {
    pub pos: Pos,
    pub path: Vec<Seg>,
    pub message: String,
}

impl Node {
    /// The child at `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map(m) => m.iter().find(|(k, _, _)| k == key).map(|(_, _, n)| n),
            _ => None,
        }
    }

    /// Mutable child at `key` of a mapping.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match &mut self.kind {
            Kind::Map(m) => m.iter_mut().find(|(k, _, _)| k == key).map(|(_, _, n)| n),
            _ => None,
        }
    }

    /// Position of the key `key` in this mapping.
    pub fn key_pos(&self, key: &str) -> Option<Pos> {
        match &self.kind {
            Kind::Map(m) => m.iter().find(|(k, _, _)| k == key).map(|(_, p, _)| *p),
            _ => None,
        }
    }

    /// Where the problem at `path` should be reported: the value at the path, or the deepest
    /// node that exists on the way (for a missing key, its parent mapping).
    pub fn locate(&self, path: &[Seg]) -> Pos {
        let mut node = self;
        for seg in path {
            let next = match (seg, &node.kind) {
                (Seg::Key(k), Kind::Map(_)) => node.get(k),
                (Seg::Index(i), Kind::Seq(v)) => v.get(*i),
                _ => None,
            };
            match next {
                Some(n) => node = n,
                None => return node.pos,
            }
        }
        node.pos
    }

    /// Position of the last key of `path` itself (for unknown or renamed keys).
    pub fn locate_key(&self, path: &[Seg]) -> Pos {
        if let Some((Seg::Key(k), parent)) = path.split_last() {
            let mut node = self;
            for seg in parent {
                let next = match (seg, &node.kind) {
                    (Seg::Key(k), Kind::Map(_)) => node.get(k),
                    (Seg::Index(i), Kind::Seq(v)) => v.get(*i),
                    _ => None,
                };
                match next {
                    Some(n) => node = n,
                    None => return node.pos,
                }
            }
            return node.key_pos(k).unwrap_or(node.pos);
        }
        self.locate(path)
    }

    /// The node at `path`, if there is one.
    pub fn at(&self, path: &[Seg]) -> Option<&Node> {
        let mut node = self;
        for seg in path {
            node = match (seg, &node.kind) {
                (Seg::Key(k), Kind::Map(_)) => node.get(k)?,
                (Seg::Index(i), Kind::Seq(v)) => v.get(*i)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// The same data as JSON.
    pub fn to_json(&self) -> Value {
        match &self.kind {
            Kind::Scalar(v, _) => v.clone(),
            Kind::Seq(v) => Value::Array(v.iter().map(Node::to_json).collect()),
            Kind::Map(m) => {
                let mut o = Map::new();
                for (k, _, n) in m {
                    o.insert(k.clone(), n.to_json());
                }
                Value::Object(o)
            }
        }
    }
}

/// Resolve a plain (unquoted) scalar the way YAML 1.2's core schema does.
pub(crate) fn resolve_plain(s: &str) -> Value {
    // yaml-rust2 reads integers as i64; one above i64::MAX (a u64 seed) would become a float.
    let digits = s.strip_prefix('+').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(u) = digits.parse::<u64>() {
            return Value::from(u);
        }
    }
    match Yaml::from_str(s) {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(r) => match r.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            Some(n) => Value::Number(n),
            // .inf / .nan have no JSON form; keep the text so the schema reports it.
            None => Value::String(s.to_string()),
        },
        _ => Value::String(s.to_string()),
    }
}

enum Frame {
    Seq(Pos, usize, Vec<Node>),
    Map(Pos, usize, Vec<(String, Pos, Node)>, Option<(String, Pos)>),
}

/// Guards against hostile input: deeply nested collections (recursion later) and alias
/// expansion ("billion laughs"), far beyond anything a scenario needs.
const MAX_DEPTH: usize = 64;
const MAX_NODES: usize = 100_000;

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    /// Anchored nodes and their sizes in nodes.
    anchors: HashMap<usize, (Node, usize)>,
    docs: Vec<Node>,
    problems: Vec<ParseProblem>,
    /// Nodes built so far, alias expansions included.
    nodes: usize,
    /// Set once a guard tripped; later events are ignored.
    stopped: bool,
}

fn size(n: &Node) -> usize {
    match &n.kind {
        Kind::Scalar(..) => 1,
        Kind::Seq(v) => 1 + v.iter().map(size).sum::<usize>(),
        Kind::Map(m) => 1 + m.iter().map(|(_, _, n)| size(n)).sum::<usize>(),
    }
}

impl Builder {
    fn current_path(&self) -> Vec<Seg> {
        let mut path = Vec::new();
        for f in &self.stack {
            match f {
                Frame::Seq(_, _, items) => path.push(Seg::Index(items.len())),
                Frame::Map(_, _, _, Some((k, _))) => path.push(Seg::Key(k.clone())),
                Frame::Map(..) => {}
            }
        }
        path
    }

    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            let s = size(&node);
            self.anchors.insert(anchor, (node.clone(), s));
        }
        let path = self.current_path();
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some(Frame::Seq(_, _, items)) => items.push(node),
            Some(Frame::Map(_, _, entries, pending)) => match pending.take() {
                Some((k, kpos)) => entries.push((k, kpos, node)),
                None => {
                    let key = match &node.kind {
                        Kind::Scalar(Value::String(s), _) => Some(s.clone()),
                        Kind::Scalar(Value::Null, _) => None,
                        Kind::Scalar(v, _) => Some(v.to_string()),
                        _ => None,
                    };
                    match key {
                        Some(k) => {
                            if entries.iter().any(|(e, _, _)| *e == k) {
                                let mut p = path;
                                p.push(Seg::Key(k.clone()));
                                self.problems.push(ParseProblem {
                                    pos: node.pos,
                                    path: p,
                                    message: format!("duplicate key `{k}`"),
                                });
                            }
                            *pending = Some((k, node.pos));
                        }
                        None => {
                            self.problems.push(ParseProblem {
                                pos: node.pos,
                                path,
                                message: "mapping keys must be plain names".into(),
                            });
                            *pending = Some((String::new(), node.pos));
                        }
                    }
                }
            },
        }
    }
}

impl Builder {
    fn stop(&mut self, pos: Pos, message: String) {
        let path = self.current_path();
        self.problems.push(ParseProblem { pos, path, message });
        self.stopped = true;
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let pos = Pos::from(mark);
        if self.stopped {
            return;
        }
        if matches!(ev, Event::SequenceStart(..) | Event::MappingStart(..))
            && self.stack.len() >= MAX_DEPTH
        {
            self.stop(pos, format!("nested more than {MAX_DEPTH} levels deep"));
            return;
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            self.stop(
                pos,
                format!("more than {MAX_NODES} values; a scenario is far smaller"),
            );
            return;
        }
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let is_str_tag = tag.as_ref().is_some_and(|t| t.suffix == "str");
                let (value, st) = match style {
                    TScalarStyle::Plain if !is_str_tag => (resolve_plain(&text), Style::Plain),
                    TScalarStyle::Plain => (Value::String(text), Style::Plain),
                    TScalarStyle::SingleQuoted | TScalarStyle::DoubleQuoted => {
                        (Value::String(text), Style::Quoted)
                    }
                    TScalarStyle::Literal | TScalarStyle::Folded => {
                        (Value::String(text), Style::Block)
                    }
                };
                self.push_node(
                    Node {
                        pos,
                        kind: Kind::Scalar(value, st),
                    },
                    anchor,
                );
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq(pos, anchor, vec![])),
            Event::MappingStart(anchor, _) => {
                self.stack.push(Frame::Map(pos, anchor, vec![], None))
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Frame::Seq(p, a, items)) => (
                        Node {
                            pos: p,
                            kind: Kind::Seq(items),
                        },
                        a,
                    ),
                    Some(Frame::Map(p, a, entries, _)) => (
                        Node {
                            pos: p,
                            kind: Kind::Map(entries),
                        },
                        a,
                    ),
                    None => return,
                };
                self.push_node(node, anchor);
            }
            Event::Alias(id) => {
                let (node, s) = self.anchors.get(&id).cloned().unwrap_or((
                    Node {
                        pos,
                        kind: Kind::Scalar(Value::Null, Style::Plain),
                    },
                    1,
                ));
                self.nodes += s;
                if self.nodes > MAX_NODES {
                    self.stop(pos, "aliases expand to too many values".into());
                    return;
                }
                self.push_node(node, 0);
            }
            _ => {}
        }
    }
}

/// Parse YAML text into one positioned tree.
///
/// Errors: a syntax error (position and message), or structural problems such as duplicate
/// keys and more than one document (all of them).
pub(crate) fn parse(text: &str) -> Result<Node, Vec<ParseProblem>> {
    let mut b = Builder::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut b, true) {
        return Err(vec![ParseProblem {
            pos: Pos::from(*e.marker()),
            path: vec![],
            message: format!("invalid YAML: {}", e.info()),
        }]);
    }
    if b.stopped {
        return Err(b.problems);
    }
    if b.docs.len() > 1 {
        b.problems.push(ParseProblem {
            pos: b.docs[1].pos,
            path: vec![],
            message: "more than one YAML document; a scenario file holds exactly one".into(),
        });
    }
    if !b.problems.is_empty() {
        return Err(b.problems);
    }
    Ok(b.docs.into_iter().next().unwrap_or(Node {
        pos: Pos::at(1, 1),
        kind: Kind::Scalar(Value::Null, Style::Plain),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_positions_of_keys_and_values() {
        let t = "version: 1\nload:\n  rates: [1, 2.5]\n  cooldown: '10s'\n";
        let n = parse(t).unwrap();
        let rates = vec![Seg::Key("load".into()), Seg::Key("rates".into())];
        assert_eq!(n.locate_key(&rates), Pos::at(3, 3));
        let mut second = rates.clone();
        second.push(Seg::Index(1));
        assert_eq!(n.locate(&second), Pos::at(3, 14));
        assert_eq!(
            n.to_json(),
            json!({"version": 1, "load": {"rates": [1, 2.5], "cooldown": "10s"}})
        );
        assert_eq!(path_string(&second), "load.rates[1]");
    }

    #[test]
    fn resolves_scalars_like_yaml_1_2() {
        assert_eq!(resolve_plain("12"), json!(12));
        assert_eq!(resolve_plain("0.5"), json!(0.5));
        assert_eq!(resolve_plain("true"), json!(true));
        assert_eq!(resolve_plain("~"), Value::Null);
        assert_eq!(resolve_plain("yes"), json!("yes"));
        assert_eq!(resolve_plain(".inf"), json!(".inf"));
        let n = parse("a: '12'\nb: !!str 13\n").unwrap();
        assert_eq!(n.to_json(), json!({"a": "12", "b": "13"}));
    }

    #[test]
    fn reports_syntax_errors_with_position() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e[0].message.starts_with("invalid YAML"), "{e:?}");
        assert!(e[0].pos.line >= 1);
    }

    #[test]
    fn refuses_duplicate_keys_and_many_documents() {
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e[0].message, "duplicate key `a`");
        assert_eq!(e[0].pos, Pos::at(2, 1));
        let e = parse("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(e[0].message.contains("more than one"));
    }

    #[test]
    fn refuses_alias_bombs_and_deep_nesting() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..8 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("b{}", i - 1)
            };
            bomb.push_str(&format!(
                "b{i}: &b{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        let e = parse(&bomb).unwrap_err();
        assert!(e[0].message.contains("too many"), "{e:?}");
        let deep = format!("a: {}{}", "[".repeat(100), "]".repeat(100));
        let e = parse(&deep).unwrap_err();
        assert!(e[0].message.contains("nested"), "{e:?}");
    }

    #[test]
    fn aliases_copy_the_anchored_value() {
        let n = parse("x: &r [1, 2]\ny: *r\n").unwrap();
        assert_eq!(n.to_json(), json!({"x": [1, 2], "y": [1, 2]}));
    }
}
