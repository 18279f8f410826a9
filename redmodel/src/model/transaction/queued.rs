//! What a typed transaction's step queues: each object's writes merged
//! into one, the relation lists' commands, and what its reads learned.

use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard, PoisonError};

use redis::Cmd;

use super::upkeep::{Upkeep, UpkeepOf};
use crate::command::{cmd, Owned};
use crate::model::object::COUNT_FIELD;
use crate::model::write::{self, Changes};
use crate::model::Model;
use crate::{Error, Result};

/// The commands a link or an unlink queues on one relation list.
pub(super) struct ListWrite {
    /// The list, as the db stores it.
    pub(super) key: String,
    pub(super) cmds: Vec<Cmd>,
}

impl ListWrite {
    /// `member` appended to the list `key` unless it is there (moved to
    /// the tail if it is).
    pub(super) fn link(key: String, member: String) -> Self {
        let cmds = vec![
            cmd("LREM").arg(&key).arg(0).arg(&member).owned(),
            cmd("RPUSH").arg(&key).arg(&member).owned(),
        ];
        ListWrite { key, cmds }
    }

    /// Every occurrence of `member` removed from the list `key`.
    pub(super) fn unlink(key: String, member: String) -> Self {
        let cmds = vec![cmd("LREM").arg(&key).arg(0).arg(&member).owned()];
        ListWrite { key, cmds }
    }
}

