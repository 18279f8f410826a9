//! Bad input never panics: every command of the engine's table run with
//! random argument vectors (numbers at the i64 / u64 / f64 edges, huge
//! offsets, negative counts, empty strings, bad stream IDs, glob patterns
//! that backtrack, binary junk, Lua scripts that error or return odd
//! types) against keys of every type and encoding. The engine alone, no
//! redis-server: what is checked is that each command answers (a reply or
//! an error), never panics, never hangs, and never allocates without
//! bound.
//!
//! Half the commands are random argument vectors for a command of the
//! table, half are the trap scripts' commands (`tests/engine/traps/`)
//! with an argument or two changed, which reach past the parsing.
//!
//! - A panic is caught, recorded with its command, and the run goes on
//!   with a new engine; the test fails listing every distinct one.
//! - A command that blocks by design (BLPOP..., XREAD BLOCK) is given a
//!   few milliseconds and then dropped, which gives up its wait; any
//!   other command still running after [`HANG`] is a hang (a watchdog
//!   thread sees a command that never returns to the runtime).
//! - `proto-max-bulk-len` is lowered to its minimum (1 MB), which bounds
//!   every string a command may grow (SETBIT, SETRANGE, APPEND, BITFIELD,
//!   LCS) as it does in Redis; a command that still makes the process
//!   grow by [`GROWTH`] is recorded.
//!
//! Sizes: `REDMODEL_FUZZ_COMMANDS` commands (default 6000);
//! `REDMODEL_FUZZ_SEED` replays a run (the test prints its seed).
//!
//! Scripts that loop are stopped as Redis lets a client stop them: past
//! `busy-reply-threshold`, SCRIPT KILL / FUNCTION KILL from another
//! connection of the RESP server (`a_looping_script_is_killed`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use redis::aio::ConnectionLike;
use redis::Value;
use redmodel::memory::{may_block, Engine};
use redmodel_suite::diff::{engine_knows, parse_line, show, show_cmd, Args};

/// A command that does not block by design and takes longer than this hangs.
const HANG: Duration = Duration::from_secs(10);
/// How long a command that blocks by design may wait before it is dropped.
const BLOCK_WAIT: Duration = Duration::from_millis(5);
/// A command that takes longer than this is printed (not a failure).
const SLOW: Duration = Duration::from_millis(300);
/// Resident memory one command may add before it is recorded.
const GROWTH: u64 = 256 << 20;
/// Commands per round: each round starts from a fresh set of keys.
const ROUND: usize = 250;

/// Commands left out: they stop, replicate or reconfigure the process
/// rather than answer (SHUTDOWN, MONITOR, SYNC...), or raise the limits
/// that keep the others bounded (CONFIG SET), or pause every client;
/// PFSELFTEST, which takes seconds in a debug build and no argument.
const LEFT_OUT: &[&str] = &[
    "pfselftest",
    "shutdown",
    "monitor",
    "sync",
    "psync",
    "replicaof",
    "slaveof",
    "failover",
    "debug",
    "config|set",
    "config|rewrite",
    "client|pause",
    "client|kill",
    "quit",
];

/// Keys of every type and encoding, made by [`SETUP`].
const KEYS: &[&str] = &[
    "s", "h", "l", "S", "z", "x", "p", "n", "bigl", "bigz", "bigs", "bigh", "long", "int", "empty",
];

