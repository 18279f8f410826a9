//! Rust code run as a script runs: atomically, its commands checked and
//! run as a Lua script's `redis.call`s are, without Lua.
//!
//! Why: in process a script costs far more than the commands it runs. An
//! EVALSHA that does nothing costs about three times a small command, and
//! each `redis.call` crosses from Lua to Rust and back, converting every
//! argument and reply. A caller in the same process that only needs a
//! script's atomicity (read, compare, then write, with no other client in
//! between) can have it from the store's lock directly:
//! [`Engine::atomically`].

use std::panic::AssertUnwindSafe;

use redis::Value;

use crate::command::blocking::{self, BlockSlot};
use crate::command::script::call::{self, Client};
use crate::command::Ctx;
use crate::error::error_value;
use crate::Engine;

/// The commands of an [`Engine::atomically`] closure: each runs as a
/// script's `redis.call` would, on a client of database `db` that speaks
/// RESP2 and may not block.
pub struct Atomic<'a> {
    client: Client<'a>,
}

impl Atomic<'_> {
    /// Runs one command (name first) as a script's `redis.call` runs it:
    /// the same refusals (an unknown command, a wrong argument count, a
    /// command scripts may not run, an ACL denial, keys of another slot
    /// than the first command's in cluster mode), a command that may
    /// block answering at once (XREAD ... BLOCK); its reply, an error as a `Value::ServerError`.
    ///
    /// Unlike a reply that comes back through Lua, an integer stays
    /// exact, a nil stays a nil inside an array, and a status stays a
    /// status.
    pub fn call(&mut self, args: &[&[u8]]) -> Value {
        if args.is_empty() {
            return error_value("ERR Please specify at least one argument for this redis lib call");
        }
        match call::run(&mut self.client, args) {
            Ok(reply) => reply,
            Err(text) => error_value(&text),
        }
    }

    /// Whether `key` exists, as `EXISTS key` finds it (a key past its
    /// expiry time is deleted on the way, with its notifications), read
    /// without running a command: no statistics, slow log entry, latency
    /// sample or MONITOR line, and no ACL or cluster slot check. For the
    /// caller's own precondition (a write that needs its object to
    /// exist), which as a command would cost about as much as the write.
    pub fn exists(&mut self, key: &[u8]) -> bool {
        let now = self.client.ctx.now;
        self.client.ctx.ks().entry_untouched(key, now).is_some()
    }

    /// The type of `key` as `TYPE key` names it (`string`, `hash`,
    /// `zset`...), `None` if it does not exist, read as [`exists`](Self::exists)
    /// reads: without running a command. For the caller's own check that
    /// its commands will find the types they need before the first one
    /// writes.
    pub fn type_of(&mut self, key: &[u8]) -> Option<&'static str> {
        let now = self.client.ctx.now;
        (self.client.ctx.ks().entry_untouched(key, now)).map(|e| e.value.type_name())
    }
}

