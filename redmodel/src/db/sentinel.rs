//! The Sentinel backend: the primary of a replica set that Redis Sentinel
//! watches, followed through failovers ([`Db::connect_sentinel`](crate::Db::connect_sentinel)).
//!
//! - [`ask`]: asking the sentinels where the primary is, and checking with
//!   `ROLE` that the node there says `master`.
//! - [`announce`]: hearing the sentinels announce a new primary
//!   (`+switch-master`), on subscriptions PINGed after each silence of
//!   [`SentinelConfig::heartbeat`] so that a sentinel gone silent is
//!   noticed.
//!
//! The current primary is a [`ServerBackend`] of its own (shared
//! connection, pool of exclusive links), with the name and version it
//! gave (HELLO), replaced whole when the primary changes. A task of the
//! backend asks the sentinels at once when one of them announces a switch
//! of the master (asking that one first), every
//! [`DEFAULT_CHECK_EVERY`] (or as configured) in case an announcement was
//! missed, and at once, then again every few tens of milliseconds until
//! a primary answers, when a request finds the primary gone (its
//! connection lost or refused) or demoted (a `READONLY` refusal). Such a request fails as [`Error::Unavailable`] (transient:
//! it may or may not have run, and the caller may retry); so do, at once
//! and without being sent, the requests made until the task has found a
//! primary that answers (rather than each waiting out a connection
//! timeout on a dead node); requests made after the switch go to the new
//! primary. The announcement (and the periodic question behind it)
//! matters for a failover the `Db` cannot see from its connection:
//! `SENTINEL FAILOVER` promotes the replica while the old primary keeps
//! accepting writes (with none of its replicas left, so a write waiting
//! for replica acknowledgements fails) until Sentinel demotes it seconds
//! later.
//!
//! # Why plain commands rather than redis-rs's `sentinel` feature
//! redis-rs's `SentinelClient` finds a master once (with `SENTINEL
//! MASTERS`, asking sentinels concurrently, behind `&mut self`) and hands
//! back a client: it does not follow a failover, so the switch, its
//! trigger and what happens to requests in flight would be ours anyway.
//! What remains, two commands (`SENTINEL GET-MASTER-ADDR-BY-NAME`,
//! `ROLE`) over the connection code the server backend already has, is
//! shorter than adapting it, keeps the sentinels' documented order
//! (each in turn), and tells a master name no sentinel knows from
//! sentinels that do not answer, which its errors fold together.

mod announce;
mod ask;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio::sync::{mpsc, watch, Notify};

use super::backend::{Backend, Link};
use super::pubsub::{self, Follow, Heartbeat, Opening};
use super::server::ServerBackend;
use super::server_info::ServerInfo;
use super::BoxFuture;
use crate::error::{Error, Result};
use ask::{Addr, NoPrimary};

/// How often the backend asks the sentinels where the primary is while
/// nothing went wrong, unless configured
/// ([`SentinelConfig::check_every`]).
const DEFAULT_CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long a subscribed connection (to a sentinel, or a subscriber's to
/// the primary) may stay silent before it is sent PING, unless configured
/// ([`SentinelConfig::heartbeat`]).
const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(1);
/// The first pause between questions while the primary is lost; each next
/// one doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(25);
const MAX_PAUSE: Duration = Duration::from_millis(400);

/// How to reach a primary through Redis Sentinel
/// ([`Db::connect_sentinel`](crate::Db::connect_sentinel)): the master name
/// the sentinels monitor, their URLs, and how to log in to the data nodes.
///
/// The sentinel URLs follow [`Db::connect`](crate::Db::connect)'s rules: a
/// sentinel that wants a password (`requirepass` in its config) takes it
/// in its URL, `rediss://` reaches it over TLS. The data nodes' address
/// comes from the sentinels; their credentials, database number and TLS
/// come from here.
///
/// ```
/// use redmodel::SentinelConfig;
/// let config = SentinelConfig::new("mymaster", ["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"])
///     .node_credentials(Some("app"), "secret")
///     .database(2);
/// assert_eq!(config.master(), "mymaster");
/// ```
#[derive(Clone)]
pub struct SentinelConfig {
    master: String,
    sentinels: Vec<String>,
    node_user: Option<String>,
    node_password: Option<String>,
    db: i64,
    node_tls: bool,
    #[cfg(feature = "tls")]
    node_certificates: Option<redis::TlsCertificates>,
    #[cfg(feature = "tls")]
    sentinel_certificates: Option<redis::TlsCertificates>,
    connect: Duration,
    response: Duration,
    check_every: Duration,
    heartbeat: Duration,
}

impl std::fmt::Debug for SentinelConfig {
    /// Leaves the password out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelConfig")
            .field("master", &self.master)
            .field("sentinels", &self.sentinels.len())
            .field("node_user", &self.node_user)
            .field("db", &self.db)
            .field("node_tls", &self.node_tls)
            .finish()
    }
}

