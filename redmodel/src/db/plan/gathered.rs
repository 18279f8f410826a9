//! The checked writes of a bulk write, run together: the writes in flight
//! are gathered and run as one WATCH transaction, [`MAX_ITEMS`] at a
//! time, each with its own guards, reads and outcome, as if sent alone.
//!
//! Why not a script per write, as a write sent alone runs: on
//! redis-server a script costs a few microseconds before its first
//! command and a few more per command it calls, about twice what the
//! same commands cost sent natively. A bulk write is throughput-bound,
//! and its writes rarely meet each other or other writers, so it takes
//! the optimistic path with native commands instead:
//!
//! 1. on a connection of its own, WATCH the keys the writes' decisions
//!    rest on (their guards and the keys of their recorded reads), then
//!    read the guards, the recorded reads and the types of the keys the
//!    writes need of one type ([`types`](super::types)), in one round
//!    trip;
//! 2. decide each write on those replies as its script would: a missing
//!    guard or a key of another type refuses it, a read that differs
//!    from what was recorded sends it back to decide again
//!    ([`Checked::Changed`](super::checked::Checked)), and the others
//!    go in one MULTI/EXEC, in a second round trip.
//!
//! If a watched key changed in between, nothing was written and the
//! whole gathering runs again after a pause, up to [`ATTEMPTS`] times;
//! past that each write goes alone. Each write is whole or
//! not at all: the EXEC applies all the writes it holds at once, and the
//! type checks mean that none of their commands meets a key of another
//! type (the index keys are read, not watched, as on every WATCH path:
//! every writer writes them).
//!
//! Gathering is asked for by a bulk write ([`gathering`]) and happens only
//! on one server in the plain layout, where one transaction may hold keys
//! of many slots. How writes meet: each queues its write, then yields
//! once, so that the other writes of the batch polled in the same pass
//! queue theirs; the first to run again takes the queue and runs it, and
//! the others wait for their outcomes.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use redis::{Cmd, Value};
use tokio::sync::oneshot;

use super::types;
use super::Write;
use crate::command::cmd;
use crate::db::optimistic::OptimisticConnection;
use crate::layout::plain_key;
use crate::{Db, Error, Result};

/// The most writes one transaction holds: enough that its two round
/// trips are shared widely, few enough that the server's WATCH list (a
/// list it walks for each key watched) stays short.
const MAX_ITEMS: usize = 32;

/// How many times a gathering runs before its writes go alone: a
/// gathering that keeps losing races meets a writer of its own objects,
/// which the writes alone settle one by one.
const ATTEMPTS: u32 = 4;

tokio::task_local! {
    /// The queue of the bulk write the task runs, if it runs one.
    static GATHERING: Arc<Queue>;
}

/// Runs `writes`, a bulk write's, with their checked writes gathered (see
/// the module docs). Only they meet: the queue is this call's, so a
/// call's writes are run by one of its own, and a bulk write dropped
/// midway takes its queued writes with it.
pub(crate) async fn gathering<F: Future>(writes: F) -> F::Output {
    GATHERING.scope(Arc::default(), writes).await
}

/// The writes waiting to run.
#[derive(Default)]
struct Queue {
    items: Mutex<Vec<Queued>>,
    next_id: AtomicU64,
}

/// A queued write and where its outcome goes.
struct Queued {
    id: u64,
    item: Item,
    done: oneshot::Sender<Outcome>,
}

