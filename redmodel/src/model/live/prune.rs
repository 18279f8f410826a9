//! Pruning index and list entries whose object is gone (expired, or
//! deleted outside the library) or no longer holds the indexed value.
//!
//! A read that finds such entries has already left them out of its
//! answer; [`prune`] then removes them, as a checked write so that it
//! never removes the entry of an object that exists: it reads every
//! object (and every unique entry) concerned, checks each entry again,
//! and removes in one atomic unit only those still dead, if none of
//! those reads changed meanwhile (the object was re-created, the value
//! claimed by someone else); if one did, it decides again on what it
//! finds.

use std::sync::atomic::{AtomicU64, Ordering};

use redis::{Cmd, Pipeline, Value};

use super::{holder_command, unless_held, Fenced};
use crate::command::AddCommand as _;
use crate::command::{cmd, Owned as _};
use crate::db::plan::checked::{self, Decide, Reader};
use crate::db::recall::Guess;
use crate::{Db, Error, Result};

/// An index or list entry that a read found dead.
#[derive(Debug, Clone)]
pub(crate) struct Stale {
    /// The key of the object the entry points at.
    pub object: String,
    /// When the entry is dead, given the object's current state.
    pub test: Test,
    /// Where the entry is.
    pub entry: Entry,
}

/// How to check, under WATCH, that an entry is still dead.
#[derive(Debug, Clone)]
pub(crate) enum Test {
    /// Dead if the object does not exist (EXISTS).
    Gone,
    /// Dead if the object's field does not hold `text` (HGET), which
    /// includes the object being gone.
    NotEqual { field: &'static str, text: Vec<u8> },
    /// Dead if the object's field is absent (HGET), which includes the
    /// object being gone: the entry of a field that expired
    /// (`#[redmodel(ttl = ...)]` on the field).
    Absent { field: &'static str },
    /// Dead if the object's tag field does not include `tag` (HGET).
    LacksTag {
        field: &'static str,
        parse: fn(&[u8]) -> std::result::Result<Vec<String>, String>,
        tag: String,
    },
}

/// The entry to remove.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Entry {
    /// A member of the sorted set at this key.
    Sorted(String),
    /// A member of the set at this key.
    Set(String),
    /// Every occurrence in the list at this key.
    List(String),
    /// The unique entry (a one-element list) at this key, if it still
    /// names the object.
    Unique(String),
}

/// Adds to `pipe` the read whose reply `s.test` judges (see [`Test::dead`]).
fn add_test(pipe: &mut Pipeline, s: &Stale) {
    pipe.add_command(test_command(s));
}

/// The read whose reply `s.test` judges.
fn test_command(s: &Stale) -> Cmd {
    match &s.test {
        Test::Gone => cmd("EXISTS").arg(&s.object).owned(),
        Test::NotEqual { field, .. } | Test::LacksTag { field, .. } | Test::Absent { field } => {
            cmd("HGET").arg(&s.object).arg(*field).owned()
        }
    }
}

/// Adds to `pipe` the command that takes `object` out of `entry` (a unique
/// entry: deletes it).
fn remove_command<'p>(pipe: &'p mut Pipeline, entry: &Entry, object: &str) -> &'p mut Pipeline {
    match entry {
        Entry::Sorted(key) => pipe.command("ZREM").arg(key).arg(object),
        Entry::Set(key) => pipe.command("SREM").arg(key).arg(object),
        Entry::List(key) => pipe.command("LREM").arg(key).arg(0).arg(object),
        Entry::Unique(key) => pipe.command("DEL").arg(key),
    }
}

impl Test {
    /// Whether the reply of the check command shows the entry dead; an
    /// error reply (the key holds another type) keeps the entry.
    fn dead(&self, reply: &Value) -> bool {
        match (self, reply) {
            (_, Value::ServerError(_)) => false,
            (Test::Gone, Value::Int(n)) => *n == 0,
            (Test::Gone, _) => false,
            (Test::NotEqual { text, .. }, Value::BulkString(v)) => v != text,
            (Test::LacksTag { parse, tag, .. }, Value::BulkString(v)) => match parse(v) {
                Ok(tags) => !tags.contains(tag),
                // Bad data: leave it to the reader's decode error.
                Err(_) => false,
            },
            (Test::NotEqual { .. } | Test::LacksTag { .. } | Test::Absent { .. }, Value::Nil) => {
                true
            }
            (Test::NotEqual { .. } | Test::LacksTag { .. } | Test::Absent { .. }, _) => false,
        }
    }
}

