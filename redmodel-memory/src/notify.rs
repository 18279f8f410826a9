//! Keyspace notifications (`notify-keyspace-events`), as Redis 7.0's
//! notify.c: a command that changes a key publishes the event's name on
//! `__keyspace@<db>__:<key>` (flag `K`) and the key on
//! `__keyevent@<db>__:<event>` (flag `E`), if the event's class is enabled.
//!
//! # For the command families
//! After a change, call [`Ctx::notify`](crate::command::Ctx::notify) with
//! the class of the event and Redis's event name, exactly where Redis calls
//! `notifyKeyspaceEvent` (t_string.c, t_list.c, db.c, ...):
//!
//! ```ignore
//! ctx.notify(class::LIST, "lpush", key);
//! ```
//!
//! - Call it after the change is made (the key created, modified or
//!   deleted), once per key and event, in Redis's order: for a command
//!   that empties a key, the command's event first, then
//!   [`Ctx::notify_deleted`](crate::command::Ctx::notify_deleted) (`del`
//!   if the key is gone); for a key of another database (MOVE, COPY ...
//!   DB), `Ctx::notify_in`.
//! - Only when something changed: Redis raises no event for a no-op (SADD
//!   of members already there, LPUSHX on a missing key, a pop of 0).
//! - Class: the family's (`class::LIST`, `class::STREAM`, ...) for its own
//!   events, `class::GENERIC` for `del`, `expire`, `rename_*`, ...
//! - It costs one comparison when notifications are off (the default).
//!
//! Three events are raised by the keyspace itself, so no command calls
//! them: `new` (class `n`, whenever a key is created), `expired` (class
//! `x`, passive or active expiry) and `keymiss` (class `m`, a read that
//! finds no key: Redis's `lookupKeyRead`, not a lookup to write, nor
//! OBJECT's). They are logged by the keyspace and published before the
//! next event of the command, or when the command ends, so their order is
//! Redis's (`expired`, then `new`, then the command's own event).

/// The classes of events and the two channel kinds, as Redis's
/// `NOTIFY_*` bits.
pub(crate) mod class {
    /// `K`: publish on `__keyspace@<db>__:<key>`.
    pub(crate) const KEYSPACE: u32 = 1 << 0;
    /// `E`: publish on `__keyevent@<db>__:<event>`.
    pub(crate) const KEYEVENT: u32 = 1 << 1;
    /// `g`: DEL, EXPIRE, RENAME, ... (commands of no one type).
    pub(crate) const GENERIC: u32 = 1 << 2;
    /// `$`: string commands.
    pub(crate) const STRING: u32 = 1 << 3;
    /// `l`: list commands.
    pub(crate) const LIST: u32 = 1 << 4;
    /// `s`: set commands.
    pub(crate) const SET: u32 = 1 << 5;
    /// `h`: hash commands.
    pub(crate) const HASH: u32 = 1 << 6;
    /// `z`: sorted set commands.
    pub(crate) const ZSET: u32 = 1 << 7;
    /// `x`: a key expired.
    pub(crate) const EXPIRED: u32 = 1 << 8;
    /// `e`: a key was evicted under `maxmemory`.
    pub(crate) const EVICTED: u32 = 1 << 9;
    /// `t`: stream commands.
    pub(crate) const STREAM: u32 = 1 << 10;
    /// `m`: a key was read and missing (`keymiss`).
    pub(crate) const KEY_MISS: u32 = 1 << 11;
    /// `d`: module events.
    pub(crate) const MODULE: u32 = 1 << 13;
    /// `n`: a key was created.
    pub(crate) const NEW: u32 = 1 << 14;
    /// `A`: every class but `m` and `n`.
    pub(crate) const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// Redis's `keyspaceEventsStringToFlags`: `None` for a character that
/// names no class.
pub(crate) fn parse_flags(text: &[u8]) -> Option<u32> {
    text.iter().try_fold(0, |flags, &c| {
        let bit = match c {
            b'A' => class::ALL,
            b'g' => class::GENERIC,
            b'$' => class::STRING,
            b'l' => class::LIST,
            b's' => class::SET,
            b'h' => class::HASH,
            b'z' => class::ZSET,
            b'x' => class::EXPIRED,
            b'e' => class::EVICTED,
            b'K' => class::KEYSPACE,
            b'E' => class::KEYEVENT,
            b't' => class::STREAM,
            b'm' => class::KEY_MISS,
            b'd' => class::MODULE,
            b'n' => class::NEW,
            _ => return None,
        };
        Some(flags | bit)
    })
}

/// Redis's `keyspaceEventsFlagsToString`, the canonical form CONFIG GET
/// shows: `A` for all the classes (and then, as in Redis, no `n` even if
/// set), else each class in Redis's order, then `K`, `E`, `m`.
pub(crate) fn flags_to_string(flags: u32) -> String {
    const CLASSES: &[(u32, char)] = &[
        (class::GENERIC, 'g'),
        (class::STRING, '$'),
        (class::LIST, 'l'),
        (class::SET, 's'),
        (class::HASH, 'h'),
        (class::ZSET, 'z'),
        (class::EXPIRED, 'x'),
        (class::EVICTED, 'e'),
        (class::STREAM, 't'),
        (class::MODULE, 'd'),
        (class::NEW, 'n'),
    ];
    const CHANNELS: &[(u32, char)] = &[
        (class::KEYSPACE, 'K'),
        (class::KEYEVENT, 'E'),
        (class::KEY_MISS, 'm'),
    ];
    let mut out = String::new();
    if flags & class::ALL == class::ALL {
        out.push('A');
    } else {
        out.extend(
            CLASSES
                .iter()
                .filter(|(b, _)| flags & b != 0)
                .map(|&(_, c)| c),
        );
    }
    out.extend(
        CHANNELS
            .iter()
            .filter(|(b, _)| flags & b != 0)
            .map(|&(_, c)| c),
    );
    out
}

/// Whether an event of `class` is published at all under `flags`: its
/// class enabled, and at least one of the two channel kinds.
pub(crate) fn enabled(flags: u32, class: u32) -> bool {
    flags & class != 0 && flags & (class::KEYSPACE | class::KEYEVENT) != 0
}

/// The two channels and payloads of an event of `key` in `db`.
pub(crate) fn messages(flags: u32, db: usize, event: &str, key: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::with_capacity(2);
    if flags & class::KEYSPACE != 0 {
        let mut channel = format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        out.push((channel, event.as_bytes().to_vec()));
    }
    if flags & class::KEYEVENT != 0 {
        let channel = format!("__keyevent@{db}__:{event}").into_bytes();
        out.push((channel, key.to_vec()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{flags_to_string, parse_flags};

    #[test]
    fn flags_read_back_in_redis_order() {
        let shown = |s: &str| parse_flags(s.as_bytes()).map(flags_to_string);
        assert_eq!(shown("KEA").as_deref(), Some("AKE"));
        assert_eq!(shown("KEAn").as_deref(), Some("AKE"));
        assert_eq!(shown("gKE").as_deref(), Some("gKE"));
        assert_eq!(shown("$lshzxeKE").as_deref(), Some("$lshzxeKE"));
        assert_eq!(shown("En").as_deref(), Some("nE"));
        assert_eq!(shown("mEx").as_deref(), Some("xEm"));
        assert_eq!(shown("").as_deref(), Some(""));
        assert_eq!(shown("Q"), None);
    }
}
