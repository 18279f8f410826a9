//! Zipmaps (`zipmap.c`): how Redis 2.4 and earlier stored small hashes.
//! Redis 7 still loads them (as listpack hashes), and so does RESTORE.
//!
//! Layout: a count byte (254 or more: unknown), then for each pair the
//! field's length, the field, the value's length, a byte counting unused
//! bytes after the value, the value and those bytes; then 0xFF. A length
//! is one byte below 254, or 254 and a 4-byte little-endian length.

const END: u8 = 0xff;
const BIG_LEN: u8 = 254;

/// The field/value pairs of the zipmap `zm`, checked as
/// `zipmapValidateIntegrity` checks them (every length inside the buffer,
/// at least one pair, the count right unless unknown).
pub(crate) fn pairs(zm: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    if zm.len() < 2 || zm[zm.len() - 1] != END {
        return None;
    }
    let declared = zm[0];
    let mut at = 1;
    let mut out = Vec::new();
    // A length and the position after it.
    let length = |at: usize| -> Option<(usize, usize)> {
        match *zm.get(at)? {
            BIG_LEN => {
                let raw: [u8; 4] = zm.get(at + 1..at + 5)?.try_into().ok()?;
                Some((usize::try_from(u32::from_le_bytes(raw)).ok()?, at + 5))
            }
            END => None,
            n => Some((usize::from(n), at + 1)),
        }
    };
    while *zm.get(at)? != END {
        let (field_len, field_at) = length(at)?;
        let field = zm.get(field_at..field_at.checked_add(field_len)?)?;
        let (value_len, free_at) = length(field_at + field_len)?;
        let free = usize::from(*zm.get(free_at)?);
        let value_at = free_at + 1;
        let value = zm.get(value_at..value_at.checked_add(value_len)?)?;
        at = value_at + value_len + free;
        // The next length byte (or the end) must be inside the buffer.
        if at >= zm.len() {
            return None;
        }
        out.push((field, value));
    }
    if at != zm.len() - 1 || out.is_empty() {
        return None;
    }
    if declared < BIG_LEN && usize::from(declared) != out.len() {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_redis_own_example() {
        let zm = b"\x02\x03foo\x03\x00bar\x05hello\x05\x00world\xff";
        assert_eq!(
            pairs(zm),
            Some(vec![(&b"foo"[..], &b"bar"[..]), (b"hello", b"world")])
        );
        // Free bytes after a value are skipped.
        let zm = b"\x01\x01a\x01\x02bxx\xff";
        assert_eq!(pairs(zm), Some(vec![(&b"a"[..], &b"b"[..])]));
    }

    #[test]
    fn corrupt_zipmaps_are_refused() {
        let zm = b"\x02\x03foo\x03\x00bar\x05hello\x05\x00world\xff";
        for cut in 0..zm.len() {
            assert!(pairs(&zm[..cut]).is_none());
        }
        assert!(pairs(b"\x03\x03foo\x03\x00bar\xff").is_none());
        assert!(pairs(b"\x00\xff").is_none());
        assert!(pairs(b"\x01\x01a\x01\x09b\xff").is_none());
    }
}
