//! [`Seeded`]: the hasher of the engine's tables keyed by data from
//! outside (the keyspace, big hashes, sets and sorted sets, WATCH and
//! blocking tables).
//!
//! std's `RandomState` (SipHash-1-3) took a good part of a lookup's time
//! on the short keys Redis workloads use; foldhash (hashbrown's own
//! default) hashes them several times faster. Keys come from clients, so
//! the seed must not be guessable: foldhash's own random state seeds
//! itself from address-space layout and the clock only, so the process
//! draws one shared seed from the OS's randomness (through `rand`) and
//! each table adds a per-table seed of its own, as Redis seeds its
//! SipHash from `/dev/urandom` at startup.

use std::hash::BuildHasher;
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
