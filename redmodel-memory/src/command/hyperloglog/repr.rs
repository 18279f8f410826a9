//! Redis's HyperLogLog value, byte for byte (`hyperloglog.c` of 7.0.15).
//!
//! An HLL is an ordinary string, so a client can GET it, SET it back, or
//! copy it to another server. The layout is Redis's:
//!
//! - a 16-byte header: the magic `HYLL`, the encoding (0 dense, 1 sparse),
//!   three unused bytes, and the last cardinality computed, little-endian,
//!   whose top bit set means "stale, recompute";
//! - dense: 16384 registers of 6 bits, packed from the low bits of each byte
//!   upwards (12288 bytes);
//! - sparse: a run-length code of opcodes, `00xxxxxx` (ZERO: 1 to 64 zero
//!   registers), `01xxxxxx yyyyyyyy` (XZERO: 1 to 16384 zero registers) and
//!   `1vvvvvxx` (VAL: 1 to 4 registers of value 1 to 32).
//!
//! The sparse encoding is edited the way Redis edits it, opcode by opcode
//! (splits, then merges of equal neighbours), because the exact bytes are
//! observable with GET. A corrupt sparse string is read the way Redis reads
//! it too, including its quirks: an XZERO cut short at the very end reads
//! the byte past the end, which in Redis is the string's NUL terminator
//! (here: [`Editor`] keeps that byte, see there); register counts are C
//! `int`s. Nothing here can panic, whatever the bytes.

use super::{Q, REGISTERS};

/// Header bytes before the registers.
pub(crate) const HEADER_LEN: usize = 16;
/// Bits per dense register.
const BITS: usize = 6;
/// The largest value a dense register holds.
const REGISTER_MAX: u32 = (1 << BITS) - 1;
/// The exact length of a dense HLL (`HLL_DENSE_SIZE`).
pub(crate) const DENSE_LEN: usize = HEADER_LEN + (REGISTERS * BITS).div_ceil(8);
/// Encoding byte values.
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// The byte holding the cache's validity bit (the cardinality's top byte).
const CACHE_FLAG_BYTE: usize = 15;
const CACHE_STALE: u8 = 0x80;
/// Sparse opcode limits.
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: i64 = 4;
const ZERO_MAX_LEN: i64 = 64;
const XZERO_MAX_LEN: i64 = 16384;
/// Redis's `HLL_ALPHA_INF`, 0.5 / ln 2.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// The two encodings a valid HLL has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Dense,
    Sparse,
}

impl Encoding {
    /// The name PFDEBUG ENCODING gives.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// A sparse HLL whose opcodes do not cover exactly the 16384 registers
/// (Redis's `INVALIDOBJ`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// Redis's `isHLLObjectOrReply` on a string: the header is there with its
/// magic and a known encoding, and a dense one has exactly its length.
/// The sparse opcodes are not checked here (Redis checks them as it reads).
pub(crate) fn encoding_of(bytes: &[u8]) -> Option<Encoding> {
    if bytes.len() < HEADER_LEN || &bytes[..4] != b"HYLL" {
        return None;
    }
    match bytes[4] {
        DENSE if bytes.len() == DENSE_LEN => Some(Encoding::Dense),
        SPARSE => Some(Encoding::Sparse),
        _ => None,
    }
}

/// A new, empty HLL as Redis creates it (`createHLLObject`): sparse, one
/// XZERO covering every register, cardinality 0 and valid.
pub(crate) fn new_sparse() -> Vec<u8> {
    let mut s = Vec::with_capacity(HEADER_LEN + 2);
    s.extend_from_slice(b"HYLL");
    s.push(SPARSE);
    s.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS as i64;
    while left > 0 {
        let run = left.min(XZERO_MAX_LEN);
        s.extend_from_slice(&xzero(run));
        left -= run;
    }
    s
}

/// The cached cardinality, if it is valid.
pub(crate) fn cached_count(bytes: &[u8]) -> Option<u64> {
    let card: [u8; 8] = bytes.get(8..HEADER_LEN)?.try_into().ok()?;
    (card[7] & CACHE_STALE == 0).then(|| u64::from_le_bytes(card))
}

// ---------------------------------------------------------------------------
// Opcodes and registers
// ---------------------------------------------------------------------------

fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}

fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}

fn zero_len(b: u8) -> i64 {
    i64::from(b & 0x3f) + 1
}

fn xzero_len(hi: u8, lo: u8) -> i64 {
    ((i64::from(hi & 0x3f) << 8) | i64::from(lo)) + 1
}

fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

fn val_len(b: u8) -> i64 {
    i64::from(b & 0x3) + 1
}

/// A VAL opcode: `value` in 1..=32 for `len` in 1..=4 registers.
fn val(value: u8, len: i64) -> u8 {
    (((value.wrapping_sub(1)) << 2) | ((len - 1) as u8 & 0x3)) | 0x80
}

