//! Locks with an owner and an expiry (the design's `lock()` / `release()`,
//! which its original Python left as stubs).
//!
//! A lock named `NAME` is the string key `_lock:NAME` (see [`lock_key`])
//! holding a random token, written with `SET key token NX PX ttl`: only one
//! client can create it, and it frees itself when its ttl runs out, so a
//! crashed holder cannot block everyone forever.
//!
//! Releasing and extending must only touch the lock while it still holds
//! *our* token: after our ttl ran out, someone else may hold it. That
//! compare-and-act is a checked write ([`checked`]): `DEL` (or `PEXPIRE`)
//! if `GET` still reads our token, the read and the write one atomic unit
//! on every backend (one script on a server, the engine's lock in
//! process, a WATCH transaction where scripts are refused), one round
//! trip while the lock is held.
//!
//! # Why `_lock:`
//! The model layer escapes primary keys and reserves table names that
//! start with `_`, so no model key can start with `_lock:`: a lock can
//! never overwrite an object, and a SCAN of a model never meets a lock.
//!
//! # What a lock does not give
//! A lock is a lease: if the work outlives the ttl, another client can take
//! the lock while the first is still working. [`LockGuard::release`] then
//! reports [`Error::LockNotHeld`], so the overlap is never silent, but it
//! cannot be undone. Choose a ttl well above the work's duration, or call
//! [`LockGuard::extend`] while working.

use std::future::Future;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use crate::command::cmd;
use crate::db::plan::checked::{self, Decide, Reader};
use crate::db::Db;
use crate::error::{Error, Result};

/// The prefix of every lock key. Names starting with `_` are reserved by the
/// model layer, so no model key can collide with a lock.
pub const LOCK_KEY_PREFIX: &str = "_lock:";

/// First pause of [`Db::lock_wait`] between two tries; it doubles up to
/// [`MAX_BACKOFF`]. Each pause is drawn at random in its upper half, so that
/// waiters started together do not retry in lockstep.
const FIRST_BACKOFF: Duration = Duration::from_millis(2);
const MAX_BACKOFF: Duration = Duration::from_millis(100);

/// The Redis key of the lock named `name`: `_lock:NAME`.
///
/// ```
/// assert_eq!(redmodel::lock_key("nightly-report"), "_lock:nightly-report");
/// ```
pub fn lock_key(name: &str) -> String {
    format!("{LOCK_KEY_PREFIX}{name}")
}

/// A ttl as whole milliseconds for `PX` / `PEXPIRE`: rounded up, at least
/// 1 ms (a zero ttl would be refused by Redis; a 1 ms lock is as good as
/// none, which is what a zero ttl asks for).
fn ttl_ms(ttl: Duration) -> u64 {
    let ms = ttl.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// A fresh random token: 128 bits, so no two holders ever share one.
fn new_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// One try to create the lock key holding `token`. A lock taken is
/// remembered ([`recall`](crate::db::recall)) with its token, so that
/// its release or extension guesses the token rather than reading it.
async fn try_acquire(db: &Db, key: &str, token: &str, ttl: Duration) -> Result<bool> {
    let reply: Value = db
        .query(
            cmd("SET")
                .arg(key)
                .arg(token)
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms(ttl)),
        )
        .await?;
    let taken = matches!(reply, Value::Okay | Value::SimpleString(_));
    if taken {
        let mut get = cmd("GET");
        get.arg(key);
        db.recall()
            .saw(&get, &Value::BulkString(token.as_bytes().to_vec()));
    }
    Ok(taken)
}

/// What a holder does to its lock.
#[derive(Clone, Copy)]
enum Action {
    /// DEL the key.
    Release,
    /// PEXPIRE the key, in milliseconds.
    Extend(u64),
}

/// A holder's compare-and-act: `action`, only while `key` holds `token`
/// (else [`Error::LockNotHeld`], nothing written).
struct IfHolder<'a> {
    name: &'a str,
    key: &'a str,
    token: &'a str,
    action: Action,
}

impl Decide for IfHolder<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        let mut get = cmd("GET");
        get.arg(self.key);
        let current = reader.read(&[self.key], vec![get], false).await?;
        if !matches!(current.first(), Some(Value::BulkString(t)) if t == self.token.as_bytes()) {
            return Err(Error::LockNotHeld {
                name: self.name.to_string(),
            });
        }
        let mut act = match self.action {
            Action::Release => cmd("DEL"),
            Action::Extend(_) => cmd("PEXPIRE"),
        };
        act.arg(self.key);
        if let Action::Extend(ms) = self.action {
            act.arg(ms);
        }
        Ok(vec![act])
    }
}

/// Does `action` only if `key` holds `token`, and says whether it did:
/// one checked write ([`checked::run`]), which guesses the token from
/// the acquisition (one round trip while the lock is held) and, where
/// scripts are refused, runs as a WATCH transaction.
async fn if_holder(db: &Db, name: &str, key: &str, token: &str, action: Action) -> Result<bool> {
    let decide = IfHolder {
        name,
        key,
        token,
        action,
    };
    match checked::run::<()>(db, key, &[], &[], &decide).await {
        Ok(()) => Ok(true),
        Err(Error::LockNotHeld { .. }) => Ok(false),
        Err(err) => Err(err),
    }
}

