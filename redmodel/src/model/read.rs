//! How objects are read, with whether each exists.
//!
//! A hash object is read with `HMGET key <declared fields>`: the values
//! come back in the declared order, so decoding takes them by position,
//! and the reply carries no field names to copy or match (an HGETALL reply
//! is twice as long and arrives in the hash's own order). HMGET cannot
//! tell a missing object from one that holds none of those fields. A
//! model with a field that is always stored (one that is not an `Option`,
//! [`Model::ALWAYS_HOLDS_A_FIELD`]) never writes such an object; for any
//! other model the HMGET reads `_count` too, which every object the model
//! writes holds:
//!
//! - one object ([`read_raw`](ObjectRef::read_raw)) is read with the HMGET
//!   alone, one command as raw code sends. A reply with a value is the
//!   object; a reply without one is settled by reading the object whole (a
//!   second round trip, which only a missing object or a hash of
//!   undeclared fields costs). A read inside a
//!   [transaction](crate::model::Transaction) pipelines an EXISTS with
//!   it instead, since the transaction reads what it watches at once.
//! - many objects in the plain layout are one MULTI (the objects as of one
//!   instant) of their HMGETs and an `EXISTS` of their keys (one per
//!   thousand), which counts the keys that exist. If it counts no more than the replies with
//!   a value, every other object is missing; otherwise one of them is a
//!   hash without declared fields (no object the model writes: an insert
//!   stores `_count`), and the whole batch is read again whole. Here the
//!   EXISTS stays: among many objects one is often missing, and the EXISTS
//!   costs a batch about 5% where a second round trip would double it.
//!
//! Read whole is the HGETALL of each object (in one MULTI for several in
//! the plain layout): the rare case's path, which an empty reply settles (Redis has no empty
//! hash), and a batch's in the cluster layout, where an object's one
//! command costs no more than its two.
//! A string object is read with GET.

use redis::{Cmd, Pipeline, Value};

use super::object::{RawFields, COUNT_FIELD};
use super::reply::{at_key, redis_type, reply_at};
use super::{Model, ObjectRef, Storage};
use crate::command::AddCommand as _;
use crate::command::{cmd, sized};
use crate::{Db, Error, Result};

/// The most keys a batch read names in one EXISTS.
const EXISTS_CHUNK: usize = 1000;

/// What one object's replies tell.
pub(crate) enum Read {
    /// The object's stored fields, or `None`: it does not exist.
    Known(RawFields),
    /// It exists without any declared field, or came to exist between the
    /// two commands: read it again whole.
    Unsure,
}

impl<M: Model> ObjectRef<M> {
    /// How many values [`fields_command`](Self::fields_command)'s HMGET
    /// replies.
    const READ_VALUES: usize = M::FIELDS.len() + !M::ALWAYS_HOLDS_A_FIELD as usize;

    /// The object: its stored fields, or `None` if it does not exist.
    pub(crate) async fn read_raw(&self, db: &Db) -> Result<RawFields> {
        if M::STORAGE == Storage::Single {
            let mut all = Self::read_values(db, std::slice::from_ref(self)).await?;
            return all.pop().unwrap_or_else(|| Err(short_reply()));
        }
        // The HMGET alone: an object the model wrote always has a value
        // (`_count`), so it is one command, as raw code's; a reply without
        // a value is settled by reading whole (an empty reply: missing).
        // (One command, not a pipeline of one: 300 instructions fewer, of
        // about 10k per load in process.)
        let reply = db
            .read::<Value>(&self.fields_command(db))
            .await
            .map_err(at_key(self.key(), "hash"))?;
        match self.take_fields(Some(reply))? {
            Some(fields) => Ok(Some(fields)),
            None => self.read_whole(db).await,
        }
    }

