//! List commands, following Redis 7.0's `t_list.c`: LPUSH RPUSH LPUSHX
//! RPUSHX LPOP RPOP LRANGE LTRIM LLEN LINDEX LREM LSET LINSERT LPOS LMOVE
//! RPOPLPUSH.
//!
//! Indices are Redis's: negative ones count from the tail (-1 is the last
//! element), and ranges are clipped to the list, so any i64 is a valid
//! argument. A list left empty is deleted; a push keeps the key's TTL. The
//! order of checks (numbers parsed before or after the key lookup) is
//! Redis's, command by command, because it decides which error wins.

use std::collections::VecDeque;

use super::{CmdResult, Ctx, Spec};
use crate::memory::args::{int_arg, is, parse_i64};
use crate::memory::error::CmdError;
use crate::memory::reply;
use crate::memory::value::Bytes;

/// A list value as the keyspace stores it.
type List = VecDeque<Bytes>;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "lpush",
        arity: -3,
        handler: lpush,
    },
    Spec {
        name: "rpush",
        arity: -3,
        handler: rpush,
    },
    Spec {
        name: "lpushx",
        arity: -3,
        handler: lpushx,
    },
    Spec {
        name: "rpushx",
        arity: -3,
        handler: rpushx,
    },
    Spec {
        name: "lpop",
        arity: -2,
        handler: lpop,
    },
    Spec {
        name: "rpop",
        arity: -2,
        handler: rpop,
    },
    Spec {
        name: "lrange",
        arity: 4,
        handler: lrange,
    },
    Spec {
        name: "ltrim",
        arity: 4,
        handler: ltrim,
    },
    Spec {
        name: "llen",
        arity: 2,
        handler: llen,
    },
    Spec {
        name: "lindex",
        arity: 3,
        handler: lindex,
    },
    Spec {
        name: "lrem",
        arity: 4,
        handler: lrem,
    },
    Spec {
        name: "lset",
        arity: 4,
        handler: lset,
    },
    Spec {
        name: "linsert",
        arity: 5,
        handler: linsert,
    },
    Spec {
        name: "lpos",
        arity: -3,
        handler: lpos,
    },
    Spec {
        name: "lmove",
        arity: 5,
        handler: lmove,
    },
    Spec {
        name: "rpoplpush",
        arity: 3,
        handler: rpoplpush,
    },
];

/// One end of a list.
#[derive(Clone, Copy, PartialEq)]
enum End {
    Head,
    Tail,
}

impl End {
    /// LMOVE's LEFT / RIGHT.
    fn parse(arg: &[u8]) -> Result<End, CmdError> {
        if is(arg, "left") {
            Ok(End::Head)
        } else if is(arg, "right") {
            Ok(End::Tail)
        } else {
            Err(CmdError::Syntax)
        }
    }
}

fn push(list: &mut List, end: End, value: Bytes) {
    match end {
        End::Head => list.push_front(value),
        End::Tail => list.push_back(value),
    }
}

fn pop(list: &mut List, end: End) -> Option<Bytes> {
    match end {
        End::Head => list.pop_front(),
        End::Tail => list.pop_back(),
    }
}

/// A list length as Redis's `long`: a list never gets near i64::MAX.
fn len_i64(list: &List) -> i64 {
    i64::try_from(list.len()).unwrap_or(i64::MAX)
}

/// The position `index` (negative: from the tail) designates, if it is
/// inside the list.
fn resolve_index(list: &List, index: i64) -> Option<usize> {
    let i = if index < 0 {
        len_i64(list).checked_add(index)?
    } else {
        index
    };
    usize::try_from(i).ok().filter(|&i| i < list.len())
}

/// The inclusive range `start..=end` of LRANGE and LTRIM, clipped to the
/// list, or `None` when it selects nothing (start after end, or past the
/// tail). The sums cannot overflow: a negative index plus a length stays
/// within i64.
fn resolve_range(list: &List, start: i64, end: i64) -> Option<(usize, usize)> {
    let len = len_i64(list);
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    let end = end.min(len - 1);
    Some((usize::try_from(start).ok()?, usize::try_from(end).ok()?))
}

