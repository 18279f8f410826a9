//! BITFIELD key [GET type offset] [SET type offset value] [INCRBY type
//! offset increment] [OVERFLOW WRAP|SAT|FAIL] ..., and BITFIELD_RO (GET
//! only), as Redis 7.0.15's `bitfieldGeneric` runs them.
//!
//! A type is `i1`..`i64` or `u1`..`u63` (a u64 could not be replied as a
//! RESP integer). Every operation is parsed before any runs, so a bad one
//! anywhere fails the whole command and changes nothing; then the string
//! is grown once, to the farthest bit any write reaches (even a write that
//! OVERFLOW FAIL will refuse), and the operations run in order.
//!
//! The overflow checks are Redis's own formulas, kept with their integer
//! wrap-arounds, because their edge results are observable: SET u8 0 -1
//! counts as overflowing upwards (-1 read as an unsigned 64-bit value), so
//! OVERFLOW SAT stores 255.

use super::{bit_offset, edit_bits, max_len};
use crate::args::{int_arg, is, parse_i64};
use crate::command::{CmdResult, Ctx};
use crate::error::CmdError;
use crate::reply;

/// BITFIELD: reads and writes.
pub(super) fn bitfield(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, false)
}

/// BITFIELD_RO: GET only, for replicas and read-only scripts.
pub(super) fn bitfield_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, true)
}

/// What happens when a SET or INCRBY does not fit its field.
#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    /// Keep the low bits (the default).
    Wrap,
    /// Clamp to the field's smallest or largest value.
    Sat,
    /// Write nothing; the operation's reply is nil.
    Fail,
}

/// An integer type of BITFIELD: signedness and width in bits.
#[derive(Clone, Copy)]
struct Field {
    signed: bool,
    bits: u32,
}

impl Field {
    /// Redis's `getBitfieldTypeFromArgument`: `i` or `u` (lower-case
    /// only), then a width of 1..=64 (signed) or 1..=63 (unsigned). Like
    /// the C string it reads, the width ends at a NUL byte.
    fn parse(arg: &[u8]) -> Result<Field, CmdError> {
        let error = || {
            CmdError::err(
                "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
            )
        };
        let (signed, width) = match arg.split_first() {
            Some((b'i', rest)) => (true, rest),
            Some((b'u', rest)) => (false, rest),
            _ => return Err(error()),
        };
        let width = width.split(|&b| b == 0).next().unwrap_or(&[]);
        let max = if signed { 64 } else { 63 };
        let bits = parse_i64(width)
            .filter(|b| (1..=max).contains(b))
            .ok_or_else(error)?;
        Ok(Field {
            signed,
            bits: u32::try_from(bits).map_err(|_| error())?,
        })
    }
}

/// One parsed operation.
#[derive(Clone, Copy)]
enum Action {
    Get,
    Set(i64),
    IncrBy(i64),
}

struct Op {
    action: Action,
    field: Field,
    /// The field's first bit.
    offset: u64,
    /// The OVERFLOW in force when the operation was read.
    overflow: Overflow,
}

