//! The engine's RESP server against redis-server, as servers: under
//! `redis-benchmark`, and reclaiming keys that expire unread.
//!
//! ```text
//! cargo run --release --example bench_server
//! cargo run --release --example bench_server -- --only expiry --keys 1000000
//! ```
//!
//! - `redis-benchmark`: `-P 16` (pipelined, 50 clients) and `-c 50`
//!   unpipelined, the same tests with random keys (`-r`), against our server
//!   (this program started again with `--serve`: a process of its own, as
//!   `memory_server`) and a private redis-server 7.0.15, taking turns round
//!   after round; medians of the requests per second and the ratio.
//! - `expiry`: `--keys` keys (default 1,000,000) written with `SET ... PX
//!   1000` in pipelines and never read; the time from the last key's expiry
//!   until `DBSIZE` is 0, which only the active expiry cycle can do (both
//!   at Redis's default `hz 10`).
//!
//! Needs `redis-server` and `redis-benchmark` (Debian's redis-server and
//! redis-tools); a part that cannot run says why and is skipped.

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redmodel_examples::bench::{fmt_ratio, median, Options};
use redmodel_examples::child::{serve_or_run, EngineProcess};
use redmodel_suite::RedisServer;

const USAGE: &str =
    "usage: bench_server [--reps N] [--only redis-benchmark|expiry] [--requests N] [--keys N]";
/// The tests `redis-benchmark` runs.
const TESTS: &str = "set,get,incr,lpush,rpop,sadd,hset,zadd,lrange_100";
/// The two load shapes: `redis-benchmark` arguments besides the tests.
const SHAPES: [(&str, &[&str]); 2] = [
    ("-P 16", &["-P", "16", "-c", "50"]),
    ("-c 50", &["-c", "50"]),
];

/// The two servers, ours first.
struct Servers {
    ours: EngineProcess,
    redis: RedisServer,
}

