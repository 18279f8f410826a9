//! Reply conversion between Lua and Redis, as Redis 7.0 documents it
//! ("Conversion between Lua and Redis data types"), for RESP2 and, after
//! `redis.setresp(3)`, RESP3.

use mlua::{Lua, Table, Value as Lua_};
use redis::Value as Reply;

use crate::error::error_value;

/// Redis reply -> Lua value, for what `redis.call` / `redis.pcall` return:
/// integer -> number, bulk -> string, nil -> false, array -> table, status
/// -> `{ok=...}`, error -> `{err=...}`. The script's client speaks RESP2
/// unless `resp3` (then the reply was not lowered): map -> `{map={k=v}}`,
/// set -> `{set={member=true}}`, double -> `{double=n}`, boolean ->
/// boolean, verbatim -> `{verbatim_string={format=..., string=...}}`,
/// null -> nil.
pub(crate) fn reply_to_lua(lua: &Lua, reply: &Reply, resp3: bool) -> mlua::Result<Lua_> {
    Ok(match reply {
        Reply::Nil if resp3 => Lua_::Nil,
        Reply::Nil => Lua_::Boolean(false),
        Reply::Int(n) => Lua_::Number(*n as f64),
        Reply::BulkString(b) => Lua_::String(lua.create_string(b)?),
        Reply::Okay => single(lua, "ok", "OK")?,
        Reply::SimpleString(s) => single(lua, "ok", s)?,
        Reply::ServerError(e) => {
            let text = match e.details() {
                Some(d) => format!("{} {d}", e.code()),
                None => e.code().to_string(),
            };
            single(lua, "err", &text)?
        }
        Reply::Array(items) | Reply::Push { data: items, .. } => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item, resp3)?)?;
            }
            Lua_::Table(t)
        }
        Reply::Map(pairs) => {
            let inner = lua.create_table_with_capacity(0, pairs.len())?;
            for (k, v) in pairs {
                let k = reply_to_lua(lua, k, resp3)?;
                if !k.is_nil() {
                    inner.raw_set(k, reply_to_lua(lua, v, resp3)?)?;
                }
            }
            wrap(lua, "map", Lua_::Table(inner))?
        }
        Reply::Set(items) => {
            let inner = lua.create_table_with_capacity(0, items.len())?;
            for item in items {
                let k = reply_to_lua(lua, item, resp3)?;
                if !k.is_nil() {
                    inner.raw_set(k, true)?;
                }
            }
            wrap(lua, "set", Lua_::Table(inner))?
        }
        Reply::Double(d) => wrap(lua, "double", Lua_::Number(*d))?,
        Reply::Boolean(b) => Lua_::Boolean(*b),
        Reply::VerbatimString { format, text } => {
            let inner = lua.create_table()?;
            let format = match format {
                redis::VerbatimFormat::Markdown => "mkd".to_string(),
                redis::VerbatimFormat::Unknown(f) => f.clone(),
                _ => "txt".to_string(),
            };
            inner.raw_set("format", format)?;
            inner.raw_set("string", lua.create_string(text)?)?;
            wrap(lua, "verbatim_string", Lua_::Table(inner))?
        }
        Reply::Attribute { data, .. } => reply_to_lua(lua, data, resp3)?,
        other => {
            // Big numbers never come out of the engine's commands.
            Lua_::String(lua.create_string(format!("{other:?}"))?)
        }
    })
}

/// `{name = value}`.
fn wrap(lua: &Lua, name: &str, value: Lua_) -> mlua::Result<Lua_> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set(name, value)?;
    Ok(Lua_::Table(t))
}

fn single(lua: &Lua, key: &str, text: &str) -> mlua::Result<Lua_> {
    let t = lua.create_table()?;
    t.raw_set(key, text)?;
    Ok(Lua_::Table(t))
}

/// Lua value -> Redis reply, for what a script returns: number -> integer
/// (truncated), string -> bulk, `true` -> 1, `false`/nil -> nil, table
/// with a string `err` -> error, with a string `ok` -> status, with a
/// number `double`, a table `map` or `set`, a table `verbatim_string` ->
/// those RESP3 types (lowered for a RESP2 caller), other table -> array up
/// to its first nil. A script that called `redis.setresp(3)` (`resp3`)
/// returns booleans as booleans.
pub(crate) fn lua_to_reply(lua: &Lua, value: &Lua_, resp3: bool) -> mlua::Result<Reply> {
    nested_reply(lua, value, resp3, 0)
}

/// How deep tables may nest in a script's reply. Redis stops where Lua's
/// C stack ends (`lua_checkstack` fails: "reached lua stack limit", the
/// error ending the reply), thousands of levels down; here the conversion
/// and the reply's encoding recurse on the thread's own stack (2 MB for a
/// tokio worker, several KB a level in a debug build: 500 levels overflowed
/// it), so the limit is lower. A table that contains itself ends there.
const MAX_DEPTH: usize = 128;

/// [`lua_to_reply`] of a value `depth` tables deep.
fn nested_reply(lua: &Lua, value: &Lua_, resp3: bool, depth: usize) -> mlua::Result<Reply> {
    if depth >= MAX_DEPTH {
        return Ok(error_value("ERR reached lua stack limit"));
    }
    Ok(match value {
        Lua_::Integer(n) => Reply::Int(*n),
        Lua_::Number(n) => Reply::Int(truncate(*n)),
        Lua_::String(s) => Reply::BulkString(s.as_bytes().to_vec()),
        Lua_::Boolean(b) if resp3 => Reply::Boolean(*b),
        Lua_::Boolean(true) => Reply::Int(1),
        Lua_::Table(t) => table_to_reply(lua, t, resp3, depth + 1)?,
        // An error of `redis.call` (or another library function) caught by
        // `pcall`: in Redis the string the C function raised.
        Lua_::Error(e) => match super::raised::raised_text(e) {
            Some(text) => Reply::BulkString(text.into_bytes()),
            None => Reply::Nil,
        },
        _ => Reply::Nil,
    })
}

