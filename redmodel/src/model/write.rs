//! An object's write path: every operation that changes an object's
//! fields or deletes it (methods of [`ObjectRef`], defined here), and the
//! index entries that change with it, in the same atomic unit ([`index`];
//! ordered single-slot steps in the cluster layout, [`stepped`]).

mod bulk;
mod index;
mod reference;
mod stepped;

use index::touches_index;
use index::Prepared;
pub(crate) use index::{add_entries, plan, Changes, IndexPlan};
use index::{IndexedIncr, Scored};
pub(crate) use reference::{
    recheck_references, reference_guards, reference_marks, Prior, PriorRead,
};
pub(crate) use stepped::{claim_all, claim_held, release_all, settle, sync, unindex, Claim, Texts};

use std::borrow::Cow;
use std::time::Duration;

use redis::Cmd;

use super::codec::{Codec, Incr, IntoValue, Plain, Scalar};
use super::expiry::{checked_millis, ttl_cmds};
use super::field::{Assign, Field};
use super::object::{ObjectRef, COUNT_FIELD};
use super::reply::{at_key, incr_error};
use super::{Model, OwnerKind, SingleValue, Storage};
use crate::command::{cmd, exact, sized, Owned};
use crate::db::plan::{GuardKeys, Plan};
use crate::sync_hook::SyncEvent;
use crate::{Db, Error, Result};

/// An object's fields as written by a full write.
pub(crate) struct Encoded {
    /// Fields to set, with their text.
    pub(crate) set: Vec<(&'static str, Vec<u8>)>,
    /// `None` fields, to remove.
    pub(crate) removed: Vec<&'static str>,
}

/// A write of an object's hash, decided before anything is sent: a full
/// write ([`ObjectRef::insert`]) or a field write ([`ObjectRef::set_many`]).
struct HashWrite<'k> {
    /// The object's key, as stored.
    key: Cow<'k, str>,
    /// Fields to set, with their text.
    set: Vec<(&'static str, Vec<u8>)>,
    /// Fields to remove.
    removed: Vec<&'static str>,
    /// The declared TTLs the write gives.
    ttls: Vec<Cmd>,
    /// The read of what it changes, where its references are checked
    /// again after it (boxed: it is rare, and large).
    prior: Option<Box<PriorRead>>,
    /// Whether `_count` is incremented (a counted full write).
    counted: bool,
    /// Whether the object must exist (a field write), else only its admin.
    existing: bool,
}

impl<'k> HashWrite<'k> {
    fn new<M: Model>(
        db: &Db,
        key: Cow<'k, str>,
        set: Vec<(&'static str, Vec<u8>)>,
        removed: Vec<&'static str>,
        ttls: Vec<Cmd>,
        counted: bool,
        existing: bool,
    ) -> Self {
        let prior = PriorRead::of::<M>(db, &key, changed(&set, &removed)).map(Box::new);
        HashWrite {
            key,
            set,
            removed,
            ttls,
            prior,
            counted,
            existing,
        }
    }

    /// The object's key, as stored.
    fn key(&self) -> &str {
        &self.key
    }

    /// The stored fields it changes.
    fn changes(&self) -> Changes<'_> {
        Changes::Fields(changed_fields(&self.set, &self.removed))
    }

    /// Adds its commands to `plan`: the prior read, the reference marks,
    /// the fields, the TTLs and the count.
    fn add<M: Model>(&self, db: &Db, plan: &mut Plan) {
        let marks = reference_marks::<M>(db, &self.key, &self.set);
        add_write(
            plan,
            &self.key,
            self.prior.as_deref(),
            &self.set,
            &self.removed,
            marks,
            &self.ttls,
        );
        if self.counted {
            plan.add(exact(
                "HINCRBY",
                &[self.key.as_bytes(), COUNT_FIELD.as_bytes(), b"1"],
            ));
        }
    }
}

impl<M: Model> ObjectRef<M> {
    /// Sets one field (HSET); setting an `Option` field to `None` removes
    /// it (HDEL). Keeps the key's TTL, as HSET does; a field declared with
    /// a TTL gets it afresh, in the same atomic unit (HSET alone would
    /// clear it).
    ///
    /// The object must exist: a field write never creates one (that is
    /// [`insert`](Self::insert)'s job), so a write racing a delete cannot
    /// leave a partial object behind. [`Error::NotFound`], and nothing
    /// written, if it does not (checked in the write's atomic unit).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "set", key = %self.key()))]
    pub async fn set<T, C: Codec<T>>(
        &self,
        db: &Db,
        field: Field<M, T, C>,
        value: impl IntoValue<T>,
    ) -> Result<()> {
        let (set, removed) = match field.encode(self.key(), &value.into_value())? {
            Some(text) => (vec![(field.name(), text)], Vec::new()),
            None => (Vec::new(), vec![field.name()]),
        };
        self.write_fields(db, set, removed).await
    }

