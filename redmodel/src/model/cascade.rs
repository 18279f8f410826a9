//! Cascading deletes: deleting an admin removes every trace of it, in one
//! MULTI/EXEC, or refuses when a `restrict` declaration says so.
//!
//! [`ObjectRef::delete_cascade`] removes the admin's hash, its sub-objects
//! and its relation lists (its subtree, every key under `teacher:A:`), its
//! entries in its model's indexes, its key from every relation list that
//! holds it (the inverse lists of the objects it was linked to, and lists
//! of relations without an inverse), and treats each reference field that
//! points at it by the field's `on_delete`: `restrict` refuses the delete,
//! `clear` removes the field (HDEL), `delete` deletes the referring object
//! first (its own cascade, as a step before the admin's). Afterwards no
//! key names it.
//!
//! # Finding what points at an admin: a registry of referrers
//!
//! An admin alone cannot tell who points at it: relations of other owners
//! name it as their member, and other models hold `Ref<M>` fields. Each
//! `#[derive(Relation)]` and each `Ref<M>` field of a derived model
//! therefore registers a [`Referrer`] ("lists `class:*:student` may hold
//! `student` keys", "field `class` of the hashes `student:*` may hold a
//! `class` key") in a process-wide registry gathered at program start by
//! the `inventory` crate (no code to call). The cascade reads the registry entries whose target
//! is the admin's model, and for each one SCANs (MATCH with escaped
//! patterns, never KEYS) the referring keys and checks them in one
//! pipelined batch (`LPOS`, `HGET`). The reference fields registered for
//! the models of the admin's sub-objects are read the same way, for each
//! sub-object of its subtree: they are treated by their rules as the
//! admin's own, since the sub-objects go with it.
//!
//! Why SCAN rather than a reverse index (a `TABLE:_refs:PK` set kept in
//! step by every link and reference write): a reverse index would make
//! every `append`, `link` and every write of a reference field a watched
//! transaction (three round trips instead of one), and would itself go
//! stale when another program writes the lists. The SCAN is exact (it
//! reads what is stored) and costs only the rare delete: one SCAN pass per
//! referring relation or field (the server walks the whole keyspace for
//! each, returning only the matching keys) plus one batch of checks.
//!
//! # Atomicity
//!
//! On a connection of its own, the cascade WATCHes the admin, its subtree
//! and every list its own relations may hold (existing or not), reads what
//! to clean, WATCHes every other key it will change, and runs all the
//! deletions in one MULTI/EXEC. If a watched key changes meanwhile (a concurrent `link`
//! writes the admin's own inverse list), EXEC does nothing and the whole
//! attempt is repeated, up to 32 times, then [`Error::Conflict`].
//! A `restrict` referrer that still holds the admin makes the delete fail
//! with [`Error::Restricted`] naming the key, before anything is written.
//! Every write of a reference field marks the object it names
//! ([`REFS_FIELD`], in the write's atomic unit), and the admin is WATCHed:
//! a reference written while the referrers are read aborts the EXEC, so
//! the restrict check and the delete are one guarded write.
//!
//! # Cluster layout
//!
//! In the [cluster layout](crate::KeyLayout::Cluster) the admin's subtree is
//! one slot, but its index entries and the lists and hashes that point at
//! it are in others, so no transaction holds them all. The cascade is then
//! a sequence of steps, each atomic in its slot:
//!
//! 1. the admin, its sub-objects and its own relation lists are deleted in
//!    one MULTI/EXEC (WATCHing the subtree, as above), reading its indexed
//!    fields on the way; the referrers are read under that WATCH (a
//!    `restrict` one refuses, [`Error::Restricted`], nothing written). A
//!    reference write marks its target in the target's slot after its own
//!    write, so one racing the reads aborts the EXEC, and one whose mark
//!    comes after the EXEC finds the target gone and undoes itself (see
//!    `write::recheck_references`);
//! 2. its index entries are removed (see `write::stepped`);
//! 3. its key is removed from every relation list that holds it (LREM) and
//!    every `clear` reference field that names it (HDEL if it still does).
//!
//! A crash after step 1 leaves entries that name a gone object: every read
//! skips and prunes those, and running the delete again (idempotent)
//! finishes the job. A write racing the steps may re-create a key under the
//! deleted admin (a `link` whose own list lands after step 1): the cascade
//! then sweeps again, while the admin stays deleted, up to four times.
//!
//! Every sweep (in either layout) acts only while the admin is absent: an
//! admin inserted again meanwhile is a new object, and its links and the
//! references to it are left alone (checked under WATCH with each list or
//! hash in the plain layout; just before, in the cluster layout, where they
//! are in other slots).
//!
//! One window stays open: a member added after the SCAN to a list the
//! SCAN did not see (a new list of a relation without inverse) is not
//! watched. Such an entry is a
//! dangling reference, which the reads prune (see [`index`](super::index))
//! like the entries of an expired object. Relations with an inverse have no
//! such window: their `link` writes the admin's own list, which is watched.

