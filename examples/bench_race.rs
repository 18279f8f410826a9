//! 64 tasks racing on one unique value, and on one sorted field: the
//! script path of the guarded writes against their path without scripts
//! (WATCH, or ordered steps), in one run on one private redis-server.
//!
//! ```text
//! cargo run --release --example bench_race
//! cargo run --release --example bench_race -- --reps 5 --millis 1000 --tasks 64
//! cargo run --example bench_race -- --reps 1 --millis 100   # smoke run
//! ```
//!
//! - **unique**: each task owns one object and sets its unique field to
//!   one of 2 values all the tasks want, then back to its own, again and
//!   again. A write either takes the value (its old one released) or is
//!   refused with `Error::Unique` (another holds it): both are a finished
//!   operation.
//! - **sorted**: every task increments the same object's sorted field
//!   (the field and its score move together).
//!
//! The script path is a `Db` of the default user; the other a `Db` of an
//! ACL user without `@scripting`, for which redmodel takes the path
//! without scripts. The two take turns, run by run, so that a burst of
//! load hits both alike. Each figure is the median of the
//! runs: operations per second, and the 99th percentile of one
//! operation's latency (retries included).

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redmodel::prelude::*;
use redmodel_examples::bench::{fmt_rate, fmt_ratio, median, runtime, Options};
use redmodel_suite::RedisServer;

const USAGE: &str = "usage: bench_race [--reps N] [--millis MS] [--only unique|sorted] [--tasks N]";
/// The values every task wants.
const HOT: usize = 2;

#[derive(Admin, Debug, Clone, PartialEq)]
struct Racer {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    nick: String,
    #[redmodel(sorted)]
    points: i64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Race {
    Unique,
    Sorted,
}

impl Race {
    fn name(self) -> &'static str {
        match self {
            Race::Unique => "unique",
            Race::Sorted => "sorted",
        }
    }
}

/// One run: `tasks` tasks racing for `run`; operations per second and the
/// latencies of every operation.
async fn race(
    db: &Db,
    race: Race,
    tasks: u32,
    run: Duration,
) -> redmodel::Result<(f64, Vec<Duration>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (db, stop) = (db.clone(), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut n = task as usize;
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let outcome = match race {
                        Race::Unique => {
                            // Try for a wanted value, then give it back.
                            n += 1;
                            let nick = match n % 2 {
                                0 => format!("hot-{}", (n / 2) % HOT),
                                _ => format!("own-{task}"),
                            };
                            Racer::at(task).set(&db, Racer::NICK, nick).await
                        }
                        Race::Sorted => {
                            Racer::at(tasks).incr(&db, Racer::POINTS, 1).await.map(drop)
                        }
                    };
                    match outcome {
                        Ok(()) | Err(Error::Unique { .. }) => latencies.push(started.elapsed()),
                        Err(e) => return Err(e),
                    }
                }
                Ok(latencies)
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(run).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for handle in handles {
        all.extend(handle.await.expect("a racing task")?);
    }
    Ok((all.len() as f64 / started.elapsed().as_secs_f64(), all))
}

/// The `q` quantile of `latencies`, in milliseconds.
fn quantile_ms(latencies: &mut [Duration], q: f64) -> Option<f64> {
    latencies.sort();
    let i = ((latencies.len() as f64 - 1.0) * q).round() as usize;
    latencies.get(i).map(|d| d.as_secs_f64() * 1000.0)
}

async fn fixture(db: &Db, tasks: u32) -> redmodel::Result<()> {
    db.query::<()>(&redis::cmd("FLUSHALL")).await?;
    for id in 0..=tasks {
        Racer {
            id,
            nick: format!("own-{id}"),
            points: 0,
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

async fn run(options: &Options, tasks: u32) -> Result<(), String> {
    let server = RedisServer::start().map_err(|e| format!("redis-server: {e}"))?;
    let scripts = Db::connect(&server.url())
        .await
        .map_err(|e| e.to_string())?;
    scripts
        .query::<()>(redis::cmd("ACL").arg(&[
            "SETUSER",
            "noscript",
            "on",
            ">bench",
            "~*",
            "+@all",
            "-@scripting",
        ]))
        .await
        .map_err(|e| e.to_string())?;
    let url = format!("redis://noscript:bench@127.0.0.1:{}/", server.port());
    let without = Db::connect(&url).await.map_err(|e| e.to_string())?;

    println!(
        "{tasks} tasks racing, {} runs of {:?} each, medians (redis-server {}, loopback)",
        options.reps,
        options.run,
        server.port()
    );
    println!(
        "| race | script: ops/s | p99 ms | without scripts: ops/s | p99 ms | script / without |"
    );
    println!("|---|---|---|---|---|---|");
    for kind in [Race::Unique, Race::Sorted] {
        if !options.selects(kind.name()) {
            continue;
        }
        let (mut rates, mut p99s) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
        for _ in 0..options.reps {
            for (side, db) in [&scripts, &without].into_iter().enumerate() {
                fixture(db, tasks).await.map_err(|e| e.to_string())?;
                let path = ["script", "without scripts"][side];
                let (rate, mut latencies) = race(db, kind, tasks, options.run)
                    .await
                    .map_err(|e| format!("{} race, {path}: {e}", kind.name()))?;
                rates[side].push(rate);
                p99s[side].extend(quantile_ms(&mut latencies, 0.99));
            }
        }
        let [script_rate, without_rate] = rates.map(median);
        let [script_p99, without_p99] = p99s.map(median);
        let ms = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.1}"));
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            kind.name(),
            fmt_rate(script_rate),
            ms(script_p99),
            fmt_rate(without_rate),
            ms(without_p99),
            fmt_ratio(script_rate, without_rate)
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut tasks = 64;
    let options = match Options::new(5, 1000).parse(
        std::env::args().skip(1),
        USAGE,
        &mut [("--tasks", &mut tasks)],
    ) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime()
        .map_err(|e| e.to_string())
        .and_then(|rt| rt.block_on(run(&options, u32::try_from(tasks).unwrap_or(64))));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("bench_race: {why}");
            ExitCode::FAILURE
        }
    }
}
