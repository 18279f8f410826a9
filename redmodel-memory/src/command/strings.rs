//! String commands, following Redis 7.0.15's `t_string.c` step by step:
//! GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND STRLEN GETRANGE
//! SUBSTR SETRANGE INCR INCRBY DECR DECRBY INCRBYFLOAT MGET MSET MSETNX.
//!
//! What a client can observe and is easy to get wrong:
//! - the order of checks decides which error wins (SET validates its expire
//!   time before anything else; INCRBY parses its increment before looking
//!   at the key; GETEX looks at the key before the expire time);
//! - SET, SETEX, GETSET and MSET clear a TTL (unless SET ... KEEPTTL), while
//!   INCR, INCRBYFLOAT, APPEND and SETRANGE keep it;
//! - a key is marked modified (for WATCH) only when Redis signals it.

use std::ops::Range;

use redis::Value as Reply;

use super::shared::expire::{absolute_ms, expire_key_at, invalid_expire_time, persist_key, Unit};
use super::shared::string_length::check_string_length;
use super::{arity_error, CmdResult, Ctx, Spec};
use crate::args::{index_range, int_arg, is, parse_i64};
use crate::error::CmdError;
use crate::float::LongDouble;
use crate::notify::class;
use crate::reply;
use crate::value::encoding::History;
use crate::value::string::StringValue;
use crate::value::Value;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "get",
        arity: 2,
        handler: get,
    },
    Spec {
        name: "set",
        arity: -3,
        handler: set,
    },
    Spec {
        name: "setnx",
        arity: 3,
        handler: setnx,
    },
    Spec {
        name: "setex",
        arity: 4,
        handler: setex,
    },
    Spec {
        name: "psetex",
        arity: 4,
        handler: psetex,
    },
    Spec {
        name: "getset",
        arity: 3,
        handler: getset,
    },
    Spec {
        name: "getdel",
        arity: 2,
        handler: getdel,
    },
    Spec {
        name: "getex",
        arity: -2,
        handler: getex,
    },
    Spec {
        name: "append",
        arity: 3,
        handler: append,
    },
    Spec {
        name: "strlen",
        arity: 2,
        handler: strlen,
    },
    Spec {
        name: "getrange",
        arity: 4,
        handler: getrange,
    },
    Spec {
        name: "substr",
        arity: 4,
        handler: getrange,
    },
    Spec {
        name: "setrange",
        arity: 4,
        handler: setrange,
    },
    Spec {
        name: "incr",
        arity: 2,
        handler: incr,
    },
    Spec {
        name: "incrby",
        arity: 3,
        handler: incrby,
    },
    Spec {
        name: "decr",
        arity: 2,
        handler: decr,
    },
    Spec {
        name: "decrby",
        arity: 3,
        handler: decrby,
    },
    Spec {
        name: "incrbyfloat",
        arity: 3,
        handler: incrbyfloat,
    },
    Spec {
        name: "mget",
        arity: -2,
        handler: mget,
    },
    Spec {
        name: "mset",
        arity: -3,
        handler: mset,
    },
    Spec {
        name: "msetnx",
        arity: -3,
        handler: msetnx,
    },
];

/// Stores `bytes` as a string value (inline when short).
fn string(bytes: impl Into<StringValue>) -> Value {
    Value::Str(bytes.into())
}

/// Redis's `getGenericCommand`: the string at `key` as a bulk reply, nil if
/// missing, WRONGTYPE if not a string.
fn string_reply(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    Ok(match ctx.read::<StringValue>(key)? {
        Some(s) => reply::bulk(&s[..]),
        None => reply::nil(),
    })
}

fn get(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    string_reply(ctx, args[1])
}

// ---------------------------------------------------------------------------
// SET and its options (shared with GETEX)
// ---------------------------------------------------------------------------

/// How an expire argument of SET / GETEX is to be read.
#[derive(Clone, Copy, PartialEq)]
enum ExpireKind {
    /// EX: seconds from now.
    Ex,
    /// PX: milliseconds from now.
    Px,
    /// EXAT: a Unix time in seconds.
    ExAt,
    /// PXAT: a Unix time in milliseconds.
    PxAt,
}

impl ExpireKind {
    fn from_option(opt: &[u8]) -> Option<ExpireKind> {
        [
            ("ex", ExpireKind::Ex),
            ("px", ExpireKind::Px),
            ("exat", ExpireKind::ExAt),
            ("pxat", ExpireKind::PxAt),
        ]
        .into_iter()
        .find_map(|(name, kind)| is(opt, name).then_some(kind))
    }

    /// The absolute expire time in Unix ms, with Redis's checks
    /// (`getExpireMillisecondsOrReply`): the number must be positive, and
    /// neither the conversion to ms nor the addition of now may overflow.
    fn resolve(self, arg: &[u8], now: i64, command: &str) -> Result<i64, CmdError> {
        let when = int_arg(arg)?;
        if when <= 0 {
            return Err(invalid_expire_time(command));
        }
        let (unit, base) = match self {
            ExpireKind::Ex => (Unit::Seconds, now),
            ExpireKind::Px => (Unit::Millis, now),
            ExpireKind::ExAt => (Unit::Seconds, 0),
            ExpireKind::PxAt => (Unit::Millis, 0),
        };
        absolute_ms(when, unit, base, command)
    }
}

