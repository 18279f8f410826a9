//! `DedicatedConnection`: an exclusive link, counted like every request.

use std::sync::Arc;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, Pipeline, RedisFuture, Value};

use super::acks::Acks;
use super::backend::Link;
use super::cluster::{holds_a_transaction, spans_slots};
use super::conn_state::ConnState;
use super::counters::Counters;
use crate::error::Result;

/// A connection used by one task at a time (see [`Db::dedicated`](crate::Db::dedicated)).
/// Its WATCHed keys and MULTI state are its own. Dropping it gives it
/// back to the `Db`'s pool.
pub struct DedicatedConnection {
    link: Box<dyn Link>,
    /// The `Db`'s request counters, shared by its clones.
    counters: Arc<Counters>,
    /// WATCHes or a MULTI left by the commands sent so far.
    state: ConnState,
    /// A cluster connection: it routes by key, so MULTI / EXEC / DISCARD
    /// sent on their own are refused.
    cluster: bool,
    /// The replica acknowledgements writes wait for ([`Db::with_replica_acks`](crate::Db::with_replica_acks)).
    acks: Option<Acks>,
}

impl std::fmt::Debug for DedicatedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DedicatedConnection")
            .finish_non_exhaustive()
    }
}

impl DedicatedConnection {
    pub(super) fn new(
        link: Box<dyn Link>,
        counters: Arc<Counters>,
        cluster: bool,
        acks: Option<Acks>,
    ) -> Self {
        DedicatedConnection {
            link,
            counters,
            state: ConnState::default(),
            cluster,
            acks,
        }
    }

    /// Whether this is a cluster connection (which routes by key).
    pub(crate) fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// Runs one command on this connection and converts its reply.
    pub async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        Ok(cmd.query_async(self).await?)
    }

    /// Runs a pipeline on this connection and converts its replies.
    pub async fn query_pipeline<T: FromRedisValue>(&mut self, pipeline: &Pipeline) -> Result<T> {
        Ok(pipeline.query_async(self).await?)
    }

    /// Drops what earlier commands left on the connection (an open MULTI,
    /// WATCHes), in one round trip, or none when nothing is left.
    pub(crate) async fn clean_up(&mut self) -> Result<()> {
        match self.state.clean_up() {
            Some(cmd) => self.query(&cmd).await,
            None => Ok(()),
        }
    }
}

impl ConnectionLike for DedicatedConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        if self.cluster && is_transaction_verb(cmd) {
            return Box::pin(std::future::ready(Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "MULTI, EXEC and DISCARD have no key",
                "on a Redis Cluster they cannot be routed: send the transaction as an \
                 atomic pipeline (its keys in one slot), or use Db::raw_transaction"
                    .to_string(),
            )))));
        }
        self.state.sending(cmd);
        // A command queued inside MULTI writes nothing yet: its EXEC does,
        // and WAIT follows that.
        match self
            .acks
            .filter(|_| !self.state.in_multi() && Acks::wanted_for(cmd))
        {
            None => {
                self.counters.command();
                self.link.req_packed_command(cmd)
            }
            Some(acks) => Box::pin(async move {
                let wrapped = acks.wrap(cmd);
                self.counters.pipeline(&wrapped);
                let replies = self.link.req_packed_commands(&wrapped, 0, 2).await?;
                acks.unwrap_one(replies)
            }),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        if self.cluster && !holds_a_transaction(pipeline) && spans_slots(pipeline) {
            // A cluster connection refuses a pipeline across slots (a
            // transaction stays refused): its commands go one by one, in
            // order, each routed by its key and each write followed by its
            // own WAIT. One WAIT after them all would reach one node only
            // and vouch for the others' writes unseen.
            return Box::pin(async move {
                let mut replies = Vec::with_capacity(pipeline.len());
                for cmd in pipeline.cmd_iter() {
                    replies.push(self.req_packed_command(cmd).await?);
                }
                Ok(replies.into_iter().skip(offset).take(count).collect())
            });
        }
        self.state.sending_pipeline(pipeline);
        // As for a command: not while a MULTI stays open after it.
        match self
            .acks
            .filter(|_| !self.state.in_multi() && Acks::wanted_for_pipeline(pipeline))
        {
            None => {
                self.counters.pipeline(pipeline);
                self.link.req_packed_commands(pipeline, offset, count)
            }
            Some(acks) => Box::pin(async move {
                let wrapped = acks.wrap_pipeline(pipeline);
                self.counters.pipeline(&wrapped);
                let replies = self
                    .link
                    .req_packed_commands(&wrapped, 0, wrapped.len())
                    .await?;
                acks.unwrap(replies, offset, count)
            }),
        }
    }

    fn get_db(&self) -> i64 {
        self.link.get_db()
    }
}

/// MULTI, EXEC or DISCARD: commands a cluster connection cannot route.
fn is_transaction_verb(cmd: &Cmd) -> bool {
    ["MULTI", "EXEC", "DISCARD"]
        .iter()
        .any(|verb| crate::command::is(cmd, verb))
}
