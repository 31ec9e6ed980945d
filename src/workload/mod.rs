//! Prompts and arrivals: tokenizer, datasets, prompt synthesis, arrival schedules.
//!
//! Everything here runs before a rung starts, never on the hot path: [`PromptSet::build`]
//! returns the rung's prompts and [`schedule`] its absolute send offsets.

pub(crate) mod arrival;
pub(crate) mod dataset;
pub(crate) mod images;
mod prefix;
pub(crate) mod sessions;
mod synth;
#[doc(hidden)]
pub mod testkit;
pub(crate) mod trace;

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use arrival::{ramp_schedule, schedule, Arrivals, ScheduleError};
pub use sessions::SessionPlan;

use crate::scenario::types::{Dataset, InputLength, Workload};
use crate::tokens::{self, CountError, CountTokens, Counter, Tokenizer};
use dataset::{FileOutput, FilePrompt};

/// One request's prompt, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The final text sent (after `prompt_template`).
    pub text: String,
    /// Token count of `text` re-encoded without special tokens; 0 when nothing counted it
    /// (`tokenizer: none`), and then the server's usage is the count recorded.
    pub input_tokens: u32,
    /// `max_tokens` to request.
    pub output_tokens: u32,
    /// `input_tokens` equals the requested length. Always true for file datasets, which
    /// request no length.
    pub exact: bool,
    /// `workload.batch_size` above 1 (embeddings): the batch's other inputs, sent after
    /// `text` in the same request; `input_tokens` counts them all. Empty otherwise.
    pub batch: Vec<String>,
    /// `workload.images` (chat): the request's images as `data:` URLs, sent after `text` in
    /// its content parts. Empty otherwise.
    pub images: Vec<String>,
}

/// Mixed into the rung seed for a rerank workload's queries (they are drawn apart from its
/// documents).
const QUERY_SEED: u64 = 0x5155_4552_5900_0001;

/// Groups `prompts` into requests of `size` inputs each, in order (`size` 0 or 1: as they
/// are): a request's first prompt is its `text`, the rest its `batch`; its input tokens are
/// the batch's sum, its output tokens the first's, and it is exact when all of them are.
pub fn batched(prompts: Vec<Prompt>, size: u32) -> Vec<Prompt> {
    let size = size.max(1) as usize;
    if size == 1 {
        return prompts;
    }
    let mut out = Vec::with_capacity(prompts.len().div_ceil(size));
    let mut it = prompts.into_iter().peekable();
    while let Some(mut first) = it.next() {
        for _ in 1..size {
            let Some(p) = it.next() else { break };
            first.input_tokens = first.input_tokens.saturating_add(p.input_tokens);
            first.exact &= p.exact;
            first.batch.push(p.text);
        }
        out.push(first);
    }
    out
}

/// Why prompts could not be built; each message names the file, line or setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A dataset file could not be read.
    #[error("cannot read dataset {}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        message: String,
    },
    /// A dataset file has a malformed line or entry.
    #[error("{}:{line}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong and what is expected.
        message: String,
    },
    /// A dataset file has no usable prompt.
    #[error("dataset {} has no non-empty prompts ({skipped} entries skipped)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
        /// Entries skipped as empty.
        skipped: usize,
    },
    /// A workload setting is unusable.
    #[error("`{setting}`: {message}")]
    Setting {
        /// Dotted scenario key, e.g. `workload.range_ratio`.
        setting: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The tokenizer failed or cannot synthesise prompts.
    #[error("tokenizer: {message}")]
    Tokenizer {
        /// What went wrong.
        message: String,
    },
    /// A synthetic image (`workload.images`) could not be encoded.
    #[error("`workload.images`: {0}")]
    Images(#[from] images::ImageError),
}

impl From<CountError> for WorkloadError {
    fn from(e: CountError) -> Self {
        WorkloadError::Tokenizer {
            message: e.to_string(),
        }
    }
}

/// A local tokenizer's word pool for random prompts (a scan of its whole vocabulary and two
/// batch encodes of it), built the first time a prompt set needs it and reused by every set
/// built after it through the same [`Tokens::Pooled`]: the run's checks and each rung build
/// random prompts from one pool. The pool depends on the tokenizer alone, so a set built
/// with it is the set built without it.
#[derive(Default)]
pub struct WordPools(std::sync::OnceLock<synth::WordPool>);

impl WordPools {
    fn get(&self, tok: &Tokenizer) -> Result<&synth::WordPool, WorkloadError> {
        if let Some(pool) = self.0.get() {
            return Ok(pool);
        }
        let pool = synth::WordPool::new(tok)?;
        Ok(self.0.get_or_init(|| pool))
    }
}

impl std::fmt::Debug for WordPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordPools")
            .field("built", &self.0.get().is_some())
            .finish()
    }
}

