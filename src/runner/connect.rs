//! From a prepared scenario to a server ready for load: the API key, the client and its
//! redactors, the built-in simulator when asked for, the server-metrics scrape, preflight,
//! the server's own tokenizer (`tokenizer: server`) and the longest-prompt probe.

use std::sync::Arc;

use super::server_tokens::ServerTokens;
use super::{check_fd_limit, RunContext, RunError};
use super::{environment, limits, overhead, preflight, prepare, sim_host, warnings};
use crate::client::{ApiKey, Client, ClientConfig};
use crate::scenario::Scenario;
use crate::servermetrics::ScrapeSetup;
use crate::sim::SimConfig;
use crate::workload::tokenizer_source::{SourceKind, TokenizerSource};
use crate::workload::{self, Prompt, Tokenizer, Tokens};

/// A server that answered preflight, and what was learnt on the way.
pub(super) struct Connected {
    pub client: Arc<Client>,
    /// The endpoint as run.json shows it (`sim`, or the base URL without secrets).
    pub endpoint: String,
    /// Warnings said before the result folder exists (they go into its run.json too).
    pub early_warnings: Vec<String>,
    pub scrape: Option<ScrapeSetup>,
    /// `tokenizer: server`: the server's counter.
    pub server_tokens: Option<ServerTokens>,
    pub overhead: overhead::Overhead,
    pub tokenizer_sha256: String,
    pub tokenizer_source: TokenizerSource,
    /// The built-in simulator, when asked for: it serves as long as this lives.
    pub sim_server: Option<sim_host::SimHost>,
}

