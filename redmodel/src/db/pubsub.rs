//! Pub/Sub on every backend: [`Db::publish`] and [`Subscriber`].
//!
//! A subscriber needs a connection of its own: once it subscribes, Redis
//! sends it messages and accepts nothing but (un)subscriptions and PING
//! on it. On a server that is redis-rs's RESP2 `PubSub` connection; on a
//! cluster one to a node (a message published on any node of a cluster
//! reaches the subscribers of every node); on the memory engine the
//! engine's own in-process subscription.
//!
//! Pub/Sub is fire-and-forget, as in Redis: a message published while no
//! one listens, or while a subscriber's connection is down, is lost. A
//! subscriber whose connection drops sees the end of its messages
//! ([`Subscriber::next_message`] returns `None`); make a new one. So does
//! one whose server went silent without closing the connection (a
//! half-open TCP connection): after a silence as long as the `Db`'s
//! response timeout the connection is sent PING, and no answer within
//! that timeout again ends the subscriber ([`heartbeat`]).
//!
//! Through Sentinel a subscriber follows the primary instead: it keeps
//! the channels and patterns it was asked for, and when its connection
//! drops or the `Db` switches to another primary it subscribes to them
//! again on the current primary, which [`Subscriber::next_event`] reports
//! as [`SubscriberEvent::Resubscribed`] (the gap in which messages were
//! lost). It also notices a primary that went silent without closing the
//! connection ([`heartbeat`]), and subscribes again then too.

mod heartbeat;

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::StreamExt;
use redis::ToRedisArgs;
use tokio::sync::watch;

use super::BoxFuture;
use crate::command::cmd;
use crate::error::{Error, Result};
use crate::Db;
pub(crate) use heartbeat::Heartbeat;

/// The first pause before a following subscriber tries the primary
/// again; each next one doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(25);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// One message received by a [`Subscriber`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The channel it was published on.
    pub channel: String,
    /// The pattern it matched, for a pattern subscription.
    pub pattern: Option<String>,
    /// What was published.
    pub payload: Vec<u8>,
}

impl Message {
    /// The payload as text (lossy for bytes that are not UTF-8).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.payload)
    }
}

/// What [`Subscriber::next_event`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubscriberEvent {
    /// A message on a channel or pattern subscribed to.
    Message(Message),
    /// Through Sentinel: the subscriber's connection was lost or the `Db`
    /// switched to another primary, and the subscriber subscribed to its
    /// channels and patterns again on the current primary. What was
    /// published in between is lost.
    Resubscribed,
}

/// The connection a subscriber holds, per kind of backend.
pub(crate) enum Link {
    /// A RESP2 Pub/Sub connection to a server or a cluster node.
    Redis(redis::aio::PubSub),
    /// The memory engine's in-process subscription.
    Memory(redmodel_memory::PubSub),
}

impl Link {
    /// The next message, or `None` once the connection is gone (or,
    /// with a `heartbeat`, has gone silent).
    async fn next(&mut self, heartbeat: Option<&Heartbeat>) -> Option<Message> {
        match self {
            Link::Redis(p) => {
                let msg = match heartbeat {
                    Some(heartbeat) => heartbeat.next(p).await?,
                    None => p.on_message().next().await?,
                };
                Some(Message {
                    channel: msg.get_channel_name().to_string(),
                    pattern: if msg.from_pattern() {
                        msg.get_pattern::<String>().ok()
                    } else {
                        None
                    },
                    payload: msg.get_payload_bytes().to_vec(),
                })
            }
            Link::Memory(p) => {
                let msg = p.recv().await?;
                Some(Message {
                    channel: String::from_utf8_lossy(&msg.channel).into_owned(),
                    pattern: msg
                        .pattern
                        .map(|p| String::from_utf8_lossy(&p).into_owned()),
                    payload: msg.payload,
                })
            }
        }
    }

