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
//!   those reads still hold ([`checked`]: an optimistic
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

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::marker::PhantomData;

use redis::{Cmd, FromRedisValue, Pipeline, ToRedisArgs, Value};
use smallvec::SmallVec;

use super::guard_unit;
use super::stepped;
use crate::command::AddCommand as _;
use crate::command::{cmd, exact, Owned};
use crate::db::optimistic::RawTransaction;
use crate::db::plan::checked::{self, Decide, Reader};
use crate::db::plan::{GuardKeys, Plan};
use crate::model::index::unique::{claim_commands, holder_and_field_command};
use crate::model::index::{checked_score, score_arg, IndexKind, IndexSpec};
use crate::model::key::{
    self, plain_recent_key, plain_sorted_key, recent_key, sorted_key, unique_key,
};
use crate::model::live::holder_command;
use crate::model::live::key_text;
use crate::model::Model;
use crate::{Db, Error, Result};

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
pub(crate) enum Step {
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
        /// The field's new text (`None`: absent): an old text equal to it
        /// holds the same tags, with none to leave or parse.
        text: Option<Box<[u8]>>,
    },
}

/// The indexed fields `changes` touches, with their new state.
fn touched<'a, M: Model>(changes: &Changes<'a>) -> Touched<'a> {
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

/// The indexed fields a write touches: a model declares a few indexes.
type Touched<'a> = SmallVec<[(&'static IndexSpec, New<'a>); 4]>;

/// Whether a write of the stored fields `names` touches an index of `M`.
pub(crate) fn touches_index<M: Model>(names: &[&str]) -> bool {
    M::INDEXES.iter().any(|spec| names.contains(&spec.field))
}

/// The index step of `spec` for a write of `new` to the object at `key`;
/// its index keys as `db` stores them (a caller without one reads only
/// its claims).
fn step<M: Model>(db: Option<&Db>, spec: &IndexSpec, new: New<'_>, key: &str) -> Result<Step> {
    let stored = |plain: String| match db {
        Some(db) => key::stored(db, plain),
        None => plain,
    };
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
                key: stored(plain_sorted_key(M::TABLE, field)),
                score: score.map(|s| checked_score(field, s)).transpose()?,
            }
        }
        IndexKind::Recent { cap } => Step::Recent {
            key: stored(plain_recent_key(M::TABLE, field)),
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
            text: new.value().map(Box::from),
        },
    })
}

/// The commands of the steps that need no old value, each given to `add`
/// (an index's commands: their replies dropped).
fn add_blind(member: &str, steps: &[Step], mut add: impl FnMut(Cmd)) {
    for step in steps {
        match step {
            Step::Sorted {
                key,
                score: Some(score),
            } => {
                add(score_arg(*score).with_text(|score| {
                    exact(
                        "ZADD",
                        &[key.as_bytes(), score.as_bytes(), member.as_bytes()],
                    )
                }));
            }
            Step::Sorted { key, score: None } => {
                add(exact("ZREM", &[key.as_bytes(), member.as_bytes()]));
            }
            Step::Recent { key, cap, push } => {
                let mut lrem = cmd("LREM");
                lrem.arg(key).arg(0).arg(member);
                add(lrem);
                if *push {
                    let mut lpush = cmd("LPUSH");
                    lpush.arg(key).arg(member);
                    let mut ltrim = cmd("LTRIM");
                    ltrim.arg(key).arg(0).arg(i64::from(*cap) - 1);
                    add(lpush);
                    add(ltrim);
                }
            }
            Step::Unique { .. } | Step::Tags { .. } => {}
        }
    }
}

