//! `Db`: the one handle applications hold, over interchangeable backends.
//!
//! - [`backend`]: the seam every backend implements (the one place that
//!   says what a backend must do).
//! - [`memory`], [`server`], [`cluster`] and [`sentinel`]: the backends,
//!   one module each.
//! - [`connect`]: turning URLs (TLS, ACL users, timeouts) into a server
//!   backend; the constructors `Db::connect*` and `Db::from_env`.
//! - [`dedicated`]: exclusive connections (what WATCH needs), taken from
//!   the backend's pool and counted like every other round trip.
//! - [`cache`]: the near cache of model reads, kept coherent by the
//!   server's client tracking ([`Db::with_cache`]).

mod acks;
mod backend;
pub(crate) mod batch;
pub(crate) mod cache;
mod cluster;
mod conn_state;
mod connect;
mod counters;
mod dedicated;
mod lock;
mod memory;
pub(crate) mod optimistic;
mod patient;
pub(crate) mod plan;
mod pool;
mod pubsub;
pub(crate) mod query;
pub(crate) mod recall;
pub(crate) mod script;
mod sentinel;
mod server;
mod server_info;
mod slots;
mod url;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, Pipeline, RedisFuture, Value};

use crate::error::Result;
use crate::layout::KeyLayout;
use crate::memory::Engine;
use crate::sync_hook::{SyncEvent, SyncHooks};

use acks::Acks;
use backend::Backend;
pub use cache::{CacheConfig, CacheStats};
use counters::Counters;
pub use dedicated::DedicatedConnection;
pub use lock::{lock_key, LockGuard, LOCK_KEY_PREFIX};
pub use optimistic::{OptimisticConnection, RawTransaction};
pub use pubsub::{Message, Subscriber, SubscriberEvent};
pub use sentinel::SentinelConfig;
pub use server_info::{ServerInfo, ServerName, ServerVersion};

/// Whether `cmd` blocks its connection until another client acts (BLPOP,
/// XREAD BLOCK...), and so must not ride the shared one.
fn holds_up_others(cmd: &Cmd) -> bool {
    // Every such command's name starts with B or X (BLPOP, BZPOPMIN,
    // XREAD...): the others, nearly all requests, are told at one byte.
    match cmd.args_iter().next() {
        Some(redis::Arg::Simple([b'B' | b'b' | b'X' | b'x', ..])) => may_block(cmd),
        _ => false,
    }
}

/// Whether `cmd` may wait before it replies: it [holds up
/// others](holds_up_others), or it is a WAIT asked for replicas (which
/// stays on the connection whose writes it counts).
fn may_wait(cmd: &Cmd) -> bool {
    holds_up_others(cmd) || (crate::command::is(cmd, "WAIT") && may_block(cmd))
}

/// The engine's command table on `cmd` ([`redmodel_memory::may_block`]).
fn may_block(cmd: &Cmd) -> bool {
    let mut head: Vec<&[u8]> = Vec::with_capacity(8);
    for arg in cmd.args_iter() {
        match arg {
            redis::Arg::Simple(a) => head.push(a),
            // A SCAN cursor: no blocking command takes one.
            _ => return false,
        }
    }
    redmodel_memory::may_block(&head)
}

/// A redmodel error as the redis-rs error a `ConnectionLike` returns.
fn into_redis_error(err: crate::Error) -> redis::RedisError {
    match err {
        crate::Error::Connection { source }
        | crate::Error::Unavailable { source }
        | crate::Error::Server(source)
        | crate::Error::Reply(source) => source,
        other => redis::RedisError::from((
            redis::ErrorKind::Client,
            "no connection for a blocking command",
            other.to_string(),
        )),
    }
}

/// How many keys one SCAN call asks the server to look at.
const SCAN_COUNT: u64 = 1000;

