//! A write that depends on what it read, without WATCH: read with plain
//! commands on the shared connection (or guess the replies from what the
//! `Db` saw last, [`recall`](crate::db::recall)), decide, then send one script
//! that re-runs those reads, and applies the write only if every reply is
//! the same as recorded ([`CHECKED`]): an optimistic compare-and-set in
//! one atomic round trip, the whole write when every guess holds.
//!
//! The WATCH transaction it replaces needs a connection of its own per
//! write (WATCH belongs to a connection), three round trips on it, and
//! under contention every loser starts over on that connection. Here the
//! reads and the script go through the `Db`'s shared connection, so racing
//! writers cost no connections and no UNWATCH, and a loser learns it lost
//! from the script's reply, in the same round trip that would have
//! written, with the values it should have read. The write paths decide
//! with the same code either way: they read through a [`Reader`], which is
//! the WATCH transaction on the fallback path (a server that refuses
//! scripts) and a [`Recorder`] here.
//!
//! In process, in the plain layout, the memory engine runs the whole
//! write at once under its lock ([`Db::atomically`], [`decided_now`]):
//! the decision reads there, so there is nothing to guess, record or
//! check again, and no Lua (a script costs several times its commands
//! there: an `incr` costs 7.3 µs as a script, 1.6 µs so). In the cluster
//! layout, whose decisions read keys of other slots, the engine runs
//! what the script would run instead: the same guards, recorded reads
//! and writes, one exchange as the script is one round trip.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

use redis::{Cmd, FromRedisValue, Value};
use smallvec::SmallVec;

use super::shaped::{self, Expect, GUARDS};
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::optimistic::{pause_before_retry, watched, RawTransaction, MAX_ATTEMPTS};
use crate::db::plan::types;
use crate::db::plan::{refusal, route, Splice, Write};
use crate::db::recall::{Facts, Guess};
use crate::db::script::{Call, Lua};
use crate::layout::plain_key;
use crate::memory::Atomic;
use crate::{Db, Error, KeyLayout, Result};

/// What runs in process under the engine's lock returns its error boxed:
/// the rare error then does not make every reply as large as [`Error`]
/// (88 bytes with a `Vec`, against 24), copied at each of the layers it
/// returns through, where those copies stall the processor (perf shows it).
pub(crate) type Native<T> = std::result::Result<T, Box<Error>>;

/// What the write paths read through: the commands `reads`, their
/// replies in order (an error reply as a value if `errors_as_replies`, as
/// `ignore_errors` gives them, else the first error ends the read). On the
/// WATCH path `watch` is WATCHed first, in the same round trip; here the
/// script checks the reads instead, and `watch` goes unused. The commands
/// are given, not lent: the [`Recorder`] keeps them as its conditions.
pub(crate) trait Reader: Sync {
    fn read(
        &self,
        watch: &[&str],
        reads: Vec<Cmd>,
        errors_as_replies: bool,
    ) -> impl Future<Output = Result<Vec<Value>>> + Send;

    /// Reads `read` apart from the write, through `db`: a value the write
    /// can neither WATCH nor check (in the cluster layout, a key of
    /// another slot), so a decision on it holds as of the read. In
    /// process the read runs under the lock the whole write holds
    /// ([`decided_now`]), where going through `db` would wait on that lock.
    fn read_apart<T: FromRedisValue + Send>(
        &self,
        db: &Db,
        read: &Cmd,
    ) -> impl Future<Output = Result<T>> + Send {
        db.query(read)
    }
}

impl Reader for RawTransaction {
    fn read(
        &self,
        watch: &[&str],
        reads: Vec<Cmd>,
        errors_as_replies: bool,
    ) -> impl Future<Output = Result<Vec<Value>>> + Send {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        if !watch.is_empty() {
            let mut watching = cmd("WATCH");
            watching.arg(watch);
            pipe.add_command(watching).ignore();
        }
        let watched = usize::from(!watch.is_empty());
        for read in reads {
            pipe.add_command(read);
        }
        async move {
            let replies: Vec<Value> = self.query_pipeline(&pipe).await?;
            let reads = pipe.cmd_iter().skip(watched);
            first_error(reads, &replies, errors_as_replies).map_or(Ok(replies), Err)
        }
    }
}

/// The error that ends a read of `reads` (unless `errors_as_replies`):
/// its first error reply. A read that finds its key of another type
/// is [`Error::UnexpectedType`] naming that key, where the read's
/// command says what type it needs ([`types::read_needed`]).
pub(super) fn first_error<'c>(
    reads: impl IntoIterator<Item = &'c Cmd>,
    replies: &[Value],
    errors_as_replies: bool,
) -> Option<Error> {
    if errors_as_replies {
        return None;
    }
    let (read, err) = reads
        .into_iter()
        .zip(replies)
        .find_map(|(read, reply)| match reply {
            Value::ServerError(err) => Some((read, err)),
            _ => None,
        })?;
    let named = (err.code() == "WRONGTYPE")
        .then(|| types::wrong_type_of(read))
        .flatten();
    Some(named.unwrap_or_else(|| redis::RedisError::from(err.clone()).into()))
}

/// Reads on the `Db`'s shared connection, or guesses what it would read
/// ([`recall`](crate::db::recall)), and records each read with its reply, the
/// conditions of the [`CHECKED`] script.
pub(crate) struct Recorder<'a> {
    db: &'a Db,
    guess: Guess,
    /// Whether a reply was guessed rather than read.
    guessed: AtomicBool,
    conditions: Mutex<Vec<(Cmd, Value)>>,
}

