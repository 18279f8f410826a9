//! `maxmemory`: while the data's estimated size is over it, commands that
//! may grow the data (flagged `denyoom`) are refused with Redis's OOM
//! error. The engine never evicts keys, so every policy acts as
//! `noeviction`.
//!
//! The size is the estimate INFO's `used_memory` reports (a walk over
//! every key, see `server::used_memory_of`); it is taken again only once
//! the data changed since the last time (Redis's per-database change
//! counters), and only while a limit is set, so a server without one pays
//! nothing.

use crate::config::Limits;
use crate::keyspace::Keyspace;

/// Redis's OOM refusal (`shared.oomerr`).
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// A script that may write refused at its start (Redis's
/// `scriptPrepareForRun`).
pub(crate) const SCRIPT_OOM: &str =
    "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'";

/// The limit, and the last estimate of the data's size.
#[derive(Debug, Default)]
pub(crate) struct MaxMemory {
    /// `maxmemory` in bytes; 0: no limit.
    limit: u64,
    /// The last estimate, with the count of changes it was taken at.
    taken: Option<(u64, u64)>,
    /// Whether the data was over the limit when the running command
    /// started (Redis's `pre_command_oom_state`): a script's commands are
    /// checked against it, not against what the script added since.
    at_start: bool,
}

impl MaxMemory {
    /// Takes `maxmemory` from the new settings.
    pub(crate) fn configure(&mut self, limits: &Limits) {
        self.limit = limits.maxmemory;
        self.at_start &= self.limited();
    }

    /// Whether a limit is set.
    pub(crate) fn limited(&self) -> bool {
        self.limit != 0
    }

    /// Whether the data in `dbs` is over the limit, with `size` the
    /// estimate of their size; remembered as the state at the start of
    /// the command about to run.
    pub(crate) fn check(&mut self, dbs: &[Keyspace], size: fn(&[Keyspace]) -> u64) -> bool {
        self.at_start = self.limited() && self.used(dbs, size) > self.limit;
        self.at_start
    }

    /// Whether the data was over the limit when the running command
    /// started (false without a limit).
    pub(crate) fn over_at_start(&self) -> bool {
        self.at_start
    }

    /// The estimate of the size of `dbs`, taken again if they changed.
    fn used(&mut self, dbs: &[Keyspace], size: fn(&[Keyspace]) -> u64) -> u64 {
        let changes = dbs.iter().map(Keyspace::changes).sum();
        match self.taken {
            Some((used, at)) if at == changes => used,
            _ => {
                let used = size(dbs);
                self.taken = Some((used, changes));
                used
            }
        }
    }
}
