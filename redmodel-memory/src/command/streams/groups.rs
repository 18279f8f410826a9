//! Consumer group commands: XGROUP (CREATE, SETID, DESTROY,
//! CREATECONSUMER, DELCONSUMER, HELP), XACK, XPENDING, XCLAIM and
//! XAUTOCLAIM, as Redis 7.0.15's `t_stream.c` runs them. Idle times are
//! measured on the engine's clock (`Ctx::now`).

use super::{entry_reply, id_reply, range_end, range_start, strict_id};
use crate::args::{int_arg, is, parse_i64};
use crate::command::{help_reply, run_subcommand, CmdResult, Ctx, Sub};
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::stream::{parse_id, Group, Nack, Stream, StreamId, INVALID_ENTRIES_READ};
use crate::value::Value;

fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// "NOGROUP No such key 'k' or consumer group 'g'" (XPENDING, XCLAIM,
/// XAUTOCLAIM).
fn no_key_or_group(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::raw(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        lossy(key),
        lossy(group)
    ))
}

/// XGROUP's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "create",
        arity: -5,
        handler: xgroup_any,
    },
    Sub {
        name: "setid",
        arity: -5,
        handler: xgroup_any,
    },
    Sub {
        name: "destroy",
        arity: 4,
        handler: xgroup_any,
    },
    Sub {
        name: "createconsumer",
        arity: 5,
        handler: xgroup_any,
    },
    Sub {
        name: "delconsumer",
        arity: 5,
        handler: xgroup_any,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: xgroup_help,
    },
];

/// Redis's `addReplySubcommandSyntaxError`.
pub(super) fn sub_syntax(args: &[&[u8]]) -> CmdError {
    CmdError::err(format!(
        "unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        lossy(args[1]),
        lossy(args[0]).to_ascii_uppercase()
    ))
}

pub(in crate::command) fn xgroup(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

fn xgroup_help(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "xgroup",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    ))
}

/// Every XGROUP subcommand but HELP, in the one flow of Redis's
/// `xgroupCommand`: the options, then the key and group checks, then the
/// subcommand (whose argument count is checked last).
fn xgroup_any(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let create = is(sub, "create");
    let setid = is(sub, "setid");
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    let mut i = 5;
    while i < args.len() {
        if create && is(args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is(args[i], "entriesread") && i + 1 < args.len() {
            entries_read = int_arg(args[i + 1])?;
            if entries_read < 0 && entries_read != INVALID_ENTRIES_READ {
                return Err(CmdError::err(
                    "value for ENTRIESREAD must be positive or -1",
                ));
            }
            i += 2;
        } else {
            return Err(sub_syntax(args));
        }
    }
    let (key, name) = (args[2], args[3]);
    let exists = ctx.write::<Stream>(key)?.is_some();
    if !mkstream {
        let Some(stream) = ctx.write::<Stream>(key)? else {
            return Err(CmdError::err(
                "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
            ));
        };
        if !stream.groups.contains_key(name) && !create && !is(sub, "destroy") {
            return Err(CmdError::raw(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                lossy(name),
                lossy(key)
            )));
        }
    }
    let now = ctx.now;
    let argc = args.len();
    if create && (5..=8).contains(&argc) {
        let id = if args[4] == b"$" {
            match ctx.write::<Stream>(key)? {
                Some(s) => s.last_id,
                None => StreamId::MIN,
            }
        } else {
            strict_id(args[4])?
        };
        if !exists {
            ctx.set(key, Value::Stream(Box::default()), false);
            ctx.modified(key);
        }
        let Some(stream) = ctx.write::<Stream>(key)? else {
            return Ok(reply::ok());
        };
        if stream.groups.contains_key(name) {
            return Err(CmdError::raw(
                "BUSYGROUP Consumer Group name already exists",
            ));
        }
        stream
            .groups
            .insert(name.to_vec(), Group::new(id, entries_read));
        ctx.notify(class::STREAM, "xgroup-create", key);
        ctx.changes(1);
        return Ok(reply::ok());
    }
    let Some(stream) = ctx.write::<Stream>(key)? else {
        return Err(sub_syntax(args));
    };
    if setid && (argc == 5 || argc == 7) {
        let id = if args[4] == b"$" {
            stream.last_id
        } else {
            parse_id(args[4], 0, false, false)
                .map(|(id, _)| id)
                .ok_or_else(super::invalid_id)?
        };
        if let Some(group) = stream.groups.get_mut(name) {
            group.last_id = id;
            group.entries_read = entries_read;
        }
        ctx.notify(class::STREAM, "xgroup-setid", key);
        ctx.changes(1);
        return Ok(reply::ok());
    }
    if is(sub, "destroy") && argc == 4 {
        let destroyed = stream.groups.remove(name).is_some();
        if destroyed {
            ctx.notify(class::STREAM, "xgroup-destroy", key);
            // Its blocked XREADGROUP clients get NOGROUP (Redis's
            // signalKeyAsReady: no WATCH is touched).
            ctx.ks().signal_ready(key);
            ctx.changes(1);
        }
        return Ok(reply::int(i64::from(destroyed)));
    }
    let Some(group) = stream.groups.get_mut(name) else {
        return Err(sub_syntax(args));
    };
    if is(sub, "createconsumer") && argc == 5 {
        if group.consumers.contains_key(args[4]) {
            return Ok(reply::int(0));
        }
        group.touch_consumer(args[4], now);
        ctx.notify(class::STREAM, "xgroup-createconsumer", key);
        ctx.changes(1);
        return Ok(reply::int(1));
    }
    if is(sub, "delconsumer") && argc == 5 {
        let Some(consumer) = group.consumers.remove(args[4]) else {
            return Ok(reply::int(0));
        };
        for id in &consumer.pel {
            group.pel.remove(id);
        }
        ctx.notify(class::STREAM, "xgroup-delconsumer", key);
        ctx.changes(1);
        return Ok(reply::int(consumer.pel.len()));
    }
    Err(sub_syntax(args))
}

