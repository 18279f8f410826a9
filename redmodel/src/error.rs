//! The one error type of the crate.

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
    #[error(
        "connection to Redis failed: {source} (check that the server is up and reachable; \
         an open Db reconnects by itself, so retrying later may succeed)"
    )]
    Connection {
        /// What the client library reported.
        #[source]
        source: redis::RedisError,
    },
    /// The server is up but cannot serve this request right now: it is
    /// loading its dataset (LOADING), a failover or resharding is under way
    /// (TRYAGAIN, CLUSTERDOWN, MASTERDOWN, or a slot still moving), the node
    /// was just demoted to a replica (READONLY), a script is running
    /// (BUSY), or fewer replicas are in sync than the server needs to
    /// accept writes (NOREPLICAS, its `min-replicas-to-write`: it refuses
    /// writes only, deletes too, and each whole). Nothing was written by
    /// the refused command; retrying shortly
    /// may succeed ([`Error::is_transient`]). The one exception: a request
    /// in flight when a [Sentinel](crate::Db::connect_sentinel) primary is
    /// lost fails as MASTERDOWN too, and may or may not have run there. The model's reads wait such a
    /// state out for a while before giving up with it.
    #[error(
        "Redis cannot serve right now: {source} (a passing state: loading data, a failover or resharding; retrying shortly may succeed)"
    )]
    Unavailable {
        /// What the server replied.
        #[source]
        source: redis::RedisError,
    },
    /// The server is at its `maxmemory` and may evict nothing (the
    /// `noeviction` policy, or no key its policy may evict), so it refuses
    /// the commands that may grow the data (OOM). The refused write has
    /// written nothing: a write's atomic unit is refused whole. Reads,
    /// `delete` and `delete_many` go on; a write that runs as a MULTI (a
    /// cascading delete, a [`Db::transaction`](crate::Db::transaction))
    /// is refused even if it only deletes, as Redis refuses every command
    /// queued in a MULTI then. Free memory (delete or expire keys), raise
    /// `maxmemory` or choose an eviction policy; the same write succeeds
    /// once there is room.
    #[error(
        "the server is out of memory and refuses writes: {source} (nothing was written; \
         free memory, raise maxmemory or choose an eviction policy)"
    )]
    OutOfMemory {
        /// What the server replied.
        source: redis::RedisError,
    },
    /// Every exclusive connection of the `Db` stayed in use for as long as
    /// a request may wait for one (its connection and response timeouts):
    /// the server answers, but this process holds all the connections a
    /// `Db` opens for work that cannot share one. A WATCH transaction
    /// (through its retries), a blocking command (BLPOP, or a write that
    /// [waits for replicas](crate::Db::with_replica_acks)) and a
    /// [`dedicated`](crate::Db::dedicated) connection each hold one while
    /// they run. Nothing was sent; retrying later may succeed
    /// ([`Error::is_transient`]), and fewer such operations at once avoid
    /// it. (The memory engine has no such limit.)
    #[error(
        "all {held} exclusive connections of this Db stayed in use for {waited:?} (WATCH \
         transactions, blocking commands, replica-acknowledged writes and dedicated connections \
         each hold one while they run): nothing was sent; retry later, or run fewer of them at once"
    )]
    Busy {
        /// How many connections the `Db` holds at most, all in use.
        held: u32,
        /// How long the request waited for one.
        waited: std::time::Duration,
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
    /// A [`LockGuard`](crate::LockGuard) was released or extended after
    /// its lock had expired: the key `_lock:NAME` is gone or holds another
    /// holder's token. The work done under the guard may have overlapped
    /// with another holder's. Pick a ttl longer than the work, or call
    /// [`LockGuard::extend`](crate::LockGuard::extend) while working.
    #[error(
        "lock `{name}` is no longer held by this guard: its ttl ran out and it may now belong \
         to someone else (use a ttl longer than the work, or extend the lock while working)"
    )]
    LockNotHeld {
        /// The lock's name, as given to [`Db::lock`](crate::Db::lock).
        name: String,
    },
    /// [`Db::lock_wait`](crate::Db::lock_wait) (or
    /// [`Db::with_lock`](crate::Db::with_lock)) gave up: another holder kept
    /// the lock for the whole timeout. Retry later, wait longer, or check
    /// that the holder is not stuck (its lock frees itself when its ttl ends).
    #[error(
        "lock `{name}` is held by someone else: gave up after waiting {waited:?} \
         (retry later or wait longer; a stuck holder's lock frees itself when its ttl ends)"
    )]
    LockTimeout {
        /// The lock's name.
        name: String,
        /// How long the call waited before giving up.
        waited: std::time::Duration,
    },
    /// An optimistic transaction (WATCH / MULTI / EXEC: [`Db::transaction`](crate::Db::transaction),
    /// [`Db::raw_transaction`](crate::Db::raw_transaction),
    /// or a model write that keeps a unique or tag index in step) found its
    /// watched keys changed by another client on every attempt, and nothing
    /// was written. Retry later or allow more attempts; if one key is that
    /// hot, a lock ([`Db::with_lock`](crate::Db::with_lock)) may serve better.
    #[error(
        "transaction aborted: {} changed by another client on each of {attempts} attempt(s); \
         nothing was written (retry later or allow more attempts)",
        conflict_subject(.key)
    )]
    Conflict {
        /// How many times the transaction was tried.
        attempts: u32,
        /// The key the transaction was about, when there is one to name.
        key: Option<String>,
    },
    /// An API was called in a way it cannot honour (for instance an atomic
    /// pipeline used to read inside an optimistic transaction, where its
    /// `EXEC` would drop the `WATCH`es). The text says what to do instead.
    #[error("redmodel cannot do this: {0}")]
    Misuse(String),
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
    /// where a relation's list is expected, a string where an index's
    /// sorted set is, ...). A write refused so has written nothing of its
    /// atomic unit (see `docs/errors.md`).
    #[error("`{key}` holds another Redis type than the {expected} its model keeps there")]
    UnexpectedType {
        /// The key.
        key: String,
        /// The Redis type the model expects: `hash`, `list`, `set`, `zset`
        /// or `string`.
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
    /// An item of a bulk write (`insert_many`, `set_many`, `delete_many`)
    /// names the same object as an earlier item of the batch, or claims
    /// the same unique value: only the earlier item is sent, and nothing
    /// of this one was written.
    #[error("item {earlier} of the same batch already {}; nothing was written", duplicate_of(*field, value))]
    DuplicateInBatch {
        /// The model's table.
        model: &'static str,
        /// The unique field whose value both items claim; `None` if both
        /// items name the same object.
        field: Option<&'static str>,
        /// The value both claim (stored text), or the object's key.
        value: String,
        /// The position of the earlier item in the batch.
        earlier: usize,
    },
    /// A write names an object that does not exist: a sub-object written
    /// under a missing admin, a link to or from a missing object. Writes
    /// land only on objects that exist at that moment (checked atomically
    /// with the write); `insert` of an admin creates it. Nothing was
    /// written.
    #[error("`{key}` does not exist, and the write needs it; nothing was written")]
    NotFound {
        /// The missing object's key.
        key: String,
    },
    /// On a Redis Cluster, an optimistic transaction named keys in more
    /// than one slot: WATCH and EXEC run on one node, so they must share a
    /// slot (give them a hash tag: `{acct}:a`, `{acct}:b`). Refused before
    /// anything was sent.
    #[error("the keys {keys:?} of one transaction are in different cluster slots (give them a common hash tag, as in `{{acct}}:a`); nothing was sent")]
    CrossSlot {
        /// The keys of the transaction.
        keys: Vec<String>,
    },
    /// A cascading delete was refused: a relation list declared
    /// `on_delete = "restrict"`, or a reference field whose rule is
    /// `restrict` (the default of a required `Ref<M>`), still points at
    /// the object. Nothing of it was written. Unlink it or point the
    /// reference elsewhere first.
    #[error("cannot delete `{key}`: `{by}` still points at it (on_delete = \"restrict\"); nothing was written")]
    Restricted {
        /// The object whose delete was refused.
        key: String,
        /// The key of the list or hash that still points at it.
        by: String,
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
    /// A write done on the master, but acknowledged by fewer replicas than
    /// [`Db::with_replica_acks`](crate::Db::with_replica_acks) asked for
    /// within its timeout. The write is not undone: a failover before the
    /// replicas catch up may lose it. Not transient: running the write
    /// again would apply it twice.
    #[error(
        "the write is done on the master, but {acked} of {wanted} replicas acknowledged it in time"
    )]
    NotReplicated {
        /// How many replicas acknowledged the write.
        acked: u32,
        /// How many were asked for.
        wanted: u32,
    },
    /// A query that cannot run as asked (a page limit of zero or over
    /// the cap, more results than a whole read may return, a cursor of
    /// another query, a query with nothing to start from). Nothing was
    /// read or written; the text says what to change.
    #[error("invalid query: {reason}; nothing was read")]
    Query {
        /// What is wrong, and what to do instead.
        reason: String,
    },
    /// A time to live that Redis would not keep: zero (or under a
    /// millisecond, which PEXPIRE's whole milliseconds make zero), which
    /// would delete the key or field at once instead of keeping it. Nothing
    /// was written.
    #[error("a time to live must be at least 1 ms, not {ttl:?} (zero deletes at once: use delete for that); nothing was written")]
    InvalidTtl {
        /// The time to live given.
        ttl: std::time::Duration,
    },
    /// The server lacks a command the operation needs (hash-field expiry
    /// on Redis before 7.4 or Valkey before 9, and on the memory engine,
    /// which emulates Redis 7.0.15). Known from
    /// [`Db::server`](crate::Db::server), so refused before anything was
    /// sent.
    #[error("{feature} needs {needs}; the server is {server}; nothing was sent")]
    Unsupported {
        /// What was asked (`hash-field expiry (HPEXPIRE)`).
        feature: &'static str,
        /// The server versions that have it.
        needs: &'static str,
        /// The server the `Db` talks to, as
        /// [`ServerInfo`](crate::ServerInfo) shows it (`redis 7.0.15`).
        server: String,
    },
}

