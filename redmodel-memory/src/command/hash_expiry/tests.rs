//! HEXPIRE and friends against the replies redis-server 7.4.1 gave to the
//! same commands (RESP2), on the engine's manual clock.

use crate::command::test_util::{bulk, bulks, clocked_74, empty, err, int, ints, run};

const NUMFIELDS: &str = "ERR The `numfields` parameter must match the number of arguments";

#[test]
fn hexpire_sets_and_reports_ttls() {
    let (clock, mut c) = clocked_74(1_000_000);
    run(&mut c, "HSET h a 1 b 2 c 3");
    assert_eq!(run(&mut c, "OBJECT ENCODING h"), bulk("listpack"));
    assert_eq!(run(&mut c, "HTTL h FIELDS 2 a zz"), ints(&[-1, -2]));
    assert_eq!(run(&mut c, "HEXPIRE h 100 FIELDS 2 a zz"), ints(&[1, -2]));
    assert_eq!(run(&mut c, "OBJECT ENCODING h"), bulk("listpackex"));
    assert_eq!(run(&mut c, "HTTL h FIELDS 2 a b"), ints(&[100, -1]));
    assert_eq!(run(&mut c, "HPTTL h FIELDS 1 a"), ints(&[100_000]));
    assert_eq!(run(&mut c, "HEXPIRETIME h FIELDS 1 a"), ints(&[1100]));
    assert_eq!(run(&mut c, "HPEXPIRETIME h FIELDS 1 a"), ints(&[1_100_000]));
    assert_eq!(run(&mut c, "HPEXPIREAT h 1001001 FIELDS 1 b"), ints(&[1]));
    // Seconds are rounded up.
    assert_eq!(run(&mut c, "HEXPIRETIME h FIELDS 1 b"), ints(&[1002]));
    assert_eq!(run(&mut c, "HTTL h FIELDS 1 b"), ints(&[2]));
    // NX, XX, GT, LT: a field without a TTL passes NX and LT only.
    assert_eq!(run(&mut c, "HEXPIRE h 50 NX FIELDS 2 a c"), ints(&[0, 1]));
    assert_eq!(run(&mut c, "HEXPIRE h 50 XX FIELDS 1 a"), ints(&[1]));
    assert_eq!(run(&mut c, "HEXPIRE h 40 GT FIELDS 1 a"), ints(&[0]));
    assert_eq!(run(&mut c, "HEXPIRE h 60 GT FIELDS 1 a"), ints(&[1]));
    assert_eq!(run(&mut c, "HEXPIRE h 70 LT FIELDS 1 a"), ints(&[0]));
    assert_eq!(run(&mut c, "HPERSIST h FIELDS 3 a b zz"), ints(&[1, 1, -2]));
    assert_eq!(run(&mut c, "HPERSIST h FIELDS 1 a"), ints(&[-1]));
    assert_eq!(run(&mut c, "HEXPIRE h 70 GT FIELDS 1 a"), ints(&[0]));
    assert_eq!(run(&mut c, "HEXPIRE h 70 LT FIELDS 1 a"), ints(&[1]));
    // A time not in the future deletes the field; the last one the key.
    assert_eq!(run(&mut c, "HEXPIRE h 0 FIELDS 2 b zz"), ints(&[2, -2]));
    assert_eq!(run(&mut c, "HEXPIREAT h 1 FIELDS 2 a c"), ints(&[2, 2]));
    assert_eq!(run(&mut c, "EXISTS h"), int(0));
    assert_eq!(run(&mut c, "HEXPIRE h 10 FIELDS 1 a"), ints(&[-2]));
    clock.advance(std::time::Duration::from_millis(1));
}

