//! XREAD and XREADGROUP (Redis's `xreadCommand`, which serves both): the
//! options, the IDs (`$`, `>`), and serving every stream that has
//! something to give. BLOCK is parsed and checked; when nothing can be
//! served and BLOCK was given, [`block_for_streams`] is where the engine's
//! blocking mechanism takes over.

use redis::Value as Reply;

use super::groups::has_consumer;
use super::{entry_reply, id_reply, strict_id};
use crate::args::{int_arg, is};
use crate::command::{CmdResult, Ctx};
use crate::error::CmdError;
use crate::notify::class;
use crate::reply;
use crate::value::stream::{Nack, Stream, StreamId};
use crate::RedisVersion;

/// The options of one XREAD / XREADGROUP call.
struct ReadArgs<'a> {
    /// BLOCK's timeout in ms (0: forever), if given.
    /// BLOCK's timeout, if BLOCK was given (`Some(None)`: forever).
    block: Option<Option<std::time::Duration>>,
    /// COUNT, 0 for no limit.
    count: usize,
    /// GROUP's group and consumer names (XREADGROUP).
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    /// Redis 7.2 and later: a read with nothing for the consumer still
    /// creates it and marks it seen.
    meets_idle_consumer: bool,
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
/// `since_7_2`: the errors as Redis 7.2 and later word them;
/// `deadline_base`: BLOCK's (see `blocking::deadline_base`).
fn parse<'a>(
    args: &'a [&'a [u8]],
    group_mode: bool,
    since_7_2: bool,
    deadline_base: Option<i64>,
) -> Result<ReadArgs<'a>, CmdError> {
    let mut out = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        meets_idle_consumer: false,
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
            out.block = Some(crate::command::blocking::parse_timeout_ms(
                args[i],
                deadline_base,
            )?);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            out.count = usize::try_from(int_arg(args[i])?).unwrap_or(0);
        } else if is(opt, "streams") && more > 0 {
            let rest = args.len() - (i + 1);
            if !rest.is_multiple_of(2) {
                if !since_7_2 {
                    return Err(CmdError::err(
                        "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                    ));
                }
                let (name, symbol) = if group_mode {
                    ("xreadgroup", '>')
                } else {
                    ("xread", '$')
                };
                return Err(CmdError::err(format!(
                    "Unbalanced '{name}' list of streams: for each stream key an ID or '{symbol}' must be specified."
                )));
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

/// The error XREAD and XREADGROUP give a script that passes BLOCK, if
/// `args` is one of them with BLOCK met before any other error: Redis
/// refuses BLOCK from scripts while parsing the options (for the
/// `CLIENT_SCRIPT` flag, which the engine's commands do not see, so the
/// script runner asks before running the command).
pub(crate) fn block_from_script(args: &[&[u8]]) -> Option<CmdError> {
    let name = args.first()?;
    let group_mode = is(name, "xreadgroup");
    if !group_mode && !is(name, "xread") {
        return None;
    }
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let opt = args[i];
        if is(opt, "block") && more > 0 {
            return Some(CmdError::err(format!(
                "{} command is not allowed with BLOCK option from scripts",
                String::from_utf8_lossy(name)
            )));
        } else if is(opt, "count") && more > 0 {
            int_arg(args[i + 1]).ok()?;
            i += 2;
        } else if is(opt, "group") && more >= 2 && group_mode {
            i += 3;
        } else if is(opt, "noack") && group_mode {
            i += 1;
        } else {
            // STREAMS ends the options; anything else is the command's
            // own error.
            return None;
        }
    }
    None
}

fn read_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], group_mode: bool) -> CmdResult {
    let since_7_2 = ctx.store.version >= RedisVersion::V7_4;
    let base = crate::command::blocking::deadline_base(ctx);
    let mut opts = parse(args, group_mode, since_7_2, base)?;
    opts.meets_idle_consumer = since_7_2;
    // Resolve every key, group and ID before serving anything.
    let mut afters = Vec::with_capacity(opts.keys.len());
    let plus_is_last = ctx.store.version >= RedisVersion::V7_4;
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
        } else if *id_arg == b"+" && plus_is_last {
            // Redis 7.4: the last entry, as the entries after the ID just
            // before the stream's last one.
            if group_mode {
                return Err(CmdError::err(
                    "The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.",
                ));
            }
            match stream {
                Some(s) => After::Id(
                    s.last_id
                        .prev()
                        .ok_or_else(|| CmdError::err("the stream last element ID is 0-0"))?,
                ),
                None => After::Id(StreamId::MIN),
            }
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
    // XREADGROUP's changes as Redis counts them: one per consumer made,
    // and one per stream served (7.0), or per stream that gave new
    // entries (7.4: a read of the consumer's history changes nothing).
    let mut changes = 0;
    for (key, after) in opts.keys.iter().zip(&afters) {
        let had = opts
            .group
            .is_none_or(|(group, consumer)| has_consumer(ctx, key, group, consumer));
        let served_here = serve(ctx, key, *after, &opts)?;
        if opts.group.is_some() {
            ctx.ks().changed_unsignalled(key);
        }
        if let (false, Some((group, consumer))) = (had, opts.group) {
            if has_consumer(ctx, key, group, consumer) {
                ctx.notify(class::STREAM, "xgroup-createconsumer", key);
                changes += 1;
            }
        }
        if let Some(items) = served_here {
            let new_entries = *after == After::GroupLast
                && !matches!(&items, Reply::Array(entries) if entries.is_empty());
            if opts.group.is_some() && (!since_7_2 || new_entries) {
                changes += 1;
            }
            served.push((reply::bulk(key.to_vec()), items));
        }
    }
    if opts.group.is_some() {
        ctx.changes(changes);
    }
    if !served.is_empty() {
        return Ok(streams_reply(ctx.resp3(), served));
    }
    match opts.block {
        Some(timeout) => block_for_streams(ctx, &opts, &afters, timeout),
        None => Ok(reply::nil()),
    }
}

/// XREAD's reply: per stream served, its name and its entries; a map in
/// RESP3, an array of [name, entries] pairs in RESP2 (as Redis).
fn streams_reply(resp3: bool, served: Vec<(Reply, Reply)>) -> Reply {
    if resp3 {
        reply::map(served)
    } else {
        reply::array(
            served
                .into_iter()
                .map(|(name, items)| reply::array(vec![name, items]))
                .collect(),
        )
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
    // Redis looks each key up again, as a read, to serve it.
    let Some(stream) = ctx.read_mut::<Stream>(key)? else {
        return Ok(None);
    };
    serve_from(stream, after, opts, now, false)
}

/// [`serve`] on the stream at hand; `woken` skips the test of whether
/// there is anything to serve (a woken client was tested on the
/// stream's last ID instead, as Redis does).
fn serve_from(
    stream: &mut Stream,
    after: After,
    opts: &ReadArgs<'_>,
    now: i64,
    woken: bool,
) -> Result<Option<Reply>, CmdError> {
    let limit = if opts.count == 0 {
        usize::MAX
    } else {
        opts.count
    };
    let Some((group_name, consumer)) = opts.group else {
        let After::Id(gt) = after else {
            return Ok(None);
        };
        if !woken && stream.last_valid_id().is_none_or(|max| max <= gt) {
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
            if !woken && stream.last_valid_id().is_none_or(|max| max <= last) {
                // Redis 7.2 and later meet the consumer even when there
                // is nothing for it.
                if opts.meets_idle_consumer {
                    if let Some(group) = stream.groups.get_mut(group_name) {
                        group.touch_consumer(consumer, now);
                    }
                }
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
            if !ids.is_empty() {
                if let Some(group) = stream.groups.get_mut(group_name) {
                    group.activate_consumer(consumer, now);
                }
            }
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

/// XREAD / XREADGROUP with BLOCK `timeout` (`None`: forever) found nothing
/// to serve in any of `opts.keys`: the client waits, as the
/// [`StreamWait`] this builds describes, until one of the streams can
/// serve it (see [`StreamWait::on_ready`]) or the timeout passes (then
/// the reply is the null array). Where blocking is denied (inside MULTI
/// or a script) the reply is that null array at once, as in Redis.
fn block_for_streams(
    ctx: &mut Ctx<'_>,
    opts: &ReadArgs<'_>,
    afters: &[After],
    timeout: Option<std::time::Duration>,
) -> CmdResult {
    let mut wait = StreamWait::new(opts, afters);
    crate::command::blocking::block(
        ctx,
        opts.keys,
        timeout,
        Box::new(move |ctx, key| wait.on_ready(ctx, key)),
    )
}

/// Redis's default COUNT for a client served after blocking.
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// What a client blocked in XREAD / XREADGROUP waits for (Redis's `bpop`
/// state of a `BLOCKED_STREAM` client).
#[derive(Debug, Clone)]
pub(crate) struct StreamWait {
    /// The keys, in the command's order, each with the ID past which an
    /// entry serves the client (`$` already resolved; for XREADGROUP the
    /// group's last ID, read again on every wake-up).
    pub(crate) keys: Vec<(Vec<u8>, StreamId)>,
    /// XREADGROUP's group and consumer.
    group: Option<(Vec<u8>, Vec<u8>)>,
    noack: bool,
    /// COUNT, or 1000 if none was given.
    count: usize,
}

impl StreamWait {
    fn new(opts: &ReadArgs<'_>, afters: &[After]) -> Self {
        StreamWait {
            keys: opts
                .keys
                .iter()
                .zip(afters)
                .map(|(k, a)| {
                    let id = match a {
                        After::Id(id) => *id,
                        After::GroupLast => StreamId::MAX,
                    };
                    (k.to_vec(), id)
                })
                .collect(),
            group: opts.group.map(|(g, c)| (g.to_vec(), c.to_vec())),
            noack: opts.noack,
            count: if opts.count == 0 {
                BLOCKED_DEFAULT_COUNT
            } else {
                opts.count
            },
        }
    }

    /// `key` (one of [`Self::keys`]) was signalled ready (an XADD, an
    /// XGROUP DESTROY, a deletion or an overwrite of the key): the reply
    /// that unblocks the client, or `None` to keep waiting. As Redis's
    /// `serveClientsBlockedOnStreamKey` and
    /// `unblockDeletedStreamReadgroupClients`: an XREADGROUP client gets
    /// an error when its key is gone or no longer a stream, or its group
    /// was destroyed; an XREAD client waits on; a client served gets that
    /// one stream's entries past its ID.
    pub(crate) fn on_ready(&mut self, ctx: &mut Ctx<'_>, key: &[u8]) -> Option<CmdResult> {
        let now = ctx.now;
        let position = self.keys.iter().position(|(k, _)| k == key)?;
        // Redis 7.2 and later run the blocked XREADGROUP again: its
        // errors are the command's own.
        let since_7_2 = ctx.store.version >= RedisVersion::V7_4;
        let no_group = |group: &[u8]| {
            CmdError::raw(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(group)
            ))
        };
        let is_stream = match ctx.value_for_write(key) {
            Some(crate::value::Value::Stream(_)) => true,
            Some(_) if since_7_2 => {
                return self.group.as_ref().map(|_| Err(CmdError::WrongType));
            }
            None if since_7_2 => {
                return self.group.as_ref().map(|(g, _)| Err(no_group(g)));
            }
            _ => false,
        };
        if !is_stream {
            return self
                .group
                .as_ref()
                .map(|_| Err(CmdError::raw("UNBLOCKED the stream key no longer exists")));
        }
        let had = self
            .group
            .as_ref()
            .is_none_or(|(group, consumer)| has_consumer(ctx, key, group, consumer));
        let Ok(Some(stream)) = ctx.write::<Stream>(key) else {
            return None;
        };
        let gt =
            match &self.group {
                Some((group, _)) => match stream.groups.get(group) {
                    Some(g) => g.last_id,
                    None if since_7_2 => return Some(Err(no_group(group))),
                    None => return Some(Err(CmdError::raw(
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                    ))),
                },
                None => self.keys[position].1,
            };
        if stream.last_id <= gt {
            return None;
        }
        let opts = ReadArgs {
            block: None,
            count: self.count,
            group: self
                .group
                .as_ref()
                .map(|(g, c)| (g.as_slice(), c.as_slice())),
            noack: self.noack,
            meets_idle_consumer: false,
            keys: &[],
            id_args: &[],
        };
        let after = match self.group {
            Some(_) => After::GroupLast,
            None => After::Id(gt),
        };
        // Served even when the entries past the ID were deleted since.
        let items = match serve_from(stream, after, &opts, now, true) {
            Ok(items) => items.unwrap_or_else(|| reply::array(Vec::new())),
            Err(e) => return Some(Err(e)),
        };
        if let Some((group, consumer)) = &self.group {
            let made = !had && has_consumer(ctx, key, group, consumer);
            if made {
                ctx.notify(class::STREAM, "xgroup-createconsumer", key);
            }
            // As each version counts it: 7.0 the consumer made (the
            // delivery counts as the command that woke the client's); 7.4
            // runs the command again, which counts the stream served too.
            let served = !matches!(&items, Reply::Array(entries) if entries.is_empty());
            ctx.changes(usize::from(made) + usize::from(since_7_2 && served));
            ctx.ks().changed_unsignalled(key);
        }
        Some(Ok(streams_reply(
            ctx.resp3(),
            vec![(reply::bulk(key.to_vec()), items)],
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::run;
    use crate::command::Store;

    fn exec(ctx: &mut Ctx<'_>, line: &str) -> CmdResult {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        run(ctx, &args)
    }

    /// The wait a blocking read would leave, for the lead's wiring.
    fn wait_of(line: &str) -> StreamWait {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let group_mode = line.starts_with("XREADGROUP");
        let opts = parse(&args, group_mode, false, None).expect("valid");
        let afters: Vec<After> = opts
            .id_args
            .iter()
            .map(|a| match *a {
                b">" => After::GroupLast,
                b"$" => After::Id(StreamId::new(2, 0)),
                id => After::Id(strict_id(id).expect("valid id")),
            })
            .collect();
        StreamWait::new(&opts, &afters)
    }

    /// A RESP2 client of `store`'s database 0 at time 1000, not blocking.
    fn ctx_at_1000(store: &mut Store) -> Ctx<'_> {
        Ctx {
            store,
            db: 0,
            now: 1_000,
            block: crate::command::blocking::BlockSlot::Denied,
            resp: 2,
        }
    }

    #[test]
    fn a_woken_xread_gets_what_is_past_its_id() {
        let mut store = Store::default();
        let mut ctx = ctx_at_1000(&mut store);
        exec(&mut ctx, "XADD s 2-0 f v").expect("added");
        let mut wait = wait_of("XREAD BLOCK 0 STREAMS s $");
        assert!(wait.on_ready(&mut ctx, b"s").is_none());
        exec(&mut ctx, "XADD s 3-0 g w").expect("added");
        let served = wait.on_ready(&mut ctx, b"s").expect("served").expect("ok");
        assert_eq!(
            served,
            reply::array(vec![reply::array(vec![
                reply::bulk("s"),
                reply::array(vec![reply::array(vec![
                    reply::bulk("3-0"),
                    reply::bulks(["g", "w"]),
                ])]),
            ])])
        );
        // Deleted: an XREAD client waits on.
        exec(&mut ctx, "DEL s").expect("deleted");
        assert!(wait.on_ready(&mut ctx, b"s").is_none());
    }

    #[test]
    fn a_woken_xreadgroup_reads_past_the_group_or_fails() {
        let mut store = Store::default();
        let mut ctx = ctx_at_1000(&mut store);
        exec(&mut ctx, "XGROUP CREATE s g $ MKSTREAM").expect("created");
        let mut wait = wait_of("XREADGROUP GROUP g c BLOCK 10 COUNT 1 STREAMS s >");
        assert!(wait.on_ready(&mut ctx, b"s").is_none());
        exec(&mut ctx, "XADD s 1-0 f v").expect("added");
        exec(&mut ctx, "XADD s 2-0 f v").expect("added");
        let served = wait.on_ready(&mut ctx, b"s").expect("served").expect("ok");
        assert_eq!(
            served,
            reply::array(vec![reply::array(vec![
                reply::bulk("s"),
                reply::array(vec![reply::array(vec![
                    reply::bulk("1-0"),
                    reply::bulks(["f", "v"]),
                ])]),
            ])])
        );
        assert_eq!(
            exec(&mut ctx, "XPENDING s g").expect("pending"),
            reply::array(vec![
                reply::int(1),
                reply::bulk("1-0"),
                reply::bulk("1-0"),
                reply::array(vec![reply::array(vec![reply::bulk("c"), reply::bulk("1")])]),
            ])
        );
        exec(&mut ctx, "XGROUP DESTROY s g").expect("destroyed");
        assert_eq!(
            wait.on_ready(&mut ctx, b"s"),
            Some(Err(CmdError::raw(
                "NOGROUP the consumer group this client was blocked on no longer exists"
            )))
        );
        exec(&mut ctx, "SET s x").expect("set");
        assert_eq!(
            wait.on_ready(&mut ctx, b"s"),
            Some(Err(CmdError::raw(
                "UNBLOCKED the stream key no longer exists"
            )))
        );
    }
}