/// A ZERO opcode for `len` in 1..=64 registers.
fn zero(len: i64) -> u8 {
    (len - 1) as u8 & 0x3f
}

/// An XZERO opcode for `len` in 1..=16384 registers.
fn xzero(len: i64) -> [u8; 2] {
    let l = len - 1;
    [((l >> 8) as u8 & 0x3f) | 0x40, (l & 0xff) as u8]
}

/// One decoded sparse opcode.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// ZERO or XZERO: this many zero registers.
    Zeros(i64),
    /// VAL: `run` registers of `value`.
    Val { value: u8, run: i64 },
}

/// The opcodes of a sparse HLL's content `bytes` (header included), with
/// `past_end` the byte Redis would read after the last one (an XZERO cut
/// short at the very end takes it as its second byte).
fn ops(bytes: &[u8], past_end: u8) -> impl Iterator<Item = Op> + '_ {
    let mut pos = HEADER_LEN;
    std::iter::from_fn(move || {
        let &b = bytes.get(pos)?;
        if is_zero(b) {
            pos += 1;
            Some(Op::Zeros(zero_len(b)))
        } else if is_xzero(b) {
            let lo = bytes.get(pos + 1).copied().unwrap_or(past_end);
            pos += 2;
            Some(Op::Zeros(xzero_len(b, lo)))
        } else {
            pos += 1;
            Some(Op::Val {
                value: val_value(b),
                run: val_len(b),
            })
        }
    })
}

/// The register `index` of dense `registers` (`HLL_DENSE_GET_REGISTER`).
/// The byte after the last register is Redis's NUL terminator: it never
/// contributes, so it is not read.
fn get_register(registers: &[u8], index: usize) -> u8 {
    let byte = index * BITS / 8;
    let fb = (index * BITS) & 7;
    let b0 = u32::from(registers.get(byte).copied().unwrap_or(0));
    let b1 = u32::from(registers.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX) as u8
}

/// Sets the register `index` of dense `registers` to `value` (at most 63;
/// `HLL_DENSE_SET_REGISTER`). A write to the byte after the last register
/// changes nothing in Redis either, so it is skipped.
fn set_register(registers: &mut [u8], index: usize, value: u8) {
    let byte = index * BITS / 8;
    let fb = (index * BITS) & 7;
    let v = u32::from(value);
    if let Some(b) = registers.get_mut(byte) {
        *b &= !((REGISTER_MAX << fb) as u8);
        *b |= (v << fb) as u8;
    }
    if let Some(b) = registers.get_mut(byte + 1) {
        *b &= !((REGISTER_MAX >> (8 - fb)) as u8);
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// `hllDenseSet`: raises register `index` to `count`; whether it changed.
fn dense_set(registers: &mut [u8], index: usize, count: u8) -> bool {
    if count > get_register(registers, index) {
        set_register(registers, index, count);
        true
    } else {
        false
    }
}

/// `hllSparseToDense`: the dense HLL with the registers of the sparse
/// `bytes` (its header copied, encoding changed), or [`Corrupt`] if the
/// opcodes do not cover exactly 16384 registers. Like Redis, counts in a C
/// `int` and stops at a VAL that would run past the last register.
fn sparse_to_dense(bytes: &[u8], past_end: u8) -> Result<Vec<u8>, Corrupt> {
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..HEADER_LEN].copy_from_slice(&bytes[..HEADER_LEN]);
    dense[4] = DENSE;
    let registers = &mut dense[HEADER_LEN..];
    let mut idx: i32 = 0;
    for op in ops(bytes, past_end) {
        match op {
            Op::Zeros(run) => idx = idx.wrapping_add(run as i32),
            Op::Val { value, run } => {
                if i64::from(idx) + run > REGISTERS as i64 {
                    break;
                }
                for _ in 0..run {
                    // A negative index (an `int` wrapped by absurd runs)
                    // writes outside the string in Redis; not here.
                    if let Ok(i) = usize::try_from(idx) {
                        set_register(registers, i, value);
                    }
                    idx = idx.wrapping_add(1);
                }
            }
        }
    }
    if idx != REGISTERS as i32 {
        return Err(Corrupt);
    }
    Ok(dense)
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

/// How many registers hold each value (`reghisto`), in C `int`s.
type Histogram = [i32; 64];

/// The register histogram of the valid HLL `bytes`, [`Corrupt`] for a
/// sparse one whose opcodes do not cover exactly the 16384 registers.
fn histogram(bytes: &[u8], encoding: Encoding, past_end: u8) -> Result<Histogram, Corrupt> {
    let mut histo: Histogram = [0; 64];
    match encoding {
        Encoding::Dense => {
            for_each_register(bytes, |_, r| histo[usize::from(r)] += 1);
        }
        Encoding::Sparse => {
            // `hllSparseRegHisto`: no bound check while summing, only at
            // the end.
            let mut idx: i32 = 0;
            for op in ops(bytes, past_end) {
                let (value, run) = match op {
                    Op::Zeros(run) => (0, run as i32),
                    Op::Val { value, run } => (usize::from(value), run as i32),
                };
                idx = idx.wrapping_add(run);
                histo[value] = histo[value].wrapping_add(run);
            }
            if idx != REGISTERS as i32 {
                return Err(Corrupt);
            }
        }
    }
    Ok(histo)
}

/// `hllSigma` (Ertl, arXiv:1702.01284).
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    // The series converges (or reaches infinity) in well under 2000 steps
    // for every histogram; the bound only guards the loop.
    for _ in 0..2000 {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            break;
        }
    }
    z
}

