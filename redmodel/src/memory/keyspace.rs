//! One numbered database: the keys, their values and their expiry times.
//!
//! Three structures share the key (an `Arc<[u8]>`, so each key is stored
//! once):
//! - `entries`: key -> value and expiry, for lookups;
//! - `order`: a stable id per key, in creation order, so that SCAN's cursor
//!   is simply "the next id": a key present for the whole scan keeps its id
//!   and is returned exactly once, whatever is added or removed meanwhile;
//! - `expiring`: the keys that have a TTL, in a vector-backed set, so that
//!   the active expiry cycle can sample them at random in O(1).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use indexmap::IndexSet;

use super::error::CmdError;
use super::glob::glob_match;
use super::value::{Kind, Value};

pub(crate) type Key = Arc<[u8]>;

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) value: Value,
    /// Unix milliseconds after which the key is gone (`now > expire_at`).
    pub(crate) expire_at: Option<i64>,
    id: u64,
}

/// What WATCH remembers of a key: how many sessions watch it, and a counter
/// bumped by every modification.
#[derive(Debug, Default)]
struct Watch {
    watchers: usize,
    epoch: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Keyspace {
    entries: HashMap<Key, Entry>,
    order: BTreeMap<u64, Key>,
    next_id: u64,
    expiring: IndexSet<Key>,
    watched: HashMap<Key, Watch>,
}

impl Keyspace {
    /// Number of keys, counting expired keys not yet reclaimed (as DBSIZE does).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Number of keys that carry a TTL.
    pub(crate) fn expiring_len(&self) -> usize {
        self.expiring.len()
    }

    fn is_expired(entry: &Entry, now: i64) -> bool {
        entry.expire_at.is_some_and(|at| now > at)
    }

    /// Passive expiry: deletes `key` if its time has passed. Returns true if it did.
    pub(crate) fn expire_if_needed(&mut self, key: &[u8], now: i64) -> bool {
        match self.entries.get(key) {
            Some(entry) if Self::is_expired(entry, now) => {
                self.remove(key);
                true
            }
            _ => false,
        }
    }

    /// The live entry at `key`, if any.
    pub(crate) fn entry(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        self.expire_if_needed(key, now);
        self.entries.get_mut(key)
    }

    /// The live value at `key`, if any.
    pub(crate) fn value(&mut self, key: &[u8], now: i64) -> Option<&Value> {
        self.entry(key, now).map(|e| &e.value)
    }

    pub(crate) fn contains(&mut self, key: &[u8], now: i64) -> bool {
        self.entry(key, now).is_some()
    }

    /// The live value at `key` through a shared borrow, so that a command can
    /// hold several values at once (SINTER, ZUNIONSTORE). An expired key reads
    /// as absent but is not reclaimed here: run [`Self::value`] on each key
    /// first for Redis's passive expiry.
    pub(crate) fn peek(&self, key: &[u8], now: i64) -> Option<&Value> {
        self.entries
            .get(key)
            .filter(|e| !Self::is_expired(e, now))
            .map(|e| &e.value)
    }

    /// The value at `key` as type `T`; WRONGTYPE if it holds another type.
    pub(crate) fn read<T: Kind>(&mut self, key: &[u8], now: i64) -> Result<Option<&T>, CmdError> {
        match self.value(key, now) {
            None => Ok(None),
            Some(v) => T::of(v).map(Some).ok_or(CmdError::WrongType),
        }
    }

    /// Mutable access to the value at `key` as type `T`.
    pub(crate) fn write<T: Kind>(
        &mut self,
        key: &[u8],
        now: i64,
    ) -> Result<Option<&mut T>, CmdError> {
        match self.entry(key, now) {
            None => Ok(None),
            Some(e) => T::of_mut(&mut e.value).map(Some).ok_or(CmdError::WrongType),
        }
    }

    /// Mutable access to the value at `key`, created empty if missing.
    /// Callers validate their arguments first, and call [`Self::drop_if_empty`]
    /// if they may leave it empty.
    pub(crate) fn write_or_create<T: Kind>(
        &mut self,
        key: &[u8],
        now: i64,
    ) -> Result<&mut T, CmdError> {
        if !self.contains(key, now) {
            self.insert_new(Arc::from(key), T::default().wrap(), None);
        }
        match self.entries.get_mut(key) {
            Some(e) => T::of_mut(&mut e.value).ok_or(CmdError::WrongType),
            None => unreachable!("inserted above"),
        }
    }

