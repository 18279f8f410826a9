//! Active expiry: memory is given back for expired keys nobody reads again.
//!
//! Redis 7's slow cycle (`activeExpireCycle` in expire.c, default effort):
//! ten times a second, for each database, sample 20 keys that have a TTL,
//! delete the expired ones, and sample again while more than 10% of a
//! sample was expired; stop when the cycle has used its time budget of 25%
//! of the 100 ms period; while a cycle runs out of time, fast cycles of a
//! millisecond follow every two milliseconds (Redis's `beforeSleep` fast
//! cycle). The lock is held for at most a millisecond at a time, so
//! clients are never blocked for a whole cycle.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::command::DATABASES;
use super::{Engine, Shared};

/// Keys sampled per loop (ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP).
const KEYS_PER_LOOP: usize = 20;
/// Keep sampling while more than this percentage of a sample was expired.
const ACCEPTABLE_STALE_PERCENT: usize = 10;
/// How often the background cycle runs (Redis's default `hz 10`).
const PERIOD: Duration = Duration::from_millis(100);
/// 25% of the period (ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC).
pub(crate) const SLOW_CYCLE_BUDGET: Duration = Duration::from_millis(25);
/// How long the cycle keeps the engine's lock at a time (Redis's fast
/// cycle lasts as long).
const HOLD: Duration = Duration::from_millis(1);
/// The fast cycle (ACTIVE_EXPIRE_CYCLE_FAST_DURATION): a millisecond,
/// at most every other millisecond, while a slow cycle ran out of time.
const FAST_CYCLE_BUDGET: Duration = Duration::from_millis(1);
const FAST_CYCLE_PERIOD: Duration = Duration::from_millis(2);

/// What one active expiry cycle did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CycleStats {
    /// Keys with a TTL that were looked at.
    pub sampled: usize,
    /// Expired keys that were deleted.
    pub expired: usize,
    /// Keys whose expired hash fields were deleted (Redis 7.4's field
    /// TTLs, [`crate::RedisVersion::V7_4`]).
    pub expired_field_keys: usize,
    /// Whether the cycle stopped because it ran out of time.
    pub timed_out: bool,
}

/// Starts the background cycle of `engine`. The thread holds only a weak
/// reference and ends once the engine is dropped.
pub(crate) fn start(engine: &Engine) {
    let weak: Weak<Shared> = Arc::downgrade(&engine.shared);
    let spawned = std::thread::Builder::new()
        .name("redmodel-expire".into())
        .spawn(move || {
            let mut next_slow = Instant::now() + PERIOD;
            let mut behind = false;
            loop {
                // A slow cycle that ran out of time left expired keys
                // behind: fast cycles follow until the next slow one, as
                // Redis runs them between its event loop's rounds.
                let now = Instant::now();
                let fast = behind && now + FAST_CYCLE_PERIOD < next_slow;
                std::thread::sleep(if fast {
                    FAST_CYCLE_PERIOD
                } else {
                    next_slow.saturating_duration_since(now)
                });
                let Some(shared) = weak.upgrade() else { return };
                let engine = Engine { shared };
                // The AOF's periodic work (`appendfsync everysec`'s sync
                // with the store let go), and at each slow tick INFO's
                // rates sampled.
                let now = engine.shared.clock.now_ms();
                let to_sync = {
                    let mut store = engine.shared.store.lock();
                    if !fast {
                        store.sample_rates(now);
                    }
                    store.aof_tick(now)
                };
                if let Some(file) = to_sync {
                    let _ = file.sync_data();
                }
                let stats = if fast {
                    run_cycle(&engine, FAST_CYCLE_BUDGET)
                } else {
                    next_slow = Instant::now() + PERIOD;
                    run_cycle(&engine, SLOW_CYCLE_BUDGET)
                };
                behind = stats.timed_out;
            }
        });
    // Without a thread the engine still expires keys passively; nothing to
    // report to a caller that only asked for an engine.
    drop(spawned);
}

/// One cycle over every database within `budget`, logged as LATENCY's
/// `expire-cycle` event if it held the store `latency-monitor-threshold`
/// or more (waiting for the lock is not the cycle's time: Redis's cycle
/// never waits), and its slowest delete as `expire-del`.
pub(crate) fn run_cycle(engine: &Engine, budget: Duration) -> CycleStats {
    let mut busy = Duration::ZERO;
    let stats = run_untimed(engine, budget, &mut busy);
    let ms = u64::try_from(busy.as_millis()).unwrap_or(u64::MAX);
    if ms > 0 {
        let now = engine.shared.clock.now_ms();
        let mut store = engine.shared.store.lock();
        store
            .latency
            .sample("expire-cycle", ms, now.div_euclid(1000));
        store.sample_expire_dels(now);
    }
    stats
}

/// [`run_cycle`] without its timing; adds the time it held the store to
/// `busy`.
fn run_untimed(engine: &Engine, budget: Duration, busy: &mut Duration) -> CycleStats {
    let started = Instant::now();
    let mut stats = CycleStats::default();
    let mut rng = rand::rng();
    for db in 0..DATABASES {
        loop {
            let now = engine.shared.clock.now_ms();
            let mut store = engine.shared.store.lock();
            // A CLIENT PAUSE pauses expiry too, as in Redis; DEBUG
            // SET-ACTIVE-EXPIRE 0 stops the cycle.
            if store.pause.expiry_paused(now) || !store.active_expire {
                return stats;
            }
            // Sample after sample under one taking of the lock, for at
            // most `HOLD`: clients wait that long at worst (Redis holds its
            // one thread for the whole cycle), and the lock is not taken
            // and released again for every 20 keys.
            let held = Instant::now();
            // Hash fields first: a pass over a sample of the hashes with
            // field TTLs, again while many of them had expired fields.
            loop {
                let ks = &mut store.dbs[db];
                let (sampled, hit) = ks.expire_fields_sample(KEYS_PER_LOOP, now, &mut rng);
                stats.expired_field_keys += hit;
                if sampled == 0
                    || hit * 100 / sampled <= ACCEPTABLE_STALE_PERCENT
                    || held.elapsed() > HOLD
                {
                    break;
                }
            }
            let db_done = loop {
                let ks = &mut store.dbs[db];
                if ks.expiring_len() == 0 {
                    break true;
                }
                let (sampled, expired) = ks.expire_sample(KEYS_PER_LOOP, now, &mut rng);
                stats.sampled += sampled;
                stats.expired += expired;
                if sampled == 0 || expired * 100 / sampled <= ACCEPTABLE_STALE_PERCENT {
                    break true;
                }
                if held.elapsed() > HOLD {
                    break false;
                }
            };
            // Their `expired` events, and their deletes in the AOF.
            store.flush_notifications();
            store.aof_after_expiry();
            // Their invalidations, and the tracking table's limit.
            store.tracking_tick();
            // Handed to a waiting client, if any: a plain unlock lets this
            // thread take the lock straight back, and clients waited out
            // the whole cycle.
            *busy += held.elapsed();
            parking_lot::MutexGuard::unlock_fair(store);
            if started.elapsed() > budget {
                stats.timed_out = true;
                return stats;
            }
            if db_done {
                break;
            }
        }
    }
    stats
}
