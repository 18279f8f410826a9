//! Deciding on a unique entry by its holder's field, in the cluster
//! layout, where the entry and the holder are in different slots and no
//! atomic unit reads both.
//!
//! Three decisions remove an entry that names an object which no longer
//! holds the value: the release of a value a write gave up, a claim that
//! takes over such an entry, and a prune. The holder's field is read apart
//! from the entry, so the write can only check the entry. Checking that it
//! still names the holder for good (no lease) is not enough: between the
//! read of the field and the write, the holder can claim the value again,
//! write it and confirm the claim, which leaves the entry as it was while
//! the holder now holds the value.
//!
//! So the decision fences the entry first: a checked write puts a lease of
//! its own on the entry while it names the holder for good, and learns the
//! deadline the server set. Whatever the holder does next changes that
//! deadline: its claim sets a later one (it comes later, and a claim's
//! lease is longer than [`FENCE_LEASE`]), its confirmation removes it, and
//! another fence can only start from an entry without a lease (each
//! fence's lease is drawn up to 4 s shorter at random, so that two fences
//! set in one millisecond differ but once in 4,096). Then the field is
//! read, and the removal (or, if the holder holds the value after all,
//! the PERSIST that takes the fence off) is written only if the entry
//! still names the holder with that deadline.
//!
//! Meanwhile the entry looks like a claim in flight: a claim of the value
//! by another object is refused, as it is while the holder is written. A
//! decision that dies between its steps leaves the fence to lapse with the
//! entry, as a writer that dies between its claim and its confirmation
//! does: the value is free once the lease ends (and if the holder holds it
//! after all, a reindex puts the entry back).

use std::time::Duration;

use rand::Rng as _;
use redis::{Cmd, Value};

use super::{entry_reads, entry_state};
use crate::command::{cmd, Owned as _};
use crate::db::plan::checked::{self, Decide, Reader};
use crate::db::recall::{Given, Guess};
use crate::{Db, Result};

/// The longest a fence lasts if its decision dies: a little shorter than
/// a claim's lease, so that a claim made after the fence always ends
/// later than the fence would.
pub(crate) const FENCE_LEASE: Duration = Duration::from_millis(29_000);

/// How much shorter than [`FENCE_LEASE`] a fence's lease may be drawn.
const FENCE_JITTER_MS: u64 = 4_096;

/// What a fenced decision came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fenced {
    /// The holder does not hold the value: the removal was written.
    Released,
    /// The holder holds the value: the entry is its, for good, as before.
    Held,
    /// The entry does not name the holder for good (any more): nothing
    /// written; the caller decides again on what it finds.
    Moved,
}

/// Writes `release` (commands on `entry`'s slot) if the unique entry
/// `entry`, naming `holder` for good, names an object that does not hold
/// the value: `holds` judges the reply to `read` (a read of the holder,
/// apart from the entry; its error, such as a holder of another type, is
/// `holds`'s to judge too). See the [module docs](self).
pub(crate) async fn unless_held(
    db: &Db,
    entry: &str,
    holder: &str,
    read: &Cmd,
    holds: &(dyn Fn(Result<Value>) -> Result<bool> + Sync),
    release: &[Cmd],
) -> Result<Fenced> {
    let Some(deadline) = fence(db, entry, holder).await? else {
        return Ok(Fenced::Moved);
    };
    let unfence = [cmd("PERSIST").arg(entry).owned()];
    let held = match holds(db.query::<Value>(read).await) {
        Ok(held) => held,
        Err(err) => {
            // Take the fence off if the entry's node still answers: the
            // entry stays as it was rather than lapse.
            let _ = finish(db, entry, holder, deadline, &unfence).await;
            return Err(err);
        }
    };
    #[cfg(test)]
    pause::point(entry).await;
    let then: &[Cmd] = if held { &unfence } else { release };
    Ok(match finish(db, entry, holder, deadline, then).await? {
        false => Fenced::Moved,
        true if held => Fenced::Held,
        true => Fenced::Released,
    })
}

/// Puts a lease on `entry` if it names `holder` for good: the deadline the
/// server set, or `None` if the entry is otherwise.
async fn fence(db: &Db, entry: &str, holder: &str) -> Result<Option<i64>> {
    let lease = FENCE_LEASE.as_millis() as u64 - rand::rng().random_range(0..FENCE_JITTER_MS);
    let fence = Fence {
        entry,
        holder,
        lease,
    };
    let kept: Vec<Value> = checked::run(db, entry, &[], &[], &fence).await?;
    // The PEXPIRE's reply, then the PEXPIRETIME's.
    Ok(match kept.get(1) {
        Some(Value::Int(deadline)) if *deadline >= 0 => Some(*deadline),
        _ => None,
    })
}

