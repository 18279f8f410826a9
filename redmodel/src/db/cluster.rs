//! The Redis Cluster backend, over redis-rs's cluster-async client.
//!
//! - Ordinary requests share one cluster connection: redis-rs routes each
//!   command to the master of its key's slot and reads the slot map anew
//!   when a reply says a slot moved. It sends nothing again by itself: a
//!   request refused for where its slot is (MOVED, ASK, TRYAGAIN) or for a
//!   node's or the cluster's state is sent again here, and so is a read
//!   whose connection dropped; a write whose connection dropped may have
//!   run, and fails instead of running twice ([`Resends`]).
//!   After a lost connection or a timeout, the shared connection is
//!   replaced by a new one, and the requests still waiting on the old one
//!   fail if it has stopped answering ([`shared`]).
//! - A pipeline goes to one node, so redis-rs refuses one whose keys span
//!   slots. An atomic pipeline (MULTI/EXEC) must stay in one slot, and the
//!   model layer's cluster layout sees to that; a plain pipeline whose
//!   commands are in several slots (a batch read of many objects) is sent
//!   as one pipeline per master if it only reads (which master serves
//!   which slot: [`slots`](super::slots)), else command by command, each
//!   routed on its own; concurrently either way, the replies put back in
//!   order. A read whose slot has moved meanwhile is sent again on its
//!   own, routed anew.
//! - WATCH belongs to a connection, and clones of a cluster connection
//!   share their sockets: an exclusive link is a cluster connection of its
//!   own, from a small pool (see [`super::pool`]). It routes WATCH,
//!   the reads and the EXEC by their keys, all in one slot, hence to one
//!   node. It never sends a request again while a WATCH or MULTI is open
//!   ([`Watchful`]): a read sent to the slot's new master would leave
//!   the WATCH behind, and the EXEC would run there unguarded.
//! - SCAN runs on every master, each with its own cursor ([`scan_masters`]);
//!   a SCAN sent by hand walks them all with one cursor ([`scan_step`]).

mod shared;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use redis::aio::ConnectionLike;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline, RedisFuture, Value};

use self::shared::{Handle, Shared};
use super::backend::{scan_all, Backend, Link};
use super::pool::{self, Tracked};
use super::slots::SlotOwners;
use super::BoxFuture;
use crate::command::Owned;
use crate::error::is_redirection;
use crate::error::{Error, Result};

/// A Redis Cluster behind a `Db`.
pub(crate) struct ClusterBackend {
    /// The shared connection, replaced by a new one (a new slot map) when
    /// a node stops answering: see [`ClusterBackend::reconnect_after`].
    shared: Shared,
    /// The client of every connection: redis-rs follows no redirection
    /// and resends nothing on it, so that [`Resends`] (and [`Watchful`]
    /// on an exclusive link) decides.
    client: ClusterClient,
    /// The seed URLs, through which subscribers connect (to the first
    /// that answers).
    seeds: Vec<String>,
    pool: bb8::Pool<ClusterManager>,
    /// How long a borrower waits for a pooled connection.
    wait: Duration,
    /// How a subscriber's connection is watched for silence.
    heartbeat: super::pubsub::Heartbeat,
    /// Which master serves each slot, for cutting a batch into one
    /// pipeline per master: read when a batch first needs it, forgotten
    /// when a reply says a slot moved.
    owners: RwLock<Option<Arc<SlotOwners>>>,
}

/// Opens exclusive cluster connections.
pub(crate) struct ClusterManager {
    /// The client of [`ClusterBackend::client`].
    client: ClusterClient,
}

impl bb8::ManageConnection for ClusterManager {
    type Connection = Tracked<Watchful<ClusterConnection>>;
    type Error = redis::RedisError;

    async fn connect(&self) -> std::result::Result<Self::Connection, redis::RedisError> {
        let conn = self.client.get_async_connection().await?;
        Ok(Tracked::new(Watchful::new(conn)))
    }

    async fn is_valid(
        &self,
        conn: &mut Self::Connection,
    ) -> std::result::Result<(), redis::RedisError> {
        conn.clean_up().await
    }

    fn has_broken(&self, conn: &mut Self::Connection) -> bool {
        conn.has_broken()
    }
}

