//! What each version reports, which commands it knows, and what it does
//! where Redis 7.2 changed behaviour, against redis-server 7.0.15 and
//! 7.4.1's replies.

use redis::Value;

use crate::command::test_util::{bulk, bulks, clocked, clocked_74, err, int, run, NOT_INT};

/// The field `name` of HELLO's reply (RESP2: a flat array of pairs).
fn hello_field(reply: Value, name: &str) -> Option<Value> {
    let Value::Array(items) = reply else {
        return None;
    };
    let at = items.iter().position(|k| *k == bulk(name))?;
    items.get(at + 1).cloned()
}

#[test]
fn each_version_reports_itself() {
    for ((_, mut c), version, number) in [
        (clocked(0), "7.0.15", 458_767),
        (clocked_74(0), "7.4.1", 459_777),
    ] {
        assert_eq!(
            hello_field(run(&mut c, "HELLO"), "version"),
            Some(bulk(version))
        );
        let Value::BulkString(info) = run(&mut c, "INFO server") else {
            panic!("INFO is not a bulk string");
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        assert!(
            info.contains(&format!("redis_version:{version}\r\n")),
            "{info}"
        );
        assert_eq!(
            run(&mut c, "EVAL return(redis.REDIS_VERSION) 0"),
            bulk(version)
        );
        assert_eq!(
            run(&mut c, "EVAL return(redis.REDIS_VERSION_NUM) 0"),
            int(number)
        );
        let lib =
            "#!lua name=v\nredis.register_function('v', function() return redis.REDIS_VERSION end)";
        let loaded = c.execute(&[b"FUNCTION", b"LOAD", lib.as_bytes()]);
        assert_eq!(loaded, bulk("v"));
        assert_eq!(run(&mut c, "FCALL v 0"), bulk(version));
    }
}

#[test]
fn commands_7_4_adds_are_unknown_to_7_0() {
    let (_, mut c) = clocked(0);
    assert_eq!(
        run(&mut c, "HEXPIRE h 10 fields 1 f"),
        err("ERR unknown command 'HEXPIRE', with args beginning with: 'h' '10' 'fields' '1' 'f' ")
    );
    assert_eq!(
        run(&mut c, "COMMAND INFO hexpire"),
        Value::Array(vec![Value::Nil])
    );
    assert_eq!(
        run(&mut c, "EVAL redis.call('httl','h','fields','1','f') 0"),
        err("ERR Unknown Redis command called from script script: 6599d259932e9207ec0ca9bb4d58e0999ec5d6b4, on @user_script:1.")
    );
    assert_eq!(run(&mut c, "MULTI"), Value::Okay);
    assert_eq!(
        run(&mut c, "HPERSIST h FIELDS 1 f"),
        err("ERR unknown command 'HPERSIST', with args beginning with: 'h' 'FIELDS' '1' 'f' ")
    );
    run(&mut c, "DISCARD");
}

fn encoding(c: &mut crate::Connection, key: &str) -> Value {
    run(c, &format!("OBJECT ENCODING {key}"))
}

#[test]
fn small_lists_are_listpacks_from_7_2_and_convert_both_ways() {
    let (_, mut old) = clocked(0);
    run(&mut old, "RPUSH l a b c");
    assert_eq!(encoding(&mut old, "l"), bulk("quicklist"));

    let (_, mut c) = clocked_74(0);
    run(&mut c, "RPUSH l a b c");
    assert_eq!(encoding(&mut c, "l"), bulk("listpack"));
    run(&mut c, "CONFIG SET list-max-listpack-size 3");
    run(&mut c, "RPUSH l d");
    assert_eq!(encoding(&mut c, "l"), bulk("quicklist"));
    // Back to a listpack at half the limit only.
    run(&mut c, "RPOP l 2");
    assert_eq!(encoding(&mut c, "l"), bulk("quicklist"));
    run(&mut c, "RPOP l");
    assert_eq!(encoding(&mut c, "l"), bulk("listpack"));
    // By size: one element past 8 kB, then replaced by a short one.
    run(&mut c, "CONFIG SET list-max-listpack-size -2");
    let big = "x".repeat(9000);
    run(&mut c, &format!("RPUSH big {big}"));
    assert_eq!(encoding(&mut c, "big"), bulk("quicklist"));
    run(&mut c, "LSET big 0 y");
    assert_eq!(encoding(&mut c, "big"), bulk("listpack"));
}

#[test]
fn lset_and_linsert_convert_a_full_listpack_before_they_know_the_element_goes_in() {
    let (_, mut c) = clocked_74(0);
    run(&mut c, "CONFIG SET list-max-listpack-size 3");
    // LSET replaces, yet converts as if it added (Redis 7.4.1 does so).
    run(&mut c, "RPUSH l a b c");
    assert_eq!(run(&mut c, "LSET l 0 x"), Value::Okay);
    assert_eq!(encoding(&mut c, "l"), bulk("quicklist"));
    // Even with the index out of range, and with the pivot missing.
    run(&mut c, "RPUSH m a b c");
    assert!(matches!(run(&mut c, "LSET m 9 x"), Value::ServerError(_)));
    assert_eq!(encoding(&mut c, "m"), bulk("quicklist"));
    run(&mut c, "RPUSH n a b c");
    assert_eq!(run(&mut c, "LINSERT n AFTER zz x"), int(-1));
    assert_eq!(encoding(&mut c, "n"), bulk("quicklist"));
    // Under the limit nothing converts.
    run(&mut c, "RPUSH o a b");
    run(&mut c, "LSET o 0 x");
    run(&mut c, "LINSERT o AFTER zz x");
    assert_eq!(encoding(&mut c, "o"), bulk("listpack"));
    // By size: the listpack's bytes (10 here) and the new element's
    // length, past 4096 bytes; the element replaced still counts, and a
    // listpack that a replacement leaves past the limit stays one.
    run(&mut c, "CONFIG SET list-max-listpack-size -1");
    for (len, want) in [(4086, "listpack"), (4087, "quicklist")] {
        run(&mut c, "DEL p");
        run(&mut c, "RPUSH p a");
        run(&mut c, &format!("LSET p 0 {}", "x".repeat(len)));
        assert_eq!(encoding(&mut c, "p"), bulk(want), "{len}");
    }
}

#[test]
fn sets_of_strings_are_listpacks_from_7_2() {
    let (_, mut old) = clocked(0);
    run(&mut old, "SADD s 1 a");
    assert_eq!(encoding(&mut old, "s"), bulk("hashtable"));
    assert_eq!(
        run(&mut old, "CONFIG SET set-max-listpack-entries 3"),
        err(
            "ERR Unknown option or number of arguments for CONFIG SET - 'set-max-listpack-entries'"
        )
    );
    assert_eq!(
        run(&mut old, "CONFIG GET set-max-listpack*"),
        Value::Array(vec![])
    );

    let (_, mut c) = clocked_74(0);
    run(&mut c, "SADD s 1 2");
    assert_eq!(encoding(&mut c, "s"), bulk("intset"));
    run(&mut c, "SADD s a");
    assert_eq!(encoding(&mut c, "s"), bulk("listpack"));
    assert_eq!(
        run(&mut c, "CONFIG GET set-max-listpack*"),
        bulks(&[
            "set-max-listpack-entries",
            "128",
            "set-max-listpack-value",
            "64"
        ])
    );
    run(&mut c, "CONFIG SET set-max-listpack-entries 3");
    run(&mut c, "SADD s b");
    assert_eq!(encoding(&mut c, "s"), bulk("hashtable"));
    // A long member goes straight to a table.
    run(&mut c, &format!("SADD t {}", "m".repeat(65)));
    assert_eq!(encoding(&mut c, "t"), bulk("hashtable"));
}

#[test]
fn zrank_takes_withscore_from_7_2() {
    let (_, mut old) = clocked(0);
    run(&mut old, "ZADD z 1 a 2 b");
    assert_eq!(
        run(&mut old, "ZRANK z b WITHSCORE"),
        err("ERR wrong number of arguments for 'zrank' command")
    );

    let (_, mut c) = clocked_74(0);
    run(&mut c, "ZADD z 1 a 2 b");
    assert_eq!(
        run(&mut c, "ZRANK z b withscore"),
        Value::Array(vec![int(1), bulk("2")])
    );
    assert_eq!(
        run(&mut c, "ZREVRANK z b WITHSCORE"),
        Value::Array(vec![int(0), bulk("2")])
    );
    assert_eq!(run(&mut c, "ZRANK z nope WITHSCORE"), Value::Nil);
    assert_eq!(run(&mut c, "ZRANK z b foo"), err("ERR syntax error"));
    assert_eq!(
        run(&mut c, "ZRANK z b withscore x"),
        err("ERR wrong number of arguments for 'zrank' command")
    );
}

#[test]
fn xread_plus_reads_the_last_entry_from_7_4() {
    let (_, mut old) = clocked(0);
    run(&mut old, "XADD x 1-1 a 1");
    assert_eq!(
        run(&mut old, "XREAD STREAMS x +"),
        err("ERR Invalid stream ID specified as stream command argument")
    );

    let (_, mut c) = clocked_74(0);
    run(&mut c, "XADD x 1-1 a 1");
    run(&mut c, "XADD x 2-1 b 2");
    assert_eq!(
        run(&mut c, "XREAD STREAMS x +"),
        Value::Array(vec![Value::Array(vec![
            bulk("x"),
            Value::Array(vec![Value::Array(vec![bulk("2-1"), bulks(&["b", "2"])])]),
        ])])
    );
    run(&mut c, "XGROUP CREATE e g $ MKSTREAM");
    assert_eq!(
        run(&mut c, "XREAD STREAMS e +"),
        err("ERR the stream last element ID is 0-0")
    );
    assert_eq!(
        run(&mut c, "XREADGROUP GROUP g c STREAMS e +"),
        err("ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.")
    );
}

#[test]
fn xreadgroup_meets_its_consumer_on_an_empty_read_from_7_2() {
    let (clock, mut c) = clocked_74(1_000);
    run(&mut c, "XGROUP CREATE s g $ MKSTREAM");
    run(&mut c, "XREADGROUP GROUP g alice STREAMS s >");
    clock.advance(std::time::Duration::from_millis(100));
    assert_eq!(
        run(&mut c, "XINFO CONSUMERS s g"),
        Value::Array(vec![Value::Array(vec![
            bulk("name"),
            bulk("alice"),
            bulk("pending"),
            int(0),
            bulk("idle"),
            int(100),
            bulk("inactive"),
            int(-1),
        ])])
    );
    run(&mut c, "XADD s 5-1 f v");
    run(&mut c, "XREADGROUP GROUP g alice STREAMS s >");
    clock.advance(std::time::Duration::from_millis(30));
    let Value::Array(consumers) = run(&mut c, "XINFO CONSUMERS s g") else {
        panic!("XINFO CONSUMERS is not an array");
    };
    assert_eq!(
        consumers.first().and_then(|c| match c {
            Value::Array(fields) => fields.get(7).cloned(),
            _ => None,
        }),
        Some(int(30))
    );
    assert_eq!(
        run(&mut c, "XREADGROUP GROUP g alice STREAMS s t >"),
        err("ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.")
    );
    let (_, mut old) = clocked(0);
    run(&mut old, "XGROUP CREATE s g $ MKSTREAM");
    run(&mut old, "XREADGROUP GROUP g alice STREAMS s >");
    assert_eq!(run(&mut old, "XINFO CONSUMERS s g"), Value::Array(vec![]));
}

#[test]
fn wait_runs_in_scripts_from_7_2() {
    let (_, mut old) = clocked(0);
    assert_eq!(
        run(&mut old, "EVAL return(redis.pcall('wait','1','0')) 0"),
        err("ERR This Redis command is not allowed from script")
    );
    let (_, mut c) = clocked_74(0);
    assert_eq!(
        run(&mut c, "EVAL return(redis.pcall('wait','1','0')) 0"),
        int(0)
    );
}

#[test]
fn xread_block_in_a_script_does_not_block_from_7_2() {
    let script = "EVAL return(redis.pcall('xread','BLOCK',0,'STREAMS','s','$')) 1 s";
    let (_, mut old) = clocked(0);
    assert_eq!(
        run(&mut old, script),
        err("ERR xread command is not allowed with BLOCK option from scripts")
    );
    let (_, mut c) = clocked_74(0);
    assert_eq!(run(&mut c, script), Value::Nil);
}

#[test]
fn scripts_have_os_clock_from_7_2() {
    let (_, mut old) = clocked(0);
    assert!(matches!(
        run(&mut old, "EVAL return(type(os)) 0"),
        Value::ServerError(_)
    ));
    let (_, mut c) = clocked_74(0);
    assert_eq!(
        run(&mut c, "EVAL return(type(os.clock())) 0"),
        bulk("number")
    );
}

#[test]
fn hscan_takes_novalues_from_7_4() {
    let (_, mut old) = clocked(0);
    run(&mut old, "HSET h a 1 b 2");
    assert_eq!(run(&mut old, "HSCAN h 0 NOVALUES"), err("ERR syntax error"));
    assert_eq!(run(&mut old, "SCAN 0 NOVALUES"), err("ERR syntax error"));
    let (_, mut c) = clocked_74(0);
    run(&mut c, "HSET h a 1 b 2");
    run(&mut c, "SADD s m");
    let scan = |items: &[&str]| Value::Array(vec![bulk("0"), bulks(items)]);
    assert_eq!(run(&mut c, "HSCAN h 0 novalues"), scan(&["a", "b"]));
    assert_eq!(
        run(&mut c, "HSCAN h 0 MATCH a NOVALUES COUNT 5"),
        scan(&["a"])
    );
    assert_eq!(run(&mut c, "HSCAN h 0 NOVALUES x"), err("ERR syntax error"));
    let only_hscan = err("ERR NOVALUES option can only be used in HSCAN");
    assert_eq!(run(&mut c, "SCAN 0 NOVALUES"), only_hscan);
    assert_eq!(run(&mut c, "SSCAN s 0 NOVALUES"), only_hscan);
    // A missing key answers before its options are read.
    assert_eq!(run(&mut c, "SSCAN nokey 0 NOVALUES"), scan(&[]));
}

#[test]
fn module_answers_as_a_server_without_modules() {
    for ((_, mut c), help) in [
        (clocked(0), "    Prints this help."),
        (clocked_74(0), "    Print this help."),
    ] {
        let Value::Array(lines) = run(&mut c, "MODULE HELP") else {
            panic!("MODULE HELP is not an array");
        };
        assert_eq!(
            lines.first(),
            Some(&Value::SimpleString(
                "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into()
            ))
        );
        assert_eq!(lines.len(), 11);
        assert_eq!(lines.last(), Some(&Value::SimpleString(help.into())));
        assert_eq!(run(&mut c, "MODULE LIST"), Value::Array(vec![]));
        let refused = err("ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.");
        assert_eq!(run(&mut c, "MODULE LOAD /nonexist"), refused);
        assert_eq!(run(&mut c, "MODULE UNLOAD foo"), refused);
        assert_eq!(
            run(&mut c, "MODULE LOADEX"),
            err("ERR wrong number of arguments for 'module|loadex' command")
        );
        assert_eq!(
            run(&mut c, "MODULE foo"),
            err("ERR unknown subcommand 'foo'. Try MODULE HELP.")
        );
    }
}

#[test]
fn bitcount_and_bitpos_read_their_arguments_before_the_key_from_7_2() {
    let (_, mut old) = clocked(0);
    assert_eq!(run(&mut old, "BITCOUNT s 0"), int(0));
    assert_eq!(run(&mut old, "BITPOS s 0 a b"), int(0));
    let (_, mut c) = clocked_74(0);
    for (line, error) in [
        ("BITCOUNT s 0", "ERR syntax error"),
        ("BITCOUNT s 0 1 hello", "ERR syntax error"),
        ("BITCOUNT s 0 1 hello hello2", "ERR syntax error"),
        ("BITCOUNT s a b", NOT_INT),
        ("BITPOS s 0 1 hello hello2", "ERR syntax error"),
        ("BITPOS s 0 0 1 hello", "ERR syntax error"),
        ("BITPOS s 0 a b", NOT_INT),
        ("BITPOS s b", NOT_INT),
    ] {
        assert_eq!(run(&mut c, line), err(error), "{line}");
    }
    assert_eq!(run(&mut c, "BITCOUNT s 0 5 BIT"), int(0));
    assert_eq!(run(&mut c, "BITPOS s 0 0 5"), int(0));
    assert_eq!(run(&mut c, "BITPOS s 1 0 5 BIT"), int(-1));
}

/// The INFO stats text of `c`.
fn stats(c: &mut crate::Connection) -> String {
    let Value::BulkString(info) = run(c, "INFO stats") else {
        panic!("INFO is not a bulk string");
    };
    String::from_utf8_lossy(&info).into_owned()
}

#[test]
fn info_counts_expired_fields_from_7_4() {
    let (_, mut old) = clocked(0);
    assert!(!stats(&mut old).contains("expired_subkeys"));
    let (clock, mut c) = clocked_74(0);
    assert!(stats(&mut c).contains("\r\nexpired_subkeys:0\r\nexpired_keys:0\r\n"));
    run(&mut c, "HSET h a 1 b 2 c 3");
    run(&mut c, "HPEXPIRE h 100 FIELDS 2 a b");
    assert_eq!(
        run(&mut c, "DEBUG LISTPACK h"),
        Value::SimpleString("Listpack structure printed on stdout".into())
    );
    clock.advance(std::time::Duration::from_millis(200));
    assert_eq!(run(&mut c, "HGET h a"), Value::Nil);
    assert!(stats(&mut c).contains("expired_subkeys:1\r\n"));
    run(&mut c, "HRANDFIELD h");
    assert!(stats(&mut c).contains("expired_subkeys:2\r\n"));
    run(&mut c, "CONFIG RESETSTAT");
    assert!(stats(&mut c).contains("expired_subkeys:0\r\n"));
}

/// The containers whose HELP the engine serves, each with redis-server
/// 7.0.15's and 7.4.1's replies to it (one line a simple string, as
/// `redis-cli --raw` prints them) checked in under `testdata/`.
macro_rules! help_texts {
    ($($name:literal => $file:literal),* $(,)?) => {
        &[$((
            $name,
            include_str!(concat!("testdata/redis-7.0.15/", $file)),
            include_str!(concat!("testdata/redis-7.4.1/", $file)),
        )),*]
    };
}

/// `(container, 7.0.15's HELP, 7.4.1's HELP)`.
const HELP_TEXTS: &[(&str, &str, &str)] = help_texts! {
    "ACL" => "acl-help.txt",
    "CLIENT" => "client-help.txt",
    "CLUSTER" => "cluster-help.txt",
    "COMMAND" => "command-help.txt",
    "CONFIG" => "config-help.txt",
    "DEBUG" => "debug-help.txt",
    "FUNCTION" => "function-help.txt",
    "LATENCY" => "latency-help.txt",
    "MEMORY" => "memory-help.txt",
    "MODULE" => "module-help.txt",
    "OBJECT" => "object-help.txt",
    "PUBSUB" => "pubsub-help.txt",
    "SCRIPT" => "script-help.txt",
    "SLOWLOG" => "slowlog-help.txt",
    "XGROUP" => "xgroup-help.txt",
    "XINFO" => "xinfo-help.txt",
};

/// `container HELP`'s lines, which must all be simple strings.
fn help_lines(c: &mut crate::Connection, container: &str) -> Vec<String> {
    let Value::Array(items) = run(c, &format!("{container} HELP")) else {
        panic!("{container} HELP is not an array");
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::SimpleString(line) => line,
            other => panic!("{container} HELP has a line {other:?}"),
        })
        .collect()
}

/// A client of an engine of `version` in cluster mode, where CLUSTER HELP
/// answers as on redis-server with `cluster-enabled yes`.
fn cluster_node(version: super::RedisVersion) -> crate::Connection {
    crate::Engine::new()
        .with_version(version)
        .with_cluster_mode()
        .connection()
}

/// Every container's HELP in `version`'s mode equals `expected`'s pick
/// of [`HELP_TEXTS`].
fn assert_help_replies(
    version: super::RedisVersion,
    expected: fn(&(&str, &'static str, &'static str)) -> &'static str,
) {
    let mut c = cluster_node(version);
    for texts in HELP_TEXTS {
        let container = texts.0;
        assert_eq!(
            help_lines(&mut c, container),
            expected(texts).lines().collect::<Vec<_>>(),
            "{container} HELP"
        );
    }
}

#[test]
fn help_replies_are_redis_7_4_1_lines_in_7_4_mode() {
    assert_help_replies(super::RedisVersion::V7_4, |t| t.2);
}

#[test]
fn help_replies_are_redis_7_0_15_lines_in_7_0_mode() {
    assert_help_replies(super::RedisVersion::V7_0, |t| t.1);
}
