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
//! are described in [`crate::memory::zset`].

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, HashSet};

use rand::Rng;

use super::keys::{parse_cursor, parse_scan_options};
use super::sets::{random_reply_len, scan_reply, store_or_delete, NOT_POSITIVE};
use super::{CmdResult, Ctx, Spec};
use crate::memory::args::{float_arg, int_arg, is, positive_arg, signed_count_arg};
use crate::memory::error::CmdError;
use crate::memory::float::{format_g17, parse_double};
use crate::memory::glob::glob_match;
use crate::memory::reply;
use crate::memory::value::{Bytes, Value};
use crate::memory::zset::{LexRange, Score, ScoreRange, ZSet};

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
        arity: 3,
        handler: zrank,
    },
    Spec {
        name: "zrevrank",
        arity: 3,
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

/// Member, score pairs as one flat array (RESP2's WITHSCORES shape).
fn pairs_reply<'a>(pairs: impl IntoIterator<Item = (&'a [u8], f64)>, withscores: bool) -> redis::Value {
    let mut items = Vec::new();
    for (member, score) in pairs {
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

fn zadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
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

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
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
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        return Err(CmdError::Syntax);
    }
    if f.nx && f.xx {
        return Err(CmdError::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt) {
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

    let exists = ctx.read::<ZSet>(key)?.is_some();
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
                Ok(AddOutcome::Added(s)) => (added, processed, last) = (added + 1, processed + 1, s),
                Ok(AddOutcome::Updated(s)) => {
                    (updated, processed, last) = (updated + 1, processed + 1, s)
                }
                Ok(AddOutcome::Same(s)) => (processed, last) = (processed + 1, s),
            }
        }
        if added + updated > 0 {
            ctx.modified(key);
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
    let key = args[1];
    let Some(z) = ctx.write::<ZSet>(key)? else {
        return Ok(reply::int(0));
    };
    let mut deleted = 0;
    for member in &args[2..] {
        if z.remove(member) {
            deleted += 1;
        }
        if z.is_empty() {
            break;
        }
    }
    if deleted > 0 {
        ctx.drop_if_empty(key);
        ctx.modified(key);
    }
    Ok(reply::int(deleted))
}

fn zscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let score = ctx.read::<ZSet>(args[1])?.and_then(|z| z.score(args[2]));
    Ok(score.map_or_else(reply::nil, reply::double))
}

fn zmscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let z = ctx.read::<ZSet>(args[1])?;
    let scores = args[2..]
        .iter()
        .map(|m| z.and_then(|z| z.score(m)).map_or_else(reply::nil, reply::double))
        .collect();
    Ok(reply::array(scores))
}

fn rank_reply(ctx: &mut Ctx<'_>, args: &[&[u8]], reverse: bool) -> CmdResult {
    let Some(z) = ctx.read::<ZSet>(args[1])? else {
        return Ok(reply::nil());
    };
    let rank = z
        .rank(args[2])
        .map(|r| if reverse { z.len() - 1 - r } else { r });
    Ok(rank.map_or_else(reply::nil, reply::int))
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

/// The clamped ranks `start..end` of an index range (negative indices count
/// from the end), or `None` if it is empty. Shared by ZRANGE and
/// ZREMRANGEBYRANK.
fn rank_span(start: i64, end: i64, len: usize) -> Option<std::ops::Range<usize>> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let start = if start < 0 { len.saturating_add(start) } else { start }.max(0);
    let end = if end < 0 { len.saturating_add(end) } else { end };
    if start > end || start >= len {
        return None;
    }
    let end = end.min(len - 1);
    Some(usize::try_from(start).ok()?..usize::try_from(end).ok()? + 1)
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
            let Some(span) = rank_span(*start, *end, z.len()) else {
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
    let z = ctx.read::<ZSet>(args[key_at])?;
    let picked = z.map(|z| select(z, &selection, reverse, offset, limit));
    match sink {
        Sink::Client => Ok(pairs_reply(picked.unwrap_or_default(), withscores)),
        Sink::Store(dst) => {
            let result = ZSet::from_pairs(
                picked
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(m, s)| (m.to_vec(), s)),
            );
            let len = result.len();
            store_or_delete(ctx, dst, Value::ZSet(result), len)
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
    zrange_generic(ctx, args, 1, Sink::Client, RangeBy::Rank, Direction::Reverse)
}

fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, Sink::Client, RangeBy::Score, Direction::Forward)
}

fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, Sink::Client, RangeBy::Score, Direction::Reverse)
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
        Selection::Rank(start, end) => rank_span(*start, *end, z.len()).unwrap_or(0..0),
        Selection::Score(range) => z.score_span(range),
        Selection::Lex(range) => z.lex_span(range),
    };
    let deleted = z.remove_ranks(span.start, span.end);
    if deleted > 0 {
        ctx.drop_if_empty(key);
        ctx.modified(key);
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

/// ZPOPMIN / ZPOPMAX key [count]: a flat array of member, score pairs.
fn zpop(ctx: &mut Ctx<'_>, args: &[&[u8]], max: bool) -> CmdResult {
    let count = match args.len() {
        2 => 1,
        3 => positive_arg(args[2], NOT_POSITIVE)?,
        _ => return Err(CmdError::Syntax),
    };
    let key = args[1];
    let Some(z) = ctx.write::<ZSet>(key)? else {
        return Ok(reply::array(Vec::new()));
    };
    let mut items = Vec::new();
    for _ in 0..count {
        let Some((member, score)) = z.pop(max) else {
            break;
        };
        items.push(reply::bulk(&member[..]));
        items.push(reply::double(score));
    }
    if !items.is_empty() {
        ctx.drop_if_empty(key);
        ctx.modified(key);
    }
    Ok(reply::array(items))
}

fn zpopmin(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zpop(ctx, args, false)
}

fn zpopmax(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zpop(ctx, args, true)
}

/// ZRANDMEMBER key [count [WITHSCORES]]
fn zrandmember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let Some(count) = args.get(2) else {
        let Some(z) = ctx.read::<ZSet>(args[1])? else {
            return Ok(reply::nil());
        };
        let picked = z.get(rand::rng().random_range(0..z.len().max(1)));
        return Ok(picked.map_or_else(reply::nil, |(m, _)| reply::bulk(m)));
    };
    let count = signed_count_arg(count)?;
    let withscores = match args.get(3..) {
        Some([]) | None => false,
        Some([opt]) if is(opt, "withscores") => true,
        _ => return Err(CmdError::Syntax),
    };
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(CmdError::err("value is out of range"));
    }
    let Some(z) = ctx.read::<ZSet>(args[1])? else {
        return Ok(reply::array(Vec::new()));
    };
    let mut rng = rand::rng();
    let wanted = count.unsigned_abs();
    let len = z.len();
    if count < 0 {
        // Repetitions allowed: independent draws.
        let n = random_reply_len(wanted)?;
        let picks = (0..n).filter_map(|_| z.get(rng.random_range(0..len.max(1))));
        return Ok(pairs_reply(picks, withscores));
    }
    if wanted >= len as u64 {
        // The whole set, in order, as Redis.
        return Ok(pairs_reply(z.iter(), withscores));
    }
    let n = usize::try_from(wanted).unwrap_or(usize::MAX);
    let ranks = rand::seq::index::sample(&mut rng, len, n);
    Ok(pairs_reply(ranks.iter().filter_map(|r| z.get(r)), withscores))
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
    Set(&'a HashSet<Bytes>),
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

    fn iter(&self) -> Box<dyn Iterator<Item = (&'a [u8], f64)> + 'a> {
        match *self {
            Source::Missing => Box::new(std::iter::empty()),
            Source::Set(s) => Box::new(s.iter().map(|m| (m.as_slice(), 1.0))),
            Source::Sorted(z) => Box::new(z.iter()),
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
                *w = parse_double(arg).ok_or_else(|| CmdError::err("weight value is not a float"))?;
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
                    let Some(s) = src.score(member) else {
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
            let mut acc: HashMap<&[u8], f64> = HashMap::new();
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
    for key in keys {
        match ctx.value(key) {
            None | Some(Value::Set(_) | Value::ZSet(_)) => {}
            Some(_) => return Err(CmdError::WrongType),
        }
    }
    let opts = parse_setop_options(&args[first_key + keys.len()..], keys.len(), op, dst.is_some(), card_only)?;
    let now = ctx.now;
    let ks = &*ctx.ks();
    let sources: Vec<(Source<'_>, f64)> = keys
        .iter()
        .zip(&opts.weights)
        .map(|(key, &w)| {
            let src = match ks.peek(key, now) {
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
            store_or_delete(ctx, dst, Value::ZSet(z), len)
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

/// ZSCAN key cursor [MATCH pattern] [COUNT count]: every match at once with
/// cursor 0 (see [`scan_reply`]), in score order.
fn zscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    parse_cursor(args[2])?;
    let Some(z) = ctx.read::<ZSet>(args[1])? else {
        return Ok(scan_reply(Vec::new()));
    };
    let opts = parse_scan_options(&args[3..], false)?;
    let listpack =
        z.len() <= LISTPACK_MAX_ENTRIES && z.iter().all(|(m, _)| m.len() <= LISTPACK_MAX_VALUE);
    let mut items = Vec::new();
    for (member, score) in z.iter() {
        if opts.pattern.is_none_or(|p| glob_match(p, member, false)) {
            items.push(reply::bulk(member));
            items.push(reply::bulk(scan_score_text(score, listpack)));
        }
    }
    Ok(scan_reply(items))
}
