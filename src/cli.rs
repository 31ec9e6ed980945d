//! Command-line surface (clap). Each subcommand calls one library function.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use ladder::escape::terminal::line as terminal_line;

use crate::cli_sim::{run_sim, SimArgs};

/// The terminal the library's [`ladder::notes::Notes`] speak to: stderr and stdout through
/// `ladder::stdio` (escaped, surviving a closed pipe).
struct Terminal;

impl ladder::notes::Sink for Terminal {
    fn err(&self, line: &str) {
        eprintln!("{line}");
    }
    fn out(&self, text: &str) {
        print!("{text}");
    }
}

/// The notes every command gets: the terminal.
pub(crate) fn notes() -> ladder::notes::Notes {
    ladder::notes::Notes::to(std::sync::Arc::new(Terminal))
}

/// Versioned load-test ladders for LLM inference servers, with a CI regression gate.
#[derive(Parser, Debug)]
#[command(
    name = "ladder",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("LADDER_GIT_COMMIT"), ")"),
    about,
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Colour verdicts, warnings and errors: auto (on a terminal; off when NO_COLOR is set,
    /// on when CLICOLOR_FORCE is), always, never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto, value_name = "WHEN")]
    color: Color,
}

/// `--color`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check scenario files: schema and semantic checks, every problem with file:line:col.
    Validate {
        /// Scenario files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print one JSON document on stdout (docs/json.md): every file's problems, notes
        /// and warnings (the same text still goes to stderr). Exit code unchanged.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of the current scenario version.
    Schema,
    /// Run a scenario: preflight, then every rung; writes results/<scenario>/<timestamp>/.
    #[command(after_help = crate::cli_examples::RUN)]
    Run {
        /// The scenario file.
        scenario: PathBuf,
        /// Results root (default: results).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Replace the scenario's rates, e.g. --rates 5,10,20 (the baseline rung still runs first).
        #[arg(long, value_delimiter = ',', value_name = "RATES")]
        rates: Option<Vec<f64>>,
        /// Measure every rung N times (replaces load.repeats): the ladder runs N times in a row.
        #[arg(long, value_name = "N")]
        repeats: Option<u32>,
        /// No progress bars, tables or notes; errors only.
        #[arg(long, short)]
        quiet: bool,
        /// Print a JSON summary of the rungs on stdout (implies --quiet).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        shard: ShardArgs,
    },
    /// Merge the folders of a sharded run (`ladder run --shard`) into one result folder.
    Merge {
        /// Every shard's folder (e.g. results/<scenario>.shards/<start>/shard-*), or the one
        /// folder holding them (results/<scenario>.shards/<start>).
        #[arg(required = true, value_name = "SHARD_DIR")]
        shards: Vec<PathBuf>,
        /// The merged result folder to write (must not exist, or be empty).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Wait up to this long (e.g. 2h) for every shard to appear and finish first (one
        /// folder given: the one holding the shards).
        #[arg(long, value_name = "DURATION")]
        wait: Option<String>,
        /// Print one JSON document on stdout (docs/json.md) instead of the folder's path.
        #[arg(long)]
        json: bool,
    },
    /// Write a Slurm batch script running a scenario as N shards under srun, then merging.
    Slurm(ladder::deploy::slurm::SlurmArgs),
    /// Write Kubernetes manifests: an Indexed Job of N shards and the Job that merges them.
    Kube(ladder::deploy::kube::KubeArgs),
    /// Serve the built-in OpenAI-compatible simulator until SIGINT/SIGTERM.
    Sim(Box<SimArgs>),
    // --- report (issue 6) ---
    /// Write summary.md, summary.csv, report.html (and analysis.json) for a result folder,
    /// or overlay two runs: `ladder report BASE CANDIDATE --out DIR`.
    #[command(after_help = crate::cli_examples::REPORT)]
    Report {
        /// One result folder, or BASE and CANDIDATE folders to overlay.
        #[arg(required = true, num_args = 1..=2, value_name = "RESULT_DIR")]
        dirs: Vec<PathBuf>,
        /// Output folder (default: the result folder; for two runs `CANDIDATE/compare`).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The rung whose TTFT/E2E distributions and time series are drawn, by its level
        /// (rate or users; default: the knee, else the highest rung).
        #[arg(long, value_name = "LEVEL")]
        rung: Option<f64>,
    },
    // --- compare / gate / bless (src/compare, src/commands) ---
    /// Compare two result folders: noise-aware verdicts per rung and metric, config diff.
    /// Exit 0 pass, 1 regression, 2 unusable input.
    #[command(after_help = crate::cli_examples::COMPARE)]
    Compare {
        /// Baseline result folder (e.g. golden/<scenario>).
        base: PathBuf,
        /// Candidate result folder.
        candidate: PathBuf,
        #[command(flatten)]
        gate: GateArgs,
        /// Compare even when model, workload or tokenizer differ.
        #[arg(long)]
        allow_config_change: bool,
    },
    /// Run a scenario and compare it with golden/<scenario>/: the CI entry point.
    #[command(after_help = crate::cli_examples::GATE)]
    Gate {
        /// Scenario file.
        scenario: PathBuf,
        /// Golden baselines root.
        #[arg(long, default_value = "golden")]
        golden: PathBuf,
        /// Results root for the fresh run.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Measure every rung N times (replaces load.repeats): the ladder runs N times in a row.
        #[arg(long, value_name = "N")]
        repeats: Option<u32>,
        #[command(flatten)]
        gate: GateArgs,
        /// Compare even when model, workload or tokenizer differ.
        #[arg(long)]
        allow_config_change: bool,
    },
    /// Write a commented scenario from flags, or convert a vLLM benchmark command line:
    /// `ladder init --from-vllm "$COMMON_ARGS" --rates 5,10,20 --name mine -o loadtests/mine.yaml`.
    #[command(after_help = crate::cli_examples::INIT)]
    Init(Box<ladder::commands::init::InitArgs>),
    /// Print a shell completion script: `ladder completions bash > ~/.local/share/bash-completion/completions/ladder`.
    #[command(after_help = crate::cli_examples::COMPLETIONS)]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Metrics across many result folders in time order, with change points (where a metric
    /// stepped) and the config diff there: `ladder history results/<scenario>/ golden/<scenario>`.
    /// Exit 0 no regression step at the newest folder, 1 one, 2 unusable input.
    #[command(after_help = crate::cli_examples::HISTORY)]
    History(Box<HistoryArgs>),
    /// Promote a result folder to golden/<scenario>/ (replacing the old baseline; with --add,
    /// adding it to the baseline as more repeats).
    #[command(after_help = crate::cli_examples::BLESS)]
    Bless {
        /// The result folder to bless.
        result_dir: PathBuf,
        /// Golden baselines root.
        #[arg(long, default_value = "golden")]
        golden: PathBuf,
        /// Bless an interrupted or failed run anyway (never one still `running`: it never finished).
        #[arg(long)]
        force: bool,
        /// Add the run to the existing baseline as more repeats (its run-to-run spread then
        /// enters every gate's intervals) instead of replacing it.
        #[arg(long)]
        add: bool,
    },
}

