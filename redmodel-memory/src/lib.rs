//! The bundled in-memory Redis engine.
//!
//! A small Redis: strings, bitmaps, HyperLogLog, hashes, lists, sets,
//! sorted sets, geospatial indexes and streams, key and expiry commands,
//! MULTI/EXEC/WATCH, Lua scripts and Redis Functions, Pub/Sub, and the
//! server commands clients and tools use (CONFIG, INFO, OBJECT, CLIENT,
//! COPY, MOVE, SWAPDB, DUMP and RESTORE in Redis's own payload format,
//! SAVE, BGSAVE and RDB files loaded at start ([`Engine::with_rdb_file`]),
//! the append-only file ([`Engine::with_aof`], BGREWRITEAOF)...),
//! with the replies and error texts of Redis 7.0.15. It exists so that
//! applications, examples and tests run with no server, and switch to a
//! real Redis with no surprise.
//!
//! - [`Engine`] owns the data; clone it to share it.
//! - [`Connection`] is one client of it (selected database, transaction
//!   state) and implements redis-rs's [`redis::aio::ConnectionLike`], so
//!   `redis::Cmd::query_async` and `redis::Pipeline::query_async` work on it
//!   exactly as on a server connection.
//! - Blocking commands (BLPOP, BLMOVE, BZPOPMIN...) block the client that
//!   runs them, not the engine: the [`Connection`]'s future waits until
//!   another client serves it or its timeout passes, and blocked clients
//!   are served first-come first-served, as Redis serves them.
//! - Expiry is passive (an expired key is removed when touched) and active
//!   (a background cycle samples keys with a TTL, see [`Engine::run_expire_cycle`]).
//! - [`Engine::atomically`] runs Rust code as a script runs (atomic, its
//!   commands checked as `redis.call`'s), for callers in the same process
//!   that need a script's atomicity without Lua's cost.
//! - [`ManualClock`] lets tests move time instead of sleeping.
//! - Pub/Sub: PUBLISH from any client reaches RESP subscribers and the
//!   in-process subscribers of [`Engine::pubsub`] ([`PubSub`]); keyspace
//!   notifications (`notify-keyspace-events`) are published as Redis does.
//! - Client-side caching: a RESP connection may turn on CLIENT TRACKING and
//!   receive Redis's invalidations for every change, whoever makes it; a
//!   cache in process tracks through [`Engine::invalidations`].
//! - `serve` (the `server` feature) speaks RESP2, and RESP3 after `HELLO 3`, on a TCP port,
//!   for redis-cli, redis-benchmark and clients in any language; each connection is a
//!   client of its own. The in-process [`Connection`] speaks RESP2 too (what redis-rs
//!   expects by default) until it is sent `HELLO 3`.
//!
//! ```
//! use redmodel_memory::Engine;
//! let engine = Engine::new();
//! let mut conn = engine.connection();
//! conn.execute(&[b"SET", b"greeting", b"hello"]);
//! assert_eq!(conn.execute(&[b"GET", b"greeting"]), redis::Value::BulkString(b"hello".to_vec()));
//! ```

#![warn(missing_docs)]

mod acl;
mod aof;
mod args;
mod atomic;
mod clock;
mod cluster;
mod command;
mod command_table;
mod config;
mod connection;
mod error;
mod expire_cycle;
mod float;
mod glob;
mod hasher;
mod keyspace;
mod lazyfree;
mod monitor;
mod notify;
mod pubsub;
mod rdb;
mod redact;
mod reply;
#[cfg(feature = "server")]
mod resp;
mod session;
mod tracking;
mod value;
mod version;

use std::sync::Arc;

use parking_lot::Mutex;

pub use aof::AofError;
pub use atomic::Atomic;
pub use clock::{Clock, ManualClock, SystemClock};
pub use connection::Connection;
pub use expire_cycle::CycleStats;
pub use monitor::Monitor;
pub use pubsub::{Message, PubSub};
pub use rdb::file::RdbError;
#[cfg(feature = "server")]
pub use resp::{serve, ServerHandle};
pub use tracking::{Invalidation, Invalidations};
pub use version::RedisVersion;

/// Removes the temp directories named with `prefix` of processes that
/// have ended (see the engine's own directory, `dir`): shared with the
/// test harness, whose private servers are named the same way. Not part
/// of the engine's API.
#[doc(hidden)]
pub use command::persistence::remove_ended_dirs;

use command::Store;

/// The Redis version whose behaviour the engine follows by default, which
/// it reports as its own (HELLO's `version`, INFO's `redis_version`):
/// clients and tools read it to decide what they may send. See
/// [`Engine::with_version`] for Redis 7.4.1's behaviour.
pub const REDIS_VERSION: &str = "7.0.15";

