//! The LFU access counter of a key under an LFU `maxmemory-policy`, as
//! Redis 7.0 keeps it (`evict.c`): a logarithmic 8-bit counter that each
//! access raises with a probability falling as it grows
//! (`lfu-log-factor`), and that loses one for every `lfu-decay-time`
//! minutes the key goes unused. OBJECT FREQ shows it, and the LFU
//! policies evict the keys with the lowest.
//!
//! An access is what Redis counts as one: a command's lookup of a key that
//! exists, not the making of a new one, and not the lookups Redis makes
//! with `LOOKUP_NOTOUCH` (EXISTS, TYPE, TTL, OBJECT). The keyspace counts a
//! key once per command (see `Keyspace::access`), where Redis counts each
//! lookup: a command that looks the same key up twice (SET ... GET,
//! GETSET, LMOVE k k, SINTER k k, XREAD) raises Redis's counter twice.

use crate::config::Limits;

/// Redis's `LFU_INIT_VAL`: a new key's counter.
pub(crate) const LFU_INIT_VAL: u8 = 5;

/// The counting parameters, when an LFU policy is selected.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lfu {
    log_factor: u64,
    decay_time: u64,
}

impl Lfu {
    /// The parameters in force, or `None` if no LFU policy is selected.
    pub(crate) fn of(limits: &Limits) -> Option<Lfu> {
        limits.lfu.then_some(Lfu {
            log_factor: limits.lfu_log_factor,
            decay_time: limits.lfu_decay_time,
        })
    }

    /// `counter` after the decay of the minutes since `last_seconds`
    /// (`LFUDecrAndReturn`).
    pub(crate) fn decayed(self, counter: u8, last_seconds: u32, now_seconds: u32) -> u8 {
        if self.decay_time == 0 {
            return counter;
        }
        let elapsed = minutes_between(last_seconds, now_seconds);
        let periods = elapsed / self.decay_time;
        u8::try_from(u64::from(counter).saturating_sub(periods)).unwrap_or(0)
    }

    /// `counter` after one access (`LFULogIncr`): one more with the
    /// probability `1 / ((counter - LFU_INIT_VAL) * log_factor + 1)`, drawn
    /// from `r` in [0, 1).
    pub(crate) fn raised(self, counter: u8, r: f64) -> u8 {
        if counter == u8::MAX {
            return counter;
        }
        let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
        let p = 1.0 / (base * self.log_factor as f64 + 1.0);
        if r < p {
            counter + 1
        } else {
            counter
        }
    }
}

/// Whole minutes from one Unix second to another, on Redis's 16-bit
/// minute clock (`LFUTimeElapsed`: it wraps every 45 days).
fn minutes_between(from_seconds: u32, to_seconds: u32) -> u64 {
    let (from, to) = (
        u64::from(from_seconds / 60) & 0xffff,
        u64::from(to_seconds / 60) & 0xffff,
    );
    if to >= from {
        to - from
    } else {
        0xffff - from + to
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LFU: Lfu = Lfu {
        log_factor: 10,
        decay_time: 1,
    };

    #[test]
    fn a_new_key_counts_its_first_access_and_ever_fewer_after() {
        assert_eq!(LFU.raised(LFU_INIT_VAL, 0.999), LFU_INIT_VAL + 1);
        // At 6: one chance in 11.
        assert_eq!(LFU.raised(6, 0.05), 7);
        assert_eq!(LFU.raised(6, 0.1), 6);
        assert_eq!(LFU.raised(255, 0.0), 255);
    }

    #[test]
    fn an_unused_key_loses_one_a_decay_period() {
        assert_eq!(LFU.decayed(10, 0, 59), 10);
        assert_eq!(LFU.decayed(10, 0, 180), 7);
        assert_eq!(LFU.decayed(2, 0, 600), 0);
        let slow = Lfu {
            decay_time: 0,
            ..LFU
        };
        assert_eq!(slow.decayed(10, 0, 6000), 10);
    }
}
