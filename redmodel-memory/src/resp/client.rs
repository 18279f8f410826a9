//! CLIENT and HELLO, which read and change the state of RESP connections
//! (their ids, names, addresses; CLIENT KILL closes them): a command of
//! the engine's table cannot reach that state, so the RESP server answers
//! these two here. The table keeps entries for both so that MULTI queues
//! them as Redis does, and so that an in-process client gets an error that
//! says why it cannot run them.
//!
//! Every connection of a server is listed in its [`Registry`], which
//! CLIENT LIST and CLIENT KILL read.

use std::sync::Arc;

use indexmap::IndexMap;

use parking_lot::Mutex;
use redis::Value as Reply;
use tokio::sync::Notify;

use crate::args::{int_arg, is, parse_i64};
use crate::command::blocking::{self, Wake};
use crate::command::connection::{client_shared, hello_as, set_client_name, Login};
use crate::command::Store;
use crate::command::{subcommand_arity, unknown_subcommand};
use crate::error::CmdError;
use crate::reply;

/// What a RESP server connection knows about itself.
#[derive(Debug, Default)]
pub(crate) struct ClientInfo {
    /// The connection's id (CLIENT ID), unique in its server.
    pub(crate) id: u64,
    /// The name given by CLIENT SETNAME or HELLO SETNAME.
    pub(crate) name: Option<Vec<u8>>,
    /// CLIENT REPLY OFF: no reply is sent (pushes still are).
    pub(crate) reply_off: bool,
    /// CLIENT REPLY SKIP: the next command's reply is not sent.
    pub(crate) skip_next: bool,
    /// The previous command was CLIENT REPLY SKIP: this one's reply is
    /// not sent (unless it is CLIENT REPLY ON).
    pub(crate) skip_this: bool,
    /// CLIENT NO-EVICT ON (CLIENT LIST's `e` flag).
    pub(crate) no_evict: bool,
    /// CLIENT NO-TOUCH ON (Redis 7.4): its reads leave the keys' access
    /// times (CLIENT LIST's `T` flag).
    pub(crate) no_touch: bool,
    /// CLIENT SETINFO's LIB-NAME and LIB-VER (Redis 7.4).
    pub(crate) lib: [Option<Vec<u8>>; 2],
}

/// What CLIENT LIST shows of one connection, kept up to date by the
/// connection after each command.
#[derive(Debug, Clone, Default)]
pub(crate) struct Peer {
    /// The client's address (`ip:port`) and ours.
    pub(crate) addr: String,
    pub(crate) laddr: String,
    /// The socket's file descriptor, -1 where there is none to show.
    pub(crate) fd: i64,
    pub(crate) name: Option<Vec<u8>>,
    /// Unix ms of the connection and of its last command.
    pub(crate) created_ms: i64,
    pub(crate) last_ms: i64,
    pub(crate) db: usize,
    /// Commands queued since MULTI, if in a transaction.
    pub(crate) multi: Option<usize>,
    /// The last command, `client|list` style.
    pub(crate) cmd: String,
    /// Channels, patterns and shard channels subscribed to.
    pub(crate) subscriptions: [usize; 3],
    /// The waiter of the blocking command it waits on (BLPOP...), if any.
    pub(crate) blocked: Option<u64>,
    /// The protocol the connection speaks (HELLO); 0 is read as 2.
    pub(crate) resp: u8,
    /// Wakes the connection up to close it (CLIENT KILL).
    pub(crate) kill: Arc<Notify>,
    /// Its ACL user (empty before its first command: `default`).
    pub(crate) user: String,
    /// Its id as a subscriber (ACL checks its subscriptions when its
    /// user loses channels).
    pub(crate) subscriber: Option<crate::pubsub::SubscriberId>,
    /// A MONITOR (CLIENT LIST's `O` flag).
    pub(crate) monitor: bool,
    /// CLIENT NO-EVICT ON (CLIENT LIST's `e` flag).
    pub(crate) no_evict: bool,
    /// CLIENT NO-TOUCH ON (CLIENT LIST's `T` flag).
    pub(crate) no_touch: bool,
    /// Keys it watches (WATCH).
    pub(crate) watch: usize,
    /// CLIENT SETINFO's LIB-NAME and LIB-VER.
    pub(crate) lib: [Option<Vec<u8>>; 2],
}

