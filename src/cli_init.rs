//! `ladder init` (the command is `commands::init`) and `ladder completions SHELL`.

/// `ladder init`: 0 written, 2 when the arguments do not make a valid scenario.
pub fn init(a: &ladder::commands::init::InitArgs) -> i32 {
    use ladder::commands::init::InitError;
    match ladder::commands::init::init(a, &crate::ladder_cli::notes()) {
        Ok(()) => ladder::exit::OK,
        Err(e) => {
            if let InitError::Invalid { problems } = &e {
                for p in problems {
                    eprintln!("error: {p}");
                }
            }
            eprintln!("error: {e}");
            ladder::exit::BAD_INPUT
        }
    }
}

/// `ladder completions SHELL`: the completion script on stdout.
pub fn completions(shell: clap_complete::Shell, cmd: &mut clap::Command) -> i32 {
    // Into a buffer first: clap_complete panics on a write error (`| head`).
    let mut buf = Vec::new();
    clap_complete::generate(shell, cmd, "ladder", &mut buf);
    print!("{}", String::from_utf8_lossy(&buf));
    ladder::exit::OK
}
