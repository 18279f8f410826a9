//! Per-command call counts, for INFO's `commandstats` section.
//!
//! Counted on every command run (`run_spec`), so kept cheap: the table is
//! keyed by the address of the command's static [`Spec`], hashed by an
//! identity hasher, instead of by its name.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::Spec;

/// Calls and failed calls of one command.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Calls {
    pub(crate) calls: u64,
    pub(crate) failed: u64,
}

/// The counts of every command run since the start or CONFIG RESETSTAT.
#[derive(Debug, Default)]
pub(crate) struct CommandStats {
    by_spec: HashMap<usize, (&'static str, Calls), BuildHasherDefault<AddressHasher>>,
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

    /// Every command called, by name.
    pub(crate) fn by_name(&self) -> Vec<(&'static str, Calls)> {
        let mut all: Vec<_> = self.by_spec.values().copied().collect();
        all.sort_by_key(|(name, _)| *name);
        all
    }

    pub(crate) fn clear(&mut self) {
        self.by_spec.clear();
    }
}

/// Hashes an address: the bits above the alignment, spread by a multiply.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
