//! CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE, as Redis 7.0.15
//! pauses clients: while a pause lasts, a client's command waits before
//! it runs (its connection waits, the engine does not), every command in
//! ALL mode, in WRITE mode only those that may change data (see
//! [`ClientPause::holds`]). A pause also pauses expiry, as in Redis: the
//! active cycle does not run, and an expired key that a read meets is
//! seen as gone but kept until the pause ends.
//!
//! The state lives in the store; the clients (RESP connections, the
//! in-process `Connection`) ask [`ClientPause::holds`] before running a
//! command, and wait on [`ClientPause::changed`] or the pause's end.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::command_table;

/// What a pause holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Mode {
    /// Commands that may change data.
    Write,
    /// Every command.
    All,
}

/// The clients' pause, if one is on.
#[derive(Debug, Default)]
pub(crate) struct ClientPause {
    /// The pause's end (Unix ms) and what it holds back.
    on: Option<(i64, Mode)>,
    /// Wakes the clients that wait when the pause is lifted.
    changed: Arc<Notify>,
}

/// The commands Redis flags `may_replicate` (COMMAND INFO does not show
/// that flag): a WRITE pause holds them back as it holds writes.
const MAY_REPLICATE: &[&str] = &["eval", "evalsha", "fcall", "publish", "spublish", "pfcount"];

impl ClientPause {
    /// CLIENT PAUSE: pauses until `end` (Unix ms); a pause already on is
    /// only extended, to the later end and the wider mode, as Redis's
    /// `pauseClients` keeps the stricter of the two.
    pub(crate) fn pause(&mut self, end: i64, mode: Mode) {
        self.on = Some(match self.on {
            Some((old_end, old_mode)) => (old_end.max(end), old_mode.max(mode)),
            None => (end, mode),
        });
    }

    /// CLIENT UNPAUSE: ends the pause; the waiting clients go on.
    pub(crate) fn unpause(&mut self) {
        self.on = None;
        self.changed.notify_waiters();
    }

    /// Whether a pause was set and not lifted (it may have ended by time:
    /// see [`Self::ended`]). Cheap: asked before every command, before the
    /// clock is read.
    pub(crate) fn is_on(&self) -> bool {
        self.on.is_some()
    }

    /// Whether the pause set has ended by time at `now`.
    pub(crate) fn ended(&self, now: i64) -> bool {
        self.on.is_some_and(|(end, _)| end <= now)
    }

    /// The pause on at `now`, if any.
    fn active(&self, now: i64) -> Option<(i64, Mode)> {
        self.on.filter(|&(end, _)| end > now)
    }

    /// Whether expiry is paused at `now` (a paused server changes no data,
    /// not even by expiring keys).
    pub(crate) fn expiry_paused(&self, now: i64) -> bool {
        self.active(now).is_some()
    }

    /// Until when (Unix ms) the command `args` must wait at `now`: every
    /// command in ALL mode; in WRITE mode a command flagged `write`, one
    /// Redis flags `may_replicate` (scripts, PUBLISH, PFCOUNT), or an
    /// EXEC whose queue holds one (`queued_write`, asked only then).
    /// `None`: it runs now.
    pub(crate) fn holds(
        &self,
        args: &[&[u8]],
        queued_write: impl FnOnce() -> bool,
        now: i64,
    ) -> Option<i64> {
        let (end, mode) = self.active(now)?;
        match mode {
            Mode::All => Some(end),
            Mode::Write => {
                let exec = args
                    .first()
                    .is_some_and(|n| n.eq_ignore_ascii_case(b"exec"));
                (may_change_data(args) || (exec && queued_write())).then_some(end)
            }
        }
    }

    /// What the waiting clients wait on (besides the pause's end). Take
    /// its `notified()` before letting go of the store's lock, so that an
    /// UNPAUSE in between is not missed.
    pub(crate) fn changed(&self) -> Arc<Notify> {
        Arc::clone(&self.changed)
    }
}

impl super::Store {
    /// CLIENT PAUSE until `end` (see [`ClientPause::pause`]); expiry
    /// pauses as long, in every database.
    pub(crate) fn pause_clients(&mut self, end: i64, mode: Mode) {
        self.pause.pause(end, mode);
        let until = self.pause.on.map_or(end, |(until, _)| until);
        for ks in &mut self.dbs {
            ks.pause_expiry(until);
        }
    }

    /// CLIENT UNPAUSE: the waiting clients go on, and keys expire again.
    pub(crate) fn unpause_clients(&mut self) {
        self.pause.unpause();
        for ks in &mut self.dbs {
            ks.pause_expiry(0);
        }
    }
}

