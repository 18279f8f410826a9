//! XREAD and XREADGROUP (Redis's `xreadCommand`, which serves both): the
//! options, the IDs (`$`, `>`), and serving every stream that has
//! something to give. BLOCK is parsed and checked; when nothing can be
//! served and BLOCK was given, [`block_for_streams`] is where the engine's
//! blocking mechanism takes over.

use redis::Value as Reply;

use super::{entry_reply, id_reply, strict_id};
use crate::args::{int_arg, is, parse_i64};
use crate::command::{CmdResult, Ctx};
use crate::error::CmdError;
use crate::reply;
use crate::value::stream::{Nack, Stream, StreamId};

/// The options of one XREAD / XREADGROUP call.
struct ReadArgs<'a> {
    /// BLOCK's timeout in ms (0: forever), if given.
    block: Option<i64>,
    /// COUNT, 0 for no limit.
    count: usize,
    /// GROUP's group and consumer names (XREADGROUP).
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    keys: &'a [&'a [u8]],
    id_args: &'a [&'a [u8]],
}

/// Where each stream's read starts: after an ID, or (XREADGROUP's `>`)
/// after the group's last delivered ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    Id(StreamId),
    GroupLast,
}

pub(in crate::command) fn xread(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    read_generic(ctx, args, false)
}

pub(in crate::command) fn xreadgroup(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    read_generic(ctx, args, true)
}

