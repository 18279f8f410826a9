//! Expiry in the memory engine, driven by a clock the tests move: the TTL
//! rules of seed 004 (which commands keep, clear or carry a TTL), passive
//! expiry on access, and the active cycle that reclaims keys nobody reads.
//!
//! The same rules are checked against a real redis-server by the
//! differential tests; here time is exact, so the boundaries are too.

use std::time::{Duration, Instant};

use redis::Value;
use redmodel::memory::{Connection, Engine, ManualClock};

fn engine() -> (Engine, ManualClock, Connection) {
    let clock = ManualClock::new(1_700_000_000_000);
    let engine = Engine::with_clock(clock.clone());
    let conn = engine.connection();
    (engine, clock, conn)
}

fn run(conn: &mut Connection, args: &[&str]) -> Value {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    conn.execute(&args)
}

fn int(conn: &mut Connection, args: &[&str]) -> i64 {
    match run(conn, args) {
        Value::Int(n) => n,
        other => panic!("{args:?} replied {other:?}, expected an integer"),
    }
}

#[test]
fn a_key_lives_until_its_expiry_time_has_passed() {
    let (_e, clock, mut c) = engine();
    run(&mut c, &["SET", "k", "v", "EX", "10"]);
    clock.advance(Duration::from_millis(9_499));
    assert_eq!(
        int(&mut c, &["TTL", "k"]),
        1,
        "TTL rounds to the nearest second"
    );
    assert_eq!(int(&mut c, &["PTTL", "k"]), 501);
    clock.advance(Duration::from_millis(501));
    assert_eq!(
        int(&mut c, &["PTTL", "k"]),
        0,
        "at its expiry time the key still exists"
    );
    assert_eq!(int(&mut c, &["EXISTS", "k"]), 1);
    clock.advance(Duration::from_millis(1));
    assert_eq!(int(&mut c, &["EXISTS", "k"]), 0);
    assert_eq!(int(&mut c, &["TTL", "k"]), -2);
    assert_eq!(run(&mut c, &["GET", "k"]), Value::Nil);
}

#[test]
fn writes_that_keep_a_ttl_and_writes_that_clear_it() {
    let (_e, _clock, mut c) = engine();
    // Field and element updates keep the TTL.
    run(&mut c, &["HSET", "h", "f", "1"]);
    run(&mut c, &["EXPIRE", "h", "100"]);
    run(&mut c, &["HSET", "h", "g", "2"]);
    run(&mut c, &["HINCRBY", "h", "f", "5"]);
    assert_eq!(int(&mut c, &["TTL", "h"]), 100);

    run(&mut c, &["RPUSH", "l", "a"]);
    run(&mut c, &["EXPIRE", "l", "100"]);
    run(&mut c, &["LPUSH", "l", "b"]);
    assert_eq!(int(&mut c, &["TTL", "l"]), 100);

    run(&mut c, &["SET", "n", "1", "EX", "100"]);
    run(&mut c, &["INCR", "n"]);
    run(&mut c, &["APPEND", "n", "0"]);
    assert_eq!(int(&mut c, &["TTL", "n"]), 100);

    // A whole-value replace clears it.
    run(&mut c, &["SET", "n", "x"]);
    assert_eq!(int(&mut c, &["TTL", "n"]), -1);
    run(&mut c, &["SET", "s", "1", "EX", "100"]);
    run(&mut c, &["GETSET", "s", "2"]);
    assert_eq!(int(&mut c, &["TTL", "s"]), -1);
    // ... unless KEEPTTL.
    run(&mut c, &["SET", "s", "1", "EX", "100"]);
    run(&mut c, &["SET", "s", "3", "KEEPTTL"]);
    assert_eq!(int(&mut c, &["TTL", "s"]), 100);
}

#[test]
fn rename_carries_the_ttl_and_drops_the_destinations() {
    let (_e, _clock, mut c) = engine();
    run(&mut c, &["SET", "src", "1", "EX", "50"]);
    run(&mut c, &["SET", "dst", "2", "EX", "500"]);
    assert_eq!(run(&mut c, &["RENAME", "src", "dst"]), Value::Okay);
    assert_eq!(int(&mut c, &["TTL", "dst"]), 50);
    run(&mut c, &["SET", "plain", "1"]);
    run(&mut c, &["RENAME", "dst", "plain2"]);
    run(&mut c, &["RENAME", "plain", "plain2"]);
    assert_eq!(int(&mut c, &["TTL", "plain2"]), -1);
}