impl<'a> Recorder<'a> {
    pub(crate) fn new(db: &'a Db, guess: Guess) -> Self {
        Recorder {
            db,
            guess,
            guessed: AtomicBool::new(false),
            conditions: Mutex::new(Vec::new()),
        }
    }

    /// Whether a decision made on these reads rests on a guess from what
    /// the `Db` remembers: one that ends the write without writing (a
    /// refusal) must be made again on real reads, since no script will
    /// check it.
    pub(crate) fn guessed(&self) -> bool {
        self.guessed.load(Ordering::Relaxed)
    }
}

impl Reader for Recorder<'_> {
    fn read(
        &self,
        _watch: &[&str],
        cmds: Vec<Cmd>,
        errors_as_replies: bool,
    ) -> impl Future<Output = Result<Vec<Value>>> + Send {
        let recall = self.db.recall();
        // What is read for real: a command copied only when not guessed
        // (the recorded conditions keep the originals). Errors come back
        // as replies, to be recorded, whatever the caller asked.
        let mut reads = redis::pipe();
        reads.ignore_errors();
        let mut guesses: Vec<Option<Value>> = Vec::with_capacity(cmds.len());
        for cmd in &cmds {
            let guess = match &self.guess {
                Guess::Absent => recall.guess(cmd),
                Guess::Replied(facts) => facts.answer(cmd),
                Guess::Given(given) => given.answer(cmd),
                Guess::Nothing => None,
            };
            match guess {
                Some(_) if matches!(self.guess, Guess::Absent) => {
                    self.guessed.store(true, Ordering::Relaxed)
                }
                Some(_) => {}
                None => {
                    reads.add_command(cmd.clone());
                }
            }
            guesses.push(guess);
        }
        async move {
            let read: Vec<Value> = if reads.cmd_iter().next().is_none() {
                Vec::new()
            } else {
                self.db.read_replies(&reads).await?
            };
            let mut read = read.into_iter();
            let replies: Vec<Value> = guesses
                .into_iter()
                .zip(&cmds)
                .map(|(guess, cmd)| {
                    guess.unwrap_or_else(|| {
                        let reply = read.next().unwrap_or(Value::Nil);
                        recall.saw(cmd, &reply);
                        reply
                    })
                })
                .collect();
            // As the trait says: unless asked for as replies, the first
            // error ends the read (a key of another type: WRONGTYPE).
            let failed = first_error(&cmds, &replies, errors_as_replies);
            let mut conditions = self
                .conditions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // A read's error is recorded as the 0 that the scripts (and
            // the engine in process) read it as, so that the check finds
            // it again rather than a change.
            conditions.extend(
                cmds.into_iter()
                    .zip(replies.iter().map(|reply| match reply {
                        Value::ServerError(_) => Value::Int(0),
                        reply => reply.clone(),
                    })),
            );
            match failed {
                Some(err) => Err(err),
                None => Ok(replies),
            }
        }
    }
}

/// Checks `guards` (keys that must exist, else `NOTFOUND key`), then the
/// recorded reads: if any reply differs from the recorded one, replies
/// `{0, replies}` having written nothing, the reads' actual replies (an
/// error as 0: the caller then reads for itself); else runs the commands
/// and replies `{1, their replies}`. (What the reads would reply after
/// the write, which [`recall`](crate::db::recall) remembers, is deduced from
/// the commands instead of read again: [`Facts::apply`].) A command's
/// error stops the
/// script there (what ran before it stays, as in MULTI). The replies pass
/// through Lua, where an integer is a double: one of 2^53 or more comes
/// back rounded (a caller that needs such a number exactly reads it back
/// as text).
///
/// Between the reads and the commands it checks the types of the keys
/// that a command could find of another type after an earlier one wrote
/// ([`types`]): `NOTTYPE type key` for one that holds another, nothing
/// written.
///
/// `ARGV`: the number of reads; each read as its argument count, its
/// arguments, its number of values and the values (`=text`, `#n` for an
/// integer, or `-` for nil); the number of type checks, each as the type
/// and the key; then the commands, each as its argument count and
/// arguments.
static CHECKED: LazyLock<Lua> = LazyLock::new(|| Lua::new(&[GUARDS, CHECKED_BODY].concat()));

/// [`CHECKED`] after its guards.
const CHECKED_BODY: &str = r"
local function read(first, last)
  local reply = redis.pcall(unpack(ARGV, first, last))
  if type(reply) == 'table' and reply.err then return 0 end
  return reply
end
local seen, changed = {}, false
local i = 2
for r = 1, tonumber(ARGV[1]) do
  local argc = tonumber(ARGV[i])
  local reply = read(i + 1, i + argc)
  seen[r] = reply
  i = i + argc + 1
  if type(reply) ~= 'table' then reply = {reply} end
  local n = tonumber(ARGV[i])
  i = i + 1
  changed = changed or #reply ~= n
  for k = 1, n do
    local want, got = ARGV[i + k - 1], reply[k]
    if want == '-' then
      changed = changed or got ~= false
    elseif string.sub(want, 1, 1) == '#' then
      changed = changed or type(got) ~= 'number' or got ~= tonumber(string.sub(want, 2))
    else
      changed = changed or type(got) ~= 'string' or got ~= string.sub(want, 2)
    end
  end
  i = i + n
