//! LZF decompression (the format of liblzf's `lzf_d.c`, which Redis uses
//! for strings in RDB payloads and for compressed quicklist nodes).
//!
//! The compressed stream is a sequence of literal runs (a control byte
//! below 32: that many plus one bytes follow, copied as they are) and back
//! references (a control byte of 32 or more: its top 3 bits are a length,
//! extended by a second byte when all set, its low 5 bits and the next
//! byte an offset back into the output). Hand-written rather than a crate:
//! it is thirty lines, and every index here is checked.

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

#[cfg(test)]
mod tests {
    use super::decompress;

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
