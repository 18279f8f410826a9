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

use super::conn_state::ConnState;

/// How many exclusive connections one `Db` (and its clones) may hold open.
pub(crate) const POOL_SIZE: u32 = 16;

/// Opens exclusive connections with the `Db`'s timeouts.
pub(crate) struct Manager {
    pub(crate) client: redis::Client,
    pub(crate) config: redis::AsyncConnectionConfig,
}

/// A pooled connection and the state the commands sent on it left.
pub(crate) struct Tracked {
    conn: MultiplexedConnection,
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
        Ok(Tracked {
            conn,
            state: ConnState::default(),
            in_flight: false,
            broken: false,
        })
    }

    /// Called on check-out: costs nothing for a clean connection, one
    /// round trip to clean a dirty one.
    async fn is_valid(&self, conn: &mut Tracked) -> Result<(), redis::RedisError> {
        if let Some(clean_up) = conn.state.clean_up() {
            conn.req_packed_command(&clean_up).await?;
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut Tracked) -> bool {
        conn.broken || conn.in_flight
    }
}

/// Builds the pool: lazily, so that connecting a `Db` opens only its
/// shared connection, and WATCH users pay for the connections they use.
pub(crate) fn build(manager: Manager, wait: Duration) -> bb8::Pool<Manager> {
    bb8::Pool::builder()
        .max_size(POOL_SIZE)
        .min_idle(None)
        .test_on_check_out(true)
        .connection_timeout(wait)
        .build_unchecked(manager)
}

impl Tracked {
    fn finished<T>(&mut self, result: &redis::RedisResult<T>) {
        self.in_flight = false;
        if let Err(err) = result {
            if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() {
                self.broken = true;
            }
        }
    }
}

impl ConnectionLike for Tracked {
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
