//! Running one behaviour test on every backend.
//!
//! See the crate docs for the API; this module holds the machinery: which
//! real Redis to use, the unique key prefix of a test, cleaning up after a
//! test on a shared server, and the policy for a missing `redis-server`.

use std::fmt::Debug;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use redmodel::Db;

use crate::server::{check_installed, RedisServer, RedisServerBuilder};

/// The one list of backends. Everything that enumerates backends is
/// generated from it: the [`Backend`] enum, [`Backend::ALL`] and
/// [`Backend::name`], and the per-backend tests of [`backend_tests!`].
///
/// Adding a backend (a Redis Cluster, say) is one line here, `Cluster
/// cluster,`, plus its start-up code in [`make_ctx`] (whose `match` the
/// compiler then refuses to build without it); every behaviour test then
/// gets a `NAME::cluster` twin by itself.
///
/// Calls the macro `$callback` of this crate with `$args`, then `@backends`
/// and one `Variant test_name,` per backend (each with its doc comment).
#[doc(hidden)]
#[macro_export]
macro_rules! __with_backends {
    ($callback:ident ! { $($args:tt)* }) => {
        $crate::$callback! {
            $($args)*
            @backends
            /// The bundled memory engine: a fresh one per test.
            Memory memory,
            /// The memory engine in Redis 7.4 mode (`Db::memory_74`): what
            /// needs 7.4 (hash-field expiry) runs in process too.
            Memory74 memory_74,
            /// The memory engine in cluster mode (`Db::memory_cluster`):
            /// the cluster key layout, so every model operation takes its
            /// cluster path, and CROSSSLOT refusals, as on Redis Cluster.
            MemoryCluster memory_cluster,
            /// The memory engine served over RESP (`memory::serve`, on a
            /// thread of its own): a server backend whose Lua runs the
            /// model's scripts, as in process the engine runs them without.
            MemoryServer memory_server,
            /// A real Redis: the server `REDIS_URL` names, or a private one.
            Redis redis,
            /// A real Redis Cluster: the one `REDIS_CLUSTER_URLS` names, or
            /// the test binary's private one (three masters).
            Cluster cluster,
        }
    };
}

/// Declares [`Backend`] from the list in [`__with_backends!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __declare_backend_enum {
    (@backends $( $(#[$doc:meta])* $variant:ident $name:ident, )*) => {
        /// Which backend a test runs on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Backend {
            $( $(#[$doc])* $variant, )*
        }

        impl Backend {
            /// Every backend, in the order [`for_each_backend`] runs them.
            pub const ALL: &'static [Backend] = &[$(Backend::$variant),*];

            /// The backend's name in test names and messages: `"memory"`,
            /// `"redis"`, ...
            pub fn name(self) -> &'static str {
                match self {
                    $(Backend::$variant => stringify!($name),)*
                }
            }
        }
    };
}

crate::__with_backends!(__declare_backend_enum! {});

/// Whether a test shares its database with others (and so must stay
/// within its key prefix), or needs one to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Keys under the test's prefix only. On real Redis: the `REDIS_URL`
    /// server if set (never flushed), else a private server.
    Shared,
    /// A whole database (DBSIZE, FLUSHDB, SCAN without a pattern): always a
    /// fresh memory engine or a private server, even when `REDIS_URL` is set.
    Exclusive,
}

/// What a test body gets: the `Db`, its key prefix, and where it runs.
///
/// Cheap to clone. Build every key with [`TestCtx::key`], so that a test
/// on a shared server touches (and cleans up) only its own keys.
#[derive(Clone)]
pub struct TestCtx {
    /// The handle under test.
    pub db: Db,
    /// Prefix of every key this test may touch, e.g. `rmt:query:4711.3.998:`.
    pub prefix: String,
    /// The backend's name: `"memory"`, `"redis"` ([`Backend::name`]).
    pub backend: &'static str,
    /// The backend itself.
    pub kind: Backend,
    /// Whether the database belongs to this test alone.
    pub scope: Scope,
    /// The test's name (its module path).
    pub name: String,
    url: Option<String>,
    server: Option<Arc<RedisServer>>,
    /// The engine served over RESP for this test.
    _served: Option<Arc<ServedEngine>>,
    /// This test's turn on the shared private cluster, held to its end.
    _turn: Option<Arc<tokio::sync::OwnedMutexGuard<()>>>,
    cluster: Option<Vec<String>>,
}