/// How a [`Error::Conflict`] names what changed.
fn conflict_subject(key: &Option<String>) -> String {
    match key {
        Some(key) => format!("`{key}` was"),
        None => "its watched keys were".to_string(),
    }
}

/// How a [`Error::DuplicateInBatch`] names what the earlier item took.
fn duplicate_of(field: Option<&str>, value: &str) -> String {
    match field {
        Some(field) => format!("claims `{value}` as its unique `{field}`"),
        None => format!("writes `{value}`"),
    }
}

/// The error of one item of a bulk write (`insert_many`, `set_many`,
/// `delete_many`): which item it is, by its position in the batch and its
/// object's key, and why it failed. The other items do not depend on it.
#[derive(Debug, thiserror::Error)]
#[error("item {item} (`{key}`) of the batch: {error}")]
pub struct ItemError {
    /// The item's position in the batch (0: the first).
    pub item: usize,
    /// The key of the item's object, in plain form.
    pub key: String,
    /// Why the item failed (what its single write would have returned).
    #[source]
    pub error: Error,
}

impl Error {
    /// Whether this error means the backend is unreachable (as opposed to a
    /// refused command or a bad reply).
    pub fn is_connection(&self) -> bool {
        matches!(self, Error::Connection { .. })
    }

    /// Whether retrying the same request later may succeed: the backend is
    /// unreachable ([`Error::Connection`]), in a passing state
    /// ([`Error::Unavailable`]), or every connection the `Db` may hold is
    /// in use ([`Error::Busy`]). Refused commands, bad data and conflicts
    /// are not transient: the same request would fail the same way.
    ///
    /// ```
    /// let err = redmodel::Error::Config("bad URL".into());
    /// assert!(!err.is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Connection { .. } | Error::Unavailable { .. } | Error::Busy { .. }
        )
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
        if is_tls_failure(&err) {
            return Error::Tls { source: err };
        }
        if let Some((acked, wanted)) = not_replicated(&err) {
            return Error::NotReplicated { acked, wanted };
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
        // A redirection that reached the caller (a transaction aborted by
        // a slot still moving after the retries): transient, like the
        // failover or resharding it comes from.
        if is_passing_state(&err) || is_redirection(&err) {
            return Error::Unavailable { source: err };
        }
        if is_out_of_memory(&err) {
            return Error::OutOfMemory { source: err };
        }
        if err.code() == Some("WRONGTYPE") {
            return Error::WrongType {
                detail: err.detail().unwrap_or_default().to_string(),
            };
        }
        Error::Server(err)
    }
}

