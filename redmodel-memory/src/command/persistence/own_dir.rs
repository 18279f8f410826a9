//! The engine's own working directory: where SAVE, BGSAVE, DEBUG RELOAD
//! and the AOF write unless `dir` names another (`Engine::with_rdb_file`,
//! `Engine::with_aof`, `memory_server --dir`).
//!
//! Why not one shared place (such as `/tmp`, or the process's current
//! directory, which redis-server uses): the engines of one test binary
//! run side by side, and a DEBUG RELOAD of one would load the file
//! another just saved, or a SAVE overwrite a `dump.rdb` some other
//! program keeps there. So each engine gets a directory of its own under
//! the system's temp directory, made when something is first written to
//! it and removed with the engine. An engine that is never dropped (one
//! kept in a static, or alive when its process exits) leaves its
//! directory behind: the first engine of a later process removes those
//! of processes that have ended, once they are an hour old (a process id
//! is only known to have ended in this machine's own view of processes;
//! the hour spares a process that shares the temp directory from
//! elsewhere, such as another container, unless its engine sat idle).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// What every engine's directory is named after, then the process id.
pub(super) const PREFIX: &str = "redmodel-engine-";

/// How long a directory of an ended process is left alone.
pub(super) const SPARED: std::time::Duration = std::time::Duration::from_secs(3600);

/// An engine's own directory (see the module docs): a path of its own,
/// made on first use, removed (with what was written in it) when
/// dropped.
#[derive(Debug)]
pub(crate) struct OwnDir {
    path: PathBuf,
}

impl OwnDir {
    /// A new directory's path (nothing is made yet): the process id, a
    /// count and a random part, so that no two engines share one, in one
    /// process or in processes sharing the temp directory.
    pub(crate) fn new() -> Self {
        static ENGINES: AtomicU64 = AtomicU64::new(0);
        static SWEPT: Once = Once::new();
        SWEPT.call_once(|| remove_ended_dirs(PREFIX, SPARED));
        let name = format!(
            "{PREFIX}{}-{}-{:08x}",
            std::process::id(),
            ENGINES.fetch_add(1, Ordering::Relaxed),
            rand::random::<u32>()
        );
        OwnDir {
            path: std::env::temp_dir().join(name),
        }
    }

    /// The directory's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `dir` as a place to write to: made first if it is this directory
    /// and is missing (another `dir` must exist, as Redis's must). An
    /// error to make it shows as the write's own.
    pub(crate) fn ready(&self, dir: &Path) {
        if dir == self.path && !dir.exists() {
            let _ = std::fs::create_dir_all(dir);
        }
    }
}

impl Drop for OwnDir {
    fn drop(&mut self) {
        // Nothing to remove unless something was written. An AOF
        // rewrite's thread may still be writing its file here: a file it
        // makes while the directory is being emptied fails the removal
        // (not empty), so it is tried again a few times.
        for _ in 0..20 {
            if !self.path.exists() || std::fs::remove_dir_all(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Removes the directories in the temp directory named `prefix`, a
/// process id and `-`, of processes that have ended, once unchanged for
/// `spared` (see the module docs). Only where a process can be looked up
/// (`/proc`); a process that cannot be is taken as running. The engine's
/// own sweep, and the test harness's for its servers' directories.
pub fn remove_ended_dirs(prefix: &str, spared: std::time::Duration) {
    let proc = Path::new("/proc");
    if !proc.is_dir() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let ended = pid != std::process::id() && !proc.join(pid.to_string()).exists();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|at| at.elapsed().is_ok_and(|age| age >= spared));
        if ended && old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
