//! The engine served over RESP on a TCP port, so that redis-cli,
//! redis-benchmark and clients in any language can use it.
//!
//! [`serve`] binds a listener and serves every accepted connection in a
//! tokio task of its own, with its own [`Session`] (selected database,
//! MULTI queue, WATCHed keys, released when the connection goes away).
//! The connections reach the engine in the order their requests arrived,
//! as Redis's one event loop serves them, whatever runtime the server
//! runs on (`order` module): a client that sends BLPOP before another's
//! RPUSH is served first.
//!
//! # The wire, as Redis 7.0.15 handles it
//! - Requests are RESP arrays of bulk strings or inline (telnet) lines,
//!   split with Redis's quoting rules (`request` module). Pipelining: all
//!   the requests that one read brings are run in order under one lock of
//!   the store and their replies leave in one write.
//! - Limits: at most `INT_MAX` arguments, 512 MB per argument, 64 KB for an
//!   inline request or a header line, 1 GB of query buffer. Nothing is
//!   allocated on the word of a header: memory grows only with the bytes
//!   that really arrive.
//! - A malformed request gets Redis's error ("ERR Protocol error: invalid
//!   multibulk length", ...) after the replies of the requests before it,
//!   then the connection is closed. Other connections are not affected.
//! - QUIT replies OK and closes; a request named `POST` or `Host:` (an HTTP
//!   request sent to the port) closes the connection without a reply.
//! - Replies are encoded in RESP2, or in RESP3 after `HELLO 3` (`encode`
//!   module). Commands build typed replies (maps, sets, doubles) and the
//!   protocol decides how they go out, as in Redis.
//!
//! # Why not redis-rs's parser
//! redis-rs's public `redis::parse_redis_value` parses one complete frame
//! of a *reply*: it cannot say "incomplete, wait for more bytes" apart from
//! "malformed", knows nothing of inline requests, accepts reply types no
//! request may hold, and has neither Redis's limits nor its error texts.
//! Its streaming codec is `#[doc(hidden)]`, so not an API to build on. The
//! request parser is therefore ours, and small; redis-rs's parser is used
//! where it serves, in the tests, to read back what the encoder wrote.
//!
//! # What clients send on connect
//! redis-rs pipelines `CLIENT SETINFO`, which 7.0.15 does not know either
//! (same error, ignored by redis-rs); redis-cli asks `COMMAND DOCS` for its
//! help and gets Redis's documentation of what the engine serves;
//! redis-benchmark asks `CONFIG GET save` and `CONFIG GET appendonly`,
//! answered truthfully. CLIENT ID/GETNAME/SETNAME/INFO/LIST/KILL and HELLO
//! (RESP2 and RESP3) are answered here with the connections' own state; every
//! connection is listed in the server's registry (`client` module).
//!
//! `redis::Value` has one `Nil` for RESP2's two nulls: the null array
//! (`*-1`) is sent for the commands Redis sends it for (EXEC aborted by
//! WATCH, LPOP/RPOP with a count, the MPOP family), inside EXEC replies too.
//!
//! # Pub/Sub
//! SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their opposites are run here
//! (`subscriber` module): the connection registers as a subscriber of the
//! engine's registry, receives `message` / `pmessage` / `smessage` arrays
//! between its replies, and in subscribed mode accepts only what Redis 7.0
//! accepts from a RESP2 client. RESET, CLIENT REPLY ON|OFF|SKIP are
//! answered here too (confirmations and messages are pushes: CLIENT REPLY
//! does not silence them).
//!
//! # Client-side caching
//! Every connection can receive invalidations (`crate::tracking`): the
//! store queues them to it, and it writes them between its replies as
//! RESP3 pushes or, redirected to a subscribed RESP2 connection, as
//! `__redis__:invalidate` messages (`invalidation` module).
//!
//! Known differences: CLIENT, HELLO and the subscription commands inside
//! MULTI are queued but fail at EXEC (the queue runs without the
//! connection's state).

mod client;
mod encode;
mod invalidation;
mod order;
mod request;
mod subscriber;
#[cfg(test)]
pub(crate) mod test_client;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::MutexGuard;
use redis::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::{watch, Notify};
use tokio::task::{JoinHandle, JoinSet};

use crate::args::is;
use crate::command;
use crate::error::CmdError;
use crate::reply;

use crate::command::blocking::{Parked, Wake};
use crate::command::Store;
use crate::session::{Outcome, Paused, Session};
use crate::Engine;
use client::{client_command, hello_command_as, After, ClientCtx, ClientInfo, Peer, Registry};
use order::{Line, Place};
use request::{Parser, Request};
use subscriber::Subscriber;

/// Bytes asked of the socket per read (Redis's `PROTO_IOBUF_LEN`).
const READ_CHUNK: usize = 16 * 1024;
/// Stop running requests of a read once this much reply is waiting, and
/// write it first: a pipeline of big replies must not pile up in memory.
const OUT_HIGH_WATER: usize = 64 * 1024;
/// Unparsed input above this closes the connection
/// (`client-query-buffer-limit`, 1 GB by default).
const QUERY_BUFFER_LIMIT: usize = 1024 * 1024 * 1024;
/// Buffers that grew past this for a big request are given back after it.
const KEEP_BUFFER: usize = 1024 * 1024;

/// A running server. Dropping it stops the server as [`shutdown`] does,
/// without waiting.
///
/// [`shutdown`]: ServerHandle::shutdown
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server listens on (with the real port when it was
    /// bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A `redis://` URL of the server, for `redis::Client::open`.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// Stops accepting, closes every connection and waits until all are
    /// gone (their WATCHed keys released).
    pub async fn shutdown(mut self) {
        self.stop.send_replace(true);
        if let Some(task) = self.task.take() {
            // The accept loop does not panic; if it did, there is nothing
            // left to stop.
            let _ = task.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// Serves `engine` over RESP on `addr` (for instance `"127.0.0.1:0"` for a
/// free port, see [`ServerHandle::local_addr`]) until the handle is shut
/// down or dropped. Must be called within a tokio runtime. Fails only if
/// the address cannot be bound.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use redmodel_memory::{serve, Engine};
/// let server = serve(Engine::new(), "127.0.0.1:0").await?;
/// let client = redis::Client::open(server.url())?;
/// let mut conn = client.get_multiplexed_async_connection().await?;
/// let pong: String = redis::cmd("PING").query_async(&mut conn).await?;
/// assert_eq!(pong, "PONG");
/// server.shutdown().await;
/// # Ok(()) }
/// ```
pub async fn serve(engine: Engine, addr: impl ToSocketAddrs) -> io::Result<ServerHandle> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    // A cluster node tells clients where to find it (CLUSTER SLOTS); an
    // unspecified IP is left empty, which clients read as "the address
    // you reached me at", as Redis does before it learns its own.
    let ip = if addr.ip().is_unspecified() {
        String::new()
    } else {
        addr.ip().to_string()
    };
    engine.announce(ip, addr.port());
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, engine, stopped));
    Ok(ServerHandle {
        addr,
        stop,
        task: Some(task),
    })
}

/// Accepts connections until told to stop, then closes them all.
async fn accept_loop(listener: TcpListener, engine: Engine, mut stop: watch::Receiver<bool>) {
    let mut clients = JoinSet::new();
    let registry = Registry::default();
    let line = Arc::new(Line::default());
    let mut last_id = 0u64;
    let for_clients = stop.clone();
    // Taken once: a connection accepted while a script runs must not wait
    // for the store's lock.
    let busy = Arc::clone(&engine.shared.store.lock().busy);
    loop {
        tokio::select! {
            // A dropped sender means the handle is gone: stop too.
            () = stopped(&mut stop) => break,
            // Reap finished connections so the set does not grow forever.
            Some(_) = clients.join_next(), if !clients.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    last_id += 1;
                    // Replies must not wait for Nagle: Redis sets it too.
                    let _ = stream.set_nodelay(true);
                    let client = Client::new(engine.clone(), last_id, &stream, registry.clone(), &busy, &line);
                    clients.spawn(client.run(stream, for_clients.clone()));
                }
                // Out of file descriptors and the like: wait a little
                // instead of spinning; the listener itself stays usable.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
    clients.shutdown().await;
}

/// Resolves once the server is told to stop, or its handle is dropped.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns must not live across an await.
    let _ = stop.wait_for(|stopped| *stopped).await.map(drop);
}