/// Whether the group `name` of the stream at `key` has the consumer
/// `consumer` (false if the stream or the group is missing).
pub(super) fn has_consumer(ctx: &mut Ctx<'_>, key: &[u8], name: &[u8], consumer: &[u8]) -> bool {
    matches!(ctx.write::<Stream>(key), Ok(Some(s))
        if s.groups.get(name).is_some_and(|g| g.consumers.contains_key(consumer)))
}

/// Runs `command`, then raises `xgroup-createconsumer` if it created the
/// consumer (XREADGROUP, XCLAIM and XAUTOCLAIM create the consumer they
/// name, as Redis's `streamCreateConsumer` with its notification).
pub(super) fn creating_consumer(
    ctx: &mut Ctx<'_>,
    (key, name, consumer): (&[u8], &[u8], &[u8]),
    command: impl FnOnce(&mut Ctx<'_>) -> CmdResult,
) -> CmdResult {
    let had = has_consumer(ctx, key, name, consumer);
    let result = command(ctx);
    if !had && has_consumer(ctx, key, name, consumer) {
        ctx.notify(class::STREAM, "xgroup-createconsumer", key);
        // The consumer made is a change of its own.
        let changes = ctx.ks().command_changes();
        ctx.changes(changes + 1);
    }
    result
}

/// The stream at `key` and its group `name`, for the commands that read
/// a group (WRONGTYPE first); `None` if either is missing. Looked up as a
/// read, as Redis's XACK, XPENDING, XCLAIM and XAUTOCLAIM look it up
/// (once: [`group_again`] looks it up after).
fn group_of<'a>(
    ctx: &'a mut Ctx<'_>,
    key: &[u8],
    name: &[u8],
) -> Result<Option<&'a mut Stream>, CmdError> {
    Ok(ctx
        .read_mut::<Stream>(key)?
        .filter(|s| s.groups.contains_key(name)))
}

/// [`group_of`] once more, in a command that looked it up already: not
/// another read.
fn group_again<'a>(
    ctx: &'a mut Ctx<'_>,
    key: &[u8],
    name: &[u8],
) -> Result<Option<&'a mut Stream>, CmdError> {
    Ok(ctx
        .write::<Stream>(key)?
        .filter(|s| s.groups.contains_key(name)))
}

/// XACK key group id [id ...]: 0 for a missing key or group, before the
/// IDs are parsed; then all IDs parsed before any is acknowledged.
pub(in crate::command) fn xack(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, name) = (args[1], args[2]);
    if group_of(ctx, key, name)?.is_none() {
        return Ok(reply::int(0));
    }
    let ids = args[3..]
        .iter()
        .map(|a| strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(group) = group_again(ctx, key, name)?.and_then(|s| s.groups.get_mut(name)) else {
        return Ok(reply::int(0));
    };
    let acked = ids.into_iter().filter(|id| group.ack(*id)).count();
    ctx.changes(acked);
    Ok(reply::int(acked))
}