/// Flags of `ladder history`.
#[derive(clap::Args, Debug)]
struct HistoryArgs {
    /// Result folders, or folders of them (results/<scenario>/); golden/<scenario> too.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// A metric key of result_rate_<rate>.json; repeatable (default: request_throughput,
    /// median_ttft_ms, median_tpot_ms, error_rate).
    #[arg(long = "metric", value_name = "KEY")]
    metrics: Vec<String>,
    /// A rung to follow; repeatable (default: every rate common to the folders).
    #[arg(long = "rate", value_name = "R")]
    rates: Vec<f64>,
    /// False-alarm rate of each change-point test on a series without change.
    #[arg(long, default_value_t = 0.01)]
    alpha: f64,
    /// Random reorderings per permutation test.
    #[arg(long, default_value_t = 999)]
    permutations: usize,
    /// Seed of the reorderings (same folders and seed, same change points).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write a Markdown summary (e.g. "$GITHUB_STEP_SUMMARY"); an empty value writes none.
    #[arg(long, value_name = "FILE.md")]
    summary: Option<String>,
    /// Write an HTML page with one chart per metric; an empty value writes none.
    #[arg(long, value_name = "FILE.html")]
    html: Option<String>,
    /// Print one JSON document on stdout (docs/json.md) instead of the tables; notes stay on
    /// stderr. Exit code unchanged.
    #[arg(long)]
    json: bool,
}

