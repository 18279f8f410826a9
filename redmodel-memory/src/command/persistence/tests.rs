//! SAVE, BGSAVE, DEBUG RELOAD and loading at start, in process; and
//! damaged files: never a panic, never a partial load. (Files exchanged
//! with a real redis-server: `tests/engine/rdb.rs`.)

use std::path::PathBuf;
use std::sync::LazyLock;

use proptest::prelude::*;
use redis::Value;

use super::Reload;
use crate::command::test_util::{bulk, changes, int, persistence_info, run};
use crate::{Connection, Engine, RdbError};

/// A directory of this test's own, removed when dropped.
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("redmodel-rdb-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

/// Commands that make a key of every type and encoding, TTLs, a
/// stream's consumer groups, keys in two databases and a library.
const DATASET: &[&str] = &[
    "SET s hello",
    "SET n 12345",
    "SET long aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "SET ttl v PX 100000",
    "RPUSH l a b 3 -4",
    "SADD si 3 1 2",
    "SADD ss a b c",
    "ZADD zl 1 a 2.5 b -inf c",
    "ZADD zs 1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 2 b",
    "HSET hl f v n 1",
    "HSET hs f aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "EXPIRE hs 5000",
    "XADD x 1-1 f v",
    "XADD x 2-1 f w g 1",
    "XGROUP CREATE x g 0",
    "XREADGROUP GROUP g alice COUNT 1 STREAMS x >",
    "SELECT 3",
    "SET other db3",
    "SELECT 0",
];

const LIBRARY: &str = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";

/// Each key's DUMP payload and PTTL, in databases 0 and 3.
fn contents(c: &mut Connection) -> Vec<(String, Value, Value)> {
    let mut out = Vec::new();
    for db in ["0", "3"] {
        run(c, &format!("SELECT {db}"));
        let Value::Array(keys) = run(c, "KEYS *") else {
            panic!("KEYS");
        };
        for key in keys {
            let Value::BulkString(key) = key else {
                panic!("key");
            };
            let key = String::from_utf8_lossy(&key).into_owned();
            let dump = run(c, &format!("DUMP {key}"));
            // Within a second: the TTL read before and after.
            let ttl = match run(c, &format!("PTTL {key}")) {
                Value::Int(t) if t > 0 => int((t + 500) / 1000),
                other => other,
            };
            out.push((format!("{db}/{key}"), dump, ttl));
        }
    }
    run(c, "SELECT 0");
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn filled(dir: &std::path::Path) -> (Engine, Connection) {
    let engine = Engine::new()
        .with_rdb_file(dir, "dump.rdb")
        .expect("no file yet");
    let mut c = engine.connection();
    for line in DATASET {
        run(&mut c, line);
    }
    c.execute(&[b"FUNCTION", b"LOAD", LIBRARY.as_bytes()]);
    (engine, c)
}

#[test]
fn debug_reload_gives_back_every_type_ttl_and_function() {
    let dir = temp_dir("reload");
    let (_engine, mut c) = filled(&dir);
    let before = contents(&mut c);
    assert_eq!(run(&mut c, "DEBUG RELOAD"), Value::Okay);
    assert_eq!(contents(&mut c), before);
    assert_eq!(run(&mut c, "FCALL f 0"), int(1));
    assert_eq!(run(&mut c, "DEBUG RELOAD NOSAVE"), Value::Okay);
    assert_eq!(contents(&mut c), before);
}

/// INFO's counts of the last load, as Redis's "Test RDB load info" reads
/// them: the keys loaded, and apart the keys whose time passed, dropped.
#[test]
fn info_counts_the_keys_the_last_load_read_and_dropped() {
    let dir = temp_dir("load-info");
    let clock = crate::ManualClock::new(1_700_000_000_000);
    let engine = Engine::with_clock(clock.clone())
        .with_rdb_file(&*dir, "dump.rdb")
        .expect("no file yet");
    let mut c = engine.connection();
    let counts = |c: &mut Connection| {
        (
            persistence_info(c, "rdb_last_load_keys_loaded"),
            persistence_info(c, "rdb_last_load_keys_expired"),
        )
    };
    assert_eq!(counts(&mut c), ("0".into(), "0".into()));
    run(&mut c, "DEBUG SET-ACTIVE-EXPIRE 0");
    for j in 0..5 {
        run(&mut c, &format!("SET kept{j} v"));
    }
    for j in 0..3 {
        run(&mut c, &format!("SELECT {j}"));
        run(&mut c, &format!("SET short{j} v PX 10"));
    }
    assert_eq!(run(&mut c, "SAVE"), Value::Okay);
    assert_eq!(run(&mut c, "DEBUG RELOAD NOSAVE"), Value::Okay);
    assert_eq!(counts(&mut c), ("8".into(), "0".into()));
    clock.advance(std::time::Duration::from_millis(20));
    assert_eq!(run(&mut c, "DEBUG RELOAD NOSAVE"), Value::Okay);
    assert_eq!(counts(&mut c), ("5".into(), "3".into()));
}

#[test]
fn debug_reload_noflush_joins_the_file_and_merge_lets_it_win() {
    let dir = temp_dir("merge");
    let (_engine, mut c) = filled(&dir);
    assert_eq!(run(&mut c, "SAVE"), Value::Okay);
    run(&mut c, "SET s changed");
    run(&mut c, "SET extra 1");
    assert_eq!(
        run(&mut c, "DEBUG RELOAD NOSAVE NOFLUSH"),
        crate::command::test_util::err("ERR Error trying to load the RDB dump, check server logs.")
    );
    assert_eq!(run(&mut c, "GET s"), bulk("changed"));
    assert_eq!(
        run(&mut c, "DEBUG RELOAD NOSAVE NOFLUSH MERGE"),
        Value::Okay
    );
    assert_eq!(run(&mut c, "GET s"), bulk("hello"));
    assert_eq!(run(&mut c, "GET extra"), bulk("1"));
    assert_eq!(
        run(&mut c, "DEBUG RELOAD FAST"),
        crate::command::test_util::err(
            "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."
        )
    );
}

#[test]
fn a_new_engine_loads_what_save_wrote() {
    let dir = temp_dir("start");
    let (_engine, mut c) = filled(&dir);
    let before = contents(&mut c);
    assert_eq!(run(&mut c, "SAVE"), Value::Okay);
    let loaded = Engine::new()
        .with_rdb_file(&*dir, "dump.rdb")
        .expect("load");
    let mut c2 = loaded.connection();
    assert_eq!(contents(&mut c2), before);
    assert_eq!(run(&mut c2, "FCALL f 0"), int(1));
    assert_eq!(
        run(&mut c2, "CONFIG GET dbfilename"),
        Value::Array(vec![bulk("dbfilename"), bulk("dump.rdb")])
    );
}

/// How many changes each command counts (INFO's
/// `rdb_changes_since_last_save`, which the save points read): one per
/// element pushed, added, removed, popped or stored for most commands on
/// aggregates, one for most others, whatever keys they touch. The figures
/// are redis-server 7.0.15's (7.4.1 gives the same): each row's setup
/// (commands apart by `;`), then the command and its count.
#[test]
fn changes_are_counted_as_redis_counts_them() {
    const CASES: &[(&str, &str, u64)] = &[
        ("", "SET k v", 1),
        ("SET k v", "SET k v", 1),
        ("", "MSET a 1 b 2 c 3", 3),
        ("SET k 1", "INCR k", 1),
        ("SET k 1", "INCRBY k 5", 1),
        ("", "RPUSH l a b c", 3),
        ("", "LPUSH l a b c", 3),
        ("RPUSH l a b c", "LPOP l 2", 2),
        ("RPUSH l a b c", "RPOP l", 1),
        ("RPUSH l a b c a", "LREM l 0 a", 2),
        ("RPUSH l a b c", "LTRIM l 1 1", 2),
        ("RPUSH l a b c", "LSET l 0 x", 1),
        ("RPUSH l a b c", "LINSERT l BEFORE b x", 1),
        ("", "SADD s a b c", 3),
        ("SADD s a b", "SADD s a b c", 1),
        ("SADD s a b c", "SREM s a b x", 2),
        ("SADD s a b c", "SPOP s 2", 2),
        ("", "HSET h a 1 b 2 c 3", 3),
        ("HSET h a 1", "HSET h a 2 b 2", 2),
        ("HSET h a 1 b 2", "HDEL h a b x", 2),
        ("HSET h a 1", "HINCRBY h a 3", 1),
        ("", "ZADD z 1 a 2 b 3 c", 3),
        ("ZADD z 1 a", "ZADD z 2 a 3 b", 2),
        ("ZADD z 1 a 2 b 3 c", "ZREM z a b x", 2),
        ("ZADD z 1 a 2 b 3 c", "ZPOPMIN z 2", 2),
        ("ZADD z 1 a 2 b 3 c", "ZREMRANGEBYSCORE z 1 2", 2),
        ("ZADD z 1 a", "ZINCRBY z 2 a", 1),
        ("SET a 1; SET b 2", "DEL a b c", 2),
        ("SET a 1; SET b 2", "UNLINK a b", 2),
        ("SET a 1", "EXPIRE a 100", 1),
        ("SET a 1", "PERSIST a", 0),
        ("SET a 1", "RENAME a b", 1),
        ("SADD s1 a b; SADD s2 b c", "SUNIONSTORE d s1 s2", 1),
        ("SADD s1 a b; SADD s2 b c", "SINTERSTORE d s1 s2", 1),
        ("SET a 1", "APPEND a xyz", 1),
        ("SET a 1", "SETRANGE a 3 xyz", 1),
        ("", "SETBIT b 7 1", 1),
        ("", "PFADD p a b c", 4),
        ("SET a 1", "GETDEL a", 1),
        ("", "XADD x * f v", 1),
        ("XADD x 1-1 f v; XADD x 2-1 f v", "XDEL x 1-1 2-1", 2),
        ("XADD x 1-1 f v; XADD x 2-1 f v", "XTRIM x MAXLEN 0", 2),
        ("SET a 1", "COPY a b", 1),
        ("RPUSH l a b c", "LMOVE l m LEFT RIGHT", 1),
        ("HSET h a 1 b 2", "HSETNX h c 3", 1),
        ("SET a 1", "GETSET a 2", 1),
        ("", "GEOADD g 13.36 38.11 p1 15.08 37.50 p2", 2),
        ("SADD s a b c", "SMOVE s t a", 2),
        ("ZADD z 1 a 2 b", "ZRANGESTORE d z 0 -1", 1),
        ("HSET h a 1", "HINCRBYFLOAT h a 1.5", 1),
        ("SET a 1", "DECR a", 1),
        ("SET a 1", "SETEX a 10 v", 1),
        ("", "MSETNX a 1 b 2", 2),
        ("RPUSH l 3 1 2", "SORT l STORE d", 3),
        ("SET a 1", "PEXPIRE a 0", 1),
        ("SADD s a", "SREM s a", 1),
        ("RPUSH l a", "LPOP l", 1),
        ("HSET h a 1 b 2 c 3", "HDEL h a", 1),
        ("SADD s1 a b; SADD s2 b c", "SDIFFSTORE d s1 s2", 1),
        ("ZADD a 1 x 2 y; ZADD b 3 y", "ZUNIONSTORE d 2 a b", 1),
        ("ZADD a 1 x 2 y; ZADD b 3 y", "ZINTERSTORE d 2 a b", 1),
        ("ZADD a 1 x 2 y; ZADD b 3 y", "ZDIFFSTORE d 2 a b", 1),
        ("SET a x; SET b y", "BITOP AND d a b", 1),
        ("SET a 1", "MOVE a 1", 1),
        ("SET a 1", "SETNX a 2", 0),
        ("", "SETNX a 2", 1),
        ("SET a 1", "GETEX a EX 100", 1),
        ("SET a 1", "INCRBYFLOAT a 1.5", 1),
        ("RPUSH l a", "LPUSHX l b c", 2),
        ("", "HMSET h a 1 b 2", 2),
        ("ZADD z 1 a", "ZADD z NX 2 a 3 b", 1),
        ("ZADD z 1 a", "ZADD z CH 2 a 3 b", 2),
        (
            "XADD x 1-1 f v; XADD x 2-1 f v",
            "XADD x MAXLEN 1 3-1 f v",
            1,
        ),
        ("XADD x 1-1 f v", "XGROUP CREATE x g 0", 1),
        (
            "XADD x 1-1 f v; XGROUP CREATE x g 0; XREADGROUP GROUP g c STREAMS x >",
            "XACK x g 1-1",
            1,
        ),
        ("RPUSH l a b c", "LMPOP 1 l LEFT COUNT 2", 2),
        ("ZADD z 1 a 2 b 3 c", "ZMPOP 1 z MIN COUNT 2", 2),
        ("SADD s a b c", "SPOP s 5", 3),
        ("HSET h a 1", "HSET h a 1", 1),
        ("SADD s a", "SADD s a", 0),
        ("RPUSH l a b c", "LTRIM l 0 -1", 0),
        ("ZADD z 1 a 2 b", "ZREMRANGEBYRANK z 0 0", 1),
        ("ZADD z 1 a 2 b", "ZREMRANGEBYLEX z - +", 2),
        ("", "GEOADD g 13.36 38.11 p1", 1),
        (
            "GEOADD g 13.36 38.11 p1 15.08 37.50 p2",
            "GEOSEARCHSTORE d g FROMLONLAT 15 37 BYRADIUS 200 km",
            2,
        ),
        ("SET a 1", "PEXPIREAT a 1", 1),
        ("SET a hello", "SETRANGE a 0 j", 1),
        ("SET a 1", "DEL a", 1),
        ("", "DEL a", 0),
        ("RPUSH l a b c", "LINSERT l AFTER zz x", 0),
        ("RPUSH l a", "RPOPLPUSH l l", 1),
        ("SADD s a b", "SMOVE s s a", 0),
        ("HSET h a 1", "HINCRBY h b 2", 1),
        ("SET a 10", "DECRBY a 3", 1),
        ("", "MSETNX a 1 b 2 c 3", 3),
        ("SET a 1", "COPY a b REPLACE", 1),
        ("SET a x", "SETBIT a 1 0", 1),
        ("PFADD p a", "PFADD p a", 0),
        ("PFADD p a; PFADD q b", "PFMERGE d p q", 1),
        ("SET a 1; SET b 2", "MSET a 3 b 4", 2),
        ("RPUSH l a b c", "RPOP l 5", 3),
        ("ZADD z 1 a", "ZINCRBY z 1 b", 1),
        ("SADD s1 a; SADD s2 b", "SINTERSTORE d s1 s2", 0),
        (
            "XADD x 1-1 f v; XGROUP CREATE x g 0",
            "XGROUP SETID x g 0",
            1,
        ),
        (
            "XADD x 1-1 f v; XGROUP CREATE x g 0",
            "XGROUP DESTROY x g",
            1,
        ),
        (
            "XADD x 1-1 f v; XGROUP CREATE x g 0",
            "XGROUP CREATECONSUMER x g c",
            1,
        ),
        (
            "XADD x 1-1 f v; XGROUP CREATE x g 0; XGROUP CREATECONSUMER x g c",
            "XGROUP DELCONSUMER x g c",
            1,
        ),
        ("", "XGROUP CREATE x g $ MKSTREAM", 1),
        ("ZADD z 1 a", "ZADD z XX 2 b", 0),
        ("ZADD z 1 a", "ZADD z 1 a", 0),
        ("SET a 1", "SET a 2 XX", 1),
        ("SET a 1", "SET a 2 NX", 0),
        ("SET k v", "EXPIRE k 0", 1),
        ("SET k v", "RENAMENX k j", 1),
        ("SADD s a b c", "SPOP s", 1),
    ];
    let engine = Engine::new();
    let mut c = engine.connection();
    let mut wrong = Vec::new();
    for &(setup, command, expected) in CASES {
        run(&mut c, "FLUSHALL");
        for step in setup.split("; ").filter(|s| !s.is_empty()) {
            run(&mut c, step);
        }
        let before = changes(&mut c);
        run(&mut c, command);
        let counted = changes(&mut c) - before;
        if counted != expected {
            wrong.push(format!(
                "{command} (after {setup:?}): {counted}, Redis {expected}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Consumer-group reads count a change per consumer made and per entry
/// claimed; XREADGROUP one per stream served in 7.0, one per stream that
/// gave new entries in 7.4, where it also makes its consumer before
/// finding nothing new. The counts are redis-server 7.0.15's and 7.4.1's.
#[test]
fn consumer_group_reads_count_changes_as_each_version() {
    const STEPS: [&str; 9] = [
        "XREADGROUP GROUP g1 Alice COUNT 2 STREAMS x >",
        "XREADGROUP GROUP g1 Alice NOACK COUNT 2 STREAMS x >",
        "XREADGROUP GROUP g1 Alice COUNT 2 STREAMS x 0",
        "XREADGROUP GROUP g1 noconsumer COUNT 2 STREAMS x 0",
        "XCLAIM x g1 Bob 0 1-0 2-0",
        "XCLAIM x g1 Bob 0 1-0 2-0",
        "XAUTOCLAIM x g1 Carol 0 0 COUNT 1",
        "XAUTOCLAIM x g1 Carol 0 0 COUNT 5 JUSTID",
        "XREADGROUP GROUP g1 Dan COUNT 2 STREAMS x >",
    ];
    for (version, expected) in [
        (crate::RedisVersion::V7_0, [1, 1, 1, 2, 3, 2, 2, 2, 0]),
        (crate::RedisVersion::V7_4, [1, 1, 0, 1, 3, 2, 2, 2, 1]),
    ] {
        let engine = Engine::new().with_version(version);
        let mut c = engine.connection();
        for id in 1..=4 {
            run(&mut c, &format!("XADD x {id}-0 data v{id}"));
        }
        run(&mut c, "XGROUP CREATE x g1 0");
        run(&mut c, "XGROUP CREATECONSUMER x g1 Alice");
        let mut counted = Vec::new();
        for step in STEPS {
            let before = changes(&mut c);
            run(&mut c, step);
            counted.push(changes(&mut c) - before);
        }
        assert_eq!(counted, expected, "{version:?}");
    }
}

#[test]
fn bgsave_writes_the_file_and_info_follows_it() {
    let dir = temp_dir("bgsave");
    let (_engine, mut c) = filled(&dir);
    let info = persistence_info;
    assert_ne!(info(&mut c, "rdb_changes_since_last_save"), "0");
    assert_eq!(
        run(&mut c, "BGSAVE"),
        Value::SimpleString("Background saving started".into())
    );
    for _ in 0..500 {
        if info(&mut c, "rdb_bgsave_in_progress") == "0" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(info(&mut c, "rdb_bgsave_in_progress"), "0");
    assert_eq!(info(&mut c, "rdb_last_bgsave_status"), "ok");
    assert_eq!(info(&mut c, "rdb_changes_since_last_save"), "0");
    assert!(dir.join("dump.rdb").exists());
    assert_eq!(
        run(&mut c, "BGSAVE SCHEDULE x"),
        crate::command::test_util::err("ERR syntax error")
    );
}

#[test]
fn a_running_bgsave_serves_other_clients_refuses_saves_and_stops_at_flushall() {
    let dir = temp_dir("slow");
    let (engine, mut c) = filled(&dir);
    // 100 ms a key: the save would take seconds.
    run(&mut c, "CONFIG SET rdb-key-save-delay 100000");
    let in_progress = |c: &mut Connection| match run(c, "INFO persistence") {
        Value::BulkString(t) => String::from_utf8_lossy(&t).contains("rdb_bgsave_in_progress:1"),
        _ => panic!("INFO"),
    };
    assert_eq!(
        run(&mut c, "BGSAVE"),
        Value::SimpleString("Background saving started".into())
    );
    let mut other = engine.connection();
    let started = std::time::Instant::now();
    assert_eq!(run(&mut other, "SET during bgsave"), Value::Okay);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert!(in_progress(&mut c));
    let running = crate::command::test_util::err("ERR Background save already in progress");
    assert_eq!(run(&mut c, "SAVE"), running);
    assert_eq!(run(&mut c, "BGSAVE SCHEDULE"), running);
    run(&mut c, "FLUSHALL");
    for _ in 0..100 {
        if !in_progress(&mut c) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!in_progress(&mut c));
    // No file, and no temporary file left behind.
    assert_eq!(std::fs::read_dir(&*dir).expect("dir").count(), 0);
}

#[test]
fn flushall_saves_and_resets_the_changes_only_with_save_points() {
    let dir = temp_dir("flushall");
    let (_engine, mut c) = filled(&dir);
    run(&mut c, "FLUSHALL");
    assert_ne!(changes(&mut c), 0);
    assert!(!dir.join("dump.rdb").exists());
    assert_eq!(
        crate::command::test_util::run_args(&mut c, &["CONFIG", "SET", "save", "3600 1"]),
        Value::Okay
    );
    run(&mut c, "SET k v");
    run(&mut c, "FLUSHALL");
    assert_eq!(changes(&mut c), 0);
    assert!(dir.join("dump.rdb").exists());
}

#[test]
fn a_missing_or_bad_file_at_start() {
    let dir = temp_dir("bad");
    assert!(Engine::new().with_rdb_file(&*dir, "none.rdb").is_ok());
    std::fs::write(dir.join("junk.rdb"), b"NOTREDIS0010").expect("write");
    assert!(matches!(
        Engine::new().with_rdb_file(&*dir, "junk.rdb"),
        Err(RdbError::Signature)
    ));
    std::fs::write(dir.join("new.rdb"), b"REDIS0011\xff").expect("write");
    assert!(matches!(
        Engine::new().with_rdb_file(&*dir, "new.rdb"),
        Err(RdbError::Version(11))
    ));
    let good = &*VALID;
    std::fs::write(dir.join("cut.rdb"), &good[..good.len() - 20]).expect("write");
    assert!(Engine::new().with_rdb_file(&*dir, "cut.rdb").is_err());
    assert!(Engine::new().with_rdb_file(&*dir, "a/b.rdb").is_err());
}

/// A valid file of the whole dataset.
static VALID: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let dir = temp_dir("valid");
    let (_engine, mut c) = filled(&dir);
    assert_eq!(run(&mut c, "SAVE"), Value::Okay);
    std::fs::read(dir.join("dump.rdb")).expect("read")
});

/// The bytes with the CRC64 at their end made right again, so that a
/// mutation reaches the decoder.
fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 8 {
        let body = bytes.len() - 8;
        let crc = crate::rdb::crc64(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A damaged file loads whole or not at all: the engine's data is
    /// what it was when loading fails, and nothing panics.
    #[test]
    fn damaged_files_load_whole_or_not_at_all(
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        reseal in any::<bool>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = VALID.clone();
        for (at, b) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= b;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        if reseal {
            bytes = resealed(bytes);
        }
        let engine = Engine::new();
        let mut c = engine.connection();
        run(&mut c, "SET sentinel 1");
        run(&mut c, "SELECT 5");
        run(&mut c, "SET other 2");
        let loaded = engine.shared.store.lock().load_bytes(&bytes, engine.now_ms(), Reload::Replace);
        if loaded.is_err() {
            prop_assert_eq!(engine.dbsize(0), 1);
            prop_assert_eq!(engine.dbsize(5), 1);
            prop_assert_eq!(run(&mut c, "GET other"), bulk("2"));
        } else {
            prop_assert_eq!(engine.dbsize(5), 0);
        }
    }
}

/// `CONFIG GET dir`'s value on `c`.
fn dir_of(c: &mut Connection) -> PathBuf {
    match run(c, "CONFIG GET dir") {
        Value::Array(pair) => match pair.as_slice() {
            [_, Value::BulkString(dir)] => PathBuf::from(String::from_utf8_lossy(dir).as_ref()),
            other => panic!("CONFIG GET dir: {other:?}"),
        },
        other => panic!("CONFIG GET dir: {other:?}"),
    }
}

#[test]
fn engines_save_and_reload_in_directories_of_their_own_removed_with_them() {
    let (a, b) = (Engine::new(), Engine::new());
    let (mut ca, mut cb) = (a.connection(), b.connection());
    let (dir_a, dir_b) = (dir_of(&mut ca), dir_of(&mut cb));
    assert_ne!(dir_a, dir_b, "each engine has a directory of its own");
    assert!(dir_a.starts_with(std::env::temp_dir()));
    // Nothing is made before something is written.
    assert!(!dir_a.exists());
    run(&mut ca, "SET k a");
    run(&mut cb, "SET k b");
    // Both save, then both reload: each finds its own data.
    assert_eq!(run(&mut ca, "SAVE"), Value::Okay);
    assert_eq!(run(&mut cb, "SAVE"), Value::Okay);
    assert!(dir_a.join("dump.rdb").is_file() && dir_b.join("dump.rdb").is_file());
    assert_eq!(run(&mut ca, "DEBUG RELOAD"), Value::Okay);
    assert_eq!(run(&mut cb, "DEBUG RELOAD NOSAVE"), Value::Okay);
    assert_eq!(run(&mut ca, "GET k"), bulk("a"));
    assert_eq!(run(&mut cb, "GET k"), bulk("b"));
    // The AOF goes there too.
    assert_eq!(run(&mut ca, "CONFIG SET appendonly yes"), Value::Okay);
    assert!(dir_a.join("appendonlydir").is_dir());
    drop((ca, a));
    assert!(!dir_a.exists(), "the engine's directory goes with it");
    assert!(dir_b.exists());
    drop((cb, b));
    assert!(!dir_b.exists());
}

#[test]
fn a_new_process_removes_the_old_directories_engines_of_ended_processes_left() {
    // Directories named as an engine's of a process that has ended (no
    // process has the largest pid), one two hours old and one new, and
    // an old one of this process.
    let named = |pid: u32, n: &str| {
        let dir = std::env::temp_dir().join(format!("redmodel-engine-{pid}-{n}-0"));
        std::fs::create_dir_all(dir.join("appendonlydir")).expect("a directory");
        dir
    };
    let age = |dir: &std::path::Path| {
        let then = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::open(dir)
            .and_then(|d| d.set_modified(then))
            .expect("the directory's time");
    };
    let (ended, recent, mine) = (
        named(u32::MAX, "old"),
        named(u32::MAX, "new"),
        named(std::process::id(), "old"),
    );
    age(&ended);
    age(&mine);
    super::own_dir::remove_ended_dirs(super::own_dir::PREFIX, super::own_dir::SPARED);
    assert!(!ended.exists(), "an ended process's old directory goes");
    assert!(recent.exists(), "a recent one stays");
    assert!(mine.exists(), "a running process's stays");
    for dir in [recent, mine] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