impl Servers {
    fn ports(&self) -> [(&'static str, u16); 2] {
        [
            ("our server", self.ours.port()),
            ("redis-server", self.redis.port()),
        ]
    }
}

/// One `redis-benchmark` run: requests per second by test name.
fn redis_benchmark(port: u16, shape: &[&str], requests: u64) -> Result<Vec<(String, f64)>, String> {
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-t", TESTS, "-r", "100000", "-q", "--csv"])
        .args(["-n", &requests.to_string()])
        .args(shape)
        .output()
        .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // `"SET","229885.06","3.245",...` after a header line of names.
    let rows = text
        .lines()
        .filter_map(|line| {
            let mut cells = line.split(',').map(|c| c.trim_matches('"'));
            // `LRANGE_100 (first 100 elements)`: the name is the first
            // word; the LPUSH that fills LRANGE's list is not a test.
            let name = cells.next()?;
            if name.contains("needed to benchmark") {
                return None;
            }
            let rps: f64 = cells.next()?.parse().ok()?;
            Some((name.split(' ').next()?.to_string(), rps))
        })
        .collect::<Vec<_>>();
    if rows.is_empty() {
        return Err(format!("redis-benchmark printed no figures: {text:?}"));
    }
    Ok(rows)
}

/// `reps` rounds of every shape on both servers, taking turns; prints the
/// medians and the ratios.
fn benchmark(servers: &Servers, reps: usize, requests: u64) -> Result<(), String> {
    println!();
    println!(
        "redis-benchmark -t {TESTS} -r 100000 -n {requests}: requests/s, median of {reps} rounds"
    );
    println!(
        "{:<7} {:<11} {:>12} {:>12} {:>10}",
        "shape", "test", "our server", "redis-server", "ours/redis"
    );
    for (shape, args) in SHAPES {
        // runs[server][test] = rates of the rounds.
        let mut runs: [Vec<(String, Vec<f64>)>; 2] = [Vec::new(), Vec::new()];
        for _ in 0..reps {
            for (side, (_, port)) in servers.ports().into_iter().enumerate() {
                for (test, rps) in redis_benchmark(port, args, requests)? {
                    let pos = runs[side].iter().position(|(t, _)| *t == test);
                    match pos {
                        Some(i) => runs[side][i].1.push(rps),
                        None => runs[side].push((test, vec![rps])),
                    }
                }
            }
        }
        let [ours, redis] = runs;
        for (test, rates) in ours {
            let theirs = redis
                .iter()
                .find(|(t, _)| *t == test)
                .and_then(|(_, r)| median(r.clone()));
            let mine = median(rates);
            println!(
                "{:<7} {:<11} {:>12.0} {:>12.0} {:>10}",
                shape,
                test,
                mine.unwrap_or(0.0),
                theirs.unwrap_or(0.0),
                fmt_ratio(mine, theirs)
            );
        }
    }
    Ok(())
}

/// What one expiry run took: loading, and reclaiming after the last
/// key's expiry.
struct Reclaim {
    load: Duration,
    reclaim: Duration,
}

/// Writes `keys` keys with a 1 s TTL, then waits for `DBSIZE` 0.
async fn expiry_run(conn: &mut MultiplexedConnection, keys: u64) -> Result<Reclaim, String> {
    let err = |e: redis::RedisError| e.to_string();
    redis::cmd("FLUSHALL")
        .query_async::<()>(conn)
        .await
        .map_err(err)?;
    let started = Instant::now();
    let mut next = 0;
    while next < keys {
        let mut pipe = redis::pipe();
        for i in next..keys.min(next + 10_000) {
            pipe.cmd("SET")
                .arg(format!("expiring:{i}"))
                .arg("v")
                .arg("PX")
                .arg(1000)
                .ignore();
        }
        pipe.query_async::<()>(conn).await.map_err(err)?;
        next += 10_000;
    }
    let loaded = Instant::now();
    let deadline = loaded + Duration::from_secs(120);
    loop {
        let left: u64 = redis::cmd("DBSIZE").query_async(conn).await.map_err(err)?;
        if left == 0 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{left} keys still there after 2 minutes"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let expired_at = loaded + Duration::from_secs(1);
    Ok(Reclaim {
        load: loaded - started,
        reclaim: Instant::now().saturating_duration_since(expired_at),
    })
}

/// `reps` expiry runs on each server, taking turns; prints the medians.
async fn expiry(servers: &Servers, reps: usize, keys: u64) -> Result<(), String> {
    println!();
    println!("expiry: {keys} keys with a 1 s TTL, never read; seconds, median of {reps} runs");
    let mut conns = Vec::new();
    for (label, port) in servers.ports() {
        let client =
            redis::Client::open(format!("redis://127.0.0.1:{port}/")).map_err(|e| e.to_string())?;
        let conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| format!("{label}: {e}"))?;
        conns.push((label, conn, Vec::new(), Vec::new()));
    }
    for _ in 0..reps {
        for (_, conn, loads, reclaims) in conns.iter_mut() {
            let run = expiry_run(conn, keys).await?;
            loads.push(run.load.as_secs_f64());
            reclaims.push(run.reclaim.as_secs_f64());
        }
    }
    println!(
        "{:<13} {:>8} {:>24}",
        "server", "load", "reclaim after expiry"
    );
    let mut medians = Vec::new();
    for (label, _, loads, reclaims) in conns {
        let (load, reclaim) = (median(loads), median(reclaims));
        println!(
            "{:<13} {:>8.2} {:>24.2}",
            label,
            load.unwrap_or(0.0),
            reclaim.unwrap_or(0.0)
        );
        medians.push(reclaim);
    }
    if let [ours, redis] = medians[..] {
        println!("reclaim, ours/redis: {}", fmt_ratio(ours, redis));
    }
    Ok(())
}

async fn bench(options: Options, requests: u64, keys: u64) -> ExitCode {
    let started = Instant::now();
    let servers = match (EngineProcess::start(), RedisServer::start()) {
        (Ok(ours), Ok(redis)) => Servers { ours, redis },
        (Err(e), _) => {
            eprintln!("cannot start our server: {e}");
            return ExitCode::FAILURE;
        }
        (_, Err(e)) => {
            eprintln!("cannot start redis-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("redmodel bench_server: our RESP server (a process of its own) and redis-server 7.0.15, on loopback");
    if options.selects("redis-benchmark") {
        if let Err(e) = benchmark(&servers, options.reps, requests) {
            println!("note: redis-benchmark skipped: {e}");
        }
    }
    if options.selects("expiry") {
        if let Err(e) = expiry(&servers, options.reps, keys).await {
            println!("note: expiry skipped: {e}");
        }
    }
    println!("total time: {:.1} s", started.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    serve_or_run(|args| {
        let (mut requests, mut keys) = (200_000, 1_000_000);
        let extra = &mut [("--requests", &mut requests), ("--keys", &mut keys)];
        let options = Options::new(3, 1).parse(args, USAGE, extra)?;
        Ok(bench(options, requests, keys))
    })
}