/// Options shared by `compare` and `gate`.
#[derive(clap::Args, Debug)]
struct GateArgs {
    /// Override a threshold: `METRIC=+15%`, `METRIC=-5%`, `METRIC=+0.01` (absolute),
    /// `METRIC<=0.02`, `METRIC>=4.5`; a change may add an absolute floor,
    /// `METRIC=+10%,floor=5ms`. Repeatable; replaces other checks on that metric.
    #[arg(long = "threshold", value_name = "RULE")]
    thresholds: Vec<String>,
    /// Apply only the --threshold rules: not the scenario's `gate:` rules, not the defaults.
    #[arg(long)]
    only: bool,
    /// Treat inconclusive checks as failures.
    #[arg(long)]
    strict: bool,
    /// The run-to-run drift to assume when neither side has two runs to measure it, as a
    /// relative spread per run: each interval then includes it (docs/gate.md). Default 5%;
    /// `--drift 0` assumes none (the intervals then cover the requests' noise only).
    #[arg(long, value_name = "PCT", value_parser = parse_drift)]
    drift: Option<f64>,
    /// Judge latency checks on rungs past saturation too (by default they are reported as
    /// "past saturation" and the rung is judged by its throughput and error rate).
    #[arg(long)]
    judge_saturated: bool,
    /// Write a Markdown summary (e.g. "$GITHUB_STEP_SUMMARY"). An empty value (an unset
    /// variable outside GitHub Actions) writes none, with a note.
    #[arg(long, value_name = "FILE.md")]
    summary: Option<String>,
    /// Write JUnit XML (one test case per rung and check); an empty value writes none.
    #[arg(long, value_name = "FILE.xml")]
    junit: Option<String>,
    /// Print the comparison as one JSON document on stdout (docs/json.md) instead of the
    /// verdict table; progress and notes stay on stderr. Exit code unchanged.
    #[arg(long)]
    json: bool,
}

/// `--drift 5%` (or `0.05`): a relative run-to-run spread, from 0 up to (not including) 100 %.
fn parse_drift(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("`{s}` is not a drift: give a percentage such as 5% (or 0.05)"))?;
    if !(0.0..1.0).contains(&v) {
        return Err(format!(
            "`{s}` is not a drift: it must be at least 0 % and below 100 % (e.g. 5%)"
        ));
    }
    Ok(v)
}

/// An output-file flag: empty (e.g. `--summary "$GITHUB_STEP_SUMMARY"` with the variable
/// unset) means "not given", said once on stderr so a CI log shows why no file appeared.
fn output_file(flag: &str, value: &Option<String>) -> Option<PathBuf> {
    match value.as_deref() {
        None => None,
        Some(v) if v.trim().is_empty() => {
            eprintln!("note: --{flag} is empty (an unset variable?); no {flag} file written");
            None
        }
        Some(v) => Some(PathBuf::from(v)),
    }
}

