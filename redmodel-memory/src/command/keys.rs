//! Generic key commands: DEL UNLINK EXISTS TOUCH TYPE RENAME RENAMENX
//! RANDOMKEY SCAN KEYS.

use super::shared::scan::{parse_cursor, parse_scan_options, scan_reply, NoValues};
use super::{CmdResult, Ctx, Spec};
use crate::args::is;
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "del",
        arity: -2,
        handler: del,
    },
    Spec {
        name: "unlink",
        arity: -2,
        handler: del,
    },
    Spec {
        name: "exists",
        arity: -2,
        handler: exists,
    },
    Spec {
        name: "touch",
        arity: -2,
        handler: touch,
    },
    Spec {
        name: "type",
        arity: 2,
        handler: type_of,
    },
    Spec {
        name: "randomkey",
        arity: 1,
        handler: randomkey,
    },
    Spec {
        name: "rename",
        arity: 3,
        handler: rename,
    },
    Spec {
        name: "renamenx",
        arity: 3,
        handler: renamenx,
    },
    Spec {
        name: "scan",
        arity: -2,
        handler: scan,
    },
    Spec {
        name: "keys",
        arity: 2,
        handler: keys,
    },
];

/// DEL and UNLINK: the same deletes, UNLINK's (and DEL's under
/// `lazyfree-lazy-user-del`) run lazily (see [`crate::lazyfree`]).
fn del(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let lazy = is(args[0], "unlink") || ctx.ks().limits().lazy.user_del;
    let mut removed = 0;
    for key in &args[1..] {
        if ctx.remove_lazily(key, lazy) {
            removed += 1;
            ctx.notify(class::GENERIC, "del", key);
        }
    }
    Ok(reply::int(removed))
}

/// EXISTS: a lookup that does not count as an access (OBJECT IDLETIME
/// stays), as Redis 7.0 looks it up with `LOOKUP_NOTOUCH`.
fn exists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let found = (args[1..].iter())
        .filter(|k| ctx.value_untouched(k).is_some())
        .count();
    Ok(reply::int(found))
}

/// TOUCH: EXISTS, counting each lookup as an access.
fn touch(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let found = args[1..].iter().filter(|k| ctx.contains(k)).count();
    Ok(reply::int(found))
}

/// RANDOMKEY: a random live key, or nil in an empty database.
fn randomkey(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    let key = ctx.ks().random_key(now, &mut rand::rng());
    Ok(key.map_or_else(reply::nil, |k| reply::bulk(&k[..])))
}

fn type_of(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let name = ctx
        .value_untouched(args[1])
        .map_or("none", |v| v.type_name());
    Ok(reply::simple(name))
}

fn rename(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args[1], args[2], false)
}

fn renamenx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args[1], args[2], true)
}

/// RENAME carries the value and its TTL to the new name; the old value at
/// the destination (and its TTL) is gone.
fn rename_generic(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], nx: bool) -> CmdResult {
    // Both names are looked up to be written, as Redis does.
    if !ctx.contains_for_write(src) {
        return Err(CmdError::NoSuchKey);
    }
    if src == dst {
        return Ok(if nx { reply::int(0) } else { reply::ok() });
    }
    if nx && ctx.contains_for_write(dst) {
        return Ok(reply::int(0));
    }
    let now = ctx.now;
    let ks = ctx.ks();
    let Some(entry) = ks.remove(src) else {
        return Err(CmdError::NoSuchKey);
    };
    ks.remove(dst);
    ks.put_moved(dst, entry, now);
    ctx.notify(class::GENERIC, "rename_from", src);
    ctx.notify(class::GENERIC, "rename_to", dst);
    ctx.changes(1);
    Ok(if nx { reply::int(1) } else { reply::ok() })
}

fn scan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_cursor(args[1])?;
    let novalues = NoValues::of(ctx.store.version, false);
    let opts = parse_scan_options(&args[2..], true, novalues)?;
    let now = ctx.now;
    let (next, keys) = ctx
        .ks()
        .scan(cursor, opts.count, opts.pattern, opts.type_name, now);
    Ok(scan_reply(
        next,
        keys.iter().map(|k| reply::bulk(&k[..])).collect(),
    ))
}

fn keys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    // `*` matches everything, the empty key included (Redis skips matching).
    let pattern = (args[1] != b"*").then_some(args[1]);
    let keys = ctx.ks().keys(pattern, now);
    Ok(reply::bulks(keys.iter().map(|k| k.to_vec())))
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::command::test_util::*;

    /// Replies observed on redis-server 7.0.15.
    #[test]
    fn randomkey_and_touch() {
        let (clock, mut c) = clocked(1_000_000);
        assert_eq!(run(&mut c, "RANDOMKEY"), Value::Nil);
        run(&mut c, "SET a 1");
        run(&mut c, "SET b 1");
        assert_eq!(run(&mut c, "TOUCH a b nokey"), int(2));
        assert_eq!(
            run(&mut c, "TOUCH"),
            err("ERR wrong number of arguments for 'touch' command")
        );
        assert_eq!(
            run(&mut c, "RANDOMKEY x"),
            err("ERR wrong number of arguments for 'randomkey' command")
        );
        let got = run(&mut c, "RANDOMKEY");
        assert!(got == bulk("a") || got == bulk("b"), "{got:?}");
        // Expired keys are reclaimed, never returned.
        run(&mut c, "PEXPIRE a 10");
        run(&mut c, "PEXPIRE b 10");
        clock.advance(std::time::Duration::from_millis(20));
        assert_eq!(run(&mut c, "RANDOMKEY"), Value::Nil);
        assert_eq!(run(&mut c, "DBSIZE"), int(0));
        run(&mut c, "SET k v");
        clock.advance(std::time::Duration::from_secs(5));
        run(&mut c, "TOUCH k");
        assert_eq!(run(&mut c, "OBJECT IDLETIME k"), int(0));
    }
}
