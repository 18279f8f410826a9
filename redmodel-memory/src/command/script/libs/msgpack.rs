//! `cmsgpack`: MessagePack as lua-cmsgpack packs and unpacks Lua values:
//! integers in the smallest form, other numbers as float32 when exact,
//! tables whose keys are exactly 1..n as arrays, other tables as maps,
//! tables nested 16 deep as nil (circular references end there).

use mlua::{Lua, MultiValue, Table, Value};

/// lua-cmsgpack's `LUACMSGPACK_MAX_NESTING`.
const MAX_NESTING: usize = 16;

pub(super) fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    // lua-cmsgpack's own description of itself, as Redis embeds it.
    for (name, text) in [
        ("_NAME", "cmsgpack"),
        ("_VERSION", "lua-cmsgpack 0.4.0"),
        ("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo"),
        ("_DESCRIPTION", "MessagePack C implementation for Lua"),
    ] {
        t.raw_set(name, text)?;
    }
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            if args.is_empty() {
                return Err(super::lua_error(
                    lua,
                    "bad argument #0 to 'pack' (MessagePack pack needs input.)",
                ));
            }
            let mut out = Vec::new();
            for v in &args {
                encode(v, &mut out, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, s: mlua::LuaString| unpack(lua, &s.as_bytes(), 0, 0))?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, (s, offset): (mlua::LuaString, Option<i64>)| {
            unpack(lua, &s.as_bytes(), 1, offset.unwrap_or(0))
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(
            |lua, (s, limit, offset): (mlua::LuaString, Option<i64>, Option<i64>)| {
                unpack(lua, &s.as_bytes(), limit.unwrap_or(0), offset.unwrap_or(0))
            },
        )?,
    )?;
    Ok(t)
}

