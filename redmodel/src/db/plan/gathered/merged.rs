//! A gathering's transaction with its index commands merged: the `SADD`s
//! of its writes to one tag's set go as one `SADD` of many members, their
//! `ZADD`s to one sorted index as one `ZADD` of many pairs.
//!
//! Why: on a server each command of a MULTI costs a parse, a `+QUEUED`
//! reply and a call of its own, and the client parses both replies; a
//! bulk write of objects with a sorted and two tag indexes sends five
//! commands per object, three of them to a handful of shared index keys.
//! Merged, the transaction holds about two commands per object.
//!
//! What keeps it the same transaction:
//!
//! - only commands whose reply no one keeps are merged, and only `SADD`,
//!   `SREM`, `ZADD` (plain pairs, without flags) and `ZREM`, whose effect
//!   is the same as one command or many in a row;
//! - a command joins the last command sent to its key, and only when that
//!   one is the same mergeable command: each key's commands keep their
//!   order, and nothing else runs between them within the EXEC;
//! - a command that may touch keys other than its first argument (not a
//!   known single-key command) is a barrier: nothing after it joins a
//!   command before it.
//!
//! A merged command's reply (how many members it added) stands for each
//! write that joined it; an error in it (a key whose type changed after
//! the gathering read it) is each of those writes' error.

use std::collections::HashMap;
use std::hash::BuildHasher;

use redis::{Cmd, Pipeline};
#[cfg(test)]
use smallvec::SmallVec;

use super::super::{types, Write};
#[cfg(test)]
use crate::command::args;

type Fast = foldhash::fast::FixedState;

/// Where one write's command went in the transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Place {
    /// The transaction's command, by position: also its reply's.
    pub(super) at: usize,
    /// For a mergeable command, where its own arguments (after the key)
    /// are among that command's, as (first, how many); `None` for a
    /// command sent whole.
    pub(super) args: Option<(usize, usize)>,
    /// Whether the write keeps its reply (it is then never merged).
    pub(super) keep: bool,
}

/// A transaction (MULTI/EXEC, errors returned as replies), and where
/// each write's command went in it.
pub(super) struct Merged {
    pub(super) pipe: Pipeline,
    /// One per write, in the order given.
    pub(super) places: Vec<Place>,
}

/// The commands that merge: same name, same key, in a row for that key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sadd,
    Srem,
    Zadd,
    Zrem,
}

/// The `ZADD` flags: a `ZADD` with one is sent whole.
const ZADD_FLAGS: [&[u8]; 6] = [b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR"];

/// Builds the transaction of `writes`, each a command and whether its
/// reply is kept, merging what may be merged (see the module docs). The
/// writes are borrowed: a command sent whole, or the first of a merged
/// one, is copied; the others lend only their arguments.
pub(super) fn merge<'a>(writes: impl IntoIterator<Item = Write<'a>>) -> Merged {
    let writes = writes.into_iter();
    let (count, _) = writes.size_hint();
    let mut cmds: Vec<Cmd> = Vec::with_capacity(count);
    // Per command sent, the kind it merges as, while it is its key's last.
    let mut kinds: Vec<Option<Kind>> = Vec::with_capacity(count);
    let mut places = Vec::with_capacity(count);
    // A key's hash to its last command: a collision only misses a merge,
    // since an entry is always checked against the key it names, and is
    // always the last command of any key with its hash.
    let mut last: HashMap<u64, usize, Fast> = HashMap::default();
    let hasher = Fast::default();
    for write in writes {
        let keep = write.keep;
        let (key, kind) = classify(write);
        let Some(key) = key else {
            last.clear();
            places.push(Place {
                at: cmds.len(),
                args: None,
                keep,
            });
            cmds.push(write.to_cmd());
            kinds.push(None);
            continue;
        };
        let hash = hasher.hash_one(key);
        let open = last.get(&hash).copied().filter(|&at| {
            kind.is_some() && kinds[at] == kind && super::super::key_of(&cmds[at]) == Some(key)
        });
        match open {
            Some(at) => {
                let first = cmds[at].args_iter().len();
                let own = write.args().skip(2).flatten();
                let mut count = 0;
                for arg in own {
                    cmds[at].arg(arg);
                    count += 1;
                }
                places.push(Place {
                    at,
                    args: Some((first, count)),
                    keep,
                });
            }
            None => {
                let at = cmds.len();
                let cmd = write.to_cmd();
                places.push(Place {
                    at,
                    args: kind.map(|_| (2, cmd.args_iter().len() - 2)),
                    keep,
                });
                last.insert(hash, at);
                cmds.push(cmd);
                kinds.push(kind);
            }
        }
    }
    let mut pipe = Pipeline::with_capacity(cmds.len());
    pipe.atomic().ignore_errors();
    for cmd in cmds {
        pipe.add_command(cmd);
    }
    Merged { pipe, places }
}

/// The command a write at `place` sent, rebuilt from the transaction's
/// `cmds` (for a merged one, its name and key with its own arguments),
/// and whether its reply is kept.
#[cfg(test)]
pub(super) fn original(cmds: &[&Cmd], place: Place) -> (Cmd, bool) {
    let sent = cmds[place.at];
    let Some((first, count)) = place.args else {
        return (sent.clone(), place.keep);
    };
    let all = args(sent);
    let own: SmallVec<[&[u8]; 8]> = all
        .clone()
        .take(2)
        .chain(all.skip(first).take(count))
        .flatten()
        .collect();
    let mut cmd = Cmd::with_capacity(own.len(), own.iter().map(|a| a.len()).sum());
    for arg in own {
        cmd.arg(arg);
    }
    (cmd, place.keep)
}

