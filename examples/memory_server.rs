//! Serves a fresh memory engine over RESP on 127.0.0.1, until Ctrl-C.
//!
//! ```text
//! cargo run --release --example memory_server -- --port 6380
//! redis-cli -p 6380 ping
//! ```
//!
//! Options: `--port N` (default 6380, next to Redis's 6379; 0 picks a free
//! port), `--bind ADDR` (default 127.0.0.1), `--cluster` (a one-node Redis
//! Cluster serving every slot: `redis-cli -c`, cluster clients and
//! `REDIS_CLUSTER_URLS=redis://127.0.0.1:6380` work against it).

use std::process::ExitCode;

use redmodel::memory::{serve, Engine};

const DEFAULT_PORT: u16 = 6380;
const USAGE: &str = "usage: memory_server [--port N] [--bind ADDR] [--cluster]";

struct Options {
    bind: String,
    port: u16,
    cluster: bool,
}

/// Reads `--port N` / `--port=N`, `--bind ADDR` / `--bind=ADDR` and
/// `--cluster`.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        bind: "127.0.0.1".into(),
        port: DEFAULT_PORT,
        cluster: false,
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
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let engine = if options.cluster {
        Engine::new().with_cluster_mode()
    } else {
        Engine::new()
    };
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
    match tokio::signal::ctrl_c().await {
        Ok(()) => println!("shutting down"),
        Err(e) => eprintln!("cannot wait for Ctrl-C ({e}); shutting down"),
    }
    server.shutdown().await;
    ExitCode::SUCCESS
}
