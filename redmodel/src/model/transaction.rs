//! Typed optimistic transactions: [`Db::transaction`] and its
//! [`Transaction`].

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use redis::{Cmd, Pipeline, Value};

use super::codec::{Codec, IntoValue};
use super::expiry;
use super::field::{Assign, Field};
use super::index::IndexSpec;
use super::object::{ObjectRef, COUNT_FIELD};
use super::read::Read;
use super::reply::{redis_type, reply_at};
use super::write::{self, Changes, IndexPlan, Texts};
use super::{Model, Storage};
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::optimistic::{OptimisticConnection, RawTransaction, MAX_ATTEMPTS};
use crate::layout::plain_key;
use crate::sync_hook::SyncEvent;
use crate::{Db, Error, Result};

impl Db {
    /// Runs `step` as an optimistic transaction over model objects: see
    /// [`Transaction`]. Retried (up to 32
    /// attempts, then [`Error::Conflict`]) while another client changes
    /// what the step read; the value of the attempt that committed is
    /// returned. An error returned by the step ends it at once, with
    /// nothing written.
    ///
    /// `step` may run several times: keep side effects out of it. For raw
    /// commands, [`raw_transaction`](Db::raw_transaction).
    pub async fn transaction<T, F, Fut>(&self, step: F) -> Result<T>
    where
        F: FnMut(Transaction) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.transaction_with_attempts(MAX_ATTEMPTS, step).await
    }

    /// [`transaction`](Db::transaction) with at most `max_attempts`
    /// attempts (at least one) before [`Error::Conflict`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// # #[derive(redmodel::Admin)]
    /// # struct Counter { #[redmodel(pk)] id: u32, n: i64 }
    /// use redmodel::prelude::*;
    /// let db = Db::memory();
    /// let n = db
    ///     .transaction_with_attempts(100, |tx| async move {
    ///         let n = tx.get(&Counter::at(1), Counter::N).await?.unwrap_or(0) + 1;
    ///         tx.insert(&Counter::at(1), &Counter { id: 1, n });
    ///         Ok(n)
    ///     })
    ///     .await?;
    /// assert_eq!(n, 1);
    /// # Ok(()) }
    /// ```
    pub async fn transaction_with_attempts<T, F, Fut>(
        &self,
        max_attempts: u32,
        mut step: F,
    ) -> Result<T>
    where
        F: FnMut(Transaction) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut conn = OptimisticConnection::from(self.exclusive().await?);
        let no_keys: &[&str] = &[];
        let (value, committed) = conn
            .run(no_keys, max_attempts, None, |raw| {
                let pending = Arc::new(Mutex::new(Pending::default()));
                let decided = step(Transaction {
                    raw: raw.handle(),
                    db: self.clone(),
                    pending: Arc::clone(&pending),
                });
                async move {
                    let value = decided.await?;
                    let pending = std::mem::take(&mut *lock(&pending));
                    Ok(pending.commit(&raw, self).await?.map(|c| (value, c)))
                }
            })
            .await?;
        drop(conn);
        committed.finish(self).await?;
        Ok(value)
    }
}

