//! What Redis says about each command beyond its arity: flags (`write`,
//! `noscript`, ...), where its keys are (the legacy first / last / step and
//! the key specifications), ACL categories and tips. The tables themselves
//! (`command_table/rows.rs` for 7.0.15, `rows74.rs` for 7.4.1) are
//! generated from a real server's COMMAND reply by `tools/command_table.py`,
//! so the engine describes its commands exactly as Redis does (COMMAND
//! INFO, COMMAND GETKEYS) and finds their keys the way Redis does (the
//! cluster mode's slot checks).
//!
//! The engine's own table ([`table`]) is 7.0.15's rows and the rows of the
//! commands 7.4.1 adds: one id per command whatever the version (ACL's
//! bitmaps), [`serves`] telling whether a version has the command, and
//! [`as_of`] giving the row a version's COMMAND INFO shows.

use std::sync::LazyLock;

pub(crate) use names::NameTable;

use crate::RedisVersion;

pub(crate) mod docs;
mod names;
mod rows;
mod rows74;

/// One command's description.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) name: &'static str,
    pub(crate) arity: i32,
    pub(crate) flags: &'static [&'static str],
    /// The legacy key positions: first key, last key (negative: from the
    /// end), step.
    pub(crate) first: i32,
    pub(crate) last: i32,
    pub(crate) step: i32,
    pub(crate) acl: &'static [&'static str],
    pub(crate) tips: &'static [&'static str],
    pub(crate) keys: &'static [KeySpec],
    /// A container's subcommands (CONFIG: `config|get`, ...), each
    /// described by a row of its own, in the order Redis lists them.
    pub(crate) subcommands: &'static [&'static str],
}

/// A key specification: where a run of keys begins, and how far it goes.
#[derive(Debug)]
pub(crate) struct KeySpec {
    /// Redis's note on the spec; empty if it has none.
    pub(crate) notes: &'static str,
    pub(crate) flags: &'static [&'static str],
    pub(crate) begin: Begin,
    pub(crate) find: Find,
}

/// Where the keys of a spec begin.
#[derive(Debug)]
pub(crate) enum Begin {
    /// At this argument.
    Index(i32),
    /// After this keyword, searched from `startfrom` (negative: from the
    /// end, backwards).
    Keyword(&'static str, i32),
    /// Only the command knows (SORT's BY and GET patterns).
    Unknown,
}

/// How far the keys of a spec go, from where they begin.
#[derive(Debug)]
pub(crate) enum Find {
    /// To `last` (negative: from the end; with a `limit` above 1, a
    /// `1/limit` share of the rest), every `step`.
    Range {
        last: i32,
        step: i32,
        limit: i32,
    },
    /// As many as the argument at `index` says, starting `first` after it,
    /// every `step`.
    Keynum {
        index: i32,
        first: i32,
        step: i32,
    },
    Unknown,
}

/// Every command and subcommand of Redis 7.0.15 and 7.4.1, sorted by name
/// (a container just before its subcommands), 7.0.15's row for a command
/// both have: ACL's command ids are indexes in it.
static ROWS: LazyLock<Vec<(Meta, RedisVersion)>> = LazyLock::new(|| {
    let old: std::collections::HashSet<&str> = rows::TABLE.iter().map(|m| m.name).collect();
    let mut all: Vec<(Meta, RedisVersion)> = (rows::TABLE.iter())
        .map(|m| (m.clone(), RedisVersion::V7_0))
        .chain(
            (rows74::TABLE.iter())
                .filter(|m| !old.contains(m.name))
                .map(|m| (m.clone(), RedisVersion::V7_4)),
        )
        .collect();
    all.sort_by(|a, b| a.0.name.cmp(b.0.name));
    all
});

/// [`ROWS`]' descriptions alone, in the same order.
static TABLE: LazyLock<Vec<Meta>> =
    LazyLock::new(|| ROWS.iter().map(|(meta, _)| meta.clone()).collect());

/// Every command and subcommand the engine describes, sorted by name (a
/// container just before its subcommands): ACL's command ids are indexes
/// in it.
pub(crate) fn table() -> &'static [Meta] {
    &TABLE
}

/// Where `meta` sits in [`table`] (no search: the descriptions the engine
/// hands out are the table's rows); `None` for a description from
/// elsewhere.
pub(crate) fn id_of(meta: &Meta) -> Option<usize> {
    let table = table();
    let offset = (meta as *const Meta as usize).checked_sub(table.as_ptr() as usize)?;
    let id = offset / std::mem::size_of::<Meta>();
    std::ptr::eq(table.get(id)?, meta).then_some(id)
}

/// Whether Redis `version` has the command `meta` describes (a command
/// 7.4 adds is unknown to 7.0.15).
pub(crate) fn serves(meta: &Meta, version: RedisVersion) -> bool {
    match id_of(meta).and_then(|id| ROWS.get(id)) {
        Some((_, since)) => *since <= version,
        None => lookup(meta.name.as_bytes())
            .and_then(id_of)
            .and_then(|id| ROWS.get(id))
            .is_some_and(|(_, since)| *since <= version),
    }
}

