//! Expiry: times to live on objects, sub-objects, relation
//! lists, and on an admin's whole subtree at once.
//!
//! | Redis | objects and sub-objects ([`ObjectRef`]) | relation lists ([`MemberList`](super::MemberList)) | an admin's subtree |
//! |---|---|---|---|
//! | EXPIRE / PEXPIRE | [`expire`](ObjectRef::expire) (a `Duration`, sent as PEXPIRE) | `expire` | [`expire_tree`](ObjectRef::expire_tree) |
//! | EXPIREAT / PEXPIREAT | [`expire_at`](ObjectRef::expire_at) (a `SystemTime`) | `expire_at` | [`expire_tree_at`](ObjectRef::expire_tree_at) |
//! | PERSIST | [`persist`](ObjectRef::persist) | `persist` | [`persist_tree`](ObjectRef::persist_tree) |
//! | TTL / PTTL | [`ttl`](ObjectRef::ttl) → [`Ttl`] ([`Ttl::secs`] is TTL's answer) | `ttl` | |
//!
//! The subtree of an admin is its object (`teacher:A`), its sub-objects
//! (`teacher:A:exam:2024`) and its relation lists (`teacher:A:class`):
//! every key under `teacher:A:`, found with SCAN (an encoded pk never holds
//! `:`, so no other admin's key starts that way), then given its TTL in one
//! MULTI/EXEC. A sub-object or list created after that call has no TTL.
//!
//! # Model and field TTLs
//!
//! `#[redmodel(ttl = "30m")]` on a model ([`Model::TTL`]) makes every
//! full write give the object that TTL, in the write's own atomic unit
//! (its plan holds the PEXPIRE after the HSET, so no reader sees the
//! object without it). On a field ([`Model::FIELD_TTLS`]) it makes every
//! write of the field give it that TTL (HPEXPIRE, Redis 7.4 or Valkey 9;
//! [`Error::Unsupported`](crate::Error::Unsupported) elsewhere, known from
//! [`Db::server`]); see `field` for the per-call API. The guide's page
//! `docs/expiry.md` has the whole picture.
//!
//! # Which writes keep a TTL
//!
//! The library follows Redis: a command that changes a value keeps its
//! key's TTL, a command that replaces the key (or deletes it) does not.
//!
//! | library write | Redis | the key's TTL |
//! |---|---|---|
//! | `set`, `set_many` | HSET, HDEL | kept |
//! | `insert`, `insert_without_sync`, `insert_sub` (hash) | HDEL + HSET + HINCRBY `_count` | kept; the model's declared TTL given afresh, if any |
//! | [`insert_with_ttl`](ObjectRef::insert_with_ttl) | the same + PEXPIRE | the TTL asked for |
//! | `incr` | HINCRBY, HINCRBYFLOAT | kept |
//! | `set_value`, `insert` of a `single` sub-object | SET | **cleared**, or the model's declared TTL (`PX`) |
//! | `delete`, `set_value(None)` | DEL | gone with the key; a later `insert` makes a key without TTL |
//! | relation `append`, `prepend`, `push`, `link`, `remove`, `unlink` | RPUSH, LPUSH, LREM | kept, until the list is emptied: Redis deletes an empty list, and the next push makes a new one without TTL |
//! | [`migrate`](super::migrate) | HSET, HDEL | kept |
//! | `set`/`insert` that removes the last field of a hash | HDEL | gone: Redis deletes an empty hash |
//!
//! Index keys (sorted sets, tag sets, recent lists, unique entries) are
//! shared by many objects and never get a TTL. When an object expires, its
//! index entries stay behind until a read through the index meets them:
//! every read checks the objects it returns, leaves out the gone ones and
//! prunes their entries (see [`index`](super::index)), so an expired
//! object leaves no visible trace, and a unique value it held can be
//! claimed again at once.

mod declared;
mod field;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) use declared::{checked_millis, ttl_cmds};

use super::key::glob_escape;
use super::scan::scan_keys;
use super::{Admin, Model, ObjectRef};
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::{Db, Result};

/// The time to live of a key ([`ObjectRef::ttl`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// There is no such key.
    Missing,
    /// The key never expires.
    Persistent,
    /// The key expires in this long.
    Expires(Duration),
}

impl Ttl {
    /// The time left, if the key expires.
    pub fn duration(self) -> Option<Duration> {
        match self {
            Ttl::Expires(d) => Some(d),
            Ttl::Missing | Ttl::Persistent => None,
        }
    }

    /// What Redis's TTL command answers: the seconds left, rounded to the
    /// nearest (`-2` for a missing key, `-1` for a persistent one).
    pub fn secs(self) -> i64 {
        match self {
            Ttl::Missing => -2,
            Ttl::Persistent => -1,
            Ttl::Expires(d) => i64::try_from((d.as_millis() + 500) / 1000).unwrap_or(i64::MAX),
        }
    }
}

/// Milliseconds as PEXPIRE's argument (saturating).
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Unix milliseconds of `when` as PEXPIREAT's argument (0 for a time
/// before 1970: the key is deleted at once, as Redis does for a past
/// time).
pub(crate) fn unix_millis(when: SystemTime) -> i64 {
    when.duration_since(UNIX_EPOCH).map_or(0, millis)
}

/// Sets a TTL on `key` (PEXPIRE); whether the key exists.
/// [`Error::InvalidTtl`](crate::Error::InvalidTtl) for a zero TTL.
pub(crate) async fn expire_key(db: &Db, key: &str, ttl: Duration) -> Result<bool> {
    db.query(cmd("PEXPIRE").arg(key).arg(checked_millis(ttl)?))
        .await
}

