//! Passes over every object of a model, for data that was written before
//! a declaration changed:
//!
//! - [`rebuild_indexes`]: an index was added to a model that already has
//!   objects (or an index must be repaired): SCAN the model's objects and
//!   write their entries, in pipelined batches, then prune the entries of
//!   objects that no longer hold their value;
//! - [`migrate`]: the model's fields changed (a field added with a
//!   default, renamed, or removed): SCAN the objects and rewrite each as
//!   the model now declares it, then update its index entries;
//! - [`drop_field_indexes`]: delete the index keys of a field that is no
//!   longer indexed (or no longer exists).
//!
//! Both passes walk the keyspace with SCAN (never KEYS), one batch per
//! SCAN call. Each batch is one optimistic transaction: its objects are
//! WATCHed, read, and written back in one MULTI/EXEC, and the batch is
//! retried if a concurrent write touched one of them, so a pass never
//! overwrites a newer write with older data. After each batch the
//! `progress` callback gets a [`Progress`] (objects done, an estimate of
//! the total, and the SCAN cursor to resume from); returning
//! `ControlFlow::Break(())` stops the pass, and [`PassOptions::resume`]
//! with the last cursor continues it later, in this process or another.
//! SCAN guarantees that every object present for the whole pass is seen
//! at least once; one may be seen twice, which both passes allow.
//!
//! Reading old data never needs a migration to *work*: a field missing
//! from a stored object decodes to its default when it has one
//! (`#[serde(default)]` or `#[redmodel(default)]`), so adding a field with
//! a default never breaks reading; [`migrate`] writes the default into
//! every object so that other programs (and redis-cli) see it too.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::ControlFlow;
use std::sync::{Mutex, PoisonError};

use redis::{Cmd, Value};

use super::index::unique::claim_commands;
use super::index::{checked_score, score_arg, IndexKind, IndexSpec};
use super::key::{glob_escape, key_pattern, sorted_key, tag_key, unique_key};
use super::live::holder_command;
use super::reply::reply_at;
use super::scan::scan_keys;
use super::write::{claim_held, sync, Texts};
use super::{Admin, Model, ObjectRef};
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::plan::checked::{self, Decide, Reader};
use crate::db::recall::Guess;
use crate::{Db, Error, Result};

/// Objects a batch could not handle: their keys, and why.
type Failed = Vec<(String, String)>;

/// Where a pass starts and how much it takes at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassOptions {
    /// The SCAN cursor to start from: 0 for a new pass, or the `cursor`
    /// of the last [`Progress`] to resume one.
    pub cursor: u64,
    /// The COUNT hint of each SCAN call: about how many keys one batch
    /// looks at.
    pub batch_size: u32,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions {
            cursor: 0,
            batch_size: 500,
        }
    }
}

impl PassOptions {
    /// A pass that resumes at `cursor` (from a [`Progress`] or a
    /// [`Report`]).
    pub fn resume(cursor: u64) -> Self {
        PassOptions {
            cursor,
            ..PassOptions::default()
        }
    }

    /// The same pass with batches of about `batch_size` keys.
    pub fn batch_size(self, batch_size: u32) -> Self {
        PassOptions {
            batch_size: batch_size.max(1),
            ..self
        }
    }
}

/// How far a pass is, after a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Objects handled so far in this run (a resumed run counts from 0).
    pub done: u64,
    /// An estimate of how many there are in all: the number of keys in the
    /// database when the pass started (DBSIZE), an upper bound, since the
    /// model's objects are a part of them. Never below `done`.
    pub total_estimate: u64,
    /// The SCAN cursor to resume from ([`PassOptions::resume`]); 0 once
    /// the pass is over.
    pub cursor: u64,
}

/// What a callback returns: `()` (go on), or a `ControlFlow` to stop the
/// pass after this batch.
pub trait Proceed {
    /// Whether to go on.
    fn proceed(self) -> bool;
}

impl Proceed for () {
    fn proceed(self) -> bool {
        true
    }
}

