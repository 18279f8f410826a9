//! Lua scripting as Redis 7.0 embeds it: EVAL and friends run Lua 5.1
//! scripts whose `redis.call` runs engine commands on the same store,
//! under the same lock, so a script is atomic like a transaction.
//!
//! One Lua state per engine, created on first use and kept in the
//! [`Store`](crate::store::Store); each script is compiled once per SHA1 of
//! its body and cached until SCRIPT FLUSH.

mod call;
mod convert;
mod sandbox;

use std::collections::HashMap;
use std::sync::Arc;

use mlua::{Function, Lua, MultiValue, Table, Value};

use call::Client;
use sandbox::State;

use crate::command::{CmdResult, Ctx};
use crate::error::CmdError;

/// The scripting state of an engine: the Lua state and the compiled scripts.
#[derive(Default)]
pub(crate) struct Scripts {
    state: Option<Arc<State>>,
    /// SHA1 (lower-case hex) -> the compiled script.
    cache: HashMap<String, Function>,
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

fn internal(e: &mlua::Error) -> CmdError {
    CmdError::err(format!("Lua engine failure: {e}"))
}

impl Scripts {
    fn state(&mut self) -> Result<Arc<State>, CmdError> {
        if let Some(state) = &self.state {
            return Ok(Arc::clone(state));
        }
        let state = Arc::new(sandbox::new_state().map_err(|e| internal(&e))?);
        self.state = Some(Arc::clone(&state));
        Ok(state)
    }

    /// Compiles `body` unless a script of the same SHA1 is cached; returns
    /// the SHA1 and the compiled function. A syntax error is Redis's
    /// "Error compiling script" error.
    pub(crate) fn load(&mut self, body: &[u8]) -> Result<(String, Function), CmdError> {
        let sha = sha1hex(body);
        if let Some(f) = self.cache.get(&sha) {
            return Ok((sha, f.clone()));
        }
        let state = self.state()?;
        let env = state.env.clone();
        let function = state
            .lua
            .load(body)
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
        self.cache.insert(sha.clone(), function.clone());
        Ok((sha, function))
    }

    /// Whether the script of this SHA1 (any case) is cached.
    pub(crate) fn exists(&self, sha: &[u8]) -> bool {
        self.get(sha).is_some()
    }

    fn get(&self, sha: &[u8]) -> Option<Function> {
        let sha = std::str::from_utf8(sha).ok()?;
        match self.cache.get(sha) {
            Some(f) => Some(f.clone()),
            None if sha.bytes().any(|b| b.is_ascii_uppercase()) => {
                self.cache.get(&sha.to_ascii_lowercase()).cloned()
            }
            None => None,
        }
    }

    /// SCRIPT FLUSH: forgets every script and starts a new Lua state, as
    /// Redis does.
    pub(crate) fn flush(&mut self) {
        self.cache.clear();
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
    let (sha, function) = match source {
        Source::Body(body) => ctx.store.scripts.load(body)?,
        Source::Sha(sha) => match ctx.store.scripts.get(sha) {
            Some(f) => (String::from_utf8_lossy(sha).to_ascii_lowercase(), f),
            None => {
                return Err(CmdError::raw(
                    "NOSCRIPT No matching script. Please use EVAL.",
                ))
            }
        },
    };
    let state = ctx.store.scripts.state()?;
    let outcome = run(&state, ctx, function, keys, argv, read_only).map_err(|e| internal(&e))?;
    match outcome {
        Ok(reply) => Ok(reply),
        Err(err) => Err(error_reply(&err, &sha)),
    }
}

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
    read_only: bool,
) -> mlua::Result<Result<redis::Value, Table>> {
    let lua = &state.lua;
    set_arguments(lua, keys, argv)?;
    // The script's client: SELECT inside the script does not change the
    // caller's database; the time is frozen at the script's start.
    let mut client = Client {
        ctx: Ctx {
            store: &mut *ctx.store,
            db: ctx.db,
            now: ctx.now,
            // Redis runs scripts with CLIENT_DENY_BLOCKING.
            block: crate::blocking::BlockSlot::Denied,
            // A script's client speaks RESP2 until `redis.setresp(3)`,
            // whatever its caller speaks.
            resp: 2,
        },
        read_only,
    };
    let returned = call::enter(&mut client, || {
        state.xpcall.call::<MultiValue>((function, &state.handler))
    })?;
    let mut ret = returned.into_iter();
    let ok = matches!(ret.next(), Some(Value::Boolean(true)));
    let value = ret.next().unwrap_or(Value::Nil);
    if ok {
        return Ok(Ok(convert::lua_to_reply(&value, client.ctx.resp3())?));
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
/// one costs a handle, created and dropped, which took longer than the
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