/// `hllTau` (Ertl, arXiv:1702.01284). Redis writes `pow(1 - x, 2)`, which
/// the C compiler turns into the product below.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    for _ in 0..2000 {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if before == z {
            break;
        }
    }
    z / 3.0
}

/// The cardinality estimate of a register histogram (`hllCount`): Ertl's
/// improved estimator, as Redis 7.0 computes it, in doubles, rounded by
/// `llroundl` and converted to `uint64_t` the way x86-64 does: an estimate
/// past the range of a `long long` (only hand-made registers give one)
/// becomes `LLONG_MIN`'s bit pattern, 2^63.
fn estimate(histo: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - f64::from(histo[q + 1])) / m);
    for j in (1..=q).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    let rounded = (ALPHA_INF * m * m / z).round();
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if rounded > -LIMIT && rounded < LIMIT {
        rounded as i64 as u64
    } else {
        1 << 63
    }
}

/// The cardinality of the valid HLL `bytes`, computed afresh.
pub(crate) fn count(bytes: &[u8], encoding: Encoding) -> Result<u64, Corrupt> {
    histogram(bytes, encoding, 0).map(|h| estimate(&h))
}

/// One byte per register: the union PFCOUNT of several keys and PFMERGE
/// build (`max[]`).
pub(crate) type Registers = [u8; REGISTERS];

/// The cardinality of registers held one per byte (PFCOUNT of several
/// keys, Redis's internal `HLL_RAW` encoding).
pub(crate) fn count_registers(max: &Registers) -> u64 {
    let mut histo: Histogram = [0; 64];
    // Eight zero registers at a time, as `hllRawRegHisto` (most are zero
    // in a small union, and this runs unoptimized in tests).
    for word in max.chunks_exact(8) {
        if word == [0u8; 8] {
            histo[0] += 8;
            continue;
        }
        for &r in word {
            // Registers come from 6-bit fields: always below 64.
            histo[usize::from(r & 63)] += 1;
        }
    }
    estimate(&histo)
}

/// `hllMerge`: raises each of `max` to the matching register of the valid
/// HLL `bytes`. [`Corrupt`] for a sparse HLL that does not cover exactly
/// the 16384 registers (what was merged before the fault stays merged, as
/// in Redis; callers then drop `max`).
pub(crate) fn merge_into(
    max: &mut Registers,
    bytes: &[u8],
    encoding: Encoding,
) -> Result<(), Corrupt> {
    match encoding {
        Encoding::Dense => {
            // Four registers per three bytes, written out (see
            // `for_each_register`): a union of dense HLLs reads 16384
            // registers per key.
            let registers = &bytes[HEADER_LEN.min(bytes.len())..];
            for (b, m) in registers.chunks_exact(3).zip(max.chunks_exact_mut(4)) {
                let r = [
                    b[0] & 63,
                    ((b[0] >> 6) | (b[1] << 2)) & 63,
                    ((b[1] >> 4) | (b[2] << 4)) & 63,
                    b[2] >> 2,
                ];
                for k in 0..4 {
                    if r[k] > m[k] {
                        m[k] = r[k];
                    }
                }
            }
        }
        Encoding::Sparse => {
            // The opcodes decoded in place (the loop of `ops`, without its
            // iterator: this is PFCOUNT's hot path for several keys).
            let mut i: i32 = 0;
            let mut pos = HEADER_LEN;
            while let Some(&b) = bytes.get(pos) {
                if b & 0xc0 == 0 {
                    i = i.wrapping_add(i32::from(b & 0x3f) + 1);
                    pos += 1;
                } else if b & 0x80 == 0 {
                    let lo = bytes.get(pos + 1).copied().unwrap_or(0);
                    i = i.wrapping_add(((i32::from(b & 0x3f) << 8) | i32::from(lo)) + 1);
                    pos += 2;
                } else {
                    let (value, run) = (val_value(b), val_len(b));
                    if i64::from(i) + run > REGISTERS as i64 {
                        break;
                    }
                    for _ in 0..run {
                        if let Some(m) = usize::try_from(i).ok().and_then(|i| max.get_mut(i)) {
                            if value > *m {
                                *m = value;
                            }
                        }
                        i = i.wrapping_add(1);
                    }
                    pos += 1;
                }
            }
            if i != REGISTERS as i32 {
                return Err(Corrupt);
            }
        }
    }
    Ok(())
}

