//! The Lua state of an engine: Redis 7.0's libraries and sandbox (see
//! `prelude.lua`), the error handler that gives errors Redis's shape, the
//! `cjson` primitives and the command dispatch behind `redis.call`.

use mlua::{Function, LightUserData, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

use super::convert::reply_to_lua;
use crate::command::{self, Ctx};

/// Registry names of the values the engine keeps in its Lua state.
pub(super) const ENV: &str = "redmodel.env";
pub(super) const HANDLER: &str = "redmodel.handler";
pub(super) const XPCALL: &str = "redmodel.xpcall";
pub(super) const DISPATCH: &str = "redmodel.dispatch";

/// The chunk name of user scripts, as Redis 7.0 names it.
pub(super) const USER_SCRIPT: &str = "@user_script";

/// A new Lua 5.1 state with Redis's libraries (base, table, string, math;
/// no os, io, package or debug) and the sandboxed environment of scripts
/// stored in the registry.
pub(super) fn new_state() -> mlua::Result<Lua> {
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::default(),
    )?;
    let globals = lua.globals();
    lua.set_named_registry_value(XPCALL, globals.raw_get::<Function>("xpcall")?)?;
    lua.set_named_registry_value(HANDLER, lua.create_function(error_handler)?)?;
    let raw_call = lua.create_function(|lua, args: MultiValue| {
        let dispatch: Function = lua.named_registry_value(DISPATCH)?;
        dispatch.call::<MultiValue>(args)
    })?;
    let call = lua.create_function(|lua, args: MultiValue| {
        let dispatch: Function = lua.named_registry_value(DISPATCH)?;
        let mut with_flag = MultiValue::new();
        with_flag.push_back(Value::Boolean(true));
        with_flag.extend(args);
        let (ok, v): (bool, Value) = dispatch.call(with_flag)?;
        if ok {
            return Ok(v);
        }
        let text = match &v {
            Value::Table(t) => t.raw_get::<String>("err")?,
            _ => String::new(),
        };
        Err(mlua::Error::external(Raised(text)))
    })?;
    let sha1hex = lua.create_function(|lua, args: MultiValue| {
        if args.len() != 1 {
            return Err(raise("ERR wrong number of arguments"));
        }
        let bytes = match args.into_iter().next().map(|v| lua.coerce_string(v)) {
            Some(Ok(Some(s))) => s.as_bytes().to_vec(),
            _ => Vec::new(),
        };
        Ok(super::sha1hex(&bytes))
    })?;
    let log = lua.create_function(|_, args: MultiValue| {
        if args.len() < 2 {
            return Err(raise("ERR redis.log() requires two arguments or more."));
        }
        if !matches!(args.front(), Some(Value::Integer(_) | Value::Number(_))) {
            return Err(raise("ERR First argument must be a number (log level)."));
        }
        Ok(())
    })?;
    let raw_encode = lua.create_function(|lua, v: Value| {
        let mut out = Vec::new();
        match encode(lua, &v, &mut out, 0) {
            Ok(()) => Ok((Some(lua.create_string(&out)?), None)),
            Err(msg) => Ok((None, Some(msg))),
        }
    })?;
    let raw_decode = lua.create_function(|lua, v: Value| {
        let Some(s) = lua.coerce_string(v)? else {
            return Ok((
                false,
                Value::String(lua.create_string("bad argument #1 to 'decode' (string expected)")?),
            ));
        };
        match serde_json::from_slice::<serde_json::Value>(&s.as_bytes()) {
            Ok(json) => Ok((true, decode(lua, &json)?)),
            Err(e) => Ok((false, Value::String(lua.create_string(e.to_string())?))),
        }
    })?;
    let env: Table = lua
        .load(include_str!("prelude.lua"))
        .set_name("=redmodel")
        .call((raw_call, call, sha1hex, log, raw_encode, raw_decode, null()))?;
    lua.set_named_registry_value(ENV, env)?;
    Ok(lua)
}

