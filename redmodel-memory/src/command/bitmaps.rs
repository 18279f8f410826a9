//! Bitmap commands over string values, following Redis 7.0.15's
//! `bitops.c` step by step: SETBIT GETBIT BITCOUNT BITPOS BITOP, and
//! BITFIELD / BITFIELD_RO (in [`bitfield`]).
//!
//! Bit 0 is the most significant bit of the first byte. What a client can
//! observe and is easy to get wrong:
//! - the order of checks decides which error wins: SETBIT and GETBIT parse
//!   the offset before looking at the key, BITCOUNT and BITPOS look at the
//!   key before their range (a missing key answers 0, or BITPOS's -1 / 0,
//!   whatever follows), BITFIELD parses every operation first;
//! - an offset is refused when its byte would lie at or past
//!   `proto-max-bulk-len` (the string size limit SETRANGE obeys), so the
//!   largest string SETBIT makes is exactly that size;
//! - a written string is `raw` afterwards, even when nothing changed, and
//!   the key is marked modified (for WATCH) only when a bit or the length
//!   changed;
//! - BITPOS looking for a clear bit treats the right of the string as
//!   zeros unless an end was given.

use super::shared::string_length::check_string_length;
use super::{CmdResult, Ctx, Spec};
use crate::args::{int_arg, is, parse_i64};
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::encoding::History;
use crate::value::string::StringValue;
use crate::value::Value;

mod bitfield;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "setbit",
        arity: 4,
        handler: setbit,
    },
    Spec {
        name: "getbit",
        arity: 3,
        handler: getbit,
    },
    Spec {
        name: "bitcount",
        arity: -2,
        handler: bitcount,
    },
    Spec {
        name: "bitpos",
        arity: -3,
        handler: bitpos,
    },
    Spec {
        name: "bitop",
        arity: -4,
        handler: bitop,
    },
    Spec {
        name: "bitfield",
        arity: -2,
        handler: bitfield::bitfield,
    },
    Spec {
        name: "bitfield_ro",
        arity: -2,
        handler: bitfield::bitfield_ro,
    },
];

// ---------------------------------------------------------------------------
// Offsets and the string a bit command writes to
// ---------------------------------------------------------------------------

/// Redis's `getBitOffsetFromArgument`: a bit offset, refused if negative or
/// if its byte lies at or past `max_len` (`proto-max-bulk-len`). With
/// `width` (BITFIELD), `#N` means N fields of that width; like Redis's
/// `long long` product, the multiplication wraps, and only the result is
/// checked.
fn bit_offset(arg: &[u8], width: Option<u32>, max_len: u64) -> Result<u64, CmdError> {
    let error = || CmdError::err("bit offset is not an integer or out of range");
    let (digits, width) = match (arg.split_first(), width) {
        (Some((b'#', rest)), Some(w)) => (rest, Some(w)),
        _ => (arg, None),
    };
    let mut offset = parse_i64(digits).ok_or_else(error)?;
    if let Some(w) = width {
        offset = offset.wrapping_mul(i64::from(w));
    }
    let offset = u64::try_from(offset).map_err(|_| error())?;
    // The byte holding the bit must fit a string of the largest size.
    check_string_length(offset >> 3, 1, max_len).map_err(|_| error())?;
    Ok(offset)
}

/// The configured largest string, which bounds every bit offset.
fn max_len(ctx: &mut Ctx<'_>) -> u64 {
    ctx.ks().limits().proto_max_bulk_len
}

/// Zero-pads `s` to at least `len` bytes. The allocation is fallible: an
/// offset is bounded by `proto-max-bulk-len`, but that can be configured
/// far beyond the machine's memory, where Redis would die; the engine
/// refuses the command instead.
fn grow_zeroed(s: &mut Vec<u8>, len: u64) -> Result<(), CmdError> {
    let oom = || CmdError::err("out of memory growing the string");
    let len = usize::try_from(len).map_err(|_| oom())?;
    if let Some(extra) = len.checked_sub(s.len()).filter(|&n| n > 0) {
        s.try_reserve_exact(extra).map_err(|_| oom())?;
        s.resize(len, 0);
    }
    Ok(())
}

