//! Optimistic read-modify-write: `WATCH` / read / `MULTI` ... `EXEC`, retried
//! while another client changes what was read.
//!
//! Redis runs each command atomically, but "read a balance, then write a
//! new one" is two commands, and another client's write can land between
//! them and be lost. `WATCH` closes that gap without blocking anyone: the
//! final `EXEC` runs nothing (replies nil) if a watched key changed after it
//! was watched, and the whole step is simply tried again on fresh values.
//!
//! `WATCH` belongs to a connection, so a transaction runs on a
//! [`DedicatedConnection`]: no other task's command can reach it between
//! the `WATCH` and the `EXEC`. [`Db::raw_transaction`] borrows one from the
//! `Db`'s pool per call; an [`OptimisticConnection`] keeps one for many
//! transactions.
//!
//! # One mechanism
//! This module holds the only WATCH retry loop of the crate
//! ([`OptimisticConnection::run`]) and its one backoff policy
//! ([`pause_before_retry`], [`MAX_ATTEMPTS`]). Every WATCH path runs
//! through it: [`Db::transaction`], [`Db::raw_transaction`], the writes
//! that keep unique and tag indexes on a server without scripts, the
//! sorted-score resync, the cascading delete, migration batches, pruning
//! of dead index entries, lock release / extend, and a bulk write's
//! gathered writes on one server (`db/plan/gathered.rs`). The one optimistic
//! path without WATCH, the checked script of unique and tag writes
//! (`db/plan/checked.rs`), retries with the same policy. A path supplies one attempt (read under WATCH, then
//! [`RawTransaction::exec`]); the loop supplies the connection, the retries,
//! the pauses and the [`Error::Conflict`] at the end.
//!
//! # Why the step gets an owned handle
//! The step is a closure returning a future, `|tx| async move { ... }`,
//! given a [`RawTransaction`] by value. An `async |tx: &mut _|` closure would
//! read more naturally, but a future built from one cannot be proven `Send`
//! by today's compiler ("implementation of `Send` is not general enough"),
//! which would forbid transactions inside `tokio::spawn`. The owned handle
//! shares the connection through a mutex and stops working once its step
//! has returned, so a handle kept by mistake cannot slip commands into a
//! later transaction.
//!
//! Both backends behave the same: the memory engine implements `WATCH`
//! with Redis 7's rules (a key that expires after being watched also aborts
//! the `EXEC`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::{Cmd, FromRedisValue, Pipeline, ToRedisArgs, Value};
use tokio::sync::Mutex;

use crate::command::AddCommand as _;
use crate::command::{cmd, Owned};
use crate::db::{Db, DedicatedConnection};
use crate::error::{Error, Result};

/// How many attempts the library's own optimistic writes (index upkeep,
/// sorted increments, cascades, migrations, lock release) make before
/// giving up with [`Error::Conflict`].
pub(crate) const MAX_ATTEMPTS: u32 = 32;

/// Longest pause between two attempts, in milliseconds.
const MAX_RETRY_PAUSE_MS: u64 = 32;

/// The connection and the number of the step allowed to use it.
struct Shared {
    conn: DedicatedConnection,
    /// Bumped when a step returns, which retires its [`RawTransaction`].
    generation: u64,
    /// The first key WATCHed, which routes an EXEC that writes nothing: on
    /// a cluster connection a MULTI/EXEC without keys would go to any node
    /// and check nobody's WATCH.
    route: Option<Vec<u8>>,
}

