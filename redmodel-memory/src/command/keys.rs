//! Generic key commands: DEL UNLINK EXISTS TOUCH TYPE RENAME RENAMENX
//! RANDOMKEY SCAN KEYS, and the scan of one collection behind HSCAN, SSCAN and ZSCAN.

use redis::Value as Reply;

use super::{CmdResult, Ctx, Spec};
use crate::args::{int_arg, is};
use crate::error::CmdError;
use crate::float::split_sign;
use crate::glob::glob_match;
use crate::notify::class;
use crate::reply;
use crate::value::Kind;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "del",
        arity: -2,
        handler: del,
    },
    Spec {
        name: "unlink",
        arity: -2,
        handler: del,
    },
    Spec {
        name: "exists",
        arity: -2,
        handler: exists,
    },
    Spec {
        name: "touch",
        arity: -2,
        handler: touch,
    },
    Spec {
        name: "type",
        arity: 2,
        handler: type_of,
    },
    Spec {
        name: "randomkey",
        arity: 1,
        handler: randomkey,
    },
    Spec {
        name: "rename",
        arity: 3,
        handler: rename,
    },
    Spec {
        name: "renamenx",
        arity: 3,
        handler: renamenx,
    },
    Spec {
        name: "scan",
        arity: -2,
        handler: scan,
    },
    Spec {
        name: "keys",
        arity: 2,
        handler: keys,
    },
];

fn del(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut removed = 0;
    for key in &args[1..] {
        if ctx.remove(key) {
            removed += 1;
            ctx.notify(class::GENERIC, "del", key);
        }
    }
    Ok(reply::int(removed))
}

/// EXISTS: a lookup that does not count as an access (OBJECT IDLETIME
/// stays), as Redis 7.0 looks it up with `LOOKUP_NOTOUCH`.
fn exists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let found = (args[1..].iter())
        .filter(|k| ctx.value_untouched(k).is_some())
        .count();
    Ok(reply::int(found))
}

/// TOUCH: EXISTS, counting each lookup as an access.
fn touch(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let found = args[1..].iter().filter(|k| ctx.contains(k)).count();
    Ok(reply::int(found))
}

/// RANDOMKEY: a random live key, or nil in an empty database.
fn randomkey(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    let key = ctx.ks().random_key(now, &mut rand::rng());
    Ok(key.map_or_else(reply::nil, |k| reply::bulk(&k[..])))
}

fn type_of(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let name = ctx
        .value_untouched(args[1])
        .map_or("none", |v| v.type_name());
    Ok(reply::simple(name))
}

fn rename(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args[1], args[2], false)
}

fn renamenx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args[1], args[2], true)
}

/// RENAME carries the value and its TTL to the new name; the old value at
/// the destination (and its TTL) is gone.
fn rename_generic(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], nx: bool) -> CmdResult {
    if !ctx.contains(src) {
        return Err(CmdError::NoSuchKey);
    }
    if src == dst {
        return Ok(if nx { reply::int(0) } else { reply::ok() });
    }
    if nx && ctx.contains(dst) {
        return Ok(reply::int(0));
    }
    let now = ctx.now;
    let ks = ctx.ks();
    let Some(entry) = ks.remove(src) else {
        return Err(CmdError::NoSuchKey);
    };
    ks.remove(dst);
    ks.put_moved(dst, entry, now);
    ctx.notify(class::GENERIC, "rename_from", src);
    ctx.notify(class::GENERIC, "rename_to", dst);
    Ok(if nx { reply::int(1) } else { reply::ok() })
}

/// Parses a SCAN-family cursor as Redis does, with C's `strtoul`: an
/// optional sign (a negative cursor wraps around), decimal digits, nothing
/// else; the empty string is cursor 0; a leading space or an overflow is
/// "invalid cursor".
fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
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
struct ScanOptions<'a> {
    pattern: Option<&'a [u8]>,
    count: usize,
    type_name: Option<&'a [u8]>,
}

