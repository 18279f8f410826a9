//! DUMP and RESTORE (Redis 7.0.15's `dumpCommand` and `restoreCommand`
//! in `cluster.c`): a key's value as Redis's serialized payload, and back.
//!
//! The payload is the real format (see `crate::rdb`): a real server
//! RESTOREs what DUMP gives here, and RESTORE here takes what a real
//! server's DUMP gives, from Redis 7.0 or from older versions' encodings.

use super::{CmdResult, Ctx, Spec};
use crate::args::{is, parse_i64};
use crate::error::CmdError;
use crate::keyspace::LFU_INIT_VAL;
use crate::notify::class;
use crate::rdb;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "dump",
        arity: 2,
        handler: dump,
    },
    Spec {
        name: "restore",
        arity: -4,
        handler: restore,
    },
    // What MIGRATE sends a cluster node importing the slot: RESTORE
    // itself, allowed on a slot being imported (the engine's cluster is a
    // single node that serves every slot).
    Spec {
        name: "restore-asking",
        arity: -4,
        handler: restore,
    },
];

/// DUMP key: nil for a missing key. The lookup counts as an access.
/// Strings in the payload are LZF-compressed as Redis compresses them
/// while `rdbcompression` is on.
fn dump(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let compress = ctx.store.config.get("rdbcompression") == "yes";
    let version = ctx.store.version;
    let Some(entry) = ctx.entry_read(args[1]) else {
        return Ok(reply::nil());
    };
    let body = rdb::value::encode(&entry.value, entry.history(), compress, version);
    Ok(reply::bulk(rdb::seal_as(body, version)))
}

/// RESTORE's options (`-1`: not given, as Redis keeps them).
struct Options {
    replace: bool,
    absttl: bool,
    idle: i64,
    freq: i64,
}

