//! Hash commands, following Redis 7.0's `t_hash.c`: HSET HMSET HSETNX HGET
//! HMGET HGETALL HKEYS HVALS HDEL HEXISTS HLEN HSTRLEN HINCRBY HINCRBYFLOAT
//! HRANDFIELD HSCAN.
//!
//! The order of checks is Redis's, because it decides which error a client
//! sees when several things are wrong: numeric arguments are parsed before
//! the key is looked up (so `HINCRBY str f x` is "not an integer", not
//! WRONGTYPE), except where Redis looks the key up first (HSCAN's options,
//! HRANDFIELD's key). A key is marked modified (for WATCH) only where Redis
//! calls `signalModifiedKey`: HSET always, the others only when a field
//! really changed.
//!
//! Small Redis hashes keep insertion order; ours is a `HashMap`, so HGETALL,
//! HKEYS, HVALS and HSCAN reply in an arbitrary order, which Redis does not
//! promise either.

use std::collections::HashMap;

use rand::seq::index;
use rand::Rng;

use super::keys::{parse_cursor, parse_scan_options};
use super::{CmdResult, Ctx, Spec};
use crate::memory::args::{int_arg, is, parse_i64};
use crate::memory::error::CmdError;
use crate::memory::float::LongDouble;
use crate::memory::glob::glob_match;
use crate::memory::reply;
use crate::memory::value::Bytes;

/// A hash value as the keyspace stores it.
type Hash = HashMap<Bytes, Bytes>;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "hset",
        arity: -4,
        handler: hset,
    },
    Spec {
        name: "hmset",
        arity: -4,
        handler: hset,
    },
    Spec {
        name: "hsetnx",
        arity: 4,
        handler: hsetnx,
    },
    Spec {
        name: "hget",
        arity: 3,
        handler: hget,
    },
    Spec {
        name: "hmget",
        arity: -3,
        handler: hmget,
    },
    Spec {
        name: "hgetall",
        arity: 2,
        handler: hgetall,
    },
    Spec {
        name: "hkeys",
        arity: 2,
        handler: hkeys,
    },
    Spec {
        name: "hvals",
        arity: 2,
        handler: hvals,
    },
    Spec {
        name: "hdel",
        arity: -3,
        handler: hdel,
    },
    Spec {
        name: "hexists",
        arity: 3,
        handler: hexists,
    },
    Spec {
        name: "hlen",
        arity: 2,
        handler: hlen,
    },
    Spec {
        name: "hstrlen",
        arity: 3,
        handler: hstrlen,
    },
    Spec {
        name: "hincrby",
        arity: 4,
        handler: hincrby,
    },
    Spec {
        name: "hincrbyfloat",
        arity: 4,
        handler: hincrbyfloat,
    },
    Spec {
        name: "hrandfield",
        arity: -2,
        handler: hrandfield,
    },
    Spec {
        name: "hscan",
        arity: -3,
        handler: hscan,
    },
];

/// HSET and HMSET: the table only knows "at least 4 arguments"; an odd
/// field/value count is the handler's own arity error, with the same text.
fn hset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() % 2 == 1 {
        return Err(super::lookup(args[0]).map_or(CmdError::Syntax, super::wrong_arity));
    }
    let key = args[1];
    let hash = ctx.write_or_create::<Hash>(key)?;
    let created = args[2..]
        .chunks_exact(2)
        .filter(|pair| hash.insert(pair[0].to_vec(), pair[1].to_vec()).is_none())
        .count();
    // Redis signals even when every value was already there.
    ctx.modified(key);
    // HSET answers how many fields are new; the deprecated HMSET answers OK.
    Ok(if is(args[0], "hmset") {
        reply::ok()
    } else {
        reply::int(created)
    })
}

fn hsetnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let hash = ctx.write_or_create::<Hash>(key)?;
    if hash.contains_key(field) {
        return Ok(reply::int(0));
    }
    hash.insert(field.to_vec(), args[3].to_vec());
    ctx.modified(key);
    Ok(reply::int(1))
}

fn hget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let value = ctx
        .read::<Hash>(args[1])?
        .and_then(|h| h.get(args[2]))
        .cloned();
    Ok(value.map_or_else(reply::nil, reply::bulk))
}

