//! How objects are read: one command per object, whose reply also tells
//! whether the object exists.
//!
//! A hash object is read with HGETALL: Redis has no empty hash, so an empty
//! reply is a missing object, and any other is the object, even one that
//! has none of its declared fields (every one an absent `Option`: the hash
//! still holds `_count`). HMGET of the declared fields could not tell such
//! an object from a missing one without an EXISTS beside it, which costs a
//! MULTI around the two. A string object is read with GET.

use redis::{Pipeline, Value};

use super::object::RawFields;
use super::reply::{redis_type, reply_at};
use super::{Model, ObjectRef, Storage};
use crate::{Db, KeyLayout, Result};

impl<M: Model> ObjectRef<M> {
    /// The object: its stored fields, or `None` if it does not exist.
    pub(crate) async fn read_raw(&self, db: &Db) -> Result<RawFields> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        self.add_read(db, &mut pipe);
        let replies = db.read_replies(&pipe).await?;
        self.take_read(replies.into_iter().next())
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
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        if db.key_layout() == KeyLayout::Plain {
            pipe.atomic();
        }
        for r in refs {
            r.add_read(db, &mut pipe);
        }
        let replies = db.read_replies(&pipe).await?;
        let mut replies = replies.into_iter();
        Ok(refs.iter().map(|r| r.take_read(replies.next())).collect())
    }

    pub(crate) fn add_read(&self, db: &Db, pipe: &mut Pipeline) {
        let command = match M::STORAGE {
            Storage::Hash => "HGETALL",
            Storage::Single => "GET",
        };
        pipe.cmd(command).arg(self.key_in(db));
    }

    /// The stored fields in a reply of [`add_read`](Self::add_read).
    pub(crate) fn take_read(&self, reply: Option<Value>) -> Result<RawFields> {
        let expected = redis_type(M::STORAGE);
        match M::STORAGE {
            Storage::Hash => {
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = reply_at(self.key(), expected, reply)?;
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
            Storage::Single => {
                let value: Option<Vec<u8>> = reply_at(self.key(), expected, reply)?;
                Ok(value.map(|v| vec![Some(v)]))
            }
        }
    }
}
