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
//! ([`Subscriber::next_message`] returns `None`); make a new one.

use futures_util::StreamExt;
use redis::ToRedisArgs;

use super::BoxFuture;
use crate::command::cmd;
use crate::error::Result;
use crate::Db;

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

/// The connection a subscriber holds, per kind of backend.
pub(crate) enum Link {
    /// A RESP2 Pub/Sub connection to a server or a cluster node.
    Redis(redis::aio::PubSub),
    /// The memory engine's in-process subscription.
    Memory(redmodel_memory::PubSub),
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
    link: Link,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber").finish_non_exhaustive()
    }
}

impl Subscriber {
    pub(crate) fn new(link: Link) -> Self {
        Subscriber { link }
    }

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

    /// One change of the subscriptions, on whichever link this is.
    async fn change(&mut self, change: Change, names: Vec<Vec<u8>>) -> Result<()> {
        match &mut self.link {
            Link::Redis(p) => match change {
                Change::Subscribe => p.subscribe(names).await?,
                Change::PSubscribe => p.psubscribe(names).await?,
                Change::Unsubscribe => p.unsubscribe(names).await?,
                Change::PUnsubscribe => p.punsubscribe(names).await?,
            },
            Link::Memory(p) => {
                for name in names {
                    match change {
                        Change::Subscribe => p.subscribe(name),
                        Change::PSubscribe => p.psubscribe(name),
                        Change::Unsubscribe => p.unsubscribe(name),
                        Change::PUnsubscribe => p.punsubscribe(name),
                    };
                }
            }
        }
        Ok(())
    }

    /// The next message, waiting for one; `None` once the connection is
    /// gone (make a new subscriber: what was published meanwhile is lost).
    pub async fn next_message(&mut self) -> Option<Message> {
        match &mut self.link {
            Link::Redis(p) => {
                let msg = p.on_message().next().await?;
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
        Ok(Subscriber::new(self.backend().subscriber().await?))
    }
}

/// What a backend returns from [`Backend::subscriber`](super::backend::Backend::subscriber).
pub(crate) type Opening<'a> = BoxFuture<'a, Result<Link>>;
