//! Signals during `ladder compare` and the comparison of `ladder gate`.

/// Ctrl-C or SIGTERM from now on ends the process: "stopped by SIGINT while comparing; no
/// verdict", exit 2 (as an interrupted `ladder run`). A comparison holds nothing worth
/// finishing, and without this a `ladder gate`, whose run installed the runtime's signal
/// handlers (they stay installed after the run), would ignore both until it finished. The
/// handlers are registered before this returns, so no signal after it is missed.
pub fn exit_on_signal() {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("warning: Ctrl-C may not stop this comparison: {e}");
            return;
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let streams = {
            let _in_rt = rt.enter();
            signal(SignalKind::interrupt()).and_then(|i| Ok((i, signal(SignalKind::terminate())?)))
        };
        let (mut int, mut term) = match streams {
            Ok(s) => s,
            Err(e) => {
                eprintln!("warning: Ctrl-C may not stop this comparison: {e}");
                return;
            }
        };
        std::thread::spawn(move || {
            let name = rt.block_on(async {
                tokio::select! {
                    _ = int.recv() => "SIGINT",
                    _ = term.recv() => "SIGTERM",
                }
            });
            eprintln!("\nstopped by {name} while comparing; no verdict");
            std::process::exit(ladder::exit::BAD_INPUT);
        });
    }
    #[cfg(not(unix))]
    std::thread::spawn(move || {
        let _ = rt.block_on(tokio::signal::ctrl_c());
        eprintln!("\nstopped by Ctrl-C while comparing; no verdict");
        std::process::exit(ladder::exit::BAD_INPUT);
    });
}
