//! LZF (the format of liblzf, which Redis uses for strings in RDB
//! payloads and for compressed quicklist nodes).
//!
//! The compressed stream is a sequence of literal runs (a control byte
//! below 32: that many plus one bytes follow, copied as they are) and back
//! references (a control byte of 32 or more: its top 3 bits are a length,
//! extended by a second byte when all set, its low 5 bits and the next
//! byte an offset back into the output). Hand-written rather than a crate:
//! each direction is a few dozen lines, and every index here is checked.

/// The `len` bytes `input` decompresses to; `None` if it is not a valid
/// LZF stream, or does not give exactly `len` bytes (Redis's
/// "Invalid LZF compressed string").
///
/// The output grows with what the input actually produces and never past
/// `len`, so a declared length has no say in what is allocated: a back
/// reference of at most 3 input bytes yields at most 264 output bytes, so
/// the output is bounded by the input's size times 88.
pub(crate) fn decompress(input: &[u8], len: u64) -> Option<Vec<u8>> {
    let len = usize::try_from(len).ok()?;
    if input.is_empty() {
        // liblzf reads a control byte whatever the input's length.
        return (len == 0).then(Vec::new);
    }
    let mut out: Vec<u8> = Vec::with_capacity(len.min(input.len().saturating_mul(4)));
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let literal = input.get(i..i + run)?;
            if out.len() + run > len {
                return None;
            }
            out.extend_from_slice(literal);
            i += run;
        } else {
            let mut run = ctrl >> 5;
            if run == 7 {
                run += usize::from(*input.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i)?) + 1;
            i += 1;
            let run = run + 2;
            if out.len() + run > len {
                return None;
            }
            let start = out.len().checked_sub(back)?;
            // The reference may overlap what it writes (a run repeating
            // its last bytes), so the copy goes byte by byte.
            for k in start..start + run {
                let b = out[k];
                out.push(b);
            }
        }
    }
    (out.len() == len).then_some(out)
}

/// The longest back reference: 7 + 255 in the length fields, plus 2.
const MAX_MATCH: usize = 264;
/// The farthest a back reference reaches: 13 bits of offset.
const MAX_DISTANCE: usize = 1 << 13;
/// The longest literal run: 5 bits of length.
const MAX_LITERAL: usize = 32;
/// liblzf's hash table as Redis builds it (`HLOG` 16).
const HASH_BITS: u32 = 16;

/// `input` compressed, if that takes at most `max_len` bytes (Redis asks
/// for 4 bytes saved at least, and stores the string as it is otherwise).
///
/// liblzf's compressor as Redis builds it (`VERY_FAST`), so that a payload
/// has Redis's bytes: a table remembers the last position of each hash of
/// the 3 bytes ahead (the hash rolls over 4 bytes, as liblzf's does); a
/// position seen less than 8 kB back, past the first byte, whose 3 bytes
/// are the same starts a back reference as long as the bytes go on being
/// the same; after one, only its last two positions are remembered. The
/// output's room is checked where liblzf checks it, conservatively, so a
/// string liblzf gives up on is given up on here too.
pub(crate) fn compress(input: &[u8], max_len: usize) -> Option<Vec<u8>> {
    if input.is_empty() || max_len == 0 {
        return None;
    }
    let end = input.len();
    let first = |at: usize| u32::from(input[at]) << 8 | u32::from(input[at + 1]);
    let next = |h: u32, at: usize| h << 8 | u32::from(input[at + 2]);
    let slot = |h: u32| {
        ((h >> (24 - HASH_BITS)).wrapping_sub(h.wrapping_mul(5)) & ((1 << HASH_BITS) - 1)) as usize
    };
    // Positions, 0 for none: a reference to the first byte is never made.
    let mut table = vec![0usize; 1 << HASH_BITS];
    let mut out = Output::new(max_len.min(end) + 1);
    let mut at = 0;
    // Only read with 3 bytes ahead (liblzf reads past a shorter input).
    let mut h = if end >= 3 { first(0) } else { 0 };
    while at + 2 < end {
        h = next(h, at);
        let from = std::mem::replace(&mut table[slot(h)], at);
        let found =
            from > 0 && at - from - 1 < MAX_DISTANCE && input[from..from + 3] == input[at..at + 3];
        if !found {
            if out.bytes.len() >= max_len {
                return None;
            }
            out.literal(input[at]);
            at += 1;
            continue;
        }
        let offset = at - from - 1;
        let longest = (end - at - 2).min(MAX_MATCH);
        let written = out.bytes.len();
        if written + 4 >= max_len && written - usize::from(out.lit == 0) + 4 >= max_len {
            return None;
        }
        let mut len = 2;
        let mut open = true;
        if longest > 16 {
            for _ in 0..16 {
                len += 1;
                if input[from + len] != input[at + len] {
                    open = false;
                    break;
                }
            }
        }
        if open {
            loop {
                len += 1;
                if !(len < longest && input[from + len] == input[at + len]) {
                    break;
                }
            }
        }
        out.close();
        let extra = len - 2;
        if extra < 7 {
            out.bytes.push(((offset >> 8) + (extra << 5)) as u8);
        } else {
            out.bytes.push(((offset >> 8) + (7 << 5)) as u8);
            out.bytes.push((extra - 7) as u8);
        }
        out.bytes.push(offset as u8);
        out.open();
        at += len;
        if at + 2 >= end {
            break;
        }
        // The last two positions of the match, as liblzf remembers them.
        at -= 2;
        h = first(at);
        h = next(h, at);
        table[slot(h)] = at;
        at += 1;
        h = next(h, at);
        table[slot(h)] = at;
        at += 1;
    }
    if out.bytes.len() + 3 > max_len {
        return None;
    }
    for &byte in &input[at..] {
        out.literal(byte);
    }
    out.close();
    (out.bytes.len() <= max_len).then_some(out.bytes)
}

