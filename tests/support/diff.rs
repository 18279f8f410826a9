//! Differential testing: the same commands on the memory engine and on a
//! private real `redis-server`, replies compared as `redis::Value`s.
//!
//! The real server is the reference: a [`Mismatch`] says what Redis
//! replied (`expected`) and what the engine replied (`got`).
//!
//! Replies are compared exactly, except where Redis itself defines no
//! order or no single value ([`Mode`], chosen from the command by
//! [`mode_of`]): set members and hash fields are compared sorted, random
//! picks by shape only, TTLs within a small tolerance (the two sides read
//! the clock a few microseconds apart). A SCAN is compared over a complete
//! iteration ([`Differ::scan_all`]): which keys come back in which step
//! is up to each implementation, the set of keys is not.
//!
//! Each side has any number of client connections (index 0, 1, ...), for
//! WATCH tests; [`Differ::run`] remembers what each one queued inside
//! MULTI so that the replies inside an EXEC are compared with the modes of
//! the queued commands. A command that blocks (BLPOP...) is sent with
//! [`Differ::send`] and its reply read later with [`Differ::receive`],
//! once other connections have run what serves it.

use std::fmt;
use std::sync::LazyLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redis::{ConnectionLike, Value};
use redmodel::memory::{self, Engine};

use crate::server::RedisServer;

/// One command: its name and arguments.
pub type Args = Vec<Vec<u8>>;

/// How two replies are compared.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// `==` on the `redis::Value`s.
    Exact,
    /// An array whose order Redis does not define: compared sorted.
    Unordered,
    /// A flat array of pairs (HGETALL, WITHVALUES) in no defined order:
    /// compared as sorted pairs.
    UnorderedPairs,
    /// A time to live or an expire time: negative values (-1, -2) exactly,
    /// others within this tolerance.
    Ttl(i64),
    /// A random pick: same kind of reply, same number of elements.
    Shape,
    /// EXEC: the replies of the queued commands, each with its own mode.
    Exec(Vec<Mode>),
    /// HELLO: the server's description, but for the connection's `id`,
    /// which differs by design.
    Hello,
    /// ACL LOG: every field of every entry but `age-seconds` (a clock)
    /// and `client-info` (the connection's CLIENT LIST line).
    AclLog,
    /// SLOWLOG GET: every field of every entry but the time, the duration
    /// (each side's clock) and the client's address (a socket's on one
    /// side, none on the in-process one).
    SlowLog,
    /// MEMORY STATS: the same field names in the same order, each value
    /// of the same type (the values are each side's own measures).
    Fields,
    /// LATENCY LATEST, HISTORY and HISTOGRAM: the same events (commands)
    /// with the same calls, their times and durations masked (each
    /// side's own measures).
    Latency,
    /// DEBUG OBJECT: the same line but for the value's address and its
    /// LRU clock and idle time.
    DebugObject,
    /// XPENDING's extended form, XINFO CONSUMERS and XINFO STREAM FULL:
    /// exactly, but for the idle and delivery times (read off each side's
    /// clock), which are masked.
    Idle,
}

/// Counts at least this large make SPOP/SRANDMEMBER/HRANDFIELD/ZRANDMEMBER
/// return the whole collection (our generators use small collections), so
/// the reply is compared as a set, not just by shape.
pub const WHOLE_COUNT: i64 = 50;