/// A handle on a Redis database: the bundled memory engine, a Redis server,
/// or a Redis Cluster.
///
/// Cheap to clone (clones share the backend) and safe to use from many
/// tokio tasks at once. Every backend runs the same Redis commands, given
/// as [`redis::Cmd`] or [`redis::Pipeline`]; an atomic pipeline
/// ([`Pipeline::atomic`]) runs as one MULTI/EXEC transaction. A command
/// that blocks its connection (BLPOP, XREAD BLOCK...), alone or in a
/// pipeline, goes on a connection of its own from the `Db`'s pool, so it
/// holds up no other task's requests.
///
/// `Db` also implements redis-rs's [`ConnectionLike`], so redis-rs's
/// `AsyncCommands` work on it:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redmodel::Error> {
/// use redis::AsyncCommands;
/// let mut db = redmodel::Db::memory();
/// let _: () = db.set("visits", 1).await.map_err(redmodel::Error::from)?;
/// let n: i64 = db.incr("visits", 2).await.map_err(redmodel::Error::from)?;
/// assert_eq!(n, 3);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Db {
    /// The backend and what clones share besides it, behind one Arc so
    /// that cloning a `Db` is one reference-count increment.
    shared: Arc<Shared>,
    /// How this handle lays out model keys.
    layout: KeyLayout,
    /// The replica acknowledgements its writes wait for, if any
    /// ([`Db::with_replica_acks`]).
    acks: Option<Acks>,
}

/// How long a request may wait for a reply before it fails with a
/// connection error, so that an outage never hangs a caller.
pub(crate) const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection attempt may take.
pub(crate) const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);

/// State shared by a `Db` and its clones.
struct Shared {
    backend: Box<dyn Backend>,
    sync_hooks: SyncHooks,
    /// Requests of the Db, its clones and every connection they lent.
    counters: Arc<Counters>,
    /// Whether the server refused a script lately ([`script`]).
    scripts: crate::db::script::Scripts,
    /// What the checked writes last read ([`recall`]).
    recall: recall::Recall,
    /// The server's name and version, learnt when connecting ([`Db::server`]).
    server: ServerInfo,
    /// The near cache, once turned on ([`Db::with_cache`]).
    cache: OnceLock<Arc<cache::Cache>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("backend", &self.backend_name())
            .finish()
    }
}

impl Db {
    /// A new, empty memory engine.
    ///
    /// ```
    /// let db = redmodel::Db::memory();
    /// assert_eq!(db.backend_name(), "memory");
    /// ```
    pub fn memory() -> Db {
        Db::from_engine(Engine::new())
    }

    /// A new, empty memory engine reading time from `clock`: TTL tests move
    /// a [`ManualClock`](crate::memory::ManualClock) forward instead of
    /// sleeping. (The engine sees the clock's time; client-side times such
    /// as an `expire_at` argument are the caller's.)
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use std::time::Duration;
    /// use redmodel::memory::ManualClock;
    /// use redmodel::prelude::*;
    /// #[derive(redmodel::Admin, Debug)]
    /// struct Session { #[redmodel(pk)] id: String, user: String }
    ///
    /// let clock = ManualClock::starting_now();
    /// let db = Db::memory_with_clock(clock.clone());
    /// Session { id: "s1".into(), user: "ken".into() }.insert(&db).await?;
    /// Session::at("s1").expire(&db, Duration::from_secs(30 * 60)).await?;
    ///
    /// clock.advance(Duration::from_secs(29 * 60));
    /// assert!(Session::at("s1").load(&db).await?.is_some());
    /// clock.advance(Duration::from_secs(2 * 60));
    /// assert!(Session::at("s1").load(&db).await?.is_none());
    /// # Ok(()) }
    /// ```
    pub fn memory_with_clock(clock: impl crate::memory::Clock) -> Db {
        Db::from_engine(Engine::with_clock(clock))
    }

    /// A new, empty memory engine in cluster mode, with the cluster key
    /// layout: the code paths of Redis Cluster in process. The engine
    /// refuses a command, transaction or script whose keys are in more
    /// than one slot with Redis's `CROSSSLOT`, as a cluster does
    /// ([`Engine::with_cluster_mode`]).
    ///
    /// ```
    /// let db = redmodel::Db::memory_cluster();
    /// assert_eq!(db.key_layout(), redmodel::KeyLayout::Cluster);
    /// ```
    pub fn memory_cluster() -> Db {
        Db::from_engine(Engine::new().with_cluster_mode())
    }

