//! Queries over a model's declared indexes: filters combined on the
//! server, an order, keyset pages and streams.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), redmodel::Error> {
//! use redmodel::prelude::*;
//!
//! #[derive(redmodel::Admin, Debug)]
//! struct Book {
//!     #[redmodel(pk)]
//!     id: u32,
//!     #[redmodel(sorted)]
//!     year: u16,
//!     #[redmodel(tags)]
//!     tags: Vec<String>,
//! }
//!
//! let db = Db::memory();
//! for (id, year, tags) in [(1, 2019, ["rust", "async"]), (2, 2021, ["rust", "async"]), (3, 2023, ["rust", "web"])] {
//!     Book { id, year, tags: tags.map(String::from).to_vec() }.insert(&db).await?;
//! }
//! let query = Book::query()
//!     .filter(Book::TAGS_TAGS.has_all(["rust", "async"]))
//!     .filter(Book::YEAR_SORTED.within(2020..=2024))
//!     .order_by(Book::YEAR_SORTED.desc())
//!     .limit(20);
//! let page = query.page(&db, None).await?;
//! assert_eq!(page.items.iter().map(|b| b.id).collect::<Vec<_>>(), [2]);
//! assert!(page.next.is_none());
//! assert_eq!(Book::query().filter(Book::TAGS_TAGS.has("rust")).count(&db).await?, 3);
//! # Ok(()) }
//! ```
//!
//! How a page runs on each backend, and what it costs, is the `db`
//! layer's (`db/query.rs`): one round trip for the keys on the memory
//! engine and on one server, then one to load the objects.

mod cursor;
mod filter;
mod stream;

use std::fmt;
use std::marker::PhantomData;

use futures_util::Stream;

pub use cursor::Cursor;
pub use filter::{Filter, OrderBy};
pub(crate) use filter::{Kind, TagOp};

pub(crate) use stream::paged;

use crate::db::query::{After, Bounds, Order, Source, Test, Walk};
use crate::model::live::parse_member;
use crate::model::{Model, ObjectRef, OwnerKind as _};
use crate::{Db, Error, Result};

/// The most items one page may hold: a larger [`Query::limit`] is
/// [`Error::Query`].
pub const MAX_PAGE: usize = 1000;

/// The most results [`Query::keys`] and [`Query::load`] return at once: a
/// query with more is [`Error::Query`] (never a silently cut list); page
/// through it ([`Query::page`]) or stream it ([`Query::stream`]).
pub const MAX_RESULTS: usize = 10_000;

/// How many keys one SCAN call of a model's stream
/// ([`ObjectRef::stream`]) asks the server to look at.
pub const STREAM_PAGE: u64 = 1000;

/// How many items a page holds when no [`limit`](Query::limit) is set.
pub const DEFAULT_PAGE: usize = 100;

/// One page of a query: its items, and the cursor of the next page
/// (`None` on the last).
#[derive(Debug)]
pub struct Page<T> {
    /// The items, in the query's order.
    pub items: Vec<T>,
    /// Where the next page starts; `None` if this page is the last.
    pub next: Option<Cursor>,
}

/// A query over the declared indexes of `M` (see the [module](self)):
/// made with [`Query::new`] (or `Model::query()` on an admin model),
/// narrowed with [`filter`](Self::filter), ordered with
/// [`order_by`](Self::order_by), then run: [`count`](Self::count),
/// [`keys`](Self::keys), [`load`](Self::load), [`page`](Self::page),
/// [`stream`](Self::stream).
///
/// Every filter must hold (AND). A query needs a filter to start from (a
/// unique value, a score range, tags it has, a recent list) or an order
/// by a sorted field; one with neither is [`Error::Query`] (to read every
/// object, stream the model: [`ObjectRef::stream`]). Ordering by a sorted
/// field keeps only objects that have a value in it.
///
/// Results are the objects that exist: an index entry left by an object
/// that expired or was deleted outside the library is passed over.
pub struct Query<M> {
    filters: Vec<Filter<M>>,
    order: Option<OrderBy<M>>,
    limit: usize,
    _marker: PhantomData<fn() -> M>,
}

impl<M> fmt::Debug for Query<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Query")
            .field("filters", &self.filters)
            .field("order", &self.order)
            .field("limit", &self.limit)
            .finish()
    }
}

impl<M: Model> Default for Query<M> {
    fn default() -> Self {
        Self::new()
    }
}

/// A query's plan: the walk of its pages (without a place or a limit),
/// or `None` when no object can answer (a value nobody holds, tags from
/// an empty list), and the walk's fingerprint for its cursors.
struct Plan {
    walk: Option<Walk>,
    fingerprint: u64,
}