/// The comparison mode for a command's reply.
pub fn mode_of(args: &[Vec<u8>]) -> Mode {
    let Some(name) = args.first() else {
        return Mode::Exact;
    };
    let name = String::from_utf8_lossy(name).to_ascii_uppercase();
    let count = args
        .get(2)
        .and_then(|c| std::str::from_utf8(c).ok())
        .and_then(|c| c.parse::<i64>().ok());
    let flag = |f: &str| {
        args.get(3)
            .is_some_and(|a| a.eq_ignore_ascii_case(f.as_bytes()))
    };
    match name.as_str() {
        "SMEMBERS" | "SINTER" | "SUNION" | "SDIFF" | "HKEYS" | "HVALS" | "KEYS" => Mode::Unordered,
        "HGETALL" => Mode::UnorderedPairs,
        "HELLO" => Mode::Hello,
        "TTL" | "EXPIRETIME" => Mode::Ttl(1),
        // Seconds of a clock that may tick between the two servers' replies.
        "OBJECT"
            if args
                .get(1)
                .is_some_and(|s| s.eq_ignore_ascii_case(b"IDLETIME")) =>
        {
            Mode::Ttl(1)
        }
        "PTTL" | "PEXPIRETIME" => Mode::Ttl(1500),
        "SPOP" | "SRANDMEMBER" => match count {
            Some(n) if n >= WHOLE_COUNT => Mode::Unordered,
            _ => Mode::Shape,
        },
        "HRANDFIELD" | "ZRANDMEMBER" => match count {
            Some(n) if n >= WHOLE_COUNT && (flag("WITHVALUES") || flag("WITHSCORES")) => {
                Mode::UnorderedPairs
            }
            Some(n) if n >= WHOLE_COUNT => Mode::Unordered,
            _ => Mode::Shape,
        },
        "SCAN" | "HSCAN" | "SSCAN" | "ZSCAN" | "RANDOMKEY" => Mode::Shape,
        // A set `BY nosort` comes in its iteration order (but for STORE,
        // which sorts it).
        "SORT" | "SORT_RO" if unsorted(args) => Mode::Shape,
        // ACL: the log's times and client lines; a category's commands
        // come in Redis's hash table's order; passwords are random.
        "ACL" => {
            let sub = args
                .get(1)
                .map(|s| String::from_utf8_lossy(s).to_ascii_uppercase());
            match (sub.as_deref(), args.len()) {
                (Some("LOG"), 2) => Mode::AclLog,
                (Some("LOG"), 3) if !args[2].eq_ignore_ascii_case(b"reset") => Mode::AclLog,
                (Some("CAT"), 3) => Mode::Unordered,
                (Some("GENPASS"), _) => Mode::Shape,
                _ => Mode::Exact,
            }
        }
        "XPENDING" if args.len() > 3 => Mode::Idle,
        "SLOWLOG" if args.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"GET")) => Mode::SlowLog,
        "MEMORY" if args.len() == 2 && args[1].eq_ignore_ascii_case(b"STATS") => Mode::Fields,
        "LATENCY"
            if args.get(1).is_some_and(|s| {
                [&b"LATEST"[..], b"HISTORY", b"HISTOGRAM"]
                    .iter()
                    .any(|sub| s.eq_ignore_ascii_case(sub))
            }) =>
        {
            Mode::Latency
        }
        "DEBUG"
            if args
                .get(1)
                .is_some_and(|s| s.eq_ignore_ascii_case(b"OBJECT")) =>
        {
            Mode::DebugObject
        }
        "XINFO"
            if args
                .get(1)
                .is_some_and(|a| a.eq_ignore_ascii_case(b"CONSUMERS"))
                || args.iter().any(|a| a.eq_ignore_ascii_case(b"FULL")) =>
        {
            Mode::Idle
        }
        _ => Mode::Exact,
    }
}

/// Whether a SORT says `BY` a pattern without `*` and does not STORE: a
/// set is then returned in no defined order.
fn unsorted(args: &[Vec<u8>]) -> bool {
    let is = |a: &[u8], s: &str| a.eq_ignore_ascii_case(s.as_bytes());
    let by_constant = args
        .windows(2)
        .any(|w| is(&w[0], "BY") && !w[1].contains(&b'*'));
    by_constant && !args.iter().any(|a| is(a, "STORE"))
}

/// An ACL LOG reply without what differs by design: each entry's
/// `age-seconds` and `client-info` values are blanked.
fn acl_log_masked(v: &Value) -> Value {
    let Value::Array(entries) = v else {
        return v.clone();
    };
    let mask = |entry: &Value| -> Value {
        let Value::Array(fields) = entry else {
            return entry.clone();
        };
        let mut fields = fields.clone();
        for i in (0..fields.len().saturating_sub(1)).step_by(2) {
            let volatile = matches!(&fields[i], Value::BulkString(k)
                if k.as_slice() == b"age-seconds" || k.as_slice() == b"client-info");
            if volatile {
                fields[i + 1] = Value::Nil;
            }
        }
        Value::Array(fields)
    };
    Value::Array(entries.iter().map(mask).collect())
}

