//! What a `Db` last saw of the few values its checked writes read: the
//! indexed fields of the objects it wrote, the holders of the unique
//! entries it claimed or gave up, and the tokens of the locks it took.
//!
//! A unique or tag write must know the old value and the entries' holders
//! before it can decide what to claim and release, and reading them costs
//! a round trip before the write's own ([`checked`](crate::db::plan::checked)). Yet
//! the writer usually knows them already: an insert finds nothing (a new
//! object, a free value), and a change finds what the same `Db` wrote or
//! saw last. So a checked write first *guesses* its reads from here (what
//! was seen, else "absent") and sends the write at once, conditioned on
//! those guesses: the script checks every one atomically, as it checks
//! real reads. A wrong guess writes nothing and costs what the read would
//! have cost, one round trip, whose reply carries the actual values; they
//! are remembered here, and the next attempt decides on them.
//!
//! Nothing here is trusted: a stale or evicted entry only costs that one
//! round trip. What is remembered is small (one entry per field or entry
//! key) and bounded ([`CAPACITY`], least recently used out first). So the
//! values are found by a 64-bit fingerprint of what they are the value of,
//! not by the key and field bytes themselves: a guess allocates nothing,
//! and the rare two facts with one fingerprint only make a wrong guess.

use std::num::NonZeroUsize;
use std::sync::LazyLock;

use lru::LruCache;
use parking_lot::Mutex;
use redis::{Cmd, Value};
use smallvec::SmallVec;

/// How many values a `Db` remembers: enough for the objects a busy
/// process writes repeatedly, a few MB at most.
const CAPACITY: usize = 16 * 1024;

/// What a remembered value is the value of: a hash field (`HGET key
/// field`, `HMGET`), or the head of a list (`LINDEX key 0`, a unique
/// entry's holder), borrowed from a command or a reply.
#[derive(Clone, Copy)]
struct FactRef<'a> {
    key: &'a [u8],
    /// The hash field, or `None` for a list's head.
    field: Option<&'a [u8]>,
}

/// A [`FactRef`] by its fingerprints: of its key alone (what a command on
/// the key changes), and of the fact (what it is remembered by). Nothing
/// to allocate or compare byte by byte; two facts with one fingerprint
/// only make a wrong guess, which the script catches.
#[derive(Clone, Copy, PartialEq)]
struct Fact {
    key: u64,
    print: u64,
}

/// Fingerprints differ from process to process.
static SEED: LazyLock<foldhash::fast::RandomState> = LazyLock::new(Default::default);

/// The fingerprint of `key`'s bytes.
fn key_print(key: &[u8]) -> u64 {
    use std::hash::BuildHasher as _;
    SEED.hash_one(key)
}

impl FactRef<'_> {
    /// The fingerprint of the fact: its key and field, each with its
    /// length (so that no two facts' bytes run together the same way).
    fn print(self) -> u64 {
        use std::hash::{BuildHasher as _, Hash as _, Hasher as _};
        let mut h = SEED.build_hasher();
        self.key.hash(&mut h);
        self.field.hash(&mut h);
        h.finish()
    }

    fn fact(self) -> Fact {
        Fact {
            key: key_print(self.key),
            print: self.print(),
        }
    }
}

/// The values last seen, shared by a `Db`'s clones, by the fingerprint of
/// what they are the value of: `None` for a value seen absent.
pub(crate) struct Recall {
    seen: Mutex<LruCache<u64, Option<Vec<u8>>, foldhash::fast::FixedState>>,
}

impl Default for Recall {
    fn default() -> Self {
        let capacity = NonZeroUsize::new(CAPACITY).unwrap_or(NonZeroUsize::MIN);
        Recall {
            seen: Mutex::new(LruCache::with_hasher(capacity, Default::default())),
        }
    }
}

/// Where a checked write's reads are answered from.
pub(crate) enum Guess {
    /// From what the `Db` remembers, else as absent: a first attempt.
    /// Guesses: the script checks them, but a decision that ends the
    /// write without a script (a refusal) must not rest on them.
    Absent,
    /// From what the script of the previous attempt replied instead of
    /// writing (the actual values of its reads), else by reading: as good
    /// as reads.
    Replied(Facts),
    /// From what the caller expects the reads it names to reply (a state
    /// it has just set), else by reading: guesses the script checks.
    Given(Given),
    /// Everything read.
    Nothing,
}