/// The reading side of one attempt of an optimistic transaction, handed to
/// the step of [`Db::raw_transaction`] / [`OptimisticConnection::raw_transaction`].
///
/// A raw transaction is `WATCH keys`, then the step, then `MULTI` / the
/// step's writes / `EXEC`, on a connection of its own. The step gets a
/// `RawTransaction` by value and:
///
/// - reads through it ([`query`](Self::query), or
///   [`query_pipeline`](Self::query_pipeline) for several reads in one
///   round trip): its commands run on the transaction's connection, after
///   the `WATCH`, so what they read is what the `EXEC` checks;
/// - may [`watch`](Self::watch) more keys, known only after a first read
///   (watch a key before reading it);
/// - returns the writes as a [`Pipeline`] (run as one `MULTI` / `EXEC`,
///   whether or not it was made [atomic](Pipeline::atomic)) together with
///   a value for the caller.
///
/// If another client changed a watched key after it was watched, the
/// `EXEC` writes nothing and the step runs again with a new
/// `RawTransaction` ([`attempt`](Self::attempt) tells which), after a short
/// random pause, up to the call's `max_attempts`, then [`Error::Conflict`].
/// An error returned by the step ends the call at once, with nothing
/// written. The step may run several times: keep its side effects out of
/// it until the call returns.
///
/// Do not send `MULTI`, `EXEC`, `DISCARD` or `UNWATCH` through it: return
/// the writes instead. It works only until its step returns; afterwards
/// (a handle kept by mistake) its methods fail with [`Error::Misuse`], so
/// it cannot slip commands into a later transaction. It is an owned,
/// `Send` handle so that a transaction can run inside `tokio::spawn`.
///
/// On a Redis Cluster the keys must share a slot (give them a hash tag,
/// `{acct}:a`): keys in several slots are refused with
/// [`Error::CrossSlot`] before anything is sent.
///
/// Here another client writes the watched key during the first attempt,
/// so the first `EXEC` writes nothing and the step runs again on the new
/// value:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redmodel::Error> {
/// let db = redmodel::Db::memory();
/// db.query::<()>(redis::cmd("SET").arg("counter").arg(1)).await?;
/// let other = db.clone(); // another client: the `Db`'s shared connection
/// let (value, attempt) = db
///     .raw_transaction(&["counter"], 5, |tx| {
///         let other = other.clone();
///         async move {
///             let n: i64 = tx.query(redis::cmd("GET").arg("counter")).await?;
///             if tx.attempt() == 1 {
///                 other.query::<()>(redis::cmd("INCR").arg("counter")).await?;
///             }
///             let mut writes = redis::pipe();
///             writes.cmd("SET").arg("counter").arg(n * 10);
///             Ok((writes, (n * 10, tx.attempt())))
///         }
///     })
///     .await?;
/// assert_eq!((value, attempt), (20, 2)); // read 2 on the second attempt
/// assert_eq!(db.query::<i64>(redis::cmd("GET").arg("counter")).await?, 20);
/// # Ok(()) }
/// ```
///
/// Following a reference: watch the key it names before reading it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redmodel::Error> {
/// let db = redmodel::Db::memory();
/// db.query::<()>(redis::cmd("HSET").arg("cfg").arg("next").arg("cfg2")).await?;
/// let attempts = db
///     .raw_transaction(&["cfg"], 5, |tx| async move {
///         let next: String = tx.query(redis::cmd("HGET").arg("cfg").arg("next")).await?;
///         tx.watch(&next).await?;
///         let mut pipe = redis::pipe();
///         pipe.cmd("HSET").arg(&next).arg("seen").arg(1);
///         Ok((pipe, tx.attempt()))
///     })
///     .await?;
/// assert_eq!(attempts, 1);
/// # Ok(()) }
/// ```
pub struct RawTransaction {
    shared: Arc<Mutex<Shared>>,
    generation: u64,
    attempt: u32,
}

impl std::fmt::Debug for RawTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTransaction")
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

impl RawTransaction {
    /// Runs one (reading) command on the transaction's connection, after
    /// the `WATCH`, and converts its reply to `T`. A write sent this way
    /// would run at once, outside the `MULTI`: return writes as the
    /// step's pipeline instead. Fails with [`Error::Misuse`] once the step
    /// that got this handle has returned.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let len = db
    ///     .raw_transaction(&["queue"], 3, |tx| async move {
    ///         let len: i64 = tx.query(redis::cmd("LLEN").arg("queue")).await?;
    ///         Ok((redis::pipe(), len))
    ///     })
    ///     .await?;
    /// assert_eq!(len, 0);
    /// # Ok(()) }
    /// ```
    pub async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T> {
        let mut shared = self.shared.lock().await;
        self.check_current(&shared)?;
        shared.conn.query(cmd).await
    }

