//! Keeping the indexes in step with an object's writes, in the same
//! MULTI/EXEC as the write itself.
//!
//! The caller builds the object's own commands as an atomic pipeline (the
//! replies it wants not ignored) and says which stored fields the write
//! changes ([`Changes`]). [`run`] appends the index commands (ignored, so
//! the caller's replies keep their shape) and runs everything as one
//! transaction:
//!
//! - no declared index among the changed fields: the pipeline as it is;
//! - only sorted and recent indexes: one pipelined MULTI/EXEC, as their
//!   commands do not depend on the old value (`ZADD`/`ZREM`,
//!   `LREM`+`LPUSH`+`LTRIM`);
//! - a unique or a tag index: the old values and the unique entries'
//!   holders are read (or guessed from what the `Db` saw last,
//!   [`recall`](crate::db::recall), which makes an insert of a new object or a
//!   change of a value this `Db` wrote one round trip), a value another
//!   live object holds is refused ([`Error::Unique`], on real reads only),
//!   and the write and the index commands go as one script that checks
//!   those reads still hold ([`checked`](crate::db::plan::checked): an optimistic
//!   compare-and-set in one round trip, repeated on the values it replies
//!   if a read changed, by the one retry policy of [`crate::db::optimistic`]).
//!   On a server that refuses scripts, the same reads and decisions run
//!   under `WATCH` on a connection of their own, then `MULTI`/`EXEC`.
//!
//! Why not claim the unique value first (`SET NX`) and write the object
//! next: a claim made outside the object's write is a second step that can
//! be left half done, and taking over a claim whose holder has expired
//! needs a compare-and-set anyway. Here the claim, the release of the old
//! value and the object's write are one atomic unit; a refused or
//! conflicting write stores nothing at all.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use redis::{Cmd, FromRedisValue, Pipeline, ToRedisArgs, Value};
use smallvec::SmallVec;

use super::number_text;
use super::stepped;
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::optimistic::{pause_before_retry, watched, RawTransaction, MAX_ATTEMPTS};
use crate::db::plan::checked::{check_guards, Checked, Reader, Recorder};
use crate::db::plan::{not_found, Plan};
use crate::db::recall::Guess;
use crate::db::script::Lua;
use crate::model::index::unique::{claim_commands, holder_and_field_command, holder_command};
use crate::model::index::{checked_score, score_arg, IndexKind, IndexSpec};
use crate::model::key::{recent_key, sorted_key, tag_key, unique_key};
use crate::model::live::key_text;
use crate::model::Model;
use crate::{Db, Error, KeyLayout, Result};

/// What a write does to an object's stored fields.
pub(crate) enum Changes<'a> {
    /// These fields get these texts (`None`: the field is removed).
    Fields(Vec<(&'static str, Option<&'a [u8]>)>),
    /// The object is deleted.
    Delete,
}

/// The new state of one indexed field.
#[derive(Clone, Copy)]
enum New<'a> {
    Value(&'a [u8]),
    Absent,
    Deleted,
}

impl<'a> New<'a> {
    fn value(self) -> Option<&'a [u8]> {
        match self {
            New::Value(v) => Some(v),
            New::Absent | New::Deleted => None,
        }
    }
}

/// One index's part of a write, with everything computed that can fail
/// before anything is sent.
enum Step {
    /// `ZADD` with this score, or `ZREM` (`None`).
    Sorted { key: String, score: Option<f64> },
    /// Push to the head (and trim), or just remove.
    Recent { key: String, cap: u32, push: bool },
    /// Claim this value (`None`: hold none) and release the old one.
    Unique {
        field: &'static str,
        new: Option<String>,
    },
    /// Be in these tags' sets (and leave the old ones').
    Tags {
        field: &'static str,
        parse: fn(&[u8]) -> std::result::Result<Vec<String>, String>,
        new: Vec<String>,
    },
}

/// The indexed fields `changes` touches, with their new state.
fn touched<'a, M: Model>(changes: &Changes<'a>) -> Vec<(&'static IndexSpec, New<'a>)> {
    M::INDEXES
        .iter()
        .filter_map(|spec| match changes {
            Changes::Delete => Some((spec, New::Deleted)),
            Changes::Fields(fields) => fields
                .iter()
                .find(|(name, _)| *name == spec.field)
                .map(|(_, text)| (spec, text.map_or(New::Absent, New::Value))),
        })
        .collect()
}

