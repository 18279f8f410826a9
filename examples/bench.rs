//! Throughput of the memory engine: in-process, over RESP, and a real Redis.
//!
//! ```text
//! cargo run --release --example bench
//! cargo run --release --example bench -- --reps 7 --millis 300
//! ```
//!
//! For each workload (SET, GET, INCR, HSET, HGETALL, LPUSH, LRANGE), sent
//! as single commands (one round trip each) and as pipelines of 100, it
//! measures operations per second of
//! - (a) the engine in-process, through `redmodel::Db::memory()`;
//! - (b) redis-rs against our RESP server (`redmodel::memory::serve`);
//! - (c) redis-rs against a real redis-server started on a free port
//!   (skipped, with a note, if `redis-server` is not installed);
//!
//! and prints the medians of several timed runs (the machine is noisy) with
//! the ratios. Both servers run in a process of their own (ours is this
//! program started again with `--serve`), so (b) and (c) pay the same
//! costs: loopback TCP, a separate process, redis-rs on the client side.
//! The whole run takes about 35 s with the defaults; `--only SET` runs one
//! workload.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{Cmd, Pipeline, RedisFuture, Value};
use redmodel::Db;
use redmodel_examples::bench::{fmt_rate, fmt_ratio, median, ops_per_sec, Options};
use redmodel_examples::child::{serve_or_run, EngineProcess};
use redmodel_suite::RedisServer;

const USAGE: &str = "usage: bench [--reps N] [--millis MS] [--only WORKLOAD]";
/// Commands per pipeline.
const PIPELINE: usize = 100;
/// Distinct keys / hashes used by the workloads.
const KEYS: usize = 1000;
const HASHES: usize = 100;
const FIELDS_PER_HASH: usize = 10;

/// One workload: the commands it cycles through.
struct Workload {
    name: &'static str,
    cmds: Vec<Cmd>,
}

fn cmd(args: &[&str]) -> Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// The workloads, `PIPELINE` commands each (cycled for single commands).
fn workloads() -> Vec<Workload> {
    let each = |f: &dyn Fn(usize) -> Cmd| (0..PIPELINE).map(f).collect::<Vec<_>>();
    vec![
        Workload {
            name: "SET",
            cmds: each(&|i| {
                cmd(&[
                    "SET",
                    &format!("bench:key:{}", i * 7 % KEYS),
                    "value-0123456789",
                ])
            }),
        },
        Workload {
            name: "GET",
            cmds: each(&|i| cmd(&["GET", &format!("bench:key:{}", i * 7 % KEYS)])),
        },
        Workload {
            name: "INCR",
            cmds: each(&|_| cmd(&["INCR", "bench:counter"])),
        },
        Workload {
            name: "HSET",
            cmds: each(&|i| {
                cmd(&[
                    "HSET",
                    &format!("bench:hash:{}", i % HASHES),
                    &format!("f{}", i % FIELDS_PER_HASH),
                    "value-0123456789",
                ])
            }),
        },
        Workload {
            name: "HGETALL",
            cmds: each(&|i| cmd(&["HGETALL", &format!("bench:hash:{}", i % HASHES)])),
        },
        Workload {
            name: "LPUSH",
            cmds: each(&|_| cmd(&["LPUSH", "bench:pushed", "value-0123456789"])),
        },
        Workload {
            name: "LRANGE_100",
            cmds: each(&|_| cmd(&["LRANGE", "bench:list", "0", "99"])),
        },
    ]
}

/// Data the read workloads need: keys, hashes of 10 fields, a list of 100.
fn fixture() -> Pipeline {
    let mut p = redis::pipe();
    for k in 0..KEYS {
        p.add_command(cmd(&["SET", &format!("bench:key:{k}"), "value-0123456789"]))
            .ignore();
    }
    for h in 0..HASHES {
        for f in 0..FIELDS_PER_HASH {
            p.add_command(cmd(&[
                "HSET",
                &format!("bench:hash:{h}"),
                &format!("f{f}"),
                "value-0123456789",
            ]))
            .ignore();
        }
    }
    for _ in 0..100 {
        p.add_command(cmd(&["RPUSH", "bench:list", "value-0123456789"]))
            .ignore();
    }
    p
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Single,
    Pipelined,
}

const MODES: [(Mode, &str); 2] = [(Mode::Single, "single"), (Mode::Pipelined, "pipe100")];

