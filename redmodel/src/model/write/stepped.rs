//! The write path in the cluster layout: an object and its index entries
//! live in different slots, so a write that keeps indexes is a sequence of
//! steps, each atomic in its own slot, in an order chosen so that a crash
//! between two steps leaves only what the reads already skip and prune, or
//! what a reindex pass ([`rebuild_indexes`](crate::model::migrate::rebuild_indexes))
//! repairs. Every step is idempotent, so a write retried after an error
//! converges.
//!
//! 1. **Claim** each new unique value, in the entry's slot: the entry is
//!    made to name this object, with a lease (a TTL of [`CLAIM_LEASE`])
//!    that marks the claim as pending. A value whose entry names another
//!    object that holds it, or that another object is claiming (an entry
//!    with a TTL), is refused with [`Error::Unique`] before anything else
//!    is written. The claim is a checked write (`ClaimEntry`): a free
//!    entry (or one naming this object) is claimed in one round trip; one
//!    naming another object needs that object's field, in another slot,
//!    read outside the unit, and one whose object no longer holds the
//!    value is taken over by a fenced decision ([`unless_held`]): that
//!    object may claim the value again meanwhile, which leaves the entry
//!    as it was.
//!    An entry naming this object already (a value it holds, or another
//!    write of it claiming the value) gets one more copy of its key: a
//!    copy per claim, so that a write that fails takes back only its own.
//! 2. **The object's write**, in its slot, in one atomic unit that reads
//!    the indexed fields before and after the write (and checks the
//!    sub-object's admin exists, if it is one). If it fails, the claims of
//!    step 1 are released.
//! 3. **Confirm** the claims (PERSIST the entry if it still names this
//!    object, down to one copy: a checked write, one round trip) and
//!    **release** the unique values the write gave up (DEL the entry if
//!    it still names this object and the object does not hold the value
//!    again: a fenced decision, for the reason of step 1).
//! 4. **Index entries** (sorted set, recent list, the tag sets of a field:
//!    one slot each, written concurrently, one round trip for all, and
//!    concurrently with step 3, whose keys are others), from
//!    the values the object step read back; then the
//!    indexed fields are read again, and if a concurrent write changed them
//!    meanwhile the entries are applied again from the new values, until a
//!    read shows no change. Each writer stops only once the fields are what
//!    it applied last, so whichever apply lands last, its writer reads the
//!    fields after it and corrects it: racing writes leave the entries
//!    equal to the fields. The bound, [`MAX_SYNC_ROUNDS`], is for an object
//!    written without pause: a writer that sees that many changes during
//!    its own sync stops, and an apply it made from a value already
//!    overwritten may then outlast the others (the entries lag the field
//!    until a read prunes them or a reindex). With 8 rounds, 16 tasks
//!    writing one object on a loaded machine got there (tests/model/
//!    cluster_steps.rs, about one run in five with 2 rounds).
//!
//! What a crash between steps can leave: after 1, a pending entry naming an
//! object that does not hold the value (lookups check the holder's field
//! and prune it; once its lease ends the value is free); after 2, an entry
//! still pending (it lapses, and the value's entry is then missing until a
//! reindex; [`check`](crate::model::check) reports a pending claim its
//! object holds, and its repair makes the entry permanent) or an old
//! value's entry still naming the object (lookups prune it, claims take it
//! over); during 4, sorted, recent and tag entries that
//! lag the fields (tag reads check the field and prune; a reindex repairs
//! the rest); during a fenced decision (a release, a take-over, a prune),
//! a fence that lapses with its entry (the value is then free; if its
//! object holds it after all, the entry is missing until a reindex).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use redis::{Cmd, FromRedisValue, Value};

use super::guarded_unit;
use crate::command::{cmd, Owned};
use crate::db::optimistic::MAX_ATTEMPTS;
use crate::db::plan::checked::{self, Decide, Reader};
use crate::db::plan::{GuardKeys, Plan};
use crate::db::recall::Guess;
use crate::layout::plain_key;
use crate::model::index::unique::claim_commands;
use crate::model::index::{checked_score, score_arg, IndexKind, IndexSpec};
use crate::model::key::{recent_key, sorted_key, tag_key, unique_key};
use crate::model::live::{entry_state, holder_command, unless_held, Fenced, FENCE_LEASE};
use crate::model::Model;
use crate::{Db, Error, Result};

