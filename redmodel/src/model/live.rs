//! Reading through an index or a list never shows a dead entry: the
//! objects an entry names are loaded (or checked to exist), those that are
//! gone or no longer hold the indexed value are left out, and their
//! entries are pruned ([`prune()`]). Shared by the indexes and the relation
//! lists.

mod fence;
mod prune;

pub(crate) use fence::{unless_held, Fenced, FENCE_LEASE};
pub(crate) use prune::{prune, Entry, Stale, Test};

use super::codec::shown;
use super::object::ObjectRef;
use super::reply::reply_at;
use super::Model;
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::plan::checked::Reader;
use crate::{Db, Error, Result};
use redis::Value;

/// How many entries a full prune checks per transaction.
pub(crate) const PRUNE_BATCH: usize = 256;

/// Loads the objects at `refs`, [`LOAD_BATCH`](crate::model::LOAD_BATCH)
/// to a pipelined batch (an index's or a list's members may be a million,
/// whose reply in one batch could not arrive within the response
/// timeout), keeping those that `judge` accepts, in order: each kept
/// object's own result, so bad data stays in its own place (the
/// all-or-nothing reads collect them, the `_each` reads hand them on).
///
/// The objects come through the near cache, if it is on (a prune is a
/// checked write: it removes an entry only if the server agrees).
///
/// `judge` sees each handle with its stored field texts (`None` if the
/// object is gone) and returns whether to keep it, pushing the entries
/// that the read shows dead onto `stale`, for the caller to [`prune()`]
/// once its read is over (pruning in the middle of a walk by rank would
/// shift the ranks still to read).
pub(crate) async fn load_judged<M: Model>(
    db: &Db,
    refs: Vec<ObjectRef<M>>,
    stale: &mut Vec<Stale>,
    mut judge: impl FnMut(&ObjectRef<M>, Option<&[Option<Vec<u8>>]>, &mut Vec<Stale>) -> bool,
) -> Result<Vec<Result<M>>> {
    let raw = ObjectRef::read_batched_cached(db, &refs).await?;
    let mut out = Vec::with_capacity(refs.len());
    for (r, values) in refs.into_iter().zip(raw) {
        // A read that failed for this object alone (another Redis type at
        // its key) is its result, as a decoding error is.
        let values = match values {
            Ok(values) => values,
            Err(err) => {
                out.push(Err(err));
                continue;
            }
        };
        if judge(&r, values.as_deref(), stale)
            && let Some(values) = values
        {
            out.push(r.decode(values));
        }
    }
    Ok(out)
}

/// [`load_judged`] where the only test is that the object exists: the
/// entries of gone objects are `entry(key)`; they are pruned before the
/// objects are returned.
pub(crate) async fn load_live<M: Model>(
    db: &Db,
    refs: Vec<ObjectRef<M>>,
    entry: impl Fn(&str) -> Entry,
) -> Result<Vec<Result<M>>> {
    load_holding(db, refs, None, entry).await
}

/// [`load_live`], where an object also counts as gone if its `field`
/// (one declared with a TTL) is absent: expired, it no longer holds what
/// put it in the index.
pub(crate) async fn load_holding<M: Model>(
    db: &Db,
    refs: Vec<ObjectRef<M>>,
    field: Option<&'static str>,
    entry: impl Fn(&str) -> Entry,
) -> Result<Vec<Result<M>>> {
    let expiring = field.and_then(expiring_position::<M>);
    let mut stale = Vec::new();
    let out = load_judged(db, refs, &mut stale, |r, values, stale| {
        let test = match (values, field) {
            (None, _) => Test::Gone,
            (Some(values), Some(field)) if lacks(values, expiring) => Test::Absent { field },
            (Some(_), _) => return true,
        };
        let object = r.key_in(db).into_owned();
        stale.push(Stale {
            entry: entry(&object),
            object,
            test,
        });
        false
    })
    .await?;
    prune(db, stale).await?;
    Ok(out)
}

/// Which of `keys` exist, in one pipelined round trip of EXISTS.
pub(crate) async fn existing(db: &Db, keys: &[String]) -> Result<Vec<bool>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for key in keys {
        pipe.command("EXISTS").arg(key);
    }
    db.read_pipeline(&pipe).await
}

/// Prunes the entries (`entry(key)`) of the gone objects among `keys`,
/// in batches; returns how many were removed.
pub(crate) async fn prune_gone(
    db: &Db,
    keys: &[String],
    entry: impl Fn(&str) -> Entry,
) -> Result<u64> {
    let mut removed = 0;
    for batch in keys.chunks(PRUNE_BATCH) {
        let live = existing(db, batch).await?;
        let stale = batch
            .iter()
            .zip(live)
            .filter(|(_, live)| !live)
            .map(|(key, _)| Stale {
                object: key.clone(),
                test: Test::Gone,
                entry: entry(key),
            })
            .collect();
        removed += prune(db, stale).await?;
    }
    Ok(removed)
}