/// The entry's state as a decision expects it: naming `holder`, with the
/// deadline `deadline` (-1: none).
fn expected(entry: &str, holder: &str, deadline: i64) -> Guess {
    let state = [
        Value::BulkString(holder.as_bytes().to_vec()),
        Value::Int(deadline),
    ];
    Guess::Given(Given(entry_reads(entry).into_iter().zip(state).collect()))
}

/// [`fence`]'s decision.
struct Fence<'a> {
    entry: &'a str,
    holder: &'a str,
    /// The lease, in milliseconds.
    lease: u64,
}

impl Decide for Fence<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        let (named, pending) = entry_state(reader, self.entry).await?;
        if named.as_deref() != Some(self.holder) || pending {
            return Ok(Vec::new());
        }
        Ok(vec![
            cmd("PEXPIRE").arg(self.entry).arg(self.lease).owned(),
            cmd("PEXPIRETIME").arg(self.entry).owned(),
        ])
    }

    fn first_guess(&self) -> Guess {
        expected(self.entry, self.holder, -1)
    }

    fn keeps(&self) -> bool {
        true
    }
}

/// Writes `then` if `entry` still names `holder` with the fence's
/// `deadline`: whether it did.
async fn finish(db: &Db, entry: &str, holder: &str, deadline: i64, then: &[Cmd]) -> Result<bool> {
    let finish = Finish {
        entry,
        holder,
        deadline,
        then,
    };
    let kept: Vec<Value> = checked::run(db, entry, &[], &[], &finish).await?;
    Ok(!kept.is_empty())
}

/// [`finish`]'s decision. Its commands' replies are kept only to tell
/// whether it wrote.
struct Finish<'a> {
    entry: &'a str,
    holder: &'a str,
    deadline: i64,
    then: &'a [Cmd],
}

impl Decide for Finish<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        let replies = reader
            .read(&[self.entry], entry_reads(self.entry), false)
            .await?;
        let named =
            matches!(replies.first(), Some(Value::BulkString(h)) if h == self.holder.as_bytes());
        let fenced = matches!(replies.get(1), Some(Value::Int(d)) if *d == self.deadline);
        Ok(if named && fenced {
            self.then.to_vec()
        } else {
            Vec::new()
        })
    }

    fn first_guess(&self) -> Guess {
        expected(self.entry, self.holder, self.deadline)
    }

    fn keeps(&self) -> bool {
        true
    }
}

/// A stop for tests between a fenced decision's read of the holder and
/// its write: where a racing write of the holder lands.
#[cfg(test)]
pub(crate) mod pause {
    use parking_lot::Mutex;
    use tokio::sync::oneshot;

    type Stop = (String, oneshot::Sender<()>, oneshot::Receiver<()>);

    static STOP: Mutex<Option<Stop>> = Mutex::new(None);

    /// Arms a stop at the next fenced decision on `entry`: the first
    /// receiver fires when it stops there, and it goes on once the sender
    /// is sent to (or dropped).
    pub(crate) fn at(entry: &str) -> (oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (reached, on_reached) = oneshot::channel();
        let (resume, on_resume) = oneshot::channel();
        *STOP.lock() = Some((entry.to_string(), reached, on_resume));
        (on_reached, resume)
    }