/// Redis's `lookupStringForBitCommand`: the string at `key`, created or
/// zero-padded so that bit `max_bit` exists, handed to `edit` with whether
/// it was created or grown (a change in itself). WRONGTYPE for another
/// type, before anything changes. The string is `raw` afterwards, as Redis
/// unshares it whatever the edit does; marking the key modified is the
/// caller's business, as only it knows whether a bit changed.
fn edit_bits<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    max_bit: u64,
    edit: impl FnOnce(&mut Vec<u8>, bool) -> R,
) -> Result<R, CmdError> {
    let len = (max_bit >> 3) + 1;
    if let Some(entry) = ctx.entry(key) {
        if !matches!(entry.value, Value::Str(_)) {
            return Err(CmdError::WrongType);
        }
        entry.set_history(History::Converted);
        let Value::Str(s) = &mut entry.value else {
            return Err(CmdError::WrongType);
        };
        let s = s.make_mut();
        let old_len = s.len();
        grow_zeroed(s, len)?;
        let grown = s.len() != old_len;
        return Ok(edit(s, grown));
    }
    // A new key is added without signalling (Redis's `dbAdd`): BITFIELD
    // whose every write fails on overflow leaves it, unsignalled.
    let mut s = Vec::new();
    grow_zeroed(&mut s, len)?;
    let out = edit(&mut s, true);
    *ctx.write_or_create::<StringValue>(key)? = s.into();
    ctx.ks().set_history(key, History::Converted);
    Ok(out)
}

/// The byte holding bit `offset`, and the bit's mask within it.
fn locate(offset: u64) -> (usize, u8) {
    let byte = usize::try_from(offset >> 3).unwrap_or(usize::MAX);
    (byte, 0x80 >> (offset & 7))
}

// ---------------------------------------------------------------------------
// SETBIT and GETBIT
// ---------------------------------------------------------------------------

/// SETBIT key offset 0|1: the bit's previous value. The offset is checked
/// first, then the bit, then the key's type; the TTL is kept.
fn setbit(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let max = max_len(ctx);
    let offset = bit_offset(args[2], None, max)?;
    let on = match parse_i64(args[3]) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(CmdError::err("bit is not an integer or out of range")),
    };
    let (byte, mask) = locate(offset);
    let (was, changed) = edit_bits(ctx, key, offset, |s, grown| {
        let Some(b) = s.get_mut(byte) else {
            return (false, grown);
        };
        let was = *b & mask != 0;
        if on {
            *b |= mask;
        } else {
            *b &= !mask;
        }
        (was, grown || was != on)
    })?;
    if changed {
        ctx.modified(key);
        ctx.notify(class::STRING, "setbit", key);
    }
    Ok(reply::int(i64::from(was)))
}

/// GETBIT key offset: 0 past the end of the string or for a missing key.
fn getbit(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let max = max_len(ctx);
    let offset = bit_offset(args[2], None, max)?;
    let Some(s) = ctx.read::<StringValue>(args[1])? else {
        return Ok(reply::int(0));
    };
    let (byte, mask) = locate(offset);
    let set = s.get(byte).is_some_and(|b| b & mask != 0);
    Ok(reply::int(i64::from(set)))
}

// ---------------------------------------------------------------------------
// BITCOUNT and BITPOS
// ---------------------------------------------------------------------------

/// Reads the BYTE|BIT option of BITCOUNT and BITPOS: whether the range is
/// in bits.
fn range_unit(arg: Option<&&[u8]>) -> Result<bool, CmdError> {
    match arg {
        None => Ok(false),
        Some(a) if is(a, "bit") => Ok(true),
        Some(a) if is(a, "byte") => Ok(false),
        Some(_) => Err(CmdError::Syntax),
    }
}

/// The bits `first..=last` that the range `start..=end` selects in a
/// string of `len` bytes, counted in bits when `in_bits`, in bytes
/// otherwise; Redis's clamping (negative indexes from the end, the end cut
/// to the last unit). `None` when the range is empty.
fn bit_range(start: i64, end: i64, len: usize, in_bits: bool) -> Option<(u64, u64)> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let total = if in_bits { len.saturating_mul(8) } else { len };
    let from_end = |i: i64| if i < 0 { total.saturating_add(i) } else { i };
    let start = from_end(start).max(0);
    let end = from_end(end).max(0).min(total - 1);
    if start > end {
        return None;
    }
    let (start, end) = (start.unsigned_abs(), end.unsigned_abs());
    Some(if in_bits {
        (start, end)
    } else {
        (start * 8, end * 8 + 7)
    })
}

