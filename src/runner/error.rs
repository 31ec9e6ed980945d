//! Why a run could not produce a usable result: [`RunError`] and the typed causes behind
//! its variants. Every message is the user's; the binary prints it after `error: `.

use std::path::PathBuf;

use crate::client::ClientError;
use crate::results::WriteError;
use crate::scenario::Diagnostics;
use crate::workload::{ScheduleError, WorkloadError};

pub use super::limits::StartupFdsTooLow;
pub use super::overhead::OverheadError;
pub use super::rejection::RungRejected;
pub use super::search::SearchConfigError;
pub use super::shard::{ShardLate, ShardRefusal};

/// Why a run could not produce a usable result.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario (or a flag that changes it) cannot run; nothing was sent.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// Preflight failed: nothing was sent beyond the probe.
    #[error("preflight failed: {0}")]
    Preflight(#[from] PreflightFailure),
    /// The result folder could not be written.
    #[error("{0}")]
    Output(#[from] OutputError),
    /// Stopped by an error after the result folder was created; the folder says `failed`
    /// with `reason` as its `status_detail`.
    #[error("{reason}\n  the result folder {dir} is marked failed; finished rungs are kept")]
    Failed { dir: PathBuf, reason: String },
    /// The server rejected a rung's requests the same way every time (a client error such
    /// as a prompt longer than its context): the ladder stopped there.
    #[error("{0}")]
    Rejected(#[from] RungRejected),
    /// A shard was not ready at a rung's shared start: the run stopped rather than skew.
    #[error("{0}")]
    ShardLate(#[from] ShardLate),
    /// Stopped by a signal before the load (during preflight): nothing was measured and no
    /// result folder was written.
    #[error(
        "stopped by {signal} during preflight; no load was sent and no result folder was written"
    )]
    StoppedInPreflight { signal: &'static str },
    /// Stopped by a signal; finished rungs are in the folder.
    #[error("interrupted: {complete} of {total} rungs complete; partial results in {dir}")]
    Interrupted {
        dir: PathBuf,
        complete: usize,
        total: usize,
    },
}

/// Why the scenario, as loaded and changed by the run's flags, cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Problems found as `ladder validate` finds them, each with its location.
    #[error("{0}")]
    Invalid(Diagnostics),
    /// `ladder gate` (one result folder) was given a sweep (several).
    #[error("{} has a sweep ({ladders} ladders); gate each value with its own scenario", path.display())]
    Sweep { path: PathBuf, ladders: usize },
    /// `--rates` or `--repeats` do not fit the scenario.
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// `--shard` does not fit the scenario.
    #[error("{} cannot run as shard {shard}: {why}", path.display())]
    NotShardable {
        path: PathBuf,
        /// The shard's `i/N` label.
        shard: String,
        why: ShardRefusal,
    },
    /// The local tokenizer file could not be read to hash it.
    #[error("{}: {source}", path.display())]
    Tokenizer {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Prompts out of bounds by the server's own count: the problems joined by `; ` and
    /// redacted of the run's secrets as one text (they may quote the server's answer).
    #[error("{redacted}")]
    ServerCounted { redacted: String },
    /// `load.search` cannot be turned into a search.
    #[error(transparent)]
    Search(#[from] SearchConfigError),
    /// A rung's prompts cannot be built.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// A rung's send times cannot be computed.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A trace ladder reached its rungs without its trace read (a bug: `prepare` reads it).
    #[error("a trace ladder without its trace read")]
    TraceNotRead,
}

/// `--rates` or `--repeats` that do not fit the scenario they change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlagError {
    /// `--rates` on a trace replay or a ramp; `shape` says which and what to edit instead.
    #[error("--rates replaces `load.rates`, but {} is {shape}", path.display())]
    RatesOnShape { path: PathBuf, shape: &'static str },
    /// `--rates` on a concurrency ladder.
    #[error(
        "--rates replaces `load.rates`, but {} is a concurrency ladder (`load.concurrency`); \
         edit its concurrency levels instead (a ladder is either rates or concurrency)",
        path.display()
    )]
    RatesOnConcurrency { path: PathBuf },
    /// `--rates` on a capacity search.
    #[error(
        "--rates replaces `load.rates`, but {} searches for its capacity (`load.search`): \
         it chooses its own rates; change `search.start` and `search.max` instead",
        path.display()
    )]
    RatesOnSearch { path: PathBuf },
    /// `--rates` with no rate.
    #[error("--rates needs at least one rate, e.g. --rates 5,10,20")]
    NoRates,
    /// A `--rates` value that is no rate (`problem` as the scenario's rate check says it).
    #[error("--rates: {problem}\n  hint: e.g. --rates 5,10,20")]
    BadRate { problem: String },
    /// `--rates` not strictly increasing.
    #[error("--rates must be strictly increasing, e.g. --rates 5,10,20")]
    RatesNotIncreasing,
    /// `--rates` starting at or below the scenario's baseline rung (as validate refuses it in
    /// the file).
    #[error(
        "--rates starts at {first}, not above the scenario's load.baseline_rate {baseline}: the \
         baseline is the light-load reference rung run before the rates, and every rung is \
         compared with it; give rates above {baseline}, or lower load.baseline_rate in the file"
    )]
    RatesBelowBaseline { first: f64, baseline: f64 },
    /// Two rates (or a rate and the baseline) that label the same rung files.
    #[error(
        "{first} and {second} would write the same rung files ({file}); \
         rung files keep 6 decimals of the rate: drop one, or make them differ"
    )]
    RatesClash {
        /// `--rates value R` or `load.baseline_rate B`.
        first: String,
        second: String,
        /// The file name both would write.
        file: String,
    },
    /// `--repeats` out of range.
    #[error("--repeats must be from 1 to {max}, e.g. --repeats 3")]
    RepeatsRange { max: u32 },
    /// `--repeats` on a capacity search.
    #[error(
        "--repeats {n} does not combine with `load.search` in {}: the search measures an \
         uncertain probe again itself (`search.max_extensions`) and repeats the \
         bracket's ends (`search.confirm`); drop --repeats",
        path.display()
    )]
    RepeatsWithSearch { n: u32, path: PathBuf },
    /// `--repeats` on a soak.
    #[error(
        "--repeats {n} does not combine with `load.duration` in {}: a soak is measured \
         once (each repeat would write the same rung files); run it again as its own \
         run to see run-to-run noise, or drop --repeats",
        path.display()
    )]
    RepeatsWithSoak { n: u32, path: PathBuf },
}

