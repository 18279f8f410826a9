//! One client's view of the engine: its selected database, its MULTI queue
//! and its WATCHed keys. The RESP server keeps one per TCP connection; the
//! in-process [`Connection`](super::Connection) holds one too.

use std::sync::Arc;

use redis::Value as Reply;

use super::acl::log::{Context, Entry, Reason};
use super::acl::Caller;

use super::command::blocking::{self, BlockSlot, Parked};
use super::command::{self, arity_ok, Ctx, Spec};
use super::command::{Store, DATABASES};
use super::command_table;
use super::error::CmdError;
use super::keyspace::Key;
use super::reply;

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

/// The arity of the commands the session handles itself, in the command
/// table's notation (`n` exactly, `-n` at least n).
fn control_arity(name: &[u8]) -> Option<(&'static str, i32)> {
    const CONTROL: &[(&str, i32)] = &[
        ("multi", 1),
        ("exec", 1),
        ("discard", 1),
        ("watch", -2),
        ("unwatch", 1),
        ("reset", 1),
    ];
    CONTROL
        .iter()
        .copied()
        .find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes()))
}

/// Per-client state.
#[derive(Debug, Default)]
pub(crate) struct Session {
    pub(crate) db: usize,
    multi: Option<Vec<Queued>>,
    /// A command was refused while queueing: EXEC must abort.
    multi_failed: bool,
    watched: Vec<Watched>,
    /// A transaction was discarded while a script held the store (EXEC
    /// refused BUSY): its watches go at the next command.
    unwatch_pending: bool,
    /// The protocol the client speaks: 2 until `HELLO 3` (0 is read as 2,
    /// for `Default`).
    resp: u8,
    /// Whether the command being run may block (a top-level command of a
    /// client that can wait).
    may_block: bool,
    /// The command just run blocked: its waiter.
    parked: Option<Parked>,
    /// The client's ACL user; `None` for `default`.
    user: Option<Arc<[u8]>>,
    /// Whether the client has authenticated; `None` until its first
    /// command, when it starts authenticated if `default` needs no
    /// password (Redis decides when the client connects).
    authenticated: Option<bool>,
    /// EXEC is running the queue (ACL LOG's context `multi`).
    in_exec: bool,
    /// The client's id (CLIENT ID), for ACL LOG's `client-info`.
    pub(crate) client_id: u64,
    /// The RESP server has already run [`Self::guard`] for this request.
    guarded: bool,
    /// The RESP connection's address (`ip:port`), as MONITOR shows it;
    /// `None` for an in-process client.
    pub(crate) peer: Option<String>,
    /// The RESP connection's part in the EXEC being run, lent for it.
    pub(crate) exec_host: Option<Box<dyn ExecHost>>,
}

/// A RESP connection's part in an EXEC whose queue holds commands the
/// connection runs itself (SUBSCRIBE and the like, which change the
/// connection rather than the data), lent to its session for that EXEC.
/// Redis writes each queued command's reply as the command runs, and a
/// subscription's confirmations (one per channel), or a message the
/// connection receives meanwhile, go into EXEC's reply where they happen:
/// the host writes the whole reply.
// Only the RESP server (feature `server`) lends one.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) trait ExecHost: std::fmt::Debug + Send {
    /// Whether the connection runs `args` itself.
    fn owns(&self, args: &[&[u8]]) -> bool;
    /// Runs one of the connection's own commands, writing its reply.
    fn run(&mut self, store: &mut Store, args: &[&[u8]]);
    /// Writes the reply of a queued command the session ran (after what
    /// the connection received while it ran).
    fn reply(&mut self, args: &[&[u8]], reply: &Reply);
    /// The host again, to be taken apart by the connection.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}

/// A client's command held back by CLIENT PAUSE (see [`Session::paused`]).
pub(crate) struct Paused {
    /// The pause's end, and when it was seen, Unix ms on the engine's
    /// clock.
    pub(crate) until: i64,
    pub(crate) seen_at: i64,
    /// Ready when CLIENT UNPAUSE lifts the pause.
    pub(crate) unpaused: tokio::sync::futures::OwnedNotified,
}

