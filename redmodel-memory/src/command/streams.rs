//! Stream commands, following Redis 7.0.15's `t_stream.c`: XADD XRANGE
//! XREVRANGE XLEN XDEL XTRIM XSETID here; XREAD and XREADGROUP in
//! `read.rs`; the consumer group commands (XGROUP XACK XPENDING XCLAIM
//! XAUTOCLAIM) in `groups.rs`; XINFO in `info.rs`.
//!
//! Arguments are checked in Redis's order, command by command, because it
//! decides which error wins (XDEL looks the key up before parsing its IDs,
//! XTRIM after). A stream is not deleted when its last entry goes.

use super::{arity_error, CmdResult, Ctx, Spec};
use crate::args::{int_arg, is};
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::stream::{parse_id, NodeLimits, Stream, StreamId, Trim};
use crate::value::{Bytes, Value};

mod groups;
mod info;
mod read;

pub(crate) use read::block_from_script;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "xadd",
        arity: -5,
        handler: xadd,
    },
    Spec {
        name: "xrange",
        arity: -4,
        handler: xrange,
    },
    Spec {
        name: "xrevrange",
        arity: -4,
        handler: xrevrange,
    },
    Spec {
        name: "xlen",
        arity: 2,
        handler: xlen,
    },
    Spec {
        name: "xdel",
        arity: -3,
        handler: xdel,
    },
    Spec {
        name: "xtrim",
        arity: -4,
        handler: xtrim,
    },
    Spec {
        name: "xsetid",
        arity: -3,
        handler: xsetid,
    },
    Spec {
        name: "xread",
        arity: -4,
        handler: read::xread,
    },
    Spec {
        name: "xreadgroup",
        arity: -7,
        handler: read::xreadgroup,
    },
    Spec {
        name: "xgroup",
        arity: -2,
        handler: groups::xgroup,
    },
    Spec {
        name: "xack",
        arity: -4,
        handler: groups::xack,
    },
    Spec {
        name: "xpending",
        arity: -3,
        handler: groups::xpending,
    },
    Spec {
        name: "xclaim",
        arity: -6,
        handler: groups::xclaim,
    },
    Spec {
        name: "xautoclaim",
        arity: -6,
        handler: groups::xautoclaim,
    },
    Spec {
        name: "xinfo",
        arity: -2,
        handler: info::xinfo,
    },
];

/// Redis's reply to an invalid ID argument.
fn invalid_id() -> CmdError {
    CmdError::err("Invalid stream ID specified as stream command argument")
}

/// A strict ID argument (no `-`, `+`); a missing sequence is 0.
fn strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    parse_id(arg, 0, true, false)
        .map(|(id, _)| id)
        .ok_or_else(invalid_id)
}

/// A range end of XRANGE, XPENDING and XAUTOCLAIM: `-`, `+`, an ID whose
/// missing sequence is `missing_seq`, or with `(` an exclusive (strict)
/// one. Returns the ID and whether it is exclusive.
fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        let (id, _) = parse_id(&arg[1..], missing_seq, true, false).ok_or_else(invalid_id)?;
        Ok((id, true))
    } else {
        let (id, _) = parse_id(arg, missing_seq, false, false).ok_or_else(invalid_id)?;
        Ok((id, false))
    }
}

/// The start of a range: inclusive, an exclusive one moved to the next ID.
fn range_start(arg: &[u8]) -> Result<StreamId, CmdError> {
    match interval_id(arg, 0)? {
        (id, false) => Ok(id),
        (id, true) => id
            .next()
            .ok_or_else(|| CmdError::err("invalid start ID for the interval")),
    }
}

/// The end of a range: inclusive, an exclusive one moved to the previous ID.
fn range_end(arg: &[u8]) -> Result<StreamId, CmdError> {
    match interval_id(arg, u64::MAX)? {
        (id, false) => Ok(id),
        (id, true) => id
            .prev()
            .ok_or_else(|| CmdError::err("invalid end ID for the interval")),
    }
}

fn id_reply(id: StreamId) -> redis::Value {
    reply::bulk(id.to_string())
}

/// One entry as XRANGE and XREAD show it: `[id, [field, value, ...]]`.
fn entry_reply(id: StreamId, fields: &[Bytes]) -> redis::Value {
    reply::array(vec![id_reply(id), reply::bulks(fields.iter().cloned())])
}

/// The node limits of the selected database's configuration.
fn node_limits(ctx: &mut Ctx<'_>) -> NodeLimits {
    let limits = ctx.ks().limits();
    NodeLimits {
        max_bytes: limits.stream_node_max_bytes,
        max_entries: limits.stream_node_max_entries,
    }
}

