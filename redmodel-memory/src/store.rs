//! All numbered databases of one engine, and its configuration.

use super::config::Config;
use super::keyspace::Keyspace;

/// The number of databases, as Redis's default `databases 16`.
pub(crate) const DATABASES: usize = 16;

#[derive(Debug)]
pub(crate) struct Store {
    pub(crate) dbs: Vec<Keyspace>,
    /// CONFIG GET / SET's parameters. Change them through
    /// [`Store::set_config`] so that the keyspaces see the new limits.
    pub(crate) config: Config,
    /// When the engine started, in Unix ms (INFO's uptime).
    pub(crate) started_ms: i64,
    /// Commands run since the start or CONFIG RESETSTAT (INFO stats).
    pub(crate) commands_processed: u64,
    /// Calls per command (INFO commandstats), reset with the above.
    pub(crate) command_stats: crate::command::stats::CommandStats,
    /// RESP connections open now, and ever accepted (INFO).
    pub(crate) connected_clients: usize,
    pub(crate) connections_received: u64,
    /// 40 random hex digits naming this engine's run (INFO's `run_id`).
    pub(crate) run_id: String,
    /// The running script, as other connections see it.
    pub(crate) busy: std::sync::Arc<crate::script::busy::Busy>,
    /// A script is running: SORT BY a constant sorts sets, as Redis does
    /// for scripts.
    pub(crate) in_script: bool,
    /// EVAL's Lua state and script cache.
    pub(crate) scripts: crate::script::Scripts,
    /// FUNCTION's libraries (server state: FLUSHALL leaves them).
    pub(crate) functions: crate::script::library::Functions,
    /// Cluster mode (`cluster-enabled yes`): one node serving every slot,
    /// refusing what a cluster node refuses (see `cluster`).
    pub(crate) cluster_enabled: bool,
    /// The IP and port the RESP server announces in CLUSTER SLOTS, SHARDS
    /// and NODES (cluster mode, served over RESP).
    pub(crate) announced: Option<(String, u16)>,
    /// Pub/Sub's subscribers and what they listen to.
    pub(crate) pubsub: crate::pubsub::Registry,
    /// `notify-keyspace-events` (`notify::class` bits), 0 when off.
    pub(crate) notify_flags: u32,
    /// The clients blocked on keys (BLPOP...): see `crate::blocking`.
    pub(crate) waiters: crate::blocking::Waiters,
    /// ACL's users and log, and who runs the current command.
    pub(crate) acl: crate::acl::Acl,
    /// A RESP connection's output buffer, lent to the command running now
    /// when that command may write its reply there itself (LRANGE, see
    /// `command::lists::lrange`): a reply of many elements then costs no
    /// typed value and no heap block per element, which were half of
    /// LRANGE's time. `None` everywhere else (in-process calls, scripts,
    /// transactions), where commands build typed replies.
    pub(crate) reply_out: Option<Vec<u8>>,
}

impl Default for Store {
    fn default() -> Self {
        let config = Config::default();
        let limits = config.limits();
        let busy = std::sync::Arc::new(crate::script::busy::Busy::default());
        Store {
            dbs: (0..DATABASES)
                .map(|_| {
                    let mut ks = Keyspace::default();
                    ks.set_limits(limits);
                    ks
                })
                .collect(),
            config,
            started_ms: 0,
            commands_processed: 0,
            command_stats: Default::default(),
            connected_clients: 0,
            connections_received: 0,
            run_id: (0..40)
                .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16)]))
                .collect(),
            in_script: false,
            scripts: crate::script::Scripts::new(busy.clone()),
            functions: crate::script::library::Functions::new(busy.clone()),
            busy,
            cluster_enabled: false,
            announced: None,
            reply_out: None,
            pubsub: {
                let mut registry = crate::pubsub::Registry::default();
                registry.set_limit(limits.pubsub_limit);
                registry
            },
            notify_flags: limits.notify,
            waiters: Default::default(),
            acl: Default::default(),
        }
    }
}

impl Store {
    /// CONFIG SET: validates and stores the pairs, then hands the new
    /// limits to every keyspace.
    pub(crate) fn set_config(&mut self, pairs: &[&[u8]]) -> Result<(), crate::error::CmdError> {
        self.config.set(pairs)?;
        // `requirepass` is the default user's password, as in Redis;
        // `acllog-max-len` bounds ACL LOG.
        let named = |name: &str| {
            pairs
                .iter()
                .step_by(2)
                .any(|p| p.eq_ignore_ascii_case(name.as_bytes()))
        };
        if named("requirepass") {
            let password = self.config.get("requirepass").as_bytes().to_vec();
            crate::acl::set_requirepass(&mut self.acl, &password);
        }
        if named("acllog-max-len") {
            self.acl.log_limit = self.config.get("acllog-max-len").parse().unwrap_or(128);
        }
        let limits = self.config.limits();
        for ks in &mut self.dbs {
            ks.set_limits(limits);
            // Events logged under the old flags are not published late.
            ks.take_events();
        }
        self.pubsub.set_limit(limits.pubsub_limit);
        self.notify_flags = limits.notify;
        Ok(())
    }

    /// Publishes a keyspace event of `key` in `db` (see `notify`), after
    /// the events the keyspaces logged themselves before it.
    pub(crate) fn notify(&mut self, db: usize, class: u32, event: &str, key: &[u8]) {
        if !crate::notify::enabled(self.notify_flags, class) {
            return;
        }
        self.flush_notifications();
        self.publish_event(db, event, key);
    }

    /// Publishes the events the keyspaces logged (`new`, `expired`).
    pub(crate) fn flush_notifications(&mut self) {
        if self.notify_flags == 0 {
            return;
        }
        for db in 0..self.dbs.len() {
            for (event, key) in self.dbs[db].take_events() {
                self.publish_event(db, event, &key);
            }
        }
    }

    fn publish_event(&mut self, db: usize, event: &str, key: &[u8]) {
        for (channel, payload) in crate::notify::messages(self.notify_flags, db, event, key) {
            self.pubsub.publish(&channel, &payload);
        }
    }
}