impl SentinelConfig {
    /// The primary the sentinels monitor as `master`, found through the
    /// sentinels at `sentinels` (asked in this order). The data nodes are
    /// reached without credentials, on database 0, without TLS, with the
    /// timeouts of [`Db::connect`](crate::Db::connect).
    pub fn new<S: AsRef<str>>(master: &str, sentinels: impl IntoIterator<Item = S>) -> Self {
        SentinelConfig {
            master: master.to_string(),
            sentinels: sentinels
                .into_iter()
                .map(|s| s.as_ref().trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            node_user: None,
            node_password: None,
            db: 0,
            node_tls: false,
            #[cfg(feature = "tls")]
            node_certificates: None,
            #[cfg(feature = "tls")]
            sentinel_certificates: None,
            connect: super::DEFAULT_CONNECTION_TIMEOUT,
            response: super::DEFAULT_RESPONSE_TIMEOUT,
            check_every: DEFAULT_CHECK_EVERY,
            heartbeat: DEFAULT_HEARTBEAT,
        }
    }

    /// Logs in to the data nodes as ACL user `user` (`None`: the `default`
    /// user, for `requirepass`) with `password`. Refused credentials give
    /// [`Error::Auth`] at connect time.
    pub fn node_credentials(mut self, user: Option<&str>, password: &str) -> Self {
        self.node_user = user.map(str::to_string);
        self.node_password = Some(password.to_string());
        self
    }

    /// Selects database `db` on the data nodes (default 0).
    pub fn database(mut self, db: i64) -> Self {
        self.db = db;
        self
    }

    /// The connection and response timeouts of the data nodes and of the
    /// sentinels (default 2 s and 5 s, as [`Db::connect`](crate::Db::connect)).
    pub fn timeouts(mut self, connect: Duration, response: Duration) -> Self {
        self.connect = connect;
        self.response = response;
        self
    }

    /// How often the `Db` asks the sentinels where the primary is while
    /// nothing went wrong (default 1 s): the fallback for a failover
    /// announcement (`+switch-master`) it did not hear, its subscription
    /// to a sentinel being down. A lost primary or a `READONLY` refusal
    /// has it ask at once anyway.
    pub fn check_every(mut self, every: Duration) -> Self {
        self.check_every = every;
        self
    }

    /// How long a subscribed connection may stay silent before the `Db`
    /// sends it PING (default 1 s): its subscriptions to the sentinels'
    /// `+switch-master` and each [`Subscriber`](crate::Subscriber)'s
    /// connection to the primary. A PING not answered within the response
    /// timeout ([`timeouts`](Self::timeouts)) counts as a lost connection:
    /// the `Db` subscribes to that sentinel again, the subscriber on the
    /// current primary. So a sentinel or primary that stops answering
    /// without closing the connection (a half-open TCP connection: a host
    /// gone, a stopped process) is noticed within `every` plus the
    /// response timeout.
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every;
        self
    }

    /// The heartbeat of the subscribed connections.
    fn subscribed_heartbeat(&self) -> Heartbeat {
        Heartbeat {
            every: self.heartbeat,
            patience: self.response,
        }
    }

    /// The master name.
    pub fn master(&self) -> &str {
        &self.master
    }
}

#[cfg(feature = "tls")]
impl SentinelConfig {
    /// Reaches the data nodes over TLS, trusting the system's root
    /// certificates, or with `certificates` (a private CA, a client
    /// certificate) as [`Db::connect_with_tls`](crate::Db::connect_with_tls)
    /// takes them.
    pub fn node_tls(mut self, certificates: Option<redis::TlsCertificates>) -> Self {
        self.node_tls = true;
        self.node_certificates = certificates;
        self
    }

