//! The order in which connections reach the engine: the order their bytes
//! arrived, across connections, as Redis's one event loop serves them.
//!
//! # Why connections need turns
//! Each connection is a tokio task that reads its socket and runs what it
//! read under the store's lock. Left alone, the runtime decides which of
//! two readable connections locks first: a multi-thread runtime runs the
//! task it woke last first (its LIFO slot), two workers race for the
//! lock, and a task that finds bytes waiting when it comes back from its
//! last reply reads them at once, ahead of bytes that reached another
//! socket earlier but that the I/O driver has not reported yet. A client
//! that sends `XREAD BLOCK 0 STREAMS s $` while another then sends `SET s
//! v` saw the SET served first (WRONGTYPE) in every round of
//! `resp_order`'s test on one worker, where Redis serves the XREAD first.
//!
//! # Stamps
//! The I/O driver reports readable sockets in the order the kernel queued
//! them (epoll's ready list, edge-triggered) and wakes their readers in
//! that order. A connection waits for its socket through a waker (the
//! [`Stamper`]) that takes a stamp from the server's [`Line`] when woken:
//! stamps count arrivals in the driver's order. Every read drains the
//! socket and registers the stamper again before it returns, so the
//! stamper stays registered while the connection runs its requests,
//! writes its replies or waits on BLPOP: bytes that arrive then are
//! stamped when the driver reports them, however late the connection's
//! task comes to read them, and a read never finds unreported bytes that
//! would let it jump the line. (The stamper is first registered when the
//! connection's task first runs: bytes that reach a new connection
//! before that are stamped when read.)
//!
//! What a read returns takes the stamp of its bytes along; the connection
//! waits ([`Place::turn`]) until no smaller stamp is left, then locks the
//! store and gives the stamp back ([`Place::leave`]): the next in line
//! then waits for the lock itself, not for its task to be scheduled, so
//! the store is locked in stamp order on any runtime, with any number of
//! workers. Bytes that arrive meanwhile get a stamp of their own.
//!
//! Nobody waits for a connection that will not come: a wake with nothing
//! to read (an edge for bytes already read) gives its stamp back, and so
//! does a connection that closes. A connection that waits for something
//! else than its input ([`Place::step_away`]: a client that does not read
//! its replies, a blocking command's wait) gives its stamps back and takes
//! none meanwhile; what it read then runs when it comes back.
//!
//! A script past `busy-reply-threshold` holds the store but no stamp: the
//! next connection in line waits for the lock, gets BUSY instead and gives
//! its stamp back, and the ones after it do the same (and may SCRIPT KILL
//! the script).
//!
//! # Why not one dispatching task
//! A queue that the connections' tasks feed gets requests in the order
//! those tasks run, which is the very order to be put right; and one task
//! running every request would take over the connections' blocked waits,
//! Pub/Sub pushes and writes. Stamps leave the connection tasks as they
//! are, for a few uncontended lock operations per read (and the read that
//! drains the socket, which the next read made anyway).

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use parking_lot::Mutex;
use tokio::net::TcpStream;

/// Bytes one read takes before it lets its connection run them: a client
/// that sends without pause must not keep its connection reading forever.
/// What is left is read the next time, stamped then.
const DRAIN_LIMIT: usize = 256 * 1024;

/// The stamps of one server's connections.
#[derive(Debug, Default)]
pub(super) struct Line {
    stamps: Mutex<Stamps>,
}

#[derive(Debug, Default)]
struct Stamps {
    /// The last stamp handed out (0 stands for "no stamp").
    last: u64,
    /// The stamps not given back, smallest first, each with the waker of
    /// its connection once that waits for its turn.
    held: VecDeque<(u64, Option<Waker>)>,
}

/// A connection's place in the line, shared with the waker it reads
/// through. Its fields change under the line's lock.
#[derive(Debug)]
struct Seat {
    line: Arc<Line>,
    /// The stamp of the bytes that arrived and are not read yet, 0 for
    /// none.
    stamp: AtomicU64,
    /// It waits for something else than its input: it takes no stamp.
    away: AtomicBool,
}