/// The keys, a few at a time (each round starts with them).
fn setup() -> Vec<Args> {
    let mut cmds: Vec<Vec<String>> = [
        "CONFIG SET proto-max-bulk-len 1048576",
        "SET s hello",
        "SET int 12345",
        "SET empty x",
        "SETRANGE empty 0 \"\"",
        "HSET h f 1 g x",
        "RPUSH l a b 1 2",
        "SADD S a b 1",
        "ZADD z 1 a 2 b -inf c",
        "XADD x 1-1 f v",
        "XADD x 2-1 g w",
        "XGROUP CREATE x g 0",
        "XREADGROUP GROUP g c STREAMS x >",
        "PFADD p a b c",
    ]
    .iter()
    .map(|l| l.split(' ').map(String::from).collect())
    .collect();
    let mut many = |head: &[&str], item: &dyn Fn(usize) -> Vec<String>, n: usize| {
        let mut c: Vec<String> = head.iter().map(|s| s.to_string()).collect();
        for i in 0..n {
            c.extend(item(i));
        }
        cmds.push(c);
    };
    many(&["RPUSH", "bigl"], &|i| vec![format!("item{i}")], 300);
    many(
        &["ZADD", "bigz"],
        &|i| vec![i.to_string(), format!("m{i}")],
        200,
    );
    many(&["SADD", "bigs"], &|i| vec![i.to_string()], 600);
    many(
        &["HSET", "bigh"],
        &|i| vec![format!("f{i}"), "v".repeat(i % 70)],
        200,
    );
    cmds.push(vec!["SET".into(), "long".into(), "a".repeat(2000)]);
    cmds.push(vec![
        "PFADD".into(),
        "p".into(),
        "dense".into(),
        "hll".into(),
    ]);
    cmds.into_iter()
        .map(|c| {
            c.into_iter()
                .map(|a| {
                    if a == "\"\"" {
                        Vec::new()
                    } else {
                        a.into_bytes()
                    }
                })
                .collect()
        })
        .collect()
}

/// Arguments: numbers at the edges, keywords of every family, IDs, glob
/// patterns, scripts, junk.
const ATOMS: &[&str] = &[
    // Numbers.
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "10",
    "100",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775807",
    "-4611686018427387904",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "2147483647",
    "536870911",
    "8388607",
    "1e308",
    "-1e308",
    "1e400",
    "4.9e-324",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "-0",
    "0.5",
    "-1.5",
    "0x10",
    " 1",
    "1 ",
    "1e3",
    "(1",
    "(-inf",
    "(+inf",
    "[a",
    "(a",
    "-",
    "+",
    "#1",
    "#-1",
    "#4294967295",
    // Stream IDs.
    "0-0",
    "1-1",
    "2-1",
    "1-*",
    "*",
    "$",
    ">",
    "18446744073709551615-18446744073709551615",
    "18446744073709551615-*",
    "-1-1",
    "1-",
    "-0-0",
    "1-18446744073709551616",
    // Keywords.
    "COUNT",
    "LIMIT",
    "WITHSCORES",
    "WITHVALUES",
    "BYSCORE",
    "BYLEX",
    "REV",
    "MATCH",
    "TYPE",
    "STORE",
    "GET",
    "SET",
    "BY",
    "ALPHA",
    "DESC",
    "NX",
    "XX",
    "GT",
    "LT",
    "CH",
    "INCR",
    "INCRBY",
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "PERSIST",
    "BLOCK",
    "STREAMS",
    "GROUP",
    "NOACK",
    "MAXLEN",
    "MINID",
    "~",
    "=",
    "IDLE",
    "TIME",
    "RETRYCOUNT",
    "FORCE",
    "JUSTID",
    "LASTID",
    "MKSTREAM",
    "ENTRIESREAD",
    "ENTRIESADDED",
    "MAXDELETEDID",
    "OVERFLOW",
    "SAT",
    "FAIL",
    "WRAP",
    "i64",
    "u63",
    "i1",
    "u64",
    "i8",
    "BIT",
    "BYTE",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "MIN",
    "MAX",
    "RANK",
    "MAXLEN",
    "AGGREGATE",
    "SUM",
    "WEIGHTS",
    "REPLACE",
    "ABSTTL",
    "IDLETIME",
    "FREQ",
    "DB",
    "KEYS",
    "IDX",
    "LEN",
    "MINMATCHLEN",
    "WITHMATCHLEN",
    "SYNC",
    "ASYNC",
    "FULL",
    "CONSUMERS",
    "GROUPS",
    "STREAM",
    "HELP",
    "LOAD",
    "FLUSH",
    "DELETE",
    "LIST",
    "WITHCODE",
    "LIBRARYNAME",
    "AND",
    "OR",
    "XOR",
    "NOT",
    "SAMPLES",
    "CREATE",
    "SETID",
    "DESTROY",
    // Glob patterns, one that backtracks.
    "*",
    "?",
    "[",
    "[^a-",
    "\\",
    "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
    // Strings.
    "",
    "x",
    "a",
    "f",
    "g",
    "m1",
    "hello",
    "\u{0}\u{1}\u{7f}\u{ff}",
    "héllo",
    "\r\n",
    "-ERR",
    // Lua, for EVAL and FUNCTION LOAD.
    "return 1",
    "return {1, {2, {3}}, 'x', 1.5, true, false, nil, 4}",
    "return 0/0",
    "return -1/0",
    "return 2^64",
    "return {err = 'E x'}",
    "return {ok = {}}",
    "return redis.call('set', KEYS[1], ARGV[1])",
    "return redis.call(ARGV[1], KEYS[1])",
    "return redis.pcall('incr', KEYS[1], 'extra')",
    "return redis.call('setbit', KEYS[1], ARGV[1], 1)",
    "return redis.call()",
    "return redis.call({})",
    "local t = {} t[1] = t return t",
    "local t = {} for i = 1, 100 do t[i * 3] = i end return t",
    "error(ARGV[1])",
    "return cjson.decode(ARGV[1])",
    "return cmsgpack.unpack(ARGV[1])",
    "return struct.unpack(ARGV[1], ARGV[2])",
    "return string.rep('x', 100000)",
    "#!lua name=fz\nredis.register_function('f', function(k, a) return redis.call(a[1], k[1]) end)",
    "#!lua name=fz\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'nosuch'}}",
    "#!lua\nreturn 1",
    "not lua at all",
    // Keys.
    "s",
    "h",
    "l",
    "S",
    "z",
    "x",
    "p",
    "n",
    "bigl",
    "bigz",
    "long",
];

