//! A consistency check, and its repair, over every model and relation the
//! program declares (the derives register each one at start, as they do
//! for cascades).
//!
//! The write paths keep the data consistent (atomic units, existence
//! checks, ordered steps in the cluster layout), and the reads skip and
//! prune what a crash between two cluster-layout steps can leave. What a
//! write path cannot rule out — data written by another program or by an
//! older version, a crash image, a slot lost in a failover, keys that
//! expired under a relation — [`check`] finds and [`repair`] fixes, kind by
//! kind:
//!
//! | kind | what it is | repair |
//! |---|---|---|
//! | [`Kind::PartialObject`] | a hash of a model missing a required field and never fully written (no `_count`): what a field write racing a delete left before writes checked existence | deleted, if it is still partial (under WATCH) |
//! | [`Kind::Undecodable`] | an object that does not decode otherwise (a field of the wrong form, a required field missing from a counted object) | none: reported, as it needs a migration or a hand |
//! | [`Kind::OrphanedSubObject`] | a sub-object whose admin does not exist | deleted, if the admin is still missing (under WATCH) |
//! | [`Kind::DanglingReference`] | an optional reference field (`Option<Ref<M>>`) naming an object that does not exist | the field removed, if it still names it (what `on_delete = "clear"` does) |
//! | [`Kind::DanglingRequiredReference`] | a required reference field (`Ref<M>`) naming an object that does not exist | with `on_delete = "delete"`, the object deleted (with its subtree), if it still names it; with `restrict`, none: reported, as only a person knows which object it should name |
//! | [`Kind::OrphanedList`] | a relation list whose owner does not exist | deleted, if the owner is still missing |
//! | [`Kind::DeadMember`] | a relation member whose object does not exist | removed from the list, if still gone |
//! | [`Kind::OneSidedLink`] | a member whose inverse list lacks the owner, both existing | the missing side added (as `link` would have) |
//! | [`Kind::MissingIndexEntry`] | an object's unique value, score or tag not in its index, or its unique value held only by a pending claim (the cluster layout's first step, with its lease: a write stopped before its confirmation, whose claim would lapse) | the model's indexes rebuilt ([`rebuild_indexes`](super::migrate::rebuild_indexes)), which makes the entry permanent |
//! | [`Kind::StaleIndexEntry`] | an index entry naming a gone object, or a value, score or tag the object no longer has (a pending claim of an object not holding the value, not written yet, is not one: it lapses unless its write confirms it) | the same rebuild, whose prune removes it |
//!
//! Every repair re-checks under WATCH what it fixes, so an object written
//! meanwhile is left alone. Both walk the keyspace with SCAN (every master
//! on a cluster), never KEYS, batch by batch: the progress callback can
//! stop a pass after any batch, and [`check_from`] / [`repair_from`]
//! resume it there. A key may be seen twice by one pass (SCAN's rule), and
//! counted twice. [`repair`] ends with a second check, whose report says
//! what is left ([`Repair::after`]).
//!
//! ```standalone_crate
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), redmodel::Error> {
//! use redmodel::model::check::{check, repair, Kind};
//! use redmodel::prelude::*;
//!
//! #[derive(Admin)]
//! struct Player { #[redmodel(pk)] id: u32, #[redmodel(sorted)] points: i64 }
//!
//! let db = Db::memory();
//! Player { id: 1, points: 5 }.insert(&db).await?;
//! // Another program moved the score without the field.
//! db.query::<()>(redis::cmd("ZADD").arg("player:_sorted:points").arg(9).arg("player:1")).await?;
//!
//! let report = check(&db, |_| ()).await?;
//! assert_eq!(report.count(Kind::StaleIndexEntry), 1);
//! let fixed = repair(&db, |_| ()).await?;
//! assert!(fixed.after.is_clean());
//! # Ok(()) }
//! ```

pub(crate) mod declared;
mod models;
mod relations;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use redis::Value;

use super::migrate::Proceed;
use crate::command::cmd;
use crate::db::plan::checked::write_if;
use crate::{Db, Result};

/// The kinds of inconsistency a check finds: see the [module](self) docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A hash missing a required field, never fully written.
    PartialObject,
    /// An object that does not decode (reported, not repaired).
    Undecodable,
    /// A sub-object whose admin does not exist.
    OrphanedSubObject,
    /// An optional reference field naming an object that does not exist.
    DanglingReference,
    /// A required reference field naming an object that does not exist.
    DanglingRequiredReference,
    /// A relation list whose owner does not exist.
    OrphanedList,
    /// A relation member whose object does not exist.
    DeadMember,
    /// A relation member whose inverse list lacks the owner.
    OneSidedLink,
    /// An object's value missing from its index, or with a wrong score, or
    /// a unique value in it only as a pending claim.
    MissingIndexEntry,
    /// An index entry naming a gone object or a value it no longer has.
    StaleIndexEntry,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Kind::PartialObject => "partial object",
            Kind::Undecodable => "undecodable object",
            Kind::OrphanedSubObject => "orphaned sub-object",
            Kind::DanglingReference => "dangling reference",
            Kind::DanglingRequiredReference => "dangling required reference",
            Kind::OrphanedList => "orphaned relation list",
            Kind::DeadMember => "dead relation member",
            Kind::OneSidedLink => "one-sided link",
            Kind::MissingIndexEntry => "missing index entry",
            Kind::StaleIndexEntry => "stale index entry",
        };
        f.write_str(name)
    }
}

