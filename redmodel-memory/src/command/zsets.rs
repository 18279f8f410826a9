//! Sorted set commands, following Redis 7.0's t_zset.c step by step:
//! ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZRANK ZREVRANK ZCARD ZCOUNT ZLEXCOUNT,
//! the ZRANGE family (ZRANGE with BYSCORE BYLEX REV LIMIT WITHSCORES,
//! ZRANGESTORE, ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZRANGEBYLEX
//! ZREVRANGEBYLEX), ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX,
//! ZPOPMIN ZPOPMAX ZRANDMEMBER, the set operations (ZUNIONSTORE ZINTERSTORE
//! ZDIFFSTORE ZUNION ZINTER ZDIFF ZINTERCARD) and ZSCAN.
//!
//! Arguments are checked in Redis's order (options, then ranges, then the
//! key), so a refused command never creates or changes a key. Scores in
//! replies go through [`reply::double`]. The data structure and its costs
//! are described in [`crate::value::zset`].

use std::borrow::Cow;
use std::collections::hash_map::Entry as MapEntry;
use std::collections::HashMap;

use rand::Rng;

use super::shared::destination::store_or_delete;
use super::shared::random_picks::RandomPicks;
use super::shared::scan::scan_collection;
use super::{remove_elements, CmdResult, Ctx, Spec};
use crate::args::{
    float_arg, index_range, int_arg, is, positive_arg, random_count_with, NOT_POSITIVE,
};
use crate::error::CmdError;
use crate::float::{format_g17, parse_double};
use crate::notify::class;
use crate::reply;
use crate::value::zset::{LexRange, Score, ScoreRange, ZSet};
use crate::value::{Bytes, Value};
use crate::RedisVersion;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "zadd",
        arity: -4,
        handler: zadd,
    },
    Spec {
        name: "zincrby",
        arity: 4,
        handler: zincrby,
    },
    Spec {
        name: "zrem",
        arity: -3,
        handler: zrem,
    },
    Spec {
        name: "zscore",
        arity: 3,
        handler: zscore,
    },
    Spec {
        name: "zmscore",
        arity: -3,
        handler: zmscore,
    },
    Spec {
        name: "zrank",
        arity: -3,
        handler: zrank,
    },
    Spec {
        name: "zrevrank",
        arity: -3,
        handler: zrevrank,
    },
    Spec {
        name: "zcard",
        arity: 2,
        handler: zcard,
    },
    Spec {
        name: "zcount",
        arity: 4,
        handler: zcount,
    },
    Spec {
        name: "zlexcount",
        arity: 4,
        handler: zlexcount,
    },
    Spec {
        name: "zrange",
        arity: -4,
        handler: zrange,
    },
    Spec {
        name: "zrangestore",
        arity: -5,
        handler: zrangestore,
    },
    Spec {
        name: "zrevrange",
        arity: -4,
        handler: zrevrange,
    },
    Spec {
        name: "zrangebyscore",
        arity: -4,
        handler: zrangebyscore,
    },
    Spec {
        name: "zrevrangebyscore",
        arity: -4,
        handler: zrevrangebyscore,
    },
    Spec {
        name: "zrangebylex",
        arity: -4,
        handler: zrangebylex,
    },
    Spec {
        name: "zrevrangebylex",
        arity: -4,
        handler: zrevrangebylex,
    },
    Spec {
        name: "zremrangebyrank",
        arity: 4,
        handler: zremrangebyrank,
    },
    Spec {
        name: "zremrangebyscore",
        arity: 4,
        handler: zremrangebyscore,
    },
    Spec {
        name: "zremrangebylex",
        arity: 4,
        handler: zremrangebylex,
    },
    Spec {
        name: "zpopmin",
        arity: -2,
        handler: zpopmin,
    },
    Spec {
        name: "zpopmax",
        arity: -2,
        handler: zpopmax,
    },
    Spec {
        name: "zrandmember",
        arity: -2,
        handler: zrandmember,
    },
    Spec {
        name: "zunionstore",
        arity: -4,
        handler: zunionstore,
    },
    Spec {
        name: "zinterstore",
        arity: -4,
        handler: zinterstore,
    },
    Spec {
        name: "zdiffstore",
        arity: -4,
        handler: zdiffstore,
    },
    Spec {
        name: "zunion",
        arity: -3,
        handler: zunion,
    },
    Spec {
        name: "zinter",
        arity: -3,
        handler: zinter,
    },
    Spec {
        name: "zdiff",
        arity: -3,
        handler: zdiff,
    },
    Spec {
        name: "zintercard",
        arity: -3,
        handler: zintercard,
    },
    Spec {
        name: "zscan",
        arity: -3,
        handler: zscan,
    },
];

const NOT_A_FLOAT_RANGE: &str = "min or max is not a float";
const NOT_A_LEX_RANGE: &str = "min or max not valid string range item";

fn score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, CmdError> {
    ScoreRange::parse(min, max).ok_or_else(|| CmdError::err(NOT_A_FLOAT_RANGE))
}

fn lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, CmdError> {
    LexRange::parse(min, max).ok_or_else(|| CmdError::err(NOT_A_LEX_RANGE))
}

/// Members, with their scores if `withscores`: one flat array of member,
/// score, member... or, if `nested` (a RESP3 client, as Redis decides
/// with `c->resp > 2`), an array of [member, score] pairs.
fn pairs_reply<'a>(
    pairs: impl IntoIterator<Item = (&'a [u8], f64)>,
    withscores: bool,
    nested: bool,
) -> redis::Value {
    let mut items = Vec::new();
    for (member, score) in pairs {
        if withscores && nested {
            items.push(reply::array(vec![
                reply::bulk(member),
                reply::double(score),
            ]));
            continue;
        }
        items.push(reply::bulk(member));
        if withscores {
            items.push(reply::double(score));
        }
    }
    reply::array(items)
}

// ---------------------------------------------------------------- ZADD

/// The options of ZADD (ZINCRBY is ZADD with INCR).
#[derive(Debug, Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What one score-member pair did (`zsetAdd`'s out flags).
enum AddOutcome {
    Added(f64),
    Updated(f64),
    /// Processed, same score (it still counts for the INCR reply).
    Same(f64),
    /// Refused by NX, XX, GT or LT.
    Nop,
}

/// The NaN that INCR can produce (inf + -inf).
struct NanScore;

/// Applies one pair to `z`, as Redis's `zsetAdd`.
fn add_one(z: &mut ZSet, member: &[u8], score: f64, f: AddFlags) -> Result<AddOutcome, NanScore> {
    if score.is_nan() {
        return Err(NanScore);
    }
    let Some(current) = z.score(member) else {
        if f.xx {
            return Ok(AddOutcome::Nop);
        }
        z.insert(member, score);
        return Ok(AddOutcome::Added(score));
    };
    if f.nx {
        return Ok(AddOutcome::Nop);
    }
    let score = if f.incr { score + current } else { score };
    if score.is_nan() {
        return Err(NanScore);
    }
    if (f.lt && score >= current) || (f.gt && score <= current) {
        return Ok(AddOutcome::Nop);
    }
    if score == current {
        return Ok(AddOutcome::Same(score));
    }
    z.insert(member, score);
    Ok(AddOutcome::Updated(score))
}

pub(super) fn zadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zadd_generic(ctx, args, AddFlags::default())
}