/// The options of XADD and XTRIM (Redis's `streamAddTrimArgs`).
struct AddTrimArgs {
    trim: Option<Trim>,
    approx: bool,
    /// The most entries a trim may remove, 0 for no limit.
    limit: u64,
    no_mkstream: bool,
    /// XADD's explicit ID and whether its sequence was given (not `ms-*`).
    id: Option<(StreamId, bool)>,
    /// The position of XADD's ID argument.
    id_pos: usize,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`, errors in its order.
fn parse_add_trim(
    args: &[&[u8]],
    xadd: bool,
    node_max_entries: u64,
) -> Result<AddTrimArgs, CmdError> {
    let mut out = AddTrimArgs {
        trim: None,
        approx: false,
        limit: 0,
        no_mkstream: false,
        id: None,
        id_pos: args.len(),
    };
    let mut limit_given = false;
    let mut i = 2;
    const BOTH: &str = "syntax error, MAXLEN and MINID options at the same time are not compatible";
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = args[i];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if out.trim.is_some() {
                return Err(CmdError::err(BOTH));
            }
            out.approx = false;
            let next = args[i + 1];
            if more >= 2 && next == b"~" {
                out.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            if is(opt, "maxlen") {
                let max = int_arg(args[i + 1])?;
                let max = u64::try_from(max)
                    .map_err(|_| CmdError::err("The MAXLEN argument must be >= 0."))?;
                out.trim = Some(Trim::MaxLen(max));
            } else {
                out.trim = Some(Trim::MinId(strict_id(args[i + 1])?));
            }
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            let limit = int_arg(args[i + 1])?;
            out.limit = u64::try_from(limit)
                .map_err(|_| CmdError::err("The LIMIT argument must be >= 0."))?;
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            out.no_mkstream = true;
        } else if xadd {
            let id = parse_id(opt, 0, true, true).ok_or_else(invalid_id)?;
            out.id = Some(id);
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    out.id_pos = i;
    if out.limit != 0 && out.trim.is_none() {
        return Err(CmdError::err(
            "syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && out.trim.is_none() {
        return Err(CmdError::err(
            "syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if limit_given {
        if !out.approx {
            return Err(CmdError::err(
                "syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
    } else if out.approx {
        // Redis bounds an approximate trim's work to 100 nodes.
        let limit = node_max_entries.saturating_mul(100);
        out.limit = if limit == 0 {
            10_000
        } else {
            limit.min(1_000_000)
        };
    } else {
        out.limit = 0;
    }
    Ok(out)
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]]`
/// `*|id field value [field value ...]`
fn xadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let limits = node_limits(ctx);
    let opts = parse_add_trim(args, true, limits.max_entries)?;
    let field_pos = opts.id_pos + 1;
    let fields = args.len().saturating_sub(field_pos);
    if field_pos > args.len() || fields < 2 || fields % 2 == 1 {
        return Err(arity_error(args));
    }
    if let Some((id, true)) = opts.id {
        if id.is_zero() {
            return Err(CmdError::err(
                "The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let key = args[1];
    let fields: Vec<Bytes> = args[field_pos..].iter().map(|f| f.to_vec()).collect();
    let now = ctx.now;
    let since_7_2 = ctx.store.version >= crate::RedisVersion::V7_4;
    let added = match ctx.write::<Stream>(key)? {
        Some(stream) => add(stream, &opts, fields, now, limits, since_7_2)?,
        None if opts.no_mkstream => return Ok(reply::nil()),
        None => {
            let mut stream = Box::<Stream>::default();
            let added = add(&mut stream, &opts, fields, now, limits, since_7_2)?;
            ctx.set(key, Value::Stream(stream), false);
            added
        }
    };
    let (added, trimmed) = added;
    ctx.modified(key);
    ctx.notify(class::STREAM, "xadd", key);
    if trimmed {
        ctx.notify(class::STREAM, "xtrim", key);
    }
    // One change, whatever the trim removed.
    ctx.changes(1);
    Ok(id_reply(added))
}

/// Appends an entry to `stream` for XADD, then trims it; returns the ID
/// and whether the trim removed anything.
fn add(
    stream: &mut Stream,
    opts: &AddTrimArgs,
    fields: Vec<Bytes>,
    now: i64,
    limits: NodeLimits,
    since_7_2: bool,
) -> Result<(StreamId, bool), CmdError> {
    let last = stream.last_id;
    if last == StreamId::MAX {
        return Err(CmdError::err(
            "The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    // Redis 7.0 reports a sequence overflow of `ms-*` with the error of
    // elements too large (errno is not EDOM on that path); 7.2 sets EDOM,
    // the error of an ID not above the top one.
    let too_large = || CmdError::err("Elements are too large to be stored");
    let not_above = || {
        CmdError::err(
            "The ID specified in XADD is equal or smaller than the target stream top item",
        )
    };
    let id = match opts.id {
        Some((id, true)) => id,
        Some((id, false)) if id.ms == last.ms => {
            if last.seq == u64::MAX {
                return Err(if since_7_2 { not_above() } else { too_large() });
            }
            StreamId::new(last.ms, last.seq + 1)
        }
        Some((id, false)) => id,
        None => {
            let ms = u64::try_from(now).unwrap_or(0);
            if ms > last.ms {
                StreamId::new(ms, 0)
            } else {
                // Wraps to 0-0 past the last ID, which the check below refuses.
                last.next().unwrap_or(StreamId::MIN)
            }
        }
    };
    if id <= last {
        return Err(not_above());
    }
    let total: u64 = fields.iter().map(|f| f.len() as u64).sum();
    if total > 1 << 30 {
        return Err(too_large());
    }
    stream.append(id, fields, limits);
    let trimmed = opts
        .trim
        .is_some_and(|trim| stream.trim(trim, opts.approx, opts.limit) > 0);
    Ok((id, trimmed))
}

fn xrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_generic(ctx, args, false)
}

fn xrevrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_generic(ctx, args, true)
}

/// XRANGE key start end [COUNT n] and XREVRANGE key end start [COUNT n].
fn range_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let start = range_start(start_arg)?;
    let end = range_end(end_arg)?;
    let mut count: Option<usize> = None;
    let mut j = 4;
    while j < args.len() {
        if is(args[j], "count") && j + 1 < args.len() {
            let n = int_arg(args[j + 1])?;
            count = Some(usize::try_from(n).unwrap_or(0));
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let Some(stream) = ctx.read::<Stream>(args[1])? else {
        return Ok(reply::array(Vec::new()));
    };
    if count == Some(0) {
        return Ok(reply::nil());
    }
    let items = stream
        .range(start, end, rev)
        .take(count.unwrap_or(usize::MAX))
        .map(|(id, fields)| entry_reply(*id, fields))
        .collect();
    Ok(reply::array(items))
}

fn xlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let len = ctx.read::<Stream>(args[1])?.map_or(0, |s| s.len());
    Ok(reply::int(len))
}

/// XDEL key id [id ...]: the key is looked up before the IDs are parsed.
fn xdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    if ctx.write::<Stream>(key)?.is_none() {
        return Ok(reply::int(0));
    }
    let ids = args[2..]
        .iter()
        .map(|a| strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(stream) = ctx.write::<Stream>(key)? else {
        return Ok(reply::int(0));
    };
    let mut deleted = 0;
    let mut first_entry = false;
    for id in ids {
        if stream.delete(id) {
            if id == stream.first_id {
                first_entry = true;
            }
            if id > stream.max_deleted_id {
                stream.max_deleted_id = id;
            }
            deleted += 1;
        }
    }
    if deleted > 0 {
        if stream.len() == 0 {
            stream.first_id = StreamId::MIN;
        } else if first_entry {
            stream.refresh_first_id();
        }
        ctx.modified(key);
        ctx.notify(class::STREAM, "xdel", key);
        ctx.changes(deleted);
    }
    Ok(reply::int(deleted))
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count].
fn xtrim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let limits = node_limits(ctx);
    let opts = parse_add_trim(args, false, limits.max_entries)?;
    let key = args[1];
    let Some(stream) = ctx.write::<Stream>(key)? else {
        return Ok(reply::int(0));
    };
    let Some(trim) = opts.trim else {
        return Ok(reply::int(0));
    };
    let deleted = stream.trim(trim, opts.approx, opts.limit);
    if deleted > 0 {
        ctx.modified(key);
        ctx.notify(class::STREAM, "xtrim", key);
        ctx.changes(usize::try_from(deleted).unwrap_or(usize::MAX));
    }
    Ok(reply::int(deleted))
}

/// XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id].
fn xsetid(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let id = strict_id(args[2])?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if is(args[i], "entriesadded") && more > 0 {
            let n = int_arg(args[i + 1])?;
            entries_added = Some(
                u64::try_from(n).map_err(|_| CmdError::err("entries_added must be positive"))?,
            );
            i += 2;
        } else if is(args[i], "maxdeletedid") && more > 0 {
            max_deleted = strict_id(args[i + 1])?;
            if id < max_deleted {
                return Err(CmdError::err(
                    "The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let since_7_2 = ctx.store.version >= crate::RedisVersion::V7_4;
    let Some(stream) = ctx.write::<Stream>(args[1])? else {
        return Err(CmdError::NoSuchKey);
    };
    // Redis 7.2 on: not below the stream's own max deleted ID either.
    if since_7_2 && id < stream.max_deleted_id {
        return Err(CmdError::err(
            "The ID specified in XSETID is smaller than current max_deleted_entry_id",
        ));
    }
    if let Some(top) = stream.last_valid_id() {
        if id < top {
            return Err(CmdError::err(
                "The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added.is_some_and(|n| (stream.len() as u64) > n) {
            return Err(CmdError::err(
                "The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    stream.last_id = id;
    if let Some(n) = entries_added {
        stream.entries_added = n;
    }
    if !max_deleted.is_zero() {
        stream.max_deleted_id = max_deleted;
    }
    ctx.notify(class::STREAM, "xsetid", args[1]);
    Ok(reply::ok())
}

#[cfg(test)]
mod tests;

pub(super) use groups::SUBCOMMANDS as XGROUP_SUBCOMMANDS;
pub(super) use info::SUBCOMMANDS as XINFO_SUBCOMMANDS;
