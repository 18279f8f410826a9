//! Differential test, hand-written: command sequences aimed at the places
//! where a Redis clone usually goes wrong, run on the memory engine and on
//! a private redis-server, every reply compared.
//!
//! Each trap is a script, one command per line, in redis-cli syntax
//! (`"..."` quotes an argument, `""` is the empty one). A line may start
//! with `@N ` to run on client connection N (for WATCH), or with `~` to run
//! a SCAN-family command through a whole iteration. The real server is the
//! reference, so a script needs no expected replies.
//!
//! A script that uses a command the engine does not implement yet (a
//! family still being written) is skipped, and the test prints which: it
//! gets stronger by itself as the families land.

use redmodel_suite::diff::{engine_knows, parse_line, show, Args, Differ};
use redmodel_suite::private_server_or_skip;

/// A named script.
type Trap = (&'static str, &'static [&'static str]);

/// Scripts whose name starts with this run line by line: each line stands
/// alone, so a line whose command the engine lacks is skipped by itself
/// rather than the whole script.
const INDEPENDENT: &str = "each line: ";

/// One parsed line of a script.
struct Line {
    text: &'static str,
    conn: usize,
    whole_scan: bool,
    args: Args,
}

fn parse_script(lines: &[&'static str]) -> Vec<Line> {
    lines
        .iter()
        .map(|&text| {
            let mut rest = text.trim();
            let mut conn = 0;
            if let Some(after) = rest.strip_prefix('@') {
                let (n, tail) = after.split_once(' ').unwrap_or((after, ""));
                conn = n
                    .parse()
                    .unwrap_or_else(|_| panic!("bad connection in {text:?}"));
                rest = tail.trim_start();
            }
            let whole_scan = rest.starts_with('~');
            let rest = rest.trim_start_matches('~');
            let args = parse_line(rest).unwrap_or_else(|e| panic!("bad trap line: {e}"));
            Line {
                text,
                conn,
                whole_scan,
                args,
            }
        })
        .collect()
}

/// Runs every trap; fails listing every script where the engine and Redis
/// differ, each with its full transcript.
fn run_traps(test: &str, traps: &[Trap]) {
    let Some(server) = private_server_or_skip(test) else {
        return;
    };
    let mut differ = Differ::new(&server).expect("differ");
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut ran = 0;
    for (name, script) in traps {
        let lines = parse_script(script);
        let mut lacking: Vec<String> = Vec::new();
        for line in &lines {
            let Some(cmd) = line.args.first() else {
                continue;
            };
            let cmd = String::from_utf8_lossy(cmd).to_ascii_uppercase();
            if !lacking.contains(&cmd) && differ.real_knows(&cmd) && !engine_knows(&cmd) {
                lacking.push(cmd);
            }
        }
        let independent = name.starts_with(INDEPENDENT);
        if !lacking.is_empty() {
            skipped.push(format!("{name} (engine lacks {})", lacking.join(" ")));
            if !independent {
                continue;
            }
        }
        ran += 1;
        differ.reset();
        let mut transcript = String::new();
        let mut mismatches = 0;
        for line in &lines {
            let lacks = line.args.first().is_some_and(|c| {
                lacking.contains(&String::from_utf8_lossy(c).to_ascii_uppercase())
            });
            if lacks {
                transcript.push_str(&format!("     (skipped) {}\n", line.text));
                continue;
            }
            let result = if line.whole_scan {
                differ.scan_all(line.conn, &line.args)
            } else {
                differ.run(line.conn, &line.args)
            };
            match result {
                Ok(reply) => {
                    transcript.push_str(&format!("     {}  ->  {}\n", line.text, show(&reply)))
                }
                Err(m) => {
                    mismatches += 1;
                    transcript.push_str(&format!(
                        "  !! {}\n       redis:  {}\n       engine: {}\n",
                        line.text,
                        show(&m.expected),
                        show(&m.got)
                    ));
                }
            }
        }
        if mismatches > 0 {
            failures.push(format!(
                "trap `{name}`: {mismatches} difference(s)\n{transcript}"
            ));
        }
    }
    eprintln!("{test}: ran {ran} of {} traps", traps.len());
    if !skipped.is_empty() {
        eprintln!(
            "note: {test}: skipped {}:\n  {}",
            skipped.len(),
            skipped.join("\n  ")
        );
    }
    if !failures.is_empty() {
        panic!(
            "{test}: the engine differs from redis-server in {} trap(s):\n\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------

/// SORT: the weights strtod accepts or refuses, ties, patterns, LIMIT
/// windows, STORE, and the order of the errors. (A set BY nosort without
/// STORE, and ALPHA BY ties, have no defined order and stay out.)
const SORT: &[Trap] = &[
    (
        "numeric weights as strtod reads them",
        &[
            r#"RPUSH l " 5" "" 3 0x10 inf -inf +2 1e2 .5 -0"#,
            "SORT l",
            "SORT l DESC",
            "SORT l LIMIT 2 3",
            "SORT l DESC LIMIT -1 2",
            "RPUSH bad 1 1e-310",
            "SORT bad",
            "SORT bad BY nosort",
            "SORT bad STORE dst",
            "EXISTS dst",
            r#"RPUSH bad2 1 "5 ""#,
            "SORT bad2",
            r#"RPUSH bad3 " ""#,
            "SORT bad3",
            "RPUSH bad4 nan",
            "SORT bad4",
            "RPUSH bad5 1e400",
            "SORT bad5",
            "SORT bad5 ALPHA",
        ],
    ),
    (
        "ties break on the element's bytes, DESC reverses everything",
        &[
            "RPUSH l b a 1 c 01 1.0",
            "MSET w_a 1 w_b 1 w_c 0",
            "SORT l BY w_*",
            "SORT l BY w_* DESC",
            "SORT l BY w_* LIMIT 1 2",
            "SORT l BY w_* DESC LIMIT 1 2",
            "SORT l ALPHA",
            "SORT l ALPHA DESC",
            "SADD s 10 9 b B a A",
            "SORT s ALPHA",
            "SORT s ALPHA STORE dst",
            "LRANGE dst 0 -1",
            "SORT s",
            "ZADD z 1 x 1 y 0 zz",
            "SORT z ALPHA DESC",
            "SORT z BY nosort",
            "SORT z BY nosort DESC LIMIT 1 1",
        ],
    ),
    (
        "BY and GET patterns",
        &[
            "RPUSH l 3 1 2",
            "MSET w_1 b w_2 a w_3 c",
            "HSET h_1 f 30 g x",
            "HSET h_2 f 20",
            "SORT l BY w_* ALPHA GET # GET w_* GET nothing",
            "SORT l BY h_*->f GET h_*->f GET h_*->g GET h_*->",
            "SORT l BY h_*->f DESC GET # LIMIT 0 1",
            "SET x_1-> s",
            "SORT l BY nosort GET x_*-> GET w_*->f GET h_*",
            "SET k1* v",
            "SORT l GET k** GET # GET #",
            "SORT_RO l BY nosort GET h_*->f",
            "SORT l BY h_*->g",
            "SORT l BY h_*->g ALPHA",
            "SORT l BY nothing DESC",
            "SORT l BY # DESC",
        ],
    ),
    (
        "LIMIT windows",
        &[
            "RPUSH l 5 4 3 2 1",
            "SORT l LIMIT 0 0",
            "SORT l LIMIT -5 2",
            "SORT l LIMIT 3 -1",
            "SORT l LIMIT 5 1",
            "SORT l LIMIT 1 9223372036854775807",
            "SORT l LIMIT -9223372036854775808 -9223372036854775808",
            "SORT l BY nosort LIMIT 1 2",
            "SORT l BY nosort DESC LIMIT 1 2",
            "SORT l BY nosort DESC LIMIT 4 9",
            "SORT l LIMIT 1 2 GET # GET nothing",
            "SORT l LIMIT 1 2 LIMIT 0 1",
            "SORT l LIMIT 1",
            "SORT l LIMIT x 1",
            "SORT l LIMIT 1 9223372036854775808",
        ],
    ),
    (
        "STORE replaces, deletes, and WATCH sees it",
        &[
            "SET dst x",
            "EXPIRE dst 100",
            "SORT nokey STORE dst",
            "EXISTS dst",
            "RPUSH l 2 1",
            "SET dst x",
            "EXPIRE dst 100",
            "SORT l GET # GET w_* STORE dst",
            "LRANGE dst 0 -1",
            "TTL dst",
            "SORT l STORE l",
            "LRANGE l 0 -1",
            "SADD s c 10 b 9",
            "SORT s BY nosort STORE dst",
            "LRANGE dst 0 -1",
            "WATCH dst",
            "@1 SORT nokey STORE dst",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH dst",
            "@1 SORT nokey STORE dst",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH l",
            "@1 SORT l",
            "MULTI",
            "PING",
            "EXEC",
        ],
    ),
    (
        "errors and their order",
        &[
            "SET str x",
            "HSET h f v",
            "RPUSH l 1",
            "SORT str",
            "SORT h BY nosort",
            "SORT str LIMIT x 1",
            "SORT str FOO",
            "SORT_RO l STORE dst",
            "SORT l STORE",
            "SORT l BY",
            "SORT l GET",
            "SORT",
            "SORT_RO",
            "sort l asc desc asc alpha",
        ],
    ),
];

const WRONGTYPE: &[Trap] = &[
    (
        "string commands on a hash",
        &[
            "HSET h f v",
            "GET h",
            "APPEND h x",
            "INCR h",
            "DECRBY h 2",
            "INCRBYFLOAT h 1",
            "STRLEN h",
            "SETRANGE h 0 x",
            "GETRANGE h 0 1",
            "GETSET h v",
            "GETDEL h",
            "GETEX h PERSIST",
            "SETNX h v",
            "MGET h nosuch",
            "SET h v NX",
            "SET h v GET",
            "TYPE h",
            "SET h v",
            "TYPE h",
        ],
    ),
    (
        "hash commands on a string",
        &[
            "SET s v",
            "HSET s f v",
            "HSETNX s f v",
            "HMSET s f v",
            "HGET s f",
            "HMGET s f g",
            "HDEL s f",
            "HLEN s",
            "HEXISTS s f",
            "HSTRLEN s f",
            "HGETALL s",
            "HKEYS s",
            "HVALS s",
            "HINCRBY s f 1",
            "HINCRBYFLOAT s f 1",
            "HRANDFIELD s",
            "HRANDFIELD s 2 WITHVALUES",
            "HSCAN s 0",
            "GET s",
        ],
    ),
    (
        "list commands on a string",
        &[
            "SET s v",
            "LPUSH s x",
            "RPUSH s x",
            "LPUSHX s x",
            "RPUSHX s x",
            "LPOP s",
            "RPOP s 2",
            "LLEN s",
            "LRANGE s 0 -1",
            "LINDEX s 0",
            "LSET s 0 x",
            "LREM s 0 x",
            "LTRIM s 0 1",
            "LINSERT s BEFORE a b",
            "LPOS s a",
            "RPOPLPUSH s d",
            "LMOVE s d LEFT RIGHT",
            "GET s",
        ],
    ),
    (
        "list moves check the destination type first",
        &[
            "RPUSH l a b",
            "SET s v",
            "RPOPLPUSH l s",
            "LMOVE l s LEFT LEFT",
            "LRANGE l 0 -1",
            "RPOPLPUSH nosuch s",
            "RPOPLPUSH l l",
            "LRANGE l 0 -1",
        ],
    ),
    (
        "set commands on a string",
        &[
            "SET s v",
            "SADD s m",
            "SREM s m",
            "SMEMBERS s",
            "SISMEMBER s m",
            "SMISMEMBER s m n",
            "SCARD s",
            "SPOP s",
            "SRANDMEMBER s",
            "SINTER s",
            "SUNION s",
            "SDIFF s",
            "SINTERSTORE d s",
            "SUNIONSTORE d s",
            "SDIFFSTORE d s",
            "SMOVE s d m",
            "SINTERCARD 1 s",
            "SSCAN s 0",
            "EXISTS d",
        ],
    ),
    (
        "set algebra with a missing key and a wrong type",
        &[
            "SET s v",
            "SADD a m n",
            "SINTER nosuch s",
            "SINTER a s",
            "SUNION a s",
            "SDIFF nosuch s",
            "SDIFF a s",
            "SINTERSTORE d nosuch s",
            "SINTERCARD 2 nosuch s",
            "SMOVE a s m",
            "SMOVE a b m",
            "SMEMBERS b",
        ],
    ),
    (
        "sorted set commands on a string",
        &[
            "SET s v",
            "ZADD s 1 m",
            "ZINCRBY s 1 m",
            "ZREM s m",
            "ZSCORE s m",
            "ZMSCORE s m",
            "ZCARD s",
            "ZCOUNT s -inf +inf",
            "ZLEXCOUNT s - +",
            "ZRANK s m",
            "ZREVRANK s m",
            "ZRANGE s 0 -1",
            "ZRANGE s 0 1 BYSCORE",
            "ZREVRANGE s 0 -1",
            "ZRANGEBYSCORE s -inf +inf",
            "ZRANGEBYLEX s - +",
            "ZREMRANGEBYRANK s 0 -1",
            "ZREMRANGEBYSCORE s -inf +inf",
            "ZREMRANGEBYLEX s - +",
            "ZPOPMIN s",
            "ZPOPMAX s 2",
            "ZRANDMEMBER s",
            "ZUNIONSTORE d 1 s",
            "ZINTERSTORE d 1 s",
            "ZSCAN s 0",
            "EXISTS d",
        ],
    ),
    (
        "zset store commands accept sets, refuse strings",
        &[
            "SADD set a b",
            "ZADD z 1 a 2 c",
            "ZUNIONSTORE d 2 z set",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZINTERSTORE d 2 z set WEIGHTS 2 3",
            "ZRANGE d 0 -1 WITHSCORES",
            "SET s v",
            "ZUNIONSTORE d 2 z s",
            "ZRANGE d 0 -1 WITHSCORES",
        ],
    ),
    (
        "cross-type: list, set and zset commands on each other",
        &[
            "RPUSH l a",
            "SADD s a",
            "ZADD z 1 a",
            "HSET h a 1",
            "SADD l b",
            "LPUSH s b",
            "ZADD s 1 b",
            "SADD z b",
            "HSET l f v",
            "LLEN h",
            "SCARD z",
            "ZCARD s",
            "TYPE l",
            "TYPE s",
            "TYPE z",
            "TYPE h",
        ],
    ),
];

const EMPTY_AGGREGATES: &[Trap] = &[
    (
        "hash emptied by HDEL is deleted",
        &[
            "HSET h f v g w",
            "HDEL h f g x",
            "EXISTS h",
            "TYPE h",
            "HLEN h",
            "HGETALL h",
        ],
    ),
    (
        "list emptied is deleted",
        &[
            "RPUSH l a",
            "LPOP l",
            "EXISTS l",
            "RPUSH l a b",
            "RPOP l 5",
            "EXISTS l",
            "RPUSH l a b",
            "LTRIM l 5 10",
            "EXISTS l",
            "RPUSH l a a",
            "LREM l 0 a",
            "EXISTS l",
            "RPUSH l a",
            "RPOPLPUSH l m",
            "EXISTS l",
            "LRANGE m 0 -1",
            "LMOVE m m LEFT RIGHT",
            "LRANGE m 0 -1",
            "LPOP nosuch",
            "LPOP nosuch 0",
            "LPOP m 0",
            "RPOP m 0",
        ],
    ),
    (
        "set emptied is deleted",
        &[
            "SADD s a",
            "SREM s a",
            "EXISTS s",
            "SADD s a b",
            "SPOP s 10",
            "EXISTS s",
            "SADD s a",
            "SMOVE s t a",
            "EXISTS s",
            "TYPE t",
            "SADD x q",
            "SINTERSTORE x nosuch1 nosuch2",
            "EXISTS x",
            "SADD x q",
            "SDIFFSTORE x t t",
            "EXISTS x",
            "SADD x q",
            "SUNIONSTORE x nosuch",
            "EXISTS x",
        ],
    ),
    (
        "zset emptied is deleted",
        &[
            "ZADD z 1 a",
            "ZREM z a",
            "EXISTS z",
            "ZADD z 1 a 2 b",
            "ZREMRANGEBYRANK z 0 -1",
            "EXISTS z",
            "ZADD z 1 a 2 b",
            "ZREMRANGEBYSCORE z -inf +inf",
            "EXISTS z",
            "ZADD z 0 a 0 b",
            "ZREMRANGEBYLEX z - +",
            "EXISTS z",
            "ZADD z 1 a",
            "ZPOPMIN z 5",
            "EXISTS z",
            "ZADD d 1 x",
            "ZUNIONSTORE d 1 nosuch",
            "EXISTS d",
            "ZADD d 1 x",
            "ZINTERSTORE d 2 d nosuch",
            "EXISTS d",
        ],
    ),
    (
        "refused commands create nothing",
        &[
            "HINCRBY h f x",
            "EXISTS h",
            "HINCRBYFLOAT h f nan",
            "EXISTS h",
            "HSET h f",
            "EXISTS h",
            "ZADD z XX 1 a",
            "EXISTS z",
            "ZADD z NX GT 1 a",
            "EXISTS z",
            "ZADD z 1 a 2",
            "EXISTS z",
            "ZADD z nan a",
            "EXISTS z",
            "ZINCRBY z x a",
            "EXISTS z",
            "ZADD z INCR 1 a 2 b",
            "EXISTS z",
            "LPUSHX l a",
            "RPUSHX l a",
            "EXISTS l",
            "SETRANGE s 0 \"\"",
            "EXISTS s",
            "INCRBY n x",
            "EXISTS n",
            "INCRBYFLOAT n x",
            "EXISTS n",
            "APPEND e \"\"",
            "EXISTS e",
            "LINSERT l BEFORE a b",
            "EXISTS l",
            "SREM s a",
            "SMOVE nosuch s a",
            "EXISTS s",
            "DBSIZE",
        ],
    ),
];

const INTEGER_EDGES: &[Trap] = &[
    (
        "INCR family at the i64 edges",
        &[
            "SET n 9223372036854775807",
            "INCR n",
            "INCRBY n 0",
            "DECR n",
            "INCRBY n 1",
            "GET n",
            "INCRBY n 1",
            "SET n -9223372036854775808",
            "DECR n",
            "INCRBY n -1",
            "DECRBY n 1",
            "DECRBY n -9223372036854775808",
            "SET n 0",
            "DECRBY n -9223372036854775808",
            "DECRBY n 9223372036854775807",
            "GET n",
            "INCRBY n 9223372036854775808",
            "INCRBY n -9223372036854775809",
            "GET n",
        ],
    ),
    (
        "what counts as an integer",
        &[
            "SET n \" 1\"",
            "INCR n",
            "SET n \"1 \"",
            "INCR n",
            "SET n 1.0",
            "INCR n",
            "SET n 01",
            "INCR n",
            "SET n +1",
            "INCR n",
            "SET n -0",
            "INCR n",
            "SET n \"\"",
            "INCR n",
            "SET n 0x10",
            "INCR n",
            "SET n 1e3",
            "INCR n",
            "INCRBY m +5",
            "INCRBY m 05",
            "INCRBY m \"\"",
            "INCRBY m 5",
            "SET n 99999999999999999999",
            "INCR n",
            "SET n 12",
            "APPEND n 3",
            "INCR n",
            "SETRANGE n 0 9",
            "INCR n",
        ],
    ),
    (
        "HINCRBY at the edges",
        &[
            "HSET h f 9223372036854775807",
            "HINCRBY h f 1",
            "HINCRBY h f -9223372036854775808",
            "HGET h f",
            "HINCRBY h f -9223372036854775808",
            "HINCRBY h g 9223372036854775808",
            "HINCRBY h g -9223372036854775808",
            "HINCRBY h g -1",
            "HSET h s abc",
            "HINCRBY h s 1",
            "HSET h s \" 1\"",
            "HINCRBY h s 1",
            "HSET h s 1.5",
            "HINCRBY h s 1",
            "HINCRBY h new 0",
            "HGETALL h",
        ],
    ),
    (
        "list indices at the edges",
        &[
            "RPUSH l a b c d e",
            "LRANGE l 0 9223372036854775807",
            "LRANGE l -9223372036854775808 9223372036854775807",
            "LRANGE l -9223372036854775808 -9223372036854775808",
            "LRANGE l 5 2",
            "LRANGE l -100 -50",
            "LRANGE l -100 1",
            "LRANGE l 3 100",
            "LRANGE l x 1",
            "LRANGE l 0 9223372036854775808",
            "LINDEX l 9223372036854775807",
            "LINDEX l -9223372036854775808",
            "LINDEX l -1",
            "LINDEX l -5",
            "LINDEX l -6",
            "LINDEX l x",
            "LINDEX nosuch 0",
            "LSET l 100 x",
            "LSET l -1 z",
            "LSET l -9223372036854775808 x",
            "LSET nosuch 0 x",
            "LRANGE l 0 -1",
            "LTRIM l -9223372036854775808 9223372036854775807",
            "LRANGE l 0 -1",
            "LTRIM l 1 -2",
            "LRANGE l 0 -1",
        ],
    ),
    (
        "LPOS options",
        &[
            "RPUSH l a b a c a",
            "LPOS l a",
            "LPOS l a RANK 2",
            "LPOS l a RANK -1",
            "LPOS l a RANK -9223372036854775808",
            "LPOS l a RANK 0",
            "LPOS l a COUNT 0",
            "LPOS l a COUNT 2 RANK -1",
            "LPOS l a COUNT -1",
            "LPOS l a MAXLEN 2 COUNT 0",
            "LPOS l a MAXLEN -1",
            "LPOS l z",
            "LPOS l z COUNT 0",
            "LPOS nosuch a",
            "LPOS nosuch a COUNT 1",
            "LPOS l a FOO 1",
        ],
    ),
    (
        "counts of pops and random picks",
        &[
            "RPUSH l a b c",
            "LPOP l -1",
            "LPOP l x",
            "LPOP l 9223372036854775807",
            "RPUSH l a b c",
            "RPOP l 0",
            "SADD s a b",
            "SPOP s -1",
            "SPOP s 0",
            "SRANDMEMBER s 0",
            "SRANDMEMBER s -9223372036854775808",
            "HSET h f v",
            "HRANDFIELD h 0",
            "HRANDFIELD h -9223372036854775808",
            "ZADD z 1 a",
            "ZRANDMEMBER z 0",
            "ZPOPMIN z -1",
            "ZPOPMIN z 0",
            "ZPOPMAX nosuch 2",
        ],
    ),
    (
        "GETRANGE and SETRANGE edges",
        &[
            "SET s hello",
            "GETRANGE s 0 -1",
            "GETRANGE s -9223372036854775808 9223372036854775807",
            "GETRANGE s 3 1",
            "GETRANGE s -3 -1",
            "GETRANGE s 10 20",
            "GETRANGE s -100 -50",
            "GETRANGE nosuch 0 -1",
            "SETRANGE s -1 x",
            "SETRANGE s 536870912 x",
            "SETRANGE s 7 x",
            "GET s",
            "SETRANGE new 2 x",
            "GET new",
            "STRLEN new",
            "SETRANGE s 0 \"\"",
        ],
    ),
    (
        "sorted set ranks at the edges",
        &[
            "ZADD z 1 a 2 b 3 c",
            "ZRANGE z 0 9223372036854775807",
            "ZRANGE z -9223372036854775808 -1",
            "ZRANGE z 2 1",
            "ZREVRANGE z 0 0 WITHSCORES",
            "ZRANGE z (1 3 BYSCORE LIMIT 1 -1",
            "ZRANGE z 1 3 BYSCORE LIMIT 0 0",
            "ZRANGE z 1 3 BYSCORE LIMIT -1 5",
            "ZRANGE z 0 -1 LIMIT 0 1",
            "ZRANGE z 3 1 BYSCORE REV",
            "ZRANGE z 0 -1 BYSCORE BYLEX",
            "ZREMRANGEBYRANK z -9223372036854775808 0",
            "ZRANGE z 0 -1",
        ],
    ),
    (
        "expire time overflow",
        &[
            "SET k v",
            "EXPIRE k 9223372036854775807",
            "EXPIRE k 9223372036854775",
            "PEXPIRE k 9223372036854775807",
            "EXPIREAT k 9223372036854775807",
            "PEXPIREAT k 9223372036854775807",
            "EXPIRE k -9223372036854775808",
            "TTL k",
            "SET k v EX 9223372036854775807",
            "SET k v EX 0",
            "SET k v PX -1",
            "SET k v EX x",
            "SETEX k -1 v",
            "SETEX k 0 v",
            "PSETEX k 0 v",
            "GETEX k EX 0",
            "GETEX k PX 9223372036854775807",
            "GET k",
            "TTL k",
        ],
    ),
];

const FLOATS: &[Trap] = &[
    (
        "INCRBYFLOAT formatting",
        &[
            "SET f 10.5",
            "INCRBYFLOAT f 0.1",
            "INCRBYFLOAT f -0.1",
            "SET f 5.0e3",
            "INCRBYFLOAT f 200",
            "SET f 3",
            "INCRBYFLOAT f 1.5",
            "INCRBYFLOAT f -1.5",
            "INCRBYFLOAT f 0.0000001",
            "INCRBYFLOAT f 1e20",
            "INCRBYFLOAT f 1e308",
            "INCRBYFLOAT f 1e308",
            "INCRBYFLOAT f inf",
            "INCRBYFLOAT f nan",
            "INCRBYFLOAT f \"1 \"",
            "INCRBYFLOAT f \"\"",
            "INCRBYFLOAT f 0x10",
            "INCRBYFLOAT missing 3.0e0",
            "INCRBYFLOAT missing2 -0",
            "SET f abc",
            "INCRBYFLOAT f 1",
            "SET f inf",
            "INCRBYFLOAT f 1",
            "SET f 1.5e",
            "INCRBYFLOAT f 1",
            "SET f 0.1",
            "INCRBYFLOAT f 0.2",
            "SET f 1",
            "INCRBYFLOAT f 1e-20",
            "INCRBYFLOAT f 123456789012345678",
        ],
    ),
    (
        "HINCRBYFLOAT formatting",
        &[
            "HINCRBYFLOAT h f 10.5",
            "HINCRBYFLOAT h f 0.1",
            "HINCRBYFLOAT h f nan",
            "HINCRBYFLOAT h f inf",
            "HINCRBYFLOAT h f x",
            "HSET h s abc",
            "HINCRBYFLOAT h s 1",
            "HSET h i 7",
            "HINCRBYFLOAT h i 0.5",
            "HINCRBY h i 1",
            "HGETALL h",
        ],
    ),
    (
        "ZSCORE formatting",
        &[
            "ZADD z 1.1 a",
            "ZSCORE z a",
            "ZADD z inf b -inf c +inf d",
            "ZSCORE z b",
            "ZSCORE z c",
            "ZADD z 1e400 e",
            "ZADD z nan x",
            "ZADD z -0 g",
            "ZSCORE z g",
            "ZADD z 1e-5 h",
            "ZSCORE z h",
            "ZADD z 123456789012345678 big",
            "ZSCORE z big",
            "ZADD z 0.1 f",
            "ZINCRBY z 0.2 f",
            "ZINCRBY z inf b",
            "ZINCRBY z -inf b",
            "ZSCORE z b",
            "ZADD z 3.0 i 3 j",
            "ZRANGE z 0 -1 WITHSCORES",
            "ZMSCORE z a nosuch g",
            "ZADD z \" 1\" k",
            "ZADD z 1.5e k",
            "ZADD z 0x10 k",
            "ZADD z \"\" k",
            "ZSCORE z k",
        ],
    ),
    (
        "score ranges",
        &[
            "ZADD z 1 a 1.1 b 2 c inf d -inf e",
            "ZRANGEBYSCORE z (1 +inf",
            "ZRANGEBYSCORE z -inf (1.1 WITHSCORES",
            "ZCOUNT z (inf +inf",
            "ZCOUNT z -inf inf",
            "ZCOUNT z (1 (1",
            "ZCOUNT z 2 1",
            "ZCOUNT z ( 1",
            "ZCOUNT z x 1",
            "ZCOUNT z nan 1",
            "ZREVRANGEBYSCORE z +inf -inf WITHSCORES LIMIT 1 2",
            "ZRANGEBYSCORE z -inf +inf LIMIT 1",
            "ZRANGEBYSCORE z -inf +inf LIMIT 0 -1 WITHSCORES",
            "ZREMRANGEBYSCORE z (1 2",
            "ZRANGE z 0 -1 WITHSCORES",
        ],
    ),
    (
        "lex ranges with equal scores",
        &[
            "ZADD z 0 a 0 b 0 c 0 \"\" 0 aa",
            "ZRANGEBYLEX z - +",
            "ZRANGEBYLEX z [a (b",
            "ZRANGEBYLEX z (a [c LIMIT 1 1",
            "ZREVRANGEBYLEX z + - LIMIT 0 2",
            "ZRANGEBYLEX z a b",
            "ZRANGEBYLEX z [ +",
            "ZRANGEBYLEX z ( +",
            "ZLEXCOUNT z [b +",
            "ZLEXCOUNT z + -",
            "ZRANGE z [aa + BYLEX",
            "ZRANGE z + [aa BYLEX REV",
            "ZREMRANGEBYLEX z [a [aa",
            "ZRANGE z 0 -1",
        ],
    ),
    (
        "ZADD options",
        &[
            "ZADD z 1 a",
            "ZADD z NX 2 a 3 b",
            "ZADD z XX 5 a 5 c",
            "ZADD z XX CH 6 a 1 b",
            "ZADD z GT 1 a",
            "ZADD z GT CH 7 a",
            "ZADD z LT 8 a",
            "ZADD z LT CH 0 a",
            "ZADD z GT LT 1 a",
            "ZADD z NX XX 1 a",
            "ZADD z NX GT 1 a",
            "ZADD z INCR 2 a",
            "ZADD z NX INCR 2 a",
            "ZADD z XX INCR 2 nosuch",
            "ZADD z GT INCR -100 a",
            "ZADD z INCR 1 a 1 b",
            "ZADD z CH",
            "ZADD z FOO 1 a",
            "ZADD z 1",
            "ZRANGE z 0 -1 WITHSCORES",
        ],
    ),
    (
        "zset aggregation",
        &[
            "ZADD a 1 x 2 y",
            "ZADD b 10 y 20 z",
            "ZUNIONSTORE u 2 a b",
            "ZRANGE u 0 -1 WITHSCORES",
            "ZUNIONSTORE u 2 a b WEIGHTS 2 0.5 AGGREGATE MAX",
            "ZRANGE u 0 -1 WITHSCORES",
            "ZINTERSTORE i 2 a b AGGREGATE MIN",
            "ZRANGE i 0 -1 WITHSCORES",
            "ZUNIONSTORE u 2 a b WEIGHTS inf -inf",
            "ZRANGE u 0 -1 WITHSCORES",
            "ZUNIONSTORE u 2 a b WEIGHTS 1",
            "ZUNIONSTORE u 2 a b WEIGHTS x 1",
            "ZUNIONSTORE u 2 a b AGGREGATE AVG",
            "ZUNIONSTORE u 3 a b",
            "ZUNIONSTORE u 1 a b",
            "ZUNIONSTORE u 0 a",
            "ZUNIONSTORE u -1 a",
            "ZUNIONSTORE a 2 a b",
            "ZRANGE a 0 -1 WITHSCORES",
        ],
    ),
];

const TTL_RULES: &[Trap] = &[
    (
        "SET clears the TTL, KEEPTTL keeps it",
        &[
            "SET k v EX 1000",
            "TTL k",
            "SET k v2",
            "TTL k",
            "SET k v EX 1000",
            "SET k v3 KEEPTTL",
            "TTL k",
            "SET k v4 KEEPTTL EX 10",
            "SET k v5 NX EX 10",
            "TTL k",
            "SET k v6 XX PX 2000000",
            "PTTL k",
            "SET k v7 GET EX 1000",
            "TTL k",
            "GETSET k v8",
            "TTL k",
            "EXPIRE k 1000",
            "MSET k v9 other x",
            "TTL k",
            "SETEX k 100 v",
            "PSETEX k 100000 v",
            "TTL k",
            "SETNX k v",
            "TTL k",
        ],
    ),
    (
        "value changes keep the TTL",
        &[
            "SET n 1 EX 1000",
            "INCR n",
            "INCRBYFLOAT n 1.5",
            "APPEND n 0",
            "SETRANGE n 0 7",
            "TTL n",
            "HSET h f v",
            "EXPIRE h 1000",
            "HSET h g v",
            "HINCRBY h c 1",
            "HDEL h f",
            "TTL h",
            "HDEL h g c",
            "TTL h",
            "RPUSH l a",
            "EXPIRE l 1000",
            "LPUSH l b",
            "LPOP l",
            "LSET l 0 z",
            "TTL l",
            "SADD s a",
            "EXPIRE s 1000",
            "SADD s b",
            "SREM s a",
            "TTL s",
            "ZADD z 1 a",
            "EXPIRE z 1000",
            "ZINCRBY z 1 a",
            "TTL z",
            "GETEX n PERSIST",
            "TTL n",
            "GETEX n EX 500",
            "TTL n",
            "GETEX n",
            "TTL n",
        ],
    ),
    (
        "RENAME carries the TTL",
        &[
            "SET a v EX 1000",
            "RENAME a b",
            "TTL a",
            "TTL b",
            "SET c v",
            "RENAME b c",
            "TTL c",
            "SET d v EX 500",
            "SET e v",
            "RENAME e d",
            "TTL d",
            "RENAME nosuch x",
            "RENAMENX nosuch x",
            "RENAME d d",
            "RENAMENX d d",
            "RENAMENX d c",
            "RENAMENX d fresh",
            "TTL fresh",
            "TYPE d",
        ],
    ),
    (
        "non-positive expire deletes",
        &[
            "SET k v",
            "EXPIRE k 0",
            "EXISTS k",
            "SET k v",
            "EXPIRE k -10",
            "EXISTS k",
            "SET k v",
            "PEXPIRE k 0",
            "EXISTS k",
            "SET k v",
            "EXPIREAT k 1",
            "EXISTS k",
            "SET k v",
            "PEXPIREAT k 0",
            "EXISTS k",
            "EXPIRE k 10",
            "EXPIRE nosuch 0",
            "PERSIST nosuch",
        ],
    ),
    (
        "NX XX GT LT",
        &[
            "SET k v",
            "EXPIRE k 100 XX",
            "EXPIRE k 100 NX",
            "EXPIRE k 200 NX",
            "EXPIRE k 50 GT",
            "EXPIRE k 500 GT",
            "TTL k",
            "EXPIRE k 600 LT",
            "EXPIRE k 10 LT",
            "TTL k",
            "PERSIST k",
            "EXPIRE k 10 GT",
            "TTL k",
            "EXPIRE k 10 LT",
            "TTL k",
            "EXPIRE k 10 NX XX",
            "EXPIRE k 10 GT LT",
            "EXPIRE k 10 NX GT",
            "EXPIRE k 10 FOO",
            "EXPIRE k 10 nx",
            "EXPIRE k 10 xx gt",
            "EXPIRE k 0 XX",
            "EXISTS k",
            "SET k v",
            "EXPIRE k -1 NX",
            "EXISTS k",
            "SET k v",
            "EXPIREAT k 4102444800",
            "EXPIRETIME k",
            "PEXPIRETIME k",
            "PEXPIREAT k 4102444800001 GT",
            "PEXPIRETIME k",
            "EXPIREAT k 4102444800 LT",
            "PEXPIRETIME k",
            "EXPIREAT k 4102444800 GT",
            "EXPIRETIME nosuch",
            "SET p v",
            "EXPIRETIME p",
            "PTTL p",
        ],
    ),
    (
        "PERSIST and TTL of keys without expiry",
        &[
            "SET k v",
            "TTL k",
            "PTTL k",
            "PERSIST k",
            "EXPIRE k 1000",
            "PERSIST k",
            "PERSIST k",
            "TTL k",
            "TTL nosuch",
            "PTTL nosuch",
            "EXPIRE k x",
            "EXPIRE k 1.5",
            "EXPIRE k \"\"",
        ],
    ),
];

const TRANSACTIONS: &[Trap] = &[
    (
        "queued syntax error aborts EXEC",
        &[
            "MULTI",
            "SET a 1",
            "INCR a b c",
            "EXEC",
            "GET a",
            "MULTI",
            "SET a 1",
            "FOOBAR x",
            "EXEC",
            "GET a",
            "MULTI",
            "SET a 1",
            "GET",
            "SET a 2",
            "EXEC",
            "EXISTS a",
        ],
    ),
    (
        "runtime error inside EXEC: the others still run",
        &[
            "MULTI",
            "SET a x",
            "INCR a",
            "SET b 2",
            "LPUSH a z",
            "EXPIRE b x",
            "GET b",
            "EXEC",
            "GET a",
            "GET b",
        ],
    ),
    (
        "transaction control errors",
        &[
            "EXEC",
            "DISCARD",
            "MULTI",
            "MULTI",
            "SET a 1",
            "EXEC",
            "GET a",
            "MULTI",
            "DISCARD",
            "EXEC",
            "MULTI",
            "EXEC",
            "MULTI x",
            "EXEC x",
            "DISCARD x",
            "MULTI",
            "WATCH a",
            "SET a 2",
            "EXEC",
            "GET a",
            "MULTI",
            "EXEC x",
            "EXEC",
            "MULTI",
            "UNWATCH",
            "PING",
            "ECHO hi",
            "EXEC",
            "MULTI",
            "WATCH",
            "EXEC",
            "MULTI",
            "DISCARD x",
            "EXEC",
            "SET k 1",
            "WATCH k",
            "EXEC x",
            "@1 SET k 2",
            "MULTI",
            "PING",
            "EXEC",
        ],
    ),
    (
        "SELECT inside MULTI",
        &[
            "MULTI",
            "SELECT 1",
            "SET a in1",
            "EXEC",
            "GET a",
            "SELECT 0",
            "GET a",
            "MULTI",
            "SELECT 99",
            "SET a in0",
            "EXEC",
            "GET a",
        ],
    ),
];

const WATCH: &[Trap] = &[
    (
        "a concurrent write aborts EXEC",
        &[
            "SET k 1",
            "WATCH k",
            "@1 SET k 2",
            "MULTI",
            "SET k 3",
            "EXEC",
            "GET k",
            "WATCH k",
            "MULTI",
            "SET k 4",
            "EXEC",
            "GET k",
        ],
    ),
    (
        "writing the same value still counts",
        &["SET k 1", "WATCH k", "@1 SET k 1", "MULTI", "GET k", "EXEC"],
    ),
    (
        "own write before MULTI counts",
        &["SET k 1", "WATCH k", "SET k 2", "MULTI", "GET k", "EXEC"],
    ),
    (
        "no-op writes do not abort",
        &[
            "WATCH missing",
            "@1 DEL missing",
            "@1 PERSIST missing",
            "@1 EXPIRE missing 100",
            "MULTI",
            "PING",
            "EXEC",
            "SET k v",
            "WATCH k",
            "@1 PERSIST k",
            "@1 GET k",
            "@1 EXISTS k",
            "@1 TTL k",
            "MULTI",
            "PING",
            "EXEC",
        ],
    ),
    (
        "expiry changes abort",
        &[
            "SET k v",
            "WATCH k",
            "@1 EXPIRE k 100",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH k",
            "@1 PERSIST k",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH k",
            "@1 EXPIRE k 0",
            "MULTI",
            "PING",
            "EXEC",
            "EXISTS k",
        ],
    ),
    (
        "deletes, renames and flushes abort",
        &[
            "SET k v",
            "WATCH k",
            "@1 DEL k",
            "MULTI",
            "PING",
            "EXEC",
            "SET k v",
            "WATCH k dst",
            "@1 RENAME k dst",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH dst",
            "@1 FLUSHALL",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH nothing",
            "@1 FLUSHALL",
            "MULTI",
            "PING",
            "EXEC",
            "SET k v",
            "WATCH k",
            "@1 FLUSHDB",
            "MULTI",
            "PING",
            "EXEC",
        ],
    ),
    (
        "UNWATCH, DISCARD and other databases",
        &[
            "SET k 1",
            "WATCH k",
            "UNWATCH",
            "@1 SET k 2",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH k",
            "MULTI",
            "DISCARD",
            "@1 SET k 3",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH k",
            "@1 SELECT 1",
            "@1 SET k other-db",
            "MULTI",
            "GET k",
            "EXEC",
            "SELECT 1",
            "WATCH k",
            "@1 SET k again",
            "MULTI",
            "GET k",
            "EXEC",
        ],
    ),
    (
        "collection no-ops do not abort, changes do",
        &[
            "SADD s a",
            "WATCH s",
            "@1 SADD s a",
            "@1 SREM s nosuch",
            "MULTI",
            "PING",
            "EXEC",
            "HSET h f v",
            "WATCH h",
            "@1 HDEL h nosuch",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH h",
            "@1 HSET h f v",
            "MULTI",
            "PING",
            "EXEC",
            "ZADD z 1 a",
            "WATCH z",
            "@1 ZADD z 1 a",
            "@1 ZREM z nosuch",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH z",
            "@1 ZADD z 2 a",
            "MULTI",
            "PING",
            "EXEC",
            "RPUSH l a",
            "WATCH l",
            "@1 LREM l 0 nosuch",
            "@1 LPUSHX nosuch a",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH l",
            "@1 LSET l 0 a",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH s",
            "@1 SMOVE s t a",
            "MULTI",
            "PING",
            "EXEC",
        ],
    ),
    (
        "string no-ops",
        &[
            "SET k v",
            "WATCH k",
            "@1 SET k x NX",
            "@1 SETNX k x",
            "@1 APPEND nosuch \"\"",
            "@1 SETRANGE k 0 \"\"",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH k",
            "@1 APPEND k \"\"",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH k",
            "@1 INCRBY nosuch x",
            "@1 GETEX k",
            "MULTI",
            "PING",
            "EXEC",
        ],
    ),
];

const SELECT: &[Trap] = &[(
    "databases are separate",
    &[
        "SET a 0",
        "SELECT 1",
        "GET a",
        "SET a 1",
        "DBSIZE",
        "SELECT 0",
        "GET a",
        "SELECT 15",
        "DBSIZE",
        "SELECT 16",
        "SELECT -1",
        "SELECT x",
        "SELECT 1.0",
        "SELECT 01",
        "@1 GET a",
        "FLUSHDB",
        "SELECT 1",
        "GET a",
        "FLUSHALL",
        "GET a",
        "FLUSHDB ASYNC",
        "FLUSHDB SYNC",
        "FLUSHDB FOO",
        "FLUSHALL ASYNC x",
    ],
)];

/// Keys with glob characters in them, for the SCAN and KEYS traps.
const GLOB_KEYS: &[&str] = &[
    r#"MSET "a*b" 1 "a\\b" 2 "[x]" 3 h?llo 4 hello 5 hallo 6 hxllo 7 "" 8 "*" 9 a 10 ab 11 "a]" 12 "a-" 13 "^" 14 hbllo 15"#,
];

const SCAN_GLOB: &[Trap] = &[
    (
        "KEYS with glob traps",
        &[
            GLOB_KEYS[0],
            "KEYS *",
            "KEYS a*",
            r#"KEYS "a\\*b""#,
            r#"KEYS "a\\\\b""#,
            r#"KEYS "\\[x\\]""#,
            "KEYS [x]",
            "KEYS h[ae]llo",
            "KEYS h[^e]llo",
            "KEYS h[a-b]llo",
            "KEYS h[b-a]llo",
            "KEYS h*",
            "KEYS *o",
            "KEYS [",
            "KEYS [abc",
            "KEYS a[",
            r#"KEYS "\\""#,
            r#"KEYS "a\\""#,
            "KEYS ?",
            r#"KEYS """#,
            "KEYS **",
            "KEYS ***b",
            r#"KEYS "a[\\]]""#,
            "KEYS a[]]",
            "KEYS a[-]",
            "KEYS [^]",
            "KEYS [^a]",
            "KEYS h?llo",
            r#"KEYS "h\\?llo""#,
            "KEYS *[",
            "KEYS [a-]",
            "KEYS a[b-]",
        ],
    ),
    (
        "whole SCAN iterations with MATCH, COUNT and TYPE",
        &[
            GLOB_KEYS[0],
            "HSET h1 f v",
            "SADD s1 m",
            "RPUSH l1 x",
            "ZADD z1 1 m",
            "~SCAN 0",
            "~SCAN 0 COUNT 1",
            "~SCAN 0 MATCH * COUNT 2",
            "~SCAN 0 MATCH a*",
            r#"~SCAN 0 MATCH "a\\*b" COUNT 3"#,
            "~SCAN 0 MATCH h[^e]llo",
            "~SCAN 0 MATCH [",
            r#"~SCAN 0 MATCH """#,
            "~SCAN 0 TYPE string",
            "~SCAN 0 TYPE hash",
            "~SCAN 0 TYPE list COUNT 1",
            "~SCAN 0 TYPE set",
            "~SCAN 0 TYPE zset MATCH z*",
            "~SCAN 0 TYPE STRING",
            "~SCAN 0 TYPE nosuch",
            "SCAN 0 COUNT 0",
            "SCAN 0 COUNT -1",
            "SCAN 0 COUNT x",
            "SCAN x",
            "SCAN 0 MATCH",
            "SCAN 0 FOO bar",
        ],
    ),
    (
        // On an empty database, so that any cursor ends the iteration at
        // once and only the parsing of the cursor is compared.
        "each line: cursor parsing",
        &[
            "SCAN -1",
            "SCAN -0",
            "SCAN +0",
            "SCAN 007",
            r#"SCAN """#,
            r#"SCAN " 1""#,
            r#"SCAN "1 ""#,
            r#"SCAN "\t1""#,
            "SCAN +",
            "SCAN -",
            "SCAN 0x1",
            "SCAN 1.0",
            "SCAN 18446744073709551615",
            "SCAN 18446744073709551616",
            "SCAN -18446744073709551615",
            "SCAN -18446744073709551616",
            "HSCAN h -1",
            r#"SSCAN s """#,
            "ZSCAN z x",
        ],
    ),
    (
        "whole HSCAN SSCAN ZSCAN iterations",
        &[
            "HSET h f1 a f2 b g1 c",
            "SADD s m1 m2 n1",
            "ZADD z 1 m1 2.5 m2 3 n1",
            "~HSCAN h 0",
            "~HSCAN h 0 MATCH f*",
            "~HSCAN h 0 COUNT 1",
            "~SSCAN s 0 MATCH m?",
            "~ZSCAN z 0",
            "~ZSCAN z 0 MATCH n*",
            "~HSCAN nosuch 0",
            "HSCAN h x",
            "HSCAN h 0 COUNT 0",
            "HSCAN h 0 TYPE string",
            "SSCAN s 0 FOO",
        ],
    ),
];

const ARITY: &[Trap] = &[(
    "each line: wrong number of arguments",
    &[
        "GET",
        "GET a b",
        "SET a",
        "HSET h f",
        "HSET h f v g",
        "HMSET h",
        "HMSET h f",
        "HGET h",
        "LPUSH l",
        "LRANGE l 0",
        "SADD s",
        "ZADD z 1",
        "ZADD z 1 a 2",
        "ZRANGE z 0",
        "MSET a",
        "MSET a 1 b",
        "MGET",
        "INCRBY n",
        "EXPIRE k",
        "TTL",
        "TTL a b",
        "DEL",
        "EXISTS",
        "TYPE a b",
        "RENAME a",
        "SCAN",
        "KEYS",
        "PING a b",
        "ECHO",
        "SELECT",
        "DBSIZE x",
        "FLUSHALL x y",
        "PERSIST",
        "WATCH",
        "UNWATCH x",
        "get",
        "gEt a b",
    ],
)];

const UNKNOWN: &[Trap] = &[(
    "each line: unknown commands",
    &[
        "FOO",
        "FOO bar baz",
        r#""""#,
        r#""" x"#,
        "NOSUCHCOMMANDWITHAVERYLONGNAMEXXXXXXXXXXXXXXXXXXXX a",
        // (A name that is not UTF-8 cannot be compared: redis-rs cannot
        // parse the error line that echoes it.)
        "ÜBER a",
        r#"FOO "with space" "quote\"d""#,
        "FOO 0123456789012345678901234567890123456789012345678901234567890123456789 0123456789012345678901234567890123456789012345678901234567890123456789 third fourth",
        "FOO a b c d e f g h i j k l m n o p q r s t u v w x y z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35",
        "GET\tx",
    ],
)];

#[test]
fn traps_wrongtype() {
    run_traps("traps_wrongtype", WRONGTYPE);
}

#[test]
fn traps_empty_aggregates() {
    run_traps("traps_empty_aggregates", EMPTY_AGGREGATES);
}

#[test]
fn traps_integer_edges() {
    run_traps("traps_integer_edges", INTEGER_EDGES);
}

#[test]
fn traps_floats() {
    run_traps("traps_floats", FLOATS);
}

#[test]
fn traps_ttl_rules() {
    run_traps("traps_ttl_rules", TTL_RULES);
}

#[test]
fn traps_transactions() {
    run_traps("traps_transactions", TRANSACTIONS);
}

#[test]
fn traps_watch() {
    run_traps("traps_watch", WATCH);
}

#[test]
fn traps_select() {
    run_traps("traps_select", SELECT);
}

#[test]
fn traps_scan_and_glob() {
    run_traps("traps_scan_and_glob", SCAN_GLOB);
}

#[test]
fn traps_arity() {
    run_traps("traps_arity", ARITY);
}

#[test]
fn traps_unknown_commands() {
    run_traps("traps_unknown_commands", UNKNOWN);
}

#[test]
fn traps_sort() {
    run_traps("traps_sort", SORT);
}
