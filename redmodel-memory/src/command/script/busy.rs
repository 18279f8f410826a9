//! A script running past `busy-reply-threshold`: Redis then answers other
//! clients BUSY and lets them SCRIPT KILL or FUNCTION KILL it.
//!
//! A script holds the store's lock from start to end, so what other
//! connections need to see lives here, outside the lock, in atomics
//! shared by the store and the RESP server's connections.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

/// When a script started, its name and its command.
type Started = (Instant, String, Vec<Vec<u8>>);

/// The running script, as other connections see it.
#[derive(Debug)]
pub(crate) struct Busy {
    running: AtomicBool,
    /// EVAL (SCRIPT KILL kills it), or a function (FUNCTION KILL).
    eval: AtomicBool,
    killed: AtomicBool,
    /// The script has run a write command: it cannot be killed.
    dirty: AtomicBool,
    /// The script's hook has run once (see `sandbox::install_hook`).
    checked: AtomicBool,
    threshold_ms: AtomicU64,
    /// The numbers of libraries and functions (FUNCTION STATS).
    libraries: AtomicU64,
    functions: AtomicU64,
    /// When the script started, its name and command (FUNCTION STATS).
    started: Mutex<Option<Started>>,
}

impl Default for Busy {
    fn default() -> Self {
        Busy {
            running: AtomicBool::new(false),
            eval: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            dirty: AtomicBool::new(false),
            checked: AtomicBool::new(false),
            threshold_ms: AtomicU64::new(5000),
            libraries: AtomicU64::new(0),
            functions: AtomicU64::new(0),
            started: Mutex::new(None),
        }
    }
}

/// What a connection that cannot run its command answers.
#[cfg(feature = "server")]
pub(crate) const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
#[cfg(feature = "server")]
pub(crate) const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

impl Busy {
    /// A script starts (its lock held until [`Busy::end`]).
    pub(crate) fn start(&self, eval: bool, threshold_ms: u64, name: &str, command: Vec<Vec<u8>>) {
        *self.started.lock() = Some((Instant::now(), name.to_string(), command));
        self.eval.store(eval, Ordering::SeqCst);
        self.killed.store(false, Ordering::SeqCst);
        self.dirty.store(false, Ordering::SeqCst);
        self.checked.store(false, Ordering::SeqCst);
        self.threshold_ms.store(threshold_ms, Ordering::SeqCst);
        self.running.store(true, Ordering::SeqCst);
    }

    /// The numbers of libraries and functions FUNCTION STATS reports
    /// while a script runs.
    pub(crate) fn set_counts(&self, libraries: usize, functions: usize) {
        self.libraries.store(libraries as u64, Ordering::SeqCst);
        self.functions.store(functions as u64, Ordering::SeqCst);
    }

    pub(crate) fn end(&self) {
        self.running.store(false, Ordering::SeqCst);
        self.killed.store(false, Ordering::SeqCst);
        *self.started.lock() = None;
    }

    /// The script ran a write command.
    pub(crate) fn wrote(&self) {
        self.dirty.store(true, Ordering::SeqCst);
    }

    /// Whether this is the first time the running script's hook runs.
    pub(crate) fn first_check(&self) -> bool {
        !self.checked.swap(true, Ordering::SeqCst)
    }

    /// Whether a kill was asked for (checked by the script's hook).
    pub(crate) fn killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// Whether a script has run past the threshold: `Some(is_eval)`.
    #[cfg(feature = "server")]
    pub(crate) fn timed_out(&self) -> Option<bool> {
        if !self.running.load(Ordering::SeqCst) {
            return None;
        }
        let started = self.started.lock();
        let (at, _, _) = started.as_ref()?;
        let threshold = self.threshold_ms.load(Ordering::SeqCst);
        (at.elapsed().as_millis() >= u128::from(threshold))
            .then(|| self.eval.load(Ordering::SeqCst))
    }

    /// The reply to a command from another connection while the script
    /// is timed out (Redis's `processCommand` and `scriptKill`).
    #[cfg(feature = "server")]
    pub(crate) fn answer(&self, args: &[&[u8]]) -> Result<redis::Value, String> {
        let eval = self.eval.load(Ordering::SeqCst);
        let sub = |name: &str, sub: &str| {
            args.len() == 2
                && args[0].eq_ignore_ascii_case(name.as_bytes())
                && args[1].eq_ignore_ascii_case(sub.as_bytes())
        };
        let busy = if eval { BUSY_EVAL } else { BUSY_FUNCTION };
        let kill = |as_eval: bool| {
            if self.dirty.load(Ordering::SeqCst) {
                return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.".to_string());
            }
            if as_eval != eval {
                return Err(busy.to_string());
            }
            self.killed.store(true, Ordering::SeqCst);
            Ok(redis::Value::Okay)
        };
        if sub("script", "kill") {
            return kill(true);
        }
        if sub("function", "kill") {
            return kill(false);
        }
        if sub("function", "stats") {
            if eval {
                return Err(BUSY_EVAL.to_string());
            }
            let started = self.started.lock();
            // Maps, as Redis replies in RESP3 (flat arrays for RESP2: the
            // connection lowers the reply).
            let bulk = |s: &str| redis::Value::BulkString(s.as_bytes().to_vec());
            let running = match started.as_ref() {
                Some((at, name, command)) => redis::Value::Map(vec![
                    (bulk("name"), bulk(name)),
                    (
                        bulk("command"),
                        redis::Value::Array(
                            command
                                .iter()
                                .map(|a| redis::Value::BulkString(a.clone()))
                                .collect(),
                        ),
                    ),
                    (
                        bulk("duration_ms"),
                        redis::Value::Int(at.elapsed().as_millis() as i64),
                    ),
                ]),
                None => redis::Value::Nil,
            };
            return Ok(redis::Value::Map(vec![
                (bulk("running_script"), running),
                (
                    bulk("engines"),
                    redis::Value::Map(vec![(
                        bulk("LUA"),
                        redis::Value::Map(vec![
                            (
                                bulk("libraries_count"),
                                redis::Value::Int(self.libraries.load(Ordering::SeqCst) as i64),
                            ),
                            (
                                bulk("functions_count"),
                                redis::Value::Int(self.functions.load(Ordering::SeqCst) as i64),
                            ),
                        ]),
                    )]),
                ),
            ]));
        }
        Err(busy.to_string())
    }
}
