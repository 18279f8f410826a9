//! EVAL and friends against the replies redis-server 7.0.15 gave to the
//! same scripts (RESP2; texts copied from the wire).

use redis::Value;

use crate::command::test_util::{bulk, bulks, conn, err, int, ints, run, run_args};

fn eval(c: &mut crate::Connection, script: &str) -> Value {
    run_args(c, &["EVAL", script, "0"])
}

#[test]
fn reply_conversion_lua_to_redis() {
    let mut c = conn();
    assert_eq!(eval(&mut c, "return 3.99"), int(3));
    assert_eq!(eval(&mut c, "return -3.99"), int(-3));
    assert_eq!(eval(&mut c, "return 1e20"), int(i64::MIN));
    assert_eq!(eval(&mut c, "return 'x'"), bulk("x"));
    assert_eq!(eval(&mut c, "return true"), int(1));
    assert_eq!(eval(&mut c, "return false"), Value::Nil);
    assert_eq!(eval(&mut c, "return nil"), Value::Nil);
    assert_eq!(eval(&mut c, "return"), Value::Nil);
    assert_eq!(
        eval(&mut c, "return {1,2,3,'ciao',{1,2},nil,5}"),
        Value::Array(vec![int(1), int(2), int(3), bulk("ciao"), ints(&[1, 2])])
    );
    assert_eq!(
        eval(&mut c, "return {true,false,1}"),
        Value::Array(vec![int(1), Value::Nil, int(1)])
    );
    assert_eq!(eval(&mut c, "return {a=1}"), Value::Array(vec![]));
    assert_eq!(eval(&mut c, "return {ok=5}"), Value::Array(vec![]));
    assert_eq!(eval(&mut c, "return {ok='x', err='y'}"), err("y"));
    assert_eq!(
        eval(&mut c, "return {ok='x'}"),
        Value::SimpleString("x".into())
    );
    assert_eq!(eval(&mut c, "return {err='My Error'}"), err("My Error"));
    assert_eq!(eval(&mut c, "return {err='-x y'}"), err("-x y"));
    assert_eq!(
        eval(&mut c, "return redis.error_reply('-My Error')"),
        err("My Error")
    );
    assert_eq!(
        eval(&mut c, "return redis.error_reply('My Error')"),
        err("My Error")
    );
    // A message without a code gets ERR's, as Redis 7.0 gives it.
    assert_eq!(
        eval(&mut c, "return redis.error_reply('CHANGED')"),
        err("ERR CHANGED")
    );
    assert_eq!(
        eval(&mut c, "return redis.error_reply('-CHANGED')"),
        err("ERR CHANGED")
    );
    assert_eq!(
        eval(&mut c, "return redis.status_reply('FINE')"),
        Value::SimpleString("FINE".into())
    );
    assert_eq!(
        eval(&mut c, "return redis.error_reply({})"),
        err("ERR wrong number or type of arguments")
    );
    assert_eq!(eval(&mut c, "return {1,2,3}, 5"), ints(&[1, 2, 3]));
}

#[test]
fn reply_conversion_redis_to_lua() {
    let mut c = conn();
    assert_eq!(eval(&mut c, "return redis.call('get','nokey')"), Value::Nil);
    assert_eq!(
        eval(&mut c, "return type(redis.call('get','nokey'))"),
        bulk("boolean")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('set','q','1')"),
        Value::Okay
    );
    assert_eq!(
        eval(
            &mut c,
            "local t = redis.call('set','q','1'); return t['ok']"
        ),
        bulk("OK")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('hgetall','nohash')"),
        Value::Array(vec![])
    );
    assert_eq!(
        eval(&mut c, "return redis.call('set','k',1.5)"),
        Value::Okay
    );
    assert_eq!(eval(&mut c, "return redis.call('get','k')"), bulk("1.5"));
    run(&mut c, "SET s a");
    assert_eq!(
        eval(&mut c, "return redis.pcall('incr','s').err"),
        bulk("ERR value is not an integer or out of range")
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('incr','s')"),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run_args(
            &mut c,
            &[
                "EVAL",
                "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}",
                "2",
                "k1",
                "k2",
                "a1",
                "a2"
            ]
        ),
        bulks(&["k1", "k2", "a1", "a2"])
    );
}

