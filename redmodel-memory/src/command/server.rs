//! Server commands: CONFIG, INFO, TIME, COMMAND, with Redis 7.0.15's
//! replies and error texts (FUNCTION is in `functions.rs`).
//!
//! What they report is true of the engine: RDB saves but no AOF, no
//! replication, 16 databases.

use redis::Value as Reply;

use super::{all_specs, help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::args::is;
use crate::command::Store;
use crate::command_table::{self, KeySpec, Meta};
use crate::error::CmdError;
use crate::pubsub::Scope;
use crate::reply;
use crate::value::Value;
use crate::RedisVersion;

mod command_info;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "config",
        arity: -2,
        handler: config,
    },
    Spec {
        name: "info",
        arity: -1,
        handler: info,
    },
    Spec {
        name: "time",
        arity: 1,
        handler: time,
    },
    Spec {
        name: "command",
        arity: -1,
        handler: command,
    },
    Spec {
        name: "memory",
        arity: -2,
        handler: memory,
    },
    Spec {
        name: "wait",
        arity: 3,
        handler: wait,
    },
    Spec {
        name: "role",
        arity: 1,
        handler: role,
    },
    Spec {
        name: "lolwut",
        arity: -1,
        handler: lolwut,
    },
];

/// ROLE: a master with no replicas, at replication offset 0.
fn role(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::array(vec![
        reply::bulk("master"),
        reply::int(0),
        reply::array(Vec::new()),
    ]))
}

/// LOLWUT [VERSION version [...]]: Redis 7.0's words for the version
/// asked, ending in the version line: VERSION 5 and 6 credit the art
/// Redis draws above them (Schotter, the 8 bit skyline), which the engine
/// does not draw; any other version is the line alone. The numbers after
/// a version must be integers, as Redis reads them.
fn lolwut(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut version = None;
    if args.len() >= 3 && is(args[1], "version") {
        version = Some(crate::args::int_arg(args[2])?);
        for arg in &args[3..] {
            crate::args::int_arg(arg)?;
        }
    }
    let credit = match version {
        Some(5) => "\nGeorg Nees - schotter, plotter on paper, 1968. ",
        Some(6) => {
            "\nDedicated to the 8 bit game developers of past and present.\n\
             Original 8 bit image from Plaguemon by hikikomori. "
        }
        _ => "",
    };
    Ok(reply::verbatim(format!(
        "{credit}Redis ver. {}\n",
        ctx.store.version.as_str()
    )))
}

/// WAIT numreplicas timeout: how many replicas acknowledged this client's
/// writes. The engine has no replicas, so 0: at once when no more were
/// asked for (or inside MULTI), else after the timeout (0: until CLIENT
/// UNBLOCK), as Redis waits for replicas it does not have.
fn wait(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let wanted = crate::args::int_arg(args[1])?;
    let timeout = crate::command::blocking::parse_timeout_ms(
        args[2],
        crate::command::blocking::deadline_base(ctx),
    )?;
    if wanted <= 0 {
        return Ok(reply::int(0));
    }
    crate::command::blocking::block_until_timeout(ctx, timeout, reply::int(0))
}

// ---------------------------------------------------------------------------
// CONFIG
// ---------------------------------------------------------------------------

/// CONFIG's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const CONFIG_SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "get",
        arity: -3,
        handler: config_get,
    },
    Sub {
        name: "set",
        arity: -4,
        handler: config_set,
    },
    Sub {
        name: "resetstat",
        arity: 2,
        handler: config_resetstat,
    },
    Sub {
        name: "rewrite",
        arity: 2,
        handler: config_rewrite,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: config_help,
    },
];

fn config(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, CONFIG_SUBCOMMANDS)
}

fn config_get(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let found = ctx.store.config.get_matching(&args[2..]);
    Ok(reply::map(
        found
            .into_iter()
            .map(|(name, value)| (reply::bulk(name), reply::bulk(value)))
            .collect(),
    ))
}

fn config_set(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ctx.store.set_config(&args[2..])?;
    ctx.store.aof_follow_config(ctx.now)?;
    Ok(reply::ok())
}

