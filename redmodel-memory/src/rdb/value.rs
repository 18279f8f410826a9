//! Whole values to the body of a DUMP payload and back: the object type
//! byte and the object (`rdbSaveObjectType` + `rdbSaveObject`, and
//! `rdbLoadObjectType` + `rdbLoadObject`).
//!
//! DUMP writes what Redis 7.0.15 writes for the encoding OBJECT ENCODING
//! names: a listpack hash or sorted set as one listpack, an intset set as
//! an intset, a list as a quicklist of listpacks, the big encodings
//! element by element. RESTORE reads all of that, and the encodings of
//! older versions that Redis 7 still loads (ziplists, zipmaps, text
//! scores, plain lists, quicklists of ziplists, version 1 streams), and
//! works out the encoding Redis would give the restored value (its
//! [`History`]) from the same thresholds Redis applies while loading.
//!
//! The values are read and built only through their types' ordinary
//! methods (iteration, insertion), in the few helpers at the end of this
//! file, so that a change of their representation touches only those.

use std::borrow::Cow;

use super::{intset, kind, listpack, stream, ziplist, Writer};
use super::{zipmap, Elem, Reader};
use crate::args::parse_i64;
use crate::config::Limits;
use crate::float::format_double;
use crate::value::encoding::{encoding_name, History};
use crate::value::hash::HashValue;
use crate::value::list::ListValue;
use crate::value::set::SetValue;
use crate::value::zset::ZSet;
use crate::value::{Bytes, Value};

/// A hash's field and value, borrowed from the payload or decoded.
type Pair<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// A quicklist node's container (`QUICKLIST_NODE_CONTAINER_*`).
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

/// The size a list's listpack nodes stop growing at: Redis's default
/// `list-max-listpack-size -2` (8 kB), with its per-element estimate
/// (`SIZE_ESTIMATE_OVERHEAD`).
const LIST_NODE_BYTES: usize = 8192;
const LIST_ELEMENT_OVERHEAD: usize = 8;

/// The type byte and object of `value`, whose encoding is the one
/// `history` gives it, in the layout of the RDB version of `version`
/// (streams: 7.4 keeps each consumer's active time); strings
/// LZF-compressed if `compress`.
pub(crate) fn encode(
    value: &Value,
    history: History,
    compress: bool,
    version: crate::RedisVersion,
) -> Vec<u8> {
    let mut w = Writer::new(compress);
    let encoding = encoding_name(value, history);
    match value {
        Value::Str(s) => {
            w.byte(kind::STRING);
            w.string(s);
        }
        Value::List(_) => {
            w.byte(kind::LIST_QUICKLIST_2);
            let nodes = list_nodes(list_items(value));
            w.length(nodes.len() as u64);
            for node in nodes {
                w.length(CONTAINER_PACKED);
                w.string(&node);
            }
        }
        Value::Set(_) if encoding == "listpack" => {
            w.byte(kind::SET_LISTPACK);
            let mut lp = listpack::Builder::default();
            for member in set_members(value) {
                lp.push(&member);
            }
            w.string(&lp.finish());
        }
        Value::Set(_) => {
            let ints: Option<Vec<i64>> = set_members(value).map(|m| parse_i64(&m)).collect();
            match ints {
                Some(mut ints) if encoding == "intset" => {
                    ints.sort_unstable();
                    w.byte(kind::SET_INTSET);
                    w.string(&intset::encode(&ints));
                }
                _ => {
                    w.byte(kind::SET);
                    let members: Vec<Cow<'_, [u8]>> = set_members(value).collect();
                    w.length(members.len() as u64);
                    for m in members {
                        w.string(&m);
                    }
                }
            }
        }
        Value::ZSet(z) if encoding == "listpack" => {
            w.byte(kind::ZSET_LISTPACK);
            let mut lp = listpack::Builder::default();
            for (member, score) in z.iter() {
                lp.push(member);
                lp.push(format_double(score).as_bytes());
            }
            w.string(&lp.finish());
        }
        Value::ZSet(z) => {
            // Greatest first, as Redis walks its skiplist from the tail.
            w.byte(kind::ZSET_2);
            w.length(z.len() as u64);
            for (member, score) in z.iter().rev() {
                w.string(member);
                w.binary_double(score);
            }
        }
        // A table whose fields have no TTL left is a plain hash.
        Value::Hash(h) if encoding == "listpackex" || h.has_ttls() => {
            super::hash_ttl::encode(&mut w, h, encoding == "listpackex");
        }
        Value::Hash(h) if encoding == "listpack" => {
            w.byte(kind::HASH_LISTPACK);
            let mut lp = listpack::Builder::default();
            for (field, value) in h.iter() {
                lp.push(field);
                lp.push(value);
            }
            w.string(&lp.finish());
        }
        Value::Hash(h) => {
            w.byte(kind::HASH);
            w.length(h.len() as u64);
            for (field, value) in h.iter() {
                w.string(field);
                w.string(value);
            }
        }
        Value::Stream(s) => {
            let active_times = version >= crate::RedisVersion::V7_4;
            w.byte(if active_times {
                kind::STREAM_LISTPACKS_3
            } else {
                kind::STREAM_LISTPACKS_2
            });
            stream::encode(&mut w, s, active_times);
        }
    }
    w.finish()
}

