//! Where an element lands in a HyperLogLog: Redis's 64-bit MurmurHash2
//! (`MurmurHash64A`, read little-endian whatever the machine, so that every
//! server hashes alike) with Redis's seed, split into a register index and
//! the length of the run of zeros that follows it (`hllPatLen`).
//!
//! The hash must be Redis's to the bit: an HLL made here and copied to a
//! real server (or the other way round) keeps counting the same elements
//! into the same registers.

use super::{P, Q, REGISTERS};

/// The seed `hllPatLen` hashes with.
const SEED: u64 = 0xadc8_3b19;

/// MurmurHash64A of `data` with `seed`, as `hyperloglog.c` computes it.
pub(crate) fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    // Redis passes the length as a C `int`: `len * m` in 64 bits.
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut word = [0u8; 8];
        word.copy_from_slice(block);
        let mut k = u64::from_le_bytes(word).wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `element` belongs to and the value it offers it: one plus
/// the number of zero bits after the index bits (at most `Q + 1`, since a
/// sentinel bit ends the run).
pub(crate) fn register_of(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    // At most Q (50) trailing zeros: the count fits a u8.
    (index, rest.trailing_zeros() as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_stay_in_range() {
        for i in 0..10_000u32 {
            let (index, count) = register_of(&i.to_le_bytes());
            assert!(index < REGISTERS);
            assert!((1..=Q as u8 + 1).contains(&count));
        }
    }

    /// Registers and values Redis 7.0.15 gives (PFDEBUG GETREG/DECODE),
    /// for every kind of length: empty, tail only, one block, block and tail.
    #[test]
    fn registers_are_redis_ones() {
        for (element, expected) in [
            (&b""[..], (5938, 2)),
            (b"a", (12711, 2)),
            (b"b", (15780, 1)),
            (b"c", (8436, 1)),
            (b"1234567", (10327, 3)),
            (b"12345678", (10579, 3)),
            (b"hello world!!", (5226, 1)),
            (b"123456789abcdef0", (11382, 1)),
            (b"e1674", (16383, 1)),
        ] {
            assert_eq!(register_of(element), expected, "{element:?}");
        }
    }
}
