//! The value of a Redis set, in three encodings, as compact as Redis's.
//!
//! A `HashSet<Vec<u8>>` costs a table slot plus a heap block per member:
//! about 90 bytes a member whatever its size, so a set of ten small
//! integers would take 900 bytes where Redis's intset takes about 40. So:
//! - an integer set: a set of integers only, at most
//!   [`MAX_INTSET_ENTRIES`] (Redis's default `set-max-intset-entries`), is
//!   a sorted array of integers in one buffer, each at the width of the
//!   largest (2, 4 or 8 bytes), as Redis's intset: membership by binary
//!   search, members in ascending order (SMEMBERS replies in Redis's order);
//! - a compact set of strings: a small set of other strings (at most
//!   [`MAX_COMPACT_ENTRIES`] members of at most [`MAX_COMPACT_LEN`] bytes)
//!   is one buffer of length-prefixed members in insertion order, scanned
//!   linearly (Redis 7.2's listpack sets; 7.0 would use a table here, but
//!   OBJECT ENCODING is worked out separately, see `encoding`);
//! - [`SetValue::Ints`]: an integer set that outgrew the integer array is
//!   a hash table of the integers themselves (8 bytes a slot, where a
//!   member as bytes takes 24), until a member that is no integer comes;
//! - [`SetValue::Table`]: anything bigger is a hash table of
//!   [`SmallBytes`] (a member of up to 22 bytes inline in its slot, no heap
//!   block), for good: a set never goes back to a compact form, as in Redis.
//!
//! The layout of the representation changes nothing the commands see but
//! the order of iteration, which Redis leaves unspecified for big sets.

use std::borrow::Cow;
use std::collections::{hash_set, HashSet};

use super::small::SmallBytes;
use crate::args::parse_i64;
use crate::hasher::Seeded;

/// Most members an integer set holds (`set-max-intset-entries`'s default).
pub(crate) const MAX_INTSET_ENTRIES: usize = 512;
/// Most members a compact set of strings holds.
pub(crate) const MAX_COMPACT_ENTRIES: usize = 128;
/// Longest member a compact set of strings holds; below 256, so one byte
/// encodes each length.
pub(crate) const MAX_COMPACT_LEN: usize = 64;

/// The encoding of a set that outgrew the compact ones: short members
/// inline in their slot (see [`SmallBytes`]).
type Table = HashSet<SmallBytes, Seeded>;

/// A set value: the set operations the commands use, whatever the
/// encoding. Both compact encodings share one variant, told apart by the
/// buffer's first byte, so that a set (and so a [`Value`]) stays 24 bytes:
/// 2, 4 or 8 is an integer set of that width ([`ints`]), 0 a compact set
/// of strings (each member's length in one byte, then its bytes, in
/// insertion order); an empty buffer is an empty integer set. The table
/// is boxed for the same reason.
///
/// [`Value`]: super::Value
#[derive(Debug, Clone)]
#[allow(clippy::box_collection)]
pub(crate) enum SetValue {
    Packed(Vec<u8>),
    Ints(Box<HashSet<i64, Seeded>>),
    Table(Box<Table>),
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::Packed(Vec::new())
    }
}

/// The first byte of a compact set of strings.
const STRINGS: u8 = 0;

/// Whether a packed buffer holds integers (or nothing).
fn is_ints(buf: &[u8]) -> bool {
    buf.first() != Some(&STRINGS)
}

/// The members of a packed set of strings.
fn strings(buf: &[u8]) -> CompactIter<'_> {
    CompactIter {
        buf: buf.get(1..).unwrap_or_default(),
    }
}

