//! Test support shared by the integration tests and the benchmark examples
//! of redmodel (the library `redmodel_suite` of the root package).
//!
//! # Every behaviour test on every backend
//!
//! A behaviour test is written once and runs on every backend: the memory
//! engine (in process, in cluster mode, and served over RESP), a real
//! Redis and a Redis Cluster. [`backend_tests!`] (the one runner) turns each
//! `async fn` inside it into one `#[tokio::test]` per backend, `NAME::memory`,
//! `NAME::redis` and so on. The backends are listed once, in
//! [`__with_backends!`]: a new backend added there (and started in
//! [`make_ctx`]) runs every behaviour test with no test edited.
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
//!
//!     /// A declared return type lets the body end with a plain `Ok(())`.
//!     exclusive async fn with_a_return_type(ctx) -> redmodel::Result<()> {
//!         let db = &ctx.db;
//!         db.query::<()>(redis::cmd("SET").arg("teacher:A").arg("x")).await?;
//!         Ok(())
//!     }
//!
//!     /// A plain `fn` gets the backend itself and runs on the test thread,
//!     /// for a test that drives its own runtime (with [`make_ctx`]).
//!     fn blocking(backend) {
//!         assert!(!backend.name().is_empty());
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
//! or a `Result<(), E: Debug>` (name the type after `->`, or in the final
//! `Ok::<(), E>(())`). Where a macro does not fit (examples,
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
//! # Module structure
//!
//! [`module_graph::cycles`] finds the import circles between sibling
//! modules of a crate, from its source.

mod backend;
mod cluster;
pub mod diff;
mod env;
mod info;
pub mod module_graph;
mod ports;
mod proxy;
mod sentinel;
mod server;

pub use backend::{
    configured_server_or_skip, for_each_backend, glob_escape, make_ctx, private_server_or_skip,
    redis_server_available, redis_url, run_on, under_ci, unique_prefix, Backend, Scope,
    ServedEngine, TestCtx, TestOutcome,
};
pub use cluster::{shared_cluster, RedisCluster, CLUSTER_TURN};
pub use env::{env_number, env_seed};
pub use info::command_calls;
pub use ports::{free_port, listen, serve_engine};
pub use proxy::Proxy;
pub use sentinel::SentinelSet;
pub use server::{
    check_installed, server_binary, RedisServer, RedisServerBuilder, ServerError, TlsFiles,
};

/// Declares the test `redis_server_available` of a test binary (each of
/// `tests/*/main.rs` calls it once), so that a skipped real-Redis half
/// shows in `cargo test`'s summary, not only as a note under
/// `--nocapture`.
///
/// When the build found no runnable `redis-server` (outside `CI=true`), the
/// suite's build script sets the cfg `redmodel_no_redis_server` and this
/// test is `#[ignore]`d, so every binary reports `1 ignored` and names it,
/// with the reason. Otherwise it runs, and fails if the server cannot be
/// run after all (removed since the build, or a `REDIS_SERVER_BIN` that
/// names nothing runnable); under `CI=true` it is never ignored.
#[macro_export]
macro_rules! redis_server_test {
    () => {
        /// Whether this binary's real-Redis half runs (see
        /// `redmodel_suite::redis_server_test!`).
        #[test]
        #[cfg_attr(
            redmodel_no_redis_server,
            ignore = "SKIPPED: no redis-server at build time, so this binary's real-Redis \
                      tests are skipped (install redis-server; under CI=true this fails)"
        )]
        fn redis_server_available() {
            if let Err(why) = $crate::check_installed() {
                panic!(
                    "{why}: this binary's real-Redis tests cannot run; install redis-server \
                     or point REDIS_SERVER_BIN at it"
                );
            }
        }
    };
}

/// A small deterministic generator for the tests that race on purpose:
/// one per task, seeded from the task's number, so that a failing run can
/// be replayed.
pub struct Rng(fastrand::Rng);

impl Rng {
    /// A generator for task `task` (any two tasks differ).
    pub fn for_task(task: usize) -> Self {
        Rng(fastrand::Rng::with_seed(task as u64 + 1))
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.usize(..n)
    }
}
