//! DUMP / RESTORE between the engine and a private redis-server, both
//! ways: for every type, small and large (each of Redis's two encodings),
//! a value built on one side, DUMPed there and RESTOREd on the other reads
//! back the same, with the same OBJECT ENCODING. Strings' payloads are
//! compared byte for byte too (the engine compresses them as liblzf does);
//! other payloads are compared by what each side makes of the other's.
//!
//! RESTORE's errors and options are in `traps/dump.txt`.

use redis::Value;
use redmodel::memory::{Connection, Engine};
use redmodel_suite::diff::show;
use redmodel_suite::{redis_server_available, RedisServer};

/// A value: the commands that build it at key `k`, and the commands that
/// read it back (`SORTED` first: an unordered reply, compared sorted).
struct Case {
    name: &'static str,
    build: Vec<Vec<String>>,
    reads: Vec<Vec<String>>,
}

const SORTED: &str = "SORTED";

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

fn case(name: &'static str, build: Vec<Vec<String>>, reads: &[&str]) -> Case {
    Case {
        name,
        build,
        reads: reads.iter().map(|r| words(r)).collect(),
    }
}

/// One command of `head` followed by the arguments `tail`.
fn command(head: &str, tail: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut c = words(head);
    c.extend(tail);
    c
}

fn cases() -> Vec<Case> {
    let long_text = "redis ".repeat(200);
    let odd_text: String = (0..300u32)
        .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
        .collect();
    let n = |count: usize| 0..count;
    vec![
        case(
            "short string",
            vec![words("SET k hello")],
            &["GET k", "OBJECT ENCODING k"],
        ),
        case(
            "integer string",
            vec![words("SET k -123456")],
            &["GET k", "OBJECT ENCODING k"],
        ),
        case(
            "64-bit integer string",
            vec![words("SET k -9223372036854775808")],
            &["GET k", "OBJECT ENCODING k"],
        ),
        case(
            "compressible string (LZF on redis-server)",
            vec![command("SET k", [long_text])],
            &["GET k", "STRLEN k", "OBJECT ENCODING k"],
        ),
        case(
            "incompressible string",
            vec![command("SET k", [odd_text])],
            &["GET k", "OBJECT ENCODING k"],
        ),
        case(
            "binary string",
            vec![vec![
                "SET".into(),
                "k".into(),
                "\u{0}\u{1}\r\n\u{ff}".into(),
            ]],
            &["GET k"],
        ),
        case(
            "small list",
            vec![words("RPUSH k a b 1 2 -3 300 70000 -9223372036854775808")],
            &["LRANGE k 0 -1", "OBJECT ENCODING k"],
        ),
        case(
            "large list (several quicklist nodes)",
            vec![
                command(
                    "RPUSH k",
                    n(3000).map(|i| format!("element-{i}-{}", "x".repeat(i % 50))),
                ),
                command("RPUSH k", ["y".repeat(20_000)]),
                command("LPUSH k", n(100).map(|i| i.to_string())),
            ],
            &["LLEN k", "LRANGE k 0 -1", "OBJECT ENCODING k"],
        ),
        case(
            "intset",
            vec![words("SADD k 3 -1 2 70000 -9223372036854775808")],
            &["SORTED SMEMBERS k", "OBJECT ENCODING k"],
        ),
        case(
            "large intset",
            vec![command("SADD k", n(500).map(|i| (i * 37).to_string()))],
            &["SORTED SMEMBERS k", "OBJECT ENCODING k"],
        ),
        case(
            "small set of strings",
            vec![words("SADD k a b c 1")],
            &["SORTED SMEMBERS k", "OBJECT ENCODING k"],
        ),
        case(
            "large set",
            vec![command("SADD k", n(1000).map(|i| format!("m{i}")))],
            &["SCARD k", "SORTED SMEMBERS k", "OBJECT ENCODING k"],
        ),
        case(
            "small sorted set",
            vec![words(
                "ZADD k 1 a 2.5 b -inf c inf d 0 e -0.125 f 1e300 g 3 100",
            )],
            &["ZRANGE k 0 -1 WITHSCORES", "OBJECT ENCODING k"],
        ),
        case(
            "sorted set with a long member",
            vec![command("ZADD k 1 a 2", ["m".repeat(100)])],
            &["ZRANGE k 0 -1 WITHSCORES", "OBJECT ENCODING k"],
        ),
        case(
            "large sorted set",
            vec![command(
                "ZADD k",
                n(500).flat_map(|i| [format!("{}", i as f64 / 7.0), format!("member:{i}")]),
            )],
            &["ZCARD k", "ZRANGE k 0 -1 WITHSCORES", "OBJECT ENCODING k"],
        ),
        case(
            "small hash",
            vec![words(
                "HSET k name redis n 12 neg -7 big 9223372036854775807 e ''",
            )],
            &["HGETALL k", "OBJECT ENCODING k"],
        ),
        case(
            "hash with a long value",
            vec![command("HSET k a 1 b", ["v".repeat(100)])],
            &["SORTED HGETALL k", "OBJECT ENCODING k"],
        ),
        case(
            "large hash",
            vec![command(
                "HSET k",
                n(600).flat_map(|i| [format!("f{i}"), format!("{}", i * i)]),
            )],
            &["HLEN k", "SORTED HGETALL k", "OBJECT ENCODING k"],
        ),
        case(
            "stream with groups",
            vec![
                words("XADD k 1-1 f v"),
                words("XADD k 1-2 f w"),
                words("XADD k 2-0 other 1 f 2"),
                words("XADD k 3-0 f v2"),
                words("XADD k 4-0 f v3"),
                words("XDEL k 1-2"),
                words("XGROUP CREATE k g1 0"),
                words("XGROUP CREATE k g2 $"),
                words("XGROUP CREATE k g3 1-2"),
                words("XREADGROUP GROUP g1 alice COUNT 2 STREAMS k >"),
                words("XREADGROUP GROUP g1 bob COUNT 1 STREAMS k >"),
                words("XGROUP CREATECONSUMER k g2 carol"),
                words("XACK k g1 1-1"),
            ],
            &[
                "XRANGE k - +",
                "XLEN k",
                "XINFO STREAM k FULL",
                "XINFO GROUPS k",
                "XPENDING k g1",
            ],
        ),
        case(
            "large stream, trimmed",
            vec![
                command("XADD k 1-1", ["a".into(), "1".into()]),
                words("CONFIG SET stream-node-max-entries 10"),
                words("XTRIM k MAXLEN 0"),
            ]
            .into_iter()
            .chain(n(250).map(|i| {
                if i % 3 == 0 {
                    command("XADD k *", [format!("f{i}"), "x".repeat(i)])
                } else {
                    command(
                        "XADD k *",
                        ["a".into(), i.to_string(), "b".into(), "-1".into()],
                    )
                }
            }))
            .chain([
                words("XTRIM k MAXLEN ~ 200"),
                words("XGROUP CREATE k g 0"),
                words("XREADGROUP GROUP g c COUNT 120 STREAMS k >"),
                words("CONFIG SET stream-node-max-entries 100"),
            ])
            .collect(),
            &[
                "XLEN k",
                "XRANGE k - +",
                "XINFO STREAM k",
                "XINFO GROUPS k",
                "XPENDING k g",
            ],
        ),
        case(
            "empty stream with a group",
            vec![
                words("XADD k 5-5 f v"),
                words("XDEL k 5-5"),
                words("XGROUP CREATE k g $ ENTRIESREAD 1"),
            ],
            &["XLEN k", "XINFO STREAM k FULL", "XINFO GROUPS k"],
        ),
    ]
}