/// One attempt of a typed optimistic transaction, handed to the step of
/// [`Db::transaction`]: reads through model handles (each WATCHes what it
/// reads), writes queued through the model and committed together when
/// the step returns. It works only during its step; afterwards its reads
/// fail with [`Error::Misuse`] and its writes are not committed.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redmodel::Error> {
/// use redmodel::prelude::*;
///
/// #[derive(Admin, Debug)]
/// struct Player {
///     #[redmodel(pk)]
///     id: u32,
///     #[redmodel(sorted)]
///     points: i64,
/// }
///
/// let db = Db::memory();
/// Player { id: 1, points: 100 }.insert(&db).await?;
/// Player { id: 2, points: 0 }.insert(&db).await?;
/// let moved = db
///     .transaction(|tx| async move {
///         let (Some(a), Some(b)) = (tx.load(&Player::at(1)).await?, tx.load(&Player::at(2)).await?)
///         else {
///             return Ok(false);
///         };
///         if a.points < 30 {
///             return Ok(false); // commits nothing
///         }
///         tx.set(&Player::at(1), Player::POINTS, a.points - 30);
///         tx.set(&Player::at(2), Player::POINTS, b.points + 30);
///         Ok(true)
///     })
///     .await?;
/// assert!(moved);
/// // The leaderboard moved with the fields.
/// let top = Player::POINTS_SORTED.top(&db, 1).await?;
/// assert_eq!(top[0].points, 70);
/// # Ok(()) }
/// ```
///
/// # How a step commits
/// Each read WATCHes the key it reads, on a connection of the
/// transaction's own, before reading it. Writes are queued, not sent:
/// they are checked and encoded at once (a value that cannot be encoded
/// fails the commit before anything is sent), and several writes of one
/// object merge into one. When the step returns `Ok`, the queued writes run
/// as one `MULTI` / `EXEC` with everything the model keeps beside the
/// object: the `_count` of a full write, the index entries (the unique
/// and tag values read under the same WATCH), and the existence checks
/// (a field write needs its object, a sub-object its admin, a reference
/// field the object it names: [`Error::NotFound`] otherwise, and nothing
/// written). If a watched key changed meanwhile, `EXEC` writes nothing and
/// the step runs again on fresh values.
///
/// Reads see the database as the transaction's `WATCH` found it, not the
/// writes the step has queued (as in Redis, where a `MULTI` queues its
/// commands until `EXEC`).
///
/// # On a Redis Cluster
/// `WATCH` and `EXEC` run on one node: every object a transaction reads or
/// writes must be in one slot, which in the cluster layout means one admin
/// and its sub-objects (`{bank:1}`, `{bank:1}:account:a`). A key in another
/// slot is refused with [`Error::CrossSlot`] before anything is sent. The
/// index entries, in other slots, follow the `EXEC` as the ordered steps of
/// every cluster-layout write (unique values claimed before it, the other
/// entries brought in step after it).
///
pub struct Transaction {
    raw: RawTransaction,
    db: Db,
    pending: Arc<Mutex<Pending>>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("attempt", &self.raw.attempt())
            .finish_non_exhaustive()
    }
}

impl Transaction {
    /// The whole object, as [`ObjectRef::load`] reads it (WATCH and
    /// HGETALL in one round trip). `None` if it does not exist.
    pub async fn load<M: Model>(&self, object: &ObjectRef<M>) -> Result<Option<M>> {
        let replies = self
            .watch_read(object, |pipe| object.add_read(&self.db, pipe))
            .await?;
        let raw = match object.take_read(&mut replies.into_iter())? {
            Read::Known(raw) => raw,
            // Still under the WATCH: a change between the two reads fails
            // the EXEC.
            Read::Unsure => object.read_whole(&self.db).await?,
        };
        lock(&self.pending)
            .known
            .push((object.key_in(&self.db).into_owned(), raw.is_some()));
        raw.map(|values| object.decode(values)).transpose()
    }

    /// One field, as [`ObjectRef::get`] reads it (WATCH and HGET in one
    /// round trip). `None` if the field or the object is absent.
    pub async fn get<M: Model, T, C: Codec<T>>(
        &self,
        object: &ObjectRef<M>,
        field: Field<M, T, C>,
    ) -> Result<Option<T>> {
        let key = object.key_in(&self.db).into_owned();
        let reply = self
            .watch_read(object, |pipe| {
                pipe.command("HGET").arg(&key).arg(field.name());
            })
            .await?;
        let raw: Option<Vec<u8>> = reply_at(object.key(), "hash", reply.into_iter().next())?;
        field.decode_present(object.key(), raw)
    }

