//! The plan of a session rung (`workload.sessions`), made before the rung starts: how many
//! turns each session has and the user message of every turn. Both come from the seed, so
//! a rung's sessions are the same on every run; only the history (the answers the server
//! gives) is known at run time, and the runner builds it.

use std::path::Path;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Prompt, PromptSet, Tokens, WorkloadError};
use crate::scenario::limits::MAX_REQUESTS_PER_RUNG;
use crate::scenario::types::Workload;
use crate::scenario::Sessions;

/// A rung's sessions: turn counts and user messages, sessions in order (warmup first).
#[derive(Debug, Clone, Default)]
pub struct SessionPlan {
    /// The rung request index of each session's first turn; session `s` has the turns
    /// `starts[s]..starts[s + 1]` (the last ends at `users.len()`).
    starts: Vec<u32>,
    /// One user message per turn, every session's turns in order, then the next session's.
    users: Vec<Prompt>,
    /// Pause between a turn's answer and the session's next turn.
    pub think_time: Duration,
    /// Things worth telling the user (from prompt synthesis).
    pub notes: Vec<String>,
}

impl SessionPlan {
    /// The plan of `count` sessions, deterministic for (`workload.seed`, `rung_seed`). Each
    /// turn's user message is a prompt of the workload (`input_tokens` long for the random
    /// dataset, `output_tokens` asked for its answer), built as [`PromptSet::load_with`]
    /// builds a rung's prompts.
    pub fn build(
        workload: &Workload,
        sessions: &Sessions,
        tokens: Tokens<'_>,
        dataset_path: Option<&Path>,
        count: usize,
        rung_seed: u64,
    ) -> Result<SessionPlan, WorkloadError> {
        let turns = draw_turns(sessions, count, workload.seed, rung_seed);
        let total: u64 = turns.iter().map(|&t| u64::from(t)).sum();
        if total > MAX_REQUESTS_PER_RUNG {
            return Err(WorkloadError::Setting {
                setting: "workload.sessions.turns",
                message: format!(
                    "{count} sessions of these turns make {total} requests in a rung, more than \
                     the limit of {MAX_REQUESTS_PER_RUNG}; lower `requests_per_rung` or the turns"
                ),
            });
        }
        let set = PromptSet::load_with(workload, tokens, dataset_path, total as usize, rung_seed)?;
        let mut starts = Vec::with_capacity(turns.len());
        let mut at = 0u32;
        for t in &turns {
            starts.push(at);
            at += t;
        }
        Ok(SessionPlan {
            starts,
            users: set.prompts,
            think_time: sessions.think(),
            notes: set.notes,
        })
    }

    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// True when the plan has no session.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Requests of all sessions together (each turn is one request).
    pub fn total_turns(&self) -> usize {
        self.users.len()
    }

    /// The rung request index of session `s`'s first turn.
    pub fn first_index(&self, s: usize) -> u32 {
        self.starts[s]
    }

    /// The user message of each turn of session `s`, in order.
    pub fn turns(&self, s: usize) -> &[Prompt] {
        let from = self.starts[s] as usize;
        let to = self
            .starts
            .get(s + 1)
            .map_or(self.users.len(), |&e| e as usize);
        &self.users[from..to]
    }

    /// Every turn's user message, sessions in order.
    pub fn prompts(&self) -> &[Prompt] {
        &self.users
    }
}

/// Turn counts of `count` sessions from their own random stream (so adding sessions never
/// changes the prompts' stream).
fn draw_turns(s: &Sessions, count: usize, seed: u64, rung_seed: u64) -> Vec<u32> {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&rung_seed.to_le_bytes());
    key[16..24].copy_from_slice(b"sessions");
    let mut rng = ChaCha8Rng::from_seed(key);
    let (lo, hi) = s.turns.bounds();
    let (lo, hi) = (lo.max(1), hi.max(lo.max(1)));
    (0..count).map(|_| rng.gen_range(lo..=hi)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{DurationStr, Turns};

    /// A workload of 8-token user messages, the scenario's defaults elsewhere.
    fn workload() -> Workload {
        serde_json::from_value(serde_json::json!({
            "input_tokens": 8, "output_tokens": 4, "requests_per_rung": 3
        }))
        .unwrap()
    }

    fn tokenizer() -> crate::tokens::Tokenizer {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/tokenizers/ladder-tiny.json"
        );
        crate::tokens::load(Path::new(path)).unwrap()
    }

    fn sessions(turns: Turns) -> Sessions {
        Sessions {
            turns,
            think_time: Some(DurationStr(Duration::from_millis(250))),
        }
    }

    #[test]
    fn fixed_turns_split_the_prompts_in_order() {
        let tok = tokenizer();
        let w = workload();
        let s = sessions(Turns::Fixed(3));
        let plan = SessionPlan::build(&w, &s, Tokens::Local(&tok), None, 4, 7).unwrap();
        assert_eq!(plan.len(), 4);
        assert_eq!(plan.total_turns(), 12);
        assert_eq!(plan.think_time, Duration::from_millis(250));
        for i in 0..4 {
            assert_eq!(plan.first_index(i), 3 * i as u32);
            assert_eq!(plan.turns(i), &plan.prompts()[3 * i..3 * i + 3]);
            assert!(plan.turns(i).iter().all(|p| p.input_tokens == 8));
        }
        // Every turn's user message is its own text.
        let mut texts: Vec<&str> = plan.prompts().iter().map(|p| p.text.as_str()).collect();
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), 12);
    }

    #[test]
    fn drawn_turns_stay_in_range_and_repeat_with_the_seed() {
        let tok = tokenizer();
        let w = workload();
        let s = sessions(Turns::Range { min: 2, max: 5 });
        let a = SessionPlan::build(&w, &s, Tokens::Local(&tok), None, 40, 1).unwrap();
        let counts: Vec<usize> = (0..a.len()).map(|i| a.turns(i).len()).collect();
        assert!(counts.iter().all(|c| (2..=5).contains(c)), "{counts:?}");
        assert!(counts.contains(&2) && counts.contains(&5), "{counts:?}");
        let b = SessionPlan::build(&w, &s, Tokens::Local(&tok), None, 40, 1).unwrap();
        assert_eq!(a.prompts(), b.prompts());
        let other = SessionPlan::build(&w, &s, Tokens::Local(&tok), None, 40, 2).unwrap();
        let other_counts: Vec<usize> = (0..other.len()).map(|i| other.turns(i).len()).collect();
        assert_ne!(counts, other_counts, "another rung draws other sessions");
    }
}
