//! Per-command call counts and per-code error counts, for INFO's
//! `commandstats` and `errorstats` sections, counted as Redis 7.0.15's
//! `call`, `rejectCommand` and `afterErrorReply` count them:
//!
//! - `calls`: every run of the command (a script's and an EXEC's
//!   commands included);
//! - `rejected_calls`: a refusal before the run (a wrong arity, ACL,
//!   NOAUTH, OOM, a cluster redirection, a script's checks);
//! - `failed_calls`: a run that replied an error of its own (an EXEC's or
//!   a script's commands count their own errors, not the EXEC's or the
//!   script's);
//! - a container's subcommands are counted by their own names
//!   (`xgroup|createconsumer`); an unknown subcommand or command by none.
//!
//! Counted on every command run (`run_spec`), so kept cheap: commands
//! without subcommands are keyed by the address of their static [`Spec`]
//! (hashed as a number, [`ByNumber`]) instead of by their name; the rest,
//! rarer, by Redis's name for them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use super::Spec;
use crate::command_table;
use crate::hasher::ByNumber;

/// The code of the error reply `text` (`ERR`, `NOGROUP`...), as Redis's
/// `afterErrorReply` reads it: up to the first space in its first 32
/// bytes, `ERR` if there is none.
pub(crate) fn error_code(text: &str) -> &str {
    let head = &text.as_bytes()[..text.len().min(32)];
    match head.iter().position(|&b| b == b' ') {
        Some(end) => &text[..end],
        None => "ERR",
    }
}

/// Calls, refusals and failed calls of one command.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Calls {
    pub(crate) calls: u64,
    pub(crate) rejected: u64,
    pub(crate) failed: u64,
}

impl Calls {
    fn add(&mut self, other: Calls) {
        self.calls += other.calls;
        self.rejected += other.rejected;
        self.failed += other.failed;
    }
}

/// A command of the table, as its calls are counted.
#[derive(Debug)]
enum Counted {
    /// A command without subcommands, under its name.
    Plain(&'static str, Calls),
    /// A container (CONFIG, XGROUP...): each call counted under its
    /// subcommand's name.
    Container,
}

/// The counts of every command run since the start or CONFIG RESETSTAT.
#[derive(Debug, Default)]
pub(crate) struct CommandStats {
    by_spec: HashMap<usize, Counted, ByNumber>,
    /// Subcommands, the transaction commands the session runs itself,
    /// and refusals, by Redis's name for the command.
    by_name: BTreeMap<&'static str, Calls>,
    /// Error replies sent, by their code (`ERR`, `WRONGTYPE`...).
    errors: BTreeMap<String, u64>,
    /// The error reply the running script ends with was counted where it
    /// arose (a `redis.call` that failed): its reply is not counted again
    /// (Redis's `ERR_REPLY_FLAG_NO_STATS_UPDATE`).
    reply_counted: bool,
}

impl CommandStats {
    /// Counts one run of `spec` with the arguments `args`, failed (an
    /// error reply) or not.
    pub(crate) fn record(&mut self, spec: &'static Spec, args: &[&[u8]], failed: bool) {
        let counted = self
            .by_spec
            .entry(std::ptr::from_ref(spec) as usize)
            .or_insert_with(|| match command_table::meta(spec.name) {
                Some(meta) if !meta.subcommands.is_empty() => Counted::Container,
                _ => Counted::Plain(spec.name, Calls::default()),
            });
        let calls = match counted {
            Counted::Plain(_, calls) => calls,
            Counted::Container => {
                let Some(meta) = command_table::of_line(args) else {
                    return;
                };
                let calls = self.by_name.entry(meta.name).or_default();
                // Redis checks a subcommand's arity before it runs it.
                if !super::arity_ok(meta.arity, args.len()) {
                    calls.rejected += 1;
                    return;
                }
                calls
            }
        };
        calls.calls += 1;
        calls.failed += u64::from(failed);
    }

    /// Counts one call of a command the session runs itself (MULTI, EXEC,
    /// DISCARD, WATCH, UNWATCH, RESET), which has no [`Spec`].
    pub(crate) fn record_control(&mut self, name: &'static str, failed: bool) {
        let calls = self.by_name.entry(name).or_default();
        calls.calls += 1;
        calls.failed += u64::from(failed);
    }