impl Proceed for ControlFlow<()> {
    fn proceed(self) -> bool {
        self.is_continue()
    }
}

/// A unique value that two objects hold, found by a pass: the first keeps
/// the entry, the other is reported (and has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueConflict {
    /// The object left without an entry.
    pub key: String,
    /// The unique field.
    pub field: &'static str,
    /// The value, as stored text.
    pub value: String,
    /// The object that holds the value.
    pub holder: String,
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Objects handled.
    pub objects: u64,
    /// Objects [`migrate`] rewrote (others were already as declared).
    pub rewritten: u64,
    /// Batches (SCAN calls).
    pub batches: u64,
    /// Unique values held by more than one object.
    pub conflicts: Vec<UniqueConflict>,
    /// Objects that could not be handled (a value that does not decode, a
    /// score that does not fit), with why; the pass went on without them.
    pub failed: Vec<(String, String)>,
    /// Entries removed by the final prune of each index.
    pub pruned: u64,
    /// The cursor to resume from; 0 when `finished`.
    pub cursor: u64,
    /// Whether the pass went through the whole keyspace (not stopped by
    /// the callback).
    pub finished: bool,
}

/// A change of a model's fields for [`migrate`]: renamed and removed
/// stored fields, and any other edit of the stored text.
#[derive(Default)]
pub struct Migration {
    renames: Vec<(String, String)>,
    removals: Vec<String>,
    edits: Vec<Edit>,
}

type Edit = Box<dyn Fn(&mut BTreeMap<String, Vec<u8>>) + Send + Sync>;

impl fmt::Debug for Migration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Migration")
            .field("renames", &self.renames)
            .field("removals", &self.removals)
            .field("edits", &self.edits.len())
            .finish()
    }
}

impl Migration {
    /// No change but the declared fields: objects are rewritten as the
    /// model declares them (missing fields with a default get it).
    pub fn new() -> Self {
        Migration::default()
    }

    /// The stored field `from` is now `to`: its text moves over (unless
    /// the object already has `to`).
    pub fn rename(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.renames.push((from.into(), to.into()));
        self
    }

    /// The stored field `name` is no longer declared: it is deleted.
    pub fn remove(mut self, name: impl Into<String>) -> Self {
        self.removals.push(name.into());
        self
    }

    /// Any other change, on the object's stored hash (field -> text),
    /// applied after renames and removals (convert a value's format, split
    /// a field, ...).
    pub fn edit(
        mut self,
        edit: impl Fn(&mut BTreeMap<String, Vec<u8>>) + Send + Sync + 'static,
    ) -> Self {
        self.edits.push(Box::new(edit));
        self
    }

    fn apply(&self, hash: &mut BTreeMap<String, Vec<u8>>) {
        for (from, to) in &self.renames {
            if let Some(text) = hash.remove(from) {
                hash.entry(to.clone()).or_insert(text);
            }
        }
        for name in &self.removals {
            hash.remove(name);
        }
        for edit in &self.edits {
            edit(hash);
        }
    }
}

/// Builds (or repairs) every declared index of `M` from the objects
/// stored: see the [module](self) docs. Recent lists are not rebuilt:
/// their order is that of writes, which stored objects do not record.
///
/// Entries are added and scores corrected batch by batch; when the pass
/// finishes, each index is pruned of entries whose object is gone or no
/// longer holds the value. A unique value held by two objects is kept by
/// the first one seen and reported in [`Report::conflicts`].
pub async fn rebuild_indexes<M: Admin, P: Proceed>(
    db: &Db,
    options: PassOptions,
    progress: impl FnMut(&Progress) -> P,
) -> Result<Report> {
    pass::<M, P>(db, options, None, progress).await
}

/// [`rebuild_indexes`] for any model (the consistency repair reaches
/// models through the registry, where only [`Model`] is known; a
/// sub-object model has no indexes, and this does nothing for it).
pub(crate) async fn rebuild_indexes_of<M: Model>(db: &Db) -> Result<Report> {
    if M::INDEXES.is_empty() {
        return Ok(Report {
            finished: true,
            ..Report::default()
        });
    }
    pass::<M, ()>(db, PassOptions::default(), None, |_| ()).await
}