/// Which command's options are being read: SET takes NX XX GET KEEPTTL,
/// GETEX takes PERSIST; both take EX PX EXAT PXAT.
#[derive(Clone, Copy, PartialEq)]
enum OptionsOf {
    Set,
    GetEx,
}

/// The options of SET or GETEX (`parseExtendedStringArgumentsOrReply`).
#[derive(Default)]
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    persist: bool,
    expire: Option<(ExpireKind, &'a [u8])>,
}

impl<'a> StringOptions<'a> {
    /// Reads the options; a repeated option is fine (the last expire wins),
    /// a conflicting or unknown one, or an expire without its value, is a
    /// syntax error. The expire value itself is checked later, where Redis
    /// checks it.
    fn parse(opts: &[&'a [u8]], of: OptionsOf) -> Result<Self, CmdError> {
        let mut o = StringOptions::default();
        let mut i = 0;
        while let Some(&opt) = opts.get(i) {
            let set = of == OptionsOf::Set;
            let expire_kind = o.expire.map(|(kind, _)| kind);
            if set && is(opt, "nx") && !o.xx {
                o.nx = true;
            } else if set && is(opt, "xx") && !o.nx {
                o.xx = true;
            } else if set && is(opt, "get") {
                o.get = true;
            } else if set && is(opt, "keepttl") && !o.persist && o.expire.is_none() {
                o.keep_ttl = true;
            } else if !set && is(opt, "persist") && o.expire.is_none() && !o.keep_ttl {
                o.persist = true;
            } else if let Some(kind) = ExpireKind::from_option(opt)
                .filter(|&kind| !o.keep_ttl && !o.persist && expire_kind.is_none_or(|k| k == kind))
            {
                let value = *opts.get(i + 1).ok_or(CmdError::Syntax)?;
                o.expire = Some((kind, value));
                i += 1;
            } else {
                return Err(CmdError::Syntax);
            }
            i += 1;
        }
        Ok(o)
    }
}

/// The replies of a SET-like command when it sets, and when NX / XX stop it.
struct SetReplies {
    done: Reply,
    aborted: Reply,
}

impl SetReplies {
    /// SET's own: +OK, or nil.
    fn ok_or_nil() -> SetReplies {
        SetReplies {
            done: reply::ok(),
            aborted: reply::nil(),
        }
    }
}

/// Redis's `setGenericCommand`, behind SET, SETNX, SETEX and PSETEX.
fn set_generic(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    opts: &StringOptions<'_>,
    command: &str,
    replies: SetReplies,
) -> CmdResult {
    let expire_at = match opts.expire {
        Some((kind, arg)) => Some(kind.resolve(arg, ctx.now, command)?),
        None => None,
    };
    // SET ... GET: the old value (or WRONGTYPE, and nothing is set).
    let old = if opts.get {
        Some(string_reply(ctx, key)?)
    } else {
        None
    };
    // Redis's one lookup for the write (an access, even if NX or XX then
    // refuses it; `set` does not count it again).
    let found = ctx.contains_for_write(key);
    if (opts.nx && found) || (opts.xx && !found) {
        return Ok(old.unwrap_or(replies.aborted));
    }
    ctx.set(key, string(value), opts.keep_ttl);
    ctx.notify(class::STRING, "set", key);
    if let Some(at) = expire_at {
        // A time already past (EXAT 1) leaves the key logically expired,
        // as in Redis: the next access deletes it.
        ctx.ks().set_expire(key, Some(at));
        ctx.notify(class::GENERIC, "expire", key);
    }
    Ok(old.unwrap_or(replies.done))
}

fn set(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let opts = StringOptions::parse(&args[3..], OptionsOf::Set)?;
    set_generic(ctx, args[1], args[2], &opts, "set", SetReplies::ok_or_nil())
}

fn setnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let opts = StringOptions {
        nx: true,
        ..StringOptions::default()
    };
    let replies = SetReplies {
        done: reply::int(1),
        aborted: reply::int(0),
    };
    set_generic(ctx, args[1], args[2], &opts, "setnx", replies)
}

/// SETEX and PSETEX: `key ttl value`.
fn set_with_ttl(ctx: &mut Ctx<'_>, args: &[&[u8]], kind: ExpireKind, command: &str) -> CmdResult {
    let opts = StringOptions {
        expire: Some((kind, args[2])),
        ..StringOptions::default()
    };
    set_generic(
        ctx,
        args[1],
        args[3],
        &opts,
        command,
        SetReplies::ok_or_nil(),
    )
}

fn setex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    set_with_ttl(ctx, args, ExpireKind::Ex, "setex")
}

fn psetex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    set_with_ttl(ctx, args, ExpireKind::Px, "psetex")
}

fn getset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let old = string_reply(ctx, args[1])?;
    ctx.set(args[1], string(args[2]), false);
    ctx.notify(class::STRING, "set", args[1]);
    Ok(old)
}

fn getdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let old = string_reply(ctx, args[1])?;
    if old != reply::nil() {
        ctx.remove(args[1]);
        ctx.notify(class::GENERIC, "del", args[1]);
    }
    Ok(old)
}

/// GETEX: GET, then change the TTL. Options are checked first, then the key
/// (a missing key answers nil whatever the expire value), then the time.
fn getex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let opts = StringOptions::parse(&args[2..], OptionsOf::GetEx)?;
    let key = args[1];
    let Some(value) = ctx.read::<StringValue>(key)?.map(|s| s.to_vec()) else {
        return Ok(reply::nil());
    };
    match opts.expire {
        // Only an absolute time can be already reached: that deletes the key.
        Some((kind, arg)) => {
            let at = kind.resolve(arg, ctx.now, "getex")?;
            expire_key_at(ctx, key, at);
        }
        None if opts.persist => {
            persist_key(ctx, key);
        }
        None => {}
    }
    Ok(reply::bulk(value))
}

