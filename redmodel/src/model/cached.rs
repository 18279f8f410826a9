//! The model's reads through the near cache ([`Db::with_cache`]): `load`,
//! `load_map`, `get` and the `load_many` family look the objects up first,
//! read the others from the server as without the cache, and keep what
//! they read when no change raced it (the db layer's tickets decide).
//!
//! Only the public reads use the cache (these, and the index and
//! relation reads that load their objects through `read_many_cached`): a
//! write that reads before it writes (index upkeep, checked writes) and
//! the queries read the server.

use super::object::{RawFields, LOAD_BATCH};
use super::{Model, ObjectRef};
use crate::db::cache::Lookup;
use crate::{Db, Error, Result};

impl<M: Model> ObjectRef<M> {
    /// The object's stored fields, from the cache if it holds them.
    pub(crate) async fn read_raw_cached(&self, db: &Db) -> Result<RawFields> {
        let Some(cache) = db.cache() else {
            return self.read_raw(db).await;
        };
        let key = self.key_in(db);
        match cache.lookup(key.as_bytes(), M::TABLE) {
            Lookup::Hit(fields) => Ok(fields),
            Lookup::Miss(ticket) => {
                let fields = self.read_raw(db).await?;
                if let Some(ticket) = ticket {
                    cache.keep(key.as_bytes(), M::TABLE, ticket, fields.clone());
                }
                Ok(fields)
            }
        }
    }

    /// One stored field, by name, from the cached object (the object read
    /// and kept first if it is not cached); `None` without a cache, or for
    /// a name that is not a field of the model.
    pub(crate) async fn field_cached(
        &self,
        db: &Db,
        name: &str,
    ) -> Option<Result<Option<Vec<u8>>>> {
        db.cache()?;
        let at = M::FIELDS.iter().position(|f| *f == name)?;
        Some(
            self.read_raw_cached(db)
                .await
                .map(|fields| fields.and_then(|mut f| f.get_mut(at).and_then(Option::take))),
        )
    }

    /// Many objects, read as [`read_many_cached`](Self::read_many_cached)
    /// reads them, [`LOAD_BATCH`] to a batch: for the reads that load
    /// every object they find, however many.
    pub(crate) async fn read_batched_cached(
        db: &Db,
        refs: &[ObjectRef<M>],
    ) -> Result<Vec<Result<RawFields>>> {
        if refs.len() <= LOAD_BATCH {
            // The usual lookup: one batch, its replies as they come.
            return Self::read_many_cached(db, refs).await;
        }
        let mut out = Vec::with_capacity(refs.len());
        for batch in refs.chunks(LOAD_BATCH) {
            out.extend(Self::read_many_cached(db, batch).await?);
        }
        Ok(out)
    }

    /// Many objects, each from the cache if it holds it; the others in one
    /// round trip, as [`read_many`](Self::read_many) reads them. With the
    /// cache, the objects are each as of a recent instant, not all as of
    /// one.
    pub(crate) async fn read_many_cached(
        db: &Db,
        refs: &[ObjectRef<M>],
    ) -> Result<Vec<Result<RawFields>>> {
        let Some(cache) = db.cache() else {
            return Self::read_many(db, refs).await;
        };
        let mut out: Vec<Option<Result<RawFields>>> = Vec::with_capacity(refs.len());
        let mut missing = Vec::new();
        let mut tickets = Vec::new();
        for r in refs {
            match cache.lookup(r.key_in(db).as_bytes(), M::TABLE) {
                Lookup::Hit(fields) => out.push(Some(Ok(fields))),
                Lookup::Miss(ticket) => {
                    tickets.push((out.len(), ticket));
                    missing.push(r.clone());
                    out.push(None);
                }
            }
        }
        if !missing.is_empty() {
            let read = Self::read_many(db, &missing).await?;
            for (((at, ticket), r), fields) in tickets.into_iter().zip(&missing).zip(read) {
                if let (Some(ticket), Ok(fields)) = (ticket, &fields) {
                    cache.keep(r.key_in(db).as_bytes(), M::TABLE, ticket, fields.clone());
                }
                out[at] = Some(fields);
            }
        }
        Ok(out
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| {
                    Err(Error::Reply(redis::RedisError::from((
                        redis::ErrorKind::UnexpectedReturnType,
                        "a pipeline returned fewer replies than commands",
                    ))))
                })
            })
            .collect())
    }
}
