//! Interim test support for tests/lock.rs, tests/optimistic.rs and
//! tests/faults.rs, with the same names as the suite's own support
//! (`redmodel_suite`: `RedisServer`, `TestCtx`, `backend_tests!`), which is
//! being written on another branch. Once it is on main, these tests switch
//! to it and this file goes away.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redmodel::Db;

const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Options of a private server.
#[derive(Debug, Default, Clone)]
pub struct RedisServerBuilder {
    appendonly: bool,
    extra: Vec<String>,
}

impl RedisServerBuilder {
    pub fn appendonly(mut self, on: bool) -> Self {
        self.appendonly = on;
        self
    }

    pub fn config(mut self, line: impl Into<String>) -> Self {
        self.extra.push(line.into());
        self
    }

    pub fn start(self) -> Result<RedisServer, String> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "redmodel-conc-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("temp dir: {e}"))?;
        let mut server = RedisServer {
            port: 0,
            dir,
            options: self,
            child: None,
        };
        let mut last = String::new();
        for _ in 0..5 {
            let listener =
                TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("port: {e}"))?;
            server.port = listener.local_addr().map_err(|e| e.to_string())?.port();
            drop(listener);
            match server.spawn_and_wait() {
                Ok(()) => return Ok(server),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// A private `redis-server` child process, killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    options: RedisServerBuilder,
    child: Option<Child>,
}

impl RedisServer {
    pub fn start() -> Result<RedisServer, String> {
        Self::builder().start()
    }

    pub fn builder() -> RedisServerBuilder {
        RedisServerBuilder::default()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// SIGKILL, and wait for the process to end.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts again on the same port and directory.
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            match self.spawn_and_wait() {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    fn spawn_and_wait(&mut self) -> Result<(), String> {
        let mut conf = format!(
            "port {}\nbind 127.0.0.1\ndaemonize no\ndir \"{}\"\nlogfile \"{}\"\nsave \"\"\nappendonly {}\n",
            self.port,
            self.dir.display(),
            self.dir.join("redis.log").display(),
            if self.options.appendonly { "yes" } else { "no" }
        );
        for line in &self.options.extra {
            conf.push_str(line);
            conf.push('\n');
        }
        let path = self.dir.join("redis.conf");
        std::fs::write(&path, conf).map_err(|e| format!("config: {e}"))?;
        let child = Command::new("redis-server")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawn redis-server: {e}"))?;
        let pid = child.id();
        self.child = Some(child);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!("redis-server exited with {status}"));
            }
            if let Ok(info) = probe(SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))) {
                if info.contains(&format!("process_id:{pid}\r\n")) && info.contains("loading:0\r\n")
                {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(format!("redis-server on {} did not answer", self.port));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// PING then INFO; the INFO text if both answer.
fn probe(addr: SocketAddr) -> std::io::Result<String> {
    let no = |what: &str| std::io::Error::other(what.to_string());
    let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut writer = stream.try_clone()?;
    writer.write_all(b"PING\r\nINFO\r\n")?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    if line != "+PONG\r\n" {
        return Err(no("no PONG"));
    }
    line.clear();
    reader.read_line(&mut line)?;
    let len: usize = line
        .strip_prefix('$')
        .and_then(|n| n.trim_end().parse().ok())
        .ok_or_else(|| no("INFO is not a bulk string"))?;
    let mut body = vec![0; len];
    std::io::Read::read_exact(&mut reader, &mut body)?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// What a test body gets (a subset of `redmodel_suite::TestCtx`).
#[derive(Clone)]
pub struct TestCtx {
    pub db: Db,
    pub prefix: String,
    pub backend: &'static str,
    server: Option<Arc<RedisServer>>,
}

impl TestCtx {
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    pub fn is_memory(&self) -> bool {
        self.backend == "memory"
    }

    pub fn url(&self) -> Option<String> {
        self.server.as_ref().map(|s| s.url())
    }

    pub async fn memory(name: &str) -> TestCtx {
        TestCtx {
            db: Db::memory(),
            prefix: format!("t:{name}:"),
            backend: "memory",
            server: None,
        }
    }

    pub async fn redis(name: &str) -> TestCtx {
        let server = RedisServer::start().unwrap_or_else(|e| panic!("{name}: {e}"));
        let db = Db::connect(&server.url())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        TestCtx {
            db,
            prefix: format!("t:{name}:"),
            backend: "redis",
            server: Some(Arc::new(server)),
        }
    }
}

/// `backend_tests! { async fn name(ctx) { ... } }`: one test per backend,
/// `name::memory` and `name::redis`.
#[macro_export]
macro_rules! backend_tests {
    () => {};
    ($(#[$meta:meta])* async fn $name:ident($ctx:ident) $body:block $($rest:tt)*) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $(#[$meta])*
            #[::tokio::test]
            async fn memory() {
                let $ctx = $crate::concurrency_support::TestCtx::memory(module_path!()).await;
                let outcome: Result<(), redmodel::Error> = async move $body.await;
                outcome.unwrap();
            }

            $(#[$meta])*
            #[::tokio::test]
            async fn redis() {
                let $ctx = $crate::concurrency_support::TestCtx::redis(module_path!()).await;
                let outcome: Result<(), redmodel::Error> = async move $body.await;
                outcome.unwrap();
            }
        }
        $crate::backend_tests!($($rest)*);
    };
}
