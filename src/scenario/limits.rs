//! The stated limits of a scenario: one constant and one phrasing each, used by `validate`,
//! by `run` (also for `--rates`) and quoted in the Limits table of docs/scenarios.md.

/// Lowest rate of a rung, requests per second (one request every 1000 s). Below it the
/// arrival gaps of a rung no longer fit a `Duration` and a rung would take years.
pub const MIN_RATE: f64 = 0.001;

/// Gamma shape (`load.burstiness`) bounds; outside them the gamma distribution of the gaps
/// degenerates (a zero scale, or gaps of 0 and of centuries).
pub const MIN_BURSTINESS: f64 = 0.001;
/// See [`MIN_BURSTINESS`].
pub const MAX_BURSTINESS: f64 = 1000.0;

/// Most requests in one rung (`warmup_requests` + `requests_per_rung`): every prompt and its
/// send time are built before the rung starts.
pub const MAX_REQUESTS_PER_RUNG: u64 = 1_000_000;

/// Longest prompt, tokens (`workload.input_tokens`, and each sweep value of `input_tokens`).
pub const MAX_INPUT_TOKENS: u64 = 4 * 1024 * 1024;

/// Most prompt tokens held in memory for one rung (requests × prompt length; about 4 bytes
/// of text a token).
pub const MAX_RUNG_PROMPT_TOKENS: u64 = 256 * 1024 * 1024;

/// Largest dataset file (`workload.path`, jsonl or ShareGPT JSON), bytes: read whole, through
/// [`crate::fileread`]. ShareGPT's largest public file is about 650 MB.
pub const MAX_DATASET_BYTES: u64 = 1 << 30;

/// Longest text a `prompt_template` or `{{ env.NAME }}` value may render to, bytes.
pub const MAX_TEMPLATE_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// Template evaluation budget of all `{{ env.NAME }}` values of one file together (minijinja
/// fuel: about one unit per instruction), so a loop in a template cannot hang `validate`.
pub const TEMPLATE_FUEL: u64 = 1_000_000;

/// Template evaluation budget of `prompt_template` for one prompt.
pub const PROMPT_TEMPLATE_FUEL: u64 = 100_000;

/// A number as a user wrote it, in exponent form when it is extreme (`1e-20`, not 22 digits).
pub fn show(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && a.is_finite() && !(1e-4..1e9).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Why `rate` (requests per second) cannot be a rung, if it cannot.
pub fn rate_problem(rate: f64) -> Option<String> {
    if !(rate.is_finite() && rate > 0.0) {
        return Some(format!(
            "rate {} must be a positive number of requests per second",
            show(rate)
        ));
    }
    if rate < MIN_RATE {
        return Some(format!(
            "rate {} is below the lowest rate ladder runs, {MIN_RATE} requests per second",
            show(rate)
        ));
    }
    None
}

/// Why `b` cannot be a gamma shape, if it cannot.
pub fn burstiness_problem(b: f64) -> Option<String> {
    if !(b.is_finite() && (MIN_BURSTINESS..=MAX_BURSTINESS).contains(&b)) {
        return Some(format!(
            "burstiness {} is outside [{MIN_BURSTINESS}, {MAX_BURSTINESS}]",
            show(b)
        ));
    }
    None
}

/// Why a rung of `requests` prompts of `input_tokens` tokens cannot be built, if it cannot.
pub fn rung_size_problem(requests: u64, input_tokens: u64) -> Option<String> {
    if requests > MAX_REQUESTS_PER_RUNG {
        return Some(format!(
            "{requests} requests per rung (warmup included) is more than the limit of \
             {MAX_REQUESTS_PER_RUNG}"
        ));
    }
    if input_tokens > MAX_INPUT_TOKENS {
        return Some(format!(
            "prompts of {input_tokens} tokens are longer than the limit of {MAX_INPUT_TOKENS}"
        ));
    }
    let total = requests.saturating_mul(input_tokens);
    if total > MAX_RUNG_PROMPT_TOKENS {
        return Some(format!(
            "{requests} requests × {input_tokens} prompt tokens = {total} tokens per rung, more \
             than the limit of {MAX_RUNG_PROMPT_TOKENS} held in memory"
        ));
    }
    None
}

/// Why a rung of file prompts totalling `total_tokens` cannot be held, if it cannot.
pub fn rung_tokens_problem(requests: u64, total_tokens: u64) -> Option<String> {
    (total_tokens > MAX_RUNG_PROMPT_TOKENS).then(|| {
        format!(
            "{requests} requests of this dataset's prompts = {total_tokens} tokens per rung, \
             more than the limit of {MAX_RUNG_PROMPT_TOKENS} held in memory"
        )
    })
}

/// The hint that goes with a size problem.
pub const RUNG_SIZE_HINT: &str =
    "lower `requests_per_rung` / `warmup_requests` or `input_tokens` (docs/scenarios.md, Limits)";

/// Longest `load.duration` of one rung (a soak), and so the longest trace replay.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_the_edges_and_accept_the_inside() {
        // capacity.json's reader holds levels to the same floor (it sits below scenario).
        assert_eq!(MIN_RATE, crate::capacity::file::MIN_LEVEL);
        assert!(rate_problem(MIN_RATE).is_none());
        assert!(rate_problem(1e300).is_none());
        assert_eq!(
            rate_problem(1e-20).unwrap(),
            "rate 1e-20 is below the lowest rate ladder runs, 0.001 requests per second"
        );
        assert!(rate_problem(f64::NAN).unwrap().contains("positive"));
        assert!(burstiness_problem(1.0).is_none());
        assert!(burstiness_problem(1e308).is_some());
        assert!(burstiness_problem(1e-300).is_some());
        assert!(rung_size_problem(200, 512).is_none());
        assert!(rung_size_problem(4_000_000_000, 1).is_some());
        assert!(rung_size_problem(1, u64::from(u32::MAX)).is_some());
        assert!(rung_size_problem(1_000_000, 4096)
            .unwrap()
            .contains("held in memory"));
    }
}