/// Where a workload's token counts come from (the scenario's `tokenizer:`).
#[derive(Clone, Copy)]
pub enum Tokens<'a> {
    /// A local `tokenizer.json` (file, model directory or hub id).
    Local(&'a Tokenizer),
    /// A local tokenizer with the run's [`WordPools`]: as `Local`, the word pool built once
    /// for all the sets built with it (it must be the pool of this tokenizer).
    Pooled(&'a Tokenizer, &'a WordPools),
    /// `tokenizer: server`: the server's own tokenizer through its `/tokenize`.
    Server(&'a dyn CountTokens),
    /// `tokenizer: none`: dataset prompts go out uncounted and the server's usage counts them;
    /// random prompts cannot be synthesised.
    Absent,
}

impl<'a> Tokens<'a> {
    fn counter(self) -> Option<Counter<'a>> {
        match self {
            Tokens::Local(t) | Tokens::Pooled(t, _) => Some(Counter::Local(t)),
            Tokens::Server(c) => Some(Counter::Remote(c)),
            Tokens::Absent => None,
        }
    }
}

/// A rung's prompts with notes for the user (cycling, skipped entries, inexact lengths).
#[derive(Debug, Clone, Default)]
pub struct PromptSet {
    /// One prompt per request, in send order.
    pub prompts: Vec<Prompt>,
    /// Things worth telling the user, e.g. "the file has 50 prompts; cycling to 200".
    pub notes: Vec<String>,
    /// With `workload.shared_prefix`: the prefix group of each prompt, in the same order;
    /// empty otherwise.
    pub prefix_groups: Vec<u32>,
}

impl PromptSet {
    /// `count` prompts for one rung; see [`PromptSet::load`] for the rules.
    pub fn build(
        workload: &Workload,
        tokenizer: &Tokenizer,
        dataset_path: Option<&Path>,
        count: usize,
        rung_seed: u64,
    ) -> Result<Vec<Prompt>, WorkloadError> {
        Self::load(workload, tokenizer, dataset_path, count, rung_seed).map(|s| s.prompts)
    }

    /// `count` prompts for one rung with notes, deterministic for
    /// (`workload.seed`, `rung_seed`).
    ///
    /// - `random`: lengths drawn uniformly from `[L*(1-r), L*(1+r)]` (vLLM's rule, at least 1)
    ///   for input and output; the final text after `prompt_template` re-tokenizes to exactly
    ///   the drawn input length (the template's own tokens are subtracted), otherwise the
    ///   closest text found is kept with `exact: false`. Prompts are distinct and contain no
    ///   special or added tokens.
    /// - `jsonl` / `sharegpt` (`dataset_path`, already resolved against the scenario file):
    ///   prompts in file order, cycled when the file has fewer than `count` (noted), the
    ///   template applied, `input_tokens` counted on the final text. Output length: a jsonl
    ///   line's `output_tokens`, else ShareGPT's reply length (vLLM's rule, it wins over
    ///   `workload.output_tokens`), else `workload.output_tokens`.
    pub fn load(
        workload: &Workload,
        tokenizer: &Tokenizer,
        dataset_path: Option<&Path>,
        count: usize,
        rung_seed: u64,
    ) -> Result<PromptSet, WorkloadError> {
        Self::load_with(
            workload,
            Tokens::Local(tokenizer),
            dataset_path,
            count,
            rung_seed,
        )
    }

