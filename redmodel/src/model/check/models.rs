//! The check of one model: its objects (partial, undecodable, orphaned,
//! with dangling references) and its index entries, both ways (each
//! object's values in the indexes; each entry naming an object that holds
//! its value).

use std::collections::BTreeSet;
use std::marker::PhantomData;

use redis::Value;

use super::{delete_orphan, BoxFuture, Checker, Kind, Pass};
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::plan::checked::write_if;
use crate::layout::plain_key;
use crate::model::index::{checked_score, IndexKind, IndexSpec};
use crate::model::key::{key_pattern, recent_key, sorted_key, tag_key, unique_key};
use crate::model::live::{existing, key_text};
use crate::model::migrate::rebuild_indexes_of;
use crate::model::object::{ObjectRef, COUNT_FIELD};
use crate::model::referrer::{
    clear_reference, delete_referrer, object_pattern, OnDelete, Reference,
};
use crate::model::reply::reply_at;
use crate::model::scan::scan_keys;
use crate::model::Model;
use crate::{Db, Error, Result};

/// Objects read per round trip.
const BATCH: usize = 200;

/// The checker of model `M`, for the registry.
#[doc(hidden)]
pub fn checker<M: Model>() -> Box<dyn Checker> {
    Box::new(ModelCheck::<M>(PhantomData))
}

struct ModelCheck<M>(PhantomData<fn() -> M>);

impl<M: Model> Checker for ModelCheck<M> {
    fn batch<'a>(&'a self, pass: &'a mut Pass<'_>, cursor: u64) -> BoxFuture<'a, u64> {
        Box::pin(check_batch::<M>(pass, cursor))
    }

    fn finish<'a>(&'a self, pass: &'a mut Pass<'_>) -> BoxFuture<'a, ()> {
        Box::pin(finish::<M>(pass))
    }
}

/// One object of a batch that was read: its handle and stored field
/// texts.
struct Read<M: Model> {
    object: ObjectRef<M>,
    values: Vec<Option<Vec<u8>>>,
}

/// One SCAN batch of the model's keys: the objects, then their values in
/// the indexes.
async fn check_batch<M: Model>(pass: &mut Pass<'_>, cursor: u64) -> Result<u64> {
    let (next, keys) = pass.scan(&object_pattern::<M>(), cursor).await?;
    let mut refs: Vec<ObjectRef<M>> = keys
        .iter()
        .filter_map(|k| ObjectRef::parse(k).ok())
        .collect();
    refs.sort();
    refs.dedup();
    for batch in refs.chunks(BATCH) {
        let live = check_objects(pass, batch).await?;
        for spec in M::INDEXES {
            check_forward::<M>(pass, spec, &live).await?;
        }
    }
    Ok(next)
}

/// After the objects: each index's entries, and the repair of the indexes
/// if this pass found anything wrong with them.
async fn finish<M: Model>(pass: &mut Pass<'_>) -> Result<()> {
    for spec in M::INDEXES {
        check_backward::<M>(pass, spec).await?;
    }
    let found = pass.new_index_findings();
    if found > 0 && pass.repairing() {
        rebuild_indexes_of::<M>(pass.db).await?;
        pass.fixed(Kind::MissingIndexEntry, found);
    }
    Ok(())
}

