//! One client's view of the engine: its selected database, its MULTI queue
//! and its WATCHed keys. The RESP server keeps one per TCP connection; the
//! in-process [`Connection`](super::Connection) holds one too.

use redis::Value as Reply;

use super::command::{self, Ctx};
use super::error::CmdError;
use super::keyspace::Key;
use super::reply;
use super::store::{Store, DATABASES};

/// A command queued between MULTI and EXEC.
type Queued = Vec<Vec<u8>>;

#[derive(Debug)]
struct Watched {
    db: usize,
    key: Key,
    epoch: u64,
    /// Redis 7: a key already expired when watched does not abort EXEC when
    /// it is reclaimed; one that expires after WATCH does.
    expired_at_watch: bool,
}

/// Per-client state.
#[derive(Debug, Default)]
pub(crate) struct Session {
    pub(crate) db: usize,
    multi: Option<Vec<Queued>>,
    /// A command was refused while queueing: EXEC must abort.
    multi_failed: bool,
    watched: Vec<Watched>,
}

impl Session {
    /// Executes one command with the store locked. Transaction control
    /// (MULTI/EXEC/DISCARD/WATCH) is handled here; everything else goes
    /// through the command table.
    pub(crate) fn execute(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> Reply {
        match self.execute_inner(store, args, now) {
            Ok(r) => r,
            Err(e) => e.to_value(),
        }
    }

    /// Whether the client is between MULTI and EXEC (the RESP server
    /// answers CLIENT and HELLO itself only outside a transaction).
    pub(crate) fn in_transaction(&self) -> bool {
        self.multi.is_some()
    }

    fn execute_inner(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> command::CmdResult {
        let Some(name) = args.first() else {
            return Err(CmdError::err("empty command"));
        };
        let control = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if control("multi") {
            return self.multi(args);
        }
        if control("exec") {
            return self.exec(store, args, now);
        }
        if control("discard") {
            return self.discard(store, args);
        }
        if control("watch") {
            return self.watch(store, args, now);
        }
        if let Some(queue) = self.multi.as_mut() {
            // Redis checks existence and arity when queueing; a failure
            // there dooms the whole transaction.
            let checked = command::lookup(name)
                .ok_or_else(|| command::unknown_command(args))
                .and_then(|spec| {
                    if spec.arity_ok(args.len()) {
                        Ok(())
                    } else {
                        Err(command::wrong_arity(spec))
                    }
                });
            if let Err(e) = checked {
                self.multi_failed = true;
                return Err(e);
            }
            queue.push(args.iter().map(|a| a.to_vec()).collect());
            return Ok(reply::simple("QUEUED"));
        }
        if control("unwatch") {
            if args.len() != 1 {
                return Err(CmdError::err(
                    "wrong number of arguments for 'unwatch' command",
                ));
            }
            self.unwatch_all(store);
            return Ok(reply::ok());
        }
        self.run(store, args, now)
    }

    fn run(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> command::CmdResult {
        let mut ctx = Ctx {
            store,
            db: self.db,
            now,
        };
        let result = command::run(&mut ctx, args);
        // SELECT (possibly queued in a transaction) changes the database.
        self.db = ctx.db;
        result
    }

    fn multi(&mut self, args: &[&[u8]]) -> command::CmdResult {
        if args.len() != 1 {
            return Err(CmdError::err(
                "wrong number of arguments for 'multi' command",
            ));
        }
        if self.multi.is_some() {
            return Err(CmdError::err("MULTI calls can not be nested"));
        }
        self.multi = Some(Vec::new());
        self.multi_failed = false;
        Ok(reply::ok())
    }

    fn discard(&mut self, store: &mut Store, args: &[&[u8]]) -> command::CmdResult {
        if args.len() != 1 {
            return Err(CmdError::err(
                "wrong number of arguments for 'discard' command",
            ));
        }
        if self.multi.take().is_none() {
            return Err(CmdError::err("DISCARD without MULTI"));
        }
        self.multi_failed = false;
        self.unwatch_all(store);
        Ok(reply::ok())
    }

    fn watch(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> command::CmdResult {
        if args.len() < 2 {
            return Err(CmdError::err(
                "wrong number of arguments for 'watch' command",
            ));
        }
        if self.multi.is_some() {
            return Err(CmdError::err("WATCH inside MULTI is not allowed"));
        }
        for key in &args[1..] {
            if self
                .watched
                .iter()
                .any(|w| w.db == self.db && &w.key[..] == *key)
            {
                continue;
            }
            let ks = &mut store.dbs[self.db];
            let expired_at_watch = ks.is_logically_expired(key, now);
            let epoch = ks.watch(key);
            self.watched.push(Watched {
                db: self.db,
                key: Key::from(*key),
                epoch,
                expired_at_watch,
            });
        }
        Ok(reply::ok())
    }

    fn exec(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> command::CmdResult {
        if args.len() != 1 {
            return Err(CmdError::err(
                "wrong number of arguments for 'exec' command",
            ));
        }
        let Some(queue) = self.multi.take() else {
            return Err(CmdError::err("EXEC without MULTI"));
        };
        if std::mem::take(&mut self.multi_failed) {
            self.unwatch_all(store);
            return Err(CmdError::raw(
                "EXECABORT Transaction discarded because of previous errors.",
            ));
        }
        let dirty = self.watched.iter().any(|w| {
            let ks = &store.dbs[w.db];
            ks.watch_epoch(&w.key) != w.epoch
                || (!w.expired_at_watch && ks.is_logically_expired(&w.key, now))
        });
        self.unwatch_all(store);
        if dirty {
            return Ok(reply::nil());
        }
        let replies = queue
            .iter()
            .map(|cmd| {
                let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
                match self.run(store, &args, now) {
                    Ok(r) => r,
                    Err(e) => e.to_value(),
                }
            })
            .collect();
        Ok(reply::array(replies))
    }

    /// Forgets every watched key (UNWATCH, EXEC, DISCARD, disconnect).
    pub(crate) fn unwatch_all(&mut self, store: &mut Store) {
        for w in self.watched.drain(..) {
            if w.db < DATABASES {
                store.dbs[w.db].unwatch(&w.key);
            }
        }
    }

    /// Whether the session holds state that must be released on the store.
    pub(crate) fn has_watches(&self) -> bool {
        !self.watched.is_empty()
    }
}
