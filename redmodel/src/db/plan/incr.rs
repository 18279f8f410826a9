//! An increment of a hash field whose new value other writes take: the
//! score of the field's sorted indexes, a push to its recent lists. The
//! model layer describes it ([`Increment`]); this module runs it as one
//! atomic unit, the same steps either way: in process on the engine
//! under its lock, without Lua ([`Increment::run_now`]), on a server as
//! one script ([`Increment::run_script`]).

use std::sync::LazyLock;

use redis::{ToRedisArgs, Value};

use super::checked::check_guards;
use super::not_found;
use crate::db::script::Lua;
use crate::{Db, Result};

/// One increment: `command` (HINCRBY or HINCRBYFLOAT) of `field` by `by`
/// in the hash `keys[0]`, which must exist; then the new value as the
/// score of the object in the `sorted` sorted sets that follow it in
/// `keys`, and a push of the object to the rest of `keys`, recent lists
/// capped at `caps`.
pub(crate) struct Increment<'a, B> {
    pub(crate) keys: &'a [&'a str],
    pub(crate) sorted: usize,
    pub(crate) caps: &'a [u32],
    pub(crate) command: &'a str,
    pub(crate) field: &'a str,
    pub(crate) by: &'a B,
}

impl<B: ToRedisArgs + Sync> Increment<'_, B> {
    /// In process, the increment's steps run at once by the engine under
    /// its lock ([`Db::atomically`]) without Lua (a script costs several
    /// times its commands there): the field's new text, or the first
    /// command's error (what ran before it stays, as in the script);
    /// `None` on a server.
    pub(crate) fn run_now(&self, db: &Db) -> Option<Result<Vec<u8>>> {
        let Increment {
            keys,
            sorted,
            caps,
            command,
            field,
            by,
        } = *self;
        db.atomically(|tx| {
            check_guards(tx, &keys[..1]).map_err(|e| *e)?;
            let object = keys[0].as_bytes();
            let mut call = |args: &[&[u8]]| tx.call(args).extract_error();
            let by = by.to_redis_args();
            let mut args: Vec<&[u8]> = vec![command.as_bytes(), object, field.as_bytes()];
            args.extend(by.iter().map(Vec::as_slice));
            // The increment's reply is exact here (no Lua number in between).
            let new = number_text(call(&args)?)?;
            for index in &keys[1..=sorted] {
                call(&[b"ZADD", index.as_bytes(), &new, object])?;
            }
            for (index, cap) in keys[sorted + 1..].iter().zip(caps) {
                let last = (i64::from(*cap) - 1).to_string();
                call(&[b"LREM", index.as_bytes(), b"0", object])?;
                call(&[b"LPUSH", index.as_bytes(), object])?;
                call(&[b"LTRIM", index.as_bytes(), b"0", last.as_bytes()])?;
            }
            Ok(new)
        })
    }

    /// On a server, the increment as one script ([`INCR_PLAIN`] without
    /// an index, else [`INCR_INDEXED`]; EVALSHA, loading the script on
    /// NOSCRIPT): the field's new text. `None` if the server refuses
    /// scripts (an ACL user without `@scripting`, scripting disabled):
    /// the caller takes its path without.
    pub(crate) async fn run_script(&self, db: &Db) -> Result<Option<Vec<u8>>> {
        let (keys, command, field) = (self.keys, self.command, self.field);
        if keys.len() == 1 {
            let mut call = INCR_PLAIN.call_sized(keys, 3, command.len() + field.len() + 20);
            call.arg(command).arg(field).arg(self.by);
            return match call.invoke::<Value>(db).await.map_err(not_found)? {
                Some(reply) => number_text(reply).map(Some),
                None => Ok(None),
            };
        }
        let mut call = INCR_INDEXED.call(keys);
        call.arg(command)
            .arg(field)
            .arg(self.by)
            .arg(self.sorted)
            .arg(self.caps);
        let replies = call
            .invoke::<Vec<Option<Vec<u8>>>>(db)
            .await
            .map_err(not_found)?;
        Ok(replies.map(|r| r.into_iter().next().flatten().unwrap_or_default()))
    }
}

/// The text of a HINCRBY (integer) or HINCRBYFLOAT (bulk string) reply.
pub(crate) fn number_text(reply: Value) -> Result<Vec<u8>> {
    Ok(match reply {
        Value::Int(n) => n.to_string().into_bytes(),
        other => redis::from_redis_value::<Vec<u8>>(other).map_err(redis::RedisError::from)?,
    })
}

/// What both increment scripts begin with: the object must exist
/// (`KEYS[1]`), then the increment (ARGV: the command, HINCRBY or
/// HINCRBYFLOAT, the field, the increment) leaves its exact new value in
/// `new`. HINCRBYFLOAT replies with the text it stored; HINCRBY's integer
/// becomes a Lua number, a double, exact below 2^53 in magnitude (and
/// rounding keeps a larger one at or past 2^53, so the test cannot be
/// fooled); past it, the field is read back as text: the rounded number
/// would not be the stored value.
const GUARDED_INCREMENT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('NOTFOUND ' .. KEYS[1])
end
local new = redis.call(ARGV[1], KEYS[1], ARGV[2], ARGV[3])
if type(new) == 'number' and (new <= -2^53 or new >= 2^53) then
  new = redis.call('HGET', KEYS[1], ARGV[2])
end
";

/// The guarded increment of a field without indexes ([`GUARDED_INCREMENT`]
/// alone), replying the new value as it is: a number or a text. Without
/// [`INCR_INDEXED`]'s index loops, argument count and reply table it takes
/// the server about 1 µs less per call, a third of the script.
static INCR_PLAIN: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(&[GUARDED_INCREMENT, "return new\n"].concat()));

/// The increment of a field with sorted or recent indexes, in one script:
/// [`GUARDED_INCREMENT`], then the field's new text as the score in every
/// sorted index and a push to every recent list. If the increment fails
/// (the field is not a number, the result overflows) the script stops
/// there and nothing moves.
///
/// The script replies with the text alone: the score Redis stores is that
/// text parsed as a double (correctly rounded, as Rust's parse is), which
/// the caller computes itself rather than reading it back with a ZSCORE.
static INCR_INDEXED: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(&[GUARDED_INCREMENT, INDEX_THE_INCREMENT].concat()));

/// [`INCR_INDEXED`] after the increment. `KEYS[2 .. n+1]`: the sorted
/// indexes; the rest: the recent lists. `ARGV[4]`: n, then each recent
/// list's cap. A Lua number would go to ZADD in `%.14g`: the integer is
/// written out whole first.
const INDEX_THE_INCREMENT: &str = r"
if type(new) == 'number' then
  new = string.format('%d', new)
end
local n = tonumber(ARGV[4])
for i = 2, n + 1 do
  redis.call('ZADD', KEYS[i], new, KEYS[1])
end
for i = n + 2, #KEYS do
  redis.call('LREM', KEYS[i], 0, KEYS[1])
  redis.call('LPUSH', KEYS[i], KEYS[1])
  redis.call('LTRIM', KEYS[i], 0, tonumber(ARGV[i + 3 - n]) - 1)
end
return {new}
";
