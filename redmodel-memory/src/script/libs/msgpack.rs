//! `cmsgpack`: MessagePack as lua-cmsgpack packs and unpacks Lua values.

use mlua::{Lua, Table};

pub(super) fn create(lua: &Lua) -> mlua::Result<Table> {
    lua.create_table()
}