fn zincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    // Through ZADD's parser, as Redis: `ZINCRBY key nx m` is a syntax error.
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    zadd_generic(ctx, args, flags)
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`
fn zadd_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], mut f: AddFlags) -> CmdResult {
    let key = args[1];
    let mut first_pair = 2;
    for opt in &args[2..] {
        let flag = match () {
            _ if is(opt, "nx") => &mut f.nx,
            _ if is(opt, "xx") => &mut f.xx,
            _ if is(opt, "ch") => &mut f.ch,
            _ if is(opt, "incr") => &mut f.incr,
            _ if is(opt, "gt") => &mut f.gt,
            _ if is(opt, "lt") => &mut f.lt,
            _ => break,
        };
        *flag = true;
        first_pair += 1;
    }
    let pairs = &args[first_pair..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    if f.nx && f.xx {
        return Err(CmdError::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(CmdError::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && pairs.len() > 2 {
        return Err(CmdError::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    // Every score is parsed before anything is written.
    let scores = pairs
        .iter()
        .step_by(2)
        .map(|s| float_arg(s))
        .collect::<Result<Vec<f64>, _>>()?;
    let members = pairs.iter().skip(1).step_by(2);

    let exists = ctx.read_for_write::<ZSet>(key)?.is_some();
    let (mut added, mut updated, mut processed, mut last) = (0, 0, 0, 0.0);
    let mut nan = false;
    if exists || !f.xx {
        let z = ctx.write_or_create::<ZSet>(key)?;
        for (score, member) in scores.into_iter().zip(members) {
            match add_one(z, member, score, f) {
                Err(NanScore) => {
                    nan = true;
                    break;
                }
                Ok(AddOutcome::Nop) => {}
                Ok(AddOutcome::Added(s)) => {
                    (added, processed, last) = (added + 1, processed + 1, s)
                }
                Ok(AddOutcome::Updated(s)) => {
                    (updated, processed, last) = (updated + 1, processed + 1, s)
                }
                Ok(AddOutcome::Same(s)) => (processed, last) = (processed + 1, s),
            }
        }
        if added + updated > 0 {
            ctx.modified_with(key, pairs.iter().skip(1).step_by(2).copied());
            ctx.notify(class::ZSET, if f.incr { "zincr" } else { "zadd" }, key);
            ctx.changes(added + updated);
        }
    }
    if nan {
        return Err(CmdError::err("resulting score is not a number (NaN)"));
    }
    Ok(match (f.incr, processed > 0) {
        (true, true) => reply::double(last),
        (true, false) => reply::nil(),
        (false, _) if f.ch => reply::int(added + updated),
        (false, _) => reply::int(added),
    })
}

// ------------------------------------------------------- simple reads

fn zrem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    remove_elements::<ZSet>(ctx, args, (class::ZSET, "zrem"), |z, member| {
        z.remove(member)
    })
}

fn zscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let score = ctx.read::<ZSet>(args[1])?.and_then(|z| z.score(args[2]));
    Ok(score.map_or_else(reply::nil, reply::double))
}

fn zmscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let z = ctx.read::<ZSet>(args[1])?;
    let scores = args[2..]
        .iter()
        .map(|m| {
            z.and_then(|z| z.score(m))
                .map_or_else(reply::nil, reply::double)
        })
        .collect();
    Ok(reply::array(scores))
}

/// ZRANK and ZREVRANK: the member's rank, and with WITHSCORE (Redis 7.2
/// and later; 7.0 takes exactly three arguments) its score too.
fn rank_reply(ctx: &mut Ctx<'_>, args: &[&[u8]], reverse: bool) -> CmdResult {
    let with_score = match args {
        [_, _, _] => false,
        [_, _, _, option] if ctx.store.version >= RedisVersion::V7_4 => {
            if !is(option, "withscore") {
                return Err(CmdError::Syntax);
            }
            true
        }
        _ => return Err(super::arity_error(args)),
    };
    // A missing key or member is nil (with WITHSCORE, RESP2's null array
    // `*-1`: see `replies_null_array`).
    let Some(z) = ctx.read::<ZSet>(args[1])? else {
        return Ok(reply::nil());
    };
    let Some(rank) = z.rank(args[2]) else {
        return Ok(reply::nil());
    };
    let rank = if reverse { z.len() - 1 - rank } else { rank };
    if !with_score {
        return Ok(reply::int(rank));
    }
    let score = z.score(args[2]).unwrap_or_default();
    Ok(reply::array(vec![reply::int(rank), reply::double(score)]))
}

fn zrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rank_reply(ctx, args, false)
}

fn zrevrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rank_reply(ctx, args, true)
}

fn zcard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.read::<ZSet>(args[1])?.map_or(0, ZSet::len)))
}

fn zcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let range = score_range(args[2], args[3])?;
    let z = ctx.read::<ZSet>(args[1])?;
    Ok(reply::int(z.map_or(0, |z| z.score_span(&range).len())))
}

fn zlexcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let range = lex_range(args[2], args[3])?;
    let z = ctx.read::<ZSet>(args[1])?;
    Ok(reply::int(z.map_or(0, |z| z.lex_span(&range).len())))
}

// ------------------------------------------------------ the ZRANGE family

#[derive(Debug, Clone, Copy, PartialEq)]
enum RangeBy {
    /// Not said yet: ZRANGE's BYSCORE / BYLEX may choose.
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Direction {
    /// Not said yet: ZRANGE's REV may choose.
    Auto,
    Forward,
    Reverse,
}

/// A parsed range selection (Redis's `zrangeGenericCommand` step 2).
enum Selection {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// Where the result of a range command goes.
#[derive(Clone, Copy)]
enum Sink<'a> {
    Client,
    Store(&'a [u8]),
}

/// The members a selection picks, in reply order. `offset` and `limit` are
/// LIMIT's (a negative offset selects nothing, a negative limit everything).
fn select<'z>(
    z: &'z ZSet,
    selection: &Selection,
    reverse: bool,
    offset: i64,
    limit: i64,
) -> Vec<(&'z [u8], f64)> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    // The first member in range, then LIMIT's offset, then members while in
    // range (Redis skips the offset without checking the range).
    let first = match selection {
        Selection::Rank(start, end) => {
            let Some(span) = index_range(*start, *end, z.len()) else {
                return Vec::new();
            };
            return if reverse {
                z.iter_rev_from(z.len() - 1 - span.start)
                    .take(span.len())
                    .collect()
            } else {
                z.iter_from(span.start).take(span.len()).collect()
            };
        }
        Selection::Score(range) => z.score_start(range, reverse),
        Selection::Lex(range) => z.lex_start(range, reverse),
    };
    let (Some(first), Ok(offset)) = (first, usize::try_from(offset)) else {
        return Vec::new();
    };
    let in_range = |member: &[u8], score: f64| match (selection, reverse) {
        (Selection::Score(r), false) => r.lte_max(score),
        (Selection::Score(r), true) => r.gte_min(score),
        (Selection::Lex(r), false) => r.lte_max(member),
        (Selection::Lex(r), true) => r.gte_min(member),
        (Selection::Rank(..), _) => true,
    };
    let picked: Box<dyn Iterator<Item = (&[u8], f64)>> = if reverse {
        match first.checked_sub(offset) {
            Some(from) => Box::new(z.iter_rev_from(from)),
            None => return Vec::new(),
        }
    } else {
        Box::new(z.iter_from(first.saturating_add(offset)))
    };
    picked
        .take_while(|(m, s)| in_range(m, *s))
        .take(limit)
        .collect()
}

/// ZRANGE and its older forms, as Redis's `zrangeGenericCommand`:
/// `<src> <min> <max> [BYSCORE|BYLEX] [REV] [WITHSCORES] [LIMIT offset count]`
/// starting at `args[key_at]`.
fn zrange_generic(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    key_at: usize,
    sink: Sink<'_>,
    mut by: RangeBy,
    mut direction: Direction,
) -> CmdResult {
    let store = matches!(sink, Sink::Store(_));
    let (mut withscores, mut offset, mut limit) = (false, 0, -1);
    let mut j = key_at + 3;
    while let Some(opt) = args.get(j) {
        let left = args.len() - j - 1;
        if !store && is(opt, "withscores") {
            withscores = true;
        } else if is(opt, "limit") && left >= 2 {
            offset = int_arg(args[j + 1])?;
            limit = int_arg(args[j + 2])?;
            j += 2;
        } else if direction == Direction::Auto && is(opt, "rev") {
            direction = Direction::Reverse;
        } else if by == RangeBy::Auto && is(opt, "bylex") {
            by = RangeBy::Lex;
        } else if by == RangeBy::Auto && is(opt, "byscore") {
            by = RangeBy::Score;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let reverse = direction == Direction::Reverse;
    if by == RangeBy::Auto {
        by = RangeBy::Rank;
    }
    if limit != -1 && by == RangeBy::Rank {
        return Err(CmdError::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && by == RangeBy::Lex {
        return Err(CmdError::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut min, mut max) = (args[key_at + 1], args[key_at + 2]);
    if reverse && by != RangeBy::Rank {
        // Reverse score and lex ranges are given as max, min.
        std::mem::swap(&mut min, &mut max);
    }
    let selection = match by {
        RangeBy::Score => Selection::Score(score_range(min, max)?),
        RangeBy::Lex => Selection::Lex(lex_range(min, max)?),
        RangeBy::Rank | RangeBy::Auto => Selection::Rank(int_arg(min)?, int_arg(max)?),
    };
    let resp3 = ctx.resp3();
    let z = ctx.read::<ZSet>(args[key_at])?;
    let picked = z.map(|z| select(z, &selection, reverse, offset, limit));
    match sink {
        Sink::Client => Ok(pairs_reply(picked.unwrap_or_default(), withscores, resp3)),
        Sink::Store(dst) => {
            let result = ZSet::from_pairs(
                picked
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(m, s)| (m.to_vec(), s)),
            );
            let len = result.len();
            store_or_delete(
                ctx,
                dst,
                Value::ZSet(result),
                len,
                (class::ZSET, "zrangestore"),
            )
        }
    }
}

fn zrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, Sink::Client, RangeBy::Auto, Direction::Auto)
}

fn zrangestore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sink = Sink::Store(args[1]);
    zrange_generic(ctx, args, 2, sink, RangeBy::Auto, Direction::Auto)
}

fn zrevrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zrange_generic(
        ctx,
        args,
        1,
        Sink::Client,
        RangeBy::Rank,
        Direction::Reverse,
    )
}

fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zrange_generic(
        ctx,
        args,
        1,
        Sink::Client,
        RangeBy::Score,
        Direction::Forward,
    )
}

fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zrange_generic(
        ctx,
        args,
        1,
        Sink::Client,
        RangeBy::Score,
        Direction::Reverse,
    )
}

fn zrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, Sink::Client, RangeBy::Lex, Direction::Forward)
}

fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, Sink::Client, RangeBy::Lex, Direction::Reverse)
}

// ------------------------------------------------------ range removals

/// ZREMRANGEBY*: the range is parsed first, then the key is looked up.
fn zremrange_generic(ctx: &mut Ctx<'_>, key: &[u8], selection: Selection) -> CmdResult {
    let Some(z) = ctx.write::<ZSet>(key)? else {
        return Ok(reply::int(0));
    };
    let span = match &selection {
        Selection::Rank(start, end) => index_range(*start, *end, z.len()).unwrap_or(0..0),
        Selection::Score(range) => z.score_span(range),
        Selection::Lex(range) => z.lex_span(range),
    };
    let deleted = z.remove_ranks(span.start, span.end);
    if deleted > 0 {
        ctx.drop_if_empty(key);
        ctx.modified(key);
        let event = match selection {
            Selection::Rank(..) => "zremrangebyrank",
            Selection::Score(_) => "zremrangebyscore",
            Selection::Lex(_) => "zremrangebylex",
        };
        ctx.notify(class::ZSET, event, key);
        ctx.notify_deleted(key);
        ctx.changes(deleted);
    }
    Ok(reply::int(deleted))
}

fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let selection = Selection::Rank(int_arg(args[2])?, int_arg(args[3])?);
    zremrange_generic(ctx, args[1], selection)
}

fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let selection = Selection::Score(score_range(args[2], args[3])?);
    zremrange_generic(ctx, args[1], selection)
}

fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let selection = Selection::Lex(lex_range(args[2], args[3])?);
    zremrange_generic(ctx, args[1], selection)
}

// ------------------------------------------------------ pops and random

/// `ZPOPMIN` / `ZPOPMAX key [count]`: a flat array of member, score pairs;
/// in RESP3, with a count (even 1), an array of [member, score] pairs.
fn zpop(ctx: &mut Ctx<'_>, args: &[&[u8]], max: bool) -> CmdResult {
    let count = match args.len() {
        2 => 1,
        3 => positive_arg(args[2], NOT_POSITIVE)?,
        _ => return Err(CmdError::Syntax),
    };
    let nested = ctx.resp3() && args.len() == 3;
    let key = args[1];
    let Some(z) = ctx.write::<ZSet>(key)? else {
        return Ok(reply::array(Vec::new()));
    };
    let (mut items, mut popped) = (Vec::new(), 0);
    for _ in 0..count {
        let Some((member, score)) = z.pop(max) else {
            break;
        };
        popped += 1;
        if nested {
            items.push(reply::array(vec![
                reply::bulk(&member[..]),
                reply::double(score),
            ]));
        } else {
            items.push(reply::bulk(&member[..]));
            items.push(reply::double(score));
        }
    }
    if !items.is_empty() {
        ctx.drop_if_empty(key);
        ctx.modified(key);
        ctx.notify(class::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
        ctx.notify_deleted(key);
        ctx.changes(popped);
    }
    Ok(reply::array(items))
}

fn zpopmin(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zpop(ctx, args, false)
}

fn zpopmax(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zpop(ctx, args, true)
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`
fn zrandmember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let Some(count) = args.get(2) else {
        let Some(z) = ctx.read::<ZSet>(args[1])? else {
            return Ok(reply::nil());
        };
        let picked = z.get(rand::rng().random_range(0..z.len().max(1)));
        return Ok(picked.map_or_else(reply::nil, |(m, _)| reply::bulk(m)));
    };
    let (count, withscores) = random_count_with(count, &args[3..], "withscores")?;
    let resp3 = ctx.resp3();
    let Some(z) = ctx.read::<ZSet>(args[1])? else {
        return Ok(reply::array(Vec::new()));
    };
    Ok(match RandomPicks::new(count, z.len())? {
        // The whole set, from the highest member down: Redis's set
        // operation iterator walks sorted sets backwards.
        RandomPicks::All => pairs_reply(z.iter().rev(), withscores, resp3),
        RandomPicks::Ranks(ranks) => pairs_reply(
            ranks.into_iter().filter_map(|r| z.get(r)),
            withscores,
            resp3,
        ),
    })
}

