//! Server-side scripts: how the library runs the Lua scripts that make a
//! guarded write one atomic round trip, the same text on every server
//! (the memory engine served over RESP runs Lua as Redis does). In
//! process, the checked writes and the sorted increment run their steps
//! on the engine without Lua instead (`Engine::atomically`), where a
//! script costs several times its commands.
//!
//! A script ([`Lua`]) is sent as EVAL, with its text, the first time a
//! `Db` runs it, and as EVALSHA after that: EVAL caches the script on the
//! server, so no write pays for loading it separately (redis-rs's
//! `Script` sends EVALSHA first and, on NOSCRIPT, SCRIPT LOAD and EVALSHA
//! again: three round trips for each script a server has not seen, which
//! the write scripts written per shape would pay once per shape). A
//! server that lost its scripts (a restart, SCRIPT FLUSH, another cluster
//! node) answers EVALSHA with NOSCRIPT, and the call is sent again as
//! EVAL.
//!
//! A server may refuse scripts altogether: an ACL user without
//! `@scripting`, or a proxy without EVAL. [`Call::invoke`] then answers
//! `None` and the caller takes its path without a script (a WATCH
//! transaction, or ordered steps), so that such a user gets the same
//! results, in more round trips.
//!
//! A refusal is remembered for [`RETRY_AFTER`] ([`Scripts`]): without
//! that, every write on such a server paid a refused EVALSHA first. Past
//! it the next write tries a script again, so that a user granted
//! `@scripting` meanwhile gets the one-round-trip path back.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use redis::{Cmd, FromRedisValue, RedisError, ToRedisArgs};

use crate::{Db, Result};

/// How long a refusal of scripts is taken as the server's answer.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// The most scripts a `Db` remembers as sent with their text; past it,
/// every script not among them goes as EVAL (the write scripts per shape
/// are bounded well below).
const REMEMBERED: usize = 4096;

/// What a `Db` knows of its server's scripts, shared by its clones: when
/// the server last refused one (milliseconds since `base`, 0 for never),
/// and the SHA1s of the scripts it has sent as EVAL.
#[derive(Debug)]
pub(crate) struct Scripts {
    base: Instant,
    last: AtomicU64,
    sent: Mutex<HashSet<String, foldhash::fast::RandomState>>,
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts {
            base: Instant::now(),
            last: AtomicU64::new(0),
            sent: Mutex::new(HashSet::default()),
        }
    }
}

impl Scripts {
    fn now(&self) -> u64 {
        // +1: a refusal in the first millisecond is not "never".
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// Whether a script was refused less than [`RETRY_AFTER`] ago.
    fn recent(&self) -> bool {
        let last = self.last.load(Ordering::Relaxed);
        let window = u64::try_from(RETRY_AFTER.as_millis()).unwrap_or(u64::MAX);
        last != 0 && self.now().saturating_sub(last) < window
    }

    fn record(&self) {
        self.last.store(self.now(), Ordering::Relaxed);
    }

    fn was_sent(&self, sha: &str) -> bool {
        self.sent.lock().contains(sha)
    }

    fn mark_sent(&self, sha: &str, sent: bool) {
        let mut all = self.sent.lock();
        if !sent {
            all.remove(sha);
        } else if all.len() < REMEMBERED {
            all.insert(sha.to_string());
        }
    }
}

/// A script of the library: its text and its SHA1.
pub(crate) struct Lua {
    text: Box<str>,
    sha: String,
}

impl Lua {
    pub(crate) fn new(text: &str) -> Lua {
        Lua {
            text: text.into(),
            sha: redis::Script::new(text).get_hash().to_string(),
        }
    }

    /// A call of this script with `keys` (`KEYS`); its arguments follow.
    pub(crate) fn call<K: ToRedisArgs>(&self, keys: &[K]) -> Call<'_> {
        self.call_sized(keys, 29, 400)
    }

    /// [`call`](Self::call) with room for `args` more arguments of
    /// `bytes` bytes in all, where the caller knows them: its buffers then
    /// never grow.
    pub(crate) fn call_sized<K: ToRedisArgs>(
        &self,
        keys: &[K],
        args: usize,
        bytes: usize,
    ) -> Call<'_> {
        let mut evalsha = crate::command::sized("EVALSHA", 2 + keys.len() + args, 112 + bytes);
        evalsha.arg(&self.sha).arg(keys.len()).arg(keys);
        Call { lua: self, evalsha }
    }
}

/// A script's call being built: EVALSHA, the key count, the keys, the
/// arguments. Built as it is sent nearly always; the first call of a
/// script on a `Db` (or after NOSCRIPT) copies it with EVAL and the text.
pub(crate) struct Call<'a> {
    lua: &'a Lua,
    evalsha: Cmd,
}

impl Call<'_> {
    /// Adds `ARGV` values.
    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.evalsha.arg(arg);
        self
    }

    /// The call as EVAL, with the script's text.
    fn eval(&self) -> Cmd {
        let body = &*self.lua.text;
        // Sized at once: a write's call has dozens of arguments, and each
        // growth of the buffer copies them all.
        let bytes: usize = self
            .evalsha
            .args_iter()
            .map(|a| match a {
                redis::Arg::Simple(bytes) => bytes.len(),
                _ => 0,
            })
            .sum();
        let mut cmd = Cmd::with_capacity(self.evalsha.args_iter().len(), bytes + body.len());
        cmd.arg("EVAL").arg(body);
        for arg in self.evalsha.args_iter().skip(2) {
            if let redis::Arg::Simple(bytes) = arg {
                cmd.arg(bytes);
            }
        }
        cmd
    }

    /// Runs the call on `db`: `Some(reply)`, or `None` if the server
    /// refuses scripts ([`refused`]), now or lately. Any other error is
    /// the caller's.
    pub(crate) async fn invoke<T: FromRedisValue>(&self, db: &Db) -> Result<Option<T>> {
        let scripts = db.scripts();
        if scripts.recent() {
            return Ok(None);
        }
        let sha = &self.lua.sha;
        let mut with_text = !scripts.was_sent(sha);
        let mut conn = db.clone();
        loop {
            let sent = if with_text {
                self.eval().query_async::<T>(&mut conn).await
            } else {
                self.evalsha.query_async::<T>(&mut conn).await
            };
            match sent {
                Ok(reply) => {
                    if with_text {
                        scripts.mark_sent(sha, true);
                    }
                    return Ok(Some(reply));
                }
                Err(err) if !with_text && no_script(&err) => {
                    scripts.mark_sent(sha, false);
                    with_text = true;
                }
                Err(err) if refused(&err) => {
                    scripts.record();
                    return Ok(None);
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
}

/// Whether `err` is EVALSHA's NOSCRIPT: the server has not the script.
fn no_script(err: &RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// Whether `err` says the server runs no scripts for us: the ACL denies
/// EVALSHA (NOPERM), or the command does not exist there.
fn refused(err: &RedisError) -> bool {
    err.code() == Some("NOPERM")
        || err
            .detail()
            .is_some_and(|d| d.starts_with("unknown command"))
}