/// One inconsistency found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind it is.
    pub kind: Kind,
    /// The key it concerns, in plain form (the object, the list, the
    /// index entry).
    pub key: String,
    /// What is wrong, for a person.
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at `{}`: {}", self.kind, self.key, self.detail)
    }
}

/// How many examples of each kind a report keeps.
pub const EXAMPLES_PER_KIND: usize = 10;

/// What a check found: counts by kind, and the first examples of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Keys looked at (objects and lists).
    pub scanned: u64,
    /// How many of each kind.
    pub counts: BTreeMap<Kind, u64>,
    /// Up to [`EXAMPLES_PER_KIND`] findings of each kind.
    pub examples: Vec<Finding>,
    /// Where to resume, if the pass was stopped by its callback; `None`
    /// once it went through every declaration.
    pub resume: Option<Resume>,
}

impl Report {
    /// How many findings of `kind`.
    pub fn count(&self, kind: Kind) -> u64 {
        self.counts.get(&kind).copied().unwrap_or(0)
    }

    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.counts.values().all(|n| *n == 0)
    }

    pub(crate) fn found(&mut self, kind: Kind, key: &str, detail: impl Into<String>) {
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        if *n as usize <= EXAMPLES_PER_KIND {
            self.examples.push(Finding {
                kind,
                key: crate::layout::plain_key(key),
                detail: detail.into(),
            });
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_clean() {
            return write!(f, "{} keys checked: consistent", self.scanned);
        }
        write!(f, "{} keys checked:", self.scanned)?;
        for (kind, n) in &self.counts {
            write!(f, " {n} {kind};")?;
        }
        Ok(())
    }
}

/// What [`repair`] did: the findings it acted on, how many of each kind it
/// fixed, and the check that followed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repair {
    /// The check the repair worked from.
    pub before: Report,
    /// How many findings of each kind were fixed (a finding fixed by a
    /// concurrent write meanwhile is not counted).
    pub repaired: BTreeMap<Kind, u64>,
    /// A check after the repair: what is left (undecodable objects, and
    /// whatever concurrent writes did meanwhile).
    pub after: Report,
}

/// Where a pass is: which declaration, and the SCAN cursor within it. A
/// pass stopped by its callback says where to [`check_from`] /
/// [`repair_from`] again ([`Report::resume`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resume {
    /// The number of the declaration (in the order passes take them).
    pub declaration: usize,
    /// The SCAN cursor within it (0: from its start).
    pub cursor: u64,
}

/// Where a pass is, after each SCAN batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The Rust name of the declaration being checked.
    pub declaration: &'static str,
    /// How many declarations are done, out of `total`.
    pub done: usize,
    /// How many declarations the program has.
    pub total: usize,
    /// Keys looked at so far in this run.
    pub scanned: u64,
    /// Where to resume from, if the pass stops here.
    pub resume: Resume,
}

/// Checks every declared model and relation: see the [module](self) docs.
/// Reads only. `progress` is called after each SCAN batch; it returns `()`
/// to go on, or a [`ControlFlow`](std::ops::ControlFlow) to stop (the
/// report then says where to resume).
pub async fn check<P: Proceed>(db: &Db, progress: impl FnMut(&Progress) -> P) -> Result<Report> {
    check_from(db, Resume::default(), progress).await
}

/// [`check`] from where an earlier pass stopped.
pub async fn check_from<P: Proceed>(
    db: &Db,
    from: Resume,
    mut progress: impl FnMut(&Progress) -> P,
) -> Result<Report> {
    let mut report = Report::default();
    walk(db, from, None, &mut report, &mut progress).await?;
    Ok(report)
}

/// Checks and repairs every declared model and relation, by the rules of
/// the [module](self) docs, then checks again (unless `progress` stopped
/// the repair, which [`Repair::before`]'s `resume` then says).
pub async fn repair<P: Proceed>(db: &Db, progress: impl FnMut(&Progress) -> P) -> Result<Repair> {
    repair_from(db, Resume::default(), progress).await
}

/// [`repair`] from where an earlier pass stopped.
pub async fn repair_from<P: Proceed>(
    db: &Db,
    from: Resume,
    mut progress: impl FnMut(&Progress) -> P,
) -> Result<Repair> {
    let mut out = Repair::default();
    walk(
        db,
        from,
        Some(&mut out.repaired),
        &mut out.before,
        &mut progress,
    )
    .await?;
    if out.before.resume.is_none() {
        walk(db, from, None, &mut out.after, &mut progress).await?;
    }
    Ok(out)
}