// ------------------------------------------------------ set operations

#[derive(Debug, Clone, Copy, PartialEq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's `zunionInterAggregate`: inf + -inf sums to 0, and a NaN
    /// operand of MIN or MAX is ignored (its comparisons are false).
    fn apply(self, target: &mut f64, value: f64) {
        match self {
            Aggregate::Sum => {
                *target += value;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => {
                if value < *target {
                    *target = value;
                }
            }
            Aggregate::Max => {
                if value > *target {
                    *target = value;
                }
            }
        }
    }
}

/// One input of a set operation: a sorted set, or a plain set whose
/// members all score 1.
#[derive(Clone, Copy)]
enum Source<'a> {
    Missing,
    Set(&'a crate::value::set::SetValue),
    Sorted(&'a ZSet),
}

impl<'a> Source<'a> {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::Set(s) => s.len(),
            Source::Sorted(z) => z.len(),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (Cow<'a, [u8]>, f64)> + 'a> {
        match *self {
            Source::Missing => Box::new(std::iter::empty()),
            Source::Set(s) => Box::new(s.iter().map(|m| (m, 1.0))),
            Source::Sorted(z) => Box::new(z.iter().map(|(m, s)| (Cow::Borrowed(m), s))),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::Set(s) => s.contains(member).then_some(1.0),
            Source::Sorted(z) => z.score(member),
        }
    }
}

/// The options after the keys of ZUNIONSTORE and friends.
struct SetOpOptions {
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
    limit: usize,
}

/// Parses `[WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES] [LIMIT n]`,
/// each allowed only where Redis allows it.
fn parse_setop_options(
    opts: &[&[u8]],
    keys: usize,
    op: SetOp,
    store: bool,
    card_only: bool,
) -> Result<SetOpOptions, CmdError> {
    let mut out = SetOpOptions {
        weights: vec![1.0; keys],
        aggregate: Aggregate::Sum,
        withscores: false,
        limit: 0,
    };
    let scored = op != SetOp::Diff && !card_only;
    let mut j = 0;
    while let Some(opt) = opts.get(j) {
        let remaining = opts.len() - j;
        if scored && remaining > keys && is(opt, "weights") {
            for (w, arg) in out.weights.iter_mut().zip(&opts[j + 1..]) {
                *w = parse_double(arg)
                    .ok_or_else(|| CmdError::err("weight value is not a float"))?;
            }
            j += 1 + keys;
        } else if scored && remaining >= 2 && is(opt, "aggregate") {
            let name = opts[j + 1];
            out.aggregate = match () {
                _ if is(name, "sum") => Aggregate::Sum,
                _ if is(name, "min") => Aggregate::Min,
                _ if is(name, "max") => Aggregate::Max,
                _ => return Err(CmdError::Syntax),
            };
            j += 2;
        } else if !store && !card_only && is(opt, "withscores") {
            out.withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && is(opt, "limit") {
            out.limit = positive_arg(opts[j + 1], "LIMIT can't be negative")?;
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(out)
}

/// Computes a set operation over `sources` (each with its weight), as
/// Redis's `zunionInterDiffGenericCommand`: union and intersection visit the
/// inputs from the smallest (the order of a SUM of doubles matters), scores
/// are weighted and a NaN product counts as 0.
fn compute_setop(
    sources: &[(Source<'_>, f64)],
    op: SetOp,
    aggregate: Aggregate,
    limit: usize,
) -> Vec<(Bytes, f64)> {
    let mut sorted: Vec<(Source<'_>, f64)> = sources.to_vec();
    if op != SetOp::Diff {
        sorted.sort_by_key(|(s, _)| s.len()); // stable, as glibc's qsort here
    }
    let weighted = |score: f64, weight: f64| {
        let v = score * weight;
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let Some(((first, first_weight), others)) = sorted.split_first() else {
        return Vec::new();
    };
    match op {
        SetOp::Inter => {
            let mut out = Vec::new();
            'members: for (member, score) in first.iter() {
                let mut acc = weighted(score, *first_weight);
                for (src, weight) in others {
                    let Some(s) = src.score(&member) else {
                        continue 'members;
                    };
                    aggregate.apply(&mut acc, s * weight);
                }
                out.push((member.to_vec(), acc));
                if limit > 0 && out.len() >= limit {
                    break;
                }
            }
            out
        }
        SetOp::Union => {
            let mut acc: HashMap<Cow<'_, [u8]>, f64> = HashMap::new();
            for (src, weight) in &sorted {
                for (member, score) in src.iter() {
                    let v = weighted(score, *weight);
                    match acc.entry(member) {
                        MapEntry::Vacant(e) => {
                            e.insert(v);
                        }
                        MapEntry::Occupied(mut e) => aggregate.apply(e.get_mut(), v),
                    }
                }
            }
            acc.into_iter().map(|(m, s)| (m.to_vec(), s)).collect()
        }
        SetOp::Diff => first
            .iter()
            .filter(|(m, _)| others.iter().all(|(src, _)| src.score(m).is_none()))
            .map(|(m, s)| (m.to_vec(), s))
            .collect(),
    }
}

/// ZUNIONSTORE / ZINTERSTORE / ZDIFFSTORE (`dst` given), ZUNION / ZINTER /
/// ZDIFF and ZINTERCARD (`card_only`): `numkeys key [key ...] options`
/// starting at `args[numkeys_at]`.
fn setop_generic(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    dst: Option<&[u8]>,
    numkeys_at: usize,
    op: SetOp,
    card_only: bool,
) -> CmdResult {
    let numkeys = int_arg(args[numkeys_at])?;
    if numkeys < 1 {
        let name = String::from_utf8_lossy(args[0]).to_lowercase();
        return Err(CmdError::err(format!(
            "at least 1 input key is needed for '{name}' command"
        )));
    }
    let first_key = numkeys_at + 1;
    let Some(keys) = usize::try_from(numkeys)
        .ok()
        .and_then(|n| args.get(first_key..first_key.checked_add(n)?))
    else {
        return Err(CmdError::Syntax);
    };
    // Keys are checked (and expired) in order before any option is read.
    let values = ctx.read_all(keys, |v| matches!(v, Value::Set(_) | Value::ZSet(_)))?;
    let opts = parse_setop_options(
        &args[first_key + keys.len()..],
        keys.len(),
        op,
        dst.is_some(),
        card_only,
    )?;
    let sources: Vec<(Source<'_>, f64)> = values
        .into_iter()
        .zip(&opts.weights)
        .map(|(value, &w)| {
            let src = match value {
                Some(Value::Set(s)) => Source::Set(s),
                Some(Value::ZSet(z)) => Source::Sorted(z),
                _ => Source::Missing,
            };
            (src, w)
        })
        .collect();
    let limit = if card_only { opts.limit } else { 0 };
    let result = compute_setop(&sources, op, opts.aggregate, limit);
    if card_only {
        return Ok(reply::int(result.len()));
    }
    match dst {
        Some(dst) => {
            let z = ZSet::from_pairs(result);
            let len = z.len();
            let event = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
            store_or_delete(ctx, dst, Value::ZSet(z), len, (class::ZSET, &event))
        }
        None => {
            // The reply comes from a fresh skiplist in Redis: ordered with
            // -0 equal to 0, and -0 still printed as "-0".
            let mut result = result;
            result.sort_by(|(ma, sa), (mb, sb)| {
                Score(sa + 0.0)
                    .cmp(&Score(sb + 0.0))
                    .then_with(|| ma.cmp(mb))
            });
            Ok(pairs_reply(
                result.iter().map(|(m, s)| (m.as_slice(), *s)),
                opts.withscores,
                ctx.resp3(),
            ))
        }
    }
}

fn zunionstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, Some(args[1]), 2, SetOp::Union, false)
}

fn zinterstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, Some(args[1]), 2, SetOp::Inter, false)
}

fn zdiffstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, Some(args[1]), 2, SetOp::Diff, false)
}

fn zunion(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, None, 1, SetOp::Union, false)
}

fn zinter(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, None, 1, SetOp::Inter, false)
}

fn zdiff(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, None, 1, SetOp::Diff, false)
}

