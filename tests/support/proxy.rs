//! A TCP proxy that a test puts between a client and a server, to make
//! the server go silent without closing the connection.
//!
//! [`Proxy::start`] forwards every connection made to its port to the
//! target, both ways. [`Proxy::freeze`] stops forwarding on the
//! connections open at that moment while leaving their sockets open: to
//! the client it is a half-open TCP connection (no RST, no FIN, no reply),
//! as when the server's host is gone or a NAT entry dropped. Connections
//! made after it are forwarded as before. [`Proxy::cut_reply_with`]
//! closes the connection that a reply holding some bytes is on, instead of
//! forwarding that reply: to the client, a connection dropped after the
//! server ran its request. Everything closes on drop.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};

/// The proxy's counters, shared with its tasks.
#[derive(Default)]
struct State {
    /// Connections accepted so far; each is numbered in this order.
    accepted: AtomicUsize,
    /// Connections numbered below this forward nothing more.
    frozen_below: AtomicUsize,
    /// The bytes of the reply whose connection is closed instead, once.
    cut: Mutex<Option<Vec<u8>>>,
}

impl State {
    /// Whether `reply` is the one to cut (then no later one is).
    fn cuts(&self, reply: &[u8]) -> bool {
        let mut cut = self.cut.lock().unwrap_or_else(|e| e.into_inner());
        let hit = cut
            .as_deref()
            .is_some_and(|bytes| reply.windows(bytes.len()).any(|w| w == bytes));
        if hit {
            *cut = None;
        }
        hit
    }
}

/// A TCP proxy to one server (see the module docs).
pub struct Proxy {
    port: u16,
    state: Arc<State>,
    /// Accepts and owns every connection's tasks: aborted on drop.
    task: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `target`.
    pub async fn start(target: SocketAddr) -> std::io::Result<Proxy> {
        let listener = crate::listen().await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(State::default());
        let task = tokio::spawn(accept(listener, target, Arc::clone(&state)));
        Ok(Proxy { port, state, task })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Stops forwarding on every connection open now, both ways, leaving
    /// their sockets open; later connections are forwarded.
    pub fn freeze(&self) {
        let accepted = self.state.accepted.load(Ordering::SeqCst);
        self.state.frozen_below.store(accepted, Ordering::SeqCst);
    }

    /// Closes the connection of the next reply (server to client) that
    /// holds `bytes`, that reply unforwarded: the server ran the request,
    /// and its client sees the connection drop before the answer.
    pub fn cut_reply_with(&self, bytes: &[u8]) {
        *self.state.cut.lock().unwrap_or_else(|e| e.into_inner()) = Some(bytes.to_vec());
    }

    /// How many connections it has accepted.
    pub fn accepted(&self) -> usize {
        self.state.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts connections and forwards each to `target` until aborted (the
/// connections' tasks end with it).
async fn accept(listener: TcpListener, target: SocketAddr, state: Arc<State>) {
    let mut connections = JoinSet::new();
    while let Ok((client, _)) = listener.accept().await {
        let number = state.accepted.fetch_add(1, Ordering::SeqCst);
        let Ok(server) = TcpStream::connect(target).await else {
            continue;
        };
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        let cut = Arc::new(Notify::new());
        connections.spawn(forward(
            client_read,
            server_write,
            number,
            false,
            Arc::clone(&state),
            Arc::clone(&cut),
        ));
        connections.spawn(forward(
            server_read,
            client_write,
            number,
            true,
            Arc::clone(&state),
            cut,
        ));
        // Ended connections' tasks are reaped as new ones come.
        while connections.try_join_next().is_some() {}
    }
}

/// Copies `from` to `to` until either closes, or holds both open,
/// forwarding nothing (not even a close), once connection `number` is
/// frozen; on the way to the client (`replies`), closes the connection at
/// the reply to cut: this direction ends there, and tells the other
/// (`cut`) to end too, so that the client's socket closes whole and
/// nothing it sends after reaches the server, as when a server drops a
/// connection.
async fn forward(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    number: usize,
    replies: bool,
    state: Arc<State>,
    cut: Arc<Notify>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let read = tokio::select! {
            read = from.read(&mut buf) => read,
            () = cut.notified(), if !replies => return,
        };
        if number < state.frozen_below.load(Ordering::SeqCst) {
            // Silent, not closed: the sockets live as long as the proxy.
            // A close from this side is held back too, as a host that is
            // gone never passes it on: the other side keeps what it holds
            // for the connection (a sentinel, its subscription).
            std::future::pending::<()>().await;
        }
        let n = match read {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if replies && state.cuts(&buf[..n]) {
            // Dropping `to` ends the client's reading side (it reads the
            // end); the other direction, told, drops the rest.
            cut.notify_one();
            return;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
