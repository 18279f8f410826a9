//! The append-only file's side of the store (see `crate::aof` for the
//! files): what a command changed, recorded after it runs; the dataset
//! copied for a rewrite; `appendonly` followed at start and by CONFIG SET;
//! and loading the files (`loadAppendOnlyFiles`) into a fresh store that
//! takes the place of the dataset only once every file has loaded.
//!
//! While the files load, commands run at time 0, so that no key expires
//! (Redis expires nothing while loading) and a TTL already past is kept
//! as the file sets it, for the expiry cycle to take.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use redis::Value as Reply;

use crate::aof::load::{drop_open_multi, parse};
use crate::aof::manifest::{self, Manifest};
use crate::aof::propagate::{self, Form};
use crate::aof::{AofError, Fsync, RewriteStart, State};
use crate::args::is;
use crate::command::blocking::BlockSlot;
use crate::command::{Ctx, Store};
use crate::rdb::file::Snapshot;

/// The time a loading command runs at (see the module's note).
const LOAD_NOW: i64 = 0;

/// The AOF directory and `appendfilename` the configuration names.
fn configured(store: &Store) -> (PathBuf, String) {
    let dir = super::saving::working_dir(store).join(store.config.get("appenddirname"));
    (dir, store.config.get("appendfilename").to_string())
}

impl Store {
    /// Starts or stops the keyspaces' logs of changes for the AOF.
    fn set_aof_logs(&mut self, on: bool) {
        self.aof.on = on;
        for ks in &mut self.dbs {
            ks.set_aof_log(on);
        }
    }

    /// Queues the deletes of expired keys; gives the keys changed.
    fn aof_take_logs(&mut self) -> Vec<(usize, Vec<crate::keyspace::Key>)> {
        let del: &[u8] = if self.config.get("lazyfree-lazy-expire") == "yes" {
            b"UNLINK"
        } else {
            b"DEL"
        };
        self.aof.take_logs(&mut self.dbs, del)
    }

    /// Queues `touched` keys as they are now.
    fn aof_record_state(&mut self, touched: Vec<(usize, Vec<crate::keyspace::Key>)>) {
        let compress = self.config.get("rdbcompression") == "yes";
        self.aof
            .record_state(&self.dbs, touched, compress, self.version);
    }