/// The registers of a dense HLL, one per entry (PFDEBUG GETREG).
pub(crate) fn dense_registers(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; REGISTERS];
    for_each_register(bytes, |i, r| out[i] = r);
    out
}

/// Calls `f(index, value)` for every register of the dense HLL `bytes`
/// (of [`DENSE_LEN`] bytes), in order: four registers per three bytes, as
/// Redis's unrolled `hllDenseRegHisto` reads them, which is the same as
/// reading them one by one.
fn for_each_register(bytes: &[u8], mut f: impl FnMut(usize, u8)) {
    let registers = &bytes[HEADER_LEN.min(bytes.len())..];
    for (group, b) in registers.chunks_exact(3).take(REGISTERS / 4).enumerate() {
        let i = group * 4;
        f(i, b[0] & 63);
        f(i + 1, ((b[0] >> 6) | (b[1] << 2)) & 63);
        f(i + 2, ((b[1] >> 4) | (b[2] << 4)) & 63);
        f(i + 3, b[2] >> 2);
    }
}

/// The opcodes of a sparse HLL as PFDEBUG DECODE writes them:
/// `z:N` (ZERO), `Z:N` (XZERO), `v:VALUE,N` (VAL), separated by spaces.
pub(crate) fn decode(bytes: &[u8]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut pos = HEADER_LEN;
    while let Some(&b) = bytes.get(pos) {
        if is_zero(b) {
            out.push(format!("z:{}", zero_len(b)));
            pos += 1;
        } else if is_xzero(b) {
            let lo = bytes.get(pos + 1).copied().unwrap_or(0);
            out.push(format!("Z:{}", xzero_len(b, lo)));
            pos += 2;
        } else {
            out.push(format!("v:{},{}", val_value(b), val_len(b)));
            pos += 1;
        }
    }
    out.join(" ")
}

// ---------------------------------------------------------------------------
// Editing in place
// ---------------------------------------------------------------------------

/// Bytes kept past the content while editing: the terminator and room for
/// the longest opcode split (5 bytes written from the last opcode).
const SLACK: usize = 8;

/// A valid HLL string being edited in place, as Redis edits its `sds`
/// string: `len` bytes of content, then the byte past the end that a
/// corrupt sparse HLL makes Redis read (its NUL terminator, or what an
/// opcode split cut short at the very end wrote over it), then room.
/// Dropping the editor leaves the string at its content.
///
/// One divergence remains: Redis keeps the byte past the end from one
/// command to the next, the engine only within a command (the string is
/// stored without it). Only a hand-made sparse HLL whose last XZERO lacks
/// its second byte can tell.
pub(crate) struct Editor<'a> {
    buf: &'a mut Vec<u8>,
    len: usize,
    /// Opcodes already found in the sparse code, so that the next search
    /// for a register starts near it rather than at the first opcode.
    marks: Vec<Mark>,
}

/// A sparse opcode the editor knows: where it starts, the first register
/// it covers, and where the opcode before it starts. Redis walks from the
/// first opcode every time; starting from a mark whose `first` is at most
/// the register sought reaches the same opcode with the same predecessor,
/// since every opcode before the mark covers registers below it.
#[derive(Debug, Clone, Copy)]
struct Mark {
    offset: usize,
    first: i64,
    prev: Option<usize>,
}

/// Opcodes walked between two marks.
const MARK_EVERY: u32 = 16;
/// Bytes past the end of a replaced opcode that an edit may still rewrite
/// (its split sequence grows it by at most 3, and the merges that follow
/// read at most 5 opcodes from the one before it).
const EDIT_REACH: usize = 16;

impl Drop for Editor<'_> {
    fn drop(&mut self) {
        self.buf.truncate(self.len);
    }
}

impl<'a> Editor<'a> {
    /// Edits `buf`, which must hold a valid HLL ([`encoding_of`]).
    pub(crate) fn open(buf: &'a mut Vec<u8>) -> Editor<'a> {
        let len = buf.len();
        buf.resize(len + SLACK, 0);
        Editor {
            buf,
            len,
            marks: Vec::new(),
        }
    }

    /// The current content.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn at(&self, i: usize) -> u8 {
        self.buf.get(i).copied().unwrap_or(0)
    }

    fn put(&mut self, i: usize, b: u8) {
        if i >= self.buf.len() {
            self.buf.resize(i + SLACK, 0);
        }
        self.buf[i] = b;
    }

