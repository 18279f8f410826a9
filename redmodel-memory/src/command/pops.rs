//! The pops that take from the first non-empty of several keys, and the
//! blocking commands of lists and sorted sets, following Redis 7.0's
//! t_list.c and t_zset.c: LMPOP ZMPOP, BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP,
//! BZPOPMIN BZPOPMAX BZMPOP.
//!
//! A blocking command first does what its non-blocking form would; only
//! when every key is missing does it block (see [`crate::command::blocking`]), with
//! a serve function that does the same pop on the key that became ready.
//! A key of another type is WRONGTYPE when the command runs, but while it
//! waits, a key that turns into another type serves nothing: the client
//! stays blocked, as in Redis 7.0. Inside MULTI/EXEC and scripts the
//! command does not block: it answers as a timeout would.
//!
//! Arguments are checked in Redis's order: BLPOP and BZPOP read the timeout
//! first, BLMOVE its two ends then the timeout, the MPOP family numkeys,
//! the end and COUNT, then the timeout.

use std::time::Duration;

use super::lists::{move_element, pop, pop_event, End, List};
use super::{CmdResult, Ctx, Spec};
use crate::args::{is, parse_i64};
use crate::command::blocking::{self, deadline_base, parse_timeout, Serve};
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::zset::ZSet;
use crate::value::Bytes;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "lmpop",
        arity: -4,
        handler: lmpop,
    },
    Spec {
        name: "zmpop",
        arity: -4,
        handler: zmpop,
    },
    Spec {
        name: "blpop",
        arity: -3,
        handler: blpop,
    },
    Spec {
        name: "brpop",
        arity: -3,
        handler: brpop,
    },
    Spec {
        name: "blmove",
        arity: 6,
        handler: blmove,
    },
    Spec {
        name: "brpoplpush",
        arity: 4,
        handler: brpoplpush,
    },
    Spec {
        name: "blmpop",
        arity: -5,
        handler: blmpop,
    },
    Spec {
        name: "bzpopmin",
        arity: -3,
        handler: bzpopmin,
    },
    Spec {
        name: "bzpopmax",
        arity: -3,
        handler: bzpopmax,
    },
    Spec {
        name: "bzmpop",
        arity: -5,
        handler: bzmpop,
    },
];

/// Members popped from a sorted set, with their scores, in pop order.
type Pairs = Vec<(Bytes, f64)>;

// ------------------------------------------------------------ taking

/// Pops up to `count` elements from the list at `key`, in pop order, if it
/// holds a list (else `None`, nothing changed). An emptied list is deleted.
fn take_list(ctx: &mut Ctx<'_>, key: &[u8], end: End, count: usize) -> Option<Vec<Bytes>> {
    let list = ctx.write::<List>(key).ok()??;
    let taken: Vec<Bytes> = (0..count).map_while(|_| pop(list, end)).collect();
    if taken.is_empty() {
        return None;
    }
    ctx.notify(class::LIST, pop_event(end), key);
    ctx.drop_if_empty(key);
    ctx.notify_deleted(key);
    ctx.modified(key);
    ctx.changes(taken.len());
    Some(taken)
}

