//! The value of a Redis list, packed as Redis's quicklist packs it.
//!
//! A `VecDeque<Vec<u8>>` costs 24 bytes of slot plus a heap block (32
//! bytes at least) per element: a list of 1,000 short strings would take
//! 49 kB where Redis takes 14 kB. Here, as in Redis's quicklist of listpacks, a
//! list is a sequence of chunks, each one buffer of elements, each element
//! its length (LEB128, one byte below 128), its bytes, then its length
//! again, its bytes reversed: a chunk reads from either end, as a
//! listpack's entries end with their length for that (reading a chunk
//! from the start for a pop at the tail would be two fifths of RPOP's cost
//! under redis-benchmark). A chunk holds up to [`CHUNK_BYTES`] bytes (Redis's
//! `list-max-listpack-size -2`, 8 kB) unless a single element is bigger,
//! and up to [`CHUNK_ENTRIES`] elements. Pushing and popping at either end
//! touches one chunk (shifting at most a chunk's bytes, as a listpack
//! does); an index is found by skipping whole chunks by their counts, then
//! reading its chunk from the nearer end.

use std::ops::Range;

/// The most bytes of elements a chunk takes (more only for one element).
pub(crate) const CHUNK_BYTES: usize = 8 * 1024;
/// The most elements a chunk holds: a chunk is read from its start, so
/// this bounds the work of a pop at the tail or an index within a chunk
/// (a chunk of 8 kB of short elements would hold about 700).
pub(crate) const CHUNK_ENTRIES: u32 = 128;

/// A list value.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListValue {
    chunks: Vec<Chunk>,
}

/// Elements in one buffer, and how many.
#[derive(Debug, Clone, Default)]
struct Chunk {
    buf: Vec<u8>,
    count: u32,
    /// In the first chunk, the list's length (LPUSH and RPUSH reply with
    /// it): the chunk's padding holds it, where a field of the list would
    /// make every `Value` 8 bytes bigger. Unused in the other chunks.
    list_len: u32,
}

/// Appends `bytes` to `buf` as an element: its length (LEB128), the
/// bytes, then the length's bytes in reverse order (read from the right,
/// each byte but the last read has its top bit set, as from the left).
fn encode(buf: &mut Vec<u8>, bytes: &[u8]) {
    let mut header = [0u8; 10];
    let mut used = 0;
    let mut n = bytes.len();
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            header[used] = low;
            used += 1;
            break;
        }
        header[used] = low | 0x80;
        used += 1;
    }
    let header = &header[..used];
    grow(buf, 2 * used + bytes.len());
    buf.extend_from_slice(header);
    buf.extend_from_slice(bytes);
    buf.extend(header.iter().rev());
}

/// Makes room for `more` bytes in a chunk's buffer, by an eighth of its
/// length at least rather than by doubling, so that a list keeps little
/// slack (Redis reallocates a listpack at every insertion); a chunk is at
/// most 8 kB, so the copies stay short. (Growing by half instead measured
/// no faster.)
fn grow(buf: &mut Vec<u8>, more: usize) {
    if buf.capacity() - buf.len() < more {
        buf.reserve_exact(more.max(buf.len() / 8).max(8));
    }
}

/// Bytes of the length header of an element of `len` bytes.
fn header_len(len: usize) -> usize {
    let mut header = 1;
    let mut n = len >> 7;
    while n > 0 {
        header += 1;
        n >>= 7;
    }
    header
}

/// Bytes `encode` writes for `len` bytes of element.
fn encoded_len(len: usize) -> usize {
    2 * header_len(len) + len
}

/// One encoded element of a chunk's buffer.
struct Entry {
    /// Where its encoding starts (its header) and ends (after its
    /// trailing length): the next element starts at `end`.
    start: usize,
    end: usize,
    /// Its bytes.
    bytes: Range<usize>,
}

/// The length encoded by the bytes that `next` yields (LEB128's groups
/// of seven bits, lowest first), and how many bytes it took.
fn read_len(mut next: impl FnMut(usize) -> Option<u8>) -> Option<(usize, usize)> {
    let mut len = 0usize;
    let mut shift = 0;
    for i in 0.. {
        let b = next(i)?;
        len |= usize::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some((len, i + 1));
        }
        shift += 7;
    }
    None
}