impl Debug for TestCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCtx")
            .field("backend", &self.backend)
            .field("prefix", &self.prefix)
            .field("scope", &self.scope)
            .field("url", &self.url)
            .finish()
    }
}

impl TestCtx {
    /// The test's key for `name`: its prefix followed by `name`.
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Whether the backend is a cluster: Redis Cluster, or the memory
    /// engine in cluster mode (database 0 only, CROSSSLOT refusals).
    pub fn is_cluster_mode(&self) -> bool {
        self.db.is_cluster() || self.db.engine().is_some_and(|e| e.is_cluster_mode())
    }

    /// The handles a layout-sensitive test runs on: the backend's own
    /// `Db`, and where that one lays keys out plainly, the same database
    /// in the cluster layout too (the cluster's step paths on one node).
    pub fn layouts(&self) -> Vec<Db> {
        let mut dbs = vec![self.db.clone()];
        if self.db.key_layout() == redmodel::KeyLayout::Plain {
            dbs.push(self.db.with_key_layout(redmodel::KeyLayout::Cluster));
        }
        dbs
    }

    /// Whether this is the memory engine (in either key layout).
    pub fn is_memory(&self) -> bool {
        self.db.engine().is_some()
    }

    /// A model key (plain form, `teacher:A:class`) as this test's database
    /// stores it (`{teacher:A}:class` in the cluster layout): what a test
    /// reading raw keys must use.
    pub fn stored(&self, plain: &str) -> String {
        self.db.key_layout().stored(plain).into_owned()
    }

    /// On the memory engine: whether it lacks any of `commands` (a command
    /// family not written yet), printing which, so the caller can skip the
    /// test instead of failing. Always `false` on real Redis.
    pub fn engine_lacks(&self, commands: &[&str]) -> bool {
        if !self.is_memory() {
            return false;
        }
        let missing: Vec<&str> = commands
            .iter()
            .copied()
            .filter(|c| !crate::diff::engine_knows(c))
            .collect();
        if missing.is_empty() {
            return false;
        }
        eprintln!(
            "note: {}: skipped on the memory engine, which lacks {}",
            self.name,
            missing.join(" ")
        );
        true
    }

    /// The URL of the real server (`None` on the memory engine), for tests
    /// that open a connection of their own to check what reached it.
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// The seed URLs of the cluster (`None` off a cluster), for tests that
    /// open a connection of their own.
    pub fn cluster_urls(&self) -> Option<&[String]> {
        self.cluster.as_deref()
    }

    /// Another handle on this test's database that shares nothing with
    /// `db` but the data (no connection, no cache): what another process
    /// would have.
    pub async fn another_db(&self) -> Db {
        let db = match (self.db.engine(), &self.url, &self.cluster) {
            (Some(engine), _, _) => Db::from_engine(engine.clone()),
            (None, Some(url), _) => Db::connect(url)
                .await
                .unwrap_or_else(|e| panic!("{}: cannot connect to {url}: {e}", self.name)),
            (None, None, Some(urls)) => Db::connect_cluster(urls)
                .await
                .unwrap_or_else(|e| panic!("{}: cannot connect to {urls:?}: {e}", self.name)),
            (None, None, None) => panic!("{}: a backend with no address", self.name),
        };
        db.with_key_layout(self.db.key_layout())
    }

    /// The private server this test started, if any (`None` on the memory
    /// engine and on a `REDIS_URL` server).
    pub fn server(&self) -> Option<&RedisServer> {
        self.server.as_deref()
    }

    /// Deletes every key under this test's prefix (SCAN MATCH + DEL), so a
    /// shared server is left as it was found.
    pub async fn cleanup(&self) -> redmodel::Result<()> {
        let pattern = format!("{}*", glob_escape(&self.prefix));
        for keys in self.db.scan_keys(&pattern).await?.chunks(1000) {
            // One DEL per key: on a cluster, keys of several slots.
            let mut pipe = redis::pipe();
            for key in keys {
                pipe.cmd("DEL").arg(key).ignore();
            }
            self.db.query_pipeline::<()>(&pipe).await?;
        }
        Ok(())
    }
}

