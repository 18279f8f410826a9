//! INFO: Redis's sections and fields, in its order, for the version the
//! engine answers as. What the engine has (keys, clients, scripts,
//! commands, errors, latencies, CPU time) is counted; what it has not
//! (replicas, forks, an allocator to ask) reads as a server without it.

use super::memory::{human_bytes, used_memory};
use super::{CmdResult, Ctx, Spec};
use crate::args::is;
use crate::command::Store;
use crate::pubsub::Scope;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "info",
    arity: -1,
    handler: info,
}];

/// INFO's sections, in the order Redis prints them, and whether INFO with
/// no argument (or `default`) shows them.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

/// INFO [section ...]: `default`, `all` and `everything` as in Redis 7,
/// unknown sections ignored. Fields are the ones clients and tools read;
/// what the engine does not have (persistence, replicas, forks) reads as
/// a server that has none.
fn info(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut wanted: Vec<&str> = Vec::new();
    let mut add = |name: &'static str| {
        if !wanted.contains(&name) {
            wanted.push(name);
        }
    };
    if args.len() == 1 {
        SECTIONS.iter().filter(|s| s.1).for_each(|s| add(s.0));
    }
    for arg in &args[1..] {
        if is(arg, "default") {
            SECTIONS.iter().filter(|s| s.1).for_each(|s| add(s.0));
        } else if is(arg, "all") || is(arg, "everything") {
            SECTIONS.iter().for_each(|s| add(s.0));
        } else if let Some(&(name, _)) = SECTIONS.iter().find(|s| is(arg, s.0)) {
            add(name);
        }
    }
    let mut out = String::new();
    for &(name, _) in SECTIONS {
        if !wanted.contains(&name) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let mut title = name.to_string();
        if let Some(first) = title.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        out.push_str(&format!("# {title}\r\n"));
        for (field, value) in section(ctx, name) {
            out.push_str(&format!("{field}:{value}\r\n"));
        }
    }
    Ok(reply::verbatim(out))
}

/// The process's user and system CPU time in seconds, read from
/// `/proc/self/stat` (its 14th and 15th fields, in clock ticks of 1/100 s
/// on Linux); zero where there is no such file.
fn cpu_seconds() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // The command name (field 2) is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields 14 and 15 of the line are 11 and 12 after the name.
    (ticks(11) / 100.0, ticks(12) / 100.0)
}

/// The fields of one INFO section.
fn section(ctx: &mut Ctx<'_>, name: &str) -> Vec<(String, String)> {
    let now = ctx.now;
    let store = &*ctx.store;
    let fields: Vec<(&str, String)> = match name {
        "server" => server_section(store, now),
        "clients" => clients_section(store),
        "memory" => memory_section(store),
        "persistence" => persistence_section(store),
        "stats" => stats_section(store),
        "replication" => replication_section(store),
        "cluster" => vec![("cluster_enabled", "0".into())],
        "errorstats" => return errorstats_section(store),
        "commandstats" => return commandstats_section(store),
        "latencystats" => return latencystats_section(store),
        "cpu" => cpu_section(),
        "keyspace" => return keyspace_section(store, now),
        // modules: none.
        _ => Vec::new(),
    };
    fields
        .into_iter()
        .map(|(f, v)| (f.to_string(), v))
        .collect()
}

/// INFO server: the version the engine answers as, the process, the uptime.
fn server_section(store: &Store, now: i64) -> Vec<(&'static str, String)> {
    let config = &store.config;
    let uptime = (now - store.started_ms).max(0) / 1000;
    vec![
        ("redis_version", store.version.as_str().into()),
        ("redis_git_sha1", "00000000".into()),
        ("redis_git_dirty", "0".into()),
        ("redis_build_id", "0".into()),
        ("redis_mode", "standalone".into()),
        (
            "os",
            format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        ),
        ("arch_bits", (usize::BITS).to_string()),
        ("multiplexing_api", "tokio".into()),
        ("process_id", std::process::id().to_string()),
        ("run_id", store.run_id.clone()),
        ("tcp_port", config.get("port").into()),
        ("server_time_usec", (now.saturating_mul(1000)).to_string()),
        ("uptime_in_seconds", uptime.to_string()),
        ("uptime_in_days", (uptime / 86_400).to_string()),
        ("hz", config.get("hz").into()),
        ("configured_hz", config.get("hz").into()),
        ("executable", String::new()),
        ("config_file", String::new()),
        ("io_threads_active", "0".into()),
        // The engine itself, last: INFO's readers skip lines they do not
        // know.
        ("engine", crate::ENGINE.into()),
    ]
}

