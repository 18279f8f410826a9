//! HyperLogLog commands, following Redis 7.0.15's `hyperloglog.c`: PFADD
//! PFCOUNT PFMERGE PFSELFTEST PFDEBUG.
//!
//! An HLL is a plain string holding Redis's own bytes (`repr.rs`), so GET
//! shows them and a value SET by hand (or copied from a real server) is
//! counted the same. What a client can observe and is easy to get wrong:
//! - a string that is not an HLL gets its own WRONGTYPE text, a sparse HLL
//!   whose opcodes are broken gets INVALIDOBJ, each where Redis finds out
//!   (PFCOUNT of one key trusts a valid cached cardinality without reading
//!   the registers);
//! - the HLL is edited in place: a PFADD that fails half-way keeps what it
//!   changed, and the TTL stays;
//! - PFCOUNT of one key writes the cardinality it computed into the header,
//!   which counts as a modification (WATCH sees it); with several keys it
//!   changes nothing;
//! - an HLL made or read by these commands is a `raw` string.

use super::{CmdResult, Ctx, Spec};
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::encoding::History;
use crate::value::Value;

mod hash;
mod repr;
mod selftest;

use repr::{
    cached_count, count, count_registers, decode, dense_registers, encoding_of, merge_into,
    new_sparse, Corrupt, Editor, Encoding, Registers,
};

// The HLL's geometry, shared by the hash and the representation.

/// Index bits of the hash (`HLL_P`).
pub(crate) const P: u32 = 14;
/// Bits of the hash left for the run of zeros (`HLL_Q`).
pub(crate) const Q: u32 = 64 - P;
/// Number of registers (`HLL_REGISTERS`).
pub(crate) const REGISTERS: usize = 1 << P;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "pfadd",
        arity: -2,
        handler: pfadd,
    },
    Spec {
        name: "pfcount",
        arity: -2,
        handler: pfcount,
    },
    Spec {
        name: "pfmerge",
        arity: -2,
        handler: pfmerge,
    },
    Spec {
        name: "pfselftest",
        arity: 1,
        handler: pfselftest,
    },
    Spec {
        name: "pfdebug",
        arity: 3,
        handler: pfdebug,
    },
];

/// A string that is not an HLL (`isHLLObjectOrReply`).
fn not_hll() -> CmdError {
    CmdError::raw("WRONGTYPE Key is not a valid HyperLogLog string value.")
}

/// A sparse HLL whose opcodes do not add up.
fn corrupted(_: Corrupt) -> CmdError {
    CmdError::raw("INVALIDOBJ Corrupted HLL object detected")
}

/// `hll-sparse-max-bytes`: past this length a sparse HLL turns dense.
fn sparse_max_bytes(ctx: &Ctx<'_>) -> u64 {
    ctx.store
        .config
        .get("hll-sparse-max-bytes")
        .parse()
        .unwrap_or(3000)
}

/// The encoding of the HLL `value`: WRONGTYPE (Redis's usual text) for
/// another type, WRONGTYPE (the HLL text) for a string that is not one.
fn hll_encoding(value: &Value) -> Result<Encoding, CmdError> {
    match value {
        Value::Str(s) => encoding_of(s).ok_or_else(not_hll),
        _ => Err(CmdError::WrongType),
    }
}

/// Looks up the HLL at `key` for an edit, creating an empty one if
/// missing; whether it was created. Like Redis's `dbUnshareStringValue`,
/// the value is a `raw` string from then on.
fn open_or_create(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, CmdError> {
    let created = match ctx.value_for_write(key) {
        None => true,
        Some(v) => {
            hll_encoding(v)?;
            false
        }
    };
    if created {
        let now = ctx.now;
        let value = Value::Str(new_sparse().into());
        ctx.ks()
            .set_with_history(key, value, false, History::Converted, now);
    } else {
        ctx.ks().set_history(key, History::Converted);
    }
    Ok(created)
}

/// The string at `key`, known to exist and to be a string.
fn string_at<'a>(ctx: &'a mut Ctx<'_>, key: &[u8]) -> Result<&'a mut Vec<u8>, CmdError> {
    ctx.write::<crate::value::string::StringValue>(key)?
        .map(crate::value::string::StringValue::make_mut)
        .ok_or(CmdError::WrongType)
}

/// PFADD key [element ...]: 1 if a register rose (or the key was made).
fn pfadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let sparse_max = sparse_max_bytes(ctx);
    // Redis counts a change for the key made and one per element that
    // raised a register.
    let mut changes = usize::from(open_or_create(ctx, key)?);
    {
        let mut hll = Editor::open(string_at(ctx, key)?);
        for element in &args[2..] {
            // An error leaves the registers already raised as they are.
            if hll.add(element, sparse_max).map_err(corrupted)? {
                changes += 1;
            }
        }
        if changes > 0 {
            hll.invalidate_cache();
        }
    }
    if changes > 0 {
        ctx.modified(key);
        ctx.notify(class::STRING, "pfadd", key);
        ctx.changes(changes);
    }
    Ok(reply::int(i64::from(changes > 0)))
}