    /// `sdsIncrLen`: moves the end and writes the terminator there.
    fn grow_by(&mut self, delta: i64) {
        self.len = (self.len as i64 + delta).max(0) as usize;
        self.put(self.len, 0);
    }

    /// `memmove` inside the buffer.
    fn move_bytes(&mut self, from: usize, to: usize, n: usize) {
        let need = from.max(to) + n + 1;
        if need > self.buf.len() {
            self.buf.resize(need + SLACK, 0);
        }
        self.buf.copy_within(from..from + n, to);
    }

    pub(crate) fn encoding(&self) -> Encoding {
        if self.at(4) == DENSE {
            Encoding::Dense
        } else {
            Encoding::Sparse
        }
    }

    /// Marks the cached cardinality stale (`HLL_INVALIDATE_CACHE`).
    pub(crate) fn invalidate_cache(&mut self) {
        let b = self.at(CACHE_FLAG_BYTE) | CACHE_STALE;
        self.put(CACHE_FLAG_BYTE, b);
    }

    /// Stores a freshly computed cardinality in the header.
    pub(crate) fn set_cached_count(&mut self, card: u64) {
        for (i, b) in card.to_le_bytes().into_iter().enumerate() {
            self.put(8 + i, b);
        }
    }

    /// Converts a sparse HLL to dense; whether it converted. On a corrupt
    /// one, nothing changes.
    pub(crate) fn make_dense(&mut self) -> Result<bool, Corrupt> {
        if self.encoding() == Encoding::Dense {
            return Ok(false);
        }
        let dense = sparse_to_dense(self.bytes(), self.at(self.len))?;
        self.marks.clear();
        self.buf.clear();
        self.buf.extend_from_slice(&dense);
        self.len = dense.len();
        self.buf.resize(self.len + SLACK, 0);
        Ok(true)
    }

    /// Writes register `index` of a dense HLL, whatever it held
    /// (PFSELFTEST's register test).
    pub(crate) fn put_register(&mut self, index: usize, value: u8) {
        let end = self.len;
        set_register(&mut self.buf[HEADER_LEN.min(end)..end], index, value);
    }

    /// `hllAdd`: offers `element` to its register; whether the register
    /// rose. A sparse HLL may turn dense on the way.
    pub(crate) fn add(&mut self, element: &[u8], sparse_max: u64) -> Result<bool, Corrupt> {
        let (index, count) = super::hash::register_of(element);
        self.set(index, count, sparse_max)
    }

    /// Raises register `index` to `count` in either encoding; whether it
    /// rose.
    pub(crate) fn set(
        &mut self,
        index: usize,
        count: u8,
        sparse_max: u64,
    ) -> Result<bool, Corrupt> {
        match self.encoding() {
            Encoding::Dense => {
                let end = self.len;
                let registers = &mut self.buf[HEADER_LEN.min(end)..end];
                Ok(dense_set(registers, index, count))
            }
            Encoding::Sparse => self.sparse_set(index, count, sparse_max),
        }
    }

    /// `hllSparseSet`, step by step: find the opcode covering `index`,
    /// replace it by the split sequence (at most 5 bytes), merge equal VAL
    /// neighbours, mark the cache stale. Turns dense when the value does
    /// not fit a VAL opcode, or when the string would grow past
    /// `sparse_max` (`hll-sparse-max-bytes`).
    fn sparse_set(&mut self, index: usize, count: u8, sparse_max: u64) -> Result<bool, Corrupt> {
        if count > VAL_MAX_VALUE {
            return self.promote(index, count);
        }
        let index = index as i64;
        let start = HEADER_LEN;
        let mut end = self.len;

        // Step 1: the opcode at `p` covers registers first..first+span.
        let (p, first, span, prev) = self.find_covering(index, end);
        if span == 0 || p >= end {
            return Err(Corrupt);
        }
        let b = self.at(p);
        let next = if is_xzero(b) { p + 2 } else { p + 1 };
        let next = (next < end).then_some(next);
        let (zero_op, xzero_op) = (is_zero(b), is_xzero(b));
        let runlen = if zero_op {
            zero_len(b)
        } else if xzero_op {
            xzero_len(b, self.at(p + 1))
        } else {
            val_len(b)
        };

        let (edited_from, edited_to) = (prev.unwrap_or(start), p + if xzero_op { 2 } else { 1 });
        let old_len = self.len;

        // Step 2: the trivial cases, then the split sequence.
        let trivial = if !zero_op && !xzero_op {
            if val_value(b) >= count {
                return Ok(false);
            }
            runlen == 1
        } else {
            zero_op && runlen == 1
        };
        if trivial {
            self.put(p, val(count, 1));
        } else {
            let last = first + span - 1;
            let seq = split_sequence(b, count, index, first, last);

            // Step 3: put the sequence in place of the opcode.
            let oldlen: i64 = if xzero_op { 2 } else { 1 };
            let delta = seq.len() as i64 - oldlen;
            if delta > 0 && (self.len as u64).saturating_add(delta as u64) > sparse_max {
                return self.promote(index as usize, count);
            }
            self.replace_opcode(p, next, end, &seq, delta);
            end = (end as i64 + delta) as usize;
        }

        // Step 4: merge adjacent VAL opcodes of equal value, scanning up
        // to 5 opcodes from the one before the change.
        self.merge_equal_vals(prev.unwrap_or(start), end);
        self.invalidate_cache();
        self.shift_marks(
            edited_from,
            edited_to + EDIT_REACH,
            self.len as i64 - old_len as i64,
        );
        Ok(true)
    }