/// INFO clients: connections and blocked clients.
fn clients_section(store: &Store) -> Vec<(&'static str, String)> {
    let config = &store.config;
    let mut fields = vec![
        ("connected_clients", store.connected_clients.to_string()),
        ("cluster_connections", "0".into()),
        ("maxclients", config.get("maxclients").into()),
        ("blocked_clients", store.waiters.len().to_string()),
        ("tracking_clients", store.tracking.clients().to_string()),
        ("clients_in_timeout_table", "0".into()),
    ];
    if store.version >= crate::RedisVersion::V7_4 {
        // Redis 7.2's fields.
        let (blocking, on_nokey) = store.waiters.blocking_keys();
        fields.push(("total_blocking_keys", blocking.to_string()));
        fields.push(("total_blocking_keys_on_nokey", on_nokey.to_string()));
    }
    fields
}

/// INFO memory: the estimated memory in use, scripts and functions, the limit.
fn memory_section(store: &Store) -> Vec<(&'static str, String)> {
    let config = &store.config;
    let used = used_memory(store);
    let maxmemory: u64 = config.get("maxmemory").parse().unwrap_or(0);
    vec![
        ("used_memory", used.to_string()),
        ("used_memory_human", human_bytes(used)),
        ("used_memory_peak", used.to_string()),
        ("used_memory_peak_human", human_bytes(used)),
        (
            "number_of_cached_scripts",
            store.scripts.count().to_string(),
        ),
        (
            "number_of_functions",
            store.functions.function_count().to_string(),
        ),
        (
            "number_of_libraries",
            store.functions.libraries().count().to_string(),
        ),
        ("maxmemory", maxmemory.to_string()),
        ("maxmemory_human", human_bytes(maxmemory)),
        ("maxmemory_policy", config.get("maxmemory-policy").into()),
        // Replication and AOF buffers, which Redis leaves out of the
        // eviction's count: the engine has neither.
        ("mem_not_counted_for_evict", "0".into()),
        ("mem_allocator", "rust".into()),
        ("lazyfree_pending_objects", "0".into()),
    ]
}

/// INFO persistence: the RDB saves (see `persistence`) and the AOF (`crate::aof`).
fn persistence_section(store: &Store) -> Vec<(&'static str, String)> {
    let mut fields = vec![("loading", "0".into()), ("async_loading", "0".into())];
    fields.extend(store.saves.info(store.changes()));
    fields.extend(store.aof.info());
    fields
}

/// INFO stats: connections, commands, errors, expired keys, Pub/Sub.
fn stats_section(store: &Store) -> Vec<(&'static str, String)> {
    let (tracking_keys, tracking_items, tracking_prefixes) = store.tracking.totals();
    let mut stats = stats_rows(store, tracking_keys, tracking_items, tracking_prefixes);
    if store.version.has_field_expiry() {
        let at = stats
            .iter()
            .position(|(name, _)| *name == "expired_keys")
            .unwrap_or(stats.len());
        let fields: u64 = store.dbs.iter().map(|ks| ks.expired_fields_count).sum();
        stats.insert(at, ("expired_subkeys", fields.to_string()));
    }
    stats
}

