//! Bulk writes: many objects inserted, set or deleted in one call, each
//! by its own single write (the same plans as [`ObjectRef::insert`],
//! [`ObjectRef::set_many`] and [`ObjectRef::delete`], so the indexes are
//! kept by the one copy of their logic), run at once by the db layer's
//! [`batch`](crate::db::batch) entry point.
//!
//! One result per item, in input order: an item that fails (a unique value
//! another object holds, a missing admin, a bad value) fails alone, with
//! an [`ItemError`] naming it. Before anything is sent, an item naming the
//! same object as an earlier item, or claiming a unique value an earlier
//! item claims, is refused with [`Error::DuplicateInBatch`]: only the
//! earlier item is sent, so the outcome does not depend on which of two
//! concurrent writes would land first.

use std::collections::HashMap;
use std::future::Future;

use super::index::{plan, Changes};
use super::{changed_fields, Encoded};
use crate::db::batch::run_each;
use crate::model::field::Assign;
use crate::model::index::IndexKind;
use crate::model::object::ObjectRef;
use crate::model::Model;
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
    fn new() -> Self {
        Taken {
            keys: HashMap::default(),
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
        let claims = if has_unique::<M>() {
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
fn has_unique<M: Model>() -> bool {
    M::INDEXES
        .iter()
        .any(|spec| matches!(spec.kind, IndexKind::Unique))
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
        let mut taken = Taken::<M>::new();
        let checked: Vec<Result<()>> = items
            .iter()
            .enumerate()
            .map(|(i, (handle, value))| {
                // Only unique values need the fields: no encoding twice
                // for a model without.
                if !has_unique::<M>() {
                    return taken.take(i, handle.key(), &Changes::Fields(Vec::new()));
                }
                let Encoded { set, removed } = handle.encoded(value)?;
                taken.take(
                    i,
                    handle.key(),
                    &Changes::Fields(changed_fields(&set, &removed)),
                )
            })
            .collect();
        // Made one at a time, as the window takes them: a write's future
        // is kilobytes, and a batch's worth at once would be megabytes.
        // The closure takes only owned values: one taking a borrowed item
        // makes the returned future's `Send` bound fail to hold for every
        // lifetime.
        let items = &items;
        let writes = checked.into_iter().enumerate().map(move |(i, checked)| {
            let (handle, value) = &items[i];
            item_outcome(i, handle, checked, move || handle.insert(db, *value))
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
        let mut taken = Taken::<M>::new();
        let handles = &handles;
        // Made one at a time, as the window takes them (see `insert_many`).
        let writes = assigns.into_iter().enumerate().map(move |(i, assigns)| {
            let handle = &handles[i];
            let changes = Changes::Fields(
                assigns
                    .iter()
                    .map(|a| (a.name, a.value.as_ref().ok().and_then(|v| v.as_deref())))
                    .collect(),
            );
            let checked = taken.take(i, handle.key(), &changes);
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
        let mut taken = Taken::<M>::new();
        // Made one at a time, as the window takes them (see `insert_many`).
        let writes = (0..refs.len()).map(move |i| {
            let handle = &refs[i];
            let checked = taken.take(i, handle.key(), &Changes::Fields(Vec::new()));
            item_outcome(i, handle, checked, move || handle.delete(db))
        });
        run_each(db, writes).await
    }
}
