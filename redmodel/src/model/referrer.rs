//! The registry of referrers: where references to a model's objects may
//! be stored (the lists of relations whose members they are, the reference
//! fields of other models), filled by the derives at program start. The
//! cascading delete reads it to find what points at an admin; the write
//! path reads it to know a model's reference fields.

use super::key::glob_escape;
use super::object::ObjectRef;
use super::{Model, OwnerKind};
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::optimistic::{watched, RawTransaction};
use crate::{Db, Result};

/// What `on_delete` says about a referrer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDelete {
    /// Deleting the target removes the reference (the default).
    Cascade,
    /// Deleting a target that is still referred to is refused.
    Restrict,
}

/// Where references to a model's objects may be stored.
#[derive(Debug)]
pub enum ReferrerKind {
    /// The lists of a relation (`member = Target`).
    List {
        /// The relation's owner table.
        owner_table: &'static str,
        /// The relation's table.
        table: &'static str,
    },
    /// A reference field of a model.
    Field {
        /// The hash field.
        field: &'static str,
        /// The SCAN pattern of the model's objects.
        pattern: fn() -> String,
        /// Whether a key is an object key of the model.
        is_object: fn(&str) -> bool,
    },
}

/// One place that can point at objects of the model `target`, registered
/// by the derives.
#[derive(Debug)]
pub struct Referrer {
    /// The table of the model pointed at.
    pub target: &'static str,
    /// Cascade or restrict.
    pub on_delete: OnDelete,
    /// Where the references are.
    pub kind: ReferrerKind,
}

// The derives submit one `Referrer` per relation and reference field; the
// `inventory` crate gathers them across the program at start-up, so a
// model defined anywhere is known to the delete of the model it points at.
inventory::collect!(Referrer);

/// The registered referrers of the model with table `target`.
pub fn referrers_of(target: &str) -> Vec<&'static Referrer> {
    inventory::iter::<Referrer>
        .into_iter()
        .filter(|r| r.target == target)
        .collect()
}

/// The SCAN pattern of a model's objects, for a field referrer.
#[doc(hidden)]
pub fn object_pattern<M: Model>() -> String {
    format!(
        "{}{}:*",
        M::Owner::any_owner_pattern(),
        glob_escape(M::TABLE)
    )
}

/// Whether `key` is an object key of `M`, for a field referrer.
#[doc(hidden)]
pub fn is_object_of<M: Model>(key: &str) -> bool {
    ObjectRef::<M>::parse(key).is_ok()
}

/// Removes the reference field `field` of `hash` if it still names `key`
/// and the object `key` does not exist (as the cascade removes a relation member).
pub(crate) async fn clear_reference(db: &Db, hash: &str, field: &str, key: &str) -> Result<()> {
    if_absent(db, hash, key, |tx| async move {
        let (named,): (Option<String>,) = tx
            .query_pipeline(redis::pipe().command("HGET").arg(hash).arg(field))
            .await?;
        if named.as_deref() != Some(key) {
            return Ok(Some(()));
        }
        let mut del = redis::pipe();
        del.atomic().command("HDEL").arg(hash).arg(field).ignore();
        tx.exec::<()>(&del).await
    })
    .await
}

/// Runs `write` (which ends with its EXEC) on `holder`, WATCHed, if the
/// object `key` does not exist: WATCHed with it in the plain layout, read
/// just before in the cluster layout (another slot).
pub(crate) async fn if_absent<F, Fut>(db: &Db, holder: &str, key: &str, write: F) -> Result<()>
where
    F: Fn(RawTransaction) -> Fut,
    Fut: std::future::Future<Output = Result<Option<()>>>,
{
    let write = &write;
    watched(db, holder, |tx| async move {
        let exists: bool = if db.shares_slot(holder, key) {
            let (exists,): (bool,) = tx
                .watch_then(&[holder, key], |read| {
                    read.command("EXISTS").arg(key);
                })
                .await?;
            exists
        } else {
            tx.watch(holder).await?;
            db.query(cmd("EXISTS").arg(key)).await?
        };
        if exists {
            return Ok(Some(()));
        }
        write(tx).await
    })
    .await
}
