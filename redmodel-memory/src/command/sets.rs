//! Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SINTER
//! SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE SINTERCARD SMOVE SPOP
//! SRANDMEMBER SSCAN, following Redis 7.0's t_set.c step by step.
//!
//! - Multi-key commands look their keys up in argument order: a missing key
//!   is an empty set, and any key of another type is WRONGTYPE, even after a
//!   missing key that already decides the result (SINTER checks every key
//!   before it returns early on an empty input).
//! - The STORE variants overwrite the destination whatever its type (its TTL
//!   goes too) and delete it when the result is empty.
//! - Random draws (SPOP, SRANDMEMBER) are uniform. A set is a std `HashSet`,
//!   which cannot pick a random element in O(1) as Redis's dict does: one
//!   draw costs O(n), and a draw of k members is one O(n) pass.
//! - SSCAN returns every match in one reply with cursor 0, see
//!   [`scan_collection`].
//!
//! A few helpers here are shared with the sorted-set and hash commands.

use std::borrow::Cow;
use std::collections::HashSet;

use rand::seq::IteratorRandom;

use super::shared::destination::store_or_delete;
use super::shared::random_picks::RandomPicks;
use super::shared::scan::scan_collection;
use super::{remove_elements, CmdResult, Ctx, Spec};
use crate::args::{is, parse_i64, positive_arg, signed_count_arg, NOT_POSITIVE};
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::set::SetValue;
use crate::value::{Bytes, Kind, Value};

type Set = SetValue;

/// Members computed from sets (an integer set's written out as text).
type Members<'s> = Vec<Cow<'s, [u8]>>;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "sadd",
        arity: -3,
        handler: sadd,
    },
    Spec {
        name: "srem",
        arity: -3,
        handler: srem,
    },
    Spec {
        name: "smembers",
        arity: 2,
        handler: sinter,
    },
    Spec {
        name: "sismember",
        arity: 3,
        handler: sismember,
    },
    Spec {
        name: "smismember",
        arity: -3,
        handler: smismember,
    },
    Spec {
        name: "scard",
        arity: 2,
        handler: scard,
    },
    Spec {
        name: "sinter",
        arity: -2,
        handler: sinter,
    },
    Spec {
        name: "sunion",
        arity: -2,
        handler: sunion,
    },
    Spec {
        name: "sdiff",
        arity: -2,
        handler: sdiff,
    },
    Spec {
        name: "sinterstore",
        arity: -3,
        handler: sinterstore,
    },
    Spec {
        name: "sunionstore",
        arity: -3,
        handler: sunionstore,
    },
    Spec {
        name: "sdiffstore",
        arity: -3,
        handler: sdiffstore,
    },
    Spec {
        name: "sintercard",
        arity: -3,
        handler: sintercard,
    },
    Spec {
        name: "smove",
        arity: 4,
        handler: smove,
    },
    Spec {
        name: "spop",
        arity: -2,
        handler: spop,
    },
    Spec {
        name: "srandmember",
        arity: -2,
        handler: srandmember,
    },
    Spec {
        name: "sscan",
        arity: -3,
        handler: sscan,
    },
];

/// The sets at `keys` (see [`Ctx::read_all`]): `None` for a missing key.
fn read_sets<'c>(ctx: &'c mut Ctx<'_>, keys: &[&[u8]]) -> Result<Vec<Option<&'c Set>>, CmdError> {
    let values = ctx.read_all(keys, |v| Set::of(v).is_some())?;
    Ok(values.into_iter().map(|v| v.and_then(Set::of)).collect())
}

/// Members as a set reply (SMEMBERS, SINTER, SUNION, SDIFF, SPOP with a
/// count): an array in RESP2.
fn members_reply<'a>(members: impl IntoIterator<Item = Cow<'a, [u8]>>) -> redis::Value {
    reply::set(
        members
            .into_iter()
            .map(|m| reply::bulk(m.into_owned()))
            .collect(),
    )
}

fn sadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let set = ctx.write_or_create::<Set>(key)?;
    let mut added = 0;
    for member in &args[2..] {
        if set.insert(member) {
            added += 1;
        }
    }
    if added > 0 {
        ctx.modified(key);
        ctx.notify(class::SET, "sadd", key);
        ctx.changes(added);
    }
    Ok(reply::int(added))
}