    /// The TLS material for `rediss://` sentinel URLs (a private CA, a
    /// client certificate), instead of the system's root certificates.
    pub fn sentinel_tls(mut self, certificates: redis::TlsCertificates) -> Self {
        self.sentinel_certificates = Some(certificates);
        self
    }
}

/// A primary found through the sentinels.
struct Primary {
    addr: Addr,
    backend: ServerBackend,
    /// Its name and version, as its HELLO gave them.
    server: ServerInfo,
}

/// The backend's state, shared with its task.
struct Inner {
    config: SentinelConfig,
    sentinels: Vec<redis::Client>,
    primary: RwLock<Arc<Primary>>,
    /// Wakes the task: a request found the primary gone or demoted.
    lost: Arc<Notify>,
    /// The current primary is known gone or demoted: requests fail at
    /// once, without being sent, until the task finds a primary (rather
    /// than each wait for a connection to a dead node).
    missing: AtomicBool,
    /// Called after each switch of primary (the near cache empties).
    on_switch: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
    /// Counts the switches of primary: subscribers follow it.
    switches: watch::Sender<u64>,
}

/// The primary of a Sentinel-managed replica set behind a `Db`.
pub(crate) struct SentinelBackend {
    inner: Arc<Inner>,
}

impl SentinelBackend {
    /// Asks the sentinels for the primary, connects to it, and starts the
    /// task that follows failovers.
    pub(crate) async fn connect(config: SentinelConfig) -> Result<Self> {
        if config.sentinels.is_empty() {
            return Err(Error::Config(
                "connect_sentinel needs at least one sentinel URL".to_string(),
            ));
        }
        let sentinels = config
            .sentinels
            .iter()
            .map(|url| sentinel_client(&config, url))
            .collect::<Result<Vec<_>>>()?;
        // Listening first: a failover announced while the primary is
        // being connected to is heard.
        let (heard, announced) = mpsc::unbounded_channel();
        announce::listen(&config, &sentinels, &heard);
        let mut kept = None;
        let addr = ask::primary_addr(&config, &sentinels, &mut kept)
            .await
            .map_err(|why| no_primary(&config, why))?;
        let primary = connect_primary(&config, addr).await?;
        let lost = Arc::new(Notify::new());
        let inner = Arc::new(Inner {
            config,
            sentinels,
            primary: RwLock::new(Arc::new(primary)),
            lost: Arc::clone(&lost),
            missing: AtomicBool::new(false),
            on_switch: Mutex::new(Vec::new()),
            switches: watch::Sender::new(0),
        });
        tokio::spawn(follow(Arc::downgrade(&inner), lost, announced, kept));
        Ok(SentinelBackend { inner })
    }

    /// The server the current primary is.
    pub(crate) fn primary_server(&self) -> ServerInfo {
        self.inner.current().server
    }
}

impl Drop for SentinelBackend {
    /// Wakes the task, which ends (and with it the subscriptions to the
    /// sentinels) now rather than at its next question.
    fn drop(&mut self) {
        self.inner.lost.notify_one();
    }
}

/// The client of one sentinel.
fn sentinel_client(config: &SentinelConfig, url: &str) -> Result<redis::Client> {
    #[cfg(feature = "tls")]
    if let Some(certificates) = &config.sentinel_certificates {
        super::url::check_features(url)?;
        super::url::install_crypto_provider();
        return redis::Client::build_with_tls(url, certificates.clone())
            .map_err(|e| Error::Config(format!("bad sentinel URL or TLS certificates: {e}")));
    }
    let _ = config;
    super::url::open_client(url)
}

/// The error of a connect that found no primary.
fn no_primary(config: &SentinelConfig, why: NoPrimary) -> Error {
    match why {
        NoPrimary::Unknown => Error::Config(format!(
            "no sentinel knows a master named {:?} (check the name against `sentinel monitor` \
             in the sentinels' configuration)",
            config.master
        )),
        NoPrimary::Unreachable(err) => err,
    }
}

