//! Append-only files between the engine and a private redis-server 7.0,
//! both ways: the random datasets of `rdb` built on one side with AOF on,
//! then commands whose record depends on the time, on chance, on a
//! script or a transaction (relative TTLs, INCRBYFLOAT, SPOP, the pops of
//! LMPOP and ZMPOP, XADD's `*` and approximate trimming, XREADGROUP,
//! XCLAIM, MULTI/EXEC across databases, EVAL, FUNCTION LOAD), with a
//! rewrite between them (RDB preamble or commands); the other side then
//! loads the files (the server restarted on the engine's directory, the
//! engine started on a copy of the server's with `Engine::with_aof`),
//! and the two datasets must have the same DEBUG DIGEST (Redis's own
//! digest, which the engine computes too); `rdb`'s key-by-key comparison
//! says where they differ if they do.

use redis::Value;
use redmodel::memory::Engine;
use redmodel_suite::{redis_server_available, RedisServer};

use super::rdb::{build, cmd, dataset, differences, Side};

/// Commands whose record in the AOF is not the command as sent.
fn rewritten_commands() -> Vec<Vec<String>> {
    let lines: &[&[&str]] = &[
        &["SET", "aof:ex", "v", "EX", "1000"],
        &["SETEX", "aof:setex", "2000", "v"],
        &["SET", "aof:n", "10"],
        &["INCRBYFLOAT", "aof:n", "1.5"],
        &["EXPIRE", "aof:n", "3000"],
        &["HSET", "aof:h", "f", "1"],
        &["HINCRBYFLOAT", "aof:h", "f", "0.25"],
        &["SADD", "aof:s", "a", "b", "c", "d", "e", "f"],
        &["SPOP", "aof:s"],
        &["SPOP", "aof:s", "2"],
        &["RPUSH", "aof:l", "a", "b", "c", "d"],
        &["BLPOP", "aof:l", "1"],
        &["LMPOP", "1", "aof:l", "RIGHT", "COUNT", "2"],
        &["ZADD", "aof:z", "1", "a", "2", "b", "3", "c"],
        &["ZMPOP", "1", "aof:z", "MIN", "COUNT", "2"],
        &["XADD", "aof:x", "*", "f", "v"],
        &["XADD", "aof:x", "*", "f", "w"],
        &["XADD", "aof:x", "MAXLEN", "~", "1", "*", "f", "u"],
        &["XGROUP", "CREATE", "aof:x", "g", "0"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "aof:x",
            ">",
        ],
        &["MULTI"],
        &["INCR", "aof:counter"],
        &["SELECT", "7"],
        &["SET", "aof:in7", "v", "PX", "900000"],
        &["EXEC"],
        &["SELECT", "0"],
        &[
            "EVAL",
            "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])",
            "2",
            "aof:lua",
            "aof:counter",
            "x",
        ],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=aoflib\nredis.register_function('aoff', function() return 1 end)",
        ],
        &["GETEX", "aof:ex", "PX", "500000"],
        &["GETDEL", "aof:setex"],
    ];
    lines.iter().map(|l| cmd(l)).collect()
}

/// XCLAIM of what alice read, to bob: its delivery time is the claim's.
fn claims() -> Vec<Vec<String>> {
    vec![cmd(&[
        "XAUTOCLAIM",
        "aof:x",
        "g",
        "bob",
        "0",
        "0-0",
        "COUNT",
        "1",
    ])]
}

/// The dataset's DEBUG DIGEST, which is not the empty dataset's.
fn digest(side: &mut Side) -> Value {
    let digest = side.line("DEBUG DIGEST");
    assert_ne!(
        digest,
        Value::SimpleString("0".repeat(40)),
        "an empty dataset"
    );
    digest
}

fn server_with_aof() -> RedisServer {
    RedisServer::builder()
        .appendonly(true)
        .config("enable-debug-command yes")
        .config("appendfsync always")
        .start()
        .expect("redis-server")
}

/// Builds the dataset and the rewritten commands on `writer`, with a
/// BGREWRITEAOF between them (`preamble`: `aof-use-rdb-preamble`).
fn write(writer: &mut Side, seed: u64, preamble: bool) {
    build(writer, &dataset(seed));
    let setting = if preamble { "yes" } else { "no" };
    writer.line(&format!("CONFIG SET aof-use-rdb-preamble {setting}"));
    assert!(matches!(
        writer.line("BGREWRITEAOF"),
        Value::SimpleString(_)
    ));
    wait_for_rewrite(writer);
    build(writer, &rewritten_commands());
    build(writer, &claims());
}

fn wait_for_rewrite(side: &mut Side) {
    for _ in 0..2000 {
        let Value::BulkString(info) = side.line("INFO persistence") else {
            panic!("INFO persistence")
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the rewrite never ended");
}

#[test]
fn aof_files_written_by_the_engine_load_in_redis_server() {
    if !redis_server_available("aof_files_written_by_the_engine_load_in_redis_server") {
        return;
    }
    for (seed, preamble) in [(11, true), (12, false)] {
        let mut server = server_with_aof();
        // The server's own files go: the engine writes the directory's.
        server.kill();
        std::fs::remove_dir_all(server.dir().join("appendonlydir")).expect("remove");
        let engine = Engine::new().with_aof(server.dir()).expect("no files yet");
        let mut writer = Side::Engine(engine.connection());
        write(&mut writer, seed, preamble);
        let written = digest(&mut writer);
        server.restart().expect("restart on the engine's files");
        let mut loader = Side::Server(server.client().get_connection().expect("connect"));
        let loaded = digest(&mut loader);
        if written != loaded {
            let diffs = differences(&mut writer, &mut loader, "engine", "redis-server");
            panic!("seed {seed}: digests differ\n{}", diffs.join("\n"));
        }
        assert_eq!(loader.line("FCALL aoff 0"), Value::Int(1));
    }
}

#[test]
fn aof_files_written_by_redis_server_load_in_the_engine() {
    if !redis_server_available("aof_files_written_by_redis_server_load_in_the_engine") {
        return;
    }
    for (seed, preamble) in [(13, true), (14, false)] {
        let server = server_with_aof();
        let mut writer = Side::Server(server.client().get_connection().expect("connect"));
        write(&mut writer, seed, preamble);
        let written = digest(&mut writer);
        // A copy of the server's files, which it keeps writing, in its
        // directory (removed with the server, if this fails too).
        let copy = server.dir().join("engine-copy");
        std::fs::create_dir_all(copy.join("appendonlydir")).expect("copy dir");
        for file in std::fs::read_dir(server.dir().join("appendonlydir")).expect("aof dir") {
            let file = file.expect("entry");
            std::fs::copy(
                file.path(),
                copy.join("appendonlydir").join(file.file_name()),
            )
            .expect("copy");
        }
        let engine = Engine::new()
            .with_aof(&copy)
            .expect("the server's files load");
        let mut loader = Side::Engine(engine.connection());
        let loaded = digest(&mut loader);
        let diffs = (written != loaded)
            .then(|| differences(&mut writer, &mut loader, "redis-server", "engine"));
        drop(engine);
        if let Some(diffs) = diffs {
            panic!("seed {seed}: digests differ\n{}", diffs.join("\n"));
        }
    }
}