/// Rewrites every object of `M` as the model now declares it, after
/// `migration`'s renames, removals and edits, and updates its index
/// entries: see the [module](self) docs. An object that does not decode
/// after the migration is left as it is and reported in
/// [`Report::failed`]. Undeclared fields the migration does not name are
/// left alone, and writes keep the objects' TTLs (HSET, HDEL). The
/// write count (`_count`) is not changed, and sync hooks are not called.
pub async fn migrate<M: Admin, P: Proceed>(
    db: &Db,
    migration: &Migration,
    options: PassOptions,
    progress: impl FnMut(&Progress) -> P,
) -> Result<Report> {
    pass::<M, P>(db, options, Some(migration), progress).await
}

/// Deletes every index key of the stored field `field` of the model with
/// table `table`, of every kind (`TABLE:_unique:FIELD:*`,
/// `TABLE:_sorted:FIELD`, `TABLE:_tag:FIELD:*`, `TABLE:_recent:FIELD`):
/// for a field that lost its index, or was renamed or removed. Returns
/// how many keys were deleted.
pub async fn drop_field_indexes(db: &Db, table: &str, field: &str) -> Result<u64> {
    let mut deleted = 0;
    for kind in [
        IndexKind::Unique,
        IndexKind::Sorted {
            score: |_| Ok(None),
        },
        IndexKind::Tags {
            tags: |_| Ok(Vec::new()),
        },
        IndexKind::Recent { cap: 1 },
    ] {
        let keys = scan_keys(db, &key_pattern(db, table, field, kind.name())).await?;
        for batch in keys.chunks(500) {
            deleted += if db.one_slot() {
                db.query::<u64>(cmd("DEL").arg(batch)).await?
            } else {
                // The keys are in many slots, and one DEL may not span
                // slots: one DEL per key, pipelined.
                let mut pipe = redis::pipe();
                for key in batch {
                    pipe.command("DEL").arg(key);
                }
                db.query_pipeline::<Vec<u64>>(&pipe).await?.iter().sum()
            };
        }
    }
    Ok(deleted)
}

/// The shared walk: SCAN the model's hashes batch by batch, migrate each
/// batch if asked, index it, report progress.
async fn pass<M: Model, P: Proceed>(
    db: &Db,
    options: PassOptions,
    migration: Option<&Migration>,
    mut progress: impl FnMut(&Progress) -> P,
) -> Result<Report> {
    let total: u64 = db.query(&cmd("DBSIZE")).await?;
    // As the database stores the keys: an admin of a slot group has a tag
    // in the cluster layout.
    let pattern = db
        .stored(&format!("{}:*", glob_escape(M::TABLE)))
        .into_owned();
    let mut report = Report::default();
    let mut cursor = options.cursor;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = db
            .query(
                cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(options.batch_size)
                    .arg("TYPE")
                    .arg("hash"),
            )
            .await?;
        let mut refs: Vec<ObjectRef<M>> = keys
            .iter()
            .filter_map(|k| std::str::from_utf8(k).ok())
            .filter_map(|k| ObjectRef::parse(k).ok())
            .collect();
        refs.sort();
        refs.dedup();
        // In the cluster layout, objects are in different slots: no batch
        // transaction can hold two of them.
        let batch = if db.one_slot() { refs.len().max(1) } else { 1 };
        if let Some(migration) = migration {
            for chunk in refs.chunks(batch) {
                let (rewritten, failed) = migrate_batch(db, chunk, migration).await?;
                report.rewritten += rewritten;
                report.failed.extend(failed);
            }
        }
        let (failed, conflicts) = if db.one_slot() {
            index_batch(db, &refs).await?
        } else {
            index_apart(db, &refs).await?
        };
        report.failed.extend(failed);
        report.conflicts.extend(conflicts);
        report.objects += refs.len() as u64;
        report.batches += 1;
        report.cursor = next;
        let go_on = progress(&Progress {
            done: report.objects,
            total_estimate: total.max(report.objects),
            cursor: next,
        })
        .proceed();
        if next == 0 {
            report.finished = true;
            break;
        }
        if !go_on {
            return Ok(report);
        }
        cursor = next;
    }
    report.pruned = prune_all::<M>(db).await?;
    Ok(report)
}

