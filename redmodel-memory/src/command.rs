//! The command table: one `Spec` per command, grouped by family in the
//! modules below, the context a command runs in, and the [`Store`] it runs
//! on: all numbered databases of one engine, its configuration, and the
//! blocked clients and scripts, which are commands in progress.
//!
//! A command is a plain function from its arguments to a reply. It sees one
//! numbered database through [`Ctx`], which also carries the time the
//! command runs at (Redis reads the clock once per command too).

use std::sync::LazyLock;

use redis::Value as Reply;

use super::config::Config;
use super::error::CmdError;
use super::keyspace::{Entry, Keyspace};
use super::reply;
use super::value::{Kind, Value};
use crate::command_table::{self, Meta, NameTable};
use crate::RedisVersion;

mod acl;
mod bitmaps;
pub(crate) mod blocking;
mod caching;
mod cluster;
pub(crate) mod connection;
mod databases;
mod debug;
mod dump;
mod expiry;
mod functions;
mod geo;
mod hash_expiry;
mod hashes;
mod hyperloglog;
mod info;
mod keys;
pub(crate) mod latency;
mod lcs;
mod lists;
pub(crate) mod maxmemory;
mod memory;
mod module;
mod object;
pub(crate) mod pause;
pub(crate) mod persistence;
mod pops;
mod pubsub;
pub(crate) mod script;
mod scripting;
mod server;
mod sets;
mod shared;
pub(crate) mod slowlog;
mod sort;
pub(crate) mod stats;
mod streams;
mod strings;
#[cfg(test)]
pub(crate) mod test_util;
mod waitaof;
mod zsets;

pub(crate) use connection::{subcommand_arity, unknown_subcommand};
pub(crate) use streams::block_from_script;

/// What a command returns: a reply, or an error reply.
pub(crate) type CmdResult = Result<Reply, CmdError>;

/// A command implementation. `args[0]` is the command name.
pub(crate) type Handler = fn(&mut Ctx<'_>, &[&[u8]]) -> CmdResult;

/// One entry of the command table.
pub(crate) struct Spec {
    /// Lower-case name.
    pub(crate) name: &'static str,
    /// Redis's arity: `n` exactly n arguments (name included), `-n` at least n.
    pub(crate) arity: i32,
    pub(crate) handler: Handler,
}

impl Spec {
    pub(crate) fn arity_ok(&self, argc: usize) -> bool {
        arity_ok(self.arity, argc)
    }
}

/// Whether `argc` arguments (the name included) fit Redis's `arity`: `n`
/// exactly n, `-n` at least n.
pub(crate) fn arity_ok(arity: i32, argc: usize) -> bool {
    let argc = i64::try_from(argc).unwrap_or(i64::MAX);
    let arity = i64::from(arity);
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

// Looked up once per command, in any case, keyed by bytes so that a
// request's name needs no UTF-8 check (see `names`); each command with
// Redis's description of it, which a script's command needs too.
static TABLE: LazyLock<NameTable<(&'static Spec, Option<&'static Meta>)>> = LazyLock::new(|| {
    NameTable::new(
        [
            acl::COMMANDS,
            bitmaps::COMMANDS,
            cluster::COMMANDS,
            expiry::COMMANDS,
            functions::COMMANDS,
            geo::COMMANDS,
            hashes::COMMANDS,
            hash_expiry::COMMANDS,
            hyperloglog::COMMANDS,
            info::COMMANDS,
            keys::COMMANDS,
            latency::COMMANDS,
            lists::COMMANDS,
            connection::COMMANDS,
            databases::COMMANDS,
            debug::COMMANDS,
            dump::COMMANDS,
            lcs::COMMANDS,
            memory::COMMANDS,
            module::COMMANDS,
            object::COMMANDS,
            pubsub::COMMANDS,
            pops::COMMANDS,
            scripting::COMMANDS,
            persistence::COMMANDS,
            server::COMMANDS,
            sets::COMMANDS,
            slowlog::COMMANDS,
            sort::COMMANDS,
            streams::COMMANDS,
            strings::COMMANDS,
            waitaof::COMMANDS,
            zsets::COMMANDS,
        ]
        .into_iter()
        .flatten()
        .map(|spec| {
            (
                spec.name,
                (spec, command_table::lookup(spec.name.as_bytes())),
            )
        }),
    )
});

/// The subcommands the engine serves, as `container|sub`: COMMAND,
/// COMMAND INFO and COMMAND LIST describe these and no other of Redis's.
static SUBCOMMANDS: LazyLock<std::collections::HashSet<String>> = LazyLock::new(|| {
    let containers: [(&str, &[Sub]); 14] = [
        ("acl", acl::SUBCOMMANDS),
        ("cluster", cluster::SUBCOMMANDS),
        ("command", server::COMMAND_SUBCOMMANDS),
        ("config", server::CONFIG_SUBCOMMANDS),
        ("function", functions::SUBCOMMANDS),
        ("latency", latency::SUBCOMMANDS),
        ("memory", memory::SUBCOMMANDS),
        ("module", module::SUBCOMMANDS),
        ("object", object::SUBCOMMANDS),
        ("pubsub", pubsub::SUBCOMMANDS),
        ("script", scripting::SUBCOMMANDS),
        ("slowlog", slowlog::SUBCOMMANDS),
        ("xgroup", streams::XGROUP_SUBCOMMANDS),
        ("xinfo", streams::XINFO_SUBCOMMANDS),
    ];
    let client = connection::CLIENT_SUBCOMMANDS.iter().copied();
    containers
        .iter()
        .flat_map(|(container, subs)| subs.iter().map(move |sub| (*container, sub.name)))
        .chain(client.map(|sub| ("client", sub)))
        .map(|(container, sub)| format!("{container}|{sub}"))
        .collect()
});

/// Every subcommand the engine serves, `container|sub` (for the tests).
#[cfg(test)]
pub(crate) fn served_names() -> Vec<String> {
    SUBCOMMANDS.iter().cloned().collect()
}

/// Whether the engine serves the subcommand `full_name` (`config|get`)
/// as Redis `version`.
pub(crate) fn serves_subcommand(full_name: &str, version: RedisVersion) -> bool {
    SUBCOMMANDS.contains(full_name)
        && command_table::meta(full_name).is_none_or(|m| command_table::serves(m, version))
}

/// Whether Redis `version` has the command of `entry`.
fn in_version(entry: &(&'static Spec, Option<&'static Meta>), version: RedisVersion) -> bool {
    entry.1.is_none_or(|m| command_table::serves(m, version))
}

/// Every command of the table Redis `version` has (COMMAND, COMMAND
/// COUNT), in no order.
pub(crate) fn all_specs(version: RedisVersion) -> impl Iterator<Item = &'static Spec> {
    (TABLE.values())
        .filter(move |entry| in_version(entry, version))
        .map(|(spec, _)| *spec)
}

/// Finds a command by name, case-insensitively, without allocating,
/// whatever version has it (see [`lookup_in`]).
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Spec> {
    TABLE.get(name).map(|(spec, _)| *spec)
}

/// [`lookup`] of a command Redis `version` has: a command a later version
/// adds is an unknown command.
pub(crate) fn lookup_in(name: &[u8], version: RedisVersion) -> Option<&'static Spec> {
    (TABLE.get(name))
        .filter(|entry| in_version(entry, version))
        .map(|(spec, _)| *spec)
}

