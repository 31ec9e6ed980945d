//! The tokens a server adds to every prompt (a chat template's role markers and default
//! system prompt, a BOS), measured in preflight from its usage on the longest-prompt probe,
//! and what `workload.input_length` does with them.

use crate::scenario::types::InputLength;

/// What preflight learnt and what the run does about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overhead {
    /// The server's prompt count minus ladder's count of the same text; `None` when the
    /// server reported no usage.
    pub measured: Option<i64>,
    /// Tokens to take off every synthesised prompt's text (`input_length: server`).
    pub shorten_by: u32,
    /// A line for the terminal. run.json keeps the measured overhead (`prompt_overhead`), and
    /// each rung's token accounting warns there when the server's counts differ.
    pub note: Option<String>,
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
        }),
        (InputLength::Text, _) => Ok(Overhead {
            measured,
            shorten_by: 0,
            note: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
