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
//! the `WATCH` and the `EXEC`. [`Db::transaction`] opens one per call;
//! [`DedicatedConnection::transaction`] reuses one for many transactions.
//!
//! Both backends behave the same: the memory engine implements `WATCH`
//! with Redis 7's rules (a key that expires after being watched also aborts
//! the `EXEC`).

use std::time::Duration;

use redis::{Cmd, FromRedisValue, Pipeline, ToRedisArgs, Value};

use crate::db::{Db, DedicatedConnection};
use crate::error::{Error, Result};

/// Longest pause between two attempts, in milliseconds. Each pause is drawn
/// at random up to `min(attempt, MAX_RETRY_PAUSE_MS)` ms, so that clients
/// that collided once do not collide again in lockstep.
const MAX_RETRY_PAUSE_MS: u64 = 10;

/// The reading side of one attempt of an optimistic transaction, handed to
/// the closure of [`Db::transaction`].
///
/// Its commands run on the transaction's own connection, after the
/// `WATCH`; what they read is what the `EXEC` will check. Do not send
/// `MULTI`, `EXEC`, `DISCARD` or `UNWATCH` through it: return the writes as
/// the pipeline instead.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redmodel::Error> {
/// let db = redmodel::Db::memory();
/// db.query::<()>(redis::cmd("HSET").arg("cfg").arg("next").arg("cfg2")).await?;
/// let attempts = db
///     .transaction(&["cfg"], 5, async |tx| {
///         // Follow a reference: watch the key it names before reading it.
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
pub struct Transaction<'c> {
    conn: &'c mut DedicatedConnection,
    attempt: u32,
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

impl Transaction<'_> {
    /// Runs one (reading) command on the transaction's connection.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let len = db
    ///     .transaction(&["queue"], 3, async |tx| {
    ///         let len: i64 = tx.query(redis::cmd("LLEN").arg("queue")).await?;
    ///         Ok((redis::pipe(), len))
    ///     })
    ///     .await?;
    /// assert_eq!(len, 0);
    /// # Ok(()) }
    /// ```
    pub async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        self.conn.query(cmd).await
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
    ///     .transaction(&["a", "b"], 3, async |tx| {
    ///         let mut reads = redis::pipe();
    ///         reads.cmd("HGET").arg("a").arg("n").cmd("HGET").arg("b").arg("n");
    ///         let both: (Option<i64>, Option<i64>) = tx.query_pipeline(&reads).await?;
    ///         Ok((redis::pipe(), both))
    ///     })
    ///     .await?;
    /// assert_eq!((a, b), (None, None));
    /// # Ok(()) }
    /// ```
    pub async fn query_pipeline<T: FromRedisValue>(&mut self, pipeline: &Pipeline) -> Result<T> {
        if pipeline.is_transaction() {
            return Err(Error::Misuse(
                "an atomic pipeline cannot read inside an optimistic transaction (its EXEC \
                 would end the WATCH); read with a plain pipeline and return the writes"
                    .to_string(),
            ));
        }
        self.conn.query_pipeline(pipeline).await
    }

    /// Watches more keys, for keys known only after a first read (a
    /// reference field, an index entry). Watch a key *before* reading it:
    /// a change made between the read and the `WATCH` would go unseen.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// db.transaction::<&str, _, _>(&[], 3, async |tx| {
    ///     tx.watch("late").await?;
    ///     Ok((redis::pipe(), ()))
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn watch<K: ToRedisArgs>(&mut self, keys: K) -> Result<()> {
        self.conn.query(redis::cmd("WATCH").arg(keys)).await
    }

    /// Which attempt this is, from 1.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let n = db.transaction(&["k"], 3, async |tx| Ok((redis::pipe(), tx.attempt()))).await?;
    /// assert_eq!(n, 1);
    /// # Ok(()) }
    /// ```
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

impl Db {
    /// Runs an optimistic read-modify-write on a connection of its own: see
    /// [`DedicatedConnection::transaction`], which this opens a connection
    /// for. Use that one directly to run many transactions on one
    /// connection.
    ///
    /// A transfer between two counters that loses no concurrent update:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// db.query::<()>(redis::cmd("HSET").arg("acct:a").arg("balance").arg(100)).await?;
    /// let moved = db
    ///     .transaction(&["acct:a", "acct:b"], 10, async |tx| {
    ///         let a: i64 = tx.query(redis::cmd("HGET").arg("acct:a").arg("balance")).await?;
    ///         let mut pipe = redis::pipe();
    ///         if a < 30 {
    ///             return Ok((pipe, false)); // commit nothing
    ///         }
    ///         pipe.cmd("HINCRBY").arg("acct:a").arg("balance").arg(-30)
    ///             .cmd("HINCRBY").arg("acct:b").arg("balance").arg(30);
    ///         Ok((pipe, true))
    ///     })
    ///     .await?;
    /// assert!(moved);
    /// let b: i64 = db.query(redis::cmd("HGET").arg("acct:b").arg("balance")).await?;
    /// assert_eq!(b, 30);
    /// # Ok(()) }
    /// ```
    pub async fn transaction<K, T, F>(&self, keys: &[K], max_attempts: u32, step: F) -> Result<T>
    where
        K: ToRedisArgs,
        F: AsyncFnMut(&mut Transaction<'_>) -> Result<(Pipeline, T)>,
    {
        let mut conn = self.dedicated().await?;
        conn.transaction(keys, max_attempts, step).await
    }
}

impl DedicatedConnection {
    /// Runs an optimistic read-modify-write on this connection.
    ///
    /// Each attempt: `WATCH keys`; `step` reads through the [`Transaction`]
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
    /// has returned.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let mut conn = db.dedicated().await?;
    /// for _ in 0..3 {
    ///     conn.transaction(&["hits"], 10, async |tx| {
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
    pub async fn transaction<K, T, F>(
        &mut self,
        keys: &[K],
        max_attempts: u32,
        mut step: F,
    ) -> Result<T>
    where
        K: ToRedisArgs,
        F: AsyncFnMut(&mut Transaction<'_>) -> Result<(Pipeline, T)>,
    {
        let attempts = max_attempts.max(1);
        for attempt in 1..=attempts {
            if !keys.is_empty() {
                self.query::<()>(redis::cmd("WATCH").arg(keys)).await?;
            }
            let decided = step(&mut Transaction {
                conn: &mut *self,
                attempt,
            })
            .await;
            let (mut writes, value) = match decided {
                Ok(decided) => decided,
                Err(e) => {
                    self.unwatch_quietly().await;
                    return Err(e);
                }
            };
            writes.atomic();
            // `EXEC` replies nil (`None`) when a watched key changed.
            let committed: Option<Value> = self.query_pipeline(&writes).await?;
            if committed.is_some() {
                return Ok(value);
            }
            if attempt < attempts {
                pause_before_retry(attempt).await;
            }
        }
        Err(Error::Conflict { attempts })
    }

    /// Drops the watches of an abandoned attempt, so that a reused
    /// connection does not carry them into its next transaction. A failure
    /// here means the connection is broken, which drops them anyway.
    async fn unwatch_quietly(&mut self) {
        let _ = self.query::<()>(&redis::cmd("UNWATCH")).await;
    }
}

/// Lets the other side of the collision finish before trying again.
async fn pause_before_retry(attempt: u32) {
    tokio::task::yield_now().await;
    let ms = rand::random_range(0..=u64::from(attempt).min(MAX_RETRY_PAUSE_MS));
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}