/// What to do after running the requests available so far.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Every complete request has run: read more.
    Read,
    /// Replies reached the high-water mark: write them, then run more.
    Write,
    /// Write what is pending, then close (QUIT, protocol error).
    Close,
    /// Close at once, without a reply.
    Drop,
    /// The last command blocked (BLPOP...): write the replies before it,
    /// then wait for its reply before running anything else.
    Block,
    /// CLIENT PAUSE holds the next command back (`Client::held`): write
    /// the replies before it, wait for the pause to end, then run it.
    Pause,
}

/// What running one command gave.
enum Ran {
    /// Its reply, and what the connection does once it is sent.
    Reply(Value, After),
    /// The command wrote its reply into the output itself.
    Written,
    /// The command wrote its reply into the output itself, CLIENT REPLY
    /// already heeded (an EXEC of subscriptions: their confirmations are
    /// written whatever CLIENT REPLY says).
    Sent,
    /// It blocked (BLPOP...) until another client serves it.
    Blocked(Parked),
}

/// The connection's part in an EXEC that queued subscription commands
/// (`session::ExecHost`): it holds the subscriber while the EXEC runs,
/// and EXEC's replies as they are written.
#[derive(Debug)]
struct InExec {
    subscriber: Subscriber,
    /// CLIENT REPLY silences the EXEC: only its pushes (confirmations,
    /// messages) are written.
    silent: bool,
    out: Vec<u8>,
}

impl crate::session::ExecHost for InExec {
    fn owns(&self, args: &[&[u8]]) -> bool {
        subscriber::is_subscription_command(args[0])
    }

    fn run(&mut self, store: &mut Store, args: &[&[u8]]) {
        if is(args[0], "ssubscribe") {
            // Redis refuses a shard subscription to a client that may not
            // block, as a command of EXEC may not (both 7.0 and 7.4).
            if !self.silent {
                encode::error(
                    &mut self.out,
                    b"ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client",
                );
            }
        } else {
            self.subscriber.run(store, args, &mut self.out);
        }
        // A subscriber that fell behind is closed at its next request.
        let _ = self.subscriber.drain(&mut self.out);
    }

