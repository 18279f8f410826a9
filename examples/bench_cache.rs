//! The near cache (`Db::with_cache`): 64 tasks loading objects of a hot
//! set of 1,000 through a cached `Db` against an uncached one, on a private
//! redis-server and on the memory engine in process; once with loads only
//! (what a hit saves), once with 1% of the operations writes by another
//! client (what that leaves of it).
//!
//! ```text
//! cargo run --release --example bench_cache
//! cargo run --release --example bench_cache -- --reps 5 --millis 1000 --tasks 64 --only redis
//! cargo run --example bench_cache -- --reps 1 --millis 100   # smoke run
//! ```
//!
//! Every operation picks an object at random; in the second mix, one in a
//! hundred sets its `score` through a second `Db` (another client, uncached, so that its
//! writes reach the cache only as the server's invalidations), the others
//! load it through the `Db` measured. The two sides take turns, run by
//! run, so that a burst of load hits both alike, and each run starts with
//! every object read once (the cache warm). Each figure is the median
//! of the runs: operations per second, and for the cached side the share
//! of loads the cache answered.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redmodel::prelude::*;
use redmodel::CacheConfig;
use redmodel_examples::bench::{fmt_rate, fmt_ratio, median, runtime, Options};
use redmodel_suite::{RedisServer, Rng};

const USAGE: &str =
    "usage: bench_cache [--reps N] [--millis MS] [--only redis|memory] [--tasks N] [--objects N]";

#[derive(Admin, Debug, Clone, PartialEq)]
struct Item {
    #[redmodel(pk)]
    id: u32,
    name: String,
    score: i64,
}

/// One run: `tasks` tasks for `run`, loading through `db`, writing
/// `write_percent`% of the time through `writer`; operations per second.
async fn run_once(
    db: &Db,
    writer: &Db,
    tasks: u32,
    objects: u32,
    write_percent: usize,
    run: Duration,
) -> redmodel::Result<f64> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (db, writer) = (db.clone(), writer.clone());
            let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
            tokio::spawn(async move {
                let mut rng = Rng::for_task(task as usize);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let id = rng.below(objects as usize) as u32;
                    if rng.below(100) < write_percent {
                        Item::at(id).set(&writer, Item::SCORE, n as i64).await?;
                    } else {
                        std::hint::black_box(Item::load(&db, id).await?);
                    }
                    n += 1;
                    // A hit never waits: let the other tasks run.
                    if n.is_multiple_of(16) {
                        tokio::task::yield_now().await;
                    }
                }
                done.fetch_add(n, Ordering::Relaxed);
                Ok::<(), redmodel::Error>(())
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(run).await;
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        handle.await.expect("a task")?;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

async fn fixture(db: &Db, objects: u32) -> redmodel::Result<()> {
    db.query::<()>(&redis::cmd("FLUSHALL")).await?;
    for id in 0..objects {
        Item {
            id,
            name: format!("item {id}"),
            score: 0,
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

/// The three handles of one backend: uncached, cached, the writer.
async fn handles(backend: &str, url: &str) -> redmodel::Result<(Db, Db, Db)> {
    if backend == "memory" {
        let plain = Db::memory();
        let engine = plain.engine().expect("the engine").clone();
        let cached = Db::from_engine(engine.clone())
            .with_cache(CacheConfig::default())
            .await?;
        return Ok((plain, cached, Db::from_engine(engine)));
    }
    let cached = Db::connect(url)
        .await?
        .with_cache(CacheConfig::default())
        .await?;
    Ok((Db::connect(url).await?, cached, Db::connect(url).await?))
}

async fn run(options: &Options, tasks: u32, objects: u32) -> Result<(), String> {
    let server = RedisServer::start().map_err(|e| format!("redis-server: {e}"))?;
    println!(
        "{tasks} tasks, {objects} objects, writes by another client, {} runs of {:?} each, medians",
        options.reps, options.run
    );
    println!(
        "| backend | writes | uncached: ops/s | cached: ops/s | cached / uncached | hit rate |"
    );
    println!("|---|---|---|---|---|---|");
    for backend in ["redis", "memory"] {
        if !options.selects(backend) {
            continue;
        }
        let (plain, cached, writer) = handles(backend, &server.url())
            .await
            .map_err(|e| format!("{backend}: {e}"))?;
        for write_percent in [0, 1] {
            measure(
                options,
                [&plain, &cached, &writer],
                backend,
                tasks,
                objects,
                write_percent,
            )
            .await?;
        }
    }
    Ok(())
}

/// One row of the table: `write_percent`% writes through `writer`, the
/// rest loads through `plain` and `cached` in turn.
async fn measure(
    options: &Options,
    [plain, cached, writer]: [&Db; 3],
    backend: &str,
    tasks: u32,
    objects: u32,
    write_percent: usize,
) -> Result<(), String> {
    let (mut rates, mut hit_rates) = ([Vec::new(), Vec::new()], Vec::new());
    for _ in 0..options.reps {
        for (side, db) in [plain, cached].into_iter().enumerate() {
            fixture(writer, objects).await.map_err(|e| e.to_string())?;
            // Both sides start warm: every object read once (for the
            // cached side, kept), as in a process that has run a while.
            let refs: Vec<_> = (0..objects).map(Item::at).collect();
            for chunk in refs.chunks(100) {
                ObjectRef::load_many(db, chunk)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            let before = db.cache_stats().unwrap_or_default();
            let rate = run_once(db, writer, tasks, objects, write_percent, options.run)
                .await
                .map_err(|e| format!("{backend}: {e}"))?;
            rates[side].push(rate);
            if let Some(after) = db.cache_stats() {
                let hits = after.hits - before.hits;
                let reads = hits + after.misses - before.misses;
                hit_rates.push(hits as f64 / reads.max(1) as f64);
            }
        }
    }
    let [uncached, with_cache] = rates.map(median);
    let hit_rate = median(hit_rates).map_or("n/a".to_string(), |h| format!("{:.1}%", h * 100.0));
    println!(
        "| {backend} | {write_percent}% | {} | {} | {} | {hit_rate} |",
        fmt_rate(uncached),
        fmt_rate(with_cache),
        fmt_ratio(with_cache, uncached)
    );
    Ok(())
}

fn main() -> ExitCode {
    let (mut tasks, mut objects) = (64, 1000);
    let options = match Options::new(5, 1000).parse(
        std::env::args().skip(1),
        USAGE,
        &mut [("--tasks", &mut tasks), ("--objects", &mut objects)],
    ) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    let tasks = u32::try_from(tasks).unwrap_or(64);
    let objects = u32::try_from(objects).unwrap_or(1000);
    let outcome = runtime()
        .map_err(|e| e.to_string())
        .and_then(|rt| rt.block_on(run(&options, tasks, objects)));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("bench_cache: {why}");
            ExitCode::FAILURE
        }
    }
}
