//! Typed optimistic transactions: [`Db::transaction`] and its
//! [`Transaction`].

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use redis::{Pipeline, Value};

use super::codec::{Codec, Incr, IntoValue, Plain, Scalar};
use super::expiry;
use super::field::{Assign, Field};
use super::member::AsMember;
use super::object::ObjectRef;
use super::read::Read;
use super::relation::{InverseOf, Relation, RelationRef};
use super::reply::{redis_type, reply_at};
use super::write;
use super::{Model, Storage};
use crate::command::AddCommand as _;
use crate::db::optimistic::{redirected, OptimisticConnection, RawTransaction, MAX_ATTEMPTS};
use crate::{Db, Error, Result};

mod commit;
mod queued;
mod upkeep;

use queued::{lock, ListWrite, ObjectWrite, Op, Pending};

impl Db {
    /// Runs `step` as an optimistic transaction over model objects: see
    /// [`Transaction`]. Retried (up to 32
    /// attempts, then [`Error::Conflict`]) while another client changes
    /// what the step read; the value of the attempt that committed is
    /// returned.
    ///
    /// The step's error type is the caller's own: any `E` that a
    /// [`redmodel::Error`] converts into (`redmodel::Error` itself,
    /// or an application's error with a `From<redmodel::Error>`). An
    /// `Err(e)` returned by the step aborts the transaction at once, with
    /// nothing written, and `e` comes back unchanged. Where nothing else
    /// names `E`, the step's `Ok::<_, redmodel::Error>(...)` does.
    ///
    /// `step` may run several times: keep side effects out of it. For raw
    /// commands, [`raw_transaction`](Db::raw_transaction).
    pub async fn transaction<T, E, F, Fut>(&self, step: F) -> Result<T, E>
    where
        E: From<Error>,
        F: FnMut(Transaction) -> Fut,
        Fut: Future<Output = Result<T, E>>,
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
    ///         Ok::<_, Error>(n)
    ///     })
    ///     .await?;
    /// assert_eq!(n, 1);
    /// # Ok(()) }
    /// ```
    pub async fn transaction_with_attempts<T, E, F, Fut>(
        &self,
        max_attempts: u32,
        mut step: F,
    ) -> Result<T, E>
    where
        E: From<Error>,
        F: FnMut(Transaction) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut conn = OptimisticConnection::from(self.exclusive().await?);
        let no_keys: &[&str] = &[];
        let outcome = conn
            .run(no_keys, max_attempts, None, |raw| {
                let pending = Arc::new(Mutex::new(Pending::default()));
                let decided = step(Transaction {
                    raw: raw.handle(),
                    db: self.clone(),
                    pending: Arc::clone(&pending),
                });
                async move {
                    let value = match decided.await {
                        Ok(value) => value,
                        // A read of the step met a cluster redirection
                        // (the slot moved): the next attempt reads on the
                        // slot's new master.
                        Err(_) if lock(&pending).redirected => return Ok(None),
                        // The caller's abort: ends the loop, nothing sent.
                        Err(err) => return Ok(Some(Err(err))),
                    };
                    let pending = std::mem::take(&mut *lock(&pending));
                    Ok(pending.commit(&raw, self).await?.map(|c| Ok((value, c))))
                }
            })
            .await?;
        drop(conn);
        let (value, committed) = outcome?;
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
///         Ok::<_, Error>(true)
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
/// field the object it names, a link both of its objects:
/// [`Error::NotFound`] otherwise, and nothing written). If a watched key
/// changed meanwhile, `EXEC` writes nothing and the step runs again on
/// fresh values.
///
/// Reads see the database as the transaction's `WATCH` found it, not the
/// writes the step has queued (as in Redis, where a `MULTI` queues its
/// commands until `EXEC`); [`incr`](Self::incr) alone adds to a value the
/// step queued for its field.
///
/// # The step's error
/// The step returns the caller's own error type (see
/// [`Db::transaction`]): an `Err` aborts with nothing written and comes
/// back unchanged.
///
/// # On a Redis Cluster
/// `WATCH` and `EXEC` run on one node: every object a transaction reads or
/// writes, and every relation list it links, must be in one slot, which in
/// the cluster layout means one admin, its sub-objects and its lists
/// (`{bank:1}`, `{bank:1}:account:a`), or admins whose keys hash to one
/// slot. A key in another
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