fn lpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Head, false)
}

fn rpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Tail, false)
}

fn lpushx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Head, true)
}

fn rpushx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Tail, true)
}

/// Pushes the elements one by one (so LPUSH k a b c leaves c first) and
/// replies with the new length. With `only_existing` (the X variants) a
/// missing key stays missing.
fn push_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End, only_existing: bool) -> CmdResult {
    let key = args[1];
    let list = if only_existing {
        match ctx.write::<List>(key)? {
            Some(list) => list,
            None => return Ok(reply::int(0)),
        }
    } else {
        ctx.write_or_create::<List>(key)?
    };
    for value in &args[2..] {
        push(list, end, value.to_vec());
    }
    let len = list.len();
    ctx.modified(key);
    Ok(reply::int(len))
}

fn lpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Head)
}

fn rpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Tail)
}

/// LPOP/RPOP key [count].
///
/// Without a count: one bulk string. With one: an array of up to `count`
/// elements in pop order (RPOP's starts with the last element). A missing
/// key is nil either way (RESP2's null array reads as nil too); a count of
/// 0 on an existing list is an empty array and changes nothing.
fn pop_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(super::lookup(args[0]).map_or(CmdError::Syntax, super::wrong_arity));
    }
    // Redis reads the count with a custom message, which it also gives
    // for a count that is not a number at all.
    let count = match args.get(2) {
        None => None,
        Some(arg) => Some(
            parse_i64(arg)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| CmdError::err("value is out of range, must be positive"))?,
        ),
    };
    let key = args[1];
    let Some(list) = ctx.write::<List>(key)? else {
        return Ok(reply::nil());
    };
    let reply = match count {
        Some(0) => return Ok(reply::array(Vec::new())),
        None => pop(list, end).map_or_else(reply::nil, reply::bulk),
        Some(n) => {
            let n = n.min(list.len());
            let popped: Vec<Bytes> = match end {
                End::Head => list.drain(..n).collect(),
                End::Tail => list.drain(list.len() - n..).rev().collect(),
            };
            reply::bulks(popped)
        }
    };
    ctx.drop_if_empty(key);
    ctx.modified(key);
    Ok(reply)
}

/// LRANGE: indices are parsed before the key is looked up.
fn lrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let start = int_arg(args[2])?;
    let end = int_arg(args[3])?;
    let Some(list) = ctx.read::<List>(args[1])? else {
        return Ok(reply::array(Vec::new()));
    };
    let items = match resolve_range(list, start, end) {
        Some((from, to)) => list.range(from..=to).cloned().collect(),
        None => Vec::new(),
    };
    Ok(reply::bulks(items))
}

/// LTRIM keeps `start..=end`; an empty range deletes the key. Redis marks
/// the key modified even when nothing was trimmed.
fn ltrim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let start = int_arg(args[2])?;
    let end = int_arg(args[3])?;
    let key = args[1];
    let Some(list) = ctx.write::<List>(key)? else {
        return Ok(reply::ok());
    };
    match resolve_range(list, start, end) {
        Some((from, to)) => {
            list.truncate(to + 1);
            list.drain(..from);
        }
        None => list.clear(),
    }
    ctx.drop_if_empty(key);
    ctx.modified(key);
    Ok(reply::ok())
}

fn llen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let len = ctx.read::<List>(args[1])?.map_or(0, VecDeque::len);
    Ok(reply::int(len))
}

/// LINDEX looks the key up before parsing the index: a missing key is nil
/// even for a malformed index.
fn lindex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let Some(list) = ctx.read::<List>(args[1])? else {
        return Ok(reply::nil());
    };
    let index = int_arg(args[2])?;
    Ok(resolve_index(list, index)
        .and_then(|i| list.get(i))
        .map_or_else(reply::nil, |v| reply::bulk(v.clone())))
}

