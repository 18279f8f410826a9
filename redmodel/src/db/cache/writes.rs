//! Read-your-writes: a write sent through the `Db` (or one of the
//! connections it lends) drops the keys it names from the cache once it
//! is answered, without waiting for the server's invalidation, which
//! comes on another connection and may come after the writer's next read.
//! Dropping after the reply, not before, is what makes it hold: a read
//! begun before the write and answered with the older value has a ticket
//! the drop outdates, and a read begun after the reply finds the server
//! already changed. A command queued in a MULTI typed command by command
//! changes nothing until its EXEC, so its keys go once EXEC is answered.

use std::sync::Arc;

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisFuture, Value};

use super::Cache;
use crate::command::is;
use crate::db::backend::Link;

/// What a command may have changed.
enum Written {
    /// These keys.
    Keys(Vec<Vec<u8>>),
    /// Anything: a write whose keys are unknown (a script without declared
    /// keys), FLUSHALL, FLUSHDB.
    All,
}

/// What `cmd` may change; `None` for a command that writes nothing. EXEC
/// names nothing itself: what it runs was seen as it was queued.
fn written(cmd: &Cmd) -> Option<Written> {
    let mut args: Vec<&[u8]> = Vec::with_capacity(4);
    for arg in cmd.args_iter() {
        match arg {
            Arg::Simple(a) => args.push(a),
            // A SCAN cursor: no write takes one.
            _ => return None,
        }
    }
    if !redmodel_memory::may_write(&args) || is(cmd, "EXEC") {
        return None;
    }
    Some(match redmodel_memory::key_positions(&args) {
        Some(at) if !at.is_empty() => Written::Keys(
            at.into_iter()
                .filter_map(|i| args.get(i).map(|k| k.to_vec()))
                .collect(),
        ),
        _ => Written::All,
    })
}

impl Cache {
    fn apply(&self, written: &Written) {
        match written {
            Written::Keys(keys) => self.invalidate(keys.iter().map(Vec::as_slice)),
            Written::All => self.flush(),
        }
    }

    /// After `cmd` was answered on a connection other tasks share (where
    /// no MULTI stays open between requests): what it may have changed
    /// goes.
    pub(crate) fn after_write(&self, cmd: &Cmd) {
        if let Some(w) = written(cmd) {
            self.apply(&w);
        }
    }

    /// [`after_write`](Self::after_write) for each command of `pipeline`
    /// (an atomic one's EXEC is answered with the pipeline).
    pub(crate) fn after_pipeline(&self, pipeline: &Pipeline) {
        for cmd in pipeline.cmd_iter() {
            self.after_write(cmd);
        }
    }
}

/// A connection whose writes drop their keys from the cache: what the
/// `Db` lends while its cache is on.
pub(crate) struct Invalidating {
    link: Box<dyn Link>,
    cache: Arc<Cache>,
    /// The writes queued in an open MULTI, dropped once EXEC is answered.
    queued: Option<Vec<Written>>,
}

impl Invalidating {
    pub(crate) fn new(link: Box<dyn Link>, cache: Arc<Cache>) -> Self {
        Invalidating {
            link,
            cache,
            queued: None,
        }
    }

    /// After `cmd` was answered: its writes go, or wait for EXEC inside
    /// a MULTI.
    fn answered(&mut self, cmd: &Cmd) {
        if is(cmd, "MULTI") {
            self.queued = Some(Vec::new());
        } else if is(cmd, "EXEC") {
            for w in self.queued.take().unwrap_or_default() {
                self.cache.apply(&w);
            }
        } else if is(cmd, "DISCARD") || is(cmd, "RESET") {
            self.queued = None;
        } else if let Some(w) = written(cmd) {
            match &mut self.queued {
                Some(queued) => queued.push(w),
                None => self.cache.apply(&w),
            }
        }
    }
}

impl ConnectionLike for Invalidating {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let reply = self.link.req_packed_command(cmd).await;
            self.answered(cmd);
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
            for cmd in pipeline.cmd_iter() {
                self.answered(cmd);
            }
            replies
        })
    }

    fn get_db(&self) -> i64 {
        self.link.get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::cache::{CacheConfig, Lookup};

    /// A connection that answers every command with OK.
    struct Ok;

    impl ConnectionLike for Ok {
        fn req_packed_command<'a>(&'a mut self, _: &'a Cmd) -> RedisFuture<'a, Value> {
            Box::pin(std::future::ready(Result::Ok(Value::Okay)))
        }

        fn req_packed_commands<'a>(
            &'a mut self,
            pipeline: &'a Pipeline,
            _: usize,
            _: usize,
        ) -> RedisFuture<'a, Vec<Value>> {
            let n = pipeline.cmd_iter().count();
            Box::pin(std::future::ready(Result::Ok(vec![Value::Okay; n])))
        }

        fn get_db(&self) -> i64 {
            0
        }
    }

    /// A live cache holding `k`.
    fn cache_holding_k() -> Arc<Cache> {
        let cache = Arc::new(Cache::new(&CacheConfig::default()));
        cache.set_live(true);
        let Lookup::Miss(Some(ticket)) = cache.lookup(b"k", "m") else {
            panic!("a live, empty cache gives a ticket");
        };
        cache.keep(b"k", "m", ticket, None);
        cache
    }

    fn holds_k(cache: &Cache) -> bool {
        matches!(cache.lookup(b"k", "m"), Lookup::Hit(_))
    }

    #[tokio::test]
    async fn a_write_queued_in_multi_drops_its_key_once_exec_is_answered() {
        let cache = cache_holding_k();
        let mut conn = Invalidating::new(Box::new(Ok), Arc::clone(&cache));
        for c in [
            redis::cmd("MULTI"),
            redis::cmd("HSET").arg("k").arg("f").arg(1).clone(),
        ] {
            conn.req_packed_command(&c).await.expect("OK");
        }
        assert!(holds_k(&cache), "dropped while only queued");
        conn.req_packed_command(&redis::cmd("EXEC"))
            .await
            .expect("OK");
        assert!(!holds_k(&cache));
    }

    #[tokio::test]
    async fn a_discarded_multi_drops_nothing_and_a_plain_write_drops_at_once() {
        let cache = cache_holding_k();
        let mut conn = Invalidating::new(Box::new(Ok), Arc::clone(&cache));
        let mut pipe = redis::pipe();
        pipe.cmd("MULTI").cmd("DEL").arg("k").cmd("DISCARD");
        conn.req_packed_commands(&pipe, 0, 3).await.expect("OK");
        assert!(holds_k(&cache));
        conn.req_packed_command(redis::cmd("DEL").arg("k"))
            .await
            .expect("OK");
        assert!(!holds_k(&cache));
        // A write whose keys are unknown empties the cache.
        let cache = cache_holding_k();
        cache.after_write(redis::cmd("EVALSHA").arg("0123").arg(0));
        assert!(!holds_k(&cache));
    }
}
