//! Which reads the cache answers by their whole request: the reads of
//! relations and indexes (list ranges, tag set algebra, score ranges), by
//! commands whose reply depends only on the keys they name. A command
//! whose reply depends on the clock (TTL), on chance (SRANDMEMBER) or on
//! keys it does not name (SORT's GET patterns) always goes to the server.

use redis::{Arg, Cmd, FromRedisValue, Value};

use super::store::ReplyLookup;
use crate::error::Result;
use crate::Db;

/// The read-only commands whose reply is a function of the keys they name.
const CACHEABLE: &[&str] = &[
    "EXISTS",
    "GET",
    "MGET",
    "HGET",
    "HMGET",
    "HGETALL",
    "HLEN",
    "HEXISTS",
    "LLEN",
    "LINDEX",
    "LRANGE",
    "SCARD",
    "SISMEMBER",
    "SMISMEMBER",
    "SMEMBERS",
    "SINTER",
    "SUNION",
    "SDIFF",
    "SINTERCARD",
    "ZCARD",
    "ZCOUNT",
    "ZLEXCOUNT",
    "ZSCORE",
    "ZMSCORE",
    "ZRANK",
    "ZREVRANK",
    "ZRANGE",
    "ZRANGEBYSCORE",
    "ZREVRANGEBYSCORE",
    "ZRANGEBYLEX",
    "ZREVRANGEBYLEX",
    "ZREVRANGE",
];

/// The keys `cmd` reads, if its reply may be kept: a command of
/// [`CACHEABLE`] that names at least one key.
fn cacheable_keys(cmd: &Cmd) -> Option<Vec<&[u8]>> {
    let mut args: Vec<&[u8]> = Vec::with_capacity(4);
    for arg in cmd.args_iter() {
        match arg {
            Arg::Simple(a) => args.push(a),
            _ => return None,
        }
    }
    let name = args.first()?;
    if !CACHEABLE
        .iter()
        .any(|c| c.as_bytes().eq_ignore_ascii_case(name))
    {
        return None;
    }
    let at = redmodel_memory::key_positions(&args)?;
    let keys: Vec<&[u8]> = at
        .into_iter()
        .filter_map(|i| args.get(i).copied())
        .collect();
    (!keys.is_empty()).then_some(keys)
}

impl Db {
    /// A relation or index read: answered from the near cache when it
    /// holds the reply and none of the keys it reads changed since; else
    /// sent as [`read`](Db::read) sends it, and its reply kept unless one
    /// of its keys changed while it was in flight.
    pub(crate) async fn read_cached<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T> {
        let Some(cache) = self.cache() else {
            return self.read(cmd).await;
        };
        let Some(keys) = cacheable_keys(cmd) else {
            return self.read(cmd).await;
        };
        let request = cmd.get_packed_command();
        let value = match cache.lookup_reply(&request, &keys) {
            ReplyLookup::Hit(value) => value,
            ReplyLookup::Miss(ticket) => {
                let value: Value = self.read(cmd).await?;
                if let Some(ticket) = ticket {
                    cache.keep_reply(request, ticket, value.clone());
                }
                value
            }
        };
        Ok(T::from_redis_value(value).map_err(redis::RedisError::from)?)
    }
}

#[cfg(test)]
mod tests {
    use redis::cmd;

    use super::cacheable_keys;

    #[test]
    fn a_read_of_named_keys_is_cacheable_by_its_keys() {
        let sinter = cmd("SINTER")
            .arg("book:_tag:rust")
            .arg("book:_tag:async")
            .clone();
        assert_eq!(
            cacheable_keys(&sinter),
            Some(vec![&b"book:_tag:rust"[..], &b"book:_tag:async"[..]])
        );
        let range = cmd("lrange").arg("teacher:A:class").arg(0).arg(-1).clone();
        assert_eq!(cacheable_keys(&range), Some(vec![&b"teacher:A:class"[..]]));
    }

    #[test]
    fn reads_of_the_clock_of_chance_or_of_unnamed_keys_are_not() {
        for c in [
            cmd("PTTL").arg("k").clone(),
            cmd("SRANDMEMBER").arg("k").clone(),
            cmd("SORT").arg("k").arg("GET").arg("*->name").clone(),
            cmd("SORT_RO").arg("k").arg("GET").arg("*->name").clone(),
            cmd("HSET").arg("k").arg("f").arg("v").clone(),
            cmd("SCAN").cursor_arg(0).clone(),
        ] {
            assert_eq!(cacheable_keys(&c), None, "{:?}", c.get_packed_command());
        }
    }
}

#[cfg(test)]
mod store_tests {
    use redis::Value;

    use crate::db::cache::store::ReplyLookup;
    use crate::db::cache::{Cache, CacheConfig, ReplyTicket};

    fn live_cache() -> Cache {
        let cache = Cache::new(&CacheConfig::default());
        cache.set_live(true);
        cache
    }

    fn ticket(cache: &Cache, keys: &[&[u8]]) -> ReplyTicket {
        match cache.lookup_reply(b"request", keys) {
            ReplyLookup::Miss(Some(ticket)) => ticket,
            ReplyLookup::Miss(None) => panic!("no ticket while live"),
            ReplyLookup::Hit(_) => panic!("a hit before anything was kept"),
        }
    }

    fn hit(cache: &Cache, keys: &[&[u8]]) -> bool {
        matches!(cache.lookup_reply(b"request", keys), ReplyLookup::Hit(_))
    }

    #[test]
    fn a_kept_reply_holds_until_one_of_its_keys_changes() {
        let cache = live_cache();
        let keys: [&[u8]; 2] = [b"tag:a", b"tag:b"];
        let t = ticket(&cache, &keys);
        cache.keep_reply(b"request".to_vec(), t, Value::Int(1));
        assert!(hit(&cache, &keys));
        cache.invalidate([&b"tag:b"[..]]);
        assert!(
            !hit(&cache, &keys),
            "a change of its second key outdates it"
        );
    }

    #[test]
    fn a_reply_that_raced_a_change_of_its_keys_is_not_kept() {
        let cache = live_cache();
        let keys: [&[u8]; 1] = [b"list"];
        let t = ticket(&cache, &keys);
        cache.invalidate([&b"list"[..]]);
        cache.keep_reply(b"request".to_vec(), t, Value::Int(1));
        assert!(!hit(&cache, &keys));
        let t = ticket(&cache, &keys);
        cache.flush();
        cache.keep_reply(b"request".to_vec(), t, Value::Int(1));
        assert!(!hit(&cache, &keys), "a flush in flight outdates the ticket");
    }

    #[test]
    fn a_flush_or_lost_tracking_drops_every_reply() {
        let cache = live_cache();
        let keys: [&[u8]; 1] = [b"list"];
        let t = ticket(&cache, &keys);
        cache.keep_reply(b"request".to_vec(), t, Value::Int(1));
        cache.flush();
        assert!(!hit(&cache, &keys));
        let t = ticket(&cache, &keys);
        cache.keep_reply(b"request".to_vec(), t, Value::Int(1));
        cache.set_live(false);
        assert!(matches!(
            cache.lookup_reply(b"request", &keys),
            ReplyLookup::Miss(None)
        ));
    }
}