/// Runs the object's own commands (what `write` adds) with the index
/// commands that `changes` calls for, as one atomic unit, and returns the
/// replies of the object's commands that are not ignored (also in the
/// cluster layout for a table of a slot group, whose index keys share the
/// object's slot). `key` is the
/// object's key as `db` stores it (also what index entries hold). With a
/// `guards` (keys that must exist: the object itself, a sub-object's admin,
/// the objects its reference fields name), nothing
/// is written unless it exists ([`Error::NotFound`]). Where the object and
/// its index entries or guards are in different slots (the cluster layout,
/// outside a slot group), this is a sequence of steps instead
/// ([`stepped`]).
pub(crate) async fn run<M: Model, T: FromRedisValue>(
    db: &Db,
    key: &str,
    guards: GuardKeys<'_>,
    write: &(dyn Fn(&mut Plan) + Sync),
    changes: &Changes<'_>,
) -> Result<T> {
    let mut plan = Plan::new();
    let steps = match prepare::<M>(&mut plan, db, key, guards, write, changes)? {
        Prepared::Unit(steps) => steps,
        Prepared::Stepped {
            guards,
            specs,
            steps,
        } => {
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
            // Boxed: its future is several times the size of the rest,
            // and every write's future would carry it (and copy it at
            // each await) for the cluster layout's sake alone.
            return Box::pin(stepped::run::<M, T>(
                db, key, guards, write, &specs, &claims,
            ))
            .await;
        }
    };
    if !needs_old(&steps) {
        return plan.run(db).await;
    }
    plan.run_deciding(db, key, &Entries::<M>::new(db, key, &steps))
        .await
}

/// A write with its index commands, prepared to run: one atomic unit (in
/// the plan [`prepare`] was given), with the steps whose commands are
/// decided on the old values ([`Entries`]); or (the cluster layout, where
/// the object and its index keys or guards are in different slots) the
/// steps of a [`stepped`] write.
pub(crate) enum Prepared<'k> {
    Unit(Vec<Step>),
    Stepped {
        guards: GuardKeys<'k>,
        specs: Vec<&'static IndexSpec>,
        steps: Vec<Step>,
    },
}

/// Prepares the object's own commands (what `write` adds) with the index
/// commands that `changes` calls for (see [`run`]), in `plan` (an empty
/// plan, the caller's, so that it is built where it runs): everything
/// that can fail before anything is sent fails here.
pub(crate) fn prepare<'k, M: Model>(
    plan: &mut Plan<'k>,
    db: &Db,
    key: &str,
    guards: GuardKeys<'k>,
    write: &(dyn Fn(&mut Plan) + Sync),
    changes: &Changes<'_>,
) -> Result<Prepared<'k>> {
    let touched = touched::<M>(changes);
    let steps = touched
        .iter()
        .map(|(spec, new)| step::<M>(Some(db), spec, *new, key))
        .collect::<Result<Vec<Step>>>()?;
    if !touched.is_empty() && !db.one_unit_with_indexes(key, &guards) {
        let specs = touched.iter().map(|(spec, _)| *spec).collect();
        return Ok(Prepared::Stepped {
            guards,
            specs,
            steps,
        });
    }
    guard_unit(plan, db, key, guards);
    write(plan);
    add_blind(key, &steps, |cmd| {
        plan.add_ignored(cmd);
    });
    Ok(Prepared::Unit(steps))
}

/// The unique and tag commands of a write, decided on the old values and
/// the entries' holders, read through a checked run's [`Reader`].
pub(crate) struct Entries<'a, M> {
    db: &'a Db,
    key: &'a str,
    steps: &'a [Step],
    model: PhantomData<fn() -> M>,
}

impl<'a, M: Model> Entries<'a, M> {
    /// The decision of the unique and tag commands of `steps`, for the
    /// object at `key` (as `db` stores it).
    pub(crate) fn new(db: &'a Db, key: &'a str, steps: &'a [Step]) -> Self {
        Entries {
            db,
            key,
            steps,
            model: PhantomData,
        }
    }
}

impl<M: Model> Entries<'_, M> {
    /// The new text of `field` if a step of this write gives it one.
    fn new_text(&self, field: &[u8]) -> Option<&[u8]> {
        self.steps.iter().find_map(|step| match step {
            Step::Tags {
                field: name, text, ..
            } if name.as_bytes() == field => text.as_deref(),
            Step::Unique {
                field: name, new, ..
            } if name.as_bytes() == field => new.as_deref().map(str::as_bytes),
            _ => None,
        })
    }
}

