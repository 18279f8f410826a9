//! TLS (`rediss://`) for [`Db`], behind the `tls` cargo feature.
//!
//! redis-rs does the TLS itself (rustls, through its `tokio-rustls-comp`
//! feature); this module decides what a URL needs before redis-rs sees it,
//! so that a missing feature is reported as redmodel's feature to enable
//! (redis-rs would name its own, which a redmodel user cannot turn on
//! directly), and it adds [`Db::connect_with_tls`] for servers whose
//! certificate a private CA signed, or that ask for a client certificate.

#[cfg(feature = "tls")]
use crate::db::{Db, DEFAULT_CONNECTION_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT};
use crate::error::{Error, Result};

/// How a URL asks to be reached, as far as TLS is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    /// `redis://`, `redis+unix://`, ...: no TLS.
    Plain,
    /// `rediss://` (or `valkeys://`): TLS with certificate checks.
    Tls,
    /// `rediss://...#insecure`: TLS that accepts any certificate.
    TlsInsecure,
}

/// Reads the transport off the URL text. Only the scheme and the fragment
/// matter here; redis-rs parses (and rejects) everything else.
fn transport(url: &str) -> Transport {
    let scheme = url
        .split_once("://")
        .map_or("", |(scheme, _)| scheme.trim());
    let tls = scheme.eq_ignore_ascii_case("rediss") || scheme.eq_ignore_ascii_case("valkeys");
    let insecure = url
        .rsplit_once('#')
        .is_some_and(|(_, fragment)| fragment == "insecure");
    match (tls, insecure) {
        (false, _) => Transport::Plain,
        (true, false) => Transport::Tls,
        (true, true) => Transport::TlsInsecure,
    }
}

/// Refuses, with the feature to enable, a URL that this build cannot serve.
fn check_features(url: &str) -> Result<()> {
    match transport(url) {
        Transport::Plain => Ok(()),
        Transport::Tls if cfg!(feature = "tls") => Ok(()),
        Transport::Tls => Err(Error::Config(
            "a rediss:// URL needs TLS, which this build of redmodel leaves out: enable \
             redmodel's `tls` cargo feature (on by default; it is off when redmodel is \
             declared with `default-features = false`)"
                .to_string(),
        )),
        Transport::TlsInsecure if cfg!(feature = "tls-insecure") => Ok(()),
        Transport::TlsInsecure => Err(Error::Config(
            "a rediss://...#insecure URL (TLS without certificate checks) needs redmodel's \
             `tls-insecure` cargo feature; better, trust the server's CA with \
             Db::connect_with_tls"
                .to_string(),
        )),
    }
}

/// Builds the redis-rs client for `url`, after checking that this build
/// supports the URL's transport.
pub(crate) fn open_client(url: &str) -> Result<redis::Client> {
    check_features(url)?;
    if transport(url) != Transport::Plain {
        install_crypto_provider();
    }
    redis::Client::open(url).map_err(|e| Error::Config(format!("bad Redis URL: {e}")))
}

/// Makes sure rustls has a process-wide crypto provider before redis-rs
/// builds a TLS configuration.
///
/// rustls picks one by itself only when exactly one provider is compiled
/// in; if another crate of the application also enables aws-lc-rs, rustls
/// would panic instead. So we install ring (the provider redmodel enables)
/// unless the application already installed one, which is then kept.
#[cfg(feature = "tls")]
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // An error only means another thread installed one meanwhile.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(not(feature = "tls"))]
fn install_crypto_provider() {}

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

/// The scheme part of a URL, for messages (never the credentials).
#[cfg(feature = "tls")]
fn scheme_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, _)) => format!("{scheme}://"),
        None => "no scheme".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
