//! Running a scenario: preflight, the rate ladder, rung dispatch, cancellation.

pub(crate) mod closed_loop;
mod connect;
mod dispatch;
mod environment;
pub mod error;
pub(crate) mod failures;
mod in_flight;
mod ladder;
pub mod limits;
mod models;
mod open_loop;
mod overhead;
pub mod preflight;
pub mod prepare;
mod progress;
pub(crate) mod rejection;
pub(crate) mod rung;
mod rung_plan;
pub(crate) mod search;
pub(crate) mod sessions;
pub mod shard;
mod sim_host;
mod soak;
pub(crate) mod warnings;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;

use crate::metrics::{analyze, RungSummary};
use crate::results::{RunInfo, RunStatus, RunWriter, RESULTS_FORMAT_VERSION};
use crate::scenario::{Scenario, SweepField};
use crate::workload::Tokens;

pub use error::{FlagError, OutputError, PreflightFailure, RunError, RungRejected, ScenarioError};
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
    /// Replace the scenario's `load.repeats`.
    pub repeats: Option<u32>,
    /// No progress bars or tables.
    pub quiet: bool,
    /// Print a machine-readable summary on stdout instead of the table.
    pub json: bool,
    /// Leave stdout to the caller (`ladder gate --json` prints its own document there):
    /// progress and notes still go to stderr, the rung table and `results:` line are not
    /// printed.
    pub no_stdout: bool,
    /// Run one shard of the ladder (`--shard i/N --start-at T`); see [`shard`].
    pub shard: Option<shard::ShardRun>,
    /// The nonce that makes `workload.cache: cold` prompts new (recorded in run.json as
    /// `prompt_nonce`). `None`: a fresh one from the OS, or for a shard one derived from
    /// `--start-at`, so every shard of a run writes the same prompts.
    pub prompt_nonce: Option<u64>,
    /// Where progress, notes, warnings, the rung table and the `results:` line go (the
    /// default: nowhere).
    pub notes: crate::notes::Notes,
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

impl RunOutcome {
    /// No request of any rung succeeded: the folder holds failures only and measured nothing
    /// of the server's latency or throughput (`ladder run` exits 2 for it).
    pub fn measured_nothing(&self) -> bool {
        !self.rungs.is_empty() && self.rungs.iter().all(|r| r.completed == 0)
    }
}

/// Time requests in flight get to finish after Ctrl-C / SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Run a scenario without a sweep; see [`run_all`].
pub fn run(opts: &RunOptions) -> Result<RunOutcome, RunError> {
    let mut all = run_all(opts)?;
    if all.len() != 1 {
        return Err(ScenarioError::Sweep {
            path: opts.scenario_path.clone(),
            ladders: all.len(),
        }
        .into());
    }
    Ok(all.remove(0))
}

/// Run a scenario to completion (or interruption) and write one result folder per ladder
/// (one for a plain scenario, one per value for a sweep).
pub fn run_all(opts: &RunOptions) -> Result<Vec<RunOutcome>, RunError> {
    let (done, r) = run_all_keeping(opts);
    r.map(|()| done)
}

/// [`run_all`], also giving the ladders that finished when a later one did not: Ctrl-C in a
/// sweep's second ladder leaves the first one's folder complete, and it gets its reports.
pub fn run_all_keeping(opts: &RunOptions) -> (Vec<RunOutcome>, Result<(), RunError>) {
    let mut done = Vec::new();
    let r = run_all_into(opts, &mut done);
    (done, r)
}

