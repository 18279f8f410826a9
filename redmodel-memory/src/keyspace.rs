//! One numbered database: the keys, their values and their expiry times.
//!
//! Three structures share the key (an `Arc<[u8]>`, so each key is stored
//! once):
//! - `entries`: key -> value and expiry, for lookups;
//! - `slots`: a vector in which each key has a stable position, so that
//!   SCAN's cursor is simply "the next position": a key present for the
//!   whole scan keeps its position and is returned exactly once, whatever
//!   is added or removed meanwhile. A deleted key leaves a hole that the
//!   next new key fills (`free` lists the holes), so the vector stays as
//!   long as the most keys ever held at once, at one pointer per key (a
//!   B-tree of ids cost three times that). A key deleted and created again
//!   during a scan may come back twice, as Redis allows;
//! - `expiring`: the keys that have a TTL, in a vector-backed set, so that
//!   the active expiry cycle can sample them at random in O(1).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use indexmap::IndexSet;

use super::config::Limits;
use super::error::CmdError;
use super::glob::glob_match;
use super::value::encoding::{outgrows, History};
use super::value::{Kind, Value};

pub(crate) type Key = Arc<[u8]>;

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) value: Value,
    /// Unix milliseconds after which the key is gone (`now > expire_at`).
    pub(crate) expire_at: Option<i64>,
    /// The key's position in `Keyspace::slots`.
    slot: usize,
    /// What the value's Redis encoding depends on beyond its data (OBJECT
    /// ENCODING).
    pub(crate) history: History,
    /// When the key was last looked up, in Unix ms (OBJECT IDLETIME).
    pub(crate) accessed: i64,
    /// The LFU access counter OBJECT FREQ shows: Redis's initial
    /// `LFU_INIT_VAL` (the engine does not count accesses), or what
    /// RESTORE ... FREQ set.
    pub(crate) freq: u8,
}

/// Redis's `LFU_INIT_VAL`: a new key's access counter.
pub(crate) const LFU_INIT_VAL: u8 = 5;

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
    slots: Vec<Option<Key>>,
    /// The holes in `slots`, refilled last-freed first.
    free: Vec<usize>,
    expiring: IndexSet<Key>,
    watched: HashMap<Key, Watch>,
    /// The configured encoding thresholds, against which every modified
    /// value is checked (see [`Self::modified`]).
    limits: Limits,
    /// Keys deleted because their time had passed (INFO's `expired_keys`),
    /// since the start or CONFIG RESETSTAT.
    pub(crate) expired_count: u64,
    /// Changes recorded by [`Self::modified`] ([`Self::changes`]).
    dirty: u64,
    /// The keyspace events raised here (`new`, `expired`), waiting for the
    /// store to publish them; logged only if their class is enabled.
    events: Vec<crate::notify::Logged>,
    /// The clients blocked on each key (BLPOP...), by waiter id, first
    /// blocked first (Redis's `db->blocking_keys`; see `crate::blocking`).
    blocked: HashMap<Key, VecDeque<u64>>,
    /// The keys of `blocked` modified since the blocked clients were last
    /// offered them, in the order of their first modification (Redis's
    /// ready keys).
    ready: IndexSet<Key>,
}

impl Keyspace {
    /// Number of keys, counting expired keys not yet reclaimed (as DBSIZE does).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The mean remaining TTL of the keys that have one, in ms (INFO's
    /// `avg_ttl`; Redis estimates it from samples, this is exact).
    pub(crate) fn average_ttl(&self, now: i64) -> i64 {
        let ttls: Vec<i64> = self
            .expiring
            .iter()
            .filter_map(|k| self.entries.get(k)?.expire_at)
            .map(|at| (at - now).max(0))
            .collect();
        if ttls.is_empty() {
            return 0;
        }
        let sum: i128 = ttls.iter().map(|&t| i128::from(t)).sum();
        i64::try_from(sum / ttls.len() as i128).unwrap_or(i64::MAX)
    }

    /// The sum of `size(key, value)` over every key (INFO memory's estimate).
    pub(crate) fn sizes(&self, size: impl Fn(&[u8], &Value) -> usize) -> usize {
        self.entries.iter().map(|(k, e)| size(k, &e.value)).sum()
    }

