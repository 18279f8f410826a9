//! Backends for the model tests: every test body runs on a fresh memory
//! engine and on a private redis-server that the test starts on a free
//! loopback port (and stops when done), so no test touches data it did not
//! create.
//!
//! `REDMODEL_TEST_BACKENDS=memory` or `=redis` restricts the run to one
//! backend. Without a `redis-server` binary the Redis runs are skipped,
//! except under `CI=true`, where that is a failure.
//!
//! (A local helper until the shared test support covers the same ground.)

#![allow(dead_code)]

pub mod models;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redmodel::Db;

/// A redis-server of our own, stopped on drop.
pub struct RedisServer {
    child: Child,
    pub port: u16,
}

impl RedisServer {
    /// Starts one, or `None` if there is no redis-server binary.
    pub async fn start() -> Option<RedisServer> {
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .ok()?;
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            let child = match child {
                Ok(child) => child,
                Err(_) => {
                    assert!(
                        std::env::var("CI").as_deref() != Ok("true"),
                        "redis-server is required under CI=true"
                    );
                    return None;
                }
            };
            let mut server = RedisServer { child, port };
            if server.wait_ready().await {
                return Some(server);
            }
        }
        panic!("could not start redis-server");
    }

    async fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false; // exited: port taken meanwhile
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One backend to run a test body on.
pub struct Backend {
    pub name: &'static str,
    pub db: Db,
    _server: Option<RedisServer>,
}

fn wanted(name: &str) -> bool {
    match std::env::var("REDMODEL_TEST_BACKENDS") {
        Ok(list) if !list.trim().is_empty() => list.split(',').any(|b| b.trim() == name),
        _ => true,
    }
}

/// A fresh memory engine and, if available, a private redis-server.
pub async fn backends() -> Vec<Backend> {
    let mut out = Vec::new();
    if wanted("memory") {
        out.push(Backend {
            name: "memory",
            db: Db::memory(),
            _server: None,
        });
    }
    if wanted("redis") {
        if let Some(server) = RedisServer::start().await {
            let db = Db::connect(&server.url())
                .await
                .expect("connect to redis-server");
            out.push(Backend {
                name: "redis",
                db,
                _server: Some(server),
            });
        }
    }
    out
}

/// Runs `body` on every backend; a failure names the backend.
#[macro_export]
macro_rules! on_every_backend {
    (|$db:ident| $body:expr) => {{
        for backend in $crate::model_support::backends().await {
            eprintln!("-- on the {} backend", backend.name);
            let $db: &redmodel::Db = &backend.db;
            let result: Result<(), redmodel::Error> = async { $body }.await;
            if let Err(err) = result {
                panic!("on the {} backend: {err}", backend.name);
            }
        }
    }};
}