    /// Counts the command line `args` as refused before it ran (Redis's
    /// `rejectCommand`); a command Redis does not know counts nowhere.
    pub(crate) fn record_rejected(&mut self, args: &[&[u8]]) {
        if let Some(meta) = command_table::of_line(args) {
            self.by_name.entry(meta.name).or_default().rejected += 1;
        }
    }

    /// Counts a call of `spec` already counted (a blocked command) as
    /// failed after all.
    pub(crate) fn record_failure(&mut self, spec: &'static Spec) {
        if let Some(Counted::Plain(_, calls)) =
            self.by_spec.get_mut(&(std::ptr::from_ref(spec) as usize))
        {
            calls.failed += 1;
        }
    }

    /// Every command counted, by name.
    pub(crate) fn by_name(&self) -> Vec<(&'static str, Calls)> {
        let mut all = self.by_name.clone();
        for counted in self.by_spec.values() {
            if let Counted::Plain(name, calls) = counted {
                all.entry(name).or_default().add(*calls);
            }
        }
        all.into_iter().collect()
    }

    /// Counts the error replies in `reply`: the reply itself, or the
    /// replies of the commands an EXEC ran (`exec`), as Redis counts each
    /// error reply it adds. A reply already counted where it arose (see
    /// [`Self::reply_counted`]) is not.
    pub(crate) fn record_errors(&mut self, reply: &redis::Value, exec: bool) {
        if std::mem::take(&mut self.reply_counted) && !exec {
            return;
        }
        match reply {
            redis::Value::ServerError(e) => self.record_error(e.code()),
            redis::Value::Array(items) if exec => {
                for item in items {
                    self.record_errors(item, false);
                }
            }
            _ => {}
        }
    }

    /// Counts one error reply with the code `code` (`ERR`, `NOGROUP`...).
    pub(crate) fn record_error(&mut self, code: &str) {
        match self.errors.get_mut(code) {
            Some(n) => *n += 1,
            None => {
                self.errors.insert(code.to_string(), 1);
            }
        }
    }

    /// The error reply about to be sent was counted where it arose.
    pub(crate) fn reply_counted(&mut self) {
        self.reply_counted = true;
    }

    /// Error replies sent in all (INFO's `total_error_replies`).
    pub(crate) fn total_errors(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Every error code replied, with its count.
    pub(crate) fn errors(&self) -> impl Iterator<Item = (&str, u64)> {
        self.errors.iter().map(|(code, n)| (code.as_str(), *n))
    }

    /// CONFIG RESETSTAT.
    pub(crate) fn clear(&mut self) {
        self.by_spec.clear();
        self.by_name.clear();
        self.errors.clear();
    }
}

/// How many samples a [`Rate`] averages (Redis's `STATS_METRIC_SAMPLES`).
const RATE_SAMPLES: usize = 16;

/// A counter's rate per second, as Redis's instantaneous metrics give it
/// (`trackInstantaneousMetric`): sampled at every tick of the background
/// cycle (ten a second), each sample the rate since the one before, the
/// rate the average of the last sixteen.
#[derive(Debug, Default)]
pub(crate) struct Rate {
    samples: [u64; RATE_SAMPLES],
    next: usize,
    /// When the counter was last sampled (Unix ms), and its value then.
    last: Option<(i64, u64)>,
}

impl Rate {
    /// Samples the counter, which reads `value` at `now_ms`.
    pub(crate) fn sample(&mut self, now_ms: i64, value: u64) {
        if let Some((at, was)) = self.last {
            let elapsed = u64::try_from(now_ms - at).unwrap_or(0);
            self.samples[self.next] = match elapsed {
                0 => 0,
                ms => value.saturating_sub(was).saturating_mul(1000) / ms,
            };
            self.next = (self.next + 1) % RATE_SAMPLES;
        }
        self.last = Some((now_ms, value));
    }

