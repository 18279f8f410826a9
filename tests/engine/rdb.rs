//! RDB files between the engine and a private redis-server, both ways:
//! random datasets of every type and encoding (small and large values,
//! TTLs, several databases, streams with consumer groups and pending
//! entries) built on one side and SAVEd there, loaded by the other (the
//! server restarted on the file, the engine started on it with
//! `Engine::with_rdb_file`), then compared key by key: the same keys,
//! types, encodings and contents, TTLs within a second, and equal DUMP
//! payloads wherever Redis's layout is deterministic: everything but hash
//! tables, which each process walks in its own order, and streams, whose
//! nodes each side lays out its own way (their XINFO STREAM FULL is
//! compared). The payloads are compared uncompressed (`rdbcompression
//! no`): the engine's LZF finds other matches than Redis's, which the
//! files themselves are written with.

use redis::Value;
use redmodel::memory::{Connection, Engine};
use redmodel_suite::diff::show;
use redmodel_suite::{redis_server_available, RedisServer};

/// The databases the datasets use.
const DBS: [u32; 3] = [0, 1, 7];

/// A deterministic generator: the datasets are random, and the same for
/// a seed on every run.
struct Rng(fastrand::Rng);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.u64(..)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.u64(..n)
    }

    /// A member or field: an integer, a short word or a long string.
    fn text(&mut self) -> String {
        match self.below(4) {
            0 => (self.below(100_000) as i64 - 50_000).to_string(),
            1 | 2 => format!("w{}", self.below(1_000_000)),
            _ => "long-".repeat(3 + self.below(20) as usize) + &self.below(1000).to_string(),
        }
    }
}