    /// A new, empty memory engine behaving as Redis 7.4.1
    /// ([`RedisVersion::V7_4`](crate::memory::RedisVersion::V7_4)): with
    /// hash-field expiry, which the default 7.0.15 engine lacks.
    ///
    /// ```
    /// let db = redmodel::Db::memory_74();
    /// assert!(db.server().has_field_expiry());
    /// assert_eq!(db.server().to_string(), "redis 7.4.1");
    /// ```
    pub fn memory_74() -> Db {
        Db::from_engine(Engine::new().with_version(crate::memory::RedisVersion::V7_4))
    }

    /// A handle on an existing memory engine (for instance one built with
    /// a [`ManualClock`](crate::memory::ManualClock)); in the cluster key
    /// layout if the engine is in cluster mode; on the Redis version the
    /// engine behaves as ([`Db::server`]).
    pub fn from_engine(engine: Engine) -> Db {
        let cluster = engine.is_cluster_mode();
        let server = ServerInfo::engine(engine.version());
        let db = Db::from_backend(memory::MemoryBackend::new(engine), server);
        if cluster {
            db.with_key_layout(KeyLayout::Cluster)
        } else {
            db
        }
    }

    /// Wraps a backend, on the server `server`: every constructor ends here.
    fn from_backend(backend: impl Backend, server: ServerInfo) -> Db {
        let layout = if backend.is_cluster() {
            KeyLayout::Cluster
        } else {
            KeyLayout::Plain
        };
        Db {
            shared: Arc::new(Shared {
                backend: Box::new(backend),
                sync_hooks: Default::default(),
                scripts: Default::default(),
                recall: Default::default(),
                counters: Arc::default(),
                server,
                cache: OnceLock::new(),
            }),
            layout,
            acks: None,
        }
    }

    /// How this handle lays out model keys: [`KeyLayout::Cluster`] on Redis
    /// Cluster, else [`KeyLayout::Plain`] unless set with
    /// [`with_key_layout`](Db::with_key_layout).
    pub fn key_layout(&self) -> KeyLayout {
        self.layout
    }

    /// A handle on the same database (clones share everything else) that
    /// lays out model keys in `layout`: the cluster layout on one server,
    /// to store data in the form a cluster wants before moving it there,
    /// or to run cluster code paths on one node.
    ///
    /// Data written in one layout is not read in the other: pick one per
    /// database.
    ///
    /// ```
    /// use redmodel::{Db, KeyLayout};
    /// let db = Db::memory().with_key_layout(KeyLayout::Cluster);
    /// assert_eq!(db.key_layout(), KeyLayout::Cluster);
    /// ```
    pub fn with_key_layout(&self, layout: KeyLayout) -> Db {
        Db {
            shared: Arc::clone(&self.shared),
            // A cluster cannot hold the plain layout's multi-key writes.
            layout: if self.backend().is_cluster() {
                KeyLayout::Cluster
            } else {
                layout
            },
            acks: self.acks,
        }
    }

