//! Listpacks (Redis 7.0's `listpack.c`): the compact encoding of small
//! hashes and sorted sets, of a quicklist's nodes and of a stream's nodes.
//!
//! Layout: the total size (u32, little endian), the element count (u16;
//! 65535 when unknown), the elements, and a 0xFF terminator. Each element
//! is an encoding byte (which holds a small integer or a string's length,
//! or says what follows), its data, and then its own size again,
//! "backlen", in 1 to 5 bytes read right to left, so that the list can be
//! walked backwards.

use super::Elem;
use crate::args::parse_i64;
use crate::value::stream::backlen_len;

const HEADER: usize = 6;
const EOF: u8 = 0xff;
/// The header's count when there are too many elements to count.
const COUNT_UNKNOWN: u16 = u16::MAX;

/// The elements of the listpack `lp`, checked as Redis's deep integrity
/// validation checks them (`lpValidateIntegrity` with `deep`): the header
/// size is the buffer's, each element lies inside it with a backlen that
/// matches, the terminator is last, and the count is right. `None` for
/// anything else.
pub(crate) fn elements(lp: &[u8]) -> Option<Vec<Elem<'_>>> {
    elements_counted(lp, true)
}

/// [`elements`], with the header's count checked or not: a stream node's
/// is not (`streamValidateListpackIntegrity` walks the entries itself and
/// never compares the count).
pub(crate) fn elements_counted(lp: &[u8], check_count: bool) -> Option<Vec<Elem<'_>>> {
    if lp.len() < HEADER + 1 {
        return None;
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]);
    let count = u16::from_le_bytes([lp[4], lp[5]]);
    if usize::try_from(total).ok()? != lp.len() || lp[lp.len() - 1] != EOF {
        return None;
    }
    // Every element takes two bytes at least, so this bounds the vector
    // by the buffer, whatever the header claims.
    let mut out = Vec::with_capacity(usize::from(count).min(lp.len() / 2));
    let end = lp.len() - 1;
    let mut at = HEADER;
    while at < end {
        let (elem, size) = decode(&lp[at..end])?;
        let backlen = encode_backlen(size);
        let backlen = backlen.as_slice();
        let after = at.checked_add(size)?.checked_add(backlen.len())?;
        if after > end || &lp[at + size..after] != backlen {
            return None;
        }
        out.push(elem);
        at = after;
    }
    if check_count && count != COUNT_UNKNOWN && usize::from(count) != out.len() {
        return None;
    }
    Some(out)
}

/// The element at the start of `bytes` and the size of its encoding and
/// data (backlen excluded).
fn decode(bytes: &[u8]) -> Option<(Elem<'_>, usize)> {
    let b = *bytes.first()?;
    let at = |i: usize| bytes.get(i).copied();
    let le = |n: usize| -> Option<u64> {
        let raw = bytes.get(1..1 + n)?;
        Some(
            raw.iter()
                .rev()
                .fold(0u64, |acc, &b| acc << 8 | u64::from(b)),
        )
    };
    // A two's complement integer of `bits` bits.
    let signed = |v: u64, bits: u32| -> i64 {
        let shift = 64 - bits;
        ((v << shift) as i64) >> shift
    };
    let string = |start: usize, len: usize| -> Option<(Elem<'_>, usize)> {
        let end = start.checked_add(len)?;
        Some((Elem::Str(bytes.get(start..end)?), end))
    };
    match b {
        0x00..=0x7f => Some((Elem::Int(i64::from(b)), 1)),
        0x80..=0xbf => string(1, usize::from(b & 0x3f)),
        0xc0..=0xdf => {
            let v = u64::from(b & 0x1f) << 8 | u64::from(at(1)?);
            Some((Elem::Int(signed(v, 13)), 2))
        }
        0xe0..=0xef => string(2, usize::from(b & 0x0f) << 8 | usize::from(at(1)?)),
        0xf0 => string(5, usize::try_from(le(4)?).ok()?),
        0xf1 => Some((Elem::Int(signed(le(2)?, 16)), 3)),
        0xf2 => Some((Elem::Int(signed(le(3)?, 24)), 4)),
        0xf3 => Some((Elem::Int(signed(le(4)?, 32)), 5)),
        0xf4 => Some((Elem::Int(le(8)? as i64), 9)),
        _ => None,
    }
}

/// The backlen of an element of `size` bytes (`lpEncodeBacklen`): 7 bits
/// per byte, the first byte written holding the highest bits, every byte
/// but the first flagged with the top bit.
fn encode_backlen(size: usize) -> Backlen {
    let n = backlen_len(size);
    let size = size as u64;
    let mut bytes = [0u8; 5];
    for (i, byte) in bytes[..n].iter_mut().enumerate() {
        let shift = 7 * (n - 1 - i);
        *byte = ((size >> shift) & 127) as u8;
        if i > 0 {
            *byte |= 128;
        }
    }
    Backlen { bytes, len: n }
}

