//! Hosting the built-in simulator for `base_url: sim`: on its own thread and runtime, so
//! its work does not share the client's scheduler, on an ephemeral loopback port.

use std::net::SocketAddr;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::sim::{RunControl, SimConfig, SimServer};

/// A simulator running in this process; stopped on drop.
pub struct SimHost {
    addr: SocketAddr,
    control: RunControl,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl SimHost {
    /// Start the simulator on 127.0.0.1 with an ephemeral port.
    pub fn start(cfg: SimConfig) -> std::io::Result<SimHost> {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("ladder-sim".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = addr_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let bind: SocketAddr = ([127, 0, 0, 1], 0).into();
                    match SimServer::start(cfg, bind).await {
                        Ok(server) => {
                            let _ = addr_tx.send(Ok((server.local_addr(), server.run_control())));
                            let _ = stop_rx.await;
                            server.shutdown().await;
                        }
                        Err(e) => {
                            let _ = addr_tx.send(Err(e));
                        }
                    }
                });
            })?;
        let (addr, control) = addr_rx
            .recv()
            .map_err(|_| std::io::Error::other("simulator thread ended before starting"))??;
        Ok(SimHost {
            addr,
            control,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// Start run `run` (0-based) of the simulator: with `sim.drift`, a new speed factor.
    pub fn start_run(&self, run: u64) -> f64 {
        self.control.start_run(run)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for SimHost {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