/// Resets what INFO's stats count.
fn config_resetstat(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    ctx.store.commands_processed = 0;
    ctx.store.command_stats.clear();
    ctx.store.latency.reset_histograms();
    for ks in &mut ctx.store.dbs {
        ks.expired_count = 0;
        ks.evicted_count = 0;
        ks.expired_fields_count = 0;
    }
    Ok(reply::ok())
}

/// The engine is never started from a configuration file.
fn config_rewrite(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Err(CmdError::err("The server is running without a config file"))
}

fn config_help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "config",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    ))
}

// ---------------------------------------------------------------------------
// TIME
// ---------------------------------------------------------------------------

/// TIME: Unix seconds and the microseconds within, as two bulk strings.
/// The engine's clock counts milliseconds.
fn time(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let (secs, ms) = (ctx.now.div_euclid(1000), ctx.now.rem_euclid(1000));
    Ok(reply::array(vec![
        reply::bulk(secs.to_string()),
        reply::bulk((ms * 1000).to_string()),
    ]))
}

// ---------------------------------------------------------------------------
// COMMAND
// ---------------------------------------------------------------------------

/// COMMAND's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const COMMAND_SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "count",
        arity: 2,
        handler: command_count,
    },
    Sub {
        name: "list",
        arity: -2,
        handler: command_list,
    },
    Sub {
        name: "info",
        arity: -2,
        handler: command_info,
    },
    Sub {
        name: "getkeys",
        arity: -4,
        handler: command_getkeys,
    },
    Sub {
        name: "getkeysandflags",
        arity: -4,
        handler: command_getkeysandflags,
    },
    Sub {
        name: "docs",
        arity: -2,
        handler: command_docs,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: command_help,
    },
];

/// COMMAND [COUNT | LIST | INFO name... | GETKEYS command arg... | DOCS
/// name...]. INFO describes the engine's commands as Redis 7.0.15 does
/// (flags, key positions, key specs, ACL categories, subcommands: see
/// `meta`); DOCS gives Redis's documentation of them (`command_table::docs`).
fn command(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() == 1 {
        let version = ctx.store.version;
        let infos = all_specs(version).map(|spec| spec_info(spec, version));
        return Ok(reply::array(infos.collect()));
    }
    run_subcommand(ctx, args, COMMAND_SUBCOMMANDS)
}

fn command_help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "command",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    ))
}

