//! Blocked clients: BLPOP and the other commands that wait for a key to
//! receive data, as Redis 7.0.15's blocked.c serves them.
//!
//! # How a command blocks
//! A command that finds nothing to take calls [`block`] with the keys it
//! waits on, its timeout ([`parse_timeout`] reads seconds as BLPOP does,
//! [`parse_timeout_ms`] milliseconds as XREAD's BLOCK) and a *serve*
//! function, and returns what that call returns. [`block`] decides:
//! - when blocking is denied (inside MULTI/EXEC, inside a script, or while
//!   serving another waiter), the command answers at once as if it had
//!   timed out: nil, as Redis's `CLIENT_DENY_BLOCKING` does;
//! - otherwise the client is parked: the session registers a waiter for it
//!   in every key's queue, in the store, and the client (the RESP server's
//!   task, or the in-process [`Connection`](crate::Connection)'s future)
//!   waits on a [`Ticket`] *without holding the engine's lock*, until it is
//!   served, times out, is unblocked by CLIENT UNBLOCK, or goes away.
//!
//! # The contract of a serve function
//! `FnMut(&mut Ctx, key) -> Option<CmdResult>`, `Send`, owning what it needs
//! (the command's parsed options: pop end, count, destination, a stream's
//! last IDs...). It is called with the engine locked, in the waiter's
//! database, with blocking denied, each time `key`, one of the keys it
//! waits on, is *ready*:
//! - `None`: nothing for this waiter (the key is missing, holds another
//!   type, has no new entries...): it stays blocked, in its place;
//! - `Some(reply)`: the waiter is served with that reply (an error reply
//!   included) and leaves every queue. The function must have made its
//!   changes through the `Ctx` as any command does (`modified` included),
//!   so that what it writes can wake further waiters (BLMOVE's push).
//!
//! A key is ready when something marked it modified ([`Ctx::modified`],
//! every write does) while clients were blocked on it, and after FLUSHDB,
//! FLUSHALL and SWAPDB. That is wider than Redis, which signals a key when
//! it is created (and XADD, and a stream's deletion or overwrite); the
//! serve function's `None` makes the difference invisible: a blocked
//! list or zset client's key does not exist while it waits. A stream
//! waiter is offered its key on every XADD, and also when the key is
//! deleted or overwritten (XREADGROUP answers those with its UNBLOCKED or
//! NOGROUP error).
//!
//! # When waiters are served
//! After every command a client runs at top level (so after a whole
//! MULTI/EXEC or script, never in the middle), [`serve_ready`] offers each
//! ready key, in the order the keys became ready, to the clients blocked
//! on it, first blocked first, before any other command runs: a client
//! blocked first gets the first element, and nobody can take an element
//! pushed for a blocked client. Keys made ready while serving (BLMOVE's
//! destination) are offered in a next round, until none is left.
//!
//! Keys the active expiry cycle deletes are offered at the next command
//! any client runs (Redis also serves after its event loop's cycle).
//!
//! The reply of a waiter that times out is nil (the RESP server sends it
//! as the null array `*-1`, as Redis does for every blocked client).
//!
//! [`Ctx::modified`]: crate::command::Ctx::modified

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use redis::Value as Reply;
use tokio::sync::Notify;

use crate::command::Store;
use crate::command::{CmdResult, Ctx, Spec};
use crate::error::CmdError;
use crate::float::LongDouble;
use crate::keyspace::Key;
use crate::reply;
use crate::Engine;

/// A waiter's attempt to serve itself from a ready key (see the module's
/// documentation for the contract).
pub(crate) type Serve = Box<dyn FnMut(&mut Ctx<'_>, &[u8]) -> Option<CmdResult> + Send>;

/// Whether the running command may block, and the block it asked for.
pub(crate) enum BlockSlot {
    /// Inside MULTI/EXEC, a script, or a serve function.
    Denied,
    /// A client's own command, run at top level.
    Allowed,
    /// The command asked to block (see [`block`]). Boxed: every command
    /// carries a `BlockSlot` in its `Ctx`, few ever block.
    Requested(Box<Block>),
}

impl std::fmt::Debug for BlockSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BlockSlot::Denied => "Denied",
            BlockSlot::Allowed => "Allowed",
            BlockSlot::Requested(_) => "Requested",
        })
    }
}

/// What a command that blocks waits for.
pub(crate) struct Block {
    keys: Vec<Key>,
    timeout: Option<Duration>,
    serve: Serve,
    /// The client's protocol, which the serve function's replies follow
    /// (XREAD's is a map in RESP3).
    resp: u8,
    /// The reply when the wait times out, if not nil (WAIT's count).
    timed_out: Option<Reply>,
}

/// Blocks the running command on `keys` for `timeout` (`None`: forever)
/// until `serve` serves it, or answers nil at once where blocking is
/// denied. The command returns what this returns.
pub(crate) fn block(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    timeout: Option<Duration>,
    serve: Serve,
) -> CmdResult {
    if matches!(ctx.block, BlockSlot::Allowed) {
        let mut unique: Vec<Key> = Vec::with_capacity(keys.len());
        for key in keys {
            if !unique.iter().any(|k| &k[..] == *key) {
                unique.push(Key::from(*key));
            }
        }
        ctx.block = BlockSlot::Requested(Box::new(Block {
            keys: unique,
            timeout,
            serve,
            resp: ctx.resp,
            timed_out: None,
        }));
    }
    Ok(reply::nil())
}

/// Blocks the running command on no key, for `timeout` (`None`: forever):
/// only the timeout or CLIENT UNBLOCK ends the wait, and the command then
/// answers `reply`, as it does at once where blocking is denied. WAIT
/// asked for replicas the engine does not have waits so, as Redis's does.
pub(crate) fn block_until_timeout(
    ctx: &mut Ctx<'_>,
    timeout: Option<Duration>,
    reply: Reply,
) -> CmdResult {
    if matches!(ctx.block, BlockSlot::Allowed) {
        ctx.block = BlockSlot::Requested(Box::new(Block {
            keys: Vec::new(),
            timeout,
            serve: Box::new(|_, _| None),
            resp: ctx.resp,
            timed_out: Some(reply.clone()),
        }));
    }
    Ok(reply)
}