impl SetValue {
    /// A set of `members` (repeats count once).
    pub(crate) fn from_members<M: AsRef<[u8]>>(members: impl IntoIterator<Item = M>) -> SetValue {
        let mut set = SetValue::default();
        for m in members {
            set.insert(m.as_ref());
        }
        set
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            SetValue::Packed(buf) if is_ints(buf) => ints::len(buf),
            SetValue::Packed(buf) => strings(buf).count(),
            SetValue::Ints(t) => t.len(),
            SetValue::Table(t) => t.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            SetValue::Packed(buf) => buf.len() <= 1,
            SetValue::Ints(t) => t.is_empty(),
            SetValue::Table(t) => t.is_empty(),
        }
    }

    pub(crate) fn contains(&self, member: &[u8]) -> bool {
        match self {
            SetValue::Packed(buf) if is_ints(buf) => {
                parse_i64(member).is_some_and(|n| ints::find(buf, n).is_ok())
            }
            SetValue::Packed(buf) => compact_find(buf, member).is_some(),
            SetValue::Ints(t) => parse_i64(member).is_some_and(|n| t.contains(&n)),
            SetValue::Table(t) => t.contains(member),
        }
    }

    /// Adds `member`; true if it is new. A compact set that would outgrow
    /// its limits (or an integer set given another string) converts first.
    pub(crate) fn insert(&mut self, member: &[u8]) -> bool {
        if let SetValue::Packed(buf) = self {
            if is_ints(buf) {
                match parse_i64(member) {
                    Some(n) => match ints::find(buf, n) {
                        Ok(_) => return false,
                        Err(at) if ints::len(buf) < MAX_INTSET_ENTRIES => {
                            ints::insert_at(buf, at, n);
                            return true;
                        }
                        Err(_) => {
                            let mut table = HashSet::with_capacity_and_hasher(
                                ints::len(buf) + 1,
                                Seeded::default(),
                            );
                            table.extend((0..ints::len(buf)).filter_map(|i| ints::get(buf, i)));
                            table.insert(n);
                            *self = SetValue::Ints(Box::new(table));
                            return true;
                        }
                    },
                    None => {
                        let compact = Self::fits_compact(ints::len(buf) + 1, member);
                        self.convert(compact);
                    }
                }
            } else {
                if compact_find(buf, member).is_some() {
                    return false;
                }
                if Self::fits_compact(strings(buf).count() + 1, member) {
                    buf.reserve_exact(1 + member.len());
                    buf.push(u8::try_from(member.len()).unwrap_or(u8::MAX));
                    buf.extend_from_slice(member);
                    return true;
                }
                self.convert(false);
            }
        }
        if let SetValue::Ints(t) = self {
            match parse_i64(member) {
                Some(n) => return t.insert(n),
                None => self.convert(false),
            }
        }
        match self {
            SetValue::Table(t) => t.insert(SmallBytes::from(member)),
            // Converted to a compact set of strings, with room for one more.
            SetValue::Packed(_) | SetValue::Ints(_) => self.insert(member),
        }
    }

    fn fits_compact(len: usize, member: &[u8]) -> bool {
        len <= MAX_COMPACT_ENTRIES && member.len() <= MAX_COMPACT_LEN
    }

    /// Re-encodes the members as a compact set of strings (`compact`) or a
    /// table.
    fn convert(&mut self, compact: bool) {
        let members: Vec<Vec<u8>> = self.iter().map(Cow::into_owned).collect();
        *self = if compact {
            let mut buf =
                Vec::with_capacity(1 + members.iter().map(|m| m.len() + 1).sum::<usize>());
            buf.push(STRINGS);
            for m in &members {
                buf.push(u8::try_from(m.len()).unwrap_or(u8::MAX));
                buf.extend_from_slice(m);
            }
            SetValue::Packed(buf)
        } else {
            SetValue::Table(Box::new(
                members.iter().map(|m| SmallBytes::from(&m[..])).collect(),
            ))
        };
    }

    /// Removes `member`; true if it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            SetValue::Packed(buf) if is_ints(buf) => {
                match parse_i64(member).map(|n| ints::find(buf, n)) {
                    Some(Ok(at)) => {
                        ints::remove_at(buf, at);
                        true
                    }
                    _ => false,
                }
            }
            SetValue::Packed(buf) => match compact_find(buf, member) {
                Some(at) => {
                    buf.drain(at..at + 1 + member.len());
                    if buf.len() <= 1 {
                        *buf = Vec::new();
                    } else {
                        buf.shrink_to_fit();
                    }
                    true
                }
                None => false,
            },
            SetValue::Ints(t) => parse_i64(member).is_some_and(|n| t.remove(&n)),
            SetValue::Table(t) => t.remove(member),
        }
    }

    /// The members: ascending for an integer set, in insertion order for
    /// a compact one, arbitrary for a table. An integer set's members are
    /// written out as text, hence the `Cow`.
    pub(crate) fn iter(&self) -> Iter<'_> {
        match self {
            SetValue::Packed(buf) if is_ints(buf) => Iter::Ints(buf, 0),
            SetValue::Packed(buf) => Iter::Compact(strings(buf)),
            SetValue::Ints(t) => Iter::IntTable(t.iter()),
            SetValue::Table(t) => Iter::Table(t.iter()),
        }
    }

    /// Whether every member is an integer (Redis's intset test): at
    /// once for an integer set, by a scan otherwise.
    pub(crate) fn all_integers(&self) -> bool {
        match self {
            SetValue::Packed(buf) if is_ints(buf) => true,
            SetValue::Ints(_) => true,
            SetValue::Packed(buf) => strings(buf).all(|m| parse_i64(m).is_some()),
            SetValue::Table(t) => t.iter().all(|m| parse_i64(m).is_some()),
        }
    }
}

