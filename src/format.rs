//! How numbers read in ladder's text for people (terminal tables, Markdown, JUnit messages,
//! history pages, the analysis' sentences), written once so that a number reads the same
//! wherever it is shown. Formats read back by programs keep their exact writers: CSV
//! (`report::csv`, the shortest text that reads back to the same number), YAML
//! (`scenario::init`), JSON (serde_json, through [`json_number`]).

/// A number for tables and messages: fixed precision by magnitude (one decimal at 0 and from
/// 100 up, two from 1, four below), trailing zeros dropped, so output is stable and
/// readable; `n/a` for NaN, `inf` / `-inf`.
pub fn num(v: f64) -> String {
    if v.is_nan() {
        return "n/a".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = v.abs();
    let decimals = if a == 0.0 || a >= 100.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        4
    };
    trimmed(v, decimals)
}

/// A number for a JSON file: JSON has no NaN or infinity, so those become `null` and the file
/// stays parseable; every finite number is written exactly (serde_json's shortest form).
pub fn json_number(v: f64) -> serde_json::Value {
    serde_json::Number::from_f64(v)
        .map(serde_json::Value::Number)
        .unwrap_or(serde_json::Value::Null)
}

/// [`num`] with its sign when positive: `+1.5`, `-0.2`, `0`.
pub fn signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", num(v))
    } else {
        num(v)
    }
}

/// `v` with `decimals` decimals, then without its trailing zeros and point: `5`, `2.5`,
/// `12.25`.
pub fn trimmed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The first `n` characters of `s` (all of it when shorter), never cutting a character in
/// two: a git commit read from a result folder is a file's text, not always hex.
pub fn first_chars(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_chars_counts_characters_not_bytes() {
        assert_eq!(first_chars("0123456789abcdef", 10), "0123456789");
        assert_eq!(first_chars("abc", 10), "abc");
        // Byte 10 falls inside a two-byte character: a byte slice would panic.
        assert_eq!(first_chars("aéééééééééé", 10), "aééééééééé");
    }

    #[test]
    fn numbers_keep_the_precision_of_their_magnitude_without_trailing_zeros() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1234.56), "1234.6");
        assert_eq!(num(100.0), "100");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(-1.005), "-1");
        assert_eq!(num(0.123456), "0.1235");
        assert_eq!(num(f64::NAN), "n/a");
        assert_eq!(num(f64::NEG_INFINITY), "-inf");
        assert_eq!(json_number(2.5), serde_json::json!(2.5));
        assert_eq!(json_number(f64::NAN), serde_json::Value::Null);
        assert_eq!(json_number(f64::INFINITY), serde_json::Value::Null);
        assert_eq!(trimmed(5.0, 6), "5");
        assert_eq!(trimmed(12.25, 6), "12.25");
        assert_eq!(trimmed(100.0, 0), "100", "no point, no zeros to drop");
        assert_eq!(signed(0.25), "+0.25");
        assert_eq!(signed(-0.25), "-0.25");
        assert_eq!(signed(0.0), "0");
    }
}