/// `scenario` with the command line's overrides (`--rates`, `--repeats`, `--shard`) applied
/// and checked, as `run` measures it. `gate` calls it before anything is run, so a flag that
/// cannot apply is refused before the golden is even looked at.
pub fn with_overrides(
    scenario: &crate::scenario::Scenario,
    opts: &RunOptions,
) -> Result<crate::scenario::Scenario, RunError> {
    let mut scenario = scenario.clone();
    if let Some(rates) = &opts.rates {
        let shape = match (&scenario.load.trace, &scenario.load.ramp) {
            (Some(_), _) => Some("a trace replay (`load.trace`); edit its `speed` list instead"),
            (_, Some(_)) => Some("a ramp (`load.ramp`); edit its `from` and `to` instead"),
            _ => None,
        };
        if let Some(what) = shape {
            return Err(FlagError::RatesOnShape {
                path: opts.scenario_path.clone(),
                shape: what,
            }
            .into());
        }
        if !scenario.load.concurrency.is_empty() {
            return Err(FlagError::RatesOnConcurrency {
                path: opts.scenario_path.clone(),
            }
            .into());
        }
        if scenario.load.search.is_some() {
            return Err(FlagError::RatesOnSearch {
                path: opts.scenario_path.clone(),
            }
            .into());
        }
        check_rates(rates, scenario.load.baseline_rate)?;
        scenario.load.rates = rates.clone();
    }
    if let Some(n) = opts.repeats {
        if !(1..=crate::scenario::MAX_REPEATS).contains(&n) {
            return Err(FlagError::RepeatsRange {
                max: crate::scenario::MAX_REPEATS,
            }
            .into());
        }
        if n > 1 && scenario.load.search.is_some() {
            return Err(FlagError::RepeatsWithSearch {
                n,
                path: opts.scenario_path.clone(),
            }
            .into());
        }
        if n > 1 && scenario.load.duration.is_some() {
            return Err(FlagError::RepeatsWithSoak {
                n,
                path: opts.scenario_path.clone(),
            }
            .into());
        }
        scenario.load.repeats = n;
    }
    if let Some(s) = &opts.shard {
        shard::check(s, &scenario).map_err(|why| ScenarioError::NotShardable {
            path: opts.scenario_path.clone(),
            shard: s.shard.label(),
            why,
        })?;
    }
    Ok(scenario)
}

