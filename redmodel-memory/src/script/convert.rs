//! Reply conversion between Lua and Redis, as Redis 7.0 documents it for
//! RESP2 ("Conversion between Lua and Redis data types").

use mlua::{Lua, Table, Value as Lua_};
use redis::Value as Reply;

use crate::error::error_value;

/// Redis reply -> Lua value, for what `redis.call` / `redis.pcall` return:
/// integer -> number, bulk -> string, nil -> false, array -> table, status
/// -> `{ok=...}`, error -> `{err=...}`.
pub(crate) fn reply_to_lua(lua: &Lua, reply: &Reply) -> mlua::Result<Lua_> {
    Ok(match reply {
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
        Reply::Array(items) | Reply::Set(items) | Reply::Push { data: items, .. } => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item)?)?;
            }
            Lua_::Table(t)
        }
        Reply::Double(d) => Lua_::Number(*d),
        Reply::Boolean(b) => Lua_::Boolean(*b),
        other => {
            // RESP3-only shapes never come out of the engine's RESP2 commands.
            Lua_::String(lua.create_string(format!("{other:?}"))?)
        }
    })
}

fn single(lua: &Lua, key: &str, text: &str) -> mlua::Result<Lua_> {
    let t = lua.create_table()?;
    t.raw_set(key, text)?;
    Ok(Lua_::Table(t))
}

/// Lua value -> Redis reply, for what a script returns: number -> integer
/// (truncated), string -> bulk, `true` -> 1, `false`/nil -> nil, table
/// with a string `err` -> error, with a string `ok` -> status, other table
/// -> array up to its first nil.
pub(crate) fn lua_to_reply(value: &Lua_) -> mlua::Result<Reply> {
    to_reply(value, 0)
}

/// How deep a returned table may nest: deeper, the reply holds Redis's
/// "reached lua stack limit" error there (Redis runs out of Lua stack
/// near 8000 levels; a table that contains itself must not overflow the
/// engine's own stack, some 2 MB on a runtime's worker).
const MAX_NESTING: usize = 256;

fn to_reply(value: &Lua_, depth: usize) -> mlua::Result<Reply> {
    Ok(match value {
        Lua_::Integer(n) => Reply::Int(*n),
        Lua_::Number(n) => Reply::Int(truncate(*n)),
        Lua_::String(s) => Reply::BulkString(s.as_bytes().to_vec()),
        Lua_::Boolean(true) => Reply::Int(1),
        Lua_::Table(_) if depth >= MAX_NESTING => error_value("ERR reached lua stack limit"),
        Lua_::Table(t) => table_to_reply(t, depth)?,
        _ => Reply::Nil,
    })
}

fn table_to_reply(t: &Table, depth: usize) -> mlua::Result<Reply> {
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
    let mut items = Vec::new();
    for i in 1.. {
        let item: Lua_ = t.raw_get(i)?;
        if item.is_nil() {
            break;
        }
        items.push(to_reply(&item, depth + 1)?);
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
