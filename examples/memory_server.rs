//! Serves a fresh memory engine over RESP on 127.0.0.1, until Ctrl-C (or,
//! on Unix, SIGTERM, as `kill` and service managers stop redis-server).
//!
//! ```text
//! cargo run --release --example memory_server -- --port 6380
//! redis-cli -p 6380 ping
//! ```
//!
//! Options: `--port N` (default 6380, next to Redis's 6379; 0 picks a free
//! port), `--bind ADDR` (default 127.0.0.1), `--cluster` (a one-node Redis
//! Cluster serving every slot: `redis-cli -c`, cluster clients and
//! `REDIS_CLUSTER_URLS=redis://127.0.0.1:6380` work against it),
//! `--threads N` (default 1: see below), `--dir D` and `--dbfilename F`
//! (the RDB file, as redis-server takes them: loaded at start if it
//! exists, written by SAVE and BGSAVE; `--dir` defaults to the current
//! directory and `--dbfilename` to `dump.rdb` when the other is given; a
//! file that fails to load stops the server before it listens),
//! `--appendonly yes` (the append-only files in `--dir`, as redis-server
//! keeps them: loaded at start instead of the RDB file, every change
//! appended after; files that fail to load stop the server),
//! `--redis-version V` (`7.0`, the default, or `7.4`: the Redis release
//! the engine behaves as, `7.4` with hash-field expiration).
//!
//! One worker thread serves every connection by default, as Redis's one
//! thread does: the store is one lock, so a second worker adds no
//! parallelism to the commands, only threads waking each other around
//! that lock (under `redis-benchmark -P 16` on two cores, a third of the
//! server's CPU went to the kernel's thread switches, and one worker ran
//! 1.0x to 1.4x faster). It is still a multi-thread runtime: a script
//! past `busy-reply-threshold` hands its worker over to a new one, so
//! that other connections get BUSY and may SCRIPT KILL it.
//!
//! With any number of workers, requests reach the engine in the order
//! they arrived across connections, as on Redis: a BLPOP sent before
//! another client's RPUSH is served first.

use std::process::ExitCode;

use redmodel::memory::{serve, Engine, RedisVersion};

const DEFAULT_PORT: u16 = 6380;
const USAGE: &str =
    "usage: memory_server [--port N] [--bind ADDR] [--cluster] [--threads N] [--dir D] [--dbfilename F] [--appendonly yes|no] [--redis-version 7.0|7.4]";

struct Options {
    bind: String,
    port: u16,
    cluster: bool,
    threads: usize,
    dir: Option<String>,
    dbfilename: Option<String>,
    appendonly: bool,
    version: RedisVersion,
}

/// Reads `--port N` / `--port=N`, `--bind ADDR` / `--bind=ADDR`,
/// `--cluster`, `--threads N` / `--threads=N`, `--dir D` and
/// `--dbfilename F`, `--appendonly yes|no`, `--redis-version V` (either
/// form).
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        bind: "127.0.0.1".into(),
        port: DEFAULT_PORT,
        cluster: false,
        threads: 1,
        dir: None,
        dbfilename: None,
        appendonly: false,
        version: RedisVersion::default(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (name, inline_value) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = |flag: &str| {
            inline_value
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match name.as_str() {
            "--port" | "-p" => {
                let v = value("--port")?;
                options.port = v.parse().map_err(|_| format!("bad port {v:?}\n{USAGE}"))?;
            }
            "--bind" => options.bind = value("--bind")?,
            "--cluster" => options.cluster = true,
            "--threads" => {
                let v = value("--threads")?;
                options.threads = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("bad thread count {v:?}\n{USAGE}"))?;
            }
            "--dir" => options.dir = Some(value("--dir")?),
            "--dbfilename" => options.dbfilename = Some(value("--dbfilename")?),
            "--appendonly" => {
                options.appendonly = match value("--appendonly")?.as_str() {
                    "yes" => true,
                    "no" => false,
                    other => return Err(format!("--appendonly takes yes or no, not {other:?}")),
                }
            }
            "--redis-version" => {
                let v = value("--redis-version")?;
                options.version = v.parse().map_err(|e| format!("{e}\n{USAGE}"))?;
            }
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.threads)
        .enable_all()
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(run(options)),
        Err(e) => {
            eprintln!("no tokio runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> ExitCode {
    let mut engine = Engine::new().with_version(options.version);
    if options.cluster {
        engine = engine.with_cluster_mode();
    }
    if options.appendonly {
        let dir = options.dir.as_deref().unwrap_or(".");
        engine = match engine.with_aof(dir) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("cannot load the append-only files in {dir}: {e}");
                return ExitCode::FAILURE;
            }
        };
    } else if options.dir.is_some() || options.dbfilename.is_some() {
        let dir = options.dir.as_deref().unwrap_or(".");
        let file = options.dbfilename.as_deref().unwrap_or("dump.rdb");
        engine = match engine.with_rdb_file(dir, file) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("cannot load {dir}/{file}: {e}");
                return ExitCode::FAILURE;
            }
        };
    }
    let server = match serve(engine, (options.bind.as_str(), options.port)).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot listen on {}:{}: {e}", options.bind, options.port);
            return ExitCode::FAILURE;
        }
    };
    let addr = server.local_addr();
    let mode = if options.cluster {
        " (cluster mode: one node, every slot)"
    } else {
        ""
    };
    println!("redmodel memory engine serving RESP on {addr}{mode}");
    println!("try: redis-cli -h {} -p {} ping", addr.ip(), addr.port());
    match stop_signal().await {
        Ok(()) => println!("shutting down"),
        Err(e) => eprintln!("cannot wait for a signal to stop ({e}); shutting down"),
    }
    // The engine goes with the server: its own directory (where SAVE and
    // the AOF write without `--dir`) is removed.
    server.shutdown().await;
    ExitCode::SUCCESS
}

/// Ctrl-C (SIGINT), or on Unix SIGTERM.
async fn stop_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            stopped = tokio::signal::ctrl_c() => stopped,
            _ = terminate.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
