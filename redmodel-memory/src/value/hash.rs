//! The value of a Redis hash, in two encodings, as Redis keeps it.
//!
//! Most hashes are small objects (a model's handful of fields), and a
//! `HashMap<Vec<u8>, Vec<u8>>` costs a hash table plus two heap blocks per
//! field: several hundred bytes for five short fields. So, like Redis's
//! listpack, a small hash lives in one contiguous buffer scanned linearly,
//! and becomes a hash table (for good) once it outgrows the limits Redis
//! converts at ([`Fit`]: `hash-max-listpack-entries` and
//! `hash-max-listpack-value`, as configured).
//!
//! The compact form keeps insertion order, and updates a value in place, as
//! a listpack does: so HGETALL, HKEYS, HVALS and HSCAN of a small hash reply
//! in the very order Redis does, also when the limits are raised and Redis
//! keeps a listpack of long values or many fields. A big hash's order is
//! arbitrary, as in Redis.

use std::collections::{hash_map, HashMap};

use crate::config::Limits;
use crate::hasher::Seeded;

pub(crate) use field_ttl::Expiring;

mod field_ttl;
mod scan;

/// How far a compact hash may grow before it becomes a table: Redis's
/// `hash-max-listpack-entries` and `hash-max-listpack-value`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fit {
    /// Most fields.
    pub(crate) entries: u64,
    /// Longest field or value, in bytes.
    pub(crate) len: u64,
}

impl Fit {
    /// Redis's defaults: 128 fields, 64 bytes.
    #[cfg(test)]
    pub(crate) const DEFAULT: Fit = Fit {
        entries: 128,
        len: 64,
    };

    /// The limits configured in `limits`.
    pub(crate) fn of(limits: &Limits) -> Fit {
        Fit {
            entries: limits.hash_max_listpack_entries,
            len: limits.hash_max_listpack_value,
        }
    }

    fn holds(self, bytes: &[u8]) -> bool {
        bytes.len() as u64 <= self.len
    }
}

/// The encoding of a hash that outgrew the compact one.
type Table = HashMap<Box<[u8]>, Box<[u8]>, Seeded>;

/// A hash value: the map operations the hash commands use, whatever the
/// encoding. The table is boxed on purpose (one more pointer hop for big
/// hashes) so that the common, compact case stays at 24 bytes.
#[derive(Debug, Clone)]
#[allow(clippy::box_collection)]
pub(crate) enum HashValue {
    Compact(Compact),
    Table(Box<Table>),
    /// A hash that has had field TTLs (HEXPIRE and the like, Redis 7.4):
    /// its fields (never `Expiring` themselves) and their expiry times.
    /// Kept once made, as Redis keeps `listpackex` once converted.
    Expiring(Box<Expiring>),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Compact(Compact::default())
    }
}

impl HashValue {
    pub(crate) fn len(&self) -> usize {
        match self {
            HashValue::Compact(c) => c.iter().count(),
            HashValue::Table(t) => t.len(),
            HashValue::Expiring(e) => e.fields.len(),
        }
    }

    /// Whether the hash has more than `n` fields: for a compact one,
    /// without counting them unless its size allows that many (each pair
    /// takes at least its two length bytes), since this runs on every
    /// write (see `encoding::grew_past`).
    pub(crate) fn has_more_than(&self, n: u64) -> bool {
        match self {
            HashValue::Compact(c) => c.has_at_least(n.saturating_add(1)),
            HashValue::Table(t) => t.len() as u64 > n,
            HashValue::Expiring(e) => e.fields.has_more_than(n),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            HashValue::Compact(c) => c.buf.is_empty(),
            HashValue::Table(t) => t.is_empty(),
            HashValue::Expiring(e) => e.fields.is_empty(),
        }
    }