fn zintercard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, None, 1, SetOp::Inter, true)
}

// ------------------------------------------------------ ZSCAN

/// Redis's small-encoding limits (`zset-max-listpack-entries` and
/// `zset-max-listpack-value`).
const LISTPACK_MAX_ENTRIES: usize = 128;
const LISTPACK_MAX_VALUE: usize = 64;

/// A score as ZSCAN prints it. ZSCAN replies with the stored text, not with
/// `addReplyDouble`: a small (listpack) set stores integral scores within
/// ±2^62 as integers (`1e17` scans as "100000000000000000" though ZSCORE
/// says "1e+17"); a large (skiplist) set prints `%.17Lg`. Which encoding a
/// set has is guessed from its present size.
fn scan_score_text(score: f64, listpack: bool) -> String {
    const LL_HALF: f64 = 4_611_686_018_427_387_904.0; // (double)(LLONG_MAX / 2)
    if score.is_infinite() {
        return if score > 0.0 { "inf" } else { "-inf" }.into();
    }
    if listpack && score.fract() == 0.0 && (-LL_HALF..=LL_HALF).contains(&score) {
        return format!("{}", score as i64);
    }
    format_g17(score)
}

/// ZSCAN: every matching member and its score at once (see
/// [`scan_collection`]), in score order.
fn zscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    scan_collection::<ZSet>(ctx, args, false, |z, scan| {
        let listpack =
            z.len() <= LISTPACK_MAX_ENTRIES && z.iter().all(|(m, _)| m.len() <= LISTPACK_MAX_VALUE);
        let mut items = Vec::new();
        for (member, score) in z.iter().filter(|(m, _)| (scan.matches)(m)) {
            items.push(reply::bulk(member));
            items.push(reply::bulk(scan_score_text(score, listpack)));
        }
        (0, items)
    })
}

#[cfg(test)]
mod tests {
    //! Replies asserted here were observed from a real Redis 7.0.15.

    use redis::Value as V;

    use crate::command::test_util::*;
    use crate::Connection;

    fn nil_or(items: &[Option<&str>]) -> V {
        V::Array(items.iter().map(|s| s.map_or(V::Nil, bulk)).collect())
    }

