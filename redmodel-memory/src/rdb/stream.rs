//! Streams in a payload (`RDB_TYPE_STREAM_LISTPACKS` and `_2`), as
//! Redis 7.0's `rdbSaveObject` and `rdbLoadObject` write and read them:
//!
//! - the listpack nodes: each node's master ID (16 raw bytes, the key of
//!   Redis's radix tree) and its listpack (see [`node_listpack`]);
//! - the length, the last ID, and (version 2 only) the first ID, the
//!   largest deleted ID and the count of entries ever added;
//! - the consumer groups: name, last delivered ID, (version 2 only) the
//!   read counter, the pending entries (raw ID, delivery time, delivery
//!   count), then each consumer with its seen time and the raw IDs of its
//!   pending entries, which must all be in the group's.

use std::collections::{BTreeMap, BTreeSet};

use super::{kind, listpack, Elem, Reader, Writer};
use crate::value::stream::{Consumer, Group, LoadedNode, Nack, NodeView, Stream, StreamId};
use crate::value::Bytes;

/// An entry's flags inside a node (`STREAM_ITEM_FLAG_*`).
const FLAG_DELETED: i64 = 1;
const FLAG_SAME_FIELDS: i64 = 2;

/// Entries per node when DUMP lays the nodes out itself
/// (`stream-node-max-entries`' default).
const FALLBACK_NODE_ENTRIES: usize = 100;

/// The 16 big-endian bytes of a stream ID, as Redis's radix trees key it.
pub(crate) fn id_key(id: StreamId) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&id.ms.to_be_bytes());
    out[8..].copy_from_slice(&id.seq.to_be_bytes());
    out
}

/// The stream ID of a radix tree key.
pub(crate) fn id_from_key(key: &[u8; 16]) -> StreamId {
    let mut ms = [0u8; 8];
    let mut seq = [0u8; 8];
    ms.copy_from_slice(&key[..8]);
    seq.copy_from_slice(&key[8..]);
    StreamId::new(u64::from_be_bytes(ms), u64::from_be_bytes(seq))
}

/// Appends the stream `s` in the `STREAM_LISTPACKS_2` layout, or `_3`
/// with each consumer's active time (`active_times`).
pub(crate) fn encode(w: &mut Writer, s: &Stream, active_times: bool) {
    // A node with no live entry is never kept (Redis frees it), so none
    // is written either.
    let nodes: Vec<NodeView<'_>> = s.nodes().filter(|n| !n.entries.is_empty()).collect();
    let covered: usize = nodes.iter().map(|n| n.entries.len()).sum();
    if covered == s.len() {
        w.length(nodes.len() as u64);
        for node in &nodes {
            w.string(&id_key(node.master));
            w.string(&node_listpack(node));
        }
    } else {
        // The node model lost track of some entry: no entry may be lost
        // with it, so the entries go in fresh nodes of Redis's default
        // size instead.
        let entries: Vec<(&StreamId, &Vec<Bytes>)> =
            s.range(StreamId::MIN, StreamId::MAX, false).collect();
        let chunks: Vec<_> = entries.chunks(FALLBACK_NODE_ENTRIES).collect();
        w.length(chunks.len() as u64);
        for chunk in chunks {
            let master = *chunk[0].0;
            let names: Vec<Bytes> = chunk[0].1.iter().step_by(2).cloned().collect();
            let node = NodeView {
                master,
                master_fields: &names,
                entries: chunk.to_vec(),
            };
            w.string(&id_key(master));
            w.string(&node_listpack(&node));
        }
    }
    w.length(s.len() as u64);
    for id in [s.last_id, s.first_id, s.max_deleted_id] {
        w.length(id.ms);
        w.length(id.seq);
    }
    w.length(s.entries_added);
    w.length(s.groups.len() as u64);
    for (name, group) in &s.groups {
        w.string(name);
        w.length(group.last_id.ms);
        w.length(group.last_id.seq);
        // An unknown counter (-1) is stored as its 64-bit pattern.
        w.length(group.entries_read as u64);
        w.length(group.pel.len() as u64);
        for (id, nack) in &group.pel {
            w.raw(&id_key(*id));
            w.ms_time(nack.delivery_time);
            w.length(nack.delivery_count);
        }
        w.length(group.consumers.len() as u64);
        for (name, consumer) in &group.consumers {
            w.string(name);
            w.ms_time(consumer.seen_time);
            if active_times {
                w.ms_time(consumer.active_time);
            }
            w.length(consumer.pel.len() as u64);
            for id in &consumer.pel {
                w.raw(&id_key(*id));
            }
        }
    }
}