/// Whether a write of the stored fields `names` touches an index of `M`.
pub(crate) fn touches_index<M: Model>(names: &[&str]) -> bool {
    M::INDEXES.iter().any(|spec| names.contains(&spec.field))
}

fn step<M: Model>(spec: &IndexSpec, new: New<'_>, key: &str) -> Result<Step> {
    let field = spec.field;
    let invalid = |reason: String| Error::Encode {
        key: key.to_string(),
        field: field.to_string(),
        reason,
    };
    Ok(match spec.kind {
        IndexKind::Sorted { score } => {
            let score = match new.value() {
                Some(text) => score(text).map_err(|reason| Error::ScoreOverflow {
                    name: field.to_string(),
                    value: String::from_utf8_lossy(text).into_owned(),
                    reason,
                })?,
                None => None,
            };
            Step::Sorted {
                key: sorted_key(M::TABLE, field),
                score: score.map(|s| checked_score(field, s)).transpose()?,
            }
        }
        IndexKind::Recent { cap } => Step::Recent {
            key: recent_key(M::TABLE, field),
            cap,
            push: new.value().is_some(),
        },
        IndexKind::Unique => Step::Unique {
            field,
            new: new
                .value()
                .map(|text| key_text(text).map(str::to_string))
                .transpose()
                .map_err(invalid)?,
        },
        IndexKind::Tags { tags } => Step::Tags {
            field,
            parse: tags,
            new: match new.value() {
                Some(text) => tags(text).map_err(invalid)?,
                None => Vec::new(),
            },
        },
    })
}

/// The commands of the steps that need no old value, added to `cmds`
/// (an index's commands: their replies dropped).
fn add_blind(cmds: &mut Vec<Cmd>, member: &str, steps: &[Step]) {
    for step in steps {
        match step {
            Step::Sorted {
                key,
                score: Some(score),
            } => {
                let mut zadd = cmd("ZADD");
                zadd.arg(key).arg(score_arg(*score)).arg(member);
                cmds.push(zadd);
            }
            Step::Sorted { key, score: None } => {
                let mut zrem = cmd("ZREM");
                zrem.arg(key).arg(member);
                cmds.push(zrem);
            }
            Step::Recent { key, cap, push } => {
                let mut lrem = cmd("LREM");
                lrem.arg(key).arg(0).arg(member);
                cmds.push(lrem);
                if *push {
                    let mut lpush = cmd("LPUSH");
                    lpush.arg(key).arg(member);
                    let mut ltrim = cmd("LTRIM");
                    ltrim.arg(key).arg(0).arg(i64::from(*cap) - 1);
                    cmds.extend([lpush, ltrim]);
                }
            }
            Step::Unique { .. } | Step::Tags { .. } => {}
        }
    }
}