    fn insert_new(&mut self, key: Key, value: Value, expire_at: Option<i64>) {
        self.next_id += 1;
        let id = self.next_id;
        self.order.insert(id, key.clone());
        if expire_at.is_some() {
            self.expiring.insert(key.clone());
        }
        self.entries.insert(
            key,
            Entry {
                value,
                expire_at,
                id,
            },
        );
    }

    /// Stores `value` at `key`, replacing whatever was there. The TTL is
    /// cleared unless `keep_ttl` (SET ... KEEPTTL). Marks the key modified.
    pub(crate) fn set(&mut self, key: &[u8], value: Value, keep_ttl: bool, now: i64) {
        self.expire_if_needed(key, now);
        match self.entries.get_mut(key) {
            Some(entry) => {
                entry.value = value;
                if !keep_ttl && entry.expire_at.take().is_some() {
                    self.expiring.swap_remove(key);
                }
            }
            None => self.insert_new(Arc::from(key), value, None),
        }
        self.modified(key);
    }

    /// Stores a value with an expiry time (RENAME carries the TTL, SET EX sets one).
    pub(crate) fn set_with_expiry(
        &mut self,
        key: &[u8],
        value: Value,
        expire_at: Option<i64>,
        now: i64,
    ) {
        self.set(key, value, false, now);
        self.set_expire(key, expire_at);
    }

    /// Deletes `key` (live or expired). Marks it modified.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let (key, entry) = self.entries.remove_entry(key)?;
        self.order.remove(&entry.id);
        if entry.expire_at.is_some() {
            self.expiring.swap_remove(&key);
        }
        self.modified(&key);
        Some(entry)
    }

    /// Deletes `key` if it holds an empty aggregate: Redis never keeps one.
    pub(crate) fn drop_if_empty(&mut self, key: &[u8]) {
        if self
            .entries
            .get(key)
            .is_some_and(|e| e.value.is_empty_aggregate())
        {
            self.remove(key);
        }
    }

    /// Sets or clears the expiry of an existing key. Does not mark it modified:
    /// the expiry commands do that themselves, as Redis does.
    pub(crate) fn set_expire(&mut self, key: &[u8], at: Option<i64>) -> bool {
        let Some(entry) = self.entries.get_mut(key) else {
            return false;
        };
        match (entry.expire_at.is_some(), at.is_some()) {
            (false, true) => {
                if let Some((k, _)) = self.entries.get_key_value(key) {
                    self.expiring.insert(k.clone());
                }
            }
            (true, false) => {
                self.expiring.swap_remove(key);
            }
            _ => {}
        }
        if let Some(entry) = self.entries.get_mut(key) {
            entry.expire_at = at;
        }
        true
    }

    /// Removes every key, touching the watched ones that existed.
    pub(crate) fn clear(&mut self) {
        let watched: Vec<Key> = self
            .watched
            .keys()
            .filter(|k| self.entries.contains_key(&k[..]))
            .cloned()
            .collect();
        self.entries.clear();
        self.order.clear();
        self.expiring.clear();
        for key in watched {
            self.modified(&key);
        }
    }

    /// One step of SCAN: visits up to `count` keys from `cursor` and returns
    /// the next cursor (0 at the end) and the live keys that match.
    pub(crate) fn scan(
        &mut self,
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
        type_name: Option<&[u8]>,
        now: i64,
    ) -> (u64, Vec<Key>) {
        let visited: Vec<(u64, Key)> = self
            .order
            .range(cursor..)
            .take(count.max(1))
            .map(|(id, k)| (*id, k.clone()))
            .collect();
        let next = match visited.last() {
            Some((last, _)) if self.order.range(last + 1..).next().is_some() => last + 1,
            _ => 0,
        };
        let mut keys = Vec::with_capacity(visited.len());
        for (_, key) in visited {
            if self.expire_if_needed(&key, now) {
                continue;
            }
            if pattern.is_some_and(|p| !glob_match(p, &key, false)) {
                continue;
            }
            if let Some(t) = type_name {
                let Some(e) = self.entries.get(&key[..]) else {
                    continue;
                };
                if !e.value.type_name().as_bytes().eq_ignore_ascii_case(t) {
                    continue;
                }
            }
            keys.push(key);
        }
        (next, keys)
    }

