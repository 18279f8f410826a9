//! The Redis type each command of a unit needs at its key, and which keys
//! a unit checks before it writes.
//!
//! Why: Redis refuses a command on a key of another type (WRONGTYPE) only
//! when the command runs, after the unit's earlier commands have written,
//! and both a script and MULTI/EXEC keep what ran. A unit over a key that
//! another program filled with another type would be left half-written:
//! the object's hash set, its index entry not. So every executor checks
//! the types first, in the unit's atomic run, and a unit that would fail
//! so writes nothing; the refusal names the key.
//!
//! Each typed key is checked once: a later command of the same type on
//! it needs no check of its own. The check also names the key a refusal
//! concerns, which a WRONGTYPE from inside a script does not. An executor
//! that stops at a unit's first error (a script, the engine in process)
//! skips the check of the unit's first command ([`stopping_checks`]):
//! nothing has run before it, and its own refusal is named as the check's
//! would be ([`first_refused`]). A MULTI/EXEC runs every command whatever
//! one replies, so the WATCH path checks that one too.

use smallvec::SmallVec;

use crate::db::plan::Write;
use crate::layout::plain_key;
use crate::Error;

/// The Redis type a command named `name` needs at its key (its first
/// argument), refusing any other with WRONGTYPE; `None` for a command
/// that takes a key of any type (`DEL`, `SET`, `PEXPIRE`...) or one not
/// listed. The list holds the commands the model layer sends, named in
/// capitals as it names them.
pub(crate) fn needed(name: &[u8]) -> Option<&'static str> {
    Some(match name {
        b"HSET" | b"HSETNX" | b"HMSET" | b"HDEL" | b"HINCRBY" | b"HINCRBYFLOAT" | b"HGET"
        | b"HMGET" | b"HGETALL" | b"HEXISTS" | b"HLEN" | b"HKEYS" | b"HVALS" | b"HPEXPIRE"
        | b"HPERSIST" | b"HPTTL" => "hash",
        b"ZADD" | b"ZREM" | b"ZINCRBY" | b"ZSCORE" | b"ZMSCORE" | b"ZRANGE" | b"ZCARD"
        | b"ZRANK" | b"ZREMRANGEBYSCORE" | b"ZREMRANGEBYRANK" => "zset",
        b"SADD" | b"SREM" | b"SISMEMBER" | b"SMISMEMBER" | b"SMEMBERS" | b"SCARD"
        | b"SRANDMEMBER" => "set",
        b"RPUSH" | b"LPUSH" | b"RPUSHX" | b"LPUSHX" | b"LTRIM" | b"LREM" | b"LRANGE"
        | b"LINDEX" | b"LLEN" | b"LPOS" | b"LSET" | b"LPOP" | b"RPOP" => "list",
        b"GET" | b"INCR" | b"INCRBY" | b"DECR" | b"DECRBY" | b"APPEND" | b"STRLEN" => "string",
        _ => return None,
    })
}

/// The type a read named `name` expects where it refuses another with
/// WRONGTYPE, to name that refusal: [`needed`]'s, and `list` for `SORT_RO`,
/// which the model runs only on lists (unique entries). `SORT_RO` reads sets
/// and sorted sets too, so it is no check of a type a later command needs.
pub(crate) fn read_needed(name: &[u8]) -> Option<&'static str> {
    needed(name).or((name == b"SORT_RO").then_some("list"))
}

/// A key a unit checks before it writes: which command's key, the key,
/// and the type it must hold (or nothing).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Check<'a> {
    /// The command, by position in the unit.
    pub(crate) at: usize,
    /// Its key, as stored.
    pub(crate) key: &'a [u8],
    pub(crate) want: &'static str,
}

/// The refusal of `cmd` for a key of another type (WRONGTYPE), naming
/// its key and the type the command expects there; `None` for a command
/// whose type is not known ([`read_needed`]).
pub(crate) fn wrong_type_of(cmd: &redis::Cmd) -> Option<Error> {
    let mut args = crate::command::args(cmd).flatten();
    let want = read_needed(args.next()?)?;
    Some(refused(args.next()?, want))
}

/// A stopping executor's error for a unit of `writes`: a WRONGTYPE
/// refusal, which only its first command can meet (every later one's key
/// is checked first), named as the check of that command would name it;
/// any other error as it is.
pub(crate) fn first_refused(err: Error, writes: &[Write<'_>]) -> Error {
    match err {
        Error::WrongType { .. } => writes
            .first()
            .and_then(|w| wrong_type_of(w.cmd))
            .unwrap_or(err),
        err => err,
    }
}

/// The checks of a unit of `writes` (see the module docs).
pub(crate) fn checks<'a>(writes: &[Write<'a>]) -> SmallVec<[Check<'a>; 4]> {
    checks_of(writes.iter().copied())
}