/// What the workloads run against.
enum Conn {
    Memory(Db),
    Server(MultiplexedConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Memory(db) => db.req_packed_command(cmd),
            Conn::Server(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Memory(db) => db.req_packed_commands(pipeline, offset, count),
            Conn::Server(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// One of the three columns: a connection, and the server process behind
/// it, killed when the target is dropped.
struct Target {
    label: &'static str,
    conn: Conn,
    _process: Option<Server>,
}

/// Runs `workload` for `run` and returns operations per second.
async fn timed_run(
    conn: &mut Conn,
    workload: &Workload,
    pipe: &Pipeline,
    mode: Mode,
    run: Duration,
) -> redis::RedisResult<f64> {
    ops_per_sec(run, async || {
        match mode {
            Mode::Single => {
                for c in &workload.cmds {
                    conn.req_packed_command(c).await.and_then(check)?;
                }
            }
            Mode::Pipelined => {
                let replies = conn.req_packed_commands(pipe, 0, PIPELINE).await?;
                replies.into_iter().try_for_each(|r| check(r).map(drop))?;
            }
        }
        Ok(workload.cmds.len())
    })
    .await
}

/// Turns an error reply into an error (a workload the target cannot run).
fn check(reply: Value) -> redis::RedisResult<Value> {
    match reply {
        Value::ServerError(e) => Err(e.into()),
        other => Ok(other),
    }
}

/// The median rate of every target for one workload and mode. The targets
/// take turns run after run, so that a burst of load on the machine hits
/// all of them alike. `None` where a target replied with an error.
async fn measure(
    targets: &mut [Option<Target>],
    workload: &Workload,
    mode: Mode,
    options: &Options,
) -> Vec<Option<f64>> {
    let mut pipe = redis::pipe();
    for c in &workload.cmds {
        pipe.add_command(c.clone());
    }
    let mut runs: Vec<Option<Vec<f64>>> = targets
        .iter()
        .map(|t| t.as_ref().map(|_| Vec::new()))
        .collect();
    for _ in 0..options.reps {
        for (target, runs) in targets.iter_mut().zip(&mut runs) {
            let (Some(target), Some(rates)) = (target, runs.as_mut()) else {
                continue;
            };
            match timed_run(&mut target.conn, workload, &pipe, mode, options.run).await {
                Ok(rate) => rates.push(rate),
                Err(e) => {
                    if mode == Mode::Single {
                        println!(
                            "note: {} not measured on {}: {e}",
                            workload.name, target.label
                        );
                    }
                    *runs = None;
                }
            }
        }
    }
    runs.into_iter().map(|r| r.and_then(median)).collect()
}

/// What keeps a target's server alive: our engine served by a child
/// process, or a private redis-server from the test support.
enum Server {
    Ours(EngineProcess),
    Redis(Box<RedisServer>),
}

impl Server {
    fn port(&self) -> u16 {
        match self {
            Server::Ours(p) => p.port(),
            Server::Redis(r) => r.port(),
        }
    }
}

/// Connects redis-rs to a server process, waiting for it to listen.
async fn connect(label: &'static str, process: Server) -> Result<Target, String> {
    let url = format!("redis://127.0.0.1:{}/", process.port());
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match client.get_multiplexed_async_connection().await {
            Ok(c) => {
                return Ok(Target {
                    label,
                    conn: Conn::Server(c),
                    _process: Some(process),
                })
            }
            Err(e) if Instant::now() > deadline => return Err(e.to_string()),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

fn main() -> ExitCode {
    serve_or_run(|args| {
        let options = Options::new(5, 150).parse(args, USAGE, &mut [])?;
        Ok(bench(options))
    })
}

/// Starts the three targets; a server that cannot be had is `None`, with a note.
async fn targets() -> Vec<Option<Target>> {
    let in_process = Target {
        label: "(a) in-process",
        conn: Conn::Memory(Db::memory()),
        _process: None,
    };
    let ours = match EngineProcess::start() {
        Ok(p) => connect("(b) our server", Server::Ours(p)).await,
        Err(e) => Err(e),
    };
    let redis = match RedisServer::start() {
        Ok(r) => connect("(c) redis-server", Server::Redis(Box::new(r))).await,
        Err(e) => Err(e.to_string()),
    };
    let mut all = vec![Some(in_process)];
    for (name, target) in [("(b) our server", ours), ("(c) redis-server", redis)] {
        match target {
            Ok(t) => all.push(Some(t)),
            Err(e) => {
                println!("note: {name} skipped: {e}");
                all.push(None);
            }
        }
    }
    // The data the read workloads need; a target without some of the
    // commands still runs the workloads it has.
    for t in all.iter_mut().flatten() {
        let _ = fixture().query_async::<()>(&mut t.conn).await;
    }
    all
}

async fn bench(options: Options) -> ExitCode {
    let started = Instant::now();
    let workloads: Vec<Workload> = workloads()
        .into_iter()
        .filter(|w| options.selects(w.name))
        .collect();
    println!(
        "redmodel bench: ops/s, median of {} runs of {} ms, pipelines of {PIPELINE}",
        options.reps,
        options.run.as_millis()
    );
    println!("(a) in-process Db::memory()  (b) redis-rs -> our RESP server  (c) redis-rs -> redis-server");
    println!("(both servers in a process of their own, on loopback)");
    let mut targets = targets().await;
    let mut rows = Vec::new();
    for w in &workloads {
        for (mode, mode_name) in MODES {
            let rates = measure(&mut targets, w, mode, &options).await;
            rows.push((w.name, mode_name, rates));
        }
    }
    drop(targets);

    println!();
    println!(
        "{:<11} {:<8} {:>11} {:>11} {:>11} {:>8} {:>8}",
        "workload", "mode", "(a)", "(b)", "(c)", "(a)/(b)", "(b)/(c)"
    );
    for (name, mode, rates) in rows {
        let rate = |i: usize| rates.get(i).copied().flatten();
        println!(
            "{:<11} {:<8} {:>11} {:>11} {:>11} {:>8} {:>8}",
            name,
            mode,
            fmt_rate(rate(0)),
            fmt_rate(rate(1)),
            fmt_rate(rate(2)),
            fmt_ratio(rate(0), rate(1)),
            fmt_ratio(rate(1), rate(2))
        );
    }
    println!();
    println!("(a)/(b): the cost of the network and the protocol; (b)/(c): our server against Redis (1.00x: as fast)");
    println!("total time: {:.1} s", started.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}
