//! The registry of referrers: where references to a model's objects may
//! be stored (the lists of relations whose members they are, the reference
//! fields of other models), filled by the derives at program start. The
//! cascading delete reads it to find what points at an admin; the write
//! path reads it to know a model's reference fields.

use super::key::glob_escape;
use super::object::ObjectRef;
use super::{Admin, Model, OwnerKind, Storage};
use crate::command::AddCommand as _;
use crate::command::{cmd, Owned};
use crate::db::plan::checked;
use crate::{Db, Result};
use redis::{Cmd, Value};
use std::future::Future;
use std::pin::Pin;

/// What `on_delete` says about a referrer: what deleting the object it
/// points at does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDelete {
    /// A relation's default: the delete removes the member from the lists.
    Cascade,
    /// The delete is refused while the referrer points at the object: the
    /// default of a required reference field (`Ref<M>`).
    Restrict,
    /// The delete removes the reference field: the default of an optional
    /// one (`Option<Ref<M>>`), and only allowed there.
    Clear,
    /// The delete deletes the referring object first, with its subtree.
    Delete,
}

/// Deletes the object at a plain key of the model a reference field
/// belongs to (an admin with its subtree, as
/// [`delete_cascade`](super::ObjectRef::delete_cascade) does): what
/// `on_delete = "delete"` does to a referrer. Whether it existed.
/// The plain keys given are those of the deletes already under way that
/// lead to this one (see `delete_cascade`), which it leaves to them.
pub type DeleteFn = for<'a> fn(&'a Db, String, &'a [String]) -> BoxFuture<'a, bool>;

/// A boxed future of a [`Result`], `Send`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// A model's reference field, as its writes and the consistency check
/// see it (`Model::REFERENCES`).
#[derive(Debug, Clone, Copy)]
pub struct Reference {
    /// The hash field.
    pub field: &'static str,
    /// What deleting the target does.
    pub on_delete: OnDelete,
    /// Whether the field is required (`Ref<M>`, not an `Option`).
    pub required: bool,
    /// How the target is stored, which says how a write of the reference
    /// marks it (see [`REFS_FIELD`]).
    pub target: Storage,
}

/// The hash field of a target that every write of a reference to it
/// increments, in the write's atomic unit: the cascading delete WATCHes
/// the target, so a reference written while it looks for referrers
/// aborts its EXEC rather than being missed. A single-value target (a
/// string, with no field to count in) is marked by `APPEND key ""`, a
/// write of the key that changes none of its bytes and aborts a WATCH of
/// it all the same.
pub const REFS_FIELD: &str = "_refs";

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
        /// Deletes an object of the model, for `on_delete = "delete"`.
        delete: DeleteFn,
    },
}

/// One place that can point at objects of the model `target`, registered
/// by the derives.
#[derive(Debug)]
pub struct Referrer {
    /// The table of the model pointed at.
    pub target: &'static str,
    /// What deleting the target does to it.
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

/// Deletes the admin at the plain key `key` with its subtree, for a
/// referrer registration.
#[doc(hidden)]
pub fn delete_admin<'a, A: Admin>(
    db: &'a Db,
    key: String,
    chain: &'a [String],
) -> BoxFuture<'a, bool> {
    Box::pin(async move {
        match ObjectRef::<A>::parse(&key) {
            Ok(object) => object.delete_within(db, chain).await,
            Err(_) => Ok(false),
        }
    })
}

/// Deletes the sub-object at the plain key `key`, for a referrer
/// registration.
#[doc(hidden)]
pub fn delete_object<'a, M: Model>(
    db: &'a Db,
    key: String,
    _chain: &'a [String],
) -> BoxFuture<'a, bool> {
    Box::pin(async move {
        match ObjectRef::<M>::parse(&key) {
            Ok(object) => object.delete(db).await,
            Err(_) => Ok(false),
        }
    })
}

