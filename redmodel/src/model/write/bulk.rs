//! Bulk writes: many objects inserted, set or deleted in one call, each
//! by its own single write (the same plans and decisions as
//! [`ObjectRef::insert`], [`ObjectRef::set_many`] and
//! [`ObjectRef::delete`], so the indexes are kept by the one copy of
//! their logic). On one server in the plain layout each write is prepared
//! here, before anything is sent, and the db layer runs them in gathered
//! WATCH transactions ([`gathered`]); elsewhere
//! (and for a write that cannot be gathered) they run at once through
//! the db layer's [`batch`](crate::db::batch) entry point.
//!
//! One result per item, in input order: an item that fails (a unique value
//! another object holds, a missing admin, a bad value) fails alone, with
//! an [`ItemError`] naming it. Before anything is sent, an item naming the
//! same object as an earlier item, or claiming a unique value an earlier
//! item claims, is refused with [`Error::DuplicateInBatch`]: only the
//! earlier item is sent, so the outcome does not depend on which of two
//! concurrent writes would land first.

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;

use futures_util::StreamExt as _;

use super::index::{plan, Changes, Entries, Prepared, Step};
use super::{changed_fields, Encoded, HashWrite};
use crate::db::batch::run_each;
use crate::db::plan::gathered::{self, Gathered};
use crate::db::plan::Plan;
use crate::model::field::Assign;
use crate::model::index::IndexKind;
use crate::model::object::ObjectRef;
use crate::model::reply::at_key;
use crate::model::Model;
use crate::model::Storage;
use crate::{Db, Error, ItemError, Result};

/// What earlier items of a batch took: their objects' keys (borrowed
/// from the batch's handles), and the unique values they claim (by
/// field), each with the item's position. The tables hash with
/// `foldhash`: a batch's own keys need no defence against flooding, and
/// SipHash cost more than the rest of the check.
struct Taken<'k, M> {
    keys: HashMap<&'k str, usize, foldhash::fast::RandomState>,
    claims: HashMap<(&'static str, String), usize, foldhash::fast::RandomState>,
    model: std::marker::PhantomData<fn() -> M>,
}

impl<'k, M: Model> Taken<'k, M> {
    /// Whether `M` has a unique index, whose values the check compares.
    const UNIQUE: bool = has_unique::<M>();

    /// Room for a batch of `items` objects: its table of keys sized at
    /// once, not grown and rehashed a dozen times over a large batch.
    fn new(items: usize) -> Self {
        Taken {
            keys: HashMap::with_capacity_and_hasher(items, Default::default()),
            claims: HashMap::default(),
            model: std::marker::PhantomData,
        }
    }

    /// Records item `item`, on object `key`, which sets `changes`: an
    /// [`Error::DuplicateInBatch`] if an earlier item names the object or
    /// claims one of its unique values (nothing recorded then), and the
    /// error of a value that cannot be indexed.
    fn take(&mut self, item: usize, key: &'k str, changes: &Changes<'_>) -> Result<()> {
        if let Some(&earlier) = self.keys.get(key) {
            return Err(Error::DuplicateInBatch {
                model: M::TABLE,
                field: None,
                value: key.to_string(),
                earlier,
            });
        }
        let claims = if Self::UNIQUE {
            plan::<M>(key, changes)?.1
        } else {
            Vec::new()
        };
        for (field, value) in &claims {
            if let Some(&earlier) = self.claims.get(&(*field, value.clone())) {
                return Err(Error::DuplicateInBatch {
                    model: M::TABLE,
                    field: Some(field),
                    value: value.clone(),
                    earlier,
                });
            }
        }
        self.keys.insert(key, item);
        for claim in claims {
            self.claims.insert(claim, item);
        }
        Ok(())
    }
}

/// Whether `M` has a unique index, whose values a batch checks for
/// duplicates.
const fn has_unique<M: Model>() -> bool {
    let mut i = 0;
    while i < M::INDEXES.len() {
        if matches!(M::INDEXES[i].kind, IndexKind::Unique) {
            return true;
        }
        i += 1;
    }
    false
}

