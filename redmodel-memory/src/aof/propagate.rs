//! What a command that changed the dataset is recorded as: the command
//! itself, unless its effect depends on the time it ran at, on chance or
//! on a client's wait, where Redis 7.0.15 rewrites it (`expire.c`,
//! `t_string.c`, `t_set.c`, `t_list.c`, `t_zset.c`, `t_stream.c`):
//! relative TTLs become absolute (`PEXPIREAT`, `SET ... PXAT`), INCRBYFLOAT
//! the `SET` of its result, SPOP the `SREM` of what it popped, a blocking
//! pop the plain pop it came to, XADD's `*` the ID it chose.
//!
//! Where Redis's rewrite needs more than the reply and the data after the
//! command (approximate stream trimming, XREADGROUP and XCLAIM's
//! deliveries, a relative RESTORE, a blocked client served later), the
//! changed keys are recorded as they are: a `RESTORE ... REPLACE ABSTTL`
//! of each key, or a `DEL` of a key that went. A real Redis loads both.

use redis::Value as Reply;

use crate::args::is;
use crate::keyspace::Keyspace;

/// A command line to record.
pub(crate) type Line = Vec<Vec<u8>>;

/// What a command is recorded as.
pub(crate) enum Form {
    /// The command as it came.
    Verbatim,
    /// These commands in its place.
    Lines(Vec<Line>),
    /// The keys it changed, as they are now.
    State,
}

fn line(parts: &[&[u8]]) -> Line {
    parts.iter().map(|p| p.to_vec()).collect()
}

fn bulk(reply: &Reply) -> Option<&[u8]> {
    match reply {
        Reply::BulkString(b) => Some(b),
        _ => None,
    }
}

/// How to record `args`, which changed the dataset of its database `ks`
/// and answered `reply`.
pub(crate) fn form(args: &[&[u8]], reply: &Reply, ks: &Keyspace) -> Form {
    let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
    let ttl_of = |key: &[u8]| -> Line {
        match (ks.stored(key), ks.expire_at(key)) {
            (None, _) => line(&[b"DEL", key]),
            (Some(_), Some(at)) => line(&[b"PEXPIREAT", key, at.to_string().as_bytes()]),
            (Some(_), None) => line(&[b"PERSIST", key]),
        }
    };
    let set_pxat = |key: &[u8], value: &[u8]| -> Line {
        match (ks.stored(key), ks.expire_at(key)) {
            (None, _) => line(&[b"DEL", key]),
            (Some(_), Some(at)) => line(&[b"SET", key, value, b"PXAT", at.to_string().as_bytes()]),
            (Some(_), None) => line(&[b"SET", key, value]),
        }
    };
    match name.as_str() {
        "expire" | "pexpire" | "expireat" | "pexpireat" => Form::Lines(vec![ttl_of(args[1])]),
        "getex" if args.len() > 2 => Form::Lines(vec![ttl_of(args[1])]),
        "set"
            if args[3..]
                .iter()
                .any(|a| is(a, "ex") || is(a, "px") || is(a, "exat")) =>
        {
            Form::Lines(vec![set_pxat(args[1], args[2])])
        }
        "setex" | "psetex" => Form::Lines(vec![set_pxat(args[1], args[3])]),
        "getdel" => Form::Lines(vec![line(&[b"DEL", args[1]])]),
        "incrbyfloat" => match bulk(reply) {
            Some(v) => Form::Lines(vec![line(&[b"SET", args[1], v, b"KEEPTTL"])]),
            None => Form::State,
        },
        "hincrbyfloat" => match bulk(reply) {
            Some(v) => Form::Lines(vec![line(&[b"HSET", args[1], args[2], v])]),
            None => Form::State,
        },
        "spop" => spop(args[1], reply),
        "blpop" | "brpop" => match reply {
            Reply::Array(kv) if kv.len() == 2 => match bulk(&kv[0]) {
                Some(key) => {
                    let pop: &[u8] = if name == "blpop" { b"LPOP" } else { b"RPOP" };
                    Form::Lines(vec![line(&[pop, key])])
                }
                None => Form::State,
            },
            _ => Form::State,
        },
        "brpoplpush" => Form::Lines(vec![line(&[b"RPOPLPUSH", args[1], args[2]])]),
        "blmove" => Form::Lines(vec![line(&[b"LMOVE", args[1], args[2], args[3], args[4]])]),
        "bzpopmin" | "bzpopmax" => match reply {
            Reply::Array(kms) if kms.len() == 3 => match bulk(&kms[0]) {
                Some(key) => {
                    let pop: &[u8] = if name == "bzpopmin" {
                        b"ZPOPMIN"
                    } else {
                        b"ZPOPMAX"
                    };
                    Form::Lines(vec![line(&[pop, key])])
                }
                None => Form::State,
            },
            _ => Form::State,
        },
        "lmpop" | "blmpop" | "zmpop" | "bzmpop" => mpop(&name, args, reply),
        "restore" if !args[4..].iter().any(|a| is(a, "absttl")) && args[2] != b"0".as_slice() => {
            Form::State
        }
        "xadd" => xadd(args, reply),
        "xtrim" if args.iter().any(|a| a == b"~") => Form::State,
        "xreadgroup" | "xclaim" | "xautoclaim" => Form::State,
        // Field TTLs (Redis 7.4), relative or not: the hash as it is.
        "hexpire" | "hpexpire" | "hexpireat" | "hpexpireat" | "hpersist" => Form::State,
        _ => Form::Verbatim,
    }
}