end
if changed then return {0, seen} end
for c = 1, tonumber(ARGV[i]) do
  local want, key = ARGV[i + 2 * c - 1], ARGV[i + 2 * c]
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('NOTTYPE ' .. want .. ' ' .. key)
  end
end
i = i + 1 + 2 * tonumber(ARGV[i])
local out = {}
while i <= #ARGV do
  local argc = tonumber(ARGV[i])
  out[#out + 1] = redis.call(unpack(ARGV, i + 1, i + argc))
  i = i + argc + 1
end
return {1, out}
";

/// What a [`CHECKED`] run came to.
pub(crate) enum Checked<T> {
    /// The write was applied: the replies of its kept commands.
    Done(T),
    /// A read came back different: nothing written; decide again, on
    /// the actual values the script replied.
    Changed(Facts),
    /// This write cannot go as a script (the server refuses scripts, or a
    /// read's reply is not one the script compares): take the WATCH path.
    Unsupported,
}

impl Recorder<'_> {
    /// Sends `writes` (each command with whether its reply is kept) as one
    /// [`CHECKED`] script (its shape's, [`shaped`]), guarded by `guards`
    /// and conditioned on every read recorded; in process, runs the same
    /// on the engine ([`in_process`]).
    ///
    /// The script's keys are the guards, or `route` if there are none: a
    /// key of the write's slot, which routes the script to its node on a
    /// cluster.
    pub(crate) async fn commit<T: FromRedisValue>(
        self,
        guards: &[&str],
        route: Option<&str>,
        writes: &[Write<'_>],
    ) -> Result<Checked<T>> {
        let conditions = self
            .conditions
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The memory engine answers at once: let other tasks run between
        // the reads and the script, as they would while a server's replies
        // travel, so that it sees the races a server does. (Against a
        // server the reads and the script travel: a yield would only cost
        // a rescheduling. In process, a recorded read is the cluster
        // layout's: the plain layout's decisions run under the engine's
        // lock, `decided_now`.)
        if !conditions.is_empty() && self.db.engine().is_some() {
            tokio::task::yield_now().await;
        }
        // In process, the engine runs the checks and the writes as the
        // script would, without Lua: a script costs several times the
        // commands it runs there.
        let native = self
            .db
            .atomically(|tx| in_process(tx, guards, &conditions, writes));
        let (done, first) = match native {
            Some(outcome) => outcome.map_err(|e| *e)?,
            None => match send(self.db, guards, route, &conditions, writes).await? {
                Some(outcome) => outcome,
                None => return Ok(Checked::Unsupported),
            },
        };
        let recall = self.db.recall();
        if !done {
            // Nothing written: `first` is what the reads found instead.
            let facts = Facts::of(conditions.iter().map(|(cmd, _)| cmd).zip(&first));
            recall.remember(facts.clone());
            return Ok(Checked::Changed(facts));
        }
        // Written: the reads found what was recorded, and the writes
        // changed it as they say.
        if !conditions.is_empty() {
            let mut facts = Facts::of(conditions.iter().map(|(cmd, reply)| (cmd, reply)));
            // A read back changes nothing.
            for cmd in writes.iter().filter_map(|w| w.command()) {
                facts.apply(cmd);
            }
            recall.remember(facts);
        }
        let out = T::from_redis_value(Value::Array(first)).map_err(redis::RedisError::from)?;
        Ok(Checked::Done(out))
    }
}

/// Sends the write as its shape's script, or the general one: whether
/// it was applied, and the kept replies (applied) or the reads as they
/// are (not); `None` if it cannot go as a script.
async fn send(
    db: &Db,
    guards: &[&str],
    route: Option<&str>,
    conditions: &[(Cmd, Value)],
    writes: &[Write<'_>],
) -> Result<Option<(bool, Vec<Value>)>> {
    let routed = [route.unwrap_or_default()];
    let keys: &[&str] = match (guards, route) {
        ([], Some(_)) => &routed,
        _ => &[],
    };
    // The write's own script if it has a shape to write one for, else the
    // general one.
    let checks = types::stopping_checks(writes);
    let shaped = shaped::shape(guards.len(), conditions, writes, &checks);
    let call = match &shaped {
        Some(shaped) => {
            let bytes = guards.iter().map(|g| g.len()).sum::<usize>()
                + shaped.argv.iter().map(|a| a.len()).sum::<usize>();
            let mut call = if keys.is_empty() {
                shaped.script.call_sized(guards, shaped.argv.len(), bytes)
            } else {
                shaped.script.call_sized(keys, shaped.argv.len(), bytes)
            };
            for arg in &shaped.argv {
                call.arg(arg.as_ref());
            }
            call
        }
        // The general script passes no reply on, and checks every key it
        // is given: a spliced write, or one routed by a key that is no
        // guard, has no script then.
        None if !keys.is_empty() || writes.iter().any(|w| w.splice.is_some()) => return Ok(None),
        None => {
            let mut invocation = CHECKED.call(guards);
            invocation.arg(conditions.len());
            for (cmd, reply) in conditions {
                let Some(values) = expected(reply) else {
                    return Ok(None);
                };
                add_command(&mut invocation, crate::command::args(cmd));
                invocation.arg(values.len());
                for value in values {
                    invocation.arg(value);
                }
            }
            invocation.arg(checks.len());
            for check in &checks {
                invocation.arg(check.want);
                invocation.arg(check.key);
            }
            for write in writes {
                add_command(&mut invocation, write.args());
            }
            invocation
        }
    };
    let reply = match call.invoke(db).await {
        Ok(Some(reply)) => reply,
        Ok(None) => return Ok(None),
        Err(err) => return Err(types::first_refused(refusal(err), writes)),
    };
    if let Some(shaped) = &shaped {
        return shaped.reply(reply).map(Some).ok_or_else(unknown_shape);
    }
    let Value::Array(reply) = reply else {
        return Err(unknown_shape());
    };
    let mut reply = reply.into_iter();
    let (Some(Value::Int(done)), Some(Value::Array(first)), None) =
        (reply.next(), reply.next(), reply.next())
    else {
        return Err(unknown_shape());
    };
    let done = done == 1;
    if !done {
        return Ok(Some((done, first)));
    }
    let kept = first
        .into_iter()
        .zip(writes)
        .filter(|(_, write)| write.keep)
        .map(|(v, _)| v)
        .collect();
    Ok(Some((done, kept)))
}

/// The error of a checked write's script reply that is not of the shape
/// the script replies.
fn unknown_shape() -> Error {
    Error::from(redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "the checked write's script replied in an unknown shape",
    )))
}