/// The engine's own name and version, `redmodel-memory <version>`: INFO
/// server's `engine` line, after Redis's own fields, which report the
/// emulated server (`redis_version`, [`REDIS_VERSION`]) as HELLO does.
/// HELLO keeps Redis's seven fields exactly.
pub const ENGINE: &str = concat!("redmodel-memory ", env!("CARGO_PKG_VERSION"));

/// Whether Redis 7.0.15 may change data when it runs `argv` (the command
/// name first): its command table flags it `write`, or it runs a script or
/// a function (EVAL, EVALSHA, FCALL, not their `_RO` forms), or it is the
/// EXEC of a transaction. Clients use it to tell writes from reads, for
/// instance to follow only writes with WAIT.
///
/// ```
/// use redmodel_memory::may_write;
/// assert!(may_write(&[b"HSET", b"k", b"f", b"v"]));
/// assert!(may_write(&[b"evalsha", b"0123", b"1", b"k"]));
/// assert!(!may_write(&[b"HGETALL", b"k"]));
/// assert!(!may_write(&[b"EVAL_RO", b"return 1", b"0"]));
/// ```
pub fn may_write(argv: &[&[u8]]) -> bool {
    let Some(meta) = command_table::of_line(argv) else {
        return false;
    };
    meta.has_flag("write") || matches!(meta.name, "eval" | "evalsha" | "fcall" | "exec")
}

/// Where the keys of `argv` (the command name first) are, as Redis
/// 7.0.15's command table finds them (a script's declared keys included):
/// `None` for an unknown command. Clients use it to tell which keys a
/// write changed, for instance to drop them from a cache of their own.
///
/// ```
/// use redmodel_memory::key_positions;
/// assert_eq!(key_positions(&[b"HSET", b"k", b"f", b"v"]), Some(vec![1]));
/// assert_eq!(key_positions(&[b"MSET", b"a", b"1", b"b", b"2"]), Some(vec![1, 3]));
/// assert_eq!(key_positions(&[b"EVALSHA", b"0123", b"2", b"x", b"y", b"arg"]), Some(vec![3, 4]));
/// assert_eq!(key_positions(&[b"FLUSHALL"]), Some(vec![]));
/// assert_eq!(key_positions(&[b"NOSUCHCOMMAND", b"k"]), None);
/// ```
pub fn key_positions(argv: &[&[u8]]) -> Option<Vec<usize>> {
    command_table::of_line(argv)?.key_positions(argv)
}

/// The hash slot of the keys of `argv` (the command name first), as a
/// Redis Cluster node finds them from Redis 7.0.15's command table: `None`
/// if the command has no key, is unknown, or names keys of several slots.
/// Clients use it to group a batch of commands by the node that serves
/// them.
///
/// ```
/// use redmodel_memory::key_slot;
/// assert_eq!(key_slot(&[b"GET", b"foo"]), Some(12182));
/// assert_eq!(key_slot(&[b"HMGET", b"{foo}:1", b"f"]), Some(12182));
/// assert_eq!(key_slot(&[b"EVALSHA", b"0123", b"1", b"foo", b"x"]), Some(12182));
/// assert_eq!(key_slot(&[b"EVALSHA", b"0123", b"0", b"foo"]), None);
/// assert_eq!(key_slot(&[b"MGET", b"foo", b"bar"]), None);
/// assert_eq!(key_slot(&[b"PING"]), None);
/// ```
pub fn key_slot(argv: &[&[u8]]) -> Option<u16> {
    cluster::slot_of([argv]).ok().flatten()
}

/// The hash slot of one key, as Redis Cluster computes it (and
/// `CLUSTER KEYSLOT` answers): CRC16 (XMODEM) of the key, or of its hash
/// tag (the text between the first `{` and the next `}`, if not empty),
/// mod 16384.
///
/// ```
/// use redmodel_memory::hash_slot;
/// assert_eq!(hash_slot(b"foo"), 12182);
/// assert_eq!(hash_slot(b"{foo}:1"), 12182);
/// ```
pub fn hash_slot(key: &[u8]) -> u16 {
    cluster::slot(key)
}

