//! Server errors and pipeline replies, told in the model's terms: a
//! refusal names the key (and field) it concerns and what the key should
//! have held.

use redis::{FromRedisValue, Value};

use super::Storage;
use crate::{Error, Result};

/// Turns a WRONGTYPE error into [`Error::UnexpectedType`] naming `key`.
pub(crate) fn at_key<'a>(key: &'a str, expected: &'static str) -> impl FnOnce(Error) -> Error + 'a {
    move |err| match err {
        Error::WrongType { .. } => Error::UnexpectedType {
            key: key.to_string(),
            expected,
        },
        Error::Server(ref redis_err) if holds_wrongtype(redis_err) => Error::UnexpectedType {
            key: key.to_string(),
            expected,
        },
        other => other,
    }
}

/// Like [`at_key`] for an increment of `field`: a refusal because the
/// stored text is not a number (HINCRBY's "hash value is not an integer",
/// HINCRBYFLOAT's "... not a float") is bad data in that field, so it is an
/// [`Error::Decode`] naming the key and the field.
pub(crate) fn incr_error<'a>(key: &'a str, field: &'a str) -> impl FnOnce(Error) -> Error + 'a {
    move |err| match err {
        Error::Server(ref redis_err) => match not_a_number(redis_err) {
            Some(detail) => Error::Decode {
                key: key.to_string(),
                field: field.to_string(),
                reason: format!("Redis cannot increment it: {detail}"),
            },
            None => at_key(key, "hash")(err),
        },
        other => at_key(key, "hash")(other),
    }
}

/// Redis's "hash value is not an integer / a float" refusal in `err`: the
/// reply of a command, of a script (where Redis appends the script's
/// name), or one reply of a transaction.
fn not_a_number(err: &redis::RedisError) -> Option<String> {
    let refused = |detail: &str| detail.starts_with("hash value is not");
    let trim = |detail: &str| match detail.find(" script: ") {
        Some(end) => detail[..end].to_string(),
        None => detail.to_string(),
    };
    if let Some(detail) = err.detail().filter(|d| refused(d)) {
        return Some(trim(detail));
    }
    err.clone()
        .into_server_errors()?
        .iter()
        .find_map(|(_, e)| e.details().filter(|d| refused(d)).map(trim))
}

/// Whether a (pipeline or transaction) error includes a WRONGTYPE reply.
fn holds_wrongtype(err: &redis::RedisError) -> bool {
    err.code() == Some("WRONGTYPE")
        || err
            .clone()
            .into_server_errors()
            .is_some_and(|errs| errs.iter().any(|(_, e)| e.code() == "WRONGTYPE"))
}

/// Converts one reply of an `ignore_errors` pipeline, naming `key` if the
/// server refused the command.
pub(crate) fn reply_at<T: FromRedisValue>(
    key: &str,
    expected: &'static str,
    value: Option<Value>,
) -> Result<T> {
    match value {
        Some(Value::ServerError(err)) => Err(at_key(key, expected)(Error::from(
            redis::RedisError::from(err),
        ))),
        Some(value) => Ok(redis::from_redis_value(value).map_err(redis::RedisError::from)?),
        None => Err(Error::Reply(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "a pipeline returned fewer replies than commands",
        )))),
    }
}

/// The Redis type that holds an object stored as `storage`, for errors.
pub(crate) fn redis_type(storage: Storage) -> &'static str {
    match storage {
        Storage::Hash => "hash",
        Storage::Single => "string",
    }
}