impl ClusterBackend {
    /// Connects to the cluster through `seeds` (one reachable node is
    /// enough: it tells where the others are).
    pub(crate) async fn connect(
        seeds: Vec<String>,
        connect: Duration,
        response: Duration,
    ) -> Result<Self> {
        // redis-rs sends a request again after a redirection anywhere in
        // it, or after its connection dropped: a write would run twice.
        // Without its retries, what is sent again is decided here
        // ([`Resends`]).
        let client = ClusterClient::builder(seeds.clone())
            .connection_timeout(connect)
            .response_timeout(response)
            .retries(0)
            .build()?;
        let conn = client.get_async_connection().await?;
        let wait = connect + response;
        let pool = pool::build(
            ClusterManager {
                client: client.clone(),
            },
            wait,
        );
        Ok(ClusterBackend {
            shared: Shared::new(conn, connect),
            client,
            seeds,
            pool,
            wait,
            heartbeat: super::pubsub::Heartbeat::after(response),
            owners: RwLock::new(None),
        })
    }

    /// A handle on the shared connection (handles share its sockets).
    fn conn(&self) -> Handle {
        self.shared.handle()
    }

    /// After a node stopped answering (killed, or failing over), replaces
    /// the shared connection ([`Shared::replace`]): the failing request
    /// still fails (transient), and the next ones go where the slots now
    /// are.
    async fn reconnect_after<T>(&self, result: redis::RedisResult<T>) -> redis::RedisResult<T> {
        if let Err(err) = &result {
            self.refresh_after(err).await;
        }
        result
    }

    /// [`Self::refresh`] after a request failed with `err`, if the
    /// connection was lost or timed out: its node may be gone.
    async fn refresh_after(&self, err: &redis::RedisError) {
        if lost_connection(err) || err.is_timeout() {
            self.refresh().await;
        }
    }

    /// Replaces the shared connection, which reads the slot map again.
    async fn refresh(&self) {
        self.shared.replace(&self.client).await;
    }
}

/// A cluster connection of its own whose every command and pipeline goes
/// to one slot's master ([`Db::dedicated_for`](crate::Db::dedicated_for)).
struct SlotLink {
    conn: ClusterConnection,
    route: SingleNodeRoutingInfo,
}

impl ConnectionLike for SlotLink {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let route = RoutingInfo::SingleNode(self.route.clone());
        Box::pin(self.conn.route_command(cmd.clone(), route))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let route = self.route.clone();
        Box::pin(
            self.conn
                .route_pipeline(pipeline.clone(), offset, count, route),
        )
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// An exclusive cluster link (over a client that resends nothing) that
/// sends a request again ([`Resends`]) only while no WATCH or MULTI is
/// open on it.
///
/// A WATCH holds on one node's socket. Were a read after it redirected
/// (the slot moved), redis-rs would send it, and the EXEC after it, to the
/// slot's new master, where nothing is watched: the transaction would
/// commit over a change it should have seen. Here the redirection is the
/// caller's error instead, one [`redirected`](super::optimistic::redirected)
/// names, and an optimistic transaction runs again from its WATCH. With
/// nothing open, the command or pipeline (refused, so run nowhere) is sent
/// again, after the slot map is read anew, as the shared connection would.
pub(crate) struct Watchful<C> {
    conn: C,
    state: super::conn_state::ConnState,
}

impl<C> Watchful<C> {
    fn new(conn: C) -> Self {
        Watchful {
            conn,
            state: Default::default(),
        }
    }

    /// Whether a WATCH or a MULTI is open on the link.
    fn holds_state(&self) -> bool {
        self.state.clean_up().is_some()
    }
}

/// Which failed requests are sent again, and when: one that ran nowhere,
/// or one that only reads. A node refuses a whole request for where its
/// slot is (MOVED: in a request of one slot, every command is refused),
/// for the cluster's state (CLUSTERDOWN) or its own (LOADING, MASTERDOWN,
/// READONLY: a master demoted to replica), or redis-rs found no
/// connection to send it on; ASK and TRYAGAIN refuse single commands while
/// a slot migrates, hence a whole request only if it is one command or a
/// transaction. A write whose connection dropped, or a pipeline of writes
/// refused part of the way, may have run: its error is the caller's (a
/// transient one), never sent again, so that no write runs twice.
///
/// A request is sent again after a growing pause (the slot map settles a
/// few seconds after a master dies), for as long as [`RESEND_FOR`] from
/// its first failure; then the error is the caller's. A request's
/// `Resends` is made at its first failure, so that one that succeeds
/// reads none of its commands' names.
struct Resends {
    started: Instant,
    attempt: u64,
    /// The request only reads: sent again after a lost connection too.
    reads: bool,
    /// The request runs whole or not at all: one command, a transaction.
    whole: bool,
}

impl Resends {
    fn for_command(cmd: &Cmd) -> Self {
        Self::new(reads_only(std::iter::once(cmd)), true)
    }