#[test]
fn a_non_positive_or_past_expiry_deletes_the_key() {
    let (e, _clock, mut c) = engine();
    for (cmd, arg) in [
        ("EXPIRE", "0"),
        ("EXPIRE", "-5"),
        ("PEXPIRE", "-1"),
        ("EXPIREAT", "1"),
        ("PEXPIREAT", "0"),
    ] {
        run(&mut c, &["SET", "k", "v"]);
        assert_eq!(int(&mut c, &[cmd, "k", arg]), 1, "{cmd} {arg}");
        assert_eq!(e.dbsize(0), 0, "{cmd} {arg} must delete the key at once");
    }
    assert_eq!(int(&mut c, &["EXPIRE", "missing", "10"]), 0);
}

#[test]
fn expire_conditions_nx_xx_gt_lt() {
    let (_e, _clock, mut c) = engine();
    run(&mut c, &["SET", "k", "v"]);
    assert_eq!(
        int(&mut c, &["EXPIRE", "k", "100", "XX"]),
        0,
        "XX needs an existing TTL"
    );
    assert_eq!(
        int(&mut c, &["EXPIRE", "k", "100", "GT"]),
        0,
        "no TTL counts as infinite for GT"
    );
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "NX"]), 1);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "50", "NX"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "50", "GT"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "200", "GT"]), 1);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "300", "LT"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "150", "LT"]), 1);
    assert_eq!(int(&mut c, &["TTL", "k"]), 150);
    assert_eq!(int(&mut c, &["PERSIST", "k"]), 1);
    assert_eq!(int(&mut c, &["PERSIST", "k"]), 0);
    assert_eq!(
        int(&mut c, &["EXPIRE", "k", "10", "LT"]),
        1,
        "no TTL counts as infinite for LT"
    );
    let err = run(&mut c, &["EXPIRE", "k", "10", "NX", "XX"]);
    assert!(matches!(err, Value::ServerError(_)), "{err:?}");
}

#[test]
fn a_watched_key_that_expires_aborts_exec() {
    let (_e, clock, mut c) = engine();
    run(&mut c, &["SET", "k", "v", "PX", "100"]);
    run(&mut c, &["WATCH", "k"]);
    clock.advance(Duration::from_millis(200));
    run(&mut c, &["MULTI"]);
    run(&mut c, &["SET", "other", "1"]);
    assert_eq!(run(&mut c, &["EXEC"]), Value::Nil);
    assert_eq!(int(&mut c, &["EXISTS", "other"]), 0);
}

#[test]
fn the_active_cycle_reclaims_keys_nobody_reads() {
    const KEYS: usize = 100_000;
    let (engine, clock, mut c) = engine();
    let mut pipe = redis::pipe();
    for i in 0..KEYS {
        pipe.cmd("SET")
            .arg(format!("session:{i}"))
            .arg("x")
            .arg("PX")
            .arg(1_000)
            .ignore();
    }
    // A few keys without TTL must survive the cycle.
    for i in 0..10 {
        pipe.cmd("SET").arg(format!("keep:{i}")).arg("x").ignore();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let () = pipe.query_async(&mut c).await.expect("pipeline");
    });
    assert_eq!(engine.dbsize(0), KEYS + 10);

    clock.advance(Duration::from_secs(2));
    // Nobody reads the keys: only the background cycle can reclaim them.
    let started = Instant::now();
    while engine.dbsize(0) > 10 && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        engine.dbsize(0),
        10,
        "expired keys left after {:?}",
        started.elapsed()
    );
    println!(
        "active expiry reclaimed {KEYS} keys in {:?}",
        started.elapsed()
    );
    assert_eq!(int(&mut c, &["EXISTS", "keep:0", "keep:9"]), 2);
}

#[test]
fn one_cycle_stops_sampling_when_few_keys_are_expired() {
    let (engine, clock, mut c) = engine();
    // The expired keys are spread out: a cycle samples consecutive keys of
    // the TTL table from a random place, and 4 of 5 expired keys side by
    // side would fall in one sample of 20 about once in a hundred runs.
    for i in 0..1_000 {
        let key = format!("k{i}");
        let ttl = if i % 200 == 0 { "100" } else { "100000" };
        run(&mut c, &["SET", &key, "v", "PX", ttl]);
    }
    clock.advance(Duration::from_secs(1));
    let stats = engine.run_expire_cycle();
    // 0.5% of the sample is expired: below the 10% threshold, one sample of 20.
    assert_eq!(stats.sampled, 20, "{stats:?}");
    assert!(!stats.timed_out);
}