/// A node's listpack (`streamAppendItem`'s layout): the master entry
/// (live count, deleted count, the master fields and a 0 terminator),
/// then each entry: flags, the ID as a difference from the master ID,
/// the fields (or only the values, flagged, when the fields are the
/// master's), and the count of elements the entry took, to walk back.
fn node_listpack(node: &NodeView<'_>) -> Vec<u8> {
    let mut lp = listpack::Builder::default();
    lp.push_int(node.entries.len() as i64);
    lp.push_int(0);
    lp.push_int(node.master_fields.len() as i64);
    for field in node.master_fields {
        lp.push(field);
    }
    lp.push_int(0);
    for (id, fields) in &node.entries {
        let pairs = fields.len() / 2;
        let same = pairs == node.master_fields.len()
            && fields
                .iter()
                .step_by(2)
                .zip(node.master_fields)
                .all(|(a, b)| a == b);
        lp.push_int(if same { FLAG_SAME_FIELDS } else { 0 });
        lp.push_int(id.ms.wrapping_sub(node.master.ms) as i64);
        lp.push_int(id.seq.wrapping_sub(node.master.seq) as i64);
        if same {
            for value in fields.iter().skip(1).step_by(2) {
                lp.push(value);
            }
            lp.push_int(pairs as i64 + 3);
        } else {
            lp.push_int(pairs as i64);
            for item in fields.iter() {
                lp.push(item);
            }
            lp.push_int(2 * pairs as i64 + 4);
        }
    }
    lp.finish()
}

/// Reads a stream in the layout of `tag` (`STREAM_LISTPACKS`, `_2`, or
/// `_3`, whose consumers have an active time). `None` for
/// anything Redis refuses, and for the inconsistencies Redis would only
/// catch with `sanitize-dump-payload yes` (an entry out of order, a
/// pending entry no consumer owns).
pub(crate) fn decode(r: &mut Reader<'_>, tag: u8) -> Option<Stream> {
    let version2 = tag >= kind::STREAM_LISTPACKS_2;
    let active_times = tag >= kind::STREAM_LISTPACKS_3;
    let mut s = Stream::default();
    let nodes = r.count()?;
    for _ in 0..nodes {
        let key = r.string()?;
        let key: &[u8; 16] = key.as_ref().try_into().ok()?;
        let master = id_from_key(key);
        let lp = r.string()?;
        let node = read_node(master, &lp)?;
        if !s.load_node(node) {
            return None;
        }
    }
    let length = r.length()?;
    s.last_id = StreamId::new(r.length()?, r.length()?);
    if version2 {
        s.first_id = StreamId::new(r.length()?, r.length()?);
        s.max_deleted_id = StreamId::new(r.length()?, r.length()?);
        s.entries_added = r.length()?;
    } else {
        // Version 1 had no counters: Redis starts them from the length.
        s.refresh_first_id();
        s.entries_added = length;
    }
    // Counters past what i64 holds are refused: no server writes them
    // (Redis replies them as signed integers), and the engine's counting
    // on from them must not overflow.
    if length != s.len() as u64 || i64::try_from(s.entries_added).is_err() {
        return None;
    }
    let groups = r.count()?;
    for _ in 0..groups {
        let name = r.bytes()?;
        let last_id = StreamId::new(r.length()?, r.length()?);
        let entries_read = if version2 {
            r.length()? as i64
        } else {
            s.estimate_entries_read(last_id)
        };
        if s.groups.contains_key(&name) || entries_read < -1 || entries_read == i64::MAX {
            return None;
        }
        let group = read_group(r, last_id, entries_read, active_times)?;
        s.groups.insert(name, group);
    }
    Some(s)
}