    /// Whether the object exists (WATCH and EXISTS in one round trip).
    pub async fn exists<M: Model>(&self, object: &ObjectRef<M>) -> Result<bool> {
        let key = object.key_in(&self.db).into_owned();
        let reply = self
            .watch_read(object, |pipe| {
                pipe.command("EXISTS").arg(&key);
            })
            .await?;
        let exists: bool = reply_at(
            object.key(),
            redis_type(M::STORAGE),
            reply.into_iter().next(),
        )?;
        lock(&self.pending).known.push((key, exists));
        Ok(exists)
    }

    /// Queues a full write of `value` at `object`, as [`ObjectRef::insert`]
    /// makes it (an upsert; a sub-object needs its admin; the write is
    /// counted and may call the sync hooks once committed).
    pub fn insert<M: Model>(&self, object: &ObjectRef<M>, value: &M) {
        let queued = self.full_write(object, value);
        self.queue(object, queued);
    }

    /// Queues a write of one field, as [`ObjectRef::set`] makes it (the
    /// object must exist; `None` removes an `Option` field).
    pub fn set<M: Model, T, C: Codec<T>>(
        &self,
        object: &ObjectRef<M>,
        field: Field<M, T, C>,
        value: impl IntoValue<T>,
    ) {
        let queued = field
            .encode(object.key(), &value.into_value())
            .map(|text| Op::Fields(vec![(field.name(), text)]));
        self.queue(object, queued);
    }

    /// Queues a write of several fields, as [`ObjectRef::set_many`] makes
    /// it: `tx.set_many(&obj, [Student::MATH.to(95), Student::ENGLISH.to(90)])`.
    pub fn set_many<M: Model>(
        &self,
        object: &ObjectRef<M>,
        fields: impl IntoIterator<Item = Assign<M>>,
    ) {
        let queued = fields
            .into_iter()
            .map(|assign| match assign.value {
                Ok(text) => Ok((assign.name, text)),
                Err(reason) => Err(Error::Encode {
                    key: object.key().to_string(),
                    field: assign.name.to_string(),
                    reason,
                }),
            })
            .collect::<Result<Vec<_>>>()
            .map(Op::Fields);
        self.queue(object, queued);
    }

    /// Queues the deletion of the object and of its index entries, as
    /// [`ObjectRef::delete`] makes it (not its sub-objects or relations).
    pub fn delete<M: Model>(&self, object: &ObjectRef<M>) {
        self.queue(object, Ok(Op::Delete));
    }

    /// Which attempt this is, from 1.
    pub fn attempt(&self) -> u32 {
        self.raw.attempt()
    }

    /// WATCHes `object`'s key and runs the read `add` adds, in one round
    /// trip: the read's replies.
    async fn watch_read<M: Model>(
        &self,
        object: &ObjectRef<M>,
        add: impl FnOnce(&mut Pipeline),
    ) -> Result<Vec<Value>> {
        let key = object.key_in(&self.db);
        self.check_slot(&key)?;
        self.raw.route_by(&key).await;
        self.raw
            .watch_then(key.as_ref(), |pipe| {
                pipe.ignore_errors();
                add(pipe);
            })
            .await
    }

    /// On a Redis Cluster, refuses a key outside the transaction's slot
    /// (the slot of the first key it read or wrote).
    fn check_slot(&self, key: &str) -> Result<()> {
        if self.db.one_slot() {
            return Ok(());
        }
        let mut pending = lock(&self.pending);
        match &pending.first_key {
            Some(first) if !self.db.shares_slot(first, key) => Err(Error::CrossSlot {
                keys: vec![first.clone(), key.to_string()],
            }),
            Some(_) => Ok(()),
            None => {
                pending.first_key = Some(key.to_string());
                Ok(())
            }
        }
    }

