//! What a server URL asks for before redis-rs sees it: its transport
//! (plain or TLS, checked against this build's features, so that a missing
//! feature is reported as redmodel's to enable) and the redis-rs client
//! that reaches it.

use crate::error::{Error, Result};

/// How a URL asks to be reached, as far as TLS is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transport {
    /// `redis://`, `redis+unix://`, ...: no TLS.
    Plain,
    /// `rediss://` (or `valkeys://`): TLS with certificate checks.
    Tls,
    /// `rediss://...#insecure`: TLS that accepts any certificate.
    TlsInsecure,
}

/// Reads the transport off the URL text. Only the scheme and the fragment
/// matter here; redis-rs parses (and rejects) everything else.
pub(super) fn transport(url: &str) -> Transport {
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
pub(super) fn check_features(url: &str) -> Result<()> {
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
pub(super) fn open_client(url: &str) -> Result<redis::Client> {
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
pub(super) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // An error only means another thread installed one meanwhile.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(not(feature = "tls"))]
pub(super) fn install_crypto_provider() {}

/// The scheme part of a URL, for messages (never the credentials).
#[cfg(feature = "tls")]
pub(super) fn scheme_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, _)) => format!("{scheme}://"),
        None => "no scheme".to_string(),
    }
}
