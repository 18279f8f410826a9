//! `maxmemory`: while the data's estimated size is over it, a command
//! first evicts keys as `maxmemory-policy` picks them (Redis's
//! `performEvictions`: each eviction invalidates the key for tracking
//! clients and raises `evicted`), until the estimate is under the limit;
//! still over (`noeviction`, or nothing left the policy may evict),
//! commands that may grow the data (flagged `denyoom`) are refused with
//! Redis's OOM error.
//!
//! The size is the estimate INFO's `used_memory` reports (a walk over
//! every key, see `memory::used_memory_of`), kept cheap: it is taken only
//! while a limit is set (a server without one pays nothing), again only
//! once the data changed since the last time (Redis's per-database change
//! counters), and not before 20 times the last walk's duration passed, so
//! that the walks take at most about 5% of the time however large the
//! data (a small dataset's walk, microseconds long, is taken after every
//! change: the figure is exact there).

use std::time::Instant;

use crate::command::Store;
use crate::config::Limits;
use crate::keyspace::{Keyspace, Lfu, Policy};

/// Redis's OOM refusal (`shared.oomerr`).
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// A script that may write refused at its start (Redis's
/// `scriptPrepareForRun`).
pub(crate) const SCRIPT_OOM: &str =
    "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'";

/// An estimate of the data's size.
#[derive(Debug, Clone, Copy)]
struct Taken {
    used: u64,
    changes: u64,
    next: Instant,
}

/// How many times a walk's duration passes before the next walk.
const SPACING: u32 = 20;

/// The limit, and the last estimate of the data's size.
#[derive(Debug, Default)]
pub(crate) struct MaxMemory {
    /// `maxmemory` in bytes; 0: no limit.
    limit: u64,
    /// The last estimate, with the count of changes it was taken at and
    /// when the next may be taken.
    taken: Option<Taken>,
    /// Whether the data was over the limit when the running command
    /// started (Redis's `pre_command_oom_state`): a script's commands are
    /// checked against it, not against what the script added since.
    at_start: bool,
}

impl MaxMemory {
    /// Takes `maxmemory` from the new settings.
    pub(crate) fn configure(&mut self, limits: &Limits) {
        self.limit = limits.maxmemory;
        self.at_start &= self.limited();
    }

    /// Whether a limit is set.
    pub(crate) fn limited(&self) -> bool {
        self.limit != 0
    }

    /// Whether the data in `dbs` is over the limit, with `size` the
    /// estimate of their size; remembered as the state at the start of
    /// the command about to run.
    pub(crate) fn check(&mut self, dbs: &[Keyspace], size: fn(&[Keyspace]) -> u64) -> bool {
        self.at_start = self.limited() && self.used(dbs, size) > self.limit;
        self.at_start
    }

    /// Whether the data was over the limit when the running command
    /// started (false without a limit).
    pub(crate) fn over_at_start(&self) -> bool {
        self.at_start
    }

    /// How far the data in `dbs` is over the limit, in bytes (0 under it
    /// or without a limit).
    fn excess(&mut self, dbs: &[Keyspace], size: fn(&[Keyspace]) -> u64) -> u64 {
        if !self.limited() {
            return 0;
        }
        self.used(dbs, size).saturating_sub(self.limit)
    }

    /// The estimate of the size of `dbs`, taken again if they changed.
    fn used(&mut self, dbs: &[Keyspace], size: fn(&[Keyspace]) -> u64) -> u64 {
        let changes = dbs.iter().map(Keyspace::changes).sum();
        if let Some(taken) = self.taken {
            if taken.changes == changes || Instant::now() < taken.next {
                return taken.used;
            }
        }
        let started = Instant::now();
        let used = size(dbs);
        let took = started.elapsed();
        self.taken = Some(Taken {
            used,
            changes,
            next: started + took + took * SPACING,
        });
        used
    }
}

impl Store {
    /// Redis's `performEvictions`, before a command: while the data is
    /// over `maxmemory`, deletes the key the policy picks, taking its
    /// estimated size off the excess. The estimate is taken afresh at the
    /// next check.
    pub(crate) fn evict(&mut self, now: i64) {
        if self.maxmemory.limited() {
            self.evict_over(now);
        }
    }