fn run_all_into(opts: &RunOptions, done: &mut Vec<RunOutcome>) -> Result<(), RunError> {
    limits::one_malloc_arena();
    limits::ensure_startup_fds().map_err(PreflightFailure::from)?;
    let loaded = crate::scenario::load(&opts.scenario_path).map_err(ScenarioError::Invalid)?;
    for note in &loaded.notes {
        opts.notes.err(&format!("note: {note}"));
    }
    let mut scenario = with_overrides(&loaded.scenario, opts)?;
    if scenario.workload.cache == crate::scenario::CacheMode::Cold {
        scenario.workload.cache_nonce = Some(run_nonce(opts));
    }
    // Everything decidable without the network, as `ladder validate` checks it: nothing is
    // sent and no folder is made for a scenario that would fail later.
    let mut prepared = prepare(&loaded, scenario).map_err(|found| {
        ScenarioError::Invalid(crate::scenario::Diagnostics(loaded.diagnose(&found)))
    })?;
    if let Some(s) = &opts.shard {
        opts.notes.err(&s.start_note(chrono::Utc::now()));
    }
    if let (Some(r), Some(t)) = (&prepared.trace, &prepared.scenario.load.trace) {
        opts.notes
            .err(&format!("note: {}", r.length_note(&t.speed)));
    }
    let ctx = RunContext {
        opts,
        env_headers: loaded.env_headers.clone(),
        env_body: loaded.env_body.clone(),
        env_secrets: loaded.env_secrets.clone(),
        dataset_path: prepared.dataset_path.clone(),
        trace: prepared.trace.clone(),
        first_prompts: std::sync::Mutex::new(prepared.first_prompts.take()),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(OutputError::Runtime)?;
    let outcome = rt.block_on(run_scenario(&ctx, prepared, done));
    // Requests abandoned by a stop may still be re-tokenizing on the blocking pool: their
    // records are no longer wanted, so the process does not wait for them.
    rt.shutdown_background();
    outcome
}

/// `cache: cold` makes synthesised prompts new, but a dataset's prompts are its text: they
/// are sent as written, and a server that has seen them may answer from its cache.
fn cold_dataset_caveat(s: &Scenario) -> Option<String> {
    let file = s.workload.dataset != crate::scenario::Dataset::Random && s.load.trace.is_none();
    (file && s.workload.cache_nonce.is_some()).then(|| {
        format!(
            "workload.cache: cold cannot make a dataset's prompts new: the prompts of {} are \
             sent as written, so a server that has seen them may answer from its prompt cache \
             (server_cache_share in each rung's results shows it); restart the server before \
             the run, or set workload.cache: warm to say a warm cache is what you measure",
            s.workload
                .path
                .as_ref()
                .map_or("the dataset".into(), |p| p.display().to_string())
        )
    })
}

/// This run's `cache: cold` nonce: the one asked for, else one every shard of a sharded run
/// derives alike from their shared start, else fresh randomness.
fn run_nonce(opts: &RunOptions) -> u64 {
    match (opts.prompt_nonce, &opts.shard) {
        (Some(n), _) => n,
        (None, Some(s)) => s.start_at.timestamp_nanos_opt().unwrap_or_default() as u64,
        (None, None) => rand::random(),
    }
}

fn check_rates(rates: &[f64], baseline: Option<f64>) -> Result<(), RunError> {
    if rates.is_empty() {
        return Err(FlagError::NoRates.into());
    }
    if let Some(m) = rates
        .iter()
        .find_map(|r| crate::scenario::limits::rate_problem(*r))
    {
        return Err(FlagError::BadRate { problem: m }.into());
    }
    if rates.windows(2).any(|w| w[1] <= w[0]) {
        return Err(FlagError::RatesNotIncreasing.into());
    }
    // Two rungs must never write the same files: the baseline rung runs too, and labels
    // keep 6 decimals.
    let named = baseline
        .map(|b| (b, format!("load.baseline_rate {b}")))
        .into_iter()
        .chain(rates.iter().map(|r| (*r, format!("--rates value {r}"))));
    let named: Vec<(f64, String)> = named.collect();
    for (i, (a, wa)) in named.iter().enumerate() {
        if let Some((_, wb)) = named[i + 1..]
            .iter()
            .find(|(b, _)| crate::scenario::label_clash(&[*a, *b]).is_some())
        {
            return Err(FlagError::RatesClash {
                first: wa.clone(),
                second: wb.clone(),
                file: crate::results::result_file_name(*a),
            }
            .into());
        }
    }
    // After the clash check, whose message names the two rungs that would share a file.
    if let Some(b) = baseline.filter(|b| *b >= rates[0]) {
        return Err(FlagError::RatesBelowBaseline {
            first: rates[0],
            baseline: b,
        }
        .into());
    }
    Ok(())
}

/// Raises the file-descriptor soft limit for the rung's connections, or stops before the
/// load when even the hard limit is too low for an explicit `max_concurrency`.
fn check_fd_limit(
    scenario: &Scenario,
    trace_lines: Option<u64>,
    say: &dyn Fn(&str),
) -> Result<(), RunError> {
    let per_rung = match (&scenario.load.trace, &scenario.load.ramp) {
        (Some(_), _) => trace_lines.unwrap_or(0),
        (_, Some(r)) => r.total().ceil() as u64 + 1,
        // A rung run for a duration: about its fastest rate times its length.
        _ if scenario.load.duration.is_some() => {
            let fastest = scenario.rungs().into_iter().fold(0.0, f64::max);
            let secs = scenario.load.duration.map_or(0.0, |d| d.0.as_secs_f64());
            scenario.load.warmup_requests as u64 + (fastest * secs).ceil() as u64
        }
        _ => scenario.load.warmup_requests as u64 + scenario.workload.requests_per_rung as u64,
    };
    let search_users = scenario
        .load
        .search
        .as_ref()
        .filter(|s| s.over == crate::scenario::SearchOver::Users)
        .map(|s| s.max as u32);
    let cap = match scenario.load.concurrency.iter().max() {
        Some(&users) => Some(users),
        None => search_users.or(scenario.load.max_concurrency),
    };
    let concurrency = cap.map(|c| (c as u64).min(per_rung)).unwrap_or(per_rung);
    let need = limits::fds_needed(concurrency, scenario.endpoint.base_url == "sim");
    match limits::ensure_fds(need) {
        Ok(limits::FdLimit::Enough) | Err(_) => Ok(()),
        Ok(limits::FdLimit::Raised { from, to }) => {
            say(&format!("raised the open-file limit from {from} to {to} for {concurrency} concurrent connections"));
            Ok(())
        }
        Ok(limits::FdLimit::TooLow { need, hard }) => match scenario.load.max_concurrency {
            Some(c) => Err(PreflightFailure::FdLimit {
                max_concurrency: c,
                need,
                hard,
            }
            .into()),
            None => {
                let or_cap = match hard.saturating_sub(64) {
                    0 => String::new(),
                    cap => format!(" or set load.max_concurrency below {cap}"),
                };
                say(&format!(
                    "warning: up to {concurrency} requests may be in flight at once, needing about {need} open files, \
                     but the hard limit is {hard}; raise the open-file limit (`ulimit -n {need}`){or_cap}; \
                     requests that find no descriptor fail as client_resource, never as the server's errors"
                ));
                Ok(())
            }
        },
    }
}

struct RunContext<'a> {
    opts: &'a RunOptions,
    /// Headers whose values came from `{{ env.NAME }}`: secrets.
    env_headers: Vec<String>,
    /// `extra_body` keys whose values came from `{{ env.NAME }}`: secrets too.
    env_body: Vec<String>,
    /// Values from the environment in the URLs, headers and body: secrets.
    env_secrets: Vec<crate::scenario::EnvSecret>,
    /// The dataset file, resolved against the scenario's folder.
    dataset_path: Option<PathBuf>,
    /// A trace replay's trace and prompts (`load.trace`).
    trace: Option<Arc<prepare::Replay>>,
    /// The prompts `prepare` built for the first rung, taken by its plan.
    first_prompts: std::sync::Mutex<Option<prepare::FirstPrompts>>,
}

