//! A checked write as a script written for its shape: straight-line Lua
//! that names its commands and reads its arguments by position, instead
//! of the general [`CHECKED`](crate::db::plan::checked) script, which interprets a
//! description of the commands sent in `ARGV` (each command's name and
//! argument count, each expected value prefixed).
//!
//! The shape is what the text depends on: the reads (command name,
//! argument count, and the expected reply's form: how many values, which
//! are nil, strings or integers) and the writes (name, argument count, whether the reply is
//! kept). The values themselves (keys, field texts, the expected strings)
//! travel in `ARGV`, so one script serves every write of a shape: an
//! `incr` of any object's field, an insert of any `Student`.
//!
//! Why: the general script pays for its generality on every call. On the
//! engine in process an `incr` costs 8.5 µs through it against 3.7 µs for
//! a script written for it (`EXISTS`, `HINCRBY`): the description is three
//! times the arguments, every one a Lua string to create, and the loop
//! re-reads it. On redis-server it cost about 8 µs more per call than a
//! script written for the write.
//!
//! A script is cached by Redis for good once loaded (Redis 7.0 evicts
//! none), so the shapes are bounded: a write of more than
//! [`MAX_COMMANDS`] commands or [`MAX_ARGS`] arguments, or past the
//! [`MAX_SHAPES`]th shape this process has seen, takes the general
//! script. A model's writes come in few shapes (one per operation and
//! field set), so a program stays far below the bound.
//!
//! The reply says what the general script's does in fewer values, each
//! one more for the client to parse (redis-rs takes about a thousand
//! instructions a value) on every write: a script without reads (a
//! guarded write), which has no other outcome, replies its kept replies
//! alone, and its one kept reply not even in a list; one with reads
//! replies `{1, kept replies...}`, flat, or `{0, reads as they are}`
//! ([`Shaped::reply`]). The general script replies `{1, every reply}`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use redis::{Cmd, Value};

use crate::db::plan::types::{Check, NOTTYPE};
use crate::db::plan::{Splice, Write};
use crate::db::script::Lua;

/// The most commands (reads and writes) a shaped script runs.
const MAX_COMMANDS: usize = 24;
/// The most arguments it takes.
const MAX_ARGS: usize = 256;
/// The most shapes a process writes scripts for.
const MAX_SHAPES: usize = 512;

/// The scripts written so far, by shape.
static SCRIPTS: LazyLock<Mutex<HashMap<String, Arc<Lua>, foldhash::fast::RandomState>>> =
    LazyLock::new(|| Mutex::new(HashMap::default()));

/// A checked write ready to send as its shape's script.
pub(crate) struct Shaped<'a> {
    pub(crate) script: Arc<Lua>,
    /// How the script replies.
    replies: Replies,
    /// `ARGV`: each read's arguments, each write's, then the expected
    /// values of the reads, in order (an integer as its text, the one
    /// argument not borrowed from the write).
    pub(crate) argv: Vec<Cow<'a, [u8]>>,
}

/// How a shaped script replies (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Replies {
    /// No reads, one kept reply: that reply alone ([`replies_alone`]).
    Alone,
    /// No reads: the kept replies, in a list.
    Kept,
    /// Reads: `{1, kept replies...}` or `{0, reads as they are}`.
    Checked,
}

/// The name of a command sent as `args` if it is a plain command name
/// (letters, digits, `_`, as every Redis command's: the name goes into
/// the script's text), and its arguments after the name; `None` if an
/// argument is not plain bytes.
fn split<'a, I>(mut args: I) -> Option<(&'a str, I)>
where
    I: Iterator<Item = Option<&'a [u8]>> + Clone,
{
    let name = std::str::from_utf8(args.next()??).ok()?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    Some((name, args))
}

