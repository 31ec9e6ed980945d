//! `ladder init --from-vllm '<arguments>'`: a vLLM `benchmark_serving.py` / `vllm bench serve`
//! command line (such as the seed guide's `COMMON_ARGS` plus its `--request-rate` loop)
//! turned into a [`Draft`] scenario, naming every flag that has no equivalent.

use super::init::Draft;

/// The converted scenario, what was mapped with a remark, and what could not be mapped.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    pub draft: Draft,
    /// Mappings worth a word (`--backend openai-chat` → `api: chat`, ...).
    pub notes: Vec<String>,
    /// Flags with no ladder equivalent, as given.
    pub unmapped: Vec<String>,
    /// Shell variables left unexpanded in the arguments (`$COMMON_ARGS` inside single
    /// quotes), each once, the rate loop's `--request-rate $rate` aside (it has its note).
    pub unexpanded: Vec<String>,
}

/// Why a command line could not be converted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FromVllmError {
    #[error("cannot split the command line: {0} (check the quotes)")]
    Split(String),
    #[error("{flag} needs a value")]
    MissingValue { flag: String },
    #[error("{flag} {value}: {why}")]
    BadValue {
        flag: String,
        value: String,
        why: String,
    },
}

/// Flags that only change vLLM's own output or loading and mean nothing to ladder.
const IRRELEVANT: &[&str] = &[
    "--disable-tqdm",
    "--trust-remote-code",
    "--tokenizer-mode",
    "--save-result",
    "--save-detailed",
    "--append-result",
    "--result-dir",
    "--result-filename",
    "--metadata",
    "--percentile-metrics",
    "--metric-percentiles",
    "--ready-check-timeout-sec",
    "--request-id-prefix",
];

/// Flags without a value (the next word is not theirs).
const SWITCHES: &[&str] = &[
    "--disable-tqdm",
    "--trust-remote-code",
    "--save-result",
    "--save-detailed",
    "--append-result",
    "--ignore-eos",
    "--profile",
    "--use-beam-search",
    "--disable-shuffle",
];

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, FromVllmError> {
    value.parse().map_err(|_| FromVllmError::BadValue {
        flag: flag.into(),
        value: value.into(),
        why: if value.starts_with('$') {
            "a shell variable, not a number: paste the expanded value (for the rate loop, use --rates)"
                .into()
        } else {
            "not a number".into()
        },
    })
}

/// A scenario name from the model name: the last path segment, in the allowed characters.
fn name_from_model(model: &str) -> String {
    let last = model.rsplit('/').find(|s| !s.is_empty()).unwrap_or(model);
    let s: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(|c| c == '.' || c == '-').to_string();
    if s.is_empty() {
        "vllm-ladder".into()
    } else {
        format!("{s}-ladder")
    }
}

