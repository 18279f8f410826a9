//! Lua scripting as Redis 7.0 embeds it: EVAL and friends run Lua 5.1
//! scripts whose `redis.call` runs engine commands on the same store,
//! under the same lock, so a script is atomic like a transaction.
//!
//! One Lua state per engine, created on first use and kept in the
//! [`Store`](crate::command::Store); each script is compiled once per SHA1 of
//! its body and cached until SCRIPT FLUSH.

pub(crate) mod busy;
pub(crate) mod call;
mod convert;
pub(crate) mod flags;
pub(crate) mod library;
mod libs;
mod raised;
mod register;
mod sandbox;

use std::collections::HashMap;
use std::sync::Arc;

use mlua::{Function, Lua, MultiValue, RegistryKey, Table, Value};

use call::Client;
use flags::Flags;
use sandbox::{Kind, State};

use crate::command::{CmdResult, Ctx};
use crate::error::CmdError;

/// The scripting state of an engine: the Lua state and the compiled scripts.
#[derive(Default)]
pub(crate) struct Scripts {
    state: Option<Arc<State>>,
    busy: Arc<busy::Busy>,
    /// SHA1 (lower-case hex) -> the compiled script, kept in Lua's
    /// registry (a `Function` handle held in Rust takes a slot of mlua's
    /// auxiliary stack, which tens of thousands of scripts would exhaust),
    /// and its shebang's flags.
    cache: HashMap<String, (RegistryKey, Flags)>,
    /// The bytes Redis's script cache takes for the cached scripts' SHA1s
    /// and bodies (INFO's `used_memory_scripts_eval`, with the table: see
    /// [`Self::cache_bytes`]).
    cached_bytes: usize,
    /// The version `redis.REDIS_VERSION` reports.
    pub(crate) version: crate::RedisVersion,
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts")
            .field("cached", &self.cache.len())
            .finish_non_exhaustive()
    }
}

/// The lower-case hex SHA1 of `bytes` (script names, `redis.sha1hex`).
pub(crate) fn sha1hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

pub(crate) fn internal(e: &mlua::Error) -> CmdError {
    CmdError::err(format!("Lua engine failure: {e}"))
}

impl Scripts {
    /// No scripts; scripts report to `busy`.
    pub(crate) fn new(busy: Arc<busy::Busy>) -> Self {
        Scripts {
            busy,
            ..Scripts::default()
        }
    }

    fn state(&mut self) -> Result<Arc<State>, CmdError> {
        if let Some(state) = &self.state {
            return Ok(Arc::clone(state));
        }
        let state = Arc::new(
            sandbox::new_state(Kind::Eval, &self.busy, self.version).map_err(|e| internal(&e))?,
        );
        self.state = Some(Arc::clone(&state));
        Ok(state)
    }

    /// Compiles `body` unless a script of the same SHA1 is cached; returns
    /// the SHA1, the compiled function and its flags. A bad shebang or a
    /// syntax error is Redis's error.
    pub(crate) fn load(&mut self, body: &[u8]) -> Result<(String, Function, Flags), CmdError> {
        let sha = sha1hex(body);
        if let Some((f, flags)) = self.get(sha.as_bytes()) {
            return Ok((sha, f, flags));
        }
        let (flags, shebang) = flags::from_shebang(body).map_err(CmdError::err)?;
        let state = self.state()?;
        let env = state.env.clone();
        // The shebang line is left out, its newline kept: the lines keep
        // their numbers.
        let function = state
            .lua
            .load(&body[shebang..])
            .set_name(sandbox::USER_SCRIPT)
            .set_mode(mlua::chunk::ChunkMode::Text)
            .set_environment(env)
            .into_function()
            .map_err(|e| {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    e => e.to_string(),
                };
                CmdError::err(format!("Error compiling script (new function): {msg}"))
            })?;
        let kept = state
            .lua
            .create_registry_value(function.clone())
            .map_err(|e| internal(&e))?;
        self.cache.insert(sha.clone(), (kept, flags));
        state.collect_garbage();
        self.cached_bytes += crate::command::memory::script_bytes(body.len(), self.version);
        Ok((sha, function, flags))
    }

    /// The bytes Redis's script cache would take for these scripts: each
    /// one's SHA1, body and entry, and the table's slots
    /// (`evalScriptsMemory`).
    pub(crate) fn cache_bytes(&self) -> u64 {
        let slots = match self.cache.len() {
            0 => 0,
            n => n.next_power_of_two().max(4),
        };
        (self.cached_bytes + slots * 8) as u64
    }

    /// The Lua state's memory as Redis reports its own (`lua_gc`'s count,
    /// in whole kilobytes); `None` before the first script.
    pub(crate) fn vm_bytes(&self) -> Option<u64> {
        self.state.as_ref().map(|s| s.vm_bytes())
    }

    /// How many scripts are cached (INFO's `number_of_cached_scripts`).
    pub(crate) fn count(&self) -> usize {
        self.cache.len()
    }

    /// Whether the script of this SHA1 (any case) is cached.
    pub(crate) fn exists(&self, sha: &[u8]) -> bool {
        self.get(sha).is_some()
    }

    fn get(&self, sha: &[u8]) -> Option<(Function, Flags)> {
        let sha = std::str::from_utf8(sha).ok()?;
        let (kept, flags) = match self.cache.get(sha) {
            Some(cached) => cached,
            None if sha.bytes().any(|b| b.is_ascii_uppercase()) => {
                self.cache.get(&sha.to_ascii_lowercase())?
            }
            None => return None,
        };
        let function = self.state.as_ref()?.lua.registry_value(kept).ok()?;
        Some((function, *flags))
    }

    /// SCRIPT FLUSH: forgets every script and starts a new Lua state, as
    /// Redis does.
    pub(crate) fn flush(&mut self) {
        self.cache.clear();
        self.cached_bytes = 0;
        self.state = None;
    }
}

