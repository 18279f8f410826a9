//! `Db::connect_sentinel`: the primary of a private replica set found
//! through three private sentinels, and followed through a failover
//! (`SENTINEL FAILOVER`, and the primary killed) while tasks write with
//! replica acknowledgements; a failover the sentinels announce followed at
//! once, with the new primary's name and version; a subscriber moving to
//! the new primary; and all of it over TLS.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use redmodel::model::check::check;
use redmodel::prelude::*;
use redmodel::{CacheConfig, Error, SentinelConfig, SubscriberEvent};
use redmodel_suite::{redis_server_available, Proxy, SentinelSet, TlsFiles};

use crate::tls_acl::{can_run, Certs};

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "sentinelentry")]
struct Entry {
    #[redmodel(pk)]
    id: String,
    task: u32,
    #[redmodel(sorted)]
    n: i64,
}

/// A set for `test`, or `None` (with a note) where the suite skips its
/// real-Redis tests.
fn start_or_skip(test: &str, name: &str) -> Option<SentinelSet> {
    if !redis_server_available(test) {
        return None;
    }
    Some(SentinelSet::start(name).unwrap_or_else(|e| panic!("{test}: {e}")))
}

/// Timeouts short enough for a test's failover, long enough for a busy
/// machine.
fn config(set: &SentinelSet) -> SentinelConfig {
    SentinelConfig::new(set.name(), set.sentinel_urls())
        .timeouts(Duration::from_millis(500), Duration::from_secs(2))
}

/// What the data node on `port` holds under `key`, read directly.
fn read_on(set: &mut SentinelSet, port: u16, key: &str) -> Option<String> {
    let node = set.node(port)?;
    let mut conn = node.client().get_connection().ok()?;
    redis::cmd("GET").arg(key).query(&mut conn).ok()?
}

#[tokio::test]
async fn reads_and_writes_go_to_the_primary_the_sentinels_name() -> Result<(), Error> {
    let test = "reads_and_writes_go_to_the_primary_the_sentinels_name";
    let Some(mut set) = start_or_skip(test, "rw") else {
        return Ok(());
    };
    let db = Db::connect_sentinel(config(&set)).await?;
    assert_eq!(db.backend_name(), "sentinel");
    db.query::<()>(redis::cmd("SET").arg("greeting").arg("hello"))
        .await?;
    let got: String = db.query(redis::cmd("GET").arg("greeting")).await?;
    assert_eq!(got, "hello");
    let entry = Entry {
        id: "a".into(),
        task: 0,
        n: 7,
    };
    entry.clone().insert(&db).await?;
    assert_eq!(Entry::load(&db, "a".to_string()).await?, Some(entry));
    let primary = set.primary_port().expect("the sentinels answer");
    assert_eq!(
        read_on(&mut set, primary, "greeting").as_deref(),
        Some("hello")
    );
    Ok(())
}

#[tokio::test]
async fn a_sentinel_that_is_down_is_skipped() -> Result<(), Error> {
    let Some(mut set) = start_or_skip("a_sentinel_that_is_down_is_skipped", "skip") else {
        return Ok(());
    };
    set.sentinels()[0].kill();
    let db = Db::connect_sentinel(config(&set)).await?;
    db.query::<()>(redis::cmd("SET").arg("k").arg(1)).await?;
    let got: i64 = db.query(redis::cmd("GET").arg("k")).await?;
    assert_eq!(got, 1);
    Ok(())
}

#[tokio::test]
async fn a_master_name_no_sentinel_knows_is_a_config_error() {
    let test = "a_master_name_no_sentinel_knows_is_a_config_error";
    let Some(set) = start_or_skip(test, "known") else {
        return;
    };
    let unknown = SentinelConfig::new("unknown", set.sentinel_urls());
    match Db::connect_sentinel(unknown).await {
        Err(Error::Config(text)) => assert!(text.contains("\"unknown\""), "{text}"),
        other => panic!("expected Error::Config, got {other:?}"),
    }
    // No sentinel at all: the sentinels' own connection error.
    let nobody = SentinelConfig::new("known", ["redis://127.0.0.1:1"]);
    match Db::connect_sentinel(nobody).await {
        Err(err) => assert!(err.is_connection(), "{err:?}"),
        Ok(_) => panic!("nobody listens on port 1"),
    }
}