/// The outcomes of a bulk write of hashes, from [`gather`]'s.
fn unit_outcomes(
    outcomes: Vec<std::result::Result<bool, ItemError>>,
) -> Vec<std::result::Result<(), ItemError>> {
    outcomes.into_iter().map(|o| o.map(|_| ())).collect()
}

/// The stored fields that `assigns` change, with their new text (as far
/// as it was encoded).
fn assigned_changes<M>(assigns: &[Assign<M>]) -> Changes<'_> {
    Changes::Fields(
        assigns
            .iter()
            .map(|a| (a.name, a.value.as_ref().ok().and_then(|v| v.as_deref())))
            .collect(),
    )
}

/// The outcome of item `item`, on the object `handle`, as a batch reports
/// it: its `write`, made and run only if the batch's check of it passed
/// (`checked`).
async fn item_outcome<M: Model, T, F: Future<Output = Result<T>>>(
    item: usize,
    handle: &ObjectRef<M>,
    checked: Result<()>,
    write: impl FnOnce() -> F,
) -> std::result::Result<T, ItemError> {
    let outcome = match checked {
        Ok(()) => write().await,
        Err(err) => Err(err),
    };
    outcome.map_err(|error| ItemError {
        item,
        key: handle.key().to_string(),
        error,
    })
}

/// Whether the hash writes of a bulk write of `M` on `db` run gathered
/// ([`gathered`]): on one server in the plain layout, for a model stored
/// as a hash.
fn gathers<M: Model>(db: &Db) -> bool {
    gathered::applies(db) && M::STORAGE != Storage::Single
}

/// An item of a bulk write, decided before anything is sent: a write of
/// the object's hash, or its delete (at its key, as stored).
enum Made<'h> {
    Hash(HashWrite<'h>),
    Delete(Cow<'h, str>),
}

impl<'h> Made<'h> {
    /// The object's key, as stored.
    fn key(&self) -> &str {
        match self {
            Made::Hash(write) => write.key(),
            Made::Delete(key) => key,
        }
    }

    /// The write on `handle` as one atomic unit with its index entries,
    /// in `plan`.
    fn prepare<M: Model>(
        &self,
        plan: &mut Plan<'h>,
        db: &Db,
        handle: &'h ObjectRef<M>,
    ) -> Result<Prepared<'h>> {
        match self {
            Made::Hash(write) => handle.prepare_hash(plan, db, write),
            Made::Delete(key) => handle.prepare_delete(plan, db, key),
        }
    }

    /// The item's outcome from the kept replies of its unit: for a delete,
    /// whether the object existed; else `true`, with what follows a hash
    /// write done.
    async fn written<M: Model>(
        &self,
        db: &Db,
        handle: &ObjectRef<M>,
        kept: Vec<redis::Value>,
    ) -> Result<bool> {
        match self {
            Made::Hash(write) => handle.hash_written(db, write, kept).await.map(|()| true),
            Made::Delete(_) => {
                let (existed,): (bool,) = redis::from_redis_value(redis::Value::Array(kept))
                    .map_err(redis::RedisError::from)?;
                Ok(existed)
            }
        }
    }

    /// Runs the item on its own, as a write sent alone.
    async fn alone<M: Model>(self, db: &Db, handle: &ObjectRef<M>) -> Result<bool> {
        match self {
            Made::Hash(write) => handle.run_hash(db, &write).await.map(|()| true),
            Made::Delete(_) => handle.delete(db).await,
        }
    }
}

/// What became of a gathered item: its outcome, or its write, to run on
/// its own.
enum Done<'h> {
    Ran(Result<bool>),
    Alone(Made<'h>),
}