    fn for_pipeline(pipeline: &Pipeline) -> Self {
        Self::new(
            reads_only(pipeline.cmd_iter()),
            holds_a_transaction(pipeline),
        )
    }

    fn new(reads: bool, whole: bool) -> Self {
        Resends {
            started: Instant::now(),
            attempt: 0,
            reads,
            whole,
        }
    }

    /// Whether the request that failed with `err` is sent again, having
    /// paused.
    async fn again(&mut self, err: &redis::RedisError) -> bool {
        if !self.safe_after(err) || self.started.elapsed() >= RESEND_FOR {
            return false;
        }
        self.attempt += 1;
        tokio::time::sleep(Duration::from_millis((10 * self.attempt).min(250))).await;
        true
    }

    /// Whether the request may go again after failing with `err`: it ran
    /// nowhere, or it only reads (reads run again harmlessly, however
    /// much of them ran).
    fn safe_after(&self, err: &redis::RedisError) -> bool {
        ran_nowhere(err, self.whole || self.reads) || (self.reads && lost_connection(err))
    }
}

/// Whether a request that failed with `err` ran nowhere (see
/// [`Resends`]); `whole`: it is one command or a transaction.
fn ran_nowhere(err: &redis::RedisError, whole: bool) -> bool {
    if err.kind() == redis::ErrorKind::ClusterConnectionNotFound {
        return true;
    }
    match err.code() {
        Some("MOVED" | "CLUSTERDOWN" | "LOADING" | "MASTERDOWN" | "READONLY") => true,
        // A transaction refused for a slot's move comes back aborted
        // (EXECABORT), the redirection in its text.
        _ => whole && is_redirection(err),
    }
}

/// Whether `err` says the connection was lost or could not be made: the
/// request may or may not have run.
fn lost_connection(err: &redis::RedisError) -> bool {
    err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal()
}

/// Whether every command of `cmds` only reads.
fn reads_only<'a>(mut cmds: impl Iterator<Item = &'a Cmd>) -> bool {
    cmds.all(|cmd| {
        crate::command::args(cmd)
            .collect::<Option<Vec<_>>>()
            .is_some_and(|argv| !redmodel_memory::may_write(&argv))
    })
}

impl<C: ConnectionLike + Send> ConnectionLike for Watchful<C> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            // A redirected WATCH ran nowhere: it follows like any other.
            let follow = !self.holds_state();
            self.state.sending(cmd);
            let mut resends = None;
            loop {
                match self.conn.req_packed_command(cmd).await {
                    Err(err)
                        if follow
                            && resends
                                .get_or_insert_with(|| Resends::for_command(cmd))
                                .again(&err)
                                .await => {}
                    result => return result,
                }
            }
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            // In a pipeline, a WATCH may have run before a redirected read.
            let follow = !self.holds_state() && !pipeline.cmd_iter().any(opens_state);
            self.state.sending_pipeline(pipeline);
            let mut resends = None;
            loop {
                match self.conn.req_packed_commands(pipeline, offset, count).await {
                    Err(err)
                        if follow
                            && resends
                                .get_or_insert_with(|| Resends::for_pipeline(pipeline))
                                .again(&err)
                                .await => {}
                    result => return result,
                }
            }
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// Whether `cmd` opens connection state that a redirection would leave
/// behind: WATCH or MULTI.
fn opens_state(cmd: &Cmd) -> bool {
    crate::command::is(cmd, "WATCH") || crate::command::is(cmd, "MULTI")
}

