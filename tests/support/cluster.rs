//! A private local Redis Cluster for one test (or one test binary).
//!
//! [`RedisCluster::start`] runs `masters` redis-server processes with
//! `cluster-enabled yes` (each a [`RedisServer`]: a free loopback port, a
//! temp dir, no persistence, killed on drop), gives them equal ranges of
//! the 16,384 slots (CLUSTER ADDSLOTSRANGE), introduces them (CLUSTER
//! MEET, with the cluster bus on a port found free too, so it need not be
//! port + 10000), and waits until every node reports `cluster_state:ok`
//! and knows every master.

use std::time::{Duration, Instant};

use crate::server::{free_port, RedisServer, ServerError};

/// The slots of a cluster.
const SLOTS: u32 = 16_384;
/// How long a cluster may take to agree on its slots after the MEETs.
const AGREE_TIMEOUT: Duration = Duration::from_secs(20);

/// A private cluster of masters, each a `redis-server` process.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts `masters` nodes and joins them into one cluster owning every
    /// slot; returns once every node says the cluster is ok.
    pub fn start(masters: usize) -> Result<RedisCluster, ServerError> {
        let failed =
            |what: &str, e: &dyn std::fmt::Display| ServerError::Failed(format!("{what}: {e}"));
        let mut nodes = Vec::with_capacity(masters);
        let mut buses = Vec::with_capacity(masters);
        for _ in 0..masters {
            let bus = free_port().map_err(|e| failed("free bus port", &e))?;
            let node = RedisServer::builder()
                .config("cluster-enabled yes")
                .config("cluster-config-file nodes.conf")
                .config(format!("cluster-port {bus}"))
                .config("cluster-node-timeout 2000")
                .config("cluster-require-full-coverage yes")
                .start()?;
            nodes.push(node);
            buses.push(bus);
        }
        let cluster = RedisCluster { nodes };
        let n = masters as u32;
        for (i, node) in cluster.nodes.iter().enumerate() {
            let i = i as u32;
            let (first, last) = (i * SLOTS / n, (i + 1) * SLOTS / n - 1);
            let mut conn = node
                .client()
                .get_connection()
                .map_err(|e| failed("connect", &e))?;
            redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(first)
                .arg(last)
                .query::<()>(&mut conn)
                .map_err(|e| failed("CLUSTER ADDSLOTSRANGE", &e))?;
        }
        if let Some(first) = cluster.nodes.first() {
            let mut conn = first
                .client()
                .get_connection()
                .map_err(|e| failed("connect", &e))?;
            for (node, bus) in cluster.nodes.iter().zip(&buses).skip(1) {
                redis::cmd("CLUSTER")
                    .arg("MEET")
                    .arg("127.0.0.1")
                    .arg(node.port())
                    .arg(bus)
                    .query::<()>(&mut conn)
                    .map_err(|e| failed("CLUSTER MEET", &e))?;
            }
        }
        cluster.wait_agreed(masters)?;
        Ok(cluster)
    }

    /// Waits until every node reports `cluster_state:ok` and `masters`
    /// known masters with slots.
    fn wait_agreed(&self, masters: usize) -> Result<(), ServerError> {
        let deadline = Instant::now() + AGREE_TIMEOUT;
        loop {
            let agreed = self.nodes.iter().all(|node| {
                let Ok(mut conn) = node.client().get_connection() else {
                    return false;
                };
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut conn)
                    .unwrap_or_default();
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_size:{masters}"))
                    && info.contains(&format!("cluster_known_nodes:{}", self.nodes.len()))
            });
            if agreed {
                return Ok(());
            }
            if Instant::now() > deadline {
                let logs: Vec<String> = self.nodes.iter().map(RedisServer::log).collect();
                return Err(ServerError::Failed(format!(
                    "the cluster did not agree within {AGREE_TIMEOUT:?}; logs:\n{}",
                    logs.join("\n---\n")
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The nodes' URLs (`redis://127.0.0.1:PORT/`), seeds for
    /// `Db::connect_cluster`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The nodes, for tests that look at (or kill) one.
    pub fn nodes(&mut self) -> &mut [RedisServer] {
        &mut self.nodes
    }
}
