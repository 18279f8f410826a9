//! The append-only file, as Redis 7.0.15 keeps it (`aof.c`): a directory
//! (`appenddirname` in `dir`) with a base file (the dataset at the last
//! rewrite, RDB or commands), incremental files (every change since, as
//! the commands Redis propagates) and a manifest naming them
//! ([`manifest`]).
//!
//! The write path: while the AOF is on, every keyspace logs the keys the
//! running command changed and those it deleted because their time had
//! passed ([`crate::keyspace::AofLog`]); after the command, the store
//! records the deletes as `DEL`, then the command as [`propagate`] says,
//! and at the end of what a client ran (a command, an EXEC, a script) the
//! lines go to the file, wrapped in `MULTI`/`EXEC` when there are several,
//! after a `SELECT` when the database is not the file's last.
//!
//! BGREWRITEAOF is BGSAVE's fork without a fork ([`rewrite`]): under the
//! engine's lock it copies the dataset and opens a new incremental file,
//! which every later change goes to; a thread writes the new base; the
//! manifest then names the new base and the new incremental file, and
//! the files the base replaces are deleted. Loading ([`load`]) reads the
//! files into a fresh store, which takes the place of the dataset only
//! once all of them have loaded.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use redis::Value as Reply;

use crate::command::Store;

pub(crate) mod load;
pub(crate) mod manifest;
pub(crate) mod propagate;
pub(crate) mod rewrite;
#[cfg(test)]
mod tests;

pub use load::AofError;
use manifest::Manifest;
use propagate::{Form, Line};

/// Whether the AOF is written to (Redis's `aof_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Off,
    On,
    /// `CONFIG SET appendonly yes` started a rewrite: changes go to a
    /// temporary incremental file until the base is written.
    WaitRewrite,
}

/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Fsync {
    Always,
    #[default]
    EverySec,
    No,
}

/// The AOF's part of the store: the lines of the running unit, and the
/// files, shared with the rewrite's thread.
#[derive(Debug, Default)]
pub(crate) struct Aof {
    /// Changes are recorded (the AOF is on or waits for its rewrite).
    pub(crate) on: bool,
    /// The lines of what the running client ran so far, with their
    /// databases.
    pending: Vec<(usize, Line)>,
    files: Arc<Mutex<Files>>,
}

/// The files' state.
#[derive(Debug, Default)]
struct Files {
    state: State,
    /// The incremental file changes are appended to.
    file: Option<fs::File>,
    /// The database of the file's last `SELECT` (`None`: a new file).
    selected_db: Option<usize>,
    manifest: Manifest,
    /// `dir`/`appenddirname`, and `appendfilename`, as at the start of
    /// the AOF or of the last rewrite.
    dir: PathBuf,
    filename: String,
    fsync: Fsync,
    last_fsync: Option<Instant>,
    /// Bytes written and not synced.
    unsynced: bool,
    /// A rewrite's thread is writing a base, and whether it should stop.
    rewriting: bool,
    cancelled: bool,
    /// BGREWRITEAOF waits for a BGSAVE (`aof_rewrite_scheduled`).
    scheduled: bool,
    last_rewrite_failed: bool,
    last_write_failed: bool,
    rewrites: u64,
}

/// BGREWRITEAOF's answers, in Redis's words.
pub(crate) enum RewriteStart {
    Started,
    Scheduled,
}