// ---------------------------------------------------------------------------
// Editing strings
// ---------------------------------------------------------------------------

/// APPEND: a new key is set whole (so "12" is an `int`); an existing
/// string is edited in place, which makes it `raw` in Redis.
fn append(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, tail) = (args[1], args[2]);
    let max = ctx.ks().limits().proto_max_bulk_len;
    let len = match ctx.write::<StringValue>(key)?.map(StringValue::make_mut) {
        None => {
            ctx.set(key, string(tail), false);
            ctx.notify(class::STRING, "append", key);
            tail.len()
        }
        Some(s) => {
            check_string_length(s.len() as u64, tail.len() as u64, max)?;
            s.extend_from_slice(tail);
            let len = s.len();
            ctx.ks().set_history(key, History::Converted);
            ctx.modified(key);
            ctx.notify(class::STRING, "append", key);
            len
        }
    };
    Ok(reply::int(len))
}

fn strlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(
        ctx.read::<StringValue>(args[1])?.map_or(0, |s| s.len()),
    ))
}

/// GETRANGE (and its old name SUBSTR): inclusive, negative indexes count
/// from the end, out-of-range indexes are clamped.
fn getrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let start = int_arg(args[2])?;
    let end = int_arg(args[3])?;
    let Some(s) = ctx.read::<StringValue>(args[1])? else {
        return Ok(reply::bulk(Vec::new()));
    };
    let range = substring_range(s.len(), start, end);
    let bytes = range.and_then(|r| s.get(r)).unwrap_or(&[]);
    Ok(reply::bulk(bytes))
}

/// The byte range GETRANGE returns, `None` for an empty reply. LRANGE's
/// rules, but for two: both ends counted from the end and crossed select
/// nothing, and an end before the first byte is clamped to it.
fn substring_range(len: usize, start: i64, end: i64) -> Option<Range<usize>> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let end = if end < 0 {
        end.saturating_add(i64::try_from(len).ok()?).max(0)
    } else {
        end
    };
    index_range(start, end, len)
}

/// SETRANGE: overwrite from `offset`, padding with zero bytes, keeping
/// the TTL. An empty value changes nothing (and creates no key) but still
/// answers the length. The string is `raw` afterwards, new or not.
fn setrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, patch) = (args[1], args[3]);
    let max = ctx.ks().limits().proto_max_bulk_len;
    let offset = int_arg(args[2])?;
    let Ok(offset) = u64::try_from(offset) else {
        return Err(CmdError::err("offset is out of range"));
    };
    let len = match ctx.write::<StringValue>(key)?.map(StringValue::make_mut) {
        None => {
            if patch.is_empty() {
                return Ok(reply::int(0));
            }
            check_string_length(offset, patch.len() as u64, max)?;
            let mut s = vec![0u8; offset as usize];
            s.extend_from_slice(patch);
            let len = s.len();
            ctx.set(key, string(s), false);
            ctx.ks().set_history(key, History::Converted);
            ctx.notify(class::STRING, "setrange", key);
            len
        }
        Some(s) => {
            if patch.is_empty() {
                return Ok(reply::int(s.len()));
            }
            check_string_length(offset, patch.len() as u64, max)?;
            let offset = offset as usize;
            let end = offset + patch.len();
            if s.len() < end {
                s.resize(end, 0);
            }
            if let Some(window) = s.get_mut(offset..end) {
                window.copy_from_slice(patch);
            }
            let len = s.len();
            ctx.ks().set_history(key, History::Converted);
            ctx.modified(key);
            ctx.notify(class::STRING, "setrange", key);
            len
        }
    };
    Ok(reply::int(len))
}

// ---------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------

/// Redis's `incrDecrCommand`: adds `delta` to the integer at `key` (0 if
/// missing), keeping its TTL.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> CmdResult {
    let now = ctx.now;
    // Read and replaced in one lookup of the key.
    let value = ctx.ks().update_string(key, now, |current| {
        let current = match current {
            None => 0,
            Some(s) => parse_i64(s).ok_or(CmdError::NotInteger)?,
        };
        let value = current.checked_add(delta).ok_or(CmdError::Overflow)?;
        Ok((StringValue::from_int(value), value))
    })?;
    ctx.notify(class::STRING, "incrby", key);
    Ok(reply::int(value))
}

fn incr(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], 1)
}

fn decr(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], -1)
}

fn incrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let delta = int_arg(args[2])?;
    incr_by(ctx, args[1], delta)
}

fn decrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let delta = int_arg(args[2])?;
    // -i64::MIN does not exist; Redis has its own message for it.
    let negated = delta
        .checked_neg()
        .ok_or_else(|| CmdError::err("decrement would overflow"))?;
    incr_by(ctx, args[1], negated)
}