    /// Sets several fields at once, atomically:
    /// `set_many(&db, [Student::MATH.to(95), Student::ENGLISH.to(90)])`.
    /// The object must exist, as for [`set`](Self::set).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "set_many", key = %self.key()))]
    pub async fn set_many(
        &self,
        db: &Db,
        fields: impl IntoIterator<Item = Assign<M>>,
    ) -> Result<()> {
        match self.assigned(fields)? {
            Some(Encoded { set, removed }) => self.write_fields(db, set, removed).await,
            None => Ok(()),
        }
    }

    /// The fields `fields` set and remove; `None` if none; an
    /// [`Error::Encode`] for a value that could not be encoded.
    fn assigned(&self, fields: impl IntoIterator<Item = Assign<M>>) -> Result<Option<Encoded>> {
        let mut set = Vec::new();
        let mut removed = Vec::new();
        for assign in fields {
            match assign.value {
                Ok(Some(text)) => set.push((assign.name, text)),
                Ok(None) => removed.push(assign.name),
                Err(reason) => {
                    return Err(Error::Encode {
                        key: self.key().to_string(),
                        field: assign.name.to_string(),
                        reason,
                    })
                }
            }
        }
        Ok((!set.is_empty() || !removed.is_empty()).then_some(Encoded { set, removed }))
    }

