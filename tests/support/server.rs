//! A private `redis-server` process for one test (or one test binary).
//!
//! The server listens on 127.0.0.1 only, on a port found free at start,
//! keeps its files in a temporary directory of its own, persists nothing
//! unless asked (`save ""`, `appendonly no`), and is killed when the
//! [`RedisServer`] is dropped. Fault tests can [`kill`](RedisServer::kill)
//! it (SIGKILL, no chance to save) and [`restart`](RedisServer::restart) it
//! on the same port and directory, so an append-only file written before
//! the crash is loaded again.
//!
//! The configuration is written to a file in that directory rather than
//! passed on the command line, so that any config line (`appendfsync
//! always`, `maxmemory 1mb`, ...) can be added with
//! [`RedisServerBuilder::config`].

use std::fmt;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::free_port;

/// How long a server may take to answer PING after it was spawned
/// (loading a large append-only file after a restart included).
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Start attempts with a fresh port, for when another process takes the
/// port between our probe and the server's bind.
const START_ATTEMPTS: usize = 5;

/// Why a server could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerError {
    /// The `redis-server` binary is not installed (or `REDIS_SERVER_BIN`
    /// names nothing runnable).
    NotInstalled(String),
    /// It is installed but did not come up; the text carries its log.
    Failed(String),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::NotInstalled(why) => write!(f, "redis-server is not installed: {why}"),
            ServerError::Failed(why) => write!(f, "redis-server did not start: {why}"),
        }
    }
}

impl std::error::Error for ServerError {}

/// The binary to run: `REDIS_SERVER_BIN` if set, else `redis-server` from `PATH`.
pub fn server_binary() -> String {
    std::env::var("REDIS_SERVER_BIN")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "redis-server".to_string())
}

/// Whether the server binary can be run at all; `Err` explains why not.
pub fn check_installed() -> Result<(), ServerError> {
    let bin = server_binary();
    match Command::new(&bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(ServerError::NotInstalled(format!(
            "`{bin} --version` exited with {status}"
        ))),
        Err(e) => Err(ServerError::NotInstalled(format!(
            "cannot run `{bin}`: {e}"
        ))),
    }
}

/// Options of a private server; see [`RedisServer::builder`].
#[derive(Debug, Clone, Default)]
pub struct RedisServerBuilder {
    appendonly: bool,
    tls: Option<TlsFiles>,
    also_tls: Option<TlsFiles>,
    extra: Vec<String>,
    die_with_parent: bool,
    sentinel: bool,
    binary: Option<String>,
    cluster_bus: bool,
}

/// The certificate files of a TLS-only server (see [`RedisServerBuilder::tls`]).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The server's certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The CA that signed it, also used to check client certificates.
    pub ca: PathBuf,
    /// `tls-auth-clients yes`: clients must present a certificate.
    pub auth_clients: bool,
}

impl RedisServerBuilder {
    /// `appendonly yes`: every write is logged and reloaded after a
    /// [`RedisServer::restart`] (default: no).
    pub fn appendonly(mut self, on: bool) -> Self {
        self.appendonly = on;
        self
    }

    /// Listens with TLS only: the port speaks TLS and no plain port is open.
    pub fn tls(mut self, files: TlsFiles) -> Self {
        self.tls = Some(files);
        self
    }

    /// Listens with TLS on a second port ([`RedisServer::tls_port`]) beside
    /// the plain one, which stays for the test's own checks.
    pub fn also_tls(mut self, files: TlsFiles) -> Self {
        self.also_tls = Some(files);
        self
    }

    /// Runs `binary` instead of [`server_binary`] (another version).
    pub fn binary(mut self, binary: impl Into<String>) -> Self {
        self.binary = Some(binary.into());
        self
    }

    /// Adds a line to the server's configuration file, after the defaults
    /// (so it overrides them), e.g. `"appendfsync always"`.
    pub fn config(mut self, line: impl Into<String>) -> Self {
        self.extra.push(line.into());
        self
    }

    /// Listens for the cluster bus on a port of its own
    /// ([`RedisServer::bus_port`]), found free at each start attempt as
    /// the client port is (`cluster-port`), rather than the client port
    /// plus 10,000.
    pub fn cluster_bus(mut self) -> Self {
        self.cluster_bus = true;
        self
    }

    /// Runs the process as a Redis Sentinel (`--sentinel`); its `sentinel
    /// ...` lines go in with [`config`](Self::config).
    pub fn sentinel(mut self) -> Self {
        self.sentinel = true;
        self
    }

