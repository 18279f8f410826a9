//! Hash-field expiration (Redis 7.4's HEXPIRE family): the expiry times
//! of a hash's fields, kept with the hash itself so that RENAME, MOVE,
//! COPY and SWAPDB carry them, and a whole-key overwrite drops them.
//!
//! A field is expired once its time is in the past (`at < now`, Redis's
//! `hashTypeIsExpired`); it stays stored until a command or the active
//! expiry cycle deletes it, as in Redis (HLEN counts it until then).

use std::collections::HashMap;

use super::{Compact, HashValue};
use crate::hasher::Seeded;

/// A hash's fields with their expiry times (`HashValue::Expiring`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Expiring {
    /// The fields and values: compact or a table, never `Expiring`.
    pub(crate) fields: HashValue,
    /// Field -> Unix ms of its expiry; fields without a TTL are absent.
    ttls: HashMap<Box<[u8]>, i64, Seeded>,
}

impl Expiring {
    /// Drops the TTL of `field`, if it has one.
    pub(super) fn forget(&mut self, field: &[u8]) -> bool {
        !self.ttls.is_empty() && self.ttls.remove(field).is_some()
    }

    /// Moves `field` of a compact hash to where Redis 7.4's `listpackex`
    /// keeps it: the fields with a TTL first, soonest first (a field
    /// after those of the same time), then the others, a field that has
    /// just lost its TTL last. HGETALL and the like reply in this order,
    /// as Redis does. A table's order is arbitrary anyway.
    pub(super) fn place(&mut self, field: &[u8]) {
        let HashValue::Compact(c) = &self.fields else {
            return;
        };
        let Some(value) = c.find(field).map(|at| at.value(&c.buf).to_vec()) else {
            return;
        };
        let at = self.ttls.get(field).copied();
        let mut pairs: Vec<(&[u8], &[u8])> = c.iter().filter(|(f, _)| *f != field).collect();
        let pos = match at {
            None => pairs.len(),
            Some(at) => pairs
                .iter()
                .position(|(f, _)| self.ttls.get(*f).is_none_or(|&t| t > at))
                .unwrap_or(pairs.len()),
        };
        pairs.insert(pos, (field, &value));
        let mut placed = Compact::default();
        for (f, v) in pairs {
            placed.push(f, v);
        }
        self.fields = HashValue::Compact(placed);
    }
}

impl HashValue {
    /// Whether the hash has had field TTLs (Redis's `listpackex` once a
    /// listpack).
    pub(crate) fn is_expiring(&self) -> bool {
        matches!(self, HashValue::Expiring(_))
    }

    /// Whether some field has a TTL.
    pub(crate) fn has_ttls(&self) -> bool {
        matches!(self, HashValue::Expiring(e) if !e.ttls.is_empty())
    }

    /// The hash made ready for field TTLs (Redis converts a listpack to
    /// `listpackex` as soon as an HEXPIRE names the key).
    pub(crate) fn make_expiring(&mut self) -> &mut Expiring {
        if !self.is_expiring() {
            let fields = std::mem::take(self);
            *self = HashValue::Expiring(Box::new(Expiring {
                fields,
                ttls: HashMap::default(),
            }));
        }
        match self {
            HashValue::Expiring(e) => e,
            _ => unreachable!("made expiring above"),
        }
    }

    /// The expiry time of `field`, if it has one.
    pub(crate) fn ttl(&self, field: &[u8]) -> Option<i64> {
        match self {
            HashValue::Expiring(e) if !e.ttls.is_empty() => e.ttls.get(field).copied(),
            _ => None,
        }
    }

    /// Sets the expiry time of the existing `field`.
    pub(crate) fn set_ttl(&mut self, field: &[u8], at: i64) {
        let e = self.make_expiring();
        e.ttls.insert(field.into(), at);
        e.place(field);
    }

    /// Clears the TTL of `field`; true if it had one.
    pub(crate) fn persist(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Expiring(e) => {
                let had = e.forget(field);
                if had {
                    e.place(field);
                }
                had
            }
            _ => false,
        }
    }

    /// Whether `field` has a TTL that has passed at `now`.
    pub(crate) fn is_expired(&self, field: &[u8], now: i64) -> bool {
        self.ttl(field).is_some_and(|at| at < now)
    }

    /// The fields whose TTL has passed at `now`.
    pub(crate) fn expired_fields(&self, now: i64) -> Vec<Box<[u8]>> {
        match self {
            HashValue::Expiring(e) => (e.ttls.iter())
                .filter(|(_, &at)| at < now)
                .map(|(field, _)| field.clone())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Deletes the fields whose TTL has passed at `now`; how many.
    pub(crate) fn remove_expired(&mut self, now: i64) -> usize {
        let expired = self.expired_fields(now);
        for field in &expired {
            self.remove(field);
        }
        expired.len()
    }

    /// Every field with a TTL, and the TTL (DUMP, SAVE).
    pub(crate) fn ttls(&self) -> impl Iterator<Item = (&[u8], i64)> {
        let ttls = match self {
            HashValue::Expiring(e) => Some(&e.ttls),
            _ => None,
        };
        ttls.into_iter().flatten().map(|(f, &at)| (&f[..], at))
    }

    /// Field/value pairs of the fields not expired at `now`.
    pub(crate) fn live(&self, now: i64) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.iter().filter(move |(f, _)| !self.is_expired(f, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::hash::Fit;

    #[test]
    fn ttls_follow_their_fields() {
        let mut h = HashValue::default();
        h.insert(b"a", b"1", Fit::DEFAULT);
        h.insert(b"b", b"2", Fit::DEFAULT);
        h.set_ttl(b"a", 100);
        h.set_ttl(b"b", 200);
        assert!(h.is_expiring() && h.has_ttls());
        assert_eq!(h.ttl(b"a"), Some(100));
        // HINCRBY keeps a TTL, HSET drops it, HDEL takes it with the field.
        h.insert_keeping_ttl(b"a", b"3", Fit::DEFAULT);
        assert_eq!(h.ttl(b"a"), Some(100));
        h.insert(b"a", b"4", Fit::DEFAULT);
        assert_eq!(h.ttl(b"a"), None);
        assert!(h.is_expired(b"b", 201) && !h.is_expired(b"b", 200));
        assert_eq!(h.live(201).count(), 1);
        assert_eq!(h.remove_expired(201), 1);
        assert_eq!(h.len(), 1);
        assert!(!h.has_ttls() && h.is_expiring());
    }
}
