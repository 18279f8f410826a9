//! DEBUG, as Redis 7.0.15 answers it: the subcommands its tests and
//! tools use, dispatched from one table ([`SUBCOMMANDS`]); a subcommand
//! that is not there (crashes, allocator and AOF knobs, the ones 7.0.15
//! does not have) gets Redis's "unknown subcommand or wrong number of
//! arguments" error, as does one with a wrong argument count.
//!
//! A new subcommand is one more row of the table and its handler.

use std::time::Duration;

use super::{CmdResult, Ctx, HelpText, Spec};
use crate::args::is;
use crate::error::CmdError;
use crate::keyspace::Entry;
use crate::reply;
use crate::value::encoding::{encoding_name, is_shared_integer};
use crate::value::Value;

mod digest;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "debug",
    arity: -2,
    handler: debug,
}];

/// One DEBUG subcommand: its name, the argument counts it takes (DEBUG
/// and the subcommand included), and its handler.
struct Sub {
    name: &'static str,
    argc: fn(usize) -> bool,
    handler: super::Handler,
}

/// Every subcommand the engine serves, in the order of Redis's help.
const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "change-repl-id",
        argc: |n| n == 2,
        handler: change_repl_id,
    },
    Sub {
        name: "digest",
        argc: |n| n == 2,
        handler: dataset_digest,
    },
    Sub {
        name: "digest-value",
        argc: |n| n >= 2,
        handler: digest_value,
    },
    Sub {
        name: "error",
        argc: |n| n == 3,
        handler: error,
    },
    Sub {
        name: "log",
        argc: |n| n == 3,
        handler: ok,
    },
    Sub {
        name: "object",
        argc: |n| n == 3,
        handler: object,
    },
    Sub {
        name: "pause-cron",
        argc: |n| n == 3,
        handler: ok,
    },
    Sub {
        name: "populate",
        argc: |n| (3..=5).contains(&n),
        handler: populate,
    },
    Sub {
        name: "protocol",
        argc: |n| n == 3,
        handler: protocol,
    },
    Sub {
        name: "loadaof",
        argc: |n| n == 2,
        handler: crate::command::persistence::debug_loadaof,
    },
    // DEBUG RELOAD saves the dataset as an RDB file and loads it back.
    Sub {
        name: "reload",
        argc: |n| n >= 2,
        handler: crate::command::persistence::debug_reload,
    },
    Sub {
        name: "set-active-expire",
        argc: |n| n == 3,
        handler: set_active_expire,
    },
    Sub {
        name: "quicklist-packed-threshold",
        argc: |n| n == 3,
        handler: quicklist_packed_threshold,
    },
    Sub {
        name: "set-skip-checksum-validation",
        argc: |n| n == 3,
        handler: ok,
    },
    Sub {
        name: "sleep",
        argc: |n| n == 3,
        handler: sleep,
    },
    Sub {
        name: "listpack",
        argc: |n| n == 3,
        handler: listpack,
    },
    Sub {
        name: "replybuffer",
        argc: |n| n == 4,
        handler: ok,
    },
    Sub {
        name: "help",
        argc: |n| n == 2,
        handler: help,
    },
];

fn debug(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let found = SUBCOMMANDS
        .iter()
        .find(|s| is(sub, s.name) && (s.argc)(args.len()));
    match found {
        Some(sub) => (sub.handler)(ctx, args),
        None => Err(CmdError::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            String::from_utf8_lossy(sub)
        ))),
    }
}

fn ok(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::ok())
}

/// DEBUG SLEEP seconds: holds the whole engine that long, as Redis's one
/// thread sleeps. The seconds read as C's `strtod` reads them (what is
/// not a number is 0; a negative time does not sleep).
fn sleep(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let seconds = strtod(args[2]);
    if seconds > 0.0 && seconds.is_finite() {
        std::thread::sleep(Duration::from_secs_f64(seconds.min(1e9)));
    }
    Ok(reply::ok())
}