/// How CLIENT LIST names a command: lower case, a container with its
/// subcommand (`client|list`).
pub(crate) fn running_name(args: &[&[u8]]) -> String {
    const CONTAINERS: &[&str] = &[
        "client", "config", "object", "function", "command", "memory",
    ];
    let Some(name) = args.first() else {
        return String::new();
    };
    let mut cmd = String::from_utf8_lossy(name).to_ascii_lowercase();
    if let (true, Some(sub)) = (CONTAINERS.iter().any(|c| is(name, c)), args.get(1)) {
        cmd = format!(
            "{cmd}|{}",
            String::from_utf8_lossy(sub).to_ascii_lowercase()
        );
    }
    cmd
}

/// The bytes of `args` as a RESP request (`*N`, then `$len` and each
/// argument): what a client's request takes in its query buffer.
fn request_len(args: &[&[u8]]) -> usize {
    let header = |n: usize| 3 + itoa::Buffer::new().format(n).len();
    header(args.len())
        + args
            .iter()
            .map(|a| header(a.len()) + a.len() + 2)
            .sum::<usize>()
}

impl Peer {
    /// Redis's client type: `pubsub` in subscribed mode, else `normal`
    /// (the engine has no replica or master connections).
    fn client_type(&self) -> &'static str {
        if self.subscriptions.iter().any(|&n| n > 0) {
            "pubsub"
        } else {
            "normal"
        }
    }

    /// One line of CLIENT LIST, with the fields of the store's Redis
    /// version in its order (7.4 adds `watch`, `lib-name` and `lib-ver`).
    /// What the engine does not measure (buffers, memory) reads 0.
    pub(crate) fn line(&self, id: u64, now: i64, store: &Store) -> String {
        self.line_running(id, now, None, store)
    }

    /// [`Self::line`] of the connection running `running` (CLIENT LIST or
    /// INFO about itself): Redis shows the command in progress as `cmd`,
    /// and its request, still in the query buffer, as `qbuf`.
    fn line_running(&self, id: u64, now: i64, running: Option<&[&[u8]]>, store: &Store) -> String {
        let v74 = store.version >= crate::RedisVersion::V7_4;
        let (cmd, qbuf) = match running {
            Some(args) => (running_name(args), request_len(args)),
            None => (self.cmd.clone(), 0),
        };
        let name = self
            .name
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        // Redis's order: O (a monitor), P(ub/sub), x (MULTI), b(locked),
        // e (no-evict); N for none.
        let mut flags = String::new();
        if self.monitor {
            flags.push('O');
        }
        if self.client_type() == "pubsub" {
            flags.push('P');
        }
        if self.multi.is_some() {
            flags.push('x');
        }
        if self.blocked.is_some() {
            flags.push('b');
        }
        // Client-side caching: t(racking), R (broken redirection), B(cast).
        let (tracking_flags, redir) = store.tracking.list_fields(id);
        flags.push_str(&tracking_flags);
        if self.no_evict {
            flags.push('e');
        }
        if self.no_touch {
            flags.push('T');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let multi = self.multi.map_or(-1, |n| n as i64);
        let [sub, psub, ssub] = self.subscriptions;
        let watch = if v74 {
            format!(" watch={}", self.watch)
        } else {
            String::new()
        };
        let lib = if v74 {
            let [lib_name, lib_ver] = &self.lib;
            let text = |v: &Option<Vec<u8>>| {
                String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned()
            };
            format!(" lib-name={} lib-ver={}", text(lib_name), text(lib_ver))
        } else {
            String::new()
        };
        format!(
            "id={id} addr={} laddr={} fd={} name={name} age={} idle={} flags={flags} db={} \
             sub={sub} psub={psub} ssub={ssub} multi={multi}{watch} qbuf={qbuf} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 \
             rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user={} redir={redir} resp={}{lib}\n",
            self.addr,
            self.laddr,
            self.fd,
            (now - self.created_ms).max(0) / 1000,
            (now - self.last_ms).max(0) / 1000,
            self.db,
            if cmd.is_empty() { "NULL" } else { &cmd },
            if self.user.is_empty() {
                "default"
            } else {
                &self.user
            },
            self.resp.max(2),
        )
    }
}

/// The connections of one server, by id, in the order they came, which
/// is the order of their ids (CLIENT LIST's order): hashed, as every
/// command looks its own connection up (a B-tree's search showed in
/// redis-benchmark's profiles). Removals keep the order (`shift_remove`).
pub(crate) type Registry = Arc<Mutex<IndexMap<u64, Peer, crate::hasher::Seeded>>>;

