//! The commands that work across numbered databases: COPY, MOVE, SWAPDB,
//! following Redis 7.0.15's `db.c` (order of checks, replies, and what
//! they signal to WATCH).

use super::shared::database::db_index;
use super::{CmdResult, Ctx, Spec};
use crate::args::{int32_arg, is};
use crate::command::DATABASES;
use crate::error::CmdError;
use crate::keyspace::Keyspace;
use crate::notify::class;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "copy",
        arity: -3,
        handler: copy,
    },
    Spec {
        name: "move",
        arity: 3,
        handler: move_key,
    },
    Spec {
        name: "swapdb",
        arity: 3,
        handler: swapdb,
    },
];

/// Redis's `shared.sameobjecterr`.
fn same_object() -> CmdError {
    CmdError::err("source and destination objects are the same")
}

/// Two different databases of the store, mutably.
fn two_dbs(dbs: &mut [Keyspace], a: usize, b: usize) -> (&mut Keyspace, &mut Keyspace) {
    if a < b {
        let (low, high) = dbs.split_at_mut(b);
        (&mut low[a], &mut high[0])
    } else {
        let (low, high) = dbs.split_at_mut(a);
        (&mut high[0], &mut low[b])
    }
}

/// `COPY source destination [DB destination-db] [REPLACE]`: the copy has
/// the source's TTL and keeps its encoding; only the destination is
/// signalled modified.
fn copy(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (src_db, now) = (ctx.db, ctx.now);
    let mut dst_db = src_db;
    let mut replace = false;
    let mut i = 3;
    while let Some(&opt) = args.get(i) {
        if is(opt, "replace") {
            replace = true;
        } else if is(opt, "db") && i + 1 < args.len() {
            dst_db = db_index(args[i + 1])?;
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if ctx.store.cluster_enabled && (src_db != 0 || dst_db != 0) {
        return Err(CmdError::err(
            "Copying to another database is not allowed in cluster mode",
        ));
    }
    let (key, new_key) = (args[1], args[2]);
    if src_db == dst_db && key == new_key {
        return Err(same_object());
    }
    // The source is read, the destination looked up to be written, as
    // Redis looks them up.
    let Some(entry) = ctx.store.dbs[src_db].entry_read(key, now) else {
        return Ok(reply::int(0));
    };
    let (value, history) = (entry.value.clone(), entry.history());
    let expire_at = ctx.store.dbs[src_db].expire_at(key);
    let dst = &mut ctx.store.dbs[dst_db];
    if dst.entry(new_key, now).is_some() {
        if !replace {
            return Ok(reply::int(0));
        }
        dst.remove(new_key);
    }
    dst.set_with_history(new_key, value, false, history, now);
    dst.set_expire(new_key, expire_at);
    ctx.notify_in(dst_db, class::GENERIC, "copy_to", new_key);
    Ok(reply::int(1))
}

/// MOVE key db: the key keeps its value, TTL and encoding; both databases
/// see the key modified.
fn move_key(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if ctx.store.cluster_enabled {
        return Err(CmdError::err("MOVE is not allowed in cluster mode"));
    }
    let (src_db, now) = (ctx.db, ctx.now);
    let dst_db = db_index(args[2])?;
    if src_db == dst_db {
        return Err(same_object());
    }
    let key = args[1];
    let (src, dst) = two_dbs(&mut ctx.store.dbs, src_db, dst_db);
    // Both looked up to be written, as Redis does.
    if src.entry(key, now).is_none() || dst.entry(key, now).is_some() {
        return Ok(reply::int(0));
    }
    let Some(entry) = src.remove(key) else {
        return Ok(reply::int(0));
    };
    dst.put_moved(key, entry, now);
    ctx.notify_in(src_db, class::GENERIC, "move_from", key);
    ctx.notify_in(dst_db, class::GENERIC, "move_to", key);
    // Redis counts one change: the destination's is it.
    ctx.changes(0);
    Ok(reply::int(1))
}

/// SWAPDB index1 index2: the data changes places; the clients watching
/// keys stay with their database number (Redis 7.0 touches the watched
/// keys that exist on either side).
fn swapdb(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if ctx.store.cluster_enabled {
        return Err(CmdError::err("SWAPDB is not allowed in cluster mode"));
    }
    let first = int32_arg(args[1], Some("invalid first DB index"))?;
    let second = int32_arg(args[2], Some("invalid second DB index"))?;
    let index = |n: i64| usize::try_from(n).ok().filter(|&i| i < DATABASES);
    let (Some(a), Some(b)) = (index(first), index(second)) else {
        return Err(CmdError::err("DB index is out of range"));
    };
    if a != b {
        let now = ctx.now;
        let (x, y) = two_dbs(&mut ctx.store.dbs, a, b);
        Keyspace::swap_data(x, y, now);
    }
    ctx.changes(1);
    Ok(reply::ok())
}

#[cfg(test)]
mod tests {
    //! Every expected reply below was observed on redis-server 7.0.15.

    use redis::Value;

    use crate::command::test_util::*;

    #[test]
    fn copy_replies_and_errors() {
        let mut c = conn();
        run(&mut c, "SET a 1");
        assert_eq!(run(&mut c, "COPY a b"), int(1));
        assert_eq!(run(&mut c, "COPY a b"), int(0));
        assert_eq!(run(&mut c, "COPY a b REPLACE"), int(1));
        let same = err("ERR source and destination objects are the same");
        assert_eq!(run(&mut c, "COPY a a"), same);
        assert_eq!(run(&mut c, "COPY a a DB 1"), int(1));
        assert_eq!(run(&mut c, "COPY nokey b"), int(0));
        let range = err("ERR DB index is out of range");
        assert_eq!(run(&mut c, "COPY a b DB 16"), range);
        assert_eq!(run(&mut c, "COPY a b DB -1"), range);
        assert_eq!(run(&mut c, "COPY a b DB x"), err(NOT_INT));
        assert_eq!(
            run(&mut c, "COPY a b DB 4294967296"),
            err("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
        assert_eq!(run(&mut c, "COPY a b DB"), err(SYNTAX));
        assert_eq!(run(&mut c, "COPY a b foo"), err(SYNTAX));
        assert_eq!(run(&mut c, "COPY a c DB 1 DB 2"), int(1));
        assert_eq!(run(&mut c, "SELECT 2"), Value::Okay);
        assert_eq!(run(&mut c, "GET c"), bulk("1"));
        assert_eq!(
            run(&mut c, "COPY"),
            err("ERR wrong number of arguments for 'copy' command")
        );
    }

    #[test]
    fn copy_keeps_ttl_and_encoding_and_is_independent() {
        let (_clock, mut c) = clocked(1_000_000);
        run(&mut c, "RPUSH l a b");
        run(&mut c, "PEXPIRE l 5000");
        assert_eq!(run(&mut c, "COPY l l2"), int(1));
        assert_eq!(run(&mut c, "PTTL l2"), int(5000));
        run(&mut c, "RPUSH l2 c");
        assert_eq!(run(&mut c, "LLEN l"), int(2));
        run(&mut c, "CONFIG SET hash-max-listpack-entries 1");
        run(&mut c, "HSET h a 1 b 2");
        run(&mut c, "HDEL h b");
        assert_eq!(run(&mut c, "OBJECT ENCODING h"), bulk("hashtable"));
        run(&mut c, "COPY h h2");
        assert_eq!(run(&mut c, "OBJECT ENCODING h2"), bulk("hashtable"));
    }

    #[test]
    fn move_replies_and_ttl() {
        let (_clock, mut c) = clocked(1_000_000);
        run(&mut c, "SET a 1 PX 5000");
        assert_eq!(
            run(&mut c, "MOVE a 0"),
            err("ERR source and destination objects are the same")
        );
        assert_eq!(run(&mut c, "MOVE a 1"), int(1));
        assert_eq!(run(&mut c, "MOVE a 1"), int(0));
        assert_eq!(run(&mut c, "MOVE nokey 1"), int(0));
        assert_eq!(
            run(&mut c, "MOVE a 16"),
            err("ERR DB index is out of range")
        );
        assert_eq!(run(&mut c, "MOVE a x"), err(NOT_INT));
        run(&mut c, "SELECT 1");
        assert_eq!(run(&mut c, "PTTL a"), int(5000));
        run(&mut c, "SELECT 0");
        run(&mut c, "SET a other");
        run(&mut c, "SELECT 1");
        // The destination has the key: nothing moves.
        assert_eq!(run(&mut c, "MOVE a 0"), int(0));
        assert_eq!(run(&mut c, "GET a"), bulk("1"));
    }

    #[test]
    fn swapdb_replies() {
        let mut c = conn();
        run(&mut c, "SET a 1");
        assert_eq!(run(&mut c, "SWAPDB 0 1"), Value::Okay);
        assert_eq!(run(&mut c, "GET a"), Value::Nil);
        run(&mut c, "SELECT 1");
        assert_eq!(run(&mut c, "GET a"), bulk("1"));
        assert_eq!(run(&mut c, "SWAPDB 0 0"), Value::Okay);
        let range = err("ERR DB index is out of range");
        assert_eq!(run(&mut c, "SWAPDB 0 16"), range);
        assert_eq!(run(&mut c, "SWAPDB -1 0"), range);
        assert_eq!(run(&mut c, "SWAPDB x 1"), err("ERR invalid first DB index"));
        assert_eq!(
            run(&mut c, "SWAPDB 0 x"),
            err("ERR invalid second DB index")
        );
    }

    /// WATCH: COPY touches the destination, MOVE both sides, SWAPDB the
    /// watched keys that exist in either database.
    #[test]
    fn watched_keys_are_touched() {
        assert_watch(&["SET src v"], "x", "COPY src x", true);
        assert_watch(&["SET x v"], "x", "COPY x y", false);
        assert_watch(&["SET x v"], "x", "MOVE x 1", true);
        assert_watch(&["SET x v"], "x", "SWAPDB 0 1", true);
        assert_watch(
            &["SELECT 1", "SET x v", "SELECT 0"],
            "x",
            "SWAPDB 0 1",
            true,
        );
        // Neither database has the key: nothing to touch.
        assert_watch(&["SET y v"], "x", "SWAPDB 0 1", false);
    }

    /// Redis 7's multi cases "SWAPDB does not touch non-existing key
    /// replaced with stale key" and "... stale key replaced with another
    /// stale key": an expired key brought in is no logical change, and
    /// the watcher's EXEC runs.
    #[test]
    fn an_expired_key_swapped_in_is_no_change_to_a_watcher() {
        for setup in [
            &["SELECT 0", "SET x foo PX 1"][..],
            &["SELECT 1", "SET x foo PX 1", "SELECT 0", "SET x bar PX 1"][..],
        ] {
            let (clock, mut c) = clocked(1_000_000);
            run(&mut c, "DEBUG SET-ACTIVE-EXPIRE 0");
            for line in setup {
                run(&mut c, line);
            }
            clock.advance(std::time::Duration::from_millis(2));
            run(&mut c, "SELECT 1");
            run(&mut c, "WATCH x");
            run(&mut c, "SWAPDB 0 1");
            run(&mut c, "MULTI");
            run(&mut c, "PING");
            assert_eq!(
                run(&mut c, "EXEC"),
                Value::Array(vec![Value::SimpleString("PONG".into())]),
                "{setup:?}"
            );
        }
    }
}
