//! The checked writes of a bulk write, sent together: the writes in
//! flight that run the same script are gathered into one call of a
//! script that runs each of them in turn ([`runner`]), each with its own
//! keys and arguments and its own reply, as if sent alone.
//!
//! Why: on redis-server a script call costs a few microseconds before its
//! first command (parsing the call, finding the script, building `KEYS`
//! and `ARGV`, entering Lua), about as much as the commands of a small
//! write. A bulk insert of ten thousand objects paid that ten thousand
//! times; gathered, it pays it once per [`MAX_ITEMS`] writes.
//!
//! Each write keeps its own atomicity: the runner calls it under `pcall`,
//! so a write whose command fails stops there (what it ran stays, as
//! when sent alone) and the next one runs. The whole call is atomic too,
//! which is more than each write needs; the call is cut at
//! [`MAX_ITEMS`] writes, so that it holds the server for a fraction of a
//! millisecond (16 inserts with two index writes each: about 0.25 ms on
//! redis-server), and the calls of a batch travel in one pipeline.
//!
//! Gathering is asked for by a bulk write ([`gathering`]) and happens only
//! on one server in the plain layout, where a script may touch keys it
//! does not declare: the writes of a batch are in many slots.
//!
//! How writes meet: each queues its call under its script's SHA1, then
//! yields once, so that the other writes of the batch polled in the same
//! pass queue theirs; the first to run again takes the queue and sends
//! it, and the others wait for their replies.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use redis::{Cmd, RedisError, Value};
use tokio::sync::oneshot;

use super::{Call, Lua};
use crate::{Db, Result};

/// The most writes one call runs. On redis-server a write's share of a
/// call is about the same from 16 writes a call up (15 µs for an insert
/// with a sorted and two tag entries, against 22 µs sent alone).
const MAX_ITEMS: usize = 16;

/// Values by script SHA1.
type BySha<V> = HashMap<Box<str>, V, foldhash::fast::RandomState>;

tokio::task_local! {
    /// The queues of the bulk write the task runs, if it runs one.
    static GATHERING: Arc<Queues>;
}

/// Runs `writes`, a bulk write's, with their checked writes gathered (see
/// the module docs). Only they meet: the queues are this call's, so a
/// call's writes are sent by one of its own, and a bulk write dropped
/// midway takes its queued writes with it.
pub(crate) async fn gathering<F: Future>(writes: F) -> F::Output {
    GATHERING.scope(Arc::default(), writes).await
}

/// The calls waiting to be sent, by script SHA1.
#[derive(Default)]
struct Queues {
    by_script: Mutex<BySha<Vec<Queued>>>,
    next_id: AtomicU64,
}

/// A queued call and where its outcome goes.
struct Queued {
    id: u64,
    evalsha: Arc<Cmd>,
    /// How many of its arguments are keys.
    keys: usize,
    done: oneshot::Sender<Outcome>,
}

/// What became of a queued call.
enum Outcome {
    /// Its script's reply, or the error the whole call failed with.
    Replied(std::result::Result<Value, RedisError>),
    /// Not run: to be sent alone (the server refused scripts).
    Alone,
}

impl Call<'_> {
    /// [`invoke`](Self::invoke), gathered with the other writes in flight
    /// of its script when the task asked for it ([`gathering`]) and the
    /// `Db` is one server in the plain layout. The reply as a value.
    pub(crate) async fn invoke_gathered(self, db: &Db) -> Result<Option<Value>> {
        let queues = match GATHERING.try_with(Arc::clone) {
            Ok(queues) if db.one_slot() && !db.is_cluster() && db.engine().is_none() => queues,
            _ => return self.invoke(db).await,
        };
        let sha: &str = &self.lua.sha;
        let id = queues.next_id.fetch_add(1, Ordering::Relaxed);
        let evalsha = Arc::new(self.evalsha);
        let (done, outcome) = oneshot::channel();
        queues
            .by_script
            .lock()
            .entry(sha.into())
            .or_default()
            .push(Queued {
                id,
                evalsha: Arc::clone(&evalsha),
                keys: self.keys,
                done,
            });
        tokio::task::yield_now().await;
        // Still queued: this write sends the queue.
        let taken = {
            let mut by_script = queues.by_script.lock();
            let mine = by_script
                .get(sha)
                .is_some_and(|queued| queued.iter().any(|q| q.id == id));
            if mine {
                by_script.remove(sha)
            } else {
                None
            }
        };
        if let Some(taken) = taken {
            send(db, self.lua, taken).await;
        }
        match outcome.await {
            Ok(Outcome::Replied(reply)) => Ok(Some(reply?)),
            // No reply can be lost otherwise: the write that took the
            // queue is of the same bulk write, and delivers before it ends.
            // (The queue's copy of the call is gone by then: no clone.)
            Ok(Outcome::Alone) | Err(_) => {
                let alone = Call {
                    lua: self.lua,
                    evalsha: Arc::unwrap_or_clone(evalsha),
                    keys: self.keys,
                };
                alone.invoke(db).await
            }
        }
    }
}