/// What EVAL runs: a body, or the SHA1 of a cached one.
pub(crate) enum Source<'a> {
    Body(&'a [u8]),
    Sha(&'a [u8]),
}

/// Runs a script with its KEYS and ARGV. `read_only` (EVAL_RO,
/// EVALSHA_RO) refuses write commands.
pub(crate) fn eval(
    ctx: &mut Ctx<'_>,
    source: Source<'_>,
    keys: &[&[u8]],
    argv: &[&[u8]],
    read_only: bool,
) -> CmdResult {
    let (sha, function, flags) = match source {
        Source::Body(body) => ctx.store.scripts.load(body)?,
        Source::Sha(sha) => match ctx.store.scripts.get(sha) {
            Some((f, flags)) => (String::from_utf8_lossy(sha).to_ascii_lowercase(), f, flags),
            None => {
                return Err(CmdError::raw(
                    "NOSCRIPT No matching script. Please use EVAL.",
                ))
            }
        },
    };
    let state = ctx.store.scripts.state()?;
    let script = Script {
        name: &sha,
        function,
        flags,
        read_only,
    };
    run_script(ctx, &state, script, keys, argv)
}

/// Whether the script the command line `args` runs (EVAL, EVALSHA,
/// FCALL and their `_RO` forms) may grow the data, as Redis's
/// `getCommandFlags` tells for it: a script that declares its flags is
/// `denyoom` unless it declares `allow-oom` or `no-writes`. `None` for a
/// script without a shebang or not found, and for another command: the
/// command's own flags decide.
pub(crate) fn declared_denyoom(store: &crate::command::Store, args: &[&[u8]]) -> Option<bool> {
    let [name, script, ..] = args else {
        return None;
    };
    let name = name.to_ascii_lowercase();
    let flags = match name.as_slice() {
        b"eval" | b"eval_ro" => flags::from_shebang(script).ok()?.0,
        b"evalsha" | b"evalsha_ro" => store.scripts.get(script)?.1,
        b"fcall" | b"fcall_ro" => store.functions.function(script)?.flags,
        _ => return None,
    };
    if flags.contains(Flags::EVAL_COMPAT) {
        return None;
    }
    Some(!flags.contains(Flags::ALLOW_OOM) && !flags.contains(Flags::NO_WRITES))
}

/// FCALL and FCALL_RO: runs the function of this name.
pub(crate) fn fcall(
    ctx: &mut Ctx<'_>,
    name: &[u8],
    keys: &[&[u8]],
    argv: &[&[u8]],
    read_only: bool,
) -> CmdResult {
    let Some(func) = ctx.store.functions.function(name) else {
        return Err(CmdError::err("Function not found"));
    };
    let (fname, callback, flags) = (func.name.clone(), func.callback.clone(), func.flags);
    let state = ctx.store.functions.lua_state()?;
    let function = state
        .lua
        .registry_value::<Function>(&callback)
        .map_err(|e| internal(&e))?;
    let script = Script {
        name: &fname,
        function,
        flags,
        read_only,
    };
    run_script(ctx, &state, script, keys, argv)
}

/// A script or function about to run.
struct Script<'a> {
    /// The SHA1 of a script, the name of a function (in errors).
    name: &'a str,
    function: Function,
    flags: Flags,
    /// Called by EVAL_RO, EVALSHA_RO or FCALL_RO.
    read_only: bool,
}