/// The listpacks of the quicklist a list is in Redis (DEBUG OBJECT's
/// `ql_` fields).
pub(crate) fn quicklist_nodes(value: &Value) -> Vec<Vec<u8>> {
    list_nodes(list_items(value))
}

/// A list's elements in listpacks of about 8 kB, as Redis's quicklist
/// fills its nodes.
fn list_nodes<'a>(items: impl Iterator<Item = &'a [u8]>) -> Vec<Vec<u8>> {
    let mut nodes = Vec::new();
    let mut lp = listpack::Builder::default();
    for item in items {
        if lp.len() > 0 && lp.bytes() + item.len() + LIST_ELEMENT_OVERHEAD > LIST_NODE_BYTES {
            nodes.push(std::mem::take(&mut lp).finish());
        }
        lp.push(item);
    }
    if lp.len() > 0 {
        nodes.push(lp.finish());
    }
    nodes
}

/// The value at the start of `payload`, with the history that gives it
/// the encoding Redis would load it in under `limits`; `None` for
/// anything Redis answers "Bad data format" to, and for the
/// inconsistencies only its deep sanitization would catch (the engine
/// always checks: a hash or set with a repeated field or member, a stream
/// entry out of order). Bytes after the object are ignored, as Redis
/// ignores them.
pub(crate) fn decode(payload: &[u8], limits: &Limits) -> Option<(Value, History)> {
    let mut r = Reader::new(payload);
    let tag = r.byte()?;
    decode_object(tag, &mut r, limits)
}