/// Every command of the engine's table (containers as `name|sub`, run as
/// two arguments), from its COMMAND reply, without [`LEFT_OUT`].
fn command_names(engine: &Engine) -> Vec<Args> {
    let Value::Array(entries) = engine.connection().execute(&[b"COMMAND"]) else {
        panic!("COMMAND did not reply an array");
    };
    let mut names: Vec<String> = Vec::new();
    for entry in &entries {
        let Value::Array(fields) = entry else {
            continue;
        };
        if let Some(Value::BulkString(name)) = fields.first() {
            names.push(String::from_utf8_lossy(name).into_owned());
        }
        if let Some(Value::Array(subs)) = fields.get(9) {
            for sub in subs {
                if let Value::Array(sub) = sub {
                    if let Some(Value::BulkString(n)) = sub.first() {
                        names.push(String::from_utf8_lossy(n).into_owned());
                    }
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| !LEFT_OUT.contains(&n.as_str()))
        .filter(|n| engine_knows(n.split('|').next().unwrap_or(n)))
        .map(|n| n.split('|').map(|p| p.as_bytes().to_vec()).collect())
        .collect()
}

/// A random argument vector for `name`: usually a key first, then up to
/// eight atoms (sometimes a key among them).
fn arguments(rng: &mut TestRng, name: &Args) -> Args {
    let mut roll = |n: usize| (rng.next_u64() % n as u64) as usize;
    let mut args = name.clone();
    if roll(10) < 7 {
        args.push(KEYS[roll(KEYS.len())].as_bytes().to_vec());
    }
    let count = roll(9);
    for _ in 0..count {
        let atom = match roll(12) {
            0 => KEYS[roll(KEYS.len())].as_bytes().to_vec(),
            // Binary junk.
            1 => (0..roll(6)).map(|_| roll(256) as u8).collect(),
            _ => ATOMS[roll(ATOMS.len())].as_bytes().to_vec(),
        };
        args.push(atom);
    }
    args
}

/// The command lines of the trap scripts (`tests/engine/traps/*.txt`):
/// commands of every family, mostly well formed, for [`mutated`] to bend.
fn templates() -> Vec<Args> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/engine/traps");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') || line.starts_with("==") {
                continue;
            }
            // `@N `, `&N ` (another connection), `~` (a whole SCAN); `?N`
            // reads a reply and is no command.
            let line = match line.as_bytes()[0] {
                b'@' | b'&' => line.split_once(' ').map_or("", |(_, rest)| rest),
                b'?' => continue,
                _ => line,
            };
            if let Ok(args) = parse_line(line.trim_start_matches('~')) {
                let left_out = args.first().is_some_and(|n| {
                    let n = String::from_utf8_lossy(n).to_ascii_lowercase();
                    LEFT_OUT.contains(&n.as_str())
                        || (n == "config"
                            && args.get(1).is_some_and(|a| !a.eq_ignore_ascii_case(b"get")))
                        || (n == "client"
                            && args
                                .get(1)
                                .is_some_and(|a| a.eq_ignore_ascii_case(b"pause")))
                });
                if !args.is_empty() && !left_out {
                    out.push(args);
                }
            }
        }
    }
    out
}