    /// [`PromptSet::load`] with counts from any [`Tokens`] source. The server's tokenizer
    /// builds random prompts the same way (its counts checked on every prompt); with no
    /// tokenizer, dataset prompts carry `input_tokens` 0 and a ShareGPT reply cannot be
    /// counted, so every request asks for `workload.output_tokens` (noted).
    ///
    /// With `workload.batch_size` B above 1 (embeddings), `count × B` prompts are made and
    /// grouped B to a request ([`batched`]): `count` requests.
    pub fn load_with(
        workload: &Workload,
        tokens: Tokens<'_>,
        dataset_path: Option<&Path>,
        count: usize,
        rung_seed: u64,
    ) -> Result<PromptSet, WorkloadError> {
        let mut set = Self::load_text(workload, tokens, dataset_path, count, rung_seed)?;
        if let Some(spec) = &workload.images {
            for (i, p) in set.prompts.iter_mut().enumerate() {
                p.images = images::data_urls(spec, workload.seed, rung_seed, i)?;
            }
        }
        Ok(set)
    }

    /// [`PromptSet::load_with`]'s texts: one prompt, a batch, or a query and its documents
    /// per request.
    fn load_text(
        workload: &Workload,
        tokens: Tokens<'_>,
        dataset_path: Option<&Path>,
        count: usize,
        rung_seed: u64,
    ) -> Result<PromptSet, WorkloadError> {
        let size = workload.batch_size.unwrap_or(1).max(1);
        if let Some(query_tokens) = workload.query_tokens {
            return Self::load_rerank(
                workload,
                query_tokens,
                tokens,
                dataset_path,
                count,
                rung_seed,
            );
        }
        if size == 1 {
            return Self::load_each(workload, tokens, dataset_path, count, rung_seed);
        }
        let mut set = Self::load_each(
            workload,
            tokens,
            dataset_path,
            count.saturating_mul(size as usize),
            rung_seed,
        )?;
        set.prompts = batched(std::mem::take(&mut set.prompts), size);
        Ok(set)
    }

    /// Rerank requests (`workload.query_tokens`): `count` queries of `query_tokens` (drawn
    /// under their own seed, so they are not the documents' words) and `count × B` documents
    /// of `input_tokens`, B to a request. A request's `text` is its query, its `batch` its
    /// documents, and its input tokens are those of its query-document pairs, as the server
    /// scores them: B × query + the documents' sum.
    fn load_rerank(
        workload: &Workload,
        query_tokens: u32,
        tokens: Tokens<'_>,
        dataset_path: Option<&Path>,
        count: usize,
        rung_seed: u64,
    ) -> Result<PromptSet, WorkloadError> {
        let docs = Workload {
            query_tokens: None,
            ..workload.clone()
        };
        let mut set = Self::load_with(&docs, tokens, dataset_path, count, rung_seed)?;
        let queries = Workload {
            input_tokens: query_tokens,
            query_tokens: None,
            batch_size: None,
            ..workload.clone()
        };
        let qs = Self::load_each(
            &queries,
            tokens,
            dataset_path,
            count,
            rung_seed ^ QUERY_SEED,
        )?;
        for (p, q) in set.prompts.iter_mut().zip(qs.prompts) {
            let first = std::mem::replace(&mut p.text, q.text);
            p.batch.insert(0, first);
            let pairs = q.input_tokens.saturating_mul(p.batch.len() as u32);
            p.input_tokens = p.input_tokens.saturating_add(pairs);
            p.exact &= q.exact;
        }
        set.notes.extend(qs.notes);
        Ok(set)
    }

