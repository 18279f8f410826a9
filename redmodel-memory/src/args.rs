//! Parsing of command arguments with Redis's own rules (Redis is stricter
//! than Rust's `str::parse`: no `+` sign, no leading zeros, no spaces).

use std::ops::Range;

use super::error::CmdError;
use super::float::parse_double;

/// Redis's `string2ll`: a decimal i64 with an optional `-`, no `+`, no
/// leading zeros, no spaces.
pub(crate) fn parse_i64(bytes: &[u8]) -> Option<i64> {
    match bytes {
        [] => None,
        [b'0'] => Some(0),
        _ => {
            let (neg, digits) = match bytes[0] {
                b'-' => (true, &bytes[1..]),
                _ => (false, bytes),
            };
            if digits.is_empty() || !(b'1'..=b'9').contains(&digits[0]) {
                return None;
            }
            let mut v: u64 = 0;
            for &c in digits {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            }
            if neg {
                if v > i64::MAX as u64 + 1 {
                    None
                } else {
                    Some((v as i64).wrapping_neg())
                }
            } else {
                i64::try_from(v).ok()
            }
        }
    }
}

/// An integer argument, or "value is not an integer or out of range".
pub(crate) fn int_arg(bytes: &[u8]) -> Result<i64, CmdError> {
    parse_i64(bytes).ok_or(CmdError::NotInteger)
}

/// Redis's `getIntFromObjectOrReply`: an integer that fits C's `int`.
/// `msg` replaces both of Redis's default errors (not an integer; out of
/// the `int` range).
pub(crate) fn int32_arg(arg: &[u8], msg: Option<&'static str>) -> Result<i64, CmdError> {
    let Some(n) = parse_i64(arg) else {
        return Err(msg.map_or(CmdError::NotInteger, CmdError::err));
    };
    if i32::try_from(n).is_err() {
        return Err(CmdError::err(msg.unwrap_or(
            "value is out of range, value must between -2147483648 and 2147483647",
        )));
    }
    Ok(n)
}

/// Redis's default message for a count that must not be negative (the
/// count of LPOP, SPOP, ZPOPMIN and others).
pub(crate) const NOT_POSITIVE: &str = "value is out of range, must be positive";

/// Redis's `getPositiveLongFromObjectOrReply`: a count in 0..=i64::MAX.
/// Anything else, a non-integer included, gets `msg` (Redis's default is
/// [`NOT_POSITIVE`]).
pub(crate) fn positive_arg(bytes: &[u8], msg: &'static str) -> Result<usize, CmdError> {
    parse_i64(bytes)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| CmdError::err(msg))
}

/// Redis's `getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)`, the count
/// of SRANDMEMBER, HRANDFIELD and ZRANDMEMBER (negative: repeats allowed).
pub(crate) fn signed_count_arg(bytes: &[u8]) -> Result<i64, CmdError> {
    match int_arg(bytes)? {
        i64::MIN => Err(CmdError::err(
            "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        )),
        n => Ok(n),
    }
}

/// The `count [WITHVALUES|WITHSCORES]` of HRANDFIELD and ZRANDMEMBER
/// (`flag` names the option), checked in Redis's order: the count, then
/// the option, then (with the option) that the doubled reply length still
/// fits, as Redis caps such a count at half the range. Returns the count
/// and whether the option was given.
pub(crate) fn random_count_with(
    count: &[u8],
    rest: &[&[u8]],
    flag: &str,
) -> Result<(i64, bool), CmdError> {
    let count = signed_count_arg(count)?;
    let with = match rest {
        [] => false,
        [opt] if is(opt, flag) => true,
        _ => return Err(CmdError::Syntax),
    };
    if with && count.unsigned_abs() > (i64::MAX / 2).unsigned_abs() {
        return Err(CmdError::err("value is out of range"));
    }
    Ok((count, with))
}

/// The ranks `start..end` that the inclusive index range `start..=stop`
/// of LRANGE, LTRIM, ZRANGE and ZREMRANGEBYRANK selects in a collection of
/// `len` elements (negative indices count from the end, -1 being the
/// last), clamped to the collection; `None` when it selects nothing.
pub(crate) fn index_range(start: i64, stop: i64, len: usize) -> Option<Range<usize>> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let from_end = |i: i64| if i < 0 { len.saturating_add(i) } else { i };
    let start = from_end(start).max(0);
    let stop = from_end(stop);
    if start > stop || start >= len {
        return None;
    }
    let stop = stop.min(len - 1);
    Some(usize::try_from(start).ok()?..usize::try_from(stop).ok()? + 1)
}

/// A float argument, or "value is not a valid float".
pub(crate) fn float_arg(bytes: &[u8]) -> Result<f64, CmdError> {
    parse_double(bytes).ok_or(CmdError::NotFloat)
}

/// Case-insensitive comparison of an argument with an option name.
pub(crate) fn is(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Redis's `sdssplitargs`: splits an inline request (or a script's
/// shebang line) into arguments.
/// `"..."` takes the escapes `\n \r \t \b \a \xHH` (any other escaped
/// character stands for itself), `'...'` only `\'`; a closing quote must
/// be followed by a space or the end of the line. `None` for unbalanced
/// quotes.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Past the end reads as NUL, like the C string it was.
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while at(p) != 0 && is_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Some(args);
        }
        let mut current = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            let c = at(p);
            if in_double {
                let hex = (c == b'\\' && at(p + 1) == b'x')
                    .then(|| Some(hex_value(at(p + 2))? * 16 + hex_value(at(p + 3))?))
                    .flatten();
                if let Some(byte) = hex {
                    current.push(byte);
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        if c != 0 {
                            p += 1;
                        }
                        break;
                    }
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => current.push(c),
                }
            }
            p += 1;
        }
        args.push(current);
    }
}

#[cfg(test)]
mod tests {
    use super::parse_i64;

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"9223372036854775808"[..],
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1 ",
            b"",
            b"-",
            b"1.0",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