/// Convert `args` (the words after `python benchmark_serving.py` or `vllm bench serve`; a
/// leading program name is skipped). `--request-rate` may be given several times, or as a
/// comma list, to make a ladder.
pub fn convert(args: &str) -> Result<Conversion, FromVllmError> {
    // Backslash-newline is a line continuation in the shell scripts users paste from.
    let joined = args.replace("\\\r\n", " ").replace("\\\n", " ");
    let words = shell_words::split(&joined).map_err(|e| FromVllmError::Split(e.to_string()))?;
    let start = words.iter().position(|w| w.starts_with("--")).unwrap_or(0);
    let mut d = Draft {
        api_key_env: Some("OPENAI_API_KEY".into()),
        rates: Vec::new(),
        ..Draft::default()
    };
    let mut notes = Vec::new();
    let mut unmapped = Vec::new();
    let (mut host, mut port, mut base_url, mut endpoint) = (None, None, None, None);
    let (mut model, mut served) = (None::<String>, None::<String>);
    let mut tokenizer = None::<String>;
    let mut goodput = Vec::new();
    let mut infinite_rate = false;

    let mut i = start;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        if !word.starts_with("--") {
            unmapped.push(word.clone());
            continue;
        }
        let (flag, inline) = match word.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (word.clone(), None),
        };
        let takes_value = !SWITCHES.contains(&flag.as_str());
        let value = if !takes_value {
            String::new()
        } else if let Some(v) = inline {
            v
        } else if i < words.len() && !words[i].starts_with("--") {
            i += 1;
            words[i - 1].clone()
        } else {
            return Err(FromVllmError::MissingValue { flag });
        };
        // Words up to the next flag: vLLM's `nargs="+"` flags (`--goodput ttft:500 tpot:50`).
        let mut extra = Vec::new();
        while takes_value && i < words.len() && !words[i].starts_with("--") {
            extra.push(words[i].clone());
            i += 1;
        }
        if flag == "--goodput" {
            goodput.push(value.clone());
            goodput.append(&mut extra);
        } else if !extra.is_empty() && !IRRELEVANT.contains(&flag.as_str()) {
            // Words after a secret's flag may be the secret (a value split or moved): counted,
            // not shown; after any other flag its value says where they were.
            unmapped.push(match flag.as_str() {
                "--api-key" | "--header" => format!(
                    "{} more word(s) after {flag} (not shown: they may be a secret)",
                    extra.len()
                ),
                _ => format!("{} (after {flag} {value})", extra.join(" ")),
            });
        }
        let v = value.as_str();
        match flag.as_str() {
            "--backend" => match v {
                "openai" | "vllm" | "lmdeploy" | "sglang" | "llama.cpp" | "scalellm" => {
                    d.api = "completions".into()
                }
                "openai-chat" | "vllm-chat" => {
                    d.api = "chat".into();
                    notes.push(format!("--backend {v} → api: chat"));
                }
                other => {
                    pooling_refusal(&flag, other)?;
                    unmapped.push(format!(
                        "--backend {other} (not a backend ladder knows the API of; api: completions assumed)"
                    ))
                }
            },
            "--base-url" => base_url = Some(v.to_string()),
            "--host" => host = Some(v.to_string()),
            "--port" => port = Some(v.to_string()),
            "--endpoint" => endpoint = Some(v.to_string()),
            "--model" => model = Some(v.to_string()),
            "--served-model-name" => served = Some(v.to_string()),
            // `tokenizer:` takes what vLLM's --tokenizer takes: a tokenizer.json, a model
            // directory or a hub id (read from the Hugging Face cache), as written.
            "--tokenizer" => tokenizer = Some(v.trim_end_matches('/').to_string()),
            "--dataset-name" => match v {
                "random" => d.dataset = "random".into(),
                "sharegpt" => d.dataset = "sharegpt".into(),
                "custom" => {
                    d.dataset = "jsonl".into();
                    notes.push("--dataset-name custom → dataset: jsonl".into());
                }
                other => {
                    pooling_refusal(&flag, other)?;
                    unmapped.push(format!(
                        "--dataset-name {other} (ladder has random, sharegpt and jsonl)"
                    ))
                }
            },
            "--dataset-path" => d.dataset_path = Some(v.to_string()),
            "--random-input-len" | "--input-len" => d.input_tokens = number(&flag, v)?,
            "--random-output-len" | "--output-len" | "--sharegpt-output-len" => {
                d.output_tokens = number(&flag, v)?
            }
            "--random-range-ratio" => d.range_ratio = Some(number(&flag, v)?),
            "--num-prompts" => d.requests_per_rung = number(&flag, v)?,
            "--seed" => d.seed = number(&flag, v)?,
            "--ignore-eos" => d.ignore_eos = true,
            "--request-rate" => {
                if v.starts_with('$') {
                    // The seed's `for rate in ${REQUEST_RATES[@]}` loop body.
                    notes.push(format!(
                        "--request-rate {v} is the shell loop's variable: give the loop's rates with --rates"
                    ));
                    continue;
                }
                for part in v.split(',').filter(|p| !p.trim().is_empty()) {
                    let part = part.trim();
                    if part.eq_ignore_ascii_case("inf") {
                        // With --max-concurrency: the concurrency ladder (below).
                        infinite_rate = true;
                        continue;
                    }
                    let r: f64 = number(&flag, part)?;
                    if !(r.is_finite() && r > 0.0) {
                        return Err(FromVllmError::BadValue {
                            flag,
                            value: part.into(),
                            why: "a rate must be a positive number".into(),
                        });
                    }
                    d.rates.push(r);
                }
            }
            "--burstiness" => {
                let b: f64 = number(&flag, v)?;
                if b == 1.0 {
                    d.arrival = "poisson".into();
                } else {
                    d.arrival = "gamma".into();
                    d.burstiness = Some(b);
                }
            }
            "--max-concurrency" => d.max_concurrency = Some(number(&flag, v)?),
            "--goodput" => {}
            "--label" => d.description = Some(format!("vLLM benchmark label: {v}")),
            "--api-key" => notes.push(
                "--api-key is not written: ladder reads the key from $OPENAI_API_KEY (endpoint.api_key_env)"
                    .into(),
            ),
            // Header values often carry tokens: none is written; the scenario reads each
            // from an environment variable named after the header.
            "--header" => match v.split_once('=') {
                Some((k, _)) => {
                    let var = header_var(k);
                    notes.push(format!(
                        "--header {k}=…: the value is not written; the scenario reads it from ${var}"
                    ));
                    d.headers
                        .push((k.trim().to_string(), format!("{{{{ env.{var} }}}}")));
                }
                // Its value may be a token ("Authorization: Bearer …"): named, not shown.
                None => unmapped.push(format!(
                    "--header {}… (expected KEY=VALUE; the rest is not shown, it may be a secret)",
                    v.split([':', ' ', '\t']).next().unwrap_or_default()
                )),
            },
            f if IRRELEVANT.contains(&f) => {}
            _ => unmapped.push(if takes_value && !value.is_empty() {
                format!("{flag} {value}")
            } else {
                flag.clone()
            }),
        }
    }
    // vLLM's goodput takes further words after the flag (`--goodput ttft:500 tpot:50`).
    for g in goodput.iter().flat_map(|g| g.split_whitespace()) {
        let Some((k, v)) = g.split_once(':') else {
            unmapped.push(format!("--goodput {g}"));
            continue;
        };
        let ms: f64 = number("--goodput", v)?;
        match k {
            "ttft" => d.slo_ttft_ms = Some(ms),
            "tpot" => d.slo_tpot_ms = Some(ms),
            "e2el" => d.slo_e2e_ms = Some(ms),
            _ => unmapped.push(format!("--goodput {g}")),
        }
    }

    d.base_url = match (base_url, host, port) {
        (Some(b), _, _) => {
            let b = b.trim_end_matches('/');
            let b = b.strip_suffix("/v1").unwrap_or(b);
            b.to_string()
        }
        (None, h, p) => format!(
            "http://{}:{}",
            h.unwrap_or_else(|| "127.0.0.1".into()),
            p.unwrap_or_else(|| "8000".into())
        ),
    };
    if let Some(e) = endpoint {
        pooling_refusal("--endpoint", &e)?;
        if e.contains("chat") {
            d.api = "chat".into();
            notes.push(format!("--endpoint {e} → api: chat"));
        } else if !e.ends_with("/v1/completions") {
            unmapped.push(format!(
                "--endpoint {e} (ladder calls <base_url>/v1/completions or /v1/chat/completions)"
            ));
        }
    }
    // Without --tokenizer vLLM's client loads the tokenizer of --model (a hub id or a
    // directory), and so does ladder.
    match (tokenizer, &model) {
        (Some(t), _) => d.tokenizer = t,
        (None, Some(m)) => {
            d.tokenizer = m.trim_end_matches('/').to_string();
            notes.push(format!(
                "no --tokenizer: tokenizer: {} (the --model, as vLLM's client does)",
                d.tokenizer
            ));
        }
        (None, None) => {}
    }
    // The served name is what requests carry; --model is the path the server loaded.
    d.model = served.or(model).unwrap_or_else(|| "my-model".into());
    d.name = name_from_model(&d.model);
    // `--request-rate inf --max-concurrency N` (the seed guide's concurrency sweep, one N a
    // command): N users each sending as the last answer ends, ladder's concurrency ladder.
    if infinite_rate {
        match (d.rates.is_empty(), d.max_concurrency.take()) {
            (true, Some(n)) if n > 0 => {
                d.concurrency = vec![n];
                notes.push(format!(
                    "--request-rate inf --max-concurrency {n} → load.concurrency: [{n}] (a \
                     closed loop of {n} users; add more levels to the list for the sweep)"
                ));
            }
            (_, n) => {
                d.max_concurrency = n;
                unmapped.push(
                    "--request-rate inf (every request at once has no rate; give finite rates, \
                     or --max-concurrency N for a concurrency ladder)"
                        .into(),
                );
            }
        }
    }
    // No finite rate: left empty for the caller (`--rates`, or the seed's ladder).
    d.rates.sort_by(f64::total_cmp);
    d.rates.dedup();
    // A concurrency ladder's first level is its reference rung: no baseline rate.
    d.baseline_rate = if d.concurrency.is_empty() {
        baseline_for(&d.rates)
    } else {
        None
    };
    let unexpanded = unexpanded_vars(&words[start..]);
    d.origin = vec!["Converted by `ladder init --from-vllm` from:".into()];
    d.origin
        .extend(wrap(&redact_api_key(&words[start..]).join(" "), 88));
    Ok(Conversion {
        draft: d,
        notes,
        unmapped,
        unexpanded,
    })
}