/// [`lookup`] with Redis's description of the command line `args` runs
/// (the subcommand's for a container, see [`command_table::of_line`]), in one
/// lookup for a command without subcommands. `(None, None)` for a name
/// Redis does not know; `(None, Some(meta))` for one the engine does not
/// run.
pub(crate) fn described(
    args: &[&[u8]],
    version: RedisVersion,
) -> (Option<&'static Spec>, Option<&'static Meta>) {
    let Some(name) = args.first() else {
        return (None, None);
    };
    let (spec, meta) = match TABLE.get(name) {
        Some((spec, Some(top))) if top.subcommands.is_empty() => (Some(*spec), Some(*top)),
        Some((spec, _)) => (Some(*spec), command_table::of_line(args)),
        None => (None, command_table::of_line(args)),
    };
    match meta {
        Some(meta) if !command_table::serves(meta, version) => (None, None),
        // The row as the version describes it: 7.4 changed some flags
        // (WAIT runs in scripts).
        _ => (spec, meta.map(|m| command_table::as_of(m, version))),
    }
}

/// The error Redis gives for an unknown command. Like Redis (`%.128s` and
/// `'%.*s'` in server.c) it quotes the name up to 128 bytes and the
/// arguments until 128 bytes of them are shown, cutting the last one to
/// fit; C strings also end at a NUL byte.
pub(crate) fn unknown_command(args: &[&[u8]]) -> CmdError {
    const LIMIT: usize = 128;
    fn c_str(bytes: &[u8], max: usize) -> &[u8] {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        &bytes[..end.min(max)]
    }
    let name = args.first().map_or(&b""[..], |n| c_str(n, LIMIT));
    let mut quoted: Vec<u8> = Vec::new();
    for arg in args.iter().skip(1) {
        if quoted.len() >= LIMIT {
            break;
        }
        quoted.push(b'\'');
        quoted.extend_from_slice(c_str(arg, LIMIT - quoted.len() + 1));
        quoted.extend_from_slice(b"' ");
    }
    CmdError::err(format!(
        "unknown command '{}', with args beginning with: {}",
        String::from_utf8_lossy(name),
        String::from_utf8_lossy(&quoted)
    ))
}