/// PFCOUNT key [key ...]: the estimate for one key (cached in its header),
/// or for the union of several (nothing written).
fn pfcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() > 2 {
        let max = union(ctx, &args[1..])?.0;
        return Ok(reply::int(count_registers(&max) as i64));
    }
    let key = args[1];
    let Some(value) = ctx.value(key) else {
        return Ok(reply::int(0));
    };
    let encoding = hll_encoding(value)?;
    ctx.ks().set_history(key, History::Converted);
    let bytes = string_at(ctx, key)?;
    if let Some(card) = cached_count(bytes) {
        return Ok(reply::int(card as i64));
    }
    let card = count(bytes, encoding).map_err(corrupted)?;
    Editor::open(bytes).set_cached_count(card);
    ctx.modified(key);
    Ok(reply::int(card as i64))
}

/// The registers of the union of the HLLs at `keys` (a missing key is an
/// empty HLL), and whether one of them is dense. Errors come in key order.
fn union(ctx: &mut Ctx<'_>, keys: &[&[u8]]) -> Result<(Box<Registers>, bool), CmdError> {
    let mut max: Box<Registers> = Box::new([0; REGISTERS]);
    let mut any_dense = false;
    for key in keys {
        let Some(value) = ctx.value(key) else {
            continue;
        };
        let encoding = hll_encoding(value)?;
        any_dense |= encoding == Encoding::Dense;
        if let Value::Str(bytes) = value {
            merge_into(&mut max, bytes, encoding).map_err(corrupted)?;
        }
    }
    Ok((max, any_dense))
}

/// PFMERGE destkey [sourcekey ...]: the union into `destkey`, which counts
/// as a source itself. The destination turns dense if a source is dense;
/// otherwise the registers are set one by one in its sparse code, which may
/// still turn it dense.
fn pfmerge(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let dest = args[1];
    let sparse_max = sparse_max_bytes(ctx);
    let (max, any_dense) = union(ctx, &args[1..])?;
    open_or_create(ctx, dest)?;
    {
        let mut hll = Editor::open(string_at(ctx, dest)?);
        if any_dense {
            hll.make_dense().map_err(corrupted)?;
        }
        for (index, &m) in max.iter().enumerate() {
            if m != 0 {
                // Redis ignores the result: the destination was read whole
                // as a source already.
                let _ = hll.set(index, m, sparse_max);
            }
        }
        hll.invalidate_cache();
    }
    ctx.modified(dest);
    // As Redis: a merge is an add of many elements, and one change.
    ctx.notify(class::STRING, "pfadd", dest);
    ctx.changes(1);
    Ok(reply::ok())
}

/// PFSELFTEST: Redis's own check of the registers and of the estimator.
fn pfselftest(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    selftest::run(sparse_max_bytes(ctx))
        .map(|()| reply::ok())
        .map_err(|why| CmdError::err(format!("TESTFAILED {why}")))
}