    /// Many objects in one round trip, each result in its own place. In the
    /// plain layout the reads are one MULTI (the objects as of one
    /// instant); in the cluster layout, where the objects are in many
    /// slots, a plain pipeline (each object still read at one instant).
    pub(crate) async fn read_many(
        db: &Db,
        refs: &[ObjectRef<M>],
    ) -> Result<Vec<Result<RawFields>>> {
        if refs.is_empty() {
            return Ok(Vec::new());
        }
        match (db.one_slot(), M::STORAGE) {
            (_, Storage::Single) => Self::read_values(db, refs).await,
            (true, Storage::Hash) => Self::read_batch(db, refs).await,
            // Across slots there is no one instant to keep, and an
            // object's HGETALL is one command where HMGET and EXISTS are
            // two: the same speed since the cluster backend sends a batch
            // as one pipeline per master (1,970 batches of 100 a second
            // against 1,930), far faster while it sent each command alone
            // (0.70x one server's rate against 0.40x).
            (false, Storage::Hash) => Self::read_whole_many(db, refs).await,
        }
    }

    /// String objects: a GET each.
    async fn read_values(db: &Db, refs: &[ObjectRef<M>]) -> Result<Vec<Result<RawFields>>> {
        Self::read_each(db, refs, "GET", Self::take_value).await
    }