/// What the scripts do, run by the engine in process under its lock
/// ([`Db::atomically`]): the guards, then the reads, each compared with
/// its recorded reply whole (an error reads as 0, as in the scripts),
/// then the writes, stopping at the first error (what ran before it
/// stays). Whether the write was applied, and the kept replies or the
/// reads as they are.
fn in_process(
    tx: &mut Atomic<'_>,
    guards: &[&str],
    conditions: &[(Cmd, Value)],
    writes: &[Write<'_>],
) -> Native<(bool, Vec<Value>)> {
    check_guards(tx, guards)?;
    let mut changed = false;
    let mut seen = Vec::with_capacity(conditions.len());
    for (cmd, recorded) in conditions {
        let reply = match call(tx, cmd) {
            Value::ServerError(_) => Value::Int(0),
            reply => reply,
        };
        changed |= reply != *recorded;
        seen.push(reply);
    }
    if changed {
        return Ok((false, seen));
    }
    apply(tx, writes).map(|kept| (true, kept))
}

/// In process, what the scripts do once their checks hold: the type
/// checks ([`check_types`]), then the writes, stopping at the first error
/// (what ran before it stays). The kept replies.
fn apply(tx: &mut Atomic<'_>, writes: &[Write<'_>]) -> Native<Vec<Value>> {
    check_types(tx, writes)?;
    let mut kept = Vec::with_capacity(writes.len());
    // The replies a later write takes an argument from, by position; only
    // a unit with a splice looks for them.
    let spliced = writes.iter().any(|w| w.splice.is_some());
    let mut taken: SmallVec<[(usize, Value); 1]> = SmallVec::new();
    // The reply of the write before, for a read back of it: exact here.
    let mut previous: Option<Value> = None;
    for (i, write) in writes.iter().enumerate() {
        let reply = if write.reads_back {
            match previous.take() {
                Some(reply) => reply,
                None => {
                    return Err(Box::new(Error::Misuse(
                        "a read back follows a write".to_string(),
                    )))
                }
            }
        } else {
            match write.splice {
                None => call(tx, write.cmd),
                Some(splice) => call_spliced(tx, write.cmd, splice, &taken)?,
            }
        };
        let reply = reply.extract_error().map_err(|e| match i {
            0 => Box::new(types::first_refused(Error::from(e), writes)),
            _ => Box::new(Error::from(e)),
        })?;
        if writes.get(i + 1).is_some_and(|next| next.reads_back) {
            previous = Some(reply.clone());
        }
        if spliced
            && writes[i + 1..]
                .iter()
                .any(|w| w.splice.is_some_and(|s| usize::from(s.from) == i))
        {
            taken.push((i, reply.clone()));
        }
        if write.keep {
            kept.push(reply);
        }
    }
    Ok(kept)
}

/// In process, a whole checked write at once under the engine's lock
/// ([`Db::atomically`]): the decision on reads made there, then the
/// guards and the writes as [`in_process`] runs them. Nothing is guessed
/// and nothing read needs checking again, since nothing can run between
/// the reads and the writes. The kept replies, or `None` if the decision
/// waits on something other than its reads (then nothing ran).
fn decided_now(
    tx: &mut Atomic<'_>,
    guards: &[&str],
    base: &[Write<'_>],
    decide: &impl Decide,
) -> Option<Native<Vec<Value>>> {
    let decided = {
        let reader = Locked(parking_lot::Mutex::new(&mut *tx));
        #[cfg(debug_assertions)]
        let _deciding = Deciding::enter();
        futures_util::FutureExt::now_or_never(decide.decide(&reader))?
    };
    let extra = match decided {
        Ok(extra) => extra,
        Err(err) => return Some(Err(Box::new(err))),
    };
    if let Err(err) = check_guards(tx, guards) {
        return Some(Err(err));
    }
    Some(apply(tx, &decided_writes(base, &extra, decide.keeps())))
}

/// A decided write's commands: the fixed `base`, then what the decision
/// added (`extra`, their replies kept if `keep`).
fn decided_writes<'a>(base: &[Write<'a>], extra: &'a [Cmd], keep: bool) -> Vec<Write<'a>> {
    let mut writes = Vec::with_capacity(base.len() + extra.len());
    writes.extend(decided(base, extra, keep));
    writes
}