/// `XPENDING key group [[IDLE min-idle] start end count [consumer]]`.
pub(in crate::command) fn xpending(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::Syntax);
    }
    let mut range = None;
    let mut min_idle = 0;
    let mut consumer_name = None;
    if argc >= 6 {
        let mut at = 3;
        if is(args[3], "idle") {
            min_idle = int_arg(args[4])?;
            if argc < 8 {
                return Err(CmdError::Syntax);
            }
            at += 2;
        }
        let count = int_arg(args[at + 2])?.max(0);
        let start = range_start(args[at])?;
        let end = range_end(args[at + 1])?;
        range = Some((start, end, usize::try_from(count).unwrap_or(usize::MAX)));
        consumer_name = args.get(at + 3).copied();
    }
    let (key, name) = (args[1], args[2]);
    let now = ctx.now;
    let Some(group) = group_of(ctx, key, name)?.and_then(|s| s.groups.get_mut(name)) else {
        return Err(no_key_or_group(key, name));
    };
    let Some((start, end, count)) = range else {
        // The summary: how many, the lowest and highest ID, and how many
        // each consumer holds.
        let (Some(first), Some(last)) = (group.pel.keys().next(), group.pel.keys().next_back())
        else {
            return Ok(reply::array(vec![
                reply::int(0),
                reply::nil(),
                reply::nil(),
                reply::nil(),
            ]));
        };
        let consumers = group
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(n, c)| {
                reply::array(vec![
                    reply::bulk(n.clone()),
                    reply::bulk(c.pel.len().to_string()),
                ])
            })
            .collect();
        return Ok(reply::array(vec![
            reply::int(group.pel.len()),
            id_reply(*first),
            id_reply(*last),
            reply::array(consumers),
        ]));
    };
    let mut items = Vec::new();
    let ids: Vec<StreamId> = match consumer_name {
        Some(c) => match group.consumers.get(c) {
            Some(_) if start > end => return Ok(reply::array(items)),
            Some(consumer) => consumer.pel.range(start..=end).copied().collect(),
            None => return Ok(reply::array(items)),
        },
        None if start > end => return Ok(reply::array(items)),
        None => group.pel.range(start..=end).map(|(id, _)| *id).collect(),
    };
    for id in ids {
        if items.len() >= count {
            break;
        }
        let Some(nack) = group.pel.get(&id) else {
            continue;
        };
        let idle = now - nack.delivery_time;
        if min_idle != 0 && idle < min_idle {
            continue;
        }
        items.push(reply::array(vec![
            id_reply(id),
            reply::bulk(nack.consumer.clone()),
            reply::int(idle.max(0)),
            reply::int(nack.delivery_count),
        ]));
    }
    Ok(reply::array(items))
}

/// An integer option of XCLAIM / XAUTOCLAIM, with its own error text.
fn int_with(arg: &[u8], msg: &'static str) -> Result<i64, CmdError> {
    parse_i64(arg).ok_or_else(|| CmdError::err(msg))
}

/// `XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms]`
/// `[TIME unix-ms] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]`.
pub(in crate::command) fn xclaim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    creating_consumer(ctx, (args[1], args[2], args[3]), |ctx| claim(ctx, args))
}

