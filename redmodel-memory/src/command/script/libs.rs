//! The Lua libraries Redis embeds besides cjson: `bit` (LuaBitOp),
//! `cmsgpack` (lua-cmsgpack) and `struct` (lua-struct), written in Rust
//! with their behaviour as far as scripts observe it.

mod bit;
mod msgpack;
mod structs;

use mlua::{Lua, Table};

/// A table of the libraries by their global name.
pub(super) fn create(lua: &Lua) -> mlua::Result<Table> {
    let libs = lua.create_table()?;
    libs.raw_set("bit", bit::create(lua)?)?;
    libs.raw_set("cmsgpack", msgpack::create(lua)?)?;
    libs.raw_set("struct", structs::create(lua)?)?;
    Ok(libs)
}

/// `luaL_checknumber`: a number or a string that converts to one; else
/// Lua's "bad argument" error.
fn check_number(lua: &Lua, v: Option<&mlua::Value>, arg: usize, fname: &str) -> mlua::Result<f64> {
    let got = match v {
        None => "no value".to_string(),
        Some(v) => {
            if let Ok(Some(n)) = lua.coerce_number(v.clone()) {
                return Ok(n);
            }
            v.type_name().to_string()
        }
    };
    Err(lua_error(
        lua,
        &format!("bad argument #{arg} to '{fname}' (number expected, got {got})"),
    ))
}

/// An error raised as a C library's `luaL_error` raises it: the message
/// after where the calling Lua code is (`user_script:1: `).
pub(super) fn lua_error(lua: &Lua, msg: &str) -> mlua::Error {
    let place = lua
        .inspect_stack(1, |d| {
            let line = d.current_line()?;
            let source = d.source().short_src?.into_owned();
            Some(format!("{source}:{line}: "))
        })
        .flatten()
        .unwrap_or_default();
    mlua::Error::RuntimeError(format!("{place}{msg}"))
}