/// INCRBYFLOAT: in x87 `long double`, printed `%.17Lf` trimmed (see
/// `float.rs`), keeping the TTL. Type first, then the stored value, then
/// the increment.
fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let current = match ctx.read_for_write::<StringValue>(key)? {
        None => LongDouble::ZERO,
        Some(s) => LongDouble::parse(s).ok_or(CmdError::NotFloat)?,
    };
    let incr = LongDouble::parse(args[2]).ok_or(CmdError::NotFloat)?;
    let sum = current
        .checked_add(incr)
        .ok_or_else(|| CmdError::err("increment would produce NaN or Infinity"))?;
    let text = sum.to_human_string();
    ctx.set(key, string(text.as_bytes()), true);
    // Redis stores the text as a string object, never as an `int`.
    ctx.ks().set_history(key, History::Text);
    ctx.notify(class::STRING, "incrbyfloat", key);
    Ok(reply::bulk(text))
}

// ---------------------------------------------------------------------------
// Many keys
// ---------------------------------------------------------------------------

/// MGET: nil for a missing key and for a key of another type.
fn mget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let replies = args[1..]
        .iter()
        .map(|key| match ctx.value(key) {
            Some(Value::Str(s)) => reply::bulk(&s[..]),
            _ => reply::nil(),
        })
        .collect();
    Ok(reply::array(replies))
}

/// The key/value pairs of MSET / MSETNX, or the arity error if one value
/// is missing.
fn key_value_pairs<'a>(args: &'a [&'a [u8]]) -> Result<&'a [&'a [u8]], CmdError> {
    let pairs = &args[1..];
    if !pairs.len().is_multiple_of(2) {
        return Err(arity_error(args));
    }
    Ok(pairs)
}

fn set_all(ctx: &mut Ctx<'_>, pairs: &[&[u8]]) {
    for pair in pairs.chunks_exact(2) {
        if let [key, value] = pair {
            ctx.set(key, string(*value), false);
            ctx.notify(class::STRING, "set", key);
        }
    }
}

fn mset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let pairs = key_value_pairs(args)?;
    set_all(ctx, pairs);
    Ok(reply::ok())
}

/// MSETNX: all or nothing; 0 if any key exists.
fn msetnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let pairs = key_value_pairs(args)?;
    if pairs
        .iter()
        .step_by(2)
        .any(|key| ctx.contains_for_write(key))
    {
        return Ok(reply::int(0));
    }
    set_all(ctx, pairs);
    Ok(reply::int(1))
}

#[cfg(test)]
mod tests {
    //! Every expected reply below was observed on redis-server 7.0.15.

    use std::time::Duration;

    use redis::Value;

    use crate::command::test_util::*;

    /// 2024-01-01T00:00:00Z, so that relative and absolute times differ.
    const START_MS: i64 = 1_704_067_200_000;

