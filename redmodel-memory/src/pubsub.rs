//! Pub/Sub: who listens to which channel, and the delivery of messages.
//!
//! The [`Registry`] lives in the store, behind the engine's lock, so that
//! PUBLISH (and a keyspace notification) is one more command: it finds the
//! subscribers of the channel and of the matching patterns, and hands each
//! a message through its [`Sink`] without waiting for anyone.
//!
//! A subscriber is a RESP connection (SUBSCRIBE on the wire) or an
//! in-process [`PubSub`] handle; both read their messages from an
//! [`Inbox`]. The channel between them is tokio's *unbounded* one: a
//! bounded channel would make PUBLISH wait for a slow reader while it holds
//! the store's lock, stalling every client (and deadlocking if that reader
//! needs the lock to make room). Memory is bounded the way Redis bounds it
//! instead: each sink counts its undelivered bytes, and a subscriber that
//! falls behind by more than the hard limit of `client-output-buffer-limit
//! pubsub` (32 MB by default) is dropped (a RESP connection is closed, a
//! [`PubSub`] handle ends). Redis's soft limit (8 MB for 60 s) is not
//! applied.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use indexmap::{IndexMap, IndexSet};
use tokio::sync::mpsc;

use crate::glob::glob_match;
use crate::Engine;

/// A channel name, pattern or payload, shared by every subscriber it is
/// delivered to.
pub(crate) type Bytes = Arc<[u8]>;

/// The registry's name for a subscriber.
pub(crate) type SubscriberId = u64;

/// What is delivered to a subscriber.
#[derive(Debug, Clone)]
pub(crate) struct Push {
    pub(crate) kind: PushKind,
    pub(crate) channel: Bytes,
    pub(crate) payload: Bytes,
}

/// The kind of a delivered message, as its first word on the wire.
#[derive(Debug, Clone)]
pub(crate) enum PushKind {
    /// `message`: published on a subscribed channel.
    Message,
    /// `pmessage`: published on a channel matching this pattern.
    PMessage(Bytes),
    /// `smessage`: SPUBLISHed on a subscribed shard channel.
    SMessage,
}

impl Push {
    /// The bytes it holds, for the slow-subscriber limit.
    fn size(&self) -> usize {
        let pattern = match &self.kind {
            PushKind::PMessage(p) => p.len(),
            _ => 0,
        };
        self.channel.len() + self.payload.len() + pattern
    }
}

/// What the two ends of a sink share.
#[derive(Debug, Default)]
struct Shared {
    /// Bytes sent and not yet taken out of the inbox.
    pending: AtomicUsize,
    /// The registry dropped the subscriber for falling behind.
    dropped: AtomicBool,
}

/// The sending end of a subscriber's queue, held by the registry.
#[derive(Debug)]
pub(crate) struct Sink {
    tx: mpsc::UnboundedSender<Push>,
    shared: Arc<Shared>,
}

/// The receiving end of a subscriber's queue.
#[derive(Debug)]
pub(crate) struct Inbox {
    rx: mpsc::UnboundedReceiver<Push>,
    shared: Arc<Shared>,
}

/// A new queue for one subscriber.
pub(crate) fn queue() -> (Sink, Inbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared::default());
    (
        Sink {
            tx,
            shared: shared.clone(),
        },
        Inbox { rx, shared },
    )
}

impl Sink {
    /// Queues `push`; false if the subscriber is now over `limit` bytes
    /// behind (0: no limit) or gone.
    fn send(&self, push: Push, limit: usize) -> bool {
        let size = push.size();
        let pending = self.shared.pending.fetch_add(size, Ordering::Relaxed) + size;
        self.tx.send(push).is_ok() && (limit == 0 || pending <= limit)
    }
}

impl Inbox {
    /// The next message already queued, if any.
    pub(crate) fn try_next(&mut self) -> Option<Push> {
        let push = self.rx.try_recv().ok()?;
        self.taken(&push);
        Some(push)
    }

    /// Waits for the next message; `None` once the subscriber was dropped
    /// and everything queued before was taken.
    #[cfg(feature = "server")]
    pub(crate) async fn next(&mut self) -> Option<Push> {
        let push = self.rx.recv().await?;
        self.taken(&push);
        Some(push)
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Push>> {
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(push)) = &polled {
            self.taken(push);
        }
        polled
    }

