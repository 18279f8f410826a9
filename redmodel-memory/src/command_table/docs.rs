//! COMMAND DOCS' texts: Redis 7.0.15's own reply (`docs.resp`, and
//! 7.4.1's, `docs74.resp`; RESP3, as
//! `tools/command_docs.py` fetched it from a real server), parsed once;
//! COMMAND DOCS keeps of it the commands and subcommands the engine
//! serves.

use std::collections::HashMap;
use std::sync::LazyLock;

use redis::Value;

use crate::RedisVersion;

/// Every command's documentation, by its lower-case name, from one
/// server's reply.
fn parse(resp: &[u8]) -> HashMap<String, Value> {
    let Ok(Value::Map(pairs)) = redis::parse_redis_value(resp) else {
        return HashMap::new();
    };
    pairs
        .into_iter()
        .filter_map(|(name, doc)| match name {
            Value::BulkString(name) => Some((String::from_utf8(name).ok()?, doc)),
            _ => None,
        })
        .collect()
}

/// Redis 7.0.15's documentation.
static DOCS: LazyLock<HashMap<String, Value>> =
    LazyLock::new(|| parse(include_bytes!("docs.resp")));

/// Redis 7.4.1's documentation (`docs74.resp`).
static DOCS_74: LazyLock<HashMap<String, Value>> =
    LazyLock::new(|| parse(include_bytes!("docs74.resp")));

/// The documentation of the command `name` (`get`, or a subcommand as
/// `config|get`), its subcommands kept to those `serves` accepts.
pub(crate) fn doc(
    name: &str,
    version: RedisVersion,
    serves: impl Fn(&str) -> bool,
) -> Option<Value> {
    let docs = match version {
        RedisVersion::V7_0 => &*DOCS,
        RedisVersion::V7_4 => &*DOCS_74,
    };
    let found = match name.split_once('|') {
        None => docs.get(name)?,
        Some((container, _)) => subcommands(docs.get(container)?)?
            .iter()
            .find(|(sub, _)| matches!(sub, Value::BulkString(s) if s == name.as_bytes()))
            .map(|(_, doc)| doc)?,
    };
    let Value::Map(fields) = found else {
        return Some(found.clone());
    };
    let fields = fields.iter().map(|(field, value)| {
        let value = match (field, value) {
            (Value::BulkString(f), Value::Map(subs)) if f == b"subcommands" => Value::Map(
                subs.iter()
                    .filter(|(sub, _)| match sub {
                        Value::BulkString(s) => std::str::from_utf8(s).is_ok_and(&serves),
                        _ => false,
                    })
                    .cloned()
                    .collect(),
            ),
            _ => value.clone(),
        };
        (field.clone(), value)
    });
    Some(Value::Map(fields.collect()))
}

/// A container's `subcommands` map.
fn subcommands(doc: &Value) -> Option<&[(Value, Value)]> {
    let Value::Map(fields) = doc else {
        return None;
    };
    fields
        .iter()
        .find_map(|(field, value)| match (field, value) {
            (Value::BulkString(f), Value::Map(subs)) if f == b"subcommands" => Some(&subs[..]),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use crate::RedisVersion;

    /// Each reply parses, and holds every command of its version's table.
    #[test]
    fn every_command_has_its_docs() {
        for (rows, version) in [
            (super::super::rows::TABLE, RedisVersion::V7_0),
            (super::super::rows74::TABLE, RedisVersion::V7_4),
        ] {
            for meta in rows {
                assert!(
                    super::doc(meta.name, version, |_| true).is_some(),
                    "{} has no docs in {version}",
                    meta.name
                );
            }
        }
    }
}