/// Prunes every index of `M` (a full pass each).
async fn prune_all<M: Model>(db: &Db) -> Result<u64> {
    use super::index::{RecentList, SortedIndex, TagIndex, UniqueIndex};
    let mut pruned = 0;
    for spec in M::INDEXES {
        pruned += match spec.kind {
            IndexKind::Unique => UniqueIndex::<M, String>::new(spec.field).prune(db).await?,
            IndexKind::Sorted { .. } => SortedIndex::<M, u64>::new(spec.field).prune(db).await?,
            IndexKind::Tags { .. } => {
                TagIndex::<M, Vec<String>>::new(spec.field)
                    .prune(db)
                    .await?
            }
            IndexKind::Recent { cap } => RecentList::<M>::new(spec.field, cap).prune(db).await?,
        };
    }
    Ok(pruned)
}

/// Rewrites one batch of objects as `M` declares them, after the
/// migration: one checked write ([`RewriteBatch`]), decided again on
/// conflict. Returns how many objects changed.
async fn migrate_batch<M: Model>(
    db: &Db,
    refs: &[ObjectRef<M>],
    migration: &Migration,
) -> Result<(u64, Failed)> {
    let Some(first) = refs.first() else {
        return Ok((0, Vec::new()));
    };
    let batch = RewriteBatch {
        db,
        refs,
        migration,
        outcome: Mutex::new((0, Vec::new())),
    };
    checked::run::<()>(db, &first.key_in(db), &[], &[], &batch).await?;
    Ok(take(&batch.outcome))
}

/// The last decision's outcome, kept in a decided write for its caller
/// (the decision that committed is the last one made).
fn take<T: Default>(outcome: &Mutex<T>) -> T {
    std::mem::take(&mut *outcome.lock().unwrap_or_else(PoisonError::into_inner))
}

/// One batch of a migration, decided on the objects' hashes: each object
/// is migrated, decoded and encoded again, and written back (HDEL of the
/// fields it lost, HSET of those that changed) if it changed. The outcome
/// is how many changed and those that failed to decode.
struct RewriteBatch<'a, M: Model> {
    db: &'a Db,
    refs: &'a [ObjectRef<M>],
    migration: &'a Migration,
    outcome: Mutex<(u64, Failed)>,
}