/// A missing key is an empty hash: one nil per field.
fn hmget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let hash = ctx.read::<Hash>(args[1])?;
    let values = args[2..]
        .iter()
        .map(|f| {
            hash.and_then(|h| h.get(*f))
                .map_or_else(reply::nil, |v| reply::bulk(v.clone()))
        })
        .collect();
    Ok(reply::array(values))
}

/// Which parts of each field HGETALL, HKEYS and HVALS reply with.
#[derive(Clone, Copy)]
enum Parts {
    Fields,
    Values,
    Both,
}

fn hgetall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    dump(ctx, args[1], Parts::Both)
}

fn hkeys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    dump(ctx, args[1], Parts::Fields)
}

fn hvals(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    dump(ctx, args[1], Parts::Values)
}

/// The whole hash as a flat array (RESP2's shape of HGETALL's map).
fn dump(ctx: &mut Ctx<'_>, key: &[u8], parts: Parts) -> CmdResult {
    let Some(hash) = ctx.read::<Hash>(key)? else {
        return Ok(reply::array(Vec::new()));
    };
    Ok(reply::array(flatten(hash.iter(), parts)))
}

/// Field/value pairs as the flat list of bulk strings RESP2 replies with.
fn flatten<'a>(
    pairs: impl Iterator<Item = (&'a Bytes, &'a Bytes)>,
    parts: Parts,
) -> Vec<redis::Value> {
    let mut out = Vec::new();
    for (field, value) in pairs {
        if matches!(parts, Parts::Fields | Parts::Both) {
            out.push(reply::bulk(field.clone()));
        }
        if matches!(parts, Parts::Values | Parts::Both) {
            out.push(reply::bulk(value.clone()));
        }
    }
    out
}

/// Deleting the last field deletes the key.
fn hdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let Some(hash) = ctx.write::<Hash>(key)? else {
        return Ok(reply::int(0));
    };
    let deleted = args[2..]
        .iter()
        .filter(|f| hash.remove(**f).is_some())
        .count();
    if deleted > 0 {
        ctx.drop_if_empty(key);
        ctx.modified(key);
    }
    Ok(reply::int(deleted))
}

fn hexists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let found = ctx
        .read::<Hash>(args[1])?
        .is_some_and(|h| h.contains_key(args[2]));
    Ok(reply::int(i64::from(found)))
}

fn hlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let len = ctx.read::<Hash>(args[1])?.map_or(0, HashMap::len);
    Ok(reply::int(len))
}

fn hstrlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let len = ctx
        .read::<Hash>(args[1])?
        .and_then(|h| h.get(args[2]))
        .map_or(0, Vec::len);
    Ok(reply::int(len))
}

/// HINCRBY: the increment is checked first, then the type of the key, then
/// the stored value (which must be a canonical integer, as `string2ll`
/// reads it), then the overflow.
fn hincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let incr = int_arg(args[3])?;
    let hash = ctx.write_or_create::<Hash>(key)?;
    let current = match hash.get(field) {
        Some(v) => parse_i64(v).ok_or_else(|| CmdError::err("hash value is not an integer"))?,
        None => 0,
    };
    let sum = current.checked_add(incr).ok_or(CmdError::Overflow)?;
    hash.insert(field.to_vec(), sum.to_string().into_bytes());
    ctx.modified(key);
    Ok(reply::int(sum))
}

/// HINCRBYFLOAT computes in `long double` like Redis and stores the result
/// as text, so the next HGET returns exactly what this command replied.
fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let incr = LongDouble::parse(args[3]).ok_or(CmdError::NotFloat)?;
    // Adding the increment to zero is the finiteness test: `string2ld`
    // accepts "inf", which Redis then refuses with its own message.
    let incr = ld_zero()?
        .checked_add(incr)
        .ok_or_else(|| CmdError::err("value is NaN or Infinity"))?;
    let hash = ctx.write_or_create::<Hash>(key)?;
    let current = match hash.get(field) {
        Some(v) => LongDouble::parse(v).ok_or_else(|| CmdError::err("hash value is not a float"))?,
        None => ld_zero()?,
    };
    let sum = current
        .checked_add(incr)
        .ok_or_else(|| CmdError::err("increment would produce NaN or Infinity"))?;
    let text = sum.to_human_string().into_bytes();
    hash.insert(field.to_vec(), text.clone());
    ctx.modified(key);
    Ok(reply::bulk(text))
}

