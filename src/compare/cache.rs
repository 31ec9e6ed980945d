//! Warnings about the server's prompt cache in a comparison: a side whose rung was answered
//! largely from the cache though its workload sends new prompts, and a rung whose cache
//! share differs between the sides (`servermetrics::cache` has the rule). They explain a
//! verdict; they never change one.

use crate::results::ResultDir;
use crate::scenario::{LoadKind, Workload};
use crate::servermetrics::cache;

/// One warning line per problem, rungs in `common` order (both sides' rungs for a side's
/// own high share).
pub fn cache_warnings(b: &ResultDir, c: &ResultDir, common: &[f64], kind: LoadKind) -> Vec<String> {
    let mut out = Vec::new();
    let share = |d: &ResultDir, rate: f64| {
        d.rungs
            .iter()
            .find(|r| r.entry.rate == rate && r.entry.complete)
            .and_then(|r| r.summary.server.cache_share())
    };
    for (which, d) in [("baseline", b), ("candidate", c)] {
        // A folder of vLLM result files records no workload: nothing is expected of it.
        if d.imported.is_some() {
            continue;
        }
        let Ok(workload) = serde_json::from_value::<Workload>(d.info.scenario["workload"].clone())
        else {
            continue;
        };
        let cold = d.info.prompt_nonce.is_some();
        let cycles = !d.info.scenario["load"]["duration"].is_null();
        if cache::expected_reuse(&workload, cold, cycles).is_some() {
            continue;
        }
        for r in d.rungs.iter().filter(|r| common.contains(&r.entry.rate)) {
            let Some(s) = r.summary.server.cache_share() else {
                continue;
            };
            let t = &r.summary.tokens;
            let template = cache::template_share(
                t.mean_server_input_tokens,
                t.requested_input_tokens,
                d.info.prompt_overhead,
            );
            if let Some(w) = cache::high_share_warning(&kind.level(r.entry.rate), s, template) {
                out.push(format!("{which}: {w}"));
            }
        }
    }
    for &rate in common {
        if let (Some(x), Some(y)) = (share(b, rate), share(c, rate)) {
            out.extend(cache::shift_warning(&kind.level(rate), x, y));
        }
    }
    out
}
