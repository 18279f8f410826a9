//! Unit tests of the stream commands. The expected replies are the ones
//! redis-server 7.0.15 gave to the same commands; the idle times run on a
//! `ManualClock`, which the differential traps cannot compare.

use std::time::Duration;

use redis::Value;

use crate::command::test_util::*;
use crate::Connection;

/// An entry as XRANGE shows it.
fn entry(id: &str, fields: &[&str]) -> Value {
    Value::Array(vec![bulk(id), bulks(fields)])
}

fn arr(items: Vec<Value>) -> Value {
    Value::Array(items)
}

/// The value of `name` in a RESP2 map reply (a flat array).
fn field(map: &Value, name: &str) -> Value {
    let Value::Array(items) = map else {
        panic!("not a map: {map:?}");
    };
    items
        .chunks(2)
        .find(|pair| pair[0] == bulk(name))
        .map(|pair| pair[1].clone())
        .unwrap_or_else(|| panic!("no field {name} in {map:?}"))
}

/// Three entries 1-0, 2-0, 3-0, a group `g` and all three read by alice.
fn delivered(c: &mut Connection) {
    for id in 1..=3 {
        run(c, &format!("XADD s {id}-0 f {id}"));
    }
    assert_eq!(run(c, "XGROUP CREATE s g 0"), Value::Okay);
    run(c, "XREADGROUP GROUP g alice STREAMS s >");
}

#[test]
fn xadd_auto_ids_follow_the_engine_clock() {
    let (clock, mut c) = clocked(1_000);
    assert_eq!(run(&mut c, "XADD s * f v"), bulk("1000-0"));
    assert_eq!(run(&mut c, "XADD s * f v"), bulk("1000-1"));
    clock.advance(Duration::from_millis(5));
    assert_eq!(run(&mut c, "XADD s * f v"), bulk("1005-0"));
    // A clock behind the last ID keeps counting on the last ID.
    assert_eq!(run(&mut c, "XADD s 2000-7 f v"), bulk("2000-7"));
    assert_eq!(run(&mut c, "XADD s * f v"), bulk("2000-8"));
    assert_eq!(run(&mut c, "XADD s 2000-* f v"), bulk("2000-9"));
    assert_eq!(run(&mut c, "XADD s 3000-* f v"), bulk("3000-0"));
}