impl<M: Model> Decide for Entries<'_, M> {
    /// The read of the old values (`HGET`/`HMGET` of the object's unique
    /// and tag fields) stands as answered absent where each field is
    /// absent or already holds its new value: there is nothing to leave or
    /// release either way, and the same entries to join.
    fn stands(&self, read: &Cmd, seen: &Value) -> bool {
        if crate::db::recall::is_absent(read, seen) {
            return true;
        }
        let mut args = crate::command::args(read).flatten();
        let (Some(name), Some(key)) = (args.next(), args.next()) else {
            return false;
        };
        let fields: SmallVec<[&[u8]; 4]> = args.collect();
        let seen = match (name, seen) {
            (b"HMGET", Value::Array(seen)) => seen.as_slice(),
            (b"HGET", seen) => std::slice::from_ref(seen),
            _ => return false,
        };
        key == self.key.as_bytes()
            && seen.len() == fields.len()
            && fields
                .into_iter()
                .zip(seen)
                .all(|(field, seen)| match seen {
                    Value::Nil => true,
                    Value::BulkString(old) => self.new_text(field) == Some(old.as_slice()),
                    _ => false,
                })
    }

    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        // Sorted and recent steps need no old value: their commands are
        // in the plan already.
        if !needs_old(self.steps) {
            return Ok(Vec::new());
        }
        let mut entries = Vec::new();
        add_watched_steps::<M, _>(reader, self.db, self.key, self.steps, &mut entries).await?;
        Ok(entries)
    }
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

/// Whether any of `steps` is decided on an old value: a unique or a tag
/// index's.
fn needs_old(steps: &[Step]) -> bool {
    steps
        .iter()
        .any(|s| matches!(s, Step::Unique { .. } | Step::Tags { .. }))
}

/// The fields whose old value a watched write reads.
fn old_fields(steps: &[Step]) -> SmallVec<[&'static str; 4]> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Unique { field, .. } | Step::Tags { field, .. } => Some(*field),
            _ => None,
        })
        .collect()
}

/// Rounds 1 and 2 of a watched write (read the old values and the unique
/// entries' holders under WATCH, refuse a value another live object
/// holds), then the unique and tag commands those reads call for, added
/// to `txn` (their replies to be dropped).
async fn add_watched_steps<M: Model, R: Reader>(
    tx: &R,
    db: &Db,
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
                    .map(|v| (unique_key(db, M::TABLE, field, v), None)),
                old_entry: None,
            }),
            _ => None,
        })
        .collect();
    let old = read_old(tx, db, key, &fields, &mut uniques).await?;
    let old_of = |field: &str| -> Option<&[u8]> {
        let i = fields.iter().position(|f| *f == field)?;
        old.get(i)?.as_deref()
    };
    for u in uniques.iter_mut() {
        let old_text = old_of(u.field).and_then(|t| std::str::from_utf8(t).ok());
        if let Some(old_text) = old_text.filter(|t| Some(*t) != u.new) {
            u.old_entry = Some((unique_key(db, M::TABLE, u.field, old_text), false));
        }
    }
    check_entries::<M, _>(tx, key, &mut uniques).await?;
    add_watched::<M>(txn, db, key, steps, &uniques, &old_of);
    Ok(())
}

/// Adds the unique and tag commands of a watched write to `txn` (their
/// replies to be dropped), from the old values (`old_of`) and the entries'
/// holders learned under WATCH.
fn add_watched<'o, M: Model>(
    txn: &mut Vec<Cmd>,
    db: &Db,
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
        if let Step::Tags {
            field,
            parse,
            new,
            text,
        } = s
        {
            let old_text = old_of(field);
            let old: BTreeSet<String> = old_text
                .filter(|old| Some(*old) != text.as_deref())
                .and_then(|t| parse(t).ok())
                .unwrap_or_default()
                .into_iter()
                .collect();
            // One buffer for every tag's key.
            let mut buf = String::with_capacity(M::TABLE.len() + field.len() + 32);
            let mut member = |name: &str, tag: &str| {
                let tag_key = key::tag_key_in(db, &mut buf, M::TABLE, field, tag);
                exact(name, &[tag_key.as_bytes(), key.as_bytes()])
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
    db: &Db,
    key: &str,
    changes: &Changes<'_>,
    txn: &mut Pipeline,
) -> Result<()> {
    let touched = touched::<M>(changes);
    let steps = touched
        .iter()
        .map(|(spec, new)| step::<M>(Some(db), spec, *new, key))
        .collect::<Result<Vec<Step>>>()?;
    let mut entries = Vec::new();
    add_blind(key, &steps, |cmd| entries.push(cmd));
    if touched.iter().any(|(spec, _)| spec.kind.needs_old()) {
        add_watched_steps::<M, _>(tx, db, key, &steps, &mut entries).await?;
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
        } = step::<M>(None, spec, *new, key)?
        {
            claims.push((field, value));
        }
    }
    Ok((touched.into_iter().map(|(spec, _)| spec).collect(), claims))
}

