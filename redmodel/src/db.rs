//! `Db`: the one handle applications hold, over interchangeable backends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::{Cmd, FromRedisValue, Pipeline, RedisFuture, Value};

use crate::error::Result;
use crate::memory::{self, Engine};
use crate::model::SyncEvent;

/// How long a request may wait for a reply before it fails with a
/// connection error, so that an outage never hangs a caller.
pub(crate) const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection attempt may take.
pub(crate) const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);

/// A handle on a Redis database: the bundled memory engine or a Redis server.
///
/// Cheap to clone (clones share the backend) and safe to use from many
/// tokio tasks at once. Every backend runs the same Redis commands, given
/// as [`redis::Cmd`] or [`redis::Pipeline`]; an atomic pipeline
/// ([`Pipeline::atomic`]) runs as one MULTI/EXEC transaction.
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
    backend: Backend,
    /// What clones share besides the backend: the sync hooks and the
    /// round-trip counter. One Arc, so cloning stays cheap.
    shared: Arc<Shared>,
}

/// State shared by a `Db` and its clones.
#[derive(Default)]
struct Shared {
    sync_hooks: crate::model::SyncHooks,
    round_trips: AtomicU64,
}

#[derive(Clone)]
enum Backend {
    Memory(Engine),
    Redis {
        /// Shared, not copied, by clones of the Db (every query clones it):
        /// with TLS its connection info carries the TLS parameters.
        client: Arc<redis::Client>,
        manager: ConnectionManager,
    },
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
    pub fn memory() -> Db {
        Db::from_engine(Engine::new())
    }

    /// A handle on an existing memory engine (for instance one built with
    /// a [`ManualClock`](crate::memory::ManualClock)).
    pub fn from_engine(engine: Engine) -> Db {
        Db {
            backend: Backend::Memory(engine),
            shared: Arc::default(),
        }
    }

    /// Connects to the Redis server at `url`: `redis://[user:password@]host[:port][/db]`,
    /// or `rediss://` for TLS, or `redis+unix:///path`. The connection is
    /// re-established by itself after the server goes away and comes back;
    /// requests made meanwhile fail with [`Error::Connection`] within the
    /// response timeout (5 s) instead of hanging.
    ///
    /// - `user:password@` logs in as that ACL user (`:password@` alone as
    ///   the `default` user, for a server with `requirepass`); credentials
    ///   the server refuses give [`Error::Auth`] here, at connect time.
    ///   Percent-encode reserved characters in them (`@` is `%40`).
    /// - `/db` selects that database number on every (re)connection.
    /// - `rediss://` verifies the server's certificate against the system's
    ///   root certificates; see `Db::connect_with_tls` for a private CA or
    ///   a client certificate. It needs the `tls` feature (on by default):
    ///   without it a `rediss://` URL gives [`Error::Config`] saying so.
    ///
    /// [`Error::Connection`]: crate::Error::Connection
    /// [`Error::Auth`]: crate::Error::Auth
    /// [`Error::Config`]: crate::Error::Config
    pub async fn connect(url: &str) -> Result<Db> {
        Self::connect_with_timeouts(url, DEFAULT_CONNECTION_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT).await
    }

    /// Like [`Db::connect`], with explicit connection and response timeouts.
    pub async fn connect_with_timeouts(
        url: &str,
        connect: Duration,
        response: Duration,
    ) -> Result<Db> {
        let client = crate::tls::open_client(url)?;
        Self::from_client(client, connect, response).await
    }