/// Runs the object's own commands (what `write` adds) with the index
/// commands that `changes` calls for, as one atomic unit, and returns the
/// replies of the object's commands that are not ignored. `key` is the
/// object's key as `db` stores it (also what index entries hold). With a
/// `guards` (keys that must exist: the object itself, a sub-object's admin,
/// the objects its reference fields name), nothing
/// is written unless it exists ([`Error::NotFound`]). In the cluster
/// layout, where the object and its index entries are in different slots,
/// this is a sequence of steps instead ([`stepped`]).
pub(crate) async fn run<M: Model, T: FromRedisValue>(
    db: &Db,
    key: &str,
    guards: &[String],
    write: &(dyn Fn(&mut Plan) + Sync),
    changes: &Changes<'_>,
) -> Result<T> {
    let mut unit = guarded_unit(db.key_layout(), key, guards);
    let touched = touched::<M>(changes);
    if touched.is_empty() {
        write(&mut unit);
        return unit.run(db).await;
    }
    let steps = touched
        .iter()
        .map(|(spec, new)| step::<M>(spec, *new, key))
        .collect::<Result<Vec<Step>>>()?;
    if db.key_layout() == KeyLayout::Cluster {
        let specs: Vec<&'static IndexSpec> = touched.iter().map(|(spec, _)| *spec).collect();
        let claims: Vec<(&'static str, &str)> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Unique {
                    field,
                    new: Some(value),
                } => Some((*field, value.as_str())),
                _ => None,
            })
            .collect();
        return stepped::run::<M, T>(db, key, guards, write, &specs, &claims).await;
    }
    write(&mut unit);
    let mut blind = Vec::new();
    add_blind(&mut blind, key, &steps);
    for cmd in blind {
        unit.add_ignored(cmd);
    }
    if !touched.iter().any(|(spec, _)| spec.kind.needs_old()) {
        return unit.run(db).await;
    }
    let layout = db.key_layout();
    let base = unit.commands();
    // A first attempt guesses what it would read (see `recall`); one
    // after a wrong guess knows what it should have read from the reply.
    let mut guess = Guess::Absent;
    for attempt in 1..=MAX_ATTEMPTS {
        // Read on the shared connection (or guess), decide, and write with
        // one script that checks the reads still hold (see `checked`).
        let recorder = Recorder::new(db, std::mem::replace(&mut guess, Guess::Nothing));
        let mut entries = Vec::new();
        let decided = add_watched_steps::<M, _>(&recorder, layout, key, &steps, &mut entries).await;
        match decided {
            // A refusal (a value another object holds) ends the write
            // unwritten, so no script checks what it rests on: decide
            // again on real reads (`guess` is `Nothing` unless a reply
            // sets it).
            Err(_) if recorder.guessed() => continue,
            decided => decided?,
        }
        let mut writes = base.to_vec();
        writes.extend(entries.iter().map(|cmd| (cmd, false)));
        match recorder.commit::<T>(guards, &writes).await? {
            Checked::Done(out) => return Ok(out),
            Checked::Unsupported => break,
            Checked::Changed(_) if attempt == MAX_ATTEMPTS => {
                return Err(Error::Conflict {
                    attempts: MAX_ATTEMPTS,
                    key: Some(crate::layout::plain_key(key)),
                })
            }
            // The reply told the loser what the winner wrote: retry at
            // once on that, without a pause until collisions repeat.
            Checked::Changed(facts) => {
                guess = Guess::Replied(facts);
                if attempt <= 8 {
                    tokio::task::yield_now().await
                } else {
                    pause_before_retry(attempt - 8).await
                }
            }
        }
    }
    // A server that refuses scripts: the same decisions under WATCH.
    let pipe = unit.pipeline();
    let (pipe, steps) = (&pipe, &steps);
    watched(db, key, |tx| async move {
        attempt_watched::<M, T>(&tx, layout, key, guards, pipe, steps).await
    })
    .await
}

/// The start of a write of the object at `key` that needs `guards` to
/// exist. In the plain layout, one group that they all guard: one atomic
/// unit. In the cluster layout, those in `key`'s slot guard the write's
/// own group; each of the others (a reference field's target) gets a
/// group of its own, checked first, just before the write, not with it.
pub(super) fn guarded_unit(layout: KeyLayout, key: &str, guards: &[String]) -> Plan {
    if layout == KeyLayout::Plain {
        let mut unit = Plan::new();
        unit.step();
        for guard in guards {
            unit.guard(guard.as_str());
        }
        return unit;
    }
    let slot = crate::db::slot_of;
    // A CRC16 per key: the object, the usual guard, is known by its name.
    let own = slot(key);
    let near = |g: &&String| g.as_str() == key || slot(g) == own;
    let mut unit = Plan::new();
    for guard in guards.iter().filter(|g| !near(g)) {
        unit.step().guard(guard.as_str());
    }
    unit.step();
    for guard in guards.iter().filter(near) {
        unit.guard(guard.as_str());
    }
    unit
}

/// One unique step, with what the attempt learned.
struct UniqueState<'s> {
    field: &'static str,
    /// The value to hold, if any.
    new: Option<&'s str>,
    /// The key of the new value's entry, and who holds it now, with
    /// whether that holder's field holds the value (else the entry is
    /// stale: its holder is gone or moved on without releasing it).
    new_entry: Option<(String, Option<(String, bool)>)>,
    /// The key of the old value's entry, if the write gives the old value
    /// up; and whether this object holds it (only then is it released).
    old_entry: Option<(String, bool)>,
}

/// The fields whose old value a watched write reads.
fn old_fields(steps: &[Step]) -> Vec<&'static str> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Unique { field, .. } | Step::Tags { field, .. } => Some(*field),
            _ => None,
        })
        .collect()
}

