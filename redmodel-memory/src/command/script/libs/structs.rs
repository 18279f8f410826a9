//! `struct`: lua-struct's pack, unpack and size, for the layout of x86-64
//! (little-endian by default, `long` and `size_t` of 8 bytes, no
//! alignment unless `!` asks for it).

use mlua::{Lua, MultiValue, Table, Value};

use super::{check_number, lua_error};

/// lua-struct's limits: the largest `i`/`I` size, the default `!`
/// alignment.
const MAX_INT_SIZE: usize = 32;
const MAX_ALIGN: usize = 8;

/// The state a format carries along: byte order and alignment.
struct Header {
    little: bool,
    align: usize,
}

/// A format string being read.
struct Format<'a> {
    fmt: &'a [u8],
    pos: usize,
}

impl Format<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = self.fmt.get(self.pos).copied()?;
        self.pos += 1;
        Some(c)
    }

    /// The digits that follow, or `default`.
    fn number(&mut self, lua: &Lua, default: usize) -> mlua::Result<usize> {
        if !self.fmt.get(self.pos).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut n: usize = 0;
        while let Some(&d) = self.fmt.get(self.pos).filter(|d| d.is_ascii_digit()) {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(usize::from(d - b'0')))
                .filter(|&n| n <= i32::MAX as usize)
                .ok_or_else(|| lua_error(lua, "integral size overflow"))?;
            self.pos += 1;
        }
        Ok(n)
    }

    /// lua-struct's `optsize`: the size of an option (0 for control
    /// options and `c0`).
    fn size(&mut self, lua: &Lua, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(lua, 1)?,
            b'i' | b'I' => {
                let size = self.number(lua, 4)?;
                if size > MAX_INT_SIZE {
                    return Err(lua_error(
                        lua,
                        &format!("integral size {size} is larger than limit of {MAX_INT_SIZE}"),
                    ));
                }
                size
            }
            _ => 0,
        })
    }

    /// lua-struct's `controloptions`.
    fn control(&mut self, lua: &Lua, opt: u8, h: &mut Header, fname: &str) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' | b'=' => h.little = true,
            b'!' => {
                let a = self.number(lua, MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(lua_error(
                        lua,
                        &format!("alignment {a} is not a power of 2"),
                    ));
                }
                h.align = a;
            }
            other => {
                return Err(arg_error(
                    lua,
                    1,
                    fname,
                    &format!("invalid format option '{}'", char::from(other)),
                ))
            }
        }
        Ok(())
    }
}

