//! Shared prefixes (`workload.shared_prefix`): groups of random prompts that start with the
//! same text, so a server's prefix cache is exercised.
//!
//! Each group's prefix is synthesised on its own (seeded by the scenario seed, the rung, the
//! group and the repeat: every rung and repeat has fresh prefixes, so its first request of a
//! group is a cache miss)
//! to exactly `prefix_tokens` tokens, and each prompt is `prefix + " " + suffix` with the
//! suffix shaped so the whole prompt has its drawn length. With a tokenizer for which pool
//! words compose ([`super::synth::WordPool::composes`]) the prefix's tokens are the same in
//! every prompt of its group by the same proof (the joined text is pool words separated by
//! single spaces); otherwise every prompt is re-encoded and its length fixed in the suffix.
//!
//! The send order is a seeded shuffle of the `groups × prompts_per_group` slots, so groups
//! interleave; a rung of more requests than slots sends them again in the same order.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::synth::{self, Shaper, Synthesised, WordPool};
use super::WorkloadError;
use crate::scenario::limits;
use crate::scenario::types::SharedPrefix;
use crate::tokens::Counter;

const KEY: &str = "workload.shared_prefix";

/// Which prompts of the shared-prefix shape a rung uses, in send order.
pub(crate) struct Plan {
    prefix_tokens: u32,
    repeat: u32,
    prompts_per_group: u32,
    /// Slots (`group × prompts_per_group + index`) in send order, at most the rung's count.
    used: Vec<u32>,
}

impl Plan {
    /// The send order of a rung of `count` requests, drawn from `rng`.
    pub(crate) fn new(
        sp: &SharedPrefix,
        count: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<Plan, WorkloadError> {
        for (name, v) in [
            ("workload.shared_prefix.prefix_tokens", sp.prefix_tokens),
            ("workload.shared_prefix.groups", sp.groups),
            (
                "workload.shared_prefix.prompts_per_group",
                sp.prompts_per_group,
            ),
        ] {
            if v == 0 {
                return Err(WorkloadError::Setting {
                    setting: name,
                    message: "must be at least 1".into(),
                });
            }
        }
        let distinct = sp.distinct_prompts();
        if distinct > limits::MAX_REQUESTS_PER_RUNG {
            return Err(WorkloadError::Setting {
                setting: KEY,
                message: format!(
                    "groups × prompts_per_group = {distinct} prompts, more than the limit of {} \
                     per rung; lower `groups` or `prompts_per_group`",
                    limits::MAX_REQUESTS_PER_RUNG
                ),
            });
        }
        let mut slots: Vec<u32> = (0..distinct as u32).collect();
        slots.shuffle(rng);
        slots.truncate(count.min(slots.len()));
        Ok(Plan {
            prefix_tokens: sp.prefix_tokens,
            repeat: sp.repeat,
            prompts_per_group: sp.prompts_per_group,
            used: slots,
        })
    }

    /// Distinct prompts the rung sends.
    pub(crate) fn len(&self) -> usize {
        self.used.len()
    }

    /// The group of the `i`-th distinct prompt.
    pub(crate) fn group(&self, i: usize) -> u32 {
        self.used[i] / self.prompts_per_group
    }

    /// The distinct prompts, `texts[i]` tokens each (before the template's own tokens,
    /// `overhead`), each group's prefix first. `render` applies the prompt template; `proven`
    /// says no template is set and pool words compose. Returns them with notes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn synthesise(
        &self,
        pool: &WordPool,
        counter: Counter<'_>,
        render: &dyn Fn(&str) -> Result<String, WorkloadError>,
        proven: bool,
        texts: &[u32],
        overhead: u32,
        seeds: (u64, u64),
    ) -> Result<(Vec<Synthesised>, Vec<String>), WorkloadError> {
        let mut notes = Vec::new();
        let identity = |body: &str| -> Result<String, WorkloadError> { Ok(body.to_string()) };
        let plain = Shaper {
            counter,
            render: &identity,
            proven,
            fixed: 0,
        };
        let mut out: Vec<Option<Synthesised>> = (0..self.len()).map(|_| None).collect();
        let mut groups: Vec<u32> = (0..self.len()).map(|i| self.group(i)).collect();
        groups.sort_unstable();
        groups.dedup();
        let mut inexact_prefixes = 0;
        for g in groups {
            let mut grng = prefix_rng(seeds.0, seeds.1, g, self.repeat);
            let prefix = synth::synthesise(pool, &plain, &[self.prefix_tokens], 0, &mut grng)?
                .pop()
                .expect("one prefix asked for");
            if prefix.tokens != self.prefix_tokens {
                inexact_prefixes += 1;
            }
            // The proof covers the joined text only when the prefix is one pool word a token.
            let words = prefix.text.split(' ').count() as u32;
            let exact_words = prefix.tokens == self.prefix_tokens && words == prefix.tokens;
            let text = prefix.text;
            let with_prefix = |body: &str| -> Result<String, WorkloadError> {
                if body.is_empty() {
                    render(&text)
                } else {
                    render(&format!("{text} {body}"))
                }
            };
            let shaper = Shaper {
                counter,
                render: &with_prefix,
                proven: proven && exact_words,
                fixed: prefix.tokens,
            };
            let members: Vec<usize> = (0..self.len()).filter(|&i| self.group(i) == g).collect();
            let targets: Vec<u32> = members.iter().map(|&i| texts[i]).collect();
            let mut rng = suffix_rng(seeds.0, seeds.1, g);
            let made =
                synth::synthesise(pool, &shaper, &targets, overhead + prefix.tokens, &mut rng)?;
            for (i, s) in members.into_iter().zip(made) {
                out[i] = Some(s);
            }
        }
        if inexact_prefixes > 0 {
            notes.push(format!(
                "{inexact_prefixes} shared prefixes could not be made exactly {} tokens long \
                 with this tokenizer",
                self.prefix_tokens
            ));
        }
        Ok((
            out.into_iter()
                .map(|s| s.expect("every slot belongs to a group"))
                .collect(),
            notes,
        ))
    }
}

