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
    // --- report (issue 6) ---
    /// Write summary.md, summary.csv, report.html (and analysis.json) for a result folder,
    /// or overlay two runs: `ladder report BASE CANDIDATE --out DIR`.
    Report {
        /// One result folder, or BASE and CANDIDATE folders to overlay.
        #[arg(required = true, num_args = 1..=2, value_name = "RESULT_DIR")]
        dirs: Vec<PathBuf>,
        /// Output folder (default: the result folder; for two runs `CANDIDATE/compare`).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
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
        Command::Schema => {
            eprintln!("ladder schema: not built yet");
            ladder::exit::BAD_INPUT
        }
        Command::Report { dirs, out } => report(&dirs, out),
    }
}

// --- report (issue 6) ---
fn report(dirs: &[PathBuf], out: Option<PathBuf>) -> i32 {
    let written = match dirs {
        [dir] => ladder::report::write_run(dir, out.as_deref().unwrap_or(dir)),
        [base, candidate] => {
            let out = out.unwrap_or_else(|| candidate.join("compare"));
            // The comparer's verdict rows join here once `compare` produces them.
            ladder::report::write_comparison(base, candidate, &out, None)
        }
        _ => unreachable!("clap allows one or two folders"),
    };
    match written {
        Ok(paths) => {
            for p in paths {
                println!("{}", p.display());
            }
            ladder::exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            ladder::exit::BAD_INPUT
        }
    }
}
