//! Hash-field expiration, as Redis 7.4.1's `t_hash.c` has it: HEXPIRE,
//! HPEXPIRE, HEXPIREAT, HPEXPIREAT, HTTL, HPTTL, HEXPIRETIME,
//! HPEXPIRETIME, HPERSIST (commands of [`crate::RedisVersion::V7_4`]
//! only), and the lazy expiry the other hash commands run (see
//! [`expire_fields`]).
//!
//! Redis's checks, in its order: the key's type, the time (HEXPIRE...),
//! NX / XX / GT / LT, the `FIELDS` word, the field count, and that count
//! against the arguments; a missing key answers -2 for every field. Each
//! field then gets its code: -2 no such field, 0 a condition not met, 1
//! set, 2 deleted (a time not in the future); HPERSIST -1 no TTL, 1
//! cleared; HTTL and the like -2, -1 no TTL, or the time.

use super::{CmdResult, Ctx, Spec};
use crate::args::parse_i64;
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::hash::HashValue;
use crate::value::Value;

/// The largest expiry time a field may have, in Unix ms: Redis's
/// `HFE_MAX_ABS_TIME_MSEC` (`EB_EXPIRE_TIME_MAX >> 2`).
const MAX_ABS_TIME_MS: i64 = ((1 << 48) - 1) >> 2;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "hexpire",
        arity: -6,
        handler: hexpire,
    },
    Spec {
        name: "hpexpire",
        arity: -6,
        handler: hpexpire,
    },
    Spec {
        name: "hexpireat",
        arity: -6,
        handler: hexpireat,
    },
    Spec {
        name: "hpexpireat",
        arity: -6,
        handler: hpexpireat,
    },
    Spec {
        name: "httl",
        arity: -5,
        handler: httl,
    },
    Spec {
        name: "hpttl",
        arity: -5,
        handler: hpttl,
    },
    Spec {
        name: "hexpiretime",
        arity: -5,
        handler: hexpiretime,
    },
    Spec {
        name: "hpexpiretime",
        arity: -5,
        handler: hpexpiretime,
    },
    Spec {
        name: "hpersist",
        arity: -5,
        handler: hpersist,
    },
];

/// Lazily deletes those of `fields` of the hash at `key` whose time has
/// passed, as Redis 7.4's `hashTypeGetValue` does for HGET, HMGET,
/// HEXISTS, HSTRLEN, HSETNX and HINCRBY*: one `hexpired` event if any
/// went, and the key deleted (`del`) if none is left. Anything but a hash
/// is left for the command's own type check.
pub(super) fn expire_fields(ctx: &mut Ctx<'_>, key: &[u8], fields: &[&[u8]]) {
    // No field has a TTL before 7.4: no second lookup on HGET's hot path.
    if !ctx.store.version.has_field_expiry() {
        return;
    }
    let now = ctx.now;
    let any = match ctx.ks().peek(key, now) {
        Some(Value::Hash(h)) if h.has_ttls() => fields.iter().any(|f| h.is_expired(f, now)),
        _ => false,
    };
    if !any {
        return;
    }
    if let Ok(Some(hash)) = ctx.write::<HashValue>(key) {
        let mut expired = 0;
        for field in fields {
            if hash.is_expired(field, now) {
                hash.remove(field);
                expired += 1;
            }
        }
        ctx.ks().expired_fields_count += expired;
        after_expiry(ctx, key);
    }
}

/// Deletes every expired field of the hash at `key` (HRANDFIELD, as
/// Redis 7.4's `hashTypeExpireIfNeeded`), with [`expire_fields`]'s events.
pub(super) fn expire_all_fields(ctx: &mut Ctx<'_>, key: &[u8]) {
    if !ctx.store.version.has_field_expiry() {
        return;
    }
    let now = ctx.now;
    let any = matches!(ctx.ks().peek(key, now),
        Some(Value::Hash(h)) if h.has_ttls() && !h.expired_fields(now).is_empty());
    if !any {
        return;
    }
    if let Ok(Some(hash)) = ctx.write::<HashValue>(key) {
        let expired = hash.remove_expired(now);
        ctx.ks().expired_fields_count += expired as u64;
        after_expiry(ctx, key);
    }
}

