//! Connection and server commands: PING ECHO SELECT DBSIZE FLUSHDB FLUSHALL,
//! and what clients send when they connect: AUTH, CLIENT, HELLO (CONFIG
//! lives in `server.rs`).
//!
//! CLIENT and HELLO read and change state of the connection itself (its
//! id, its name, its protocol), which a command of the table cannot reach:
//! the RESP server answers them with the connection's state (`resp::client`),
//! and the in-process `Connection` answers HELLO ([`hello_as`], shared by both).
//! Their table entries exist so that MULTI queues them as Redis does and
//! so that a client without a connection of its own (CLIENT on the
//! in-process `Connection`, either inside a transaction) gets an error
//! that says so instead of "unknown command".
//!
//! What we answer is true of the engine: no password (the default user
//! has none, like a fresh redis-server), no persistence (`save ""`,
//! `appendonly no`), 16 databases. A subcommand we do not implement gets
//! Redis's own "unknown subcommand" error.

use super::shared::database::db_index;
use super::{arity_error, CmdResult, Ctx, Spec};
use crate::args::int32_arg;
use crate::args::{is, parse_i64};
use crate::error::CmdError;
use crate::reply;
use redis::Value as Reply;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "ping",
        arity: -1,
        handler: ping,
    },
    Spec {
        name: "echo",
        arity: 2,
        handler: echo,
    },
    Spec {
        name: "select",
        arity: 2,
        handler: select,
    },
    Spec {
        name: "dbsize",
        arity: 1,
        handler: dbsize,
    },
    Spec {
        name: "flushdb",
        arity: -1,
        handler: flushdb,
    },
    Spec {
        name: "flushall",
        arity: -1,
        handler: flushall,
    },
    Spec {
        name: "auth",
        arity: -2,
        handler: auth,
    },
    Spec {
        name: "client",
        arity: -2,
        handler: client,
    },
    Spec {
        name: "hello",
        arity: -1,
        handler: needs_connection,
    },
    Spec {
        name: "monitor",
        arity: 1,
        handler: monitor,
    },
];

/// MONITOR where it cannot stream: queued in MULTI and run by EXEC, or
/// sent on the in-process `Connection` (whose monitor is
/// `Engine::monitor`). A RESP connection's own MONITOR is the server's
/// (`resp`).
fn monitor(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Err(CmdError::err(
        "MONITOR isn't allowed for DENY BLOCKING client",
    ))
}

fn ping(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        1 => Ok(reply::simple("PONG")),
        2 => Ok(reply::bulk(args[1])),
        _ => Err(arity_error(args)),
    }
}

fn echo(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::bulk(args[1]))
}

fn select(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if ctx.store.cluster_enabled && int32_arg(args[1], None)? != 0 {
        return Err(CmdError::err("SELECT is not allowed in cluster mode"));
    }
    ctx.db = db_index(args[1])?;
    Ok(reply::ok())
}

fn dbsize(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.ks().len()))
}

/// FLUSHDB and FLUSHALL take an optional ASYNC or SYNC; both are immediate
/// here (only what INFO counts differs).
fn check_flush_args(args: &[&[u8]]) -> Result<(), CmdError> {
    match args.len() {
        1 => Ok(()),
        2 if is(args[1], "async") || is(args[1], "sync") => Ok(()),
        _ => Err(CmdError::Syntax),
    }
}

fn flushdb(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    check_flush_args(args)?;
    let now = ctx.now;
    let lazy = flush_is_lazy(ctx, args);
    let ks = ctx.ks();
    ks.lazyfreed_count += if lazy { ks.len() as u64 } else { 0 };
    ks.clear(now);
    ctx.store.tracking_flushed();
    Ok(reply::ok())
}

