//! Client-side caching in process: [`Engine::invalidations`] and
//! [`Invalidations`], what a RESP connection gets with `CLIENT TRACKING on
//! BCAST PREFIX ...` and its invalidation pushes, for a cache in the same
//! process (an in-process [`Connection`](crate::Connection) has no way to
//! receive pushes).

use std::sync::atomic::{AtomicU64, Ordering};

use super::{queue, Inbox, Note};
use crate::Engine;

/// Ids of in-process trackers: far above any RESP connection's (those
/// count up from 1), so that the two never meet in the tracking state.
static NEXT_ID: AtomicU64 = AtomicU64::new(1 << 62);

/// One invalidation an [`Invalidations`] feed receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalidation {
    /// These keys changed (or expired, or were evicted).
    Keys(Vec<Vec<u8>>),
    /// Every key may have changed: FLUSHALL or FLUSHDB.
    All,
}

/// A BCAST tracker of the engine's changes ([`Engine::invalidations`]):
/// the engine queues an [`Invalidation`] for every change of a key under
/// one of its prefixes, before the command that made it returns its reply
/// to whoever sent it. Dropping the feed ends the tracking.
pub struct Invalidations {
    engine: Engine,
    id: u64,
    inbox: Inbox,
}

impl std::fmt::Debug for Invalidations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invalidations")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Invalidations {
    /// The next queued invalidation, without waiting; `None` when none is
    /// queued.
    pub fn try_next(&mut self) -> Option<Invalidation> {
        loop {
            match self.inbox.try_recv().ok()? {
                Note::Invalidate { keys, .. } => return Some(from_keys(keys)),
                // A tracker redirects nowhere: nothing can break.
                Note::RedirBroken(_) => continue,
            }
        }
    }

    /// The next invalidation, waiting for one.
    pub async fn next(&mut self) -> Option<Invalidation> {
        loop {
            match self.inbox.recv().await? {
                Note::Invalidate { keys, .. } => return Some(from_keys(keys)),
                Note::RedirBroken(_) => continue,
            }
        }
    }
}

fn from_keys(keys: Option<Vec<crate::keyspace::Key>>) -> Invalidation {
    match keys {
        Some(keys) => Invalidation::Keys(keys.iter().map(|k| k.to_vec()).collect()),
        None => Invalidation::All,
    }
}

impl Drop for Invalidations {
    fn drop(&mut self) {
        let mut store = self.engine.shared.store.lock();
        store.tracking.disconnect(self.id);
        store.sync_tracking_log();
    }
}

impl Engine {
    /// Tracks every change of a key that starts with one of `prefixes`
    /// (none: every key), as `CLIENT TRACKING on BCAST PREFIX p...` does
    /// for a RESP connection: each command's changes arrive as one
    /// [`Invalidation`] per prefix, FLUSHALL / FLUSHDB as
    /// [`Invalidation::All`].
    ///
    /// ```
    /// use redmodel_memory::{Engine, Invalidation};
    /// let engine = Engine::new();
    /// let mut feed = engine.invalidations(&[b"user:".as_slice()]);
    /// let mut conn = engine.connection();
    /// conn.execute(&[b"SET", b"user:1", b"ann"]);
    /// conn.execute(&[b"SET", b"other", b"x"]);
    /// assert_eq!(feed.try_next(), Some(Invalidation::Keys(vec![b"user:1".to_vec()])));
    /// assert_eq!(feed.try_next(), None);
    /// conn.execute(&[b"FLUSHALL"]);
    /// assert_eq!(feed.try_next(), Some(Invalidation::All));
    /// ```
    pub fn invalidations(&self, prefixes: &[&[u8]]) -> Invalidations {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let (sink, inbox) = queue();
        let mut store = self.shared.store.lock();
        store.tracking.connect(id, sink);
        let mut args: Vec<&[u8]> = vec![b"on", b"BCAST"];
        for prefix in prefixes {
            args.push(b"PREFIX");
            args.push(prefix);
        }
        // Overlapping prefixes are refused, as by Redis: the feed then
        // tracks every key, which is never wrong, only wider.
        let accepted = matches!(
            store.tracking.client_command(id, b"tracking", &args),
            Some(Ok(_))
        );
        if !accepted {
            store
                .tracking
                .client_command(id, b"tracking", &[b"on", b"BCAST"]);
        }
        store.sync_tracking_log();
        drop(store);
        Invalidations {
            engine: self.clone(),
            id,
            inbox,
        }
    }
}