    fn reply(&mut self, args: &[&[u8]], reply: &Value) {
        // A message the command published to this connection comes
        // before its reply, as Redis writes it while the command runs.
        let _ = self.subscriber.drain(&mut self.out);
        if !self.silent {
            encode_reply(
                &mut self.out,
                reply,
                replies_null_array(args),
                self.subscriber.resp,
            );
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// One connection's state.
struct Client {
    engine: Engine,
    session: Session,
    info: ClientInfo,
    parser: Parser,
    /// For each command queued since MULTI: whether its nil reply is a
    /// null array, so that EXEC's reply array is sent as Redis sends it.
    queued_nil_arrays: Vec<bool>,
    /// Every connection of the server (CLIENT LIST, CLIENT KILL), this one
    /// included under `info.id`.
    registry: Registry,
    /// Notified when CLIENT KILL picks this connection.
    kill: Arc<Notify>,
    /// Its Pub/Sub subscriptions and the messages waiting for it.
    subscriber: Subscriber,
    /// The command that just blocked: its waiter, and whether its nil
    /// reply is a null array.
    parked: Option<(Parked, bool)>,
    /// The command CLIENT PAUSE holds back, not run yet, and the pause.
    held: Option<(Vec<Vec<u8>>, Paused)>,
    /// The running script: past `busy-reply-threshold` this connection
    /// answers BUSY instead of waiting for the store's lock.
    busy: Arc<crate::command::script::busy::Busy>,
    /// Counted in INFO's `connected_clients`.
    counted: bool,
    /// Its place in the order the server's connections lock the store.
    place: Place,
    /// The server's count of bytes read and written (INFO stats).
    net: Arc<crate::command::stats::NetBytes>,
    /// What client-side caching tells it (`crate::tracking`), and the
    /// other end, given to the store when the connection is counted.
    notes: crate::tracking::Inbox,
    notes_sink: Option<crate::tracking::Sink>,
    /// MONITOR: its id among the store's monitors and the lines fed to it.
    monitor: Option<(u64, crate::monitor::Inbox)>,
}

/// A connection arrives (INFO's counts; client-side caching may send it
/// invalidations from now on).
fn count_in(store: &mut Store, id: u64, notes: Option<crate::tracking::Sink>) {
    store.connected_clients += 1;
    store.connections_received += 1;
    if let Some(sink) = notes {
        store.tracking.connect(id, sink);
    }
}

/// Reads what `stream` has into `input`, in the connection's `place` in
/// line ([`Place::read`]), adding the bytes to the server's count.
async fn read_counted(
    place: &mut Place,
    net: &crate::command::stats::NetBytes,
    stream: &TcpStream,
    input: &mut Vec<u8>,
) -> io::Result<usize> {
    let read = place.read(stream, input).await?;
    net.read(read);
    Ok(read)
}

impl Client {
    /// A new connection: listed in the registry and counted in INFO until
    /// it is dropped.
    fn new(
        engine: Engine,
        id: u64,
        stream: &TcpStream,
        registry: Registry,
        busy: &Arc<crate::command::script::busy::Busy>,
        line: &Arc<Line>,
    ) -> Self {
        let now = engine.now_ms();
        let kill = Arc::new(Notify::new());
        let address = |a: io::Result<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        #[cfg(unix)]
        let fd = i64::from(std::os::fd::AsRawFd::as_raw_fd(stream));
        #[cfg(not(unix))]
        let fd = -1;
        registry.lock().insert(
            id,
            Peer {
                addr: address(stream.peer_addr()),
                laddr: address(stream.local_addr()),
                fd,
                created_ms: now,
                last_ms: now,
                kill: kill.clone(),
                ..Peer::default()
            },
        );
        // Counted in INFO now, or (a script holding the lock) with the
        // first command.
        let (sink, notes) = crate::tracking::queue();
        let mut notes_sink = Some(sink);
        let counted = match engine.shared.store.try_lock() {
            Some(mut store) => {
                count_in(&mut store, id, notes_sink.take());
                true
            }
            None => false,
        };
        let net = Arc::clone(&engine.shared.net);
        let mut session = Session::default();
        session.client_id = id;
        session.peer = Some(address(stream.peer_addr()));
        Client {
            engine,
            session,
            info: ClientInfo {
                id,
                ..ClientInfo::default()
            },
            parser: Parser::default(),
            queued_nil_arrays: Vec::new(),
            registry,
            kill,
            subscriber: Subscriber::default(),
            parked: None,
            held: None,
            busy: Arc::clone(busy),
            counted,
            place: Place::new(line),
            net,
            notes,
            notes_sink,
            monitor: None,
        }
    }

    /// Serves the connection until the client leaves, misbehaves, or the
    /// server stops.
    async fn run(mut self, mut stream: TcpStream, mut stop: watch::Receiver<bool>) {
        let mut input = Vec::with_capacity(READ_CHUNK);
        let mut output = Vec::new();
        // The outcome of a command CLIENT PAUSE held back, once run.
        let mut resumed = None;
        loop {
            let next = match resumed.take() {
                Some(next) => next,
                None => {
                    // What this connection read waits until what others
                    // read before it has locked the store (`order` module).
                    self.place.turn().await;
                    let next = self.process(&input, &mut output);
                    self.place.leave();
                    next
                }
            };
            let consumed = self.parser.consumed();
            input.drain(..consumed);
            self.parser.discard(consumed);
            if next == Next::Drop {
                return;
            }
            if !output.is_empty() {
                if self.write(&mut stream, &output).await.is_err() {
                    return;
                }
                output.clear();
                shrink(&mut output);
            }
            match next {
                Next::Close => {
                    let _ = stream.shutdown().await;
                    return;
                }
                Next::Write => continue,
                Next::Block => {
                    let waited = self
                        .wait_blocked(&mut stream, &mut input, &mut output, &mut stop)
                        .await;
                    if waited.is_none() {
                        return;
                    }
                    continue;
                }
                Next::Pause => {
                    let Some((args, paused)) = self.held.take() else {
                        continue;
                    };
                    // Input that arrives meanwhile waits in the buffer.
                    let wait = paused.wait();
                    tokio::pin!(wait);
                    loop {
                        tokio::select! {
                            () = &mut wait => break,
                            read = read_counted(&mut self.place, &self.net, &stream, &mut input) => match read {
                                Ok(0) | Err(_) => return,
                                Ok(_) if input.len() > QUERY_BUFFER_LIMIT => return,
                                Ok(_) => {}
                            },
                            () = stopped(&mut stop) => return,
                            () = self.kill.notified() => return,
                        }
                    }
                    let engine = self.engine.clone();
                    let mut store = engine.shared.store.lock();
                    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                    // Another pause may have begun meanwhile.
                    let clock = || self.engine.now_ms();
                    resumed = Some(match self.session.paused(&mut store, &refs, clock) {
                        Some(paused) => {
                            self.held = Some((args.clone(), paused));
                            Next::Pause
                        }
                        None => self
                            .dispatch(&refs, &mut store, &mut output)
                            .unwrap_or(Next::Write),
                    });
                    continue;
                }
                Next::Read | Next::Drop => {}
            }
            shrink(&mut input);
            input.reserve(READ_CHUNK);
            tokio::select! {
                read = read_counted(&mut self.place, &self.net, &stream, &mut input) => match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                },
                () = stopped(&mut stop) => return,
                () = self.kill.notified() => return,
                Some(note) = self.notes.recv() => {
                    // Client-side caching's invalidations, with any that
                    // followed.
                    let subscribed = self
                        .registry
                        .lock()
                        .get(&self.info.id)
                        .is_some_and(|p| p.subscriptions.iter().any(|&n| n > 0));
                    let resp = self.session.resp();
                    invalidation::write_note(&mut output, &note, resp, subscribed);
                    self.write_notes(&mut output, subscribed);
                    continue;
                }
                line = next_line(&mut self.monitor) => {
                    // Commands other clients ran: written with any that
                    // followed them.
                    let Some(line) = line else { return };
                    write_line(&mut output, &line);
                    self.drain_monitor(&mut output);
                    continue;
                }
                push = self.subscriber.next() => {
                    // A message published by another client: write it with
                    // any that followed it.
                    let Some(push) = push else { return };
                    self.subscriber.resp = self.session.resp();
                    subscriber::write_push(&mut output, &push, self.subscriber.resp);
                    if !self.subscriber.drain(&mut output) {
                        return;
                    }
                    continue;
                }
            }
            if input.len() > QUERY_BUFFER_LIMIT {
                return;
            }
        }
    }

    /// Writes `output`. A client that does not read its replies keeps
    /// its connection waiting here: the connection steps out of the line
    /// meanwhile, so that the others need not wait for it.
    async fn write(&mut self, stream: &mut TcpStream, output: &[u8]) -> io::Result<()> {
        let mut rest = output;
        while !rest.is_empty() {
            match stream.try_write(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.net.wrote(n);
                    rest = rest.get(n..).unwrap_or_default();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.place.step_away();
                    let written = stream.write_all(rest).await;
                    self.place.come_back();
                    if written.is_ok() {
                        self.net.wrote(rest.len());
                    }
                    return written;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Waits for the reply of the command that blocked (BLPOP...) and
    /// appends it to `output`; `None` if the connection ends meanwhile.
    /// Input that arrives meanwhile waits in the buffer, as in Redis, and
    /// runs after the reply without waiting its turn: the connection is
    /// out of the line while it waits.
    async fn wait_blocked(
        &mut self,
        stream: &mut TcpStream,
        input: &mut Vec<u8>,
        output: &mut Vec<u8>,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<()> {
        let Some((parked, nil_array)) = self.parked.take() else {
            return Some(());
        };
        self.place.step_away();
        // The end of the connection ends the wait (dropping the ticket
        // takes the client out of the queues).
        let mut ticket = parked.ticket(&self.engine);
        let wake = {
            let wait = ticket.wait();
            tokio::pin!(wait);
            loop {
                tokio::select! {
                    wake = &mut wait => break wake,
                    read = read_counted(&mut self.place, &self.net, stream, input) => match read {
                        Ok(0) | Err(_) => return None,
                        Ok(_) if input.len() > QUERY_BUFFER_LIMIT => return None,
                        Ok(_) => {}
                    },
                    () = stopped(stop) => return None,
                    () = self.kill.notified() => return None,
                }
            }
        };
        self.place.come_back();
        if let Some(peer) = self.registry.lock().get_mut(&self.info.id) {
            peer.blocked = None;
        }
        match wake {
            // Redis answers every timed-out blocked client with the null
            // array (RESP3's one null).
            Wake::TimedOut => encode_reply(output, &Value::Nil, true, self.session.resp()),
            Wake::Served(reply) => encode_reply(output, &reply, nil_array, self.session.resp()),
        }
        Some(())
    }

    /// Runs the complete requests in `input`, appending their replies to
    /// `output`. The store is locked once for all of them (and not across
    /// an await: this function is synchronous).
    fn process(&mut self, input: &[u8], output: &mut Vec<u8>) -> Next {
        let engine = self.engine.clone();
        let mut store = None;
        let mut argv: Vec<&[u8]> = Vec::new();
        loop {
            let argv_inline: Vec<&[u8]>;
            if output.len() >= OUT_HIGH_WATER {
                return Next::Write;
            }
            let request = match self.parser.next(input) {
                Ok(Some(request)) => request,
                Ok(None) => return Next::Read,
                Err(e) => {
                    encode::error(output, &e.line());
                    return Next::Close;
                }
            };
            // The arguments of a RESP request are slices of `input`, put
            // in a vector kept for the whole batch, and the parser gets its
            // list of ranges back: nothing is allocated per request.
            argv.clear();
            let inline;
            let args: &[&[u8]] = match request {
                Request::Multibulk(ranges) => {
                    argv.extend(
                        ranges
                            .iter()
                            .map(|r| input.get(r.clone()).unwrap_or_default()),
                    );
                    self.parser.recycle(ranges);
                    &argv
                }
                Request::Inline(words) => {
                    inline = words;
                    argv_inline = inline.iter().map(Vec::as_slice).collect();
                    &argv_inline
                }
            };
            if args.is_empty() {
                continue; // `*0` or a blank line: Redis ignores them.
            }
            if store.is_none() {
                store = self.lock(&engine);
            }
            let Some(store) = store.as_mut() else {
                self.answer_busy(args, output);
                continue;
            };
            if !self.counted {
                count_in(store, self.info.id, self.notes_sink.take());
                self.counted = true;
            }
            if let Some(paused) = self.session.paused(store, args, || engine.now_ms()) {
                self.held = Some((args.iter().map(|a| a.to_vec()).collect(), paused));
                return Next::Pause;
            }
            let next = self.dispatch(args, store, output);
            // A monitor sees its own commands after their replies.
            self.drain_monitor(output);
            if let Some(next) = next {
                return next;
            }
        }
    }

    /// Locks the store for this connection's requests, then gives its
    /// turn back: the next connection in line waits for the lock itself,
    /// so the store is locked in arrival order (`order` module). `None`
    /// while a script runs past `busy-reply-threshold`: the requests are
    /// answered BUSY (or kill it) instead of waiting.
    fn lock<'e>(&mut self, engine: &'e Engine) -> Option<MutexGuard<'e, Store>> {
        let store = loop {
            if let Some(store) = engine.shared.store.try_lock_for(Duration::from_millis(5)) {
                break Some(store);
            }
            if self.busy.timed_out().is_some() {
                break None;
            }
        };
        self.place.leave();
        store
    }

    /// Answers a request while a script holds the store past its
    /// threshold: BUSY, or the kill, or what needs no store.
    fn answer_busy(&mut self, args: &[&[u8]], output: &mut Vec<u8>) {
        if let Some(reply) = self.session.control_unlocked(args) {
            encode::encode(output, &reply);
            return;
        }
        match self.busy.answer(args) {
            Ok(mut reply) => {
                if self.session.resp() < 3 {
                    crate::reply::to_resp2(&mut reply);
                }
                encode::encode(output, &reply)
            }
            Err(e) => {
                let exec = is(args[0], "exec");
                let e = self.session.refused_unlocked(exec, &e);
                encode::error(output, e.as_bytes());
            }
        }
    }

    /// Runs one request. Returns what to do if the connection must end.
    fn dispatch(
        &mut self,
        args: &[&[u8]],
        store: &mut Store,
        output: &mut Vec<u8>,
    ) -> Option<Next> {
        self.subscriber.resp = self.session.resp();
        // Messages published before this command precede its reply, and
        // so do the invalidations (those of the previous command follow
        // its reply).
        if !self.subscriber.drain(output) {
            return Some(Next::Drop);
        }
        let now = self.engine.now_ms();
        // Evicted keys' invalidations precede the reply too (Redis evicts
        // in `processCommand`, before the command runs).
        store.evict(now);
        store.flush_invalidations();
        let subscribed = self.subscriber.is_subscribed(store);
        self.write_notes(output, subscribed);
        let queueing = self.session.in_transaction();
        if let Some(refused) = self.refusal(args, store, now, queueing) {
            // Counted as every error reply Redis sends (INFO errorstats),
            // and as a refusal of the command (`rejectCommand`).
            store.command_stats.record_errors(&refused, false);
            store.command_stats.record_rejected(args);
            let silent = self.silenced();
            self.record(args, now, store);
            self.after_command();
            self.send(output, &refused, false, silent);
            return None;
        }
        let name = args[0];
        if is(name, "quit") {
            // Gone for client-side caching at once, as Redis frees the
            // client: a redirection to it is broken from the next change.
            store.tracking.disconnect(self.info.id);
            // A closing connection is sent nothing after its OK.
            if let Some((id, _)) = self.monitor.take() {
                store.monitors.remove(id);
            }
            self.session.feed_monitors(store, args);
            encode::encode(output, &Value::Okay);
            return Some(Next::Close);
        }
        if is(name, "monitor") && !queueing && args.len() == 1 {
            // A monitor's MONITOR gets no reply, as in Redis.
            if self.monitor.is_none() {
                self.monitor = Some(store.monitors.add());
                encode::encode(output, &Value::Okay);
            }
            self.record(args, now, store);
            return None;
        }
        if is(name, "post") || is(name, "host:") {
            return Some(Next::Drop);
        }
        if !queueing && subscriber::is_subscription_command(name) {
            self.subscription(args, store, now, output);
            return None;
        }
        if is(name, "reset") {
            self.reset(store);
        }
        // Where this command's reply starts, if the command writes it
        // there itself (see `Store::reply_out`).
        let reply_start = output.len();
        let (reply, mut after) = match self.run_command(args, store, now, output, queueing) {
            Ran::Reply(reply, after) => (Some(reply), after),
            Ran::Written => (None, After::Continue),
            Ran::Sent => {
                self.record(args, now, store);
                self.after_command();
                return None;
            }
            Ran::Blocked(parked) => {
                self.park(args, store, now, parked);
                return Some(Next::Block);
            }
        };
        self.record(args, now, store);
        if self.closed_by_acl(store) {
            after = After::Close;
        }
        // Read after the command: CLIENT REPLY OFF silences its own reply,
        // ON does not, SKIP has none.
        let silent = self.silenced() || self.info.skip_next;
        self.after_command();
        let Some(reply) = reply else {
            if silent {
                output.truncate(reply_start);
            }
            return None;
        };
        if after == After::Close {
            self.send(output, &reply, false, silent);
            return Some(Next::Close);
        }
        self.send_reply(args, &reply, queueing, silent, output);
        None
    }

    /// Why this command may not run: its user may not (AUTH, ACL: inside
    /// MULTI the session checks, and dooms the transaction, itself), or
    /// RESP2's subscribed mode, where only the subscription commands run
    /// (in RESP3 a subscriber may run any command: its pushes are typed
    /// apart from replies).
    fn refusal(
        &mut self,
        args: &[&[u8]],
        store: &mut Store,
        now: i64,
        queueing: bool,
    ) -> Option<Value> {
        if !queueing {
            if let Err(refused) = self.session.guard(store, args, now) {
                return Some(refused.to_value());
            }
        }
        if self.session.resp() < 3 && self.subscriber.is_subscribed(store) {
            return subscriber::refusal(args).map(|refused| refused.to_value());
        }
        if self.monitor.is_some() {
            // A monitor is a replica to Redis, kept off the keyspace.
            let keyspace = crate::command_table::of_line(args).is_some_and(|meta| {
                ["write", "readonly", "may_replicate"]
                    .iter()
                    .any(|flag| meta.has_flag(flag))
            });
            if keyspace {
                let refused = CmdError::err("Replica can't interact with the keyspace");
                return Some(refused.to_value());
            }
        }
        None
    }

    /// SUBSCRIBE and the like: their confirmations are pushes, which
    /// CLIENT REPLY does not silence.
    fn subscription(&mut self, args: &[&[u8]], store: &mut Store, now: i64, output: &mut Vec<u8>) {
        match command::lookup(args[0]) {
            Some(spec) if !spec.arity_ok(args.len()) => {
                let silent = self.silenced();
                self.send(
                    output,
                    &command::wrong_arity(spec).to_value(),
                    false,
                    silent,
                );
            }
            _ => {
                let started = std::time::Instant::now();
                self.subscriber.run(store, args, output);
                self.session.timed(store, args, started.elapsed(), now);
                self.session.feed_monitors(store, args);
            }
        }
        self.record(args, now, store);
        self.after_command();
    }

    /// RESET's part in the connection's own state (the session resets the
    /// rest when it runs the command).
    fn reset(&mut self, store: &mut Store) {
        self.subscriber.reset(store);
        store.tracking.disable(self.info.id);
        if let Some((id, _)) = self.monitor.take() {
            store.monitors.remove(id);
        }
        self.info.name = None;
        self.info.reply_off = false;
        self.info.skip_next = false;
        self.info.no_evict = false;
        self.info.no_touch = false;
    }

    /// Runs a command: the ones about the connection here, the others in
    /// the session.
    fn run_command(
        &mut self,
        args: &[&[u8]],
        store: &mut Store,
        now: i64,
        output: &mut Vec<u8>,
        queueing: bool,
    ) -> Ran {
        let name = args[0];
        if queueing {
            return self.execute(args, store, now, output, queueing);
        }
        if is(name, "ping") && self.session.resp() < 3 && self.subscriber.is_subscribed(store) {
            // Redis 7.0 answers PING in subscribed mode (RESP2) with an
            // array, so that it reads like the messages around it.
            let reply = match args {
                [_] => reply::bulks([&b"pong"[..], b""]),
                [_, message] => reply::bulks([&b"pong"[..], message]),
                _ => command::arity_error(args).to_value(),
            };
            self.session.feed_monitors(store, args);
            return Ran::Reply(reply, After::Continue);
        }
        if is(name, "client") {
            let started = std::time::Instant::now();
            let mut cx = ClientCtx {
                registry: &self.registry,
                now,
                store,
            };
            let (reply, after) = client_command(&mut self.info, &mut cx, args);
            self.session.timed(store, args, started.elapsed(), now);
            self.session.feed_monitors(store, args);
            return Ran::Reply(reply, after);
        }
        if is(name, "hello") {
            let started = std::time::Instant::now();
            let mut resp = self.session.resp();
            let session = &mut self.session;
            let version = store.version;
            let reply = hello_command_as(&mut self.info, &mut resp, args, version, &mut |login| {
                session.login(store, name, login, now)
            });
            self.session.set_resp(resp);
            self.session.timed(store, args, started.elapsed(), now);
            self.session.feed_monitors(store, args);
            return Ran::Reply(reply, After::Continue);
        }
        self.execute(args, store, now, output, queueing)
    }

    /// Runs a command of the engine's table (or queues it, in MULTI).
    fn execute(
        &mut self,
        args: &[&[u8]],
        store: &mut Store,
        now: i64,
        output: &mut Vec<u8>,
        queueing: bool,
    ) -> Ran {
        if !queueing {
            self.session.guarded();
        }
        // LRANGE may write its reply straight into `output`: lent to it
        // through the store, taken back after. Only the command run here,
        // not a queued one (EXEC's reply is an array of typed replies) nor
        // one that runs others (a script's calls).
        let lent_at = (!queueing && is(args[0], "lrange")).then(|| {
            let at = output.len();
            store.reply_out = Some(std::mem::take(output));
            at
        });
        store.no_touch = self.info.no_touch && !is(args[0], "touch");
        // An EXEC of subscription commands: the connection runs those
        // itself, in their place, and writes EXEC's reply as it goes.
        let hosted =
            is(args[0], "exec") && self.session.queues(subscriber::is_subscription_command);
        if hosted {
            self.subscriber.resp = self.session.resp();
            self.session.exec_host = Some(Box::new(InExec {
                subscriber: std::mem::take(&mut self.subscriber),
                silent: self.silenced(),
                out: Vec::new(),
            }));
        }
        let outcome = self.session.execute_or_block(store, args, now, true);
        store.no_touch = false;
        if let Some(host) = self.session.exec_host.take() {
            if let Ok(host) = host.into_any().downcast::<InExec>() {
                let InExec {
                    subscriber,
                    silent,
                    out,
                } = *host;
                self.subscriber = subscriber;
                // The queue ran (else EXEC's reply is its error or nil):
                // its replies are written, as many as EXEC announces.
                if let Outcome::Reply(Value::Array(replies)) = &outcome {
                    self.queued_nil_arrays.clear();
                    if !silent {
                        encode::array_header(output, replies.len());
                    }
                    output.extend_from_slice(&out);
                    return Ran::Sent;
                }
            }
        }
        if let Some(at) = lent_at {
            *output = store.reply_out.take().unwrap_or_default();
            // Any reply is at least an array header.
            if output.len() > at {
                return Ran::Written;
            }
        }
        match outcome {
            Outcome::Reply(reply) => Ran::Reply(reply, After::Continue),
            Outcome::Blocked(parked) => Ran::Blocked(parked),
        }
    }

    /// The command blocked: the connection waits for `parked`'s reply.
    fn park(&mut self, args: &[&[u8]], store: &mut Store, now: i64, parked: Parked) {
        self.record(args, now, store);
        if let Some(name) = &self.info.name {
            crate::command::blocking::name_waiter(store, parked.id(), name);
        }
        if let Some(peer) = self.registry.lock().get_mut(&self.info.id) {
            peer.blocked = Some(parked.id());
        }
        self.parked = Some((parked, replies_null_array(args)));
    }

    /// ACL DELUSER closes the deleted users' connections, ACL SETUSER the
    /// subscribers left listening to channels they may no longer hear;
    /// whether this connection is among them (it closes after its reply).
    fn closed_by_acl(&mut self, store: &mut Store) -> bool {
        let deleted = !store.acl.deleted.is_empty() && self.close_deleted_users(store);
        let revoked =
            !store.acl.channels_revoked.is_empty() && self.close_revoked_subscribers(store);
        deleted || revoked
    }

    /// Sends a command's reply, keeping track of the commands queued since
    /// MULTI so that EXEC's array has each nil as Redis sends it.
    fn send_reply(
        &mut self,
        args: &[&[u8]],
        reply: &Value,
        queueing: bool,
        silent: bool,
        output: &mut Vec<u8>,
    ) {
        let name = args[0];
        if !queueing && is(name, "multi") {
            self.queued_nil_arrays.clear();
        } else if queueing {
            if matches!(reply, Value::SimpleString(s) if s == "QUEUED") {
                self.queued_nil_arrays.push(replies_null_array(args));
            } else if is(name, "exec") || is(name, "discard") {
                let nil_arrays = std::mem::take(&mut self.queued_nil_arrays);
                if let Value::Array(replies) = reply {
                    if replies.len() == nil_arrays.len() {
                        if !silent {
                            self.send_exec(replies, &nil_arrays, output);
                        }
                        return;
                    }
                }
            }
        }
        // Which null a nil is matters only for a nil (and the name test
        // is not free: it ran for every reply).
        let nil_array = *reply == Value::Nil && replies_null_array(args);
        self.send(output, reply, nil_array, silent);
    }

    /// EXEC's replies, each nil as its queued command sends it.
    fn send_exec(&self, replies: &[Value], nil_arrays: &[bool], output: &mut Vec<u8>) {
        encode::array_header(output, replies.len());
        for (reply, &nil_array) in replies.iter().zip(nil_arrays) {
            encode_reply(output, reply, nil_array, self.session.resp());
        }
    }

    /// Whether CLIENT REPLY silences the command being run.
    fn silenced(&self) -> bool {
        self.info.skip_this || self.info.reply_off
    }

    /// Writes a reply unless CLIENT REPLY silences it.
    fn send(&self, output: &mut Vec<u8>, reply: &Value, nil_array: bool, silent: bool) {
        if !silent {
            encode_reply(output, reply, nil_array, self.session.resp());
        }
    }

    /// Writes the invalidations already queued (see `invalidation`).
    fn write_notes(&mut self, output: &mut Vec<u8>, subscribed: bool) {
        let resp = self.session.resp();
        while let Ok(note) = self.notes.try_recv() {
            invalidation::write_note(output, &note, resp, subscribed);
        }
    }

    /// Writes the MONITOR lines already fed to this connection.
    fn drain_monitor(&mut self, output: &mut Vec<u8>) {
        if let Some((_, inbox)) = &mut self.monitor {
            while let Ok(line) = inbox.try_recv() {
                write_line(output, &line);
            }
        }
    }

    /// CLIENT REPLY SKIP applies to the command after it.
    fn after_command(&mut self) {
        self.info.skip_this = std::mem::take(&mut self.info.skip_next);
    }
}

impl Client {
    /// Wakes the connections of the users ACL DELUSER deleted so that
    /// they close; whether this one is among them.
    fn close_deleted_users(&mut self, store: &mut Store) -> bool {
        let deleted = std::mem::take(&mut store.acl.deleted);
        let mine = deleted.iter().any(|d| d == self.session.user_name());
        let mut registry = self.registry.lock();
        registry.retain(|id, peer| {
            let doomed = *id != self.info.id && deleted.iter().any(|d| d == peer.user.as_bytes());
            if doomed {
                peer.kill.notify_one();
            }
            !doomed
        });
        mine
    }

    /// Redis's `ACLKillPubsubClientsIfNeeded`: closes the connections of
    /// the users whose channels ACL SETUSER reduced that are subscribed to
    /// what they may no longer hear; whether this one is among them. They
    /// leave CLIENT LIST at once, as in Redis.
    fn close_revoked_subscribers(&mut self, store: &mut Store) -> bool {
        use crate::pubsub::Scope;
        let revoked = std::mem::take(&mut store.acl.channels_revoked);
        let mut registry = self.registry.lock();
        let doomed: Vec<u64> = registry
            .iter()
            .filter_map(|(&id, peer)| {
                let name = revoked.iter().find(|r| *r == peer.user.as_bytes())?;
                let user = store.acl.user(name)?;
                let sub = peer.subscriber?;
                let denied = [Scope::Channel, Scope::Pattern, Scope::Shard]
                    .into_iter()
                    .any(|scope| {
                        store
                            .pubsub
                            .subscriptions(sub, scope)
                            .iter()
                            .any(|channel| !user.channel_allowed(channel, scope == Scope::Pattern))
                    });
                denied.then_some(id)
            })
            .collect();
        let mut mine = false;
        for id in doomed {
            if id == self.info.id {
                mine = true;
            } else if let Some(peer) = registry.shift_remove(&id) {
                peer.kill.notify_one();
            }
        }
        mine
    }

    /// Updates what CLIENT LIST shows of this connection after a command.
    /// The ACL LOG entries the command made get the connection's line.
    fn record(&self, args: &[&[u8]], now: i64, store: &mut Store) {
        let subscriptions = self.subscriber.counts(store);
        let mut registry = self.registry.lock();
        let Some(peer) = registry.get_mut(&self.info.id) else {
            return;
        };
        peer.last_ms = now;
        peer.db = self.session.db;
        peer.subscriptions = subscriptions;
        peer.resp = self.session.resp();
        peer.subscriber = self.subscriber.registered();
        peer.monitor = self.monitor.is_some();
        peer.no_evict = self.info.no_evict;
        peer.no_touch = self.info.no_touch;
        peer.watch = self.session.watched();
        if peer.lib != self.info.lib {
            peer.lib.clone_from(&self.info.lib);
        }
        if peer.user.as_bytes() != self.session.user_name() {
            peer.user = String::from_utf8_lossy(self.session.user_name()).into_owned();
        }
        // Copied only when changed: this runs after every command, and an
        // allocation per command showed in redis-benchmark's profiles.
        if peer.name != self.info.name {
            peer.name.clone_from(&self.info.name);
        }
        peer.multi = self
            .session
            .in_transaction()
            .then_some(self.queued_nil_arrays.len());
        // A connection mostly repeats its commands: the lowercased name is
        // rebuilt only when it differs from the last one (a container's
        // `name|sub` never equals a bare name, so it is always rebuilt).
        if !peer.cmd.as_bytes().eq_ignore_ascii_case(args[0]) {
            peer.cmd = client::running_name(args);
        }
        if store.acl.log.unfilled() {
            store
                .acl
                .log
                .fill(peer.line(self.info.id, now, store).trim_end());
        }
        if store.slowlog.unfilled() {
            store.slowlog.fill(&peer.addr, peer.name.as_deref());
        }
    }
}

impl Drop for Client {
    /// A connection that goes away, however it ends, releases its watches
    /// and leaves the registry.
    fn drop(&mut self) {
        /// What a connection leaves in the store: its watches, its wait
        /// (gone between blocking and waiting, its earlier replies could
        /// not be written), its subscriptions and its count.
        fn release(store: &mut Store, mut left: Left, counted: bool) {
            if let Some((parked, _)) = left.parked.take() {
                crate::command::blocking::cancel(store, parked.id());
            }
            if left.session.has_watches() {
                left.session.unwatch_all(store);
            }
            left.subscriber.leave(store);
            store.tracking.disconnect(left.id);
            if let Some(id) = left.monitor {
                store.monitors.remove(id);
            }
            if counted {
                store.connected_clients = store.connected_clients.saturating_sub(1);
            }
        }
        let left = Left {
            id: self.info.id,
            session: std::mem::take(&mut self.session),
            parked: self.parked.take(),
            subscriber: std::mem::take(&mut self.subscriber),
            monitor: self.monitor.take().map(|(id, _)| id),
        };
        let counted = self.counted;
        match self.engine.shared.store.try_lock() {
            Some(mut store) => release(&mut store, left, counted),
            None => {
                // A script holds the lock, maybe for long: a worker of the
                // runtime must not wait for it.
                let engine = self.engine.clone();
                std::thread::spawn(move || {
                    release(&mut engine.shared.store.lock(), left, counted);
                });
            }
        }
        self.registry.lock().shift_remove(&self.info.id);
    }
}

/// What a closed connection leaves to release in the store.
struct Left {
    id: u64,
    session: Session,
    parked: Option<(Parked, bool)>,
    subscriber: Subscriber,
    monitor: Option<u64>,
}

/// The next line fed to a monitor; never, for a connection that is not
/// one.
async fn next_line(
    monitor: &mut Option<(u64, crate::monitor::Inbox)>,
) -> Option<crate::monitor::Line> {
    match monitor {
        Some((_, inbox)) => inbox.recv().await,
        None => std::future::pending().await,
    }
}

/// A MONITOR line on the wire: a status reply, whatever the protocol (as
/// Redis sends it).
fn write_line(output: &mut Vec<u8>, line: &str) {
    output.push(b'+');
    output.extend_from_slice(line.as_bytes());
    output.extend_from_slice(b"\r\n");
}

/// Encodes `reply` in the protocol `resp`; in RESP2 a nil as the null
/// array if `nil_array` (RESP3 has one null).
fn encode_reply(output: &mut Vec<u8>, reply: &Value, nil_array: bool, resp: u8) {
    if nil_array && resp < 3 && *reply == Value::Nil {
        encode::null_array(output);
    } else {
        encode::encode_in(output, reply, resp);
    }
}

/// Whether Redis sends a nil reply of this command as the null array `*-1`
/// rather than the null bulk string `$-1`.
fn replies_null_array(args: &[&[u8]]) -> bool {
    // Lowercased once and matched as a whole (a comparison per name was
    // a tenth of a GET's cost when the key was missing); no such name is
    // longer than the buffer.
    let name = args[0];
    let mut buf = [0u8; 16];
    let Some(lower) = buf.get_mut(..name.len()) else {
        return false;
    };
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    match &*lower {
        b"exec" | b"lmpop" | b"blmpop" | b"zmpop" | b"bzmpop" | b"blpop" | b"brpop"
        | b"bzpopmin" | b"bzpopmax" => true,
        // XREAD and XREADGROUP with nothing to serve, XRANGE with COUNT 0.
        b"xread" | b"xreadgroup" | b"xrange" | b"xrevrange" => true,
        b"lpop" | b"rpop" => args.len() >= 3,
        // ZRANK and ZREVRANK WITHSCORE (Redis 7.2 and later).
        b"zrank" | b"zrevrank" => args.len() == 4,
        _ => false,
    }
}

/// Gives back the memory of a buffer that grew for one big request.
fn shrink(buf: &mut Vec<u8>) {
    if buf.capacity() > KEEP_BUFFER && buf.len() < KEEP_BUFFER / 2 {
        buf.shrink_to(READ_CHUNK.max(buf.len()));
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::serve;
    use crate::Engine;

    /// Whether `key` of database 0 is watched by anyone, observed through
    /// its modification epoch: a watched key counts modifications, a key
    /// nobody watches has no epoch.
    fn watched(engine: &Engine, key: &[u8]) -> bool {
        let mut store = engine.shared.store.lock();
        let ks = &mut store.dbs[0];
        ks.modified(key);
        ks.watch_epoch(key) > 0
    }

    async fn watch(stream: &mut TcpStream, key: &str) {
        stream
            .write_all(format!("WATCH {key}\r\n").as_bytes())
            .await
            .unwrap();
        let mut reply = [0u8; 5];
        stream.read_exact(&mut reply).await.unwrap();
        assert_eq!(&reply, b"+OK\r\n");
    }

    /// Waits (a bounded time) until `key` is no longer watched.
    async fn released(engine: &Engine, key: &[u8]) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !watched(engine, key) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        false
    }

    #[tokio::test]
    async fn watches_are_released_when_the_connection_goes_away() {
        let engine = Engine::new();
        let server = serve(engine.clone(), "127.0.0.1:0").await.unwrap();
        let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
        watch(&mut stream, "k").await;
        assert!(watched(&engine, b"k"));
        drop(stream);
        assert!(released(&engine, b"k").await);

        // Also when the server stops under a connection.
        let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
        watch(&mut stream, "j").await;
        assert!(watched(&engine, b"j"));
        server.shutdown().await;
        assert!(!watched(&engine, b"j"));
    }

    /// Reads from `stream` until `want` bytes arrived (bounded time).
    async fn read_n(stream: &mut TcpStream, want: usize) -> Vec<u8> {
        let mut out = vec![0u8; want];
        tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut out))
            .await
            .expect("reply in time")
            .expect("reply");
        out
    }

    /// INFO's counts of the bytes the server read and wrote, as
    /// redis-server 7.0.15 counts them on the same exchange: a command's
    /// own bytes are read before it runs, its reply written after; CONFIG
    /// RESETSTAT starts both again.
    #[tokio::test]
    async fn info_counts_the_bytes_read_from_and_written_to_clients() {
        use crate::command::test_util::field_of;
        use crate::resp::test_client;
        test_client::with_clients(Engine::new(), |mut c, _| {
            let net_bytes = |c: &mut test_client::Client| {
                let info = c.call("INFO stats");
                let field = |name| field_of(&info, name);
                (
                    field("total_net_input_bytes"),
                    field("total_net_output_bytes"),
                )
            };
            assert_eq!(c.call("PING"), redis::Value::SimpleString("PONG".into()));
            assert_eq!(net_bytes(&mut c), ("18".into(), "7".into()));
            assert_eq!(c.call("CONFIG RESETSTAT"), redis::Value::Okay);
            assert_eq!(net_bytes(&mut c), ("12".into(), "5".into()));
        })
        .await;
    }

    /// HELLO 3 switches the connection to RESP3 (its reply already a map),
    /// CLIENT INFO says so in a verbatim string, RESP3 has one null; HELLO
    /// 2 goes back (bytes as redis-server 7.0.15 sends them).
    #[tokio::test]
    async fn hello_switches_the_wire_protocol() {
        let server = serve(Engine::new(), "127.0.0.1:0").await.unwrap();
        let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
        stream.write_all(b"HELLO 3\r\n").await.unwrap();
        let head = read_n(&mut stream, 3).await;
        assert_eq!(head, b"%7\r");
        let mut rest = Vec::new();
        while !rest.ends_with(b"modules\r\n*0\r\n") {
            rest.extend(read_n(&mut stream, 1).await);
        }
        let rest = String::from_utf8(rest).unwrap();
        assert!(rest.contains("$5\r\nproto\r\n:3\r\n"), "{rest}");
        stream
            .write_all(b"LPOP nolist 2\r\nZADD z 0.1 m\r\nZSCORE z m\r\nCLIENT INFO\r\n")
            .await
            .unwrap();
        assert_eq!(read_n(&mut stream, 3).await, b"_\r\n");
        assert_eq!(read_n(&mut stream, 4).await, b":1\r\n");
        assert_eq!(read_n(&mut stream, 22).await, b",0.10000000000000001\r\n");
        let mut info = Vec::new();
        while !info.ends_with(b"\n\r\n") {
            info.extend(read_n(&mut stream, 1).await);
        }
        let info = String::from_utf8(info).unwrap();
        assert!(
            info.starts_with('=') && info.contains("\r\ntxt:id="),
            "{info}"
        );
        assert!(info.ends_with(" resp=3\n\r\n"), "{info}");
        stream
            .write_all(b"HELLO 2\r\nLPOP nolist 2\r\nGET nokey\r\nZSCORE z m\r\n")
            .await
            .unwrap();
        assert_eq!(read_n(&mut stream, 4).await, b"*14\r");
        let mut rest = Vec::new();
        while !rest.ends_with(b"modules\r\n*0\r\n") {
            rest.extend(read_n(&mut stream, 1).await);
        }
        assert_eq!(
            read_n(&mut stream, 10 + 26).await,
            b"*-1\r\n$-1\r\n$19\r\n0.10000000000000001\r\n"
        );
        server.shutdown().await;
    }

    /// LRANGE writes its reply straight into the connection's buffer (see
    /// `Store::reply_out`): the same bytes as a typed reply, nothing when
    /// CLIENT REPLY silences it, typed again inside MULTI and scripts, and
    /// errors as errors (bytes as redis-server 7.0.15 sends them).
    #[tokio::test]
    async fn lrange_written_in_place() {
        let server = serve(Engine::new(), "127.0.0.1:0").await.unwrap();
        let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
        stream
            .write_all(
                b"RPUSH l a bb \"\"\r\nLRANGE l 0 -1\r\nLRANGE l -2 5\r\nLRANGE l 2 1\r\n\
                  LRANGE nokey 0 -1\r\nLRANGE l x 1\r\nSET s v\r\nLRANGE s 0 1\r\n\
                  CLIENT REPLY SKIP\r\nLRANGE l 0 -1\r\nMULTI\r\nLRANGE l 0 0\r\nEXEC\r\n\
                  EVAL \"return redis.call('lrange', KEYS[1], 1, 1)\" 1 l\r\n",
            )
            .await
            .unwrap();
        let want: &[u8] = b":3\r\n*3\r\n$1\r\na\r\n$2\r\nbb\r\n$0\r\n\r\n\
            *2\r\n$2\r\nbb\r\n$0\r\n\r\n*0\r\n*0\r\n\
            -ERR value is not an integer or out of range\r\n+OK\r\n\
            -WRONGTYPE Operation against a key holding the wrong kind of value\r\n\
            +OK\r\n+QUEUED\r\n*1\r\n*1\r\n$1\r\na\r\n*1\r\n$2\r\nbb\r\n";
        assert_eq!(
            String::from_utf8_lossy(&read_n(&mut stream, want.len()).await),
            String::from_utf8_lossy(want)
        );
        server.shutdown().await;
    }

    /// CLIENT LIST shows every connection with Redis's fields; CLIENT KILL
    /// closes another connection (new form: the count) and, in the old
    /// form, may close the caller after its reply.
    #[tokio::test]
    async fn client_list_and_kill() {
        let engine = Engine::new();
        let server = serve(engine.clone(), "127.0.0.1:0").await.unwrap();
        let client = redis::Client::open(server.url()).unwrap();
        let mut a = client.get_multiplexed_async_connection().await.unwrap();
        let mut b = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg("bee")
            .query_async(&mut b)
            .await
            .unwrap();
        let b_id: i64 = redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut b)
            .await
            .unwrap();
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query_async(&mut a)
            .await
            .unwrap();
        assert_eq!(list.lines().count(), 2, "{list}");
        let b_line = list
            .lines()
            .find(|l| l.starts_with(&format!("id={b_id} ")))
            .unwrap();
        assert!(b_line.contains(" name=bee "), "{b_line}");
        assert!(b_line.contains(" db=0 "), "{b_line}");
        assert!(
            b_line.ends_with(" user=default redir=-1 resp=2"),
            "{b_line}"
        );
        // b's last command; a's own line shows the command in progress and
        // its request, still in the query buffer, as Redis does.
        assert!(
            b_line.contains(" qbuf=0 ") && b_line.contains(" cmd=client|id "),
            "{b_line}"
        );
        let a_line = list
            .lines()
            .find(|l| !l.starts_with(&format!("id={b_id} ")))
            .unwrap();
        // *2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n
        assert!(
            a_line.contains(" qbuf=26 ") && a_line.contains(" cmd=client|list "),
            "{a_line}"
        );
        let own: String = redis::cmd("CLIENT")
            .arg("INFO")
            .query_async(&mut b)
            .await
            .unwrap();
        assert!(
            own.contains(" qbuf=26 ") && own.contains(" cmd=client|info "),
            "{own}"
        );
        let info: String = redis::cmd("INFO")
            .arg("clients")
            .query_async(&mut a)
            .await
            .unwrap();
        assert!(info.contains("connected_clients:2\r\n"), "{info}");

        let killed: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(b_id)
            .query_async(&mut a)
            .await
            .unwrap();
        assert_eq!(killed, 1);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let list: String = redis::cmd("CLIENT")
                .arg("LIST")
                .query_async(&mut a)
                .await
                .unwrap();
            if list.lines().count() == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "B was not closed: {list}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // SKIPME yes by default: the caller survives its own filter.
        let killed: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("normal")
            .query_async(&mut a)
            .await
            .unwrap();
        assert_eq!(killed, 0);
        server.shutdown().await;
    }

    use crate::command::blocking::until_blocked;

    async fn read_reply(stream: &mut TcpStream, expected: &[u8]) {
        let mut reply = vec![0u8; expected.len()];
        tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut reply))
            .await
            .expect("no reply")
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&reply),
            String::from_utf8_lossy(expected)
        );
    }

    /// A blocked connection waits without stopping the others; the
    /// requests pipelined after its blocking command run once it is
    /// served; one that goes away while blocked leaves the queues.
    #[tokio::test]
    async fn blocked_connections() {
        let engine = Engine::new();
        let server = serve(engine.clone(), "127.0.0.1:0").await.unwrap();
        let mut waiter = TcpStream::connect(server.local_addr()).await.unwrap();
        waiter.write_all(b"BLPOP k 0\r\nPING\r\n").await.unwrap();
        until_blocked(&engine, 1).await;
        let mut pusher = TcpStream::connect(server.local_addr()).await.unwrap();
        pusher.write_all(b"RPUSH k v\r\n").await.unwrap();
        read_reply(&mut pusher, b":1\r\n").await;
        read_reply(&mut waiter, b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n+PONG\r\n").await;

        // Gone while blocked: out of the queues, the push stays.
        let mut gone = TcpStream::connect(server.local_addr()).await.unwrap();
        gone.write_all(b"BRPOPLPUSH k d 0\r\n").await.unwrap();
        until_blocked(&engine, 1).await;
        drop(gone);
        until_blocked(&engine, 0).await;
        pusher.write_all(b"RPUSH k w\r\nLLEN k\r\n").await.unwrap();
        read_reply(&mut pusher, b":1\r\n:1\r\n").await;

        // Timed out, BLMOVE too, the null array as Redis sends it; in
        // MULTI, BLMOVE's nil is the null bulk string.
        waiter
            .write_all(b"BLMOVE nokey d LEFT LEFT 0.01\r\nMULTI\r\nBLMOVE nokey d LEFT LEFT 0\r\nBLPOP nokey 0\r\nEXEC\r\n")
            .await
            .unwrap();
        read_reply(
            &mut waiter,
            b"*-1\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n$-1\r\n*-1\r\n",
        )
        .await;
        server.shutdown().await;
    }

    /// CLIENT UNBLOCK ends a wait as a timeout or with an error; CLIENT
    /// LIST flags the blocked client `b`.
    #[tokio::test]
    async fn client_unblock() {
        let engine = Engine::new();
        let server = serve(engine.clone(), "127.0.0.1:0").await.unwrap();
        let mut waiter = TcpStream::connect(server.local_addr()).await.unwrap();
        waiter.write_all(b"CLIENT ID\r\n").await.unwrap();
        read_reply(&mut waiter, b":1\r\n").await;
        let mut other = TcpStream::connect(server.local_addr()).await.unwrap();
        for (reason, reply) in [
            ("", &b"*-1\r\n"[..]),
            ("TIMEOUT", b"*-1\r\n"),
            (
                "ERROR",
                b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n",
            ),
        ] {
            waiter.write_all(b"BZPOPMIN z 0\r\n").await.unwrap();
            until_blocked(&engine, 1).await;
            other
                .write_all(format!("CLIENT UNBLOCK 1 {reason}\r\n").as_bytes())
                .await
                .unwrap();
            read_reply(&mut other, b":1\r\n").await;
            read_reply(&mut waiter, reply).await;
        }
        // The UNBLOCKED error is an error reply, and fails the call.
        let mut c = engine.connection();
        let info = |c: &mut crate::Connection, section: &str| match c
            .execute(&[b"INFO", section.as_bytes()])
        {
            redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("{other:?}"),
        };
        assert!(info(&mut c, "errorstats").contains("errorstat_UNBLOCKED:count=1\r\n"));
        assert!(info(&mut c, "commandstats").contains("cmdstat_bzpopmin:calls=3,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=1\r\n"));
        other
            .write_all(b"CLIENT UNBLOCK 1\r\nCLIENT UNBLOCK 1 x\r\n")
            .await
            .unwrap();
        read_reply(
            &mut other,
            b":0\r\n-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n",
        )
        .await;
    }

    /// A script past `busy-reply-threshold`: other connections (new ones
    /// too) get BUSY, FUNCTION KILL is refused for an EVAL, SCRIPT KILL
    /// stops it, and the store is served again. One worker: the script's
    /// hook must hand it over for anything else to run.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn busy_script_is_killed() {
        let engine = Engine::new();
        let server = serve(engine.clone(), "127.0.0.1:0").await.unwrap();
        let client = redis::Client::open(server.url()).unwrap();
        let mut a = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("busy-reply-threshold")
            .arg(10)
            .query_async(&mut a)
            .await
            .unwrap();
        let looping = tokio::spawn(async move {
            redis::cmd("EVAL")
                .arg("while true do end")
                .arg(0)
                .query_async::<redis::Value>(&mut a)
                .await
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut b = client.get_multiplexed_async_connection().await.unwrap();
        let busy = redis::cmd("PING")
            .query_async::<String>(&mut b)
            .await
            .unwrap_err();
        assert_eq!(busy.code(), Some("BUSY"), "{busy}");
        // EXEC, even outside MULTI, is refused as redis-server refuses it
        // (checked once the script is killed: a failed check must not
        // leave it looping).
        let aborted = redis::cmd("EXEC")
            .query_async::<()>(&mut b)
            .await
            .unwrap_err();
        let refused = redis::cmd("FUNCTION")
            .arg("KILL")
            .query_async::<()>(&mut b)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Some("BUSY"), "{refused}");
        let _: () = redis::cmd("SCRIPT")
            .arg("KILL")
            .query_async(&mut b)
            .await
            .unwrap();
        let killed = looping.await.unwrap().unwrap_err();
        assert_eq!(aborted.code(), Some("EXECABORT"), "{aborted}");
        assert!(aborted.to_string().contains("BUSY"), "{aborted}");
        assert!(
            killed.to_string().contains("Script killed by user"),
            "{killed}"
        );
        let pong: String = redis::cmd("PING").query_async(&mut b).await.unwrap();
        assert_eq!(pong, "PONG");
        server.shutdown().await;
    }
}
