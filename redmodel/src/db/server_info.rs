//! Which server a [`Db`] talks to: its name (Redis, Valkey) and version,
//! learnt once when the `Db` connects (and, through Sentinel, again from
//! each new primary), so that a feature a server lacks can be refused
//! without a failed round trip.
//!
//! A server answers `HELLO` (no arguments: the protocol stays as it is)
//! with a map holding `server` and `version`, and every ACL user may send
//! it. A server that does not know HELLO without arguments (before Redis
//! 6.2) is asked `INFO server` instead. The memory engine reports the
//! Redis it emulates without asking.

use std::fmt;

use redis::{Cmd, Value};

use super::Db;
use crate::command::{cmd, Owned};
use crate::error::{Error, Result};

/// The server behind a [`Db`]: its name and version ([`Db::server`]).
///
/// ```
/// use redmodel::{ServerName, ServerVersion};
/// let db = redmodel::Db::memory();
/// // The memory engine reports the Redis it behaves as.
/// assert_eq!(db.server().name(), ServerName::Redis);
/// assert_eq!(db.server().version(), ServerVersion::new(7, 0, 15));
/// assert!(db.server().version() < ServerVersion::new(7, 4, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerInfo {
    name: ServerName,
    version: ServerVersion,
}

impl ServerInfo {
    /// A server of this name and version.
    pub const fn new(name: ServerName, version: ServerVersion) -> ServerInfo {
        ServerInfo { name, version }
    }

    /// Which server software it is.
    pub const fn name(&self) -> ServerName {
        self.name
    }

    /// Its version, as the server reports it (Valkey reports its own
    /// numbering, 8.0.1, not the Redis version it is compatible with).
    pub const fn version(&self) -> ServerVersion {
        self.version
    }

    /// Whether the server has hash-field expiry (HEXPIRE, HPEXPIRE,
    /// HPERSIST, HPTTL): Redis 7.4 and later, Valkey 9 and later.
    pub fn has_field_expiry(&self) -> bool {
        match self.name {
            ServerName::Redis => self.version >= ServerVersion::new(7, 4, 0),
            ServerName::Valkey => self.version >= ServerVersion::new(9, 0, 0),
            ServerName::Other => false,
        }
    }

    /// `Ok` if the server has hash-field expiry, else
    /// [`Error::Unsupported`] naming the versions that do.
    pub(crate) fn require_field_expiry(&self) -> Result<()> {
        if self.has_field_expiry() {
            return Ok(());
        }
        Err(Error::Unsupported {
            feature: "hash-field expiry (HPEXPIRE, HPERSIST, HPTTL)",
            needs: "Redis 7.4 or later, or Valkey 9 or later",
            server: self.to_string(),
        })
    }

    /// What a memory engine behaving as Redis `version` emulates
    /// ([`Engine::with_version`](crate::memory::Engine::with_version)).
    pub(crate) fn engine(version: crate::memory::RedisVersion) -> ServerInfo {
        ServerInfo::new(ServerName::Redis, ServerVersion::parse(version.as_str()))
    }

    /// Asks the server through `send` (one round trip, two on a server
    /// without HELLO's short form).
    pub(crate) async fn ask<F, Fut>(send: F) -> Result<ServerInfo>
    where
        F: Fn(Cmd) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<Value>>,
    {
        // A server's refusal comes as a reply value: `extract_error`
        // makes it the error it is.
        let hello = match send(cmd("HELLO")).await.and_then(Value::extract_error) {
            Ok(reply) => reply,
            // Unknown command, or HELLO wanting its protocol version: a
            // server older than Redis 6.2, asked INFO below. Any other
            // error (NOAUTH, a dropped connection) is the caller's.
            Err(err) if err.code() == Some("ERR") => Value::Nil,
            Err(err) => return Err(err.into()),
        };
        if let Some(info) = ServerInfo::from_hello(&hello) {
            return Ok(info);
        }
        // On a cluster redis-rs asks every master, and gives a map of
        // their replies: the oldest speaks for the cluster.
        let info = send(cmd("INFO").arg("server").owned())
            .await
            .and_then(Value::extract_error)?;
        let replies = match &info {
            Value::Map(pairs) => pairs.iter().map(|(_, reply)| reply).collect(),
            reply => vec![reply],
        };
        let servers = replies
            .into_iter()
            .filter_map(|reply| ServerInfo::from_info(&text(reply)?));
        servers.min_by_key(ServerInfo::version).ok_or_else(|| {
            Error::Reply(redis::RedisError::from((
                redis::ErrorKind::UnexpectedReturnType,
                "neither HELLO nor INFO server named the server's version",
            )))
        })
    }

