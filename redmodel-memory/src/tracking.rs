//! Client-side caching (CLIENT TRACKING), as Redis 7.0's tracking.c.
//!
//! A RESP connection that turns tracking on is told when a key it read
//! changes, so that it can drop the key from a cache of its own:
//!
//! - Default mode: every read-only command of a tracking client adds its
//!   keys to the tracking table (key -> client ids). The first change of
//!   such a key sends one invalidation to each of its clients and drops
//!   the entry (the client reads the key again to be told again). OPTIN
//!   tracks only the command after `CLIENT CACHING yes`; OPTOUT tracks
//!   every command but the one after `CLIENT CACHING no`. A script that
//!   calls a read-only command tracks the script's declared keys (Redis
//!   7.0), or that command's keys (Redis 7.2 and later).
//! - BCAST: no table; the client is told of every change of a key that
//!   starts with one of its prefixes (the empty prefix: every key). The
//!   changes are gathered per prefix and sent once per command, each
//!   prefix's keys in one message, in byte order.
//! - NOLOOP: no invalidation for what the client changes itself.
//! - REDIRECT id: the invalidations go to another connection: a RESP3 one
//!   receives them as pushes, a RESP2 one only in subscribed mode, as
//!   messages of the `__redis__:invalidate` channel. A redirection to a
//!   connection that went away is reported to a RESP3 tracking client with
//!   a `tracking-redir-broken` push, at each invalidation.
//! - FLUSHALL and FLUSHDB send every tracking client a null invalidation
//!   (everything) and empty the table.
//! - `tracking-table-max-keys`: past it, tracked keys picked at random are
//!   invalidated, before each command and at each expiry cycle.
//!
//! Every change the keyspaces see is one (commands, their calls in scripts
//! and transactions, expiry, RENAME, MOVE...): a keyspace logs the keys it
//! modifies while anything is tracked, and the store turns the log into
//! invalidations after each command (`Store::flush_invalidations`).
//!
//! The invalidations are [`Note`]s queued to the connection, which writes
//! them between its replies: those a command causes to its own client come
//! after that command's reply (after EXEC's for a transaction), as Redis
//! sends them. The in-process [`Connection`](crate::Connection) has no way
//! to receive pushes: a cache in process tracks through
//! [`Engine::invalidations`](crate::Engine::invalidations) (`feed`), a BCAST
//! tracker of its own, and in-process writes invalidate every tracker's keys
//! like any other.

// Only RESP connections turn tracking on: without the server, the store
// keeps the (empty) state and its hooks, and nothing calls the rest.
#![cfg_attr(not(feature = "server"), allow(dead_code))]

mod command;
mod feed;

pub use feed::{Invalidation, Invalidations};

use std::collections::{BTreeMap, BTreeSet};

use indexmap::{IndexMap, IndexSet};
use tokio::sync::mpsc;

use crate::keyspace::Key;

/// What the store tells a connection about tracking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Note {
    /// These keys changed (`None`: every key, FLUSHALL / FLUSHDB);
    /// `redirected` when the connection receives them for another one.
    Invalidate {
        keys: Option<Vec<Key>>,
        redirected: bool,
    },
    /// The connection's redirection target (this id) is gone.
    RedirBroken(u64),
}

/// The sending end of a connection's notes, held by the store.
pub(crate) type Sink = mpsc::UnboundedSender<Note>;
/// The receiving end, held by the connection.
pub(crate) type Inbox = mpsc::UnboundedReceiver<Note>;

/// A new queue of notes for one connection.
pub(crate) fn queue() -> (Sink, Inbox) {
    mpsc::unbounded_channel()
}

/// One connection's tracking mode (Redis's `CLIENT_TRACKING*` flags).
#[derive(Debug, Default, Clone)]
pub(crate) struct Mode {
    on: bool,
    bcast: bool,
    optin: bool,
    optout: bool,
    noloop: bool,
    /// CLIENT CACHING yes (OPTIN) or no (OPTOUT) applies to the next command.
    pub(crate) caching: bool,
    broken_redirect: bool,
    /// The connection the invalidations go to; 0 for none.
    redirect: u64,
    /// BCAST's prefixes, in byte order.
    prefixes: BTreeSet<Vec<u8>>,
}

/// A connection the store can send notes to.
#[derive(Debug)]
pub(crate) struct Peer {
    sink: Sink,
    pub(crate) mode: Mode,
}

/// The clients of one BCAST prefix and the keys changed under it since
/// the last broadcast, each with who changed it last (`None`: expiry).
#[derive(Debug, Default)]
struct Prefix {
    clients: IndexSet<u64>,
    keys: BTreeMap<Key, Option<u64>>,
}