/// Reads a batch of objects and checks each one's form, owner and
/// references; returns those that are sound enough to check the indexes
/// against (present and not repaired away).
async fn check_objects<M: Model>(
    pass: &mut Pass<'_>,
    batch: &[ObjectRef<M>],
) -> Result<Vec<Read<M>>> {
    let db = pass.db;
    let raws = ObjectRef::<M>::read_many(db, batch).await?;
    let owners: Vec<Option<String>> = batch.iter().map(|r| r.owner_key_in(db)).collect();
    let owner_keys: Vec<String> = owners.iter().flatten().cloned().collect();
    let mut owner_alive = existing(db, &owner_keys).await?.into_iter();
    let references = M::REFERENCES;
    let mut targets: Vec<(usize, &'static Reference, String)> = Vec::new();
    let mut out = Vec::new();
    for ((object, raw), owner) in batch.iter().zip(raws).zip(&owners) {
        let alive = owner.as_ref().map(|_| owner_alive.next().unwrap_or(true));
        let values = match raw {
            Ok(Some(values)) => values,
            Ok(None) => continue, // deleted since the SCAN
            Err(err) => {
                pass.report
                    .found(Kind::Undecodable, object.key(), err.to_string());
                continue;
            }
        };
        if let (Some(owner), Some(false)) = (owner, alive) {
            pass.report.found(
                Kind::OrphanedSubObject,
                object.key(),
                format!("its admin `{}` does not exist", plain_key(owner)),
            );
            if pass.repairing() && delete_orphan(db, &object.key_in(db), owner).await? {
                pass.fixed(Kind::OrphanedSubObject, 1);
            }
            continue;
        }
        let decoded = object.decode(values.clone());
        let partial = match &decoded {
            Err(Error::MissingField { .. }) => !counted(db, object).await?,
            _ => false,
        };
        match decoded {
            Ok(_) => {}
            Err(err) if partial => {
                pass.report.found(
                    Kind::PartialObject,
                    object.key(),
                    format!("{err}, and it was never written whole (no `{COUNT_FIELD}`)"),
                );
                if pass.repairing() && delete_partial(db, object).await? {
                    pass.fixed(Kind::PartialObject, 1);
                }
                continue;
            }
            Err(err) => pass
                .report
                .found(Kind::Undecodable, object.key(), err.to_string()),
        }
        for (name, value) in M::FIELDS.iter().zip(&values) {
            let reference = references.iter().find(|r| r.field == *name);
            if let (Some(reference), Some(text)) = (reference, value)
                && let Ok(text) = std::str::from_utf8(text)
            {
                targets.push((out.len(), reference, text.to_string()));
            }
        }
        out.push(Read {
            object: object.clone(),
            values,
        });
    }
    let stored: Vec<String> = targets
        .iter()
        .map(|(_, _, t)| db.stored(t).into_owned())
        .collect();
    let mut deleted: Vec<usize> = Vec::new();
    for ((i, reference, target), exists) in targets.iter().zip(existing(db, &stored).await?) {
        if exists {
            continue;
        }
        let object = &out[*i].object;
        let field = reference.field;
        if !reference.required {
            pass.report.found(
                Kind::DanglingReference,
                object.key(),
                format!("its field `{field}` names `{target}`, which does not exist"),
            );
            if pass.repairing() {
                clear_reference(db, &object.key_in(db), field, target).await?;
                pass.fixed(Kind::DanglingReference, 1);
            }
            continue;
        }
        let rule = match reference.on_delete {
            OnDelete::Delete => "on_delete = \"delete\": repair deletes the object",
            _ => "on_delete = \"restrict\": left for a person to fix",
        };
        pass.report.found(
            Kind::DanglingRequiredReference,
            object.key(),
            format!("its required field `{field}` names `{target}`, which does not exist ({rule})"),
        );
        if pass.repairing()
            && reference.on_delete == OnDelete::Delete
            && delete_referrer::<M>(db, &object.key_in(db), field, target).await?
        {
            pass.fixed(Kind::DanglingRequiredReference, 1);
            deleted.push(*i);
        }
    }
    // A deleted object took its index entries with it.
    let out = out
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !deleted.contains(i))
        .map(|(_, read)| read)
        .collect();
    Ok(out)
}

/// Whether the object's hash holds `_count` (it had a full write).
async fn counted<M: Model>(db: &Db, object: &ObjectRef<M>) -> Result<bool> {
    db.query(cmd("HEXISTS").arg(object.key_in(db)).arg(COUNT_FIELD))
        .await
}

/// Deletes the object if it is still partial: a required field missing
/// and no `_count`, read again by a checked write. Its index entries go
/// with the index check that follows. Whether it did.
async fn delete_partial<M: Model>(db: &Db, object: &ObjectRef<M>) -> Result<bool> {
    let key = object.key_in(db).into_owned();
    let mut hexists = cmd("HEXISTS");
    hexists.arg(&key).arg(COUNT_FIELD);
    let mut hmget = cmd("HMGET");
    hmget.arg(&key).arg(M::FIELDS);
    let mut del = cmd("DEL");
    del.arg(&key);
    let partial = |replies: &[Value]| {
        let [counted, values] = replies else {
            return Ok(false);
        };
        let counted: bool = reply_at(&key, "hash", Some(counted.clone()))?;
        let values: Vec<Option<Vec<u8>>> = reply_at(&key, "hash", Some(values.clone()))?;
        Ok(!counted
            && values.iter().any(Option::is_some)
            && matches!(object.decode(values), Err(Error::MissingField { .. })))
    };
    write_if(db, &key, &[&key], &[hexists, hmget], &partial, &[del]).await
}