    /// Runs a batch of (reading) commands in one round trip. The pipeline
    /// must not be [atomic](Pipeline::atomic): its `EXEC` would end the
    /// `WATCH` early (that is refused with [`Error::Misuse`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let (a, b) = db
    ///     .raw_transaction(&["a", "b"], 3, |tx| async move {
    ///         let mut reads = redis::pipe();
    ///         reads.cmd("HGET").arg("a").arg("n").cmd("HGET").arg("b").arg("n");
    ///         let both: (Option<i64>, Option<i64>) = tx.query_pipeline(&reads).await?;
    ///         Ok((redis::pipe(), both))
    ///     })
    ///     .await?;
    /// assert_eq!((a, b), (None, None));
    /// # Ok(()) }
    /// ```
    pub async fn query_pipeline<T: FromRedisValue>(&self, pipeline: &Pipeline) -> Result<T> {
        if pipeline.is_transaction() {
            return Err(Error::Misuse(
                "an atomic pipeline cannot read inside an optimistic transaction (its EXEC \
                 would end the WATCH); read with a plain pipeline and return the writes"
                    .to_string(),
            ));
        }
        let mut shared = self.shared.lock().await;
        self.check_current(&shared)?;
        shared.conn.query_pipeline(pipeline).await
    }

    /// Watches more keys, for keys known only after a first read (a
    /// reference field, an index entry). Watch a key *before* reading it:
    /// a change made between the read and the `WATCH` would go unseen.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let no_keys: &[&str] = &[];
    /// db.raw_transaction(no_keys, 3, |tx| async move {
    ///     tx.watch("late").await?;
    ///     Ok((redis::pipe(), ()))
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn watch<K: ToRedisArgs>(&self, keys: K) -> Result<()> {
        self.query(cmd("WATCH").arg(keys)).await
    }

    /// WATCHes `guards` and checks that each exists, in one round trip:
    /// [`Error::NotFound`] naming the first missing one. A guard deleted
    /// after this, before the EXEC, aborts the transaction.
    pub(crate) async fn watch_guards(&self, guards: &[impl AsRef<str>]) -> Result<()> {
        if guards.is_empty() {
            return Ok(());
        }
        let keys: Vec<&str> = guards.iter().map(AsRef::as_ref).collect();
        let exists: Vec<bool> = self
            .watch_then(&keys, |read| {
                for guard in &keys {
                    read.command("EXISTS").arg(*guard);
                }
            })
            .await?;
        match keys.iter().zip(&exists).find(|(_, e)| !**e) {
            Some((guard, _)) => Err(Error::NotFound {
                key: crate::layout::plain_key(guard),
            }),
            None => Ok(()),
        }
    }

    /// WATCHes `keys`, then runs the reads that `reads` adds to a plain
    /// pipeline, in one round trip: the server runs them in order, so the
    /// WATCH is in force before the first read.
    pub(crate) async fn watch_then<K, T>(
        &self,
        keys: K,
        reads: impl FnOnce(&mut Pipeline),
    ) -> Result<T>
    where
        K: ToRedisArgs,
        T: FromRedisValue,
    {
        let mut pipe = redis::pipe();
        pipe.add_command(cmd("WATCH").arg(keys).owned()).ignore();
        reads(&mut pipe);
        self.query_pipeline(&pipe).await
    }

    /// Which attempt this is, from 1: 2 and up after a watched key changed
    /// and the step runs again.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let n = db
    ///     .raw_transaction(&["k"], 3, |tx| async move { Ok((redis::pipe(), tx.attempt())) })
    ///     .await?;
    /// assert_eq!(n, 1);
    /// # Ok(()) }
    /// ```
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Another handle on the same attempt (retired with it).
    pub(crate) fn handle(&self) -> RawTransaction {
        RawTransaction {
            shared: Arc::clone(&self.shared),
            generation: self.generation,
            attempt: self.attempt,
        }
    }

    /// Makes `key` (its first WATCHed key) what routes an EXEC that
    /// writes nothing, unless the attempt has one already.
    pub(crate) async fn route_by(&self, key: &str) {
        let mut shared = self.shared.lock().await;
        if shared.route.is_none() {
            shared.route = Some(key.as_bytes().to_vec());
        }
    }