/// The PEL and consumers of a group.
fn read_group(
    r: &mut Reader<'_>,
    last_id: StreamId,
    entries_read: i64,
    active_times: bool,
) -> Option<Group> {
    // The pending entries first, their owners named by the consumers.
    let mut pending: BTreeMap<StreamId, (i64, u64, Option<Bytes>)> = BTreeMap::new();
    let size = r.count()?;
    for _ in 0..size {
        let id = r.raw_stream_id()?;
        let delivery_time = r.ms_time()?;
        let delivery_count = r.length().filter(|&n| i64::try_from(n).is_ok())?;
        if pending
            .insert(id, (delivery_time, delivery_count, None))
            .is_some()
        {
            return None;
        }
    }
    let mut group = Group::new(last_id, entries_read);
    let consumers = r.count()?;
    for _ in 0..consumers {
        let name = r.bytes()?;
        let seen_time = r.ms_time()?;
        // Before Redis 7.2's layout the file has no active time: Redis
        // takes the seen time for it.
        let active_time = if active_times {
            r.ms_time()?
        } else {
            seen_time
        };
        let mut pel = BTreeSet::new();
        let size = r.count()?;
        for _ in 0..size {
            let id = r.raw_stream_id()?;
            let (_, _, owner) = pending.get_mut(&id)?;
            if owner.is_some() {
                return None;
            }
            *owner = Some(name.clone());
            pel.insert(id);
        }
        if group
            .consumers
            .insert(
                name,
                Consumer {
                    seen_time,
                    active_time,
                    pel,
                },
            )
            .is_some()
        {
            return None;
        }
    }
    for (id, (delivery_time, delivery_count, owner)) in pending {
        let nack = Nack {
            consumer: owner?,
            delivery_time,
            delivery_count,
        };
        group.pel.insert(id, nack);
    }
    Some(group)
}

/// One node's listpack, checked as `streamValidateListpackIntegrity`
/// checks it in deep mode, its live entries read.
fn read_node(master: StreamId, lp: &[u8]) -> Option<LoadedNode> {
    let elems = listpack::elements_counted(lp, false)?;
    let mut it = elems.into_iter();
    let int = |it: &mut std::vec::IntoIter<Elem<'_>>| it.next()?.as_int();
    let count = u64::try_from(int(&mut it)?).ok()?;
    let deleted = u64::try_from(int(&mut it)?).ok()?;
    let master_count = usize::try_from(int(&mut it)?).ok()?;
    let mut master_fields = Vec::new();
    for _ in 0..master_count {
        master_fields.push(it.next()?.to_bytes());
    }
    if int(&mut it)? != 0 {
        return None;
    }
    let mut entries = Vec::new();
    let mut last = master;
    let mut seen_deleted = 0;
    for _ in 0..count.checked_add(deleted)? {
        let flags = int(&mut it)?;
        let ms = master.ms.wrapping_add(int(&mut it)? as u64);
        let seq = master.seq.wrapping_add(int(&mut it)? as u64);
        let id = StreamId::new(ms, seq);
        let mut fields = Vec::new();
        let elements = if flags & FLAG_SAME_FIELDS != 0 {
            for name in &master_fields {
                fields.push(name.clone());
                fields.push(it.next()?.to_bytes());
            }
            master_fields.len() + 3
        } else {
            let n = usize::try_from(int(&mut it)?).ok()?;
            for _ in 0..n {
                fields.push(it.next()?.to_bytes());
                fields.push(it.next()?.to_bytes());
            }
            2 * n + 4
        };
        if usize::try_from(int(&mut it)?).ok()? != elements {
            return None;
        }
        if flags & FLAG_DELETED != 0 {
            seen_deleted += 1;
        } else {
            entries.push((id, fields));
        }
        last = id;
    }
    if it.next().is_some() || entries.len() as u64 != count || seen_deleted != deleted {
        return None;
    }
    Some(LoadedNode {
        master,
        master_fields,
        entries,
        deleted,
        last,
        bytes: lp.len(),
    })
}
