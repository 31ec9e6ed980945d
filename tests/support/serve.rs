//! Loopback servers of the end-to-end tests: an axum app on a port of its own (a thread with
//! its own runtime, for the rest of the test process), and a `ladder sim` process killed on
//! drop.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::routing::get;
use axum::Router;

/// Serve `app` on a free loopback port; its base URL (`http://127.0.0.1:P`).
pub fn serve(app: Router) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    let addr = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    format!("http://{addr}")
}

/// A router whose `GET /v1/models` lists the one model `id` (what preflight asks first).
pub fn listing<S: Clone + Send + Sync + 'static>(id: &'static str) -> Router<S> {
    Router::new().route(
        "/v1/models",
        get(move || async move { axum::Json(serde_json::json!({"data": [{"id": id}]})) }),
    )
}

/// `ladder sim --host 127.0.0.1 --port 0 ARGS` (without a key), killed on drop.
pub struct SimProc {
    child: Child,
    /// `127.0.0.1:P`, as its first line says.
    pub addr: String,
}

impl SimProc {
    pub fn start(args: &[&str]) -> SimProc {
        SimProc::start_env(args, &[])
    }

    /// [`SimProc::start`] with environment variables (`LADDER_SIM_API_KEY`, …).
    pub fn start_env(args: &[&str], envs: &[(&str, &str)]) -> SimProc {
        let mut cmd = Command::new(super::BIN);
        cmd.args(["sim", "--host", "127.0.0.1", "--port", "0"])
            .args(args)
            .env_remove("LADDER_SIM_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("ladder sim starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("first line: {line:?}"))
            .to_string();
        SimProc { child, addr }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server now (SIGKILL) and waits for it: its port refuses connections.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SimProc {
    fn drop(&mut self) {
        self.kill();
    }
}
