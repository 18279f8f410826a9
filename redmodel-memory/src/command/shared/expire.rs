//! Setting and removing a key's expire time, shared by the expiry family
//! (EXPIRE, PERSIST, ...) and the string family (SET EX, GETEX).

use crate::command::Ctx;
use crate::error::CmdError;
use crate::notify::class;

/// The unit of an expire argument.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Unit {
    Seconds,
    Millis,
}

/// The error for an expire time that overflows.
pub(crate) fn invalid_expire_time(command: &str) -> CmdError {
    CmdError::err(format!("invalid expire time in '{command}' command"))
}

/// Converts an expire argument to absolute Unix milliseconds, with Redis's
/// overflow checks.
pub(crate) fn absolute_ms(
    when: i64,
    unit: Unit,
    base: i64,
    command: &str,
) -> Result<i64, CmdError> {
    let when = match unit {
        Unit::Seconds => when
            .checked_mul(1000)
            .ok_or_else(|| invalid_expire_time(command))?,
        Unit::Millis => when,
    };
    when.checked_add(base)
        .ok_or_else(|| invalid_expire_time(command))
}

/// Sets the expire time of an existing key to `when` (Unix ms); a time
/// already reached deletes the key, as Redis's `checkAlreadyExpired`.
pub(crate) fn expire_key_at(ctx: &mut Ctx<'_>, key: &[u8], when: i64) {
    if when <= ctx.now {
        ctx.remove(key);
        ctx.notify(class::GENERIC, "del", key);
    } else {
        ctx.ks().set_expire(key, Some(when));
        ctx.modified(key);
        ctx.notify(class::GENERIC, "expire", key);
    }
}

/// Removes the TTL of `key`, changing (and signalling) only a key that has
/// one; whether it had one.
pub(crate) fn persist_key(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    let has_ttl = ctx.entry(key).is_some() && ctx.ks().expire_at(key).is_some();
    if !has_ttl {
        return false;
    }
    ctx.ks().set_expire(key, None);
    ctx.modified(key);
    ctx.notify(class::GENERIC, "persist", key);
    true
}
