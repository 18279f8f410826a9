//! Many decided writes run together: a bulk write's, on one server in the
//! plain layout, as WATCH transactions of native commands, [`MAX_ITEMS`]
//! writes a transaction, [`IN_FLIGHT`] transactions at once, each write
//! with its own guards, reads, decision and outcome, as if sent alone.
//!
//! Why not a script per write, as a write sent alone runs: on
//! redis-server a script costs a few microseconds before its first
//! command and a few more per command it calls, about twice what the
//! same commands cost sent natively. A bulk write is throughput-bound,
//! and its writes rarely meet each other or other writers, so it takes
//! the optimistic path with native commands instead. A transaction, on a
//! connection of its own:
//!
//! 1. decides each write once on its reads answered as absent
//!    ([`recall::absent`]: what an insert of a new object finds), which
//!    names the reads its decision rests on and the keys it writes;
//! 2. WATCHes the writes' guards and the keys they read, then reads the
//!    guards (EXISTS), those reads, and the types of the keys the writes
//!    need of one type ([`types`]), in one round trip (a key that a read
//!    reads with a command of the type it must hold needs no `TYPE`:
//!    WRONGTYPE would refuse that read, so its reply answers the check);
//! 3. decides each write again, on the replies: a missing guard or a key
//!    of another type refuses it, as does its decision's own refusal,
//!    and the others go in one MULTI/EXEC, in a second round trip, their
//!    index commands to one key merged into one ([`merged`]).
//!
//! The decisions are the code a write sent alone runs ([`Decide`]),
//! reading through a [`Reader`] that answers at once, so they run to the
//! end without a pause. A write whose decision reads what the first did
//! not (a unique value's holder, found only on the actual replies),
//! writes a key whose type was not read, or would wait (a read apart from
//! the transaction), goes alone instead: its caller sends it as a write
//! of its own.
//!
//! If a watched key changed in between, nothing was written and the
//! transaction runs again after a pause, up to [`ATTEMPTS`] times; past
//! that each of its writes goes alone. Each write is whole or not at
//! all: the EXEC applies all the writes it holds at once, and the type
//! checks mean that none of their commands meets a key of another type
//! (the index keys are read, not watched, as on every WATCH path: every
//! writer writes them).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures_util::FutureExt as _;
use parking_lot::Mutex;
use redis::{Cmd, Value};
use smallvec::SmallVec;

use super::checked::{decided, first_error, Decide, Reader};
#[cfg(test)]
use super::Write;
use super::{types, Expecting, Plan, Unit};
use crate::command::{cmd, Owned};
use crate::db::optimistic::OptimisticConnection;
use crate::db::recall;
use crate::layout::plain_key;
use crate::{Db, Error, Result};
use merged::{merge, Place};

mod merged;

/// The most writes one transaction holds: enough that its two round
/// trips, its reads of the index keys' types and its merged index
/// commands are shared widely; few enough that several transactions are
/// in flight, one building while others travel.
pub(crate) const MAX_ITEMS: usize = 128;

/// How many transactions run at once, each on an exclusive connection
/// of the pool (16).
pub(crate) const IN_FLIGHT: usize = 4;

/// How many times a transaction runs before its writes go alone: one
/// that keeps losing races meets a writer of its own objects, which the
/// writes alone settle one by one.
const ATTEMPTS: u32 = 4;

/// A write to gather: a plan of one unit, and what it decides on its
/// reads.
pub(crate) struct Gathered<'a, 'k, D> {
    pub(crate) plan: &'a Plan<'k>,
    pub(crate) decide: &'a D,
}

/// What became of a gathered write: the replies of its kept commands, or
/// why it failed; `None` if it is to be sent alone.
pub(crate) type Outcome = Option<Result<Vec<Value>>>;

/// Whether writes on `db` can be gathered: one server in the plain
/// layout, where one transaction may hold keys of many slots (in process,
/// each write runs at once under the engine's lock instead).
pub(crate) fn applies(db: &Db) -> bool {
    db.one_slot() && !db.is_cluster() && db.engine().is_none()
}

type Fast = foldhash::fast::RandomState;

/// Answers a first decision's reads as absent, and keeps them: what the
/// transaction reads.
#[derive(Default)]
struct Guessing {
    reads: Mutex<Vec<Cmd>>,
}