impl<M: Model> Decide for RewriteBatch<'_, M> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        // The keys as the database stores them (an admin of a slot group
        // has a tag in the cluster layout).
        let stored: Vec<Cow<'_, str>> = self.refs.iter().map(|r| r.key_in(self.db)).collect();
        let keys: Vec<&str> = stored.iter().map(|k| k.as_ref()).collect();
        let reads = keys
            .iter()
            .map(|key| {
                let mut read = cmd("HGETALL");
                read.arg(*key);
                read
            })
            .collect();
        let hashes = reader.read(&keys, reads, true).await?;
        let mut writes = Vec::new();
        let mut rewritten = 0;
        let mut failed = Vec::new();
        for ((r, key), hash) in self.refs.iter().zip(&keys).zip(hashes) {
            let Ok(before) = redis::from_redis_value::<BTreeMap<String, Vec<u8>>>(hash) else {
                continue;
            };
            if before.is_empty() {
                continue;
            }
            let mut after = before.clone();
            self.migration.apply(&mut after);
            let values = M::FIELDS.iter().map(|f| after.get(*f).cloned()).collect();
            let object = match r.decode(values) {
                Ok(object) => object,
                Err(err) => {
                    failed.push((r.key().to_string(), err.to_string()));
                    continue;
                }
            };
            let encoded = object.encode_fields(r.key())?;
            for (name, text) in M::FIELDS.iter().zip(encoded) {
                match text {
                    Some(text) => after.insert(name.to_string(), text),
                    None => after.remove(*name),
                };
            }
            if after == before {
                continue;
            }
            rewritten += 1;
            let gone: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
            if !gone.is_empty() {
                let mut hdel = cmd("HDEL");
                hdel.arg(*key).arg(gone);
                writes.push(hdel);
            }
            let changed: Vec<(&String, &Vec<u8>)> = after
                .iter()
                .filter(|(k, v)| before.get(*k) != Some(*v))
                .collect();
            if !changed.is_empty() {
                // HSET clears a field's TTL: the declared ones are given
                // again, as every write of those fields does.
                let names = changed.iter().map(|(k, _)| k.as_str());
                let ttls = super::expiry::ttl_cmds::<M>(self.db, key, None, names)?;
                let mut hset = cmd("HSET");
                hset.arg(*key).arg(changed);
                writes.push(hset);
                writes.extend(ttls);
            }
        }
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = (rewritten, failed);
        Ok(writes)
    }

    fn first_guess(&self) -> Guess {
        Guess::Nothing
    }
}

/// A unique value an object of a batch claims.
struct Claim<'k> {
    /// The entry's key.
    entry: String,
    field: &'static str,
    value: String,
    /// The claiming object's key.
    claimant: &'k str,
}

/// Writes the index entries of one batch of objects: ZADD of their
/// scores, SADD to their tags' sets, their unique entries (claiming
/// values no live object holds); one checked write ([`IndexBatch`]),
/// decided again on conflict.
async fn index_batch<M: Model>(
    db: &Db,
    refs: &[ObjectRef<M>],
) -> Result<(Failed, Vec<UniqueConflict>)> {
    let specs: Vec<&IndexSpec> = M::INDEXES
        .iter()
        .filter(|s| !matches!(s.kind, IndexKind::Recent { .. }))
        .collect();
    let Some(first) = refs.first().filter(|_| !specs.is_empty()) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let batch = IndexBatch {
        db,
        refs,
        specs,
        outcome: Mutex::new((Vec::new(), Vec::new())),
    };
    checked::run::<()>(db, &first.key_in(db), &[], &[], &batch).await?;
    Ok(take(&batch.outcome))
}

/// One batch of [`index_batch`], decided on the objects' indexed fields
/// and the holders of the unique values they claim. The outcome is the
/// objects whose fields do not encode and the unique values another live
/// object holds.
struct IndexBatch<'a, M: Model> {
    db: &'a Db,
    refs: &'a [ObjectRef<M>],
    specs: Vec<&'static IndexSpec>,
    outcome: Mutex<(Failed, Vec<UniqueConflict>)>,
}

impl<M: Model> Decide for IndexBatch<'_, M> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        let fields: Vec<&str> = self.specs.iter().map(|s| s.field).collect();
        // The keys as the database stores them (an admin of a slot group
        // has a tag in the cluster layout).
        let stored: Vec<Cow<'_, str>> = self.refs.iter().map(|r| r.key_in(self.db)).collect();
        let keys: Vec<&str> = stored.iter().map(|k| k.as_ref()).collect();
        let reads = keys
            .iter()
            .map(|key| {
                let mut read = cmd("HMGET");
                read.arg(*key).arg(&fields);
                read
            })
            .collect();
        let rows: Vec<Vec<Option<Vec<u8>>>> = reader
            .read(&keys, reads, true)
            .await?
            .into_iter()
            .map(|v| redis::from_redis_value(v).unwrap_or_default())
            .collect();

        let mut write = redis::pipe();
        let mut failed = Vec::new();
        let mut claims = Vec::new();
        for (key, row) in keys.iter().zip(&rows) {
            for (spec, text) in self.specs.iter().zip(row) {
                if let Some(claim) =
                    plan_entry::<M>(self.db, spec, key, text.as_deref(), &mut write, &mut failed)
                {
                    claims.push(claim);
                }
            }
        }
        let conflicts = settle_claims(reader, &claims, &mut write).await?;
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = (failed, conflicts);
        Ok(write.cmd_iter().cloned().collect())
    }

    fn first_guess(&self) -> Guess {
        Guess::Nothing
    }
}