    /// The server gets SIGKILL when the process that started it exits
    /// (PR_SET_PDEATHSIG, Linux): for servers kept in a static for a whole
    /// test binary, which is never dropped.
    pub fn die_with_parent(mut self) -> Self {
        self.die_with_parent = true;
        self
    }

    /// Starts the server and waits until it is ready.
    pub fn start(self) -> Result<RedisServer, ServerError> {
        check_installed()?;
        let dir = TempDir::new().map_err(|e| ServerError::Failed(format!("temp dir: {e}")))?;
        let mut server = RedisServer {
            port: 0,
            tls_port: None,
            bus_port: None,
            dir,
            options: self,
            child: None,
        };
        let port = || free_port().map_err(|e| ServerError::Failed(format!("free port: {e}")));
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            server.port = port()?;
            if server.options.also_tls.is_some() {
                server.tls_port = Some(port()?);
            }
            if server.options.cluster_bus {
                server.bus_port = Some(port()?);
            }
            match server.spawn_and_wait() {
                Ok(()) => return Ok(server),
                Err(e) => last_error = e,
            }
        }
        Err(ServerError::Failed(last_error))
    }
}

/// A `redis-server` child process, killed on drop.
pub struct RedisServer {
    port: u16,
    /// The second, TLS port of [`RedisServerBuilder::also_tls`].
    tls_port: Option<u16>,
    /// The cluster bus port of [`RedisServerBuilder::cluster_bus`].
    bus_port: Option<u16>,
    dir: TempDir,
    options: RedisServerBuilder,
    child: Option<Child>,
}

impl fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisServer")
            .field("port", &self.port)
            .field("dir", &self.dir.path)
            .field("running", &self.child.is_some())
            .finish()
    }
}

impl RedisServer {
    /// Starts a server with the defaults (no persistence) and waits until
    /// it answers PING.
    pub fn start() -> Result<RedisServer, ServerError> {
        Self::builder().start()
    }

    /// A builder for a server with other options.
    pub fn builder() -> RedisServerBuilder {
        RedisServerBuilder::default()
    }

    /// The loopback port it listens on (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The TLS port of a server started with
    /// [`also_tls`](RedisServerBuilder::also_tls).
    pub fn tls_port(&self) -> Option<u16> {
        self.tls_port
    }

