//! Whether a server's `usage` numbers can be believed for one request.
//!
//! A server (or a gateway in front of it) that miscounts would silently skew every
//! token throughput, so absurd counts are rejected and ladder falls back to its own count
//! (re-tokenized text or counted chunks). The bounds are loose on purpose: they catch
//! garbage (overflowed or uninitialised counters, another request's numbers), not a server
//! whose honest count differs from ladder's by a template or a BOS token.

use super::chunk::Usage;

/// A compliant server never generates more than `max_tokens`; twice that plus this slack
/// leaves room for servers counting a few extra (stop or reasoning markers).
const COMPLETION_SLACK: u64 = 16;
/// Chat templates, system prompts added by a gateway and BOS tokens add tens or hundreds of
/// tokens, not sixteen times the prompt plus this.
const PROMPT_SLACK: u64 = 65_536;

/// Why a usage object is not believed, or `None` when it is plausible for a request of
/// `input_tokens` prompt tokens and `max_tokens` asked for whose stream carried
/// `token_chunks` text-bearing chunks.
pub fn implausible(
    usage: &Usage,
    input_tokens: u32,
    max_tokens: u32,
    token_chunks: u32,
) -> Option<&'static str> {
    if let Some(c) = usage.completion_tokens {
        if u64::from(c) > 2 * u64::from(max_tokens) + COMPLETION_SLACK {
            return Some("completion_tokens is more than twice max_tokens");
        }
        if c == 0 && token_chunks > 0 {
            return Some("completion_tokens is 0 although the stream carried text");
        }
    }
    // `input_tokens` 0: ladder did not count the prompt (`tokenizer: none`), nothing to check.
    if let Some(p) = usage.prompt_tokens.filter(|_| input_tokens > 0) {
        if u64::from(p) > 16 * u64::from(input_tokens) + PROMPT_SLACK {
            return Some("prompt_tokens is far larger than the prompt sent");
        }
        if p == 0 && input_tokens > 0 {
            return Some("prompt_tokens is 0 for a non-empty prompt");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(p: Option<u32>, c: Option<u32>) -> Usage {
        Usage {
            prompt_tokens: p,
            completion_tokens: c,
            reasoning_tokens: None,
        }
    }

    #[test]
    fn an_uncounted_prompt_takes_any_prompt_count() {
        // `tokenizer: none`: 0 is "not counted", not an empty prompt.
        assert_eq!(implausible(&u(Some(90_000), Some(8)), 0, 8, 8), None);
        assert_eq!(
            implausible(&u(Some(90_000), Some(8)), 10, 8, 8),
            Some("prompt_tokens is far larger than the prompt sent")
        );
    }

    #[test]
    fn honest_counts_pass() {
        assert_eq!(implausible(&u(Some(128), Some(8)), 128, 8, 8), None);
        // A chat template's overhead and an early EOS are honest.
        assert_eq!(implausible(&u(Some(159), Some(3)), 128, 8, 3), None);
        // Several tokens per chunk, or one whole non-streamed body.
        assert_eq!(implausible(&u(None, Some(256)), 128, 256, 1), None);
        assert_eq!(implausible(&u(None, None), 128, 8, 8), None);
        // Nothing streamed and nothing counted.
        assert_eq!(implausible(&u(Some(5), Some(0)), 5, 8, 0), None);
    }

    #[test]
    fn absurd_counts_are_named() {
        let why = implausible(&u(Some(128), Some(4_000_000_000)), 128, 8, 8).unwrap();
        assert!(why.contains("max_tokens"), "{why}");
        assert!(implausible(&u(Some(128), Some(33)), 128, 8, 8).is_some());
        assert!(implausible(&u(Some(128), Some(32)), 128, 8, 8).is_none());
        assert!(implausible(&u(Some(128), Some(0)), 128, 8, 8)
            .unwrap()
            .contains("carried text"));
        assert!(implausible(&u(Some(u32::MAX), Some(8)), 128, 8, 8).is_some());
        assert!(implausible(&u(Some(0), Some(8)), 128, 8, 8).is_some());
    }
}
