//! `endpoint.extra_body`: engine-specific fields merged into every request body
//! (`top_k`, `min_tokens`, `chat_template_kwargs`, a LoRA adapter's name…). The fields ladder
//! sets itself, and whose meaning its measurement depends on, are refused here.

use serde_json::Value;

use super::diagnostic::Problem;
use super::yaml::Seg;

/// Body fields ladder writes and measures by: an `extra_body` may not set them.
/// (`temperature` is not among them: an `extra_body` value replaces ladder's 0.0.)
pub const RESERVED_BODY_FIELDS: &[(&str, &str)] = &[
    ("model", "set `model`"),
    ("prompt", "prompts come from `workload`"),
    ("messages", "prompts come from `workload`"),
    ("max_tokens", "set `workload.output_tokens`"),
    ("max_completion_tokens", "set `workload.output_tokens`"),
    (
        "stream",
        "ladder always streams: TTFT and ITL need the stream",
    ),
    (
        "stream_options",
        "ladder asks for usage in the stream itself",
    ),
    ("ignore_eos", "set `workload.ignore_eos`"),
    (
        "n",
        "one completion per request: token counts and TPOT assume it",
    ),
    (
        "best_of",
        "one completion per request: token counts and TPOT assume it",
    ),
];

/// Largest `extra_body`, serialised: it is sent with every request.
pub const MAX_EXTRA_BODY_BYTES: usize = 64 * 1024;

/// Problems of `endpoint.extra_body` in the scenario `v` (as JSON).
pub(crate) fn check(v: &Value, out: &mut Vec<Problem>) {
    let Some(Value::Object(extra)) = v.get("endpoint").and_then(|e| e.get("extra_body")) else {
        return;
    };
    let at = |k: &str| {
        vec![
            Seg::Key("endpoint".into()),
            Seg::Key("extra_body".into()),
            Seg::Key(k.into()),
        ]
    };
    for key in extra.keys() {
        if let Some((_, hint)) = RESERVED_BODY_FIELDS.iter().find(|(r, _)| r == key) {
            out.push(
                Problem::value(
                    at(key),
                    format!("`{key}` is a field ladder sets itself and measures by"),
                )
                .hint(*hint),
            );
        }
    }
    let size = serde_json::to_vec(extra).map_or(0, |b| b.len());
    if size > MAX_EXTRA_BODY_BYTES {
        out.push(
            Problem::value(
                vec![Seg::Key("endpoint".into()), Seg::Key("extra_body".into())],
                format!(
                    "extra_body is {size} bytes as JSON; at most {MAX_EXTRA_BODY_BYTES} (it is sent with every request)"
                ),
            )
            .hint("engine options are short; long text belongs in the prompts (`workload`)"),
        );
    }
}