/// Connects to the node at `addr` once it says it is a master, and asks
/// it its name and version.
async fn connect_primary(config: &SentinelConfig, addr: Addr) -> Result<Primary> {
    let client = ask::node_client(config, &addr)?;
    if !ask::is_master(&client, config.connect, config.response).await? {
        return Err(Error::Unavailable {
            source: redis::make_extension_error(
                "MASTERDOWN".to_string(),
                Some(format!(
                    "the sentinels name {addr} as the primary of {:?}, but it says it is a \
                     replica (a failover is under way)",
                    config.master
                )),
            ),
        });
    }
    let backend = ServerBackend::connect(client, config.connect, config.response).await?;
    let sent = &backend;
    let server = ServerInfo::ask(|cmd| async move { sent.send(&cmd).await }).await?;
    Ok(Primary {
        addr,
        backend,
        server,
    })
}

/// The backend's task: asks the sentinels at once when one announces a
/// switch (that one first), every [`SentinelConfig::check_every`], or at
/// once when a request lost the primary, and switches to the primary they
/// name. Ends once the backend is gone.
async fn follow(
    inner: Weak<Inner>,
    lost_signal: Arc<Notify>,
    mut announced: mpsc::UnboundedReceiver<usize>,
    mut kept: ask::Kept,
) {
    let check_every = match inner.upgrade() {
        Some(inner) => inner.config.check_every,
        None => return,
    };
    let mut lost = false;
    let mut pause = FIRST_PAUSE;
    loop {
        let wait = if lost { pause } else { check_every };
        let mut announcer = None;
        tokio::select! {
            () = lost_signal.notified() => lost = true,
            Some(sentinel) = announced.recv() => announcer = Some(sentinel),
            () = tokio::time::sleep(wait) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        if let Some(sentinel) = announcer {
            // The sentinel that announced the switch knows the new
            // primary; another may not have heard of it yet.
            let client = &inner.sentinels[sentinel];
            kept = ask::open(client, inner.config.connect, inner.config.response)
                .await
                .ok();
        }
        match inner.settle(lost, &mut kept).await {
            Ok(()) => {
                lost = false;
                pause = FIRST_PAUSE;
            }
            Err(err) => {
                tracing::debug!(target: "redmodel::sentinel", error = %err, "no primary yet");
                lost = true;
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }
}

impl Inner {
    fn current(&self) -> Arc<Primary> {
        Arc::clone(&self.primary.read())
    }

    /// Asks the sentinels for the primary (on the connection `kept` from
    /// the last question, if it still answers) and switches to it if it is
    /// another node; when the current one was `lost`, checks that it
    /// still says `master`. An error: no primary to use yet.
    async fn settle(&self, lost: bool, kept: &mut ask::Kept) -> Result<()> {
        let named = ask::primary_addr(&self.config, &self.sentinels, kept)
            .await
            .map_err(|why| no_primary(&self.config, why));
        let current = self.current();
        let addr = match named {
            Ok(addr) if addr != current.addr => addr,
            named if !lost => return named.map(drop),
            // The same node, or no sentinel answers: the node may be back
            // (its connections reconnect by themselves), or not yet
            // demoted in the sentinels' eyes. Sentinels that are down
            // must not keep a primary that answers from being used.
            named => {
                let client = ask::node_client(&self.config, &current.addr)?;
                if ask::is_master(&client, self.config.connect, self.config.response).await? {
                    self.missing.store(false, Ordering::Relaxed);
                    return Ok(());
                }
                named?;
                return Err(Error::Config(format!(
                    "{} says it is a replica",
                    current.addr
                )));
            }
        };
        let primary = connect_primary(&self.config, addr).await?;
        tracing::info!(
            target: "redmodel::sentinel",
            from = %current.addr,
            to = %primary.addr,
            server = %primary.server,
            master = %self.config.master,
            "the primary changed"
        );
        *self.primary.write() = Arc::new(primary);
        self.missing.store(false, Ordering::Relaxed);
        for hook in self.on_switch.lock().iter() {
            hook();
        }
        self.switches.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Marks `primary` lost, if it is still the current one (a request
    /// that failed on an older one says nothing of the new), and wakes
    /// the task.
    fn lose(&self, primary: &Arc<Primary>) {
        if Arc::ptr_eq(&self.primary.read(), primary) {
            self.missing.store(true, Ordering::Relaxed);
            self.lost.notify_one();
        }
    }

    /// The refusal of a request made while the primary is missing:
    /// nothing was sent.
    fn refuse_while_missing(&self) -> Option<redis::RedisError> {
        self.missing.load(Ordering::Relaxed).then(|| {
            redis::make_extension_error(
                "MASTERDOWN".to_string(),
                Some(format!(
                    "the primary of {:?} was lost and the sentinels have not named one that \
                     answers yet: nothing was sent",
                    self.config.master
                )),
            )
        })
    }

    /// A request's outcome on `primary`: a lost connection marks it lost
    /// and becomes a transient refusal; a replica's `READONLY` marks it
    /// lost too; a timeout has the task check it.
    fn judge<T>(
        &self,
        primary: &Arc<Primary>,
        outcome: RedisResult<T>,
        says_replica: impl Fn(&T) -> bool,
    ) -> RedisResult<T> {
        match outcome {
            Err(err) if is_lost(&err) => {
                self.lose(primary);
                Err(self.switching(primary, &err))
            }
            // A slow reply is not yet a lost primary (the node may only be
            // busy): the task checks, requests go on meanwhile.
            Err(err) if err.is_timeout() => {
                if Arc::ptr_eq(&self.primary.read(), primary) {
                    self.lost.notify_one();
                }
                Err(err)
            }
            Err(err) => {
                if refused_as_replica(&err) {
                    self.lose(primary);
                }
                Err(err)
            }
            Ok(reply) => {
                if says_replica(&reply) {
                    self.lose(primary);
                }
                Ok(reply)
            }
        }
    }

    /// The error a request in flight gets when the primary is lost:
    /// MASTERDOWN, one of the passing states ([`Error::Unavailable`]).
    fn switching(&self, primary: &Primary, err: &redis::RedisError) -> redis::RedisError {
        redis::make_extension_error(
            "MASTERDOWN".to_string(),
            Some(format!(
                "the connection to {}, the primary of {:?}, was lost ({err}): the Db asks the \
                 sentinels for the current primary; the request may or may not have run",
                primary.addr, self.config.master
            )),
        )
    }
}

/// Whether `err` says the node cannot be reached any more (a timeout
/// says it is slow, which it may be for other reasons).
fn is_lost(err: &redis::RedisError) -> bool {
    !err.is_timeout()
        && (err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal())
}

/// Whether `err` is a replica's `READONLY` refusal, alone or inside an
/// aborted transaction or a pipeline.
fn refused_as_replica(err: &redis::RedisError) -> bool {
    err.code() == Some("READONLY")
        || err
            .clone()
            .into_server_errors()
            .is_some_and(|errors| errors.iter().any(|(_, e)| e.code() == "READONLY"))
}

/// Whether a reply is (or holds) a replica's `READONLY` refusal.
fn has_readonly(reply: &Value) -> bool {
    match reply {
        Value::ServerError(err) => err.code() == "READONLY",
        Value::Array(items) => items.iter().any(has_readonly),
        _ => false,
    }
}

impl Backend for SentinelBackend {
    fn name(&self) -> &'static str {
        "sentinel"
    }

    fn send<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        if let Some(err) = self.inner.refuse_while_missing() {
            return Box::pin(std::future::ready(Err(err)));
        }
        let primary = self.inner.current();
        Box::pin(async move {
            let outcome = primary.backend.send(cmd).await;
            self.inner.judge(&primary, outcome, has_readonly)
        })
    }

    fn send_pipeline<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        if let Some(err) = self.inner.refuse_while_missing() {
            return Box::pin(std::future::ready(Err(err)));
        }
        let primary = self.inner.current();
        Box::pin(async move {
            let outcome = primary.backend.send_pipeline(pipeline, offset, count).await;
            self.inner.judge(&primary, outcome, |replies| {
                replies.iter().any(has_readonly)
            })
        })
    }

    fn db_number(&self) -> i64 {
        self.inner.config.db
    }

    fn exclusive(&self) -> BoxFuture<'_, Result<Box<dyn Link>>> {
        if let Some(source) = self.inner.refuse_while_missing() {
            return Box::pin(std::future::ready(Err(Error::Unavailable { source })));
        }
        let primary = self.inner.current();
        Box::pin(async move {
            match primary.backend.exclusive().await {
                Ok(link) => Ok(Box::new(Watched {
                    link,
                    inner: Arc::clone(&self.inner),
                    primary,
                }) as Box<dyn Link>),
                Err(Error::Connection { source }) => {
                    self.inner.lose(&primary);
                    Err(Error::Unavailable {
                        source: self.inner.switching(&primary, &source),
                    })
                }
                Err(err) => Err(err),
            }
        })
    }

    fn subscriber(&self) -> Opening<'_> {
        if let Some(source) = self.inner.refuse_while_missing() {
            return Box::pin(std::future::ready(Err(Error::Unavailable { source })));
        }
        let primary = self.inner.current();
        // A primary gone silent would keep the opening waiting forever.
        let patience = self.inner.config.connect + self.inner.config.response;
        Box::pin(async move {
            tokio::time::timeout(patience, primary.backend.subscriber())
                .await
                .map_err(|_| pubsub::silent("connection"))?
        })
    }

    fn follow(&self) -> Option<Follow> {
        Some(Follow {
            switches: self.inner.switches.subscribe(),
            heartbeat: self.inner.config.subscribed_heartbeat(),
        })
    }

    fn server(&self) -> Option<ServerInfo> {
        Some(self.inner.current().server)
    }

    fn tracking_nodes(&self) -> BoxFuture<'_, Result<Vec<redis::ConnectionInfo>>> {
        let primary = self.inner.current();
        Box::pin(async move { primary.backend.tracking_nodes().await })
    }

    fn on_switch(&self, hook: Box<dyn Fn() + Send + Sync>) {
        self.inner.on_switch.lock().push(hook);
    }
}

