//! The model layer against raw redis-rs on the engine in process, with
//! criterion's statistics: each operation of `bench_models` (the school's
//! `Student`, the indexed `Player`) through the model, through raw code,
//! and through raw code that keeps the model's guarantee, on one
//! `Db::memory()`.
//!
//! ```text
//! cargo bench -p redmodel-examples --features criterion --bench in_process
//! cargo bench -p redmodel-examples --features criterion --bench in_process -- incr
//! ```
//!
//! In process an operation is CPU work alone, a few hundred nanoseconds to
//! a few tens of microseconds, which criterion measures with confidence
//! intervals and compares with the last run. Against a server the round
//! trip and the server's own work make most of the time, and the two
//! sides must be measured side by side in one run to be compared on a
//! noisy machine: that stays `bench_models`' work.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use redmodel::Db;
use redmodel_examples::bench::runtime_of;

// Shared with `bench_models`, which uses more of it.
#[path = "../support/model_ops.rs"]
#[allow(dead_code)]
mod model_ops;
use model_ops::{fixture, student, Op, Side, Student, SIDES, STUDENTS};

fn in_process(c: &mut Criterion) {
    let runtime = runtime_of(0).unwrap_or_else(|e| panic!("no tokio runtime: {e}"));
    let db = Db::memory();
    let students: Vec<Student> = (0..STUDENTS).map(student).collect();
    runtime
        .block_on(fixture(&db, &students))
        .unwrap_or_else(|e| panic!("cannot store the fixture: {e}"));
    // Each side goes on where it stopped: the operations cycle through the
    // fixture's objects, as in `bench_models`.
    let next = AtomicUsize::new(0);
    for op in Op::ALL {
        let mut group = c.benchmark_group(op.name());
        for side in SIDES {
            // The plain insert beside each indexed write is for the
            // server's comparison; here it would time `insert` again.
            if side == Side::Plain || !op.has(side) {
                continue;
            }
            group.bench_function(side.name(), |b| {
                b.to_async(&runtime).iter_custom(|iters| {
                    let (db, students, next) = (&db, &students, &next);
                    async move {
                        let mut conn = db.clone();
                        let started = Instant::now();
                        for _ in 0..iters {
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            if let Err(e) = op.run(side, db, Some(&mut conn), students, k).await {
                                panic!("{} on the {} side: {e}", op.name(), side.name());
                            }
                        }
                        started.elapsed()
                    }
                });
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    // Shorter than criterion's defaults (3 s of warm-up, 5 s measured, for
    // 26 benchmarks), long enough for tight intervals in process.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = in_process
}
criterion_main!(benches);