/// Stop flag flipped by the first Ctrl-C or SIGTERM: no new requests, those in flight get
/// [`STOP_GRACE`]. A second signal drops the sender, which ends the rung at once (its finished
/// requests are still written). The handlers are installed here, before the load, so no
/// signal between two waits is missed.
fn stop_signal(notes: crate::notes::Notes, mut signals: StopSignals) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        signals.next().await;
        notes.err(&format!(
            "\nstopping: no new requests; waiting up to {}s for requests in flight (Ctrl-C again to stop at once)",
            STOP_GRACE.as_secs()
        ));
        let _ = tx.send(true);
        signals.next().await;
        notes.err("stopping now: requests in flight are abandoned; writing what finished");
        drop(tx);
    });
    rx
}

/// SIGINT and SIGTERM as streams (each signal counted from installation on).
struct StopSignals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl StopSignals {
    fn install() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let streams = signal(SignalKind::interrupt())
                .and_then(|int| Ok((int, signal(SignalKind::terminate())?)))
                .ok();
            StopSignals { streams }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// The next signal's name.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        if let Some((int, term)) = &mut self.streams {
            return tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            };
        }
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
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
                SweepField::ImageSize => {
                    if let Some(im) = &mut c.workload.images {
                        (im.width, im.height) = (v, v);
                    }
                    "image_size"
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
    outcomes: &mut Vec<RunOutcome>,
) -> Result<(), RunError> {
    let quiet = ctx.opts.quiet;
    // Lines may hold server text (warnings naming its answers): shown, never obeyed.
    let say = |line: &str| {
        if !quiet {
            ctx.opts.notes.err(&crate::escape::terminal::line(line));
        }
    };
    let Prepared {
        scenario,
        tokenizer,
        tokenizer_source,
        dataset_path: _,
        sim,
        longest_prompt,
        trace: _,
        first_prompts: _,
        word_pools,
    } = prepared;

    // The stop handlers go in before preflight: a signal while the server is probed ends the
    // run there (whatever disposition the process inherited: a background job of a shell
    // starts with SIGINT ignored), and one during the load is counted from here on.
    let mut signals = StopSignals::install();
    let connecting = connect::connect(
        ctx,
        &scenario,
        tokenizer.as_ref(),
        tokenizer_source,
        sim,
        longest_prompt,
    );
    let connected = tokio::select! {
        c = connecting => c?,
        signal = signals.next() => return Err(RunError::StoppedInPreflight { signal }),
    };
    let connect::Connected {
        client,
        endpoint,
        early_warnings,
        scrape,
        server_tokens,
        overhead,
        tokenizer_sha256,
        tokenizer_source,
        sim_server,
    } = connected;

    let mut early_warnings = early_warnings;
    if let Some(w) = cold_dataset_caveat(&scenario) {
        say(&format!("warning: {w}"));
        early_warnings.push(w);
    }
    let stop = stop_signal(ctx.opts.notes.clone(), signals);
    let header = RunHeader {
        client: &client,
        endpoint: &endpoint,
        warnings: &early_warnings,
        tokenizer_sha256: &tokenizer_sha256,
        tokenizer_source: &tokenizer_source,
        prompt_overhead: overhead.measured,
    };
    for (i, ladder) in expand_sweep(&scenario).into_iter().enumerate() {
        let ladder = sweep_ladder(ladder, i, overhead.shorten_by);
        let writer = open_writer(ctx, &ladder, run_info(ctx, &ladder, &header))?;
        say(&format!("writing {}", writer.dir().display()));
        let rungs = ladder::Ladder {
            ctx,
            scenario: &ladder,
            client: &client,
            tokens: match (&tokenizer, &server_tokens) {
                (Some(tok), _) => Tokens::Pooled(tok, &word_pools),
                (None, Some(counter)) => Tokens::Server(counter),
                (None, None) => Tokens::Absent,
            },
            scrape: scrape.as_ref(),
            sim: sim_server.as_ref(),
            tokenizer_mismatch: overhead.mismatch,
            prompt_overhead: overhead.measured,
            refused: Default::default(),
        };
        let outcome = run_ladder(rungs, writer, stop.clone()).await?;
        outcomes.push(outcome);
        if *stop.borrow() {
            break;
        }
    }
    Ok(())
}