impl Backend for ClusterBackend {
    fn name(&self) -> &'static str {
        "cluster"
    }

    fn send<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut resends = None;
            loop {
                let mut conn = self.conn();
                let result = if is_scan(cmd) {
                    scan_step(&mut conn, cmd).await
                } else {
                    conn.req_packed_command(cmd).await
                };
                let Err(err) = &result else {
                    return result;
                };
                let resends = resends.get_or_insert_with(|| Resends::for_command(cmd));
                if !resends.again(err).await {
                    return self.reconnect_after(result).await;
                }
                self.refresh_after(err).await;
            }
        })
    }

    fn send_pipeline<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut resends: Option<Resends> = None;
            loop {
                let mut conn = self.conn();
                let result = match conn.req_packed_commands(pipeline, offset, count).await {
                    Err(err) if crossed_slots(&err) && !holds_a_transaction(pipeline) => {
                        // Refused before anything was sent: send the
                        // commands on their own, each routed by its key.
                        self.send_apart(pipeline).await
                    }
                    other => other,
                };
                let Err(err) = &result else {
                    return result;
                };
                let resends = resends.get_or_insert_with(|| Resends::for_pipeline(pipeline));
                if !resends.again(err).await {
                    return self.reconnect_after(result).await;
                }
                // A transaction refused for a slot's move: the slot map is
                // read anew before it goes again.
                if resends.whole {
                    self.refresh().await;
                } else {
                    self.refresh_after(err).await;
                }
            }
        })
    }

    fn db_number(&self) -> i64 {
        0
    }

    fn exclusive(&self) -> BoxFuture<'_, Result<Box<dyn Link>>> {
        Box::pin(pool::checkout(&self.pool, self.wait))
    }

    fn exclusive_for<'a>(&'a self, key: &'a [u8]) -> BoxFuture<'a, Result<Box<dyn Link>>> {
        let route = SingleNodeRoutingInfo::SpecificNode(Route::with_key(key, SlotAddr::Master));
        Box::pin(async move {
            // A new connection, not a pooled one: whatever WATCH or MULTI
            // the caller leaves open is on that node's socket, and goes
            // with it when the link is dropped.
            let conn = self.client.get_async_connection().await?;
            Ok(Box::new(Watchful::new(SlotLink { conn, route })) as Box<dyn Link>)
        })
    }

    fn is_cluster(&self) -> bool {
        true
    }

    /// A Pub/Sub connection to the first seed node that answers: a
    /// message published on any node reaches every node's subscribers.
    fn subscriber(&self) -> super::pubsub::Opening<'_> {
        Box::pin(async move {
            let mut last = None;
            for seed in &self.seeds {
                match super::url::open_client(seed)?.get_async_pubsub().await {
                    Ok(conn) => return Ok(super::pubsub::Link::Redis(conn)),
                    Err(err) => last = Some(err),
                }
            }
            Err(last.map_or_else(
                || Error::Config("a cluster without seed URLs".to_string()),
                Error::from,
            ))
        })
    }

    fn heartbeat(&self) -> Option<super::pubsub::Heartbeat> {
        Some(self.heartbeat)
    }

    fn scan<'a>(&'a self, pattern: &'a str, count: u64) -> BoxFuture<'a, Result<Vec<Vec<u8>>>> {
        Box::pin(scan_masters(self.conn(), pattern, count))
    }

    /// Every master, reached as the first seed is (its TLS, its
    /// credentials), in address order.
    fn tracking_nodes(&self) -> BoxFuture<'_, Result<Vec<redis::ConnectionInfo>>> {
        Box::pin(async move {
            let seed = self
                .seeds
                .first()
                .ok_or_else(|| Error::Config("a cluster without seed URLs".to_string()))?;
            let info = super::url::open_client(seed)?.get_connection_info().clone();
            let mut conn = self.conn();
            let masters = masters(&mut conn).await?;
            Ok(masters
                .into_iter()
                .map(|master| at_node(&info, master.host, master.port))
                .collect())
        })
    }
}

/// Whether `pipeline` is a transaction, atomic or spelled out (MULTI ...
/// EXEC as commands, as a `Db` with replica acks sends one): never to be
/// split into commands routed apart.
pub(super) fn holds_a_transaction(pipeline: &Pipeline) -> bool {
    pipeline.is_transaction()
        || pipeline
            .cmd_iter()
            .any(|cmd| crate::command::is(cmd, "MULTI"))
}

/// Where a cluster-wide SCAN cursor keeps the index of the master it is
/// on: the bits above this (a node's own cursor stays below 2^52, as its
/// hash table is far smaller than that).
const NODE_SHIFT: u32 = 52;

fn is_scan(cmd: &Cmd) -> bool {
    crate::command::is(cmd, "SCAN")
}

