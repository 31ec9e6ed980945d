//! The tokens a server adds to every prompt (a chat template's role markers and default
//! system prompt, a BOS), measured in preflight from its usage on the longest-prompt probe,
//! and what `workload.input_length` does with them.

use crate::scenario::types::InputLength;

/// What preflight learnt and what the run does about it; `default()` is nothing learnt
/// (no probe counted, or no server counts).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Overhead {
    /// The server's prompt count minus ladder's count of the same text; `None` when the
    /// server reported no usage.
    pub measured: Option<i64>,
    /// Tokens to take off every synthesised prompt's text (`input_length: server`).
    pub shorten_by: u32,
    /// A line for the terminal. run.json keeps the measured overhead (`prompt_overhead`), and
    /// each rung's token accounting warns there when the server's counts differ.
    pub note: Option<String>,
    /// Preflight found the difference growing with the prompt's length
    /// ([`grows_with_length`]): the tokenizer, not a template, explains the rungs' counts.
    pub mismatch: bool,
}

/// Why `workload.input_length: server` cannot use the long probe's counts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverheadError {
    /// The server's answer carried no prompt count.
    #[error(
        "`workload.input_length: server` needs the server's prompt count, but its answer \
         to the longest-prompt probe carried no usage.prompt_tokens; set \
         `input_length: text` (or put a server that reports usage behind the endpoint)"
    )]
    NoServerCount,
    /// The difference between the server's count and ladder's grows with the prompt (see
    /// [`grows_with_length`]): no fixed number of tokens can be taken off every prompt.
    #[error(
        "{0}. `workload.input_length: server` takes a fixed overhead off every prompt, which a \
         difference that grows with the prompt's length is not; fix `tokenizer` (or set \
         `input_length: text`)"
    )]
    GrowsWithLength(String),
    /// The server counted fewer tokens than ladder's tokenizer for the same text.
    #[error(
        "the server counted {server} tokens for a prompt of {text} by the scenario's \
         tokenizer ({}): the tokenizer is likely not the served model's; fix `tokenizer` \
         (input_length: server cannot make a prompt longer than its text)",
        server - i64::from(*text)
    )]
    ServerCountsFewer {
        /// The server's count.
        server: i64,
        /// Ladder's count.
        text: u32,
    },
}

/// Reads the long probe's counts: `text_tokens` by ladder's tokenizer, `server_tokens` from
/// the server's usage. An `Err` says what to change.
pub fn resolve(
    input_length: InputLength,
    synthesised: bool,
    text_tokens: u32,
    server_tokens: Option<u32>,
) -> Result<Overhead, OverheadError> {
    let measured = server_tokens.map(|s| i64::from(s) - i64::from(text_tokens));
    match (input_length, measured) {
        (InputLength::Server, None) => Err(OverheadError::NoServerCount),
        (InputLength::Server, Some(n)) if n < 0 => Err(OverheadError::ServerCountsFewer {
            server: text_tokens as i64 + n,
            text: text_tokens,
        }),
        (InputLength::Server, Some(n)) => Ok(Overhead {
            measured,
            shorten_by: u32::try_from(n).unwrap_or(u32::MAX),
            note: Some(format!(
                "preflight: the server adds {n} tokens to every prompt (its chat template or \
                 BOS); with input_length: server the text is {n} tokens shorter, so the server \
                 counts exactly workload.input_tokens"
            )),
            mismatch: false,
        }),
        (InputLength::Text, Some(n)) if n > 0 => Ok(Overhead {
            measured,
            shorten_by: 0,
            note: Some(if synthesised {
                format!(
                    "note: the server counts {n} more tokens per prompt than its text (its chat \
                     template or BOS); token counts and throughputs cover the text; set \
                     `workload.input_length: server` to have the server see exactly \
                     workload.input_tokens"
                )
            } else {
                // Dataset prompts are sent as written: nothing to shorten.
                format!(
                    "note: the server counts {n} more tokens per prompt than its text (its chat \
                     template or BOS); token counts and throughputs cover the dataset's text, \
                     and each request's server_prompt_tokens holds the server's count"
                )
            }),
            mismatch: false,
        }),
        (InputLength::Text, _) => Ok(Overhead {
            measured,
            shorten_by: 0,
            note: None,
            mismatch: false,
        }),
    }
}

/// Fewest tokens, and share of the longest prompt, by which the two probes' overheads may
/// differ before the difference counts as growing with the prompt: a text's edge can merge
/// with a template's marker into one token more or less.
const GROWTH_TOLERANCE: (i64, f64) = (3, 0.05);

