//! What the unit tests of every command family share: clients of a fresh
//! engine, commands written as one line, expected replies, and the WATCH
//! check that tells whether a command marked a key modified.
//!
//! The expected replies in the tests are the ones redis-server 7.0.15 gave
//! to the same commands (RESP2).

use redis::Value;

use crate::error::error_value;
use crate::{Connection, Engine, ManualClock};

pub(crate) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
pub(crate) const SYNTAX: &str = "ERR syntax error";
pub(crate) const NOT_INT: &str = "ERR value is not an integer or out of range";
pub(crate) const NOT_FLOAT: &str = "ERR value is not a valid float";

/// The bytes of `hex`, two digits a byte (a payload copied from a real
/// server's DUMP).
pub(crate) fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A client of a fresh engine on the wall clock.
pub(crate) fn conn() -> Connection {
    Engine::new().connection()
}

/// A client of a fresh engine whose clock stands at `start_ms` until the
/// test moves it.
pub(crate) fn clocked(start_ms: i64) -> (ManualClock, Connection) {
    let clock = ManualClock::new(start_ms);
    let conn = Engine::with_clock(clock.clone()).connection();
    (clock, conn)
}

/// A client of a fresh engine behaving as Redis 7.4.1, whose clock stands
/// at `start_ms` until the test moves it.
pub(crate) fn clocked_74(start_ms: i64) -> (ManualClock, Connection) {
    let clock = ManualClock::new(start_ms);
    let engine = Engine::with_clock(clock.clone()).with_version(crate::RedisVersion::V7_4);
    (clock, engine.connection())
}

/// Runs a command written as words separated by single spaces: two spaces
/// in a row, or one at an end, send an empty argument.
pub(crate) fn run(c: &mut Connection, line: &str) -> Value {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    c.execute(&args)
}

/// Runs a command given argument by argument (arguments with spaces).
pub(crate) fn run_args(c: &mut Connection, args: &[&str]) -> Value {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.execute(&args)
}

/// The field `field` of INFO's section `section` (empty if absent).
pub(crate) fn info_field(c: &mut Connection, section: &str, field: &str) -> String {
    field_of(&run(c, &format!("INFO {section}")), field)
}

/// The field `field` of an INFO reply, however it came (empty if absent).
pub(crate) fn field_of(info: &Value, field: &str) -> String {
    let Value::BulkString(text) = info else {
        panic!("INFO is a bulk string: {info:?}");
    };
    String::from_utf8_lossy(text)
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':').map(str::to_string))
        .unwrap_or_default()
}

/// The field `field` of INFO's persistence section.
pub(crate) fn persistence_info(c: &mut Connection, field: &str) -> String {
    info_field(c, "persistence", field)
}

/// INFO's count of changes since the last save
/// (`rdb_changes_since_last_save`).
pub(crate) fn changes(c: &mut Connection) -> u64 {
    persistence_info(c, "rdb_changes_since_last_save")
        .parse()
        .expect("a count")
}

pub(crate) fn int(n: i64) -> Value {
    Value::Int(n)
}

pub(crate) fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

pub(crate) fn bulks(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| bulk(s)).collect())
}

pub(crate) fn ints(items: &[i64]) -> Value {
    Value::Array(items.iter().map(|n| int(*n)).collect())
}

/// The empty array.
pub(crate) fn empty() -> Value {
    Value::Array(Vec::new())
}

/// The error reply with this full text (code first), as redis-rs reads it.
pub(crate) fn err(text: &str) -> Value {
    error_value(text)
}

/// The bulk strings of an array reply, in reply order.
pub(crate) fn strings(v: Value) -> Vec<String> {
    let Value::Array(items) = v else {
        panic!("not an array: {v:?}");
    };
    items
        .into_iter()
        .map(|i| match i {
            Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("not a bulk string: {other:?}"),
        })
        .collect()
}

/// The bulk strings of an array reply, sorted (for replies in no defined
/// order).
pub(crate) fn sorted(v: Value) -> Vec<String> {
    let mut out = strings(v);
    out.sort();
    out
}

/// Runs MULTI, PING, EXEC and tells whether EXEC was aborted by a WATCH.
fn exec_aborts(c: &mut Connection) -> bool {
    run(c, "MULTI");
    run(c, "PING");
    run(c, "EXEC") == Value::Nil
}

/// Whether `line`, run between WATCH `key` and EXEC on the same connection,
/// aborts the transaction (i.e. it marked `key` modified).
pub(crate) fn touches(c: &mut Connection, key: &str, line: &str) -> bool {
    assert_eq!(run(c, &format!("WATCH {key}")), Value::Okay);
    run(c, line);
    exec_aborts(c)
}

/// Asserts that `change`, run by another client after `setup`, aborts (or,
/// if not `aborts`, does not abort) a transaction WATCHing `key`.
pub(crate) fn assert_watch(setup: &[&str], key: &str, change: &str, aborts: bool) {
    let engine = Engine::new();
    let (mut watcher, mut other) = (engine.connection(), engine.connection());
    for line in setup {
        run(&mut watcher, line);
    }
    assert_eq!(run(&mut watcher, &format!("WATCH {key}")), Value::Okay);
    run(&mut other, change);
    assert_eq!(exec_aborts(&mut watcher), aborts, "{change}");
}