/// The write a step queued for one object.
pub(super) enum Op {
    /// A full write: every declared field (`None`: removed), counted.
    Insert(Vec<(&'static str, Option<Vec<u8>>)>),
    /// A write of these fields (`None`: removed); the object must exist.
    Fields(Vec<(&'static str, Option<Vec<u8>>)>),
    /// A full write of a single-value model: SET, or DEL for `None`.
    Single(Option<Vec<u8>>),
    Delete,
    /// A TTL command (PEXPIRE, PEXPIREAT, PERSIST) with its argument.
    Ttl(&'static str, Option<i64>),
}

/// What the transaction's own writes say of an object's existence.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Existence {
    /// Only field writes so far (which need it to exist already).
    AsBefore,
    Written,
    Deleted,
}

/// Every queued write of one object, merged: its commands in order, and
/// the fields they leave, for the index upkeep.
pub(super) struct ObjectWrite {
    /// As the db stores it.
    pub(super) key: String,
    /// In plain form, for errors.
    pub(super) plain: String,
    pub(super) upkeep: Box<dyn Upkeep>,
    /// The model's TTL, given by a full write of a single value (`PX`).
    pub(super) ttl: Option<std::time::Duration>,
    /// The commands, each with whether its reply is kept (a `_count`).
    pub(super) cmds: Vec<(Cmd, bool)>,
    /// The fields written since the last delete, with their last text.
    pub(super) fields: Vec<(&'static str, Option<Vec<u8>>)>,
    pub(super) existence: Existence,
    /// Whether the object must exist before the transaction (a field
    /// write came before any full write).
    pub(super) must_exist: bool,
    /// Other keys the writes need to exist when they commit: a
    /// sub-object's admin, the objects reference fields name.
    pub(super) guards: Vec<String>,
    /// The marks the writes leave on the objects reference fields name
    /// in the transaction's slot (see `write::reference_marks`).
    pub(super) marks: Vec<Cmd>,
}

impl ObjectWrite {
    pub(super) fn new<M: Model>(key: String, plain: &str) -> Self {
        ObjectWrite {
            key,
            plain: plain.to_string(),
            upkeep: Box::new(UpkeepOf::<M>(PhantomData)),
            ttl: M::TTL,
            cmds: Vec::new(),
            fields: Vec::new(),
            existence: Existence::AsBefore,
            must_exist: false,
            guards: Vec::new(),
            marks: Vec::new(),
        }
    }

    /// Adds `op`'s commands, then `ttls`, the commands giving the TTLs
    /// it declares.
    pub(super) fn apply(&mut self, op: Op, ttls: Vec<Cmd>) -> Result<()> {
        match op {
            Op::Fields(fields) => {
                match self.existence {
                    Existence::Deleted => {
                        return Err(Error::NotFound {
                            key: self.plain.clone(),
                        })
                    }
                    Existence::AsBefore => self.must_exist = true,
                    Existence::Written => {}
                }
                self.add_fields(fields, false);
            }
            Op::Insert(fields) => {
                self.existence = Existence::Written;
                self.add_fields(fields, true);
            }
            Op::Single(text) => {
                let cmd = match text {
                    Some(text) => {
                        self.existence = Existence::Written;
                        write::single_set(&self.key, text, self.ttl)?
                    }
                    None => {
                        self.existence = Existence::Deleted;
                        cmd("DEL").arg(&self.key).owned()
                    }
                };
                self.cmds.push((cmd, false));
            }
            Op::Delete => {
                self.existence = Existence::Deleted;
                self.fields.clear();
                self.cmds.push((cmd("DEL").arg(&self.key).owned(), false));
            }
            Op::Ttl(command, arg) => {
                let mut ttl = cmd(command);
                ttl.arg(&self.key);
                if let Some(arg) = arg {
                    ttl.arg(arg);
                }
                self.cmds.push((ttl, false));
            }
        }
        self.cmds.extend(ttls.into_iter().map(|ttl| (ttl, false)));
        Ok(())
    }

    /// The text this transaction's writes leave in field `name`, if they
    /// write it (`Some(None)`: removed, or the object deleted).
    pub(super) fn queued_text(&self, name: &str) -> Option<Option<Vec<u8>>> {
        if self.existence == Existence::Deleted {
            return Some(None);
        }
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| text.clone())
    }

    /// The commands of a field write (or a full one, `counted`), and the
    /// fields it leaves.
    fn add_fields(&mut self, fields: Vec<(&'static str, Option<Vec<u8>>)>, counted: bool) {
        let removed: Vec<&str> = fields
            .iter()
            .filter(|(_, text)| text.is_none())
            .map(|(name, _)| *name)
            .collect();
        let set: Vec<(&str, &[u8])> = fields
            .iter()
            .filter_map(|(name, text)| Some((*name, text.as_deref()?)))
            .collect();
        if !removed.is_empty() {
            let cmd = cmd("HDEL").arg(&self.key).arg(&removed).owned();
            self.cmds.push((cmd, false));
        }
        if !set.is_empty() {
            let cmd = cmd("HSET").arg(&self.key).arg(&set).owned();
            self.cmds.push((cmd, false));
        }
        if counted {
            let cmd = cmd("HINCRBY")
                .arg(&self.key)
                .arg(COUNT_FIELD)
                .arg(1)
                .clone();
            self.cmds.push((cmd, true));
        }
        for (name, text) in fields {
            self.fields.retain(|(n, _)| *n != name);
            self.fields.push((name, text));
        }
    }

    /// What the writes do to the stored fields, for the index upkeep.
    pub(super) fn changes(&self) -> Changes<'_> {
        if self.existence == Existence::Deleted {
            return Changes::Delete;
        }
        Changes::Fields(
            self.fields
                .iter()
                .map(|(name, text)| (*name, text.as_deref()))
                .collect(),
        )
    }

    pub(super) fn exists_after(&self) -> bool {
        self.existence != Existence::Deleted
    }
}

/// The queued writes of one attempt, and what its reads learned.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) writes: Vec<ObjectWrite>,
    /// Keys (as stored) whose existence a read saw under WATCH.
    pub(super) known: Vec<(String, bool)>,
    /// In the cluster layout, the first key read or written: every other
    /// must share its slot.
    pub(super) first_key: Option<String>,
    /// The commands of the links and unlinks, after the objects' writes.
    pub(super) lists: Vec<ListWrite>,
    /// Keys the links need to exist when they commit (both objects).
    pub(super) guards: Vec<String>,
    /// The first write that could not be queued.
    pub(super) error: Option<Error>,
    /// Whether a read met a cluster redirection (the slot moved).
    pub(super) redirected: bool,
}

/// Locks the pending writes. A panic in another holder cannot leave them
/// half-merged in a way that matters (the step that panicked commits
/// nothing), so a poisoned lock is simply taken over.
pub(super) fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}