/// One attempt of a watched write: `None` if a concurrent write aborted it.
async fn attempt_watched<M: Model, T: FromRedisValue>(
    tx: &RawTransaction,
    layout: KeyLayout,
    key: &str,
    guards: &[String],
    write: &Pipeline,
    steps: &[Step],
) -> Result<Option<T>> {
    if !guards.is_empty() {
        // The guards are WATCHed with the rest: one deleted before the
        // EXEC aborts the attempt, and the next one sees it gone.
        let mut read = redis::pipe();
        read.command("WATCH").arg(guards).ignore();
        for guard in guards {
            read.command("EXISTS").arg(guard);
        }
        let exists: Vec<bool> = tx.query_pipeline(&read).await?;
        if let Some((guard, _)) = guards.iter().zip(&exists).find(|(_, e)| !**e) {
            return Err(Error::NotFound {
                key: crate::layout::plain_key(guard),
            });
        }
    }
    // Round 3: the write and every index command, in one MULTI/EXEC.
    let mut entries = Vec::new();
    add_watched_steps::<M, _>(tx, layout, key, steps, &mut entries).await?;
    let mut txn = write.clone();
    txn.ignored(entries);
    tx.exec(&txn).await
}

/// Rounds 1 and 2 of a watched write (read the old values and the unique
/// entries' holders under WATCH, refuse a value another live object
/// holds), then the unique and tag commands those reads call for, added
/// to `txn` (their replies to be dropped).
async fn add_watched_steps<M: Model, R: Reader>(
    tx: &R,
    layout: KeyLayout,
    key: &str,
    steps: &[Step],
    txn: &mut Vec<Cmd>,
) -> Result<()> {
    let fields = old_fields(steps);
    let mut uniques: Vec<UniqueState> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Unique { field, new } => Some(UniqueState {
                field,
                new: new.as_deref(),
                new_entry: new
                    .as_deref()
                    .map(|v| (unique_key(M::TABLE, field, v), None)),
                old_entry: None,
            }),
            _ => None,
        })
        .collect();
    let old = read_old(tx, key, &fields, &mut uniques).await?;
    let old_of = |field: &str| -> Option<&[u8]> {
        let i = fields.iter().position(|f| *f == field)?;
        old.get(i)?.as_deref()
    };
    for u in uniques.iter_mut() {
        let old_text = old_of(u.field).and_then(|t| std::str::from_utf8(t).ok());
        if let Some(old_text) = old_text.filter(|t| Some(*t) != u.new) {
            u.old_entry = Some((unique_key(M::TABLE, u.field, old_text), false));
        }
    }
    check_entries::<M, _>(tx, key, &mut uniques).await?;
    add_watched::<M>(txn, layout, key, steps, &uniques, &old_of);
    Ok(())
}

/// Adds the unique and tag commands of a watched write to `txn` (their
/// replies to be dropped), from the old values (`old_of`) and the entries'
/// holders learned under WATCH.
fn add_watched<'o, M: Model>(
    txn: &mut Vec<Cmd>,
    layout: KeyLayout,
    key: &str,
    steps: &[Step],
    uniques: &[UniqueState<'_>],
    old_of: &dyn Fn(&str) -> Option<&'o [u8]>,
) {
    for u in uniques {
        match &u.new_entry {
            // No entry (the read is checked with the write): the push
            // creates it, nothing to delete first.
            Some((entry, None)) => {
                let mut push = cmd("RPUSH");
                push.arg(entry).arg(key);
                txn.push(push);
            }
            Some((entry, Some((holder, _)))) if holder != key => {
                txn.extend(claim_commands(entry, key));
            }
            Some(_) | None => {}
        }
        if let Some((entry, true)) = &u.old_entry {
            let mut del = cmd("DEL");
            del.arg(entry);
            txn.push(del);
        }
    }
    for s in steps {
        if let Step::Tags { field, parse, new } = s {
            let old: BTreeSet<String> = old_of(field)
                .and_then(|t| parse(t).ok())
                .unwrap_or_default()
                .into_iter()
                .collect();
            let member = |name: &str, tag: &str| {
                let mut c = cmd(name);
                c.arg(layout.stored(&tag_key(M::TABLE, field, tag)).as_ref())
                    .arg(key);
                c
            };
            for tag in old.iter().filter(|t| !new.contains(t)) {
                txn.push(member("SREM", tag));
            }
            for tag in new {
                txn.push(member("SADD", tag));
            }
        }
    }
}

