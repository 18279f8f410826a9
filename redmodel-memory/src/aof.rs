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
//! the files the base replaces are deleted. [`load`] reads the files'
//! commands.
//!
//! This module knows the files, not the store: the store's side (what a
//! command changed, the dataset to copy, loading into a fresh store) is
//! `crate::command::persistence`'s.

use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::keyspace::{Key, Keyspace};
use crate::rdb::file::Snapshot;

pub(crate) mod load;
pub(crate) mod manifest;
pub(crate) mod propagate;
pub(crate) mod rewrite;
#[cfg(test)]
mod tests;

pub use load::AofError;
use manifest::Manifest;
use propagate::Line;

/// Whether the AOF is written to (Redis's `aof_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum State {
    #[default]
    Off,
    On,
    /// `CONFIG SET appendonly yes` started a rewrite: changes go to a
    /// temporary incremental file until the base is written.
    WaitRewrite,
}

/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Fsync {
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

impl Fsync {
    /// The policy `appendfsync` names.
    pub(crate) fn named(name: &str) -> Fsync {
        match name {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::EverySec,
        }
    }
}

impl Drop for Files {
    /// An engine that goes syncs what it wrote, as Redis syncs at
    /// shutdown.
    fn drop(&mut self) {
        self.sync();
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

    /// Whether the AOF is on (or waits for its first rewrite).
    pub(crate) fn state(&self) -> State {
        self.files.lock().state
    }

    /// The AOF directory and `appendfilename` in use, if the AOF is on.
    pub(crate) fn location(&self) -> Option<(PathBuf, String)> {
        let f = self.files.lock();
        (f.state != State::Off).then(|| (f.dir.clone(), f.filename.clone()))
    }

    /// `appendfsync` changed.
    pub(crate) fn set_fsync(&self, fsync: Fsync) {
        self.files.lock().fsync = fsync;
    }

    /// A BGREWRITEAOF waits for a BGSAVE.
    pub(crate) fn schedule(&self) {
        self.files.lock().scheduled = true;
    }

    /// A rewrite could not start.
    pub(crate) fn rewrite_failed(&self) {
        self.files.lock().last_rewrite_failed = true;
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
            // A rewrite is no fork here: none is timed, none copies on
            // write.
            ("aof_last_rewrite_time_sec", "-1".into()),
            ("aof_current_rewrite_time_sec", "-1".into()),
            ("aof_last_bgrewrite_status", status(f.last_rewrite_failed)),
            ("aof_rewrites", f.rewrites.to_string()),
            ("aof_rewrites_consecutive_failures", "0".into()),
            ("aof_last_write_status", status(f.last_write_failed)),
            ("aof_last_cow_size", "0".into()),
        ]
    }

    /// Queues `line`, run on database `db`, in the running unit.
    pub(crate) fn push(&mut self, db: usize, line: Line) {
        self.pending.push((db, line));
    }

    /// The number of lines queued in the running unit.
    pub(crate) fn queued(&self) -> usize {
        self.pending.len()
    }

    /// Queues the deletes of the keys `dbs` deleted because their time
    /// had passed, as `del` (`DEL`, or `UNLINK` under
    /// `lazyfree-lazy-expire yes`: Redis's `propagateDeletion`); gives the
    /// keys each database's command changed.
    pub(crate) fn take_logs(&mut self, dbs: &mut [Keyspace], del: &[u8]) -> Vec<(usize, Vec<Key>)> {
        let mut touched = Vec::new();
        for (db, ks) in dbs.iter_mut().enumerate() {
            let log = ks.take_aof_log();
            for key in log.expired {
                self.pending.push((db, vec![del.to_vec(), key.to_vec()]));
            }
            if !log.touched.is_empty() {
                touched.push((db, log.touched));
            }
        }
        touched
    }

    /// Queues `touched` keys as they are in `dbs`: a `RESTORE ... REPLACE
    /// ABSTTL` of a live key (its DUMP payload as Redis `version` writes
    /// it), a `DEL` of a key that went.
    pub(crate) fn record_state(
        &mut self,
        dbs: &[Keyspace],
        touched: Vec<(usize, Vec<Key>)>,
        compress: bool,
        version: crate::RedisVersion,
    ) {
        for (db, keys) in touched {
            let mut seen = std::collections::HashSet::new();
            for key in keys {
                if !seen.insert(key.clone()) {
                    continue;
                }
                let ks = &dbs[db];
                let line = match ks.stored(&key) {
                    None => vec![b"DEL".to_vec(), key.to_vec()],
                    Some(entry) => {
                        let body = crate::rdb::value::encode(
                            &entry.value,
                            entry.history(),
                            compress,
                            version,
                        );
                        let at = ks.expire_at(&key).unwrap_or(0);
                        vec![
                            b"RESTORE".to_vec(),
                            key.to_vec(),
                            at.to_string().into_bytes(),
                            crate::rdb::seal_as(body, version),
                            b"REPLACE".to_vec(),
                            b"ABSTTL".to_vec(),
                        ]
                    }
                };
                self.pending.push((db, line));
            }
        }
    }

    /// The end of what a client ran: its lines to the file, in
    /// `MULTI`/`EXEC` if there are several (`propagatePendingCommands`).
    pub(crate) fn flush_unit(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let mut files = self.files.lock();
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

    /// Each queued line to the file on its own (the expiry cycle's
    /// deletes, which Redis propagates one by one).
    pub(crate) fn flush_each(&mut self) {
        for op in std::mem::take(&mut self.pending) {
            self.pending.push(op);
            self.flush_unit();
        }
    }

    /// The periodic work. Gives whether a scheduled rewrite may start
    /// (none running), taking it off the schedule if `start` says it may;
    /// and, when `appendfsync everysec`'s sync is due, a handle of the
    /// incremental file to sync with no lock held (Redis syncs on a
    /// thread of its own, so that clients do not wait for the disk).
    pub(crate) fn tick(&self, start: bool) -> (bool, Option<fs::File>) {
        let mut f = self.files.lock();
        let mut to_sync = None;
        if f.fsync == Fsync::EverySec
            && f.unsynced
            && f.last_fsync.is_none_or(|t| t.elapsed().as_secs() >= 1)
        {
            to_sync = f.file.as_ref().and_then(|file| file.try_clone().ok());
            f.unsynced = false;
            f.last_fsync = Some(Instant::now());
        }
        let due = start && f.scheduled && !f.rewriting;
        if due {
            f.scheduled = false;
        }
        (due, to_sync)
    }

    /// Syncs the incremental file (DEBUG LOADAOF reads it next).
    pub(crate) fn sync(&self) {
        self.files.lock().sync();
    }

    /// Starts a rewrite of `snapshot` into the AOF directory `dir`: a new
    /// incremental file opened now (the temporary one while the AOF waits
    /// for this rewrite), the base written by a thread.
    pub(crate) fn begin_rewrite(
        &self,
        snapshot: Snapshot,
        preamble: bool,
        dir: PathBuf,
        filename: String,
    ) -> io::Result<()> {
        fs::create_dir_all(&dir)?;
        let files = self.files.clone();
        {
            let mut f = files.lock();
            if f.state == State::Off {
                // An AOF that is off is rewritten where CONFIG says.
                if let Ok(text) = fs::read(dir.join(manifest::manifest_name(&filename))) {
                    f.manifest = Manifest::parse(&text).unwrap_or_default();
                }
                f.dir = dir;
                f.filename = filename;
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
            self.files.lock().rewriting = false;
            return Err(io::Error::other("cannot start the rewrite's thread"));
        }
        Ok(())
    }

    /// `appendonly yes` at the start, after the files (if any) loaded: a
    /// base of `snapshot` written now if there is none and no incremental
    /// file, the last incremental file (or a new one) opened for
    /// appending.
    pub(crate) fn open_at_start(
        &self,
        snapshot: &Snapshot,
        preamble: bool,
        dir: PathBuf,
        filename: String,
        fsync: Fsync,
    ) -> Result<(), AofError> {
        fs::create_dir_all(&dir)?;
        let mut f = self.files.lock();
        f.dir = dir;
        f.filename = filename;
        f.fsync = fsync;
        let path = f.dir.join(manifest::manifest_name(&f.filename));
        f.manifest = match fs::read(&path) {
            Ok(text) => Manifest::parse(&text).map_err(AofError::Manifest)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Manifest::default(),
            Err(e) => return Err(e.into()),
        };
        let filename = f.filename.clone();
        if f.manifest.base.is_none() && f.manifest.incrs.is_empty() {
            let mut manifest = f.manifest.clone();
            let base = manifest.next_base(&filename, preamble);
            rewrite::write_base(snapshot, preamble, &f.dir.join(&base.name), &|| false)?;
            manifest.base = Some(base);
            f.manifest = manifest;
        }
        let incr = match f.manifest.incrs.last() {
            Some(last) => last.clone(),
            None => f.manifest.push_incr(&filename),
        };
        let file = f.open_append(&incr.name)?;
        f.persist_manifest()?;
        f.delete_history();
        f.switch_to(file);
        f.state = State::On;
        Ok(())
    }

    /// `CONFIG SET appendonly yes`: the AOF waits for its first rewrite
    /// (`startAppendOnly`), in `dir`; a rewrite of the AOF off that runs
    /// is stopped first. `now_writing` opens the temporary incremental
    /// file at once (the rewrite is scheduled behind a BGSAVE).
    pub(crate) fn start(
        &self,
        dir: PathBuf,
        filename: String,
        fsync: Fsync,
        now_writing: bool,
    ) -> Result<(), String> {
        if self.rewriting() {
            self.files.lock().cancelled = true;
            while self.rewriting() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let mut f = self.files.lock();
        f.manifest = match fs::read(dir.join(manifest::manifest_name(&filename))) {
            Ok(text) => Manifest::parse(&text).map_err(|e| format!("AOF manifest: {e}"))?,
            Err(_) => Manifest::default(),
        };
        f.dir = dir;
        f.filename = filename;
        f.fsync = fsync;
        f.state = State::WaitRewrite;
        if now_writing {
            f.scheduled = true;
            let opened = fs::create_dir_all(&f.dir)
                .and_then(|()| fs::File::create(f.dir.join(manifest::temp_incr_name(&f.filename))));
            match opened {
                Ok(file) => f.switch_to(file),
                Err(e) => {
                    f.state = State::Off;
                    f.scheduled = false;
                    return Err(e.to_string());
                }
            }
        }
        Ok(())
    }

    /// The AOF could not start: off again.
    pub(crate) fn abort_start(&self) {
        let mut f = self.files.lock();
        f.state = State::Off;
        f.file = None;
        f.last_rewrite_failed = true;
    }

    /// `CONFIG SET appendonly no`: the file synced and closed, a running
    /// rewrite stopped (`stopAppendOnly`).
    pub(crate) fn stop(&mut self) {
        self.flush_unit();
        let mut f = self.files.lock();
        if f.state == State::Off {
            return;
        }
        f.sync();
        f.file = None;
        f.state = State::Off;
        f.scheduled = false;
        f.cancelled = true;
    }
}