/// The element starting at `at`. `None` past the end (or on a malformed
/// buffer, which `encode` never writes).
fn decode(buf: &[u8], at: usize) -> Option<Entry> {
    let (len, header) = read_len(|i| buf.get(at + i).copied())?;
    let bytes = at + header..(at + header).checked_add(len)?;
    let end = bytes.end.checked_add(header)?;
    (end <= buf.len()).then_some(Entry {
        start: at,
        end,
        bytes,
    })
}

/// The element ending at `end` (before the element at `end`), read from
/// its trailing length.
fn decode_back(buf: &[u8], end: usize) -> Option<Entry> {
    let (len, header) = read_len(|i| buf.get(end.checked_sub(i + 1)?).copied())?;
    let bytes_end = end.checked_sub(header)?;
    let start = bytes_end.checked_sub(len)?.checked_sub(header)?;
    Some(Entry {
        start,
        end,
        bytes: start + header..bytes_end,
    })
}

impl Chunk {
    fn of(elements: &[&[u8]]) -> Chunk {
        let mut buf = Vec::with_capacity(elements.iter().map(|e| encoded_len(e.len())).sum());
        for e in elements {
            encode(&mut buf, e);
        }
        Chunk {
            buf,
            count: u32::try_from(elements.len()).unwrap_or(u32::MAX),
            list_len: 0,
        }
    }

    fn iter(&self) -> ChunkIter<'_> {
        ChunkIter {
            buf: &self.buf,
            at: 0,
            end: self.buf.len(),
            left: self.count as usize,
        }
    }

    /// The element at `index`, read from the nearer end.
    fn entry(&self, index: usize) -> Option<Entry> {
        let count = self.count as usize;
        if index >= count {
            return None;
        }
        if index < count / 2 {
            let mut at = 0;
            for _ in 0..index {
                at = decode(&self.buf, at)?.end;
            }
            decode(&self.buf, at)
        } else {
            let mut end = self.buf.len();
            for _ in index + 1..count {
                end = decode_back(&self.buf, end)?.start;
            }
            decode_back(&self.buf, end)
        }
    }

    fn fits(&self, len: usize) -> bool {
        self.count == 0
            || (self.count < CHUNK_ENTRIES && self.buf.len() + encoded_len(len) <= CHUNK_BYTES)
    }
}

/// Iterator over one chunk's elements, from both ends.
struct ChunkIter<'a> {
    buf: &'a [u8],
    /// The next element from the front.
    at: usize,
    /// The end of the next element from the back.
    end: usize,
    /// Elements not yet returned from either end.
    left: usize,
}

impl<'a> Iterator for ChunkIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let e = decode(self.buf, self.at)?;
        self.at = e.end;
        self.buf.get(e.bytes)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for ChunkIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let e = decode_back(self.buf, self.end)?;
        self.end = e.start;
        self.buf.get(e.bytes)
    }
}

impl ExactSizeIterator for ChunkIter<'_> {}

/// Forward iterator over a span of a list (LRANGE's reply), decoding each
/// chunk in place: a flattened chain of chunk iterators, skipped and
/// taken, cost about 50 instructions per element, as much as writing the
/// element into the reply.
struct RangeIter<'a> {
    /// The chunks after the current one.
    chunks: std::slice::Iter<'a, Chunk>,
    /// The current chunk's buffer, and where its next element starts.
    buf: &'a [u8],
    at: usize,
    /// Elements of the current chunk not yet decoded.
    in_chunk: usize,
    /// Elements to pass over before the span starts.
    skip: usize,
    /// Elements of the span not yet returned.
    left: usize,
}

impl<'a> Iterator for RangeIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        loop {
            while self.in_chunk == 0 {
                let chunk = self.chunks.next()?;
                self.buf = &chunk.buf;
                self.at = 0;
                self.in_chunk = chunk.count as usize;
            }
            let e = decode(self.buf, self.at)?;
            self.at = e.end;
            self.in_chunk -= 1;
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            self.left -= 1;
            return self.buf.get(e.bytes);
        }
    }
}