    /// One prompt per request: [`PromptSet::load_with`] without batching.
    fn load_each(
        workload: &Workload,
        tokens: Tokens<'_>,
        dataset_path: Option<&Path>,
        count: usize,
        rung_seed: u64,
    ) -> Result<PromptSet, WorkloadError> {
        // A tokenizer.json may carry truncation/padding, which would falsify every count.
        let cleaned;
        let tokens = match tokens {
            Tokens::Local(t) if t.get_truncation().is_some() || t.get_padding().is_some() => {
                cleaned = tokens::without_truncation(t.clone());
                Tokens::Local(&cleaned)
            }
            // The pool is the cleaned tokenizer's on every call (this is the only way in).
            Tokens::Pooled(t, pools)
                if t.get_truncation().is_some() || t.get_padding().is_some() =>
            {
                cleaned = tokens::without_truncation(t.clone());
                Tokens::Pooled(&cleaned, pools)
            }
            other => other,
        };
        let pools = match tokens {
            Tokens::Pooled(_, pools) => Some(pools),
            _ => None,
        };
        let mut rng = prompt_rng(workload.seed, rung_seed);
        let env = template_env(workload.prompt_template.as_deref())?;
        let render = |body: &str| -> Result<String, WorkloadError> {
            match &env {
                None => Ok(body.to_string()),
                Some(env) => render_template(env, body),
            }
        };
        match workload.dataset {
            Dataset::Random => match tokens.counter() {
                Some(counter) => build_random(
                    workload, counter, pools, &render, count, &mut rng, rung_seed,
                ),
                None => Err(WorkloadError::Setting {
                    setting: "tokenizer",
                    message: "the random dataset synthesises prompts of exact token lengths, \
                              which needs a tokenizer: give a tokenizer.json file, a model \
                              directory or a hub id, or `server` to count with the server's \
                              own /tokenize (`none` suits jsonl and sharegpt datasets only)"
                        .into(),
                }),
            },
            Dataset::Jsonl | Dataset::Sharegpt => {
                let path = dataset_path.ok_or_else(|| WorkloadError::Setting {
                    setting: "workload.path",
                    message: format!(
                        "dataset `{}` needs a file; set `workload.path`",
                        dataset_name(workload.dataset)
                    ),
                })?;
                if workload.shared_prefix.is_some() {
                    return Err(WorkloadError::Setting {
                        setting: "workload.shared_prefix",
                        message: "shared prefixes are synthesised, so they need the random \
                                  dataset; remove `shared_prefix` or set `dataset: random`"
                            .into(),
                    });
                }
                build_from_file(workload, tokens.counter(), &render, path, count)
            }
        }
    }
}

fn dataset_name(d: Dataset) -> &'static str {
    match d {
        Dataset::Random => "random",
        Dataset::Jsonl => "jsonl",
        Dataset::Sharegpt => "sharegpt",
    }
}

/// The seed of the prompts' *text*: `workload.seed` itself without a nonce (`cache: warm`,
/// and whenever the runner set none), else a mix of the seed and `workload.cache_nonce`, so a
/// `cache: cold` run writes other words. Lengths, shared-prefix groups and the send order are
/// drawn from `workload.seed` alone, so a nonce never changes them.
pub fn text_seed(workload: &Workload) -> u64 {
    match workload.cache_nonce {
        None => workload.seed,
        Some(nonce) => mix(workload.seed ^ mix(nonce ^ 0x636f_6c64_5f6e_6f6e)),
    }
}

/// The nonce of repeat `repeat` (0-based) of a run whose nonce is `nonce`: the run's own for
/// the first repeat, a distinct mix for the others.
pub fn repeat_nonce(nonce: u64, repeat: u32) -> u64 {
    match repeat {
        0 => nonce,
        r => mix(nonce ^ mix(u64::from(r))),
    }
}

/// SplitMix64's finaliser: a bijection that scatters nearby inputs.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Separate RNG stream per (scenario seed, rung) for prompts.
fn prompt_rng(seed: u64, rung_seed: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&rung_seed.to_le_bytes());
    key[16..24].copy_from_slice(b"prompts\0");
    ChaCha8Rng::from_seed(key)
}

const TEMPLATE_NAME: &str = "prompt_template";

fn template_err(e: minijinja::Error) -> WorkloadError {
    WorkloadError::Setting {
        setting: "workload.prompt_template",
        message: crate::scenario::bounded::budget_message(&e).unwrap_or_else(|| e.to_string()),
    }
}

/// Compile the template once; strict undefined so a typo such as `{{ promt }}` is an error.
fn template_env(src: Option<&str>) -> Result<Option<minijinja::Environment<'_>>, WorkloadError> {
    let Some(src) = src else { return Ok(None) };
    let mut env = crate::scenario::bounded::environment();
    env.set_keep_trailing_newline(true);
    env.add_template(TEMPLATE_NAME, src).map_err(template_err)?;
    if render_template(&env, "x")? == render_template(&env, "yy")? {
        return Err(WorkloadError::Setting {
            setting: "workload.prompt_template",
            message: "the template never uses `{{ prompt }}`, so every request would send the \
                      same text"
                .into(),
        });
    }
    Ok(Some(env))
}

fn render_template(env: &minijinja::Environment<'_>, body: &str) -> Result<String, WorkloadError> {
    env.get_template(TEMPLATE_NAME)
        .and_then(|t| crate::scenario::bounded::render(&t, minijinja::context! { prompt => body }))
        .map_err(template_err)
}

