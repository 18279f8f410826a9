//! `bit`: LuaBitOp's 32-bit operations on Lua numbers.

use mlua::{Lua, MultiValue, Table};

use super::check_number;

/// LuaBitOp's `tobit`: the number rounded to an integer (ties to even,
/// as its 2^52+2^51 addition does) and wrapped to a signed 32-bit one.
fn tobit(n: f64) -> i32 {
    let rounded = (n + 6_755_399_441_055_744.0) - 6_755_399_441_055_744.0;
    if !rounded.is_finite() {
        return 0;
    }
    (rounded.rem_euclid(4_294_967_296.0) as u64 as u32) as i32
}

fn arg(lua: &Lua, args: &MultiValue, i: usize, name: &str) -> mlua::Result<i32> {
    check_number(lua, args.get(i), i + 1, name).map(tobit)
}

/// `bit.band` and the like: the first argument folded with the others.
fn fold(lua: &Lua, t: &Table, name: &'static str, op: fn(i32, i32) -> i32) -> mlua::Result<()> {
    t.raw_set(
        name,
        lua.create_function(move |lua, args: MultiValue| {
            let mut acc = arg(lua, &args, 0, name)?;
            for i in 1..args.len() {
                acc = op(acc, arg(lua, &args, i, name)?);
            }
            Ok(f64::from(acc))
        })?,
    )
}

/// `bit.lshift` and the like: the first argument shifted by the second
/// (its low 5 bits).
fn shift(lua: &Lua, t: &Table, name: &'static str, op: fn(i32, u32) -> i32) -> mlua::Result<()> {
    t.raw_set(
        name,
        lua.create_function(move |lua, args: MultiValue| {
            let x = arg(lua, &args, 0, name)?;
            let n = arg(lua, &args, 1, name)? as u32 & 31;
            Ok(f64::from(op(x, n)))
        })?,
    )
}

pub(super) fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "tobit",
        lua.create_function(|lua, args: MultiValue| Ok(f64::from(arg(lua, &args, 0, "tobit")?)))?,
    )?;
    t.raw_set(
        "bnot",
        lua.create_function(|lua, args: MultiValue| Ok(f64::from(!arg(lua, &args, 0, "bnot")?)))?,
    )?;
    fold(lua, &t, "band", |a, b| a & b)?;
    fold(lua, &t, "bor", |a, b| a | b)?;
    fold(lua, &t, "bxor", |a, b| a ^ b)?;
    shift(lua, &t, "lshift", |x, n| ((x as u32) << n) as i32)?;
    shift(lua, &t, "rshift", |x, n| ((x as u32) >> n) as i32)?;
    shift(lua, &t, "arshift", |x, n| x >> n)?;
    shift(lua, &t, "rol", |x, n| (x as u32).rotate_left(n) as i32)?;
    shift(lua, &t, "ror", |x, n| (x as u32).rotate_right(n) as i32)?;
    t.raw_set(
        "bswap",
        lua.create_function(|lua, args: MultiValue| {
            Ok(f64::from(arg(lua, &args, 0, "bswap")?.swap_bytes()))
        })?,
    )?;
    t.raw_set(
        "tohex",
        lua.create_function(|lua, args: MultiValue| {
            let x = arg(lua, &args, 0, "tohex")? as u32;
            let mut n = if args.len() > 1 && !args[1].is_nil() {
                arg(lua, &args, 1, "tohex")?
            } else {
                8
            };
            let upper = n < 0;
            if upper {
                n = n.saturating_neg();
            }
            let n = n.clamp(0, 8) as usize;
            let hex = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            Ok(hex[8 - n..].to_string())
        })?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::tobit;

    #[test]
    fn tobit_wraps() {
        assert_eq!(tobit(1.0), 1);
        assert_eq!(tobit(4_294_967_295.0), -1);
        assert_eq!(tobit(2_147_483_648.0), i32::MIN);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(tobit(2.5), 2);
    }
}
