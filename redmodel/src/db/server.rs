//! The server backend: one Redis server (or a replica set's master).
//!
//! Ordinary requests share one multiplexed connection, re-established by
//! redis-rs's `ConnectionManager` after the server goes away; exclusive
//! links come from a small pool (see [`super::pool`]).

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, RedisFuture, Value};

use super::backend::{Backend, Link};
use super::pool::{self, Manager};
use super::pubsub::{self, Opening};
use super::BoxFuture;
use crate::error::Result;

/// A Redis server behind a `Db`.
pub(crate) struct ServerBackend {
    manager: ConnectionManager,
    /// Opens the subscribers' connections (TLS and credentials included).
    client: redis::Client,
    pool: bb8::Pool<Manager>,
    /// How long a borrower waits for a pooled connection.
    wait: Duration,
    /// How a subscriber's connection is watched for silence.
    heartbeat: pubsub::Heartbeat,
}

impl ServerBackend {
    /// Connects the shared connection (so that a bad address or refused
    /// credentials fail here) and prepares the pool.
    pub(crate) async fn connect(
        client: redis::Client,
        connect: Duration,
        response: Duration,
    ) -> Result<Self> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect))
            .set_response_timeout(Some(response))
            .set_number_of_retries(3)
            .set_max_delay(Duration::from_millis(500));
        let manager = ConnectionManager::new_with_config(client.clone(), config).await?;
        let exclusive = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect))
            .set_response_timeout(Some(response));
        // A borrower may wait for a free connection as long as a request
        // may wait for its reply: past that it is an outage, not a queue.
        let wait = connect + response;
        let pool = pool::build(
            Manager {
                client: client.clone(),
                config: exclusive,
            },
            wait,
        );
        Ok(ServerBackend {
            manager,
            client,
            pool,
            wait,
            heartbeat: pubsub::Heartbeat::after(response),
        })
    }
}

impl Backend for ServerBackend {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn send<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        // A clone of the manager is a few reference counts; it needs `&mut`.
        let mut manager = self.manager.clone();
        Box::pin(async move { manager.req_packed_command(cmd).await })
    }

    fn send_pipeline<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let mut manager = self.manager.clone();
        Box::pin(async move { manager.req_packed_commands(pipeline, offset, count).await })
    }

    fn db_number(&self) -> i64 {
        self.manager.get_db()
    }

    fn exclusive(&self) -> BoxFuture<'_, Result<Box<dyn Link>>> {
        Box::pin(pool::checkout(&self.pool, self.wait))
    }

    fn tracking_nodes(&self) -> BoxFuture<'_, Result<Vec<redis::ConnectionInfo>>> {
        let info = self.client.get_connection_info().clone();
        Box::pin(std::future::ready(Ok(vec![info])))
    }

    fn subscriber(&self) -> Opening<'_> {
        Box::pin(async move { Ok(pubsub::Link::Redis(self.client.get_async_pubsub().await?)) })
    }

    fn heartbeat(&self) -> Option<pubsub::Heartbeat> {
        Some(self.heartbeat)
    }
}
