//! The cluster connection that ordinary requests share, and its
//! replacement after a node stops answering.
//!
//! A new connection reads the slot map again: redis-rs learns of a moved
//! slot from a MOVED reply, but keeps sending a dead master's slots to it
//! until a redirection says otherwise, which a dead node never sends.
//!
//! The connection it replaces may have stopped answering for good.
//! redis-rs's cluster connection, once every node connection it holds has
//! dropped, reconnects to its seeds; that recovery takes its connection
//! map's lock for writing, and a request the connection parked midway
//! (which it polls again only after the recovery) can be holding that lock
//! for reading. Every request sent to it from then on would wait out the
//! response timeout. So a replaced connection is asked for PINGs (to
//! several masters) while requests are still waiting on it; if none is
//! answered within the connect timeout, each of those requests fails as a
//! lost connection: a transient error, a write's fate unknown (sent again
//! by nobody), a read sent again on the new connection
//! ([`Resends`](super::Resends)).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use redis::aio::ConnectionLike;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio_util::sync::CancellationToken;

/// The shortest time between two replacements of the shared connection.
const REPLACE_EVERY: Duration = Duration::from_millis(500);

/// The slots whose masters a replaced connection is asked for a PING:
/// spread over the slot space, they reach every master of a cluster of
/// up to eight of equal shares.
const PROBED_SLOTS: [u16; 8] = [0, 2048, 4096, 6144, 8192, 10240, 12288, 14336];

/// The shared connection (see the module docs).
pub(super) struct Shared {
    current: RwLock<Handle>,
    /// When the connection was last replaced.
    replaced: Mutex<Option<Instant>>,
    /// How long a replaced connection has to answer a PING.
    answer_within: Duration,
}

impl Shared {
    /// Shares `conn`; a connection replaced later has `answer_within`
    /// (the connect timeout) to show it still answers.
    pub(super) fn new(conn: ClusterConnection, answer_within: Duration) -> Self {
        Shared {
            current: RwLock::new(Handle::new(conn)),
            replaced: Mutex::new(None),
            answer_within,
        }
    }

    /// A handle on the current connection (handles share its sockets).
    pub(super) fn handle(&self) -> Handle {
        self.current.read().clone()
    }

    /// Replaces the connection by a new one of `client`'s, at most once
    /// per [`REPLACE_EVERY`] however many requests ask at once; the old
    /// one is watched while requests wait on it.
    pub(super) async fn replace(&self, client: &ClusterClient) {
        {
            let mut last = self.replaced.lock();
            if last.is_some_and(|at| at.elapsed() < REPLACE_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        if let Ok(conn) = client.get_async_connection().await {
            let old = std::mem::replace(&mut *self.current.write(), Handle::new(conn));
            tokio::spawn(old.watch(self.answer_within));
        }
    }
}

/// A handle on one cluster connection: its requests fail with
/// [`stopped_answering`] once the connection is known to have stopped
/// answering.
#[derive(Clone)]
pub(super) struct Handle {
    conn: ClusterConnection,
    /// Cancelled once the connection is known to have stopped answering;
    /// its count of holders is the count of handles, which
    /// [`watch`](Self::watch) reads.
    stopped: Arc<CancellationToken>,
}

impl Handle {
    fn new(conn: ClusterConnection) -> Self {
        Handle {
            conn,
            stopped: Arc::default(),
        }
    }

    /// `request`'s result, or a lost connection's error as soon as the
    /// connection is known to have stopped answering.
    async fn unless_stopped<T>(
        stopped: &CancellationToken,
        request: impl Future<Output = RedisResult<T>>,
    ) -> RedisResult<T> {
        tokio::select! {
            biased;
            result = request => result,
            () = stopped.cancelled() => Err(stopped_answering()),
        }
    }

    /// Sends `cmd` by `routing`.
    pub(super) async fn route_command(
        &mut self,
        cmd: Cmd,
        routing: RoutingInfo,
    ) -> RedisResult<Value> {
        Self::unless_stopped(&self.stopped, self.conn.route_command(cmd, routing)).await
    }

    /// Sends `pipeline`'s commands from `offset`, `count` replies kept,
    /// by `route`.
    pub(super) async fn route_pipeline(
        &mut self,
        pipeline: Pipeline,
        offset: usize,
        count: usize,
        route: SingleNodeRoutingInfo,
    ) -> RedisResult<Vec<Value>> {
        Self::unless_stopped(
            &self.stopped,
            self.conn.route_pipeline(pipeline, offset, count, route),
        )
        .await
    }

    /// While requests other than this one's hold a handle on the replaced
    /// connection, asks it every `within` for a PING to the masters of
    /// [`PROBED_SLOTS`]: if none answers within `within`, it fails them
    /// all. An error counts as an answer (the connection works, a node
    /// may not); only silence from all does not, so that one node gone
    /// silent, which fails only its own requests, fails no others.
    async fn watch(self, within: Duration) {
        while Arc::strong_count(&self.stopped) > 1 {
            let pings = PROBED_SLOTS.map(|slot| {
                let mut conn = self.conn.clone();
                let route = Route::new(slot, SlotAddr::Master);
                Box::pin(async move {
                    let ping = crate::command::cmd("PING");
                    let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                    conn.route_command(ping, route).await
                })
            });
            let first = futures_util::future::select_all(pings);
            if tokio::time::timeout(within, first).await.is_err() {
                self.stopped.cancel();
                return;
            }
            tokio::time::sleep(within).await;
        }
    }
}

impl ConnectionLike for Handle {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(Self::unless_stopped(
            &self.stopped,
            self.conn.req_packed_command(cmd),
        ))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(Self::unless_stopped(
            &self.stopped,
            self.conn.req_packed_commands(pipeline, offset, count),
        ))
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// The error of a request on a connection that stopped answering: it may
/// or may not have run.
fn stopped_answering() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "the cluster connection was replaced and stopped answering",
    ))
}