/// Pops up to `count` members from the sorted set at `key` (`max`: the
/// highest first), if it holds one (else `None`, nothing changed).
fn take_zset(ctx: &mut Ctx<'_>, key: &[u8], max: bool, count: usize) -> Option<Pairs> {
    let z = ctx.write::<ZSet>(key).ok()??;
    let taken: Pairs = (0..count)
        .map_while(|_| z.pop(max).map(|(m, s)| (m.to_vec(), s)))
        .collect();
    if taken.is_empty() {
        return None;
    }
    ctx.notify(class::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
    ctx.drop_if_empty(key);
    ctx.notify_deleted(key);
    ctx.modified(key);
    ctx.changes(taken.len());
    Some(taken)
}

/// Whether `key` exists, WRONGTYPE if it holds something else than `T`
/// (looked up to be written, as the pops look their keys up).
fn holds<T: crate::value::Kind>(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, CmdError> {
    Ok(ctx.read_for_write::<T>(key)?.is_some())
}

// ------------------------------------------------------------ replies

/// BLPOP / BRPOP: `[key, element]`.
fn key_and_element(key: &[u8], mut taken: Vec<Bytes>) -> CmdResult {
    let element = taken.pop().unwrap_or_default();
    Ok(reply::array(vec![reply::bulk(key), reply::bulk(element)]))
}

/// LMPOP / BLMPOP: `[key, [element...]]`.
fn key_and_elements(key: &[u8], taken: Vec<Bytes>) -> CmdResult {
    Ok(reply::array(vec![reply::bulk(key), reply::bulks(taken)]))
}

/// BZPOPMIN / BZPOPMAX: `[key, member, score]`.
fn key_member_score(key: &[u8], taken: Pairs) -> CmdResult {
    let mut items = vec![reply::bulk(key)];
    for (member, score) in taken {
        items.push(reply::bulk(member));
        items.push(reply::double(score));
    }
    Ok(reply::array(items))
}

/// ZMPOP / BZMPOP: `[key, [[member, score]...]]`.
fn key_and_pairs(key: &[u8], taken: Pairs) -> CmdResult {
    let pairs = taken
        .into_iter()
        .map(|(m, s)| reply::array(vec![reply::bulk(m), reply::double(s)]))
        .collect();
    Ok(reply::array(vec![reply::bulk(key), reply::array(pairs)]))
}

// ------------------------------------------------------------ lists

fn blpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    bpop(ctx, args, End::Head)
}

fn brpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    bpop(ctx, args, End::Tail)
}

/// BLPOP / BRPOP key [key ...] timeout.
fn bpop(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End) -> CmdResult {
    let (keys, timeout) = keys_then_timeout(ctx, args)?;
    list_pop_or_block(ctx, keys, end, 1, timeout, key_and_element)
}

/// The keys and the timeout of BLPOP, BRPOP, BZPOPMIN and BZPOPMAX (the
/// timeout is read first).
fn keys_then_timeout<'a>(
    ctx: &Ctx<'_>,
    args: &'a [&'a [u8]],
) -> Result<(&'a [&'a [u8]], Option<Duration>), CmdError> {
    let (last, keys) = args[1..].split_last().ok_or(CmdError::Syntax)?;
    Ok((keys, parse_timeout(last, deadline_base(ctx))?))
}

/// Pops from the first of `keys` that holds a list, or blocks on them all.
fn list_pop_or_block(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    end: End,
    count: usize,
    timeout: Option<Duration>,
    shape: fn(&[u8], Vec<Bytes>) -> CmdResult,
) -> CmdResult {
    for key in keys {
        if holds::<List>(ctx, key)? {
            if let Some(taken) = take_list(ctx, key, end, count) {
                return shape(key, taken);
            }
        }
    }
    block_pop(
        ctx,
        keys,
        timeout,
        Box::new(move |ctx, key| Some(shape(key, take_list(ctx, key, end, count)?))),
    )
}

/// Blocks a pop on `keys` (see [`blocking::block`]). Served, it counts
/// its changes as each version does: Redis 7.0 none (the command that
/// woke the client counted its own), 7.4 the pop's.
fn block_pop(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    timeout: Option<Duration>,
    mut serve: Serve,
) -> CmdResult {
    let counted = Box::new(move |ctx: &mut Ctx<'_>, key: &[u8]| {
        let served = serve(ctx, key);
        if served.is_some() && ctx.store.version < crate::RedisVersion::V7_4 {
            ctx.changes(0);
        }
        served
    });
    blocking::block(ctx, keys, timeout, counted)
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
fn blmove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let from = End::parse(args[3])?;
    let to = End::parse(args[4])?;
    let timeout = parse_timeout(args[5], deadline_base(ctx))?;
    move_or_block(ctx, args[1], args[2], from, to, timeout)
}

/// BRPOPLPUSH source destination timeout: BLMOVE ... RIGHT LEFT.
fn brpoplpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let timeout = parse_timeout(args[3], deadline_base(ctx))?;
    move_or_block(ctx, args[1], args[2], End::Tail, End::Head, timeout)
}