/// The two sides.
struct Sides {
    engine: Connection,
    real: redis::Connection,
}

fn as_refs(args: &[String]) -> Vec<&[u8]> {
    args.iter().map(|a| a.as_bytes()).collect()
}

impl Sides {
    fn engine(&mut self, args: &[Vec<u8>]) -> Value {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        self.engine.execute(&refs)
    }

    fn real(&mut self, args: &[Vec<u8>]) -> Value {
        let mut cmd = redis::cmd(&String::from_utf8_lossy(&args[0]));
        for a in &args[1..] {
            cmd.arg(a.as_slice());
        }
        cmd.query(&mut self.real)
            .unwrap_or_else(|e| Value::SimpleString(format!("(error) {e}")))
    }

    fn on(&mut self, engine_side: bool, args: &[String]) -> Value {
        let args: Vec<Vec<u8>> = as_refs(args).into_iter().map(<[u8]>::to_vec).collect();
        if engine_side {
            self.engine(&args)
        } else {
            self.real(&args)
        }
    }

    /// Reads the value at `k` on one side, sorting unordered replies.
    fn read(&mut self, engine_side: bool, reads: &[Vec<String>]) -> Vec<Value> {
        reads
            .iter()
            .map(|read| {
                let sorted = read[0] == SORTED;
                let args = if sorted { &read[1..] } else { &read[..] };
                let mut reply = self.on(engine_side, args);
                if sorted {
                    if let Value::Array(items) = &mut reply {
                        items.sort_by_key(show);
                    }
                }
                reply
            })
            .collect()
    }

