//! Thin binary: parse arguments, run one subcommand, map the outcome to an exit code.

fn main() {
    std::process::exit(ladder_cli::main());
}

// Shadow std's printing macros in every module below (textual scope): a closed pipe is not a
// panic, and the command keeps its exit code (see `ladder::stdio`).
macro_rules! println {
    () => { ::ladder::stdio::out(format_args!(""), true) };
    ($($t:tt)*) => { ::ladder::stdio::out(format_args!($($t)*), true) };
}
macro_rules! print {
    ($($t:tt)*) => { ::ladder::stdio::out(format_args!($($t)*), false) };
}
macro_rules! eprintln {
    () => { ::ladder::stdio::err(format_args!(""), true) };
    ($($t:tt)*) => { ::ladder::stdio::err(format_args!($($t)*), true) };
}

#[path = "cli.rs"]
mod ladder_cli;

#[path = "cli_init.rs"]
mod cli_init;

#[path = "cli_sim.rs"]
mod cli_sim;

#[path = "cli_examples.rs"]
mod cli_examples;

#[path = "cli_json.rs"]
mod cli_json;

#[path = "cli_signal.rs"]
mod cli_signal;
