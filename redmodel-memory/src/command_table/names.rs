//! Tables keyed by a command's name in any case: what the engine consults
//! on every command it runs (the command itself, its description).
//!
//! Why not a `HashMap` keyed by the lower-case name: lower-casing a
//! request's name into a stack buffer and hashing that buffer stalls the
//! processor on the buffer it has just written (perf puts a sixth of an
//! in-process `incr` on these two lookups). Here the name is folded to
//! lower case as it is hashed, one pass over the request's own bytes, and
//! the entry found is compared case-insensitively.
//!
//! The keys are the engine's own names, fixed at build time: a client's
//! name only picks a bucket, so an unseeded hash is safe here (unlike the
//! keyspace's, see [`crate::hasher`]).

use std::collections::HashMap;

use crate::hasher::{spread, ByNumber};

/// Values by name, found in any case.
pub(crate) struct NameTable<T> {
    by_hash: HashMap<u64, (&'static str, T), ByNumber>,
}

impl<T> NameTable<T> {
    /// The table of `entries`, each under its (lower-case) name.
    ///
    /// # Panics
    ///
    /// If two names fold to one hash: the tables are the engine's own,
    /// so this is caught by any test that runs a command.
    pub(crate) fn new(entries: impl IntoIterator<Item = (&'static str, T)>) -> Self {
        let mut by_hash = HashMap::default();
        for (name, value) in entries {
            let clash = by_hash.insert(fold(name.as_bytes()), (name, value));
            assert!(clash.is_none(), "two command names hash alike: {name}");
        }
        NameTable { by_hash }
    }

    /// The value of the command `name`, in any case.
    pub(crate) fn get(&self, name: &[u8]) -> Option<&T> {
        let (stored, value) = self.by_hash.get(&fold(name))?;
        stored
            .as_bytes()
            .eq_ignore_ascii_case(name)
            .then_some(value)
    }

    /// Every value, in no order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.by_hash.values().map(|(_, value)| value)
    }
}

/// The name's hash, as if lower case: read a word at a time (the last
/// word overlapping the one before it, and a short name read as two
/// halves), each byte with its `0x20` bit set (a letter's lower case; no
/// two names of the engine fold alike, which [`NameTable::new`] checks),
/// each word mixed in by a folded multiply. A byte-at-a-time hash waited
/// on one multiply per byte.
fn fold(name: &[u8]) -> u64 {
    const LOWER: u64 = 0x2020_2020_2020_2020;
    let mix = |h: u64, word: u64| spread(h ^ word);
    let u32_at = |half: Option<&[u8; 4]>| half.map_or(0, |b| u64::from(u32::from_le_bytes(*b)));
    let n = name.len();
    let mut h = n as u64;
    if let Some(last) = name.last_chunk::<8>() {
        let mut rest = name;
        while let Some((word, tail)) = rest.split_first_chunk::<8>() {
            h = mix(h, u64::from_le_bytes(*word) | LOWER);
            rest = tail;
        }
        if !rest.is_empty() {
            h = mix(h, u64::from_le_bytes(*last) | LOWER);
        }
        return h;
    }
    let word = if n >= 4 {
        u32_at(name.first_chunk()) << 32 | u32_at(name.last_chunk())
    } else {
        let byte = |i: usize| name.get(i).map_or(0, |&b| u64::from(b));
        match n {
            0 => 0,
            _ => byte(0) << 16 | byte(n / 2) << 8 | byte(n - 1),
        }
    };
    mix(h, word | LOWER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_in_any_case_and_only_by_its_name() {
        let table = NameTable::new([("hincrby", 1), ("get", 2), ("config|get", 3)]);
        assert_eq!(table.get(b"HINCRBY"), Some(&1));
        assert_eq!(table.get(b"hIncrBy"), Some(&1));
        assert_eq!(table.get(b"get"), Some(&2));
        assert_eq!(table.get(b"CONFIG|GET"), Some(&3));
        assert_eq!(table.get(b"gets"), None);
        assert_eq!(table.get(b""), None);
        // Only ASCII letters match in either case, though the hash folds
        // other bytes too.
        assert_eq!(table.get("gÉt".as_bytes()), None);
        assert_eq!(table.get(b"g\xc5t"), None);
        assert_eq!(table.get(b"GE\x14"), None);
        assert_eq!(table.get(b"config\\get"), None);
        let mut values: Vec<i32> = table.values().copied().collect();
        values.sort_unstable();
        assert_eq!(values, [1, 2, 3]);
    }
}
