//! What a query asks of an object: a filter or an order, each made by the
//! typed handle of a declared index (so that a filter on a field without
//! an index, or of another model, does not compile).

use std::fmt;
use std::marker::PhantomData;

use crate::db::query::Bounds;
use crate::Result;

/// A condition on the objects of `M`, made by an index handle:
///
/// | handle | filters |
/// |---|---|
/// | [`UniqueIndex`](crate::model::UniqueIndex) | [`equals`](crate::model::UniqueIndex::equals) |
/// | [`SortedIndex`](crate::model::SortedIndex) | [`within`](crate::model::SortedIndex::within) (a Rust range) |
/// | [`TagIndex`](crate::model::TagIndex) | [`has`](crate::model::TagIndex::has), [`has_all`](crate::model::TagIndex::has_all), [`has_any`](crate::model::TagIndex::has_any), [`has_none`](crate::model::TagIndex::has_none) |
/// | [`RecentList`](crate::model::RecentList) | [`contains`](crate::model::RecentList::contains) |
///
/// A value that cannot be an index entry (a tag that is not UTF-8, a
/// score past 2^53) makes the query fail when it runs, with the encoding
/// error, having read nothing.
pub struct Filter<M> {
    pub(super) kind: Result<Kind>,
    _marker: PhantomData<fn() -> M>,
}

impl<M> fmt::Debug for Filter<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Ok(kind) => write!(f, "Filter({kind:?})"),
            Err(err) => write!(f, "Filter(error: {err})"),
        }
    }
}

/// Which tags a tag filter asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TagOp {
    /// Every one of them (one tag: `has`).
    All,
    /// At least one.
    Any,
    /// None of them.
    None,
}

/// A filter's content, with index keys in plain form.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    /// The unique entry's holder (`None`: a value no object holds).
    Equals { entry: Option<String> },
    /// A score within bounds in the sorted set `key`.
    Within { key: String, bounds: Bounds },
    /// Tags of one field: the sets' keys.
    Tags { op: TagOp, sets: Vec<String> },
    /// In the recent list `key`.
    Recent { key: String },
}

impl<M> Clone for Filter<M> {
    fn clone(&self) -> Self {
        Filter::new(
            self.kind
                .as_ref()
                .map(Clone::clone)
                .map_err(super::copy_error),
        )
    }
}

impl<M> Filter<M> {
    pub(crate) fn new(kind: Result<Kind>) -> Self {
        Filter {
            kind,
            _marker: PhantomData,
        }
    }
}

/// The order of a query's results, made by a sorted index handle
/// ([`asc`](crate::model::SortedIndex::asc),
/// [`desc`](crate::model::SortedIndex::desc)): by the field's score, ties by
/// key. Without one, results come in key order (byte order of the keys as
/// stored).
pub struct OrderBy<M> {
    pub(super) key: String,
    pub(super) desc: bool,
    _marker: PhantomData<fn() -> M>,
}

impl<M> fmt::Debug for OrderBy<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = if self.desc { "desc" } else { "asc" };
        write!(f, "OrderBy({} {dir})", self.key)
    }
}

impl<M> Clone for OrderBy<M> {
    fn clone(&self) -> Self {
        OrderBy::new(self.key.clone(), self.desc)
    }
}

impl<M> OrderBy<M> {
    pub(crate) fn new(key: String, desc: bool) -> Self {
        OrderBy {
            key,
            desc,
            _marker: PhantomData,
        }
    }
}
