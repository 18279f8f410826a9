//! Writes made of single-slot groups of commands: one atomic unit in the
//! plain layout; in the cluster layout, where the groups are in different
//! slots and nothing atomic can hold them all, one unit per group, run in
//! the order they were added.
//!
//! A group may be *guarded*: it runs only if some keys of its slot exist
//! (the object a write names, the admin a sub-object hangs under), checked
//! in the same atomic unit, so no write lands on an object deleted a
//! moment before. A guarded unit is one Lua script ([`checked`]); on a
//! server that refuses scripts, a WATCH transaction (the guards WATCHed,
//! checked, then MULTI/EXEC). An unguarded unit is a MULTI/EXEC.
//!
//! The caller picks the order so that a crash between two groups leaves
//! only what the reads skip and prune (an entry naming a gone object) and
//! makes every group idempotent, so that the write can be retried whole.

use std::borrow::Cow;

use redis::{Cmd, FromRedisValue, Value};
use smallvec::SmallVec;

pub(crate) mod checked;
pub(crate) mod entry;
mod incr;
mod shaped;

pub(crate) use incr::{number_text, Increment};

use crate::db::optimistic::watched;
use crate::layout::plain_key;
use crate::{Db, Error, Result};
use checked::{guarded, guarded_now, Native};

/// An ordered list of groups of commands, each group within one slot.
/// Most writes are one group of a guard or two and a few commands: they
/// stay inline, with no vector of their own to allocate and free.
#[derive(Default)]
pub(crate) struct Plan {
    groups: SmallVec<[Group; 1]>,
}

/// The commands of a unit, each with whether its reply is kept.
pub(crate) type Commands<'a> = SmallVec<[(&'a Cmd, bool); 4]>;

/// One group: its guards and its commands (each with whether its reply is
/// kept).
#[derive(Default)]
struct Group {
    guards: SmallVec<[String; 2]>,
    cmds: SmallVec<[(Cmd, bool); 3]>,
}

impl Plan {
    /// No groups yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Starts a new group: the commands (and guards) added until the next
    /// `step` must all be in one slot.
    pub(crate) fn step(&mut self) -> &mut Self {
        self.groups.push(Group::default());
        self
    }

    /// The current group runs only if `key` (as stored) exists; otherwise
    /// nothing of it runs and [`run`](Self::run) fails with
    /// [`Error::NotFound`].
    pub(crate) fn guard(&mut self, key: impl Into<String>) -> &mut Self {
        self.current().guards.push(key.into());
        self
    }

    /// Adds a command whose reply [`run`](Self::run) returns.
    pub(crate) fn add(&mut self, cmd: Cmd) -> &mut Self {
        self.current().cmds.push((cmd, true));
        self
    }

    /// Adds a command whose reply is dropped.
    pub(crate) fn add_ignored(&mut self, cmd: Cmd) -> &mut Self {
        self.current().cmds.push((cmd, false));
        self
    }