/// Parses `[MATCH pattern] [COUNT n]` (and `[TYPE t]` if `allow_type`).
fn parse_scan_options<'a>(
    opts: &[&'a [u8]],
    allow_type: bool,
) -> Result<ScanOptions<'a>, CmdError> {
    let mut out = ScanOptions {
        pattern: None,
        count: 10,
        type_name: None,
    };
    let mut i = 0;
    while i < opts.len() {
        let has_value = i + 1 < opts.len();
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
fn scan_reply(cursor: u64, items: Vec<Reply>) -> Reply {
    reply::array(vec![reply::bulk(cursor.to_string()), reply::array(items)])
}

fn scan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_cursor(args[1])?;
    let opts = parse_scan_options(&args[2..], true)?;
    let now = ctx.now;
    let (next, keys) = ctx
        .ks()
        .scan(cursor, opts.count, opts.pattern, opts.type_name, now);
    Ok(scan_reply(
        next,
        keys.iter().map(|k| reply::bulk(&k[..])).collect(),
    ))
}

/// HSCAN, SSCAN and ZSCAN: `key cursor [MATCH pattern] [COUNT count]`.
///
/// Redis parses the cursor, then looks the key up, and only then parses
/// the options: a missing key answers an empty scan whatever the options.
///
/// Every call returns all matching elements and the cursor 0, whatever the
/// cursor and COUNT. Redis does exactly that for collections small enough
/// for its compact encodings (listpack, intset), and COUNT is only a hint
/// anyway; for larger ones it walks its hash table in steps. One step
/// holding everything keeps SCAN's guarantees (every element present for
/// the whole iteration is returned, none twice within a call) with no
/// cursor state, which our std collections could not keep across a rehash;
/// the price is one large reply for a large collection.
///
/// `items` turns the collection into the reply's elements, keeping those
/// whose name (field, member) the given predicate accepts.
pub(super) fn scan_collection<T: Kind>(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    items: impl FnOnce(&T, &dyn Fn(&[u8]) -> bool) -> Vec<Reply>,
) -> CmdResult {
    parse_cursor(args[2])?;
    let Some(collection) = ctx.read::<T>(args[1])? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let opts = parse_scan_options(&args[3..], false)?;
    let matches = |name: &[u8]| opts.pattern.is_none_or(|p| glob_match(p, name, false));
    Ok(scan_reply(0, items(collection, &matches)))
}

fn keys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    // `*` matches everything, the empty key included (Redis skips matching).
    let pattern = (args[1] != b"*").then_some(args[1]);
    let keys = ctx.ks().keys(pattern, now);
    Ok(reply::bulks(keys.iter().map(|k| k.to_vec())))
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use super::parse_cursor;
    use crate::command::test_util::*;

    /// Replies observed on redis-server 7.0.15.
    #[test]
    fn randomkey_and_touch() {
        let (clock, mut c) = clocked(1_000_000);
        assert_eq!(run(&mut c, "RANDOMKEY"), Value::Nil);
        run(&mut c, "SET a 1");
        run(&mut c, "SET b 1");
        assert_eq!(run(&mut c, "TOUCH a b nokey"), int(2));
        assert_eq!(
            run(&mut c, "TOUCH"),
            err("ERR wrong number of arguments for 'touch' command")
        );
        assert_eq!(
            run(&mut c, "RANDOMKEY x"),
            err("ERR wrong number of arguments for 'randomkey' command")
        );
        let got = run(&mut c, "RANDOMKEY");
        assert!(got == bulk("a") || got == bulk("b"), "{got:?}");
        // Expired keys are reclaimed, never returned.
        run(&mut c, "PEXPIRE a 10");
        run(&mut c, "PEXPIRE b 10");
        clock.advance(std::time::Duration::from_millis(20));
        assert_eq!(run(&mut c, "RANDOMKEY"), Value::Nil);
        assert_eq!(run(&mut c, "DBSIZE"), int(0));
        run(&mut c, "SET k v");
        clock.advance(std::time::Duration::from_secs(5));
        run(&mut c, "TOUCH k");
        assert_eq!(run(&mut c, "OBJECT IDLETIME k"), int(0));
    }

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
