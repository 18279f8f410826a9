//! The Lua state of an engine: Redis 7.0's libraries and sandbox (see
//! `prelude.lua`), the error handler that gives errors Redis's shape, the
//! `cjson` primitives (`redis.call` is in `call.rs`).

use std::sync::Arc;

use mlua::{
    Function, HookTriggers, LightUserData, Lua, LuaOptions, MultiValue, StdLib, Table, Value,
    VmState,
};

use super::busy::Busy;
use super::raised::{raise, raised_counted, raised_text, COUNTED};

/// The chunk name of user scripts, as Redis 7.0 names it.
pub(super) const USER_SCRIPT: &str = "@user_script";
/// The chunk name of function libraries.
pub(super) const USER_FUNCTION: &str = "@user_function";

/// What a Lua state runs: EVAL's scripts or FUNCTION's libraries (Redis
/// 7.0 gives each its own state).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Eval,
    Functions,
}

impl Kind {
    /// The chunk name of the user's code, which errors are located in.
    pub(super) fn chunk(self) -> &'static str {
        match self {
            Kind::Eval => USER_SCRIPT,
            Kind::Functions => USER_FUNCTION,
        }
    }
}

/// A Lua state of an engine, with the values each EVAL uses.
pub(super) struct State {
    pub(super) lua: Lua,
    /// The sandboxed environment user scripts run in.
    pub(super) env: Table,
    /// Lua's `xpcall`, and the error handler scripts run under.
    pub(super) xpcall: Function,
    pub(super) handler: Function,
    pub(super) kind: Kind,
    /// Functions only: the environment libraries are loaded and run in,
    /// and its metatable, whose `__index` is the library API while a
    /// library loads and `env` otherwise.
    pub(super) library_env: Option<(Table, Table, Table)>,
    /// Calls a function with its KEYS and ARGV tables under the handler.
    pub(super) call_with: Function,
    /// Scripts loaded or run since the last step of the collector (see
    /// [`State::collect_garbage`]).
    gc_count: std::sync::atomic::AtomicU32,
}

/// How many scripts are loaded or run between two steps of Lua's garbage
/// collector, and how many kilobytes' worth each step collects (Redis's
/// `LUA_GC_CYCLE_PERIOD`).
const GC_PERIOD: u32 = 50;

impl State {
    /// Counts a script loaded or run, and every [`GC_PERIOD`]th time runs
    /// a step of Lua's garbage collector, as Redis's `luaGC` does: left to
    /// itself the incremental collector falls behind the garbage of many
    /// small loads (each library's loader, each script's compilation).
    pub(super) fn collect_garbage(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.gc_count.fetch_add(1, Relaxed) + 1 < GC_PERIOD {
            return;
        }
        self.gc_count.store(0, Relaxed);
        // SAFETY: `lua_gc` takes no stack slot and raises nothing but a
        // memory error, which the protected call `exec_raw` makes catches.
        let _ = unsafe {
            self.lua.exec_raw::<()>((), |state| {
                mlua::ffi::lua_gc(state, mlua::ffi::LUA_GCSTEP, GC_PERIOD as std::ffi::c_int);
            })
        };
    }

    /// The state's memory as Redis reports its Lua's (`lua_gc`'s count,
    /// in whole kilobytes).
    pub(super) fn vm_bytes(&self) -> u64 {
        (self.lua.used_memory() / 1024 * 1024) as u64
    }
}