    /// Runs the attempt's writes, `writes` being an atomic pipeline: its
    /// replies, or `None` if a watched key changed and nothing was written.
    pub(crate) async fn exec<T: FromRedisValue>(&self, writes: &Pipeline) -> Result<Option<T>> {
        if !writes.is_transaction() {
            return Err(Error::Misuse(
                "the writes of an optimistic transaction must be an atomic pipeline".to_string(),
            ));
        }
        // The memory engine answers at once: let other tasks run between
        // the reads and the EXEC, as they would while a server's replies
        // travel, so that it sees the same interleavings (and WATCH
        // aborts) a server does.
        tokio::task::yield_now().await;
        let mut shared = self.shared.lock().await;
        self.check_current(&shared)?;
        if writes.is_empty()
            && let Some(route) = shared.route.clone()
        {
            let mut check = redis::pipe();
            check.atomic().command("EXISTS").arg(route).ignore();
            return shared.conn.query_pipeline::<Option<T>>(&check).await;
        }
        shared.conn.query_pipeline::<Option<T>>(writes).await
    }

    fn check_current(&self, shared: &Shared) -> Result<()> {
        if shared.generation == self.generation {
            return Ok(());
        }
        Err(Error::Misuse(
            "this RawTransaction belongs to a step that has already returned; use the \
             RawTransaction given to the current step"
                .to_string(),
        ))
    }
}

impl Db {
    /// Runs an optimistic read-modify-write on a connection of its own:
    /// see [`OptimisticConnection::raw_transaction`]. Use an
    /// [`OptimisticConnection`] to run many transactions on one connection.
    ///
    /// A transfer between two counters that loses no concurrent update:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// db.query::<()>(redis::cmd("HSET").arg("acct:a").arg("balance").arg(100)).await?;
    /// let moved = db
    ///     .raw_transaction(&["acct:a", "acct:b"], 10, |tx| async move {
    ///         let a: i64 = tx.query(redis::cmd("HGET").arg("acct:a").arg("balance")).await?;
    ///         let b: Option<i64> = tx.query(redis::cmd("HGET").arg("acct:b").arg("balance")).await?;
    ///         let mut pipe = redis::pipe();
    ///         if a < 30 {
    ///             return Ok((pipe, false)); // commit nothing
    ///         }
    ///         pipe.cmd("HSET").arg("acct:a").arg("balance").arg(a - 30)
    ///             .cmd("HSET").arg("acct:b").arg("balance").arg(b.unwrap_or(0) + 30);
    ///         Ok((pipe, true))
    ///     })
    ///     .await?;
    /// assert!(moved);
    /// let b: i64 = db.query(redis::cmd("HGET").arg("acct:b").arg("balance")).await?;
    /// assert_eq!(b, 30);
    /// # Ok(()) }
    /// ```
    pub async fn raw_transaction<K, T, F, Fut>(
        &self,
        keys: &[K],
        max_attempts: u32,
        step: F,
    ) -> Result<T>
    where
        K: ToRedisArgs,
        F: FnMut(RawTransaction) -> Fut,
        Fut: Future<Output = Result<(Pipeline, T)>>,
    {
        let mut conn = OptimisticConnection::from(self.exclusive().await?);
        conn.raw_transaction(keys, max_attempts, step).await
    }
}

/// A [`DedicatedConnection`] that runs optimistic transactions one after
/// the other, so that a task running many of them opens one connection,
/// not one each. Build it with `From`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redmodel::Error> {
/// use redmodel::OptimisticConnection;
/// let db = redmodel::Db::memory();
/// let mut conn = OptimisticConnection::from(db.dedicated().await?);
/// for _ in 0..3 {
///     conn.raw_transaction(&["hits"], 10, |tx| async move {
///         let n: Option<i64> = tx.query(redis::cmd("HGET").arg("hits").arg("n")).await?;
///         let mut pipe = redis::pipe();
///         pipe.cmd("HSET").arg("hits").arg("n").arg(n.unwrap_or(0) + 1);
///         Ok((pipe, ()))
///     })
///     .await?;
/// }
/// let n: i64 = db.query(redis::cmd("HGET").arg("hits").arg("n")).await?;
/// assert_eq!(n, 3);
/// # Ok(()) }
/// ```
pub struct OptimisticConnection {
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for OptimisticConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptimisticConnection")
            .finish_non_exhaustive()
    }
}