/// LMOVE if the source holds a list, else blocks on it. Served, the move
/// is LMOVE's: a destination of another type is WRONGTYPE for the
/// blocked client then, and its push can wake the clients blocked on the
/// destination.
fn move_or_block(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
    timeout: Option<Duration>,
) -> CmdResult {
    if holds::<List>(ctx, src)? {
        return move_element(ctx, src, dst, from, to);
    }
    let dst = dst.to_vec();
    block_pop(
        ctx,
        &[src],
        timeout,
        Box::new(move |ctx, key| {
            if !matches!(ctx.read_for_write::<List>(key), Ok(Some(_))) {
                return None;
            }
            Some(move_element(ctx, key, &dst, from, to))
        }),
    )
}

fn lmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, end, count) = parse_mpop(args, 1, End::parse)?;
    for key in keys {
        if holds::<List>(ctx, key)? {
            if let Some(taken) = take_list(ctx, key, end, count) {
                return key_and_elements(key, taken);
            }
        }
    }
    Ok(reply::nil())
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count].
fn blmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, end, count) = parse_mpop(args, 2, End::parse)?;
    let timeout = parse_timeout(args[1], deadline_base(ctx))?;
    list_pop_or_block(ctx, keys, end, count, timeout, key_and_elements)
}

/// The arguments of LMPOP, ZMPOP and their blocking forms, from
/// `numkeys` at `args[numkeys_at]`: the keys, the end (`side` reads it)
/// and the count (1 by default).
fn parse_mpop<'a, S>(
    args: &'a [&'a [u8]],
    numkeys_at: usize,
    side: fn(&[u8]) -> Result<S, CmdError>,
) -> Result<(&'a [&'a [u8]], S, usize), CmdError> {
    const NUMKEYS: &str = "numkeys should be greater than 0";
    let numkeys = parse_i64(args[numkeys_at])
        .filter(|&n| n >= 1)
        .ok_or_else(|| CmdError::err(NUMKEYS))?;
    let first = numkeys_at + 1;
    let side_at = usize::try_from(numkeys)
        .ok()
        .and_then(|n| first.checked_add(n))
        .filter(|&at| at < args.len())
        .ok_or(CmdError::Syntax)?;
    let end = side(args[side_at])?;
    let mut count = None;
    let mut rest = &args[side_at + 1..];
    while let [opt, tail @ ..] = rest {
        match tail {
            [n, tail @ ..] if count.is_none() && is(opt, "count") => {
                const COUNT: &str = "count should be greater than 0";
                let n = parse_i64(n)
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| CmdError::err(COUNT))?;
                count = Some(usize::try_from(n).unwrap_or(usize::MAX));
                rest = tail;
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    Ok((&args[first..side_at], end, count.unwrap_or(1)))
}

// ------------------------------------------------------------ sorted sets

/// ZMPOP's and BZMPOP's MIN | MAX: whether the highest scores go first.
fn min_or_max(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "min") {
        Ok(false)
    } else if is(arg, "max") {
        Ok(true)
    } else {
        Err(CmdError::Syntax)
    }
}

fn zmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, max, count) = parse_mpop(args, 1, min_or_max)?;
    for key in keys {
        if holds::<ZSet>(ctx, key)? {
            if let Some(taken) = take_zset(ctx, key, max, count) {
                return key_and_pairs(key, taken);
            }
        }
    }
    Ok(reply::nil())
}

fn bzpopmin(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, timeout) = keys_then_timeout(ctx, args)?;
    zset_pop_or_block(ctx, keys, false, 1, timeout, key_member_score)
}

fn bzpopmax(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, timeout) = keys_then_timeout(ctx, args)?;
    zset_pop_or_block(ctx, keys, true, 1, timeout, key_member_score)
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
fn bzmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, max, count) = parse_mpop(args, 2, min_or_max)?;
    let timeout = parse_timeout(args[1], deadline_base(ctx))?;
    zset_pop_or_block(ctx, keys, max, count, timeout, key_and_pairs)
}

/// Pops from the first of `keys` that holds a sorted set, or blocks on
/// them all.
fn zset_pop_or_block(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    max: bool,
    count: usize,
    timeout: Option<Duration>,
    shape: fn(&[u8], Pairs) -> CmdResult,
) -> CmdResult {
    for key in keys {
        if holds::<ZSet>(ctx, key)? {
            if let Some(taken) = take_zset(ctx, key, max, count) {
                return shape(key, taken);
            }
        }
    }
    block_pop(
        ctx,
        keys,
        timeout,
        Box::new(move |ctx, key| Some(shape(key, take_zset(ctx, key, max, count)?))),
    )
}