    /// A set with the members a..e scored 1..5 and a tie "cc" at 3.
    fn ranked() -> Connection {
        let mut c = conn();
        run(&mut c, "ZADD r 1 a 2 b 3 c 4 d 5 e 3 cc");
        c
    }

    #[test]
    fn zadd_option_errors_and_refusals() {
        let mut c = conn();
        let xx_nx = err("ERR XX and NX options at the same time are not compatible");
        let gt_lt = err("ERR GT, LT, and/or NX options at the same time are not compatible");
        assert_eq!(run(&mut c, "ZADD z nx xx 1 a"), xx_nx);
        assert_eq!(run(&mut c, "ZADD z gt lt 1 a"), gt_lt);
        assert_eq!(run(&mut c, "ZADD z nx gt 1 a"), gt_lt);
        assert_eq!(run(&mut c, "ZADD z NX LT 1 a"), gt_lt);
        assert_eq!(
            run(&mut c, "ZADD z incr 1 a 2 b"),
            err("ERR INCR option supports a single increment-element pair")
        );
        assert_eq!(run(&mut c, "ZADD z 1 a 2"), err(SYNTAX));
        assert_eq!(
            run(&mut c, "ZADD z nx"),
            err("ERR wrong number of arguments for 'zadd' command")
        );
        assert_eq!(run(&mut c, "ZADD z x a"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "ZADD z 1 a nan b"), err(NOT_FLOAT));
        // XX on a missing key creates nothing, INCR then replies nil.
        assert_eq!(run(&mut c, "ZADD z xx gt 1 a"), int(0));
        assert_eq!(run(&mut c, "ZADD z incr xx 1 a"), V::Nil);
        assert_eq!(run(&mut c, "EXISTS z"), int(0));
        // Option errors come before the type check.
        run(&mut c, "SADD s m");
        assert_eq!(run(&mut c, "ZADD s nx xx 1 a"), xx_nx);
        assert_eq!(run(&mut c, "ZADD s x a"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "ZADD s 1 a"), err(WRONGTYPE));
    }

    #[test]
    fn zadd_flags() {
        let mut c = conn();
        assert_eq!(run(&mut c, "ZADD z 1 a 2 b"), int(2));
        assert_eq!(run(&mut c, "ZADD z incr nx 1 a"), V::Nil);
        assert_eq!(run(&mut c, "ZADD z incr gt -1 a"), V::Nil);
        assert_eq!(run(&mut c, "ZADD z incr lt -1 a"), bulk("0"));
        assert_eq!(run(&mut c, "ZADD z ch gt 5 a 0 b 3 c"), int(2));
        assert_eq!(
            strings(run(&mut c, "ZRANGE z 0 -1 WITHSCORES")),
            ["b", "2", "c", "3", "a", "5"]
        );
        assert_eq!(run(&mut c, "ZADD z ch lt 5 a 0 b 3 d"), int(2));
        assert_eq!(run(&mut c, "ZADD z xx ch 7 a 7 new"), int(1));
        assert_eq!(run(&mut c, "ZSCORE z new"), V::Nil);
        assert_eq!(run(&mut c, "ZADD z NX Ch 9 a 9 new"), int(1));
        assert_eq!(run(&mut c, "ZADD z 9 a 9 new"), int(0));
        assert_eq!(run(&mut c, "ZADD z xx ch incr 1 new"), bulk("10"));
    }

    #[test]
    fn nan_and_signed_zero() {
        let mut c = conn();
        run(&mut c, "ZADD z inf a");
        let nan = err("ERR resulting score is not a number (NaN)");
        assert_eq!(run(&mut c, "ZADD z incr -inf a"), nan);
        assert_eq!(run(&mut c, "ZINCRBY z -inf a"), nan);
        assert_eq!(run(&mut c, "ZSCORE z a"), bulk("inf"));
        // The reply carries the computed -0, the stored score is 0.
        assert_eq!(run(&mut c, "ZINCRBY zneg -0 a"), bulk("-0"));
        assert_eq!(run(&mut c, "ZSCORE zneg a"), bulk("0"));
        assert_eq!(run(&mut c, "ZADD zneg -0 b"), int(1));
        assert_eq!(run(&mut c, "ZADD zneg 0 b"), int(0));
        assert_eq!(
            strings(run(&mut c, "ZRANGE zneg 0 -1 WITHSCORES")),
            ["a", "0", "b", "0"]
        );
        // A set operation replies -0 from its fresh result, stores 0.
        assert_eq!(
            strings(run(&mut c, "ZUNION 1 zneg WEIGHTS -1 WITHSCORES")),
            ["a", "-0", "b", "-0"]
        );
        run(&mut c, "ZADD zneg 1 c");
        assert_eq!(
            strings(run(&mut c, "ZINTER 1 zneg WEIGHTS -1 WITHSCORES")),
            ["c", "-1", "a", "-0", "b", "-0"]
        );
        assert_eq!(run(&mut c, "ZUNIONSTORE d 1 zneg WEIGHTS -1"), int(3));
        assert_eq!(
            strings(run(&mut c, "ZRANGE d 0 -1 WITHSCORES")),
            ["c", "-1", "a", "0", "b", "0"]
        );
    }

    #[test]
    fn zincrby() {
        let mut c = conn();
        assert_eq!(run(&mut c, "ZINCRBY z 1.5 f"), bulk("1.5"));
        assert_eq!(run(&mut c, "ZINCRBY z 0.1 f"), bulk("1.6000000000000001"));
        assert_eq!(run(&mut c, "ZSCORE z f"), bulk("1.6000000000000001"));
        // ZINCRBY goes through ZADD's option parser.
        assert_eq!(run(&mut c, "ZINCRBY z nx a"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZINCRBY z incr a"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZINCRBY z abc a"), err(NOT_FLOAT));
        run(&mut c, "SADD s m");
        assert_eq!(run(&mut c, "ZINCRBY s 1 a"), err(WRONGTYPE));
    }

    #[test]
    fn reads() {
        let mut c = ranked();
        run(&mut c, "SADD s m");
        assert_eq!(run(&mut c, "ZCARD r"), int(6));
        assert_eq!(run(&mut c, "ZCARD nokey"), int(0));
        assert_eq!(run(&mut c, "ZSCORE r cc"), bulk("3"));
        assert_eq!(run(&mut c, "ZSCORE r nope"), V::Nil);
        assert_eq!(run(&mut c, "ZSCORE nokey a"), V::Nil);
        assert_eq!(
            run(&mut c, "ZMSCORE r a nope e"),
            nil_or(&[Some("1"), None, Some("5")])
        );
        assert_eq!(run(&mut c, "ZMSCORE nokey a"), nil_or(&[None]));
        assert_eq!(run(&mut c, "ZRANK r cc"), int(3));
        assert_eq!(run(&mut c, "ZREVRANK r cc"), int(2));
        assert_eq!(run(&mut c, "ZRANK r nope"), V::Nil);
        assert_eq!(run(&mut c, "ZRANK nokey a"), V::Nil);
        assert_eq!(
            run(&mut c, "ZRANK r a withscore"),
            err("ERR wrong number of arguments for 'zrank' command")
        );
        for cmd in [
            "ZCARD s",
            "ZSCORE s a",
            "ZMSCORE s a",
            "ZRANK s a",
            "ZREVRANK s a",
            "ZCOUNT s 0 1",
            "ZLEXCOUNT s - +",
            "ZRANGE s 0 -1",
            "ZREM s a",
            "ZPOPMIN s 0",
            "ZRANDMEMBER s 0",
            "ZREMRANGEBYRANK s 0 1",
            "ZSCAN s 0",
        ] {
            assert_eq!(run(&mut c, cmd), err(WRONGTYPE), "{cmd}");
        }
    }

