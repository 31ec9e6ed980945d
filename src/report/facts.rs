//! The "what was run" block of a report (the facts themselves are `results::facts`, read
//! from run.json): one run's table, or two runs side by side with the lines that differ
//! marked.

pub use crate::results::facts::{imported_from_vllm, of, Fact, NOT_RECORDED};

/// One row of a two-run block: a label, both sides' values (`-` where a side lacks the
/// line), and whether they differ.
pub struct PairRow {
    pub key: &'static str,
    pub values: [String; 2],
    pub differs: bool,
}

/// The lines of the block, in the order [`of`] gives them.
const ORDER: [&str; 10] = [
    "scenario",
    "description",
    "model",
    "API",
    "prompts",
    "rung size",
    "load",
    "tokenizer",
    "server",
    "endpoint",
];

/// Two runs' facts side by side, in the block's order; `none` where a side lacks a line.
pub fn pair(a: &[Fact], b: &[Fact]) -> Vec<PairRow> {
    let mut keys: Vec<&'static str> = a.iter().map(|f| f.key).collect();
    keys.extend(
        b.iter()
            .map(|f| f.key)
            .filter(|k| !a.iter().any(|f| f.key == *k)),
    );
    // In the block's own order, whichever side has a line (a description on one side only).
    keys.sort_by_key(|k| ORDER.iter().position(|o| o == k).unwrap_or(ORDER.len()));
    keys.into_iter()
        .map(|key| {
            let get = |s: &[Fact]| {
                s.iter()
                    .find(|f| f.key == key)
                    .map_or_else(|| "none".to_string(), |f| f.value.clone())
            };
            let values = [get(a), get(b)];
            PairRow {
                key,
                differs: values[0] != values[1],
                values,
            }
        })
        .collect()
}

/// The block as a GitHub-flavoured Markdown table, for one run or two (`labels` names the
/// columns of two); every value escaped as a table cell.
pub fn markdown(runs: &[&[Fact]], labels: &[&str]) -> String {
    use crate::escape::markdown::{cell, text};
    let c = |s: &str| cell(&text(s));
    let mut o = String::new();
    match runs {
        [one] => {
            o.push_str("| what was run | |\n| --- | --- |\n");
            for f in one.iter() {
                o.push_str(&format!("| {} | {} |\n", f.key, c(&f.value)));
            }
        }
        [a, b, ..] => {
            o.push_str(&format!(
                "| what was run | {} | {} |\n| --- | --- | --- |\n",
                c(labels.first().copied().unwrap_or("base")),
                c(labels.get(1).copied().unwrap_or("candidate"))
            ));
            for r in pair(a, b) {
                let key = match r.differs {
                    true => format!("**{} (differs)**", r.key),
                    false => r.key.to_string(),
                };
                o.push_str(&format!(
                    "| {key} | {} | {} |\n",
                    c(&r.values[0]),
                    c(&r.values[1])
                ));
            }
        }
        [] => {}
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_mark_the_lines_that_differ_and_keep_lines_one_side_lacks() {
        let f = |key, value: &str| Fact {
            key,
            value: value.into(),
        };
        let a = [f("model", "m"), f("description", "d")];
        let b = [f("model", "n"), f("endpoint", "e")];
        let rows = pair(&a, &b);
        let keys: Vec<_> = rows.iter().map(|r| (r.key, r.differs)).collect();
        assert_eq!(
            keys,
            [("description", true), ("model", true), ("endpoint", true)]
        );
        assert_eq!(rows[0].values, ["d".to_string(), "none".to_string()]);
        let md = markdown(&[&a, &a], &["base", "candidate"]);
        assert!(md.contains("| model | m | m |"), "{md}");
    }

    #[test]
    fn markup_and_pipes_in_values_stay_text() {
        let a = [Fact {
            key: "description",
            value: "a | b <img src=x> `c`\n# h".into(),
        }];
        let md = markdown(&[&a], &[]);
        assert!(md.contains(r"a \| b \<img src=x> \`c\` # h"), "{md}");
        assert_eq!(md.lines().count(), 3, "{md}");
    }
}