/// The object of type `tag` (read already) at `r`, which is left after
/// it: [`decode`]'s work, and an RDB file's for each of its keys.
pub(crate) fn decode_object(
    tag: u8,
    r: &mut Reader<'_>,
    limits: &Limits,
) -> Option<(Value, History)> {
    let compact = |fits: bool| {
        if fits {
            History::Fresh
        } else {
            History::Converted
        }
    };
    match tag {
        kind::STRING => Some((Value::Str(r.bytes()?.into()), History::Fresh)),
        kind::LIST => {
            let n = non_empty(r.count()?)?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(r.bytes()?);
            }
            Some((list_from(items), History::Fresh))
        }
        kind::LIST_QUICKLIST | kind::LIST_QUICKLIST_2 => {
            let items = read_quicklist(r, tag == kind::LIST_QUICKLIST_2)?;
            non_empty(items.len())?;
            Some((list_from(items), History::Fresh))
        }
        kind::LIST_ZIPLIST => {
            let blob = r.string()?;
            let items: Vec<Bytes> = ziplist::elements(&blob)?
                .into_iter()
                .map(Elem::to_bytes)
                .collect();
            non_empty(items.len())?;
            Some((list_from(items), History::Fresh))
        }
        kind::SET => {
            let n = non_empty(r.count()?)?;
            let mut members = Vec::new();
            for _ in 0..n {
                members.push(r.bytes()?);
            }
            let max = limits.set_max_intset_entries.min(1 << 30);
            let ints = members.iter().all(|m| parse_i64(m).is_some());
            let history = if n as u64 <= max && ints {
                History::Fresh
            } else if n as u64 <= max && small_set(&members, limits) {
                // Redis 7.2 and later load a small set of strings (one
                // that would start as an intset) as a listpack.
                History::Listpack
            } else {
                History::Converted
            };
            Some((set_from(members)?, history))
        }
        kind::SET_LISTPACK => {
            let blob = r.string()?;
            let members: Vec<Bytes> = listpack::elements(&blob)?
                .into_iter()
                .map(Elem::to_bytes)
                .collect();
            let fits = non_empty(members.len())? as u64 <= limits.set_max_listpack_entries;
            let history = if fits {
                History::Listpack
            } else {
                History::Converted
            };
            Some((set_from(members)?, history))
        }
        kind::SET_INTSET => {
            let blob = r.string()?;
            let ints = intset::members(&blob)?;
            let fits = ints.len() as u64 <= limits.set_max_intset_entries;
            let members = ints.iter().map(|v| v.to_string().into_bytes()).collect();
            Some((set_from(members)?, compact(fits)))
        }
        kind::ZSET | kind::ZSET_2 => {
            let n = non_empty(r.count()?)?;
            let mut pairs = Vec::new();
            for _ in 0..n {
                let member = r.bytes()?;
                let score = if tag == kind::ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                if score.is_nan() {
                    return None;
                }
                pairs.push((member, score));
            }
            let fits = n as u64 <= limits.zset_max_listpack_entries
                && pairs
                    .iter()
                    .all(|(m, _)| m.len() as u64 <= limits.zset_max_listpack_value);
            Some((zset_from(pairs)?, compact(fits)))
        }
        kind::ZSET_ZIPLIST | kind::ZSET_LISTPACK => {
            let blob = r.string()?;
            let elems = if tag == kind::ZSET_ZIPLIST {
                ziplist::elements(&blob)?
            } else {
                listpack::elements(&blob)?
            };
            let mut pairs = Vec::new();
            for pair in even_pairs(&elems)? {
                let score = match pair[1] {
                    Elem::Int(v) => v as f64,
                    Elem::Str(s) => score_text(s),
                };
                if score.is_nan() {
                    return None;
                }
                pairs.push((pair[0].to_bytes(), score));
            }
            let fits = non_empty(pairs.len())? as u64 <= limits.zset_max_listpack_entries;
            Some((zset_from(pairs)?, compact(fits)))
        }
        kind::HASH => {
            let n = non_empty(r.count()?)?;
            let mut pairs = Vec::new();
            for _ in 0..n {
                let field = r.string()?;
                let value = r.string()?;
                pairs.push((field, value));
            }
            let max = limits.hash_max_listpack_value;
            let fits = n as u64 <= limits.hash_max_listpack_entries
                && pairs
                    .iter()
                    .all(|(f, v)| f.len() as u64 <= max && v.len() as u64 <= max);
            Some((hash_from(&pairs, fits)?, compact(fits)))
        }
        kind::HASH_ZIPLIST | kind::HASH_LISTPACK => {
            let blob = r.string()?;
            let elems = if tag == kind::HASH_ZIPLIST {
                ziplist::elements(&blob)?
            } else {
                listpack::elements(&blob)?
            };
            let pairs: Vec<Pair<'_>> = even_pairs(&elems)?
                .map(|p| (elem_bytes(p[0]), elem_bytes(p[1])))
                .collect();
            let fits = non_empty(pairs.len())? as u64 <= limits.hash_max_listpack_entries;
            Some((hash_from(&pairs, fits)?, compact(fits)))
        }
        kind::HASH_ZIPMAP => {
            let blob = r.string()?;
            let pairs = zipmap::pairs(&blob)?;
            let max = limits.hash_max_listpack_value;
            let fits = pairs.len() as u64 <= limits.hash_max_listpack_entries
                && pairs
                    .iter()
                    .all(|(f, v)| f.len() as u64 <= max && v.len() as u64 <= max);
            let hash = HashValue::from_pairs(pairs.into_iter(), fits)?;
            Some((Value::Hash(hash), compact(fits)))
        }
        kind::HASH_METADATA | kind::HASH_LISTPACK_EX => super::hash_ttl::decode(tag, r, limits),
        kind::STREAM_LISTPACKS | kind::STREAM_LISTPACKS_2 | kind::STREAM_LISTPACKS_3 => {
            let s = stream::decode(r, tag)?;
            Some((Value::Stream(Box::new(s)), History::Fresh))
        }
        // A module's value needs its module, which the engine has not.
        kind::MODULE | kind::MODULE_2 => None,
        // Types of later versions (7.2's listpack sets and lists), and
        // bytes that are no type: Redis 7.0 knows none of them.
        _ => None,
    }
}

