//! When a rung's prefix-cache share ([`super::summary::CACHE_SHARE`]) says its latencies
//! measure the server's prompt cache rather than its prefill: a workload that means to send
//! prompts no server has seen whose rung the server answered largely from its cache, or a
//! baseline and a candidate whose shares differ. One rule for `run`, `compare` and `gate`.

use crate::scenario::{CacheMode, Dataset, Workload};

/// A share above this (beyond what the server's own template explains) is "high" for a
/// workload that expects no reuse.
pub const HIGH_SHARE: f64 = 0.20;

/// Baseline and candidate shares further apart than this (absolute) measure different things.
pub const SHARE_DIFFERENCE: f64 = 0.10;

/// Why a workload reuses prompt text, so that a cache share is expected; `None` when every
/// prompt is new to the server. `cold` says the run's prompts were salted with a nonce
/// (run.json's `prompt_nonce`: absent for `cache: warm` and in folders from before the key,
/// which sent the seed's text on every run); `cycles` that the rung cycled a prompt pool
/// (a rung run for `load.duration`).
pub fn expected_reuse(workload: &Workload, cold: bool, cycles: bool) -> Option<&'static str> {
    if workload.cache == CacheMode::Warm {
        Some("workload.cache: warm")
    } else if !cold {
        Some("no prompt nonce (a run from before workload.cache: the same text every run)")
    } else if workload.shared_prefix.is_some() {
        Some("shared prefixes")
    } else if workload.sessions.is_some() {
        Some("sessions (each turn re-sends the conversation)")
    } else if workload.dataset != Dataset::Random {
        Some("dataset prompts, sent as written")
    } else if cycles {
        Some("a prompt pool cycled for load.duration")
    } else {
        None
    }
}

/// The share of a rung's prompt tokens that the server added itself (its chat template, a
/// BOS: `mean_server_prompt` − `asked`, over `mean_server_prompt`), which is the same for every
/// request and so may come from the cache even when the text is new. `overhead` is what
/// preflight measured the server adding (run.json's `prompt_overhead`): with
/// `input_length: server` the prompts are shortened by it, so the server's count matches the
/// asked length and only the measured overhead tells the shared template apart; the larger
/// of the two shares counts.
pub fn template_share(mean_server_prompt: Option<f64>, asked: f64, overhead: Option<i64>) -> f64 {
    let Some(server) = mean_server_prompt.filter(|s| *s > 0.0) else {
        return 0.0;
    };
    let counted = if server > asked {
        (server - asked) / server
    } else {
        0.0
    };
    let measured = match overhead {
        Some(o) if o > 0 => (o as f64 / server).min(1.0),
        _ => 0.0,
    };
    counted.max(measured)
}

/// The warning for a rung of a workload that expects no reuse whose `share` is above
/// [`HIGH_SHARE`] plus `template` (from [`template_share`]); `level` names the rung.
pub fn high_share_warning(level: &str, share: f64, template: f64) -> Option<String> {
    let allowed = HIGH_SHARE + template;
    (share > allowed).then(|| {
        format!(
            "rung {level}: the server answered {} of the prompt tokens from its prefix cache \
             (server_cache_share; up to {} expected), though this workload sends prompts no \
             server has seen (workload.cache: cold, no shared prefixes or sessions): its TTFT \
             measures cache hits, not prefill. Is another client sending the same prompts, \
             or did the server count tokens it shares across all prompts?",
            pct(share),
            pct(allowed)
        )
    })
}

/// The warning for a rung whose baseline and candidate shares differ by more than
/// [`SHARE_DIFFERENCE`].
pub fn shift_warning(level: &str, base: f64, cand: f64) -> Option<String> {
    ((cand - base).abs() > SHARE_DIFFERENCE).then(|| {
        format!(
            "rung {level}: the server's prefix-cache share differs: baseline {}, candidate {} \
             (server_cache_share); TTFT and throughput then compare cached prompts with \
             computed ones, not two servers. Measure both sides with workload.cache: cold \
             (the default) and bless a baseline made so, or both on a server warmed the same \
             way (docs/gate.md, \"Cold and warm servers\")",
            pct(base),
            pct(cand)
        )
    })
}

fn pct(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload() -> Workload {
        serde_json::from_value(serde_json::json!({})).unwrap()
    }

    #[test]
    fn only_a_cold_workload_of_new_prompts_expects_no_reuse() {
        let w = workload();
        assert_eq!(w.cache, CacheMode::Cold);
        assert_eq!(expected_reuse(&w, true, false), None);
        assert!(
            expected_reuse(&w, false, false).is_some(),
            "no nonce: old folder"
        );
        assert!(expected_reuse(&w, true, true).is_some(), "a cycled pool");
        let warm: Workload = serde_json::from_value(serde_json::json!({"cache": "warm"})).unwrap();
        assert_eq!(
            expected_reuse(&warm, true, false),
            Some("workload.cache: warm")
        );
        let prefixed: Workload = serde_json::from_value(serde_json::json!({
            "shared_prefix": {"prefix_tokens": 8, "groups": 2, "prompts_per_group": 2}
        }))
        .unwrap();
        assert_eq!(
            expected_reuse(&prefixed, true, false),
            Some("shared prefixes")
        );
    }

    #[test]
    fn high_share_counts_the_servers_template_and_shift_is_absolute() {
        assert_eq!(high_share_warning("1", 0.19, 0.0), None);
        let w = high_share_warning("1", 0.75, 0.0).unwrap();
        assert!(w.contains("75%") && w.contains("up to 20%"), "{w}");
        // A chat template of 30 tokens on 64-token prompts: 32 % of 94 comes from it.
        let t = template_share(Some(94.0), 64.0, None);
        assert!((t - 30.0 / 94.0).abs() < 1e-12);
        assert_eq!(high_share_warning("1", 0.45, t), None);
        assert!(high_share_warning("1", 0.60, t).is_some());
        assert_eq!(template_share(None, 64.0, None), 0.0);
        assert_eq!(template_share(None, 64.0, Some(30)), 0.0);
        assert_eq!(template_share(Some(60.0), 64.0, None), 0.0);
        // input_length: server: the server counts the 64 asked, 30 of them its template's.
        let fitted = template_share(Some(64.0), 64.0, Some(30));
        assert!((fitted - 30.0 / 64.0).abs() < 1e-12);
        assert_eq!(template_share(Some(94.0), 64.0, Some(10)), t);
        assert_eq!(shift_warning("2", 0.0, 0.09), None);
        let s = shift_warning("2", 0.75, 0.01).unwrap();
        assert!(s.contains("baseline 75%, candidate 1%"), "{s}");
    }
}
