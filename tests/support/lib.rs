//! Test support shared by the integration tests, examples and benchmarks
//! of redmodel (the library `redmodel_suite` of the root package).
//!
//! # Every behaviour test on every backend
//!
//! A behaviour test is written once and runs on the memory engine and on a
//! real Redis. [`backend_tests!`] turns each `async fn` inside it into two
//! `#[tokio::test]`s, `NAME::memory` and `NAME::redis`:
//!
//! ```no_run
//! use redmodel_suite::backend_tests;
//!
//! backend_tests! {
//!     /// HSET then HGET gives the value back.
//!     async fn hset_hget(ctx) {
//!         let key = ctx.key("teacher:A"); // "<unique prefix>teacher:A"
//!         ctx.db.query::<()>(redis::cmd("HSET").arg(&key).arg("name").arg("A")).await?;
//!         let name: String = ctx.db.query(redis::cmd("HGET").arg(&key).arg("name")).await?;
//!         assert_eq!(name, "A", "on {}", ctx.backend);
//!         Ok::<(), redmodel::Error>(())
//!     }
//!
//!     /// `exclusive`: the test gets a whole database to itself.
//!     exclusive async fn dbsize_counts_everything(ctx) {
//!         let n: i64 = ctx.db.query(&redis::cmd("DBSIZE")).await.unwrap();
//!         assert_eq!(n, 0);
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! The body gets a [`TestCtx`]: `ctx.db` (the [`redmodel::Db`] under test),
//! `ctx.key(name)` / `ctx.prefix` (a key prefix unique to this run of this
//! test), `ctx.backend` (`"memory"` or `"redis"`), `ctx.url()` (the real
//! server's URL, to check what reached it with a client of one's own) and
//! `ctx.server()` (the private server, for fault tests). It may return `()`
//! or a `Result<(), E: Debug>`. Where a macro does not fit (examples,
//! benchmarks), [`for_each_backend`] runs a closure on each backend in turn,
//! and [`run_on`] on one.
//!
//! Which real Redis:
//! - tests of [`Scope::Shared`] (the default) use the server `REDIS_URL`
//!   names if it is set, else a private server started for the test. On a
//!   `REDIS_URL` server they touch only keys under their prefix; the runner
//!   deletes those keys after the test (even after a failure) and never
//!   flushes anything;
//! - `exclusive` tests ([`Scope::Exclusive`]) always get a private server,
//!   even when `REDIS_URL` is set, since they count, flush or scan the
//!   whole database.
//!
//! If `redis-server` is not installed (or `REDIS_SERVER_BIN` names nothing
//! runnable), the real-Redis half is skipped with a printed note, except
//! under `CI=true`, where that is a test failure.
//!
//! # Private servers
//!
//! [`RedisServer::start`] spawns `redis-server` on a free 127.0.0.1 port,
//! in a temp dir of its own, without persistence, waits until it answers,
//! and kills it on drop; [`RedisServer::builder`] sets options (AOF, any
//! config line), and [`RedisServer::kill`] / [`RedisServer::restart`]
//! crash it and bring it back on the same port for fault tests.
//!
//! # Differential testing
//!
//! [`diff::Differ`] runs commands on the engine and a private server in
//! lockstep and reports the first reply that differs ([`diff::Mismatch`]).
//!
//! # Benchmarks
//!
//! [`bench`] holds what the benchmark examples share: their options, the
//! timed loop, medians and table cells.

mod backend;
pub mod bench;
pub mod diff;
mod server;

pub use backend::{
    for_each_backend, glob_escape, make_ctx, private_server_or_skip, redis_server_available,
    redis_url, run_on, under_ci, unique_prefix, Backend, Scope, TestCtx, TestOutcome,
};
pub use server::{
    check_installed, server_binary, RedisServer, RedisServerBuilder, ServerError, TlsFiles,
};
