//! Writes made of single-slot groups of commands: one atomic unit in the
//! plain layout, or where every group is in one slot (a slot group's keys);
//! in the cluster layout, where the groups are in different slots and
//! nothing atomic can hold them all, one unit per group, run in the order
//! they were added.
//!
//! A group may be *guarded*: it runs only if some keys of its slot exist
//! (the object a write names, the admin a sub-object hangs under), checked
//! in the same atomic unit, so no write lands on an object deleted a
//! moment before. Every unit also checks, before its first command, that
//! its keys hold the types its commands need ([`types`]): a key another
//! program filled with another type refuses the unit whole, where Redis
//! would refuse only the command that meets it, after the others wrote.
//! A unit is one Lua script ([`checked`]), or the same run natively by
//! the engine in process; on a server that refuses scripts, a WATCH
//! transaction (the guards WATCHed, checked, the types read, then
//! MULTI/EXEC).
//!
//! The caller picks the order so that a crash between two groups leaves
//! only what the reads skip and prune (an entry naming a gone object) and
//! makes every group idempotent, so that the write can be retried whole.

use std::borrow::Cow;

use redis::{Cmd, FromRedisValue, Value};
use smallvec::SmallVec;

pub(crate) mod checked;
pub(crate) mod gathered;
mod shaped;
mod types;

use crate::db::optimistic::watched;
use crate::db::recall::Guess;
use crate::layout::plain_key;
use crate::{Db, Error, Result};
use checked::{guarded, guarded_now, Decide, Native, Reader};

/// An ordered list of groups of commands, each group within one slot.
/// Most writes are one group of a guard or two and a few commands: it
/// is built in place, with no vector of groups to allocate and free.
#[derive(Default)]
pub(crate) struct Plan<'k> {
    /// The first group, the only one of most plans.
    first: Group<'k>,
    /// The groups after it; the last one is the current group.
    rest: Vec<Group<'k>>,
}

/// The commands of a unit.
pub(crate) type Commands<'a> = SmallVec<[Write<'a>; 4]>;

/// A command of a unit: whether its reply is kept, the argument it
/// takes from an earlier command's reply, if any, and whether it only
/// reads back what the command before it wrote ([`Plan::add_field_read_back`]).
#[derive(Clone, Copy)]
pub(crate) struct Write<'a> {
    /// The command; for a read back, the command before it, whose field
    /// it reads ([`args`](Self::args) gives the read as sent).
    pub(crate) cmd: &'a Cmd,
    pub(crate) keep: bool,
    pub(crate) splice: Option<Splice>,
    pub(crate) reads_back: bool,
}

impl<'a> Write<'a> {
    /// `cmd` as it is, its reply kept or not.
    pub(crate) fn plain(cmd: &'a Cmd, keep: bool) -> Self {
        Write {
            cmd,
            keep,
            splice: None,
            reads_back: false,
        }
    }

    /// The command this write runs as it is; `None` for a read back,
    /// whose `cmd` is the write it reads ([`args`](Self::args) gives its
    /// HGET).
    pub(crate) fn command(self) -> Option<&'a Cmd> {
        (!self.reads_back).then_some(self.cmd)
    }

    /// The command as sent, its name first: for a read back, `HGET` of
    /// the key and field of the command it reads back, borrowed from it
    /// (no command is built for it where a script or the engine runs it).
    pub(crate) fn args(self) -> impl Iterator<Item = Option<&'a [u8]>> + Clone {
        let (read, from, count) = match self.reads_back {
            true => (Some(Some(&b"HGET"[..])), 1, 2),
            false => (None, 0, usize::MAX),
        };
        read.into_iter()
            .chain(crate::command::args(self.cmd).skip(from).take(count))
    }

    /// The command as sent, as a command of its own: for the paths that
    /// send commands as they are (WATCH/MULTI, a gathered bulk write).
    pub(crate) fn to_cmd(self) -> Cmd {
        match self.reads_back {
            true => field_read(self.cmd),
            false => self.cmd.clone(),
        }
    }
}

