//! CLIENT over RESP in Redis 7.4 mode, against redis-server 7.4.1's
//! replies: CLIENT LIST's `watch`, `lib-name` and `lib-ver` fields and the
//! `T` flag, NO-TOUCH's reads that leave access times, KILL's MAXAGE; and
//! 7.0 mode keeping 7.0.15's fields.

#![cfg(feature = "server")]

use std::time::Duration;

use redis::Value;

use crate::error::error_value;
use crate::resp::serve;
use crate::resp::test_client::{with_clients, Client};
use crate::{Engine, ManualClock, RedisVersion};

fn text(c: &mut Client, line: &str) -> String {
    match c.call(line) {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        Value::VerbatimString { text, .. } => text,
        other => panic!("{line}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_list_has_the_fields_of_7_4() {
    let engine = Engine::new().with_version(RedisVersion::V7_4);
    with_clients(engine, |mut a, mut b| {
        let line = text(&mut a, "CLIENT INFO");
        assert!(line.contains(" multi=-1 watch=0 qbuf=26 "), "{line}");
        assert!(line.ends_with(" resp=2 lib-name= lib-ver=\n"), "{line}");
        assert_eq!(a.call("WATCH x y x"), Value::Okay);
        assert_eq!(a.call("CLIENT SETINFO lib-name foo"), Value::Okay);
        assert_eq!(a.call("CLIENT SETINFO LIB-VER 1.2"), Value::Okay);
        assert_eq!(
            a.call("CLIENT SETINFO lib-name \"a b\""),
            error_value("ERR lib-name cannot contain spaces, newlines or special characters.")
        );
        assert_eq!(a.call("CLIENT NO-TOUCH on"), Value::Okay);
        let list = text(&mut b, "CLIENT LIST");
        let first = list.lines().next().unwrap();
        assert!(first.contains(" flags=T "), "{first}");
        assert!(first.contains(" watch=2 "), "{first}");
        assert!(first.ends_with(" lib-name=foo lib-ver=1.2"), "{first}");
        // RESET clears NO-TOUCH and the watches, not the library's name.
        assert_eq!(a.call("RESET"), Value::SimpleString("RESET".into()));
        let line = text(&mut a, "CLIENT INFO");
        assert!(line.contains(" flags=N "), "{line}");
        assert!(line.contains(" watch=0 "), "{line}");
        assert!(line.ends_with(" lib-name=foo lib-ver=1.2\n"), "{line}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_list_keeps_the_fields_of_7_0() {
    with_clients(Engine::new(), |mut a, _| {
        a.call("WATCH x");
        let line = text(&mut a, "CLIENT INFO");
        assert!(line.contains(" multi=-1 qbuf=26 "), "{line}");
        assert!(line.ends_with(" resp=2\n"), "{line}");
        assert_eq!(
            a.call("CLIENT KILL MAXAGE 1"),
            error_value("ERR syntax error")
        );
    })
    .await;
}

/// A NO-TOUCH client's reads leave a key's idle time; its TOUCH, and the
/// reads of other clients, reset it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_touch_reads_leave_the_access_time() {
    let clock = ManualClock::new(1_000_000);
    let engine = Engine::with_clock(clock.clone()).with_version(RedisVersion::V7_4);
    with_clients(engine, move |mut a, mut b| {
        a.call("SET k v");
        a.call("RPUSH l x");
        assert_eq!(a.call("CLIENT NO-TOUCH on"), Value::Okay);
        clock.advance(Duration::from_secs(10));
        assert_eq!(a.call("GET k"), Value::BulkString(b"v".to_vec()));
        a.call("LRANGE l 0 -1");
        assert_eq!(a.call("OBJECT IDLETIME k"), Value::Int(10));
        assert_eq!(a.call("OBJECT IDLETIME l"), Value::Int(10));
        assert_eq!(a.call("TOUCH k"), Value::Int(1));
        assert_eq!(a.call("OBJECT IDLETIME k"), Value::Int(0));
        b.call("LLEN l");
        assert_eq!(a.call("OBJECT IDLETIME l"), Value::Int(0));
        assert_eq!(a.call("CLIENT NO-TOUCH off"), Value::Okay);
        clock.advance(Duration::from_secs(5));
        a.call("GET k");
        assert_eq!(a.call("OBJECT IDLETIME k"), Value::Int(0));
    })
    .await;
}

/// CLIENT KILL MAXAGE kills the clients connected at least that many
/// seconds ago (not the caller, unless SKIPME no), with 7.4.1's errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_kill_maxage_kills_the_old_clients() {
    let clock = ManualClock::new(1_000_000);
    let engine = Engine::with_clock(clock.clone()).with_version(RedisVersion::V7_4);
    let server = serve(engine, "127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    tokio::task::spawn_blocking(move || {
        let mut a = Client::connect(addr);
        let mut old = Client::connect(addr);
        old.call("PING");
        clock.advance(Duration::from_secs(5));
        let mut young = Client::connect(addr);
        young.call("PING");
        for (arg, error) in [
            ("str", "ERR maxage is not an integer or out of range"),
            ("-1", "ERR maxage should be greater than 0"),
            ("0", "ERR maxage should be greater than 0"),
        ] {
            assert_eq!(
                a.call(&format!("CLIENT KILL MAXAGE {arg}")),
                error_value(error)
            );
        }
        assert_eq!(a.call("CLIENT KILL MAXAGE 100"), Value::Int(0));
        assert_eq!(a.call("CLIENT KILL MAXAGE 3"), Value::Int(1));
        assert_eq!(young.call("PING"), Value::SimpleString("PONG".into()));
    })
    .await
    .unwrap();
    server.shutdown().await;
}
