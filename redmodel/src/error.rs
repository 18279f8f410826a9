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
    /// The server refused the credentials (WRONGPASS), or wants some and got
    /// none (NOAUTH). Retrying will not help: fix the URL.
    #[error(
        "Redis refused to authenticate: {source} (check the user and password in the URL: \
         redis://USER:PASSWORD@HOST:PORT, or redis://:PASSWORD@HOST:PORT for the default user)"
    )]
    Auth {
        /// What the client library or the server reported.
        #[source]
        source: redis::RedisError,
    },
    /// The TLS handshake or the TLS layer failed: the server's certificate
    /// is not trusted or does not name the host, the server wants a client
    /// certificate, or what came back is not TLS. Retrying will not help:
    /// fix the certificates or the URL. (A `rediss://` URL to a plain
    /// Redis port is a [`Error::Connection`] timeout instead: Redis waits
    /// for the end of a command line that the TLS greeting never sends.)
    #[error(
        "TLS with Redis failed: {source} (check that the port speaks TLS, that a trusted CA \
         signed the server's certificate for the host in the URL (Db::connect_with_tls takes \
         a private CA), and the client certificate if the server asks for one)"
    )]
    Tls {
        /// What the client library reported.
        #[source]
        source: redis::RedisError,
    },
    /// The ACL user of the connection may not run this command or touch
    /// this key (NOPERM). The connection itself is fine.
    #[error("NOPERM {detail} (the ACL user given in the URL lacks this permission)")]
    NoPermission {
        /// The server's explanation, such as "this user has no permissions
        /// to access one of the keys used as arguments".
        detail: String,
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
    /// A field of a stored object holds text that is not a value of the
    /// field's type (a non-numeric value in an integer field, bad JSON...).
    #[error("cannot decode field `{field}` of `{key}`: {reason}")]
    Decode {
        /// The object's key.
        key: String,
        /// The hash field (its stored name).
        field: String,
        /// What is wrong with the stored text.
        reason: String,
    },
    /// A stored object lacks a field that its model requires.
    #[error(
        "`{key}` has no field `{field}`, which its model requires \
         (declare the field as an Option or mark it #[redmodel(default)] to accept objects without it)"
    )]
    MissingField {
        /// The object's key.
        key: String,
        /// The missing hash field (its stored name).
        field: String,
    },
    /// A field value could not be written (JSON serialization failed).
    #[error("cannot encode field `{field}` of `{key}`: {reason}")]
    Encode {
        /// The object's key.
        key: String,
        /// The hash field (its stored name).
        field: String,
        /// What went wrong.
        reason: String,
    },
    /// A key holds another Redis type than the model keeps there (a hash
    /// where a relation's list is expected, ...).
    #[error("`{key}` holds another Redis type than the {expected} its model keeps there")]
    UnexpectedType {
        /// The key.
        key: String,
        /// The Redis type the model expects: `hash`, `list` or `string`.
        expected: &'static str,
    },
    /// A key (given to a parse, or found in a relation or a reference
    /// field) is not a key of the expected model.
    #[error("`{key}` is not a key of model `{model}`: {reason}")]
    InvalidKey {
        /// The key, as given or as stored.
        key: String,
        /// The table of the model it was parsed as.
        model: &'static str,
        /// Why it is not a key of that model.
        reason: String,
    },
    /// A write would give a unique field a value another object holds
    /// (`#[redmodel(unique)]`). Nothing of the refused write was stored.
    #[error("`{value}` is already the `{field}` of `{holder}` (the field is unique in `{model}`); nothing was written")]
    Unique {
        /// The model's table.
        model: &'static str,
        /// The unique field (its stored name).
        field: &'static str,
        /// The value, as stored text.
        value: String,
        /// The key of the object that holds the value.
        holder: String,
    },
    /// A number does not fit where it must go: an integer beyond the
    /// 2^53 that a sorted set's double score holds exactly, a NaN score, or
    /// a part of a composite score wider than its declared width.
    #[error("{value} does not fit `{name}`: {reason}")]
    ScoreOverflow {
        /// The sorted field, or the dimension of a composite score.
        name: String,
        /// The value that does not fit.
        value: String,
        /// What it must fit in.
        reason: String,
    },
    /// An optimistic transaction (WATCH / MULTI / EXEC) was aborted by
    /// concurrent writes to the same keys on every one of its attempts.
    /// Nothing of it was stored; retrying later may succeed.
    #[error("concurrent writes to `{key}` aborted the transaction {attempts} times; nothing was written (retry later)")]
    Conflict {
        /// The key the transaction was about.
        key: String,
        /// How many times it was tried.
        attempts: u32,
    },
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
        // A reply of another shape than asked for is a client-side
        // conversion error; redis-rs files it under "reconnect", which
        // would make it look like a connection failure.
        if err.kind() == redis::ErrorKind::Parse
            || err.kind() == redis::ErrorKind::UnexpectedReturnType
        {
            return Error::Reply(err);
        }
        // Before the connection checks: redis-rs counts a refused login as
        // "reconnect and retry", but no reconnection fixes a wrong password.
        if is_auth_failure(&err) {
            return Error::Auth { source: err };
        }
        if crate::tls::is_tls_failure(&err) {
            return Error::Tls { source: err };
        }
        if let Some(detail) = no_permission_detail(&err) {
            return Error::NoPermission { detail };
        }
        if err.kind() == redis::ErrorKind::InvalidClientConfig {
            return Error::Config(err.to_string());
        }
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
        Error::Server(err)
    }
}