/// Removes the entries (`entry(key)`) of the objects at `keys` whose
/// `field` is absent, gone objects included; returns how many were
/// removed. For the index of a field declared with a TTL, whose entries
/// die when the field expires: [`prune_gone`] otherwise, which checks
/// less.
pub(crate) async fn prune_lacking<M: Model>(
    db: &Db,
    keys: &[String],
    field: &'static str,
    entry: impl Fn(&str) -> Entry,
) -> Result<u64> {
    if expiring_position::<M>(field).is_none() {
        return prune_gone(db, keys, entry).await;
    }
    let mut removed = 0;
    for batch in keys.chunks(PRUNE_BATCH) {
        // `prune` reads each field and removes only the dead entries.
        let stale = batch
            .iter()
            .map(|key| Stale {
                object: key.clone(),
                test: Test::Absent { field },
                entry: entry(key),
            })
            .collect();
        removed += prune(db, stale).await?;
    }
    Ok(removed)
}

/// Where a field declared with a TTL (`#[redmodel(ttl = ...)]`) is in
/// [`Model::FIELDS`]: an index on it judges an object whose field expired
/// (is absent) a dead entry, as for a gone object. `None` for a field
/// without a TTL, whose index entries name objects that exist.
pub(crate) fn expiring_position<M: Model>(name: &str) -> Option<usize> {
    M::FIELD_TTLS
        .iter()
        .any(|(field, _)| *field == name)
        .then(|| M::FIELDS.iter().position(|f| *f == name))
        .flatten()
}

/// Whether `values` (an object's stored fields) lack the field at
/// `position` (an [`expiring_position`]).
pub(crate) fn lacks(values: &[Option<Vec<u8>>], position: Option<usize>) -> bool {
    position.is_some_and(|p| values.get(p).is_some_and(Option::is_none))
}

/// Parses a key found in an index as a key of `M`; the error names the
/// index.
pub(crate) fn parse_member<M: Model>(member: &str, index: &str) -> Result<ObjectRef<M>> {
    ObjectRef::parse(member).map_err(|err| match err {
        Error::InvalidKey { key, model, reason } => Error::InvalidKey {
            key,
            model,
            reason: format!("{reason} (found in the index `{index}`)"),
        },
        other => other,
    })
}

/// Stored field text as UTF-8, for a key segment; the error says why not.
pub(crate) fn key_text(raw: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(raw).map_err(|_| not_key_text(raw))
}

/// Why `raw`, which is not UTF-8, cannot be part of an index key.
pub(crate) fn not_key_text(raw: &[u8]) -> String {
    format!("{} is not UTF-8 text, which an index key needs", shown(raw))
}

/// The command that reads the holder named by the unique entry `entry`
/// (a list of one element, repeated while claims of its object are
/// pending: see `write::stepped`): `LINDEX entry 0`, which replies like a GET
/// (the key, or nil).
pub(crate) fn holder_command(entry: &str) -> redis::Cmd {
    let mut lindex = cmd("LINDEX");
    lindex.arg(entry).arg(0);
    lindex
}

/// Who the unique entry `entry` names, and whether it is a pending claim
/// (it has a lease: see `write::stepped`), read through `reader`: what
/// every compare-and-set on an entry decides on. The lease is read as
/// its deadline (`PEXPIRETIME`), which stays the same while nothing
/// changes it, so a checked write can compare it again (a TTL counts
/// down between the read and the check).
pub(crate) async fn entry_state<R: Reader>(
    reader: &R,
    entry: &str,
) -> Result<(Option<String>, bool)> {
    let replies = reader.read(&[entry], entry_reads(entry), false).await?;
    entry_state_of(entry, &replies)
}

/// The reads [`entry_state`] makes: the entry's holder, its deadline.
pub(crate) fn entry_reads(entry: &str) -> Vec<redis::Cmd> {
    let mut deadline = cmd("PEXPIRETIME");
    deadline.arg(entry);
    vec![holder_command(entry), deadline]
}

/// [`entry_state`] from the replies of [`entry_reads`].
pub(crate) fn entry_state_of(entry: &str, replies: &[Value]) -> Result<(Option<String>, bool)> {
    let named: Option<String> = reply_at(entry, "list", replies.first().cloned())?;
    let pending = matches!(replies.get(1), Some(Value::Int(at)) if *at >= 0);
    Ok((named, pending))
}