/// Whether FLUSHDB or FLUSHALL runs lazily, its keys counted as freed in
/// the background (see [`crate::lazyfree`]): ASYNC, or no mode under
/// `lazyfree-lazy-user-flush`; from Redis 7.4 on, SYNC too (run as an
/// ASYNC the client waits for) unless in a transaction or a script.
fn flush_is_lazy(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> bool {
    let limits = *ctx.ks().limits();
    let waits_instead = ctx.store.version >= crate::RedisVersion::V7_4
        && !ctx.store.acl.caller.in_multi
        && !ctx.store.in_script;
    waits_instead || crate::lazyfree::flush_is_lazy(args.get(1).copied(), &limits)
}

/// FLUSHALL: empties every database and stops a running BGSAVE; with
/// `save` points configured it then saves the empty dataset, as Redis
/// does (`flushAllDataAndResetRDB`), so the changes since the last save
/// start again from 0. A failed save is not FLUSHALL's error.
fn flushall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    check_flush_args(args)?;
    let now = ctx.now;
    let lazy = flush_is_lazy(ctx, args);
    for ks in &mut ctx.store.dbs {
        ks.lazyfreed_count += if lazy { ks.len() as u64 } else { 0 };
        ks.clear(now);
    }
    ctx.store.cancel_bgsave();
    if !ctx.store.config.get("save").is_empty() {
        let _ = ctx.store.save(ctx.now);
    }
    ctx.store.tracking_flushed();
    Ok(reply::ok())
}

/// `unknown subcommand 'x'. Try CONFIG HELP.`, as Redis words it.
pub(crate) fn unknown_subcommand(container: &str, sub: &[u8]) -> CmdError {
    let sub = String::from_utf8_lossy(sub);
    let sub: String = sub.chars().take(128).collect();
    CmdError::err(format!(
        "unknown subcommand '{sub}'. Try {} HELP.",
        container.to_ascii_uppercase()
    ))
}

/// The arity error of a subcommand: `'config|get'`.
pub(crate) fn subcommand_arity(container: &str, sub: &str) -> CmdError {
    CmdError::err(format!(
        "wrong number of arguments for '{container}|{sub}' command"
    ))
}

/// `AUTH [username] password` (the ACL family's).
fn auth(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    super::acl::auth(ctx, args)
}

/// HELLO's logins: `Some((user, password))` tries one; `None` asks
/// whether the client is authenticated.
pub(crate) type Login<'a> = &'a mut dyn FnMut(Option<(&[u8], &[u8])>) -> bool;

/// HELLO [protover [AUTH username password] [SETNAME name]], for a client
/// with its own state (a RESP server connection, the in-process
/// `Connection`): switches `resp` to 2 or 3 once every option was
/// accepted, and replies with the server's description, a map.
#[cfg(all(test, feature = "server"))]
pub(crate) fn hello(id: u64, name: &mut Option<Vec<u8>>, resp: &mut u8, args: &[&[u8]]) -> Reply {
    hello_as(
        id,
        name,
        resp,
        args,
        crate::RedisVersion::V7_0,
        &mut |login| login.is_none_or(|(user, _)| user == b"default"),
    )
}

