//! How the server tells the cache what changed.
//!
//! On a server, and on each master of a cluster, a RESP3 connection of the
//! cache's own runs `CLIENT TRACKING on BCAST [PREFIX p]...`: the server
//! pushes it the keys of every change (whoever made it, expiry and
//! eviction included) and a null invalidation for FLUSHALL / FLUSHDB. The
//! connections that read need no tracking state of their own, so the
//! `Db`'s shared connection and its pool can reconnect freely.
//!
//! A task watches the tracking connections. When one is lost (its socket
//! closes, or its `CLIENT TRACKINGINFO` each [`HEARTBEAT`] fails or says
//! tracking is off, as after a RESET on it), or the backend's nodes are
//! not those it tracks (a cluster's failover or resharding onto a new
//! node, a new primary found through Sentinel), the
//! cache empties and keeps nothing until every master is tracked again.
//! The task ends once the `Db` is gone.
//!
//! On the memory engine in process, the engine's own tracker feed
//! ([`Engine::invalidations`](crate::memory::Engine::invalidations)) is
//! drained by the cache itself before each lookup: the engine queues a
//! change's invalidation before the writer gets its reply, so in process
//! the cache is never behind.

use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{ConnectionInfo, ProtocolVersion, PushInfo, PushKind, Value};
use tokio::sync::mpsc;

use super::{Cache, CacheConfig};
use crate::command::cmd;
use crate::db::backend::Backend;
use crate::db::Shared;
use crate::error::Result;

/// How often the task checks its connections (PING) and, on a cluster,
/// the masters.
const HEARTBEAT: Duration = Duration::from_millis(500);

/// How long a tracking connection may take to open or answer.
const PATIENCE: Duration = Duration::from_secs(2);

/// The longest pause between two attempts to track again.
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Turns tracking on for `cache`: returns once the server reports every
/// change (or fails if it refuses), then keeps it on in a task.
pub(super) async fn start(
    shared: &Arc<Shared>,
    cache: &Arc<Cache>,
    config: &CacheConfig,
) -> Result<()> {
    let prefixes: Vec<Vec<u8>> = config
        .prefixes
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
    let backend: &dyn Backend = &*shared.backend;
    if let Some(engine) = backend.engine() {
        let refs: Vec<&[u8]> = prefixes.iter().map(Vec::as_slice).collect();
        cache.set_feed(engine.invalidations(&refs));
        cache.set_live(true);
        return Ok(());
    }
    let session = Session::open(backend, &prefixes).await?;
    *cache.tracking.lock() = session.conns.clone();
    cache.set_live(true);
    // A switch of primary (Sentinel) empties the cache at once; the
    // heartbeat then finds the tracked node is not the primary any more
    // and tracks the new one before anything is kept again.
    let switched = Arc::downgrade(cache);
    backend.on_switch(Box::new(move || {
        if let Some(cache) = switched.upgrade() {
            cache.set_live(false);
        }
    }));
    tokio::spawn(watch(
        Arc::downgrade(shared),
        Arc::downgrade(cache),
        prefixes,
        session,
    ));
    Ok(())
}

/// The tracking connections of one period of tracking.
struct Session {
    conns: Vec<MultiplexedConnection>,
    /// The nodes they are on, as the backend named them.
    nodes: Vec<String>,
    pushes: mpsc::UnboundedReceiver<PushInfo>,
}

impl Session {
    /// A tracking connection to every node the backend names.
    async fn open(backend: &dyn Backend, prefixes: &[Vec<u8>]) -> Result<Session> {
        let infos = backend.tracking_nodes().await?;
        let (tx, pushes) = mpsc::unbounded_channel();
        let mut conns = Vec::with_capacity(infos.len());
        let mut nodes = Vec::with_capacity(infos.len());
        for info in infos {
            nodes.push(info.addr().to_string());
            conns.push(track(info, prefixes, tx.clone()).await?);
        }
        Ok(Session {
            conns,
            nodes,
            pushes,
        })
    }

    /// Whether every connection still answers and still tracks.
    async fn alive(&mut self) -> bool {
        let mut info = cmd("CLIENT");
        info.arg("TRACKINGINFO");
        for conn in &mut self.conns {
            match tokio::time::timeout(PATIENCE, conn.req_packed_command(&info)).await {
                Ok(Ok(reply)) if !tracking_off(&reply) => {}
                _ => return false,
            }
        }
        true
    }
}

/// Whether a `CLIENT TRACKINGINFO` reply says tracking is off (a RESET or
/// `CLIENT TRACKING off` on the connection): its flags, a set in RESP3,
/// an array in RESP2 (what a RESET turns the connection back to). A
/// server that does not know the subcommand (before Redis 6.2) answers
/// with an error: it answered, which is all a PING would tell.
fn tracking_off(reply: &Value) -> bool {
    let pairs: Vec<(&Value, &Value)> = match reply {
        Value::Map(pairs) => pairs.iter().map(|(k, v)| (k, v)).collect(),
        Value::Array(items) => items
            .chunks_exact(2)
            .map(|pair| (&pair[0], &pair[1]))
            .collect(),
        _ => return false,
    };
    let is = |value: &Value, text: &str| match value {
        Value::BulkString(bytes) => bytes.eq_ignore_ascii_case(text.as_bytes()),
        Value::SimpleString(s) => s.eq_ignore_ascii_case(text),
        _ => false,
    };
    pairs.iter().any(|(name, flags)| {
        is(name, "flags")
            && match flags {
                Value::Set(flags) | Value::Array(flags) => flags.iter().any(|f| is(f, "off")),
                _ => false,
            }
    })
}

