//! The AOF in process: what the write path records, a restart on the
//! files, rewrites under writers, and damaged files: never a panic, never
//! a partial load. (Files exchanged with a real redis-server:
//! `tests/engine/aof.rs`.)

use std::path::{Path, PathBuf};

use redis::Value;

use super::AofError;
use crate::command::test_util::{bulk, int, run};
use crate::{Connection, Engine};

/// A directory of this test's own, removed when dropped.
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("redmodel-aof-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

fn digest(c: &mut Connection) -> Value {
    run(c, "DEBUG DIGEST")
}

/// The AOF directory's files, by name.
fn aof_file(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join("appendonlydir").join(name)).unwrap_or_default()
}

fn manifest(dir: &Path) -> String {
    String::from_utf8_lossy(&aof_file(dir, "appendonly.aof.manifest")).into_owned()
}

/// RESP of one command line, as the file holds it.
fn resp(line: &str) -> String {
    let parts: Vec<&str> = line.split(' ').collect();
    let mut out = format!("*{}\r\n", parts.len());
    for p in parts {
        out.push_str(&format!("${}\r\n{p}\r\n", p.len()));
    }
    out
}

/// Commands whose effects depend on the time, on chance, or come from
/// scripts and transactions, in two databases.
const WRITES: &[&str] = &[
    "SET plain v",
    "SET ex v EX 1000",
    "SETEX setex 2000 v",
    "SET n 10",
    "INCRBYFLOAT n 1.5",
    "EXPIRE n 3000",
    "HSET h f 1",
    "HINCRBYFLOAT h f 0.25",
    "SADD s a b c d e",
    "SPOP s",
    "SPOP s 2",
    "RPUSH l a b c",
    "BLPOP l 1",
    "LMPOP 1 l RIGHT COUNT 1",
    "ZADD z 1 a 2 b 3 c",
    "ZMPOP 1 z MIN COUNT 2",
    "XADD x * f v",
    "XADD x MAXLEN ~ 1 * f w",
    "XGROUP CREATE x g 0",
    "XREADGROUP GROUP g alice STREAMS x >",
    "MULTI",
    "INCR counter",
    "SELECT 5",
    "SET in5 v",
    "EXEC",
    "EVAL redis.call('set','fromlua',ARGV[1]);redis.call('incr','counter') 0 1",
    "FUNCTION LOAD #!lua\x20name=lib\nredis.register_function('f',function()return\x201\x20end)",
    "GETEX plain PX 50000",
    "GETDEL ex",
];

fn run_all(c: &mut Connection, lines: &[&str]) {
    for line in lines {
        let args: Vec<&[u8]> = if line.starts_with("FUNCTION LOAD ") || line.starts_with("EVAL ") {
            let (head, rest) = line.split_at(if line.starts_with("EVAL ") { 5 } else { 14 });
            let mut args: Vec<&[u8]> = head.split_whitespace().map(str::as_bytes).collect();
            match rest.rsplit_once(" 0 ") {
                Some((script, arg)) if head == "EVAL " => {
                    args.extend([script.as_bytes(), b"0".as_slice(), arg.as_bytes()]);
                }
                _ => args.push(rest.as_bytes()),
            }
            args
        } else {
            line.split(' ').map(str::as_bytes).collect()
        };
        let reply = c.execute(&args);
        assert!(!matches!(reply, Value::ServerError(_)), "{line}: {reply:?}");
    }
}

#[test]
fn every_change_survives_a_restart_on_the_files() {
    let dir = temp_dir("restart");
    let engine = Engine::new().with_aof(&*dir).expect("no files yet");
    let mut c = engine.connection();
    run_all(&mut c, WRITES);
    run(&mut c, "SELECT 0");
    let before = digest(&mut c);
    let ttl = run(&mut c, "PTTL setex");
    drop(c);
    drop(engine);
    let engine = Engine::new().with_aof(&*dir).expect("the files load");
    let mut c = engine.connection();
    assert_eq!(digest(&mut c), before);
    let Value::Int(reloaded) = run(&mut c, "PTTL setex") else {
        panic!("no TTL")
    };
    let Value::Int(ttl) = ttl else {
        panic!("no TTL")
    };
    assert!((ttl - reloaded).abs() < 1000, "{ttl} then {reloaded}");
    assert_eq!(run(&mut c, "FCALL f 0"), int(1));
    run(&mut c, "SELECT 5");
    assert_eq!(run(&mut c, "GET fromlua"), bulk("1"));
}

