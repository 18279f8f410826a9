//! The Redis Cluster backend against a private local cluster of three
//! masters: routing, pipelines across slots, transactions in one slot,
//! SCAN over every master; the near cache across a failover.

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

/// A one-node cluster's node does not know its own address (no other
/// node has met it) and names itself with an empty host in CLUSTER SLOTS:
/// the node that answered, where redis-rs reaches it. What goes to every
/// master (a SCAN, a cluster-wide SCAN cursor, the near cache's tracking
/// connections) reaches it there.
#[tokio::test]
async fn a_node_named_without_a_host_is_reached_where_it_answered() -> Result<(), Error> {
    let test = "a_node_named_without_a_host_is_reached_where_it_answered";
    if !redis_server_available(test) {
        return Ok(());
    }
    let cluster = RedisCluster::start(1).unwrap_or_else(|e| panic!("{test}: {e}"));
    let db = Db::connect_cluster(cluster.urls()).await?;
    // [[start, end, [host, port, id, ...]]]
    let slots: Vec<(u16, u16, Vec<redis::Value>)> =
        db.query(redis::cmd("CLUSTER").arg("SLOTS")).await?;
    assert_eq!(slots.len(), 1, "{slots:?}");
    assert_eq!(
        slots[0].2.first(),
        Some(&redis::Value::BulkString(Vec::new())),
        "the node names itself without a host"
    );
    let keys: Vec<String> = (0..50).map(|i| format!("h:{i}")).collect();
    for key in &keys {
        db.query::<()>(redis::cmd("SET").arg(key).arg(1)).await?;
    }
    let mut found = db.scan_keys("h:*").await?;
    found.sort_by_key(|k| k[2..].parse::<u32>().unwrap_or(0));
    assert_eq!(found, keys, "scan_keys");
    // The cursor loop of a caller, through SCAN itself.
    let mut cursor = 0u64;
    let mut seen = Vec::new();
    loop {
        let (next, page): (u64, Vec<String>) = db
            .query(redis::cmd("SCAN").arg(cursor).arg("MATCH").arg("h:*"))
            .await?;
        seen.extend(page);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen.len(), keys.len(), "SCAN's cursor loop");
    // The near cache tracks the node on a connection of its own.
    let cached = db
        .clone()
        .with_cache(redmodel::CacheConfig::default())
        .await?;
    let value: i64 = cached.query(redis::cmd("GET").arg("h:1")).await?;
    assert_eq!(value, 1);
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
                db.raw_transaction(&["{acct}:a", "{acct}:b"], 64, |tx| async move {
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

#[tokio::test]
async fn a_transaction_across_slots_is_refused_before_anything_is_sent() -> Result<(), Error> {
    let Some(cluster) =
        cluster_or_skip("a_transaction_across_slots_is_refused_before_anything_is_sent")
    else {
        return Ok(());
    };
    let db = Db::connect_cluster(cluster.urls()).await?;
    let before = db.round_trips();
    let err = db
        .raw_transaction(&["{a}:x", "{b}:y"], 3, |_tx| async move {
            Ok((redis::pipe(), ()))
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::CrossSlot { keys } if keys == &["{a}:x", "{b}:y"]),
        "{err:?}"
    );
    assert_eq!(db.round_trips() - before, 0, "nothing was sent");
    Ok(())
}

/// Moves the slot of `{mv}` to another master (CLUSTER SETSLOT IMPORTING /
/// MIGRATING, MIGRATE, SETSLOT NODE), the way a resharding does, between
/// transactions on its keys: they go on working at the slot's new master.
#[tokio::test]
async fn transactions_follow_a_slot_moved_to_another_master() -> Result<(), Error> {
    let Some(cluster) = cluster_or_skip("transactions_follow_a_slot_moved_to_another_master")
    else {
        return Ok(());
    };
    let db = Db::connect_cluster(cluster.urls()).await?;
    let incr = |db: Db| async move {
        db.raw_transaction(&["{mv}:n"], 16, |tx| async move {
            let n: Option<i64> = tx.query(redis::cmd("GET").arg("{mv}:n")).await?;
            let mut pipe = redis::pipe();
            pipe.cmd("SET")
                .arg("{mv}:n")
                .arg(n.unwrap_or(0) + 1)
                .ignore();
            Ok((pipe, ()))
        })
        .await
    };
    for _ in 0..5 {
        incr(db.clone()).await?;
    }

    let (slot, to) = move_slot_of(&cluster, "{mv}:n").await?;
    for _ in 0..5 {
        incr(db.clone()).await?;
    }
    let n: i64 = db.query(redis::cmd("GET").arg("{mv}:n")).await?;
    assert_eq!(
        n, 10,
        "every transaction landed once, before and after the move"
    );
    let moved: i64 = Db::connect(&cluster.urls()[to])
        .await?
        .query(redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot))
        .await?;
    assert_eq!(moved, 1, "the key lives on its new master");
    Ok(())
}

/// A WATCH holds on the node that served it. A read after it whose slot
/// has moved meanwhile is refused, not followed to the slot's new master
/// (where the EXEC would then run with nothing watched), and the
/// transaction runs again there from its WATCH. With nothing watched, an
/// exclusive connection follows a moved slot.
#[tokio::test]
async fn a_read_after_a_watch_whose_slot_moved_runs_the_transaction_again() -> Result<(), Error> {
    let Some(cluster) = cluster_or_skip("a_read_after_a_watch_whose_slot_moved") else {
        return Ok(());
    };
    let db = Db::connect_cluster(cluster.urls()).await?;
    db.query::<()>(redis::cmd("SET").arg("{mv4}:n").arg(0))
        .await?;
    let mut conn = db.dedicated().await?;
    let n: i64 = conn.query(redis::cmd("GET").arg("{mv4}:n")).await?;
    assert_eq!(n, 0);

    let (cluster, reads) = (&cluster, Arc::new(std::sync::Mutex::new(Vec::new())));
    let n = db
        .raw_transaction(&["{mv4}:n"], 16, |tx| {
            let reads = Arc::clone(&reads);
            async move {
                if reads.lock().expect("reads").is_empty() {
                    move_slot_of(cluster, "{mv4}:n").await?;
                }
                let read = tx.query::<i64>(redis::cmd("GET").arg("{mv4}:n")).await;
                reads.lock().expect("reads").push(read.is_ok());
                let n = read?;
                let mut pipe = redis::pipe();
                pipe.cmd("SET").arg("{mv4}:n").arg(n + 1).ignore();
                Ok((pipe, n + 1))
            }
        })
        .await?;
    assert_eq!(n, 1);
    assert_eq!(
        *reads.lock().expect("reads"),
        [false, true],
        "the read after the move was refused, the next attempt's answered"
    );

    move_slot_of(cluster, "{mv4}:n").await?;
    let n: i64 = conn.query(redis::cmd("GET").arg("{mv4}:n")).await?;
    assert_eq!(n, 1, "an unwatched read follows the slot");
    Ok(())
}

/// A transaction typed command by command on `dedicated_for`, whose slot
/// moves between its WATCH and its read: the read fails with the
/// redirection (`Error::Unavailable`) instead of being answered by the new
/// master, where nothing is watched; typed again, the transaction runs
/// there.
#[tokio::test]
async fn a_typed_transaction_whose_slot_moved_after_its_watch_is_refused() -> Result<(), Error> {
    let Some(cluster) = cluster_or_skip("a_typed_transaction_whose_slot_moved_after_its_watch")
    else {
        return Ok(());
    };
    let db = Db::connect_cluster(cluster.urls()).await?;
    let key = "{mv5}:n";
    db.query::<()>(redis::cmd("SET").arg(key).arg(0)).await?;
    let mut conn = db.dedicated_for(key).await?;
    conn.query::<()>(redis::cmd("WATCH").arg(key)).await?;
    move_slot_of(&cluster, key).await?;
    let refused = conn.query::<i64>(redis::cmd("GET").arg(key)).await;
    assert!(
        matches!(&refused, Err(Error::Unavailable { source }) if source.to_string().contains("Moved")),
        "{refused:?}"
    );

    conn.query::<()>(redis::cmd("WATCH").arg(key)).await?;
    let n: i64 = conn.query(redis::cmd("GET").arg(key)).await?;
    conn.query::<()>(&redis::cmd("MULTI")).await?;
    conn.query::<()>(redis::cmd("SET").arg(key).arg(n + 1))
        .await?;
    let done: Vec<String> = conn.query(&redis::cmd("EXEC")).await?;
    assert_eq!(done, ["OK"]);
    let n: i64 = db.query(redis::cmd("GET").arg(key)).await?;
    assert_eq!(n, 1);
    Ok(())
}

/// A write whose reply does not come in time (the server is busy past
/// the response timeout, then runs it) fails with a transient error and
/// runs once: the timed-out request is not sent again.
#[tokio::test]
async fn a_write_that_timed_out_is_not_sent_again() -> Result<(), Error> {
    let Some(cluster) = cluster_or_skip("a_write_that_timed_out_is_not_sent_again") else {
        return Ok(());
    };
    let db = Db::connect_cluster_with_timeouts(
        cluster.urls(),
        std::time::Duration::from_secs(2),
        std::time::Duration::from_millis(100),
    )
    .await?;
    db.query::<()>(redis::cmd("SET").arg("{once}:n").arg(0))
        .await?;
    // Busy for 300 ms, then the increment.
    let slow = "local t = redis.call('TIME') local until_us = t[1] * 1000000 + t[2] + 300000 \
                repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= until_us \
                return redis.call('INCR', KEYS[1])";
    let outcome = db
        .query::<i64>(redis::cmd("EVAL").arg(slow).arg(1).arg("{once}:n"))
        .await;
    assert!(
        matches!(&outcome, Err(err) if err.is_transient()),
        "{outcome:?}"
    );
    // Whatever was sent has run by now.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    let n: i64 = db.query(redis::cmd("GET").arg("{once}:n")).await?;
    assert_eq!(n, 1, "the increment ran {n} times");
    Ok(())
}

/// A write whose connection drops after the server ran it, before its
/// reply came, fails with a transient error and ran once: it is not sent
/// again, alone or in a pipeline. A read is.
#[tokio::test]
async fn a_write_whose_connection_dropped_after_it_ran_is_not_sent_again() -> Result<(), Error> {
    let test = "a_write_whose_connection_dropped_after_it_ran_is_not_sent_again";
    let Some((_cluster, proxy)) = RedisCluster::behind_a_proxy(test).await else {
        return Ok(());
    };
    let db = Db::connect_cluster([proxy.url()]).await?;
    db.query::<()>(redis::cmd("SET").arg("{once}:n").arg(41))
        .await?;
    // The reply of the increment (1041) is the one cut.
    proxy.cut_reply_with(b":1041\r\n");
    let outcome = db
        .query::<i64>(redis::cmd("INCRBY").arg("{once}:n").arg(1000))
        .await;
    assert!(
        matches!(&outcome, Err(err) if err.is_transient()),
        "{outcome:?}"
    );
    let n: i64 = db.query(redis::cmd("GET").arg("{once}:n")).await?;
    assert_eq!(n, 1041, "the increment ran {} times", (n - 41) / 1000);

    // A pipeline of writes: the same.
    proxy.cut_reply_with(b":2041\r\n");
    let mut pipe = redis::pipe();
    pipe.cmd("INCRBY").arg("{once}:n").arg(1000);
    pipe.cmd("INCRBY").arg("{once}:m").arg(1);
    let outcome = db.query_pipeline::<(i64, i64)>(&pipe).await;
    assert!(
        matches!(&outcome, Err(err) if err.is_transient()),
        "{outcome:?}"
    );
    let (n, m): (i64, i64) = db
        .query(redis::cmd("MGET").arg("{once}:n").arg("{once}:m"))
        .await?;
    assert_eq!((n, m), (2041, 1), "the pipeline ran more than once");

    // A read is sent again: it changes nothing.
    proxy.cut_reply_with(b"2041");
    let n: i64 = db.query(redis::cmd("GET").arg("{once}:n")).await?;
    assert_eq!(n, 2041);
    Ok(())
}

/// A WATCH left open on a pooled cluster connection is dropped before the
/// connection's next use, on the node that holds it (UNWATCH has no key:
/// it goes to every master): a transaction there then commits, whatever
/// changed the key watched before.
#[tokio::test]
async fn a_watch_left_on_a_pooled_cluster_connection_is_dropped_where_it_holds() -> Result<(), Error>
{
    let Some(cluster) = cluster_or_skip("a_watch_left_on_a_pooled_cluster_connection") else {
        return Ok(());
    };
    let db = Db::connect_cluster(cluster.urls()).await?;
    for round in 0..12 {
        let key = format!("{{left}}:{round}");
        {
            let mut conn = db.dedicated().await?;
            conn.query::<()>(redis::cmd("WATCH").arg(&key)).await?;
        }
        db.query::<()>(redis::cmd("SET").arg(&key).arg(round))
            .await?;
        let mut conn = db.dedicated().await?;
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg("{left}:done")
            .arg(round)
            .ignore();
        let done: redis::Value = conn.query_pipeline(&pipe).await?;
        assert_ne!(
            done,
            redis::Value::Nil,
            "round {round}: the EXEC aborted over a WATCH left behind"
        );
    }
    Ok(())
}

/// A plain pipeline of reads across slots goes as one pipeline per
/// master: the replies come back in order, a command's error stays that
/// command's reply (the others are answered), and a command whose slot
/// moved after the `Db` read the slot map is redirected on its own. A
/// pipeline with writes keeps its order.
#[tokio::test]
async fn a_batch_across_slots_keeps_its_order_its_errors_and_follows_a_moved_slot(
) -> Result<(), Error> {
    let Some(cluster) = cluster_or_skip("a_batch_across_slots_follows_a_moved_slot") else {
        return Ok(());
    };
    let db = Db::connect_cluster(cluster.urls()).await?;
    let keys: Vec<String> = (0..100).map(|i| format!("b:{i}")).collect();
    let mut set = redis::pipe();
    for (i, key) in keys.iter().enumerate() {
        set.cmd("SET").arg(key).arg(i).ignore();
    }
    set.cmd("RPUSH").arg("b:list").arg("x").ignore();
    set.cmd("SET").arg("{mv2}:k").arg("here").ignore();
    db.query_pipeline::<()>(&set).await?;

    let read = || async {
        let mut get = redis::pipe();
        get.ignore_errors();
        for key in &keys {
            get.cmd("GET").arg(key);
        }
        get.cmd("GET").arg("b:list").cmd("GET").arg("{mv2}:k");
        let replies: Vec<redis::Value> = db.query_pipeline(&get).await?;
        assert_eq!(replies.len(), 102);
        for (i, reply) in replies[..100].iter().enumerate() {
            assert_eq!(reply, &redis::Value::BulkString(i.to_string().into_bytes()));
        }
        assert!(
            matches!(&replies[100], redis::Value::ServerError(e) if e.code() == "WRONGTYPE"),
            "{:?}",
            replies[100]
        );
        assert_eq!(replies[101], redis::Value::BulkString(b"here".to_vec()));
        Ok::<(), Error>(())
    };
    read().await?;
    move_slot_of(&cluster, "{mv2}:k").await?;
    read().await?;
    read().await?;

    // A write among reads: each read still sees what the writes before it
    // in the pipeline wrote.
    let mut mixed = redis::pipe();
    for i in 0..10 {
        let key = format!("w:{i}");
        mixed.cmd("SET").arg(&key).arg("new").ignore();
        mixed.cmd("GET").arg(&key);
    }
    let seen: Vec<String> = db.query_pipeline(&mixed).await?;
    assert_eq!(seen, vec!["new".to_string(); 10]);

    // A write in a pipeline that meets a moved slot runs once: the slot of
    // `{mv3}:n` moves after this `Db` read the slot map again.
    db.query::<()>(redis::cmd("SET").arg("{mv3}:n").arg(0))
        .await?;
    read().await?;
    move_slot_of(&cluster, "{mv3}:n").await?;
    let mut count = redis::pipe();
    for key in &keys {
        count.cmd("GET").arg(key).ignore();
    }
    count.cmd("INCR").arg("{mv3}:n");
    let (n,): (i64,) = db.query_pipeline(&count).await?;
    assert_eq!(n, 1, "the INCR ran once");
    let n: i64 = db.query(redis::cmd("GET").arg("{mv3}:n")).await?;
    assert_eq!(n, 1, "the INCR ran once");
    Ok(())
}

/// Moves the slot of `key` (which must exist) to the next master, the way
/// a resharding does: CLUSTER SETSLOT IMPORTING / MIGRATING, MIGRATE of
/// `key` (the slot's only key), SETSLOT NODE on every master. The slot,
/// and the index of its new master among `cluster.urls()`.
async fn move_slot_of(cluster: &RedisCluster, key: &str) -> Result<(i64, usize), Error> {
    // Who owns the slot, and who takes it.
    let nodes: Vec<Db> = {
        let mut nodes = Vec::new();
        for url in cluster.urls() {
            nodes.push(Db::connect(&url).await?);
        }
        nodes
    };
    let slot: i64 = nodes[0]
        .query(redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
        .await?;
    let mut owner = None;
    for (i, node) in nodes.iter().enumerate() {
        let n: i64 = node
            .query(redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot))
            .await?;
        if n > 0 {
            owner = Some(i);
        }
    }
    let from = owner.expect("a master holds the key");
    let to = (from + 1) % nodes.len();
    let id = |i: usize| {
        let node = nodes[i].clone();
        async move {
            node.query::<String>(redis::cmd("CLUSTER").arg("MYID"))
                .await
        }
    };
    let (from_id, to_id) = (id(from).await?, id(to).await?);
    let to_port: u16 = cluster.urls()[to]
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    nodes[to]
        .query::<()>(
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("IMPORTING")
                .arg(&from_id),
        )
        .await?;
    nodes[from]
        .query::<()>(
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("MIGRATING")
                .arg(&to_id),
        )
        .await?;
    nodes[from]
        .query::<()>(
            redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(to_port)
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(key),
        )
        .await?;
    for node in &nodes {
        node.query::<()>(
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("NODE")
                .arg(&to_id),
        )
        .await?;
    }

    Ok((slot, to))
}

/// A master dies (SIGKILL) with a replica standing by: while the cluster
/// fails over, requests fail with transient errors only
/// (`Error::is_transient`), if at all, and once the replica has taken over
/// every key written before the crash is read back through the same `Db`.
#[tokio::test]
async fn a_killed_master_fails_over_to_its_replica() -> Result<(), Error> {
    if !redis_server_available("a_killed_master_fails_over_to_its_replica") {
        return Ok(());
    }
    let mut cluster = RedisCluster::start_with_replicas(3)
        .unwrap_or_else(|e| panic!("a_killed_master_fails_over_to_its_replica: {e}"));
    let urls = cluster.urls();
    let db = Db::connect_cluster(&urls).await?;
    let mut pipe = redis::pipe();
    for i in 0..200 {
        pipe.cmd("SET").arg(format!("k:{i}")).arg(i).ignore();
    }
    db.query_pipeline::<()>(&pipe).await?;
    // Every master's writes reached its replica before the crash.
    for url in &urls[..3] {
        let acked: i64 = Db::connect(url)
            .await?
            .query(redis::cmd("WAIT").arg(1).arg(5000))
            .await?;
        assert_eq!(acked, 1, "{url}: its replica acknowledged");
    }

    cluster.nodes()[0].kill();
    let mut read = redis::pipe();
    for i in 0..200 {
        read.cmd("GET").arg(format!("k:{i}"));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    let mut failures = Vec::new();
    let values: Vec<i64> = loop {
        match db.query_pipeline(&read).await {
            Ok(values) => break values,
            Err(err) => {
                assert!(
                    err.is_transient(),
                    "a failover error must be transient: {err:?}"
                );
                assert!(
                    std::time::Instant::now() < deadline,
                    "no failover: {failures:?}"
                );
                failures.push(err.to_string());
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        }
    };
    assert_eq!(values, (0..200).collect::<Vec<i64>>());
    // Whether any request failed meanwhile depends on timing: the backend
    // sends a read again for a while after its connection is lost, and
    // may outlast the failover. The master is gone either way.
    assert!(!cluster.nodes()[0].is_running(), "the master stays dead");
    Ok(())
}

#[derive(redmodel::Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "cachedfailover")]
struct Cached {
    #[redmodel(pk)]
    id: u32,
    n: i64,
}

/// A replica takes over its master (CLUSTER FAILOVER, the old master
/// alive and demoted): the near cache sees the masters change, empties
/// itself, tracks the new master, and follows another client's writes
/// again.
#[tokio::test]
async fn a_failover_empties_the_near_cache_and_tracking_follows_the_new_master() -> Result<(), Error>
{
    use redmodel::prelude::*;
    use std::time::{Duration, Instant};
    let test = "a_failover_empties_the_near_cache_and_tracking_follows_the_new_master";
    if !redis_server_available(test) {
        return Ok(());
    }
    let cluster = RedisCluster::start_with_replicas(3).unwrap_or_else(|e| panic!("{test}: {e}"));
    let urls = cluster.urls();
    let db = Db::connect_cluster(&urls)
        .await?
        .with_cache(redmodel::CacheConfig::default())
        .await?;
    let other = Db::connect_cluster(&urls).await?;
    for id in 0..30 {
        Cached { id, n: 0 }.insert(&other).await?;
    }
    let flushes = db.cache_stats().expect("on").flushes;
    // Replica 0 takes over master 0.
    Db::connect(&urls[3])
        .await?
        .query::<()>(redis::cmd("CLUSTER").arg("FAILOVER"))
        .await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.cache_stats().expect("on").flushes == flushes {
        assert!(
            Instant::now() < deadline,
            "the cache did not see the failover"
        );
        // Reads go on meanwhile (errors of the failover are transient).
        let _ = ObjectRef::load_many(&db, &(0..30).map(Cached::at).collect::<Vec<_>>()).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Every object follows another client's write again, once tracking is
    // back on every master.
    for id in 0..30 {
        let write = loop {
            match Cached::at(id).set(&other, Cached::N, 1).await {
                Err(e) if e.is_transient() && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                done => break done,
            }
        };
        write?;
        loop {
            if let Ok(Some(c)) = Cached::load(&db, id).await {
                if c.n == 1 {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "object {id} never read 1");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let s = db.cache_stats().expect("on");
    assert!(s.hits > 0 && s.invalidations > 0, "{s:?}");
    Ok(())
}