    /// The rate per second: the average of the samples.
    pub(crate) fn per_second(&self) -> u64 {
        self.samples.iter().sum::<u64>() / RATE_SAMPLES as u64
    }
}

/// The bytes the RESP server read from its clients and wrote to them
/// (INFO's `total_net_input_bytes` and `total_net_output_bytes`), as
/// Redis counts what it reads from and writes to client sockets: each
/// connection adds its own as it reads and writes, without the store's
/// lock. In-process connections have no socket, and count nothing.
#[derive(Debug, Default)]
pub(crate) struct NetBytes {
    input: AtomicU64,
    output: AtomicU64,
}

// Only the RESP server's connections count.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
impl NetBytes {
    /// A connection read `n` bytes.
    pub(crate) fn read(&self, n: usize) {
        self.input.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A connection wrote `n` bytes.
    pub(crate) fn wrote(&self, n: usize) {
        self.output.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The bytes read and written since the start or the last reset.
    pub(crate) fn totals(&self) -> (u64, u64) {
        (
            self.input.load(Ordering::Relaxed),
            self.output.load(Ordering::Relaxed),
        )
    }

    /// Starts the counts again (CONFIG RESETSTAT).
    pub(crate) fn reset(&self) {
        self.input.store(0, Ordering::Relaxed);
        self.output.store(0, Ordering::Relaxed);
    }
}

/// A rate in bytes per second as INFO gives it in kilobytes per second:
/// two decimals, as Redis prints its `instantaneous_*_kbps`.
pub(crate) fn kbps(bytes_per_second: u64) -> String {
    format!("{:.2}", bytes_per_second as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::command::test_util::{conn, err, run, run_args};
    use crate::Connection;

    #[test]
    fn a_byte_rate_reads_in_kilobytes_with_two_decimals() {
        assert_eq!(super::kbps(0), "0.00");
        assert_eq!(super::kbps(2048), "2.00");
        assert_eq!(super::kbps(1536 + 10), "1.51");
    }

    /// The line INFO has for `name` in `section`, if any.
    fn info_line(c: &mut Connection, section: &str, name: &str) -> Option<String> {
        let Value::BulkString(info) = run(c, &format!("INFO {section}")) else {
            panic!("INFO is a bulk string");
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        let prefix = format!("{name}:");
        info.lines()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
    }

    fn cmdstat(c: &mut Connection, name: &str) -> String {
        let line = info_line(c, "commandstats", &format!("cmdstat_{name}"));
        let line = line.unwrap_or_else(|| panic!("no cmdstat_{name}"));
        // The counts, without the timings.
        let (calls, rest) = line.split_once(",usec=").expect("calls first");
        let counts = rest
            .split_once(",rejected_calls=")
            .expect("rejected_calls")
            .1;
        format!("{calls},rejected_calls={counts}")
    }

    #[test]
    fn refusals_count_as_rejected_and_errors_as_failed() {
        let mut c = conn();
        run(&mut c, "SET k");
        run(&mut c, "SET k v");
        run(&mut c, "SET k v");
        assert_eq!(
            cmdstat(&mut c, "set"),
            "calls=2,rejected_calls=1,failed_calls=0"
        );
        run(&mut c, "HSET k f v");
        assert_eq!(
            cmdstat(&mut c, "hset"),
            "calls=1,rejected_calls=0,failed_calls=1"
        );
        // Queued with a wrong arity: the EXEC fails, the SET is refused.
        run(&mut c, "MULTI");
        run(&mut c, "SET x");
        run(&mut c, "EXEC");
        assert_eq!(
            cmdstat(&mut c, "set"),
            "calls=2,rejected_calls=2,failed_calls=0"
        );
        assert_eq!(
            cmdstat(&mut c, "exec"),
            "calls=1,rejected_calls=0,failed_calls=1"
        );
        assert_eq!(
            info_line(&mut c, "errorstats", "errorstat_EXECABORT").as_deref(),
            Some("count=1")
        );
        // An unknown command counts nowhere but in errorstats.
        run(&mut c, "NOSUCH");
        assert_eq!(
            info_line(&mut c, "stats", "total_error_replies").as_deref(),
            Some("5")
        );
    }

    #[test]
    fn subcommands_count_under_their_own_names() {
        let mut c = conn();
        run(&mut c, "XADD s * f v");
        assert!(matches!(
            run(&mut c, "XGROUP CREATECONSUMER s g c"),
            Value::ServerError(_)
        ));
        run(&mut c, "XGROUP CREATECONSUMER s g");
        assert_eq!(
            cmdstat(&mut c, "xgroup|createconsumer"),
            "calls=1,rejected_calls=1,failed_calls=1"
        );
        assert_eq!(info_line(&mut c, "commandstats", "cmdstat_xgroup"), None);
        // An unknown subcommand counts nowhere but in errorstats.
        run(&mut c, "XGROUP NOSUCH");
        assert_eq!(
            info_line(&mut c, "errorstats", "errorstat_ERR").as_deref(),
            Some("count=2")
        );
    }

    #[test]
    fn a_scripts_command_errors_are_counted_once() {
        let mut c = conn();
        // Caught by `pcall`: the command's error counts, the script's
        // reply is no error.
        run_args(
            &mut c,
            &[
                "EVAL",
                "redis.pcall('XGROUP','CREATECONSUMER','s1','g','c') return 1",
                "0",
            ],
        );
        assert_eq!(
            cmdstat(&mut c, "xgroup|createconsumer"),
            "calls=1,rejected_calls=0,failed_calls=1"
        );
        assert_eq!(
            cmdstat(&mut c, "eval"),
            "calls=1,rejected_calls=0,failed_calls=0"
        );
        assert_eq!(
            info_line(&mut c, "stats", "total_error_replies").as_deref(),
            Some("1")
        );
        // Raised by `redis.call`: counted by the command, not again as
        // the script's reply, which fails the EVAL.
        run(&mut c, "SET str v");
        run_args(
            &mut c,
            &["EVAL", "return redis.call('HSET','str','f','v')", "0"],
        );
        assert_eq!(
            info_line(&mut c, "errorstats", "errorstat_WRONGTYPE").as_deref(),
            Some("count=1")
        );
        assert_eq!(
            cmdstat(&mut c, "eval"),
            "calls=2,rejected_calls=0,failed_calls=1"
        );
        // A script's own error counts once.
        run_args(&mut c, &["EVAL", "error('boom')", "0"]);
        // A refusal of the script's command counts it as rejected.
        run_args(&mut c, &["EVAL", "return redis.pcall('GET')", "0"]);
        assert_eq!(
            cmdstat(&mut c, "get"),
            "calls=0,rejected_calls=1,failed_calls=0"
        );
        assert_eq!(
            info_line(&mut c, "stats", "total_error_replies").as_deref(),
            Some("4")
        );
        run(&mut c, "CONFIG RESETSTAT");
        assert_eq!(info_line(&mut c, "errorstats", "errorstat_ERR"), None);
    }

    #[test]
    fn over_maxmemory_commands_that_may_grow_the_data_are_refused() {
        let mut c = conn();
        let oom = "OOM command not allowed when used memory > 'maxmemory'.";
        run(&mut c, "SET a b");
        run(&mut c, "CONFIG SET maxmemory 1");
        assert_eq!(run(&mut c, "SET a b"), err(oom));
        assert_eq!(
            cmdstat(&mut c, "set"),
            "calls=1,rejected_calls=1,failed_calls=0"
        );
        assert_eq!(
            info_line(&mut c, "errorstats", "errorstat_OOM").as_deref(),
            Some("count=1")
        );
        // What cannot grow the data runs.
        assert_eq!(run(&mut c, "GET a"), Value::BulkString(b"b".to_vec()));
        assert_eq!(run(&mut c, "DEL a"), Value::Int(1));
        // A script's first write is refused, unless it says `allow-oom`.
        assert_eq!(
            run_args(&mut c, &["EVAL", "return redis.pcall('SET','a','b')", "0"]),
            err(oom)
        );
        assert_eq!(
            run_args(
                &mut c,
                &["EVAL", "#!lua\nreturn redis.call('SET','a','b')", "0"]
            ),
            err(oom)
        );
        assert_eq!(
            run_args(
                &mut c,
                &[
                    "EVAL",
                    "#!lua flags=allow-oom\nreturn redis.call('SET','a','b')",
                    "0"
                ]
            ),
            Value::Okay
        );
        // In a transaction everything but EXEC and DISCARD is refused.
        run(&mut c, "MULTI");
        assert_eq!(run(&mut c, "GET a"), err(oom));
        run(&mut c, "DISCARD");
        run(&mut c, "CONFIG SET maxmemory 0");
        assert_eq!(run(&mut c, "SET a b"), Value::Okay);
    }

    #[test]
    fn a_rate_averages_its_last_sixteen_samples() {
        let mut rate = super::Rate::default();
        rate.sample(0, 0);
        // 100 more every 100 ms: 1,000 a second once the window is full.
        for tick in 1..=8 {
            rate.sample(tick * 100, tick as u64 * 100);
        }
        assert_eq!(rate.per_second(), 500);
        for tick in 9..=16 {
            rate.sample(tick * 100, tick as u64 * 100);
        }
        assert_eq!(rate.per_second(), 1000);
        // A counter reset (CONFIG RESETSTAT) reads as no commands.
        rate.sample(1700, 0);
        assert_eq!(rate.per_second(), 937);
    }
}