#[test]
fn the_incremental_file_holds_the_commands_as_redis_propagates_them() {
    let dir = temp_dir("propagate");
    let clock = crate::ManualClock::new(1_000_000);
    let engine = Engine::with_clock(clock.clone())
        .with_aof(&*dir)
        .expect("no files yet");
    let mut c = engine.connection();
    for line in [
        "SET a 1 EX 100",
        "GET nothing",
        "EXPIRE a 50",
        "MULTI",
        "INCR b",
        "INCR b",
        "EXEC",
        "MULTI",
        "INCR c",
        "EXEC",
        "SELECT 2",
        "SET d 1 PX 10",
    ] {
        run(&mut c, line);
    }
    clock.advance(std::time::Duration::from_millis(20));
    run(&mut c, "GET d");
    let text = String::from_utf8_lossy(&aof_file(&dir, "appendonly.aof.1.incr.aof")).into_owned();
    let expected: String = [
        "SELECT 0",
        "SET a 1 PXAT 1100000",
        "PEXPIREAT a 1050000",
        "MULTI",
        "INCR b",
        "INCR b",
        "EXEC",
        "INCR c",
        "SELECT 2",
        "SET d 1 PXAT 1000010",
        "DEL d",
    ]
    .iter()
    .map(|l| resp(l))
    .collect();
    assert_eq!(text, expected);
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
}

#[test]
fn config_set_appendonly_writes_a_base_then_records_changes() {
    let dir = temp_dir("config-set");
    let engine = Engine::new()
        .with_rdb_file(&*dir, "dump.rdb")
        .expect("no file");
    let mut c = engine.connection();
    run(&mut c, "SET before 1");
    assert_eq!(run(&mut c, "CONFIG SET appendonly yes"), Value::Okay);
    wait_for_rewrite(&mut c);
    run(&mut c, "SET after 2");
    assert_eq!(info(&mut c, "aof_enabled"), "1");
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    run(&mut c, "FLUSHALL");
    run(&mut c, "SET gone 1");
    assert_eq!(run(&mut c, "DEBUG LOADAOF"), Value::Okay);
    assert_eq!(run(&mut c, "DBSIZE"), int(1));
    assert_eq!(run(&mut c, "CONFIG SET appendonly no"), Value::Okay);
    assert_eq!(info(&mut c, "aof_enabled"), "0");
}

fn info(c: &mut Connection, field: &str) -> String {
    let Value::BulkString(text) = run(c, "INFO persistence") else {
        panic!("INFO")
    };
    let text = String::from_utf8_lossy(&text).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_default()
}

fn wait_for_rewrite(c: &mut Connection) {
    for _ in 0..2000 {
        if info(c, "aof_rewrite_in_progress") == "0" && info(c, "aof_rewrite_scheduled") == "0" {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("the rewrite never ended");
}

#[test]
fn a_rewrite_without_the_preamble_loads_back_the_same_dataset() {
    let dir = temp_dir("commands-base");
    let engine = Engine::new().with_aof(&*dir).expect("no files yet");
    let mut c = engine.connection();
    run_all(&mut c, WRITES);
    for i in 0..200 {
        run(&mut c, &format!("RPUSH big {i}"));
        run(&mut c, &format!("ZADD bigz {i}.5 m{i}"));
        run(&mut c, &format!("HSET bigh f{i} {i}"));
        run(&mut c, &format!("SADD bigs {i}"));
    }
    run(&mut c, "SELECT 0");
    let before = digest(&mut c);
    run(&mut c, "CONFIG SET aof-use-rdb-preamble no");
    assert_eq!(
        run(&mut c, "BGREWRITEAOF"),
        Value::SimpleString("Background append only file rewriting started".into())
    );
    wait_for_rewrite(&mut c);
    assert_eq!(info(&mut c, "aof_last_bgrewrite_status"), "ok");
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.2.base.aof seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
    );
    assert!(!dir.join("appendonlydir/appendonly.aof.1.incr.aof").exists());
    assert_eq!(run(&mut c, "DEBUG LOADAOF"), Value::Okay);
    assert_eq!(digest(&mut c), before);
}

#[test]
fn a_rewrite_under_concurrent_writers_loses_nothing() {
    let dir = temp_dir("concurrent");
    let engine = Engine::new().with_aof(&*dir).expect("no files yet");
    run(
        &mut engine.connection(),
        "CONFIG SET rdb-key-save-delay 100",
    );
    for i in 0..300 {
        run(&mut engine.connection(), &format!("SET seed{i} {i}"));
    }
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut c = engine.connection();
                for i in 0..600 {
                    run(&mut c, &format!("INCR w{w}"));
                    run(&mut c, &format!("RPUSH l{w} {i}"));
                }
            })
        })
        .collect();
    let mut c = engine.connection();
    let mut rewrites = 0;
    while writers.iter().any(|w| !w.is_finished()) {
        if matches!(run(&mut c, "BGREWRITEAOF"), Value::SimpleString(_)) {
            rewrites += 1;
        }
        wait_for_rewrite(&mut c);
    }
    for w in writers {
        w.join().expect("writer");
    }
    assert!(rewrites > 0);
    let before = digest(&mut c);
    drop(c);
    drop(engine);
    let engine = Engine::new().with_aof(&*dir).expect("the files load");
    let mut c = engine.connection();
    for w in 0..3 {
        assert_eq!(run(&mut c, &format!("GET w{w}")), bulk("600"));
        assert_eq!(run(&mut c, &format!("LLEN l{w}")), int(600));
    }
    assert_eq!(digest(&mut c), before);
}