impl Line {
    /// Stamps `seat` unless it holds a stamp or is away.
    fn stamp(&self, seat: &Seat) {
        let mut stamps = self.stamps.lock();
        if seat.stamp.load(Ordering::Relaxed) != 0 || seat.away.load(Ordering::Relaxed) {
            return;
        }
        seat.stamp.store(stamps.next(), Ordering::Relaxed);
    }

    /// Takes `seat`'s stamp of unread bytes back if it is still `stamp`.
    fn give_back(&self, seat: &Seat, stamp: u64) {
        let mut stamps = self.stamps.lock();
        if seat.stamp.load(Ordering::Relaxed) != stamp {
            return;
        }
        seat.stamp.store(0, Ordering::Relaxed);
        let next = release(&mut stamps, stamp);
        drop(stamps);
        if let Some(next) = next {
            next.wake();
        }
    }

    /// Takes back `served`, a stamp of bytes a connection has read.
    fn leave(&self, served: u64) {
        let next = release(&mut self.stamps.lock(), served);
        if let Some(next) = next {
            next.wake();
        }
    }

    /// The stamp that bytes `seat` has just read take along: the one they
    /// got on arrival, or a new one for bytes that arrived before the
    /// stamper was registered; none while `seat` is away.
    fn take_read(&self, seat: &Seat) -> u64 {
        let mut stamps = self.stamps.lock();
        if seat.away.load(Ordering::Relaxed) {
            return 0;
        }
        match seat.stamp.swap(0, Ordering::Relaxed) {
            0 => stamps.next(),
            stamp => stamp,
        }
    }

    /// Sets whether `seat` is away; going away, its stamp goes back.
    fn set_away(&self, seat: &Seat, away: bool) {
        let mut stamps = self.stamps.lock();
        seat.away.store(away, Ordering::Relaxed);
        let stamp = if away {
            seat.stamp.swap(0, Ordering::Relaxed)
        } else {
            0
        };
        let next = (stamp != 0).then(|| release(&mut stamps, stamp)).flatten();
        drop(stamps);
        if let Some(next) = next {
            next.wake();
        }
    }

    /// Ready when `stamp` (of bytes read) is the smallest.
    fn poll_turn(&self, stamp: u64, cx: &mut Context<'_>) -> Poll<()> {
        let mut stamps = self.stamps.lock();
        let mut held = stamps.held.iter_mut();
        if held.next().is_none_or(|(first, _)| *first == stamp) {
            return Poll::Ready(());
        }
        if let Some((_, waker)) = held.find(|(s, _)| *s == stamp) {
            match waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *waker = Some(cx.waker().clone()),
            }
        }
        Poll::Pending
    }
}

impl Stamps {
    /// A new stamp, the last in line.
    fn next(&mut self) -> u64 {
        self.last += 1;
        self.held.push_back((self.last, None));
        self.last
    }
}

/// Takes `stamp` out of `stamps`; the waker of the connection whose turn
/// it becomes, to be woken once the lock is let go.
fn release(stamps: &mut Stamps, stamp: u64) -> Option<Waker> {
    let at = stamps.held.iter().position(|(s, _)| *s == stamp)?;
    stamps.held.remove(at);
    if at > 0 {
        return None;
    }
    stamps.held.front_mut().and_then(|(_, waker)| waker.take())
}

/// The waker a connection's socket wakes when bytes arrive: stamps the
/// connection, then wakes its task.
struct Stamper {
    seat: Arc<Seat>,
    task: Waker,
}

impl Wake for Stamper {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.seat.line.stamp(&self.seat);
        self.task.wake_by_ref();
    }
}

/// One connection's place in its server's [`Line`]; its stamp goes back
/// when it is dropped.
#[derive(Debug)]
pub(super) struct Place {
    seat: Arc<Seat>,
    /// The [`Stamper`] of the task's waker, and that waker: made again
    /// only when the task's waker changes (a task keeps its waker).
    stamper: Option<(Waker, Waker)>,
    /// The stamp of the bytes read and not run yet, until
    /// [`Place::leave`] gives it back (0 for none).
    serving: u64,
}