    /// Reads HELLO's reply: a map in RESP3, a flat array of names and
    /// values in RESP2.
    fn from_hello(reply: &Value) -> Option<ServerInfo> {
        let pairs: Vec<(&Value, &Value)> = match reply {
            Value::Map(pairs) => pairs.iter().map(|(k, v)| (k, v)).collect(),
            Value::Array(items) => items
                .chunks_exact(2)
                .map(|pair| (&pair[0], &pair[1]))
                .collect(),
            _ => return None,
        };
        let field = |name: &str| {
            pairs.iter().find_map(|(k, v)| {
                (text(k)?.eq_ignore_ascii_case(name))
                    .then(|| text(v))
                    .flatten()
            })
        };
        Some(ServerInfo::new(
            ServerName::parse(&field("server")?),
            ServerVersion::parse(&field("version")?),
        ))
    }

    /// Reads `INFO server`: `server_name` (Valkey), and the version under
    /// that name (`valkey_version`), else `redis_version` (Valkey also
    /// reports the Redis version it is compatible with there).
    fn from_info(info: &str) -> Option<ServerInfo> {
        let field = |name: &str| {
            info.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k == name).then(|| v.trim().to_string())
            })
        };
        let name = field("server_name").unwrap_or_else(|| "redis".to_string());
        let version = field(&format!("{name}_version")).or_else(|| field("redis_version"))?;
        Some(ServerInfo::new(
            ServerName::parse(&name),
            ServerVersion::parse(&version),
        ))
    }
}

impl fmt::Display for ServerInfo {
    /// `redis 7.0.15`, `valkey 8.0.1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

/// A bulk or simple string reply as text.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => Some(s.clone()),
        _ => None,
    }
}

/// Which server software a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerName {
    /// Redis (and the memory engine, which emulates it).
    Redis,
    /// Valkey.
    Valkey,
    /// A server that gave another name.
    Other,
}

impl ServerName {
    /// The name a server gives in HELLO's `server` field.
    fn parse(name: &str) -> ServerName {
        if name.eq_ignore_ascii_case("redis") {
            ServerName::Redis
        } else if name.eq_ignore_ascii_case("valkey") {
            ServerName::Valkey
        } else {
            ServerName::Other
        }
    }
}

impl fmt::Display for ServerName {
    /// `redis`, `valkey` or `other`, as servers spell their own names.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerName::Redis => "redis",
            ServerName::Valkey => "valkey",
            ServerName::Other => "other",
        })
    }
}

/// A server's version, `major.minor.patch`, ordered as versions are:
/// `ServerVersion::new(7, 4, 0) > ServerVersion::new(7, 0, 15)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerVersion {
    /// The major version (7 of 7.4.1).
    pub major: u32,
    /// The minor version (4 of 7.4.1).
    pub minor: u32,
    /// The patch level (1 of 7.4.1).
    pub patch: u32,
}

impl ServerVersion {
    /// `major.minor.patch`.
    pub const fn new(major: u32, minor: u32, patch: u32) -> ServerVersion {
        ServerVersion {
            major,
            minor,
            patch,
        }
    }

