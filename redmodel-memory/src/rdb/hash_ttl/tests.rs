//! Hashes with field TTLs through DUMP and RESTORE, against payloads a
//! real redis-server 7.4.1 gave.

use redis::Value;

use crate::command::test_util::{bulk, bulks, clocked, clocked_74, err, ints, run, unhex};
use crate::Connection;

/// `HSET h a 1 b hello c 3`, then `HPEXPIREAT h 1900000000000 FIELDS 1 a`
/// and `HPEXPIREAT h 1900000001000 FIELDS 1 c`: a `listpackex`.
const LISTPACK_EX: &str = "190038d360ba010000313100000009008161020101f40038d360ba010000098163020301f4e83bd360ba010000098162028568656c6c6f060001ff0c0042af4c639934c608";

/// The same with `hash-max-listpack-entries 2`, and `c` at
/// 1900000005000: a table with field TTLs.
const METADATA: &str = "180038d360ba01000003010161c00153890163c003000162c0020c0086e2bb6a12665abb";

fn restore(c: &mut Connection, key: &str, payload: &[u8]) -> Value {
    c.execute(&[b"RESTORE", key.as_bytes(), b"0", payload])
}

fn dump(c: &mut Connection, key: &str) -> Vec<u8> {
    match c.execute(&[b"DUMP", key.as_bytes()]) {
        Value::BulkString(payload) => payload,
        other => panic!("DUMP gave {other:?}"),
    }
}

#[test]
fn payloads_of_redis_7_4_restore_with_their_ttls() {
    let (_, mut c) = clocked_74(1_800_000_000_000);
    assert_eq!(restore(&mut c, "h", &unhex(LISTPACK_EX)), Value::Okay);
    assert_eq!(run(&mut c, "OBJECT ENCODING h"), bulk("listpackex"));
    assert_eq!(
        run(&mut c, "HGETALL h"),
        bulks(&["a", "1", "c", "3", "b", "hello"])
    );
    assert_eq!(
        run(&mut c, "HPEXPIRETIME h FIELDS 3 a b c"),
        ints(&[1_900_000_000_000, -1, 1_900_000_001_000])
    );
    // The engine's DUMP of it is Redis's, byte for byte (Redis's LZF
    // gives up on this listpack, which the engine's shrinks by 4 bytes).
    run(&mut c, "CONFIG SET rdbcompression no");
    assert_eq!(dump(&mut c, "h"), unhex(LISTPACK_EX));
    run(&mut c, "CONFIG SET rdbcompression yes");

    assert_eq!(restore(&mut c, "t", &unhex(METADATA)), Value::Okay);
    assert_eq!(run(&mut c, "OBJECT ENCODING t"), bulk("listpackex"));
    assert_eq!(
        run(&mut c, "HPEXPIRETIME t FIELDS 3 a b c"),
        ints(&[1_900_000_000_000, -1, 1_900_000_005_000])
    );
    run(&mut c, "CONFIG SET hash-max-listpack-entries 2");
    assert_eq!(restore(&mut c, "u", &unhex(METADATA)), Value::Okay);
    assert_eq!(run(&mut c, "OBJECT ENCODING u"), bulk("hashtable"));
    let again = dump(&mut c, "u");
    run(&mut c, "DEL u");
    assert_eq!(restore(&mut c, "u", &again), Value::Okay);
    assert_eq!(
        run(&mut c, "HPEXPIRETIME u FIELDS 3 a b c"),
        ints(&[1_900_000_000_000, -1, 1_900_000_005_000])
    );
}

#[test]
fn redis_7_0_refuses_payloads_of_7_4() {
    let (_, mut c) = clocked(1_800_000_000_000);
    assert_eq!(
        restore(&mut c, "h", &unhex(LISTPACK_EX)),
        err("ERR DUMP payload version or checksum are wrong")
    );
    // In 7.0 mode DUMP stays RDB 10.
    run(&mut c, "HSET h a 1");
    let payload = dump(&mut c, "h");
    assert_eq!(payload[payload.len() - 10..payload.len() - 8], [10, 0]);
    let (_, mut c74) = clocked_74(1_800_000_000_000);
    assert_eq!(restore(&mut c74, "h", &payload), Value::Okay);
    let payload = dump(&mut c74, "h");
    assert_eq!(payload[payload.len() - 10..payload.len() - 8], [12, 0]);
}

/// SAVE in 7.4 mode writes RDB 12 with the field TTLs, which DEBUG
/// RELOAD and an engine starting on the file read back; a 7.0 engine
/// refuses the file's version, as Redis 7.0.15 does.
#[test]
fn rdb_files_keep_field_ttls() {
    let dir = std::env::temp_dir().join(format!("redmodel-hash-ttl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let engine = crate::Engine::new()
        .with_version(crate::RedisVersion::V7_4)
        .with_rdb_file(&dir, "dump.rdb")
        .expect("no file yet");
    let mut c = engine.connection();
    run(&mut c, "HSET h a 1 b 2");
    run(&mut c, "HPEXPIREAT h 4000000000000 FIELDS 1 a");
    run(&mut c, "CONFIG SET hash-max-listpack-entries 1");
    run(&mut c, "HSET t a 1 b 2");
    run(&mut c, "HPEXPIREAT t 4000000000000 FIELDS 1 b");
    assert_eq!(run(&mut c, "DEBUG RELOAD"), Value::Okay);
    assert_eq!(
        run(&mut c, "HPEXPIRETIME h FIELDS 2 a b"),
        ints(&[4_000_000_000_000, -1])
    );
    assert_eq!(
        run(&mut c, "HPEXPIRETIME t FIELDS 2 a b"),
        ints(&[-1, 4_000_000_000_000])
    );
    let bytes = std::fs::read(dir.join("dump.rdb")).expect("saved");
    assert_eq!(&bytes[..9], b"REDIS0012");
    let again = crate::Engine::new()
        .with_version(crate::RedisVersion::V7_4)
        .with_rdb_file(&dir, "dump.rdb")
        .expect("loads");
    let mut c = again.connection();
    assert_eq!(
        run(&mut c, "HPEXPIRETIME h FIELDS 1 a"),
        ints(&[4_000_000_000_000])
    );
    let refused = crate::Engine::new().with_rdb_file(&dir, "dump.rdb");
    assert!(refused.is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