/// The `i`th ladder of a sweep as it runs: prompts shortened by the server's measured
/// overhead, and a prompt nonce of its own.
fn sweep_ladder(mut ladder: Scenario, i: usize, shorten_by: u32) -> Scenario {
    ladder.workload.server_overhead = shorten_by;
    // Each ladder of a sweep writes prompts of its own.
    ladder.workload.cache_nonce = ladder
        .workload
        .cache_nonce
        .map(|n| n ^ (i as u64).wrapping_mul(0xA076_1D64_78BD_642F));
    ladder
}

/// What every ladder's run.json says of the connection (the same for each ladder of a
/// sweep).
struct RunHeader<'a> {
    /// Its redactor hides the secrets in the scenario written to run.json.
    client: &'a crate::client::Client,
    endpoint: &'a str,
    /// Warnings said before the result folder existed.
    warnings: &'a [String],
    tokenizer_sha256: &'a str,
    tokenizer_source: &'a crate::tokens::TokenizerSource,
    prompt_overhead: Option<i64>,
}

/// run.json as a ladder starts: running, no rungs yet.
fn run_info(ctx: &RunContext<'_>, ladder: &Scenario, header: &RunHeader<'_>) -> RunInfo {
    RunInfo {
        format_version: RESULTS_FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        scenario_name: ladder.name.clone(),
        scenario_file: ctx.opts.scenario_path.display().to_string(),
        load: ladder.load_kind(),
        scenario: environment::redacted_scenario(
            ladder,
            &ctx.env_headers,
            &ctx.env_body,
            &ctx.env_secrets,
            header.client.redactor(),
        )
        .value,
        git_commit: environment::git_commit(),
        tokenizer_sha256: header.tokenizer_sha256.to_string(),
        tokenizer_source: Some(header.tokenizer_source.clone()),
        endpoint: header.endpoint.to_string(),
        host: environment::host_info(),
        started_at: Utc::now(),
        ended_at: None,
        status: RunStatus::Running,
        status_detail: None,
        rungs: vec![],
        warnings: header.warnings.to_vec(),
        server: None,
        prompt_overhead: header.prompt_overhead,
        prompt_nonce: ladder.workload.cache_nonce.map(|n| format!("{n:016x}")),
        trace: trace_info(ctx, ladder),
        shard: shard_info(ctx, ladder),
        shards: None,
    }
}

/// run.json's account of a trace replay's trace.
fn trace_info(ctx: &RunContext<'_>, ladder: &Scenario) -> Option<crate::results::TraceInfo> {
    ctx.trace.as_ref().map(|r| crate::results::TraceInfo {
        path: ladder
            .load
            .trace
            .as_ref()
            .map(|t| t.path.display().to_string())
            .unwrap_or_default(),
        sha256: r.trace.sha256.clone(),
        requests: r.trace.lines.len() as u64,
        file_lines: r.trace.file_lines as u64,
        span_ms: r.trace.lines.last().map_or(0.0, |l| l.timestamp_ms)
            - r.trace.lines.first().map_or(0.0, |l| l.timestamp_ms),
    })
}