/// The events of fields deleted by their expiry, and the key's deletion
/// if it is left empty.
fn after_expiry(ctx: &mut Ctx<'_>, key: &[u8]) {
    ctx.notify(class::HASH, "hexpired", key);
    let now = ctx.now;
    let emptied = matches!(ctx.ks().peek(key, now), Some(Value::Hash(h)) if h.is_empty());
    if emptied {
        ctx.notify(class::GENERIC, "del", key);
        ctx.ks().remove(key);
    }
}

/// NX / XX / GT / LT.
#[derive(Clone, Copy, PartialEq)]
enum Cond {
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// Whether a field whose TTL is `current` may take `at` under `cond`
/// (`hashTypeSetEx`: no TTL passes LT and fails XX and GT).
fn allows(cond: Cond, current: Option<i64>, at: i64) -> bool {
    match (cond, current) {
        (Cond::Always, _) => true,
        (Cond::Nx, current) => current.is_none(),
        (Cond::Xx | Cond::Gt, None) => false,
        (Cond::Lt, None) => true,
        (Cond::Xx, Some(_)) => true,
        (Cond::Gt, Some(now)) => at > now,
        (Cond::Lt, Some(now)) => at < now,
    }
}

/// The fields of a `FIELDS numfields field...` tail starting at `at` (the
/// `FIELDS` word), with Redis's errors.
fn fields_at<'a>(args: &'a [&'a [u8]], at: usize) -> Result<&'a [&'a [u8]], CmdError> {
    if !args
        .get(at)
        .is_some_and(|w| w.eq_ignore_ascii_case(b"fields"))
    {
        return Err(CmdError::err(
            "Mandatory argument FIELDS is missing or not at the right position",
        ));
    }
    let count = args
        .get(at + 1)
        .and_then(|n| parse_i64(n))
        .filter(|&n| n >= 1)
        .ok_or_else(|| CmdError::err("Parameter `numFields` should be greater than 0"))?;
    let fields = args.get(at + 2..).unwrap_or_default();
    if usize::try_from(count).ok() != Some(fields.len()) {
        return Err(CmdError::err(
            "The `numfields` parameter must match the number of arguments",
        ));
    }
    Ok(fields)
}

/// The hash at `key`, WRONGTYPE for another type (looked up first, as
/// Redis does: to be written, but for the TTL reads).
fn check_type(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, CmdError> {
    Ok(ctx.read_for_write::<HashValue>(key)?.is_some())
}

/// `-2` for each field of a missing key.
fn all_missing(n: usize) -> CmdResult {
    Ok(reply::array(vec![reply::int(-2); n]))
}

/// Seconds or milliseconds.
#[derive(Clone, Copy)]
enum Unit {
    Seconds,
    Millis,
}

fn hexpire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    expire_generic(ctx, args, now, Unit::Seconds)
}

fn hpexpire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    expire_generic(ctx, args, now, Unit::Millis)
}

fn hexpireat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, 0, Unit::Seconds)
}

fn hpexpireat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, 0, Unit::Millis)
}