fn encode(v: &Value, out: &mut Vec<u8>, level: usize) -> mlua::Result<()> {
    match v {
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => encode_int(*n, out),
        Value::Number(n) => encode_number(*n, out),
        Value::Table(t) if level < MAX_NESTING => encode_table(t, out, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_number(n: f64, out: &mut Vec<u8>) {
    // lua-cmsgpack's IS_INT64_EQUIVALENT.
    if n.is_finite() && (n as i64) as f64 == n {
        encode_int(n as i64, out);
    } else if f64::from(n as f32) == n || n.is_nan() {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_bytes(s: &[u8], out: &mut Vec<u8>) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// A collection's header: `fix` (with the count in its low bits) up to
/// 15 items, else the 16-bit or 32-bit form.
fn header(len: usize, fix: u8, wide: u8, out: &mut Vec<u8>) {
    if len <= 15 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(wide);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(wide + 1);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn encode_table(t: &Table, out: &mut Vec<u8>, level: usize) -> mlua::Result<()> {
    // lua-cmsgpack's table_is_an_array: positive integer keys, as many as
    // the largest. The pairs are walked, not collected: each value held
    // from Rust takes a slot of Lua's stack.
    let (mut count, mut max, mut array) = (0usize, 0f64, true);
    t.for_each(|k: Value, _: Value| {
        count += 1;
        let n = match k {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => f64::NAN,
        };
        if n > 0.0 && n.fract() == 0.0 {
            max = max.max(n);
        } else {
            array = false;
        }
        Ok(())
    })?;
    if array && max == count as f64 {
        header(count, 0x90, 0xdc, out);
        for i in 1..=count {
            encode(&t.raw_get::<Value>(i)?, out, level + 1)?;
        }
    } else {
        header(count, 0x80, 0xde, out);
        t.for_each(|k: Value, v: Value| {
            encode(&k, out, level + 1)?;
            encode(&v, out, level + 1)
        })?;
    }
    Ok(())
}

fn lua_err(msg: &str) -> mlua::Error {
    mlua::Error::RuntimeError(msg.to_string())
}

/// `unpack` (limit 0, offset 0: every object), `unpack_one` and
/// `unpack_limit`: the objects, after the next offset (-1 at the end)
/// unless every object was asked for.
fn unpack(lua: &Lua, s: &[u8], limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    if offset < 0 || limit < 0 {
        return Err(super::lua_error(
            lua,
            &format!(
                "Invalid request to unpack with offset of {offset} and limit of {}.",
                s.len()
            ),
        ));
    }
    let Ok(start) = usize::try_from(offset) else {
        return Err(lua_err("Invalid offset"));
    };
    if start > s.len() {
        return Err(super::lua_error(
            lua,
            &format!(
                "Start offset {offset} greater than input length {}.",
                s.len()
            ),
        ));
    }
    let all = limit == 0 && offset == 0;
    let mut decoder = Decoder { s, pos: start };
    let mut values = Vec::new();
    while decoder.pos < s.len() && (limit == 0 || (values.len() as i64) < limit) {
        // The decoder's errors take the caller's position, as
        // `luaL_error`'s do.
        let value = decoder.value(lua).map_err(|e| match e {
            mlua::Error::RuntimeError(msg) => super::lua_error(lua, &msg),
            e => e,
        })?;
        values.push(value);
    }
    if !all {
        let next = if decoder.pos == s.len() {
            -1
        } else {
            decoder.pos as i64
        };
        values.insert(0, Value::Integer(next));
    }
    Ok(MultiValue::from_iter(values))
}

struct Decoder<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> mlua::Result<&[u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.s.len())
            .ok_or_else(|| lua_err("Missing bytes in input."))?;
        let bytes = &self.s[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> mlua::Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn value(&mut self, lua: &Lua) -> mlua::Result<Value> {
        let tag = self.take(1)?[0];
        let number = |n: f64| Ok(Value::Number(n));
        match tag {
            0x00..=0x7f => number(f64::from(tag)),
            0xe0..=0xff => number(f64::from(tag as i8)),
            0xc0 => Ok(Value::Nil),
            0xc2 => Ok(Value::Boolean(false)),
            0xc3 => Ok(Value::Boolean(true)),
            0xca => {
                let bits = self.uint(4)? as u32;
                number(f64::from(f32::from_bits(bits)))
            }
            0xcb => number(f64::from_bits(self.uint(8)?)),
            0xcc => number(self.uint(1)? as f64),
            0xcd => number(self.uint(2)? as f64),
            0xce => number(self.uint(4)? as f64),
            0xcf => number(self.uint(8)? as f64),
            0xd0 => number(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => number(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => number(f64::from(self.uint(4)? as u32 as i32)),
            0xd3 => number(self.uint(8)? as i64 as f64),
            0xa0..=0xbf => self.string(lua, usize::from(tag & 0x1f)),
            0xd9 | 0xc4 => {
                let n = self.uint(1)? as usize;
                self.string(lua, n)
            }
            0xda | 0xc5 => {
                let n = self.uint(2)? as usize;
                self.string(lua, n)
            }
            0xdb | 0xc6 => {
                let n = self.uint(4)? as usize;
                self.string(lua, n)
            }
            0x90..=0x9f => self.array(lua, usize::from(tag & 0x0f)),
            0xdc => {
                let n = self.uint(2)? as usize;
                self.array(lua, n)
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.array(lua, n)
            }
            0x80..=0x8f => self.map(lua, usize::from(tag & 0x0f)),
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(lua, n)
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(lua, n)
            }
            _ => Err(lua_err("Bad data format in input.")),
        }
    }

    fn string(&mut self, lua: &Lua, n: usize) -> mlua::Result<Value> {
        let bytes = self.take(n)?;
        Ok(Value::String(lua.create_string(bytes)?))
    }

    fn array(&mut self, lua: &Lua, n: usize) -> mlua::Result<Value> {
        let t = lua.create_table()?;
        for i in 1..=n {
            let v = self.value(lua)?;
            t.raw_set(i, v)?;
        }
        Ok(Value::Table(t))
    }

    fn map(&mut self, lua: &Lua, n: usize) -> mlua::Result<Value> {
        let t = lua.create_table()?;
        for _ in 0..n {
            let k = self.value(lua)?;
            let v = self.value(lua)?;
            if !k.is_nil() {
                t.raw_set(k, v)?;
            }
        }
        Ok(Value::Table(t))
    }
}