fn claim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, name, claimant) = (args[1], args[2], args[3]);
    if group_of(ctx, key, name)?.is_none() {
        return Err(no_key_or_group(key, name));
    }
    let min_idle = int_with(args[4], "Invalid min-idle-time argument for XCLAIM")?.max(0);
    // The IDs run up to the first argument that is not one.
    let mut ids = Vec::new();
    let mut j = 5;
    while j < args.len() {
        match parse_id(args[j], 0, true, false) {
            Some((id, _)) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = ctx.now;
    let (mut force, mut justid) = (false, false);
    let mut delivery_time: Option<i64> = None;
    let mut retry_count: i64 = -1;
    let mut last_id = StreamId::MIN;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = args[j];
        if is(opt, "force") {
            force = true;
        } else if is(opt, "justid") {
            justid = true;
        } else if is(opt, "idle") && more > 0 {
            j += 1;
            let idle = int_with(args[j], "Invalid IDLE option argument for XCLAIM")?;
            delivery_time = Some(now.wrapping_sub(idle));
        } else if is(opt, "time") && more > 0 {
            j += 1;
            delivery_time = Some(int_with(
                args[j],
                "Invalid TIME option argument for XCLAIM",
            )?);
        } else if is(opt, "retrycount") && more > 0 {
            j += 1;
            retry_count = int_with(args[j], "Invalid RETRYCOUNT option argument for XCLAIM")?;
        } else if is(opt, "lastid") && more > 0 {
            j += 1;
            last_id = strict_id(args[j])?;
        } else {
            return Err(CmdError::err(format!(
                "Unrecognized XCLAIM option '{}'",
                lossy(opt)
            )));
        }
        j += 1;
    }
    let delivery_time = match delivery_time {
        Some(t) if t >= 0 && t <= now => t,
        _ => now,
    };
    let Some(stream) = group_again(ctx, key, name)? else {
        return Err(no_key_or_group(key, name));
    };
    if let Some(group) = stream.groups.get_mut(name) {
        if last_id > group.last_id {
            group.last_id = last_id;
        }
    }
    let mut items = Vec::new();
    let mut consumer_ready = false;
    // Redis counts a change per entry claimed, and per pending entry
    // dropped for being deleted from the stream.
    let mut dropped = 0;
    for id in ids {
        let exists = stream.contains(&id);
        let Some(group) = stream.groups.get_mut(name) else {
            break;
        };
        if !exists {
            // Pending but deleted from the stream: no longer pending.
            dropped += usize::from(group.ack(id));
            continue;
        }
        let mut fresh = false;
        if force && !group.pel.contains_key(&id) {
            group.pel.insert(
                id,
                Nack {
                    consumer: claimant.to_vec(),
                    delivery_time: now,
                    delivery_count: 1,
                },
            );
            fresh = true;
        }
        let Some(nack) = group.pel.get(&id) else {
            continue;
        };
        if !fresh && min_idle != 0 && now - nack.delivery_time < min_idle {
            continue;
        }
        if !consumer_ready {
            group.touch_consumer(claimant, now);
            consumer_ready = true;
        }
        if fresh {
            // A new NACK has no owner yet: only the consumer's PEL gets it.
            if let Some(c) = group.consumers.get_mut(claimant) {
                c.pel.insert(id);
            }
        } else {
            group.assign(id, claimant);
            group.activate_consumer(claimant, now);
            group.activate_consumer(claimant, now);
        }
        if let Some(nack) = group.pel.get_mut(&id) {
            nack.delivery_time = delivery_time;
            if retry_count >= 0 {
                nack.delivery_count = retry_count as u64;
            } else if !justid {
                nack.delivery_count += 1;
            }
        }
        if justid {
            items.push(id_reply(id));
        } else if let Some(fields) = stream.get(&id) {
            items.push(entry_reply(id, fields));
        }
    }
    ctx.changes(items.len() + dropped);
    ctx.ks().changed_unsignalled(key);
    Ok(reply::array(items))
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]`.
pub(in crate::command) fn xautoclaim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    creating_consumer(ctx, (args[1], args[2], args[3]), |ctx| autoclaim(ctx, args))
}

fn autoclaim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, name, claimant) = (args[1], args[2], args[3]);
    // Redis looks the key up (a read) before it parses the rest.
    ctx.contains(key);
    let min_idle = int_with(args[4], "Invalid min-idle-time argument for XAUTOCLAIM")?.max(0);
    let start = range_start(args[5])?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(args[j], "count") && more > 0 {
            const MAX_COUNT: i64 = i64::MAX / 16;
            count = int_with(args[j + 1], "COUNT must be > 0")?;
            if !(1..=MAX_COUNT).contains(&count) {
                return Err(CmdError::err("COUNT must be > 0"));
            }
            j += 1;
        } else if is(args[j], "justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let now = ctx.now;
    let Some(stream) = group_again(ctx, key, name)? else {
        return Err(no_key_or_group(key, name));
    };
    let mut attempts = count.saturating_mul(10);
    // The IDs the scan may look at, and the one after them (the cursor).
    let window = usize::try_from(attempts)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    let pending: Vec<StreamId> = match stream.groups.get(name) {
        Some(group) => group
            .pel
            .range(start..)
            .take(window)
            .map(|(id, _)| *id)
            .collect(),
        None => Vec::new(),
    };
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut consumer_ready = false;
    let mut next = 0;
    while attempts > 0 && count > 0 && next < pending.len() {
        attempts -= 1;
        let id = pending[next];
        next += 1;
        let exists = stream.contains(&id);
        let Some(group) = stream.groups.get_mut(name) else {
            break;
        };
        if !exists {
            group.ack(id);
            deleted.push(id_reply(id));
            count -= 1;
            continue;
        }
        let Some(nack) = group.pel.get(&id) else {
            continue;
        };
        if min_idle != 0 && now - nack.delivery_time < min_idle {
            continue;
        }
        if !consumer_ready {
            group.touch_consumer(claimant, now);
            consumer_ready = true;
        }
        group.assign(id, claimant);
        group.activate_consumer(claimant, now);
        if let Some(nack) = group.pel.get_mut(&id) {
            nack.delivery_time = now;
            if !justid {
                nack.delivery_count += 1;
            }
        }
        if justid {
            claimed.push(id_reply(id));
        } else if let Some(fields) = stream.get(&id) {
            claimed.push(entry_reply(id, fields));
        }
        count -= 1;
    }
    // Where the next call should start: the first pending ID not looked at.
    let cursor = pending.get(next).copied().unwrap_or(StreamId::MIN);
    // A change per entry claimed or dropped, as Redis counts them.
    ctx.changes(claimed.len() + deleted.len());
    ctx.ks().changed_unsignalled(key);
    Ok(reply::array(vec![
        id_reply(cursor),
        reply::array(claimed),
        reply::array(deleted),
    ]))
}
