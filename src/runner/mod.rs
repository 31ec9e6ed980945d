//! Running a scenario: preflight, the rate ladder, rung dispatch, cancellation.

mod environment;
pub mod limits;
pub mod preflight;
pub mod prepare;
mod progress;
pub mod rung;
mod sim_host;
pub mod warnings;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;

use crate::client::{redact, ApiKey, Client, ClientConfig};
use crate::metrics::{analyze, summarize, RungContext, RungSummary};
use crate::results::{RunInfo, RunStatus, RunWriter, RESULTS_FORMAT_VERSION};
use crate::scenario::{Arrival, Scenario, SweepField};
use crate::workload::{self, PromptSet};

pub use prepare::{prepare, rung_seed, Prepared};
pub use progress::rung_table;

/// What `ladder run` (and `ladder gate`) asks the runner to do.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The scenario file.
    pub scenario_path: PathBuf,
    /// Results root; the run goes to `<out>/<scenario>/<timestamp>/`. Default `results`.
    pub out_dir: Option<PathBuf>,
    /// Replace the scenario's rates (the baseline rung is still run first).
    pub rates: Option<Vec<f64>>,
    /// No progress bars or tables.
    pub quiet: bool,
    /// Print a machine-readable summary on stdout instead of the table.
    pub json: bool,
}

/// A finished (complete or interrupted) run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The result folder written.
    pub dir: PathBuf,
    /// Its run.json as written.
    pub info: RunInfo,
    /// Rung summaries in run order.
    pub rungs: Vec<RungSummary>,
}

/// Why a run could not produce a usable result.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario is invalid (the message lists every problem with its location).
    #[error("{0}")]
    Scenario(String),
    /// Preflight failed: nothing was sent beyond the probe.
    #[error("preflight failed: {0}")]
    Preflight(String),
    /// The result folder could not be written.
    #[error("{0}")]
    Output(String),
    /// Stopped by a signal; finished rungs are in the folder.
    #[error("interrupted: {complete} of {total} rungs complete; partial results in {dir}")]
    Interrupted {
        dir: PathBuf,
        complete: usize,
        total: usize,
    },
}

/// Time requests in flight get to finish after Ctrl-C / SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Run a scenario without a sweep; see [`run_all`].
pub fn run(opts: &RunOptions) -> Result<RunOutcome, RunError> {
    let mut all = run_all(opts)?;
    if all.len() != 1 {
        return Err(RunError::Scenario(format!(
            "{} has a sweep ({} ladders); gate each value with its own scenario",
            opts.scenario_path.display(),
            all.len()
        )));
    }
    Ok(all.remove(0))
}

/// Run a scenario to completion (or interruption) and write one result folder per ladder
/// (one for a plain scenario, one per value for a sweep).
pub fn run_all(opts: &RunOptions) -> Result<Vec<RunOutcome>, RunError> {
    let loaded = crate::scenario::load(&opts.scenario_path)
        .map_err(|d| RunError::Scenario(d.to_string()))?;
    for note in &loaded.notes {
        eprintln!("note: {note}");
    }
    let mut scenario = loaded.scenario.clone();
    if let Some(rates) = &opts.rates {
        check_rates(rates)?;
        scenario.load.rates = rates.clone();
    }
    // Everything decidable without the network, as `ladder validate` checks it: nothing is
    // sent and no folder is made for a scenario that would fail later.
    let prepared = prepare(&loaded, scenario).map_err(|found| {
        RunError::Scenario(crate::scenario::Diagnostics(loaded.diagnose(&found)).to_string())
    })?;
    let ctx = RunContext { opts };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Output(format!("cannot start the async runtime: {e}")))?;
    rt.block_on(run_scenario(&ctx, prepared))
}

fn check_rates(rates: &[f64]) -> Result<(), RunError> {
    if rates.is_empty() {
        return Err(RunError::Scenario(
            "--rates needs at least one rate, e.g. --rates 5,10,20".into(),
        ));
    }
    if let Some(m) = rates
        .iter()
        .find_map(|r| crate::scenario::limits::rate_problem(*r))
    {
        return Err(RunError::Scenario(format!(
            "--rates: {m}\n  hint: e.g. --rates 5,10,20"
        )));
    }
    if rates.windows(2).any(|w| w[1] <= w[0]) {
        return Err(RunError::Scenario(
            "--rates must be strictly increasing, e.g. --rates 5,10,20".into(),
        ));
    }
    Ok(())
}

