//! CLUSTER, as a one-node Redis Cluster answers it: the engine in cluster
//! mode (see `crate::cluster`) serves all 16384 slots. Enough for cluster
//! clients (redis-rs's cluster client, `redis-cli -c`) to find their way:
//! SLOTS, SHARDS and NODES name this node, at the address the RESP server
//! announced (none in process: an empty IP and port 0), KEYSLOT,
//! COUNTKEYSINSLOT, GETKEYSINSLOT, MYID, INFO. The subcommands that change
//! a cluster's shape (ADDSLOTS, MEET, FAILOVER, ...) are not here.

use super::{run_subcommand, CmdResult, Ctx, HelpText, Spec, Sub};
use crate::args::int_arg;
use crate::cluster::{slot, SLOTS};
use crate::error::CmdError;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "cluster",
    arity: -2,
    handler: cluster,
}];

/// CLUSTER's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "countkeysinslot",
        arity: 3,
        handler: countkeysinslot,
    },
    Sub {
        name: "getkeysinslot",
        arity: 4,
        handler: getkeysinslot,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: help,
    },
    Sub {
        name: "info",
        arity: 2,
        handler: info,
    },
    Sub {
        name: "keyslot",
        arity: 3,
        handler: keyslot,
    },
    Sub {
        name: "myid",
        arity: 2,
        handler: myid,
    },
    Sub {
        name: "nodes",
        arity: 2,
        handler: nodes,
    },
    Sub {
        name: "shards",
        arity: 2,
        handler: shards,
    },
    Sub {
        name: "slots",
        arity: 2,
        handler: slots,
    },
];

fn cluster(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if !ctx.store.cluster_enabled {
        return Err(CmdError::err("This instance has cluster support disabled"));
    }
    run_subcommand(ctx, args, SUBCOMMANDS)
}

/// A slot argument: an integer in 0..16384.
fn slot_arg(arg: &[u8], invalid: &'static str) -> Result<u16, CmdError> {
    let n = int_arg(arg)?;
    u16::try_from(n)
        .ok()
        .filter(|&s| s < SLOTS)
        .ok_or_else(|| CmdError::err(invalid))
}

fn keyslot(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::int(slot(args[2])))
}

/// The live keys of database 0 in `wanted` (a scan of the keyspace, where
/// Redis keeps an index per slot).
fn keys_in_slot(ctx: &mut Ctx<'_>, wanted: u16) -> Vec<Vec<u8>> {
    let now = ctx.now;
    ctx.store.dbs[0]
        .keys(None, now)
        .into_iter()
        .filter(|k| slot(k) == wanted)
        .map(|k| k.to_vec())
        .collect()
}

fn countkeysinslot(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let wanted = slot_arg(args[2], "Invalid slot")?;
    Ok(reply::int(keys_in_slot(ctx, wanted).len()))
}

fn getkeysinslot(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    const INVALID: &str = "Invalid slot or number of keys";
    let wanted = int_arg(args[2])?;
    let count = int_arg(args[3])?;
    let (Ok(wanted), Ok(count)) = (u16::try_from(wanted), usize::try_from(count)) else {
        return Err(CmdError::err(INVALID));
    };
    if wanted >= SLOTS {
        return Err(CmdError::err(INVALID));
    }
    // Redis lists a slot's keys newest first (its per-slot list grows at
    // the head).
    let mut keys = keys_in_slot(ctx, wanted);
    keys.reverse();
    keys.truncate(count);
    Ok(reply::bulks(keys))
}

fn myid(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::bulk(ctx.store.run_id.clone()))
}

fn info(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let lines = [
        "cluster_state:ok",
        "cluster_slots_assigned:16384",
        "cluster_slots_ok:16384",
        "cluster_slots_pfail:0",
        "cluster_slots_fail:0",
        "cluster_known_nodes:1",
        "cluster_size:1",
        "cluster_current_epoch:0",
        "cluster_my_epoch:0",
        "cluster_stats_messages_sent:0",
        "cluster_stats_messages_received:0",
        "total_cluster_links_buffer_limit_exceeded:0",
    ];
    let mut text = lines.join("\r\n");
    text.push_str("\r\n");
    Ok(reply::verbatim(text))
}

/// This node's announced IP and port ("" and 0 in process).
fn address(ctx: &Ctx<'_>) -> (String, u16) {
    ctx.store.announced.clone().unwrap_or_default()
}

fn nodes(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let (ip, port) = address(ctx);
    let bus = u32::from(port) + 10000;
    Ok(reply::verbatim(format!(
        "{} {ip}:{port}@{bus} myself,master - 0 0 0 connected 0-{}\n",
        ctx.store.run_id,
        SLOTS - 1
    )))
}

fn slots(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let (ip, port) = address(ctx);
    Ok(reply::array(vec![reply::array(vec![
        reply::int(0),
        reply::int(SLOTS - 1),
        reply::array(vec![
            reply::bulk(ip),
            reply::int(port),
            reply::bulk(ctx.store.run_id.clone()),
            reply::array(Vec::new()),
        ]),
    ])]))
}

fn shards(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let (ip, port) = address(ctx);
    let field = |name: &str, value| (reply::bulk(name), value);
    let node = reply::map(vec![
        field("id", reply::bulk(ctx.store.run_id.clone())),
        field("port", reply::int(port)),
        field("ip", reply::bulk(ip.clone())),
        field("endpoint", reply::bulk(ip)),
        field("role", reply::bulk("master")),
        field("replication-offset", reply::int(0)),
        field("health", reply::bulk("online")),
    ]);
    Ok(reply::array(vec![reply::map(vec![
        field(
            "slots",
            reply::array(vec![reply::int(0), reply::int(SLOTS - 1)]),
        ),
        field("nodes", reply::array(vec![node])),
    ])]))
}

/// CLUSTER HELP, in the text of the engine's version.
fn help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(HELP.reply(ctx.store.version, "cluster"))
}

/// CLUSTER HELP, each version's.
const HELP: HelpText = HelpText {
    v7_0: HELP_7_0,
    v7_4: HELP_7_4,
};

/// Redis 7.0.15's CLUSTER HELP, every subcommand of its CLUSTER.
const HELP_7_0: &[&str] = &[
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
];

/// Redis 7.4.1's CLUSTER HELP, every subcommand of its CLUSTER (7.0's,
/// with MYSHARDID, reordered, and NODES's hostname).
const HELP_7_4: &[&str] = &[
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MYID",
    "    Return the node id.",
    "MYSHARDID",
    "    Return the node's shard id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port@bus-port[,hostname]> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
];