/// One pass over the declarations from `from`, repairing if `repaired` is
/// given.
async fn walk<P: Proceed>(
    db: &Db,
    from: Resume,
    mut repaired: Option<&mut BTreeMap<Kind, u64>>,
    report: &mut Report,
    progress: &mut impl FnMut(&Progress) -> P,
) -> Result<()> {
    let all = declarations();
    let total = all.len();
    let mut cursor = from.cursor;
    for (i, declared) in all.into_iter().enumerate().skip(from.declaration) {
        let checker = (declared.checker)();
        let mut pass = Pass {
            db,
            baseline: index_findings(report),
            report,
            repaired: repaired.as_deref_mut(),
        };
        loop {
            cursor = checker.batch(&mut pass, cursor).await?;
            if cursor == 0 {
                checker.finish(&mut pass).await?;
            }
            let at = Progress {
                declaration: declared.rust_name,
                done: i + usize::from(cursor == 0),
                total,
                scanned: pass.report.scanned,
                resume: match cursor {
                    0 => Resume {
                        declaration: i + 1,
                        cursor: 0,
                    },
                    cursor => Resume {
                        declaration: i,
                        cursor,
                    },
                },
            };
            if !progress(&at).proceed() {
                if at.resume.declaration < total {
                    pass.report.resume = Some(at.resume);
                }
                return Ok(());
            }
            if cursor == 0 {
                break;
            }
        }
    }
    Ok(())
}

/// The declarations, in the order passes take them: objects before the
/// lists that name them, so that a repair deletes a partial object before
/// its entries are checked; by name within each.
fn declarations() -> Vec<&'static declared::Declared> {
    let mut all: Vec<&'static declared::Declared> =
        inventory::iter::<declared::Declared>.into_iter().collect();
    all.sort_by_key(|d| (d.kind != "model", d.rust_name));
    all
}

fn index_findings(report: &Report) -> u64 {
    report.count(Kind::MissingIndexEntry) + report.count(Kind::StaleIndexEntry)
}

/// What a checker works with: the db, the report, and whether to repair.
pub(crate) struct Pass<'a> {
    pub(crate) db: &'a Db,
    pub(crate) report: &'a mut Report,
    /// The index findings when this declaration's pass began.
    baseline: u64,
    repaired: Option<&'a mut BTreeMap<Kind, u64>>,
}

impl Pass<'_> {
    pub(crate) fn repairing(&self) -> bool {
        self.repaired.is_some()
    }

    /// Counts `n` findings of `kind` fixed.
    pub(crate) fn fixed(&mut self, kind: Kind, n: u64) {
        if let Some(repaired) = self.repaired.as_deref_mut() {
            *repaired.entry(kind).or_insert(0) += n;
        }
    }

    /// Index findings since this declaration's pass began.
    pub(crate) fn new_index_findings(&self) -> u64 {
        index_findings(self.report) - self.baseline
    }

    /// One SCAN batch of `pattern` (a glob on plain keys) from `cursor`:
    /// the next cursor (0 at the end) and the keys.
    pub(crate) async fn scan(&mut self, pattern: &str, cursor: u64) -> Result<(u64, Vec<String>)> {
        let (next, keys): (u64, Vec<Vec<u8>>) = self
            .db
            .query(
                cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(self.db.stored(pattern).as_ref())
                    .arg("COUNT")
                    .arg(SCAN_BATCH),
            )
            .await?;
        let keys: Vec<String> = keys
            .into_iter()
            .filter_map(|k| String::from_utf8(k).ok())
            .collect();
        self.report.scanned += keys.len() as u64;
        Ok((next, keys))
    }
}

/// The COUNT hint of each SCAN call.
const SCAN_BATCH: u32 = 500;

/// Deletes `key` (a sub-object, a relation list) if its `owner` is still
/// missing, as one checked write (one slot in either layout: the
/// owner's). Whether it did.
async fn delete_orphan(db: &Db, key: &str, owner: &str) -> Result<bool> {
    let mut exists = cmd("EXISTS");
    exists.arg(owner);
    let mut del = cmd("DEL");
    del.arg(key);
    let gone = |replies: &[Value]| Ok(matches!(replies, [Value::Int(0)]));
    write_if(db, key, &[key, owner], &[exists], &gone, &[del]).await
}

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// The check of one declared model or relation, reached through the
/// registry (the derives register [`models::checker`] /
/// [`relations::checker`] for each type).
#[doc(hidden)]
#[allow(private_interfaces)]
pub trait Checker: Send + Sync {
    /// Checks (and repairs, if the pass does) one SCAN batch of this
    /// declaration's keys from `cursor`: the next cursor, 0 at the end.
    fn batch<'a>(&'a self, pass: &'a mut Pass<'_>, cursor: u64) -> BoxFuture<'a, u64>;
    /// What follows the last batch (the index entries' side).
    fn finish<'a>(&'a self, pass: &'a mut Pass<'_>) -> BoxFuture<'a, ()>;
}

pub use declared::{conflicting_declarations, DeclarationConflict};
pub use models::checker as model_checker;
pub use relations::checker as relation_checker;