/// An argument a command takes from the reply of an earlier command of
/// its unit, as the unit runs: what only the server knows when the unit
/// is sent (the new value of an increment, as the score of an index).
/// The earlier reply must be a string (a `HGET`'s): a script passes a
/// string on unchanged, where an integer would become a Lua number.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Splice {
    /// Which argument of the command (0: the first after its name); the
    /// command holds a placeholder there.
    pub(crate) arg: u16,
    /// Which earlier command of the unit (0: its first).
    pub(crate) from: u16,
}

/// One group: its guards (borrowed where the caller holds the key, as
/// an object's own), what it expects to read, and its commands.
#[derive(Default)]
struct Group<'k> {
    guards: GuardKeys<'k>,
    expects: Vec<Expected>,
    cmds: SmallVec<[Entry; 3]>,
}

impl Group<'_> {
    /// Whether the group has nothing to check or run.
    fn is_empty(&self) -> bool {
        self.guards.is_empty() && self.expects.is_empty() && self.cmds.is_empty()
    }

    /// The keys the group guards.
    fn guards(&self) -> impl Iterator<Item = &str> {
        self.guards.iter().map(|k| k.as_ref())
    }
}

/// The keys a write must find existing, owned or borrowed from its
/// caller: most writes have one or two, kept inline.
pub(crate) type GuardKeys<'k> = SmallVec<[Cow<'k, str>; 2]>;

/// The keys a unit guards, borrowed from its plan.
pub(crate) type Guards<'a> = SmallVec<[&'a str; 2]>;

/// A read, and the reply it must give for its group to run.
#[derive(Clone)]
struct Expected {
    read: Cmd,
    reply: Value,
}

impl Expected {
    /// The key the read reads (as stored).
    fn key(&self) -> &str {
        key_of(&self.read)
            .and_then(|k| std::str::from_utf8(k).ok())
            .unwrap_or_default()
    }
}

/// A group's command, with what [`Write`] says of it.
struct Entry {
    /// The command; empty for a field read back, which reads what the
    /// command before it wrote ([`Write::args`]).
    cmd: Cmd,
    keep: bool,
    splice: Option<Splice>,
    /// Whether this is a field read back.
    reads_back: bool,
}

impl Entry {
    fn new(cmd: Cmd, keep: bool) -> Self {
        Entry {
            cmd,
            keep,
            splice: None,
            reads_back: false,
        }
    }
}

impl<'k> Plan<'k> {
    /// One empty group.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Starts a new group: the commands (and guards) added until the next
    /// `step` must all be in one slot. (The current group, while it is
    /// still empty, is that new group.)
    pub(crate) fn step(&mut self) -> &mut Self {
        if !self.current().is_empty() {
            self.rest.push(Group::default());
        }
        self
    }