/// The engine's tracking state, in the store.
#[derive(Debug, Default)]
pub(crate) struct Tracking {
    /// Every RESP connection, by id, in the order they came.
    pub(crate) peers: IndexMap<u64, Peer>,
    /// The tracking table: key -> the clients that read it. Keys of every
    /// database share it, as in Redis.
    pub(crate) table: IndexMap<Key, IndexSet<u64>>,
    /// Client ids in the table, all keys together.
    items: usize,
    /// BCAST's prefixes, in byte order.
    prefixes: BTreeMap<Vec<u8>, Prefix>,
    /// Connections with tracking on.
    pub(crate) clients: usize,
    /// The client whose command runs (0: none, or an in-process one).
    pub(crate) current: u64,
    /// The command line of the current client while it runs a script:
    /// a read in the script tracks the script's declared keys (7.0).
    pub(crate) caller: Option<Vec<Vec<u8>>>,
    /// How many times in a row the table was found over its limit.
    over_limit: u32,
    /// Whether the keyspaces log their changes for this module.
    pub(crate) logging: bool,
}

impl Tracking {
    /// A RESP connection arrives: it may track, or be redirected to.
    pub(crate) fn connect(&mut self, id: u64, sink: Sink) {
        self.peers.insert(
            id,
            Peer {
                sink,
                mode: Mode::default(),
            },
        );
    }

    /// A connection goes away: its tracking ends (its table entries are
    /// skipped and dropped lazily, as in Redis).
    pub(crate) fn disconnect(&mut self, id: u64) {
        self.disable(id);
        self.peers.shift_remove(&id);
    }

    /// CLIENT TRACKING off (and RESET): leaves its prefixes, clears its
    /// flags.
    pub(crate) fn disable(&mut self, id: u64) {
        let Some(peer) = self.peers.get_mut(&id) else {
            return;
        };
        let mode = std::mem::take(&mut peer.mode);
        for prefix in &mode.prefixes {
            if let Some(state) = self.prefixes.get_mut(prefix) {
                state.clients.shift_remove(&id);
                if state.clients.is_empty() {
                    self.prefixes.remove(prefix);
                }
            }
        }
        if mode.on {
            self.clients -= 1;
        }
    }

    /// INFO's `tracking_clients`.
    pub(crate) fn clients(&self) -> usize {
        self.clients
    }

    /// INFO's `tracking_total_keys`, `tracking_total_items` and
    /// `tracking_total_prefixes`.
    pub(crate) fn totals(&self) -> (usize, usize, usize) {
        (self.table.len(), self.items, self.prefixes.len())
    }

    /// What CLIENT LIST shows of connection `id`: its flags (`t`, `R`,
    /// `B`) and its redirection (-1 when not tracking).
    pub(crate) fn list_fields(&self, id: u64) -> (String, i64) {
        let Some(mode) = self.peers.get(&id).map(|p| &p.mode).filter(|m| m.on) else {
            return (String::new(), -1);
        };
        let mut flags = String::from("t");
        if mode.broken_redirect {
            flags.push('R');
        }
        if mode.bcast {
            flags.push('B');
        }
        (flags, i64::try_from(mode.redirect).unwrap_or(i64::MAX))
    }

    /// A command of client `id` begins (0 for an in-process client).
    pub(crate) fn begin(&mut self, id: u64) {
        self.current = id;
    }

    /// Whether the current client tracks the keys it reads now: tracking
    /// on, not BCAST, and OPTIN / OPTOUT's CLIENT CACHING agreeing.
    pub(crate) fn tracks_reads(&self) -> bool {
        if self.clients == 0 || self.current == 0 {
            return false;
        }
        self.peers.get(&self.current).is_some_and(|p| {
            let m = &p.mode;
            // OPTIN tracks with CLIENT CACHING yes, OPTOUT without no.
            let opted = if m.optin {
                m.caching
            } else {
                !(m.optout && m.caching)
            };
            m.on && !m.bcast && opted
        })
    }