/// The RNG of group `g`'s prefix: fixed by the scenario seed, the rung, the group and the
/// repeat only.
fn prefix_rng(seed: u64, rung_seed: u64, g: u32, repeat: u32) -> ChaCha8Rng {
    let mut key = keyed_key(seed, rung_seed, g, b"prefix\0\0");
    key[28..32].copy_from_slice(&repeat.to_le_bytes());
    ChaCha8Rng::from_seed(key)
}

/// The RNG of group `g`'s suffixes.
fn suffix_rng(seed: u64, rung_seed: u64, g: u32) -> ChaCha8Rng {
    keyed_rng(seed, rung_seed, g, b"suffix\0\0")
}

fn keyed_rng(seed: u64, rung_seed: u64, g: u32, tag: &[u8; 8]) -> ChaCha8Rng {
    ChaCha8Rng::from_seed(keyed_key(seed, rung_seed, g, tag))
}

fn keyed_key(seed: u64, rung_seed: u64, g: u32, tag: &[u8; 8]) -> [u8; 32] {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&rung_seed.to_le_bytes());
    key[16..24].copy_from_slice(tag);
    key[24..28].copy_from_slice(&g.to_le_bytes());
    key
}

/// Why the drawn prompt lengths leave no room for a suffix after the prefix, if they do not.
/// `text_lo` is the shortest prompt text (after the server's overhead is taken off),
/// `overhead` the template's own tokens.
pub(crate) fn room_problem(sp: &SharedPrefix, text_lo: u32, overhead: u32) -> Option<String> {
    let need = u64::from(sp.prefix_tokens) + u64::from(overhead) + 1;
    (u64::from(text_lo) < need).then(|| {
        format!(
            "prompts as short as {text_lo} tokens leave no room for a suffix after a shared \
             prefix of {} tokens{}; raise `workload.input_tokens` above {} (or lower \
             `range_ratio`), or set `input_tokens_include_prefix: false` to make \
             `input_tokens` the suffix's length",
            sp.prefix_tokens,
            if overhead > 0 {
                format!(" and the template's {overhead}")
            } else {
                String::new()
            },
            need - 1
        )
    })
}
