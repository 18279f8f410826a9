//! `redis.call` and `redis.pcall`: a running script's commands, run on the
//! store as the script's own client.
//!
//! The two functions are created once per Lua state. The client they run
//! as exists only while a script runs, borrowed from the EVAL that runs it,
//! so it is lent to them through [`enter`] and [`with`]: a pointer in a
//! thread-local slot, set for the length of the script. mlua's safe tool
//! for lending a borrow to Lua, `Lua::scope`, creates and destroys a Rust
//! function per EVAL: a third of the cost of a small script in
//! process (measured in `bench_models`' `incr`), where a whole script
//! should cost a few commands.

use std::cell::Cell;
use std::ptr;

use mlua::{Lua, MultiValue, Value};

use super::convert::reply_to_lua;
use crate::command::{self, Ctx};
use crate::command_table;
use crate::float::format_double;

/// The address SLOWLOG shows for a script's calls: Redis's Lua client
/// has no socket.
const SCRIPT_CLIENT: &str = "?:0";

/// The client a script runs its commands as.
pub(crate) struct Client<'a> {
    pub(crate) ctx: Ctx<'a>,
    /// EVAL_RO, EVALSHA_RO, FCALL_RO and `no-writes` scripts: write
    /// commands are refused.
    pub(crate) read_only: bool,
    /// Cluster mode: the script may touch keys of several slots (no
    /// shebang, or `allow-cross-slot-keys`).
    pub(crate) cross_slot: bool,
    /// Cluster mode: the slot of the keys touched so far.
    pub(crate) slot: Option<u16>,
    /// `min-replicas-to-write` is not met: the first write is refused.
    pub(crate) no_replicas: bool,
    /// Declared `allow-oom`: `maxmemory` refuses none of its commands.
    pub(crate) allow_oom: bool,
    /// The script has run a write command (it cannot be stopped halfway
    /// any more).
    pub(crate) wrote: bool,
}

thread_local! {
    /// The running script's client, type-erased; null when no script runs
    /// on this thread, or while a command of it is running.
    static CURRENT: Cell<*mut ()> = const { Cell::new(ptr::null_mut()) };
}

/// Puts back the slot's previous value on the way out, unwinding included.
struct Restore(*mut ());

impl Drop for Restore {
    fn drop(&mut self) {
        CURRENT.set(self.0);
    }
}

