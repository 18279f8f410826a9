//! A unique entry's claim and confirmation on a server, one script each:
//! both decide on the entry's holder inside the script, so that the claim
//! of a free value and its confirmation cost one round trip each, and the
//! script's one key routes it to the entry's node on a cluster. The model
//! layer says what each means (`model::write::stepped`); a server that
//! refuses scripts gets its WATCH path.

use std::sync::LazyLock;
use std::time::Duration;

use crate::db::script::Lua;
use crate::{Db, Result};

/// The claim of an entry no other object names: the entry made to name
/// `key`, with a lease (`DEL`, `RPUSH`, `PEXPIRE`), only if it is free or
/// names `key` already; else nothing, and the reply is the object it
/// names. `KEYS[1]`: the entry; `ARGV`: the claiming object's key, the
/// lease in milliseconds.
static CLAIM_FREE: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(
        r"
local holder = redis.call('LINDEX', KEYS[1], 0)
if holder and holder ~= ARGV[1] then return holder end
redis.call('DEL', KEYS[1])
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return false
",
    )
});

/// The confirmation of a claim: the entry naming the object is made
/// permanent (`PERSIST`), a missing one is made again, one naming another
/// object is left to it. `KEYS[1]`: the entry; `ARGV[1]`: the object's key.
static CONFIRM: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(
        r"
local holder = redis.call('LINDEX', KEYS[1], 0)
if holder == ARGV[1] then
  redis.call('PERSIST', KEYS[1])
elseif not holder then
  redis.call('RPUSH', KEYS[1], ARGV[1])
end
",
    )
});

/// Claims `entry` for `key` with `lease` if it is free or names `key`:
/// `Some(None)` if claimed, `Some(Some(holder))` if another object is
/// named (nothing written), `None` if the server refuses scripts.
pub(crate) async fn claim_free(
    db: &Db,
    entry: &str,
    key: &str,
    lease: Duration,
) -> Result<Option<Option<String>>> {
    let mut call = CLAIM_FREE.call(&[entry]);
    call.arg(key).arg(lease.as_millis() as u64);
    call.invoke::<Option<String>>(db).await
}

/// Confirms the claim of `entry` by `key` (see [`CONFIRM`]): `None` if the
/// server refuses scripts.
pub(crate) async fn confirm(db: &Db, entry: &str, key: &str) -> Result<Option<()>> {
    let mut call = CONFIRM.call(&[entry]);
    call.arg(key);
    call.invoke::<()>(db).await
}