/// Adds to `txn` the index commands of a write that makes `changes` to
/// the object at `key`, reading through `tx`, where the caller's
/// transaction runs: the old unique and tag values are read there (the
/// object WATCHed first), and the unique entries the write claims or gives
/// up are WATCHed too, so the caller's EXEC fails if any of it changes
/// meanwhile. Used by the writes whose transaction holds more than one
/// object's commands: the cascading delete and typed transactions.
pub(crate) async fn add_entries<M: Model>(
    tx: &RawTransaction,
    layout: KeyLayout,
    key: &str,
    changes: &Changes<'_>,
    txn: &mut Pipeline,
) -> Result<()> {
    let touched = touched::<M>(changes);
    let steps = touched
        .iter()
        .map(|(spec, new)| step::<M>(spec, *new, key))
        .collect::<Result<Vec<Step>>>()?;
    let mut entries = Vec::new();
    add_blind(&mut entries, key, &steps);
    if touched.iter().any(|(spec, _)| spec.kind.needs_old()) {
        add_watched_steps::<M, _>(tx, layout, key, &steps, &mut entries).await?;
    }
    txn.ignored(entries);
    Ok(())
}

/// The indexes a write touches, and the unique values it claims, by field.
pub(crate) type IndexPlan = (Vec<&'static IndexSpec>, Vec<(&'static str, String)>);

/// The index part of a write of `changes` to the object at `key`, checked
/// before anything is sent: the indexes it touches, and the unique values
/// it claims, by field (a value that cannot be a key is an
/// [`Error::Encode`]; one that cannot be a score, [`Error::ScoreOverflow`]).
pub(crate) fn plan<M: Model>(key: &str, changes: &Changes<'_>) -> Result<IndexPlan> {
    let touched = touched::<M>(changes);
    let mut claims = Vec::new();
    for (spec, new) in &touched {
        if let Step::Unique {
            field,
            new: Some(value),
        } = step::<M>(spec, *new, key)?
        {
            claims.push((field, value));
        }
    }
    Ok((touched.into_iter().map(|(spec, _)| spec).collect(), claims))
}

