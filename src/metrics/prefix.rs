//! Shared-prefix workloads: TTFT of each group's first request in the rung (cold: a prefix
//! cache cannot have seen its prefix) beside the later ones (warm: likely cache hits).
//!
//! A rung gets these keys only when its requests carry a prefix group
//! (`workload.shared_prefix`), so other result files are unchanged. Where the server exposes
//! its prefix-cache counters, `server_prefix_hit_rate` (servermetrics) is its own view of the
//! same thing.

use serde_json::{Map, Value};

use super::latency::{stats, Stats};
use super::read_error::ReadError;
use crate::record::RequestRecord;

/// The cold/warm split of a rung's successful measured requests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PrefixSplit {
    /// Distinct prefix groups among the measured requests.
    pub groups: u64,
    /// TTFT in ms of the first request of each group (warmup included in deciding which is
    /// first, so a group first sent in warmup has no cold measured request).
    pub cold: Stats,
    /// TTFT in ms of the other requests of each group.
    pub warm: Stats,
}

/// Key part of the two distributions: `median_ttft_cold_ms`, `count_ttft_warm`.
const COLD: &str = "ttft_cold";
const WARM: &str = "ttft_warm";

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl PrefixSplit {
    /// From a rung's measured requests; `None` when none has a prefix group.
    pub fn of(measured: &[&RequestRecord]) -> Option<PrefixSplit> {
        PrefixSplit::from_parts(measured.iter().map(|r| {
            (
                r.prefix_group,
                r.prefix_first,
                r.ttft().filter(|_| r.ok()).map(ms),
            )
        }))
    }

    /// From `(prefix group, first of its group, TTFT in ms of a success)` of each measured
    /// request (records, or request lines read back); `None` when none has a group.
    pub fn from_parts(
        measured: impl Iterator<Item = (Option<u32>, bool, Option<f64>)>,
    ) -> Option<PrefixSplit> {
        let mut groups = std::collections::BTreeSet::new();
        let (mut cold, mut warm) = (Vec::new(), Vec::new());
        for (g, first, ttft) in measured {
            let Some(g) = g else { continue };
            groups.insert(g);
            if let Some(t) = ttft {
                if first {
                    cold.push(t);
                } else {
                    warm.push(t);
                }
            }
        }
        (!groups.is_empty()).then(|| PrefixSplit {
            groups: groups.len() as u64,
            cold: stats(cold),
            warm: stats(warm),
        })
    }

    /// Median warm TTFT over median cold TTFT: below 1 when cache hits shorten prefill;
    /// NaN when either side has no request.
    pub fn warm_over_cold(&self) -> f64 {
        if self.cold.count == 0 || self.warm.count == 0 || self.cold.median <= 0.0 {
            return f64::NAN;
        }
        self.warm.median / self.cold.median
    }

    /// The metric keys a gate rule may name (present only in shared-prefix rungs).
    pub fn keys() -> Vec<String> {
        let mut m = Map::new();
        PrefixSplit::default().put(&mut m, Value::from);
        m.into_iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, _)| k)
            .collect()
    }

    /// Adds the keys of `result_rate_<rate>.json`.
    pub fn put(&self, m: &mut Map<String, Value>, num: fn(f64) -> Value) {
        m.insert("prefix_groups".into(), self.groups.into());
        for (key, s) in [(COLD, &self.cold), (WARM, &self.warm)] {
            m.insert(format!("count_{key}"), s.count.into());
            for (stat, get, _) in Stats::FIELDS {
                m.insert(format!("{stat}_{key}_ms"), num(get(s)));
            }
        }
    }

    /// Reads the keys back: `None` for a rung without them; an error names a key that is
    /// present but broken.
    pub fn get(m: &Map<String, Value>) -> Result<Option<PrefixSplit>, ReadError> {
        let Some(groups) = m.get("prefix_groups") else {
            return Ok(None);
        };
        let groups = groups
            .as_u64()
            .ok_or_else(|| ReadError::not_a_count("prefix_groups"))?;
        let read = |key: &str| -> Result<Stats, ReadError> {
            let c = format!("count_{key}");
            let mut s = Stats {
                count: m
                    .get(&c)
                    .and_then(Value::as_u64)
                    .ok_or_else(|| ReadError::not_integer(&c))?,
                ..Stats::default()
            };
            for (stat, _, set) in Stats::FIELDS {
                let k = format!("{stat}_{key}_ms");
                // null stands for NaN (an empty distribution), as elsewhere in the file.
                let v = match m.get(&k) {
                    Some(Value::Null) => f64::NAN,
                    Some(v) => v.as_f64().ok_or_else(|| ReadError::not_a_number(&k))?,
                    None => return Err(ReadError::missing(&k)),
                };
                set(&mut s, v);
            }
            Ok(s)
        };
        Ok(Some(PrefixSplit {
            groups,
            cold: read(COLD)?,
            warm: read(WARM)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ErrorClass, RequestError};
    use std::time::Duration;

    fn rec(group: Option<u32>, first: bool, ttft: u64) -> RequestRecord {
        let ms = Duration::from_millis;
        RequestRecord {
            sent: ms(10),
            first_token: Some(ms(10 + ttft)),
            end: ms(500),
            output_tokens: 4,
            prefix_group: group,
            prefix_first: first,
            session: None,
            ..Default::default()
        }
    }

    #[test]
    fn a_rung_without_groups_has_no_prefix_keys() {
        assert_eq!(PrefixSplit::of(&[&rec(None, false, 30)]), None);
    }

    #[test]
    fn first_of_each_group_is_cold_and_failures_are_left_out() {
        let mut failed = rec(Some(1), false, 5);
        failed.error = Some(RequestError {
            class: ErrorClass::Server5xx,
            status: Some(500),
            detail: String::new(),
        });
        let rs = [
            rec(Some(0), true, 100),
            rec(Some(1), true, 120),
            rec(Some(0), false, 40),
            rec(Some(1), false, 50),
            rec(Some(0), false, 60),
            failed,
        ];
        let refs: Vec<&RequestRecord> = rs.iter().collect();
        let s = PrefixSplit::of(&refs).expect("grouped");
        assert_eq!(s.groups, 2);
        assert_eq!(s.cold.count, 2);
        assert_eq!(s.cold.median, 110.0);
        assert_eq!(s.warm.count, 3);
        assert_eq!(s.warm.median, 50.0);
        assert!((s.warm_over_cold() - 50.0 / 110.0).abs() < 1e-12);
    }

    #[test]
    fn keys_round_trip_and_absent_keys_read_as_none() {
        let rs = [rec(Some(0), true, 100), rec(Some(0), false, 40)];
        let refs: Vec<&RequestRecord> = rs.iter().collect();
        let s = PrefixSplit::of(&refs).unwrap();
        let mut m = Map::new();
        s.put(&mut m, Value::from);
        assert_eq!(m["median_ttft_cold_ms"], 100.0);
        assert_eq!(m["median_ttft_warm_ms"], 40.0);
        assert_eq!(PrefixSplit::get(&m), Ok(Some(s)));
        assert_eq!(PrefixSplit::get(&Map::new()), Ok(None));
        m.remove("p99_ttft_warm_ms");
        assert_eq!(
            PrefixSplit::get(&m),
            Err(ReadError::Missing {
                key: "p99_ttft_warm_ms".into()
            })
        );
        assert!(PrefixSplit::keys().contains(&"median_ttft_cold_ms".to_string()));
    }
}