/// Runs the hash writes of a bulk write gathered ([`gathered`]): item
/// `i`, on `handles[i]`, is refused before anything is sent if
/// `checked[i]` is an error, else makes the write `write(i)` (`None`:
/// nothing to write). A transaction's writes are made as it takes its
/// place among those in flight, so that making them overlaps the others'
/// round trips. A write that cannot be gathered runs on its own.
///
/// The writes are made by a `dyn FnMut` of the item's position, and the
/// transactions by a closure without arguments: a closure taking a
/// borrowed item, held across an await, makes the returned future's
/// `Send` bound fail to hold for every lifetime.
async fn gather<'h, M: Model>(
    db: &Db,
    handles: &[&'h ObjectRef<M>],
    checked: Vec<Result<()>>,
    write: &mut (dyn FnMut(usize) -> Result<Option<Made<'h>>> + Send),
) -> Vec<std::result::Result<bool, ItemError>> {
    let mut checked = checked.into_iter().enumerate().peekable();
    let transaction = || {
        checked.peek()?;
        // Sized at once: an item is hundreds of bytes, and growing a
        // transaction's worth copies each several times.
        let mut done: Vec<(usize, Done<'h>)> = Vec::with_capacity(gathered::MAX_ITEMS);
        let mut prepared: Vec<(usize, Made<'h>, Plan<'h>, Vec<Step>)> =
            Vec::with_capacity(gathered::MAX_ITEMS);
        while prepared.len() < gathered::MAX_ITEMS {
            let Some((i, checked)) = checked.next() else {
                break;
            };
            let made = match checked.and_then(|()| write(i)) {
                Ok(Some(made)) => made,
                Ok(None) => {
                    done.push((i, Done::Ran(Ok(true))));
                    continue;
                }
                Err(err) => {
                    done.push((i, Done::Ran(Err(err))));
                    continue;
                }
            };
            let mut plan = Plan::new();
            match made.prepare(&mut plan, db, handles[i]) {
                Ok(Prepared::Unit(steps)) => prepared.push((i, made, plan, steps)),
                Ok(Prepared::Stepped { .. }) => done.push((i, Done::Alone(made))),
                Err(err) => done.push((i, Done::Ran(Err(err)))),
            }
        }
        Some(async move {
            let ran = {
                let mut entries = Vec::with_capacity(prepared.len());
                for (_, made, _, steps) in &prepared {
                    entries.push(Entries::<M>::new(db, made.key(), steps));
                }
                let mut runs = Vec::with_capacity(prepared.len());
                for ((_, _, plan, _), decide) in prepared.iter().zip(&entries) {
                    runs.push(Gathered { plan, decide });
                }
                gathered::run(db, &runs).await
            };
            for ((i, made, _, _), ran) in prepared.into_iter().zip(ran) {
                let handle = handles[i];
                let outcome = match ran {
                    Some(Ok(kept)) => Done::Ran(made.written(db, handle, kept).await),
                    Some(Err(err)) => Done::Ran(Err(at_key(handle.key(), "hash")(err))),
                    None => Done::Alone(made),
                };
                done.push((i, outcome));
            }
            done
        })
    };
    let done: Vec<Vec<(usize, Done<'h>)>> =
        futures_util::stream::iter(std::iter::from_fn(transaction))
            .buffered(gathered::IN_FLIGHT)
            .collect()
            .await;
    let mut outcomes: Vec<Option<Result<bool>>> = (0..handles.len()).map(|_| None).collect();
    let mut alone = Vec::new();
    for (i, done) in done.into_iter().flatten() {
        match done {
            Done::Ran(outcome) => outcomes[i] = Some(outcome),
            Done::Alone(made) => alone.push(async move { (i, made.alone(db, handles[i]).await) }),
        }
    }
    for (i, outcome) in run_each(db, alone).await {
        outcomes[i] = Some(outcome);
    }
    let mut out = Vec::with_capacity(outcomes.len());
    for (item, outcome) in outcomes.into_iter().enumerate() {
        out.push(outcome.unwrap_or(Ok(true)).map_err(|error| ItemError {
            item,
            key: handles[item].key().to_string(),
            error,
        }));
    }
    out
}

impl<M: Model> ObjectRef<M> {
    /// Inserts many objects, each as [`insert`](Self::insert) does (an
    /// upsert of an admin; a sub-object needs its admin), its index
    /// entries included: the writes run at once, sharing round trips (see
    /// the guide's bulk writes, `docs/queries.md`). One result per item,
    /// in input order: a
    /// failed item (a unique value taken, a duplicate of an earlier item,
    /// [`Error::DuplicateInBatch`]) writes nothing and leaves the others
    /// alone.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// # use redmodel::prelude::*;
    /// #[derive(redmodel::Admin)]
    /// struct User { #[redmodel(pk)] id: u32, #[redmodel(unique)] email: String }
    /// let db = Db::memory();
    /// let users = [
    ///     User { id: 1, email: "a@x".into() },
    ///     User { id: 2, email: "a@x".into() },
    /// ];
    /// let done = ObjectRef::insert_many(&db, users.iter().map(|u| (u.handle(), u))).await;
    /// assert!(done[0].is_ok());
    /// assert!(matches!(done[1], Err(redmodel::ItemError { item: 1, error: Error::DuplicateInBatch { earlier: 0, .. }, .. })));
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "insert_many"))]
    pub async fn insert_many<'v>(
        db: &Db,
        items: impl IntoIterator<Item = (ObjectRef<M>, &'v M)>,
    ) -> Vec<std::result::Result<(), ItemError>> {
        let items: Vec<(ObjectRef<M>, &M)> = items.into_iter().collect();
        let mut taken = Taken::<M>::new(items.len());
        // A model with a unique index has each value's fields encoded for
        // the batch's check, and kept for its write; one without has them
        // encoded by the write, as the window takes it, never a batch's
        // worth at once.
        let unique = Taken::<M>::UNIQUE;
        let mut encoded: Vec<Option<Encoded>> =
            Vec::with_capacity(if unique { items.len() } else { 0 });
        let mut checked: Vec<Result<()>> = Vec::with_capacity(items.len());
        for (i, (handle, value)) in items.iter().enumerate() {
            if !unique {
                checked.push(taken.take(i, handle.key(), &Changes::Fields(Vec::new())));
                continue;
            }
            let fields = handle.encoded(value).and_then(|fields| {
                let changes = Changes::Fields(changed_fields(&fields.set, &fields.removed));
                taken.take(i, handle.key(), &changes).map(|()| fields)
            });
            match fields {
                Ok(fields) => {
                    encoded.push(Some(fields));
                    checked.push(Ok(()));
                }
                Err(err) => {
                    encoded.push(None);
                    checked.push(Err(err));
                }
            }
        }
        if gathers::<M>(db) {
            let handles: Vec<&ObjectRef<M>> = items.iter().map(|(handle, _)| handle).collect();
            let items = &items;
            let mut write = move |i: usize| {
                let (handle, value) = &items[i];
                // Those the check encoded, else its value's.
                let fields = match encoded.get_mut(i).and_then(Option::take) {
                    Some(fields) => fields,
                    None => handle.encoded(value)?,
                };
                Ok(handle
                    .encoded_hash_write(db, fields, true, M::TTL)?
                    .map(Made::Hash))
            };
            return unit_outcomes(gather(db, &handles, checked, &mut write).await);
        }
        // Made one at a time, as the window takes them: a write's future
        // is kilobytes, and a batch's worth at once would be megabytes.
        // The closure takes only owned values: one taking a borrowed item
        // makes the returned future's `Send` bound fail to hold for every
        // lifetime.
        let items = &items;
        let writes = checked.into_iter().enumerate().map(move |(i, checked)| {
            let (handle, value) = &items[i];
            let fields = encoded.get_mut(i).and_then(Option::take);
            item_outcome(i, handle, checked, move || {
                handle.insert_encoded(db, *value, fields)
            })
        });
        run_each(db, writes).await
    }

    /// Sets fields of many objects, each as [`set_many`](Self::set_many)
    /// does on one (atomically, only if the object exists), its index
    /// entries included: the writes run at once, sharing round trips. One
    /// result per item, in input order: a failed item writes nothing and
    /// leaves the others alone (see [`insert_many`](Self::insert_many)).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// # use redmodel::prelude::*;
    /// #[derive(redmodel::Admin)]
    /// struct User { #[redmodel(pk)] id: u32, #[redmodel(sorted)] score: i64 }
    /// let db = Db::memory();
    /// User { id: 1, score: 0 }.insert(&db).await?;
    /// let done = ObjectRef::set_each(&db, [
    ///     (User::at(1), vec![User::SCORE.to(7)]),
    ///     (User::at(2), vec![User::SCORE.to(9)]),
    /// ]).await;
    /// assert!(done[0].is_ok());
    /// assert!(matches!(done[1], Err(redmodel::ItemError { error: Error::NotFound { .. }, .. })));
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "set_each"))]
    pub async fn set_each<A: IntoIterator<Item = Assign<M>>>(
        db: &Db,
        items: impl IntoIterator<Item = (ObjectRef<M>, A)>,
    ) -> Vec<std::result::Result<(), ItemError>> {
        let (handles, assigns): (Vec<ObjectRef<M>>, Vec<Vec<Assign<M>>>) = items
            .into_iter()
            .map(|(handle, assigns)| (handle, assigns.into_iter().collect()))
            .unzip();
        let mut taken = Taken::<M>::new(handles.len());
        if gathers::<M>(db) {
            let checked = assigns
                .iter()
                .enumerate()
                .map(|(i, assigns)| taken.take(i, handles[i].key(), &assigned_changes(assigns)))
                .collect();
            // Each item's assignments, taken by its write.
            let mut assigns: Vec<Option<Vec<Assign<M>>>> = assigns.into_iter().map(Some).collect();
            let refs: Vec<&ObjectRef<M>> = handles.iter().collect();
            let handles = &handles;
            let mut write = move |i: usize| {
                let handle = &handles[i];
                let assigns = assigns[i].take().unwrap_or_default();
                Ok(match handle.assigned(assigns)? {
                    Some(Encoded { set, removed }) => {
                        Some(Made::Hash(handle.field_write(db, set, removed)?))
                    }
                    None => None,
                })
            };
            return unit_outcomes(gather(db, &refs, checked, &mut write).await);
        }
        let handles = &handles;
        // Made one at a time, as the window takes them (see `insert_many`).
        let writes = assigns.into_iter().enumerate().map(move |(i, assigns)| {
            let handle = &handles[i];
            let checked = taken.take(i, handle.key(), &assigned_changes(&assigns));
            item_outcome(i, handle, checked, move || handle.set_many(db, assigns))
        });
        run_each(db, writes).await
    }

    /// Deletes many objects, each as [`delete`](Self::delete) does, with
    /// its index entries: the writes run at once, sharing round trips. One
    /// result per item, in input order: whether the object existed, or
    /// why its delete failed (an object named twice is deleted by its
    /// first item; the others are [`Error::DuplicateInBatch`]).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "delete_many", count = refs.len()))]
    pub async fn delete_many(
        db: &Db,
        refs: &[ObjectRef<M>],
    ) -> Vec<std::result::Result<bool, ItemError>> {
        let mut taken = Taken::<M>::new(refs.len());
        if gathers::<M>(db) {
            let checked = refs
                .iter()
                .enumerate()
                .map(|(i, handle)| taken.take(i, handle.key(), &Changes::Fields(Vec::new())))
                .collect();
            let handles: Vec<&ObjectRef<M>> = refs.iter().collect();
            let mut write = |i: usize| Ok(Some(Made::Delete(refs[i].key_in(db))));
            return gather(db, &handles, checked, &mut write).await;
        }
        // Made one at a time, as the window takes them (see `insert_many`).
        let writes = (0..refs.len()).map(move |i| {
            let handle = &refs[i];
            let checked = taken.take(i, handle.key(), &Changes::Fields(Vec::new()));
            item_outcome(i, handle, checked, move || handle.delete(db))
        });
        run_each(db, writes).await
    }
}
