//! Thin binary: parse arguments, run one subcommand, map the outcome to an exit code.

fn main() {
    std::process::exit(ladder_cli::main());
}

#[path = "cli.rs"]
mod ladder_cli;

#[path = "cli_init.rs"]
mod cli_init;

#[path = "cli_sim.rs"]
mod cli_sim;

#[path = "cli_signal.rs"]
mod cli_signal;
