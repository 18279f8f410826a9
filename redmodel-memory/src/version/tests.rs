//! What each version reports and which commands it knows, against
//! redis-server 7.0.15 and 7.4.1's replies.

use redis::Value;

use crate::command::test_util::{bulk, clocked, clocked_74, err, int, run};

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
