//! INFO: Redis's sections and fields, in its order, for the version the
//! engine answers as. What the engine has (keys, clients, scripts,
//! commands, errors, latencies, CPU time) is counted; what it has not
//! (replicas, forks, an allocator to ask) reads as a server without it.

use super::memory::{human_bytes, Report};
use super::{CmdResult, Ctx, Spec};
use crate::args::is;
use crate::command::Store;
use crate::pubsub::Scope;
use crate::reply;
use crate::RedisVersion;

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
        out.push_str(&format!("# {}\r\n", title(name)));
        for (field, value) in section(ctx, name) {
            out.push_str(&format!("{field}:{value}\r\n"));
        }
    }
    Ok(reply::verbatim(out))
}

/// A section's title as Redis prints it: its name capitalised, and `CPU`
/// in capitals.
fn title(name: &str) -> String {
    if name == "cpu" {
        return "CPU".into();
    }
    let mut title = name.to_string();
    if let Some(first) = title.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    title
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
    let memory = (name == "memory").then(|| Report::of(ctx.store));
    let store = &*ctx.store;
    let fields: Vec<(&str, String)> = match name {
        "server" => server_section(store, now),
        "clients" => clients_section(store),
        "memory" => memory.map_or_else(Vec::new, |m| memory_section(store, &m)),
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

/// Fields that read as zero on a server without what they count.
fn zeros<'a>(names: &'a [&'static str]) -> impl Iterator<Item = (&'static str, String)> + 'a {
    names.iter().map(|&name| (name, "0".to_string()))
}

/// Whether the engine answers as Redis 7.4.
fn is_74(store: &Store) -> bool {
    store.version >= RedisVersion::V7_4
}

/// INFO server: the version the engine answers as, the process, the
/// uptime; the build of a Redis without a known compiler.
fn server_section(store: &Store, now: i64) -> Vec<(&'static str, String)> {
    let config = &store.config;
    let uptime = (now - store.started_ms).max(0) / 1000;
    let mut fields = vec![
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
        ("monotonic_clock", "POSIX clock_gettime".into()),
        ("multiplexing_api", "tokio".into()),
        ("atomicvar_api", "c11-builtin".into()),
        ("gcc_version", "0.0.0".into()),
        ("process_id", std::process::id().to_string()),
        ("process_supervised", "no".into()),
        ("run_id", store.run_id.clone()),
        ("tcp_port", config.get("port").into()),
        ("server_time_usec", (now.saturating_mul(1000)).to_string()),
        ("uptime_in_seconds", uptime.to_string()),
        ("uptime_in_days", (uptime / 86_400).to_string()),
        ("hz", config.get("hz").into()),
        ("configured_hz", config.get("hz").into()),
        // Redis's LRU clock: seconds, in 24 bits.
        ("lru_clock", ((now / 1000) & 0x00ff_ffff).to_string()),
        ("executable", String::new()),
        ("config_file", String::new()),
        ("io_threads_active", "0".into()),
    ];
    if is_74(store) {
        let binds: String = (config.get("bind").split_whitespace())
            .map(|b| format!(",bind={b}"))
            .collect();
        let port = config.get("port");
        fields.push(("listener0", format!("name=tcp{binds},port={port}")));
    }
    // The engine itself, last: INFO's readers skip lines they do not know.
    fields.push(("engine", crate::ENGINE.into()));
    fields
}

/// INFO clients: connections, blocked clients, and from Redis 7.4 on
/// the clients subscribed or watching and the keys they wait on.
fn clients_section(store: &Store) -> Vec<(&'static str, String)> {
    let config = &store.config;
    let mut fields = vec![
        ("connected_clients", store.connected_clients.to_string()),
        ("cluster_connections", "0".into()),
        ("maxclients", config.get("maxclients").into()),
        ("client_recent_max_input_buffer", "0".into()),
        ("client_recent_max_output_buffer", "0".into()),
        ("blocked_clients", store.waiters.len().to_string()),
        ("tracking_clients", store.tracking.clients().to_string()),
    ];
    if !is_74(store) {
        fields.push(("clients_in_timeout_table", "0".into()));
        return fields;
    }
    let watched: usize = store.dbs.iter().map(|ks| ks.watched_keys()).sum();
    let (blocking, on_nokey) = store.waiters.blocking_keys();
    fields.extend([
        (
            "pubsub_clients",
            store.pubsub.subscribed_clients().to_string(),
        ),
        ("watching_clients", store.watching_clients.to_string()),
        ("clients_in_timeout_table", "0".into()),
        ("total_watched_keys", watched.to_string()),
        ("total_blocking_keys", blocking.to_string()),
        ("total_blocking_keys_on_nokey", on_nokey.to_string()),
    ]);
    fields
}

/// INFO memory: the engine's estimate (see [`Report`]), the Lua states,
/// the scripts and functions, the limit, lazy freeing. The engine is not
/// a process of its own and has no allocator to ask: its resident set is
/// its estimate, and every fragmentation ratio 1.
fn memory_section(store: &Store, m: &Report) -> Vec<(&'static str, String)> {
    let config = &store.config;
    let maxmemory: u64 = config.get("maxmemory").parse().unwrap_or(0);
    let system = total_system_memory();
    let vm_total = m.vm_eval + m.vm_functions;
    let scripts = m.scripts_eval + m.functions;
    let percent = |part, whole| format!("{:.2}%", Report::percent(part, whole));
    let mut fields = vec![
        ("used_memory", m.used.to_string()),
        ("used_memory_human", human_bytes(m.used)),
        ("used_memory_rss", m.used.to_string()),
        ("used_memory_rss_human", human_bytes(m.used)),
        ("used_memory_peak", m.peak.to_string()),
        ("used_memory_peak_human", human_bytes(m.peak)),
        ("used_memory_peak_perc", percent(m.used, m.peak)),
        ("used_memory_overhead", m.overhead.to_string()),
        ("used_memory_startup", m.startup.to_string()),
        ("used_memory_dataset", m.dataset.to_string()),
        (
            "used_memory_dataset_perc",
            format!("{:.2}%", m.dataset_percent()),
        ),
        ("allocator_allocated", m.used.to_string()),
        ("allocator_active", m.used.to_string()),
        ("allocator_resident", m.used.to_string()),
    ];
    if is_74(store) {
        fields.push(("allocator_muzzy", "0".into()));
    }
    fields.extend([
        ("total_system_memory", system.to_string()),
        ("total_system_memory_human", human_bytes(system)),
        ("used_memory_lua", m.vm_eval.to_string()),
        ("used_memory_vm_eval", m.vm_eval.to_string()),
        ("used_memory_lua_human", human_bytes(m.vm_eval)),
        ("used_memory_scripts_eval", m.scripts_eval.to_string()),
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
        ("used_memory_vm_functions", m.vm_functions.to_string()),
        ("used_memory_vm_total", vm_total.to_string()),
        ("used_memory_vm_total_human", human_bytes(vm_total)),
        ("used_memory_functions", m.functions.to_string()),
        ("used_memory_scripts", scripts.to_string()),
        ("used_memory_scripts_human", human_bytes(scripts)),
        ("maxmemory", maxmemory.to_string()),
        ("maxmemory_human", human_bytes(maxmemory)),
        ("maxmemory_policy", config.get("maxmemory-policy").into()),
        ("allocator_frag_ratio", "1.00".into()),
        ("allocator_frag_bytes", "0".into()),
        ("allocator_rss_ratio", "1.00".into()),
        ("allocator_rss_bytes", "0".into()),
        ("rss_overhead_ratio", "1.00".into()),
        ("rss_overhead_bytes", "0".into()),
        ("mem_fragmentation_ratio", "1.00".into()),
        ("mem_fragmentation_bytes", "0".into()),
    ]);
    // Replication and AOF buffers, which Redis leaves out of the
    // eviction's count: the engine has neither.
    fields.extend(zeros(&[
        "mem_not_counted_for_evict",
        "mem_replication_backlog",
        "mem_total_replication_buffers",
        "mem_clients_slaves",
        "mem_clients_normal",
        "mem_cluster_links",
        "mem_aof_buffer",
    ]));
    fields.push(("mem_allocator", "rust".into()));
    if is_74(store) {
        fields.push(("mem_overhead_db_hashtable_rehashing", "0".into()));
    }
    let lazyfreed =
        store.lazyfreed_objects + store.dbs.iter().map(|ks| ks.lazyfreed_count).sum::<u64>();
    fields.extend([
        ("active_defrag_running", "0".into()),
        ("lazyfree_pending_objects", "0".into()),
        ("lazyfreed_objects", lazyfreed.to_string()),
    ]);
    fields
}

/// The machine's memory in bytes (`/proc/meminfo`'s `MemTotal`), as
/// Redis reads it; 0 where there is no such file.
fn total_system_memory() -> u64 {
    let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") else {
        return 0;
    };
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// INFO persistence: the RDB saves (see `persistence`) and the AOF
/// (`crate::aof`); no fork ever runs, so every copy-on-write, fork and
/// child figure reads as none.
fn persistence_section(store: &Store) -> Vec<(&'static str, String)> {
    let mut fields = vec![("loading", "0".into()), ("async_loading", "0".into())];
    fields.extend(zeros(&[
        "current_cow_peak",
        "current_cow_size",
        "current_cow_size_age",
    ]));
    fields.push(("current_fork_perc", "0.00".into()));
    fields.extend(zeros(&[
        "current_save_keys_processed",
        "current_save_keys_total",
    ]));
    fields.extend(store.saves.info(store.changes()));
    fields.extend(store.aof.info());
    fields.extend(zeros(&[
        "module_fork_in_progress",
        "module_fork_last_cow_size",
    ]));
    fields
}

/// INFO stats: connections, commands, errors, expired and evicted keys,
/// lazy freeing, Pub/Sub, tracking, in Redis's order; what the engine
/// does not have (replicas, forks, defragmentation, I/O threads) reads as
/// none. Network traffic is the RESP server's
/// ([`NetBytes`](super::stats::NetBytes)).
fn stats_section(store: &Store) -> Vec<(&'static str, String)> {
    let sum = |count: fn(&crate::keyspace::Keyspace) -> u64| {
        store.dbs.iter().map(count).sum::<u64>().to_string()
    };
    let (tracking_keys, tracking_items, tracking_prefixes) = store.tracking.totals();
    let mut fields = vec![
        (
            "total_connections_received",
            store.connections_received.to_string(),
        ),
        (
            "total_commands_processed",
            store.commands_processed.to_string(),
        ),
        (
            "instantaneous_ops_per_sec",
            store.ops_rate.per_second().to_string(),
        ),
    ];
    let (input, output) = store.net.totals();
    fields.extend([
        ("total_net_input_bytes", input.to_string()),
        ("total_net_output_bytes", output.to_string()),
    ]);
    fields.extend(zeros(&[
        "total_net_repl_input_bytes",
        "total_net_repl_output_bytes",
    ]));
    fields.extend([
        (
            "instantaneous_input_kbps",
            super::stats::kbps(store.net_input_rate.per_second()),
        ),
        (
            "instantaneous_output_kbps",
            super::stats::kbps(store.net_output_rate.per_second()),
        ),
        ("instantaneous_input_repl_kbps", "0.00".to_string()),
        ("instantaneous_output_repl_kbps", "0.00".to_string()),
    ]);
    fields.extend(zeros(&[
        "rejected_connections",
        "sync_full",
        "sync_partial_ok",
        "sync_partial_err",
    ]));
    if store.version.has_field_expiry() {
        fields.push(("expired_subkeys", sum(|ks| ks.expired_fields_count)));
    }
    fields.extend([
        ("expired_keys", sum(|ks| ks.expired_count)),
        ("expired_stale_perc", "0.00".into()),
        ("expired_time_cap_reached_count", "0".into()),
        ("expire_cycle_cpu_milliseconds", "0".into()),
        ("evicted_keys", sum(|ks| ks.evicted_count)),
        ("evicted_clients", "0".into()),
    ]);
    if is_74(store) {
        fields.push(("evicted_scripts", "0".into()));
    }
    fields.extend(zeros(&[
        "total_eviction_exceeded_time",
        "current_eviction_exceeded_time",
    ]));
    fields.push(("keyspace_hits", sum(|ks| ks.hits)));
    fields.push(("keyspace_misses", sum(|ks| ks.misses)));
    fields.extend([
        (
            "pubsub_channels",
            store.pubsub.channel_count(Scope::Channel).to_string(),
        ),
        ("pubsub_patterns", store.pubsub.numpat().to_string()),
        (
            "pubsubshard_channels",
            store.pubsub.channel_count(Scope::Shard).to_string(),
        ),
    ]);
    // MIGRATE's connection cache: the engine has no MIGRATE.
    fields.extend(zeros(&[
        "latest_fork_usec",
        "total_forks",
        "migrate_cached_sockets",
        "slave_expires_tracked_keys",
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ]));
    fields.extend([
        ("tracking_total_keys", tracking_keys.to_string()),
        ("tracking_total_items", tracking_items.to_string()),
        ("tracking_total_prefixes", tracking_prefixes.to_string()),
        ("unexpected_error_replies", "0".into()),
        (
            "total_error_replies",
            store.command_stats.total_errors().to_string(),
        ),
    ]);
    fields.extend(zeros(&[
        "dump_payload_sanitizations",
        "total_reads_processed",
        "total_writes_processed",
        "io_threaded_reads_processed",
        "io_threaded_writes_processed",
    ]));
    if is_74(store) {
        fields.extend(zeros(&[
            "client_query_buffer_limit_disconnections",
            "client_output_buffer_limit_disconnections",
        ]));
    }
    fields.extend(zeros(&["reply_buffer_shrinks", "reply_buffer_expands"]));
    if is_74(store) {
        fields.extend(zeros(&[
            "eventloop_cycles",
            "eventloop_duration_sum",
            "eventloop_duration_cmd_sum",
            "instantaneous_eventloop_cycles_per_sec",
            "instantaneous_eventloop_duration_usec",
        ]));
        let denied = store.acl.log.denials();
        fields.extend([
            ("acl_access_denied_auth", denied.auth.to_string()),
            ("acl_access_denied_cmd", denied.command.to_string()),
            ("acl_access_denied_key", denied.key.to_string()),
            ("acl_access_denied_channel", denied.channel.to_string()),
        ]);
    }
    fields
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
        assert!(info.contains("\r\n\r\n# CPU\r\nused_cpu_sys:"));
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

    /// INFO memory's `lazyfreed_objects`.
    fn lazyfreed(c: &mut crate::Connection) -> u64 {
        info_field(c, "memory", "lazyfreed_objects")
            .parse()
            .expect("a count")
    }

    /// Loads `n` scripts (SCRIPT LOAD) or, `functions`, `n` libraries of
    /// one function each.
    fn load(c: &mut crate::Connection, n: usize, functions: bool) {
        for i in 0..n {
            let reply = if functions {
                let code = format!(
                    "#!lua name=l{i}\nredis.register_function('f{i}', function() return 1 end)"
                );
                run_args(c, &["FUNCTION", "LOAD", &code])
            } else {
                run_args(c, &["SCRIPT", "LOAD", &format!("return {i}")])
            };
            assert!(!matches!(reply, Value::ServerError(_)), "{reply:?}");
        }
    }

    /// Fills `key` with a set of `n` strings (a hashtable past 128).
    fn big_set(c: &mut crate::Connection, key: &str, n: usize) {
        let members: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
        let mut args = vec!["SADD", key];
        args.extend(members.iter().map(String::as_str));
        run_args(c, &args);
    }

    #[test]
    fn lazyfreed_objects_counts_what_redis_frees_in_the_background() {
        let mut c = conn();
        // UNLINK of a big value counts; of a compact one, or DEL, not.
        big_set(&mut c, "big", 200);
        run(&mut c, "SADD small 1 2 3");
        run(&mut c, "UNLINK big small");
        assert_eq!(lazyfreed(&mut c), 1);
        big_set(&mut c, "big", 200);
        run(&mut c, "DEL big");
        assert_eq!(lazyfreed(&mut c), 1);
        // Under lazyfree-lazy-user-del, DEL is UNLINK.
        run(&mut c, "CONFIG SET lazyfree-lazy-user-del yes");
        big_set(&mut c, "big", 200);
        run(&mut c, "DEL big");
        assert_eq!(lazyfreed(&mut c), 2);
        // A flush ASYNC counts its keys; SYNC (Redis 7.0) none.
        run(&mut c, "MSET a 1 b 2 c 3");
        run(&mut c, "FLUSHALL ASYNC");
        assert_eq!(lazyfreed(&mut c), 5);
        run(&mut c, "MSET a 1 b 2 c 3");
        run(&mut c, "FLUSHDB");
        assert_eq!(lazyfreed(&mut c), 5);
        // More than 64 scripts flushed ASYNC count; fewer are freed at once.
        load(&mut c, 65, false);
        run(&mut c, "SCRIPT FLUSH ASYNC");
        assert_eq!(lazyfreed(&mut c), 70);
        load(&mut c, 10, false);
        run(&mut c, "SCRIPT FLUSH ASYNC");
        assert_eq!(lazyfreed(&mut c), 70);
        // Redis 7.0 counts the functions, not their engine.
        load(&mut c, 65, true);
        run(&mut c, "FUNCTION FLUSH ASYNC");
        assert_eq!(lazyfreed(&mut c), 135);
        run(&mut c, "CONFIG RESETSTAT");
        assert_eq!(lazyfreed(&mut c), 0);
        assert_eq!(
            info_field(&mut c, "memory", "lazyfree_pending_objects"),
            "0"
        );
    }

    #[test]
    fn lazyfreed_objects_in_74_mode_counts_sync_flushes_outside_transactions() {
        let (_clock, mut c) = clocked_74(1_700_000_000_000);
        run(&mut c, "MSET a 1 b 2");
        run(&mut c, "FLUSHALL");
        assert_eq!(lazyfreed(&mut c), 2);
        run(&mut c, "MSET a 1 b 2");
        run(&mut c, "MULTI");
        run(&mut c, "FLUSHALL SYNC");
        run(&mut c, "EXEC");
        assert_eq!(lazyfreed(&mut c), 2);
        // A small list is one listpack in 7.4: one allocation.
        let items: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let mut args = vec!["RPUSH", "list"];
        args.extend(items.iter().map(String::as_str));
        run_args(&mut c, &args);
        run(&mut c, "UNLINK list");
        assert_eq!(lazyfreed(&mut c), 2);
        // Functions count with their engine.
        load(&mut c, 65, true);
        run(&mut c, "FUNCTION FLUSH ASYNC");
        assert_eq!(lazyfreed(&mut c), 68);
    }

    #[test]
    fn info_memory_reports_the_caches_the_lua_states_and_the_peak() {
        let mut c = conn();
        let field = |c: &mut crate::Connection, name: &str| -> u64 {
            info_field(c, "memory", name).parse().expect(name)
        };
        assert_eq!(field(&mut c, "used_memory_scripts_eval"), 0);
        let empty_functions = field(&mut c, "used_memory_functions");
        load(&mut c, 3, false);
        load(&mut c, 2, true);
        assert!(field(&mut c, "used_memory_scripts_eval") > 3 * 64);
        assert!(field(&mut c, "used_memory_functions") > empty_functions);
        assert_eq!(
            field(&mut c, "used_memory_scripts"),
            field(&mut c, "used_memory_scripts_eval") + field(&mut c, "used_memory_functions")
        );
        let vm = field(&mut c, "used_memory_vm_eval");
        assert!(vm > 0 && vm % 1024 == 0, "{vm}");
        assert_eq!(field(&mut c, "used_memory_lua"), vm);
        // The peak stays when the data goes.
        big_set(&mut c, "big", 5000);
        let high = field(&mut c, "used_memory");
        run(&mut c, "DEL big");
        assert!(field(&mut c, "used_memory") < high);
        assert_eq!(field(&mut c, "used_memory_peak"), high);
        assert_eq!(
            field(&mut c, "used_memory_overhead") + field(&mut c, "used_memory_dataset"),
            field(&mut c, "used_memory")
        );
    }

    #[test]
    fn keyspace_hits_and_misses_count_the_reads_as_redis_does() {
        let mut c = conn();
        let lookups = |c: &mut crate::Connection| -> (u64, u64) {
            let field = |c: &mut crate::Connection, name| {
                info_field(c, "stats", name).parse::<u64>().expect(name)
            };
            (field(c, "keyspace_hits"), field(c, "keyspace_misses"))
        };
        // Writes look their keys up to write: no read.
        run(&mut c, "SET a 1");
        run(&mut c, "SET a 2 XX");
        run(&mut c, "RPUSH l x");
        run(&mut c, "RENAME l m");
        assert_eq!(lookups(&mut c), (0, 0));
        // Reads count a hit or a miss per key.
        run(&mut c, "GET a");
        run(&mut c, "GET nokey");
        run(&mut c, "MGET a nokey m");
        assert_eq!(lookups(&mut c), (3, 2));
        // So do EXISTS, TYPE, TTL and OBJECT, which do not touch the key.
        run(&mut c, "EXISTS a nokey");
        run(&mut c, "TYPE m");
        run(&mut c, "TTL nokey");
        run(&mut c, "OBJECT ENCODING a");
        assert_eq!(lookups(&mut c), (6, 4));
        // SET ... GET reads the old value; INCRBYFLOAT writes.
        run(&mut c, "SET a 3 GET");
        run(&mut c, "INCRBYFLOAT f 1.5");
        assert_eq!(lookups(&mut c), (7, 4));
        run(&mut c, "CONFIG RESETSTAT");
        assert_eq!(lookups(&mut c), (0, 0));
    }
}
