//! Hash commands, following Redis 7.0's `t_hash.c`: HSET HMSET HSETNX HGET
//! HMGET HGETALL HKEYS HVALS HDEL HEXISTS HLEN HSTRLEN HINCRBY HINCRBYFLOAT
//! HRANDFIELD HSCAN.
//!
//! The order of checks is Redis's, because it decides which error a client
//! sees when several things are wrong: numeric arguments are parsed before
//! the key is looked up (so `HINCRBY str f x` is "not an integer", not
//! WRONGTYPE); HSCAN alone looks the key up before parsing its MATCH and
//! COUNT options. A key is marked modified (for WATCH) only where Redis
//! calls `signalModifiedKey`: HSET always, the others only when a field
//! really changed.
//!
//! The value is a [`HashValue`]: small hashes keep insertion order as in
//! Redis (so HGETALL, HKEYS, HVALS and HSCAN reply in Redis's order); big
//! ones reply in an arbitrary order, which Redis does not promise either.
//!
//! Fields with a TTL (Redis 7.4, see `hash_expiry`) are expired as Redis
//! 7.4.1 does it: the commands that look a field up delete it once its
//! time has passed; HGETALL, HKEYS, HVALS and HSCAN skip it; HRANDFIELD
//! deletes every expired field first; HLEN counts it until it is deleted.

use rand::Rng;

use super::hash_expiry::{expire_all_fields, expire_fields};
use super::shared::random_picks::RandomPicks;
use super::shared::scan::scan_collection;
use super::{arity_error, remove_elements, CmdResult, Ctx, Spec};
use crate::args::{int_arg, is, parse_i64, random_count_with};
use crate::error::CmdError;
use crate::float::LongDouble;
use crate::notify::class;
use crate::reply;
use crate::value::hash::{Fit, HashValue};

/// A hash value as the keyspace stores it.
type Hash = HashValue;

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
        return Err(arity_error(args));
    }
    let key = args[1];
    let fit = Fit::of(ctx.ks().limits());
    let hash = ctx.write_or_create::<Hash>(key)?;
    let created = args[2..]
        .chunks_exact(2)
        .filter(|pair| hash.insert(pair[0], pair[1], fit))
        .count();
    // Redis signals even when every value was already there, and counts
    // a change per field written.
    ctx.modified_with(key, args[2..].iter().copied());
    ctx.notify(class::HASH, "hset", key);
    ctx.changes((args.len() - 2) / 2);
    // HSET answers how many fields are new; the deprecated HMSET answers OK.
    Ok(if is(args[0], "hmset") {
        reply::ok()
    } else {
        reply::int(created)
    })
}

fn hsetnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let fit = Fit::of(ctx.ks().limits());
    expire_fields(ctx, key, &[field]);
    let hash = ctx.write_or_create::<Hash>(key)?;
    if hash.contains_key(field) {
        return Ok(reply::int(0));
    }
    hash.insert(field, args[3], fit);
    ctx.modified_with(key, [field, args[3]]);
    ctx.notify(class::HASH, "hset", key);
    Ok(reply::int(1))
}

fn hget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_fields(ctx, args[1], &args[2..3]);
    let value = ctx
        .read::<Hash>(args[1])?
        .and_then(|h| h.get(args[2]))
        .map(<[u8]>::to_vec);
    Ok(value.map_or_else(reply::nil, reply::bulk))
}

