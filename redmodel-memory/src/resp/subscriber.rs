//! A RESP connection as a Pub/Sub subscriber: SUBSCRIBE, PSUBSCRIBE,
//! SSUBSCRIBE and their opposites, the messages it receives, and Redis
//! 7.0's subscribed mode (RESP2), in which only those commands, PING, QUIT
//! and RESET are accepted.
//!
//! # Order on the wire
//! Messages are published under the store's lock into the connection's
//! unbounded queue (see `pubsub`). The connection writes what its queue
//! holds before the reply of each command it runs (it holds the lock then,
//! so nothing published earlier can still be on its way) and whenever the
//! queue wakes it while it waits for requests. A message therefore
//! precedes every reply to a command that ran after its PUBLISH, as with
//! Redis.
//!
//! Confirmations (`subscribe`, `unsubscribe`, ...) and messages are pushes
//! in Redis: CLIENT REPLY OFF does not silence them.

use crate::command;
use crate::command::Store;
use crate::command_table as meta;
use crate::error::CmdError;
use crate::pubsub::{queue, Inbox, Push, PushKind, Scope, SubscriberId};

use super::encode;

/// The commands run here, and their scope.
fn subscription_command(name: &[u8]) -> Option<(Scope, bool)> {
    const COMMANDS: &[(&str, Scope, bool)] = &[
        ("subscribe", Scope::Channel, true),
        ("psubscribe", Scope::Pattern, true),
        ("ssubscribe", Scope::Shard, true),
        ("unsubscribe", Scope::Channel, false),
        ("punsubscribe", Scope::Pattern, false),
        ("sunsubscribe", Scope::Shard, false),
    ];
    COMMANDS
        .iter()
        .find(|(n, _, _)| name.eq_ignore_ascii_case(n.as_bytes()))
        .map(|&(_, scope, subscribe)| (scope, subscribe))
}

/// Whether the RESP server runs this command here, itself (in EXEC too,
/// through its `InExec`).
pub(super) fn is_subscription_command(name: &[u8]) -> bool {
    subscription_command(name).is_some()
}

/// A connection's subscriber identity, registered at its first
/// subscription command.
#[derive(Debug, Default)]
pub(super) struct Subscriber {
    id: Option<SubscriberId>,
    inbox: Option<Inbox>,
    /// The connection's protocol (HELLO), which its owner keeps current:
    /// confirmations and messages are push replies (`>`) in RESP3,
    /// arrays in RESP2.
    pub(super) resp: u8,
}

impl Subscriber {
    fn id(&mut self, store: &mut Store) -> SubscriberId {
        if let Some(id) = self.id {
            return id;
        }
        let (sink, inbox) = queue();
        let id = store.pubsub.register(sink);
        self.id = Some(id);
        self.inbox = Some(inbox);
        id
    }

    /// Its id in the store's registry, once it has subscribed.
    pub(super) fn registered(&self) -> Option<SubscriberId> {
        self.id
    }

    /// Whether the connection is in subscribed mode.
    pub(super) fn is_subscribed(&self, store: &Store) -> bool {
        self.id.is_some_and(|id| store.pubsub.is_subscribed(id))
    }

    /// Channels, patterns and shard channels subscribed to (CLIENT LIST).
    pub(super) fn counts(&self, store: &Store) -> [usize; 3] {
        let Some(id) = self.id else {
            return [0; 3];
        };
        [Scope::Channel, Scope::Pattern, Scope::Shard].map(|s| store.pubsub.len(id, s))
    }

    /// Runs SUBSCRIBE & co. (arity already checked) and writes one
    /// confirmation per name, or one with a nil name for an unsubscription
    /// from everything when there was nothing.
    pub(super) fn run(&mut self, store: &mut Store, args: &[&[u8]], out: &mut Vec<u8>) {
        let Some((scope, subscribe)) = subscription_command(args[0]) else {
            return;
        };
        let id = self.id(store);
        let kind: &[u8] = match (scope, subscribe) {
            (Scope::Channel, true) => b"subscribe",
            (Scope::Pattern, true) => b"psubscribe",
            (Scope::Shard, true) => b"ssubscribe",
            (Scope::Channel, false) => b"unsubscribe",
            (Scope::Pattern, false) => b"punsubscribe",
            (Scope::Shard, false) => b"sunsubscribe",
        };
        let registry = &mut store.pubsub;
        let resp = self.resp;
        let confirm = |out: &mut Vec<u8>, name: Option<&[u8]>, count: usize| {
            encode::push_header(out, 3, resp);
            encode::bulk(out, kind);
            match name {
                Some(name) => encode::bulk(out, name),
                None => encode::encode(out, &redis::Value::Nil),
            }
            encode::encode(out, &redis::Value::Int(count as i64));
        };
        if subscribe {
            for name in &args[1..] {
                registry.subscribe(id, scope, name);
                confirm(out, Some(name), registry.count(id, scope));
            }
            return;
        }
        let names: Vec<Vec<u8>> = if args.len() == 1 {
            let all = registry.subscriptions(id, scope);
            if all.is_empty() {
                confirm(out, None, registry.count(id, scope));
            }
            all.iter().map(|n| n.to_vec()).collect()
        } else {
            args[1..].iter().map(|n| n.to_vec()).collect()
        };
        for name in names {
            registry.unsubscribe(id, scope, &name);
            confirm(out, Some(&name), registry.count(id, scope));
        }
    }

