//! Client-side caching over RESP, where the differential traps cannot
//! look (CLIENT LIST's fields, INFO's counts, the table's limit, a moved
//! clock); `tests/engine/traps/tracking.txt` compares the rest with Redis.

#![cfg(feature = "server")]

use std::time::Duration;

use redis::Value;

use crate::resp::test_client::{with_clients, Client};
use crate::{Engine, ManualClock};

/// What these tests ask of a connection beyond its replies.
trait Ask {
    fn text(&mut self, line: &str) -> String;
    fn id(&mut self) -> i64;
}

impl Ask for Client {
    fn text(&mut self, line: &str) -> String {
        match self.call(line) {
            Value::BulkString(b) => String::from_utf8(b).unwrap(),
            Value::VerbatimString { text, .. } => text,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn id(&mut self) -> i64 {
        match self.call("CLIENT ID") {
            Value::Int(id) => id,
            other => panic!("{other:?}"),
        }
    }
}

fn invalidate(keys: &[&str]) -> Value {
    Value::Push {
        kind: redis::PushKind::Invalidate,
        data: vec![Value::Array(
            keys.iter()
                .map(|k| Value::BulkString(k.as_bytes().to_vec()))
                .collect(),
        )],
    }
}

/// The value of `field` in an INFO text.
fn info_field(info: &str, field: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .trim()
        .to_string()
}

/// CLIENT LIST and CLIENT INFO show `t`, `B` and `R` (a redirection to a
/// connection that went away, once an invalidation finds it gone) and the
/// redirection, as Redis 7.0 does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_list_shows_tracking_flags_and_redirection() {
    let engine = Engine::new();
    let addr_engine = engine.clone();
    with_clients(engine, move |mut a, mut b| {
        let b_id = b.id();
        let line = a.text("CLIENT INFO");
        assert!(
            line.contains(" flags=N ") && line.contains(" redir=-1 "),
            "{line}"
        );
        assert_eq!(
            a.call(&format!("CLIENT TRACKING on BCAST REDIRECT {b_id}")),
            Value::Okay
        );
        let line = a.text("CLIENT INFO");
        assert!(
            line.contains(" flags=tB ") && line.contains(&format!(" redir={b_id} ")),
            "{line}"
        );
        assert_eq!(b.call("QUIT"), Value::Okay);
        drop(b);
        // The target leaves the store once its connection is dropped.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while addr_engine.shared.store.lock().tracking.peers.len() > 1 {
            assert!(std::time::Instant::now() < deadline, "b stayed");
            std::thread::sleep(Duration::from_millis(5));
        }
        a.call("SET k 1");
        let list = a.text("CLIENT LIST");
        assert!(list.contains(" flags=tRB "), "{list}");
        a.call("CLIENT TRACKING off");
        let line = a.text("CLIENT INFO");
        assert!(
            line.contains(" flags=N ") && line.contains(" redir=-1 "),
            "{line}"
        );
    })
    .await;
}

/// INFO's tracking counts: clients, keys, the clients of every key, and
/// BCAST's prefixes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_counts_tracking_clients_keys_and_prefixes() {
    with_clients(Engine::new(), |mut a, mut b| {
        a.call("CLIENT TRACKING on");
        b.call("CLIENT TRACKING on");
        a.call("MGET k1 k2");
        b.call("GET k1");
        let mut c = Client::connect(a.server());
        c.call("CLIENT TRACKING on BCAST PREFIX p: PREFIX q:");
        let info = a.text("INFO");
        assert_eq!(info_field(&info, "tracking_clients"), "3");
        assert_eq!(info_field(&info, "tracking_total_keys"), "2");
        assert_eq!(info_field(&info, "tracking_total_items"), "3");
        assert_eq!(info_field(&info, "tracking_total_prefixes"), "2");
        c.call("CLIENT TRACKING off");
        a.call("SET k1 v");
        let info = a.text("INFO");
        assert_eq!(info_field(&info, "tracking_clients"), "2");
        assert_eq!(info_field(&info, "tracking_total_keys"), "1");
        assert_eq!(info_field(&info, "tracking_total_items"), "1");
        assert_eq!(info_field(&info, "tracking_total_prefixes"), "0");
        a.call("FLUSHALL");
        let info = a.text("INFO");
        assert_eq!(info_field(&info, "tracking_total_keys"), "0");
    })
    .await;
}

/// Past `tracking-table-max-keys`, the next command invalidates tracked
/// keys until the table is back under the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_over_its_limit_invalidates_keys() {
    with_clients(Engine::new(), |mut a, mut b| {
        a.call("HELLO 3");
        a.call("CLIENT TRACKING on");
        a.call("MGET k1 k2 k3");
        b.call("CONFIG SET tracking-table-max-keys 1");
        let mut invalidated = Vec::new();
        b.call("PING");
        a.write_raw(b"PING\r\n");
        loop {
            match a.read() {
                Value::Push { data, .. } => invalidated.push(data),
                Value::SimpleString(s) if s == "PONG" => break,
                other => panic!("{other:?}"),
            }
        }
        // The pushes of the PING that brought the table back follow it.
        while invalidated.len() < 2 {
            match a.read() {
                Value::Push { data, .. } => invalidated.push(data),
                other => panic!("{other:?}"),
            }
        }
        let info = b.text("INFO stats");
        assert_eq!(info_field(&info, "tracking_total_keys"), "1");
    })
    .await;
}

/// A key tracked by one client and expired when another reads it (the
/// clock moved, not slept) is invalidated; so is a key an in-process
/// connection writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_and_in_process_writes_invalidate() {
    let clock = ManualClock::new(1_000_000);
    let engine = Engine::with_clock(clock.clone());
    let inner = engine.clone();
    with_clients(engine, move |mut a, mut b| {
        a.call("HELLO 3");
        a.call("CLIENT TRACKING on");
        b.call("SET k v PX 100");
        a.call("GET k");
        clock.advance(Duration::from_millis(200));
        assert_eq!(b.call("GET k"), Value::Nil);
        assert_eq!(a.read(), invalidate(&["k"]));
        a.call("GET other");
        inner.connection().execute(&[b"SET", b"other", b"1"]);
        assert_eq!(a.read(), invalidate(&["other"]));
    })
    .await;
}

/// A script's read tracks the script's declared keys in Redis 7.0, the
/// keys it reads from Redis 7.2 on (an EVAL_RO that reads nothing tracks
/// nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_reads_track_what_the_version_tracks() {
    for (engine, invalidated) in [
        (Engine::new(), &["k1", "k2"][..]),
        (
            Engine::new().with_version(crate::RedisVersion::V7_4),
            &["k2"],
        ),
    ] {
        with_clients(engine, move |mut a, mut b| {
            a.call("HELLO 3");
            a.call("CLIENT TRACKING on");
            a.call("EVAL \"redis.call('get', KEYS[2])\" 2 k1 k2");
            b.call("MSET k1 1 k2 2 k3 3");
            for key in invalidated {
                assert_eq!(a.read(), invalidate(&[key]));
            }
            assert_eq!(a.call("PING"), Value::SimpleString("PONG".into()));
        })
        .await;
    }
}