/// A missing key is an empty hash: one nil per field.
fn hmget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_fields(ctx, args[1], &args[2..]);
    let hash = ctx.read::<Hash>(args[1])?;
    let values = args[2..]
        .iter()
        .map(|f| {
            hash.and_then(|h| h.get(f))
                .map_or_else(reply::nil, reply::bulk)
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

/// The whole hash: HGETALL's map (a flat array in RESP2), or the array of
/// its fields or values.
fn dump(ctx: &mut Ctx<'_>, key: &[u8], parts: Parts) -> CmdResult {
    let now = ctx.now;
    let hash = ctx.read::<Hash>(key)?;
    if let Parts::Both = parts {
        let pairs = hash.into_iter().flat_map(|h| h.live(now));
        return Ok(reply::map(
            pairs
                .map(|(field, value)| (reply::bulk(field), reply::bulk(value)))
                .collect(),
        ));
    }
    let Some(hash) = hash else {
        return Ok(reply::array(Vec::new()));
    };
    Ok(reply::array(flatten(hash.live(now), parts)))
}

/// Field/value pairs as the flat list of bulk strings RESP2 replies with.
fn flatten<'a>(
    pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    parts: Parts,
) -> Vec<redis::Value> {
    let mut out = Vec::new();
    for (field, value) in pairs {
        if matches!(parts, Parts::Fields | Parts::Both) {
            out.push(reply::bulk(field));
        }
        if matches!(parts, Parts::Values | Parts::Both) {
            out.push(reply::bulk(value));
        }
    }
    out
}

/// Deleting the last field deletes the key.
fn hdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    remove_elements::<Hash>(ctx, args, (class::HASH, "hdel"), |hash, field| {
        hash.remove(field)
    })
}

fn hexists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_fields(ctx, args[1], &args[2..3]);
    let found = ctx
        .read::<Hash>(args[1])?
        .is_some_and(|h| h.contains_key(args[2]));
    Ok(reply::int(i64::from(found)))
}

fn hlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let len = ctx.read::<Hash>(args[1])?.map_or(0, HashValue::len);
    Ok(reply::int(len))
}

fn hstrlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_fields(ctx, args[1], &args[2..3]);
    let len = ctx
        .read::<Hash>(args[1])?
        .and_then(|h| h.get(args[2]))
        .map_or(0, <[u8]>::len);
    Ok(reply::int(len))
}

/// HINCRBY: the increment is checked first, then the type of the key, then
/// the stored value (which must be a canonical integer, as `string2ll`
/// reads it), then the overflow.
fn hincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let incr = int_arg(args[3])?;
    let fit = Fit::of(ctx.ks().limits());
    expire_fields(ctx, key, &[field]);
    let hash = ctx.write_or_create::<Hash>(key)?;
    let current = match hash.get(field) {
        Some(v) => parse_i64(v).ok_or_else(|| CmdError::err("hash value is not an integer"))?,
        None => 0,
    };
    let sum = current.checked_add(incr).ok_or(CmdError::Overflow)?;
    let mut text = itoa::Buffer::new();
    let text = text.format(sum).as_bytes();
    hash.insert_keeping_ttl(field, text, fit);
    ctx.modified_with(key, [field, text]);
    ctx.notify(class::HASH, "hincrby", key);
    Ok(reply::int(sum))
}

/// HINCRBYFLOAT computes in `long double` like Redis and stores the result
/// as text, so the next HGET returns exactly what this command replied.
fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let incr = LongDouble::parse(args[3]).ok_or(CmdError::NotFloat)?;
    // `string2ld` accepts "inf", which Redis then refuses with its own message.
    if !incr.is_finite() {
        return Err(CmdError::err("value is NaN or Infinity"));
    }
    let fit = Fit::of(ctx.ks().limits());
    expire_fields(ctx, key, &[field]);
    let hash = ctx.write_or_create::<Hash>(key)?;
    let current = match hash.get(field) {
        Some(v) => {
            LongDouble::parse(v).ok_or_else(|| CmdError::err("hash value is not a float"))?
        }
        None => LongDouble::ZERO,
    };
    let sum = current
        .checked_add(incr)
        .ok_or_else(|| CmdError::err("increment would produce NaN or Infinity"))?;
    let text = sum.to_human_string().into_bytes();
    hash.insert_keeping_ttl(field, &text, fit);
    ctx.modified_with(key, [field, &text[..]]);
    ctx.notify(class::HASH, "hincrbyfloat", key);
    Ok(reply::bulk(text))
}