/// The error Redis gives for a wrong argument count.
pub(crate) fn wrong_arity(spec: &Spec) -> CmdError {
    CmdError::err(format!(
        "wrong number of arguments for '{}' command",
        spec.name
    ))
}

/// The arity error of the command in `args`, for the handlers that check
/// their arguments further than the table can (pairs, an optional count).
pub(crate) fn arity_error(args: &[&[u8]]) -> CmdError {
    args.first()
        .and_then(|name| lookup(name))
        .map_or(CmdError::Syntax, wrong_arity)
}

/// One subcommand of a container command (CONFIG GET, OBJECT ENCODING...),
/// with its own arity as Redis 7 declares it (`config|get` is `-3`).
pub(crate) struct Sub {
    /// Lower-case name.
    pub(crate) name: &'static str,
    pub(crate) arity: i32,
    pub(crate) handler: Handler,
}

/// Runs the subcommand `args[1]` of the container `args[0]` found in
/// `subs`, with Redis 7's errors: "unknown subcommand 'x'. Try OBJECT
/// HELP." and "wrong number of arguments for 'object|encoding' command".
/// The container's own arity is checked by the table.
pub(crate) fn run_subcommand(ctx: &mut Ctx<'_>, args: &[&[u8]], subs: &[Sub]) -> CmdResult {
    let container = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
    let Some(&name) = args.get(1) else {
        return Err(arity_error(args));
    };
    let Some(sub) = subs
        .iter()
        .find(|s| name.eq_ignore_ascii_case(s.name.as_bytes()))
    else {
        return Err(unknown_subcommand(&container, name));
    };
    let spec = Spec {
        name: sub.name,
        arity: sub.arity,
        handler: sub.handler,
    };
    if !spec.arity_ok(args.len()) {
        return Err(subcommand_arity(&container, sub.name));
    }
    (sub.handler)(ctx, args)
}

/// The reply of a HELP subcommand, as Redis's `addReplyHelp` builds it: a
/// first line naming the container, the given lines, then HELP's own, all
/// as simple strings (HELP's wording is `version`'s).
pub(crate) fn help_reply(version: crate::RedisVersion, container: &str, lines: &[&str]) -> Reply {
    let first = format!(
        "{} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        container.to_ascii_uppercase()
    );
    let mut items = vec![reply::simple(&first)];
    items.extend(lines.iter().map(|l| reply::simple(l)));
    items.push(reply::simple("HELP"));
    items.push(reply::simple(if version >= crate::RedisVersion::V7_4 {
        "    Print this help."
    } else {
        "    Prints this help."
    }));
    reply::array(items)
}

/// A HELP text whose lines differ between the versions the engine follows:
/// each version's lines, as its redis-server prints them (without the
/// first line and HELP's own, which [`help_reply`] adds).
pub(crate) struct HelpText {
    /// Redis 7.0.15's lines.
    pub(crate) v7_0: &'static [&'static str],
    /// Redis 7.4.1's lines.
    pub(crate) v7_4: &'static [&'static str],
}

impl HelpText {
    /// `container HELP`'s reply in `version`'s text ([`help_reply`]).
    pub(crate) fn reply(&self, version: crate::RedisVersion, container: &str) -> Reply {
        let lines = match version {
            crate::RedisVersion::V7_0 => self.v7_0,
            crate::RedisVersion::V7_4 => self.v7_4,
        };
        help_reply(version, container, lines)
    }
}

/// The world a command sees: the whole store (SELECT, FLUSHALL and MOVE
/// need it), the selected database and the time.
pub(crate) struct Ctx<'a> {
    pub(crate) store: &'a mut Store,
    pub(crate) db: usize,
    pub(crate) now: i64,
    /// Whether the command may block (BLPOP...), and whether it did: see
    /// [`crate::command::blocking`].
    pub(crate) block: blocking::BlockSlot,
    /// The client's protocol, 2 or 3 (HELLO). Replies are built typed
    /// (maps, sets, doubles) whatever it is and lowered to RESP2 in one
    /// place; a command reads it only where Redis's own command does
    /// (`c->resp > 2`): the [member, score] pairs of WITHSCORES replies.
    pub(crate) resp: u8,
}

impl Ctx<'_> {
    /// Whether the client speaks RESP3.
    pub(crate) fn resp3(&self) -> bool {
        self.resp >= 3
    }
}