    pub(super) async fn point(entry: &str) {
        let stop = {
            let mut stop = STOP.lock();
            match stop.as_ref() {
                Some((armed, ..)) if armed == entry => stop.take(),
                _ => None,
            }
        };
        if let Some((_, reached, resume)) = stop {
            let _ = reached.send(());
            let _ = resume.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KeyLayout;

    const ENTRY: &str = "user:_unique:name:ann";
    const HOLDER: &str = "user:1";

    /// The databases a fenced decision runs on: the engine in cluster
    /// mode, and in the cluster layout on one node.
    fn dbs() -> [Db; 2] {
        [
            Db::memory_cluster(),
            Db::memory().with_key_layout(KeyLayout::Cluster),
        ]
    }

    async fn run(db: &Db, args: &[&str]) -> Value {
        let mut command = cmd(args[0]);
        for arg in &args[1..] {
            command.arg(*arg);
        }
        db.query(&command).await.expect(args[0])
    }

    /// Deletes the entry `ENTRY` unless the holder's name is `ann`.
    async fn release_unless_ann(db: &Db) -> Result<Fenced> {
        release_unless(db, ENTRY).await
    }

    /// Deletes `entry` unless the holder's name is `ann`.
    async fn release_unless(db: &Db, entry: &str) -> Result<Fenced> {
        let read = cmd("HGET").arg(HOLDER).arg("name").owned();
        let holds =
            |reply: Result<Value>| Ok(matches!(reply?, Value::BulkString(v) if v == b"ann"));
        let del = [cmd("DEL").arg(entry).owned()];
        unless_held(db, entry, HOLDER, &read, &holds, &del).await
    }

    async fn entry(db: &Db) -> (Value, Value) {
        entry_at(db, ENTRY).await
    }

    async fn entry_at(db: &Db, entry: &str) -> (Value, Value) {
        (
            run(db, &["LRANGE", entry, "0", "-1"]).await,
            run(db, &["PTTL", entry]).await,
        )
    }

    #[tokio::test]
    async fn an_entry_whose_holder_does_not_hold_the_value_is_released() {
        for db in dbs() {
            run(&db, &["HSET", HOLDER, "name", "bob"]).await;
            run(&db, &["RPUSH", ENTRY, HOLDER]).await;
            assert_eq!(release_unless_ann(&db).await.unwrap(), Fenced::Released);
            assert_eq!(run(&db, &["EXISTS", ENTRY]).await, Value::Int(0));
        }
    }

    #[tokio::test]
    async fn an_entry_whose_holder_holds_the_value_stays_for_good() {
        for db in dbs() {
            run(&db, &["HSET", HOLDER, "name", "ann"]).await;
            run(&db, &["RPUSH", ENTRY, HOLDER]).await;
            assert_eq!(release_unless_ann(&db).await.unwrap(), Fenced::Held);
            let holders = Value::Array(vec![Value::BulkString(HOLDER.into())]);
            assert_eq!(entry(&db).await, (holders, Value::Int(-1)));
        }
    }

    #[tokio::test]
    async fn a_pending_claim_or_another_holder_is_left_alone() {
        for db in dbs() {
            run(&db, &["RPUSH", ENTRY, HOLDER]).await;
            run(&db, &["PEXPIRE", ENTRY, "30000"]).await;
            assert_eq!(release_unless_ann(&db).await.unwrap(), Fenced::Moved);
            assert!(matches!(entry(&db).await.1, Value::Int(ms) if ms > 29_000));
            run(&db, &["DEL", ENTRY]).await;
            run(&db, &["RPUSH", ENTRY, "user:2"]).await;
            assert_eq!(release_unless_ann(&db).await.unwrap(), Fenced::Moved);
            let holders = Value::Array(vec![Value::BulkString(b"user:2".to_vec())]);
            assert_eq!(entry(&db).await, (holders, Value::Int(-1)));
        }
    }

    /// The holder claims the value again, writes it and confirms the
    /// claim between the decision's read of its field and its write: the
    /// entry is back as it was, but the decision must not delete it.
    #[tokio::test]
    async fn a_holder_that_claims_the_value_again_meanwhile_keeps_its_entry() {
        // An entry of its own: the stop is armed for every test of the
        // process.
        const RACED: &str = "user:_unique:name:raced";
        for db in dbs() {
            run(&db, &["HSET", HOLDER, "name", "bob"]).await;
            run(&db, &["RPUSH", RACED, HOLDER]).await;
            let (reached, resume) = pause::at(RACED);
            let decision = tokio::spawn({
                let db = db.clone();
                async move { release_unless(&db, RACED).await }
            });
            reached.await.expect("the decision stops after its read");
            // The holder's write, as its steps run it: the claim of an
            // entry naming it, the object, the confirmation.
            run(&db, &["RPUSH", RACED, HOLDER]).await;
            run(&db, &["PEXPIRE", RACED, "30000"]).await;
            run(&db, &["HSET", HOLDER, "name", "ann"]).await;
            run(&db, &["PERSIST", RACED]).await;
            run(&db, &["LTRIM", RACED, "0", "0"]).await;
            let _ = resume.send(());
            assert_eq!(decision.await.unwrap().unwrap(), Fenced::Moved);
            let holders = Value::Array(vec![Value::BulkString(HOLDER.into())]);
            assert_eq!(
                entry_at(&db, RACED).await,
                (holders, Value::Int(-1)),
                "{}",
                db.backend_name()
            );
        }
    }
}