/// `HRANDFIELD key [count [WITHVALUES]]`.
///
/// The count is checked before the key is looked up; a positive count
/// gives distinct fields (the whole hash if it is not larger), a negative
/// one `|count|` independent picks, repeats allowed, up to the engine's
/// limit (see [`RandomPicks`]; HRANDFIELD says only "value is out of
/// range" when refused).
fn hrandfield(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let Some(count_arg) = args.get(2) else {
        expire_all_fields(ctx, args[1]);
        return random_field(ctx, args[1]);
    };
    let (count, with_values) = random_count_with(count_arg, &args[3..], "withvalues")?;
    expire_all_fields(ctx, args[1]);
    let resp3 = ctx.resp3();
    let Some(hash) = ctx.read::<Hash>(args[1])? else {
        return Ok(reply::array(Vec::new()));
    };
    let parts = if with_values {
        Parts::Both
    } else {
        Parts::Fields
    };
    let picks =
        RandomPicks::new(count, hash.len()).map_err(|_| CmdError::err("value is out of range"))?;
    let chosen = picks.select(hash.iter().collect());
    // RESP3: [field, value] pairs, as Redis does for `c->resp > 2`.
    if with_values && resp3 {
        return Ok(reply::array(
            chosen
                .into_iter()
                .map(|(f, v)| reply::array(vec![reply::bulk(f), reply::bulk(v)]))
                .collect(),
        ));
    }
    Ok(reply::array(flatten(chosen.into_iter(), parts)))
}

/// HRANDFIELD without a count: one field as a bulk string, nil if no key.
fn random_field(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let Some(hash) = ctx.read::<Hash>(key)? else {
        return Ok(reply::nil());
    };
    let mut rng = rand::rng();
    let n = rng.random_range(0..hash.len().max(1));
    Ok(hash
        .iter()
        .nth(n)
        .map_or_else(reply::nil, |(f, _)| reply::bulk(f)))
}

/// HSCAN: the matching fields and their values (NOVALUES: the fields
/// alone) of one page of the hash (see [`scan_collection`] and
/// [`HashValue::scan_page`]); expired fields are left out, not deleted,
/// as Redis 7.4's `scanCallback` skips them.
fn hscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    scan_collection::<Hash>(ctx, args, true, |hash, scan| {
        let (next, page) = hash.scan_page(scan.cursor, scan.count);
        let live = page.filter(|(field, _)| !hash.is_expired(field, now) && (scan.matches)(field));
        let parts = if scan.novalues {
            Parts::Fields
        } else {
            Parts::Both
        };
        (next, flatten(live, parts))
    })
}