impl Paused {
    /// Waits, without the store's lock, until the pause ends or is lifted.
    /// The caller then asks again: another pause may have begun.
    pub(crate) async fn wait(self) {
        let left = u64::try_from(self.until.saturating_sub(self.seen_at)).unwrap_or(0);
        let _ = tokio::time::timeout(std::time::Duration::from_millis(left), self.unpaused).await;
    }
}

/// What a command run by a client that can wait came to.
pub(crate) enum Outcome {
    /// The reply, to send now.
    Reply(Reply),
    /// The command blocked (BLPOP on empty lists...): the client waits for
    /// its reply on the waiter (see [`crate::command::blocking`]).
    Blocked(Parked),
}

impl Session {
    /// Executes one command with the store locked. Transaction control
    /// (MULTI/EXEC/DISCARD/WATCH) is handled here; everything else goes
    /// through the command table. A blocking command does not block here:
    /// it answers as if it had timed out, as inside MULTI.
    pub(crate) fn execute(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> Reply {
        match self.execute_or_block(store, args, now, false) {
            Outcome::Reply(reply) => reply,
            // Not allowed to block: no waiter was registered.
            Outcome::Blocked(_) => Reply::Nil,
        }
    }

    /// [`Self::execute`] for a client that can wait: a blocking command
    /// that finds nothing to take parks the client (if `may_block`). Then,
    /// as Redis after every command, serves the clients blocked on the keys
    /// this command made ready.
    pub(crate) fn execute_or_block(
        &mut self,
        store: &mut Store,
        args: &[&[u8]],
        now: i64,
        may_block: bool,
    ) -> Outcome {
        self.may_block = may_block;
        store.tracking_before_command(self.client_id);
        let reply = match self.execute_inner(store, args, now) {
            Ok(r) => r,
            Err(e) => e.to_value(),
        };
        store.aof_flush_unit();
        let exec = args
            .first()
            .is_some_and(|n| n.eq_ignore_ascii_case(b"exec"));
        store.command_stats.record_errors(&reply, exec);
        store.sample_expire_dels(now);
        // Keys the command expired outside the command table (WATCH, EXEC).
        store.flush_notifications();
        self.may_block = false;
        blocking::serve_ready(store, now);
        // What the served clients' pops raised.
        store.flush_notifications();
        store.tracking_after_command(self.client_id, self.multi.is_some());
        match self.parked.take() {
            Some(parked) => Outcome::Blocked(parked),
            None => Outcome::Reply(reply),
        }
    }

    /// How many keys the client watches (CLIENT LIST's `watch`).
    #[cfg(feature = "server")]
    pub(crate) fn watched(&self) -> usize {
        self.watched.len()
    }

    /// The protocol the client speaks, 2 or 3.
    pub(crate) fn resp(&self) -> u8 {
        self.resp.max(2)
    }

    /// Switches the protocol (HELLO).
    pub(crate) fn set_resp(&mut self, resp: u8) {
        self.resp = resp;
    }

    /// A command refused without the store (BUSY: a script holds it), as
    /// [`Self::reject`] refuses with it: inside MULTI it dooms the
    /// transaction, and a refused EXEC, in a transaction or not, discards
    /// it (the WATCHes are dropped once the store is free) with EXECABORT
    /// and the refusal.
    #[cfg(feature = "server")]
    pub(crate) fn refused_unlocked(&mut self, is_exec: bool, refusal: &str) -> String {
        if is_exec {
            self.multi = None;
            self.multi_failed = false;
            self.unwatch_pending = true;
            return format!("EXECABORT Transaction discarded because of: {refusal}");
        }
        if self.multi.is_some() {
            self.multi_failed = true;
        }
        refusal.to_string()
    }

    /// MULTI and DISCARD while a script holds the store: Redis lets them
    /// through (`allow_busy`), as they need no data. `None` for any other
    /// command.
    #[cfg(feature = "server")]
    pub(crate) fn control_unlocked(&mut self, args: &[&[u8]]) -> Option<Reply> {
        let [name] = args else {
            return None;
        };
        let result = if name.eq_ignore_ascii_case(b"multi") {
            self.multi()
        } else if name.eq_ignore_ascii_case(b"discard") {
            if self.multi.is_none() {
                Err(CmdError::err("DISCARD without MULTI"))
            } else {
                self.multi = None;
                self.multi_failed = false;
                self.unwatch_pending = true;
                Ok(reply::ok())
            }
        } else {
            return None;
        };
        Some(result.unwrap_or_else(|e| e.to_value()))
    }

    /// Whether the client is between MULTI and EXEC (the RESP server
    /// answers CLIENT and HELLO itself only outside a transaction).
    pub(crate) fn in_transaction(&self) -> bool {
        self.multi.is_some()
    }

    /// Whether CLIENT PAUSE holds the command `args` of this client back:
    /// until when, and what ends the wait early (CLIENT UNPAUSE), taken
    /// under the store's lock so that no UNPAUSE is missed. `None`: the
    /// command runs now. The clock is read only while a pause is set; one
    /// that has ended by time is lifted here.
    pub(crate) fn paused(
        &self,
        store: &mut Store,
        args: &[&[u8]],
        clock: impl FnOnce() -> i64,
    ) -> Option<Paused> {
        if !store.pause.is_on() {
            return None;
        }
        let now = clock();
        if store.pause.ended(now) {
            store.unpause_clients();
            return None;
        }
        let queued_write = || {
            self.multi.as_ref().is_some_and(|queue| {
                queue.iter().any(|q| {
                    let args: Vec<&[u8]> = q.iter().map(Vec::as_slice).collect();
                    command::pause::may_change_data(&args)
                })
            })
        };
        let until = store.pause.holds(args, queued_write, now)?;
        Some(Paused {
            until,
            seen_at: now,
            unpaused: store.pause.changed().notified_owned(),
        })
    }

    /// The client's ACL user name (CLIENT LIST's `user`).
    pub(crate) fn user_name(&self) -> &[u8] {
        self.user.as_deref().unwrap_or(b"default")
    }

    fn authenticated(&mut self, store: &Store) -> bool {
        *self
            .authenticated
            .get_or_insert_with(|| store.acl.starts_authenticated())
    }

    /// Lends the client's identity to the store for one command (AUTH
    /// changes it, ACL WHOAMI and scripts read it).
    fn enter(&mut self, store: &mut Store) {
        let authenticated = self.authenticated(store);
        store.acl.caller = Caller {
            user: self.user.clone(),
            authenticated,
            in_multi: self.multi.is_some() || self.in_exec,
            client_id: self.client_id,
        };
    }

    /// Takes the identity back after the command.
    fn leave(&mut self, store: &mut Store) {
        let caller = std::mem::take(&mut store.acl.caller);
        self.user = caller.user;
        self.authenticated = Some(caller.authenticated);
    }

    /// A login outside the command table (HELLO AUTH): `Some((user,
    /// password))` tries it (`object` is the command, for ACL LOG);
    /// `None` asks whether the client is authenticated.
    pub(crate) fn login(
        &mut self,
        store: &mut Store,
        object: &[u8],
        login: Option<(&[u8], &[u8])>,
        now: i64,
    ) -> bool {
        let Some((user, password)) = login else {
            return self.authenticated(store);
        };
        self.enter(store);
        let ok = store.acl.authenticate(object, user, password, now);
        self.leave(store);
        ok
    }

    /// Redis's checks of `processCommand` on who may run what: NOAUTH for
    /// a client that must authenticate first, NOPERM (logged in ACL LOG)
    /// for what its user may not run. Free for the `default` user with
    /// every permission. A command that does not exist, or with a wrong
    /// argument count, passes: its own error comes later.
    pub(crate) fn guard(
        &mut self,
        store: &mut Store,
        args: &[&[u8]],
        now: i64,
    ) -> Result<(), CmdError> {
        if !store.acl.is_open(self.user.as_deref()) {
            self.check_access(store, args, now, false)?;
        }
        store.evict(now);
        self.check_memory(store, args)?;
        self.check_replicas(store, args)
    }

    /// Redis's `min-replicas-to-write` check in `processCommand`: the
    /// engine has no replicas, so with the setting above 0 it refuses a
    /// write command (NOREPLICAS), an EXEC of one, and one queued in a
    /// transaction (which dooms it). A script is checked as it runs.
    fn check_replicas(&self, store: &Store, args: &[&[u8]]) -> Result<(), CmdError> {
        if store.dbs[self.db].limits().min_replicas {
            return self.check_replicas_short(args);
        }
        Ok(())
    }

    /// [`Self::check_replicas`] with too few replicas.
    #[cold]
    #[inline(never)]
    fn check_replicas_short(&self, args: &[&[u8]]) -> Result<(), CmdError> {
        let Some(meta) = command_table::of_line(args) else {
            return Ok(());
        };
        let writes =
            meta.has_flag("write") || (meta.name == "exec" && self.queued_with_flag("write"));
        if writes {
            return Err(CmdError::raw(command::script::NO_REPLICAS));
        }
        Ok(())
    }

    /// Redis's `maxmemory` check in `processCommand`, after its evictions:
    /// over the limit, a command that may grow the data (`denyoom`, or an
    /// EXEC of one) is refused, and so is any command queued in a
    /// transaction but EXEC, DISCARD, QUIT and RESET.
    fn check_memory(&self, store: &mut Store, args: &[&[u8]]) -> Result<(), CmdError> {
        if store.out_of_memory() {
            return self.check_memory_over(store, args);
        }
        Ok(())
    }

    /// [`Self::check_memory`] over the limit.
    #[cold]
    #[inline(never)]
    fn check_memory_over(&self, store: &mut Store, args: &[&[u8]]) -> Result<(), CmdError> {
        let Some(meta) = command_table::of_line(args) else {
            return Ok(());
        };
        let is_exec = meta.name == "exec";
        let denyoom = command::script::declared_denyoom(store, args)
            .unwrap_or_else(|| meta.has_flag("denyoom"));
        let denied = denyoom
            || (is_exec && self.queued_with_flag("denyoom"))
            || (self.multi.is_some()
                && !matches!(meta.name, "exec" | "discard" | "quit" | "reset"));
        if denied {
            return Err(CmdError::raw(command::maxmemory::OOM));
        }
        Ok(())
    }

    /// Whether a command queued in the open transaction has `flag`: an
    /// EXEC is refused as its commands would be.
    fn queued_with_flag(&self, flag: &str) -> bool {
        self.multi.iter().flatten().any(|queued| {
            let line: Vec<&[u8]> = queued.iter().map(Vec::as_slice).collect();
            command_table::of_line(&line).is_some_and(|m| m.has_flag(flag))
        })
    }

    /// The RESP server checked the request about to run.
    #[cfg(feature = "server")]
    pub(crate) fn guarded(&mut self) {
        self.guarded = true;
    }

    /// [`Self::guard`]'s slow path; `at_exec` for a queued command that
    /// EXEC checks again (no NOAUTH, Redis's other error text).
    #[cold]
    fn check_access(
        &mut self,
        store: &mut Store,
        args: &[&[u8]],
        now: i64,
        at_exec: bool,
    ) -> Result<(), CmdError> {
        let Some(meta) = command_table::of_line(args) else {
            return Ok(());
        };
        if !arity_ok(meta.arity, args.len()) {
            return Ok(());
        }
        let authenticated = self.authenticated(store);
        if !at_exec && store.acl.auth_required(authenticated) && !meta.has_flag("no_auth") {
            return Err(CmdError::raw("NOAUTH Authentication required."));
        }
        let Some(user) = store.acl.user_of(self.user.as_deref()) else {
            // A deleted user's in-process client falls back to `default`,
            // not authenticated (a RESP connection is closed instead).
            if self.user.take().is_some() {
                self.authenticated = Some(false);
                return self.check_access(store, args, now, at_exec);
            }
            return Ok(());
        };
        let Err(denied) = user.check(meta, args) else {
            return Ok(());
        };
        let object = denied.object(meta, args);
        let context = if self.multi.is_some() || at_exec {
            Context::Multi
        } else {
            Context::Toplevel
        };
        self.enter(store);
        let entry = Entry::new(
            Reason::of(denied),
            context,
            object,
            self.user_name(),
            &store.acl.caller,
            now,
        );
        self.leave(store);
        store.acl.logged(entry);
        if at_exec {
            let reason = match denied {
                crate::acl::Denied::Command => "no permission to execute the command or subcommand",
                crate::acl::Denied::Key(_) => "no permission to touch the specified keys",
                crate::acl::Denied::Channel(_) => {
                    "no permission to access one of the channels used as arguments"
                }
            };
            return Err(CmdError::raw(format!(
                "NOPERM ACLs rules changed between the moment the transaction was accumulated \
                 and the EXEC call. This command is no longer allowed for the following \
                 reason: {reason}"
            )));
        }
        Err(CmdError::raw(denied.error(
            meta.name,
            self.user_name(),
            store.version,
        )))
    }

    fn execute_inner(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> command::CmdResult {
        if std::mem::take(&mut self.unwatch_pending) {
            self.unwatch_all(store);
        }
        let Some(name) = args.first() else {
            return Err(CmdError::err("empty command"));
        };
        let control = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        // Redis checks existence and arity of every command before anything
        // else; a refusal there dooms an open transaction (and a refused
        // EXEC discards it).
        if let Some((cname, arity)) = control_arity(name) {
            if !arity_ok(arity, args.len()) {
                let why = format!("wrong number of arguments for '{cname}' command");
                let e = CmdError::err(why.clone());
                return Err(self.reject(store, args, cname == "exec", e, &why));
            }
        } else if self.multi.is_some() {
            self.check_queueable(store, name, args)?;
        }
        let checked = if std::mem::take(&mut self.guarded) {
            Ok(())
        } else {
            self.guard(store, args, now)
        };
        if let Err(e) = checked {
            let why = e.text().to_string();
            return Err(self.reject(store, args, control("exec"), e, &why));
        }
        if store.cluster_enabled {
            self.check_slots(store, args, control("exec"))?;
        }
        if let Some((cname, _)) = control_arity(name).filter(|(c, _)| *c != "unwatch") {
            let started = std::time::Instant::now();
            let result = match cname {
                "reset" => Ok(self.reset(store)),
                "multi" => self.multi(),
                "exec" => self.exec(store, now),
                "discard" => self.discard(store),
                _ => self.watch(store, args, now),
            };
            // Counted as Redis counts every command it calls (INFO
            // commandstats); the commands an EXEC ran count themselves.
            store.command_stats.record_control(cname, result.is_err());
            self.feed_monitors(store, args);
            self.timed(store, args, started.elapsed(), now);
            return result;
        }
        if let Some(queue) = self.multi.as_mut() {
            // UNWATCH is queued too (it is a no-op by then: EXEC unwatches
            // everything before it runs the queue).
            queue.push(args.iter().map(|a| a.to_vec()).collect());
            return Ok(reply::simple("QUEUED"));
        }
        self.run(store, args, now)
    }

    /// In a transaction, whether `args` (the command `name`) may be
    /// queued: a command Redis has, with a right arity, and none of SAVE,
    /// SHUTDOWN, SYNC, PSYNC (`no_multi`, refused whether or not the
    /// engine has them). A refusal dooms the transaction.
    #[inline(never)]
    fn check_queueable(
        &mut self,
        store: &mut Store,
        name: &[u8],
        args: &[&[u8]],
    ) -> Result<(), CmdError> {
        let no_multi = command_table::lookup(name)
            .filter(|m| m.has_flag("no_multi") && arity_ok(m.arity, args.len()));
        let checked = match no_multi {
            Some(_) => Err(CmdError::err("Command not allowed inside a transaction")),
            None => command::lookup_in(name, store.version)
                .ok_or_else(|| command::unknown_command(args)),
        }
        .and_then(|spec| {
            if spec.arity_ok(args.len()) {
                Ok(())
            } else {
                Err(command::wrong_arity(spec))
            }
        });
        checked.map_err(|e| {
            let why = e.text().to_string();
            self.reject(store, args, false, e, &why)
        })
    }

    /// Cluster mode: the keys of this command, or for EXEC of every queued
    /// one, must be in one slot. A refused command dooms the transaction;
    /// a refused EXEC discards it.
    #[cold]
    fn check_slots(
        &mut self,
        store: &mut Store,
        args: &[&[u8]],
        is_exec: bool,
    ) -> Result<(), CmdError> {
        let result = match (&self.multi, is_exec) {
            (Some(queue), true) => {
                let lines: Vec<Vec<&[u8]>> = queue
                    .iter()
                    .map(|cmd| cmd.iter().map(Vec::as_slice).collect())
                    .collect();
                crate::cluster::slot_of(lines.iter().map(Vec::as_slice))
            }
            _ => crate::cluster::slot_of([args]),
        };
        let Err(err) = result else {
            return Ok(());
        };
        store.command_stats.record_rejected(args);
        if is_exec && self.multi.is_some() {
            self.discard_transaction(store);
        } else if self.multi.is_some() {
            self.multi_failed = true;
        }
        Err(err)
    }

    /// Redis's `rejectCommand`: the command `args`, refused with `e`, is
    /// counted as rejected and flags an open transaction as failed; a
    /// refused EXEC (`is_exec`), in a transaction or not, discards it (and
    /// the WATCHes) and says why (`why`: `e` as EXECABORT words it, without
    /// the `ERR` of a refusal Redis formats).
    #[cold]
    #[inline(never)]
    fn reject(
        &mut self,
        store: &mut Store,
        args: &[&[u8]],
        is_exec: bool,
        e: CmdError,
        why: &str,
    ) -> CmdError {
        store.command_stats.record_rejected(args);
        if self.multi.is_some() {
            self.multi_failed = true;
        }
        if !is_exec {
            return e;
        }
        self.discard_transaction(store);
        CmdError::raw(format!("EXECABORT Transaction discarded because of: {why}"))
    }

    /// RESET, run at once even inside MULTI: no transaction, no WATCH,
    /// database 0, RESP2 (the connection's name is its owner's to clear).
    fn reset(&mut self, store: &mut Store) -> Reply {
        self.discard_transaction(store);
        self.db = 0;
        self.resp = 2;
        // Back to the default user, authenticated only if it needs no
        // password (Redis's `clientSetDefaultAuth`).
        self.user = None;
        self.authenticated = Some(store.acl.starts_authenticated());
        reply::simple("RESET")
    }

    /// Redis's `discardTransaction`: no MULTI, no failure flag, no WATCH.
    fn discard_transaction(&mut self, store: &mut Store) {
        self.multi = None;
        self.multi_failed = false;
        self.unwatch_all(store);
    }

    /// Runs a command that is not transaction control (UNWATCH included:
    /// it may come from an EXEC's queue).
    fn run(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> command::CmdResult {
        // Redis's description of the command, if it runs (a command the
        // engine has, with a right arity): what MONITOR shows and LATENCY
        // counts.
        let (spec, meta) = command::described(args, store.version);
        // A command described as the version has it is the one that runs:
        // found once, not looked up again by name.
        let found = spec.filter(|_| meta.is_some());
        let meta = match (spec, meta) {
            (Some(_), meta) => meta,
            (None, meta) if args.first().is_some_and(|n| control_arity(n).is_some()) => meta,
            (None, _) => None,
        }
        .filter(|m| arity_ok(m.arity, args.len()));
        let monitored = meta.filter(|_| !store.monitors.is_empty());
        // A script's command (EVAL, FCALL) is shown before its calls.
        if monitored.is_some_and(|m| m.has_flag("skip_monitor")) {
            let source = self.monitor_source();
            store.monitors.feed_always(self.db, source, args);
        }
        let started = std::time::Instant::now();
        let result = self.run_untimed(store, args, now, found);
        let took = started.elapsed();
        if let Some(meta) = monitored {
            let source = self.monitor_source();
            store.monitors.feed(meta, self.db, source, args);
        }
        let Some(meta) = meta else {
            return result;
        };
        // A command that blocked is timed and logged once served, its
        // wait left out (see `blocking`).
        if let Some(parked) = &self.parked {
            let addr = self.peer.clone().unwrap_or_default();
            blocking::time_waiter(store, parked.id(), meta, args, took, addr);
            return result;
        }
        store.latency.command(meta, took, now);
        if store.slowlog.is_slow(took) {
            store
                .slowlog
                .record(args, took, now, self.in_process_addr());
        }
        result
    }

    /// Whether the open transaction's queue holds a command `which` picks
    /// by its name.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn queues(&self, which: impl Fn(&[u8]) -> bool) -> bool {
        self.multi.as_ref().is_some_and(|queue| {
            queue
                .iter()
                .any(|cmd| cmd.first().is_some_and(|n| which(n)))
        })
    }

    /// Times a command the session runs itself (MULTI, EXEC...) or the
    /// RESP server does (CLIENT, HELLO...), which ran for `took`: its
    /// latency histogram and event, and SLOWLOG.
    pub(crate) fn timed(
        &self,
        store: &mut Store,
        args: &[&[u8]],
        took: std::time::Duration,
        now: i64,
    ) {
        let Some(meta) = command_table::of_line(args) else {
            return;
        };
        if arity_ok(meta.arity, args.len()) {
            store.latency.command(meta, took, now);
            store
                .slowlog
                .record(args, took, now, self.in_process_addr());
        }
    }

    /// Feeds the command `args`, which this client ran (the RESP
    /// server's own commands: CLIENT, HELLO, QUIT...), to the monitors
    /// (`crate::monitor`), unless Redis would have refused it (an unknown
    /// command or subcommand, a wrong arity).
    pub(crate) fn feed_monitors(&self, store: &mut Store, args: &[&[u8]]) {
        if store.monitors.is_empty() {
            return;
        }
        let Some(meta) = command_table::of_line(args) else {
            return;
        };
        if arity_ok(meta.arity, args.len()) {
            let source = self.monitor_source();
            store.monitors.feed(meta, self.db, source, args);
        }
    }

    /// Who this client is on a MONITOR line: its address, `?:0` (Redis's
    /// address of a client without a socket) in process.
    fn monitor_source(&self) -> crate::monitor::Source<'_> {
        crate::monitor::Source::Client(self.peer.as_deref().unwrap_or("?:0"))
    }

    /// The address SLOWLOG shows for this client: none for an in-process
    /// one; `None` for a RESP connection, which fills in its own.
    fn in_process_addr(&self) -> Option<&'static str> {
        (self.client_id == 0).then_some("")
    }