/// [`index_batch`] in the cluster layout, object by object, where each
/// object's entries are in other slots than the object: its indexed fields
/// are read, its unique values claimed (each entry on its own) and its
/// sorted and tag entries brought in step (see `write::stepped`).
async fn index_apart<M: Model>(
    db: &Db,
    refs: &[ObjectRef<M>],
) -> Result<(Failed, Vec<UniqueConflict>)> {
    let specs: Vec<&'static IndexSpec> = M::INDEXES
        .iter()
        .filter(|s| !matches!(s.kind, IndexKind::Recent { .. }))
        .collect();
    let fields: Vec<&str> = specs.iter().map(|s| s.field).collect();
    let mut failed = Vec::new();
    let mut conflicts = Vec::new();
    if specs.is_empty() {
        return Ok((failed, conflicts));
    }
    for r in refs {
        let key = r.key_in(db);
        let texts: Texts = db.query(cmd("HMGET").arg(&*key).arg(&fields)).await?;
        let mut scratch = redis::pipe();
        for (spec, text) in specs.iter().zip(&texts) {
            let claim = plan_entry::<M>(db, spec, &key, text.as_deref(), &mut scratch, &mut failed);
            let Some(claim) = claim else {
                continue;
            };
            match claim_held::<M>(db, &claim.entry, &key, claim.field, &claim.value).await {
                Ok(()) => {}
                Err(Error::Unique { holder, .. }) => conflicts.push(UniqueConflict {
                    key: key.to_string(),
                    field: claim.field,
                    value: claim.value,
                    holder,
                }),
                Err(other) => return Err(other),
            }
        }
        sync::<M>(db, &key, &specs, texts.clone(), texts).await?;
    }
    Ok((failed, conflicts))
}

/// Adds to `write` the entry of the object `key` in the index `spec`,
/// given its field's stored text; a unique value is returned as a claim
/// to settle. What cannot be indexed goes to `failed`.
fn plan_entry<'k, M: Model>(
    db: &Db,
    spec: &IndexSpec,
    key: &'k str,
    text: Option<&[u8]>,
    write: &mut redis::Pipeline,
    failed: &mut Vec<(String, String)>,
) -> Option<Claim<'k>> {
    let field = spec.field;
    let mut fail = |reason: String| failed.push((key.to_string(), format!("`{field}`: {reason}")));
    match spec.kind {
        IndexKind::Sorted { score } => {
            let index = sorted_key(db, M::TABLE, field);
            let score = text
                .map(score)
                .transpose()
                .map(Option::flatten)
                .and_then(|s| {
                    s.map(|s| checked_score(field, s).map_err(|e| e.to_string()))
                        .transpose()
                });
            match score {
                Ok(Some(s)) => write.command("ZADD").arg(index).arg(score_arg(s)).arg(key),
                Ok(None) => write.command("ZREM").arg(index).arg(key),
                Err(reason) => {
                    fail(reason);
                    write.command("ZREM").arg(index).arg(key)
                }
            }
            .ignore();
            None
        }
        IndexKind::Tags { tags } => {
            match text.map(tags).transpose() {
                Ok(list) => {
                    for tag in list.unwrap_or_default() {
                        write
                            .command("SADD")
                            .arg(tag_key(db, M::TABLE, field, &tag))
                            .arg(key)
                            .ignore();
                    }
                }
                Err(reason) => fail(reason),
            }
            None
        }
        IndexKind::Unique => match std::str::from_utf8(text?) {
            Ok(value) => Some(Claim {
                entry: unique_key(db, M::TABLE, field, value),
                field,
                value: value.to_string(),
                claimant: key,
            }),
            Err(_) => {
                fail("the value is not UTF-8 text".to_string());
                None
            }
        },
        IndexKind::Recent { .. } => None,
    }
}

