//! Everything about a run that can be decided without the network, done once and shared by
//! `ladder validate` and `ladder run` (before preflight, before any result folder exists):
//! the simulator's settings, the HTTP headers, the tokenizer, the dataset file, the prompt
//! template on real prompts, the arrival schedule and the sizes against `scenario::limits`.
//! So a scenario that validates does not fail later on scenario grounds.

use std::path::PathBuf;
use std::sync::Arc;

use crate::scenario::limits;
use crate::scenario::{Dataset, Finding, KeySeg, Loaded, Scenario, SweepField};
use crate::sim::SimConfig;
use crate::tokens::source::{self as tokenizer_source, HubSettings};
use crate::tokens::{self, SourceKind, Tokenizer, TokenizerSource};
use crate::workload::{self, Prompt, PromptSet, Tokens};

/// A scenario ready to run: what `prepare` built and checked.
pub struct Prepared {
    /// The scenario, with `--rates` applied.
    pub scenario: Scenario,
    /// The local tokenizer, loaded (`None` for `tokenizer: server` and `none`).
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// Where it came from (file, model directory, hub id, the server, none), for run.json.
    pub tokenizer_source: TokenizerSource,
    /// The dataset file of a jsonl / ShareGPT workload, resolved.
    pub dataset_path: Option<PathBuf>,
    /// The simulator's settings (the scenario's model name served) when `base_url` is `sim`.
    pub sim: Option<SimConfig>,
    /// The longest prompt any rung of any ladder (sweep values included) can send, for the
    /// preflight's long probe (`None` when a size is over the limits, which validation
    /// reports, and for `tokenizer: server`, whose prompts are counted once the server is
    /// reached: see [`check_prompts`]).
    pub longest_prompt: Option<Prompt>,
    /// A `load.trace` replay's trace and prompts, read and built once for every speed.
    pub trace: Option<Arc<Replay>>,
    /// A file dataset's prompts as checked here, for the first rung to send rather than build
    /// them again (see [`FirstPrompts`]).
    pub first_prompts: Option<FirstPrompts>,
    /// The local tokenizer's word pool for random prompts, built by the checks here (when
    /// they build random prompts) and reused by every rung.
    pub word_pools: workload::WordPools,
}

/// A file dataset's prompt set built (and checked) by `prepare`, with what it was built
/// from. The rung plan takes it once, on its first rung, and uses it only when its own
/// workload and count are these (a file's prompts do not depend on the rung's seed), so at
/// most one rung's prompts are held and the prompts sent are the ones it would build.
#[derive(Debug)]
pub struct FirstPrompts {
    /// The workload the set was built from.
    pub workload: crate::scenario::Workload,
    /// The prompts asked for (`warmup_requests + requests_per_rung`).
    pub count: usize,
    /// The prompts, in order.
    pub set: PromptSet,
}

/// A trace read, and its prompts built, before anything is sent.
#[derive(Debug)]
pub struct Replay {
    /// The trace's lines and hash.
    pub trace: workload::trace::Trace,
    /// One prompt per line, the same at every speed.
    pub prompts: Vec<Prompt>,
    /// Notes from synthesis (inexact lengths).
    pub notes: Vec<String>,
}

/// Seed of rung `idx`'s arrival schedule (the run and `prepare` draw the same one).
pub fn rung_seed(seed: u64, idx: usize) -> u64 {
    seed.wrapping_add(
        (idx as u64)
            .wrapping_add(1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15),
    )
}

