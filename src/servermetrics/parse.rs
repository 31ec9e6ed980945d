//! Prometheus text exposition (format 0.0.4, and the OpenMetrics subset engines emit).
//!
//! Written here rather than taken from crates.io: `prometheus-parse` 0.2.5 (the usual
//! choice) matches metric names with `\w+`, so every `vllm:…`, `sglang:…` and
//! `llamacpp:…` name (the colon is legal in Prometheus names) is dropped; and
//! `openmetrics-parser` is LGPL-3.0. What ladder needs is small: names, labels, values,
//! and the `# TYPE` lines.

use std::collections::HashMap;

/// The `# TYPE` of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The sample's name as written (`…_bucket`, `…_sum`, `…_total` included).
    pub name: String,
    /// Label pairs in order of appearance, values unescaped.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if present.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A parsed `/metrics` page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// Family name → declared type.
    pub types: HashMap<String, Kind>,
    /// Every sample line that parsed; malformed lines are counted, not fatal.
    pub samples: Vec<Sample>,
    /// Lines that were neither comments nor valid samples.
    pub bad_lines: usize,
}

impl Page {
    /// The declared type of the family `sample_name` belongs to (suffixes `_bucket`,
    /// `_sum`, `_count`, `_total`, `_created` stripped as needed).
    pub fn kind_of(&self, sample_name: &str) -> Kind {
        if let Some(k) = self.types.get(sample_name) {
            return *k;
        }
        for suffix in ["_bucket", "_sum", "_count", "_total", "_created"] {
            if let Some(base) = sample_name.strip_suffix(suffix) {
                if let Some(k) = self.types.get(base) {
                    return *k;
                }
            }
        }
        Kind::Untyped
    }
}

/// Parse a page. Never fails: a line that does not parse is skipped and counted.
pub fn parse(text: &str) -> Page {
    let mut page = Page::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let mut words = rest.split_whitespace();
            if words.next() == Some("TYPE") {
                if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                    let kind = match kind {
                        "counter" => Kind::Counter,
                        "gauge" => Kind::Gauge,
                        "histogram" | "gaugehistogram" => Kind::Histogram,
                        "summary" => Kind::Summary,
                        _ => Kind::Untyped,
                    };
                    page.types.insert(name.to_string(), kind);
                }
            }
            continue;
        }
        match sample(line) {
            Some(s) => page.samples.push(s),
            None => page.bad_lines += 1,
        }
    }
    page
}

fn is_name_char(c: char, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':' || (!first && c.is_ascii_digit())
}

fn sample(line: &str) -> Option<Sample> {
    let end = line
        .char_indices()
        .find(|&(i, c)| !is_name_char(c, i == 0))
        .map_or(line.len(), |(i, _)| i);
    if end == 0 {
        return None;
    }
    let name = &line[..end];
    let mut rest = &line[end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        let (parsed, after) = label_set(r)?;
        labels = parsed;
        rest = after;
    }
    let value = value(rest.split_whitespace().next()?)?;
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Parse `k="v",k2="v2"}`; returns the pairs and what follows the `}`.
fn label_set(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start_matches([' ', ',']);
        if let Some(after) = s.strip_prefix('}') {
            return Some((out, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim().to_string();
        s = s[eq + 1..].trim_start().strip_prefix('"')?;
        let mut val = String::new();
        let mut chars = s.char_indices();
        let close = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => val.push('\n'),
                    other => val.push(other),
                },
                '"' => break i,
                c => val.push(c),
            }
        };
        out.push((key, val));
        s = &s[close + 1..];
    }
}

fn value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colon_names_labels_escapes_and_special_values() {
        let p = parse(
            "# HELP vllm:num_requests_running Running.\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3\n\
             odd{path=\"a\\\"b}\\\\c\"} 1.5e3 1700000000000\n\
             h_bucket{le=\"+Inf\"} +Inf\n\
             no_labels NaN\n\
             this is not a sample\n",
        );
        assert_eq!(p.samples.len(), 4);
        assert_eq!(p.bad_lines, 1);
        assert_eq!(p.samples[0].name, "vllm:num_requests_running");
        assert_eq!(p.samples[0].label("engine"), Some("0"));
        assert_eq!(p.samples[0].value, 3.0);
        assert_eq!(p.samples[1].label("path"), Some("a\"b}\\c"));
        assert_eq!(p.samples[1].value, 1500.0);
        assert_eq!(p.samples[2].value, f64::INFINITY);
        assert!(p.samples[3].value.is_nan());
        assert_eq!(p.kind_of("vllm:num_requests_running"), Kind::Gauge);
        assert_eq!(p.kind_of("unknown_total"), Kind::Untyped);
    }

    #[test]
    fn suffixed_samples_find_their_family_type() {
        let p = parse(
            "# TYPE x_seconds histogram\nx_seconds_bucket{le=\"1\"} 2\nx_seconds_sum 1\n\
             # TYPE y counter\ny_total 4\n",
        );
        assert_eq!(p.kind_of("x_seconds_bucket"), Kind::Histogram);
        assert_eq!(p.kind_of("x_seconds_sum"), Kind::Histogram);
        assert_eq!(p.kind_of("y_total"), Kind::Counter);
    }
}