/// Round 2 of an index batch: WATCH the claimed unique entries, read their
/// holders and whether those still hold the value, and add a claim for each
/// claim that no other live object holds (within the batch, the first
/// claimant of a value keeps it). Returns the claims refused.
async fn settle_claims<R: Reader>(
    reader: &R,
    claims: &[Claim<'_>],
    write: &mut redis::Pipeline,
) -> Result<Vec<UniqueConflict>> {
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    let entries: Vec<&str> = claims.iter().map(|c| c.entry.as_str()).collect();
    let holders: Vec<Option<String>> = reader
        .read(
            &entries,
            entries.iter().map(|entry| holder_command(entry)).collect(),
            true,
        )
        .await?
        .into_iter()
        .zip(&entries)
        .map(|(reply, entry)| reply_at(entry, "list", Some(reply)))
        .collect::<Result<_>>()?;
    let rivals: Vec<(&Claim, &String)> = claims
        .iter()
        .zip(&holders)
        .filter_map(|(c, h)| {
            h.as_ref()
                .filter(|h| h.as_str() != c.claimant)
                .map(|h| (c, h))
        })
        .collect();
    let mut live: HashMap<&str, bool> = HashMap::new();
    if !rivals.is_empty() {
        let reads = rivals
            .iter()
            .map(|(claim, holder)| {
                let mut read = cmd("HGET");
                read.arg(*holder).arg(claim.field);
                read
            })
            .collect();
        let values = reader.read(&[], reads, true).await?;
        for ((claim, _), value) in rivals.iter().zip(values) {
            let holds = matches!(value, Value::BulkString(v) if v == claim.value.as_bytes());
            live.insert(claim.entry.as_str(), holds);
        }
    }
    let mut taken: HashMap<&str, &str> = HashMap::new();
    let mut conflicts = Vec::new();
    for (claim, holder) in claims.iter().zip(&holders) {
        let live_holder = holder
            .as_deref()
            .filter(|h| *h != claim.claimant && live.get(claim.entry.as_str()) == Some(&true));
        match live_holder.or_else(|| taken.get(claim.entry.as_str()).copied()) {
            Some(h) if h != claim.claimant => conflicts.push(UniqueConflict {
                key: claim.claimant.to_string(),
                field: claim.field,
                value: claim.value.clone(),
                holder: h.to_string(),
            }),
            _ => {
                taken.insert(&claim.entry, claim.claimant);
                write.ignored(claim_commands(&claim.entry, claim.claimant));
            }
        }
    }
    Ok(conflicts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migration_renames_removes_and_edits() {
        let m = Migration::new()
            .rename("nick", "name")
            .rename("old", "kept")
            .remove("legacy")
            .edit(|h| {
                if let Some(v) = h.get_mut("name") {
                    v.make_ascii_uppercase();
                }
            });
        let mut hash: BTreeMap<String, Vec<u8>> = [
            ("nick", "ken"),
            ("old", "x"),
            ("kept", "y"),
            ("legacy", "z"),
            ("other", "w"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
        m.apply(&mut hash);
        let shown: Vec<(String, String)> = hash
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
            .collect();
        assert_eq!(
            shown,
            [
                ("kept".to_string(), "y".to_string()),
                ("name".to_string(), "KEN".to_string()),
                ("other".to_string(), "w".to_string()),
            ]
        );
        assert!(format!("{m:?}").contains("nick"));
    }

    #[test]
    fn options() {
        assert_eq!(PassOptions::default().cursor, 0);
        assert_eq!(PassOptions::resume(42).cursor, 42);
        assert_eq!(PassOptions::default().batch_size(0).batch_size, 1);
        assert!(().proceed());
        assert!(!ControlFlow::Break(()).proceed());
    }
}
