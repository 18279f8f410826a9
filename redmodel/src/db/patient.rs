//! Reads that wait out a passing server state.
//!
//! A server loading its data, a cluster failing over or resharding, a node
//! just demoted, a script running: the server refuses the command without
//! running it ([`Error::Unavailable`]), and the same command succeeds a
//! moment later. A read changes nothing, so the model's reads send it
//! again, with growing pauses, for up to [`READ_PATIENCE`], then give up
//! with the error. Writes are not retried here: their own paths decide
//! (an optimistic transaction retries on a redirection; a caller retries
//! an idempotent write).

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use redis::{Arg, Cmd, FromRedisValue, Pipeline, Value};

use super::script::Lua;
use super::Db;
use crate::error::{is_passing_code, Error, Result};

/// How long a read waits out a passing state before returning it.
pub(crate) const READ_PATIENCE: Duration = Duration::from_secs(5);

/// The first pause; each next one doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const MAX_PAUSE: Duration = Duration::from_millis(500);

impl Db {
    /// Runs a reading command, sent again while the server is in a
    /// passing state (up to [`READ_PATIENCE`]).
    pub(crate) async fn read<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T> {
        let value = match self.run_now(cmd) {
            // In process the engine answered at once; a passing state
            // (another client's long script) is waited out as anywhere.
            Some(reply) if passing_state(&reply).is_none() => reply.extract_error()?,
            // Boxed: a round trip costs far more than the allocation, and
            // the caller's future does not carry the patient read's state.
            _ => Box::pin(self.patiently(|| self.query::<Value>(cmd))).await?,
        };
        Ok(T::from_redis_value(value).map_err(redis::RedisError::from)?)
    }

    /// Runs a pipeline of reads the same way. A pipeline that keeps its
    /// commands' errors as replies (`ignore_errors`) counts as refused if
    /// one of them is a passing state's.
    pub(crate) async fn read_pipeline<T: FromRedisValue>(&self, pipe: &Pipeline) -> Result<T> {
        let replies = self.read_replies(pipe).await?;
        Ok(T::from_redis_value(Value::Array(replies)).map_err(redis::RedisError::from)?)
    }

    /// [`read_pipeline`](Self::read_pipeline)'s replies as they came, one
    /// per command not ignored (no conversion: the model's reads take
    /// each reply apart themselves).
    pub(crate) async fn read_replies(&self, pipe: &Pipeline) -> Result<Vec<Value>> {
        self.patiently(|| async {
            let replies: Vec<Value> = match self.query_pipeline(pipe).await {
                Err(full @ Error::OutOfMemory { .. }) if pipe.is_transaction() => {
                    read_in_script(self, pipe).await?.ok_or(full)?
                }
                replies => replies?,
            };
            match replies.iter().find_map(passing_state) {
                Some(err) => Err(Error::Unavailable { source: err }),
                None => Ok(replies),
            }
        })
        .await
    }

    async fn patiently<T, Fut>(&self, mut attempt: impl FnMut() -> Fut) -> Result<T>
    where
        Fut: std::future::Future<Output = Result<T>>,
    {
        // The patience runs from the first refusal: reading the clock on
        // every read cost a load in process about 1% of its time.
        let mut refused: Option<Instant> = None;
        let mut pause = FIRST_PAUSE;
        loop {
            match attempt().await {
                Err(Error::Unavailable { source })
                    if refused.get_or_insert_with(Instant::now).elapsed() + pause
                        < READ_PATIENCE =>
                {
                    tracing::debug!(
                        target: "redmodel::retry",
                        error = %source,
                        "the server is in a passing state: the read runs again"
                    );
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_PAUSE);
                }
                outcome => return outcome,
            }
        }
    }
}

/// A server at its `maxmemory` refuses every command queued in a MULTI,
/// reads too; a script that only reads runs there. So reads at one
/// instant ([`Db::at_one_instant`]) that a full server refused run again
/// as this script, one instant still: each command (its argument count,
/// then its arguments in `ARGV`) with its reply or error in its place.
static READS: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(
        "#!lua flags=no-writes
local out, i = {}, 1
while i <= #ARGV do
  local argc = tonumber(ARGV[i])
  out[#out + 1] = redis.pcall(unpack(ARGV, i + 1, i + argc))
  i = i + argc + 1
end
return out
",
    )
});

/// `pipe`'s commands as [`READS`] on `db`: their replies, or `None` if
/// the server runs no scripts for us.
async fn read_in_script(db: &Db, pipe: &Pipeline) -> Result<Option<Vec<Value>>> {
    let mut call = READS.call::<&str>(&[]);
    for cmd in pipe.cmd_iter() {
        call.arg(cmd.args_iter().len());
        for arg in cmd.args_iter() {
            if let Arg::Simple(bytes) = arg {
                call.arg(bytes);
            }
        }
    }
    call.invoke(db).await
}

/// A reply that is a passing state's refusal, as an error.
fn passing_state(reply: &Value) -> Option<redis::RedisError> {
    match reply {
        Value::ServerError(err) if is_passing_code(err.code()) => {
            Some(redis::RedisError::from(err.clone()))
        }
        _ => None,
    }
}
