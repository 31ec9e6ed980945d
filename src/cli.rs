//! Command-line surface (clap). Each subcommand calls one library function.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Versioned load-test ladders for LLM inference servers, with a CI regression gate.
#[derive(Parser, Debug)]
#[command(name = "ladder", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check scenario files: schema and semantic checks, every problem with file:line:col.
    Validate {
        /// Scenario files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the JSON Schema of the current scenario version.
    Schema,
    // --- compare / gate / bless (src/compare) ---
    /// Compare two result folders: noise-aware verdicts per rung and metric, config diff.
    /// Exit 0 pass, 1 regression, 2 unusable input.
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
    Gate {
        /// Scenario file.
        scenario: PathBuf,
        /// Golden baselines root.
        #[arg(long, default_value = "golden")]
        golden: PathBuf,
        /// Results root for the fresh run.
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        gate: GateArgs,
        /// Compare even when model, workload or tokenizer differ.
        #[arg(long)]
        allow_config_change: bool,
    },
    /// Promote a result folder to golden/<scenario>/ (replacing the old baseline).
    Bless {
        /// The result folder to bless.
        result_dir: PathBuf,
        /// Golden baselines root.
        #[arg(long, default_value = "golden")]
        golden: PathBuf,
        /// Bless an interrupted, failed or still-running run anyway.
        #[arg(long)]
        force: bool,
    },
}

/// Options shared by `compare` and `gate`.
#[derive(clap::Args, Debug)]
struct GateArgs {
    /// Override a threshold: `METRIC=+15%`, `METRIC=-5%`, `METRIC=+0.01` (absolute),
    /// `METRIC<=0.02`, `METRIC>=4.5`. Repeatable; replaces other checks on that metric.
    #[arg(long = "threshold", value_name = "RULE")]
    thresholds: Vec<String>,
    /// Treat inconclusive checks as failures.
    #[arg(long)]
    strict: bool,
    /// Write a Markdown summary (e.g. "$GITHUB_STEP_SUMMARY").
    #[arg(long, value_name = "FILE.md")]
    summary: Option<PathBuf>,
    /// Write JUnit XML (one test case per rung and check).
    #[arg(long, value_name = "FILE.xml")]
    junit: Option<PathBuf>,
}

impl GateArgs {
    fn options(
        &self,
        allow_config_change: bool,
    ) -> Result<ladder::compare::GateOptions, ladder::compare::ThresholdError> {
        let overrides = self
            .thresholds
            .iter()
            .map(|t| ladder::compare::parse_override(t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ladder::compare::GateOptions {
            summary: self.summary.clone(),
            junit: self.junit.clone(),
            strict: self.strict,
            compare: ladder::compare::CompareOptions {
                overrides,
                allow_config_change,
            },
            ..Default::default()
        })
    }
}

/// `ladder compare` / `gate` / `bless`: run, print, map the outcome to an exit code.
fn compare_cmd(command: Command) -> i32 {
    use ladder::compare;
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("error: {e}");
        ladder::exit::BAD_INPUT
    };
    match command {
        Command::Compare {
            base,
            candidate,
            gate,
            allow_config_change,
        } => {
            let opts = match gate.options(allow_config_change) {
                Ok(o) => o,
                Err(e) => return fail(&e),
            };
            let c = match compare::compare_dirs(&base, &candidate, &opts.compare) {
                Ok(c) => c,
                Err(e) => return fail(&e),
            };
            print!("{}", compare::render::terminal(&c, opts.strict));
            if let Err(e) = compare::gate::write_outputs(&c, &opts) {
                return fail(&e);
            }
            c.exit_code(opts.strict)
        }
        Command::Gate {
            scenario,
            golden,
            out,
            gate,
            allow_config_change,
        } => {
            let opts = match gate.options(allow_config_change) {
                Ok(o) => compare::GateOptions {
                    scenario,
                    golden: Some(golden),
                    out,
                    ..o
                },
                Err(e) => return fail(&e),
            };
            match compare::gate(&opts) {
                Ok(c) => c.exit_code(opts.strict),
                Err(e) => fail(&e),
            }
        }
        Command::Bless {
            result_dir,
            golden,
            force,
        } => match compare::bless(&compare::BlessOptions {
            result_dir,
            golden: Some(golden),
            force,
        }) {
            Ok(dest) => {
                println!("blessed: {}", dest.display());
                ladder::exit::OK
            }
            Err(e) => fail(&e),
        },
        _ => unreachable!("only compare, gate and bless reach compare_cmd"),
    }
}

/// Parse the command line, run it, and return the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate { files } => {
            let _ = files;
            eprintln!("ladder validate: not built yet");
            ladder::exit::BAD_INPUT
        }
        Command::Schema => {
            eprintln!("ladder schema: not built yet");
            ladder::exit::BAD_INPUT
        }
        c @ (Command::Compare { .. } | Command::Gate { .. } | Command::Bless { .. }) => {
            compare_cmd(c)
        }
    }
}