/// The padding before an item of `size` at `len` (`gettoalign`).
fn to_align(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

fn arg_error(lua: &Lua, arg: usize, fname: &str, msg: &str) -> mlua::Error {
    lua_error(lua, &format!("bad argument #{arg} to '{fname}' ({msg})"))
}

fn format_arg(lua: &Lua, args: &MultiValue, fname: &str) -> mlua::Result<Vec<u8>> {
    match args.front() {
        Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => Ok(lua
            .coerce_string(v.clone())?
            .map(|s| s.as_bytes().to_vec())
            .unwrap_or_default()),
        other => Err(arg_error(
            lua,
            1,
            fname,
            &format!(
                "string expected, got {}",
                other.map_or("no value", |v| v.type_name())
            ),
        )),
    }
}

fn pack(lua: &Lua, args: MultiValue) -> mlua::Result<mlua::LuaString> {
    let fmt = format_arg(lua, &args, "pack")?;
    // A missing argument reads as nil in Redis's errors.
    let nil = Value::Nil;
    let arg_at = |i: usize| Some(args.get(i).unwrap_or(&nil));
    let mut f = Format { fmt: &fmt, pos: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut out: Vec<u8> = Vec::new();
    let mut arg = 1;
    while let Some(opt) = f.next() {
        let mut size = f.size(lua, opt)?;
        let pad = to_align(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(lua, arg_at(arg), arg + 1, "pack")?;
                arg += 1;
                let value = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                let mut bytes: Vec<u8> = (0..size)
                    .map(|i| if i < 8 { (value >> (8 * i)) as u8 } else { 0 })
                    .collect();
                if !h.little {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'x' => out.push(0),
            b'f' => {
                let n = check_number(lua, arg_at(arg), arg + 1, "pack")? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    n.to_le_bytes()
                } else {
                    n.to_be_bytes()
                });
            }
            b'd' => {
                let n = check_number(lua, arg_at(arg), arg + 1, "pack")?;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    n.to_le_bytes()
                } else {
                    n.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = match arg_at(arg) {
                    Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => lua
                        .coerce_string(v.clone())?
                        .map(|s| s.as_bytes().to_vec())
                        .unwrap_or_default(),
                    other => {
                        return Err(arg_error(
                            lua,
                            arg + 1,
                            "pack",
                            &format!(
                                "string expected, got {}",
                                other.map_or("no value", |v| v.type_name())
                            ),
                        ))
                    }
                };
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(arg_error(lua, arg + 1, "pack", "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(lua, opt, &mut h, "pack")?,
        }
    }
    lua.create_string(&out)
}

fn unpack(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let fmt = format_arg(lua, &args, "unpack")?;
    let data = match args.get(1) {
        Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => lua
            .coerce_string(v.clone())?
            .map(|s| s.as_bytes().to_vec())
            .unwrap_or_default(),
        other => {
            return Err(arg_error(
                lua,
                2,
                "unpack",
                &format!(
                    "string expected, got {}",
                    other.map_or("no value", |v| v.type_name())
                ),
            ))
        }
    };
    let start = match args.get(2) {
        None | Some(Value::Nil) => 1.0,
        v => check_number(lua, v, 3, "unpack")?,
    };
    let ld = data.len();
    let mut pos = (start as i64 - 1) as usize;
    if start < 1.0 || pos > ld {
        return Err(arg_error(lua, 3, "unpack", "offset must be 1 or greater"));
    }
    let mut f = Format { fmt: &fmt, pos: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut out: Vec<Value> = Vec::new();
    let too_short = || arg_error(lua, 2, "unpack", "data string too short");
    while let Some(opt) = f.next() {
        let mut size = f.size(lua, opt)?;
        pos += to_align(pos, &h, opt, size);
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let mut bytes = data[pos..pos + size].to_vec();
                if !h.little {
                    bytes.reverse();
                }
                let mut value: u64 = 0;
                for (i, &b) in bytes.iter().enumerate().take(8) {
                    value |= u64::from(b) << (8 * i);
                }
                let n = if opt.is_ascii_lowercase() && size < 8 && size > 0 {
                    let mask = u64::MAX << (size * 8 - 1);
                    if value & mask != 0 {
                        (value | mask) as i64 as f64
                    } else {
                        value as f64
                    }
                } else if opt.is_ascii_lowercase() {
                    value as i64 as f64
                } else {
                    value as f64
                };
                out.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                let n = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                out.push(Value::Number(f64::from(n)));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                let n = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                out.push(Value::Number(n));
            }
            b'c' => {
                if size == 0 {
                    let n = match out.pop() {
                        Some(Value::Number(n)) => n,
                        Some(Value::Integer(n)) => n as f64,
                        _ => return Err(lua_error(lua, "format `c0' needs a previous size")),
                    };
                    size = n as usize;
                    if pos > ld || size > ld - pos {
                        return Err(too_short());
                    }
                }
                out.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(lua_error(lua, "unfinished string in data"));
                };
                out.push(Value::String(lua.create_string(&data[pos..pos + end])?));
                size = end + 1;
            }
            _ => f.control(lua, opt, &mut h, "unpack")?,
        }
        pos += size;
    }
    out.push(Value::Number((pos + 1) as f64));
    Ok(MultiValue::from_iter(out))
}

fn size(lua: &Lua, args: MultiValue) -> mlua::Result<f64> {
    let fmt = format_arg(lua, &args, "size")?;
    let mut f = Format { fmt: &fmt, pos: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut pos = 0usize;
    while let Some(opt) = f.next() {
        let size = f.size(lua, opt)?;
        pos += to_align(pos, &h, opt, size);
        if opt == b's' {
            return Err(arg_error(lua, 1, "size", "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "size", "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            f.control(lua, opt, &mut h, "size")?;
        }
        pos += size;
    }
    Ok(pos as f64)
}

pub(super) fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("pack", lua.create_function(pack)?)?;
    t.raw_set("unpack", lua.create_function(unpack)?)?;
    t.raw_set("size", lua.create_function(size)?)?;
    Ok(t)
}
