//! Many independent writes run at once: the db layer's entry point for a
//! bulk write, whatever the backend.
//!
//! Each write is a whole plan of its own (an object's write with its
//! index entries, run by the executors of [`plan`](super::plan)), so each
//! keeps its own atomicity and its own retries; what a batch adds is that
//! they travel together instead of one after the other:
//!
//! - in process, the plans run one after the other, each at once under
//!   the engine's lock (there is no round trip to share);
//! - on a server, the writes in flight share the `Db`'s multiplexed
//!   connection, which sends the requests queued together in one socket
//!   write and reads their replies in one pass: a pipeline of every
//!   write's script, [`WINDOW`] writes deep (on one server in the plain
//!   layout, the model's bulk writes run as gathered WATCH transactions
//!   instead, [`gathered`](super::plan::gathered), and send here only the
//!   writes that cannot be gathered);
//! - on Redis Cluster, the cluster client routes each request to its
//!   slot's node and pipelines those bound for one node the same way, so
//!   the writes are grouped by node as every other cluster request is.
//!
//! A write that must read first (a unique value held by an object this
//! `Db` has not seen) or that loses a race retries on its own, without
//! holding the others back beyond the window.

use std::future::Future;

use parking_lot::Mutex;

use crate::Db;

/// How many writes of a batch are in flight at once: deep enough that a
/// server's round trip is shared by many writes, bounded so that a batch
/// of a million holds a window's futures, not a million, and leaves
/// room on the exclusive connections' pool (16) for the few writes
/// that need one (WATCH, where scripts are refused).
pub(crate) const WINDOW: usize = 256;

/// Runs `writes` on `db`, at most [`WINDOW`] in flight, and returns their
/// outcomes in the order given. In process they run one after the other:
/// each finishes without waiting on a round trip, so running them at once
/// would only add the cost of polling many futures.
///
/// On a server, [`WINDOW`] workers take the writes in turn, each running
/// one at a time in its own future: a write's future (kilobytes) lives in
/// its worker's, allocated once per batch rather than once per write, and
/// a slow write holds back only its worker, not the window.
pub(crate) async fn run_each<F: Future>(
    db: &Db,
    writes: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let writes = writes.into_iter();
    if db.engine().is_some() {
        let mut outcomes = Vec::with_capacity(writes.size_hint().0);
        for write in writes {
            outcomes.push(write.await);
        }
        return outcomes;
    }
    let (expected, at_most) = writes.size_hint();
    let workers = at_most.unwrap_or(WINDOW).clamp(1, WINDOW);
    let next = Mutex::new(writes.enumerate());
    let outcomes = Mutex::new(Vec::with_capacity(expected));
    let worker = || async {
        loop {
            let Some((item, write)) = next.lock().next() else {
                return;
            };
            let outcome = write.await;
            outcomes.lock().push((item, outcome));
        }
    };
    let workers = (0..workers).map(|_| worker());
    futures_util::future::join_all(workers).await;
    let mut outcomes = outcomes.into_inner();
    outcomes.sort_unstable_by_key(|(item, _)| *item);
    outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}