/// Removes the entries of `stale` that are still dead, in one optimistic
/// transaction (checked again, and retried, if a concurrent write changes
/// one of them meanwhile); returns how many were removed.
pub(crate) async fn prune(db: &Db, mut stale: Vec<Stale>) -> Result<u64> {
    stale.sort_by(|a, b| (&a.entry, &a.object).cmp(&(&b.entry, &b.object)));
    stale.dedup_by(|a, b| a.entry == b.entry && a.object == b.object);
    if !db.one_slot() {
        return prune_apart(db, &stale).await;
    }
    let Some(first) = stale.first() else {
        return Ok(0);
    };
    let prune = Prune {
        stale: &stale,
        removed: AtomicU64::new(0),
    };
    checked::run::<()>(db, &first.object, &[], &[], &prune).await?;
    Ok(prune.removed.into_inner())
}

/// [`prune`] as a checked write: decided on [`check`]'s reads, it removes
/// the entries still dead. The outcome is how many it removes (the last
/// decision's, which is the one that committed).
struct Prune<'a> {
    stale: &'a [Stale],
    removed: AtomicU64,
}

impl Decide for Prune<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        let (remove, count) = match check(reader, self.stale).await? {
            Some((remove, count)) => (remove.cmd_iter().cloned().collect(), count),
            None => (Vec::new(), 0),
        };
        self.removed.store(count, Ordering::Relaxed);
        Ok(remove)
    }

    fn first_guess(&self) -> Guess {
        Guess::Nothing
    }
}

/// [`prune`] in the cluster layout, where an entry and its object are in
/// different slots and no transaction holds both: check the objects, remove
/// the entries still dead, then check the objects once more and put back
/// the set and list entries of an object that came back meanwhile. A
/// sorted entry removed that way comes back with the object's next write,
/// or [`rebuild_indexes`](crate::model::migrate::rebuild_indexes). A unique
/// entry goes by a fenced decision of its own ([`release_unique`]), which
/// checks its object after fencing the entry.
async fn prune_apart(db: &Db, stale: &[Stale]) -> Result<u64> {
    // The unique entries go by fenced decisions, on keys of their own: at
    // once.
    let mut releases = Vec::new();
    let mut rest = Vec::new();
    for s in stale {
        match &s.entry {
            Entry::Unique(key) => releases.push(release_unique(db, key, s)),
            _ => rest.push(s),
        }
    }
    let mut removed = 0u64;
    for released in futures_util::future::join_all(releases).await {
        removed += u64::from(released?);
    }
    let stale = rest;
    if stale.is_empty() {
        return Ok(removed);
    }
    let dead = still_dead(db, stale.iter().copied()).await?;
    let gone: Vec<&Stale> = stale
        .iter()
        .zip(dead)
        .filter(|(_, d)| *d)
        .map(|(s, _)| *s)
        .collect();
    let mut remove = redis::pipe();
    for s in &gone {
        remove_command(&mut remove, &s.entry, &s.object);
    }
    if !remove.is_empty() {
        let counts: Vec<u64> = db.query_pipeline(&remove).await?;
        removed += counts.iter().filter(|n| **n > 0).count() as u64;
    }
    let dead = still_dead(db, gone.iter().copied()).await?;
    let mut restore = redis::pipe();
    for (s, dead) in gone.iter().zip(dead) {
        if dead {
            continue;
        }
        match &s.entry {
            Entry::Set(key) => restore.command("SADD").arg(key).arg(&s.object),
            Entry::List(key) => restore.command("RPUSH").arg(key).arg(&s.object),
            Entry::Sorted(_) | Entry::Unique(_) => continue,
        }
        .ignore();
        removed = removed.saturating_sub(1);
    }
    if !restore.is_empty() {
        db.query_pipeline::<()>(&restore).await?;
    }
    Ok(removed)
}

