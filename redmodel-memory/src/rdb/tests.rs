//! Payloads of a real redis-server 7.0.15, restored; the footer.

use super::*;
use crate::config::Limits;
use crate::value::Value;

#[test]
fn crc64_is_redis_one() {
    // crc64.c's own test vector.
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
}

#[test]
fn footer_is_checked() {
    let sealed = seal(vec![0, 1, b'a']);
    assert_eq!(open(&sealed), Some(&[0, 1, b'a'][..]));
    let mut wrong = sealed.clone();
    wrong[1] = 2;
    assert_eq!(open(&wrong), None);
    assert_eq!(open(&sealed[..9]), None);
    // A later RDB version is refused even with a right checksum.
    let mut later = vec![0, 1, b'a', 11, 0];
    let crc = crc64(&later);
    later.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(open(&later), None);
}

#[test]
fn a_real_hash_listpack_restores() {
    // DUMP of HSET h a 1 b hello on redis-server 7.0.15.
    let payload =
        b"\x10\x16\x16\x00\x00\x00\x04\x00\x81a\x02\x01\x01\x81b\x02\x85hello\x06\xff\n\x00\xe8\xc5\xfe\x99\xee\x07\x95]";
    let body = open(payload).expect("footer");
    let (value, _) = value::decode(body, &Limits::default()).expect("decodes");
    let Value::Hash(h) = value else {
        panic!("a hash")
    };
    assert_eq!(h.get(b"a"), Some(&b"1"[..]));
    assert_eq!(h.get(b"b"), Some(&b"hello"[..]));
}

#[test]
fn lengths_and_strings() {
    for n in [
        0u64,
        63,
        64,
        16383,
        16384,
        u32::MAX as u64,
        u32::MAX as u64 + 1,
    ] {
        let mut out = Vec::new();
        put_length(&mut out, n);
        assert_eq!(Reader::new(&out).length(), Some(n));
    }
    for s in [
        &b""[..],
        b"0",
        b"-128",
        b"127",
        b"32767",
        b"-32769",
        b"2147483647",
        b"2147483648",
        b"01",
        b"hello",
    ] {
        for compress in [false, true] {
            let mut w = Writer::new(compress);
            w.string(s);
            assert_eq!(Reader::new(&w.finish()).bytes().as_deref(), Some(s));
        }
    }
    let text = b"compress me, compress me, compress me".to_vec();
    let mut w = Writer::new(true);
    w.string(&text);
    let out = w.finish();
    assert_eq!(out[0], 0xc3, "LZF-compressed");
    assert_eq!(Reader::new(&out).bytes(), Some(text));
    // A length the bytes cannot hold.
    let mut out = Vec::new();
    put_length(&mut out, 1 << 40);
    assert_eq!(Reader::new(&out).count(), None);
    assert_eq!(Reader::new(&out).string(), None);
}

/// Redis 7.2 and later keep a small set of strings in a listpack, and
/// dump it as one (RDB type 20): the engine in 7.4 mode restores
/// redis-server 7.4.1's payload, dumps its own so, and loads a small set
/// of strings back as a listpack (DEBUG RELOAD, as 7.4.1's set case
/// "Set encoding after DEBUG RELOAD"); in 7.0 mode the payload's RDB
/// version is refused, as redis-server 7.0.15 refuses it.
#[test]
fn small_sets_of_strings_stay_listpacks_from_7_4() {
    use crate::command::test_util::{bulk, clocked, clocked_74, err, int, run};
    // DUMP of SADD s a b c on redis-server 7.4.1.
    let payload: &[u8] =
        b"\x14\x10\x10\x00\x00\x00\x03\x00\x81a\x02\x81b\x02\x81c\x02\xff\x0c\x00\xcf\x9c\xdd\xd4\xcc\xbd\xee\xf7";
    let restore = |c: &mut crate::Connection, key: &str| {
        c.execute(&[b"RESTORE", key.as_bytes(), b"0", payload])
    };
    let (_, mut c) = clocked_74(1_000);
    assert_eq!(restore(&mut c, "s"), redis::Value::Okay);
    assert_eq!(run(&mut c, "OBJECT ENCODING s"), bulk("listpack"));
    assert_eq!(run(&mut c, "SISMEMBER s b"), int(1));
    let dumped = match run(&mut c, "DUMP s") {
        redis::Value::BulkString(bytes) => bytes,
        other => panic!("DUMP: {other:?}"),
    };
    assert_eq!(dumped[0], kind::SET_LISTPACK);
    run(&mut c, "SADD ints 1 2 3");
    run(&mut c, "SADD strings i000 i001");
    for i in 0..200 {
        run(&mut c, &format!("SADD big i{i:03}"));
    }
    assert_eq!(run(&mut c, "DEBUG RELOAD"), redis::Value::Okay);
    for (key, encoding) in [
        ("s", "listpack"),
        ("ints", "intset"),
        ("strings", "listpack"),
        ("big", "hashtable"),
    ] {
        assert_eq!(
            run(&mut c, &format!("OBJECT ENCODING {key}")),
            bulk(encoding),
            "{key}"
        );
    }
    let (_, mut c70) = clocked(1_000);
    assert_eq!(
        restore(&mut c70, "s"),
        err("ERR DUMP payload version or checksum are wrong")
    );
}