/// Each object's value of `spec`'s field is in the index (with its score,
/// for a sorted one). Recent lists keep the latest writes only: an object
/// missing from one is not a finding.
async fn check_forward<M: Model>(
    pass: &mut Pass<'_>,
    spec: &IndexSpec,
    live: &[Read<M>],
) -> Result<()> {
    let db = pass.db;
    let Some(field) = M::FIELDS.iter().position(|f| *f == spec.field) else {
        return Ok(());
    };
    for batch in live.chunks(BATCH) {
        // (object, what is expected, the command that reads it)
        let mut expected: Vec<(&ObjectRef<M>, String, Expect)> = Vec::new();
        let mut pipe = redis::pipe();
        for read in batch {
            let Some(text) = read.values.get(field).and_then(Option::as_deref) else {
                continue;
            };
            let member = read.object.key_in(db).into_owned();
            match spec.kind {
                IndexKind::Sorted { score } => {
                    let Ok(Some(score)) = score(text) else {
                        continue;
                    };
                    let Ok(score) = checked_score(spec.field, score) else {
                        continue;
                    };
                    pipe.command("ZSCORE")
                        .arg(sorted_key(db, M::TABLE, spec.field))
                        .arg(&member);
                    expected.push((&read.object, format!("score {score}"), Expect::Score(score)));
                }
                IndexKind::Unique => {
                    let Ok(value) = key_text(text) else { continue };
                    pipe.command("LINDEX")
                        .arg(unique_key(db, M::TABLE, spec.field, value))
                        .arg(0);
                    expected.push((
                        &read.object,
                        format!("the entry of `{value}`"),
                        Expect::Holder(member),
                    ));
                }
                IndexKind::Tags { tags } => {
                    for tag in tags(text).unwrap_or_default() {
                        pipe.command("SISMEMBER")
                            .arg(tag_key(db, M::TABLE, spec.field, &tag))
                            .arg(&member);
                        expected.push((
                            &read.object,
                            format!("the set of tag `{tag}`"),
                            Expect::Member,
                        ));
                    }
                }
                IndexKind::Recent { .. } => {}
            }
        }
        if expected.is_empty() {
            continue;
        }
        let replies: Vec<Value> = db.query_pipeline(&pipe).await?;
        for ((object, what, expect), reply) in expected.into_iter().zip(replies) {
            if !expect.met(&reply) {
                pass.report.found(
                    Kind::MissingIndexEntry,
                    object.key(),
                    format!("its `{}` is not in its index as {what}", spec.field),
                );
            }
        }
    }
    Ok(())
}

/// What an index read should give for an object.
enum Expect {
    Score(f64),
    Holder(String),
    Member,
}

impl Expect {
    fn met(&self, reply: &Value) -> bool {
        match self {
            Expect::Score(score) => {
                redis::from_redis_value::<Option<f64>>(reply.clone())
                    .ok()
                    .flatten()
                    == Some(*score)
            }
            Expect::Holder(key) => matches!(reply, Value::BulkString(h) if h == key.as_bytes()),
            Expect::Member => matches!(reply, Value::Int(1)),
        }
    }
}