/// How long a unique claim stays pending before it lapses, if the writer
/// dies before confirming it.
pub(crate) const CLAIM_LEASE: Duration = Duration::from_secs(30);

// A fence on a unique entry must end before any claim made after it
// (`model::live::fence`).
const _: () = assert!(FENCE_LEASE.as_millis() < CLAIM_LEASE.as_millis());

/// How many times the index step applies entries again after seeing a
/// concurrent change of the fields (each round means another write of the
/// object's indexed fields landed meanwhile).
pub(crate) const MAX_SYNC_ROUNDS: usize = 64;

/// Stored texts of some fields (`None`: absent), in a given order.
pub(crate) type Texts = Vec<Option<Vec<u8>>>;

/// A unique entry claimed for a write: to confirm after it, or to
/// release if it fails.
pub(crate) struct Claim {
    entry: String,
    field: &'static str,
    value: String,
}

/// Runs a write of the object at `key` (stored form) that changes the
/// indexed fields of `specs`: the steps of the [module doc](self). `write`
/// adds the object's own commands; their non-ignored replies are returned.
/// `claims` are the unique values the write gives the object, by field.
pub(super) async fn run<M: Model, T: FromRedisValue>(
    db: &Db,
    key: &str,
    guards: GuardKeys<'_>,
    write: &(dyn Fn(&mut Plan) + Sync),
    specs: &[&'static IndexSpec],
    claims: &[(&'static str, &str)],
) -> Result<T> {
    let claimed = claim_all::<M, &str>(db, key, claims).await?;
    let fields: Vec<&str> = specs.iter().map(|s| s.field).collect();
    // Guards in other slots (the objects reference fields name) are
    // checked just before the object's unit, not in it.
    let mut object = guarded_unit(db, key, guards);
    object.add(cmd("HMGET").arg(key).arg(&fields).owned());
    write(&mut object);
    object.add(cmd("HMGET").arg(key).arg(&fields).owned());
    let mut replies: Vec<Value> = match object.run(db).await {
        Ok(replies) => replies,
        Err(err) => {
            release_all(db, &claimed, key).await;
            return Err(err);
        }
    };
    let new: Texts = texts(replies.pop())?;
    let old: Texts = if replies.is_empty() {
        Vec::new()
    } else {
        texts(Some(replies.remove(0)))?
    };
    let out = T::from_redis_value(Value::Array(replies)).map_err(redis::RedisError::from)?;

    settle::<M>(db, key, specs, &claimed, old, new).await?;
    Ok(out)
}

/// Step 1 for every value of `claims` (by field): the entries claimed
/// (pending), to confirm or release. If one is refused, those already
/// claimed are released and the error returned.
pub(crate) async fn claim_all<M: Model, V: AsRef<str>>(
    db: &Db,
    key: &str,
    claims: &[(&'static str, V)],
) -> Result<Vec<Claim>> {
    let mut claimed = Vec::new();
    for (field, value) in claims {
        let value = value.as_ref();
        let entry = unique_key(db, M::TABLE, field, value);
        match claim::<M>(db, &entry, key, field, value).await {
            Ok(()) => claimed.push(Claim {
                entry,
                field,
                value: value.to_string(),
            }),
            Err(err) => {
                release_all(db, &claimed, key).await;
                return Err(err);
            }
        }
    }
    Ok(claimed)
}

/// Steps 3 and 4 for the object at `key` after a write (or a delete) that
/// took the indexed fields of `specs` from `old` to `new`: confirms the
/// `claimed` entries, releases the unique values given up, and brings the
/// other entries in step. Each of these is on keys of its own (an entry,
/// an index), and a crash may leave any of them undone (see the module
/// docs), so they go at once: the round trips of the longest, not their
/// sum.
pub(crate) async fn settle<M: Model>(
    db: &Db,
    key: &str,
    specs: &[&'static IndexSpec],
    claimed: &[Claim],
    old: Texts,
    new: Texts,
) -> Result<()> {
    use futures_util::future::{join3, join_all};
    let given_up: Vec<(&'static str, String)> = specs
        .iter()
        .zip(old.iter().zip(&new))
        .filter_map(|(spec, (old, new))| match (spec.kind, old) {
            (IndexKind::Unique, Some(old)) if Some(old) != new.as_ref() => {
                let old = std::str::from_utf8(old).ok()?;
                Some((spec.field, old.to_string()))
            }
            _ => None,
        })
        .collect();
    // Each runs to its end (none is dropped halfway, holding a WATCH),
    // then the first error is the write's.
    let confirms = join_all(claimed.iter().map(|c| confirm(db, &c.entry, key)));
    let releases = join_all(given_up.iter().map(|(field, old)| async move {
        let entry = unique_key(db, M::TABLE, field, old);
        release(db, &entry, key, field, old, false).await
    }));
    let (confirmed, released, synced) =
        join3(confirms, releases, sync::<M>(db, key, specs, old, new)).await;
    confirmed
        .into_iter()
        .chain(released)
        .chain([synced])
        .collect()
}

/// Takes the object at `key`, just deleted with the indexed fields
/// `old` (in the order of [`Model::INDEXES`]), out of every index of `M`:
/// the index steps of a delete, for a caller (the cascade) that deleted
/// the object itself.
pub(crate) async fn unindex<M: Model>(db: &Db, key: &str, old: Texts) -> Result<()> {
    let specs: Vec<&'static IndexSpec> = M::INDEXES.iter().collect();
    let gone = vec![None; specs.len()];
    settle::<M>(db, key, &specs, &[], old, gone).await
}

/// The texts of an HMGET reply.
fn texts(reply: Option<Value>) -> Result<Texts> {
    Ok(redis::from_redis_value(reply.unwrap_or(Value::Nil)).map_err(redis::RedisError::from)?)
}

/// Step 4: applies the sorted, recent and tag entries of `specs` for the
/// object at `key`, going from `applied` (what the entries reflect now) to
/// `current` (the fields' texts), then reads the fields again and repeats
/// while a concurrent write keeps changing them.
pub(crate) async fn sync<M: Model>(
    db: &Db,
    key: &str,
    specs: &[&'static IndexSpec],
    mut applied: Texts,
    mut current: Texts,
) -> Result<()> {
    let fields: Vec<&str> = specs.iter().map(|s| s.field).collect();
    if !specs.iter().any(|s| !matches!(s.kind, IndexKind::Unique)) {
        return Ok(());
    }
    for round in 0..MAX_SYNC_ROUNDS {
        // The first round applies every entry, which also repairs one a
        // crashed write left behind; later rounds only what changed. Each
        // index is in its own slot and its own MULTI: all at once.
        let applies = specs.iter().enumerate().filter_map(|(i, spec)| {
            let (old, new) = (text(&applied, i), text(&current, i));
            (round == 0 || old != new).then(|| apply::<M>(db, key, spec, old, new))
        });
        let applied_all: Result<Vec<()>> = futures_util::future::join_all(applies)
            .await
            .into_iter()
            .collect();
        applied_all?;
        let now: Texts = db.query(cmd("HMGET").arg(key).arg(&fields)).await?;
        if now == current {
            return Ok(());
        }
        applied = std::mem::replace(&mut current, now);
    }
    Ok(())
}

/// The `i`th of `texts`, if it has one.
fn text(texts: &Texts, i: usize) -> Option<&[u8]> {
    texts.get(i).and_then(|t| t.as_deref())
}

/// Makes one index's entries for the object at `key` go from the field's
/// text `old` to `new`, in one atomic unit in the index's slot.
async fn apply<M: Model>(
    db: &Db,
    key: &str,
    spec: &IndexSpec,
    old: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Result<()> {
    let field = spec.field;
    let mut plan = Plan::new();
    match spec.kind {
        IndexKind::Sorted { score } => {
            let index = sorted_key(db, M::TABLE, field);
            // A value that cannot be a score leaves the index, as a write
            // refuses it before anything is sent; here it was written by
            // someone else.
            let score = new
                .map(score)
                .and_then(|s| s.ok())
                .flatten()
                .and_then(|s| checked_score(field, s).ok());
            plan.add_ignored(match score {
                Some(s) => cmd("ZADD").arg(&index).arg(score_arg(s)).arg(key).owned(),
                None => cmd("ZREM").arg(&index).arg(key).owned(),
            });
        }
        IndexKind::Recent { cap } => {
            let list = recent_key(db, M::TABLE, field);
            plan.add_ignored(cmd("LREM").arg(&list).arg(0).arg(key).owned());
            if new.is_some() {
                plan.add_ignored(cmd("LPUSH").arg(&list).arg(key).owned());
                plan.add_ignored(
                    cmd("LTRIM")
                        .arg(&list)
                        .arg(0)
                        .arg(i64::from(cap) - 1)
                        .clone(),
                );
            }
        }
        IndexKind::Tags { tags } => {
            let parse = |text: Option<&[u8]>| -> BTreeSet<String> {
                text.and_then(|t| tags(t).ok())
                    .unwrap_or_default()
                    .into_iter()
                    .collect()
            };
            let (old, new) = (parse(old), parse(new));
            for tag in old.difference(&new) {
                let tag = tag_key(db, M::TABLE, field, tag);
                plan.add_ignored(cmd("SREM").arg(tag).arg(key).owned());
            }
            for tag in &new {
                let tag = tag_key(db, M::TABLE, field, tag);
                plan.add_ignored(cmd("SADD").arg(tag).arg(key).owned());
            }
        }
        IndexKind::Unique => {}
    }
    plan.run(db).await
}

/// Step 1: makes the unique entry `entry` name `key`, pending (with the
/// lease), unless another object holds or is claiming `value` (see
/// [`ClaimEntry`]). An entry naming another object that does not hold the
/// value is taken over by a fenced decision ([`unless_held`]): that object
/// may claim the value again meanwhile.
async fn claim<M: Model>(
    db: &Db,
    entry: &str,
    key: &str,
    field: &'static str,
    value: &str,
) -> Result<()> {
    for _ in 0..MAX_ATTEMPTS {
        let claim = ClaimEntry {
            db,
            table: M::TABLE,
            entry,
            key,
            field,
            value,
            take_over: Mutex::new(None),
        };
        checked::run::<()>(db, entry, &[], &[], &claim).await?;
        let Some(holder) = claim.take_over.into_inner() else {
            return Ok(());
        };
        let read = cmd("HGET").arg(&holder).arg(field).owned();
        let holds = |reply: Result<Value>| Ok(is_text(&reply?, value));
        let [del, push] = claim_commands(entry, key);
        let take_over = [del, push, lease(entry)];
        match unless_held(db, entry, &holder, &read, &holds, &take_over).await? {
            Fenced::Released => return Ok(()),
            Fenced::Held => return Err(unique(M::TABLE, field, value, &holder)),
            Fenced::Moved => {}
        }
    }
    Err(Error::Conflict {
        attempts: MAX_ATTEMPTS,
        key: Some(plain_key(entry)),
    })
}

/// The refusal of `value` of `table`'s `field`, which `holder` (its
/// stored key) holds or is claiming.
fn unique(table: &'static str, field: &'static str, value: &str, holder: &str) -> Error {
    Error::Unique {
        model: table,
        field,
        value: value.to_string(),
        holder: plain_key(holder),
    }
}

/// Whether the object whose field's read replied `reply` holds `value`
/// still, for a release: an object that is not a hash (a failed write's)
/// holds nothing.
fn still_holds(reply: Result<Value>, value: &str) -> Result<bool> {
    match reply {
        Err(Error::WrongType { .. }) => Ok(false),
        reply => Ok(is_text(&reply?, value)),
    }
}

/// Whether a reply is the text `value`.
fn is_text(reply: &Value, value: &str) -> bool {
    matches!(reply, Value::BulkString(text) if text == value.as_bytes())
}

/// A claim's lease on `entry`.
fn lease(entry: &str) -> Cmd {
    cmd("PEXPIRE")
        .arg(entry)
        .arg(CLAIM_LEASE.as_millis() as u64)
        .owned()
}

/// Step 1's claim, decided on the entry's holder: a free entry, or one
/// naming the object already, is made to name it with the lease (claimed
/// again all the same: a delete of the object racing this write releases
/// only entries no write is claiming, and the confirmation puts back one
/// released before it). One naming another object is refused while that
/// object claims it (the entry has a lease: its object is being written,
/// so its field cannot show the value yet) or holds it (its field, in
/// another slot, read outside the unit: the refusal holds as of that
/// read). One naming another object that does not hold the value is left
/// for [`claim`] to take over (`take_over`: that object).
///
/// Its first attempt guesses the holder (free, or what this `Db` saw): a
/// free value's claim is one round trip.
struct ClaimEntry<'a> {
    db: &'a Db,
    table: &'static str,
    entry: &'a str,
    key: &'a str,
    field: &'static str,
    value: &'a str,
    take_over: Mutex<Option<String>>,
}

impl Decide for ClaimEntry<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<redis::Cmd>> {
        let entry = self.entry;
        *self.take_over.lock() = None;
        let holder = holder(reader, entry).await?;
        if holder.as_deref() == Some(self.key.as_bytes()) {
            // One more copy of the holder: a copy per write of the object
            // claiming the value (and one for a value it held already), so
            // that a write that fails takes back only its own ([`Release`]).
            return Ok(vec![
                cmd("RPUSH").arg(entry).arg(self.key).owned(),
                lease(entry),
            ]);
        }
        if let Some(holder) = holder {
            let mut pttl = cmd("PTTL");
            pttl.arg(entry);
            let ttl = reader.read(&[entry], vec![pttl], false).await?;
            let pending = matches!(ttl.first(), Some(Value::Int(ms)) if *ms >= 0);
            let holder = String::from_utf8_lossy(&holder).into_owned();
            let holds = pending || {
                let held: Value = reader
                    .read_apart(self.db, cmd("HGET").arg(&holder).arg(self.field))
                    .await?;
                is_text(&held, self.value)
            };
            if holds {
                return Err(unique(self.table, self.field, self.value, &holder));
            }
            *self.take_over.lock() = Some(holder);
            return Ok(Vec::new());
        }
        let [del, push] = claim_commands(entry, self.key);
        Ok(vec![del, push, lease(entry)])
    }
}

/// Makes the unique entry `entry` name `key` for good, unless another
/// object holds or is claiming `value` ([`Error::Unique`]): a claim and its
/// confirmation, for an object that already holds the value (a reindex).
pub(crate) async fn claim_held<M: Model>(
    db: &Db,
    entry: &str,
    key: &str,
    field: &'static str,
    value: &str,
) -> Result<()> {
    claim::<M>(db, entry, key, field, value).await?;
    confirm(db, entry, key).await
}

/// Step 3: makes a pending claim of `key` permanent (see [`Confirm`]):
/// one round trip, the holder guessed from the claim.
async fn confirm(db: &Db, entry: &str, key: &str) -> Result<()> {
    checked::run::<()>(db, entry, &[], &[], &Confirm { entry, key }).await
}

/// Reads who the unique entry names (`None`: the entry is free).
async fn holder<R: Reader>(reader: &R, entry: &str) -> Result<Option<Vec<u8>>> {
    let replies = reader
        .read(&[entry], vec![holder_command(entry)], false)
        .await?;
    Ok(match replies.into_iter().next() {
        Some(Value::BulkString(holder)) => Some(holder),
        _ => None,
    })
}

/// Step 3's confirmation, decided on the entry's holder: the entry naming
/// the object is made permanent (`PERSIST`), and the copies of its holder
/// that other writes of the object claiming the value added go (they need
/// no claim of their own once the value is the object's); a missing one
/// is made again, one naming another object is left to it.
struct Confirm<'a> {
    entry: &'a str,
    key: &'a str,
}

impl Decide for Confirm<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<redis::Cmd>> {
        Ok(match holder(reader, self.entry).await? {
            Some(holder) if holder == self.key.as_bytes() => vec![
                cmd("PERSIST").arg(self.entry).owned(),
                cmd("LTRIM").arg(self.entry).arg(0).arg(0).owned(),
            ],
            Some(_) => Vec::new(),
            None => claim_commands(self.entry, self.key).to_vec(),
        })
    }
}

/// Removes the unique entry `entry` if it names `key`: a value the write
/// gave up (step 3), or a failed write's claim (`pending`: the entry's
/// lease is the caller's own). Left alone if another write is claiming it
/// (a lease, not the caller's); made permanent instead if the object's
/// `field` holds `value` (a write of the object that raced this one, or a
/// failed write's claim of a value the object held already).
///
/// An entry naming the object for good goes by a fenced decision
/// ([`unless_held`]); a failed write's pending claim by [`Release`].
async fn release(
    db: &Db,
    entry: &str,
    key: &str,
    field: &str,
    value: &str,
    pending: bool,
) -> Result<()> {
    let read = cmd("HGET").arg(key).arg(field).owned();
    let holds = |reply: Result<Value>| still_holds(reply, value);
    let del = [cmd("DEL").arg(entry).owned()];
    // A failed write's claim is still pending as a rule; a value given up
    // is the object's for good.
    let mut fence_first = !pending;
    for _ in 0..MAX_ATTEMPTS {
        if fence_first {
            match unless_held(db, entry, key, &read, &holds, &del).await? {
                Fenced::Released | Fenced::Held => return Ok(()),
                // Leased (another write of the object claims the value),
                // or not the object's: left alone.
                Fenced::Moved if !pending => return Ok(()),
                Fenced::Moved => {}
            }
        }
        fence_first = true;
        let release = Release {
            db,
            entry,
            key,
            field,
            value,
            freed: AtomicBool::new(false),
            permanent: AtomicBool::new(false),
        };
        checked::run::<()>(db, entry, &[], &[], &release).await?;
        if release.freed.into_inner() {
            // The next claim of the value through this `Db` guesses the
            // entry free, rather than naming this object still.
            db.recall().saw(&holder_command(entry), &Value::Nil);
        }
        if !release.permanent.into_inner() {
            return Ok(());
        }
    }
    Err(Error::Conflict {
        attempts: MAX_ATTEMPTS,
        key: Some(plain_key(entry)),
    })
}

/// A failed write's release of its pending claim, as a checked write
/// decided on the entry's state; the object's field is read apart (it is
/// in another slot), as what tells whether the value is the object's. An
/// entry naming the object for good is left to the fenced decision
/// (`permanent`).
struct Release<'a> {
    db: &'a Db,
    entry: &'a str,
    key: &'a str,
    field: &'a str,
    value: &'a str,
    freed: AtomicBool,
    permanent: AtomicBool,
}

impl Decide for Release<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<redis::Cmd>> {
        self.freed.store(false, Ordering::Relaxed);
        self.permanent.store(false, Ordering::Relaxed);
        let (named, leased) = entry_state(reader, self.entry).await?;
        if named.as_deref() != Some(self.key) {
            return Ok(Vec::new());
        }
        if !leased {
            self.permanent.store(true, Ordering::Relaxed);
            return Ok(Vec::new());
        }
        let mut hget = cmd("HGET");
        hget.arg(self.key).arg(self.field);
        if still_holds(reader.read_apart(self.db, &hget).await, self.value)? {
            // The value is the object's: the entry names it for good, one
            // copy (a write of it still in flight confirms it as it is).
            return Ok(vec![
                cmd("PERSIST").arg(self.entry).owned(),
                cmd("LTRIM").arg(self.entry).arg(0).arg(0).owned(),
            ]);
        }
        // A copy of the holder per write of the object claiming the
        // value: with others left, one of them is still in flight, and
        // this write takes back its own copy alone.
        let llen = cmd("LLEN").arg(self.entry).owned();
        let len = reader.read(&[self.entry], vec![llen], false).await?;
        if matches!(len.first(), Some(Value::Int(n)) if *n > 1) {
            return Ok(vec![cmd("RPOP").arg(self.entry).owned()]);
        }
        self.freed.store(true, Ordering::Relaxed);
        Ok(vec![cmd("DEL").arg(self.entry).owned()])
    }

    fn first_guess(&self) -> Guess {
        Guess::Nothing
    }
}

/// Releases the claims of a write that failed, as well as it can: the
/// write's own error is what the caller reports, and a claim left behind
/// lapses with its lease.
pub(crate) async fn release_all(db: &Db, claimed: &[Claim], key: &str) {
    for claim in claimed {
        let _ = release(db, &claim.entry, key, claim.field, &claim.value, true).await;
    }
}