    /// `hllSparseSet`'s walk to the opcode covering register `index`:
    /// `(offset, first register, span, previous opcode)`, a span of 0 if
    /// there is none. Starts from the nearest mark and leaves new marks on
    /// the way. The hot loop of a PFADD: written out plainly, as it runs
    /// for every element on strings of up to `hll-sparse-max-bytes`.
    fn find_covering(&mut self, index: i64, end: usize) -> (usize, i64, i64, Option<usize>) {
        let start = HEADER_LEN;
        let known = self.marks.partition_point(|m| m.first <= index);
        let (mut p, mut first, mut prev) = match known.checked_sub(1) {
            Some(i) => {
                let m = self.marks[i];
                (m.offset, m.first, m.prev)
            }
            None => (start, 0, None),
        };
        let mut span: i64 = 0;
        // New marks go in order among the old ones: `insert_at` is the
        // place of the first mark past `p`, at `next_mark`.
        let mut insert_at = known;
        let mark_offset = |marks: &[Mark], i: usize| marks.get(i).map_or(usize::MAX, |m| m.offset);
        let mut next_mark = mark_offset(&self.marks, insert_at);
        let mut walked = 0;
        let code = &self.buf[..end.min(self.buf.len())];
        while let Some(&b) = code.get(p) {
            let oplen;
            if b & 0xc0 == 0 {
                span = i64::from(b & 0x3f) + 1;
                oplen = 1;
            } else if b & 0x80 != 0 {
                span = i64::from(b & 0x3) + 1;
                oplen = 1;
            } else {
                // An XZERO cut short at the end reads the byte past it.
                let lo = self.buf.get(p + 1).copied().unwrap_or(0);
                span = ((i64::from(b & 0x3f) << 8) | i64::from(lo)) + 1;
                oplen = 2;
            }
            if index < first + span {
                break;
            }
            prev = Some(p);
            p += oplen;
            first += span;
            walked += 1;
            if p == next_mark {
                insert_at += 1;
                next_mark = mark_offset(&self.marks, insert_at);
                walked = 0;
            } else if walked >= MARK_EVERY && p < end {
                self.marks.insert(
                    insert_at,
                    Mark {
                        offset: p,
                        first,
                        prev,
                    },
                );
                insert_at += 1;
                walked = 0;
            }
        }
        (p, first, span, prev)
    }

    /// Puts `seq` in place of the opcode at `p`, moving what follows it
    /// (from `next`, up to `end`) by `delta` bytes.
    fn replace_opcode(
        &mut self,
        p: usize,
        next: Option<usize>,
        end: usize,
        seq: &[u8],
        delta: i64,
    ) {
        if delta != 0 {
            if let Some(next) = next {
                let to = (next as i64 + delta) as usize;
                self.move_bytes(next, to, end - next);
            }
        }
        self.grow_by(delta);
        for (i, &byte) in seq.iter().enumerate() {
            self.put(p + i, byte);
        }
    }

    /// Merges adjacent VAL opcodes of equal value, scanning up to 5
    /// opcodes from `p` (the code ending at `end`).
    fn merge_equal_vals(&mut self, mut p: usize, mut end: usize) {
        let mut scan = 5;
        while p < end && scan > 0 {
            scan -= 1;
            let b = self.at(p);
            if is_xzero(b) {
                p += 2;
                continue;
            }
            if is_zero(b) {
                p += 1;
                continue;
            }
            let b1 = self.at(p + 1);
            if p + 1 < end && is_val(b1) && val_value(b) == val_value(b1) {
                let len = val_len(b) + val_len(b1);
                if len <= VAL_MAX_LEN {
                    self.put(p + 1, val(val_value(b), len));
                    self.move_bytes(p + 1, p, end - p);
                    self.grow_by(-1);
                    end -= 1;
                    continue;
                }
            }
            p += 1;
        }
    }

    /// Keeps the marks valid after an edit that rewrote the bytes from
    /// `from` to `to` (in the old layout) and moved what follows by
    /// `delta`: marks before are kept, marks inside dropped, marks after
    /// moved.
    fn shift_marks(&mut self, from: usize, to: usize, delta: i64) {
        self.marks.retain_mut(|m| {
            let before = m.offset < from;
            let after = m.offset >= to && m.prev.is_some_and(|p| p >= to);
            if after {
                m.offset = (m.offset as i64 + delta) as usize;
                m.prev = m.prev.map(|p| (p as i64 + delta) as usize);
            }
            before || after
        });
    }

