//! Connecting a [`Db`] to a server: URLs, TLS (`rediss://`, behind the
//! `tls` cargo feature), ACL users and timeouts.
//!
//! redis-rs does the TLS itself (rustls, through its `tokio-rustls-comp`
//! feature); this module decides what a URL needs before redis-rs sees it,
//! so that a missing feature is reported as redmodel's feature to enable
//! (redis-rs would name its own, which a redmodel user cannot turn on
//! directly), and it adds [`Db::connect_with_tls`] for servers whose
//! certificate a private CA signed, or that ask for a client certificate.

use std::time::Duration;

use super::backend::Backend as _;
use super::cluster::ClusterBackend;
use super::sentinel::{SentinelBackend, SentinelConfig};
use super::server::ServerBackend;
use super::server_info::ServerInfo;
use super::url::{check_features, open_client};
#[cfg(feature = "tls")]
use super::url::{install_crypto_provider, scheme_of, transport, Transport};
use super::{Db, DEFAULT_CONNECTION_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT};
use crate::error::{Error, Result};

impl Db {
    /// Connects to the Redis server at `url`: `redis://[user:password@]host[:port][/db]`,
    /// or `rediss://` for TLS, or `redis+unix:///path`. The connection is
    /// re-established by itself after the server goes away and comes back;
    /// requests made meanwhile fail with [`Error::Connection`] within the
    /// response timeout (5 s) instead of hanging. Connecting also asks the
    /// server its name and version (HELLO, one round trip; see
    /// [`Db::server`]).
    ///
    /// - `user:password@` logs in as that ACL user (`:password@` alone as
    ///   the `default` user, for a server with `requirepass`); credentials
    ///   the server refuses, or none where it wants some, give
    ///   [`Error::Auth`] here, at connect time.
    ///   Percent-encode reserved characters in them (`@` is `%40`).
    /// - `/db` selects that database number on every (re)connection.
    /// - `rediss://` verifies the server's certificate against the system's
    ///   root certificates; see `Db::connect_with_tls` for a private CA or
    ///   a client certificate. It needs the `tls` feature (on by default):
    ///   without it a `rediss://` URL gives [`Error::Config`] saying so.
    pub async fn connect(url: &str) -> Result<Db> {
        Self::connect_with_timeouts(url, DEFAULT_CONNECTION_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT).await
    }

    /// Like [`Db::connect`], with explicit connection and response timeouts.
    pub async fn connect_with_timeouts(
        url: &str,
        connect: Duration,
        response: Duration,
    ) -> Result<Db> {
        let client = open_client(url)?;
        Self::from_client(client, connect, response).await
    }

    /// A Redis Cluster, reached through `seeds`: the URLs of some of its
    /// nodes (one that answers is enough; it tells where the rest are).
    /// The URL rules of [`Db::connect`] apply to each (an ACL user, TLS
    /// with `rediss://`); a database number other than 0 is refused, as a
    /// cluster has only database 0.
    ///
    /// Requests are routed to the master of their key's slot; MOVED and
    /// ASK are followed and the slot map refreshed when the topology
    /// changes. The `Db` uses the cluster [key layout](crate::KeyLayout), where an
    /// admin and everything under it share a slot. Connecting asks one node
    /// the server's name and version ([`Db::server`]).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), redmodel::Error> {
    /// let db = redmodel::Db::connect_cluster(["redis://127.0.0.1:7000", "redis://127.0.0.1:7001"]).await?;
    /// assert!(db.is_cluster());
    /// # Ok(()) }
    /// ```
    pub async fn connect_cluster<S: AsRef<str>>(seeds: impl IntoIterator<Item = S>) -> Result<Db> {
        Self::connect_cluster_with_timeouts(
            seeds,
            DEFAULT_CONNECTION_TIMEOUT,
            DEFAULT_RESPONSE_TIMEOUT,
        )
        .await
    }

    /// Like [`Db::connect_cluster`], with explicit connection and response
    /// timeouts.
    pub async fn connect_cluster_with_timeouts<S: AsRef<str>>(
        seeds: impl IntoIterator<Item = S>,
        connect: Duration,
        response: Duration,
    ) -> Result<Db> {
        let seeds: Vec<String> = seeds
            .into_iter()
            .map(|s| s.as_ref().trim().to_string())
            .collect();
        if seeds.is_empty() {
            return Err(Error::Config(
                "connect_cluster needs at least one seed URL".to_string(),
            ));
        }
        for seed in &seeds {
            check_features(seed)?;
        }
        let backend = ClusterBackend::connect(seeds, connect, response).await?;
        let sent = &backend;
        let server = ServerInfo::ask(|cmd| async move { sent.send(&cmd).await }).await?;
        Ok(Db::from_backend(backend, server))
    }