/// HELLO for a client whose logins go through `login`.
pub(crate) fn hello_as(
    id: u64,
    name: &mut Option<Vec<u8>>,
    resp: &mut u8,
    args: &[&[u8]],
    version: crate::RedisVersion,
    login: Login<'_>,
) -> Reply {
    let result = (|| {
        let mut options = args.get(1..).unwrap_or_default();
        let mut protocol = None;
        if let [version, rest @ ..] = options {
            let version = parse_i64(version).ok_or_else(|| {
                CmdError::err("Protocol version is not an integer or out of range")
            })?;
            if version != 2 && version != 3 {
                return Err(CmdError::raw("NOPROTO unsupported protocol version"));
            }
            protocol = Some(version as u8);
            options = rest;
        }
        // Redis 7.0 applies the options one by one: a SETNAME before a
        // bad option has taken effect, and each AUTH logs in. From 7.2 on
        // every option is read first (a bad name refused then), the last
        // AUTH logs in, and the last SETNAME names the client only once
        // it is authenticated.
        let one_by_one = version < crate::RedisVersion::V7_4;
        let (mut last_login, mut last_name) = (None, None);
        loop {
            match options {
                [] => break,
                [opt, user, password, rest @ ..] if is(opt, "auth") => {
                    if one_by_one && !login(Some((user, password))) {
                        return Err(CmdError::raw(super::acl::WRONGPASS));
                    }
                    last_login = Some((*user, *password));
                    options = rest;
                }
                [opt, client_name_arg, rest @ ..] if is(opt, "setname") => {
                    if one_by_one {
                        set_client_name(name, client_name_arg)?;
                    } else {
                        set_client_name(&mut None, client_name_arg)?;
                        last_name = Some(*client_name_arg);
                    }
                    options = rest;
                }
                [opt, ..] => {
                    return Err(CmdError::err(format!(
                        "Syntax error in HELLO option '{}'",
                        String::from_utf8_lossy(opt)
                    )))
                }
            }
        }
        if let Some(pair) = last_login.filter(|_| !one_by_one) {
            if !login(Some(pair)) {
                return Err(CmdError::raw(super::acl::WRONGPASS));
            }
        }
        if !login(None) {
            let hello = if one_by_one { "HELLO" } else { "HELLO <proto>" };
            return Err(CmdError::raw(format!(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise \
                 the {hello} AUTH <user> <pass> option can be used to authenticate the client \
                 and select the RESP protocol version at the same time"
            )));
        }
        if let Some(client_name) = last_name {
            set_client_name(name, client_name)?;
        }
        // Redis switches only once every option was accepted.
        if let Some(version) = protocol {
            *resp = version;
        }
        let field = |name: &str, value: Reply| (reply::bulk(name), value);
        Ok(reply::map(
            [
                // The server and version the engine behaves as: what
                // clients and tools read to decide what they may send.
                field("server", reply::bulk("redis")),
                field("version", reply::bulk(version.as_str())),
                field("proto", reply::int(*resp)),
                field("id", reply::int(id)),
                field("mode", reply::bulk("standalone")),
                field("role", reply::bulk("master")),
                field("modules", reply::array(Vec::new())),
            ]
            .into_iter()
            .collect(),
        ))
    })();
    result.unwrap_or_else(|e| e.to_value())
}