    /// One change of the subscriptions.
    async fn change(&mut self, change: Change, names: &[Vec<u8>]) -> Result<()> {
        match self {
            Link::Redis(p) => match change {
                Change::Subscribe => p.subscribe(names).await?,
                Change::PSubscribe => p.psubscribe(names).await?,
                Change::Unsubscribe => p.unsubscribe(names).await?,
                Change::PUnsubscribe => p.punsubscribe(names).await?,
            },
            Link::Memory(p) => {
                for name in names {
                    match change {
                        Change::Subscribe => p.subscribe(name.clone()),
                        Change::PSubscribe => p.psubscribe(name.clone()),
                        Change::Unsubscribe => p.unsubscribe(name.clone()),
                        Change::PUnsubscribe => p.punsubscribe(name.clone()),
                    };
                }
            }
        }
        Ok(())
    }
}

/// What [`Subscriber::change`] does.
#[derive(Clone, Copy)]
enum Change {
    Subscribe,
    PSubscribe,
    Unsubscribe,
    PUnsubscribe,
}

/// A subscription of its own to channels and patterns
/// ([`Db::subscriber`]): subscribe, then read the messages in order.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redmodel::Error> {
/// let db = redmodel::Db::memory();
/// let mut sub = db.subscriber().await?;
/// sub.subscribe("news").await?;
/// sub.psubscribe("alerts:*").await?;
/// assert_eq!(db.publish("news", "hello").await?, 1);
/// db.publish("alerts:fire", "run").await?;
/// let first = sub.next_message().await.expect("a message");
/// assert_eq!((first.channel.as_str(), first.text().as_ref()), ("news", "hello"));
/// let second = sub.next_message().await.expect("a message");
/// assert_eq!(second.pattern.as_deref(), Some("alerts:*"));
/// # Ok(()) }
/// ```
pub struct Subscriber {
    /// The connection; `None` once lost (a following subscriber then
    /// opens another).
    link: Option<Link>,
    /// When to PING the connection, and how long its answers (to PING,
    /// and to a change of the subscriptions) may take: on every backend
    /// but the memory engine.
    heartbeat: Option<Heartbeat>,
    /// Through Sentinel: what it takes to follow the primary.
    following: Option<Following>,
}

/// What a subscriber on a backend that switches nodes (Sentinel) keeps
/// to subscribe again on the next one.
struct Following {
    db: Db,
    /// Changes at each switch of node.
    switches: watch::Receiver<u64>,
    channels: BTreeSet<Vec<u8>>,
    patterns: BTreeSet<Vec<u8>>,
}

impl Following {
    /// Records a change, to be made again on the next node.
    fn record(&mut self, change: Change, names: &[Vec<u8>]) {
        let (set, add) = match change {
            Change::Subscribe => (&mut self.channels, true),
            Change::PSubscribe => (&mut self.patterns, true),
            Change::Unsubscribe => (&mut self.channels, false),
            Change::PUnsubscribe => (&mut self.patterns, false),
        };
        match (add, names.is_empty()) {
            (true, _) => set.extend(names.iter().cloned()),
            // UNSUBSCRIBE without a name: every one.
            (false, true) => set.clear(),
            (false, false) => {
                for name in names {
                    set.remove(name);
                }
            }
        }
    }