/// Sends `queued`, calls of `lua`: one alone as it is, more through the
/// runner, [`MAX_ITEMS`] a call, the calls at once.
async fn send(db: &Db, lua: &Lua, mut queued: Vec<Queued>) {
    if queued.len() == 1 {
        // Sent alone by its own write, without the runner.
        if let Some(one) = queued.pop() {
            let _ = one.done.send(Outcome::Alone);
        }
        return;
    }
    let runner = runner(lua);
    let mut chunks = Vec::new();
    while !queued.is_empty() {
        let rest = queued.split_off(queued.len().min(MAX_ITEMS));
        chunks.push(std::mem::replace(&mut queued, rest));
    }
    let calls = chunks.into_iter().map(|chunk| {
        let runner = Arc::clone(&runner);
        async move {
            let mut call = runner.call::<&str>(&[]);
            for queued in &chunk {
                add_item(&mut call, queued);
            }
            let replies = call.invoke_redis::<Vec<Value>>(db).await;
            deliver(chunk, replies);
        }
    });
    futures_util::future::join_all(calls).await;
}

/// Adds one queued call to the runner's: its key count, its argument
/// count, its keys and its arguments (the EVALSHA's after its name, the
/// SHA1 and the key count).
fn add_item(call: &mut Call<'_>, queued: &Queued) {
    let keys_and_args = queued.evalsha.args_iter().len().saturating_sub(3);
    call.arg(queued.keys)
        .arg(keys_and_args.saturating_sub(queued.keys));
    for arg in crate::command::args(&queued.evalsha).skip(3).flatten() {
        call.arg(arg);
    }
}

/// Gives each queued write its reply from the runner's `replies`, in
/// order; every write the call's failure if it failed (a write sent
/// alone would have failed so: whether it ran is as unknown), and every
/// one leave to go alone if the server refused the script.
fn deliver(chunk: Vec<Queued>, replies: std::result::Result<Option<Vec<Value>>, RedisError>) {
    match replies {
        Ok(Some(replies)) if replies.len() == 2 * chunk.len() => {
            let mut replies = replies.into_iter();
            for queued in chunk {
                let reply = match (replies.next(), replies.next()) {
                    (Some(Value::Int(1)), Some(reply)) => Ok(reply),
                    (_, Some(Value::BulkString(error))) => Err(server_error(&error)),
                    _ => Err(unknown_shape()),
                };
                let _ = queued.done.send(Outcome::Replied(reply));
            }
        }
        Ok(Some(_)) => {
            for queued in chunk {
                let _ = queued.done.send(Outcome::Replied(Err(unknown_shape())));
            }
        }
        Err(err) => {
            for queued in chunk {
                let _ = queued.done.send(Outcome::Replied(Err(copy(&err))));
            }
        }
        // Refused: each write takes its path without a script.
        Ok(None) => {
            for queued in chunk {
                let _ = queued.done.send(Outcome::Alone);
            }
        }
    }
}