/// One SCAN call over the whole cluster, so that a caller's cursor loop
/// (redis-rs's `scan_match` on a `Db`, say) sees every master's keys: the
/// cursor names a master (its high bits, an index into the masters in
/// address order) and that master's own cursor (the low bits). When a
/// master's cursor comes back 0 the next master's scan begins; 0 after the
/// last master. As with SCAN on one server, keys may come twice, and a
/// topology change during the walk can hide or repeat some.
async fn scan_step(conn: &mut Handle, cmd: &Cmd) -> redis::RedisResult<Value> {
    // The packed form, where a cursor given by `cursor_arg` (redis-rs's
    // scan iterators) has its value.
    let args = unpack(&cmd.get_packed_command());
    let cursor: u64 = args
        .get(1)
        .and_then(|c| std::str::from_utf8(c).ok()?.parse().ok())
        .ok_or_else(|| {
            redis::RedisError::from((redis::ErrorKind::Client, "SCAN needs a numeric cursor"))
        })?;
    let masters = masters(conn).await.map_err(|e| match e {
        Error::Server(e) | Error::Reply(e) | Error::Connection { source: e } => e,
        other => {
            redis::RedisError::from((redis::ErrorKind::Client, "CLUSTER SLOTS", other.to_string()))
        }
    })?;
    let node = usize::try_from(cursor >> NODE_SHIFT).unwrap_or(usize::MAX);
    let Some(master) = masters.get(node) else {
        return Ok(Value::Array(vec![
            Value::BulkString(b"0".to_vec()),
            Value::Array(Vec::new()),
        ]));
    };
    let mut own = crate::command::cmd("SCAN");
    own.arg(cursor & ((1 << NODE_SHIFT) - 1));
    for arg in args.iter().skip(2) {
        own.arg(arg.as_slice());
    }
    let reply = conn.route_command(own, master.route()).await?;
    let (next, keys): (u64, Value) = redis::from_redis_value(reply)?;
    let next = match next {
        0 if node + 1 < masters.len() => ((node + 1) as u64) << NODE_SHIFT,
        0 => 0,
        next => ((node as u64) << NODE_SHIFT) | next,
    };
    Ok(Value::Array(vec![
        Value::BulkString(next.to_string().into_bytes()),
        keys,
    ]))
}

/// The arguments of a packed command (a RESP array of bulk strings).
fn unpack(packed: &[u8]) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    let mut rest = packed;
    // Skips `*N\r\n`, then reads each `$LEN\r\nBYTES\r\n`.
    fn line(r: &[u8]) -> Option<(&[u8], &[u8])> {
        let i = r.iter().position(|&b| b == b'\n')?;
        Some((&r[..i.saturating_sub(1)], &r[i + 1..]))
    }
    if let Some((_, after)) = line(rest) {
        rest = after;
    }
    while let Some((header, after)) = line(rest) {
        let Some(len) = header
            .strip_prefix(b"$")
            .and_then(|l| std::str::from_utf8(l).ok()?.parse::<usize>().ok())
        else {
            break;
        };
        let Some(arg) = after.get(..len) else { break };
        args.push(arg.to_vec());
        rest = after.get(len + 2..).unwrap_or_default();
    }
    args
}

impl ClusterBackend {
    /// A plain pipeline whose commands span slots, sent as its commands:
    /// concurrently, so that it costs about one round trip per node, each
    /// command routed on its own; the replies in the pipeline's order. A
    /// command without a key (FLUSHDB, which goes to every master) is a
    /// barrier: the commands before it are answered before it is sent, and
    /// the ones after it are sent after its reply, as a pipeline keeps them
    /// in order.
    async fn send_apart(&self, pipeline: &Pipeline) -> redis::RedisResult<Vec<Value>> {
        let mut replies = Vec::with_capacity(pipeline.len());
        let mut batch: Vec<&Cmd> = Vec::new();
        for cmd in pipeline.cmd_iter() {
            if is_keyless(cmd) {
                replies.extend(self.send_batch(&batch).await?);
                batch.clear();
                replies.extend(self.send_batch(&[cmd]).await?);
            } else {
                batch.push(cmd);
            }
        }
        replies.extend(self.send_batch(&batch).await?);
        Ok(replies)
    }

    /// Sends `cmds`, if they are all reads of one slot each, as one
    /// pipeline per master, concurrently; else (a write among them, a
    /// command of no slot or of several, the slot map unknown) each on its
    /// own, as they come. Their replies in order.
    async fn send_batch(&self, cmds: &[&Cmd]) -> redis::RedisResult<Vec<Value>> {
        let owners = match cmds.len() {
            0 | 1 => None,
            _ => self.slot_owners().await,
        };
        let Some(groups) = owners.and_then(|owners| by_master(&owners, cmds)) else {
            return self.send_each(cmds).await;
        };
        let sends = groups.iter().map(|(slot, places)| {
            let mut pipe = redis::pipe();
            for &i in places {
                pipe.add_command(cmds[i].clone());
            }
            let route = SingleNodeRoutingInfo::SpecificNode(Route::new(*slot, SlotAddr::Master));
            let mut conn = self.conn();
            async move { conn.route_pipeline(pipe, 0, places.len(), route).await }
        });
        let sent = futures_util::future::join_all(sends).await;
        let mut replies = vec![Value::Nil; cmds.len()];
        let mut alone: Vec<usize> = Vec::new();
        for ((_, places), result) in groups.iter().zip(sent) {
            match result {
                Ok(values) if values.len() == places.len() && !values.iter().any(redirected) => {
                    for (&i, value) in places.iter().zip(values) {
                        replies[i] = value;
                    }
                }
                Err(err) if !is_redirection(&err) => return Err(err),
                // A slot of the group is served elsewhere now (MOVED, ASK,
                // TRYAGAIN: redis-rs reports it for the whole pipeline):
                // its reads again, each on its own, routed anew.
                _ => alone.extend(places),
            }
        }
        if !alone.is_empty() {
            // Read the map again for the next batch.
            *self.owners.write() = None;
        }
        let again: Vec<&Cmd> = alone.iter().map(|&i| cmds[i]).collect();
        for (i, value) in alone.into_iter().zip(self.send_each(&again).await?) {
            replies[i] = value;
        }
        Ok(replies)
    }