/// A score stored as text in a listpack or ziplist, read as Redis reads
/// it (`zzlStrtod`): C's `strtod` on at most 127 bytes, which takes the
/// longest prefix that is a number and gives 0 when there is none. What
/// Redis writes always reads whole; a damaged payload loads the same
/// scores as on Redis. (Hexadecimal floats, which Redis never writes,
/// read as 0 here.)
fn score_text(text: &[u8]) -> f64 {
    let text = &text[..text.len().min(127)];
    let text = text.split(|&b| b == 0).next().unwrap_or_default();
    let start = text
        .iter()
        .position(|&b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .unwrap_or(text.len());
    let text = &text[start..];
    let (negative, rest) = crate::float::split_sign(text);
    let sign = if negative { -1.0 } else { 1.0 };
    let lower: Vec<u8> = rest.iter().take(8).map(u8::to_ascii_lowercase).collect();
    if lower.starts_with(b"inf") {
        return sign * f64::INFINITY;
    }
    if lower.starts_with(b"nan") {
        return f64::NAN;
    }
    let digits = |from: usize| {
        rest[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut end = digits(0);
    let mut mantissa = end;
    if rest.get(end) == Some(&b'.') {
        let fraction = digits(end + 1);
        mantissa += fraction;
        end += 1 + fraction;
    }
    if mantissa == 0 {
        return 0.0;
    }
    if matches!(rest.get(end), Some(b'e' | b'E')) {
        let exp_sign = usize::from(matches!(rest.get(end + 1), Some(b'+' | b'-')));
        let exp_digits = digits(end + 1 + exp_sign);
        if exp_digits > 0 {
            end += 1 + exp_sign + exp_digits;
        }
    }
    // The prefix is ASCII digits, a dot and an exponent: std reads the
    // same number strtod does (and overflows to infinity as it does).
    let number = std::str::from_utf8(&rest[..end])
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(0.0);
    sign * number
}

/// `n` unless it is zero: Redis refuses an empty aggregate.
fn non_empty(n: usize) -> Option<usize> {
    (n > 0).then_some(n)
}

/// The elements two by two; `None` for an odd count.
fn even_pairs<'e, 'a>(elems: &'e [Elem<'a>]) -> Option<std::slice::ChunksExact<'e, Elem<'a>>> {
    elems.len().is_multiple_of(2).then(|| elems.chunks_exact(2))
}

fn elem_bytes<'a>(e: Elem<'a>) -> Cow<'a, [u8]> {
    match e {
        Elem::Str(s) => Cow::Borrowed(s),
        Elem::Int(_) => Cow::Owned(e.to_bytes()),
    }
}