    /// The write of [`set`](Self::set) and [`set_many`](Self::set_many):
    /// sets `set` and removes `removed` on the existing object, with the
    /// index entries, declared field TTLs and reference marks they call
    /// for, in one atomic unit; then, in the cluster layout, the targets
    /// of its references checked again.
    async fn write_fields(
        &self,
        db: &Db,
        set: Vec<(&'static str, Vec<u8>)>,
        removed: Vec<&'static str>,
    ) -> Result<()> {
        let write = self.field_write(db, set, removed)?;
        self.run_hash(db, &write).await
    }

    /// Increments a numeric field (HINCRBY for integers, HINCRBYFLOAT for
    /// floats) and returns its new value. An absent field counts from 0.
    /// Only fields of a numeric type have handles this accepts: it does
    /// not compile for a `String` field.
    ///
    /// If the stored field is not a number Redis can increment, or the new
    /// value does not fit the field's type (`255 + 1` in a `u8`, which
    /// Redis has then stored), the error is an [`Error::Decode`] naming the
    /// key and field. A result Redis itself refuses (an `i64` overflow, an
    /// infinite float) is [`Error::Server`], and nothing is written. The
    /// object must exist, as for [`set`](Self::set).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "incr", key = %self.key()))]
    pub async fn incr<T: Incr>(
        &self,
        db: &Db,
        field: Field<M, T, Plain>,
        by: T::By,
    ) -> Result<T::Output> {
        let key = self.key_in(db);
        let name = field.name();
        // Boxed, the paths that await: their states (a script call, a
        // resync, the stepped path) made every `incr` future 2.5 kB, moved
        // whole into the future awaiting it. In process the plan runs at
        // once under the engine's lock, with no future.
        let text = if touches_index::<M>(&[name]) {
            match index::incr_prepared::<M>(db, &key, name, T::COMMAND, &by) {
                Ok(IndexedIncr::Ran(text, Scored::Exact)) => Ok(text),
                Ok(IndexedIncr::Ran(text, scored)) => {
                    Box::pin(index::settle::<M>(db, &key, name, text, scored)).await
                }
                Ok(IndexedIncr::Pending(pending)) => {
                    let command = T::COMMAND;
                    Box::pin(index::incr_indexed::<M>(
                        db, &key, name, command, &by, pending,
                    ))
                    .await
                }
                Err(err) => Err(err),
            }
        } else {
            // The plan lives in this block only, so the future does not
            // hold it across the await: it moves into the boxed one.
            let ran = {
                let plan = index::incr_plan(&key, name, T::COMMAND, &by, &[]);
                match plan.now::<(redis::Value,)>(db) {
                    Some(now) => Ok(now.and_then(|(reply,)| index::number_text(reply))),
                    None => Err(Box::pin(index::run_incr(db, plan))),
                }
            };
            match ran {
                Ok(text) => text,
                Err(pending) => pending.await,
            }
        }
        .map_err(incr_error(self.key(), name))?;
        T::Output::from_text(&text).map_err(|reason| Error::Decode {
            key: self.key().to_string(),
            field: name.to_string(),
            reason,
        })
    }

    /// Splits the encoded fields of `value` into those to set and those
    /// to remove (its `None` fields).
    pub(crate) fn encoded(&self, value: &M) -> Result<Encoded> {
        let mut out = Encoded {
            set: Vec::with_capacity(M::FIELDS.len()),
            removed: Vec::new(),
        };
        for (name, text) in M::FIELDS.iter().zip(value.encode_fields(self.key())?) {
            match text {
                Some(text) => out.set.push((*name, text)),
                None => out.removed.push(*name),
            }
        }
        Ok(out)
    }

    /// Full write of `value` at this key, in one atomic unit: its `None`
    /// fields are removed, the others set, and the hash field `_count` is
    /// incremented; when `_count` reaches a multiple of the model's
    /// `sync_every`, the sync hooks registered with [`Db::on_sync`] are
    /// called with the key and the count.
    ///
    /// An admin's insert creates it or overwrites it (an upsert). A
    /// sub-object's needs its admin to exist ([`Error::NotFound`],
    /// nothing written, otherwise), so that none is left without one.
    ///
    /// Undeclared fields of the hash are left alone. The key's TTL is
    /// kept (HSET keeps it), unless the model declares one
    /// (`#[redmodel(ttl = "30m")]`): then the write gives the key that TTL
    /// afresh, in the same atomic unit. Fields declared with a TTL get
    /// theirs afresh too (see [`expiry`](super::expiry)). `value`'s own
    /// pk is not consulted: this handle's key is used. A single-value
    /// model is written with SET (which clears a TTL, as SET does, or
    /// gives the model's own with `PX`), without a count or a hook.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "insert", key = %self.key()))]
    pub async fn insert(&self, db: &Db, value: &M) -> Result<()> {
        self.full_write(db, value, true, M::TTL).await
    }

    /// [`insert`](Self::insert) of `value`, whose fields are `encoded`
    /// already if given (by a batch that checked its unique values); a
    /// single value is written by its own path either way. Within the
    /// batch's span: an item has no span of its own.
    pub(crate) async fn insert_encoded(
        &self,
        db: &Db,
        value: &M,
        encoded: Option<Encoded>,
    ) -> Result<()> {
        match encoded {
            Some(fields) if M::STORAGE != Storage::Single => {
                self.encoded_write(db, fields, true, M::TTL).await
            }
            _ => self.full_write(db, value, true, M::TTL).await,
        }
    }

    /// [`insert`](Self::insert), giving the object the time to live `ttl`
    /// (instead of the model's default, if it declares one) in the
    /// insert's own atomic unit: no reader ever sees the object written
    /// without it, and no crash leaves it so. A TTL under a millisecond
    /// is [`Error::InvalidTtl`], and nothing is written.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "insert_with_ttl", key = %self.key()))]
    pub async fn insert_with_ttl(&self, db: &Db, value: &M, ttl: Duration) -> Result<()> {
        self.full_write(db, value, true, Some(ttl)).await
    }

    /// Writes `value`'s fields like [`insert`](Self::insert) (the
    /// model's TTLs included), without counting the write or calling the
    /// sync hooks.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "insert_without_sync", key = %self.key()))]
    pub async fn insert_without_sync(&self, db: &Db, value: &M) -> Result<()> {
        self.full_write(db, value, false, M::TTL).await
    }

    /// A full write of `value`: counted (`_count` and the sync hooks) or
    /// not, the key given `ttl` if any.
    async fn full_write(
        &self,
        db: &Db,
        value: &M,
        counted: bool,
        ttl: Option<Duration>,
    ) -> Result<()> {
        if M::STORAGE == Storage::Single {
            let text = value
                .encode_fields(self.key())?
                .into_iter()
                .next()
                .flatten();
            return self.write_single(db, text, ttl).await;
        }
        self.encoded_write(db, self.encoded(value)?, counted, ttl)
            .await
    }

    /// The full write of a hash model's object whose fields are
    /// `encoded` (see [`full_write`](Self::full_write)).
    async fn encoded_write(
        &self,
        db: &Db,
        encoded: Encoded,
        counted: bool,
        ttl: Option<Duration>,
    ) -> Result<()> {
        match self.encoded_hash_write(db, encoded, counted, ttl)? {
            Some(write) => self.run_hash(db, &write).await,
            None => Ok(()),
        }
    }

    /// The hash write of a full write whose fields are `encoded` (see
    /// [`full_write`](Self::full_write)); `None` if it writes nothing.
    fn encoded_hash_write(
        &self,
        db: &Db,
        Encoded { set, removed }: Encoded,
        counted: bool,
        ttl: Option<Duration>,
    ) -> Result<Option<HashWrite<'_>>> {
        if !counted && set.is_empty() && removed.is_empty() {
            return Ok(None);
        }
        let key = self.key_in(db);
        let ttls = ttl_cmds::<M>(db, &key, ttl, names(&set))?;
        Ok(Some(HashWrite::new::<M>(
            db, key, set, removed, ttls, counted, false,
        )))
    }