    /// The queued form of a full write of `value` at `object`.
    fn full_write<M: Model>(&self, object: &ObjectRef<M>, value: &M) -> Result<Op> {
        if M::STORAGE == Storage::Single {
            let text = value
                .encode_fields(object.key())?
                .into_iter()
                .next()
                .flatten();
            return Ok(Op::Single(text));
        }
        let encoded = object.encoded(value)?;
        let mut fields: Vec<(&'static str, Option<Vec<u8>>)> = encoded
            .set
            .into_iter()
            .map(|(name, text)| (name, Some(text)))
            .collect();
        fields.extend(encoded.removed.into_iter().map(|name| (name, None)));
        Ok(Op::Insert(fields))
    }

    /// Merges one queued write into the object's pending write. A write
    /// that cannot be made is kept as the transaction's error, reported
    /// by the commit before anything is sent.
    fn queue<M: Model>(&self, object: &ObjectRef<M>, op: Result<Op>) {
        let key = object.key_in(&self.db).into_owned();
        let slot_checked = self.check_slot(&key);
        let mut pending = lock(&self.pending);
        if pending.error.is_some() {
            return;
        }
        let op = match slot_checked.and(op) {
            Ok(op) => op,
            Err(err) => {
                pending.error = Some(err);
                return;
            }
        };
        let index = match pending.writes.iter().position(|w| w.key == key) {
            Some(i) => i,
            None => {
                pending
                    .writes
                    .push(ObjectWrite::new::<M>(key.clone(), object.key()));
                pending.writes.len() - 1
            }
        };
        // The objects the reference fields it sets name, and the TTLs the
        // write gives (the model's on a full write, the declared ones of
        // the fields it sets), after its own commands.
        let needs = match &op {
            Op::Insert(fields) | Op::Fields(fields) => {
                let set: Vec<(&str, Vec<u8>)> = fields
                    .iter()
                    .filter_map(|(name, text)| Some((*name, text.clone()?)))
                    .collect();
                let ttl = if matches!(op, Op::Insert(_)) {
                    M::TTL
                } else {
                    None
                };
                expiry::ttl_cmds::<M>(&self.db, &key, ttl, &write::names(&set))
                    .map(|ttls| (write::reference_guards::<M>(&self.db, &set), ttls))
            }
            Op::Single(_) | Op::Delete => Ok((Vec::new(), Vec::new())),
        };
        let (guards, ttls) = match needs {
            Ok(done) => done,
            Err(err) => {
                pending.error = Some(err);
                return;
            }
        };
        let owner = match &op {
            Op::Insert(_) | Op::Single(_) => object.owner_key_in(&self.db),
            Op::Fields(_) | Op::Delete => None,
        };
        let write = &mut pending.writes[index];
        write.guards.extend(guards.into_iter().chain(owner));
        if let Err(err) = write.apply(op, ttls) {
            pending.error = Some(err);
        }
    }
}

/// The write a step queued for one object.
enum Op {
    /// A full write: every declared field (`None`: removed), counted.
    Insert(Vec<(&'static str, Option<Vec<u8>>)>),
    /// A write of these fields (`None`: removed); the object must exist.
    Fields(Vec<(&'static str, Option<Vec<u8>>)>),
    /// A full write of a single-value model: SET, or DEL for `None`.
    Single(Option<Vec<u8>>),
    Delete,
}

/// What the transaction's own writes say of an object's existence.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Existence {
    /// Only field writes so far (which need it to exist already).
    AsBefore,
    Written,
    Deleted,
}

/// Every queued write of one object, merged: its commands in order, and
/// the fields they leave, for the index upkeep.
struct ObjectWrite {
    /// As the db stores it.
    key: String,
    /// In plain form, for errors.
    plain: String,
    upkeep: Box<dyn Upkeep>,
    /// The model's TTL, given by a full write of a single value (`PX`).
    ttl: Option<std::time::Duration>,
    /// The commands, each with whether its reply is kept (a `_count`).
    cmds: Vec<(Cmd, bool)>,
    /// The fields written since the last delete, with their last text.
    fields: Vec<(&'static str, Option<Vec<u8>>)>,
    existence: Existence,
    /// Whether the object must exist before the transaction (a field
    /// write came before any full write).
    must_exist: bool,
    /// Other keys the writes need to exist when they commit: a
    /// sub-object's admin, the objects reference fields name.
    guards: Vec<String>,
}

impl ObjectWrite {
    fn new<M: Model>(key: String, plain: &str) -> Self {
        ObjectWrite {
            key,
            plain: plain.to_string(),
            upkeep: Box::new(UpkeepOf::<M>(PhantomData)),
            ttl: M::TTL,
            cmds: Vec::new(),
            fields: Vec::new(),
            existence: Existence::AsBefore,
            must_exist: false,
            guards: Vec::new(),
        }
    }

    /// Adds `op`'s commands, then `ttls`, the commands giving the TTLs
    /// it declares.
    fn apply(&mut self, op: Op, ttls: Vec<Cmd>) -> Result<()> {
        match op {
            Op::Fields(fields) => {
                match self.existence {
                    Existence::Deleted => {
                        return Err(Error::NotFound {
                            key: self.plain.clone(),
                        })
                    }
                    Existence::AsBefore => self.must_exist = true,
                    Existence::Written => {}
                }
                self.add_fields(fields, false);
            }
            Op::Insert(fields) => {
                self.existence = Existence::Written;
                self.add_fields(fields, true);
            }
            Op::Single(text) => {
                let cmd = match text {
                    Some(text) => {
                        self.existence = Existence::Written;
                        write::single_set(&self.key, text, self.ttl)?
                    }
                    None => {
                        self.existence = Existence::Deleted;
                        cmd("DEL").arg(&self.key).clone()
                    }
                };
                self.cmds.push((cmd, false));
            }
            Op::Delete => {
                self.existence = Existence::Deleted;
                self.fields.clear();
                self.cmds.push((cmd("DEL").arg(&self.key).clone(), false));
            }
        }
        self.cmds.extend(ttls.into_iter().map(|ttl| (ttl, false)));
        Ok(())
    }

    /// The commands of a field write (or a full one, `counted`), and the
    /// fields it leaves.
    fn add_fields(&mut self, fields: Vec<(&'static str, Option<Vec<u8>>)>, counted: bool) {
        let removed: Vec<&str> = fields
            .iter()
            .filter(|(_, text)| text.is_none())
            .map(|(name, _)| *name)
            .collect();
        let set: Vec<(&str, &[u8])> = fields
            .iter()
            .filter_map(|(name, text)| Some((*name, text.as_deref()?)))
            .collect();
        if !removed.is_empty() {
            let cmd = cmd("HDEL").arg(&self.key).arg(&removed).clone();
            self.cmds.push((cmd, false));
        }
        if !set.is_empty() {
            let cmd = cmd("HSET").arg(&self.key).arg(&set).clone();
            self.cmds.push((cmd, false));
        }
        if counted {
            let cmd = cmd("HINCRBY")
                .arg(&self.key)
                .arg(COUNT_FIELD)
                .arg(1)
                .clone();
            self.cmds.push((cmd, true));
        }
        for (name, text) in fields {
            self.fields.retain(|(n, _)| *n != name);
            self.fields.push((name, text));
        }
    }

    /// What the writes do to the stored fields, for the index upkeep.
    fn changes(&self) -> Changes<'_> {
        if self.existence == Existence::Deleted {
            return Changes::Delete;
        }
        Changes::Fields(
            self.fields
                .iter()
                .map(|(name, text)| (*name, text.as_deref()))
                .collect(),
        )
    }

    fn exists_after(&self) -> bool {
        self.existence != Existence::Deleted
    }
}

/// The queued writes of one attempt, and what its reads learned.
#[derive(Default)]
struct Pending {
    writes: Vec<ObjectWrite>,
    /// Keys (as stored) whose existence a read saw under WATCH.
    known: Vec<(String, bool)>,
    /// In the cluster layout, the first key read or written: every other
    /// must share its slot.
    first_key: Option<String>,
    /// The first write that could not be queued.
    error: Option<Error>,
}

/// Locks the pending writes. A panic in another holder cannot leave them
/// half-merged in a way that matters (the step that panicked commits
/// nothing), so a poisoned lock is simply taken over.
fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One write's part of the commit, in the cluster layout: the indexes it
/// touches, and the unique entries it claimed before the EXEC.
struct Stepped {
    specs: Vec<&'static IndexSpec>,
    claimed: Vec<write::Claim>,
}

impl Pending {
    /// Commits the queued writes on `raw`'s connection: `None` if a
    /// watched key changed (nothing written), else what is left to do once
    /// the connection is given back.
    async fn commit(self, raw: &RawTransaction, db: &Db) -> Result<Option<Committed>> {
        if let Some(err) = self.error {
            return Err(err);
        }
        if let Some(first) = &self.first_key {
            raw.route_by(first).await;
        }
        // Everything that can be refused without a round trip, first.
        let plans = self
            .writes
            .iter()
            .map(|w| w.upkeep.plan(&w.key, &w.changes()))
            .collect::<Result<Vec<_>>>()?;
        self.check_unique_claims(&plans)?;
        self.check_guards(raw, db).await?;
        let mut txn = redis::pipe();
        txn.atomic();
        let mut stepped: Vec<Stepped> = Vec::new();
        for (write, (specs, claims)) in self.writes.iter().zip(plans) {
            let changes = write.changes();
            if !db.one_slot() {
                let claimed = if claims.is_empty() {
                    Vec::new()
                } else {
                    match write.upkeep.claim(db, &write.key, &claims).await {
                        Ok(claimed) => claimed,
                        Err(err) => {
                            self.release(db, &stepped).await;
                            return Err(err);
                        }
                    }
                };
                let fields: Vec<&str> = specs.iter().map(|s| s.field).collect();
                if !specs.is_empty() {
                    txn.command("HMGET").arg(&write.key).arg(&fields);
                }
                add_cmds(&mut txn, &write.cmds);
                if !specs.is_empty() {
                    txn.command("HMGET").arg(&write.key).arg(&fields);
                }
                stepped.push(Stepped { specs, claimed });
            } else {
                add_cmds(&mut txn, &write.cmds);
                write
                    .upkeep
                    .add_entries(raw, db, &write.key, &changes, &mut txn)
                    .await?;
            }
        }
        let replies = match raw.exec::<Vec<Value>>(&txn).await {
            Ok(Some(replies)) => replies,
            Ok(None) => {
                self.release(db, &stepped).await;
                return Ok(None);
            }
            Err(err) => {
                self.release(db, &stepped).await;
                return Err(err);
            }
        };
        let mut replies = replies.into_iter();
        let mut done = Vec::with_capacity(self.writes.len());
        let mut stepped = stepped.into_iter();
        for write in self.writes {
            let step = stepped.next().filter(|s| !s.specs.is_empty());
            let old: Option<Texts> = step.as_ref().map(|_| texts(replies.next())).transpose()?;
            let mut count = None;
            for _ in write.cmds.iter().filter(|(_, keep)| *keep) {
                let reply = replies.next().unwrap_or(Value::Nil);
                count =
                    Some(redis::from_redis_value::<u64>(reply).map_err(redis::RedisError::from)?);
            }
            let settle = match (step, old) {
                (Some(step), Some(old)) => Some((step, old, texts(replies.next())?)),
                _ => None,
            };
            let set = write
                .fields
                .into_iter()
                .filter_map(|(name, text)| Some((name, text?)))
                .collect();
            done.push(Done {
                key: write.key,
                plain: write.plain,
                upkeep: write.upkeep,
                settle,
                count,
                set,
            });
        }
        Ok(Some(Committed(done)))
    }

    /// Refuses two writes of the transaction that claim one unique value:
    /// each would see it free, and the second would take it from the first.
    fn check_unique_claims(&self, plans: &[IndexPlan]) -> Result<()> {
        let mut seen: Vec<(&'static str, &'static str, &str, &str)> = Vec::new();
        for (write, (_, claims)) in self.writes.iter().zip(plans) {
            let table = write.upkeep.table();
            for (field, value) in claims {
                if let Some((.., holder)) = seen
                    .iter()
                    .find(|(t, f, v, _)| *t == table && f == field && v == value)
                {
                    return Err(Error::Unique {
                        model: table,
                        field,
                        value: value.clone(),
                        holder: holder.to_string(),
                    });
                }
                seen.push((table, field, value, &write.plain));
            }
        }
        Ok(())
    }

    /// Checks that what the writes need exists: each object a field write
    /// names (before the transaction), and each admin or referenced object
    /// (after the transaction's own writes). Keys a read already saw
    /// under WATCH, or that the transaction writes, are settled without a
    /// round trip; the others are WATCHed and checked in one (in the
    /// cluster layout, a key in another slot is checked without WATCH,
    /// just before the EXEC, as every cluster-layout write checks it).
    async fn check_guards(&self, raw: &RawTransaction, db: &Db) -> Result<()> {
        let mut unknown: Vec<String> = Vec::new();
        let mut settle = |key: &str, plain: &str, needed_before: bool| -> Result<()> {
            let written = self.writes.iter().find(|w| w.key == key);
            let exists = match written {
                Some(w) if !needed_before => Some(w.exists_after()),
                _ => self
                    .known
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key)
                    .map(|(_, e)| *e),
            };
            match exists {
                Some(true) => Ok(()),
                Some(false) => Err(Error::NotFound {
                    key: plain.to_string(),
                }),
                None => {
                    unknown.push(key.to_string());
                    Ok(())
                }
            }
        };
        for write in &self.writes {
            if write.must_exist {
                settle(&write.key, &write.plain, true)?;
            }
            for guard in &write.guards {
                settle(guard, &plain_key(guard), false)?;
            }
        }
        unknown.sort_unstable();
        unknown.dedup();
        if unknown.is_empty() {
            return Ok(());
        }
        let here = self.first_key.as_deref();
        let (near, far): (Vec<String>, Vec<String>) = unknown
            .into_iter()
            .partition(|k| here.is_none_or(|h| db.shares_slot(h, k)));
        let mut exists: Vec<(String, bool)> = Vec::new();
        if !near.is_empty() {
            let found: Vec<bool> = raw
                .watch_then(&near, |read| {
                    for key in &near {
                        read.command("EXISTS").arg(key);
                    }
                })
                .await?;
            exists.extend(near.into_iter().zip(found));
        }
        for key in far {
            let found = db.query(cmd("EXISTS").arg(&key)).await?;
            exists.push((key, found));
        }
        match exists.into_iter().find(|(_, e)| !e) {
            Some((key, _)) => Err(Error::NotFound {
                key: plain_key(&key),
            }),
            None => Ok(()),
        }
    }

    /// Releases the unique claims of a commit that did not happen.
    async fn release(&self, db: &Db, stepped: &[Stepped]) {
        for (write, step) in self.writes.iter().zip(stepped) {
            write::release_all(db, &step.claimed, &write.key).await;
        }
    }
}

/// A committed transaction's writes, with what follows the EXEC: the
/// cluster layout's index steps (which need no WATCH, so they run after
/// the transaction's connection is given back) and the sync hooks.
struct Committed(Vec<Done>);

/// One committed object write.
struct Done {
    key: String,
    plain: String,
    upkeep: Box<dyn Upkeep>,
    /// The cluster layout: the indexes to bring in step, from the fields'
    /// texts before and after the EXEC.
    settle: Option<(Stepped, Texts, Texts)>,
    /// The `_count` a full write left.
    count: Option<u64>,
    /// The fields written with a value (for the cluster layout's second
    /// check of reference fields).
    set: Vec<(&'static str, Vec<u8>)>,
}

impl Committed {
    async fn finish(self, db: &Db) -> Result<()> {
        for done in self.0 {
            if let Some((step, old, new)) = done.settle {
                done.upkeep
                    .settle(db, &done.key, &step.specs, &step.claimed, old, new)
                    .await?;
            }
            // A reference's target in another slot was checked before the
            // EXEC, not with it (see `ObjectRef::set`).
            done.upkeep.recheck(db, &done.key, &done.set).await?;
            let every = done.upkeep.sync_every().max(1);
            if let Some(count) = done.count.filter(|c| *c > 0 && c % every == 0) {
                db.run_sync_hooks(&SyncEvent {
                    table: done.upkeep.table(),
                    key: done.plain,
                    count,
                });
            }
        }
        Ok(())
    }
}

/// Adds an object's commands to the EXEC (their replies ignored unless
/// kept).
fn add_cmds(txn: &mut Pipeline, cmds: &[(Cmd, bool)]) {
    for (cmd, keep) in cmds {
        txn.add_command(cmd.clone());
        if !keep {
            txn.ignore();
        }
    }
}

/// The texts of an HMGET reply.
fn texts(reply: Option<Value>) -> Result<Texts> {
    Ok(redis::from_redis_value(reply.unwrap_or(Value::Nil)).map_err(redis::RedisError::from)?)
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// The model-specific part of a queued write, behind one object-safe
/// trait so that one transaction holds writes of many models.
trait Upkeep: Send + Sync {
    fn table(&self) -> &'static str;
    fn sync_every(&self) -> u64;
    /// The indexes a write of `changes` touches, and the unique values it
    /// claims.
    fn plan(&self, key: &str, changes: &Changes<'_>) -> Result<IndexPlan>;
    /// The plain layout: the index commands, in the same EXEC.
    fn add_entries<'a>(
        &'a self,
        tx: &'a RawTransaction,
        db: &'a Db,
        key: &'a str,
        changes: &'a Changes<'a>,
        txn: &'a mut Pipeline,
    ) -> BoxFuture<'a, ()>;
    /// The cluster layout: claims the unique values before the EXEC.
    fn claim<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        claims: &'a [(&'static str, String)],
    ) -> BoxFuture<'a, Vec<write::Claim>>;
    /// The cluster layout: the reference fields among `set` checked again
    /// after the EXEC.
    fn recheck<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        set: &'a [(&'static str, Vec<u8>)],
    ) -> BoxFuture<'a, ()>;
    /// The cluster layout: the index steps after the EXEC.
    fn settle<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        specs: &'a [&'static IndexSpec],
        claimed: &'a [write::Claim],
        old: Texts,
        new: Texts,
    ) -> BoxFuture<'a, ()>;
}

