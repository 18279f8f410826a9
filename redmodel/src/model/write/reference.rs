//! The reference fields of a write: the objects they name must exist
//! (guards of the write), are marked as referenced ([`REFS_FIELD`]) in the
//! write's own atomic unit where they share its slot, and, in the cluster
//! layout where they are in other slots, are checked and marked again
//! after the write, which undoes itself if one of them is gone.

use std::borrow::Cow;

use redis::{Cmd, Value};

use super::index::{self, Changes};
use crate::command::{cmd, Owned};
use crate::db::plan::{GuardKeys, Plan};
use crate::model::cascade::{Reference, REFS_FIELD};
use crate::model::expiry::ttl_cmds;
use crate::model::referrer::{clear_reference, delete_referrer};
use crate::model::{Model, Storage};
use crate::{Db, Error, Result};

/// The objects the reference fields among `set` name, as `db` stores
/// them: what a write of those fields needs to exist.
pub(crate) fn reference_guards<'a, M: Model>(
    db: &'a Db,
    set: &'a [(&str, Vec<u8>)],
) -> impl Iterator<Item = String> + 'a {
    references_in::<M>(set).map(|(_, target)| db.stored(target).into_owned())
}

/// The reference fields among `set`, with the plain key each names.
fn references_in<'a, M: Model>(
    set: &'a [(&str, Vec<u8>)],
) -> impl Iterator<Item = (&'static Reference, &'a str)> + 'a {
    set.iter().filter_map(|(name, text)| {
        let reference = M::REFERENCES.iter().find(|r| r.field == *name)?;
        Some((reference, std::str::from_utf8(text).ok()?))
    })
}

/// The commands that mark the targets of the reference fields among
/// `set` ([`REFS_FIELD`]) that share a slot with the object at `key` (as
/// stored), for the write's own atomic unit, where those targets are
/// guards: every target in the plain layout, and in the cluster layout a
/// target of the object's slot group (or under the same admin). A target
/// in another slot is marked after the write, by
/// [`recheck_references`].
pub(crate) fn reference_marks<'a, M: Model>(
    db: &'a Db,
    key: &'a str,
    set: &'a [(&str, Vec<u8>)],
) -> impl Iterator<Item = Cmd> + 'a {
    references_in::<M>(set)
        .filter(|(_, target)| in_unit(db, key, target))
        .map(|(reference, target)| mark(db, reference, target))
}

/// Whether the write of the object at `key` (as stored) holds the
/// reference target `target` (a plain key) in its own atomic unit: the
/// two share a slot.
fn in_unit(db: &Db, key: &str, target: &str) -> bool {
    db.shares_slot(key, &db.stored(target))
}

/// The mark a write of `reference` leaves on `target`: `HINCRBY target
/// _refs 1` on a hash, `APPEND target ""` on a single value (see
/// [`REFS_FIELD`]).
fn mark(db: &Db, reference: &Reference, target: &str) -> Cmd {
    let stored = db.stored(target);
    match reference.target {
        Storage::Hash => cmd("HINCRBY")
            .arg(stored.as_ref())
            .arg(REFS_FIELD)
            .arg(1)
            .owned(),
        Storage::Single => cmd("APPEND").arg(stored.as_ref()).arg("").owned(),
    }
}

/// The read a write of reference fields adds to its own atomic unit, first,
/// where [`recheck_references`] may have to undo it (the cluster layout):
/// whether the object exists and the fields the write changes, as they
/// are just before it.
pub(crate) struct PriorRead {
    names: Vec<&'static str>,
    exists: Cmd,
    fields: Cmd,
}

/// What [`PriorRead`] found: the state an undo restores.
pub(crate) struct Prior {
    existed: bool,
    /// Each field the write changes, with its text before (`None`: absent).
    fields: Vec<(&'static str, Option<Vec<u8>>)>,
}

impl PriorRead {
    /// The read for a write of `key` that changes `changed` (each field
    /// with its new text; `None`: removed); `None` where no recheck
    /// follows the write (no reference field set to a target in another
    /// slot).
    pub(crate) fn of<'t, M: Model>(
        db: &Db,
        key: &str,
        changed: impl IntoIterator<Item = (&'static str, Option<&'t [u8]>)>,
    ) -> Option<Self> {
        if db.one_slot() {
            return None;
        }
        let mut sets_reference = false;
        let names: Vec<&'static str> = changed
            .into_iter()
            .inspect(|(name, text)| {
                let elsewhere = |text: &[u8]| {
                    std::str::from_utf8(text).is_ok_and(|target| !in_unit(db, key, target))
                };
                // The cheap test first: only a reference field's target
                // has a slot to hash.
                sets_reference |=
                    M::REFERENCES.iter().any(|r| r.field == *name) && text.is_some_and(elsewhere);
            })
            .map(|(name, _)| name)
            .collect();
        sets_reference.then(|| PriorRead {
            exists: cmd("EXISTS").arg(key).owned(),
            fields: cmd("HMGET").arg(key).arg(&names).owned(),
            names,
        })
    }