/// Appends the arguments `args` of a command named `name` to `argv`, and
/// its part of the signature (`tag`, the name, the count); `None` if an
/// argument is not plain bytes.
fn add<'a>(
    signature: &mut String,
    argv: &mut Vec<Cow<'a, [u8]>>,
    tag: char,
    args: impl Iterator<Item = Option<&'a [u8]>> + Clone,
) -> Option<()> {
    let (name, args) = split(args)?;
    let before = argv.len();
    for arg in args {
        argv.push(Cow::Borrowed(arg?));
    }
    signature.push(tag);
    signature.push_str(name);
    push_number(signature, argv.len() - before);
    Some(())
}

/// One value a shaped script compares a read's reply with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect<'a> {
    /// Nil (`false` in Lua).
    Nil,
    /// A string, sent in `ARGV`.
    Text(&'a [u8]),
    /// An integer (a Lua number), sent in `ARGV` as its decimal text.
    Int(i64),
}

/// A recorded reply as the values the script compares: an array as its
/// elements, one value as one. `None` for any other reply (a status, a
/// double...), which no script compares.
pub(super) fn expected(reply: &Value) -> Option<Vec<Expect<'_>>> {
    let mut values = Vec::new();
    each_expected(reply, |v| values.push(v)).then_some(values)
}

/// Calls `f` with each value [`expected`] gives of `reply`, without
/// collecting them; whether the reply is one the script compares (if not,
/// `f` may have seen some of its values).
fn each_expected<'a>(reply: &'a Value, mut f: impl FnMut(Expect<'a>)) -> bool {
    let mut one = |v: &'a Value| {
        f(match v {
            Value::Nil => Expect::Nil,
            Value::BulkString(text) => Expect::Text(text),
            Value::Int(n) => Expect::Int(*n),
            _ => return false,
        });
        true
    };
    match reply {
        Value::Array(values) => values.iter().all(one),
        other => one(other),
    }
}

/// The write as its shape's script, or `None` if it is not one to shape
/// (see the module docs). This runs on every checked write, so it builds
/// the signature and `ARGV` in one pass, sized at once; the script's text
/// is written only for a shape not seen before.
pub(crate) fn shape<'a>(
    guards: usize,
    reads: &'a [(Cmd, Value)],
    writes: &[Write<'a>],
    checks: &[Check<'_>],
) -> Option<Shaped<'a>> {
    let commands = reads.len() + writes.len();
    if commands > MAX_COMMANDS {
        return None;
    }
    // A read back sends nothing (below).
    let args: usize = (reads.iter().map(|(cmd, _)| cmd))
        .chain(writes.iter().filter_map(|w| w.command()))
        .map(|cmd| cmd.args_iter().len())
        .sum();
    let mut argv: Vec<Cow<'_, [u8]>> = Vec::with_capacity(args + 2 * reads.len());
    let mut signature = String::with_capacity(16 * commands);
    signature.push('g');
    push_number(&mut signature, guards);
    for (cmd, reply) in reads {
        add(&mut signature, &mut argv, 'r', crate::command::args(cmd))?;
        let comparable = each_expected(reply, |v| {
            signature.push(match v {
                Expect::Nil => 'n',
                Expect::Text(_) => 's',
                Expect::Int(_) => 'i',
            })
        });
        if !comparable {
            return None;
        }
        signature.push('|');
    }
    for (j, write) in writes.iter().enumerate() {
        if write.reads_back {
            // Its HGET reads the key and field of the write before it
            // (its first two arguments), which the script has already.
            let before = j.checked_sub(1).map(|i| &writes[i])?;
            if before.splice.is_some_and(|s| s.arg < 2) {
                return None;
            }
            signature.push('b');
            continue;
        }
        let tag = if write.keep { 'k' } else { 'w' };
        add(&mut signature, &mut argv, tag, write.args())?;
        if let Some(splice) = write.splice {
            signature.push('@');
            signature.push_str(itoa::Buffer::new().format(splice.arg));
            push_number(&mut signature, usize::from(splice.from));
        }
    }
    for check in checks {
        signature.push('t');
        signature.push_str(check.want);
        push_number(&mut signature, check.at);
    }
    for (_, reply) in reads {
        each_expected(reply, |v| match v {
            Expect::Nil => {}
            Expect::Text(text) => argv.push(Cow::Borrowed(text)),
            Expect::Int(n) => argv.push(Cow::Owned(
                itoa::Buffer::new().format(n).as_bytes().to_vec(),
            )),
        });
    }
    if argv.len() > MAX_ARGS {
        return None;
    }
    let mut scripts = SCRIPTS.lock();
    let script = match scripts.get(&signature) {
        Some(script) => Arc::clone(script),
        None if scripts.len() < MAX_SHAPES => {
            let script = Arc::new(Lua::new(&text_of(guards, reads, writes, checks)?));
            scripts.insert(signature, Arc::clone(&script));
            script
        }
        None => return None,
    };
    let replies = if !reads.is_empty() {
        Replies::Checked
    } else if replies_alone(reads.len(), writes.iter().map(|w| w.keep)) {
        Replies::Alone
    } else {
        Replies::Kept
    };
    Some(Shaped {
        script,
        replies,
        argv,
    })
}