/// Redis's `scriptPrepareForRun` checks for the script's flags, then the
/// run.
fn run_script(
    ctx: &mut Ctx<'_>,
    state: &State,
    script: Script<'_>,
    keys: &[&[u8]],
    argv: &[&[u8]],
) -> CmdResult {
    let flags = script.flags;
    let compat = flags.contains(Flags::EVAL_COMPAT);
    if !compat {
        if flags.contains(Flags::NO_CLUSTER) && ctx.store.cluster_enabled {
            return Err(CmdError::err(
                "Can not run script on cluster, 'no-cluster' flag is set.",
            ));
        }
        if !flags.contains(Flags::NO_WRITES) && script.read_only {
            return Err(CmdError::err(
                "Can not execute a script with write flag using *_ro command.",
            ));
        }
    }
    // `min-replicas-to-write` on a server without replicas: a script
    // declared to write is refused at once, one without a shebang at its
    // first write.
    // (The settings are read from the keyspace's copy: CONFIG SET keeps
    // it, and reading it costs no lookup by name.)
    let limits = ctx.store.dbs[ctx.db].limits();
    let (no_replicas, threshold) = (limits.min_replicas, limits.busy_reply_threshold);
    if no_replicas && !compat && !flags.contains(Flags::NO_WRITES) {
        return Err(CmdError::raw(NO_REPLICAS));
    }
    // Over `maxmemory` when the command started, a script that may write
    // is refused (`no-writes` implies `allow-oom`).
    if !compat
        && ctx.store.maxmemory.over_at_start()
        && !flags.contains(Flags::ALLOW_OOM)
        && !flags.contains(Flags::NO_WRITES)
    {
        return Err(CmdError::raw(super::maxmemory::SCRIPT_OOM));
    }
    let read_only = script.read_only || (!compat && flags.contains(Flags::NO_WRITES));
    let cross_slot = compat || flags.contains(Flags::ALLOW_CROSS_SLOT);
    // The slot of the declared keys (the caller's CROSSSLOT check has
    // made them one).
    let slot = if ctx.store.cluster_enabled && !keys.is_empty() {
        Some(crate::cluster::slot(keys[0]))
    } else {
        None
    };
    let busy = Arc::clone(&ctx.store.busy);
    let eval = state.kind == Kind::Eval;
    // FUNCTION STATS shows a running function's command.
    let command = if eval {
        Vec::new()
    } else {
        let functions = &ctx.store.functions;
        busy.set_counts(functions.libraries().count(), functions.function_count());
        let mut command = vec![b"fcall".to_vec(), script.name.as_bytes().to_vec()];
        command.push(keys.len().to_string().into_bytes());
        command.extend(keys.iter().chain(argv).map(|a| a.to_vec()));
        command
    };
    // FUNCTION STATS names a running function; a script's SHA is not
    // shown anywhere, so EVAL does not pay for copying it.
    busy.start(
        eval,
        threshold,
        if eval { "" } else { script.name },
        command,
    );
    let how = RunAs {
        read_only,
        cross_slot,
        slot,
        no_replicas,
        allow_oom: flags.contains(Flags::ALLOW_OOM),
    };
    let outcome = run(state, ctx, script.function, keys, argv, how);
    busy.end();
    let outcome = outcome.map_err(|e| internal(&e))?;
    match outcome {
        Ok(reply) => Ok(reply),
        Err(err) => {
            // A command's error that `redis.call` raised is counted in
            // INFO errorstats already, by the command.
            if err.raw_get::<bool>(raised::COUNTED).unwrap_or(false) {
                ctx.store.command_stats.reply_counted();
            }
            Err(error_reply(&err, script.name))
        }
    }
}

/// How a script's commands are checked.
#[derive(Clone, Copy)]
struct RunAs {
    read_only: bool,
    /// May touch keys of several slots (cluster mode).
    cross_slot: bool,
    /// The slot the script's keys so far hash to (cluster mode).
    slot: Option<u16>,
    /// Writes are refused for want of replicas (`min-replicas-to-write`).
    no_replicas: bool,
    /// Declared `allow-oom`.
    allow_oom: bool,
}