    /// RESET: every subscription ends, without confirmations.
    pub(super) fn reset(&mut self, store: &mut Store) {
        if let Some(id) = self.id {
            for scope in [Scope::Channel, Scope::Pattern, Scope::Shard] {
                for name in store.pubsub.subscriptions(id, scope) {
                    store.pubsub.unsubscribe(id, scope, &name);
                }
            }
        }
    }

    /// The connection goes away: it leaves the registry.
    pub(super) fn leave(&mut self, store: &mut Store) {
        if let Some(id) = self.id.take() {
            store.pubsub.unregister(id);
        }
    }

    /// Writes the messages already queued. False if the connection fell
    /// too far behind and must be closed, as Redis closes it.
    pub(super) fn drain(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(inbox) = self.inbox.as_mut() else {
            return true;
        };
        while let Some(push) = inbox.try_next() {
            write_push(out, &push, self.resp);
        }
        !inbox.dropped()
    }

    /// Waits for the next message (forever if not a subscriber). `None`:
    /// the subscriber was dropped for falling behind.
    pub(super) async fn next(&mut self) -> Option<Push> {
        match self.inbox.as_mut() {
            Some(inbox) => inbox.next().await,
            None => std::future::pending().await,
        }
    }
}

/// Writes one message as Redis sends it to a RESP2 client.
pub(super) fn write_push(out: &mut Vec<u8>, push: &Push, resp: u8) {
    match &push.kind {
        PushKind::Message | PushKind::SMessage => {
            encode::push_header(out, 3, resp);
            let kind: &[u8] = if matches!(push.kind, PushKind::Message) {
                b"message"
            } else {
                b"smessage"
            };
            encode::bulk(out, kind);
        }
        PushKind::PMessage(pattern) => {
            encode::push_header(out, 4, resp);
            encode::bulk(out, b"pmessage");
            encode::bulk(out, pattern);
        }
    }
    encode::bulk(out, &push.channel);
    encode::bulk(out, &push.payload);
}