    /// The hash write of a field write that sets `set` and removes
    /// `removed` on the existing object.
    fn field_write(
        &self,
        db: &Db,
        set: Vec<(&'static str, Vec<u8>)>,
        removed: Vec<&'static str>,
    ) -> Result<HashWrite<'_>> {
        let key = self.key_in(db);
        let ttls = ttl_cmds::<M>(db, &key, None, names(&set))?;
        Ok(HashWrite::new::<M>(
            db, key, set, removed, ttls, false, true,
        ))
    }

    /// Runs `write` on this object, with the index entries it calls for,
    /// as one atomic unit ([`index::run`]), then what follows it
    /// ([`hash_written`](Self::hash_written)).
    async fn run_hash(&self, db: &Db, write: &HashWrite<'_>) -> Result<()> {
        let add = |plan: &mut Plan| write.add::<M>(db, plan);
        let guards = self.guards(db, write.existing, &write.set);
        let kept: Vec<redis::Value> =
            index::run::<M, _>(db, &write.key, guards, &add, &write.changes())
                .await
                .map_err(at_key(self.key(), "hash"))?;
        self.hash_written(db, write, kept).await
    }

    /// `write` as one atomic unit with its index entries, prepared to
    /// run ([`index::prepare`]).
    fn prepare_hash<'k>(
        &'k self,
        plan: &mut Plan<'k>,
        db: &Db,
        write: &HashWrite<'_>,
    ) -> Result<Prepared<'k>> {
        let add = |plan: &mut Plan| write.add::<M>(db, plan);
        let guards = self.guards(db, write.existing, &write.set);
        index::prepare::<M>(plan, db, &write.key, guards, &add, &write.changes())
    }

    /// A delete of this object (at `key`, as stored) as one atomic unit
    /// with its index entries, prepared to run ([`index::prepare`]).
    fn prepare_delete<'k>(
        &'k self,
        plan: &mut Plan<'k>,
        db: &Db,
        key: &str,
    ) -> Result<Prepared<'k>> {
        index::prepare::<M>(
            plan,
            db,
            key,
            GuardKeys::new(),
            &delete_write(key),
            &Changes::Delete,
        )
    }

    /// What follows `write`, applied with the replies `kept`: in the
    /// cluster layout, the targets of its references checked again; for
    /// a counted write, the sync hooks when `_count` reaches a multiple
    /// of the model's `sync_every`.
    async fn hash_written(
        &self,
        db: &Db,
        write: &HashWrite<'_>,
        kept: Vec<redis::Value>,
    ) -> Result<()> {
        let prior = write.prior.as_ref().map(|p| p.parse(&kept)).transpose()?;
        recheck_references::<M>(db, &write.key, &write.set, prior.as_ref()).await?;
        let count = match kept.last() {
            Some(count) if write.counted => {
                redis::from_redis_value::<i64>(count.clone()).map_err(redis::RedisError::from)?
            }
            _ => 0,
        };
        let count = u64::try_from(count).unwrap_or(0);
        if count > 0 && count.is_multiple_of(M::SYNC_EVERY.max(1)) {
            db.run_sync_hooks(&SyncEvent {
                table: M::TABLE,
                key: self.key().to_string(),
                count,
            });
        }
        Ok(())
    }

    /// Deletes the object (DEL; not its sub-objects or relations), and its
    /// entries in the model's indexes, in one MULTI/EXEC. Whether it
    /// existed.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "delete", key = %self.key()))]
    pub async fn delete(&self, db: &Db) -> Result<bool> {
        let key = self.key_in(db);
        if M::INDEXES.is_empty() {
            return db.query(cmd("DEL").arg(&key)).await;
        }
        let (existed,): (bool,) = index::run::<M, _>(
            db,
            &key,
            GuardKeys::new(),
            &delete_write(&key),
            &Changes::Delete,
        )
        .await
        .map_err(at_key(self.key(), "hash"))?;
        Ok(existed)
    }
}