/// A checked write, owned: its guards, its recorded reads with their
/// replies, the type checks of its commands, and its commands with
/// whether each reply is kept.
struct Item {
    guards: Vec<String>,
    conditions: Vec<(Cmd, Value)>,
    checks: Vec<(Vec<u8>, &'static str)>,
    writes: Vec<(Cmd, bool)>,
}

/// What became of a queued write.
enum Outcome {
    /// Decided: whether it was applied, and its kept replies (applied)
    /// or what its reads found (not).
    Ran(Result<(bool, Vec<Value>)>),
    /// Not run: to be sent alone.
    Alone,
}

/// Runs a checked write (`guards`, the recorded `conditions`, `writes`)
/// gathered with the other writes in flight of a bulk write, when the
/// task asked for it ([`gathering`]), the `Db` is one server in the plain
/// layout and no command takes an argument from an earlier reply (MULTI
/// cannot pass one on). Whether it was applied, with its kept replies or
/// what its reads found instead; `None` where it is to be sent alone.
pub(crate) async fn run(
    db: &Db,
    guards: &[String],
    conditions: &[(Cmd, Value)],
    writes: &[Write<'_>],
) -> Option<Result<(bool, Vec<Value>)>> {
    let queue = match GATHERING.try_with(Arc::clone) {
        Ok(queue) if db.one_slot() && !db.is_cluster() && db.engine().is_none() => queue,
        _ => return None,
    };
    if writes.iter().any(|w| w.splice.is_some()) {
        return None;
    }
    let item = Item {
        guards: guards.to_vec(),
        conditions: conditions.to_vec(),
        checks: types::checks(writes)
            .iter()
            .map(|c| (c.key.to_vec(), c.want))
            .collect(),
        writes: writes.iter().map(|w| (w.cmd.clone(), w.keep)).collect(),
    };
    let id = queue.next_id.fetch_add(1, Ordering::Relaxed);
    let (done, outcome) = oneshot::channel();
    queue.items.lock().push(Queued { id, item, done });
    tokio::task::yield_now().await;
    // Still queued: this write runs the queue.
    let taken = {
        let mut items = queue.items.lock();
        if items.iter().any(|q| q.id == id) {
            std::mem::take(&mut *items)
        } else {
            Vec::new()
        }
    };
    if !taken.is_empty() {
        run_queue(db, taken).await;
    }
    match outcome.await {
        Ok(Outcome::Ran(outcome)) => Some(outcome.map(|(done, replies)| match done {
            true => (done, kept(writes, replies)),
            false => (done, replies),
        })),
        // No outcome can be lost otherwise: the write that took the queue
        // is of the same bulk write, and delivers before it ends.
        Ok(Outcome::Alone) | Err(_) => None,
    }
}

/// The replies of the kept commands of `writes`, from all their replies.
fn kept(writes: &[Write<'_>], replies: Vec<Value>) -> Vec<Value> {
    replies
        .into_iter()
        .zip(writes)
        .filter(|(_, w)| w.keep)
        .map(|(v, _)| v)
        .collect()
}

/// Runs `queued`, [`MAX_ITEMS`] a transaction, the transactions at once.
async fn run_queue(db: &Db, mut queued: Vec<Queued>) {
    if queued.len() == 1 {
        // Alone: its own script is one round trip, against two here.
        if let Some(one) = queued.pop() {
            let _ = one.done.send(Outcome::Alone);
        }
        return;
    }
    let mut chunks = Vec::new();
    while !queued.is_empty() {
        let rest = queued.split_off(queued.len().min(MAX_ITEMS));
        chunks.push(std::mem::replace(&mut queued, rest));
    }
    let runs = chunks.into_iter().map(|chunk| async move {
        let items: Vec<&Item> = chunk.iter().map(|q| &q.item).collect();
        let outcomes = run_items(db, &items).await;
        for (queued, outcome) in chunk.into_iter().zip(outcomes) {
            let _ = queued.done.send(outcome);
        }
    });
    futures_util::future::join_all(runs).await;
}

/// The reads of a gathering, in the order they are sent after the WATCH:
/// each distinct guard's EXISTS, each item's recorded reads, each
/// distinct checked key's TYPE.
struct Reads<'a> {
    watch: Vec<&'a [u8]>,
    guards: Vec<&'a str>,
    types: Vec<&'a [u8]>,
}

impl<'a> Reads<'a> {
    fn of(items: &[&'a Item]) -> Self {
        let mut reads = Reads {
            watch: Vec::new(),
            guards: Vec::new(),
            types: Vec::new(),
        };
        for item in items {
            for guard in &item.guards {
                add_new(&mut reads.guards, guard.as_str());
                add_new(&mut reads.watch, guard.as_bytes());
            }
            for (read, _) in &item.conditions {
                if let Some(key) = super::key_of(read) {
                    add_new(&mut reads.watch, key);
                }
            }
            for (key, _) in &item.checks {
                add_new(&mut reads.types, key.as_slice());
            }
        }
        reads
    }

    /// The pipeline that WATCHes and reads: errors come back as replies
    /// (a recorded read's error is compared as the 0 it was recorded as).
    fn pipeline(&self, items: &[&Item]) -> redis::Pipeline {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        if !self.watch.is_empty() {
            pipe.add_command(cmd("WATCH").arg(&self.watch).clone())
                .ignore();
        }
        for guard in &self.guards {
            pipe.add_command(cmd("EXISTS").arg(*guard).clone());
        }
        for item in items {
            for (read, _) in &item.conditions {
                pipe.add_command(read.clone());
            }
        }
        for key in &self.types {
            pipe.add_command(cmd("TYPE").arg(*key).clone());
        }
        pipe
    }
}

/// Pushes `value` unless `list` holds it (a gathering's lists are short).
fn add_new<T: PartialEq>(list: &mut Vec<T>, value: T) {
    if !list.contains(&value) {
        list.push(value);
    }
}

/// What one attempt decided for an item before the EXEC.
enum Decided {
    /// Refused or sent back: the outcome as it is.
    Now(Result<(bool, Vec<Value>)>),
    /// In the MULTI, its writes' replies next in the EXEC's.
    Queued,
}

/// Runs `items` as one WATCH transaction (see the module docs): an
/// outcome for each, in order.
async fn run_items(db: &Db, items: &[&Item]) -> Vec<Outcome> {
    let reads = Reads::of(items);
    let route = match (reads.guards.first(), items.first()) {
        (Some(guard), _) => guard.to_string(),
        (None, Some(item)) => item
            .writes
            .first()
            .and_then(|(cmd, _)| super::key_of(cmd))
            .map(|key| String::from_utf8_lossy(key).into_owned())
            .unwrap_or_default(),
        (None, None) => return Vec::new(),
    };
    let read_pipe = reads.pipeline(items);
    let (reads, read_pipe) = (&reads, &read_pipe);
    // Set once the EXEC is sent: an error after that leaves the writes'
    // fate unknown, and is theirs to report; before it nothing ran.
    let sent = AtomicBool::new(false);
    let sent = &sent;
    let conn = match db.exclusive().await {
        Ok(conn) => conn,
        Err(_) => return items.iter().map(|_| Outcome::Alone).collect(),
    };
    let no_keys: &[&str] = &[];
    let mut conn = OptimisticConnection::from(conn);
    let outcome = conn
        .run(no_keys, ATTEMPTS, Some(&route), |tx| async move {
            let replies: Vec<Value> = tx.query_pipeline(read_pipe).await?;
            if replies.len() != replies_expected(items, reads) {
                return Err(unknown_shape());
            }
            let (decided, exec) = decide(items, reads, &replies);
            if exec.cmd_iter().next().is_none() {
                return Ok(Some((decided, Vec::new())));
            }
            sent.store(true, Ordering::Relaxed);
            let replies: Option<Vec<Value>> = tx.exec(&exec).await?;
            Ok(replies.map(|replies| (decided, replies)))
        })
        .await;
    match outcome {
        Ok((decided, replies)) => deliver(items, decided, replies),
        // Every attempt lost a race: nothing written, each goes alone.
        Err(Error::Conflict { .. }) => items.iter().map(|_| Outcome::Alone).collect(),
        Err(_) if !sent.load(Ordering::Relaxed) => items.iter().map(|_| Outcome::Alone).collect(),
        Err(err) => {
            let mut outcomes: Vec<Outcome> = items
                .iter()
                .skip(1)
                .map(|_| Outcome::Ran(Err(again(&err))))
                .collect();
            outcomes.insert(0, Outcome::Ran(Err(err)));
            outcomes
        }
    }
}

/// Decides each item on the replies of the reads (see [`Reads`], one
/// reply each), as its script would: the guards, then the recorded
/// reads, then the types. The decisions, and the MULTI/EXEC of the items
/// that write.
fn decide(
    items: &[&Item],
    reads: &Reads<'_>,
    replies: &[Value],
) -> (Vec<Decided>, redis::Pipeline) {
    let (guards, rest) = replies.split_at(reads.guards.len());
    let (mut read, types) = rest.split_at(rest.len() - reads.types.len());
    let exists = |guard: &str| {
        let at = reads.guards.iter().position(|g| *g == guard);
        matches!(at.map(|i| &guards[i]), Some(Value::Int(1)))
    };
    let fits = |key: &[u8], want: &str| {
        let at = reads.types.iter().position(|k| *k == key);
        matches!(at.map(|i| &types[i]), Some(Value::SimpleString(t)) if t == "none" || t == want)
    };
    let mut exec = redis::pipe();
    exec.atomic().ignore_errors();
    let mut decided = Vec::with_capacity(items.len());
    for item in items {
        let (mine, others) = read.split_at(item.conditions.len());
        read = others;
        if let Some(missing) = item.guards.iter().find(|g| !exists(g)) {
            decided.push(Decided::Now(Err(Error::NotFound {
                key: plain_key(missing),
            })));
            continue;
        }
        let seen: Vec<Value> = mine
            .iter()
            .map(|reply| match reply {
                Value::ServerError(_) => Value::Int(0),
                reply => reply.clone(),
            })
            .collect();
        if item
            .conditions
            .iter()
            .zip(&seen)
            .any(|((_, want), got)| want != got)
        {
            decided.push(Decided::Now(Ok((false, seen))));
            continue;
        }
        if let Some((key, want)) = item.checks.iter().find(|(key, want)| !fits(key, want)) {
            decided.push(Decided::Now(Err(types::refused(key, want))));
            continue;
        }
        for (write, _) in &item.writes {
            exec.add_command(write.clone());
        }
        decided.push(Decided::Queued);
    }
    (decided, exec)
}

/// The number of replies [`Reads::pipeline`] gets back (the WATCH's
/// ignored).
fn replies_expected(items: &[&Item], reads: &Reads<'_>) -> usize {
    let conditions: usize = items.iter().map(|i| i.conditions.len()).sum();
    reads.guards.len() + conditions + reads.types.len()
}

/// Each item's outcome: the one decided before the EXEC, or its writes'
/// replies from the EXEC's (`replies`): applied, or the first error
/// among them, as its script would have stopped there.
fn deliver(items: &[&Item], decided: Vec<Decided>, replies: Vec<Value>) -> Vec<Outcome> {
    let mut replies = replies.into_iter();
    items
        .iter()
        .zip(decided)
        .map(|(item, decided)| match decided {
            Decided::Now(outcome) => Outcome::Ran(outcome),
            Decided::Queued => {
                let mine: Vec<Value> = replies.by_ref().take(item.writes.len()).collect();
                if mine.len() != item.writes.len() {
                    return Outcome::Ran(Err(unknown_shape()));
                }
                match mine.iter().find_map(|reply| match reply {
                    Value::ServerError(err) => Some(err),
                    _ => None,
                }) {
                    Some(err) => Outcome::Ran(Err(redis::RedisError::from(err.clone()).into())),
                    None => Outcome::Ran(Ok((true, mine))),
                }
            }
        })
        .collect()
}

/// The error of a gathering whose replies are not of the shape sent for.
fn unknown_shape() -> Error {
    Error::from(redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "the gathered writes' replies came in an unknown shape",
    )))
}

/// `err` again, for each write of a gathering that failed whole after its
/// EXEC was sent, as the `Db` classifies it: a lost connection or a
/// timeout as such, a server's error with its code.
fn again(err: &Error) -> Error {
    let source = std::error::Error::source(err).and_then(|s| s.downcast_ref::<redis::RedisError>());
    let Some(source) = source.or(match err {
        Error::Server(e) | Error::Reply(e) => Some(e),
        _ => None,
    }) else {
        return Error::Misuse(format!("a gathered write failed: {err}"));
    };
    let io = |kind| redis::RedisError::from(std::io::Error::new(kind, source.to_string()));
    let copy = if source.is_timeout() {
        io(std::io::ErrorKind::TimedOut)
    } else if source.is_connection_dropped() || source.is_io_error() {
        io(std::io::ErrorKind::ConnectionReset)
    } else {
        redis::RedisError::from((source.kind(), "a gathered write failed", source.to_string()))
    };
    Error::from(copy)
}