/// A trap command with one or two of its arguments changed: replaced by
/// an atom or a key, dropped, or one added.
fn mutated(rng: &mut TestRng, template: &Args) -> Args {
    let mut roll = |n: usize| (rng.next_u64() % n.max(1) as u64) as usize;
    let mut args = template.clone();
    for _ in 0..1 + roll(2) {
        let atom = match roll(5) {
            0 => KEYS[roll(KEYS.len())].as_bytes().to_vec(),
            _ => ATOMS[roll(ATOMS.len())].as_bytes().to_vec(),
        };
        match roll(6) {
            0 => args.push(atom),
            1 if args.len() > 1 => {
                let at = 1 + roll(args.len() - 1);
                args.remove(at);
            }
            _ if args.len() > 1 => {
                let at = 1 + roll(args.len() - 1);
                args[at] = atom;
            }
            _ => args.push(atom),
        }
    }
    args
}

/// The process's resident memory, in bytes (0 where /proc is absent).
fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".into()
    }
}

/// What a run found: panics, hangs and growth, one line each.
#[derive(Default)]
struct Findings {
    lines: Vec<String>,
    /// Command names already reported (one report per name and kind).
    seen: Vec<String>,
}

impl Findings {
    fn add(&mut self, kind: &str, args: &Args, detail: &str) {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
        let tag = format!("{kind} {name}");
        if self.seen.contains(&tag) {
            return;
        }
        self.seen.push(tag);
        self.lines
            .push(format!("{kind}: {}\n    {detail}", show_cmd(args)));
    }
}

/// The command running now, for the watchdog: when it started, and what.
type Current = Arc<Mutex<Option<(Instant, String)>>>;