/// The `long double` zero: a missing field counts as 0.
fn ld_zero() -> Result<LongDouble, CmdError> {
    LongDouble::parse(b"0").ok_or(CmdError::NotFloat)
}

/// The most elements HRANDFIELD with a negative count may reply with.
///
/// Redis has no limit: `HRANDFIELD h -4611686018427387903 WITHVALUES` makes
/// it build a reply until the machine runs out of memory (we saw the kernel
/// kill it). An in-process engine must not take its host down, so a count
/// whose reply would exceed this many picks gets Redis's own "value is out
/// of range" error instead. No sensible client asks for more.
const MAX_RANDOM_PICKS: u64 = 1 << 24;

/// HRANDFIELD key [count [WITHVALUES]].
///
/// The count is checked before the key is looked up; a positive count
/// gives distinct fields (the whole hash if it is not larger), a negative
/// one `|count|` independent picks, repeats allowed.
fn hrandfield(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let Some(count_arg) = args.get(2) else {
        return random_field(ctx, args[1]);
    };
    let count = int_arg(count_arg)?;
    if count == i64::MIN {
        return Err(CmdError::err(
            "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    let with_values = match &args[3..] {
        [] => false,
        [opt] if is(opt, "withvalues") => true,
        _ => return Err(CmdError::Syntax),
    };
    // Redis doubles the count for WITHVALUES, so it caps it at half the range.
    if with_values && count.unsigned_abs() > (i64::MAX / 2).unsigned_abs() {
        return Err(CmdError::err("value is out of range"));
    }
    let Some(hash) = ctx.read::<Hash>(args[1])? else {
        return Ok(reply::array(Vec::new()));
    };
    let parts = if with_values { Parts::Both } else { Parts::Fields };
    let entries: Vec<(&Bytes, &Bytes)> = hash.iter().collect();
    let mut rng = rand::rng();
    let picks: Vec<usize> = if count < 0 {
        let n = count.unsigned_abs();
        if entries.is_empty() {
            Vec::new()
        } else if n > MAX_RANDOM_PICKS {
            return Err(CmdError::err("value is out of range"));
        } else {
            (0..n).map(|_| rng.random_range(0..entries.len())).collect()
        }
    } else {
        let n = usize::try_from(count).unwrap_or(usize::MAX);
        if n >= entries.len() {
            (0..entries.len()).collect()
        } else {
            index::sample(&mut rng, entries.len(), n).into_vec()
        }
    };
    let chosen = picks.into_iter().filter_map(|i| entries.get(i).copied());
    Ok(reply::array(flatten(chosen, parts)))
}

/// HRANDFIELD without a count: one field as a bulk string, nil if no key.
fn random_field(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let Some(hash) = ctx.read::<Hash>(key)? else {
        return Ok(reply::nil());
    };
    let mut rng = rand::rng();
    let n = rng.random_range(0..hash.len().max(1));
    Ok(hash
        .keys()
        .nth(n)
        .map_or_else(reply::nil, |f| reply::bulk(f.clone())))
}

/// HSCAN key cursor [MATCH pattern] [COUNT count].
///
/// Redis parses the cursor, then looks the key up, and only then parses
/// the options: a missing key answers an empty scan whatever the options.
///
/// Every call returns all matching fields and the cursor 0, whatever the
/// cursor and COUNT. Redis does exactly that for hashes small enough to be
/// stored as a listpack (and COUNT is only a hint anyway); for larger ones
/// it walks its hash table in steps. One step holding everything keeps
/// SCAN's guarantees (every field present for the whole iteration is
/// returned, none twice within a call), while our `HashMap` offers no
/// cursor that survives a rehash. The reply is never larger than HGETALL's.
fn hscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    parse_cursor(args[2])?;
    let Some(hash) = ctx.read::<Hash>(args[1])? else {
        return Ok(scan_reply(Vec::new()));
    };
    let opts = parse_scan_options(&args[3..], false)?;
    let matching = hash
        .iter()
        .filter(|(field, _)| opts.pattern.is_none_or(|p| glob_match(p, field, false)));
    Ok(scan_reply(flatten(matching, Parts::Both)))
}

/// A final SCAN-family step: cursor "0" and the items.
fn scan_reply(items: Vec<redis::Value>) -> redis::Value {
    reply::array(vec![reply::bulk("0"), reply::array(items)])
}
