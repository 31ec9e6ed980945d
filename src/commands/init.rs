//! `ladder init`: a commented scenario from flags, or from a vLLM benchmark command line,
//! checked through the real loader before anything is written.

use std::path::PathBuf;

use crate::notes::Notes;
use crate::scenario::from_vllm;
use crate::scenario::init::{render, Draft};

/// Flags of `ladder init`. Each one overrides what `--from-vllm` converted.
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Convert a vLLM `benchmark_serving.py` / `vllm bench serve` command line, given as one
    /// quoted string (e.g. the seed guide's "$COMMON_ARGS"); `--request-rate` may repeat.
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    from_vllm: Option<String>,
    /// Scenario name (default: from the model name).
    #[arg(long)]
    name: Option<String>,
    /// Base URL up to, not including, /v1 (or `sim`).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// `completions` or `chat`.
    #[arg(long, value_parser = ["completions", "chat"])]
    api: Option<String>,
    /// Environment variable that holds the API key.
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// Served model name.
    #[arg(long)]
    model: Option<String>,
    /// Path to a tokenizer.json.
    #[arg(long, value_name = "PATH")]
    tokenizer: Option<String>,
    #[arg(long, value_name = "N")]
    input_tokens: Option<u32>,
    #[arg(long, value_name = "N")]
    output_tokens: Option<u32>,
    #[arg(long, value_name = "N")]
    requests_per_rung: Option<u32>,
    /// The ladder, e.g. --rates 5,10,20,30,40,50 (the seed's REQUEST_RATES loop).
    #[arg(long, value_delimiter = ',', value_name = "RATES")]
    rates: Option<Vec<f64>>,
    /// The light-load reference rung run first (default: 1 req/s, or half the first rate
    /// when that is lower; its cost is printed).
    #[arg(long, value_name = "RATE")]
    baseline_rate: Option<f64>,
    /// No baseline rung: the ladder starts at its first rate (`load.baseline_rate` is left
    /// commented out).
    #[arg(long, conflicts_with = "baseline_rate")]
    no_baseline: bool,
    /// Pause between rungs, e.g. 10s (the seed's `sleep 10`).
    #[arg(long, value_name = "DURATION")]
    cooldown: Option<String>,
    /// Write the scenario to this file instead of stdout.
    #[arg(long, short, value_name = "FILE.yaml")]
    out: Option<PathBuf>,
    /// Replace an existing --out file.
    #[arg(long)]
    force: bool,
}

fn apply(d: &mut Draft, a: &InitArgs) {
    let set = |slot: &mut String, v: &Option<String>| {
        if let Some(v) = v {
            *slot = v.clone();
        }
    };
    set(&mut d.base_url, &a.base_url);
    set(&mut d.api, &a.api);
    set(&mut d.model, &a.model);
    set(&mut d.tokenizer, &a.tokenizer);
    set(&mut d.cooldown, &a.cooldown);
    if a.model.is_some() && a.name.is_none() && a.from_vllm.is_none() {
        d.name = a.model.as_deref().map(name_of).unwrap_or_default();
    }
    set(&mut d.name, &a.name);
    if let Some(v) = &a.api_key_env {
        d.api_key_env = Some(v.clone());
    }
    if let Some(n) = a.input_tokens {
        d.input_tokens = n;
    }
    if let Some(n) = a.output_tokens {
        d.output_tokens = n;
    }
    if let Some(n) = a.requests_per_rung {
        d.requests_per_rung = n;
    }
    if let Some(r) = &a.rates {
        d.rates = r.clone();
    }
    if a.baseline_rate.is_some() {
        d.baseline_rate = a.baseline_rate;
    }
}