    #[test]
    fn zrange_by_rank() {
        let mut c = ranked();
        assert_eq!(
            strings(run(&mut c, "ZRANGE r 0 -1")),
            ["a", "b", "c", "cc", "d", "e"]
        );
        assert_eq!(strings(run(&mut c, "ZRANGE r -3 -2")), ["cc", "d"]);
        assert_eq!(strings(run(&mut c, "ZRANGE r -100 1")), ["a", "b"]);
        assert_eq!(run(&mut c, "ZRANGE r 2 1"), empty());
        assert_eq!(run(&mut c, "ZRANGE r 10 20"), empty());
        assert_eq!(
            strings(run(&mut c, "ZRANGE r 1 2 REV WITHSCORES")),
            ["d", "4", "cc", "3"]
        );
        assert_eq!(
            strings(run(&mut c, "ZREVRANGE r 0 1 WITHSCORES")),
            ["e", "5", "d", "4"]
        );
        assert_eq!(
            strings(run(&mut c, "ZRANGE r 0 1 withscores WITHSCORES")),
            ["a", "1", "b", "2"]
        );
        // LIMIT 0 -1 is "no limit", so it is accepted without BYSCORE/BYLEX.
        assert_eq!(strings(run(&mut c, "ZRANGE r 0 1 LIMIT 0 -1")), ["a", "b"]);
        let limit = err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
        assert_eq!(run(&mut c, "ZRANGE r 0 -1 LIMIT 0 1"), limit);
        assert_eq!(run(&mut c, "ZREVRANGE r 0 -1 LIMIT 0 1"), limit);
        assert_eq!(run(&mut c, "ZRANGE r 0 -1 LIMIT x 1"), err(NOT_INT));
        for bad in [
            "ZRANGE r 0 -1 REV REV",
            "ZRANGE r 0 -1 BYSCORE BYLEX",
            "ZRANGE r 0 -1 LIMIT 0",
            "ZRANGE r 0 -1 foo",
            "ZREVRANGE r 0 1 BYSCORE",
        ] {
            assert_eq!(run(&mut c, bad), err(SYNTAX), "{bad}");
        }
        assert_eq!(run(&mut c, "ZRANGE nokey x 1"), err(NOT_INT));
        assert_eq!(run(&mut c, "ZRANGE nokey 0 -1"), empty());
    }

