//! The one rule for numbers from outside: a server's `/metrics` page, the folders ladder
//! reads back, vLLM result files. A measured value is a finite number that is not negative;
//! a value a server reports is also at most [`MAX_SERVER_VALUE`] in size, and negative only
//! where its metric can be. Each channel decides what to do with a number that is not a
//! value (drop and count it, or refuse the file as damaged), never what "not a value" means.

/// Largest magnitude kept from a server: above any count of requests, tokens or seconds a
/// server reaches (a million requests a second for 30 years is 1e15).
pub const MAX_SERVER_VALUE: f64 = 1e15;

/// Why a number is not a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAValue {
    /// `NaN`.
    NaN,
    /// `±Inf`.
    Infinite,
    /// Below zero where the quantity never is.
    Negative,
    /// Beyond [`MAX_SERVER_VALUE`] (server values only).
    Beyond,
}

/// `x` as a measured value (a time, a count, a rate): finite and not negative.
pub fn measured(x: f64) -> Result<f64, NotAValue> {
    if x.is_nan() {
        Err(NotAValue::NaN)
    } else if x.is_infinite() {
        Err(NotAValue::Infinite)
    } else if x < 0.0 {
        Err(NotAValue::Negative)
    } else {
        Ok(x)
    }
}

/// `x` as a value a server reports: finite, at most [`MAX_SERVER_VALUE`] in size, and not
/// negative when `never_negative()` says its metric cannot be (asked only for a negative `x`).
pub fn server_value(x: f64, never_negative: impl FnOnce() -> bool) -> Result<f64, NotAValue> {
    if x.is_nan() {
        Err(NotAValue::NaN)
    } else if x.is_infinite() {
        Err(NotAValue::Infinite)
    } else if x.abs() > MAX_SERVER_VALUE {
        Err(NotAValue::Beyond)
    } else if x < 0.0 && never_negative() {
        Err(NotAValue::Negative)
    } else {
        Ok(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_and_server_values_refuse_what_no_measurement_is() {
        assert_eq!(measured(0.0), Ok(0.0));
        assert_eq!(measured(1e308), Ok(1e308));
        assert_eq!(measured(f64::NAN), Err(NotAValue::NaN));
        assert_eq!(measured(f64::INFINITY), Err(NotAValue::Infinite));
        assert_eq!(measured(f64::NEG_INFINITY), Err(NotAValue::Infinite));
        assert_eq!(measured(-0.5), Err(NotAValue::Negative));
        assert_eq!(server_value(12.0, || true), Ok(12.0));
        assert_eq!(server_value(1e308, || false), Err(NotAValue::Beyond));
        assert_eq!(server_value(-1e16, || false), Err(NotAValue::Beyond));
        assert_eq!(server_value(-3.0, || true), Err(NotAValue::Negative));
        assert_eq!(server_value(-4.0, || false), Ok(-4.0));
        assert_eq!(server_value(f64::NAN, || false), Err(NotAValue::NaN));
        // The metric's kind is looked up for negative values only.
        assert_eq!(server_value(3.0, || panic!("asked")), Ok(3.0));
    }
}