/// Redis's reply when `min-replicas-to-write` replicas are not there.
pub(crate) const NO_REPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// An error raised by a script as Redis 7.0 replies it: the `err` text,
/// then where it came from.
fn error_reply(err: &Table, sha: &str) -> CmdError {
    let msg = match err.raw_get::<Value>("err") {
        Ok(Value::String(s)) => s.to_string_lossy(),
        _ => "ERR unknown error".to_string(),
    };
    let source: Option<String> = err.raw_get("source").ok();
    let line: Option<i64> = err.raw_get("line").ok();
    match (source, line) {
        (Some(source), Some(line)) => {
            CmdError::raw(format!("{msg} script: {sha}, on {source}:{line}."))
        }
        _ => CmdError::raw(msg),
    }
}

/// Calls the script under the error handler with `redis.call` running
/// as a client of `ctx`'s store; the reply, or the error table.
fn run(
    state: &State,
    ctx: &mut Ctx<'_>,
    function: Function,
    keys: &[&[u8]],
    argv: &[&[u8]],
    how: RunAs,
) -> mlua::Result<Result<redis::Value, Table>> {
    let lua = &state.lua;
    if state.kind == Kind::Eval {
        set_arguments(lua, keys, argv)?;
    }
    // The script's client: SELECT inside the script does not change the
    // caller's database; the time is frozen at the script's start.
    let mut client = Client {
        ctx: Ctx {
            store: &mut *ctx.store,
            db: ctx.db,
            now: ctx.now,
            // Redis runs scripts with CLIENT_DENY_BLOCKING.
            block: crate::command::blocking::BlockSlot::Denied,
            // A script's client speaks RESP2 until `redis.setresp(3)`,
            // whatever its caller speaks.
            resp: 2,
        },
        read_only: how.read_only,
        cross_slot: how.cross_slot,
        slot: how.slot,
        no_replicas: how.no_replicas,
        allow_oom: how.allow_oom,
        wrote: false,
    };
    let was_in_script = std::mem::replace(&mut client.ctx.store.in_script, true);
    let returned = call::enter(&mut client, || match state.kind {
        Kind::Eval => state.xpcall.call::<MultiValue>((function, &state.handler)),
        Kind::Functions => {
            let keys = lua.create_sequence_from(
                keys.iter()
                    .map(|k| lua.create_string(k))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )?;
            let argv = lua.create_sequence_from(
                argv.iter()
                    .map(|a| lua.create_string(a))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )?;
            state
                .call_with
                .call::<MultiValue>((function, &state.handler, keys, argv))
        }
    });
    client.ctx.store.in_script = was_in_script;
    state.collect_garbage();
    let returned = returned?;
    if client.ctx.store.busy.killed() {
        // The hook went to every line to stop the script; back to normal.
        sandbox::install_hook(lua, Arc::clone(&client.ctx.store.busy), false)?;
    }
    let mut ret = returned.into_iter();
    let ok = matches!(ret.next(), Some(Value::Boolean(true)));
    let value = ret.next().unwrap_or(Value::Nil);
    if ok {
        // An error table of `redis.pcall` returned as it is: its error
        // was counted in INFO errorstats by the command.
        if let Value::Table(t) = &value {
            if t.raw_get::<bool>(raised::COUNTED).unwrap_or(false) {
                client.ctx.store.command_stats.reply_counted();
            }
        }
        return Ok(Ok(convert::lua_to_reply(lua, &value, client.ctx.resp3())?));
    }
    match value {
        Value::Table(t) => Ok(Err(t)),
        other => {
            let t = lua.create_table()?;
            t.raw_set("err", format!("ERR {other:?}"))?;
            Ok(Err(t))
        }
    }
}

/// Sets the globals `KEYS` and `ARGV` to new tables of the strings.
///
/// The strings go straight onto Lua's stack: through mlua's safe API each
/// one costs a handle, created and dropped, which takes longer than the
/// commands of a small script.
fn set_arguments(lua: &Lua, keys: &[&[u8]], argv: &[&[u8]]) -> mlua::Result<()> {
    use mlua::ffi;
    // SAFETY: the closure runs in a protected call on the stack `exec_raw`
    // prepares (a memory error raised inside is caught and returned); it
    // leaves the stack as it found it: each table is pushed, filled and
    // popped by the store into the globals; the pointers and lengths come
    // from live slices.
    unsafe {
        lua.exec_raw::<()>((), |state| {
            for (name, items) in [(c"KEYS", keys), (c"ARGV", argv)] {
                ffi::lua_createtable(state, items.len().try_into().unwrap_or(0), 0);
                for (i, item) in (1..).zip(items) {
                    ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
                    ffi::lua_rawseti(state, -2, i);
                }
                ffi::lua_setfield(state, ffi::LUA_GLOBALSINDEX, name.as_ptr());
            }
        })
    }
}

#[cfg(test)]
mod tests;