/// Redis's `clientSetName`: printable ASCII with no spaces; empty clears.
pub(crate) fn set_client_name(slot: &mut Option<Vec<u8>>, name: &[u8]) -> Result<(), CmdError> {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(CmdError::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    *slot = (!name.is_empty()).then(|| name.to_vec());
    Ok(())
}

/// CLIENT's subcommands: those of [`client_shared`], and those a RESP
/// server connection serves with its own state (`resp::client`).
pub(crate) const CLIENT_SUBCOMMANDS: &[&str] = &[
    "help",
    "no-evict",
    "pause",
    "unpause",
    "id",
    "getname",
    "setname",
    "info",
    "list",
    "kill",
    "reply",
    "unblock",
    "tracking",
    "caching",
    "getredir",
    "trackinginfo",
    "no-touch",
    "setinfo",
];

/// CLIENT for a client without a connection of its own: the subcommands
/// of [`client_shared`], and for the others an error that says why.
fn client(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    client_shared(ctx.store, ctx.now, args).unwrap_or_else(|| needs_connection(ctx, args))
}

/// The CLIENT subcommands that need no state of the caller's connection,
/// for every client (a RESP server connection asks here first): HELP,
/// NO-EVICT, PAUSE, UNPAUSE. `None` for another subcommand.
pub(crate) fn client_shared(
    store: &mut super::Store,
    now: i64,
    args: &[&[u8]],
) -> Option<CmdResult> {
    let sub = args.get(1)?;
    let arity = |n: i32, name: &str| {
        if super::arity_ok(n, args.len()) {
            Ok(())
        } else {
            Err(subcommand_arity("client", name))
        }
    };
    let result = if is(sub, "help") {
        arity(2, "help").map(|()| CLIENT_HELP.reply(store.version, "client"))
    } else if is(sub, "no-evict") {
        // No client is ever evicted here: the flag changes nothing.
        arity(3, "no-evict").and_then(|()| {
            if is(args[2], "on") || is(args[2], "off") {
                Ok(reply::ok())
            } else {
                Err(CmdError::Syntax)
            }
        })
    } else if is(sub, "pause") {
        arity(-3, "pause").and_then(|()| client_pause(store, now, args))
    } else if is(sub, "unpause") {
        arity(2, "unpause").map(|()| {
            store.unpause_clients();
            reply::ok()
        })
    } else if is(sub, "no-touch") && store.version >= crate::RedisVersion::V7_4 {
        // Redis 7.4: the client's reads leave the keys' access times; the
        // engine accepts the flag as Redis answers it.
        arity(3, "no-touch").and_then(|()| {
            if is(args[2], "on") || is(args[2], "off") {
                Ok(reply::ok())
            } else {
                Err(CmdError::Syntax)
            }
        })
    } else if is(sub, "setinfo") && store.version >= crate::RedisVersion::V7_4 {
        arity(4, "setinfo").and_then(|()| client_setinfo(args[2], args[3]))
    } else {
        return None;
    };
    Some(result)
}

/// CLIENT SETINFO LIB-NAME | LIB-VER value (Redis 7.4), with Redis's
/// checks of the value: printable ASCII without spaces.
fn client_setinfo(attr: &[u8], value: &[u8]) -> CmdResult {
    let name = if is(attr, "lib-name") {
        "lib-name"
    } else if is(attr, "lib-ver") {
        "lib-ver"
    } else {
        return Err(CmdError::err(format!(
            "Unrecognized option '{}'",
            String::from_utf8_lossy(attr)
        )));
    };
    if value.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::err(format!(
            "{name} cannot contain spaces, newlines or special characters."
        )));
    }
    Ok(reply::ok())
}