/// Build and check everything `run` needs short of the network; every problem found, each
/// about a scenario key (see [`Loaded::diagnose`] for their positions).
pub fn prepare(loaded: &Loaded, scenario: Scenario) -> Result<Prepared, Vec<Finding>> {
    let mut found = vec![];
    let sim = sim_config(&scenario, &mut found);
    check_headers(&scenario, &mut found);
    check_schedule(&scenario, &mut found);

    let dataset_path = scenario.workload.path.as_ref().map(|p| loaded.resolve(p));
    let special = tokenizer_source::special(&scenario.tokenizer.to_string_lossy());
    let (tokenizer, source) = match special {
        Some(kind) => (None, Some(TokenizerSource::fileless(kind))),
        None => load_tokenizer(loaded, &scenario, &mut found),
    };
    let word_pools = workload::WordPools::default();
    let (longest, trace, mut first_prompts) = match (&scenario.load.trace, &tokenizer) {
        (Some(t), Some(tok)) => match read_trace(&scenario, t, loaded, tok) {
            Ok(r) => (
                r.prompts.iter().max_by_key(|p| p.input_tokens).cloned(),
                Some(Arc::new(r)),
                None,
            ),
            Err(f) => {
                found.push(f);
                (None, None, None)
            }
        },
        (Some(_), None) => {
            if special.is_some() {
                found.push(
                    Finding::at(
                        &["tokenizer"],
                        "a trace replay synthesises prompts to the trace's lengths, which needs a tokenizer file",
                    )
                    .hint("give the model's tokenizer.json, model directory or hub id instead of `server` or `none`"),
                );
            }
            (None, None, None)
        }
        (None, _) => {
            let counted = Counted {
                tokenizer: tokenizer.as_ref(),
                special,
                word_pools: &word_pools,
            };
            let (longest, first) =
                check_workload_prompts(&scenario, counted, dataset_path.as_deref(), &mut found);
            (longest, None, first)
        }
    };
    // A session's turns carry the conversation so far: its longest prompt is its last turn's,
    // and the limits and the preflight's long probe are about that one.
    let longest = match &scenario.workload.sessions {
        Some(sess) => session_history(&scenario, sess, longest, tokenizer.as_ref(), &mut found),
        None => longest,
    };
    // A session rung builds its conversations, not a prompt set.
    if scenario.workload.sessions.is_some() {
        first_prompts = None;
    }
    match source {
        Some(source) if found.is_empty() => Ok(Prepared {
            scenario,
            tokenizer: tokenizer.map(Arc::new),
            tokenizer_source: source,
            dataset_path,
            sim,
            longest_prompt: longest,
            trace,
            first_prompts,
            word_pools,
        }),
        _ => Err(found),
    }
}

/// The simulator's settings when `base_url` is `sim` (their problems into `found`): the
/// scenario's own, serving every model name the scenario sends.
fn sim_config(scenario: &Scenario, found: &mut Vec<Finding>) -> Option<SimConfig> {
    if scenario.endpoint.base_url != "sim" {
        return None;
    }
    let mut cfg = scenario.sim.clone().unwrap_or_default();
    for (key, m) in cfg.keyed_problems() {
        // The key path is printed before the message already.
        let prefix = format!("sim.{key} ");
        let m = m.strip_prefix(&prefix).map(String::from).unwrap_or(m);
        found.push(Finding::at(&["sim", key], m).hint("docs/sim.md lists the settings"));
    }
    // The built-in simulator serves every name the scenario sends.
    for name in scenario.model.names() {
        if !cfg.served_model_names.iter().any(|n| n == name) {
            cfg.served_model_names.push(name.to_string());
        }
    }
    Some(cfg)
}

/// Each of `endpoint.headers` that HTTP cannot send, as a finding.
fn check_headers(scenario: &Scenario, found: &mut Vec<Finding>) {
    for (name, value) in &scenario.endpoint.headers {
        if let Some(m) = crate::client::header_problem(name, value) {
            let path = vec![
                KeySeg::Key("endpoint".into()),
                KeySeg::Key("headers".into()),
                KeySeg::Key(name.clone()),
            ];
            found.push(Finding {
                path,
                message: m.to_string(),
                hint: Some("headers are `Name: value` pairs as HTTP sends them".into()),
            });
        }
    }
}

/// The local tokenizer: a file, a model directory, or a hub id from the Hugging Face cache
/// (downloaded into it when the scenario allows); `validate` resolves it the same way. A
/// problem goes to `found` at `tokenizer` and gives neither.
fn load_tokenizer(
    loaded: &Loaded,
    scenario: &Scenario,
    found: &mut Vec<Finding>,
) -> (Option<Tokenizer>, Option<TokenizerSource>) {
    let source = tokenizer_source::resolve(
        &scenario.tokenizer.to_string_lossy(),
        &loaded.resolve(&scenario.tokenizer),
        &HubSettings::from_env(scenario.tokenizer_download),
    );
    match source {
        Ok(src) => match tokens::load(&src.path) {
            Ok(t) => (Some(t), Some(src)),
            Err(m) => {
                found.push(Finding::at(&["tokenizer"], m.to_string()));
                (None, None)
            }
        },
        Err(m) => {
            found.push(Finding::at(&["tokenizer"], m.to_string()));
            (None, None)
        }
    }
}