#[test]
fn errors_carry_the_script_and_line() {
    let mut c = conn();
    run(&mut c, "SET s a");
    assert_eq!(
        eval(&mut c, "return redis.call('incr','s')"),
        err("ERR value is not an integer or out of range script: c243b9f46db13ba8f69da41b45a77708832babed, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "\n\nlocal a = 1\nreturn redis.call('incr','s')"),
        err("ERR value is not an integer or out of range script: 38f4ead62aef28f75889b66b9e9e2c07a2f0cf04, on @user_script:4.")
    );
    assert_eq!(
        eval(&mut c, "error('boom')"),
        err("ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "error({err='My Error'})"),
        err("My Error script: e115b36aa4ca34249363168860134d6f8b667d30, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return nil + 1"),
        err("ERR user_script:1: attempt to perform arithmetic on a nil value script: d13bc48d895ba57f297c4db70c1d256548a54e2d, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return ("),
        err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
    );
    assert_eq!(
        eval(&mut c, "return redis.sha1hex()"),
        err("ERR wrong number of arguments script: 3c7ce947ae74a835cc575b6ee87fb27503cb7ba4, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.log()"),
        err("ERR redis.log() requires two arguments or more. script: 28e28bf25123668ac541f5eec91bf7ad3d2fe0bd, on @user_script:1.")
    );
}

#[test]
fn refused_calls() {
    let mut c = conn();
    assert_eq!(
        eval(&mut c, "return redis.call('nosuch')"),
        err("ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.call()"),
        err("ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('eval','return 1','0')"),
        err("ERR This Redis command is not allowed from script script: 1e5046f3a9119d3dc9cf5824428b6d9fedd305d2, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('multi')"),
        err("ERR This Redis command is not allowed from script script: c329a1a294be6bf95b44144f7502610661ae925a, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('get')"),
        err("ERR Wrong number of args calling Redis command from script script: f187dee77f607f7cff00bbabc9df38507582c78d, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('set',{},1)"),
        err("ERR Lua redis lib command arguments must be strings or integers")
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('nosuch').err"),
        bulk("ERR Unknown Redis command called from script")
    );
    assert_eq!(
        run_args(&mut c, &["EVAL_RO", "return redis.call('set','x','1')", "0"]),
        err("ERR Write commands are not allowed from read-only scripts. script: 8b2ae6dd76cda7fc3e27f97431ae27d7b08a221d, on @user_script:1.")
    );
    assert_eq!(
        run_args(&mut c, &["EVAL_RO", "return redis.call('get','x')", "0"]),
        Value::Nil
    );
}

#[test]
fn sandbox() {
    let mut c = conn();
    assert_eq!(
        eval(&mut c, "x=1"),
        err("ERR user_script:1: Attempt to modify a readonly table script: 7caf6056913504f0508c65faf2dc3f94ff65bcfd, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "redis.call = nil"),
        err("ERR user_script:1: Attempt to modify a readonly table script: 2786c35ed73d3860851cf52e0b5dfbbc0bdb4803, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return os"),
        err("ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: f03b5ad6e7d58786b6a5e879efbea4a4408f5c2f, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return loadfile"),
        err("ERR user_script:1: Script attempted to access nonexistent global variable 'loadfile' script: a08fbe72c95f67027cc9b6349f5d335b598397b7, on @user_script:1.")
    );
    assert_eq!(eval(&mut c, "local x = 5"), Value::Nil);
    assert_eq!(eval(&mut c, "return rawget(_G, 'x')"), Value::Nil);
    assert_eq!(eval(&mut c, "return loadstring('return 1')()"), int(1));
    assert_eq!(eval(&mut c, "return redis.REDIS_VERSION"), bulk("7.0.15"));
    assert_eq!(
        eval(&mut c, "return redis.sha1hex('')"),
        bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
    );
}

#[test]
fn cjson() {
    let mut c = conn();
    assert_eq!(
        eval(&mut c, "return cjson.encode({1,2,{a=1}})"),
        bulk("[1,2,{\"a\":1}]")
    );
    assert_eq!(
        eval(&mut c, "return cjson.encode({1,nil,3})"),
        bulk("[1,null,3]")
    );
    assert_eq!(
        eval(&mut c, "return cjson.encode('a\"b/')"),
        bulk("\"a\\\"b\\/\"")
    );
    assert_eq!(
        eval(&mut c, "return cjson.encode({a={}})"),
        bulk("{\"a\":{}}")
    );
    assert_eq!(eval(&mut c, "return cjson.encode(1e20)"), bulk("1e+20"));
    assert_eq!(
        eval(&mut c, "return cjson.encode(12345678901)"),
        bulk("12345678901")
    );
    assert_eq!(
        eval(&mut c, "return cjson.decode('[1,2,{\"a\":3.5}]')[3].a"),
        int(3)
    );
    assert_eq!(
        eval(&mut c, "return cjson.decode('null') == cjson.null"),
        int(1)
    );
    assert_eq!(
        eval(&mut c, "return cjson.decode('12345678901')"),
        int(12345678901)
    );
}

#[test]
fn numkeys_and_script_cache() {
    let mut c = conn();
    assert_eq!(
        run_args(&mut c, &["EVAL", "return 1", "2", "a"]),
        err("ERR Number of keys can't be greater than number of args")
    );
    assert_eq!(
        run_args(&mut c, &["EVAL", "return 1", "-1"]),
        err("ERR Number of keys can't be negative")
    );
    assert_eq!(
        run_args(&mut c, &["EVAL", "return 1", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run(&mut c, "EVALSHA ffffffffffffffffffffffffffffffffffffffff 0"),
        err("NOSCRIPT No matching script. Please use EVAL.")
    );
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    assert_eq!(run_args(&mut c, &["SCRIPT", "LOAD", "return 1"]), bulk(sha));
    assert_eq!(
        run(&mut c, &format!("EVALSHA {} 0", sha.to_uppercase())),
        int(1)
    );
    assert_eq!(
        run(&mut c, &format!("SCRIPT EXISTS {sha} ffff")),
        ints(&[1, 0])
    );
    assert_eq!(
        run(&mut c, "SCRIPT FLUSH x"),
        err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    );
    assert_eq!(run(&mut c, "SCRIPT FLUSH ASYNC"), Value::Okay);
    assert_eq!(run(&mut c, &format!("SCRIPT EXISTS {sha}")), ints(&[0]));
    assert_eq!(
        run(&mut c, "SCRIPT KILL"),
        err("NOTBUSY No scripts in execution right now.")
    );
    assert_eq!(
        run(&mut c, "SCRIPT x"),
        err("ERR unknown subcommand 'x'. Try SCRIPT HELP.")
    );
    assert_eq!(
        run(&mut c, "SCRIPT"),
        err("ERR wrong number of arguments for 'script' command")
    );
    // EVAL caches its script too.
    eval(&mut c, "return 1");
    assert_eq!(run(&mut c, &format!("SCRIPT EXISTS {sha}")), ints(&[1]));
}

#[test]
fn select_in_a_script_stays_in_the_script() {
    let mut c = conn();
    assert_eq!(
        eval(
            &mut c,
            "redis.call('select','1'); redis.call('set','k','v'); return redis.call('get','k')"
        ),
        bulk("v")
    );
    assert_eq!(run(&mut c, "GET k"), Value::Nil);
    run(&mut c, "SELECT 1");
    assert_eq!(run(&mut c, "GET k"), bulk("v"));
}

#[test]
fn eval_is_queued_in_multi() {
    let mut c = conn();
    run(&mut c, "MULTI");
    assert_eq!(
        run_args(
            &mut c,
            &["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"]
        ),
        Value::SimpleString("QUEUED".into())
    );
    run(&mut c, "INCR n");
    assert_eq!(run(&mut c, "EXEC"), ints(&[1, 2]));
}

#[test]
fn script_writes_abort_a_watching_exec() {
    let engine = crate::Engine::new();
    let mut a = engine.connection();
    let mut b = engine.connection();
    run(&mut a, "WATCH k");
    run(&mut a, "MULTI");
    run(&mut a, "SET other 1");
    eval(&mut b, "return redis.call('set','k','v')");
    assert_eq!(run(&mut a, "EXEC"), Value::Nil);
    // A read-only script does not.
    run(&mut a, "WATCH k");
    run(&mut a, "MULTI");
    eval(&mut b, "return redis.call('get','k')");
    assert_eq!(run(&mut a, "EXEC"), Value::Array(vec![]));
}

#[test]
fn numbers_as_command_arguments_print_as_redis_prints_them() {
    // luaArgsToRedisArgv: "%.17g", not Lua's own "%.14g" (texts from
    // redis-server 7.0.15).
    let mut c = conn();
    for (number, text) in [
        ("0.1", "0.10000000000000001"),
        ("3", "3"),
        ("1e20", "1e+20"),
        ("123456789012345678", "1.2345678901234568e+17"),
        ("-0.5e-300", "-5.0000000000000001e-301"),
        ("1/0", "inf"),
    ] {
        let script = format!("redis.call('set', 'x', {number}) return redis.call('get', 'x')");
        assert_eq!(eval(&mut c, &script), bulk(text), "{number}");
    }
    assert_eq!(
        eval(
            &mut c,
            "redis.call('set', 'y', 10) return redis.call('incrby', 'y', 7.0)"
        ),
        int(17)
    );
}

/// `redis.setresp(3)`: the script's commands reply in RESP3 and are
/// converted as Redis 7.0.15 converts them; the RESP3 tables a script
/// returns reach a RESP2 caller lowered (replies checked on redis-server
/// 7.0.15, in both protocols).
#[test]
fn resp3_conversions() {
    let mut c = conn();
    run(&mut c, "HSET h a 1");
    run(&mut c, "SADD s x");
    run(&mut c, "ZADD z 1.5 a");
    let resp3 =
        |c: &mut crate::Connection, body: &str| eval(c, &format!("redis.setresp(3); {body}"));
    assert_eq!(
        resp3(&mut c, "return redis.call('hgetall', 'h')['map']['a']"),
        bulk("1")
    );
    assert_eq!(
        resp3(&mut c, "return redis.call('smembers', 's')['set']['x']"),
        int(1)
    );
    assert_eq!(
        resp3(
            &mut c,
            "return tostring(redis.call('zscore', 'z', 'a')['double'])"
        ),
        bulk("1.5")
    );
    assert_eq!(
        resp3(&mut c, "return type(redis.call('get', 'nokey'))"),
        bulk("nil")
    );
    assert_eq!(
        eval(&mut c, "return type(redis.call('get', 'nokey'))"),
        bulk("boolean")
    );
    // Lowered for this RESP2 caller.
    assert_eq!(
        resp3(&mut c, "return redis.call('hgetall', 'h')"),
        bulks(&["a", "1"])
    );
    assert_eq!(eval(&mut c, "return {double=3.5}"), bulk("3.5"));
    assert_eq!(eval(&mut c, "return {set={a=true}}"), bulks(&["a"]));
    assert_eq!(resp3(&mut c, "return true"), int(1));
    assert_eq!(resp3(&mut c, "return false"), int(0));
    assert_eq!(eval(&mut c, "return false"), Value::Nil);
    assert_eq!(
        eval(
            &mut c,
            "redis.setresp(2.5); return redis.call('zscore', 'z', 'a')"
        ),
        bulk("1.5")
    );
    assert!(
        matches!(eval(&mut c, "redis.setresp(4)"), Value::ServerError(e)
        if e.details().is_some_and(|d| d.starts_with("RESP version must be 2 or 3.")))
    );
    // A RESP3 caller gets the types.
    run(&mut c, "HELLO 3");
    assert_eq!(eval(&mut c, "return {double=3.5}"), Value::Double(3.5));
    assert_eq!(
        eval(&mut c, "return {map={a=1}}"),
        Value::Map(vec![(bulk("a"), int(1))])
    );
    assert_eq!(eval(&mut c, "return false"), Value::Nil);
    assert_eq!(resp3(&mut c, "return false"), Value::Boolean(false));
    assert_eq!(
        resp3(
            &mut c,
            "return redis.call('zrange', 'z', 0, -1, 'withscores')"
        ),
        Value::Array(vec![Value::Array(vec![bulk("a"), Value::Double(1.5)])])
    );
}

/// A table that contains itself: nested arrays ending in Redis's error,
/// not a stack overflow.
#[test]
fn recursive_tables_end_in_an_error() {
    let mut c = conn();
    let mut reply = eval(&mut c, "local a = {}; local b = {a}; a[1] = b; return a");
    let mut depth = 0;
    while let Value::Array(mut items) = reply {
        assert_eq!(items.len(), 1);
        reply = items.remove(0);
        depth += 1;
    }
    assert_eq!(reply, err("ERR reached lua stack limit"));
    assert!(depth > 100, "{depth}");
}

/// The hex of what a script packs (the replies of redis-server 7.0.15).
fn packed_hex(c: &mut crate::Connection, pack: &str) -> Value {
    eval(
        c,
        &format!(
            "local e = {pack} local h = '' for i = 1, #e do h = h .. string.format('%02x', string.byte(e, i)) end return h"
        ),
    )
}

#[test]
fn embedded_libraries() {
    let mut c = conn();
    assert_eq!(
        eval(
            &mut c,
            "return {bit.tobit(4294967295), bit.bor(1, 2, 4), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4)}"
        ),
        ints(&[-1, 7, -2_147_483_648, 15, -16])
    );
    assert_eq!(
        eval(&mut c, "return {bit.tohex(65535), bit.tohex(255, -4)}"),
        bulks(&["0000ffff", "00FF"])
    );
    assert_eq!(
        packed_hex(&mut c, "cmsgpack.pack(0.1)"),
        bulk("cb3fb999999999999a")
    );
    assert_eq!(
        packed_hex(&mut c, "cmsgpack.pack(-1099511627776)"),
        bulk("d3ffffff0000000000")
    );
    assert_eq!(
        eval(
            &mut c,
            "local off, a = cmsgpack.unpack_one(cmsgpack.pack(1, 2), 0) return {off, a}"
        ),
        ints(&[1, 1])
    );
    assert_eq!(
        packed_hex(&mut c, "struct.pack('>iBhd', 1, 255, -2, 1.5)"),
        bulk("00000001fffffe3ff8000000000000")
    );
    assert_eq!(
        eval(
            &mut c,
            "return {struct.unpack('<I2s', struct.pack('<I2s', 513, 'hi'))}"
        ),
        Value::Array(vec![int(513), bulk("hi"), int(6)])
    );
    assert_eq!(eval(&mut c, "return struct.size('!8bd')"), int(16));
    assert_eq!(
        eval(&mut c, "cjson.encode_max_depth(1) local ok = pcall(cjson.encode, {{1}}) cjson.encode_max_depth(1000) return ok"),
        Value::Nil
    );
}

/// Library functions Redis writes in C: their errors name the line of a
/// script that calls them in tail position, `pcall` catches them as the
/// error's text, and their arguments are checked as Redis checks them
/// (texts from redis-server 7.0.15).
#[test]
fn library_functions_raise_as_redis_does() {
    let mut c = conn();
    assert_eq!(
        eval(&mut c, "return redis.setresp(4)"),
        err("ERR RESP version must be 2 or 3. script: 921c0a48021d97dfd5884aeea41875972c7804d9, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.log(99, 'x')"),
        err("ERR Invalid debug level. script: d1ccc394357733a87e4372af693b49d6582b5c58, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.acl_check_cmd('nosuch')"),
        err("ERR Invalid command passed to redis.acl_check_cmd() script: d2491587bab5149c93be0dce4426f7a06ba9e1a1, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.acl_check_cmd('config', 'get')"),
        Value::Int(1)
    );
    assert_eq!(
        eval(&mut c, "local ok, e = pcall(redis.setresp, 4) return e"),
        bulk("ERR RESP version must be 2 or 3.")
    );
    assert_eq!(
        eval(&mut c, "local ok, e = pcall(redis.call) return e"),
        bulk("ERR Please specify at least one argument for this redis lib call")
    );
    assert_eq!(eval(&mut c, "redis.setresp(3.9) return 1"), Value::Int(1));
    // luaArgsToRedisArgv's "%.17g": glibc prints x86's 0/0 as -nan.
    assert_eq!(
        eval(
            &mut c,
            "redis.call('set', 'k', 0/0) return redis.call('get', 'k')"
        ),
        bulk("-nan")
    );
}

/// `{big_number = text}`: a bulk string for a RESP2 client (RESP3's big
/// number otherwise), CR and LF turned to spaces; not a string: an array.
#[test]
fn big_number_replies() {
    let mut c = conn();
    assert_eq!(
        eval(&mut c, "return {big_number = '1\\r\\n2'}"),
        bulk("1  2")
    );
    assert_eq!(
        eval(&mut c, "return {big_number = 5}"),
        Value::Array(vec![])
    );
    run(&mut c, "HELLO 3");
    assert_eq!(
        eval(&mut c, "return {big_number = '123'}"),
        Value::BigNumber(b"123".to_vec())
    );
}