/// An encoded backlen.
struct Backlen {
    bytes: [u8; 5],
    len: usize,
}

impl Backlen {
    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Builds a listpack as Redis's `lpAppend` does: a string that reads as
/// an integer is stored as one, in the smallest integer encoding.
pub(crate) struct Builder {
    buf: Vec<u8>,
    count: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            buf: vec![0; HEADER],
            count: 0,
        }
    }
}

impl Builder {
    /// The listpack's size if it were finished now.
    pub(crate) fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    /// How many elements it holds.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Appends a string, as an integer if it reads as one.
    pub(crate) fn push(&mut self, s: &[u8]) {
        match (s.len() <= 20).then(|| parse_i64(s)).flatten() {
            Some(v) => self.push_int(v),
            None => self.push_str(s),
        }
    }

    /// Appends an integer in its smallest encoding.
    pub(crate) fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        let (tag, width): (Option<u8>, usize) = if (0..=127).contains(&v) {
            self.buf.push(v as u8);
            (None, 0)
        } else if (-4096..=4095).contains(&v) {
            let u = (v as u64) & 0x1fff;
            self.buf.push(0xc0 | (u >> 8) as u8);
            self.buf.push(u as u8);
            (None, 0)
        } else if i16::try_from(v).is_ok() {
            (Some(0xf1), 2)
        } else if (-(1 << 23)..(1 << 23)).contains(&v) {
            (Some(0xf2), 3)
        } else if i32::try_from(v).is_ok() {
            (Some(0xf3), 4)
        } else {
            (Some(0xf4), 8)
        };
        if let Some(tag) = tag {
            self.buf.push(tag);
            self.buf.extend_from_slice(&v.to_le_bytes()[..width]);
        }
        self.end_element(start);
    }

    /// Appends a string as a string.
    fn push_str(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let len = s.len();
        if len < 64 {
            self.buf.push(0x80 | len as u8);
        } else if len < 4096 {
            self.buf.push(0xe0 | (len >> 8) as u8);
            self.buf.push(len as u8);
        } else {
            self.buf.push(0xf0);
            self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        self.end_element(start);
    }

    fn end_element(&mut self, start: usize) {
        let backlen = encode_backlen(self.buf.len() - start);
        self.buf.extend_from_slice(backlen.as_slice());
        self.count += 1;
    }

    /// The finished listpack.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.buf.push(EOF);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let count = u16::try_from(self.count)
            .ok()
            .filter(|&c| c != COUNT_UNKNOWN)
            .unwrap_or(COUNT_UNKNOWN);
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(items: &[&[u8]]) {
        let mut b = Builder::default();
        for item in items {
            b.push(item);
        }
        let lp = b.finish();
        let back: Vec<Vec<u8>> = elements(&lp)
            .expect("valid listpack")
            .into_iter()
            .map(Elem::to_bytes)
            .collect();
        assert_eq!(back, items.iter().map(|i| i.to_vec()).collect::<Vec<_>>());
    }

    #[test]
    fn every_encoding_round_trips() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 200];
        round_trip(&[
            b"0",
            b"127",
            b"128",
            b"-1",
            b"-4096",
            b"4095",
            b"-4097",
            b"32767",
            b"-32768",
            b"8388607",
            b"-8388608",
            b"2147483647",
            b"-2147483648",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"",
            b"hello",
            b"007",
            &mid,
            &long,
        ]);
    }

    #[test]
    fn a_real_servers_listpack_decodes() {
        // HSET h a 1 b hello on redis-server 7.0.15 (DUMP's listpack).
        let lp = b"\x16\x00\x00\x00\x04\x00\x81a\x02\x01\x01\x81b\x02\x85hello\x06\xff";
        let elems = elements(lp).expect("valid");
        assert_eq!(
            elems,
            vec![
                Elem::Str(b"a"),
                Elem::Int(1),
                Elem::Str(b"b"),
                Elem::Str(b"hello")
            ]
        );
    }

    #[test]
    fn corrupt_listpacks_are_refused() {
        let mut b = Builder::default();
        b.push(b"hello");
        b.push(b"12");
        let lp = b.finish();
        assert!(elements(&lp).is_some());
        for cut in 0..lp.len() {
            assert!(elements(&lp[..cut]).is_none(), "cut at {cut}");
        }
        let mut wrong_count = lp.clone();
        wrong_count[4] = 3;
        assert!(elements(&wrong_count).is_none());
        let mut wrong_backlen = lp.clone();
        wrong_backlen[HEADER + 6] = 9;
        assert!(elements(&wrong_backlen).is_none());
        let mut bad_encoding = lp;
        bad_encoding[HEADER] = 0xf9;
        assert!(elements(&bad_encoding).is_none());
    }
}