/// Runs `total` random commands; returns the findings.
fn fuzz(seed: u64, total: usize, current: &Current) -> Findings {
    let mut seed_bytes = [0u8; 32];
    for (i, chunk) in seed_bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(seed.wrapping_add(i as u64 * 0x9E37_79B9)).to_le_bytes());
    }
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let names = command_names(&Engine::new());
    assert!(
        names.len() > 100,
        "the table lists {} commands",
        names.len()
    );
    let setup = setup();
    let templates = templates();
    assert!(templates.len() > 1000, "{} trap lines", templates.len());
    let mut findings = Findings::default();
    let mut engine = Engine::new();
    let mut done = 0;
    while done < total {
        let mut conn = engine.connection();
        let _ = conn.execute(&[b"FLUSHALL"]);
        for cmd in &setup {
            let refs: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
            let reply = conn.execute(&refs);
            assert!(
                !matches!(reply, Value::ServerError(_)),
                "setup {}: {}",
                show_cmd(cmd),
                show(&reply)
            );
        }
        for _ in 0..ROUND.min(total - done) {
            done += 1;
            // Half the commands are random argument vectors, half are
            // trap commands bent a little (which get past the parsing).
            let args = if rng.next_u64().is_multiple_of(2) {
                let name = &names[(rng.next_u64() % names.len() as u64) as usize];
                arguments(&mut rng, name)
            } else {
                let template = &templates[(rng.next_u64() % templates.len() as u64) as usize];
                mutated(&mut rng, template)
            };
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            let blocks = may_block(&refs)
                || args[0].eq_ignore_ascii_case(b"WAIT")
                || args[0].eq_ignore_ascii_case(b"WAITAOF");
            let mut cmd = redis::Cmd::new();
            for a in &args {
                cmd.arg(&a[..]);
            }
            *current.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((Instant::now(), show_cmd(&args)));
            let before = resident();
            let started = Instant::now();
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let wait = if blocks { BLOCK_WAIT } else { HANG };
                // The timer is made inside the runtime.
                runtime.block_on(async {
                    tokio::time::timeout(wait, conn.req_packed_command(&cmd)).await
                })
            }));
            *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
            match outcome {
                Err(p) => {
                    findings.add("panic", &args, &panic_text(p.as_ref()));
                    // The engine may be left half-changed: start again.
                    engine = Engine::new();
                    break;
                }
                Ok(Err(_elapsed)) if !blocks => {
                    findings.add("hang", &args, &format!("no reply after {HANG:?}"));
                }
                Ok(_) => {}
            }
            if started.elapsed() > SLOW {
                eprintln!("fuzz: slow ({:?}): {}", started.elapsed(), show_cmd(&args));
            }
            let grown = resident().saturating_sub(before);
            if grown > GROWTH {
                findings.add(
                    "growth",
                    &args,
                    &format!("{} MB in one command", grown >> 20),
                );
            }
        }
    }
    findings
}

#[test]
fn bad_input_never_panics_hangs_or_grows() {
    let seed = redmodel_suite::env_seed("REDMODEL_FUZZ_SEED");
    let total = std::env::var("REDMODEL_FUZZ_COMMANDS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(6000);
    eprintln!("fuzz: {total} commands, REDMODEL_FUZZ_SEED={seed}");
    let current: Current = Arc::new(Mutex::new(None));
    let finished = Arc::new(AtomicBool::new(false));
    let worker = {
        let current = Arc::clone(&current);
        let finished = Arc::clone(&finished);
        std::thread::spawn(move || {
            let findings = fuzz(seed, total, &current);
            finished.store(true, Ordering::SeqCst);
            findings
        })
    };
    // The watchdog: a command that never gives the thread back (a loop
    // under the engine's lock) is seen from here.
    while !finished.load(Ordering::SeqCst) && !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        let stuck = current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|(started, _)| started.elapsed() > HANG + Duration::from_secs(5))
            .map(|(_, cmd)| cmd.clone());
        if let Some(cmd) = stuck {
            panic!("fuzz (REDMODEL_FUZZ_SEED={seed}): the engine hangs on {cmd}");
        }
    }
    let findings = worker
        .join()
        .unwrap_or_else(|p| panic!("the fuzz itself panicked: {}", panic_text(p.as_ref())));
    assert!(
        findings.lines.is_empty(),
        "fuzz (REDMODEL_FUZZ_SEED={seed}): {} finding(s):\n{}",
        findings.lines.len(),
        findings.lines.join("\n")
    );
}

