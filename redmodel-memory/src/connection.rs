//! An in-process client of the engine, usable wherever redis-rs expects an
//! async connection.

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisFuture, Value};

use super::args::is;
use super::command::connection::hello;
use super::reply;
use super::session::Session;
use super::store::Store;
use super::Engine;

/// One client of an [`Engine`]: its own selected database, MULTI queue and
/// WATCHed keys, like one TCP connection to a Redis server.
///
/// Implements [`redis::aio::ConnectionLike`], so redis-rs's command builders
/// and its `AsyncCommands` trait run on it unchanged.
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
    pub fn execute(&mut self, args: &[&[u8]]) -> Value {
        let now = self.engine.now_ms();
        let mut store = self.engine.shared.store.lock();
        Self::run(&mut self.session, &mut self.name, &mut store, args, now)
    }

    /// One command with the store locked: HELLO outside a transaction is
    /// the connection's own; the reply is lowered for a RESP2 client.
    fn run(
        session: &mut Session,
        client_name: &mut Option<Vec<u8>>,
        store: &mut Store,
        args: &[&[u8]],
        now: i64,
    ) -> Value {
        let mut reply = match args.first() {
            Some(name) if is(name, "hello") && !session.in_transaction() => {
                let mut resp = session.resp();
                let reply = hello(0, client_name, &mut resp, args);
                session.set_resp(resp);
                reply
            }
            Some(name) if is(name, "reset") => {
                let reply = session.execute(store, args, now);
                if matches!(&reply, Value::SimpleString(s) if s == "RESET") {
                    *client_name = None;
                }
                reply
            }
            _ => session.execute(store, args, now),
        };
        if session.resp() < 3 {
            reply::to_resp2(&mut reply);
        }
        reply
    }

    /// Runs a redis-rs command.
    pub fn execute_cmd(&mut self, cmd: &Cmd) -> Value {
        with_args(cmd, |args| self.execute(args))
    }

    /// Runs the commands of a pipeline under one lock, wrapped in MULTI/EXEC
    /// if it is atomic, and returns every reply as a server would send them.
    fn execute_pipeline(&mut self, pipeline: &Pipeline) -> Vec<Value> {
        let now = self.engine.now_ms();
        let mut store = self.engine.shared.store.lock();
        let atomic = pipeline.is_transaction();
        let mut replies = Vec::with_capacity(pipeline.len() + 2 * usize::from(atomic));
        if atomic {
            replies.push(Self::run(
                &mut self.session,
                &mut self.name,
                &mut store,
                &[b"MULTI"],
                now,
            ));
        }
        for cmd in pipeline.cmd_iter() {
            let reply = with_args(cmd, |args| {
                Self::run(&mut self.session, &mut self.name, &mut store, args, now)
            });
            replies.push(reply);
        }
        if atomic {
            replies.push(Self::run(
                &mut self.session,
                &mut self.name,
                &mut store,
                &[b"EXEC"],
                now,
            ));
        }
        replies
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
        let reply = self.execute_cmd(cmd);
        Box::pin(std::future::ready(Ok(reply)))
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
        let replies = self.execute_pipeline(pipeline);
        let replies = replies.into_iter().skip(offset).take(count).collect();
        Box::pin(std::future::ready(Ok(replies)))
    }

    fn get_db(&self) -> i64 {
        self.session.db as i64
    }
}