/// Round 1: WATCH the object and the unique entries to claim; read the
/// old values of `fields` ([`old_values_read`]) and, for each entry, its
/// holder and whether that holder holds the value: one SORT, so the two
/// agree, where SORT may read other keys (the plain layout). In the
/// cluster layout, where a cluster refuses SORT's GET patterns, the
/// entry's holder (LINDEX) and then the holder's field (HGET, the holder
/// WATCHed too): the entry is read first and re-checked with the write,
/// so a holder that gives the value up or claims it between the two
/// reads changes the entry and fails the write's check.
async fn read_old<R: Reader>(
    tx: &R,
    db: &Db,
    key: &str,
    fields: &[&str],
    uniques: &mut [UniqueState<'_>],
) -> Result<Vec<Option<Vec<u8>>>> {
    let sort = db.one_slot();
    let replies: Vec<Value> = {
        let mut watch: SmallVec<[&str; 4]> = SmallVec::new();
        watch.push(key);
        let mut read = Vec::with_capacity(1 + uniques.len());
        read.push(old_values_read(key, fields));
        for u in uniques.iter() {
            if let Some((entry, _)) = &u.new_entry {
                watch.push(entry);
                read.push(if sort {
                    holder_and_field_command(entry, u.field)
                } else {
                    holder_command(entry)
                });
            }
        }
        tx.read(&watch, read, false).await?
    };
    let mut replies = replies.into_iter();
    let old = old_values(fields, replies.next().unwrap_or(Value::Nil))?;
    for u in uniques.iter_mut() {
        if let Some((_, holder)) = u.new_entry.as_mut() {
            let reply = replies.next().unwrap_or(Value::Nil);
            let reply: Vec<Option<String>> = if sort {
                redis::from_redis_value::<Option<Vec<Option<String>>>>(reply)
            } else {
                redis::from_redis_value::<Option<String>>(reply).map(|h| Some(vec![h]))
            }
            .map_err(redis::RedisError::from)?
            .unwrap_or_default();
            *holder = match reply.as_slice() {
                [Some(h), value, ..] => Some((h.clone(), value.as_deref() == u.new)),
                [Some(h)] => Some((h.clone(), false)),
                _ => None,
            };
        }
    }
    if !sort {
        read_holders_fields(tx, uniques).await?;
    }
    Ok(old)
}

/// The read of the old values of `fields` (at least one) of the object at
/// `key`: `HGET` of the one field most writes read, whose reply is a
/// value, not an array (a guess, a reply and its parse allocate less),
/// else `HMGET`.
fn old_values_read(key: &str, fields: &[&str]) -> Cmd {
    let args: SmallVec<[&[u8]; 4]> = std::iter::once(key)
        .chain(fields.iter().copied())
        .map(str::as_bytes)
        .collect();
    exact(if fields.len() == 1 { "HGET" } else { "HMGET" }, &args)
}

/// The old values of `fields` from the reply of their read
/// ([`old_values_read`]), in order.
fn old_values(fields: &[&str], reply: Value) -> Result<Vec<Option<Vec<u8>>>> {
    let old = match fields.len() {
        1 => redis::from_redis_value(reply).map(|value| vec![value]),
        _ => redis::from_redis_value(reply),
    };
    Ok(old.map_err(redis::RedisError::from)?)
}

/// The second read of [`read_old`] in the cluster layout: whether each
/// entry's holder holds the value (HGET, the holders WATCHed). A holder
/// of another type reads as one that does not.
async fn read_holders_fields<R: Reader>(tx: &R, uniques: &mut [UniqueState<'_>]) -> Result<()> {
    let held: Vec<(usize, String)> = uniques
        .iter()
        .enumerate()
        .filter_map(|(i, u)| match &u.new_entry {
            Some((_, Some((holder, _)))) => Some((i, holder.clone())),
            _ => None,
        })
        .collect();
    if held.is_empty() {
        return Ok(());
    }
    let watch: SmallVec<[&str; 4]> = held.iter().map(|(_, h)| h.as_str()).collect();
    let reads = held
        .iter()
        .map(|(i, holder)| cmd("HGET").arg(holder).arg(uniques[*i].field).owned())
        .collect();
    let replies: Vec<Value> = tx.read(&watch, reads, true).await?;
    for ((i, _), reply) in held.iter().zip(replies) {
        let u = &mut uniques[*i];
        let value = redis::from_redis_value::<Option<String>>(reply).unwrap_or(None);
        if let Some((_, Some((_, holds)))) = u.new_entry.as_mut() {
            *holds = value.as_deref() == u.new;
        }
    }
    Ok(())
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
        if let Some((_, Some((holder, true)))) = &u.new_entry
            && holder != key
        {
            return Err(Error::Unique {
                model: M::TABLE,
                field: u.field,
                value: u.new.unwrap_or_default().to_string(),
                holder: crate::layout::plain_key(holder),
            });
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
/// sorted or recent index, where it did not run at once
/// ([`incr_prepared`] left it `pending`): `HINCRBY` (or `HINCRBYFLOAT`),
/// the new value as the score, and the recent list's push, in one atomic
/// unit (the plan of [`incr_plan`], run whole: one round trip on a
/// server). Returns the field's new text. An increment Redis
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
    pending: Box<Pending<'_>>,
) -> Result<NumberText> {
    let Pending { whole, specs } = *pending;
    if let Some(plan) = whole
        && let Some(text) = incr_whole::<M>(db, key, field, &plan, &specs).await?
    {
        return Ok(text);
    }
    // The object and its indexes in different slots (the cluster layout,
    // outside a slot group), or a server that refuses scripts: the object's step, then
    // the entries from the value it read back (see `stepped`).
    let write = |steps: &mut Plan| add_incr_read_back(steps, key, field, command, by);
    let guards = GuardKeys::from_iter([Cow::Borrowed(key)]);
    // Boxed, as the paths below that wait: their states would make every
    // increment's future kilobytes, copied whole where it is boxed.
    let (reply,): (Value,) =
        Box::pin(stepped::run::<M, _>(db, key, guards, &write, &specs, &[])).await?;
    let text = number_text(reply)?;
    for spec in &specs {
        if let IndexKind::Sorted { score } = spec.kind
            && let Err(reason) = score(&text)
        {
            return Err(overflow(key, field, &text, &reason));
        }
    }
    Ok(text)
}

/// Runs a plain field's increment plan ([`incr_plan`] without indexes)
/// where it cannot run at once: one script on a server, a WATCH
/// transaction where scripts are refused. The field's new text.
pub(crate) async fn run_incr(db: &Db, plan: Plan<'_>) -> Result<NumberText> {
    let (reply,): (Value,) = plan.run(db).await?;
    number_text(reply)
}

/// The increment of `field` of the object `key` (which must exist) as
/// one unit: `command` (HINCRBY or HINCRBYFLOAT) by `by`, the field read
/// back (the unit's one kept reply: exact, where a script's integer
/// reply would be a Lua number, rounded from 2^53 up), then, from that
/// text, the object's score in each sorted index of `indexes` and its
/// push to each recent list (`(index key, cap)`).
pub(crate) fn incr_plan<'k>(
    key: &'k str,
    field: &str,
    command: &str,
    by: &(impl ToRedisArgs + Sync),
    indexes: &[(String, Option<u32>)],
) -> Plan<'k> {
    let mut plan = Plan::new();
    plan.guard(key);
    add_incr_read_back(&mut plan, key, field, command, by);
    for (index, cap) in indexes {
        match cap {
            None => {
                // The score's placeholder takes the field's new text.
                let mut zadd = cmd("ZADD");
                zadd.arg(index.as_str()).arg(0).arg(key);
                plan.add_spliced(zadd, 1, 1);
            }
            Some(cap) => {
                let mut lrem = cmd("LREM");
                lrem.arg(index.as_str()).arg(0).arg(key);
                let mut lpush = cmd("LPUSH");
                lpush.arg(index.as_str()).arg(key);
                let mut ltrim = cmd("LTRIM");
                ltrim.arg(index.as_str()).arg(0).arg(i64::from(*cap) - 1);
                plan.add_ignored(lrem).add_ignored(lpush).add_ignored(ltrim);
            }
        }
    }
    plan
}

/// The text of a number a field holds: inline up to 24 bytes (every
/// integer, most floats), so an increment's result costs no allocation.
pub(crate) type NumberText = smallvec::SmallVec<[u8; 24]>;

/// The text of a HINCRBY (integer) or HINCRBYFLOAT (bulk string) reply,
/// or of the field read back.
pub(crate) fn number_text(reply: Value) -> Result<NumberText> {
    Ok(match reply {
        Value::Int(n) => NumberText::from_slice(itoa::Buffer::new().format(n).as_bytes()),
        other => NumberText::from_vec(
            redis::from_redis_value::<Vec<u8>>(other).map_err(redis::RedisError::from)?,
        ),
    })
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
    steps.add_ignored(incr).add_field_read_back();
}

/// Runs `plan`, the increment with the index entries of `specs` as one
/// atomic unit ([`incr_plan`], run whole: one round trip on a server).
/// `None` where it cannot run whole (a server that refuses scripts): the
/// caller takes the path without.
async fn incr_whole<M: Model>(
    db: &Db,
    key: &str,
    field: &'static str,
    plan: &Plan<'_>,
    specs: &[&'static IndexSpec],
) -> Result<Option<NumberText>> {
    let Some((reply,)) = plan.run_whole::<(Value,)>(db).await? else {
        return Ok(None);
    };
    let text = number_text(reply)?;
    let scored = scored(specs, &text);
    settle::<M>(db, key, field, text, scored).await.map(Some)
}

/// An increment of an indexed field, as [`incr_prepared`] leaves it.
pub(crate) enum IndexedIncr<'k> {
    /// Run at once, in process: the field's new text, and whether the
    /// scores stored hold ([`settle`] makes them hold).
    Ran(NumberText, Scored),
    /// To run with [`incr_indexed`] (boxed: a plan is large, and this
    /// path waits on a round trip anyway).
    Pending(Box<Pending<'k>>),
}

/// An increment of an indexed field still to run: its plan as one unit,
/// where the object and its indexes make one, and the field's indexes.
pub(crate) struct Pending<'k> {
    whole: Option<Plan<'k>>,
    specs: SmallVec<[&'static IndexSpec; 2]>,
}

/// The increment of an indexed field, planned ([`incr_plan`] with the
/// field's index entries, where the object and its indexes make one
/// unit) and, in process, run at once under the engine's lock, with no
/// future. An error for a field that cannot be incremented.
pub(crate) fn incr_prepared<'k, M: Model>(
    db: &Db,
    key: &'k str,
    field: &'static str,
    command: &str,
    by: &(impl ToRedisArgs + Sync),
) -> Result<IndexedIncr<'k>> {
    let specs = incr_specs::<M>(key, field)?;
    if !db.one_unit_with_indexes(key, &[]) {
        let whole = None;
        return Ok(IndexedIncr::Pending(Box::new(Pending { whole, specs })));
    }
    let indexes = incr_indexes::<M>(db, field, &specs);
    let plan = incr_plan(key, field, command, by, &indexes);
    match plan.now::<(Value,)>(db) {
        Some(ran) => {
            let text = number_text(ran?.0)?;
            let scored = scored(&specs, &text);
            Ok(IndexedIncr::Ran(text, scored))
        }
        None => {
            let whole = Some(plan);
            Ok(IndexedIncr::Pending(Box::new(Pending { whole, specs })))
        }
    }
}