/// LREM key count element: count > 0 removes the first `count` matches
/// from the head, count < 0 the first `|count|` from the tail, 0 all.
fn lrem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let count = int_arg(args[2])?;
    let key = args[1];
    let element = args[3];
    let Some(list) = ctx.write::<List>(key)? else {
        return Ok(reply::int(0));
    };
    let removed = remove_matches(list, element, count);
    if removed > 0 {
        ctx.modified(key);
    }
    ctx.drop_if_empty(key);
    Ok(reply::int(removed))
}

/// Removes matches of `element` with LREM's count rule, in one pass.
///
/// Removing the first k matches from the tail is removing every match but
/// the first `total - k` from the head, so both directions become a single
/// `retain` over match ordinals.
fn remove_matches(list: &mut List, element: &[u8], count: i64) -> usize {
    let total = list.iter().filter(|v| v.as_slice() == element).count();
    let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    // Ordinals (0-based, from the head) of the matches to remove.
    let wanted = match count {
        0 => 0..total,
        c if c > 0 => 0..limit.min(total),
        _ => total.saturating_sub(limit)..total,
    };
    let removed = wanted.len();
    let mut ordinal = 0;
    list.retain(|v| {
        if v.as_slice() != element {
            return true;
        }
        let keep = !wanted.contains(&ordinal);
        ordinal += 1;
        keep
    });
    removed
}

/// LSET looks the key up first ("no such key" beats a malformed index).
fn lset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let Some(list) = ctx.write::<List>(key)? else {
        return Err(CmdError::NoSuchKey);
    };
    let index = int_arg(args[2])?;
    let slot = resolve_index(list, index)
        .and_then(|i| list.get_mut(i))
        .ok_or(CmdError::IndexOutOfRange)?;
    *slot = args[3].to_vec();
    ctx.modified(key);
    Ok(reply::ok())
}

/// LINSERT key BEFORE|AFTER pivot element: -1 if the pivot is absent, 0 if
/// the key is, else the new length.
fn linsert(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let after = if is(args[2], "after") {
        true
    } else if is(args[2], "before") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let key = args[1];
    let Some(list) = ctx.write::<List>(key)? else {
        return Ok(reply::int(0));
    };
    let Some(pos) = list.iter().position(|v| v.as_slice() == args[3]) else {
        return Ok(reply::int(-1));
    };
    list.insert(pos + usize::from(after), args[4].to_vec());
    let len = list.len();
    ctx.modified(key);
    Ok(reply::int(len))
}

/// The options of LPOS, as Redis holds them.
struct LposOptions {
    /// Which match to start from; negative searches from the tail.
    rank: i64,
    /// `None`: reply with one position. `Some(0)`: all matches.
    count: Option<i64>,
    /// Elements to examine at most; 0 means no limit.
    maxlen: i64,
}

impl LposOptions {
    /// Parses `[RANK r] [COUNT n] [MAXLEN m]`, in any order, repeats
    /// allowed (the last wins), checking each value as it comes.
    fn parse(opts: &[&[u8]]) -> Result<LposOptions, CmdError> {
        let mut out = LposOptions {
            rank: 1,
            count: None,
            maxlen: 0,
        };
        let mut rest = opts;
        while let [name, tail @ ..] = rest {
            let Some((value, tail)) = tail.split_first() else {
                return Err(CmdError::Syntax);
            };
            if is(name, "rank") {
                out.rank = int_arg(value)?;
                if out.rank == 0 {
                    return Err(CmdError::err(
                        "RANK can't be zero: use 1 to start from the first match, 2 from the \
                         second ... or use negative to start from the end of the list",
                    ));
                }
            } else if is(name, "count") {
                out.count = Some(non_negative(value, "COUNT can't be negative")?);
            } else if is(name, "maxlen") {
                out.maxlen = non_negative(value, "MAXLEN can't be negative")?;
            } else {
                return Err(CmdError::Syntax);
            }
            rest = tail;
        }
        Ok(out)
    }
}

