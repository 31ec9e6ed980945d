//! From a prepared scenario to a server ready for load: the API key, the client and its
//! redactors, the built-in simulator when asked for, the server-metrics scrape, preflight,
//! the server's own tokenizer (`tokenizer: server`) and the longest-prompt probe.

use std::sync::Arc;

use super::overhead::OverheadError;
use super::{check_fd_limit, PreflightFailure, RunContext, RunError, ScenarioError};
use super::{environment, limits, overhead, preflight, prepare, sim_host, warnings};
use crate::client::{ApiKey, Client, ClientConfig};
use crate::scenario::{
    types::{Api, InputLength},
    Scenario,
};
use crate::servermetrics::ScrapeSetup;
use crate::sim::SimConfig;
use crate::tokens::{self, ServerTokens, SourceKind, Tokenizer, TokenizerSource};
use crate::workload::{Prompt, Tokens};

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

/// The short probe's counts by ladder and by the server (`server_count`), where a local
/// tokenizer counted the same kind of request the longest prompt is (one text: no images,
/// no batch, not a rerank pair), for the tokenizer check of `probe_longest`.
fn short_counts(
    scenario: &Scenario,
    tokenizer: Option<&Arc<Tokenizer>>,
    server_count: Option<u32>,
    longest: Option<&Prompt>,
) -> Option<(u32, u32)> {
    match (tokenizer, server_count, longest) {
        (Some(t), Some(server_count), Some(p))
            if p.images.is_empty()
                && p.batch.is_empty()
                && scenario.endpoint.api != Api::Rerank =>
        {
            Some((tokens::count(t, preflight::PROBE_TEXT), server_count))
        }
        _ => None,
    }
}