/// The time a timeout is added to, when the deadline must fit in a
/// `long long` (Redis 7.2 on: "timeout is out of range" otherwise); `None`
/// in 7.0 mode, where the sum just overflows.
pub(crate) fn deadline_base(ctx: &Ctx<'_>) -> Option<i64> {
    (ctx.store.version >= crate::RedisVersion::V7_4).then_some(ctx.now)
}

/// Reads a blocking command's timeout as Redis's `getTimeoutFromObjectOrReply`
/// does: seconds as a long double, `ceil(seconds * 1000)` milliseconds, 0
/// meaning forever (`None`). With a `base` (see [`deadline_base`]), more
/// milliseconds than a `long long` holds, or than it holds past `base`,
/// are out of range, as in Redis 7.2.
pub(crate) fn parse_timeout(arg: &[u8], base: Option<i64>) -> Result<Option<Duration>, CmdError> {
    let seconds = LongDouble::parse(arg)
        .ok_or_else(|| CmdError::err("timeout is not a float or out of range"))?;
    let ms = seconds.mul_ceil_to_i64(1000);
    // `i64::MIN` stands for a product past the range, of either sign.
    if base.is_some() && ms == i64::MIN && !seconds.is_negative() {
        return Err(out_of_range());
    }
    timeout_of_ms(ms, base)
}

/// Reads a timeout given in milliseconds (XREAD and XREADGROUP's BLOCK,
/// WAIT, WAITAOF), as `getTimeoutFromObjectOrReply` with
/// `UNIT_MILLISECONDS` does: an integer, 0 meaning forever (`None`); with
/// a `base`, as [`parse_timeout`].
pub(crate) fn parse_timeout_ms(
    arg: &[u8],
    base: Option<i64>,
) -> Result<Option<Duration>, CmdError> {
    let ms = crate::args::parse_i64(arg)
        .ok_or_else(|| CmdError::err("timeout is not an integer or out of range"))?;
    timeout_of_ms(ms, base)
}

/// A timeout of `ms` milliseconds: negative refused, 0 forever, and with a
/// `base` one whose deadline would overflow refused.
fn timeout_of_ms(ms: i64, base: Option<i64>) -> Result<Option<Duration>, CmdError> {
    match u64::try_from(ms) {
        Err(_) => Err(CmdError::err("timeout is negative")),
        Ok(0) => Ok(None),
        Ok(_) if base.is_some_and(|now| ms > i64::MAX - now) => Err(out_of_range()),
        Ok(ms) => Ok(Some(Duration::from_millis(ms))),
    }
}

fn out_of_range() -> CmdError {
    CmdError::err("timeout is out of range")
}

/// The blocked clients of an engine, by waiter id (the keys' queues are in
/// each [`Keyspace`](crate::keyspace::Keyspace)).
#[derive(Default)]
pub(crate) struct Waiters {
    last_id: u64,
    by_id: HashMap<u64, Waiter>,
}

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters")
            .field("blocked", &self.by_id.len())
            .finish_non_exhaustive()
    }
}

impl Waiters {
    /// Clients blocked now (INFO's `blocked_clients`).
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The keys clients are blocked on (INFO's `total_blocking_keys`),
    /// and how many of them have an XREADGROUP client, which a deletion
    /// of the key unblocks (`total_blocking_keys_on_nokey`).
    pub(crate) fn blocking_keys(&self) -> (usize, usize) {
        let mut keys: HashMap<(usize, &[u8]), bool> = HashMap::new();
        for waiter in self.by_id.values() {
            let on_nokey = waiter.command.is_some_and(|c| c.name == "xreadgroup");
            for key in &waiter.keys {
                *keys.entry((waiter.db, &key[..])).or_default() |= on_nokey;
            }
        }
        let on_nokey = keys.values().filter(|&&n| n).count();
        (keys.len(), on_nokey)
    }
}

struct Waiter {
    /// The blocked command, whose stats count a failure when it is
    /// served an error (INFO commandstats / errorstats).
    command: Option<&'static Spec>,
    db: usize,
    keys: Vec<Key>,
    serve: Serve,
    resp: u8,
    mailbox: Arc<Mailbox>,
    /// What SLOWLOG and LATENCY count of the command once it is served.
    timing: Option<Timing>,
    /// Who sent it, for Redis 7.2's check of its permissions again when
    /// it is served ([`refused_by_acl`]).
    caller: Option<crate::acl::Caller>,
}

/// A blocked command as SLOWLOG and LATENCY count it once it is served:
/// the time its first run took (its wait is not counted, as in Redis),
/// and who sent it.
struct Timing {
    meta: &'static crate::command_table::Meta,
    args: Vec<Vec<u8>>,
    took: Duration,
    /// The client's address and name.
    addr: String,
    name: Vec<u8>,
}

/// Keeps what SLOWLOG and LATENCY need of waiter `id`'s command, whose
/// first run took `took`, from the client at `addr`.
#[cold]
pub(crate) fn time_waiter(
    store: &mut Store,
    id: u64,
    meta: &'static crate::command_table::Meta,
    args: &[&[u8]],
    took: Duration,
    addr: String,
) {
    if let Some(waiter) = store.waiters.by_id.get_mut(&id) {
        waiter.timing = Some(Timing {
            meta,
            args: args.iter().map(|a| a.to_vec()).collect(),
            took,
            addr,
            name: Vec::new(),
        });
    }
}

/// Gives waiter `id` its client's name, for SLOWLOG.
#[cfg(feature = "server")]
pub(crate) fn name_waiter(store: &mut Store, id: u64, name: &[u8]) {
    let waiter = store.waiters.by_id.get_mut(&id);
    if let Some(timing) = waiter.and_then(|w| w.timing.as_mut()) {
        timing.name = name.to_vec();
    }
}

/// How a blocked client's wait ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Wake {
    /// Served with this reply (or unblocked with an error).
    Served(Reply),
    /// Its timeout passed, or CLIENT UNBLOCK said TIMEOUT.
    TimedOut,
}