    /// The cluster bus port of a server started with
    /// [`cluster_bus`](RedisServerBuilder::cluster_bus).
    pub fn bus_port(&self) -> Option<u16> {
        self.bus_port
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// `SCHEME://CREDENTIALS127.0.0.1:PORT/DB`, e.g. `url_with("rediss",
    /// "app:secret@", 2)`.
    pub fn url_with(&self, scheme: &str, credentials: &str, db: u32) -> String {
        format!("{scheme}://{credentials}127.0.0.1:{}/{db}", self.port)
    }

    /// A redis-rs client for it.
    pub fn client(&self) -> redis::Client {
        match redis::Client::open(self.url()) {
            Ok(client) => client,
            // A `redis://127.0.0.1:PORT/` URL always parses.
            Err(e) => panic!("redis-rs refused the URL {}: {e}", self.url()),
        }
    }

    /// The server's working directory (where an AOF or RDB file would be).
    pub fn dir(&self) -> &Path {
        &self.dir.path
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path.join("redis.log")).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Kills the server with SIGKILL (it cannot save anything) and waits
    /// for the process to end. Clients see their connections drop.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Fails only if it already exited, which is what we want anyway.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the process (SIGSTOP) without closing anything: its
    /// connections stay open and get no answer, as from a host gone
    /// without a word, until [`resume`](Self::resume) (or the kill on
    /// drop).
    pub fn pause(&mut self) {
        self.signal(libc::SIGSTOP);
    }

    /// Lets a [`pause`](Self::pause)d process run again (SIGCONT).
    pub fn resume(&mut self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&mut self, signal: libc::c_int) {
        let Some(child) = &self.child else { return };
        let Ok(pid) = libc::pid_t::try_from(child.id()) else {
            return;
        };
        // SAFETY: kill(2) with the pid of a child this struct still owns
        // (not yet waited for, so the pid is not reused).
        unsafe {
            libc::kill(pid, signal);
        }
    }

    /// Starts the server again, on the same port, directory and options
    /// (killing it first if it still runs), and waits until it answers.
    pub fn restart(&mut self) -> Result<(), ServerError> {
        self.kill();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            // The old socket may linger for a moment; retry the bind.
            match self.spawn_and_wait() {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() > deadline => return Err(ServerError::Failed(e)),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    fn write_config(&self) -> std::io::Result<PathBuf> {
        let dir = &self.dir.path;
        let mut conf = String::new();
        let tls = match (&self.options.tls, &self.options.also_tls, self.tls_port) {
            (Some(tls), _, _) => {
                conf.push_str("port 0\n");
                Some((tls, self.port))
            }
            (None, Some(tls), Some(tls_port)) => {
                conf.push_str(&format!("port {}\n", self.port));
                Some((tls, tls_port))
            }
            _ => {
                conf.push_str(&format!("port {}\n", self.port));
                None
            }
        };
        if let Some((tls, port)) = tls {
            conf.push_str(&format!("tls-port {port}\n"));
            conf.push_str(&format!("tls-cert-file {}\n", quote_config(&tls.cert)));
            conf.push_str(&format!("tls-key-file {}\n", quote_config(&tls.key)));
            conf.push_str(&format!("tls-ca-cert-file {}\n", quote_config(&tls.ca)));
            let auth = if tls.auth_clients { "yes" } else { "no" };
            conf.push_str(&format!("tls-auth-clients {auth}\n"));
        }
        conf.push_str("bind 127.0.0.1\n");
        conf.push_str("protected-mode yes\n");
        conf.push_str("daemonize no\n");
        conf.push_str(&format!("dir {}\n", quote_config(dir)));
        conf.push_str(&format!(
            "logfile {}\n",
            quote_config(&dir.join("redis.log"))
        ));
        conf.push_str("save \"\"\n");
        conf.push_str(if self.options.appendonly {
            "appendonly yes\n"
        } else {
            "appendonly no\n"
        });
        if let Some(bus) = self.bus_port {
            conf.push_str(&format!("cluster-port {bus}\n"));
        }
        for line in &self.options.extra {
            conf.push_str(line);
            conf.push('\n');
        }
        let path = dir.join("redis.conf");
        std::fs::write(&path, conf)?;
        Ok(path)
    }

    /// Spawns the process and waits until it is ready. On failure the
    /// process is gone and the error carries its log.
    fn spawn_and_wait(&mut self) -> Result<(), String> {
        let conf = self.write_config().map_err(|e| format!("config: {e}"))?;
        // The log tells when this very process is ready: start it empty.
        let _ = std::fs::remove_file(self.dir.path.join("redis.log"));
        let binary = self.options.binary.clone().unwrap_or_else(server_binary);
        let mut command = Command::new(binary);
        command.arg(&conf);
        if self.options.sentinel {
            command.arg("--sentinel");
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if self.options.die_with_parent {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl is async-signal-safe and touches no memory of
            // the parent; it runs in the child between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
        self.child = Some(child);
        match self.wait_ready() {
            Ok(()) => Ok(()),
            Err(why) => {
                let stderr = self.kill_and_read_stderr();
                Err(format!(
                    "{why} (port {}); stderr: {stderr}; log:\n{}",
                    self.port,
                    self.log()
                ))
            }
        }
    }

    /// Kills the process (if still running) and returns what it wrote to stderr.
    fn kill_and_read_stderr(&mut self) -> String {
        let mut out = String::new();
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            if let Some(mut stderr) = child.stderr.take() {
                let _ = stderr.read_to_string(&mut out);
            }
        }
        out
    }

    /// Waits until this very process logs "Ready to accept connections",
    /// which Redis does once it listens and has loaded its data. The log
    /// (in the server's own directory, emptied before the spawn) names no
    /// other process, and works where a PING cannot: a TLS-only port, a
    /// server with `requirepass`. A process that exits (its port was taken
    /// meanwhile) fails at once, and the caller retries on another port.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("exited with {status}"));
                }
            }
            // A sentinel logs its id once it listens, and no "Ready".
            let ready = if self.options.sentinel {
                "Sentinel ID is"
            } else {
                "Ready to accept connections"
            };
            if self.log().contains(ready) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("not ready within {READY_TIMEOUT:?}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A config-file string literal for a path.
fn quote_config(path: &Path) -> String {
    let s = path.to_string_lossy();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// What the servers' directories are named after, then the process id.
const TEMP_PREFIX: &str = "redmodel-redis-";

/// A directory of our own under the system temp dir, removed on drop.
/// The servers a test binary keeps in a static (the shared cluster) are
/// never dropped: the first server of a later test process removes the
/// directories of processes that have ended (their servers died with
/// them, [`RedisServerBuilder::die_with_parent`]).
#[derive(Debug)]
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| redmodel::memory::remove_ended_dirs(TEMP_PREFIX, Duration::ZERO));
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "{TEMP_PREFIX}{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir(&path)?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
