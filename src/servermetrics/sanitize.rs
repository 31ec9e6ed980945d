//! The `/metrics` channel of the one value rule ([`crate::values::server_value`]), applied to
//! every scrape before anything is computed from it: a server's values are input, and a
//! value no server can mean must not reach a result file (which ladder's own checks would
//! then refuse as damaged). Dropped, not clamped, and counted: the runner warns once per run.

use super::parse::Page;
use crate::values::{server_value, NotAValue};

/// Largest magnitude kept from a metrics page ([`crate::values::MAX_SERVER_VALUE`]).
pub use crate::values::MAX_SERVER_VALUE;

/// What [`sanitize`] dropped from one page.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Dropped {
    /// Samples dropped.
    pub count: u64,
    /// The first one, as `name = value (why)`, for the warning.
    pub first: Option<String>,
}

/// Longest metric name quoted in a warning.
const MAX_SHOWN_NAME: usize = 80;

/// Drop every sample that is not a value: not finite (`NaN`, `±Inf`: "no value", never a
/// made-up 0), beyond [`MAX_SERVER_VALUE`], or negative where the metric cannot be
/// (counters, histogram and summary parts, `…_total`, every metric mapped to a concept).
/// A histogram's `le="+Inf"` bound is a label, not a value, and stays.
pub fn sanitize(page: &mut Page) -> Dropped {
    let mut out = Dropped::default();
    let types = std::mem::take(&mut page.types);
    let kinds = Page {
        types,
        ..Page::default()
    };
    page.samples.retain(|s| {
        let v = s.value;
        let why = match server_value(v, || {
            super::engines::never_negative(&s.name, kinds.kind_of(&s.name))
        }) {
            Ok(_) => None,
            Err(NotAValue::NaN | NotAValue::Infinite) => Some("not a finite number"),
            Err(NotAValue::Beyond) => Some("beyond any value a server reports"),
            Err(NotAValue::Negative) => Some("negative, which this metric never is"),
        };
        if let Some(why) = why {
            out.count += 1;
            out.first.get_or_insert_with(|| {
                let name: String = s.name.chars().take(MAX_SHOWN_NAME).collect();
                format!("{name} = {v} ({why})")
            });
        }
        why.is_none()
    });
    page.types = kinds.types;
    out
}

#[cfg(test)]
mod tests {
    use super::super::engines::{snapshot, Concept};
    use super::super::parse::parse;
    use super::*;

    #[test]
    fn absurd_values_are_dropped_and_counted_nan_and_inf_are_no_value() {
        let mut p = parse(
            "# TYPE vllm:num_requests_waiting gauge\n\
             vllm:num_requests_waiting -3\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running 1e308\n\
             # TYPE vllm:kv_cache_usage_perc gauge\n\
             vllm:kv_cache_usage_perc NaN\n\
             # TYPE vllm:num_preemptions counter\n\
             vllm:num_preemptions_total +Inf\n\
             # TYPE my_temperature gauge\n\
             my_temperature -4\n\
             # TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 1\n\
             vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n\
             vllm:time_to_first_token_seconds_sum -0.5\n\
             vllm:time_to_first_token_seconds_count 2\n",
        );
        let d = sanitize(&mut p);
        assert_eq!(d.count, 5, "{d:?}");
        assert_eq!(
            d.first.as_deref(),
            Some("vllm:num_requests_waiting = -3 (negative, which this metric never is)")
        );
        let snap = snapshot(&p);
        // Dropped values are no value: absent, never 0.0 (NaN) or null-by-accident (+Inf).
        for c in [Concept::Waiting, Concept::Running, Concept::KvUsage] {
            assert_eq!(snap.gauges.get(&c), None, "{c:?}");
        }
        assert_eq!(snap.counters.get(&Concept::Preemptions), None);
        // An unmapped gauge may be negative; the histogram's +Inf bound stays.
        assert_eq!(snap.raw.get("my_temperature"), Some(&-4.0));
        let h = &snap.hists[&Concept::ServerTtft];
        assert!(h.bounds.contains(&f64::INFINITY), "{h:?}");
        assert_eq!(h.sum, 0.0, "{h:?}");
    }
}