    /// The groups, in order.
    fn groups(&self) -> impl Iterator<Item = &Group<'k>> {
        std::iter::once(&self.first).chain(&self.rest)
    }

    /// How many groups there are.
    fn group_count(&self) -> usize {
        1 + self.rest.len()
    }

    /// The current group runs only if `key` (as stored) exists; otherwise
    /// nothing of it runs and [`run`](Self::run) fails with
    /// [`Error::NotFound`].
    pub(crate) fn guard(&mut self, key: impl Into<Cow<'k, str>>) -> &mut Self {
        self.current().guards.push(key.into());
        self
    }

    /// The current group runs only if `read` (a read of one key of the
    /// group's slot) replies `reply` just before it, in its atomic unit: a
    /// guard on a state rather than on existence ("the field still names
    /// this"). Otherwise nothing of it runs and [`run`](Self::run) fails
    /// with [`Error::NotFound`] for the read's key: what the write needs
    /// is no longer there as it was.
    pub(crate) fn expect(&mut self, read: Cmd, reply: Value) -> &mut Self {
        self.current().expects.push(Expected { read, reply });
        self
    }

    /// Adds a command whose reply [`run`](Self::run) returns.
    pub(crate) fn add(&mut self, cmd: Cmd) -> &mut Self {
        self.current().cmds.push(Entry::new(cmd, true));
        self
    }

    /// Adds a read of the hash field the command before it changed (its
    /// key and field are that command's first two arguments, as an
    /// HINCRBY's), its reply kept: the field's value exactly, as text or
    /// as the write's integer reply. A shaped script answers with the
    /// write's own reply where Lua holds it exactly (a string, an integer
    /// within 2^53) and runs the HGET past that, where the reply would
    /// reach the client as a rounded Lua number; the general script and
    /// the paths without one (WATCH, a gathered bulk write) run the HGET.
    /// In process the write's reply is exact, so it stands for the read,
    /// and no HGET runs. A script sends the HGET from the write's own key
    /// and field ([`Write::args`]); only the paths that send commands as
    /// they are build it.
    pub(crate) fn add_field_read_back(&mut self) -> &mut Self {
        let group = self.current();
        debug_assert!(!group.cmds.is_empty(), "a read back follows a write");
        group.cmds.push(Entry {
            reads_back: true,
            ..Entry::new(Cmd::new(), true)
        });
        self
    }

    /// Adds a command whose reply is dropped.
    pub(crate) fn add_ignored(&mut self, cmd: Cmd) -> &mut Self {
        self.current().cmds.push(Entry::new(cmd, false));
        self
    }

    /// Adds a command whose reply is dropped, its argument `arg` (0: the
    /// first after the name; `cmd` holds a placeholder there) the reply of
    /// the group's command number `from` (0: its first): a string, or an
    /// integer passed on as its text, as a script passes it. A plan
    /// with such a command runs only whole ([`run_whole`](Self::run_whole)).
    pub(crate) fn add_spliced(&mut self, cmd: Cmd, arg: u16, from: u16) -> &mut Self {
        let group = self.current();
        debug_assert!(
            usize::from(from) < group.cmds.len(),
            "a splice takes an earlier reply"
        );
        group.cmds.push(Entry {
            splice: Some(Splice { arg, from }),
            ..Entry::new(cmd, false)
        });
        self
    }

    /// Every command as a unit runs it.
    fn writes(&self) -> Commands<'_> {
        if self.rest.is_empty() {
            // The common case, without the flattening's bookkeeping.
            return group_writes(&self.first.cmds).collect();
        }
        self.groups().flat_map(|g| group_writes(&g.cmds)).collect()
    }

    /// Whether the plan has nothing to check or run.
    fn is_empty(&self) -> bool {
        self.groups().all(Group::is_empty)
    }

    fn has_splices(&self) -> bool {
        self.groups()
            .any(|g| g.cmds.iter().any(|entry| entry.splice.is_some()))
    }

    fn current(&mut self) -> &mut Group<'k> {
        self.rest.last_mut().unwrap_or(&mut self.first)
    }

    /// Runs the groups as the layout of `db` allows (all as one unit in the
    /// plain layout, or where all their keys share a slot; else one unit
    /// per group, in order) and
    /// returns the kept replies, in the order their commands were added.
    /// A plan with a spliced command runs with
    /// [`run_whole`](Self::run_whole) instead.
    pub(crate) async fn run<T: FromRedisValue>(&self, db: &Db) -> Result<T> {
        if self.has_splices() {
            return Err(Error::Misuse(
                "a plan that splices a reply runs only whole".to_string(),
            ));
        }
        if self.is_empty() {
            return from_kept(Vec::new());
        }
        let kept = match self.run_now(db) {
            Some(kept) => kept.map_err(|e| *e)?,
            // Boxed: a round trip costs far more than the allocation, and
            // the caller's future does not carry the units' states (moved
            // from frame to frame on every write, in process too).
            None => Box::pin(self.run_units(db)).await?,
        };
        from_kept(kept)
    }

    /// Runs a plan of one group (a spliced command's and the command it
    /// takes from must be in one) as one atomic unit: in process under
    /// the engine's lock, on a server as one script. `None` where it
    /// cannot run whole: a server that refuses scripts, a plan past what
    /// a script is written for, or groups in a cluster layout's separate
    /// slots (one group is one slot in either layout). The
    /// caller then takes a path of its own (ordered steps).
    pub(crate) async fn run_whole<T: FromRedisValue>(&self, db: &Db) -> Result<Option<T>> {
        if self.group_count() > 1 && self.has_splices() {
            return Err(Error::Misuse(
                "a plan that splices a reply is one group".to_string(),
            ));
        }
        if self.groups().any(|g| !g.expects.is_empty()) {
            return Err(Error::Misuse(
                "a plan that expects a read runs with `run`".to_string(),
            ));
        }
        if let Some(now) = self.now(db) {
            return now.map(Some);
        }
        if !self.one_unit(db) {
            return Ok(None);
        }
        let unit = self.unit();
        // Boxed, as in `run`: the caller's future does not carry the
        // script's state, and in process nothing is boxed.
        match Box::pin(guarded(db, &unit.guards, &unit.cmds)).await? {
            Some(kept) => Ok(Some(from_kept(kept)?)),
            None => Ok(None),
        }
    }

    /// In process, a guarded plan of one unit run at once, with
    /// no future to build (an in-process write costs little more than
    /// its commands); `None` otherwise.
    pub(crate) fn now<T: FromRedisValue>(&self, db: &Db) -> Option<Result<T>> {
        let kept = self.run_now(db)?;
        Some(kept.map_err(|e| *e).and_then(from_kept))
    }

    /// Whether the groups can run as one atomic unit: always in the plain
    /// layout, and one group is one slot in either; in the cluster layout,
    /// several groups whose keys (each guard, each command's key) all
    /// share one slot, as the keys of a slot group do.
    fn one_unit(&self, db: &Db) -> bool {
        if db.one_slot() || self.group_count() <= 1 {
            return true;
        }
        let mut keys = self.groups().flat_map(|g| {
            let guards = g.guards.iter().map(|k| k.as_bytes());
            guards.chain(g.cmds.iter().filter_map(|entry| key_of(&entry.cmd)))
        });
        let Some(first) = keys.next() else {
            return true;
        };
        let slot = redmodel_memory::hash_slot(first);
        keys.all(|key| redmodel_memory::hash_slot(key) == slot)
    }

    /// The plain layout's one unit: all the groups' guards and commands.
    fn unit(&self) -> Unit<'_> {
        // One group (the common case) lends its reads as they are.
        let expects = match self.rest.is_empty() {
            true => Cow::Borrowed(self.first.expects.as_slice()),
            false => Cow::Owned(self.groups().flat_map(|g| g.expects.clone()).collect()),
        };
        Unit {
            guards: self.groups().flat_map(|g| g.guards()).collect(),
            expects,
            cmds: self.writes(),
        }
    }

    /// Runs the plan's one unit (see [`one_unit`](Self::one_unit)) with
    /// what `decide` adds, decided on reads the unit checks as it runs
    /// ([`checked::run`]; `conflict_key`: a key of the unit's slot). The
    /// kept replies of the plan's own commands.
    pub(crate) async fn run_deciding<T: FromRedisValue>(
        &self,
        db: &Db,
        conflict_key: &str,
        decide: &impl Decide,
    ) -> Result<T> {
        let unit = self.unit();
        let decide = Expecting {
            expects: &unit.expects,
            then: decide,
        };
        checked::run(db, conflict_key, &unit.guards, &unit.cmds, &decide).await
    }

    /// In process, the one unit (a plan of one group, or the plain
    /// layout's) run at once ([`guarded_now`]); `None` otherwise (on a
    /// server, or for a unit that expects reads).
    fn run_now(&self, db: &Db) -> Option<Native<Vec<Value>>> {
        // One group is one unit in either layout; several are one unit
        // only in the plain layout (the cluster layout's run them in turn).
        if !self.one_unit(db) || db.engine().is_none() {
            return None;
        }
        let unit = self.unit();
        // A unit that expects reads runs as a checked write, which reads
        // first ([`Unit::run`]).
        if !unit.expects.is_empty() {
            return None;
        }
        guarded_now(db, &unit.guards, &unit.cmds)
    }

    /// [`run`](Self::run)'s units, on a server (or unguarded in process).
    async fn run_units(&self, db: &Db) -> Result<Vec<Value>> {
        if self.one_unit(db) {
            return self.unit().run(db).await;
        }
        let mut kept = Vec::new();
        for group in self.groups() {
            let unit = Unit {
                guards: group.guards().collect(),
                expects: Cow::Borrowed(&group.expects),
                cmds: group_writes(&group.cmds).collect(),
            };
            kept.extend(unit.run(db).await?);
        }
        Ok(kept)
    }
}