impl<M: Model> Query<M> {
    /// A query with no filter yet, in key order, [`DEFAULT_PAGE`] items a
    /// page.
    pub fn new() -> Self {
        Query {
            filters: Vec::new(),
            order: None,
            limit: DEFAULT_PAGE,
            _marker: PhantomData,
        }
    }

    /// Adds a filter: the results must pass it too.
    pub fn filter(mut self, filter: Filter<M>) -> Self {
        self.filters.push(filter);
        self
    }

    /// Orders the results by a sorted field (the last call counts).
    pub fn order_by(mut self, order: OrderBy<M>) -> Self {
        self.order = Some(order);
        self
    }

    /// How many items a page ([`page`](Self::page), [`stream`](Self::stream))
    /// holds: 1 to [`MAX_PAGE`], else the query fails with [`Error::Query`].
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// The plan of the query in `db`'s key layout.
    fn plan(&self, db: &Db) -> Result<Plan> {
        let mut uniques = Vec::new();
        let mut ranges: Vec<(String, Bounds)> = Vec::new();
        let mut all: Vec<Vec<String>> = Vec::new();
        let mut any: Vec<Vec<String>> = Vec::new();
        let mut none: Vec<String> = Vec::new();
        let mut lists = Vec::new();
        let mut empty = false;
        let stored = |k: &str| db.stored(k).into_owned();
        for filter in &self.filters {
            match &filter.kind {
                Err(err) => return Err(copy_error(err)),
                Ok(Kind::Equals { entry: None }) => empty = true,
                Ok(Kind::Equals { entry: Some(e) }) => uniques.push(stored(e)),
                Ok(Kind::Within { key, bounds }) => {
                    let key = stored(key);
                    match ranges.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, b)) => *b = b.and(*bounds),
                        None => ranges.push((key, *bounds)),
                    }
                }
                Ok(Kind::Tags { op, sets }) => {
                    let sets: Vec<String> = sets.iter().map(|s| stored(s)).collect();
                    match op {
                        TagOp::All if sets.is_empty() => {}
                        TagOp::All => all.push(sets),
                        TagOp::Any if sets.is_empty() => empty = true,
                        TagOp::Any => any.push(sets),
                        TagOp::None => none.extend(sets),
                    }
                }
                Ok(Kind::Recent { key }) => lists.push(stored(key)),
            }
        }
        if empty {
            // No object answers: nothing to walk, whatever the rest.
            return Ok(Plan {
                walk: None,
                fingerprint: 0,
            });
        }
        let order = self.order.as_ref().map(|o| (stored(&o.key), o.desc));
        let mut tests = Vec::new();
        // The source: the fewest candidates it can name in the order
        // asked. A unique value names one object; ordered by a score, the
        // sorted set is walked in order.
        let (source, order) = if let Some(entry) = uniques.first() {
            if let Some((key, _)) = &order
                && !ranges.iter().any(|(k, _)| k == key)
            {
                ranges.push((key.clone(), Bounds::ALL));
            }
            (Source::Holder(entry.clone()), Order::Key)
        } else if let Some((key, desc)) = order {
            let at = ranges.iter().position(|(k, _)| *k == key);
            let bounds = at.map_or(Bounds::ALL, |i| ranges.remove(i).1);
            (Source::Scores { key, bounds }, Order::Score { desc })
        } else if !all.is_empty() {
            // The tag sets of one field are in one slot: one SINTER.
            let first = all.remove(0);
            (
                Source::Sets {
                    keys: first,
                    all: true,
                },
                Order::Key,
            )
        } else if !ranges.is_empty() {
            let (key, bounds) = ranges.remove(0);
            (Source::Scores { key, bounds }, Order::Key)
        } else if !any.is_empty() {
            (
                Source::Sets {
                    keys: any.remove(0),
                    all: false,
                },
                Order::Key,
            )
        } else if !lists.is_empty() {
            (Source::List(lists.remove(0)), Order::Key)
        } else {
            return Err(Error::Query {
                reason: format!(
                    "a query of `{}` needs a filter to start from (a unique value, a score range, tags it has, a recent list) or an order by a sorted field; to read every object, stream the model",
                    M::TABLE
                ),
            });
        };
        let held = match &source {
            Source::Holder(_) => 1,
            _ => 0,
        };
        tests.extend(uniques.into_iter().skip(held).map(Test::Holder));
        tests.extend(
            ranges
                .into_iter()
                .map(|(key, bounds)| Test::Score { key, bounds }),
        );
        for sets in all {
            tests.extend(sets.into_iter().map(|key| Test::InSet { key, has: true }));
        }
        tests.extend(any.into_iter().map(Test::InAnySet));
        tests.extend(none.into_iter().map(|key| Test::InSet { key, has: false }));
        tests.extend(lists.into_iter().map(Test::InList));
        let walk = Walk {
            source,
            tests,
            order,
            after: None,
            limit: None,
        };
        let fingerprint = cursor::fingerprint(&format!(
            "{}|{:?}|{:?}|{:?}",
            M::TABLE,
            walk.source,
            walk.tests,
            walk.order
        ));
        Ok(Plan {
            walk: Some(walk),
            fingerprint,
        })
    }

    /// The page size, checked.
    fn page_size(&self) -> Result<usize> {
        if self.limit == 0 || self.limit > MAX_PAGE {
            return Err(Error::Query {
                reason: format!("a page holds 1 to {MAX_PAGE} items, not {}", self.limit),
            });
        }
        Ok(self.limit)
    }

    /// How many objects answer the query (the walk on the server; no
    /// object is loaded).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "query_count"))]
    pub async fn count(&self, db: &Db) -> Result<u64> {
        let Some(walk) = self.plan(db)?.walk else {
            return Ok(0);
        };
        Ok(walk.run(db).await?.items.len() as u64)
    }

    /// The handles of every object that answers, in the query's order: at
    /// most [`MAX_RESULTS`], else [`Error::Query`].
    pub async fn keys(&self, db: &Db) -> Result<Vec<ObjectRef<M>>> {
        let Some(mut walk) = self.plan(db)?.walk else {
            return Ok(Vec::new());
        };
        walk.limit = Some(MAX_RESULTS);
        let found = walk.run(db).await?;
        if found.more {
            return Err(Error::Query {
                reason: format!(
                    "the query of `{}` has more than {MAX_RESULTS} results; page through it (`page`) or stream it (`stream`)",
                    M::TABLE
                ),
            });
        }
        refs::<M>(&found.items)
    }

    /// Every object that answers, in the query's order, loaded in one
    /// batch after the keys: at most [`MAX_RESULTS`], else
    /// [`Error::Query`]. One that does not decode (bad data) fails the
    /// read; one deleted since the keys were read is left out.
    pub async fn load(&self, db: &Db) -> Result<Vec<M>> {
        let refs = self.keys(db).await?;
        load(db, &refs).await?.into_iter().collect()
    }

    /// The page after `cursor` (the first page if `None`): its handles and
    /// the next page's cursor, in one round trip on the memory engine and
    /// on one server.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "query_page"))]
    pub async fn page_keys(&self, db: &Db, cursor: Option<&Cursor>) -> Result<Page<ObjectRef<M>>> {
        let limit = self.page_size()?;
        let plan = self.plan(db)?;
        let Some(mut walk) = plan.walk else {
            return Ok(Page {
                items: Vec::new(),
                next: None,
            });
        };
        if let Some(cursor) = cursor {
            if cursor.query != plan.fingerprint {
                return Err(Error::Query {
                    reason: "the cursor belongs to another query".to_string(),
                });
            }
            walk.after = Some(After {
                score: cursor.score,
                key: cursor.key.clone(),
            });
        }
        walk.limit = Some(limit);
        let found = walk.run(db).await?;
        let next = match (found.more, found.items.last()) {
            (true, Some((key, score))) => Some(Cursor {
                query: plan.fingerprint,
                score: *score,
                key: key.clone(),
            }),
            _ => None,
        };
        Ok(Page {
            items: refs::<M>(&found.items)?,
            next,
        })
    }

    /// The page after `cursor`, its objects loaded in one batch after the
    /// keys: two round trips on the memory engine and on one server. An
    /// object deleted between the two is left out (the page is then
    /// shorter; the cursor stays right). One that does not decode fails
    /// the page: see [`page_each`](Self::page_each).
    pub async fn page(&self, db: &Db, cursor: Option<&Cursor>) -> Result<Page<M>> {
        let page = self.page_each(db, cursor).await?;
        Ok(Page {
            items: page.items.into_iter().collect::<Result<_>>()?,
            next: page.next,
        })
    }

    /// Like [`page`](Self::page), with one result per object: one that
    /// does not decode is an error in its own place.
    pub async fn page_each(&self, db: &Db, cursor: Option<&Cursor>) -> Result<Page<Result<M>>> {
        let keys = self.page_keys(db, cursor).await?;
        Ok(Page {
            items: load(db, &keys.items).await?,
            next: keys.next,
        })
    }

    /// Every object that answers, as a stream fetched a page at a time
    /// (memory bounded by the [`limit`](Self::limit)), each item its own
    /// result; an error of a page's request ends the stream after it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use futures_util::StreamExt as _;
    /// use redmodel::prelude::*;
    /// #[derive(redmodel::Admin, Debug)]
    /// struct Player { #[redmodel(pk)] id: u32, #[redmodel(sorted)] score: u32 }
    ///
    /// let db = Db::memory();
    /// for id in 0..50 {
    ///     Player { id, score: id * 10 }.insert(&db).await?;
    /// }
    /// let query = Player::query().order_by(Player::SCORE_SORTED.desc()).limit(7);
    /// let best: Vec<Player> = query.stream(&db).take(3).map(|p| p.unwrap()).collect().await;
    /// assert_eq!(best.iter().map(|p| p.id).collect::<Vec<_>>(), [49, 48, 47]);
    /// assert_eq!(query.stream(&db).count().await, 50);
    /// # Ok(()) }
    /// ```
    pub fn stream(&self, db: &Db) -> impl Stream<Item = Result<M>> + Send + Unpin + 'static + use<M>
    where
        M: Send + 'static,
    {
        let start = (self.clone(), db.clone(), None);
        stream::paged(
            start,
            |(query, db, cursor): (Self, Db, Option<Cursor>)| async move {
                let page = query.page_each(&db, cursor.as_ref()).await?;
                let next = page.next.map(|c| (query, db, Some(c)));
                Ok((page.items, next))
            },
        )
    }
}