/// Whether `args` is a command a WRITE pause holds back (see
/// [`ClientPause::holds`]).
pub(crate) fn may_change_data(args: &[&[u8]]) -> bool {
    let Some(meta) = command_table::of_line(args) else {
        return false;
    };
    meta.has_flag("write") || MAY_REPLICATE.contains(&meta.name)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use redis::Value;

    use crate::Engine;

    fn run(c: &mut crate::Connection, line: &str) -> Value {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        c.execute(&args)
    }

    /// A WRITE pause lets reads through at once and holds a write back
    /// until CLIENT UNPAUSE, on its own thread: the engine serves the
    /// others meanwhile.
    #[test]
    fn a_write_pause_holds_writers_until_unpause() {
        let e = Engine::new();
        let mut c = e.connection();
        run(&mut c, "SET k 1");
        assert_eq!(run(&mut c, "CLIENT PAUSE 100000 WRITE"), Value::Okay);
        let mut writer = e.connection();
        let started = Instant::now();
        let handle = std::thread::spawn(move || run(&mut writer, "SET k 2"));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!handle.is_finished(), "the write ran during the pause");
        assert_eq!(run(&mut c, "GET k"), Value::BulkString(b"1".to_vec()));
        assert_eq!(run(&mut c, "CLIENT UNPAUSE"), Value::Okay);
        assert_eq!(handle.join().ok(), Some(Value::Okay));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(run(&mut c, "GET k"), Value::BulkString(b"2".to_vec()));
    }

    /// An ALL pause holds every command, a reader's too, until it ends by
    /// itself; an async client waits without its thread.
    #[tokio::test]
    async fn an_all_pause_holds_readers_until_it_ends() {
        let e = Engine::new();
        let mut c = e.connection();
        assert_eq!(run(&mut c, "CLIENT PAUSE 300 ALL"), Value::Okay);
        let mut reader = e.connection();
        let started = Instant::now();
        let reply: Value = redis::cmd("GET")
            .arg("k")
            .query_async(&mut reader)
            .await
            .unwrap_or(Value::Okay);
        assert_eq!(reply, Value::Nil);
        assert!(started.elapsed() >= Duration::from_millis(250));
    }

    /// `Engine::atomically` waits for a WRITE pause as a script does.
    #[test]
    fn atomically_waits_for_a_write_pause() {
        let e = Engine::new();
        let mut c = e.connection();
        run(&mut c, "CLIENT PAUSE 200 WRITE");
        let started = Instant::now();
        let reply = e.atomically(0, |tx| tx.call(&[b"SET", b"k", b"v"]));
        assert_eq!(reply, Value::Okay);
        assert!(started.elapsed() >= Duration::from_millis(150));
    }

    /// A pipeline stops at the command a pause holds back: the reads
    /// before it have run, the rest wait for the pause's end.
    #[tokio::test]
    async fn a_pipeline_waits_at_the_first_held_command() {
        let e = Engine::new();
        let mut c = e.connection();
        assert_eq!(run(&mut c, "CLIENT PAUSE 300 WRITE"), Value::Okay);
        let mut client = e.connection();
        let started = Instant::now();
        let replies: Vec<Value> = redis::pipe()
            .cmd("GET")
            .arg("k")
            .cmd("SET")
            .arg("k")
            .arg("v")
            .cmd("GET")
            .arg("k")
            .query_async(&mut client)
            .await
            .unwrap_or_default();
        assert_eq!(
            replies,
            vec![Value::Nil, Value::Okay, Value::BulkString(b"v".to_vec())]
        );
        assert!(started.elapsed() >= Duration::from_millis(250));
    }

    /// A paused server deletes no expired key, in the active cycle or
    /// when a read meets it: the read sees it gone, DBSIZE still counts
    /// it, until the pause ends.
    #[test]
    fn a_pause_pauses_expiry() {
        let clock = crate::ManualClock::new(1_000_000);
        let e = Engine::with_clock(clock.clone());
        let mut c = e.connection();
        run(&mut c, "SET k v PX 10");
        run(&mut c, "SET other v PX 10");
        run(&mut c, "CLIENT PAUSE 100000 WRITE");
        clock.advance(Duration::from_millis(20));
        assert_eq!(e.run_expire_cycle().expired, 0);
        assert_eq!(run(&mut c, "GET k"), Value::Nil);
        assert_eq!(run(&mut c, "EXISTS k"), Value::Int(0));
        assert_eq!(run(&mut c, "OBJECT ENCODING k"), Value::Nil);
        assert_eq!(run(&mut c, "DBSIZE"), Value::Int(2));
        assert!(matches!(run(&mut c, "RANDOMKEY"), Value::BulkString(_)));
        run(&mut c, "CLIENT UNPAUSE");
        assert_eq!(run(&mut c, "GET k"), Value::Nil);
        assert_eq!(run(&mut c, "DBSIZE"), Value::Int(1));
        assert_eq!(e.run_expire_cycle().expired, 1);
        assert_eq!(run(&mut c, "DBSIZE"), Value::Int(0));
    }
}