/// The indexes of `M` on `field`, which an increment moves: an error for
/// a unique one, which cannot be incremented.
fn incr_specs<M: Model>(key: &str, field: &str) -> Result<SmallVec<[&'static IndexSpec; 2]>> {
    // A field has an index or two: kept inline, as the lists below.
    let specs: SmallVec<[&'static IndexSpec; 2]> =
        M::INDEXES.iter().filter(|s| s.field == field).collect();
    if specs.iter().any(|s| matches!(s.kind, IndexKind::Unique)) {
        return Err(Error::Encode {
            key: key.to_string(),
            field: field.to_string(),
            reason: "a unique field cannot be incremented (its new value must be claimed before it is written): `set` it instead".to_string(),
        });
    }
    Ok(specs)
}

/// The index keys an increment of `field` writes (as `db` stores them):
/// each sorted index, then each recent list with its cap.
fn incr_indexes<M: Model>(
    db: &Db,
    field: &str,
    specs: &[&'static IndexSpec],
) -> SmallVec<[(String, Option<u32>); 2]> {
    let sorted = specs
        .iter()
        .filter(|s| matches!(s.kind, IndexKind::Sorted { .. }))
        .map(|_| (sorted_key(db, M::TABLE, field), None));
    let recent = specs.iter().filter_map(|spec| match spec.kind {
        IndexKind::Recent { cap } => Some((recent_key(db, M::TABLE, field), Some(cap))),
        _ => None,
    });
    sorted.chain(recent).collect()
}

/// Whether the scores an increment stored in its sorted indexes hold.
pub(crate) enum Scored {
    /// Each is the score the field's codec gives its new text.
    Exact,
    /// Redis parsed the text as a score differently from the field's
    /// codec (a float HINCRBYFLOAT wrote in long double): the codec's
    /// score wins, set again from the field.
    Resync(&'static IndexSpec),
    /// The new value cannot be a score: the object leaves the index.
    Overflow(String),
}

/// Whether the scores stored from `text` in the sorted indexes of `specs`
/// hold (see [`Scored`]).
fn scored(specs: &[&'static IndexSpec], text: &[u8]) -> Scored {
    for &spec in specs {
        let IndexKind::Sorted { score } = spec.kind else {
            continue;
        };
        // The score ZADD stored: the text parsed as a double, as Redis
        // parses it.
        let stored: Option<f64> = std::str::from_utf8(text).ok().and_then(|t| t.parse().ok());
        match score(text) {
            Ok(Some(expected)) if Some(expected) == stored => {}
            Ok(_) => return Scored::Resync(spec),
            Err(reason) => return Scored::Overflow(reason),
        }
    }
    Scored::Exact
}

/// Makes the scores of an increment hold, as [`scored`] found them: the
/// codec's score set again, or the object taken out of an index its new
/// value cannot score in ([`Error::ScoreOverflow`]). The field's new text.
pub(crate) async fn settle<M: Model>(
    db: &Db,
    key: &str,
    field: &str,
    text: NumberText,
    scored: Scored,
) -> Result<NumberText> {
    match scored {
        Scored::Exact => {}
        Scored::Resync(spec) => Box::pin(resync_score::<M>(db, key, spec)).await?,
        Scored::Overflow(reason) => {
            db.query::<()>(cmd("ZREM").arg(sorted_key(db, M::TABLE, field)).arg(key))
                .await?;
            return Err(overflow(key, field, &text, &reason));
        }
    }
    Ok(text)
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
/// current value ([`Resync`]), the read and the write one checked unit so
/// that a concurrent write cannot be overwritten by an older value.
async fn resync_score<M: Model>(db: &Db, key: &str, spec: &IndexSpec) -> Result<()> {
    let IndexKind::Sorted { score } = spec.kind else {
        return Ok(());
    };
    let resync = Resync {
        key,
        field: spec.field,
        index: sorted_key(db, M::TABLE, spec.field),
        score,
    };
    checked::run::<()>(db, key, &[], &[], &resync).await
}

/// The score of `key` in `index` set from the field's text as the field's
/// codec reads it; removed if it reads none (an absent field, a text that
/// is no score).
struct Resync<'a> {
    key: &'a str,
    field: &'static str,
    index: String,
    score: fn(&[u8]) -> std::result::Result<Option<f64>, String>,
}

impl Decide for Resync<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        let mut read = cmd("HGET");
        read.arg(self.key).arg(self.field);
        let text = match reader.read(&[self.key], vec![read], false).await?.pop() {
            Some(Value::BulkString(text)) => Some(text),
            _ => None,
        };
        let mut write = match text.as_deref().map(self.score) {
            Some(Ok(Some(s))) => {
                let mut zadd = cmd("ZADD");
                zadd.arg(&self.index)
                    .arg(score_arg(checked_score(self.field, s)?));
                zadd
            }
            _ => {
                let mut zrem = cmd("ZREM");
                zrem.arg(&self.index);
                zrem
            }
        };
        write.arg(self.key);
        Ok(vec![write])
    }
}