fn name_of(model: &str) -> String {
    let last = model.rsplit('/').find(|s| !s.is_empty()).unwrap_or(model);
    last.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// The baseline rung ladder adds before the rates (not given by the user): its requests
/// at its rate, how long that takes and its share of the run's sending time (cooldowns
/// aside), and how to drop it.
fn baseline_cost(d: &Draft) -> Option<String> {
    let b = d.baseline_rate.filter(|b| *b > 0.0)?;
    let n = f64::from(d.requests_per_rung);
    let base = n / b;
    let rungs: f64 = d.rates.iter().filter(|r| **r > 0.0).map(|r| n / r).sum();
    let share = 100.0 * base / (base + rungs);
    Some(format!(
        "load.baseline_rate: {} adds a light-load rung before the rates: {} requests at {} \
         req/s, about {:.0} s, {:.0} % of the run's sending time (the {} about \
         {:.0} s; cooldowns aside); drop it with --no-baseline (or delete the line), or make it \
         shorter with a higher --baseline-rate",
        crate::results::rate_label(b),
        d.requests_per_rung,
        crate::results::rate_label(b),
        base,
        share,
        match d.rates.len() {
            1 => "1 rate takes".to_string(),
            n => format!("{n} rates take"),
        },
        rungs
    ))
}

/// Values written as placeholders because neither the command line nor a flag gave them.
fn placeholders(d: &Draft, a: &InitArgs) -> Vec<String> {
    let def = Draft::default();
    let mut out = Vec::new();
    if d.model == def.model && a.model.is_none() {
        out.push(format!(
            "model: {} is a placeholder (no model given): edit it, or pass --model",
            d.model
        ));
    }
    if d.tokenizer == def.tokenizer && a.tokenizer.is_none() {
        out.push(format!(
            "tokenizer: {} is a placeholder (no tokenizer given): edit it, or pass --tokenizer",
            d.tokenizer
        ));
    }
    out
}

/// Why `ladder init` wrote nothing (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// `--out` names a file that exists, without `--force`.
    #[error("{} exists; pass --force to replace it", .0.display())]
    Exists(PathBuf),
    /// The vLLM command line could not be converted.
    #[error("--from-vllm: {0}")]
    FromVllm(from_vllm::FromVllmError),
    /// The settings make no valid scenario: `problems` are its lines (`key: message (hint)`),
    /// each said before this one.
    #[error("these settings do not make a valid scenario; nothing written")]
    Invalid { problems: Vec<String> },
    /// The folder of `--out` could not be made.
    #[error("cannot create the folder {}: {source}", dir.display())]
    Folder {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// `--out` could not be written.
    #[error("cannot write the scenario {}: {why}", path.display())]
    Write { path: PathBuf, why: String },
}

/// `ladder init`: the scenario on the output stream or in `--out` (said on the error stream,
/// with the conversion's notes and warnings); an error when the arguments do not make a
/// valid scenario or it cannot be written.
pub fn init(a: &InitArgs, notes: &Notes) -> Result<(), InitError> {
    // Refused first, before any note about the conversion: nothing would be written.
    if let Some(path) = a.out.as_ref().filter(|p| p.exists() && !a.force) {
        return Err(InitError::Exists(path.clone()));
    }
    let mut draft = Draft::default();
    if let Some(args) = &a.from_vllm {
        match from_vllm::convert(args) {
            Ok(c) => {
                for n in &c.notes {
                    notes.err(&format!("note: {n}"));
                }
                for u in &c.unmapped {
                    notes.err(&format!("warning: not converted: {u}"));
                }
                if !c.unexpanded.is_empty() {
                    notes.err(&format!(
                        "warning: --from-vllm holds {} unexpanded: the shell did not put the \
                         value in (single quotes keep it out); what it stood for is missing from \
                         the scenario. Use double quotes: --from-vllm \"{}\"",
                        c.unexpanded.join(", "),
                        c.unexpanded.join(" ")
                    ));
                }
                draft = c.draft;
            }
            Err(e) => return Err(InitError::FromVllm(e)),
        }
    } else {
        draft.origin = vec!["Written by `ladder init`.".into()];
    }
    apply(&mut draft, a);
    if a.rates.is_some() {
        // --rates makes a rate ladder, whatever the vLLM command was.
        draft.concurrency.clear();
    }
    if draft.rates.is_empty() && draft.concurrency.is_empty() {
        draft.rates = Draft::default().rates;
        draft.baseline_rate = a.baseline_rate.or(from_vllm::baseline_for(&draft.rates));
        notes.err(
            "note: no rates given: the seed guide's ladder 5,10,20,30,40,50 (or pass --rates)",
        );
    } else if a.rates.is_some() && a.baseline_rate.is_none() {
        // `--rates` with the default baseline: 1 req/s, or half the first rate when that is
        // lower (the help's promise; a baseline at or above the first rate is refused).
        draft.baseline_rate = from_vllm::baseline_for(&draft.rates);
    }
    if a.no_baseline {
        draft.baseline_rate = None;
    } else if a.baseline_rate.is_none() {
        if let Some(note) = baseline_cost(&draft) {
            notes.err(&format!("note: {note}"));
        }
    }
    for w in placeholders(&draft, a) {
        notes.err(&format!("warning: {w}"));
    }
    let text = render(&draft);

    // The text must pass `ladder validate` but for files that live where the scenario will
    // run (tokenizer, dataset): check it through the real loader before writing anything.
    let at = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("scenario.yaml"));
    let (_, diags) = crate::scenario::check_text(&at, &text, None);
    // Files and variables of the machine the scenario will run on are not this one's.
    let (local, problems): (Vec<_>, Vec<_>) = diags.iter().partition(|d| {
        d.key_path == "tokenizer"
            || d.key_path == "workload.path"
            || (d.key_path.starts_with("endpoint.headers") && d.message.ends_with("is not set"))
    });
    for d in &local {
        notes.err(&format!(
            "note: {}: {} (fine if it exists where the scenario runs)",
            d.key_path, d.message
        ));
    }
    if !problems.is_empty() {
        let problems = problems
            .iter()
            .map(|d| {
                let hint = d
                    .hint
                    .as_deref()
                    .map(|h| format!(" ({h})"))
                    .unwrap_or_default();
                format!("{}: {}{hint}", d.key_path, d.message)
            })
            .collect();
        return Err(InitError::Invalid { problems });
    }

    match &a.out {
        None => notes.out(&text),
        Some(path) => {
            // `-o loadtests/my.yaml` in a fresh repository: the folder is made, and said.
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            let made = parent.filter(|p| !p.exists());
            if let Some(dir) = made {
                std::fs::create_dir_all(dir).map_err(|source| InitError::Folder {
                    dir: dir.to_path_buf(),
                    source,
                })?;
            }
            if let Err(e) = crate::results::atomic_write(path, text.as_bytes()) {
                let why = match e {
                    crate::results::WriteError::Io { source, .. } => source.to_string(),
                    other => other.to_string(),
                };
                return Err(InitError::Write {
                    path: path.clone(),
                    why,
                });
            }
            let made = made
                .map(|d| format!(" (made the folder {})", d.display()))
                .unwrap_or_default();
            notes.err(&format!(
                "wrote {}{made}; next: ladder validate {0}",
                path.display()
            ));
        }
    }
    Ok(())
}