/// vLLM's length rule: uniform integer in `[int(L*(1-r)), int(L*(1+r))]`, here at least 1.
fn length_range(len: u32, r: f64) -> (u32, u32) {
    let lo = (len as f64 * (1.0 - r)).floor() as u32;
    let hi = (len as f64 * (1.0 + r)).floor() as u32;
    (lo.max(1).min(hi.max(1)), hi.max(1))
}

#[allow(clippy::too_many_arguments)]
fn build_random(
    workload: &Workload,
    counter: Counter<'_>,
    pools: Option<&WordPools>,
    render: &dyn Fn(&str) -> Result<String, WorkloadError>,
    count: usize,
    rng: &mut ChaCha8Rng,
    rung_seed: u64,
) -> Result<PromptSet, WorkloadError> {
    check_random(workload)?;
    let r = workload.range_ratio;
    let built;
    let (pool, proven) = match counter {
        Counter::Local(tok) => {
            let pool = match pools {
                Some(pools) => pools.get(tok)?,
                None => {
                    built = synth::WordPool::new(tok)?;
                    &built
                }
            };
            let proven = workload.prompt_template.is_none() && pool.composes(tok);
            (pool, proven)
        }
        // Nothing is provable about a tokenizer ladder cannot read: every draft is counted.
        Counter::Remote(_) => {
            let words = tokens::server_words::discover(counter)?;
            built = synth::WordPool::from_words(words.rest, words.first);
            (&built, false)
        }
    };
    let shaper = synth::Shaper {
        counter,
        render,
        proven,
        fixed: 0,
    };

    // The template's own tokens, estimated with one body word (so the boundary between template
    // text and prompt is counted as it will be); the adjust loop corrects any remainder.
    let overhead = if workload.prompt_template.is_some() {
        let probe = counter.counts(&[render("x")?, "x".to_string()])?;
        probe[0].saturating_sub(probe[1])
    } else {
        0
    };
    let (in_lo, in_hi) = length_range(workload.input_tokens, r);
    let (out_lo, out_hi) = length_range(workload.output_tokens, r);
    // `input_length: server`: the drawn length is the server's prompt; the text is shorter by
    // the tokens the server adds (measured in preflight).
    let added = match workload.input_length {
        InputLength::Server => workload.server_overhead,
        InputLength::Text => 0,
    };
    check_room(workload, in_lo, added, overhead)?;
    // A shared prefix: the rung's distinct prompts and their send order (drawn first).
    let plan = match &workload.shared_prefix {
        Some(sp) => Some(prefix::Plan::new(sp, count, rng)?),
        None => None,
    };
    // `input_tokens` is the suffix's length when it does not include the prefix.
    let extra = match &workload.shared_prefix {
        Some(sp) if !sp.input_tokens_include_prefix => sp.prefix_tokens,
        _ => 0,
    };
    check_prefix_room(workload, (in_lo - added).saturating_add(extra), overhead)?;
    let distinct = plan.as_ref().map_or(count, prefix::Plan::len);
    let (inputs, outputs) = draw_lengths(rng, distinct, (in_lo, in_hi), (out_lo, out_hi), extra);
    let texts: Vec<u32> = inputs.iter().map(|n| n - added).collect();
    // `cache: cold`: the words come from a stream of their own, seeded with the run's nonce;
    // everything drawn above (order, lengths) is the seed's alone. The stream also takes a
    // draw of the seed's stream, which depends on how many lengths were drawn (as the
    // unsalted words do), so preflight's one-prompt probe does not start like the rung's
    // first prompt and warm the cache for it.
    let mut salted;
    let rng = match workload.cache_nonce {
        None => rng,
        Some(_) => {
            salted = prompt_rng(text_seed(workload) ^ rng.gen::<u64>(), rung_seed);
            &mut salted
        }
    };
    let mut notes = Vec::new();
    let made = match &plan {
        None => synth::synthesise(pool, &shaper, &texts, overhead, rng)?,
        Some(plan) => {
            let (made, n) = plan.synthesise(
                pool,
                counter,
                render,
                shaper.proven,
                &texts,
                overhead,
                (text_seed(workload), rung_seed),
            )?;
            notes.extend(n);
            made
        }
    };
    let prompts = exact_prompts(made, inputs, outputs, added, &mut notes);
    let (prompts, prefix_groups) = match &plan {
        None => (prompts, Vec::new()),
        Some(plan) => repeat_for_prefix(plan, &prompts, count, &mut notes),
    };
    if let Counter::Local(tok) = counter {
        debug_assert!(prompts.iter().all(|p| !tok
            .encode_fast(p.text.as_str(), false)
            .map(|e| e.get_ids().iter().any(|i| pool.forbidden().contains(i)))
            .unwrap_or(false)));
    }
    Ok(PromptSet {
        prompts,
        notes,
        prefix_groups,
    })
}