/// A non-negative integer option; Redis gives `msg` for anything else,
/// including a value that is not a number.
fn non_negative(arg: &[u8], msg: &'static str) -> Result<i64, CmdError> {
    parse_i64(arg)
        .filter(|n| *n >= 0)
        .ok_or_else(|| CmdError::err(msg))
}

/// LPOS key element [RANK rank] [COUNT num] [MAXLEN len].
///
/// Options are checked before the key is looked up. Positions are always
/// LINDEX's (from the head), whichever direction the search runs.
fn lpos(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let element = args[2];
    let opts = LposOptions::parse(&args[3..])?;
    let Some(list) = ctx.read::<List>(args[1])? else {
        return Ok(match opts.count {
            Some(_) => reply::array(Vec::new()),
            None => reply::nil(),
        });
    };
    let positions = find_positions(list, element, &opts);
    Ok(match opts.count {
        Some(_) => reply::array(positions.into_iter().map(reply::int).collect()),
        None => positions.first().map_or_else(reply::nil, |&p| reply::int(p)),
    })
}

/// The search of LPOS, with Redis's arithmetic kept exactly.
///
/// Redis negates a negative rank in a C `long`; for i64::MIN that wraps
/// back to i64::MIN, which every match count then exceeds: `RANK
/// -9223372036854775808` means "from the tail, from the first match", and
/// with COUNT, `matches - rank + 1` wraps negative so COUNT never stops
/// the search. Wrapping operations reproduce what the server replies.
fn find_positions(list: &List, element: &[u8], opts: &LposOptions) -> Vec<i64> {
    let from_tail = opts.rank < 0;
    let rank = if from_tail {
        opts.rank.wrapping_neg()
    } else {
        opts.rank
    };
    let len = len_i64(list);
    let in_order: Box<dyn Iterator<Item = &Bytes>> = if from_tail {
        Box::new(list.iter().rev())
    } else {
        Box::new(list.iter())
    };
    let mut positions = Vec::new();
    let mut matches: i64 = 0;
    for (index, value) in (0i64..).zip(in_order) {
        if opts.maxlen != 0 && index >= opts.maxlen {
            break;
        }
        if value.as_slice() != element {
            continue;
        }
        matches += 1;
        if matches < rank {
            continue;
        }
        positions.push(if from_tail { len - index - 1 } else { index });
        match opts.count {
            None => break,
            Some(count) => {
                if count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count {
                    break;
                }
            }
        }
    }
    positions
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
fn lmove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let from = End::parse(args[3])?;
    let to = End::parse(args[4])?;
    move_element(ctx, args[1], args[2], from, to)
}

/// RPOPLPUSH source destination: LMOVE source destination RIGHT LEFT.
fn rpoplpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    move_element(ctx, args[1], args[2], End::Tail, End::Head)
}

/// Pops one element from `src` and pushes it onto `dst`, replying with it.
///
/// A missing source is nil, whatever the destination holds; otherwise a
/// destination of another type is WRONGTYPE and nothing moves. When source
/// and destination are the same key the list rotates in place (and keeps
/// its TTL). An emptied source is deleted; a new destination has no TTL.
fn move_element(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End) -> CmdResult {
    if ctx.read::<List>(src)?.is_none() {
        return Ok(reply::nil());
    }
    if src == dst {
        let Some(list) = ctx.write::<List>(src)? else {
            return Ok(reply::nil());
        };
        let Some(value) = pop(list, from) else {
            return Ok(reply::nil());
        };
        push(list, to, value.clone());
        ctx.modified(src);
        return Ok(reply::bulk(value));
    }
    // Checked before popping, so that a refused move changes nothing.
    ctx.read::<List>(dst)?;
    let Some(value) = ctx.write::<List>(src)?.and_then(|list| pop(list, from)) else {
        return Ok(reply::nil());
    };
    ctx.drop_if_empty(src);
    push(ctx.write_or_create::<List>(dst)?, to, value.clone());
    ctx.modified(dst);
    ctx.modified(src);
    Ok(reply::bulk(value))
}