impl Ctx<'_> {
    /// Publishes the keyspace event `event` (Redis's name: `"lpush"`,
    /// `"del"`, ...) of class `class` (see [`crate::notify::class`]) for `key` of the
    /// selected database, as configured by `notify-keyspace-events`. Call
    /// it after the change, where Redis calls `notifyKeyspaceEvent`.
    pub(crate) fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        let db = self.db;
        self.store.notify(db, class, event, key);
    }

    /// [`Self::notify`] for a key of another database (MOVE, COPY ... DB).
    pub(crate) fn notify_in(&mut self, db: usize, class: u32, event: &str, key: &[u8]) {
        self.store.notify(db, class, event, key);
    }
}

impl Ctx<'_> {
    /// The selected database.
    pub(crate) fn ks(&mut self) -> &mut Keyspace {
        &mut self.store.dbs[self.db]
    }

    /// The command made `n` changes as Redis counts them (INFO's
    /// `rdb_changes_since_last_save`, the save points): see
    /// [`Keyspace::set_changes`]. Call it last, after the command's
    /// writes and deletions.
    pub(crate) fn changes(&mut self, n: usize) {
        self.ks().set_changes(n);
    }

    /// The live entry at `key`, looked up to be written (see
    /// [`Self::contains_for_write`]).
    pub(crate) fn entry(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let now = self.now;
        self.ks().entry(key, now)
    }

    /// The live entry at `key`, looked up as a read (counted, as
    /// [`Self::read`]).
    pub(crate) fn entry_read(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let now = self.now;
        self.ks().entry_read(key, now)
    }

    pub(crate) fn value(&mut self, key: &[u8]) -> Option<&Value> {
        let now = self.now;
        self.ks().value(key, now)
    }

    /// The live value at `key` without counting an access (OBJECT
    /// IDLETIME, the LFU counter), but as a read (keyspace hits and
    /// misses, `keymiss`): what Redis's `LOOKUP_NOTOUCH` lookups read
    /// (EXISTS, TYPE, TTL and its family).
    pub(crate) fn value_untouched(&mut self, key: &[u8]) -> Option<&Value> {
        let now = self.now;
        self.ks().read_untouched(key, now, true).map(|e| &e.value)
    }

    pub(crate) fn contains(&mut self, key: &[u8]) -> bool {
        let now = self.now;
        self.ks().contains(key, now)
    }

    /// Whether `key` is live, looked up to be written (Redis's
    /// `lookupKeyWrite`): an access, but no read for INFO's keyspace hits
    /// and misses, which count [`Self::value`], [`Self::read`] and
    /// [`Self::contains`].
    pub(crate) fn contains_for_write(&mut self, key: &[u8]) -> bool {
        let now = self.now;
        self.ks().entry(key, now).is_some()
    }

    /// Mutable access to the value at `key` as type `T`, looked up as a
    /// read (counted, as [`Self::read`]; the stream commands that read
    /// change what they read).
    pub(crate) fn read_mut<T: Kind>(&mut self, key: &[u8]) -> Result<Option<&mut T>, CmdError> {
        let now = self.now;
        self.ks().read_mut(key, now)
    }

    /// The live value at `key`, looked up to be written (see
    /// [`Self::contains_for_write`]).
    pub(crate) fn value_for_write(&mut self, key: &[u8]) -> Option<&Value> {
        let now = self.now;
        self.ks().entry(key, now).map(|e| &e.value)
    }

    /// The value at `key` as type `T` (WRONGTYPE otherwise), looked up to
    /// be written (see [`Self::contains_for_write`]).
    pub(crate) fn read_for_write<T: Kind>(&mut self, key: &[u8]) -> Result<Option<&T>, CmdError> {
        let now = self.now;
        Ok(self.ks().write::<T>(key, now)?.map(|v| &*v))
    }

    /// The value at `key` as type `T` (WRONGTYPE otherwise), if any.
    pub(crate) fn read<T: Kind>(&mut self, key: &[u8]) -> Result<Option<&T>, CmdError> {
        let now = self.now;
        self.ks().read(key, now)
    }

    /// The values at `keys`, for the commands that read several at once
    /// (SINTER, ZUNIONSTORE...): looked up in argument order as Redis does
    /// (passive expiry included), WRONGTYPE for the first value `accept`
    /// refuses even after a missing key, `None` for a missing key.
    pub(crate) fn read_all(
        &mut self,
        keys: &[&[u8]],
        accept: fn(&Value) -> bool,
    ) -> Result<Vec<Option<&Value>>, CmdError> {
        for key in keys {
            if self.value(key).is_some_and(|v| !accept(v)) {
                return Err(CmdError::WrongType);
            }
        }
        let now = self.now;
        let ks = &*self.ks();
        Ok(keys.iter().map(|key| ks.peek(key, now)).collect())
    }

    /// Mutable access to the value at `key` as type `T`, if any.
    pub(crate) fn write<T: Kind>(&mut self, key: &[u8]) -> Result<Option<&mut T>, CmdError> {
        let now = self.now;
        self.ks().write(key, now)
    }

    /// [`Self::write`] of the list at `key`, converted first if `added`
    /// would outgrow its listpack (see
    /// [`crate::keyspace::Keyspace::write_list_growing`]).
    pub(crate) fn write_list_growing(
        &mut self,
        key: &[u8],
        added: &[u8],
    ) -> Result<Option<&mut crate::value::list::ListValue>, CmdError> {
        let now = self.now;
        self.ks().write_list_growing(key, now, added)
    }

    /// Mutable access to the value at `key`, created empty if missing.
    pub(crate) fn write_or_create<T: Kind>(&mut self, key: &[u8]) -> Result<&mut T, CmdError> {
        let now = self.now;
        self.ks().write_or_create(key, now)
    }

    /// Replaces the value at `key`, clearing its TTL unless `keep_ttl`.
    pub(crate) fn set(&mut self, key: &[u8], value: Value, keep_ttl: bool) {
        let now = self.now;
        self.ks().set(key, value, keep_ttl, now)
    }

    /// Deletes `key`; returns whether a live key was deleted.
    pub(crate) fn remove(&mut self, key: &[u8]) -> bool {
        self.remove_lazily(key, false)
    }

    /// [`Self::remove`], run lazily if `lazy` (UNLINK, and DEL under
    /// `lazyfree-lazy-user-del`): a value Redis would free in the
    /// background counts as such (see [`crate::lazyfree`]).
    pub(crate) fn remove_lazily(&mut self, key: &[u8], lazy: bool) -> bool {
        let now = self.now;
        let ks = self.ks();
        // An expired key is gone, even one a CLIENT PAUSE keeps.
        if ks.expire_if_needed(key, now) {
            return false;
        }
        let Some(removed) = ks.remove(key) else {
            return false;
        };
        ks.freed(&removed.value, removed.history, lazy);
        true
    }

    /// Marks `key` modified (for WATCH). Call after every change of a value
    /// made through [`Self::write`] or [`Self::write_or_create`].
    pub(crate) fn modified(&mut self, key: &[u8]) {
        self.ks().modified(key)
    }

    /// [`Self::modified`] after writing `written` into the hash or
    /// sorted set at `key` (see `Keyspace::modified_with`).
    pub(crate) fn modified_with<'a>(
        &mut self,
        key: &[u8],
        written: impl IntoIterator<Item = &'a [u8]>,
    ) {
        self.ks().modified_with(key, written)
    }

    /// Deletes `key` if it holds an empty aggregate.
    pub(crate) fn drop_if_empty(&mut self, key: &[u8]) {
        self.ks().drop_if_empty(key)
    }

    /// Raises `del` for `key` if it is gone: after an element removal
    /// that may have emptied it, as Redis does after its own event.
    pub(crate) fn notify_deleted(&mut self, key: &[u8]) {
        if crate::notify::enabled(self.store.notify_flags, crate::notify::class::GENERIC)
            && !self.ks().exists_raw(key)
        {
            self.notify(crate::notify::class::GENERIC, "del", key);
        }
    }
}