/// CLIENT PAUSE timeout [WRITE|ALL], with Redis's errors.
fn client_pause(store: &mut super::Store, now: i64, args: &[&[u8]]) -> CmdResult {
    use super::pause::Mode;
    let mode = match args {
        [_, _, _] => Mode::All,
        [_, _, _, mode] if is(mode, "write") => Mode::Write,
        [_, _, _, mode] if is(mode, "all") => Mode::All,
        [_, _, _, _] => {
            return Err(CmdError::err("CLIENT PAUSE mode must be WRITE or ALL"));
        }
        _ => {
            return Err(CmdError::err(format!(
                "unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(args[1])
            )))
        }
    };
    let timeout = parse_i64(args[2])
        .ok_or_else(|| CmdError::err("timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(CmdError::err("timeout is negative"));
    }
    store.pause_clients(now.saturating_add(timeout), mode);
    Ok(reply::ok())
}

/// CLIENT HELP, each version's.
const CLIENT_HELP: super::HelpText = super::HelpText {
    v7_0: CLIENT_HELP_7_0,
    v7_4: CLIENT_HELP_7_4,
};

/// Redis 7.0.15's CLIENT HELP, every subcommand of its CLIENT.
const CLIENT_HELP_7_0: &[&str] = &[
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
];

/// Redis 7.4.1's CLIENT HELP, every subcommand of its CLIENT (KILL ID and
/// MAXAGE, SETINFO and NO-TOUCH join 7.0's).
const CLIENT_HELP_7_4: &[&str] = &[
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
];

/// CLIENT and HELLO outside a RESP server connection (see the module doc).
fn needs_connection(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[0]).to_ascii_uppercase();
    Err(CmdError::err(format!(
        "{name} is only served on a RESP server connection of the memory engine, outside MULTI"
    )))
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::error::error_value;
    use crate::Engine;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn err(s: &str) -> Value {
        error_value(s)
    }

    /// RESET (replies from redis-server 7.0.15): run at once inside MULTI,
    /// it discards the transaction and the WATCHes, selects database 0 and
    /// goes back to RESP2.
    #[test]
    fn reset_clears_the_connection_state() {
        let e = Engine::new();
        let mut c = e.connection();
        let mut other = e.connection();
        let run = |c: &mut crate::Connection, line: &str| {
            let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            c.execute(&args)
        };
        let reset = Value::SimpleString("RESET".into());
        run(&mut c, "HELLO 3");
        run(&mut c, "WATCH k");
        run(&mut c, "SELECT 2");
        run(&mut c, "MULTI");
        run(&mut c, "SET k 1");
        assert_eq!(run(&mut c, "RESET"), reset);
        assert_eq!(run(&mut c, "EXEC"), err("ERR EXEC without MULTI"));
        assert_eq!(c.db(), 0);
        run(&mut c, "HSET h a 1");
        assert_eq!(
            run(&mut c, "HGETALL h"),
            Value::Array(vec![bulk("a"), bulk("1")])
        );
        // The WATCH is gone too: another client's write does not abort.
        run(&mut c, "MULTI");
        run(&mut other, "SET k 2");
        assert_eq!(run(&mut c, "EXEC"), Value::Array(vec![]));
        assert_eq!(
            run(&mut c, "RESET x"),
            err("ERR wrong number of arguments for 'reset' command")
        );
    }

    /// HELLO on the in-process connection: RESP3 replies keep their
    /// types (as redis-server 7.0.15 sends them after `HELLO 3`), HELLO 2
    /// goes back to RESP2 shapes; inside MULTI HELLO is queued and fails.
    #[test]
    fn hello_switches_the_in_process_connection() {
        let e = Engine::new();
        let mut c = e.connection();
        let run = |c: &mut crate::Connection, line: &str| {
            let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            c.execute(&args)
        };
        run(&mut c, "HSET h a 1");
        run(&mut c, "ZADD z 0.1 m");
        assert_eq!(
            run(&mut c, "HGETALL h"),
            Value::Array(vec![bulk("a"), bulk("1")])
        );
        assert_eq!(run(&mut c, "ZSCORE z m"), bulk("0.10000000000000001"));
        let Value::Map(hello) = run(&mut c, "HELLO 3") else {
            panic!("HELLO 3 did not reply with a map");
        };
        assert_eq!(hello[2], (bulk("proto"), Value::Int(3)));
        assert_eq!(
            run(&mut c, "HGETALL h"),
            Value::Map(vec![(bulk("a"), bulk("1"))])
        );
        assert_eq!(run(&mut c, "ZSCORE z m"), Value::Double(0.1));
        assert_eq!(
            run(&mut c, "ZRANGE z 0 -1 WITHSCORES"),
            Value::Array(vec![Value::Array(vec![bulk("m"), Value::Double(0.1)])])
        );
        assert_eq!(run(&mut c, "SMEMBERS nokey"), Value::Set(vec![]));
        assert_eq!(
            run(&mut c, "HELLO 4"),
            err("NOPROTO unsupported protocol version")
        );
        assert_eq!(run(&mut c, "MULTI"), Value::Okay);
        assert_eq!(run(&mut c, "HELLO 2"), Value::SimpleString("QUEUED".into()));
        assert_eq!(
            run(&mut c, "ZSCORE z m"),
            Value::SimpleString("QUEUED".into())
        );
        let Value::Array(replies) = run(&mut c, "EXEC") else {
            panic!("EXEC did not reply with an array");
        };
        assert!(matches!(replies[0], Value::ServerError(_)));
        assert_eq!(replies[1], Value::Double(0.1));
        let Value::Array(hello) = run(&mut c, "HELLO 2 SETNAME me") else {
            panic!("HELLO 2 did not reply with an array");
        };
        assert_eq!(hello[4..6], [bulk("proto"), Value::Int(2)]);
        assert_eq!(run(&mut c, "ZSCORE z m"), bulk("0.10000000000000001"));
    }

    /// HELLO names the emulated server as Redis does (`redis`, 7.0.15),
    /// with Redis's seven fields; INFO server too, and names the engine in
    /// a line of its own.
    #[test]
    fn hello_and_info_report_redis_and_the_engine_apart() {
        let e = Engine::new();
        let mut c = e.connection();
        let Value::Map(hello) = c.execute(&[b"HELLO", b"3"]) else {
            panic!("HELLO 3 did not reply with a map");
        };
        assert_eq!(hello[0], (bulk("server"), bulk("redis")));
        assert_eq!(hello[1], (bulk("version"), bulk("7.0.15")));
        assert_eq!(hello.len(), 7);
        assert!(crate::ENGINE.starts_with("redmodel-memory "));
        let Value::VerbatimString { text, .. } = c.execute(&[b"INFO", b"server"]) else {
            panic!("INFO did not reply with a verbatim string");
        };
        assert!(text.contains("\r\nredis_version:7.0.15\r\n"));
        assert!(text.contains(&format!("\r\nengine:{}\r\n", crate::ENGINE)));
    }

    /// Replies observed from redis-server 7.0.15 (with no password set).
    #[test]
    fn auth_and_config_get() {
        // CONFIG GET's cases stay here: the replies redis-benchmark relies on.
        let e = Engine::new();
        let mut c = e.connection();
        assert_eq!(
            c.execute(&[b"AUTH", b"x"]),
            err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
        );
        assert_eq!(c.execute(&[b"AUTH", b"default", b"x"]), Value::Okay);
        assert_eq!(
            c.execute(&[b"AUTH", b"bob", b"x"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(
            c.execute(&[b"AUTH"]),
            err("ERR wrong number of arguments for 'auth' command")
        );
        assert_eq!(
            c.execute(&[b"AUTH", b"a", b"b", b"c"]),
            err("ERR syntax error")
        );

        assert_eq!(
            c.execute(&[b"CONFIG", b"GET", b"save"]),
            Value::Array(vec![bulk("save"), bulk("")])
        );
        assert_eq!(
            c.execute(&[b"CONFIG", b"GET", b"appendonly"]),
            Value::Array(vec![bulk("appendonly"), bulk("no")])
        );
        assert_eq!(
            c.execute(&[b"CONFIG", b"GET", b"save", b"save", b"SAVE", b"databases"]),
            Value::Array(vec![bulk("save"), bulk(""), bulk("databases"), bulk("16")])
        );
        assert_eq!(
            c.execute(&[b"CONFIG", b"GET", b"SAVE"]),
            Value::Array(vec![bulk("SAVE"), bulk("")])
        );
        assert_eq!(
            c.execute(&[b"CONFIG", b"GET", b"s?ve"]),
            Value::Array(vec![bulk("save"), bulk("")])
        );
        assert_eq!(
            c.execute(&[b"CONFIG", b"GET", b"nosuch"]),
            Value::Array(vec![])
        );
        assert_eq!(
            c.execute(&[b"CONFIG"]),
            err("ERR wrong number of arguments for 'config' command")
        );
        assert_eq!(
            c.execute(&[b"CONFIG", b"GET"]),
            err("ERR wrong number of arguments for 'config|get' command")
        );
        assert_eq!(
            c.execute(&[b"CONFIG", b"FOO"]),
            err("ERR unknown subcommand 'FOO'. Try CONFIG HELP.")
        );
    }

    #[test]
    fn connection_commands_without_a_connection_say_so() {
        let e = Engine::new();
        let mut c = e.connection();
        assert_eq!(
            c.execute(&[b"CLIENT", b"GETNAME"]),
            err("ERR CLIENT is only served on a RESP server connection of the memory engine, outside MULTI")
        );
        assert_eq!(c.execute(&[b"MULTI"]), Value::Okay);
        assert_eq!(c.execute(&[b"HELLO"]), Value::SimpleString("QUEUED".into()));
    }
}
