//! One numbered database: the keys, their values and their expiry times.
//!
//! Every key costs its share of each structure, so they are kept small
//! (a key with a small hash costs Redis 139 bytes):
//! - `slots`: the entries, in which each key has a stable position, its
//!   slot, holding the key's [`Entry`] in place (its value, the key's
//!   bytes, inline up to 16, its encoding history and its last access: 56
//!   bytes; see [`slots`] for the chunks they live in). The slot is what
//!   SCAN's cursor counts: a key present for the whole scan keeps its slot
//!   and is returned exactly once, whatever is added or removed meanwhile.
//!   A deleted key leaves a hole that the next new key fills (`free` lists
//!   the holes), so the slots stay as many as the most keys ever held at
//!   once, at one entry per slot. A key deleted and created again during
//!   a scan may come back twice, as Redis allows;
//! - `index`: a hash table of slots (4 bytes each) for lookups by key, the
//!   key's bytes being read from its entry;
//! - `expiring`: the slots of the keys that have a TTL, with their expiry
//!   time, in a vector-backed map, so that the active expiry cycle can
//!   sample them at random in O(1), and a key without a TTL pays nothing
//!   for it.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use indexmap::{IndexMap, IndexSet};

use super::config::Limits;
use super::error::CmdError;
use super::glob::glob_match;
use super::hasher::Seeded;
use super::value::encoding::{
    grew_past, history_after_change, list_outgrows_with, outgrows, History,
};
use super::value::list::ListValue;
use super::value::string::StringValue;
use super::value::{Kind, Value};

mod eviction;
mod field_expiry;
mod lfu;
mod slots;

use slots::Slots;

pub(crate) type Key = Arc<[u8]>;

/// A stored key: its value, and its bytes and bookkeeping packed in
/// [`Meta`]. 56 bytes, all a key of up to [`INLINE_KEY`] bytes takes
/// besides its value's data and its share of the two tables.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) value: Value,
    meta: Meta,
}

/// Most bytes of a key kept inside its entry.
const INLINE_KEY: usize = 16;

/// The rest of an [`Entry`], in 24 bytes: the key's bytes, inside the entry
/// when short (most keys are: a model's `student:s123`), which saves a heap
/// block per key, else boxed; what the value's Redis encoding depends on
/// beyond its data (OBJECT ENCODING); and when the key was last looked up,
/// in Unix seconds (OBJECT IDLETIME, which Redis counts in seconds too).
#[derive(Debug)]
enum Meta {
    Inline {
        history: History,
        freq: u8,
        len: u8,
        accessed: u32,
        key: [u8; INLINE_KEY],
    },
    Heap {
        history: History,
        freq: u8,
        accessed: u32,
        key: Box<[u8]>,
    },
}

impl Entry {
    fn new(key: &[u8], value: Value, history: History, accessed: u32) -> Entry {
        let mut bytes = [0; INLINE_KEY];
        let meta = match (bytes.get_mut(..key.len()), u8::try_from(key.len())) {
            (Some(dst), Ok(len)) => {
                dst.copy_from_slice(key);
                Meta::Inline {
                    history,
                    freq: LFU_INIT_VAL,
                    len,
                    accessed,
                    key: bytes,
                }
            }
            _ => Meta::Heap {
                history,
                freq: LFU_INIT_VAL,
                accessed,
                key: key.into(),
            },
        };
        Entry { value, meta }
    }

    /// The key's bytes.
    pub(crate) fn key(&self) -> &[u8] {
        match &self.meta {
            Meta::Inline { len, key, .. } => key.get(..usize::from(*len)).unwrap_or_default(),
            Meta::Heap { key, .. } => key,
        }
    }

    /// What the value's Redis encoding depends on beyond its data.
    pub(crate) fn history(&self) -> History {
        match self.meta {
            Meta::Inline { history, .. } | Meta::Heap { history, .. } => history,
        }
    }

    pub(crate) fn set_history(&mut self, to: History) {
        match &mut self.meta {
            Meta::Inline { history, .. } | Meta::Heap { history, .. } => *history = to,
        }
    }

    /// When the key was last looked up, in Unix seconds.
    pub(crate) fn accessed(&self) -> u32 {
        match self.meta {
            Meta::Inline { accessed, .. } | Meta::Heap { accessed, .. } => accessed,
        }
    }

    /// Sets when the key was last looked up (RESTORE ... IDLETIME), in
    /// Unix seconds.
    pub(crate) fn set_accessed(&mut self, seconds: u32) {
        match &mut self.meta {
            Meta::Inline { accessed, .. } | Meta::Heap { accessed, .. } => *accessed = seconds,
        }
    }

    /// The LFU access counter as OBJECT FREQ shows it at `now_ms`: as
    /// accesses left it (or RESTORE ... FREQ), less its decay since the
    /// last one (see [`Lfu`]).
    pub(crate) fn freq(&self, lfu: Lfu, now_ms: i64) -> u8 {
        lfu.decayed(self.counter(), self.accessed(), seconds(now_ms))
    }

    /// The LFU counter as the last access left it, before decay.
    fn counter(&self) -> u8 {
        match self.meta {
            Meta::Inline { freq, .. } | Meta::Heap { freq, .. } => freq,
        }
    }

    pub(crate) fn set_freq(&mut self, to: u8) {
        match &mut self.meta {
            Meta::Inline { freq, .. } | Meta::Heap { freq, .. } => *freq = to,
        }
    }

    /// Counts an access at `now_ms` (Redis's `lookupKey` without
    /// `LOOKUP_NOTOUCH`): the last access time (OBJECT IDLETIME) and, under
    /// an LFU policy, the access counter (`updateLFU`).
    fn touch(&mut self, now_ms: i64, lfu: Option<Lfu>) {
        let now = seconds(now_ms);
        match &mut self.meta {
            Meta::Inline { accessed, freq, .. } | Meta::Heap { accessed, freq, .. } => {
                if let Some(lfu) = lfu {
                    *freq = lfu.raised(lfu.decayed(*freq, *accessed, now), rand::random());
                }
                *accessed = now;
            }
        }
    }
}

