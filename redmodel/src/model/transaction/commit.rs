//! The commit of a typed transaction: the queued writes, their index
//! entries and existence checks in one MULTI/EXEC, and what follows it.

use redis::{Cmd, Pipeline, Value};

use super::queued::Pending;
use super::upkeep::Upkeep;
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::optimistic::RawTransaction;
use crate::layout::plain_key;
use crate::model::index::IndexSpec;
use crate::model::write::{self, IndexPlan, Prior, PriorRead, Texts};
use crate::sync_hook::SyncEvent;
use crate::{Db, Error, Result};

/// One write's part of the commit, in the cluster layout: the indexes it
/// touches, and the unique entries it claimed before the EXEC.
struct Stepped {
    specs: Vec<&'static IndexSpec>,
    claimed: Vec<write::Claim>,
    /// What the EXEC reads first, for undoing a write of references.
    prior: Option<PriorRead>,
}

impl Pending {
    /// Commits the queued writes on `raw`'s connection: `None` if a
    /// watched key changed (nothing written), else what is left to do once
    /// the connection is given back.
    pub(super) async fn commit(self, raw: &RawTransaction, db: &Db) -> Result<Option<Committed>> {
        if let Some(err) = self.error {
            return Err(err);
        }
        if let Some(first) = &self.first_key {
            raw.route_by(first).await;
        }
        // Everything that can be refused without a round trip, first.
        let plans = self
            .writes
            .iter()
            .map(|w| w.upkeep.plan(&w.key, &w.changes()))
            .collect::<Result<Vec<_>>>()?;
        self.check_unique_claims(&plans)?;
        self.check_guards(raw, db).await?;
        let mut txn = redis::pipe();
        txn.atomic();
        let mut stepped: Vec<Stepped> = Vec::new();
        // The transaction's keys share a slot; the index entries join its
        // EXEC where they share it too (always in the plain layout; in the
        // cluster layout, when every table written is in a slot group).
        let one_unit = self
            .writes
            .iter()
            .all(|w| db.one_unit_with_indexes(&w.key, &[]));
        for (write, (specs, claims)) in self.writes.iter().zip(plans) {
            let changes = write.changes();
            if !one_unit {
                let claimed = if claims.is_empty() {
                    Vec::new()
                } else {
                    match write.upkeep.claim(db, &write.key, &claims).await {
                        Ok(claimed) => claimed,
                        Err(err) => {
                            self.release(db, &stepped).await;
                            return Err(err);
                        }
                    }
                };
                let prior = write.upkeep.prior_read(db, &write.key, &write.fields);
                if let Some(prior) = &prior {
                    for read in prior.cmds() {
                        txn.add_command(read.clone());
                    }
                }
                let fields: Vec<&str> = specs.iter().map(|s| s.field).collect();
                if !specs.is_empty() {
                    txn.command("HMGET").arg(&write.key).arg(&fields);
                }
                add_cmds(&mut txn, &write.cmds);
                if !specs.is_empty() {
                    txn.command("HMGET").arg(&write.key).arg(&fields);
                }
                stepped.push(Stepped {
                    specs,
                    claimed,
                    prior,
                });
            } else {
                add_cmds(&mut txn, &write.cmds);
                write
                    .upkeep
                    .add_entries(raw, db, &write.key, &changes, &mut txn)
                    .await?;
            }
        }
        for list in &self.lists {
            for cmd in &list.cmds {
                txn.add_command(cmd.clone()).ignore();
            }
        }
        // Last, once the transaction's own writes made what they name.
        for mark in self.writes.iter().flat_map(|w| &w.marks) {
            txn.add_command(mark.clone()).ignore();
        }
        let replies = match raw.exec_whole::<Vec<Value>>(&txn).await {
            Ok(Some(replies)) => replies,
            Ok(None) => {
                self.release(db, &stepped).await;
                return Ok(None);
            }
            Err(err) => {
                self.release(db, &stepped).await;
                return Err(err);
            }
        };
        let mut replies = replies.into_iter();
        let mut done = Vec::with_capacity(self.writes.len());
        let mut stepped = stepped.into_iter();
        for write in self.writes {
            let step = stepped.next();
            let prior = match step.as_ref().and_then(|s| s.prior.as_ref()) {
                Some(read) => {
                    let kept: Vec<Value> = replies.by_ref().take(2).collect();
                    Some(read.parse(&kept)?)
                }
                None => None,
            };
            let step = step.filter(|s| !s.specs.is_empty());
            let old: Option<Texts> = step.as_ref().map(|_| texts(replies.next())).transpose()?;
            let mut count = None;
            for _ in write.cmds.iter().filter(|(_, keep)| *keep) {
                let reply = replies.next().unwrap_or(Value::Nil);
                count =
                    Some(redis::from_redis_value::<u64>(reply).map_err(redis::RedisError::from)?);
            }
            let settle = match (step, old) {
                (Some(step), Some(old)) => Some((step, old, texts(replies.next())?)),
                _ => None,
            };
            let set = write
                .fields
                .into_iter()
                .filter_map(|(name, text)| Some((name, text?)))
                .collect();
            done.push(Done {
                key: write.key,
                plain: write.plain,
                upkeep: write.upkeep,
                settle,
                count,
                set,
                prior,
            });
        }
        Ok(Some(Committed(done)))
    }