impl GateArgs {
    fn options(
        &self,
        allow_config_change: bool,
    ) -> Result<ladder::commands::GateOptions, ladder::compare::ThresholdError> {
        let overrides = self
            .thresholds
            .iter()
            .map(|t| ladder::compare::parse_override(t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ladder::commands::GateOptions {
            summary: output_file("summary", &self.summary),
            junit: output_file("junit", &self.junit),
            strict: self.strict,
            json: self.json,
            compare: ladder::compare::CompareOptions {
                overrides,
                allow_config_change,
                candidate_rules_first: false,
                only: self.only,
                drift: match self.drift {
                    None => Some(ladder::compare::DEFAULT_DRIFT),
                    Some(d) => (d > 0.0).then_some(d),
                },
                judge_saturated: self.judge_saturated,
            },
            show: Some(show_comparison),
            notes: notes(),
            ..Default::default()
        })
    }
}

/// `ladder compare` / `gate` / `bless`: run, print, map the outcome to an exit code.
fn compare_cmd(command: Command) -> i32 {
    use ladder::commands;
    match command {
        Command::Compare {
            base,
            candidate,
            gate,
            allow_config_change,
        } => {
            crate::cli_signal::exit_on_signal();
            let json = gate.json;
            let fail = |e: &dyn std::fmt::Display| fail("compare", json, e);
            let opts = match gate.options(allow_config_change) {
                Ok(o) => o,
                Err(e) => return fail(&e),
            };
            match commands::compare::compare(&base, &candidate, &opts) {
                Ok(c) => c.exit_code(opts.strict),
                Err(e) => fail(&e),
            }
        }
        Command::Gate {
            scenario,
            golden,
            out,
            repeats,
            gate,
            allow_config_change,
        } => {
            let json = gate.json;
            let fail = |e: &dyn std::fmt::Display| fail("gate", json, e);
            let opts = match gate.options(allow_config_change) {
                Ok(o) => commands::GateOptions {
                    scenario,
                    golden: Some(golden),
                    out,
                    // After the run (whose own Ctrl-C handling stops it gracefully) and
                    // its reports, a signal ends the comparison.
                    on_run_dir: Some(|_| crate::cli_signal::exit_on_signal()),
                    repeats,
                    ..o
                },
                Err(e) => return fail(&e),
            };
            match commands::gate(&opts) {
                Ok(c) => {
                    let html = std::path::Path::new(&c.cand_label).join("report.html");
                    if html.is_file() {
                        // With --json stdout holds the document alone.
                        if json {
                            eprintln!("report: {}", html.display());
                        } else {
                            println!("report: {}", terminal_line(&html.display().to_string()));
                        }
                    }
                    c.exit_code(opts.strict)
                }
                Err(e) => fail(&e),
            }
        }
        Command::Bless {
            result_dir,
            golden,
            force,
            add,
        } => match commands::bless(&commands::BlessOptions {
            result_dir,
            golden: Some(golden),
            force,
            add,
        }) {
            Ok(b) => {
                let dest = terminal_line(&b.dest.display().to_string());
                if add {
                    println!("added to the baseline: {dest}");
                } else {
                    println!("blessed: {dest}");
                }
                match &b.replaced {
                    Some(r) if add => println!(
                        "{}",
                        terminal_line(&format!(
                            "the baseline before this addition: {}, kept in {} (move it back \
                             to undo the addition; .replaced/ holds a .gitignore, so `git add` \
                             leaves it out)",
                            r.describe(),
                            r.archive.display()
                        ))
                    ),
                    Some(r) => println!(
                        "{}",
                        terminal_line(&format!(
                            "replaced: {}, kept in {} (move it back to restore it; \
                             .replaced/ holds a .gitignore, so `git add` leaves it out)",
                            r.describe(),
                            r.archive.display()
                        ))
                    ),
                    None => {}
                }
                ladder::exit::OK
            }
            Err(e) => fail("bless", false, &e),
        },
        _ => unreachable!("only compare, gate and bless reach compare_cmd"),
    }
}

/// The verdict table of `compare` and `gate` on stdout: escaped, then its verdict words,
/// warnings and summary line coloured when stdout gets colour (`--color`).
fn show_comparison(c: &ladder::compare::Comparison, strict: bool) {
    use ladder::compare::Verdict;
    use ladder::report::comparison::{self as render, ComparisonExporter, Terminal};
    use ladder::stdio::{paint, Style};
    let text = terminal_line(&Terminal.render(c, strict));
    let style = |v: Verdict| match v {
        Verdict::Pass | Verdict::Improvement => Style::Good,
        Verdict::Regression => Style::Bad,
        Verdict::Inconclusive | Verdict::PastSaturation => Style::Warn,
    };
    let header = render::headers(c.load).join(" ");
    let lines: Vec<&str> = text.lines().collect();
    // The table's rows follow its header line, one per row of the comparison, in order;
    // each ends with its verdict word.
    let first_row = lines
        .iter()
        .position(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == header)
        .map(|i| i + 1);
    let last = lines.len().saturating_sub(1);
    let mut out = String::with_capacity(text.len() + 256);
    for (i, line) in lines.iter().enumerate() {
        let row = first_row
            .and_then(|f| i.checked_sub(f))
            .and_then(|k| c.rows.get(k));
        let painted = match row {
            Some(r) => {
                let word = render::verdict_word(r.decision.verdict);
                match line.strip_suffix(word) {
                    Some(head) => format!("{head}{}", paint(style(r.decision.verdict), word)),
                    None => line.to_string(),
                }
            }
            None if i == last => {
                let (word, s) = if c.failed(strict) {
                    ("FAIL", Style::Bad)
                } else if c.no_verdict() {
                    ("NO VERDICT", Style::Warn)
                } else {
                    ("PASS", Style::Good)
                };
                match line.strip_prefix(word) {
                    Some(rest) => format!("{}{rest}", paint(s, word)),
                    None => line.to_string(),
                }
            }
            None => match ["WARNING:", "warning:"]
                .into_iter()
                .find_map(|w| line.strip_prefix(w).map(|rest| (w, rest)))
            {
                Some((w, rest)) => format!("{}{rest}", paint(Style::Warn, w)),
                None => line.to_string(),
            },
        };
        out.push_str(&painted);
        out.push('\n');
    }
    print!("{out}");
}

/// Parse the command line, run it, and return the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    ladder::stdio::set_color(match cli.color {
        Color::Auto => ladder::stdio::ColorChoice::Auto,
        Color::Always => ladder::stdio::ColorChoice::Always,
        Color::Never => ladder::stdio::ColorChoice::Never,
    });
    match cli.command {
        Command::Validate { files, json } => validate(&files, json),
        Command::Run {
            scenario,
            out,
            rates,
            repeats,
            quiet,
            json,
            shard,
        } => match shard.run() {
            Ok(shard) => run(ladder::runner::RunOptions {
                scenario_path: scenario,
                out_dir: out,
                rates,
                repeats,
                quiet: quiet || json,
                json,
                no_stdout: false,
                shard,
                prompt_nonce: None,
                notes: notes(),
            }),
            Err(m) => {
                eprintln!("error: {m}");
                ladder::exit::BAD_INPUT
            }
        },
        Command::Merge {
            shards,
            out,
            wait,
            json,
        } => merge(&shards, &out, wait.as_deref(), json),
        Command::Slurm(a) => deployed(ladder::commands::deploy::slurm(&a, &notes())),
        Command::Kube(a) => deployed(ladder::commands::deploy::kube(&a, &notes())),
        Command::Schema => {
            println!("{}", ladder::scenario::schema_json());
            ladder::exit::OK
        }
        Command::Sim(args) => run_sim(*args),
        Command::Init(args) => crate::cli_init::init(&args),
        Command::Completions { shell } => {
            crate::cli_init::completions(shell, &mut <Cli as clap::CommandFactory>::command())
        }
        Command::Report { dirs, out, rung } => report(&dirs, out, rung),
        Command::History(a) => history(&ladder::history::HistoryOptions {
            summary: output_file("summary", &a.summary),
            html: output_file("html", &a.html),
            json: a.json,
            dirs: a.dirs,
            metrics: a.metrics,
            rates: a.rates,
            detect: ladder::history::Config {
                alpha: a.alpha,
                permutations: a.permutations,
                seed: a.seed,
                ..Default::default()
            },
        }),
        c @ (Command::Compare { .. } | Command::Gate { .. } | Command::Bless { .. }) => {
            compare_cmd(c)
        }
    }
}