    /// The read's commands, whose replies [`parse`](Self::parse) takes.
    pub(crate) fn cmds(&self) -> [&Cmd; 2] {
        [&self.exists, &self.fields]
    }

    /// Adds the read's commands, their replies kept, to `steps`.
    pub(crate) fn add_to(&self, steps: &mut Plan) {
        for read in self.cmds() {
            steps.add(read.clone());
        }
    }

    /// The prior state, from the first two kept replies of the write.
    pub(crate) fn parse(&self, kept: &[Value]) -> Result<Prior> {
        let [exists, fields, ..] = kept else {
            return Err(Error::Misuse(
                "a reference write's prior read has no reply".to_string(),
            ));
        };
        let existed: bool =
            redis::from_redis_value(exists.clone()).map_err(redis::RedisError::from)?;
        let texts: Vec<Option<Vec<u8>>> =
            redis::from_redis_value(fields.clone()).map_err(redis::RedisError::from)?;
        Ok(Prior {
            existed,
            fields: self.names.iter().copied().zip(texts).collect(),
        })
    }
}

/// In the cluster layout, the objects that reference fields name may be
/// in other slots: each of those is checked just before the write, not
/// with it (a target in the object's slot is a guard of the write's own
/// unit, marked there: see [`reference_marks`]). So after the write each
/// target in another slot is marked ([`REFS_FIELD`]), guarded by its
/// existence, in its own slot. A cascading delete WATCHes its admin while
/// it looks for referrers, so a mark that lands before its EXEC aborts
/// it, and the next attempt sees the reference (written before the mark).
///
/// A mark refused because the target is gone means the delete may not
/// have seen this write: the write is undone and fails with
/// [`Error::NotFound`], as if the target had been gone before it. What
/// undoing is depends on `prior` (the object as it was, read with the
/// write):
/// - the object existed: the fields the write changed get their old
///   texts back, if the reference still names the gone target; the
///   object it then names again is checked in turn;
/// - the object is new (or `prior` unknown): it is treated as the
///   target's delete would have treated it: an optional reference is
///   removed, and an object whose required reference names the gone
///   object is deleted (it would name nothing), in both cases only if it
///   still names it and the target is still gone.
pub(crate) async fn recheck_references<M: Model>(
    db: &Db,
    key: &str,
    set: &[(&str, Vec<u8>)],
    prior: Option<&Prior>,
) -> Result<()> {
    if db.one_slot() {
        return Ok(());
    }
    // Boxed: every write awaits this, and its future would otherwise carry
    // the cluster layout's reads for every write.
    Box::pin(recheck_across_slots::<M>(db, key, set, prior)).await
}

/// [`recheck_references`] in the cluster layout.
async fn recheck_across_slots<M: Model>(
    db: &Db,
    key: &str,
    set: &[(&str, Vec<u8>)],
    prior: Option<&Prior>,
) -> Result<()> {
    for (reference, target) in references_in::<M>(set) {
        if in_unit(db, key, target) || target_holds(db, reference, target).await? {
            continue;
        }
        match prior {
            Some(prior) if prior.existed => {
                restore::<M>(db, key, reference, target, prior).await?;
            }
            _ => orphan::<M>(db, key, reference, target).await?,
        }
        return Err(Error::NotFound {
            key: target.to_string(),
        });
    }
    Ok(())
}

/// Marks `target`, guarded by its existence. Whether it exists.
async fn target_holds(db: &Db, reference: &Reference, target: &str) -> Result<bool> {
    let mut unit = Plan::new();
    unit.step().guard(db.stored(target));
    unit.add_ignored(mark(db, reference, target));
    match unit.run::<()>(db).await {
        Ok(()) => Ok(true),
        Err(Error::NotFound { .. }) => Ok(false),
        Err(err) => Err(err),
    }
}