struct UpkeepOf<M>(PhantomData<fn() -> M>);

impl<M: Model> Upkeep for UpkeepOf<M> {
    fn table(&self) -> &'static str {
        M::TABLE
    }

    fn sync_every(&self) -> u64 {
        M::SYNC_EVERY
    }

    fn plan(&self, key: &str, changes: &Changes<'_>) -> Result<IndexPlan> {
        write::plan::<M>(key, changes)
    }

    fn add_entries<'a>(
        &'a self,
        tx: &'a RawTransaction,
        db: &'a Db,
        key: &'a str,
        changes: &'a Changes<'a>,
        txn: &'a mut Pipeline,
    ) -> BoxFuture<'a, ()> {
        Box::pin(write::add_entries::<M>(tx, db, key, changes, txn))
    }

    fn claim<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        claims: &'a [(&'static str, String)],
    ) -> BoxFuture<'a, Vec<write::Claim>> {
        Box::pin(write::claim_all::<M, String>(db, key, claims))
    }

    fn recheck<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        set: &'a [(&'static str, Vec<u8>)],
    ) -> BoxFuture<'a, ()> {
        Box::pin(write::recheck_references::<M>(db, key, set))
    }

    fn settle<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        specs: &'a [&'static IndexSpec],
        claimed: &'a [write::Claim],
        old: Texts,
        new: Texts,
    ) -> BoxFuture<'a, ()> {
        Box::pin(write::settle::<M>(db, key, specs, claimed, old, new))
    }
}