/// One RESP3 connection to `info` with BCAST tracking on, its pushes sent
/// to `tx`.
async fn track(
    info: ConnectionInfo,
    prefixes: &[Vec<u8>],
    tx: mpsc::UnboundedSender<PushInfo>,
) -> Result<MultiplexedConnection> {
    let settings = info
        .redis_settings()
        .clone()
        .set_protocol(ProtocolVersion::RESP3);
    let client = redis::Client::open(info.set_redis_settings(settings))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(PATIENCE))
        .set_response_timeout(Some(PATIENCE))
        .set_push_sender(tx);
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let mut on = cmd("CLIENT");
    on.arg("TRACKING").arg("ON").arg("BCAST");
    for prefix in prefixes {
        on.arg("PREFIX").arg(prefix.as_slice());
    }
    conn.req_packed_command(&on).await?;
    Ok(conn)
}

/// Keeps tracking on until the `Db` is gone (see the module docs).
async fn watch(
    shared: Weak<Shared>,
    cache: Weak<Cache>,
    prefixes: Vec<Vec<u8>>,
    mut session: Session,
) {
    let mut pause = Duration::from_millis(50);
    loop {
        // Serve this session until it breaks.
        loop {
            let lost = tokio::select! {
                push = session.pushes.recv() => match push {
                    Some(push) => {
                        let Some(cache) = cache.upgrade() else { return };
                        apply(&cache, push)
                    }
                    None => true,
                },
                () = tokio::time::sleep(HEARTBEAT) => {
                    let Some(shared) = shared.upgrade() else { return };
                    !session.alive().await || moved(&*shared.backend, &session).await
                }
            };
            if lost {
                break;
            }
        }
        let Some(live) = cache.upgrade() else { return };
        live.set_live(false);
        drop(live);
        // Track again, every node, before anything is kept again.
        session = loop {
            tokio::time::sleep(pause).await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            match Session::open(&*shared.backend, &prefixes).await {
                Ok(s) => break s,
                Err(err) => {
                    tracing::debug!(target: "redmodel::cache", error = %err, "tracking is not back yet");
                    pause = (pause * 2).min(MAX_PAUSE);
                }
            }
        };
        pause = Duration::from_millis(50);
        let Some(live) = cache.upgrade() else { return };
        *live.tracking.lock() = session.conns.clone();
        live.set_live(true);
    }
}

/// Applies one push to the cache; `true` if it says the connection is
/// lost.
fn apply(cache: &Cache, push: PushInfo) -> bool {
    match push.kind {
        PushKind::Invalidate => {
            match push.data.into_iter().next() {
                Some(Value::Array(keys)) => cache.invalidate(keys.iter().filter_map(|k| match k {
                    Value::BulkString(k) => Some(k.as_slice()),
                    _ => None,
                })),
                // A null invalidation: FLUSHALL / FLUSHDB.
                _ => cache.flush(),
            }
            false
        }
        PushKind::Disconnection => true,
        _ => false,
    }
}

/// Whether the backend's nodes are no longer those `session` tracks (a
/// cluster's failover or new master, a new primary found through Sentinel).
async fn moved(backend: &dyn Backend, session: &Session) -> bool {
    match backend.tracking_nodes().await {
        Ok(infos) => {
            let now: Vec<String> = infos.iter().map(|i| i.addr().to_string()).collect();
            now != session.nodes
        }
        // The cluster does not answer: the PINGs tell whether tracking
        // still does.
        Err(_) => false,
    }
}

/// Sends RESET on each of `cache`'s tracking connections; how many.
pub(super) async fn reset(cache: &Cache) -> Result<usize> {
    let conns = cache.tracking.lock().clone();
    for mut conn in conns.iter().cloned() {
        conn.req_packed_command(&cmd("RESET")).await?;
    }
    Ok(conns.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn trackinginfo_says_off_in_both_protocols() {
        let resp3 = |flag: &str| {
            Value::Map(vec![
                (bulk("flags"), Value::Set(vec![bulk(flag), bulk("bcast")])),
                (bulk("redirect"), Value::Int(0)),
                (bulk("prefixes"), Value::Array(vec![])),
            ])
        };
        assert!(!tracking_off(&resp3("on")));
        assert!(tracking_off(&resp3("off")));
        let resp2 = Value::Array(vec![
            bulk("flags"),
            Value::Array(vec![bulk("off")]),
            bulk("redirect"),
            Value::Int(-1),
            bulk("prefixes"),
            Value::Array(vec![]),
        ]);
        assert!(tracking_off(&resp2));
        assert!(!tracking_off(&Value::Nil));
    }
}