/// Redis 7.2 and later dump a stream in the layout whose consumers have
/// an active time (RDB type 21): the engine in 7.4 mode restores
/// redis-server 7.4.1's payload, its group and consumer included; in 7.0
/// mode the payload's RDB version is refused.
#[test]
fn a_stream_of_redis_7_4_restores_with_its_groups() {
    use crate::command::test_util::{bulk, clocked, clocked_74, err, int, run, unhex};
    // DUMP on redis-server 7.4.1 of: XADD st 1-1 a 1, XADD st 2-1 b 2,
    // XGROUP CREATE st g 0, XREADGROUP GROUP g alice COUNT 1 STREAMS st >.
    let hex = "15011000000000000000010000000000000001c3252b102b00000011000201000101018161020001400a400c0004600540090781620202010601ff02020101010000020101670101010100000000000000010000000000000001b7e6cb29a2010000010105616c696365b7e6cb29a2010000b7e6cb29a201000001000000000000000100000000000000010c00a7aa99d6b4017176";
    let payload = unhex(hex);
    let (_, mut c) = clocked_74(1_800_000_000_000);
    assert_eq!(
        c.execute(&[b"RESTORE", b"st", b"0", &payload]),
        redis::Value::Okay
    );
    assert_eq!(run(&mut c, "XLEN st"), int(2));
    assert_eq!(
        run(&mut c, "XPENDING st g"),
        redis::Value::Array(vec![
            int(1),
            bulk("1-1"),
            bulk("1-1"),
            redis::Value::Array(vec![redis::Value::Array(vec![bulk("alice"), bulk("1")])]),
        ])
    );
    let (_, mut c70) = clocked(1_800_000_000_000);
    assert_eq!(
        c70.execute(&[b"RESTORE", b"st", b"0", &payload]),
        err("ERR DUMP payload version or checksum are wrong")
    );
}

/// In 7.4 mode a stream is dumped in Redis 7.4's layout (type 21, each
/// consumer's active time kept): the same bytes as redis-server 7.4.1
/// for the same stream; in 7.0 mode in 7.0's (type 19).
#[test]
fn a_stream_dumps_as_each_version_dumps_it() {
    use crate::command::test_util::{clocked, clocked_74, run, unhex};
    // redis-server 7.4.1's DUMP (see the test above), read at 1795997558455 ms.
    let hex = "15011000000000000000010000000000000001c3252b102b00000011000201000101018161020001400a400c0004600540090781620202010601ff02020101010000020101670101010100000000000000010000000000000001b7e6cb29a2010000010105616c696365b7e6cb29a2010000b7e6cb29a201000001000000000000000100000000000000010c00a7aa99d6b4017176";
    let writes = [
        "XADD st 1-1 a 1",
        "XADD st 2-1 b 2",
        "XGROUP CREATE st g 0",
        "XREADGROUP GROUP g alice COUNT 1 STREAMS st >",
    ];
    let (_, mut c) = clocked_74(1_795_997_558_455);
    for line in writes {
        run(&mut c, line);
    }
    let dumped = run(&mut c, "DUMP st");
    assert_eq!(dumped, redis::Value::BulkString(unhex(hex)));
    let (_, mut c70) = clocked(1_795_997_558_455);
    for line in writes {
        run(&mut c70, line);
    }
    match run(&mut c70, "DUMP st") {
        redis::Value::BulkString(payload) => assert_eq!(payload.first(), Some(&19)),
        other => panic!("DUMP replied {other:?}"),
    }
}

/// A consumer whose last attempt read nothing has a seen time after its
/// active time: in 7.4 mode both come back from DUMP and RESTORE.
#[test]
fn a_consumers_active_time_survives_a_dump_in_7_4() {
    use crate::command::test_util::{clocked_74, run};
    let (clock, mut c) = clocked_74(1_800_000_000_000);
    run(&mut c, "XADD st 1-1 a 1");
    run(&mut c, "XGROUP CREATE st g 0");
    run(&mut c, "XREADGROUP GROUP g alice STREAMS st >");
    clock.advance(std::time::Duration::from_millis(50));
    run(&mut c, "XREADGROUP GROUP g alice STREAMS st >");
    let before = run(&mut c, "XINFO STREAM st FULL");
    let redis::Value::BulkString(payload) = run(&mut c, "DUMP st") else {
        panic!("no DUMP payload");
    };
    assert_eq!(
        c.execute(&[b"RESTORE", b"st", b"0", &payload, b"REPLACE"]),
        redis::Value::Okay
    );
    assert_eq!(run(&mut c, "XINFO STREAM st FULL"), before);
}
