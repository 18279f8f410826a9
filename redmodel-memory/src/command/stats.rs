//! Per-command call counts and per-code error counts, for INFO's
//! `commandstats` and `errorstats` sections.
//!
//! Counted on every command run (`run_spec`), so kept cheap: the table is
//! keyed by the address of the command's static [`Spec`] (hashed as a
//! number, [`ByNumber`]), instead of by its name; the transaction commands
//! the session runs itself, which have none, by name.

use std::collections::{BTreeMap, HashMap};

use super::Spec;
use crate::hasher::ByNumber;

/// Calls and failed calls of one command.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Calls {
    pub(crate) calls: u64,
    pub(crate) failed: u64,
}

/// The counts of every command run since the start or CONFIG RESETSTAT.
#[derive(Debug, Default)]
pub(crate) struct CommandStats {
    by_spec: HashMap<usize, (&'static str, Calls), ByNumber>,
    /// The transaction commands the session runs itself, by name.
    control: BTreeMap<&'static str, Calls>,
    /// Error replies sent, by their code (`ERR`, `WRONGTYPE`...).
    errors: BTreeMap<String, u64>,
}

impl CommandStats {
    /// Counts one call of `spec`, failed (an error reply) or not.
    pub(crate) fn record(&mut self, spec: &'static Spec, failed: bool) {
        let entry = self
            .by_spec
            .entry(std::ptr::from_ref(spec) as usize)
            .or_insert((spec.name, Calls::default()));
        entry.1.calls += 1;
        entry.1.failed += u64::from(failed);
    }

    /// Counts one call of a command the session runs itself (MULTI, EXEC,
    /// DISCARD, WATCH, UNWATCH, RESET), which has no [`Spec`].
    pub(crate) fn record_control(&mut self, name: &'static str, failed: bool) {
        let calls = self.control.entry(name).or_default();
        calls.calls += 1;
        calls.failed += u64::from(failed);
    }

    /// Counts a call of `spec` already counted (a blocked command) as
    /// failed after all.
    pub(crate) fn record_failure(&mut self, spec: &'static Spec) {
        if let Some(entry) = self.by_spec.get_mut(&(std::ptr::from_ref(spec) as usize)) {
            entry.1.failed += 1;
        }
    }

    /// Every command called, by name.
    pub(crate) fn by_name(&self) -> Vec<(&'static str, Calls)> {
        let mut all: Vec<_> = self.by_spec.values().copied().collect();
        all.extend(self.control.iter().map(|(name, calls)| (*name, *calls)));
        all.sort_by_key(|(name, _)| *name);
        all
    }

    /// Counts the error replies in `reply`: the reply itself, or the
    /// replies of the commands an EXEC ran (`exec`), as Redis counts each
    /// error reply it adds.
    pub(crate) fn record_errors(&mut self, reply: &redis::Value, exec: bool) {
        match reply {
            redis::Value::ServerError(e) => {
                *self.errors.entry(e.code().to_string()).or_default() += 1;
            }
            redis::Value::Array(items) if exec => {
                for item in items {
                    self.record_errors(item, false);
                }
            }
            _ => {}
        }
    }

    /// Error replies sent in all (INFO's `total_error_replies`).
    pub(crate) fn total_errors(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Every error code replied, with its count.
    pub(crate) fn errors(&self) -> impl Iterator<Item = (&str, u64)> {
        self.errors.iter().map(|(code, n)| (code.as_str(), *n))
    }

    pub(crate) fn clear(&mut self) {
        self.by_spec.clear();
        self.control.clear();
        self.errors.clear();
    }
}