/// Expected replies are the ones redis-server 7.0.15 gave to the same
/// commands (the waits themselves are tested in `crate::command::blocking`).
#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::command::test_util::*;

    #[test]
    fn mpop_replies() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b c d");
        assert_eq!(
            run(&mut c, "LMPOP 2 nokey l RIGHT COUNT 3"),
            Value::Array(vec![bulk("l"), bulks(&["d", "c", "b"])])
        );
        assert_eq!(
            run(&mut c, "LMPOP 1 l left count 9"),
            Value::Array(vec![bulk("l"), bulks(&["a"])])
        );
        assert_eq!(run(&mut c, "LMPOP 1 l LEFT"), Value::Nil);
        assert_eq!(run(&mut c, "EXISTS l"), int(0));
        run(&mut c, "ZADD z 1 a 2 b 3 c");
        assert_eq!(
            run(&mut c, "ZMPOP 1 z MAX COUNT 2"),
            Value::Array(vec![
                bulk("z"),
                Value::Array(vec![bulks(&["c", "3"]), bulks(&["b", "2"])])
            ])
        );
        assert_eq!(
            run(&mut c, "ZMPOP 1 z MIN"),
            Value::Array(vec![bulk("z"), Value::Array(vec![bulks(&["a", "1"])])])
        );
        assert_eq!(run(&mut c, "ZMPOP 1 z MIN"), Value::Nil);
    }

    #[test]
    fn mpop_argument_errors_in_redis_order() {
        let mut c = conn();
        let numkeys = err("ERR numkeys should be greater than 0");
        assert_eq!(run(&mut c, "LMPOP 0 l LEFT"), numkeys);
        assert_eq!(run(&mut c, "LMPOP x l LEFT"), numkeys);
        assert_eq!(run(&mut c, "BLMPOP x 0 l LEFT"), numkeys);
        assert_eq!(run(&mut c, "LMPOP 1 l MIDDLE"), err(SYNTAX));
        assert_eq!(run(&mut c, "LMPOP 2 l LEFT"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZMPOP 1 z LEFT"), err(SYNTAX));
        assert_eq!(
            run(&mut c, "LMPOP 1 l LEFT COUNT 0"),
            err("ERR count should be greater than 0")
        );
        assert_eq!(run(&mut c, "LMPOP 1 l LEFT COUNT 1 COUNT 1"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZMPOP 1 z MIN COUNT"), err(SYNTAX));
        // The timeout is read after the rest.
        assert_eq!(
            run(&mut c, "BLMPOP x 1 l LEFT"),
            err("ERR timeout is not a float or out of range")
        );
        assert_eq!(
            run(&mut c, "BZMPOP -1 1 z MIN"),
            err("ERR timeout is negative")
        );
        run(&mut c, "SET s x");
        assert_eq!(run(&mut c, "LMPOP 2 nokey s LEFT"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "ZMPOP 1 s MIN"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "BZPOPMIN nokey s 0"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "BLMOVE s d LEFT LEFT 0"), err(WRONGTYPE));
    }

    #[test]
    fn blocking_forms_pop_at_once_when_they_can() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b c");
        assert_eq!(run(&mut c, "BLPOP nokey l 0"), bulks(&["l", "a"]));
        assert_eq!(run(&mut c, "BRPOP l 0"), bulks(&["l", "c"]));
        assert_eq!(run(&mut c, "BRPOPLPUSH l d 0"), bulk("b"));
        assert_eq!(run(&mut c, "BLMOVE d d LEFT RIGHT 0"), bulk("b"));
        run(&mut c, "ZADD z 1 a 2 b");
        assert_eq!(run(&mut c, "BZPOPMAX nokey z 0"), bulks(&["z", "b", "2"]));
        assert_eq!(run(&mut c, "BZPOPMIN z 0"), bulks(&["z", "a", "1"]));
        // A pop by a blocking form touches WATCH as its plain form does.
        run(&mut c, "RPUSH w x");
        assert!(touches(&mut c, "w", "BLPOP w 0"));
    }
}