/// The 7.4.1 rows by name.
static BY_NAME_74: LazyLock<NameTable<&'static Meta>> =
    LazyLock::new(|| NameTable::new(rows74::TABLE.iter().map(|meta| (meta.name, meta))));

/// The row of `meta`'s command as Redis `version` describes it (COMMAND
/// INFO: 7.4.1 changed some commands' flags, tips and key specs).
pub(crate) fn as_of(meta: &'static Meta, version: RedisVersion) -> &'static Meta {
    match version {
        RedisVersion::V7_0 => meta,
        RedisVersion::V7_4 => BY_NAME_74
            .get(meta.name.as_bytes())
            .copied()
            .unwrap_or(meta),
    }
}

/// The description of the command `name` ([`lookup`] of a `str`).
pub(crate) fn meta(name: &str) -> Option<&'static Meta> {
    lookup(name.as_bytes())
}

/// The descriptions by name: [`lookup`] runs on every command a script
/// or `Engine::atomically` runs (see [`names`]).
static BY_NAME: LazyLock<NameTable<&'static Meta>> =
    LazyLock::new(|| NameTable::new(table().iter().map(|meta| (meta.name, meta))));

/// The description of the command `name`, in any case.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Meta> {
    BY_NAME.get(name).copied()
}

/// The description of the command a command line runs: the subcommand's
/// for a container (`CONFIG GET` is `config|get`). `None` for a command,
/// or a container's subcommand, that Redis does not have.
pub(crate) fn of_line(argv: &[&[u8]]) -> Option<&'static Meta> {
    let top = lookup(argv.first()?)?;
    if top.subcommands.is_empty() {
        return Some(top);
    }
    // In any case, as every name is found.
    let sub = std::str::from_utf8(argv.get(1)?).ok()?;
    meta(&format!("{}|{sub}", top.name))
}

/// Whether the command `name` runs a script or a function: EVAL, EVALSHA,
/// FCALL and their `_ro` forms (those Redis flags `skip_monitor`: MONITOR
/// shows them before their calls, the AOF records their calls instead,
/// tracking follows their reads).
pub(crate) fn runs_script(name: &[u8]) -> bool {
    [
        "eval",
        "evalsha",
        "eval_ro",
        "evalsha_ro",
        "fcall",
        "fcall_ro",
    ]
    .iter()
    .any(|n| crate::args::is(name, n))
}

impl Meta {
    pub(crate) fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// The positions of the keys in `argv` (the command name at 0), as
    /// Redis finds them: from the key specs, in their order; for a command
    /// with a spec only the command can read (SORT), Redis's own rule.
    /// `None` when the arguments do not hold what a spec needs (a key
    /// count that is missing, negative, zero or past the end): what Redis
    /// calls an invalid spec.
    pub(crate) fn key_positions(&self, argv: &[&[u8]]) -> Option<Vec<usize>> {
        self.key_refs(argv)
            .map(|refs| refs.into_iter().map(|(at, _)| at).collect())
    }

    /// [`Self::key_positions`] with the spec each key was found by (its
    /// flags say how the command uses the key: ACL's `%R~` / `%W~`).
    pub(crate) fn key_refs(&self, argv: &[&[u8]]) -> Option<Vec<(usize, &'static KeySpec)>> {
        if matches!(self.name, "sort" | "sort_ro") {
            // The sorted key's spec, then STORE's (the last one).
            let specs = (self.keys.first()?, self.keys.last()?);
            let keys = sort_keys(argv);
            return Some(
                keys.iter()
                    .enumerate()
                    .map(|(i, &at)| (at, if i == 0 { specs.0 } else { specs.1 }))
                    .collect(),
            );
        }
        let argc = i64::try_from(argv.len()).ok()?;
        let mut out = Vec::new();
        for spec in self.keys {
            let first = match spec.begin {
                Begin::Index(i) => i64::from(i),
                Begin::Keyword(word, from) => {
                    // Forwards from `from`, or backwards from the end.
                    let from = i64::from(from);
                    let is_word = |i: &i64| argv[*i as usize].eq_ignore_ascii_case(word.as_bytes());
                    let found = if from > 0 {
                        (from..argc).find(is_word)
                    } else {
                        (1..=argc + from).rev().find(is_word)
                    };
                    match found {
                        Some(at) => at + 1,
                        None => continue,
                    }
                }
                Begin::Unknown => return None,
            };
            let (first, last, step) = match spec.find {
                Find::Range { last, step, limit } => {
                    let (last, limit) = (i64::from(last), i64::from(limit));
                    let last = if last >= 0 {
                        first + last
                    } else if limit <= 1 {
                        argc + last
                    } else {
                        first + ((argc - first) / limit + last)
                    };
                    (first, last, i64::from(step))
                }
                Find::Keynum {
                    index,
                    first: after,
                    step,
                } => {
                    let at = usize::try_from(first + i64::from(index)).ok()?;
                    let count: i64 = std::str::from_utf8(argv.get(at)?).ok()?.parse().ok()?;
                    if count < 0 {
                        return None;
                    }
                    let begin = first + i64::from(after);
                    let step = i64::from(step);
                    // A count past any argument list is a syntax error,
                    // not an overflow.
                    let last = (count - 1).checked_mul(step)?.checked_add(begin)?;
                    (begin, last, step)
                }
                Find::Unknown => return None,
            };
            // Out of the arguments: a syntax error the command reports.
            if last >= argc || last < first || first >= argc || step <= 0 {
                return None;
            }
            let mut i = first;
            while i <= last {
                out.push((i as usize, spec));
                i += step;
            }
        }
        Some(out)
    }
}

