//! What a `Db` last saw of the few values its checked writes read: the
//! indexed fields of the objects it wrote and the holders of the unique
//! entries it claimed or gave up.
//!
//! A unique or tag write must know the old value and the entries' holders
//! before it can decide what to claim and release, and reading them costs
//! a round trip before the write's own ([`checked`](super::checked)). Yet
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
//! key) and bounded ([`CAPACITY`], least recently used out first).

use std::num::NonZeroUsize;

use lru::LruCache;
use parking_lot::Mutex;
use redis::{Arg, Cmd, Value};

/// How many values a `Db` remembers: enough for the objects a busy
/// process writes repeatedly, a few MB at most.
const CAPACITY: usize = 16 * 1024;

/// One remembered value: a hash field (`HGET key field`, `HMGET`), or the
/// head of a list (`LINDEX key 0`, a unique entry's holder).
#[derive(Hash, PartialEq, Eq)]
enum Fact {
    Field(Vec<u8>, Vec<u8>),
    Head(Vec<u8>),
}

/// The values last seen, shared by a `Db`'s clones: `None` for a value
/// seen absent.
pub(crate) struct Recall {
    seen: Mutex<LruCache<Fact, Option<Vec<u8>>>>,
}

impl Default for Recall {
    fn default() -> Self {
        let capacity = NonZeroUsize::new(CAPACITY).unwrap_or(NonZeroUsize::MIN);
        Recall {
            seen: Mutex::new(LruCache::new(capacity)),
        }
    }
}

/// How a reader answers reads it has not seen.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Guess {
    /// From what was seen, else as absent: a first attempt.
    Absent,
    /// From what was seen, else by reading: an attempt after a wrong
    /// guess, which has just seen what its first attempt read.
    Seen,
    /// Nothing guessed, everything read: where a decision would end the
    /// write without writing (a refusal), which must not rest on a guess.
    Nothing,
}

impl Recall {
    /// The reply `cmd` is guessed to get, or `None` where it must be read:
    /// a read this module knows, each value from what was seen, else
    /// absent if `guess` allows it.
    pub(crate) fn guess(&self, cmd: &Cmd, guess: Guess) -> Option<Value> {
        if guess == Guess::Nothing {
            return None;
        }
        let mut seen = self.seen.lock();
        let mut one = |fact: Fact| match seen.get(&fact) {
            Some(Some(text)) => Some(Value::BulkString(text.clone())),
            Some(None) => Some(Value::Nil),
            None if guess == Guess::Absent => Some(Value::Nil),
            None => None,
        };
        match parse(cmd)? {
            Read::Fields(key, fields) => {
                let values: Option<Vec<Value>> = fields
                    .into_iter()
                    .map(|f| one(Fact::Field(key.to_vec(), f.to_vec())))
                    .collect();
                values.map(Value::Array)
            }
            Read::Field(key, field) => one(Fact::Field(key.to_vec(), field.to_vec())),
            Read::Head(key) => one(Fact::Head(key.to_vec())),
        }
    }

    /// Remembers what `cmd` replied (`reply`), if it is a read this
    /// module knows and the reply is one of its values (an error or an
    /// unexpected shape forgets what was seen instead).
    pub(crate) fn saw(&self, cmd: &Cmd, reply: &Value) {
        let Some(read) = parse(cmd) else { return };
        let mut seen = self.seen.lock();
        let mut put = |fact: Fact, value: Option<&Value>| match value.and_then(text) {
            Some(text) => {
                seen.put(fact, text);
            }
            None => {
                seen.pop(&fact);
            }
        };
        match (read, reply) {
            (Read::Fields(key, fields), Value::Array(values)) if values.len() == fields.len() => {
                for (field, value) in fields.into_iter().zip(values) {
                    put(Fact::Field(key.to_vec(), field.to_vec()), Some(value));
                }
            }
            (Read::Fields(key, fields), _) => {
                for field in fields {
                    put(Fact::Field(key.to_vec(), field.to_vec()), None);
                }
            }
            (Read::Field(key, field), value) => {
                put(Fact::Field(key.to_vec(), field.to_vec()), Some(value))
            }
            (Read::Head(key), value) => put(Fact::Head(key.to_vec()), Some(value)),
        }
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
    Fields(&'a [u8], Vec<&'a [u8]>),
    Field(&'a [u8], &'a [u8]),
    Head(&'a [u8]),
}

fn parse(cmd: &Cmd) -> Option<Read<'_>> {
    let mut args = cmd.args_iter().map(|a| match a {
        Arg::Simple(bytes) => Some(bytes),
        _ => None,
    });
    let name = args.next()??;
    let key = args.next()??;
    let rest: Option<Vec<&[u8]>> = args.collect();
    let rest = rest?;
    if name.eq_ignore_ascii_case(b"HMGET") && !rest.is_empty() {
        Some(Read::Fields(key, rest))
    } else if name.eq_ignore_ascii_case(b"HGET") && rest.len() == 1 {
        Some(Read::Field(key, rest[0]))
    } else if name.eq_ignore_ascii_case(b"LINDEX") && rest == [b"0"] {
        Some(Read::Head(key))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hmget() -> Cmd {
        redis::cmd("HMGET").arg("p:1").arg("name").arg("tags").clone()
    }

    #[test]
    fn unseen_values_are_guessed_absent_only_on_a_first_attempt() {
        let recall = Recall::default();
        assert_eq!(
            recall.guess(&hmget(), Guess::Absent),
            Some(Value::Array(vec![Value::Nil, Value::Nil]))
        );
        assert_eq!(recall.guess(&hmget(), Guess::Seen), None);
        assert_eq!(recall.guess(&hmget(), Guess::Nothing), None);
        let other = redis::cmd("SMEMBERS").arg("s").clone();
        assert_eq!(recall.guess(&other, Guess::Absent), None);
    }

    #[test]
    fn seen_values_answer_later_reads_field_by_field() {
        let recall = Recall::default();
        recall.saw(
            &hmget(),
            &Value::Array(vec![Value::BulkString(b"ann".to_vec()), Value::Nil]),
        );
        let name = redis::cmd("HGET").arg("p:1").arg("name").clone();
        assert_eq!(
            recall.guess(&name, Guess::Seen),
            Some(Value::BulkString(b"ann".to_vec()))
        );
        let tags = redis::cmd("HMGET").arg("p:1").arg("tags").clone();
        assert_eq!(
            recall.guess(&tags, Guess::Seen),
            Some(Value::Array(vec![Value::Nil]))
        );
        let head = redis::cmd("LINDEX").arg("p:_unique:name:ann").arg(0).clone();
        recall.saw(&head, &Value::BulkString(b"p:1".to_vec()));
        assert_eq!(
            recall.guess(&head, Guess::Seen),
            Some(Value::BulkString(b"p:1".to_vec()))
        );
        // An error forgets: the next attempt reads.
        recall.saw(&name, &Value::Int(3));
        assert_eq!(recall.guess(&name, Guess::Seen), None);
    }
}