    /// Every command, each with whether its reply is kept, without the
    /// guards: for a caller that checks them itself.
    pub(crate) fn commands(&self) -> Commands<'_> {
        self.groups
            .iter()
            .flat_map(|g| g.cmds.iter().map(|(cmd, keep)| (cmd, *keep)))
            .collect()
    }

    fn current(&mut self) -> &mut Group {
        if self.groups.is_empty() {
            self.groups.push(Group::default());
        }
        let last = self.groups.len() - 1;
        &mut self.groups[last]
    }

    /// Runs the groups as the layout of `db` allows (all as one unit in the
    /// plain layout, one unit per group in order in the cluster layout) and
    /// returns the kept replies, in the order their commands were added.
    pub(crate) async fn run<T: FromRedisValue>(&self, db: &Db) -> Result<T> {
        let kept = match self.run_now(db) {
            Some(kept) => kept.map_err(|e| *e)?,
            // Boxed: a round trip costs far more than the allocation, and
            // the caller's future does not carry the units' states (moved
            // from frame to frame on every write, in process too).
            None => Box::pin(self.run_units(db)).await?,
        };
        Ok(T::from_redis_value(Value::Array(kept)).map_err(redis::RedisError::from)?)
    }

    /// The plain layout's one unit: all the groups' guards and commands.
    fn unit(&self) -> Unit<'_> {
        // One group (the common case) lends its guards as they are.
        let guards = match self.groups.as_slice() {
            [one] => Cow::Borrowed(one.guards.as_slice()),
            groups => Cow::Owned(groups.iter().flat_map(|g| g.guards.clone()).collect()),
        };
        Unit {
            guards,
            cmds: self.commands(),
        }
    }

    /// In process, in the plain layout, the one unit run at once if it is
    /// guarded ([`guarded_now`]); `None` otherwise (on a server, or for a
    /// unit without guards: a MULTI, whose commands all run whatever one
    /// of them replies).
    fn run_now(&self, db: &Db) -> Option<Native<Vec<Value>>> {
        if !db.one_slot() || db.engine().is_none() {
            return None;
        }
        let unit = self.unit();
        if unit.guards.is_empty() {
            return None;
        }
        guarded_now(db, &unit.guards, &unit.cmds)
    }

    /// [`run`](Self::run)'s units, on a server (or unguarded in process).
    async fn run_units(&self, db: &Db) -> Result<Vec<Value>> {
        if db.one_slot() {
            return self.unit().run(db).await;
        }
        let mut kept = Vec::new();
        for group in &self.groups {
            let unit = Unit {
                guards: Cow::Borrowed(&group.guards),
                cmds: group.cmds.iter().map(|(cmd, keep)| (cmd, *keep)).collect(),
            };
            kept.extend(unit.run(db).await?);
        }
        Ok(kept)
    }
}

/// Commands to run as one atomic unit, borrowed from the groups: their
/// guards, and each command with whether its reply is kept.
struct Unit<'a> {
    guards: Cow<'a, [String]>,
    cmds: Commands<'a>,
}

impl Unit<'_> {
    /// Runs the unit; its kept replies.
    async fn run(&self, db: &Db) -> Result<Vec<Value>> {
        if self.cmds.is_empty() && self.guards.is_empty() {
            return Ok(Vec::new());
        }
        let replies = if self.guards.is_empty() {
            db.query_pipeline(&self.pipeline()).await?
        } else {
            self.run_guarded(db).await?
        };
        Ok(replies)
    }

    /// The commands as an atomic pipeline (the ignored ones ignored).
    fn pipeline(&self) -> redis::Pipeline {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for (cmd, keep) in &self.cmds {
            pipe.add_command((*cmd).clone());
            if !keep {
                pipe.ignore();
            }
        }
        pipe
    }

    /// The guarded unit: one script ([`checked`],
    /// with no read to check), or a WATCH transaction where scripts are
    /// refused.
    async fn run_guarded(&self, db: &Db) -> Result<Vec<Value>> {
        match guarded(db, &self.guards, &self.cmds).await? {
            Some(kept) => Ok(kept),
            None => self.run_watched(db).await,
        }
    }

    /// The guarded unit without a script: WATCH the guards, check they
    /// exist, MULTI/EXEC the commands; again if a guard changed meanwhile.
    async fn run_watched(&self, db: &Db) -> Result<Vec<Value>> {
        let first = self.guards.first().map(String::as_str).unwrap_or_default();
        let pipe = self.pipeline();
        let pipe = &pipe;
        watched(db, first, |tx| async move {
            tx.watch_guards(&self.guards).await?;
            tx.exec::<Vec<Value>>(pipe).await
        })
        .await
    }
}

/// The script's `NOTFOUND key` refusal as [`Error::NotFound`]; any other
/// error as it is.
pub(crate) fn not_found(err: Error) -> Error {
    match &err {
        Error::Server(e) if e.code() == Some("NOTFOUND") => Error::NotFound {
            key: plain_key(
                e.detail()
                    .unwrap_or_default()
                    .split(' ')
                    .next()
                    .unwrap_or_default(),
            ),
        },
        _ => err,
    }
}