/// The fields that make a returned table something else than an array,
/// in the order Redis looks for them, each with the Lua type it must have.
const SPECIAL: [(&str, std::ffi::c_int); 7] = [
    ("err", mlua::ffi::LUA_TSTRING),
    ("ok", mlua::ffi::LUA_TSTRING),
    ("double", mlua::ffi::LUA_TNUMBER),
    ("big_number", mlua::ffi::LUA_TSTRING),
    ("verbatim_string", mlua::ffi::LUA_TTABLE),
    ("map", mlua::ffi::LUA_TTABLE),
    ("set", mlua::ffi::LUA_TTABLE),
];

/// Whether `t` has one of the [`SPECIAL`] fields, with its type. Looked up
/// on Lua's stack directly: through mlua each lookup made a Lua string
/// and a handle, and the seven of them would be a sixth of a small script's
/// cost in process (every table a script returns is checked, arrays
/// included).
fn has_special_field(lua: &Lua, t: &Table) -> mlua::Result<bool> {
    use mlua::ffi;
    // SAFETY: `exec_raw` pushes `t` at index 1 and runs the closure in a
    // protected call (a memory error raised by `lua_pushlstring` is
    // caught); each lookup pushes a key, replaces it with the value
    // (`lua_rawget` raises nothing) and pops it, and the closure leaves
    // one boolean on the stack, which is the result.
    unsafe {
        lua.exec_raw::<bool>(t, |state| {
            let mut found = false;
            for (name, kind) in SPECIAL {
                ffi::lua_pushlstring(state, name.as_ptr().cast(), name.len());
                ffi::lua_rawget(state, 1);
                let is = ffi::lua_type(state, -1) == kind;
                ffi::lua_pop(state, 1);
                if is {
                    found = true;
                    break;
                }
            }
            ffi::lua_pop(state, 1);
            ffi::lua_pushboolean(state, std::ffi::c_int::from(found));
        })
    }
}

fn table_to_reply(lua: &Lua, t: &Table, resp3: bool, depth: usize) -> mlua::Result<Reply> {
    if !has_special_field(lua, t)? {
        return array_reply(lua, t, resp3, depth);
    }
    if let Lua_::String(err) = t.raw_get::<Lua_>("err")? {
        return Ok(error_value(&err.to_string_lossy()));
    }
    if let Lua_::String(ok) = t.raw_get::<Lua_>("ok")? {
        let ok = ok.to_string_lossy();
        return Ok(if ok == "OK" {
            Reply::Okay
        } else {
            Reply::SimpleString(ok)
        });
    }
    match t.raw_get::<Lua_>("double")? {
        Lua_::Number(d) => return Ok(Reply::Double(d)),
        Lua_::Integer(d) => return Ok(Reply::Double(d as f64)),
        _ => {}
    }
    // RESP3's big number (a bulk string for RESP2), its text as given but
    // for CR and LF, which become spaces (Redis's `sdsmapchars`).
    if let Lua_::String(n) = t.raw_get::<Lua_>("big_number")? {
        let text = n
            .as_bytes()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        return Ok(Reply::BigNumber(text));
    }
    if let Lua_::Table(v) = t.raw_get::<Lua_>("verbatim_string")? {
        if let (Lua_::String(_), Lua_::String(text)) =
            (v.raw_get::<Lua_>("format")?, v.raw_get::<Lua_>("string")?)
        {
            return Ok(crate::reply::verbatim(text.as_bytes().to_vec()));
        }
    }
    if let Lua_::Table(map) = t.raw_get::<Lua_>("map")? {
        let mut pairs = Vec::new();
        for pair in map.pairs::<Lua_, Lua_>() {
            let (k, v) = pair?;
            pairs.push((
                nested_reply(lua, &k, resp3, depth)?,
                nested_reply(lua, &v, resp3, depth)?,
            ));
        }
        return Ok(Reply::Map(pairs));
    }
    if let Lua_::Table(set) = t.raw_get::<Lua_>("set")? {
        let mut items = Vec::new();
        for pair in set.pairs::<Lua_, Lua_>() {
            let (k, _) = pair?;
            items.push(nested_reply(lua, &k, resp3, depth)?);
        }
        return Ok(Reply::Set(items));
    }
    array_reply(lua, t, resp3, depth)
}

/// A table as an array: its elements from 1 up to the first nil.
fn array_reply(lua: &Lua, t: &Table, resp3: bool, depth: usize) -> mlua::Result<Reply> {
    let mut items = Vec::with_capacity(t.raw_len());
    for i in 1.. {
        let item: Lua_ = t.raw_get(i)?;
        if item.is_nil() {
            break;
        }
        items.push(nested_reply(lua, &item, resp3, depth)?);
    }
    Ok(Reply::Array(items))
}

/// C's `(long long)` cast of a double as x86-64 does it: out of range and
/// NaN give the minimum (Redis replies `:-9223372036854775808` to
/// `return 1e20`).
fn truncate(n: f64) -> i64 {
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

#[cfg(test)]
mod tests {
    use super::truncate;

    #[test]
    fn truncation_like_c() {
        assert_eq!(truncate(3.99), 3);
        assert_eq!(truncate(-3.99), -3);
        assert_eq!(truncate(1e20), i64::MIN);
        assert_eq!(truncate(f64::NAN), i64::MIN);
    }
}