/// The replies a decision expects of some reads, by command ([`Guess::Given`]).
pub(crate) struct Given(pub(crate) Vec<(Cmd, Value)>);

impl Given {
    /// The reply expected of `cmd`, if it is one of these reads.
    pub(crate) fn answer(&self, cmd: &Cmd) -> Option<Value> {
        self.0
            .iter()
            .find(|(read, _)| crate::command::same(read, cmd))
            .map(|(_, reply)| reply.clone())
    }
}

/// Values as of one moment: what a checked write's script replied. A
/// write reads a few values (its object's indexed fields, an entry or
/// two), so they are a short list searched in place, by fingerprint: a
/// lookup by borrowed key and field allocates nothing. A value not known
/// (a read's error reply, or one a write made unknown: [`apply`](Facts::apply))
/// stays in the list as `None`, to be forgotten where it was remembered.
#[derive(Clone, Default)]
pub(crate) struct Facts(Vec<(Fact, Option<Option<Vec<u8>>>)>);

impl Facts {
    /// The values in the replies of `reads`.
    pub(crate) fn of<'r>(reads: impl IntoIterator<Item = (&'r Cmd, &'r Value)>) -> Facts {
        let mut facts = Facts::default();
        for (cmd, reply) in reads {
            learn(cmd, reply, |fact, value| {
                let fact = fact.fact();
                match facts.0.iter_mut().find(|(f, _)| *f == fact) {
                    Some((_, held)) => *held = value,
                    None => facts.0.push((fact, value)),
                }
            });
        }
        facts
    }

    /// The reply `cmd` gets from these values, or `None` where it must be
    /// read.
    pub(crate) fn answer(&self, cmd: &Cmd) -> Option<Value> {
        answer(cmd, |fact| self.get(fact.key, fact.field).cloned(), false)
    }

    /// The value held of `key`'s `field` (`None`: its list's head).
    fn get(&self, key: &[u8], field: Option<&[u8]>) -> Option<&Option<Vec<u8>>> {
        let print = FactRef { key, field }.print();
        self.0
            .iter()
            .find(|(f, _)| f.print == print)
            .and_then(|(_, v)| v.as_ref())
    }

    fn get_mut(&mut self, key: &[u8], field: Option<&[u8]>) -> Option<&mut Option<Vec<u8>>> {
        let print = FactRef { key, field }.print();
        self.0
            .iter_mut()
            .find(|(f, _)| f.print == print)
            .and_then(|(_, v)| v.as_mut())
    }

    /// Makes the values matching `unknown` unknown.
    fn forget(&mut self, unknown: impl Fn(&Fact) -> bool) {
        for (fact, value) in &mut self.0 {
            if unknown(fact) {
                *value = None;
            }
        }
    }

    /// Applies what the write `cmd` does to the values held here: a hash
    /// field set or removed, a list's head pushed, a key deleted. A
    /// command whose effect is not followed here forgets what it may
    /// change (every value of its key; an increment, just its field).
    /// Values not held stay unknown: only what was read is followed.
    pub(crate) fn apply(&mut self, cmd: &Cmd) {
        let mut args = crate::command::args(cmd);
        let (Some(Some(name)), Some(Some(key))) = (args.next(), args.next()) else {
            return;
        };
        let is = |command: &str| name.eq_ignore_ascii_case(command.as_bytes());
        // Most of a write's commands are its indexes', on keys it did not
        // read: nothing to follow.
        let print = key_print(key);
        if !(is("DEL") || is("UNLINK") || self.0.iter().any(|(f, _)| f.key == print)) {
            return;
        }
        let Some(rest) = args.collect::<Option<Args<'_>>>() else {
            return self.forget(|_| true);
        };
        if (is("HSET") || is("HMSET")) && rest.len() % 2 == 0 {
            for pair in rest.chunks_exact(2) {
                if let Some(held) = self.get_mut(key, Some(pair[0])) {
                    *held = Some(pair[1].to_vec());
                }
            }
        } else if is("HDEL") {
            for field in &rest {
                if let Some(held) = self.get_mut(key, Some(field)) {
                    *held = None;
                }
            }
        } else if (is("HINCRBY") || is("HINCRBYFLOAT")) && rest.len() == 2 {
            let field = FactRef {
                key,
                field: Some(rest[0]),
            }
            .print();
            self.forget(|f| f.print == field);
        } else if is("PEXPIRE") || is("EXPIRE") || is("PERSIST") {
            // A key's time to live is not a value remembered here.
        } else if is("LTRIM") && rest.len() == 2 && rest[0] == b"0" && !rest[1].starts_with(b"-") {
            // Kept from the head on: a list's head stays (a unique entry
            // brought down to one copy).
        } else if is("DEL") || is("UNLINK") {
            let gone: SmallVec<[u64; 4]> = rest.iter().map(|k| key_print(k)).collect();
            for (fact, held) in &mut self.0 {
                if (fact.key == print || gone.contains(&fact.key))
                    && let Some(held) = held
                {
                    *held = None;
                }
            }
        } else if is("RPUSH") && !rest.is_empty() {
            // A push onto an empty list makes its first value the head;
            // RPUSH onto a list that has one leaves it.
            if let Some(head @ None) = self.get_mut(key, None) {
                *head = Some(rest[0].to_vec());
            }
        } else if let (true, Some(last)) = (is("LPUSH"), rest.last()) {
            if let Some(head) = self.get_mut(key, None) {
                *head = Some(last.to_vec());
            }
        } else {
            // Any other write forgets its key's values. (Only its first
            // argument's: the others are members and values, often other
            // objects' keys. A multi-key command would leave a stale value
            // here, which costs a wrong guess, one round trip, no more.)
            self.forget(|f| f.key == print);
        }
    }
}

