//! Times to live on single fields of a hash: Redis 7.4's HPEXPIRE,
//! HPERSIST and HPTTL (Valkey 9 has them too). On a server without them
//! (Redis 7.0 and 7.2, Valkey 8, the memory engine) every call is
//! [`Error::Unsupported`], known from [`Db::server`] with no round trip.
//!
//! A field gets a TTL only where the model declares one
//! (`#[redmodel(ttl = "10m")]` on the field): every write of the field
//! gives it that TTL again, so no write leaves it without one. These
//! calls change it for the value the field holds until its next write.

use std::time::Duration;

use super::declared::checked_millis;
use super::Ttl;
use crate::command::cmd;
use crate::model::codec::Codec;
use crate::model::{Field, Model, ObjectRef};
use crate::{Db, Error, Result};

impl<M: Model> ObjectRef<M> {
    /// Gives `field` the time to live `ttl` (HPEXPIRE), until its next
    /// write, which gives it its declared TTL again. Whether the field
    /// exists (an absent field, or a missing object, gets nothing).
    ///
    /// [`Error::Misuse`] for a field declared without a TTL: a write of
    /// it (HSET) would silently drop the one set here.
    /// [`Error::InvalidTtl`] for a zero TTL, [`Error::Unsupported`] on a
    /// server without hash-field expiry.
    pub async fn expire_field<T, C: Codec<T>>(
        &self,
        db: &Db,
        field: Field<M, T, C>,
        ttl: Duration,
    ) -> Result<bool> {
        let name = field.name();
        if !M::FIELD_TTLS.iter().any(|(declared, _)| *declared == name) {
            return Err(Error::Misuse(format!(
                "field `{name}` of `{}` has no declared TTL, and its next write would drop one set now: declare `#[redmodel(ttl = \"...\")]` on it",
                M::TABLE
            )));
        }
        let ms = checked_millis(ttl)?;
        db.server().require_field_expiry()?;
        let command = cmd("HPEXPIRE")
            .arg(self.key_in(db).as_ref())
            .arg(ms)
            .arg("FIELDS")
            .arg(1)
            .arg(name)
            .clone();
        let replies: Vec<i64> = db.query(&command).await?;
        Ok(replies.first().is_some_and(|&r| r >= 0))
    }

    /// Removes the time to live of `field` (HPERSIST) until its next
    /// write, which gives it its declared TTL again. Whether it had one.
    /// [`Error::Unsupported`] on a server without hash-field expiry.
    pub async fn persist_field<T, C: Codec<T>>(
        &self,
        db: &Db,
        field: Field<M, T, C>,
    ) -> Result<bool> {
        db.server().require_field_expiry()?;
        let command = cmd("HPERSIST")
            .arg(self.key_in(db).as_ref())
            .arg("FIELDS")
            .arg(1)
            .arg(field.name())
            .clone();
        let replies: Vec<i64> = db.query(&command).await?;
        Ok(replies.first() == Some(&1))
    }

    /// The time to live of `field` (HPTTL): [`Ttl::Missing`] for an absent
    /// field (expired, never written, or a missing object).
    /// [`Error::Unsupported`] on a server without hash-field expiry.
    pub async fn field_ttl<T, C: Codec<T>>(&self, db: &Db, field: Field<M, T, C>) -> Result<Ttl> {
        db.server().require_field_expiry()?;
        let command = cmd("HPTTL")
            .arg(self.key_in(db).as_ref())
            .arg("FIELDS")
            .arg(1)
            .arg(field.name())
            .clone();
        let replies: Vec<i64> = db.read(&command).await?;
        Ok(match replies.first().copied().unwrap_or(-2) {
            -2 => Ttl::Missing,
            ms if ms < 0 => Ttl::Persistent,
            ms => Ttl::Expires(Duration::from_millis(ms.unsigned_abs())),
        })
    }
}
