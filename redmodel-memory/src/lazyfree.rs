//! Lazy freeing, as Redis counts it.
//!
//! Redis hands some frees to a background thread: a big value deleted by
//! UNLINK (or by DEL, an expiry, an eviction or an overwrite under the
//! matching `lazyfree-lazy-*` setting), a database flushed with ASYNC, and
//! more than 64 scripts or functions flushed with ASYNC. INFO counts the
//! objects that thread freed (`lazyfreed_objects`) and those it has yet to
//! free (`lazyfree_pending_objects`). The engine frees everything at once,
//! so nothing is ever pending; it counts what Redis's thread would have
//! freed, by Redis's rules, so that what reads the count reads Redis's.

use crate::config::Limits;
use crate::value::encoding::{encoding_name, quicklist_nodes, History};
use crate::value::Value;
use crate::RedisVersion;

/// The effort past which Redis frees in the background
/// (`LAZYFREE_THRESHOLD`): below it a free in place is cheaper.
const THRESHOLD: usize = 64;

/// Whether Redis frees `value` (whose encoding `history` gives) in the
/// background when it deletes it lazily (`freeObjAsync`).
pub(crate) fn in_background(value: &Value, history: History, limits: &Limits) -> bool {
    effort(value, history, limits) > THRESHOLD
}

/// Redis's `lazyfreeGetFreeEffort`: about how many allocations freeing
/// `value` takes. An aggregate in a compact encoding is one allocation; a
/// list counts its quicklist's nodes (Redis 7.2 and later keep a small
/// list in one listpack); a stream, its radix tree's nodes and its
/// consumer groups with their pending entries, reckoned from the first
/// group's.
fn effort(value: &Value, history: History, limits: &Limits) -> usize {
    let spread = matches!(encoding_name(value, history), "hashtable" | "skiplist");
    match value {
        Value::List(_) if limits.version >= RedisVersion::V7_4 && history == History::Listpack => 1,
        // Past the threshold the exact count does not matter.
        Value::List(list) => quicklist_nodes(list, limits, THRESHOLD + 1),
        Value::Set(set) if spread => set.len(),
        Value::Hash(hash) if spread => hash.len(),
        Value::ZSet(zset) if spread => zset.len(),
        Value::Stream(stream) => {
            let groups = stream.groups.len();
            let first_pel = stream.groups.values().next().map_or(0, |g| g.pel.len());
            stream.rax_node_count() + groups * (1 + first_pel)
        }
        _ => 1,
    }
}

/// Whether a flush runs lazily: its `mode` (`ASYNC` or `SYNC`), else
/// `lazyfree-lazy-user-flush` (Redis's `getFlushCommandFlags`).
pub(crate) fn flush_is_lazy(mode: Option<&[u8]>, limits: &Limits) -> bool {
    match mode {
        Some(mode) => crate::args::is(mode, "async"),
        None => limits.lazy.user_flush,
    }
}

/// The objects Redis's thread frees when SCRIPT FLUSH ASYNC hands it
/// `count` scripts (`freeLuaScriptsAsync`): all of them past the
/// threshold, none below (those are freed in place).
pub(crate) fn flushed_scripts(count: usize) -> u64 {
    if count > THRESHOLD {
        count as u64
    } else {
        0
    }
}

/// The objects Redis's thread frees when FUNCTION FLUSH ASYNC hands it
/// `count` functions (`freeFunctionsAsync`): as for scripts, and from
/// Redis 7.4 on its one engine (Lua) with them.
pub(crate) fn flushed_functions(count: usize, version: RedisVersion) -> u64 {
    match flushed_scripts(count) {
        0 => 0,
        n if version >= RedisVersion::V7_4 => n + 1,
        n => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::list::ListValue;

    /// The nodes lazy freeing counts for a list are the ones DEBUG OBJECT
    /// reports (`ql_nodes`), whatever the elements' sizes and encodings.
    #[test]
    fn a_lists_effort_is_its_quicklist_nodes_as_debug_object_counts_them() {
        let limits = Limits::default();
        let lists: [Vec<String>; 4] = [
            (0..1000).map(|i| i.to_string()).collect(),
            (0..1000).map(|i| format!("{i:0>100}")).collect(),
            (0..300).map(|i| "x".repeat(i % 200)).collect(),
            vec!["y".repeat(20_000), "z".into(), "w".repeat(9_000)],
        ];
        for elements in lists {
            let list = ListValue::from_elements(&elements);
            let value = Value::List(list.clone());
            let nodes = crate::rdb::value::quicklist_nodes(&value).len();
            assert_eq!(quicklist_nodes(&list, &limits, usize::MAX), nodes);
            assert_eq!(
                effort(&value, History::Fresh, &limits),
                nodes.min(THRESHOLD + 1)
            );
        }
    }

    #[test]
    fn only_spread_encodings_count_their_elements() {
        let limits = Limits::default();
        let set = crate::value::set::SetValue::from_members((0..100).map(|i| i.to_string()));
        assert_eq!(effort(&Value::Set(set.clone()), History::Fresh, &limits), 1);
        assert_eq!(effort(&Value::Set(set), History::Converted, &limits), 100);
        assert!(!in_background(
            &Value::Str(b"x".as_slice().into()),
            History::Fresh,
            &limits
        ));
    }
}