/// Marks the child process of `from_env_connects_through_the_sentinels`.
const CHILD_MARK: &str = "REDMODEL_FROM_ENV_SENTINEL_CHILD";

/// Runs inside a child process (see `from_env_connects_through_the_sentinels`).
#[tokio::test]
#[ignore = "run by from_env_connects_through_the_sentinels in a child process"]
async fn from_env_sentinel_child() {
    if std::env::var(CHILD_MARK).is_err() {
        return;
    }
    let db = Db::from_env().await.expect("from_env");
    assert_eq!(db.backend_name(), "sentinel");
    db.query::<()>(redis::cmd("SET").arg("from-env").arg("yes"))
        .await
        .expect("SET");
}

/// `Db::from_env` with `REDIS_SENTINEL_URLS` and `REDIS_SENTINEL_MASTER`
/// reaches the primary through the sentinels (in a child process: the
/// environment belongs to the whole process).
#[test]
fn from_env_connects_through_the_sentinels() {
    let test = "from_env_connects_through_the_sentinels";
    let Some(mut set) = start_or_skip(test, "env") else {
        return;
    };
    let exe = std::env::current_exe().expect("test binary path");
    let child = format!(
        "{}::from_env_sentinel_child",
        module_path!().split_once("::").map_or("", |(_, path)| path)
    );
    let out = std::process::Command::new(exe)
        .args(["--exact", child.as_str(), "--ignored", "--nocapture"])
        .env(CHILD_MARK, "1")
        .env_remove("REDIS_CLUSTER_URLS")
        .env("REDIS_SENTINEL_URLS", set.sentinel_urls().join(" , "))
        .env("REDIS_SENTINEL_MASTER", "env")
        .output()
        .expect("run the child test");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "the child test did not run:\n{text}"
    );
    let primary = set.primary_port().expect("the sentinels answer");
    assert_eq!(
        read_on(&mut set, primary, "from-env").as_deref(),
        Some("yes")
    );
}

/// How a failover is brought about.
#[derive(Clone, Copy, Debug)]
enum Failover {
    /// `SENTINEL FAILOVER name`: the old primary stays up.
    Asked,
    /// The primary gets SIGKILL.
    Killed,
}

#[tokio::test]
async fn an_asked_failover_loses_no_acknowledged_write() -> Result<(), Error> {
    failover_under_writers(
        "an_asked_failover_loses_no_acknowledged_write",
        Failover::Asked,
    )
    .await
}

#[tokio::test]
async fn a_killed_primary_loses_no_acknowledged_write() -> Result<(), Error> {
    failover_under_writers(
        "a_killed_primary_loses_no_acknowledged_write",
        Failover::Killed,
    )
    .await
}

