//! The near cache: a process-local, coherent cache of model reads
//! ([`Db::with_cache`]).
//!
//! - [`store`]: the entries (LRU, bounded, aged), the per-key generations
//!   that keep a read which raced a change out of the cache, and the
//!   statistics.
//! - [`tracker`]: how the server tells the cache what changed: Redis's
//!   client tracking in BCAST mode on a connection of the cache's own (one
//!   per master on a cluster); on the memory engine in process, the
//!   engine's tracker feed.
//! - [`writes`]: read-your-writes: what a write through the `Db` drops at
//!   once, without waiting for the server's invalidation.
//! - [`replies`]: which relation and index reads the cache answers, by
//!   their whole request.
//!
//! # Why own tracking rather than redis-rs's `cache-aio`
//! redis-rs's cache lives inside its RESP3 multiplexed connection: it has
//! nothing to offer the memory engine in process (no connection there),
//! does not cover the `Db`'s pooled exclusive connections nor a cluster's
//! failovers as one cache, and caches raw replies per command, where the
//! model wants one entry per object that a write drops whole. Tracking in
//! BCAST mode on one connection of the cache's own works on every backend,
//! needs no state on the connections that read (a reconnecting shared
//! connection cannot silently lose it), and one lost connection is one
//! event that empties the cache.

mod replies;
mod store;
mod tracker;
mod writes;

use std::sync::Arc;
use std::time::Duration;

#[cfg(test)]
use store::ReplyTicket;
pub(crate) use store::{Cache, Lookup};
pub(crate) use writes::Invalidating;

use crate::error::{Error, Result};
use crate::Db;

/// How a `Db`'s near cache is bounded ([`Db::with_cache`]).
///
/// ```
/// use std::time::Duration;
/// let config = redmodel::CacheConfig::default()
///     .max_entries(50_000)
///     .max_age(Duration::from_secs(30))
///     .prefixes(["user:", "order:"]);
/// assert_eq!(config.entries(), 50_000);
/// ```
#[derive(Debug, Clone)]
pub struct CacheConfig {
    max_entries: usize,
    max_age: Duration,
    prefixes: Vec<String>,
}

impl Default for CacheConfig {
    /// 10,000 objects, a minute at most, every key tracked.
    fn default() -> Self {
        CacheConfig {
            max_entries: 10_000,
            max_age: Duration::from_secs(60),
            prefixes: Vec::new(),
        }
    }
}

impl CacheConfig {
    /// At most `n` objects (at least one), and as many replies of
    /// relation and index reads: past it, the least recently used goes (an
    /// eviction).
    pub fn max_entries(mut self, n: usize) -> Self {
        self.max_entries = n.max(1);
        self
    }

    /// An entry older than `age` is read again from the server: a bound
    /// on what a lost invalidation could cost.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// The key prefixes the server tells the cache about (BCAST's
    /// `PREFIX`): the stored keys of the cached models must start with one
    /// of them. None (the default): every key, the safe choice; prefixes
    /// save the invalidation traffic of the other keys.
    pub fn prefixes<S: Into<String>>(mut self, prefixes: impl IntoIterator<Item = S>) -> Self {
        self.prefixes = prefixes.into_iter().map(Into::into).collect();
        self
    }

    /// The bound on the number of objects (and, apart, of replies).
    pub fn entries(&self) -> usize {
        self.max_entries
    }
}

/// What a near cache counted since it was made ([`Db::cache_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Reads answered from the cache.
    pub hits: u64,
    /// Reads that went to the server (absent, too old, or not cacheable
    /// yet).
    pub misses: u64,
    /// Keys the server or a write through the `Db` said changed.
    pub invalidations: u64,
    /// Entries dropped for room (LRU) or for age.
    pub evictions: u64,
    /// Times the whole cache was emptied: FLUSHALL / FLUSHDB, RESET of the
    /// tracking connection, its loss, a cluster's failover.
    pub flushes: u64,
    /// Objects and relation or index replies in the cache now.
    pub entries: u64,
}

impl CacheStats {
    /// Hits among the reads, 0 to 1 (0 before any read).
    pub fn hit_rate(&self) -> f64 {
        let reads = self.hits + self.misses;
        if reads == 0 {
            0.0
        } else {
            self.hits as f64 / reads as f64
        }
    }
}

impl Db {
    /// Turns on the near cache for this `Db` and its clones (see
    /// `docs/cache.md`): [`load`](crate::model::ObjectRef::load),
    /// [`get`](crate::model::ObjectRef::get),
    /// [`load_many`](crate::model::ObjectRef::load_many), and the reads of
    /// relations and indexes answer from process memory while the server
    /// has not said what they read changed.
    ///
    /// - A write through this `Db` drops what it wrote at once: a read
    ///   after it never returns the older value.
    /// - Another client's write is seen once the server's invalidation has
    ///   arrived (in process: at once; over the network: about one round
    ///   trip after that write's reply).
    /// - A lost tracking connection, FLUSHALL / FLUSHDB or a failover
    ///   empties the cache; nothing is cached again until tracking is back.
    ///
    /// Returns once tracking is on. Fails with
    /// [`Error::Misuse`] if the cache is already on.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use redmodel::prelude::*;
    /// #[derive(redmodel::Admin, Debug, PartialEq)]
    /// struct Counter { #[redmodel(pk)] id: u32, n: i64 }
    ///
    /// let db = Db::memory().with_cache(redmodel::CacheConfig::default()).await?;
    /// Counter { id: 1, n: 5 }.insert(&db).await?;
    /// assert_eq!(Counter::load(&db, 1).await?.map(|c| c.n), Some(5)); // a miss
    /// assert_eq!(Counter::load(&db, 1).await?.map(|c| c.n), Some(5)); // a hit
    /// Counter::at(1).set(&db, Counter::N, 6).await?;
    /// assert_eq!(Counter::load(&db, 1).await?.map(|c| c.n), Some(6));
    /// let stats = db.cache_stats().expect("the cache is on");
    /// assert_eq!((stats.hits, stats.misses), (1, 2));
    /// # Ok(()) }
    /// ```
    pub async fn with_cache(self, config: CacheConfig) -> Result<Db> {
        if self.shared.cache.get().is_some() {
            return Err(Error::Misuse("the near cache is already on".to_string()));
        }
        let cache = Arc::new(Cache::new(&config));
        tracker::start(&self.shared, &cache, &config).await?;
        self.shared
            .cache
            .set(cache)
            .map_err(|_| Error::Misuse("the near cache is already on".to_string()))?;
        Ok(self)
    }

    /// What the near cache counted, or `None` if it is off.
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.cache().map(|c| c.stats())
    }

    /// Empties the near cache (no-op when it is off): for a caller that
    /// knows the data changed behind the server's back (a restore).
    pub fn clear_cache(&self) {
        if let Some(cache) = self.cache() {
            cache.flush();
        }
    }

    /// Sends RESET on the near cache's tracking connections, as a stray
    /// RESET would, and returns how many there were (none with the cache
    /// off or in process): the test suite checks with it that the cache
    /// notices tracking is off, empties, and tracks again. Not part of
    /// the API.
    #[doc(hidden)]
    pub async fn reset_cache_tracking(&self) -> Result<usize> {
        match self.cache() {
            Some(cache) => tracker::reset(cache).await,
            None => Ok(0),
        }
    }

    /// The near cache, if it is on.
    pub(crate) fn cache(&self) -> Option<&Arc<Cache>> {
        self.shared.cache.get()
    }
}
