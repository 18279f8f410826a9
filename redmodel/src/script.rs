//! Server-side scripts: how the library runs the few Lua scripts that make
//! a guarded write one atomic round trip, the same text on every backend
//! (the memory engine runs Lua as Redis does).
//!
//! A script is sent as EVALSHA, and loaded on NOSCRIPT, by redis-rs's
//! [`Script`](redis::Script). A server may refuse scripts altogether: an
//! ACL user without `@scripting`, or a proxy without EVAL. [`invoke`] then
//! answers `None` and the caller takes its path without a script (a WATCH
//! transaction, or ordered steps), so that such a user gets the same
//! results, in more round trips.
//!
//! A refusal is remembered for [`RETRY_AFTER`] ([`Refusals`]): without
//! that, every write on such a server paid a refused EVALSHA first. Past
//! it the next write tries a script again, so that a user granted
//! `@scripting` meanwhile gets the one-round-trip path back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::{FromRedisValue, RedisError, ScriptInvocation};

use crate::{Db, Result};

/// How long a refusal of scripts is taken as the server's answer.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// When a `Db`'s server last refused a script: milliseconds since `base`,
/// 0 for never (shared by the `Db`'s clones).
#[derive(Debug)]
pub(crate) struct Refusals {
    base: Instant,
    last: AtomicU64,
}

impl Default for Refusals {
    fn default() -> Self {
        Refusals {
            base: Instant::now(),
            last: AtomicU64::new(0),
        }
    }
}

impl Refusals {
    fn now(&self) -> u64 {
        // +1: a refusal in the first millisecond is not "never".
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// Whether a script was refused less than [`RETRY_AFTER`] ago.
    fn recent(&self) -> bool {
        let last = self.last.load(Ordering::Relaxed);
        let window = u64::try_from(RETRY_AFTER.as_millis()).unwrap_or(u64::MAX);
        last != 0 && self.now().saturating_sub(last) < window
    }

    fn record(&self) {
        self.last.store(self.now(), Ordering::Relaxed);
    }
}

/// Runs `invocation` on `db`: `Some(reply)`, or `None` if the server
/// refuses scripts ([`refused`]), now or lately. Any other error is the
/// caller's.
pub(crate) async fn invoke<T: FromRedisValue>(
    db: &Db,
    invocation: &ScriptInvocation<'_>,
) -> Result<Option<T>> {
    let refusals = db.script_refusals();
    if refusals.recent() {
        return Ok(None);
    }
    let mut conn = db.clone();
    match invocation.invoke_async(&mut conn).await {
        Ok(reply) => Ok(Some(reply)),
        Err(err) if refused(&err) => {
            refusals.record();
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}

/// Whether `err` says the server runs no scripts for us: the ACL denies
/// EVALSHA (NOPERM), or the command does not exist there.
fn refused(err: &RedisError) -> bool {
    err.code() == Some("NOPERM")
        || err
            .detail()
            .is_some_and(|d| d.starts_with("unknown command"))
}