/// Whether each entry of `stale` is dead now, by its test: one pipeline
/// of single-key reads (no transaction, so any slots).
async fn still_dead<'s>(db: &Db, stale: impl Iterator<Item = &'s Stale>) -> Result<Vec<bool>> {
    let stale: Vec<&Stale> = stale.collect();
    if stale.is_empty() {
        return Ok(Vec::new());
    }
    let mut check = redis::pipe();
    check.ignore_errors();
    for s in &stale {
        add_test(&mut check, s);
    }
    let replies: Vec<Value> = db.query_pipeline(&check).await?;
    Ok(stale
        .iter()
        .zip(replies)
        .map(|(s, r)| s.test.dead(&r))
        .collect())
}

/// Deletes the unique entry `entry` if it names `s.object` for good and
/// that object is still dead by `s.test`: a fenced decision (see
/// [`unless_held`]), since the object is in another slot. Whether it did.
///
/// In the cluster layout a claim is pending while it has a lease (its
/// object is being written: see `write::stepped`, whose writers release
/// their own claims): a prune leaves it, as its holder cannot show the
/// value yet.
async fn release_unique(db: &Db, entry: &str, s: &Stale) -> Result<bool> {
    // An error reply (an object of another type) keeps the entry.
    let holds = |reply: Result<Value>| match reply {
        Err(Error::WrongType { .. }) => Ok(true),
        reply => Ok(!s.test.dead(&reply?)),
    };
    let del = [cmd("DEL").arg(entry).owned()];
    let fenced = unless_held(db, entry, &s.object, &test_command(s), &holds, &del).await?;
    Ok(fenced == Fenced::Released)
}

