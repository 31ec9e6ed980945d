//! Upgrading older scenario versions in memory, each step with a note for the user.
//!
//! Version 0 is the seed-script style used before the format was versioned: the rate list was
//! `load.request_rates` (after the script's `--request-rate`) and the per-rung request count was
//! `workload.num_prompts` (after `--num-prompts`). Version 1 calls them `load.rates` and
//! `workload.requests_per_rung`. Migration works on the positioned tree so that later errors
//! still point at the right line.

use serde_json::Value;

use super::diagnostic::Problem;
use super::types::CURRENT_VERSION;
use super::yaml::{Kind, Node, Pos, Seg, Style};

/// Oldest version this build can upgrade.
pub const OLDEST_VERSION: i64 = 0;

/// Renames from version 0 to version 1: (section, old key, new key).
const V0_RENAMES: [(&str, &str, &str); 2] = [
    ("load", "request_rates", "rates"),
    ("workload", "num_prompts", "requests_per_rung"),
];

/// Upgrade `root` from `from` to [`CURRENT_VERSION`]. Returns the notes to show the user.
pub(crate) fn migrate(root: &mut Node, from: i64) -> Result<Vec<String>, Vec<Problem>> {
    let mut notes = vec![];
    let mut problems = vec![];
    if from == 0 {
        for (section, old, new) in V0_RENAMES {
            let Some(sec) = root.get_mut(section) else {
                continue;
            };
            let Kind::Map(entries) = &mut sec.kind else {
                continue;
            };
            let has_new = entries.iter().any(|(k, _, _)| k == new);
            if let Some(entry) = entries.iter_mut().find(|(k, _, _)| k == old) {
                if has_new {
                    problems.push(
                        Problem::key(
                            vec![Seg::Key(section.into()), Seg::Key(old.into())],
                            format!("both `{old}` (version 0) and `{new}` (version 1) are set"),
                        )
                        .hint(format!("keep only `{new}`")),
                    );
                    continue;
                }
                entry.0 = new.to_string();
                notes.push(format!(
                    "`{section}.{old}` (version 0) is read as `{section}.{new}`"
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if let Some(v) = root.get_mut("version") {
        let pos = v.pos;
        *v = version_node(pos);
    }
    notes.insert(
        0,
        format!(
            "scenario version {from} was upgraded to version {CURRENT_VERSION} in memory; \
             update the file to silence this note"
        ),
    );
    Ok(notes)
}

fn version_node(pos: Pos) -> Node {
    Node {
        pos,
        kind: Kind::Scalar(Value::from(CURRENT_VERSION), Style::Plain),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::yaml::parse;

    #[test]
    fn v0_renames_rates_and_prompts_and_keeps_positions() {
        let mut n =
            parse("version: 0\nworkload:\n  num_prompts: 200\nload:\n  request_rates: [1, 5]\n")
                .unwrap();
        let notes = migrate(&mut n, 0).unwrap();
        let v = n.to_json();
        assert_eq!(v["version"], 1);
        assert_eq!(v["load"]["rates"], serde_json::json!([1, 5]));
        assert_eq!(v["workload"]["requests_per_rung"], 200);
        assert!(v["load"].get("request_rates").is_none());
        assert_eq!(notes.len(), 3);
        assert!(notes[1].contains("`load.request_rates`"));
        assert!(notes[2].contains("`workload.num_prompts`"));
        let rates = [Seg::Key("load".into()), Seg::Key("rates".into())];
        assert_eq!(n.locate_key(&rates), Pos::at(5, 3));
    }

    #[test]
    fn v0_with_both_names_is_refused() {
        let mut n = parse("version: 0\nload:\n  request_rates: [1]\n  rates: [2]\n").unwrap();
        let e = migrate(&mut n, 0).unwrap_err();
        assert!(e[0].message.contains("both"));
    }
}
