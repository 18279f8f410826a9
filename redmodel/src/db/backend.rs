//! The backend seam: what a `Db` needs from whatever executes its commands.
//!
//! # Why a trait object and not an enum
//! `Db` holds a `Box<dyn Backend>`. With an enum, every backend would be
//! named in every method of `Db`, `DedicatedConnection` and their
//! `ConnectionLike` impls; a new
//! backend, such as Redis Cluster, would edit all of them. With the trait,
//! a backend is one file that implements it plus one constructor on `Db`.
//!
//! The price is one virtual call per request, against a network round
//! trip (tens of microseconds) or an engine command (hundreds of
//! nanoseconds behind a mutex): not measurable in the benchmarks. The
//! futures were already boxed by redis-rs's `RedisFuture`.

use super::BoxFuture;
use std::future::Future;

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use super::server_info::ServerInfo;
use crate::command::cmd;
use crate::error::Result;
use crate::memory::Engine;

/// Something that runs Redis commands for a [`Db`](super::Db).
///
/// Requests through `send` and `send_pipeline` may share a connection with
/// other tasks (a multiplexed connection); anything that needs connection
/// state of its own (WATCH, MULTI typed in by hand) asks for an
/// [`exclusive`](Backend::exclusive) link.
pub(crate) trait Backend: Send + Sync + 'static {
    /// `"memory"`, `"redis"`, ...: for messages and tests.
    fn name(&self) -> &'static str;

    /// Runs one command on the shared connection.
    fn send<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value>;

    /// Runs `count` replies' worth of a pipeline, skipping `offset`
    /// replies, as redis-rs's [`ConnectionLike::req_packed_commands`].
    fn send_pipeline<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>>;

    /// The database number requests run on.
    fn db_number(&self) -> i64;

    /// A link no other task uses until it is dropped: from a pool on a
    /// server, a fresh client on the engine. It comes without WATCHes or
    /// an open MULTI.
    fn exclusive(&self) -> BoxFuture<'_, Result<Box<dyn Link>>>;

    /// An exclusive link that sends every command to the node serving
    /// `key`: on a cluster, the master of its slot, where a MULTI / EXEC
    /// typed command by command can run; elsewhere [`exclusive`](Self::exclusive).
    fn exclusive_for<'a>(&'a self, key: &'a [u8]) -> BoxFuture<'a, Result<Box<dyn Link>>> {
        let _ = key;
        self.exclusive()
    }

    /// A connection in subscribed mode of its own (see [`Subscriber`](super::pubsub::Subscriber)).
    fn subscriber(&self) -> super::pubsub::Opening<'_>;

    /// The nodes a near cache tracks changes on ([`cache`](super::cache)):
    /// the server; a cluster's masters. None for the memory engine, whose
    /// cache tracks in process.
    fn tracking_nodes(&self) -> BoxFuture<'_, Result<Vec<redis::ConnectionInfo>>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Registers `hook`, called each time the backend starts sending to
    /// another node than before (a Sentinel failover): the near cache
    /// empties there. Backends that never switch drop it.
    fn on_switch(&self, hook: Box<dyn Fn() + Send + Sync>) {
        drop(hook);
    }

    /// For a backend that switches nodes (Sentinel): a receiver whose
    /// value changes at each switch, once requests go to the new node, and
    /// the heartbeat of subscribed connections. Subscribers follow it
    /// ([`Subscriber`](super::pubsub::Subscriber)).
    fn follow(&self) -> Option<super::pubsub::Follow> {
        None
    }

    /// For a backend reached over the network that does not switch nodes
    /// (one server, a cluster): how a subscriber's connection is watched
    /// for silence. `None` in process, and where [`follow`](Self::follow)
    /// gives the heartbeat.
    fn heartbeat(&self) -> Option<super::pubsub::Heartbeat> {
        None
    }

    /// For a backend that switches nodes (Sentinel): the server requests
    /// go to now. `None`: the one learnt when the `Db` connected.
    fn server(&self) -> Option<ServerInfo> {
        None
    }

    /// The memory engine, for a backend that is one.
    fn engine(&self) -> Option<&Engine> {
        None
    }

    /// Whether this is a Redis Cluster: the `Db` then uses the cluster key
    /// layout, always.
    fn is_cluster(&self) -> bool {
        false
    }

    /// Every key matching the glob `pattern` (SCAN, `count` keys looked at
    /// per call), possibly with repeats, in no order. A cluster scans each
    /// master with its own cursor.
    fn scan<'a>(&'a self, pattern: &'a str, count: u64) -> BoxFuture<'a, Result<Vec<Vec<u8>>>> {
        Box::pin(scan_all(pattern, count, move |cmd| async move {
            Ok(self.send(&cmd).await?)
        }))
    }
}

/// The SCAN loop of one node: `send` runs each SCAN call (on whichever
/// node the caller routes it to) until the cursor comes back 0; every key
/// it returned, possibly with repeats.
pub(crate) async fn scan_all<F, Fut>(pattern: &str, count: u64, mut send: F) -> Result<Vec<Vec<u8>>>
where
    F: FnMut(Cmd) -> Fut,
    Fut: Future<Output = Result<Value>>,
{
    let mut keys = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let mut cmd = cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count);
        let (next, batch): (u64, Vec<Vec<u8>>) =
            redis::from_redis_value(send(cmd).await?).map_err(redis::RedisError::from)?;
        keys.extend(batch);
        if next == 0 {
            return Ok(keys);
        }
        cursor = next;
    }
}

/// An exclusive connection lent by a backend (see [`Backend::exclusive`]).
pub(crate) trait Link: ConnectionLike + Send {}

impl<T: ConnectionLike + Send> Link for T {}