/// The bytes holding the bits `first..=last` of `s`, with the masks of the
/// bits of the first and last byte inside the range. The range lies in
/// `s`.
fn bit_span(s: &[u8], first: u64, last: u64) -> (&[u8], u8, u8) {
    let (from, _) = locate(first);
    let (to, _) = locate(last);
    let bytes = s.get(from..=to).unwrap_or(&[]);
    let head = 0xFF >> (first & 7);
    let tail = 0xFF << (7 - (last & 7));
    (bytes, head, tail)
}

/// The number of set bits among the bits `first..=last` of `s`.
fn count_ones(s: &[u8], first: u64, last: u64) -> u64 {
    let (bytes, head, tail) = bit_span(s, first, last);
    let Some((&lead, rest)) = bytes.split_first() else {
        return 0;
    };
    let Some((&trail, middle)) = rest.split_last() else {
        return u64::from((lead & head & tail).count_ones());
    };
    let mut words = middle.chunks_exact(8);
    let mut count: u64 = words
        .by_ref()
        .map(|w| {
            let word = w.try_into().map_or(0, u64::from_ne_bytes);
            u64::from(word.count_ones())
        })
        .sum();
    count += words
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum::<u64>();
    count + u64::from((lead & head).count_ones() + (trail & tail).count_ones())
}

/// The position of the first bit equal to `bit` among the bits
/// `first..=last` of `s`, if any.
fn find_bit(s: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
    let (bytes, head, tail) = bit_span(s, first, last);
    // Look for a set bit in the bytes as they are, or in their complement.
    let flip = if bit { 0 } else { 0xFF };
    let base = first & !7;
    let n = bytes.len();
    let at = |i: usize, b: u8| {
        let mut b = b ^ flip;
        if i == 0 {
            b &= head;
        }
        if i + 1 == n {
            b &= tail;
        }
        (b != 0).then(|| base + i as u64 * 8 + u64::from(b.leading_zeros()))
    };
    // The edges by themselves, the middle a word at a time.
    let &lead = bytes.first()?;
    if let Some(pos) = at(0, lead) {
        return Some(pos);
    }
    let middle = bytes.get(1..n.saturating_sub(1)).unwrap_or(&[]);
    let flip_word = u64::from_ne_bytes([flip; 8]);
    let mut i = 1;
    for w in middle.chunks(8) {
        if w.len() == 8 {
            let word = w.try_into().map_or(0, u64::from_be_bytes) ^ flip_word;
            if word == 0 {
                i += 8;
                continue;
            }
        }
        for &b in w {
            if let Some(pos) = at(i, b) {
                return Some(pos);
            }
            i += 1;
        }
    }
    match bytes.last() {
        Some(&trail) if n > 1 => at(n - 1, trail),
        _ => None,
    }
}

