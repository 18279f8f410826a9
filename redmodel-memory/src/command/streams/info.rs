//! XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS and HELP,
//! with Redis 7.0.15's fields in its order (RESP2 maps are flat arrays).

use redis::Value as Reply;

use super::groups::sub_syntax;
use super::{entry_reply, id_reply};
use crate::args::{int_arg, is};
use crate::command::{help_reply, run_subcommand, CmdResult, Ctx, Sub};
use crate::error::CmdError;
use crate::reply;
use crate::value::stream::{Group, Stream, StreamId, INVALID_ENTRIES_READ};
use crate::RedisVersion;

/// XINFO's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "stream",
        arity: -3,
        handler: stream_info,
    },
    Sub {
        name: "groups",
        arity: 3,
        handler: groups_info,
    },
    Sub {
        name: "consumers",
        arity: 4,
        handler: consumers_info,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: help,
    },
];

pub(in crate::command) fn xinfo(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

fn help(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "xinfo",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    ))
}

/// A map reply of named fields (in RESP2, names and values flattened).
fn map(pairs: Vec<(&str, Reply)>) -> Reply {
    reply::map(
        pairs
            .into_iter()
            .map(|(k, v)| (reply::bulk(k), v))
            .collect(),
    )
}

/// The stream at `args[2]`, or "no such key" (looked up before anything
/// else is checked).
fn stream_of<'a>(ctx: &'a mut Ctx<'_>, args: &[&[u8]]) -> Result<&'a Stream, CmdError> {
    ctx.read::<Stream>(args[2])?.ok_or(CmdError::NoSuchKey)
}

fn entries_read(group: &Group) -> Reply {
    match group.entries_read {
        INVALID_ENTRIES_READ => reply::nil(),
        n => reply::int(n),
    }
}

fn lag(stream: &Stream, group: &Group) -> Reply {
    stream.lag(group).map_or_else(reply::nil, reply::int)
}

fn stream_info(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let since_7_2 = ctx.store.version >= RedisVersion::V7_4;
    let stream = stream_of(ctx, args)?;
    let opts = &args[3..];
    let full = !opts.is_empty();
    let mut count: usize = 10;
    if full {
        if (opts.len() != 1 && opts.len() != 3) || !is(opts[0], "full") {
            return Err(sub_syntax(args));
        }
        if opts.len() == 3 {
            if !is(opts[1], "count") {
                return Err(sub_syntax(args));
            }
            count = match int_arg(opts[2])? {
                n if n < 0 => 10,
                n => usize::try_from(n).unwrap_or(usize::MAX),
            };
        }
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let mut pairs = vec![
        ("length", reply::int(stream.len())),
        ("radix-tree-keys", reply::int(stream.node_count())),
        ("radix-tree-nodes", reply::int(stream.rax_node_count())),
        ("last-generated-id", id_reply(stream.last_id)),
        ("max-deleted-entry-id", id_reply(stream.max_deleted_id)),
        ("entries-added", reply::int(stream.entries_added)),
        ("recorded-first-entry-id", id_reply(stream.first_id)),
    ];
    let everything = || stream.range(StreamId::MIN, StreamId::MAX, false);
    if !full {
        let first = everything()
            .next()
            .map_or_else(reply::nil, |(id, f)| entry_reply(*id, f));
        let last = stream
            .range(StreamId::MIN, StreamId::MAX, true)
            .next()
            .map_or_else(reply::nil, |(id, f)| entry_reply(*id, f));
        pairs.push(("groups", reply::int(stream.groups.len())));
        pairs.push(("first-entry", first));
        pairs.push(("last-entry", last));
        return Ok(map(pairs));
    }
    let entries = everything()
        .take(limit)
        .map(|(id, f)| entry_reply(*id, f))
        .collect();
    pairs.push(("entries", reply::array(entries)));
    let groups = stream
        .groups
        .iter()
        .map(|(name, group)| {
            let pending = group
                .pel
                .iter()
                .take(limit)
                .map(|(id, nack)| {
                    reply::array(vec![
                        id_reply(*id),
                        reply::bulk(nack.consumer.clone()),
                        reply::int(nack.delivery_time),
                        reply::int(nack.delivery_count),
                    ])
                })
                .collect();
            let consumers = group
                .consumers
                .iter()
                .map(|(cname, consumer)| {
                    let pending = consumer
                        .pel
                        .iter()
                        .take(limit)
                        .filter_map(|id| {
                            let nack = group.pel.get(id)?;
                            Some(reply::array(vec![
                                id_reply(*id),
                                reply::int(nack.delivery_time),
                                reply::int(nack.delivery_count),
                            ]))
                        })
                        .collect();
                    let mut fields = vec![
                        ("name", reply::bulk(cname.clone())),
                        ("seen-time", reply::int(consumer.seen_time)),
                    ];
                    if since_7_2 {
                        fields.push(("active-time", reply::int(consumer.active_time)));
                    }
                    fields.push(("pel-count", reply::int(consumer.pel.len())));
                    fields.push(("pending", reply::array(pending)));
                    map(fields)
                })
                .collect();
            map(vec![
                ("name", reply::bulk(name.clone())),
                ("last-delivered-id", id_reply(group.last_id)),
                ("entries-read", entries_read(group)),
                ("lag", lag(stream, group)),
                ("pel-count", reply::int(group.pel.len())),
                ("pending", reply::array(pending)),
                ("consumers", reply::array(consumers)),
            ])
        })
        .collect();
    pairs.push(("groups", reply::array(groups)));
    Ok(map(pairs))
}

fn groups_info(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let stream = stream_of(ctx, args)?;
    let groups = stream
        .groups
        .iter()
        .map(|(name, group)| {
            map(vec![
                ("name", reply::bulk(name.clone())),
                ("consumers", reply::int(group.consumers.len())),
                ("pending", reply::int(group.pel.len())),
                ("last-delivered-id", id_reply(group.last_id)),
                ("entries-read", entries_read(group)),
                ("lag", lag(stream, group)),
            ])
        })
        .collect();
    Ok(reply::array(groups))
}

fn consumers_info(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    let since_7_2 = ctx.store.version >= RedisVersion::V7_4;
    let stream = stream_of(ctx, args)?;
    let Some(group) = stream.groups.get(args[3]) else {
        return Err(CmdError::raw(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(args[3]),
            String::from_utf8_lossy(args[2])
        )));
    };
    let consumers = group
        .consumers
        .iter()
        .map(|(name, c)| {
            let mut fields = vec![
                ("name", reply::bulk(name.clone())),
                ("pending", reply::int(c.pel.len())),
                ("idle", reply::int((now - c.seen_time).max(0))),
            ];
            if since_7_2 {
                let inactive = if c.active_time == -1 {
                    -1
                } else {
                    (now - c.active_time).max(0)
                };
                fields.push(("inactive", reply::int(inactive)));
            }
            map(fields)
        })
        .collect();
    Ok(reply::array(consumers))
}