/// Each prompt's input and output length, drawn in turn (input first) from the seed's
/// stream; `extra` (a prefix not counted in `input_tokens`) is added to each input.
fn draw_lengths(
    rng: &mut ChaCha8Rng,
    distinct: usize,
    (in_lo, in_hi): (u32, u32),
    (out_lo, out_hi): (u32, u32),
    extra: u32,
) -> (Vec<u32>, Vec<u32>) {
    let mut inputs = Vec::with_capacity(distinct);
    let mut outputs = Vec::with_capacity(distinct);
    for _ in 0..distinct {
        inputs.push(rng.gen_range(in_lo..=in_hi).saturating_add(extra));
        outputs.push(rng.gen_range(out_lo..=out_hi));
    }
    (inputs, outputs)
}

/// The random dataset's own settings: a length range and a prompt to draw.
fn check_random(workload: &Workload) -> Result<(), WorkloadError> {
    let r = workload.range_ratio;
    if !(0.0..1.0).contains(&r) {
        return Err(WorkloadError::Setting {
            setting: "workload.range_ratio",
            message: format!("{r} is outside [0, 1); lengths are drawn from [L*(1-r), L*(1+r)]"),
        });
    }
    if workload.input_tokens == 0 {
        return Err(WorkloadError::Setting {
            setting: "workload.input_tokens",
            message: "must be at least 1 for the random dataset".into(),
        });
    }
    Ok(())
}

/// Room for the shortest prompt (`in_lo` tokens) once the server's added tokens (`added`)
/// and the template's own (`overhead`) are taken.
fn check_room(
    workload: &Workload,
    in_lo: u32,
    added: u32,
    overhead: u32,
) -> Result<(), WorkloadError> {
    if added > 0 && in_lo <= added {
        return Err(WorkloadError::Setting {
            setting: "workload.input_length",
            message: format!(
                "the server adds {added} tokens to every prompt (its chat template), which \
                 leaves no room for a prompt of {in_lo} tokens by its count; raise \
                 `workload.input_tokens` above {added} or set `input_length: text`"
            ),
        });
    }
    if in_lo <= overhead && workload.prompt_template.is_some() {
        return Err(WorkloadError::Setting {
            setting: "workload.prompt_template",
            message: format!(
                "the template alone is about {overhead} tokens, which leaves no room for a \
                 prompt of {in_lo} tokens; raise `workload.input_tokens` or shorten the template"
            ),
        });
    }
    Ok(())
}

/// Room for a shared prefix in the shortest prompt text (`text_lo` tokens).
fn check_prefix_room(
    workload: &Workload,
    text_lo: u32,
    overhead: u32,
) -> Result<(), WorkloadError> {
    if let Some(sp) = &workload.shared_prefix {
        if let Some(m) = prefix::room_problem(sp, text_lo, overhead) {
            return Err(WorkloadError::Setting {
                setting: "workload.shared_prefix.prefix_tokens",
                message: m,
            });
        }
    }
    Ok(())
}

/// The synthesised texts as prompts of the drawn lengths (the server's added tokens counted
/// back in), with a note of those that could not be made exact.
fn exact_prompts(
    made: Vec<synth::Synthesised>,
    inputs: Vec<u32>,
    outputs: Vec<u32>,
    added: u32,
    notes: &mut Vec<String>,
) -> Vec<Prompt> {
    let distinct = made.len();
    let mut inexact = 0;
    let mut worst = 0;
    let prompts: Vec<Prompt> = made
        .into_iter()
        .zip(inputs)
        .zip(outputs)
        .map(|((s, want), out)| {
            let tokens = s.tokens.saturating_add(added);
            let exact = tokens == want;
            if !exact {
                inexact += 1;
                worst = worst.max(tokens.abs_diff(want));
            }
            Prompt {
                text: s.text,
                input_tokens: tokens,
                output_tokens: out,
                exact,
                batch: Vec::new(),
                images: Vec::new(),
            }
        })
        .collect();
    if inexact > 0 {
        notes.push(format!(
            "{inexact} of {distinct} random prompts could not be made exactly the requested \
             length with this tokenizer (off by at most {worst} tokens)"
        ));
    }
    prompts
}

