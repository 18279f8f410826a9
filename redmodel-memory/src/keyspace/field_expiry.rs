//! The active expiry of hash fields (Redis 7.4's HEXPIRE family): the
//! keyspace keeps the keys that may hold fields with a TTL, and the expire
//! cycle samples them, deleting the fields whose time has passed, as
//! Redis's `activeExpireCycle` does with `db->hexpires`. Each key whose
//! fields expired raises `hexpired`; a hash left empty is deleted, with
//! `del`.

use super::{Key, Keyspace};
use crate::notify::class;
use crate::value::Value;

impl Keyspace {
    /// Records that `key` holds a hash with field TTLs.
    pub(crate) fn note_field_ttls(&mut self, key: &[u8]) {
        if !self.field_ttls.contains(key) {
            self.field_ttls.insert(Key::from(key));
        }
    }

    /// [`Self::note_field_ttls`] if the value in `slot` (at `key`) has
    /// field TTLs: a value stored whole (RESTORE, RENAME, MOVE, COPY).
    pub(super) fn note_field_ttls_of(&mut self, slot: u32, key: &[u8]) {
        let has = self
            .slots
            .get(slot)
            .is_some_and(|e| matches!(&e.value, Value::Hash(h) if h.has_ttls()));
        if has {
            self.note_field_ttls(key);
        }
    }

    /// How many hashes hold fields with a TTL (INFO keyspace's
    /// `subexpiry`, the size of Redis 7.4's `db->hexpires`).
    pub(crate) fn hashes_with_field_ttls(&self) -> usize {
        (self.field_ttls.iter())
            .filter(|key| {
                let entry = self.find(key).and_then(|slot| self.slots.get(slot));
                entry.is_some_and(|e| matches!(&e.value, Value::Hash(h) if h.has_ttls()))
            })
            .count()
    }

    /// Looks at up to `n` keys that may hold fields with a TTL, from a
    /// random one on, and deletes their expired fields: `(keys looked at,
    /// keys that had expired fields)`. Keys that hold no such field any
    /// more leave the set.
    pub(crate) fn expire_fields_sample(
        &mut self,
        n: usize,
        now: i64,
        rng: &mut impl rand::Rng,
    ) -> (usize, usize) {
        let sample = n.min(self.field_ttls.len());
        if sample == 0 {
            return (0, 0);
        }
        let mut i = rng.random_range(0..self.field_ttls.len());
        let mut hit = 0;
        for _ in 0..sample {
            if i >= self.field_ttls.len() {
                i = 0;
            }
            let Some(key) = self.field_ttls.get_index(i).cloned() else {
                break;
            };
            match self.expire_fields_of(&key, now) {
                // Fields left with a TTL: looked at again later.
                Some(expired) => {
                    hit += usize::from(expired > 0);
                    i += 1;
                }
                None => {
                    self.field_ttls.swap_remove_index(i);
                    hit += 1;
                }
            }
        }
        (sample, hit)
    }

    /// Deletes the expired fields of the hash at `key` (and the key, if
    /// none is left): how many, or `None` when the key has no field with
    /// a TTL any more. A key itself past its time is left to the key
    /// expiry.
    fn expire_fields_of(&mut self, key: &[u8], now: i64) -> Option<usize> {
        let slot = self.find(key)?;
        if self.slot_expired(slot, now) {
            return Some(0);
        }
        let entry = self.slots.get_mut(slot)?;
        let Value::Hash(hash) = &mut entry.value else {
            return None;
        };
        let expired = hash.remove_expired(now);
        let (emptied, has_ttls) = (hash.is_empty(), hash.has_ttls());
        if expired > 0 {
            self.expired_fields_count += expired as u64;
            self.log_event(class::HASH, "hexpired", key);
            if emptied {
                self.remove(key);
                self.log_event(class::GENERIC, "del", key);
                return None;
            }
            self.modified(key);
        }
        has_ttls.then_some(expired)
    }
}
