//! Read-your-writes: a write sent through the `Db` (or one of the
//! connections it lends) drops the keys it names from the cache once it
//! is answered, without waiting for the server's invalidation, which
//! comes on another connection and may come after the writer's next read.
//! Dropping after the reply, not before, is what makes it hold: a read
//! begun before the write and answered with the older value has a ticket
//! the drop outdates, and a read begun after the reply finds the server
//! already changed.

use std::sync::Arc;

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisFuture, Value};

use super::Cache;
use crate::db::backend::Link;

impl Cache {
    /// After `cmd` was answered: if it may write, its keys go; a write
    /// whose keys are unknown (a script without declared keys, FLUSHALL)
    /// empties the cache. EXEC names none: the commands it ran were seen
    /// as they were queued.
    pub(crate) fn after_write(&self, cmd: &Cmd) {
        let mut args: Vec<&[u8]> = Vec::with_capacity(4);
        for arg in cmd.args_iter() {
            match arg {
                Arg::Simple(a) => args.push(a),
                // A SCAN cursor: no write takes one.
                _ => return,
            }
        }
        if !redmodel_memory::may_write(&args) || crate::command::is(cmd, "EXEC") {
            return;
        }
        match redmodel_memory::key_positions(&args) {
            Some(at) if !at.is_empty() => {
                self.invalidate(at.into_iter().filter_map(|i| args.get(i).copied()))
            }
            _ => self.flush(),
        }
    }

    /// [`after_write`](Self::after_write) for each command of `pipeline`.
    pub(crate) fn after_pipeline(&self, pipeline: &Pipeline) {
        for cmd in pipeline.cmd_iter() {
            self.after_write(cmd);
        }
    }
}

/// A connection whose writes drop their keys from the cache: what the
/// `Db` lends while its cache is on.
pub(crate) struct Invalidating {
    pub(crate) link: Box<dyn Link>,
    pub(crate) cache: Arc<Cache>,
}

impl ConnectionLike for Invalidating {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let reply = self.link.req_packed_command(cmd).await;
            self.cache.after_write(cmd);
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let replies = self.link.req_packed_commands(pipeline, offset, count).await;
            self.cache.after_pipeline(pipeline);
            replies
        })
    }

    fn get_db(&self) -> i64 {
        self.link.get_db()
    }
}
