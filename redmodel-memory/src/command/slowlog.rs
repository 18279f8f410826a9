//! SLOWLOG GET / LEN / RESET / HELP and the log itself, as Redis 7.0.15
//! keeps it: every command a client runs (a top-level one, or one an EXEC
//! runs; not EXEC itself, which Redis flags `skip_slowlog`, nor a
//! script's calls) that took at least `slowlog-log-slower-than` µs, newest
//! first, at most `slowlog-max-len` entries. An entry holds its id, the
//! Unix time, the duration in µs, the arguments as Redis trims them (32 at
//! most, 128 bytes each; secrets "(redacted)"), and the client's address
//! and name: a RESP connection's, filled in after the command (see
//! `SlowLog::fill`, with the `server` feature); an in-process client has
//! neither, as Redis's clients without a socket.

use std::collections::VecDeque;
use std::time::Duration;

use super::{help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::args::parse_i64;
use crate::error::CmdError;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "slowlog",
    arity: -2,
    handler: slowlog,
}];

/// Redis's `SLOWLOG_ENTRY_MAX_ARGC` and `SLOWLOG_ENTRY_MAX_STRING`.
const MAX_ARGS: usize = 32;
const MAX_BYTES: usize = 128;

/// One entry.
#[derive(Debug)]
struct Entry {
    id: u64,
    /// Unix seconds.
    time: i64,
    micros: u64,
    args: Vec<Vec<u8>>,
    /// The client's address and name; `None` until the connection fills
    /// them in.
    client: Option<(String, Vec<u8>)>,
}

/// The log, newest first, with its settings.
#[derive(Debug, Default)]
pub(crate) struct SlowLog {
    entries: VecDeque<Entry>,
    next_id: u64,
    /// `slowlog-log-slower-than` in µs (negative: nothing is logged).
    slower_than: i64,
    max_len: usize,
}

impl SlowLog {
    /// Takes the configuration's settings (at start and after CONFIG SET),
    /// dropping the oldest entries past a smaller `slowlog-max-len`.
    pub(crate) fn configure(&mut self, limits: &crate::config::Limits) {
        self.slower_than = limits.slowlog_slower_than;
        self.max_len = usize::try_from(limits.slowlog_max_len).unwrap_or(usize::MAX);
        self.entries.truncate(self.max_len);
    }

    /// Whether commands are timed at all (`slowlog-log-slower-than` is
    /// not negative): the clock is read only then.
    pub(crate) fn enabled(&self) -> bool {
        self.slower_than >= 0
    }

    /// Whether a command that ran for `took` is slow enough to log.
    pub(crate) fn is_slow(&self, took: Duration) -> bool {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.enabled() && micros >= self.slower_than.unsigned_abs()
    }

    /// Logs the command `args` that ran for `took` (at `now`, Unix ms)
    /// if that is slow enough and Redis would have run it (a command and
    /// subcommand it has, with a right arity: Redis refuses the others
    /// before it times anything; the caller checks that the engine has it). `addr`: the client's address, its name empty
    /// (an in-process client's is empty, a script's calls are `?:0`);
    /// `None` for a RESP connection, which fills in its address and name
    /// after the command.
    pub(crate) fn record(&mut self, args: &[&[u8]], took: Duration, now: i64, addr: Option<&str>) {
        // Most commands are fast: the address is copied only for an entry.
        if self.is_slow(took) {
            let client = addr.map(|addr| (addr.to_string(), Vec::new()));
            self.record_client(args, took, now, client);
        }
    }

    /// [`Self::record`] with the client's address and name given (a
    /// blocked command, logged when another client's command serves it).
    #[cold]
    pub(crate) fn record_client(
        &mut self,
        args: &[&[u8]],
        took: Duration,
        now: i64,
        client: Option<(String, Vec<u8>)>,
    ) {
        if !self.is_slow(took) {
            return;
        }
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let ran = crate::command_table::of_line(args).is_some_and(|meta| {
            super::arity_ok(meta.arity, args.len()) && !meta.has_flag("skip_slowlog")
        });
        if !ran {
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_front(Entry {
            id,
            time: now.div_euclid(1000),
            micros,
            args: trimmed(args),
            client,
        });
        self.entries.truncate(self.max_len);
    }

    /// Whether the newest entry waits for its connection's address and
    /// name.
    #[cfg(feature = "server")]
    pub(crate) fn unfilled(&self) -> bool {
        self.entries.front().is_some_and(|e| e.client.is_none())
    }

    /// Gives the entries that wait for them the connection's address and
    /// name.
    #[cfg(feature = "server")]
    pub(crate) fn fill(&mut self, addr: &str, name: Option<&[u8]>) {
        for entry in self.entries.iter_mut().take_while(|e| e.client.is_none()) {
            entry.client = Some((addr.to_string(), name.unwrap_or_default().to_vec()));
        }
    }
}

/// The arguments as Redis keeps them: at most 32 (the last saying how
/// many more there were), each at most 128 bytes (then how many more),
/// secrets redacted.
fn trimmed(args: &[&[u8]]) -> Vec<Vec<u8>> {
    let redacted = crate::redact::redacted_positions(args);
    let kept = args.len().min(MAX_ARGS);
    (0..kept)
        .map(|i| {
            if kept != args.len() && i == kept - 1 {
                return format!("... ({} more arguments)", args.len() - kept + 1).into_bytes();
            }
            if redacted(i) {
                return b"(redacted)".to_vec();
            }
            let arg = args[i];
            if arg.len() > MAX_BYTES {
                let mut cut = arg[..MAX_BYTES].to_vec();
                cut.extend_from_slice(
                    format!("... ({} more bytes)", arg.len() - MAX_BYTES).as_bytes(),
                );
                return cut;
            }
            arg.to_vec()
        })
        .collect()
}

/// SLOWLOG's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "get",
        arity: -2,
        handler: slowlog_get,
    },
    Sub {
        name: "len",
        arity: 2,
        handler: slowlog_len,
    },
    Sub {
        name: "reset",
        arity: 2,
        handler: slowlog_reset,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: slowlog_help,
    },
];

fn slowlog(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

/// SLOWLOG GET \[count\]: the newest `count` entries (10 by default, -1 for
/// all).
fn slowlog_get(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let count = match args {
        [_, _] => 10,
        [_, _, count] => {
            let n = parse_i64(count)
                .filter(|&n| n >= -1)
                .ok_or_else(|| CmdError::err("count should be greater than or equal to -1"))?;
            usize::try_from(n).unwrap_or(usize::MAX)
        }
        _ => {
            return Err(CmdError::err(format!(
                "unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
                String::from_utf8_lossy(args[1])
            )))
        }
    };
    let entries = ctx.store.slowlog.entries.iter().take(count);
    Ok(reply::array(
        entries
            .map(|e| {
                let (addr, name) = e.client.clone().unwrap_or_default();
                reply::array(vec![
                    reply::int(i64::try_from(e.id).unwrap_or(i64::MAX)),
                    reply::int(e.time),
                    reply::int(i64::try_from(e.micros).unwrap_or(i64::MAX)),
                    reply::array(e.args.iter().map(|a| reply::bulk(a.clone())).collect()),
                    reply::bulk(addr),
                    reply::bulk(name),
                ])
            })
            .collect(),
    ))
}

fn slowlog_len(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.store.slowlog.entries.len()))
}

/// SLOWLOG RESET: empties the log; ids go on from where they were.
fn slowlog_reset(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    ctx.store.slowlog.entries.clear();
    Ok(reply::ok())
}

fn slowlog_help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "slowlog",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    ))
}