    pub(crate) fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Compact(c) => c.find(field).map(|at| at.value(&c.buf)),
            HashValue::Table(t) => t.get(field).map(|v| &v[..]),
            HashValue::Expiring(e) => e.fields.get(field),
        }
    }

    pub(crate) fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value`, clearing its TTL (HSET); true if the field
    /// is new. A compact hash that would outgrow `fit` becomes a table
    /// first, as Redis's `hashTypeSet` converts a listpack.
    pub(crate) fn insert(&mut self, field: &[u8], value: &[u8], fit: Fit) -> bool {
        if let HashValue::Expiring(e) = self {
            let had = e.forget(field);
            let new = e.fields.insert(field, value, fit);
            if had {
                e.place(field);
            }
            return new;
        }
        self.insert_keeping_ttl(field, value, fit)
    }

    /// [`Self::insert`] that leaves the field's TTL as it is (HINCRBY,
    /// HINCRBYFLOAT, as Redis 7.4's `HASH_SET_KEEP_TTL`).
    pub(crate) fn insert_keeping_ttl(&mut self, field: &[u8], value: &[u8], fit: Fit) -> bool {
        if let HashValue::Expiring(e) = self {
            return e.fields.insert(field, value, fit);
        }
        if let HashValue::Compact(c) = self {
            let fits = fit.holds(field) && fit.holds(value);
            match c.find(field) {
                Some(at) if fits => {
                    c.replace_value(at, value);
                    return false;
                }
                None if fits && !c.has_at_least(fit.entries) => {
                    c.push(field, value);
                    return true;
                }
                _ => self.convert_to_table(),
            }
        }
        match self {
            HashValue::Table(t) => t.insert(field.into(), value.into()).is_none(),
            HashValue::Compact(_) | HashValue::Expiring(_) => unreachable!("converted above"),
        }
    }

    /// A hash of `pairs`, in their order, as a restored payload is loaded:
    /// compact if it `fits` the limits (Redis loads it as a listpack, in
    /// its order), else a table; `None` if a field repeats. Each pair is
    /// appended, not looked for (a field set finds the repeats), so a
    /// large hash that fits raised limits loads in linear time.
    pub(crate) fn from_pairs<'a>(
        pairs: impl ExactSizeIterator<Item = (&'a [u8], &'a [u8])>,
        fits: bool,
    ) -> Option<HashValue> {
        let n = pairs.len();
        if !fits {
            let mut table = Table::with_capacity_and_hasher(n, Seeded::default());
            for (field, value) in pairs {
                if table.insert(field.into(), value.into()).is_some() {
                    return None;
                }
            }
            return Some(HashValue::Table(Box::new(table)));
        }
        let mut seen = std::collections::HashSet::with_capacity_and_hasher(n, Seeded::default());
        let mut c = Compact::default();
        for (field, value) in pairs {
            if !seen.insert(field) {
                return None;
            }
            c.push(field, value);
        }
        Some(HashValue::Compact(c))
    }

    /// Deletes `field`; true if it was there.
    pub(crate) fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Compact(c) => match c.find(field) {
                Some(at) => {
                    c.buf.drain(at.start..at.end);
                    true
                }
                None => false,
            },
            HashValue::Table(t) => t.remove(field).is_some(),
            HashValue::Expiring(e) => {
                e.forget(field);
                e.fields.remove(field)
            }
        }
    }

    /// Field/value pairs: in insertion order for a compact hash.
    pub(crate) fn iter(&self) -> Iter<'_> {
        match self {
            HashValue::Compact(c) => Iter::Compact(c.iter()),
            HashValue::Table(t) => Iter::Table(t.iter()),
            HashValue::Expiring(e) => e.fields.iter(),
        }
    }

    fn convert_to_table(&mut self) {
        if let HashValue::Expiring(e) = self {
            e.fields.convert_to_table();
        }
        if let HashValue::Compact(c) = self {
            let table: Table = c.iter().map(|(f, v)| (f.into(), v.into())).collect();
            *self = HashValue::Table(Box::new(table));
        }
    }
}

/// Iterator over a [`HashValue`]'s field/value pairs.
pub(crate) enum Iter<'a> {
    Compact(CompactIter<'a>),
    Table(hash_map::Iter<'a, Box<[u8]>, Box<[u8]>>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Compact(it) => it.next(),
            Iter::Table(it) => it.next().map(|(f, v)| (&f[..], &v[..])),
        }
    }
}

/// A small hash in one buffer: for each field, in insertion order, its
/// length, its bytes, its value's length, its bytes. A length below 255 is
/// one byte; a longer one is 255 and four bytes, little-endian (as a
/// listpack entry's header grows with its size). The buffer is kept at its
/// exact size: small hashes are many.
#[derive(Debug, Clone, Default)]
pub(crate) struct Compact {
    buf: Vec<u8>,
}

/// The one-byte lengths end below this; at it, four bytes follow.
const LONG: u8 = u8::MAX;

/// Where one field/value pair lies in a [`Compact`] buffer.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The field's length.
    start: usize,
    /// The field's bytes.
    field_at: usize,
    /// The value's length.
    value_len_at: usize,
    /// The value's bytes.
    value_at: usize,
    /// Just past the value.
    end: usize,
}

impl Slot {
    fn field<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.field_at..self.value_len_at)
            .unwrap_or_default()
    }

    fn value<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.value_at..self.end).unwrap_or_default()
    }
}

impl Compact {
    fn iter(&self) -> CompactIter<'_> {
        CompactIter {
            buf: &self.buf,
            at: 0,
        }
    }

    /// Whether it holds `n` pairs or more: counted only if its size
    /// allows that many (each pair takes at least its two length bytes),
    /// since this runs on every write.
    fn has_at_least(&self, n: u64) -> bool {
        self.buf.len() as u64 / 2 >= n && self.iter().count() as u64 >= n
    }

    fn find(&self, field: &[u8]) -> Option<Slot> {
        let mut slots = self.iter();
        loop {
            let slot = slots.next_slot()?;
            if slot.field(&self.buf) == field {
                return Some(slot);
            }
        }
    }

    /// Appends a pair.
    fn push(&mut self, field: &[u8], value: &[u8]) {
        self.buf
            .reserve_exact(len_size(field) + field.len() + len_size(value) + value.len());
        Self::put(&mut self.buf, field);
        Self::put(&mut self.buf, value);
    }

    /// Replaces the value at `slot` in place, keeping the field's position.
    /// A value of the same length (a counter's usual update) is overwritten
    /// without moving or reallocating anything.
    fn replace_value(&mut self, slot: Slot, value: &[u8]) {
        if let Some(old) = self.buf.get_mut(slot.value_at..slot.end) {
            if old.len() == value.len() {
                old.copy_from_slice(value);
                return;
            }
        }
        let mut encoded = Vec::with_capacity(len_size(value) + value.len());
        Self::put(&mut encoded, value);
        self.buf.splice(slot.value_len_at..slot.end, encoded);
        self.buf.shrink_to_fit();
    }

    fn put(buf: &mut Vec<u8>, bytes: &[u8]) {
        match u8::try_from(bytes.len()) {
            Ok(short) if short < LONG => buf.push(short),
            _ => {
                // A value is at most 512 MB (`proto-max-bulk-len`), well
                // within four bytes.
                let long = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
                buf.push(LONG);
                buf.extend_from_slice(&long.to_le_bytes());
            }
        }
        buf.extend_from_slice(bytes);
    }
}

/// The bytes [`Compact::put`] takes to write the length of `bytes`.
fn len_size(bytes: &[u8]) -> usize {
    if bytes.len() < usize::from(LONG) {
        1
    } else {
        5
    }
}

/// Iterator over a [`Compact`] buffer's pairs.
pub(crate) struct CompactIter<'a> {
    buf: &'a [u8],
    at: usize,
}

impl CompactIter<'_> {
    /// The length written at `at`, and where the bytes it counts start.
    fn len_at(&self, at: usize) -> Option<(usize, usize)> {
        match *self.buf.get(at)? {
            LONG => {
                let long = self.buf.get(at + 1..at + 5)?;
                let long = u32::from_le_bytes(long.try_into().ok()?);
                Some((usize::try_from(long).ok()?, at + 5))
            }
            short => Some((usize::from(short), at + 1)),
        }
    }

    /// The next pair's position, or None at the end (or on a malformed
    /// buffer, which the encoder never writes).
    fn next_slot(&mut self) -> Option<Slot> {
        let start = self.at;
        let (field_len, field_at) = self.len_at(start)?;
        let value_len_at = field_at + field_len;
        let (value_len, value_at) = self.len_at(value_len_at)?;
        let end = value_at + value_len;
        if end > self.buf.len() {
            return None;
        }
        self.at = end;
        Some(Slot {
            start,
            field_at,
            value_len_at,
            value_at,
            end,
        })
    }
}

impl<'a> Iterator for CompactIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let slot = self.next_slot()?;
        Some((slot.field(self.buf), slot.value(self.buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::{Fit, HashValue};

    const FIT: Fit = Fit::DEFAULT;

    fn pairs(h: &HashValue) -> Vec<(Vec<u8>, Vec<u8>)> {
        h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
    }

    fn is_compact(h: &HashValue) -> bool {
        matches!(h, HashValue::Compact(_))
    }

    #[test]
    fn compact_hash_keeps_insertion_order_and_updates_in_place() {
        let mut h = HashValue::default();
        assert!(h.is_empty());
        assert!(h.insert(b"a", b"1", FIT));
        assert!(h.insert(b"", b"", FIT));
        assert!(h.insert(b"c", b"3", FIT));
        assert!(!h.insert(b"a", b"longer value", FIT));
        assert!(!h.insert(b"", b"x", FIT));
        assert!(
            !h.insert(b"c", b"4", FIT),
            "same length: overwritten in place"
        );
        assert_eq!(h.get(b"a"), Some(&b"longer value"[..]));
        assert_eq!(h.get(b""), Some(&b"x"[..]));
        assert_eq!(h.get(b"b"), None);
        assert_eq!(
            pairs(&h),
            vec![
                (b"a".to_vec(), b"longer value".to_vec()),
                (b"".to_vec(), b"x".to_vec()),
                (b"c".to_vec(), b"4".to_vec()),
            ]
        );
        assert!(h.remove(b""));
        assert!(!h.remove(b""));
        assert_eq!(h.len(), 2);
        assert!(h.remove(b"a") && h.remove(b"c"));
        assert!(h.is_empty() && is_compact(&h));
    }

    #[test]
    fn a_long_field_or_value_converts_to_a_table() {
        let long = vec![b'x'; 65];
        let edge = vec![b'y'; 64];
        let mut h = HashValue::default();
        h.insert(&edge, &edge, FIT);
        assert!(is_compact(&h));
        h.insert(b"f", &long, FIT);
        assert!(!is_compact(&h));
        assert_eq!(h.get(b"f"), Some(&long[..]));
        assert_eq!(h.get(&edge), Some(&edge[..]));

        let mut h = HashValue::default();
        h.insert(b"f", b"v", FIT);
        assert!(h.insert(&long, b"v", FIT));
        assert!(!is_compact(&h));
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn too_many_fields_convert_to_a_table() {
        let mut h = HashValue::default();
        for i in 0..128 {
            assert!(h.insert(i.to_string().as_bytes(), b"v", FIT));
        }
        assert!(is_compact(&h));
        assert!(!h.has_more_than(128) && h.has_more_than(127));
        assert!(!h.insert(b"0", b"w", FIT), "updating keeps it compact");
        assert!(is_compact(&h));
        assert!(h.insert(b"new", b"v", FIT));
        assert!(!is_compact(&h));
        assert_eq!(h.len(), 129);
        assert_eq!(h.get(b"0"), Some(&b"w"[..]));
    }

    /// Raised limits keep long values and many fields compact, in their
    /// order, as Redis keeps a listpack: lengths past one byte's range
    /// take five.
    #[test]
    fn raised_limits_keep_long_values_compact_and_in_order() {
        let fit = Fit {
            entries: 1_000,
            len: 1 << 20,
        };
        let sizes = [0, 1, 254, 255, 256, 8191, 65535, 70_000];
        let mut h = HashValue::default();
        for (i, n) in sizes.iter().enumerate() {
            let field = vec![b'f'; if i % 2 == 0 { *n } else { 3 + i }];
            assert!(h.insert(&field, &vec![b'v'; *n], fit));
        }
        assert!(is_compact(&h));
        let lens: Vec<usize> = h.iter().map(|(_, v)| v.len()).collect();
        assert_eq!(lens, sizes);
        // A value crossing the one-byte boundary, both ways, in place.
        let field = vec![b'f'; 3 + 1];
        assert!(!h.insert(&field, &vec![b'w'; 300], fit));
        assert_eq!(h.get(&field).map(<[u8]>::len), Some(300));
        assert!(!h.insert(&field, b"w", fit));
        assert_eq!(h.get(&field), Some(&b"w"[..]));
        let lens: Vec<usize> = h.iter().map(|(_, v)| v.len()).collect();
        assert_eq!(lens, [0, 1, 254, 255, 256, 8191, 65535, 70_000]);
        assert!(h.remove(&vec![b'f'; 256]));
        assert_eq!(h.len(), sizes.len() - 1);
        assert!(is_compact(&h));
        // The same writes under the defaults: a table.
        let mut d = HashValue::default();
        d.insert(b"f", &vec![b'v'; 255], FIT);
        assert!(!is_compact(&d));
    }
}
