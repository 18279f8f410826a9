//! Pub/Sub commands: PUBLISH, SPUBLISH and PUBSUB, on the store's
//! [`Registry`](crate::pubsub::Registry).
//!
//! SUBSCRIBE and its kin change the state of a connection (its
//! subscriptions, its subscribed mode) and answer with one confirmation per
//! channel: the RESP server runs them (`resp/subscriber.rs`), and an
//! in-process client subscribes through [`Engine::pubsub`](crate::Engine::pubsub).
//! Their table entries exist so that MULTI queues them as Redis does and so
//! that an in-process `Connection` is told where to subscribe.

use super::{help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::error::CmdError;
use crate::pubsub::Scope;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "publish",
        arity: 3,
        handler: publish,
    },
    Spec {
        name: "spublish",
        arity: 3,
        handler: spublish,
    },
    Spec {
        name: "pubsub",
        arity: -2,
        handler: pubsub,
    },
    Spec {
        name: "subscribe",
        arity: -2,
        handler: needs_subscriber,
    },
    Spec {
        name: "psubscribe",
        arity: -2,
        handler: needs_subscriber,
    },
    Spec {
        name: "ssubscribe",
        arity: -2,
        handler: needs_subscriber,
    },
    Spec {
        name: "unsubscribe",
        arity: -1,
        handler: needs_subscriber,
    },
    Spec {
        name: "punsubscribe",
        arity: -1,
        handler: needs_subscriber,
    },
    Spec {
        name: "sunsubscribe",
        arity: -1,
        handler: needs_subscriber,
    },
];

/// PUBLISH channel message: the number of deliveries (channel subscribers
/// plus matching pattern subscriptions).
fn publish(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.store.pubsub.publish(args[1], args[2])))
}

/// SPUBLISH shardchannel message: the shard channel's subscribers only.
fn spublish(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.store.pubsub.spublish(args[1], args[2])))
}

pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "channels",
        arity: -2,
        handler: channels,
    },
    Sub {
        name: "numsub",
        arity: -2,
        handler: numsub,
    },
    Sub {
        name: "numpat",
        arity: 2,
        handler: numpat,
    },
    Sub {
        name: "shardchannels",
        arity: -2,
        handler: channels,
    },
    Sub {
        name: "shardnumsub",
        arity: -2,
        handler: numsub,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: help,
    },
];

fn pubsub(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

/// The scope of a PUBSUB subcommand: shard channels for SHARD*.
fn scope_of(sub: &[u8]) -> Scope {
    if sub.len() > 5 && sub[..5].eq_ignore_ascii_case(b"shard") {
        Scope::Shard
    } else {
        Scope::Channel
    }
}

/// `PUBSUB CHANNELS | SHARDCHANNELS [pattern]`. Redis declares them `-2`
/// and refuses more than one pattern with its generic subcommand error.
fn channels(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
        )));
    }
    let names = ctx
        .store
        .pubsub
        .channel_names(scope_of(args[1]), args.get(2).copied());
    Ok(reply::bulks(names.iter().map(|n| n.to_vec())))
}

/// PUBSUB NUMSUB | SHARDNUMSUB [channel ...]: channel, count pairs.
fn numsub(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let scope = scope_of(args[1]);
    let mut items = Vec::with_capacity((args.len() - 2) * 2);
    for channel in &args[2..] {
        items.push(reply::bulk(*channel));
        items.push(reply::int(ctx.store.pubsub.numsub(scope, channel)));
    }
    Ok(reply::array(items))
}

fn numpat(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.store.pubsub.numpat()))
}

fn help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "pubsub",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    ))
}

/// SUBSCRIBE and its kin outside a RESP server connection (see the module
/// doc).
fn needs_subscriber(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[0]).to_ascii_uppercase();
    Err(CmdError::err(format!(
        "{name} is only served on a RESP server connection of the memory engine; in process, \
         subscribe with Engine::pubsub()"
    )))
}

#[cfg(test)]
mod tests;
