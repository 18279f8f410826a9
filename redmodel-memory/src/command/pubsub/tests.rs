//! Keyspace notifications, family by family. The expected events (names,
//! order, channels) are the ones redis-server 7.0.15 published for the
//! same commands.

use crate::command::test_util::{bulk, err, run, run_args};
use crate::{Connection, Engine, ManualClock, PubSub};

/// An engine with `notify-keyspace-events` set to `flags`, a client, and
/// a subscriber to every channel.
fn setup(flags: &str) -> (Engine, Connection, PubSub) {
    setup_with(Engine::new(), flags)
}

fn setup_with(engine: Engine, flags: &str) -> (Engine, Connection, PubSub) {
    let mut c = engine.connection();
    assert_eq!(
        run_args(&mut c, &["CONFIG", "SET", "notify-keyspace-events", flags]),
        redis::Value::Okay
    );
    let sub = engine.pubsub();
    sub.psubscribe("*");
    (engine, c, sub)
}

/// The events received so far, as `channel payload` lines.
fn events(sub: &mut PubSub) -> Vec<String> {
    std::iter::from_fn(|| sub.try_recv())
        .map(|m| {
            format!(
                "{} {}",
                String::from_utf8_lossy(&m.channel),
                String::from_utf8_lossy(&m.payload)
            )
        })
        .collect()
}

/// The keyspace events (`K` only) as `key event` pairs.
fn keyspace(sub: &mut PubSub) -> Vec<String> {
    events(sub)
        .into_iter()
        .map(|e| e.trim_start_matches("__keyspace@0__:").to_string())
        .collect()
}

