//! MONITOR: every command the engine runs, as one line of text, to every
//! client that asked.
//!
//! The lines are Redis 7.0.15's (`replicationFeedMonitors`):
//! `1700000000.123456 [0 127.0.0.1:5555] "set" "k" "v"`, the wall-clock
//! time in µs, the database the command ran in (after it: SELECT shows
//! its new one), the client's address (`lua` for a script's calls), and
//! the arguments quoted as Redis's `sdscatrepr` quotes them, secrets
//! "(redacted)". A command is fed once it ran, failed or not, and not if
//! Redis refused it before running it (unknown, wrong arity, NOAUTH,
//! queued in MULTI); commands flagged `admin` (CONFIG, DEBUG, CLIENT
//! LIST...) are never shown. EVAL, EVALSHA and FCALL are fed before their
//! scripts' calls, EXEC after the commands it ran, as in Redis.
//!
//! The [`Monitors`] live in the store, behind the engine's lock, so a
//! command feeds them where it runs; each monitor reads its lines from an
//! unbounded queue (feeding never waits for a reader while the lock is
//! held, as Pub/Sub's delivery). A RESP connection becomes one with
//! MONITOR; in process, [`Engine::monitor`] makes one.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;

use crate::command_table::Meta;
use crate::Engine;

/// One line fed to every monitor, without the `+` and CRLF of the wire.
pub(crate) type Line = Arc<str>;

/// The receiving end of one monitor's lines.
pub(crate) type Inbox = mpsc::UnboundedReceiver<Line>;

/// Who ran a command, as the line shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source<'a> {
    /// A client, by its address (`ip:port`).
    Client(&'a str),
    /// A script's call (`redis.call`): Redis's Lua client, shown as `lua`.
    Script,
}

/// Every monitor of an engine.
#[derive(Debug, Default)]
pub(crate) struct Monitors {
    next_id: u64,
    sinks: Vec<(u64, mpsc::UnboundedSender<Line>)>,
}

impl Monitors {
    /// Whether nobody monitors: the common case, checked before anything
    /// is built.
    pub(crate) fn is_empty(&self) -> bool {
        self.sinks.is_empty()
    }

    /// A new monitor: its id (for [`Self::remove`]) and its lines.
    pub(crate) fn add(&mut self) -> (u64, Inbox) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.next_id += 1;
        self.sinks.push((self.next_id, tx));
        (self.next_id, rx)
    }

    /// Stops feeding the monitor `id` (RESET, a closed connection).
    pub(crate) fn remove(&mut self, id: u64) {
        self.sinks.retain(|(i, _)| *i != id);
    }

    /// Feeds the command `args` that `source` ran in database `db` to
    /// every monitor, unless `meta` (the command's description) keeps it
    /// from them (`admin`, `skip_monitor`). A monitor whose reader is
    /// gone is dropped.
    pub(crate) fn feed(&mut self, meta: &Meta, db: usize, source: Source<'_>, args: &[&[u8]]) {
        if !self.sinks.is_empty() {
            self.feed_flagged(meta, db, source, args);
        }
    }

    /// [`Self::feed`] with monitors: out of the path every command takes
    /// when there are none.
    #[cold]
    #[inline(never)]
    fn feed_flagged(&mut self, meta: &Meta, db: usize, source: Source<'_>, args: &[&[u8]]) {
        if meta.has_flag("admin") || meta.has_flag("skip_monitor") {
            return;
        }
        self.feed_always(db, source, args);
    }

    /// [`Self::feed`] without the flags' say: the commands Redis feeds
    /// itself at their own moment (EVAL and FCALL before their scripts
    /// run).
    pub(crate) fn feed_always(&mut self, db: usize, source: Source<'_>, args: &[&[u8]]) {
        if !self.sinks.is_empty() {
            self.send_line(db, source, args);
        }
    }

    /// Sends the line of `args` to every monitor (there are some).
    #[cold]
    #[inline(never)]
    fn send_line(&mut self, db: usize, source: Source<'_>, args: &[&[u8]]) {
        let line: Line = line(SystemTime::now(), db, source, args).into();
        self.sinks.retain(|(_, tx)| tx.send(line.clone()).is_ok());
    }
}

/// The line of one command.
fn line(at: SystemTime, db: usize, source: Source<'_>, args: &[&[u8]]) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut out = format!("{}.{:06} [{db} ", since.as_secs(), since.subsec_micros());
    match source {
        Source::Client(addr) => out.push_str(addr),
        Source::Script => out.push_str("lua"),
    }
    out.push(']');
    let redacted = crate::redact::redacted_positions(args);
    for (i, arg) in args.iter().enumerate() {
        out.push(' ');
        if redacted(i) {
            out.push_str("\"(redacted)\"");
        } else {
            repr(&mut out, arg);
        }
    }
    out
}

/// Redis's `sdscatrepr`: the bytes in double quotes, `\` and `"` escaped,
/// `\n \r \t \a \b` spelled so, other unprintable bytes as `\xHH`.
pub(crate) fn repr(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
}

