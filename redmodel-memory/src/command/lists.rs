//! List commands, following Redis 7.0's `t_list.c`: LPUSH RPUSH LPUSHX
//! RPUSHX LPOP RPOP LRANGE LTRIM LLEN LINDEX LREM LSET LINSERT LPOS LMOVE
//! RPOPLPUSH.
//!
//! Indices are Redis's: negative ones count from the tail (-1 is the last
//! element), and ranges are clipped to the list, so any i64 is a valid
//! argument. A list left empty is deleted; a push keeps the key's TTL. The
//! order of checks (numbers parsed before or after the key lookup) is
//! Redis's, command by command, because it decides which error wins.

use super::{arity_error, CmdResult, Ctx, Spec};
use crate::args::{index_range, int_arg, is, positive_arg, NOT_POSITIVE};
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::Bytes;

/// A list value as the keyspace stores it.
pub(super) type List = crate::value::list::ListValue;

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
pub(super) enum End {
    Head,
    Tail,
}

impl End {
    /// LMOVE's LEFT / RIGHT.
    pub(super) fn parse(arg: &[u8]) -> Result<End, CmdError> {
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

pub(super) fn pop(list: &mut List, end: End) -> Option<Bytes> {
    match end {
        End::Head => list.pop_front(),
        End::Tail => list.pop_back(),
    }
}

/// The position `index` (negative: from the tail) designates, if it is
/// inside the list.
fn resolve_index(list: &List, index: i64) -> Option<usize> {
    let i = if index < 0 {
        i64::try_from(list.len()).ok()?.checked_add(index)?
    } else {
        index
    };
    usize::try_from(i).ok().filter(|&i| i < list.len())
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
    ctx.notify(class::LIST, push_event(end), key);
    ctx.changes(args.len() - 2);
    Ok(reply::int(len))
}

/// The event of a push at `end`.
fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

/// The event of a pop at `end`.
pub(super) fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

fn lpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Head)
}

fn rpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Tail)
}

/// `LPOP`/`RPOP key [count]`.
///
/// Without a count: one bulk string. With one: an array of up to `count`
/// elements in pop order (RPOP's starts with the last element). A missing
/// key is nil either way (RESP2's null array reads as nil too); a count of
/// 0 on an existing list is an empty array and changes nothing.
fn pop_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(arity_error(args));
    }
    // Redis gives its "must be positive" message for a count that is not
    // a number at all too.
    let count = match args.get(2) {
        None => None,
        Some(arg) => Some(positive_arg(arg, NOT_POSITIVE)?),
    };
    let key = args[1];
    let Some(list) = ctx.write::<List>(key)? else {
        return Ok(reply::nil());
    };
    let (reply, popped) = match count {
        Some(0) => return Ok(reply::array(Vec::new())),
        None => (pop(list, end).map_or_else(reply::nil, reply::bulk), 1),
        Some(n) => {
            let n = n.min(list.len());
            let popped: Vec<Bytes> = (0..n).filter_map(|_| pop(list, end)).collect();
            (reply::bulks(popped), n)
        }
    };
    ctx.notify(class::LIST, pop_event(end), key);
    ctx.drop_if_empty(key);
    ctx.notify_deleted(key);
    ctx.modified(key);
    ctx.changes(popped);
    Ok(reply)
}

/// LRANGE: indices are parsed before the key is looked up.
///
/// Served over RESP (outside transactions and scripts), the reply is
/// written straight into the connection's buffer (`Store::reply_out`)
/// and the typed reply is a nil nobody sends: copying each element into
/// a value of its own, then encoding and freeing it, made up half of
/// LRANGE's cost under redis-benchmark.
fn lrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let start = int_arg(args[2])?;
    let end = int_arg(args[3])?;
    let mut out = ctx.store.reply_out.take();
    let result = lrange_into(ctx, args[1], start, end, out.as_mut());
    ctx.store.reply_out = out;
    result
}

/// LRANGE's reply, written into `out` if there is one (see [`lrange`]).
fn lrange_into(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    start: i64,
    end: i64,
    out: Option<&mut Vec<u8>>,
) -> CmdResult {
    let list = ctx.read::<List>(key)?;
    let span = list
        .and_then(|list| index_range(start, end, list.len()))
        .unwrap_or(0..0);
    // `index_range` keeps the span inside the list: it yields all of it.
    let items = list.into_iter().flat_map(|list| list.range(span.clone()));
    match out {
        Some(out) => {
            reply::write_bulks(out, span.len(), items);
            Ok(reply::nil())
        }
        None => Ok(reply::bulks(items.map(<[u8]>::to_vec))),
    }
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
    let before = list.len();
    match index_range(start, end, list.len()) {
        Some(span) => list.keep_range(span),
        None => list.clear(),
    }
    let trimmed = before - list.len();
    ctx.notify(class::LIST, "ltrim", key);
    ctx.drop_if_empty(key);
    ctx.notify_deleted(key);
    ctx.modified(key);
    ctx.changes(trimmed);
    Ok(reply::ok())
}