/// A key taken out of the keyspace (RENAME, MOVE), with its TTL.
#[derive(Debug)]
pub(crate) struct Removed {
    pub(crate) value: Value,
    /// Unix milliseconds after which the key is gone (`now > expire_at`).
    pub(crate) expire_at: Option<i64>,
    pub(crate) history: History,
    /// Its last access and LFU counter, which go with the object.
    accessed: u32,
    freq: u8,
}

/// Unix seconds as [`Entry::accessed`] keeps them.
pub(crate) fn seconds(now_ms: i64) -> u32 {
    u32::try_from(now_ms.max(0) / 1000).unwrap_or(u32::MAX)
}

pub(crate) use eviction::Policy;
pub(crate) use lfu::{Lfu, LFU_INIT_VAL};

/// What WATCH remembers of a key: how many sessions watch it, a counter
/// bumped by every modification, the epoch its expired value's reclaim
/// left, if that was the last change (a session that watched the key
/// already expired sees no change in it, as in Redis), and whether a
/// SWAPDB put an expired key where there was none (Redis then marks its
/// watchers as having watched an expired key).
#[derive(Debug, Default)]
struct Watch {
    watchers: usize,
    epoch: u64,
    reclaimed: Option<u64>,
    stale_swapped_in: bool,
}

/// An event the keyspace raised itself (`new`, `expired`), waiting to be
/// published by the store.
pub(crate) type Logged = (&'static str, Key);

#[derive(Debug, Default)]
pub(crate) struct Keyspace {
    /// Until when (Unix ms) expired keys are kept (CLIENT PAUSE: Redis
    /// deletes no key while clients are paused; reads see them as gone).
    expiry_paused_until: i64,
    /// The slots that hold a key, hashed by the key's bytes.
    index: HashTable<u32>,
    hasher: Seeded,
    slots: Slots,
    /// The holes in `slots`, refilled last-freed first (some may lie past
    /// the end after the slots shrank: skipped when popped).
    free: Vec<u32>,
    /// Slot -> Unix ms after which the key is gone (`now > expire_at`).
    expiring: IndexMap<u32, i64, Seeded>,
    /// The keys that may hold a hash with field TTLs, for the active
    /// expiry cycle (see `field_expiry`): a hint, pruned as it is sampled.
    field_ttls: IndexSet<Key, Seeded>,
    watched: HashMap<Key, Watch, Seeded>,
    /// The configured encoding thresholds, against which every modified
    /// value is checked (see [`Self::modified`]).
    limits: Limits,
    /// Keys deleted because their time had passed (INFO's `expired_keys`),
    /// since the start or CONFIG RESETSTAT.
    pub(crate) expired_count: u64,
    /// Keys evicted under `maxmemory` (INFO's `evicted_keys`).
    pub(crate) evicted_count: u64,
    /// Read lookups that found their key and those that did not (INFO's
    /// `keyspace_hits` and `keyspace_misses`), since the start or CONFIG
    /// RESETSTAT: what Redis's `lookupKeyRead` counts.
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    /// Values Redis would have freed in the background (INFO's
    /// `lazyfreed_objects`, with the store's flushes): see
    /// [`crate::lazyfree`].
    pub(crate) lazyfreed_count: u64,
    /// Hash fields deleted because their time had passed (Redis 7.4's
    /// INFO `expired_subkeys`), since the start or CONFIG RESETSTAT.
    pub(crate) expired_fields_count: u64,
    /// Changes recorded by [`Self::modified`] ([`Self::changes`]).
    dirty: u64,
    /// [`Self::dirty`] when the running command began: a command that
    /// counts its changes as Redis does ([`Self::set_changes`]) counts
    /// from there.
    dirty_at_start: u64,
    /// The longest delete of an expired key, in ms, since the store last
    /// took it (LATENCY's `expire-del`); timed only while the latency
    /// monitor is on.
    slowest_expire_del: u64,
    /// The slot [`Self::find`] found last, checked first: a command
    /// mostly looks its key up more than once (to read or create it, then
    /// to record the change), and the next command often names the same
    /// key. Only a hint: the slot's key is compared, so a slot freed or
    /// refilled since is simply missed.
    last_found: Cell<u32>,
    /// The keyspace events raised here (`new`, `expired`), waiting for the
    /// store to publish them; logged only if their class is enabled.
    events: Vec<Logged>,
    /// The slots whose access the running command has counted (or that it
    /// made): a command that looks its key up more than once (to check it,
    /// then to write it) counts one access, as Redis's one lookup does.
    counted: Vec<u32>,
    /// The running command counts no access (CLIENT NO-TOUCH).
    untouched: bool,
    /// The clients blocked on each key (BLPOP...), by waiter id, first
    /// blocked first (Redis's `db->blocking_keys`; see `crate::command::blocking`).
    blocked: HashMap<Key, VecDeque<u64>, Seeded>,
    /// The keys of `blocked` modified since the blocked clients were last
    /// offered them, in the order of their first modification (Redis's
    /// ready keys).
    ready: IndexSet<Key, Seeded>,
    /// The keys modified while client-side caching needs them (see
    /// `crate::tracking`), each with whether it expired; `None` while
    /// nothing is tracked.
    tracked: Option<Vec<(Key, bool)>>,
    /// What the append-only file needs to know of the running command's
    /// changes; `None` while the AOF is off.
    aof: Option<AofLog>,
}

/// The keys a command changed, and those deleted because their time had
/// passed (which the AOF records as deletes of their own), in order.
#[derive(Debug, Default)]
pub(crate) struct AofLog {
    pub(crate) expired: Vec<Key>,
    pub(crate) touched: Vec<Key>,
}

impl Keyspace {
    /// Starts or stops logging changes for the append-only file.
    pub(crate) fn set_aof_log(&mut self, on: bool) {
        self.aof = on.then(AofLog::default);
    }

    /// Logs `key` for the append-only file as changed, without signalling
    /// it modified: Redis signals no change for a consumer group's
    /// deliveries and claims (no WATCH fails on them), yet the file must
    /// hold the groups as they are.
    pub(crate) fn changed_unsignalled(&mut self, key: &[u8]) {
        if let Some(log) = &mut self.aof {
            log.touched.push(Arc::from(key));
        }
    }

    /// The changes logged for the append-only file since the last call.
    pub(crate) fn take_aof_log(&mut self) -> AofLog {
        self.aof.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// An expired key is being deleted: its `expired` event, and the
    /// delete the append-only file records.
    fn note_expired(&mut self, key: &[u8]) {
        self.log_event(crate::notify::class::EXPIRED, "expired", key);
        if let Some(log) = &mut self.aof {
            log.expired.push(Arc::from(key));
        }
    }

    /// Number of keys, counting expired keys not yet reclaimed (as DBSIZE does).
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    fn hash(hasher: &Seeded, key: &[u8]) -> u64 {
        hasher.hash_one(key)
    }

    /// The slot of `key`, if stored.
    fn find(&self, key: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        let last = self.last_found.get();
        if slots.get(last).is_some_and(|e| e.key() == key) {
            return Some(last);
        }
        let found = self
            .index
            .find(Self::hash(&self.hasher, key), |&slot| {
                slots.get(slot).is_some_and(|e| e.key() == key)
            })
            .copied()?;
        self.last_found.set(found);
        Some(found)
    }

    fn get(&self, key: &[u8]) -> Option<&Entry> {
        let slot = self.find(key)?;
        self.slots.get(slot)
    }

    fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let slot = self.find(key)?;
        self.slots.get_mut(slot)
    }

    /// The stored entries with their slots, in slot order (expired ones
    /// not yet reclaimed included).
    pub(crate) fn stored_entries(&self) -> impl Iterator<Item = (u32, &Entry)> {
        self.slots.iter_from(0)
    }

    /// Every stored key with its entry and expiry time, expired keys not
    /// reclaimed yet included (an RDB file holds them too: the loader
    /// drops them), in slot order.
    pub(crate) fn stored_with_expiry(&self) -> impl Iterator<Item = (&[u8], &Entry, Option<i64>)> {
        self.stored_entries()
            .map(|(slot, e)| (e.key(), e, self.expiring.get(&slot).copied()))
    }

    /// The mean remaining TTL of the keys that have one, in ms (INFO's
    /// `avg_ttl`; Redis estimates it from samples, this is exact).
    pub(crate) fn average_ttl(&self, now: i64) -> i64 {
        if self.expiring.is_empty() {
            return 0;
        }
        let sum: i128 = self
            .expiring
            .values()
            .map(|&at| i128::from((at - now).max(0)))
            .sum();
        i64::try_from(sum / self.expiring.len() as i128).unwrap_or(i64::MAX)
    }

    /// The sum of `size(key, value)` over every key (INFO memory's estimate).
    pub(crate) fn sizes(&self, size: impl Fn(&[u8], &Value) -> usize) -> usize {
        self.stored_entries()
            .map(|(_, e)| size(e.key(), &e.value))
            .sum()
    }

    /// A random live key (RANDOMKEY), reclaiming the expired keys it
    /// meets as Redis's `dbRandomKey` does; `None` if there is none left.
    pub(crate) fn random_key(&mut self, now: i64, rng: &mut impl rand::Rng) -> Option<Key> {
        // While expiry is paused expired keys stay: after this many of
        // them the last one drawn is the answer (Redis's bound for when it
        // cannot delete them either).
        let mut tries: u32 = 100;
        loop {
            if self.index.is_empty() {
                return None;
            }
            // Slots are mostly full, so a few draws find a key; if holes
            // dominate, pick among the stored entries instead.
            let mut drawn = None;
            for _ in 0..64 {
                let i = rng.random_range(0..self.slots.len().max(1));
                if let Some(e) = self.slots.get(u32::try_from(i).unwrap_or(u32::MAX)) {
                    drawn = Some(Key::from(e.key()));
                    break;
                }
            }
            let key = match drawn {
                Some(key) => key,
                None => {
                    let n = rng.random_range(0..self.index.len());
                    let (_, e) = self.stored_entries().nth(n)?;
                    Key::from(e.key())
                }
            };
            if !self.expire_if_needed(&key, now) {
                return Some(key);
            }
            tries = tries.saturating_sub(1);
            if tries == 0 && now < self.expiry_paused_until {
                return Some(key);
            }
        }
    }

    /// Number of keys that carry a TTL.
    pub(crate) fn expiring_len(&self) -> usize {
        self.expiring.len()
    }

    fn slot_expired(&self, slot: u32, now: i64) -> bool {
        self.expiring.get(&slot).is_some_and(|&at| now > at)
    }

    /// Whether `key` is stored and past its time.
    fn is_expired_key(&self, key: &[u8], now: i64) -> bool {
        self.find(key)
            .is_some_and(|slot| self.slot_expired(slot, now))
    }

    /// The expiry time of `key` (Unix ms), if it is stored and has one.
    pub(crate) fn expire_at(&self, key: &[u8]) -> Option<i64> {
        let slot = self.find(key)?;
        self.expiring.get(&slot).copied()
    }

    /// Passive expiry: deletes `key` if its time has passed. Returns true if it did.
    pub(crate) fn expire_if_needed(&mut self, key: &[u8], now: i64) -> bool {
        if self.expiring.is_empty() || !self.is_expired_key(key, now) {
            return false;
        }
        if now < self.expiry_paused_until {
            return true;
        }
        self.note_expired(key);
        let timer = self.expire_del_timer();
        self.remove_expired(key);
        self.expire_del_timed(timer);
        self.mark_expired();
        self.reclaimed(key);
        self.count_expired();
        true
    }

    /// Starts timing the delete of an expired key (Redis's `expire-del`
    /// latency event), if the latency monitor is on.
    fn expire_del_timer(&self) -> Option<std::time::Instant> {
        (self.limits.latency_threshold_ms != 0).then(std::time::Instant::now)
    }

    /// The delete [`Self::expire_del_timer`] timed is done.
    fn expire_del_timed(&mut self, timer: Option<std::time::Instant>) {
        if let Some(started) = timer {
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.slowest_expire_del = self.slowest_expire_del.max(ms);
        }
    }

    /// The longest delete of an expired key since the last call, in ms
    /// (0: none timed).
    pub(crate) fn take_slowest_expire_del(&mut self) -> u64 {
        std::mem::take(&mut self.slowest_expire_del)
    }

    /// Marks a watched `key` whose expired value was just deleted.
    fn reclaimed(&mut self, key: &[u8]) {
        if let Some(w) = self.watched.get_mut(key) {
            w.reclaimed = Some(w.epoch);
        }
    }

    /// Whether the only change to watched `key` since `epoch` is the
    /// reclaim of its expired value.
    pub(crate) fn only_reclaimed_since(&self, key: &[u8], epoch: u64) -> bool {
        self.watched
            .get(key)
            .is_some_and(|w| w.epoch == epoch + 1 && w.reclaimed == Some(w.epoch))
    }

    /// The slot of `key` if it is live; an expired key is deleted, as by
    /// [`Self::expire_if_needed`]. One lookup where that and a `find`
    /// take two when some key has a TTL.
    fn live_slot(&mut self, key: &[u8], now: i64) -> Option<u32> {
        let slot = self.find(key)?;
        if !self.slot_expired(slot, now) {
            return Some(slot);
        }
        if now < self.expiry_paused_until {
            return None;
        }
        self.note_expired(key);
        let timer = self.expire_del_timer();
        self.remove_expired(key);
        self.expire_del_timed(timer);
        self.mark_expired();
        self.count_expired();
        None
    }

    /// A new command begins: its accesses are counted afresh, or not at
    /// all if it is `untouched` (a command of a CLIENT NO-TOUCH client).
    pub(crate) fn begin_command(&mut self, untouched: bool) {
        self.counted.clear();
        self.untouched = untouched;
        self.dirty_at_start = self.dirty;
    }

    /// Counts an expired key deleted: in `expired_count`, and as a change
    /// that is none of the running command's, which a count the command
    /// sets ([`Self::set_changes`]) keeps.
    fn count_expired(&mut self) {
        self.expired_count += 1;
        self.dirty_at_start += 1;
    }

    /// The running command made `n` changes, as Redis counts them (its
    /// `server.dirty`): one per element pushed, added, removed or popped
    /// for most commands on aggregates, whatever keys it touched to do it.
    /// Without this a command counts one change per key it modified
    /// (the key deleted when emptied included), which is Redis's count
    /// for the others.
    pub(crate) fn set_changes(&mut self, n: usize) {
        self.dirty = self.dirty_at_start + n as u64;
    }

    /// The changes the running command has counted so far.
    pub(crate) fn command_changes(&self) -> usize {
        usize::try_from(self.dirty.saturating_sub(self.dirty_at_start)).unwrap_or(usize::MAX)
    }

    /// Counts an access of the key in `slot`, once per command (see
    /// [`Entry::touch`]).
    fn access(&mut self, slot: u32, now: i64) {
        if self.untouched || self.counted.contains(&slot) {
            return;
        }
        self.counted.push(slot);
        let lfu = Lfu::of(&self.limits);
        if let Some(entry) = self.slots.get_mut(slot) {
            entry.touch(now, lfu);
        }
    }

    /// The live entry at `key`, if any.
    pub(crate) fn entry(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        let slot = self.live_slot(key, now)?;
        self.access(slot, now);
        self.slots.get_mut(slot)
    }

    /// The live entry at `key` without counting an access. Expired keys
    /// are reclaimed.
    pub(crate) fn entry_untouched(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        if self.expire_if_needed(key, now) {
            return None;
        }
        self.get_mut(key)
    }

    /// [`Self::entry_untouched`] as a read lookup, counted as a hit or a
    /// miss (see [`Self::value`]): what Redis's `LOOKUP_NOTOUCH` reads
    /// (EXISTS, TYPE, the TTL family, OBJECT) count. A miss raises
    /// `keymiss` if `notify` (OBJECT's lookups do not: `LOOKUP_NONOTIFY`).
    pub(crate) fn read_untouched(
        &mut self,
        key: &[u8],
        now: i64,
        notify: bool,
    ) -> Option<&mut Entry> {
        let slot = match self.expire_if_needed(key, now) {
            true => None,
            false => self.find(key),
        };
        self.count_read(key, slot.is_some(), notify);
        self.slots.get_mut(slot?)
    }

    /// Counts a read lookup of `key` (see [`Self::value`]); a miss raises
    /// the `keymiss` event if `notify`, as Redis's `lookupKey` does.
    fn count_read(&mut self, key: &[u8], found: bool, notify: bool) {
        if found {
            self.hits += 1;
        } else {
            self.misses += 1;
            if notify {
                self.log_event(crate::notify::class::KEY_MISS, "keymiss", key);
            }
        }
    }

    /// CLIENT PAUSE: expired keys are kept, not deleted, until `until`
    /// (Unix ms; 0 when the pause is lifted).
    pub(crate) fn pause_expiry(&mut self, until: i64) {
        self.expiry_paused_until = until;
    }

    /// Logs a keyspace event raised here, if its class is enabled (the
    /// key is copied only then: this runs for every new or expired key).
    pub(crate) fn log_event(&mut self, class: u32, event: &'static str, key: &[u8]) {
        if crate::notify::enabled(self.limits.notify, class) {
            self.events.push((event, Arc::from(key)));
        }
    }

    /// Whether `key` is stored, expired or not, without expiring it.
    pub(crate) fn exists_raw(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// The logged events, oldest first (see `Store::flush_notifications`).
    pub(crate) fn take_events(&mut self) -> Vec<Logged> {
        std::mem::take(&mut self.events)
    }

    /// The configured limits this keyspace obeys.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The entry stored at `key`, even if its time has passed (MEMORY
    /// USAGE looks at the dictionary directly).
    pub(crate) fn stored(&self, key: &[u8]) -> Option<&Entry> {
        self.get(key)
    }

    /// The encoding thresholds now in force (CONFIG SET changes them).
    pub(crate) fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Records how a string was made, for OBJECT ENCODING: a string built
    /// as text (INCRBYFLOAT) or edited in place (APPEND, SETRANGE).
    pub(crate) fn set_history(&mut self, key: &[u8], history: History) {
        if let Some(e) = self.get_mut(key) {
            e.set_history(history);
        }
    }

    /// [`Self::write`] of the list at `key`, before LINSERT or LSET adds
    /// `added` to it: a list still in one listpack that `added` would
    /// outgrow is converted for good first, as Redis converts it before
    /// it knows whether the element goes in ([`list_outgrows_with`]).
    pub(crate) fn write_list_growing(
        &mut self,
        key: &[u8],
        now: i64,
        added: &[u8],
    ) -> Result<Option<&mut ListValue>, CmdError> {
        let limits = self.limits;
        let Some(e) = self.entry(key, now) else {
            return Ok(None);
        };
        if e.history() == History::Listpack
            && matches!(&e.value, Value::List(list) if list_outgrows_with(list, &limits, added))
        {
            e.set_history(History::Converted);
        }
        match &mut e.value {
            Value::List(list) => Ok(Some(list)),
            _ => Err(CmdError::WrongType),
        }
    }

    /// The live value at `key`, if any: a read lookup, counted as a hit
    /// or a miss (Redis's `lookupKeyRead`; a command that looks a key up
    /// to change it uses [`Self::entry`] or the writes, which count none).
    pub(crate) fn value(&mut self, key: &[u8], now: i64) -> Option<&Value> {
        let slot = self.read_slot(key, now)?;
        self.slots.get(slot).map(|e| &e.value)
    }

    /// The slot of the live `key`, looked up as a read: counted as a hit
    /// or a miss, and an access (see [`Self::value`]).
    fn read_slot(&mut self, key: &[u8], now: i64) -> Option<u32> {
        let slot = self.live_slot(key, now);
        self.count_read(key, slot.is_some(), true);
        let slot = slot?;
        self.access(slot, now);
        Some(slot)
    }

    /// The live entry at `key`, looked up as a read (see [`Self::value`]).
    pub(crate) fn entry_read(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        let slot = self.read_slot(key, now)?;
        self.slots.get_mut(slot)
    }

    /// Mutable access to the value at `key` as type `T`, looked up as a
    /// read (see [`Self::value`]): Redis's stream commands change the
    /// object `lookupKeyRead` gives them.
    pub(crate) fn read_mut<T: Kind>(
        &mut self,
        key: &[u8],
        now: i64,
    ) -> Result<Option<&mut T>, CmdError> {
        let Some(slot) = self.read_slot(key, now) else {
            return Ok(None);
        };
        match self.slots.get_mut(slot) {
            Some(e) => T::of_mut(&mut e.value).map(Some).ok_or(CmdError::WrongType),
            None => Ok(None),
        }
    }

    /// Whether `key` is live: a read lookup (see [`Self::value`]).
    pub(crate) fn contains(&mut self, key: &[u8], now: i64) -> bool {
        self.value(key, now).is_some()
    }

    /// The live value at `key` through a shared borrow, so that a command can
    /// hold several values at once (SINTER, ZUNIONSTORE). An expired key reads
    /// as absent but is not reclaimed here: run [`Self::value`] on each key
    /// first for Redis's passive expiry.
    pub(crate) fn peek(&self, key: &[u8], now: i64) -> Option<&Value> {
        let slot = self.find(key)?;
        if self.slot_expired(slot, now) {
            return None;
        }
        self.slots.get(slot).map(|e| &e.value)
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
        // A key made here is a new object, not an access: Redis's
        // lookup missed it, and its counter starts at `LFU_INIT_VAL`.
        let slot = match self.live_slot(key, now) {
            Some(slot) => {
                self.access(slot, now);
                slot
            }
            None => self.insert_new(key, T::default().wrap(), History::Fresh, now),
        };
        match self.slots.get_mut(slot) {
            Some(e) => T::of_mut(&mut e.value).ok_or(CmdError::WrongType),
            None => unreachable!("found or inserted above"),
        }
    }

    /// Stores a key that is not there (no TTL); returns its slot.
    fn insert_new(&mut self, key: &[u8], value: Value, history: History, now: i64) -> u32 {
        self.log_event(crate::notify::class::NEW, "new", key);
        let entry = Entry::new(key, value, history, seconds(now));
        let slot = loop {
            match self.free.pop() {
                // A hole past the end (the slots shrank since it was
                // freed) or filled since (they grew again) is dropped
                // here, not when the slots shrink: that cost the whole list.
                Some(hole) if self.slots.is_hole(hole) => {
                    self.slots.fill(hole, entry);
                    break hole;
                }
                Some(_) => {}
                None => break self.slots.push(entry),
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.index
            .insert_unique(Self::hash(hasher, key), slot, |&s| {
                Self::hash(hasher, slots.get(s).map_or(&[][..], |e| e.key()))
            });
        // Made by the running command: its later lookups are not accesses
        // (Redis looks a key up before it makes it, and not after).
        self.counted.push(slot);
        slot
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
        // One lookup: the slot found or made is checked and marked
        // directly, not looked up again by `modified`.
        let slot = match self.live_slot(key, now) {
            Some(slot) => {
                self.access(slot, now);
                if let Some(entry) = self.slots.get_mut(slot) {
                    let old = std::mem::replace(&mut entry.value, value);
                    let old_history = entry.history();
                    entry.set_history(history);
                    self.freed(&old, old_history, self.limits.lazy.server_del);
                }
                if !keep_ttl && !self.expiring.is_empty() {
                    self.expiring.swap_remove(&slot);
                }
                slot
            }
            None => self.insert_new(key, value, history, now),
        };
        self.check_outgrown(slot);
        self.note_field_ttls_of(slot, key);
        self.changed(key);
    }

    /// Replaces the string at `key` with what `update` makes of it (given
    /// `None` when the key is missing), keeping its TTL: what a
    /// [`Self::read`] and then a [`Self::set`] with `keep_ttl` do, in one
    /// lookup instead of two, for INCR and friends (a counter's every
    /// request). WRONGTYPE for another type; an error of `update` leaves
    /// the key as it was. Marks the key modified.
    pub(crate) fn update_string<R>(
        &mut self,
        key: &[u8],
        now: i64,
        update: impl FnOnce(Option<&[u8]>) -> Result<(StringValue, R), CmdError>,
    ) -> Result<R, CmdError> {
        let (slot, result) = match self.live_slot(key, now) {
            Some(slot) => {
                self.access(slot, now);
                let Some(entry) = self.slots.get_mut(slot) else {
                    unreachable!("live_slot found it")
                };
                let Value::Str(current) = &mut entry.value else {
                    return Err(CmdError::WrongType);
                };
                let (new, result) = update(Some(current))?;
                *current = new;
                entry.set_history(History::Fresh);
                (slot, result)
            }
            None => {
                let (new, result) = update(None)?;
                let slot = self.insert_new(key, Value::Str(new), History::Fresh, now);
                (slot, result)
            }
        };
        self.check_outgrown(slot);
        self.changed(key);
        Ok(result)
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
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Removed> {
        let slot = self.find(key)?;
        let entry = self.take_slot(slot)?;
        let expire_at = self.expiring.swap_remove(&slot);
        self.modified(key);
        Some(Removed {
            history: entry.history(),
            accessed: entry.accessed(),
            freq: entry.counter(),
            value: entry.value,
            expire_at,
        })
    }

    /// Deletes the expired `key`, freed lazily under
    /// `lazyfree-lazy-expire`.
    fn remove_expired(&mut self, key: &[u8]) {
        if let Some(removed) = self.remove(key) {
            self.freed(&removed.value, removed.history, self.limits.lazy.expire);
        }
    }

    /// Counts `value` (of encoding `history`), just deleted, as freed in
    /// the background if the delete ran lazily (`lazy`) and Redis's
    /// thread would have taken it (see [`crate::lazyfree`]).
    pub(crate) fn freed(&mut self, value: &Value, history: History, lazy: bool) {
        if lazy && crate::lazyfree::in_background(value, history, &self.limits) {
            self.lazyfreed_count += 1;
        }
    }

    /// Puts a key taken out by [`Self::remove`] in at `key` (RENAME,
    /// MOVE): the same object, so its TTL, encoding history, last access
    /// and LFU counter go with it, as Redis moves its object.
    pub(crate) fn put_moved(&mut self, key: &[u8], moved: Removed, now: i64) {
        self.set_with_history(key, moved.value, false, moved.history, now);
        self.set_expire(key, moved.expire_at);
        if let Some(entry) = self.get_mut(key) {
            entry.set_accessed(moved.accessed);
            entry.set_freq(moved.freq);
        }
    }

    /// Takes the entry out of `slot`, out of the lookup table, and frees
    /// the slot (the TTL table is the caller's: it may know the entry's
    /// place there).
    fn take_slot(&mut self, slot: u32) -> Option<Entry> {
        // Trailing holes are dropped instead of listed, so that a keyspace
        // that shrinks gives its slots back; holes left in `free` past the
        // new end are skipped when popped (see `insert_new`).
        let (entry, hole) = self.slots.take(slot)?;
        let hash = Self::hash(&self.hasher, entry.key());
        if let Ok(found) = self.index.find_entry(hash, |&s| s == slot) {
            found.remove();
        }
        if hole {
            self.free.push(slot);
        }
        Some(entry)
    }

    /// Deletes `key` if it holds an empty aggregate: Redis never keeps one.
    pub(crate) fn drop_if_empty(&mut self, key: &[u8]) {
        if self.get(key).is_some_and(|e| e.value.is_empty_aggregate()) {
            self.remove(key);
        }
    }

    /// Sets or clears the expiry of an existing key. Does not mark it modified:
    /// the expiry commands do that themselves, as Redis does.
    pub(crate) fn set_expire(&mut self, key: &[u8], at: Option<i64>) -> bool {
        let Some(slot) = self.find(key) else {
            return false;
        };
        match at {
            Some(at) => {
                self.expiring.insert(slot, at);
            }
            None => {
                self.expiring.swap_remove(&slot);
            }
        }
        true
    }

    /// Removes every key, touching the watched ones that existed. Each
    /// key removed counts as a change, as Redis counts it (`emptyData`).
    pub(crate) fn clear(&mut self, now: i64) {
        self.dirty += self.len() as u64;
        let watched: Vec<(Key, bool)> = self
            .watched
            .keys()
            .filter(|k| self.find(k).is_some())
            .map(|k| (k.clone(), self.is_expired_key(k, now)))
            .collect();
        self.index = HashTable::new();
        self.slots = Slots::default();
        self.free = Vec::new();
        self.expiring = IndexMap::default();
        self.field_ttls = IndexSet::default();
        for (key, expired) in watched {
            self.modified(&key);
            if expired {
                self.reclaimed(&key);
            }
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
            .iter_from(from)
            .map(|(slot, e)| (slot as usize, Key::from(e.key())))
            .take(count.max(1))
            .collect();
        let next = match visited.last() {
            Some(&(last, _)) if self.slots.iter_from(last + 1).next().is_some() => {
                u64::try_from(last + 1).unwrap_or(0)
            }
            _ => 0,
        };
        // Redis's order: the pattern, then the expiry and, with a TYPE
        // filter, the type (a read, which counts an expired key as a miss).
        let mut keys = Vec::with_capacity(visited.len());
        for (_, key) in visited {
            if pattern.is_some_and(|p| !glob_match(p, &key, false)) {
                continue;
            }
            let expired = self.expire_if_needed(&key, now);
            if let Some(t) = type_name {
                self.count_read(&key, !expired, true);
                let fits = |e: &Entry| e.value.type_name().as_bytes().eq_ignore_ascii_case(t);
                if expired || !self.get(&key).is_some_and(fits) {
                    continue;
                }
            }
            if !expired {
                keys.push(key);
            }
        }
        (next, keys)
    }

    /// All live keys matching `pattern`, in slot order (creation order
    /// until a deletion leaves a hole that a new key fills).
    /// Like Redis's KEYS, this skips expired keys without deleting them
    /// (so DBSIZE still counts them until they are reclaimed). `None`
    /// matches every key, the empty one included (KEYS's `*` special case).
    pub(crate) fn keys(&self, pattern: Option<&[u8]>, now: i64) -> Vec<Key> {
        self.stored_entries()
            .filter(|&(slot, _)| !self.slot_expired(slot, now))
            .filter(|(_, e)| pattern.is_none_or(|p| glob_match(p, e.key(), false)))
            .map(|(_, e)| Key::from(e.key()))
            .collect()
    }

    /// One round of the active expiry cycle: looks at up to `n` keys with
    /// a TTL, consecutive in `expiring` from a random place (as Redis walks
    /// its expires table bucket after bucket: neighbours in memory, where
    /// keys picked one by one at random cost a cache miss each), and
    /// deletes the expired ones. Returns (sampled, expired).
    pub(crate) fn expire_sample(
        &mut self,
        n: usize,
        now: i64,
        rng: &mut impl rand::Rng,
    ) -> (usize, usize) {
        let sample = n.min(self.expiring.len());
        if sample == 0 {
            return (0, 0);
        }
        let mut i = rng.random_range(0..self.expiring.len());
        let mut expired = 0;
        for _ in 0..sample {
            if i >= self.expiring.len() {
                i = 0;
            }
            match self.expiring.get_index(i) {
                // The sample's own expiry time decides, and its slot finds
                // the key: no lookup by key until the delete's own. The
                // last key moves into place `i`: it is looked at next.
                Some((&slot, &at)) if now > at => {
                    self.expire_slot(i, slot);
                    expired += 1;
                }
                Some(_) => i += 1,
                None => break,
            }
        }
        (sample, expired)
    }

    /// Deletes the expired key in `slot`, the `i`th of `expiring`: what
    /// [`Self::expire_if_needed`] does for a key found by name.
    fn expire_slot(&mut self, i: usize, slot: u32) {
        let timer = self.expire_del_timer();
        let Some(entry) = self.take_slot(slot) else {
            return;
        };
        let key = entry.key();
        self.expiring.swap_remove_index(i);
        self.note_expired(key);
        self.modified(key);
        self.mark_expired();
        self.reclaimed(key);
        self.count_expired();
        self.freed(&entry.value, entry.history(), self.limits.lazy.expire);
        // The value's memory is given back here, as Redis's synchronous
        // delete does inside its timing.
        drop(entry);
        self.expire_del_timed(timer);
    }

    /// SWAPDB: `a` and `b` exchange their keys; each keeps its watchers,
    /// whose keys are touched first as Redis 7.0's
    /// `touchAllWatchedKeysInDb` does (see [`Self::touch_for_swap`]).
    pub(crate) fn swap_data(a: &mut Keyspace, b: &mut Keyspace, now: i64) {
        a.touch_for_swap(b, now);
        b.touch_for_swap(a, now);
        std::mem::swap(&mut a.index, &mut b.index);
        std::mem::swap(&mut a.hasher, &mut b.hasher);
        std::mem::swap(&mut a.slots, &mut b.slots);
        std::mem::swap(&mut a.free, &mut b.free);
        std::mem::swap(&mut a.expiring, &mut b.expiring);
        std::mem::swap(&mut a.field_ttls, &mut b.field_ttls);
        // Blocked clients stay with their database, which now holds
        // other keys: offer them all (Redis's `scanDatabaseForReadyKeys`).
        a.signal_all_blocked();
        b.signal_all_blocked();
    }

    /// Touches the watched keys of `self` that exist in it or in
    /// `replaced_with`, the keys about to take its place. Like Redis, a
    /// key that is stale on both sides, or stale here and absent there, or
    /// absent here and stale there, is no logical change and is not
    /// touched; the watchers of the last kind are marked as having watched
    /// a stale key ([`Self::watched_as_expired`]), so that their EXEC does
    /// not fail on it.
    fn touch_for_swap(&mut self, replaced_with: &Keyspace, now: i64) {
        if self.watched.is_empty() {
            return;
        }
        let state = |ks: &Keyspace, key: &[u8]| ks.find(key).map(|slot| ks.slot_expired(slot, now));
        let stale_in: Vec<Key> = self
            .watched
            .keys()
            .filter(|key| {
                matches!(
                    (state(self, key), state(replaced_with, key)),
                    (None, Some(true))
                )
            })
            .cloned()
            .collect();
        for key in stale_in {
            if let Some(w) = self.watched.get_mut(&key) {
                w.stale_swapped_in = true;
            }
        }
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
    /// ENCODING: an aggregate that now has more elements than its compact
    /// encoding allows has been converted for good, as Redis converts it
    /// when it grows. A command that added elements says which
    /// ([`Self::modified_with`]).
    pub(crate) fn modified(&mut self, key: &[u8]) {
        self.modified_with(key, []);
    }

    /// [`Self::modified`] after a command wrote `written` into the
    /// aggregate at `key` (a hash's fields and values, a sorted set's
    /// members): as Redis checks when it adds, the element count and the
    /// length of what was written, not every element again (that scan was
    /// a fifth of an HINCRBY on a five-field hash, and grew with it).
    pub(crate) fn modified_with<'a>(
        &mut self,
        key: &[u8],
        written: impl IntoIterator<Item = &'a [u8]>,
    ) {
        let limits = self.limits;
        if let Some(e) = self.find(key).and_then(|slot| self.slots.get_mut(slot)) {
            let longest = || written.into_iter().map(<[u8]>::len).max().unwrap_or(0);
            if let Some(to) = history_after_change(&e.value, e.history(), &limits) {
                e.set_history(to);
            } else if e.history() == History::Fresh && grew_past(&e.value, &limits, longest) {
                e.set_history(History::Converted);
            }
        }
        self.changed(key);
    }

    /// [`Self::modified`] after LSET replaced an element of the list at
    /// `key`: as in Redis, only a list past one listpack is looked at
    /// again, to go back to one if it shrank; one still in a listpack
    /// stays there whatever the new element's size, its growth reckoned
    /// before the write ([`Self::write_list_growing`]).
    pub(crate) fn modified_in_place(&mut self, key: &[u8]) {
        let limits = self.limits;
        if let Some(e) = self.find(key).and_then(|slot| self.slots.get_mut(slot)) {
            if e.history() == History::Converted {
                if let Some(to) = history_after_change(&e.value, e.history(), &limits) {
                    e.set_history(to);
                }
            }
        }
        self.changed(key);
    }

    /// Marks the value in `slot` converted if it outgrows the thresholds:
    /// a value stored whole, every element checked.
    fn check_outgrown(&mut self, slot: u32) {
        let limits = self.limits;
        if let Some(e) = self.slots.get_mut(slot) {
            if let Some(to) = history_after_change(&e.value, e.history(), &limits) {
                e.set_history(to);
            } else if e.history() == History::Fresh && outgrows(&e.value, &limits) {
                e.set_history(History::Converted);
            }
        }
    }

    /// The rest of [`Self::modified`]: counts the change, and tells the
    /// key's blocked clients and watchers.
    fn changed(&mut self, key: &[u8]) {
        self.dirty += 1;
        if let Some(log) = &mut self.aof {
            log.touched.push(Arc::from(key));
        }
        if let Some(tracked) = &mut self.tracked {
            tracked.push((Arc::from(key), false));
        }
        if !self.blocked.is_empty() {
            self.signal_ready(key);
        }
        if self.watched.is_empty() {
            return;
        }
        if let Some(w) = self.watched.get_mut(key) {
            w.epoch += 1;
        }
    }

    /// The change just logged for client-side caching was an expiry:
    /// no client made it (NOLOOP does not hide it).
    fn mark_expired(&mut self) {
        if let Some((_, expired)) = self.tracked.as_mut().and_then(|t| t.last_mut()) {
            *expired = true;
        }
    }

    /// Starts or stops logging changes for client-side caching.
    pub(crate) fn set_tracked(&mut self, on: bool) {
        self.tracked = on.then(Vec::new);
    }

    /// The changes logged for client-side caching, oldest first, each
    /// with whether it was an expiry.
    pub(crate) fn take_tracked(&mut self) -> Vec<(Key, bool)> {
        self.tracked
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// How many changes this database has seen: INFO's
    /// `rdb_changes_since_last_save` counts, over the databases, those
    /// since the last save.
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
    pub(crate) fn take_ready(&mut self) -> IndexSet<Key, Seeded> {
        std::mem::take(&mut self.ready)
    }

    /// Starts watching `key`; returns its current epoch.
    pub(crate) fn watch(&mut self, key: &[u8]) -> u64 {
        let w = self.watched.entry(Arc::from(key)).or_default();
        w.watchers += 1;
        w.epoch
    }

    /// How many keys some client watches (Redis 7.4's INFO
    /// `total_watched_keys`, summed over the databases).
    pub(crate) fn watched_keys(&self) -> usize {
        self.watched.len()
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

    /// Whether the watchers of `key` count as having watched an expired
    /// key: a SWAPDB put an expired key where there was none.
    pub(crate) fn watched_as_expired(&self, key: &[u8]) -> bool {
        self.watched.get(key).is_some_and(|w| w.stale_swapped_in)
    }

    /// Whether `key` exists but is past its expiry time (not yet reclaimed).
    pub(crate) fn is_logically_expired(&self, key: &[u8], now: i64) -> bool {
        self.is_expired_key(key, now)
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
        ks.set_with_expiry(b"gone", Value::Str(b"v"[..].into()), Some(1_000), 0);
        ks.set(b"", Value::Str(b"empty key"[..].into()), false, 0);
        ks.set(b"kept", Value::Str(b"v"[..].into()), false, 0);
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
                Value::Str(b"v"[..].into()),
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
                    Value::Str(b"v"[..].into()),
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
        assert!(ks.free.is_empty() || ks.free.iter().all(|&h| (h as usize) < ks.slots.len()));
    }

    /// An entry stays at 56 bytes, its key inline up to 16 bytes.
    #[test]
    fn entries_are_56_bytes_with_short_keys_inline() {
        use super::{Entry, Meta};
        use crate::value::encoding::History;
        assert_eq!(std::mem::size_of::<Entry>(), 56);
        for len in [0, 1, 16, 17, 300] {
            let key = vec![b'k'; len];
            let mut e = Entry::new(&key, Value::Str(Default::default()), History::Text, 7);
            assert_eq!(e.key(), &key[..]);
            assert_eq!(matches!(e.meta, Meta::Inline { .. }), len <= 16);
            assert_eq!((e.history(), e.accessed()), (History::Text, 7));
            e.set_history(History::Converted);
            e.touch(9_999, None);
            assert_eq!((e.history(), e.accessed()), (History::Converted, 9));
            assert_eq!(e.key(), &key[..]);
        }
    }

    /// Holes are refilled, and trailing ones given back.
    #[test]
    fn slots_are_reused_and_trimmed() {
        let mut ks = Keyspace::default();
        for key in [&b"a"[..], b"b", b"c"] {
            ks.set(key, Value::Str(b"v"[..].into()), false, 0);
        }
        ks.remove(b"a");
        ks.set(b"d", Value::Str(b"v"[..].into()), false, 0);
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
        // The hole `b` left is past the end now: a new key takes the next
        // slot, and the stale hole is dropped on the way.
        ks.set(b"e", Value::Str(b"v"[..].into()), false, 0);
        assert_eq!(ks.slots.len(), 2);
        assert!(ks.free.is_empty());
        assert_eq!(names(&ks), vec![b"d".to_vec(), b"e".to_vec()]);
        ks.remove(b"e");
        assert_eq!(scan_all(&mut ks, 1, &mut |_| {}), vec![b"d".to_vec()]);
        ks.remove(b"d");
        assert_eq!(ks.slots.len(), 0);
        assert_eq!(ks.scan(0, 10, None, None, 0), (0, Vec::new()));
    }
}