impl Wake {
    /// The reply the client gets.
    pub(crate) fn into_reply(self) -> Reply {
        match self {
            Wake::Served(reply) => reply,
            Wake::TimedOut => reply::nil(),
        }
    }
}

/// Where a waiter's end is left for its client, who may wait on it from
/// async code (the `Notify`) or from a thread (the `Condvar`).
#[derive(Default, Debug)]
struct Mailbox {
    slot: Mutex<Option<Wake>>,
    filled: Condvar,
    notify: Notify,
}

impl Mailbox {
    fn deliver(&self, wake: Wake) {
        *self.slot.lock() = Some(wake);
        self.filled.notify_all();
        // Stores a permit if the client is not waiting yet.
        self.notify.notify_one();
    }

    fn take(&self) -> Option<Wake> {
        self.slot.lock().take()
    }
}

/// A client just parked by its command: what it needs to wait.
#[derive(Debug)]
pub(crate) struct Parked {
    id: u64,
    timeout: Option<Duration>,
    timed_out: Option<Reply>,
    mailbox: Arc<Mailbox>,
}

impl Parked {
    /// The waiter's id (CLIENT UNBLOCK finds it by it).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The ticket to wait with, from now on.
    pub(crate) fn ticket(self, engine: &Engine) -> Ticket {
        Ticket {
            engine: engine.clone(),
            id: self.id,
            deadline: self.timeout.map(|t| Instant::now() + t),
            timed_out: self.timed_out,
            mailbox: self.mailbox,
            done: false,
        }
    }
}

/// Registers a waiter for `block` in database `db`, which `command` asked
/// for.
pub(crate) fn park(
    store: &mut Store,
    db: usize,
    block: Block,
    command: Option<&'static Spec>,
    caller: Option<crate::acl::Caller>,
) -> Parked {
    store.waiters.last_id += 1;
    let id = store.waiters.last_id;
    for key in &block.keys {
        store.dbs[db].add_blocked(key.clone(), id);
    }
    let mailbox = Arc::new(Mailbox::default());
    store.waiters.by_id.insert(
        id,
        Waiter {
            command,
            db,
            keys: block.keys,
            serve: block.serve,
            resp: block.resp,
            mailbox: mailbox.clone(),
            timing: None,
            caller,
        },
    );
    Parked {
        id,
        timeout: block.timeout,
        timed_out: block.timed_out,
        mailbox,
    }
}

/// From Redis 7.2 on a served blocked command runs again, its user's
/// permissions checked again: taken away while it waited, it is refused,
/// as Redis 7.0 does not. The refusal's reply (NOPERM), logged in ACL LOG
/// and counted as a rejected call and an error reply.
fn refused_by_acl(store: &mut Store, waiter: &Waiter, now: i64) -> Option<Reply> {
    if store.version < crate::RedisVersion::V7_4 {
        return None;
    }
    let (timing, caller) = (waiter.timing.as_ref()?, waiter.caller.as_ref()?);
    if store.acl.is_open(caller.user.as_deref()) {
        return None;
    }
    let args: Vec<&[u8]> = timing.args.iter().map(Vec::as_slice).collect();
    let user = store.acl.user_of(caller.user.as_deref())?;
    let denied = user.check(timing.meta, &args).err()?;
    let error = denied.error(timing.meta.name, caller.name(), store.version);
    let entry = crate::acl::log::Entry::new(
        crate::acl::log::Reason::of(denied),
        crate::acl::log::Context::Toplevel,
        denied.object(timing.meta, &args),
        caller.name(),
        caller,
        now,
    )
    .described_now(caller);
    store.acl.logged(entry);
    let reply = CmdError::raw(error).to_value();
    store.command_stats.record_errors(&reply, false);
    store.command_stats.record_rejected(&args);
    Some(reply)
}

/// Counts the call of `waiter`'s command, whose wait ended `failed` or
/// not: from Redis 7.2 on the call itself, which was not counted when it
/// blocked (Redis runs the command again then); before, a failure of the
/// call counted when it blocked.
fn count_ended(store: &mut Store, waiter: &Waiter, failed: bool) {
    let Some(command) = waiter.command else {
        return;
    };
    if store.version >= crate::RedisVersion::V7_4 {
        store.command_stats.record(command, &[], failed);
    } else if failed {
        store.command_stats.record_failure(command);
    }
}

/// Takes waiter `id` out of the store and of its keys' queues.
fn unregister(store: &mut Store, id: u64) -> Option<Waiter> {
    let waiter = store.waiters.by_id.remove(&id)?;
    for key in &waiter.keys {
        store.dbs[waiter.db].remove_blocked(key, id);
    }
    Some(waiter)
}

/// Forgets waiter `id` (its client timed out or went away); false if it
/// was already served.
pub(crate) fn cancel(store: &mut Store, id: u64) -> bool {
    unregister(store, id).is_some()
}

/// Ends waiter `id`'s wait at its timeout: forgotten, its call counted
/// (see [`count_ended`]); false if it was already served.
fn time_out(store: &mut Store, id: u64) -> bool {
    let Some(waiter) = unregister(store, id) else {
        return false;
    };
    count_ended(store, &waiter, false);
    true
}

/// CLIENT UNBLOCK: ends waiter `id`'s wait with `wake`; false if it is not
/// blocked.
#[cfg(feature = "server")]
pub(crate) fn unblock(store: &mut Store, id: u64, wake: Wake) -> bool {
    match unregister(store, id) {
        Some(waiter) => {
            // Ended by an UNBLOCKED error: counted as the served errors
            // below are.
            let failed = matches!(&wake, Wake::Served(Reply::ServerError(_)));
            if let Wake::Served(Reply::ServerError(e)) = &wake {
                store.command_stats.record_error(e.code());
            }
            count_ended(store, &waiter, failed);
            waiter.mailbox.deliver(wake);
            true
        }
        None => false,
    }
}