    /// Queues an increment of a numeric field by `by` and returns the
    /// field's new value, as [`ObjectRef::incr`] makes it (the object must
    /// exist; an absent field counts from 0).
    ///
    /// The field is read under WATCH (or taken from this transaction's own
    /// queued writes of it, so that two increments add up), and its new
    /// value is queued as [`set`](Self::set) queues one: every index of
    /// the field (sorted, composite, recent, unique) follows it in the
    /// commit, and a concurrent write of the object runs the step again.
    /// A result Redis would refuse (an `i64` overflow, an infinite float)
    /// or that the field's type cannot hold is an [`Error::Encode`], and
    /// nothing is queued; a stored value that is not a number, an
    /// [`Error::Decode`].
    pub async fn incr<M: Model, T: Incr>(
        &self,
        object: &ObjectRef<M>,
        field: Field<M, T, Plain>,
        by: T::By,
    ) -> Result<T::Output> {
        let key = object.key_in(&self.db).into_owned();
        let name = field.name();
        let queued = lock(&self.pending)
            .writes
            .iter()
            .find(|w| w.key == key)
            .and_then(|w| w.queued_text(name));
        let text: Option<Vec<u8>> = match queued {
            Some(text) => text,
            None => {
                let reply = self
                    .watch_read(object, |pipe| {
                        pipe.command("HGET").arg(&key).arg(name);
                    })
                    .await?;
                reply_at(object.key(), "hash", reply.into_iter().next())?
            }
        };
        let current = text
            .map(T::Output::from_owned_text)
            .transpose()
            .map_err(|reason| Error::Decode {
                key: object.key().to_string(),
                field: name.to_string(),
                reason,
            })?;
        let new = T::add(current, &by).map_err(|reason| Error::Encode {
            key: object.key().to_string(),
            field: name.to_string(),
            reason,
        })?;
        self.queue(object, Ok(Op::Fields(vec![(name, Some(new.to_text()))])));
        Ok(new)
    }

    /// Queues a link of `member` to the relation's owner, as
    /// [`RelationRef::link`] makes it: appended to the owner's list unless
    /// it is there (moved to the tail if it is), and the owner to the
    /// member's inverse list if the relation has one. Both objects must
    /// exist when the transaction commits (the transaction's own writes
    /// count): [`Error::NotFound`] otherwise, and nothing written.
    pub fn link<R: Relation>(&self, relation: &RelationRef<R>, member: impl AsMember<R::Member>) {
        let queued = member.member_key().map(|member| {
            let member_key = self.db.stored(&member).into_owned();
            let owner = relation.owner().key_in(&self.db).into_owned();
            let mut lists = vec![ListWrite::link(
                relation.key_in(&self.db).into_owned(),
                member_key.clone(),
            )];
            if let Some(inverse) = R::Inverse::inverse_key(&member) {
                let inverse = self.db.stored(&inverse).into_owned();
                lists.push(ListWrite::link(inverse, owner.clone()));
            }
            (lists, vec![owner, member_key])
        });
        self.queue_lists(queued);
    }

    /// Queues an unlink of `member`, as [`RelationRef::unlink`] makes it:
    /// every occurrence of it leaves the owner's list, and the owner the
    /// member's inverse list.
    pub fn unlink<R: Relation>(&self, relation: &RelationRef<R>, member: impl AsMember<R::Member>) {
        let queued = member.member_key().map(|member| {
            let owner = relation.owner().key_in(&self.db).into_owned();
            let mut lists = vec![ListWrite::unlink(
                relation.key_in(&self.db).into_owned(),
                self.db.stored(&member).into_owned(),
            )];
            if let Some(inverse) = R::Inverse::inverse_key(&member) {
                let inverse = self.db.stored(&inverse).into_owned();
                lists.push(ListWrite::unlink(inverse, owner));
            }
            (lists, Vec::new())
        });
        self.queue_lists(queued);
    }