fn command_count(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::int(all_specs(ctx.store.version).count()))
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]`:
/// the engine's commands, each followed by its subcommands (`config|get`),
/// as Redis lists them, kept to those the filter matches (no module
/// exists here: MODULE matches nothing, as an unknown category does).
fn command_list(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let version = ctx.store.version;
    enum Filter<'a> {
        None,
        Module,
        AclCat(String),
        Pattern(&'a [u8]),
    }
    let filter = match &args[2..] {
        [] => Filter::None,
        [by, kind, arg] if is(by, "filterby") => match () {
            _ if is(kind, "module") => Filter::Module,
            _ if is(kind, "aclcat") => Filter::AclCat(format!("@{}", String::from_utf8_lossy(arg))),
            _ if is(kind, "pattern") => Filter::Pattern(arg),
            _ => return Err(CmdError::Syntax),
        },
        _ => return Err(CmdError::Syntax),
    };
    let keep = |meta: Option<&Meta>, name: &str| match &filter {
        Filter::None => true,
        Filter::Module => false,
        Filter::AclCat(cat) => {
            meta.is_some_and(|m| m.acl.iter().any(|c| c.eq_ignore_ascii_case(cat)))
        }
        Filter::Pattern(glob) => crate::glob::glob_match(glob, name.as_bytes(), true),
    };
    let mut names = Vec::new();
    for spec in all_specs(version) {
        let meta = command_table::meta(spec.name).map(|m| command_table::as_of(m, version));
        if keep(meta, spec.name) {
            names.push(spec.name);
        }
        for sub in meta.map_or(&[][..], |m| m.subcommands) {
            let sub_meta = command_table::meta(sub).map(|m| command_table::as_of(m, version));
            if super::serves_subcommand(sub, version) && keep(sub_meta, sub) {
                names.push(sub);
            }
        }
    }
    Ok(reply::bulks(names))
}

/// One entry of COMMAND / COMMAND INFO, as Redis describes the command.
fn spec_info(spec: &Spec, version: RedisVersion) -> Reply {
    command_table::meta(spec.name).map_or_else(reply::nil, |meta| {
        command_table::as_of(meta, version).info(version)
    })
}

/// COMMAND GETKEYS: the keys of a command line, found as Redis finds them.
fn command_getkeys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let argv = &args[2..];
    let keys = keys_of_line(argv, ctx.store.version)?;
    Ok(reply::array(
        keys.into_iter()
            .map(|(i, _)| reply::bulk(argv[i]))
            .collect(),
    ))
}

/// COMMAND GETKEYSANDFLAGS: each key of a command line with how the
/// command uses it (its key spec's flags; for SET and BITFIELD, whose
/// flags depend on the arguments, what Redis's `setGetKeys` and
/// `bitfieldGetKeys` say).
fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let argv = &args[2..];
    let keys = keys_of_line(argv, ctx.store.version)?;
    let name = argv[0];
    let items = keys.into_iter().map(|(i, spec)| {
        let flags: Vec<&str> = if name.eq_ignore_ascii_case(b"set") {
            set_key_flags(argv).to_vec()
        } else if name.eq_ignore_ascii_case(b"bitfield") {
            bitfield_key_flags(argv).to_vec()
        } else {
            // A spec's "incomplete" says the callback found the rest.
            (spec.flags.iter().copied())
                .filter(|f| *f != "incomplete")
                .collect()
        };
        reply::array(vec![
            reply::bulk(argv[i]),
            reply::array(flags.into_iter().map(reply::simple).collect()),
        ])
    });
    Ok(reply::array(items.collect()))
}

/// The keys of the command line `argv` (its name first), with the spec
/// each was found by; Redis's errors for a line that has none.
fn keys_of_line(
    argv: &[&[u8]],
    version: RedisVersion,
) -> Result<Vec<(usize, &'static KeySpec)>, CmdError> {
    let Some(meta) = command_table::of_line(argv).filter(|m| command_table::serves(m, version))
    else {
        return Err(CmdError::err("Invalid command specified"));
    };
    let meta = command_table::as_of(meta, version);
    if meta.keys.is_empty() {
        return Err(CmdError::err("The command has no key arguments"));
    }
    if !super::arity_ok(meta.arity, argv.len()) {
        return Err(CmdError::err(
            "Invalid number of arguments specified for command",
        ));
    }
    match meta.key_refs(argv) {
        Some(keys) if !keys.is_empty() => Ok(keys),
        _ if meta.has_flag("no_mandatory_keys") => Ok(Vec::new()),
        _ => Err(CmdError::err("Invalid arguments specified for command")),
    }
}

/// SET's key: read and written with GET among its options, else
/// overwritten (`setGetKeys`).
fn set_key_flags(argv: &[&[u8]]) -> &'static [&'static str] {
    if argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
        &["RW", "access", "update"]
    } else {
        &["OW", "update"]
    }
}

/// BITFIELD's key: read only if every operation is a GET
/// (`bitfieldGetKeys`; a syntax error counts as a write).
fn bitfield_key_flags(argv: &[&[u8]]) -> &'static [&'static str] {
    let mut i = 2;
    while i < argv.len() {
        let left = argv.len() - i - 1;
        let arg = argv[i];
        if arg.eq_ignore_ascii_case(b"get") && left >= 2 {
            i += 2;
        } else if arg.eq_ignore_ascii_case(b"overflow") && left >= 1 {
            i += 1;
        } else {
            // SET, INCRBY, or a syntax error.
            return &["RW", "access", "update"];
        }
        i += 1;
    }
    &["RO", "access"]
}

fn command_info(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let version = ctx.store.version;
    if args.len() == 2 {
        let infos = all_specs(version).map(|spec| spec_info(spec, version));
        return Ok(reply::array(infos.collect()));
    }
    Ok(reply::array(
        args[2..]
            .iter()
            .map(|name| named_info(name, version).unwrap_or_else(reply::nil))
            .collect(),
    ))
}

/// COMMAND INFO of one name: a command of the engine's, or a subcommand
/// (`config|get`) of one of its containers.
fn named_info(name: &[u8], version: RedisVersion) -> Option<Reply> {
    if let Some(spec) = super::lookup_in(name, version) {
        return Some(spec_info(spec, version));
    }
    let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    let (container, _) = name.split_once('|')?;
    super::lookup_in(container.as_bytes(), version)?;
    command_table::meta(&name)
        .filter(|meta| super::serves_subcommand(meta.name, version))
        .map(|meta| command_table::as_of(meta, version).info(version))
}

/// COMMAND DOCS [name ...]: Redis 7.0.15's documentation of the engine's
/// commands (all of them, or those named; a subcommand as `config|get`),
/// each container with the subcommands the engine serves; names the
/// engine does not serve are skipped.
fn command_docs(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let version = ctx.store.version;
    let names: Vec<String> = if args.len() == 2 {
        all_specs(version)
            .map(|spec| spec.name.to_string())
            .collect()
    } else {
        args[2..]
            .iter()
            .map(|name| String::from_utf8_lossy(name).to_ascii_lowercase())
            .collect()
    };
    let served = |name: &str| match name.split_once('|') {
        None => super::lookup_in(name.as_bytes(), version).is_some(),
        Some(_) => super::serves_subcommand(name, version),
    };
    let docs = names.iter().filter(|name| served(name)).filter_map(|name| {
        let doc =
            command_table::docs::doc(name, version, |sub| super::serves_subcommand(sub, version))?;
        Some((reply::bulk(name.as_str()), doc))
    });
    Ok(reply::map(docs.collect()))
}

// ---------------------------------------------------------------------------
// INFO
// ---------------------------------------------------------------------------

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

/// An estimate of the bytes a key and its value take: the bytes of the
/// key and of every element, plus Redis-like overheads (a 24-byte dict
/// entry and a 16-byte object header per key, 16 bytes per element). The
/// engine has no allocator to ask, so this is an estimate, not Redis's
/// `objectComputeSize`.
pub(crate) fn key_size(key: &[u8], v: &Value) -> usize {
    const PER_KEY: usize = 24 + 16;
    const PER_ELEMENT: usize = 16;
    let value = match v {
        Value::Str(s) => s.len(),
        Value::List(l) => l.iter().map(|e| e.len() + PER_ELEMENT).sum(),
        Value::Set(s) => s.iter().map(|e| e.len() + PER_ELEMENT).sum(),
        Value::Hash(h) => h.iter().map(|(f, v)| f.len() + v.len() + PER_ELEMENT).sum(),
        Value::ZSet(z) => z.iter().map(|(m, _)| m.len() + 8 + PER_ELEMENT).sum(),
        Value::Stream(s) => s.data_bytes(),
    };
    // Keys and small strings are rounded up to the allocator's 8 bytes.
    PER_KEY + (key.len() + 4).next_multiple_of(8) + value.next_multiple_of(8)
}

/// The estimated memory of all the data (see [`key_size`]). A walk over
/// every key: INFO is not a hot command.
pub(crate) fn used_memory(store: &crate::command::Store) -> u64 {
    used_memory_of(&store.dbs)
}

/// [`used_memory`] of the databases `dbs`.
pub(crate) fn used_memory_of(dbs: &[crate::keyspace::Keyspace]) -> u64 {
    let data: usize = dbs.iter().map(|ks| ks.sizes(key_size)).sum();
    (BASELINE + data) as u64
}

/// What an empty Redis reports as allocated, so an empty engine looks
/// like one ([`used_memory`]'s baseline, MEMORY STATS' `startup.allocated`).
const BASELINE: usize = 870_000;

/// MEMORY USAGE key [SAMPLES count] | STATS | DOCTOR | MALLOC-STATS |
/// PURGE | HELP. USAGE reports the estimate of [`key_size`]; like Redis it
/// looks at the stored key even if its time has passed, and reads every
/// element whatever SAMPLES says.
fn memory(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, MEMORY_SUBCOMMANDS)
}

/// MEMORY's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const MEMORY_SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "doctor",
        arity: 2,
        handler: memory_doctor,
    },
    Sub {
        name: "malloc-stats",
        arity: 2,
        handler: memory_malloc_stats,
    },
    Sub {
        name: "purge",
        arity: 2,
        handler: memory_purge,
    },
    Sub {
        name: "stats",
        arity: 2,
        handler: memory_stats,
    },
    Sub {
        name: "usage",
        arity: -3,
        handler: memory_usage,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: memory_help,
    },
];

/// MEMORY STATS: Redis's fields, names and types, in its order; the
/// values are the engine's estimates ([`key_size`], [`BASELINE`]), and
/// what it does not have (replication, AOF, an allocator to ask) reads as
/// none. A `db.N` entry for each database with keys, as Redis lists them.
fn memory_stats(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let store = &*ctx.store;
    let total = used_memory(store);
    let startup = BASELINE as u64;
    // A dictionary entry per key, and per key with a TTL.
    const ENTRY: usize = 24;
    let field = |name: &str, value: Reply| (reply::bulk(name), value);
    let mut fields = vec![
        field("peak.allocated", reply::int(total)),
        field("total.allocated", reply::int(total)),
        field("startup.allocated", reply::int(startup)),
        field("replication.backlog", reply::int(0)),
        field("clients.slaves", reply::int(0)),
        field("clients.normal", reply::int(0)),
        field("cluster.links", reply::int(0)),
        field("aof.buffer", reply::int(0)),
        field("lua.caches", reply::int(0)),
        field("functions.caches", reply::int(0)),
    ];
    let mut overhead = BASELINE;
    let mut keys = 0;
    for (i, ks) in store.dbs.iter().enumerate().filter(|(_, ks)| ks.len() > 0) {
        let main = ks.len() * ENTRY;
        let expires = ks.expiring_len() * ENTRY;
        overhead += main + expires;
        keys += ks.len();
        fields.push(field(
            &format!("db.{i}"),
            reply::map(vec![
                field("overhead.hashtable.main", reply::int(main)),
                field("overhead.hashtable.expires", reply::int(expires)),
                field("overhead.hashtable.slot-to-keys", reply::int(0)),
            ]),
        ));
    }
    let overhead = overhead as u64;
    let net = total.saturating_sub(startup);
    let dataset = total.saturating_sub(overhead);
    let percent = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    };
    fields.extend([
        field("overhead.total", reply::int(overhead)),
        field("keys.count", reply::int(keys)),
        field(
            "keys.bytes-per-key",
            reply::int(if keys == 0 { 0 } else { net / keys as u64 }),
        ),
        field("dataset.bytes", reply::int(dataset)),
        field("dataset.percentage", reply::double(percent(dataset, net))),
        field("peak.percentage", reply::double(percent(total, total))),
        field("allocator.allocated", reply::int(total)),
        field("allocator.active", reply::int(total)),
        field("allocator.resident", reply::int(total)),
        field("allocator-fragmentation.ratio", reply::double(1.0)),
        field("allocator-fragmentation.bytes", reply::int(0)),
        field("allocator-rss.ratio", reply::double(1.0)),
        field("allocator-rss.bytes", reply::int(0)),
        field("rss-overhead.ratio", reply::double(1.0)),
        field("rss-overhead.bytes", reply::int(0)),
        field("fragmentation", reply::double(1.0)),
        field("fragmentation.bytes", reply::int(0)),
    ]);
    Ok(reply::map(fields))
}

/// MEMORY DOCTOR: Redis's report, which for an instance under 5 MB is its
/// "too little memory" text; above, the engine has no fragmentation,
/// peaks or big buffers to report, so Redis's "no issue" text.
fn memory_doctor(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let text = if used_memory(ctx.store) < 5 * 1024 * 1024 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector \
         can't be used in these conditions. Please, leave for your mission on Earth and fill \
         it with some data. The new Sam and I will be back to our programming as soon as I \
         finished rebooting.\n"
    } else {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for \
         what occurs on this base.\n"
    };
    Ok(reply::verbatim(text))
}

/// MEMORY MALLOC-STATS: Redis's reply when built without jemalloc (INFO's
/// `mem_allocator` is the engine's own).
fn memory_malloc_stats(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::bulk("Stats not supported for the current allocator"))
}

/// MEMORY PURGE: nothing to give back, as Redis without jemalloc.
fn memory_purge(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::ok())
}

fn memory_usage(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut j = 3;
    while let Some(&opt) = args.get(j) {
        if is(opt, "samples") && j + 1 < args.len() {
            if crate::args::int_arg(args[j + 1])? < 0 {
                return Err(CmdError::Syntax);
            }
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let key = args[2];
    Ok(ctx
        .ks()
        .stored(key)
        .map_or_else(reply::nil, |e| reply::int(key_size(key, &e.value))))
}

fn memory_help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "memory",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    ))
}

/// Redis's `bytesToHuman`: `B`, `K`, `M`, `G`... with two decimals.
fn human_bytes(n: u64) -> String {
    let d = n as f64;
    const UNITS: &[(f64, &str)] = &[
        (1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0, "P"),
        (1024.0 * 1024.0 * 1024.0 * 1024.0, "T"),
        (1024.0 * 1024.0 * 1024.0, "G"),
        (1024.0 * 1024.0, "M"),
        (1024.0, "K"),
    ];
    if n < 1024 {
        return format!("{n}B");
    }
    for &(size, unit) in UNITS {
        if d >= size {
            return format!("{:.2}{unit}", d / size);
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    //! Every expected reply below was observed on redis-server 7.0.15.

    use redis::Value;

    use crate::command::test_util::*;

    #[test]
    fn memory_usage_replies() {
        let mut c = conn();
        run(&mut c, "HSET h a b");
        assert!(matches!(run(&mut c, "MEMORY USAGE h"), Value::Int(n) if n > 0));
        assert!(matches!(run(&mut c, "MEMORY USAGE h SAMPLES 0"), Value::Int(n) if n > 0));
        assert_eq!(run(&mut c, "MEMORY USAGE nokey"), Value::Nil);
        assert_eq!(run(&mut c, "MEMORY USAGE h SAMPLES x"), err(NOT_INT));
        assert_eq!(run(&mut c, "MEMORY USAGE h SAMPLES -1"), err(SYNTAX));
        assert_eq!(run(&mut c, "MEMORY USAGE h foo"), err(SYNTAX));
        assert_eq!(
            run(&mut c, "MEMORY foo"),
            err("ERR unknown subcommand 'foo'. Try MEMORY HELP.")
        );
        assert_eq!(
            run(&mut c, "MEMORY USAGE"),
            err("ERR wrong number of arguments for 'memory|usage' command")
        );
    }

    fn set_failed(arg: &str, why: &str) -> Value {
        err(&format!(
            "ERR CONFIG SET failed (possibly related to argument '{arg}') - {why}"
        ))
    }

    #[test]
    fn config_set_errors() {
        let mut c = conn();
        assert_eq!(
            run(&mut c, "CONFIG SET maxmemory bla"),
            set_failed("maxmemory", "argument must be a memory value")
        );
        assert_eq!(
            run(&mut c, "CONFIG SET nosuch 1"),
            err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")
        );
        assert_eq!(
            run(&mut c, "CONFIG SET hash-max-listpack-entries -1"),
            set_failed(
                "hash-max-listpack-entries",
                "argument must be between 0 and 9223372036854775807 inclusive"
            )
        );
        assert_eq!(
            run(&mut c, "CONFIG SET hash-max-listpack-entries abc"),
            set_failed(
                "hash-max-listpack-entries",
                "argument couldn't be parsed into an integer"
            )
        );
        assert_eq!(
            run(&mut c, "CONFIG SET appendonly maybe"),
            set_failed("appendonly", "argument must be 'yes' or 'no'")
        );
        assert_eq!(
            run(&mut c, "CONFIG SET maxmemory-policy foo"),
            set_failed(
                "maxmemory-policy",
                "argument(s) must be one of the following: volatile-lru, volatile-lfu, \
                 volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
            )
        );
        assert_eq!(
            run(&mut c, "CONFIG SET daemonize yes"),
            set_failed("daemonize", "can't set immutable config")
        );
        assert_eq!(
            run(&mut c, "CONFIG SET dir /tmp"),
            set_failed("dir", "can't set protected config")
        );
        assert_eq!(
            run(
                &mut c,
                "CONFIG SET hash-max-listpack-entries 10 hash-max-ziplist-entries 20"
            ),
            set_failed("hash-max-ziplist-entries", "duplicate parameter")
        );
        assert_eq!(
            run(&mut c, "CONFIG SET proto-max-bulk-len 10"),
            set_failed(
                "proto-max-bulk-len",
                "argument must be between 1048576 and 9223372036854775807 inclusive"
            )
        );
        assert_eq!(
            run(&mut c, "CONFIG SET notify-keyspace-events Q"),
            set_failed(
                "notify-keyspace-events",
                "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
            )
        );
        assert_eq!(
            run_args(&mut c, &["CONFIG", "SET", "save", "10 1 20"]),
            set_failed("save", "Invalid save parameters")
        );
        let arity = err("ERR wrong number of arguments for 'config|set' command");
        assert_eq!(run(&mut c, "CONFIG SET"), arity);
        assert_eq!(run(&mut c, "CONFIG SET a"), arity);
        assert_eq!(run(&mut c, "CONFIG SET a b c"), err(SYNTAX));
        // A failed CONFIG SET changes nothing, not even the valid pairs.
        assert_eq!(
            run(&mut c, "CONFIG SET lua-time-limit 10 appendonly maybe"),
            set_failed("appendonly", "argument must be 'yes' or 'no'")
        );
        assert_eq!(
            run(&mut c, "CONFIG GET lua-time-limit"),
            bulks(&["lua-time-limit", "5000"])
        );
    }

    #[test]
    fn config_set_then_get() {
        let mut c = conn();
        let ok = |c: &mut crate::Connection, line: &str| assert_eq!(run(c, line), Value::Okay);
        ok(&mut c, "CONFIG SET hash-max-ziplist-entries 10");
        assert_eq!(
            run(&mut c, "CONFIG GET hash-max-listpack-entries"),
            bulks(&["hash-max-listpack-entries", "10"])
        );
        assert_eq!(
            sorted(run(&mut c, "CONFIG GET hash-max-*")),
            [
                "10",
                "10",
                "64",
                "64",
                "hash-max-listpack-entries",
                "hash-max-listpack-value",
                "hash-max-ziplist-entries",
                "hash-max-ziplist-value"
            ]
        );
        ok(&mut c, "CONFIG SET maxmemory 1mb");
        assert_eq!(
            run(&mut c, "CONFIG GET maxmemory"),
            bulks(&["maxmemory", "1048576"])
        );
        ok(&mut c, "CONFIG SET maxmemory-clients 5%");
        assert_eq!(
            run(&mut c, "CONFIG GET maxmemory-clients"),
            bulks(&["maxmemory-clients", "5%"])
        );
        ok(&mut c, "CONFIG SET appendonly YES");
        assert_eq!(
            run(&mut c, "CONFIG GET appendonly"),
            bulks(&["appendonly", "yes"])
        );
        ok(&mut c, "CONFIG SET maxmemory-policy ALLKEYS-LFU");
        assert_eq!(
            run(&mut c, "CONFIG GET maxmemory-policy"),
            bulks(&["maxmemory-policy", "allkeys-lfu"])
        );
        ok(&mut c, "CONFIG SET notify-keyspace-events KEA");
        assert_eq!(
            run(&mut c, "CONFIG GET notify-keyspace-events"),
            bulks(&["notify-keyspace-events", "AKE"])
        );
        assert_eq!(
            run_args(&mut c, &["CONFIG", "SET", "save", "10 1"]),
            Value::Okay
        );
        assert_eq!(run(&mut c, "CONFIG GET save"), bulks(&["save", "10 1"]));
        assert_eq!(
            run_args(&mut c, &["CONFIG", "SET", "shutdown-on-sigint", "save now"]),
            Value::Okay
        );
        assert_eq!(
            run(&mut c, "CONFIG GET shutdown-on-sigint"),
            bulks(&["shutdown-on-sigint", "save now"])
        );
        ok(&mut c, "CONFIG SET list-max-ziplist-size -6");
        ok(&mut c, "CONFIG RESETSTAT");
        assert_eq!(
            run(&mut c, "CONFIG RESETSTAT x"),
            err("ERR wrong number of arguments for 'config|resetstat' command")
        );
        assert_eq!(
            run(&mut c, "CONFIG REWRITE"),
            err("ERR The server is running without a config file")
        );
        assert_eq!(
            run(&mut c, "CONFIG GET"),
            err("ERR wrong number of arguments for 'config|get' command")
        );
    }

    #[test]
    fn time_and_info() {
        let (_clock, mut c) = clocked(1_700_000_000_123);
        assert_eq!(run(&mut c, "TIME"), bulks(&["1700000000", "123000"]));
        assert_eq!(
            run(&mut c, "TIME x"),
            err("ERR wrong number of arguments for 'time' command")
        );
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
                "\r\n# Errorstats\r\nerrorstat_ERR:count=2\r\nerrorstat_WRONGTYPE:count=1\r\n"
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

    /// Every command the engine runs is in the command table, with its
    /// arity as the latest version gives it (a handler checks an older
    /// version's narrower one: ZRANK's WITHSCORE came with 7.2).
    #[test]
    fn every_engine_command_is_described() {
        for spec in crate::command::all_specs(crate::RedisVersion::V7_0) {
            let meta = crate::command_table::meta(spec.name)
                .unwrap_or_else(|| panic!("{} is not in the table", spec.name));
            let latest = crate::command_table::as_of(meta, crate::RedisVersion::V7_4);
            assert_eq!(latest.arity, spec.arity, "{}", spec.name);
        }
    }

    /// COMMAND INFO lists of a container exactly the subcommands the
    /// engine serves: each one it lists runs (an arity or argument error,
    /// never "unknown subcommand"), and each one the engine serves is one
    /// of Redis's. CLIENT's RESP-only subcommands are the RESP server's
    /// (checked over RESP by the suite).
    #[test]
    fn command_info_lists_exactly_the_served_subcommands() {
        for name in crate::command::served_names() {
            assert!(
                crate::command_table::meta(&name).is_some(),
                "{name} is not one of Redis's subcommands"
            );
        }
        let e = crate::Engine::new();
        let mut c = e.connection();
        for spec in crate::command::all_specs(crate::RedisVersion::V7_0) {
            let Some(meta) = crate::command_table::meta(spec.name) else {
                continue;
            };
            let Value::Array(info) = c.execute(&[b"COMMAND", b"INFO", spec.name.as_bytes()]) else {
                panic!("COMMAND INFO {} is not an array", spec.name);
            };
            let Some(Value::Array(entry)) = info.first() else {
                panic!("COMMAND INFO {} has no entry", spec.name);
            };
            let listed: Vec<String> = match entry.get(9) {
                Some(Value::Array(subs)) => subs
                    .iter()
                    .filter_map(|sub| match sub {
                        Value::Array(fields) => match fields.first() {
                            Some(Value::BulkString(name)) => {
                                Some(String::from_utf8_lossy(name).into_owned())
                            }
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let served: Vec<&str> = meta
                .subcommands
                .iter()
                .copied()
                .filter(|sub| crate::command::serves_subcommand(sub, crate::RedisVersion::V7_0))
                .collect();
            assert_eq!(listed, served, "{}", spec.name);
            if spec.name == "client" {
                continue;
            }
            for sub in listed {
                let word = sub.split('|').nth(1).unwrap_or_default();
                let reply = c.execute(&[spec.name.as_bytes(), word.as_bytes()]);
                if let Value::ServerError(e) = &reply {
                    let text = e.details().unwrap_or_default();
                    assert!(!text.contains("unknown subcommand"), "{sub}: {text}");
                }
            }
        }
        let listed_client = c.execute(&[b"COMMAND", b"INFO", b"CLIENT"]);
        let text = format!("{listed_client:?}");
        assert!(text.contains("client|tracking") && text.contains("client|pause"));
        assert_eq!(
            c.execute(&[b"COMMAND", b"COUNT"]),
            Value::Int(crate::command::all_specs(crate::RedisVersion::V7_0).count() as i64)
        );
    }
}