/// Files of a few commands: a base, and an incremental file.
fn written(name: &str) -> (TempDir, Value) {
    let dir = temp_dir(name);
    let engine = Engine::new().with_aof(&*dir).expect("no files yet");
    let mut c = engine.connection();
    run_all(&mut c, &WRITES[..12]);
    let digest = digest(&mut c);
    (dir, digest)
}

fn incr_path(dir: &Path) -> PathBuf {
    dir.join("appendonlydir/appendonly.aof.1.incr.aof")
}

#[test]
fn a_command_cut_short_at_the_end_is_dropped_and_the_file_truncated() {
    let (dir, _) = written("truncated");
    let full = std::fs::read(incr_path(&dir)).expect("incr file");
    // Every cut: the commands before it load, the file is truncated to
    // them, and loading again gives the same.
    let mut loaded_counts = Vec::new();
    for cut in (0..full.len()).step_by(7) {
        std::fs::write(incr_path(&dir), &full[..cut]).expect("write");
        let engine = Engine::new()
            .with_aof(&*dir)
            .expect("a cut last file loads");
        let kept = std::fs::read(incr_path(&dir)).expect("incr file");
        assert!(full.starts_with(&kept) && kept.len() <= cut, "cut at {cut}");
        loaded_counts.push(engine.dbsize(0));
    }
    assert!(loaded_counts.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn a_cut_file_is_an_error_with_aof_load_truncated_off_or_before_the_last() {
    let (dir, _) = written("truncated-refused");
    let full = std::fs::read(incr_path(&dir)).expect("incr file");
    std::fs::write(incr_path(&dir), &full[..full.len() - 3]).expect("write");
    let engine = Engine::new();
    engine
        .connection()
        .execute(&[b"CONFIG", b"SET", b"aof-load-truncated", b"no"]);
    assert!(matches!(
        engine.with_aof(&*dir),
        Err(AofError::Truncated { .. })
    ));
    // A cut base is an error whatever the setting.
    std::fs::write(incr_path(&dir), &full).expect("write");
    let base = dir.join("appendonlydir/appendonly.aof.1.base.rdb");
    let bytes = std::fs::read(&base).expect("base");
    std::fs::write(&base, &bytes[..bytes.len() - 4]).expect("write");
    assert!(matches!(
        Engine::new().with_aof(&*dir),
        Err(AofError::Rdb { .. })
    ));
}

#[test]
fn a_corrupt_file_or_manifest_is_an_error_and_loads_nothing() {
    let (dir, digest_before) = written("corrupt");
    let full = std::fs::read(incr_path(&dir)).expect("incr file");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            [&full[..], b"GARBAGE\r\n*1\r\n$4\r\nPING\r\n"].concat(),
            "format",
        ),
        ([&full[..], b"*1\r\n$7\r\nNOSUCH!\r\n"].concat(), "unknown"),
        ([b"*x\r\n".as_slice(), &full[..]].concat(), "format"),
    ];
    for (bytes, what) in cases {
        std::fs::write(incr_path(&dir), &bytes).expect("write");
        let engine = Engine::new();
        let mut c = engine.connection();
        run(&mut c, "SET untouched 1");
        let err = engine.clone().with_aof(&*dir).expect_err(what);
        match what {
            "format" => assert!(matches!(err, AofError::Format { .. }), "{err}"),
            _ => assert!(matches!(err, AofError::UnknownCommand { .. }), "{err}"),
        }
        assert_eq!(engine.dbsize(0), 1, "nothing of the files loaded ({what})");
        assert_eq!(
            run(&mut c, "CONFIG GET appendonly"),
            crate::command::test_util::bulks(&["appendonly", "no"]),
            "the AOF stays off ({what})"
        );
    }
    std::fs::write(incr_path(&dir), &full).expect("write");
    let manifest_path = dir.join("appendonlydir/appendonly.aof.manifest");
    let good = std::fs::read(&manifest_path).expect("manifest");
    std::fs::write(&manifest_path, b"file x seq one type b\n").expect("write");
    assert!(matches!(
        Engine::new().with_aof(&*dir),
        Err(AofError::Manifest(_))
    ));
    std::fs::write(&manifest_path, good).expect("write");
    let engine = Engine::new().with_aof(&*dir).expect("intact again");
    assert_eq!(digest(&mut engine.connection()), digest_before);
}

