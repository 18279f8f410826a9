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
//!    writes need of one type ([`types`]), in one round trip (a key that
//!    a recorded read reads with a command of the type it must hold needs
//!    no `TYPE`: WRONGTYPE would refuse that read, so its reply answers
//!    the check);
//! 2. decide each write on those replies as its script would: a missing
//!    guard or a key of another type refuses it, a read that differs
//!    from what was recorded sends it back to decide again
//!    ([`Checked::Changed`](super::checked::Checked)), and the others
//!    go in one MULTI/EXEC, in a second round trip, their index commands
//!    to one key merged into one ([`merged`]).
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

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use redis::{Cmd, Value};
use smallvec::SmallVec;
use tokio::sync::oneshot;

use super::types;
use super::Write;
use crate::command::{cmd, Owned};
use crate::db::optimistic::OptimisticConnection;
use crate::layout::plain_key;
use crate::{Db, Error, Result};
use merged::{merge, original, Place};

mod merged;

/// The most writes one transaction holds: enough that its two round
/// trips, its reads of the index keys' types and its merged index
/// commands are shared widely; few enough that the window's 256 writes
/// make four transactions in flight, one building while others travel
/// (128 a transaction, two in flight, ran slower).
const MAX_ITEMS: usize = 64;

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

/// A checked write, owned: its guards, its recorded reads and their
/// replies, the type checks of its commands (which command, and the type
/// its key must hold), and its commands, each with whether its reply is
/// kept. The commands move into a gathering's pipelines.
struct Item {
    guards: Vec<String>,
    reads: Vec<Cmd>,
    expected: Vec<Value>,
    checks: SmallVec<[(usize, &'static str); 4]>,
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
    guards: &[&str],
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
        guards: guards.iter().map(|g| g.to_string()).collect(),
        reads: conditions.iter().map(|(read, _)| read.clone()).collect(),
        expected: conditions.iter().map(|(_, reply)| reply.clone()).collect(),
        checks: types::checks(writes)
            .iter()
            .map(|c| (c.at, c.want))
            .collect(),
        writes: writes.iter().map(|w| (w.to_cmd(), w.keep)).collect(),
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
        let (items, dones): (Vec<Item>, Vec<_>) =
            chunk.into_iter().map(|q| (q.item, q.done)).unzip();
        let outcomes = run_items(db, items).await;
        for (done, outcome) in dones.into_iter().zip(outcomes) {
            let _ = done.send(outcome);
        }
    });
    futures_util::future::join_all(runs).await;
}

type Fast = foldhash::fast::RandomState;

/// A gathering ready to run: the pipeline that WATCHes and reads, each
/// item's place in its replies, and every item's writes in one MULTI/EXEC.
struct Gathering {
    /// WATCH the guards and the recorded reads' keys; then each distinct
    /// guard's EXISTS, each item's recorded reads, each distinct checked
    /// key's TYPE where no read answers its check ([`Answer`]). Errors
    /// come back as replies (a recorded read's error is compared as the 0
    /// it was recorded as).
    reads: redis::Pipeline,
    /// Whether `reads` starts with a WATCH, whose reply comes first.
    watching: bool,
    /// How many replies `reads` gets.
    replies: usize,
    items: Vec<Placed>,
    /// Every item's writes, merged ([`merged`]): the EXEC when all of
    /// them hold.
    writes: redis::Pipeline,
    /// Where each item's writes went in `writes`, item after item.
    places: Vec<Place>,
}

/// An item of a gathering: where its guards', reads' and checks' replies
/// are among the reads', and where its writes are among the gathering's.
struct Placed {
    guards: Vec<(String, usize)>,
    expected: Vec<Value>,
    /// Where its recorded reads' replies start.
    read_at: usize,
    checks: SmallVec<[TypeCheck; 4]>,
    /// Where its writes' places start among the gathering's, and how many.
    write_at: usize,
    writes: usize,
}

/// A type check of an item's write, and the reply that answers it.
struct TypeCheck {
    /// The write, by position among the item's writes.
    write: usize,
    want: &'static str,
    answer: Answer,
}

