//! The one error type of the crate.

use std::time::Duration;

/// The result type of every redmodel operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong talking to Redis through redmodel.
///
/// Each variant carries what a caller needs to act on it; match on the
/// variant, not on the text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The backend could not be reached, or the connection broke mid-request.
    /// Retrying later may succeed; the `Db` reconnects by itself.
    #[error("connection to Redis failed: {source} (the Db reconnects by itself; retry later)")]
    Connection {
        /// What the client library reported.
        #[source]
        source: redis::RedisError,
    },
    /// The server did not answer within the configured time.
    #[error("Redis did not answer within {0:?}")]
    Timeout(Duration),
    /// A command was run against a key holding another Redis type.
    #[error("WRONGTYPE: {detail}")]
    WrongType {
        /// The server's explanation.
        detail: String,
    },
    /// The server refused a command (bad argument, out of range, ...).
    #[error("Redis refused the command: {0}")]
    Server(redis::RedisError),
    /// A reply did not have the shape the caller asked for.
    #[error("unexpected reply from Redis: {0}")]
    Reply(redis::RedisError),
    /// The URL or the configuration given to a constructor is not usable.
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl Error {
    /// Whether this error means the backend is unreachable (as opposed to a
    /// refused command or a bad reply).
    pub fn is_connection(&self) -> bool {
        matches!(self, Error::Connection { .. } | Error::Timeout(_))
    }
}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Self {
        if err.is_io_error()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_unrecoverable_error()
        {
            return Error::Connection { source: err };
        }
        if err.is_timeout() {
            return Error::Connection { source: err };
        }
        if err.code() == Some("WRONGTYPE") {
            return Error::WrongType {
                detail: err.detail().unwrap_or_default().to_string(),
            };
        }
        if err.kind() == redis::ErrorKind::Parse
            || err.kind() == redis::ErrorKind::UnexpectedReturnType
        {
            return Error::Reply(err);
        }
        Error::Server(err)
    }
}