/// [`decided_writes`], one by one.
pub(super) fn decided<'b, 'a>(
    base: &'b [Write<'a>],
    extra: &'a [Cmd],
    keep: bool,
) -> impl Iterator<Item = Write<'a>> + use<'b, 'a> {
    base.iter()
        .copied()
        .chain(extra.iter().map(move |cmd| Write::plain(cmd, keep)))
}

#[cfg(debug_assertions)]
thread_local! {
    /// Whether this thread is making a decision under the engine's lock.
    static DECIDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as deciding under the engine's lock while it lives.
#[cfg(debug_assertions)]
struct Deciding;

#[cfg(debug_assertions)]
impl Deciding {
    fn enter() -> Self {
        DECIDING.set(true);
        Deciding
    }
}

#[cfg(debug_assertions)]
impl Drop for Deciding {
    fn drop(&mut self) {
        DECIDING.set(false);
    }
}

/// Panics if this thread decides under the engine's lock: a decision that
/// reads through the `Db` there, instead of its [`Reader`], would wait on
/// that lock for ever. Checked in debug builds wherever the memory
/// backend hands out its engine.
#[cfg(debug_assertions)]
pub(crate) fn assert_not_deciding() {
    assert!(
        !DECIDING.get(),
        "a checked write's decision read through the Db instead of its Reader, under the engine's lock"
    );
}

/// The reads of a decision made under the engine's lock ([`decided_now`]):
/// each runs at once on the lock's [`Atomic`], and its future is ready.
struct Locked<'t, 'a>(parking_lot::Mutex<&'t mut Atomic<'a>>);

// SAFETY: `Reader` asks for `Sync` so that a decision's future can move
// between a runtime's threads while it waits on a server. A `Locked`
// never leaves the thread that holds the engine's lock: `decided_now`
// makes it, polls the decision once on that thread and drops both
// before returning, so no reference to it (or to its `Atomic`, which
// holds the lock's guard) can reach another thread.
unsafe impl Sync for Locked<'_, '_> {}

impl Reader for Locked<'_, '_> {
    fn read_apart<T: FromRedisValue + Send>(
        &self,
        _db: &Db,
        read: &Cmd,
    ) -> impl Future<Output = Result<T>> + Send {
        let reply = call(&mut self.0.lock(), read);
        std::future::ready(
            reply
                .extract_error()
                .and_then(|reply| Ok(T::from_redis_value(reply)?))
                .map_err(Error::from),
        )
    }

    fn read(
        &self,
        _watch: &[&str],
        reads: Vec<Cmd>,
        errors_as_replies: bool,
    ) -> impl Future<Output = Result<Vec<Value>>> + Send {
        let mut tx = self.0.lock();
        let replies: Vec<Value> = reads.iter().map(|read| call(&mut tx, read)).collect();
        std::future::ready(
            first_error(&reads, &replies, errors_as_replies).map_or(Ok(replies), Err),
        )
    }
}

/// In process, what every checked script does first ([`GUARDS`]): each
/// key of `guards` must exist, else [`Error::NotFound`].
pub(crate) fn check_guards(tx: &mut Atomic<'_>, guards: &[impl AsRef<str>]) -> Native<()> {
    match guards
        .iter()
        .find(|guard| !tx.exists(guard.as_ref().as_bytes()))
    {
        Some(missing) => Err(Box::new(Error::NotFound {
            key: plain_key(missing.as_ref()),
        })),
        None => Ok(()),
    }
}

/// In process, what every script checks before its first write
/// ([`types`]): each key a command could find of another type holds the
/// command's type or nothing, else [`Error::UnexpectedType`].
fn check_types(tx: &mut Atomic<'_>, writes: &[Write<'_>]) -> Native<()> {
    for check in types::stopping_checks(writes) {
        if tx
            .type_of(check.key)
            .is_some_and(|found| found != check.want)
        {
            return Err(Box::new(types::refused(check.key, check.want)));
        }
    }
    Ok(())
}

impl RawTransaction {
    /// [`exec`](Self::exec), after checking on this connection, before
    /// the MULTI, that each key of `writes` holds the type its commands
    /// need ([`check_types_watched`]): a key of another type refuses the
    /// whole transaction with [`Error::UnexpectedType`] naming it, where
    /// EXEC would refuse only the command that meets it and run the
    /// others. The model's own transactions commit through here.
    pub(crate) async fn exec_whole<T: FromRedisValue>(
        &self,
        writes: &redis::Pipeline,
    ) -> Result<Option<T>> {
        let cmds: Vec<Write<'_>> = writes
            .cmd_iter()
            .map(|cmd| Write::plain(cmd, false))
            .collect();
        check_types_watched(self, &cmds).await?;
        self.exec(writes).await
    }
}