/// How a transaction treats `write`'s command (whose reply is kept or
/// not): its key if it is a command that touches that key alone (one
/// whose type [`types::needed`] knows, the model's key-wide writes, a
/// `DEL` of one key; named in capitals as the model names them), `None`
/// for a barrier; and how it merges, if it does.
fn classify(write: Write<'_>) -> (Option<&[u8]>, Option<Kind>) {
    // A read back is `HGET key field`.
    let count = match write.reads_back {
        true => 3,
        false => write.cmd.args_iter().len(),
    };
    let mut all = write.args();
    let (Some(Some(name)), Some(Some(key))) = (all.next(), all.next()) else {
        return (None, None);
    };
    let kind = match name {
        b"SADD" if count >= 3 => Some(Kind::Sadd),
        b"SREM" if count >= 3 => Some(Kind::Srem),
        b"ZREM" if count >= 3 => Some(Kind::Zrem),
        b"ZADD" if count >= 4 && count.is_multiple_of(2) => {
            let first = all.next().flatten().unwrap_or_default();
            let flag = ZADD_FLAGS.iter().any(|f| first.eq_ignore_ascii_case(f));
            (!flag).then_some(Kind::Zadd)
        }
        // A command that needs a type at its key acts on that key alone.
        _ if types::needed(name).is_some() => None,
        b"SET" | b"EXPIRE" | b"PEXPIRE" | b"EXPIREAT" | b"PEXPIREAT" | b"PERSIST" => None,
        b"DEL" if count == 2 => None,
        _ => return (None, None),
    };
    (Some(key), kind.filter(|_| !write.keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `words` as a command.
    fn c(words: &str) -> Cmd {
        let mut cmd = Cmd::new();
        for word in words.split(' ') {
            cmd.arg(word);
        }
        cmd
    }

    /// A command as its words, for comparing.
    fn words(cmd: &Cmd) -> String {
        args(cmd)
            .flatten()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn sent(merged: &Merged) -> Vec<String> {
        merged.pipe.cmd_iter().map(words).collect()
    }

    /// Every write's command, rebuilt from the merged transaction.
    fn rebuilt(merged: &Merged) -> Vec<String> {
        let cmds: Vec<&Cmd> = merged.pipe.cmd_iter().collect();
        merged
            .places
            .iter()
            .map(|p| words(&original(&cmds, *p).0))
            .collect()
    }

    #[test]
    fn index_commands_to_one_key_merge_across_other_keys_commands() {
        let writes = [
            "HSET a f 1",
            "ZADD z 1 a",
            "SADD t:x a",
            "HSET b f 2",
            "ZADD z 2 b",
            "SADD t:x b",
            "SADD t:y b",
        ];
        let cmds: Vec<Cmd> = writes.iter().map(|w| c(w)).collect();
        let merged = merge(cmds.iter().map(|c| Write::plain(c, false)));
        assert_eq!(
            sent(&merged),
            [
                "HSET a f 1",
                "ZADD z 1 a 2 b",
                "SADD t:x a b",
                "HSET b f 2",
                "SADD t:y b"
            ]
        );
        let at: Vec<usize> = merged.places.iter().map(|p| p.at).collect();
        assert_eq!(at, [0, 1, 2, 3, 1, 2, 4]);
        assert_eq!(rebuilt(&merged), writes);
    }

    #[test]
    fn each_keys_commands_keep_their_order() {
        // The SREM between the two SADDs of `t` closes the first: the
        // second may not join it, ahead of the SREM.
        let writes = ["SADD t a", "SREM t a", "SADD t b", "SADD t c", "SREM t b"];
        let cmds: Vec<Cmd> = writes.iter().map(|w| c(w)).collect();
        let merged = merge(cmds.iter().map(|c| Write::plain(c, false)));
        assert_eq!(
            sent(&merged),
            ["SADD t a", "SREM t a", "SADD t b c", "SREM t b"]
        );
        assert_eq!(rebuilt(&merged), writes);
    }

    #[test]
    fn kept_replies_flagged_zadds_and_unknown_commands_are_sent_whole() {
        let writes = [
            ("SADD t a", true),
            ("SADD t b", false),
            ("ZADD z GT 1 a", false),
            ("ZADD z 1 b", false),
            ("SMOVE t u b", false),
            ("SADD t c", false),
            ("ZADD z 2 c", false),
        ];
        let cmds: Vec<Cmd> = writes.iter().map(|(w, _)| c(w)).collect();
        let merged = merge(
            cmds.iter()
                .zip(&writes)
                .map(|(c, (_, keep))| Write::plain(c, *keep)),
        );
        // A kept reply is its own; a flagged ZADD is not merged into; the
        // SMOVE (two keys) is a barrier for every key after it.
        assert_eq!(
            sent(&merged),
            [
                "SADD t a",
                "SADD t b",
                "ZADD z GT 1 a",
                "ZADD z 1 b",
                "SMOVE t u b",
                "SADD t c",
                "ZADD z 2 c"
            ]
        );
        let keep: Vec<bool> = merged.places.iter().map(|p| p.keep).collect();
        assert_eq!(keep, [true, false, false, false, false, false, false]);
        assert_eq!(
            rebuilt(&merged),
            writes.iter().map(|(w, _)| *w).collect::<Vec<_>>()
        );
    }
}