    /// All live keys matching `pattern`, in creation order.
    /// Like Redis's KEYS, this skips expired keys without deleting them
    /// (so DBSIZE still counts them until they are reclaimed). `None`
    /// matches every key, the empty one included (KEYS's `*` special case).
    pub(crate) fn keys(&self, pattern: Option<&[u8]>, now: i64) -> Vec<Key> {
        self.order
            .values()
            .filter(|key| {
                self.entries
                    .get(&key[..])
                    .is_some_and(|e| !Self::is_expired(e, now))
            })
            .filter(|key| pattern.is_none_or(|p| glob_match(p, key, false)))
            .cloned()
            .collect()
    }

    /// One round of the active expiry cycle: samples up to `n` keys with a
    /// TTL at random and deletes the expired ones. Returns (sampled, expired).
    pub(crate) fn expire_sample(
        &mut self,
        n: usize,
        now: i64,
        rng: &mut impl rand::Rng,
    ) -> (usize, usize) {
        let sample = n.min(self.expiring.len());
        let mut expired = 0;
        for _ in 0..sample {
            let i = rng.random_range(0..self.expiring.len());
            let Some(key) = self.expiring.get_index(i).cloned() else {
                break;
            };
            if self.expire_if_needed(&key, now) {
                expired += 1;
            }
            if self.expiring.is_empty() {
                break;
            }
        }
        (sample, expired)
    }

    /// Records a modification of `key`, for WATCH.
    pub(crate) fn modified(&mut self, key: &[u8]) {
        if self.watched.is_empty() {
            return;
        }
        if let Some(w) = self.watched.get_mut(key) {
            w.epoch += 1;
        }
    }

    /// Starts watching `key`; returns its current epoch.
    pub(crate) fn watch(&mut self, key: &[u8]) -> u64 {
        let w = self.watched.entry(Arc::from(key)).or_default();
        w.watchers += 1;
        w.epoch
    }

    /// Stops one watcher of `key`.
    pub(crate) fn unwatch(&mut self, key: &[u8]) {
        if let Some(w) = self.watched.get_mut(key) {
            w.watchers -= 1;
            if w.watchers == 0 {
                self.watched.remove(key);
            }
        }
    }

    /// The modification epoch of a watched key.
    pub(crate) fn watch_epoch(&self, key: &[u8]) -> u64 {
        self.watched.get(key).map_or(0, |w| w.epoch)
    }

    /// Whether `key` exists but is past its expiry time (not yet reclaimed).
    pub(crate) fn is_logically_expired(&self, key: &[u8], now: i64) -> bool {
        self.entries
            .get(key)
            .is_some_and(|e| Self::is_expired(e, now))
    }
}

#[cfg(test)]
mod tests {
    use super::Keyspace;
    use crate::memory::value::Value;

    /// KEYS skips an expired key but, as in Redis, does not delete it:
    /// DBSIZE counts it until it is touched or reclaimed.
    #[test]
    fn keys_skips_expired_keys_without_deleting_them() {
        let mut ks = Keyspace::default();
        ks.set_with_expiry(b"gone", Value::Str(b"v".to_vec()), Some(1_000), 0);
        ks.set(b"", Value::Str(b"empty key".to_vec()), false, 0);
        ks.set(b"kept", Value::Str(b"v".to_vec()), false, 0);
        let names =
            |keys: Vec<super::Key>| -> Vec<Vec<u8>> { keys.iter().map(|k| k.to_vec()).collect() };
        assert_eq!(
            names(ks.keys(None, 500)),
            vec![b"gone".to_vec(), b"".to_vec(), b"kept".to_vec()]
        );
        assert_eq!(
            names(ks.keys(None, 2_000)),
            vec![b"".to_vec(), b"kept".to_vec()]
        );
        assert_eq!(names(ks.keys(Some(b"k*"), 2_000)), vec![b"kept".to_vec()]);
        assert_eq!(ks.len(), 3);
    }
}
