//! redmodel: a schema-driven object mapper for Redis.
//!
//! The crate talks to a Redis server or to the bundled in-memory Redis
//! engine ([`memory`], the `redmodel-memory` crate), through one
//! cheap-to-clone handle, [`Db`]. Every backend executes the same Redis
//! commands, built as [`redis::Cmd`] and [`redis::Pipeline`] values, so
//! code written against the memory engine runs unchanged against a Redis
//! server.
//!
//! For updates that must not collide with other clients': [`Db::lock`] /
//! [`Db::with_lock`] (a lock with an owner token and a ttl),
//! [`Db::transaction`] (a typed optimistic read-modify-write over model
//! objects, retried on a concurrent write) and [`Db::raw_transaction`] (the
//! same over raw commands).
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
//!
//! # Cargo features
//!
//! - `tls` (**on by default**): `rediss://` URLs in [`Db::connect`] and
//!   [`Db::from_env`], and `Db::connect_with_tls` for a private CA or a
//!   client certificate. TLS is rustls with the ring crypto provider; the
//!   server's certificate is checked against the system's root
//!   certificates, and a refused one gives [`Error::Tls`].
//!
//!   It is on by default because hosted Redis services (and any server
//!   reached over a network one does not trust) are `rediss://`, and a
//!   `REDIS_URL` that fails only once deployed costs more than compiling
//!   rustls and ring once (about 16 s of a first debug build on 2 cores;
//!   nothing after). Turn it off with `default-features = false` when only
//!   the memory engine or plain `redis://` is used: a `rediss://` URL then
//!   gives [`Error::Config`] naming the feature to enable.
//! - `memory-server` (off): `redmodel::memory::serve`, the memory engine
//!   over RESP on a TCP port (for redis-cli, redis-benchmark, other
//!   languages' clients).
//! - `tls-insecure` (off): also accept `rediss://host/#insecure`, TLS with
//!   no certificate check, for development servers with self-signed
//!   certificates. Without it such a URL gives [`Error::Config`].
//!
//! # URLs
//!
//! `redis://[user:password@]host[:port][/db]` as redis-rs reads it: the user
//! and password log in through ACL (`AUTH user password`; `:password@`
//! alone logs in as the `default` user), the db number is selected on every
//! connection, and refused credentials fail at connect time with
//! [`Error::Auth`]. A command the ACL user may not run, or on a key outside
//! its key patterns, fails with [`Error::NoPermission`] (NOPERM), not a
//! connection error.
#![warn(missing_docs)]

mod command;
mod db;
mod error;
mod layout;
pub mod model;
mod sync_hook;

pub use db::{lock_key, LockGuard, LOCK_KEY_PREFIX};
pub use db::{
    CacheConfig, CacheStats, Db, DedicatedConnection, Message, Subscriber, SubscriberEvent,
};
pub use db::{OptimisticConnection, RawTransaction};
pub use db::{SentinelConfig, ServerInfo, ServerName, ServerVersion};
pub use error::{Error, ItemError, Result};
pub use layout::KeyLayout;
pub use model::Transaction;

/// The derives: `#[derive(Admin)]`, `#[derive(SubObject)]`,
/// `#[derive(Relation)]` (see [`model`]).
pub use redmodel_derive::{Admin, Relation, SubObject};

/// The model traits, under the derives' names (as serde does): one `use`
/// brings both the derive and the trait.
pub use model::{Admin, Model, Relation};

/// The names most programs need: `use redmodel::prelude::*;`.
pub mod prelude {
    pub use crate::model::{IntoPk as _, MemberList, ObjectRef, Query, Ref, RelationRef, Ttl};
    pub use crate::{Admin, Db, Error, Model, Relation, SubObject};
}

// Lets generated code name `::redmodel` inside this crate's own tests.
extern crate self as redmodel;

/// What generated code names, by absolute path (`::redmodel::__private`).
/// Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::model::__private::*;
    pub use crate::model::key::is_valid_table;
    pub use inventory;
}

/// Re-exported so that users (and generated code) name one version of redis-rs.
pub use redis;

/// The bundled in-memory Redis engine (the `redmodel-memory` crate).
pub use redmodel_memory as memory;

/// The README's and the guide's Rust examples (`docs/`), compiled and run
/// as doctests so that they cannot drift from the API.
#[cfg(doctest)]
mod readme {
    #[doc = include_str!("../../README.md")]
    struct Readme;

    #[doc = include_str!("../../docs/README.md")]
    struct GuideContents;

    #[doc = include_str!("../../docs/models.md")]
    struct ModelsGuide;

    #[doc = include_str!("../../docs/indexes.md")]
    struct IndexesGuide;

    #[doc = include_str!("../../docs/expiry.md")]
    struct ExpiryGuide;

    #[doc = include_str!("../../docs/queries.md")]
    struct QueriesGuide;

    #[doc = include_str!("../../docs/transactions.md")]
    struct TransactionsGuide;

    #[doc = include_str!("../../docs/connections.md")]
    struct ConnectionsGuide;

    #[doc = include_str!("../../docs/cluster.md")]
    struct ClusterGuide;

    #[doc = include_str!("../../docs/cache.md")]
    struct CacheGuide;

    #[doc = include_str!("../../docs/memory-engine.md")]
    struct MemoryEngineGuide;

    #[doc = include_str!("../../docs/testing.md")]
    struct TestingGuide;

    #[doc = include_str!("../../docs/performance.md")]
    struct PerformanceGuide;

    #[doc = include_str!("../../docs/errors.md")]
    struct ErrorsGuide;

    #[doc = include_str!("../../docs/seeds.md")]
    struct SeedsGuide;
}