pub(super) fn cmd(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

/// The commands that build the dataset of `seed`.
pub(super) fn dataset(seed: u64) -> Vec<Vec<String>> {
    let mut rng = Rng(fastrand::Rng::with_seed(seed));
    let mut out = vec![cmd(&["CONFIG", "SET", "stream-node-max-entries", "10"])];
    for db in DBS {
        out.push(cmd(&["SELECT", &db.to_string()]));
        for i in 0..30 {
            let key = format!("k{db}:{i}");
            let large = rng.below(3) == 0;
            let n = if large {
                150 + rng.below(500)
            } else {
                1 + rng.below(8)
            };
            match rng.below(7) {
                0 => {
                    let value = match rng.below(4) {
                        0 => (rng.next() as i64).to_string(),
                        1 => "abc".repeat(1 + rng.below(300) as usize),
                        2 => rng.text(),
                        _ => String::new(),
                    };
                    out.push(vec!["SET".into(), key.clone(), value]);
                }
                1 => {
                    let mut c = cmd(&["RPUSH", &key]);
                    c.extend((0..n).map(|_| rng.text()));
                    if large && rng.below(2) == 0 {
                        c.push("x".repeat(9000));
                    }
                    out.push(c);
                }
                2 => {
                    let ints = rng.below(2) == 0;
                    let mut c = cmd(&["SADD", &key]);
                    let count = if ints && large { 600 } else { n };
                    c.extend((0..count).map(|_| {
                        if ints {
                            (rng.below(1_000_000) as i64 - 500_000).to_string()
                        } else {
                            rng.text()
                        }
                    }));
                    out.push(c);
                }
                3 => {
                    let mut c = cmd(&["ZADD", &key]);
                    for _ in 0..n {
                        let score = match rng.below(5) {
                            0 => "-inf".to_string(),
                            1 => (rng.below(1000) as f64 / 7.0).to_string(),
                            _ => rng.below(100).to_string(),
                        };
                        c.push(score);
                        c.push(rng.text());
                    }
                    out.push(c);
                }
                4 => {
                    let mut c = cmd(&["HSET", &key]);
                    for j in 0..n {
                        c.push(format!("f{j}-{}", rng.text()));
                        c.push(rng.text());
                    }
                    out.push(c);
                }
                _ => stream(&mut rng, &key, n.min(200), &mut out),
            }
            if rng.below(3) == 0 {
                let ms = 10_000 + rng.below(1_000_000);
                out.push(cmd(&["PEXPIRE", &key, &ms.to_string()]));
            }
        }
    }
    out.push(cmd(&["SELECT", "0"]));
    out
}

/// A stream of `n` entries, some deleted, with groups, consumers and
/// pending entries, some acknowledged.
fn stream(rng: &mut Rng, key: &str, n: u64, out: &mut Vec<Vec<String>>) {
    for j in 0..n {
        let mut c = cmd(&["XADD", key, &format!("{}-{}", 1000 + j * 3, rng.below(3))]);
        for f in 0..1 + rng.below(3) {
            c.push(format!("f{f}"));
            c.push(rng.text());
        }
        out.push(c);
    }
    if n > 3 {
        out.push(cmd(&["XDEL", key, &format!("{}-0", 1000 + 3)]));
    }
    for g in 0..rng.below(3) {
        let group = format!("g{g}");
        out.push(cmd(&["XGROUP", "CREATE", key, &group, "0"]));
        for consumer in ["alice", "bob"] {
            let count = (1 + rng.below(5)).to_string();
            out.push(cmd(&[
                "XREADGROUP",
                "GROUP",
                &group,
                consumer,
                "COUNT",
                &count,
                "STREAMS",
                key,
                ">",
            ]));
        }
        out.push(cmd(&["XACK", key, &group, "1000-0", "1000-1", "1000-2"]));
        out.push(cmd(&["XGROUP", "CREATECONSUMER", key, &group, "carol"]));
    }
}

/// One side of the comparison.
pub(super) enum Side {
    Engine(Connection),
    Server(redis::Connection),
}

impl Side {
    pub(super) fn run(&mut self, args: &[String]) -> Value {
        match self {
            Side::Engine(c) => {
                let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
                c.execute(&refs)
            }
            Side::Server(c) => {
                let mut command = redis::cmd(&args[0]);
                for a in &args[1..] {
                    command.arg(a.as_str());
                }
                command
                    .query(c)
                    .unwrap_or_else(|e| Value::SimpleString(format!("(error) {e}")))
            }
        }
    }

    pub(super) fn line(&mut self, line: &str) -> Value {
        self.run(&line.split(' ').map(str::to_string).collect::<Vec<_>>())
    }
}

/// What the side holds at `key`: its type, encoding, contents (sorted
/// where unordered), TTL in seconds (rounded), and its DUMP payload
/// where the layout is deterministic.
fn describe(side: &mut Side, key: &str) -> Vec<String> {
    let kind = show(&side.line(&format!("TYPE {key}")));
    let encoding = show(&side.line(&format!("OBJECT ENCODING {key}")));
    let sorted = |v: Value| match v {
        Value::Array(mut items) => {
            items.sort_by_key(show);
            show(&Value::Array(items))
        }
        other => show(&other),
    };
    let contents = match kind.trim_matches('"') {
        "string" => show(&side.line(&format!("GET {key}"))),
        "list" => show(&side.line(&format!("LRANGE {key} 0 -1"))),
        "set" => sorted(side.line(&format!("SMEMBERS {key}"))),
        "zset" => show(&side.line(&format!("ZRANGE {key} 0 -1 WITHSCORES"))),
        "hash" => sorted(side.line(&format!("HGETALL {key}"))),
        _ => show(&side.line(&format!("XINFO STREAM {key} FULL"))),
    };
    let ttl = match side.line(&format!("PTTL {key}")) {
        Value::Int(t) if t > 0 => format!("ttl ~{}s", (t + 500) / 1000),
        other => format!("ttl {}", show(&other)),
    };
    let deterministic = encoding != "\"hashtable\"" && !kind.contains("stream");
    let mut out = vec![kind, encoding, contents, ttl];
    if deterministic {
        out.push(show(&side.line(&format!("DUMP {key}"))));
    }
    out
}

/// The differences between the two sides, key by key.
pub(super) fn differences(
    writer: &mut Side,
    loader: &mut Side,
    from: &str,
    to: &str,
) -> Vec<String> {
    let mut diffs = Vec::new();
    for side in [&mut *writer, &mut *loader] {
        side.line("CONFIG SET rdbcompression no");
    }
    for db in DBS {
        let select = format!("SELECT {db}");
        writer.line(&select);
        loader.line(&select);
        let keys = |side: &mut Side| match side.line("KEYS *") {
            Value::Array(keys) => {
                let mut keys: Vec<String> = keys
                    .iter()
                    .map(|k| match k {
                        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                        other => show(other),
                    })
                    .collect();
                keys.sort();
                keys
            }
            other => vec![show(&other)],
        };
        let written = keys(writer);
        let loaded = keys(loader);
        if written != loaded {
            diffs.push(format!(
                "db {db}: keys differ\n  {from}: {written:?}\n  {to}: {loaded:?}"
            ));
            continue;
        }
        for key in &written {
            let (w, l) = (describe(writer, key), describe(loader, key));
            // A TTL read a moment apart may round to the next second.
            for (i, (a, b)) in w.iter().zip(&l).enumerate() {
                if a != b && !(i == 3 && ttl_close(a, b)) {
                    diffs.push(format!("db {db} key {key}:\n  {from}: {a}\n  {to}: {b}"));
                }
            }
        }
    }
    writer.line("SELECT 0");
    loader.line("SELECT 0");
    diffs
}

fn ttl_close(a: &str, b: &str) -> bool {
    let secs = |s: &str| {
        s.strip_prefix("ttl ~")?
            .strip_suffix('s')?
            .parse::<i64>()
            .ok()
    };
    matches!((secs(a), secs(b)), (Some(x), Some(y)) if (x - y).abs() <= 1)
}

pub(super) fn build(side: &mut Side, commands: &[Vec<String>]) {
    for c in commands {
        let reply = side.run(c);
        assert!(
            !matches!(reply, Value::ServerError(_))
                && !matches!(&reply, Value::SimpleString(s) if s.starts_with("(error)")),
            "{c:?} failed: {reply:?}"
        );
    }
}

#[test]
fn rdb_files_written_by_the_engine_load_in_redis_server() {
    if !redis_server_available("rdb_files_written_by_the_engine_load_in_redis_server") {
        return;
    }
    for seed in 1..=3 {
        let mut server = RedisServer::start().expect("redis-server");
        let engine = Engine::new()
            .with_rdb_file(server.dir(), "dump.rdb")
            .expect("no file yet");
        let mut writer = Side::Engine(engine.connection());
        build(&mut writer, &dataset(seed));
        assert_eq!(writer.line("SAVE"), Value::Okay);
        server.restart().expect("restart on the engine's file");
        let mut loader = Side::Server(server.client().get_connection().expect("connect"));
        loader.line("CONFIG SET stream-node-max-entries 10");
        let diffs = differences(&mut writer, &mut loader, "engine", "redis-server");
        assert!(diffs.is_empty(), "seed {seed}:\n{}", diffs.join("\n"));
    }
}

#[test]
fn rdb_files_written_by_redis_server_load_in_the_engine() {
    if !redis_server_available("rdb_files_written_by_redis_server_load_in_the_engine") {
        return;
    }
    for seed in 4..=6 {
        let server = RedisServer::start().expect("redis-server");
        let mut writer = Side::Server(server.client().get_connection().expect("connect"));
        build(&mut writer, &dataset(seed));
        assert_eq!(writer.line("SAVE"), Value::Okay);
        let engine = Engine::new()
            .with_rdb_file(server.dir(), "dump.rdb")
            .expect("the server's file loads");
        let mut loader = Side::Engine(engine.connection());
        loader.line("CONFIG SET stream-node-max-entries 10");
        let diffs = differences(&mut writer, &mut loader, "redis-server", "engine");
        assert!(diffs.is_empty(), "seed {seed}:\n{}", diffs.join("\n"));
    }
}
