//! COMMAND DOCS' texts: Redis 7.0.15's own reply (`docs.resp`, RESP3, as
//! `tools/command_docs.py` fetched it from a real server), parsed once;
//! COMMAND DOCS keeps of it the commands and subcommands the engine
//! serves.

use std::collections::HashMap;
use std::sync::LazyLock;

use redis::Value;

/// Every command's documentation, by its lower-case name.
static DOCS: LazyLock<HashMap<String, Value>> = LazyLock::new(|| {
    let parsed = redis::parse_redis_value(include_bytes!("docs.resp"));
    let Ok(Value::Map(pairs)) = parsed else {
        return HashMap::new();
    };
    pairs
        .into_iter()
        .filter_map(|(name, doc)| match name {
            Value::BulkString(name) => Some((String::from_utf8(name).ok()?, doc)),
            _ => None,
        })
        .collect()
});

/// The documentation of the command `name` (`get`, or a subcommand as
/// `config|get`), its subcommands kept to those `serves` accepts.
pub(crate) fn doc(name: &str, serves: impl Fn(&str) -> bool) -> Option<Value> {
    let found = match name.split_once('|') {
        None => DOCS.get(name)?,
        Some((container, _)) => subcommands(DOCS.get(container)?)?
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
    /// The reply parses, and holds every command of the table.
    #[test]
    fn every_command_has_its_docs() {
        for meta in super::super::rows::TABLE {
            assert!(
                super::doc(meta.name, |_| true).is_some(),
                "{} has no docs",
                meta.name
            );
        }
    }
}