    /// Reads `7.4.1`; a missing or unreadable part (`8.0`, `8.0.0-rc1`'s
    /// suffix) counts from its leading digits, else as 0.
    fn parse(version: &str) -> ServerVersion {
        let mut parts = version.trim().split('.').map(|part| {
            let digits = part.bytes().take_while(u8::is_ascii_digit).count();
            part[..digits].parse().unwrap_or(0)
        });
        let mut next = || parts.next().unwrap_or(0);
        ServerVersion::new(next(), next(), next())
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Db {
    /// The server this handle talks to: its name and version, learnt
    /// when it connected (HELLO, one round trip of [`Db::connect`] and
    /// [`Db::connect_cluster`]), so reading it costs nothing. The memory
    /// engine reports the Redis it emulates, 7.0.15 by default, 7.4.1 in
    /// [7.4 mode](crate::Db::memory_74) (a `Db` connected to
    /// the engine [served over RESP](crate::memory) learns the same from
    /// its HELLO). On a cluster it is what the node that answered said:
    /// the nodes of a cluster run one version, except midway through a
    /// rolling upgrade. Through Sentinel it is the current primary's,
    /// learnt again (HELLO) when a failover makes another node the
    /// primary.
    ///
    /// For code that uses a feature only some servers have: ask here
    /// instead of sending the command and reading an error.
    ///
    /// ```
    /// use redmodel::{ServerName, ServerVersion};
    /// let db = redmodel::Db::memory();
    /// let server = db.server();
    /// // Hash-field expiry (HEXPIRE) came with Redis 7.4 (Valkey 8 lacks it).
    /// let has_hexpire =
    ///     server.name() == ServerName::Redis && server.version() >= ServerVersion::new(7, 4, 0);
    /// assert!(!has_hexpire);
    /// assert_eq!(server.has_field_expiry(), has_hexpire);
    /// assert_eq!(server.to_string(), "redis 7.0.15");
    /// ```
    pub fn server(&self) -> ServerInfo {
        self.shared.backend.server().unwrap_or(self.shared.server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn versions_order_as_numbers() {
        assert!(ServerVersion::new(7, 4, 0) > ServerVersion::new(7, 0, 15));
        assert!(ServerVersion::new(8, 0, 1) > ServerVersion::new(7, 4, 1));
        assert!(ServerVersion::new(7, 0, 15) > ServerVersion::new(7, 0, 9));
        assert_eq!(ServerVersion::parse("7.0.15"), ServerVersion::new(7, 0, 15));
        assert_eq!(ServerVersion::parse("8.0"), ServerVersion::new(8, 0, 0));
        assert_eq!(
            ServerVersion::parse("8.1.0-rc1"),
            ServerVersion::new(8, 1, 0)
        );
        assert_eq!(ServerVersion::parse("junk"), ServerVersion::new(0, 0, 0));
        assert_eq!(ServerVersion::new(7, 4, 1).to_string(), "7.4.1");
    }

    #[test]
    fn hello_reads_in_both_protocols() {
        let fields = [
            ("server", "valkey"),
            ("version", "8.0.1"),
            ("proto", "2"),
            ("mode", "cluster"),
        ];
        let resp2 = Value::Array(
            fields
                .iter()
                .flat_map(|(k, v)| [bulk(k), bulk(v)])
                .collect(),
        );
        let resp3 = Value::Map(fields.iter().map(|(k, v)| (bulk(k), bulk(v))).collect());
        let valkey = ServerInfo::new(ServerName::Valkey, ServerVersion::new(8, 0, 1));
        assert_eq!(ServerInfo::from_hello(&resp2), Some(valkey));
        assert_eq!(ServerInfo::from_hello(&resp3), Some(valkey));
        assert_eq!(ServerInfo::from_hello(&Value::Nil), None);
        assert_eq!(ServerInfo::from_hello(&Value::Array(vec![])), None);
    }

    #[test]
    fn info_names_valkey_by_its_own_version() {
        let valkey =
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n";
        assert_eq!(
            ServerInfo::from_info(valkey),
            Some(ServerInfo::new(
                ServerName::Valkey,
                ServerVersion::new(8, 0, 1)
            ))
        );
        let redis = "# Server\r\nredis_version:6.0.20\r\nredis_mode:standalone\r\n";
        assert_eq!(
            ServerInfo::from_info(redis),
            Some(ServerInfo::new(
                ServerName::Redis,
                ServerVersion::new(6, 0, 20)
            ))
        );
        assert_eq!(ServerInfo::from_info("# Server\r\n"), None);
    }

    #[test]
    fn field_expiry_comes_with_redis_7_4_and_valkey_9() {
        let has = |name, major, minor| {
            ServerInfo::new(name, ServerVersion::new(major, minor, 0)).has_field_expiry()
        };
        assert!(!has(ServerName::Redis, 7, 0));
        assert!(!has(ServerName::Redis, 7, 2));
        assert!(has(ServerName::Redis, 7, 4));
        assert!(has(ServerName::Redis, 8, 0));
        assert!(!has(ServerName::Valkey, 8, 0));
        assert!(has(ServerName::Valkey, 9, 0));
        assert!(!has(ServerName::Other, 99, 0));
        assert!(ServerInfo::engine(crate::memory::RedisVersion::V7_0)
            .require_field_expiry()
            .is_err());
    }

    #[test]
    fn the_engine_reports_what_it_emulates() {
        assert_eq!(
            ServerInfo::engine(crate::memory::RedisVersion::V7_0).to_string(),
            "redis 7.0.15"
        );
    }
}