    /// Connects through an already built redis-rs client (the URL
    /// constructors and [`Db::connect_with_tls`] end here).
    pub(crate) async fn from_client(
        client: redis::Client,
        connect: Duration,
        response: Duration,
    ) -> Result<Db> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect))
            .set_response_timeout(Some(response))
            .set_number_of_retries(3)
            .set_max_delay(Duration::from_millis(500));
        let manager = ConnectionManager::new_with_config(client.clone(), config).await?;
        Ok(Db {
            backend: Backend::Redis {
                client: Arc::new(client),
                manager,
            },
            shared: Arc::default(),
        })
    }

    /// `REDIS_URL` if set (and not empty), else a new memory engine.
    pub async fn from_env() -> Result<Db> {
        match std::env::var("REDIS_URL") {
            Ok(url) if !url.trim().is_empty() => Db::connect(url.trim()).await,
            _ => Ok(Db::memory()),
        }
    }

    /// `"memory"` or `"redis"`.
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Memory(_) => "memory",
            Backend::Redis { .. } => "redis",
        }
    }

    /// The memory engine behind this handle, if it is one.
    pub fn engine(&self) -> Option<&Engine> {
        match &self.backend {
            Backend::Memory(engine) => Some(engine),
            Backend::Redis { .. } => None,
        }
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

    /// Registers a sync hook (the seed's `syncDB`): called with the key and
    /// the write count of an object every `sync_every` full writes of its
    /// model (see [`model`](crate::model)'s sync section), for write-behind
    /// copying to a persistent store. Clones of this `Db` share the hooks.
    ///
    /// The hook runs inline after the write: keep it short, for instance by
    /// sending the event to a channel that another task drains.
    pub fn on_sync(&self, hook: impl Fn(&SyncEvent) + Send + Sync + 'static) {
        self.shared.sync_hooks.register(Arc::new(hook));
    }

    /// Calls the sync hooks (from the model layer's writes).
    pub(crate) fn run_sync_hooks(&self, event: &SyncEvent) {
        self.shared.sync_hooks.run(event);
    }

    /// How many round trips this `Db` and its clones have made: one per
    /// command or pipeline sent (a pipeline of any length is one). For
    /// metrics, and for tests that check an operation's cost.
    pub fn round_trips(&self) -> u64 {
        self.shared.round_trips.load(Ordering::Relaxed)
    }

    fn count_round_trip(&self) {
        self.shared.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection of its own, not shared with other tasks' commands: what
    /// WATCH / MULTI / EXEC need, since WATCH belongs to a connection.
    pub async fn dedicated(&self) -> Result<DedicatedConnection> {
        let inner = match &self.backend {
            Backend::Memory(engine) => Dedicated::Memory(Box::new(engine.connection())),
            Backend::Redis { client, .. } => {
                let config = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(DEFAULT_CONNECTION_TIMEOUT))
                    .set_response_timeout(Some(DEFAULT_RESPONSE_TIMEOUT));
                Dedicated::Redis(
                    client
                        .get_multiplexed_async_connection_with_config(&config)
                        .await?,
                )
            }
        };
        Ok(DedicatedConnection { inner })
    }
}

impl ConnectionLike for Db {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.count_round_trip();
        match &mut self.backend {
            Backend::Memory(engine) => {
                let reply = engine.connection().execute_cmd(cmd);
                Box::pin(std::future::ready(Ok(reply)))
            }
            Backend::Redis { manager, .. } => manager.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.count_round_trip();
        match &mut self.backend {
            Backend::Memory(engine) => Box::pin(async move {
                let mut conn = engine.connection();
                conn.req_packed_commands(pipeline, offset, count).await
            }),
            Backend::Redis { manager, .. } => manager.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.backend {
            Backend::Memory(_) => 0,
            Backend::Redis { manager, .. } => manager.get_db(),
        }
    }
}

/// A connection used by one task at a time (see [`Db::dedicated`]). Its
/// WATCHed keys and MULTI state are its own.
pub struct DedicatedConnection {
    inner: Dedicated,
}

enum Dedicated {
    Memory(Box<memory::Connection>),
    Redis(MultiplexedConnection),
}

impl std::fmt::Debug for DedicatedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DedicatedConnection")
            .finish_non_exhaustive()
    }
}

impl DedicatedConnection {
    /// Runs one command on this connection and converts its reply.
    pub async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        Ok(cmd.query_async(self).await?)
    }

    /// Runs a pipeline on this connection and converts its replies.
    pub async fn query_pipeline<T: FromRedisValue>(&mut self, pipeline: &Pipeline) -> Result<T> {
        Ok(pipeline.query_async(self).await?)
    }
}

impl ConnectionLike for DedicatedConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.inner {
            Dedicated::Memory(conn) => conn.req_packed_command(cmd),
            Dedicated::Redis(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.inner {
            Dedicated::Memory(conn) => conn.req_packed_commands(pipeline, offset, count),
            Dedicated::Redis(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.inner {
            Dedicated::Memory(conn) => conn.get_db(),
            Dedicated::Redis(conn) => conn.get_db(),
        }
    }
}