/// A new Lua 5.1 state with Redis's libraries (base, table, string, math;
/// no os, io, package or debug) and the sandboxed environment of scripts.
pub(super) fn new_state(
    kind: Kind,
    busy: &Arc<Busy>,
    version: crate::RedisVersion,
) -> mlua::Result<State> {
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::default(),
    )?;
    install_hook(&lua, Arc::clone(busy), false)?;
    let xpcall = lua.globals().raw_get::<Function>("xpcall")?;
    let handler = lua.create_function(move |lua, err| error_handler(lua, err, kind.chunk()))?;
    let call = lua.create_function(super::call::call)?;
    let pcall = lua.create_function(super::call::pcall)?;
    let set_resp = lua.create_function(super::call::set_resp)?;
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
        let level = match args.front() {
            Some(Value::Integer(n)) => *n as f64,
            Some(Value::Number(n)) => *n,
            _ => return Err(raise("ERR First argument must be a number (log level).")),
        };
        // Redis: `int level = lua_tonumber(...)`, then LL_DEBUG..LL_WARNING.
        if !(0.0..4.0).contains(&level.trunc()) {
            return Err(raise("ERR Invalid debug level."));
        }
        Ok(())
    })?;
    let raw_encode =
        lua.create_function(|lua, (v, max_depth, invalid): (Value, usize, bool)| {
            let mut out = Vec::new();
            let settings = Encoding { max_depth, invalid };
            match encode(lua, &v, &mut out, 0, settings) {
                Ok(()) => Ok((Some(lua.create_string(&out)?), None)),
                Err(msg) => Ok((None, Some(msg))),
            }
        })?;
    let raw_decode = lua.create_function(|lua, (v, max_depth): (Value, usize)| {
        let Some(s) = lua.coerce_string(v)? else {
            return Ok((
                false,
                Value::String(lua.create_string("bad argument #1 to 'decode' (string expected)")?),
            ));
        };
        match serde_json::from_slice::<serde_json::Value>(&s.as_bytes()) {
            Ok(json) if nesting(&json) > max_depth => Ok((
                false,
                Value::String(lua.create_string(format!(
                    "Found too many nested data structures ({}) at character 1",
                    max_depth + 1
                ))?),
            )),
            Ok(json) => Ok((true, decode(lua, &json)?)),
            Err(e) => Ok((false, Value::String(lua.create_string(e.to_string())?))),
        }
    })?;
    let register = match kind {
        Kind::Eval => Value::Nil,
        Kind::Functions => {
            Value::Function(lua.create_function(super::register::register_function)?)
        }
    };
    let libs = super::libs::create(&lua)?;
    if version >= crate::RedisVersion::V7_4 {
        // Redis 7.2 and later give scripts `os` with `clock` alone.
        let os = lua.create_table()?;
        let started = std::time::Instant::now();
        os.raw_set(
            "clock",
            lua.create_function(move |_, ()| Ok(started.elapsed().as_secs_f64()))?,
        )?;
        libs.raw_set("os", os)?;
    }
    let (env, load_api, library_env, library_mt, call_with): (
        Table,
        Value,
        Value,
        Value,
        Function,
    ) = lua
        .load(include_str!("prelude.lua"))
        .set_name("=redmodel")
        .call((
            call,
            pcall,
            sha1hex,
            log,
            raw_encode,
            raw_decode,
            null(),
            set_resp,
            register,
            libs,
            lua.create_function(guarded_setmetatable)?,
            lua.create_function(guarded_loadstring)?,
            lua.create_function(super::call::acl_check_cmd)?,
            version.as_str(),
            version.number(),
            lua.create_function(protected_access)?,
        ))?;
    let library_env = match (load_api, library_env, library_mt) {
        (Value::Table(api), Value::Table(env), Value::Table(mt)) => Some((env, mt, api)),
        _ => None,
    };
    Ok(State {
        lua,
        env,
        xpcall,
        handler,
        kind,
        library_env,
        call_with,
        gc_count: Default::default(),
    })
}

/// The hook every script runs under: every 100000 instructions it looks
/// whether SCRIPT KILL or FUNCTION KILL asked the script to stop; once
/// asked, it runs on every line, so that a `pcall` cannot keep the script
/// alive (as Redis's `luaMaskCountHook`). A global hook: a coroutine the
/// script creates inherits it, as in Redis (mlua's per-thread hook is
/// dropped in a coroutine, where a loop could then never be killed).
pub(super) fn install_hook(lua: &Lua, busy: Arc<Busy>, every_line: bool) -> mlua::Result<()> {
    let triggers = if every_line {
        HookTriggers::EVERY_LINE
    } else {
        HookTriggers::new().every_nth_instruction(100_000)
    };
    let hook_busy = Arc::clone(&busy);
    lua.set_global_hook(triggers, move |lua, _| {
        if hook_busy.first_check() {
            leave_runtime_worker();
        }
        if !hook_busy.killed() {
            return Ok(VmState::Continue);
        }
        if !every_line {
            install_hook(lua, Arc::clone(&hook_busy), true)?;
        }
        Err(raise("ERR Script killed by user with SCRIPT KILL..."))
    })
}