/// Named in the code a derive generates for `on_delete = "cascade"` on a
/// reference field, so that the compiler warns there.
#[doc(hidden)]
#[deprecated(
    note = "`on_delete = \"cascade\"` on a reference field is `on_delete = \"clear\"`: write that instead"
)]
pub const fn on_delete_cascade_on_a_reference_field() {}

/// The registered `on_delete = "delete"` function of `M`'s objects, found
/// through any reference field of `M`.
pub(crate) fn delete_fn_of<M: Model>() -> Option<DeleteFn> {
    let pattern = object_pattern::<M>();
    inventory::iter::<Referrer>
        .into_iter()
        .find_map(|r| match r.kind {
            ReferrerKind::Field {
                pattern: p, delete, ..
            } if p() == pattern => Some(delete),
            _ => None,
        })
}

/// Removes the reference field `field` of `hash` if it still names
/// `target` (a plain key) and the object `target` does not exist (as the
/// cascade removes a relation member).
pub(crate) async fn clear_reference(db: &Db, hash: &str, field: &str, target: &str) -> Result<()> {
    let named = cmd("HGET").arg(hash).arg(field).owned();
    let names_target = |replies: &[Value]| -> Result<bool> {
        Ok(matches!(replies.first(), Some(Value::BulkString(t)) if t == target.as_bytes()))
    };
    let clear = cmd("HDEL").arg(hash).arg(field).owned();
    write_if_absent(
        db,
        hash,
        &db.stored(target),
        &[named],
        &names_target,
        &[clear],
    )
    .await
}

/// Deletes the object of `M` at `hash` (as stored) if its reference
/// field `field` still names `target` (a plain key) and the object
/// `target` does not exist, both checked just before: what
/// `on_delete = "delete"` does to a referrer its target's delete missed,
/// and what a required reference to a gone object leaves. Whether it did.
pub(crate) async fn delete_referrer<M: Model>(
    db: &Db,
    hash: &str,
    field: &str,
    target: &str,
) -> Result<bool> {
    let mut read = redis::pipe();
    read.command("HGET")
        .arg(hash)
        .arg(field)
        .command("EXISTS")
        .arg(db.stored(target).as_ref());
    let (named, exists): (Option<String>, bool) = if db.shares_slot(hash, &db.stored(target)) {
        db.query_pipeline(&read).await?
    } else {
        let named = db.query(cmd("HGET").arg(hash).arg(field)).await?;
        (
            named,
            db.query(cmd("EXISTS").arg(db.stored(target).as_ref()))
                .await?,
        )
    };
    if exists || named.as_deref() != Some(target) {
        return Ok(false);
    }
    match delete_fn_of::<M>() {
        Some(delete) => delete(db, crate::layout::plain_key(hash), &[]).await,
        None => Ok(false),
    }
}

/// Writes `writes` on `holder` if the replies of `reads` (on `holder`)
/// satisfy `when` and the object `key` (as stored) does not exist, as one
/// checked write: `key` is read with them where it shares their slot (the
/// plain layout), and just before in the cluster layout (another slot).
pub(crate) async fn write_if_absent(
    db: &Db,
    holder: &str,
    key: &str,
    reads: &[Cmd],
    when: &(dyn Fn(&[Value]) -> Result<bool> + Sync),
    writes: &[Cmd],
) -> Result<()> {
    if !db.shares_slot(holder, key) {
        if db.query::<bool>(cmd("EXISTS").arg(key)).await? {
            return Ok(());
        }
        checked::write_if(db, holder, &[holder], reads, when, writes).await?;
        return Ok(());
    }
    let mut reads = reads.to_vec();
    reads.push(cmd("EXISTS").arg(key).owned());
    let when_absent = |replies: &[Value]| -> Result<bool> {
        let Some((exists, replies)) = replies.split_last() else {
            return Ok(false);
        };
        Ok(matches!(exists, Value::Int(0)) && when(replies)?)
    };
    checked::write_if(db, holder, &[holder, key], &reads, &when_absent, writes).await?;
    Ok(())
}
