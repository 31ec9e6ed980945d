//! The built-in OpenAI-compatible serving simulator (`ladder sim`, or `base_url: sim`).
//!
//! A real HTTP server (axum on the caller's tokio runtime) in front of a modelled
//! continuously-batching engine; docs/sim.md describes the model and every setting.

mod app;
mod embeddings;
mod engine;
mod http;
mod images;
mod metrics_page;
mod prefix_cache;
mod rerank;
mod stream;
mod tokenize;
mod typed;
mod words;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use crate::scenario::sim::{SimConfig, SimModel, DEFAULT_MODEL};
pub use app::FAULT_HEADER;

/// Environment variable `ladder sim` reads the API key from when `--api-key` is not given.
pub const API_KEY_ENV: &str = "LADDER_SIM_API_KEY";

/// How long `shutdown` waits for connections to close before cutting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Connections the kernel queues for the simulator before it accepts them. std's (and so
/// tokio's) default of 128 overflows when a client opens a few hundred connections at once
/// (a burst at 10,000 req/s): the kernel then drops their SYNs, which the client resends only
/// a second later, and the client's benchmark measures that second. Linux caps it at
/// net.core.somaxconn.
const LISTEN_BACKLOG: u32 = 4096;

/// A listening socket on `addr` with [`LISTEN_BACKLOG`] (SO_REUSEADDR, as std sets it).
fn listen(addr: SocketAddr) -> io::Result<tokio::net::TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// A running simulator. Dropping it without [`SimServer::shutdown`] also stops it, abruptly.
pub struct SimServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    serve: Option<JoinHandle<io::Result<()>>>,
    engine: Option<JoinHandle<()>>,
    cfg: SimConfig,
    drift: engine::RunFactor,
}

/// Starts runs of a simulator with drift: each run's speed factor is drawn from
/// `sim.drift` / `sim.drift_seed` (docs/sim.md). Cloneable, usable from any thread.
#[derive(Debug, Clone)]
pub struct RunControl {
    drift: engine::RunFactor,
    cfg: SimConfig,
}

impl RunControl {
    /// From now on, serve at the speed of run `run` (0-based; a simulator starts in run 0).
    /// Returns the speed factor of that run.
    pub fn start_run(&self, run: u64) -> f64 {
        let f = self.cfg.drift_factor(run);
        self.drift.set(f);
        f
    }
}

impl SimServer {
    /// Bind `addr` (port 0 = ephemeral) and serve on the current tokio runtime. The API key,
    /// if any, is read from the variable named by `cfg.api_key_env`.
    pub async fn start(cfg: SimConfig, addr: SocketAddr) -> io::Result<SimServer> {
        let key = match &cfg.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.is_empty() => Some(k),
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("sim.api_key_env names `{var}`, but `{var}` is not set; export it or drop api_key_env"),
                    ))
                }
            },
        };
        Self::start_with_api_key(cfg, addr, key).await
    }

    /// Like [`SimServer::start`], with the API key given directly (`None`: no auth).
    pub async fn start_with_api_key(
        cfg: SimConfig,
        addr: SocketAddr,
        api_key: Option<String>,
    ) -> io::Result<SimServer> {
        let problems = cfg.problems();
        if !problems.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                problems.join("; "),
            ));
        }
        let listener = listen(addr)?;
        let addr = listener.local_addr()?;
        let (stop, stop_rx) = watch::channel(false);
        let (jobs_tx, jobs_rx) = mpsc::unbounded_channel();
        let stats = Arc::new(engine::Stats::default());
        let drift = engine::RunFactor::new(cfg.drift_factor(0));
        let drift_cfg = cfg.clone();
        let engine = tokio::spawn(engine::run(
            cfg.clone(),
            drift.clone(),
            stats.clone(),
            jobs_rx,
            stop_rx.clone(),
        ));
        let app = Arc::new(app::App {
            names: cfg.model_names(),
            cfg,
            api_key,
            stats,
            jobs: jobs_tx,
            counter: AtomicU64::new(0),
            shutdown: stop_rx.clone(),
        });
        let mut graceful = stop_rx;
        let serve = tokio::spawn(async move {
            // Streams write small chunks: disable Nagle so a token is not held back waiting
            // for the client's delayed ACK of the previous write.
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, http::router(app))
                .with_graceful_shutdown(async move {
                    let _ = graceful.wait_for(|s| *s).await;
                })
                .await
        });
        Ok(SimServer {
            addr,
            stop,
            serve: Some(serve),
            engine: Some(engine),
            cfg: drift_cfg,
            drift,
        })
    }

    /// The handle that moves the simulator to its next run (drift).
    pub fn run_control(&self) -> RunControl {
        RunControl {
            drift: self.drift.clone(),
            cfg: self.cfg.clone(),
        }
    }

    /// The bound address (with the real port when started on port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting, end in-flight streams (they close without `[DONE]`), and wait for
    /// connections to close (at most a few seconds, then they are cut).
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(engine) = self.engine.take() {
            let _ = engine.await;
        }
        if let Some(mut serve) = self.serve.take() {
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut serve)
                .await
                .is_err()
            {
                serve.abort();
            }
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(s) = self.serve.take() {
            s.abort();
        }
    }
}

/// `ladder sim`: serve until SIGINT/SIGTERM. `on_listening` hears the bound address first
/// (the binary prints `listening on http://ADDR` there, so scripts and tests can read the
/// port); its error ends the serving.
pub async fn serve_until_signal(
    cfg: SimConfig,
    addr: SocketAddr,
    api_key: Option<String>,
    on_listening: impl FnOnce(SocketAddr) -> io::Result<()>,
) -> io::Result<()> {
    let server = SimServer::start_with_api_key(cfg, addr, api_key).await?;
    if let Err(e) = on_listening(server.local_addr()) {
        server.shutdown().await;
        return Err(e);
    }
    wait_for_signal().await;
    server.shutdown().await;
    Ok(())
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
