//! What a `Db` and every connection it lends have sent, counted in one place.

use std::sync::atomic::{AtomicU64, Ordering};

use redis::Pipeline;

/// Round trips and commands, shared by a `Db`, its clones and the
/// connections they lend.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    round_trips: AtomicU64,
    commands: AtomicU64,
}

impl Counters {
    /// One command sent on its own.
    pub(crate) fn command(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.commands.fetch_add(1, Ordering::Relaxed);
        tracing::trace!(target: "redmodel::round_trip", commands = 1);
    }

    /// A pipeline sent in one round trip (an atomic one adds MULTI and EXEC).
    pub(crate) fn pipeline(&self, pipeline: &Pipeline) {
        let wrapper = if pipeline.is_transaction() { 2 } else { 0 };
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.commands
            .fetch_add(pipeline.len() as u64 + wrapper, Ordering::Relaxed);
        tracing::trace!(
            target: "redmodel::round_trip",
            commands = pipeline.len() as u64 + wrapper,
            atomic = pipeline.is_transaction()
        );
    }

    pub(crate) fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    pub(crate) fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }
}
