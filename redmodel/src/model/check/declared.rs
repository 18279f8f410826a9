//! The registry of declarations: every model and relation the derives
//! compiled into the program, with the keys it owns, so that two of them
//! claiming the same keys (and reading each other's objects: a `scan` of
//! one returning the other's) can be found when the program starts, with
//! [`conflicting_declarations`].
//!
//! The check is a call of the program's, not an automatic refusal: two
//! versions of one model on one table are how a migration reads old data
//! (`migrate` tests do exactly that), and a test binary that gathers
//! several example programs holds each one's models.

use super::Checker;
use crate::model::key::glob_escape;
use crate::model::relation::RelationRef;
use crate::model::{Model, OwnerKind, Relation};

/// One declared model or relation, registered by its derive.
#[doc(hidden)]
#[derive(Debug)]
pub struct Declared {
    /// The Rust path of the type, for the message.
    pub rust_name: &'static str,
    /// What it is: "model" or "relation".
    pub kind: &'static str,
    /// The SCAN pattern of its keys (`teacher:*`, `student:*:exam:*`,
    /// `teacher:*:class`), minus a final `:*`: two declarations conflict
    /// when these are equal.
    pub namespace: fn() -> String,
    /// Its consistency check ([`check`](super)).
    pub checker: fn() -> Box<dyn Checker>,
}

inventory::collect!(Declared);

/// The namespace of a model's objects: `teacher`, `student:*:exam`.
#[doc(hidden)]
pub fn model_namespace<M: Model>() -> String {
    format!("{}{}", M::Owner::any_owner_pattern(), glob_escape(M::TABLE))
}

/// The namespace of a relation's lists: `teacher:*:class`.
#[doc(hidden)]
pub fn relation_namespace<R: Relation>() -> String {
    RelationRef::<R>::scan_pattern()
}

/// Two declarations that store their keys at the same place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclarationConflict {
    /// The keys both claim, as a SCAN pattern without its final `:*`
    /// (`book`, `student:*:exam`, `teacher:*:class`).
    pub keys: String,
    /// The first declaration: its kind ("model" or "relation") and Rust
    /// path.
    pub first: (&'static str, &'static str),
    /// The second one.
    pub second: (&'static str, &'static str),
}

impl std::fmt::Display for DeclarationConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} `{}` and the {} `{}` both store their keys at `{}`",
            self.first.0, self.first.1, self.second.0, self.second.1, self.keys
        )
    }
}

/// Every pair of models or relations of the program (as the derives
/// registered them) that store their keys at the same place: two models
/// with one `table` (under the same owner), or a relation and a
/// sub-object with one name under one admin. Empty for a sound program;
/// call it once at start, or in a test:
///
/// ```standalone_crate
/// # use redmodel::prelude::*;
/// #[derive(Admin)]
/// struct Teacher { #[redmodel(pk)] id: String, name: String }
///
/// mod legacy {
///     # use redmodel::prelude::*;
///     #[derive(Admin)]
///     #[redmodel(table = "teacher")]
///     pub struct OldTeacher { #[redmodel(pk)] pub id: String }
/// }
///
/// let conflicts = redmodel::model::conflicting_declarations();
/// assert_eq!(conflicts.len(), 1);
/// assert_eq!(conflicts[0].keys, "teacher");
/// ```
pub fn conflicting_declarations() -> Vec<DeclarationConflict> {
    let mut all: Vec<(String, &'static Declared)> = inventory::iter::<Declared>
        .into_iter()
        .map(|d| ((d.namespace)(), d))
        .collect();
    all.sort_by(|a, b| (&a.0, a.1.rust_name).cmp(&(&b.0, b.1.rust_name)));
    all.windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| DeclarationConflict {
            keys: w[0].0.clone(),
            first: (w[0].1.kind, w[0].1.rust_name),
            second: (w[1].1.kind, w[1].1.rust_name),
        })
        .collect()
}