/// What the delete of `target` does to the object at `key` whose
/// `reference` names it.
async fn orphan<M: Model>(db: &Db, key: &str, reference: &Reference, target: &str) -> Result<()> {
    if reference.required {
        delete_referrer::<M>(db, key, reference.field, target).await?;
    } else {
        clear_reference(db, key, reference.field, target).await?;
    }
    Ok(())
}

/// Gives the fields of `prior` their old texts back, if the object at
/// `key` still exists and its `reference` still names `target`; then
/// checks the object the reference names again, as after any write.
async fn restore<M: Model>(
    db: &Db,
    key: &str,
    reference: &Reference,
    target: &str,
    prior: &Prior,
) -> Result<()> {
    let set: Vec<(&'static str, Vec<u8>)> = prior
        .fields
        .iter()
        .filter_map(|(name, text)| Some((*name, text.clone()?)))
        .collect();
    let removed: Vec<&'static str> = prior
        .fields
        .iter()
        .filter(|(_, text)| text.is_none())
        .map(|(name, _)| *name)
        .collect();
    let mut writes = Vec::new();
    if !removed.is_empty() {
        writes.push(cmd("HDEL").arg(key).arg(&removed).owned());
    }
    if !set.is_empty() {
        writes.push(cmd("HSET").arg(key).arg(&set).owned());
    }
    writes.extend(ttl_cmds::<M>(db, key, None, super::names(&set))?);
    // Only while the reference still names the gone target: a write that
    // named another one meanwhile stands.
    let still_names = cmd("HGET").arg(key).arg(reference.field).owned();
    let names_target = Value::BulkString(target.as_bytes().to_vec());
    let write = |steps: &mut Plan| {
        steps.expect(still_names.clone(), names_target.clone());
        for write in &writes {
            steps.add_ignored(write.clone());
        }
    };
    // Index entries change with the fields: the object's own write path
    // keeps them exact.
    let changes = Changes::Fields(
        prior
            .fields
            .iter()
            .map(|(name, text)| (*name, text.as_deref()))
            .collect(),
    );
    let guards = GuardKeys::from_iter([Cow::Borrowed(key)]);
    let restored = match index::run::<M, ()>(db, key, guards, &write, &changes).await {
        Ok(()) => true,
        Err(Error::NotFound { .. }) => false,
        Err(err) => return Err(err),
    };
    if !restored {
        return Ok(());
    }
    // The object names its old target again, which may have gone while
    // it named the other one.
    let again: Vec<(&str, Vec<u8>)> = set
        .into_iter()
        .filter(|(name, _)| *name == reference.field)
        .collect();
    match Box::pin(recheck_references::<M>(db, key, &again, None)).await {
        Ok(()) | Err(Error::NotFound { .. }) => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;
    use crate::KeyLayout;

    #[derive(Admin, Debug, Clone, PartialEq)]
    #[redmodel(table = "rcust")]
    struct Customer {
        #[redmodel(pk)]
        id: u32,
    }

    #[derive(Admin, Debug, Clone, PartialEq)]
    #[redmodel(table = "rorder")]
    struct Order {
        #[redmodel(pk)]
        id: u32,
        customer: Ref<Customer>,
        note: String,
    }

    /// An order with an index: its writes in the cluster layout run as
    /// ordered steps.
    #[derive(Admin, Debug, Clone, PartialEq)]
    #[redmodel(table = "rparcel")]
    struct Parcel {
        #[redmodel(pk)]
        id: u32,
        customer: Ref<Customer>,
        #[redmodel(unique)]
        code: String,
    }

    fn order(customer: u32, note: &str) -> Order {
        Order {
            id: 1,
            customer: Customer::at(customer),
            note: note.to_string(),
        }
    }

    /// Writes `set` to order 1 with its prior read, as `set` and `insert`
    /// run a write of a reference in the cluster layout. What it read.
    async fn write_with_prior(db: &Db, set: &[(&'static str, Vec<u8>)]) -> Result<Prior> {
        let key = db.stored("rorder:1");
        let read =
            PriorRead::of::<Order>(db, &key, set.iter().map(|(n, t)| (*n, Some(t.as_slice()))))
                .expect("a cluster layout write of a reference reads first");
        let mut plan = Plan::new();
        plan.step();
        read.add_to(&mut plan);
        plan.add_ignored(cmd("HSET").arg(key.as_ref()).arg(set).owned());
        let kept: Vec<Value> = plan.run(db).await?;
        read.parse(&kept)
    }

    /// A write of order 1 to customer 2 with a new note; then `gone` go
    /// before the recheck, as they do when their delete runs whole
    /// between the write's check and its mark. The order afterwards.
    async fn write_then_lose(db: &Db, gone: &[&str]) -> Result<Option<Order>> {
        let set = vec![("customer", b"rcust:2".to_vec()), ("note", b"new".to_vec())];
        let prior = write_with_prior(db, &set).await?;
        db.query::<()>(cmd("DEL").arg(gone)).await?;
        let key = db.stored("rorder:1");
        let err = recheck_references::<Order>(db, &key, &set, Some(&prior)).await;
        assert!(
            matches!(err, Err(Error::NotFound { ref key }) if key == "rcust:2"),
            "{err:?}"
        );
        Order::load(db, 1).await
    }

    #[tokio::test]
    async fn a_write_whose_new_target_goes_gives_an_existing_object_its_old_fields_back() {
        let db = Db::memory().with_key_layout(KeyLayout::Cluster);
        for id in [1, 2] {
            Customer { id }.insert(&db).await.unwrap();
        }
        order(1, "old").insert(&db).await.unwrap();
        let after = write_then_lose(&db, &["rcust:2"]).await.unwrap();
        assert_eq!(after, Some(order(1, "old")));
    }

    #[tokio::test]
    async fn a_write_whose_new_target_goes_deletes_a_new_object() {
        let db = Db::memory().with_key_layout(KeyLayout::Cluster);
        Customer { id: 2 }.insert(&db).await.unwrap();
        assert_eq!(write_then_lose(&db, &["rcust:2"]).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_restored_reference_whose_old_target_went_too_deletes_the_object() {
        let db = Db::memory().with_key_layout(KeyLayout::Cluster);
        for id in [1, 2] {
            Customer { id }.insert(&db).await.unwrap();
        }
        order(1, "old").insert(&db).await.unwrap();
        // Customer 1 goes while the order names customer 2: its delete
        // does not see the order.
        let after = write_then_lose(&db, &["rcust:1", "rcust:2"]).await.unwrap();
        assert_eq!(after, None, "it would name nothing");
    }

    #[tokio::test]
    async fn an_undo_of_an_indexed_object_leaves_a_reference_written_meanwhile() {
        let db = Db::memory().with_key_layout(KeyLayout::Cluster);
        for id in [1, 2, 3] {
            Customer { id }.insert(&db).await.unwrap();
        }
        let parcel = |customer, code: &str| Parcel {
            id: 1,
            customer: Customer::at(customer),
            code: code.to_string(),
        };
        parcel(1, "old").insert(&db).await.unwrap();
        let key = db.stored("rparcel:1").into_owned();
        let set = vec![("customer", b"rcust:2".to_vec()), ("code", b"new".to_vec())];
        let read = PriorRead::of::<Parcel>(&db, &key, set.iter().map(|(n, t)| (*n, Some(&t[..]))))
            .expect("a cluster layout write of a reference reads first");
        let mut plan = Plan::new();
        plan.step();
        read.add_to(&mut plan);
        plan.add_ignored(cmd("HSET").arg(&key).arg(&set).owned());
        let prior = read
            .parse(&plan.run::<Vec<Value>>(&db).await.unwrap())
            .unwrap();
        db.query::<()>(cmd("DEL").arg("rcust:2")).await.unwrap();
        // Another client names customer 3 while the undo runs (here as
        // soon as the undo first waits, after it has read the field).
        let moved = {
            let db = db.clone();
            let key = key.clone();
            tokio::spawn(async move {
                db.query::<()>(cmd("HSET").arg(&key).arg("customer").arg("rcust:3"))
                    .await
            })
        };
        let err = recheck_references::<Parcel>(&db, &key, &set, Some(&prior)).await;
        assert!(
            matches!(err, Err(Error::NotFound { ref key }) if key == "rcust:2"),
            "{err:?}"
        );
        moved.await.unwrap().unwrap();
        let after = Parcel::load(&db, 1)
            .await
            .unwrap()
            .expect("the parcel stays");
        assert_eq!(
            after.customer,
            Customer::at(3),
            "the other client's write stands"
        );
    }
}
