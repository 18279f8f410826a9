//! `Db::connect_sentinel`: the primary of a private replica set found
//! through three private sentinels, and followed through a failover
//! (`SENTINEL FAILOVER`, and the primary killed) while tasks write with
//! replica acknowledgements.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redmodel::model::check::check;
use redmodel::prelude::*;
use redmodel::{CacheConfig, Error, SentinelConfig};
use redmodel_suite::{redis_server_available, SentinelSet};

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