impl Place {
    /// A connection joins `line`, without a stamp.
    pub(super) fn new(line: &Arc<Line>) -> Self {
        Place {
            seat: Arc::new(Seat {
                line: Arc::clone(line),
                stamp: AtomicU64::new(0),
                away: AtomicBool::new(false),
            }),
            stamper: None,
            serving: 0,
        }
    }

    /// Reads what `stream` has into `input`, waiting for bytes if there
    /// are none, as `read_buf` does (0 at the end of the stream): all of
    /// it, up to [`DRAIN_LIMIT`], so that the next bytes are stamped when
    /// the driver reports them.
    pub(super) async fn read(
        &mut self,
        stream: &TcpStream,
        input: &mut Vec<u8>,
    ) -> io::Result<usize> {
        let Place { seat, stamper, .. } = self;
        let read = poll_fn(|cx| poll_read(seat, stamper, cx, stream, input)).await?;
        if read > 0 {
            let stamp = seat.line.take_read(seat);
            match self.serving {
                0 => self.serving = stamp,
                // Bytes read before, not run yet, keep their place.
                _ if stamp != 0 => seat.line.leave(stamp),
                _ => {}
            }
        }
        Ok(read)
    }

    /// Waits for the connection's turn to lock the store: at once if it
    /// read nothing that waits to be ordered.
    pub(super) async fn turn(&self) {
        if self.serving != 0 {
            poll_fn(|cx| self.seat.line.poll_turn(self.serving, cx)).await;
        }
    }

    /// Gives back the stamp of the bytes read (the connection holds the
    /// store's lock, or needs none): the next connection's turn comes.
    pub(super) fn leave(&mut self) {
        let serving = std::mem::take(&mut self.serving);
        if serving != 0 {
            self.seat.line.leave(serving);
        }
    }

    /// The connection waits for something else than its input: nobody
    /// waits for it meanwhile, and it takes no stamp.
    pub(super) fn step_away(&mut self) {
        self.leave();
        self.seat.line.set_away(&self.seat, true);
    }

    /// The connection reads and runs its input again.
    pub(super) fn come_back(&self) {
        self.seat.line.set_away(&self.seat, false);
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.step_away();
    }
}

/// One poll of [`Place::read`], with the task's waker wrapped in the
/// seat's [`Stamper`].
fn poll_read(
    seat: &Arc<Seat>,
    stamper: &mut Option<(Waker, Waker)>,
    cx: &mut Context<'_>,
    stream: &TcpStream,
    input: &mut Vec<u8>,
) -> Poll<io::Result<usize>> {
    let waker = match stamper {
        Some((task, waker)) if task.will_wake(cx.waker()) => waker,
        _ => {
            let task = cx.waker().clone();
            let waker = Waker::from(Arc::new(Stamper {
                seat: Arc::clone(seat),
                task: task.clone(),
            }));
            &stamper.insert((task, waker)).1
        }
    };
    let mut stamping = Context::from_waker(waker);
    // A stamp held now came from the wake that led to this poll.
    let woken_with = seat.stamp.load(Ordering::Relaxed);
    let mut read = 0;
    loop {
        match stream.poll_read_ready(&mut stamping) {
            Poll::Ready(Ok(())) => {
                input.reserve(super::READ_CHUNK);
                match stream.try_read_buf(input) {
                    Ok(n) => {
                        read += n;
                        // At the end of the stream, or enough for now.
                        if n == 0 || read >= DRAIN_LIMIT {
                            return Poll::Ready(Ok(read));
                        }
                    }
                    // Drained: the next poll registers the stamper.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            // Drained, and the stamper waits for the next bytes.
            Poll::Pending if read > 0 => return Poll::Ready(Ok(read)),
            Poll::Pending => {
                // Woken with nothing to read: that wake's stamp goes back
                // (one a wake gives during this poll stays: its bytes
                // are there for the next poll).
                if woken_with != 0 {
                    seat.line.give_back(seat, woken_with);
                }
                return Poll::Pending;
            }
        }
    }
}