/// Whether a script of `reads` reads and writes that keep their replies
/// as `keeps` says replies its one kept reply alone: a script without
/// reads that keeps one reply (an increment's value, an insert's count).
/// The client parses one value, not a list of one.
fn replies_alone(reads: usize, keeps: impl Iterator<Item = bool>) -> bool {
    reads == 0 && keeps.filter(|&keep| keep).count() == 1
}

/// The script's text for the shape of `reads` and `writes` (which
/// [`shape`] has checked).
#[cold]
fn text_of(
    guards: usize,
    reads: &[(Cmd, Value)],
    writes: &[Write<'_>],
    checks: &[Check<'_>],
) -> Option<String> {
    let mut read_shapes = Vec::with_capacity(reads.len());
    let mut expected_all = Vec::with_capacity(reads.len());
    for (cmd, reply) in reads {
        let (name, args) = split(crate::command::args(cmd))?;
        let values = expected(reply)?;
        read_shapes.push((name, args.count(), values.len()));
        expected_all.push(values);
    }
    let mut write_shapes = Vec::with_capacity(writes.len());
    for write in writes {
        let (name, args) = split(write.args())?;
        write_shapes.push(WriteShape {
            name,
            // A read back sends nothing (see `shape`).
            argc: if write.reads_back { 0 } else { args.count() },
            keep: write.keep,
            splice: write.splice,
            reads_back: write.reads_back,
        });
    }
    Some(text(
        guards,
        &read_shapes,
        &expected_all,
        &write_shapes,
        checks,
    ))
}

/// `/n|` in a shape's signature (without `fmt`: the signature is made on
/// every write).
fn push_number(signature: &mut String, n: usize) {
    signature.push('/');
    signature.push_str(itoa::Buffer::new().format(n));
    signature.push('|');
}

/// `ARGV[first]`, `ARGV[first + 1]`... for `count` arguments, the
/// argument `splice.arg` (if any) the reply of write `splice.from`
/// instead (`w` and its number: [`text`] keeps that reply in a local).
fn args_text(out: &mut String, first: usize, count: usize, splice: Option<Splice>) {
    for (n, i) in (first..first + count).enumerate() {
        match splice {
            Some(splice) if usize::from(splice.arg) == n => {
                let _ = write!(out, ", w{}", splice.from);
            }
            _ => {
                let _ = write!(out, ", ARGV[{i}]");
            }
        }
    }
}

/// What a write's script text depends on.
struct WriteShape<'a> {
    name: &'a str,
    /// How many of its arguments it takes from `ARGV` (none for a read
    /// back).
    argc: usize,
    keep: bool,
    splice: Option<Splice>,
    /// A read back of the write before: its reply where exact, else
    /// `HGET` of that write's key and field.
    reads_back: bool,
}

/// The first line of a script with type checks: `typed(key, want)`,
/// whether `key` holds `want` or nothing.
const TYPED: &str = "local function typed(k, w) local t = \
    redis.call('TYPE', k)['ok'] return t == 'none' or t == w end\n";

/// The first line of a script with a read back: `exact(reply)`, the reply
/// of the write before if it is exact as Lua holds it (a string, or a
/// number within 2^53, as an HINCRBY's integer mostly is), else `false`,
/// so that the script reads the field only where Lua rounded the reply.
const EXACT: &str = "local function exact(v) if type(v) == 'string' or \
    (type(v) == 'number' and v > -9007199254740992 and v < 9007199254740992) \
    then return v end return false end\n";

/// The script's text for a shape: `reads` as (name, argument count,
/// expected value count), `expected` the values, `writes`, and the keys
/// of writes whose type it checks before the first write.
fn text(
    guards: usize,
    reads: &[(&str, usize, usize)],
    expected: &[Vec<Expect<'_>>],
    writes: &[WriteShape<'_>],
    checks: &[Check<'_>],
) -> String {
    // A key of another type refuses the write before anything is
    // written: checked by `typed`, defined first.
    let mut out = String::new();
    if !checks.is_empty() {
        out.push_str(TYPED);
    }
    if writes.iter().any(|w| w.reads_back) {
        out.push_str(EXACT);
    }
    // The first `guards` keys must exist; a key past them only routes
    // the script.
    if guards > 0 {
        out.push_str(&GUARDS.replace("#KEYS", itoa::Buffer::new().format(guards)));
    }
    // Where each read's and write's arguments start in ARGV, then where
    // the expected strings start.
    let mut next = 1;
    let mut read_at = Vec::with_capacity(reads.len());
    for (_, argc, _) in reads {
        read_at.push(next);
        next += argc;
    }
    let mut write_at = Vec::with_capacity(writes.len());
    for write in writes {
        write_at.push(next);
        next += write.argc;
    }
    if !reads.is_empty() {
        // A read's error reads as 0, which no expected value equals; a
        // single value is compared as a list of one.
        out.push_str(
            "local function read(...)\n  local reply = redis.pcall(...)\n  \
             if type(reply) == 'table' and reply.err then return 0 end\n  return reply\nend\n\
             local function list(r)\n  if type(r) ~= 'table' then return {r} end\n  return r\nend\n\
             local seen, r = {}\n",
        );
        for (i, ((name, argc, count), at)) in reads.iter().zip(&read_at).enumerate() {
            // A read expected to find nothing runs only if its key exists
            // (see `absent_reply`).
            let absent = expected[i].iter().all(|v| *v == Expect::Nil);
            let probe = absent.then(|| absent_reply(name, *argc, *count)).flatten();
            if let Some(reply) = &probe {
                let _ = write!(
                    out,
                    "if redis.call('EXISTS', ARGV[{at}]) == 0 then seen[{}] = {reply} else ",
                    i + 1
                );
            }
            let _ = write!(out, "seen[{}] = read('{name}'", i + 1);
            args_text(&mut out, *at, *argc, None);
            out.push_str(if probe.is_some() { ") end\n" } else { ")\n" });
        }
        for (i, ((_, _, count), values)) in reads.iter().zip(expected).enumerate() {
            let _ = write!(out, "r = list(seen[{}])\nif #r ~= {count}", i + 1);
            for (k, value) in values.iter().enumerate() {
                match value {
                    Expect::Text(_) => {
                        let _ = write!(out, " or r[{}] ~= ARGV[{next}]", k + 1);
                        next += 1;
                    }
                    Expect::Int(_) => {
                        let _ = write!(out, " or r[{}] ~= tonumber(ARGV[{next}])", k + 1);
                        next += 1;
                    }
                    Expect::Nil => {
                        let _ = write!(out, " or r[{}] ~= false", k + 1);
                    }
                }
            }
            out.push_str(" then return {0, seen} end\n");
        }
    }
    for check in checks {
        let key = write_at[check.at];
        let want = check.want;
        let _ = writeln!(
            out,
            "if not typed(ARGV[{key}], '{want}') then \
             return redis.error_reply('{NOTTYPE} {want} ' .. ARGV[{key}]) end"
        );
    }
    // After reads, the kept replies follow the 1 that says they ran.
    let mut kept = usize::from(!reads.is_empty());
    out.push_str(if reads.is_empty() {
        "local out = {}\n"
    } else {
        "local out = {1}\n"
    });
    for (j, (write, at)) in writes.iter().zip(&write_at).enumerate() {
        // A reply a later write splices in, or reads back, is kept in a
        // local.
        let taken = writes[j + 1..]
            .iter()
            .any(|w| w.splice.is_some_and(|s| usize::from(s.from) == j))
            || writes.get(j + 1).is_some_and(|w| w.reads_back);
        // A read back that nothing uses runs nothing.
        if write.reads_back && !taken && !write.keep {
            continue;
        }
        if taken {
            let _ = write!(out, "local w{j} = ");
        } else if write.keep {
            kept += 1;
            let _ = write!(out, "out[{kept}] = ");
        }
        if write.reads_back {
            let _ = write!(out, "exact(w{}) or ", j.saturating_sub(1));
        }
        let _ = write!(out, "redis.call('{}'", write.name);
        match write.reads_back {
            // The key and field of the write before.
            true => args_text(&mut out, write_at[j.saturating_sub(1)], 2, None),
            false => args_text(&mut out, *at, write.argc, write.splice),
        }
        out.push_str(")\n");
        if taken && write.keep {
            kept += 1;
            let _ = writeln!(out, "out[{kept}] = w{j}");
        }
    }
    if replies_alone(reads.len(), writes.iter().map(|w| w.keep)) {
        out.push_str("return out[1]\n");
    } else {
        out.push_str("return out\n");
    }
    out
}

/// The reply, as Lua, of the read `name` with `argc` arguments (the key
/// first) when its key does not exist, for a read expected to find
/// nothing (`count` nils, or an empty list); `None` for a command not
/// known to reply so.
///
/// Why: a guarded write mostly reads what is not there (a new object's old
/// values, the entry of a value nobody holds), and an `EXISTS` costs Redis
/// less than the read: a unique entry's holder is read with a `SORT_RO ... GET
/// # GET *->field`, which builds a list and parses its options even for a
/// key that is not there. On redis-server an indexed insert's script costs
/// 10.35 µs with the probe, 11.0 µs without. A key that exists, of any
/// type, is read as the read reads it, so the reply is the read's own whatever it
/// holds (`a_value_taken_elsewhere_is_refused` checks it on every backend).
fn absent_reply(name: &str, argc: usize, count: usize) -> Option<String> {
    let nils = |n: usize| format!("{{{}}}", vec!["false"; n].join(", "));
    match name {
        "HMGET" if count == argc.checked_sub(1)? => Some(nils(count)),
        "GET" | "HGET" | "LINDEX" if count == 1 => Some("false".to_string()),
        "SORT_RO" | "LRANGE" | "SMEMBERS" if count == 0 => Some("{}".to_string()),
        _ => None,
    }
}

impl Shaped<'_> {
    /// What a shaped script replied, as the caller reads every checked
    /// write's reply: whether the writes ran, and the kept replies, or the
    /// reads as they are if they did not.
    pub(crate) fn reply(&self, reply: Value) -> Option<(bool, Vec<Value>)> {
        if self.replies == Replies::Alone {
            return Some((true, vec![reply]));
        }
        let Value::Array(mut reply) = reply else {
            return None;
        };
        if self.replies == Replies::Kept {
            return Some((true, reply));
        }
        match reply.first()? {
            Value::Int(1) => {
                reply.remove(0);
                Some((true, reply))
            }
            Value::Int(0) if reply.len() == 2 => match reply.pop()? {
                Value::Array(seen) => Some((false, seen)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Every key of `KEYS` must exist, else `NOTFOUND key`: how each checked
/// script, general or shaped ([`super::shaped`]), begins.
pub(crate) const GUARDS: &str = r"
for g = 1, #KEYS do
  if redis.call('EXISTS', KEYS[g]) == 0 then
    return redis.error_reply('NOTFOUND ' .. KEYS[g])
  end
end
";

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of<'a>(name: &'a str, argc: usize, keep: bool) -> WriteShape<'a> {
        WriteShape {
            name,
            argc,
            keep,
            splice: None,
            reads_back: false,
        }
    }

    fn cmd(args: &[&str]) -> Cmd {
        let mut c = crate::command::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        c
    }

    #[test]
    fn a_guarded_write_reads_its_arguments_by_position() {
        let (incr, get) = (cmd(&["HINCRBY", "k", "f", "1"]), cmd(&["HGET", "k", "f"]));
        let shaped = shape(
            1,
            &[],
            &[Write::plain(&incr, false), Write::plain(&get, true)],
            &[],
        )
        .expect("a shape");
        assert_eq!(shaped.argv, [&b"k"[..], b"f", b"1", b"k", b"f"]);
        let text = text(
            1,
            &[],
            &[],
            &[shape_of("HINCRBY", 3, false), shape_of("HGET", 2, true)],
            &[],
        );
        assert!(text.contains("redis.call('HINCRBY', ARGV[1], ARGV[2], ARGV[3])\n"));
        assert!(text.contains("out[1] = redis.call('HGET', ARGV[4], ARGV[5])\n"));
        // Without reads, the one kept reply alone.
        assert!(text.ends_with("\nreturn out[1]\n"));
    }

    #[test]
    fn a_read_back_is_the_write_s_reply_where_lua_holds_it_exactly() {
        let (incr, get) = (cmd(&["HINCRBY", "k", "f", "1"]), cmd(&["HGET", "k", "f"]));
        let zadd = cmd(&["ZADD", "i", "0", "k"]);
        // A read back names the write it reads back: its HGET is sent
        // from that write's key and field.
        let read_back = Write {
            reads_back: true,
            ..Write::plain(&incr, true)
        };
        let spliced = Write {
            splice: Some(Splice { arg: 1, from: 1 }),
            ..Write::plain(&zadd, false)
        };
        let writes = [Write::plain(&incr, false), read_back, spliced];
        let shaped = shape(1, &[], &writes, &[]).expect("a shape");
        // The read back sends nothing: the increment's arguments are the
        // HGET's.
        assert_eq!(shaped.argv, [&b"k"[..], b"f", b"1", b"i", b"0", b"k"]);
        let text = text_of(1, &[], &writes, &[]).expect("a text");
        assert!(text.starts_with("local function exact(v)"), "{text}");
        assert!(text.contains("local w0 = redis.call('HINCRBY', ARGV[1], ARGV[2], ARGV[3])\n"));
        assert!(text.contains(
            "local w1 = exact(w0) or redis.call('HGET', ARGV[1], ARGV[2])\nout[1] = w1\n"
        ));
        assert!(text.contains("redis.call('ZADD', ARGV[4], w1, ARGV[6])\n"));
        // A plain HGET after the increment is another shape: it always runs.
        let plain = shape(1, &[], &[writes[0], Write::plain(&get, true), spliced], &[]);
        assert!(!Arc::ptr_eq(
            &shaped.script,
            &plain.expect("a shape").script
        ));
    }

    #[test]
    fn a_spliced_argument_is_the_earlier_reply_kept_in_a_local() {
        let (incr, get) = (cmd(&["HINCRBY", "k", "f", "1"]), cmd(&["HGET", "k", "f"]));
        let zadd = cmd(&["ZADD", "i", "0", "k"]);
        let spliced = Write {
            cmd: &zadd,
            keep: false,
            splice: Some(Splice { arg: 1, from: 1 }),
            reads_back: false,
        };
        let writes = [
            Write::plain(&incr, false),
            Write::plain(&get, true),
            spliced,
        ];
        let shaped = shape(1, &[], &writes, &[]).expect("a shape");
        let plain = shape(
            1,
            &[],
            &[writes[0], writes[1], Write::plain(&zadd, false)],
            &[],
        );
        assert!(!Arc::ptr_eq(
            &shaped.script,
            &plain.expect("a shape").script
        ));
        let mut zadd_shape = shape_of("ZADD", 3, false);
        zadd_shape.splice = Some(Splice { arg: 1, from: 1 });
        let text = text(
            1,
            &[],
            &[],
            &[
                shape_of("HINCRBY", 3, false),
                shape_of("HGET", 2, true),
                zadd_shape,
            ],
            &[],
        );
        assert!(text.contains("local w1 = redis.call('HGET', ARGV[4], ARGV[5])\nout[1] = w1\n"));
        assert!(text.contains("redis.call('ZADD', ARGV[6], w1, ARGV[8])\n"));
    }

    #[test]
    fn an_integer_reply_is_compared_as_a_number_sent_as_text() {
        let reads = [(cmd(&["PEXPIRETIME", "e"]), Value::Int(-1))];
        let del = cmd(&["DEL", "e"]);
        let shaped = shape(0, &reads, &[Write::plain(&del, false)], &[]).expect("a shape");
        assert_eq!(shaped.argv, [&b"e"[..], b"e", b"-1"]);
        let text = text(
            0,
            &[("PEXPIRETIME", 1, 1)],
            &[vec![Expect::Int(-1)]],
            &[shape_of("DEL", 1, false)],
            &[],
        );
        assert!(text.contains("if #r ~= 1 or r[1] ~= tonumber(ARGV[3]) then return {0, seen} end"));
    }

    #[test]
    fn reads_are_compared_with_the_expected_strings_after_the_arguments() {
        let reads = [(
            cmd(&["HMGET", "k", "a", "b"]),
            Value::Array(vec![Value::BulkString(b"x".to_vec()), Value::Nil]),
        )];
        let hset = cmd(&["HSET", "k", "a", "y"]);
        let shaped = shape(1, &reads, &[Write::plain(&hset, false)], &[]).expect("a shape");
        assert_eq!(shaped.argv, [&b"k"[..], b"a", b"b", b"k", b"a", b"y", b"x"]);
        let text = text(
            1,
            &[("HMGET", 3, 2)],
            &[vec![Expect::Text(b"x"), Expect::Nil]],
            &[shape_of("HSET", 3, false)],
            &[],
        );
        assert!(text.contains("seen[1] = read('HMGET', ARGV[1], ARGV[2], ARGV[3])\n"));
        assert!(text
            .contains("if #r ~= 2 or r[1] ~= ARGV[7] or r[2] ~= false then return {0, seen} end"));
        // After reads, the kept replies follow a 1, flat.
        assert!(text.ends_with(
            "local out = {1}\nredis.call('HSET', ARGV[4], ARGV[5], ARGV[6])\nreturn out\n"
        ));
    }

    #[test]
    fn a_read_expected_to_find_nothing_runs_only_if_its_key_exists() {
        let text = text(
            1,
            &[
                ("HMGET", 3, 2),
                ("SORT_RO", 4, 0),
                ("LINDEX", 2, 1),
                ("HGET", 2, 1),
            ],
            &[
                vec![Expect::Nil, Expect::Nil],
                vec![],
                vec![Expect::Text(b"k")],
                vec![Expect::Nil],
            ],
            &[shape_of("HSET", 3, false)],
            &[],
        );
        assert!(text.contains(
            "if redis.call('EXISTS', ARGV[1]) == 0 then seen[1] = {false, false} \
             else seen[1] = read('HMGET', ARGV[1], ARGV[2], ARGV[3]) end\n"
        ));
        assert!(text.contains(
            "if redis.call('EXISTS', ARGV[4]) == 0 then seen[2] = {} \
             else seen[2] = read('SORT_RO', ARGV[4], ARGV[5], ARGV[6], ARGV[7]) end\n"
        ));
        // A read expected to find a value reads, whatever its key.
        assert!(text.contains("seen[3] = read('LINDEX', ARGV[8], ARGV[9])\n"));
        assert!(text.contains("then seen[4] = false else seen[4] = read('HGET'"));
        // Only commands whose reply for a missing key is known.
        assert_eq!(
            absent_reply("HMGET", 3, 2).as_deref(),
            Some("{false, false}")
        );
        assert_eq!(absent_reply("HMGET", 3, 1), None);
        assert_eq!(absent_reply("EXISTS", 2, 1), None);
        assert_eq!(absent_reply("SORT_RO", 4, 1), None);
    }

    #[test]
    fn a_reply_says_whether_the_writes_ran_in_as_few_values_as_it_can() {
        let int = Value::Int;
        let list = |values: &[Value]| Value::Array(values.to_vec());
        let (incr, set) = (
            cmd(&["HINCRBY", "k", "f", "1"]),
            cmd(&["HSET", "k", "g", "v"]),
        );
        let two = shape(
            1,
            &[],
            &[Write::plain(&incr, true), Write::plain(&set, true)],
            &[],
        )
        .expect("a shape");
        let one = shape(
            1,
            &[],
            &[Write::plain(&incr, true), Write::plain(&set, false)],
            &[],
        )
        .expect("a shape");
        let read = [(cmd(&["HGET", "k", "g"]), Value::Nil)];
        let checked = shape(
            1,
            &read,
            &[Write::plain(&incr, true), Write::plain(&set, true)],
            &[],
        )
        .expect("a shape");
        // No reads: the kept replies alone, whatever they are; one kept
        // reply not even in a list, a list included.
        assert_eq!(
            two.reply(list(&[int(0), int(7)])),
            Some((true, vec![int(0), int(7)]))
        );
        assert_eq!(one.reply(int(7)), Some((true, vec![int(7)])));
        assert_eq!(
            one.reply(list(&[int(7)])),
            Some((true, vec![list(&[int(7)])]))
        );
        // Reads: a 1, then the kept replies; or a 0 and the reads.
        assert_eq!(
            checked.reply(list(&[int(1), int(7)])),
            Some((true, vec![int(7)]))
        );
        assert_eq!(checked.reply(list(&[int(1)])), Some((true, vec![])));
        let seen = vec![Value::Nil, int(3)];
        assert_eq!(
            checked.reply(list(&[int(0), Value::Array(seen.clone())])),
            Some((false, seen))
        );
        // Anything else is an unknown shape.
        assert_eq!(checked.reply(list(&[])), None);
        assert_eq!(checked.reply(list(&[int(0), int(3)])), None);
        assert_eq!(checked.reply(list(&[int(2)])), None);
        assert_eq!(two.reply(int(7)), None);
    }

    #[test]
    fn the_same_shape_shares_one_script_and_odd_ones_take_the_general_script() {
        let (a, b) = (cmd(&["HSET", "a", "f", "v"]), cmd(&["HSET", "b", "f", "v"]));
        let one = shape(1, &[], &[Write::plain(&a, false)], &[])
            .expect("a shape")
            .script;
        let two = shape(1, &[], &[Write::plain(&b, false)], &[])
            .expect("a shape")
            .script;
        assert!(Arc::ptr_eq(&one, &two));
        // A name that is not a command name never goes into a text.
        let odd = cmd(&["HSET') --", "k"]);
        assert!(shape(1, &[], &[Write::plain(&odd, false)], &[]).is_none());
        // A status reply is not one the script compares.
        let ping = [(cmd(&["PING"]), Value::Okay)];
        assert!(shape(1, &ping, &[Write::plain(&a, false)], &[]).is_none());
        let del = cmd(&["DEL", "k"]);
        let many: Vec<Write<'_>> = (0..=MAX_COMMANDS)
            .map(|_| Write::plain(&del, false))
            .collect();
        assert!(shape(1, &[], &many, &[]).is_none());
    }
}
