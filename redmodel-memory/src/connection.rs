//! An in-process client of the engine, usable wherever redis-rs expects an
//! async connection.

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisFuture, Value};

use super::blocking::Ticket;
use super::session::{Outcome, Session};
use super::Engine;

/// One client of an [`Engine`]: its own selected database, MULTI queue and
/// WATCHed keys, like one TCP connection to a Redis server.
///
/// Implements [`redis::aio::ConnectionLike`], so redis-rs's command builders
/// and its `AsyncCommands` trait run on it unchanged.
///
/// A blocking command (BLPOP, BLMOVE, BZPOPMIN...) that finds nothing to
/// take makes the future wait, without holding the engine's lock or the
/// thread, until another client serves it or its timeout passes (a timeout
/// uses tokio's timer). Dropping the future before that gives up the wait,
/// as a client that disconnects: the client takes nothing afterwards.
#[derive(Debug)]
pub struct Connection {
    engine: Engine,
    session: Session,
}

impl Connection {
    pub(crate) fn new(engine: Engine) -> Self {
        Connection {
            engine,
            session: Session::default(),
        }
    }

    /// Runs one command given as its arguments (name first) and returns
    /// the reply, errors included as `Value::ServerError`.
    ///
    /// A blocking command (BLPOP...) that finds nothing to take blocks the
    /// calling thread until another client serves it or its timeout
    /// passes, as on a synchronous connection to a server. In async code,
    /// run it through [`redis::aio::ConnectionLike`] instead, whose future
    /// waits without blocking the thread.
    pub fn execute(&mut self, args: &[&[u8]]) -> Value {
        match self.start(args) {
            Ok(reply) => reply,
            Err(mut ticket) => ticket.wait_blocking().into_reply(),
        }
    }

    /// Runs a redis-rs command (see [`Self::execute`] for the blocking
    /// commands).
    pub fn execute_cmd(&mut self, cmd: &Cmd) -> Value {
        with_args(cmd, |args| self.execute(args))
    }

    /// Runs one command: its reply, or the ticket to wait on if it blocked.
    fn start(&mut self, args: &[&[u8]]) -> Result<Value, Ticket> {
        let now = self.engine.now_ms();
        let mut store = self.engine.shared.store.lock();
        match self.session.execute_or_block(&mut store, args, now, true) {
            Outcome::Reply(reply) => Ok(reply),
            Outcome::Blocked(parked) => Err(parked.ticket(&self.engine)),
        }
    }

    /// Runs the commands of a pipeline, wrapped in MULTI/EXEC if it is
    /// atomic, and returns every reply as a server would send them. The
    /// engine is locked once for all of them, unless a command blocks: its
    /// reply is awaited, unlocked, before the next command runs (as a
    /// server runs a pipeline).
    async fn execute_pipeline(&mut self, pipeline: &Pipeline) -> Vec<Value> {
        let atomic = pipeline.is_transaction();
        let mut replies = Vec::with_capacity(pipeline.len() + 2 * usize::from(atomic));
        let mut commands = pipeline.cmd_iter().peekable();
        loop {
            let ticket = {
                let now = self.engine.now_ms();
                let mut store = self.engine.shared.store.lock();
                if atomic && replies.is_empty() {
                    replies.push(self.session.execute(&mut store, &[b"MULTI"], now));
                }
                let mut blocked = None;
                for cmd in commands.by_ref() {
                    let outcome = with_args(cmd, |args| {
                        self.session.execute_or_block(&mut store, args, now, true)
                    });
                    match outcome {
                        Outcome::Reply(reply) => replies.push(reply),
                        Outcome::Blocked(parked) => {
                            blocked = Some(parked.ticket(&self.engine));
                            break;
                        }
                    }
                }
                if blocked.is_none() && atomic {
                    replies.push(self.session.execute(&mut store, &[b"EXEC"], now));
                }
                blocked
            };
            let Some(mut ticket) = ticket else {
                return replies;
            };
            replies.push(ticket.wait().await.into_reply());
        }
    }

    /// The database this connection has selected.
    pub fn db(&self) -> usize {
        self.session.db
    }
}

/// Calls `f` with the arguments of `cmd` as byte slices.
fn with_args<R>(cmd: &Cmd, f: impl FnOnce(&[&[u8]]) -> R) -> R {
    let mut args: Vec<&[u8]> = Vec::with_capacity(cmd.args_iter().len());
    let mut has_cursor = false;
    for arg in cmd.args_iter() {
        match arg {
            Arg::Simple(a) => args.push(a),
            // The cursor, or any future kind of argument: take the slow,
            // exact path through the packed command.
            _ => has_cursor = true,
        }
    }
    if !has_cursor {
        return f(&args);
    }
    // The cursor of redis-rs's scan iterators is private to the command;
    // its packed form is the one place it appears, so read it from there.
    let packed = cmd.get_packed_command();
    let owned = match redis::parse_redis_value(&packed) {
        Ok(Value::Array(items)) => items
            .into_iter()
            .filter_map(|v| match v {
                Value::BulkString(b) => Some(b),
                _ => None,
            })
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    let args: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    f(&args)
}

impl Drop for Connection {
    fn drop(&mut self) {
        if self.session.has_watches() {
            let mut store = self.engine.shared.store.lock();
            self.session.unwatch_all(&mut store);
        }
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match with_args(cmd, |args| self.start(args)) {
            Ok(reply) => Box::pin(std::future::ready(Ok(reply))),
            // Dropping the future before it ends unblocks the client.
            Err(mut ticket) => Box::pin(async move { Ok(ticket.wait().await.into_reply()) }),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        // As redis-rs's own connections do, before sending anything: a
        // pipeline with nothing to send (empty, and not a MULTI/EXEC) is
        // the caller's mistake, not an empty reply.
        if pipeline.is_empty() && !pipeline.is_transaction() {
            return Box::pin(std::future::ready(Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "empty command",
            )))));
        }
        Box::pin(async move {
            let replies = self.execute_pipeline(pipeline).await;
            Ok(replies.into_iter().skip(offset).take(count).collect())
        })
    }

    fn get_db(&self) -> i64 {
        self.session.db as i64
    }
}