/// An exclusive link to one primary, whose failures the backend judges as
/// it judges the shared connection's.
struct Watched {
    link: Box<dyn Link>,
    inner: Arc<Inner>,
    /// The primary the link is on (kept alive while it is lent).
    primary: Arc<Primary>,
}

impl ConnectionLike for Watched {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let outcome = self.link.req_packed_command(cmd).await;
            self.inner.judge(&self.primary, outcome, has_readonly)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let outcome = self.link.req_packed_commands(pipeline, offset, count).await;
            self.inner.judge(&self.primary, outcome, |replies| {
                replies.iter().any(has_readonly)
            })
        })
    }

    fn get_db(&self) -> i64 {
        self.link.get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(resp: &[u8]) -> Value {
        match redis::parse_redis_value(resp) {
            Ok(value) => value,
            Err(e) => panic!("bad RESP in the test: {e}"),
        }
    }

    #[test]
    fn a_readonly_refusal_is_seen_alone_and_among_replies() {
        let readonly = reply(b"-READONLY You can't write against a read only replica.\r\n");
        assert!(has_readonly(&readonly));
        assert!(has_readonly(&Value::Array(vec![Value::Okay, readonly])));
        let other = reply(b"-WRONGTYPE Operation against a key\r\n");
        assert!(!has_readonly(&other));
        assert!(!has_readonly(&Value::Array(vec![Value::Okay, other])));
        let Value::ServerError(err) =
            reply(b"-READONLY You can't write against a read only replica.\r\n")
        else {
            panic!("an error reply");
        };
        assert!(refused_as_replica(&redis::RedisError::from(err)));
    }

    #[test]
    fn a_lost_connection_is_told_from_a_refusal_and_a_timeout_and_masterdown_is_transient() {
        let dropped =
            redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(is_lost(&dropped));
        let refused = redis::RedisError::from((redis::ErrorKind::Client, "refused"));
        assert!(!is_lost(&refused));
        let slow = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(!is_lost(&slow));
        let switching = redis::make_extension_error("MASTERDOWN".to_string(), None);
        assert!(matches!(Error::from(switching), Error::Unavailable { .. }));
    }

    #[test]
    fn the_data_nodes_get_the_configured_credentials_and_database() {
        let config = SentinelConfig::new("m", ["redis://127.0.0.1:26379"])
            .node_credentials(Some("app"), "secret")
            .database(3);
        let addr = Addr {
            host: "10.0.0.7".to_string(),
            port: 6380,
        };
        let client = ask::node_client(&config, &addr).expect("a client");
        let info = client.get_connection_info();
        assert_eq!(info.addr().to_string(), "10.0.0.7:6380");
        let settings = info.redis_settings();
        assert_eq!(
            (settings.username(), settings.password(), settings.db()),
            (Some("app"), Some("secret"), 3)
        );
    }
}