    fn taken(&self, push: &Push) {
        self.shared
            .pending
            .fetch_sub(push.size(), Ordering::Relaxed);
    }

    /// Whether the registry dropped this subscriber for falling behind.
    #[cfg(feature = "server")]
    pub(crate) fn dropped(&self) -> bool {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

/// The three kinds of subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// SUBSCRIBE: a channel by name.
    Channel,
    /// PSUBSCRIBE: every channel matching a glob pattern.
    Pattern,
    /// SSUBSCRIBE: a shard channel by name (SPUBLISH only).
    Shard,
}

/// One subscriber: where its messages go and what it listens to, each in
/// subscription order (Redis unsubscribes its patterns in that order).
#[derive(Debug)]
struct Subscriber {
    sink: Sink,
    channels: IndexSet<Bytes>,
    patterns: IndexSet<Bytes>,
    shard_channels: IndexSet<Bytes>,
}

impl Subscriber {
    fn names(&mut self, scope: Scope) -> &mut IndexSet<Bytes> {
        match scope {
            Scope::Channel => &mut self.channels,
            Scope::Pattern => &mut self.patterns,
            Scope::Shard => &mut self.shard_channels,
        }
    }
}

/// Every subscription of an engine.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    next_id: SubscriberId,
    subscribers: HashMap<SubscriberId, Subscriber>,
    /// Channel -> its subscribers, in subscription order (the order Redis
    /// delivers in).
    channels: HashMap<Bytes, IndexSet<SubscriberId>>,
    /// Pattern -> its subscribers; patterns in first-subscription order.
    patterns: IndexMap<Bytes, IndexSet<SubscriberId>>,
    shard_channels: HashMap<Bytes, IndexSet<SubscriberId>>,
    /// How far behind a subscriber may fall, in bytes (0: no limit).
    limit: usize,
}

impl Registry {
    /// Sets the slow-subscriber limit (`client-output-buffer-limit`'s
    /// pubsub hard limit).
    pub(crate) fn set_limit(&mut self, bytes: u64) {
        self.limit = usize::try_from(bytes).unwrap_or(usize::MAX);
    }

    /// A new subscriber, with no subscription yet, delivering to `sink`.
    pub(crate) fn register(&mut self, sink: Sink) -> SubscriberId {
        self.next_id += 1;
        let id = self.next_id;
        self.subscribers.insert(
            id,
            Subscriber {
                sink,
                channels: IndexSet::new(),
                patterns: IndexSet::new(),
                shard_channels: IndexSet::new(),
            },
        );
        id
    }

    /// Forgets a subscriber and all its subscriptions (a connection that
    /// went away, a dropped handle). Its inbox then ends.
    pub(crate) fn unregister(&mut self, id: SubscriberId) {
        for scope in [Scope::Channel, Scope::Pattern, Scope::Shard] {
            for name in self.subscriptions(id, scope) {
                self.unsubscribe(id, scope, &name);
            }
        }
        self.subscribers.remove(&id);
    }

    fn index(&mut self, scope: Scope) -> &mut dyn NameIndex {
        match scope {
            Scope::Channel => &mut self.channels,
            Scope::Pattern => &mut self.patterns,
            Scope::Shard => &mut self.shard_channels,
        }
    }

    /// Subscribes `id` to `name`; false if it already was (or is unknown).
    pub(crate) fn subscribe(&mut self, id: SubscriberId, scope: Scope, name: &[u8]) -> bool {
        let Some(sub) = self.subscribers.get_mut(&id) else {
            return false;
        };
        let name: Bytes = Arc::from(name);
        if !sub.names(scope).insert(name.clone()) {
            return false;
        }
        self.index(scope).add(name, id);
        true
    }

    /// Unsubscribes `id` from `name`; false if it was not subscribed.
    pub(crate) fn unsubscribe(&mut self, id: SubscriberId, scope: Scope, name: &[u8]) -> bool {
        let Some(sub) = self.subscribers.get_mut(&id) else {
            return false;
        };
        if !sub.names(scope).shift_remove(name) {
            return false;
        }
        self.index(scope).remove(name, id);
        true
    }

