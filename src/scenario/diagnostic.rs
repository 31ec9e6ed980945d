//! Problems found in a scenario file, each with its location, key path and an optional hint.

use std::fmt;
use std::path::PathBuf;

/// One problem in a scenario file.
///
/// Displays as `file:line:col: error: key.path: message`, followed by `  hint: ...` on the
/// next line when there is a hint. Problems with the file itself (missing, a directory, too
/// large) have `line == 0`; they display as `file: error: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The scenario file, as given by the user.
    pub file: PathBuf,
    /// 1-based line; 0 when the problem is the file as a whole.
    pub line: usize,
    /// 1-based column (characters); 0 when the problem is the file as a whole.
    pub col: usize,
    /// Dotted path of the offending key, e.g. `load.rates[2]`; empty for the whole file.
    pub key_path: String,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col)?;
        }
        write!(f, ": error: ")?;
        if !self.key_path.is_empty() {
            write!(f, "{}: ", self.key_path)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// Every problem found in one or more files; the error type of [`super::load`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// True when no problem was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Number of problems.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// The problems in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Vec<Diagnostic>> for Diagnostics {
    fn from(v: Vec<Diagnostic>) -> Self {
        Diagnostics(v)
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// A problem found before it is given a location: the key path it concerns and whether it
/// should point at the key itself (unknown / renamed keys) or at its value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Problem {
    pub path: Vec<super::yaml::Seg>,
    pub at_key: bool,
    pub message: String,
    pub hint: Option<String>,
    /// 1-based line inside a block (`|`) string value, e.g. of a template error.
    pub line_in_value: Option<usize>,
}

impl Problem {
    /// A problem with the value at `path`.
    pub fn value(path: Vec<super::yaml::Seg>, message: impl Into<String>) -> Self {
        Problem {
            path,
            at_key: false,
            message: message.into(),
            hint: None,
            line_in_value: None,
        }
    }
    /// A problem with the key at the end of `path`.
    pub fn key(path: Vec<super::yaml::Seg>, message: impl Into<String>) -> Self {
        Problem {
            at_key: true,
            ..Problem::value(path, message)
        }
    }
    /// Attach a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// Edit distance in characters, counting a swap of two neighbours as one edit
/// (optimal string alignment), so `modle` is one edit from `model`.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The candidate closest to `word`, if it is close enough to be a plausible typo
/// (distance at most a third of the longer name, and at least 1 allowed), or if one
/// contains the other (`rate` / `rates`, `ttft` / `ttft_ms`).
pub(crate) fn nearest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let w = word.to_ascii_lowercase();
    // Ranked by (plausibility, raw distance): containment counts as one edit, and ties go
    // to the closer spelling (`rate` -> `rates`, not `baseline_rate`).
    let mut best: Option<((usize, usize), &'a str)> = None;
    for c in candidates {
        let cl = c.to_ascii_lowercase();
        let raw = edit_distance(&w, &cl);
        let mut d = raw;
        if w.len() >= 3 && (cl.contains(&w) || w.contains(&cl)) {
            d = d.min(1);
        }
        let limit = (w.len().max(cl.len()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| (d, raw) < bd) {
            best = Some(((d, raw), c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_has_location_key_and_hint() {
        let d = Diagnostic {
            file: "s.yaml".into(),
            line: 3,
            col: 5,
            key_path: "load.rate".into(),
            message: "unknown field `rate`".into(),
            hint: Some("did you mean `rates`?".into()),
        };
        assert_eq!(
            d.to_string(),
            "s.yaml:3:5: error: load.rate: unknown field `rate`\n  hint: did you mean `rates`?"
        );
        let whole = Diagnostic {
            line: 0,
            col: 0,
            key_path: String::new(),
            hint: None,
            message: "does not exist".into(),
            ..d
        };
        assert_eq!(whole.to_string(), "s.yaml: error: does not exist");
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("rate", "rates"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("modle", "model"), 1);
    }

    #[test]
    fn nearest_finds_typos_and_ignores_far_names() {
        let names = ["rates", "baseline_rate", "cooldown", "arrival"];
        assert_eq!(nearest("rate", names), Some("rates"));
        assert_eq!(nearest("coldown", names), Some("cooldown"));
        assert_eq!(nearest("request_rates", names), Some("rates"));
        assert_eq!(nearest("zebra", names), None);
    }
}