/// Redis's `hexpireGenericCommand`: the time is `basetime` plus the
/// argument in `unit`.
fn expire_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], basetime: i64, unit: Unit) -> CmdResult {
    let key = args[1];
    let exists = check_type(ctx, key)?;
    let mut at = parse_i64(args[2]).ok_or(CmdError::NotInteger)?;
    if at < 0 {
        return Err(CmdError::err("invalid expire time, must be >= 0"));
    }
    let bad_time = || {
        let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
        CmdError::err(format!("invalid expire time in '{name}' command"))
    };
    if let Unit::Seconds = unit {
        if at > MAX_ABS_TIME_MS / 1000 {
            return Err(bad_time());
        }
        at *= 1000;
    }
    if at > MAX_ABS_TIME_MS - basetime {
        return Err(bad_time());
    }
    at += basetime;
    let word = args[3];
    let (cond, fields_word) = match () {
        _ if word.eq_ignore_ascii_case(b"nx") => (Cond::Nx, 4),
        _ if word.eq_ignore_ascii_case(b"xx") => (Cond::Xx, 4),
        _ if word.eq_ignore_ascii_case(b"gt") => (Cond::Gt, 4),
        _ if word.eq_ignore_ascii_case(b"lt") => (Cond::Lt, 4),
        _ => (Cond::Always, 3),
    };
    let fields = fields_at(args, fields_word)?;
    if !exists {
        return all_missing(fields.len());
    }
    let now = ctx.now;
    let Some(hash) = ctx.write::<HashValue>(key)? else {
        return all_missing(fields.len());
    };
    hash.make_expiring();
    let (mut updated, mut deleted) = (false, false);
    let codes = fields
        .iter()
        .map(|field| {
            if hash.get(field).is_none() {
                return -2;
            }
            if !allows(cond, hash.ttl(field), at) {
                return 0;
            }
            // A time not in the future deletes the field.
            if at <= now {
                hash.remove(field);
                deleted = true;
                return 2;
            }
            hash.set_ttl(field, at);
            updated = true;
            1
        })
        .map(reply::int)
        .collect();
    if updated || deleted {
        let emptied = hash.is_empty();
        ctx.modified(key);
        if emptied {
            ctx.ks().remove(key);
            ctx.notify(class::HASH, "hdel", key);
            ctx.notify(class::GENERIC, "del", key);
        } else {
            if deleted {
                ctx.notify(class::HASH, "hdel", key);
            }
            if updated {
                ctx.ks().note_field_ttls(key);
                ctx.notify(class::HASH, "hexpire", key);
            }
        }
    }
    Ok(reply::array(codes))
}

/// What HTTL and the like answer for a field with a TTL.
#[derive(Clone, Copy)]
enum Shown {
    /// Seconds left, rounded up.
    SecondsLeft,
    /// Milliseconds left.
    MillisLeft,
    /// The Unix time in seconds, rounded up.
    SecondsAt,
    /// The Unix time in ms.
    MillisAt,
}

fn httl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args, Shown::SecondsLeft)
}

fn hpttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args, Shown::MillisLeft)
}

fn hexpiretime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args, Shown::SecondsAt)
}

fn hpexpiretime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args, Shown::MillisAt)
}

/// Redis's `httlGenericCommand`.
fn ttl_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], shown: Shown) -> CmdResult {
    let key = args[1];
    let now = ctx.now;
    let exists = ctx.read::<HashValue>(key)?.is_some();
    let fields = fields_at(args, 2)?;
    if !exists {
        return all_missing(fields.len());
    }
    // Read once already: not another read.
    let Some(hash) = ctx.read_for_write::<HashValue>(key)? else {
        return all_missing(fields.len());
    };
    let codes = fields.iter().map(|field| {
        if hash.get(field).is_none() {
            return -2;
        }
        match hash.ttl(field) {
            None => -1,
            Some(at) if at < now => -2,
            Some(at) => match shown {
                Shown::SecondsLeft => (at - now + 999) / 1000,
                Shown::MillisLeft => at - now,
                Shown::SecondsAt => (at + 999) / 1000,
                Shown::MillisAt => at,
            },
        }
    });
    Ok(reply::array(codes.map(reply::int).collect()))
}

/// HPERSIST key FIELDS numfields field...
fn hpersist(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let exists = check_type(ctx, key)?;
    let fields = fields_at(args, 2)?;
    if !exists {
        return all_missing(fields.len());
    }
    let Some(hash) = ctx.write::<HashValue>(key)? else {
        return all_missing(fields.len());
    };
    let mut changed = false;
    let codes = fields
        .iter()
        .map(|field| {
            if hash.get(field).is_none() {
                -2
            } else if hash.persist(field) {
                changed = true;
                1
            } else {
                -1
            }
        })
        .map(reply::int)
        .collect();
    if changed {
        ctx.modified(key);
        ctx.notify(class::HASH, "hpersist", key);
    }
    Ok(reply::array(codes))
}

#[cfg(test)]
mod tests;
