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
    /// Run a scenario: preflight, then every rung; writes results/<scenario>/<timestamp>/.
    Run {
        /// The scenario file.
        scenario: PathBuf,
        /// Results root (default: results).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Replace the scenario's rates, e.g. --rates 5,10,20 (the baseline rung still runs first).
        #[arg(long, value_delimiter = ',', value_name = "RATES")]
        rates: Option<Vec<f64>>,
        /// No progress bars, tables or notes; errors only.
        #[arg(long, short)]
        quiet: bool,
        /// Print a JSON summary of the rungs on stdout (implies --quiet).
        #[arg(long)]
        json: bool,
    },
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
        Command::Run {
            scenario,
            out,
            rates,
            quiet,
            json,
        } => run(ladder::runner::RunOptions {
            scenario_path: scenario,
            out_dir: out,
            rates,
            quiet: quiet || json,
            json,
        }),
        Command::Schema => {
            eprintln!("ladder schema: not built yet");
            ladder::exit::BAD_INPUT
        }
    }
}

fn run(opts: ladder::runner::RunOptions) -> i32 {
    use ladder::runner::RunError;
    match ladder::runner::run_all(&opts) {
        Ok(_) => ladder::exit::OK,
        Err(e) => {
            match &e {
                RunError::Scenario(_) => eprintln!("{e}"),
                _ => eprintln!("error: {e}"),
            }
            ladder::exit::BAD_INPUT
        }
    }
}
