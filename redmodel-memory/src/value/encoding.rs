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

use super::list::ListValue;
use super::Value;
use crate::args::parse_i64;
use crate::config::Limits;
use crate::RedisVersion;

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
    /// Redis 7.2 and later: a set of strings small enough for a listpack
    /// (from an intset, on its way to a table).
    Listpack,
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

/// The history `value`, of history `history`, has after a command changed
/// it, in the encodings of Redis 7.2 and later (`limits.version`): a set
/// of strings goes intset, listpack, hashtable; a list goes listpack to
/// quicklist as it grows past `list-max-listpack-size`, and back when it
/// shrinks to half of it. `None`: the history stays.
pub(crate) fn history_after_change(
    value: &Value,
    history: History,
    limits: &Limits,
) -> Option<History> {
    if limits.version < RedisVersion::V7_4 || history == History::Text {
        return None;
    }
    match (value, history) {
        // A list is created a listpack, unless already too big for one.
        (Value::List(l), History::Fresh | History::Listpack) => {
            if list_exceeds(l, limits.list_max_listpack_size, false) {
                Some(History::Converted)
            } else {
                (history == History::Fresh).then_some(History::Listpack)
            }
        }
        (Value::List(l), History::Converted) => {
            (!list_exceeds(l, limits.list_max_listpack_size, true)).then_some(History::Listpack)
        }
        (Value::Set(s), History::Fresh | History::Listpack) => {
            let to = if history == History::Fresh
                && s.all_integers()
                && s.len() as u64 <= limits.set_max_intset_entries
            {
                History::Fresh
            } else if (history == History::Fresh && s.all_integers())
                || s.len() as u64 > limits.set_max_listpack_entries
                || s.iter()
                    .any(|m| m.len() as u64 > limits.set_max_listpack_value)
            {
                History::Converted
            } else {
                History::Listpack
            };
            (to != history).then_some(to)
        }
        _ => None,
    }
}

/// A listpack's header and end byte.
const LISTPACK_OVERHEAD: usize = 7;

/// The bytes and the entries past which one listpack holds no more of a
/// list under `list-max-listpack-size` `fill` (Redis's
/// `quicklistNodeLimit`): a count limit is a size limit of
/// `SIZE_SAFETY_LIMIT` bytes as well.
fn listpack_limits(fill: i64) -> (usize, usize) {
    /// The bytes past which a count-limited node is full anyway.
    const SIZE_SAFETY_LIMIT: usize = 8192;
    if fill >= 0 {
        (
            SIZE_SAFETY_LIMIT,
            usize::try_from(fill.max(1)).unwrap_or(usize::MAX),
        )
    } else {
        let level = usize::try_from(-fill - 1).unwrap_or(usize::MAX).min(4);
        (4096 << level, usize::MAX)
    }
}

/// Whether a list is past what one listpack holds under
/// `list-max-listpack-size` `fill` (Redis's `quicklistNodeExceedsLimit`),
/// or, `shrinking`, past half of it (`listTypeTryConvertQuicklist`).
fn list_exceeds(list: &ListValue, fill: i64, shrinking: bool) -> bool {
    let (mut size, mut count) = listpack_limits(fill);
    if shrinking {
        size /= 2;
        count /= 2;
    }
    // Every entry takes two bytes at least.
    if list.len() > count || list.len().saturating_mul(2) > size {
        return true;
    }
    let mut bytes = LISTPACK_OVERHEAD;
    for element in list.iter() {
        bytes += listpack_entry_bytes(element);
        if bytes > size {
            return true;
        }
    }
    false
}

/// Whether a list held in one listpack would outgrow it by `added`, as
/// Redis 7.2 and later reckon before LINSERT and LSET
/// (`listTypeTryConvertListpack`): the listpack's bytes and the element's
/// length, its entries and one more. They convert the list on this before
/// they know whether the element goes in (a pivot not found, an index out
/// of range) or replaces another (LSET).
pub(crate) fn list_outgrows_with(list: &ListValue, limits: &Limits, added: &[u8]) -> bool {
    let (size, count) = listpack_limits(limits.list_max_listpack_size);
    let bytes =
        LISTPACK_OVERHEAD + list.iter().map(listpack_entry_bytes).sum::<usize>() + added.len();
    list.len() + 1 > count || bytes > size
}

/// How many nodes Redis's quicklist holds `list` in under `limits`
/// (`list-max-listpack-size`), filled as pushes fill them
/// (`_quicklistNodeAllowInsert`: a node takes an element while its bytes,
/// the element's length and an estimate of its overhead stay within the
/// node's limit): lazy freeing's measure of a list, which needs to know
/// only whether it passes `up_to` (the count stops there).
pub(crate) fn quicklist_nodes(list: &ListValue, limits: &Limits, up_to: usize) -> usize {
    /// Redis's `SIZE_ESTIMATE_OVERHEAD`.
    const ESTIMATE_OVERHEAD: usize = 8;
    let (size, count) = listpack_limits(limits.list_max_listpack_size);
    let (mut nodes, mut bytes, mut entries) = (0, 0, 0);
    for element in list.iter() {
        if entries == 0 || bytes + element.len() + ESTIMATE_OVERHEAD > size || entries + 1 > count {
            if nodes == up_to {
                break;
            }
            nodes += 1;
            bytes = LISTPACK_OVERHEAD;
            entries = 0;
        }
        bytes += listpack_entry_bytes(element);
        entries += 1;
    }
    nodes
}

/// The bytes an element takes in a listpack: its encoding and data, then
/// the length of those (`lpEncodeBacklen`).
fn listpack_entry_bytes(element: &[u8]) -> usize {
    let data = match parse_i64(element) {
        Some(n) if n.to_string().as_bytes() == element => match n {
            0..=127 => 1,
            -4096..=4095 => 2,
            -32768..=32767 => 3,
            -8_388_608..=8_388_607 => 4,
            -2_147_483_648..=2_147_483_647 => 5,
            _ => 9,
        },
        _ => match element.len() {
            len @ 0..=63 => 1 + len,
            len @ 64..=4095 => 2 + len,
            len => 5 + len,
        },
    };
    let backlen = match data {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    };
    data + backlen
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
        // Redis 7.2's small lists (see `history_after_change`).
        Value::List(_) if history == History::Listpack => "listpack",
        Value::List(_) => "quicklist",
        Value::Hash(_) if converted => "hashtable",
        // A listpack that has had field TTLs (Redis 7.4).
        Value::Hash(h) if h.is_expiring() => "listpackex",
        Value::Hash(_) => "listpack",
        Value::Set(_) if converted => "hashtable",
        Value::Set(_) if history == History::Listpack => "listpack",
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
