//! Scenario values written as text: change thresholds (`"10%"`), their absolute floors
//! (`"5ms"`) and durations (`"10s"`), each with its parser, its YAML form and its schema.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a floor, a threshold or a duration written as text was refused; `text` as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// A floor that is no number, with or without a time unit.
    #[error("`{text}` is not a floor; write a plain number in the metric's unit, or `5ms` / `0.005s` for a *_ms metric")]
    NotAFloor { text: String },
    /// A negative (or infinite) floor.
    #[error("floor `{text}` must be a non-negative amount")]
    NegativeFloor { text: String },
    /// A floor beyond what a `Duration` holds.
    #[error("floor `{text}` is longer than any run")]
    FloorTooLong { text: String },
    /// A floor with a time unit on a metric that is no time.
    #[error("`{metric}` is not a time in milliseconds, so its floor takes no time unit; write a plain number in its unit (e.g. `0.5` for request_throughput in req/s)")]
    FloorTakesNoUnit { metric: String },
    /// A threshold that is no number.
    #[error("`{text}` is not a threshold; write `10%` or a plain number")]
    NotAThreshold { text: String },
    /// A negative (or infinite) threshold.
    #[error("threshold `{text}` must be a non-negative number")]
    NegativeThreshold { text: String },
    /// A negative duration.
    #[error("duration `{text}` is negative; durations must be >= 0")]
    NegativeDuration { text: String },
    /// A duration humantime cannot read.
    #[error("`{text}` is not a duration ({reason}); write e.g. `10s`, `250ms`, `2m`")]
    NotADuration {
        text: String,
        reason: humantime::DurationError,
    },
}

/// An absolute floor on a change: a plain number in the metric's unit, or, for the
/// millisecond metrics (`*_ms`), a duration with its unit (`"5ms"`, `"0.005s"`, `"500us"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MinChange {
    /// In the metric's own unit.
    Amount(f64),
    /// A duration, for `*_ms` metrics.
    Duration(Duration),
}

impl MinChange {
    /// Parse `"5ms"`, `"0.005s"`, `"500us"` or a plain non-negative number.
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let t = s.trim();
        let bad = || ValueError::NotAFloor { text: s.into() };
        let (num, scale) = [("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("s", 1.0)]
            .iter()
            .find_map(|(u, f)| t.strip_suffix(u).map(|n| (n.trim(), Some(*f))))
            .unwrap_or((t, None));
        let v: f64 = num.parse().map_err(|_| bad())?;
        if !v.is_finite() || v < 0.0 {
            return Err(ValueError::NegativeFloor { text: s.into() });
        }
        Ok(match scale {
            // A floor beyond what a Duration holds (about 584 billion years) is refused, not
            // a panic.
            Some(f) => MinChange::Duration(
                Duration::try_from_secs_f64(v * f)
                    .map_err(|_| ValueError::FloorTooLong { text: s.into() })?,
            ),
            None => MinChange::Amount(v),
        })
    }

    /// The floor in the unit of `metric`: a duration only fits a `*_ms` metric.
    pub fn in_unit(&self, metric: &str) -> Result<f64, ValueError> {
        match self {
            MinChange::Amount(v) => Ok(*v),
            MinChange::Duration(d) if metric.ends_with("_ms") => Ok(d.as_secs_f64() * 1000.0),
            MinChange::Duration(_) => Err(ValueError::FloorTakesNoUnit {
                metric: metric.into(),
            }),
        }
    }
}

impl fmt::Display for MinChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MinChange::Amount(v) => write!(f, "{v}"),
            MinChange::Duration(d) => write!(f, "{}ms", d.as_secs_f64() * 1000.0),
        }
    }
}

impl Serialize for MinChange {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MinChange::Amount(v) => s.serialize_f64(*v),
            MinChange::Duration(_) => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for MinChange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        number_or_text(d, "floor", MinChange::Amount, MinChange::parse)
    }
}

/// A value written as a non-negative number or as text to parse (thresholds, floors).
fn number_or_text<'de, D: Deserializer<'de>, T>(
    d: D,
    what: &str,
    from_number: fn(f64) -> T,
    parse: fn(&str) -> Result<T, ValueError>,
) -> Result<T, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Num(f64),
        Str(String),
    }
    match Raw::deserialize(d)? {
        Raw::Num(n) if n >= 0.0 && n.is_finite() => Ok(from_number(n)),
        Raw::Num(n) => Err(serde::de::Error::custom(format!(
            "{what} {n} must be a non-negative number"
        ))),
        Raw::Str(s) => parse(&s).map_err(serde::de::Error::custom),
    }
}

/// The schema of a [`number_or_text`] value: a string matching `pattern` or a number >= 0.
fn number_or_pattern(description: &str, pattern: &str) -> schemars::schema::Schema {
    serde_json::from_value(serde_json::json!({
        "description": description,
        "oneOf": [
            { "type": "string", "pattern": pattern },
            { "type": "number", "minimum": 0 }
        ]
    }))
    .expect("static schema is valid")
}

impl JsonSchema for MinChange {
    fn schema_name() -> String {
        "MinChange".into()
    }
    fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        number_or_pattern(
            "Absolute floor of a change: a non-negative number in the metric's unit, or for *_ms metrics a duration (\"5ms\", \"0.005s\", \"500us\").",
            "^[0-9]+(\\.[0-9]+)?\\s*(ms|us|µs|s)?$",
        )
    }
}