/// SPOP: the `SREM` of the members popped (Redis batches 1024 to a
/// command).
fn spop(key: &[u8], reply: &Reply) -> Form {
    let members: Vec<&[u8]> = match reply {
        Reply::BulkString(m) => vec![m],
        Reply::Array(ms) | Reply::Set(ms) => ms.iter().filter_map(bulk).collect(),
        _ => return Form::State,
    };
    let lines = members
        .chunks(1024)
        .map(|chunk| {
            let mut l = line(&[b"SREM", key]);
            l.extend(chunk.iter().map(|m| m.to_vec()));
            l
        })
        .collect();
    Form::Lines(lines)
}

/// LMPOP, ZMPOP and their blocking forms: the plain pop of as many
/// elements from the key they took them from (`LPOP key count`...).
fn mpop(name: &str, args: &[&[u8]], reply: &Reply) -> Form {
    let Reply::Array(kv) = reply else {
        return Form::State;
    };
    let (Some(key), Some(Reply::Array(items))) = (kv.first().and_then(bulk), kv.get(1)) else {
        return Form::State;
    };
    // The direction follows the keys: `[timeout] numkeys key... LEFT|MIN`.
    let numkeys_at = if name.starts_with('b') { 2 } else { 1 };
    let direction = args
        .get(numkeys_at)
        .and_then(|n| crate::args::parse_i64(n))
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| args.get(numkeys_at + 1 + n));
    let Some(direction) = direction else {
        return Form::State;
    };
    let from_left = is(direction, "left") || is(direction, "min");
    let pop: &[u8] = match (name.ends_with("zmpop"), from_left) {
        (false, true) => b"LPOP",
        (false, false) => b"RPOP",
        (true, true) => b"ZPOPMIN",
        (true, false) => b"ZPOPMAX",
    };
    Form::Lines(vec![line(&[pop, key, items.len().to_string().as_bytes()])])
}

/// XADD: with `*` (or `<ms>-*`), the ID it chose in its place;
/// approximate trimming (`~`), whose cut Redis records exactly, as the
/// stream now is.
fn xadd(args: &[&[u8]], reply: &Reply) -> Form {
    let mut i = 2;
    while i < args.len() {
        let a = args[i];
        if is(a, "nomkstream") {
            i += 1;
        } else if is(a, "maxlen") || is(a, "minid") {
            match args.get(i + 1) {
                Some(&b"~") => return Form::State,
                Some(&b"=") => i += 3,
                _ => i += 2,
            }
        } else if is(a, "limit") {
            i += 2;
        } else {
            break;
        }
    }
    let Some(id) = args.get(i) else {
        return Form::Verbatim;
    };
    if !id.ends_with(b"*") {
        return Form::Verbatim;
    }
    match bulk(reply) {
        Some(chosen) => {
            let mut l = line(args);
            l[i] = chosen.to_vec();
            Form::Lines(vec![l])
        }
        None => Form::State,
    }
}

/// Whether the command changed server state Redis records even when no
/// key changed: FLUSHALL and FLUSHDB of empty databases, SWAPDB, and the
/// FUNCTION subcommands that change the libraries.
pub(crate) fn always_recorded(args: &[&[u8]]) -> bool {
    let name = args[0];
    if is(name, "flushall") || is(name, "flushdb") || is(name, "swapdb") {
        return true;
    }
    is(name, "function")
        && args
            .get(1)
            .is_some_and(|s| is(s, "load") || is(s, "delete") || is(s, "flush") || is(s, "restore"))
}

/// Whether the command is never recorded itself: a script's or a
/// function's effects are recorded as its calls ran (Redis 7.0 replicates
/// effects only); DEBUG's changes are not propagated by Redis either.
pub(crate) fn recorded_by_calls(name: &[u8]) -> bool {
    crate::command_table::runs_script(name) || is(name, "debug")
}