impl ListValue {
    /// A list of `elements`, in order.
    pub(crate) fn from_elements<E: AsRef<[u8]>>(elements: impl IntoIterator<Item = E>) -> Self {
        let mut list = ListValue::default();
        for e in elements {
            list.push_back(e);
        }
        list
    }

    pub(crate) fn len(&self) -> usize {
        self.chunks.first().map_or(0, |c| c.list_len as usize)
    }

    /// Records the list's length after a change (see `Chunk::list_len`).
    fn store_len(&mut self, len: usize) {
        if let Some(first) = self.chunks.first_mut() {
            first.list_len = u32::try_from(len).unwrap_or(u32::MAX);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub(crate) fn push_back(&mut self, element: impl AsRef<[u8]>) {
        let element = element.as_ref();
        let len = self.len() + 1;
        match self.chunks.last_mut() {
            Some(c) if c.fits(element.len()) => {
                encode(&mut c.buf, element);
                c.count += 1;
            }
            _ => {
                if let Some(full) = self.chunks.last_mut() {
                    full.buf.shrink_to_fit();
                }
                // One chunk holds most lists: no room for more by default.
                self.chunks.reserve_exact(1);
                self.chunks.push(Chunk::of(&[element]));
            }
        }
        self.store_len(len);
    }

    pub(crate) fn push_front(&mut self, element: impl AsRef<[u8]>) {
        let element = element.as_ref();
        let len = self.len() + 1;
        match self.chunks.first_mut() {
            Some(c) if c.fits(element.len()) => {
                let mut encoded = Vec::with_capacity(encoded_len(element.len()));
                encode(&mut encoded, element);
                grow(&mut c.buf, encoded.len());
                c.buf.splice(0..0, encoded);
                c.count += 1;
            }
            _ => {
                if let Some(full) = self.chunks.first_mut() {
                    full.buf.shrink_to_fit();
                }
                self.chunks.reserve_exact(1);
                self.chunks.insert(0, Chunk::of(&[element]));
            }
        }
        self.store_len(len);
    }

    pub(crate) fn pop_front(&mut self) -> Option<Vec<u8>> {
        let len = self.len().saturating_sub(1);
        let c = self.chunks.first_mut()?;
        let e = decode(&c.buf, 0)?;
        let element = c.buf.get(e.bytes)?.to_vec();
        c.buf.drain(..e.end);
        c.count -= 1;
        self.after_removal(0);
        self.store_len(len);
        Some(element)
    }

    pub(crate) fn pop_back(&mut self) -> Option<Vec<u8>> {
        let len = self.len().saturating_sub(1);
        let i = self.chunks.len().checked_sub(1)?;
        let c = self.chunks.get_mut(i)?;
        let e = decode_back(&c.buf, c.buf.len())?;
        let element = c.buf.get(e.bytes)?.to_vec();
        c.buf.truncate(e.start);
        c.count -= 1;
        self.after_removal(i);
        self.store_len(len);
        Some(element)
    }

    /// Drops chunk `i` if it is empty, merges it into a neighbour if both
    /// fit one chunk, and gives back unused capacity.
    fn after_removal(&mut self, i: usize) {
        let Some(c) = self.chunks.get_mut(i) else {
            return;
        };
        if c.count == 0 {
            self.chunks.remove(i);
            return;
        }
        // Pops shrink a chunk in place; give back its slack once it is
        // half empty, so that a drained list does not keep its peak size.
        if c.buf.capacity() > 2 * c.buf.len() + 64 {
            c.buf.shrink_to_fit();
        }
    }

    /// The chunk holding element `index`, and the element's index in it.
    fn locate(&self, index: usize) -> Option<(usize, usize)> {
        let mut rest = index;
        for (i, c) in self.chunks.iter().enumerate() {
            let n = c.count as usize;
            if rest < n {
                return Some((i, rest));
            }
            rest -= n;
        }
        None
    }

    pub(crate) fn get(&self, index: usize) -> Option<&[u8]> {
        let (i, j) = self.locate(index)?;
        let c = self.chunks.get(i)?;
        c.buf.get(c.entry(j)?.bytes)
    }

    /// Replaces the element at `index` (LSET); false if there is none.
    pub(crate) fn set(&mut self, index: usize, element: &[u8]) -> bool {
        let Some((i, j)) = self.locate(index) else {
            return false;
        };
        let Some(c) = self.chunks.get_mut(i) else {
            return false;
        };
        let Some(e) = c.entry(j) else {
            return false;
        };
        let mut encoded = Vec::with_capacity(encoded_len(element.len()));
        encode(&mut encoded, element);
        c.buf.splice(e.start..e.end, encoded);
        let len = self.len();
        self.split_if_big(i);
        self.store_len(len);
        true
    }

    /// Inserts `element` before position `index` (`len()`: at the end).
    pub(crate) fn insert(&mut self, index: usize, element: &[u8]) {
        let len = self.len();
        if index >= len {
            self.push_back(element);
            return;
        }
        if index == 0 {
            self.push_front(element);
            return;
        }
        let Some((i, j)) = self.locate(index) else {
            return;
        };
        let Some(c) = self.chunks.get_mut(i) else {
            return;
        };
        let Some(at) = c.entry(j).map(|e| e.start) else {
            return;
        };
        let mut encoded = Vec::with_capacity(encoded_len(element.len()));
        encode(&mut encoded, element);
        grow(&mut c.buf, encoded.len());
        c.buf.splice(at..at, encoded);
        c.count += 1;
        self.split_if_big(i);
        self.store_len(len + 1);
    }

    /// Splits chunk `i` in two if it grew past [`CHUNK_BYTES`] or
    /// [`CHUNK_ENTRIES`].
    fn split_if_big(&mut self, i: usize) {
        let Some(c) = self.chunks.get(i) else {
            return;
        };
        if (c.buf.len() <= CHUNK_BYTES && c.count <= CHUNK_ENTRIES) || c.count < 2 {
            return;
        }
        let elements: Vec<&[u8]> = c.iter().collect();
        let (head, tail) = elements.split_at(elements.len() / 2);
        let (head, tail) = (Chunk::of(head), Chunk::of(tail));
        self.chunks.splice(i..=i, [head, tail]);
    }

    /// The elements, head to tail (`.rev()`: tail to head).
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.chunks.iter().flat_map(Chunk::iter)
    }

    /// The elements at positions `range`, skipping whole chunks to its
    /// start.
    pub(crate) fn range(&self, range: Range<usize>) -> impl Iterator<Item = &[u8]> + '_ {
        let mut skip = range.start;
        let mut first = self.chunks.len();
        for (i, c) in self.chunks.iter().enumerate() {
            if skip < c.count as usize {
                first = i;
                break;
            }
            skip -= c.count as usize;
        }
        RangeIter {
            chunks: self.chunks.get(first..).unwrap_or_default().iter(),
            buf: &[],
            at: 0,
            in_chunk: 0,
            skip,
            left: range.len(),
        }
    }

