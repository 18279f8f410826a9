//! Saving the dataset to an RDB file and loading it back, as Redis 7.0.15
//! does for SAVE, BGSAVE, DEBUG RELOAD, FLUSHALL and its start: the file
//! is `dbfilename` in `dir` (CONFIG), written to a temporary file in the
//! same directory and renamed over it, so that a reader never sees half a
//! file.
//!
//! BGSAVE is Redis's fork without a fork: under the engine's lock it
//! copies the keys' values (a copy is much cheaper than encoding and
//! compressing them, and than the disk), then a thread of its own writes
//! the file while other clients go on. [`Saves`], shared with that
//! thread behind a lock of its own, holds what INFO persistence and
//! LASTSAVE report.

use std::fs;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::command::script::library::Policy;
use crate::command::Store;
use crate::keyspace::{seconds, Keyspace, Lfu};
use crate::rdb::{self, file};

use crate::rdb::file::RdbError;

/// The saves' state: what INFO persistence and LASTSAVE report, and the
/// BGSAVE running, if one is.
#[derive(Debug, Clone, Default)]
pub(crate) struct Saves {
    shared: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Unix seconds of the last successful save (or of the start).
    last_save: i64,
    /// The databases' change count the last save wrote (or the load
    /// read): INFO's `rdb_changes_since_last_save` counts from it.
    changes_at_save: u64,
    /// A BGSAVE is writing, and whether FLUSHALL asked it to stop.
    bgsave_running: bool,
    bgsave_cancelled: bool,
    /// The last BGSAVE failed (`rdb_last_bgsave_status:err`).
    last_bgsave_failed: bool,
    /// Successful saves since the start (`rdb_saves`).
    saves: u64,
    /// What the last load of an RDB file read (`rdb_last_load_keys_*`).
    last_load: file::LoadedKeys,
}

/// How a load treats the dataset there is (DEBUG RELOAD's options).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Reload {
    /// The file's keys and functions take the place of all there is.
    Replace,
    /// The file's keys join the dataset (NOFLUSH): a key present on both
    /// sides is an error, unless `replace` (MERGE) lets the file's win.
    Merge { replace: bool },
}

/// BGSAVE's refusals, in Redis's words.
pub(crate) enum BgsaveRefused {
    /// A BGSAVE is running already.
    Running,
    /// The snapshot could not be started (`-ERR`).
    Failed,
}

impl Saves {
    /// The state of an engine started at `now_ms`.
    pub(crate) fn started(now_ms: i64) -> Saves {
        let saves = Saves::default();
        saves.shared.lock().last_save = now_ms / 1000;
        saves
    }

    /// LASTSAVE: Unix seconds of the last successful save.
    pub(crate) fn last_save(&self) -> i64 {
        self.shared.lock().last_save
    }

    /// Whether a BGSAVE is writing now.
    pub(crate) fn bgsave_running(&self) -> bool {
        self.shared.lock().bgsave_running
    }

    /// INFO persistence's save fields, given the databases' change count.
    pub(crate) fn info(&self, changes: u64) -> Vec<(&'static str, String)> {
        let s = self.shared.lock();
        vec![
            (
                "rdb_changes_since_last_save",
                changes.saturating_sub(s.changes_at_save).to_string(),
            ),
            (
                "rdb_bgsave_in_progress",
                u8::from(s.bgsave_running).to_string(),
            ),
            ("rdb_last_save_time", s.last_save.to_string()),
            (
                "rdb_last_bgsave_status",
                if s.last_bgsave_failed { "err" } else { "ok" }.into(),
            ),
            // A save is no fork here: none is timed, none copies on write.
            ("rdb_last_bgsave_time_sec", "-1".into()),
            ("rdb_current_bgsave_time_sec", "-1".into()),
            ("rdb_saves", s.saves.to_string()),
            ("rdb_last_cow_size", "0".into()),
            (
                "rdb_last_load_keys_expired",
                s.last_load.expired.to_string(),
            ),
            ("rdb_last_load_keys_loaded", s.last_load.loaded.to_string()),
        ]
    }

    /// A save that wrote the dataset as it was at `changes`, finished at
    /// `now_ms`.
    fn saved(&self, changes: u64, now_ms: i64) {
        let mut s = self.shared.lock();
        s.changes_at_save = changes;
        s.last_save = now_ms / 1000;
        s.saves += 1;
    }

    /// Counts the data as it is at `changes` as saved (a load: the data
    /// is the file's).
    fn in_sync(&self, changes: u64) {
        self.shared.lock().changes_at_save = changes;
    }

