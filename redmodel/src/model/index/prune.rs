//! Pruning index and list entries whose object is gone (expired, or
//! deleted outside the library) or no longer holds the indexed value.
//!
//! A read that finds such entries has already left them out of its
//! answer; [`prune`] then removes them, as an optimistic transaction so
//! that it never removes the entry of an object that exists: it `WATCH`es
//! every object (and every unique entry) concerned, checks each again,
//! and removes in one `MULTI`/`EXEC` only those still dead. If a watched
//! key changed meanwhile (the object was re-created, the value claimed by
//! someone else), EXEC does nothing: the entries stay, and the next read
//! prunes them if they are still dead.

use redis::Value;

use crate::{Db, Result};

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
    /// The unique entry (a string) at this key, if it still names the
    /// object.
    Unique(String),
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
            (Test::NotEqual { .. } | Test::LacksTag { .. }, Value::Nil) => true,
            (Test::NotEqual { .. } | Test::LacksTag { .. }, _) => false,
        }
    }
}

/// Removes the entries of `stale` that are still dead, in one optimistic
/// transaction; returns how many were removed (0 if a concurrent write
/// aborted it).
pub(crate) async fn prune(db: &Db, mut stale: Vec<Stale>) -> Result<u64> {
    stale.sort_by(|a, b| (&a.entry, &a.object).cmp(&(&b.entry, &b.object)));
    stale.dedup_by(|a, b| a.entry == b.entry && a.object == b.object);
    if stale.is_empty() {
        return Ok(0);
    }
    let mut watched: Vec<&str> = stale.iter().map(|s| s.object.as_str()).collect();
    for s in &stale {
        if let Entry::Unique(key) = &s.entry {
            watched.push(key);
        }
    }
    watched.sort_unstable();
    watched.dedup();

    let mut check = redis::pipe();
    check.ignore_errors();
    check.cmd("WATCH").arg(&watched).ignore();
    for s in &stale {
        match &s.test {
            Test::Gone => check.cmd("EXISTS").arg(&s.object),
            Test::NotEqual { field, .. } | Test::LacksTag { field, .. } => {
                check.cmd("HGET").arg(&s.object).arg(*field)
            }
        };
        if let Entry::Unique(key) = &s.entry {
            check.cmd("GET").arg(key);
        }
    }
    let mut conn = db.dedicated().await?;
    let replies: Vec<Value> = conn.query_pipeline(&check).await?;
    let mut replies = replies.into_iter();
    let mut remove = redis::pipe();
    remove.atomic();
    let mut count = 0u64;
    for s in &stale {
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
        match &s.entry {
            Entry::Sorted(key) => remove.cmd("ZREM").arg(key).arg(&s.object),
            Entry::Set(key) => remove.cmd("SREM").arg(key).arg(&s.object),
            Entry::List(key) => remove.cmd("LREM").arg(key).arg(0).arg(&s.object),
            Entry::Unique(key) => remove.cmd("DEL").arg(key),
        }
        .ignore();
    }
    if count == 0 {
        conn.query::<()>(&redis::cmd("UNWATCH")).await?;
        return Ok(0);
    }
    let done: Option<()> = conn.query_pipeline(&remove).await?;
    Ok(if done.is_some() { count } else { 0 })
}