/// The commands of a delete of the object at `key` (as stored): its
/// reply, whether it existed, is kept.
fn delete_write(key: &str) -> impl Fn(&mut Plan) + Sync + '_ {
    move |steps: &mut Plan| {
        steps.add(cmd("DEL").arg(key).owned());
    }
}

/// Adds the commands that read what the write changes first (`prior`,
/// kept: see [`PriorRead`]), then mark the targets of its references
/// (`marks`), set `set` in the hash `key`, remove `removed` and give the
/// declared field TTLs (`ttls`), all ignored.
fn add_write(
    steps: &mut Plan,
    key: &str,
    prior: Option<&PriorRead>,
    set: &[(&str, Vec<u8>)],
    removed: &[&str],
    marks: impl Iterator<Item = Cmd>,
    ttls: &[Cmd],
) {
    if let Some(prior) = prior {
        prior.add_to(steps);
    }
    for mark in marks {
        steps.add_ignored(mark);
    }
    // HSET before HDEL (the fields differ, so the order changes nothing
    // stored): a server at its `maxmemory` refuses a script's first write
    // that may grow the data, and lets the rest run once one has written,
    // so a write that adds data is refused whole there, not let through
    // by an HDEL first.
    if !set.is_empty() {
        // Sized at once: an insert sets every field.
        let bytes = key.len() + set.iter().map(|(f, v)| f.len() + v.len()).sum::<usize>();
        let mut hset = sized("HSET", 1 + 2 * set.len(), bytes);
        hset.arg(key).arg(set);
        steps.add_ignored(hset);
    }
    if !removed.is_empty() {
        steps.add_ignored(cmd("HDEL").arg(key).arg(removed).owned());
    }
    // HSET clears a field's TTL: the declared ones are given again.
    for ttl in ttls {
        steps.add_ignored(ttl.clone());
    }
}

impl<M: Model> ObjectRef<M> {
    /// Writes a single-value object: SET `text` (with `PX` for a `ttl`),
    /// or DEL for `None`; under an admin, only if the admin exists.
    async fn write_single(
        &self,
        db: &Db,
        text: Option<Vec<u8>>,
        ttl: Option<Duration>,
    ) -> Result<()> {
        let key = self.key_in(db);
        let mut steps = Plan::new();
        if let Some(owner) = self.owner_key_in(db) {
            steps.guard(owner);
        }
        let cmd = match text {
            Some(text) => single_set(&key, text, ttl)?,
            None => cmd("DEL").arg(&key).owned(),
        };
        steps.add_ignored(cmd);
        steps.run::<()>(db).await
    }