impl<M> Clone for Query<M> {
    fn clone(&self) -> Self {
        Query {
            filters: self.filters.clone(),
            order: self.order.clone(),
            limit: self.limit,
            _marker: PhantomData,
        }
    }
}

impl<M: Model> ObjectRef<M> {
    /// Every object of this model as a stream, fetched a page at a time
    /// (a SCAN call of [`STREAM_PAGE`]
    /// keys, on every master of a cluster, then one batch of reads), so
    /// that memory stays bounded however many objects there are. Each
    /// item is its own result (an object that does not decode is an error
    /// in its place); one deleted meanwhile is left out. As SCAN, an
    /// object that exists throughout is returned, possibly twice if the
    /// keyspace is resized meanwhile (in key order within a page only).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use futures_util::TryStreamExt as _;
    /// use redmodel::prelude::*;
    /// #[derive(redmodel::Admin, Debug)]
    /// struct Visit { #[redmodel(pk)] id: u32, page: String }
    ///
    /// let db = Db::memory();
    /// for id in 0..300 {
    ///     Visit { id, page: "/".into() }.insert(&db).await?;
    /// }
    /// let mut n = 0;
    /// let mut visits = Visit::stream(&db);
    /// while let Some(visit) = visits.try_next().await? {
    ///     assert_eq!(visit.page, "/");
    ///     n += 1;
    /// }
    /// assert_eq!(n, 300);
    /// # Ok(()) }
    /// ```
    pub fn stream(
        db: &Db,
    ) -> impl futures_util::Stream<Item = Result<M>> + Send + Unpin + 'static + use<M>
    where
        M: Send + 'static,
    {
        let pattern = format!(
            "{}{}:*",
            M::Owner::any_owner_pattern(),
            crate::model::key::glob_escape(M::TABLE)
        );
        let pattern = db.stored(&pattern).into_owned();
        scan_stream(db.clone(), pattern)
    }
}