/// The error reply `text` (`CODE detail`, as a script's error replies
/// are), as redis-rs gives a server's error: its code is what callers
/// match on (`NOTFOUND`).
fn server_error(text: &[u8]) -> RedisError {
    let mut line = Vec::with_capacity(text.len() + 3);
    line.push(b'-');
    line.extend(text.iter().filter(|b| !matches!(b, b'\r' | b'\n')));
    line.extend_from_slice(b"\r\n");
    match redis::parse_redis_value(&line) {
        Ok(Value::ServerError(err)) => RedisError::from(err),
        _ => RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError),
            "a gathered write failed",
        )),
    }
}

/// The error of a runner's reply of another shape than it replies.
fn unknown_shape() -> RedisError {
    RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "the gathered writes' script replied in an unknown shape",
    ))
}

/// `err` again, for each write of a call that failed whole, as the
/// `Db` classifies it: a server's error with its code, a lost connection
/// or a timeout as such.
fn copy(err: &RedisError) -> RedisError {
    if let Some(code) = err.code() {
        let text = format!("{code} {}", err.detail().unwrap_or_default());
        return server_error(text.as_bytes());
    }
    let io = |kind| RedisError::from(std::io::Error::new(kind, err.to_string()));
    if err.is_timeout() {
        io(std::io::ErrorKind::TimedOut)
    } else if err.is_connection_dropped() || err.is_io_error() {
        io(std::io::ErrorKind::ConnectionReset)
    } else {
        RedisError::from((
            err.kind(),
            "the gathered writes' call failed",
            err.to_string(),
        ))
    }
}

/// The runners written so far, by the SHA1 of the script they run.
static RUNNERS: LazyLock<Mutex<BySha<Arc<Lua>>>> = LazyLock::new(|| Mutex::new(HashMap::default()));

/// The script that runs `lua` for each write of its `ARGV`: each as its
/// key count, its argument count, its keys and its arguments. Its reply:
/// for each write `1` and its reply, or `0` and its error's text (an
/// error inside a reply would make redis-rs fail the whole reply).
fn runner(lua: &Lua) -> Arc<Lua> {
    let mut runners = RUNNERS.lock();
    if let Some(runner) = runners.get(&*lua.sha) {
        return Arc::clone(runner);
    }
    let (typed, item) = match lua.text.strip_prefix(TYPED) {
        Some(rest) => (MEMO_TYPED, rest),
        None => ("", &*lua.text),
    };
    let text = format!("{typed}local function item(KEYS, ARGV)\n{item}\nend\n{RUN}");
    let runner = Arc::new(Lua::new(&text));
    runners.insert(lua.sha.clone().into(), Arc::clone(&runner));
    runner
}

/// The first line of a write's script with type checks (a shaped
/// script's): `typed(key, want)`, whether `key` holds `want` or nothing.
/// The runner puts its own `typed` in its place ([`MEMO_TYPED`]).
pub(crate) const TYPED: &str = "local function typed(k, w) local t = \
    redis.call('TYPE', k)['ok'] return t == 'none' or t == w end\n";

/// The runner's `typed` (see [`TYPED`]), in place of the one each write
/// defines: a key found to hold `w` (or nothing) is not asked again in the
/// call. The call is atomic, and what the writes before it ran cannot
/// have given the key another type: each key of a model's layout has one
/// Redis type, and its writes of that shape only add to it or remove it.
/// A bulk insert's writes share their index keys (a sorted set, the tag
/// sets): they are asked once per call, not once per write.
const MEMO_TYPED: &str = "local fit = {}
local function typed(k, w)
  if fit[k] == w then return true end
  local t = redis.call('TYPE', k)['ok']
  if t == 'none' or t == w then fit[k] = w return true end
  return false
end
";

/// The runner's loop, after the write's script as the function `item`.
const RUN: &str = r"
local out, i, n = {}, 1, #ARGV
while i <= n do
  local nk, na = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local keys = {unpack(ARGV, i + 2, i + 1 + nk)}
  local args = {unpack(ARGV, i + 2 + nk, i + 1 + nk + na)}
  local ok, reply = pcall(item, keys, args)
  if ok and not (type(reply) == 'table' and reply.err) then
    out[#out + 1] = 1
    out[#out + 1] = reply
  else
    if type(reply) == 'table' then reply = reply.err end
    out[#out + 1] = 0
    out[#out + 1] = tostring(reply)
  end
  i = i + 2 + nk + na
end
return out
";
