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
        Command::Validate { files } => {
            let _ = files;
            eprintln!("ladder validate: not built yet");
            ladder::exit::BAD_INPUT
        }
        Command::Schema => {
            eprintln!("ladder schema: not built yet");
            ladder::exit::BAD_INPUT
        }
    }
}