/// An in-process monitor: every command the engine's clients run, as
/// MONITOR shows it over RESP (the line without its `+`).
///
/// Made by [`Engine::monitor`]. Receive with [`recv`](Self::recv) (async),
/// [`try_recv`](Self::try_recv), or as a [`Stream`](futures_core::Stream).
/// Lines wait in an unbounded queue; dropping the handle stops the feed.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use redmodel_memory::Engine;
/// let engine = Engine::new();
/// let mut monitor = engine.monitor();
/// engine.connection().execute(&[b"SET", b"k", b"v"]);
/// let line = monitor.recv().await.unwrap();
/// assert!(line.ends_with(r#" [0 ?:0] "SET" "k" "v""#), "{line}");
/// # }
/// ```
#[derive(Debug)]
pub struct Monitor {
    engine: Engine,
    id: u64,
    inbox: Inbox,
}

impl Monitor {
    /// Waits for the next line.
    pub async fn recv(&mut self) -> Option<String> {
        self.inbox.recv().await.map(|line| line.to_string())
    }

    /// The next line already fed, if any.
    pub fn try_recv(&mut self) -> Option<String> {
        self.inbox.try_recv().ok().map(|line| line.to_string())
    }
}

impl futures_core::Stream for Monitor {
    type Item = String;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<String>> {
        self.get_mut()
            .inbox
            .poll_recv(cx)
            .map(|line| line.map(|l| l.to_string()))
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.engine.shared.store.lock().monitors.remove(self.id);
    }
}

impl Engine {
    /// A new in-process monitor: see [`Monitor`].
    pub fn monitor(&self) -> Monitor {
        let (id, inbox) = self.shared.store.lock().monitors.add();
        Monitor {
            engine: self.clone(),
            id,
            inbox,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// What a monitor got so far, each line without its time.
    fn seen(monitor: &mut Monitor) -> Vec<String> {
        std::iter::from_fn(|| monitor.try_recv())
            .map(|line| {
                line.split_once(' ')
                    .map(|(_, rest)| rest.to_string())
                    .unwrap_or(line)
            })
            .collect()
    }

    /// Observed on redis-server 7.0.15 (with a client's address where the
    /// in-process client shows `?:0`).
    #[test]
    fn an_in_process_monitor_sees_what_redis_shows_in_its_order() {
        let engine = Engine::new();
        let mut monitor = engine.monitor();
        let mut c = engine.connection();
        let lines: &[&[&[u8]]] = &[
            &[b"SET", b"k", b"v"],
            &[b"MULTI"],
            &[b"INCR", b"n"],
            &[b"NOSUCH"],
            &[b"EXEC"],
            &[
                b"EVAL",
                b"redis.call('select', 2) return redis.call('get', 'k')",
                b"0",
            ],
            &[b"AUTH", b"password"],
            &[b"CONFIG", b"GET", b"maxmemory"],
            &[b"GET"],
            &[b"SELECT", b"1"],
            &[b"MONITOR"],
        ];
        for line in lines {
            c.execute(line);
        }
        assert_eq!(
            seen(&mut monitor),
            [
                r#"[0 ?:0] "SET" "k" "v""#,
                r#"[0 ?:0] "MULTI""#,
                r#"[0 ?:0] "EXEC""#,
                r#"[0 ?:0] "EVAL" "redis.call('select', 2) return redis.call('get', 'k')" "0""#,
                r#"[2 lua] "select" "2""#,
                r#"[2 lua] "get" "k""#,
                r#"[0 ?:0] "AUTH" "(redacted)""#,
                r#"[1 ?:0] "SELECT" "1""#,
            ]
        );
        c.execute(&[b"MULTI"]);
        c.execute(&[b"SET", b"a", b"1"]);
        c.execute(&[b"EXEC"]);
        assert_eq!(
            seen(&mut monitor),
            [
                r#"[1 ?:0] "MULTI""#,
                r#"[1 ?:0] "SET" "a" "1""#,
                r#"[1 ?:0] "EXEC""#
            ]
        );
        drop(monitor);
        assert!(engine.shared.store.lock().monitors.is_empty());
    }

    #[test]
    fn lines_quote_as_redis_does() {
        let at = UNIX_EPOCH + Duration::from_micros(1_700_000_000_000_123);
        let args: [&[u8]; 3] = [b"SET", b"a\"b\\", b"\x00\n\x7f\xc3 \x07"];
        assert_eq!(
            line(at, 3, Source::Client("127.0.0.1:5555"), &args),
            r#"1700000000.000123 [3 127.0.0.1:5555] "SET" "a\"b\\" "\x00\n\x7f\xc3 \a""#
        );
        let args: [&[u8]; 3] = [b"hello", b"auth", b"x"];
        assert_eq!(
            line(at, 0, Source::Script, &args[..2]),
            r#"1700000000.000123 [0 lua] "hello" "auth""#
        );
        let args: [&[u8]; 3] = [b"auth", b"user", b"pass"];
        assert_eq!(
            line(at, 0, Source::Script, &args),
            r#"1700000000.000123 [0 lua] "auth" "(redacted)" "(redacted)""#
        );
    }
}
