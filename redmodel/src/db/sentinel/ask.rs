//! Asking the sentinels where the primary is, and making sure it is one.
//!
//! Sentinel's client protocol: ask each sentinel in turn
//! `SENTINEL GET-MASTER-ADDR-BY-NAME name` until one answers with an
//! address, then connect there and check with `ROLE` that the node says
//! `master` (a sentinel may not have seen a failover yet, or the node was
//! just demoted).

use std::time::Duration;

use redis::aio::{ConnectionLike as _, MultiplexedConnection};
use redis::{ConnectionAddr, ConnectionInfo, Value};

use super::SentinelConfig;
use crate::command::cmd;
use crate::error::{Error, Result};

/// Where a primary listens, as the sentinels name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Addr {
    pub(super) host: String,
    pub(super) port: u16,
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// What asking every sentinel gave, when none named a primary.
#[derive(Debug)]
pub(super) enum NoPrimary {
    /// At least one sentinel answered and none knows the master name.
    Unknown,
    /// No sentinel answered; the last error.
    Unreachable(Error),
}

/// The connection to the sentinel that answered last, kept between
/// questions.
pub(super) type Kept = Option<MultiplexedConnection>;

/// The primary's address from the first sentinel that knows it: the one
/// whose connection is `kept`, if any, then each in the configured order.
/// The sentinel that answered is kept for the next question.
pub(super) async fn primary_addr(
    config: &SentinelConfig,
    sentinels: &[redis::Client],
    kept: &mut Kept,
) -> std::result::Result<Addr, NoPrimary> {
    let mut asked = cmd("SENTINEL");
    asked.arg("GET-MASTER-ADDR-BY-NAME").arg(&config.master);
    if let Some(conn) = kept.as_mut() {
        if let Ok(Some(addr)) = ask(conn, &asked).await {
            return Ok(addr);
        }
        *kept = None;
    }
    let mut unknown = false;
    let mut last = None;
    for client in sentinels {
        let answer = match open(client, config.connect, config.response).await {
            Ok(mut conn) => ask(&mut conn, &asked).await.map(|addr| (addr, conn)),
            Err(err) => Err(err),
        };
        match answer {
            Ok((Some(addr), conn)) => {
                *kept = Some(conn);
                return Ok(addr);
            }
            Ok((None, _)) => unknown = true,
            Err(err) => {
                tracing::debug!(target: "redmodel::sentinel", error = %err, "a sentinel did not answer");
                last = Some(err);
            }
        }
    }
    match (unknown, last) {
        (false, Some(err)) => Err(NoPrimary::Unreachable(err)),
        _ => Err(NoPrimary::Unknown),
    }
}

/// A connection to the node (or sentinel) `client` reaches.
pub(super) async fn open(
    client: &redis::Client,
    connect: Duration,
    response: Duration,
) -> Result<MultiplexedConnection> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(connect))
        .set_response_timeout(Some(response));
    Ok(client
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// One sentinel's answer: the address, or `None` if it does not know the
/// master name (a nil reply).
async fn ask(conn: &mut MultiplexedConnection, asked: &redis::Cmd) -> Result<Option<Addr>> {
    match conn.req_packed_command(asked).await? {
        Value::Nil => Ok(None),
        Value::ServerError(err) => Err(redis::RedisError::from(err).into()),
        reply => {
            let (host, port): (String, u16) =
                redis::from_redis_value(reply).map_err(redis::RedisError::from)?;
            Ok(Some(Addr { host, port }))
        }
    }
}

/// The connection settings of the data node at `addr`: the configured
/// credentials, database and TLS.
fn node_info(config: &SentinelConfig, addr: &Addr) -> Result<ConnectionInfo> {
    let mut settings = redis::RedisConnectionInfo::default().set_db(config.db);
    if let Some(user) = &config.node_user {
        settings = settings.set_username(user);
    }
    if let Some(password) = &config.node_password {
        settings = settings.set_password(password);
    }
    let tcp = if config.node_tls {
        ConnectionAddr::TcpTls {
            host: addr.host.clone(),
            port: addr.port,
            insecure: false,
            tls_params: None,
        }
    } else {
        ConnectionAddr::Tcp(addr.host.clone(), addr.port)
    };
    let info = redis::IntoConnectionInfo::into_connection_info(tcp)?;
    Ok(info.set_redis_settings(settings))
}

/// The redis-rs client of the data node at `addr`.
pub(super) fn node_client(config: &SentinelConfig, addr: &Addr) -> Result<redis::Client> {
    let info = node_info(config, addr)?;
    #[cfg(feature = "tls")]
    if config.node_tls {
        super::super::url::install_crypto_provider();
        if let Some(certificates) = &config.node_certificates {
            return redis::Client::build_with_tls(info, certificates.clone())
                .map_err(|e| Error::Config(format!("bad TLS certificates: {e}")));
        }
    }
    Ok(redis::Client::open(info)?)
}

/// Whether the node `client` reaches says it is a master (`ROLE`).
pub(super) async fn is_master(
    client: &redis::Client,
    connect: Duration,
    response: Duration,
) -> Result<bool> {
    let mut conn = open(client, connect, response).await?;
    let reply = conn.req_packed_command(&cmd("ROLE")).await?;
    Ok(match reply {
        Value::Array(parts) => {
            matches!(
                parts.first(),
                Some(Value::BulkString(role)) if role == b"master"
            ) || matches!(parts.first(), Some(Value::SimpleString(role)) if role == "master")
        }
        Value::ServerError(err) => return Err(redis::RedisError::from(err).into()),
        _ => false,
    })
}