/// A script that runs long on a worker of a multi-thread tokio runtime
/// (the RESP server's) hands the worker's other tasks to another thread,
/// so that other connections are served (BUSY, SCRIPT KILL) while it
/// runs. Only scripts that reach the hook pay for it: doing so for every
/// script halved EVAL's throughput over RESP.
#[cfg(feature = "server")]
fn leave_runtime_worker() {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi_thread =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi_thread {
        // The worker's core goes to a new thread while this one waits, for
        // good once that thread has taken it: a task spawned now can only
        // run where the core went (on a runtime of one worker), so its
        // running says so. Waiting a fixed moment was not enough on a
        // loaded machine: the new thread had not started, this one took
        // its core back, and with one worker nothing else ran until the
        // script ended (a test of SCRIPT KILL hung). Where tokio refuses
        // (a `LocalSet`, another executor's `block_on`), it panics before
        // moving anything: the script just goes on.
        let _ = std::panic::catch_unwind(|| {
            tokio::task::block_in_place(|| {
                use std::sync::atomic::{AtomicBool, Ordering};
                let taken = Arc::new(AtomicBool::new(false));
                let flag = Arc::clone(&taken);
                if let Ok(handle) = Handle::try_current() {
                    handle.spawn(async move { flag.store(true, Ordering::SeqCst) });
                }
                let started = std::time::Instant::now();
                while !taken.load(Ordering::SeqCst)
                    && started.elapsed() < std::time::Duration::from_secs(1)
                {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            });
        });
    }
}

#[cfg(not(feature = "server"))]
fn leave_runtime_worker() {}

/// `pairs`, `next`, `rawget`, `rawset` and `getmetatable`, in that order.
type Access = (Function, Function, Function, Function, Function);

/// `protected_access(protected, env, string_meta, next, rawget, rawset,
/// getmetatable)`: those five as Redis's read-only tables are seen
/// through the proxies that stand for them here (`protected[proxy]`, the
/// table behind it): `pairs`, `next` and `rawget` walk and read the table
/// behind a proxy (any other table as it is), `rawset` refuses every
/// protected table with Redis's error, and `getmetatable` gives a
/// library's nothing (Redis's read-only tables have no metatable), the
/// globals' `env` its own and a string the read-only `string_meta`. Rust
/// functions, so that a bad argument is Lua's own error at the caller's
/// line.
fn protected_access(
    lua: &Lua,
    (protected, env, string_meta, next, rawget, rawset, getmetatable): (
        Table,
        Table,
        Table,
        Function,
        Function,
        Function,
        Function,
    ),
) -> mlua::Result<Access> {
    let (walk, iterate) = (protected.clone(), next.clone());
    let pairs = lua.create_function(move |lua, args: MultiValue| {
        let table = behind(&walk, table_arg(lua, "pairs", &args)?)?;
        Ok((iterate.clone(), table, Value::Nil))
    })?;
    let stepping = protected.clone();
    let next = lua.create_function(move |lua, args: MultiValue| {
        let table = behind(&stepping, table_arg(lua, "next", &args)?)?;
        let key = args.get(1).cloned().unwrap_or(Value::Nil);
        next.call::<MultiValue>((table, key))
    })?;
    let reading = protected.clone();
    let get = lua.create_function(move |lua, args: MultiValue| {
        let t = table_arg(lua, "rawget", &args)?;
        let key = args
            .get(1)
            .cloned()
            .ok_or_else(|| missing(lua, 2, "rawget"))?;
        rawget.call::<Value>((behind(&reading, t)?, key))
    })?;
    let refusing = protected.clone();
    let set = lua.create_function(move |lua, args: MultiValue| {
        let t = table_arg(lua, "rawset", &args)?;
        if args.len() < 3 {
            return Err(missing(lua, args.len().max(2), "rawset"));
        }
        if is_protected(&refusing, &t)? {
            return Err(readonly_refused());
        }
        rawset.call::<Value>(args)
    })?;
    let meta = lua.create_function(move |lua, args: MultiValue| {
        let value = args
            .front()
            .cloned()
            .ok_or_else(|| missing(lua, 1, "getmetatable"))?;
        match &value {
            Value::String(_) => return Ok(Value::Table(string_meta.clone())),
            Value::Table(t) if t != &env && is_protected(&protected, t)? => return Ok(Value::Nil),
            _ => {}
        }
        getmetatable.call::<Value>(value)
    })?;
    Ok((pairs, next, get, set, meta))
}

/// Whether `t` is a protected table (a proxy, or one refused whole).
fn is_protected(protected: &Table, t: &Table) -> mlua::Result<bool> {
    Ok(!protected.raw_get::<Value>(t.clone())?.is_nil())
}

/// Redis's refusal of a write to a read-only table, which has no position.
fn readonly_refused() -> mlua::Error {
    mlua::Error::RuntimeError("Attempt to modify a readonly table".into())
}

/// Argument 1 of `name`, a table, or Lua's error.
fn table_arg(lua: &Lua, name: &str, args: &MultiValue) -> mlua::Result<Table> {
    match args.front() {
        Some(Value::Table(t)) => Ok(t.clone()),
        other => {
            let got = other.map_or("no value", Value::type_name);
            Err(super::libs::lua_error(
                lua,
                &format!("bad argument #1 to '{name}' (table expected, got {got})"),
            ))
        }
    }
}

/// Lua's error for a missing argument `n` of `name`.
fn missing(lua: &Lua, n: usize, name: &str) -> mlua::Error {
    super::libs::lua_error(
        lua,
        &format!("bad argument #{n} to '{name}' (value expected)"),
    )
}

/// The table `t` stands for: the one behind a protected proxy, else `t`.
fn behind(protected: &Table, t: Table) -> mlua::Result<Table> {
    Ok(match protected.raw_get::<Value>(t.clone())? {
        Value::Table(behind) => behind,
        _ => t,
    })
}

/// `guarded_setmetatable(protected)`: Lua's setmetatable, refusing the
/// tables of `protected` with Redis's error.
fn guarded_setmetatable(lua: &Lua, protected: Table) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let target = args.front().cloned();
        if let Some(Value::Table(t)) = &target {
            if is_protected(&protected, t)? {
                return Err(readonly_refused());
            }
        }
        let Some(Value::Table(t)) = target else {
            let got = args.front().map_or("no value", Value::type_name);
            return Err(super::libs::lua_error(
                lua,
                &format!("bad argument #1 to 'setmetatable' (table expected, got {got})"),
            ));
        };
        let mt = match args.get(1) {
            Some(Value::Nil) => None,
            Some(Value::Table(mt)) => Some(mt.clone()),
            _ => {
                return Err(super::libs::lua_error(
                    lua,
                    "bad argument #2 to 'setmetatable' (nil or table expected)",
                ))
            }
        };
        let locked = t.metatable().is_some_and(|m| {
            !m.raw_get::<Value>("__metatable")
                .unwrap_or(Value::Nil)
                .is_nil()
        });
        if locked {
            return Err(super::libs::lua_error(
                lua,
                "cannot change a protected metatable",
            ));
        }
        t.set_metatable(mt)?;
        Ok(t)
    })
}