    /// [`Self::run`] without SLOWLOG's timing; `found`, the command's
    /// spec if the caller looked it up already.
    fn run_untimed(
        &mut self,
        store: &mut Store,
        args: &[&[u8]],
        now: i64,
        found: Option<&'static Spec>,
    ) -> command::CmdResult {
        if args
            .first()
            .is_some_and(|name| name.eq_ignore_ascii_case(b"unwatch"))
        {
            self.unwatch_all(store);
            store.command_stats.record_control("unwatch", false);
            return Ok(reply::ok());
        }
        let mut ctx = Ctx {
            store,
            db: self.db,
            now,
            block: if self.may_block {
                BlockSlot::Allowed
            } else {
                BlockSlot::Denied
            },
            resp: self.resp(),
        };
        // The command sees its client's identity (a few words moved).
        self.enter(ctx.store);
        let result = command::run_found(&mut ctx, args, found);
        // A command that blocks keeps who sent it (see `blocking`).
        let caller =
            matches!(ctx.block, BlockSlot::Requested(_)).then(|| ctx.store.acl.caller.clone());
        self.leave(ctx.store);
        // SELECT (possibly queued in a transaction) changes the database.
        self.db = ctx.db;
        if let BlockSlot::Requested(block) = ctx.block {
            let command = args.first().and_then(|name| command::lookup(name));
            self.parked = Some(blocking::park(ctx.store, self.db, *block, command, caller));
        }
        result
    }

