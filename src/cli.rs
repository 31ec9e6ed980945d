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
}

/// Parse the command line, run it, and return the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate { files } => validate(&files),
        Command::Schema => {
            println!("{}", ladder::scenario::schema_json());
            ladder::exit::OK
        }
    }
}

// ---- scenario: `validate` (owned by the scenario module) ----

/// `ladder validate FILE...`: problems to stderr, `ok: FILE` to stdout; 0 when all are valid.
fn validate(files: &[PathBuf]) -> i32 {
    let mut all_ok = true;
    for f in files {
        let (loaded, diags) =
            ladder::scenario::check_file(f, Some(&ladder::workload::tokenizer::check));
        for d in &diags {
            eprintln!("{d}");
        }
        if let Some(l) = loaded.filter(|_| diags.is_empty()) {
            for n in &l.notes {
                eprintln!("{}: note: {n}", f.display());
            }
            println!("ok: {}", f.display());
        } else {
            all_ok = false;
        }
    }
    if all_ok {
        ladder::exit::OK
    } else {
        ladder::exit::BAD_INPUT
    }
}