/// Round 1: WATCH the object and the unique entries to claim; read the
/// old values of `fields` (HMGET) and, for each entry, its holder and
/// whether that holder holds the value (one SORT, so the two agree).
async fn read_old<R: Reader>(
    tx: &R,
    key: &str,
    fields: &[&str],
    uniques: &mut [UniqueState<'_>],
) -> Result<Vec<Option<Vec<u8>>>> {
    let replies: Vec<Value> = {
        let mut watch: SmallVec<[&str; 4]> = SmallVec::new();
        watch.push(key);
        let mut read = Vec::with_capacity(1 + uniques.len());
        let mut hmget = cmd("HMGET");
        hmget.arg(key).arg(fields);
        read.push(hmget);
        for u in uniques.iter() {
            if let Some((entry, _)) = &u.new_entry {
                watch.push(entry);
                read.push(holder_and_field_command(entry, u.field));
            }
        }
        tx.read(&watch, read, false).await?
    };
    let mut replies = replies.into_iter();
    let old = redis::from_redis_value(replies.next().unwrap_or(Value::Nil))
        .map_err(redis::RedisError::from)?;
    for u in uniques.iter_mut() {
        if let Some((_, holder)) = u.new_entry.as_mut() {
            let reply: Vec<Option<String>> = replies
                .next()
                .map(redis::from_redis_value)
                .transpose()
                .map_err(redis::RedisError::from)?
                .unwrap_or_default();
            *holder = match reply.as_slice() {
                [Some(h), value, ..] => Some((h.clone(), value.as_deref() == u.new)),
                [Some(h)] => Some((h.clone(), false)),
                _ => None,
            };
        }
    }
    Ok(old)
}

/// Round 2: refuse a value to claim whose holder (another object) holds
/// it ([`Error::Unique`]); an entry whose holder is gone, or whose field
/// no longer holds the value, is stale and is taken over. Then WATCH the
/// entries of the values given up and read whether this object holds
/// them (only then are they released).
async fn check_entries<M: Model, R: Reader>(
    tx: &R,
    key: &str,
    uniques: &mut [UniqueState<'_>],
) -> Result<()> {
    for u in uniques.iter() {
        if let Some((_, Some((holder, true)))) = &u.new_entry {
            if holder != key {
                return Err(Error::Unique {
                    model: M::TABLE,
                    field: u.field,
                    value: u.new.unwrap_or_default().to_string(),
                    holder: crate::layout::plain_key(holder),
                });
            }
        }
    }
    let releases: Vec<String> = uniques
        .iter()
        .filter_map(|u| u.old_entry.as_ref().map(|(k, _)| k.clone()))
        .collect();
    if releases.is_empty() {
        return Ok(());
    }
    let watch: SmallVec<[&str; 4]> = releases.iter().map(String::as_str).collect();
    let check = releases.iter().map(|entry| holder_command(entry)).collect();
    let replies: Vec<Value> = tx.read(&watch, check, true).await?;
    let mut replies = replies.into_iter();
    for u in uniques.iter_mut() {
        if let Some((_, ours)) = u.old_entry.as_mut() {
            *ours = matches!(replies.next(), Some(Value::BulkString(h)) if h == key.as_bytes());
        }
    }
    Ok(())
}

/// [`ObjectRef::incr`](crate::model::ObjectRef::incr) of a field with a
/// sorted or recent index: `HINCRBY` (or `HINCRBYFLOAT`), the new value as
/// the score, and the recent list's push, in one script ([`INCR_INDEXED`],
/// one round trip). Returns the field's new text. An increment Redis
/// refuses moves nothing: not the field, not the score; nor does one of an
/// object that does not exist ([`Error::NotFound`]).
///
/// If the score Redis stored differs from the one the field's codec gives
/// (float arithmetic: HINCRBYFLOAT computes in long double), the score is
/// set from the field under WATCH. If the new value cannot be a score (an
/// integer past 2^53), the field keeps it but the object leaves the index,
/// and the error says so: never a rounded score. In the cluster layout, or
/// on a server that refuses scripts, the steps of `stepped` do the same in
/// more round trips.
pub(crate) async fn incr_indexed<M: Model>(
    db: &Db,
    key: &str,
    field: &'static str,
    command: &str,
    by: &(impl ToRedisArgs + Sync),
) -> Result<Vec<u8>> {
    let specs: Vec<&'static IndexSpec> = M::INDEXES.iter().filter(|s| s.field == field).collect();
    if specs.iter().any(|s| matches!(s.kind, IndexKind::Unique)) {
        return Err(Error::Encode {
            key: key.to_string(),
            field: field.to_string(),
            reason: "a unique field cannot be incremented (its new value must be claimed before it is written): `set` it instead".to_string(),
        });
    }
    if db.key_layout() == KeyLayout::Plain {
        if let Some(text) = incr_by_script::<M>(db, key, field, command, by, &specs).await? {
            return Ok(text);
        }
    }
    // The cluster layout (the object and its indexes are in different
    // slots), or a server that refuses scripts: the object's step, then
    // the entries from the value it read back (see `stepped`).
    let write = |steps: &mut Plan| add_incr_read_back(steps, key, field, command, by);
    let guards = [key.to_string()];
    let (reply,): (Value,) = stepped::run::<M, _>(db, key, &guards, &write, &specs, &[]).await?;
    let text = number_text(reply)?;
    for spec in &specs {
        if let IndexKind::Sorted { score } = spec.kind {
            if let Err(reason) = score(&text) {
                return Err(overflow(key, field, &text, &reason));
            }
        }
    }
    Ok(text)
}

/// A plain field's increment on a server: [`INCR_PLAIN`] (the guard, the
/// increment), one round trip without building a write's steps. Where
/// scripts are refused, the guarded steps (a WATCH transaction), the value
/// read back: should the server take scripts again meanwhile, the unit is
/// a script.
pub(crate) async fn incr_on_server(
    db: &Db,
    key: &str,
    field: &'static str,
    command: &str,
    by: &(impl ToRedisArgs + Sync),
) -> Result<Vec<u8>> {
    let mut call = INCR_PLAIN.call_sized(&[key], 3, command.len() + field.len() + 20);
    call.arg(command).arg(field).arg(by);
    if let Some(reply) = call.invoke::<Value>(db).await.map_err(not_found)? {
        return number_text(reply);
    }
    let mut steps = Plan::new();
    steps.guard(key);
    add_incr_read_back(&mut steps, key, field, command, by);
    let (reply,): (Value,) = steps.run(db).await?;
    number_text(reply)
}

/// Adds the increment of `field` (`command`: HINCRBY or HINCRBYFLOAT), its
/// reply dropped, then the field read back as text: exact where a script
/// would round the reply (a Lua number, 2^53 and up).
fn add_incr_read_back(
    steps: &mut Plan,
    key: &str,
    field: &str,
    command: &str,
    by: &(impl ToRedisArgs + Sync),
) {
    let mut incr = cmd(command);
    incr.arg(key).arg(field).arg(by);
    let mut read = cmd("HGET");
    read.arg(key).arg(field);
    steps.add_ignored(incr).add(read);
}

/// What both increment scripts begin with: the object must exist
/// (`KEYS[1]`), then the increment (ARGV: the command, HINCRBY or
/// HINCRBYFLOAT, the field, the increment) leaves its exact new value in
/// `new`. HINCRBYFLOAT replies with the text it stored; HINCRBY's integer
/// becomes a Lua number, a double, exact below 2^53 in magnitude (and
/// rounding keeps a larger one at or past 2^53, so the test cannot be
/// fooled); past it, the field is read back as text: the rounded number
/// would not be the stored value.
const GUARDED_INCREMENT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('NOTFOUND ' .. KEYS[1])
end
local new = redis.call(ARGV[1], KEYS[1], ARGV[2], ARGV[3])
if type(new) == 'number' and (new <= -2^53 or new >= 2^53) then
  new = redis.call('HGET', KEYS[1], ARGV[2])
end
";

/// The guarded increment of a field without indexes ([`GUARDED_INCREMENT`]
/// alone), replying the new value as it is: a number or a text. Without
/// [`INCR_INDEXED`]'s index loops, argument count and reply table it takes
/// the server about 1 µs less per call, a third of the script.
static INCR_PLAIN: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(&[GUARDED_INCREMENT, "return new\n"].concat()));

/// The increment of a field with sorted or recent indexes, in one script:
/// [`GUARDED_INCREMENT`], then the field's new text as the score in every
/// sorted index and a push to every recent list. If the increment fails
/// (the field is not a number, the result overflows) the script stops
/// there and nothing moves.
///
/// The script replies with the text alone: the score Redis stores is that
/// text parsed as a double (correctly rounded, as Rust's parse is), which
/// the caller computes itself rather than reading it back with a ZSCORE.
static INCR_INDEXED: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(&[GUARDED_INCREMENT, INDEX_THE_INCREMENT].concat()));