fn srem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    remove_elements::<Set>(ctx, args, (class::SET, "srem"), |set, member| {
        set.remove(member)
    })
}

fn sismember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let found = ctx
        .read::<Set>(args[1])?
        .is_some_and(|s| s.contains(args[2]));
    Ok(reply::int(i64::from(found)))
}

fn smismember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let set = ctx.read::<Set>(args[1])?;
    let flags = args[2..]
        .iter()
        .map(|m| reply::int(i64::from(set.is_some_and(|s| s.contains(m)))))
        .collect();
    Ok(reply::array(flags))
}

fn scard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.read::<Set>(args[1])?.map_or(0, Set::len)))
}

/// The members common to all `sets`, up to `limit` of them (0: all).
/// Iterates the smallest set and probes the others, as Redis does.
fn intersection<'s>(sets: &[Option<&'s Set>], limit: usize) -> Members<'s> {
    let Some(mut sets) = sets.iter().copied().collect::<Option<Vec<&Set>>>() else {
        return Vec::new(); // a missing key is an empty set
    };
    sets.sort_by_key(|s| s.len());
    let Some((smallest, others)) = sets.split_first() else {
        return Vec::new();
    };
    let common = smallest
        .iter()
        .filter(|m| others.iter().all(|s| s.contains(m)));
    match limit {
        0 => common.collect(),
        n => common.take(n).collect(),
    }
}

fn union<'s>(sets: &[Option<&'s Set>]) -> HashSet<Cow<'s, [u8]>> {
    sets.iter().flatten().flat_map(|s| s.iter()).collect()
}

/// The members of the first set that are in none of the others.
fn difference<'s>(sets: &[Option<&'s Set>]) -> Members<'s> {
    let Some((Some(first), others)) = sets.split_first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter(|m| !others.iter().flatten().any(|s| s.contains(m)))
        .collect()
}

fn sinter(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sets = read_sets(ctx, &args[1..])?;
    Ok(members_reply(intersection(&sets, 0)))
}

fn sunion(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sets = read_sets(ctx, &args[1..])?;
    Ok(members_reply(union(&sets)))
}

fn sdiff(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sets = read_sets(ctx, &args[1..])?;
    Ok(members_reply(difference(&sets)))
}

/// Runs a STORE variant: computes the result from the sources (the
/// destination may be one of them), then stores it.
fn store_op(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    op: for<'s> fn(&[Option<&'s Set>]) -> Members<'s>,
) -> CmdResult {
    let sets = read_sets(ctx, &args[2..])?;
    let result = Set::from_members(op(&sets));
    let len = result.len();
    let event = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
    store_or_delete(ctx, args[1], Value::Set(result), len, (class::SET, &event))
}

fn sinterstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    store_op(ctx, args, |sets| intersection(sets, 0))
}

fn sunionstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    store_op(ctx, args, |sets| union(sets).into_iter().collect())
}

fn sdiffstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    store_op(ctx, args, difference)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]
fn sintercard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let numkeys = parse_i64(args[1])
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| CmdError::err("numkeys should be greater than 0"))?;
    let Some(keys) = numkeys.checked_add(2).and_then(|end| args.get(2..end)) else {
        return Err(CmdError::err(
            "Number of keys can't be greater than number of args",
        ));
    };
    let mut limit = 0;
    let mut opts = args[2 + numkeys..].iter();
    while let Some(opt) = opts.next() {
        match opts.as_slice().first() {
            Some(value) if is(opt, "limit") => {
                limit = positive_arg(value, "LIMIT can't be negative")?;
                opts.next();
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let sets = read_sets(ctx, keys)?;
    Ok(reply::int(intersection(&sets, limit).len()))
}

fn smove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (src, dst, member) = (args[1], args[2], args[3]);
    // Both keys are looked up (and expired) before anything is decided.
    let src_is_set = ctx.value_for_write(src).map(|v| Set::of(v).is_some());
    let dst_is_set = ctx.value_for_write(dst).map(|v| Set::of(v).is_some());
    match (src_is_set, dst_is_set) {
        (None, _) => return Ok(reply::int(0)),
        (Some(false), _) | (_, Some(false)) => return Err(CmdError::WrongType),
        _ => {}
    }
    if src == dst {
        let found = (ctx.value_for_write(src))
            .and_then(Set::of)
            .is_some_and(|set| set.contains(member));
        return Ok(reply::int(i64::from(found)));
    }
    let removed = ctx.write::<Set>(src)?.is_some_and(|s| s.remove(member));
    if !removed {
        return Ok(reply::int(0));
    }
    ctx.notify(class::SET, "srem", src);
    ctx.drop_if_empty(src);
    ctx.notify_deleted(src);
    ctx.modified(src);
    if ctx.write_or_create::<Set>(dst)?.insert(member) {
        ctx.modified(dst);
        ctx.notify(class::SET, "sadd", dst);
    }
    Ok(reply::int(1))
}

fn spop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => spop_one(ctx, args[1]),
        3 => spop_count(ctx, args[1], args[2]),
        _ => Err(CmdError::Syntax),
    }
}