    /// The keys a write of `set` must find existing, as `db` stores them:
    /// the object itself for a field write (`existing`), else its admin
    /// for a sub-object; and the object every reference field in `set`
    /// names (a `Ref` field pointing at a deleted object would dangle).
    fn guards<'k>(&'k self, db: &Db, existing: bool, set: &[(&str, Vec<u8>)]) -> GuardKeys<'k> {
        let own = if existing {
            Some(self.key_in(db))
        } else {
            self.owner_key_in(db).map(Cow::Owned)
        };
        own.into_iter()
            .chain(reference_guards::<M>(db, set).map(Cow::Owned))
            .collect()
    }

    /// The key of the admin this object hangs under, as `db` stores it
    /// (`None` for an admin): what a full write of a sub-object needs to
    /// exist.
    pub(crate) fn owner_key_in(&self, db: &Db) -> Option<String> {
        let mut prefix = String::new();
        M::Owner::write_prefix(self.owner(), &mut prefix);
        let owner = prefix.strip_suffix(':')?;
        Some(db.stored(owner).into_owned())
    }
}

/// The names of the fields a write sets.
pub(crate) fn names<'s, 'a>(
    set: &'s [(&'a str, Vec<u8>)],
) -> impl Iterator<Item = &'a str> + Clone + use<'s, 'a> {
    set.iter().map(|(name, _)| *name)
}

/// The stored fields a write sets or removes, with their new text.
fn changed_fields<'a>(
    set: &'a [(&'static str, Vec<u8>)],
    removed: &'a [&'static str],
) -> Vec<(&'static str, Option<&'a [u8]>)> {
    changed(set, removed).collect()
}

/// [`changed_fields`], one by one.
fn changed<'a>(
    set: &'a [(&'static str, Vec<u8>)],
    removed: &'a [&'static str],
) -> impl Iterator<Item = (&'static str, Option<&'a [u8]>)> {
    set.iter()
        .map(|(name, text)| (*name, Some(text.as_slice())))
        .chain(removed.iter().map(|name| (*name, None)))
}

impl<M: SingleValue> ObjectRef<M> {
    /// Sets the value of a single-value sub-object (SET, which clears a
    /// TTL, or gives the model's declared one). `None` deletes the key.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "set_value", key = %self.key()))]
    pub async fn set_value(&self, db: &Db, value: impl IntoValue<M::Value>) -> Result<()> {
        let field = M::FIELDS.first().copied().unwrap_or("value");
        let text = M::Codec::encode(&value.into_value()).map_err(|reason| Error::Encode {
            key: self.key().to_string(),
            field: field.to_string(),
            reason,
        })?;
        self.write_single(db, text, M::TTL).await
    }
}

/// SET of a single-value object's text, with `PX` for a `ttl`.
pub(crate) fn single_set(key: &str, text: Vec<u8>, ttl: Option<Duration>) -> Result<Cmd> {
    let mut set = cmd("SET").arg(key).arg(text).owned();
    if let Some(ttl) = ttl {
        set.arg("PX").arg(checked_millis(ttl)?);
    }
    Ok(set)
}

/// The start of a write of the object at `key` that needs `guards` to
/// exist. Where they all share its slot (always in the plain layout),
/// one group that they all guard: one atomic
/// unit. In the cluster layout, those in `key`'s slot guard the write's
/// own group; each of the others (a reference field's target) gets a
/// group of its own, checked first, just before the write, not with it.
pub(crate) fn guarded_unit<'k>(db: &Db, key: &str, guards: GuardKeys<'k>) -> Plan<'k> {
    let mut unit = Plan::new();
    guard_unit(&mut unit, db, key, guards);
    unit
}

/// [`guarded_unit`], started in `unit` (an empty plan).
pub(crate) fn guard_unit<'k>(unit: &mut Plan<'k>, db: &Db, key: &str, guards: GuardKeys<'k>) {
    // Moved into the plan, the far ones first, each in a group of its own.
    let mut near = GuardKeys::new();
    for guard in guards {
        // The object, the usual guard, is known by its name: no slot to hash.
        if guard == key || db.shares_slot(&guard, key) {
            near.push(guard);
        } else {
            unit.step().guard(guard);
        }
    }
    unit.step();
    for guard in near {
        unit.guard(guard);
    }
}
