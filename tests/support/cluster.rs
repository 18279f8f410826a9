//! A private local Redis Cluster for one test (or one test binary).
//!
//! [`RedisCluster::start`] runs `masters` redis-server processes with
//! `cluster-enabled yes` (each a [`RedisServer`]: a free loopback port, a
//! temp dir, no persistence, killed on drop), gives them equal ranges of
//! the 16,384 slots (CLUSTER ADDSLOTSRANGE), introduces each to every
//! other (CLUSTER MEET, with the cluster bus on a port found free too, so it need not be
//! port + 10000), and waits until every node reports `cluster_state:ok`
//! and knows every master.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use crate::server::{RedisServer, ServerError};
use crate::Proxy;

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
        Self::start_with(masters, 0, false)
    }

    /// Starts `masters` masters and one replica for each, for failover
    /// tests: [`nodes`](Self::nodes) lists the masters first, then their
    /// replicas in the same order.
    pub fn start_with_replicas(masters: usize) -> Result<RedisCluster, ServerError> {
        Self::start_with(masters, masters, false)
    }

    /// [`start`](Self::start), with `replicas` more nodes (replica `i` of
    /// master `i`), and with nodes that die with the thread that started
    /// them when `die_with_parent` (see [`shared_cluster`]).
    fn start_with(
        masters: usize,
        replicas: usize,
        die_with_parent: bool,
    ) -> Result<RedisCluster, ServerError> {
        let failed =
            |what: &str, e: &dyn std::fmt::Display| ServerError::Failed(format!("{what}: {e}"));
        let mut nodes = Vec::with_capacity(masters + replicas);
        for _ in 0..masters + replicas {
            let mut builder = RedisServer::builder().cluster_bus();
            if die_with_parent {
                builder = builder.die_with_parent();
            }
            let node = builder
                .config("cluster-enabled yes")
                .config("cluster-config-file nodes.conf")
                .config("cluster-node-timeout 2000")
                .config("cluster-require-full-coverage yes")
                .start()?;
            nodes.push(node);
        }
        let cluster = RedisCluster { nodes };
        let n = masters as u32;
        for (i, node) in cluster.nodes.iter().take(masters).enumerate() {
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
        // Every node meets every other: the cluster agrees at once instead
        // of waiting for gossip to spread the news.
        for (i, from) in cluster.nodes.iter().enumerate() {
            let mut conn = from
                .client()
                .get_connection()
                .map_err(|e| failed("connect", &e))?;
            for (j, node) in cluster.nodes.iter().enumerate() {
                if i == j {
                    continue;
                }
                let bus = node.bus_port().unwrap_or(node.port() + 10_000);
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
        for i in 0..replicas {
            let master = &cluster.nodes[i % masters];
            let id: String = redis::cmd("CLUSTER")
                .arg("MYID")
                .query(
                    &mut master
                        .client()
                        .get_connection()
                        .map_err(|e| failed("connect", &e))?,
                )
                .map_err(|e| failed("CLUSTER MYID", &e))?;
            let replica = &cluster.nodes[masters + i];
            redis::cmd("CLUSTER")
                .arg("REPLICATE")
                .arg(&id)
                .query::<()>(
                    &mut replica
                        .client()
                        .get_connection()
                        .map_err(|e| failed("connect", &e))?,
                )
                .map_err(|e| failed("CLUSTER REPLICATE", &e))?;
        }
        if replicas > 0 {
            cluster.wait_replicas(masters + replicas)?;
        }
        Ok(cluster)
    }

    /// Waits until every replica reports its link to its master up.
    fn wait_replicas(&self, all: usize) -> Result<(), ServerError> {
        self.wait_until(
            "the replicas to sync",
            all / 2,
            &["INFO", "replication"],
            |info| info.contains("master_link_status:up"),
        )
    }

    /// Waits until every node reports `cluster_state:ok` and `masters`
    /// known masters with slots.
    fn wait_agreed(&self, masters: usize) -> Result<(), ServerError> {
        let (size, known) = (
            format!("cluster_size:{masters}"),
            format!("cluster_known_nodes:{}", self.nodes.len()),
        );
        self.wait_until("the cluster to agree", 0, &["CLUSTER", "INFO"], |info| {
            info.contains("cluster_state:ok") && info.contains(&size) && info.contains(&known)
        })
    }

    /// Polls `command` on every node from the `skip`-th on until `ready`
    /// accepts every reply, for at most [`AGREE_TIMEOUT`]; the error names
    /// `what` and carries the nodes' logs.
    fn wait_until(
        &self,
        what: &str,
        skip: usize,
        command: &[&str],
        ready: impl Fn(&str) -> bool,
    ) -> Result<(), ServerError> {
        let deadline = Instant::now() + AGREE_TIMEOUT;
        loop {
            let done = self.nodes.iter().skip(skip).all(|node| {
                let Ok(mut conn) = node.client().get_connection() else {
                    return false;
                };
                let mut cmd = redis::cmd(command[0]);
                for arg in &command[1..] {
                    cmd.arg(*arg);
                }
                ready(&cmd.query::<String>(&mut conn).unwrap_or_default())
            });
            if done {
                return Ok(());
            }
            if Instant::now() > deadline {
                let logs: Vec<String> = self.nodes.iter().map(RedisServer::log).collect();
                return Err(ServerError::Failed(format!(
                    "waited {AGREE_TIMEOUT:?} for {what}; logs:\n{}",
                    logs.join("\n---\n")
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A one-master cluster whose node names a [`Proxy`] as its address,
    /// so that every connection a `Db` opens to it goes through the proxy;
    /// `None` (the test skipped) where there is no redis-server.
    pub async fn behind_a_proxy(test: &str) -> Option<(RedisCluster, Proxy)> {
        if !crate::redis_server_available(test) {
            return None;
        }
        let mut cluster = RedisCluster::start(1).unwrap_or_else(|e| panic!("{test}: {e}"));
        let node = &cluster.nodes()[0];
        let proxy = Proxy::start(node.addr())
            .await
            .unwrap_or_else(|e| panic!("{test}: a proxy: {e}"));
        let mut conn = node
            .client()
            .get_connection()
            .unwrap_or_else(|e| panic!("{test}: {e}"));
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("cluster-announce-port")
            .arg(proxy.port())
            .query::<()>(&mut conn)
            .unwrap_or_else(|e| panic!("{test}: {e}"));
        Some((cluster, proxy))
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

    /// The master that owns `slot` (an index into [`nodes`](Self::nodes)),
    /// as `CLUSTER NODES` on the first node says.
    pub fn owner_of(&self, slot: u16) -> Result<usize, ServerError> {
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            ServerError::Failed(format!("owner of slot {slot}: {what}: {e}"))
        };
        let mut ids = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let mut conn = node
                .client()
                .get_connection()
                .map_err(|e| failed("connect", &e))?;
            let id: String = redis::cmd("CLUSTER")
                .arg("MYID")
                .query(&mut conn)
                .map_err(|e| failed("CLUSTER MYID", &e))?;
            ids.push(id);
        }
        let first = self.nodes.first().ok_or_else(|| failed("no node", &0))?;
        let mut conn = first
            .client()
            .get_connection()
            .map_err(|e| failed("connect", &e))?;
        let owner = slot_owner(&mut conn, slot)
            .map_err(|e| failed("CLUSTER NODES", &e))?
            .ok_or_else(|| failed("CLUSTER NODES", &"no master serves it"))?;
        ids.iter()
            .position(|id| *id == owner)
            .ok_or_else(|| failed("no node has the id", &owner))
    }

    /// Moves the one slot `slot` (and its keys) to the master `to` (an
    /// index into [`nodes`](Self::nodes)), as `redis-cli --cluster
    /// reshard` moves a range (which cannot name one slot): CLUSTER
    /// SETSLOT IMPORTING on the target and MIGRATING on the owner, the
    /// keys sent over with MIGRATE `batch` at a time with `pause` between
    /// batches (so that writers meet the slot half moved: ASK, TRYAGAIN),
    /// then SETSLOT NODE on the target, the owner and every other master.
    /// Returns how many keys it moved; nothing is done if `to` already
    /// owns the slot.
    pub fn move_slot(
        &self,
        slot: u16,
        to: usize,
        batch: usize,
        pause: Duration,
    ) -> Result<usize, ServerError> {
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            ServerError::Failed(format!("move slot {slot}: {what}: {e}"))
        };
        let conn = |node: &RedisServer| {
            node.client()
                .get_connection()
                .map_err(|e| failed("connect", &e))
        };
        let target = self
            .nodes
            .get(to)
            .ok_or_else(|| failed("no such node", &to))?;
        let mut target_conn = conn(target)?;
        let ids = self
            .nodes
            .iter()
            .map(|node| {
                redis::cmd("CLUSTER")
                    .arg("MYID")
                    .query::<String>(&mut conn(node)?)
                    .map_err(|e| failed("CLUSTER MYID", &e))
            })
            .collect::<Result<Vec<String>, ServerError>>()?;
        let from = self.owner_of(slot)?;
        if from == to {
            return Ok(0);
        }
        let mut source_conn = conn(&self.nodes[from])?;
        let setslot = |conn: &mut redis::Connection, state: &str, id: &str| {
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg(state)
                .arg(id)
                .query::<()>(conn)
                .map_err(|e| failed(state, &e))
        };
        setslot(&mut target_conn, "IMPORTING", &ids[from])?;
        setslot(&mut source_conn, "MIGRATING", &ids[to])?;
        let mut moved = 0;
        loop {
            let keys: Vec<Vec<u8>> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(batch)
                .query(&mut source_conn)
                .map_err(|e| failed("GETKEYSINSLOT", &e))?;
            if keys.is_empty() {
                break;
            }
            redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(target.port())
                .arg("")
                .arg(0)
                .arg(5_000)
                .arg("KEYS")
                .arg(&keys)
                .query::<()>(&mut source_conn)
                .map_err(|e| failed("MIGRATE", &e))?;
            moved += keys.len();
            std::thread::sleep(pause);
        }
        // The target first, then the owner, then the others, as redis-cli
        // does: the owner stops redirecting with ASK only once the target
        // serves the slot.
        setslot(&mut target_conn, "NODE", &ids[to])?;
        setslot(&mut source_conn, "NODE", &ids[to])?;
        for (i, node) in self.nodes.iter().enumerate() {
            if i == to || i == from {
                continue;
            }
            let mut other = conn(node)?;
            let role: Vec<redis::Value> = redis::cmd("ROLE")
                .query(&mut other)
                .map_err(|e| failed("ROLE", &e))?;
            if matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master") {
                setslot(&mut other, "NODE", &ids[to])?;
            }
        }
        Ok(moved)
    }
}

/// The id of the master that owns `slot`, as `CLUSTER NODES` on `conn`
/// says: a master's line ends with its slots (`0-5460`, `5461`, and
/// `[...]` entries for slots being moved, skipped).
fn slot_owner(conn: &mut redis::Connection, slot: u16) -> redis::RedisResult<Option<String>> {
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(conn)?;
    let owns = |range: &str| {
        let (start, end) = range.split_once('-').unwrap_or((range, range));
        match (start.parse::<u16>(), end.parse::<u16>()) {
            (Ok(start), Ok(end)) => (start..=end).contains(&slot),
            _ => false,
        }
    };
    Ok(nodes
        .lines()
        .find(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            fields.get(2).is_some_and(|flags| flags.contains("master"))
                && fields.iter().skip(8).any(|range| owns(range))
        })
        .and_then(|line| line.split(' ').next())
        .map(str::to_string))
}

/// The test binary's own private cluster (3 masters), started on first use
/// and kept until the process exits: a cluster needs two seconds to come
/// up, too long to start one per test. Its nodes run under a thread that
/// never ends, so they die with the process (PR_SET_PDEATHSIG), never
/// before. Tests take turns on it ([`CLUSTER_TURN`]).
pub fn shared_cluster() -> Result<Vec<String>, ServerError> {
    static URLS: LazyLock<Result<Vec<String>, ServerError>> = LazyLock::new(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        let keeper = std::thread::Builder::new()
            .name("test-cluster".into())
            .spawn(move || match RedisCluster::start_with(3, 0, true) {
                Ok(cluster) => {
                    let _ = tx.send(Ok(cluster.urls()));
                    // Hold the cluster (and be its nodes' parent) for good.
                    loop {
                        std::thread::park();
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            });
        match keeper {
            Ok(_) => rx
                .recv()
                .unwrap_or_else(|_| Err(ServerError::Failed("the cluster thread died".into()))),
            Err(e) => Err(ServerError::Failed(format!(
                "spawn the cluster thread: {e}"
            ))),
        }
    });
    URLS.clone()
}

/// Whose turn it is on the [`shared_cluster`]: a test holds it for its
/// whole run (a tokio mutex: tests run on runtimes of their own).
pub static CLUSTER_TURN: LazyLock<Arc<tokio::sync::Mutex<()>>> =
    LazyLock::new(|| Arc::new(tokio::sync::Mutex::new(())));