fn spop_one(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let Some(set) = ctx.write::<Set>(key)? else {
        return Ok(reply::nil());
    };
    let Some(member) = set.iter().choose(&mut rand::rng()).map(Cow::into_owned) else {
        return Ok(reply::nil());
    };
    set.remove(&member);
    ctx.notify(class::SET, "spop", key);
    ctx.drop_if_empty(key);
    ctx.notify_deleted(key);
    ctx.modified(key);
    ctx.changes(1);
    Ok(reply::bulk(member))
}

fn spop_count(ctx: &mut Ctx<'_>, key: &[u8], count: &[u8]) -> CmdResult {
    let count = positive_arg(count, NOT_POSITIVE)?;
    let Some(set) = ctx.write::<Set>(key)? else {
        return Ok(reply::set(Vec::new()));
    };
    if count == 0 {
        return Ok(reply::set(Vec::new()));
    }
    let whole = count >= set.len();
    let popped: Vec<Bytes> = if whole {
        let all = set.iter().map(Cow::into_owned).collect();
        *set = Set::default();
        all
    } else {
        let chosen: Vec<Bytes> = set
            .iter()
            .choose_multiple(&mut rand::rng(), count)
            .into_iter()
            .map(Cow::into_owned)
            .collect();
        for member in &chosen {
            set.remove(member);
        }
        chosen
    };
    if whole {
        // Redis reads the whole set through SUNION, whose lookup is a
        // read (INFO's keyspace hits).
        ctx.ks().hits += 1;
    }
    ctx.notify(class::SET, "spop", key);
    ctx.drop_if_empty(key);
    ctx.notify_deleted(key);
    ctx.modified(key);
    ctx.changes(popped.len());
    Ok(reply::set(popped.into_iter().map(reply::bulk).collect()))
}

fn srandmember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => {
            let set = ctx.read::<Set>(args[1])?;
            let member = set.and_then(|s| s.iter().choose(&mut rand::rng()));
            Ok(member.map_or_else(reply::nil, |m| reply::bulk(m.into_owned())))
        }
        3 => srandmember_count(ctx, args[1], args[2]),
        _ => Err(CmdError::Syntax),
    }
}

fn srandmember_count(ctx: &mut Ctx<'_>, key: &[u8], count: &[u8]) -> CmdResult {
    let count = signed_count_arg(count)?;
    let Some(set) = ctx.read::<Set>(key)? else {
        return Ok(reply::array(Vec::new()));
    };
    let picks = RandomPicks::new(count, set.len())?;
    // An array, not a set: a negative count may repeat members.
    Ok(reply::bulks(
        picks
            .select(set.iter().collect())
            .into_iter()
            .map(Cow::into_owned),
    ))
}

/// SSCAN: every matching member at once (see [`scan_collection`]).
fn sscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    scan_collection::<Set>(ctx, args, false, |set, scan| {
        let matching = set.iter().filter(|m| (scan.matches)(m));
        (0, matching.map(|m| reply::bulk(m.into_owned())).collect())
    })
}

#[cfg(test)]
mod tests {
    //! Replies asserted here were observed from a real Redis 7.0.15.

    use redis::Value as V;

    use crate::command::test_util::*;