/// `guarded_loadstring(loadstring)`: Lua's loadstring, refusing binary
/// (precompiled) chunks as Redis's Lua does.
fn guarded_loadstring(lua: &Lua, loadstring: Function) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let stringish =
            |v: &Value| matches!(v, Value::String(_) | Value::Integer(_) | Value::Number(_));
        match args.front() {
            Some(v) if stringish(v) => {}
            other => {
                let got = other.map_or("no value", Value::type_name);
                return Err(super::libs::lua_error(
                    lua,
                    &format!("bad argument #1 to 'loadstring' (string expected, got {got})"),
                ));
            }
        }
        if let Some(v) = args.get(1).filter(|v| !v.is_nil() && !stringish(v)) {
            return Err(super::libs::lua_error(
                lua,
                &format!(
                    "bad argument #2 to 'loadstring' (string expected, got {})",
                    v.type_name()
                ),
            ));
        }
        if let Some(Value::String(s)) = args.front() {
            if s.as_bytes().first() == Some(&27) {
                return Ok(MultiValue::from_iter([
                    Value::Nil,
                    Value::String(lua.create_string("binary chunks are not allowed")?),
                ]));
            }
        }
        loadstring.call::<MultiValue>(args)
    })
}

/// The error a Rust function raised, under the callback's wrapping.
fn innermost(e: &mlua::Error) -> &mlua::Error {
    match e {
        mlua::Error::CallbackError { cause, .. } => innermost(cause),
        mlua::Error::WithContext { cause, .. } => innermost(cause),
        e => e,
    }
}

