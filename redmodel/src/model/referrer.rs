//! The registry of referrers: where references to a model's objects may
//! be stored (the lists of relations whose members they are, the reference
//! fields of other models), filled by the derives at program start. The
//! cascading delete reads it to find what points at an admin; the write
//! path reads it to know a model's reference fields.

use super::key::glob_escape;
use super::object::ObjectRef;
use super::{Model, OwnerKind};

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