    /// After a command of the command table ran on database `db`: records
    /// what it changed. `before` is the databases' change count before it
    /// ran.
    #[cold]
    pub(crate) fn aof_after_command(
        &mut self,
        db: usize,
        args: &[&[u8]],
        result: &Result<Reply, crate::error::CmdError>,
        before: u64,
    ) {
        let queued = self.aof.queued();
        let touched = self.aof_take_logs();
        let expired = self.aof.queued() - queued;
        if propagate::recorded_by_calls(args[0]) {
            return;
        }
        let Ok(reply) = result else {
            return;
        };
        if matches!(reply, Reply::ServerError(_)) {
            return;
        }
        let changes = usize::try_from(self.changes().saturating_sub(before)).unwrap_or(usize::MAX);
        if changes <= expired && !propagate::always_recorded(args) {
            return;
        }
        match propagate::form(args, reply, &self.dbs[db]) {
            Form::Verbatim => self.aof.push(db, args.iter().map(|a| a.to_vec()).collect()),
            Form::Lines(lines) => {
                for line in lines {
                    self.aof.push(db, line);
                }
            }
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
        self.aof.flush_unit();
    }

    /// Records the keys the active expiry cycle deleted, each delete on
    /// its own as Redis propagates them.
    pub(crate) fn aof_after_expiry(&mut self) {
        if !self.aof.on {
            return;
        }
        self.aof_take_logs();
        self.aof.flush_each();
    }

    /// The end of what a client ran (a command, an EXEC, a script): its
    /// changes to the file.
    pub(crate) fn aof_flush_unit(&mut self) {
        self.aof.flush_unit();
    }

    /// The periodic work (ten times a second): a rewrite scheduled behind
    /// a BGSAVE once that is done. Gives the incremental file when
    /// `appendfsync everysec`'s sync is due, for the caller to sync once
    /// it has let go of the store.
    pub(crate) fn aof_tick(&mut self, now: i64) -> Option<fs::File> {
        let bgsave = self.saves.bgsave_running();
        let (rewrite, to_sync) = self.aof.tick(!bgsave);
        if rewrite && self.start_rewrite(now).is_err() {
            self.aof.rewrite_failed();
        }
        to_sync
    }

    /// After CONFIG SET: the AOF turned on or off as `appendonly` says,
    /// synced as `appendfsync` says. A failure to turn it on sets
    /// `appendonly` back to `no`.
    pub(crate) fn aof_follow_config(&mut self, now: i64) -> Result<(), crate::error::CmdError> {
        self.aof
            .set_fsync(Fsync::named(self.config.get("appendfsync")));
        match (self.config.get("appendonly") == "yes", self.aof.state()) {
            (true, State::Off) if self.aof_start(now).is_err() => {
                let _ = self.config.set_at_start("appendonly", b"no");
                return Err(crate::error::CmdError::err(
                    "CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. Check server logs.",
                ));
            }
            (false, State::On | State::WaitRewrite) => {
                self.aof.stop();
                self.set_aof_logs(false);
            }
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
            self.aof.schedule();
            return Ok(RewriteStart::Scheduled);
        }
        self.start_rewrite(now).map_err(|e| {
            self.aof.rewrite_failed();
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
        self.aof.begin_rewrite(snapshot, preamble, dir, filename)
    }

    /// `appendonly yes` at the start, after the files (if any) loaded.
    pub(crate) fn aof_open_at_start(&mut self, now: i64) -> Result<(), AofError> {
        let preamble = self.config.get("aof-use-rdb-preamble") == "yes";
        let snapshot = self.aof_snapshot(now);
        let (dir, filename) = configured(self);
        let fsync = Fsync::named(self.config.get("appendfsync"));
        self.aof
            .open_at_start(&snapshot, preamble, dir, filename, fsync)?;
        self.set_aof_logs(true);
        Ok(())
    }

    /// `CONFIG SET appendonly yes`: changes are recorded from now on, in
    /// a temporary file until the rewrite this starts has written the
    /// base (`startAppendOnly`).
    fn aof_start(&mut self, now: i64) -> Result<(), String> {
        let (dir, filename) = configured(self);
        let fsync = Fsync::named(self.config.get("appendfsync"));
        let behind_bgsave = self.saves.bgsave_running();
        self.aof.start(dir, filename, fsync, behind_bgsave)?;
        if !behind_bgsave {
            if let Err(e) = self.start_rewrite(now) {
                self.aof.abort_start();
                return Err(format!(
                    "Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. ({e})"
                ));
            }
        }
        self.set_aof_logs(true);
        Ok(())
    }

    /// DEBUG LOADAOF: the file flushed and synced if the AOF is on, then
    /// the dataset replaced by what the AOF files hold.
    pub(crate) fn debug_loadaof(&mut self, now: i64) -> Result<(), AofError> {
        self.aof.flush_unit();
        self.aof.sync();
        let (dir, filename) = self.aof.location().unwrap_or_else(|| configured(self));
        self.load_aof(&dir, &filename, now)
    }

    /// The dataset as a rewrite writes it.
    fn aof_snapshot(&self, now: i64) -> Snapshot {
        let mut snapshot = self.snapshot(now);
        snapshot.aof_base = true;
        snapshot
    }

    /// Loads the AOF files `dir`'s manifest names (`appendfilename`
    /// `filename`) in place of the dataset and functions: all or nothing.
    /// A command cut short at the end of the last file, or a `MULTI` never
    /// closed there, is dropped and the file truncated before it, with a
    /// warning on standard error, under `aof-load-truncated yes` (the
    /// default); anywhere else, or with `no`, it is an error.
    pub(crate) fn load_aof(
        &mut self,
        dir: &Path,
        filename: &str,
        now: i64,
    ) -> Result<(), AofError> {
        let manifest = match fs::read(dir.join(manifest::manifest_name(filename))) {
            Ok(text) => Manifest::parse(&text).map_err(AofError::Manifest)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(AofError::NotFound),
            Err(e) => return Err(e.into()),
        };
        let mut scratch = self.scratch();
        let mut db = 0;
        let files: Vec<_> = manifest.to_load().cloned().collect();
        let load_truncated = self.config.get("aof-load-truncated") == "yes";
        for (i, info) in files.iter().enumerate() {
            let last = i + 1 == files.len();
            let path = dir.join(&info.name);
            let bytes = fs::read(&path)?;
            let mut start = 0;
            if bytes.starts_with(b"REDIS") {
                start =
                    scratch
                        .load_rdb_prefix(&bytes, LOAD_NOW)
                        .map_err(|error| AofError::Rdb {
                            file: info.name.clone(),
                            error,
                        })?;
            }
            let mut parsed = parse(&bytes, start).map_err(|offset| AofError::Format {
                file: info.name.clone(),
                offset,
            })?;
            drop_open_multi(&mut parsed, start);
            if let Some(offset) = parsed.truncated_at {
                if !last || !load_truncated {
                    return Err(AofError::Truncated {
                        file: info.name.clone(),
                        offset,
                    });
                }
            }
            for (line, _) in &parsed.lines {
                let name = &line[0];
                // One client loads: a transaction's commands run as they
                // come, as its EXEC would run them (one never closed is
                // dropped above).
                if is(name, "multi") || is(name, "exec") || is(name, "discard") {
                    continue;
                }
                if crate::command::lookup_in(name, scratch.version).is_none() {
                    return Err(AofError::UnknownCommand {
                        file: info.name.clone(),
                        command: String::from_utf8_lossy(name).into_owned(),
                    });
                }
                let args: Vec<&[u8]> = line.iter().map(Vec::as_slice).collect();
                let mut ctx = Ctx {
                    store: &mut scratch,
                    db,
                    now: LOAD_NOW,
                    block: BlockSlot::Denied,
                    resp: 2,
                };
                // A command's error is no loading error (Redis ignores
                // the fake client's replies).
                let _ = crate::command::run(&mut ctx, &args);
                db = ctx.db;
            }
            if let Some(offset) = parsed.truncated_at {
                eprintln!(
                    "!!! Warning: short read while loading the AOF file {}: truncating it at offset {offset} (aof-load-truncated is enabled)",
                    info.name
                );
                let f = fs::OpenOptions::new().write(true).open(&path)?;
                f.set_len(offset as u64)?;
            }
        }
        let functions: Vec<Vec<u8>> = scratch
            .functions
            .libraries()
            .map(|l| l.code.clone())
            .collect();
        self.adopt(&mut scratch.dbs, &functions, now)
            .map_err(|error| AofError::Rdb {
                file: manifest::manifest_name(filename),
                error,
            })
    }

    /// An empty store with this one's settings, for files to load into:
    /// no memory limit or replica rule to refuse a write, no events.
    fn scratch(&self) -> Store {
        let mut config = self.config.clone();
        for (name, value) in [
            ("maxmemory", "0"),
            ("min-replicas-to-write", "0"),
            ("notify-keyspace-events", ""),
        ] {
            let _ = config.set_at_start(name, value.as_bytes());
        }
        let mut scratch = Store {
            config,
            version: self.version,
            ..Store::default()
        };
        scratch.scripts.version = self.version;
        scratch.functions.version = self.version;
        scratch.notify_flags = 0;
        let limits = scratch.config.limits();
        for ks in &mut scratch.dbs {
            ks.set_limits(limits);
        }
        scratch
    }
}