/// Scripts that never end, as a client can stop them: past
/// `busy-reply-threshold` other clients get BUSY, and SCRIPT KILL (EVAL)
/// or FUNCTION KILL (FCALL) stops the script with Redis's error, whatever
/// it loops in: errors caught by `pcall`, `redis.call`, a coroutine, a
/// tail call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_script_is_killed() {
    let patience = Duration::from_secs(10);
    let engine = Engine::new();
    let server = redmodel_suite::serve_engine(engine.clone())
        .await
        .expect("bind a loopback port");
    let client = redis::Client::open(format!("redis://{}", server.local_addr())).expect("url");
    // Every connection waits as long as the test does (redis-rs's default
    // response timeout is shorter than a loaded machine's KILL can take).
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(patience));
    let mut control = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connect");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("busy-reply-threshold")
        .arg(20)
        .query_async(&mut control)
        .await
        .expect("CONFIG SET");
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(
            "#!lua name=loops\n\
             redis.register_function('spin', function() while true do end end)\n\
             redis.register_function{function_name = 'spin_ro', callback = function() \
             while true do redis.call('get', 'k') end end, flags = {'no-writes'}}",
        )
        .query_async(&mut control)
        .await
        .expect("FUNCTION LOAD");
    let loops: &[(&str, &[&str], &str)] = &[
        ("EVAL", &["while true do end", "0"], "SCRIPT"),
        (
            "EVAL",
            &["while true do pcall(redis.call, 'nosuch') end", "0"],
            "SCRIPT",
        ),
        (
            "EVAL",
            &["while true do pcall(error, 'x') end", "0"],
            "SCRIPT",
        ),
        (
            "EVAL",
            &["while true do redis.call('get', KEYS[1]) end", "1", "k"],
            "SCRIPT",
        ),
        (
            "EVAL",
            &[
                "local co = coroutine.wrap(function() while true do end end) co()",
                "0",
            ],
            "SCRIPT",
        ),
        (
            "EVAL",
            &["local function f(n) return f(n + 1) end return f(1)", "0"],
            "SCRIPT",
        ),
        ("FCALL", &["spin", "0"], "FUNCTION"),
        ("FCALL_RO", &["spin_ro", "0"], "FUNCTION"),
    ];
    for (command, args, killer) in loops {
        let mut looping_conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .expect("connect");
        let mut cmd = redis::cmd(command);
        for a in *args {
            cmd.arg(*a);
        }
        let looping =
            tokio::spawn(async move { cmd.query_async::<Value>(&mut looping_conn).await });
        let what = format!("{command} {args:?}");
        // BUSY once the threshold has passed.
        let deadline = Instant::now() + patience;
        loop {
            let reply = redis::cmd("PING").query_async::<String>(&mut control).await;
            match reply {
                Err(e) if e.code() == Some("BUSY") => break,
                _ if Instant::now() > deadline => panic!("{what}: never BUSY ({reply:?})"),
                _ => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
        let asked = Instant::now();
        let _: () = tokio::time::timeout(
            patience,
            redis::cmd(killer).arg("KILL").query_async(&mut control),
        )
        .await
        .unwrap_or_else(|_| panic!("{what}: {killer} KILL did not answer"))
        .unwrap_or_else(|e| panic!("{what}: {killer} KILL: {e}"));
        let killed = tokio::time::timeout(patience, looping)
            .await
            .unwrap_or_else(|_| panic!("{what}: still running after {killer} KILL"))
            .expect("the looping task");
        eprintln!("{what}: stopped {:?} after {killer} KILL", asked.elapsed());
        let e = killed.expect_err("a killed script replies an error");
        assert!(
            e.to_string().contains("Script killed by user with"),
            "{what}: {e}"
        );
        let pong: String = redis::cmd("PING")
            .query_async(&mut control)
            .await
            .expect("PING after the kill");
        assert_eq!(pong, "PONG", "{what}");
    }
    server.shutdown().await;
}