/// Offers the ready keys to their blocked clients (see the module's
/// documentation), until no key is ready.
pub(crate) fn serve_ready(store: &mut Store, now: i64) {
    // Nobody waits (the usual case, checked after every command): a key is
    // queued only while it has blocked clients, so there is nothing to
    // serve, and looking at every database's queue is skipped. (A key
    // queued for a client that left since waits for the next wait, where
    // serving it is a no-op if it is empty again.)
    if !store.waiters.by_id.is_empty() {
        serve_waiters(store, now);
    }
}

/// [`serve_ready`] with clients blocked: out of the path every command
/// takes when none are.
#[cold]
#[inline(never)]
fn serve_waiters(store: &mut Store, now: i64) {
    // Served after the command, at the time it is now, as Redis reads its
    // clock again there: a key that expired while the command ran (an
    // EXEC holding a DEBUG SLEEP) serves no one, and its clients wait on.
    let now = store.clock.now_ms().max(now);
    while store.dbs.iter().any(|ks| ks.has_ready()) {
        for db in 0..store.dbs.len() {
            for key in store.dbs[db].take_ready() {
                serve_key(store, db, &key, now);
            }
        }
    }
}

/// Offers `key` of database `db` to its blocked clients, first blocked
/// first.
fn serve_key(store: &mut Store, db: usize, key: &[u8], now: i64) {
    for id in store.dbs[db].blocked_on(key) {
        // Out of the map while it runs: the serve function borrows the
        // store.
        let Some(mut waiter) = store.waiters.by_id.remove(&id) else {
            continue;
        };
        if let Some(refused) = refused_by_acl(store, &waiter, now) {
            for k in &waiter.keys {
                store.dbs[waiter.db].remove_blocked(k, id);
            }
            waiter.mailbox.deliver(Wake::Served(refused));
            continue;
        }
        let started = Instant::now();
        let served = {
            let mut ctx = Ctx {
                store: &mut *store,
                db,
                now,
                block: BlockSlot::Denied,
                // The reply is built typed (lowered by the waiter's
                // client when sent), in the waiter's protocol's shape.
                resp: waiter.resp,
            };
            // Served, the blocked command runs (its key's access counts),
            // and counts its changes as its version does.
            ctx.ks().begin_command(false);
            (waiter.serve)(&mut ctx, key)
        };
        match served {
            None => {
                store.waiters.by_id.insert(id, waiter);
            }
            Some(result) => {
                store.aof_after_served();
                for k in &waiter.keys {
                    store.dbs[waiter.db].remove_blocked(k, id);
                }
                let failed = result.is_err();
                let reply = result.unwrap_or_else(|e| e.to_value());
                // Counted as Redis counts a blocked command ended by an
                // error (XGROUP DESTROY under an XREADGROUP): the error
                // reply, and the command's call as failed.
                if failed {
                    store.command_stats.record_errors(&reply, false);
                }
                count_ended(store, &waiter, failed);
                if let Some(t) = waiter.timing {
                    let took = t.took + started.elapsed();
                    store.latency.command(t.meta, took, now);
                    let args: Vec<&[u8]> = t.args.iter().map(Vec::as_slice).collect();
                    (store.slowlog).record_client(&args, took, now, Some((t.addr, t.name)));
                }
                waiter.mailbox.deliver(Wake::Served(reply));
            }
        }
    }
}

/// A parked client's wait. Dropping it before the wait ends (the client
/// went away, the future was dropped) takes the waiter out of the queues.
pub(crate) struct Ticket {
    engine: Engine,
    id: u64,
    deadline: Option<Instant>,
    /// The reply of a wait that timed out, if not nil.
    timed_out: Option<Reply>,
    mailbox: Arc<Mailbox>,
    done: bool,
}

impl Ticket {
    /// Waits, without blocking the thread, until served or timed out.
    pub(crate) async fn wait(&mut self) -> Wake {
        let mailbox = self.mailbox.clone();
        let served = async move {
            loop {
                if let Some(wake) = mailbox.take() {
                    return wake;
                }
                mailbox.notify.notified().await;
            }
        };
        let wake = match self.deadline {
            None => served.await,
            Some(deadline) => match tokio::time::timeout_at(deadline.into(), served).await {
                Ok(wake) => wake,
                Err(_) => self.expire(),
            },
        };
        self.done = true;
        self.reply_of(wake)
    }

    /// Waits on this thread until served or timed out.
    pub(crate) fn wait_blocking(&mut self) -> Wake {
        let wake = {
            let mut slot = self.mailbox.slot.lock();
            loop {
                if let Some(wake) = slot.take() {
                    break Some(wake);
                }
                match self.deadline {
                    None => self.mailbox.filled.wait(&mut slot),
                    Some(deadline) => {
                        if self
                            .mailbox
                            .filled
                            .wait_until(&mut slot, deadline)
                            .timed_out()
                        {
                            break slot.take();
                        }
                    }
                }
            }
        };
        let wake = wake.unwrap_or_else(|| self.expire());
        self.done = true;
        self.reply_of(wake)
    }

    /// How the wait ended, a timeout (or CLIENT UNBLOCK's) given the
    /// command's own reply where it has one.
    fn reply_of(&mut self, wake: Wake) -> Wake {
        match (wake, self.timed_out.take()) {
            (Wake::TimedOut, Some(reply)) => Wake::Served(reply),
            (wake, _) => wake,
        }
    }