    #[test]
    fn sadd_srem_scard_sismember() {
        let mut c = conn();
        assert_eq!(run(&mut c, "SADD s a b a c"), int(3));
        assert_eq!(run(&mut c, "SADD s a d"), int(1));
        assert_eq!(run(&mut c, "SCARD s"), int(4));
        assert_eq!(run(&mut c, "SISMEMBER s a"), int(1));
        assert_eq!(run(&mut c, "SISMEMBER s z"), int(0));
        assert_eq!(run(&mut c, "SISMEMBER nokey a"), int(0));
        assert_eq!(
            run(&mut c, "SMISMEMBER s a z d"),
            V::Array(vec![int(1), int(0), int(1)])
        );
        assert_eq!(
            run(&mut c, "SMISMEMBER nokey a b"),
            V::Array(vec![int(0), int(0)])
        );
        assert_eq!(run(&mut c, "SREM s a z"), int(1));
        assert_eq!(run(&mut c, "SREM nokey a"), int(0));
        assert_eq!(sorted(run(&mut c, "SMEMBERS s")), ["b", "c", "d"]);
        // Emptying the set deletes the key.
        assert_eq!(run(&mut c, "SREM s b c d e"), int(3));
        assert_eq!(run(&mut c, "EXISTS s"), int(0));
        assert_eq!(run(&mut c, "SMEMBERS s"), empty());
        assert_eq!(run(&mut c, "SCARD s"), int(0));
    }

    #[test]
    fn wrong_type_everywhere() {
        let mut c = conn();
        run(&mut c, "ZADD str 1 x"); // strings live in another module: any non-set will do
        run(&mut c, "SADD s a");
        for cmd in [
            "SADD str a",
            "SREM str a",
            "SMEMBERS str",
            "SISMEMBER str a",
            "SMISMEMBER str a",
            "SCARD str",
            "SINTER nokey str",
            "SUNION nokey str",
            "SDIFF nokey str",
            "SDIFF str nokey",
            "SINTERSTORE d nokey str",
            "SUNIONSTORE d nokey str",
            "SINTERCARD 2 nokey str",
            "SMOVE str s a",
            "SMOVE s str a",
            "SMOVE str nokey a",
            "SPOP str",
            "SPOP str 1",
            "SRANDMEMBER str",
            "SRANDMEMBER str -1",
            "SSCAN str 0 COUNT 0",
        ] {
            assert_eq!(run(&mut c, cmd), err(WRONGTYPE), "{cmd}");
        }
        // A missing source returns before the destination is looked at.
        assert_eq!(run(&mut c, "SMOVE nokey str a"), int(0));
        // Errors in arguments come before the type check.
        assert_eq!(
            run(&mut c, "SPOP str -1"),
            err("ERR value is out of range, must be positive")
        );
        assert_eq!(run(&mut c, "ZSCORE str x"), bulk("1"));
    }