    /// Refuses two writes of the transaction that claim one unique value:
    /// each would see it free, and the second would take it from the first.
    fn check_unique_claims(&self, plans: &[IndexPlan]) -> Result<()> {
        let mut seen: Vec<(&'static str, &'static str, &str, &str)> = Vec::new();
        for (write, (_, claims)) in self.writes.iter().zip(plans) {
            let table = write.upkeep.table();
            for (field, value) in claims {
                if let Some((.., holder)) = seen
                    .iter()
                    .find(|(t, f, v, _)| *t == table && f == field && v == value)
                {
                    return Err(Error::Unique {
                        model: table,
                        field,
                        value: value.clone(),
                        holder: holder.to_string(),
                    });
                }
                seen.push((table, field, value, &write.plain));
            }
        }
        Ok(())
    }

    /// Checks that what the writes need exists: each object a field write
    /// names (before the transaction), and each admin or referenced object
    /// (after the transaction's own writes). Keys a read already saw
    /// under WATCH, or that the transaction writes, are settled without a
    /// round trip; the others are WATCHed and checked in one (in the
    /// cluster layout, a key in another slot is checked without WATCH,
    /// just before the EXEC, as every cluster-layout write checks it).
    async fn check_guards(&self, raw: &RawTransaction, db: &Db) -> Result<()> {
        let mut unknown: Vec<String> = Vec::new();
        let mut settle = |key: &str, plain: &str, needed_before: bool| -> Result<()> {
            let written = self.writes.iter().find(|w| w.key == key);
            let exists = match written {
                Some(w) if !needed_before => Some(w.exists_after()),
                _ => self
                    .known
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key)
                    .map(|(_, e)| *e),
            };
            match exists {
                Some(true) => Ok(()),
                Some(false) => Err(Error::NotFound {
                    key: plain.to_string(),
                }),
                None => {
                    unknown.push(key.to_string());
                    Ok(())
                }
            }
        };
        for write in &self.writes {
            if write.must_exist {
                settle(&write.key, &write.plain, true)?;
            }
            for guard in &write.guards {
                settle(guard, &plain_key(guard), false)?;
            }
        }
        for guard in &self.guards {
            settle(guard, &plain_key(guard), false)?;
        }
        unknown.sort_unstable();
        unknown.dedup();
        if unknown.is_empty() {
            return Ok(());
        }
        let here = self.first_key.as_deref();
        let (near, far): (Vec<String>, Vec<String>) = unknown
            .into_iter()
            .partition(|k| here.is_none_or(|h| db.shares_slot(h, k)));
        let mut exists: Vec<(String, bool)> = Vec::new();
        if !near.is_empty() {
            let found: Vec<bool> = raw
                .watch_then(&near, |read| {
                    for key in &near {
                        read.command("EXISTS").arg(key);
                    }
                })
                .await?;
            exists.extend(near.into_iter().zip(found));
        }
        for key in far {
            let found = db.query(cmd("EXISTS").arg(&key)).await?;
            exists.push((key, found));
        }
        match exists.into_iter().find(|(_, e)| !e) {
            Some((key, _)) => Err(Error::NotFound {
                key: plain_key(&key),
            }),
            None => Ok(()),
        }
    }

    /// Releases the unique claims of a commit that did not happen.
    async fn release(&self, db: &Db, stepped: &[Stepped]) {
        for (write, step) in self.writes.iter().zip(stepped) {
            write::release_all(db, &step.claimed, &write.key).await;
        }
    }
}

/// A committed transaction's writes, with what follows the EXEC: the
/// cluster layout's index steps (which need no WATCH, so they run after
/// the transaction's connection is given back) and the sync hooks.
pub(super) struct Committed(Vec<Done>);

/// One committed object write.
struct Done {
    key: String,
    plain: String,
    upkeep: Box<dyn Upkeep>,
    /// The cluster layout: the indexes to bring in step, from the fields'
    /// texts before and after the EXEC.
    settle: Option<(Stepped, Texts, Texts)>,
    /// The `_count` a full write left.
    count: Option<u64>,
    /// The fields written with a value (for the cluster layout's second
    /// check of reference fields).
    set: Vec<(&'static str, Vec<u8>)>,
    /// What those fields held before the EXEC, where a recheck may undo it.
    prior: Option<Prior>,
}

impl Committed {
    pub(super) async fn finish(self, db: &Db) -> Result<()> {
        for done in self.0 {
            if let Some((step, old, new)) = done.settle {
                done.upkeep
                    .settle(db, &done.key, &step.specs, &step.claimed, old, new)
                    .await?;
            }
            // A reference's target in another slot was checked before the
            // EXEC, not with it (see `ObjectRef::set`).
            done.upkeep
                .recheck(db, &done.key, &done.set, done.prior.as_ref())
                .await?;
            let every = done.upkeep.sync_every().max(1);
            if let Some(count) = done.count.filter(|c| *c > 0 && c % every == 0) {
                db.run_sync_hooks(&SyncEvent {
                    table: done.upkeep.table(),
                    key: done.plain,
                    count,
                });
            }
        }
        Ok(())
    }
}

/// Adds an object's commands to the EXEC (their replies ignored unless
/// kept).
fn add_cmds(txn: &mut Pipeline, cmds: &[(Cmd, bool)]) {
    for (cmd, keep) in cmds {
        txn.add_command(cmd.clone());
        if !keep {
            txn.ignore();
        }
    }
}

/// The texts of an HMGET reply.
fn texts(reply: Option<Value>) -> Result<Texts> {
    Ok(redis::from_redis_value(reply.unwrap_or(Value::Nil)).map_err(redis::RedisError::from)?)
}