/// [`checks`] of the writes as they come, unit order.
pub(crate) fn checks_of<'a>(
    writes: impl IntoIterator<Item = Write<'a>>,
) -> SmallVec<[Check<'a>; 4]> {
    let mut out = SmallVec::new();
    // Keys whose type is known from an earlier command.
    let mut known: SmallVec<[(&[u8], &'static str); 6]> = SmallVec::new();
    for (at, write) in writes.into_iter().enumerate() {
        // A read back reads the key of the write before it, whose type
        // that write decided.
        let Some(cmd) = write.command() else {
            continue;
        };
        let mut args = crate::command::args(cmd).flatten();
        let Some(name) = args.next() else {
            continue;
        };
        // A key spliced in from a reply is not known here.
        let key = match write.splice {
            Some(splice) if splice.arg == 0 => None,
            _ => args.next(),
        };
        match (key, needed(name)) {
            (Some(key), Some(want)) => match known.iter_mut().find(|(k, _)| *k == key) {
                Some((_, seen)) if *seen == want => {}
                Some((_, seen)) => {
                    *seen = want;
                    out.push(Check { at, key, want });
                }
                None => {
                    known.push((key, want));
                    out.push(Check { at, key, want });
                }
            },
            // A write of any type (DEL, SET) leaves its key's type unknown.
            (Some(key), None) => known.retain(|(k, _)| *k != key),
            (None, _) => {}
        }
    }
    out
}

/// The checks of a unit of `writes` for an executor that stops at its
/// first error: all but the first command's (see the module docs).
pub(crate) fn stopping_checks<'a>(writes: &[Write<'a>]) -> SmallVec<[Check<'a>; 4]> {
    // A unit of one command (and its read back) has nothing to check.
    if writes.iter().filter(|w| !w.reads_back).nth(1).is_none() {
        return SmallVec::new();
    }
    let mut checks = checks(writes);
    checks.retain(|c| c.at != 0);
    checks
}

/// The refusal of a unit whose key `key` (as stored) holds another type
/// than `want`.
pub(crate) fn refused(key: &[u8], want: &'static str) -> Error {
    Error::UnexpectedType {
        key: plain_key(&String::from_utf8_lossy(key)),
        expected: want,
    }
}

/// The code of a script's refusal for a key of another type:
/// `NOTTYPE want key`.
pub(crate) const NOTTYPE: &str = "NOTTYPE";

/// The refusal a script replies ([`NOTTYPE`]) as [`Error::UnexpectedType`];
/// `None` for another error.
pub(crate) fn from_script(err: &redis::RedisError) -> Option<Error> {
    if err.code() != Some(NOTTYPE) {
        return None;
    }
    let (want, key) = err.detail()?.split_once(' ')?;
    // The type is one of `needed`'s: the error holds a static name.
    let want = ["hash", "zset", "set", "list", "string"]
        .into_iter()
        .find(|t| *t == want)?;
    // A script's error detail ends with the script's name.
    let key = key.split(" script: ").next().unwrap_or(key);
    Some(refused(key.as_bytes(), want))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{cmd, Owned};
    use redis::Cmd;

    fn unit(cmds: &[Cmd]) -> Vec<Write<'_>> {
        cmds.iter().map(|c| Write::plain(c, false)).collect()
    }

    #[test]
    fn each_typed_key_is_checked_once_until_an_untyped_write() {
        let cmds = [
            cmd("HGET").arg("o").arg("f").owned(),
            cmd("HSET").arg("o").arg("f").arg(1).owned(),
            cmd("ZADD").arg("z").arg(1).arg("o").owned(),
            cmd("SADD").arg("s").arg("o").owned(),
            cmd("DEL").arg("s").owned(),
            cmd("SADD").arg("s").arg("o").owned(),
            cmd("PEXPIRE").arg("o").arg(5).owned(),
        ];
        let writes = unit(&cmds);
        let at: Vec<(usize, &[u8], &str)> = checks(&writes)
            .iter()
            .map(|c| (c.at, c.key, c.want))
            .collect();
        // The set again after DEL leaves it unknown.
        assert_eq!(
            at,
            [
                (0, &b"o"[..], "hash"),
                (2, b"z", "zset"),
                (3, b"s", "set"),
                (5, b"s", "set")
            ]
        );
        // A stopping executor skips the first command's.
        let stopping: Vec<usize> = stopping_checks(&writes).iter().map(|c| c.at).collect();
        assert_eq!(stopping, [2, 3, 5]);
    }

    #[test]
    fn a_scripts_refusal_names_the_key_in_plain_form() {
        let reply =
            redis::parse_redis_value(b"-NOTTYPE set {forty:_tag:tags}:red script: 1a2b\r\n")
                .expect("an error reply");
        let Err(err) = reply.clone().extract_error() else {
            panic!("an error reply: {reply:?}");
        };
        let err = from_script(&err).expect("a refusal");
        assert!(
            matches!(&err, Error::UnexpectedType { key, expected: "set" } if key == "forty:_tag:tags:red"),
            "{err:?}"
        );
    }
}