/// Whether `real` and `engine` agree under `mode`.
pub fn agree(mode: &Mode, real: &Value, engine: &Value) -> bool {
    match (mode, real, engine) {
        (Mode::Exact, r, e) => r == e,
        (Mode::AclLog, r, e) => acl_log_masked(r) == acl_log_masked(e),
        (Mode::Unordered, Value::Array(r), Value::Array(e))
        | (Mode::Unordered, Value::Set(r), Value::Set(e)) => sorted(r, 1) == sorted(e, 1),
        // RESP3: a map (HGETALL), or [field, value] pairs (WITHVALUES).
        (Mode::UnorderedPairs, Value::Map(r), Value::Map(e)) => {
            let pairs = |m: &[(Value, Value)]| {
                let mut v: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{} => {}", show(k), show(v)))
                    .collect();
                v.sort();
                v
            };
            pairs(r) == pairs(e)
        }
        (Mode::UnorderedPairs, Value::Array(r), Value::Array(e))
            if r.first().is_some_and(|p| matches!(p, Value::Array(_))) =>
        {
            sorted(r, 1) == sorted(e, 1)
        }
        (Mode::UnorderedPairs, Value::Array(r), Value::Array(e)) => {
            r.len() % 2 == 0 && sorted(r, 2) == sorted(e, 2)
        }
        (Mode::Hello, Value::Map(r), Value::Map(e)) => {
            let kept = |m: &[(Value, Value)]| -> Vec<(Value, Value)> {
                m.iter()
                    .filter(|(k, _)| !matches!(k, Value::BulkString(b) if b == b"id"))
                    .cloned()
                    .collect()
            };
            kept(r) == kept(e)
        }
        (Mode::Hello, Value::Array(r), Value::Array(e)) => {
            let kept = |a: &[Value]| -> Vec<Value> {
                a.chunks(2)
                    .filter(|p| !matches!(&p[0], Value::BulkString(b) if b == b"id"))
                    .flatten()
                    .cloned()
                    .collect()
            };
            kept(r) == kept(e)
        }
        (Mode::Ttl(tolerance), Value::Int(r), Value::Int(e)) => {
            if *r < 0 || *e < 0 {
                r == e
            } else {
                r.abs_diff(*e) <= tolerance.unsigned_abs()
            }
        }
        (Mode::Shape, r, e) => same_shape(r, e),
        (Mode::Fields, r, e) => same_fields(r, e),
        (Mode::SlowLog, r, e) => slowlog_masked(r) == slowlog_masked(e),
        (Mode::Idle, r, e) => mask_idle(r) == mask_idle(e),
        (Mode::Latency, r, e) => latency_masked(r) == latency_masked(e),
        (Mode::DebugObject, r, e) => debug_object_masked(r) == debug_object_masked(e),
        (Mode::Exec(modes), Value::Array(r), Value::Array(e)) if r.len() == modes.len() => {
            e.len() == r.len()
                && modes
                    .iter()
                    .zip(r.iter().zip(e))
                    .all(|(m, (r, e))| agree(m, r, e))
        }
        (_, r, e) => r == e,
    }
}

/// The items of an array in a canonical order, taken `chunk` at a time
/// (2 for field/value pairs, which must stay together).
fn sorted(items: &[Value], chunk: usize) -> Vec<String> {
    let mut keys: Vec<String> = items
        .chunks(chunk)
        .map(|c| c.iter().map(show).collect::<Vec<_>>().join(" => "))
        .collect();
    keys.sort();
    keys
}