/// Everything up to the first rung; an error here has sent no load.
pub(super) async fn connect(
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    tokenizer: Option<&Arc<Tokenizer>>,
    mut tokenizer_source: TokenizerSource,
    sim: Option<SimConfig>,
    longest_prompt: Option<Prompt>,
) -> Result<Connected, RunError> {
    let quiet = ctx.opts.quiet;
    // Lines may hold server text (warnings naming its answers): shown, never obeyed.
    let say = |line: &str| {
        if !quiet {
            ctx.opts.notes.err(&crate::escape::terminal::line(line));
        }
    };
    let api_key = api_key(scenario, &say);
    // A local tokenizer.json's hash; the server's tokenizer gets a fingerprint once reached;
    // `tokenizer: none` has none.
    let mut tokenizer_sha256 = if tokenizer_source.is_local() {
        let path = &tokenizer_source.path;
        environment::sha256_file(path).map_err(|source| ScenarioError::Tokenizer {
            path: path.clone(),
            source,
        })?
    } else {
        String::new()
    };
    // The built-in simulator, when asked for, lives as long as the run keeps `Connected`.
    let (sim_server, base_url) = match sim {
        Some(cfg) => {
            let host = sim_host::SimHost::start(cfg).map_err(PreflightFailure::Simulator)?;
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
    let ClientSetup {
        client,
        endpoint,
        mut early_warnings,
        own,
        env_values,
    } = ClientSetup::make(ctx, scenario, tokenizer, &base_url, api_key.as_ref(), &say)?;
    let (scrape, scrape_warning) = warnings::scrape_or_warning(
        ScrapeSetup::new(
            scenario.server_metrics.as_ref(),
            &base_url,
            api_key.as_ref(),
            client.redactor(),
            |u| {
                own.redact(&environment::shown_url(u, &env_values))
                    .into_owned()
            },
        ),
        |e| own.redact(e).into_owned(),
    );
    if let Some(w) = scrape_warning {
        say(&format!("warning: {w}"));
        early_warnings.push(w);
    }
    let server = Server {
        client: &client,
        scenario,
        has_key: api_key.is_some(),
        own: &own,
        say: &say,
    };
    let (served_models, short_probe) = server.preflight(&endpoint, &mut early_warnings).await?;
    // `tokenizer: server`: from here on the server counts the prompts.
    let (server_tokens, longest_prompt) = if tokenizer_source.kind == SourceKind::Server {
        let counted = server.tokenizer(ctx).await?;
        tokenizer_sha256 = counted.fingerprint;
        tokenizer_source.tokenize_api = Some(counted.counter.api_name().to_string());
        (Some(counted.counter), counted.longest_prompt)
    } else {
        (None, longest_prompt)
    };
    let short = short_counts(scenario, tokenizer, short_probe, longest_prompt.as_ref());
    let overhead = match &longest_prompt {
        Some(p) => {
            server
                .probe_longest(p, served_models.as_deref(), short, &mut early_warnings)
                .await?
        }
        None => overhead::Overhead::default(),
    };
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

/// The key: read from the named variable, never printed or written. An unset (or empty)
/// variable sends no key: local servers often take none. Preflight is the guard: a server
/// that wants one answers 401 there, and the error names the unset variable.
fn api_key(scenario: &Scenario, say: &dyn Fn(&str)) -> Option<ApiKey> {
    let var = scenario.endpoint.api_key_env.as_ref()?;
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(ApiKey::new(v)),
        _ => {
            say(&format!(
                "note: ${var} is not set: sending no API key (preflight fails if the server wants one)"
            ));
            None
        }
    }
}

/// The client with every secret the run knows in its redactor, and what the run shows of
/// the endpoint.
struct ClientSetup {
    client: Arc<Client>,
    /// The endpoint as run.json shows it (`sim`, or the base URL without secrets).
    endpoint: String,
    /// Warnings said so far (secrets that cannot be scrubbed, the client's own).
    early_warnings: Vec<String>,
    /// Scrubs the user's own text (endpoint, scenario) of the secrets it can do so without
    /// changing meaning; the client's redactor already scrubs all server replies.
    own: crate::client::Redactor,
    /// Values from the environment: secrets.
    env_values: Vec<String>,
}

impl ClientSetup {
    fn make(
        ctx: &RunContext<'_>,
        scenario: &Scenario,
        tokenizer: Option<&Arc<Tokenizer>>,
        base_url: &str,
        api_key: Option<&ApiKey>,
        say: &dyn Fn(&str),
    ) -> Result<ClientSetup, RunError> {
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
            base_url: base_url.to_string(),
            api: scenario.endpoint.api,
            api_key: api_key.cloned(),
            model: scenario.model.primary().to_string(),
            request_timeout: scenario.endpoint.request_timeout.0,
            ttft_timeout: scenario.endpoint.ttft_timeout.map(|d| d.0),
            headers: scenario.endpoint.headers.clone(),
            ignore_eos: scenario.workload.ignore_eos,
            max_connections,
            extra_body: scenario.endpoint.extra_body.clone(),
        })
        .map_err(PreflightFailure::Client)?;
        // Outputs without usage are re-tokenized locally; with no local tokenizer their token
        // chunks are counted.
        let client = match tokenizer {
            Some(tok) => {
                let tok = Arc::clone(tok);
                client.with_token_counter(Arc::new(move |text: &str| tokens::count(&tok, text)))
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
        let endpoint = if scenario.endpoint.base_url == "sim" {
            "sim".to_string()
        } else {
            shown
                .own
                .redact(&environment::shown_url(base_url, &env_values))
                .into_owned()
        };
        Ok(ClientSetup {
            client: Arc::new(client),
            endpoint,
            early_warnings,
            own: shown.own,
            env_values,
        })
    }
}

/// The server as preflight asks it: through the run's client, its errors scrubbed of the
/// user's secrets, its progress said on the terminal.
struct Server<'a> {
    client: &'a Arc<Client>,
    scenario: &'a Scenario,
    /// An API key is sent.
    has_key: bool,
    own: &'a crate::client::Redactor,
    say: &'a dyn Fn(&str),
}

/// `tokenizer: server`: the server's counter, its fingerprint, and the longest prompt by
/// its count.
struct ServerCounted {
    counter: ServerTokens,
    fingerprint: String,
    longest_prompt: Option<Prompt>,
}

impl Server<'_> {
    fn refused(&self, e: impl std::fmt::Display) -> RunError {
        PreflightFailure::Server {
            redacted: self.own.redact(&e.to_string()).into_owned(),
        }
        .into()
    }

    /// Preflight of the model (and of a mix's other models): their warnings are said and
    /// added to `early_warnings`; returns the models the server lists.
    async fn preflight(
        &self,
        endpoint: &str,
        early_warnings: &mut Vec<String>,
    ) -> Result<(Option<Vec<String>>, Option<u32>), RunError> {
        let (scenario, say) = (self.scenario, self.say);
        let key_env = scenario.endpoint.api_key_env.as_deref();
        say(&format!("preflight: {endpoint}"));
        let report =
            preflight::preflight(self.client, scenario.model.primary(), key_env, self.has_key)
                .await
                .map_err(|e| self.refused(e))?;
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
                self.client,
                others,
                report.probe_prompt_tokens,
                report.served_models.as_deref(),
                key_env,
                self.has_key,
            )
            .await
            .map_err(|e| self.refused(e))?;
            say(&format!(
                "preflight ok: the mix's other models answered too ({})",
                others.join(", ")
            ));
        }
        for w in report.warnings.iter().chain(&mix_warnings) {
            let w = self.own.redact(w).into_owned();
            say(&format!("warning: {w}"));
            early_warnings.push(w);
        }
        Ok((report.served_models, report.probe_prompt_tokens))
    }

    /// `tokenizer: server`: reach the server's tokenizer and check the prompts by its count.
    async fn tokenizer(&self, ctx: &RunContext<'_>) -> Result<ServerCounted, RunError> {
        let (counter, fingerprint) = ServerTokens::connect(self.client.clone())
            .await
            .map_err(|e| self.refused(e))?;
        (self.say)(&format!(
            "preflight ok: {} ({} shape) counts the prompts",
            self.client.tokenize_url(),
            counter.api_name()
        ));
        let mut found = Vec::new();
        let longest_prompt = prepare::check_prompts(
            self.scenario,
            Tokens::Server(&counter),
            ctx.dataset_path.as_deref(),
            &mut found,
        );
        if !found.is_empty() {
            let why: Vec<String> = found.iter().map(|f| f.message.clone()).collect();
            let redacted = self.own.redact(&why.join("; ")).into_owned();
            return Err(ScenarioError::ServerCounted { redacted }.into());
        }
        Ok(ServerCounted {
            counter,
            fingerprint,
            longest_prompt,
        })
    }

    /// Send the longest prompt once; the prompt overhead it shows (the server's count
    /// against ladder's). With `short`, the short probe's counts (ladder's, the server's): an
    /// overhead that grows with the prompt is a tokenizer mismatch, warned about (and kept in
    /// `warnings`) instead of the overhead's note.
    async fn probe_longest(
        &self,
        p: &Prompt,
        served_models: Option<&[String]>,
        short: Option<(u32, u32)>,
        warnings: &mut Vec<String>,
    ) -> Result<overhead::Overhead, RunError> {
        let scenario = self.scenario;
        let long = preflight::probe_longest(
            self.client,
            scenario.model.primary(),
            served_models,
            &p.text,
            &p.batch,
            &p.images,
            p.input_tokens,
            scenario.endpoint.api_key_env.as_deref(),
            self.has_key,
        )
        .await
        .map_err(|e| self.refused(e))?;
        // `tokenizer: none` counted nothing: the length is the text's, in characters.
        let length = match p.input_tokens {
            0 => format!("{} characters", p.text.chars().count()),
            n => format!("{n} tokens"),
        };
        (self.say)(&format!(
            "preflight ok: the longest prompt ({length}{}) was accepted, TTFT {}",
            long.server_prompt_tokens
                .map(|n| format!(", {n} by the server's count"))
                .unwrap_or_default(),
            long.ttft
                .map(|t| format!("{:.0} ms", t.as_secs_f64() * 1000.0))
                .unwrap_or_else(|| "n/a".into()),
        ));
        let mut overhead = overhead::Overhead::default();
        // With nothing counted by ladder there is no overhead to tell from the server's count.
        if p.input_tokens > 0 {
            overhead = overhead::resolve(
                scenario.workload.input_length,
                scenario.workload.dataset == crate::scenario::Dataset::Random,
                p.input_tokens,
                long.server_prompt_tokens,
            )
            .map_err(PreflightFailure::from)?;
        }
        let mismatch = match (short, overhead.measured) {
            (Some(short), Some(long)) => overhead::grows_with_length(short, p.input_tokens, long),
            _ => None,
        };
        if let (Some(w), InputLength::Server) = (&mismatch, scenario.workload.input_length) {
            return Err(PreflightFailure::from(OverheadError::GrowsWithLength(w.clone())).into());
        }
        overhead.mismatch = mismatch.is_some();
        match (mismatch, &overhead.note) {
            (Some(w), _) => {
                (self.say)(&format!("warning: {w}"));
                warnings.push(w);
            }
            (None, Some(n)) => (self.say)(n),
            (None, None) => {}
        }
        Ok(overhead)
    }
}