/// [`INCR_INDEXED`] after the increment. `KEYS[2 .. n+1]`: the sorted
/// indexes; the rest: the recent lists. `ARGV[4]`: n, then each recent
/// list's cap. A Lua number would go to ZADD in `%.14g`: the integer is
/// written out whole first.
const INDEX_THE_INCREMENT: &str = r"
if type(new) == 'number' then
  new = string.format('%d', new)
end
local n = tonumber(ARGV[4])
for i = 2, n + 1 do
  redis.call('ZADD', KEYS[i], new, KEYS[1])
end
for i = n + 2, #KEYS do
  redis.call('LREM', KEYS[i], 0, KEYS[1])
  redis.call('LPUSH', KEYS[i], KEYS[1])
  redis.call('LTRIM', KEYS[i], 0, tonumber(ARGV[i + 3 - n]) - 1)
end
return {new}
";

/// Runs [`INCR_INDEXED`] (one round trip; EVALSHA, loading the script on
/// NOSCRIPT) for the indexes `specs`. `None` if the server refuses
/// scripting (an ACL user without `@scripting`, scripting disabled): the
/// caller takes the path without.
async fn incr_by_script<M: Model>(
    db: &Db,
    key: &str,
    field: &'static str,
    command: &str,
    by: &(impl ToRedisArgs + Sync),
    specs: &[&'static IndexSpec],
) -> Result<Option<Vec<u8>>> {
    let sorted: Vec<&IndexSpec> = specs
        .iter()
        .copied()
        .filter(|s| matches!(s.kind, IndexKind::Sorted { .. }))
        .collect();
    let mut indexes: Vec<String> = sorted.iter().map(|_| sorted_key(M::TABLE, field)).collect();
    let mut caps = Vec::new();
    for spec in specs {
        if let IndexKind::Recent { cap } = spec.kind {
            indexes.push(recent_key(M::TABLE, field));
            caps.push(cap);
        }
    }
    let keys: Vec<&str> = std::iter::once(key)
        .chain(indexes.iter().map(String::as_str))
        .collect();
    let text = match incr_in_process(db, &keys, command, field, by, sorted.len(), &caps) {
        Some(text) => text?,
        None => {
            let mut call = INCR_INDEXED.call(&keys);
            call.arg(command)
                .arg(field)
                .arg(by)
                .arg(sorted.len())
                .arg(&caps);
            let replies = call
                .invoke::<Vec<Option<Vec<u8>>>>(db)
                .await
                .map_err(not_found)?;
            let Some(replies) = replies else {
                return Ok(None);
            };
            replies.into_iter().next().flatten().unwrap_or_default()
        }
    };
    for spec in sorted {
        let IndexKind::Sorted { score } = spec.kind else {
            continue;
        };
        // The score ZADD stored: the text parsed as a double, as Redis
        // parses it.
        let stored: Option<f64> = std::str::from_utf8(&text).ok().and_then(|t| t.parse().ok());
        match score(&text) {
            Ok(Some(expected)) if Some(expected) == stored => {}
            // Redis parsed the text as a score differently from the
            // field's codec (a float HINCRBYFLOAT wrote in long double):
            // the codec's score wins.
            Ok(_) => resync_score::<M>(db, key, spec).await?,
            Err(reason) => {
                db.query::<()>(cmd("ZREM").arg(sorted_key(M::TABLE, field)).arg(key))
                    .await?;
                return Err(overflow(key, field, &text, &reason));
            }
        }
    }
    Ok(Some(text))
}

/// In process, [`INCR_INDEXED`]'s steps, run by the engine under its
/// lock ([`Db::atomically`]) without Lua (see `checked`: a script costs
/// several times its commands there): the field's new text, or the first
/// command's error (what ran before it stays, as in the script); `None`
/// on a server. With no index (`keys` the object alone), a plain field's
/// increment.
pub(super) fn incr_in_process(
    db: &Db,
    keys: &[&str],
    command: &str,
    field: &str,
    by: &impl ToRedisArgs,
    sorted: usize,
    caps: &[u32],
) -> Option<Result<Vec<u8>>> {
    db.atomically(|tx| {
        check_guards(tx, &keys[..1]).map_err(|e| *e)?;
        let object = keys[0].as_bytes();
        let mut call = |args: &[&[u8]]| tx.call(args).extract_error();
        let by = by.to_redis_args();
        let mut args: Vec<&[u8]> = vec![command.as_bytes(), object, field.as_bytes()];
        args.extend(by.iter().map(Vec::as_slice));
        // The increment's reply is exact here (no Lua number in between).
        let new = number_text(call(&args)?)?;
        for index in &keys[1..=sorted] {
            call(&[b"ZADD", index.as_bytes(), &new, object])?;
        }
        for (index, cap) in keys[sorted + 1..].iter().zip(caps) {
            let last = (i64::from(*cap) - 1).to_string();
            call(&[b"LREM", index.as_bytes(), b"0", object])?;
            call(&[b"LPUSH", index.as_bytes(), object])?;
            call(&[b"LTRIM", index.as_bytes(), b"0", last.as_bytes()])?;
        }
        Ok(new)
    })
}

/// The error of an increment whose result cannot be a score: the field
/// holds it, the object left the index.
fn overflow(key: &str, field: &str, text: &[u8], reason: &str) -> Error {
    Error::ScoreOverflow {
        name: field.to_string(),
        value: String::from_utf8_lossy(text).into_owned(),
        reason: format!("{reason}; the field holds it, but `{key}` left the index"),
    }
}

/// Sets the score of `key` in the sorted index `spec` from the field's
/// current value, under WATCH so that a concurrent write cannot be
/// overwritten by an older value.
async fn resync_score<M: Model>(db: &Db, key: &str, spec: &IndexSpec) -> Result<()> {
    let IndexKind::Sorted { score } = spec.kind else {
        return Ok(());
    };
    let index = sorted_key(M::TABLE, spec.field);
    let index = &index;
    watched(db, key, |tx| async move {
        // WATCH and HGET in one round trip (run in this order).
        let (text,): (Option<Vec<u8>>,) = tx
            .watch_then(key, |read| {
                read.command("HGET").arg(key).arg(spec.field);
            })
            .await?;
        let value = text.as_deref().map(score).transpose();
        let mut pipe = redis::pipe();
        pipe.atomic();
        match value {
            Ok(Some(Some(s))) => {
                let s = checked_score(spec.field, s)?;
                pipe.command("ZADD").arg(index).arg(score_arg(s)).arg(key)
            }
            _ => pipe.command("ZREM").arg(index).arg(key),
        }
        .ignore();
        tx.exec::<()>(&pipe).await
    })
    .await
}