/// `cjson.null`: a NULL light userdata, as lua-cjson's.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// The message handler scripts run under (Redis 7.0's
/// `__redis__err__handler`): a string error becomes `{err='ERR ' .. msg}`,
/// and the error learns the line of the user script it came from.
fn error_handler(lua: &Lua, err: Value, chunk: &str) -> mlua::Result<Table> {
    let table = match err {
        Value::Table(t) => t,
        other => {
            if let Value::Error(e) = &other {
                if let Some(text) = raised_text(e) {
                    let t = lua.create_table()?;
                    t.raw_set("err", text)?;
                    if raised_counted(e) {
                        t.raw_set(COUNTED, true)?;
                    }
                    return locate(lua, t, chunk);
                }
            }
            let msg = match other {
                Value::Error(e) => match innermost(&e) {
                    mlua::Error::RuntimeError(s) => s.clone(),
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
    locate(lua, table, chunk)
}

/// Adds to an error table where in the user script it was raised.
fn locate(lua: &Lua, table: Table, chunk: &str) -> mlua::Result<Table> {
    if table.raw_get::<Value>("source")?.is_nil() {
        let mut level = 1;
        while let Some(found) = lua.inspect_stack(level, |d| {
            (d.source().source.as_deref() == Some(chunk)).then(|| d.current_line())
        }) {
            if let Some(line) = found {
                table.raw_set("source", chunk)?;
                table.raw_set("line", line.map_or(-1, |l| l as i64))?;
                break;
            }
            level += 1;
        }
    }
    Ok(table)
}

/// How deep a decoded JSON value nests (a scalar: 0).
fn nesting(json: &serde_json::Value) -> usize {
    match json {
        serde_json::Value::Array(items) => 1 + items.iter().map(nesting).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

/// The encoder's settings a script can change.
#[derive(Clone, Copy)]
struct Encoding {
    /// `cjson.encode_max_depth`: tables nested deeper are an error.
    max_depth: usize,
    /// `cjson.encode_invalid_numbers`: NaN and infinities are encoded.
    invalid: bool,
}

/// lua-cjson's encoder with its default settings (sparse arrays up to a
/// ratio of 2 past 10 items, `/` escaped, numbers as `%.14g`).
fn encode(
    lua: &Lua,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
    settings: Encoding,
) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(_) | Value::Number(_) => {
            if let Value::Number(n) = v {
                if !n.is_finite() {
                    if !settings.invalid {
                        return Err("Cannot serialise number: must not be NaN or Inf".into());
                    }
                    let text: &[u8] = if n.is_nan() {
                        b"nan"
                    } else if *n > 0.0 {
                        b"inf"
                    } else {
                        b"-inf"
                    };
                    out.extend_from_slice(text);
                    return Ok(());
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
        Value::Table(t) => encode_table(lua, t, out, depth + 1, settings)?,
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

/// A table at nesting `depth` (the outermost: 1).
fn encode_table(
    lua: &Lua,
    t: &Table,
    out: &mut Vec<u8>,
    depth: usize,
    settings: Encoding,
) -> Result<(), String> {
    if depth > settings.max_depth {
        return Err(format!("Cannot serialise, excessive nesting ({depth})"));
    }
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
            encode(lua, &item, out, depth, settings)?;
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
        encode(lua, item, out, depth, settings)?;
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