/// C's `strtod`: the longest prefix that is a number, after blanks; 0
/// when there is none.
fn strtod(bytes: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start();
    (1..=text.len())
        .rev()
        .filter(|&end| text.is_char_boundary(end))
        .find_map(|end| text[..end].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// DEBUG ERROR text: `text` as the error reply, with no code added.
fn error(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let text = String::from_utf8_lossy(args[2]).replace(['\r', '\n'], " ");
    Err(CmdError::raw(text))
}

/// DEBUG SET-ACTIVE-EXPIRE 0|1: 0 stops the active expiry cycle (keys
/// expire when accessed only), anything else starts it again (`atoi`).
fn set_active_expire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ctx.store.active_expire = strtod(args[2]) as i64 != 0;
    Ok(reply::ok())
}

/// DEBUG CHANGE-REPL-ID: a new replication id (INFO's `master_replid`),
/// the second one cleared.
fn change_repl_id(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    ctx.store.replid = crate::command::random_hex_id();
    Ok(reply::ok())
}

/// DEBUG DIGEST: the dataset's signature.
fn dataset_digest(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let digest = digest::dataset_digest(ctx.store);
    Ok(reply::simple(&digest::hex(&digest)))
}

/// DEBUG DIGEST-VALUE key...: each value's signature (all zeros for a
/// missing key), without its key.
fn digest_value(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let ks = ctx.ks();
    let digests = args[2..].iter().map(|key| {
        let mut digest = [0; 20];
        if let Some(entry) = ks.stored(key) {
            let expires = ks.expire_at(key).is_some();
            digest::value_digest(&mut digest, &entry.value, expires);
        }
        reply::simple(&digest::hex(&digest))
    });
    Ok(reply::array(digests.collect()))
}

/// DEBUG OBJECT key: Redis's line about the value: where it is, its
/// references and encoding, its RDB length, its LRU clock and idle time,
/// and for a list its quicklist's nodes.
fn object(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now;
    let version = ctx.store.version;
    let config = &ctx.store.config;
    let listpack_max = config.get("list-max-listpack-size").to_string();
    let compressed = config.get("list-compress-depth") != "0";
    let Some(entry) = ctx.ks().stored(args[2]) else {
        return Err(CmdError::err("no such key"));
    };
    let history = entry.history();
    let refcount = if is_shared_integer(&entry.value, history) {
        i64::from(i32::MAX)
    } else {
        1
    };
    let encoding = encoding_name(&entry.value, history);
    let serialized = crate::rdb::value::encode(&entry.value, history, true, version).len() - 1;
    let accessed = entry.accessed();
    let idle = (now / 1000 - i64::from(accessed)).max(0);
    let mut line = format!(
        "Value at:{:p} refcount:{refcount} encoding:{encoding} serializedlength:{serialized} \
         lru:{} lru_seconds_idle:{idle}",
        std::ptr::from_ref::<Entry>(entry),
        accessed & 0x00ff_ffff,
    );
    if let Value::List(list) = &entry.value {
        let nodes = crate::rdb::value::quicklist_nodes(&entry.value);
        let count = nodes.len().max(1);
        let bytes: usize = nodes.iter().map(Vec::len).sum();
        line.push_str(&format!(
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:{} \
             ql_uncompressed_size:{bytes}",
            nodes.len(),
            list.len() as f64 / count as f64,
            listpack_max,
            i32::from(compressed),
        ));
    }
    Ok(reply::simple(&line))
}

/// DEBUG LISTPACK key: Redis prints the listpack on its standard output;
/// the engine has it in no such form to print, and answers as Redis.
fn listpack(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    // OBJECT's lookup: a read, not an access.
    let now = ctx.now;
    let Some(entry) = ctx.ks().read_untouched(args[2], now, false) else {
        return Err(CmdError::err("no such key"));
    };
    // Redis 7.4's listpackex (a hash with field TTLs) is a listpack too.
    if !matches!(
        encoding_name(&entry.value, entry.history()),
        "listpack" | "listpackex"
    ) {
        return Err(CmdError::err("Not a listpack encoded object."));
    }
    Ok(reply::simple("Listpack structure printed on stdout"))
}

/// DEBUG QUICKLIST-PACKED-THRESHOLD size: Redis's limit past which a list
/// element gets a node of its own. The engine's lists keep every element
/// in packed nodes, so the size is checked as Redis checks it and kept.
fn quicklist_packed_threshold(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    const MAX: u64 = 4 * 1024 * 1024 * 1024;
    match crate::config::memtoull(args[2]) {
        Some(size) if size <= MAX => {
            ctx.store.quicklist_packed_threshold = size;
            Ok(reply::ok())
        }
        _ => Err(CmdError::err(
            "argument must be a memory value bigger than 1 and smaller than 4gb",
        )),
    }
}

/// `DEBUG POPULATE count [prefix] [size]`: `count` string keys
/// `prefix:N` (`key:N` by default) holding `value:N`, or with a `size`,
/// that text cut or padded with zero bytes to `size` bytes; keys that
/// exist are left alone.
fn populate(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let positive = |arg: &[u8]| {
        crate::args::parse_i64(arg)
            .filter(|&n| n >= 0)
            .ok_or_else(|| CmdError::err("value is out of range, must be positive"))
    };
    let count = positive(args[2])?;
    let prefix = args.get(3).copied().unwrap_or(b"key");
    let size = args.get(4).map(|s| positive(s)).transpose()?;
    for n in 0..count {
        let mut key = prefix.to_vec();
        key.extend_from_slice(format!(":{n}").as_bytes());
        if ctx.contains_for_write(&key) {
            continue;
        }
        let mut value = format!("value:{n}").into_bytes();
        if let Some(size) = size.and_then(|s| usize::try_from(s).ok()) {
            value.resize(size, 0);
        }
        ctx.set(&key, Value::Str(value.into()), false);
        ctx.modified(&key);
    }
    Ok(reply::ok())
}

/// DEBUG PROTOCOL type: a sample reply of each of RESP3's types, lowered
/// for a RESP2 client as Redis lowers it (a push is refused there, and
/// in RESP3 only the reply after Redis's push is sent).
#[allow(
    clippy::approx_constant,
    reason = "3.141 is Redis's sample double, not pi"
)]
fn protocol(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    use redis::Value as V;
    let ints = || (0..3).map(reply::int).collect::<Vec<_>>();
    let kind = String::from_utf8_lossy(args[2]).to_ascii_lowercase();
    Ok(match kind.as_str() {
        "string" => reply::bulk("Hello World"),
        "integer" => reply::int(12345),
        "double" => reply::double(3.141),
        "bignum" => V::BigNumber(b"1234567999999999999999999999999999999".to_vec()),
        "null" => reply::nil(),
        "array" => reply::array(ints()),
        "set" => reply::set(ints()),
        "map" => reply::map(
            (0..3)
                .map(|n| (reply::int(n), V::Boolean(n == 1)))
                .collect(),
        ),
        "attrib" => V::Attribute {
            data: Box::new(reply::bulk("Some real reply following the attribute")),
            attributes: vec![(
                reply::bulk("key-popularity"),
                reply::array(vec![reply::bulk("key:123"), reply::int(90)]),
            )],
        },
        "push" if !ctx.resp3() => {
            return Err(CmdError::err("RESP2 is not supported by this command"))
        }
        // Redis sends a push (`server-cpu-usage`, 42) before this reply;
        // a reply here is one value, so the push is left out.
        "push" => reply::bulk("Some real reply following the push reply"),
        "verbatim" => reply::verbatim("This is a verbatim\nstring"),
        "true" => V::Boolean(true),
        "false" => V::Boolean(false),
        _ => {
            return Err(CmdError::err(
                "Wrong protocol type name. Please use one of the following: \
                 string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    })
}

fn help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(HELP.reply(ctx.store.version, "debug"))
}

/// DEBUG HELP, each version's.
const HELP: HelpText = HelpText {
    v7_0: HELP_7_0,
    v7_4: HELP_7_4,
};

/// Redis 7.0.15's DEBUG HELP, every subcommand of its DEBUG.
const HELP_7_0: &[&str] = &[
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "CRASH-AND-RECOVER [<milliseconds>]",
    "    Hard crash and restart after a <milliseconds> delay (default 0).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key>",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "MALLCTL <key> [<val>]",
    "    Get or set a malloc tuning integer.",
    "MALLCTL-STR <key> [<val>]",
    "    Get or set a malloc tuning string.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "RESTART [<milliseconds>]",
    "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
];

/// Redis 7.4.1's DEBUG HELP, every subcommand of its DEBUG (the engine
/// serves the few its module doc names).
const HELP_7_4: &[&str] = &[
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "CRASH-AND-RECOVER [<milliseconds>]",
    "    Hard crash and restart after a <milliseconds> delay (default 0).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid> [full]",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key> [full]",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "RESTART [<milliseconds>]",
    "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys (and hash-fields) in background ",
    "    when they are not accessed (otherwise the Redis behavior). Setting it",
    "    to 1 reenables back the default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "DICT-RESIZING <0|1>",
    "    Enable or disable the main dict and expire dict resizing.",
    "SCRIPT <LIST|<sha>>",
    "    Output SHA and content of all scripts or of a specific script with its SHA.",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
];

#[cfg(test)]
mod tests {
    //! Every expected reply below was observed on redis-server 7.0.15.

    use redis::Value;

    use crate::command::test_util::*;

    fn simple(s: &str) -> Value {
        Value::SimpleString(s.into())
    }

    #[test]
    fn digests_are_redis_own() {
        let mut c = conn();
        let zeros = "0000000000000000000000000000000000000000";
        assert_eq!(run(&mut c, "DEBUG DIGEST"), simple(zeros));
        run(&mut c, "SET s hello");
        run(&mut c, "RPUSH l a b c 1");
        run(&mut c, "HSET h a 1 b 2");
        run(&mut c, "ZADD z 1.5 a 0.1 b 3 c");
        run(&mut c, "SET e x");
        run(&mut c, "EXPIRE e 1000");
        assert_eq!(
            run(&mut c, "DEBUG DIGEST-VALUE s l h z e nokey"),
            Value::Array(
                [
                    "36b23a1456b2dce2c3ed252c456761301dba8060",
                    "e093abdde6c4844ba87b7ed2172d25e2334a432b",
                    "6c8f22b3bf510fdcfd6122dd0f908a80e88243bf",
                    "d3a795113ef64aa93b74bbf2442038050fd508ed",
                    "0745672cb1bf060476eedeb8a28f5ffe1ff5a2be",
                    zeros,
                ]
                .into_iter()
                .map(simple)
                .collect()
            )
        );
    }

    #[test]
    fn subcommands_and_their_errors() {
        let mut c = conn();
        let unknown = |sub: &str| {
            err(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try DEBUG HELP."
            ))
        };
        assert_eq!(run(&mut c, "DEBUG JMAP"), unknown("JMAP"));
        assert_eq!(run(&mut c, "DEBUG sleep"), unknown("sleep"));
        assert_eq!(run(&mut c, "DEBUG SLEEP x"), Value::Okay);
        assert_eq!(run(&mut c, "DEBUG ERROR foo"), err("foo"));
        assert_eq!(run(&mut c, "DEBUG OBJECT k"), err("ERR no such key"));
        run(&mut c, "SET k hello");
        let Value::SimpleString(line) = run(&mut c, "DEBUG OBJECT k") else {
            panic!("DEBUG OBJECT is a status");
        };
        assert!(line.starts_with("Value at:0x"), "{line}");
        assert!(
            line.contains(" refcount:1 encoding:embstr serializedlength:6 lru:"),
            "{line}"
        );
        assert_eq!(run(&mut c, "DEBUG POPULATE 2 p 9"), Value::Okay);
        assert_eq!(run(&mut c, "GET p:1"), bulk("value:1\0\0"));
        assert_eq!(
            run(&mut c, "DEBUG POPULATE -1"),
            err("ERR value is out of range, must be positive")
        );
        assert_eq!(
            run(&mut c, "DEBUG PROTOCOL bignum"),
            bulk("1234567999999999999999999999999999999")
        );
        assert_eq!(
            run(&mut c, "DEBUG PROTOCOL push"),
            err("ERR RESP2 is not supported by this command")
        );
        // RELOAD saves and loads the RDB file (`persistence` tests it).
        assert_eq!(run(&mut c, "DEBUG RELOAD"), crate::reply::ok());
    }
}