/// The objects whose stored keys match `pattern`, a SCAN call and a batch
/// of reads a page (see [`ObjectRef::stream`]).
fn scan_stream<M: Model + Send + 'static>(
    db: Db,
    pattern: String,
) -> impl Stream<Item = Result<M>> + Send + Unpin + 'static {
    stream::paged((db, pattern, 0u64), |(db, pattern, cursor)| async move {
        let (next, keys): (u64, Vec<String>) = db
            .read(
                crate::command::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(STREAM_PAGE),
            )
            .await?;
        let mut refs: Vec<ObjectRef<M>> = keys
            .iter()
            .filter_map(|key| ObjectRef::parse(key).ok())
            .collect();
        refs.sort();
        refs.dedup();
        let items = load(&db, &refs).await?;
        Ok((items, (next != 0).then_some((db, pattern, next))))
    })
}

/// The handles of a walk's items.
fn refs<M: Model>(items: &[(String, f64)]) -> Result<Vec<ObjectRef<M>>> {
    items
        .iter()
        .map(|(key, _)| parse_member::<M>(key, M::TABLE))
        .collect()
}

/// The objects of `refs` in one batch, each its own result; those gone
/// are left out.
async fn load<M: Model>(db: &Db, refs: &[ObjectRef<M>]) -> Result<Vec<Result<M>>> {
    Ok(ObjectRef::load_many_each(db, refs)
        .await?
        .into_iter()
        .filter_map(Result::transpose)
        .collect())
}

/// A filter's deferred error, given again each time the query runs (the
/// query keeps its filters).
fn copy_error(err: &Error) -> Error {
    match err {
        Error::Encode { key, field, reason } => Error::Encode {
            key: key.clone(),
            field: field.clone(),
            reason: reason.clone(),
        },
        Error::ScoreOverflow {
            name,
            value,
            reason,
        } => Error::ScoreOverflow {
            name: name.clone(),
            value: value.clone(),
            reason: reason.clone(),
        },
        other => Error::Query {
            reason: other.to_string(),
        },
    }
}