/// INFO stats' rows as Redis 7.0.15 shows them.
fn stats_rows(
    store: &Store,
    tracking_keys: usize,
    tracking_items: usize,
    tracking_prefixes: usize,
) -> Vec<(&'static str, String)> {
    vec![
        (
            "total_connections_received",
            store.connections_received.to_string(),
        ),
        (
            "total_commands_processed",
            store.commands_processed.to_string(),
        ),
        ("instantaneous_ops_per_sec", "0".into()),
        (
            "total_error_replies",
            store.command_stats.total_errors().to_string(),
        ),
        ("rejected_connections", "0".into()),
        (
            "expired_keys",
            store
                .dbs
                .iter()
                .map(|ks| ks.expired_count)
                .sum::<u64>()
                .to_string(),
        ),
        (
            "evicted_keys",
            store
                .dbs
                .iter()
                .map(|ks| ks.evicted_count)
                .sum::<u64>()
                .to_string(),
        ),
        ("keyspace_hits", "0".into()),
        ("keyspace_misses", "0".into()),
        (
            "pubsub_channels",
            store.pubsub.channel_count(Scope::Channel).to_string(),
        ),
        ("pubsub_patterns", store.pubsub.numpat().to_string()),
        (
            "pubsubshard_channels",
            store.pubsub.channel_count(Scope::Shard).to_string(),
        ),
        ("latest_fork_usec", "0".into()),
        ("total_forks", "0".into()),
        // MIGRATE's connection cache: the engine has no MIGRATE.
        ("migrate_cached_sockets", "0".into()),
        ("tracking_total_keys", tracking_keys.to_string()),
        ("tracking_total_items", tracking_items.to_string()),
        ("tracking_total_prefixes", tracking_prefixes.to_string()),
    ]
}

/// INFO replication: a master with no replica.
fn replication_section(store: &Store) -> Vec<(&'static str, String)> {
    let config = &store.config;
    vec![
        ("role", "master".into()),
        ("connected_slaves", "0".into()),
        ("master_failover_state", "no-failover".into()),
        ("master_replid", store.replid.clone()),
        ("master_replid2", "0".repeat(40)),
        ("master_repl_offset", "0".into()),
        ("second_repl_offset", "-1".into()),
        ("repl_backlog_active", "0".into()),
        ("repl_backlog_size", config.get("repl-backlog-size").into()),
        ("repl_backlog_first_byte_offset", "0".into()),
        ("repl_backlog_histlen", "0".into()),
    ]
}

/// INFO errorstats: one line per error code.
fn errorstats_section(store: &Store) -> Vec<(String, String)> {
    store
        .command_stats
        .errors()
        .map(|(code, n)| (format!("errorstat_{code}"), format!("count={n}")))
        .collect()
}

/// INFO commandstats: calls and failures per command.
fn commandstats_section(store: &Store) -> Vec<(String, String)> {
    store
        .command_stats
        .by_name()
        .into_iter()
        .map(|(name, c)| {
            (
                format!("cmdstat_{name}"),
                format!(
                    "calls={},usec=0,usec_per_call=0.00,rejected_calls={},failed_calls={}",
                    c.calls, c.rejected, c.failed
                ),
            )
        })
        .collect()
}

/// INFO latencystats: each command's latency percentiles
/// (`latency-tracking-info-percentiles`).
fn latencystats_section(store: &Store) -> Vec<(String, String)> {
    let wanted: Vec<f64> = (store.config.get("latency-tracking-info-percentiles"))
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    store.latency.percentiles(&wanted)
}

/// INFO cpu: the process's CPU time.
fn cpu_section() -> Vec<(&'static str, String)> {
    let (user, sys) = cpu_seconds();
    vec![
        ("used_cpu_sys", format!("{sys:.6}")),
        ("used_cpu_user", format!("{user:.6}")),
        ("used_cpu_sys_children", "0.000000".into()),
        ("used_cpu_user_children", "0.000000".into()),
        ("used_cpu_sys_main_thread", format!("{sys:.6}")),
        ("used_cpu_user_main_thread", format!("{user:.6}")),
    ]
}