/// Whether `argv` may block its connection until another client acts:
/// Redis 7.0.15's table flags the command `blocking` (BLPOP, BZPOPMIN,
/// BLMOVE, ...), except XREAD and XREADGROUP without their BLOCK option,
/// which answer at once, and with WAIT asked for one replica or more
/// (Redis waits for replicas it does not have until the timeout; the
/// table does not flag WAIT). Clients use it to keep such commands off a
/// connection other requests share.
///
/// ```
/// use redmodel_memory::may_block;
/// assert!(may_block(&[b"BLPOP", b"jobs", b"5"]));
/// assert!(may_block(&[b"WAIT", b"1", b"100"]));
/// assert!(!may_block(&[b"WAIT", b"0", b"100"]));
/// assert!(may_block(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"]));
/// assert!(!may_block(&[b"XREAD", b"STREAMS", b"s", b"0"]));
/// assert!(!may_block(&[b"LPOP", b"jobs"]));
/// ```
pub fn may_block(argv: &[&[u8]]) -> bool {
    let Some(meta) = command_table::of_line(argv) else {
        return false;
    };
    // WAIT has no `blocking` flag, yet asked for replicas it blocks.
    if meta.name == "wait" {
        return argv
            .get(1)
            .and_then(|n| args::parse_i64(n))
            .is_some_and(|n| n > 0);
    }
    if !meta.has_flag("blocking") {
        return false;
    }
    match meta.name {
        "xread" | "xreadgroup" => argv.iter().any(|a| a.eq_ignore_ascii_case(b"block")),
        _ => true,
    }
}

/// The in-memory Redis engine. Cheap to clone: clones share the data.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

struct Shared {
    store: Mutex<Store>,
    clock: Arc<dyn Clock>,
    /// The store's count of the RESP server's bytes, which its
    /// connections add to without the lock.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    net: Arc<command::stats::NetBytes>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

impl Engine {
    /// An empty engine on the wall clock, with the active expiry cycle running.
    pub fn new() -> Self {
        Self::with_clock(SystemClock)
    }

    /// An empty engine reading time from `clock` (see [`ManualClock`]).
    pub fn with_clock(clock: impl Clock) -> Self {
        let clock: Arc<dyn Clock> = Arc::new(clock);
        let store = Store {
            started_ms: clock.now_ms(),
            saves: command::persistence::Saves::started(clock.now_ms()),
            clock: clock::Shared(Arc::clone(&clock)),
            ..Store::default()
        };
        let net = Arc::clone(&store.net);
        let engine = Engine {
            shared: Arc::new(Shared {
                store: Mutex::new(store),
                clock,
                net,
            }),
        };
        expire_cycle::start(&engine);
        engine
    }

    /// This engine in cluster mode: one Redis Cluster node serving every
    /// slot, which refuses a command, a transaction or a script whose keys
    /// are in more than one slot (`CROSSSLOT`), numbered databases, and
    /// SORT's BY and GET patterns, as a cluster node does. Code meant for
    /// Redis Cluster can then be tested in process.
    ///
    /// ```
    /// use redmodel_memory::Engine;
    /// let engine = Engine::new().with_cluster_mode();
    /// let mut c = engine.connection();
    /// let err = c.execute(&[b"MSET", b"a", b"1", b"b", b"2"]);
    /// assert!(format!("{err:?}").contains("CROSSSLOT"));
    /// ```
    pub fn with_cluster_mode(self) -> Self {
        self.shared.store.lock().cluster_enabled = true;
        self
    }

    /// The address CLUSTER SLOTS, SHARDS and NODES give for this node (the
    /// RESP server's).
    #[cfg(feature = "server")]
    pub(crate) fn announce(&self, ip: String, port: u16) {
        self.shared.store.lock().announced = Some((ip, port));
    }