/// The elements of a quicklist (`LIST_QUICKLIST`: ziplist nodes;
/// `LIST_QUICKLIST_2`: each node a listpack or one plain element).
fn read_quicklist(r: &mut Reader<'_>, version2: bool) -> Option<Vec<Bytes>> {
    let nodes = non_empty(r.count()?)?;
    let mut items = Vec::new();
    for _ in 0..nodes {
        let container = if version2 {
            r.length()?
        } else {
            CONTAINER_PACKED
        };
        if container != CONTAINER_PACKED && container != CONTAINER_PLAIN {
            return None;
        }
        let data = r.string()?;
        if data.is_empty() {
            return None;
        }
        if container == CONTAINER_PLAIN {
            items.push(data.into_owned());
            continue;
        }
        // An empty node is skipped, as Redis skips it.
        let elems = if version2 {
            listpack::elements(&data)?
        } else {
            ziplist::elements(&data)?
        };
        items.extend(elems.into_iter().map(Elem::to_bytes));
    }
    Some(items)
}

// The value types, read and built through their ordinary methods only.

/// The elements of a list, head first.
fn list_items(value: &Value) -> impl Iterator<Item = &[u8]> {
    let list = match value {
        Value::List(l) => Some(l),
        _ => None,
    };
    list.into_iter().flat_map(|l| l.iter())
}

/// The members of a set (an intset's made into text).
fn set_members(value: &Value) -> impl Iterator<Item = Cow<'_, [u8]>> {
    let set = match value {
        Value::Set(s) => Some(s),
        _ => None,
    };
    set.into_iter().flat_map(|s| s.iter())
}

fn list_from(items: Vec<Bytes>) -> Value {
    Value::List(ListValue::from_elements(items))
}

/// Whether Redis 7.2 and later load a set of these `members` (not all
/// integers) as a listpack: few enough, each short enough
/// (`set-max-listpack-entries` and `-value`).
fn small_set(members: &[Bytes], limits: &Limits) -> bool {
    limits.version >= crate::RedisVersion::V7_4
        && members.len() as u64 <= limits.set_max_listpack_entries
        && members
            .iter()
            .all(|m| m.len() as u64 <= limits.set_max_listpack_value)
}

/// A set of `members`; `None` if one is repeated.
fn set_from(members: Vec<Bytes>) -> Option<Value> {
    let mut set = SetValue::default();
    for m in members {
        if !set.insert(&m) {
            return None;
        }
    }
    Some(Value::Set(set))
}

/// A sorted set of `pairs`; `None` if a member is repeated.
fn zset_from(pairs: Vec<(Bytes, f64)>) -> Option<Value> {
    let n = pairs.len();
    let z = ZSet::from_pairs(pairs);
    (z.len() == n).then_some(Value::ZSet(z))
}

/// A hash of `pairs`, compact if it `fits` (see [`HashValue::from_pairs`]);
/// `None` if a field is repeated.
fn hash_from(pairs: &[Pair<'_>], fits: bool) -> Option<Value> {
    let pairs = pairs.iter().map(|(f, v)| (&f[..], &v[..]));
    HashValue::from_pairs(pairs, fits).map(Value::Hash)
}

#[cfg(test)]
mod tests {
    use super::score_text;

    #[test]
    fn text_scores_read_as_strtod_reads_them() {
        assert_eq!(score_text(b"2.5"), 2.5);
        assert_eq!(score_text(b"-inf"), f64::NEG_INFINITY);
        assert_eq!(score_text(b"Infinity"), f64::INFINITY);
        // What Redis writes for 1e300 (`%.17g`) reads back as 1e300.
        assert_eq!(score_text(b"1.0000000000000001e+300"), 1e300);
        assert_eq!(score_text(b"  -3e2xyz"), -300.0);
        assert_eq!(score_text(b"1e"), 1.0);
        assert_eq!(score_text(b".5"), 0.5);
        assert_eq!(score_text(b"5."), 5.0);
        assert_eq!(score_text(b"1e999"), f64::INFINITY);
        assert_eq!(score_text(b"-in\x1c"), 0.0);
        assert_eq!(score_text(b"\x04inf"), 0.0);
        assert_eq!(score_text(b"."), 0.0);
        assert_eq!(score_text(b""), 0.0);
        assert_eq!(score_text(b"12\x0034"), 12.0);
        assert!(score_text(b"nan").is_nan());
    }
}
