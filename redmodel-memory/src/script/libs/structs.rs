//! `struct`: lua-struct's pack, unpack and size.

use mlua::{Lua, Table};

pub(super) fn create(lua: &Lua) -> mlua::Result<Table> {
    lua.create_table()
}