/// Each entry of `spec`'s index names an object that exists and holds
/// that value (score, unique value, tag).
async fn check_backward<M: Model>(pass: &mut Pass<'_>, spec: &IndexSpec) -> Result<()> {
    let db = pass.db;
    // (index key, member as stored, what the entry says of it)
    let mut entries: Vec<(String, String, Claim)> = Vec::new();
    match spec.kind {
        IndexKind::Sorted { .. } => {
            let key = sorted_key(db, M::TABLE, spec.field);
            let members: Vec<(String, f64)> = db
                .query(cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES"))
                .await?;
            entries.extend(
                members
                    .into_iter()
                    .map(|(m, s)| (key.clone(), m, Claim::Score(s))),
            );
        }
        IndexKind::Recent { .. } => {
            let key = recent_key(db, M::TABLE, spec.field);
            let members: Vec<String> = db.query(cmd("LRANGE").arg(&key).arg(0).arg(-1)).await?;
            entries.extend(members.into_iter().map(|m| (key.clone(), m, Claim::Exists)));
        }
        IndexKind::Unique | IndexKind::Tags { .. } => {
            let pattern = key_pattern(db, M::TABLE, spec.field, spec.kind.name());
            let unique = matches!(spec.kind, IndexKind::Unique);
            let keys = scan_keys(db, &pattern).await?;
            for keys in keys.chunks(BATCH) {
                // Each entry's members (and, for a unique entry, its TTL)
                // in one round trip per batch.
                let mut pipe = redis::pipe();
                for key in keys {
                    if unique {
                        pipe.command("PTTL")
                            .arg(key)
                            .command("LRANGE")
                            .arg(key)
                            .arg(0)
                            .arg(-1);
                    } else {
                        pipe.command("SMEMBERS").arg(key);
                    }
                }
                let replies: Vec<Value> = db.query_pipeline(&pipe).await?;
                let mut replies = replies.into_iter();
                for key in keys {
                    // A claim still pending: the cluster layout's first
                    // step, with a lease.
                    let pending = unique
                        && redis::from_redis_value::<i64>(replies.next().unwrap_or(Value::Nil))
                            .is_ok_and(|ttl| ttl >= 0);
                    let claim = if pending { Claim::Pending } else { Claim::Key };
                    let members: Vec<String> =
                        redis::from_redis_value(replies.next().unwrap_or(Value::Nil))
                            .map_err(redis::RedisError::from)?;
                    entries.extend(members.into_iter().map(|m| (key.clone(), m, claim)));
                }
            }
        }
    }
    for batch in entries.chunks(BATCH) {
        // Each member's existence and field, in one round trip.
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for (_, member, _) in batch {
            pipe.command("EXISTS")
                .arg(member)
                .command("HGET")
                .arg(member)
                .arg(spec.field);
        }
        let replies: Vec<Value> = db.query_pipeline(&pipe).await?;
        let mut replies = replies.into_iter();
        for (index, member, claim) in batch {
            let alive = matches!(replies.next(), Some(Value::Int(1)));
            let text =
                redis::from_redis_value::<Option<Vec<u8>>>(replies.next().unwrap_or(Value::Nil))
                    .ok()
                    .flatten();
            if let Claim::Pending = claim {
                // A pending claim of an object that does not hold the
                // value (not written yet) is no finding: it lapses unless
                // its write confirms it. One whose object holds the value
                // would lapse too, and leave the value unindexed: a write
                // stopped before its confirmation.
                let held = alive
                    && Claim::Key
                        .broken::<M>(db, spec, index, text.as_deref())
                        .is_none();
                if held {
                    pass.report.found(
                        Kind::MissingIndexEntry,
                        &plain_key(member),
                        format!(
                            "its `{}` is in its index only as a pending claim, which lapses",
                            spec.field
                        ),
                    );
                }
                continue;
            }
            let why = if !alive {
                Some(format!(
                    "names `{}`, which does not exist",
                    plain_key(member)
                ))
            } else {
                claim.broken::<M>(db, spec, index, text.as_deref())
            };
            if let Some(why) = why {
                pass.report.found(Kind::StaleIndexEntry, index, why);
            }
        }
    }
    Ok(())
}

/// What an index entry says of the object it names.
#[derive(Clone, Copy)]
enum Claim {
    /// A sorted set member with this score.
    Score(f64),
    /// A unique entry or a tag set: the key (of the entry or the set) is
    /// one the object's value makes.
    Key,
    /// A recent list member: only that the object exists.
    Exists,
    /// A unique entry still pending (a claim with its lease): the object
    /// will hold the value once its write is done.
    Pending,
}

impl Claim {
    /// Why the entry at `index` does not match the field's `text`, if it
    /// does not.
    fn broken<M: Model>(
        &self,
        db: &Db,
        spec: &IndexSpec,
        index: &str,
        text: Option<&[u8]>,
    ) -> Option<String> {
        let field = spec.field;
        match (self, spec.kind) {
            // A field with a TTL that expired no longer puts its object
            // in the recent list; any other field's list names objects.
            (Claim::Exists, _) => (text.is_none()
                && M::FIELD_TTLS.iter().any(|(name, _)| *name == field))
            .then(|| format!("its `{field}` expired")),
            (Claim::Score(stored), IndexKind::Sorted { score }) => {
                let want = text.and_then(|t| score(t).ok().flatten());
                (want != Some(*stored)).then(|| match want {
                    Some(want) => format!("scores it {stored}, its `{field}` makes {want}"),
                    None => format!("scores it {stored}, its `{field}` is not a score"),
                })
            }
            (Claim::Key, IndexKind::Unique) => {
                let want = text
                    .and_then(|t| key_text(t).ok())
                    .map(|v| unique_key(db, M::TABLE, field, v));
                (want.as_deref() != Some(index))
                    .then(|| format!("its `{field}` no longer holds this value"))
            }
            (Claim::Key, IndexKind::Tags { tags }) => {
                let want: BTreeSet<String> = text
                    .and_then(|t| tags(t).ok())
                    .unwrap_or_default()
                    .iter()
                    .map(|tag| tag_key(db, M::TABLE, field, tag))
                    .collect();
                (!want.contains(index)).then(|| format!("its `{field}` no longer has this tag"))
            }
            _ => None,
        }
    }
}