/// The reads of [`prune`]: reads through `reader` (which WATCHes them on
/// the WATCH path) the objects and unique entries of `stale` (sorted,
/// without repeats), checks each entry again, and returns the MULTI/EXEC
/// that removes those still dead, with their number (`None` if none is).
async fn check<R: Reader>(reader: &R, stale: &[Stale]) -> Result<Option<(redis::Pipeline, u64)>> {
    let mut watched: Vec<&str> = stale.iter().map(|s| s.object.as_str()).collect();
    for s in stale {
        if let Entry::Unique(key) = &s.entry {
            watched.push(key);
        }
    }
    watched.sort_unstable();
    watched.dedup();

    let mut check = redis::pipe();
    for s in stale {
        add_test(&mut check, s);
        if let Entry::Unique(key) = &s.entry {
            // Who the entry names now (a unique entry is a list of one
            // key: see the key layout in `model::key`).
            check.add_command(holder_command(key));
        }
    }
    let replies = reader
        .read(&watched, check.cmd_iter().cloned().collect(), true)
        .await?;
    let mut replies = replies.into_iter();
    let mut remove = redis::pipe();
    remove.atomic();
    let mut count = 0u64;
    for s in stale {
        let dead = replies.next().is_some_and(|r| s.test.dead(&r));
        let still_ours = match &s.entry {
            Entry::Unique(_) => matches!(
                replies.next(),
                Some(Value::BulkString(h)) if h == s.object.as_bytes()
            ),
            _ => true,
        };
        if !(dead && still_ours) {
            continue;
        }
        count += 1;
        remove_command(&mut remove, &s.entry, &s.object).ignore();
    }
    if count == 0 {
        return Ok(None);
    }
    Ok(Some((remove, count)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, OptimisticConnection};

    /// Runs `check` and, between it and the EXEC, `meanwhile` (another
    /// client's write), in one attempt: whether the EXEC ran.
    async fn check_then<F: std::future::Future<Output = ()>>(
        db: &Db,
        stale: Vec<Stale>,
        meanwhile: F,
    ) -> Result<u64> {
        let mut conn = OptimisticConnection::from(db.dedicated().await?);
        let no_keys: &[&str] = &[];
        let (stale, mut meanwhile) = (&stale, Some(meanwhile));
        conn.run(no_keys, 1, None, |tx| {
            let meanwhile = meanwhile.take();
            async move {
                let (remove, count) = check(&tx, stale).await?.expect("an entry is dead");
                if let Some(write) = meanwhile {
                    write.await;
                }
                Ok(tx.exec::<()>(&remove).await?.map(|()| count))
            }
        })
        .await
    }

    fn gone(object: &str, zset: &str) -> Stale {
        Stale {
            object: object.to_string(),
            test: Test::Gone,
            entry: Entry::Sorted(zset.to_string()),
        }
    }

    async fn zcard(db: &Db) -> u64 {
        db.query(crate::command::cmd("ZCARD").arg("t:_sorted:f"))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn removes_only_what_is_still_dead() {
        let db = Db::memory();
        db.query::<()>(
            crate::command::cmd("ZADD")
                .arg("t:_sorted:f")
                .arg(1)
                .arg("t:1")
                .arg(2)
                .arg("t:2"),
        )
        .await
        .unwrap();
        db.query::<()>(crate::command::cmd("HSET").arg("t:2").arg("f").arg(2))
            .await
            .unwrap();
        // t:2 exists: a reader that thought it gone must not remove it.
        let n = prune(
            &db,
            vec![gone("t:1", "t:_sorted:f"), gone("t:2", "t:_sorted:f")],
        )
        .await
        .unwrap();
        assert_eq!(n, 1);
        let left: Vec<String> = db
            .query(
                crate::command::cmd("ZRANGE")
                    .arg("t:_sorted:f")
                    .arg(0)
                    .arg(-1),
            )
            .await
            .unwrap();
        assert_eq!(left, ["t:2"]);
        assert_eq!(prune(&db, Vec::new()).await.unwrap(), 0);
    }

    /// The race a pruning reader must lose: the object is re-created (and
    /// its entry written again) between the check and the EXEC. WATCH
    /// makes the EXEC do nothing, so the entry of the existing object
    /// stays.
    #[tokio::test]
    async fn a_recreated_object_keeps_its_entry() {
        let db = Db::memory();
        db.query::<()>(
            crate::command::cmd("ZADD")
                .arg("t:_sorted:f")
                .arg(1)
                .arg("t:1"),
        )
        .await
        .unwrap();
        // Another client re-creates t:1 and writes its entry.
        let mut pipe = redis::pipe();
        pipe.atomic()
            .command("HSET")
            .arg("t:1")
            .arg("f")
            .arg(5)
            .command("ZADD")
            .arg("t:_sorted:f")
            .arg(5)
            .arg("t:1");
        let recreate = async { db.query_pipeline::<()>(&pipe).await.unwrap() };
        let done = check_then(&db, vec![gone("t:1", "t:_sorted:f")], recreate).await;
        assert!(
            matches!(done, Err(Error::Conflict { .. })),
            "EXEC aborted: {done:?}"
        );
        assert_eq!(
            zcard(&db).await,
            1,
            "the entry of the existing object stays"
        );
    }

    /// A unique entry is removed only while it still names the dead
    /// object: not once someone else has claimed the value.
    #[tokio::test]
    async fn a_unique_entry_claimed_by_another_stays() {
        let db = Db::memory();
        db.query::<()>(crate::command::cmd("RPUSH").arg("t:_unique:f:v").arg("t:1"))
            .await
            .unwrap();
        db.query::<()>(crate::command::cmd("HSET").arg("t:2").arg("f").arg("v"))
            .await
            .unwrap();
        let stale = |object: &str| Stale {
            object: object.to_string(),
            test: Test::NotEqual {
                field: "f",
                text: b"v".to_vec(),
            },
            entry: Entry::Unique("t:_unique:f:v".to_string()),
        };
        let claim = async {
            db.query::<()>(
                crate::command::cmd("LSET")
                    .arg("t:_unique:f:v")
                    .arg(0)
                    .arg("t:2"),
            )
            .await
            .unwrap()
        };
        let done = check_then(&db, vec![stale("t:1")], claim).await;
        assert!(
            matches!(done, Err(Error::Conflict { .. })),
            "EXEC aborted: {done:?}"
        );
        let holder: String = db
            .query(crate::command::cmd("LINDEX").arg("t:_unique:f:v").arg(0))
            .await
            .unwrap();
        assert_eq!(holder, "t:2");
        // And a check that finds the entry no longer naming the object
        // removes nothing.
        assert_eq!(prune(&db, vec![stale("t:1")]).await.unwrap(), 0);
    }
}
