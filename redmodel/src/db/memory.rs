//! The memory backend: the bundled engine, in process.
//!
//! A client of the engine is a plain struct (its selected database and
//! transaction state), so an exclusive link is simply a new one: nothing to
//! pool, and nothing left behind when it is dropped.

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use super::backend::{Backend, Link};
use super::BoxFuture;
use crate::error::Result;
use crate::memory::Engine;

/// The engine behind a `Db::memory()`.
pub(crate) struct MemoryBackend {
    engine: Engine,
}

impl MemoryBackend {
    pub(crate) fn new(engine: Engine) -> Self {
        MemoryBackend { engine }
    }

    /// The engine, for a request that is about to take its lock: in debug
    /// builds, first a check that no decision holds that lock on this
    /// thread ([`assert_not_deciding`](super::plan::checked::assert_not_deciding)),
    /// where the request would wait for ever.
    fn engine_to_lock(&self) -> &Engine {
        #[cfg(debug_assertions)]
        super::plan::checked::assert_not_deciding();
        &self.engine
    }
}

impl Backend for MemoryBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn send<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        // Through the async path: a blocking command (BLPOP...) waits
        // without holding the thread, which the task that would serve it
        // may need.
        Box::pin(async move {
            let mut conn = self.engine_to_lock().connection();
            conn.req_packed_command(cmd).await
        })
    }

    fn send_pipeline<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut conn = self.engine_to_lock().connection();
            conn.req_packed_commands(pipeline, offset, count).await
        })
    }

    fn db_number(&self) -> i64 {
        0
    }

    fn exclusive(&self) -> BoxFuture<'_, Result<Box<dyn Link>>> {
        let link: Box<dyn Link> = Box::new(self.engine_to_lock().connection());
        Box::pin(std::future::ready(Ok(link)))
    }

    fn subscriber(&self) -> super::pubsub::Opening<'_> {
        let link = super::pubsub::Link::Memory(self.engine_to_lock().pubsub());
        Box::pin(std::future::ready(Ok(link)))
    }

    fn engine(&self) -> Option<&Engine> {
        Some(self.engine_to_lock())
    }
}