impl Reader for Guessing {
    fn read(
        &self,
        _watch: &[&str],
        reads: Vec<Cmd>,
        _errors_as_replies: bool,
    ) -> impl Future<Output = Result<Vec<Value>>> + Send {
        let replies: Vec<Value> = reads
            .iter()
            .map(|read| recall::absent(read).unwrap_or(Value::Nil))
            .collect();
        let mut made = self.reads.lock();
        // A decision reads once, as a rule: its reads are kept as they came.
        if made.is_empty() {
            *made = reads;
        } else {
            made.extend(reads);
        }
        std::future::ready(Ok(replies))
    }
}

/// Answers a decision's reads from the transaction's replies: those of
/// the round (`reads`, `replies`), in the order the first decision made
/// them, then those read since (`more`). A read it cannot answer is
/// missed (answered nil), to be read before the write is decided again.
struct Answering<'r> {
    reads: &'r [&'r Cmd],
    replies: &'r [Value],
    more: &'r [(Cmd, Value)],
    next: AtomicUsize,
    missed: Mutex<Vec<Cmd>>,
}

impl Answering<'_> {
    fn answer(&self, read: &Cmd) -> Option<Value> {
        let at = self.next.fetch_add(1, Ordering::Relaxed);
        if let (Some(made), Some(reply)) = (self.reads.get(at), self.replies.get(at))
            && crate::command::same(made, read)
        {
            return Some(reply.clone());
        }
        let earlier = self.reads.iter().copied().zip(self.replies);
        let since = self.more.iter().map(|(read, reply)| (read, reply));
        earlier
            .chain(since)
            .find(|(made, _)| crate::command::same(made, read))
            .map(|(_, reply)| reply.clone())
    }
}

impl Reader for Answering<'_> {
    fn read(
        &self,
        _watch: &[&str],
        reads: Vec<Cmd>,
        errors_as_replies: bool,
    ) -> impl Future<Output = Result<Vec<Value>>> + Send {
        let replies: Vec<Value> = reads
            .iter()
            .map(|read| {
                self.answer(read).unwrap_or_else(|| {
                    self.missed.lock().push(read.clone());
                    Value::Nil
                })
            })
            .collect();
        let failed = first_error(&reads, &replies, errors_as_replies);
        std::future::ready(match failed {
            Some(err) => Err(err),
            None => Ok(replies),
        })
    }
}

/// A transaction ready to run: the pipeline that WATCHes and reads, and
/// each write's place in its replies.
struct Round {
    /// WATCH the guards and the read keys; then each distinct guard's
    /// EXISTS, each write's reads, each distinct checked key's TYPE where
    /// no read answers its check. Errors come back as replies.
    reads: redis::Pipeline,
    /// Whether `reads` starts with a WATCH, whose reply comes first.
    watching: bool,
    /// How many replies `reads` gets.
    replies: usize,
    /// Each write's places (`None`: it goes alone).
    items: Vec<Option<Placed>>,
    /// The reply of each checked key's `TYPE`, by key.
    types: HashMap<Vec<u8>, usize, Fast>,
}

/// Where a write's guards' and reads' replies are among the round's,
/// and its first decision.
struct Placed {
    /// Each guard's EXISTS, in the order of the unit's guards.
    guards: Vec<usize>,
    /// Its reads, as the first decision made them.
    reads: std::ops::Range<usize>,
    /// The commands it added (`None`: it refused the write): the
    /// decision, if the replies stand ([`Decide::stands`]).
    extra: Option<Vec<Cmd>>,
    /// Where the replies that check the types its first decision's
    /// commands need are: what that decision, if it stands, checks.
    checks: SmallVec<[TypeReply; 4]>,
}