/// Commands to run as one atomic unit, borrowed from the groups: their
/// guards and expected reads, and each command with whether its reply is
/// kept.
struct Unit<'a> {
    guards: Guards<'a>,
    expects: Cow<'a, [Expected]>,
    cmds: Commands<'a>,
}

impl Unit<'_> {
    /// Runs the unit; its kept replies.
    async fn run(&self, db: &Db) -> Result<Vec<Value>> {
        if let Some(first) = self.expects.first() {
            // The reads go first and the unit checks them as it runs: a
            // checked write that adds nothing to the commands.
            let decide = Expecting {
                expects: &self.expects,
                then: &Nothing,
            };
            return checked::run(db, first.key(), &self.guards, &self.cmds, &decide).await;
        }
        if self.cmds.is_empty() && self.guards.is_empty() {
            return Ok(Vec::new());
        }
        match guarded(db, &self.guards, &self.cmds).await? {
            Some(kept) => Ok(kept),
            None => self.run_watched(db).await,
        }
    }

    /// The commands as an atomic pipeline (the ignored ones ignored).
    fn pipeline(&self) -> redis::Pipeline {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for write in &self.cmds {
            pipe.add_command(write.to_cmd());
            if !write.keep {
                pipe.ignore();
            }
        }
        pipe
    }

    /// The unit without a script: WATCH the guards, check they exist and
    /// that the keys hold the types the commands need ([`types`]),
    /// MULTI/EXEC the commands; again if a guard changed meanwhile.
    async fn run_watched(&self, db: &Db) -> Result<Vec<Value>> {
        let first = match self.guards.first() {
            Some(guard) => guard,
            None => route(&self.cmds).unwrap_or_default(),
        };
        let pipe = self.pipeline();
        let pipe = &pipe;
        watched(db, first, |tx| async move {
            tx.watch_guards(&self.guards).await?;
            tx.exec_whole::<Vec<Value>>(pipe).await
        })
        .await
    }
}

