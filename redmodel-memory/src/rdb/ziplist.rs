//! Ziplists (`ziplist.c`): the compact encoding of lists, hashes and
//! sorted sets before Redis 7.0 replaced it with listpacks. Redis 7 still
//! loads them from older payloads, and so does RESTORE here; nothing
//! writes them any more.
//!
//! Layout: the total size (u32), the offset of the last element (u32),
//! the count (u16; 65535 when unknown), all little endian, the elements,
//! and a 0xFF terminator. Each element starts with the size of the one
//! before it (1 byte, or 0xFE and 4 bytes), then an encoding that holds a
//! string's length or names an integer type, then the data.

use super::Elem;

const HEADER: usize = 10;
const END: u8 = 0xff;
/// A previous-size byte of this value announces a 4-byte size.
const BIG_PREVLEN: u8 = 0xfe;

/// The elements of the ziplist `zl`, checked as `ziplistValidateIntegrity`
/// with `deep` checks them: sizes in the header match the buffer, every
/// element lies inside it and records its predecessor's size, the tail
/// offset points at the last element, and the count is right.
pub(crate) fn elements(zl: &[u8]) -> Option<Vec<Elem<'_>>> {
    if zl.len() < HEADER + 1 {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes([zl[i], zl[i + 1], zl[i + 2], zl[i + 3]]);
    let total = usize::try_from(u32_at(0)).ok()?;
    let tail = usize::try_from(u32_at(4)).ok()?;
    let count = u16::from_le_bytes([zl[8], zl[9]]);
    let end = zl.len() - 1;
    if total != zl.len() || zl[end] != END || tail > end {
        return None;
    }
    // Every element takes two bytes at least.
    let mut out = Vec::with_capacity(usize::from(count).min(zl.len() / 2));
    let mut at = HEADER;
    let mut prev_size = 0;
    let mut last = None;
    while at < end {
        let (elem, size, prevlen) = decode(&zl[at..end])?;
        if prevlen != prev_size {
            return None;
        }
        out.push(elem);
        last = Some(at);
        prev_size = size;
        at += size;
    }
    if last.is_some_and(|l| l != tail) || (count != u16::MAX && usize::from(count) != out.len()) {
        return None;
    }
    Some(out)
}

/// The element at the start of `bytes`, its whole size, and the size it
/// records for its predecessor.
fn decode(bytes: &[u8]) -> Option<(Elem<'_>, usize, usize)> {
    let (prevlen, mut at) = match *bytes.first()? {
        BIG_PREVLEN => {
            let raw: [u8; 4] = bytes.get(1..5)?.try_into().ok()?;
            (usize::try_from(u32::from_le_bytes(raw)).ok()?, 5)
        }
        END => return None,
        small => (usize::from(small), 1),
    };
    let enc = *bytes.get(at)?;
    at += 1;
    let take = |from: usize, n: usize| bytes.get(from..from.checked_add(n)?);
    // A little-endian two's complement integer of `n` bytes.
    let int = |from: usize, n: usize| -> Option<i64> {
        let raw = take(from, n)?;
        let v = raw
            .iter()
            .rev()
            .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
        let shift = 64 - 8 * n as u32;
        Some(((v << shift) as i64) >> shift)
    };
    let (elem, end) = match enc >> 6 {
        0 => {
            let len = usize::from(enc & 0x3f);
            (Elem::Str(take(at, len)?), at + len)
        }
        1 => {
            let len = usize::from(enc & 0x3f) << 8 | usize::from(*bytes.get(at)?);
            at += 1;
            (Elem::Str(take(at, len)?), at + len)
        }
        2 => {
            let raw: [u8; 4] = take(at, 4)?.try_into().ok()?;
            let len = usize::try_from(u32::from_be_bytes(raw)).ok()?;
            at += 4;
            (Elem::Str(take(at, len)?), at.checked_add(len)?)
        }
        _ => match enc {
            0xc0 => (Elem::Int(int(at, 2)?), at + 2),
            0xd0 => (Elem::Int(int(at, 4)?), at + 4),
            0xe0 => (Elem::Int(int(at, 8)?), at + 8),
            0xf0 => (Elem::Int(int(at, 3)?), at + 3),
            0xfe => (Elem::Int(int(at, 1)?), at + 1),
            0xf1..=0xfd => (Elem::Int(i64::from(enc & 0x0f) - 1), at),
            _ => return None,
        },
    };
    Some((elem, end, prevlen))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a ziplist of already encoded entries (encoding and data),
    /// as Redis 6 would lay them out.
    fn ziplist(entries: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut prev = 0usize;
        let mut tail = HEADER;
        for e in entries {
            tail = HEADER + body.len();
            if prev < 254 {
                body.push(prev as u8);
            } else {
                body.push(BIG_PREVLEN);
                body.extend_from_slice(&(prev as u32).to_le_bytes());
            }
            body.extend_from_slice(e);
            prev = if prev < 254 { 1 } else { 5 } + e.len();
        }
        let total = HEADER + body.len() + 1;
        let mut zl = Vec::new();
        zl.extend_from_slice(&(total as u32).to_le_bytes());
        zl.extend_from_slice(&(tail as u32).to_le_bytes());
        zl.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(END);
        zl
    }

    #[test]
    fn every_encoding_decodes() {
        let long = [&[0x40u8, 100][..], &[b'z'; 100]].concat();
        let zl = ziplist(&[
            b"\x03abc",
            b"\xfe\x80",
            b"\xc0\x00\x80",
            b"\xf0\xff\xff\x7f",
            b"\xd0\x00\x00\x00\x80",
            b"\xe0\xff\xff\xff\xff\xff\xff\xff\x7f",
            b"\xf1",
            b"\xfd",
            &long,
        ]);
        let elems = elements(&zl).expect("valid ziplist");
        assert_eq!(
            elems,
            vec![
                Elem::Str(b"abc"),
                Elem::Int(-128),
                Elem::Int(-32768),
                Elem::Int(8388607),
                Elem::Int(-2147483648),
                Elem::Int(i64::MAX),
                Elem::Int(0),
                Elem::Int(12),
                Elem::Str(&[b'z'; 100]),
            ]
        );
    }

    #[test]
    fn corrupt_ziplists_are_refused() {
        let zl = ziplist(&[b"\x03abc", b"\xf5"]);
        assert!(elements(&zl).is_some());
        for cut in 0..zl.len() {
            assert!(elements(&zl[..cut]).is_none());
        }
        let mut bad_prev = zl.clone();
        bad_prev[HEADER + 5] = 3;
        assert!(elements(&bad_prev).is_none());
        let mut bad_tail = zl.clone();
        bad_tail[4] = 11;
        assert!(elements(&bad_tail).is_none());
        let mut bad_enc = zl;
        bad_enc[HEADER + 6] = 0xc1;
        assert!(elements(&bad_enc).is_none());
    }
}