/// What CLIENT needs besides the connection's own [`ClientInfo`].
pub(crate) struct ClientCtx<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) now: i64,
    /// The engine's data, locked (CLIENT UNBLOCK ends a blocked client's
    /// wait).
    pub(crate) store: &'a mut Store,
}

/// What the connection must do after a CLIENT command.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum After {
    Continue,
    /// CLIENT KILL killed this very connection: reply, then close.
    Close,
}

impl ClientInfo {
    /// Redis's `clientSetName`: printable ASCII with no spaces; empty clears.
    fn set_name(&mut self, name: &[u8]) -> Result<(), CmdError> {
        set_client_name(&mut self.name, name)
    }
}

/// CLIENT ID | GETNAME | SETNAME | INFO | LIST | KILL, for a RESP server
/// connection, with Redis 7.0.15's arities and errors.
pub(crate) fn client_command(
    info: &mut ClientInfo,
    cx: &mut ClientCtx<'_>,
    args: &[&[u8]],
) -> (Reply, After) {
    let result = (|| {
        let [_, sub, rest @ ..] = args else {
            return Err(CmdError::err(
                "wrong number of arguments for 'client' command",
            ));
        };
        // name, and arity in Redis's notation counting CLIENT and the
        // subcommand (`-3`: at least one argument after them).
        const SUBS: &[(&str, i32)] = &[
            ("id", 2),
            ("getname", 2),
            ("setname", 3),
            ("info", 2),
            ("list", -2),
            ("kill", -3),
            ("reply", 3),
            ("unblock", -3),
            ("tracking", -3),
            ("caching", 3),
            ("getredir", 2),
            ("trackinginfo", 2),
        ];
        if let ([_, _, mode], true) = (args, is(sub, "no-evict")) {
            if is(mode, "on") || is(mode, "off") {
                info.no_evict = is(mode, "on");
            }
        }
        // HELP, NO-EVICT, NO-TOUCH, SETINFO, PAUSE, UNPAUSE: the engine's,
        // for every client; this connection keeps what NO-TOUCH and
        // SETINFO set once the engine accepts it.
        if let Some(result) = client_shared(cx.store, cx.now, args) {
            if result.is_ok() {
                match args {
                    [_, _, mode] if is(sub, "no-touch") => info.no_touch = is(mode, "on"),
                    [_, _, attr, value] if is(sub, "setinfo") => {
                        let at = usize::from(is(attr, "lib-ver"));
                        info.lib[at] = Some(value.to_vec());
                    }
                    _ => {}
                }
            }
            return result.map(|reply| (reply, After::Continue));
        }
        let Some(&(name, arity)) = SUBS.iter().find(|(n, _)| is(sub, n)) else {
            return Err(unknown_subcommand("client", sub));
        };
        let argc = args.len() as i32;
        if (arity >= 0 && argc != arity) || (arity < 0 && argc < -arity) {
            return Err(subcommand_arity("client", name));
        }
        if let Some(result) = cx.store.tracking.client_command(info.id, sub, rest) {
            cx.store.sync_tracking_log();
            return result.map(|reply| (reply, After::Continue));
        }
        Ok(match name {
            "id" => (reply::int(info.id), After::Continue),
            "getname" => (
                info.name.clone().map_or_else(reply::nil, reply::bulk),
                After::Continue,
            ),
            "setname" => {
                info.set_name(rest[0])?;
                if let Some(peer) = cx.registry.lock().get_mut(&info.id) {
                    peer.name = info.name.clone();
                }
                (reply::ok(), After::Continue)
            }
            "info" => {
                let line = cx
                    .registry
                    .lock()
                    .get(&info.id)
                    .map(|p| p.line_running(info.id, cx.now, Some(args), cx.store))
                    .unwrap_or_default();
                (reply::verbatim(line), After::Continue)
            }
            "list" => (client_list(cx, info.id, args)?, After::Continue),
            "reply" => {
                // Redis's CLIENT REPLY ON|OFF|SKIP; the OK of ON is the
                // only reply (the connection silences the others).
                let mode = rest[0];
                if is(mode, "on") {
                    info.reply_off = false;
                    info.skip_next = false;
                    info.skip_this = false;
                } else if is(mode, "off") {
                    info.reply_off = true;
                } else if is(mode, "skip") {
                    info.skip_next = !info.reply_off;
                } else {
                    return Err(CmdError::Syntax);
                }
                (reply::ok(), After::Continue)
            }
            "unblock" => (client_unblock(cx, rest)?, After::Continue),
            _ => client_kill(info, cx, rest)?,
        })
    })();
    result.unwrap_or_else(|e| (e.to_value(), After::Continue))
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends the wait of a client blocked
/// on keys, as if it had timed out (nil) or with an UNBLOCKED error; 1 if
/// the client was blocked, else 0.
fn client_unblock(cx: &mut ClientCtx<'_>, opts: &[&[u8]]) -> Result<Reply, CmdError> {
    let wake =
        match opts {
            [_] => Wake::TimedOut,
            [_, reason] if is(reason, "timeout") => Wake::TimedOut,
            [_, reason] if is(reason, "error") => Wake::Served(
                CmdError::raw("UNBLOCKED client unblocked via CLIENT UNBLOCK").to_value(),
            ),
            [_, _] => {
                return Err(CmdError::err(
                    "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
                ))
            }
            _ => return Err(CmdError::err(
                "unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.",
            )),
        };
    let id = int_arg(opts[0])?;
    let waiter = u64::try_from(id)
        .ok()
        .and_then(|id| cx.registry.lock().get(&id)?.blocked);
    let unblocked = waiter.is_some_and(|w| blocking::unblock(cx.store, w, wake));
    Ok(reply::int(i64::from(unblocked)))
}

/// `CLIENT LIST [TYPE type] | [ID id ...]`. A connection is a `pubsub` one
/// in subscribed mode, else a `normal` one; the other types exist but list
/// nobody.
fn client_list(cx: &ClientCtx<'_>, caller: u64, args: &[&[u8]]) -> Result<Reply, CmdError> {
    let opts = &args[2..];
    let registry = cx.registry.lock();
    let lines = |ids: &mut dyn Iterator<Item = u64>| -> String {
        ids.filter_map(|id| {
            let running = (id == caller).then_some(args);
            Some(
                registry
                    .get(&id)?
                    .line_running(id, cx.now, running, cx.store),
            )
        })
        .collect()
    };
    let text = match opts {
        [] => lines(&mut registry.keys().copied()),
        [opt, kind] if is(opt, "type") => {
            if is(kind, "normal") || is(kind, "pubsub") {
                let mut of_type = registry
                    .iter()
                    .filter(|(_, p)| is(kind, p.client_type()))
                    .map(|(&id, _)| id);
                lines(&mut of_type)
            } else if ["master", "replica", "slave"].iter().any(|t| is(kind, t)) {
                String::new()
            } else {
                return Err(CmdError::err(format!(
                    "Unknown client type '{}'",
                    String::from_utf8_lossy(kind)
                )));
            }
        }
        [opt, ids @ ..] if is(opt, "id") && !ids.is_empty() => {
            let mut wanted = Vec::with_capacity(ids.len());
            for id in ids {
                let id = parse_i64(id).ok_or_else(|| CmdError::err("Invalid client ID"))?;
                wanted.push(id);
            }
            lines(&mut wanted.into_iter().filter_map(|id| u64::try_from(id).ok()))
        }
        _ => return Err(CmdError::Syntax),
    };
    Ok(reply::verbatim(text))
}

/// CLIENT KILL addr (old form: OK, or "No such client"; may kill the
/// caller) or CLIENT KILL [ID id] [TYPE t] [ADDR a] [LADDR a] [USER u]
/// [SKIPME yes|no] (new form: the number killed; skips the caller unless
/// SKIPME no).
fn client_kill(
    info: &ClientInfo,
    cx: &mut ClientCtx<'_>,
    opts: &[&[u8]],
) -> Result<(Reply, After), CmdError> {
    let old_form = opts.len() == 1;
    let (mut addr, mut laddr, mut id, mut skip_me) = (None, None, 0u64, !old_form);
    let mut user: Option<&[u8]> = None;
    // MAXAGE's seconds; 0 when not given.
    let mut max_age = 0i64;
    // The type asked for; `Some("")` for a type no connection has.
    let mut wanted_type: Option<&str> = None;
    if old_form {
        addr = Some(opts[0]);
    } else {
        for pair in opts.chunks(2) {
            let [opt, value] = pair else {
                return Err(CmdError::Syntax);
            };
            if is(opt, "id") {
                id = parse_i64(value)
                    .filter(|&n| n >= 1)
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(|| CmdError::err("client-id should be greater than 0"))?;
            } else if is(opt, "maxage") && cx.store.version >= crate::RedisVersion::V7_4 {
                // Redis 7.4: only clients connected at least that long.
                let age = parse_i64(value)
                    .ok_or_else(|| CmdError::err("maxage is not an integer or out of range"))?;
                if age <= 0 {
                    return Err(CmdError::err("maxage should be greater than 0"));
                }
                max_age = age;
            } else if is(opt, "type") {
                if is(value, "normal") {
                    wanted_type = Some("normal");
                } else if is(value, "pubsub") {
                    wanted_type = Some("pubsub");
                } else if ["master", "replica", "slave"].iter().any(|t| is(value, t)) {
                    wanted_type = Some("");
                } else {
                    return Err(CmdError::err(format!(
                        "Unknown client type '{}'",
                        String::from_utf8_lossy(value)
                    )));
                }
            } else if is(opt, "addr") {
                addr = Some(value);
            } else if is(opt, "laddr") {
                laddr = Some(value);
            } else if is(opt, "user") {
                if cx.store.acl.user(value).is_none() {
                    return Err(CmdError::err(format!(
                        "No such user '{}'",
                        String::from_utf8_lossy(value)
                    )));
                }
                user = Some(value);
            } else if is(opt, "skipme") {
                if is(value, "yes") {
                    skip_me = true;
                } else if is(value, "no") {
                    skip_me = false;
                } else {
                    return Err(CmdError::Syntax);
                }
            } else {
                return Err(CmdError::Syntax);
            }
        }
    }
    let mut killed = 0usize;
    let mut close_self = false;
    let mut gone = Vec::new();
    for (&peer_id, peer) in cx.registry.lock().iter() {
        if addr.is_some_and(|a| a != peer.addr.as_bytes())
            || laddr.is_some_and(|a| *a != peer.laddr.as_bytes())
            || user.is_some_and(|u| {
                let name = if peer.user.is_empty() {
                    "default"
                } else {
                    &peer.user
                };
                u != name.as_bytes()
            })
            || wanted_type.is_some_and(|t| t != peer.client_type())
            || (id != 0 && peer_id != id)
            || (peer_id == info.id && skip_me)
            || (max_age != 0 && cx.now / 1000 - peer.created_ms / 1000 < max_age)
        {
            continue;
        }
        if peer_id == info.id {
            close_self = true;
        } else {
            peer.kill.notify_one();
            gone.push(peer_id);
        }
        killed += 1;
    }
    // Gone for client-side caching at once, as Redis frees the client: a
    // redirection to it is broken from the next change.
    for peer_id in gone {
        cx.store.tracking.disconnect(peer_id);
    }
    let after = if close_self {
        After::Close
    } else {
        After::Continue
    };
    if old_form {
        if killed == 0 {
            return Err(CmdError::err("No such client"));
        }
        return Ok((reply::ok(), after));
    }
    Ok((reply::int(killed), after))
}

/// HELLO for a RESP server connection (see [`hello`]).
#[cfg(test)]
pub(crate) fn hello_command(info: &mut ClientInfo, resp: &mut u8, args: &[&[u8]]) -> Reply {
    crate::command::connection::hello(info.id, &mut info.name, resp, args)
}

/// HELLO for a connection whose logins go through `login`.
pub(crate) fn hello_command_as(
    info: &mut ClientInfo,
    resp: &mut u8,
    args: &[&[u8]],
    version: crate::RedisVersion,
    login: Login<'_>,
) -> Reply {
    hello_as(info.id, &mut info.name, resp, args, version, login)
}

#[cfg(test)]
mod tests_7_4;

#[cfg(test)]
mod tests {
    use redis::Value;

    use super::{client_command, hello_command, ClientCtx, ClientInfo, Registry};
    use crate::command::Store;
    use crate::error::error_value;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn err(s: &str) -> Value {
        error_value(s)
    }

    #[test]
    fn client_subcommands() {
        let mut info = ClientInfo {
            id: 56,
            ..ClientInfo::default()
        };
        let registry = Registry::default();
        let mut store = Store::default();
        let mut cx = ClientCtx {
            registry: &registry,
            now: 0,
            store: &mut store,
        };
        let mut run = |args: &[&[u8]]| client_command(&mut info, &mut cx, args).0;
        assert_eq!(run(&[b"CLIENT", b"ID"]), Value::Int(56));
        assert_eq!(run(&[b"CLIENT", b"GETNAME"]), Value::Nil);
        assert_eq!(run(&[b"client", b"Setname", b"abc"]), Value::Okay);
        assert_eq!(run(&[b"CLIENT", b"GETNAME"]), bulk("abc"));
        let bad_name =
            err("ERR Client names cannot contain spaces, newlines or special characters.");
        assert_eq!(run(&[b"CLIENT", b"SETNAME", b"a b"]), bad_name);
        assert_eq!(run(&[b"CLIENT", b"SETNAME", "é".as_bytes()]), bad_name);
        assert_eq!(run(&[b"CLIENT", b"GETNAME"]), bulk("abc"));
        assert_eq!(run(&[b"CLIENT", b"SETNAME", b""]), Value::Okay);
        assert_eq!(run(&[b"CLIENT", b"GETNAME"]), Value::Nil);
        assert_eq!(
            run(&[b"CLIENT"]),
            err("ERR wrong number of arguments for 'client' command")
        );
        assert_eq!(
            run(&[b"CLIENT", b"SETNAME"]),
            err("ERR wrong number of arguments for 'client|setname' command")
        );
        assert_eq!(
            run(&[b"CLIENT", b"GETNAME", b"x"]),
            err("ERR wrong number of arguments for 'client|getname' command")
        );
        assert_eq!(
            run(&[b"CLIENT", b"ID", b"x"]),
            err("ERR wrong number of arguments for 'client|id' command")
        );
        // What redis-rs sends on connect; 7.0.15 has no SETINFO either.
        assert_eq!(
            run(&[b"CLIENT", b"SETINFO", b"LIB-NAME", b"redis-rs"]),
            err("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.")
        );
    }

    #[test]
    fn hello_switches_between_resp2_and_resp3() {
        let mut info = ClientInfo {
            id: 7,
            ..ClientInfo::default()
        };
        let mut resp = 2;
        let mut run = |args: &[&[u8]]| {
            let reply = hello_command(&mut info, &mut resp, args);
            (reply, resp)
        };
        let (Value::Map(fields), 2) = run(&[b"HELLO"]) else {
            panic!("HELLO did not reply with a map");
        };
        assert_eq!(fields.len(), 7);
        assert_eq!(
            fields[2..4],
            [(bulk("proto"), Value::Int(2)), (bulk("id"), Value::Int(7))]
        );
        assert_eq!(fields[6], (bulk("modules"), Value::Array(vec![])));
        let (Value::Map(fields), 3) = run(&[b"HELLO", b"3"]) else {
            panic!("HELLO 3 did not switch");
        };
        assert_eq!(fields[2], (bulk("proto"), Value::Int(3)));
        // A refused HELLO leaves the protocol as it was.
        let noproto = err("NOPROTO unsupported protocol version");
        assert_eq!(run(&[b"HELLO", b"1"]), (noproto.clone(), 3));
        assert_eq!(run(&[b"HELLO", b"4"]), (noproto.clone(), 3));
        assert_eq!(run(&[b"HELLO", b"-1"]), (noproto, 3));
        assert_eq!(
            run(&[b"HELLO", b"2", b"SETNAME", b"a b"]).1,
            3,
            "a bad option does not switch"
        );
        assert_eq!(run(&[b"HELLO", b"2"]).1, 2);
        let mut run = |args: &[&[u8]]| hello_command(&mut info, &mut resp, args);
        assert_eq!(
            run(&[b"HELLO", b"3x"]),
            err("ERR Protocol version is not an integer or out of range")
        );
        assert!(matches!(
            run(&[b"HELLO", b"2", b"AUTH", b"default", b"x"]),
            Value::Map(_)
        ));
        assert_eq!(
            run(&[b"HELLO", b"2", b"AUTH", b"bob", b"x"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(
            run(&[b"HELLO", b"2", b"AUTH", b"x"]),
            err("ERR Syntax error in HELLO option 'AUTH'")
        );
        assert_eq!(
            run(&[b"HELLO", b"2", b"SETNAME", b"n", b"FOO"]),
            err("ERR Syntax error in HELLO option 'FOO'")
        );
        assert_eq!(info.name.as_deref(), Some(&b"n"[..]));
    }
}