/// A change threshold: relative (`"10%"`) or absolute (a plain number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// Fraction of the baseline value: `"10%"` is `Relative(0.10)`.
    Relative(f64),
    /// Same unit as the metric.
    Absolute(f64),
}

impl Threshold {
    /// Parse `"10%"`, `"+10%"`, `"0.5"`. Negative amounts are refused: direction comes from
    /// `max_increase` / `max_decrease`.
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let t = s.trim().trim_start_matches('+');
        let (num, rel) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (t, false),
        };
        let v: f64 = num
            .parse()
            .map_err(|_| ValueError::NotAThreshold { text: s.into() })?;
        if !v.is_finite() || v < 0.0 {
            return Err(ValueError::NegativeThreshold { text: s.into() });
        }
        Ok(if rel {
            Threshold::Relative(v / 100.0)
        } else {
            Threshold::Absolute(v)
        })
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Relative(r) => write!(f, "{}%", r * 100.0),
            Threshold::Absolute(a) => write!(f, "{a}"),
        }
    }
}

impl Serialize for Threshold {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Threshold::Relative(_) => s.serialize_str(&self.to_string()),
            Threshold::Absolute(a) => s.serialize_f64(*a),
        }
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        number_or_text(d, "threshold", Threshold::Absolute, Threshold::parse)
    }
}

impl JsonSchema for Threshold {
    fn schema_name() -> String {
        "Threshold".into()
    }
    fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        number_or_pattern(
            "Relative (\"10%\") or absolute (a non-negative number) change.",
            "^\\+?[0-9]+(\\.[0-9]+)?%$",
        )
    }
}

/// A duration written as a string such as `"10s"`, `"250ms"` or `"2m"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DurationStr(pub Duration);

impl DurationStr {
    /// Parse a humantime string; negative or malformed values are refused with a hint.
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let t = s.trim();
        if t.starts_with('-') {
            return Err(ValueError::NegativeDuration { text: s.into() });
        }
        humantime::parse_duration(t)
            .map(DurationStr)
            .map_err(|reason| ValueError::NotADuration {
                text: s.into(),
                reason,
            })
    }
}

impl fmt::Display for DurationStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl Serialize for DurationStr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for DurationStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DurationStr::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for DurationStr {
    fn schema_name() -> String {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        serde_json::from_value(serde_json::json!({
            "description": "A duration such as \"10s\", \"250ms\" or \"2m\".",
            "type": "string",
            "pattern": "^[0-9]+(\\.[0-9]+)?\\s*[a-zµ]+(\\s*[0-9]+(\\.[0-9]+)?\\s*[a-zµ]+)*$"
        }))
        .expect("static schema is valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_relative_and_absolute() {
        assert_eq!(Threshold::parse("10%").unwrap(), Threshold::Relative(0.10));
        assert_eq!(Threshold::parse("+5%").unwrap(), Threshold::Relative(0.05));
        assert_eq!(Threshold::parse("0.01").unwrap(), Threshold::Absolute(0.01));
        assert_eq!(
            Threshold::parse("-5%"),
            Err(ValueError::NegativeThreshold { text: "-5%".into() })
        );
        assert!(Threshold::parse("ten").is_err());
    }

    #[test]
    fn durations_parse_and_refuse_negative() {
        assert_eq!(
            DurationStr::parse("10s").unwrap().0,
            Duration::from_secs(10)
        );
        assert_eq!(
            DurationStr::parse("250ms").unwrap().0,
            Duration::from_millis(250)
        );
        assert!(DurationStr::parse("-5s")
            .unwrap_err()
            .to_string()
            .contains("negative"));
        assert!(DurationStr::parse("soon").is_err());
    }

    #[test]
    fn each_refusal_names_its_case_and_keeps_its_words() {
        assert_eq!(
            MinChange::parse("5 parsecs"),
            Err(ValueError::NotAFloor {
                text: "5 parsecs".into()
            })
        );
        assert_eq!(
            MinChange::parse("-1ms").unwrap_err().to_string(),
            "floor `-1ms` must be a non-negative amount"
        );
        assert!(matches!(
            MinChange::parse("1e300s"),
            Err(ValueError::FloorTooLong { .. })
        ));
        let e = MinChange::parse("5ms")
            .unwrap()
            .in_unit("request_throughput")
            .unwrap_err();
        assert_eq!(
            e,
            ValueError::FloorTakesNoUnit {
                metric: "request_throughput".into()
            }
        );
        assert!(e.to_string().starts_with(
            "`request_throughput` is not a time in milliseconds, so its floor takes no time unit"
        ));
        assert_eq!(
            Threshold::parse("ten").unwrap_err().to_string(),
            "`ten` is not a threshold; write `10%` or a plain number"
        );
        let e = DurationStr::parse("soon").unwrap_err();
        assert!(matches!(e, ValueError::NotADuration { .. }));
        assert!(
            e.to_string().starts_with("`soon` is not a duration (")
                && e.to_string()
                    .ends_with("); write e.g. `10s`, `250ms`, `2m`"),
            "{e}"
        );
    }
}