    /// A connection to the current primary, subscribed to every channel
    /// and pattern recorded: tried again (sooner at a switch) until it
    /// opens; `None` after a refusal of the subscriber's own settings
    /// (credentials, permissions, TLS), which no retry cures and which
    /// ends the subscriber. Anything else may be the failover's passing
    /// state (a node that closes, refuses or errs while it is demoted).
    async fn reopen(&mut self, patience: Duration) -> Option<Link> {
        let mut pause = FIRST_PAUSE;
        loop {
            self.switches.borrow_and_update();
            match self.open(patience).await {
                Ok(link) => return Some(link),
                Err(
                    err @ (Error::Auth { .. }
                    | Error::NoPermission { .. }
                    | Error::Tls { .. }
                    | Error::Config(_)),
                ) => {
                    tracing::warn!(target: "redmodel::pubsub", error = %err, "the subscriber cannot subscribe again: it ends");
                    return None;
                }
                Err(err) => {
                    tracing::debug!(target: "redmodel::pubsub", error = %err, "no primary to subscribe on yet");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                _ = self.switches.changed() => {}
            }
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// One attempt of [`reopen`](Self::reopen); a subscription the node
    /// does not confirm within `patience` (the heartbeat's) fails it (the
    /// backend bounds the opening itself).
    async fn open(&self, patience: Duration) -> Result<Link> {
        let mut link = self.db.backend().subscriber().await?;
        let channels: Vec<Vec<u8>> = self.channels.iter().cloned().collect();
        let patterns: Vec<Vec<u8>> = self.patterns.iter().cloned().collect();
        if !channels.is_empty() {
            let done = tokio::time::timeout(patience, link.change(Change::Subscribe, &channels));
            done.await.map_err(|_| silent("subscribe"))??;
        }
        if !patterns.is_empty() {
            let done = tokio::time::timeout(patience, link.change(Change::PSubscribe, &patterns));
            done.await.map_err(|_| silent("subscribe"))??;
        }
        Ok(link)
    }
}

/// The error of a change of the subscriptions of a subscriber whose
/// connection is gone (on one server or a cluster, where it ends the
/// subscriber).
fn gone() -> Error {
    Error::Unavailable {
        source: redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the subscriber's connection is gone (closed, or silent past its heartbeat): make a new subscriber",
        )),
    }
}

/// The error of a step on a subscriber's connection that got no answer in
/// time: the node may be gone without closing it.
pub(crate) fn silent(what: &str) -> Error {
    Error::Unavailable {
        source: redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("the node did not answer the subscriber's {what} in time"),
        )),
    }
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber").finish_non_exhaustive()
    }
}

impl Subscriber {
    /// Subscribes to one channel or several (`"a"`, `["a", "b"]`).
    pub async fn subscribe(&mut self, channels: impl ToRedisArgs) -> Result<()> {
        self.change(Change::Subscribe, channels.to_redis_args())
            .await
    }

    /// Subscribes to one glob pattern or several (`"news:*"`).
    pub async fn psubscribe(&mut self, patterns: impl ToRedisArgs) -> Result<()> {
        self.change(Change::PSubscribe, patterns.to_redis_args())
            .await
    }

    /// Ends the subscription to these channels.
    pub async fn unsubscribe(&mut self, channels: impl ToRedisArgs) -> Result<()> {
        self.change(Change::Unsubscribe, channels.to_redis_args())
            .await
    }

    /// Ends the subscription to these patterns.
    pub async fn punsubscribe(&mut self, patterns: impl ToRedisArgs) -> Result<()> {
        self.change(Change::PUnsubscribe, patterns.to_redis_args())
            .await
    }

    /// One change of the subscriptions. A following subscriber records it
    /// first: if its connection is lost meanwhile, the change is made with
    /// the others on the next one.
    async fn change(&mut self, change: Change, names: Vec<Vec<u8>>) -> Result<()> {
        if let Some(following) = &mut self.following {
            following.record(change, &names);
        }
        let Some(link) = &mut self.link else {
            return match self.following {
                // Made on the next connection.
                Some(_) => Ok(()),
                None => Err(gone()),
            };
        };
        // A silent node would keep the change waiting forever.
        let done = match self.heartbeat {
            Some(heartbeat) => {
                tokio::time::timeout(heartbeat.patience, link.change(change, &names))
                    .await
                    .ok()
            }
            None => Some(link.change(change, &names).await),
        };
        match (done, self.following.is_some()) {
            (Some(Ok(())), _) => Ok(()),
            (Some(Err(err)), false) => Err(err),
            (Some(Err(err)), true) if !err.is_transient() => Err(err),
            // Following: the connection counts as lost, and the change is
            // made with the others on the next one.
            (_, true) => {
                self.link = None;
                Ok(())
            }
            (None, false) => {
                self.link = None;
                Err(silent("subscribe"))
            }
        }
    }