/// The reply that answers a type check, by position among the reads'.
#[derive(Clone, Copy)]
enum Answer {
    /// A `TYPE` of the key: the type wanted, or `none`.
    Type(usize),
    /// A recorded read of the same key by a command of the type wanted,
    /// which WRONGTYPE refuses on any other: any reply but an error.
    Read(usize),
}

impl Gathering {
    /// Places `items`, their commands moved into the pipelines.
    fn of(items: Vec<Item>) -> Self {
        let mut watch = cmd("WATCH");
        let mut exists = Vec::new();
        let mut typed = Vec::new();
        let mut placed = Vec::with_capacity(items.len());
        let watching;
        // First the places, with the keys borrowed from the items; then
        // the items' commands move.
        {
            let mut watched: HashSet<&[u8], Fast> = HashSet::default();
            let mut guards: HashMap<&str, usize, Fast> = HashMap::default();
            let mut types: HashMap<&[u8], usize, Fast> = HashMap::default();
            let (mut read_at, mut write_at) = (0, 0);
            for item in &items {
                let mut item_guards = Vec::with_capacity(item.guards.len());
                for guard in &item.guards {
                    watch_new(&mut watched, &mut watch, guard.as_bytes());
                    let at = *guards.entry(guard).or_insert_with(|| {
                        exists.push(cmd("EXISTS").arg(guard).owned());
                        exists.len() - 1
                    });
                    item_guards.push((guard.clone(), at));
                }
                for read in &item.reads {
                    if let Some(key) = super::key_of(read) {
                        watch_new(&mut watched, &mut watch, key);
                    }
                }
                let checks = item
                    .checks
                    .iter()
                    .filter_map(|&(write, want)| {
                        let key = super::key_of(&item.writes.get(write)?.0)?;
                        let answer = match read_of_type(&item.reads, key, want) {
                            Some(read) => Answer::Read(read_at + read),
                            None => Answer::Type(*types.entry(key).or_insert_with(|| {
                                typed.push(cmd("TYPE").arg(key).owned());
                                typed.len() - 1
                            })),
                        };
                        Some(TypeCheck {
                            write,
                            want,
                            answer,
                        })
                    })
                    .collect();
                placed.push(Placed {
                    guards: item_guards,
                    expected: Vec::new(),
                    read_at,
                    checks,
                    write_at,
                    writes: item.writes.len(),
                });
                read_at += item.reads.len();
                write_at += item.writes.len();
            }
            watching = !watched.is_empty();
        }
        // Sized once: a gathering's pipelines hold kilobytes of commands,
        // and each step of a growing one is an allocation large enough to
        // make the allocator consolidate its free lists.
        let read_count: usize = items.iter().map(|i| i.reads.len()).sum();
        let write_count: usize = items.iter().map(|i| i.writes.len()).sum();
        let mut reads = Vec::with_capacity(read_count);
        let mut writes = Vec::with_capacity(write_count);
        for (item, place) in items.into_iter().zip(&mut placed) {
            reads.extend(item.reads);
            place.expected = item.expected;
            writes.extend(item.writes);
        }
        let writes = merge(writes);
        // Positions among the replies: the WATCH's first, if any, then
        // the EXISTS, the reads and the TYPEs.
        let exists_base = usize::from(watching);
        let read_base = exists_base + exists.len();
        let type_base = read_base + reads.len();
        for item in &mut placed {
            for guard in &mut item.guards {
                guard.1 += exists_base;
            }
            item.read_at += read_base;
            for check in &mut item.checks {
                check.answer = match check.answer {
                    Answer::Type(at) => Answer::Type(type_base + at),
                    Answer::Read(at) => Answer::Read(read_base + at),
                };
            }
        }
        let mut pipe = redis::Pipeline::with_capacity(
            usize::from(watching) + exists.len() + read_count + typed.len(),
        );
        pipe.ignore_errors();
        if watching {
            pipe.add_command(watch);
        }
        let replies = type_base + typed.len();
        for read in exists.into_iter().chain(reads).chain(typed) {
            pipe.add_command(read);
        }
        Gathering {
            reads: pipe,
            watching,
            replies,
            items: placed,
            writes: writes.pipe,
            places: writes.places,
        }
    }