    /// `command key` for each of `refs`, in one MULTI in the plain layout
    /// (the objects as of one instant), each reply taken by `take`.
    async fn read_each(
        db: &Db,
        refs: &[ObjectRef<M>],
        command: &str,
        take: fn(&Self, Option<Value>) -> Result<RawFields>,
    ) -> Result<Vec<Result<RawFields>>> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        if db.one_slot() && refs.len() > 1 {
            db.at_one_instant(&mut pipe);
        }
        for r in refs {
            pipe.command(command).arg(r.key_in(db).as_ref());
        }
        let replies = db.read_replies(&pipe).await?;
        let mut replies = replies.into_iter();
        Ok(refs.iter().map(|r| take(r, replies.next())).collect())
    }

    /// The plain layout's batch (see the module docs): one MULTI of the
    /// HMGETs and an EXISTS counting the keys.
    async fn read_batch(db: &Db, refs: &[ObjectRef<M>]) -> Result<Vec<Result<RawFields>>> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        db.at_one_instant(&mut pipe);
        for r in refs {
            pipe.add_command(r.fields_command(db));
        }
        // An EXISTS per chunk: a full server gets these reads as a script
        // (`Db::read_replies`), whose Lua passes at most 8,000 arguments
        // to one command.
        for chunk in refs.chunks(EXISTS_CHUNK) {
            let mut exists = cmd("EXISTS");
            for r in chunk {
                exists.arg(r.key_in(db).as_ref());
            }
            pipe.add_command(exists);
        }
        let mut replies = db.read_replies(&pipe).await?;
        let counts = replies.split_off(refs.len().min(replies.len()));
        if counts.len() != refs.len().div_ceil(EXISTS_CHUNK) {
            return Err(short_reply());
        }
        let existing = counts
            .iter()
            .try_fold(0, |sum, count| match count {
                Value::Int(n) => Some(sum + n),
                _ => None,
            })
            .ok_or_else(short_reply)?;
        let mut replies = replies.into_iter();
        let out: Vec<Result<RawFields>> =
            refs.iter().map(|r| r.take_fields(replies.next())).collect();
        // A key of another type exists too (its HMGET failed).
        let with_values = out.iter().filter(|r| !matches!(r, Ok(None))).count();
        if existing > i64::try_from(with_values).unwrap_or(i64::MAX) {
            return Self::read_whole_many(db, refs).await;
        }
        Ok(out)
    }

    /// Adds the commands that read this object (see the module docs).
    pub(crate) fn add_read(&self, db: &Db, pipe: &mut Pipeline) {
        match M::STORAGE {
            Storage::Hash => {
                pipe.add_command(self.fields_command(db));
                pipe.command("EXISTS").arg(self.key_in(db).as_ref());
            }
            Storage::Single => {
                pipe.command("GET").arg(self.key_in(db).as_ref());
            }
        }
    }

    /// `HMGET key <declared fields>`, and `_count` unless the model always
    /// stores one of those ([`Model::ALWAYS_HOLDS_A_FIELD`]).
    fn fields_command(&self, db: &Db) -> Cmd {
        let key = self.key_in(db);
        // Sized at once: the read is most of a load's own work in process.
        let bytes = key.len() + M::FIELDS.iter().map(|f| f.len()).sum::<usize>() + 16;
        let mut cmd = sized("HMGET", M::FIELDS.len() + 2, bytes);
        cmd.arg(key.as_ref()).arg(M::FIELDS);
        if !M::ALWAYS_HOLDS_A_FIELD {
            cmd.arg(COUNT_FIELD);
        }
        cmd
    }

    /// What the replies of [`add_read`](Self::add_read) tell, taken from
    /// `replies`.
    pub(crate) fn take_read(&self, replies: &mut impl Iterator<Item = Value>) -> Result<Read> {
        match M::STORAGE {
            Storage::Hash => {
                let fields = self.take_fields(replies.next());
                let exists = replies.next();
                match (fields?, exists) {
                    (Some(fields), _) => Ok(Read::Known(Some(fields))),
                    (None, Some(Value::Int(0))) => Ok(Read::Known(None)),
                    (None, Some(Value::Int(_))) => Ok(Read::Unsure),
                    (None, _) => Err(short_reply()),
                }
            }
            Storage::Single => Ok(Read::Known(self.take_value(replies.next())?)),
        }
    }

    /// A string object's value in a GET reply.
    fn take_value(&self, reply: Option<Value>) -> Result<RawFields> {
        let value: Option<Vec<u8>> = reply_at(self.key(), "string", reply)?;
        Ok(value.map(|v| vec![Some(v)]))
    }

    /// The declared fields in an HMGET reply, by position: `None` if none
    /// of them (nor `_count`, where it is read) has a value. The reply's
    /// strings are moved out, not copied.
    fn take_fields(&self, reply: Option<Value>) -> Result<Option<Vec<Option<Vec<u8>>>>> {
        let values = match reply {
            Some(Value::Array(values)) if values.len() == Self::READ_VALUES => values,
            Some(Value::ServerError(err)) => {
                let err = Error::from(redis::RedisError::from(err));
                return Err(at_key(self.key(), "hash")(err));
            }
            Some(_) => return Err(unexpected_reply()),
            None => return Err(short_reply()),
        };
        let mut any = false;
        let mut fields = Vec::with_capacity(values.len());
        for value in values {
            fields.push(match value {
                Value::Nil => None,
                Value::BulkString(bytes) => {
                    any = true;
                    Some(bytes)
                }
                _ => return Err(unexpected_reply()),
            });
        }
        if !M::ALWAYS_HOLDS_A_FIELD {
            fields.pop(); // `_count`: only its presence counted
        }
        Ok(any.then_some(fields))
    }

    /// This object read whole, with HGETALL.
    pub(crate) async fn read_whole(&self, db: &Db) -> Result<RawFields> {
        let mut all = Self::read_whole_many(db, std::slice::from_ref(self)).await?;
        all.pop().unwrap_or_else(|| Err(short_reply()))
    }

    /// `refs` read whole: their HGETALLs, in one MULTI in the plain layout.
    async fn read_whole_many(db: &Db, refs: &[ObjectRef<M>]) -> Result<Vec<Result<RawFields>>> {
        Self::read_each(db, refs, "HGETALL", Self::take_whole).await
    }

    /// The declared fields in an HGETALL reply; `None` if it is empty.
    fn take_whole(&self, reply: Option<Value>) -> Result<RawFields> {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = reply_at(self.key(), redis_type(M::STORAGE), reply)?;
        if pairs.is_empty() {
            return Ok(None);
        }
        let mut fields = vec![None; M::FIELDS.len()];
        for (name, value) in pairs {
            if let Some(i) = M::FIELDS.iter().position(|f| f.as_bytes() == name) {
                fields[i] = Some(value);
            }
        }
        Ok(Some(fields))
    }
}

fn short_reply() -> Error {
    Error::Reply(redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "a pipeline returned fewer replies than commands",
    )))
}

fn unexpected_reply() -> Error {
    Error::Reply(redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "HMGET replied in an unknown shape",
    )))
}
