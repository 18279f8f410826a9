//! The hashes with field TTLs of RDB version 12 (Redis 7.4's `rdb.c`):
//!
//! - `RDB_TYPE_HASH_LISTPACK_EX` (a `listpackex` hash): the hash's
//!   soonest field expiry (8 bytes, ms; `EB_EXPIRE_TIME_INVALID`, 2^48, if
//!   none), then a listpack of field, value, expiry triples, the expiry 0
//!   for a field without a TTL.
//! - `RDB_TYPE_HASH_METADATA` (a table with field TTLs): the soonest
//!   expiry, the field count, then for each field its expiry as a length
//!   (0 for none, else the time minus the soonest plus 1), the field and
//!   the value.
//!
//! A table whose fields have no TTL is a plain `RDB_TYPE_HASH`, as Redis
//! saves it.

use super::{kind, listpack, Elem, Reader, Writer};
use crate::config::Limits;
use crate::value::encoding::History;
use crate::value::hash::HashValue;
use crate::value::Value;

/// `EB_EXPIRE_TIME_INVALID`: no expiry.
const NO_EXPIRY: i64 = 1 << 48;

/// Writes `hash`, which has had field TTLs, as Redis 7.4 saves it:
/// `listpackex` if `compact`, else a table with its TTLs.
pub(crate) fn encode(w: &mut Writer, hash: &HashValue, compact: bool) {
    let soonest = hash.ttls().map(|(_, at)| at).min();
    if compact {
        w.byte(kind::HASH_LISTPACK_EX);
        w.ms_time(soonest.unwrap_or(NO_EXPIRY));
        let mut lp = listpack::Builder::default();
        for (field, value) in hash.iter() {
            lp.push(field);
            lp.push(value);
            lp.push_int(hash.ttl(field).unwrap_or(0));
        }
        w.string(&lp.finish());
        return;
    }
    let soonest = soonest.unwrap_or(NO_EXPIRY);
    w.byte(kind::HASH_METADATA);
    w.ms_time(soonest);
    w.length(hash.len() as u64);
    for (field, value) in hash.iter() {
        let relative = hash.ttl(field).map_or(0, |at| at - soonest + 1);
        w.length(u64::try_from(relative).unwrap_or(0));
        w.string(field);
        w.string(value);
    }
}

/// Reads a hash of type `tag` (one of the two above, read already).
pub(crate) fn decode(tag: u8, r: &mut Reader<'_>, limits: &Limits) -> Option<(Value, History)> {
    let soonest = r.ms_time()?;
    let mut triples: Vec<(Vec<u8>, Vec<u8>, Option<i64>)> = Vec::new();
    if tag == kind::HASH_LISTPACK_EX {
        let blob = r.string()?;
        let elems = listpack::elements(&blob)?;
        if elems.is_empty() || !elems.len().is_multiple_of(3) {
            return None;
        }
        for t in elems.chunks_exact(3) {
            let at = match t[2] {
                Elem::Int(0) => None,
                Elem::Int(at) if at > 0 => Some(at),
                _ => return None,
            };
            triples.push((t[0].to_bytes(), t[1].to_bytes(), at));
        }
    } else {
        let n = r.count()?;
        if n == 0 {
            return None;
        }
        for _ in 0..n {
            let relative = i64::try_from(r.length()?).ok()?;
            let field = r.bytes()?;
            let value = r.bytes()?;
            let at = (relative > 0)
                .then(|| soonest.checked_add(relative - 1))
                .flatten();
            if relative > 0 && at.is_none() {
                return None;
            }
            triples.push((field, value, at));
        }
    }
    let max = limits.hash_max_listpack_value;
    let fits = triples.len() as u64 <= limits.hash_max_listpack_entries
        && (triples.iter()).all(|(f, v, _)| f.len() as u64 <= max && v.len() as u64 <= max);
    let pairs = triples.iter().map(|(f, v, _)| (&f[..], &v[..]));
    let mut hash = HashValue::from_pairs(pairs, fits)?;
    hash.make_expiring();
    for (field, _, at) in &triples {
        if let Some(at) = at {
            hash.set_ttl(field, *at);
        }
    }
    let history = if fits {
        History::Fresh
    } else {
        History::Converted
    };
    Some((Value::Hash(hash), history))
}

#[cfg(test)]
mod tests;