fn llen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let len = ctx.read::<List>(args[1])?.map_or(0, List::len);
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
        .map_or_else(reply::nil, |v| reply::bulk(v.to_vec())))
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
        ctx.notify(class::LIST, "lrem", key);
    }
    ctx.drop_if_empty(key);
    if removed > 0 {
        ctx.notify_deleted(key);
    }
    ctx.changes(removed);
    Ok(reply::int(removed))
}

/// Removes matches of `element` with LREM's count rule, in one pass.
///
/// Removing the first k matches from the tail is removing every match but
/// the first `total - k` from the head, so both directions become a single
/// `retain` over match ordinals.
fn remove_matches(list: &mut List, element: &[u8], count: i64) -> usize {
    let total = list.iter().filter(|v| *v == element).count();
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
        if v != element {
            return true;
        }
        let keep = !wanted.contains(&ordinal);
        ordinal += 1;
        keep
    });
    removed
}

/// LSET looks the key up first ("no such key" beats a malformed index).
/// A list in one listpack converts as if the element were added, once the
/// index parses, before it is checked
/// ([`crate::keyspace::Keyspace::write_list_growing`]).
fn lset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    if ctx.write::<List>(key)?.is_none() {
        return Err(CmdError::NoSuchKey);
    }
    let index = int_arg(args[2])?;
    let Some(list) = ctx.write_list_growing(key, args[3])? else {
        return Err(CmdError::NoSuchKey);
    };
    let set = resolve_index(list, index).is_some_and(|i| list.set(i, args[3]));
    if !set {
        return Err(CmdError::IndexOutOfRange);
    }
    ctx.ks().modified_in_place(key);
    ctx.notify(class::LIST, "lset", key);
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
    // As Redis: a list in one listpack converts as if the element went
    // in, before the pivot is looked for.
    let Some(list) = ctx.write_list_growing(key, args[4])? else {
        return Ok(reply::int(0));
    };
    let Some(pos) = list.iter().position(|v| v == args[3]) else {
        return Ok(reply::int(-1));
    };
    list.insert(pos + usize::from(after), args[4]);
    let len = list.len();
    ctx.modified(key);
    ctx.notify(class::LIST, "linsert", key);
    Ok(reply::int(len))
}

/// The options of LPOS, as Redis holds them.
struct LposOptions {
    /// Which match to start from; negative searches from the tail.
    rank: i64,
    /// `None`: reply with one position. `Some(0)`: all matches.
    count: Option<usize>,
    /// Elements to examine at most; 0 means no limit.
    maxlen: usize,
}

impl LposOptions {
    /// Parses `[RANK r] [COUNT n] [MAXLEN m]`, in any order, repeats
    /// allowed (the last wins), checking each value as it comes.
    /// `since_7_2`: RANK's range is Redis 7.2's, `-LONG_MAX..=LONG_MAX`
    /// (7.0 takes `LLONG_MIN`, whose negation overflows back to itself).
    fn parse(opts: &[&[u8]], since_7_2: bool) -> Result<LposOptions, CmdError> {
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
                if since_7_2 && out.rank == i64::MIN {
                    return Err(CmdError::err(format!(
                        "value is out of range, value must between {} and {}",
                        -i64::MAX,
                        i64::MAX
                    )));
                }
                if out.rank == 0 {
                    return Err(CmdError::err(
                        "RANK can't be zero: use 1 to start from the first match, 2 from the \
                         second ... or use negative to start from the end of the list",
                    ));
                }
            } else if is(name, "count") {
                out.count = Some(positive_arg(value, "COUNT can't be negative")?);
            } else if is(name, "maxlen") {
                out.maxlen = positive_arg(value, "MAXLEN can't be negative")?;
            } else {
                return Err(CmdError::Syntax);
            }
            rest = tail;
        }
        Ok(out)
    }
}