    /// The key that routes the gathering to its server: its first guard,
    /// or its first write's key.
    fn route(&self) -> String {
        let first_guard = self.items.iter().find_map(|i| i.guards.first());
        match first_guard {
            Some((guard, _)) => guard.clone(),
            None => self
                .writes
                .cmd_iter()
                .next()
                .and_then(super::key_of)
                .map(|key| String::from_utf8_lossy(key).into_owned())
                .unwrap_or_default(),
        }
    }

    /// The refusal of `item`'s write `check` for a key of another type.
    fn refused(&self, item: &Placed, check: &TypeCheck) -> Error {
        let key = self
            .places
            .get(item.write_at + check.write)
            .and_then(|place| self.writes.cmd_iter().nth(place.at))
            .and_then(super::key_of)
            .unwrap_or_default();
        types::refused(key, check.want)
    }
}

/// Adds `key` to the `watch` command unless it is `watched` already.
fn watch_new<'k>(watched: &mut HashSet<&'k [u8], Fast>, watch: &mut Cmd, key: &'k [u8]) {
    if watched.insert(key) {
        watch.arg(key);
    }
}

/// Which of `reads` reads `key` with a command of the type `want`, which
/// answers that key's type check: WRONGTYPE refuses the read on any
/// other type, and the read runs in the same instant as a `TYPE` would.
fn read_of_type(reads: &[Cmd], key: &[u8], want: &str) -> Option<usize> {
    reads.iter().position(|read| {
        super::key_of(read) == Some(key)
            && crate::command::name(read).and_then(types::needed) == Some(want)
    })
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
async fn run_items(db: &Db, items: Vec<Item>) -> Vec<Outcome> {
    let count = items.len();
    let gathering = Gathering::of(items);
    let gathering = &gathering;
    let alone = || (0..count).map(|_| Outcome::Alone).collect();
    let conn = match db.exclusive().await {
        Ok(conn) => conn,
        Err(_) => return alone(),
    };
    let no_keys: &[&str] = &[];
    let mut conn = OptimisticConnection::from(conn);
    // Set once the EXEC is sent: an error after that leaves the writes'
    // fate unknown, and is theirs to report; before it nothing ran.
    let sent = AtomicBool::new(false);
    let sent = &sent;
    let route = gathering.route();
    let outcome = conn
        .run(no_keys, ATTEMPTS, Some(&route), |tx| async move {
            let replies: Vec<Value> = tx.query_pipeline(&gathering.reads).await?;
            if replies.len() != gathering.replies {
                return Err(unknown_shape());
            }
            // A WATCH refused (an ACL without it) guards nothing: the
            // writes go alone instead.
            if let (true, Some(Value::ServerError(refused))) = (gathering.watching, replies.first())
            {
                return Err(redis::RedisError::from(refused.clone()).into());
            }
            let (decided, some) = decide(gathering, &replies);
            if !decided.iter().any(|d| matches!(d, Decided::Queued)) {
                return Ok(Some((decided, Vec::new(), None)));
            }
            let exec = some.as_ref().map_or(&gathering.writes, |some| &some.pipe);
            sent.store(true, Ordering::Relaxed);
            let replies: Option<Vec<Value>> = tx.exec(exec).await?;
            Ok(replies.map(|replies| (decided, replies, some.map(|some| some.places))))
        })
        .await;
    match outcome {
        Ok((decided, replies, some)) => {
            let places = some.as_deref().unwrap_or(&gathering.places);
            deliver(&gathering.items, decided, replies, places)
        }
        // Every attempt lost a race: nothing written, each goes alone.
        Err(Error::Conflict { .. }) => alone(),
        // A full server refused the EXEC whole, as it refuses any MULTI
        // then, deletes too: alone, each write is a script, which it
        // runs if the write only removes data and refuses whole if not.
        Err(Error::OutOfMemory { .. }) => alone(),
        Err(_) if !sent.load(Ordering::Relaxed) => alone(),
        Err(err) => {
            let mut outcomes: Vec<Outcome> =
                (1..count).map(|_| Outcome::Ran(Err(again(&err)))).collect();
            outcomes.insert(0, Outcome::Ran(Err(err)));
            outcomes
        }
    }
}

/// Decides each item on the replies of the reads, as its script would:
/// the guards, then the recorded reads, then the types. The decisions,
/// and the MULTI/EXEC of the items that write where that is not all of
/// them (`None`: all of them, [`Gathering::writes`]).
fn decide(gathering: &Gathering, replies: &[Value]) -> (Vec<Decided>, Option<merged::Merged>) {
    // A recorded read's error was recorded as 0.
    let same = |want: &Value, got: &Value| match got {
        Value::ServerError(_) => *want == Value::Int(0),
        got => want == got,
    };
    let fits = |check: &TypeCheck| match check.answer {
        Answer::Type(at) => {
            matches!(&replies[at], Value::SimpleString(t) if t == "none" || t == check.want)
        }
        Answer::Read(at) => !matches!(&replies[at], Value::ServerError(_)),
    };
    let mut decided = Vec::with_capacity(gathering.items.len());
    for item in &gathering.items {
        if let Some((missing, _)) = item
            .guards
            .iter()
            .find(|(_, at)| replies[*at] != Value::Int(1))
        {
            decided.push(Decided::Now(Err(Error::NotFound {
                key: plain_key(missing),
            })));
            continue;
        }
        let seen = &replies[item.read_at..item.read_at + item.expected.len()];
        if !item
            .expected
            .iter()
            .zip(seen)
            .all(|(want, got)| same(want, got))
        {
            let seen = seen
                .iter()
                .map(|reply| match reply {
                    Value::ServerError(_) => Value::Int(0),
                    reply => reply.clone(),
                })
                .collect();
            decided.push(Decided::Now(Ok((false, seen))));
            continue;
        }
        if let Some(check) = item.checks.iter().find(|check| !fits(check)) {
            decided.push(Decided::Now(Err(gathering.refused(item, check))));
            continue;
        }
        decided.push(Decided::Queued);
    }
    if decided.iter().all(|d| matches!(d, Decided::Queued)) {
        return (decided, None);
    }
    // Some items stay out: the others' writes, rebuilt and merged again.
    let sent: Vec<&Cmd> = gathering.writes.cmd_iter().collect();
    let writes = gathering
        .items
        .iter()
        .zip(&decided)
        .filter(|(_, decided)| matches!(decided, Decided::Queued))
        .flat_map(|(item, _)| &gathering.places[item.write_at..item.write_at + item.writes])
        .map(|place| original(&sent, *place))
        .collect::<Vec<_>>();
    (decided, Some(merge(writes)))
}

/// Each item's outcome: the one decided before the EXEC, or its writes'
/// replies from the EXEC's (`replies`, where `places` says, the queued
/// items' places one after the other): applied, or the first error among
/// them, as its script would have stopped there. A merged command's reply
/// stands for each write in it.
fn deliver(
    items: &[Placed],
    decided: Vec<Decided>,
    mut replies: Vec<Value>,
    places: &[Place],
) -> Vec<Outcome> {
    // Every command of the EXEC has a write's place: as many replies.
    let sent = places.iter().map(|place| place.at + 1).max().unwrap_or(0);
    let fits = sent == replies.len();
    let mut places = places.iter();
    items
        .iter()
        .zip(decided)
        .map(|(item, decided)| match decided {
            Decided::Now(outcome) => Outcome::Ran(outcome),
            Decided::Queued => {
                let mine: Vec<Value> = places
                    .by_ref()
                    .take(item.writes)
                    .filter(|_| fits)
                    .map(|place| match place.args {
                        None => std::mem::replace(&mut replies[place.at], Value::Nil),
                        Some(_) => replies[place.at].clone(),
                    })
                    .collect();
                if mine.len() != item.writes {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{cmd, Owned};

    /// An item writing `key`'s hash (HSET) and `index`'s set (SADD), its
    /// recorded read of `key` (HMGET) expected to reply `expected`.
    fn item(key: &str, index: &str, expected: Value) -> Item {
        let writes = vec![
            cmd("HSET").arg(key).arg("f").arg("v").owned(),
            cmd("SADD").arg(index).arg(key).owned(),
        ];
        let borrowed: Vec<Write<'_>> = writes.iter().map(|w| Write::plain(w, false)).collect();
        let checks = types::checks(&borrowed)
            .iter()
            .map(|c| (c.at, c.want))
            .collect();
        Item {
            guards: Vec::new(),
            reads: vec![cmd("HMGET").arg(key).arg("f").owned()],
            expected: vec![expected],
            checks,
            writes: writes.into_iter().map(|w| (w, false)).collect(),
        }
    }

    fn wrong_type() -> Value {
        redis::parse_redis_value(
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        )
        .expect("an error reply")
    }

    #[test]
    fn a_read_of_the_key_answers_its_type_check_and_a_type_is_asked_once_per_key() {
        let absent = || Value::Array(vec![Value::Nil]);
        // `a`'s decision read an error (recorded as 0), `b`'s no field.
        let gathering = Gathering::of(vec![
            item("a", "s", Value::Int(0)),
            item("b", "s", absent()),
        ]);
        // WATCH a b; HMGET a; HMGET b; one TYPE s: the objects' keys are
        // answered by their reads.
        let sent: Vec<Vec<u8>> = gathering
            .reads
            .cmd_iter()
            .filter_map(|c| crate::command::name(c).map(<[u8]>::to_vec))
            .collect();
        assert_eq!(sent, [&b"WATCH"[..], b"HMGET", b"HMGET", b"TYPE"]);
        assert_eq!(gathering.replies, 4);
        // Both read as recorded: `a` WRONGTYPE, `b` no field; the set is
        // not there yet.
        let replies = [
            Value::Okay,
            wrong_type(),
            absent(),
            Value::SimpleString("none".into()),
        ];
        let (decided, some) = decide(&gathering, &replies);
        assert!(matches!(
            &decided[0],
            Decided::Now(Err(Error::UnexpectedType { key, expected: "hash" })) if key == "a"
        ));
        assert!(matches!(decided[1], Decided::Queued));
        // Only `b`'s writes go in the EXEC.
        let exec: Vec<Vec<u8>> = some
            .expect("some items stay out")
            .pipe
            .cmd_iter()
            .filter_map(|c| super::super::key_of(c).map(<[u8]>::to_vec))
            .collect();
        assert_eq!(exec, [&b"b"[..], b"s"]);
    }

    #[test]
    fn a_merged_commands_reply_is_each_writes_and_so_is_its_error() {
        let absent = || Value::Array(vec![Value::Nil]);
        let gathering = Gathering::of(vec![item("a", "s", absent()), item("b", "s", absent())]);
        // HSET a; SADD s a b; HSET b.
        assert_eq!(gathering.writes.cmd_iter().count(), 3);
        let queued = || vec![Decided::Queued, Decided::Queued];
        let replies = |sadd: Value| vec![Value::Int(1), sadd, Value::Int(1)];
        let outcomes = deliver(
            &gathering.items,
            queued(),
            replies(Value::Int(2)),
            &gathering.places,
        );
        for outcome in outcomes {
            assert!(matches!(
                outcome,
                Outcome::Ran(Ok((true, ref replies))) if *replies == [Value::Int(1), Value::Int(2)]
            ));
        }
        let outcomes = deliver(
            &gathering.items,
            queued(),
            replies(wrong_type()),
            &gathering.places,
        );
        assert!(outcomes
            .iter()
            .all(|o| matches!(o, Outcome::Ran(Err(Error::WrongType { .. })))));
        // Replies of another shape than the EXEC's: no write is told it ran.
        let outcomes = deliver(
            &gathering.items,
            queued(),
            vec![Value::Int(1), Value::Int(2)],
            &gathering.places,
        );
        assert!(outcomes.iter().all(|o| matches!(o, Outcome::Ran(Err(_)))));
    }
}
