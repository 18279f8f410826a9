//! Writes made of single-slot groups of commands: one MULTI/EXEC in the
//! plain layout; in the cluster layout, where the groups are in different
//! slots and no transaction can hold them all, one MULTI/EXEC per group,
//! run in the order they were added.
//!
//! The caller picks the order so that a crash between two groups leaves
//! only what the reads skip and prune (an entry naming a gone object) and
//! makes every group idempotent, so that the write can be retried whole.

use redis::{Cmd, FromRedisValue, Value};

use crate::{Db, KeyLayout, Result};

/// An ordered list of groups of commands, each group within one slot.
#[derive(Default)]
pub(crate) struct Steps {
    /// The groups; each command with whether its reply is kept.
    groups: Vec<Vec<(Cmd, bool)>>,
}

impl Steps {
    /// No groups yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Starts a new group: the commands added until the next `step` must
    /// all be in one slot.
    pub(crate) fn step(&mut self) -> &mut Self {
        self.groups.push(Vec::new());
        self
    }

    /// Adds a command whose reply [`run`](Self::run) returns.
    pub(crate) fn add(&mut self, cmd: Cmd) -> &mut Self {
        self.push(cmd, true)
    }

    /// Adds a command whose reply is dropped.
    pub(crate) fn add_ignored(&mut self, cmd: Cmd) -> &mut Self {
        self.push(cmd, false)
    }

    fn push(&mut self, cmd: Cmd, keep: bool) -> &mut Self {
        if self.groups.is_empty() {
            self.groups.push(Vec::new());
        }
        if let Some(group) = self.groups.last_mut() {
            group.push((cmd, keep));
        }
        self
    }

    /// Runs the groups as the layout of `db` allows and returns the kept
    /// replies, in the order their commands were added.
    pub(crate) async fn run<T: FromRedisValue>(&self, db: &Db) -> Result<T> {
        if db.key_layout() == KeyLayout::Plain {
            let mut pipe = redis::pipe();
            pipe.atomic();
            for (cmd, keep) in self.groups.iter().flatten() {
                pipe.add_command(cmd.clone());
                if !keep {
                    pipe.ignore();
                }
            }
            return db.query_pipeline(&pipe).await;
        }
        let mut kept = Vec::new();
        for group in self.groups.iter().filter(|g| !g.is_empty()) {
            let mut pipe = redis::pipe();
            pipe.atomic();
            for (cmd, keep) in group {
                pipe.add_command(cmd.clone());
                if !keep {
                    pipe.ignore();
                }
            }
            let replies: Vec<Value> = db.query_pipeline(&pipe).await?;
            kept.extend(replies);
        }
        Ok(T::from_redis_value(Value::Array(kept)).map_err(redis::RedisError::from)?)
    }
}