/// A shared prefix's distinct prompts sent `count` times in their order, with each
/// request's group.
fn repeat_for_prefix(
    plan: &prefix::Plan,
    prompts: &[Prompt],
    count: usize,
    notes: &mut Vec<String>,
) -> (Vec<Prompt>, Vec<u32>) {
    let distinct = prompts.len();
    if count > distinct {
        notes.push(format!(
            "the rung sends {count} requests but shared_prefix defines {distinct} \
             prompts (groups × prompts_per_group); they are sent again in the same \
             order, and a prefix cache serves each repeat whole"
        ));
    }
    let groups = (0..count).map(|i| plan.group(i % distinct)).collect();
    (
        (0..count).map(|i| prompts[i % distinct].clone()).collect(),
        groups,
    )
}

fn build_from_file(
    workload: &Workload,
    counter: Option<Counter<'_>>,
    render: &dyn Fn(&str) -> Result<String, WorkloadError>,
    path: &Path,
    count: usize,
) -> Result<PromptSet, WorkloadError> {
    if workload.input_length == InputLength::Server {
        return Err(WorkloadError::Setting {
            setting: "workload.input_length",
            message: "`server` shortens synthesised prompts by the server's template overhead; \
                      a dataset's prompts are sent as written, so it applies to the random \
                      dataset only: remove it (the server's counts are recorded either way)"
                .into(),
        });
    }
    let (entries, stats): (Vec<FilePrompt>, _) = match workload.dataset {
        Dataset::Jsonl => dataset::load_jsonl(path)?,
        _ => dataset::load_sharegpt(path)?,
    };
    if entries.is_empty() {
        return Err(WorkloadError::Empty {
            path: path.to_path_buf(),
            skipped: stats.skipped,
        });
    }
    let mut notes = Vec::new();
    if stats.skipped > 0 {
        notes.push(format!(
            "{}: skipped {} entries without a prompt",
            path.display(),
            stats.skipped
        ));
    }
    if entries.len() < count {
        notes.push(format!(
            "{} has {} prompts but the rung needs {count}; prompts repeat (cycled in file order), \
             which lets a prefix cache serve the repeats",
            path.display(),
            entries.len()
        ));
    }
    let used = &entries[..entries.len().min(count)];
    let texts = used
        .iter()
        .map(|e| render(&e.text))
        .collect::<Result<Vec<_>, _>>()?;
    let replies: Vec<&str> = used
        .iter()
        .filter_map(|e| match &e.output {
            FileOutput::Reply(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    let (in_counts, reply_counts) = match counter {
        Some(c) => {
            let replies: Vec<String> = replies.iter().map(|r| r.to_string()).collect();
            (c.counts(&texts)?, Some(c.counts(&replies)?))
        }
        None => {
            if !replies.is_empty() {
                notes.push(format!(
                    "with `tokenizer: none` the dataset's replies cannot be counted: every \
                     request asks for `workload.output_tokens` ({}) instead of its reply's length",
                    workload.output_tokens
                ));
            }
            (vec![0; texts.len()], None)
        }
    };
    let mut reply_counts = reply_counts.unwrap_or_default().into_iter();
    let outs: Vec<u32> = used
        .iter()
        .map(|e| match e.output {
            FileOutput::Tokens(n) => n.max(1),
            FileOutput::Reply(_) => match reply_counts.next() {
                Some(n) => n.max(1),
                None => workload.output_tokens,
            },
            FileOutput::Unset => workload.output_tokens,
        })
        .collect();
    let prompts = (0..count)
        .map(|i| {
            let j = i % used.len();
            Prompt {
                text: texts[j].clone(),
                input_tokens: in_counts[j],
                output_tokens: outs[j],
                exact: true,
                batch: Vec::new(),
                images: Vec::new(),
            }
        })
        .collect();
    Ok(PromptSet {
        prompts,
        notes,
        ..PromptSet::default()
    })
}

#[cfg(test)]
mod prefix_tests;
#[cfg(test)]
mod server_tests;
#[cfg(test)]
mod tests;