    /// A load of an RDB file read `keys`.
    fn loaded(&self, keys: file::LoadedKeys) {
        self.shared.lock().last_load = keys;
    }
}

/// The file SAVE writes and a start or DEBUG RELOAD loads.
pub(crate) fn rdb_path(store: &Store) -> PathBuf {
    working_dir(store).join(store.config.get("dbfilename"))
}

/// `dir`, ready to be written to (the engine's own is made when first
/// needed, see [`OwnDir`](super::OwnDir)).
pub(crate) fn working_dir(store: &Store) -> PathBuf {
    let dir = PathBuf::from(store.config.get("dir"));
    store.own_dir.ready(&dir);
    dir
}

/// A temporary file beside the RDB file, of this save alone (`temp-<pid>.rdb`
/// in Redis, which saves one at a time; engines in one process may save
/// at once, so a counter follows the process id).
fn temp_path(store: &Store) -> PathBuf {
    static SAVES: AtomicU64 = AtomicU64::new(0);
    let n = SAVES.fetch_add(1, Ordering::Relaxed);
    working_dir(store).join(format!("temp-{}-{n}.rdb", std::process::id()))
}

impl Store {
    /// The databases' change count (see `Keyspace::changes`).
    pub(crate) fn changes(&self) -> u64 {
        self.dbs.iter().map(|ks| ks.changes()).sum()
    }

    /// A copy of the dataset and the functions' code, to be written.
    pub(crate) fn snapshot(&self, now: i64) -> file::Snapshot {
        let policy = self.config.get("maxmemory-policy");
        let lru = policy.ends_with("-lru");
        let lfu = Lfu::of(&self.config.limits());
        let dbs = self
            .dbs
            .iter()
            .map(|ks| {
                ks.stored_with_expiry()
                    .map(|(key, entry, expire_at)| file::Item {
                        key: key.to_vec(),
                        value: entry.value.clone(),
                        history: entry.history(),
                        expire_at,
                        idle: lru.then(|| u64::from(seconds(now).saturating_sub(entry.accessed()))),
                        freq: lfu.map(|lfu| entry.freq(lfu, now)),
                    })
                    .collect()
            })
            .collect();
        file::Snapshot {
            dbs,
            functions: self.functions.libraries().map(|l| l.code.clone()).collect(),
            compress: self.config.get("rdbcompression") == "yes",
            checksum: self.config.get("rdbchecksum") == "yes",
            ctime: now / 1000,
            used_mem: crate::command::used_memory(self),
            key_delay_us: self.config.get("rdb-key-save-delay").parse().unwrap_or(0),
            version: self.version,
            aof_base: false,
        }
    }

    /// SAVE: writes the dataset to the RDB file now.
    pub(crate) fn save(&mut self, now: i64) -> Result<(), RdbError> {
        let snapshot = self.snapshot(now);
        write_file(&snapshot, &temp_path(self), &rdb_path(self), &|| false)?;
        self.saves.saved(self.changes(), now);
        Ok(())
    }

    /// BGSAVE: copies the dataset now and writes it on a thread of its
    /// own; INFO's `rdb_bgsave_in_progress` is 1 until it is written.
    pub(crate) fn bgsave(&mut self, now: i64) -> Result<(), BgsaveRefused> {
        {
            let mut s = self.saves.shared.lock();
            if s.bgsave_running {
                return Err(BgsaveRefused::Running);
            }
            s.bgsave_running = true;
            s.bgsave_cancelled = false;
        }
        let snapshot = self.snapshot(now);
        let changes = self.changes();
        let path = rdb_path(self);
        let temp = temp_path(self);
        let saves = self.saves.clone();
        let spawned = std::thread::Builder::new()
            .name("redmodel-bgsave".into())
            .spawn(move || {
                let stop = || saves.shared.lock().bgsave_cancelled;
                let written = write_file(&snapshot, &temp, &path, &stop);
                drop(snapshot);
                let cancelled = stop();
                if written.is_ok() {
                    saves.saved(changes, now);
                }
                let mut s = saves.shared.lock();
                s.bgsave_running = false;
                // A save FLUSHALL stopped is no failure (Redis kills its
                // child with the signal it ignores there).
                if !cancelled {
                    s.last_bgsave_failed = written.is_err();
                }
            });
        if spawned.is_err() {
            let mut s = self.saves.shared.lock();
            s.bgsave_running = false;
            s.last_bgsave_failed = true;
            return Err(BgsaveRefused::Failed);
        }
        Ok(())
    }