#[test]
fn a_blocked_pop_served_later_is_recorded() {
    let dir = temp_dir("blocked");
    let engine = Engine::new().with_aof(&*dir).expect("no files yet");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut waiter = engine.connection();
    let mut pusher = engine.connection();
    let mut blpop = redis::cmd("BLPOP");
    blpop.arg("q").arg(5);
    let (popped, pushed) = runtime.block_on(async {
        tokio::join!(blpop.query_async::<Value>(&mut waiter), async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            run(&mut pusher, "RPUSH q a b")
        })
    });
    assert_eq!(pushed, int(2));
    assert_eq!(
        popped.expect("served"),
        crate::command::test_util::bulks(&["q", "a"])
    );
    drop((waiter, pusher));
    drop(engine);
    let engine = Engine::new().with_aof(&*dir).expect("the files load");
    let mut c = engine.connection();
    assert_eq!(
        run(&mut c, "LRANGE q 0 -1"),
        crate::command::test_util::bulks(&["b"])
    );
}

#[test]
fn field_ttls_and_a_pop_from_a_key_named_left_survive_a_restart() {
    let dir = temp_dir("fields");
    let open = || {
        Engine::new()
            .with_version(crate::RedisVersion::V7_4)
            .with_aof(&*dir)
            .expect("the files load")
    };
    let engine = open();
    let mut c = engine.connection();
    run_all(
        &mut c,
        &[
            "HSET h a 1 b 2",
            "HEXPIRE h 1000 FIELDS 1 a",
            "RPUSH left x y z",
            "LMPOP 1 left RIGHT COUNT 1",
        ],
    );
    drop((c, engine));
    let mut c = open().connection();
    let Value::Array(ttl) = run(&mut c, "HTTL h FIELDS 1 a") else {
        panic!("HTTL")
    };
    assert!(
        matches!(ttl[..], [Value::Int(t)] if (990..=1000).contains(&t)),
        "{ttl:?}"
    );
    assert_eq!(
        run(&mut c, "LRANGE left 0 -1"),
        crate::command::test_util::bulks(&["x", "y"])
    );
}

/// A consumer group's reads and claims change the stream without
/// signalling its key, as in Redis; the file still holds the group as it
/// is: its last ID, its consumers (one made by a read with NOACK, one by
/// a blocked read served later) and who holds which pending entry, with
/// its delivery count.
#[tokio::test]
async fn consumer_group_reads_and_claims_load_back_as_they_were() {
    for version in [crate::RedisVersion::V7_0, crate::RedisVersion::V7_4] {
        let dir = temp_dir(&format!("groups-{version:?}"));
        let engine = Engine::new()
            .with_version(version)
            .with_aof(&*dir)
            .expect("no files yet");
        let mut c = engine.connection();
        run(&mut c, "XGROUP CREATE s g $ MKSTREAM");
        run(&mut c, "XADD s 1-0 f v");
        run(&mut c, "XADD s 2-0 f v");
        run(&mut c, "XREADGROUP GROUP g alice COUNT 1 STREAMS s >");
        run(&mut c, "XREADGROUP GROUP g bob NOACK COUNT 1 STREAMS s >");
        run(&mut c, "XCLAIM s g carol 0 1-0");
        run(&mut c, "XAUTOCLAIM s g dave 0 0 COUNT 1");
        let before = run(&mut c, "XINFO STREAM s FULL");
        assert_eq!(run(&mut c, "DEBUG LOADAOF"), Value::Okay);
        assert_eq!(run(&mut c, "XINFO STREAM s FULL"), before, "{version:?}");
        let mut blocked = engine.connection();
        let waiter = tokio::spawn(async move {
            let mut read = redis::cmd("XREADGROUP");
            read.arg(
                "GROUP g erin BLOCK 0 STREAMS s >"
                    .split(' ')
                    .collect::<Vec<_>>(),
            );
            redis::aio::ConnectionLike::req_packed_command(&mut blocked, &read).await
        });
        crate::command::blocking::until_blocked(&engine, 1).await;
        run(&mut c, "XADD s 3-0 f v");
        waiter.await.expect("the waiter").expect("served");
        let before = run(&mut c, "XINFO STREAM s FULL");
        assert_eq!(run(&mut c, "DEBUG LOADAOF"), Value::Okay);
        assert_eq!(run(&mut c, "XINFO STREAM s FULL"), before, "{version:?}");
    }
}