    /// A handle on the same database (clones share everything else) whose
    /// every request that may write (a model write, a transaction's EXEC, a
    /// script, a write command sent through it or through its dedicated
    /// connections) is followed by Redis's `WAIT replicas timeout`, in the
    /// same round trip and on the same connection: it returns once
    /// `replicas` replicas hold the write, or fails with
    /// [`Error::NotReplicated`](crate::Error::NotReplicated) after
    /// `timeout` (a zero timeout waits as long as it takes, as WAIT 0 does).
    ///
    /// Redis replicates asynchronously: without this, a write the master
    /// acknowledged just before a failover can be lost. With it, a write
    /// that returned `Ok` is on `replicas` replicas too, and a failover
    /// (which promotes a replica) loses it only if every one of them is
    /// lost as well. A `NotReplicated` write is done on the master, only
    /// its copies are missing: do not blindly run it again (an increment
    /// would count twice). Reads are sent as before.
    ///
    /// The price is the replication delay on every write (well under a
    /// millisecond on a local network). WAIT blocks its connection until
    /// it replies (for the whole `timeout` when a replica is missing), so
    /// each write that waits goes on an exclusive connection from the
    /// `Db`'s pool, as a blocking command does: the shared connection, and
    /// the requests of other tasks on it, never wait behind it. At most
    /// the pool's size wait at once; more queue for a connection, as long
    /// as the `Db`'s connection and response timeouts together, then fail
    /// with [`Error::Busy`](crate::Error::Busy), having sent nothing. On a
    /// cluster, a pipeline of writes across slots goes command by command,
    /// each write followed by a WAIT on its own node. On a server without
    /// replicas (the memory engine has none) a count above zero fails
    /// every write after `timeout`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use std::time::Duration;
    /// let db = redmodel::Db::memory();
    /// // Zero replicas: nothing to wait for (the engine has none).
    /// let acked = db.with_replica_acks(0, Duration::from_millis(100));
    /// acked.query::<()>(redis::cmd("SET").arg("k").arg(1)).await?;
    /// let one = db.with_replica_acks(1, Duration::from_millis(20));
    /// let err = one.query::<()>(redis::cmd("SET").arg("k").arg(2)).await.unwrap_err();
    /// assert!(matches!(err, redmodel::Error::NotReplicated { acked: 0, wanted: 1 }));
    /// // The write itself was done.
    /// assert_eq!(db.query::<i64>(redis::cmd("GET").arg("k")).await?, 2);
    /// # Ok(()) }
    /// ```
    pub fn with_replica_acks(&self, replicas: u32, timeout: Duration) -> Db {
        Db {
            shared: Arc::clone(&self.shared),
            layout: self.layout,
            acks: Some(Acks { replicas, timeout }),
        }
    }

    /// The hash slot of the model key `plain` (in plain form) as this
    /// database stores it.
    pub(crate) fn slot_of_plain(&self, plain: &str) -> u16 {
        self.layout.slot(plain)
    }

    /// Whether this handle is on a Redis Cluster ([`Db::connect_cluster`]).
    pub fn is_cluster(&self) -> bool {
        self.backend().is_cluster()
    }

    /// Every key matching the glob `pattern`, without repeats, in byte
    /// order: SCAN (never KEYS), on every master of a cluster, each with
    /// its own cursor. Keys that are not UTF-8 are left out. Escape the
    /// literal parts of a pattern with
    /// [`model::key::glob_escape`](crate::model::key::glob_escape).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// db.query::<()>(redis::cmd("MSET").arg("a:1").arg(1).arg("a:2").arg(2).arg("b").arg(3)).await?;
    /// assert_eq!(db.scan_keys("a:*").await?, ["a:1", "a:2"]);
    /// # Ok(()) }
    /// ```
    pub async fn scan_keys(&self, pattern: &str) -> Result<Vec<String>> {
        let keys = self.backend().scan(pattern, SCAN_COUNT).await?;
        let keys: std::collections::BTreeSet<String> = keys
            .into_iter()
            .filter_map(|k| String::from_utf8(k).ok())
            .collect();
        Ok(keys.into_iter().collect())
    }

