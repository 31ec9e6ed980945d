//! The one-way rule of docs/architecture.md, checked on the source text: a top-level module of
//! `src/` imports only modules on lower floors, with no exceptions (the last two back-arrows,
//! `scenario -> metrics` and `scenario -> sim`, ended in issue #36 and the list of tolerated
//! ones went with them): a back-arrow fails here.
//!
//! Read as text, with no parser: comments and string literals are blanked, then every
//! `crate::NAME` (also `$crate::`, and `crate::{A, B}` groups) and every `super::` chain that
//! climbs to the crate root names the module it reaches. `mod NAME;` declarations (with their
//! `#[path]`) give each file its place in the module tree, so a `super::` chain is resolved as
//! the compiler resolves it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, bottom up (docs/architecture.md, "Floors"). A module may import a module on a
/// lower floor, never one on its own floor or above. The binary (`src/main.rs`, `src/cli*.rs`)
/// stands on top of all of them and is not scanned.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "ground",
        &[
            "escape", "exit", "fileread", "format", "rlimit", "stats", "values",
        ],
    ),
    // stdout and stderr, which escape every line for the terminal.
    // stdout and stderr (`stdio`), and the lines the library hands the binary to print there
    // (`notes`).
    ("streams", &["notes", "stdio"]),
    // The SLO search's decisions from probe outcomes: no I/O, importing only the ground floor, read by
    // the scenario (its `load.search` types) and driven by the runner.
    ("search", &["capacity"]),
    ("vocabulary", &["record", "scenario"]),
    ("edges", &["client", "sim"]),
    // Counting tokens: a local tokenizer, where it comes from, the server's through the client.
    ("tokens", &["tokens"]),
    // Prompts and arrivals, counted by `tokens`.
    ("workload", &["workload"]),
    ("server metrics", &["servermetrics"]),
    ("metrics", &["metrics"]),
    ("results", &["results"]),
    ("result folders, written and read", &["compare", "runner"]),
    ("beyond one run", &["deploy", "history"]),
    ("report", &["report"]),
    ("commands", &["commands"]),
];

/// One reference from a file to a top-level module other than its own.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Arrow {
    file: String,
    line: usize,
    from: String,
    to: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `text` with comments, string, byte-string, raw-string and char literals blanked: every