/// A reply with its times zeroed (read off each side's clock): the third
/// item of XPENDING's `[id, consumer, idle, deliveries]` records, the
/// second of XINFO STREAM FULL's consumer `[id, delivery time, deliveries]`
/// records, and the value after `idle`, `inactive`, `seen-time` and
/// `active-time` in XINFO CONSUMERS's and XINFO STREAM FULL's records,
/// flat or maps, at any depth.
fn mask_idle(v: &Value) -> Value {
    let timed = |k: &Value| {
        matches!(k, Value::BulkString(b)
            if b == b"idle" || b == b"inactive" || b == b"seen-time" || b == b"active-time")
    };
    let id_like = |v: &Value| matches!(v, Value::BulkString(b) if b.contains(&b'-'));
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().map(mask_idle).collect();
            let n = items.len();
            if n == 4
                && matches!(items[0], Value::BulkString(_))
                && matches!(items[1], Value::BulkString(_))
                && matches!(items[2], Value::Int(_))
                && matches!(items[3], Value::Int(_))
            {
                items[2] = Value::Int(0);
            } else if n == 3
                && id_like(&items[0])
                && matches!(items[1], Value::Int(_))
                && matches!(items[2], Value::Int(_))
            {
                items[1] = Value::Int(0);
            } else {
                for i in (0..n.saturating_sub(1)).step_by(2) {
                    if timed(&items[i]) {
                        items[i + 1] = Value::Int(0);
                    }
                }
            }
            Value::Array(items)
        }
        Value::Map(pairs) => Value::Map(
            pairs
                .iter()
                .map(|(k, v)| {
                    let v = if timed(k) {
                        Value::Int(0)
                    } else {
                        mask_idle(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A LATENCY reply without what differs by design: every integer (times,
/// durations) zeroed, and a histogram's buckets (`histogram_usec`)
/// dropped; event and command names and call counts stay.
fn latency_masked(v: &Value) -> Value {
    match v {
        Value::Int(_) => Value::Int(0),
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().map(latency_masked).collect();
            for i in (0..items.len().saturating_sub(1)).step_by(2) {
                if matches!(&items[i], Value::BulkString(k) if k == b"histogram_usec") {
                    items[i + 1] = Value::Nil;
                } else if matches!(&items[i], Value::BulkString(k) if k == b"calls") {
                    items[i + 1] = v_at(v, i + 1);
                }
            }
            Value::Array(items)
        }
        Value::Map(pairs) => Value::Map(
            pairs
                .iter()
                .map(|(k, val)| {
                    let val = match k {
                        Value::BulkString(b) if b == b"histogram_usec" => Value::Nil,
                        Value::BulkString(b) if b == b"calls" => val.clone(),
                        _ => latency_masked(val),
                    };
                    (k.clone(), val)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Item `i` of an array, unmasked.
fn v_at(v: &Value, i: usize) -> Value {
    match v {
        Value::Array(items) => items.get(i).cloned().unwrap_or(Value::Nil),
        _ => Value::Nil,
    }
}

/// A DEBUG OBJECT line without the value's address, LRU clock and idle
/// time.
fn debug_object_masked(v: &Value) -> Value {
    match v {
        Value::SimpleString(line) => Value::SimpleString(
            line.split(' ')
                .filter(|w| {
                    !["at:", "lru:", "lru_seconds_idle:"]
                        .iter()
                        .any(|p| w.starts_with(p))
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        other => other.clone(),
    }
}

/// A SLOWLOG GET reply without what differs by design: each entry's
/// time, duration and client address.
fn slowlog_masked(v: &Value) -> Value {
    let Value::Array(entries) = v else {
        return v.clone();
    };
    let mask = |entry: &Value| match entry {
        Value::Array(fields) if fields.len() == 6 => {
            let mut fields = fields.clone();
            for at in [1, 2, 4] {
                fields[at] = Value::Nil;
            }
            Value::Array(fields)
        }
        other => other.clone(),
    };
    Value::Array(entries.iter().map(mask).collect())
}

/// Whether two replies have the same keys (maps, and flat arrays read as
/// maps: every other item a key) in the same order, each value of the
/// same type, at any depth.
fn same_fields(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same_fields(vx, vy))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.chunks(2).zip(y.chunks(2)).all(|(px, py)| {
                    px[0] == py[0]
                        && px
                            .get(1)
                            .zip(py.get(1))
                            .is_none_or(|(vx, vy)| same_fields(vx, vy))
                })
        }
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

fn same_shape(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => x.len() == y.len(),
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// A reply in redis-cli's style, on one line: `"text"`, `(integer) 5`,
/// `(nil)`, `(error) ERR ...`, `OK`, `[a, b]`.
pub fn show(v: &Value) -> String {
    match v {
        Value::Nil => "(nil)".into(),
        Value::Int(n) => format!("(integer) {n}"),
        Value::BulkString(b) => quote(b),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(show).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::ServerError(e) => match e.details() {
            Some(d) => format!("(error) {} {d}", e.code()),
            None => format!("(error) {}", e.code()),
        },
        Value::Set(items) => {
            let inner: Vec<String> = items.iter().map(show).collect();
            format!("~[{}]", inner.join(", "))
        }
        Value::Map(pairs) => {
            let inner: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{} => {}", show(k), show(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        Value::Double(d) => format!("(double) {d:?}"),
        other => format!("{other:?}"),
    }
}

/// A byte string quoted like redis-cli does: printable ASCII as is,
/// everything else escaped.
pub fn quote(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

/// A command as one line that [`parse_line`] reads back.
pub fn show_cmd(args: &[Vec<u8>]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.iter()
                    .all(|&b| b.is_ascii_graphic() && b != b'"' && b != b'\\' && b != b'\'');
            if plain {
                String::from_utf8_lossy(a).into_owned()
            } else {
                quote(a)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits a command line into arguments, redis-cli style: spaces separate
/// arguments; `"..."` quotes one (with `\"`, `\\`, `\n`, `\r`, `\t` and
/// `\xHH` escapes), so `""` is the empty argument.
pub fn parse_line(line: &str) -> Result<Args, String> {
    let bytes = line.as_bytes();
    let mut args = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b' ' {
            i += 1;
            continue;
        }
        let mut arg = Vec::new();
        if bytes[i] == b'"' {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err(format!("unclosed quote in {line:?}")),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        let (byte, used) = unescape(&bytes[i + 1..])
                            .ok_or_else(|| format!("bad escape in {line:?}"))?;
                        arg.push(byte);
                        i += 1 + used;
                    }
                    Some(&b) => {
                        arg.push(b);
                        i += 1;
                    }
                }
            }
        } else {
            while i < bytes.len() && bytes[i] != b' ' {
                arg.push(bytes[i]);
                i += 1;
            }
        }
        args.push(arg);
    }
    Ok(args)
}

/// The byte an escape (after its backslash) stands for, and how many bytes it used.
fn unescape(rest: &[u8]) -> Option<(u8, usize)> {
    match rest.first()? {
        b'n' => Some((b'\n', 1)),
        b'r' => Some((b'\r', 1)),
        b't' => Some((b'\t', 1)),
        b'x' => {
            let hex = std::str::from_utf8(rest.get(1..3)?).ok()?;
            Some((u8::from_str_radix(hex, 16).ok()?, 3))
        }
        &c => Some((c, 1)),
    }
}

/// RESP encoding of a command, as any client sends it.
fn pack(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Replies that differ.
#[derive(Debug, Clone)]
pub struct Mismatch {
    /// The client connection the command ran on.
    pub conn: usize,
    /// The command.
    pub command: Args,
    /// What the real redis-server replied.
    pub expected: Value,
    /// What the memory engine replied.
    pub got: Value,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[conn {}] {}\n    redis:  {}\n    engine: {}",
            self.conn,
            show_cmd(&self.command),
            show(&self.expected),
            show(&self.got)
        )
    }
}

/// One client on each side.
struct Side {
    engine: memory::Connection,
    real: redis::Connection,
    /// Modes of the commands queued since MULTI, while in MULTI.
    queued: Option<Vec<Mode>>,
    /// A command sent by [`Differ::send`] whose reply is not read yet: the
    /// engine's connection runs it on a thread of its own, meanwhile
    /// `engine` is a stand-in.
    pending: Option<Pending>,
}

struct Pending {
    args: Args,
    engine: JoinHandle<(memory::Connection, Value)>,
}

/// How long [`Differ::send`] waits for a sent command to block, and
/// [`Differ::receive`] for its reply.
const SETTLE: Duration = Duration::from_secs(1);
const REPLY_WAIT: Duration = Duration::from_secs(5);
/// What [`Differ::receive`] reports for a client still blocked.
const STILL_BLOCKED: &str = "(no reply: still blocked)";

/// The engine and a real server, run in lockstep.
pub struct Differ {
    engine: Engine,
    client: redis::Client,
    sides: Vec<Side>,
    /// A connection to the engine for the test's own questions, made
    /// with the engine (before any password): INFO's counts.
    engine_control: memory::Connection,
    /// A connection to the real server for the test's own questions
    /// (how many clients are blocked), opened on first use.
    control: Option<redis::Connection>,
}

impl Differ {
    /// A differ against `server` (which must be private: [`Differ::reset`]
    /// flushes it) and a new engine.
    pub fn new(server: &RedisServer) -> Result<Differ, String> {
        Ok(Differ::with_engine(server, Engine::new()))
    }

    /// A differ against `server` and `engine` (an engine in cluster mode,
    /// against a one-node cluster).
    pub fn with_engine(server: &RedisServer, engine: Engine) -> Differ {
        Differ {
            engine_control: engine.connection(),
            engine,
            client: server.client(),
            sides: Vec::new(),
            control: None,
        }
    }

    /// The engine under test.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    fn side(&mut self, conn: usize) -> &mut Side {
        while self.sides.len() <= conn {
            let real = self
                .client
                .get_connection()
                .unwrap_or_else(|e| panic!("cannot connect to the private redis-server: {e}"));
            self.sides.push(Side {
                engine: self.engine.connection(),
                real,
                queued: None,
                pending: None,
            });
        }
        &mut self.sides[conn]
    }

    /// Empties both sides (FLUSHALL) and gives every client a fresh state:
    /// no transaction, no WATCH, database 0.
    pub fn reset(&mut self) {
        // A client still blocked from the last script: the real one goes
        // with its connection; the engine's thread cannot be stopped, so
        // the engine is replaced (its waiter would take later pushes).
        let mut stuck = false;
        for side in &mut self.sides {
            if let Some(pending) = side.pending.take() {
                if pending.engine.is_finished() {
                    let _ = pending.engine.join();
                } else {
                    stuck = true;
                }
                side.real = self
                    .client
                    .get_connection()
                    .unwrap_or_else(|e| panic!("cannot connect to the private redis-server: {e}"));
            }
        }
        if stuck {
            let cluster = self.engine.is_cluster_mode();
            self.engine = Engine::new();
            if cluster {
                self.engine = self.engine.clone().with_cluster_mode();
            }
            self.engine_control = self.engine.connection();
        }
        for side in &mut self.sides {
            let _ = side.real.req_packed_command(&pack(&[b"RESET".to_vec()]));
            side.engine = self.engine.connection();
            side.queued = None;
        }
        let side = self.side(0);
        for command in ["FLUSHALL", "CONFIG RESETSTAT"] {
            let args: Vec<Vec<u8>> = command.split(' ').map(|a| a.as_bytes().to_vec()).collect();
            let engine_args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            let real = real_query(&mut side.real, &args);
            let engine = side.engine.execute(&engine_args);
            assert_eq!(real, Value::Okay, "{command} on the private server");
            assert_eq!(engine, Value::Okay, "{command} on the engine");
        }
    }

    /// The read lookups each side counted since the last [`Differ::reset`]
    /// (INFO's `keyspace_hits` and `keyspace_misses`), as
    /// `(real, engine)`: asked on connections of their own, made before
    /// any password, so that neither a client left blocked nor
    /// `requirepass` stops the question.
    pub fn keyspace_lookups(&mut self) -> ((u64, u64), (u64, u64)) {
        let real = self.real_info("stats");
        let engine = self.engine_control.execute(&[b"INFO", b"stats"]);
        let lookups = |info: &Value| {
            (
                info_field(info, "keyspace_hits"),
                info_field(info, "keyspace_misses"),
            )
        };
        (lookups(&real), lookups(&engine))
    }

    /// The real server's INFO `section`, asked on a connection of its own
    /// (opened on first use).
    fn real_info(&mut self, section: &str) -> Value {
        let client = &self.client;
        let control = self.control.get_or_insert_with(|| {
            client
                .get_connection()
                .unwrap_or_else(|e| panic!("cannot connect to the private redis-server: {e}"))
        });
        real_query(control, &[b"INFO".to_vec(), section.as_bytes().to_vec()])
    }

    /// Whether the real server knows the command `name` (COMMAND INFO).
    pub fn real_knows(&mut self, name: &str) -> bool {
        let args = vec![
            b"COMMAND".to_vec(),
            b"INFO".to_vec(),
            name.as_bytes().to_vec(),
        ];
        let side = self.side(0);
        match real_query(&mut side.real, &args) {
            Value::Array(items) => items.first().is_some_and(|i| *i != Value::Nil),
            _ => false,
        }
    }

    /// Sends a command that blocks (BLPOP...) on connection `conn` of both
    /// sides without reading its reply, and waits (at most a second) until
    /// each side has it blocked, or done. Its reply is read and compared by
    /// [`Self::receive`]; until then the connection takes no other command.
    pub fn send(&mut self, conn: usize, args: &[Vec<u8>]) {
        let (real_before, engine_before) = (self.real_blocked(), self.engine_blocked());
        let stand_in = self.engine.connection();
        let side = self.side(conn);
        assert!(
            side.pending.is_none(),
            "connection {conn} already waits for a reply: read it first"
        );
        side.real
            .send_packed_command(&pack(args))
            .unwrap_or_else(|e| panic!("private redis-server: {} failed: {e}", show_cmd(args)));
        let mut engine = std::mem::replace(&mut side.engine, stand_in);
        let owned = args.to_vec();
        let handle = std::thread::spawn(move || {
            let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
            let reply = engine.execute(&refs);
            (engine, reply)
        });
        side.pending = Some(Pending {
            args: args.to_vec(),
            engine: handle,
        });
        let deadline = Instant::now() + SETTLE;
        while Instant::now() < deadline {
            let engine_settled = self.sides[conn]
                .pending
                .as_ref()
                .is_some_and(|p| p.engine.is_finished())
                || self.engine_blocked() > engine_before;
            if engine_settled && self.real_blocked() > real_before {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Reads the reply of the command [`Self::send`] sent on connection
    /// `conn` (waiting at most five seconds on each side) and compares it.
    pub fn receive(&mut self, conn: usize) -> Result<Value, Box<Mismatch>> {
        let client = self.client.clone();
        let side = self.side(conn);
        let Some(pending) = side.pending.take() else {
            panic!("connection {conn} has no command sent to read the reply of");
        };
        let still_blocked = || Value::SimpleString(STILL_BLOCKED.into());
        let _ = side.real.set_read_timeout(Some(REPLY_WAIT));
        let real = match side.real.recv_response() {
            Ok(reply) => {
                let _ = side.real.set_read_timeout(None);
                reply
            }
            Err(e) if e.is_timeout() => {
                // The connection is unusable mid-command: replace it.
                side.real = client
                    .get_connection()
                    .unwrap_or_else(|e| panic!("cannot connect to the private redis-server: {e}"));
                still_blocked()
            }
            Err(e) => panic!(
                "private redis-server: {} failed: {e}",
                show_cmd(&pending.args)
            ),
        };
        let deadline = Instant::now() + REPLY_WAIT;
        while !pending.engine.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let engine = if pending.engine.is_finished() {
            let (connection, reply) = pending
                .engine
                .join()
                .unwrap_or_else(|_| panic!("the engine panicked on {}", show_cmd(&pending.args)));
            side.engine = connection;
            reply
        } else {
            // Left blocked (`reset` replaces the engine): right if the
            // real client is still blocked too.
            let args = pending.args.clone();
            side.pending = Some(pending);
            if real == still_blocked() {
                return Ok(real);
            }
            return Err(Box::new(Mismatch {
                conn,
                command: args,
                expected: real,
                got: still_blocked(),
            }));
        };
        if agree(&mode_of(&pending.args), &real, &engine) {
            Ok(real)
        } else {
            Err(Box::new(Mismatch {
                conn,
                command: pending.args,
                expected: real,
                got: engine,
            }))
        }
    }

    /// Clients blocked on the real server (INFO's `blocked_clients`), asked
    /// on a connection of its own.
    fn real_blocked(&mut self) -> usize {
        info_field(&self.real_info("clients"), "blocked_clients") as usize
    }

    /// Clients blocked in the engine.
    fn engine_blocked(&self) -> usize {
        let info = self.engine.connection().execute(&[b"INFO", b"clients"]);
        info_field(&info, "blocked_clients") as usize
    }

    /// Runs one command on connection `conn` of both sides; returns the
    /// real server's reply if the engine's agrees with it.
    pub fn run(&mut self, conn: usize, args: &[Vec<u8>]) -> Result<Value, Box<Mismatch>> {
        let name = args
            .first()
            .map(|n| String::from_utf8_lossy(n).to_ascii_uppercase())
            .unwrap_or_default();
        let side = self.side(conn);
        assert!(
            side.pending.is_none(),
            "connection {conn} waits for the reply of a command sent: read it first"
        );
        let real = real_query(&mut side.real, args);
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let engine = side.engine.execute(&refs);
        let mode = match name.as_str() {
            "EXEC" => Mode::Exec(side.queued.take().unwrap_or_default()),
            _ => mode_of(args),
        };
        match name.as_str() {
            "MULTI" if real == Value::Okay => side.queued = Some(Vec::new()),
            "DISCARD" if real == Value::Okay => side.queued = None,
            _ => {
                if let (Some(queue), Value::SimpleString(s)) = (side.queued.as_mut(), &real) {
                    if s == "QUEUED" {
                        queue.push(mode_of(args));
                    }
                }
            }
        }
        if agree(&mode, &real, &engine) {
            Ok(real)
        } else {
            Err(Box::new(Mismatch {
                conn,
                command: args.to_vec(),
                expected: real,
                got: engine,
            }))
        }
    }

    /// Runs a SCAN-family command (cursor `0` in its place: argument 1 for
    /// SCAN, 2 for HSCAN/SSCAN/ZSCAN) to the end of its iteration on each
    /// side, and compares what the iterations returned, as sets (of
    /// field/value pairs for HSCAN and ZSCAN). An error reply of the first
    /// step is compared exactly. Inside MULTI it is queued like any command.
    pub fn scan_all(&mut self, conn: usize, args: &[Vec<u8>]) -> Result<Value, Box<Mismatch>> {
        let name = args
            .first()
            .map(|n| String::from_utf8_lossy(n).to_ascii_uppercase())
            .unwrap_or_default();
        if self.side(conn).queued.is_some() {
            // Inside MULTI a SCAN is queued, and EXEC runs one step of it.
            return self.run(conn, args);
        }
        let cursor_at = if name == "SCAN" { 1 } else { 2 };
        let chunk = if name == "HSCAN" || name == "ZSCAN" {
            2
        } else {
            1
        };
        let side = self.side(conn);
        let real = iterate(args, cursor_at, chunk, |a| real_query(&mut side.real, a));
        let engine = iterate(args, cursor_at, chunk, |a| {
            let refs: Vec<&[u8]> = a.iter().map(Vec::as_slice).collect();
            side.engine.execute(&refs)
        });
        if real == engine {
            Ok(real)
        } else {
            Err(Box::new(Mismatch {
                conn,
                command: args.to_vec(),
                expected: real,
                got: engine,
            }))
        }
    }
}

/// Runs a full SCAN iteration through `query` and returns the items seen,
/// deduplicated and sorted, as one array (or the first non-scan reply).
fn iterate(
    args: &[Vec<u8>],
    cursor_at: usize,
    chunk: usize,
    mut query: impl FnMut(&[Vec<u8>]) -> Value,
) -> Value {
    let mut args = args.to_vec();
    let mut seen: Vec<Vec<Value>> = Vec::new();
    for _ in 0..100_000 {
        let reply = query(&args);
        let Value::Array(parts) = &reply else {
            return reply;
        };
        let (Some(Value::BulkString(cursor)), Some(Value::Array(items)), 2) =
            (parts.first(), parts.get(1), parts.len())
        else {
            return reply;
        };
        seen.extend(items.chunks(chunk).map(<[Value]>::to_vec));
        if cursor.as_slice() == b"0" {
            seen.sort_by_key(|c| c.iter().map(show).collect::<Vec<_>>());
            seen.dedup();
            return Value::Array(seen.into_iter().flatten().collect());
        }
        if let Some(slot) = args.get_mut(cursor_at) {
            *slot = cursor.clone();
        }
    }
    Value::SimpleString("(scan did not end after 100000 steps)".into())
}

/// The numeric field `name` of an INFO reply, 0 if absent.
fn info_field(info: &Value, name: &str) -> u64 {
    let text = match info {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::VerbatimString { text, .. } => text.clone(),
        _ => String::new(),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Sends one command to the real server and reads its raw reply (error
/// replies included as `Value::ServerError`). A broken connection is a
/// failure of the test's infrastructure, not of the engine: it panics.
fn real_query(conn: &mut redis::Connection, args: &[Vec<u8>]) -> Value {
    conn.req_packed_command(&pack(args))
        .unwrap_or_else(|e| panic!("private redis-server: {} failed: {e}", show_cmd(args)))
}

/// Whether the engine implements the command `name`. Asked of a scratch
/// engine with no arguments: a known command answers with an arity error
/// (or runs harmlessly there), an unknown one with "unknown command".
pub fn engine_knows(name: &str) -> bool {
    static SCRATCH: LazyLock<Engine> = LazyLock::new(Engine::new);
    let reply = SCRATCH.connection().execute(&[name.as_bytes()]);
    match reply {
        Value::ServerError(e) => !e
            .details()
            .is_some_and(|d| d.starts_with("unknown command")),
        _ => true,
    }
}