    #[test]
    fn zrange_by_score() {
        let mut c = ranked();
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYSCORE r 2 3")),
            ["b", "c", "cc"]
        );
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYSCORE r (2 4 WITHSCORES")),
            ["c", "3", "cc", "3", "d", "4"]
        );
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYSCORE r 2 (4 LIMIT 1 1")),
            ["c"]
        );
        assert_eq!(strings(run(&mut c, "ZRANGE r (1 (3 BYSCORE")), ["b"]);
        assert_eq!(
            strings(run(&mut c, "ZRANGE r 3 1 BYSCORE REV")),
            ["cc", "c", "b", "a"]
        );
        assert_eq!(
            strings(run(
                &mut c,
                "ZRANGE r +inf -inf BYSCORE REV LIMIT 1 2 WITHSCORES"
            )),
            ["d", "4", "cc", "3"]
        );
        assert_eq!(
            strings(run(&mut c, "ZREVRANGEBYSCORE r (4 (2")),
            ["cc", "c"]
        );
        assert_eq!(
            strings(run(&mut c, "ZREVRANGEBYSCORE r +inf -inf LIMIT 10 2")),
            Vec::<String>::new()
        );
        // A negative offset selects nothing, a negative count everything.
        assert_eq!(run(&mut c, "ZRANGEBYSCORE r -inf +inf LIMIT -1 2"), empty());
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYSCORE r -inf +inf LIMIT 4 -1")),
            ["d", "e"]
        );
        assert_eq!(run(&mut c, "ZRANGEBYSCORE r -inf +inf LIMIT 1 0"), empty());
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYSCORE r 1 2 LIMIT 0 1 LIMIT 1 1")),
            ["b"]
        );
        // Bounds are read with strtod: blanks before, hex, overflow, "" = 0.
        let reply = c.execute(&[b"ZRANGEBYSCORE", b"r", b"", b""]);
        assert_eq!(reply, empty());
        assert_eq!(strings(run(&mut c, "ZRANGEBYSCORE r ( 1")), ["a"]);
        assert_eq!(strings(run(&mut c, "ZRANGEBYSCORE r 0x1 0x2")), ["a", "b"]);
        assert_eq!(run(&mut c, "ZRANGEBYSCORE r 1e400 inf"), empty());
        assert_eq!(strings(run(&mut c, "ZRANGEBYSCORE r -1e400 1")), ["a"]);
        let not_float = err("ERR min or max is not a float");
        assert_eq!(run(&mut c, "ZRANGEBYSCORE r nan 1"), not_float);
        assert_eq!(run(&mut c, "ZRANGEBYSCORE r (nan 1"), not_float);
        assert_eq!(run(&mut c, "ZRANGE r x 1 BYSCORE"), not_float);
        assert_eq!(run(&mut c, "ZRANGE nokey x 1 BYSCORE"), not_float);
        assert_eq!(run(&mut c, "ZRANGEBYSCORE r 1 2 REV"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZRANGEBYSCORE r 1 2 BYSCORE"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZCOUNT r 2 4"), int(4));
        assert_eq!(run(&mut c, "ZCOUNT r (2 (4"), int(2));
        assert_eq!(run(&mut c, "ZCOUNT r 5 1"), int(0));
        assert_eq!(run(&mut c, "ZCOUNT r (3 3"), int(0));
        assert_eq!(run(&mut c, "ZCOUNT nokey x 1"), not_float);
        assert_eq!(run(&mut c, "ZCOUNT nokey 0 1"), int(0));
    }

    #[test]
    fn zrange_by_lex() {
        let mut c = conn();
        run(&mut c, "ZADD lex 0 a 0 b 0 c 0 d 0 e 0 aa");
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYLEX lex - +")),
            ["a", "aa", "b", "c", "d", "e"]
        );
        assert_eq!(strings(run(&mut c, "ZRANGEBYLEX lex [b (d")), ["b", "c"]);
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYLEX lex (a [c")),
            ["aa", "b", "c"]
        );
        assert_eq!(strings(run(&mut c, "ZRANGEBYLEX lex [aa [aa")), ["aa"]);
        assert_eq!(run(&mut c, "ZRANGEBYLEX lex (aa [aa"), empty());
        assert_eq!(run(&mut c, "ZRANGEBYLEX lex + -"), empty());
        assert_eq!(run(&mut c, "ZRANGEBYLEX lex - -"), empty());
        assert_eq!(run(&mut c, "ZRANGEBYLEX lex [ ["), empty());
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYLEX lex - + LIMIT 2 3")),
            ["b", "c", "d"]
        );
        assert_eq!(run(&mut c, "ZRANGEBYLEX lex - + LIMIT -1 3"), empty());
        assert_eq!(strings(run(&mut c, "ZREVRANGEBYLEX lex (d [b")), ["c", "b"]);
        assert_eq!(
            strings(run(&mut c, "ZREVRANGEBYLEX lex + - LIMIT 1 2")),
            ["d", "c"]
        );
        assert_eq!(
            strings(run(&mut c, "ZRANGE lex + - BYLEX REV LIMIT 1 2")),
            ["d", "c"]
        );
        assert_eq!(run(&mut c, "ZLEXCOUNT lex [b (d"), int(2));
        assert_eq!(run(&mut c, "ZLEXCOUNT lex - +"), int(6));
        let bad = err("ERR min or max not valid string range item");
        assert_eq!(run(&mut c, "ZRANGEBYLEX lex a b"), bad);
        assert_eq!(run(&mut c, "ZRANGEBYLEX lex -a +"), bad);
        assert_eq!(run(&mut c, "ZLEXCOUNT nokey a b"), bad);
        assert_eq!(run(&mut c, "ZRANGE lex 0 -1 BYLEX REV"), bad);
        let withscores =
            err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        assert_eq!(run(&mut c, "ZRANGEBYLEX lex - + WITHSCORES"), withscores);
        assert_eq!(run(&mut c, "ZRANGE lex a b BYLEX WITHSCORES"), withscores);
        // Members are binary: "b\0" sorts after "b".
        c.execute(&[b"ZADD", b"lex", b"0", b"b\0"]);
        let reply = c.execute(&[b"ZRANGEBYLEX", b"lex", b"[b\0", b"[c"]);
        assert_eq!(
            reply,
            V::Array(vec![V::BulkString(b"b\0".to_vec()), bulk("c")])
        );
    }

    #[test]
    fn lex_ranges_over_mixed_scores_match_the_small_encoding() {
        let mut c = conn();
        run(&mut c, "ZADD m 1 c 2 a 3 b 4 d");
        assert_eq!(
            strings(run(&mut c, "ZRANGEBYLEX m [b +")),
            ["c", "a", "b", "d"]
        );
        assert_eq!(run(&mut c, "ZLEXCOUNT m [b +"), int(4));
        assert_eq!(strings(run(&mut c, "ZREVRANGEBYLEX m + [b")), ["d", "b"]);
        assert_eq!(run(&mut c, "ZRANGEBYLEX m - [b"), empty());
        assert_eq!(run(&mut c, "ZREVRANGEBYLEX m [b -"), empty());
        assert_eq!(strings(run(&mut c, "ZRANGEBYLEX m [a [c")), ["c", "a", "b"]);
        assert_eq!(
            strings(run(&mut c, "ZREVRANGEBYLEX m [c [a")),
            ["b", "a", "c"]
        );
        assert_eq!(run(&mut c, "ZLEXCOUNT m [a [c"), int(3));
    }

    #[test]
    fn zrangestore() {
        let mut c = ranked();
        assert_eq!(run(&mut c, "ZRANGESTORE d r 0 1"), int(2));
        assert_eq!(
            strings(run(&mut c, "ZRANGE d 0 -1 WITHSCORES")),
            ["a", "1", "b", "2"]
        );
        assert_eq!(
            run(&mut c, "ZRANGESTORE d r (1 3 BYSCORE LIMIT 1 1"),
            int(1)
        );
        assert_eq!(strings(run(&mut c, "ZRANGE d 0 -1 WITHSCORES")), ["c", "3"]);
        assert_eq!(run(&mut c, "ZRANGESTORE d r 0 -1 WITHSCORES"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZRANGESTORE d r 10 20"), int(0));
        assert_eq!(run(&mut c, "EXISTS d"), int(0));
        assert_eq!(run(&mut c, "ZRANGESTORE d nokey 0 -1"), int(0));
    }

    #[test]
    fn removals() {
        let mut c = ranked();
        assert_eq!(run(&mut c, "ZREM r a nope"), int(1));
        assert_eq!(run(&mut c, "ZREM r nope"), int(0));
        assert_eq!(run(&mut c, "ZREM nokey a"), int(0));
        assert_eq!(run(&mut c, "ZREMRANGEBYRANK r x 1"), err(NOT_INT));
        assert_eq!(run(&mut c, "ZREMRANGEBYRANK nokey 0 1"), int(0));
        assert_eq!(run(&mut c, "ZREMRANGEBYRANK r 10 20"), int(0));
        assert_eq!(run(&mut c, "ZREMRANGEBYRANK r -2 -1"), int(2));
        assert_eq!(strings(run(&mut c, "ZRANGE r 0 -1")), ["b", "c", "cc"]);
        assert_eq!(run(&mut c, "ZREMRANGEBYSCORE r (2 3"), int(2));
        assert_eq!(
            run(&mut c, "ZREMRANGEBYSCORE nokey x 3"),
            err("ERR min or max is not a float")
        );
        assert_eq!(run(&mut c, "ZREMRANGEBYSCORE r -inf +inf"), int(1));
        assert_eq!(run(&mut c, "EXISTS r"), int(0));
        run(&mut c, "ZADD lex 0 a 0 b 0 c 0 d");
        assert_eq!(run(&mut c, "ZREMRANGEBYLEX lex (a [c"), int(2));
        assert_eq!(strings(run(&mut c, "ZRANGE lex 0 -1")), ["a", "d"]);
        assert_eq!(
            run(&mut c, "ZREMRANGEBYLEX lex a b"),
            err("ERR min or max not valid string range item")
        );
        assert_eq!(run(&mut c, "ZREMRANGEBYLEX lex - +"), int(2));
        assert_eq!(run(&mut c, "EXISTS lex"), int(0));
        run(&mut c, "ZADD one 1 x");
        assert_eq!(run(&mut c, "ZREM one x y"), int(1));
        assert_eq!(run(&mut c, "EXISTS one"), int(0));
    }

    #[test]
    fn pops() {
        let mut c = conn();
        run(&mut c, "ZADD p 1 a 2 b 3 c 4 d");
        let positive = err("ERR value is out of range, must be positive");
        assert_eq!(run(&mut c, "ZPOPMIN p -1"), positive);
        assert_eq!(run(&mut c, "ZPOPMIN p x"), positive);
        assert_eq!(run(&mut c, "ZPOPMIN p 1 2"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZPOPMIN nokey"), empty());
        assert_eq!(run(&mut c, "ZPOPMIN nokey 2"), empty());
        assert_eq!(run(&mut c, "ZPOPMIN p 0"), empty());
        assert_eq!(strings(run(&mut c, "ZPOPMIN p")), ["a", "1"]);
        assert_eq!(strings(run(&mut c, "ZPOPMAX p 2")), ["d", "4", "c", "3"]);
        assert_eq!(strings(run(&mut c, "ZPOPMAX p 10")), ["b", "2"]);
        assert_eq!(run(&mut c, "EXISTS p"), int(0));
    }

    #[test]
    fn zrandmember_shapes() {
        let mut c = conn();
        run(&mut c, "ZADD m 1 c 2 a 3 b 4 d");
        assert_eq!(
            run(&mut c, "ZRANDMEMBER m -9223372036854775808"),
            err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
        );
        let range = err("ERR value is out of range");
        assert_eq!(
            run(&mut c, "ZRANDMEMBER m -4611686018427387904 WITHSCORES"),
            range
        );
        assert_eq!(
            run(&mut c, "ZRANDMEMBER m 4611686018427387904 WITHSCORES"),
            range
        );
        // A count of at least the size: the whole set, from the top.
        assert_eq!(
            strings(run(&mut c, "ZRANDMEMBER m 4611686018427387903 WITHSCORES")),
            ["d", "4", "b", "3", "a", "2", "c", "1"]
        );
        assert_eq!(
            strings(run(&mut c, "ZRANDMEMBER m 4")),
            ["d", "b", "a", "c"]
        );
        assert_eq!(run(&mut c, "ZRANDMEMBER m 1 foo"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZRANDMEMBER m 1 WITHSCORES x"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZRANDMEMBER nokey 5"), empty());
        assert_eq!(run(&mut c, "ZRANDMEMBER nokey"), V::Nil);
        assert_eq!(run(&mut c, "ZRANDMEMBER m 0"), empty());
        assert!(matches!(run(&mut c, "ZRANDMEMBER m"), V::BulkString(_)));
        let pairs = strings(run(&mut c, "ZRANDMEMBER m -10 WITHSCORES"));
        assert_eq!(pairs.len(), 20);
        for pair in pairs.chunks(2) {
            assert_eq!(
                run(&mut c, &format!("ZSCORE m {}", pair[0])),
                bulk(&pair[1])
            );
        }
        let mut three = strings(run(&mut c, "ZRANDMEMBER m 3"));
        three.sort();
        three.dedup();
        assert_eq!(three.len(), 3);
        assert!(matches!(
            run(&mut c, "ZRANDMEMBER m -9223372036854775807"),
            V::ServerError(_)
        ));
    }

    #[test]
    fn set_operation_errors() {
        let mut c = conn();
        run(&mut c, "ZADD z1 1 a");
        assert_eq!(
            run(&mut c, "ZUNIONSTORE d 0 z1"),
            err("ERR at least 1 input key is needed for 'zunionstore' command")
        );
        assert_eq!(
            run(&mut c, "ZUNION -1 z1"),
            err("ERR at least 1 input key is needed for 'zunion' command")
        );
        assert_eq!(run(&mut c, "ZUNIONSTORE d x z1"), err(NOT_INT));
        for bad in [
            "ZUNIONSTORE d 3 z1 z1",
            "ZUNIONSTORE d 1 z1 WEIGHTS",
            "ZUNIONSTORE d 2 z1 z1 WEIGHTS 1",
            "ZUNIONSTORE d 1 z1 AGGREGATE foo",
            "ZUNIONSTORE d 1 z1 AGGREGATE",
            "ZUNIONSTORE d 1 z1 WITHSCORES",
            "ZUNIONSTORE d 1 z1 LIMIT 1",
            "ZDIFFSTORE d 1 z1 WEIGHTS 1",
            "ZDIFF 1 z1 AGGREGATE sum",
            "ZINTERCARD 1 z1 WEIGHTS 1",
        ] {
            assert_eq!(run(&mut c, bad), err(SYNTAX), "{bad}");
        }
        assert_eq!(
            run(&mut c, "ZUNIONSTORE d 1 z1 WEIGHTS x"),
            err("ERR weight value is not a float")
        );
        assert_eq!(
            run(&mut c, "ZINTERCARD 1 z1 LIMIT -1"),
            err("ERR LIMIT can't be negative")
        );
    }

    #[test]
    fn set_operations() {
        let mut c = conn();
        run(&mut c, "ZADD z1 1 a 2 b 3 c");
        run(&mut c, "ZADD z2 10 b 20 c 30 d");
        run(&mut c, "SADD s c d e");
        // Plain sets count with score 1.
        assert_eq!(run(&mut c, "ZUNIONSTORE d 2 z1 s"), int(5));
        assert_eq!(
            strings(run(&mut c, "ZRANGE d 0 -1 WITHSCORES")),
            ["a", "1", "d", "1", "e", "1", "b", "2", "c", "4"]
        );
        assert_eq!(
            run(
                &mut c,
                "ZINTERSTORE d 3 z1 z2 s WEIGHTS 1 2 3 AGGREGATE max"
            ),
            int(1)
        );
        assert_eq!(
            strings(run(&mut c, "ZRANGE d 0 -1 WITHSCORES")),
            ["c", "40"]
        );
        assert_eq!(
            run(&mut c, "ZINTERSTORE d 2 z1 z2 aggregate min weights 2 0.5"),
            int(2)
        );
        assert_eq!(
            strings(run(&mut c, "ZRANGE d 0 -1 WITHSCORES")),
            ["b", "4", "c", "6"]
        );
        // An empty result deletes the destination, whatever it held.
        assert_eq!(run(&mut c, "ZINTERSTORE d 2 z1 nokey"), int(0));
        assert_eq!(run(&mut c, "EXISTS d"), int(0));
        assert_eq!(run(&mut c, "ZUNIONSTORE s 1 z2"), int(3));
        assert_eq!(run(&mut c, "TYPE s"), V::SimpleString("zset".into()));
        assert_eq!(
            strings(run(&mut c, "ZUNION 2 z1 z2 WITHSCORES")),
            ["a", "1", "b", "12", "c", "23", "d", "30"]
        );
        assert_eq!(strings(run(&mut c, "ZINTER 2 z1 z2")), ["b", "c"]);
        assert_eq!(run(&mut c, "ZINTER 2 z1 nokey WITHSCORES"), empty());
        assert_eq!(
            strings(run(&mut c, "ZDIFF 2 z2 z1 WITHSCORES")),
            ["d", "30"]
        );
        assert_eq!(run(&mut c, "ZDIFFSTORE d 2 z2 z1"), int(1));
        assert_eq!(run(&mut c, "ZINTERCARD 2 z1 z2"), int(2));
        assert_eq!(run(&mut c, "ZINTERCARD 2 z1 z2 LIMIT 1"), int(1));
        // The destination may be a source.
        assert_eq!(run(&mut c, "ZUNIONSTORE z1 2 z1 z1"), int(3));
        assert_eq!(
            strings(run(&mut c, "ZRANGE z1 0 -1 WITHSCORES")),
            ["a", "2", "b", "4", "c", "6"]
        );
        // inf - inf sums to 0; inf * 0 weighs 0.
        run(&mut c, "ZADD zi inf a");
        assert_eq!(run(&mut c, "ZUNIONSTORE d 2 zi zi WEIGHTS 1 -1"), int(1));
        assert_eq!(strings(run(&mut c, "ZRANGE d 0 -1 WITHSCORES")), ["a", "0"]);
        assert_eq!(run(&mut c, "ZUNIONSTORE d 1 zi WEIGHTS 0"), int(1));
        assert_eq!(strings(run(&mut c, "ZRANGE d 0 -1 WITHSCORES")), ["a", "0"]);
        // Type errors come before the options are read, even after a
        // missing key.
        run(&mut c, "SET str x");
        assert_eq!(run(&mut c, "ZUNIONSTORE d 1 str WEIGHTS x"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "ZINTERSTORE d 2 nokey str"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "ZINTERCARD 1 str LIMIT -1"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "ZDIFF 2 z1 str"), err(WRONGTYPE));
    }

    #[test]
    fn zscan_prints_stored_scores() {
        let mut c = conn();
        run(&mut c, "ZADD z 1.6000000000000001 f 2 b 1e17 big inf i");
        assert_eq!(run(&mut c, "ZSCORE z big"), bulk("1e+17"));
        let reply = run(&mut c, "ZSCAN z 0");
        assert_eq!(
            reply,
            V::Array(vec![
                bulk("0"),
                bulks(&[
                    "f",
                    "1.6000000000000001",
                    "b",
                    "2",
                    "big",
                    "100000000000000000",
                    "i",
                    "inf"
                ])
            ])
        );
        assert_eq!(
            run(&mut c, "ZSCAN z 0 MATCH b*"),
            V::Array(vec![
                bulk("0"),
                bulks(&["b", "2", "big", "100000000000000000"])
            ])
        );
        assert_eq!(run(&mut c, "ZSCAN z 0 COUNT 0"), err(SYNTAX));
        assert_eq!(
            run(&mut c, "ZSCAN nokey 0 COUNT 0"),
            V::Array(vec![bulk("0"), empty()])
        );
    }

    #[test]
    fn large_sets_keep_ranks() {
        let mut c = conn();
        for i in 0..1000 {
            run(&mut c, &format!("ZADD big {} m{i:04}", i % 10));
        }
        // Score 0: m0000 m0010 ... m0990; rank of m0123 (score 3) is 300 + 12.
        assert_eq!(run(&mut c, "ZRANK big m0123"), int(312));
        assert_eq!(run(&mut c, "ZREVRANK big m0123"), int(687));
        assert_eq!(
            strings(run(&mut c, "ZRANGE big 312 313")),
            ["m0123", "m0133"]
        );
        assert_eq!(run(&mut c, "ZCOUNT big (2 4"), int(200));
        assert_eq!(run(&mut c, "ZREMRANGEBYRANK big 100 899"), int(800));
        assert_eq!(run(&mut c, "ZCARD big"), int(200));
        assert_eq!(
            strings(run(&mut c, "ZRANGE big 99 100")),
            ["m0990", "m0009"]
        );
        assert_eq!(run(&mut c, "ZRANK big m0009"), int(100));
    }

    #[test]
    fn watch_sees_only_real_changes() {
        let setup = ["ZADD z 1 a 2 b", "ZADD other 5 o"];
        for noop in [
            "ZADD z 1 a",
            "ZADD z NX 5 a",
            "ZADD z XX 5 nope",
            "ZADD z GT 0 a",
            "ZINCRBY z 0 a",
            "ZREM z nope",
            "ZREMRANGEBYSCORE z 10 20",
            "ZREMRANGEBYRANK z 5 6",
            "ZREMRANGEBYLEX z [x [y",
            "ZPOPMIN z 0",
        ] {
            assert_watch(&setup, "z", noop, false);
        }
        for change in [
            "ZADD z 3 a",
            "ZADD z 1 c",
            "ZINCRBY z 1 a",
            "ZREM z a",
            "ZREMRANGEBYSCORE z 1 1",
            "ZREMRANGEBYRANK z 0 0",
            "ZPOPMAX z",
            "ZUNIONSTORE z 1 other",
            "ZINTERSTORE z 2 z nokey",
            "ZRANGESTORE z other 0 -1",
            // An empty result deletes the destination.
            "ZINTERSTORE z 2 other nokey",
            "ZRANGESTORE z nokey 0 -1",
        ] {
            assert_watch(&setup, "z", change, true);
        }
        // ... but deleting a missing destination changes nothing.
        assert_watch(&setup, "d", "ZINTERSTORE d 2 other nokey", false);
    }
}