    #[test]
    fn set_options_errors() {
        let (_clock, mut c) = clocked(START_MS);
        let invalid = "ERR invalid expire time in 'set' command";
        let cases: &[(&[&str], &str)] = &[
            (&["SET", "k", "v", "EX", "0"], invalid),
            (&["SET", "k", "v", "EX", "-1"], invalid),
            (&["SET", "k", "v", "PX", "0"], invalid),
            (&["SET", "k", "v", "EXAT", "0"], invalid),
            (&["SET", "k", "v", "PXAT", "-5"], invalid),
            (&["SET", "k", "v", "EX", "9223372036854776"], invalid),
            // Fits in ms, but adding now overflows.
            (&["SET", "k", "v", "EX", "9223372036854775"], invalid),
            (&["SET", "k", "v", "PX", "9223372036854775807"], invalid),
            (&["SET", "k", "v", "EX", "abc"], NOT_INT),
            (&["SET", "k", "v", "EX", "1.5"], NOT_INT),
            (&["SET", "k", "v", "NX", "XX"], SYNTAX),
            (&["SET", "k", "v", "XX", "NX"], SYNTAX),
            (&["SET", "k", "v", "EX", "10", "PX", "100"], SYNTAX),
            (&["SET", "k", "v", "KEEPTTL", "EX", "10"], SYNTAX),
            (&["SET", "k", "v", "EX", "10", "KEEPTTL"], SYNTAX),
            (&["SET", "k", "v", "EX"], SYNTAX),
            (&["SET", "k", "v", "foo"], SYNTAX),
            (&["SET", "k", "v", "PERSIST"], SYNTAX),
            // Syntax is checked before the expire value.
            (&["SET", "k", "v", "EX", "abc", "foo"], SYNTAX),
            (&["SET", "k", "v", "foo", "EX", "abc"], SYNTAX),
            (
                &["SETEX", "k", "0", "v"],
                "ERR invalid expire time in 'setex' command",
            ),
            (
                &["SETEX", "k", "-10", "v"],
                "ERR invalid expire time in 'setex' command",
            ),
            (&["SETEX", "k", "abc", "v"], NOT_INT),
            (
                &["PSETEX", "k", "0", "v"],
                "ERR invalid expire time in 'psetex' command",
            ),
            (
                &["SET", "k"],
                "ERR wrong number of arguments for 'set' command",
            ),
            (
                &["SETEX", "k", "1"],
                "ERR wrong number of arguments for 'setex' command",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(run_args(&mut c, args), err(expected), "{args:?}");
        }
        assert_eq!(run(&mut c, "EXISTS k"), int(0));
    }

    #[test]
    fn set_get_nx_xx() {
        let (_clock, mut c) = clocked(START_MS);
        assert_eq!(run(&mut c, "SET k v get GET nx NX"), Value::Nil);
        assert_eq!(run(&mut c, "SET k v2 NX GET"), bulk("v"));
        assert_eq!(run(&mut c, "GET k"), bulk("v"));
        assert_eq!(run(&mut c, "SET k v3 XX GET"), bulk("v"));
        assert_eq!(run(&mut c, "GET k"), bulk("v3"));
        assert_eq!(run(&mut c, "SET nokey v3 XX GET"), Value::Nil);
        assert_eq!(run(&mut c, "SET nokey v XX"), Value::Nil);
        assert_eq!(run(&mut c, "EXISTS nokey"), int(0));
        assert_eq!(run(&mut c, "SET k v NX"), Value::Nil);
        assert_eq!(run(&mut c, "SETNX k x"), int(0));
        assert_eq!(run(&mut c, "SETNX k2 x"), int(1));
        // SET ... GET on another type: WRONGTYPE, and nothing is set.
        run(&mut c, "HSET h f v");
        for args in [
            &["SET", "h", "v", "GET"][..],
            &["SET", "h", "v", "NX", "GET"],
            &["SET", "h", "v", "XX", "GET"],
        ] {
            assert_eq!(run_args(&mut c, args), err(WRONGTYPE), "{args:?}");
        }
        assert_eq!(run(&mut c, "TYPE h"), Value::SimpleString("hash".into()));
        // The expire time is checked even before the type.
        assert_eq!(
            run(&mut c, "SET h v EX 0 GET"),
            err("ERR invalid expire time in 'set' command")
        );
        // A plain SET replaces any type.
        assert_eq!(run(&mut c, "SET h v"), Value::Okay);
        assert_eq!(run(&mut c, "GET h"), bulk("v"));
        assert_eq!(run(&mut c, "GET nokey"), Value::Nil);
    }

    #[test]
    fn set_and_ttls() {
        let (clock, mut c) = clocked(START_MS);
        assert_eq!(run(&mut c, "SETEX k 100 v"), Value::Okay);
        assert_eq!(run(&mut c, "TTL k"), int(100));
        assert_eq!(run(&mut c, "SET k v KEEPTTL"), Value::Okay);
        assert_eq!(run(&mut c, "TTL k"), int(100));
        assert_eq!(run(&mut c, "SET k v"), Value::Okay);
        assert_eq!(run(&mut c, "TTL k"), int(-1));
        // A repeated expire option: the last one wins.
        assert_eq!(run(&mut c, "SET k v EX 10 EX 20"), Value::Okay);
        assert_eq!(run(&mut c, "TTL k"), int(20));
        assert_eq!(run(&mut c, "PSETEX k 1500 v"), Value::Okay);
        assert_eq!(run(&mut c, "PTTL k"), int(1500));
        let at = (START_MS + 5000).to_string();
        assert_eq!(
            run_args(&mut c, &["SET", "k", "v", "PXAT", &at]),
            Value::Okay
        );
        assert_eq!(run(&mut c, "PTTL k"), int(5000));
        let at = (START_MS / 1000 + 7).to_string();
        assert_eq!(
            run_args(&mut c, &["SET", "k", "v", "EXAT", &at]),
            Value::Okay
        );
        assert_eq!(run(&mut c, "TTL k"), int(7));
        // The largest times are accepted (observed TTLs near 2^63 ms).
        assert_eq!(run(&mut c, "SET k v EXAT 9223372036854775"), Value::Okay);
        assert_eq!(
            run(&mut c, "PTTL k"),
            int(9_223_372_036_854_775_000 - START_MS)
        );
        assert_eq!(run(&mut c, "SET k v PXAT 9223372036854775807"), Value::Okay);
        // A time in the past: the key is set and at once gone.
        assert_eq!(run(&mut c, "SET k v EXAT 1"), Value::Okay);
        assert_eq!(run(&mut c, "GET k"), Value::Nil);
        assert_eq!(run(&mut c, "EXISTS k"), int(0));
        // TTLs run out.
        run(&mut c, "SET k v PX 100");
        clock.advance(Duration::from_millis(100));
        assert_eq!(run(&mut c, "GET k"), bulk("v"));
        clock.advance(Duration::from_millis(1));
        assert_eq!(run(&mut c, "GET k"), Value::Nil);
    }

    #[test]
    fn getset_and_getdel() {
        let (_clock, mut c) = clocked(START_MS);
        run(&mut c, "SET k v EX 100");
        assert_eq!(run(&mut c, "GETSET k newv"), bulk("v"));
        assert_eq!(run(&mut c, "TTL k"), int(-1));
        assert_eq!(run(&mut c, "GETSET nope x"), Value::Nil);
        assert_eq!(run(&mut c, "GET nope"), bulk("x"));
        run(&mut c, "HSET h f v");
        assert_eq!(run(&mut c, "GETSET h x"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "GETDEL k"), bulk("newv"));
        assert_eq!(run(&mut c, "GETDEL k"), Value::Nil);
        assert_eq!(run(&mut c, "EXISTS k"), int(0));
        assert_eq!(run(&mut c, "GETDEL h"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "EXISTS h"), int(1));
    }

    #[test]
    fn getex() {
        let (_clock, mut c) = clocked(START_MS);
        run(&mut c, "SET k hello EX 100");
        assert_eq!(run(&mut c, "GETEX k"), bulk("hello"));
        assert_eq!(run(&mut c, "TTL k"), int(100));
        assert_eq!(run(&mut c, "GETEX k PERSIST"), bulk("hello"));
        assert_eq!(run(&mut c, "TTL k"), int(-1));
        assert_eq!(run(&mut c, "GETEX k persist"), bulk("hello"));
        assert_eq!(run(&mut c, "GETEX k EX 50"), bulk("hello"));
        assert_eq!(run(&mut c, "TTL k"), int(50));
        assert_eq!(run(&mut c, "GETEX k PX 5000"), bulk("hello"));
        assert_eq!(run(&mut c, "PTTL k"), int(5000));
        assert_eq!(run(&mut c, "GETEX k EX 10 EX 20"), bulk("hello"));
        assert_eq!(run(&mut c, "TTL k"), int(20));
        assert_eq!(run(&mut c, "GETEX k EXAT 9223372036854775"), bulk("hello"));
        assert_eq!(
            run(&mut c, "GETEX k EX 9223372036854775"),
            err("ERR invalid expire time in 'getex' command")
        );
        assert_eq!(
            run(&mut c, "GETEX k EX 0"),
            err("ERR invalid expire time in 'getex' command")
        );
        assert_eq!(run(&mut c, "GETEX k EX abc"), err(NOT_INT));
        // An absolute time already past: the value, then the key is deleted.
        let now = START_MS.to_string();
        assert_eq!(
            run_args(&mut c, &["GETEX", "k", "PXAT", &now]),
            bulk("hello")
        );
        assert_eq!(run(&mut c, "EXISTS k"), int(0));
        run(&mut c, "SET k hello");
        assert_eq!(run(&mut c, "GETEX k EXAT 1"), bulk("hello"));
        assert_eq!(run(&mut c, "EXISTS k"), int(0));
        // Options before the key, the key before the expire value.
        for args in [
            &["GETEX", "nokey", "foo"][..],
            &["GETEX", "nokey", "NX"],
            &["GETEX", "nokey", "KEEPTTL"],
            &["GETEX", "nokey", "GET"],
            &["GETEX", "nokey", "PERSIST", "EX", "10"],
            &["GETEX", "nokey", "EX", "10", "PERSIST"],
            &["GETEX", "nokey", "EX"],
        ] {
            assert_eq!(run_args(&mut c, args), err(SYNTAX), "{args:?}");
        }
        assert_eq!(run(&mut c, "GETEX nokey EX 0"), Value::Nil);
        assert_eq!(run(&mut c, "GETEX nokey EX abc"), Value::Nil);
        assert_eq!(run(&mut c, "GETEX nokey PERSIST PERSIST"), Value::Nil);
        run(&mut c, "HSET h f v");
        assert_eq!(run(&mut c, "GETEX h EX 0"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "GETEX h EX abc"), err(WRONGTYPE));
        assert_eq!(
            run(&mut c, "GETEX"),
            err("ERR wrong number of arguments for 'getex' command")
        );
    }

    #[test]
    fn append_strlen_getrange() {
        let (_clock, mut c) = clocked(START_MS);
        run(&mut c, "SET k hello EX 100");
        assert_eq!(run_args(&mut c, &["APPEND", "k", " world"]), int(11));
        assert_eq!(run(&mut c, "TTL k"), int(100));
        assert_eq!(run(&mut c, "APPEND newk abc"), int(3));
        assert_eq!(run_args(&mut c, &["APPEND", "empty", ""]), int(0));
        assert_eq!(run(&mut c, "EXISTS empty"), int(1));
        run(&mut c, "HSET h f v");
        assert_eq!(run(&mut c, "APPEND h x"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "STRLEN k"), int(11));
        assert_eq!(run(&mut c, "STRLEN nokey"), int(0));
        assert_eq!(run(&mut c, "STRLEN h"), err(WRONGTYPE));
        let ranges: &[(&str, &str, &str)] = &[
            ("0", "-1", "hello world"),
            ("0", "4", "hello"),
            ("-3", "-1", "rld"),
            ("-1", "-3", ""),
            ("5", "2", ""),
            ("-100", "100", "hello world"),
            ("100", "200", ""),
            ("-9223372036854775808", "9223372036854775807", "hello world"),
        ];
        for (start, end, expected) in ranges {
            assert_eq!(
                run_args(&mut c, &["GETRANGE", "k", start, end]),
                bulk(expected),
                "{start} {end}"
            );
        }
        assert_eq!(run(&mut c, "SUBSTR k 0 2"), bulk("hel"));
        assert_eq!(run(&mut c, "GETRANGE nokey 0 -1"), bulk(""));
        assert_eq!(run(&mut c, "GETRANGE h 0 -1"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "GETRANGE k a 0"), err(NOT_INT));
        assert_eq!(run(&mut c, "GETRANGE k 0 a"), err(NOT_INT));
        assert_eq!(run(&mut c, "GETRANGE nokey a 0"), err(NOT_INT));
        run_args(&mut c, &["SET", "e", ""]);
        for (start, end) in [("0", "-1"), ("0", "0"), ("-1", "0")] {
            assert_eq!(run_args(&mut c, &["GETRANGE", "e", start, end]), bulk(""));
        }
    }

    #[test]
    fn setrange() {
        let (_clock, mut c) = clocked(START_MS);
        run_args(&mut c, &["SET", "k", "hello world", "EX", "100"]);
        assert_eq!(run(&mut c, "SETRANGE k 6 WORLD"), int(11));
        assert_eq!(run(&mut c, "GET k"), bulk("hello WORLD"));
        assert_eq!(run(&mut c, "TTL k"), int(100));
        assert_eq!(run(&mut c, "SETRANGE k 13 !"), int(14));
        assert_eq!(run(&mut c, "GET k"), bulk("hello WORLD\0\0!"));
        let too_big = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
        assert_eq!(
            run(&mut c, "SETRANGE k -1 x"),
            err("ERR offset is out of range")
        );
        assert_eq!(run(&mut c, "SETRANGE k a x"), err(NOT_INT));
        assert_eq!(run(&mut c, "SETRANGE k 536870912 x"), err(too_big));
        assert_eq!(
            run(&mut c, "SETRANGE k 9223372036854775807 x"),
            err(too_big)
        );
        assert_eq!(run(&mut c, "SETRANGE nokey 536870912 x"), err(too_big));
        // An empty value: the length, whatever the offset; no key created.
        assert_eq!(
            run_args(&mut c, &["SETRANGE", "k", "536870912", ""]),
            int(14)
        );
        assert_eq!(run_args(&mut c, &["SETRANGE", "nokey", "5", ""]), int(0));
        assert_eq!(run(&mut c, "EXISTS nokey"), int(0));
        assert_eq!(run(&mut c, "SETRANGE new 3 ab"), int(5));
        assert_eq!(run(&mut c, "GET new"), bulk("\0\0\0ab"));
        run(&mut c, "HSET h f v");
        assert_eq!(run(&mut c, "SETRANGE h 0 x"), err(WRONGTYPE));
        assert_eq!(
            run_args(&mut c, &["SETRANGE", "h", "0", ""]),
            err(WRONGTYPE)
        );
        assert_eq!(
            run_args(&mut c, &["SETRANGE", "h", "-1", ""]),
            err("ERR offset is out of range")
        );
    }

    #[test]
    fn integer_counters() {
        let (_clock, mut c) = clocked(START_MS);
        assert_eq!(run(&mut c, "INCR n"), int(1));
        assert_eq!(run(&mut c, "INCRBY n 10"), int(11));
        assert_eq!(run(&mut c, "DECR n"), int(10));
        assert_eq!(run(&mut c, "DECRBY n 5"), int(5));
        assert_eq!(run(&mut c, "GET n"), bulk("5"));
        assert_eq!(run(&mut c, "INCRBY n abc"), err(NOT_INT));
        assert_eq!(run(&mut c, "INCRBY n 1.5"), err(NOT_INT));
        assert_eq!(
            run(&mut c, "DECRBY n -9223372036854775808"),
            err("ERR decrement would overflow")
        );
        assert_eq!(run(&mut c, "DECRBY n 9223372036854775808"), err(NOT_INT));
        let overflow = "ERR increment or decrement would overflow";
        run(&mut c, "SET n 9223372036854775807");
        assert_eq!(run(&mut c, "INCR n"), err(overflow));
        assert_eq!(run(&mut c, "INCRBY n 0"), int(i64::MAX));
        run(&mut c, "SET n -9223372036854775808");
        assert_eq!(run(&mut c, "DECR n"), err(overflow));
        assert_eq!(run(&mut c, "DECRBY n 1"), err(overflow));
        assert_eq!(run(&mut c, "INCRBY n -1"), err(overflow));
        run(&mut c, "SET n 0");
        assert_eq!(run(&mut c, "DECRBY n -9223372036854775807"), int(i64::MAX));
        // Stored values must be exactly what string2ll accepts.
        for stored in [
            " 1",
            "+1",
            "01",
            "1.0",
            "",
            "-0",
            "abc",
            "12345678901234567890",
        ] {
            run_args(&mut c, &["SET", "n", stored]);
            assert_eq!(run(&mut c, "INCR n"), err(NOT_INT), "{stored:?}");
        }
        // WRONGTYPE comes after the increment is parsed.
        run(&mut c, "HSET h f v");
        assert_eq!(run(&mut c, "INCR h"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "INCRBY h abc"), err(NOT_INT));
        assert_eq!(run(&mut c, "INCRBY h 1"), err(WRONGTYPE));
        // INCR keeps the TTL.
        run(&mut c, "SET n 5 EX 100");
        assert_eq!(run(&mut c, "INCR n"), int(6));
        assert_eq!(run(&mut c, "TTL n"), int(100));
    }

    #[test]
    fn incrbyfloat() {
        let (_clock, mut c) = clocked(START_MS);
        run(&mut c, "SET n 5 EX 100");
        assert_eq!(run(&mut c, "INCRBYFLOAT n 1.5"), bulk("6.5"));
        assert_eq!(run(&mut c, "TTL n"), int(100));
        run(&mut c, "SET k 10.5");
        assert_eq!(run(&mut c, "INCRBYFLOAT k 0.1"), bulk("10.6"));
        assert_eq!(run(&mut c, "GET k"), bulk("10.6"));
        for _ in 0..3 {
            run(&mut c, "INCRBYFLOAT steps 3.0e-1");
        }
        assert_eq!(run(&mut c, "GET steps"), bulk("0.9"));
        assert_eq!(run(&mut c, "INCRBYFLOAT x 5.0e3"), bulk("5000"));
        assert_eq!(run(&mut c, "INCRBYFLOAT x -5000"), bulk("0"));
        run(&mut c, "SET hex 0x1p3");
        assert_eq!(run(&mut c, "INCRBYFLOAT hex 0"), bulk("8"));
        assert_eq!(run(&mut c, "GET hex"), bulk("8"));
        // Errors: type first, then the stored value, then the increment.
        run(&mut c, "HSET h f v");
        assert_eq!(run(&mut c, "INCRBYFLOAT h abc"), err(WRONGTYPE));
        run(&mut c, "SET s abc");
        assert_eq!(run(&mut c, "INCRBYFLOAT s 1"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "INCRBYFLOAT nokey abc"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "INCRBYFLOAT nokey nan"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "INCRBYFLOAT nokey 1e5000"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "EXISTS nokey"), int(0));
        for stored in [" 1", "1 "] {
            run_args(&mut c, &["SET", "s", stored]);
            assert_eq!(run(&mut c, "INCRBYFLOAT s 0"), err(NOT_FLOAT));
        }
        let not_finite = "ERR increment would produce NaN or Infinity";
        assert_eq!(run(&mut c, "INCRBYFLOAT nokey inf"), err(not_finite));
        run(&mut c, "SET s inf");
        assert_eq!(run(&mut c, "INCRBYFLOAT s 1"), err(not_finite));
        run(&mut c, "SET s 12");
        assert_eq!(run(&mut c, "INCRBYFLOAT s -inf"), err(not_finite));
        run(&mut c, "SET s 1e4932");
        assert_eq!(run(&mut c, "INCRBYFLOAT s 1e4932"), err(not_finite));
        assert_eq!(run(&mut c, "GET s"), bulk("1e4932"));
    }

    #[test]
    fn mget_mset_msetnx() {
        let (_clock, mut c) = clocked(START_MS);
        run(&mut c, "SET n abc");
        run(&mut c, "HSET h f v");
        assert_eq!(
            run(&mut c, "MGET n nokey h n"),
            Value::Array(vec![bulk("abc"), Value::Nil, Value::Nil, bulk("abc")])
        );
        assert_eq!(run(&mut c, "MSET a 1 b 2"), Value::Okay);
        assert_eq!(
            run(&mut c, "MSET a 1 b"),
            err("ERR wrong number of arguments for 'mset' command")
        );
        assert_eq!(
            run(&mut c, "MSETNX a 1 b"),
            err("ERR wrong number of arguments for 'msetnx' command")
        );
        assert_eq!(run(&mut c, "MSETNX a 1 c 3"), int(0));
        assert_eq!(run(&mut c, "EXISTS c"), int(0));
        assert_eq!(run(&mut c, "MSETNX c 3 d 4"), int(1));
        assert_eq!(run(&mut c, "MSETNX c 3 c 5"), int(0));
        assert_eq!(run(&mut c, "MSETNX x 1 x 2"), int(1));
        assert_eq!(
            run(&mut c, "MGET a b c d x"),
            Value::Array(vec![bulk("1"), bulk("2"), bulk("3"), bulk("4"), bulk("2")])
        );
        assert_eq!(run(&mut c, "MSETNX h 1"), int(0));
        assert_eq!(run(&mut c, "MSET h 1"), Value::Okay);
        assert_eq!(run(&mut c, "TYPE h"), Value::SimpleString("string".into()));
        run(&mut c, "SET k v EX 100");
        assert_eq!(run(&mut c, "MSET k v2"), Value::Okay);
        assert_eq!(run(&mut c, "TTL k"), int(-1));
    }

    /// SETRANGE, APPEND and INCR edit the value and keep the TTL; the
    /// 512MB limit follows `proto-max-bulk-len`.
    #[test]
    fn edits_keep_ttl_and_obey_proto_max_bulk_len() {
        let mut c = conn();
        run(&mut c, "SET k hello EX 100");
        assert_eq!(run(&mut c, "SETRANGE k 1 a"), int(5));
        assert_eq!(run(&mut c, "APPEND k !"), int(6));
        assert_eq!(run(&mut c, "TTL k"), int(100));
        assert_eq!(run(&mut c, "GET k"), bulk("hallo!"));
        let too_big = err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        assert_eq!(run(&mut c, "SETRANGE k 536870912 x"), too_big);
        assert_eq!(run(&mut c, "SETRANGE k 536870911 xy"), too_big);
        assert_eq!(
            run(&mut c, "SETRANGE k -1 x"),
            err("ERR offset is out of range")
        );
        run(&mut c, "CONFIG SET proto-max-bulk-len 1048576");
        assert_eq!(run(&mut c, "SETRANGE k 1048576 x"), too_big);
        assert_eq!(run(&mut c, "SETRANGE new 1048575 x"), int(1048576));
    }

    /// Whether a command run by another client between WATCH k and EXEC
    /// aborts the transaction (Redis's `signalModifiedKey`). A trailing
    /// space sends an empty last argument.
    #[test]
    fn watch_sees_only_real_changes() {
        let setup = ["SET k v EX 100"];
        for (change, touches) in [
            ("SET k x NX", false),
            ("SET k x XX", true),
            ("GETEX k", false),
            ("GETEX k PERSIST", true),
            ("GETEX nokey PERSIST", false),
            ("SETRANGE k 0 ", false),
            ("APPEND k ", true),
            ("INCRBYFLOAT k abc", false),
            ("GETDEL nokey", false),
            ("GETDEL k", true),
            ("GETEX k EX 10", true),
            ("GETEX k PXAT 1", true),
            ("SETRANGE k 1 x", true),
            ("MSETNX k 1 z 2", false),
            // Reading commands never touch.
            ("TOUCH k", false),
            ("OBJECT ENCODING k", false),
            ("COPY k k2", false),
            ("LCS k k", false),
        ] {
            assert_watch(&setup, "k", change, touches);
        }
    }
}