/// BITCOUNT key [start end [BYTE|BIT]]: the key first (missing: 0, even
/// with bad arguments, until Redis 7.2), then the indexes, then (before
/// the unit!) two negative indexes out of order answer 0, then the unit.
fn bitcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    // Redis 7.2 and later read every argument before the key: a missing
    // key no longer hides a bad one.
    if ctx.store.version >= crate::RedisVersion::V7_4 {
        match args.len() {
            2 => {}
            4 | 5 => {
                int_arg(args[2])?;
                int_arg(args[3])?;
                range_unit(args.get(4))?;
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let Some(s) = ctx.read::<StringValue>(args[1])? else {
        return Ok(reply::int(0));
    };
    let range = match args.len() {
        2 => bit_range(0, -1, s.len(), false),
        4 | 5 => {
            let start = int_arg(args[2])?;
            let end = int_arg(args[3])?;
            if start < 0 && end < 0 && start > end {
                return Ok(reply::int(0));
            }
            let in_bits = range_unit(args.get(4))?;
            bit_range(start, end, s.len(), in_bits)
        }
        _ => return Err(CmdError::Syntax),
    };
    let count = range.map_or(0, |(first, last)| count_ones(s, first, last));
    Ok(reply::int(count))
}

/// BITPOS key bit [start [end [BYTE|BIT]]]: the bit argument first, then
/// the key (missing: -1 for a set bit, 0 for a clear one), then the range:
/// start, the unit, end. An empty range has neither bit (-1). A clear bit
/// not found is the one just past the string when no end was given (the
/// string reads as zero-padded), -1 when the end was given.
fn bitpos(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let bit = match int_arg(args[2])? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::err("The bit argument must be 1 or 0.")),
    };
    // Redis 7.2 and later read every argument before the key.
    if ctx.store.version >= crate::RedisVersion::V7_4 {
        if args.len() > 6 {
            return Err(CmdError::Syntax);
        }
        if args.len() >= 4 {
            int_arg(args[3])?;
            range_unit(args.get(5))?;
        }
        if let Some(end) = args.get(4) {
            int_arg(end)?;
        }
    }
    let Some(s) = ctx.read::<StringValue>(args[1])? else {
        return Ok(reply::int(if bit { -1 } else { 0 }));
    };
    let (range, end_given) = match args.len() {
        3 => (bit_range(0, -1, s.len(), false), false),
        4..=6 => {
            let start = int_arg(args[3])?;
            let in_bits = range_unit(args.get(5))?;
            match args.get(4) {
                Some(end) => (bit_range(start, int_arg(end)?, s.len(), in_bits), true),
                None => (bit_range(start, -1, s.len(), false), false),
            }
        }
        _ => return Err(CmdError::Syntax),
    };
    let Some((first, last)) = range else {
        return Ok(reply::int(-1));
    };
    let pos = match find_bit(s, first, last, bit) {
        Some(pos) => i64::try_from(pos).unwrap_or(i64::MAX),
        None if !bit && !end_given => i64::try_from(last + 1).unwrap_or(i64::MAX),
        None => -1,
    };
    Ok(reply::int(pos))
}

// ---------------------------------------------------------------------------
// BITOP
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP AND|OR|XOR|NOT destkey key...: the operation over the sources
/// (a missing one reads as an empty string, shorter ones as zero-padded)
/// stored at `destkey` (TTL cleared, `raw`), or `destkey` deleted when
/// every source is empty. Replies the result's length.
fn bitop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let op = [
        ("and", BitOp::And),
        ("or", BitOp::Or),
        ("xor", BitOp::Xor),
        ("not", BitOp::Not),
    ]
    .into_iter()
    .find_map(|(name, op)| is(args[1], name).then_some(op))
    .ok_or(CmdError::Syntax)?;
    if op == BitOp::Not && args.len() != 4 {
        return Err(CmdError::err(
            "BITOP NOT must be called with a single source key.",
        ));
    }
    let dest = args[2];
    let values = ctx.read_all(&args[3..], |v| matches!(v, Value::Str(_)))?;
    let sources: Vec<&[u8]> = values
        .iter()
        .map(|v| match v {
            Some(Value::Str(s)) => &s[..],
            _ => &[],
        })
        .collect();
    let result = combine(op, &sources);
    let len = result.len();
    if len > 0 {
        ctx.set(dest, Value::Str(result.into()), false);
        // Redis stores the result as a plain sds string: `raw` however
        // short.
        ctx.ks().set_history(dest, History::Converted);
        ctx.notify(class::STRING, "set", dest);
    } else if ctx.remove(dest) {
        ctx.notify(class::GENERIC, "del", dest);
    }
    Ok(reply::int(len))
}

/// The bytes of `op` over `sources` (at least one), as long as the longest.
fn combine(op: BitOp, sources: &[&[u8]]) -> Vec<u8> {
    let len = sources.iter().map(|s| s.len()).max().unwrap_or(0);
    let Some((first, rest)) = sources.split_first() else {
        return Vec::new();
    };
    let mut out = first.to_vec();
    out.resize(len, 0);
    if op == BitOp::Not {
        out.iter_mut().for_each(|b| *b = !*b);
        return out;
    }
    for src in rest {
        let (covered, past) = out.split_at_mut(src.len().min(len));
        for (o, s) in covered.iter_mut().zip(src.iter()) {
            match op {
                BitOp::And => *o &= s,
                BitOp::Or => *o |= s,
                BitOp::Xor | BitOp::Not => *o ^= s,
            }
        }
        // Past a shorter source, AND meets zeros; OR and XOR keep the bytes.
        if op == BitOp::And {
            past.fill(0);
        }
    }
    out
}

#[cfg(test)]
mod tests;