/// `$NAME` and `${NAME}` in the words (the shell did not expand them), each once. Left out:
/// the value of `--request-rate` (the rate loop's variable, with its own note), values of
/// flags ladder ignores (`--result-dir $(dirname $RESULT_FILE)`) and `$( … )` substitutions.
fn unexpanded_vars(words: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_subst = false;
    for (i, w) in words.iter().enumerate() {
        let prev = if i > 0 { words[i - 1].as_str() } else { "" };
        let ignored_value = prev == "--request-rate" || IRRELEVANT.contains(&prev);
        let ignored_inline = w
            .split_once('=')
            .is_some_and(|(f, _)| f == "--request-rate" || IRRELEVANT.contains(&f));
        if w.starts_with("$(") || w.contains("=$(") {
            in_subst = true;
        }
        let skip = in_subst || ignored_value || ignored_inline;
        if in_subst && w.ends_with(')') {
            in_subst = false;
        }
        if skip {
            continue;
        }
        let mut rest = w.as_str();
        while let Some(at) = rest.find('$') {
            let after = &rest[at + 1..];
            let (braced, body) = match after.strip_prefix('{') {
                Some(b) => (true, b),
                None => (false, after),
            };
            let end = body
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(body.len());
            if end > 0 && !body.starts_with(|c: char| c.is_ascii_digit()) {
                let name = &body[..end];
                let shown = if braced {
                    format!("${{{name}}}")
                } else {
                    format!("${name}")
                };
                if !out.contains(&shown) {
                    out.push(shown);
                }
            }
            rest = &body[end..];
        }
    }
    out
}