/// Raises the file-descriptor soft limit for the rung's connections, or stops before the
/// load when even the hard limit is too low for an explicit `max_concurrency`.
fn check_fd_limit(scenario: &Scenario, say: &dyn Fn(&str)) -> Result<(), RunError> {
    let per_rung =
        scenario.load.warmup_requests as u64 + scenario.workload.requests_per_rung as u64;
    let concurrency = scenario
        .load
        .max_concurrency
        .map(|c| (c as u64).min(per_rung))
        .unwrap_or(per_rung);
    let need = limits::fds_needed(concurrency, scenario.endpoint.base_url == "sim");
    match limits::ensure_fds(need) {
        Ok(limits::FdLimit::Enough) | Err(_) => Ok(()),
        Ok(limits::FdLimit::Raised { from, to }) => {
            say(&format!("raised the open-file limit from {from} to {to} for {concurrency} concurrent connections"));
            Ok(())
        }
        Ok(limits::FdLimit::TooLow { need, hard }) => match scenario.load.max_concurrency {
            Some(c) => Err(RunError::Preflight(format!(
                "load.max_concurrency {c} needs about {need} open files, but the hard limit is {hard}: \
                 raise it (`ulimit -n {need}` as a user allowed to, or LimitNOFILE= in a systemd unit) \
                 or lower max_concurrency"
            ))),
            None => {
                say(&format!(
                    "warning: up to {concurrency} requests may be in flight at once, needing about {need} open files, \
                     but the hard limit is {hard}; set load.max_concurrency below {} or raise the limit",
                    hard.saturating_sub(64)
                ));
                Ok(())
            }
        },
    }
}

struct RunContext<'a> {
    opts: &'a RunOptions,
}

/// Stop flag flipped by Ctrl-C or SIGTERM.
fn stop_signal() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = match signal(SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    let _ = tx.send(true);
                    return;
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        eprintln!(
            "\nstopping: no new requests; waiting up to {}s for requests in flight",
            STOP_GRACE.as_secs()
        );
        let _ = tx.send(true);
    });
    rx
}

/// The ladders a scenario asks for: itself, or one copy per sweep value.
fn expand_sweep(s: &Scenario) -> Vec<Scenario> {
    let Some(sweep) = &s.sweep else {
        return vec![s.clone()];
    };
    sweep
        .values
        .iter()
        .map(|&v| {
            let mut c = s.clone();
            let field = match sweep.field {
                SweepField::InputTokens => {
                    c.workload.input_tokens = v;
                    "input_tokens"
                }
                SweepField::OutputTokens => {
                    c.workload.output_tokens = v;
                    "output_tokens"
                }
            };
            c.name = format!("{}.{field}-{v}", s.name);
            c.sweep = None;
            c
        })
        .collect()
}