/// Reads RESTORE's options after the payload in Redis's order: IDLETIME
/// and FREQ exclude each other (the second one given is a syntax error),
/// and a bad value is reported at once.
fn options(args: &[&[u8]]) -> Result<Options, CmdError> {
    let mut opts = Options {
        replace: false,
        absttl: false,
        idle: -1,
        freq: -1,
    };
    let mut j = 4;
    while j < args.len() {
        let opt = args[j];
        let has_value = j + 1 < args.len();
        if is(opt, "replace") {
            opts.replace = true;
        } else if is(opt, "absttl") {
            opts.absttl = true;
        } else if is(opt, "idletime") && has_value && opts.freq == -1 {
            let idle = parse_i64(args[j + 1]).ok_or(CmdError::NotInteger)?;
            if idle < 0 {
                return Err(CmdError::err("Invalid IDLETIME value, must be >= 0"));
            }
            opts.idle = idle;
            j += 1;
        } else if is(opt, "freq") && has_value && opts.idle == -1 {
            let freq = parse_i64(args[j + 1]).ok_or(CmdError::NotInteger)?;
            if !(0..=255).contains(&freq) {
                return Err(CmdError::err("Invalid FREQ value, must be >= 0 and <= 255"));
            }
            opts.freq = freq;
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok(opts)
}

/// `RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]`
/// `[FREQ frequency]`. The checks come in Redis's order: options, an
/// existing key (BUSYKEY), the TTL, the payload's footer, its data. A TTL
/// already past creates nothing (deleting the key REPLACE would have
/// replaced) and still replies OK.
fn restore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let opts = options(args)?;
    let key = args[1];
    if !opts.replace && ctx.contains_for_write(key) {
        return Err(CmdError::raw("BUSYKEY Target key name already exists."));
    }
    let ttl = parse_i64(args[2]).ok_or(CmdError::NotInteger)?;
    if ttl < 0 {
        return Err(CmdError::err("Invalid TTL value, must be >= 0"));
    }
    let version = ctx.store.version;
    if rdb::open_as(args[3], version).is_none() {
        return Err(CmdError::err("DUMP payload version or checksum are wrong"));
    }
    if !args[3]
        .first()
        .is_some_and(|&tag| rdb::reads_type(tag, version))
    {
        return Err(CmdError::err("Bad data format"));
    }
    // Redis reads the object from the whole payload, footer included: an
    // object that runs into the footer's bytes still loads.
    let limits = *ctx.ks().limits();
    let (value, history) =
        rdb::value::decode(args[3], &limits).ok_or_else(|| CmdError::err("Bad data format"))?;

    let now = ctx.now;
    let deleted = opts.replace && ctx.remove(key);
    // Redis adds the clock to a relative TTL in C's signed arithmetic,
    // which wraps: a huge TTL lands in the past.
    let expire_at = match ttl {
        0 => None,
        t if opts.absttl => Some(t),
        t => Some(t.wrapping_add(now)),
    };
    if expire_at.is_some_and(|at| at <= now) {
        if deleted {
            ctx.notify(class::GENERIC, "del", key);
        }
        return Ok(reply::ok());
    }
    let ks = ctx.ks();
    ks.set_with_history(key, value, false, history, now);
    if expire_at.is_some() {
        ks.set_expire(key, expire_at);
    }
    if let Some(entry) = ks.entry_untouched(key, now) {
        // A restored key is a new object, not an access: Redis sets the
        // one its eviction policy keeps, the LFU counter (its initial
        // one unless FREQ gives it) under an LFU policy, the idle time
        // under any other.
        if limits.lfu {
            entry.set_freq(u8::try_from(opts.freq).unwrap_or(LFU_INIT_VAL));
            entry.set_accessed(crate::keyspace::seconds(now));
        } else if opts.idle >= 0 {
            let idle = lru_idle(now, opts.idle);
            let idle = u32::try_from(idle).unwrap_or(u32::MAX);
            entry.set_accessed(crate::keyspace::seconds(now).saturating_sub(idle));
        }
    }
    ctx.notify(class::GENERIC, "restore", key);
    Ok(reply::ok())
}

/// The idle time, in seconds, OBJECT IDLETIME shows after RESTORE ...
/// IDLETIME `idle` on Redis: its LRU clock counts seconds in 24 bits, so
/// an idle time longer than the clock's value wraps around it
/// (`objectSetLRUOrLFU`, then `estimateObjectIdleTime`), as do Redis's
/// scaling to milliseconds and back.
fn lru_idle(now_ms: i64, idle: i64) -> i64 {
    const CLOCK_MAX: i64 = (1 << 24) - 1;
    let clock = (now_ms / 1000) & CLOCK_MAX;
    let idle = idle.wrapping_mul(1000) / 1000;
    let mut at = clock.wrapping_sub(idle);
    if at < 0 {
        at = at.wrapping_add(CLOCK_MAX);
    }
    // The object keeps 24 bits of it.
    let at = at.rem_euclid(1 << 24);
    if clock >= at {
        clock - at
    } else {
        clock + CLOCK_MAX - at
    }
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::command::test_util::*;

    /// The payload DUMP gives for `key`.
    fn dump(c: &mut crate::Connection, key: &str) -> Vec<u8> {
        match c.execute(&[b"DUMP", key.as_bytes()]) {
            Value::BulkString(p) => p,
            other => panic!("DUMP {key}: {other:?}"),
        }
    }

    fn restore(
        c: &mut crate::Connection,
        key: &str,
        ttl: &str,
        payload: &[u8],
        opts: &[&str],
    ) -> Value {
        let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload];
        args.extend(opts.iter().map(|o| o.as_bytes()));
        c.execute(&args)
    }

    #[test]
    fn every_type_round_trips() {
        let mut c = conn();
        run(&mut c, "SET s hello");
        run(&mut c, "SET n 12345");
        run(&mut c, "RPUSH l a b 3 -4");
        run(&mut c, "SADD si 3 1 2");
        run(&mut c, "SADD ss a b c");
        run(&mut c, "ZADD zl 1 a 2.5 b -inf c");
        run(&mut c, "HSET hl f v n 1");
        run(&mut c, "XADD x 1-1 f v");
        run(&mut c, "XADD x 2-1 f w g 1");
        run(&mut c, "XGROUP CREATE x g 0");
        run(&mut c, "XREADGROUP GROUP g alice COUNT 1 STREAMS x >");
        let reads = [
            ("s", "GET s"),
            ("n", "GET n"),
            ("l", "LRANGE l 0 -1"),
            ("si", "SMEMBERS si"),
            ("ss", "SMEMBERS ss"),
            ("zl", "ZRANGE zl 0 -1 WITHSCORES"),
            ("hl", "HGETALL hl"),
            ("x", "XRANGE x - +"),
        ];
        for (key, read) in reads {
            let before = run(&mut c, read);
            let encoding = run(&mut c, &format!("OBJECT ENCODING {key}"));
            let payload = dump(&mut c, key);
            run(&mut c, &format!("DEL {key}"));
            assert_eq!(
                restore(&mut c, key, "0", &payload, &[]),
                Value::Okay,
                "{key}"
            );
            let mut after = run(&mut c, read);
            let mut before = before;
            if key.starts_with('s') && key != "s" {
                sort_array(&mut before);
                sort_array(&mut after);
            }
            assert_eq!(after, before, "{key}");
            assert_eq!(
                run(&mut c, &format!("OBJECT ENCODING {key}")),
                encoding,
                "{key}"
            );
        }
        assert_eq!(run(&mut c, "XPENDING x g"), run(&mut c, "XPENDING x g"),);
        assert_eq!(run(&mut c, "XINFO GROUPS x"), {
            let p = dump(&mut c, "x");
            run(&mut c, "DEL x");
            restore(&mut c, "x", "0", &p, &[]);
            run(&mut c, "XINFO GROUPS x")
        });
    }

    fn sort_array(v: &mut Value) {
        if let Value::Array(items) = v {
            items.sort_by_key(|i| format!("{i:?}"));
        }
    }

    #[test]
    fn big_encodings_round_trip() {
        let mut c = conn();
        let members: Vec<String> = (0..600).map(|i| format!("m{i}")).collect();
        let mut sadd = vec!["SADD".to_string(), "s".into()];
        sadd.extend(members.iter().cloned());
        let mut hset = vec!["HSET".to_string(), "h".into()];
        let mut zadd = vec!["ZADD".to_string(), "z".into()];
        let mut rpush = vec!["RPUSH".to_string(), "l".into()];
        for (i, m) in members.iter().enumerate() {
            hset.push(m.clone());
            hset.push(format!("{i}"));
            zadd.push(format!("{}", i as f64 / 3.0));
            zadd.push(m.clone());
            rpush.push(m.repeat(10));
        }
        for cmd in [&sadd, &hset, &zadd, &rpush] {
            let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
            c.execute(&args);
        }
        for (key, read, encoding) in [
            ("s", "SCARD s", "hashtable"),
            ("h", "HGET h m599", "hashtable"),
            ("z", "ZRANGE z 0 -1 WITHSCORES", "skiplist"),
            ("l", "LRANGE l 0 -1", "quicklist"),
        ] {
            let before = run(&mut c, read);
            let payload = dump(&mut c, key);
            assert_eq!(
                restore(&mut c, key, "0", &payload, &["REPLACE"]),
                Value::Okay
            );
            assert_eq!(run(&mut c, read), before, "{key}");
            assert_eq!(
                run(&mut c, &format!("OBJECT ENCODING {key}")),
                bulk(encoding)
            );
        }
    }

    #[test]
    fn errors_and_options() {
        let mut c = conn();
        run(&mut c, "SET k v");
        let payload = dump(&mut c, "k");
        let busy = err("BUSYKEY Target key name already exists.");
        assert_eq!(restore(&mut c, "k", "0", &payload, &[]), busy);
        assert_eq!(
            restore(&mut c, "k", "0", &payload, &["REPLACE", "FOO"]),
            err("ERR syntax error")
        );
        assert_eq!(
            restore(&mut c, "k2", "-1", &payload, &[]),
            err("ERR Invalid TTL value, must be >= 0")
        );
        assert_eq!(
            restore(&mut c, "k2", "x", &payload, &[]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            restore(&mut c, "k2", "0", b"garbage", &[]),
            err("ERR DUMP payload version or checksum are wrong")
        );
        let bad = crate::rdb::seal(vec![42]);
        assert_eq!(
            restore(&mut c, "k2", "0", &bad, &[]),
            err("ERR Bad data format")
        );
        assert_eq!(
            restore(&mut c, "k2", "0", &payload, &["IDLETIME", "-1"]),
            err("ERR Invalid IDLETIME value, must be >= 0")
        );
        assert_eq!(
            restore(&mut c, "k2", "0", &payload, &["FREQ", "256"]),
            err("ERR Invalid FREQ value, must be >= 0 and <= 255")
        );
        assert_eq!(
            restore(&mut c, "k2", "0", &payload, &["FREQ", "1", "IDLETIME", "1"]),
            err("ERR syntax error")
        );
        assert_eq!(restore(&mut c, "k2", "5000", &payload, &[]), Value::Okay);
        assert!(matches!(run(&mut c, "PTTL k2"), Value::Int(t) if t > 4000 && t <= 5000));
        assert_eq!(
            restore(&mut c, "k3", "1", &payload, &["ABSTTL"]),
            Value::Okay
        );
        assert_eq!(run(&mut c, "EXISTS k3"), int(0));
        assert_eq!(
            restore(&mut c, "k", "1", &payload, &["ABSTTL", "REPLACE"]),
            Value::Okay
        );
        assert_eq!(run(&mut c, "EXISTS k"), int(0));
        assert_eq!(run(&mut c, "DUMP nokey"), Value::Nil);
        assert_eq!(
            restore(&mut c, "k4", "0", &payload, &["IDLETIME", "1000"]),
            Value::Okay
        );
        assert_eq!(run(&mut c, "OBJECT IDLETIME k4"), int(1000));
    }

    #[test]
    fn idle_times_wrap_like_redis_lru_clock() {
        // Figures of a real redis-server whose LRU clock read 471607.
        let now = 471_607_000 + (1 << 24) * 1000 * 100;
        assert_eq!(super::lru_idle(now, 1000), 1000);
        assert_eq!(super::lru_idle(now, 9_000_000), 9_000_000);
        assert_eq!(super::lru_idle(now, 100_000_000), 16_113_920);
        assert_eq!(
            super::lru_idle(now, i64::MAX),
            super::lru_idle(now, i64::MAX)
        );
    }
}