    /// Sends `cmds` concurrently, each routed on its own (and sent again
    /// as [`Resends`] allows); their replies in order.
    async fn send_each(&self, cmds: &[&Cmd]) -> redis::RedisResult<Vec<Value>> {
        let requests = cmds.iter().map(|cmd| self.send(cmd));
        futures_util::future::join_all(requests)
            .await
            .into_iter()
            .collect()
    }

    /// Which master serves each slot: as last read, else read now
    /// (`CLUSTER SLOTS`); `None` if it cannot be read.
    async fn slot_owners(&self) -> Option<Arc<SlotOwners>> {
        if let Some(owners) = self.owners.read().as_ref() {
            return Some(Arc::clone(owners));
        }
        let mut slots = Cmd::new();
        slots.arg("CLUSTER").arg("SLOTS");
        let reply = self.conn().req_packed_command(&slots).await.ok()?;
        let owners = Arc::new(SlotOwners::from_reply(&reply)?);
        *self.owners.write() = Some(Arc::clone(&owners));
        Some(owners)
    }
}

/// `cmds` by the master that serves them (`owners`): for each master, the
/// slot its pipeline is routed by (its first command's), and the places of
/// its commands in `cmds`. `None` unless every command is a read of one
/// slot that a master serves: a redirection inside a pipeline fails the
/// whole of it, whose writes may have run in part, and a read in its
/// master's pipeline would no longer come after a write sent on its own.
fn by_master(owners: &SlotOwners, cmds: &[&Cmd]) -> Option<Vec<(u16, Vec<usize>)>> {
    let mut groups: Vec<(u16, u16, Vec<usize>)> = Vec::new();
    for (i, cmd) in cmds.iter().enumerate() {
        let argv: Vec<&[u8]> = crate::command::args(cmd).collect::<Option<_>>()?;
        if redmodel_memory::may_write(&argv) {
            return None;
        }
        let slot = redmodel_memory::key_slot(&argv)?;
        let owner = owners.owner(slot)?;
        match groups.iter_mut().find(|(o, _, _)| *o == owner) {
            Some((_, _, places)) => places.push(i),
            None => groups.push((owner, slot, vec![i])),
        }
    }
    Some(
        groups
            .into_iter()
            .map(|(_, slot, places)| (slot, places))
            .collect(),
    )
}

/// Whether the commands of `pipeline` name keys of more than one slot,
/// which a cluster connection refuses to send as one pipeline.
pub(super) fn spans_slots(pipeline: &Pipeline) -> bool {
    let mut first = None;
    for cmd in pipeline.cmd_iter() {
        let Some(argv) = crate::command::args(cmd).collect::<Option<Vec<_>>>() else {
            continue;
        };
        match (first, redmodel_memory::key_slot(&argv)) {
            (_, None) => {}
            (None, slot) => first = slot,
            (Some(a), Some(b)) if a != b => return true,
            _ => {}
        }
    }
    false
}

/// Whether a reply says its command's slot is served elsewhere, or is
/// moving: a command sent alone again goes where the slot now is.
fn redirected(reply: &Value) -> bool {
    matches!(reply, Value::ServerError(err)
        if matches!(err.code(), "MOVED" | "ASK" | "TRYAGAIN" | "CLUSTERDOWN"))
}