    /// The primary of a replica set that Redis Sentinel watches: the
    /// sentinels of `config` are asked in turn for the primary of its
    /// master name (`SENTINEL GET-MASTER-ADDR-BY-NAME`), and the node they
    /// name is used once it says it is a master (`ROLE`).
    ///
    /// The `Db` follows failovers: when the connection to the primary is
    /// lost or the node refuses a write as a replica (`READONLY`), and
    /// every second besides, it asks the sentinels again and switches to
    /// the primary they name. A request in flight when the primary is
    /// lost fails with [`Error::Unavailable`] (it may or may not have run;
    /// retry it if it is idempotent); later requests go to the new
    /// primary. The near cache, if on, empties at the switch.
    /// [`with_replica_acks`](Db::with_replica_acks) works as on one server,
    /// and is what keeps an acknowledged write through a failover.
    ///
    /// A master name no sentinel knows gives [`Error::Config`]; no
    /// sentinel answering gives the last one's error
    /// ([`Error::Connection`]); a named node that says it is a replica (a
    /// failover under way) gives [`Error::Unavailable`]: retry shortly.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), redmodel::Error> {
    /// use redmodel::{Db, SentinelConfig};
    /// let sentinels = ["redis://10.0.0.1:26379", "redis://10.0.0.2:26379", "redis://10.0.0.3:26379"];
    /// let db = Db::connect_sentinel(SentinelConfig::new("mymaster", sentinels)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_sentinel(config: SentinelConfig) -> Result<Db> {
        let backend = SentinelBackend::connect(config).await?;
        let server = backend.primary_server();
        Ok(Db::from_backend(backend, server))
    }

    /// The database the environment names: a Redis Cluster if
    /// `REDIS_CLUSTER_URLS` holds comma-separated seed URLs; else the
    /// primary of the master named `REDIS_SENTINEL_MASTER`, found through
    /// the comma-separated sentinel URLs of `REDIS_SENTINEL_URLS`, if both
    /// are set; else the server of `REDIS_URL` if set (and not empty);
    /// else a new memory engine.
    pub async fn from_env() -> Result<Db> {
        if let Some(seeds) = url_list("REDIS_CLUSTER_URLS") {
            return Db::connect_cluster(seeds).await;
        }
        if let Some(sentinels) = url_list("REDIS_SENTINEL_URLS") {
            let master = std::env::var("REDIS_SENTINEL_MASTER").unwrap_or_default();
            if master.trim().is_empty() {
                return Err(Error::Config(
                    "REDIS_SENTINEL_URLS is set but REDIS_SENTINEL_MASTER, the master name \
                     the sentinels monitor, is not"
                        .to_string(),
                ));
            }
            return Db::connect_sentinel(SentinelConfig::new(master.trim(), sentinels)).await;
        }
        match std::env::var("REDIS_URL") {
            Ok(url) if !url.trim().is_empty() => Db::connect(url.trim()).await,
            _ => Ok(Db::memory()),
        }
    }

    /// Connects through an already built redis-rs client (the URL
    /// constructors and `Db::connect_with_tls` end here).
    async fn from_client(
        client: redis::Client,
        connect: Duration,
        response: Duration,
    ) -> Result<Db> {
        let backend = ServerBackend::connect(client, connect, response).await?;
        let sent = &backend;
        let server = ServerInfo::ask(|cmd| async move { sent.send(&cmd).await }).await?;
        Ok(Db::from_backend(backend, server))
    }
}

/// The comma-separated URLs of environment variable `name`, if it holds
/// any.
fn url_list(name: &str) -> Option<Vec<String>> {
    let urls: Vec<String> = std::env::var(name)
        .ok()?
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    (!urls.is_empty()).then_some(urls)
}