/// Appends `line` as RESP (`catAppendOnlyGenericCommand`).
fn encode(out: &mut Vec<u8>, line: &[Vec<u8>]) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(line.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in line {
        out.push(b'$');
        out.extend_from_slice(itoa::Buffer::new().format(arg.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// The AOF directory and file name the configuration names.
fn configured(store: &Store) -> (PathBuf, String) {
    let dir = Path::new(store.config.get("dir")).join(store.config.get("appenddirname"));
    (dir, store.config.get("appendfilename").to_string())
}

fn fsync_of(store: &Store) -> Fsync {
    match store.config.get("appendfsync") {
        "always" => Fsync::Always,
        "no" => Fsync::No,
        _ => Fsync::EverySec,
    }
}

impl Files {
    /// Writes the manifest: a temporary file renamed over it.
    fn persist_manifest(&self) -> io::Result<()> {
        let path = self.dir.join(manifest::manifest_name(&self.filename));
        let temp = self
            .dir
            .join(format!("temp-{}", manifest::manifest_name(&self.filename)));
        let mut f = fs::File::create(&temp)?;
        f.write_all(self.manifest.render().as_bytes())?;
        f.sync_all()?;
        fs::rename(&temp, &path)
    }

    /// Deletes the files the history lists, and the manifest forgets
    /// them (`aofDelHistoryFiles`): a failure leaves files behind, no
    /// harm to the data.
    fn delete_history(&mut self) {
        if self.manifest.history.is_empty() {
            return;
        }
        for old in self.manifest.history.drain(..) {
            let _ = fs::remove_file(self.dir.join(&old.name));
        }
        let _ = self.persist_manifest();
    }

    /// Makes `file` the one changes go to, the one before synced.
    fn switch_to(&mut self, file: fs::File) {
        if let Some(old) = self.file.take() {
            let _ = old.sync_data();
        }
        self.file = Some(file);
        self.selected_db = None;
        self.unsynced = false;
    }

    /// Opens (creating it) the incremental file `name` for appending.
    fn open_append(&self, name: &str) -> io::Result<fs::File> {
        fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.dir.join(name))
    }

    /// Appends `bytes` to the incremental file, synced as `appendfsync`
    /// says.
    fn append(&mut self, bytes: &[u8]) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let written = file.write_all(bytes);
        self.last_write_failed = written.is_err();
        self.unsynced = true;
        if self.fsync == Fsync::Always {
            self.sync();
        }
    }

    /// Syncs the incremental file if it has unsynced bytes.
    fn sync(&mut self) {
        if let (Some(file), true) = (&self.file, self.unsynced) {
            let _ = file.sync_data();
            self.unsynced = false;
            self.last_fsync = Some(Instant::now());
        }
    }
}

impl Aof {
    /// Whether a rewrite is running.
    pub(crate) fn rewriting(&self) -> bool {
        self.files.lock().rewriting
    }

    /// INFO persistence's AOF fields.
    pub(crate) fn info(&self) -> Vec<(&'static str, String)> {
        let f = self.files.lock();
        let flag = |b: bool| u8::from(b).to_string();
        let status = |failed: bool| if failed { "err" } else { "ok" }.to_string();
        vec![
            ("aof_enabled", flag(f.state != State::Off)),
            ("aof_rewrite_in_progress", flag(f.rewriting)),
            ("aof_rewrite_scheduled", flag(f.scheduled)),
            ("aof_last_bgrewrite_status", status(f.last_rewrite_failed)),
            ("aof_rewrites", f.rewrites.to_string()),
            ("aof_last_write_status", status(f.last_write_failed)),
        ]
    }
}

impl Store {
    /// Starts or stops the keyspaces' logs of changes for the AOF.
    fn set_aof_logs(&mut self, on: bool) {
        self.aof.on = on;
        for ks in &mut self.dbs {
            ks.set_aof_log(on);
        }
    }

    /// Records the keys deleted because their time had passed, as `DEL`
    /// (`UNLINK` under `lazyfree-lazy-expire yes`), Redis's
    /// `propagateDeletion`; gives the keys each database's command
    /// changed.
    fn aof_take_logs(&mut self) -> Vec<(usize, Vec<crate::keyspace::Key>)> {
        let del: &[u8] = if self.config.get("lazyfree-lazy-expire") == "yes" {
            b"UNLINK"
        } else {
            b"DEL"
        };
        let mut touched = Vec::new();
        for db in 0..self.dbs.len() {
            let log = self.dbs[db].take_aof_log();
            for key in log.expired {
                self.aof
                    .pending
                    .push((db, vec![del.to_vec(), key.to_vec()]));
            }
            if !log.touched.is_empty() {
                touched.push((db, log.touched));
            }
        }
        touched
    }

    /// After a command of the command table ran on database `db`: records
    /// what it changed. `before` is the databases' change count before it
    /// ran.
    pub(crate) fn aof_after_command(
        &mut self,
        db: usize,
        args: &[&[u8]],
        result: &Result<Reply, crate::error::CmdError>,
        before: u64,
    ) {
        let queued = self.aof.pending.len();
        let touched = self.aof_take_logs();
        let expired = self.aof.pending.len() - queued;
        if propagate::recorded_by_calls(args[0]) {
            return;
        }
        let Ok(reply) = result else {
            return;
        };
        if matches!(reply, Reply::ServerError(_)) {
            return;
        }
        let changes = self.changes().saturating_sub(before) as usize;
        if changes <= expired && !propagate::always_recorded(args) {
            return;
        }
        match propagate::form(args, reply, self, db) {
            Form::Verbatim => self.aof.pending.push((db, propagate_line(args))),
            Form::Lines(lines) => self.aof.pending.extend(lines.into_iter().map(|l| (db, l))),
            Form::State => self.aof_record_state(touched),
        }
    }

    /// After a blocked client was served (its command ran on its own,
    /// without its arguments at hand): records the keys it changed as
    /// they are, then ends the unit.
    pub(crate) fn aof_after_served(&mut self) {
        if !self.aof.on {
            return;
        }
        let touched = self.aof_take_logs();
        self.aof_record_state(touched);
        self.aof_flush_unit();
    }

    /// Records the keys deleted because their time had passed (the active
    /// expiry cycle), each delete on its own as Redis propagates them.
    pub(crate) fn aof_after_expiry(&mut self) {
        if !self.aof.on {
            return;
        }
        self.aof_take_logs();
        let pending = std::mem::take(&mut self.aof.pending);
        for op in pending {
            self.aof.pending.push(op);
            self.aof_flush_unit();
        }
    }

    /// Records `touched` keys as they are: a `RESTORE ... REPLACE ABSTTL`
    /// of a live key, a `DEL` of a key that went.
    fn aof_record_state(&mut self, touched: Vec<(usize, Vec<crate::keyspace::Key>)>) {
        let compress = self.config.get("rdbcompression") == "yes";
        for (db, keys) in touched {
            let mut seen = std::collections::HashSet::new();
            for key in keys {
                if !seen.insert(key.clone()) {
                    continue;
                }
                let ks = &self.dbs[db];
                let line = match ks.stored(&key) {
                    None => vec![b"DEL".to_vec(), key.to_vec()],
                    Some(entry) => {
                        let body =
                            crate::rdb::value::encode(&entry.value, entry.history(), compress);
                        let payload = crate::rdb::seal_as(body, self.version);
                        let at = ks.expire_at(&key).unwrap_or(0);
                        vec![
                            b"RESTORE".to_vec(),
                            key.to_vec(),
                            at.to_string().into_bytes(),
                            payload,
                            b"REPLACE".to_vec(),
                            b"ABSTTL".to_vec(),
                        ]
                    }
                };
                self.aof.pending.push((db, line));
            }
        }
    }

    /// The end of what a client ran: its lines to the file, in
    /// `MULTI`/`EXEC` if there are several (`propagatePendingCommands`).
    pub(crate) fn aof_flush_unit(&mut self) {
        if self.aof.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.aof.pending);
        let mut files = self.aof.files.lock();
        let mut out = Vec::new();
        let select = |out: &mut Vec<u8>, files: &mut Files, db: usize| {
            if files.selected_db != Some(db) {
                encode(out, &[b"SELECT".to_vec(), db.to_string().into_bytes()]);
                files.selected_db = Some(db);
            }
        };
        let wrap = pending.len() > 1;
        if wrap {
            select(&mut out, &mut files, pending[0].0);
            encode(&mut out, &[b"MULTI".to_vec()]);
        }
        for (db, line) in &pending {
            select(&mut out, &mut files, *db);
            encode(&mut out, line);
        }
        if wrap {
            encode(&mut out, &[b"EXEC".to_vec()]);
        }
        files.append(&out);
    }

    /// The periodic work (the expiry cycle's thread, ten times a second):
    /// `appendfsync everysec`'s sync, and a rewrite scheduled behind a
    /// BGSAVE once that is done.
    pub(crate) fn aof_tick(&mut self, now: i64) {
        let scheduled = {
            let mut f = self.aof.files.lock();
            if f.fsync == Fsync::EverySec
                && f.unsynced
                && f.last_fsync.is_none_or(|t| t.elapsed().as_secs() >= 1)
            {
                f.sync();
            }
            f.scheduled && !f.rewriting
        };
        if scheduled && !self.saves.bgsave_running() {
            self.aof.files.lock().scheduled = false;
            let _ = self.start_rewrite(now);
        }
    }

    /// After CONFIG SET: the AOF turned on or off as `appendonly` says,
    /// synced as `appendfsync` says. A failure to turn it on sets
    /// `appendonly` back to `no`.
    pub(crate) fn aof_follow_config(&mut self, now: i64) -> Result<(), crate::error::CmdError> {
        let fsync = fsync_of(self);
        let state = {
            let mut f = self.aof.files.lock();
            f.fsync = fsync;
            f.state
        };
        match (self.config.get("appendonly") == "yes", state) {
            (true, State::Off) if self.aof_start(now).is_err() => {
                let _ = self.config.set_at_start("appendonly", b"no");
                return Err(crate::error::CmdError::err(
                    "CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. Check server logs.",
                ));
            }
            (false, State::On | State::WaitRewrite) => self.aof_stop(),
            _ => {}
        }
        Ok(())
    }

    /// BGREWRITEAOF: a rewrite now, or once the running BGSAVE is done.
    pub(crate) fn bgrewriteaof(&mut self, now: i64) -> Result<RewriteStart, String> {
        if self.aof.rewriting() {
            return Err("Background append only file rewriting already in progress".into());
        }
        if self.saves.bgsave_running() {
            self.aof.files.lock().scheduled = true;
            return Ok(RewriteStart::Scheduled);
        }
        self.start_rewrite(now).map_err(|e| {
            self.aof.files.lock().last_rewrite_failed = true;
            format!("Can't execute an AOF background rewriting. Please check the server logs for more information. ({e})")
        })?;
        Ok(RewriteStart::Started)
    }

    /// Starts a rewrite: the dataset copied and a new incremental file
    /// opened under the lock, the base written by a thread.
    fn start_rewrite(&mut self, now: i64) -> io::Result<()> {
        let preamble = self.config.get("aof-use-rdb-preamble") == "yes";
        let snapshot = self.aof_snapshot(now);
        let (dir, filename) = configured(self);
        fs::create_dir_all(&dir)?;
        let files = self.aof.files.clone();
        {
            let mut f = files.lock();
            if f.state == State::Off {
                // The directory the rewrite writes to is the configured one.
                f.dir = dir.clone();
                f.filename = filename.clone();
                if let Ok(text) = fs::read(f.dir.join(manifest::manifest_name(&filename))) {
                    f.manifest = Manifest::parse(&text).unwrap_or_default();
                }
            }
            match f.state {
                State::Off => {}
                State::On => {
                    let mut manifest = f.manifest.clone();
                    let incr = manifest.push_incr(&f.filename);
                    let file = f.open_append(&incr.name)?;
                    let old = std::mem::replace(&mut f.manifest, manifest);
                    if let Err(e) = f.persist_manifest() {
                        f.manifest = old;
                        return Err(e);
                    }
                    f.switch_to(file);
                }
                State::WaitRewrite => {
                    let temp = manifest::temp_incr_name(&f.filename);
                    let file = fs::File::create(f.dir.join(&temp))?;
                    f.switch_to(file);
                }
            }
            f.rewriting = true;
            f.cancelled = false;
        }
        let spawned = std::thread::Builder::new()
            .name("redmodel-aof-rewrite".into())
            .spawn(move || rewrite::run(&files, &snapshot, preamble));
        if spawned.is_err() {
            let mut f = self.aof.files.lock();
            f.rewriting = false;
            return Err(io::Error::other("cannot start the rewrite's thread"));
        }
        Ok(())
    }

    /// `appendonly yes` at the start, after the files (if any) loaded: a
    /// base written now if there is none and no incremental file, the
    /// last incremental file (or a new one) opened for appending.
    pub(crate) fn aof_open_at_start(&mut self, now: i64) -> Result<(), AofError> {
        let (dir, filename) = configured(self);
        fs::create_dir_all(&dir)?;
        let preamble = self.config.get("aof-use-rdb-preamble") == "yes";
        let snapshot = self.aof_snapshot(now);
        let fsync = fsync_of(self);
        {
            let mut f = self.aof.files.lock();
            f.dir = dir;
            f.filename = filename;
            f.fsync = fsync;
            let path = f.dir.join(manifest::manifest_name(&f.filename));
            f.manifest = match fs::read(&path) {
                Ok(text) => Manifest::parse(&text).map_err(AofError::Manifest)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => Manifest::default(),
                Err(e) => return Err(e.into()),
            };
            if f.manifest.base.is_none() && f.manifest.incrs.is_empty() {
                let mut manifest = f.manifest.clone();
                let base = manifest.next_base(&f.filename, preamble);
                rewrite::write_base(&snapshot, preamble, &f.dir.join(&base.name), &|| false)?;
                manifest.base = Some(base);
                f.manifest = manifest;
            }
            let incr = match f.manifest.incrs.last() {
                Some(last) => last.clone(),
                None => {
                    let filename = f.filename.clone();
                    f.manifest.push_incr(&filename)
                }
            };
            let file = f.open_append(&incr.name)?;
            f.persist_manifest()?;
            f.delete_history();
            f.switch_to(file);
            f.state = State::On;
        }
        self.set_aof_logs(true);
        Ok(())
    }

    /// `CONFIG SET appendonly yes`: changes are recorded from now on, in
    /// a temporary file until the rewrite this starts has written the
    /// base (`startAppendOnly`).
    pub(crate) fn aof_start(&mut self, now: i64) -> Result<(), String> {
        if self.aof.files.lock().state != State::Off {
            return Ok(());
        }
        if self.aof.rewriting() {
            // A BGREWRITEAOF of the AOF off: stopped, this one starts.
            self.aof_cancel_rewrite();
            while self.aof.rewriting() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let (dir, filename) = configured(self);
        let fsync = fsync_of(self);
        {
            let mut f = self.aof.files.lock();
            f.dir = dir;
            f.filename = filename;
            f.fsync = fsync;
            if let Ok(text) = fs::read(f.dir.join(manifest::manifest_name(&f.filename))) {
                f.manifest = Manifest::parse(&text).map_err(|e| format!("AOF manifest: {e}"))?;
            } else {
                f.manifest = Manifest::default();
            }
            f.state = State::WaitRewrite;
        }
        if self.saves.bgsave_running() {
            self.aof.files.lock().scheduled = true;
            let (dir, filename) = configured(self);
            fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let mut f = self.aof.files.lock();
            let temp = fs::File::create(dir.join(manifest::temp_incr_name(&filename)));
            match temp {
                Ok(file) => f.switch_to(file),
                Err(e) => {
                    f.state = State::Off;
                    return Err(e.to_string());
                }
            }
        } else if let Err(e) = self.start_rewrite(now) {
            let mut f = self.aof.files.lock();
            f.state = State::Off;
            f.last_rewrite_failed = true;
            return Err(format!(
                "Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. ({e})"
            ));
        }
        self.set_aof_logs(true);
        Ok(())
    }

    /// `CONFIG SET appendonly no`: the file synced and closed, a running
    /// rewrite stopped (`stopAppendOnly`).
    pub(crate) fn aof_stop(&mut self) {
        self.aof_flush_unit();
        self.set_aof_logs(false);
        let mut f = self.aof.files.lock();
        if f.state == State::Off {
            return;
        }
        f.sync();
        f.file = None;
        f.state = State::Off;
        f.scheduled = false;
        f.cancelled = true;
    }

    /// Asks a running rewrite to stop.
    fn aof_cancel_rewrite(&self) {
        self.aof.files.lock().cancelled = true;
    }

    /// DEBUG LOADAOF: the file flushed and synced if the AOF is on, then
    /// the dataset replaced by what the AOF files hold.
    pub(crate) fn debug_loadaof(&mut self, now: i64) -> Result<(), AofError> {
        self.aof_flush_unit();
        let (dir, filename) = {
            let mut f = self.aof.files.lock();
            f.sync();
            if f.state == State::Off {
                let (dir, filename) = configured(self);
                (dir, filename)
            } else {
                (f.dir.clone(), f.filename.clone())
            }
        };
        self.load_aof(&dir, &filename, now)?;
        Ok(())
    }

    /// The dataset as a rewrite writes it.
    fn aof_snapshot(&self, now: i64) -> crate::rdb::file::Snapshot {
        let mut snapshot = self.snapshot(now);
        snapshot.aof_base = true;
        snapshot
    }
}

/// The command line to record for `args`.
fn propagate_line(args: &[&[u8]]) -> Line {
    args.iter().map(|a| a.to_vec()).collect()
}