/// Everything up to the first rung; an error here has sent no load.
pub(super) async fn connect(
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    tokenizer: Option<&Arc<Tokenizer>>,
    mut tokenizer_source: TokenizerSource,
    sim: Option<SimConfig>,
    mut longest_prompt: Option<Prompt>,
) -> Result<Connected, RunError> {
    let quiet = ctx.opts.quiet;
    // Lines may hold server text (warnings naming its answers): shown, never obeyed.
    let say = |line: &str| {
        if !quiet {
            ctx.opts.notes.err(&crate::escape::terminal::line(line));
        }
    };

    // The key: read from the named variable, never printed or written. An unset (or empty)
    // variable sends no key: local servers often take none. Preflight is the guard: a server
    // that wants one answers 401 there, and the error names the unset variable.
    let api_key = match &scenario.endpoint.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.is_empty() => Some(ApiKey::new(v)),
            _ => {
                say(&format!(
                    "note: ${var} is not set: sending no API key (preflight fails if the server wants one)"
                ));
                None
            }
        },
        None => None,
    };

    // A local tokenizer.json's hash; the server's tokenizer gets a fingerprint once reached;
    // `tokenizer: none` has none.
    let mut tokenizer_sha256 = if tokenizer_source.is_local() {
        let path = &tokenizer_source.path;
        environment::sha256_file(path)
            .map_err(|e| RunError::Scenario(format!("{}: {e}", path.display())))?
    } else {
        String::new()
    };

    // The built-in simulator, when asked for, lives as long as this function.
    let (sim_server, base_url) = match sim {
        Some(cfg) => {
            let host = sim_host::SimHost::start(cfg).map_err(|e| {
                RunError::Preflight(format!("cannot start the built-in simulator: {e}"))
            })?;
            let url = host.base_url();
            say(&format!("started the built-in simulator at {url}"));
            (Some(host), url)
        }
        None => (None, scenario.endpoint.base_url.clone()),
    };
    check_fd_limit(
        scenario,
        ctx.trace.as_ref().map(|r| r.trace.lines.len() as u64),
        &say,
    )?;

    let max_connections = match scenario.load.concurrency.iter().max() {
        Some(&users) => users as usize,
        None => scenario
            .load
            .max_concurrency
            .map(|c| c as usize)
            .unwrap_or(1024),
    };
    // Under a low open-file limit, connections left idle after a rung must not hold the
    // descriptors the results files need.
    let max_connections = limits::idle_connections(max_connections);
    let client = Client::new(ClientConfig {
        base_url: base_url.clone(),
        api: scenario.endpoint.api,
        api_key: api_key.clone(),
        model: scenario.model.primary().to_string(),
        request_timeout: scenario.endpoint.request_timeout.0,
        ttft_timeout: scenario.endpoint.ttft_timeout.map(|d| d.0),
        headers: scenario.endpoint.headers.clone(),
        ignore_eos: scenario.workload.ignore_eos,
        max_connections,
        extra_body: scenario.endpoint.extra_body.clone(),
    })
    .map_err(|e| RunError::Preflight(e.to_string()))?;
    // Outputs without usage are re-tokenized locally; with no local tokenizer their token
    // chunks are counted.
    let client = match tokenizer {
        Some(tok) => {
            let tok = Arc::clone(tok);
            client.with_token_counter(Arc::new(move |text: &str| {
                workload::count_tokens(&tok, text)
            }))
        }
        None => client,
    };
    // Every secret the run knows goes into the one redactor: the keys, secret headers and
    // body fields, values from the environment, and the metrics page's own key and URL.
    let client = client
        .with_secret_headers(&scenario.endpoint.headers, &ctx.env_headers)
        .with_secrets(environment::scenario_secrets(
            &scenario.endpoint.extra_body,
            &ctx.env_body,
            &ctx.env_secrets,
        ))
        .with_secrets(ScrapeSetup::secrets(scenario.server_metrics.as_ref()));
    let env_values = environment::env_values(&ctx.env_secrets);
    // `own` scrubs the user's own text (endpoint, scenario) of the secrets it can do so
    // without changing meaning; the client's redactor already scrubs all server replies.
    let shown = environment::redacted_scenario(
        scenario,
        &ctx.env_headers,
        &ctx.env_body,
        &ctx.env_secrets,
        client.redactor(),
    );
    let unreliable = environment::unreliable_warning(&shown.unreliable);
    // Warnings said before the result folder exists go into its run.json too (and from
    // there into summary.md and report.html).
    let mut early_warnings = Vec::new();
    if let Some(w) = &unreliable {
        say(&format!("warning: {w}"));
        early_warnings.push(w.to_string());
    }
    for w in client.warnings() {
        let w = shown.own.redact(w).into_owned();
        say(&format!("warning: {w}"));
        early_warnings.push(w);
    }
    let client = Arc::new(client);
    let endpoint = if scenario.endpoint.base_url == "sim" {
        "sim".to_string()
    } else {
        shown
            .own
            .redact(&environment::shown_url(&base_url, &env_values))
            .into_owned()
    };

    let (scrape, scrape_warning) = warnings::scrape_or_warning(
        ScrapeSetup::new(
            scenario.server_metrics.as_ref(),
            &base_url,
            api_key.as_ref(),
            client.redactor(),
            |u| {
                shown
                    .own
                    .redact(&environment::shown_url(u, &env_values))
                    .into_owned()
            },
        ),
        |e| shown.own.redact(e).into_owned(),
    );
    if let Some(w) = scrape_warning {
        say(&format!("warning: {w}"));
        early_warnings.push(w);
    }

    say(&format!("preflight: {endpoint}"));
    let report = preflight::preflight(
        &client,
        scenario.model.primary(),
        scenario.endpoint.api_key_env.as_deref(),
        api_key.is_some(),
    )
    .await
    .map_err(|e| RunError::Preflight(shown.own.redact(&e.to_string()).into_owned()))?;
    say(&format!(
        "preflight ok: model {} answered {} token(s), TTFT {}, E2E {:.0} ms",
        scenario.model,
        report.probe_output_tokens,
        report
            .probe_ttft
            .map(|t| format!("{:.0} ms", t.as_secs_f64() * 1000.0))
            .unwrap_or_else(|| "n/a".into()),
        report.probe_e2e.as_secs_f64() * 1000.0
    ));
    // A mix: every other name gets the same probe, and is refused the same way.
    let others = &scenario.model.names()[1..];
    let mut mix_warnings = Vec::new();
    if !others.is_empty() {
        mix_warnings = preflight::probe_other_models(
            &client,
            others,
            report.probe_prompt_tokens,
            report.served_models.as_deref(),
            scenario.endpoint.api_key_env.as_deref(),
            api_key.is_some(),
        )
        .await
        .map_err(|e| RunError::Preflight(shown.own.redact(&e.to_string()).into_owned()))?;
        say(&format!(
            "preflight ok: the mix's other models answered too ({})",
            others.join(", ")
        ));
    }
    for w in report.warnings.iter().chain(&mix_warnings) {
        let w = shown.own.redact(w).into_owned();
        say(&format!("warning: {w}"));
        early_warnings.push(w);
    }
    let mut overhead = overhead::Overhead {
        measured: None,
        shorten_by: 0,
        note: None,
    };
    // `tokenizer: server`: from here on the server counts the prompts.
    let server_tokens = if tokenizer_source.kind == SourceKind::Server {
        let (counter, fingerprint) = ServerTokens::connect(client.clone())
            .await
            .map_err(|e| RunError::Preflight(shown.own.redact(&e).into_owned()))?;
        say(&format!(
            "preflight ok: {} ({} shape) counts the prompts",
            client.tokenize_url(),
            counter.api_name()
        ));
        tokenizer_sha256 = fingerprint;
        tokenizer_source.tokenize_api = Some(counter.api_name().to_string());
        let mut found = Vec::new();
        longest_prompt = prepare::check_prompts(
            scenario,
            Tokens::Server(&counter),
            ctx.dataset_path.as_deref(),
            &mut found,
        );
        if !found.is_empty() {
            let why: Vec<String> = found.iter().map(|f| f.message.clone()).collect();
            return Err(RunError::Scenario(
                shown.own.redact(&why.join("; ")).into_owned(),
            ));
        }
        Some(counter)
    } else {
        None
    };
    if let Some(p) = &longest_prompt {
        let long = preflight::probe_longest(
            &client,
            scenario.model.primary(),
            report.served_models.as_deref(),
            &p.text,
            &p.batch,
            &p.images,
            p.input_tokens,
            scenario.endpoint.api_key_env.as_deref(),
            api_key.is_some(),
        )
        .await
        .map_err(|e| RunError::Preflight(shown.own.redact(&e.to_string()).into_owned()))?;
        // `tokenizer: none` counted nothing: the length is the text's, in characters.
        let length = match p.input_tokens {
            0 => format!("{} characters", p.text.chars().count()),
            n => format!("{n} tokens"),
        };
        say(&format!(
            "preflight ok: the longest prompt ({length}{}) was accepted, TTFT {}",
            long.server_prompt_tokens
                .map(|n| format!(", {n} by the server's count"))
                .unwrap_or_default(),
            long.ttft
                .map(|t| format!("{:.0} ms", t.as_secs_f64() * 1000.0))
                .unwrap_or_else(|| "n/a".into()),
        ));
        // With nothing counted by ladder there is no overhead to tell from the server's count.
        if p.input_tokens > 0 {
            overhead = overhead::resolve(
                scenario.workload.input_length,
                scenario.workload.dataset == crate::scenario::Dataset::Random,
                p.input_tokens,
                long.server_prompt_tokens,
            )
            .map_err(RunError::Preflight)?;
        }
        if let Some(n) = &overhead.note {
            say(n);
        }
    }

    Ok(Connected {
        client,
        endpoint,
        early_warnings,
        scrape,
        server_tokens,
        overhead,
        tokenizer_sha256,
        tokenizer_source,
        sim_server,
    })
}
