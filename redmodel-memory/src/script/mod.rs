//! Lua scripting as Redis 7.0 embeds it: EVAL and friends run Lua 5.1
//! scripts whose `redis.call` runs engine commands on the same store,
//! under the same lock, so a script is atomic like a transaction.
//!
//! One Lua state per engine, created on first use and kept in the
//! [`Store`](crate::store::Store); each script is compiled once per SHA1 of
//! its body and cached until SCRIPT FLUSH.

mod convert;
mod sandbox;

use std::collections::HashMap;

use mlua::{Function, Lua, MultiValue, Table, Value};

use crate::command::{CmdResult, Ctx};
use crate::error::CmdError;

/// The scripting state of an engine: the Lua state and the compiled scripts.
#[derive(Default)]
pub(crate) struct Scripts {
    lua: Option<Lua>,
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
    fn state(&mut self) -> Result<Lua, CmdError> {
        if let Some(lua) = &self.lua {
            return Ok(lua.clone());
        }
        let lua = sandbox::new_state().map_err(|e| internal(&e))?;
        self.lua = Some(lua.clone());
        Ok(lua)
    }

    /// Compiles `body` unless a script of the same SHA1 is cached; returns
    /// the SHA1 and the compiled function. A syntax error is Redis's
    /// "Error compiling script" error.
    pub(crate) fn load(&mut self, body: &[u8]) -> Result<(String, Function), CmdError> {
        let sha = sha1hex(body);
        if let Some(f) = self.cache.get(&sha) {
            return Ok((sha, f.clone()));
        }
        let lua = self.state()?;
        let env: Table = lua
            .named_registry_value(sandbox::ENV)
            .map_err(|e| internal(&e))?;
        let function = lua
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
        let sha = std::str::from_utf8(sha).ok()?.to_ascii_lowercase();
        self.cache.get(&sha).cloned()
    }

    /// SCRIPT FLUSH: forgets every script and starts a new Lua state, as
    /// Redis does.
    pub(crate) fn flush(&mut self) {
        self.cache.clear();
        self.lua = None;
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
    let lua = ctx.store.scripts.state()?;
    let outcome = run(&lua, ctx, function, keys, argv, read_only).map_err(|e| internal(&e))?;
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

/// Calls the script under the error handler with `redis.call` bound to a
/// client of `ctx`'s store; the reply, or the error table.
fn run(
    lua: &Lua,
    ctx: &mut Ctx<'_>,
    function: Function,
    keys: &[&[u8]],
    argv: &[&[u8]],
    read_only: bool,
) -> mlua::Result<Result<redis::Value, Table>> {
    let globals = lua.globals();
    globals.raw_set("KEYS", strings(lua, keys)?)?;
    globals.raw_set("ARGV", strings(lua, argv)?)?;
    // The script's client: SELECT inside the script does not change the
    // caller's database; the time is frozen at the script's start.
    let mut client = Ctx {
        store: &mut *ctx.store,
        db: ctx.db,
        now: ctx.now,
    };
    lua.scope(|scope| {
        let dispatch = scope.create_function_mut(|lua, args: MultiValue| {
            sandbox::dispatch(lua, &mut client, read_only, args)
        })?;
        lua.set_named_registry_value(sandbox::DISPATCH, dispatch)?;
        let xpcall: Function = lua.named_registry_value(sandbox::XPCALL)?;
        let handler: Function = lua.named_registry_value(sandbox::HANDLER)?;
        let mut ret = xpcall.call::<MultiValue>((function, handler))?.into_iter();
        let ok = matches!(ret.next(), Some(Value::Boolean(true)));
        let value = ret.next().unwrap_or(Value::Nil);
        let result = if ok {
            Ok(convert::lua_to_reply(&value)?)
        } else {
            match value {
                Value::Table(t) => Err(t),
                other => {
                    let t = lua.create_table()?;
                    t.raw_set("err", format!("ERR {other:?}"))?;
                    Err(t)
                }
            }
        };
        lua.unset_named_registry_value(sandbox::DISPATCH)?;
        Ok(result)
    })
}

fn strings(lua: &Lua, items: &[&[u8]]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}
#[cfg(test)]
mod tests;