async fn run_scenario(
    ctx: &RunContext<'_>,
    prepared: Prepared,
) -> Result<Vec<RunOutcome>, RunError> {
    let quiet = ctx.opts.quiet;
    let say = |line: &str| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    let Prepared {
        scenario,
        tokenizer,
        tokenizer_path,
        dataset_path,
        sim,
    } = prepared;

    // The key: read from the named variable, never printed or written.
    let api_key = match &scenario.endpoint.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.is_empty() => Some(ApiKey::new(v)),
            _ => {
                return Err(RunError::Preflight(format!(
                    "${var} is not set: the scenario reads the API key from it; run `export {var}=<key>` first"
                )))
            }
        },
        None => None,
    };

    let tokenizer_sha256 = environment::sha256_file(&tokenizer_path)
        .map_err(|e| RunError::Scenario(format!("{}: {e}", tokenizer_path.display())))?;

    // The built-in simulator, when asked for, lives as long as this function.
    let (_sim, base_url) = match sim {
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
    check_fd_limit(&scenario, &say)?;

    let max_connections = scenario
        .load
        .max_concurrency
        .map(|c| c as usize)
        .unwrap_or(1024);
    let counter_tok = tokenizer.clone();
    let client = Client::new(ClientConfig {
        base_url: base_url.clone(),
        api: scenario.endpoint.api,
        api_key: api_key.clone(),
        model: scenario.model.clone(),
        request_timeout: scenario.endpoint.request_timeout.0,
        ttft_timeout: scenario.endpoint.ttft_timeout.map(|d| d.0),
        headers: scenario.endpoint.headers.clone(),
        ignore_eos: scenario.workload.ignore_eos,
        max_connections,
    })
    .map_err(|e| RunError::Preflight(e.to_string()))?
    .with_token_counter(Arc::new(move |text: &str| {
        workload::count_tokens(&counter_tok, text)
    }));
    for w in client.warnings() {
        say(&format!("warning: {w}"));
    }
    let client = Arc::new(client);

    say(&format!(
        "preflight: {}",
        environment::endpoint_label(&base_url)
    ));
    let report = preflight::preflight(
        &client,
        &scenario.model,
        scenario.endpoint.api_key_env.as_deref(),
        api_key.is_some(),
    )
    .await
    .map_err(|e| RunError::Preflight(redact(&e.to_string(), api_key.as_ref())))?;
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
    for w in &report.warnings {
        say(&format!("warning: {w}"));
    }

    let stop = stop_signal();
    let endpoint = if scenario.endpoint.base_url == "sim" {
        "sim".to_string()
    } else {
        environment::endpoint_label(&base_url)
    };
    let mut outcomes = Vec::new();
    for ladder in expand_sweep(&scenario) {
        let info = RunInfo {
            format_version: RESULTS_FORMAT_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            scenario_name: ladder.name.clone(),
            scenario_file: ctx.opts.scenario_path.display().to_string(),
            scenario: environment::redacted_scenario(&ladder, &|t| redact(t, api_key.as_ref())),
            git_commit: environment::git_commit(),
            tokenizer_sha256: tokenizer_sha256.clone(),
            endpoint: endpoint.clone(),
            host: environment::host_info(),
            started_at: Utc::now(),
            ended_at: None,
            status: RunStatus::Running,
            status_detail: None,
            rungs: vec![],
            warnings: vec![],
        };
        let root = ctx
            .opts
            .out_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("results"));
        let writer = RunWriter::create(&root, info).map_err(|e| RunError::Output(e.to_string()))?;
        say(&format!("writing {}", writer.dir().display()));
        let outcome = run_ladder(
            ctx,
            &ladder,
            &client,
            &tokenizer,
            dataset_path.as_deref(),
            writer,
            stop.clone(),
        )
        .await?;
        outcomes.push(outcome);
        if *stop.borrow() {
            break;
        }
    }
    Ok(outcomes)
}