/// A vLLM benchmark of a pooling endpoint (embeddings, rerank / score), named by its
/// backend, dataset or endpoint: ladder measures those with `api: embeddings` / `api: rerank`
/// (docs/endpoints.md), whose workload (batch size, query and document lengths) this
/// conversion does not write. Refused rather than turned into a completions ladder, which
/// would measure another endpoint.
fn pooling_refusal(flag: &str, word: &str) -> Result<(), FromVllmError> {
    let w = word.to_ascii_lowercase();
    let (api, example) = if w.contains("embed") {
        ("embeddings", "scenarios/embeddings.yaml")
    } else if w.contains("rerank") || w.contains("score") {
        ("rerank", "scenarios/rerank.yaml")
    } else {
        return Ok(());
    };
    let why = format!(
        "a vLLM {api} benchmark: ladder measures it with `api: {api}` (docs/endpoints.md), \
         which `ladder init --from-vllm` does not write; start from {example} and set \
         base_url, model, tokenizer and the lengths there (converting it to completions would \
         measure another endpoint)"
    );
    Err(FromVllmError::BadValue {
        flag: flag.into(),
        value: word.into(),
        why,
    })
}

/// The seed guide's baseline: a rung at 1 req/s, or half the first rate when that is lower.
pub fn baseline_for(rates: &[f64]) -> Option<f64> {
    match rates.first() {
        Some(&first) if first > 1.0 => Some(1.0),
        Some(&first) => Some(first / 2.0),
        None => Some(1.0),
    }
}