use redis::Pipeline;

use super::key::glob_escape;
use super::object::ObjectRef;
use super::referrer::{clear_reference, write_if_absent};
pub use super::referrer::{
    referrers_of, BoxFuture, DeleteFn, OnDelete, Reference, Referrer, ReferrerKind, REFS_FIELD,
};
use super::scan::scan_keys;
use super::write::{add_entries, unindex, Changes, Texts};
use super::Admin;
use crate::command::{cmd, AddCommand as _, Owned};
use crate::db::optimistic::{watched, RawTransaction};
use crate::{Db, Error, Result};

/// How many times a cascade sweeps an admin's subtree that racing writes
/// keep re-creating.
const MAX_SWEEPS: usize = 4;

/// The keys of the lists `owner_key` (an object of the model `owner_table`)
/// holds for every registered relation it owns, whether they exist or not.
fn own_lists(db: &Db, owner_table: &str, owner_key: &str) -> Vec<String> {
    let mut keys: Vec<String> = inventory::iter::<Referrer>
        .into_iter()
        .filter_map(|r| match r.kind {
            ReferrerKind::List {
                owner_table: owner,
                table,
            } if owner == owner_table => {
                Some(db.stored(&format!("{owner_key}:{table}")).into_owned())
            }
            _ => None,
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// What one attempt found to clean.
#[derive(Default)]
struct Plan {
    /// Keys to DEL: the subtree.
    delete: Vec<String>,
    /// Lists to LREM the admin's key from.
    lists: Vec<String>,
    /// (hash, field, the plain key it names) to HDEL.
    fields: Vec<(String, &'static str, String)>,
    /// Referring objects (plain keys) to delete first, with how.
    doomed: Vec<(String, DeleteFn)>,
}

/// What one attempt of a cascade came to.
enum Outcome {
    /// The admin was deleted (whether it existed), or a sweep found it
    /// created again.
    Deleted(bool),
    /// Objects whose `on_delete = "delete"` reference holds the admin:
    /// to delete before trying again.
    First(Vec<(String, DeleteFn)>),
}

/// How many rounds of deleting `on_delete = "delete"` referrers a cascade
/// makes before giving up with [`Error::Conflict`] (each round deletes
/// every referrer found; only new ones written meanwhile need another).
const MAX_ROUNDS: u32 = 32;

impl<A: Admin> ObjectRef<A> {
    /// Deletes this admin and every reference to it, atomically (see
    /// [`cascade`](super::cascade)): its hash, sub-objects and relation
    /// lists, its index entries, its key in every relation list, and the
    /// reference fields pointing at it by their `on_delete`: `clear` ones
    /// removed (HDEL), the objects of `delete` ones deleted first (each
    /// with its own cascade). Whether the admin existed.
    ///
    /// [`Error::Restricted`] (nothing of this admin written) if a
    /// `restrict` referrer still holds it (a required `Ref<M>` by
    /// default); [`Error::Conflict`] if concurrent writes aborted every
    /// attempt. A refusal met while deleting the `delete` referrers leaves
    /// those already deleted deleted: each is consistent on its own.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = A::TABLE, op = "delete_cascade", key = %self.key()))]
    pub async fn delete_cascade(&self, db: &Db) -> Result<bool> {
        self.delete_within(db, &[]).await
    }

    /// [`delete_cascade`](Self::delete_cascade) as a step of the deletes
    /// in `chain` (plain keys), which delete this admin as an
    /// `on_delete = "delete"` referrer: a referrer in the chain is left to
    /// the delete that is already under way (a cycle of such references
    /// ends there).
    pub(crate) async fn delete_within(&self, db: &Db, chain: &[String]) -> Result<bool> {
        let referrers = referrers_of(A::TABLE);
        let existed = self.cascade_once(db, &referrers, chain, false).await?;
        // A write that lands between the cascade's listing of the subtree
        // and its delete (a sub-object inserted while the admin still
        // existed, a link's own side in the cluster layout) is not in what
        // the delete removed. Once the admin is gone no such write lands
        // (they need it to exist), so sweeping again while the admin is
        // absent and keys remain under it leaves nothing behind.
        for _ in 1..MAX_SWEEPS {
            let orphans = self.tree_keys(db).await?.len() > 1 && !self.exists(db).await?;
            if !orphans {
                break;
            }
            // Only while the admin is still absent: one re-created
            // meanwhile is a new object, not a leftover.
            self.cascade_once(db, &referrers, chain, true).await?;
        }
        // A reference written between the transaction's SCAN of the
        // referrers and its EXEC (its target still existed) is not in what
        // the EXEC removed; none can be written after (a reference needs
        // its target to exist), so one more sweep finds them all.
        if db.one_slot() && !self.exists(db).await? {
            let cascade: Vec<&Referrer> = referrers
                .iter()
                .copied()
                .filter(|r| matches!(r.on_delete, OnDelete::Cascade | OnDelete::Clear))
                .collect();
            self.sweep_references(db, &cascade).await?;
        }
        Ok(existed)
    }

    /// One cascade: one optimistic transaction in the plain layout, the
    /// steps of the cluster layout; before either, as many rounds as it
    /// takes of deleting the `on_delete = "delete"` referrers it finds.
    /// A `sweep` (after the first cascade) does nothing if the admin
    /// exists again, checked under WATCH with its own deletions.
    async fn cascade_once(
        &self,
        db: &Db,
        referrers: &[&'static Referrer],
        chain: &[String],
        sweep: bool,
    ) -> Result<bool> {
        let mut within: Vec<String> = chain.to_vec();
        within.push(self.key().to_string());
        let within = &within;
        for _ in 0..MAX_ROUNDS {
            let outcome = if db.one_slot() {
                watched(db, &self.key_in(db), |tx| async move {
                    self.attempt_cascade(db, &tx, referrers, within, sweep)
                        .await
                })
                .await?
            } else {
                self.cascade_steps_once(db, referrers, within, sweep)
                    .await?
            };
            match outcome {
                Outcome::Deleted(existed) => return Ok(existed),
                Outcome::First(doomed) => {
                    for (key, delete) in doomed {
                        delete(db, key, within).await?;
                    }
                }
            }
        }
        Err(Error::Conflict {
            attempts: MAX_ROUNDS,
            key: Some(self.key().to_string()),
        })
    }

    /// In a sweep, whether the admin exists again (WATCHed first, so that
    /// one re-created before the EXEC aborts it).
    async fn recreated(&self, db: &Db, tx: &RawTransaction, sweep: bool) -> Result<bool> {
        if !sweep {
            return Ok(false);
        }
        let key = self.key_in(db);
        let (exists,): (bool,) = tx
            .watch_then(key.as_ref(), |read| {
                read.command("EXISTS").arg(key.as_ref());
            })
            .await?;
        Ok(exists)
    }

    /// One attempt: `None` if a concurrent write aborted it.
    ///
    /// The admin, its subtree and the keys of its own relation lists
    /// (existing or not: WATCH sees a key being created) are WATCHed
    /// before the referrers are read, so a concurrent `link` of a relation
    /// with an inverse (which writes the admin's own list) aborts the EXEC.
    /// The subtree is listed again after that WATCH: a sub-object created
    /// in between (unwatched) makes the attempt start over. A reference
    /// field written meanwhile marks the admin ([`REFS_FIELD`]), which
    /// aborts the EXEC too: the restrict check and the delete are one
    /// guarded write.
    async fn attempt_cascade(
        &self,
        db: &Db,
        tx: &RawTransaction,
        referrers: &[&'static Referrer],
        chain: &[String],
        sweep: bool,
    ) -> Result<Option<Outcome>> {
        if self.recreated(db, tx, sweep).await? {
            return Ok(Some(Outcome::Deleted(false)));
        }
        let key = &*self.key_in(db);
        let tree = self.tree_keys(db).await?;
        let own = own_lists(db, A::TABLE, self.key());
        tx.watch((&tree, &own)).await?;
        let mut plan = Plan {
            delete: self.tree_keys(db).await?,
            ..Plan::default()
        };
        if plan.delete != tree {
            return Ok(None);
        }
        for referrer in referrers {
            self.find_references(db, referrer, chain, &mut plan).await?;
        }
        self.find_subtree_references(db, &tree, chain, &mut plan)
            .await?;
        if !plan.doomed.is_empty() {
            return Ok(Some(Outcome::First(plan.doomed)));
        }
        let mut watch: Vec<&str> = vec![key];
        watch.extend(plan.lists.iter().map(String::as_str));
        watch.extend(plan.fields.iter().map(|(hash, _, _)| hash.as_str()));
        tx.watch(&watch).await?;

        let mut txn = redis::pipe();
        txn.atomic();
        txn.command("EXISTS").arg(key);
        add_entries::<A>(tx, db, key, &Changes::Delete, &mut txn).await?;
        add_plan(&mut txn, key, &plan);
        let done: Option<(bool,)> = tx.exec_whole(&txn).await?;
        Ok(done.map(|(existed,)| Outcome::Deleted(existed)))
    }

    /// Adds to `plan` the references `referrer` holds to this admin (a
    /// referring object in `chain`, whose delete is under way, is left to
    /// it); [`Error::Restricted`] if it is a restrict referrer holding one.
    async fn find_references(
        &self,
        db: &Db,
        referrer: &Referrer,
        chain: &[String],
        plan: &mut Plan,
    ) -> Result<()> {
        self.find_references_to(db, referrer, self.key(), chain, plan)
            .await
    }

    /// Adds to `plan` the references to the sub-objects among `tree` (the
    /// admin's subtree, as stored) that the reference fields registered
    /// for their models hold, as [`find_references`](Self::find_references)
    /// adds the admin's: a `restrict` one refuses the delete, a `delete`
    /// one is deleted first, a `clear` one is removed. The subtree is
    /// WATCHed, and a reference write marks the sub-object it names, so
    /// one written while these are read aborts the EXEC.
    async fn find_subtree_references(
        &self,
        db: &Db,
        tree: &[String],
        chain: &[String],
        plan: &mut Plan,
    ) -> Result<()> {
        let prefix = format!("{}:", self.key());
        // The admin's own relation lists are in the subtree too, and are
        // not objects that a reference field names.
        let lists = own_lists(db, A::TABLE, self.key());
        for stored in tree.iter().filter(|key| !lists.contains(key)) {
            let plain = crate::layout::plain_key(stored);
            let Some((table, _)) = plain
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split_once(':'))
            else {
                continue;
            };
            for referrer in referrers_of(table) {
                if matches!(referrer.kind, ReferrerKind::Field { .. }) {
                    self.find_references_to(db, referrer, &plain, chain, plan)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// [`find_references`](Self::find_references) to `target` (a plain
    /// key): the admin, or a sub-object of its subtree.
    async fn find_references_to(
        &self,
        db: &Db,
        referrer: &Referrer,
        target: &str,
        chain: &[String],
        plan: &mut Plan,
    ) -> Result<()> {
        let key = &*db.stored(target);
        let (candidates, mut check) = match &referrer.kind {
            ReferrerKind::List { owner_table, table } => {
                let pattern = format!("{}:*:{}", glob_escape(owner_table), glob_escape(table));
                let lists = scan_keys(db, &db.stored(&pattern)).await?;
                let mut check = redis::pipe();
                for list in &lists {
                    check.command("LPOS").arg(list).arg(key);
                }
                (lists, check)
            }
            ReferrerKind::Field {
                field,
                pattern,
                is_object,
                ..
            } => {
                let hashes: Vec<String> = scan_keys(db, &db.stored(&pattern()))
                    .await?
                    .into_iter()
                    .filter(|k| is_object(k))
                    .collect();
                let mut check = redis::pipe();
                for hash in &hashes {
                    check.command("HGET").arg(hash).arg(*field);
                }
                (hashes, check)
            }
        };
        if candidates.is_empty() {
            return Ok(());
        }
        check.ignore_errors();
        let replies: Vec<redis::Value> = db.query_pipeline(&check).await?;
        for (candidate, reply) in candidates.into_iter().zip(replies) {
            let holds = match (&referrer.kind, reply) {
                (ReferrerKind::List { .. }, redis::Value::Int(_)) => true,
                // A reference field holds the plain key.
                (ReferrerKind::Field { .. }, redis::Value::BulkString(v)) => v == target.as_bytes(),
                _ => false,
            };
            // The same place may be registered twice (a model declared in
            // two modules of one program): count it once.
            let plain = crate::layout::plain_key(&candidate);
            let known = plan.delete.contains(&candidate)
                || chain.contains(&plain)
                || plan.doomed.iter().any(|(k, _)| *k == plain)
                || match &referrer.kind {
                    ReferrerKind::List { .. } => plan.lists.contains(&candidate),
                    ReferrerKind::Field { field, .. } => plan
                        .fields
                        .iter()
                        .any(|(h, f, _)| *h == candidate && f == field),
                };
            if !holds || known {
                continue;
            }
            match (referrer.on_delete, &referrer.kind) {
                (OnDelete::Restrict, _) => {
                    return Err(Error::Restricted {
                        key: target.to_string(),
                        by: plain,
                    })
                }
                (_, ReferrerKind::List { .. }) => plan.lists.push(candidate),
                (OnDelete::Delete, ReferrerKind::Field { delete, .. }) => {
                    plan.doomed.push((plain, *delete))
                }
                (_, ReferrerKind::Field { field, .. }) => {
                    plan.fields.push((candidate, field, target.to_string()))
                }
            }
        }
        Ok(())
    }
}

impl<A: Admin> ObjectRef<A> {
    /// [`delete_cascade`](Self::delete_cascade) in the cluster layout,
    /// where the referrers are in other slots than the admin: see
    /// [Cluster layout](self#cluster-layout).
    async fn cascade_steps_once(
        &self,
        db: &Db,
        referrers: &[&'static Referrer],
        chain: &[String],
        sweep: bool,
    ) -> Result<Outcome> {
        let key = &*self.key_in(db);
        let fields: Vec<&str> = A::INDEXES.iter().map(|s| s.field).collect();
        let fields = &fields;
        let deleted = watched(db, key, |tx| async move {
            if self.recreated(db, &tx, sweep).await? {
                return Ok(Some(Err(Outcome::Deleted(false))));
            }
            let tree = self.tree_keys(db).await?;
            tx.watch(&tree).await?;
            if self.tree_keys(db).await? != tree {
                return Ok(None);
            }
            // Under the WATCH of the admin: a reference written while
            // these are read marks it after its write, which aborts the
            // EXEC (see `write::recheck_references`).
            let mut plan = Plan::default();
            for referrer in referrers {
                self.find_references(db, referrer, chain, &mut plan).await?;
            }
            // The sub-objects' referrers: found here, cleared after the
            // EXEC (the sweep below looks for the admin's only).
            let mut subtree = Plan::default();
            self.find_subtree_references(db, &tree, chain, &mut subtree)
                .await?;
            plan.doomed.append(&mut subtree.doomed);
            if !plan.doomed.is_empty() {
                return Ok(Some(Err(Outcome::First(plan.doomed))));
            }
            let mut txn = redis::pipe();
            txn.atomic();
            txn.command("EXISTS").arg(key);
            if !fields.is_empty() {
                txn.command("HMGET").arg(key).arg(fields);
            }
            txn.command("DEL").arg(&tree).ignore();
            let done: Option<Vec<redis::Value>> = tx.exec_whole(&txn).await?;
            let Some(replies) = done else {
                return Ok(None);
            };
            let mut replies = replies.into_iter();
            let existed: bool =
                redis::from_redis_value(replies.next().unwrap_or(redis::Value::Nil))
                    .map_err(redis::RedisError::from)?;
            let old: Texts = match replies.next() {
                Some(v) => redis::from_redis_value(v).map_err(redis::RedisError::from)?,
                None => Vec::new(),
            };
            Ok(Some(Ok((existed, old, subtree.fields))))
        })
        .await?;
        let (existed, old, cleared) = match deleted {
            Ok(deleted) => deleted,
            Err(outcome) => return Ok(outcome),
        };
        unindex::<A>(db, key, old).await?;
        for (hash, field, named) in &cleared {
            clear_reference(db, hash, field, named).await?;
        }
        let cascade: Vec<&Referrer> = referrers
            .iter()
            .copied()
            .filter(|r| matches!(r.on_delete, OnDelete::Cascade | OnDelete::Clear))
            .collect();
        self.sweep_references(db, &cascade).await?;
        Ok(Outcome::Deleted(existed))
    }

    /// Removes this (deleted) admin's key from every relation list of the
    /// `cascade` referrers that holds it (LREM) and every reference field
    /// that names it (HDEL if it still does), each on its own key.
    async fn sweep_references(&self, db: &Db, cascade: &[&Referrer]) -> Result<()> {
        let key = &*self.key_in(db);
        let mut plan = Plan::default();
        for referrer in cascade {
            self.find_references(db, referrer, &[], &mut plan).await?;
        }
        for list in &plan.lists {
            remove_member(db, list, key).await?;
        }
        for (hash, field, named) in &plan.fields {
            clear_reference(db, hash, field, named).await?;
        }
        Ok(())
    }
}

/// Removes every occurrence of the object `key` from the list `list`, if
/// the object does not exist: a reference to an object created again
/// meanwhile is a new, valid one. In the plain layout the two are WATCHed
/// together; in the cluster layout they are in different slots, and the
/// object is checked just before.
async fn remove_member(db: &Db, list: &str, key: &str) -> Result<()> {
    let always = |_: &[redis::Value]| -> Result<bool> { Ok(true) };
    let remove = cmd("LREM").arg(list).arg(0).arg(key).owned();
    write_if_absent(db, list, key, &[], &always, &[remove]).await
}

/// Adds the plan's deletions to the transaction.
fn add_plan(txn: &mut Pipeline, key: &str, plan: &Plan) {
    txn.command("DEL").arg(&plan.delete).ignore();
    for list in &plan.lists {
        txn.command("LREM").arg(list).arg(0).arg(key).ignore();
    }
    for (hash, field, _) in &plan.fields {
        txn.command("HDEL").arg(hash).arg(*field).ignore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Submitted twice, as two derives naming the same relation would.
    inventory::submit! {
        Referrer {
            target: "unit_member",
            on_delete: OnDelete::Cascade,
            kind: ReferrerKind::List { owner_table: "unit_owner", table: "members" },
        }
    }
    inventory::submit! {
        Referrer {
            target: "unit_member",
            on_delete: OnDelete::Cascade,
            kind: ReferrerKind::List { owner_table: "unit_owner", table: "members" },
        }
    }

    #[test]
    fn the_registry_finds_referrers_by_target_and_own_lists_by_owner() {
        assert_eq!(referrers_of("unit_member").len(), 2);
        assert!(referrers_of("unit_owner").is_empty());
        // Registered twice, listed once.
        assert_eq!(
            own_lists(&Db::memory(), "unit_owner", "unit_owner:1"),
            vec!["unit_owner:1:members"]
        );
        let cluster = Db::memory().with_key_layout(crate::KeyLayout::Cluster);
        assert_eq!(
            own_lists(&cluster, "unit_owner", "unit_owner:1"),
            vec!["{unit_owner:1}:members"]
        );
        assert!(own_lists(&Db::memory(), "unit_member", "unit_member:1").is_empty());
    }
}