/// Why preflight stopped the run before its load.
#[derive(Debug, thiserror::Error)]
pub enum PreflightFailure {
    /// The open-file limit is too low for the process to start.
    #[error(transparent)]
    StartupFds(#[from] StartupFdsTooLow),
    /// The open-file hard limit is too low for an explicit `load.max_concurrency`.
    #[error(
        "load.max_concurrency {max_concurrency} needs about {need} open files, but the hard \
         limit is {hard}: raise the open-file limit (`ulimit -n {need}` as a user allowed to, \
         or LimitNOFILE= in a systemd unit) or lower load.max_concurrency"
    )]
    FdLimit {
        max_concurrency: u32,
        need: u64,
        hard: u64,
    },
    /// The built-in simulator (`base_url: sim`) did not start.
    #[error("cannot start the built-in simulator: {0}")]
    Simulator(std::io::Error),
    /// The HTTP client could not be built from the endpoint's settings.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The server refused or failed a preflight step. The message is redacted of the run's
    /// secrets (it may quote the server's answer), so it is kept as text.
    #[error("{redacted}")]
    Server { redacted: String },
    /// The longest-prompt probe's counts do not fit `workload.input_length`.
    #[error(transparent)]
    Overhead(#[from] OverheadError),
}

/// Why the result folder could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A file of the result folder.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The async runtime did not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The run failed, and marking its folder `failed` failed too.
    #[error(
        "{reason}\n  and the result folder {} could not be marked failed ({cause}); \
         it still says `running`, so compare, gate and bless will refuse it",
        dir.display()
    )]
    NotMarkedFailed {
        /// Why the run failed.
        reason: String,
        dir: PathBuf,
        cause: WriteError,
    },
}

impl From<FlagError> for RunError {
    fn from(e: FlagError) -> Self {
        RunError::Scenario(e.into())
    }
}

impl From<WorkloadError> for RunError {
    fn from(e: WorkloadError) -> Self {
        RunError::Scenario(e.into())
    }
}

impl From<ScheduleError> for RunError {
    fn from(e: ScheduleError) -> Self {
        RunError::Scenario(e.into())
    }
}

impl From<WriteError> for RunError {
    fn from(e: WriteError) -> Self {
        RunError::Output(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preflight_failures_keep_their_prefix_and_cause() {
        let e = RunError::from(PreflightFailure::FdLimit {
            max_concurrency: 5000,
            need: 5064,
            hard: 1024,
        });
        assert!(matches!(
            e,
            RunError::Preflight(PreflightFailure::FdLimit { need: 5064, .. })
        ));
        assert_eq!(
            e.to_string(),
            "preflight failed: load.max_concurrency 5000 needs about 5064 open files, but the \
             hard limit is 1024: raise the open-file limit (`ulimit -n 5064` as a user allowed \
             to, or LimitNOFILE= in a systemd unit) or lower load.max_concurrency"
        );
        let e = RunError::from(PreflightFailure::Simulator(std::io::Error::other(
            "no port",
        )));
        assert_eq!(
            e.to_string(),
            "preflight failed: cannot start the built-in simulator: no port"
        );
    }

    #[test]
    fn flag_errors_are_scenario_errors_with_their_own_words() {
        let e = RunError::from(FlagError::RatesClash {
            first: "load.baseline_rate 1".into(),
            second: "--rates value 1.0000001".into(),
            file: "rate_1.json".into(),
        });
        assert!(matches!(
            e,
            RunError::Scenario(ScenarioError::Flag(FlagError::RatesClash { .. }))
        ));
        assert_eq!(
            e.to_string(),
            "load.baseline_rate 1 and --rates value 1.0000001 would write the same rung files \
             (rate_1.json); rung files keep 6 decimals of the rate: drop one, or make them differ"
        );
        assert_eq!(
            RunError::from(FlagError::RepeatsWithSoak {
                n: 3,
                path: "s.yaml".into()
            })
            .to_string(),
            "--repeats 3 does not combine with `load.duration` in s.yaml: a soak is measured \
             once (each repeat would write the same rung files); run it again as its own run to \
             see run-to-run noise, or drop --repeats"
        );
    }

    #[test]
    fn a_folder_not_marked_failed_says_both_errors() {
        let e = RunError::from(OutputError::NotMarkedFailed {
            reason: "boom".into(),
            dir: "results/x".into(),
            cause: WriteError::Refused("no".into()),
        });
        assert_eq!(
            e.to_string(),
            "boom\n  and the result folder results/x could not be marked failed (no); it still \
             says `running`, so compare, gate and bless will refuse it"
        );
    }
}
