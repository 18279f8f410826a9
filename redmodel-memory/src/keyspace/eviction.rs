//! The keys a `maxmemory-policy` would evict first, from a sample of the
//! database, as Redis's `evict.c` picks them: a random key, or among
//! `maxmemory-samples` drawn keys the one idle longest (LRU), used least
//! (LFU) or nearest its expiry (TTL); the `volatile-` policies draw only
//! keys with a TTL.

use rand::Rng;

use super::{seconds, Key, Keyspace, Lfu};

/// What a policy ranks the drawn keys by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rank {
    Random,
    Lru,
    Lfu,
    Ttl,
}

/// A `maxmemory-policy` that evicts (not `noeviction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    pub(crate) rank: Rank,
    /// Only keys with a TTL (`volatile-*`).
    pub(crate) volatile: bool,
}

impl Policy {
    /// The policy of a `maxmemory-policy` value; `None` for `noeviction`
    /// (or an unknown name).
    pub(crate) fn of(name: &str) -> Option<Policy> {
        let (volatile, rank) = name.split_once('-')?;
        let volatile = match volatile {
            "volatile" => true,
            "allkeys" => false,
            _ => return None,
        };
        let rank = match rank {
            "random" => Rank::Random,
            "lru" => Rank::Lru,
            "lfu" => Rank::Lfu,
            "ttl" if volatile => Rank::Ttl,
            _ => return None,
        };
        Some(Policy { rank, volatile })
    }
}

impl Keyspace {
    /// The key of this database `policy` evicts first among `samples`
    /// drawn ones, with its rank (higher goes first): `None` if the
    /// database has no key the policy may evict.
    pub(crate) fn eviction_candidate(
        &self,
        policy: Policy,
        samples: usize,
        lfu: Option<Lfu>,
        now: i64,
        rng: &mut impl Rng,
    ) -> Option<(Key, u64)> {
        let draws = if policy.rank == Rank::Random {
            1
        } else {
            samples.max(1)
        };
        let mut best: Option<(Key, u64)> = None;
        for _ in 0..draws {
            let Some((slot, expire_at)) = self.draw(policy.volatile, rng) else {
                break;
            };
            let Some(entry) = self.slots.get(slot) else {
                continue;
            };
            let rank = match policy.rank {
                Rank::Random => 0,
                Rank::Lru => u64::from(seconds(now).saturating_sub(entry.accessed())),
                Rank::Lfu => 255 - u64::from(lfu.map_or(0, |lfu| entry.freq(lfu, now))),
                Rank::Ttl => u64::MAX - u64::try_from(expire_at.unwrap_or(0)).unwrap_or(0),
            };
            if best.as_ref().is_none_or(|(_, b)| rank > *b) {
                best = Some((Key::from(entry.key()), rank));
            }
        }
        best
    }

    /// A random stored key's slot (with a TTL if `volatile`) and its
    /// expiry.
    fn draw(&self, volatile: bool, rng: &mut impl Rng) -> Option<(u32, Option<i64>)> {
        if volatile {
            if self.expiring.is_empty() {
                return None;
            }
            let (&slot, &at) = self
                .expiring
                .get_index(rng.random_range(0..self.expiring.len()))?;
            return Some((slot, Some(at)));
        }
        if self.index.is_empty() {
            return None;
        }
        // Slots are mostly full: a few draws find a key (as RANDOMKEY).
        for _ in 0..64 {
            let slot = u32::try_from(rng.random_range(0..self.slots.len().max(1))).ok()?;
            if self.slots.get(slot).is_some() {
                return Some((slot, self.expiring.get(&slot).copied()));
            }
        }
        let slot = *self
            .index
            .iter()
            .nth(rng.random_range(0..self.index.len()))?;
        Some((slot, self.expiring.get(&slot).copied()))
    }
}