/// HDEL, SREM and ZREM: removes the elements `args[2..]` from the
/// collection at `args[1]` with `remove` (which tells whether the element
/// was there) and replies how many were. Like Redis, deletes a collection
/// left empty, and marks the key modified and raises `event` (then `del`
/// if the key went) only if something was removed.
pub(crate) fn remove_elements<T: Kind>(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    event: (u32, &'static str),
    remove: fn(&mut T, &[u8]) -> bool,
) -> CmdResult {
    let key = args[1];
    let Some(collection) = ctx.write::<T>(key)? else {
        return Ok(reply::int(0));
    };
    let removed = args[2..].iter().filter(|e| remove(collection, e)).count();
    if removed > 0 {
        ctx.drop_if_empty(key);
        ctx.modified(key);
        ctx.notify(event.0, event.1, key);
        ctx.notify_deleted(key);
        ctx.changes(removed);
    }
    Ok(reply::int(removed))
}

/// Runs one command (not a transaction-control one) against the store.
pub(crate) fn run(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_found(ctx, args, None)
}

/// [`run`], with the command's spec if the caller found it already (by
/// [`lookup_in`] or [`described`], for this version): else it is looked up.
pub(crate) fn run_found(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    found: Option<&'static Spec>,
) -> CmdResult {
    let Some(name) = args.first() else {
        return Err(CmdError::err("empty command"));
    };
    let spec = match found {
        Some(spec) => spec,
        None => lookup_in(name, ctx.store.version).ok_or_else(|| unknown_command(args))?,
    };
    if !spec.arity_ok(args.len()) {
        ctx.store.command_stats.record_rejected(args);
        return Err(wrong_arity(spec));
    }
    run_spec(ctx, spec, args)
}

/// Runs the command of `spec`, its arguments checked.
pub(crate) fn run_spec(ctx: &mut Ctx<'_>, spec: &'static Spec, args: &[&[u8]]) -> CmdResult {
    ctx.store.commands_processed += 1;
    let untouched = ctx.store.no_touch;
    ctx.ks().begin_command(untouched);
    // Client-side caching: whether this command's reads are tracked (a
    // script's, with the script's declared keys).
    let tracks = ctx.store.tracking.tracks_reads();
    if tracks && !ctx.store.in_script {
        ctx.store.track_script_caller(args);
    }
    let aof_before = ctx.store.aof.on.then(|| ctx.store.changes());
    let result = (spec.handler)(ctx, args);
    if let Some(before) = aof_before {
        ctx.store.aof_after_command(ctx.db, args, &result, before);
    }
    // The `new` and `expired` events the command raised and did not
    // publish through a `notify` of its own.
    ctx.store.flush_notifications();
    if tracks {
        ctx.store.track_read(args);
    }
    // An error returned as a reply value (a script's error table) fails
    // the call too.
    let failed = !matches!(result, Ok(ref v) if !matches!(v, redis::Value::ServerError(_)));
    // From Redis 7.2 on a command that blocks is counted when its wait
    // ends (see `blocking`), as the command it then runs again.
    let blocked = matches!(ctx.block, blocking::BlockSlot::Requested(_));
    if !(blocked && ctx.store.version >= crate::RedisVersion::V7_4) {
        ctx.store.command_stats.record(spec, args, failed);
    }
    result
}

/// The number of databases, as Redis's default `databases 16`.
pub(crate) const DATABASES: usize = 16;

pub(crate) use memory::used_memory;

impl Store {
    /// Samples the counters INFO gives rates of, at `now_ms`: once a
    /// tick of the background cycle, as Redis's `serverCron` does.
    pub(crate) fn sample_rates(&mut self, now_ms: i64) {
        self.ops_rate.sample(now_ms, self.commands_processed);
        let (input, output) = self.net.totals();
        self.net_input_rate.sample(now_ms, input);
        self.net_output_rate.sample(now_ms, output);
    }

    /// Whether the data is over `maxmemory` now (false without a limit),
    /// remembered as the state the running command started in.
    pub(crate) fn out_of_memory(&mut self) -> bool {
        self.maxmemory.check(&self.dbs, memory::used_memory_of)
    }

    /// LATENCY's `expire-del` event: the longest delete of an expired key
    /// in each database since the last look, at Unix ms `now`.
    pub(crate) fn sample_expire_dels(&mut self, now: i64) {
        if self.latency.monitoring() {
            self.sample_expire_dels_now(now);
        }
    }

    /// [`Self::sample_expire_dels`] with the monitor on.
    #[cold]
    #[inline(never)]
    fn sample_expire_dels_now(&mut self, now: i64) {
        for ks in &mut self.dbs {
            let ms = ks.take_slowest_expire_del();
            if ms > 0 {
                self.latency.sample("expire-del", ms, now.div_euclid(1000));
            }
        }
    }
}

/// All numbered databases of one engine, its configuration, and the
/// server state commands share (stats, scripts, blocked clients, ACL).
#[derive(Debug)]
pub(crate) struct Store {
    pub(crate) dbs: Vec<Keyspace>,
    /// CONFIG GET / SET's parameters. Change them through
    /// [`Store::set_config`] so that the keyspaces see the new limits.
    pub(crate) config: Config,
    /// When the engine started, in Unix ms (INFO's uptime).
    pub(crate) started_ms: i64,
    /// The engine's clock: what blocked clients are served at, after the
    /// command that made their keys ready (a long EXEC's time has moved on).
    pub(crate) clock: crate::clock::Shared,
    /// Commands run since the start or CONFIG RESETSTAT (INFO stats).
    pub(crate) commands_processed: u64,
    /// Their rate (INFO's `instantaneous_ops_per_sec`), sampled by the
    /// background cycle ([`Store::sample_rates`]).
    pub(crate) ops_rate: stats::Rate,
    /// The bytes the RESP server's connections read and wrote, shared
    /// with them (each counts its own without the lock), and their rates,
    /// sampled as `ops_rate` is.
    pub(crate) net: std::sync::Arc<stats::NetBytes>,
    pub(crate) net_input_rate: stats::Rate,
    pub(crate) net_output_rate: stats::Rate,
    /// Scripts and functions Redis would have freed in the background
    /// (INFO's `lazyfreed_objects`, with the databases' own count; see
    /// [`crate::lazyfree`]), reset with the above.
    pub(crate) lazyfreed_objects: u64,
    /// The most memory INFO or MEMORY STATS has seen in use (INFO's
    /// `used_memory_peak`), as Redis samples it.
    pub(crate) peak_memory: u64,
    /// Clients with a watched key (Redis 7.4's INFO `watching_clients`).
    pub(crate) watching_clients: usize,
    /// Calls per command (INFO commandstats), reset with the above.
    pub(crate) command_stats: stats::CommandStats,
    /// RESP connections open now, and ever accepted (INFO).
    pub(crate) connected_clients: usize,
    pub(crate) connections_received: u64,
    /// 40 random hex digits naming this engine's run (INFO's `run_id`).
    pub(crate) run_id: String,
    /// The running script, as other connections see it.
    pub(crate) busy: std::sync::Arc<script::busy::Busy>,
    /// A script is running: SORT BY a constant sorts sets, as Redis does
    /// for scripts.
    pub(crate) in_script: bool,
    /// The running command's client set CLIENT NO-TOUCH and the command is
    /// not TOUCH: its reads change no key's access time (Redis 7.4).
    pub(crate) no_touch: bool,
    /// EVAL's Lua state and script cache.
    pub(crate) scripts: script::Scripts,
    /// FUNCTION's libraries (server state: FLUSHALL leaves them).
    pub(crate) functions: script::library::Functions,
    /// Cluster mode (`cluster-enabled yes`): one node serving every slot,
    /// refusing what a cluster node refuses (see `cluster`).
    pub(crate) cluster_enabled: bool,
    /// The IP and port the RESP server announces in CLUSTER SLOTS, SHARDS
    /// and NODES (cluster mode, served over RESP).
    pub(crate) announced: Option<(String, u16)>,
    /// Pub/Sub's subscribers and what they listen to.
    pub(crate) pubsub: crate::pubsub::Registry,
    /// `notify-keyspace-events` (`notify::class` bits), 0 when off.
    pub(crate) notify_flags: u32,
    /// The clients blocked on keys (BLPOP...): see `blocking`.
    pub(crate) waiters: blocking::Waiters,
    /// ACL's users and log, and who runs the current command.
    pub(crate) acl: crate::acl::Acl,
    /// A RESP connection's output buffer, lent to the command running now
    /// when that command may write its reply there itself (LRANGE, see
    /// `command::lists::lrange`): a reply of many elements then costs no
    /// typed value and no heap block per element, which were half of
    /// LRANGE's time. `None` everywhere else (in-process calls, scripts,
    /// transactions), where commands build typed replies.
    pub(crate) reply_out: Option<Vec<u8>>,
    /// CLIENT PAUSE's pause, if one is on.
    pub(crate) pause: pause::ClientPause,
    /// SLOWLOG's entries.
    pub(crate) slowlog: slowlog::SlowLog,
    /// SAVE and BGSAVE's state (INFO persistence, LASTSAVE).
    pub(crate) saves: persistence::Saves,
    /// The engine's own directory, `dir` unless it is set at start.
    pub(crate) own_dir: persistence::OwnDir,
    /// The append-only file (see `crate::aof`).
    pub(crate) aof: crate::aof::Aof,
    /// Client-side caching: who tracks which keys (see `crate::tracking`).
    pub(crate) tracking: crate::tracking::Tracking,
    /// LATENCY's events and the commands' latency histograms.
    pub(crate) latency: latency::Latency,
    /// `maxmemory` and the data's estimated size (the OOM refusal).
    pub(crate) maxmemory: maxmemory::MaxMemory,
    /// The clients MONITOR feeds.
    pub(crate) monitors: crate::monitor::Monitors,
    /// Whether the active expiry cycle runs (DEBUG SET-ACTIVE-EXPIRE).
    pub(crate) active_expire: bool,
    /// The replication id (INFO's `master_replid`; DEBUG CHANGE-REPL-ID).
    pub(crate) replid: String,
    /// DEBUG QUICKLIST-PACKED-THRESHOLD's size, kept (see `debug`).
    pub(crate) quicklist_packed_threshold: u64,
    /// The Redis version the engine behaves as (see `crate::version`).
    pub(crate) version: crate::RedisVersion,
}

/// 40 random hex digits: the run id and replication id Redis makes.
pub(crate) fn random_hex_id() -> String {
    (0..40)
        .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16)]))
        .collect()
}