#[test]
fn hexpire_errors_as_redis_words_them() {
    let (_, mut c) = clocked_74(1_000_000);
    run(&mut c, "HSET h a 1");
    run(&mut c, "SET s x");
    let cases = [
        ("HEXPIRE h 10 FIELDS 2 a", NUMFIELDS),
        ("HEXPIRE h 10 FIELDS 1 a b", NUMFIELDS),
        ("HEXPIRE h 10 FIELDS 1 a NX", NUMFIELDS),
        (
            "HEXPIRE h 10 FIELDS -1 a",
            "ERR Parameter `numFields` should be greater than 0",
        ),
        (
            "HEXPIRE h 10 FIELDS x a",
            "ERR Parameter `numFields` should be greater than 0",
        ),
        (
            "HEXPIRE h 10 FIELDS 0",
            "ERR wrong number of arguments for 'hexpire' command",
        ),
        (
            "HEXPIRE h 10 FIELD 1 a",
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ),
        (
            "HEXPIRE h 10 NX XX FIELDS 1 a",
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ),
        (
            "HEXPIRE h x FIELDS 1 a",
            "ERR value is not an integer or out of range",
        ),
        (
            "HEXPIRE h -1 FIELDS 1 a",
            "ERR invalid expire time, must be >= 0",
        ),
        (
            "HEXPIRE h 70368744177 FIELDS 1 a",
            "ERR invalid expire time in 'hexpire' command",
        ),
        (
            "HPEXPIREAT h 70368744177664 FIELDS 1 a",
            "ERR invalid expire time in 'hpexpireat' command",
        ),
        (
            "HEXPIRE s 10 FIELDS 1 a",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (
            "HEXPIRE s x FIELDS 1 a",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (
            "HEXPIRE nokey x FIELDS 1 a",
            "ERR value is not an integer or out of range",
        ),
        ("HEXPIRE nokey 10 FIELDS 2 a", NUMFIELDS),
        ("HTTL h FIELDS 2 a", NUMFIELDS),
        (
            "HTTL h FIELD 1 a",
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ),
        (
            "HTTL h FIELDS 1",
            "ERR wrong number of arguments for 'httl' command",
        ),
        (
            "HTTL s FIELDS 2 a",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (
            "HPERSIST h FIELDS 0 a",
            "ERR Parameter `numFields` should be greater than 0",
        ),
    ];
    for (line, expected) in cases {
        assert_eq!(run(&mut c, line), err(expected), "{line}");
    }
    assert_eq!(
        run(&mut c, "HPEXPIREAT h 70368744177663 FIELDS 1 a"),
        ints(&[1])
    );
    assert_eq!(
        run(&mut c, "HEXPIREAT h 70368744177 FIELDS 1 a"),
        ints(&[1])
    );
    assert_eq!(run(&mut c, "HTTL nokey FIELDS 2 a b"), ints(&[-2, -2]));
    assert_eq!(run(&mut c, "HPERSIST nokey FIELDS 1 a"), ints(&[-2]));
}

#[test]
fn expired_fields_are_gone_as_in_redis_7_4() {
    let (clock, mut c) = clocked_74(1_000_000);
    run(&mut c, "HSET h a 1 b 2 c 3");
    run(&mut c, "HPEXPIRE h 50 FIELDS 2 a b");
    clock.advance(std::time::Duration::from_millis(100));
    // HLEN counts expired fields until something deletes them.
    assert_eq!(run(&mut c, "HLEN h"), int(3));
    assert_eq!(run(&mut c, "HGETALL h"), bulks(&["c", "3"]));
    assert_eq!(run(&mut c, "HKEYS h"), bulks(&["c"]));
    assert_eq!(
        run(&mut c, "HSCAN h 0"),
        redis::Value::Array(vec![bulk("0"), bulks(&["c", "3"])])
    );
    assert_eq!(run(&mut c, "HLEN h"), int(3));
    assert_eq!(run(&mut c, "HEXISTS h a"), int(0));
    assert_eq!(run(&mut c, "HLEN h"), int(2));
    assert_eq!(
        run(&mut c, "HRANDFIELD h -5"),
        bulks(&["c", "c", "c", "c", "c"])
    );
    assert_eq!(run(&mut c, "HLEN h"), int(1));
    // HSET over an expired field counts it as there, and clears its TTL.
    run(&mut c, "HSET g a 1 b 2");
    run(&mut c, "HPEXPIRE g 10 FIELDS 2 a b");
    clock.advance(std::time::Duration::from_millis(20));
    assert_eq!(run(&mut c, "HSET g a 9"), int(0));
    assert_eq!(run(&mut c, "HTTL g FIELDS 1 a"), ints(&[-1]));
    assert_eq!(run(&mut c, "HDEL g b"), int(1));
    // The last field looked up after its time takes the key with it.
    run(&mut c, "HSET k a 1");
    run(&mut c, "HPEXPIRE k 10 FIELDS 1 a");
    clock.advance(std::time::Duration::from_millis(20));
    assert_eq!(run(&mut c, "EXISTS k"), int(1));
    assert_eq!(run(&mut c, "HGET k a"), redis::Value::Nil);
    assert_eq!(run(&mut c, "EXISTS k"), int(0));
    // HINCRBY keeps a TTL; of an expired field it starts from nothing.
    run(&mut c, "HSET n a 1 b 2");
    run(&mut c, "HEXPIRE n 100 FIELDS 1 a");
    assert_eq!(run(&mut c, "HINCRBY n a 1"), int(2));
    assert_eq!(run(&mut c, "HTTL n FIELDS 1 a"), ints(&[100]));
    run(&mut c, "HPEXPIRE n 10 FIELDS 1 b");
    clock.advance(std::time::Duration::from_millis(20));
    assert_eq!(run(&mut c, "HINCRBY n b 5"), int(5));
    assert_eq!(run(&mut c, "HSETNX n a 7"), int(0));
    assert_eq!(
        run(&mut c, "HMGET n a b zz"),
        redis::Value::Array(vec![bulk("2"), bulk("5"), redis::Value::Nil])
    );
    assert_eq!(run(&mut c, "HGETALL nokey"), empty());
    // SORT's GET of an expired field reads nothing and deletes the field.
    run(&mut c, "HSET w_x a 1 b 2");
    run(&mut c, "HPEXPIRE w_x 10 FIELDS 1 a");
    run(&mut c, "RPUSH l x");
    clock.advance(std::time::Duration::from_millis(20));
    assert_eq!(
        run(&mut c, "SORT l BY nosort GET w_*->a GET w_*->b"),
        redis::Value::Array(vec![redis::Value::Nil, bulk("2")])
    );
    assert_eq!(run(&mut c, "HLEN w_x"), int(1));
}

#[test]
fn the_expire_cycle_deletes_expired_fields() {
    let clock = crate::ManualClock::new(1_000_000);
    let engine = crate::Engine::with_clock(clock.clone()).with_version(crate::RedisVersion::V7_4);
    let mut c = engine.connection();
    run(&mut c, "HSET h a 1 b 2");
    run(&mut c, "HSET g a 1");
    run(&mut c, "HPEXPIRE h 10 FIELDS 1 a");
    run(&mut c, "HPEXPIRE g 10 FIELDS 1 a");
    clock.advance(std::time::Duration::from_millis(20));
    assert_eq!(run(&mut c, "HLEN h"), int(2));
    let stats = engine.run_expire_cycle();
    assert_eq!(stats.expired_field_keys, 2);
    assert_eq!(run(&mut c, "HLEN h"), int(1));
    assert_eq!(run(&mut c, "EXISTS g"), int(0));
}

#[test]
fn field_ttls_go_with_their_key() {
    let (_, mut c) = clocked_74(1_000_000);
    run(&mut c, "HSET h a 1 b 2");
    run(&mut c, "HEXPIRE h 100 FIELDS 1 a");
    run(&mut c, "RENAME h r");
    assert_eq!(run(&mut c, "HTTL r FIELDS 2 a b"), ints(&[100, -1]));
    run(&mut c, "COPY r c");
    assert_eq!(run(&mut c, "HTTL c FIELDS 1 a"), ints(&[100]));
    run(&mut c, "MOVE c 1");
    run(&mut c, "SELECT 1");
    assert_eq!(run(&mut c, "HTTL c FIELDS 1 a"), ints(&[100]));
    assert_eq!(run(&mut c, "OBJECT ENCODING c"), bulk("listpackex"));
    // A whole-key overwrite takes the TTLs away.
    run(&mut c, "DEL c");
    run(&mut c, "HSET c a 1");
    assert_eq!(run(&mut c, "HTTL c FIELDS 1 a"), ints(&[-1]));
}

/// A compact hash keeps the order of Redis 7.4's `listpackex`: fields
/// with a TTL first, soonest first, then the others.
#[test]
fn fields_are_ordered_by_ttl_as_in_listpackex() {
    let (clock, mut c) = clocked_74(1_000_000);
    let step = || std::time::Duration::from_millis(1);
    run(&mut c, "HSET h a 1 b 2 c 3 d 4");
    let keys_after = |c: &mut crate::Connection, line: &str| {
        run(c, line);
        clock.advance(step());
        run(c, "HKEYS h")
    };
    assert_eq!(
        keys_after(&mut c, "HEXPIRE h 100 FIELDS 1 c"),
        bulks(&["c", "a", "b", "d"])
    );
    assert_eq!(
        keys_after(&mut c, "HEXPIRE h 100 FIELDS 1 a"),
        bulks(&["c", "a", "b", "d"])
    );
    assert_eq!(
        keys_after(&mut c, "HEXPIRE h 50 FIELDS 1 d"),
        bulks(&["d", "c", "a", "b"])
    );
    assert_eq!(
        keys_after(&mut c, "HPERSIST h FIELDS 1 d"),
        bulks(&["c", "a", "b", "d"])
    );
    assert_eq!(
        keys_after(&mut c, "HSET h c 9"),
        bulks(&["a", "b", "d", "c"])
    );
    assert_eq!(
        keys_after(&mut c, "HINCRBY h a 1"),
        bulks(&["a", "b", "d", "c"])
    );
    assert_eq!(
        keys_after(&mut c, "HSET h e 5"),
        bulks(&["a", "b", "d", "c", "e"])
    );
    assert_eq!(
        keys_after(&mut c, "HEXPIRE h 100 FIELDS 1 e"),
        bulks(&["a", "e", "b", "d", "c"])
    );
    assert_eq!(
        keys_after(&mut c, "HEXPIRE h 100 FIELDS 1 a"),
        bulks(&["e", "a", "b", "d", "c"])
    );
}

/// HSCAN walks a big hash in pages; fields expired but not deleted take
/// their place on a page, so a mostly expired hash answers empty pages
/// (Redis 7.4.1's "HSCAN with mostly expired fields return empty result").
#[test]
fn hscan_of_a_mostly_expired_hash_answers_empty_pages() {
    let (clock, mut c) = clocked_74(1_000_000);
    run(&mut c, "DEBUG SET-ACTIVE-EXPIRE 0");
    for i in 1..=1000 {
        run(&mut c, &format!("HSET h field{i} value{i}"));
        if i > 1 {
            run(&mut c, &format!("HPEXPIRE h 1 NX FIELDS 1 field{i}"));
        }
    }
    clock.advance(std::time::Duration::from_millis(3));
    let (mut cursor, mut empty_pages, mut seen) = ("0".to_string(), 0, Vec::new());
    loop {
        let redis::Value::Array(reply) = run(&mut c, &format!("HSCAN h {cursor}")) else {
            panic!("HSCAN answers an array");
        };
        let [next, items] = &reply[..] else {
            panic!("HSCAN answers a cursor and items");
        };
        let items = crate::command::test_util::strings(items.clone());
        empty_pages += usize::from(items.is_empty());
        seen.extend(items);
        cursor =
            crate::command::test_util::strings(redis::Value::Array(vec![next.clone()])).remove(0);
        if cursor == "0" {
            break;
        }
    }
    assert!(empty_pages > 0);
    assert_eq!(seen, ["field1", "value1"]);
    // Skipped, not deleted.
    assert_eq!(run(&mut c, "HLEN h"), int(1000));
}

/// INFO keyspace's `subexpiry` counts the hashes with field TTLs (7.4's
/// `db->hexpires`), until the fields are gone; 7.0 has no such field.
#[test]
fn info_keyspace_counts_the_hashes_with_field_ttls() {
    let clock = crate::ManualClock::new(1_000_000);
    let engine = crate::Engine::with_clock(clock.clone()).with_version(crate::RedisVersion::V7_4);
    let mut c = engine.connection();
    let keyspace = |c: &mut crate::Connection| {
        crate::command::test_util::strings(redis::Value::Array(vec![run(c, "INFO keyspace")]))
            .remove(0)
    };
    run(&mut c, "HSET h f1 v1 f2 v2");
    run(&mut c, "HPEXPIRE h 100 FIELDS 1 f1");
    assert_eq!(
        keyspace(&mut c),
        "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0,subexpiry=1\r\n"
    );
    run(&mut c, "HSET g f1 v1");
    assert!(keyspace(&mut c).contains("keys=2,expires=0,avg_ttl=0,subexpiry=1"));
    run(&mut c, "HPEXPIRE g 100 FIELDS 1 f1");
    assert!(keyspace(&mut c).contains("subexpiry=2"));
    clock.advance(std::time::Duration::from_millis(200));
    engine.run_expire_cycle();
    assert!(keyspace(&mut c).contains("keys=1,expires=0,avg_ttl=0,subexpiry=0"));
    let (_, mut old) = crate::command::test_util::clocked(1_000_000);
    run(&mut old, "HSET h f1 v1");
    assert_eq!(
        keyspace(&mut old),
        "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n"
    );
}
