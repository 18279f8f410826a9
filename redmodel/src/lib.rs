//! redmodel: a schema-driven object mapper for Redis.
//!
//! The crate talks to a real Redis (one node or a cluster) or to the bundled
//! in-memory Redis engine ([`memory`]), through one cheap-to-clone handle,
//! [`Db`]. Every backend executes the same Redis commands, built as
//! [`redis::Cmd`] and [`redis::Pipeline`] values, so code written against the
//! memory engine runs unchanged against a Redis server.
//!
//! For updates that must not collide with other clients': [`Db::lock`] /
//! [`Db::with_lock`] (a lock with an owner token and a ttl) and
//! [`Db::transaction`] (optimistic read-modify-write with WATCH, retried on
//! a concurrent write).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), redmodel::Error> {
//! let db = redmodel::Db::memory();
//! db.query::<()>(redis::cmd("HSET").arg("teacher:A").arg("name").arg("Teacher A")).await?;
//! let name: Option<String> = db.query(redis::cmd("HGET").arg("teacher:A").arg("name")).await?;
//! assert_eq!(name.as_deref(), Some("Teacher A"));
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod db;
mod error;
mod lock;
pub mod memory;
pub mod model;
mod optimistic;

pub use db::{Db, DedicatedConnection};
pub use error::{Error, Result};
pub use lock::{lock_key, LockGuard, LOCK_KEY_PREFIX};
pub use optimistic::{OptimisticConnection, Transaction};

/// The derives: `#[derive(Admin)]`, `#[derive(SubObject)]`,
/// `#[derive(Relation)]` (see [`model`]).
pub use redmodel_derive::{Admin, Relation, SubObject};

/// The model traits, under the derives' names (as serde does): one `use`
/// brings both the derive and the trait.
pub use model::{Admin, Model, Relation};

/// The names most programs need: `use redmodel::prelude::*;`.
pub mod prelude {
    pub use crate::model::{IntoPk as _, MemberList, ObjectRef, Ref, RelationRef};
    pub use crate::{Admin, Db, Model, Relation, SubObject};
}

// Lets generated code name `::redmodel` inside this crate's own tests.
extern crate self as redmodel;

/// What generated code names, by absolute path (`::redmodel::__private`).
/// Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::model::__private::*;
    pub use crate::model::key::is_valid_table;
}

/// Re-exported so that users (and generated code) name one version of redis-rs.
pub use redis;
