//! OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ | HELP, as Redis 7.0.15
//! answers them. The encoding is the one Redis would use for the same
//! data, thresholds and history (see `value/encoding.rs`). OBJECT looks
//! keys up without counting an access, as Redis does.

use super::{help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::error::CmdError;
use crate::keyspace::{Entry, Lfu};
use crate::reply;
use crate::value::encoding::{encoding_name, is_shared_integer};

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "object",
    arity: -2,
    handler: object,
}];

/// OBJECT's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "encoding",
        arity: 3,
        handler: encoding,
    },
    Sub {
        name: "refcount",
        arity: 3,
        handler: refcount,
    },
    Sub {
        name: "idletime",
        arity: 3,
        handler: idletime,
    },
    Sub {
        name: "freq",
        arity: 3,
        handler: freq,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: help,
    },
];

fn object(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

/// Runs `f` on the entry at `args[2]`, or replies nil if there is none.
fn with_entry(ctx: &mut Ctx<'_>, key: &[u8], f: impl FnOnce(&Entry) -> CmdResult) -> CmdResult {
    let now = ctx.now;
    // A read (INFO's keyspace hits and misses), not an access.
    match ctx.ks().read_untouched(key, now, false) {
        Some(entry) => f(entry),
        None => Ok(reply::nil()),
    }
}

fn encoding(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    with_entry(ctx, args[2], |e| {
        Ok(reply::bulk(encoding_name(&e.value, e.history())))
    })
}

/// Redis shares the integers 0..10000 (refcount `INT_MAX`); every other
/// value has one reference.
fn refcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    with_entry(ctx, args[2], |e| {
        Ok(reply::int(if is_shared_integer(&e.value, e.history()) {
            i64::from(i32::MAX)
        } else {
            1
        }))
    })
}

const LFU_NOT_SELECTED: &str = "An LFU maxmemory policy is not selected, access frequency not \
     tracked. Please note that when switching between policies at runtime LRU and LFU data will \
     take some time to adjust.";
const LFU_SELECTED: &str = "An LFU maxmemory policy is selected, idle time not tracked. Please \
     note that when switching between policies at runtime LRU and LFU data will take some time \
     to adjust.";

/// Seconds since the key was last read or written.
fn idletime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    let lfu = ctx.ks().limits().lfu;
    with_entry(ctx, args[2], |e| {
        if lfu {
            return Err(CmdError::err(LFU_SELECTED));
        }
        Ok(reply::int((now / 1000 - i64::from(e.accessed())).max(0)))
    })
}

/// The access frequency counter, which exists only under an LFU policy:
/// as the key's accesses raised it, less its decay since the last one.
fn freq(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let lfu = Lfu::of(ctx.ks().limits());
    let now = ctx.now;
    with_entry(ctx, args[2], |e| match lfu {
        Some(lfu) => Ok(reply::int(e.freq(lfu, now))),
        None => Err(CmdError::err(LFU_NOT_SELECTED)),
    })
}

fn help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "object",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    ))
}

#[cfg(test)]
mod tests {
    //! Every expected reply below was observed on redis-server 7.0.15.

    use std::time::Duration;

    use redis::Value;

    use crate::command::test_util::*;

    fn enc(c: &mut crate::Connection, key: &str) -> Value {
        run(c, &format!("OBJECT ENCODING {key}"))
    }

    #[test]
    fn an_aggregate_converts_on_what_a_write_adds_not_on_what_it_holds() {
        let mut c = conn();
        let (long, longer) = ("a".repeat(40), "c".repeat(20));
        run(&mut c, &format!("HSET h a {long}"));
        run(&mut c, &format!("ZADD z 1 {long}"));
        run(&mut c, "HINCRBY n f 1");
        run(&mut c, "CONFIG SET hash-max-listpack-value 10");
        run(&mut c, "CONFIG SET zset-max-listpack-value 10");
        // Short writes: Redis checks what it adds, not the long element
        // stored before the limit was lowered.
        run(&mut c, "HSET h b x");
        run(&mut c, "ZADD z 2 n");
        assert_eq!(enc(&mut c, "h"), bulk("listpack"));
        assert_eq!(enc(&mut c, "z"), bulk("listpack"));
        run(&mut c, &format!("HSET h c {longer}"));
        run(&mut c, &format!("ZADD z 3 {longer}"));
        assert_eq!(enc(&mut c, "h"), bulk("hashtable"));
        assert_eq!(enc(&mut c, "z"), bulk("skiplist"));
        // An increment's new value counts as written.
        run(&mut c, "CONFIG SET hash-max-listpack-value 2");
        run(&mut c, "HINCRBY n f 1000");
        assert_eq!(enc(&mut c, "n"), bulk("hashtable"));
    }