/// The compressed stream being written, with its open literal run.
struct Output {
    bytes: Vec<u8>,
    /// Where the open run's control byte is.
    run: usize,
    /// How many bytes the open run holds.
    lit: usize,
}

impl Output {
    /// An output with a run open.
    fn new(capacity: usize) -> Self {
        let mut out = Output {
            bytes: Vec::with_capacity(capacity),
            run: 0,
            lit: 0,
        };
        out.open();
        out
    }

    /// Opens a run: its control byte is reserved, set when it closes.
    fn open(&mut self) {
        self.lit = 0;
        self.run = self.bytes.len();
        self.bytes.push(0);
    }

    /// One more byte in the open run; a full run closes and a new opens.
    fn literal(&mut self, byte: u8) {
        self.lit += 1;
        self.bytes.push(byte);
        if self.lit == MAX_LITERAL {
            self.close();
            self.open();
        }
    }

    /// Closes the open run, or takes back its control byte if it is empty.
    fn close(&mut self) {
        if self.lit == 0 {
            self.bytes.pop();
        } else {
            self.bytes[self.run] = (self.lit - 1) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{compress, decompress};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn compress_round_trips(
            input in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..3000),
        ) {
            if let Some(c) = compress(&input, usize::MAX) {
                prop_assert_eq!(decompress(&c, input.len() as u64), Some(input));
            }
        }
    }

    #[test]
    fn repetitive_text_compresses() {
        let text = b"redis ".repeat(200);
        let c = compress(&text, text.len() - 4).expect("compressible");
        assert!(c.len() < 40, "{} bytes", c.len());
        assert_eq!(decompress(&c, text.len() as u64), Some(text.to_vec()));
        let long = vec![7u8; 100_000];
        let c = compress(&long, long.len()).expect("compressible");
        assert_eq!(decompress(&c, long.len() as u64), Some(long));
        assert_eq!(compress(b"abcdefghijklmnopqrstuvwxyz", 22), None);
    }

    #[test]
    fn literals_and_back_references() {
        // "aaaaaaaaaa": one literal 'a', then a reference one back, 9 long.
        assert_eq!(
            decompress(&[0x00, b'a', 0xe0, 0x00, 0x00], 10),
            Some(b"aaaaaaaaaa".to_vec())
        );
        assert_eq!(
            decompress(&[0x02, b'a', b'b', b'c'], 3),
            Some(b"abc".to_vec())
        );
    }

    #[test]
    fn lies_are_refused() {
        // Wrong length, either way.
        assert_eq!(decompress(&[0x02, b'a', b'b', b'c'], 4), None);
        assert_eq!(decompress(&[0x02, b'a', b'b', b'c'], 2), None);
        // A literal past the input's end.
        assert_eq!(decompress(&[0x05, b'a'], 6), None);
        // A reference before the output's start.
        assert_eq!(decompress(&[0x20, 0x05], 3), None);
        // A huge declared length allocates nothing big.
        assert_eq!(decompress(&[0x00, b'a'], u64::MAX), None);
        assert_eq!(decompress(&[], 0), Some(Vec::new()));
        assert_eq!(decompress(&[], 1), None);
    }
}
