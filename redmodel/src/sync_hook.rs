//! The sync hook: write-behind copying of hot Redis
//! objects to a persistent store.
//!
//! Below both `db` (which holds the hooks) and `model` (whose writes call
//! them), so that neither imports the other for it.
//!
//! Every full write of an object ([`ObjectRef::insert`](crate::model::ObjectRef::insert))
//! increments its `_count` field; when the count reaches a multiple of the
//! model's `sync_every` (10 unless declared), every hook registered with
//! [`Db::on_sync`](crate::Db::on_sync) is called with a [`SyncEvent`].
//! A hook runs inline, after the write succeeded, on the task that wrote:
//! keep it short (queue the key to a channel and copy from another task).

use std::sync::Arc;

use parking_lot::RwLock;

/// One sync point: the object at `key` has had `count` full writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncEvent {
    /// The model's table.
    pub table: &'static str,
    /// The object's key.
    pub key: String,
    /// Its `_count` after this write (a multiple of the model's `sync_every`).
    pub count: u64,
}

type Hook = Arc<dyn Fn(&SyncEvent) + Send + Sync>;

/// The hooks of one `Db` and its clones.
#[derive(Default)]
pub(crate) struct SyncHooks {
    hooks: RwLock<Vec<Hook>>,
}

impl SyncHooks {
    pub(crate) fn register(&self, hook: Hook) {
        self.hooks.write().push(hook);
    }

    /// Calls every hook. The list is copied first, so that a hook may
    /// register another without deadlocking.
    pub(crate) fn run(&self, event: &SyncEvent) {
        let hooks: Vec<Hook> = self.hooks.read().clone();
        for hook in hooks {
            hook(event);
        }
    }
}