    /// A model key (plain form) as this database stores it.
    pub(crate) fn stored<'a>(&self, plain: &'a str) -> Cow<'a, str> {
        self.layout.stored(plain)
    }

    /// Makes `pipe`'s reads see one instant: a MULTI against a server,
    /// where other clients' commands can come between a pipeline's. In
    /// process the engine runs a pipeline of commands that do not block
    /// under one lock, already one instant, and queueing each command for
    /// EXEC only costs. A server at its `maxmemory` refuses a MULTI's
    /// commands; [`read_replies`](Self::read_replies) then runs them as one
    /// read-only script, with a reply for every command: such a pipeline
    /// ignores none.
    pub(crate) fn at_one_instant(&self, pipe: &mut Pipeline) {
        if self.engine().is_none() {
            pipe.atomic();
        }
    }

    /// Whether every key this handle stores is in one slot, so that one
    /// atomic unit (a script, a MULTI/EXEC, a WATCH) can hold any of them
    /// together: true in the plain layout, false in the cluster layout,
    /// where a write that spans objects runs as ordered single-slot steps.
    pub(crate) fn one_slot(&self) -> bool {
        self.layout == KeyLayout::Plain
    }

    /// Whether a write of the object stored at `key` with its index
    /// entries, needing `guards` (stored keys) to exist, can be one atomic
    /// unit: always in the plain layout; in the cluster layout, where the
    /// object's table is in a slot group (its index keys then share the
    /// object's slot) and every guard is in that slot too. Otherwise the
    /// write runs as ordered single-slot steps.
    pub(crate) fn one_unit_with_indexes(&self, key: &str, guards: &[Cow<'_, str>]) -> bool {
        self.one_slot()
            || (self.layout.one_slot_with_indexes(key)
                && guards.iter().all(|g| g == key || self.shares_slot(g, key)))
    }

    /// Whether two stored keys are in one slot in this layout, so that one
    /// atomic unit (a script, a MULTI/EXEC, a WATCH) can hold both: always
    /// in the plain layout, by their hash slots in the cluster layout.
    pub(crate) fn shares_slot(&self, a: &str, b: &str) -> bool {
        self.one_slot() || slot_of(a) == slot_of(b)
    }

    fn backend(&self) -> &dyn Backend {
        &*self.shared.backend
    }

    /// `"memory"` or `"redis"`.
    pub fn backend_name(&self) -> &'static str {
        self.backend().name()
    }

    /// The memory engine behind this handle, if it is one.
    pub fn engine(&self) -> Option<&Engine> {
        self.backend().engine()
    }

    /// On the memory engine, runs `f` atomically as a script would run
    /// ([`Engine::atomically`]), counted as the one command and round trip
    /// the script would be; `None` on a server.
    pub(crate) fn atomically<R>(
        &self,
        f: impl FnOnce(&mut crate::memory::Atomic<'_>) -> R,
    ) -> Option<R> {
        let engine = self.engine()?;
        self.shared.counters.command();
        let db = usize::try_from(self.backend().db_number()).unwrap_or(0);
        Some(engine.atomically(db, f))
    }

    /// On the memory engine, runs `cmd` at once, without a future: the
    /// nested futures of an async round trip cost an in-process load more
    /// than the engine's own work (their state moved from frame to
    /// frame). Counted as one command. `None` on a server, and for a
    /// command that blocks or that this `Db` follows with WAIT: those take
    /// the async path. Every single command of the `Db` in process runs
    /// through here (`req_packed_command`).
    pub(crate) fn run_now(&self, cmd: &Cmd) -> Option<Value> {
        let engine = self.engine()?;
        if may_wait(cmd) || self.acks.is_some_and(|_| Acks::wanted_for(cmd)) {
            return None;
        }
        self.shared.counters.command();
        Some(engine.connection().execute_cmd(cmd))
    }

    /// Runs one command and converts its reply.
    pub async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T> {
        let mut conn = self.clone();
        Ok(cmd.query_async(&mut conn).await?)
    }

    /// Runs a pipeline (in one round trip; atomically if it is
    /// [`atomic`](Pipeline::atomic)) and converts its replies.
    pub async fn query_pipeline<T: FromRedisValue>(&self, pipeline: &Pipeline) -> Result<T> {
        let mut conn = self.clone();
        Ok(pipeline.query_async(&mut conn).await?)
    }

    /// Registers a sync hook: called with the key and the write count of an
    /// object every `sync_every` full writes of its model (see
    /// [`model`](crate::model)'s sync section), for write-behind copying to
    /// a persistent store. Clones of this `Db` share the hooks.
    ///
    /// The hook runs inline after the write: keep it short, for instance by
    /// sending the event to a channel that another task drains.
    pub fn on_sync(&self, hook: impl Fn(&SyncEvent) + Send + Sync + 'static) {
        self.shared.sync_hooks.register(Arc::new(hook));
    }

    /// What the `Db` knows of its server's scripts (refusals, scripts sent
    /// with their text), shared by the clones.
    pub(crate) fn scripts(&self) -> &crate::db::script::Scripts {
        &self.shared.scripts
    }

    /// What the checked writes last read, shared by the clones.
    pub(crate) fn recall(&self) -> &recall::Recall {
        &self.shared.recall
    }

    /// Calls the sync hooks (from the model layer's writes).
    pub(crate) fn run_sync_hooks(&self, event: &SyncEvent) {
        self.shared.sync_hooks.run(event);
    }

    /// How many round trips this `Db`, its clones and the connections they
    /// lent ([`Db::dedicated`], the optimistic paths) have made: one per
    /// command or pipeline sent (a pipeline of any length is one). For
    /// metrics, and for tests that check an operation's cost.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let before = db.round_trips();
    /// db.query::<()>(redis::cmd("SET").arg("k").arg(1)).await?;
    /// db.query_pipeline::<()>(redis::pipe().cmd("INCR").arg("k").cmd("INCR").arg("k")).await?;
    /// assert_eq!(db.round_trips() - before, 2);
    /// # Ok(()) }
    /// ```
    pub fn round_trips(&self) -> u64 {
        self.shared.counters.round_trips()
    }

    /// How many commands those round trips carried: one per command, and
    /// for an atomic pipeline its MULTI and EXEC too (what a server counts
    /// in `INFO stats` `total_commands_processed`, when no EXEC is
    /// aborted).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let mut pipe = redis::pipe();
    /// pipe.atomic().cmd("INCR").arg("a").cmd("INCR").arg("b");
    /// db.query_pipeline::<()>(&pipe).await?;
    /// assert_eq!((db.round_trips(), db.commands_sent()), (1, 4));
    /// # Ok(()) }
    /// ```
    pub fn commands_sent(&self) -> u64 {
        self.shared.counters.commands()
    }

    /// A connection of its own, not shared with other tasks' commands: what
    /// WATCH / MULTI / EXEC need, since WATCH belongs to a connection.
    ///
    /// On a server it comes from a pool (at most 16 connections, opened
    /// when first needed) and goes back when dropped; one left WATCHing or
    /// inside MULTI is cleaned (DISCARD / UNWATCH) before its next use, and
    /// one whose request was abandoned midway is closed instead. With all
    /// 16 in use, a request waits as long as the `Db`'s connection and
    /// response timeouts together, then fails with
    /// [`Error::Busy`](crate::Error::Busy).
    ///
    /// On a Redis Cluster it is a cluster connection of its own, which
    /// routes each command by its key: WATCH, reads, and atomic pipelines
    /// whose keys share a slot (what [`OptimisticConnection`]
    /// sends) work; a plain pipeline across slots goes command by command,
    /// in order, as on the `Db`; a MULTI, EXEC or DISCARD typed as a command of its own
    /// has no key to be routed by and is refused
    /// ([`Error::Misuse`](crate::Error::Misuse)): send the transaction as an
    /// atomic pipeline.
    pub async fn dedicated(&self) -> Result<DedicatedConnection> {
        self.exclusive().await
    }

    /// A connection of its own that sends everything to the node serving
    /// `key`: on a Redis Cluster, the master of `key`'s slot (a new cluster
    /// connection, closed when dropped), so that a transaction typed
    /// command by command (WATCH, MULTI, ..., EXEC) runs there, on keys of
    /// that slot (give them `key`'s hash tag). If the slot moves meanwhile,
    /// its commands get the node's MOVED refusals. On one server or the
    /// memory engine, the same as [`dedicated`](Self::dedicated).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let mut conn = db.dedicated_for("{acct}:a").await?;
    /// conn.query::<()>(&redmodel::redis::cmd("MULTI")).await?;
    /// conn.query::<()>(redmodel::redis::cmd("SET").arg("{acct}:a").arg(1)).await?;
    /// conn.query::<()>(redmodel::redis::cmd("SET").arg("{acct}:b").arg(2)).await?;
    /// let done: Vec<String> = conn.query(&redmodel::redis::cmd("EXEC")).await?;
    /// assert_eq!(done, ["OK", "OK"]);
    /// # Ok(()) }
    /// ```
    pub async fn dedicated_for(&self, key: &str) -> Result<DedicatedConnection> {
        let link = self.invalidating(self.backend().exclusive_for(key.as_bytes()).await?);
        // Routed to one node, it takes MULTI / EXEC like a plain connection.
        Ok(DedicatedConnection::new(
            link,
            Arc::clone(&self.shared.counters),
            false,
            self.acks,
        ))
    }

    /// An exclusive link, on every backend (on a cluster, a cluster
    /// connection of its own): what the optimistic transactions use.
    pub(crate) async fn exclusive(&self) -> Result<DedicatedConnection> {
        let link = self.invalidating(self.backend().exclusive().await?);
        Ok(DedicatedConnection::new(
            link,
            Arc::clone(&self.shared.counters),
            self.is_cluster(),
            self.acks,
        ))
    }
}