    /// The promotion path of `hllSparseSet`: dense, then the register set
    /// there (it always rises: a sparse register is at most 32, or was
    /// found below `count`).
    fn promote(&mut self, index: usize, count: u8) -> Result<bool, Corrupt> {
        self.make_dense()?;
        let end = self.len;
        let registers = &mut self.buf[HEADER_LEN.min(end)..end];
        Ok(dense_set(registers, index, count))
    }
}

/// The opcodes that replace opcode `b` (covering registers `first` to
/// `last`) once register `index` is `count`: what was before and after it
/// kept, as zeros or as the VAL's value.
fn split_sequence(b: u8, count: u8, index: i64, first: i64, last: i64) -> Vec<u8> {
    let (zero_op, xzero_op) = (is_zero(b), is_xzero(b));
    let mut seq: Vec<u8> = Vec::with_capacity(5);
    if zero_op || xzero_op {
        let zeros = |seq: &mut Vec<u8>, len: i64| {
            if len > ZERO_MAX_LEN {
                seq.extend_from_slice(&xzero(len));
            } else {
                seq.push(zero(len));
            }
        };
        if index != first {
            zeros(&mut seq, index - first);
        }
        seq.push(val(count, 1));
        if index != last {
            zeros(&mut seq, last - index);
        }
    } else {
        let current = val_value(b);
        if index != first {
            seq.push(val(current, index - first));
        }
        seq.push(val(count, 1));
        if index != last {
            seq.push(val(current, last - index));
        }
    }
    seq
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sparse_with(ops_bytes: &[u8]) -> Vec<u8> {
        let mut s = new_sparse();
        s.truncate(HEADER_LEN);
        s.extend_from_slice(ops_bytes);
        s
    }

    #[test]
    fn a_new_hll_is_one_xzero() {
        let s = new_sparse();
        assert_eq!(s.len(), 18);
        assert_eq!(&s[..5], b"HYLL\x01");
        assert_eq!(&s[16..], &[0x7f, 0xff]);
        assert_eq!(encoding_of(&s), Some(Encoding::Sparse));
        assert_eq!(count(&s, Encoding::Sparse), Ok(0));
        assert_eq!(cached_count(&s), Some(0));
        assert_eq!(decode(&s), "Z:16384");
    }

    #[test]
    fn validation() {
        let s = new_sparse();
        assert_eq!(encoding_of(&s[..15]), None);
        let mut bad = s.clone();
        bad[0] = b'h';
        assert_eq!(encoding_of(&bad), None);
        bad = s.clone();
        bad[4] = 2;
        assert_eq!(encoding_of(&bad), None);
        bad = s.clone();
        bad[4] = 0;
        assert_eq!(encoding_of(&bad), None);
        bad.resize(DENSE_LEN, 0);
        assert_eq!(encoding_of(&bad), Some(Encoding::Dense));
    }

    #[test]
    fn dense_registers_round_trip() {
        let mut dense = vec![0u8; DENSE_LEN];
        let regs = &mut dense[HEADER_LEN..];
        for i in 0..REGISTERS {
            set_register(regs, i, ((i * 7) % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(get_register(regs, i), ((i * 7) % 64) as u8, "{i}");
        }
        let unpacked = dense_registers(&dense);
        assert!((0..REGISTERS).all(|i| unpacked[i] == ((i * 7) % 64) as u8));
    }

    /// Splits and merges give Redis's opcodes (the example of the comment
    /// in `hyperloglog.c`).
    #[test]
    fn sparse_edits() {
        let mut s = new_sparse();
        {
            let mut e = Editor::open(&mut s);
            assert_eq!(e.set(1000, 2, 3000), Ok(true));
            assert_eq!(e.set(1020, 3, 3000), Ok(true));
            assert_eq!(e.set(1021, 3, 3000), Ok(true));
            assert_eq!(e.set(1021, 3, 3000), Ok(false));
        }
        assert_eq!(decode(&s), "Z:1000 v:2,1 z:19 v:3,2 Z:15362");
        assert_eq!(s[15] & 0x80, 0x80);
        let mut dense = s.clone();
        {
            let mut e = Editor::open(&mut dense);
            assert_eq!(e.make_dense(), Ok(true));
        }
        assert_eq!(dense.len(), DENSE_LEN);
        assert_eq!(count(&s, Encoding::Sparse), count(&dense, Encoding::Dense));
        assert_eq!(count(&s, Encoding::Sparse), Ok(3));
        // A value past 32 turns it dense.
        {
            let mut e = Editor::open(&mut s);
            assert_eq!(e.set(5, 40, 3000), Ok(true));
            assert_eq!(e.encoding(), Encoding::Dense);
        }
        assert_eq!(dense_registers(&s)[5], 40);
        assert_eq!(dense_registers(&s)[1021], 3);
    }

    #[test]
    fn sparse_max_bytes_promotes() {
        let mut s = new_sparse();
        let mut e = Editor::open(&mut s);
        // Each set in the middle of the XZERO grows the string.
        assert_eq!(e.set(100, 1, 21), Ok(true));
        assert_eq!(e.encoding(), Encoding::Sparse);
        assert_eq!(e.bytes().len(), 21);
        assert_eq!(e.set(200, 1, 21), Ok(true));
        assert_eq!(e.encoding(), Encoding::Dense);
    }

    /// The marks change nothing: one editor for many edits leaves the bytes
    /// a fresh editor per edit (Redis's walk from the first opcode) leaves.
    #[test]
    fn marks_match_a_walk_from_the_start() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..40 {
            let mut marked = new_sparse();
            let mut fresh = new_sparse();
            // Some rounds crowd a few registers, for VAL runs and merges.
            let spread = if round % 2 == 0 {
                REGISTERS as u64
            } else {
                300
            };
            let mut editor = Editor::open(&mut marked);
            for step in 0..3000 {
                let index = (next() % spread) as usize;
                let count = (next() % 32) as u8 + 1;
                let max = if round % 4 == 2 { 2000 } else { 100_000 };
                let a = editor.set(index, count, max);
                let b = Editor::open(&mut fresh).set(index, count, max);
                assert_eq!(a, b, "round {round} step {step}");
                assert_eq!(editor.bytes(), &fresh[..], "round {round} step {step}");
            }
            assert_eq!(
                editor.encoding(),
                if round % 4 == 2 {
                    Encoding::Dense
                } else {
                    Encoding::Sparse
                }
            );
        }
    }

    /// Hand-made dense registers beyond any real count: the estimate
    /// overflows `llroundl` and Redis answers `LLONG_MIN`'s bits (observed:
    /// PFCOUNT replies -9223372036854775808 for all registers at 63 or 50).
    #[test]
    fn estimates_past_a_long_long() {
        let mut histo: Histogram = [0; 64];
        histo[63] = REGISTERS as i32;
        assert_eq!(estimate(&histo), 1 << 63);
        histo[63] = 0;
        histo[50] = REGISTERS as i32;
        assert_eq!(estimate(&histo), 1 << 63);
        // Registers of 0b110011 / 0b001100 (bytes 0x33 and 0xcc) count
        // 96817625 on Redis.
        let mut dense = vec![0u8; DENSE_LEN];
        dense[..4].copy_from_slice(b"HYLL");
        dense[HEADER_LEN..].fill(0xcc);
        assert_eq!(count(&dense, Encoding::Dense), Ok(96_817_625));
        dense[HEADER_LEN..].fill(0x33);
        assert_eq!(count(&dense, Encoding::Dense), Ok(96_817_625));
    }

    /// Corrupt sparse strings: errors, never a panic.
    #[test]
    fn corrupt_sparse() {
        // Too few registers.
        let short = sparse_with(&[0x7f, 0xfe]);
        assert_eq!(count(&short, Encoding::Sparse), Err(Corrupt));
        let mut max: Registers = [0; REGISTERS];
        assert_eq!(merge_into(&mut max, &short, Encoding::Sparse), Err(Corrupt));
        // An XZERO cut short at the end reads a zero second byte: 16383
        // registers, then 1.
        let cut = sparse_with(&[0x7f, 0xfe, 0x40]);
        assert_eq!(count(&cut, Encoding::Sparse), Ok(0));
        let mut c = cut.clone();
        {
            let mut e = Editor::open(&mut c);
            // The register in the cut XZERO: the VAL lands past the end.
            assert_eq!(e.set(16383, 1, 3000), Ok(true));
        }
        assert_eq!(c.len(), 18);
        assert_eq!(count(&c, Encoding::Sparse), Err(Corrupt));
        // Arbitrary bytes never panic.
        for seed in 0u32..2000 {
            let mut bytes = new_sparse();
            bytes.truncate(HEADER_LEN);
            let mut x = seed.wrapping_mul(2_654_435_761);
            for _ in 0..(seed % 40) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                bytes.push(x as u8);
            }
            let _ = count(&bytes, Encoding::Sparse);
            let _ = merge_into(&mut max, &bytes, Encoding::Sparse);
            let _ = decode(&bytes);
            let mut e = Editor::open(&mut bytes);
            for i in 0..20 {
                let _ = e.set((x as usize + i * 977) % REGISTERS, (i % 40) as u8 + 1, 40);
            }
            let _ = e.make_dense();
        }
    }
}
