//! Cluster mode: the engine as one Redis Cluster node that serves all
//! 16384 slots, and so refuses what any cluster node refuses: a command or
//! a transaction whose keys are in more than one slot (CROSSSLOT), a
//! script touching keys outside its slot, numbered databases, and SORT's
//! patterns that read other keys. Code written for a cluster then fails
//! in process the way it would on the cluster, not later in production.

use crate::command_table::{self, Meta};
use crate::error::CmdError;

/// How many slots a cluster has.
pub(crate) const SLOTS: u16 = 16384;

/// The slot of `key`: CRC16 (XMODEM) of the key, or of its hash tag (the
/// text between the first `{` and the next `}`, if not empty), mod 16384.
pub(crate) fn slot(key: &[u8]) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(hash_tag(key).unwrap_or(key)) % SLOTS
}

fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let len = key[open + 1..].iter().position(|&b| b == b'}')?;
    (len > 0).then(|| &key[open + 1..open + 1 + len])
}

/// Redis's refusal of keys in several slots.
pub(crate) fn cross_slot() -> CmdError {
    CmdError::raw("CROSSSLOT Keys in request don't hash to the same slot")
}

/// The one slot of the keys of the command lines `lines` (`None`: they have
/// no key), or CROSSSLOT; Redis's `getNodeByQuery` on a node that owns
/// every slot.
pub(crate) fn slot_of<'a>(
    lines: impl IntoIterator<Item = &'a [&'a [u8]]>,
) -> Result<Option<u16>, CmdError> {
    let mut found = None;
    for argv in lines {
        let Some(meta) = command_table::of_line(argv) else {
            continue;
        };
        for key in keys(meta, argv) {
            let s = slot(key);
            match found {
                None => found = Some(s),
                Some(f) if f != s => return Err(cross_slot()),
                Some(_) => {}
            }
        }
    }
    Ok(found)
}

/// The keys of one command line (none where the arguments are invalid:
/// the command reports that itself).
fn keys<'a>(meta: &Meta, argv: &[&'a [u8]]) -> Vec<&'a [u8]> {
    meta.key_positions(argv)
        .unwrap_or_default()
        .into_iter()
        .map(|i| argv[i])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against CLUSTER KEYSLOT of redis-server 7.0.15.
    #[test]
    fn slots_as_redis_computes_them() {
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"{user1000}.followers"));
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_ne!(slot(b"foo{}{bar}"), slot(b"bar"));
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        assert_eq!(slot(b"foo{bar}{zap}"), slot(b"bar"));
        assert_eq!(slot(b""), 0);
    }

    #[test]
    fn lines_in_one_slot_or_crossslot() {
        let line =
            |s: &'static str| -> Vec<&'static [u8]> { s.split(' ').map(str::as_bytes).collect() };
        let (a, b, c) = (line("SET {t}a 1"), line("GET {t}b"), line("MGET x y"));
        assert_eq!(slot_of([&a[..], &b[..]]), Ok(Some(slot(b"t"))));
        assert!(slot_of([&c[..]]).is_err());
        assert!(slot_of([&a[..], &line("GET x")[..]]).is_err());
        assert_eq!(slot_of([&line("PING")[..]]), Ok(None));
    }
}