/// A decision that first reads what a unit expects, and refuses the
/// write ([`Error::NotFound`] for the read's key) if a reply differs;
/// then decides as `then` does. Run by [`checked::run`], the reads are
/// checked again in the unit's atomic run, as every recorded read is.
struct Expecting<'a, D> {
    expects: &'a [Expected],
    then: &'a D,
}

impl<D: Decide> Decide for Expecting<'_, D> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        if !self.expects.is_empty() {
            let keys: SmallVec<[&str; 1]> = self.expects.iter().map(Expected::key).collect();
            let reads = self.expects.iter().map(|e| e.read.clone()).collect();
            let replies = reader.read(&keys, reads, false).await?;
            // A reply missing counts as unmet, on the first read's key.
            let unmet = if replies.len() == self.expects.len() {
                self.expects
                    .iter()
                    .zip(&replies)
                    .position(|(e, r)| e.reply != *r)
            } else {
                Some(0)
            };
            if let Some(i) = unmet {
                return Err(Error::NotFound {
                    key: plain_key(keys[i]),
                });
            }
        }
        self.then.decide(reader).await
    }

    fn stands(&self, read: &Cmd, seen: &Value) -> bool {
        self.then.stands(read, seen)
    }

    fn first_guess(&self) -> Guess {
        // An expected state is there as a rule: reading it at once costs
        // less than a guess of absent that fails.
        if self.expects.is_empty() {
            self.then.first_guess()
        } else {
            Guess::Nothing
        }
    }
}

/// A decision that adds nothing: the unit's own commands are the write.
struct Nothing;

impl Decide for Nothing {
    async fn decide<R: Reader>(&self, _reader: &R) -> Result<Vec<Cmd>> {
        Ok(Vec::new())
    }
}

/// The key of a plan's command: its first argument. The keys of one
/// group share a slot, so its first key's slot is all of its keys'.
fn key_of(cmd: &Cmd) -> Option<&[u8]> {
    match cmd.args_iter().nth(1)? {
        redis::Arg::Simple(key) => Some(key),
        _ => None,
    }
}

