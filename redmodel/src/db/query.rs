//! A query's key page as a db primitive: which index entries to start
//! from (a [`Source`]), which entries every candidate must pass
//! ([`Test`]s), in which order, after which item, how many. The model
//! layer ([`model::query`](crate::model::query)) says what a query is; this
//! module decides how the page is found on each backend and key layout:
//!
//! | where | how | round trips for the keys |
//! |---|---|---|
//! | memory engine, plain layout | the walk run natively under the engine's lock ([`Db::atomically`]) | 1 |
//! | one server, plain layout | the walk as one Lua script ([`lua`]) | 1 |
//! | cluster layout (Redis Cluster, or one node holding it), or a server refusing scripts | the walk as steps from the client, each a pipeline ([`walk`]) | 2 per chunk of candidates |
//!
//! The walk is the same everywhere: candidates come from the source in
//! the query's order a chunk at a time; each is kept if it passes every
//! test (set membership, a score within bounds, the holder of a unique
//! value, a place in a recent list) and its object exists; the walk stops
//! once it holds the page and one more (to tell whether a next page
//! exists). Set and sorted-set algebra thus runs on the server, and only
//! the page's keys travel.
//!
//! On Redis Cluster a model's index keys are in several slots (the tag
//! sets of one field share one, a sorted index or a recent list has its
//! own, and every object its own), so no script can hold them. There each
//! chunk is two pipelined steps: the source's next candidates from the
//! source's slot, then one pipeline of every test and existence check,
//! which the cluster client splits by node. The result equals one node's:
//! the order and the tests are the same; only atomicity differs (a chunk's
//! tests see the data a moment after the chunk was read).

mod lua;
mod walk;

use redis::Value;

use crate::db::plan::checked::Native;
use crate::{Db, Error, Result};

pub(crate) use walk::Found;

/// A score range, each end open or closed (infinite ends are unbounded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Bounds {
    pub(crate) min: f64,
    pub(crate) min_open: bool,
    pub(crate) max: f64,
    pub(crate) max_open: bool,
}

impl Bounds {
    /// Every score.
    pub(crate) const ALL: Bounds = Bounds {
        min: f64::NEG_INFINITY,
        min_open: false,
        max: f64::INFINITY,
        max_open: false,
    };

    /// Whether `score` is within the bounds.
    pub(crate) fn contains(&self, score: f64) -> bool {
        let above = if self.min_open {
            score > self.min
        } else {
            score >= self.min
        };
        let below = if self.max_open {
            score < self.max
        } else {
            score <= self.max
        };
        above && below
    }

    /// The bounds that hold both `self` and `other`'s scores.
    pub(crate) fn and(self, other: Bounds) -> Bounds {
        let (min, min_open) = if other.min > self.min || (other.min == self.min && other.min_open) {
            (other.min, other.min_open)
        } else {
            (self.min, self.min_open)
        };
        let (max, max_open) = if other.max < self.max || (other.max == self.max && other.max_open) {
            (other.max, other.max_open)
        } else {
            (self.max, self.max_open)
        };
        Bounds {
            min,
            min_open,
            max,
            max_open,
        }
    }
}

/// Where a query's candidates come from (stored keys).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Source {
    /// The holder of a unique entry (a list of one key).
    Holder(String),
    /// The members of a sorted set with a score within the bounds.
    Scores { key: String, bounds: Bounds },
    /// The members of every set (`all`), or of any.
    Sets { keys: Vec<String>, all: bool },
    /// The members of a list.
    List(String),
}

/// What a candidate must pass (stored keys).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Test {
    /// In the set (`has`), or not in it.
    InSet { key: String, has: bool },
    /// In at least one of the sets.
    InAnySet(Vec<String>),
    /// In the sorted set, with a score within the bounds.
    Score { key: String, bounds: Bounds },
    /// The holder of the unique entry.
    Holder(String),
    /// In the list.
    InList(String),
}

/// The order of a query's items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// By stored key, in byte order.
    Key,
    /// By the source's score (a [`Source::Scores`]), then by stored key;
    /// highest first if `desc`.
    Score { desc: bool },
}

/// The last item of the previous page: the next starts after it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct After {
    /// Its score (unused in key order).
    pub(crate) score: f64,
    /// Its stored key.
    pub(crate) key: String,
}

/// One page of a query: what the model layer describes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Walk {
    pub(crate) source: Source,
    pub(crate) tests: Vec<Test>,
    pub(crate) order: Order,
    pub(crate) after: Option<After>,
    /// How many items at most (`None`: all).
    pub(crate) limit: Option<usize>,
}

impl Walk {
    /// The page: up to `limit` items in order, each a stored key with its
    /// score (0 in key order), and whether more follow.
    pub(crate) async fn run(&self, db: &Db) -> Result<Found> {
        if let Order::Score { .. } = self.order
            && !matches!(self.source, Source::Scores { .. })
        {
            return Err(Error::Misuse(
                "a walk in score order starts from a sorted set".to_string(),
            ));
        }
        if self.in_one_slot(db) {
            if let Some(found) = self.run_now(db) {
                return found.map_err(|e| *e);
            }
            if let Some(found) = lua::run(db, self).await? {
                return Ok(found);
            }
        }
        walk::walk(&mut walk::Steps(db), self).await
    }

    /// Every key the walk reads (the holders a unique entry names aside:
    /// an object's key, in its model's slot group when its index is).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        let source = match &self.source {
            Source::Holder(key) | Source::Scores { key, .. } | Source::List(key) => {
                std::slice::from_ref(key)
            }
            Source::Sets { keys, .. } => keys.as_slice(),
        };
        let tests = self.tests.iter().flat_map(|test| match test {
            Test::InSet { key, .. }
            | Test::Score { key, .. }
            | Test::Holder(key)
            | Test::InList(key) => std::slice::from_ref(key),
            Test::InAnySet(keys) => keys.as_slice(),
        });
        source.iter().chain(tests).map(String::as_str)
    }

    /// Whether one atomic unit can read every key of the walk: always in
    /// the plain layout; in the cluster layout, where every key is an
    /// index of a slot group (whose objects, the holders a unique entry
    /// names, share its slot too) and all are in one slot, so the walk is
    /// one script there too.
    fn in_one_slot(&self, db: &Db) -> bool {
        if db.one_slot() {
            return true;
        }
        let layout = db.key_layout();
        let mut keys = self.keys();
        let Some(first) = keys.next() else {
            return false;
        };
        layout.one_slot_with_indexes(first)
            && keys.all(|key| layout.one_slot_with_indexes(key) && db.shares_slot(first, key))
    }

    /// In process, the walk under the engine's lock; `None` on a server.
    fn run_now(&self, db: &Db) -> Option<Native<Found>> {
        db.atomically(|tx| {
            use futures_util::FutureExt as _;
            walk::walk(&mut walk::InProcess(tx), self)
                .now_or_never()
                .unwrap_or_else(|| {
                    Err(Error::Misuse(
                        "a walk in process waited on a round trip".to_string(),
                    ))
                })
                .map_err(Box::new)
        })
    }
}

/// A reply's error as [`Error`], any other reply as it is.
fn checked(reply: Value) -> Result<Value> {
    Ok(reply.extract_error()?)
}
