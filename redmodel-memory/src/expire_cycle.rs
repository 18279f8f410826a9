//! Active expiry: memory is given back for expired keys nobody reads again.
//!
//! Redis 7's slow cycle (`activeExpireCycle` in expire.c, default effort):
//! ten times a second, for each database, sample 20 keys that have a TTL,
//! delete the expired ones, and sample again while more than 10% of a
//! sample was expired; stop when the cycle has used its time budget of 25%
//! of the 100 ms period. The lock is taken per sample, so clients are never
//! blocked for a whole cycle.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::store::DATABASES;
use super::{Engine, Shared};

/// Keys sampled per loop (ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP).
const KEYS_PER_LOOP: usize = 20;
/// Keep sampling while more than this percentage of a sample was expired.
const ACCEPTABLE_STALE_PERCENT: usize = 10;
/// How often the background cycle runs (Redis's default `hz 10`).
const PERIOD: Duration = Duration::from_millis(100);
/// 25% of the period (ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC).
pub(crate) const SLOW_CYCLE_BUDGET: Duration = Duration::from_millis(25);

/// What one active expiry cycle did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CycleStats {
    /// Keys with a TTL that were looked at.
    pub sampled: usize,
    /// Expired keys that were deleted.
    pub expired: usize,
    /// Whether the cycle stopped because it ran out of time.
    pub timed_out: bool,
}

/// Starts the background cycle of `engine`. The thread holds only a weak
/// reference and ends once the engine is dropped.
pub(crate) fn start(engine: &Engine) {
    let weak: Weak<Shared> = Arc::downgrade(&engine.shared);
    let spawned = std::thread::Builder::new()
        .name("redmodel-expire".into())
        .spawn(move || loop {
            std::thread::sleep(PERIOD);
            let Some(shared) = weak.upgrade() else { return };
            run_cycle(&Engine { shared }, SLOW_CYCLE_BUDGET);
        });
    // Without a thread the engine still expires keys passively; nothing to
    // report to a caller that only asked for an engine.
    drop(spawned);
}

/// One cycle over every database within `budget`.
pub(crate) fn run_cycle(engine: &Engine, budget: Duration) -> CycleStats {
    let started = Instant::now();
    let mut stats = CycleStats::default();
    let mut rng = rand::rng();
    for db in 0..DATABASES {
        loop {
            let now = engine.shared.clock.now_ms();
            let (sampled, expired) = {
                let mut store = engine.shared.store.lock();
                let ks = &mut store.dbs[db];
                if ks.expiring_len() == 0 {
                    break;
                }
                let done = ks.expire_sample(KEYS_PER_LOOP, now, &mut rng);
                // Their `expired` events.
                store.flush_notifications();
                done
            };
            stats.sampled += sampled;
            stats.expired += expired;
            if started.elapsed() > budget {
                stats.timed_out = true;
                return stats;
            }
            if sampled == 0 || expired * 100 / sampled <= ACCEPTABLE_STALE_PERCENT {
                break;
            }
        }
    }
    stats
}
