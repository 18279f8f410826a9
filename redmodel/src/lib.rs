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
mod optimistic;

pub use db::{Db, DedicatedConnection};
pub use error::{Error, Result};
pub use lock::{lock_key, LockGuard, LOCK_KEY_PREFIX};
pub use optimistic::{OptimisticConnection, Transaction};

/// Re-exported so that users (and generated code) name one version of redis-rs.
pub use redis;