impl From<DedicatedConnection> for OptimisticConnection {
    fn from(conn: DedicatedConnection) -> Self {
        OptimisticConnection {
            shared: Arc::new(Mutex::new(Shared {
                conn,
                generation: 0,
                route: None,
            })),
        }
    }
}

impl OptimisticConnection {
    /// Runs an optimistic read-modify-write on this connection.
    ///
    /// Each attempt: `WATCH keys`; `step` reads through the [`RawTransaction`]
    /// it is given and returns the writes as a pipeline, with a value; the
    /// pipeline runs as one `MULTI` / `EXEC`. If a watched key changed
    /// meanwhile, `EXEC` writes nothing and the attempt is repeated (after a
    /// short random pause), up to `max_attempts` attempts in all (at least
    /// one), then [`Error::Conflict`]. On success, the value of the
    /// attempt that committed is returned.
    ///
    /// - An empty pipeline commits nothing but still runs an empty `EXEC`,
    ///   so that a read-only step, too, returns values read from one
    ///   consistent state.
    /// - An error returned by `step` ends the transaction at once, with
    ///   that error, and nothing written.
    /// - A command of the pipeline refused by the server fails the call
    ///   with that error and is not retried; as in Redis, the pipeline's
    ///   other commands are applied (a transaction does not roll back).
    /// - If the connection breaks during `EXEC`, the error says so
    ///   ([`Error::is_connection`]) and it is unknown whether the writes
    ///   were applied.
    ///
    /// `step` may run several times: keep side effects out of it until it
    /// has returned. To use borrowed values inside the step's `async move`
    /// block, take references first (`let key = &key;`): references are
    /// copied into each attempt's future.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use redmodel::OptimisticConnection;
    /// let db = redmodel::Db::memory();
    /// let mut conn = OptimisticConnection::from(db.dedicated().await?);
    /// let key = String::from("stock:apple");
    /// let key = &key;
    /// let left = conn
    ///     .raw_transaction(&[key], 10, |tx| async move {
    ///         let n: Option<i64> = tx.query(redis::cmd("HGET").arg(key).arg("n")).await?;
    ///         let n = n.unwrap_or(5) - 1;
    ///         let mut pipe = redis::pipe();
    ///         pipe.cmd("HSET").arg(key).arg("n").arg(n);
    ///         Ok((pipe, n))
    ///     })
    ///     .await?;
    /// assert_eq!(left, 4);
    /// # Ok(()) }
    /// ```
    pub async fn raw_transaction<K, T, F, Fut>(
        &mut self,
        keys: &[K],
        max_attempts: u32,
        mut step: F,
    ) -> Result<T>
    where
        K: ToRedisArgs,
        F: FnMut(RawTransaction) -> Fut,
        Fut: Future<Output = Result<(Pipeline, T)>>,
    {
        self.run(keys, max_attempts, None, |tx| {
            let decided = step(tx.handle());
            async move {
                let (mut writes, value) = decided.await?;
                writes.atomic();
                Ok(tx.exec::<Value>(&writes).await?.map(|_| value))
            }
        })
        .await
    }