/// Parses the options in Redis's order (the first bad one wins).
fn parse<'a>(args: &'a [&'a [u8]], group_mode: bool) -> Result<ReadArgs<'a>, CmdError> {
    let mut out = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        keys: &[],
        id_args: &[],
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let opt = args[i];
        if is(opt, "block") && more > 0 {
            i += 1;
            let timeout = parse_i64(args[i])
                .ok_or_else(|| CmdError::err("timeout is not an integer or out of range"))?;
            if timeout < 0 {
                return Err(CmdError::err("timeout is negative"));
            }
            out.block = Some(timeout);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            out.count = usize::try_from(int_arg(args[i])?).unwrap_or(0);
        } else if is(opt, "streams") && more > 0 {
            let rest = args.len() - (i + 1);
            if !rest.is_multiple_of(2) {
                return Err(CmdError::err(
                    "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            streams_at = Some((i + 1, rest / 2));
            break;
        } else if is(opt, "group") && more >= 2 {
            if !group_mode {
                return Err(CmdError::err(
                    "The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            out.group = Some((args[i + 1], args[i + 2]));
            i += 2;
        } else if is(opt, "noack") {
            if !group_mode {
                return Err(CmdError::err(
                    "The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            out.noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    let Some((at, n)) = streams_at else {
        return Err(CmdError::Syntax);
    };
    if group_mode && out.group.is_none() {
        return Err(CmdError::err("Missing GROUP option for XREADGROUP"));
    }
    out.keys = &args[at..at + n];
    out.id_args = &args[at + n..];
    Ok(out)
}

fn read_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], group_mode: bool) -> CmdResult {
    let opts = parse(args, group_mode)?;
    // Resolve every key, group and ID before serving anything.
    let mut afters = Vec::with_capacity(opts.keys.len());
    for (key, id_arg) in opts.keys.iter().zip(opts.id_args) {
        let stream = ctx.read::<Stream>(key)?;
        if let Some((group, _)) = opts.group {
            if !stream.is_some_and(|s| s.groups.contains_key(group)) {
                return Err(CmdError::raw(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(group)
                )));
            }
        }
        let after = if *id_arg == b"$" {
            if group_mode {
                return Err(CmdError::err(
                    "The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ));
            }
            After::Id(stream.map_or(StreamId::MIN, |s| s.last_id))
        } else if *id_arg == b">" {
            if !group_mode {
                return Err(CmdError::err(
                    "The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ));
            }
            After::GroupLast
        } else {
            After::Id(strict_id(id_arg)?)
        };
        afters.push(after);
    }
    let mut served = Vec::new();
    for (key, after) in opts.keys.iter().zip(&afters) {
        if let Some(items) = serve(ctx, key, *after, &opts)? {
            served.push(reply::array(vec![reply::bulk(key.to_vec()), items]));
        }
    }
    if !served.is_empty() {
        return Ok(reply::array(served));
    }
    match opts.block {
        Some(timeout) => block_for_streams(ctx, &opts, &afters, timeout),
        None => Ok(reply::nil()),
    }
}

/// The entries one stream gives this read, or `None` if it has nothing
/// to give now (Redis's "serve synchronously" test).
fn serve(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    after: After,
    opts: &ReadArgs<'_>,
) -> Result<Option<Reply>, CmdError> {
    let now = ctx.now;
    let Some(stream) = ctx.write::<Stream>(key)? else {
        return Ok(None);
    };
    let limit = if opts.count == 0 {
        usize::MAX
    } else {
        opts.count
    };
    let Some((group_name, consumer)) = opts.group else {
        let After::Id(gt) = after else {
            return Ok(None);
        };
        if stream.last_valid_id().is_none_or(|max| max <= gt) {
            return Ok(None);
        }
        let start = gt.next().unwrap_or(StreamId::MIN);
        let items = stream
            .range(start, StreamId::MAX, false)
            .take(limit)
            .map(|(id, fields)| entry_reply(*id, fields))
            .collect();
        return Ok(Some(reply::array(items)));
    };
    let Some(group) = stream.groups.get_mut(group_name) else {
        return Ok(None);
    };
    match after {
        After::Id(gt) => {
            // The consumer's own history: its pending entries after `gt`.
            group.touch_consumer(consumer, now);
            let start = gt.next().unwrap_or(StreamId::MIN);
            let ids: Vec<StreamId> = group
                .consumers
                .get(consumer)
                .map(|c| c.pel.range(start..).take(limit).copied().collect())
                .unwrap_or_default();
            let mut items = Vec::with_capacity(ids.len());
            for id in ids {
                match stream.get(&id) {
                    Some(fields) => {
                        items.push(entry_reply(id, fields));
                        if let Some(group) = stream.groups.get_mut(group_name) {
                            if let Some(nack) = group.pel.get_mut(&id) {
                                nack.delivery_time = now;
                                nack.delivery_count += 1;
                            }
                        }
                    }
                    // Deleted from the stream but still pending.
                    None => items.push(reply::array(vec![id_reply(id), reply::nil()])),
                }
            }
            Ok(Some(reply::array(items)))
        }
        After::GroupLast => {
            let last = group.last_id;
            if stream.last_valid_id().is_none_or(|max| max <= last) {
                return Ok(None);
            }
            if let Some(group) = stream.groups.get_mut(group_name) {
                group.touch_consumer(consumer, now);
            }
            let start = last.next().unwrap_or(StreamId::MIN);
            let ids: Vec<StreamId> = stream
                .range(start, StreamId::MAX, false)
                .take(limit)
                .map(|(id, _)| *id)
                .collect();
            let mut items = Vec::with_capacity(ids.len());
            for id in ids {
                stream.advance_group(group_name, id);
                if let Some(fields) = stream.get(&id) {
                    items.push(entry_reply(id, fields));
                }
                if opts.noack {
                    continue;
                }
                let Some(group) = stream.groups.get_mut(group_name) else {
                    continue;
                };
                match group.pel.get_mut(&id) {
                    Some(nack) => {
                        // Pending already (the group's ID was set back):
                        // delivered again, to this consumer, as a first time.
                        nack.delivery_time = now;
                        nack.delivery_count = 1;
                        group.assign(id, consumer);
                    }
                    None => {
                        group.pel.insert(
                            id,
                            Nack {
                                consumer: consumer.to_vec(),
                                delivery_time: now,
                                delivery_count: 1,
                            },
                        );
                        if let Some(c) = group.consumers.get_mut(consumer) {
                            c.pel.insert(id);
                        }
                    }
                }
            }
            Ok(Some(reply::array(items)))
        }
    }
}

/// XREAD / XREADGROUP with BLOCK `timeout_ms` (0: forever) found nothing
/// to serve in any of `opts.keys` after `afters`: the client should now
/// wait until one of the streams gets an entry past its ID (or its group
/// is destroyed), at most `timeout_ms`, then be served as [`serve`]
/// serves it (with COUNT defaulting to 1000 as in Redis), or get the
/// null array on timeout.
///
/// NOT WIRED YET: the engine's blocking mechanism is being built
/// separately. Until it is merged this replies as Redis does where a
/// client may not block (inside MULTI or a script): the null array, as
/// on a timeout.
fn block_for_streams(
    _ctx: &mut Ctx<'_>,
    _opts: &ReadArgs<'_>,
    _afters: &[After],
    _timeout_ms: i64,
) -> CmdResult {
    Ok(reply::nil())
}