    #[test]
    fn set_algebra() {
        let mut c = conn();
        run(&mut c, "SADD s1 a b c");
        run(&mut c, "SADD s2 b c d");
        run(&mut c, "SADD s3 c d e");
        assert_eq!(sorted(run(&mut c, "SINTER s1 s2")), ["b", "c"]);
        assert_eq!(sorted(run(&mut c, "SINTER s1 s2 s3")), ["c"]);
        assert_eq!(sorted(run(&mut c, "SINTER s1 nokey")), Vec::<String>::new());
        assert_eq!(
            sorted(run(&mut c, "SUNION s1 nokey s3")),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(sorted(run(&mut c, "SDIFF s1 s2")), ["a"]);
        assert_eq!(sorted(run(&mut c, "SDIFF s1 nokey")), ["a", "b", "c"]);
        assert_eq!(sorted(run(&mut c, "SDIFF nokey s1")), Vec::<String>::new());
        assert_eq!(sorted(run(&mut c, "SDIFF s1 s1")), Vec::<String>::new());
        assert_eq!(run(&mut c, "SINTERCARD 2 s1 s2"), int(2));
        assert_eq!(run(&mut c, "SINTERCARD 2 s1 s2 LIMIT 1"), int(1));
        assert_eq!(run(&mut c, "SINTERCARD 2 s1 s2 limit 0"), int(2));
        assert_eq!(run(&mut c, "SINTERCARD 2 s1 nokey"), int(0));
    }

    #[test]
    fn store_variants() {
        let mut c = conn();
        run(&mut c, "SADD s1 a b c");
        run(&mut c, "SADD s2 b c d");
        run(&mut c, "ZADD str 1 x");
        run(&mut c, "EXPIRE str 100");
        // The destination's type does not matter; its TTL is dropped.
        assert_eq!(run(&mut c, "SINTERSTORE str s1 s2"), int(2));
        assert_eq!(run(&mut c, "TYPE str"), V::SimpleString("set".into()));
        assert_eq!(run(&mut c, "TTL str"), int(-1));
        // An empty result deletes the destination.
        assert_eq!(run(&mut c, "SINTERSTORE str s1 nokey"), int(0));
        assert_eq!(run(&mut c, "EXISTS str"), int(0));
        run(&mut c, "SADD d x");
        assert_eq!(run(&mut c, "SDIFFSTORE d s1 s1"), int(0));
        assert_eq!(run(&mut c, "EXISTS d"), int(0));
        // The destination may be a source.
        assert_eq!(run(&mut c, "SUNIONSTORE s1 s1 s2"), int(4));
        assert_eq!(sorted(run(&mut c, "SMEMBERS s1")), ["a", "b", "c", "d"]);
        assert_eq!(run(&mut c, "SDIFFSTORE s1 s1 s2"), int(1));
        assert_eq!(sorted(run(&mut c, "SMEMBERS s1")), ["a"]);
    }

    #[test]
    fn sintercard_errors() {
        let mut c = conn();
        run(&mut c, "SADD s1 a");
        let numkeys = err("ERR numkeys should be greater than 0");
        assert_eq!(run(&mut c, "SINTERCARD 0 s1"), numkeys);
        assert_eq!(run(&mut c, "SINTERCARD abc s1"), numkeys);
        assert_eq!(run(&mut c, "SINTERCARD -1 s1"), numkeys);
        assert_eq!(
            run(&mut c, "SINTERCARD 3 s1 s1"),
            err("ERR Number of keys can't be greater than number of args")
        );
        assert_eq!(run(&mut c, "SINTERCARD 1 s1 LIMIT"), err(SYNTAX));
        assert_eq!(run(&mut c, "SINTERCARD 1 s1 foo 1"), err(SYNTAX));
        let limit = err("ERR LIMIT can't be negative");
        assert_eq!(run(&mut c, "SINTERCARD 1 s1 LIMIT -1"), limit);
        assert_eq!(run(&mut c, "SINTERCARD 1 s1 LIMIT abc"), limit);
        assert_eq!(run(&mut c, "SINTERCARD 1 s1 LIMIT 5 LIMIT 1"), int(1));
    }

    #[test]
    fn smove() {
        let mut c = conn();
        run(&mut c, "SADD s1 a b");
        run(&mut c, "SADD s2 b");
        assert_eq!(run(&mut c, "SMOVE s1 s2 zz"), int(0));
        assert_eq!(run(&mut c, "SMOVE s1 s2 b"), int(1));
        assert_eq!(sorted(run(&mut c, "SMEMBERS s1")), ["a"]);
        assert_eq!(sorted(run(&mut c, "SMEMBERS s2")), ["b"]);
        // Same key: membership answer, no change.
        assert_eq!(run(&mut c, "SMOVE s1 s1 a"), int(1));
        assert_eq!(run(&mut c, "SMOVE s1 s1 zz"), int(0));
        // Moving the last member deletes the source and creates the destination.
        assert_eq!(run(&mut c, "SMOVE s1 new a"), int(1));
        assert_eq!(run(&mut c, "EXISTS s1"), int(0));
        assert_eq!(sorted(run(&mut c, "SMEMBERS new")), ["a"]);
        assert_eq!(run(&mut c, "SMOVE nokey new a"), int(0));
    }

    #[test]
    fn spop_shapes() {
        let mut c = conn();
        run(&mut c, "SADD s a b c d e");
        let out_of_range = err("ERR value is out of range, must be positive");
        assert_eq!(run(&mut c, "SPOP s -1"), out_of_range);
        assert_eq!(run(&mut c, "SPOP s abc"), out_of_range);
        assert_eq!(run(&mut c, "SPOP s 1 2"), err(SYNTAX));
        assert_eq!(run(&mut c, "SPOP nokey"), V::Nil);
        assert_eq!(run(&mut c, "SPOP nokey 3"), empty());
        assert_eq!(run(&mut c, "SPOP s 0"), empty());
        assert!(matches!(run(&mut c, "SPOP s"), V::BulkString(_)));
        assert_eq!(sorted(run(&mut c, "SPOP s 2")).len(), 2);
        assert_eq!(run(&mut c, "SCARD s"), int(2));
        assert_eq!(sorted(run(&mut c, "SPOP s 10")).len(), 2);
        assert_eq!(run(&mut c, "EXISTS s"), int(0));
        run(&mut c, "SADD one x");
        assert_eq!(run(&mut c, "SPOP one"), bulk("x"));
        assert_eq!(run(&mut c, "EXISTS one"), int(0));
    }

    #[test]
    fn srandmember_shapes() {
        let mut c = conn();
        run(&mut c, "SADD s a b c");
        assert_eq!(
            run(&mut c, "SRANDMEMBER s -9223372036854775808"),
            err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
        );
        assert_eq!(run(&mut c, "SRANDMEMBER s x"), err(NOT_INT));
        assert_eq!(run(&mut c, "SRANDMEMBER s 1 2"), err(SYNTAX));
        assert_eq!(run(&mut c, "SRANDMEMBER nokey"), V::Nil);
        assert_eq!(run(&mut c, "SRANDMEMBER nokey -3"), empty());
        assert_eq!(run(&mut c, "SRANDMEMBER s 0"), empty());
        assert!(matches!(run(&mut c, "SRANDMEMBER s"), V::BulkString(_)));
        // Negative: exactly |count| draws, repetitions allowed.
        let many = sorted(run(&mut c, "SRANDMEMBER s -10"));
        assert_eq!(many.len(), 10);
        assert!(many.iter().all(|m| ["a", "b", "c"].contains(&m.as_str())));
        // Positive: distinct members, at most the whole set.
        let two = sorted(run(&mut c, "SRANDMEMBER s 2"));
        assert_eq!(two.len(), 2);
        assert_ne!(two[0], two[1]);
        assert_eq!(
            sorted(run(&mut c, "SRANDMEMBER s 9223372036854775807")),
            ["a", "b", "c"]
        );
        assert_eq!(run(&mut c, "SCARD s"), int(3));
        // The engine refuses to build a gigantic reply.
        assert!(matches!(
            run(&mut c, "SRANDMEMBER s -9223372036854775807"),
            V::ServerError(_)
        ));
    }

    #[test]
    fn sscan_returns_everything_at_once() {
        let mut c = conn();
        run(&mut c, "SADD s apple banana avocado");
        let reply = run(&mut c, "SSCAN s 0 MATCH a* COUNT 1");
        let V::Array(parts) = reply else {
            panic!("not an array")
        };
        assert_eq!(parts[0], bulk("0"));
        let V::Array(items) = &parts[1] else {
            panic!("not an array")
        };
        let mut items: Vec<_> = items.clone();
        items.sort_by_key(|v| format!("{v:?}"));
        assert_eq!(items, vec![bulk("apple"), bulk("avocado")]);
        let no_scan = V::Array(vec![bulk("0"), empty()]);
        // A missing key replies before the options are parsed.
        assert_eq!(run(&mut c, "SSCAN nokey 0 COUNT 0"), no_scan);
        assert_eq!(run(&mut c, "SSCAN s 0 COUNT 0"), err(SYNTAX));
        assert_eq!(run(&mut c, "SSCAN s 0 TYPE set"), err(SYNTAX));
        assert_eq!(run(&mut c, "SSCAN nokey abc"), err("ERR invalid cursor"));
    }

    #[test]
    fn watch_sees_only_real_changes() {
        let setup = ["SADD s x", "SADD other o"];
        for noop in [
            "SADD s x",
            "SREM s y",
            "SMOVE s s x",
            "SMOVE s d nope",
            "SPOP s 0",
            "SRANDMEMBER s -5",
        ] {
            assert_watch(&setup, "s", noop, false);
        }
        for change in [
            "SADD s y",
            "SREM s x",
            "SMOVE s d x",
            "SPOP s",
            "SPOP s 5",
            "SUNIONSTORE s other",
            "SINTERSTORE s s nokey",
        ] {
            assert_watch(&setup, "s", change, true);
        }
        // An empty result deletes the destination: a change only if it existed.
        assert_watch(&setup, "s", "SINTERSTORE s nokey other", true);
        assert_watch(&setup, "d", "SINTERSTORE d nokey other", false);
        // SMOVE touches the destination only when the member is new there.
        assert_watch(&["SADD s x", "SADD d x"], "d", "SMOVE s d x", false);
        assert_watch(&["SADD s x"], "d", "SMOVE s d x", true);
    }
}