/// SORT's keys as Redis's `sortGetKeys` finds them: the sorted key, and
/// the destination after the last STORE (skipping the arguments of LIMIT,
/// GET and BY, which could read "store").
fn sort_keys(argv: &[&[u8]]) -> Vec<usize> {
    let mut out = vec![1];
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        let arg = argv[i];
        let skip = if arg.eq_ignore_ascii_case(b"limit") {
            2
        } else if arg.eq_ignore_ascii_case(b"get") || arg.eq_ignore_ascii_case(b"by") {
            1
        } else if arg.eq_ignore_ascii_case(b"store") {
            store = Some(i + 1);
            1
        } else {
            0
        };
        i += skip + 1;
    }
    out.extend(store.filter(|&i| i < argv.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(argv: &[&str]) -> Option<Vec<usize>> {
        let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        of_line(&argv)
            .expect("a Redis command")
            .key_positions(&argv)
    }

    /// Against COMMAND GETKEYS of redis-server 7.0.15.
    #[test]
    fn keys_as_redis_finds_them() {
        assert_eq!(keys(&["GET", "a"]), Some(vec![1]));
        assert_eq!(keys(&["MSET", "a", "1", "b", "2"]), Some(vec![1, 3]));
        assert_eq!(keys(&["DEL", "a", "b", "c"]), Some(vec![1, 2, 3]));
        assert_eq!(keys(&["EVAL", "s", "2", "a", "b", "x"]), Some(vec![3, 4]));
        assert_eq!(keys(&["EVAL", "s", "0", "x"]), None);
        assert_eq!(keys(&["EVAL", "s", "5", "a"]), None);
        assert_eq!(keys(&["EVAL", "s", "x"]), None);
        // A key count past any argument list: invalid, not an overflow.
        assert_eq!(keys(&["ZUNION", "9223372036854775807", "a"]), None);
        assert_eq!(keys(&["ZUNION", "4611686018427387904", "a"]), None);
        assert_eq!(
            keys(&["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"]),
            Some(vec![1, 3, 4])
        );
        assert_eq!(
            keys(&["XREAD", "COUNT", "2", "STREAMS", "a", "b", "0", "0"]),
            Some(vec![4, 5])
        );
        assert_eq!(
            keys(&["SORT", "a", "BY", "w_*", "STORE", "d"]),
            Some(vec![1, 5])
        );
        assert_eq!(
            keys(&["SORT", "a", "GET", "store", "LIMIT", "0", "1"]),
            Some(vec![1])
        );
        assert_eq!(
            keys(&["LMOVE", "a", "b", "LEFT", "RIGHT"]),
            Some(vec![1, 2])
        );
        assert_eq!(
            keys(&["BLMPOP", "0", "2", "a", "b", "LEFT"]),
            Some(vec![3, 4])
        );
        assert_eq!(keys(&["PING"]), Some(vec![]));
        assert_eq!(keys(&["OBJECT", "ENCODING", "a"]), Some(vec![2]));
        assert_eq!(
            keys(&["GEORADIUS", "a", "0", "0", "1", "km", "STORE", "b"]),
            Some(vec![1, 7])
        );
    }

    #[test]
    fn the_table_is_sorted_for_binary_search() {
        let table = table();
        assert!(table.windows(2).all(|w| w[0].name < w[1].name));
        for m in table {
            for sub in m.subcommands {
                assert!(meta(sub).is_some(), "{sub}");
            }
        }
    }

    /// COMMAND COUNT's 240 of redis-server 7.0.15 and 250 of 7.4.1 (the
    /// table holds no module command).
    #[test]
    fn each_version_has_its_commands() {
        let count = |version| {
            (table().iter())
                .filter(|m| !m.name.contains('|') && serves(m, version))
                .count()
        };
        assert_eq!(count(RedisVersion::V7_0), 240);
        assert_eq!(count(RedisVersion::V7_4), 250);
        let hexpire = meta("hexpire").expect("a 7.4 command");
        assert!(!serves(hexpire, RedisVersion::V7_0));
        assert!(serves(hexpire, RedisVersion::V7_4));
        let client = meta("client").expect("a command");
        assert_eq!(as_of(client, RedisVersion::V7_4).subcommands.len(), 18);
    }
}