    /// The next message, waiting for one; `None` once the connection is
    /// gone: closed, or on a server or a cluster silent past its
    /// heartbeat (a PING sent after a silence as long as the `Db`'s
    /// response timeout, unanswered within that timeout again). Make a
    /// new subscriber: what was published meanwhile is lost.
    /// Through Sentinel the subscriber follows the primary and this skips
    /// the gaps; [`next_event`](Self::next_event) reports them.
    pub async fn next_message(&mut self) -> Option<Message> {
        loop {
            if let SubscriberEvent::Message(message) = self.next_event().await? {
                return Some(message);
            }
        }
    }

    /// The next message, or through Sentinel the news that the subscriber
    /// subscribed again on the current primary after a lost connection or
    /// a failover ([`SubscriberEvent::Resubscribed`]: messages published
    /// in between are lost). `None` once the connection is gone for good:
    /// on other backends when it drops, through Sentinel when the primary
    /// refuses the subscriber for a reason a retry does not cure (refused
    /// credentials).
    pub async fn next_event(&mut self) -> Option<SubscriberEvent> {
        if let Some(link) = &mut self.link {
            let heartbeat = self.heartbeat.as_ref();
            let Some(following) = &mut self.following else {
                let message = link.next(heartbeat).await;
                if message.is_none() {
                    // Closed or silent: the end, now and on every later call.
                    self.link = None;
                }
                return message.map(SubscriberEvent::Message);
            };
            // The messages already received come first; then the end of
            // the connection (closed, or silent past the heartbeat) or a
            // switch of primary.
            tokio::select! {
                biased;
                message = link.next(heartbeat) => {
                    if let Some(message) = message {
                        return Some(SubscriberEvent::Message(message));
                    }
                }
                _ = following.switches.changed() => {}
            }
        }
        self.link = None;
        let following = self.following.as_mut()?;
        let patience = self.heartbeat?.patience;
        self.link = Some(following.reopen(patience).await?);
        Some(SubscriberEvent::Resubscribed)
    }
}

impl Db {
    /// Publishes `payload` on `channel` (PUBLISH) and returns how many
    /// subscribers received it: on a cluster, those of the node it was
    /// sent to (the others get it too, through the cluster bus).
    pub async fn publish(&self, channel: &str, payload: impl ToRedisArgs) -> Result<usize> {
        self.query(cmd("PUBLISH").arg(channel).arg(payload)).await
    }

    /// A new subscriber, on a connection of its own (see [`Subscriber`]).
    pub async fn subscriber(&self) -> Result<Subscriber> {
        let backend = self.backend();
        // Watched before the connection opens: a switch while it opens
        // has the subscriber move at once.
        let follow = backend.follow();
        let link = backend.subscriber().await?;
        let heartbeat = follow
            .as_ref()
            .map(|f| f.heartbeat)
            .or_else(|| backend.heartbeat());
        Ok(Subscriber {
            link: Some(link),
            heartbeat,
            following: follow.map(|follow| Following {
                db: self.clone(),
                switches: follow.switches,
                channels: BTreeSet::new(),
                patterns: BTreeSet::new(),
            }),
        })
    }
}

/// What a backend returns from [`Backend::subscriber`](super::backend::Backend::subscriber).
pub(crate) type Opening<'a> = BoxFuture<'a, Result<Link>>;

/// What a subscriber follows on a backend that switches nodes (Sentinel):
/// [`Backend::follow`](super::backend::Backend::follow).
pub(crate) struct Follow {
    /// Changes at each switch of node, once requests go to the new one.
    pub(crate) switches: watch::Receiver<u64>,
    /// How a subscriber notices a node that went silent.
    pub(crate) heartbeat: Heartbeat,
}
