//! The value of a Redis hash, in two encodings, as Redis keeps it.
//!
//! Most hashes are small objects (a model's handful of fields), and a
//! `HashMap<Vec<u8>, Vec<u8>>` costs a hash table plus two heap blocks per
//! field: several hundred bytes for five short fields. So, like Redis's
//! listpack, a small hash lives in one contiguous buffer scanned linearly,
//! and becomes a hash table (for good) once it outgrows Redis's default
//! limits: more than [`MAX_COMPACT_ENTRIES`] fields, or a field or value
//! longer than [`MAX_COMPACT_LEN`] bytes.
//!
//! The compact form keeps insertion order, and updates a value in place, as
//! a listpack does: so HGETALL, HKEYS, HVALS and HSCAN of a small hash reply
//! in the very order Redis does. A big hash's order is arbitrary, as in Redis.

use std::collections::{hash_map, HashMap};

use crate::hasher::Seeded;

/// Most fields a compact hash holds (Redis's `hash-max-listpack-entries`).
pub(crate) const MAX_COMPACT_ENTRIES: usize = 128;
/// Longest field or value a compact hash holds (`hash-max-listpack-value`).
/// Being below 256, one byte encodes each length.
pub(crate) const MAX_COMPACT_LEN: usize = 64;

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
        }
    }

    /// Whether the hash has more than `n` fields: for a compact one,
    /// without counting them unless its size allows that many (each pair
    /// takes at least its two length bytes), since this runs on every
    /// write (see `encoding::grew_past`).
    pub(crate) fn has_more_than(&self, n: u64) -> bool {
        match self {
            HashValue::Compact(c) if c.buf.len() as u64 / 2 <= n => false,
            _ => self.len() as u64 > n,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            HashValue::Compact(c) => c.buf.is_empty(),
            HashValue::Table(t) => t.is_empty(),
        }
    }

    pub(crate) fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Compact(c) => c.find(field).map(|at| at.value(&c.buf)),
            HashValue::Table(t) => t.get(field).map(|v| &v[..]),
        }
    }

    pub(crate) fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value`; true if the field is new. A compact hash
    /// that would outgrow its limits becomes a table first.
    pub(crate) fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let HashValue::Compact(c) = self {
            let fits = field.len() <= MAX_COMPACT_LEN && value.len() <= MAX_COMPACT_LEN;
            match c.find(field) {
                Some(at) if fits => {
                    c.replace_value(at, value);
                    return false;
                }
                None if fits && c.iter().count() < MAX_COMPACT_ENTRIES => {
                    c.push(field, value);
                    return true;
                }
                _ => self.convert_to_table(),
            }
        }
        match self {
            HashValue::Table(t) => t.insert(field.into(), value.into()).is_none(),
            HashValue::Compact(_) => unreachable!("converted above"),
        }
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
        }
    }

    /// Field/value pairs: in insertion order for a compact hash.
    pub(crate) fn iter(&self) -> Iter<'_> {
        match self {
            HashValue::Compact(c) => Iter::Compact(c.iter()),
            HashValue::Table(t) => Iter::Table(t.iter()),
        }
    }

    fn convert_to_table(&mut self) {
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
/// length (one byte), its bytes, its value's length (one byte), its bytes.
/// The buffer is kept at its exact size: small hashes are many.
#[derive(Debug, Clone, Default)]
pub(crate) struct Compact {
    buf: Vec<u8>,
}

/// Where one field/value pair lies in a [`Compact`] buffer.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The field's length byte.
    start: usize,
    /// The value's length byte.
    value_len_at: usize,
    /// Just past the value.
    end: usize,
}

impl Slot {
    fn value<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.value_len_at + 1..self.end).unwrap_or_default()
    }
}

impl Compact {
    fn iter(&self) -> CompactIter<'_> {
        CompactIter {
            buf: &self.buf,
            at: 0,
        }
    }

    fn find(&self, field: &[u8]) -> Option<Slot> {
        let mut slots = self.iter();
        loop {
            let slot = slots.next_slot()?;
            if self.buf.get(slot.start + 1..slot.value_len_at) == Some(field) {
                return Some(slot);
            }
        }
    }

    /// Appends a pair; both lengths are at most [`MAX_COMPACT_LEN`].
    fn push(&mut self, field: &[u8], value: &[u8]) {
        self.buf.reserve_exact(2 + field.len() + value.len());
        Self::put(&mut self.buf, field);
        Self::put(&mut self.buf, value);
    }

    /// Replaces the value at `slot` in place, keeping the field's position.
    /// A value of the same length (a counter's usual update) is overwritten
    /// without moving or reallocating anything.
    fn replace_value(&mut self, slot: Slot, value: &[u8]) {
        if let Some(old) = self.buf.get_mut(slot.value_len_at + 1..slot.end) {
            if old.len() == value.len() {
                old.copy_from_slice(value);
                return;
            }
        }
        let mut encoded = Vec::with_capacity(1 + value.len());
        Self::put(&mut encoded, value);
        self.buf.splice(slot.value_len_at..slot.end, encoded);
        self.buf.shrink_to_fit();
    }

    fn put(buf: &mut Vec<u8>, bytes: &[u8]) {
        // Callers keep lengths within MAX_COMPACT_LEN, so this never clamps.
        buf.push(u8::try_from(bytes.len()).unwrap_or(u8::MAX));
        buf.extend_from_slice(bytes);
    }
}

/// Iterator over a [`Compact`] buffer's pairs.
pub(crate) struct CompactIter<'a> {
    buf: &'a [u8],
    at: usize,
}

impl CompactIter<'_> {
    /// The next pair's position, or None at the end (or on a malformed
    /// buffer, which the encoder never writes).
    fn next_slot(&mut self) -> Option<Slot> {
        let start = self.at;
        let value_len_at = start + 1 + usize::from(*self.buf.get(start)?);
        let end = value_len_at + 1 + usize::from(*self.buf.get(value_len_at)?);
        if end > self.buf.len() {
            return None;
        }
        self.at = end;
        Some(Slot {
            start,
            value_len_at,
            end,
        })
    }
}

impl<'a> Iterator for CompactIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let slot = self.next_slot()?;
        let field = self.buf.get(slot.start + 1..slot.value_len_at)?;
        Some((field, slot.value(self.buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::{HashValue, MAX_COMPACT_ENTRIES, MAX_COMPACT_LEN};

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
        assert!(h.insert(b"a", b"1"));
        assert!(h.insert(b"", b""));
        assert!(h.insert(b"c", b"3"));
        assert!(!h.insert(b"a", b"longer value"));
        assert!(!h.insert(b"", b"x"));
        assert!(!h.insert(b"c", b"4"), "same length: overwritten in place");
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
        let long = vec![b'x'; MAX_COMPACT_LEN + 1];
        let edge = vec![b'y'; MAX_COMPACT_LEN];
        let mut h = HashValue::default();
        h.insert(&edge, &edge);
        assert!(is_compact(&h));
        h.insert(b"f", &long);
        assert!(!is_compact(&h));
        assert_eq!(h.get(b"f"), Some(&long[..]));
        assert_eq!(h.get(&edge), Some(&edge[..]));

        let mut h = HashValue::default();
        h.insert(b"f", b"v");
        assert!(h.insert(&long, b"v"));
        assert!(!is_compact(&h));
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn too_many_fields_convert_to_a_table() {
        let mut h = HashValue::default();
        for i in 0..MAX_COMPACT_ENTRIES {
            assert!(h.insert(i.to_string().as_bytes(), b"v"));
        }
        assert!(is_compact(&h));
        assert!(!h.insert(b"0", b"w"), "updating keeps it compact");
        assert!(is_compact(&h));
        assert!(h.insert(b"new", b"v"));
        assert!(!is_compact(&h));
        assert_eq!(h.len(), MAX_COMPACT_ENTRIES + 1);
        assert_eq!(h.get(b"0"), Some(&b"w"[..]));
    }
}
