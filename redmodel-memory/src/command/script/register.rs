//! `redis.register_function`, the one thing a library's code may call
//! while FUNCTION LOAD runs it: the functions it registers, read from
//! Lua's arguments as `function_lua.c` reads them.

use std::sync::Arc;

use mlua::{Function, Lua, MultiValue, RegistryKey, Table, Value};

use super::flags::Flags;
use super::raised::raise;

/// A registered function.
#[derive(Clone)]
pub(crate) struct Func {
    pub(crate) name: String,
    pub(crate) description: Option<Vec<u8>>,
    pub(crate) flags: Flags,
    /// The callback, kept in Lua's registry: a `Function` handle held in
    /// Rust takes a slot of mlua's auxiliary stack, which tens of thousands
    /// of loaded functions would exhaust.
    pub(crate) callback: Arc<RegistryKey>,
}

/// Keeps `callback` in Lua's registry (see [`Func::callback`]).
fn keep(lua: &Lua, callback: Function) -> Result<Arc<RegistryKey>, &'static str> {
    lua.create_registry_value(callback)
        .map(Arc::new)
        .map_err(|_| "Lua engine failure: cannot keep the callback")
}

/// The functions a library registers while it loads (Lua app data: its
/// presence is what lets `redis.register_function` run).
pub(super) struct Pending(pub(super) Vec<Func>);

pub(super) const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// Redis's `functionsVerifyName`: `[a-zA-Z0-9_]+`.
pub(super) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `redis.register_function(name, callback)` or
/// `redis.register_function{function_name=..., callback=..., flags=...,
/// description=...}`, during FUNCTION LOAD only.
pub(super) fn register_function(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    if lua.app_data_ref::<Pending>().is_none() {
        return Err(raise(
            "ERR redis.register_function can only be called on FUNCTION LOAD command",
        ));
    }
    let func = read_args(lua, args).map_err(|e| raise(&format!("ERR {e}")))?;
    if !valid_name(func.name.as_bytes()) {
        return Err(raise(&format!("ERR {BAD_NAME}")));
    }
    let Some(mut pending) = lua.app_data_mut::<Pending>() else {
        return Err(raise(
            "ERR redis.register_function can only be called on FUNCTION LOAD command",
        ));
    };
    if pending.0.iter().any(|f| f.name == func.name) {
        return Err(raise("ERR Function already exists in the library"));
    }
    pending.0.push(func);
    Ok(())
}

/// A string argument as `luaGetStringSds` takes it: a string or a number.
fn string_of(lua: &Lua, v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(_) | Value::Integer(_) | Value::Number(_) => lua
            .coerce_string(v.clone())
            .ok()
            .flatten()
            .map(|s| s.as_bytes().to_vec()),
        _ => None,
    }
}

fn read_args(lua: &Lua, args: MultiValue) -> Result<Func, &'static str> {
    let args: Vec<Value> = args.into_iter().collect();
    match args.as_slice() {
        [named] => read_named(lua, named),
        [name, callback] => {
            let name = string_of(lua, name)
                .ok_or("first argument to redis.register_function must be a string")?;
            let Value::Function(callback) = callback else {
                return Err("second argument to redis.register_function must be a function");
            };
            Ok(Func {
                name: String::from_utf8_lossy(&name).into_owned(),
                description: None,
                flags: Flags::default(),
                callback: keep(lua, callback.clone())?,
            })
        }
        _ => Err("wrong number of arguments to redis.register_function"),
    }
}

fn read_named(lua: &Lua, named: &Value) -> Result<Func, &'static str> {
    let Value::Table(t) = named else {
        return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
    };
    let (mut name, mut description, mut callback, mut flags) = (None, None, None, Flags::default());
    for pair in t.pairs::<Value, Value>() {
        let Ok((k, v)) = pair else {
            return Err("named argument key given to redis.register_function is not a string");
        };
        let key = string_of(lua, &k)
            .ok_or("named argument key given to redis.register_function is not a string")?;
        let key = String::from_utf8_lossy(&key).to_ascii_lowercase();
        match key.as_str() {
            "function_name" => {
                name = Some(string_of(lua, &v).ok_or(
                    "function_name argument given to redis.register_function must be a string",
                )?);
            }
            "description" => {
                description = Some(string_of(lua, &v).ok_or(
                    "description argument given to redis.register_function must be a string",
                )?);
            }
            "callback" => {
                let Value::Function(f) = v else {
                    return Err(
                        "callback argument given to redis.register_function must be a function",
                    );
                };
                callback = Some(f);
            }
            "flags" => {
                let Value::Table(list) = v else {
                    return Err("flags argument to redis.register_function must be a table representing function flags");
                };
                flags = read_flags(lua, &list).ok_or("unknown flag given")?;
            }
            _ => return Err("unknown argument given to redis.register_function"),
        }
    }
    let name = name.ok_or("redis.register_function must get a function name argument")?;
    let callback = callback.ok_or("redis.register_function must get a callback argument")?;
    let callback = keep(lua, callback)?;
    Ok(Func {
        name: String::from_utf8_lossy(&name).into_owned(),
        description,
        flags,
        callback,
    })
}

/// The flags of a `flags={...}` list (case-insensitive names).
fn read_flags(lua: &Lua, list: &Table) -> Option<Flags> {
    let mut flags = Flags::default();
    for i in 1.. {
        let v: Value = list.get(i).ok()?;
        if v.is_nil() {
            break;
        }
        let name = string_of(lua, &v)?;
        flags.insert(Flags::named(&name, false)?);
    }
    Some(flags)
}