impl Db {
    /// `link`, whose writes drop their keys from the near cache if it is on.
    fn invalidating(&self, link: Box<dyn backend::Link>) -> Box<dyn backend::Link> {
        match self.cache() {
            Some(cache) => Box::new(cache::Invalidating::new(link, Arc::clone(cache))),
            None => link,
        }
    }
}

impl ConnectionLike for Db {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        // In process the engine answers at once: no backend future.
        if let Some(reply) = self.run_now(cmd) {
            if let Some(cache) = self.cache() {
                cache.after_write(cmd);
            }
            return Box::pin(std::future::ready(Ok(reply)));
        }
        // A BLPOP, or a write this handle follows with WAIT, blocks its
        // connection until it is served: on the shared one it would hold
        // up every request queued behind it (for WAIT's whole timeout when
        // a replica is missing). It gets a connection of its own, which
        // adds the WAIT. A WAIT sent by the caller stays on the shared
        // connection: it counts the writes of its own connection, and
        // the caller's went there.
        if holds_up_others(cmd) || self.acks.is_some_and(|_| Acks::wanted_for(cmd)) {
            return Box::pin(async move {
                let mut conn = self.exclusive().await.map_err(into_redis_error)?;
                conn.req_packed_command(cmd).await
            });
        }
        self.shared.counters.command();
        match self.cache() {
            None => self.shared.backend.send(cmd),
            Some(cache) => {
                let cache = Arc::clone(cache);
                Box::pin(async move {
                    let reply = self.shared.backend.send(cmd).await;
                    cache.after_write(cmd);
                    reply
                })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let own = self
            .acks
            .is_some_and(|_| Acks::wanted_for_pipeline(pipeline))
            || pipeline.cmd_iter().any(holds_up_others);
        if !own {
            self.shared.counters.pipeline(pipeline);
            return match self.cache() {
                None => self.shared.backend.send_pipeline(pipeline, offset, count),
                Some(cache) => {
                    let cache = Arc::clone(cache);
                    Box::pin(async move {
                        let replies = self
                            .shared
                            .backend
                            .send_pipeline(pipeline, offset, count)
                            .await;
                        cache.after_pipeline(pipeline);
                        replies
                    })
                }
            };
        }
        // A pipeline followed by WAIT, or holding a BLPOP: on a connection
        // of its own, as a command is above.
        Box::pin(async move {
            let mut conn = self.exclusive().await.map_err(into_redis_error)?;
            conn.req_packed_commands(pipeline, offset, count).await
        })
    }

    fn get_db(&self) -> i64 {
        self.backend().db_number()
    }
}

/// The hash slot of a stored key (its hash tag's, if it has one).
fn slot_of(key: &str) -> redis::cluster_routing::Slot {
    redis::cluster_routing::Slot::for_key(key.as_bytes())
}

/// A boxed, sendable future: what the seam's async methods return, so that
/// the trait stays object safe.
pub(crate) type BoxFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
