//! [`Slots`]: the keyspace's entries by slot, in place.
//!
//! Entries boxed one heap block each, behind a vector of pointers, would
//! make a lookup load the index's slot, the slot's pointer and
//! the entry, three dependent cache misses on a big keyspace (a profile
//! of `redis-benchmark -r 100000` shows them), and each key would pay
//! a pointer and a block header besides its entry. Here the entries sit in
//! chunks of [`CHUNK`]: slot `s` is entry `s % CHUNK` of chunk `s /
//! CHUNK`, one load from the (small, cached) list of chunks away. A chunk
//! never moves its entries once full, every chunk but the last is full,
//! and the last grows as a vector does, so a small keyspace takes little
//! room and a big one wastes at most part of one chunk.
//!
//! A hole (a deleted key's slot, until a new key fills it) costs a whole
//! entry, where it cost a pointer; trailing holes are given back as
//! before.

use super::Entry;

/// Entries per chunk: 56 KiB of entries, below malloc's mmap threshold.
const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;

/// Splits a slot into its chunk and its place in the chunk.
fn locate(slot: u32) -> (usize, usize) {
    let slot = slot as usize;
    (slot >> CHUNK_BITS, slot & (CHUNK - 1))
}

#[derive(Debug, Default)]
pub(super) struct Slots {
    /// Every chunk but the last holds [`CHUNK`] slots; the last is never
    /// empty and does not end in a hole.
    chunks: Vec<Vec<Option<Entry>>>,
}

impl Slots {
    /// One past the last slot in use.
    pub(super) fn len(&self) -> usize {
        self.chunks
            .last()
            .map_or(0, |last| (self.chunks.len() - 1) * CHUNK + last.len())
    }

    pub(super) fn get(&self, slot: u32) -> Option<&Entry> {
        let (chunk, i) = locate(slot);
        self.chunks.get(chunk)?.get(i)?.as_ref()
    }

    pub(super) fn get_mut(&mut self, slot: u32) -> Option<&mut Entry> {
        let (chunk, i) = locate(slot);
        self.chunks.get_mut(chunk)?.get_mut(i)?.as_mut()
    }

    /// Whether `slot` is a hole a new entry can fill.
    pub(super) fn is_hole(&self, slot: u32) -> bool {
        let (chunk, i) = locate(slot);
        self.chunks
            .get(chunk)
            .and_then(|c| c.get(i))
            .is_some_and(Option::is_none)
    }

    /// Puts `entry` in the hole `slot` (see [`Self::is_hole`]).
    pub(super) fn fill(&mut self, slot: u32, entry: Entry) {
        let (chunk, i) = locate(slot);
        if let Some(place) = self.chunks.get_mut(chunk).and_then(|c| c.get_mut(i)) {
            *place = Some(entry);
        }
    }

    /// Appends `entry` in a new slot past the end; returns the slot.
    pub(super) fn push(&mut self, entry: Entry) -> u32 {
        let slot = u32::try_from(self.len()).unwrap_or(u32::MAX);
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(Some(entry)),
            _ => {
                // The first chunk grows from small, as a vector; later
                // ones are born whole, the keyspace being big already.
                let mut chunk = Vec::with_capacity(if self.chunks.is_empty() { 0 } else { CHUNK });
                chunk.push(Some(entry));
                self.chunks.push(chunk);
            }
        }
        slot
    }

    /// Takes the entry out of `slot`, leaving a hole; trailing holes are
    /// dropped. Returns the entry, and whether `slot` stays a hole (false
    /// when it was dropped as trailing).
    pub(super) fn take(&mut self, slot: u32) -> Option<(Entry, bool)> {
        let (chunk, i) = locate(slot);
        let entry = self.chunks.get_mut(chunk)?.get_mut(i)?.take()?;
        let mut dropped = false;
        while let Some(last) = self.chunks.last_mut() {
            while last.last().is_some_and(Option::is_none) {
                last.pop();
                dropped = true;
            }
            if !last.is_empty() {
                break;
            }
            self.chunks.pop();
        }
        // `slot` itself is dropped if it now lies past the end.
        let hole = (slot as usize) < self.len();
        debug_assert!(hole || dropped);
        Some((entry, hole))
    }

    /// The stored entries from `from` on, with their slots, in slot order.
    pub(super) fn iter_from(&self, from: usize) -> impl Iterator<Item = (u32, &Entry)> {
        let skip_chunks = from >> CHUNK_BITS;
        self.chunks
            .iter()
            .enumerate()
            .skip(skip_chunks)
            .flat_map(|(c, chunk)| {
                chunk
                    .iter()
                    .enumerate()
                    .map(move |(i, e)| ((c << CHUNK_BITS) | i, e))
            })
            .skip(from & (CHUNK - 1))
            .filter_map(|(slot, e)| Some((u32::try_from(slot).ok()?, e.as_ref()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::{Slots, CHUNK};
    use crate::keyspace::Entry;
    use crate::value::encoding::History;
    use crate::value::Value;

    fn entry(n: usize) -> Entry {
        Entry::new(
            n.to_string().as_bytes(),
            Value::Str(Default::default()),
            History::Fresh,
            0,
        )
    }

    /// Slots across chunks keep their entries, holes are refilled in
    /// place, and trailing holes (whole chunks included) are given back.
    #[test]
    fn slots_span_chunks_and_trailing_holes_go() {
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 56);
        let mut slots = Slots::default();
        let n = 2 * CHUNK + 5;
        for i in 0..n {
            assert_eq!(slots.push(entry(i)) as usize, i);
        }
        assert_eq!(slots.len(), n);
        let key = |slots: &Slots, s: usize| slots.get(s as u32).map(|e| e.key().to_vec());
        assert_eq!(key(&slots, CHUNK + 3), Some(b"1027".to_vec()));
        // A hole in the middle stays one, and is filled in place.
        assert_eq!(slots.take(7).map(|(_, hole)| hole), Some(true));
        assert!(slots.is_hole(7) && slots.get(7).is_none());
        slots.fill(7, entry(70));
        assert_eq!(key(&slots, 7), Some(b"70".to_vec()));
        // Emptying the last chunk and the end of the one before drops them.
        for s in (CHUNK - 2..n).rev() {
            slots.take(s as u32);
        }
        assert_eq!(slots.len(), CHUNK - 2);
        assert!(!slots.is_hole((CHUNK - 2) as u32));
        let seen: Vec<u32> = slots.iter_from(CHUNK - 4).map(|(s, _)| s).collect();
        assert_eq!(seen, vec![(CHUNK - 4) as u32, (CHUNK - 3) as u32]);
        // A hole before the end stays when a later slot is taken.
        slots.take(3);
        slots.take((CHUNK - 3) as u32);
        assert!(slots.is_hole(3));
        assert_eq!(slots.len(), CHUNK - 3);
        assert_eq!(slots.iter_from(0).count(), CHUNK - 4);
    }
}