impl Default for Store {
    fn default() -> Self {
        let mut config = Config::default();
        let own_dir = persistence::OwnDir::new();
        // `dir` is set at start, as on Redis: to the engine's own unless
        // the engine is made on files elsewhere.
        let own = own_dir.path().to_string_lossy().into_owned();
        let _ = config.set_at_start("dir", own.as_bytes());
        let limits = config.limits();
        let busy = std::sync::Arc::new(script::busy::Busy::default());
        Store {
            dbs: (0..DATABASES)
                .map(|_| {
                    let mut ks = Keyspace::default();
                    ks.set_limits(limits);
                    ks
                })
                .collect(),
            config,
            started_ms: 0,
            clock: Default::default(),
            commands_processed: 0,
            ops_rate: stats::Rate::default(),
            net: Default::default(),
            net_input_rate: stats::Rate::default(),
            net_output_rate: stats::Rate::default(),
            lazyfreed_objects: 0,
            peak_memory: 0,
            watching_clients: 0,
            command_stats: Default::default(),
            connected_clients: 0,
            connections_received: 0,
            run_id: random_hex_id(),
            in_script: false,
            no_touch: false,
            scripts: script::Scripts::new(busy.clone()),
            functions: script::library::Functions::new(busy.clone()),
            busy,
            cluster_enabled: false,
            version: crate::RedisVersion::default(),
            announced: None,
            reply_out: None,
            pubsub: {
                let mut registry = crate::pubsub::Registry::default();
                registry.set_limit(limits.pubsub_limit);
                registry
            },
            notify_flags: limits.notify,
            waiters: Default::default(),
            acl: Default::default(),
            pause: Default::default(),
            slowlog: {
                let mut log = slowlog::SlowLog::default();
                log.configure(&limits);
                log
            },
            saves: Default::default(),
            own_dir,
            aof: Default::default(),
            tracking: Default::default(),
            monitors: Default::default(),
            latency: {
                let mut latency = latency::Latency::default();
                latency.configure(&limits);
                latency
            },
            maxmemory: {
                let mut maxmemory = maxmemory::MaxMemory::default();
                maxmemory.configure(&limits);
                maxmemory
            },
            active_expire: true,
            replid: random_hex_id(),
            quicklist_packed_threshold: 1 << 30,
        }
    }
}

