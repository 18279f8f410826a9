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
use crate::reply;
use crate::value::encoding::History;
use crate::value::Value;

mod hash;
mod repr;
mod selftest;

use repr::{
    cached_count, count, count_registers, decode, dense_registers, encoding_of, merge_into,
    new_sparse, Corrupt, Editor, Encoding, Registers, REGISTERS,
};

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
    let created = match ctx.value(key) {
        None => true,
        Some(v) => {
            hll_encoding(v)?;
            false
        }
    };
    if created {
        let now = ctx.now;
        let value = Value::Str(new_sparse());
        ctx.ks()
            .set_with_history(key, value, false, History::Converted, now);
    } else {
        ctx.ks().set_history(key, History::Converted);
    }
    Ok(created)
}

/// The string at `key`, known to exist and to be a string.
fn string_at<'a>(ctx: &'a mut Ctx<'_>, key: &[u8]) -> Result<&'a mut Vec<u8>, CmdError> {
    ctx.write::<Vec<u8>>(key)?.ok_or(CmdError::WrongType)
}

/// PFADD key [element ...]: 1 if a register rose (or the key was made).
fn pfadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let sparse_max = sparse_max_bytes(ctx);
    let created = open_or_create(ctx, key)?;
    let mut updated = created;
    {
        let mut hll = Editor::open(string_at(ctx, key)?);
        for element in &args[2..] {
            // An error leaves the registers already raised as they are.
            if hll.add(element, sparse_max).map_err(corrupted)? {
                updated = true;
            }
        }
        if updated {
            hll.invalidate_cache();
        }
    }
    if updated {
        ctx.modified(key);
    }
    Ok(reply::int(i64::from(updated)))
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
            hll.to_dense().map_err(corrupted)?;
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
    let Some(value) = ctx.value(key) else {
        return Err(CmdError::err("The specified key does not exist"));
    };
    hll_encoding(value)?;
    ctx.ks().set_history(key, History::Converted);
    let bytes = string_at(ctx, key)?;
    let mut hll = Editor::open(bytes);
    if sub.eq_ignore_ascii_case(b"getreg") {
        hll.to_dense().map_err(corrupted)?;
        let registers = dense_registers(hll.bytes());
        Ok(reply::array(registers.into_iter().map(reply::int).collect()))
    } else if sub.eq_ignore_ascii_case(b"decode") {
        if hll.encoding() != Encoding::Sparse {
            return Err(CmdError::err("HLL encoding is not sparse"));
        }
        Ok(reply::bulk(decode(hll.bytes())))
    } else if sub.eq_ignore_ascii_case(b"encoding") {
        Ok(reply::simple(hll.encoding().name()))
    } else if sub.eq_ignore_ascii_case(b"todense") {
        let converted = hll.to_dense().map_err(corrupted)?;
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

    const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
    const INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";

    #[test]
    fn add_and_count() {
        let mut c = conn();
        assert_eq!(run(&mut c, "PFADD hll"), int(1));
        assert_eq!(run(&mut c, "PFADD hll"), int(0));
        assert_eq!(run(&mut c, "PFCOUNT hll"), int(0));
        assert_eq!(run(&mut c, "PFADD hll a b c"), int(1));
        assert_eq!(run(&mut c, "PFADD hll a b c"), int(0));
        assert_eq!(run(&mut c, "PFCOUNT hll"), int(3));
        assert_eq!(run(&mut c, "PFCOUNT nokey"), int(0));
        assert_eq!(run(&mut c, "PFCOUNT nokey hll nokey2"), int(3));
        assert_eq!(
            run(&mut c, "OBJECT ENCODING hll"),
            Value::BulkString(b"raw".to_vec())
        );
    }
}