/// LPOS key element [RANK rank] [COUNT num] [MAXLEN len].
///
/// Options are checked before the key is looked up. Positions are always
/// LINDEX's (from the head), whichever direction the search runs.
fn lpos(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let element = args[2];
    let opts = LposOptions::parse(&args[3..], ctx.store.version >= crate::RedisVersion::V7_4)?;
    let Some(list) = ctx.read::<List>(args[1])? else {
        return Ok(match opts.count {
            Some(_) => reply::array(Vec::new()),
            None => reply::nil(),
        });
    };
    let positions = find_positions(list, element, &opts);
    Ok(match opts.count {
        Some(_) => reply::array(positions.into_iter().map(reply::int).collect()),
        None => positions
            .first()
            .map_or_else(reply::nil, |&p| reply::int(p)),
    })
}

/// The search of LPOS, with Redis's arithmetic kept exactly.
///
/// Redis negates a negative rank in a C `long`; for `i64::MIN` that wraps
/// back to `i64::MIN`, which every match count then exceeds: `RANK
/// -9223372036854775808` means "from the tail, from the first match", and
/// with COUNT, `matches - rank + 1` wraps negative so COUNT never stops
/// the search. Wrapping operations reproduce what the server replies.
fn find_positions(list: &List, element: &[u8], opts: &LposOptions) -> Vec<usize> {
    let from_tail = opts.rank < 0;
    let rank = if from_tail {
        opts.rank.wrapping_neg()
    } else {
        opts.rank
    };
    let in_order: Box<dyn Iterator<Item = &[u8]>> = if from_tail {
        Box::new(list.iter().rev())
    } else {
        Box::new(list.iter())
    };
    let mut positions = Vec::new();
    let mut matches: i64 = 0;
    for (index, value) in in_order.enumerate() {
        if opts.maxlen != 0 && index >= opts.maxlen {
            break;
        }
        if value != element {
            continue;
        }
        matches += 1;
        if matches < rank {
            continue;
        }
        positions.push(if from_tail {
            list.len() - index - 1
        } else {
            index
        });
        match opts.count {
            None => break,
            Some(count) => {
                // A count read from an i64 fits one again.
                let count_i64 = i64::try_from(count).unwrap_or(i64::MAX);
                if count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count_i64 {
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
pub(super) fn move_element(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> CmdResult {
    // Both lists are looked up to be written, as Redis does.
    if ctx.read_for_write::<List>(src)?.is_none() {
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
        ctx.notify(class::LIST, push_event(to), src);
        ctx.notify(class::LIST, pop_event(from), src);
        return Ok(reply::bulk(value));
    }
    // Checked before popping, so that a refused move changes nothing.
    ctx.read_for_write::<List>(dst)?;
    let Some(value) = ctx.write::<List>(src)?.and_then(|list| pop(list, from)) else {
        return Ok(reply::nil());
    };
    ctx.drop_if_empty(src);
    push(ctx.write_or_create::<List>(dst)?, to, value.clone());
    ctx.modified(dst);
    ctx.modified(src);
    // Redis's order: the push, then the pop and the source's deletion.
    ctx.notify(class::LIST, push_event(to), dst);
    ctx.notify(class::LIST, pop_event(from), src);
    ctx.notify_deleted(src);
    ctx.changes(1);
    Ok(reply::bulk(value))
}

/// Expected replies are the ones redis-server 7.0.15 gave to the same
/// commands (RESP2, read with `redis-cli --no-raw`).
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use redis::Value;

    use crate::command::test_util::*;
    use crate::Connection;

    /// The whole list at `key`.
    fn all(c: &mut Connection, key: &str) -> Value {
        run(c, &format!("LRANGE {key} 0 -1"))
    }

    #[test]
    fn pushes() {
        let mut c = conn();
        assert_eq!(run(&mut c, "LPUSH l a b c"), int(3));
        assert_eq!(run(&mut c, "RPUSH l d e"), int(5));
        assert_eq!(all(&mut c, "l"), bulks(&["c", "b", "a", "d", "e"]));
        assert_eq!(run(&mut c, "LPUSHX nokey a"), int(0));
        assert_eq!(run(&mut c, "RPUSHX nokey a"), int(0));
        assert_eq!(run(&mut c, "EXISTS nokey"), int(0));
        assert_eq!(run(&mut c, "LPUSHX l z"), int(6));
        assert_eq!(run(&mut c, "RPUSHX l y y"), int(8));
        assert_eq!(
            all(&mut c, "l"),
            bulks(&["z", "c", "b", "a", "d", "e", "y", "y"])
        );
    }

    #[test]
    fn every_command_refuses_another_type() {
        let mut c = conn();
        run(&mut c, "HSET s f v");
        run(&mut c, "RPUSH l a");
        for line in [
            "LPUSH s a",
            "RPUSH s a",
            "LPUSHX s a",
            "RPUSHX s a",
            "LPOP s",
            "RPOP s 0",
            "LRANGE s 0 -1",
            "LTRIM s 0 1",
            "LLEN s",
            "LINDEX s 0",
            "LINDEX s x",
            "LREM s 1 a",
            "LSET s 0 a",
            "LSET s x a",
            "LINSERT s before z q",
            "LPOS s a",
            "LMOVE s l left right",
            "LMOVE l s left right",
            "RPOPLPUSH s l",
            "RPOPLPUSH l s",
        ] {
            assert_eq!(run(&mut c, line), err(WRONGTYPE), "{line}");
        }
        // A refused move moved nothing.
        assert_eq!(all(&mut c, "l"), bulks(&["a"]));
        assert_eq!(run(&mut c, "HGET s f"), bulk("v"));
    }

    #[test]
    fn pop_with_and_without_count() {
        let mut c = conn();
        run(&mut c, "RPUSH l z c b a d e y");
        assert_eq!(run(&mut c, "LPOP l"), bulk("z"));
        assert_eq!(run(&mut c, "RPOP l"), bulk("y"));
        assert_eq!(run(&mut c, "LPOP l 2"), bulks(&["c", "b"]));
        // RPOP with a count replies tail first.
        assert_eq!(run(&mut c, "RPOP l 2"), bulks(&["e", "d"]));
        assert_eq!(run(&mut c, "LPOP l 0"), empty());
        assert_eq!(run(&mut c, "RPOP l 100"), bulks(&["a"]));
        assert_eq!(run(&mut c, "EXISTS l"), int(0));
        run(&mut c, "RPUSH l a");
        assert_eq!(run(&mut c, "LPOP l"), bulk("a"));
        assert_eq!(run(&mut c, "EXISTS l"), int(0));
        run(&mut c, "RPUSH l a b");
        assert_eq!(
            run(&mut c, "LPOP l 9223372036854775807"),
            bulks(&["a", "b"])
        );
    }

    #[test]
    fn pop_edge_cases() {
        let mut c = conn();
        // A missing key is nil, with or without a count (RESP2's null array).
        assert_eq!(run(&mut c, "LPOP nokey"), Value::Nil);
        assert_eq!(run(&mut c, "LPOP nokey 2"), Value::Nil);
        assert_eq!(run(&mut c, "RPOP nokey 0"), Value::Nil);
        let positive = err("ERR value is out of range, must be positive");
        assert_eq!(run(&mut c, "LPOP nokey -1"), positive);
        assert_eq!(run(&mut c, "LPOP nokey abc"), positive);
        assert_eq!(run(&mut c, "RPOP nokey 9223372036854775808"), positive);
        run(&mut c, "HSET s f v");
        // The count is checked before the type.
        assert_eq!(run(&mut c, "LPOP s -1"), positive);
        assert_eq!(run(&mut c, "LPOP s 0"), err(WRONGTYPE));
        assert_eq!(
            run(&mut c, "LPOP l 1 2"),
            err("ERR wrong number of arguments for 'lpop' command")
        );
        assert_eq!(
            run(&mut c, "rpop l 1 2"),
            err("ERR wrong number of arguments for 'rpop' command")
        );
    }

    #[test]
    fn lrange_clips_every_index() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b c d e");
        let whole = bulks(&["a", "b", "c", "d", "e"]);
        assert_eq!(
            run(&mut c, "LRANGE l -9223372036854775808 9223372036854775807"),
            whole
        );
        assert_eq!(
            run(&mut c, "LRANGE l 9223372036854775807 -9223372036854775808"),
            empty()
        );
        assert_eq!(run(&mut c, "LRANGE l -100 1"), bulks(&["a", "b"]));
        assert_eq!(run(&mut c, "LRANGE l 3 1"), empty());
        assert_eq!(run(&mut c, "LRANGE l -1 -2"), empty());
        assert_eq!(run(&mut c, "LRANGE l -2 -1"), bulks(&["d", "e"]));
        assert_eq!(run(&mut c, "LRANGE l 5 10"), empty());
        assert_eq!(run(&mut c, "LRANGE l 4 10"), bulks(&["e"]));
        assert_eq!(run(&mut c, "LRANGE l -100 -6"), empty());
        assert_eq!(run(&mut c, "LRANGE l 0 9223372036854775808"), err(NOT_INT));
        assert_eq!(run(&mut c, "LRANGE l x 0"), err(NOT_INT));
        // Indices are parsed before the key is looked up.
        assert_eq!(run(&mut c, "LRANGE nokey 0 x"), err(NOT_INT));
        assert_eq!(run(&mut c, "LRANGE nokey 0 -1"), empty());
        run(&mut c, "HSET s f v");
        assert_eq!(run(&mut c, "LRANGE s x 0"), err(NOT_INT));
    }

    #[test]
    fn ltrim_keeps_the_range_and_deletes_an_empty_list() {
        let mut c = conn();
        assert_eq!(run(&mut c, "LTRIM nokey 0 1"), Value::Okay);
        assert_eq!(run(&mut c, "LTRIM nokey x 1"), err(NOT_INT));
        run(&mut c, "HSET s f v");
        assert_eq!(run(&mut c, "LTRIM s x 1"), err(NOT_INT));
        run(&mut c, "RPUSH l a b c d e");
        assert_eq!(run(&mut c, "LTRIM l 1 -2"), Value::Okay);
        assert_eq!(all(&mut c, "l"), bulks(&["b", "c", "d"]));
        assert_eq!(
            run(&mut c, "LTRIM l -9223372036854775808 9223372036854775807"),
            Value::Okay
        );
        assert_eq!(all(&mut c, "l"), bulks(&["b", "c", "d"]));
        assert_eq!(run(&mut c, "LTRIM l 2 1"), Value::Okay);
        assert_eq!(run(&mut c, "EXISTS l"), int(0));
        run(&mut c, "RPUSH l a b c d e");
        assert_eq!(run(&mut c, "LTRIM l 5 10"), Value::Okay);
        assert_eq!(run(&mut c, "EXISTS l"), int(0));
        // The recent-N pattern: LPUSH then LTRIM 0 N-1.
        for x in ["1", "2", "3", "4"] {
            run(&mut c, &format!("LPUSH recent {x}"));
            run(&mut c, "LTRIM recent 0 2");
        }
        assert_eq!(all(&mut c, "recent"), bulks(&["4", "3", "2"]));
    }

    #[test]
    fn llen_and_lindex() {
        let mut c = conn();
        assert_eq!(run(&mut c, "LLEN nokey"), int(0));
        // LINDEX looks the key up before parsing the index.
        assert_eq!(run(&mut c, "LINDEX nokey x"), Value::Nil);
        run(&mut c, "RPUSH l a b c d e");
        assert_eq!(run(&mut c, "LLEN l"), int(5));
        assert_eq!(run(&mut c, "LINDEX l 0"), bulk("a"));
        assert_eq!(run(&mut c, "LINDEX l -1"), bulk("e"));
        assert_eq!(run(&mut c, "LINDEX l -5"), bulk("a"));
        assert_eq!(run(&mut c, "LINDEX l -6"), Value::Nil);
        assert_eq!(run(&mut c, "LINDEX l 5"), Value::Nil);
        assert_eq!(run(&mut c, "LINDEX l 9223372036854775807"), Value::Nil);
        assert_eq!(run(&mut c, "LINDEX l -9223372036854775808"), Value::Nil);
        assert_eq!(run(&mut c, "LINDEX l x"), err(NOT_INT));
    }

    #[test]
    fn lrem_directions() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b a c a d a");
        assert_eq!(run(&mut c, "LREM l 2 a"), int(2));
        assert_eq!(all(&mut c, "l"), bulks(&["b", "c", "a", "d", "a"]));
        assert_eq!(run(&mut c, "LREM l -1 a"), int(1));
        assert_eq!(all(&mut c, "l"), bulks(&["b", "c", "a", "d"]));
        assert_eq!(run(&mut c, "LREM l 0 zz"), int(0));
        assert_eq!(run(&mut c, "LREM l 0 a"), int(1));
        assert_eq!(all(&mut c, "l"), bulks(&["b", "c", "d"]));
        assert_eq!(run(&mut c, "LREM l x a"), err(NOT_INT));
        assert_eq!(run(&mut c, "LREM nokey x a"), err(NOT_INT));
        assert_eq!(run(&mut c, "LREM nokey 1 a"), int(0));
        assert_eq!(run(&mut c, "LREM l -9223372036854775808 b"), int(1));
        assert_eq!(all(&mut c, "l"), bulks(&["c", "d"]));
        assert_eq!(run(&mut c, "LREM l 0 c"), int(1));
        assert_eq!(run(&mut c, "LREM l 9223372036854775807 d"), int(1));
        assert_eq!(run(&mut c, "EXISTS l"), int(0));
        run(&mut c, "RPUSH l x a x b x c x");
        assert_eq!(run(&mut c, "LREM l -2 x"), int(2));
        assert_eq!(all(&mut c, "l"), bulks(&["x", "a", "x", "b", "c"]));
        assert_eq!(run(&mut c, "LREM l -5 x"), int(2));
        assert_eq!(all(&mut c, "l"), bulks(&["a", "b", "c"]));
    }

    #[test]
    fn lset_errors_and_order_of_checks() {
        let mut c = conn();
        let no_key = err("ERR no such key");
        assert_eq!(run(&mut c, "LSET nokey 0 a"), no_key);
        assert_eq!(run(&mut c, "LSET nokey x a"), no_key);
        run(&mut c, "RPUSH l a b c");
        assert_eq!(run(&mut c, "LSET l x a"), err(NOT_INT));
        let out = err("ERR index out of range");
        assert_eq!(run(&mut c, "LSET l 3 z"), out);
        assert_eq!(run(&mut c, "LSET l -4 z"), out);
        assert_eq!(run(&mut c, "LSET l 9223372036854775807 y"), out);
        assert_eq!(run(&mut c, "LSET l -9223372036854775808 y"), out);
        assert_eq!(run(&mut c, "LSET l -3 z"), Value::Okay);
        assert_eq!(run(&mut c, "LSET l 2 y"), Value::Okay);
        assert_eq!(all(&mut c, "l"), bulks(&["z", "b", "y"]));
    }

    #[test]
    fn linsert_replies() {
        let mut c = conn();
        assert_eq!(run(&mut c, "LINSERT nokey middle z q"), err(SYNTAX));
        assert_eq!(run(&mut c, "LINSERT nokey before z q"), int(0));
        assert_eq!(run(&mut c, "EXISTS nokey"), int(0));
        run(&mut c, "HSET s f v");
        assert_eq!(run(&mut c, "LINSERT s around z q"), err(SYNTAX));
        run(&mut c, "RPUSH l z b y");
        assert_eq!(run(&mut c, "LINSERT l middle z q"), err(SYNTAX));
        assert_eq!(run(&mut c, "LINSERT l before zz q"), int(-1));
        assert_eq!(run(&mut c, "LINSERT l BEFORE z q"), int(4));
        assert_eq!(run(&mut c, "LINSERT l after y w"), int(5));
        assert_eq!(run(&mut c, "LINSERT l After b c2"), int(6));
        assert_eq!(all(&mut c, "l"), bulks(&["q", "z", "b", "c2", "y", "w"]));
        // The first pivot from the head wins.
        run(&mut c, "RPUSH d p p");
        assert_eq!(run(&mut c, "LINSERT d after p x"), int(3));
        assert_eq!(all(&mut c, "d"), bulks(&["p", "x", "p"]));
    }

    #[test]
    fn lpos_searches() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b c 1 2 3 c c");
        assert_eq!(run(&mut c, "LPOS l c"), int(2));
        assert_eq!(run(&mut c, "LPOS l 1"), int(3));
        assert_eq!(run(&mut c, "LPOS l c RANK 2"), int(6));
        assert_eq!(run(&mut c, "LPOS l c rank -1"), int(7));
        assert_eq!(run(&mut c, "LPOS l c rank -2"), int(6));
        assert_eq!(
            run(&mut c, "LPOS l c rank -9223372036854775807"),
            Value::Nil
        );
        assert_eq!(run(&mut c, "LPOS l c rank 9223372036854775807"), Value::Nil);
        assert_eq!(run(&mut c, "LPOS l c count 0"), ints(&[2, 6, 7]));
        assert_eq!(run(&mut c, "LPOS l c count 2"), ints(&[2, 6]));
        assert_eq!(run(&mut c, "LPOS l c count 0 rank -1"), ints(&[7, 6, 2]));
        assert_eq!(run(&mut c, "LPOS l c count 2 rank 2"), ints(&[6, 7]));
        assert_eq!(run(&mut c, "LPOS l c count 0 rank 2 maxlen 7"), ints(&[6]));
        assert_eq!(run(&mut c, "LPOS l c count 0 maxlen 2"), empty());
        assert_eq!(run(&mut c, "LPOS l c rank -1 maxlen 1"), int(7));
        assert_eq!(
            run(&mut c, "LPOS l c count 9223372036854775807"),
            ints(&[2, 6, 7])
        );
        assert_eq!(run(&mut c, "LPOS l c maxlen 9223372036854775807"), int(2));
        assert_eq!(
            run(&mut c, "LPOS l c rank 9223372036854775807 count 0"),
            empty()
        );
        assert_eq!(run(&mut c, "LPOS l zz"), Value::Nil);
        assert_eq!(run(&mut c, "LPOS l zz count 0"), empty());
        assert_eq!(run(&mut c, "LPOS nokey a"), Value::Nil);
        assert_eq!(run(&mut c, "LPOS nokey a count 1"), empty());
        // Repeated options: the last one wins.
        assert_eq!(run(&mut c, "LPOS l c count 1 count 3"), ints(&[2, 6, 7]));
        assert_eq!(run(&mut c, "LPOS l c rank 1 rank -1"), int(7));
    }

    /// Redis negates RANK in a C long: i64::MIN stays i64::MIN, so it means
    /// "from the tail, first match", and COUNT never ends the search.
    #[test]
    fn lpos_rank_i64_min_wraps_like_redis() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b c 1 2 3 c c");
        assert_eq!(run(&mut c, "LPOS l c rank -9223372036854775808"), int(7));
        assert_eq!(
            run(&mut c, "LPOS l c rank -9223372036854775808 maxlen 1"),
            int(7)
        );
        for count in ["0", "1", "2"] {
            assert_eq!(
                run(
                    &mut c,
                    &format!("LPOS l c rank -9223372036854775808 count {count}")
                ),
                ints(&[7, 6, 2]),
                "count {count}"
            );
        }
    }

    #[test]
    fn lpos_option_errors() {
        let mut c = conn();
        run(&mut c, "RPUSH l a");
        run(&mut c, "HSET s f v");
        let rank0 = err(
            "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... \
             or use negative to start from the end of the list",
        );
        assert_eq!(run(&mut c, "LPOS l c rank 0"), rank0);
        // Options are checked before the key is looked up.
        assert_eq!(run(&mut c, "LPOS nokey a rank 0"), rank0);
        assert_eq!(run(&mut c, "LPOS s a rank 0"), rank0);
        assert_eq!(run(&mut c, "LPOS l c rank x"), err(NOT_INT));
        let count = err("ERR COUNT can't be negative");
        assert_eq!(run(&mut c, "LPOS l c count -1"), count);
        assert_eq!(run(&mut c, "LPOS l c count x"), count);
        let maxlen = err("ERR MAXLEN can't be negative");
        assert_eq!(run(&mut c, "LPOS l c maxlen -1"), maxlen);
        assert_eq!(run(&mut c, "LPOS l c maxlen x"), maxlen);
        assert_eq!(run(&mut c, "LPOS l c rank"), err(SYNTAX));
        assert_eq!(run(&mut c, "LPOS l c foo 1"), err(SYNTAX));
    }

    #[test]
    fn lmove_and_rpoplpush() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b c");
        // Same key: a rotation, or nothing visible for LEFT LEFT.
        assert_eq!(run(&mut c, "LMOVE l l left right"), bulk("a"));
        assert_eq!(all(&mut c, "l"), bulks(&["b", "c", "a"]));
        assert_eq!(run(&mut c, "LMOVE l l right left"), bulk("a"));
        assert_eq!(all(&mut c, "l"), bulks(&["a", "b", "c"]));
        assert_eq!(run(&mut c, "RPOPLPUSH l l"), bulk("c"));
        assert_eq!(all(&mut c, "l"), bulks(&["c", "a", "b"]));
        assert_eq!(run(&mut c, "LMOVE l l LEFT LEFT"), bulk("c"));
        assert_eq!(all(&mut c, "l"), bulks(&["c", "a", "b"]));
        // Across keys.
        assert_eq!(run(&mut c, "LMOVE l d left right"), bulk("c"));
        assert_eq!(run(&mut c, "LMOVE l d right right"), bulk("b"));
        assert_eq!(all(&mut c, "d"), bulks(&["c", "b"]));
        assert_eq!(run(&mut c, "RPOPLPUSH l d"), bulk("a"));
        assert_eq!(run(&mut c, "EXISTS l"), int(0));
        assert_eq!(all(&mut c, "d"), bulks(&["a", "c", "b"]));
        // A one-element list moved onto itself survives.
        run(&mut c, "RPUSH one x");
        assert_eq!(run(&mut c, "LMOVE one one left right"), bulk("x"));
        assert_eq!(all(&mut c, "one"), bulks(&["x"]));
    }

    #[test]
    fn lmove_edge_cases() {
        let mut c = conn();
        run(&mut c, "HSET s f v");
        assert_eq!(run(&mut c, "LMOVE nokey d left right"), Value::Nil);
        assert_eq!(run(&mut c, "RPOPLPUSH nokey d"), Value::Nil);
        // A missing source is nil even when the destination has another type.
        assert_eq!(run(&mut c, "LMOVE nokey s left right"), Value::Nil);
        assert_eq!(run(&mut c, "EXISTS d"), int(0));
        assert_eq!(run(&mut c, "LMOVE nokey d up right"), err(SYNTAX));
        run(&mut c, "RPUSH l a");
        assert_eq!(run(&mut c, "LMOVE l d left up"), err(SYNTAX));
        assert_eq!(all(&mut c, "l"), bulks(&["a"]));
    }

    #[test]
    fn ttl_is_kept_by_pushes_and_lost_with_the_list() {
        let (clock, mut c) = clocked(1_000_000);
        run(&mut c, "RPUSH l a b c");
        run(&mut c, "EXPIRE l 100");
        run(&mut c, "LPUSH l z");
        run(&mut c, "RPUSHX l y");
        run(&mut c, "LSET l 0 q");
        run(&mut c, "LINSERT l before q p");
        run(&mut c, "LPOP l");
        run(&mut c, "LMOVE l l left right");
        run(&mut c, "LTRIM l 0 -1");
        assert_eq!(run(&mut c, "TTL l"), int(100));
        // A new destination has no TTL.
        run(&mut c, "LMOVE l d left left");
        assert_eq!(run(&mut c, "TTL d"), int(-1));
        // Emptying the list deletes it with its TTL.
        run(&mut c, "LTRIM l 1 0");
        run(&mut c, "RPUSH l a");
        assert_eq!(run(&mut c, "TTL l"), int(-1));
        run(&mut c, "EXPIRE l 10");
        clock.advance(Duration::from_secs(11));
        assert_eq!(run(&mut c, "LPUSHX l a"), int(0));
        assert_eq!(run(&mut c, "LMOVE l d left left"), Value::Nil);
        assert_eq!(run(&mut c, "LPUSH l a"), int(1));
        assert_eq!(run(&mut c, "TTL l"), int(-1));
    }

    #[test]
    fn writes_touch_watched_keys_only_when_redis_does() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b c");
        // Each verdict observed on redis-server with the same sequence.
        assert!(
            touches(&mut c, "l", "LTRIM l 0 -1"),
            "LTRIM that trims nothing"
        );
        assert!(touches(&mut c, "l", "LSET l 0 a"), "LSET to the same value");
        assert!(touches(&mut c, "l", "LMOVE l l left left"));
        assert!(touches(&mut c, "d", "LMOVE l d left left"));
        assert!(touches(&mut c, "l", "RPOPLPUSH d l"));
        assert!(touches(&mut c, "l", "LPUSH l x"));
        assert!(touches(&mut c, "l", "LREM l 1 x"));
        assert!(touches(&mut c, "l", "LINSERT l before a x"));
        assert!(touches(&mut c, "l", "RPOP l"));
        assert!(!touches(&mut c, "l", "LREM l 0 zz"));
        assert!(!touches(&mut c, "l", "LPOP l 0"));
        assert!(!touches(&mut c, "m", "LPUSHX m a"));
        assert!(!touches(&mut c, "l", "LINSERT l before zz q"));
        assert!(!touches(&mut c, "m", "LTRIM m 0 1"));
        assert!(!touches(&mut c, "l", "LSET l 99 a"));
        assert!(!touches(&mut c, "l", "LRANGE l 0 -1"));
    }

    #[test]
    fn binary_elements() {
        let mut c = conn();
        let odd: &[u8] = &[0xff, 0, b'\r', b'\n'];
        assert_eq!(c.execute(&[b"RPUSH", b"l", odd, b"", odd]), int(3));
        assert_eq!(c.execute(&[b"LPOS", b"l", b""]), int(1));
        assert_eq!(c.execute(&[b"LREM", b"l", b"0", odd]), int(2));
        assert_eq!(c.execute(&[b"LINDEX", b"l", b"0"]), bulk(""));
    }
}