/// In subscribed mode (RESP2), Redis 7.0 accepts only these commands; an
/// unknown command or a wrong arity is reported first, as for any client.
pub(super) fn refusal(args: &[&[u8]]) -> Option<CmdError> {
    const ALLOWED: &[&str] = &[
        "ping",
        "subscribe",
        "ssubscribe",
        "unsubscribe",
        "sunsubscribe",
        "psubscribe",
        "punsubscribe",
        "quit",
        "reset",
    ];
    let name = args[0];
    let Some(spec) = command::lookup(name) else {
        if name.eq_ignore_ascii_case(b"reset") || name.eq_ignore_ascii_case(b"quit") {
            return None;
        }
        return Some(command::unknown_command(args));
    };
    if !spec.arity_ok(args.len()) {
        return Some(command::wrong_arity(spec));
    }
    if ALLOWED
        .iter()
        .any(|a| name.eq_ignore_ascii_case(a.as_bytes()))
    {
        return None;
    }
    let top = meta::lookup(name);
    let full = match (top, meta::of_line(args)) {
        (_, Some(m)) => m.name.to_string(),
        (Some(top), None) if !top.subcommands.is_empty() => {
            return Some(command::unknown_subcommand(top.name, args[1]));
        }
        _ => spec.name.to_string(),
    };
    Some(CmdError::err(format!(
        "Can't execute '{full}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use redis::Value;

    use crate::error::error_value;
    use crate::resp::serve;
    use crate::resp::test_client::Client;
    use crate::Engine;

    fn v(items: &[&str]) -> Value {
        Value::Array(
            items
                .iter()
                .map(|s| match s.strip_prefix(':') {
                    Some(n) => Value::Int(n.parse().unwrap()),
                    None if *s == "nil" => Value::Nil,
                    None => Value::BulkString(s.as_bytes().to_vec()),
                })
                .collect(),
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_clients_subscribe_and_publish() {
        let engine = Engine::new();
        let server = serve(engine.clone(), "127.0.0.1:0").await.unwrap();
        let addr = server.local_addr();
        let engine2 = engine.clone();
        tokio::task::spawn_blocking(move || {
            let mut a = Client::connect(addr);
            let mut b = Client::connect(addr);
            a.send("SUBSCRIBE chan other");
            assert_eq!(a.read(), v(&["subscribe", "chan", ":1"]));
            assert_eq!(a.read(), v(&["subscribe", "other", ":2"]));
            assert_eq!(a.call("PSUBSCRIBE ch*"), v(&["psubscribe", "ch*", ":3"]));

            // Subscribed mode: Redis 7.0's refusal, PING as an array.
            assert_eq!(
                a.call("GET x"),
                error_value("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
            );
            assert_eq!(
                a.call("CONFIG GET x"),
                error_value("ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
            );
            assert_eq!(
                a.call("GET"),
                error_value("ERR wrong number of arguments for 'get' command")
            );
            assert_eq!(a.call("PING"), v(&["pong", ""]));
            assert_eq!(a.call("PING hi"), v(&["pong", "hi"]));

            // One channel delivery and one pattern delivery.
            assert_eq!(b.call("PUBLISH chan hello"), Value::Int(2));
            // A message published before a command precedes its reply.
            assert_eq!(b.call("PUBLISH other x"), Value::Int(1));
            a.send("PING");
            assert_eq!(a.read(), v(&["message", "chan", "hello"]));
            assert_eq!(a.read(), v(&["pmessage", "ch*", "chan", "hello"]));
            assert_eq!(a.read(), v(&["message", "other", "x"]));
            assert_eq!(a.read(), v(&["pong", ""]));

            // In-process publishers reach RESP subscribers too.
            engine2
                .connection()
                .execute(&[b"PUBLISH", b"other", b"from inside"]);
            assert_eq!(a.read(), v(&["message", "other", "from inside"]));

            a.send("UNSUBSCRIBE");
            assert_eq!(a.read(), v(&["unsubscribe", "chan", ":2"]));
            assert_eq!(a.read(), v(&["unsubscribe", "other", ":1"]));
            assert_eq!(a.call("PUNSUBSCRIBE"), v(&["punsubscribe", "ch*", ":0"]));
            assert_eq!(a.call("PUNSUBSCRIBE"), v(&["punsubscribe", "nil", ":0"]));
            // Out of subscribed mode.
            assert_eq!(a.call("PING"), Value::SimpleString("PONG".into()));
            assert_eq!(a.call("GET x"), Value::Nil);

            // RESET leaves every subscription, silently.
            a.send("SUBSCRIBE c1");
            a.read();
            assert_eq!(a.call("SSUBSCRIBE s1"), v(&["ssubscribe", "s1", ":1"]));
            assert_eq!(b.call("SPUBLISH s1 m"), Value::Int(1));
            assert_eq!(a.read(), v(&["smessage", "s1", "m"]));
            assert_eq!(a.call("RESET"), Value::SimpleString("RESET".into()));
            assert_eq!(b.call("PUBLISH c1 m"), Value::Int(0));
            assert_eq!(b.call("SPUBLISH s1 m"), Value::Int(0));

            // A subscriber that goes away leaves the registry.
            a.call("SUBSCRIBE gone");
            assert_eq!(b.call("PUBSUB NUMSUB gone"), v(&["gone", ":1"]));
            drop(a);
            let deadline = Instant::now() + Duration::from_secs(10);
            while b.call("PUBSUB NUMSUB gone") != v(&["gone", ":0"]) {
                assert!(Instant::now() < deadline, "the subscriber stayed");
                std::thread::sleep(Duration::from_millis(5));
            }
        })
        .await
        .unwrap();
        server.shutdown().await;
    }

    /// CLIENT REPLY OFF and SKIP silence replies, not confirmations or
    /// messages (Redis sends those as pushes).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn client_reply_modes() {
        let server = serve(Engine::new(), "127.0.0.1:0").await.unwrap();
        let addr = server.local_addr();
        tokio::task::spawn_blocking(move || {
            let mut a = Client::connect(addr);
            let mut b = Client::connect(addr);
            a.send("CLIENT REPLY SKIP");
            a.send("SET k 1");
            assert_eq!(a.call("GET k"), Value::BulkString(b"1".to_vec()));
            a.send("CLIENT REPLY OFF");
            a.send("SET k 2");
            assert_eq!(a.call("SUBSCRIBE c"), v(&["subscribe", "c", ":1"]));
            assert_eq!(b.call("PUBLISH c hi"), Value::Int(1));
            assert_eq!(a.read(), v(&["message", "c", "hi"]));
            a.send("UNSUBSCRIBE");
            assert_eq!(a.read(), v(&["unsubscribe", "c", ":0"]));
            assert_eq!(a.call("CLIENT REPLY ON"), Value::Okay);
            assert_eq!(a.call("GET k"), Value::BulkString(b"2".to_vec()));
            // ON answers even right after SKIP, and ends it.
            a.send("CLIENT REPLY SKIP");
            assert_eq!(a.call("CLIENT REPLY ON"), Value::Okay);
            assert_eq!(a.call("PING"), Value::SimpleString("PONG".into()));
        })
        .await
        .unwrap();
        server.shutdown().await;
    }
}