// ---- shards: `ladder run --shard`, `ladder merge` ----

/// The flags that make `ladder run` one shard of a run (docs/scale-out.md).
#[derive(clap::Args, Debug)]
struct ShardArgs {
    /// Run shard INDEX/COUNT (0-based) of the ladder, or `auto` (SLURM_PROCID/SLURM_NTASKS,
    /// or JOB_COMPLETION_INDEX with LADDER_SHARDS); needs --start-at.
    #[arg(long, value_name = "I/N|auto")]
    shard: Option<String>,
    /// The instant every shard starts the first rung: RFC 3339 or @UNIX_SECONDS.
    #[arg(long, value_name = "TIME", requires = "shard")]
    start_at: Option<String>,
    /// Time each rung gets after its last scheduled send before the cooldown (default: the
    /// scenario's request_timeout), e.g. 30s.
    #[arg(long, value_name = "DURATION", requires = "shard")]
    drain: Option<String>,
}

impl ShardArgs {
    fn run(&self) -> Result<Option<ladder::runner::shard::ShardRun>, String> {
        use ladder::runner::shard;
        let Some(text) = &self.shard else {
            return Ok(None);
        };
        let shard = shard::Shard::parse(text).map_err(|e| e.to_string())?;
        let Some(at) = &self.start_at else {
            return Err(format!(
                "--shard {text} needs --start-at: every shard must start at the same instant, e.g. \
                 --start-at @$(( $(date +%s) + 60 )) computed once and given to all shards"
            ));
        };
        let drain = match &self.drain {
            Some(d) => Some(
                humantime::parse_duration(d)
                    .map_err(|e| format!("--drain {d:?}: {e}; e.g. --drain 30s"))?,
            ),
            None => None,
        };
        let start_at = shard::parse_start_at(at).map_err(|e| e.to_string())?;
        // Refused here when too far ahead; the runner says when it starts once the scenario
        // is known to shard.
        shard::start_wait(start_at, chrono::Utc::now()).map_err(|e| e.to_string())?;
        Ok(Some(shard::ShardRun {
            shard,
            start_at,
            drain,
        }))
    }
}