impl Recall {
    /// Remembers `facts`, and forgets the values they do not know: what
    /// a read found, or what a checked write read as it is after the write
    /// (its script's findings with its writes applied, [`Facts::apply`]:
    /// what the script would have read back, without reading).
    pub(crate) fn remember(&self, facts: Facts) {
        let mut seen = self.seen.lock();
        for (fact, value) in facts.0 {
            match value {
                Some(value) => {
                    seen.put(fact.print, value);
                }
                None => {
                    seen.pop(&fact.print);
                }
            }
        }
    }

    /// The reply `cmd` is guessed to get: each value from what was seen,
    /// else absent; `None` for a read this module does not know.
    pub(crate) fn guess(&self, cmd: &Cmd) -> Option<Value> {
        let mut seen = self.seen.lock();
        answer(cmd, |fact| seen.get(&fact.print()).cloned(), true)
    }

    /// Remembers what `cmd` replied (`reply`), if it is a read this
    /// module knows (an error or an unexpected shape forgets what was seen
    /// instead).
    pub(crate) fn saw(&self, cmd: &Cmd, reply: &Value) {
        self.remember(Facts::of([(cmd, reply)]));
    }
}

/// The reply `cmd` gets where nothing is known, every value absent;
/// `None` for a read this module does not know.
pub(crate) fn absent(cmd: &Cmd) -> Option<Value> {
    answer(cmd, |_| None, true)
}

/// Whether `reply` is what `cmd` gets where nothing is known ([`absent`]);
/// a read this module does not know gets nil.
pub(crate) fn is_absent(cmd: &Cmd, reply: &Value) -> bool {
    match (parse(cmd), reply) {
        (Some(Read::Fields(_, fields)), Value::Array(values)) => {
            values.len() == fields.len() && values.iter().all(|v| *v == Value::Nil)
        }
        (Some(Read::Holder(..)), Value::Array(values)) => values.is_empty(),
        (Some(Read::Field(..) | Read::Head(_)) | None, reply) => *reply == Value::Nil,
        _ => false,
    }
}