    /// The one WATCH retry loop, under [`Db::raw_transaction`] and every
    /// optimistic write of the library: WATCH `keys`, run `step` (which
    /// reads, may WATCH more, and usually ends with [`RawTransaction::exec`]),
    /// and start over after a pause while it returns `None` (a watched key
    /// changed). [`Error::Conflict`] naming `conflict_key` after
    /// `max_attempts`.
    pub(crate) async fn run<K, T, F, Fut>(
        &mut self,
        keys: &[K],
        max_attempts: u32,
        conflict_key: Option<&str>,
        mut step: F,
    ) -> Result<T>
    where
        K: ToRedisArgs,
        F: FnMut(RawTransaction) -> Fut,
        Fut: Future<Output = Result<Option<T>>>,
    {
        let attempts = max_attempts.max(1);
        self.refuse_cross_slot(keys).await?;
        for attempt in 1..=attempts {
            let generation = {
                let mut shared = self.shared.lock().await;
                // WATCHes left by an earlier step that committed nothing
                // (or failed, or was dropped midway) would abort this one.
                shared.conn.clean_up().await?;
                if !keys.is_empty() {
                    shared.conn.query::<()>(cmd("WATCH").arg(keys)).await?;
                }
                shared.route = keys
                    .first()
                    .and_then(|k| k.to_redis_args().into_iter().next());
                shared.generation
            };
            let outcome = step(RawTransaction {
                shared: Arc::clone(&self.shared),
                generation,
                attempt,
            })
            .await;
            // Retire this attempt's RawTransaction, wherever it may have gone.
            {
                let mut shared = self.shared.lock().await;
                shared.generation = shared.generation.wrapping_add(1);
            }
            let cluster = self.shared.lock().await.conn.is_cluster();
            match outcome {
                Ok(Some(value)) => return Ok(value),
                Ok(None) => {}
                // The slot moved or its node is failing over: redis-rs
                // refreshes its slot map on the redirection; the next
                // attempt WATCHes on the slot's new master.
                Err(err) if cluster && redirected(&err) && attempt < attempts => {}
                Err(err) => return Err(err),
            }
            if attempt < attempts {
                tracing::debug!(
                    target: "redmodel::retry",
                    attempt,
                    key = conflict_key,
                    "a watched key changed: the transaction runs again"
                );
                pause_before_retry(attempt).await;
            }
        }
        Err(Error::Conflict {
            attempts,
            key: conflict_key.map(str::to_string),
        })
    }
}

impl OptimisticConnection {
    /// On a cluster connection, [`Error::CrossSlot`] if `keys` are in more
    /// than one slot (WATCH and EXEC run on one node).
    async fn refuse_cross_slot<K: ToRedisArgs>(&self, keys: &[K]) -> Result<()> {
        if !self.shared.lock().await.conn.is_cluster() {
            return Ok(());
        }
        let keys: Vec<Vec<u8>> = keys.iter().flat_map(|k| k.to_redis_args()).collect();
        let slot = |k: &[u8]| redis::cluster_routing::Slot::for_key(k);
        if keys.windows(2).all(|w| slot(&w[0]) == slot(&w[1])) {
            return Ok(());
        }
        Err(Error::CrossSlot {
            keys: keys
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect(),
        })
    }
}

/// Whether `err` is a cluster redirection or a transient cluster state met
/// inside a transaction (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, or an EXEC
/// aborted by one of them), after which a new attempt can succeed.
pub(crate) fn redirected(err: &Error) -> bool {
    match err {
        Error::Server(e) | Error::Unavailable { source: e } => {
            crate::error::is_redirection(e) || e.to_string().contains("EXECABORT")
        }
        _ => false,
    }
}

/// Runs `step` as an optimistic transaction on a pooled connection of
/// `db`, with the library's attempt limit: see [`OptimisticConnection::run`].
pub(crate) async fn watched<T, F, Fut>(db: &Db, conflict_key: &str, step: F) -> Result<T>
where
    F: FnMut(RawTransaction) -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let mut conn = OptimisticConnection::from(db.exclusive().await?);
    let no_keys: &[&str] = &[];
    conn.run(no_keys, MAX_ATTEMPTS, Some(conflict_key), step)
        .await
}

/// The one backoff policy: let the writer we collided with finish (on the
/// memory engine it runs on this thread), then a random pause that grows
/// with the attempt number (up to [`MAX_RETRY_PAUSE_MS`]), so that clients
/// that collided once do not collide again in lockstep.
pub(crate) async fn pause_before_retry(attempt: u32) {
    tokio::task::yield_now().await;
    let cap_ms = (1u64 << attempt.min(6)).min(MAX_RETRY_PAUSE_MS);
    let ms = rand::random_range(0..=cap_ms);
    // Outside a runtime (a lock released from `drop`) there is no timer:
    // yielding has to do.
    if ms > 0 && tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}