    /// [`Self::evict`] with a `maxmemory` set.
    #[cold]
    #[inline(never)]
    fn evict_over(&mut self, now: i64) {
        let Some(policy) = Policy::of(self.config.get("maxmemory-policy")) else {
            return;
        };
        let mut excess = self
            .maxmemory
            .excess(&self.dbs, crate::command::memory::used_memory_of);
        if excess == 0 {
            return;
        }
        let samples = self.config.get("maxmemory-samples").parse().unwrap_or(5);
        let mut rng = rand::rng();
        while excess > 0 {
            let mut best: Option<(usize, crate::keyspace::Key, u64)> = None;
            for (db, ks) in self.dbs.iter().enumerate() {
                let lfu = Lfu::of(ks.limits());
                let Some((key, rank)) = ks.eviction_candidate(policy, samples, lfu, now, &mut rng)
                else {
                    continue;
                };
                if best.as_ref().is_none_or(|(_, _, b)| rank > *b) {
                    best = Some((db, key, rank));
                }
            }
            let Some((db, key, _)) = best else {
                break;
            };
            let Some(removed) = self.dbs[db].remove(&key) else {
                break;
            };
            let size = crate::command::memory::key_size(&key, &removed.value);
            excess = excess.saturating_sub(u64::try_from(size).unwrap_or(u64::MAX).max(1));
            self.dbs[db].evicted_count += 1;
            let lazy = self.dbs[db].limits().lazy.eviction;
            self.dbs[db].freed(&removed.value, removed.history, lazy);
            self.notify(db, crate::notify::class::EVICTED, "evicted", &key);
        }
        self.maxmemory.taken = None;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use redis::Value;

    use super::*;

    /// What an empty engine's estimate starts from.
    const BASELINE_FOR_TESTS: u64 = 870_000;

    static WALKS: AtomicU64 = AtomicU64::new(0);

    /// A walk that counts itself and finds 100 bytes.
    fn counted(_: &[Keyspace]) -> u64 {
        WALKS.fetch_add(1, Ordering::SeqCst);
        100
    }

    #[test]
    fn the_data_is_walked_again_only_after_a_change() {
        let mut dbs = vec![Keyspace::default()];
        let mut max = MaxMemory::default();
        // No limit: no walk, never over.
        assert!(!max.check(&dbs, counted));
        assert_eq!(WALKS.load(Ordering::SeqCst), 0);
        max.configure(&Limits {
            maxmemory: 50,
            ..Limits::default()
        });
        assert!(max.check(&dbs, counted));
        assert!(max.check(&dbs, counted));
        assert!(max.over_at_start());
        assert_eq!(WALKS.load(Ordering::SeqCst), 1, "nothing changed");
        dbs[0].set(
            b"k",
            crate::value::Value::Str(b"v".to_vec().into()),
            false,
            0,
        );
        // A walk of a microsecond: the next may follow at once.
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(max.check(&dbs, counted));
        assert_eq!(WALKS.load(Ordering::SeqCst), 2, "the data changed");
        max.configure(&Limits::default());
        assert!(!max.over_at_start(), "no limit, not over");
    }

    /// Over `maxmemory`, a command first evicts what the policy picks: a
    /// `volatile-` policy only keys with a TTL (the rest stays, and a
    /// write is refused), an `allkeys-` one any key; each eviction counts
    /// in INFO.
    #[test]
    fn over_the_limit_the_policy_evicts_before_the_command() {
        use crate::command::test_util::{bulk, clocked, err, int, run};

        let (_, mut c) = clocked(1_000_000);
        let big = "x".repeat(20_000);
        run(&mut c, &format!("SET big {big}"));
        run(&mut c, "SET v 1 EX 100");
        run(&mut c, "SET w 1 EX 100");
        run(&mut c, "CONFIG SET maxmemory-policy volatile-ttl");
        let limit = BASELINE_FOR_TESTS + 10_000;
        run(&mut c, &format!("CONFIG SET maxmemory {limit}"));
        assert_eq!(run(&mut c, "STRLEN big"), int(20_000));
        assert_eq!(run(&mut c, "EXISTS v w big"), int(1));
        assert_eq!(run(&mut c, "SET x 1"), err(OOM));
        let Value::BulkString(info) = run(&mut c, "INFO stats") else {
            panic!("INFO is not a bulk string");
        };
        assert!(String::from_utf8_lossy(&info).contains("evicted_keys:2\r\n"));
        run(&mut c, "CONFIG SET maxmemory-policy allkeys-lru");
        assert_eq!(run(&mut c, "SET x 1"), Value::Okay);
        assert_eq!(run(&mut c, "EXISTS big"), int(0));
        assert_eq!(run(&mut c, "GET x"), bulk("1"));
    }
}