/// Reads every operation, in Redis's order: the subcommand (with enough
/// arguments after it, else a syntax error), the type, the offset, then
/// the value of a SET or INCRBY. Returns the operations and the farthest
/// bit a write reaches, if any operation writes.
fn parse_ops(args: &[&[u8]], max_len: u64) -> Result<(Vec<Op>, Option<u64>), CmdError> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest_write: Option<u64> = None;
    let mut j = 2;
    while let Some(&sub) = args.get(j) {
        let remaining = args.len() - j - 1;
        let writes = if is(sub, "get") && remaining >= 2 {
            false
        } else if (is(sub, "set") || is(sub, "incrby")) && remaining >= 3 {
            true
        } else if is(sub, "overflow") && remaining >= 1 {
            let kind = args[j + 1];
            overflow = if is(kind, "wrap") {
                Overflow::Wrap
            } else if is(kind, "sat") {
                Overflow::Sat
            } else if is(kind, "fail") {
                Overflow::Fail
            } else {
                return Err(CmdError::err("Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(CmdError::Syntax);
        };
        let field = Field::parse(args[j + 1])?;
        let offset = bit_offset(args[j + 2], Some(field.bits), max_len)?;
        let action = if writes {
            let last_bit = offset + u64::from(field.bits) - 1;
            highest_write = Some(highest_write.map_or(last_bit, |h| h.max(last_bit)));
            let value = int_arg(args[j + 3])?;
            if is(sub, "set") {
                Action::Set(value)
            } else {
                Action::IncrBy(value)
            }
        } else {
            Action::Get
        };
        ops.push(Op {
            action,
            field,
            offset,
            overflow,
        });
        j += if writes { 4 } else { 3 };
    }
    Ok((ops, highest_write))
}

/// Redis's `bitfieldGeneric`.
fn run(ctx: &mut Ctx<'_>, args: &[&[u8]], read_only: bool) -> CmdResult {
    let key = args[1];
    let max = max_len(ctx);
    let (ops, highest_write) = parse_ops(args, max)?;
    let Some(highest) = highest_write else {
        // Only GETs: a missing key reads as zeros; another type is an error.
        let s = ctx
            .read::<crate::value::string::StringValue>(key)?
            .map_or(&[][..], |s| &s[..]);
        let replies = ops
            .iter()
            .map(|op| reply::int(get(s, op.offset, op.field)))
            .collect();
        return Ok(reply::array(replies));
    };
    if read_only {
        return Err(CmdError::err(
            "BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let (replies, changed) = edit_bits(ctx, key, highest, |s, grown| {
        let mut changed = false;
        let replies = ops
            .iter()
            .map(|op| {
                let (reply, wrote) = apply(s, op);
                changed |= wrote.is_some_and(|differs| grown || differs);
                reply
            })
            .collect();
        (replies, changed)
    })?;
    if changed {
        ctx.modified(key);
        ctx.notify(crate::notify::class::STRING, "setbit", key);
    }
    Ok(reply::array(replies))
}

/// Runs one operation on `s` (long enough for every write): its reply, and
/// for a write that happened whether the field's value changed. SET
/// replies the old value, INCRBY the new one; both check the value to
/// store (for SET, the given one plus nothing) against the field.
fn apply(s: &mut [u8], op: &Op) -> (redis::Value, Option<bool>) {
    let Field { signed, bits } = op.field;
    let raw = read_bits(s, op.offset, bits);
    let (old, new, shown) = if signed {
        let old = sign_extend(raw, bits);
        let (value, incr) = match op.action {
            Action::Get => return (reply::int(old), None),
            Action::Set(v) => (v, 0),
            Action::IncrBy(by) => (old, by),
        };
        let new = match signed_overflow(value, incr, bits, op.overflow) {
            None => value.wrapping_add(incr),
            Some(Some(limit)) => limit,
            Some(None) => return (reply::nil(), None),
        };
        let shown = if matches!(op.action, Action::Set(_)) {
            old
        } else {
            new
        };
        (old as u64, new as u64, shown)
    } else {
        let (value, incr) = match op.action {
            Action::Get => return (reply::int(raw as i64), None),
            Action::Set(v) => (v as u64, 0),
            Action::IncrBy(by) => (raw, by),
        };
        let new = match unsigned_overflow(value, incr, bits, op.overflow) {
            None => value.wrapping_add(incr as u64),
            Some(Some(limit)) => limit,
            Some(None) => return (reply::nil(), None),
        };
        let shown = if matches!(op.action, Action::Set(_)) {
            raw
        } else {
            new
        };
        (raw, new, shown as i64)
    };
    write_bits(s, op.offset, bits, new);
    (reply::int(shown), Some(old != new))
}

/// GET: the field at `offset` of `s`, zero past its end.
fn get(s: &[u8], offset: u64, field: Field) -> i64 {
    let raw = read_bits(s, offset, field.bits);
    if field.signed {
        sign_extend(raw, field.bits)
    } else {
        raw as i64
    }
}

/// The low `bits` bits set.
fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The `bits` bits from bit `offset` of `s` (big-endian, bit 0 being the
/// first byte's most significant), zero past the end of `s`.
fn read_bits(s: &[u8], offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0, |value, j| {
        let (byte, bit) = super::locate(offset + j);
        let set = s.get(byte).is_some_and(|b| b & bit != 0);
        (value << 1) | u64::from(set)
    })
}

/// Stores the low `bits` bits of `value` from bit `offset` of `s`.
fn write_bits(s: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let (byte, bit) = super::locate(offset + u64::from(j));
        if let Some(b) = s.get_mut(byte) {
            if value >> (bits - 1 - j) & 1 != 0 {
                *b |= bit;
            } else {
                *b &= !bit;
            }
        }
    }
}

/// A `bits`-wide two's complement value as an i64.
fn sign_extend(raw: u64, bits: u32) -> i64 {
    if bits < 64 && raw >> (bits - 1) & 1 != 0 {
        (raw | !mask(bits)) as i64
    } else {
        raw as i64
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: `None` if `value + incr` fits
/// an unsigned field of `bits` (at most 63); otherwise what to store,
/// `None` for OVERFLOW FAIL. `value` is what the field holds for INCRBY,
/// the new value read as unsigned for SET.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Option<Option<u64>> {
    let max = mask(bits);
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = 0u64.wrapping_sub(value) as i64;
    let upwards = if value > max || (incr > 0 && incr > max_incr) {
        true
    } else if incr < 0 && incr < min_incr {
        false
    } else {
        return None;
    };
    Some(match overflow {
        Overflow::Wrap => Some(value.wrapping_add(incr as u64) & max),
        Overflow::Sat => Some(if upwards { max } else { 0 }),
        Overflow::Fail => None,
    })
}

/// Redis's `checkSignedBitfieldOverflow`, the same for a signed field of
/// `bits` (at most 64). Its differences are computed wrapping, as in C,
/// so that SET of a value far below the field's range may count as an
/// overflow upwards, exactly where Redis says so.
fn signed_overflow(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Option<Option<i64>> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let narrow = bits != 64;
    let upwards = if value > max
        || (narrow && incr > max_incr)
        || (value >= 0 && incr > 0 && incr > max_incr)
    {
        true
    } else if value < min
        || (narrow && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        false
    } else {
        return None;
    };
    Some(match overflow {
        Overflow::Wrap => {
            let sum = (value as u64).wrapping_add(incr as u64);
            Some(sign_extend(sum & mask(bits), bits))
        }
        Overflow::Sat => Some(if upwards { max } else { min }),
        Overflow::Fail => None,
    })
}