/// How the workload's prompts are counted here: the local tokenizer (with its word pool,
/// which the run reuses), or `tokenizer: server` / `none` (`special`).
#[derive(Clone, Copy)]
struct Counted<'a> {
    tokenizer: Option<&'a Tokenizer>,
    special: Option<SourceKind>,
    word_pools: &'a workload::WordPools,
}

/// Check a workload's prompts (not a trace's): the longest any rung can send, and a file
/// dataset's first prompt set, kept only when built with the counter the run counts with
/// (a local tokenizer or `none`; `tokenizer: server` counts once reached, so it builds them
/// again).
fn check_workload_prompts(
    scenario: &Scenario,
    counted: Counted<'_>,
    dataset_path: Option<&std::path::Path>,
    found: &mut Vec<Finding>,
) -> (Option<Prompt>, Option<FirstPrompts>) {
    match (counted.tokenizer, counted.special) {
        (Some(tok), _) => check_prompts_keeping(
            scenario,
            Tokens::Pooled(tok, counted.word_pools),
            dataset_path,
            found,
        ),
        (None, Some(SourceKind::None)) => {
            check_prompts_keeping(scenario, Tokens::Absent, dataset_path, found)
        }
        // The server counts once it is reached; a dataset file is read (uncounted) now, so a
        // broken file fails here and not after preflight.
        (None, Some(SourceKind::Server)) if scenario.workload.dataset != Dataset::Random => {
            check_prompts(scenario, Tokens::Absent, dataset_path, found);
            (None, None)
        }
        _ => (None, None),
    }
}

/// Read `load.trace` and build its prompts; a problem is reported at `load.trace.path`.
fn read_trace(
    s: &Scenario,
    t: &crate::scenario::TraceLoad,
    loaded: &Loaded,
    tok: &Tokenizer,
) -> Result<Replay, Finding> {
    let at = |m: String| {
        Finding::at(&["load", "trace", "path"], m)
            .hint("docs/traces.md describes the trace format (one JSON object a line)")
    };
    let trace = workload::trace::load(&loaded.resolve(&t.path), t.max_requests).map_err(|e| {
        at(match e {
            // The shared error says "dataset"; this file is a trace.
            workload::WorkloadError::Io { path, message } => {
                format!("cannot read trace {}: {message}", path.display())
            }
            other => other.to_string(),
        })
    })?;
    // The replay's length at its slowest speed is bounded like `load.duration`: timestamps 0
    // and 1e15 ms would otherwise validate and wait "forever".
    let slowest = t.speed.iter().copied().fold(f64::INFINITY, f64::min);
    if slowest.is_finite() && slowest > 0.0 {
        let max = crate::scenario::shapes::MAX_REPLAY;
        let long = trace.replay_length(slowest);
        if long > max {
            return Err(at(format!(
                "the trace's {} lines span {} ms of recorded time ({} to {}); replayed at speed \
                 {} that takes {}, more than the limit of {} (`load.duration`'s)",
                trace.lines.len(),
                limits::show(trace.span_ms()),
                limits::show(trace.lines[0].timestamp_ms),
                limits::show(trace.lines[trace.lines.len() - 1].timestamp_ms),
                limits::show(slowest),
                show_length(long),
                show_length(max),
            ))
            .hint(
                "timestamps are milliseconds from the trace's start; replay fewer lines with \
                 `load.trace.max_requests`, or a faster `speed`",
            ));
        }
    }
    if s.load.warmup_requests as usize >= trace.lines.len() {
        return Err(Finding::at(
            &["load", "warmup_requests"],
            format!(
                "warmup_requests {} leaves none of the trace's {} lines to measure",
                s.load.warmup_requests,
                trace.lines.len()
            ),
        )
        .hint("the first warmup_requests lines of the trace are sent as warmup; lower it"));
    }
    let set = trace
        .prompts(tok, t.block_tokens, workload::text_seed(&s.workload))
        .map_err(|e| at(e.to_string()))?;
    Ok(Replay {
        trace,
        prompts: set.prompts,
        notes: set.notes,
    })
}

