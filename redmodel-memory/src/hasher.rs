//! [`Seeded`]: the hasher of the engine's tables keyed by data from
//! outside (the keyspace, big hashes, sets and sorted sets, WATCH and
//! blocking tables).
//!
//! std's `RandomState` (SipHash-1-3) costs a good part of a lookup's time
//! on the short keys Redis workloads use; foldhash (hashbrown's own
//! default) hashes them several times faster. Keys come from clients, so
//! the seed must not be guessable: foldhash's own random state seeds
//! itself from address-space layout and the clock only, so the process
//! draws one shared seed from the OS's randomness (through `rand`) and
//! each table adds a per-table seed of its own, as Redis seeds its
//! SipHash from `/dev/urandom` at startup.

use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use foldhash::fast::{FoldHasher, SeedableRandomState};
use foldhash::SharedSeed;

/// The process's shared seed, drawn once.
static SHARED: LazyLock<SharedSeed> = LazyLock::new(|| SharedSeed::from_u64(rand::random()));

/// A randomly seeded foldhash [`BuildHasher`]: 16 bytes, as std's
/// `RandomState`, so no table grows by switching.
#[derive(Clone, Debug)]
pub(crate) struct Seeded(SeedableRandomState);

impl Default for Seeded {
    fn default() -> Self {
        Seeded(SeedableRandomState::with_seed(rand::random(), &SHARED))
    }
}

impl BuildHasher for Seeded {
    type Hasher = FoldHasher<'static>;

    #[inline]
    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

/// The hasher of tables keyed by a number the engine makes itself (a
/// command's address, a command name's hash): no client picks these keys,
/// so no seed is needed, only the number spread over all the bits.
pub(crate) type ByNumber = BuildHasherDefault<NumberHasher>;

/// [`ByNumber`]'s hasher: the key through [`spread`].
#[derive(Default)]
pub(crate) struct NumberHasher(u64);

impl Hasher for NumberHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only numbers are hashed; this keeps the hasher total anyway.
        for &b in bytes {
            self.0 = spread(self.0 << 8 | u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = spread(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// `n` with its bits spread over the whole word, high and low (a folded
/// multiply by the golden ratio): an aligned address or a run of close
/// numbers lands in different buckets.
pub(crate) fn spread(n: u64) -> u64 {
    let full = u128::from(n) * 0x9e37_79b9_7f4a_7c15;
    (full as u64) ^ ((full >> 64) as u64)
}

#[cfg(test)]
mod tests {
    use super::Seeded;
    use std::hash::BuildHasher;

    /// Two tables hash the same key differently (their own seeds), each
    /// the same way every time.
    #[test]
    fn each_table_has_its_own_seed() {
        let (a, b) = (Seeded::default(), Seeded::default());
        assert_eq!(a.hash_one(b"key:1"), a.hash_one(b"key:1"));
        assert_ne!(a.hash_one(b"key:1"), b.hash_one(b"key:1"));
        assert_eq!(std::mem::size_of::<Seeded>(), 16);
    }
}