    /// What `id` is subscribed to in `scope`, in subscription order.
    pub(crate) fn subscriptions(&self, id: SubscriberId, scope: Scope) -> Vec<Bytes> {
        self.subscribers.get(&id).map_or_else(Vec::new, |s| {
            let names = match scope {
                Scope::Channel => &s.channels,
                Scope::Pattern => &s.patterns,
                Scope::Shard => &s.shard_channels,
            };
            names.iter().cloned().collect()
        })
    }

    /// How many names `id` is subscribed to in `scope`.
    #[cfg(feature = "server")]
    pub(crate) fn len(&self, id: SubscriberId, scope: Scope) -> usize {
        self.subscribers.get(&id).map_or(0, |s| match scope {
            Scope::Channel => s.channels.len(),
            Scope::Pattern => s.patterns.len(),
            Scope::Shard => s.shard_channels.len(),
        })
    }

    /// The count Redis's confirmations show: channels plus patterns (for
    /// SUBSCRIBE, PSUBSCRIBE and their opposites) or shard channels.
    pub(crate) fn count(&self, id: SubscriberId, scope: Scope) -> usize {
        self.subscribers.get(&id).map_or(0, |s| match scope {
            Scope::Channel | Scope::Pattern => s.channels.len() + s.patterns.len(),
            Scope::Shard => s.shard_channels.len(),
        })
    }

    /// Whether `id` has any subscription (Redis's subscribed mode).
    #[cfg(feature = "server")]
    pub(crate) fn is_subscribed(&self, id: SubscriberId) -> bool {
        self.subscribers.get(&id).is_some_and(|s| {
            !s.channels.is_empty() || !s.patterns.is_empty() || !s.shard_channels.is_empty()
        })
    }

    /// PUBLISH: delivers to the channel's subscribers, then to those of
    /// each matching pattern; returns how many deliveries were made.
    pub(crate) fn publish(&mut self, channel: &[u8], payload: &[u8]) -> usize {
        if self.subscribers.is_empty() {
            return 0;
        }
        let channel: Bytes = Arc::from(channel);
        let payload: Bytes = Arc::from(payload);
        let mut deliveries: Vec<(SubscriberId, PushKind)> = Vec::new();
        if let Some(ids) = self.channels.get(&channel) {
            deliveries.extend(ids.iter().map(|&id| (id, PushKind::Message)));
        }
        for (pattern, ids) in &self.patterns {
            if glob_match(pattern, &channel, false) {
                let kind = PushKind::PMessage(pattern.clone());
                deliveries.extend(ids.iter().map(|&id| (id, kind.clone())));
            }
        }
        self.deliver(deliveries, &channel, &payload)
    }

    /// SPUBLISH: delivers to the shard channel's subscribers only.
    pub(crate) fn spublish(&mut self, channel: &[u8], payload: &[u8]) -> usize {
        let Some(ids) = self.shard_channels.get(channel) else {
            return 0;
        };
        let deliveries: Vec<_> = ids.iter().map(|&id| (id, PushKind::SMessage)).collect();
        self.deliver(deliveries, &Arc::from(channel), &Arc::from(payload))
    }