/// A reply that answers a type check.
#[derive(Clone, Copy)]
enum TypeReply {
    /// A read of the type wanted, at this reply: the key holds that type
    /// unless it was refused (WRONGTYPE).
    Read(usize),
    /// A `TYPE`, at this reply, and the type wanted.
    Type(usize, &'static str),
}

impl TypeReply {
    /// Whether `replies` say the key holds the type wanted (or none).
    fn fits(self, replies: &[Value]) -> bool {
        match self {
            TypeReply::Read(at) => !matches!(replies.get(at), Some(Value::ServerError(_)) | None),
            TypeReply::Type(at, want) => holds(replies.get(at), want),
        }
    }
}

/// Whether a `TYPE` reply says its key holds `want`, or nothing.
fn holds(reply: Option<&Value>, want: &str) -> bool {
    matches!(reply, Some(Value::SimpleString(t)) if t == "none" || t == want)
}

/// A first decision: its reads (answered as absent) and the commands it
/// adds (`None`: it refused the write).
struct First {
    reads: Vec<Cmd>,
    extra: Option<Vec<Cmd>>,
}

/// `decide`'s decision on reads answered as absent; `None` if it cannot
/// be made at once.
fn first<D: Decide>(decide: &D) -> Option<First> {
    let guessing = Guessing::default();
    // A refusal on guesses still names the reads to make; the decision on
    // their replies stands.
    let extra = decide.decide(&guessing).now_or_never()?.ok();
    Some(First {
        reads: guessing.reads.into_inner(),
        extra,
    })
}

impl Round {
    /// The round of `units`, with what their first decisions (`firsts`)
    /// read and write.
    fn of(units: &[Unit<'_>], firsts: Vec<Option<First>>) -> Self {
        let mut exists: Vec<Cmd> = Vec::new();
        let mut guard_at: HashMap<&str, usize, Fast> = HashMap::default();
        let mut reads: Vec<Cmd> = Vec::with_capacity(units.len());
        let mut typed: Vec<Cmd> = Vec::new();
        let mut types: HashMap<Vec<u8>, usize, Fast> = HashMap::default();
        let mut items = Vec::with_capacity(units.len());
        for (unit, first) in units.iter().zip(firsts) {
            let Some(first) = first else {
                items.push(None);
                continue;
            };
            let mut guards = Vec::with_capacity(unit.guards.len());
            for guard in &unit.guards {
                let at = *guard_at.entry(guard).or_insert_with(|| {
                    exists.push(cmd("EXISTS").arg(*guard).owned());
                    exists.len() - 1
                });
                guards.push(at);
            }
            let extra = first.extra.as_deref().unwrap_or_default();
            // Which replies are kept changes no type check.
            let mut checks = SmallVec::new();
            for check in types::checks_of(decided(&unit.cmds, extra, false)) {
                // Positions for now: among the write's reads, among the TYPEs.
                let reply = type_reply(&first.reads, 0, &types, check.key, check.want)
                    .unwrap_or_else(|| {
                        typed.push(cmd("TYPE").arg(check.key).owned());
                        types.insert(check.key.to_vec(), typed.len() - 1);
                        TypeReply::Type(typed.len() - 1, check.want)
                    });
                checks.push(reply);
            }
            let at = reads.len();
            reads.extend(first.reads);
            items.push(Some(Placed {
                guards,
                reads: at..reads.len(),
                extra: first.extra,
                checks,
            }));
        }
        // WATCH each placed write's guards and the keys of the reads, once.
        let mut watched: HashSet<&[u8], Fast> =
            HashSet::with_capacity_and_hasher(reads.len(), Fast::default());
        let guards = units
            .iter()
            .zip(&items)
            .filter(|(_, placed)| placed.is_some())
            .flat_map(|(unit, _)| unit.guards.iter().map(|g| g.as_bytes()));
        let keys: Vec<&[u8]> = guards
            .chain(reads.iter().filter_map(super::key_of))
            .filter(|key| watched.insert(key))
            .collect();
        let watching = !keys.is_empty();
        // Built at its size: a transaction's WATCH names a hundred keys.
        let watch = crate::command::exact("WATCH", &keys);
        // Positions among the replies: the WATCH's first, if any, then
        // the EXISTS, the reads and the TYPEs.
        let exists_base = usize::from(watching);
        let read_base = exists_base + exists.len();
        let type_base = read_base + reads.len();
        for item in items.iter_mut().flatten() {
            for guard in &mut item.guards {
                *guard += exists_base;
            }
            item.reads = item.reads.start + read_base..item.reads.end + read_base;
            for check in &mut item.checks {
                *check = match *check {
                    TypeReply::Read(at) => TypeReply::Read(item.reads.start + at),
                    TypeReply::Type(at, want) => TypeReply::Type(type_base + at, want),
                };
            }
        }
        for at in types.values_mut() {
            *at += type_base;
        }
        let replies = type_base + typed.len();
        let mut pipe = redis::Pipeline::with_capacity(replies);
        pipe.ignore_errors();
        if watching {
            pipe.add_command(watch);
        }
        for read in exists.into_iter().chain(reads).chain(typed) {
            pipe.add_command(read);
        }
        Round {
            reads: pipe,
            watching,
            replies,
            items,
            types,
        }
    }
}

/// The reply that answers the check that `key` holds `want`: the write's
/// read of `key` by a command of that type, among `reads` (the first at
/// reply `read_base`), which WRONGTYPE refuses on any other type and which
/// runs in the same instant as a `TYPE` would; else the key's `TYPE`
/// among `types`. `None` if the round made neither.
fn type_reply<'c>(
    reads: impl IntoIterator<Item = &'c Cmd>,
    read_base: usize,
    types: &HashMap<Vec<u8>, usize, Fast>,
    key: &[u8],
    want: &'static str,
) -> Option<TypeReply> {
    let read = reads.into_iter().position(|read| {
        super::key_of(read) == Some(key)
            && crate::command::name(read).and_then(types::needed) == Some(want)
    });
    match read {
        Some(at) => Some(TypeReply::Read(read_base + at)),
        None => types.get(key).map(|&at| TypeReply::Type(at, want)),
    }
}

/// A write's decision on the round's replies.
enum Decision {
    /// Refused: the outcome as it is.
    Now(Result<Vec<Value>>),
    /// Not decided here: to be sent alone.
    Alone,
    /// To decide again once these reads are made.
    Missed(Vec<Cmd>),
    /// To go in the MULTI: the commands its decision adds (`None`: the
    /// first decision's), and the keys whose types its commands need that
    /// the round did not read (each with the type wanted).
    Queued(Option<Vec<Cmd>>, Vec<(Vec<u8>, &'static str)>),
}

/// How many times a transaction reads what its decisions missed (a unique
/// value's holder, whose value the holder's field must still hold)
/// before those writes go alone.
const READ_ROUNDS: usize = 2;

/// Makes the reads that `decisions` missed, in one more round trip on
/// `tx`, WATCHing their keys first, as the round watched its own: each
/// read with its reply goes on the write's `more`. Whether any was made.
async fn read_missed(
    tx: &crate::db::optimistic::RawTransaction,
    decisions: &mut [Decision],
    more: &mut [Vec<(Cmd, Value)>],
) -> Result<bool> {
    let missed: Vec<(usize, Vec<Cmd>)> = decisions
        .iter_mut()
        .enumerate()
        .filter_map(|(i, d)| match d {
            Decision::Missed(reads) => Some((i, std::mem::take(reads))),
            _ => None,
        })
        .collect();
    if missed.is_empty() {
        return Ok(false);
    }
    let mut watch = cmd("WATCH");
    for (_, reads) in &missed {
        for key in reads.iter().filter_map(super::key_of) {
            watch.arg(key);
        }
    }
    let mut pipe = redis::Pipeline::new();
    pipe.ignore_errors();
    pipe.add_command(watch).ignore();
    for (_, reads) in &missed {
        for read in reads {
            pipe.add_command(read.clone());
        }
    }
    let replies: Vec<Value> = tx.query_pipeline(&pipe).await?;
    let count: usize = missed.iter().map(|(_, reads)| reads.len()).sum();
    if replies.len() != count {
        return Err(unknown_shape());
    }
    let mut replies = replies.into_iter();
    for (i, reads) in missed {
        for read in reads {
            let reply = replies.next().unwrap_or(Value::Nil);
            more[i].push((read, reply));
        }
    }
    Ok(true)
}

/// Reads the types that `decisions` need and the round did not read (a
/// changed write leaving a tag whose set no first decision wrote), in one
/// more round trip on `tx`, and refuses each write that finds a key of
/// another type.
async fn check_types_unread(
    tx: &crate::db::optimistic::RawTransaction,
    decisions: &mut [Decision],
) -> Result<()> {
    let mut keys: Vec<&[u8]> = decisions
        .iter()
        .flat_map(|d| match d {
            Decision::Queued(_, unread) => unread.as_slice(),
            _ => &[],
        })
        .map(|(key, _)| key.as_slice())
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    keys.sort_unstable();
    keys.dedup();
    let mut pipe = redis::Pipeline::with_capacity(keys.len());
    pipe.ignore_errors();
    for key in &keys {
        pipe.add_command(cmd("TYPE").arg(*key).owned());
    }
    let replies: Vec<Value> = tx.query_pipeline(&pipe).await?;
    if replies.len() != keys.len() {
        return Err(unknown_shape());
    }
    let found: HashMap<Vec<u8>, Value, Fast> =
        keys.into_iter().map(<[u8]>::to_vec).zip(replies).collect();
    for decision in decisions.iter_mut() {
        let Decision::Queued(_, unread) = decision else {
            continue;
        };
        let wrong = unread
            .iter()
            .find(|(key, want)| !holds(found.get(key), want));
        if let Some((key, want)) = wrong {
            *decision = Decision::Now(Err(types::refused(key, want)));
        }
    }
    Ok(())
}

/// What a transaction's attempt decided for a write before the EXEC.
enum Decided {
    /// Refused: the outcome as it is.
    Now(Result<Vec<Value>>),
    /// Not decided here: to be sent alone.
    Alone,
    /// In the MULTI, its commands' replies (this many) next in the
    /// EXEC's.
    Queued(usize),
}

/// Runs `items` (at most [`MAX_ITEMS`]; a caller runs [`IN_FLIGHT`] such
/// calls at once) as one WATCH transaction (see the module docs): an
/// outcome for each, in order.
pub(crate) async fn run<D: Decide>(db: &Db, items: &[Gathered<'_, '_, D>]) -> Vec<Outcome> {
    let alone = || items.iter().map(|_| None).collect();
    if items.len() < 2 {
        // Alone: its own script is one round trip, against two here.
        return alone();
    }
    let units: Vec<Unit<'_>> = items.iter().map(|item| item.plan.unit()).collect();
    let expecting: Vec<Expecting<'_, D>> = units
        .iter()
        .zip(items)
        .map(|(unit, item)| Expecting {
            expects: &unit.expects,
            then: item.decide,
        })
        .collect();
    let firsts = units
        .iter()
        .zip(&expecting)
        // A reply spliced into a later command cannot be passed on in a
        // MULTI.
        .map(
            |(unit, decide)| match unit.cmds.iter().any(|w| w.splice.is_some()) {
                true => None,
                false => first(decide),
            },
        )
        .collect();
    let round = Round::of(&units, firsts);
    let round = &round;
    let (units, expecting) = (&units, &expecting);
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
    let route = units
        .iter()
        .find_map(|unit| unit.guards.first().copied())
        .or_else(|| units.iter().find_map(|unit| super::route(&unit.cmds)))
        .unwrap_or_default();
    let outcome = conn
        .run(no_keys, ATTEMPTS, Some(route), |tx| async move {
            let replies: Vec<Value> = tx.query_pipeline(&round.reads).await?;
            if replies.len() != round.replies {
                return Err(unknown_shape());
            }
            // A WATCH refused (an ACL without it) guards nothing: the
            // writes go alone instead.
            if let (true, Some(Value::ServerError(refused))) = (round.watching, replies.first()) {
                return Err(redis::RedisError::from(refused.clone()).into());
            }
            let sent_reads: Vec<&Cmd> = round.reads.cmd_iter().collect();
            let mut more: Vec<Vec<(Cmd, Value)>> = (0..units.len()).map(|_| Vec::new()).collect();
            let decide = |i: usize, more: &[(Cmd, Value)]| match &round.items[i] {
                Some(placed) => decide_again(
                    round,
                    &units[i],
                    &expecting[i],
                    placed,
                    &sent_reads,
                    &replies,
                    more,
                ),
                None => Decision::Alone,
            };
            let mut decisions: Vec<Decision> = (0..units.len()).map(|i| decide(i, &[])).collect();
            for _ in 0..READ_ROUNDS {
                if !read_missed(&tx, &mut decisions, &mut more).await? {
                    break;
                }
                for (i, decision) in decisions.iter_mut().enumerate() {
                    if matches!(decision, Decision::Missed(_)) {
                        *decision = decide(i, &more[i]);
                    }
                }
            }
            check_types_unread(&tx, &mut decisions).await?;
            let mut decided: Vec<Decided> = decisions
                .iter_mut()
                .map(|decision| match decision {
                    Decision::Now(outcome) => {
                        Decided::Now(std::mem::replace(outcome, Ok(Vec::new())))
                    }
                    Decision::Alone | Decision::Missed(_) => Decided::Alone,
                    Decision::Queued(..) => Decided::Queued(0),
                })
                .collect();
            // The queued writes' commands, borrowed from their units and
            // decisions until the transaction is built.
            let mut queued = Vec::with_capacity(units.iter().map(|u| u.cmds.len() + 2).sum());
            for (i, (decision, outcome)) in decisions.iter().zip(&mut decided).enumerate() {
                let Decision::Queued(extra, _) = decision else {
                    continue;
                };
                let first = round.items[i].as_ref().and_then(|p| p.extra.as_deref());
                let extra = extra.as_deref().or(first).unwrap_or_default();
                let start = queued.len();
                let writes = super::checked::decided(&units[i].cmds, extra, expecting[i].keeps());
                queued.extend(writes);
                *outcome = Decided::Queued(queued.len() - start);
            }
            if queued.is_empty() {
                return Ok(Some((decided, Vec::new(), Vec::new())));
            }
            let exec = merge(queued);
            sent.store(true, Ordering::Relaxed);
            let replies: Option<Vec<Value>> = tx.exec(&exec.pipe).await?;
            Ok(replies.map(|replies| (decided, replies, exec.places)))
        })
        .await;
    match outcome {
        Ok((decided, replies, places)) => deliver(decided, replies, &places),
        // Every attempt lost a race: nothing written, each goes alone.
        Err(Error::Conflict { .. }) => alone(),
        // A full server refused the EXEC whole, as it refuses any MULTI
        // then, deletes too: alone, each write is a script, which it
        // runs if the write only removes data and refuses whole if not.
        Err(Error::OutOfMemory { .. }) => alone(),
        Err(_) if !sent.load(Ordering::Relaxed) => alone(),
        Err(err) => {
            let mut outcomes: Vec<Outcome> =
                (1..items.len()).map(|_| Some(Err(again(&err)))).collect();
            outcomes.insert(0, Some(Err(err)));
            outcomes
        }
    }
}

/// Decides a write (`unit`, `decide`, placed at `placed`) on the round's
/// `replies` (to the commands `sent`), as its script would: the guards,
/// then its decision on its reads, then the types its commands need
/// (those the round did not read are left to [`check_types_unread`]).
fn decide_again<D: Decide>(
    round: &Round,
    unit: &Unit<'_>,
    decide: &Expecting<'_, D>,
    placed: &Placed,
    sent: &[&Cmd],
    replies: &[Value],
    more: &[(Cmd, Value)],
) -> Decision {
    if let Some((missing, _)) = unit
        .guards
        .iter()
        .zip(&placed.guards)
        .find(|(_, at)| replies[**at] != Value::Int(1))
    {
        return Decision::Now(Err(Error::NotFound {
            key: plain_key(missing),
        }));
    }
    let seen = &replies[placed.reads.clone()];
    // The first decision stands if it was made on these replies, or on
    // ones it treats the same.
    let reads = &sent[placed.reads.clone()];
    let reused = more.is_empty()
        && reads
            .iter()
            .zip(seen)
            .all(|(read, seen)| decide.stands(read, seen));
    let fresh = match (&placed.extra, reused) {
        // Its type checks are the round's, placed when it was made.
        (Some(_), true) if placed.checks.iter().all(|c| c.fits(replies)) => {
            return Decision::Queued(None, Vec::new());
        }
        (Some(_), true) => None,
        _ => {
            let reader = Answering {
                reads,
                replies: seen,
                more,
                next: AtomicUsize::new(0),
                missed: Mutex::new(Vec::new()),
            };
            let outcome = decide.decide(&reader).now_or_never();
            let missed = reader.missed.into_inner();
            if !missed.is_empty() {
                return Decision::Missed(missed);
            }
            match outcome {
                None => return Decision::Alone,
                Some(Err(err)) => return Decision::Now(Err(err)),
                Some(Ok(extra)) => Some(extra),
            }
        }
    };
    let extra = fresh
        .as_deref()
        .or(placed.extra.as_deref())
        .unwrap_or_default();
    let mut unread = Vec::new();
    for check in types::checks_of(decided(&unit.cmds, extra, decide.keeps())) {
        let Some(reply) = type_reply(
            reads.iter().copied(),
            placed.reads.start,
            &round.types,
            check.key,
            check.want,
        ) else {
            // A key the first decision did not write: its type was not
            // read yet.
            unread.push((check.key.to_vec(), check.want));
            continue;
        };
        if !reply.fits(replies) {
            return Decision::Now(Err(types::refused(check.key, check.want)));
        }
    }
    Decision::Queued(fresh, unread)
}

/// Each write's outcome: the one decided before the EXEC, or its
/// commands' replies from the EXEC's (`replies`, where `places` says,
/// the queued writes' places one after the other): its kept ones, or the
/// first error among them, as its script would have stopped there. A
/// merged command's reply stands for each write in it.
fn deliver(decided: Vec<Decided>, mut replies: Vec<Value>, places: &[Place]) -> Vec<Outcome> {
    // Every command of the EXEC has a write's place: as many replies.
    let sent = places.iter().map(|place| place.at + 1).max().unwrap_or(0);
    let fits = sent == replies.len();
    let mut places = places.iter();
    decided
        .into_iter()
        .map(|decided| match decided {
            Decided::Now(outcome) => Some(outcome),
            Decided::Alone => None,
            Decided::Queued(count) => {
                let mine: SmallVec<[&Place; 8]> = places.by_ref().take(count).collect();
                if !fits || mine.len() != count {
                    return Some(Err(unknown_shape()));
                }
                if let Some(err) = mine.iter().find_map(|place| match &replies[place.at] {
                    Value::ServerError(err) => Some(err.clone()),
                    _ => None,
                }) {
                    return Some(Err(redis::RedisError::from(err).into()));
                }
                let kept = mine
                    .iter()
                    .filter(|place| place.keep)
                    .map(|place| match place.args {
                        None => std::mem::replace(&mut replies[place.at], Value::Nil),
                        Some(_) => replies[place.at].clone(),
                    })
                    .collect();
                Some(Ok(kept))
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
    use crate::command::Owned;

    /// The test's decision: read field `f` of the object; if it holds a
    /// tag, leave that tag's set (`SREM`), and join set `s` (`SADD`).
    struct Tagging<'a> {
        key: &'a str,
    }

    impl Decide for Tagging<'_> {
        async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
            let read = cmd("HMGET").arg(self.key).arg("f").owned();
            let replies = reader.read(&[self.key], vec![read], false).await?;
            let mut out = Vec::new();
            if let Some(Value::Array(values)) = replies.first()
                && let Some(Value::BulkString(old)) = values.first()
            {
                out.push(cmd("SREM").arg(old.as_slice()).arg(self.key).owned());
            }
            out.push(cmd("SADD").arg("s").arg(self.key).owned());
            Ok(out)
        }
    }

    /// The plan of an object's write: `HSET key f v`, its reply ignored.
    fn plan(key: &str) -> Plan<'static> {
        let mut plan = Plan::new();
        plan.add_ignored(cmd("HSET").arg(key).arg("f").arg("v").owned());
        plan
    }

    fn names(pipe: &redis::Pipeline) -> Vec<String> {
        pipe.cmd_iter()
            .filter_map(|c| crate::command::name(c))
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect()
    }

    fn wrong_type() -> Value {
        redis::parse_redis_value(
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        )
        .expect("an error reply")
    }

    /// The round of the writes of `a` and `b`, with their units and
    /// decisions, passed to `check`.
    fn with_round(check: impl FnOnce(&Round, &[Unit<'_>], &[Expecting<'_, Tagging<'_>>])) {
        let plans = [plan("a"), plan("b")];
        let tagging = [Tagging { key: "a" }, Tagging { key: "b" }];
        let units: Vec<Unit<'_>> = plans.iter().map(|p| p.unit()).collect();
        let expecting: Vec<Expecting<'_, Tagging<'_>>> = units
            .iter()
            .zip(&tagging)
            .map(|(unit, then)| Expecting {
                expects: &unit.expects,
                then,
            })
            .collect();
        let firsts = expecting.iter().map(first).collect();
        let round = Round::of(&units, firsts);
        check(&round, &units, &expecting);
    }

    #[test]
    fn a_round_watches_and_reads_what_the_first_decisions_read_and_types_each_key_once() {
        with_round(|round, _, _| {
            // The objects' types are answered by their reads (HMGET); the
            // set both join is typed once.
            assert_eq!(names(&round.reads), ["WATCH", "HMGET", "HMGET", "TYPE"]);
            assert_eq!(round.replies, 4);
            let watched: Vec<&[u8]> = round
                .reads
                .cmd_iter()
                .next()
                .map(|w| crate::command::args(w).skip(1).flatten().collect())
                .unwrap_or_default();
            assert_eq!(watched, [&b"a"[..], b"b"]);
        });
    }

    #[test]
    fn a_write_is_decided_again_only_on_replies_other_than_guessed() {
        with_round(|round, units, expecting| {
            let sent: Vec<&Cmd> = round.reads.cmd_iter().collect();
            let absent = Value::Array(vec![Value::Nil]);
            let held = Value::Array(vec![Value::BulkString(b"old".to_vec())]);
            let none = Value::SimpleString("none".into());
            let replies = [Value::Okay, absent, held, none];
            let decided: Vec<Decision> = (0..2)
                .map(|i| {
                    let placed = round.items[i].as_ref().expect("placed");
                    decide_again(
                        round,
                        &units[i],
                        &expecting[i],
                        placed,
                        &sent,
                        &replies,
                        &[],
                    )
                })
                .collect();
            // `a` found nothing, as guessed: the first decision stands.
            assert!(matches!(&decided[0], Decision::Queued(None, unread) if unread.is_empty()));
            // `b` holds a tag: decided again, its SREM to a set whose
            // type the round did not read.
            match &decided[1] {
                Decision::Queued(Some(extra), unread) => {
                    assert_eq!(names_of(extra), ["SREM", "SADD"]);
                    assert_eq!(unread, &[(b"old".to_vec(), "set")]);
                }
                _ => panic!("b is queued with a decision of its own"),
            }
            // A key of another type where a read answers the check: the
            // decision itself refuses it, by the read's error.
            let replies = [
                Value::Okay,
                wrong_type(),
                Value::Array(vec![Value::Nil]),
                Value::SimpleString("none".into()),
            ];
            let placed = round.items[0].as_ref().expect("placed");
            let refused = decide_again(
                round,
                &units[0],
                &expecting[0],
                placed,
                &sent,
                &replies,
                &[],
            );
            assert!(matches!(
                refused,
                Decision::Now(Err(Error::UnexpectedType { ref key, expected: "hash" })) if key == "a"
            ));
        });
    }

    fn names_of(cmds: &[Cmd]) -> Vec<String> {
        cmds.iter()
            .filter_map(|c| crate::command::name(c))
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect()
    }

    #[test]
    fn a_decision_reading_what_the_round_did_not_is_made_again_after_that_read() {
        // A round that read nothing of `a`.
        let reader = Answering {
            reads: &[],
            replies: &[],
            more: &[],
            next: AtomicUsize::new(0),
            missed: Mutex::new(Vec::new()),
        };
        let decision = Tagging { key: "a" };
        let outcome = decision.decide(&reader).now_or_never();
        assert!(outcome.is_some(), "an answering read never waits");
        let missed = reader.missed.into_inner();
        assert_eq!(names_of(&missed), ["HMGET"]);
        // Read since: answered.
        let more = [(missed[0].clone(), Value::Array(vec![Value::Nil]))];
        let reader = Answering {
            reads: &[],
            replies: &[],
            more: &more,
            next: AtomicUsize::new(0),
            missed: Mutex::new(Vec::new()),
        };
        let extra = decision.decide(&reader).now_or_never();
        assert!(reader.missed.into_inner().is_empty());
        assert!(matches!(extra, Some(Ok(ref e)) if names_of(e) == ["SADD"]));
    }

    #[test]
    fn a_merged_commands_reply_is_each_writes_and_so_is_its_error() {
        let cmds = [
            cmd("HSET").arg("a").arg("f").arg("v").owned(),
            cmd("SADD").arg("s").arg("a").owned(),
            cmd("HSET").arg("b").arg("f").arg("v").owned(),
            cmd("SADD").arg("s").arg("b").owned(),
        ];
        // The HSETs' replies are kept, the SADDs' dropped.
        let merged = merge(
            cmds.iter()
                .enumerate()
                .map(|(i, c)| Write::plain(c, i % 2 == 0)),
        );
        // HSET a; SADD s a b; HSET b.
        assert_eq!(merged.pipe.cmd_iter().count(), 3);
        let queued = || vec![Decided::Queued(2), Decided::Queued(2)];
        let replies = |sadd: Value| vec![Value::Int(1), sadd, Value::Int(1)];
        for outcome in deliver(queued(), replies(Value::Int(2)), &merged.places) {
            assert!(matches!(outcome, Some(Ok(ref kept)) if *kept == [Value::Int(1)]));
        }
        let outcomes = deliver(queued(), replies(wrong_type()), &merged.places);
        assert!(outcomes
            .iter()
            .all(|o| matches!(o, Some(Err(Error::WrongType { .. })))));
        // Replies of another shape than the EXEC's: no write is told it ran.
        let outcomes = deliver(queued(), vec![Value::Int(1), Value::Int(2)], &merged.places);
        assert!(outcomes.iter().all(|o| matches!(o, Some(Err(_)))));
    }
}