/// Runs `f` (the script) with `client` lent to the script's commands.
pub(super) fn enter<R>(client: &mut Client<'_>, f: impl FnOnce() -> R) -> R {
    let erased = (client as *mut Client<'_>).cast::<()>();
    let _restore = Restore(CURRENT.replace(erased));
    f()
}

/// Runs `f` with the running script's client; `None` if no script runs.
fn with<R>(f: impl FnOnce(&mut Client<'_>) -> R) -> Option<R> {
    // The slot is emptied while `f` runs, so that no second `&mut` to the
    // client can be made from it, even by a command that ran a script.
    let current = CURRENT.replace(ptr::null_mut());
    if current.is_null() {
        return None;
    }
    let _restore = Restore(current);
    // SAFETY: `current` was set by `enter` on this thread from a `&mut
    // Client` that `enter` holds, unused, until the slot is restored (the
    // `Restore` guards run in reverse order of their creation, unwinding
    // included); the slot is null while this borrow lives, so it is the
    // only one; `f` is generic over the client's lifetime and cannot keep
    // the borrow past its return.
    let client = unsafe { &mut *current.cast::<Client<'_>>() };
    Some(f(client))
}

/// `redis.call`: the command's reply, or the command's error raised as a
/// Lua error (the error handler gives it back Redis's shape).
pub(super) fn call(lua: &Lua, args: MultiValue) -> mlua::Result<Value> {
    match with(|client| run_args(client, args).map(|r| (r, client.ctx.resp3()))) {
        Some(Ok((reply, resp3))) => reply_to_lua(lua, &reply, resp3),
        Some(Err((text, true))) => Err(super::raised::raise_counted(&text)),
        Some(Err((text, false))) => Err(super::raised::raise(&text)),
        None => Err(super::raised::raise(NO_SCRIPT)),
    }
}

/// `redis.pcall`: the command's reply, or its error as an `{err=...}`
/// table (marked if INFO errorstats counted it, so that a script that
/// returns the table does not count it again).
pub(super) fn pcall(lua: &Lua, args: MultiValue) -> mlua::Result<Value> {
    let (text, counted) =
        match with(|client| run_args(client, args).map(|r| (r, client.ctx.resp3()))) {
            Some(Ok((reply, resp3))) => return reply_to_lua(lua, &reply, resp3),
            Some(Err(failed)) => failed,
            None => (NO_SCRIPT.to_string(), false),
        };
    let t = lua.create_table()?;
    t.raw_set("err", text)?;
    if counted {
        t.raw_set(super::raised::COUNTED, true)?;
    }
    Ok(Value::Table(t))
}

/// `redis.setresp(n)`: the protocol the script's commands reply in, and
/// how its booleans return. A Rust function (C in Redis), so that its
/// errors name the line of a script that calls it in tail position.
pub(super) fn set_resp(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    if args.len() != 1 {
        return Err(super::raised::raise(
            "ERR redis.setresp() requires one argument.",
        ));
    }
    // Redis: `int resp = lua_tonumber(...)`, a C cast of the number (0
    // for what is not one).
    let n = match args.into_iter().next() {
        Some(v) => lua.coerce_number(v)?.unwrap_or(0.0),
        None => 0.0,
    };
    let resp = match n {
        t if (2.0..3.0).contains(&t) => 2,
        t if (3.0..4.0).contains(&t) => 3,
        _ => return Err(super::raised::raise("ERR RESP version must be 2 or 3.")),
    };
    match with(|client| client.ctx.resp = resp) {
        Some(()) => Ok(()),
        None => Err(super::raised::raise(
            "ERR redis.setresp can only be called inside a script invocation",
        )),
    }
}

const NO_SCRIPT: &str = "ERR redis.call outside of a running script";

/// Redis's `scriptVerifyACL`: the script's client runs as its caller's
/// user; a refusal is logged (context `lua`).
#[cold]
fn check_acl(
    client: &mut Client<'_>,
    meta: &'static command_table::Meta,
    argv: &[&[u8]],
) -> Result<(), String> {
    let store = &mut *client.ctx.store;
    let Some(user) = store.acl.user_of(store.acl.caller.user.as_deref()) else {
        return Ok(());
    };
    let Err(denied) = user.check(meta, argv) else {
        return Ok(());
    };
    let object = denied.object(meta, argv);
    let caller = &store.acl.caller;
    let error = denied.script_error(meta.name, caller.name(), store.version);
    let entry = crate::acl::log::Entry::new(
        crate::acl::log::Reason::of(denied),
        crate::acl::log::Context::Lua,
        object,
        caller.name(),
        caller,
        client.ctx.now,
    );
    store.acl.logged(entry);
    Err(error)
}

/// `redis.acl_check_cmd`: whether the script's user may run the command
/// (not run).
pub(super) fn acl_check_cmd(_: &Lua, args: MultiValue) -> mlua::Result<bool> {
    let checked = with(|client| {
        let (bytes, ends) = command_args(args)?;
        let argv = split(&bytes, &ends);
        let Some(meta) = command_table::of_line(&argv) else {
            return Err("ERR Invalid command passed to redis.acl_check_cmd()".to_string());
        };
        let acl = &client.ctx.store.acl;
        let user = acl.caller.user.as_deref();
        Ok(acl.is_open(user)
            || acl
                .user_of(user)
                .is_some_and(|u| u.check(meta, &argv).is_ok()))
    });
    match checked {
        Some(Ok(allowed)) => Ok(allowed),
        Some(Err(text)) => Err(super::raised::raise(&text)),
        None => Err(super::raised::raise(
            "ERR redis.acl_check_cmd can only be called inside a script invocation",
        )),
    }
}

/// The arguments of `command_args`, one slice each.
fn split<'b>(bytes: &'b [u8], ends: &[usize]) -> Vec<&'b [u8]> {
    ends.iter()
        .scan(0, |start, &end| {
            let arg = &bytes[*start..end];
            *start = end;
            Some(arg)
        })
        .collect()
}

/// Converts the arguments, then runs them; an error is the reply's text.
/// The error is given with whether INFO errorstats counted it (the
/// command's checks and the command count theirs; the arguments' do not).
fn run_args(client: &mut Client<'_>, args: MultiValue) -> Result<redis::Value, (String, bool)> {
    let (bytes, ends) = command_args(args).map_err(|text| (text, false))?;
    let argv = split(&bytes, &ends);
    run(client, &argv).map_err(|text| (text, true))
}

/// The command's arguments, one after the other in one buffer, and where
/// each ends: strings as they are, numbers as Redis 7.0 prints them
/// (`%.17g`, where Lua's own conversion would give `%.14g`).
fn command_args(values: MultiValue) -> Result<(Vec<u8>, Vec<usize>), String> {
    if values.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call".into());
    }
    // Sized for the usual short arguments: growing it costs more than
    // running many a command.
    let mut bytes = Vec::with_capacity(32 * values.len());
    let mut ends = Vec::with_capacity(values.len());
    for v in values {
        match v {
            Value::String(s) => bytes.extend_from_slice(&s.as_bytes()),
            Value::Integer(n) => bytes.extend_from_slice(format_g17(n as f64).as_bytes()),
            Value::Number(n) => bytes.extend_from_slice(format_g17(n).as_bytes()),
            _ => return Err(ARG_TYPE.into()),
        }
        ends.push(bytes.len());
    }
    Ok((bytes, ends))
}

/// C's `%.17g` as glibc prints it: a NaN keeps its sign (`0/0` is
/// `-nan` on x86), infinities are `inf` / `-inf`.
fn format_g17(n: f64) -> String {
    if n.is_nan() && n.is_sign_negative() {
        "-nan".into()
    } else {
        format_double(n)
    }
}

const ARG_TYPE: &str = "ERR Lua redis lib command arguments must be strings or integers";