/// Makes `key` expire at `when` (PEXPIREAT); whether the key existed.
pub(crate) async fn expire_key_at(db: &Db, key: &str, when: SystemTime) -> Result<bool> {
    db.query(cmd("PEXPIREAT").arg(key).arg(unix_millis(when)))
        .await
}

/// Removes the TTL of `key` (PERSIST); whether there was one.
pub(crate) async fn persist_key(db: &Db, key: &str) -> Result<bool> {
    db.query(cmd("PERSIST").arg(key)).await
}

/// The TTL of `key` (PTTL).
pub(crate) async fn ttl_of(db: &Db, key: &str) -> Result<Ttl> {
    let ms: i64 = db.read(cmd("PTTL").arg(key)).await?;
    Ok(match ms {
        -2 => Ttl::Missing,
        ms if ms < 0 => Ttl::Persistent,
        ms => Ttl::Expires(Duration::from_millis(ms.unsigned_abs())),
    })
}

impl<M: Model> ObjectRef<M> {
    /// Sets a time to live (PEXPIRE, so sub-second precision is kept:
    /// Redis's EXPIRE and PEXPIRE). Whether the object exists. Which later
    /// writes keep the TTL: see [`expiry`](super::expiry). A TTL under a
    /// millisecond is [`Error::InvalidTtl`](crate::Error::InvalidTtl), and
    /// nothing is sent ([`delete`](Self::delete) deletes at once).
    pub async fn expire(&self, db: &Db, ttl: Duration) -> Result<bool> {
        expire_key(db, &self.key_in(db), ttl).await
    }

    /// Makes the object expire at `when` (PEXPIREAT; Redis's EXPIREAT too).
    /// A time in the past deletes it. Whether the object existed.
    pub async fn expire_at(&self, db: &Db, when: SystemTime) -> Result<bool> {
        expire_key_at(db, &self.key_in(db), when).await
    }

    /// Removes the time to live (PERSIST). Whether there was one.
    pub async fn persist(&self, db: &Db) -> Result<bool> {
        persist_key(db, &self.key_in(db)).await
    }

    /// The time to live (PTTL, to the millisecond; [`Ttl::secs`] gives
    /// what TTL would say).
    pub async fn ttl(&self, db: &Db) -> Result<Ttl> {
        ttl_of(db, &self.key_in(db)).await
    }
}

impl<A: Admin> ObjectRef<A> {
    /// The keys of this admin's subtree, as `db` stores them: its own key
    /// (whether it exists or not) and every key under it, its sub-objects
    /// and relation lists (SCAN, never KEYS), in key order. In the
    /// [cluster layout](crate::KeyLayout::Cluster) they all share one slot.
    pub async fn tree_keys(&self, db: &Db) -> Result<Vec<String>> {
        let pattern = format!("{}:*", glob_escape(self.key()));
        let mut keys = vec![self.key_in(db).into_owned()];
        keys.extend(scan_keys(db, &db.stored(&pattern)).await?);
        Ok(keys)
    }

    /// Gives the admin, its sub-objects and its relation lists the time to
    /// live `ttl`, in one MULTI/EXEC (after a SCAN for the keys). Returns
    /// how many keys got it. A TTL under a millisecond is
    /// [`Error::InvalidTtl`](crate::Error::InvalidTtl).
    pub async fn expire_tree(&self, db: &Db, ttl: Duration) -> Result<u64> {
        let ms = checked_millis(ttl)?;
        self.on_tree(db, "PEXPIRE", Some(ms)).await
    }

    /// Makes the admin, its sub-objects and its relation lists expire at
    /// `when` (PEXPIREAT), in one MULTI/EXEC. Returns how many keys got it.
    pub async fn expire_tree_at(&self, db: &Db, when: SystemTime) -> Result<u64> {
        self.on_tree(db, "PEXPIREAT", Some(unix_millis(when))).await
    }

    /// Removes the TTL of the admin, its sub-objects and its relation
    /// lists, in one MULTI/EXEC. Returns how many keys had one.
    pub async fn persist_tree(&self, db: &Db) -> Result<u64> {
        self.on_tree(db, "PERSIST", None).await
    }

    async fn on_tree(&self, db: &Db, command: &str, arg: Option<i64>) -> Result<u64> {
        let keys = self.tree_keys(db).await?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        for key in &keys {
            let cmd = pipe.command(command).arg(key);
            if let Some(arg) = arg {
                cmd.arg(arg);
            }
        }
        let done: Vec<u64> = db.query_pipeline(&pipe).await?;
        Ok(done.iter().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_in_seconds_rounds_as_redis_does() {
        assert_eq!(Ttl::Missing.secs(), -2);
        assert_eq!(Ttl::Persistent.secs(), -1);
        assert_eq!(Ttl::Expires(Duration::from_millis(1499)).secs(), 1);
        assert_eq!(Ttl::Expires(Duration::from_millis(1500)).secs(), 2);
        assert_eq!(
            Ttl::Expires(Duration::from_secs(3)).duration(),
            Some(Duration::from_secs(3))
        );
        assert_eq!(Ttl::Persistent.duration(), None);
    }

    #[test]
    fn arguments_saturate() {
        assert_eq!(millis(Duration::MAX), i64::MAX);
        assert_eq!(unix_millis(UNIX_EPOCH), 0);
        assert_eq!(unix_millis(UNIX_EPOCH + Duration::from_millis(1234)), 1234);
    }
}