fn merge(shards: &[PathBuf], out: &std::path::Path, wait: Option<&str>, json: bool) -> i32 {
    let wait = match wait.map(humantime::parse_duration).transpose() {
        Ok(w) => w,
        Err(e) => return fail("merge", json, &format!("--wait: {e}; e.g. --wait 2h")),
    };
    match ladder::commands::merge::merge(shards, out, wait, &notes()) {
        Ok(m) => {
            if json {
                crate::cli_json::print(&crate::cli_json::merge(&m));
            } else {
                println!("{}", terminal_line(&out.display().to_string()));
            }
            ladder::exit::OK
        }
        Err(e) => fail("merge", json, &e),
    }
}

/// An error that makes a command's input unusable: `error:` on stderr, with `--json` the
/// error document on stdout too; exit 2.
fn fail(command: &str, json: bool, e: &dyn std::fmt::Display) -> i32 {
    eprintln!("error: {e}");
    if json {
        crate::cli_json::print(&crate::cli_json::error(command, &e.to_string()));
    }
    ladder::exit::BAD_INPUT
}

// --- report (issue 6) ---
fn report(dirs: &[PathBuf], out: Option<PathBuf>, rung: Option<f64>) -> i32 {
    // A level is a measured value: finite, not negative (src/values.rs).
    if let Some(Err(e)) = rung.map(ladder::values::measured) {
        eprintln!(
            "error: --rung: not a rung level ({e:?}): give a rate or a user count, e.g. --rung 8"
        );
        return ladder::exit::BAD_INPUT;
    }
    let written = ladder::commands::report::report(dirs, out, rung, &notes());
    match written {
        Ok(paths) => {
            for p in paths {
                println!("{}", terminal_line(&p.display().to_string()));
            }
            ladder::exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            ladder::exit::BAD_INPUT
        }
    }
}

