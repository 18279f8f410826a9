//! A private replica set watched by Redis Sentinel, for one test.
//!
//! [`SentinelSet::start`] runs a primary and one replica (each a
//! [`RedisServer`]), waits until the replica's link is up, then runs three
//! sentinels (the same binary with `--sentinel`) monitoring the primary
//! under a master name, with quorum 2 and short failure-detection times,
//! so that a failover takes seconds. Everything is killed on drop.
//!
//! The replica runs the binary `REDIS_REPLICA_SERVER_BIN` names, if set
//! (another version: a failover then changes the server's version), else
//! the primary's.
//!
//! [`SentinelSet::start_tls`] runs the same set with every process also
//! listening with TLS, replicating and watching over TLS (`tls-replication
//! yes`): the sentinels name the data nodes by their TLS ports, and their
//! plain ports stay for the set's own checks.

use std::time::{Duration, Instant};

use crate::server::{RedisServer, RedisServerBuilder, ServerError, TlsFiles};

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
        Self::start_with(name, None)
    }

    /// Starts the set with TLS too (see the module docs), with the
    /// certificates of `files`.
    pub fn start_tls(name: &str, files: TlsFiles) -> Result<SentinelSet, ServerError> {
        Self::start_with(name, Some(files))
    }

    fn start_with(name: &str, tls: Option<TlsFiles>) -> Result<SentinelSet, ServerError> {
        // With TLS, every process replicates and watches over it, and is
        // reached at its TLS port.
        let builder = || match &tls {
            Some(files) => RedisServer::builder()
                .also_tls(files.clone())
                .config("tls-replication yes"),
            None => RedisServerBuilder::default(),
        };
        let reached_at = |server: &RedisServer| server.tls_port().unwrap_or(server.port());
        let primary = builder().start()?;
        let mut replica = builder().config(format!("replicaof 127.0.0.1 {}", reached_at(&primary)));
        if let Some(binary) = std::env::var("REDIS_REPLICA_SERVER_BIN")
            .ok()
            .filter(|b| !b.trim().is_empty())
        {
            replica = replica.binary(binary);
        }
        let replica = replica.start()?;
        wait_until(SETTLE_TIMEOUT, "the replica's link to the primary", || {
            info(&replica, "replication").contains("master_link_status:up")
        })?;
        let mut sentinels = Vec::with_capacity(3);
        for _ in 0..3 {
            sentinels.push(
                builder()
                    .sentinel()
                    .config(format!(
                        "sentinel monitor {name} 127.0.0.1 {} 2",
                        reached_at(&primary)
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

    /// The sentinels' plain addresses.
    pub fn sentinel_addrs(&self) -> Vec<std::net::SocketAddr> {
        self.sentinels.iter().map(RedisServer::addr).collect()
    }

    /// Has every sentinel wait `after` before it calls a silent primary
    /// down (`SENTINEL SET name down-after-milliseconds`), so that a test
    /// can stop the primary without a failover.
    pub fn set_down_after(&self, after: Duration) -> Result<(), ServerError> {
        for sentinel in &self.sentinels {
            let mut conn = sentinel
                .client()
                .get_connection()
                .map_err(|e| ServerError::Failed(format!("a sentinel: {e}")))?;
            redis::cmd("SENTINEL")
                .arg("SET")
                .arg(&self.name)
                .arg("down-after-milliseconds")
                .arg(after.as_millis().to_string())
                .query::<()>(&mut conn)
                .map_err(|e| ServerError::Failed(format!("SENTINEL SET: {e}")))?;
        }
        Ok(())
    }

    /// The sentinels' `rediss://` URLs (a set started with TLS).
    pub fn sentinel_tls_urls(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .filter_map(|s| Some(format!("rediss://127.0.0.1:{}/", s.tls_port()?)))
            .collect()
    }

    /// Asks the first sentinel for a failover of the master
    /// (`SENTINEL FAILOVER`): the replica is promoted, the old primary
    /// stays up until the sentinels demote it.
    pub fn ask_failover(&self) -> Result<(), ServerError> {
        let mut conn = self.sentinels[0]
            .client()
            .get_connection()
            .map_err(|e| ServerError::Failed(format!("a sentinel: {e}")))?;
        redis::cmd("SENTINEL")
            .arg("FAILOVER")
            .arg(&self.name)
            .query::<()>(&mut conn)
            .map_err(|e| ServerError::Failed(format!("SENTINEL FAILOVER: {e}")))
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

    /// The ports the sentinels name the data nodes by (their TLS ports
    /// in a set started with TLS).
    pub fn node_ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .map(|n| n.tls_port().unwrap_or(n.port()))
            .collect()
    }

    /// The data node listening on `port` (its plain or its TLS port).
    pub fn node(&mut self, port: u16) -> Option<&mut RedisServer> {
        self.nodes
            .iter_mut()
            .find(|n| n.port() == port || n.tls_port() == Some(port))
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
