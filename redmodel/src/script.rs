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

use redis::{FromRedisValue, RedisError, ScriptInvocation};

use crate::{Db, Result};

/// Runs `invocation` on `db`: `Some(reply)`, or `None` if the server
/// refuses scripts ([`refused`]). Any other error is the caller's.
pub(crate) async fn invoke<T: FromRedisValue>(
    db: &Db,
    invocation: &ScriptInvocation<'_>,
) -> Result<Option<T>> {
    let mut conn = db.clone();
    match invocation.invoke_async(&mut conn).await {
        Ok(reply) => Ok(Some(reply)),
        Err(err) if refused(&err) => Ok(None),
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
