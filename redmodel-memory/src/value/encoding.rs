//! The encoding Redis 7.0.15 would use for a value, for OBJECT ENCODING.
//!
//! The engine stores values its own way, so the encoding is worked out
//! from the data, the configured thresholds ([`Limits`]) and the value's
//! history, which Redis's encodings depend on:
//! - aggregates convert one way: a hash, set or sorted set that once
//!   outgrew its compact encoding (listpack, intset) keeps the big one
//!   (hashtable, skiplist) even after shrinking, until a new value
//!   replaces it. So the keyspace checks after every modification whether
//!   the value outgrew the thresholds *then* (see `Keyspace::modified`),
//!   and remembers it in [`History`];
//! - lists are always `quicklist` in 7.0 (listpack lists came with 7.2);
//! - strings are `int`, `embstr` or `raw` by their bytes when set whole
//!   (SET, MSET, INCR...), `embstr`/`raw` by length when built as text
//!   (INCRBYFLOAT), and `raw` once edited in place (APPEND, SETRANGE).

use super::Value;
use crate::args::parse_i64;
use crate::config::Limits;

/// Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`: longer strings are `raw`.
const EMBSTR_SIZE_LIMIT: usize = 44;

/// What Redis's encoding of a value depends on beyond its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum History {
    /// A value set whole: a string encoded by its bytes, an aggregate
    /// compact while it fits the thresholds.
    #[default]
    Fresh,
    /// A string made from a number's text (INCRBYFLOAT): never `int`.
    Text,
    /// An aggregate that outgrew its compact encoding, or a string edited
    /// in place: the big encoding, for good.
    Converted,
}

/// Whether `value`, as it is now, is past the compact encoding's limits
/// (an aggregate Redis would have converted): [`grew_past`] with every
/// element counted as written, for a value stored whole. Strings and lists
/// never are.
pub(crate) fn outgrows(value: &Value, limits: &Limits) -> bool {
    grew_past(value, limits, || {
        let longest = match value {
            Value::Hash(h) => h.iter().map(|(f, v)| f.len().max(v.len())).max(),
            Value::ZSet(z) => z.iter().map(|(m, _)| m.len()).max(),
            _ => None,
        };
        longest.unwrap_or(0)
    })
}

/// Whether `value`, compact until a command wrote into it elements of
/// which the longest is `longest_written()` bytes (a hash's fields and
/// values, a sorted set's members), is now past the compact encoding's
/// limits: by its element count, or by that length, as Redis checks as
/// it adds (`hashTypeSet`, `zsetAdd`). A set is checked whole, which is
/// at once for a compact one (an intset).
pub(crate) fn grew_past(
    value: &Value,
    limits: &Limits,
    longest_written: impl FnOnce() -> usize,
) -> bool {
    let longer = |max: u64| longest_written() as u64 > max;
    match value {
        Value::Str(_) | Value::List(_) | Value::Stream(_) => false,
        Value::Hash(h) => {
            h.has_more_than(limits.hash_max_listpack_entries)
                || longer(limits.hash_max_listpack_value)
        }
        Value::Set(s) => s.len() as u64 > limits.set_max_intset_entries || !s.all_integers(),
        Value::ZSet(z) => {
            z.len() as u64 > limits.zset_max_listpack_entries
                || longer(limits.zset_max_listpack_value)
        }
    }
}

/// The name OBJECT ENCODING gives for `value` with this history.
pub(crate) fn encoding_name(value: &Value, history: History) -> &'static str {
    let converted = history == History::Converted;
    match value {
        Value::Str(s) => {
            if converted {
                "raw"
            } else if history == History::Fresh && s.len() <= 20 && parse_i64(s).is_some() {
                "int"
            } else if s.len() <= EMBSTR_SIZE_LIMIT {
                "embstr"
            } else {
                "raw"
            }
        }
        Value::List(_) => "quicklist",
        Value::Hash(_) if converted => "hashtable",
        // A listpack that has had field TTLs (Redis 7.4).
        Value::Hash(h) if h.is_expiring() => "listpackex",
        Value::Hash(_) => "listpack",
        Value::Set(_) if converted => "hashtable",
        Value::Set(_) => "intset",
        Value::ZSet(_) if converted => "skiplist",
        Value::ZSet(_) => "listpack",
        Value::Stream(_) => "stream",
    }
}

/// Whether a string value is one of Redis's shared integers (0..10000),
/// whose OBJECT REFCOUNT is `INT_MAX`.
pub(crate) fn is_shared_integer(value: &Value, history: History) -> bool {
    match value {
        Value::Str(s) if history == History::Fresh => {
            parse_i64(s).is_some_and(|n| (0..10_000).contains(&n))
        }
        _ => false,
    }
}