/// The last turn of a session's longest possible conversation: every earlier user message and
/// answer, then its own message. Sized from the longest single message (`longest`, counted;
/// else the random dataset's largest draw) and the largest `output_tokens` (sweep values
/// included), at the most turns. Over [`limits::MAX_INPUT_TOKENS`] it is a finding at
/// `workload.sessions.turns`; else, with a counted message, the probe prompt: that many
/// tokens of the message's own words (the answers' words cannot be known before the run).
fn session_history(
    s: &Scenario,
    sess: &crate::scenario::Sessions,
    longest: Option<Prompt>,
    tok: Option<&Tokenizer>,
    found: &mut Vec<Finding>,
) -> Option<Prompt> {
    let (_, turns) = sess.turns.bounds();
    let sweep = |field: SweepField| {
        s.sweep
            .as_ref()
            .filter(|w| w.field == field)
            .and_then(|w| w.values.iter().copied().max())
    };
    let max_out = u64::from(
        sweep(SweepField::OutputTokens).map_or(s.workload.output_tokens, |v| {
            v.max(s.workload.output_tokens)
        }),
    );
    let max_in = match &longest {
        Some(p) if p.input_tokens > 0 => u64::from(p.input_tokens),
        _ if s.workload.dataset == Dataset::Random => {
            let base = u64::from(sweep(SweepField::InputTokens).unwrap_or(s.workload.input_tokens));
            (base as f64 * (1.0 + s.workload.range_ratio.max(0.0))).ceil() as u64
        }
        _ => return longest,
    };
    let turns = u64::from(turns);
    let history = turns
        .saturating_mul(max_in)
        .saturating_add(turns.saturating_sub(1).saturating_mul(max_out));
    if history > limits::MAX_INPUT_TOKENS {
        found.push(
            Finding::at(
                &["workload", "sessions", "turns"],
                format!(
                    "a session's last turn carries its whole conversation: up to {turns} messages \
                     of up to {max_in} tokens and {} answers of up to {max_out}, {history} tokens, \
                     more than the limit of {} tokens of one prompt",
                    turns.saturating_sub(1),
                    limits::MAX_INPUT_TOKENS
                ),
            )
            .hint("lower `sessions.turns`, `input_tokens` or `output_tokens`"),
        );
        return None;
    }
    let (Some(p), Some(tok)) = (longest.as_ref(), tok) else {
        return longest;
    };
    let words: Vec<&str> = p.text.split_whitespace().collect();
    if words.is_empty() || turns <= 1 {
        return longest;
    }
    // The message's words, cycled to the history's length; counted, then cut to fit.
    let mut text = String::with_capacity(p.text.len() * turns as usize * 2);
    let mut n = 0u64;
    for w in words.iter().cycle() {
        if n >= history {
            break;
        }
        if n > 0 {
            text.push(' ');
        }
        text.push_str(w);
        n += 1;
    }
    let counted = u64::from(tokens::count(tok, &text));
    if counted > history {
        // Words of several tokens: keep the share of words that fits.
        let keep = (n as f64 * history as f64 / counted as f64).floor() as usize;
        text = text
            .split(' ')
            .take(keep.max(1))
            .collect::<Vec<_>>()
            .join(" ");
    }
    let tokens = tokens::count(tok, &text);
    Some(Prompt {
        text,
        input_tokens: tokens,
        output_tokens: p.output_tokens,
        exact: false,
        batch: Vec::new(),
        images: Vec::new(),
    })
}

/// A replay's length as a user reads it (`2h 5m 3s`; `longer than 100 years` past that).
pub fn show_length(d: std::time::Duration) -> String {
    if d > std::time::Duration::from_secs(100 * 365 * 24 * 3600) {
        return "longer than 100 years".into();
    }
    let d = if d >= std::time::Duration::from_secs(1) {
        std::time::Duration::from_secs(d.as_secs_f64().round() as u64)
    } else {
        std::time::Duration::from_millis(d.as_millis() as u64)
    };
    humantime::format_duration(d).to_string()
}

impl Replay {
    /// "the replay of N lines takes 10m at speed 1, 5m at speed 2", said by `validate` and
    /// before the first rung of `run`.
    pub fn length_note(&self, speeds: &[f64]) -> String {
        let each: Vec<String> = speeds
            .iter()
            .map(|&s| {
                format!(
                    "{} at speed {}",
                    show_length(self.trace.replay_length(s)),
                    limits::show(s)
                )
            })
            .collect();
        format!(
            "the replay of {} trace lines takes {}",
            self.trace.lines.len(),
            each.join(", ")
        )
    }
}