    /// Stops a running BGSAVE, which leaves the file as it was (FLUSHALL).
    pub(crate) fn cancel_bgsave(&self) {
        self.saves.shared.lock().bgsave_cancelled = true;
    }

    /// Loads the RDB file's dataset and functions (DEBUG RELOAD, a
    /// start) as `how` says; on any error nothing changes.
    pub(crate) fn load(&mut self, now: i64, how: Reload) -> Result<(), RdbError> {
        let bytes = fs::read(rdb_path(self))?;
        self.load_bytes(&bytes, now, how)
    }

    /// [`Self::load`] from the file's bytes.
    pub(crate) fn load_bytes(
        &mut self,
        bytes: &[u8],
        now: i64,
        how: Reload,
    ) -> Result<(), RdbError> {
        let verify = self.config.get("rdbchecksum") == "yes";
        let limits = self.config.limits();
        let loaded = file::read(bytes, self.dbs.len(), &limits, now, verify, self.version)?;
        let mut loaded = loaded;
        if how == (Reload::Merge { replace: false }) {
            for (db, (live, read)) in self.dbs.iter().zip(&loaded.dbs).enumerate() {
                if let Some(key) = read
                    .keys(None, now)
                    .into_iter()
                    .find(|k| live.exists_raw(k))
                {
                    return Err(RdbError::DuplicateKey {
                        db,
                        key: key.to_vec(),
                    });
                }
            }
        }
        // The functions first: the one part that may still fail, and
        // FUNCTION RESTORE changes nothing when it does.
        let policy = match how {
            Reload::Replace => Policy::Flush,
            Reload::Merge { replace: true } => Policy::Replace,
            Reload::Merge { replace: false } => Policy::Append,
        };
        self.restore_functions(&loaded.functions, policy)?;
        self.saves.loaded(loaded.keys);
        for (live, read) in self.dbs.iter_mut().zip(&mut loaded.dbs) {
            if how == Reload::Replace {
                Keyspace::swap_data(live, read, now);
                continue;
            }
            for key in read.keys(None, now) {
                if let Some(moved) = read.remove(&key) {
                    live.remove(&key);
                    live.put_moved(&key, moved, now);
                }
            }
        }
        self.saves.in_sync(self.changes());
        Ok(())
    }

    /// Loads the RDB file at the head of `bytes` in place of the dataset
    /// and functions; gives the byte after it (an AOF's commands may
    /// follow).
    pub(crate) fn load_rdb_prefix(&mut self, bytes: &[u8], now: i64) -> Result<usize, RdbError> {
        let verify = self.config.get("rdbchecksum") == "yes";
        let limits = self.config.limits();
        let mut loaded = file::read(bytes, self.dbs.len(), &limits, now, verify, self.version)?;
        self.adopt(&mut loaded.dbs, &loaded.functions, now)?;
        self.saves.loaded(loaded.keys);
        Ok(loaded.end)
    }

    /// `dbs` and the libraries of `functions` take the place of the
    /// dataset and functions; on an error nothing changes.
    pub(crate) fn adopt(
        &mut self,
        dbs: &mut [Keyspace],
        functions: &[Vec<u8>],
        now: i64,
    ) -> Result<(), RdbError> {
        self.restore_functions(functions, Policy::Flush)?;
        for (live, read) in self.dbs.iter_mut().zip(dbs) {
            Keyspace::swap_data(live, read, now);
        }
        self.saves.in_sync(self.changes());
        Ok(())
    }

    /// Loads the libraries of `functions` as FUNCTION RESTORE with
    /// `policy` does: all or none.
    fn restore_functions(&mut self, functions: &[Vec<u8>], policy: Policy) -> Result<(), RdbError> {
        let mut body = Vec::new();
        for code in functions {
            body.push(rdb::OPCODE_FUNCTION2);
            rdb::put_length(&mut body, code.len() as u64);
            body.extend_from_slice(code);
        }
        self.functions
            .restore(&rdb::seal(body), policy)
            .map_err(|e| RdbError::Function(e.text().to_string()))
    }
}

/// Writes `snapshot` to `temp`, synced, then renames it to `path`; the
/// temporary file is removed if anything fails.
fn write_file(
    snapshot: &file::Snapshot,
    temp: &Path,
    path: &Path,
    stop: &dyn Fn() -> bool,
) -> Result<(), RdbError> {
    let written = (|| -> io::Result<()> {
        let f = fs::File::create(temp)?;
        let mut out = BufWriter::new(f);
        file::write(snapshot, &mut out, stop)?;
        let f = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.sync_all()?;
        fs::rename(temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(temp);
    }
    Ok(written?)
}