    /// This engine with the dataset and functions of the RDB file
    /// `dbfilename` in `dir`, which SAVE, BGSAVE and DEBUG RELOAD then
    /// write (CONFIG GET `dir` and `dbfilename` show them), as
    /// `redis-server --dir D --dbfilename F` starts. A file that does not
    /// exist loads nothing, as Redis starts empty then. A file Redis 7.0
    /// does not read, or a corrupt or truncated one, is an [`RdbError`],
    /// and nothing of it is loaded.
    ///
    /// ```
    /// use redmodel_memory::Engine;
    /// let dir = std::env::temp_dir();
    /// let engine = Engine::new().with_rdb_file(&dir, "redmodel-doc-none.rdb")?;
    /// assert_eq!(engine.dbsize(0), 0);
    /// # Ok::<(), redmodel_memory::RdbError>(())
    /// ```
    pub fn with_rdb_file(
        self,
        dir: impl AsRef<std::path::Path>,
        dbfilename: &str,
    ) -> Result<Self, RdbError> {
        let invalid =
            |why: String| RdbError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
        if dbfilename.is_empty() || dbfilename.contains('/') {
            return Err(invalid(format!(
                "dbfilename {dbfilename:?} must be a file name, not a path"
            )));
        }
        let dir = std::fs::canonicalize(dir)?;
        {
            let mut store = self.shared.store.lock();
            let dir_text = dir.to_string_lossy().into_owned();
            store
                .config
                .set_at_start("dir", dir_text.as_bytes())
                .and_then(|()| {
                    store
                        .config
                        .set_at_start("dbfilename", dbfilename.as_bytes())
                })
                .map_err(invalid)?;
            let now = self.now_ms();
            match store.load(now, command::persistence::Reload::Replace) {
                Err(RdbError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
                loaded => loaded?,
            }
        }
        Ok(self)
    }

    /// This engine with the dataset and functions of the append-only files
    /// in `dir` (the files `appendonlydir/appendonly.aof.manifest` names),
    /// to which it then appends every change, as `redis-server --appendonly
    /// yes --dir D` starts (CONFIG GET `appendonly` is `yes`; an RDB file
    /// is not read then, as Redis reads none). With no AOF there yet, the
    /// engine starts empty and writes a base file and an incremental
    /// file. A manifest or file Redis 7.0 does not read, or a corrupt one,
    /// is an [`AofError`], and nothing of it is loaded; a command cut short
    /// at the end of the last file is dropped, the file truncated before
    /// it, as Redis's `aof-load-truncated yes` does.
    ///
    /// ```
    /// use redmodel_memory::Engine;
    /// let dir = std::env::temp_dir().join(format!("redmodel-doc-aof-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let engine = Engine::new().with_aof(&dir)?;
    /// engine.connection().execute(&[b"SET", b"k", b"v"]);
    /// drop(engine);
    /// let engine = Engine::new().with_aof(&dir)?;
    /// assert_eq!(engine.dbsize(0), 1);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_aof(self, dir: impl AsRef<std::path::Path>) -> Result<Self, AofError> {
        let dir = std::fs::canonicalize(dir)?;
        let mut store = self.shared.store.lock();
        let before = store.config.clone();
        let opened = (|| {
            let dir_text = dir.to_string_lossy().into_owned();
            let invalid = |why: String| {
                AofError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, why))
            };
            store
                .config
                .set_at_start("dir", dir_text.as_bytes())
                .and_then(|()| store.config.set_at_start("appendonly", b"yes"))
                .map_err(invalid)?;
            let aof_dir = dir.join(store.config.get("appenddirname"));
            let filename = store.config.get("appendfilename").to_string();
            let now = self.now_ms();
            match store.load_aof(&aof_dir, &filename, now) {
                Err(AofError::NotFound) => {}
                loaded => loaded?,
            }
            store.aof_open_at_start(now)
        })();
        // Nothing of a failed start stays, the settings included.
        if opened.is_err() {
            store.config = before;
        }
        drop(store);
        opened.map(|()| self)
    }

    /// This engine behaving as Redis `version`: the version HELLO, INFO and
    /// Lua's `redis.REDIS_VERSION` report, and the commands it knows (in
    /// [`RedisVersion::V7_4`] mode, hash-field expiration and the other
    /// commands 7.4 adds; in the default [`RedisVersion::V7_0`] mode they
    /// are unknown commands, as Redis 7.0.15 answers). Call it on a new
    /// engine, before its first script runs.
    ///
    /// ```
    /// use redmodel_memory::{Engine, RedisVersion};
    /// let engine = Engine::new().with_version(RedisVersion::V7_4);
    /// assert_eq!(engine.version(), RedisVersion::V7_4);
    /// let mut c = engine.connection();
    /// c.execute(&[b"HSET", b"h", b"f", b"v"]);
    /// let reply = c.execute(&[b"HEXPIRE", b"h", b"60", b"FIELDS", b"1", b"f"]);
    /// assert_eq!(reply, redis::Value::Array(vec![redis::Value::Int(1)]));
    /// ```
    pub fn with_version(self, version: RedisVersion) -> Self {
        {
            let mut store = self.shared.store.lock();
            store.version = version;
            store.scripts.version = version;
            store.functions.version = version;
            store.config.set_version(version);
            let limits = store.config.limits();
            for ks in &mut store.dbs {
                ks.set_limits(limits);
            }
        }
        self
    }

    /// The Redis version the engine behaves as ([`with_version`](Self::with_version)).
    pub fn version(&self) -> RedisVersion {
        self.shared.store.lock().version
    }

    /// Whether the engine is in cluster mode ([`with_cluster_mode`](Self::with_cluster_mode)).
    pub fn is_cluster_mode(&self) -> bool {
        self.shared.store.lock().cluster_enabled
    }

    /// A new client of this engine, on database 0.
    pub fn connection(&self) -> Connection {
        Connection::new(self.clone())
    }

    /// The engine's current time, in Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.shared.clock.now_ms()
    }

    /// Runs one active expiry cycle now (the background thread runs one ten
    /// times a second) and reports what it did.
    pub fn run_expire_cycle(&self) -> CycleStats {
        expire_cycle::run_cycle(self, expire_cycle::SLOW_CYCLE_BUDGET)
    }

    /// Number of keys in database `db`, counting expired keys that have not
    /// been reclaimed yet (like DBSIZE).
    pub fn dbsize(&self, db: usize) -> usize {
        self.shared
            .store
            .lock()
            .dbs
            .get(db)
            .map_or(0, |ks| ks.len())
    }
}