/// Four tasks insert objects, each waiting for one replica (WAIT 1),
/// while the primary fails over: every insert that returned `Ok` is on
/// the new primary afterwards, the same `Db` writes there within a few
/// seconds of the sentinels' switch, its near cache emptied at the
/// switch, and the consistency check finds nothing wrong.
async fn failover_under_writers(test: &str, how: Failover) -> Result<(), Error> {
    let Some(mut set) = start_or_skip(test, "fo") else {
        return Ok(());
    };
    set.wait_discovered()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let old = set.primary_port().expect("the sentinels answer");
    let db = Db::connect_sentinel(config(&set))
        .await?
        .with_cache(CacheConfig::default())
        .await?;
    let flushes = db.cache_stats().expect("on").flushes;
    let acked = db.with_replica_acks(1, Duration::from_millis(500));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u32)
        .map(|task| {
            let (db, stop) = (acked.clone(), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut kept = Vec::new();
                // (not replicated, transient)
                let mut refused = (0u32, 0u32);
                let mut n = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let entry = Entry {
                        id: format!("{task}-{n}"),
                        task,
                        n,
                    };
                    match entry.clone().insert(&db).await {
                        Ok(_) => kept.push(entry),
                        // Not acknowledged: no promise was made. A request
                        // the lost primary had in flight is transient
                        // (Unavailable), never a bare connection error.
                        Err(Error::NotReplicated { .. }) => {
                            refused.0 += 1;
                            tokio::time::sleep(Duration::from_millis(20)).await
                        }
                        Err(e) if e.is_transient() && !e.is_connection() => {
                            refused.1 += 1;
                            tokio::time::sleep(Duration::from_millis(20)).await
                        }
                        Err(e) => panic!("task {task}: a write failed with {e:?}"),
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                (kept, refused)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    match how {
        Failover::Asked => {
            let sentinel = set.sentinels()[0].client();
            let mut conn = sentinel.get_connection().expect("a sentinel");
            let _: () = redis::cmd("SENTINEL")
                .arg("FAILOVER")
                .arg(set.name())
                .query(&mut conn)
                .expect("SENTINEL FAILOVER");
        }
        Failover::Killed => set.node(old).expect("the primary").kill(),
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let new = loop {
        match set.primary_port() {
            Some(port) if port != old => break port,
            _ => {
                assert!(Instant::now() < deadline, "{test}: no failover");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    // The same Db writes to the new primary soon after the sentinels
    // switched.
    let switched = Instant::now();
    let mut probe = 0;
    loop {
        probe += 1;
        let key = format!("probe-{probe}");
        if db
            .query::<()>(redis::cmd("SET").arg(&key).arg("on-new"))
            .await
            .is_ok()
            && read_on(&mut set, new, &key).as_deref() == Some("on-new")
        {
            break;
        }
        assert!(
            switched.elapsed() < Duration::from_secs(5),
            "{test}: the Db still does not write to the new primary"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let written = switched.elapsed();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut kept = Vec::new();
    let mut refused = (0, 0);
    for writer in writers {
        let (more, why) = writer.await.expect("a writer panicked");
        kept.extend(more);
        refused = (refused.0 + why.0, refused.1 + why.1);
    }
    assert!(
        kept.len() > 20,
        "{test}: only {} writes were acknowledged",
        kept.len()
    );
    let mut lost = Vec::new();
    for entry in &kept {
        if Entry::load(&db, entry.id.clone()).await?.as_ref() != Some(entry) {
            lost.push(entry.id.clone());
        }
    }
    assert!(
        lost.is_empty(),
        "{test}: {} of {} acknowledged writes lost: {lost:?}",
        lost.len(),
        kept.len()
    );
    assert!(
        db.cache_stats().expect("on").flushes > flushes,
        "{test}: the near cache was not emptied at the switch"
    );
    let report = check(&db, |_| ()).await?;
    assert!(report.is_clean(), "{test}: {report:?}");
    println!(
        "{test}: {} acknowledged writes kept, {} not replicated, {} transient; the Db wrote \
         to the new primary {:?} after the sentinels' switch",
        kept.len(),
        refused.0,
        refused.1,
        written
    );
    Ok(())
}

/// One section of `INFO` of the data node on `port`.
fn info_on(set: &mut SentinelSet, port: u16, section: &str) -> String {
    let Some(node) = set.node(port) else {
        return String::new();
    };
    let Ok(mut conn) = node.client().get_connection() else {
        return String::new();
    };
    redis::cmd("INFO")
        .arg(section)
        .query(&mut conn)
        .unwrap_or_default()
}

/// How many HELLO commands the data node on `port` has run.
fn hello_calls(set: &mut SentinelSet, port: u16) -> u64 {
    redmodel_suite::command_calls(&info_on(set, port, "commandstats"), "hello")
}

/// Waits (up to 20 s) until the sentinels name another primary than `old`.
async fn new_primary(set: &SentinelSet, old: u16, test: &str) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match set.primary_port() {
            Some(port) if port != old => return port,
            _ => {
                assert!(Instant::now() < deadline, "{test}: no failover");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// When the first sentinel announces a new primary (`+switch-master`),
/// heard on a subscription of the test's own to every sentinel.
async fn first_announcement(set: &SentinelSet) -> tokio::sync::oneshot::Receiver<Instant> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Arc::new(std::sync::Mutex::new(Some(tx)));
    for url in set.sentinel_urls() {
        let client = redis::Client::open(url.as_str()).expect("a sentinel URL");
        let mut pubsub = client.get_async_pubsub().await.expect("a sentinel");
        pubsub.subscribe("+switch-master").await.expect("SUBSCRIBE");
        let tx = Arc::clone(&tx);
        tokio::spawn(async move {
            if pubsub.on_message().next().await.is_some() {
                let first = tx.lock().ok().and_then(|mut tx| tx.take());
                if let Some(first) = first {
                    let _ = first.send(Instant::now());
                }
            }
        });
    }
    rx
}

/// Writes through `db` until a write lands on the node on `port`; how
/// long that took. A write the old primary still takes is no failure.
async fn until_written_on(db: &Db, set: &mut SentinelSet, port: u16, test: &str) -> Duration {
    let start = Instant::now();
    let mut probe = 0;
    loop {
        probe += 1;
        let key = format!("probe-{probe}");
        if db
            .query::<()>(redis::cmd("SET").arg(&key).arg("here"))
            .await
            .is_ok()
            && read_on(set, port, &key).as_deref() == Some("here")
        {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{test}: the Db does not write to the new primary"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Asks the sentinels for a failover away from the primary on `old` and
/// checks that `db` writes to the new primary within 3 s of their naming
/// it; how long it took. The old primary takes writes for seconds after
/// an asked failover, so only an announcement moves the `Db` this soon.
async fn failover_followed_soon(db: &Db, set: &mut SentinelSet, old: u16, test: &str) -> Duration {
    set.ask_failover().unwrap_or_else(|e| panic!("{test}: {e}"));
    let new = new_primary(set, old, test).await;
    let took = until_written_on(db, set, new, test).await;
    assert!(
        took < Duration::from_secs(3),
        "{test}: the Db wrote to the new primary {took:?} after the sentinels named it"
    );
    took
}

/// A `SENTINEL FAILOVER` leaves the old primary up and taking writes for
/// seconds, so only the sentinels can tell the `Db`: with its periodic
/// question 30 s apart, it hears their `+switch-master` and writes to the
/// new primary well within the default 1 s of that question, and
/// `db.server()` is the new primary's, asked again (HELLO) at the switch
/// (another version with `REDIS_REPLICA_SERVER_BIN`).
#[tokio::test]
async fn an_announced_failover_is_followed_at_once_and_the_new_primary_described(
) -> Result<(), Error> {
    let test = "an_announced_failover_is_followed_at_once_and_the_new_primary_described";
    let Some(mut set) = start_or_skip(test, "heard") else {
        return Ok(());
    };
    set.wait_discovered()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let old = set.primary_port().expect("the sentinels answer");
    let db = Db::connect_sentinel(config(&set).check_every(Duration::from_secs(30))).await?;
    let replica_port = set
        .node_ports()
        .into_iter()
        .find(|&p| p != old)
        .expect("a replica");
    assert_eq!(
        hello_calls(&mut set, replica_port),
        0,
        "{test}: something already asked the replica HELLO"
    );
    let announced = first_announcement(&set).await;
    set.ask_failover().unwrap_or_else(|e| panic!("{test}: {e}"));
    let new = new_primary(&set, old, test).await;
    assert_eq!(new, replica_port);
    let heard = tokio::time::timeout(Duration::from_secs(20), announced)
        .await
        .unwrap_or_else(|_| panic!("{test}: no sentinel announced the switch"))
        .expect("an announcement");
    until_written_on(&db, &mut set, new, test).await;
    let followed = heard.elapsed();
    assert!(
        followed < Duration::from_millis(500),
        "{test}: the Db wrote to the new primary {followed:?} after the announcement"
    );
    // The server is the new primary's, asked again there.
    assert!(
        hello_calls(&mut set, new) >= 1,
        "{test}: the new primary was not asked HELLO"
    );
    let server = info_on(&mut set, new, "server");
    let field = |name: &str| {
        server.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k == name).then(|| v.trim().to_string())
        })
    };
    // Valkey names its own version beside the Redis one it answers as.
    let version = field("valkey_version")
        .or_else(|| field("redis_version"))
        .expect("a version");
    let name = field("server_name").unwrap_or_else(|| "redis".to_string());
    assert_eq!(
        (
            db.server().name().to_string(),
            db.server().version().to_string()
        ),
        (name, version),
        "{test}"
    );
    println!("{test}: the Db wrote to the new primary {followed:?} after the first announcement");
    Ok(())
}

#[tokio::test]
async fn a_subscriber_follows_an_asked_failover() -> Result<(), Error> {
    subscriber_through("a_subscriber_follows_an_asked_failover", Failover::Asked).await
}

#[tokio::test]
async fn a_subscriber_follows_a_killed_primary() -> Result<(), Error> {
    subscriber_through("a_subscriber_follows_a_killed_primary", Failover::Killed).await
}

/// A subscriber of a Sentinel `Db` reports the failover as
/// `Resubscribed`, and then receives on the new primary what it
/// subscribed to (channels and patterns, not what it unsubscribed from).
async fn subscriber_through(test: &str, how: Failover) -> Result<(), Error> {
    let Some(mut set) = start_or_skip(test, "sub") else {
        return Ok(());
    };
    set.wait_discovered()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let old = set.primary_port().expect("the sentinels answer");
    let db = Db::connect_sentinel(config(&set)).await?;
    let mut sub = db.subscriber().await?;
    sub.subscribe("news").await?;
    sub.psubscribe("alerts:*").await?;
    sub.subscribe("gone").await?;
    sub.unsubscribe("gone").await?;
    assert_eq!(db.publish("news", "before").await?, 1);
    let event = |event: Option<SubscriberEvent>| match event {
        Some(SubscriberEvent::Message(m)) => (m.channel.clone(), m.text().into_owned()),
        other => panic!("{test}: expected a message, got {other:?}"),
    };
    let first = tokio::time::timeout(Duration::from_secs(5), sub.next_event()).await;
    assert_eq!(
        event(first.expect("a message within 5 s")),
        ("news".to_string(), "before".to_string())
    );
    match how {
        Failover::Asked => set.ask_failover().unwrap_or_else(|e| panic!("{test}: {e}")),
        Failover::Killed => set.node(old).expect("the primary").kill(),
    }
    let new = new_primary(&set, old, test).await;
    let gap = tokio::time::timeout(Duration::from_secs(15), sub.next_event())
        .await
        .unwrap_or_else(|_| panic!("{test}: the subscriber reported no gap"));
    assert_eq!(gap, Some(SubscriberEvent::Resubscribed), "{test}");
    // Published on the new primary directly: reaches the subscriber once
    // it listens there.
    let node = set.node(new).expect("the new primary").client();
    let mut direct = node.get_connection().expect("the new primary");
    let publish = |conn: &mut redis::Connection, channel: &str, text: &str| -> usize {
        redis::cmd("PUBLISH")
            .arg(channel)
            .arg(text)
            .query(conn)
            .expect("PUBLISH")
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while publish(&mut direct, "news", "after") == 0 {
        assert!(
            Instant::now() < deadline,
            "{test}: nobody listens on the new primary"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(publish(&mut direct, "gone", "unheard"), 0, "{test}");
    assert_eq!(publish(&mut direct, "alerts:fire", "run"), 1, "{test}");
    assert_eq!(publish(&mut direct, "news", "last"), 1, "{test}");
    let mut got = Vec::new();
    while got.len() < 3 {
        match tokio::time::timeout(Duration::from_secs(5), sub.next_event()).await {
            // A demoted old primary closes a connection the subscriber may
            // have opened there first.
            Ok(Some(SubscriberEvent::Resubscribed)) => {}
            Ok(other) => got.push(event(other)),
            Err(_) => panic!("{test}: only {got:?} arrived"),
        }
    }
    let expected = [("news", "after"), ("alerts:fire", "run"), ("news", "last")];
    assert_eq!(
        got,
        expected.map(|(c, t)| (c.to_string(), t.to_string())),
        "{test}"
    );
    Ok(())
}

/// The sentinels and the data nodes listen with TLS (a private CA), and
/// replicate and watch each other over it: the `Db` finds the primary over
/// TLS, writes there over TLS, hears a failover on its TLS subscription to
/// the sentinels, and writes to the new primary.
#[tokio::test]
async fn sentinels_and_the_primary_are_reached_over_tls() -> Result<(), Error> {
    let test = "sentinels_and_the_primary_are_reached_over_tls";
    if !can_run(test, true) || !redis_server_available(test) {
        return Ok(());
    }
    let certs = Certs::make();
    let files = TlsFiles {
        cert: certs.file("server.crt"),
        key: certs.file("server.key"),
        ca: certs.file("ca.crt"),
        auth_clients: false,
    };
    let mut set = SentinelSet::start_tls("tls", files).unwrap_or_else(|e| panic!("{test}: {e}"));
    set.wait_discovered()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let old = set.primary_port().expect("the sentinels answer");
    let tls_config = || {
        SentinelConfig::new(set.name(), set.sentinel_tls_urls())
            .timeouts(Duration::from_millis(500), Duration::from_secs(2))
            .sentinel_tls(certs.tls(false))
    };
    // The nodes speak TLS only on the ports the sentinels name.
    let plain_nodes = tls_config().timeouts(Duration::from_millis(300), Duration::from_millis(300));
    assert!(
        Db::connect_sentinel(plain_nodes).await.is_err(),
        "{test}: a plain connection to a TLS port"
    );
    let db = Db::connect_sentinel(
        tls_config()
            .node_tls(Some(certs.tls(false)))
            .check_every(Duration::from_secs(30)),
    )
    .await?;
    db.query::<()>(redis::cmd("SET").arg("over").arg("tls"))
        .await?;
    assert_eq!(read_on(&mut set, old, "over").as_deref(), Some("tls"));
    // Only the announcement, heard over TLS, moves the Db this soon.
    failover_followed_soon(&db, &mut set, old, test).await;
    Ok(())
}

/// How many clients of the sentinel `url` are subscribed to a channel.
fn subscribed_clients(url: &str) -> usize {
    let Ok(client) = redis::Client::open(url) else {
        return 0;
    };
    let Ok(mut conn) = client.get_connection() else {
        return 0;
    };
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(&mut conn)
        .unwrap_or_default();
    list.lines()
        .filter(|line| {
            line.split(' ')
                .any(|kv| kv.starts_with("sub=") && kv != "sub=0")
        })
        .count()
}

/// The `Db` listens on every sentinel while it lives, and a dropped `Db`
/// leaves no subscription behind, without waiting for its next question.
#[tokio::test]
async fn a_dropped_db_leaves_no_subscription_on_the_sentinels() -> Result<(), Error> {
    let test = "a_dropped_db_leaves_no_subscription_on_the_sentinels";
    let Some(set) = start_or_skip(test, "drop") else {
        return Ok(());
    };
    let urls = set.sentinel_urls();
    let db = Db::connect_sentinel(config(&set).check_every(Duration::from_secs(30))).await?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !urls.iter().all(|url| subscribed_clients(url) == 1) {
        assert!(
            Instant::now() < deadline,
            "{test}: not subscribed on every sentinel"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(db);
    let deadline = Instant::now() + Duration::from_secs(2);
    while urls.iter().any(|url| subscribed_clients(url) > 0) {
        assert!(
            Instant::now() < deadline,
            "{test}: subscriptions outlive the Db"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// A proxy in front of each sentinel of `set`, and a config that reaches
/// the sentinels through them: the periodic question 30 s apart, so that
/// only the subscriptions can tell the `Db` of a failover, and a heartbeat
/// of 200 ms.
async fn behind_proxies(set: &SentinelSet) -> (Vec<Proxy>, SentinelConfig) {
    let mut proxies = Vec::new();
    for sentinel in set.sentinel_addrs() {
        proxies.push(Proxy::start(sentinel).await.expect("a proxy"));
    }
    let config = SentinelConfig::new(set.name(), proxies.iter().map(Proxy::url))
        .timeouts(Duration::from_millis(500), Duration::from_secs(1))
        .check_every(Duration::from_secs(30))
        .heartbeat(Duration::from_millis(200));
    (proxies, config)
}

/// Waits (up to 5 s) until every sentinel of `urls` has at least `n`
/// subscribed clients.
async fn until_subscribed(urls: &[String], n: usize, test: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !urls.iter().all(|url| subscribed_clients(url) >= n) {
        assert!(
            Instant::now() < deadline,
            "{test}: not {n} subscriptions on every sentinel"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sentinels that stop answering without closing the connection (a proxy
/// that stops forwarding: a half-open TCP connection) are noticed by the
/// subscriptions' heartbeat within the heartbeat and the response timeout
/// (plus the pause before subscribing again): the `Db` subscribes on a new
/// connection to each, and hears the next failover on it at once.
#[tokio::test]
async fn a_sentinel_gone_silent_is_noticed_and_its_subscription_opened_again() -> Result<(), Error>
{
    let test = "a_sentinel_gone_silent_is_noticed_and_its_subscription_opened_again";
    let Some(mut set) = start_or_skip(test, "silent") else {
        return Ok(());
    };
    set.wait_discovered()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let old = set.primary_port().expect("the sentinels answer");
    let (proxies, config) = behind_proxies(&set).await;
    let db = Db::connect_sentinel(config).await?;
    let urls = set.sentinel_urls();
    until_subscribed(&urls, 1, test).await;
    let before: Vec<usize> = proxies.iter().map(Proxy::accepted).collect();
    for proxy in &proxies {
        proxy.freeze();
    }
    let frozen = Instant::now();
    // Heartbeat 200 ms + response timeout 1 s + 1 s before subscribing
    // again, with room for a busy machine.
    let bound = Duration::from_secs(4);
    while proxies
        .iter()
        .zip(&before)
        .any(|(proxy, &before)| proxy.accepted() == before)
    {
        assert!(
            frozen.elapsed() < bound,
            "{test}: a silent sentinel went unnoticed for {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let noticed = frozen.elapsed();
    // The frozen connections still count as subscribed on the sentinels:
    // a second subscription on each is the new one.
    until_subscribed(&urls, 2, test).await;
    // Only an announcement, heard on a new subscription, moves the Db
    // this soon.
    let took = failover_followed_soon(&db, &mut set, old, test).await;
    println!("{test}: the silent sentinels were noticed after {noticed:?}; the Db followed the failover {took:?} after the sentinels named the new primary");
    Ok(())
}

/// A primary that stops answering without closing the connection
/// (SIGSTOP, with the sentinels told to wait a minute before calling it
/// down, so that no failover comes) is noticed by the subscriber's
/// heartbeat: it subscribes again once the primary answers, reports the
/// gap as `Resubscribed`, and receives on its new connection alone.
#[tokio::test]
async fn a_subscriber_notices_a_primary_gone_silent_and_subscribes_again() -> Result<(), Error> {
    let test = "a_subscriber_notices_a_primary_gone_silent_and_subscribes_again";
    let Some(mut set) = start_or_skip(test, "stopped") else {
        return Ok(());
    };
    set.wait_discovered()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    set.set_down_after(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let primary = set.primary_port().expect("the sentinels answer");
    let db = Db::connect_sentinel(
        config(&set)
            .timeouts(Duration::from_millis(500), Duration::from_secs(1))
            .check_every(Duration::from_secs(30))
            .heartbeat(Duration::from_millis(200)),
    )
    .await?;
    let mut sub = db.subscriber().await?;
    sub.subscribe("news").await?;
    assert_eq!(db.publish("news", "before").await?, 1);
    match tokio::time::timeout(Duration::from_secs(5), sub.next_event()).await {
        Ok(Some(SubscriberEvent::Message(m))) => assert_eq!(m.text(), "before"),
        other => panic!("{test}: expected the first message, got {other:?}"),
    }
    // Longer than the heartbeat and the response timeout: the subscriber
    // gives its connection up meanwhile.
    set.node(primary).expect("the primary").pause();
    let waiting = tokio::spawn(async move {
        let event = tokio::time::timeout(Duration::from_secs(10), sub.next_event()).await;
        (event, sub)
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    set.node(primary).expect("the primary").resume();
    let resumed = Instant::now();
    let (event, mut sub) = waiting.await.expect("the waiting task");
    // The old connection works again after SIGCONT: only a subscriber that
    // gave it up reports a gap.
    assert_eq!(
        event.unwrap_or_else(|_| panic!("{test}: no event within 10 s")),
        Some(SubscriberEvent::Resubscribed),
        "{test}"
    );
    let gap = resumed.elapsed();
    // Exactly one subscription: the given-up connection is closed.
    let node = set.node(primary).expect("the primary").client();
    let mut direct = node.get_connection().expect("the primary");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let heard: usize = redis::cmd("PUBLISH")
            .arg("news")
            .arg("after")
            .query(&mut direct)
            .expect("PUBLISH");
        if heard == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{test}: {heard} subscriptions on the primary"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    loop {
        match tokio::time::timeout(Duration::from_secs(5), sub.next_event()).await {
            Ok(Some(SubscriberEvent::Message(m))) if m.text() == "after" => break,
            // An earlier "after" published while the old connection
            // was still open on the server is lost with it.
            Ok(Some(SubscriberEvent::Message(_))) => {}
            other => panic!("{test}: expected the message after, got {other:?}"),
        }
    }
    println!("{test}: subscribed again {gap:?} after the primary answered");
    Ok(())
}
