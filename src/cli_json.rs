//! The `--json` documents the binary builds itself (validate, merge, and the error document
//! of every `--json` command), beside the library's (`report::comparison::json`, `report::history::json`).
//! Shapes: docs/json.md. Every document goes to stdout through `escape::json`.

use std::path::Path;

use serde_json::{json, Value};

/// The version of the validate, merge and error shapes.
pub const VERSION: u32 = 1;

/// Print `v` as the command's one JSON document on stdout.
pub fn print(v: &Value) {
    println!("{}", ladder::escape::json::document(v));
}

/// The document of a `--json` command that ended with unusable input (exit 2): the same
/// message as the `error:` line on stderr.
pub fn error(command: &str, message: &str) -> Value {
    json!({
        "version": VERSION,
        "command": command,
        "exit_code": ladder::exit::BAD_INPUT,
        "error": message,
    })
}

fn diagnostic(d: &ladder::scenario::Diagnostic) -> Value {
    json!({
        "file": d.file.display().to_string(),
        // 0 when the problem is the file as a whole.
        "line": d.line,
        "col": d.col,
        "key": d.key_path,
        "message": d.message,
        "hint": d.hint,
        "text": d.to_string(),
    })
}

/// `ladder validate --json`.
pub fn validate(files: &[(&Path, ladder::commands::validate::Checked)], exit_code: i32) -> Value {
    let files: Vec<Value> = files
        .iter()
        .map(|(path, c)| {
            json!({
                "path": path.display().to_string(),
                "ok": c.ok,
                "errors": c.problems.iter().map(diagnostic).collect::<Vec<_>>(),
                "notes": c.notes,
                "warnings": c.warnings,
            })
        })
        .collect();
    json!({
        "version": VERSION,
        "command": "validate",
        "ok": exit_code == ladder::exit::OK,
        "exit_code": exit_code,
        "files": files,
    })
}

/// `ladder merge --json`: the merged folder and what went into it.
pub fn merge(m: &ladder::results::shard_merge::Merged) -> Value {
    let shards = m.info.shards.as_ref();
    let requests: u64 = shards
        .iter()
        .flat_map(|s| &s.shards)
        .flat_map(|s| &s.rungs)
        .map(|r| r.requests)
        .sum();
    json!({
        "version": VERSION,
        "command": "merge",
        "exit_code": ladder::exit::OK,
        "dir": m.dir.display().to_string(),
        "scenario": m.info.scenario_name,
        "status": m.info.status.to_string(),
        "shards": shards.map(|s| s.count),
        "rungs": m.info.rungs.len(),
        "measured_requests": requests,
        "max_start_error_ms": shards.map(|s| s.max_start_error_ms),
        "summary": m.describe(),
    })
}