/// Redis 7.0's `scriptCall` checks, in its order, then the command. An
/// error is counted in INFO errorstats (a refusal also as a rejected
/// call of the command, the command's own error by the command).
pub(crate) fn run(client: &mut Client<'_>, argv: &[&[u8]]) -> Result<redis::Value, String> {
    let (spec, meta) = match check(client, argv) {
        Ok(found) => found,
        Err(text) => return Err(refused(client, argv, text)),
    };
    let resp3 = client.ctx.resp3();
    let started = std::time::Instant::now();
    let result = command::run_spec(&mut client.ctx, spec, argv);
    let took = started.elapsed();
    // Redis logs and times a script's calls too, as its Lua client's
    // (`?:0`).
    let now = client.ctx.now;
    let store = &mut *client.ctx.store;
    store.latency.command(meta, took, now);
    store.slowlog.record(argv, took, now, Some(SCRIPT_CLIENT));
    let db = client.ctx.db;
    let source = crate::monitor::Source::Script;
    client.ctx.store.monitors.feed(meta, db, source, argv);
    match result {
        Ok(mut reply) => {
            // The script sees the reply as its client's protocol shapes it.
            if !resp3 {
                crate::reply::to_resp2(&mut reply);
            }
            Ok(reply)
        }
        Err(e) => Err(failed(client, &e)),
    }
}

/// A command [`check`] refused with `text`: counted as an error and as
/// a rejected call of the command.
#[cold]
#[inline(never)]
fn refused(client: &mut Client<'_>, argv: &[&[u8]], text: String) -> String {
    let stats = &mut client.ctx.store.command_stats;
    stats.record_error(crate::command::stats::error_code(&text));
    stats.record_rejected(argv);
    text
}

/// The error `e` a command returned: counted, and given as its text.
#[cold]
#[inline(never)]
fn failed(client: &mut Client<'_>, e: &command::CmdError) -> String {
    let text = e.text();
    let stats = &mut client.ctx.store.command_stats;
    stats.record_error(crate::command::stats::error_code(text));
    text.to_string()
}

/// [`run`]'s checks: the command to run, or the refusal.
fn check(
    client: &mut Client<'_>,
    argv: &[&[u8]],
) -> Result<(&'static command::Spec, &'static command_table::Meta), String> {
    // Redis knows every command; the engine runs those it has.
    let (spec, meta) = command::described(argv, client.ctx.store.version);
    let Some(meta) = meta else {
        return Err("ERR Unknown Redis command called from script".into());
    };
    if !command::arity_ok(meta.arity, argv.len()) {
        return Err("ERR Wrong number of args calling Redis command from script".into());
    }
    if meta.has_flag("noscript") {
        return Err("ERR This Redis command is not allowed from script".into());
    }
    let acl = &client.ctx.store.acl;
    if !acl.is_open(acl.caller.user.as_deref()) {
        check_acl(client, meta, argv)?;
    }
    if client.read_only && (meta.has_flag("write") || meta.has_flag("may_replicate")) {
        return Err("ERR Write commands are not allowed from read-only scripts.".into());
    }
    let write = meta.has_flag("write");
    if write && client.no_replicas && !client.wrote {
        return Err(super::NO_REPLICAS.into());
    }
    // Redis's `scriptVerifyOOM`: over `maxmemory` when the script started,
    // a command that may grow the data is refused until the script wrote
    // (it cannot stop halfway then).
    // The flag is looked up last: only over the limit does it matter.
    if !client.allow_oom
        && !client.wrote
        && client.ctx.store.maxmemory.over_at_start()
        && meta.has_flag("denyoom")
    {
        return Err(command::maxmemory::OOM.into());
    }
    if write {
        client.wrote = true;
        // A script that wrote cannot be killed.
        client.ctx.store.busy.wrote();
    }
    if client.ctx.store.cluster_enabled {
        check_slot(client, argv)?;
    }
    let Some(spec) = spec else {
        return Err("ERR Unknown Redis command called from script".into());
    };
    // Redis 7.2 and later run the read without blocking instead.
    if client.ctx.store.version < crate::RedisVersion::V7_4 {
        if let Some(e) = command::block_from_script(argv) {
            return Err(e.text().to_string());
        }
    }
    Ok((spec, meta))
}

/// Cluster mode: Redis's `scriptVerifyClusterState` on a node that owns
/// every slot. A script without a shebang, or flagged
/// `allow-cross-slot-keys`, may touch keys of several slots, one command
/// at a time; others keep to the slot of their first key.
#[cold]
#[inline(never)]
fn check_slot(client: &mut Client<'_>, argv: &[&[u8]]) -> Result<(), String> {
    match crate::cluster::slot_of([argv]) {
        Err(_) => {
            return Err("ERR Script attempted to access a non local key in a cluster node".into())
        }
        Ok(Some(slot)) if !client.cross_slot => match client.slot {
            None => client.slot = Some(slot),
            Some(s) if s != slot => {
                return Err(
                    "ERR Script attempted to access keys that do not hash to the same slot".into(),
                )
            }
            Some(_) => {}
        },
        Ok(_) => {}
    }
    Ok(())
}