/// The bytes of a C string argument: up to its first NUL, as `strcasecmp`
/// and `%s` see it.
fn c_str(arg: &[u8]) -> &[u8] {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    &arg[..end]
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. The key is looked up and
/// checked before the subcommand is.
fn pfdebug(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (sub, key) = (c_str(args[1]), args[2]);
    let Some(value) = ctx.value_for_write(key) else {
        return Err(CmdError::err("The specified key does not exist"));
    };
    hll_encoding(value)?;
    ctx.ks().set_history(key, History::Converted);
    let bytes = string_at(ctx, key)?;
    let mut hll = Editor::open(bytes);
    if sub.eq_ignore_ascii_case(b"getreg") {
        hll.make_dense().map_err(corrupted)?;
        let registers = dense_registers(hll.bytes());
        Ok(reply::array(
            registers.into_iter().map(reply::int).collect(),
        ))
    } else if sub.eq_ignore_ascii_case(b"decode") {
        if hll.encoding() != Encoding::Sparse {
            return Err(CmdError::err("HLL encoding is not sparse"));
        }
        Ok(reply::bulk(decode(hll.bytes())))
    } else if sub.eq_ignore_ascii_case(b"encoding") {
        Ok(reply::simple(hll.encoding().name()))
    } else if sub.eq_ignore_ascii_case(b"todense") {
        let converted = hll.make_dense().map_err(corrupted)?;
        Ok(reply::int(i64::from(converted)))
    } else {
        Err(CmdError::err(format!(
            "Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(sub)
        )))
    }
}

#[cfg(test)]
mod tests {
    //! Every expected reply below was observed on redis-server 7.0.15.

    use redis::Value;

    use crate::command::test_util::*;
    use crate::Connection;

    const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
    const INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";

    /// The bytes of the string at `key`.
    fn raw(c: &mut Connection, key: &str) -> Vec<u8> {
        match run(c, &format!("GET {key}")) {
            Value::BulkString(b) => b,
            other => panic!("not a string: {other:?}"),
        }
    }

    /// Sets `key` to these bytes.
    fn set_raw(c: &mut Connection, key: &str, bytes: &[u8]) -> Value {
        c.execute(&[b"SET", key.as_bytes(), bytes])
    }

    /// A sparse header with a stale cache, then `code`.
    fn sparse(code: &[u8]) -> Vec<u8> {
        let mut s = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80".to_vec();
        s.extend_from_slice(code);
        s
    }

    fn status(s: &str) -> Value {
        Value::SimpleString(s.into())
    }

    #[test]
    fn add_and_count() {
        let mut c = conn();
        assert_eq!(run(&mut c, "PFADD hll"), int(1));
        assert_eq!(raw(&mut c, "hll"), sparse(&[0x7f, 0xff]));
        assert_eq!(run(&mut c, "PFADD hll"), int(0));
        assert_eq!(run(&mut c, "PFCOUNT hll"), int(0));
        assert_eq!(run(&mut c, "PFADD hll a b c"), int(1));
        assert_eq!(run(&mut c, "PFADD hll a b c"), int(0));
        assert_eq!(run(&mut c, "PFCOUNT hll"), int(3));
        // The count is cached, valid, in the header.
        assert_eq!(
            raw(&mut c, "hll"),
            b"HYLL\x01\0\0\0\x03\0\0\0\0\0\0\0\x60\xf3\x80\x50\xb1\x84\x4b\xfb\x80\x42\x5a"
        );
        assert_eq!(
            run(&mut c, "PFDEBUG DECODE hll"),
            bulk("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603")
        );
        assert_eq!(run(&mut c, "PFCOUNT nokey"), int(0));
        assert_eq!(run(&mut c, "PFCOUNT nokey hll nokey2"), int(3));
        assert_eq!(run(&mut c, "OBJECT ENCODING hll"), bulk("raw"));
        assert_eq!(run(&mut c, "PFADD e "), int(1));
        assert_eq!(
            run(&mut c, "PFDEBUG DECODE e"),
            bulk("Z:5938 v:2,1 Z:10445")
        );
        let hundred: Vec<String> = (1..=100).map(|i| i.to_string()).collect();
        let mut args = vec!["PFADD", "h"];
        args.extend(hundred.iter().map(String::as_str));
        assert_eq!(run_args(&mut c, &args), int(1));
        assert_eq!(run(&mut c, "PFCOUNT h"), int(100));
        let decoded = strings(Value::Array(vec![run(&mut c, "PFDEBUG DECODE h")])).remove(0);
        assert!(
            decoded.starts_with("Z:375 v:4,1 Z:119 v:2,1 Z:155 v:5,1 Z:202 v:1,1 Z:257 v:1,1 z:29")
        );
    }

    #[test]
    fn dense_past_the_sparse_limit() {
        let mut c = conn();
        let many: Vec<String> = (1..=5000).map(|i| i.to_string()).collect();
        let mut args = vec!["PFADD", "k"];
        args.extend(many.iter().map(String::as_str));
        assert_eq!(run_args(&mut c, &args), int(1));
        assert_eq!(run(&mut c, "PFDEBUG ENCODING k"), status("dense"));
        assert_eq!(raw(&mut c, "k").len(), 12304);
        assert_eq!(run(&mut c, "PFCOUNT k"), int(4985));
        assert_eq!(run(&mut c, "PFCOUNT k nokey"), int(4985));
        assert_eq!(
            run(&mut c, "PFDEBUG DECODE k"),
            err("ERR HLL encoding is not sparse")
        );
        // The limit is read from CONFIG.
        run(&mut c, "CONFIG SET hll-sparse-max-bytes 0");
        assert_eq!(run(&mut c, "PFADD z"), int(1));
        assert_eq!(run(&mut c, "PFDEBUG ENCODING z"), status("sparse"));
        assert_eq!(run(&mut c, "PFADD z a"), int(1));
        assert_eq!(run(&mut c, "PFDEBUG ENCODING z"), status("dense"));
        assert_eq!(run(&mut c, "PFCOUNT z"), int(1));
    }

    #[test]
    fn pfdebug() {
        let mut c = conn();
        assert_eq!(
            run(&mut c, "PFDEBUG ENCODING nokey"),
            err("ERR The specified key does not exist")
        );
        run(&mut c, "SET s short");
        assert_eq!(run(&mut c, "PFDEBUG FOO s"), err(NOT_HLL));
        run(&mut c, "PFADD h a");
        assert_eq!(
            run(&mut c, "PFDEBUG FOO h"),
            err("ERR Unknown PFDEBUG subcommand 'FOO'")
        );
        assert_eq!(
            run(&mut c, "PFDEBUG getreg"),
            err("ERR wrong number of arguments for 'pfdebug' command")
        );
        assert_eq!(run(&mut c, "PFDEBUG encoding h"), status("sparse"));
        let Value::Array(regs) = run(&mut c, "PFDEBUG GETREG h") else {
            panic!("not an array");
        };
        assert_eq!(regs.len(), 16384);
        assert_eq!(regs[12711], int(2));
        assert_eq!(regs.iter().filter(|r| **r != int(0)).count(), 1);
        // GETREG turned it dense.
        assert_eq!(run(&mut c, "PFDEBUG ENCODING h"), status("dense"));
        assert_eq!(run(&mut c, "PFDEBUG TODENSE h"), int(0));
        run(&mut c, "PFADD h2 a");
        assert_eq!(run(&mut c, "PFDEBUG TODENSE h2"), int(1));
        assert_eq!(raw(&mut c, "h"), raw(&mut c, "h2"));
        run(&mut c, "HSET hash f v");
        assert_eq!(run(&mut c, "PFDEBUG ENCODING hash"), err(WRONGTYPE));
    }

    #[test]
    fn not_hlls() {
        let mut c = conn();
        run(&mut c, "HSET hash f v");
        run(&mut c, "SET s short");
        for line in [
            "PFADD hash a",
            "PFCOUNT hash",
            "PFCOUNT nokey hash",
            "PFMERGE hash",
            "PFMERGE d hash",
        ] {
            assert_eq!(run(&mut c, line), err(WRONGTYPE), "{line}");
        }
        for line in [
            "PFADD s a",
            "PFCOUNT s",
            "PFCOUNT s hash",
            "PFMERGE s",
            "PFMERGE d s",
        ] {
            assert_eq!(run(&mut c, line), err(NOT_HLL), "{line}");
        }
        assert_eq!(run(&mut c, "EXISTS d"), int(0));
        let mut bad_magic = sparse(&[0x7f, 0xff]);
        bad_magic[3] = b'X';
        let mut bad_encoding = sparse(&[0x7f, 0xff]);
        bad_encoding[4] = 2;
        let mut short_dense = sparse(&[0x7f, 0xff]);
        short_dense[4] = 0;
        for bytes in [
            bad_magic,
            bad_encoding,
            short_dense,
            sparse(&[])[..15].to_vec(),
        ] {
            set_raw(&mut c, "s", &bytes);
            assert_eq!(run(&mut c, "PFCOUNT s"), err(NOT_HLL), "{bytes:?}");
        }
    }

    #[test]
    fn corrupt_sparse_codes() {
        let mut c = conn();
        run(&mut c, "PFADD h a b c");
        run(&mut c, "APPEND h hello");
        assert_eq!(run(&mut c, "PFCOUNT h"), err(INVALID));
        assert_eq!(run(&mut c, "PFCOUNT h h"), err(INVALID));
        assert_eq!(run(&mut c, "PFMERGE d h"), err(INVALID));
        assert_eq!(run(&mut c, "PFDEBUG TODENSE h"), err(INVALID));
        // A register already high enough needs no walk past the fault.
        assert_eq!(run(&mut c, "PFADD h a"), int(0));
        // A valid cache is trusted without reading the registers.
        set_raw(&mut c, "h", b"HYLL\x01\0\0\0\x39\x30\0\0\0\0\0\0\x7f\xfe");
        assert_eq!(run(&mut c, "PFCOUNT h"), int(12345));
        assert_eq!(run(&mut c, "PFCOUNT h nokey"), err(INVALID));
        // Registers 0..8191 only: x46480 (register 100) is added, then
        // x19895 (register 9000) fails; the first change stays.
        set_raw(&mut c, "h", &sparse(&[0x5f, 0xff]));
        assert_eq!(run(&mut c, "PFADD h x46480 x19895 x197"), err(INVALID));
        assert_eq!(raw(&mut c, "h"), sparse(&[0x40, 0x63, 0x84, 0x5f, 0x9a]));
        // An XZERO cut short at the end reads a zero second byte.
        set_raw(&mut c, "h", &sparse(&[0x7f, 0xfe, 0x40]));
        assert_eq!(run(&mut c, "PFCOUNT h"), int(0));
        assert_eq!(run(&mut c, "PFADD h e1674"), int(1));
        assert_eq!(raw(&mut c, "h"), sparse(&[0x7f, 0xfe]));
        assert_eq!(run(&mut c, "PFCOUNT h"), err(INVALID));
    }

    #[test]
    fn merge() {
        let mut c = conn();
        run(&mut c, "PFADD a a b c");
        run(&mut c, "PFADD b b c d");
        run(&mut c, "PFADD c c d e");
        assert_eq!(run(&mut c, "PFMERGE d a b c"), Value::Okay);
        assert_eq!(run(&mut c, "PFCOUNT d"), int(5));
        assert_eq!(run(&mut c, "PFCOUNT a b c"), int(5));
        assert_eq!(run(&mut c, "PFMERGE e"), Value::Okay);
        assert_eq!(raw(&mut c, "e"), sparse(&[0x7f, 0xff]));
        run(&mut c, "PFDEBUG TODENSE c");
        assert_eq!(run(&mut c, "PFMERGE a c"), Value::Okay);
        assert_eq!(run(&mut c, "PFDEBUG ENCODING a"), status("dense"));
        assert_eq!(run(&mut c, "PFCOUNT a"), int(5));
    }

    /// In place: the TTL stays, the string is `raw` afterwards.
    #[test]
    fn ttl_and_encoding() {
        let mut c = conn();
        run(&mut c, "PFADD h a");
        run(&mut c, "EXPIRE h 100");
        for line in ["PFADD h b", "PFCOUNT h", "PFMERGE h", "PFDEBUG TODENSE h"] {
            run(&mut c, line);
            assert_eq!(run(&mut c, "TTL h"), int(100), "{line}");
        }
        set_raw(&mut c, "e", &sparse(&[0x7f, 0xff]));
        assert_eq!(run(&mut c, "OBJECT ENCODING e"), bulk("embstr"));
        assert_eq!(run(&mut c, "PFCOUNT e nokey"), int(0));
        assert_eq!(run(&mut c, "OBJECT ENCODING e"), bulk("embstr"));
        assert_eq!(run(&mut c, "PFCOUNT e"), int(0));
        assert_eq!(run(&mut c, "OBJECT ENCODING e"), bulk("raw"));
    }

    #[test]
    fn watch_sees_what_redis_signals() {
        for (setup, change, touches) in [
            (&["PFADD h a b c"][..], "PFCOUNT h", true),
            (&["PFADD h a b c", "PFCOUNT h"], "PFCOUNT h", false),
            (&["PFADD h a b c"], "PFCOUNT h nokey", false),
            (&["PFADD h a b c"], "PFADD h a", false),
            (&["PFADD h a b c"], "PFADD h zz", true),
            (&["PFADD h a b c"], "PFDEBUG TODENSE h", false),
            (&["PFADD h a b c"], "PFMERGE h", true),
            (&["PFADD h a b c"], "PFMERGE other h", false),
            (&[], "PFADD h", true),
        ] {
            assert_watch(setup, "h", change, touches);
        }
    }
}