    fn deliver(
        &mut self,
        deliveries: Vec<(SubscriberId, PushKind)>,
        channel: &Bytes,
        payload: &Bytes,
    ) -> usize {
        let mut behind = Vec::new();
        for (id, kind) in &deliveries {
            let Some(sub) = self.subscribers.get(id) else {
                continue;
            };
            let push = Push {
                kind: kind.clone(),
                channel: channel.clone(),
                payload: payload.clone(),
            };
            if !sub.sink.send(push, self.limit) {
                behind.push(*id);
            }
        }
        for id in behind {
            if let Some(sub) = self.subscribers.get(&id) {
                sub.sink.shared.dropped.store(true, Ordering::Relaxed);
            }
            self.unregister(id);
        }
        deliveries.len()
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS: the channels with a subscriber,
    /// matching `pattern` if given.
    pub(crate) fn channel_names(&self, scope: Scope, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let index = match scope {
            Scope::Shard => &self.shard_channels,
            _ => &self.channels,
        };
        index
            .keys()
            .filter(|name| pattern.is_none_or(|p| glob_match(p, name, false)))
            .cloned()
            .collect()
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB: the subscribers of one channel.
    pub(crate) fn numsub(&self, scope: Scope, channel: &[u8]) -> usize {
        let index = match scope {
            Scope::Shard => &self.shard_channels,
            _ => &self.channels,
        };
        index.get(channel).map_or(0, IndexSet::len)
    }

    /// The channels (or shard channels) with a subscriber (INFO).
    pub(crate) fn channel_count(&self, scope: Scope) -> usize {
        match scope {
            Scope::Shard => self.shard_channels.len(),
            _ => self.channels.len(),
        }
    }

    /// How many clients are subscribed to anything (Redis 7.4's INFO
    /// `pubsub_clients`).
    pub(crate) fn subscribed_clients(&self) -> usize {
        (self.subscribers.values())
            .filter(|s| {
                !(s.channels.is_empty() && s.patterns.is_empty() && s.shard_channels.is_empty())
            })
            .count()
    }

    /// PUBSUB NUMPAT: the patterns with a subscriber.
    pub(crate) fn numpat(&self) -> usize {
        self.patterns.len()
    }
}

/// The name -> subscribers maps, hash or insertion-ordered alike.
trait NameIndex {
    fn add(&mut self, name: Bytes, id: SubscriberId);
    fn remove(&mut self, name: &[u8], id: SubscriberId);
}

impl NameIndex for HashMap<Bytes, IndexSet<SubscriberId>> {
    fn add(&mut self, name: Bytes, id: SubscriberId) {
        self.entry(name).or_default().insert(id);
    }

    fn remove(&mut self, name: &[u8], id: SubscriberId) {
        if let Some(ids) = self.get_mut(name) {
            ids.shift_remove(&id);
            // No empty entries: a channel nobody listens to costs nothing.
            if ids.is_empty() {
                self.remove(name);
            }
        }
    }
}

impl NameIndex for IndexMap<Bytes, IndexSet<SubscriberId>> {
    fn add(&mut self, name: Bytes, id: SubscriberId) {
        self.entry(name).or_default().insert(id);
    }

    fn remove(&mut self, name: &[u8], id: SubscriberId) {
        if let Some(ids) = self.get_mut(name) {
            ids.shift_remove(&id);
            if ids.is_empty() {
                self.shift_remove(name);
            }
        }
    }
}

/// A message received by a [`PubSub`] subscriber.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Message {
    /// The channel it was published on.
    pub channel: Vec<u8>,
    /// The pattern it matched, if it came through a pattern subscription
    /// (Redis's `pmessage`); `None` for a channel subscription.
    pub pattern: Option<Vec<u8>>,
    /// What was published.
    pub payload: Vec<u8>,
}

impl From<Push> for Message {
    fn from(push: Push) -> Self {
        Message {
            channel: push.channel.to_vec(),
            pattern: match push.kind {
                PushKind::PMessage(p) => Some(p.to_vec()),
                PushKind::Message | PushKind::SMessage => None,
            },
            payload: push.payload.to_vec(),
        }
    }
}

/// An in-process subscriber of an [`Engine`]'s Pub/Sub: what SUBSCRIBE and
/// PSUBSCRIBE are to a RESP client. It receives what any client PUBLISHes
/// (an in-process [`Connection`](crate::Connection), a RESP connection, or
/// the keyspace notifications), in publication order.
///
/// Made by [`Engine::pubsub`]. Receive with [`recv`](Self::recv) (async),
/// [`try_recv`](Self::try_recv), or as a [`Stream`](futures_core::Stream).
/// Dropping the handle ends all its subscriptions.
///
/// Messages wait in an unbounded queue; a subscriber that falls more than
/// `client-output-buffer-limit`'s pubsub hard limit (32 MB by default)
/// behind is dropped as Redis drops such a client: its subscriptions end
/// and, once the queued messages are read, `recv` returns `None`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use redmodel_memory::Engine;
/// let engine = Engine::new();
/// let mut news = engine.pubsub();
/// assert_eq!(news.subscribe("news"), 1);
/// assert_eq!(news.psubscribe("sport.*"), 2);
///
/// let mut conn = engine.connection();
/// assert_eq!(conn.execute(&[b"PUBLISH", b"news", b"hello"]), redis::Value::Int(1));
/// conn.execute(&[b"PUBLISH", b"sport.tennis", b"6-4"]);
///
/// let m = news.recv().await.unwrap();
/// assert_eq!((m.channel, m.pattern, m.payload), (b"news".to_vec(), None, b"hello".to_vec()));
/// let m = news.recv().await.unwrap();
/// assert_eq!(m.pattern.as_deref(), Some(&b"sport.*"[..]));
/// assert_eq!(m.payload, b"6-4");
/// # }
/// ```
#[derive(Debug)]
pub struct PubSub {
    engine: Engine,
    id: SubscriberId,
    inbox: Inbox,
}

impl PubSub {
    pub(crate) fn new(engine: Engine) -> Self {
        let (sink, inbox) = queue();
        let id = engine.shared.store.lock().pubsub.register(sink);
        PubSub { engine, id, inbox }
    }