/// The first rung's schedule, the same draw the run makes. It is the lowest rate (rates are
/// strictly increasing, the baseline below them), so the longest gaps: with the rates,
/// burstiness and rung size inside `scenario::limits` the later rungs fit too.
fn check_schedule(s: &Scenario, found: &mut Vec<Finding>) {
    match s.load_kind() {
        crate::scenario::LoadKind::Concurrency | crate::scenario::LoadKind::Trace => {
            // closed-loop users have no arrival schedule; a trace has its own timestamps
            return;
        }
        crate::scenario::LoadKind::Ramp => {
            let Some(r) = &s.load.ramp else { return };
            if limits::rate_problem(r.from).is_some()
                || r.to.partial_cmp(&r.from) != Some(std::cmp::Ordering::Greater)
                || r.over.0.is_zero()
            {
                return; // validation reports the values
            }
            if let Err(e) = workload::ramp_schedule(
                r,
                s.load.arrival,
                s.load.burstiness,
                rung_seed(s.workload.seed, 0),
            ) {
                found.push(Finding::at(&["load", "ramp"], e.to_string()));
            }
            return;
        }
        crate::scenario::LoadKind::Rate => {}
    }
    let Some(&rate) = s.rungs().first() else {
        return;
    };
    let n = s.load.warmup_requests as usize + s.workload.requests_per_rung as usize;
    if n as u64 > limits::MAX_REQUESTS_PER_RUNG {
        return; // validation reports the size
    }
    if let Err(e) = workload::schedule(
        s.load.arrival,
        rate,
        s.load.burstiness,
        n,
        rung_seed(s.workload.seed, 0),
    ) {
        let key = if s.load.baseline_rate.is_some() {
            "baseline_rate"
        } else {
            "rates"
        };
        found.push(Finding::at(&["load", key], e.to_string()).hint(format!(
            "rates are at least {} requests per second; burstiness is in [{}, {}]",
            limits::MIN_RATE,
            limits::MIN_BURSTINESS,
            limits::MAX_BURSTINESS
        )));
    }
}

/// Prompts as the run builds them. A file dataset is read, parsed and templated whole (the
/// run builds the same prompts on every rung); the random dataset is sampled at the shortest
/// and the longest length each ladder draws, which is where a template can fail (no room for
/// the prompt, output over the cap). Returns the longest prompt built (`None` when a size is
/// over the limits or no prompt could be built: the findings say why).
pub(crate) fn check_prompts(
    s: &Scenario,
    tok: Tokens<'_>,
    dataset: Option<&std::path::Path>,
    found: &mut Vec<Finding>,
) -> Option<Prompt> {
    check_prompts_keeping(s, tok, dataset, found).0
}