async fn run_ladder(
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    client: &Arc<Client>,
    tokenizer: &workload::tokenizer::Tokenizer,
    dataset_path: Option<&Path>,
    mut writer: RunWriter,
    stop: watch::Receiver<bool>,
) -> Result<RunOutcome, RunError> {
    // A folder never stays "running": an error after it exists marks it failed.
    let fail = |writer: &mut RunWriter, e: RunError| -> RunError {
        let _ = writer.finish(RunStatus::Failed, Some(e.to_string()), Utc::now());
        e
    };
    let quiet = ctx.opts.quiet;
    let rates = scenario.rungs();
    let warmup = scenario.load.warmup_requests as usize;
    let n = scenario.workload.requests_per_rung as usize;
    let burstiness = match scenario.load.arrival {
        Arrival::Gamma => scenario.load.burstiness.unwrap_or(1.0),
        _ => 1.0,
    };
    let mut summaries: Vec<RungSummary> = Vec::new();
    let mut interrupted = false;
    let mut log: Vec<String> = Vec::new();

    for (idx, &rate) in rates.iter().enumerate() {
        if *stop.borrow() {
            interrupted = true;
            break;
        }
        // Prompts and bodies are built before the rung: nothing of this on the send path.
        let set = match PromptSet::load(
            &scenario.workload,
            tokenizer,
            dataset_path,
            warmup + n,
            idx as u64,
        ) {
            Ok(set) => set,
            Err(e) => return Err(fail(&mut writer, RunError::Scenario(e.to_string()))),
        };
        for note in set.notes {
            if !quiet {
                eprintln!("note: rung {rate} req/s: {note}");
            }
            log.push(format!("note: rung {rate}: {note}"));
        }
        let prompts = set.prompts;
        let inexact = prompts[warmup..].iter().filter(|p| !p.exact).count() as u64;
        let requests = prompts
            .iter()
            .map(|p| client.prepare(&p.text, p.input_tokens, p.output_tokens))
            .collect();
        let schedule = match workload::schedule(
            scenario.load.arrival,
            rate,
            scenario.load.burstiness,
            warmup + n,
            rung_seed(scenario.workload.seed, idx),
        ) {
            Ok(s) => s,
            Err(e) => return Err(fail(&mut writer, RunError::Scenario(e.to_string()))),
        };
        let plan = rung::RungPlan {
            requests,
            schedule,
            warmup,
            max_concurrency: scenario.load.max_concurrency,
        };
        let mut bar = progress::RungBar::new(rate, (warmup + n) as u64, quiet);
        let run = rung::run_rung(client.clone(), plan, stop.clone(), STOP_GRACE, &mut bar).await;
        let summary = summarize(
            &run.records,
            &RungContext {
                rate,
                burstiness,
                max_concurrency: scenario.load.max_concurrency,
                slo: scenario.slo.clone(),
                inexact_prompts: inexact,
                interrupted: run.interrupted,
            },
        );
        bar.finish(&summary);
        log.push(format!(
            "rung {rate}: sent {} finished {} completed {} failed {} qps {:.3}",
            run.sent,
            run.records.len(),
            summary.completed,
            summary.failed,
            summary.request_throughput
        ));
        if inexact > 0 {
            writer.warn(format!(
                "rung {rate} req/s: {inexact} prompts could not be made exactly {} tokens long (within 1 token)",
                scenario.workload.input_tokens
            ));
        }
        for w in warnings::rung_warnings(&summary) {
            bar.println(&format!("warning: {w}"));
            writer.warn(w);
        }
        if let Err(e) = writer.write_rung(&summary, &run.records, !run.interrupted) {
            return Err(fail(&mut writer, RunError::Output(e.to_string())));
        }
        summaries.push(summary);
        if run.interrupted {
            interrupted = true;
            break;
        }
        if idx + 1 < rates.len() {
            let mut s = stop.clone();
            tokio::select! {
                _ = tokio::time::sleep(scenario.load.cooldown.0) => {}
                _ = s.changed() => { interrupted = true; break; }
            }
        }
    }

    let _ = writer.write_file("run.log", (log.join("\n") + "\n").as_bytes());
    let complete = summaries.iter().filter(|s| !s.interrupted).count();
    let (status, detail) = if interrupted {
        (
            RunStatus::Interrupted,
            Some(format!(
                "stopped by a signal after {complete} of {} rungs",
                rates.len()
            )),
        )
    } else {
        (RunStatus::Complete, None)
    };
    let info = writer
        .finish(status, detail, Utc::now())
        .map_err(|e| RunError::Output(e.to_string()))?;
    let dir = writer.dir().to_path_buf();
    print_outcome(ctx.opts, &dir, scenario, &summaries);
    if interrupted {
        return Err(RunError::Interrupted {
            dir,
            complete,
            total: rates.len(),
        });
    }
    Ok(RunOutcome {
        dir,
        info,
        rungs: summaries,
    })
}

fn print_outcome(opts: &RunOptions, dir: &Path, scenario: &Scenario, rungs: &[RungSummary]) {
    let analysis = analyze(rungs, &scenario.slo, scenario.load.baseline_rate);
    if opts.json {
        let v = serde_json::json!({
            "dir": dir.display().to_string(),
            "rungs": rungs,
            "analysis": analysis,
        });
        println!("{}", serde_json::to_string(&v).expect("serialises"));
    } else if !opts.quiet {
        println!("{}", rung_table(rungs));
        println!("{analysis}");
        println!("results: {}", dir.display());
    }
}