/// INFO keyspace: keys, expiring keys and average TTL per non-empty
/// database, and from Redis 7.4 on `subexpiry`, its hashes with field TTLs.
fn keyspace_section(store: &Store, now: i64) -> Vec<(String, String)> {
    let subexpiry = store.version.has_field_expiry();
    store
        .dbs
        .iter()
        .enumerate()
        .filter(|(_, ks)| ks.len() > 0)
        .map(|(i, ks)| {
            let mut line = format!(
                "keys={},expires={},avg_ttl={}",
                ks.len(),
                ks.expiring_len(),
                ks.average_ttl(now)
            );
            if subexpiry {
                line.push_str(&format!(",subexpiry={}", ks.hashes_with_field_ttls()));
            }
            (format!("db{i}"), line)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::command::test_util::*;

    #[test]
    fn info_sections_and_stats() {
        let (_clock, mut c) = clocked(1_700_000_000_123);
        run(&mut c, "SET a 1");
        run(&mut c, "SET b 1 EX 100");
        let Value::BulkString(info) = run(&mut c, "INFO keyspace") else {
            panic!("INFO is a bulk string");
        };
        assert_eq!(
            String::from_utf8_lossy(&info),
            "# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=100000\r\n"
        );
        assert_eq!(run(&mut c, "INFO foo"), bulk(""));
        let Value::BulkString(info) = run(&mut c, "INFO") else {
            panic!("INFO is a bulk string");
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        assert!(info.starts_with("# Server\r\nredis_version:7.0.15\r\n"));
        assert!(info.contains("\r\n\r\n# Clients\r\n"));
        assert!(info.contains("\r\n\r\n# Cpu\r\nused_cpu_sys:"));
        assert!(!info.contains("# Commandstats"));
        assert!(info.ends_with("\r\n"));
        // Calls counted per command; failed ones too; RESETSTAT clears.
        run(&mut c, "GET a");
        run(&mut c, "INCR a x");
        run(&mut c, "HSET a f v");
        let Value::BulkString(stats) = run(&mut c, "INFO commandstats errorstats") else {
            panic!("INFO is a bulk string");
        };
        let stats = String::from_utf8_lossy(&stats).into_owned();
        assert!(
            stats.ends_with(
                "\r\n# Errorstats\r\nerrorstat_ERR:count=1\r\nerrorstat_WRONGTYPE:count=1\r\n"
            ),
            "{stats}"
        );
        assert!(stats.starts_with("# Commandstats\r\n"), "{stats}");
        assert!(
            stats.contains("\r\ncmdstat_get:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"),
            "{stats}"
        );
        assert!(stats.contains("\r\ncmdstat_set:calls=2,"), "{stats}");
        assert!(stats.contains("\r\ncmdstat_hset:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=1\r\n"), "{stats}");
        run(&mut c, "CONFIG RESETSTAT");
        let Value::BulkString(stats) = run(&mut c, "INFO commandstats") else {
            panic!("INFO is a bulk string");
        };
        assert_eq!(
            String::from_utf8_lossy(&stats),
            "# Commandstats\r\ncmdstat_config|resetstat:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"
        );
        // The transaction commands the session runs itself count too
        // (Redis's introspection-2.tcl "command stats for MULTI").
        for line in [
            "MULTI",
            "SET a 1",
            "GEOADD g 0 0 p",
            "EXEC",
            "MULTI",
            "MULTI",
            "DISCARD",
            "WATCH a",
            "UNWATCH",
        ] {
            run(&mut c, line);
        }
        let Value::BulkString(stats) = run(&mut c, "INFO commandstats") else {
            panic!("INFO is a bulk string");
        };
        let stats = String::from_utf8_lossy(&stats).into_owned();
        for (name, calls, failed) in [
            ("multi", 3, 1),
            ("exec", 1, 0),
            ("set", 1, 0),
            ("geoadd", 1, 0),
            ("discard", 1, 0),
            ("watch", 1, 0),
            ("unwatch", 1, 0),
        ] {
            assert!(
                stats.contains(&format!("\r\ncmdstat_{name}:calls={calls},usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls={failed}\r\n")),
                "{name}: {stats}"
            );
        }
        assert!(
            !stats.contains("cmdstat_zadd"),
            "GEOADD counts as itself: {stats}"
        );
    }
}