/// Escapes the glob characters of Redis's matcher (`* ? [ ] \`), so that
/// `glob_escape(s) + "*"` matches exactly the keys starting with `s`.
pub fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A key prefix no other test (in this process, another process, or
/// another machine using the same `REDIS_URL`) uses.
pub fn unique_prefix(test_name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let short = test_name.rsplit("::").next().unwrap_or(test_name);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "rmt:{short}:{}.{}.{nanos}:",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether we run under CI (`CI=true`), where a missing redis-server fails
/// the tests instead of skipping the real-Redis half.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// The seed URLs of `REDIS_CLUSTER_URLS` (comma-separated), if any.
pub fn cluster_urls() -> Option<Vec<String>> {
    let urls: Vec<String> = std::env::var("REDIS_CLUSTER_URLS")
        .ok()?
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    (!urls.is_empty()).then_some(urls)
}

/// `REDIS_URL` if set and not empty.
pub fn redis_url() -> Option<String> {
    std::env::var("REDIS_URL")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The missing-server policy: `true` if redis-server can be run; `false`
/// (with a printed note) when it is not installed, outside CI; a panic
/// saying what to install under `CI=true`.
pub fn redis_server_available(test_name: &str) -> bool {
    match check_installed() {
        Ok(()) => true,
        Err(why) if !under_ci() => {
            eprintln!(
                "note: {test_name}: real-Redis half skipped: {why} \
                 (install redis-server, or set REDIS_URL; under CI=true this fails)"
            );
            false
        }
        Err(why) => panic!(
            "{test_name}: {why}. CI=true requires a real Redis: install redis-server \
             (or point REDIS_SERVER_BIN at it)"
        ),
    }
}

/// Starts a private server with the default options, applying the
/// missing-server policy of [`redis_server_available`]; an installed
/// server that fails to start is a panic with its log.
pub fn private_server_or_skip(test_name: &str) -> Option<RedisServer> {
    configured_server_or_skip(test_name, RedisServer::builder())
}

/// [`private_server_or_skip`] with the options of `builder` (AOF, config
/// lines), for the fault tests.
pub fn configured_server_or_skip(
    test_name: &str,
    builder: RedisServerBuilder,
) -> Option<RedisServer> {
    if !redis_server_available(test_name) {
        return None;
    }
    match builder.start() {
        Ok(server) => Some(server),
        Err(e) => panic!("{test_name}: {e}"),
    }
}

/// Builds the context of one test on one backend; `None` means skipped.
///
/// This is where each backend is started: a new backend adds its arm here
/// (and its line in [`__with_backends!`]).
pub async fn make_ctx(backend: Backend, scope: Scope, test_name: &str) -> Option<TestCtx> {
    let mut prefix = unique_prefix(test_name);
    let mut turn = None;
    let mut cluster = None;
    let mut served = None;
    let (db, url, server) = match backend {
        Backend::Memory => (Db::memory(), None, None),
        Backend::Memory74 => (Db::memory_74(), None, None),
        Backend::MemoryCluster => {
            // As on a real cluster, a hash tag keeps the test's raw keys in
            // one slot: the engine in cluster mode refuses CROSSSLOT too.
            prefix = format!("{{{}}}:", prefix.trim_end_matches(':'));
            (Db::memory_cluster(), None, None)
        }
        Backend::MemoryServer => {
            let engine = ServedEngine::start()
                .unwrap_or_else(|e| panic!("{test_name}: cannot serve the engine: {e}"));
            let url = engine.url.clone();
            let db = Db::connect(&url).await.unwrap_or_else(|e| {
                panic!("{test_name}: cannot connect to the served engine {url}: {e}")
            });
            served = Some(Arc::new(engine));
            (db, Some(url), None)
        }
        Backend::Redis => match (scope, redis_url()) {
            (Scope::Shared, Some(url)) => {
                let db = Db::connect(&url).await.unwrap_or_else(|e| {
                    panic!("{test_name}: cannot connect to REDIS_URL={url}: {e}")
                });
                (db, Some(url), None)
            }
            _ => {
                let server = private_server_or_skip(test_name)?;
                let url = server.url();
                let db = Db::connect(&url).await.unwrap_or_else(|e| {
                    panic!("{test_name}: cannot connect to the private server {url}: {e}")
                });
                (db, Some(url), Some(Arc::new(server)))
            }
        },
        Backend::Cluster => {
            // A hash tag keeps all of a test's raw keys in one slot, so its
            // multi-key commands work as on one server.
            prefix = format!("{{{}}}:", prefix.trim_end_matches(':'));
            let urls = match (scope, cluster_urls()) {
                (Scope::Shared, Some(urls)) => urls,
                _ => {
                    if !redis_server_available(test_name) {
                        return None;
                    }
                    let urls = crate::shared_cluster()
                        .unwrap_or_else(|e| panic!("{test_name}: the test cluster: {e}"));
                    turn = Some(Arc::new(crate::CLUSTER_TURN.clone().lock_owned().await));
                    urls
                }
            };
            let db = Db::connect_cluster(&urls).await.unwrap_or_else(|e| {
                panic!("{test_name}: cannot connect to the cluster {urls:?}: {e}")
            });
            if turn.is_some() {
                // The private cluster is this test's alone now: start empty.
                db.query::<()>(&redis::cmd("FLUSHALL"))
                    .await
                    .unwrap_or_else(|e| panic!("{test_name}: FLUSHALL: {e}"));
                db.query::<()>(redis::cmd("SCRIPT").arg("FLUSH"))
                    .await
                    .unwrap_or_else(|e| panic!("{test_name}: SCRIPT FLUSH: {e}"));
            }
            cluster = Some(urls);
            (db, None, None)
        }
    };
    Some(TestCtx {
        _served: served,
        _turn: turn,
        cluster,
        db,
        prefix,
        backend: backend.name(),
        kind: backend,
        scope,
        name: test_name.to_string(),
        url,
        server,
    })
}

/// What a test body may return: `()` or a `Result` whose error is reported.
pub trait TestOutcome {
    /// `Err` with a description if the test failed.
    fn into_result(self) -> Result<(), String>;
}

impl TestOutcome for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: Debug> TestOutcome for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| format!("{e:?}"))
    }
}