/// run.json's account of this shard of a sharded run.
fn shard_info(ctx: &RunContext<'_>, ladder: &Scenario) -> Option<crate::results::ShardInfo> {
    ctx.opts.shard.as_ref().map(|s| crate::results::ShardInfo {
        index: s.shard.index,
        count: s.shard.count,
        start_at: s.start_at,
        drain_ms: s
            .drain
            .unwrap_or(ladder.endpoint.request_timeout.0)
            .as_secs_f64()
            * 1000.0,
        clock: shard::clock_sync(),
        rung_starts: vec![],
    })
}

/// The ladder's result folder: a new one under the results root, or a shard's own.
fn open_writer(
    ctx: &RunContext<'_>,
    ladder: &Scenario,
    info: RunInfo,
) -> Result<RunWriter, RunError> {
    let root = ctx
        .opts
        .out_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("results"));
    match &ctx.opts.shard {
        Some(s) => RunWriter::create_exact(&shard::folder(&root, &ladder.name, s), info),
        None => RunWriter::create(&root, info),
    }
    .map_err(RunError::from)
}

/// Run every rung into `writer`'s folder. Whatever stops the ladder, the folder ends in a
/// terminal status: `complete`, `interrupted`, or `failed` with the error as its detail.
async fn run_ladder(
    rungs: ladder::Ladder<'_>,
    mut writer: RunWriter,
    stop: watch::Receiver<bool>,
) -> Result<RunOutcome, RunError> {
    let run = match rungs.scenario.load.search {
        Some(_) => rungs.run_search(&mut writer, stop).await,
        None => rungs.run(&mut writer, stop).await,
    };
    match run {
        Err(e) if !matches!(e, RunError::Interrupted { .. }) => Err(mark_failed(&mut writer, e)),
        r => r,
    }
}

/// Record `e` as the folder's `failed` status, and say so in the error.
fn mark_failed(writer: &mut RunWriter, e: RunError) -> RunError {
    let reason = e.to_string();
    let reason = reason
        .strip_prefix("error: ")
        .unwrap_or(&reason)
        .to_string();
    let dir = writer.dir().to_path_buf();
    match writer.finish(RunStatus::Failed, Some(reason.clone()), Utc::now()) {
        Ok(_) => RunError::Failed { dir, reason },
        Err(cause) => OutputError::NotMarkedFailed { reason, dir, cause }.into(),
    }
}

fn print_outcome(opts: &RunOptions, dir: &Path, scenario: &Scenario, rungs: &[RungSummary]) {
    let notes = &opts.notes;
    let mut analysis = analyze(rungs, &scenario.slo, scenario.load.baseline_rate);
    if scenario.load.search.is_some() {
        analysis = analysis.of_search();
    }
    if opts.json {
        let v = serde_json::json!({
            "version": 1,
            "command": "run",
            "dir": dir.display().to_string(),
            "rungs": rungs,
            "analysis": analysis,
        });
        notes.out_line(&serde_json::to_string(&v).expect("serialises"));
    } else if !opts.quiet && !opts.no_stdout {
        if scenario.workload.sessions.is_some() && scenario.load.concurrency.is_empty() {
            notes.out_line(
                "note: with workload.sessions a rung's rate is sessions started per second; \
                 qps, TTFT and the other columns count requests (one per turn)",
            );
        }
        notes.out_line(&rung_table(rungs));
        let ramp = rungs.iter().find_map(|r| r.ramp.as_ref());
        match ramp {
            // A ramp is one rung: its windows are its analysis, not a knee over rungs.
            Some(ramp) => {
                notes.out_line(&format!(
                    "Ramp {} -> {} req/s, by window (rates req/s, latencies ms):",
                    ramp.from, ramp.to
                ));
                notes.out_line(&ramp.text_table());
                notes.out_line(&format!("{}\n", ramp.verdict()));
            }
            None => notes.out_line(&analysis.to_string()),
        }
        notes.out_line(&format!("results: {}", dir.display()));
    }
}