    fn reset(&mut self) {
        for engine_side in [true, false] {
            self.on(engine_side, &words("FLUSHALL"));
            self.on(
                engine_side,
                &words("CONFIG SET stream-node-max-entries 100"),
            );
        }
    }
}

/// Builds `case` on the source side, DUMPs it, RESTOREs it on the other,
/// and returns the differences in what the two read.
fn transfer(sides: &mut Sides, case: &Case, from_engine: bool) -> Option<String> {
    sides.reset();
    for cmd in &case.build {
        let reply = sides.on(from_engine, cmd);
        assert!(
            !matches!(reply, Value::ServerError(_)),
            "{}: {cmd:?} failed: {reply:?}",
            case.name
        );
    }
    let before = sides.read(from_engine, &case.reads);
    let payload = match sides.on(from_engine, &words("DUMP k")) {
        Value::BulkString(p) => p,
        other => panic!("{}: DUMP replied {other:?}", case.name),
    };
    let restore = vec![b"RESTORE".to_vec(), b"k".to_vec(), b"0".to_vec(), payload];
    let reply = if from_engine {
        sides.real(&restore)
    } else {
        sides.engine(&restore)
    };
    let (from, to) = if from_engine {
        ("engine", "redis-server")
    } else {
        ("redis-server", "engine")
    };
    if reply != Value::Okay {
        return Some(format!(
            "{}: {from} -> {to}: RESTORE replied {}",
            case.name,
            show(&reply)
        ));
    }
    let after = sides.read(!from_engine, &case.reads);
    let diffs: Vec<String> = case
        .reads
        .iter()
        .zip(before.iter().zip(&after))
        .filter(|(_, (b, a))| b != a)
        .map(|(read, (b, a))| {
            format!(
                "{}: {from} -> {to}: {}\n    {from}: {}\n    {to}: {}",
                case.name,
                read.join(" "),
                show(b),
                show(a)
            )
        })
        .collect();
    (!diffs.is_empty()).then(|| diffs.join("\n"))
}

/// A fresh engine and a private redis-server (kept alive by the caller),
/// or `None` (skipped, with a note) without redis-server outside CI.
fn sides_or_skip(test: &str) -> Option<(RedisServer, Sides)> {
    if !redis_server_available(test) {
        return None;
    }
    let server = RedisServer::start().expect("redis-server");
    let sides = Sides {
        engine: Engine::new().connection(),
        real: server.client().get_connection().expect("connect"),
    };
    Some((server, sides))
}