/// The error codes of a server that cannot serve for a while, on its own
/// or inside a pipeline or transaction.
const PASSING_STATES: [&str; 7] = [
    "BUSY",
    "LOADING",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "MASTERDOWN",
    "READONLY",
    "NOREPLICAS",
];

/// Whether a server error code is one of a passing state.
pub(crate) fn is_passing_code(code: &str) -> bool {
    PASSING_STATES.contains(&code)
}

fn is_passing_state(err: &redis::RedisError) -> bool {
    err.code()
        .is_some_and(|code| PASSING_STATES.contains(&code))
        || err.clone().into_server_errors().is_some_and(|errors| {
            errors
                .iter()
                .any(|(_, e)| PASSING_STATES.contains(&e.code()))
        })
}

/// Whether a full server refused the command (OOM): on its own, inside
/// a script, as one queued in a MULTI (which aborts the EXEC), or as the
/// EXEC itself, when the data outgrew the limit after the commands were
/// queued (`EXECABORT Transaction discarded because of: OOM ...`).
fn is_out_of_memory(err: &redis::RedisError) -> bool {
    let oom = |code: &str, detail: Option<&str>| {
        code == "OOM"
            || (code == "EXECABORT"
                && detail.is_some_and(|d| d.starts_with("Transaction discarded because of: OOM")))
    };
    oom(err.code().unwrap_or_default(), err.detail())
        || err
            .clone()
            .into_server_errors()
            .is_some_and(|errors| errors.iter().any(|(_, e)| oom(e.code(), e.details())))
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

/// Whether `err` came from the TLS layer (rustls): a refused certificate,
/// an alert from the server, or bytes that are not TLS.
///
/// redis-rs keeps the `std::io::Error` that tokio-rustls made of the
/// `rustls::Error` behind an `Arc<dyn Error>`; this looks through both.
/// Should that layout change, the failure is reported as a plain
/// connection error again, never misreported as TLS.
#[cfg(feature = "tls")]
pub(crate) fn is_tls_failure(err: &redis::RedisError) -> bool {
    use std::error::Error as _;
    use std::sync::Arc;

    let Some(source) = err.source() else {
        return false;
    };
    let io = match source.downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>() {
        Some(shared) => shared.downcast_ref::<std::io::Error>(),
        None => source.downcast_ref::<std::io::Error>(),
    };
    io.and_then(std::io::Error::get_ref)
        .is_some_and(|inner| inner.is::<rustls::Error>())
}

/// Without TLS support no error comes from TLS.
#[cfg(not(feature = "tls"))]
pub(crate) fn is_tls_failure(_err: &redis::RedisError) -> bool {
    false
}

/// The replica counts an error with [`NOT_REPLICATED`] carries: how many
/// acknowledged and how many were wanted.
pub(crate) fn not_replicated(err: &redis::RedisError) -> Option<(u32, u32)> {
    if err.code() != Some(NOT_REPLICATED) {
        return None;
    }
    let detail = err.detail()?;
    let mut words = detail.split_whitespace();
    let acked = words.next()?.parse().ok()?;
    let wanted = words.nth(1)?.parse().ok()?;
    Some((acked, wanted))
}

/// The error code a request gets when too few replicas acknowledged it,
/// turned into [`Error::NotReplicated`].
pub(crate) const NOT_REPLICATED: &str = "NOTREPLICATED";

/// Whether `err` is a redirection or a transient state of a slot (MOVED,
/// ASK, TRYAGAIN, CLUSTERDOWN), alone or inside an aborted transaction
/// (where redis-rs spells them `Moved:`, `Ask:`): the request ran nowhere,
/// and can run again once the slot has settled.
pub(crate) fn is_redirection(err: &redis::RedisError) -> bool {
    let text = err.to_string().to_ascii_uppercase();
    [
        "MOVED",
        "ASK ",
        "ASK:",
        "TRYAGAIN",
        "TRY AGAIN",
        "CLUSTERDOWN",
        "CLUSTER DOWN",
    ]
    .iter()
    .any(|code| text.contains(code))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The error redis-rs makes of a server's error reply `line`.
    pub(crate) fn server_error(line: &str) -> redis::RedisError {
        let reply = format!("-{line}\r\n");
        match redis::parse_redis_value(reply.as_bytes()).and_then(|v| v.extract_error()) {
            Err(err) => err,
            Ok(value) => panic!("{line:?} parsed as {value:?}"),
        }
    }

    #[test]
    fn passing_server_states_are_transient_not_refusals() {
        for line in [
            "LOADING Redis is loading the dataset in memory",
            "TRYAGAIN Multiple keys request during rehashing of slot",
            "CLUSTERDOWN The cluster is down",
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            "READONLY You can't write against a read only replica.",
            "NOREPLICAS Not enough good replicas to write.",
        ] {
            let err = Error::from(server_error(line));
            assert!(matches!(err, Error::Unavailable { .. }), "{line}: {err:?}");
            assert!(err.is_transient() && !err.is_connection(), "{line}");
        }
        for line in ["ERR syntax error", "WRONGTYPE Operation against a key"] {
            assert!(!Error::from(server_error(line)).is_transient(), "{line}");
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

    #[tokio::test]
    async fn a_full_servers_refusal_is_out_of_memory_alone_or_in_an_aborted_transaction() {
        let db = crate::Db::memory();
        let set = |bytes: u64| {
            let mut config = redis::cmd("CONFIG");
            config.arg("SET").arg("maxmemory").arg(bytes);
            config
        };
        db.query::<()>(&set(1)).await.expect("CONFIG SET");
        let err = db
            .query::<()>(redis::cmd("SET").arg("k").arg("v"))
            .await
            .expect_err("refused");
        assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
        assert!(!err.is_transient() && !err.is_connection());
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("GET").arg("k");
        let err = db
            .query_pipeline::<()>(&pipe)
            .await
            .expect_err("an aborted transaction");
        assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
        db.query::<()>(&set(0)).await.expect("CONFIG SET");
        // An EXEC refused itself: the data outgrew the limit after its
        // commands were queued.
        let err = Error::from(server_error(
            "EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.",
        ));
        assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
        let err = Error::from(server_error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
        assert!(matches!(err, Error::Server(_)), "{err:?}");
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