    fn multi(&mut self) -> command::CmdResult {
        if self.multi.is_some() {
            return Err(CmdError::err("MULTI calls can not be nested"));
        }
        self.multi = Some(Vec::new());
        self.multi_failed = false;
        Ok(reply::ok())
    }

    fn discard(&mut self, store: &mut Store) -> command::CmdResult {
        if self.multi.is_none() {
            return Err(CmdError::err("DISCARD without MULTI"));
        }
        self.discard_transaction(store);
        Ok(reply::ok())
    }

    fn watch(&mut self, store: &mut Store, args: &[&[u8]], now: i64) -> command::CmdResult {
        if self.multi.is_some() {
            return Err(CmdError::err("WATCH inside MULTI is not allowed"));
        }
        if self.watched.is_empty() {
            store.watching_clients += 1;
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

    fn exec(&mut self, store: &mut Store, now: i64) -> command::CmdResult {
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
            // Watched as expired: already expired when watched, or put
            // there expired by a SWAPDB.
            let expired = w.expired_at_watch || ks.watched_as_expired(&w.key);
            // A key watched as expired is no change when it is reclaimed
            // (Redis clears its `expired` mark then).
            let changed = ks.watch_epoch(&w.key) != w.epoch
                && !(expired && ks.only_reclaimed_since(&w.key, w.epoch));
            changed || (!expired && ks.is_logically_expired(&w.key, now))
        });
        self.unwatch_all(store);
        if dirty {
            return Ok(reply::nil());
        }
        // Redis denies blocking inside EXEC (`CLIENT_DENY_BLOCKING`).
        self.may_block = false;
        self.in_exec = true;
        // Held apart while the queue runs, as `self` runs the others.
        let mut host = self.exec_host.take();
        let replies = queue
            .iter()
            .map(|cmd| {
                let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
                // ACL is checked again: the rules may have changed since
                // the command was queued.
                let allowed = if store.acl.is_open(self.user.as_deref()) {
                    Ok(())
                } else {
                    self.check_access(store, &args, now, true)
                };
                if let Some(own) = host.as_mut().filter(|h| allowed.is_ok() && h.owns(&args)) {
                    let started = std::time::Instant::now();
                    own.run(store, &args);
                    self.timed(store, &args, started.elapsed(), now);
                    self.feed_monitors(store, &args);
                    return Reply::Nil;
                }
                let reply = match allowed.and_then(|()| self.run(store, &args, now)) {
                    Ok(r) => r,
                    Err(e) => e.to_value(),
                };
                if let Some(host) = host.as_mut() {
                    host.reply(&args, &reply);
                }
                reply
            })
            .collect();
        self.exec_host = host;
        self.in_exec = false;
        Ok(reply::array(replies))
    }