/// On the WATCH path, the type checks ([`types`]) of a MULTI/EXEC of
/// `writes`, read before it on the transaction's connection: a key of
/// another type refuses the write ([`Error::UnexpectedType`]) before
/// anything runs. The keys are not WATCHed (an index key is every
/// writer's, so watching it would abort every concurrent write): another
/// client that changes a key's type between this read and the EXEC still
/// meets WRONGTYPE there.
async fn check_types_watched(tx: &RawTransaction, writes: &[Write<'_>]) -> Result<()> {
    let checks = types::checks(writes);
    if checks.is_empty() {
        return Ok(());
    }
    let mut pipe = redis::pipe();
    for check in &checks {
        pipe.cmd("TYPE").arg(check.key);
    }
    let found: Vec<String> = tx.query_pipeline(&pipe).await?;
    for (check, found) in checks.iter().zip(&found) {
        if found != "none" && found != check.want {
            return Err(types::refused(check.key, check.want));
        }
    }
    Ok(())
}

/// The arguments of `cmd`, name first (a model's commands hold plain
/// bytes only).
fn args(cmd: &Cmd) -> Vec<&[u8]> {
    crate::command::args(cmd).flatten().collect()
}

/// Runs `cmd` on the engine, its arguments gathered on the stack when
/// they are few (most of the model's commands): a `Vec` per command would
/// cost a tenth of an in-process `incr`.
fn call(tx: &mut Atomic<'_>, cmd: &Cmd) -> Value {
    call_with(tx, cmd, None)
}

/// [`call`], its argument `at` (0: the name) replaced by `arg` if given.
fn call_with(tx: &mut Atomic<'_>, cmd: &Cmd, replaced: Option<(usize, &[u8])>) -> Value {
    const ROOM: usize = 12;
    let mut room: [&[u8]; ROOM] = [&[]; ROOM];
    let mut n = 0;
    for arg in crate::command::args(cmd).flatten() {
        if n == ROOM {
            let mut argv = args(cmd);
            if let Some((at, with)) = replaced
                && let Some(slot) = argv.get_mut(at)
            {
                *slot = with;
            }
            return tx.call(&argv);
        }
        room[n] = match replaced {
            Some((at, with)) if at == n => with,
            _ => arg,
        };
        n += 1;
    }
    tx.call(&room[..n])
}

/// Runs `cmd` with its argument `splice.arg` the reply `taken` holds of
/// the write `splice.from`: a string as it is, an integer (an HINCRBY's,
/// which stands for the field read back) as its text, as a script passes
/// them on.
fn call_spliced(
    tx: &mut Atomic<'_>,
    cmd: &Cmd,
    splice: Splice,
    taken: &[(usize, Value)],
) -> Native<Value> {
    let mut digits = itoa::Buffer::new();
    let text: &[u8] = match taken.iter().find(|(i, _)| *i == usize::from(splice.from)) {
        Some((_, Value::BulkString(text))) => text,
        Some((_, Value::Int(n))) => digits.format(*n).as_bytes(),
        _ => {
            return Err(Box::new(Error::Misuse(format!(
                "a write takes its argument {} from the reply of write {}, which is not a string",
                splice.arg, splice.from
            ))))
        }
    };
    let at = usize::from(splice.arg) + 1;
    if at >= cmd.args_iter().len() {
        return Err(Box::new(Error::Misuse(format!(
            "a write has no argument {} to splice",
            splice.arg
        ))));
    }
    Ok(call_with(tx, cmd, Some((at, text))))
}

/// Runs `cmds` (each with whether its reply is kept) as one atomic script
/// if every key of `guards` exists ([`Error::NotFound`] otherwise, nothing
/// written) and every key holds the type its commands need
/// ([`Error::UnexpectedType`]): a checked write with no read to check.
/// `None` if the server refuses scripts, or the unit is routed by a key
/// that is no guard and has no shape to write a script for.
pub(crate) async fn guarded(
    db: &Db,
    guards: &[&str],
    cmds: &[Write<'_>],
) -> Result<Option<Vec<Value>>> {
    if let Some(kept) = guarded_now(db, guards, cmds) {
        return kept.map(Some).map_err(|e| *e);
    }
    // A unit that only checks that its guards exist (the cluster layout's
    // check of a key in another slot, before a write) is one EXISTS: the
    // keys counted at one instant, as the script would check them, for
    // less than a script's call costs the server and its building the
    // client. It writes nothing, so it waits out a server's passing state
    // (loading, failing over) as a read does.
    if cmds.is_empty() && !guards.is_empty() {
        let mut exists = cmd("EXISTS");
        exists.arg(guards);
        let found: usize = db.read(&exists).await?;
        match guards {
            _ if found == guards.len() => return Ok(Some(Vec::new())),
            // One key: the missing one is known; of several, the script
            // names it.
            [missing] => {
                return Err(Error::NotFound {
                    key: plain_key(missing),
                })
            }
            _ => {}
        }
    }
    // A unit without guards is routed by its first command's key.
    let route = if guards.is_empty() { route(cmds) } else { None };
    // No read to record, check or remember: the script alone. With no
    // read, a script that ran wrote.
    Ok(send(db, guards, route, &[], cmds)
        .await?
        .map(|(_, kept)| kept))
}

/// [`guarded`] in process, run at once on the engine: no read to record
/// or remember, and no future (whose nested states cost an in-process
/// write more than the engine's own work). `None` on a server.
pub(crate) fn guarded_now(
    db: &Db,
    guards: &[&str],
    cmds: &[Write<'_>],
) -> Option<Native<Vec<Value>>> {
    let outcome = db.atomically(|tx| in_process(tx, guards, &[], cmds))?;
    // With no read to compare, the writes always ran.
    Some(outcome.map(|(_, kept)| kept))
}

/// A recorded reply as the general script's expected values: `=text`
/// for a string, `#n` for an integer, `-` for nil, an array as its
/// elements; `None` for any other reply, which the script does not
/// compare. (A read's error is recorded as the 0 it reads as.)
fn expected(reply: &Value) -> Option<Vec<Vec<u8>>> {
    let values = shaped::expected(reply)?;
    Some(
        values
            .into_iter()
            .map(|v| match v {
                Expect::Nil => b"-".to_vec(),
                Expect::Text(text) => [b"=", text].concat(),
                Expect::Int(n) => [b"#", itoa::Buffer::new().format(n).as_bytes()].concat(),
            })
            .collect(),
    )
}

/// Adds one command to the script's `ARGV`: its argument count, then its
/// arguments.
fn add_command<'a>(invocation: &mut Call<'_>, args: impl Iterator<Item = Option<&'a [u8]>>) {
    let args: SmallVec<[&[u8]; 8]> = args.flatten().collect();
    invocation.arg(args.len());
    for arg in args {
        invocation.arg(arg);
    }
}

/// A write that decides on what it reads: the decision is Rust code, the
/// reads go through a [`Reader`], and [`run`] makes the reads and the
/// write one atomic unit on every backend (a checked script or the engine
/// in process, else WATCH/MULTI).
pub(crate) trait Decide: Sync {
    /// Reads through `reader` and decides: the commands to write after
    /// the caller's own (their replies dropped unless [`keeps`](Self::keeps)),
    /// or an error that refuses the write (nothing written).
    fn decide<R: Reader>(&self, reader: &R) -> impl Future<Output = Result<Vec<Cmd>>> + Send;

    /// Where the first attempt's reads are answered from. By default, what
    /// the `Db` saw last (a value it never saw guessed absent, as a claim
    /// of a new value expects). A decision about what is expected to be
    /// there (a release or a prune of an entry just read) reads at once
    /// ([`Guess::Nothing`]), where a guess of absent would cost an attempt;
    /// one that knows what it expects says so ([`Guess::Given`]).
    fn first_guess(&self) -> Guess {
        Guess::Absent
    }

    /// Whether the replies of the commands [`decide`](Self::decide) adds
    /// are kept, after the caller's own: for a write that must learn what
    /// it wrote (a deadline the server set).
    fn keeps(&self) -> bool {
        false
    }

    /// Whether a decision made with `read` answered as absent (what
    /// [`recall::absent`](crate::db::recall::absent) answers) stands with
    /// `seen` in its place: `seen` is that absent reply, or one the
    /// decision treats the same (a field that already holds the value a
    /// write gives it decides as one that is absent). A gathered write
    /// whose replies all stand is not decided again.
    fn stands(&self, read: &Cmd, seen: &Value) -> bool {
        crate::db::recall::is_absent(read, seen)
    }
}

/// Runs `decide` as one atomic unit guarded by `guards` (keys that must
/// exist): the fixed commands `base` (each with whether its reply is
/// kept), then what `decide` adds. The kept replies. The script's keys,
/// which route it to their node on a cluster, are the guards, else
/// `conflict_key`: on a cluster, a key of the slot of everything the
/// write reads and writes.
///
/// In process, in the plain layout, it runs at once ([`decided_now`]).
/// Elsewhere a first attempt guesses its reads from what the `Db` saw last
/// ([`crate::db::recall`]); the script checks every read and, if one
/// changed, replies what it found, on which the next attempt decides
/// (a retry at once, paced only when collisions repeat, by the retry
/// policy of [`crate::db::optimistic`]). A refusal is made again on real
/// reads if it rested on a guess, since no script checks it. On a server that refuses scripts,
/// the same decision runs under WATCH (`conflict_key` names the write in
/// a conflict error).
pub(crate) async fn run<T: FromRedisValue>(
    db: &Db,
    conflict_key: &str,
    guards: &[&str],
    base: &[Write<'_>],
    decide: &impl Decide,
) -> Result<T> {
    debug_assert!(
        base.iter().all(|w| w.splice.is_none()),
        "a decided write splices no reply (its WATCH path cannot)"
    );
    // In process, in the plain layout, the whole write runs at once under
    // the engine's lock. (The cluster layout's decisions read keys of
    // other slots, which a cluster-mode engine refuses to one unit, as
    // Redis Cluster refuses them to one script.)
    if db.key_layout() == KeyLayout::Plain
        && let Some(Some(outcome)) = db.atomically(|tx| decided_now(tx, guards, base, decide))
    {
        let kept = outcome.map_err(|e| *e)?;
        return Ok(T::from_redis_value(Value::Array(kept)).map_err(redis::RedisError::from)?);
    }
    // Boxed: the attempts' future (reads, script, WATCH fallback) is
    // kilobytes, and without the box every write's future would carry it,
    // and copy it at each await, in process too where it never runs.
    Box::pin(run_sent(db, conflict_key, guards, base, decide)).await
}

/// [`run`] on a server (or in the cluster layout): attempts on guessed
/// or read replies, each checked by the script that writes, and the
/// WATCH path where scripts are refused.
async fn run_sent<T: FromRedisValue>(
    db: &Db,
    conflict_key: &str,
    guards: &[&str],
    base: &[Write<'_>],
    decide: &impl Decide,
) -> Result<T> {
    let mut guess = decide.first_guess();
    for attempt in 1..=MAX_ATTEMPTS {
        let recorder = Recorder::new(db, std::mem::replace(&mut guess, Guess::Nothing));
        let decided = decide.decide(&recorder).await;
        let extra = match decided {
            Ok(extra) => extra,
            Err(_) if recorder.guessed() => continue,
            Err(err) => return Err(err),
        };
        match recorder
            .commit::<T>(
                guards,
                Some(conflict_key),
                &decided_writes(base, &extra, decide.keeps()),
            )
            .await?
        {
            Checked::Done(out) => return Ok(out),
            Checked::Unsupported => break,
            Checked::Changed(_) if attempt == MAX_ATTEMPTS => {
                return Err(Error::Conflict {
                    attempts: MAX_ATTEMPTS,
                    key: Some(plain_key(conflict_key)),
                })
            }
            // The reply told the loser what the winner wrote: retry at
            // once on that, without a pause until collisions repeat.
            Checked::Changed(facts) => {
                guess = Guess::Replied(facts);
                if attempt <= 8 {
                    tokio::task::yield_now().await
                } else {
                    pause_before_retry(attempt - 8).await
                }
            }
        }
    }
    watched(db, conflict_key, |tx| async move {
        // The guards are WATCHed with the reads: one deleted before the
        // EXEC aborts the attempt, and the next one sees it gone.
        tx.watch_guards(guards).await?;
        let extra = decide.decide(&tx).await?;
        let mut txn = redis::pipe();
        txn.atomic();
        for write in base {
            txn.add_command(write.to_cmd());
            if !write.keep {
                txn.ignore();
            }
        }
        if decide.keeps() {
            for cmd in extra {
                txn.add_command(cmd);
            }
        } else {
            txn.ignored(extra);
        }
        tx.exec_whole::<T>(&txn).await
    })
    .await
}

/// Writes `writes` only if the replies of `reads` satisfy `when`, as one
/// atomic unit ([`run`]; `watch`, the keys that `reads` read, are what
/// the WATCH path watches). Whether it wrote. The compare-and-set that
/// repairs and prunes make: "delete this if its owner is still gone".
pub(crate) async fn write_if(
    db: &Db,
    conflict_key: &str,
    watch: &[&str],
    reads: &[Cmd],
    when: &(dyn Fn(&[Value]) -> Result<bool> + Sync),
    writes: &[Cmd],
) -> Result<bool> {
    let write_if = WriteIf {
        watch,
        reads,
        when,
        writes,
        wrote: AtomicBool::new(false),
    };
    run::<()>(db, conflict_key, &[], &[], &write_if).await?;
    Ok(write_if.wrote.into_inner())
}

/// [`write_if`]'s decision.
struct WriteIf<'a> {
    watch: &'a [&'a str],
    reads: &'a [Cmd],
    when: &'a (dyn Fn(&[Value]) -> Result<bool> + Sync),
    writes: &'a [Cmd],
    wrote: AtomicBool,
}

impl Decide for WriteIf<'_> {
    async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
        let replies = reader.read(self.watch, self.reads.to_vec(), true).await?;
        let write = (self.when)(&replies)?;
        self.wrote.store(write, Ordering::Relaxed);
        Ok(if write {
            self.writes.to_vec()
        } else {
            Vec::new()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Owned as _;

    /// A decision that copies the value of `from` to `to`, read as the
    /// `apart` read if set, else through the checked read.
    struct CopyValue<'a> {
        db: &'a Db,
        apart: bool,
    }

    impl Decide for CopyValue<'_> {
        async fn decide<R: Reader>(&self, reader: &R) -> Result<Vec<Cmd>> {
            let get = cmd("GET").arg("from").owned();
            let value: Option<String> = if self.apart {
                reader.read_apart(self.db, &get).await?
            } else {
                let reply = reader.read(&["from"], vec![get], false).await?;
                redis::from_redis_value(reply.into_iter().next().unwrap_or(Value::Nil))
                    .map_err(redis::RedisError::from)?
            };
            Ok(vec![cmd("SET")
                .arg("to")
                .arg(value.unwrap_or_default())
                .owned()])
        }
    }

    #[tokio::test]
    async fn a_decision_in_process_reads_and_writes_in_one_exchange() {
        for apart in [false, true] {
            let db = Db::memory();
            db.query::<()>(cmd("SET").arg("from").arg("x"))
                .await
                .unwrap();
            let before = db.round_trips();
            run::<()>(&db, "to", &[], &[], &CopyValue { db: &db, apart })
                .await
                .unwrap();
            assert_eq!(db.round_trips() - before, 1, "apart: {apart}");
            let to: Option<String> = db.query(cmd("GET").arg("to")).await.unwrap();
            assert_eq!(to.as_deref(), Some("x"), "apart: {apart}");
        }
    }

    /// A decision that reads through the `Db` itself, not its reader.
    struct Astray<'a>(&'a Db);

    impl Decide for Astray<'_> {
        async fn decide<R: Reader>(&self, _reader: &R) -> Result<Vec<Cmd>> {
            let _: Option<String> = self.0.query(&cmd("GET").arg("from").owned()).await?;
            Ok(Vec::new())
        }
    }

    #[cfg(debug_assertions)]
    #[tokio::test]
    #[should_panic(expected = "read through the Db instead of its Reader")]
    async fn a_decision_reading_through_the_db_under_the_lock_panics_rather_than_waits() {
        let db = Db::memory();
        run::<()>(&db, "to", &[], &[], &Astray(&db)).await.unwrap();
    }
}
