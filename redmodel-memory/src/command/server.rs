//! Server commands: CONFIG, TIME, COMMAND, ROLE, WAIT, LOLWUT, with
//! Redis 7.0.15's replies and error texts (INFO is in `info.rs`, MEMORY
//! in `memory.rs`, FUNCTION in `functions.rs`).
//!
//! What they report is true of the engine: RDB saves but no AOF, no
//! replication, 16 databases.

use redis::Value as Reply;

use super::{all_specs, help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::args::is;
use crate::command_table::{self, KeySpec, Meta};
use crate::error::CmdError;
use crate::reply;
use crate::RedisVersion;

mod command_info;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "config",
        arity: -2,
        handler: config,
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
    ctx.store.ops_rate = Default::default();
    ctx.store.net.reset();
    ctx.store.net_input_rate = Default::default();
    ctx.store.net_output_rate = Default::default();
    ctx.store.lazyfreed_objects = 0;
    ctx.store.acl.log.reset_stats();
    ctx.store.command_stats.clear();
    ctx.store.latency.reset_histograms();
    for ks in &mut ctx.store.dbs {
        ks.expired_count = 0;
        ks.evicted_count = 0;
        ks.lazyfreed_count = 0;
        ks.hits = 0;
        ks.misses = 0;
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

#[cfg(test)]
mod tests {
    //! Every expected reply below was observed on redis-server 7.0.15.

    use redis::Value;

    use crate::command::test_util::*;

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
    fn time_replies() {
        let (_clock, mut c) = clocked(1_700_000_000_123);
        assert_eq!(run(&mut c, "TIME"), bulks(&["1700000000", "123000"]));
        assert_eq!(
            run(&mut c, "TIME x"),
            err("ERR wrong number of arguments for 'time' command")
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