    /// Keeps the elements for which `keep` holds (called once each, in
    /// order), repacking the list.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        let kept: Vec<Vec<u8>> = self
            .iter()
            .filter(|e| keep(e))
            .map(<[u8]>::to_vec)
            .collect();
        *self = ListValue::from_elements(kept);
    }

    /// Keeps only the elements at positions `range` (LTRIM): whole chunks
    /// are dropped, the chunks at the edges cut, nothing is copied out.
    pub(crate) fn keep_range(&mut self, range: Range<usize>) {
        let len = self.len();
        let end = range.end.min(len);
        let start = range.start.min(end);
        self.drop_back(len - end);
        self.drop_front(start);
        self.store_len(end - start);
    }

    fn drop_back(&mut self, mut n: usize) {
        while n > 0 {
            let Some(c) = self.chunks.last_mut() else {
                return;
            };
            let count = c.count as usize;
            if count <= n {
                n -= count;
                self.chunks.pop();
                continue;
            }
            if let Some(e) = c.entry(count - n) {
                c.buf.truncate(e.start);
            }
            c.count -= u32::try_from(n).unwrap_or(0);
            c.buf.shrink_to_fit();
            return;
        }
    }

    fn drop_front(&mut self, mut n: usize) {
        let whole = self
            .chunks
            .iter()
            .take_while(|c| {
                let take = (c.count as usize) <= n;
                if take {
                    n -= c.count as usize;
                }
                take
            })
            .count();
        self.chunks.drain(..whole);
        if n == 0 {
            return;
        }
        if let Some(c) = self.chunks.first_mut() {
            if let Some(e) = c.entry(n) {
                c.buf.drain(..e.start);
                c.count -= u32::try_from(n).unwrap_or(0);
                c.buf.shrink_to_fit();
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        self.chunks = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// `range` yields what iterating the whole list and cutting gives, for
    /// every span of a list of several chunks (and past its end).
    #[test]
    fn range_matches_iter() {
        let list =
            ListValue::from_elements((0..300u32).map(|i| vec![b'x'; (i as usize * 37) % 90]));
        let all: Vec<&[u8]> = list.iter().collect();
        assert!(list.chunks.len() > 2);
        for start in (0..310).step_by(7) {
            for end in (start..320).step_by(11) {
                let got: Vec<&[u8]> = list.range(start..end).collect();
                let want: Vec<&[u8]> = all.iter().copied().skip(start).take(end - start).collect();
                assert_eq!(got, want, "{start}..{end}");
            }
        }
    }

    /// A long pseudo-random sequence of operations, checked against a
    /// VecDeque after each step: chunk splits, merges and both ends.
    #[test]
    fn matches_a_vecdeque() {
        let mut list = ListValue::default();
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        let mut x: u64 = 7;
        for step in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = match (x >> 60) % 4 {
                0 => 0,
                1 => 200,
                _ => ((x >> 20) % 40) as usize,
            };
            let element: Vec<u8> = (0..len).map(|i| (step as usize + i) as u8).collect();
            match (x >> 33) % 9 {
                0 | 1 => {
                    list.push_back(&element);
                    model.push_back(element);
                }
                2 | 3 => {
                    list.push_front(&element);
                    model.push_front(element);
                }
                4 => assert_eq!(list.pop_front(), model.pop_front()),
                5 => assert_eq!(list.pop_back(), model.pop_back()),
                6 if !model.is_empty() => {
                    let i = (x >> 8) as usize % model.len();
                    assert!(list.set(i, &element));
                    model[i] = element;
                }
                7 => {
                    let i = (x >> 8) as usize % (model.len() + 1);
                    list.insert(i, &element);
                    model.insert(i, element);
                }
                _ if step % 200 == 0 => {
                    let n = model.len();
                    let (a, b) = (n / 4, n - n / 5);
                    list.keep_range(a..b);
                    model.truncate(b);
                    model.drain(..a);
                }
                _ => {}
            }
            assert_eq!(list.len(), model.len());
            if step % 101 == 0 {
                assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
                assert!(list.iter().rev().eq(model.iter().rev().map(Vec::as_slice)));
                let n = model.len();
                for i in (0..n).step_by(7) {
                    assert_eq!(list.get(i), Some(&model[i][..]));
                }
                assert_eq!(list.get(n), None);
                let r = n / 3..n / 2;
                assert!(list.range(r.clone()).eq(model.range(r).map(Vec::as_slice)));
                assert!(list.chunks.iter().all(|c| c.count > 0
                    && c.count <= CHUNK_ENTRIES
                    && (c.buf.len() <= CHUNK_BYTES || c.count == 1)));
            }
        }
    }

    #[test]
    fn long_elements_and_lengths() {
        let big = vec![b'x'; 100_000];
        let mut list = ListValue::from_elements([&b""[..], &big, b"a"]);
        assert_eq!(list.len(), 3);
        assert_eq!(list.get(1), Some(&big[..]));
        assert_eq!(list.pop_back(), Some(b"a".to_vec()));
        assert_eq!(list.pop_back(), Some(big));
        assert_eq!(list.pop_back(), Some(Vec::new()));
        assert!(list.is_empty() && list.pop_front().is_none());
    }
}