/// The environment variable a `--header NAME=…` value is read from: `LADDER_HEADER_NAME`.
fn header_var(name: &str) -> String {
    format!(
        "LADDER_HEADER_{}",
        super::identity::env_name_form(name.trim())
    )
}

/// The words with every `--api-key` and `--header` value replaced, so the command line can
/// be quoted in the file.
fn redact_api_key(words: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    // The secret flag whose words are being hidden, and whether its first word was seen:
    // every word up to the next flag is hidden (a value may be split over words).
    let mut hide: Option<(&str, bool)> = None;
    for w in words {
        if let Some((flag, seen)) = hide.filter(|_| !w.starts_with("--")) {
            out.push(match (flag, seen, w.split_once('=')) {
                ("--header", false, Some((k, _))) => {
                    format!("{}=<redacted>", shell_words::quote(k))
                }
                _ => "<redacted>".into(),
            });
            hide = Some((flag, true));
            continue;
        }
        hide = None;
        if w == "--api-key" || w == "--header" {
            out.push(w.clone());
            hide = Some((
                if w == "--api-key" {
                    "--api-key"
                } else {
                    "--header"
                },
                false,
            ));
        } else if w.starts_with("--api-key=") {
            out.push("--api-key=<redacted>".into());
            hide = Some(("--api-key", true));
        } else if let Some(h) = w.strip_prefix("--header=") {
            let k = h.split_once('=').map_or(h, |(k, _)| k);
            out.push(format!("--header={}=<redacted>", shell_words::quote(k)));
            hide = Some(("--header", true));
        } else {
            out.push(shell_words::quote(w).into_owned());
        }
    }
    out
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for w in text.split(' ') {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.len() + 1 + w.len() > width {
            lines.push(format!("  {w}"));
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(w);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_with_equals_and_switches_and_unknowns() {
        let c = convert(
            "vllm bench serve --backend=openai-chat --host h --port 9 --model /m/Qwen2.5-7B \
             --random-input-len=64 --ignore-eos --profile --request-rate 2,4 --request-rate 8 \
             --burstiness 0.5 --goodput ttft:500 tpot:50 --frobnicate 3 --api-key sk-zzz",
        )
        .unwrap();
        let d = &c.draft;
        assert_eq!(d.api, "chat");
        assert_eq!(d.base_url, "http://h:9");
        assert_eq!(d.model, "/m/Qwen2.5-7B");
        assert_eq!(d.name, "qwen2.5-7b-ladder");
        assert_eq!(d.input_tokens, 64);
        assert_eq!(d.rates, vec![2.0, 4.0, 8.0]);
        assert_eq!(d.baseline_rate, Some(1.0));
        assert_eq!((d.arrival.as_str(), d.burstiness), ("gamma", Some(0.5)));
        assert_eq!((d.slo_ttft_ms, d.slo_tpot_ms), (Some(500.0), Some(50.0)));
        assert_eq!(c.unmapped, vec!["--profile", "--frobnicate 3"]);
        assert!(!d.origin.join(" ").contains("sk-zzz"), "{:?}", d.origin);
    }

    #[test]
    fn tokenizer_is_kept_as_written_or_taken_from_the_model() {
        // A hub id stays a hub id (found in the Hugging Face cache), not `Org/Name/tokenizer.json`.
        let c = convert("--model /m/x --tokenizer Qwen/Qwen2.5-7B-Instruct").unwrap();
        assert_eq!(c.draft.tokenizer, "Qwen/Qwen2.5-7B-Instruct");
        let c = convert("--model m --tokenizer /models/R1-70B/").unwrap();
        assert_eq!(c.draft.tokenizer, "/models/R1-70B");
        let c = convert("--model m --tokenizer /t/tokenizer.json").unwrap();
        assert_eq!(c.draft.tokenizer, "/t/tokenizer.json");
        // Without --tokenizer, the model's, as vLLM's client loads it; said in a note.
        let c = convert("--model Qwen/Qwen2.5-7B-Instruct --served-model-name q").unwrap();
        assert_eq!(c.draft.tokenizer, "Qwen/Qwen2.5-7B-Instruct");
        assert_eq!(c.draft.model, "q");
        assert!(
            c.notes.iter().any(|n| n.contains("no --tokenizer")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn header_values_are_never_written_only_read_from_the_environment() {
        let c = convert("--model m --header Authorization=Bearer-tok-991 --header=X-Trace=abc")
            .unwrap();
        assert_eq!(
            c.draft.headers,
            vec![
                (
                    "Authorization".to_string(),
                    "{{ env.LADDER_HEADER_AUTHORIZATION }}".to_string()
                ),
                (
                    "X-Trace".to_string(),
                    "{{ env.LADDER_HEADER_X_TRACE }}".to_string()
                ),
            ]
        );
        let origin = c.draft.origin.join(" ");
        assert!(
            !origin.contains("tok-991") && !origin.contains("abc"),
            "{origin}"
        );
        assert!(origin.contains("Authorization=<redacted>"), "{origin}");
    }

    /// Stray words after `--api-key` or `--header`, and a header written `NAME: VALUE`, are
    /// named in the "not converted" list without the secret next to them (was: "x (after
    /// --api-key sk-…)").
    #[test]
    fn words_left_over_never_show_the_key_or_a_header_value() {
        let c = convert(
            "--model m --api-key sk-stray-5521 stray --header X-Key=hv-stray-7731 more \
             --header 'Authorization: Bearer tok-colon-4417'",
        )
        .unwrap();
        let all = c.unmapped.join(" | ");
        for secret in ["sk-stray-5521", "hv-stray-7731", "tok-colon-4417", "Bearer"] {
            assert!(!all.contains(secret), "{secret}: {all}");
        }
        assert_eq!(
            c.unmapped,
            vec![
                "1 more word(s) after --api-key (not shown: they may be a secret)",
                "1 more word(s) after --header (not shown: they may be a secret)",
                "--header Authorization… (expected KEY=VALUE; the rest is not shown, it may be a secret)",
            ]
        );
        // The comment of the written file hides every word after a secret's flag.
        let c =
            convert("--model m --header X-Key hv-moved-3318 --api-key sk a-split-9921 --seed 1")
                .unwrap();
        let origin = c.draft.origin.join(" ");
        for secret in ["hv-moved-3318", "a-split-9921"] {
            assert!(!origin.contains(secret), "{secret}: {origin}");
        }
        assert!(origin.contains("--seed 1"), "{origin}");
    }

    /// A line break inside a pasted argument must not end the `# Converted … from:` comment:
    /// the written file has the same keys as without it, and every line of the command
    /// line is a comment line.
    #[test]
    fn a_line_break_in_the_command_line_stays_inside_the_comment() {
        let c = convert(
            "--model m --request-rate 5 --label 'x\nname: injected\rmodel: pwned\u{2028}gate: []'",
        )
        .unwrap();
        let text = crate::scenario::init::render(&c.draft);
        // (The label also lands in `description:`, a quoted scalar.)
        for line in text.lines() {
            for key in ["name: injected", "model: pwned", "gate: []"] {
                assert!(
                    !line.starts_with(key),
                    "{line:?} escaped the comment:\n{text}"
                );
            }
        }
        assert!(text.contains("\n# name: injected\n"), "{text}");
        let (loaded, diags) =
            crate::scenario::check_text(std::path::Path::new("converted.yaml"), &text, None);
        let loaded = loaded.unwrap_or_else(|| panic!("{diags:?}\n{text}"));
        assert_eq!(loaded.scenario.name, c.draft.name);
        assert_eq!(loaded.scenario.model, "m");
    }

    #[test]
    fn a_shell_variable_or_missing_value_is_an_error_not_a_guess() {
        let c = convert("--model m --request-rate $rate --num-prompts 10").unwrap();
        assert!(
            c.unexpanded.is_empty(),
            "the loop's variable has its own note"
        );
        let q = convert(
            "--backend vllm $COMMON_ARGS --model ${MODEL} --request-rate $rate \
             --result-dir $(dirname $RESULT_FILE) --result-filename=$(basename $F)",
        )
        .unwrap();
        assert_eq!(q.unexpanded, vec!["$COMMON_ARGS", "${MODEL}"]);
        assert!(c.draft.rates.is_empty());
        assert!(
            c.notes.iter().any(|n| n.contains("--rates")),
            "{:?}",
            c.notes
        );
        let e = convert("--model m --num-prompts $N").unwrap_err();
        assert!(e.to_string().contains("shell variable"), "{e}");
        assert_eq!(
            convert("--model").unwrap_err(),
            FromVllmError::MissingValue {
                flag: "--model".into()
            }
        );
        assert!(matches!(
            convert("--model 'unclosed"),
            Err(FromVllmError::Split(_))
        ));
    }

    /// vLLM's concurrency sweep (`--request-rate inf --max-concurrency N`, the seed guide's
    /// second loop) is a closed loop of N users: `load.concurrency: [N]`, no baseline rate,
    /// and the written file loads. Without --max-concurrency an infinite rate has no
    /// equivalent and is named.
    #[test]
    fn an_infinite_rate_with_a_concurrency_cap_is_a_concurrency_ladder() {
        let c = convert(
            "--model m --tokenizer t.json --request-rate inf --max-concurrency 4 --num-prompts 50",
        )
        .unwrap();
        assert_eq!(c.draft.concurrency, vec![4]);
        assert!(c.draft.rates.is_empty());
        assert_eq!(
            (c.draft.baseline_rate, c.draft.max_concurrency),
            (None, None)
        );
        assert!(c.unmapped.is_empty(), "{:?}", c.unmapped);
        assert!(
            c.notes.iter().any(|n| n.contains("load.concurrency: [4]")),
            "{:?}",
            c.notes
        );
        let text = super::super::init::render(&c.draft);
        assert!(text.contains("\n  concurrency: [4]"), "{text}");
        assert!(!text.contains("\n  rates:"), "{text}");
        let (loaded, diags) =
            crate::scenario::check_text(std::path::Path::new("converted.yaml"), &text, None);
        let loaded = loaded.unwrap_or_else(|| panic!("{diags:?}\n{text}"));
        assert_eq!(loaded.scenario.load.concurrency, vec![4]);
        let c = convert("--model m --request-rate inf").unwrap();
        assert!(c.draft.concurrency.is_empty());
        assert!(
            c.unmapped
                .iter()
                .any(|u| u.starts_with("--request-rate inf")),
            "{:?}",
            c.unmapped
        );
    }

    /// vLLM's embeddings and rerank benchmarks are refused, naming the API and the example
    /// to start from, by backend, dataset or endpoint: converted, they became completions
    /// ladders (exit 0) that measured another endpoint.
    #[test]
    fn pooling_benchmarks_are_refused_not_turned_into_completions() {
        for (cmd, api) in [
            (
                "--backend openai-embeddings --endpoint /v1/embeddings --model m --request-rate 2",
                "embeddings",
            ),
            (
                "--backend vllm-rerank --dataset-name random-rerank --model m --request-rate 2",
                "rerank",
            ),
            (
                "--model m --dataset-name random-rerank --request-rate 2",
                "rerank",
            ),
            (
                "--model m --endpoint /v1/embeddings --request-rate 2",
                "embeddings",
            ),
            ("--model m --endpoint /score --request-rate 2", "rerank"),
        ] {
            let e = convert(cmd).unwrap_err().to_string();
            assert!(e.contains(&format!("`api: {api}`")), "{cmd}: {e}");
            assert!(e.contains(&format!("scenarios/{api}.yaml")), "{cmd}: {e}");
        }
        // A text backend ladder does not know stays a completions guess, said as one.
        let c = convert("--backend tgi --model m --request-rate 2").unwrap();
        assert_eq!(c.draft.api, "completions");
        assert!(
            c.unmapped.iter().any(|u| u.contains("--backend tgi")),
            "{:?}",
            c.unmapped
        );
    }
}