    fn change(&self, f: impl FnOnce(&mut Registry, SubscriberId)) -> usize {
        let mut store = self.engine.shared.store.lock();
        f(&mut store.pubsub, self.id);
        store.pubsub.count(self.id, Scope::Channel)
    }

    /// Subscribes to `channel`. Returns the number of channels and
    /// patterns now subscribed to, as SUBSCRIBE's confirmation does.
    pub fn subscribe(&self, channel: impl AsRef<[u8]>) -> usize {
        self.change(|r, id| {
            r.subscribe(id, Scope::Channel, channel.as_ref());
        })
    }

    /// Subscribes to every channel matching the glob `pattern` (Redis's
    /// `*`, `?`, `[...]`, `\`). Returns the number of channels and patterns
    /// now subscribed to.
    pub fn psubscribe(&self, pattern: impl AsRef<[u8]>) -> usize {
        self.change(|r, id| {
            r.subscribe(id, Scope::Pattern, pattern.as_ref());
        })
    }

    /// Unsubscribes from `channel`. Returns the number of channels and
    /// patterns still subscribed to.
    pub fn unsubscribe(&self, channel: impl AsRef<[u8]>) -> usize {
        self.change(|r, id| {
            r.unsubscribe(id, Scope::Channel, channel.as_ref());
        })
    }

    /// Unsubscribes from the pattern `pattern`. Returns the number of
    /// channels and patterns still subscribed to.
    pub fn punsubscribe(&self, pattern: impl AsRef<[u8]>) -> usize {
        self.change(|r, id| {
            r.unsubscribe(id, Scope::Pattern, pattern.as_ref());
        })
    }

    /// Unsubscribes from every channel and pattern (messages already
    /// queued can still be received).
    pub fn unsubscribe_all(&self) {
        self.change(|r, id| {
            for scope in [Scope::Channel, Scope::Pattern] {
                for name in r.subscriptions(id, scope) {
                    r.unsubscribe(id, scope, &name);
                }
            }
        });
    }

    /// The next message, waiting for one if none is queued. `None` only
    /// if this subscriber was dropped for falling behind (see above).
    pub async fn recv(&mut self) -> Option<Message> {
        std::future::poll_fn(|cx| self.inbox.poll_next(cx))
            .await
            .map(Message::from)
    }

    /// The next message if one is queued, without waiting.
    pub fn try_recv(&mut self) -> Option<Message> {
        self.inbox.try_next().map(Message::from)
    }
}

impl futures_core::Stream for PubSub {
    type Item = Message;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        self.get_mut()
            .inbox
            .poll_next(cx)
            .map(|p| p.map(Message::from))
    }
}

impl Drop for PubSub {
    fn drop(&mut self) {
        self.engine.shared.store.lock().pubsub.unregister(self.id);
    }
}

impl Engine {
    /// A new in-process subscriber, with no subscription yet: see
    /// [`PubSub`].
    pub fn pubsub(&self) -> PubSub {
        PubSub::new(self.clone())
    }
}

#[cfg(test)]
mod tests;
