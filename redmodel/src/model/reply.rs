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
        Error::Server(ref redis_err)
            if redis_err
                .detail()
                .is_some_and(|d| d.starts_with("hash value is not")) =>
        {
            Error::Decode {
                key: key.to_string(),
                field: field.to_string(),
                reason: format!(
                    "Redis cannot increment it: {}",
                    redis_err.detail().unwrap_or_default()
                ),
            }
        }
        other => at_key(key, "hash")(other),
    }
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