/// An error reply raised by a library function of `redis` (the `err` of
/// the table Redis raises); the error handler turns it back into one.
#[derive(Debug)]
struct Raised(String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

fn raise(text: &str) -> mlua::Error {
    mlua::Error::external(Raised(text.to_string()))
}

/// The error reply carried by an error a Rust function of ours raised.
fn raised_text(e: &mlua::Error) -> Option<String> {
    match e {
        mlua::Error::CallbackError { cause, .. } => raised_text(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<Raised>().map(|r| r.0.clone()),
        mlua::Error::WithContext { cause, .. } => raised_text(cause),
        _ => None,
    }
}

/// `cjson.null`: a NULL light userdata, as lua-cjson's.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// The message handler scripts run under (Redis 7.0's
/// `__redis__err__handler`): a string error becomes `{err='ERR ' .. msg}`,
/// and the error learns the line of the user script it came from.
fn error_handler(lua: &Lua, err: Value) -> mlua::Result<Table> {
    let table = match err {
        Value::Table(t) => t,
        other => {
            if let Value::Error(e) = &other {
                if let Some(text) = raised_text(e) {
                    let t = lua.create_table()?;
                    t.raw_set("err", text)?;
                    return locate(lua, t);
                }
            }
            let msg = match other {
                Value::Error(e) => match *e {
                    mlua::Error::RuntimeError(s) => s,
                    e => e.to_string(),
                },
                v => match lua.coerce_string(v.clone())? {
                    Some(s) => s.to_string_lossy(),
                    None => v.type_name().to_string(),
                },
            };
            let t = lua.create_table()?;
            t.raw_set("err", format!("ERR {msg}"))?;
            t
        }
    };
    locate(lua, table)
}

/// Adds to an error table where in the user script it was raised.
fn locate(lua: &Lua, table: Table) -> mlua::Result<Table> {
    if table.raw_get::<Value>("source")?.is_nil() {
        let mut level = 1;
        while let Some(found) = lua.inspect_stack(level, |d| {
            (d.source().source.as_deref() == Some(USER_SCRIPT)).then(|| d.current_line())
        }) {
            if let Some(line) = found {
                table.raw_set("source", USER_SCRIPT)?;
                table.raw_set("line", line.map_or(-1, |l| l as i64))?;
                break;
            }
            level += 1;
        }
    }
    Ok(table)
}

/// `redis.call` (`raise`) and `redis.pcall`: runs `args` on the store as
/// the script's client. Returns `(true, reply)`, or for a refused or failed
/// command `(false, {err=...})` when raising, `(true, {err=...})` otherwise.
pub(super) fn dispatch(
    lua: &Lua,
    ctx: &mut Ctx<'_>,
    read_only: bool,
    args: MultiValue,
) -> mlua::Result<(bool, Value)> {
    let mut it = args.into_iter();
    let raise = matches!(it.next(), Some(Value::Boolean(true)));
    let result = match command_args(lua, it) {
        Ok(argv) => {
            let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            run(ctx, read_only, &argv)
        }
        Err(msg) => Err(msg.to_string()),
    };
    match result {
        Ok(reply) => Ok((true, reply_to_lua(lua, &reply)?)),
        Err(text) => {
            let t = lua.create_table()?;
            t.raw_set("err", text)?;
            Ok((!raise, Value::Table(t)))
        }
    }
}

/// The command's arguments: strings, and numbers as Lua prints them.
fn command_args(
    lua: &Lua,
    values: impl Iterator<Item = Value>,
) -> Result<Vec<Vec<u8>>, &'static str> {
    let mut argv = Vec::new();
    for v in values {
        let bytes = match v {
            Value::String(s) => s.as_bytes().to_vec(),
            v @ (Value::Integer(_) | Value::Number(_)) => match lua.coerce_string(v) {
                Ok(Some(s)) => s.as_bytes().to_vec(),
                _ => return Err(ARG_TYPE),
            },
            _ => return Err(ARG_TYPE),
        };
        argv.push(bytes);
    }
    if argv.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    Ok(argv)
}

const ARG_TYPE: &str = "ERR Lua redis lib command arguments must be strings or integers";

/// Commands Redis 7.0 flags `noscript`, and the commands the session or
/// the RESP server answer themselves.
const NOSCRIPT: &[&str] = &[
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "script",
    "function",
    "config",
    "client",
    "hello",
    "save",
    "bgsave",
    "bgrewriteaof",
    "reset",
    "quit",
    "shutdown",
    "role",
    "failover",
    "monitor",
    "sync",
    "psync",
    "replconf",
    "subscribe",
    "psubscribe",
    "ssubscribe",
    "unsubscribe",
    "punsubscribe",
    "sunsubscribe",
    "slaveof",
    "replicaof",
    "blpop",
    "brpop",
    "brpoplpush",
    "blmove",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
];

/// The session's own commands, with their arity (they are not in the table).
const CONTROL: &[(&str, i32)] = &[
    ("multi", 1),
    ("exec", 1),
    ("discard", 1),
    ("watch", -2),
    ("unwatch", 1),
];

/// Commands with Redis 7.0's `write` flag among the engine's, refused by
/// EVAL_RO and EVALSHA_RO.
const WRITE: &[&str] = &[
    "set",
    "setnx",
    "setex",
    "psetex",
    "append",
    "incr",
    "decr",
    "incrby",
    "decrby",
    "incrbyfloat",
    "getset",
    "getdel",
    "getex",
    "mset",
    "msetnx",
    "setrange",
    "setbit",
    "bitop",
    "bitfield",
    "del",
    "unlink",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "persist",
    "rename",
    "renamenx",
    "move",
    "copy",
    "restore",
    "hset",
    "hsetnx",
    "hmset",
    "hdel",
    "hincrby",
    "hincrbyfloat",
    "lpush",
    "rpush",
    "lpushx",
    "rpushx",
    "lpop",
    "rpop",
    "linsert",
    "lset",
    "lrem",
    "ltrim",
    "rpoplpush",
    "lmove",
    "blpop",
    "brpop",
    "blmove",
    "brpoplpush",
    "lmpop",
    "blmpop",
    "sadd",
    "srem",
    "spop",
    "smove",
    "sinterstore",
    "sunionstore",
    "sdiffstore",
    "zadd",
    "zincrby",
    "zrem",
    "zremrangebyscore",
    "zremrangebyrank",
    "zremrangebylex",
    "zpopmin",
    "zpopmax",
    "bzpopmin",
    "bzpopmax",
    "zmpop",
    "bzmpop",
    "zunionstore",
    "zinterstore",
    "zdiffstore",
    "zrangestore",
    "flushdb",
    "flushall",
    "swapdb",
    "sort",
    "pfadd",
    "pfmerge",
    "pfdebug",
    "geoadd",
    "georadius",
    "georadiusbymember",
    "geosearchstore",
    "xadd",
    "xdel",
    "xtrim",
    "xgroup",
    "xack",
    "xclaim",
    "xautoclaim",
    "xreadgroup",
    "xsetid",
];

fn named(name: &[u8], list: &[&str]) -> bool {
    list.iter().any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
}

/// Redis 7.0's `scriptCall` checks, in its order, then the command.
fn run(ctx: &mut Ctx<'_>, read_only: bool, argv: &[&[u8]]) -> Result<redis::Value, String> {
    const UNKNOWN: &str = "ERR Unknown Redis command called from script";
    const ARITY: &str = "ERR Wrong number of args calling Redis command from script";
    let name = argv[0];
    let arity = match CONTROL
        .iter()
        .find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes()))
    {
        Some((_, arity)) => Some(*arity),
        None => command::lookup(name).map(|spec| spec.arity),
    };
    let Some(arity) = arity else {
        if named(name, NOSCRIPT) {
            return Err("ERR This Redis command is not allowed from script".into());
        }
        return Err(UNKNOWN.into());
    };
    let argc = argv.len() as i64;
    let arity = i64::from(arity);
    if (arity >= 0 && argc != arity) || argc < -arity {
        return Err(ARITY.into());
    }
    if named(name, NOSCRIPT) {
        return Err("ERR This Redis command is not allowed from script".into());
    }
    if read_only && named(name, WRITE) {
        return Err("ERR Write commands are not allowed from read-only scripts.".into());
    }
    command::run(ctx, argv).map_err(|e| e.text().to_string())
}