#[test]
fn xadd_id_errors() {
    let mut c = conn();
    assert_eq!(
        run(&mut c, "XADD s 0-0 f v"),
        err("ERR The ID specified in XADD must be greater than 0-0")
    );
    assert_eq!(run(&mut c, "EXISTS s"), int(0));
    run(&mut c, "XADD s 5-5 f v");
    assert_eq!(
        run(&mut c, "XADD s 5-5 f v"),
        err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    assert_eq!(
        run(&mut c, "XADD s 4-* f v"),
        err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    run(&mut c, "XADD s 6-18446744073709551615 f v");
    assert_eq!(
        run(&mut c, "XADD s 6-* f v"),
        err("ERR Elements are too large to be stored")
    );
    // Redis 7.2 on: XSETID below the max deleted ID is refused.
    let (_, mut c74) = crate::command::test_util::clocked_74(1_000_000);
    for line in ["XADD x 1-1 a 1", "XADD x 1-2 b 2", "XADD x 1-3 c 3"] {
        run(&mut c74, line);
    }
    run(&mut c74, "XDEL x 1-2");
    run(&mut c74, "XDEL x 1-3");
    assert_eq!(
        run(&mut c74, "XSETID x 1-2"),
        err("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
    );
    assert_eq!(run(&mut c, "DEL x"), int(0));
    for line in ["XADD x 1-1 a 1", "XADD x 1-2 b 2", "XADD x 1-3 c 3"] {
        run(&mut c, line);
    }
    run(&mut c, "XDEL x 1-2");
    run(&mut c, "XDEL x 1-3");
    assert_eq!(run(&mut c, "XSETID x 1-2"), redis::Value::Okay);
    // Redis 7.2 on: the error of an ID not above the top one.
    let (_, mut c74) = crate::command::test_util::clocked_74(1_000_000);
    run(&mut c74, "XADD s 6-18446744073709551615 f v");
    assert_eq!(
        run(&mut c74, "XADD s 6-* f v"),
        err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    run(
        &mut c,
        "XADD s 18446744073709551615-18446744073709551615 f v",
    );
    assert_eq!(
        run(&mut c, "XADD s * f v"),
        err("ERR The stream has exhausted the last possible ID, unable to add more items")
    );
    assert_eq!(
        run(&mut c, "XADD s 1-x f v"),
        err("ERR Invalid stream ID specified as stream command argument")
    );
    assert_eq!(
        run(&mut c, "XADD s 1-1 f"),
        err("ERR wrong number of arguments for 'xadd' command")
    );
    assert_eq!(run(&mut c, "XADD t NOMKSTREAM 1-1 f v"), Value::Nil);
    assert_eq!(run(&mut c, "EXISTS t"), int(0));
}

#[test]
fn type_encoding_and_an_emptied_stream() {
    let mut c = conn();
    run(&mut c, "XADD s 1-1 f v");
    assert_eq!(run(&mut c, "TYPE s"), Value::SimpleString("stream".into()));
    assert_eq!(run(&mut c, "OBJECT ENCODING s"), bulk("stream"));
    assert_eq!(run(&mut c, "XDEL s 1-1"), int(1));
    assert_eq!(run(&mut c, "EXISTS s"), int(1));
    assert_eq!(run(&mut c, "XLEN s"), int(0));
    assert_eq!(
        run(&mut c, "SCAN 0 TYPE stream"),
        arr(vec![bulk("0"), bulks(&["s"])])
    );
    assert_eq!(run(&mut c, "LPUSH s a"), err(WRONGTYPE));
    assert_eq!(run(&mut c, "XLEN nosuch"), int(0));
    run(&mut c, "SET str x");
    for line in [
        "XADD str 1-1 f v",
        "XLEN str",
        "XRANGE str - +",
        "XDEL str 1-1",
        "XTRIM str MAXLEN 0",
        "XREAD STREAMS str 0",
        "XINFO STREAM str",
        "XGROUP CREATE str g 0",
    ] {
        assert_eq!(run(&mut c, line), err(WRONGTYPE), "{line}");
    }
}

#[test]
fn ranges_exclusive_and_counted() {
    let mut c = conn();
    for id in ["1-0", "1-5", "2-0", "3-3"] {
        run(&mut c, &format!("XADD s {id} f {id}"));
    }
    assert_eq!(
        run(&mut c, "XRANGE s (1-0 (3-3"),
        arr(vec![
            entry("1-5", &["f", "1-5"]),
            entry("2-0", &["f", "2-0"])
        ])
    );
    assert_eq!(
        run(&mut c, "XREVRANGE s + - COUNT 1"),
        arr(vec![entry("3-3", &["f", "3-3"])])
    );
    assert_eq!(
        run(&mut c, "XRANGE s 1 1"),
        arr(vec![
            entry("1-0", &["f", "1-0"]),
            entry("1-5", &["f", "1-5"])
        ])
    );
    assert_eq!(run(&mut c, "XRANGE s - + COUNT 0"), Value::Nil);
    assert_eq!(run(&mut c, "XRANGE nosuch - + COUNT 0"), empty());
    assert_eq!(
        run(&mut c, "XRANGE s - (0-0"),
        err("ERR invalid end ID for the interval")
    );
    assert_eq!(
        run(
            &mut c,
            "XRANGE s (18446744073709551615-18446744073709551615 +"
        ),
        err("ERR invalid start ID for the interval")
    );
    assert_eq!(run(&mut c, "XRANGE s - + FOO"), err(SYNTAX));
}

#[test]
fn trimming_exact_and_by_nodes() {
    let mut c = conn();
    run(&mut c, "CONFIG SET stream-node-max-entries 10");
    for i in 1..=35 {
        run(&mut c, &format!("XADD s {i}-0 f v"));
    }
    // Whole nodes of 10 only: 35 -> 25 for a target of 22.
    assert_eq!(run(&mut c, "XTRIM s MAXLEN ~ 22"), int(10));
    assert_eq!(run(&mut c, "XLEN s"), int(25));
    assert_eq!(run(&mut c, "XTRIM s MAXLEN 22"), int(3));
    assert_eq!(
        run(&mut c, "XRANGE s - + COUNT 1"),
        arr(vec![entry("14-0", &["f", "v"])])
    );
    assert_eq!(run(&mut c, "XTRIM s MINID 20"), int(6));
    assert_eq!(run(&mut c, "XTRIM s MINID ~ 31"), int(11));
    assert_eq!(
        run(&mut c, "XTRIM s MAXLEN 1 LIMIT 10"),
        err("ERR syntax error, LIMIT cannot be used without the special ~ option")
    );
    assert_eq!(
        run(&mut c, "XTRIM s LIMIT 10"),
        err("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    );
    assert_eq!(
        run(&mut c, "XADD s MAXLEN 1 MINID 1 99-0 f v"),
        err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
    );
}

#[test]
fn xread_serves_what_is_past_each_id() {
    let mut c = conn();
    run(&mut c, "XADD a 1-0 f 1");
    run(&mut c, "XADD a 2-0 f 2");
    assert_eq!(
        run(&mut c, "XREAD COUNT 1 STREAMS a nosuch 0 0"),
        arr(vec![arr(vec![
            bulk("a"),
            arr(vec![entry("1-0", &["f", "1"])])
        ])])
    );
    assert_eq!(run(&mut c, "XREAD STREAMS a $"), Value::Nil);
    assert_eq!(run(&mut c, "XREAD STREAMS a 2-0"), Value::Nil);
    // BLOCK with nothing to serve: the null array until blocking is wired.
    assert_eq!(run(&mut c, "XREAD BLOCK 10 STREAMS a 2-0"), Value::Nil);
    assert_eq!(
        run(&mut c, "XREAD BLOCK -1 STREAMS a 0"),
        err("ERR timeout is negative")
    );
    assert_eq!(
        run(&mut c, "XREAD STREAMS a b 0"),
        err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
    );
    assert_eq!(
        run(&mut c, "XREAD STREAMS a >"),
        err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
    );
}

#[test]
fn groups_deliver_once_and_replay_history() {
    let mut c = conn();
    delivered(&mut c);
    assert_eq!(
        run(&mut c, "XREADGROUP GROUP g bob STREAMS s >"),
        Value::Nil
    );
    assert_eq!(
        run(&mut c, "XREADGROUP GROUP g alice COUNT 1 STREAMS s 1-0"),
        arr(vec![arr(vec![
            bulk("s"),
            arr(vec![entry("2-0", &["f", "2"])])
        ])])
    );
    assert_eq!(run(&mut c, "XACK s g 1-0 2-0 9-0"), int(2));
    assert_eq!(run(&mut c, "XDEL s 3-0"), int(1));
    // A pending entry deleted from the stream comes back without fields.
    assert_eq!(
        run(&mut c, "XREADGROUP GROUP g alice STREAMS s 0"),
        arr(vec![arr(vec![
            bulk("s"),
            arr(vec![arr(vec![bulk("3-0"), Value::Nil])])
        ])])
    );
    assert_eq!(
        run(&mut c, "XREADGROUP GROUP nogroup c STREAMS s >"),
        err("NOGROUP No such key 's' or consumer group 'nogroup' in XREADGROUP with GROUP option")
    );
    assert_eq!(
        run(&mut c, "XGROUP CREATE s g 0"),
        err("BUSYGROUP Consumer Group name already exists")
    );
    assert_eq!(
        run(&mut c, "XGROUP CREATE nosuch g 0"),
        err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
    );
    assert_eq!(
        run(&mut c, "XGROUP SETID s nogroup 0"),
        err("NOGROUP No such consumer group 'nogroup' for key name 's'")
    );
    assert_eq!(
        run(&mut c, "XGROUP CREATE s g2 0 FOO"),
        err("ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.")
    );
    assert_eq!(run(&mut c, "XGROUP DELCONSUMER s g alice"), int(1));
    assert_eq!(
        run(&mut c, "XPENDING s g"),
        arr(vec![int(0), Value::Nil, Value::Nil, Value::Nil])
    );
}

#[test]
fn pending_idle_times_follow_the_clock() {
    let (clock, mut c) = clocked(10_000);
    delivered(&mut c);
    clock.advance(Duration::from_millis(250));
    assert_eq!(
        run(&mut c, "XPENDING s g - + 10"),
        arr(vec![
            arr(vec![bulk("1-0"), bulk("alice"), int(250), int(1)]),
            arr(vec![bulk("2-0"), bulk("alice"), int(250), int(1)]),
            arr(vec![bulk("3-0"), bulk("alice"), int(250), int(1)]),
        ])
    );
    assert_eq!(run(&mut c, "XPENDING s g IDLE 300 - + 10"), empty());
    assert_eq!(
        run(&mut c, "XPENDING s g"),
        arr(vec![
            int(3),
            bulk("1-0"),
            bulk("3-0"),
            arr(vec![bulks(&["alice", "3"])])
        ])
    );
    // Too recent to claim; then old enough.
    assert_eq!(run(&mut c, "XCLAIM s g bob 300 1-0 JUSTID"), empty());
    clock.advance(Duration::from_millis(100));
    assert_eq!(
        run(&mut c, "XCLAIM s g bob 300 1-0 JUSTID"),
        bulks(&["1-0"])
    );
    assert_eq!(
        run(&mut c, "XCLAIM s g bob 0 2-0 IDLE 50 RETRYCOUNT 9"),
        arr(vec![entry("2-0", &["f", "2"])])
    );
    assert_eq!(
        run(&mut c, "XPENDING s g - + 10 bob"),
        arr(vec![
            arr(vec![bulk("1-0"), bulk("bob"), int(0), int(1)]),
            arr(vec![bulk("2-0"), bulk("bob"), int(50), int(9)]),
        ])
    );
    // XAUTOCLAIM takes what is idle long enough, and says where to go on.
    assert_eq!(
        run(&mut c, "XAUTOCLAIM s g carol 300 0 COUNT 1 JUSTID"),
        arr(vec![bulk("0-0"), bulks(&["3-0"]), empty()])
    );
    clock.advance(Duration::from_millis(40));
    let consumers = run(&mut c, "XINFO CONSUMERS s g");
    let Value::Array(list) = &consumers else {
        panic!("{consumers:?}");
    };
    assert_eq!(field(&list[0], "name"), bulk("alice"));
    assert_eq!(field(&list[0], "idle"), int(390));
    assert_eq!(field(&list[1], "name"), bulk("bob"));
    assert_eq!(field(&list[1], "pending"), int(2));
    assert_eq!(field(&list[1], "idle"), int(40));
    let full = run(&mut c, "XINFO STREAM s FULL");
    let Value::Array(groups) = field(&full, "groups") else {
        panic!("{full:?}");
    };
    let Value::Array(pending) = field(&groups[0], "pending") else {
        panic!("{groups:?}");
    };
    assert_eq!(
        pending[2],
        arr(vec![bulk("3-0"), bulk("carol"), int(10_350), int(1)])
    );
}

#[test]
fn xinfo_counts_and_lag() {
    let mut c = conn();
    delivered(&mut c);
    let info = run(&mut c, "XINFO STREAM s");
    assert_eq!(field(&info, "length"), int(3));
    assert_eq!(field(&info, "radix-tree-keys"), int(1));
    assert_eq!(field(&info, "last-generated-id"), bulk("3-0"));
    assert_eq!(field(&info, "first-entry"), entry("1-0", &["f", "1"]));
    assert_eq!(field(&info, "groups"), int(1));
    let groups = run(&mut c, "XINFO GROUPS s");
    let Value::Array(list) = &groups else {
        panic!("{groups:?}");
    };
    assert_eq!(field(&list[0], "entries-read"), int(3));
    assert_eq!(field(&list[0], "lag"), int(0));
    run(&mut c, "XGROUP CREATE s late 0");
    run(&mut c, "XDEL s 2-0");
    let groups = run(&mut c, "XINFO GROUPS s");
    let Value::Array(list) = &groups else {
        panic!("{groups:?}");
    };
    // A deletion ahead of the group's position makes its lag unknown.
    assert_eq!(field(&list[1], "entries-read"), Value::Nil);
    assert_eq!(field(&list[1], "lag"), Value::Nil);
    assert_eq!(run(&mut c, "XINFO STREAM nosuch"), err("ERR no such key"));
    assert_eq!(
        run(&mut c, "XINFO HELP extra"),
        err("ERR wrong number of arguments for 'xinfo|help' command")
    );
}

#[test]
fn xsetid_checks() {
    let mut c = conn();
    assert_eq!(run(&mut c, "XSETID s 1-1"), err("ERR no such key"));
    run(&mut c, "XADD s 5-0 f v");
    assert_eq!(
        run(&mut c, "XSETID s 4-0"),
        err("ERR The ID specified in XSETID is smaller than the target stream top item")
    );
    assert_eq!(
        run(&mut c, "XSETID s 6-0 ENTRIESADDED 0"),
        err("ERR The entries_added specified in XSETID is smaller than the target stream length")
    );
    assert_eq!(
        run(&mut c, "XSETID s 9-0 ENTRIESADDED 4 MAXDELETEDID 2-0"),
        Value::Okay
    );
    let info = run(&mut c, "XINFO STREAM s");
    assert_eq!(field(&info, "last-generated-id"), bulk("9-0"));
    assert_eq!(field(&info, "entries-added"), int(4));
    assert_eq!(field(&info, "max-deleted-entry-id"), bulk("2-0"));
}

#[test]
fn writes_touch_watched_keys_only_when_redis_does() {
    let setup = ["XADD s 1-0 f v", "XGROUP CREATE s g 0"];
    assert_watch(&setup, "s", "XADD s 2-0 f v", true);
    assert_watch(&setup, "s", "XDEL s 1-0", true);
    assert_watch(&setup, "s", "XDEL s 9-0", false);
    assert_watch(&setup, "s", "XTRIM s MAXLEN 0", true);
    assert_watch(&setup, "s", "XTRIM s MAXLEN 5", false);
    assert_watch(&setup, "s", "XREADGROUP GROUP g c STREAMS s >", false);
    assert_watch(&setup, "s", "XRANGE s - +", false);
    assert_watch(&[], "s", "XGROUP CREATE s g $ MKSTREAM", true);
}

#[test]
fn scripts_may_not_block_on_streams() {
    let mut c = conn();
    run(&mut c, "XGROUP CREATE s g $ MKSTREAM");
    assert_eq!(
        run_args(
            &mut c,
            &[
                "EVAL",
                "return redis.pcall('xread','STREAMS','s','$')",
                "1",
                "s"
            ]
        ),
        Value::Nil
    );
    assert_eq!(
        run_args(
            &mut c,
            &[
                "EVAL",
                "return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')",
                "1",
                "s"
            ]
        ),
        err("ERR xread command is not allowed with BLOCK option from scripts")
    );
    assert_eq!(
        run_args(
            &mut c,
            &[
                "EVAL",
                "return redis.pcall('XREADGROUP','group','g','c','BLOCK',0,'STREAMS','s','>')",
                "1",
                "s"
            ]
        ),
        err("ERR XREADGROUP command is not allowed with BLOCK option from scripts")
    );
    // An earlier error is the command's own.
    assert_eq!(
        run_args(
            &mut c,
            &[
                "EVAL",
                "return redis.pcall('xread','COUNT','x','BLOCK',0,'STREAMS','s','$')",
                "0"
            ]
        ),
        err(NOT_INT)
    );
}
