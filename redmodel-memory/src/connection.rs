//! An in-process client of the engine, usable wherever redis-rs expects an
//! async connection.

use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisFuture, RedisResult, Value};

use super::args::is;
use super::command::blocking::Ticket;
use super::command::connection::hello_as;
use super::command::Store;
use super::reply;
use super::session::{Outcome, Paused, Session};
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
    ///
    /// While a CLIENT PAUSE holds the command back, the calling thread
    /// waits for the pause to end, as a client of a paused server does.
    pub fn execute(&mut self, args: &[&[u8]]) -> Value {
        loop {
            match self.start(args) {
                Ok(reply) => return reply,
                Err(Wait::Blocked(mut ticket)) => {
                    return self.lowered(ticket.wait_blocking().into_reply())
                }
                // The thread has no runtime to wait for UNPAUSE on: it
                // looks again every few milliseconds.
                Err(Wait::Paused(paused)) => {
                    let left = paused.until.saturating_sub(paused.seen_at).clamp(1, 5);
                    std::thread::sleep(Duration::from_millis(left.unsigned_abs()));
                }
            }
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
                let started = std::time::Instant::now();
                let mut resp = session.resp();
                let version = store.version;
                let reply = hello_as(0, client_name, &mut resp, args, version, &mut |login| {
                    session.login(store, name, login, now)
                });
                session.set_resp(resp);
                session.timed(store, args, started.elapsed(), now);
                session.feed_monitors(store, args);
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

    /// Runs one command: its reply, or what to wait on if it blocked or
    /// a CLIENT PAUSE holds it back (then it did not run).
    fn start(&mut self, args: &[&[u8]]) -> Result<Value, Wait> {
        let now = self.engine.now_ms();
        let mut store = self.engine.shared.store.lock();
        if let Some(paused) = self.session.paused(&mut store, args, || now) {
            return Err(Wait::Paused(paused));
        }
        match Self::run(&mut self.session, &mut self.name, &mut store, args, now) {
            Outcome::Reply(reply) => Ok(reply),
            Outcome::Blocked(parked) => Err(Wait::Blocked(parked.ticket(&self.engine))),
        }
    }

    /// [`Self::start`] in async code: waits, without the thread, for the
    /// reply of a command that blocked or was held back by a pause.
    async fn run_async(&mut self, cmd: &Cmd) -> Value {
        loop {
            match with_args(cmd, |args| self.start(args)) {
                Ok(reply) => return reply,
                // Dropping the future before it ends unblocks the client.
                Err(Wait::Blocked(mut ticket)) => {
                    let reply = ticket.wait().await.into_reply();
                    return self.lowered(reply);
                }
                Err(Wait::Paused(paused)) => paused.wait().await,
            }
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
        // Whether the MULTI and the EXEC of an atomic pipeline have run.
        let (mut multi_done, mut exec_done) = (!atomic, !atomic);
        loop {
            let wait = {
                let now = self.engine.now_ms();
                let mut store = self.engine.shared.store.lock();
                let (session, name) = (&mut self.session, &mut self.name);
                // One command, unless a pause holds it back.
                let mut step = |args: &[&[u8]]| match session.paused(&mut store, args, || now) {
                    Some(paused) => Err(Wait::Paused(paused)),
                    None => Ok(Self::run(session, name, &mut store, args, now)),
                };
                'batch: {
                    if !multi_done {
                        match step(&[b"MULTI"]) {
                            Ok(Outcome::Reply(reply)) => replies.push(reply),
                            Ok(Outcome::Blocked(_)) => {}
                            Err(wait) => break 'batch Some(wait),
                        }
                        multi_done = true;
                    }
                    while let Some(cmd) = commands.peek() {
                        match with_args(cmd, &mut step) {
                            Ok(Outcome::Reply(reply)) => replies.push(reply),
                            Ok(Outcome::Blocked(parked)) => {
                                commands.next();
                                break 'batch Some(Wait::Blocked(parked.ticket(&self.engine)));
                            }
                            Err(wait) => break 'batch Some(wait),
                        }
                        commands.next();
                    }
                    if !exec_done {
                        match step(&[b"EXEC"]) {
                            Ok(Outcome::Reply(reply)) => replies.push(reply),
                            Ok(Outcome::Blocked(_)) => {}
                            Err(wait) => break 'batch Some(wait),
                        }
                        exec_done = true;
                    }
                    None
                }
            };
            match wait {
                None => return replies,
                Some(Wait::Blocked(mut ticket)) => {
                    let reply = ticket.wait().await.into_reply();
                    replies.push(self.lowered(reply));
                }
                Some(Wait::Paused(paused)) => paused.wait().await,
            }
        }
    }

    /// The database this connection has selected.
    pub fn db(&self) -> usize {
        self.session.db
    }
}

/// What a client waits on before it has its reply.
enum Wait {
    /// Its command blocked (BLPOP...).
    Blocked(Ticket),
    /// A CLIENT PAUSE holds its command back.
    Paused(Paused),
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

/// The `count` replies from `offset` on, as redis-rs's connections take
/// them: an error among the replies skipped (a command refused as MULTI
/// queued it) fails the request with that error, the cause of the EXEC's
/// EXECABORT, rather than leave the EXECABORT to be misread as a reply of
/// another shape.
fn take_replies(replies: Vec<Value>, offset: usize, count: usize) -> RedisResult<Vec<Value>> {
    let mut replies = replies.into_iter();
    for skipped in replies.by_ref().take(offset) {
        if let Value::ServerError(err) = skipped {
            return Err(err.into());
        }
    }
    Ok(replies.take(count).collect())
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
        Box::pin(async move { Ok(self.run_async(cmd).await) })
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
            take_replies(replies, offset, count)
        })
    }

    fn get_db(&self) -> i64 {
        self.session.db as i64
    }
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::Engine;

    fn is_error(v: &Value, code: &str) -> bool {
        matches!(v, Value::ServerError(e) if e.code() == code)
    }

    #[test]
    fn short_of_replicas_every_write_is_refused_and_reads_run() {
        let mut c = Engine::new().connection();
        c.execute(&[b"SET", b"k", b"v"]);
        fn setting(n: &[u8]) -> [&[u8]; 4] {
            [b"CONFIG", b"SET", b"min-replicas-to-write", n]
        }
        assert_eq!(c.execute(&setting(b"1")), Value::Okay);
        assert!(is_error(&c.execute(&[b"SET", b"k", b"w"]), "NOREPLICAS"));
        assert!(is_error(&c.execute(&[b"DEL", b"k"]), "NOREPLICAS"));
        assert_eq!(c.execute(&[b"GET", b"k"]), Value::BulkString(b"v".to_vec()));
        // A write queued in MULTI is refused there and dooms the EXEC.
        c.execute(&[b"MULTI"]);
        assert!(is_error(&c.execute(&[b"SET", b"k", b"w"]), "NOREPLICAS"));
        assert!(is_error(&c.execute(&[b"EXEC"]), "EXECABORT"));
        c.execute(&[b"MULTI"]);
        c.execute(&[b"GET", b"k"]);
        let read = c.execute(&[b"EXEC"]);
        assert_eq!(read, Value::Array(vec![Value::BulkString(b"v".to_vec())]));
        assert_eq!(c.execute(&setting(b"0")), Value::Okay);
        assert_eq!(c.execute(&[b"DEL", b"k"]), Value::Int(1));
    }

    #[tokio::test]
    async fn a_command_refused_as_multi_queues_it_fails_the_transaction_with_its_error() {
        let mut conn = Engine::new().connection();
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("SET").arg("k").arg("v").cmd("GET");
        let err = pipe
            .query_async::<()>(&mut conn)
            .await
            .expect_err("refused");
        assert!(
            err.to_string().contains("wrong number of arguments"),
            "{err}"
        );
        let exists: i64 = redis::cmd("EXISTS")
            .arg("k")
            .query_async(&mut conn)
            .await
            .expect("EXISTS");
        assert_eq!(exists, 0, "nothing of the transaction ran");
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg("k")
            .arg("v")
            .cmd("GET")
            .arg("k");
        let replies: (String, String) = pipe.query_async(&mut conn).await.expect("EXEC");
        assert_eq!(replies, ("OK".to_string(), "v".to_string()));
    }
}
