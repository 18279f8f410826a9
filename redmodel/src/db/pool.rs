//! The pool of exclusive server connections (for WATCH / MULTI / EXEC).
//!
//! bb8 does the pooling (waiting for a free connection, opening new ones
//! up to the limit, dropping broken ones). What it cannot know is Redis
//! connection state: a connection handed back while WATCHing, or inside a
//! MULTI typed by hand, would abort or swallow the next borrower's
//! commands. So every pooled connection tracks that state from the
//! commands sent through it, and the pool cleans a dirty one (DISCARD,
//! UNWATCH) when it is next checked out. A connection whose request was
//! abandoned midway (its future dropped) is in a state nobody knows; it
//! is closed, not reused.

use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{Cmd, Pipeline, RedisFuture, Value};

use super::backend::Link;
use super::conn_state::ConnState;
use crate::error::{Error, Result};

/// How many exclusive connections one `Db` (and its clones) may hold open.
pub(crate) const POOL_SIZE: u32 = 16;

/// Opens exclusive connections with the `Db`'s timeouts.
pub(crate) struct Manager {
    pub(crate) client: redis::Client,
    pub(crate) config: redis::AsyncConnectionConfig,
}

/// A pooled connection and the state the commands sent on it left: a
/// connection to one server, or (for Redis Cluster) a cluster connection
/// of its own.
pub(crate) struct Tracked<C = MultiplexedConnection> {
    conn: C,
    state: ConnState,
    /// A request was sent and its reply not yet read: set before sending,
    /// cleared after, so it stays set if the request's future is dropped.
    in_flight: bool,
    /// The connection failed (I/O error, timeout): never reuse it.
    broken: bool,
}

impl bb8::ManageConnection for Manager {
    type Connection = Tracked;
    type Error = redis::RedisError;

    async fn connect(&self) -> Result<Tracked, redis::RedisError> {
        let conn = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        Ok(Tracked::new(conn))
    }

    /// Called on check-out: costs nothing for a clean connection, one
    /// round trip to clean a dirty one.
    async fn is_valid(&self, conn: &mut Tracked) -> Result<(), redis::RedisError> {
        conn.clean_up().await
    }

    fn has_broken(&self, conn: &mut Tracked) -> bool {
        conn.has_broken()
    }
}

/// Builds the pool: lazily, so that connecting a `Db` opens only its
/// shared connection, and WATCH users pay for the connections they use.
pub(crate) fn build<M: bb8::ManageConnection>(manager: M, wait: Duration) -> bb8::Pool<M> {
    bb8::Pool::builder()
        .max_size(POOL_SIZE)
        .min_idle(None)
        .test_on_check_out(true)
        .connection_timeout(wait)
        .build_unchecked(manager)
}

impl<C: ConnectionLike + Send> Tracked<C> {
    /// A fresh connection, clean.
    pub(crate) fn new(conn: C) -> Self {
        Tracked {
            conn,
            state: ConnState::default(),
            in_flight: false,
            broken: false,
        }
    }

    /// Called on check-out: costs nothing for a clean connection, one
    /// round trip to clean a dirty one.
    pub(crate) async fn clean_up(&mut self) -> Result<(), redis::RedisError> {
        if let Some(clean_up) = self.state.clean_up() {
            self.req_packed_command(&clean_up).await?;
        }
        Ok(())
    }

    /// Whether the connection must not be reused.
    pub(crate) fn has_broken(&self) -> bool {
        self.broken || self.in_flight
    }

    fn finished<T>(&mut self, result: &redis::RedisResult<T>) {
        self.in_flight = false;
        if let Err(err) = result
            && (err.is_io_error() || err.is_timeout() || err.is_connection_dropped())
        {
            self.broken = true;
        }
    }
}

impl<C: ConnectionLike + Send> ConnectionLike for Tracked<C> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            self.in_flight = true;
            self.state.sending(cmd);
            let result = self.conn.req_packed_command(cmd).await;
            self.finished(&result);
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.in_flight = true;
            self.state.sending_pipeline(pipeline);
            let result = self.conn.req_packed_commands(pipeline, offset, count).await;
            self.finished(&result);
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.conn.get_db()
    }
}

/// Borrows a connection from `pool` as an exclusive link, waiting at most
/// `wait` for one to be free.
pub(crate) async fn checkout<M>(pool: &bb8::Pool<M>, wait: Duration) -> Result<Box<dyn Link>>
where
    M: bb8::ManageConnection<Error = redis::RedisError>,
    M::Connection: ConnectionLike + Send,
{
    match pool.get_owned().await {
        Ok(conn) => Ok(Box::new(Pooled(conn)) as Box<dyn Link>),
        Err(bb8::RunError::User(err)) => Err(Error::from(err)),
        // Every connection open and none idle: the server answers, this
        // process holds them all. Otherwise they could not be opened.
        Err(bb8::RunError::TimedOut) => {
            let state = pool.state();
            if state.connections >= POOL_SIZE && state.idle_connections == 0 {
                Err(Error::Busy {
                    held: POOL_SIZE,
                    waited: wait,
                })
            } else {
                Err(Error::Connection {
                    source: redis::RedisError::from((
                        redis::ErrorKind::Io,
                        "no pooled connection could be opened in time",
                        format!("{wait:?}"),
                    )),
                })
            }
        }
    }
}

/// A connection borrowed from a pool; it goes back when dropped.
struct Pooled<M: bb8::ManageConnection>(bb8::PooledConnection<'static, M>);

impl<M> ConnectionLike for Pooled<M>
where
    M: bb8::ManageConnection,
    M::Connection: ConnectionLike + Send,
{
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.0.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.0.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}
