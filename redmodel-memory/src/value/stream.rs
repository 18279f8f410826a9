//! The stream value (Redis 7.0's `t_stream.c`): entries ordered by ID, the
//! stream's counters, and its consumer groups with their pending entries.
//!
//! Redis keeps a stream's entries in listpacks ("nodes") of at most
//! `stream-node-max-entries` entries and `stream-node-max-bytes` bytes,
//! indexed by a radix tree on each node's first ("master") ID. The engine
//! keeps the entries in a `BTreeMap`, but also a model of those nodes
//! ([`Node`]: counts and size only), because what Redis users see depends
//! on them: approximate trimming (`MAXLEN ~`, `MINID ~`) removes whole
//! nodes only, XTRIM's reply counts what it removed, and XINFO STREAM
//! shows the number of nodes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::Bytes;
use crate::args::parse_i64;

/// A stream entry ID: milliseconds and a sequence number. Ordered as
/// Redis orders them (ms first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(crate) struct StreamId {
    pub(crate) ms: u64,
    pub(crate) seq: u64,
}

impl StreamId {
    pub(crate) const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub(crate) const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub(crate) fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    /// The next ID (Redis's `streamIncrID`), `None` past the last one.
    pub(crate) fn next(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID (Redis's `streamDecrID`), `None` before 0-0.
    pub(crate) fn prev(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    pub(crate) fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The 16 big-endian bytes Redis's radix trees use as the key.
    fn encode(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.ms.to_be_bytes());
        out[8..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's `SCG_INVALID_ENTRIES_READ`: a group's read counter is unknown.
pub(crate) const INVALID_ENTRIES_READ: i64 = -1;

/// One pending entry of a group: delivered to `consumer`, not acknowledged.
#[derive(Debug, Clone)]
pub(crate) struct Nack {
    pub(crate) consumer: Bytes,
    /// Unix ms of the last delivery (the idle time is `now - this`).
    pub(crate) delivery_time: i64,
    pub(crate) delivery_count: u64,
}

/// A consumer of a group: when it was last seen, and its own pending IDs
/// (the group's PEL holds the details).
#[derive(Debug, Clone)]
pub(crate) struct Consumer {
    pub(crate) seen_time: i64,
    /// When the consumer last had entries delivered or claimed (Redis
    /// 7.2's `active-time`), -1 before that.
    pub(crate) active_time: i64,
    pub(crate) pel: BTreeSet<StreamId>,
}

impl Consumer {
    pub(crate) fn new(now: i64) -> Self {
        Consumer {
            seen_time: now,
            active_time: -1,
            pel: BTreeSet::new(),
        }
    }
}

/// A consumer group: the last ID delivered, the logical read counter, the
/// pending entries list and the consumers (both ordered as Redis's radix
/// trees order them: IDs numerically, names bytewise).
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) last_id: StreamId,
    /// How many entries the group read, [`INVALID_ENTRIES_READ`] if unknown.
    pub(crate) entries_read: i64,
    pub(crate) pel: BTreeMap<StreamId, Nack>,
    pub(crate) consumers: BTreeMap<Bytes, Consumer>,
}

impl Group {
    pub(crate) fn new(last_id: StreamId, entries_read: i64) -> Self {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Removes `id` from the group's PEL and its consumer's; returns
    /// whether it was pending.
    pub(crate) fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(nack) => {
                if let Some(c) = self.consumers.get_mut(&nack.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Gives the pending entry `id` to `consumer` (which must exist).
    /// Marks `consumer` active at `now`: entries were delivered to it or
    /// claimed by it.
    pub(crate) fn activate_consumer(&mut self, consumer: &[u8], now: i64) {
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.active_time = now;
        }
    }

    pub(crate) fn assign(&mut self, id: StreamId, consumer: &[u8]) {
        let Some(nack) = self.pel.get_mut(&id) else {
            return;
        };
        if nack.consumer.as_slice() != consumer {
            let old = std::mem::replace(&mut nack.consumer, consumer.to_vec());
            if let Some(c) = self.consumers.get_mut(&old) {
                c.pel.remove(&id);
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    /// The consumer `name`, created if missing; `seen_time` refreshed
    /// (Redis's `streamLookupConsumer` + `streamCreateConsumer`).
    pub(crate) fn touch_consumer(&mut self, name: &[u8], now: i64) {
        self.consumers
            .entry(name.to_vec())
            .and_modify(|c| c.seen_time = now)
            .or_insert_with(|| Consumer::new(now));
    }
}

/// Redis's model of one listpack node: enough to decide where the next
/// entry goes and what approximate trimming removes.
#[derive(Debug, Clone)]
struct Node {
    /// The fields of the node's first entry (entries with the same fields
    /// are stored more compactly).
    master_fields: Vec<Bytes>,
    /// Entries still in the stream, and entries deleted but still there.
    live: u64,
    deleted: u64,
    /// The listpack's bytes without its header, terminator and the two
    /// counters above (whose size depends on their values).
    body: usize,
    /// The ID of the last entry appended, deleted or not.
    last: StreamId,
}

impl Node {
    /// Redis's `lpBytes` of this node.
    fn bytes(&self) -> usize {
        7 + int_size(self.live as i64) + int_size(self.deleted as i64) + self.body
    }
}

/// The bytes a listpack element takes: its encoding plus its back length.
fn element_size(encoded: usize) -> usize {
    encoded + backlen_len(encoded)
}

/// How many bytes the backlen of a listpack element of `size` bytes
/// takes (the RDB writer's listpacks share it).
pub(crate) fn backlen_len(size: usize) -> usize {
    match size {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// The size of an integer element in a listpack.
fn int_size(v: i64) -> usize {
    let encoded = if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if i16::try_from(v).is_ok() {
        3
    } else if (-(1 << 23)..(1 << 23)).contains(&v) {
        4
    } else if i32::try_from(v).is_ok() {
        5
    } else {
        9
    };
    element_size(encoded)
}

/// The size of a string element: stored as an integer when it reads as one.
fn str_size(s: &[u8]) -> usize {
    if s.len() <= 20 {
        if let Some(v) = parse_i64(s) {
            return int_size(v);
        }
    }
    let header = match s.len() {
        0..=63 => 1,
        64..=4095 => 2,
        _ => 5,
    };
    element_size(header + s.len())
}

/// One node of a stream as DUMP writes it (see [`Stream::nodes`]).
pub(crate) struct NodeView<'a> {
    pub(crate) master: StreamId,
    pub(crate) master_fields: &'a [Bytes],
    pub(crate) entries: Vec<(&'a StreamId, &'a Vec<Bytes>)>,
}

/// One node of a stream as RESTORE read it (see [`Stream::load_node`]).
pub(crate) struct LoadedNode {
    pub(crate) master: StreamId,
    pub(crate) master_fields: Vec<Bytes>,
    pub(crate) entries: Vec<(StreamId, Vec<Bytes>)>,
    pub(crate) deleted: u64,
    pub(crate) last: StreamId,
    pub(crate) bytes: usize,
}

/// Redis's `STREAM_LISTPACK_MAX_SIZE`.
const LISTPACK_MAX_SIZE: u64 = 1 << 30;

/// How a stream is trimmed (XADD's and XTRIM's MAXLEN / MINID).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// The node limits in force (`stream-node-max-bytes` and
/// `stream-node-max-entries`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeLimits {
    pub(crate) max_bytes: u64,
    pub(crate) max_entries: u64,
}

/// A stream value.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stream {
    /// The entries, each a flat list of field, value, field, value...
    entries: BTreeMap<StreamId, Vec<Bytes>>,
    /// The listpack nodes, by master ID.
    nodes: BTreeMap<StreamId, Node>,
    pub(crate) last_id: StreamId,
    /// The first entry's ID as Redis records it (0-0 when empty).
    pub(crate) first_id: StreamId,
    pub(crate) max_deleted_id: StreamId,
    pub(crate) entries_added: u64,
    pub(crate) groups: BTreeMap<Bytes, Group>,
}

impl Stream {
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn get(&self, id: &StreamId) -> Option<&Vec<Bytes>> {
        self.entries.get(id)
    }

    pub(crate) fn contains(&self, id: &StreamId) -> bool {
        self.entries.contains_key(id)
    }

    /// The entries with IDs in `start..=end`, in order or reversed.
    pub(crate) fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (&StreamId, &Vec<Bytes>)> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let r = self.entries.range(start..=end);
        if rev {
            Box::new(r.rev())
        } else {
            Box::new(r)
        }
    }

    /// The last entry's ID (Redis's `streamLastValidID`), if any.
    pub(crate) fn last_valid_id(&self) -> Option<StreamId> {
        self.entries.keys().next_back().copied()
    }

    /// The number of radix tree keys (nodes) of the stream.
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The number of radix tree nodes Redis's `rax` would hold for the
    /// nodes' keys, counted on the canonical compressed trie.
    pub(crate) fn rax_node_count(&self) -> usize {
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|id| id.encode()).collect();
        if keys.is_empty() {
            return 1;
        }
        rax_nodes(&keys, 0)
    }

    /// Appends an entry with ID `id` (already checked greater than the
    /// last one), splitting nodes as Redis does.
    pub(crate) fn append(&mut self, id: StreamId, fields: Vec<Bytes>, limits: NodeLimits) {
        let total: u64 = fields.iter().map(|f| f.len() as u64).sum();
        let max_bytes = match limits.max_bytes {
            0 => LISTPACK_MAX_SIZE,
            n => n.min(LISTPACK_MAX_SIZE),
        };
        let names: Vec<&Bytes> = fields.iter().step_by(2).collect();
        let tail_fits = self.nodes.values().next_back().is_some_and(|node| {
            node.bytes() as u64 + total < max_bytes
                && (limits.max_entries == 0 || node.live + node.deleted < limits.max_entries)
        });
        if !tail_fits {
            let mut body = int_size(names.len() as i64) + int_size(0);
            body += names.iter().map(|f| str_size(f)).sum::<usize>();
            self.nodes.insert(
                id,
                Node {
                    master_fields: names.iter().map(|f| (*f).clone()).collect(),
                    live: 0,
                    deleted: 0,
                    body,
                    last: id,
                },
            );
        }
        if let Some((master, node)) = self.nodes.iter_mut().next_back() {
            let same = node.master_fields.len() == names.len()
                && node.master_fields.iter().zip(&names).all(|(a, b)| a == *b);
            let n = names.len() as i64;
            let mut size = int_size(if same { 2 } else { 0 })
                + int_size(id.ms.wrapping_sub(master.ms) as i64)
                + int_size(id.seq.wrapping_sub(master.seq) as i64);
            let mut count = n + 3;
            if same {
                size += fields
                    .iter()
                    .skip(1)
                    .step_by(2)
                    .map(|v| str_size(v))
                    .sum::<usize>();
            } else {
                size += int_size(n) + fields.iter().map(|f| str_size(f)).sum::<usize>();
                count += n + 1;
            }
            size += int_size(count);
            node.body += size;
            node.live += 1;
            node.last = id;
        }
        self.entries.insert(id, fields);
        self.entries_added += 1;
        self.last_id = id;
        if self.entries.len() == 1 {
            self.first_id = id;
        }
    }

    /// The master ID of the node holding `id`.
    fn node_of(&self, id: StreamId) -> Option<StreamId> {
        self.nodes.range(..=id).next_back().map(|(k, _)| *k)
    }

    /// Deletes the entry `id` (XDEL); returns whether it was there.
    /// A node left with no live entry goes.
    pub(crate) fn delete(&mut self, id: StreamId) -> bool {
        if self.entries.remove(&id).is_none() {
            return false;
        }
        if let Some(master) = self.node_of(id) {
            if let Some(node) = self.nodes.get_mut(&master) {
                node.live = node.live.saturating_sub(1);
                node.deleted += 1;
                if node.live == 0 {
                    self.nodes.remove(&master);
                }
            }
        }
        true
    }

    /// Recomputes the recorded first ID after deletions.
    pub(crate) fn refresh_first_id(&mut self) {
        self.first_id = self.entries.keys().next().copied().unwrap_or(StreamId::MIN);
    }

    /// Redis's `streamTrim`: removes entries from the head by `trim`,
    /// whole nodes only if `approx`, at most `limit` entries if non-zero
    /// (counted in whole nodes). Returns how many entries went.
    pub(crate) fn trim(&mut self, trim: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted: u64 = 0;
        // Trimming works from the head: the first node goes whole or is
        // where trimming stops.
        while let Some((&master, node)) = self.nodes.iter().next() {
            let len = self.entries.len() as u64;
            if let Trim::MaxLen(max) = trim {
                if len <= max {
                    break;
                }
            }
            let live = node.live;
            if limit != 0 && deleted + live > limit {
                break;
            }
            let remove_node = match trim {
                Trim::MaxLen(max) => len - live >= max,
                Trim::MinId(min) => node.last < min,
            };
            let node_end = self.nodes.keys().nth(1).copied();
            let in_node: Vec<StreamId> = match node_end {
                Some(end) => self.entries.range(master..end).map(|(k, _)| *k).collect(),
                None => self.entries.range(master..).map(|(k, _)| *k).collect(),
            };
            if remove_node {
                for id in &in_node {
                    self.entries.remove(id);
                }
                self.nodes.remove(&master);
                deleted += live;
                continue;
            }
            if approx {
                break;
            }
            let mut from_node = 0;
            for id in in_node {
                let stop = match trim {
                    Trim::MaxLen(max) => self.entries.len() as u64 <= max,
                    Trim::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                self.entries.remove(&id);
                from_node += 1;
            }
            if let Some(node) = self.nodes.get_mut(&master) {
                node.live -= from_node;
                node.deleted += from_node;
            }
            deleted += from_node;
            break;
        }
        if self.entries.is_empty() {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.refresh_first_id();
        }
        deleted
    }

    /// Redis's `streamRangeHasTombstones` from `start` to the end.
    pub(crate) fn has_tombstones_from(&self, start: StreamId) -> bool {
        if self.entries.is_empty() || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: the logical
    /// read counter of `id`, or [`INVALID_ENTRIES_READ`].
    pub(crate) fn estimate_entries_read(&self, id: StreamId) -> i64 {
        let added = i64::try_from(self.entries_added).unwrap_or(i64::MAX);
        if self.entries_added == 0 {
            return 0;
        }
        if self.entries.is_empty() && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        }
        if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        let len = self.entries.len() as i64;
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            if id < self.first_id {
                return added - len;
            }
            if id == self.first_id {
                return added - len + 1;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// A group's lag (Redis's `streamReplyWithCGLag`), `None` if unknown.
    pub(crate) fn lag(&self, group: &Group) -> Option<i64> {
        let added = i64::try_from(self.entries_added).unwrap_or(i64::MAX);
        if self.entries_added == 0 {
            return Some(0);
        }
        if group.entries_read != INVALID_ENTRIES_READ && !self.has_tombstones_from(group.last_id) {
            return Some(added - group.entries_read);
        }
        match self.estimate_entries_read(group.last_id) {
            INVALID_ENTRIES_READ => None,
            read => Some(added - read),
        }
    }

    /// Delivers the entry `id` to a group reading past its last ID
    /// (the group side of Redis's `streamReplyWithRange`).
    pub(crate) fn advance_group(&mut self, group_name: &[u8], id: StreamId) {
        let tombstones = self.has_tombstones_from(id);
        let estimate = self.estimate_entries_read(id);
        let added = self.entries_added;
        if let Some(group) = self.groups.get_mut(group_name) {
            if id > group.last_id {
                if group.entries_read != INVALID_ENTRIES_READ && !tombstones {
                    group.entries_read += 1;
                } else if added > 0 {
                    group.entries_read = estimate;
                }
                group.last_id = id;
            }
        }
    }

    /// The listpack nodes, for DUMP: each node's master ID, its master
    /// fields, and its live entries (deleted ones are not kept).
    pub(crate) fn nodes(&self) -> impl Iterator<Item = NodeView<'_>> {
        let masters: Vec<StreamId> = self.nodes.keys().copied().collect();
        self.nodes
            .iter()
            .enumerate()
            .map(move |(i, (&master, node))| {
                let entries = match masters.get(i + 1) {
                    Some(&next) => self.entries.range(master..next),
                    None => self.entries.range(master..),
                };
                NodeView {
                    master,
                    master_fields: &node.master_fields,
                    entries: entries.collect(),
                }
            })
    }

    /// Adds a node as a DUMP payload holds it (RESTORE): `entries` are its
    /// live entries, ascending, all at or after `master`, which comes
    /// after every node and entry already loaded; `deleted` and `last` (the last ID the node
    /// holds, deleted or not) and `bytes` (the listpack's size) rebuild
    /// Redis's view of the node, so that later appends and approximate
    /// trims treat it as Redis does. A node with no live entry is dropped,
    /// as Redis drops it. Returns false, changing nothing, if an entry is
    /// out of order.
    pub(crate) fn load_node(&mut self, node: LoadedNode) -> bool {
        let ordered = node.entries.windows(2).all(|w| w[0].0 < w[1].0)
            && node.entries.first().is_none_or(|(id, _)| {
                *id >= node.master
                    && self
                        .entries
                        .keys()
                        .next_back()
                        .is_none_or(|l| node.master > *l)
                    && self
                        .nodes
                        .keys()
                        .next_back()
                        .is_none_or(|m| node.master > *m)
            });
        if !ordered {
            return false;
        }
        let live = node.entries.len() as u64;
        if live == 0 {
            return true;
        }
        let fixed = 7 + int_size(live as i64) + int_size(node.deleted as i64);
        self.nodes.insert(
            node.master,
            Node {
                master_fields: node.master_fields,
                live,
                deleted: node.deleted,
                body: node.bytes.saturating_sub(fixed),
                last: node.last,
            },
        );
        self.entries.extend(node.entries);
        true
    }

    /// The number of bytes of all entries' fields and values (MEMORY USAGE).
    pub(crate) fn data_bytes(&self) -> usize {
        self.entries
            .values()
            .map(|f| f.iter().map(Vec::len).sum::<usize>() + 16)
            .sum()
    }
}

/// The nodes of a canonical compressed radix tree holding `keys` (sorted,
/// distinct, 16 bytes each), from a node that starts at byte `depth`.
fn rax_nodes(keys: &[[u8; 16]], depth: usize) -> usize {
    if depth == 16 {
        return 1;
    }
    let first = keys[0][depth];
    if keys.iter().all(|k| k[depth] == first) {
        // A compressed run up to where the keys part (or end), then the
        // node found there.
        let mut end = depth + 1;
        while end < 16 && keys.iter().all(|k| k[end] == keys[0][end]) {
            end += 1;
        }
        return 1 + rax_nodes(keys, end);
    }
    let mut count = 1;
    let mut start = 0;
    while start < keys.len() {
        let byte = keys[start][depth];
        let mut end = start;
        while end < keys.len() && keys[end][depth] == byte {
            end += 1;
        }
        count += rax_nodes(&keys[start..end], depth + 1);
        start = end;
    }
    count
}

/// Parses a stream ID as Redis's `streamGenericParseIDOrReply`: `ms-seq`
/// or `ms` (the sequence is then `missing_seq`), `-` and `+` unless
/// `strict`. With `allow_auto_seq`, `ms-*` is accepted and returns
/// `seq_given == false`. `None` for an invalid ID.
pub(crate) fn parse_id(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    allow_auto_seq: bool,
) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    match arg {
        b"-" | b"+" if strict => return None,
        b"-" => return Some((StreamId::MIN, true)),
        b"+" => return Some((StreamId::MAX, true)),
        _ => {}
    }
    // C strings end at a NUL byte.
    let arg = match arg.iter().position(|&b| b == 0) {
        Some(end) => &arg[..end],
        None => arg,
    };
    let (ms_part, seq_part) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = parse_u64(ms_part)?;
    match seq_part {
        None => Some((StreamId::new(ms, missing_seq), true)),
        Some(b"*") if allow_auto_seq => Some((StreamId::new(ms, 0), false)),
        Some(seq) => Some((StreamId::new(ms, parse_u64(seq)?), true)),
    }
}

/// Redis's `string2ull`: a decimal u64, as `strtoull` reads it after
/// `string2ll` failed (so a leading `+`, spaces or zeros are accepted
/// only where `strtoull` accepts them), with nothing after the digits.
fn parse_u64(bytes: &[u8]) -> Option<u64> {
    if let Some(v) = parse_i64(bytes) {
        return u64::try_from(v).ok();
    }
    // strtoull: optional leading whitespace, an optional sign, digits;
    // Redis then requires the whole string consumed and no ERANGE. A
    // `-` makes strtoull negate, which Redis (7.0.15) does not reject.
    let mut rest = bytes;
    while let Some((c, tail)) = rest.split_first() {
        if c.is_ascii_whitespace() {
            rest = tail;
        } else {
            break;
        }
    }
    let (neg, digits) = match rest.split_first() {
        Some((b'-', tail)) => (true, tail),
        Some((b'+', tail)) => (false, tail),
        _ => (false, rest),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_reads_them() {
        let id = |s: &str| parse_id(s.as_bytes(), 0, true, false).map(|(i, _)| i.to_string());
        assert_eq!(id("1-2").as_deref(), Some("1-2"));
        assert_eq!(id("5").as_deref(), Some("5-0"));
        assert_eq!(
            id("18446744073709551615-18446744073709551615").as_deref(),
            Some("18446744073709551615-18446744073709551615")
        );
        assert_eq!(id("18446744073709551616-0"), None);
        assert_eq!(id("-"), None);
        assert_eq!(id("1-*"), None);
        assert_eq!(id("a-1"), None);
        assert_eq!(id("1-"), None);
        assert_eq!(
            parse_id(b"1-*", 0, true, true),
            Some((StreamId::new(1, 0), false))
        );
        assert_eq!(parse_id(b"+", 0, false, false), Some((StreamId::MAX, true)));
    }

    #[test]
    fn next_and_prev_wrap_at_the_edges() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
    }

    #[test]
    fn rax_node_counts() {
        let mut s = Stream::default();
        assert_eq!(s.rax_node_count(), 1);
        let limits = NodeLimits {
            max_bytes: 4096,
            max_entries: 1,
        };
        s.append(
            StreamId::new(1, 0),
            vec![b"f".to_vec(), b"v".to_vec()],
            limits,
        );
        assert_eq!(s.rax_node_count(), 2);
        s.append(
            StreamId::new(2, 0),
            vec![b"f".to_vec(), b"v".to_vec()],
            limits,
        );
        assert_eq!(s.node_count(), 2);
        assert_eq!(s.rax_node_count(), 6);
    }
}
