//! Shorthands for building replies, so command code reads like Redis's.

use redis::Value;

use super::float::format_double;

pub(crate) fn ok() -> Value {
    Value::Okay
}

pub(crate) fn int(n: impl TryInto<i64>) -> Value {
    Value::Int(n.try_into().unwrap_or(i64::MAX))
}

pub(crate) fn bulk(bytes: impl Into<Vec<u8>>) -> Value {
    Value::BulkString(bytes.into())
}

pub(crate) fn nil() -> Value {
    Value::Nil
}

pub(crate) fn simple(s: &str) -> Value {
    Value::SimpleString(s.to_string())
}

pub(crate) fn array(items: Vec<Value>) -> Value {
    Value::Array(items)
}

/// A double as a bulk string, formatted as Redis 7.0 formats replies of
/// ZSCORE, ZINCRBY and friends.
pub(crate) fn double(d: f64) -> Value {
    Value::BulkString(format_double(d).into_bytes())
}

/// A list of byte strings as an array of bulk strings.
pub(crate) fn bulks<I, B>(items: I) -> Value
where
    I: IntoIterator<Item = B>,
    B: Into<Vec<u8>>,
{
    Value::Array(
        items
            .into_iter()
            .map(|b| Value::BulkString(b.into()))
            .collect(),
    )
}