    /// A random live key (RANDOMKEY), reclaiming the expired keys it
    /// meets as Redis's `dbRandomKey` does; `None` if there is none left.
    pub(crate) fn random_key(&mut self, now: i64, rng: &mut impl rand::Rng) -> Option<Key> {
        loop {
            if self.entries.is_empty() {
                return None;
            }
            // Slots are mostly full, so a few draws find a key; if holes
            // dominate, pick among the entries instead.
            let mut drawn = None;
            for _ in 0..64 {
                let i = rng.random_range(0..self.slots.len().max(1));
                if let Some(Some(key)) = self.slots.get(i) {
                    drawn = Some(key.clone());
                    break;
                }
            }
            let key = match drawn {
                Some(key) => key,
                None => {
                    let n = rng.random_range(0..self.entries.len());
                    self.entries.keys().nth(n)?.clone()
                }
            };
            if !self.expire_if_needed(&key, now) {
                return Some(key);
            }
        }
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
                self.log_event(crate::notify::class::EXPIRED, "expired", key);
                self.remove(key);
                self.expired_count += 1;
                true
            }
            _ => false,
        }
    }

    /// The live entry at `key`, if any.
    pub(crate) fn entry(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        self.expire_if_needed(key, now);
        let entry = self.entries.get_mut(key)?;
        entry.accessed = now;
        Some(entry)
    }

    /// The live entry at `key` without counting an access (OBJECT, which
    /// Redis looks up with `LOOKUP_NOTOUCH`). Expired keys are reclaimed.
    pub(crate) fn entry_untouched(&mut self, key: &[u8], now: i64) -> Option<&Entry> {
        self.expire_if_needed(key, now);
        self.entries.get(key)
    }

    /// Logs a keyspace event raised here, if its class is enabled (the
    /// key is copied only then: this runs for every new or expired key).
    fn log_event(&mut self, class: u32, event: &'static str, key: &[u8]) {
        if crate::notify::enabled(self.limits.notify, class) {
            self.events.push((event, Arc::from(key)));
        }
    }

    /// Whether `key` is stored, expired or not, without expiring it.
    pub(crate) fn exists_raw(&self, key: &[u8]) -> bool {
        self.entries.contains_key(key)
    }

    /// The logged events, oldest first (see `Store::flush_notifications`).
    pub(crate) fn take_events(&mut self) -> Vec<crate::notify::Logged> {
        std::mem::take(&mut self.events)
    }

    /// The configured limits this keyspace obeys.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The entry stored at `key`, even if its time has passed (MEMORY
    /// USAGE looks at the dictionary directly).
    pub(crate) fn stored(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The encoding thresholds now in force (CONFIG SET changes them).
    pub(crate) fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Records how a string was made, for OBJECT ENCODING: a string built
    /// as text (INCRBYFLOAT) or edited in place (APPEND, SETRANGE).
    pub(crate) fn set_history(&mut self, key: &[u8], history: History) {
        if let Some(e) = self.entries.get_mut(key) {
            e.history = history;
        }
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
            self.insert_new(Arc::from(key), T::default().wrap(), None, History::Fresh);
        }
        match self.entries.get_mut(key) {
            Some(e) => T::of_mut(&mut e.value).ok_or(CmdError::WrongType),
            None => unreachable!("inserted above"),
        }
    }

    fn insert_new(&mut self, key: Key, value: Value, expire_at: Option<i64>, history: History) {
        self.log_event(crate::notify::class::NEW, "new", &key);
        let slot = match self.free.pop() {
            Some(hole) => hole,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        if let Some(place) = self.slots.get_mut(slot) {
            *place = Some(key.clone());
        }
        if expire_at.is_some() {
            self.expiring.insert(key.clone());
        }
        self.entries.insert(
            key,
            Entry {
                value,
                expire_at,
                slot,
                history,
                accessed: 0,
                freq: LFU_INIT_VAL,
            },
        );
    }

    /// Stores `value` at `key`, replacing whatever was there. The TTL is
    /// cleared unless `keep_ttl` (SET ... KEEPTTL). Marks the key modified.
    pub(crate) fn set(&mut self, key: &[u8], value: Value, keep_ttl: bool, now: i64) {
        self.set_with_history(key, value, keep_ttl, History::Fresh, now);
    }

    /// [`Self::set`] for a value that carries its encoding history with it
    /// (RENAME, MOVE and COPY keep the object, or a copy of it, as is).
    pub(crate) fn set_with_history(
        &mut self,
        key: &[u8],
        value: Value,
        keep_ttl: bool,
        history: History,
        now: i64,
    ) {
        self.expire_if_needed(key, now);
        match self.entries.get_mut(key) {
            Some(entry) => {
                entry.value = value;
                entry.history = history;
                entry.accessed = now;
                if !keep_ttl && entry.expire_at.take().is_some() {
                    self.expiring.swap_remove(key);
                }
            }
            None => {
                self.insert_new(Arc::from(key), value, None, history);
                if let Some(e) = self.entries.get_mut(key) {
                    e.accessed = now;
                }
            }
        }
        self.modified(key);
    }

    /// Stores a value with an expiry time.
    #[cfg(test)]
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
        self.free_slot(entry.slot);
        if entry.expire_at.is_some() {
            self.expiring.swap_remove(&key);
        }
        self.modified(&key);
        Some(entry)
    }

    /// Empties a key's slot for a later key. Trailing holes are dropped
    /// instead, so that a keyspace that shrinks gives its slots back.
    fn free_slot(&mut self, slot: usize) {
        if let Some(place) = self.slots.get_mut(slot) {
            *place = None;
        }
        if slot + 1 == self.slots.len() {
            while self.slots.last().is_some_and(Option::is_none) {
                self.slots.pop();
            }
            let len = self.slots.len();
            self.free.retain(|&hole| hole < len);
        } else {
            self.free.push(slot);
        }
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
        self.slots = Vec::new();
        self.free = Vec::new();
        self.expiring.clear();
        for key in watched {
            self.modified(&key);
        }
        self.signal_all_blocked();
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
        let from = usize::try_from(cursor).unwrap_or(usize::MAX);
        let visited: Vec<(usize, Key)> = self
            .slots
            .iter()
            .enumerate()
            .skip(from)
            .filter_map(|(slot, key)| Some((slot, key.clone()?)))
            .take(count.max(1))
            .collect();
        let next = match visited.last() {
            Some(&(last, _)) if self.slots.iter().skip(last + 1).any(Option::is_some) => {
                u64::try_from(last + 1).unwrap_or(0)
            }
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

    /// All live keys matching `pattern`, in slot order (creation order
    /// until a deletion leaves a hole that a new key fills).
    /// Like Redis's KEYS, this skips expired keys without deleting them
    /// (so DBSIZE still counts them until they are reclaimed). `None`
    /// matches every key, the empty one included (KEYS's `*` special case).
    pub(crate) fn keys(&self, pattern: Option<&[u8]>, now: i64) -> Vec<Key> {
        self.slots
            .iter()
            .flatten()
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

    /// SWAPDB: `a` and `b` exchange their keys; each keeps its watchers,
    /// whose keys are touched first as Redis 7.0's
    /// `touchAllWatchedKeysInDb` does (see [`Self::touch_for_swap`]).
    pub(crate) fn swap_data(a: &mut Keyspace, b: &mut Keyspace, now: i64) {
        a.touch_for_swap(b, now);
        b.touch_for_swap(a, now);
        std::mem::swap(&mut a.entries, &mut b.entries);
        std::mem::swap(&mut a.slots, &mut b.slots);
        std::mem::swap(&mut a.free, &mut b.free);
        std::mem::swap(&mut a.expiring, &mut b.expiring);
        // Blocked clients stay with their database, which now holds
        // other keys: offer them all (Redis's `scanDatabaseForReadyKeys`).
        a.signal_all_blocked();
        b.signal_all_blocked();
    }

    /// Touches the watched keys of `self` that exist in it or in
    /// `replaced_with`, the keys about to take its place. Like Redis, a
    /// key that is stale on both sides, or stale here and absent there, or
    /// absent here and stale there, is no logical change and is not
    /// touched. (Redis then flags the watchers of the last kind as having
    /// watched a stale key; the engine's sessions keep that flag from the
    /// time of WATCH, so such a watcher's EXEC still fails.)
    fn touch_for_swap(&mut self, replaced_with: &Keyspace, now: i64) {
        if self.watched.is_empty() {
            return;
        }
        let state =
            |ks: &Keyspace, key: &[u8]| ks.entries.get(key).map(|e| Self::is_expired(e, now));
        let touched: Vec<Key> = self
            .watched
            .keys()
            .filter(|key| {
                // Absent on both sides, or stale here and absent or
                // stale there, or absent here and stale there: no change.
                !matches!(
                    (state(self, key), state(replaced_with, key)),
                    (None, None) | (Some(true), None | Some(true)) | (None, Some(true))
                )
            })
            .cloned()
            .collect();
        for key in touched {
            if let Some(w) = self.watched.get_mut(&key) {
                w.epoch += 1;
            }
        }
    }

    /// Records a modification of `key`, for WATCH, and for OBJECT
    /// ENCODING: an aggregate that now outgrows the thresholds has been
    /// converted for good, as Redis converts it when it grows.
    pub(crate) fn modified(&mut self, key: &[u8]) {
        self.dirty += 1;
        if !self.blocked.is_empty() {
            self.signal_ready(key);
        }
        if let Some(e) = self.entries.get_mut(key) {
            if e.history == History::Fresh && outgrows(&e.value, &self.limits) {
                e.history = History::Converted;
            }
        }
        if self.watched.is_empty() {
            return;
        }
        if let Some(w) = self.watched.get_mut(key) {
            w.epoch += 1;
        }
    }

    /// How many changes this database has seen (INFO's
    /// `rdb_changes_since_last_save`, summed over the databases: the engine
    /// never saves).
    pub(crate) fn changes(&self) -> u64 {
        self.dirty
    }

    /// Queues `key` for its blocked clients, if it has any.
    pub(crate) fn signal_ready(&mut self, key: &[u8]) {
        if let Some((k, _)) = self.blocked.get_key_value(key) {
            if !self.ready.contains(key) {
                self.ready.insert(k.clone());
            }
        }
    }

    /// Queues every key that has blocked clients (FLUSHDB, SWAPDB: the
    /// keys changed wholesale; Redis's `scanDatabaseForReadyKeys`).
    fn signal_all_blocked(&mut self) {
        let keys: Vec<Key> = self.blocked.keys().cloned().collect();
        self.ready.extend(keys);
    }

    /// Puts waiter `id` last in the queue of the clients blocked on `key`.
    pub(crate) fn add_blocked(&mut self, key: Key, id: u64) {
        self.blocked.entry(key).or_default().push_back(id);
    }

    /// Takes waiter `id` out of the queue of `key`.
    pub(crate) fn remove_blocked(&mut self, key: &[u8], id: u64) {
        if let Some(queue) = self.blocked.get_mut(key) {
            queue.retain(|&w| w != id);
            if queue.is_empty() {
                self.blocked.remove(key);
            }
        }
    }

    /// The waiters blocked on `key`, first blocked first.
    pub(crate) fn blocked_on(&self, key: &[u8]) -> Vec<u64> {
        self.blocked
            .get(key)
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Whether some key of this database is ready for its blocked clients.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Takes the ready keys, in order, leaving none.
    pub(crate) fn take_ready(&mut self) -> IndexSet<Key> {
        std::mem::take(&mut self.ready)
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
    use crate::value::Value;

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

    fn scan_all(
        ks: &mut Keyspace,
        count: usize,
        between: &mut dyn FnMut(&mut Keyspace),
    ) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            let (next, keys) = ks.scan(cursor, count, None, None, 0);
            seen.extend(keys.iter().map(|k| k.to_vec()));
            if next == 0 {
                return seen;
            }
            between(ks);
            cursor = next;
        }
    }

    /// A key present for the whole scan is returned exactly once, however
    /// many keys are deleted and created meanwhile (refilling holes).
    #[test]
    fn scan_returns_every_key_present_throughout_once() {
        let mut ks = Keyspace::default();
        for i in 0..100 {
            ks.set(
                format!("k{i}").as_bytes(),
                Value::Str(b"v".to_vec()),
                false,
                0,
            );
        }
        let mut step = 0;
        let mut churn = |ks: &mut Keyspace| {
            // Delete two keys scattered over the space, create three.
            ks.remove(format!("k{}", (step * 7) % 50 * 2 + 1).as_bytes());
            ks.remove(format!("k{}", 99 - step).as_bytes());
            for j in 0..3 {
                ks.set(
                    format!("new{step}.{j}").as_bytes(),
                    Value::Str(b"v".to_vec()),
                    false,
                    0,
                );
            }
            step += 1;
        };
        let seen = scan_all(&mut ks, 3, &mut churn);
        // Even keys below 50 are never deleted.
        for i in (0..50).step_by(2) {
            let key = format!("k{i}").into_bytes();
            assert_eq!(seen.iter().filter(|k| **k == key).count(), 1, "k{i}");
        }
        assert!(ks.free.is_empty() || ks.free.iter().all(|&h| h < ks.slots.len()));
    }

    /// Holes are refilled, and trailing ones given back.
    #[test]
    fn slots_are_reused_and_trimmed() {
        let mut ks = Keyspace::default();
        for key in [&b"a"[..], b"b", b"c"] {
            ks.set(key, Value::Str(b"v".to_vec()), false, 0);
        }
        ks.remove(b"a");
        ks.set(b"d", Value::Str(b"v".to_vec()), false, 0);
        assert_eq!(ks.slots.len(), 3);
        let names = |ks: &Keyspace| -> Vec<Vec<u8>> {
            ks.keys(None, 0).iter().map(|k| k.to_vec()).collect()
        };
        assert_eq!(
            names(&ks),
            vec![b"d".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        ks.remove(b"b");
        ks.remove(b"c");
        assert_eq!(ks.slots.len(), 1);
        assert!(ks.free.is_empty());
        assert_eq!(scan_all(&mut ks, 1, &mut |_| {}), vec![b"d".to_vec()]);
        ks.remove(b"d");
        assert!(ks.slots.is_empty());
        assert_eq!(ks.scan(0, 10, None, None, 0), (0, Vec::new()));
    }
}