impl Engine {
    /// Runs `f` atomically on database `db`, as a script runs: no other
    /// client's command runs until it returns, its commands see one
    /// frozen time, and what they write aborts other clients' WATCHes and
    /// wakes blocked clients as a script's writes do (after `f`
    /// returns). A command's error does not stop `f`: it is the reply it
    /// reads, and what ran before stays, as in a script that goes on
    /// after `redis.pcall`. Over `maxmemory` (with nothing to evict),
    /// `f`'s first command that may grow the data gets the OOM error, as
    /// a client's script's does; once a command of `f` wrote, the rest
    /// runs.
    ///
    /// `f` holds the engine's lock: it must not use another client of this
    /// engine (that would wait for itself).
    ///
    /// ```
    /// use redis::Value;
    /// use redmodel_memory::Engine;
    ///
    /// let engine = Engine::new();
    /// // Increment a field only if its hash exists (a script's job).
    /// let reply = engine.atomically(0, |tx| {
    ///     if tx.call(&[b"EXISTS", b"user:1"]) == Value::Int(0) {
    ///         return None;
    ///     }
    ///     Some(tx.call(&[b"HINCRBY", b"user:1", b"visits", b"1"]))
    /// });
    /// assert_eq!(reply, None);
    /// ```
    ///
    /// While a CLIENT PAUSE holds scripts back (WRITE or ALL), the calling
    /// thread waits for it to end, as a script sent to a paused server.
    ///
    /// # Panics
    ///
    /// If `db` is not a database of the engine (16, as Redis's default),
    /// or as `f` panics (after the store is left as after a script that
    /// stopped there: what ran stays).
    pub fn atomically<R>(&self, db: usize, f: impl FnOnce(&mut Atomic<'_>) -> R) -> R {
        // As a script, `f` waits while a CLIENT PAUSE holds scripts back
        // (looking again every few milliseconds: the thread has no runtime
        // to wait for UNPAUSE on).
        let (now, mut store) = loop {
            let now = self.now_ms();
            let store = self.shared.store.lock();
            match store.pause.holds(&[b"eval"], || false, now) {
                None => break (now, store),
                Some(until) => {
                    drop(store);
                    let wait = until.saturating_sub(now).clamp(1, 5).unsigned_abs();
                    std::thread::sleep(std::time::Duration::from_millis(wait));
                }
            }
        };
        assert!(db < store.dbs.len(), "no database {db} in the engine");
        // As before a client's script: evictions, then whether the data
        // is over `maxmemory`, which refuses `f`'s first command that may
        // grow the data (Redis's `processCommand`, then `scriptVerifyOOM`).
        store.evict(now);
        store.out_of_memory();
        let no_replicas = store.dbs[db].limits().min_replicas;
        let was_in_script = std::mem::replace(&mut store.in_script, true);
        let mut atomic = Atomic {
            client: Client {
                ctx: Ctx {
                    store: &mut store,
                    db,
                    now,
                    block: BlockSlot::Denied,
                    resp: 2,
                },
                read_only: false,
                // As a script with a shebang: in cluster mode every key
                // in the first key's slot, as a cluster routes a script.
                cross_slot: false,
                slot: None,
                no_replicas,
                allow_oom: false,
                wrote: false,
            },
        };
        // A panic in `f` goes on once the store is as after any script:
        // what ran stays, and the next command is no longer in one.
        let out = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut atomic)));
        drop(atomic);
        store.in_script = was_in_script;
        // As after any command: its changes to the AOF, notifications
        // out, blocked clients served.
        store.aof_flush_unit();
        store.flush_notifications();
        blocking::serve_ready(&mut store, now);
        store.flush_notifications();
        // BCAST trackers hear of the changes before the caller's reply.
        store.tracking.broadcast();
        out.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn is_error(v: &Value, text: &str) -> bool {
        matches!(v, Value::ServerError(e) if format!("{e:?}").contains(text))
    }

    #[test]
    fn commands_run_as_a_scripts_do_with_exact_replies() {
        let engine = Engine::new();
        let replies = engine.atomically(0, |tx| {
            [
                tx.call(&[b"SET", b"n", b"1152921504606846976"]),
                tx.call(&[b"INCR", b"n"]),
                tx.call(&[b"HSET", b"h", b"a", b"1"]),
                tx.call(&[b"HMGET", b"h", b"a", b"b"]),
                // Refused as `redis.call` refuses them.
                tx.call(&[b"NOSUCH"]),
                tx.call(&[b"GET"]),
                tx.call(&[b"MULTI"]),
                // An error does not stop the rest.
                tx.call(&[b"HINCRBY", b"n", b"f", b"1"]),
                tx.call(&[b"GET", b"n"]),
                // As in Redis 7.0, BLPOP is `noscript`.
                tx.call(&[b"BLPOP", b"empty", b"0"]),
            ]
        });
        assert_eq!(replies[0], Value::Okay);
        // Through Lua this would have come back as a rounded double.
        assert_eq!(replies[1], Value::Int(1_152_921_504_606_846_977));
        assert_eq!(replies[2], Value::Int(1));
        assert_eq!(replies[3], Value::Array(vec![bulk("1"), Value::Nil]));
        assert!(is_error(
            &replies[4],
            "Unknown Redis command called from script"
        ));
        assert!(is_error(&replies[5], "Wrong number of args"));
        assert!(is_error(&replies[6], "not allowed from script"));
        assert!(is_error(&replies[7], "WRONGTYPE"));
        assert_eq!(replies[8], bulk("1152921504606846977"));
        assert!(is_error(&replies[9], "not allowed from script"));
        assert!(is_error(
            &engine.atomically(0, |tx| tx.call(&[])),
            "at least one argument"
        ));
    }

    #[test]
    fn over_maxmemory_the_first_write_that_may_grow_the_data_is_refused_as_in_a_script() {
        let engine = Engine::new();
        let mut c = engine.connection();
        c.execute(&[b"HSET", b"h", b"a", b"1", b"b", b"2"]);
        assert_eq!(
            c.execute(&[b"CONFIG", b"SET", b"maxmemory", b"1"]),
            Value::Okay
        );
        // Refused before anything was written; a read and a delete run.
        let refused = engine.atomically(0, |tx| {
            [
                tx.call(&[b"HGET", b"h", b"a"]),
                tx.call(&[b"HSET", b"h", b"c", b"3"]),
                tx.call(&[b"SADD", b"s", b"x"]),
                tx.call(&[b"HDEL", b"h", b"b"]),
            ]
        });
        assert_eq!(refused[0], bulk("1"));
        assert!(is_error(&refused[1], "OOM"), "{:?}", refused[1]);
        assert!(is_error(&refused[2], "OOM"), "{:?}", refused[2]);
        assert_eq!(refused[3], Value::Int(1));
        // Once a write command ran (even one that changed nothing), the
        // rest runs: the script cannot stop halfway.
        let after_a_write = engine.atomically(0, |tx| {
            [
                tx.call(&[b"HDEL", b"h", b"none"]),
                tx.call(&[b"HSET", b"h", b"c", b"3"]),
            ]
        });
        assert_eq!(after_a_write, [Value::Int(0), Value::Int(1)]);
        assert_eq!(c.execute(&[b"HLEN", b"h"]), Value::Int(2));
        c.execute(&[b"CONFIG", b"SET", b"maxmemory", b"0"]);
        let room = engine.atomically(0, |tx| tx.call(&[b"SADD", b"s", b"x"]));
        assert_eq!(room, Value::Int(1));
    }

    #[test]
    fn exists_finds_what_the_command_finds_and_deletes_an_expired_key() {
        let engine = Engine::new();
        let mut c = engine.connection();
        c.execute(&[b"SET", b"k", b"v"]);
        c.execute(&[b"SET", b"gone", b"v", b"PX", b"1"]);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let found = engine.atomically(0, |tx| {
            [tx.exists(b"k"), tx.exists(b"gone"), tx.exists(b"none")]
        });
        assert_eq!(found, [true, false, false]);
        c.execute(&[b"RPUSH", b"l", b"x"]);
        let types = engine.atomically(0, |tx| {
            [tx.type_of(b"k"), tx.type_of(b"l"), tx.type_of(b"none")]
        });
        assert_eq!(types, [Some("string"), Some("list"), None]);
        // Deleted on the way, as a read deletes it: no key left to count.
        assert_eq!(c.execute(&[b"DBSIZE"]), Value::Int(2));
        let stats = c.execute(&[b"INFO", b"commandstats"]);
        let Value::BulkString(stats) = stats else {
            panic!("INFO's reply: {stats:?}");
        };
        assert!(
            !String::from_utf8_lossy(&stats).contains("cmdstat_exists"),
            "no command ran"
        );
    }

    #[test]
    fn a_write_aborts_other_clients_watches_and_reaches_its_database() {
        let engine = Engine::new();
        let mut watcher = engine.connection();
        watcher.execute(&[b"SELECT", b"3"]);
        watcher.execute(&[b"WATCH", b"k"]);
        engine.atomically(3, |tx| tx.call(&[b"SET", b"k", b"v"]));
        watcher.execute(&[b"MULTI"]);
        watcher.execute(&[b"SET", b"k", b"mine"]);
        assert_eq!(watcher.execute(&[b"EXEC"]), Value::Nil);
        assert_eq!(watcher.execute(&[b"GET", b"k"]), bulk("v"));
        assert_eq!(engine.dbsize(0), 0);
    }

    #[test]
    fn a_push_wakes_a_blocked_client() {
        let engine = Engine::new();
        let waiting = {
            let engine = engine.clone();
            std::thread::spawn(move || engine.connection().execute(&[b"BLPOP", b"q", b"10"]))
        };
        let mut info = engine.connection();
        let blocked = |info: &mut crate::Connection| match info.execute(&[b"INFO", b"clients"]) {
            Value::BulkString(text) => String::from_utf8_lossy(&text).contains("blocked_clients:1"),
            _ => false,
        };
        while !blocked(&mut info) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        engine.atomically(0, |tx| tx.call(&[b"RPUSH", b"q", b"job"]));
        let reply = waiting.join().expect("the blocked client's thread");
        assert_eq!(reply, Value::Array(vec![bulk("q"), bulk("job")]));
    }

    #[test]
    fn a_panic_leaves_what_ran_and_no_script_running() {
        let engine = Engine::new();
        let mut c = engine.connection();
        c.execute(&[b"SADD", b"s", b"c", b"b", b"a"]);
        let unsorted = c.execute(&[b"SORT", b"s", b"BY", b"nosort", b"ALPHA"]);
        let panicked = std::panic::catch_unwind(AssertUnwindSafe(|| {
            engine.atomically(0, |tx| {
                tx.call(&[b"SET", b"k", b"v"]);
                panic!("the caller's bug");
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(c.execute(&[b"GET", b"k"]), bulk("v"));
        // Within a script, SORT BY nosort of a set sorts (for determinism);
        // outside, it does not: no script is left running.
        assert_eq!(
            c.execute(&[b"SORT", b"s", b"BY", b"nosort", b"ALPHA"]),
            unsorted
        );
        let in_script = engine.atomically(0, |tx| {
            tx.call(&[b"SORT", b"s", b"BY", b"nosort", b"ALPHA"])
        });
        assert_ne!(
            in_script, unsorted,
            "the test needs a set whose order is not sorted"
        );
    }

    #[test]
    fn in_cluster_mode_every_key_is_in_the_first_keys_slot() {
        let engine = Engine::new().with_cluster_mode();
        let replies = engine.atomically(0, |tx| {
            [
                tx.call(&[b"SET", b"{u}a", b"1"]),
                tx.call(&[b"SET", b"{u}b", b"2"]),
                tx.call(&[b"SET", b"other", b"3"]),
            ]
        });
        assert_eq!(replies[..2], [Value::Okay, Value::Okay]);
        assert!(is_error(&replies[2], "do not hash to the same slot"));
    }
}
