//! The Redis Cluster backend against a private local cluster of three
//! masters: routing, pipelines across slots, transactions in one slot,
//! SCAN over every master.

use std::sync::Arc;

use redmodel::{Db, Error, KeyLayout};
use redmodel_suite::{redis_server_available, RedisCluster};

/// A private cluster, or `None` (skipped, with a note) without
/// redis-server outside CI.
fn cluster_or_skip(test: &str) -> Option<RedisCluster> {
    if !redis_server_available(test) {
        return None;
    }
    Some(RedisCluster::start(3).unwrap_or_else(|e| panic!("{test}: {e}")))
}

#[tokio::test]
async fn commands_pipelines_and_scans_reach_every_master() -> Result<(), Error> {
    let Some(cluster) = cluster_or_skip("commands_pipelines_and_scans_reach_every_master") else {
        return Ok(());
    };
    // One seed is enough; a dead seed among live ones is skipped.
    let db = Db::connect_cluster([
        "redis://127.0.0.1:1/".to_string(),
        cluster.urls()[1].clone(),
    ])
    .await?;
    assert!(db.is_cluster());
    assert_eq!(db.backend_name(), "cluster");
    assert_eq!(db.key_layout(), KeyLayout::Cluster);
    assert_eq!(
        db.with_key_layout(KeyLayout::Plain).key_layout(),
        KeyLayout::Cluster
    );

    // 300 keys spread over the three masters' slots.
    let keys: Vec<String> = (0..300).map(|i| format!("k:{i}")).collect();
    let mut pipe = redis::pipe();
    for (i, key) in keys.iter().enumerate() {
        pipe.cmd("SET").arg(key).arg(i).ignore();
    }
    db.query_pipeline::<()>(&pipe).await?;
    let mut pipe = redis::pipe();
    for key in &keys {
        pipe.cmd("GET").arg(key);
    }
    let values: Vec<usize> = db.query_pipeline(&pipe).await?;
    assert_eq!(values, (0..300).collect::<Vec<_>>(), "replies in order");

    // Every master holds some of them; SCAN finds them all.
    for url in cluster.urls() {
        let node = Db::connect(&url).await?;
        let n: u64 = node.query(&redis::cmd("DBSIZE")).await?;
        assert!(n > 50, "{url} holds {n}");
    }
    let mut found = db.scan_keys("k:*").await?;
    found.sort_by_key(|k| k[2..].parse::<u32>().unwrap_or(0));
    assert_eq!(found, keys);

    // An atomic pipeline within one hash tag.
    let mut tx = redis::pipe();
    tx.atomic()
        .cmd("SET")
        .arg("{t}:a")
        .arg(1)
        .ignore()
        .cmd("INCR")
        .arg("{t}:b")
        .cmd("MGET")
        .arg("{t}:a")
        .arg("{t}:b");
    let (b, both): (i64, Vec<i64>) = db.query_pipeline(&tx).await?;
    assert_eq!((b, both), (1, vec![1, 1]));
    Ok(())
}

#[tokio::test]
async fn optimistic_transactions_lose_no_update() -> Result<(), Error> {
    let Some(cluster) = cluster_or_skip("optimistic_transactions_lose_no_update") else {
        return Ok(());
    };
    let db = Arc::new(Db::connect_cluster(cluster.urls()).await?);
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let db = Arc::clone(&db);
            tokio::spawn(async move {
                db.transaction(&["{acct}:a", "{acct}:b"], 64, |tx| async move {
                    let a: Option<i64> = tx.query(redis::cmd("GET").arg("{acct}:a")).await?;
                    let mut pipe = redis::pipe();
                    pipe.cmd("SET")
                        .arg("{acct}:a")
                        .arg(a.unwrap_or(0) + 1)
                        .ignore()
                        .cmd("INCR")
                        .arg("{acct}:b")
                        .ignore();
                    Ok((pipe, ()))
                })
                .await
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task")?;
    }
    let (a, b): (i64, i64) = db
        .query(redis::cmd("MGET").arg("{acct}:a").arg("{acct}:b"))
        .await?;
    assert_eq!((a, b), (32, 32), "every transfer landed once");
    Ok(())
}