    /// Adds `keys` to the table for the current client.
    pub(crate) fn remember<'a>(&mut self, keys: impl IntoIterator<Item = &'a [u8]>) {
        let id = self.current;
        for key in keys {
            let ids = match self.table.get_mut(key) {
                Some(ids) => ids,
                None => self.table.entry(Key::from(key)).or_default(),
            };
            if ids.insert(id) {
                self.items += 1;
            }
        }
    }

    /// Redis's `trackingInvalidateKey`: `key` changed, by client `by`
    /// (`None`: expired or dropped for the table's limit). With `bcast`,
    /// the change is gathered for the prefixes it falls under.
    pub(crate) fn invalidate(&mut self, key: &Key, by: Option<u64>, bcast: bool) {
        if bcast {
            for (prefix, state) in &mut self.prefixes {
                if key.starts_with(prefix) {
                    state.keys.insert(key.clone(), by);
                }
            }
        }
        let Some(ids) = self.table.swap_remove(key) else {
            return;
        };
        self.items -= ids.len();
        for id in ids {
            let Some(mode) = self.peers.get(&id).map(|p| &p.mode) else {
                continue;
            };
            // A client that switched to BCAST is not told of the keys it
            // read before; NOLOOP skips what the client itself runs.
            if !mode.on || mode.bcast || (mode.noloop && id == self.current) {
                continue;
            }
            self.send(id, Some(vec![key.clone()]));
        }
    }

    /// Redis's `sendTrackingMessage`: to the client, or to its redirection
    /// target, or (the target gone) the broken-redirection note.
    fn send(&mut self, id: u64, keys: Option<Vec<Key>>) {
        let Some(redirect) = self.peers.get(&id).map(|p| p.mode.redirect) else {
            return;
        };
        let (to, note) = if redirect == 0 {
            (
                id,
                Note::Invalidate {
                    keys,
                    redirected: false,
                },
            )
        } else if self.peers.contains_key(&redirect) {
            (
                redirect,
                Note::Invalidate {
                    keys,
                    redirected: true,
                },
            )
        } else {
            if let Some(peer) = self.peers.get_mut(&id) {
                peer.mode.broken_redirect = true;
            }
            (id, Note::RedirBroken(redirect))
        };
        if let Some(peer) = self.peers.get(&to) {
            // A connection that is closing has dropped its inbox: nothing
            // to tell it any more.
            let _ = peer.sink.send(note);
        }
    }

    /// FLUSHALL / FLUSHDB: every tracking client is told that everything
    /// changed, and the table is emptied.
    pub(crate) fn flushed(&mut self) {
        let tracking: Vec<u64> = self
            .peers
            .iter()
            .filter(|(_, p)| p.mode.on)
            .map(|(&id, _)| id)
            .collect();
        for id in tracking {
            self.send(id, None);
        }
        self.table.clear();
        self.items = 0;
    }

    /// Redis's `trackingBroadcastInvalidationMessages`: each prefix's
    /// changed keys to each of its clients (without the keys a NOLOOP
    /// client changed itself).
    pub(crate) fn broadcast(&mut self) {
        if !self.prefixes.is_empty() {
            self.broadcast_prefixes();
        }
    }

    /// [`Self::broadcast`] with BCAST clients: out of the path every
    /// command takes when there are none.
    #[cold]
    #[inline(never)]
    fn broadcast_prefixes(&mut self) {
        let mut sends = Vec::new();
        for state in self.prefixes.values_mut() {
            if state.keys.is_empty() {
                continue;
            }
            let keys = std::mem::take(&mut state.keys);
            for &id in &state.clients {
                let noloop = self.peers.get(&id).is_some_and(|p| p.mode.noloop);
                let list: Vec<Key> = keys
                    .iter()
                    .filter(|(_, by)| !(noloop && **by == Some(id)))
                    .map(|(key, _)| key.clone())
                    .collect();
                if !list.is_empty() {
                    sends.push((id, list));
                }
            }
        }
        for (id, keys) in sends {
            self.send(id, Some(keys));
        }
    }

    /// Redis's `trackingLimitUsedSlots`: over `max_keys` tracked keys (0:
    /// no limit), invalidates keys picked at random until under it, with
    /// an effort that grows each time in a row it is not enough.
    pub(crate) fn limit(&mut self, max_keys: usize) {
        if max_keys == 0 || self.table.len() <= max_keys {
            self.over_limit = 0;
            return;
        }
        let effort = 100 * (self.over_limit as usize + 1);
        for _ in 0..effort {
            if self.table.is_empty() {
                break;
            }
            let at = rand::random_range(0..self.table.len());
            let Some(key) = self.table.get_index(at).map(|(k, _)| k.clone()) else {
                break;
            };
            self.invalidate(&key, None, false);
            if self.table.len() <= max_keys {
                self.over_limit = 0;
                return;
            }
        }
        self.over_limit += 1;
    }

    /// Whether the keyspaces must log their changes: some key is tracked,
    /// or some prefix broadcast.
    pub(crate) fn wants_changes(&self) -> bool {
        !self.table.is_empty() || !self.prefixes.is_empty()
    }
}

#[cfg(test)]
mod tests;
