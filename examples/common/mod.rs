//! What the pattern examples share: printing keys as `redis-cli` shows
//! them. (A directory, so that Cargo does not take it for an example.)

use redis::Value;
use redmodel::{Db, Error};

/// The keys matching `patterns` (SCAN, never KEYS), sorted, each with its
/// Redis type, its content and its TTL, read in pipelined round trips.
pub async fn key_lines(db: &Db, patterns: &[&str]) -> Result<Vec<String>, Error> {
    let mut keys = Vec::new();
    for pattern in patterns {
        let mut cursor = 0u64;
        loop {
            let (next, batch): (u64, Vec<String>) = db
                .query(redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(*pattern))
                .await?;
            keys.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    keys.sort();
    keys.dedup();
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for key in &keys {
        pipe.cmd("TYPE").arg(key);
        pipe.cmd("PTTL").arg(key);
    }
    let meta: Vec<Value> = db.query_pipeline(&pipe).await?;
    let mut pipe = redis::pipe();
    let mut kinds = Vec::with_capacity(keys.len());
    let mut ttls = Vec::with_capacity(keys.len());
    for (key, pair) in keys.iter().zip(meta.chunks(2)) {
        let kind: String = match pair.first() {
            Some(v) => redis::from_redis_value(v.clone()).map_err(redis::RedisError::from)?,
            None => String::new(),
        };
        let ttl: i64 = match pair.get(1) {
            Some(v) => redis::from_redis_value(v.clone()).map_err(redis::RedisError::from)?,
            None => -2,
        };
        match kind.as_str() {
            "hash" => pipe.cmd("HGETALL").arg(key),
            "list" => pipe.cmd("LRANGE").arg(key).arg(0).arg(-1),
            "set" => pipe.cmd("SMEMBERS").arg(key),
            "zset" => pipe.cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES"),
            _ => pipe.cmd("GET").arg(key),
        };
        kinds.push(kind);
        ttls.push(ttl);
    }
    let values: Vec<Value> = db.query_pipeline(&pipe).await?;
    let mut lines = Vec::with_capacity(keys.len());
    for (((key, kind), ttl), value) in keys.iter().zip(&kinds).zip(ttls).zip(values) {
        let ttl = if ttl >= 0 {
            format!("  (ttl {:.1}s)", ttl as f64 / 1000.0)
        } else {
            String::new()
        };
        lines.push(format!("{key:<40} {kind:<6} {}{ttl}", show(kind, value)?));
    }
    Ok(lines)
}

/// A value the way the school demo shows it: `{k: v}` for hashes, `[...]`
/// for lists, `{...}` for sets (sorted), `[m: score]` for sorted sets.
fn show(kind: &str, value: Value) -> Result<String, Error> {
    let texts = |value: Value| -> Result<Vec<String>, Error> {
        Ok(redis::from_redis_value(value).map_err(redis::RedisError::from)?)
    };
    Ok(match kind {
        "hash" => {
            let map: std::collections::BTreeMap<String, String> =
                redis::from_redis_value(value).map_err(redis::RedisError::from)?;
            let fields: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            format!("{{{}}}", fields.join(", "))
        }
        "list" => format!("[{}]", texts(value)?.join(", ")),
        "set" => {
            let mut members = texts(value)?;
            members.sort();
            format!("{{{}}}", members.join(", "))
        }
        "zset" => {
            let flat = texts(value)?;
            let pairs: Vec<String> = flat
                .chunks(2)
                .map(|p| {
                    let member = p.first().map_or("", String::as_str);
                    let score = p.get(1).map_or("", String::as_str);
                    format!("{member}: {score}")
                })
                .collect();
            format!("[{}]", pairs.join(", "))
        }
        _ => {
            let text: Option<String> =
                redis::from_redis_value(value).map_err(redis::RedisError::from)?;
            text.unwrap_or_default()
        }
    })
}

/// Prints [`key_lines`] under a title.
pub async fn print_keys(db: &Db, patterns: &[&str]) -> Result<(), Error> {
    let lines = key_lines(db, patterns).await?;
    println!("\nkeys ({}), as redis-cli shows them:", lines.len());
    for line in lines {
        println!("  {line}");
    }
    Ok(())
}
