//! The store's part in client-side caching (`crate::tracking` holds the
//! tracking state): after each command and each expiry-cycle turn, the
//! keyspaces' logged changes become invalidations; reads join the table.

use crate::command::Store;

impl Store {
    /// Turns the changes the keyspaces logged into invalidations.
    pub(crate) fn flush_invalidations(&mut self) {
        if self.tracking.logging {
            self.invalidate_logged();
        }
    }

    /// [`Self::flush_invalidations`] with tracking on: out of the path
    /// every command takes (each takes it three times) when it is off.
    #[cold]
    #[inline(never)]
    fn invalidate_logged(&mut self) {
        let by = Some(self.tracking.current);
        for db in 0..self.dbs.len() {
            for (key, expired) in self.dbs[db].take_tracked() {
                let by = if expired { None } else { by };
                self.tracking.invalidate(&key, by, true);
            }
        }
    }

    /// After a read-only command `args` ran for the current client: its
    /// keys join the table. A read in a script tracks the script's declared
    /// keys on Redis 7.0, its own keys from Redis 7.2 on.
    #[cold]
    pub(crate) fn track_read(&mut self, args: &[&[u8]]) {
        let Some(meta) = crate::command_table::of_line(args) else {
            return;
        };
        if !meta.has_flag("readonly")
            || meta.has_flag("pubsub")
            || crate::command_table::runs_script(meta.name.as_bytes())
        {
            return;
        }
        let owned = if self.in_script && self.version < crate::RedisVersion::V7_4 {
            self.tracking.caller.clone()
        } else {
            None
        };
        let caller: Vec<&[u8]>;
        let line: &[&[u8]] = match &owned {
            Some(owned) => {
                caller = owned.iter().map(Vec::as_slice).collect();
                &caller
            }
            None => args,
        };
        let Some(keys) =
            crate::command_table::of_line(line).and_then(|meta| meta.key_positions(line))
        else {
            return;
        };
        self.tracking.remember(keys.into_iter().map(|i| line[i]));
        self.sync_tracking_log();
    }

    /// The current client runs `args`: if it starts a script (EVAL,
    /// FCALL...), the script's reads track its declared keys.
    #[cold]
    pub(crate) fn track_script_caller(&mut self, args: &[&[u8]]) {
        if args
            .first()
            .is_some_and(|name| crate::command_table::runs_script(name))
        {
            self.tracking.caller = Some(args.iter().map(|a| a.to_vec()).collect());
        }
    }

    /// A client's command is about to run (Redis's `processCommand`):
    /// the table is brought back under its limit.
    pub(crate) fn tracking_before_command(&mut self, client: u64) {
        self.tracking.begin(client);
        if self.tracking.clients > 0 {
            self.limit_tracking_table();
        }
    }

    /// A client's command ended: CLIENT CACHING applied to it (unless it
    /// was queued in a transaction), the prefixes' changes are broadcast.
    pub(crate) fn tracking_after_command(&mut self, client: u64, in_multi: bool) {
        self.flush_invalidations();
        if !in_multi {
            if let Some(peer) = self.tracking.peers.get_mut(&client) {
                peer.mode.caching = false;
            }
        }
        self.tracking.caller = None;
        self.tracking.broadcast();
        self.tracking.current = 0;
        self.sync_tracking_log();
    }

    /// The expiry cycle's turn (Redis's cron and `beforeSleep`): the
    /// expired keys invalidated, the table under its limit, the prefixes'
    /// changes broadcast.
    pub(crate) fn tracking_tick(&mut self) {
        self.tracking.current = 0;
        self.flush_invalidations();
        self.limit_tracking_table();
        self.tracking.broadcast();
        self.sync_tracking_log();
    }

    fn limit_tracking_table(&mut self) {
        if self.tracking.table.is_empty() {
            return;
        }
        let max = self
            .config
            .get("tracking-table-max-keys")
            .parse()
            .unwrap_or(usize::MAX);
        self.tracking.limit(max);
    }

    /// FLUSHALL / FLUSHDB: a null invalidation to every tracking client;
    /// the keys the flush removed are not invalidated one by one.
    pub(crate) fn tracking_flushed(&mut self) {
        for ks in &mut self.dbs {
            ks.take_tracked();
        }
        self.tracking.flushed();
    }

    /// Turns the keyspaces' change log on or off, as tracking needs it.
    pub(crate) fn sync_tracking_log(&mut self) {
        let wanted = self.tracking.wants_changes();
        if wanted != self.tracking.logging {
            self.tracking.logging = wanted;
            for ks in &mut self.dbs {
                ks.set_tracked(wanted);
            }
        }
    }
}