/// Whether the server refused or asked for credentials: redis-rs's own
/// verdict on the login it sends when connecting, or the server's WRONGPASS /
/// NOAUTH reply to a command (NOAUTH comes with the first command when the
/// URL has no password for a server that needs one).
fn is_auth_failure(err: &redis::RedisError) -> bool {
    err.kind() == redis::ErrorKind::AuthenticationFailed
        || matches!(err.code(), Some("WRONGPASS" | "NOAUTH"))
}

/// The server's text of a NOPERM error, whether it answered one command or
/// one command of a pipeline or transaction (where Redis refuses the
/// command as it is queued, and EXEC then aborts the whole transaction).
fn no_permission_detail(err: &redis::RedisError) -> Option<String> {
    let errors = err.clone().into_server_errors()?;
    errors
        .iter()
        .find(|(_, server_error)| server_error.code() == "NOPERM")
        .map(|(_, server_error)| server_error.details().unwrap_or_default().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error redis-rs makes of a server's error reply `line`.
    fn server_error(line: &str) -> redis::RedisError {
        let reply = format!("-{line}\r\n");
        match redis::parse_redis_value(reply.as_bytes()).and_then(|v| v.extract_error()) {
            Err(err) => err,
            Ok(value) => panic!("{line:?} parsed as {value:?}"),
        }
    }

    #[test]
    fn refused_logins_are_auth_errors_not_outages() {
        for err in [
            redis::RedisError::from((
                redis::ErrorKind::AuthenticationFailed,
                "Password authentication failed",
            )),
            server_error("WRONGPASS invalid username-password pair or user is disabled."),
            server_error("NOAUTH Authentication required."),
        ] {
            let err = Error::from(err);
            assert!(matches!(err, Error::Auth { .. }), "{err:?}");
            assert!(!err.is_connection());
            assert!(err
                .to_string()
                .contains("check the user and password in the URL"));
        }
    }

    #[test]
    fn noperm_is_a_permission_error_with_the_servers_text() {
        let err = Error::from(server_error(
            "NOPERM this user has no permissions to run the 'keys' command",
        ));
        match &err {
            Error::NoPermission { detail } => {
                assert_eq!(
                    detail,
                    "this user has no permissions to run the 'keys' command"
                );
            }
            other => panic!("expected Error::NoPermission, got {other:?}"),
        }
        assert!(!err.is_connection());
        assert!(err.to_string().starts_with("NOPERM this user"));
    }

    #[test]
    fn other_refusals_stay_server_errors() {
        let err = Error::from(server_error("ERR DB index is out of range"));
        assert!(matches!(err, Error::Server(_)), "{err:?}");
        let err = Error::from(server_error(
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ));
        assert!(matches!(err, Error::WrongType { .. }), "{err:?}");
    }

    #[test]
    fn a_client_configuration_error_is_a_config_error() {
        let err = Error::from(redis::RedisError::from((
            redis::ErrorKind::InvalidClientConfig,
            "Cannot create insecure client without tls-rustls-insecure feature",
        )));
        assert!(matches!(err, Error::Config(_)), "{err:?}");
    }
}