/// Commands with no key, which redis-rs sends to some or every node: the
/// barriers of [`ClusterBackend::send_apart`].
fn is_keyless(cmd: &Cmd) -> bool {
    const KEYLESS: [&[u8]; 16] = [
        b"FLUSHALL",
        b"FLUSHDB",
        b"SCRIPT",
        b"FUNCTION",
        b"CONFIG",
        b"DBSIZE",
        b"KEYS",
        b"RANDOMKEY",
        b"PING",
        b"INFO",
        b"TIME",
        b"WAIT",
        b"CLIENT",
        b"CLUSTER",
        b"SCAN",
        b"SAVE",
    ];
    crate::command::name(cmd)
        .is_some_and(|name| KEYLESS.iter().any(|k| name.eq_ignore_ascii_case(k)))
}

/// How long [`Resends`] sends a failed request again.
const RESEND_FOR: Duration = Duration::from_secs(8);

/// Whether redis-rs refused a pipeline for spanning slots (before sending
/// it).
fn crossed_slots(err: &redis::RedisError) -> bool {
    err.code() == Some("CROSSSLOT") || err.to_string().contains("crossed slots")
}

/// `info` (a seed's) pointed at another node: at `host`, or at the
/// seed's own host where the node gave none ([`Master::host`]).
fn at_node(info: &redis::ConnectionInfo, host: String, port: u16) -> redis::ConnectionInfo {
    use redis::ConnectionAddr;
    let host = match (host.is_empty(), info.addr()) {
        (true, ConnectionAddr::Tcp(seed, _) | ConnectionAddr::TcpTls { host: seed, .. }) => {
            seed.clone()
        }
        _ => host,
    };
    let addr = match info.addr() {
        ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => ConnectionAddr::TcpTls {
            host,
            port,
            insecure: *insecure,
            tls_params: tls_params.clone(),
        },
        _ => ConnectionAddr::Tcp(host, port),
    };
    info.clone().set_addr(addr)
}

/// Every key matching `pattern` on every master: SCAN on each, with its own
/// cursor, until each says 0. The masters come from CLUSTER SLOTS.
async fn scan_masters(mut conn: Handle, pattern: &str, count: u64) -> Result<Vec<Vec<u8>>> {
    let mut keys = Vec::new();
    for master in masters(&mut conn).await? {
        let conn = &conn;
        let master = &master;
        keys.extend(
            scan_all(pattern, count, |cmd| async move {
                Ok(conn.clone().route_command(cmd, master.route()).await?)
            })
            .await?,
        );
    }
    Ok(keys)
}

/// A master, as CLUSTER SLOTS names it: its address, and the first slot
/// it serves.
#[derive(Debug, PartialEq, Eq)]
struct Master {
    /// Empty where the node gave none (its own address unknown to it, as
    /// for a node no other has met: a one-node cluster's), or a wildcard:
    /// the node is where it was reached, as Redis documents and redis-rs
    /// does.
    host: String,
    port: u16,
    slot: u16,
}

impl Master {
    /// The route to it: by its slot, which redis-rs maps to the node
    /// under the address it reached it at, whatever the reply named.
    fn route(&self) -> RoutingInfo {
        RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
            self.slot,
            SlotAddr::Master,
        )))
    }
}

/// The masters, from CLUSTER SLOTS.
async fn masters(conn: &mut Handle) -> Result<Vec<Master>> {
    let reply = conn
        .req_packed_command(&crate::command::cmd("CLUSTER").arg("SLOTS").owned())
        .await?;
    masters_in(reply)
}