/// byte of them but newlines becomes a space, so offsets and line numbers stay those of the
/// file.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let prev_ident = i > 0 && is_ident(b[i - 1]);
        let raw = if prev_ident {
            None
        } else {
            raw_string_start(&b[i..])
        };
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some((open, hashes)) = raw {
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + open;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' || (!prev_ident && b[i..].starts_with(b"b\"")) {
            let mut j = i + if b[i] == b'"' { 1 } else { 2 };
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('a', '\n', '\u{1F600}', 'é'), not a lifetime ('a in <'a>).
            match char_literal_len(&b[i..]) {
                Some(n) => {
                    blank(&mut out, i, i + n);
                    i += n;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: only whole literals are replaced")
}

/// `r"`, `r#"`, `br##"`…: the length of the opening and the number of `#`.
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let mut j = match b {
        [b'r', ..] => 1,
        [b'b', b'r', ..] => 2,
        _ => return None,
    };
    let mut hashes = 0;
    while j < b.len() && b[j] == b'#' {
        hashes += 1;
        j += 1;
    }
    (j < b.len() && b[j] == b'"').then_some((j + 1, hashes))
}

fn char_literal_len(b: &[u8]) -> Option<usize> {
    if b.len() >= 4 && b[1] == b'\\' {
        // The escaped character itself may be a quote: `'\''`.
        let end = b[3..].iter().take(10).position(|&c| c == b'\'')?;
        return Some(end + 4);
    }
    let s = std::str::from_utf8(&b[1..b.len().min(6)])
        .unwrap_or_else(|e| std::str::from_utf8(&b[1..1 + e.valid_up_to()]).expect("valid prefix"));
    let c = s.chars().next()?;
    let n = 1 + c.len_utf8();
    (b.get(n) == Some(&b'\'')).then_some(n + 1)
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier starting at `i` (empty when there is none).
fn ident_at(code: &[u8], i: usize) -> &str {
    let n = code[i..].iter().take_while(|&&c| is_ident(c)).count();
    std::str::from_utf8(&code[i..i + n]).expect("ASCII identifier")
}

fn skip_ws(code: &[u8], mut i: usize) -> usize {
    while i < code.len() && code[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The first segments a path continues with at `i`: one identifier, or for a `{A, B::c}`
/// group the first identifier of each item.
fn first_segments(code: &[u8], i: usize) -> Vec<String> {
    let i = skip_ws(code, i);
    if code.get(i) != Some(&b'{') {
        let id = ident_at(code, i);
        return if id.is_empty() {
            vec![]
        } else {
            vec![id.to_string()]
        };
    }
    let (mut out, mut depth, mut j, mut item_start) = (vec![], 0usize, i, true);
    while j < code.len() {
        match code[j] {
            b'{' => {
                depth += 1;
                item_start = depth == 1;
            }
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b',' if depth == 1 => item_start = true,
            c if is_ident(c) && item_start && depth == 1 => {
                let id = ident_at(code, j);
                out.push(id.to_string());
                item_start = false;
                j += id.len();
                continue;
            }
            _ => {}
        }
        j += 1;
    }
    out
}

/// A source file and its module path (`["runner", "rung"]`; the crate root is `[]`).
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
    /// Declared under `#[cfg(test)]` (itself or a module above it): test code.
    test: bool,
}

/// Every file of the library's module tree, from `src/lib.rs` along `mod NAME;`.
fn module_tree() -> Vec<SourceFile> {
    let mut out = Vec::new();
    walk(&src().join("lib.rs"), vec![], true, false, &mut out);
    out
}

fn walk(path: &Path, module: Vec<String>, owns_dir: bool, test: bool, out: &mut Vec<SourceFile>) {
    let raw = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let code = strip(&raw);
    let bytes = code.as_bytes();
    let dir = path.parent().expect("a file has a folder");
    for (at, name) in declarations(bytes)
        .into_iter()
        .filter(|d| d.2)
        .map(|d| (d.0, d.1))
    {
        // A `#[path = "…"]` stands between the previous item's end and the `mod`.
        let start = code[..at].rfind([';', '}', '{']).map_or(0, |p| p + 1);
        let attr = raw[start..at].split("#[path = \"").nth(1);
        let child = match attr {
            Some(rest) => dir.join(&rest[..rest.find('"').expect("closed path")]),
            None => {
                let base = if owns_dir {
                    dir.to_path_buf()
                } else {
                    dir.join(path.file_stem().expect("a .rs file"))
                };
                let flat = base.join(format!("{name}.rs"));
                if flat.exists() {
                    flat
                } else {
                    base.join(&name).join("mod.rs")
                }
            }
        };
        let mut m = module.clone();
        m.push(name);
        let owns = child.file_name().is_some_and(|f| f == "mod.rs");
        let test = test || raw[start..at].contains("cfg(test)");
        walk(&child, m, owns, test, out);
    }
    out.push(SourceFile {
        path: path.to_path_buf(),
        module,
        test,
    });
}

/// `mod NAME;` and `mod NAME {` items: (offset of `mod`, NAME, declared in another file).
fn declarations(code: &[u8]) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = find(code, b"mod", i) {
        i = p + 3;
        if (p > 0 && is_ident(code[p - 1]))
            || code.get(p + 3).is_none_or(|c| !c.is_ascii_whitespace())
        {
            continue;
        }
        let n = skip_ws(code, p + 3);
        let name = ident_at(code, n);
        if name.is_empty() {
            continue;
        }
        match code.get(skip_ws(code, n + name.len())) {
            Some(&b';') => out.push((p, name.to_string(), true)),
            Some(&b'{') => out.push((p, name.to_string(), false)),
            _ => {}
        }
    }
    out
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// For each offset of `code`, how many inline `mod NAME { … }` blocks enclose it, as
/// (offset where the depth changes, new depth).
fn inline_depths(code: &[u8]) -> Vec<(usize, usize)> {
    let opens: BTreeSet<usize> = declarations(code)
        .into_iter()
        .filter(|d| !d.2)
        .map(|d| find(code, b"{", d.0).expect("an inline module has a body"))
        .collect();
    let (mut stack, mut depth, mut out) = (Vec::new(), 0, vec![(0, 0)]);
    for (i, &c) in code.iter().enumerate() {
        if c == b'{' {
            let module = opens.contains(&i);
            stack.push(module);
            if module {
                depth += 1;
                out.push((i, depth));
            }
        } else if c == b'}' && stack.pop() == Some(true) {
            depth -= 1;
            out.push((i, depth));
        }
    }
    out
}

/// Every reference of `file` to a top-level module other than its own.
fn arrows_of(file: &SourceFile, top: &BTreeSet<String>) -> Vec<Arrow> {
    let raw = std::fs::read_to_string(&file.path).expect("read above");
    let code = strip(&raw);
    let b = code.as_bytes();
    let depths = inline_depths(b);
    let depth_at = |at: usize| {
        depths
            .iter()
            .take_while(|(o, _)| *o <= at)
            .last()
            .map_or(0, |d| d.1)
    };
    let rel = file
        .path
        .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("under the crate")
        .to_string_lossy()
        .replace('\\', "/");
    let from = &file.module[0];
    let mut out = Vec::new();
    let mut push = |at: usize, names: Vec<String>| {
        for to in names {
            if top.contains(&to) && to != *from {
                out.push(Arrow {
                    file: rel.clone(),
                    line: code[..at].matches('\n').count() + 1,
                    from: from.clone(),
                    to,
                });
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let word_start = i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':');
        if word_start && b[i..].starts_with(b"crate::") {
            push(i, first_segments(b, i + 7));
            i += 7;
        } else if word_start && b[i..].starts_with(b"super::") {
            let mut j = i;
            let mut k = 0;
            while b[j..].starts_with(b"super::") {
                k += 1;
                j = skip_ws(b, j + 7);
            }
            // `super` k times from this module (and the inline modules around `i`) reaches
            // the crate root exactly when k equals that depth.
            if k == file.module.len() + depth_at(i) {
                push(i, first_segments(b, j));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The top-level modules: files declared in `src/lib.rs` and its inline modules.
fn top_level(files: &[SourceFile]) -> BTreeSet<String> {
    let mut top: BTreeSet<String> = files
        .iter()
        .filter(|f| f.module.len() == 1)
        .map(|f| f.module[0].clone())
        .collect();
    let lib = strip(&std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs"));
    top.extend(declarations(lib.as_bytes()).into_iter().map(|d| d.1));
    top
}

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|(_, ms)| ms.contains(&module))
}

/// Every arrow from a module to one on its own floor or above.
fn back_arrows() -> Vec<Arrow> {
    let files = module_tree();
    let top = top_level(&files);
    let mut out = Vec::new();
    for f in files.iter().filter(|f| !f.module.is_empty()) {
        for a in arrows_of(f, &top) {
            let (Some(from), Some(to)) = (floor_of(&a.from), floor_of(&a.to)) else {
                continue; // every_module_has_one_floor names it
            };
            if to >= from {
                out.push(a);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_module_has_one_floor() {
    let files = module_tree();
    let top = top_level(&files);
    let mut placed = BTreeMap::new();
    for (floor, modules) in FLOORS {
        for m in *modules {
            assert!(
                placed.insert(m.to_string(), *floor).is_none(),
                "{m} is on two floors"
            );
        }
    }
    let unplaced: Vec<_> = top.iter().filter(|m| !placed.contains_key(*m)).collect();
    assert!(
        unplaced.is_empty(),
        "modules with no floor: {unplaced:?}; give each one in docs/architecture.md and FLOORS"
    );
    let gone: Vec<_> = placed.keys().filter(|m| !top.contains(*m)).collect();
    assert!(
        gone.is_empty(),
        "FLOORS names modules src/lib.rs does not declare: {gone:?}"
    );
}

#[test]
fn no_module_imports_a_module_on_its_floor_or_above() {
    let new: Vec<String> = back_arrows()
        .into_iter()
        .map(|a| {
            format!(
                "{}:{}: {} ({}) imports {} ({})",
                a.file,
                a.line,
                a.from,
                FLOORS[floor_of(&a.from).unwrap()].0,
                a.to,
                FLOORS[floor_of(&a.to).unwrap()].0
            )
        })
        .collect();
    assert!(
        new.is_empty(),
        "arrows against the one-way rule of docs/architecture.md:\n  {}\nMove what both need \
         down to a floor below both (or the caller up).",
        new.join("\n  ")
    );
}

#[test]
fn the_scan_sees_imports_through_comments_strings_groups_and_super_chains() {
    let code = strip(concat!(
        "// crate::report in a comment\n",
        "/* crate::report /* nested */ */ let s = \"crate::report\"; let r = r#\"crate::report\"#;\n",
        "let c = '\"'; fn f<'a>(x: &'a str) {}\n",
        "use crate::{metrics::{a, b}, results};\n",
        "mod tests { use super::super::runner::X; }\n",
    ));
    let b = code.as_bytes();
    assert!(
        !code.contains("report"),
        "comments and strings are blanked: {code}"
    );
    assert!(
        code.contains("fn f<'a>(x: &'a str)"),
        "lifetimes stay: {code}"
    );
    let group = find(b, b"crate::", 0).unwrap();
    assert_eq!(first_segments(b, group + 7), ["metrics", "results"]);
    let inline = find(b, b"super::", 0).unwrap();
    assert_eq!(
        inline_depths(b)
            .iter()
            .take_while(|d| d.0 <= inline)
            .last()
            .unwrap()
            .1,
        1
    );
    // The real tree: the runner reaches the client; a legal arrow is seen.
    let files = module_tree();
    let top = top_level(&files);
    let runner_to_client = files
        .iter()
        .filter(|f| f.module.first().is_some_and(|m| m == "runner"))
        .flat_map(|f| arrows_of(f, &top))
        .any(|a| a.to == "client");
    assert!(runner_to_client);
    // A `#[path]` file takes the name of its `mod` item: `super::super` there is `compare`.
    assert!(files
        .iter()
        .any(|f| f.path.ends_with("compare/mixed_tests.rs")
            && f.module == ["compare", "mixed", "tests"]));
}

// ---- the library never prints or exits (docs/architecture.md, "Who prints") ----

/// What only the binary may do: print to the terminal or end the process.
const PRINTS: &[&str] = &[
    "println!",
    "print!",
    "eprintln!",
    "eprint!",
    "dbg!",
    "process::exit",
    "io::stdout(",
    "io::stderr(",
];

/// `code` (already [`strip`]ped) with the bodies of inline `#[cfg(test)] mod NAME { … }`
/// blocks blanked: tests may print what they measured.
fn without_test_modules(raw: &str, code: &str) -> String {
    let b = code.as_bytes();
    let mut out = b.to_vec();
    for (at, _, _) in declarations(b).into_iter().filter(|d| !d.2) {
        let start = code[..at].rfind([';', '}', '{']).map_or(0, |p| p + 1);
        if !raw[start..at].contains("cfg(test)") {
            continue;
        }
        let open = find(b, b"{", at).expect("an inline module has a body");
        let mut depth = 0;
        for (i, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            if c != b'\n' {
                out[i] = b' ';
            }
            if depth == 0 {
                break;
            }
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 (only ASCII bytes replaced)")
}

/// Every (line, what) in `raw` that prints or exits, outside comments, strings and tests.
fn prints_in(raw: &str) -> Vec<(usize, &'static str)> {
    let code = without_test_modules(raw, &strip(raw));
    let b = code.as_bytes();
    let mut hits = Vec::new();
    for what in PRINTS {
        let mut i = 0;
        while let Some(p) = find(b, what.as_bytes(), i) {
            i = p + what.len();
            if p > 0 && is_ident(b[p - 1]) {
                continue;
            }
            hits.push((code[..p].matches('\n').count() + 1, *what));
        }
    }
    hits.sort();
    hits
}

#[test]
fn the_print_check_sees_prints_and_exits_but_not_tests_comments_or_strings() {
    let raw = "fn f() {\n    eprintln!(\"x\");\n    let s = \"println!\"; // print!(\n    std::process::exit(2);\n}\n\
               fn g() { dprint!(); }\n\
               #[cfg(test)]\nmod tests {\n    fn t() { println!(\"{}\", 1); }\n}\n\
               fn h() { print!(\"y\"); }\n";
    assert_eq!(
        prints_in(raw),
        vec![(2, "eprintln!"), (4, "process::exit"), (11, "print!")]
    );
}

/// Library code speaks through `notes::Notes` and returns typed errors: only the binary
/// (`src/main.rs`, `src/cli*.rs`, outside this module tree) prints or picks an exit, and
/// `stdio`, which is how it prints, is the one module below it that writes to the terminal.
#[test]
fn the_library_never_prints_or_exits() {
    let found: Vec<String> = module_tree()
        .iter()
        .filter(|f| !f.test && f.module.first().is_none_or(|m| m != "stdio"))
        .flat_map(|f| {
            let raw = std::fs::read_to_string(&f.path).expect("read above");
            let rel = f
                .path
                .strip_prefix(src())
                .unwrap_or(&f.path)
                .display()
                .to_string();
            prints_in(&raw)
                .into_iter()
                .map(move |(line, what)| format!("src/{rel}:{line}: {what}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "library code prints or exits:\n  {}\nhand the line to the `notes::Notes` the \
         command was given (or return it), and let the binary print it and pick the exit code",
        found.join("\n  ")
    );
}

// ---- no import circles between files (docs/architecture.md, "Inside a module") ----

/// The module paths a path at `i` names, `prefix` first: `a::b::C` gives `[prefix+a, b, C]`,
/// a group `{a::X, b}` one path per item (nested groups too); `self` in a group names the
/// group's own path, and `as NAME` ends a path.
fn paths_at(code: &[u8], i: usize, prefix: &[String]) -> Vec<Vec<String>> {
    let mut path = prefix.to_vec();
    let mut i = skip_ws(code, i);
    loop {
        if code.get(i) == Some(&b'{') {
            let mut out = Vec::new();
            let (mut j, mut depth, mut item) = (i + 1, 1usize, i + 1);
            while j < code.len() && depth > 0 {
                match code[j] {
                    b'{' => depth += 1,
                    b'}' => depth -= 1,
                    _ => {}
                }
                if (code[j] == b',' && depth == 1) || depth == 0 {
                    if !code[item..j].iter().all(u8::is_ascii_whitespace) {
                        out.extend(paths_at(code, item, &path));
                    }
                    item = j + 1;
                }
                j += 1;
            }
            return out;
        }
        let id = ident_at(code, i);
        if id.is_empty() {
            break;
        }
        if id != "self" {
            path.push(id.to_string());
        }
        let next = skip_ws(code, i + id.len());
        if !code[next..].starts_with(b"::") {
            break;
        }
        i = skip_ws(code, next + 2);
    }
    vec![path]
}

/// A folder's `mod.rs` (and `lib.rs`) mostly re-exports its files: an arrow through it would
/// join every file of the folder into one circle, so circles are counted between the files
/// that hold the code (as `scripts/house_metrics.py` counts them).
fn is_folder_root(f: &SourceFile) -> bool {
    f.path
        .file_name()
        .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
}

/// Every file's imports of other files: (importer, line) -> imported, by index into `files`.
/// A path names the file of its longest module prefix (`crate::metrics::summary::Stats` is
/// `metrics/summary.rs`); `crate::`, `super::` chains (from the file's module and the inline
/// modules around them), `self::` and the file's own child modules (`scan::X` in
/// `chunk.rs`) are followed. Folder roots are left out on both ends.
fn file_imports(files: &[SourceFile]) -> BTreeMap<(usize, usize), usize> {
    let index: BTreeMap<&[String], usize> = files
        .iter()
        .enumerate()
        .map(|(k, f)| (f.module.as_slice(), k))
        .collect();
    let file_of = |path: &[String]| {
        (0..=path.len())
            .rev()
            .find_map(|n| index.get(&path[..n]).copied())
    };
    let mut out = BTreeMap::new();
    for (k, file) in files.iter().enumerate() {
        if is_folder_root(file) {
            continue;
        }
        let raw = std::fs::read_to_string(&file.path).expect("read above");
        let code = strip(&raw);
        let b = code.as_bytes();
        let depths = inline_depths(b);
        let depth_at = |at: usize| {
            depths
                .iter()
                .take_while(|(o, _)| *o <= at)
                .last()
                .map_or(0, |d| d.1)
        };
        let children: Vec<&String> = files
            .iter()
            .filter(|f| {
                f.module.len() == file.module.len() + 1 && f.module.starts_with(&file.module)
            })
            .map(|f| f.module.last().expect("a child has a name"))
            .collect();
        let mut i = 0;
        while i < b.len() {
            let word_start = i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':');
            let word = ident_at(b, i);
            if !word_start || word.is_empty() {
                i += 1;
                continue;
            }
            let after = skip_ws(b, i + word.len());
            let (base, from): (Option<Vec<String>>, usize) = if !b[after..].starts_with(b"::") {
                (None, 0)
            } else if word == "crate" {
                (Some(vec![]), after + 2)
            } else if word == "self" {
                (Some(file.module.clone()), after + 2)
            } else if word == "super" {
                // `super` k times from the file's module, less the inline modules around `i`.
                let (mut j, mut k) = (i, 0usize);
                while b[j..].starts_with(b"super") && b[skip_ws(b, j + 5)..].starts_with(b"::") {
                    k += 1;
                    j = skip_ws(b, skip_ws(b, j + 5) + 2);
                }
                let up = k.saturating_sub(depth_at(i));
                let keep = file.module.len().saturating_sub(up);
                (Some(file.module[..keep].to_vec()), j)
            } else if children.iter().any(|c| *c == word) {
                (Some(file.module.clone()), i)
            } else {
                (None, 0)
            };
            match base {
                Some(base) => {
                    let line = code[..i].matches('\n').count() + 1;
                    for path in paths_at(b, from, &base) {
                        if let Some(t) = file_of(&path) {
                            if t != k && !is_folder_root(&files[t]) {
                                out.insert((k, line), t);
                            }
                        }
                    }
                    i = from.max(i + word.len());
                }
                None => i += word.len(),
            }
        }
    }
    out
}

/// The import circles between files: each a set of two or more files that reach each other,
/// with the imports inside it as `file:line -> file`. A file and the modules it declares
/// itself (`chunk.rs` and `chunk/scan.rs`) are one module and may know each other.
fn circles(files: &[SourceFile]) -> Vec<Vec<String>> {
    let imports = file_imports(files);
    let mut next: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (&(from, _), &to) in &imports {
        next.entry(from).or_default().insert(to);
    }
    let reach = |start: usize| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![start]);
        while let Some(v) = todo.pop() {
            for &w in next.get(&v).into_iter().flatten() {
                if seen.insert(w) {
                    todo.push(w);
                }
            }
        }
        seen
    };
    let reaches: Vec<BTreeSet<usize>> = (0..files.len()).map(reach).collect();
    let rel = |k: usize| {
        files[k]
            .path
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
            .expect("under the crate")
            .to_string_lossy()
            .replace('\\', "/")
    };
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for v in 0..files.len() {
        if done.contains(&v) || !reaches[v].contains(&v) {
            continue;
        }
        let circle: BTreeSet<usize> = reaches[v]
            .iter()
            .copied()
            .filter(|&w| reaches[w].contains(&v))
            .collect();
        done.extend(circle.iter().copied());
        let one_module = circle.iter().any(|&owner| {
            circle
                .iter()
                .all(|&w| files[w].module.starts_with(&files[owner].module))
        });
        if circle.len() < 2 || one_module {
            continue;
        }
        let mut lines: Vec<String> = imports
            .iter()
            .filter(|(&(from, _), to)| circle.contains(&from) && circle.contains(to))
            .map(|(&(from, line), &to)| format!("{}:{line} -> {}", rel(from), rel(to)))
            .collect();
        lines.sort();
        out.push(lines);
    }
    out
}

#[test]
fn no_import_circle_between_files() {
    let found = circles(&module_tree());
    let text: Vec<String> = found.iter().map(|c| c.join("\n    ")).collect();
    assert!(
        found.is_empty(),
        "import circles between files (docs/architecture.md, \"Inside a module\"):\n  - {}\n\
         Move what both sides need to a file both import (a shared type, a helper), or pass \
         a value instead of calling back.",
        text.join("\n  - ")
    );
}

#[test]
fn the_circle_scan_resolves_paths_groups_and_inline_supers() {
    let code = strip("use crate::{a::{b::C, self}, d as e};\nmod tests { use super::X; }\n");
    let b = code.as_bytes();
    let at = find(b, b"crate::", 0).unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        paths_at(b, at + 7, &[]),
        [s(&["a", "b", "C"]), s(&["a"]), s(&["d"])]
    );
    // The real tree: a known import is seen, `super::` from a test module stays in its file,
    // and a file with its own child module is not a circle.
    let files = module_tree();
    let imports = file_imports(&files);
    let named = |k: usize| files[k].path.to_string_lossy().replace('\\', "/");
    assert!(imports.iter().any(|(&(from, _), &to)| {
        named(from).ends_with("src/compare/verdict.rs")
            && named(to).ends_with("src/compare/settle.rs")
    }));
    assert!(imports.iter().any(|(&(from, _), &to)| {
        named(from).ends_with("src/client/chunk.rs")
            && named(to).ends_with("src/client/chunk/scan.rs")
    }));
    assert!(!imports.iter().any(|(&(from, _), &to)| {
        named(from).ends_with("src/compare/settle.rs")
            && named(to).ends_with("src/compare/verdict.rs")
    }));
}
