//! The cache's entries, the generations that guard them, its counters.
//!
//! # Why a read that raced a change is never kept
//! A read is sent, the server answers it, another client changes the key,
//! and the invalidation (on the tracking connection) can reach this
//! process before the read's reply (on another connection) does. Keeping
//! that reply would cache the old value after its invalidation: stale
//! until the entry's maximum age. So a read takes a [`Ticket`] before it
//! is sent: the generation of its key's stripe and the cache's epoch.
//! Every invalidation bumps its keys' stripes, every flush (or loss of
//! tracking) the epoch, all under the one lock that inserting takes; a
//! reply is kept only if neither moved since its ticket. Stripes rather
//! than a generation per key: bounded memory, and a shared stripe only
//! costs a reply that could have been kept.
//!
//! # Replies of relation and index reads
//! An object is one key, dropped when it changes. A relation or index read
//! (an LRANGE, a SINTER of tag sets, a ZRANGE of a score range) is a reply
//! kept by its whole request, and it may read several keys: it carries the
//! generations of its keys' stripes as they were at its ticket, and holds
//! only while all of them still are, so a change of any of its keys (or a
//! flush) outdates it without a map from keys back to requests.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use lru::LruCache;
use parking_lot::Mutex;
use redis::Value;
use redmodel_memory::{Invalidation, Invalidations};

use super::{CacheConfig, CacheStats};

/// An object's stored fields (aligned with its model's fields), or `None`:
/// it does not exist. A missing object is cached too.
pub(crate) type Fields = Option<Vec<Option<Vec<u8>>>>;

/// How many generation stripes the keys hash to.
const STRIPES: usize = 4096;

/// One cached object.
struct Entry {
    /// The model it was read as (its table): another model reading the
    /// same key decodes other fields.
    model: &'static str,
    fields: Fields,
    /// When it was read.
    at: Instant,
}

/// One cached reply of a relation or index read.
struct Reply {
    value: Value,
    /// The stripe and its generation for each key the request reads, as
    /// at its ticket: the reply holds while every one is unchanged.
    stamps: Vec<(usize, u64)>,
    /// The cache's epoch at its ticket: a flush outdates it.
    epoch: u64,
    at: Instant,
}

/// What the lock guards.
struct Inner {
    lru: LruCache<Vec<u8>, Entry>,
    /// Replies by request (its packed bytes), bounded as the objects are.
    replies: LruCache<Vec<u8>, Reply>,
    generations: Box<[u64]>,
    /// Bumped by every flush and every change of `live`.
    epoch: u64,
    /// Whether the server tells the cache what changes: nothing is kept
    /// while it does not.
    live: bool,
}

/// What a read must show to keep its reply ([`Cache::keep`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    epoch: u64,
    stripe: usize,
    generation: u64,
}

/// What a read of several keys must show to keep its reply
/// ([`Cache::keep_reply`]).
#[derive(Debug, Clone)]
pub(crate) struct ReplyTicket {
    epoch: u64,
    stamps: Vec<(usize, u64)>,
}

/// A reply lookup's answer.
pub(crate) enum ReplyLookup {
    /// The reply as cached.
    Hit(Value),
    /// Send the request; keep its reply with the ticket, if any (none
    /// while tracking is down).
    Miss(Option<ReplyTicket>),
}

/// A lookup's answer.
pub(crate) enum Lookup {
    /// The object as cached.
    Hit(Fields),
    /// Read it from the server; keep the reply with the ticket, if any
    /// (none while tracking is down).
    Miss(Option<Ticket>),
}

/// A `Db`'s near cache (see the [module](self) docs).
pub(crate) struct Cache {
    inner: Mutex<Inner>,
    /// The engine's tracker, on the memory engine in process: drained
    /// before every lookup and keep, so that a change the engine made
    /// before a read began is always applied first.
    feed: OnceLock<Mutex<Invalidations>>,
    /// The tracker's connections in use (a handle to each), for
    /// [`Db::reset_cache_tracking`](crate::Db::reset_cache_tracking).
    pub(super) tracking: Mutex<Vec<redis::aio::MultiplexedConnection>>,
    max_age: Duration,
    hits: AtomicU64,
    misses: AtomicU64,
    invalidations: AtomicU64,
    evictions: AtomicU64,
    flushes: AtomicU64,
}

impl Cache {
    pub(crate) fn new(config: &CacheConfig) -> Self {
        let capacity = NonZeroUsize::new(config.max_entries).unwrap_or(NonZeroUsize::MIN);
        Cache {
            inner: Mutex::new(Inner {
                lru: LruCache::new(capacity),
                replies: LruCache::new(capacity),
                generations: vec![0; STRIPES].into_boxed_slice(),
                epoch: 0,
                live: false,
            }),
            feed: OnceLock::new(),
            tracking: Mutex::new(Vec::new()),
            max_age: config.max_age,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            invalidations: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
        }
    }

    /// Gives the cache the engine's tracker (in process).
    pub(crate) fn set_feed(&self, feed: Invalidations) {
        let _ = self.feed.set(Mutex::new(feed));
    }

    /// The object at stored key `key`, read as `model`.
    pub(crate) fn lookup(&self, key: &[u8], model: &'static str) -> Lookup {
        self.drain();
        let mut inner = self.inner.lock();
        let fresh = match inner.lru.get(key) {
            Some(e) if e.model == model && e.at.elapsed() <= self.max_age => Some(e.fields.clone()),
            Some(_) => None,
            None => {
                drop(inner);
                self.misses.fetch_add(1, Ordering::Relaxed);
                return Lookup::Miss(self.ticket(key));
            }
        };
        if let Some(fields) = fresh {
            drop(inner);
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Lookup::Hit(fields);
        }
        // Too old, or read as another model.
        inner.lru.pop(key);
        drop(inner);
        self.evictions.fetch_add(1, Ordering::Relaxed);
        self.misses.fetch_add(1, Ordering::Relaxed);
        Lookup::Miss(self.ticket(key))
    }