    /// The timeout passed: leave the queues, unless served meanwhile (the
    /// reply is then in the mailbox: it was put there under the lock).
    fn expire(&mut self) -> Wake {
        let mut store = self.engine.shared.store.lock();
        if time_out(&mut store, self.id) {
            Wake::TimedOut
        } else {
            drop(store);
            self.mailbox.take().unwrap_or(Wake::TimedOut)
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.done {
            let mut store = self.engine.shared.store.lock();
            cancel(&mut store, self.id);
        }
    }
}

/// The number of blocked clients (tests of this module and of the RESP
/// server).
#[cfg(test)]
pub(crate) fn blocked(engine: &Engine) -> usize {
    engine.shared.store.lock().waiters.len()
}

/// Waits (a bounded time) until `n` clients are blocked.
#[cfg(test)]
pub(crate) async fn until_blocked(engine: &Engine, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while blocked(engine) != n {
        assert!(
            Instant::now() < deadline,
            "{} blocked, not {n}",
            blocked(engine)
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{parse_timeout, parse_timeout_ms};

    /// Redis 7.4.1's replies (7.2's checks): a deadline past a `long
    /// long` is out of range; 7.0.15 let it overflow.
    #[test]
    fn timeouts_past_a_long_long_are_out_of_range_from_7_2() {
        use crate::command::test_util::{clocked, clocked_74, err, run};
        let out_of_range = err("ERR timeout is out of range");
        let (_, mut c) = clocked_74(1_700_000_000_000);
        for line in [
            "BLPOP x 0x7FFFFFFFFFFFFF",
            "BLPOP x inf",
            "BLPOP x 9223372036854775",
            "BLMOVE a b LEFT LEFT 1e400",
            "BZPOPMIN z 9223372036854775.807",
            "XREAD BLOCK 9223372036854775807 STREAMS s 0",
            "WAIT 0 9223372036854775807",
            "WAITAOF 0 0 9223372036854775807",
        ] {
            assert_eq!(run(&mut c, line), out_of_range, "{line}");
        }
        assert_eq!(run(&mut c, "BLPOP x -inf"), err("ERR timeout is negative"));
        run(&mut c, "RPUSH l a b c");
        assert_eq!(
            run(&mut c, "LPOS l c RANK -9223372036854775808"),
            err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
        );
        let (_, mut old) = clocked(1_700_000_000_000);
        assert_eq!(
            run(&mut old, "BLPOP x 0x7FFFFFFFFFFFFF"),
            err("ERR timeout is negative")
        );
        assert_eq!(
            parse_timeout(b"9223372036854775", Some(1_700_000_000_000)),
            Err(super::out_of_range())
        );
        assert_eq!(
            parse_timeout(b"9223372036854775", None),
            Ok(Some(Duration::from_millis(9223372036854775000)))
        );
    }

    #[test]
    fn timeouts_in_milliseconds() {
        assert_eq!(parse_timeout_ms(b"0", None), Ok(None));
        assert_eq!(
            parse_timeout_ms(b"15", None),
            Ok(Some(Duration::from_millis(15)))
        );
        assert_eq!(
            parse_timeout_ms(b"-1", None),
            Err(crate::error::CmdError::err("timeout is negative"))
        );
        assert_eq!(
            parse_timeout_ms(b"1.5", None),
            Err(crate::error::CmdError::err(
                "timeout is not an integer or out of range"
            ))
        );
    }

    /// Timeouts as redis-server 7.0.15 reads them.
    #[test]
    fn timeouts() {
        let ms = |n| Ok(Some(Duration::from_millis(n)));
        assert_eq!(parse_timeout(b"0", None), Ok(None));
        assert_eq!(parse_timeout(b"0.0", None), Ok(None));
        assert_eq!(parse_timeout(b"-0", None), Ok(None));
        assert_eq!(parse_timeout(b"1", None), ms(1000));
        assert_eq!(parse_timeout(b"0.001", None), ms(1));
        assert_eq!(parse_timeout(b"0.0001", None), ms(1));
        assert_eq!(parse_timeout(b"1.5", None), ms(1500));
        assert_eq!(parse_timeout(b"0x1p-3", None), ms(125));
        assert_eq!(parse_timeout(b"1e-400", None), ms(1));
        assert_eq!(parse_timeout(b"-1e-400", None), Ok(None));
        let negative = Err(crate::error::CmdError::err("timeout is negative"));
        assert_eq!(parse_timeout(b"-1", None), negative);
        assert_eq!(parse_timeout(b"-1.5", None), negative);
        // In x87 arithmetic 0.001 * 1000 is just below 1: -0.001 rounds up
        // to 0, forever (redis-server blocks forever too).
        assert_eq!(parse_timeout(b"-0.001", None), Ok(None));
        assert_eq!(parse_timeout(b"inf", None), negative);
        assert_eq!(parse_timeout(b"1e400", None), negative);
        assert_eq!(parse_timeout(b"9223372036854775.808", None), negative);
        assert_eq!(
            parse_timeout(b"9223372036854775.807", None),
            ms(9223372036854775807)
        );
        let not_float = Err(crate::error::CmdError::err(
            "timeout is not a float or out of range",
        ));
        for bad in [&b"abc"[..], b"", b" 1", b"1 ", b"nan", b"1x"] {
            assert_eq!(parse_timeout(bad, None), not_float, "{bad:?}");
        }
    }
}

/// Two or more in-process clients of one engine: one blocks in a spawned
/// task, another writes. Expected replies are redis-server 7.0.15's.
#[cfg(test)]
mod wait_tests {
    use std::time::{Duration, Instant};

    use redis::Value;

    use crate::command::test_util::{bulk, bulks, int, run};
    use crate::{Connection, Engine};

    use super::{blocked, until_blocked};

    /// Runs `line` on a new client of `engine` in a task of its own.
    fn spawn(engine: &Engine, line: &str) -> tokio::task::JoinHandle<Value> {
        let mut c = engine.connection();
        let mut cmd = redis::Cmd::new();
        for arg in line.split(' ') {
            cmd.arg(arg);
        }
        tokio::spawn(async move {
            // The raw reply: an error reply is a value too.
            redis::aio::ConnectionLike::req_packed_command(&mut c, &cmd)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        })
    }

    /// Spawns `line` and waits until its client is the `n`th blocked.
    async fn block(engine: &Engine, line: &str, n: usize) -> tokio::task::JoinHandle<Value> {
        let task = spawn(engine, line);
        until_blocked(engine, n).await;
        task
    }

    async fn reply(task: tokio::task::JoinHandle<Value>) -> Value {
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the blocked client was not served")
            .expect("the task panicked")
    }

    fn pusher(engine: &Engine) -> Connection {
        engine.connection()
    }

    /// Redis's stream-cgroups case "XGROUP DESTROY should unblock
    /// XREADGROUP with -NOGROUP": the woken client's error is counted in
    /// errorstats, and its command's call as failed.
    #[tokio::test]
    async fn an_error_that_ends_a_wait_is_counted() {
        let engine = Engine::new();
        let mut c = pusher(&engine);
        run(&mut c, "XGROUP CREATE s g $ MKSTREAM");
        run(&mut c, "CONFIG RESETSTAT");
        let waiter = block(&engine, "XREADGROUP GROUP g alice BLOCK 0 STREAMS s >", 1).await;
        run(&mut c, "XGROUP DESTROY s g");
        assert!(matches!(reply(waiter).await, Value::ServerError(e) if e.code() == "NOGROUP"));
        let Value::BulkString(info) = run(&mut c, "INFO commandstats errorstats stats") else {
            panic!("INFO replies a bulk string");
        };
        let info = String::from_utf8_lossy(&info);
        assert!(info.contains("errorstat_NOGROUP:count=1"), "{info}");
        assert!(info.contains("total_error_replies:1\r\n"), "{info}");
        let line = info
            .lines()
            .find(|l| l.starts_with("cmdstat_xreadgroup:"))
            .expect("xreadgroup's stats");
        assert!(
            line.contains("calls=1,") && line.ends_with("failed_calls=1"),
            "{line}"
        );
    }

    #[tokio::test]
    async fn a_push_wakes_the_blocked_client() {
        let engine = Engine::new();
        let waiter = block(&engine, "BLPOP k 0", 1).await;
        let mut c = pusher(&engine);
        assert_eq!(run(&mut c, "RPUSH k a b"), int(2));
        assert_eq!(reply(waiter).await, bulks(&["k", "a"]));
        assert_eq!(run(&mut c, "LRANGE k 0 -1"), bulks(&["b"]));
        assert_eq!(blocked(&engine), 0);
    }

    #[tokio::test]
    async fn waiters_are_served_first_blocked_first() {
        let engine = Engine::new();
        let a = block(&engine, "BRPOP k 0", 1).await;
        let b = block(&engine, "BLPOP other k 0", 2).await;
        let c = block(&engine, "BLPOP k 0", 3).await;
        let mut p = pusher(&engine);
        assert_eq!(run(&mut p, "RPUSH k 1 2"), int(2));
        assert_eq!(reply(a).await, bulks(&["k", "2"]));
        assert_eq!(reply(b).await, bulks(&["k", "1"]));
        // Two elements for three clients: the third still waits.
        assert_eq!(blocked(&engine), 1);
        assert_eq!(run(&mut p, "LPUSH k 3"), int(1));
        assert_eq!(reply(c).await, bulks(&["k", "3"]));
        assert_eq!(run(&mut p, "EXISTS k"), int(0));
    }

    /// The client blocked is served right after the push, before the
    /// pusher's next command can take the element.
    #[tokio::test]
    async fn the_blocked_client_is_served_before_the_next_command() {
        let engine = Engine::new();
        let waiter = block(&engine, "BLPOP k 0", 1).await;
        let mut p = pusher(&engine);
        assert_eq!(run(&mut p, "RPUSH k x"), int(1));
        assert_eq!(run(&mut p, "LPOP k"), Value::Nil);
        assert_eq!(reply(waiter).await, bulks(&["k", "x"]));
    }

    /// A transaction that pushes and pops again leaves nothing to serve;
    /// one that pushes to two keys serves from the first pushed.
    #[tokio::test]
    async fn clients_are_served_after_the_whole_transaction() {
        let engine = Engine::new();
        let waiter = block(&engine, "BLPOP a b 0", 1).await;
        let mut p = pusher(&engine);
        run(&mut p, "MULTI");
        run(&mut p, "RPUSH a x");
        run(&mut p, "LPOP a");
        assert_eq!(run(&mut p, "EXEC"), Value::Array(vec![int(1), bulk("x")]));
        assert_eq!(blocked(&engine), 1);
        run(&mut p, "MULTI");
        run(&mut p, "RPUSH b 1");
        run(&mut p, "RPUSH a 2");
        run(&mut p, "EXEC");
        assert_eq!(reply(waiter).await, bulks(&["b", "1"]));
        assert_eq!(run(&mut p, "LRANGE a 0 -1"), bulks(&["2"]));
    }

    #[tokio::test]
    async fn a_timeout_answers_nil_and_leaves_the_queues() {
        let engine = Engine::new();
        let started = Instant::now();
        let waiter = spawn(&engine, "BLPOP k 0.1");
        assert_eq!(reply(waiter).await, Value::Nil);
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert_eq!(blocked(&engine), 0);
        let mut p = pusher(&engine);
        run(&mut p, "RPUSH k a");
        assert_eq!(run(&mut p, "LLEN k"), int(1));
        // BZPOPMIN and BLMOVE time out alike.
        let waiter = spawn(&engine, "BZPOPMIN z 0.05");
        assert_eq!(reply(waiter).await, Value::Nil);
        let waiter = spawn(&engine, "BLMOVE nokey d LEFT RIGHT 0.05");
        assert_eq!(reply(waiter).await, Value::Nil);
    }

    /// Inside MULTI and scripts a blocking command answers at once, as
    /// its timeout would.
    #[tokio::test]
    async fn transactions_and_scripts_do_not_block() {
        let engine = Engine::new();
        let mut c = engine.connection();
        run(&mut c, "MULTI");
        for line in [
            "BLPOP k 0",
            "BRPOP k 0",
            "BLMOVE k d LEFT LEFT 0",
            "BRPOPLPUSH k d 0",
            "BLMPOP 0 1 k LEFT",
            "BZPOPMIN z 0",
            "BZPOPMAX z 0",
            "BZMPOP 0 1 z MIN",
        ] {
            run(&mut c, line);
        }
        assert_eq!(run(&mut c, "EXEC"), Value::Array(vec![Value::Nil; 8]));
        // BLPOP is `noscript` in 7.0; BLMPOP and BZMPOP are allowed.
        let script = "return {redis.call('blmpop', 0, 1, 'k', 'left'), \
                      redis.call('bzmpop', 0, 1, 'z', 'min'), 1}";
        assert_eq!(
            c.execute(&[b"EVAL", script.as_bytes(), b"0"]),
            Value::Array(vec![Value::Nil, Value::Nil, int(1)])
        );
        assert_eq!(blocked(&engine), 0);
        // With data they pop, as their non-blocking forms.
        run(&mut c, "RPUSH k a");
        run(&mut c, "MULTI");
        run(&mut c, "BLPOP k 0");
        assert_eq!(run(&mut c, "EXEC"), Value::Array(vec![bulks(&["k", "a"])]));
    }

    /// A key that turns into another type serves nothing: the client stays
    /// blocked until a list comes.
    #[tokio::test]
    async fn a_key_of_another_type_leaves_the_client_blocked() {
        let engine = Engine::new();
        let waiter = block(&engine, "BLPOP k 0", 1).await;
        let mut p = pusher(&engine);
        assert_eq!(run(&mut p, "ZADD k 1 a"), int(1));
        assert_eq!(run(&mut p, "SADD s a"), int(1));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(blocked(&engine), 1);
        assert_eq!(run(&mut p, "DEL k"), int(1));
        assert_eq!(run(&mut p, "RENAME s k"), Value::Okay);
        assert_eq!(blocked(&engine), 1);
        run(&mut p, "DEL k");
        assert_eq!(run(&mut p, "RPUSH k v"), int(1));
        assert_eq!(reply(waiter).await, bulks(&["k", "v"]));
        // And a list waiter's sorted set: BZPOPMIN is served by ZADD only.
        let waiter = block(&engine, "BZPOPMIN z 0", 1).await;
        run(&mut p, "RPUSH z a");
        run(&mut p, "DEL z");
        assert_eq!(blocked(&engine), 1);
        run(&mut p, "ZADD z 2 b 1 a");
        assert_eq!(reply(waiter).await, bulks(&["z", "a", "1"]));
    }

    /// BLMOVE's push onto its destination wakes the client blocked there.
    #[tokio::test]
    async fn blmove_wakes_the_client_blocked_on_its_destination() {
        let engine = Engine::new();
        let mover = block(&engine, "BLMOVE src dst LEFT RIGHT 0", 1).await;
        let popper = block(&engine, "BRPOP dst 0", 2).await;
        let mut p = pusher(&engine);
        assert_eq!(run(&mut p, "RPUSH src x y"), int(2));
        assert_eq!(reply(mover).await, bulk("x"));
        assert_eq!(reply(popper).await, bulks(&["dst", "x"]));
        assert_eq!(run(&mut p, "LRANGE src 0 -1"), bulks(&["y"]));
        assert_eq!(run(&mut p, "EXISTS dst"), int(0));
        // A chain of two moves, and BRPOPLPUSH onto itself.
        let first = block(&engine, "BRPOPLPUSH a b 0", 1).await;
        let second = block(&engine, "BLMOVE b c RIGHT LEFT 0", 2).await;
        run(&mut p, "LPUSH a v");
        assert_eq!(reply(first).await, bulk("v"));
        assert_eq!(reply(second).await, bulk("v"));
        assert_eq!(run(&mut p, "LRANGE c 0 -1"), bulks(&["v"]));
        // A destination of another type: WRONGTYPE when served, nothing moved.
        run(&mut p, "SET str x");
        let mover = block(&engine, "BLMOVE src2 str LEFT LEFT 0", 1).await;
        run(&mut p, "RPUSH src2 e");
        let Value::ServerError(e) = reply(mover).await else {
            panic!("not an error");
        };
        assert_eq!(e.code(), "WRONGTYPE");
        assert_eq!(run(&mut p, "LRANGE src2 0 -1"), bulks(&["e"]));
    }

    #[tokio::test]
    async fn mpop_and_zset_waiters() {
        let engine = Engine::new();
        let lists = block(&engine, "BLMPOP 0 2 a b RIGHT COUNT 2", 1).await;
        let zsets = block(&engine, "BZMPOP 0 1 z MAX COUNT 5", 2).await;
        let max = block(&engine, "BZPOPMAX z 0", 3).await;
        let mut p = pusher(&engine);
        run(&mut p, "RPUSH b 1 2 3");
        assert_eq!(
            reply(lists).await,
            Value::Array(vec![bulk("b"), bulks(&["3", "2"])])
        );
        run(&mut p, "ZADD z 1 one 2 two");
        assert_eq!(
            reply(zsets).await,
            Value::Array(vec![
                bulk("z"),
                Value::Array(vec![bulks(&["two", "2"]), bulks(&["one", "1"])])
            ])
        );
        run(&mut p, "ZADD z 3 three");
        assert_eq!(reply(max).await, bulks(&["z", "three", "3"]));
    }

    /// A client whose future is dropped (a timeout around the query, a
    /// cancelled task) leaves the queues: it takes nothing afterwards.
    #[tokio::test]
    async fn a_dropped_future_leaves_the_queues() {
        let engine = Engine::new();
        let mut c = engine.connection();
        let mut cmd = redis::cmd("BLPOP");
        cmd.arg("k").arg(0);
        let query = cmd.query_async::<Value>(&mut c);
        assert!(tokio::time::timeout(Duration::from_millis(20), query)
            .await
            .is_err());
        assert_eq!(blocked(&engine), 0);
        let mut p = pusher(&engine);
        run(&mut p, "RPUSH k a");
        assert_eq!(run(&mut p, "LLEN k"), int(1));
        // The connection is usable again.
        assert_eq!(run(&mut c, "LPOP k"), bulk("a"));
    }

    /// A pipeline waits at its blocking command, then runs the rest.
    #[tokio::test]
    async fn a_pipeline_waits_at_its_blocking_command() {
        let engine = Engine::new();
        let mut c = engine.connection();
        let task = tokio::spawn(async move {
            let mut pipe = redis::pipe();
            pipe.cmd("SET").arg("x").arg(1);
            pipe.cmd("BLPOP").arg("k").arg(0);
            pipe.cmd("GET").arg("x");
            pipe.query_async::<Value>(&mut c).await.unwrap()
        });
        until_blocked(&engine, 1).await;
        let mut p = pusher(&engine);
        run(&mut p, "RPUSH k a");
        assert_eq!(
            reply(task).await,
            Value::Array(vec![Value::Okay, bulks(&["k", "a"]), bulk("1")])
        );
    }

    /// `execute` is synchronous: it blocks the calling thread.
    #[test]
    fn execute_blocks_the_thread() {
        let engine = Engine::new();
        let mut c = engine.connection();
        let waiter = std::thread::spawn(move || run(&mut c, "BRPOP k 0"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while blocked(&engine) == 0 {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(2));
        }
        run(&mut engine.connection(), "RPUSH k a b");
        assert_eq!(waiter.join().unwrap(), bulks(&["k", "b"]));
        let mut c = engine.connection();
        assert_eq!(run(&mut c, "BLPOP nokey 0.01"), Value::Nil);
    }

    /// The changes INFO counts when a push serves a blocked BLPOP: the
    /// push's alone in Redis 7.0 (1), the pop's too in 7.4 (2), as
    /// redis-server 7.0.15 and 7.4.1 count them.
    #[tokio::test]
    async fn a_served_pop_counts_its_change_from_7_4() {
        for (version, expected) in [
            (crate::RedisVersion::V7_0, 1),
            (crate::RedisVersion::V7_4, 2),
        ] {
            let engine = Engine::new().with_version(version);
            let mut p = pusher(&engine);
            let changes = crate::command::test_util::changes;
            let before = changes(&mut p);
            let waiter = block(&engine, "BLPOP k 0", 1).await;
            run(&mut p, "RPUSH k a");
            assert_eq!(reply(waiter).await, bulks(&["k", "a"]));
            assert_eq!(changes(&mut p) - before, expected, "{version:?}");
        }
    }

    /// The changes INFO counts around a blocked XREADGROUP served by an
    /// XADD, as redis-server 7.0.15 and 7.4.1 count them: the block (7.4
    /// makes the consumer then), and the XADD with the served read (7.0
    /// counts the consumer the read makes; 7.4 runs the read again, which
    /// counts the stream it serves).
    #[tokio::test]
    async fn a_served_group_read_counts_its_changes_as_each_version() {
        for (version, expected) in [
            (crate::RedisVersion::V7_0, [0, 2]),
            (crate::RedisVersion::V7_4, [1, 2]),
        ] {
            let engine = Engine::new().with_version(version);
            let mut p = pusher(&engine);
            run(&mut p, "XGROUP CREATE s g $ MKSTREAM");
            let changes = crate::command::test_util::changes;
            let start = changes(&mut p);
            let waiter = block(&engine, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >", 1).await;
            let blocked_at = changes(&mut p);
            run(&mut p, "XADD s 1-0 f v");
            assert!(matches!(reply(waiter).await, Value::Array(_)));
            let counted = [blocked_at - start, changes(&mut p) - blocked_at];
            assert_eq!(counted, expected, "{version:?}");
        }
    }

    /// Redis 7.4's zset case "BZPOPMIN unblock but the key is expired and
    /// then block again": clients are served at the time it is once the
    /// command is done, so a key that expired while the command ran serves
    /// no one and its client waits on, for the next push.
    #[tokio::test]
    async fn a_key_that_expired_while_its_command_ran_serves_no_one() {
        let clock = crate::ManualClock::new(1_000_000);
        let engine = Engine::with_clock(clock.clone());
        let waiter = block(&engine, "BZPOPMIN z 0", 1).await;
        engine.atomically(0, |tx| {
            tx.call(&[b"ZADD", b"z", b"1", b"one"]);
            tx.call(&[b"PEXPIRE", b"z", b"100"]);
            clock.advance(Duration::from_millis(200));
        });
        assert_eq!(blocked(&engine), 1, "served from an expired key");
        let mut p = pusher(&engine);
        run(&mut p, "ZADD z 2 two");
        assert_eq!(reply(waiter).await, bulks(&["z", "two", "2"]));
    }

    /// FLUSHALL then a push, and SWAPDB bringing a list in, serve too.
    #[tokio::test]
    async fn swapdb_brings_data_to_blocked_clients() {
        let engine = Engine::new();
        let waiter = block(&engine, "BLPOP k 0", 1).await;
        let mut p = pusher(&engine);
        run(&mut p, "SELECT 1");
        run(&mut p, "RPUSH k from-db1");
        assert_eq!(blocked(&engine), 1);
        assert_eq!(run(&mut p, "SWAPDB 0 1"), Value::Okay);
        assert_eq!(reply(waiter).await, bulks(&["k", "from-db1"]));
    }

    /// INFO commandstats' `calls` of BLPOP.
    fn blpop_calls(c: &mut Connection) -> u64 {
        let info = crate::command::test_util::info_field(c, "commandstats", "cmdstat_blpop");
        info.strip_prefix("calls=")
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// Redis 7.0 counts a blocked command's call when it blocks; from 7.2
    /// on, when its wait ends (served or timed out), as redis-server
    /// 7.0.15 and 7.4.1 count them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocked_command_counts_its_call_when_it_blocks_or_from_7_4_when_it_ends() {
        for (version, while_blocked) in [
            (crate::RedisVersion::V7_0, 2),
            (crate::RedisVersion::V7_4, 1),
        ] {
            let engine = Engine::new().with_version(version);
            let mut c = engine.connection();
            assert_eq!(run(&mut c, "BLPOP nolist 0.01"), Value::Nil);
            assert_eq!(blpop_calls(&mut c), 1, "{version:?}: timed out");
            let task = block(&engine, "BLPOP l 0", 1).await;
            assert_eq!(blpop_calls(&mut c), while_blocked, "{version:?}: blocked");
            run(&mut c, "RPUSH l x");
            assert_eq!(reply(task).await, bulks(&["l", "x"]));
            assert_eq!(blpop_calls(&mut c), 2, "{version:?}: served");
        }
    }
}
