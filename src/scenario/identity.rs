//! What names a result folder and its files: the scenario name rule (a name becomes a
//! folder) and the rung label (a rate becomes part of a file name). Writers and readers of
//! result folders use these same rules, so a folder that loads is one ladder could have
//! written.

/// The folder of baselines `ladder bless` replaced: `golden/.replaced/<scenario>/<time>/`.
/// No scenario may take this name, so it is never mistaken for a baseline.
pub const REPLACED_DIR: &str = ".replaced";

/// `^[A-Za-z0-9._-]+$`, and never `.`, `..` or [`REPLACED_DIR`]: a name is used as one
/// folder name (golden/<name>, results/<name>).
pub fn is_scenario_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s != REPLACED_DIR
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// File-name form of a rate: `5`, `0.5`, `12.25` (6 decimals, no trailing zeros). Kept at 6
/// decimals so every folder written so far keeps its file names; two rates with the same
/// label are refused before any load ([`label_clash`]).
pub fn rate_label(rate: f64) -> String {
    crate::format::trimmed(rate, 6)
}

/// The first two rungs (in the order given) that would write the same files: equal rates,
/// or rates that differ only past the 6th decimal.
pub fn label_clash(rates: &[f64]) -> Option<(f64, f64)> {
    for (i, a) in rates.iter().enumerate() {
        for b in &rates[i + 1..] {
            if rate_label(*a) == rate_label(*b) {
                return Some((*a, *b));
            }
        }
    }
    None
}

/// `s` in the form of an environment variable name: ASCII letters and digits upper-cased,
/// anything else `_` (`x-api-key` → `X_API_KEY`).
pub fn env_name_form(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_plain_folder_name() {
        for ok in ["r1-70b_ladder.v2", "a", "..a", "a.."] {
            assert!(is_scenario_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".replaced",
            "a/b",
            "../x",
            "/abs",
            "a b",
            "a\\b",
        ] {
            assert!(!is_scenario_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn labels_and_clashes() {
        assert_eq!(rate_label(5.0), "5");
        assert_eq!(rate_label(0.5), "0.5");
        assert_eq!(rate_label(12.25), "12.25");
        assert_eq!(label_clash(&[1.0, 5.0, 10.0]), None);
        assert_eq!(label_clash(&[1.0, 5.0, 1.0]), Some((1.0, 1.0)));
        assert_eq!(
            label_clash(&[1.0000001, 1.0000002]),
            Some((1.0000001, 1.0000002))
        );
        assert_eq!(label_clash(&[1.000001, 1.000002]), None);
    }
}