    #[test]
    fn encodings_of_fresh_values() {
        let mut c = conn();
        run(&mut c, "RPUSH l a b");
        assert_eq!(enc(&mut c, "l"), bulk("quicklist"));
        run(&mut c, "HSET h a b");
        assert_eq!(enc(&mut c, "h"), bulk("listpack"));
        run(&mut c, "SADD s 1 2");
        assert_eq!(enc(&mut c, "s"), bulk("intset"));
        run(&mut c, "SADD s2 a");
        assert_eq!(enc(&mut c, "s2"), bulk("hashtable"));
        run(&mut c, "ZADD z 1 a");
        assert_eq!(enc(&mut c, "z"), bulk("listpack"));
        run(&mut c, "SET i 123");
        assert_eq!(enc(&mut c, "i"), bulk("int"));
        run(&mut c, "SET e hello");
        assert_eq!(enc(&mut c, "e"), bulk("embstr"));
        run(&mut c, &format!("SET r {}", "x".repeat(45)));
        assert_eq!(enc(&mut c, "r"), bulk("raw"));
        run(&mut c, "APPEND e x");
        assert_eq!(enc(&mut c, "e"), bulk("raw"));
        run(&mut c, "INCRBYFLOAT f 3");
        assert_eq!(enc(&mut c, "f"), bulk("embstr"));
        run(&mut c, "SETRANGE sr 2 ab");
        assert_eq!(enc(&mut c, "sr"), bulk("raw"));
        run(&mut c, "APPEND ap 12");
        assert_eq!(enc(&mut c, "ap"), bulk("int"));
        run(&mut c, "INCR ap");
        assert_eq!(enc(&mut c, "ap"), bulk("int"));
        assert_eq!(enc(&mut c, "nokey"), Value::Nil);
    }

    /// Conversions go one way: past a threshold, for good.
    #[test]
    fn conversions_follow_thresholds_one_way() {
        let mut c = conn();
        run(&mut c, "CONFIG SET hash-max-listpack-entries 2");
        run(&mut c, "HSET h a 1 b 2");
        assert_eq!(enc(&mut c, "h"), bulk("listpack"));
        run(&mut c, "HSET h c 3");
        assert_eq!(enc(&mut c, "h"), bulk("hashtable"));
        run(&mut c, "HDEL h c b");
        assert_eq!(enc(&mut c, "h"), bulk("hashtable"));
        run(&mut c, "CONFIG SET zset-max-listpack-value 3");
        run(&mut c, "ZADD z 1 abcd");
        assert_eq!(enc(&mut c, "z"), bulk("skiplist"));
        run(&mut c, "SADD s 1 2");
        run(&mut c, "SADD s x");
        run(&mut c, "SREM s x");
        assert_eq!(enc(&mut c, "s"), bulk("hashtable"));
        // A new value starts over.
        run(&mut c, "DEL s");
        run(&mut c, "SADD s 1");
        assert_eq!(enc(&mut c, "s"), bulk("intset"));
        // Lowering a threshold does not convert what exists.
        run(&mut c, "HSET small a 1");
        run(&mut c, "CONFIG SET hash-max-listpack-entries 0");
        assert_eq!(enc(&mut c, "small"), bulk("listpack"));
    }

    #[test]
    fn refcount_freq_idletime_and_errors() {
        let (clock, mut c) = clocked(1_000_000);
        run(&mut c, "SET i 123");
        run(&mut c, "SET big 123456");
        assert_eq!(run(&mut c, "OBJECT REFCOUNT i"), int(2147483647));
        assert_eq!(run(&mut c, "OBJECT REFCOUNT big"), int(1));
        assert_eq!(run(&mut c, "OBJECT REFCOUNT nokey"), Value::Nil);
        assert_eq!(
            run(&mut c, "OBJECT FREQ i"),
            err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
        );
        clock.advance(Duration::from_secs(3));
        assert_eq!(run(&mut c, "OBJECT IDLETIME i"), int(3));
        // OBJECT itself is no access.
        assert_eq!(run(&mut c, "OBJECT IDLETIME i"), int(3));
        run(&mut c, "GET i");
        assert_eq!(run(&mut c, "OBJECT IDLETIME i"), int(0));
        run(&mut c, "CONFIG SET maxmemory-policy allkeys-lfu");
        assert_eq!(
            run(&mut c, "OBJECT IDLETIME i"),
            err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
        );
        assert_eq!(
            run(&mut c, "OBJECT"),
            err("ERR wrong number of arguments for 'object' command")
        );
        assert_eq!(
            run(&mut c, "OBJECT foo"),
            err("ERR unknown subcommand 'foo'. Try OBJECT HELP.")
        );
        let arity = err("ERR wrong number of arguments for 'object|encoding' command");
        assert_eq!(run(&mut c, "OBJECT ENCODING"), arity);
        assert_eq!(run(&mut c, "OBJECT ENCODING a b"), arity);
        let Value::Array(help) = run(&mut c, "OBJECT HELP") else {
            panic!("HELP is an array");
        };
        assert_eq!(help.len(), 15);
        assert_eq!(
            help[0],
            Value::SimpleString(
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into()
            )
        );
    }
}
