//! The destination of a STORE command (SINTERSTORE, ZUNIONSTORE,
//! GEOSEARCHSTORE, ...), shared by the set, sorted set and geo families.

use crate::command::{CmdResult, Ctx};
use crate::notify::class;
use crate::reply;
use crate::value::Value;

/// Stores the result of a STORE command as Redis's `setKey` does (the old
/// value and its TTL are replaced), or deletes `dst` when the result is
/// empty. Replies with the result's size. Raises `event` (class `class`)
/// for a stored result, `del` for a deleted key.
pub(crate) fn store_or_delete(
    ctx: &mut Ctx<'_>,
    dst: &[u8],
    value: Value,
    len: usize,
    (class, event): (u32, &str),
) -> CmdResult {
    if len == 0 {
        // Deleting marks the key modified, only if it existed: as Redis.
        if ctx.remove(dst) {
            ctx.notify(class::GENERIC, "del", dst);
        }
    } else {
        ctx.set(dst, value, false);
        ctx.notify(class, event, dst);
    }
    Ok(reply::int(len))
}