impl Store {
    /// CONFIG SET: validates and stores the pairs, then hands the new
    /// limits to every keyspace.
    pub(crate) fn set_config(&mut self, pairs: &[&[u8]]) -> Result<(), CmdError> {
        self.config.set(pairs)?;
        // `requirepass` is the default user's password, as in Redis;
        // `acllog-max-len` bounds ACL LOG.
        let named = |name: &str| {
            pairs
                .iter()
                .step_by(2)
                .any(|p| p.eq_ignore_ascii_case(name.as_bytes()))
        };
        if named("requirepass") {
            let password = self.config.get("requirepass").as_bytes().to_vec();
            crate::acl::set_requirepass(&mut self.acl, &password);
        }
        if named("acllog-max-len") {
            self.acl.log_limit = self.config.get("acllog-max-len").parse().unwrap_or(128);
        }
        let limits = self.config.limits();
        for ks in &mut self.dbs {
            ks.set_limits(limits);
            // Events logged under the old flags are not published late.
            ks.take_events();
        }
        self.pubsub.set_limit(limits.pubsub_limit);
        self.notify_flags = limits.notify;
        self.slowlog.configure(&limits);
        self.latency.configure(&limits);
        self.maxmemory.configure(&limits);
        Ok(())
    }

    /// Publishes a keyspace event of `key` in `db` (see `notify`), after
    /// the events the keyspaces logged themselves before it.
    pub(crate) fn notify(&mut self, db: usize, class: u32, event: &str, key: &[u8]) {
        if !crate::notify::enabled(self.notify_flags, class) {
            return;
        }
        self.flush_notifications();
        self.publish_event(db, event, key);
    }

    /// Publishes the events the keyspaces logged (`new`, `expired`), and
    /// sends the invalidations of the keys they changed.
    pub(crate) fn flush_notifications(&mut self) {
        self.flush_invalidations();
        if self.notify_flags != 0 {
            self.publish_events();
        }
    }

    /// [`Self::flush_notifications`] with keyspace events on (they are
    /// off unless configured): out of the path every command takes.
    #[cold]
    #[inline(never)]
    fn publish_events(&mut self) {
        for db in 0..self.dbs.len() {
            for (event, key) in self.dbs[db].take_events() {
                self.publish_event(db, event, &key);
            }
        }
    }

    fn publish_event(&mut self, db: usize, event: &str, key: &[u8]) {
        for (channel, payload) in crate::notify::messages(self.notify_flags, db, event, key) {
            self.pubsub.publish(&channel, &payload);
        }
    }
}