    /// A ticket for reading `key` now; `None` while tracking is down.
    fn ticket(&self, key: &[u8]) -> Option<Ticket> {
        let inner = self.inner.lock();
        if !inner.live {
            return None;
        }
        let stripe = stripe_of(key);
        Some(Ticket {
            epoch: inner.epoch,
            stripe,
            generation: inner.generations[stripe],
        })
    }

    /// Keeps what a read with `ticket` returned, unless the key changed
    /// (or the cache was flushed) since the ticket was taken.
    pub(crate) fn keep(&self, key: &[u8], model: &'static str, ticket: Ticket, fields: Fields) {
        self.drain();
        let mut inner = self.inner.lock();
        if !inner.live
            || inner.epoch != ticket.epoch
            || inner.generations[ticket.stripe] != ticket.generation
        {
            return;
        }
        let entry = Entry {
            model,
            fields,
            at: Instant::now(),
        };
        let evicted = match inner.lru.push(key.to_vec(), entry) {
            Some((old, _)) => old.as_slice() != key,
            None => false,
        };
        drop(inner);
        if evicted {
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The reply to `request`, a read of `keys`, if one is kept and none
    /// of the keys changed since it was read.
    pub(crate) fn lookup_reply(&self, request: &[u8], keys: &[&[u8]]) -> ReplyLookup {
        self.drain();
        let mut inner = self.inner.lock();
        let Inner {
            replies,
            generations,
            epoch,
            live,
            ..
        } = &mut *inner;
        let held = replies.get(request).map(|r| {
            let fresh = r.epoch == *epoch
                && r.at.elapsed() <= self.max_age
                && r.stamps.iter().all(|&(s, g)| generations[s] == g);
            fresh.then(|| r.value.clone())
        });
        match held {
            Some(Some(value)) => {
                drop(inner);
                self.hits.fetch_add(1, Ordering::Relaxed);
                return ReplyLookup::Hit(value);
            }
            // A key of it changed (counted as its invalidation), or it
            // is too old or of a flushed epoch.
            Some(None) => {
                replies.pop(request);
            }
            None => {}
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        if !*live {
            return ReplyLookup::Miss(None);
        }
        let stamps = keys
            .iter()
            .map(|k| {
                let stripe = stripe_of(k);
                (stripe, generations[stripe])
            })
            .collect();
        ReplyLookup::Miss(Some(ReplyTicket {
            epoch: *epoch,
            stamps,
        }))
    }

    /// Keeps the reply to `request` that a read with `ticket` returned,
    /// unless one of its keys changed (or the cache was flushed) since.
    pub(crate) fn keep_reply(&self, request: Vec<u8>, ticket: ReplyTicket, value: Value) {
        self.drain();
        let mut inner = self.inner.lock();
        let moved = ticket
            .stamps
            .iter()
            .any(|&(s, g)| inner.generations[s] != g);
        if !inner.live || inner.epoch != ticket.epoch || moved {
            return;
        }
        let replaces = inner.replies.contains(&request);
        let reply = Reply {
            value,
            stamps: ticket.stamps,
            epoch: ticket.epoch,
            at: Instant::now(),
        };
        let evicted = inner.replies.push(request, reply).is_some() && !replaces;
        drop(inner);
        if evicted {
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// These keys changed: their entries go, and reads in flight on them
    /// keep nothing.
    pub(crate) fn invalidate<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) {
        let mut inner = self.inner.lock();
        let mut n = 0;
        for key in keys {
            inner.generations[stripe_of(key)] += 1;
            inner.lru.pop(key);
            n += 1;
        }
        drop(inner);
        self.invalidations.fetch_add(n, Ordering::Relaxed);
    }

    /// Everything may have changed: the cache empties, and reads in flight
    /// keep nothing.
    pub(crate) fn flush(&self) {
        let mut inner = self.inner.lock();
        inner.lru.clear();
        inner.replies.clear();
        inner.epoch += 1;
        drop(inner);
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }

    /// Tracking came up (`true`: from now on the server reports every
    /// change) or went down (`false`: the cache empties and keeps nothing
    /// until it is up again). Either way no read begun before is kept: one
    /// begun while tracking was down may have missed a change.
    pub(crate) fn set_live(&self, live: bool) {
        let mut inner = self.inner.lock();
        inner.live = live;
        inner.epoch += 1;
        if !live {
            inner.lru.clear();
            inner.replies.clear();
            drop(inner);
            self.flushes.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Applies what the engine's tracker queued (in process).
    fn drain(&self) {
        let Some(feed) = self.feed.get() else {
            return;
        };
        let mut feed = feed.lock();
        while let Some(change) = feed.try_next() {
            match change {
                Invalidation::Keys(keys) => self.invalidate(keys.iter().map(Vec::as_slice)),
                Invalidation::All => self.flush(),
            }
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        self.drain();
        let entries = {
            let inner = self.inner.lock();
            (inner.lru.len() + inner.replies.len()) as u64
        };
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            invalidations: self.invalidations.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            flushes: self.flushes.load(Ordering::Relaxed),
            entries,
        }
    }
}

/// The generation stripe of `key`.
fn stripe_of(key: &[u8]) -> usize {
    let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
    (hash % STRIPES as u64) as usize
}