/// A group's commands as a unit runs them: a field read back is the
/// command before it, read back ([`Write::args`]).
fn group_writes(entries: &[Entry]) -> impl Iterator<Item = Write<'_>> {
    entries.iter().enumerate().map(move |(i, entry)| {
        let cmd = match i.checked_sub(1) {
            Some(before) if entry.reads_back => &entries[before].cmd,
            _ => &entry.cmd,
        };
        Write {
            cmd,
            keep: entry.keep,
            splice: entry.splice,
            reads_back: entry.reads_back,
        }
    })
}

/// `HGET key field` of a command whose first two arguments are a key and
/// one of its fields.
fn field_read(write: &Cmd) -> Cmd {
    let mut read = crate::command::sized("HGET", 2, 64);
    for arg in write.args_iter().skip(1).take(2) {
        if let redis::Arg::Simple(bytes) = arg {
            read.arg(bytes);
        }
    }
    read
}

/// The kept replies as the caller's type.
fn from_kept<T: FromRedisValue>(kept: Vec<Value>) -> Result<T> {
    Ok(T::from_redis_value(Value::Array(kept)).map_err(redis::RedisError::from)?)
}

/// The key that routes a unit without guards to its node: its first
/// command's.
pub(crate) fn route<'a>(cmds: &[Write<'a>]) -> Option<&'a str> {
    let key = key_of(cmds.first()?.cmd)?;
    std::str::from_utf8(key).ok()
}

/// A script's refusal as the error it stands for: `NOTFOUND key` as
/// [`Error::NotFound`], `NOTTYPE type key` as [`Error::UnexpectedType`]
/// ([`types`]); any other error as it is.
pub(crate) fn refusal(err: Error) -> Error {
    if let Error::Server(e) = &err
        && let Some(refused) = types::from_script(e)
    {
        return refused;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{cmd, Owned};
    use crate::KeyLayout;

    /// A plan of one group on `key`: it expects field `f` to read
    /// `expected`, then sets field `g` to `1`.
    fn set_if<'k>(key: &'k str, expected: &[u8]) -> Plan<'k> {
        let mut plan = Plan::new();
        plan.step()
            .guard(key)
            .expect(
                cmd("HGET").arg(key).arg("f").owned(),
                Value::BulkString(expected.to_vec()),
            )
            .add_ignored(cmd("HSET").arg(key).arg("g").arg(1).owned());
        plan
    }

    /// An engine in each layout, its hash `ex:1` holding `f` = `value`.
    async fn layouts_with_f(value: &str) -> [Db; 2] {
        let dbs = [
            Db::memory(),
            Db::memory().with_key_layout(KeyLayout::Cluster),
        ];
        for db in &dbs {
            db.query::<()>(cmd("HSET").arg("ex:1").arg("f").arg(value))
                .await
                .unwrap();
        }
        dbs
    }

    #[tokio::test]
    async fn a_group_whose_expected_read_holds_runs() {
        for db in layouts_with_f("a").await {
            set_if("ex:1", b"a").run::<()>(&db).await.unwrap();
            let g: Option<String> = db.query(cmd("HGET").arg("ex:1").arg("g")).await.unwrap();
            assert_eq!(g.as_deref(), Some("1"));
        }
    }

    #[tokio::test]
    async fn a_group_whose_expected_read_changed_writes_nothing_and_names_its_key() {
        for db in layouts_with_f("b").await {
            let err = set_if("ex:1", b"a").run::<()>(&db).await.unwrap_err();
            assert!(
                matches!(err, Error::NotFound { ref key } if key == "ex:1"),
                "{err:?}"
            );
            let g: Option<String> = db.query(cmd("HGET").arg("ex:1").arg("g")).await.unwrap();
            assert_eq!(g, None);
        }
    }

    #[tokio::test]
    async fn an_expecting_plan_cannot_run_whole() {
        let db = Db::memory();
        let err = set_if("ex:1", b"a").run_whole::<()>(&db).await.unwrap_err();
        assert!(matches!(err, Error::Misuse(_)), "{err:?}");
    }
}