/// Expected replies are the ones redis-server 7.0.15 gave to the same
/// commands (RESP2, read with `redis-cli --no-raw`).
#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::command::test_util::*;
    use crate::Connection;

    /// A flat field/value array as sorted pairs.
    fn pairs(v: Value) -> Vec<(String, String)> {
        let items = strings(v);
        assert_eq!(items.len() % 2, 0, "odd flat array");
        let mut out: Vec<(String, String)> = items
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect();
        out.sort();
        out
    }

    fn owned(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn hset_counts_new_fields_and_hmset_says_ok() {
        let mut c = conn();
        assert_eq!(run(&mut c, "HSET h a 1 b 2 a 3"), int(2));
        assert_eq!(run(&mut c, "HGET h a"), bulk("3"));
        assert_eq!(run(&mut c, "HSET h a 4 c 5"), int(1));
        assert_eq!(run(&mut c, "HMSET h c 3"), Value::Okay);
        assert_eq!(run(&mut c, "hmset h d 4"), Value::Okay);
        assert_eq!(run(&mut c, "HLEN h"), int(4));
    }

    #[test]
    fn hset_arity_errors_name_the_command() {
        let mut c = conn();
        let hset = "ERR wrong number of arguments for 'hset' command";
        assert_eq!(run(&mut c, "HSET h a 1 b"), err(hset));
        assert_eq!(run(&mut c, "HSET h a"), err(hset));
        assert_eq!(run(&mut c, "HSET h"), err(hset));
        assert_eq!(
            run(&mut c, "HMSET h a 1 b"),
            err("ERR wrong number of arguments for 'hmset' command")
        );
        // The arity error comes before the type check, and writes nothing.
        run(&mut c, "RPUSH s x");
        assert_eq!(run(&mut c, "HSET s a 1 b"), err(hset));
        assert_eq!(run(&mut c, "EXISTS h"), int(0));
    }

    #[test]
    fn reads_of_missing_keys_and_fields() {
        let mut c = conn();
        assert_eq!(run(&mut c, "HGET nokey a"), Value::Nil);
        assert_eq!(
            run(&mut c, "HMGET nokey a b"),
            Value::Array(vec![Value::Nil, Value::Nil])
        );
        assert_eq!(run(&mut c, "HGETALL nokey"), empty());
        assert_eq!(run(&mut c, "HKEYS nokey"), empty());
        assert_eq!(run(&mut c, "HVALS nokey"), empty());
        assert_eq!(run(&mut c, "HLEN nokey"), int(0));
        assert_eq!(run(&mut c, "HEXISTS nokey a"), int(0));
        assert_eq!(run(&mut c, "HSTRLEN nokey a"), int(0));
        assert_eq!(run(&mut c, "HDEL nokey a"), int(0));
        run(&mut c, "HSET h a 1 c 333");
        assert_eq!(
            run(&mut c, "HMGET h a zz c"),
            Value::Array(vec![bulk("1"), Value::Nil, bulk("333")])
        );
        assert_eq!(run(&mut c, "HEXISTS h a"), int(1));
        assert_eq!(run(&mut c, "HEXISTS h zz"), int(0));
        assert_eq!(run(&mut c, "HSTRLEN h c"), int(3));
        assert_eq!(run(&mut c, "HSTRLEN h zz"), int(0));
        assert_eq!(run(&mut c, "HGET h zz"), Value::Nil);
    }

    #[test]
    fn whole_hash_replies() {
        let mut c = conn();
        run(&mut c, "HSET h a 1 b 2 c 3");
        assert_eq!(
            pairs(run(&mut c, "HGETALL h")),
            owned(&[("a", "1"), ("b", "2"), ("c", "3")])
        );
        assert_eq!(sorted(run(&mut c, "HKEYS h")), ["a", "b", "c"]);
        assert_eq!(sorted(run(&mut c, "HVALS h")), ["1", "2", "3"]);
    }

    #[test]
    fn every_command_refuses_another_type() {
        let mut c = conn();
        run(&mut c, "RPUSH s x");
        for line in [
            "HSET s a 1",
            "HMSET s a 1",
            "HSETNX s a 1",
            "HGET s a",
            "HMGET s a",
            "HGETALL s",
            "HKEYS s",
            "HVALS s",
            "HDEL s a",
            "HEXISTS s a",
            "HLEN s",
            "HSTRLEN s a",
            "HINCRBY s a 1",
            "HINCRBYFLOAT s a 1",
            "HRANDFIELD s",
            "HRANDFIELD s 1",
            "HRANDFIELD s 0",
            "HSCAN s 0",
            "HSCAN s 0 COUNT 0",
        ] {
            assert_eq!(run(&mut c, line), err(WRONGTYPE), "{line}");
        }
        assert_eq!(run(&mut c, "LRANGE s 0 -1"), bulks(&["x"]));
    }

    #[test]
    fn hdel_counts_and_deletes_the_emptied_key() {
        let mut c = conn();
        run(&mut c, "HSET h a 1 b 2 c 3");
        assert_eq!(run(&mut c, "HDEL h zz"), int(0));
        assert_eq!(run(&mut c, "HDEL h a a b"), int(2));
        assert_eq!(pairs(run(&mut c, "HGETALL h")), owned(&[("c", "3")]));
        assert_eq!(run(&mut c, "HDEL h c"), int(1));
        assert_eq!(run(&mut c, "EXISTS h"), int(0));
    }

    #[test]
    fn hsetnx_sets_only_new_fields() {
        let mut c = conn();
        assert_eq!(run(&mut c, "HSETNX h a 1"), int(1));
        assert_eq!(run(&mut c, "HSETNX h a 100"), int(0));
        assert_eq!(run(&mut c, "HGET h a"), bulk("1"));
    }

    #[test]
    fn hincrby_rules() {
        let mut c = conn();
        assert_eq!(run(&mut c, "HINCRBY h f abc"), err(NOT_INT));
        assert_eq!(
            run(&mut c, "EXISTS h"),
            int(0),
            "a refused HINCRBY leaves no key"
        );
        run(&mut c, "RPUSH s x");
        // The increment is parsed before the type is checked.
        assert_eq!(run(&mut c, "HINCRBY s f abc"), err(NOT_INT));
        for bad in ["9223372036854775808", "+1", "01", "1.0", ""] {
            assert_eq!(
                run(&mut c, &format!("HINCRBY h f {bad}")),
                err(NOT_INT),
                "{bad}"
            );
        }
        assert_eq!(run(&mut c, "HINCRBY h f 5"), int(5));
        assert_eq!(run(&mut c, "HINCRBY h f -7"), int(-2));
        assert_eq!(run(&mut c, "HGET h f"), bulk("-2"));
        run(&mut c, "HSET h g x");
        assert_eq!(
            run(&mut c, "HINCRBY h g 1"),
            err("ERR hash value is not an integer")
        );
        c.execute(&[b"HSET", b"h", b"sp", b" 1"]);
        assert_eq!(
            run(&mut c, "HINCRBY h sp 1"),
            err("ERR hash value is not an integer")
        );
        run(
            &mut c,
            "HSET h m 9223372036854775807 n -9223372036854775808",
        );
        let overflow = err("ERR increment or decrement would overflow");
        assert_eq!(run(&mut c, "HINCRBY h m 1"), overflow);
        assert_eq!(run(&mut c, "HINCRBY h n -1"), overflow);
        assert_eq!(run(&mut c, "HINCRBY h m -1"), int(9223372036854775806));
        assert_eq!(run(&mut c, "HINCRBY h n 9223372036854775807"), int(-1));
        assert_eq!(run(&mut c, "HGET h m"), bulk("9223372036854775806"));
    }

    #[test]
    fn hincrbyfloat_rules() {
        let mut c = conn();
        assert_eq!(run(&mut c, "HINCRBYFLOAT h new 10.50"), bulk("10.5"));
        assert_eq!(run(&mut c, "HINCRBYFLOAT h new 3.0e3"), bulk("3010.5"));
        assert_eq!(run(&mut c, "HINCRBYFLOAT h new -3010.5"), bulk("0"));
        assert_eq!(run(&mut c, "HGET h new"), bulk("0"));
        assert_eq!(run(&mut c, "HINCRBYFLOAT h e 5.0e3"), bulk("5000"));
        assert_eq!(run(&mut c, "HINCRBYFLOAT h e -0.25"), bulk("4999.75"));
        run(&mut c, "HSET h a 1");
        assert_eq!(run(&mut c, "HINCRBYFLOAT h a 1.5"), bulk("2.5"));
        let not_float = err(NOT_FLOAT);
        assert_eq!(run(&mut c, "HINCRBYFLOAT h a abc"), not_float);
        assert_eq!(run(&mut c, "HINCRBYFLOAT h a nan"), not_float);
        assert_eq!(run(&mut c, "HINCRBYFLOAT h a "), not_float);
        assert_eq!(c.execute(&[b"HINCRBYFLOAT", b"h", b"a", b" 1"]), not_float);
        assert_eq!(
            run(&mut c, "HINCRBYFLOAT h a inf"),
            err("ERR value is NaN or Infinity")
        );
        assert_eq!(
            run(&mut c, "HINCRBYFLOAT nokey a -inf"),
            err("ERR value is NaN or Infinity")
        );
        assert_eq!(run(&mut c, "EXISTS nokey"), int(0));
        run(&mut c, "HSET h x hello");
        assert_eq!(
            run(&mut c, "HINCRBYFLOAT h x 1"),
            err("ERR hash value is not a float")
        );
        c.execute(&[b"HSET", b"h", b"sp", b" 1"]);
        assert_eq!(
            run(&mut c, "HINCRBYFLOAT h sp 1"),
            err("ERR hash value is not a float")
        );
        run(&mut c, "HSET h i inf");
        assert_eq!(
            run(&mut c, "HINCRBYFLOAT h i 1"),
            err("ERR increment would produce NaN or Infinity")
        );
        assert_eq!(run(&mut c, "HGET h i"), bulk("inf"));
        run(&mut c, "RPUSH s x");
        assert_eq!(run(&mut c, "HINCRBYFLOAT s a x"), not_float);
        assert_eq!(run(&mut c, "HINCRBYFLOAT s a 1"), err(WRONGTYPE));
    }

    /// Sums that only `long double` arithmetic gets right (the replies of
    /// redis-server on x86-64, where `long double` is 80-bit extended).
    #[test]
    fn hincrbyfloat_computes_in_long_double() {
        let mut c = conn();
        assert_eq!(run(&mut c, "HINCRBYFLOAT h f 0.1"), bulk("0.1"));
        assert_eq!(run(&mut c, "HINCRBYFLOAT h f 0.2"), bulk("0.3"));
        assert_eq!(run(&mut c, "HGET h f"), bulk("0.3"));
        run(&mut c, "HSET h big 1.7e308");
        let Value::BulkString(sum) = run(&mut c, "HINCRBYFLOAT h big 1.7e308") else {
            panic!("not a bulk string");
        };
        assert!(sum.starts_with(b"340000000000000000006273556050395"));
        assert_eq!(sum.len(), 309);
    }

    #[test]
    fn hrandfield_argument_checks() {
        let mut c = conn();
        run(&mut c, "HSET h a 1 b 2 c 3");
        run(&mut c, "RPUSH s x");
        assert_eq!(run(&mut c, "HRANDFIELD nokey"), Value::Nil);
        assert_eq!(run(&mut c, "HRANDFIELD nokey 3"), empty());
        assert_eq!(run(&mut c, "HRANDFIELD nokey -3 WITHVALUES"), empty());
        assert_eq!(run(&mut c, "HRANDFIELD nokey 0"), empty());
        assert_eq!(run(&mut c, "HRANDFIELD nokey x"), err(NOT_INT));
        assert_eq!(run(&mut c, "HRANDFIELD s x"), err(NOT_INT));
        assert_eq!(run(&mut c, "HRANDFIELD h WITHVALUES"), err(NOT_INT));
        let min = err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        );
        assert_eq!(run(&mut c, "HRANDFIELD h -9223372036854775808"), min);
        assert_eq!(run(&mut c, "HRANDFIELD nokey -9223372036854775808"), min);
        let range = err("ERR value is out of range");
        assert_eq!(
            run(&mut c, "HRANDFIELD h 9223372036854775807 WITHVALUES"),
            range
        );
        assert_eq!(
            run(&mut c, "HRANDFIELD h 4611686018427387904 WITHVALUES"),
            range
        );
        assert_eq!(
            run(&mut c, "HRANDFIELD h -4611686018427387904 WITHVALUES"),
            range
        );
        assert_eq!(run(&mut c, "HRANDFIELD h 1 WITHVALUE"), err(SYNTAX));
        assert_eq!(run(&mut c, "HRANDFIELD h 1 WITHVALUES x"), err(SYNTAX));
        assert_eq!(run(&mut c, "HRANDFIELD nokey 1 WITHVALUE"), err(SYNTAX));
        assert_eq!(run(&mut c, "HRANDFIELD h 0"), empty());
        assert_eq!(run(&mut c, "HRANDFIELD h 0 WITHVALUES"), empty());
    }

    #[test]
    fn hrandfield_picks() {
        let mut c = conn();
        run(&mut c, "HSET h a 1 b 2 c 3");
        let all = owned(&[("a", "1"), ("b", "2"), ("c", "3")]);
        // A count at least the size gives the whole hash.
        assert_eq!(pairs(run(&mut c, "HRANDFIELD h 5 WITHVALUES")), all);
        assert_eq!(
            pairs(run(&mut c, "HRANDFIELD h 4611686018427387903 withvalues")),
            all
        );
        assert_eq!(sorted(run(&mut c, "HRANDFIELD h 3")), ["a", "b", "c"]);
        for _ in 0..20 {
            // Fewer than the size: distinct fields.
            let two = sorted(run(&mut c, "HRANDFIELD h 2"));
            assert_eq!(two.len(), 2);
            assert_ne!(two[0], two[1]);
            assert!(two.iter().all(|f| ["a", "b", "c"].contains(&f.as_str())));
            // Negative: exactly |count| picks, each a real pair.
            let picks = pairs(run(&mut c, "HRANDFIELD h -5 WITHVALUES"));
            assert_eq!(picks.len(), 5);
            assert!(picks.iter().all(|p| all.contains(p)));
            let one = run(&mut c, "HRANDFIELD h");
            assert!([bulk("a"), bulk("b"), bulk("c")].contains(&one), "{one:?}");
        }
        // Repeats appear with a negative count larger than the hash.
        let many = sorted(run(&mut c, "HRANDFIELD h -50"));
        assert_eq!(many.len(), 50);
        assert_eq!(sorted(run(&mut c, "HRANDFIELD h -1")).len(), 1);
        // Beyond what an in-process engine will build (Redis runs out of memory).
        assert_eq!(
            run(&mut c, "HRANDFIELD h -4611686018427387903 WITHVALUES"),
            err("ERR value is out of range")
        );
        assert_eq!(
            run(&mut c, "HRANDFIELD h -9223372036854775807"),
            err("ERR value is out of range")
        );
    }

    #[test]
    fn hscan_replies_everything_at_once() {
        let mut c = conn();
        assert_eq!(
            run(&mut c, "HSCAN nokey 0"),
            Value::Array(vec![bulk("0"), empty()])
        );
        // Options are parsed only once the key is found.
        assert_eq!(
            run(&mut c, "HSCAN nokey 0 COUNT 0"),
            Value::Array(vec![bulk("0"), empty()])
        );
        assert_eq!(
            run(&mut c, "HSCAN nokey 0 blah"),
            Value::Array(vec![bulk("0"), empty()])
        );
        assert_eq!(run(&mut c, "HSCAN nokey abc"), err("ERR invalid cursor"));
        assert_eq!(
            c.execute(&[b"HSCAN", b"nokey", b" 1"]),
            err("ERR invalid cursor")
        );
        assert_eq!(
            run(&mut c, "HSCAN h 18446744073709551616"),
            err("ERR invalid cursor")
        );
        run(&mut c, "HSET h a 1 b 2 c 3");
        let all = owned(&[("a", "1"), ("b", "2"), ("c", "3")]);
        for cursor in ["0", "7", "18446744073709551615"] {
            let Value::Array(reply) = run(&mut c, &format!("HSCAN h {cursor}")) else {
                panic!("not an array");
            };
            assert_eq!(reply[0], bulk("0"));
            assert_eq!(pairs(reply[1].clone()), all);
        }
        let scan = |c: &mut Connection, line: &str| {
            let Value::Array(mut reply) = run(c, line) else {
                panic!("not an array");
            };
            assert_eq!(reply[0], bulk("0"));
            pairs(reply.remove(1))
        };
        assert_eq!(scan(&mut c, "HSCAN h 0 MATCH a*"), owned(&[("a", "1")]));
        assert_eq!(
            scan(&mut c, "HSCAN h 0 match [ab] count 1"),
            owned(&[("a", "1"), ("b", "2")])
        );
        assert_eq!(run(&mut c, "HSCAN h 0 COUNT 0"), err(SYNTAX));
        assert_eq!(run(&mut c, "HSCAN h 0 COUNT x"), err(NOT_INT));
        assert_eq!(run(&mut c, "HSCAN h 0 TYPE string"), err(SYNTAX));
        assert_eq!(run(&mut c, "HSCAN h 0 MATCH"), err(SYNTAX));
        // `*` matches the empty field; any other pattern needs a character.
        c.execute(&[b"HSET", b"e", b"", b"x"]);
        assert_eq!(scan(&mut c, "HSCAN e 0 MATCH *"), owned(&[("", "x")]));
        assert_eq!(scan(&mut c, "HSCAN e 0 MATCH *?"), owned(&[]));
        assert_eq!(scan(&mut c, "HSCAN e 0 MATCH **"), owned(&[]));
    }

    #[test]
    fn field_writes_keep_the_ttl() {
        let (clock, mut c) = clocked(1_000_000);
        run(&mut c, "HSET h a 1");
        run(&mut c, "EXPIRE h 100");
        run(&mut c, "HSET h b 2");
        run(&mut c, "HINCRBY h n 1");
        run(&mut c, "HINCRBYFLOAT h f 1.5");
        run(&mut c, "HSETNX h z 1");
        run(&mut c, "HDEL h a");
        assert_eq!(run(&mut c, "TTL h"), int(100));
        clock.advance(std::time::Duration::from_secs(101));
        assert_eq!(run(&mut c, "HGET h b"), Value::Nil);
        // A write to an expired hash starts a new one, without TTL.
        assert_eq!(run(&mut c, "HSET h b 3"), int(1));
        assert_eq!(run(&mut c, "HLEN h"), int(1));
        assert_eq!(run(&mut c, "TTL h"), int(-1));
    }

    #[test]
    fn writes_touch_watched_keys_only_when_redis_does() {
        let mut c = conn();
        run(&mut c, "HSET h f v");
        // Observed on redis-server: aborts the transaction or not.
        assert!(
            touches(&mut c, "h", "HSET h f v"),
            "HSET with the same value"
        );
        assert!(touches(&mut c, "h", "HINCRBY h n 0"));
        assert!(touches(&mut c, "h", "HINCRBYFLOAT h x 0"));
        assert!(touches(&mut c, "h", "HSETNX h new v"));
        assert!(touches(&mut c, "h", "HDEL h new"));
        assert!(!touches(&mut c, "h", "HSETNX h f v"));
        assert!(!touches(&mut c, "h", "HDEL h zz"));
        assert!(
            !touches(&mut c, "h", "HINCRBY h f 1"),
            "refused: not an integer"
        );
        assert!(!touches(&mut c, "h", "HGETALL h"));
        assert!(!touches(&mut c, "m", "HDEL m f"));
    }

    #[test]
    fn binary_fields_and_values() {
        let mut c = conn();
        let field: &[u8] = &[0xff, 0, b'\r', b'\n'];
        let value: &[u8] = &[0xfe, 0];
        assert_eq!(c.execute(&[b"HSET", b"h", field, value]), int(1));
        assert_eq!(
            c.execute(&[b"HGET", b"h", field]),
            Value::BulkString(value.to_vec())
        );
        assert_eq!(c.execute(&[b"HSTRLEN", b"h", field]), int(2));
        assert_eq!(
            c.execute(&[b"HINCRBY", b"h", field, b"1"]),
            err("ERR hash value is not an integer")
        );
    }
}
