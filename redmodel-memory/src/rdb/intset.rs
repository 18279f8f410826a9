//! Intsets (`intset.c`): the encoding of small sets of integers. A header
//! of two little-endian u32s, the width of each integer (2, 4 or 8 bytes)
//! and the count, then the integers, little endian, in ascending order.

/// The integers of the intset `blob`, checked as `intsetValidateIntegrity`
/// with `deep` checks them: a known width, a size that matches the count,
/// not empty, strictly ascending (so no duplicate).
pub(crate) fn members(blob: &[u8]) -> Option<Vec<i64>> {
    let header = blob.get(..8)?;
    let width = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let count = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let width = match width {
        2 | 4 | 8 => width as usize,
        _ => return None,
    };
    let body = &blob[8..];
    if count == 0 || (count as u64) * width as u64 != body.len() as u64 {
        return None;
    }
    let mut out: Vec<i64> = Vec::with_capacity(body.len() / width);
    for raw in body.chunks_exact(width) {
        let v = match width {
            2 => i64::from(i16::from_le_bytes([raw[0], raw[1]])),
            4 => i64::from(i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
            _ => i64::from_le_bytes(raw.try_into().ok()?),
        };
        if out.last().is_some_and(|&prev| v <= prev) {
            return None;
        }
        out.push(v);
    }
    Some(out)
}

/// The intset of `sorted` (ascending, distinct), in the narrowest width
/// that holds them all, as Redis grows it.
pub(crate) fn encode(sorted: &[i64]) -> Vec<u8> {
    let width: usize = if sorted.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if sorted.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * sorted.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    for v in sorted {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_each_width() {
        for set in [vec![-3, 1, 2], vec![-70000, 5], vec![i64::MIN, 0, i64::MAX]] {
            assert_eq!(members(&encode(&set)), Some(set));
        }
        assert_eq!(encode(&[1, 2])[0], 2);
        assert_eq!(encode(&[1, 70000])[0], 4);
    }

    #[test]
    fn corrupt_intsets_are_refused() {
        let good = encode(&[1, 2, 3]);
        assert!(members(&good[..good.len() - 1]).is_none());
        assert!(members(&encode(&[])).is_none());
        assert!(members(&encode(&[2, 1])).is_none());
        assert!(members(&encode(&[1, 1])).is_none());
        let mut width = good;
        width[0] = 3;
        assert!(members(&width).is_none());
    }
}