/// The reply of `cmd` from `known` values: a value not known is absent if
/// `unknown_absent`, else the whole reply is `None` (to be read), as for
/// a read this module does not know.
fn answer(
    cmd: &Cmd,
    mut known: impl FnMut(FactRef<'_>) -> Option<Option<Vec<u8>>>,
    unknown_absent: bool,
) -> Option<Value> {
    let mut one = |key, field| match known(FactRef { key, field }) {
        Some(value) => Some(value.map_or(Value::Nil, Value::BulkString)),
        None if unknown_absent => Some(Value::Nil),
        None => None,
    };
    match parse(cmd)? {
        Read::Fields(key, fields) => fields
            .into_iter()
            .map(|f| one(key, Some(f)))
            .collect::<Option<Vec<Value>>>()
            .map(Value::Array),
        Read::Field(key, field) => one(key, Some(field)),
        Read::Head(key) => one(key, None),
        // The entry's holder, then the holder's field: an empty reply
        // for a free value.
        Read::Holder(key, field) => match one(key, None)? {
            Value::BulkString(holder) => {
                let value = one(&holder, Some(field))?;
                Some(Value::Array(vec![Value::BulkString(holder), value]))
            }
            _ => Some(Value::Array(Vec::new())),
        },
    }
}

/// Calls `put` with each value `reply` gives of the read `cmd`: `Some`
/// value (`Some(None)`: absent), or `None` where the reply is not a value
/// (an error), which unlearns it.
fn learn(cmd: &Cmd, reply: &Value, mut put: impl FnMut(FactRef<'_>, Option<Option<Vec<u8>>>)) {
    let Some(read) = parse(cmd) else { return };
    let field = |key, field| FactRef {
        key,
        field: Some(field),
    };
    let head = |key| FactRef { key, field: None };
    match (read, reply) {
        (Read::Fields(key, fields), Value::Array(values)) if values.len() == fields.len() => {
            for (name, value) in fields.into_iter().zip(values) {
                put(field(key, name), text(value));
            }
        }
        (Read::Fields(key, fields), _) => {
            for name in fields {
                put(field(key, name), None);
            }
        }
        (Read::Field(key, name), value) => put(field(key, name), text(value)),
        (Read::Head(key), value) => put(head(key), text(value)),
        (Read::Holder(key, name), Value::Array(values)) => match values.as_slice() {
            [] => put(head(key), Some(None)),
            [Value::BulkString(holder), value] => {
                put(head(key), Some(Some(holder.clone())));
                put(field(holder, name), text(value));
            }
            _ => put(head(key), None),
        },
        (Read::Holder(key, _), _) => put(head(key), None),
    }
}

/// A value as remembered: `Some(None)` for absent (nil), `None` for a
/// reply that is not a value.
fn text(reply: &Value) -> Option<Option<Vec<u8>>> {
    match reply {
        Value::Nil => Some(None),
        Value::BulkString(text) => Some(Some(text.clone())),
        _ => None,
    }
}

/// The reads this module remembers.
enum Read<'a> {
    /// `HMGET key field...`
    Fields(&'a [u8], Args<'a>),
    /// `HGET key field`
    Field(&'a [u8], &'a [u8]),
    /// `LINDEX key 0`, or `GET key`: the one value a key stands for (a
    /// unique entry's holder, a lock's token), remembered as one fact
    /// whichever command read it; a key is a list or a string, not both.
    Head(&'a [u8]),
    /// `SORT_RO key BY nosort LIMIT 0 1 GET # GET *->field`: the list's head
    /// and that hash's field (a unique entry's holder and its value).
    Holder(&'a [u8], &'a [u8]),
}

/// A read's arguments after its key: on the stack for the usual few (a
/// write parses each of its reads several times: to guess, to learn, to
/// apply its commands).
type Args<'a> = SmallVec<[&'a [u8]; 12]>;

fn parse(cmd: &Cmd) -> Option<Read<'_>> {
    let mut args = crate::command::args(cmd);
    let name = args.next()??;
    let key = args.next()??;
    let rest: Args<'_> = args.collect::<Option<_>>()?;
    if name.eq_ignore_ascii_case(b"HMGET") && !rest.is_empty() {
        Some(Read::Fields(key, rest))
    } else if name.eq_ignore_ascii_case(b"HGET") && rest.len() == 1 {
        Some(Read::Field(key, rest[0]))
    } else if (name.eq_ignore_ascii_case(b"LINDEX") && rest[..] == [b"0"])
        || (name.eq_ignore_ascii_case(b"GET") && rest.is_empty())
    {
        Some(Read::Head(key))
    } else if name.eq_ignore_ascii_case(b"SORT_RO") {
        match rest.as_slice() {
            [b"BY", b"nosort", b"LIMIT", b"0", b"1", b"GET", b"#", b"GET", pattern] => pattern
                .strip_prefix(b"*->")
                .map(|field| Read::Holder(key, field)),
            _ => None,
        }
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Owned;

    fn hmget() -> Cmd {
        crate::command::cmd("HMGET")
            .arg("p:1")
            .arg("name")
            .arg("tags")
            .clone()
    }

    #[test]
    fn unseen_values_are_guessed_absent() {
        let recall = Recall::default();
        assert_eq!(
            recall.guess(&hmget()),
            Some(Value::Array(vec![Value::Nil, Value::Nil]))
        );
        let other = crate::command::cmd("SMEMBERS").arg("s").owned();
        assert_eq!(recall.guess(&other), None);
    }

    #[test]
    fn seen_values_answer_later_reads_field_by_field() {
        let recall = Recall::default();
        let ann = Value::Array(vec![Value::BulkString(b"ann".to_vec()), Value::Nil]);
        recall.saw(&hmget(), &ann);
        let name = crate::command::cmd("HGET").arg("p:1").arg("name").owned();
        assert_eq!(
            recall.guess(&name),
            Some(Value::BulkString(b"ann".to_vec()))
        );
        let tags = crate::command::cmd("HMGET").arg("p:1").arg("tags").owned();
        assert_eq!(recall.guess(&tags), Some(Value::Array(vec![Value::Nil])));
        let head = crate::command::cmd("LINDEX")
            .arg("p:_unique:name:ann")
            .arg(0)
            .clone();
        recall.saw(&head, &Value::BulkString(b"p:1".to_vec()));
        assert_eq!(
            recall.guess(&head),
            Some(Value::BulkString(b"p:1".to_vec()))
        );
        // An error forgets: the value is guessed absent again.
        recall.saw(&name, &Value::Int(3));
        assert_eq!(recall.guess(&name), Some(Value::Nil));
    }

    #[test]
    fn an_entry_and_its_holder_are_remembered_together() {
        let recall = Recall::default();
        let sort =
            crate::model::index::unique::holder_and_field_command("p:_unique:name:ann", "name");
        assert_eq!(
            recall.guess(&sort),
            Some(Value::Array(vec![])),
            "free, as guessed"
        );
        let held = Value::Array(vec![
            Value::BulkString(b"p:1".to_vec()),
            Value::BulkString(b"ann".to_vec()),
        ]);
        recall.saw(&sort, &held);
        assert_eq!(recall.guess(&sort), Some(held));
        let name = crate::command::cmd("HGET").arg("p:1").arg("name").owned();
        assert_eq!(
            recall.guess(&name),
            Some(Value::BulkString(b"ann".to_vec()))
        );
        // The holder moved on: the entry's read follows.
        recall.saw(&name, &Value::BulkString(b"bob".to_vec()));
        assert_eq!(
            recall.guess(&sort),
            Some(Value::Array(vec![
                Value::BulkString(b"p:1".to_vec()),
                Value::BulkString(b"bob".to_vec())
            ]))
        );
    }

    #[test]
    fn a_write_is_followed_on_the_values_it_read() {
        let recall = Recall::default();
        let entry = "p:_unique:name:bob";
        let sort = crate::model::index::unique::holder_and_field_command(entry, "name");
        let mut facts = Facts::of([
            (
                &hmget(),
                &Value::Array(vec![Value::BulkString(b"ann".to_vec()), Value::Nil]),
            ),
            (&sort, &Value::Array(vec![])),
        ]);
        for cmd in [
            crate::command::cmd("HSET")
                .arg("p:1")
                .arg("name")
                .arg("bob")
                .arg("age")
                .arg(3)
                .clone(),
            crate::command::cmd("HINCRBY")
                .arg("p:1")
                .arg("_count")
                .arg(1)
                .clone(),
            crate::command::cmd("DEL").arg(entry).owned(),
            crate::command::cmd("RPUSH").arg(entry).arg("p:1").owned(),
            crate::command::cmd("DEL").arg("p:_unique:name:ann").owned(),
            crate::command::cmd("SADD")
                .arg("p:_tags:x")
                .arg("p:1")
                .clone(),
        ] {
            facts.apply(&cmd);
        }
        recall.remember(facts);
        // What the script would have read back: the new value, held by
        // the object; a field not read stays unknown (guessed absent).
        assert_eq!(
            recall.guess(&sort),
            Some(Value::Array(vec![
                Value::BulkString(b"p:1".to_vec()),
                Value::BulkString(b"bob".to_vec())
            ]))
        );
        assert_eq!(
            recall.guess(&hmget()),
            Some(Value::Array(vec![
                Value::BulkString(b"bob".to_vec()),
                Value::Nil
            ]))
        );
        // An increment of a field read forgets it; a delete makes the
        // key's values absent; an expiry keeps them; a command not
        // followed forgets its keys'.
        let name = crate::command::cmd("HGET").arg("p:1").arg("name").owned();
        for (cmd, want) in [
            (
                crate::command::cmd("HINCRBYFLOAT")
                    .arg("p:1")
                    .arg("name")
                    .arg(1)
                    .clone(),
                None,
            ),
            (crate::command::cmd("DEL").arg("p:1").owned(), Some(None)),
            (
                crate::command::cmd("PEXPIRE").arg("p:1").arg(5).owned(),
                Some(Some(b"bob".to_vec())),
            ),
            (
                crate::command::cmd("RENAME").arg("p:1").arg("p:2").owned(),
                None,
            ),
            (
                crate::command::cmd("HDEL").arg("p:1").arg("name").owned(),
                Some(None),
            ),
        ] {
            let mut facts = Facts::of([(&name, &Value::BulkString(b"bob".to_vec()))]);
            facts.apply(&cmd);
            assert_eq!(facts.get(b"p:1", Some(b"name")), want.as_ref());
        }
        // LPUSH makes its last value the head; RPUSH onto a held list
        // leaves the head.
        let head = crate::command::cmd("LINDEX").arg("l").arg(0).owned();
        let mut facts = Facts::of([(&head, &Value::BulkString(b"a".to_vec()))]);
        facts.apply(&crate::command::cmd("RPUSH").arg("l").arg("z").owned());
        assert_eq!(facts.answer(&head), Some(Value::BulkString(b"a".to_vec())));
        facts.apply(
            &crate::command::cmd("LPUSH")
                .arg("l")
                .arg("b")
                .arg("c")
                .clone(),
        );
        assert_eq!(facts.answer(&head), Some(Value::BulkString(b"c".to_vec())));
        // LTRIM from the head keeps it; from elsewhere, it forgets.
        let trim = |start: &str, stop: &str| {
            crate::command::cmd("LTRIM")
                .arg("l")
                .arg(start)
                .arg(stop)
                .clone()
        };
        facts.apply(&trim("0", "0"));
        assert_eq!(facts.answer(&head), Some(Value::BulkString(b"c".to_vec())));
        facts.apply(&trim("1", "-1"));
        assert_eq!(facts.answer(&head), None);
    }

    #[test]
    fn replied_facts_answer_only_what_they_hold() {
        let ann = Value::Array(vec![Value::BulkString(b"ann".to_vec()), Value::Nil]);
        let facts = Facts::of([(&hmget(), &ann)]);
        let name = crate::command::cmd("HGET").arg("p:1").arg("name").owned();
        assert_eq!(
            facts.answer(&name),
            Some(Value::BulkString(b"ann".to_vec()))
        );
        let other = crate::command::cmd("HMGET")
            .arg("p:1")
            .arg("name")
            .arg("city")
            .clone();
        assert_eq!(facts.answer(&other), None, "city must be read");
    }
}
