//! Expiry commands: EXPIRE PEXPIRE EXPIREAT PEXPIREAT (NX XX GT LT), TTL
//! PTTL EXPIRETIME PEXPIRETIME PERSIST, following Redis 7.0's
//! `expireGenericCommand` step by step.

use super::shared::expire::{absolute_ms, expire_key_at, persist_key, Unit};
use super::{CmdResult, Ctx, Spec};
use crate::args::{int_arg, is};
use crate::error::CmdError;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "expire",
        arity: -3,
        handler: expire,
    },
    Spec {
        name: "pexpire",
        arity: -3,
        handler: pexpire,
    },
    Spec {
        name: "expireat",
        arity: -3,
        handler: expireat,
    },
    Spec {
        name: "pexpireat",
        arity: -3,
        handler: pexpireat,
    },
    Spec {
        name: "ttl",
        arity: 2,
        handler: ttl,
    },
    Spec {
        name: "pttl",
        arity: 2,
        handler: pttl,
    },
    Spec {
        name: "expiretime",
        arity: 2,
        handler: expiretime,
    },
    Spec {
        name: "pexpiretime",
        arity: 2,
        handler: pexpiretime,
    },
    Spec {
        name: "persist",
        arity: 2,
        handler: persist,
    },
];

fn expire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    expire_generic(ctx, args, now, Unit::Seconds, "expire")
}

fn pexpire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    expire_generic(ctx, args, now, Unit::Millis, "pexpire")
}

fn expireat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, 0, Unit::Seconds, "expireat")
}

fn pexpireat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, 0, Unit::Millis, "pexpireat")
}

fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    base: i64,
    unit: Unit,
    command: &str,
) -> CmdResult {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &args[3..] {
        if is(opt, "nx") {
            nx = true;
        } else if is(opt, "xx") {
            xx = true;
        } else if is(opt, "gt") {
            gt = true;
        } else if is(opt, "lt") {
            lt = true;
        } else {
            return Err(CmdError::err(format!(
                "Unsupported option {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(CmdError::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(CmdError::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    let when = absolute_ms(int_arg(args[2])?, unit, base, command)?;
    let key = args[1];
    if ctx.entry(key).is_none() {
        return Ok(reply::int(0));
    }
    let current = ctx.ks().expire_at(key);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        return Ok(reply::int(0));
    }
    expire_key_at(ctx, key, when);
    Ok(reply::int(1))
}

/// Remaining time to live in ms: -2 no key, -1 no expiry.
fn remaining_ms(ctx: &mut Ctx<'_>, key: &[u8]) -> Option<i64> {
    let now = ctx.now;
    // Not an access: Redis reads TTLs with `LOOKUP_NOTOUCH`.
    ctx.value_untouched(key)?;
    Some(ctx.ks().expire_at(key).map_or(-1, |at| (at - now).max(0)))
}

fn ttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(match remaining_ms(ctx, args[1]) {
        None => -2,
        Some(-1) => -1,
        Some(ms) => (ms + 500) / 1000,
    }))
}

fn pttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(remaining_ms(ctx, args[1]).unwrap_or(-2)))
}

fn expire_time(ctx: &mut Ctx<'_>, key: &[u8]) -> Option<Option<i64>> {
    ctx.value_untouched(key)?;
    Some(ctx.ks().expire_at(key))
}

fn expiretime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(match expire_time(ctx, args[1]) {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => (at + 500) / 1000,
    }))
}

fn pexpiretime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(match expire_time(ctx, args[1]) {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => at,
    }))
}

fn persist(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(i64::from(persist_key(ctx, args[1]))))
}
