//! A private replica set watched by Redis Sentinel, for one test.
//!
//! [`SentinelSet::start`] runs a primary and one replica (each a
//! [`RedisServer`]), waits until the replica's link is up, then runs three
//! sentinels (the same binary with `--sentinel`) monitoring the primary
//! under a master name, with quorum 2 and short failure-detection times,
//! so that a failover takes seconds. Everything is killed on drop.

use std::time::{Duration, Instant};

use crate::server::{RedisServer, ServerError};

/// How long the set may take to come up, or the sentinels to find each
/// other and the replica.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(20);

/// A primary, its replica and three sentinels.
pub struct SentinelSet {
    name: String,
    /// The two data nodes: the primary at start, then the replica.
    nodes: Vec<RedisServer>,
    sentinels: Vec<RedisServer>,
}

impl SentinelSet {
    /// Starts the set, the sentinels monitoring the primary as `name`.
    pub fn start(name: &str) -> Result<SentinelSet, ServerError> {
        let primary = RedisServer::start()?;
        let replica = RedisServer::builder()
            .config(format!("replicaof 127.0.0.1 {}", primary.port()))
            .start()?;
        wait_until(SETTLE_TIMEOUT, "the replica's link to the primary", || {
            info(&replica, "replication").contains("master_link_status:up")
        })?;
        let mut sentinels = Vec::with_capacity(3);
        for _ in 0..3 {
            sentinels.push(
                RedisServer::builder()
                    .sentinel()
                    .config(format!(
                        "sentinel monitor {name} 127.0.0.1 {} 2",
                        primary.port()
                    ))
                    .config(format!("sentinel down-after-milliseconds {name} 800"))
                    .config(format!("sentinel failover-timeout {name} 3000"))
                    .start()?,
            );
        }
        Ok(SentinelSet {
            name: name.to_string(),
            nodes: vec![primary, replica],
            sentinels,
        })
    }

    /// Waits until every sentinel knows the two others and the replica:
    /// what a failover needs (a majority to agree, a replica to promote).
    pub fn wait_discovered(&self) -> Result<(), ServerError> {
        for sentinel in &self.sentinels {
            wait_until(SETTLE_TIMEOUT, "the sentinels to find each other", || {
                self.count(sentinel, "SENTINELS") >= 2 && self.count(sentinel, "REPLICAS") >= 1
            })?;
        }
        Ok(())
    }

    /// How many entries `SENTINEL what name` lists on `sentinel`.
    fn count(&self, sentinel: &RedisServer, what: &str) -> usize {
        let Ok(mut conn) = sentinel.client().get_connection() else {
            return 0;
        };
        redis::cmd("SENTINEL")
            .arg(what)
            .arg(&self.name)
            .query::<Vec<redis::Value>>(&mut conn)
            .map_or(0, |entries| entries.len())
    }

    /// The master name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sentinels' URLs.
    pub fn sentinel_urls(&self) -> Vec<String> {
        self.sentinels.iter().map(RedisServer::url).collect()
    }

    /// The sentinels (to kill one).
    pub fn sentinels(&mut self) -> &mut [RedisServer] {
        &mut self.sentinels
    }

    /// The port of the primary, as the first sentinel that answers names it.
    pub fn primary_port(&self) -> Option<u16> {
        self.sentinels.iter().find_map(|sentinel| {
            let mut conn = sentinel.client().get_connection().ok()?;
            let (_, port): (String, u16) = redis::cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg(&self.name)
                .query(&mut conn)
                .ok()?;
            Some(port)
        })
    }

    /// The data node listening on `port`.
    pub fn node(&mut self, port: u16) -> Option<&mut RedisServer> {
        self.nodes.iter_mut().find(|n| n.port() == port)
    }
}

/// One section of `INFO` of `server`, or nothing if it does not answer.
fn info(server: &RedisServer, section: &str) -> String {
    let Ok(mut conn) = server.client().get_connection() else {
        return String::new();
    };
    redis::cmd("INFO")
        .arg(section)
        .query(&mut conn)
        .unwrap_or_default()
}

/// Polls `done` until it holds, or fails after `timeout` naming `what`.
fn wait_until(
    timeout: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
) -> Result<(), ServerError> {
    let deadline = Instant::now() + timeout;
    while !done() {
        if Instant::now() > deadline {
            return Err(ServerError::Failed(format!(
                "{what}: not within {timeout:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}