/// Runs `body` on one backend: builds the context, runs the body, cleans
/// up the test's keys on a shared server (after a failure too), and then
/// reports the failure, naming the backend.
pub async fn run_on<F, Fut>(backend: Backend, scope: Scope, test_name: &str, body: F)
where
    F: FnOnce(TestCtx) -> Fut,
    Fut: Future,
    Fut::Output: TestOutcome,
{
    let Some(ctx) = make_ctx(backend, scope, test_name).await else {
        return;
    };
    eprintln!("--- {test_name} on {} ({:?})", ctx.backend, ctx);
    let outcome = CatchUnwind(Box::pin(body(ctx.clone()))).await;
    // A server or cluster the test does not own (REDIS_URL,
    // REDIS_CLUSTER_URLS): its keys are cleaned up, nothing else touched.
    let shared_server = ctx.server.is_none() && !ctx.is_memory() && ctx._turn.is_none();
    if shared_server {
        if let Err(e) = ctx.cleanup().await {
            eprintln!(
                "warning: {test_name}: cleanup of {}* failed: {e}",
                ctx.prefix
            );
        }
    }
    match outcome {
        Ok(out) => {
            if let Err(e) = out.into_result() {
                panic!("{test_name} failed on {}: {e}", ctx.backend);
            }
        }
        Err(panic) => {
            eprintln!("{test_name} panicked on {}", ctx.backend);
            std::panic::resume_unwind(panic)
        }
    }
}

/// Runs `body` on every backend in turn (memory, then real Redis), each
/// with a fresh [`TestCtx`] of [`Scope::Shared`].
pub async fn for_each_backend<F, Fut>(test_name: &str, mut body: F)
where
    F: FnMut(TestCtx) -> Fut,
    Fut: Future,
    Fut::Output: TestOutcome,
{
    for &backend in Backend::ALL {
        run_on(backend, Scope::Shared, test_name, &mut body).await;
    }
}