    /// Forgets every watched key (UNWATCH, EXEC, DISCARD, disconnect).
    pub(crate) fn unwatch_all(&mut self, store: &mut Store) {
        if !self.watched.is_empty() {
            store.watching_clients = store.watching_clients.saturating_sub(1);
        }
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

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::Engine;

    fn ok_or_queued(v: &Value) -> bool {
        matches!(v, Value::Okay) || *v == Value::SimpleString("QUEUED".into())
    }

    /// Redis 7.0 queues UNWATCH inside MULTI and answers OK for it in EXEC.
    #[test]
    fn unwatch_is_queued_inside_multi() {
        let engine = Engine::new();
        let mut c = engine.connection();
        assert_eq!(c.execute(&[b"MULTI"]), Value::Okay);
        let queued = c.execute(&[b"UNWATCH"]);
        assert!(ok_or_queued(&queued) && queued != Value::Okay, "{queued:?}");
        assert_eq!(c.execute(&[b"EXEC"]), Value::Array(vec![Value::Okay]));
    }

    /// UNWATCH with an argument inside MULTI is refused and dooms EXEC.
    #[test]
    fn unwatch_arity_error_inside_multi_aborts_exec() {
        let engine = Engine::new();
        let mut c = engine.connection();
        c.execute(&[b"MULTI"]);
        let err = c.execute(&[b"UNWATCH", b"k"]);
        assert!(matches!(err, Value::ServerError(_)), "{err:?}");
        let exec = c.execute(&[b"EXEC"]);
        match exec {
            Value::ServerError(e) => assert_eq!(e.code(), "EXECABORT"),
            other => panic!("{other:?}"),
        }
    }

    fn error_text(v: &Value) -> String {
        match v {
            Value::ServerError(e) => format!("{} {}", e.code(), e.details().unwrap_or("")),
            other => panic!("not an error: {other:?}"),
        }
    }

    /// Redis 7.0.15: an arity error of a transaction-control command inside
    /// MULTI dooms the transaction; a refused EXEC discards it, saying why.
    #[test]
    fn control_arity_errors_flag_the_transaction() {
        let engine = Engine::new();
        let mut c = engine.connection();
        c.execute(&[b"MULTI"]);
        let err = c.execute(&[b"MULTI", b"x"]);
        assert_eq!(
            error_text(&err),
            "ERR wrong number of arguments for 'multi' command"
        );
        assert_eq!(
            error_text(&c.execute(&[b"EXEC"])),
            "EXECABORT Transaction discarded because of previous errors."
        );
        c.execute(&[b"MULTI"]);
        assert_eq!(
            error_text(&c.execute(&[b"EXEC", b"x"])),
            "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"
        );
        // The transaction is gone.
        assert_eq!(error_text(&c.execute(&[b"EXEC"])), "ERR EXEC without MULTI");
        c.execute(&[b"MULTI"]);
        c.execute(&[b"WATCH"]);
        assert_eq!(
            error_text(&c.execute(&[b"EXEC"])).split(' ').next(),
            Some("EXECABORT")
        );
    }
}