#[test]
fn config_flags_read_back_canonical() {
    let mut c = Engine::new().connection();
    for (set, shown) in [
        ("gKE", "gKE"),
        ("$lshzxeKE", "$lshzxeKE"),
        ("KA", "AK"),
        ("EA", "AE"),
        ("KEAn", "AKE"),
        ("nE", "nE"),
        ("", ""),
    ] {
        run_args(&mut c, &["CONFIG", "SET", "notify-keyspace-events", set]);
        assert_eq!(
            run(&mut c, "CONFIG GET notify-keyspace-events"),
            redis::Value::Array(vec![bulk("notify-keyspace-events"), bulk(shown)])
        );
    }
    assert_eq!(
        run(&mut c, "CONFIG SET notify-keyspace-events Q"),
        err("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    );
}

#[test]
fn channels_and_masks() {
    let (_e, mut c, mut sub) = setup("KE$");
    run(&mut c, "SET foo bar");
    run(&mut c, "LPUSH l a");
    assert_eq!(
        events(&mut sub),
        ["__keyspace@0__:foo set", "__keyevent@0__:set foo"]
    );
    // Only E, in another database.
    run(&mut c, "CONFIG SET notify-keyspace-events El");
    run(&mut c, "SELECT 3");
    run(&mut c, "SET foo bar");
    run(&mut c, "RPUSH l a");
    assert_eq!(events(&mut sub), ["__keyevent@3__:rpush l"]);
    // A class without K or E publishes nothing.
    run(&mut c, "CONFIG SET notify-keyspace-events A");
    run(&mut c, "SET foo bar");
    assert!(events(&mut sub).is_empty());
}

/// `keymiss` for each key a command reads and does not find, as
/// redis-server 7.0.15 raised them for the same commands: none for a key
/// looked up to be written, none for OBJECT.
#[test]
fn key_misses() {
    let (_e, mut c, mut sub) = setup("KEm");
    for line in [
        "GET nokey",
        "EXISTS nokey2",
        "OBJECT ENCODING nokey3",
        "SET a 1",
        "GET a",
        "MGET a x y",
        "TTL nokey4",
        "SINTERSTORE d nokey5",
        "INCR z",
        "TYPE nokey6",
        "SORT nokey7",
        "GETEX nokey8",
    ] {
        run(&mut c, line);
    }
    let missed = [
        "nokey", "nokey2", "x", "y", "nokey4", "nokey5", "nokey6", "nokey7", "nokey8",
    ];
    let expected: Vec<String> = missed
        .iter()
        .flat_map(|k| {
            [
                format!("__keyspace@0__:{k} keymiss"),
                format!("__keyevent@0__:keymiss {k}"),
            ]
        })
        .collect();
    assert_eq!(events(&mut sub), expected);
}

#[test]
fn new_keys() {
    let (_e, mut c, mut sub) = setup("En");
    run(&mut c, "SET foo bar");
    run(&mut c, "SET foo baz");
    run(&mut c, "HSET h f v");
    run(&mut c, "SADD s a");
    run(&mut c, "SADD s b");
    assert_eq!(
        events(&mut sub),
        [
            "__keyevent@0__:new foo",
            "__keyevent@0__:new h",
            "__keyevent@0__:new s"
        ]
    );
    // `new` comes before the command's own event.
    run(&mut c, "CONFIG SET notify-keyspace-events KA");
    run(&mut c, "CONFIG SET notify-keyspace-events KAn");
    run(&mut c, "LPUSH l a");
    assert_eq!(keyspace(&mut sub), ["l new", "l lpush"]);
}

#[test]
fn string_events() {
    let (_e, mut c, mut sub) = setup("KA");
    for line in [
        "SET s v",
        "SET s v EX 100",
        "SETNX s v",
        "SETEX s 10 v",
        "GETSET s w",
        "APPEND s x",
        "APPEND t x",
        "SETRANGE s 0 zz",
        "SETRANGE s 0 ",
        "INCR n",
        "DECRBY n 3",
        "INCRBYFLOAT n 1.5",
        "MSET a 1 b 2",
        "MSETNX a 1 c 2",
        "GETEX a PERSIST",
        "GETEX a EX 100",
        "GETEX a PERSIST",
        "GETDEL a",
        "GETDEL a",
        "PSETEX p 100 v",
    ] {
        run(&mut c, line);
    }
    assert_eq!(
        keyspace(&mut sub),
        [
            "s set",
            "s set",
            "s expire",
            "s set",
            "s expire",
            "s set",
            "s append",
            "t append",
            "s setrange",
            "n incrby",
            "n incrby",
            "n incrbyfloat",
            "a set",
            "b set",
            "a expire",
            "a persist",
            "a del",
            "p set",
            "p expire",
        ]
    );
}

#[test]
fn bitmap_events() {
    let (_e, mut c, mut sub) = setup("KA");
    for line in [
        "SETBIT b 7 1",
        "SETBIT b 7 1",
        "SETBIT b 100 0",
        "BITOP OR d b",
        "BITOP AND d nokey",
        "BITOP AND d nokey",
        "BITFIELD f SET u8 0 255",
        "BITFIELD f GET u8 0",
        "BITFIELD f SET u8 0 255",
    ] {
        run(&mut c, line);
    }
    assert_eq!(
        keyspace(&mut sub),
        ["b setbit", "b setbit", "d set", "d del", "f setbit"]
    );
}

#[test]
fn pop_events_of_the_multi_key_and_blocking_pops() {
    let (_e, mut c, mut sub) = setup("KA");
    for line in [
        "RPUSH l a b c",
        "LMPOP 1 l LEFT COUNT 2",
        "BLPOP l 1",
        "ZADD z 1 a 2 b",
        "ZMPOP 1 z MAX",
        "BZPOPMIN z 1",
        "RPUSH s x",
        "BLMOVE s d LEFT RIGHT 1",
    ] {
        run(&mut c, line);
    }
    assert_eq!(
        keyspace(&mut sub),
        [
            "l rpush",
            "l lpop",
            "l lpop",
            "l del",
            "z zadd",
            "z zpopmax",
            "z zpopmin",
            "z del",
            "s rpush",
            "d rpush",
            "s lpop",
            "s del",
        ]
    );
}

#[test]
fn hyperloglog_events() {
    let (_e, mut c, mut sub) = setup("KA");
    for line in [
        "PFADD h a b",
        "PFADD h a",
        "PFCOUNT h",
        "PFMERGE m h",
        "PFMERGE m",
    ] {
        run(&mut c, line);
    }
    assert_eq!(keyspace(&mut sub), ["h pfadd", "m pfadd", "m pfadd"]);
}

#[test]
fn stream_events() {
    let (_e, mut c, mut sub) = setup("KA");
    for line in [
        "XADD s 1-1 a 1",
        "XADD s MAXLEN 1 2-1 b 2",
        "XADD s MAXLEN 5 3-1 c 3",
        "XDEL s 9-9",
        "XDEL s 2-1",
        "XTRIM s MAXLEN 0",
        "XTRIM s MAXLEN 0",
        "XSETID s 10-0",
        "XGROUP CREATE s g $",
        "XGROUP CREATE t g $ MKSTREAM",
        "XGROUP SETID s g 0",
        "XGROUP CREATECONSUMER s g alice",
        "XGROUP CREATECONSUMER s g alice",
        "XADD s 11-0 d 4",
        "XREADGROUP GROUP g bob STREAMS s >",
        "XREADGROUP GROUP g carol STREAMS s >",
        "XCLAIM s g dave 0 11-0",
        "XAUTOCLAIM s g erin 0 0",
        "XGROUP DELCONSUMER s g alice",
        "XGROUP DELCONSUMER s g zed",
        "XGROUP DESTROY s g",
        "XGROUP DESTROY s g",
    ] {
        run(&mut c, line);
    }
    assert_eq!(
        keyspace(&mut sub),
        [
            "s xadd",
            "s xadd",
            "s xtrim",
            "s xadd",
            "s xdel",
            "s xtrim",
            "s xsetid",
            "s xgroup-create",
            "t xgroup-create",
            "s xgroup-setid",
            "s xgroup-createconsumer",
            "s xadd",
            "s xgroup-createconsumer",
            "s xgroup-createconsumer",
            "s xgroup-createconsumer",
            "s xgroup-delconsumer",
            "s xgroup-destroy",
        ]
    );
}

#[test]
fn generic_events() {
    let (_e, mut c, mut sub) = setup("Kg");
    for line in [
        "SET a 1",
        "EXPIRE a 100",
        "EXPIRE a 100 NX",
        "PERSIST a",
        "PERSIST a",
        "PEXPIREAT a 1",
        "SET a 1",
        "RENAME a b",
        "RENAME b b",
        "SET x 1",
        "MOVE x 2",
        "COPY b c",
        "COPY b d DB 5",
        "DEL b c nosuch",
        "UNLINK d",
        "RPUSH src 3 1 2",
        "SORT src STORE dst",
        "SORT nosuch STORE dst",
    ] {
        run(&mut c, line);
    }
    let got = events(&mut sub);
    assert_eq!(
        got,
        [
            "__keyspace@0__:a expire",
            "__keyspace@0__:a persist",
            "__keyspace@0__:a del",
            "__keyspace@0__:a rename_from",
            "__keyspace@0__:b rename_to",
            "__keyspace@0__:x move_from",
            "__keyspace@2__:x move_to",
            "__keyspace@0__:c copy_to",
            "__keyspace@5__:d copy_to",
            "__keyspace@0__:b del",
            "__keyspace@0__:c del",
            "__keyspace@0__:dst del",
        ]
    );
}

#[test]
fn list_events() {
    let (_e, mut c, mut sub) = setup("Kgl");
    for line in [
        "LPUSH l a b",
        "RPUSH l c",
        "LPUSHX nosuch a",
        "RPUSHX l d",
        "LINSERT l BEFORE c x",
        "LINSERT l BEFORE nosuch x",
        "LSET l 0 z",
        "LREM l 0 nosuch",
        "LREM l 1 x",
        "LPOP l",
        "RPOP l 2",
        "LPOP l 0",
        "RPUSH m 1 2 3",
        "LTRIM m 0 0",
        "LMOVE m n LEFT RIGHT",
        "RPUSH n 4",
        "RPOPLPUSH n n",
        "LTRIM n 5 6",
    ] {
        run(&mut c, line);
    }
    assert_eq!(
        keyspace(&mut sub),
        [
            "l lpush",
            "l rpush",
            "l rpush",
            "l linsert",
            "l lset",
            "l lrem",
            "l lpop",
            "l rpop",
            "m rpush",
            "m ltrim",
            "n rpush",
            "m lpop",
            "m del",
            "n rpush",
            "n lpush",
            "n rpop",
            "n ltrim",
            "n del",
        ]
    );
}

#[test]
fn hash_events() {
    let (_e, mut c, mut sub) = setup("Kgh");
    for line in [
        "HMSET h yes 1 no 0",
        "HSET h yes 1",
        "HSETNX h yes 2",
        "HSETNX h maybe 2",
        "HINCRBY h yes 10",
        "HINCRBYFLOAT h yes 0.5",
        "HDEL h nosuch",
        "HDEL h yes no",
        "HDEL h maybe",
    ] {
        run(&mut c, line);
    }
    assert_eq!(
        keyspace(&mut sub),
        [
            "h hset",
            "h hset",
            "h hset",
            "h hincrby",
            "h hincrbyfloat",
            "h hdel",
            "h hdel",
            "h del",
        ]
    );
}

#[test]
fn set_events() {
    let (_e, mut c, mut sub) = setup("Kgs");
    for line in [
        "SADD s a b c d",
        "SADD s a",
        "SREM s x",
        "SREM s a",
        "SMOVE s t b",
        "SMOVE s t nosuch",
        "SADD u c",
        "SMOVE s u c",
        "SPOP s",
        "SINTERSTORE i t u",
        "SUNIONSTORE i t u",
        "SDIFFSTORE t nosuch",
        "SPOP u 5",
    ] {
        run(&mut c, line);
    }
    assert_eq!(
        keyspace(&mut sub),
        [
            "s sadd",
            "s srem",
            "s srem",
            "t sadd",
            "u sadd",
            "s srem",
            "s spop",
            "s del",
            "i sunionstore",
            "t del",
            "u spop",
            "u del",
        ]
    );
}

#[test]
fn zset_events() {
    let (_e, mut c, mut sub) = setup("Kgz");
    for line in [
        "ZADD z 1 a 2 b",
        "ZADD z 1 a",
        "ZADD z NX 5 a",
        "ZINCRBY z 1 a",
        "ZADD z INCR 1 a",
        "ZREM z x",
        "ZADD z 3 x 4 y 5 z",
        "ZREM z x",
        "ZREMRANGEBYSCORE z 100 200",
        "ZREMRANGEBYSCORE z 4 4",
        "ZREMRANGEBYRANK z 0 0",
        "ZREMRANGEBYLEX z [a [a",
        "ZPOPMIN z",
        "ZPOPMAX z 0",
        "ZUNIONSTORE u 1 z",
        "ZRANGESTORE r z 0 -1",
        "ZINTERSTORE u 2 z nosuch",
        "ZPOPMAX z 10",
    ] {
        run(&mut c, line);
    }
    assert_eq!(
        keyspace(&mut sub),
        [
            "z zadd",
            "z zincr",
            "z zincr",
            "z zadd",
            "z zrem",
            "z zremrangebyscore",
            "z zremrangebyrank",
            "z zremrangebylex",
            "z zpopmin",
            "z del",
        ]
    );
}

/// `expired` from passive expiry (a command touching the key) and from
/// the active cycle, before the command's own events.
#[test]
fn expired_events() {
    let clock = ManualClock::new(1_000_000);
    let (engine, mut c, mut sub) = setup_with(Engine::with_clock(clock.clone()), "KEx");
    run(&mut c, "PSETEX a 100 1");
    run(&mut c, "PSETEX b 100 1");
    clock.advance(std::time::Duration::from_millis(200));
    assert_eq!(run(&mut c, "GET a"), redis::Value::Nil);
    assert_eq!(
        events(&mut sub),
        ["__keyspace@0__:a expired", "__keyevent@0__:expired a"]
    );
    let stats = engine.run_expire_cycle();
    assert_eq!(stats.expired, 1);
    assert_eq!(
        events(&mut sub),
        ["__keyspace@0__:b expired", "__keyevent@0__:expired b"]
    );
    // Nothing is logged while the class is off.
    run(&mut c, "CONFIG SET notify-keyspace-events KEg");
    run(&mut c, "PSETEX d 100 1");
    clock.advance(std::time::Duration::from_millis(200));
    run(&mut c, "SET d 2");
    assert_eq!(
        events(&mut sub),
        ["__keyspace@0__:d expire", "__keyevent@0__:expire d"]
    );
}

/// A key that expired and is written again: `expired`, then `new`, then
/// the command's event, as Redis orders them.
#[test]
fn expired_then_new_then_the_event() {
    let clock = ManualClock::new(1_000_000);
    let (_e, mut c, mut sub) = setup_with(Engine::with_clock(clock.clone()), "KAn");
    run(&mut c, "PSETEX k 100 1");
    assert_eq!(keyspace(&mut sub), ["k new", "k set", "k expire"]);
    clock.advance(std::time::Duration::from_millis(200));
    run(&mut c, "LPUSH k a");
    assert_eq!(keyspace(&mut sub), ["k expired", "k new", "k lpush"]);
    // Inside MULTI/EXEC and scripts alike.
    run(&mut c, "MULTI");
    run(&mut c, "DEL k");
    run(&mut c, "SADD k m");
    run(&mut c, "EXEC");
    run_args(&mut c, &["EVAL", "redis.call('INCR', KEYS[1])", "1", "n"]);
    assert_eq!(
        keyspace(&mut sub),
        ["k del", "k new", "k sadd", "n new", "n incrby"]
    );
}