/// A future that turns a panic while polling into an `Err`, so that the
/// runner can clean up before re-raising it.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = self.get_mut().0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// Generates, for each test written inside it, one test per backend:
/// `NAME::memory`, `NAME::redis`, ... (one per line of
/// [`__with_backends!`]). See the crate docs for the forms it takes.
#[macro_export]
macro_rules! backend_tests {
    () => {};
    (
        $(#[$meta:meta])*
        exclusive async fn $name:ident($ctx:ident) $(-> $ret:ty)? $body:block
        $($rest:tt)*
    ) => {
        $crate::backend_tests!(@module [$crate::Scope::Exclusive] [$(#[$meta])*] $name $ctx [$($ret)?] $body);
        $crate::backend_tests!($($rest)*);
    };
    (
        $(#[$meta:meta])*
        async fn $name:ident($ctx:ident) $(-> $ret:ty)? $body:block
        $($rest:tt)*
    ) => {
        $crate::backend_tests!(@module [$crate::Scope::Shared] [$(#[$meta])*] $name $ctx [$($ret)?] $body);
        $crate::backend_tests!($($rest)*);
    };
    (
        $(#[$meta:meta])*
        fn $name:ident($backend:ident) $body:block
        $($rest:tt)*
    ) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn body($backend: $crate::Backend) $body

            $crate::__with_backends!(backend_tests! {
                @blocking [$(#[$meta])*]
            });
        }
        $crate::backend_tests!($($rest)*);
    };

    // One module per test, holding the test's body once, as a function,
    // and one test per backend that runs it: each backend's test calls the
    // same function, so the body is compiled once, not once per backend.
    // The backends are taken one at a time (recursively) because a test's
    // own attributes cannot be repeated inside the repetition over the
    // backends.
    (@module [$scope:expr] $metas:tt $name:ident $ctx:ident [$($ret:ty)?] $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::backend_tests!(@body $ctx [$($ret)?] $body);

            $crate::__with_backends!(backend_tests! {
                @async [$scope] $metas
            });
        }
    };
    // Without a declared return type, the body's own type (`()`, or the
    // `Result` its last expression names, which lets `?` work in it).
    (@body $ctx:ident [] $body:block) => {
        fn body(
            $ctx: $crate::TestCtx,
        ) -> impl ::std::future::Future<Output = impl $crate::TestOutcome> {
            async move $body
        }
    };
    (@body $ctx:ident [$ret:ty] $body:block) => {
        async fn body($ctx: $crate::TestCtx) -> $ret $body
    };
    (@async $scope:tt $metas:tt @backends) => {};
    (
        @async $scope:tt $metas:tt
        @backends $(#[$doc:meta])* $variant:ident $backend_name:ident, $($backends:tt)*
    ) => {
        $crate::backend_tests!(@async_one $scope $metas $variant $backend_name);
        $crate::backend_tests!(@async $scope $metas @backends $($backends)*);
    };
    (@async_one [$scope:expr] [$(#[$meta:meta])*] $variant:ident $backend_name:ident) => {
        $(#[$meta])*
        #[::tokio::test]
        async fn $backend_name() {
            $crate::run_on($crate::Backend::$variant, $scope, module_path!(), body).await;
        }
    };
    (@blocking $metas:tt @backends) => {};
    (
        @blocking $metas:tt
        @backends $(#[$doc:meta])* $variant:ident $backend_name:ident, $($backends:tt)*
    ) => {
        $crate::backend_tests!(@blocking_one $metas $variant $backend_name);
        $crate::backend_tests!(@blocking $metas @backends $($backends)*);
    };
    (@blocking_one [$(#[$meta:meta])*] $variant:ident $backend_name:ident) => {
        $(#[$meta])*
        #[test]
        fn $backend_name() {
            body($crate::Backend::$variant)
        }
    };
}

/// A fresh memory engine served over RESP on a loopback port, by a
/// runtime on a thread of its own (so that a test's own runtime, one
/// thread, cannot hold up its server); stopped when dropped.
pub struct ServedEngine {
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ServedEngine {
    /// Serves a new engine; its URL once it listens.
    pub fn start() -> std::io::Result<ServedEngine> {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("served-engine".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = url_tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let engine = redmodel::memory::Engine::new();
                    match crate::serve_engine(engine).await {
                        Ok(handle) => {
                            let _ = url_tx.send(Ok(handle.url()));
                            let _ = stopped.await;
                            drop(handle);
                        }
                        Err(e) => {
                            let _ = url_tx.send(Err(e));
                        }
                    }
                });
            })?;
        let url = url_rx
            .recv()
            .map_err(|_| std::io::Error::other("the engine's thread ended"))??;
        Ok(ServedEngine {
            url,
            stop: Some(stop),
        })
    }
}

impl Drop for ServedEngine {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