#[test]
fn dump_restore_both_ways() {
    let Some((_server, mut sides)) = sides_or_skip("dump_restore_both_ways") else {
        return;
    };
    let mut failures = Vec::new();
    for case in cases() {
        for from_engine in [false, true] {
            failures.extend(transfer(&mut sides, &case, from_engine));
        }
    }
    assert!(
        failures.is_empty(),
        "DUMP / RESTORE differ:\n{}",
        failures.join("\n")
    );
}

/// Strings of many shapes for the compressor: short and long, from
/// alphabets of 2 to 256 letters, with repeats near and past 8 kB back,
/// runs longer than a back reference reaches, and strings that barely
/// compress (Redis stores a string as it is unless LZF saves 4 bytes).
fn compressible_strings() -> Vec<Vec<u8>> {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut strings = Vec::new();
    for (len, letters) in [
        (21, 2u64),
        (24, 256),
        (40, 4),
        (64, 16),
        (300, 2),
        (1000, 4),
        (5000, 16),
        (9000, 64),
        (20_000, 200),
        (70_000, 3),
    ] {
        for _ in 0..4 {
            let mut s: Vec<u8> = Vec::with_capacity(len);
            while s.len() < len {
                let r = next();
                if r % 5 == 0 && s.len() > 8 {
                    // A repeat of earlier bytes, near or far.
                    let back = 1 + (r >> 8) as usize % s.len().min(9000);
                    let take = 3 + (r >> 24) as usize % 300;
                    let from = s.len() - back;
                    for k in 0..take {
                        s.push(s[from + k]);
                    }
                } else {
                    s.push(((r >> 32) % letters) as u8);
                }
            }
            s.truncate(len);
            strings.push(s);
        }
    }
    strings.push(vec![b'a'; 100_000]);
    strings.push(b"abcabcabcabcabcabcabcab".to_vec());
    strings
}

/// The engine compresses a string in a DUMP payload as redis-server does:
/// the same bytes, or the same choice to store it as it is.
#[test]
fn compressed_strings_dump_as_redis_dumps_them() {
    let test = "compressed_strings_dump_as_redis_dumps_them";
    let Some((_server, mut sides)) = sides_or_skip(test) else {
        return;
    };
    let mut differ = Vec::new();
    for (i, s) in compressible_strings().into_iter().enumerate() {
        let set = vec![b"SET".to_vec(), b"k".to_vec(), s.clone()];
        let dump = vec![b"DUMP".to_vec(), b"k".to_vec()];
        sides.engine(&set);
        sides.real(&set);
        let (ours, theirs) = (sides.engine(&dump), sides.real(&dump));
        if ours != theirs {
            differ.push(format!("string {i} of {} bytes", s.len()));
        }
    }
    assert!(differ.is_empty(), "DUMP payloads differ: {differ:?}");
}

/// A small list, hash and sorted set, each one listpack that compresses:
/// the engine's DUMP payloads are redis-server's, byte for byte.
#[test]
fn compressed_listpacks_dump_as_redis_dumps_them() {
    let test = "compressed_listpacks_dump_as_redis_dumps_them";
    let Some((_server, mut sides)) = sides_or_skip(test) else {
        return;
    };
    let items: Vec<String> = (0..60)
        .map(|i| format!("item-{}-abcabcabc", i % 7))
        .collect();
    let builds = [
        command("RPUSH", ["k".to_string()].into_iter().chain(items)),
        words("HSET k f1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa f2 bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"),
        words("ZADD k 1 memberaaaaaaaaaaaaaaaaaaaaaaaaa 2 memberbbbbbbbbbbbbbbbbbbbbbbbbbbbb"),
    ];
    for build in builds {
        let payloads: Vec<Value> = [true, false]
            .map(|engine_side| {
                sides.on(engine_side, &words("DEL k"));
                sides.on(engine_side, &build);
                sides.on(engine_side, &words("DUMP k"))
            })
            .into();
        assert_eq!(payloads[0], payloads[1], "{}", build[0]);
    }
}
