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
    /// A WATCH was sent and no EXEC, DISCARD or UNWATCH since.
    watching: bool,
    /// A MULTI was sent on its own and no EXEC or DISCARD since.
    in_multi: bool,
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
            watching: false,
            in_multi: false,
            in_flight: false,
            broken: false,
        })
    }

    /// Called on check-out: costs nothing for a clean connection, one
    /// round trip to clean a dirty one.
    async fn is_valid(&self, conn: &mut Tracked) -> Result<(), redis::RedisError> {
        if conn.in_multi {
            // DISCARD also drops the WATCHes.
            conn.req_packed_command(&redis::cmd("DISCARD")).await?;
        } else if conn.watching {
            conn.req_packed_command(&redis::cmd("UNWATCH")).await?;
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

/// The effect of one command on the connection's state.
fn transition(name: &[u8], watching: &mut bool, in_multi: &mut bool) {
    if name.eq_ignore_ascii_case(b"WATCH") {
        *watching = true;
    } else if name.eq_ignore_ascii_case(b"MULTI") {
        *in_multi = true;
    } else if name.eq_ignore_ascii_case(b"EXEC") || name.eq_ignore_ascii_case(b"DISCARD") {
        *watching = false;
        *in_multi = false;
    } else if name.eq_ignore_ascii_case(b"UNWATCH") && !*in_multi {
        *watching = false;
    }
}

fn command_name(cmd: &Cmd) -> &[u8] {
    match cmd.args_iter().next() {
        Some(redis::Arg::Simple(name)) => name,
        _ => b"",
    }
}

impl Tracked {
    /// Updates the state from what was sent: pessimistically (as if every
    /// command ran), since a failed WATCH or MULTI leaves the connection
    /// no dirtier than a clean-up can fix.
    fn sent<'c>(&mut self, cmds: impl Iterator<Item = &'c Cmd>) {
        for cmd in cmds {
            transition(command_name(cmd), &mut self.watching, &mut self.in_multi);
        }
    }

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
            self.sent(std::iter::once(cmd));
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
            if pipeline.is_transaction() {
                // MULTI ... EXEC in one write: whatever it held, the EXEC
                // (run or aborted) has dropped the WATCHes.
                self.watching = false;
            } else {
                self.sent(pipeline.cmd_iter());
            }
            let result = self.conn.req_packed_commands(pipeline, offset, count).await;
            self.finished(&result);
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.conn.get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::transition;

    fn state_after(names: &[&str]) -> (bool, bool) {
        let (mut watching, mut in_multi) = (false, false);
        for name in names {
            transition(name.as_bytes(), &mut watching, &mut in_multi);
        }
        (watching, in_multi)
    }

    #[test]
    fn tracks_watch_and_multi() {
        assert_eq!(state_after(&["GET"]), (false, false));
        assert_eq!(state_after(&["watch", "GET"]), (true, false));
        assert_eq!(state_after(&["WATCH", "UNWATCH"]), (false, false));
        assert_eq!(state_after(&["WATCH", "MULTI"]), (true, true));
        assert_eq!(state_after(&["WATCH", "MULTI", "EXEC"]), (false, false));
        assert_eq!(state_after(&["MULTI", "DISCARD"]), (false, false));
        // UNWATCH inside MULTI is only queued.
        assert_eq!(state_after(&["WATCH", "MULTI", "UNWATCH"]), (true, true));
    }
}