fn run(opts: ladder::runner::RunOptions) -> i32 {
    use ladder::runner::RunError;
    // Every folder the run produced gets its reports, partial ones included.
    match ladder::commands::run::run(&opts) {
        Ok(done) => {
            // A folder of failures only is no measurement: a CI step must not pass on it.
            let empty: Vec<_> = done.iter().filter(|o| o.measured_nothing()).collect();
            for o in &empty {
                eprintln!(
                    "error: {}: no request of any rung succeeded, so nothing was measured; the \
                     rung warnings above say what failed (a timeout: raise \
                     endpoint.request_timeout or lower the load), and the folder keeps every \
                     request's error",
                    terminal_line(&o.dir.display().to_string())
                );
            }
            if empty.is_empty() {
                ladder::exit::OK
            } else {
                ladder::exit::BAD_INPUT
            }
        }
        Err(e) => {
            match &e {
                // Scenario problems come as `file:line:col: error: ...` lines (as from
                // `ladder validate`): a first line says what they stopped.
                RunError::Scenario(m) if m.to_string().contains(": error: ") => {
                    eprintln!(
                        "error: {} cannot be run; nothing was sent:",
                        opts.scenario_path.display()
                    );
                    eprintln!("{m}");
                }
                // Preflight errors quote the server's answer: shown, never obeyed.
                _ => eprintln!("error: {}", terminal_line(&e.to_string())),
            }
            ladder::exit::BAD_INPUT
        }
    }
}

// ---- scenario: `validate` (owned by the scenario module) ----

/// `ladder validate FILE...`: problems to stderr, `ok: FILE` to stdout (with `--json` one
/// document instead); 0 when all are valid.
fn validate(files: &[PathBuf], json: bool) -> i32 {
    let checked: Vec<(&std::path::Path, ladder::commands::validate::Checked)> = files
        .iter()
        .map(|f| (f.as_path(), ladder::commands::validate::check(f)))
        .collect();
    for (f, c) in &checked {
        for d in &c.problems {
            eprintln!("{d}");
        }
        for n in &c.notes {
            eprintln!("{}: note: {n}", f.display());
        }
        for w in &c.warnings {
            eprintln!("{}: warning: {w}", f.display());
        }
        if c.ok && !json {
            println!("ok: {}", f.display());
        }
    }
    let code = if checked.iter().all(|(_, c)| c.ok) {
        ladder::exit::OK
    } else {
        ladder::exit::BAD_INPUT
    };
    if json {
        crate::cli_json::print(&crate::cli_json::validate(&checked, code));
    }
    code
}

/// `ladder slurm` / `ladder kube`: what was written is said by the command; an error here.
fn deployed(r: Result<(), ladder::deploy::DeployError>) -> i32 {
    match r {
        Ok(()) => ladder::exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            ladder::exit::BAD_INPUT
        }
    }
}

/// `ladder history`: the command shows the tables and writes the files; here its verdict
/// line (coloured when stdout gets colour) or its JSON document, and the exit code.
fn history(opts: &ladder::history::HistoryOptions) -> i32 {
    use ladder::stdio::{paint, Style};
    let h = match ladder::commands::history::history(opts, &notes()) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            if opts.json && e.has_document() {
                crate::cli_json::print(&crate::cli_json::error("history", &e.json_message()));
            }
            return ladder::exit::BAD_INPUT;
        }
    };
    if opts.json {
        crate::cli_json::print(&ladder::report::history::json::document(&h));
    } else {
        let line = terminal_line(&ladder::report::history::verdict_line(&h));
        let (word, style) = if h.exit_code() == ladder::exit::OK {
            ("ok:", Style::Good)
        } else {
            ("regression:", Style::Bad)
        };
        match line.strip_prefix(word) {
            Some(rest) => println!("{}{rest}", paint(style, word)),
            None => println!("{line}"),
        }
    }
    h.exit_code()
}
