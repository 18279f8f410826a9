//! An in-process client of the engine, usable wherever redis-rs expects an
//! async connection.

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisFuture, Value};

use super::args::is;
use super::command::blocking::Ticket;
use super::command::connection::hello_as;
use super::command::Store;
use super::reply;
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
    /// The name given by `HELLO ... SETNAME` (CLIENT is a RESP server's).
    name: Option<Vec<u8>>,
}

impl Connection {
    pub(crate) fn new(engine: Engine) -> Self {
        Connection {
            engine,
            session: Session::default(),
            name: None,
        }
    }

    /// Runs one command given as its arguments (name first) and returns
    /// the reply, errors included as `Value::ServerError`.
    ///
    /// The connection speaks RESP2, as redis-rs does unless told otherwise:
    /// maps come as flat arrays, sets as arrays, doubles as bulk strings.
    /// After `HELLO 3` replies keep their RESP3 types
    /// (`Value::Map`, `Value::Set`, `Value::Double`...).
    ///
    /// A blocking command (BLPOP...) that finds nothing to take blocks the
    /// calling thread until another client serves it or its timeout
    /// passes, as on a synchronous connection to a server. In async code,
    /// run it through [`redis::aio::ConnectionLike`] instead, whose future
    /// waits without blocking the thread.
    pub fn execute(&mut self, args: &[&[u8]]) -> Value {
        match self.start(args) {
            Ok(reply) => reply,
            Err(mut ticket) => self.lowered(ticket.wait_blocking().into_reply()),
        }
    }

    /// One command with the store locked: HELLO outside a transaction is
    /// the connection's own; the reply is lowered for a RESP2 client.
    fn run(
        session: &mut Session,
        client_name: &mut Option<Vec<u8>>,
        store: &mut Store,
        args: &[&[u8]],
        now: i64,
    ) -> Outcome {
        let outcome = match args.first() {
            Some(name) if is(name, "hello") && !session.in_transaction() => {
                let mut resp = session.resp();
                let reply = hello_as(0, client_name, &mut resp, args, &mut |login| {
                    session.login(store, name, login, now)
                });
                session.set_resp(resp);
                Outcome::Reply(reply)
            }
            Some(name) if is(name, "reset") => {
                let reply = session.execute(store, args, now);
                if matches!(&reply, Value::SimpleString(s) if s == "RESET") {
                    *client_name = None;
                }
                Outcome::Reply(reply)
            }
            _ => session.execute_or_block(store, args, now, true),
        };
        match outcome {
            Outcome::Reply(mut reply) => {
                if session.resp() < 3 {
                    reply::to_resp2(&mut reply);
                }
                Outcome::Reply(reply)
            }
            blocked => blocked,
        }
    }

    /// A blocked command's reply, as this client's protocol shapes it.
    fn lowered(&self, mut reply: Value) -> Value {
        if self.session.resp() < 3 {
            reply::to_resp2(&mut reply);
        }
        reply
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
        match Self::run(&mut self.session, &mut self.name, &mut store, args, now) {
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
                let (session, name) = (&mut self.session, &mut self.name);
                let mut run = |args: &[&[u8]]| Self::run(session, name, &mut store, args, now);
                if atomic && replies.is_empty() {
                    if let Outcome::Reply(reply) = run(&[b"MULTI"]) {
                        replies.push(reply);
                    }
                }
                let mut blocked = None;
                for cmd in commands.by_ref() {
                    match with_args(cmd, &mut run) {
                        Outcome::Reply(reply) => replies.push(reply),
                        Outcome::Blocked(parked) => {
                            blocked = Some(parked);
                            break;
                        }
                    }
                }
                if blocked.is_none() && atomic {
                    if let Outcome::Reply(reply) = run(&[b"EXEC"]) {
                        replies.push(reply);
                    }
                }
                blocked.map(|parked| parked.ticket(&self.engine))
            };
            let Some(mut ticket) = ticket else {
                return replies;
            };
            let reply = ticket.wait().await.into_reply();
            replies.push(self.lowered(reply));
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
            Err(mut ticket) => Box::pin(async move {
                let reply = ticket.wait().await.into_reply();
                Ok(self.lowered(reply))
            }),
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