/// [`check_prompts`], also giving back a file dataset's prompt set when it passed (the first
/// rung's prompts: see [`FirstPrompts`]).
fn check_prompts_keeping(
    s: &Scenario,
    tok: Tokens<'_>,
    dataset: Option<&std::path::Path>,
    found: &mut Vec<Finding>,
) -> (Option<Prompt>, Option<FirstPrompts>) {
    let count = s.load.warmup_requests as u64 + s.workload.requests_per_rung as u64;
    if count > limits::MAX_REQUESTS_PER_RUNG {
        return (None, None);
    }
    let mut first = None;
    let mut longest: Option<Prompt> = None;
    let mut keep = |p: Option<&Prompt>| {
        if let Some(p) = p {
            // Uncounted prompts (`tokenizer: none`) are all 0 tokens: the longest text wins.
            if longest
                .as_ref()
                .is_none_or(|l| (p.input_tokens, p.text.len()) > (l.input_tokens, l.text.len()))
            {
                longest = Some(p.clone());
            }
        }
    };
    let key_of = |e: &workload::WorkloadError| -> &'static str {
        match e {
            workload::WorkloadError::Setting { setting, .. } => setting,
            workload::WorkloadError::Tokenizer { .. } => "tokenizer",
            workload::WorkloadError::Images(_) => "workload.images",
            _ => "workload.path",
        }
    };
    let mut push = |e: workload::WorkloadError| {
        let key = key_of(&e);
        let keys: Vec<&str> = key.split('.').collect();
        let msg = match &e {
            workload::WorkloadError::Setting { message, .. } => message.clone(),
            workload::WorkloadError::Images(e) => e.to_string(),
            other => other.to_string(),
        };
        let f = Finding::at(&keys, msg);
        if !found.contains(&f) {
            found.push(f);
        }
    };
    match s.workload.dataset {
        Dataset::Jsonl | Dataset::Sharegpt => {
            match PromptSet::load_with(&s.workload, tok, dataset, count as usize, 0) {
                Ok(set) => {
                    keep(set.prompts.iter().max_by_key(|p| p.input_tokens));
                    let total: u64 = set.prompts.iter().map(|p| u64::from(p.input_tokens)).sum();
                    match limits::rung_tokens_problem(count, total) {
                        Some(m) => found.push(
                            Finding::at(&["workload", "path"], m).hint(limits::RUNG_SIZE_HINT),
                        ),
                        None => {
                            first = Some(FirstPrompts {
                                workload: s.workload.clone(),
                                count: count as usize,
                                set,
                            })
                        }
                    }
                }
                Err(e) => push(e),
            }
        }
        Dataset::Random => {
            let mut lens = vec![s.workload.input_tokens];
            if let Some(sw) = s
                .sweep
                .as_ref()
                .filter(|w| w.field == SweepField::InputTokens)
            {
                lens = sw.values.clone();
            }
            for len in lens {
                if limits::rung_size_problem(count, u64::from(len)).is_some() {
                    continue; // validation reports the size
                }
                let mut w = s.workload.clone();
                w.input_tokens = len;
                match PromptSet::load_with(&w, tok, None, 1, 0) {
                    Ok(set) => keep(set.prompts.first()),
                    Err(e) => {
                        push(e);
                        continue;
                    }
                }
                let top = (f64::from(len) * (1.0 + w.range_ratio)).floor();
                let top = top.clamp(1.0, f64::from(u32::MAX)) as u32;
                if top != len || w.range_ratio > 0.0 {
                    w.input_tokens = top;
                    w.range_ratio = 0.0;
                    match PromptSet::load_with(&w, tok, None, 1, 0) {
                        Ok(set) => keep(set.prompts.first()),
                        Err(e) => push(e),
                    }
                }
            }
        }
    }
    (longest, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(dir: &std::path::Path, tokenizer: &str, extra: &str) -> Prepared {
        let mut data = String::new();
        for i in 0..5 {
            data.push_str(&format!("{{\"prompt\": \"line {i} of the dataset\"}}\n"));
        }
        std::fs::write(dir.join("data.jsonl"), data).unwrap();
        let sc = dir.join("s.yaml");
        std::fs::write(
            &sc,
            format!(
                "version: 1\nname: p\nendpoint:\n  base_url: sim\n  api: chat\nmodel: m\ntokenizer: {tokenizer}\n\
                 workload:\n  dataset: jsonl\n  path: data.jsonl\n  output_tokens: 4\n  \
                 requests_per_rung: 7\n{extra}load:\n  warmup_requests: 2\n  rates: [40]\n"
            ),
        )
        .unwrap();
        let l = crate::scenario::load(&sc).unwrap();
        prepare(&l, l.scenario.clone()).unwrap()
    }

    /// The set `prepare` keeps is the one the first rung would build: same prompts, same
    /// order, for the rung's count (cycling a short file included).
    #[test]
    fn keeps_the_first_rungs_file_prompts_as_the_rung_builds_them() {
        let t = tempfile::tempdir().unwrap();
        let p = prepared(t.path(), "none", "");
        let first = p.first_prompts.expect("a file dataset's prompts are kept");
        assert_eq!(first.count, 9);
        assert_eq!(first.workload, p.scenario.workload);
        let built = PromptSet::load_with(
            &p.scenario.workload,
            Tokens::Absent,
            p.dataset_path.as_deref(),
            9,
            0,
        )
        .unwrap();
        let text =
            |s: &PromptSet| -> Vec<String> { s.prompts.iter().map(|p| p.text.clone()).collect() };
        assert_eq!(first.set.prompts.len(), 9);
        assert_eq!(text(&first.set), text(&built));
        assert_eq!(first.set.notes, built.notes);
    }

    /// `tokenizer: server` counts once the server is reached, and a session rung builds
    /// conversations: neither keeps the uncounted set.
    #[test]
    fn keeps_nothing_the_rung_would_not_send() {
        let t = tempfile::tempdir().unwrap();
        assert!(prepared(t.path(), "server", "").first_prompts.is_none());
        let sessions = "  sessions:\n    turns: 2\n";
        assert!(prepared(t.path(), "none", sessions).first_prompts.is_none());
    }
}
