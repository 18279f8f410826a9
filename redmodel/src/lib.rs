//! redmodel: a schema-driven object mapper for Redis.
//!
//! The crate talks to a real Redis (one node or a cluster) or to the bundled
//! in-memory Redis engine ([`memory`]), through one cheap-to-clone handle,
//! [`Db`]. Every backend executes the same Redis commands, built as
//! [`redis::Cmd`] and [`redis::Pipeline`] values, so code written against the
//! memory engine runs unchanged against a Redis server.
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

mod db;
mod error;
pub mod memory;
mod tls;

pub use db::{Db, DedicatedConnection};
pub use error::{Error, Result};

/// Re-exported so that users (and generated code) name one version of redis-rs.
pub use redis;
