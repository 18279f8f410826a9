//! The SCAN family's cursor, options and reply, shared by SCAN (`keys`)
//! and by HSCAN, SSCAN and ZSCAN (the collection families).

use redis::Value as Reply;

use crate::args::{int_arg, is};
use crate::command::{CmdResult, Ctx};
use crate::error::CmdError;
use crate::float::split_sign;
use crate::glob::glob_match;
use crate::reply;
use crate::value::Kind;

/// Parses a SCAN-family cursor as Redis does, with C's `strtoul`: an
/// optional sign (a negative cursor wraps around), decimal digits, nothing
/// else; the empty string is cursor 0; a leading space or an overflow is
/// "invalid cursor".
pub(crate) fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    let invalid = || CmdError::err("invalid cursor");
    if arg.is_empty() {
        return Ok(0);
    }
    let (negative, digits) = split_sign(arg);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let mut value: u64 = 0;
    for &d in digits {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or_else(invalid)?;
    }
    Ok(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// The options shared by SCAN, HSCAN, SSCAN and ZSCAN.
pub(crate) struct ScanOptions<'a> {
    pub(crate) pattern: Option<&'a [u8]>,
    pub(crate) count: usize,
    pub(crate) type_name: Option<&'a [u8]>,
    /// HSCAN's NOVALUES: the fields alone.
    pub(crate) novalues: bool,
}

/// What NOVALUES (Redis 7.4) is to the command whose options are parsed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoValues {
    /// An unknown option: Redis 7.0.
    Unknown,
    /// Known, refused: every command but HSCAN.
    Refused,
    /// HSCAN's option.
    Taken,
}

impl NoValues {
    /// NOVALUES for HSCAN (`hash`) or another command of the family, in
    /// `version`.
    pub(crate) fn of(version: crate::RedisVersion, hash: bool) -> NoValues {
        match (version >= crate::RedisVersion::V7_4, hash) {
            (false, _) => NoValues::Unknown,
            (true, false) => NoValues::Refused,
            (true, true) => NoValues::Taken,
        }
    }
}

/// Parses `[MATCH pattern] [COUNT n]` (and `[TYPE t]` if `allow_type`,
/// `[NOVALUES]` as `novalues` says), in Redis's order of checks.
pub(crate) fn parse_scan_options<'a>(
    opts: &[&'a [u8]],
    allow_type: bool,
    novalues: NoValues,
) -> Result<ScanOptions<'a>, CmdError> {
    let mut out = ScanOptions {
        pattern: None,
        count: 10,
        type_name: None,
        novalues: false,
    };
    let mut i = 0;
    while i < opts.len() {
        let has_value = i + 1 < opts.len();
        if novalues != NoValues::Unknown && is(opts[i], "novalues") {
            if novalues == NoValues::Refused {
                return Err(CmdError::err("NOVALUES option can only be used in HSCAN"));
            }
            out.novalues = true;
            i += 1;
            continue;
        }
        if is(opts[i], "count") && has_value {
            let n = int_arg(opts[i + 1])?;
            if n < 1 {
                return Err(CmdError::Syntax);
            }
            out.count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if is(opts[i], "match") && has_value {
            let p = opts[i + 1];
            // `*` matches everything, the empty key included (Redis skips matching).
            out.pattern = if p == b"*" { None } else { Some(p) };
        } else if allow_type && is(opts[i], "type") && has_value {
            out.type_name = Some(opts[i + 1]);
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    Ok(out)
}

/// A reply of the SCAN family: the next cursor and the elements.
pub(crate) fn scan_reply(cursor: u64, items: Vec<Reply>) -> Reply {
    reply::array(vec![reply::bulk(cursor.to_string()), reply::array(items)])
}

/// What a scan of a collection is asked for: its cursor, COUNT, which
/// names (fields, members) it keeps, and NOVALUES.
pub(crate) struct Scan<'a> {
    pub(crate) cursor: u64,
    pub(crate) count: usize,
    pub(crate) matches: &'a dyn Fn(&[u8]) -> bool,
    /// HSCAN's NOVALUES (the only command of the family that takes it).
    pub(crate) novalues: bool,
}

/// HSCAN, SSCAN and ZSCAN: `key cursor [MATCH pattern] [COUNT count]`.
///
/// Redis parses the cursor, then looks the key up, and only then parses
/// the options: a missing key answers an empty scan whatever the options.
///
/// `page` turns the collection into the next cursor and the reply's
/// elements. SSCAN and ZSCAN return every matching element and the cursor
/// 0, whatever the cursor and COUNT: Redis does exactly that for
/// collections small enough for its compact encodings (listpack, intset),
/// and COUNT is only a hint anyway; one step holding everything keeps
/// SCAN's guarantees (every element present for the whole iteration is
/// returned, none twice) with no cursor state, at the price of one large
/// reply for a large collection. HSCAN pages a big hash (see
/// `HashValue::scan_page`), as Redis 7.4 must for a hash whose fields
/// expire: its expired fields take their place on a page, which may be
/// left empty.
pub(crate) fn scan_collection<T: Kind>(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    hash: bool,
    page: impl FnOnce(&T, &Scan<'_>) -> (u64, Vec<Reply>),
) -> CmdResult {
    let cursor = parse_cursor(args[2])?;
    let novalues = NoValues::of(ctx.store.version, hash);
    let Some(collection) = ctx.read::<T>(args[1])? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let opts = parse_scan_options(&args[3..], false, novalues)?;
    let matches = |name: &[u8]| opts.pattern.is_none_or(|p| glob_match(p, name, false));
    let scan = Scan {
        cursor,
        count: opts.count,
        matches: &matches,
        novalues: opts.novalues,
    };
    let (next, items) = page(collection, &scan);
    Ok(scan_reply(next, items))
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursors_parse_like_strtoul() {
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"17"), Ok(17));
        assert_eq!(parse_cursor(b"+5"), Ok(5));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
        for bad in [&b" 1"[..], b"1 ", b"+", b"-", b"x", b"18446744073709551616"] {
            assert!(parse_cursor(bad).is_err(), "{bad:?}");
        }
    }
}
