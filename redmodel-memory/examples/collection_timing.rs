//! Time per command of the collection commands, run in process on one
//! connection (no network): a focused check that compact encodings keep
//! the engine's speed.
//!
//! ```text
//! cargo run --release -p redmodel-memory --example collection_timing
//! ```

use std::time::Instant;

use redmodel_memory::{Connection, Engine, ManualClock};

/// Runs `n` commands made by `make` and prints the mean time per command.
fn time(conn: &mut Connection, label: &str, n: usize, make: impl Fn(usize) -> Vec<String>) {
    let cmds: Vec<Vec<String>> = (0..n).map(make).collect();
    let start = Instant::now();
    for c in &cmds {
        let args: Vec<&[u8]> = c.iter().map(|w| w.as_bytes()).collect();
        std::hint::black_box(conn.execute(&args));
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{label:<44} {ns:>9.0} ns/op");
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

fn main() {
    let engine = Engine::with_clock(ManualClock::new(1_700_000_000_000));
    let mut c = engine.connection();
    let n = 100_000;
    time(&mut c, "SET key:i i", n, |i| {
        words(&["SET", &format!("key:{i}"), &i.to_string()])
    });
    time(&mut c, "GET key:i", n, |i| {
        words(&["GET", &format!("key:{i}")])
    });
    time(&mut c, "HSET student:i (5 fields)", n, |i| {
        words(&[
            "HSET",
            &format!("student:{i}"),
            "class",
            "class:3",
            "chinese",
            "67",
            "english",
            "80",
            "math",
            "91",
            "_count",
            "1",
        ])
    });
    time(&mut c, "HGETALL student:i", n, |i| {
        words(&["HGETALL", &format!("student:{i}")])
    });
    time(&mut c, "RPUSH big (100k elements)", n, |i| {
        words(&["RPUSH", "big", &format!("element:{i}")])
    });
    time(&mut c, "LPUSH big2 (100k elements)", n, |i| {
        words(&["LPUSH", "big2", &format!("element:{i}")])
    });
    time(&mut c, "LRANGE big 0 99", 10_000, |_| {
        words(&["LRANGE", "big", "0", "99"])
    });
    time(&mut c, "LINDEX big (random index)", 10_000, |i| {
        words(&["LINDEX", "big", &((i * 7919) % n).to_string()])
    });
    time(&mut c, "LPOP big", n, |_| words(&["LPOP", "big"]));
    time(&mut c, "RPOP big2", n, |_| words(&["RPOP", "big2"]));
    time(&mut c, "RPUSH l:i (10k lists of 10)", n, |i| {
        words(&[
            "RPUSH",
            &format!("l:{}", i % 10_000),
            &format!("element:{i}"),
        ])
    });
    time(&mut c, "LRANGE l:i 0 -1", 10_000, |i| {
        words(&["LRANGE", &format!("l:{i}"), "0", "-1"])
    });
    time(&mut c, "SADD bigset (100k strings)", n, |i| {
        words(&["SADD", "bigset", &format!("member:{i}")])
    });
    time(&mut c, "SISMEMBER bigset", n, |i| {
        words(&["SISMEMBER", "bigset", &format!("member:{}", i * 3)])
    });
    time(&mut c, "SADD s:i (10k intsets of 10)", n, |i| {
        words(&[
            "SADD",
            &format!("s:{}", i % 10_000),
            &(i / 10_000).to_string(),
        ])
    });
    time(&mut c, "SISMEMBER s:i", n, |i| {
        words(&["SISMEMBER", &format!("s:{}", i % 10_000), "5"])
    });
    time(&mut c, "SMEMBERS s:i", 10_000, |i| {
        words(&["SMEMBERS", &format!("s:{i}")])
    });
    time(&mut c, "SADD t:i (10k string sets of 10)", n, |i| {
        words(&[
            "SADD",
            &format!("t:{}", i % 10_000),
            &format!("m{}", i / 10_000),
        ])
    });
    time(&mut c, "ZADD bigz (100k members)", n, |i| {
        words(&[
            "ZADD",
            "bigz",
            &((i * 7919) % n).to_string(),
            &format!("member:{i}"),
        ])
    });
    time(&mut c, "ZSCORE bigz", n, |i| {
        words(&["ZSCORE", "bigz", &format!("member:{i}")])
    });
    time(&mut c, "ZADD z:i (10k zsets of 10)", n, |i| {
        words(&[
            "ZADD",
            &format!("z:{}", i % 10_000),
            &i.to_string(),
            &format!("m{}", i / 10_000),
        ])
    });
    time(&mut c, "ZRANGE z:i 0 -1 WITHSCORES", 10_000, |i| {
        words(&["ZRANGE", &format!("z:{i}"), "0", "-1", "WITHSCORES"])
    });
    time(&mut c, "ZSCORE z:i", n, |i| {
        words(&["ZSCORE", &format!("z:{}", i % 10_000), "m5"])
    });
    time(&mut c, "ZRANK z:i", n, |i| {
        words(&["ZRANK", &format!("z:{}", i % 10_000), "m5"])
    });
    time(&mut c, "DEL key:i", n, |i| {
        words(&["DEL", &format!("key:{i}")])
    });
}