/// The server's count minus ladder's, on the short probe and on the longest prompt. A chat
/// template or a BOS adds the same tokens to both; a tokenizer that is not the served
/// model's counts a longer text further off. `None` when the two agree within
/// [`GROWTH_TOLERANCE`]; otherwise the warning, with what to change.
pub fn grows_with_length(short: (u32, u32), long_text: u32, long_overhead: i64) -> Option<String> {
    let (short_text, short_server) = short;
    let short_overhead = i64::from(short_server) - i64::from(short_text);
    let growth = long_overhead - short_overhead;
    let tolerance = GROWTH_TOLERANCE
        .0
        .max((GROWTH_TOLERANCE.1 * f64::from(long_text)).ceil() as i64);
    let truncated = if growth < 0 {
        " (or the server truncated the prompt: its context length or a truncation setting)"
    } else {
        ""
    };
    (growth.abs() > tolerance).then(|| {
        format!(
            "the server counts {} prompt tokens for the longest prompt, {long_text} by the \
             scenario's tokenizer ({long_overhead:+}), but {short_server} for the short probe's \
             {short_text} ({short_overhead:+}): a difference that grows with the prompt is no \
             chat template or BOS, so `tokenizer` is likely not the served model's{truncated}. \
             Prompt lengths, token counts and token throughputs are in its tokens, not the \
             server's; point `tokenizer` at the served model's tokenizer.json (or set \
             `tokenizer: server`)",
            i64::from(long_text) + long_overhead
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real llama.cpp server (SmolLM2-135M) with `api: chat`: its template adds 30
    /// tokens to both probes with the right tokenizer; with another model's tokenizer (the
    /// tests' tiny one) the longest prompt of 64 was 190 tokens to the server.
    #[test]
    fn an_overhead_that_grows_with_the_prompt_is_a_tokenizer_mismatch() {
        assert_eq!(grows_with_length((4, 34), 64, 30), None);
        // A BOS on a completions API, and one token merged at the edge.
        assert_eq!(grows_with_length((4, 5), 512, 2), None);
        let w = grows_with_length((4, 34), 64, 126).expect("a warning");
        assert!(
            w.starts_with(
                "the server counts 190 prompt tokens for the longest prompt, 64 by the \
                 scenario's tokenizer (+126), but 34 for the short probe's 4 (+30): "
            ),
            "{w}"
        );
        assert!(w.contains("`tokenizer: server`"), "{w}");
        // A tokenizer that counts more than the server's, or a server that truncated: the
        // overhead shrinks with length, and the warning names both.
        let w = grows_with_length((4, 5), 512, -60).expect("a warning");
        assert!(w.contains("or the server truncated the prompt"), "{w}");
        assert!(!grows_with_length((4, 34), 64, 126)
            .unwrap()
            .contains("truncated"));
        // With `input_length: server` it is an error: no fixed overhead can be taken off.
        let e = OverheadError::GrowsWithLength(grows_with_length((4, 34), 64, 126).unwrap());
        assert!(
            e.to_string().ends_with(
                "`workload.input_length: server` takes a fixed overhead off every prompt, which \
                 a difference that grows with the prompt's length is not; fix `tokenizer` (or \
                 set `input_length: text`)"
            ),
            "{e}"
        );
        // Within 5 % of a long prompt: a template's edge effects, not a mismatch.
        assert_eq!(grows_with_length((4, 34), 1000, 75), None);
        assert!(grows_with_length((4, 34), 1000, 81).is_some());
    }

    #[test]
    fn server_mode_shortens_by_the_measured_overhead() {
        let o = resolve(InputLength::Server, true, 64, Some(94)).unwrap();
        assert_eq!(o.measured, Some(30));
        assert_eq!(o.shorten_by, 30);
        assert!(o.note.unwrap().contains("adds 30 tokens"));
    }

    #[test]
    fn server_mode_refuses_without_usage_or_with_fewer_tokens() {
        let e = resolve(InputLength::Server, true, 64, None).unwrap_err();
        assert_eq!(e, OverheadError::NoServerCount);
        assert!(e.to_string().contains("input_length: text"), "{e}");
        let e = resolve(InputLength::Server, true, 64, Some(60)).unwrap_err();
        assert_eq!(
            e,
            OverheadError::ServerCountsFewer {
                server: 60,
                text: 64
            }
        );
        assert!(
            e.to_string().starts_with(
                "the server counted 60 tokens for a prompt of 64 by the scenario's tokenizer (-4): "
            ),
            "{e}"
        );
    }

    #[test]
    fn text_mode_only_notes_the_overhead() {
        let o = resolve(InputLength::Text, true, 64, Some(94)).unwrap();
        assert_eq!((o.measured, o.shorten_by), (Some(30), 0));
        assert!(o.note.unwrap().contains("input_length: server"));
        let o = resolve(InputLength::Text, true, 64, Some(64)).unwrap();
        assert_eq!((o.measured, o.note), (Some(0), None));
        assert_eq!(
            resolve(InputLength::Text, true, 64, None).unwrap().measured,
            None
        );
        // A dataset's prompts go out as written: the note does not offer input_length: server,
        // which the dataset would refuse.
        let o = resolve(InputLength::Text, false, 64, Some(94)).unwrap();
        let note = o.note.unwrap();
        assert!(!note.contains("input_length"), "{note}");
        assert!(note.contains("30 more tokens"), "{note}");
    }
}