/// lua-cjson's encoder with its default settings (sparse arrays up to a
/// ratio of 2 past 10 items, `/` escaped, numbers as `%.14g`).
fn encode(lua: &Lua, v: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    if depth > 1000 {
        return Err("Cannot serialise, excessive nesting (1001)".into());
    }
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(_) | Value::Number(_) => {
            if let Value::Number(n) = v {
                if !n.is_finite() {
                    return Err("Cannot serialise number: must not be NaN or Inf".into());
                }
            }
            let s = lua
                .coerce_string(v.clone())
                .ok()
                .flatten()
                .map(|s| s.as_bytes().to_vec())
                .unwrap_or_default();
            out.extend_from_slice(&s);
        }
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Table(t) => encode_table(lua, t, out, depth)?,
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            ))
        }
    }
    Ok(())
}

fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
    }
    out.push(b'"');
}

fn encode_table(lua: &Lua, t: &Table, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    let pairs: Vec<(Value, Value)> = t
        .pairs::<Value, Value>()
        .collect::<mlua::Result<_>>()
        .map_err(|e| e.to_string())?;
    // lua-cjson's lua_array_length: an array if every key is a positive integer.
    let mut max = 0usize;
    let mut array = true;
    for (k, _) in &pairs {
        let n = match k {
            Value::Integer(i) => *i as f64,
            Value::Number(n) => *n,
            _ => {
                array = false;
                break;
            }
        };
        if n < 1.0 || n.fract() != 0.0 {
            array = false;
            break;
        }
        max = max.max(n as usize);
    }
    if array && max > 0 {
        if max > pairs.len() * 2 && max > 10 {
            return Err("Cannot serialise table: excessively sparse array".into());
        }
        out.push(b'[');
        for i in 1..=max {
            if i > 1 {
                out.push(b',');
            }
            let item: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            encode(lua, &item, out, depth + 1)?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    for (i, (k, item)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match k {
            Value::String(s) => encode_string(&s.as_bytes(), out),
            Value::Integer(_) | Value::Number(_) => {
                let s = lua
                    .coerce_string(k.clone())
                    .ok()
                    .flatten()
                    .map(|s| s.as_bytes().to_vec())
                    .unwrap_or_default();
                encode_string(&s, out);
            }
            _ => return Err("Cannot serialise table: table key must be a number or string".into()),
        }
        out.push(b':');
        encode(lua, item, out, depth + 1)?;
    }
    out.push(b'}');
    Ok(())
}

/// JSON -> Lua as lua-cjson decodes: null is `cjson.null`, numbers are
/// Lua numbers, arrays are 1-based tables.
fn decode(lua: &Lua, json: &serde_json::Value) -> mlua::Result<Value> {
    use serde_json::Value as J;
    Ok(match json {
        J::Null => null(),
        J::Bool(b) => Value::Boolean(*b),
        J::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        J::String(s) => Value::String(lua.create_string(s)?),
        J::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, decode(lua, item)?)?;
            }
            Value::Table(t)
        }
        J::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                t.raw_set(k.as_str(), decode(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}