/// Where `member`'s length byte lies in a packed set of strings.
fn compact_find(buf: &[u8], member: &[u8]) -> Option<usize> {
    let mut at = 1;
    while let Some(&len) = buf.get(at) {
        let end = at + 1 + usize::from(len);
        if buf.get(at + 1..end)? == member {
            return Some(at);
        }
        at = end;
    }
    None
}

/// Iterator over a compact set's members.
pub(crate) struct CompactIter<'a> {
    buf: &'a [u8],
}

impl<'a> Iterator for CompactIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let (&len, rest) = self.buf.split_first()?;
        let len = usize::from(len).min(rest.len());
        let (member, rest) = rest.split_at(len);
        self.buf = rest;
        Some(member)
    }
}

/// Iterator over a [`SetValue`]'s members.
pub(crate) enum Iter<'a> {
    Ints(&'a [u8], usize),
    Compact(CompactIter<'a>),
    IntTable(hash_set::Iter<'a, i64>),
    Table(hash_set::Iter<'a, SmallBytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Cow<'a, [u8]>;

    fn next(&mut self) -> Option<Cow<'a, [u8]>> {
        match self {
            Iter::Ints(buf, at) => {
                let n = ints::get(buf, *at)?;
                *at += 1;
                Some(Cow::Owned(n.to_string().into_bytes()))
            }
            Iter::Compact(it) => it.next().map(Cow::Borrowed),
            Iter::IntTable(it) => it.next().map(|n| Cow::Owned(n.to_string().into_bytes())),
            Iter::Table(it) => it.next().map(|m| Cow::Borrowed(&m[..])),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Ints(buf, at) => {
                let n = ints::len(buf).saturating_sub(*at);
                (n, Some(n))
            }
            Iter::Compact(_) => (0, None),
            Iter::IntTable(it) => it.size_hint(),
            Iter::Table(it) => it.size_hint(),
        }
    }
}

/// Sorted distinct integers in one buffer, as Redis's intset: the first
/// byte is the width of every integer (2, 4 or 8 bytes, the least that
/// holds them all), then the integers, little-endian. Empty: no buffer.
mod ints {
    use std::cmp::Ordering;

    fn width(buf: &[u8]) -> usize {
        buf.first().map_or(2, |&w| usize::from(w).max(1))
    }

    pub(super) fn len(buf: &[u8]) -> usize {
        buf.len().saturating_sub(1) / width(buf)
    }

    pub(super) fn get(buf: &[u8], i: usize) -> Option<i64> {
        let w = width(buf);
        let bytes = buf.get(1 + i * w..1 + (i + 1) * w)?;
        // Sign-extend the `w` little-endian bytes.
        let mut b = [if bytes.last().is_some_and(|&x| x & 0x80 != 0) {
            0xff
        } else {
            0
        }; 8];
        b[..w.min(8)].copy_from_slice(&bytes[..w.min(8)]);
        Some(i64::from_le_bytes(b))
    }

    /// `Ok(index)` of `n`, or `Err(index)` where it would go.
    pub(super) fn find(buf: &[u8], n: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, len(buf));
        while lo < hi {
            let mid = (lo + hi) / 2;
            match get(buf, mid).map(|m| m.cmp(&n)) {
                Some(Ordering::Less) => lo = mid + 1,
                Some(Ordering::Greater) => hi = mid,
                Some(Ordering::Equal) => return Ok(mid),
                None => break,
            }
        }
        Err(lo)
    }

    fn width_for(n: i64) -> usize {
        if i16::try_from(n).is_ok() {
            2
        } else if i32::try_from(n).is_ok() {
            4
        } else {
            8
        }
    }

    fn put(buf: &mut Vec<u8>, n: i64, w: usize) {
        // `w` holds `n` (see `width_for`), so the truncation keeps it.
        buf.extend_from_slice(&n.to_le_bytes()[..w]);
    }

    pub(super) fn insert_at(buf: &mut Vec<u8>, at: usize, n: i64) {
        let w = width(buf);
        let need = width_for(n);
        if need > w || buf.is_empty() {
            // Re-encode at the wider width (or start the buffer).
            let w = need.max(w);
            let old = std::mem::take(buf);
            let n_old = len(&old);
            buf.reserve_exact(1 + (n_old + 1) * w);
            buf.push(u8::try_from(w).unwrap_or(8));
            for i in 0..n_old {
                if i == at {
                    put(buf, n, w);
                }
                put(buf, get(&old, i).unwrap_or_default(), w);
            }
            if at >= n_old {
                put(buf, n, w);
            }
            return;
        }
        let mut encoded = Vec::with_capacity(w);
        put(&mut encoded, n, w);
        let pos = 1 + at * w;
        buf.reserve_exact(w);
        buf.splice(pos..pos, encoded);
    }

    pub(super) fn remove_at(buf: &mut Vec<u8>, at: usize) {
        let w = width(buf);
        let pos = 1 + at * w;
        buf.drain(pos..pos + w);
        if buf.len() <= 1 {
            *buf = Vec::new();
        } else {
            buf.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(s: &SetValue) -> Vec<String> {
        s.iter()
            .map(|m| String::from_utf8_lossy(&m).into_owned())
            .collect()
    }

    #[test]
    fn integer_sets_stay_sorted_and_widen() {
        let mut s = SetValue::default();
        for n in ["5", "-3", "70000", "0", "5", "-9223372036854775808", "12"] {
            s.insert(n.as_bytes());
        }
        assert!(matches!(&s, SetValue::Packed(b) if is_ints(b)));
        assert_eq!(
            members(&s),
            ["-9223372036854775808", "-3", "0", "5", "12", "70000"]
        );
        assert!(s.contains(b"70000") && !s.contains(b"07") && !s.contains(b"x"));
        assert!(!s.insert(b"12"));
        assert!(s.remove(b"-3") && !s.remove(b"-3") && !s.remove(b"+5"));
        assert_eq!(s.len(), 5);
        for m in members(&s) {
            assert!(s.remove(m.as_bytes()));
        }
        assert!(s.is_empty());
    }

    #[test]
    fn a_string_makes_an_integer_set_compact_then_a_table() {
        let mut s = SetValue::from_members(["1", "2"]);
        assert!(s.insert(b"a"));
        assert!(matches!(&s, SetValue::Packed(b) if !is_ints(b)));
        assert_eq!(members(&s), ["1", "2", "a"]);
        assert!(!s.insert(b"2") && s.contains(b"2"));
        assert!(s.insert(&[b'x'; MAX_COMPACT_LEN + 1]));
        assert!(matches!(s, SetValue::Table(_)));
        assert_eq!(s.len(), 4);
        assert!(s.remove(b"a") && s.contains(b"1"));
    }

    #[test]
    fn limits_convert_to_a_table() {
        let mut s = SetValue::default();
        for i in 0..MAX_INTSET_ENTRIES {
            s.insert(i.to_string().as_bytes());
        }
        assert!(matches!(&s, SetValue::Packed(b) if is_ints(b)));
        s.insert(b"100000");
        assert!(matches!(s, SetValue::Ints(_)));
        assert_eq!(s.len(), MAX_INTSET_ENTRIES + 1);
        assert!(s.contains(b"100000") && s.contains(b"0") && !s.contains(b"00"));
        assert!(!s.insert(b"7") && s.remove(b"7") && !s.remove(b"7") && !s.remove(b"x"));
        assert!(s.all_integers());
        let mut texts = members(&s);
        texts.sort();
        let mut expected: Vec<String> = (0..MAX_INTSET_ENTRIES)
            .filter(|&i| i != 7)
            .map(|i| i.to_string())
            .chain(["100000".to_string()])
            .collect();
        expected.sort();
        assert_eq!(texts, expected);
        // A member that is no integer makes it a table of strings.
        assert!(s.insert(b"-0"));
        assert!(matches!(s, SetValue::Table(_)));
        assert_eq!(s.len(), MAX_INTSET_ENTRIES + 1);
        assert!(s.contains(b"-0") && s.contains(b"100000") && !s.all_integers());

        let mut s = SetValue::default();
        for i in 0..MAX_COMPACT_ENTRIES {
            s.insert(format!("m{i}").as_bytes());
        }
        assert!(matches!(&s, SetValue::Packed(b) if !is_ints(b)));
        s.insert(b"more");
        assert!(matches!(s, SetValue::Table(_)));
        assert!(s.contains(b"m0") && s.contains(b"more"));
    }

    #[test]
    fn a_value_stays_32_bytes() {
        assert!(std::mem::size_of::<SetValue>() <= 32);
        assert_eq!(std::mem::size_of::<crate::value::Value>(), 32);
    }
}