#[cfg(feature = "tls")]
impl Db {
    /// Connects to a `rediss://` URL with explicit TLS material: the
    /// certificate(s) of a private CA to trust instead of the system's
    /// roots (`root_cert`, PEM), and/or a client certificate and key for a
    /// server that checks clients (`tls-auth-clients yes`).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), redmodel::Error> {
    /// use redmodel::redis::TlsCertificates;
    ///
    /// let ca = std::fs::read("ca.crt").map_err(|e| redmodel::Error::Config(e.to_string()))?;
    /// let certificates = TlsCertificates { client_tls: None, root_cert: Some(ca) };
    /// let url = "rediss://app:secret@redis.internal:6380/0";
    /// let db = redmodel::Db::connect_with_tls(url, certificates).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// A URL that is not `rediss://`, or PEM that does not parse, gives
    /// [`Error::Config`]; a server whose certificate the CA did not sign,
    /// or that wants a client certificate it did not get, gives
    /// [`Error::Tls`].
    pub async fn connect_with_tls(url: &str, certificates: redis::TlsCertificates) -> Result<Db> {
        check_features(url)?;
        if transport(url) == Transport::Plain {
            return Err(Error::Config(format!(
                "Db::connect_with_tls needs a rediss:// URL, got {}",
                scheme_of(url)
            )));
        }
        install_crypto_provider();
        let client = redis::Client::build_with_tls(url, certificates)
            .map_err(|e| Error::Config(format!("bad Redis URL or TLS certificates: {e}")))?;
        Db::from_client(client, DEFAULT_CONNECTION_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::url::{transport, Transport};
    use crate::Db;

    #[test]
    fn transport_reads_scheme_and_fragment() {
        assert_eq!(transport("redis://127.0.0.1:6379/0"), Transport::Plain);
        assert_eq!(transport("redis+unix:///tmp/r.sock"), Transport::Plain);
        assert_eq!(transport("redis://h/#insecure"), Transport::Plain);
        assert_eq!(transport("rediss://u:p@h:6380/2"), Transport::Tls);
        assert_eq!(transport("REDISS://h"), Transport::Tls);
        assert_eq!(transport("valkeys://h"), Transport::Tls);
        assert_eq!(
            transport("rediss://h:6380/#insecure"),
            Transport::TlsInsecure
        );
        assert_eq!(transport("not a url"), Transport::Plain);
        assert_eq!(transport(""), Transport::Plain);
    }

    /// The text of the `Error::Config` a refused URL gives (used by the
    /// tests of the features a build leaves out).
    #[cfg(not(all(feature = "tls", feature = "tls-insecure")))]
    fn config_text(result: Result<()>) -> String {
        match result {
            Err(Error::Config(text)) => text,
            other => panic!("expected Error::Config, got {other:?}"),
        }
    }

    #[cfg(not(feature = "tls"))]
    #[tokio::test]
    async fn rediss_without_the_feature_names_the_feature() {
        let text = config_text(check_features("rediss://127.0.0.1:6380"));
        assert!(text.contains("`tls` cargo feature"), "{text}");
        // Db::connect says the same, before any network access.
        match Db::connect("rediss://127.0.0.1:1").await {
            Err(Error::Config(text)) => assert!(text.contains("`tls` cargo feature"), "{text}"),
            other => panic!("expected Error::Config, got {other:?}"),
        }
    }

    #[cfg(feature = "tls")]
    #[test]
    fn rediss_with_the_feature_is_accepted() {
        assert!(check_features("rediss://127.0.0.1:6380").is_ok());
        assert!(open_client("rediss://127.0.0.1:6380/1").is_ok());
    }

    #[cfg(not(feature = "tls-insecure"))]
    #[tokio::test]
    async fn insecure_without_its_feature_names_the_feature() {
        let text = config_text(check_features("rediss://127.0.0.1:6380/#insecure"));
        assert!(text.contains("`tls-insecure` cargo feature"), "{text}");
        match Db::connect("rediss://127.0.0.1:1/#insecure").await {
            Err(Error::Config(text)) => assert!(text.contains("tls-insecure"), "{text}"),
            other => panic!("expected Error::Config, got {other:?}"),
        }
    }

    #[cfg(feature = "tls")]
    #[tokio::test]
    async fn connect_with_tls_wants_rediss() {
        let certificates = redis::TlsCertificates {
            client_tls: None,
            root_cert: None,
        };
        match Db::connect_with_tls("redis://127.0.0.1:1", certificates).await {
            Err(Error::Config(text)) => assert!(text.contains("rediss://"), "{text}"),
            other => panic!("expected Error::Config, got {other:?}"),
        }
    }

    #[cfg(feature = "tls")]
    #[tokio::test]
    async fn connect_with_tls_refuses_bad_pem() {
        let certificates = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(b"-----BEGIN CERTIFICATE-----\nnot base64!\n".to_vec()),
        };
        match Db::connect_with_tls("rediss://127.0.0.1:1", certificates).await {
            Err(Error::Config(text)) => assert!(text.contains("certificate"), "{text}"),
            other => panic!("expected Error::Config, got {other:?}"),
        }
    }
}