    /// Queues a time to live for the object, as [`ObjectRef::expire`] sets
    /// it (PEXPIRE), after the transaction's earlier writes of it: an
    /// object the transaction inserts gets it; one it does not write and
    /// that does not exist is left alone.
    pub fn expire<M: Model>(&self, object: &ObjectRef<M>, ttl: Duration) {
        self.queue(object, Ok(Op::Ttl("PEXPIRE", Some(expiry::millis(ttl)))));
    }

    /// Queues the object's expiry at `when`, as [`ObjectRef::expire_at`]
    /// sets it (PEXPIREAT; a time in the past deletes it when the
    /// transaction commits, without its index entries: prefer
    /// [`delete`](Self::delete)).
    pub fn expire_at<M: Model>(&self, object: &ObjectRef<M>, when: SystemTime) {
        let at = expiry::unix_millis(when);
        self.queue(object, Ok(Op::Ttl("PEXPIREAT", Some(at))));
    }

    /// Queues the removal of the object's time to live, as
    /// [`ObjectRef::persist`] makes it (PERSIST).
    pub fn persist<M: Model>(&self, object: &ObjectRef<M>) {
        self.queue(object, Ok(Op::Ttl("PERSIST", None)));
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
        let read = self
            .raw
            .watch_then(key.as_ref(), |pipe| {
                pipe.ignore_errors();
                add(pipe);
            })
            .await;
        if read.as_ref().is_err_and(redirected) {
            lock(&self.pending).redirected = true;
        }
        read
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
        // The objects the reference fields it sets name, the marks it
        // leaves on them, and the TTLs the write gives (the model's on a
        // full write, the declared ones of the fields it sets), after its
        // own commands.
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
                expiry::ttl_cmds::<M>(&self.db, &key, ttl, write::names(&set)).map(|ttls| {
                    (
                        write::reference_guards::<M>(&self.db, &set).collect(),
                        write::reference_marks::<M>(&self.db, &key, &set).collect(),
                        ttls,
                    )
                })
            }
            Op::Single(_) | Op::Delete | Op::Ttl(..) => Ok((Vec::new(), Vec::new(), Vec::new())),
        };
        let (guards, marks, ttls) = match needs {
            Ok(done) => done,
            Err(err) => {
                pending.error = Some(err);
                return;
            }
        };
        let owner = match &op {
            Op::Insert(_) | Op::Single(_) => object.owner_key_in(&self.db),
            Op::Fields(_) | Op::Delete | Op::Ttl(..) => None,
        };
        let write = &mut pending.writes[index];
        write.guards.extend(guards.into_iter().chain(owner));
        write.marks.extend(marks);
        if let Err(err) = write.apply(op, ttls) {
            pending.error = Some(err);
        }
    }
}

impl Transaction {
    /// Queues the list commands of a link or an unlink, with the keys it
    /// needs to exist when it commits. A write that cannot be made is kept
    /// as the transaction's error, as [`queue`](Self::queue) keeps one.
    fn queue_lists(&self, queued: Result<(Vec<ListWrite>, Vec<String>)>) {
        let queued = queued.and_then(|(lists, guards)| {
            for list in &lists {
                self.check_slot(&list.key)?;
            }
            Ok((lists, guards))
        });
        let mut pending = lock(&self.pending);
        if pending.error.is_some() {
            return;
        }
        match queued {
            Ok((lists, guards)) => {
                pending.lists.extend(lists);
                pending.guards.extend(guards);
            }
            Err(err) => pending.error = Some(err),
        }
    }
}