/// The masters a CLUSTER SLOTS reply names (each slot range's first node
/// is its master), each once, in address order: a cluster-wide SCAN
/// cursor names masters by index.
fn masters_in(reply: Value) -> Result<Vec<Master>> {
    let Value::Array(ranges) = reply else {
        return Err(Error::Reply(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "CLUSTER SLOTS did not reply an array",
        ))));
    };
    let mut out: Vec<Master> = Vec::new();
    for range in ranges {
        let Value::Array(parts) = range else { continue };
        let (Some(Value::Int(start)), Some(Value::Array(master))) = (parts.first(), parts.get(2))
        else {
            continue;
        };
        let host = match master.first() {
            Some(Value::Nil) => Some(String::new()),
            Some(v) => redis::from_redis_value::<String>(v.clone()).ok(),
            None => None,
        }
        .map(|host| match host.as_str() {
            "0.0.0.0" | "::" => String::new(),
            _ => host,
        });
        let port = master
            .get(1)
            .and_then(|v| redis::from_redis_value::<u16>(v.clone()).ok());
        let (Some(host), Some(port), Ok(slot)) = (host, port, u16::try_from(*start)) else {
            continue;
        };
        if !out.iter().any(|m| m.host == host && m.port == port) {
            out.push(Master { host, port, slot });
        }
    }
    out.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::tests::server_error;

    fn io(kind: std::io::ErrorKind) -> redis::RedisError {
        redis::RedisError::from(std::io::Error::new(kind, "gone"))
    }

    /// Whether a request failing with `err` goes again: (a write alone,
    /// a pipeline of writes, a transaction, a pipeline of reads).
    fn resent(err: &redis::RedisError) -> [bool; 4] {
        [(false, true), (false, false), (false, true), (true, false)]
            .map(|(reads, whole)| Resends::new(reads, whole).safe_after(err))
    }

    #[test]
    fn only_requests_that_ran_nowhere_or_only_read_are_sent_again() {
        for line in [
            "MOVED 3999 127.0.0.1:6381",
            "CLUSTERDOWN The cluster is down",
            "LOADING Redis is loading the dataset in memory",
            "MASTERDOWN Link with MASTER is down",
            "READONLY You can't write against a read only replica.",
        ] {
            assert_eq!(resent(&server_error(line)), [true; 4], "{line}");
        }
        for line in [
            "ASK 3999 127.0.0.1:6381",
            "TRYAGAIN Multiple keys request during rehashing of slot",
        ] {
            assert_eq!(
                resent(&server_error(line)),
                [true, false, true, true],
                "{line}"
            );
        }
        let aborted =
            server_error("EXECABORT Transaction discarded because of: MOVED 3999 127.0.0.1:6381");
        assert_eq!(resent(&aborted), [true, false, true, true]);
        for lost in [
            io(std::io::ErrorKind::BrokenPipe),
            io(std::io::ErrorKind::ConnectionReset),
            io(std::io::ErrorKind::UnexpectedEof),
        ] {
            assert_eq!(resent(&lost), [false, false, false, true], "{lost}");
        }
        for refused in [
            server_error("ERR wrong number of arguments for 'incr' command"),
            server_error("WRONGTYPE Operation against a key holding the wrong kind of value"),
            server_error("NOSCRIPT No matching script."),
        ] {
            assert_eq!(resent(&refused), [false; 4], "{refused}");
        }
    }

    #[test]
    fn commands_that_write_are_not_reads() {
        let get = crate::command::cmd("GET").arg("k").owned();
        let incr = crate::command::cmd("INCR").arg("k").owned();
        assert!(reads_only([&get].into_iter()));
        assert!(!reads_only([&get, &incr].into_iter()));
        let mut pipe = redis::pipe();
        pipe.add_command(get);
        assert!(Resends::for_pipeline(&pipe).reads);
        pipe.atomic();
        assert!(Resends::for_pipeline(&pipe).whole);
    }

    /// A CLUSTER SLOTS range: `start..=end` served by `host:port`.
    fn range(start: i64, end: i64, host: Value, port: i64) -> Value {
        let id = Value::BulkString(b"id".to_vec());
        Value::Array(vec![
            Value::Int(start),
            Value::Int(end),
            Value::Array(vec![host, Value::Int(port), id]),
        ])
    }

    fn text(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn masters_are_named_once_in_address_order_with_a_slot_each() {
        let reply = Value::Array(vec![
            range(10_000, 16_383, text("10.0.0.2"), 7001),
            range(0, 4_999, text("10.0.0.1"), 7000),
            range(5_000, 9_999, text("10.0.0.2"), 7001),
        ]);
        let masters = masters_in(reply).expect("masters");
        let named: Vec<(&str, u16, u16)> = masters
            .iter()
            .map(|m| (m.host.as_str(), m.port, m.slot))
            .collect();
        assert_eq!(named, [("10.0.0.1", 7000, 0), ("10.0.0.2", 7001, 10_000)]);
    }

    #[test]
    fn a_master_without_a_host_is_where_it_was_reached() {
        for host in [text(""), Value::Nil, text("0.0.0.0"), text("::")] {
            let masters = masters_in(Value::Array(vec![range(0, 16_383, host.clone(), 7000)]))
                .expect("masters");
            assert_eq!(
                masters,
                [Master {
                    host: String::new(),
                    port: 7000,
                    slot: 0
                }],
                "{host:?}"
            );
        }
        let seed = redis::Client::open("redis://10.1.2.3:6379/")
            .expect("a URL")
            .get_connection_info()
            .clone();
        let node = at_node(&seed, String::new(), 7000);
        assert_eq!(node.addr().to_string(), "10.1.2.3:7000");
        let node = at_node(&seed, "10.0.0.9".to_string(), 7000);
        assert_eq!(node.addr().to_string(), "10.0.0.9:7000");
    }
}