/// Deletes `key` if it still holds `token`.
async fn release_token(db: &Db, name: &str, key: &str, token: &str) -> Result<bool> {
    if_holder(db, name, key, token, Action::Release).await
}

impl Db {
    /// Tries once to take the lock `name` for `ttl`: `Some(guard)` if it was
    /// free, `None` if someone else holds it.
    ///
    /// The lock is the key `_lock:NAME` ([`lock_key`]) holding a random
    /// token; it frees itself after `ttl` (rounded up to whole milliseconds)
    /// unless [extended](LockGuard::extend). Release it with
    /// [`LockGuard::release`]; dropping the guard releases it too (see
    /// [`LockGuard`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use std::time::Duration;
    /// let db = redmodel::Db::memory();
    /// let guard = db.lock("invoice:42", Duration::from_secs(10)).await?.expect("free");
    /// assert!(db.lock("invoice:42", Duration::from_secs(10)).await?.is_none(), "taken");
    /// guard.release().await?;
    /// assert!(db.lock("invoice:42", Duration::from_secs(10)).await?.is_some(), "free again");
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self, name: &str, ttl: Duration) -> Result<Option<LockGuard>> {
        let key = lock_key(name);
        let token = new_token();
        if !try_acquire(self, &key, &token, ttl).await? {
            return Ok(None);
        }
        Ok(Some(LockGuard {
            db: self.clone(),
            name: name.to_string(),
            key,
            token,
            held: true,
        }))
    }

    /// Takes the lock `name` for `ttl`, retrying while someone else holds
    /// it, for up to `timeout`; then fails with [`Error::LockTimeout`].
    ///
    /// Retries pause between 1 ms and 100 ms, growing, with random jitter
    /// so that waiters do not retry in lockstep. A zero `timeout` tries
    /// exactly once.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use std::time::Duration;
    /// let db = redmodel::Db::memory();
    /// let held = db.lock_wait("report", Duration::from_secs(10), Duration::from_secs(1)).await?;
    /// let err = db
    ///     .lock_wait("report", Duration::from_secs(10), Duration::from_millis(20))
    ///     .await
    ///     .unwrap_err();
    /// assert!(matches!(err, redmodel::Error::LockTimeout { .. }));
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock_wait(
        &self,
        name: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<LockGuard> {
        let start = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        loop {
            if let Some(guard) = self.lock(name, ttl).await? {
                return Ok(guard);
            }
            let waited = start.elapsed();
            let Some(left) = timeout.checked_sub(waited).filter(|d| !d.is_zero()) else {
                return Err(Error::LockTimeout {
                    name: name.to_string(),
                    waited,
                });
            };
            let half = backoff / 2;
            let pause = half + half.mul_f64(rand::random::<f64>());
            tokio::time::sleep(pause.min(left)).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Runs `work` while holding the lock `name`: takes it as
    /// [`lock_wait`](Db::lock_wait) does, awaits `work()`, releases the lock
    /// and returns what `work` returned.
    ///
    /// If `work` panics or the returned future is dropped, the guard's drop
    /// releases the lock. If `work` outlived `ttl` and the lock was taken
    /// by someone else meanwhile, the result is [`Error::LockNotHeld`]:
    /// the work was done, but maybe not alone.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use std::time::Duration;
    /// let db = redmodel::Db::memory();
    /// let ttl = Duration::from_secs(10);
    /// let seen = db
    ///     .with_lock("stock:apple", ttl, Duration::from_secs(1), || async {
    ///         let n: Option<i64> = db.query(redis::cmd("HGET").arg("stock").arg("apple")).await?;
    ///         db.query::<()>(redis::cmd("HSET").arg("stock").arg("apple").arg(n.unwrap_or(0) + 1))
    ///             .await?;
    ///         Ok::<_, redmodel::Error>(n)
    ///     })
    ///     .await??;
    /// assert_eq!(seen, None);
    /// # Ok(()) }
    /// ```
    pub async fn with_lock<T, F, Fut>(
        &self,
        name: &str,
        ttl: Duration,
        timeout: Duration,
        work: F,
    ) -> Result<T>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.lock_wait(name, ttl, timeout).await?;
        let out = work().await;
        guard.release().await?;
        Ok(out)
    }
}

/// A held lock (from [`Db::lock`], [`Db::lock_wait`]); it knows its random
/// token, so only this guard can release or extend the lock.
///
/// Dropping a guard that was not released releases it:
/// - on the memory engine, at once, inside `drop`;
/// - on a Redis server, in a task spawned on the current tokio runtime.
///   Outside a runtime (or if the runtime shuts down before the task runs)
///   nothing can be sent, and the lock frees itself when its ttl runs out.
///
/// Prefer [`release`](LockGuard::release) where you can: it reports a lock
/// lost to expiry, which a drop cannot.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redmodel::Error> {
/// use std::time::Duration;
/// let db = redmodel::Db::memory();
/// {
///     let guard = db.lock("job", Duration::from_secs(30)).await?.expect("free");
///     assert_eq!(guard.name(), "job");
///     assert_eq!(guard.key(), "_lock:job");
/// } // dropped: released
/// assert!(db.lock("job", Duration::from_secs(30)).await?.is_some());
/// # Ok(()) }
/// ```
pub struct LockGuard {
    db: Db,
    name: String,
    key: String,
    token: String,
    /// Whether dropping the guard should still release the lock.
    held: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("name", &self.name)
            .field("token", &self.token)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

impl LockGuard {
    /// The lock's name, as given to [`Db::lock`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let guard = db.lock("a", std::time::Duration::from_secs(1)).await?.expect("free");
    /// assert_eq!(guard.name(), "a");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Redis key of the lock, `_lock:NAME` ([`lock_key`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let guard = db.lock("a", std::time::Duration::from_secs(1)).await?.expect("free");
    /// assert_eq!(guard.key(), "_lock:a");
    /// # Ok(()) }
    /// ```
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The random token stored in the lock key while this guard holds it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::memory();
    /// let guard = db.lock("a", std::time::Duration::from_secs(1)).await?.expect("free");
    /// let stored: String = db.query(redis::cmd("GET").arg(guard.key())).await?;
    /// assert_eq!(stored, guard.token());
    /// # Ok(()) }
    /// ```
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Releases the lock: deletes its key if it still holds this guard's
    /// token.
    ///
    /// Fails with [`Error::LockNotHeld`] if the ttl ran out first (the key
    /// is gone, or another holder took it: their lock is left alone). If
    /// the server cannot be reached ([`Error::is_connection`]), the lock
    /// stays until its ttl runs out. [`Error::Conflict`] means the key kept
    /// changing under the check eight times in a row, which only a storm of
    /// writes to `_lock:NAME` by others can cause.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use std::time::Duration;
    /// let db = redmodel::Db::memory();
    /// let guard = db.lock("a", Duration::from_millis(20)).await?.expect("free");
    /// tokio::time::sleep(Duration::from_millis(50)).await; // the ttl runs out
    /// let other = db.lock("a", Duration::from_secs(10)).await?.expect("free again");
    /// let err = guard.release().await.unwrap_err();
    /// assert!(matches!(err, redmodel::Error::LockNotHeld { .. }));
    /// other.release().await?; // the other holder's lock was left alone
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<()> {
        let released = release_token(&self.db, &self.name, &self.key, &self.token).await;
        // Success or failure, it is settled: nothing left for `drop` to do.
        // (If this future is dropped before here, `drop` releases instead.)
        self.held = false;
        self.not_held_unless(released?)
    }

    /// Sets the lock's remaining time to `ttl` (rounded up to whole
    /// milliseconds), if this guard still holds it: a heartbeat for work
    /// that may outlive the first ttl.
    ///
    /// Fails with [`Error::LockNotHeld`] if the ttl ran out first; the
    /// guard then no longer releases anything when dropped.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// use std::time::Duration;
    /// let db = redmodel::Db::memory();
    /// let mut guard = db.lock("a", Duration::from_secs(1)).await?.expect("free");
    /// guard.extend(Duration::from_secs(60)).await?;
    /// let left: i64 = db.query(redis::cmd("PTTL").arg(guard.key())).await?;
    /// assert!(left > 50_000);
    /// # Ok(()) }
    /// ```
    pub async fn extend(&mut self, ttl: Duration) -> Result<()> {
        if !self.held {
            return Err(Error::LockNotHeld {
                name: self.name.clone(),
            });
        }
        let extend = Action::Extend(ttl_ms(ttl));
        let extended = if_holder(&self.db, &self.name, &self.key, &self.token, extend).await;
        if matches!(extended, Ok(false)) {
            self.held = false;
        }
        self.not_held_unless(extended?)
    }

    fn not_held_unless(&self, held: bool) -> Result<()> {
        if held {
            Ok(())
        } else {
            Err(Error::LockNotHeld {
                name: self.name.clone(),
            })
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        let db = self.db.clone();
        let name = std::mem::take(&mut self.name);
        let key = std::mem::take(&mut self.key);
        let token = std::mem::take(&mut self.token);
        let release = async move {
            // Nobody is left to hear the outcome: a lock already lost to
            // expiry, or an unreachable server, both leave the ttl to
            // free the key.
            let _ = release_token(&db, &name, &key, &token).await;
        };
        let mut release = Box::pin(release);
        if self.db.engine().is_some() {
            // The memory engine answers every command at once: the release
            // completes within a few polls (it only yields, to let other
            // tasks in before its EXEC), right here, with or without a
            // runtime.
            let mut cx = Context::from_waker(Waker::noop());
            for _ in 0..16 {
                if release.as_mut().poll(&mut cx).is_ready() {
                    return;
                }
            }
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(release);
        }
        // Otherwise: no runtime to talk to the server; the ttl frees the key.
    }
}
