//! The cluster layout's ordered steps (`write::stepped`): what a crash
//! between two steps leaves, and races that the steps must settle. Each
//! test runs on every backend with the cluster layout forced on the test's
//! database (a cluster backend has it already), so the steps are the ones
//! a Redis Cluster runs.

use std::sync::Arc;
use std::time::Duration;

use redmodel::prelude::*;
use redmodel::{Error, KeyLayout};
use redmodel_suite::backend_tests;

/// `racer:1` = {name (unique), points (sorted), tags, seen (recent)}.
#[derive(Admin, Debug, Clone, PartialEq)]
pub(crate) struct Racer {
    #[redmodel(pk)]
    pub(crate) id: u32,
    #[redmodel(unique)]
    pub(crate) name: String,
    #[redmodel(sorted)]
    pub(crate) points: i64,
    #[redmodel(tags)]
    pub(crate) tags: Vec<String>,
    #[redmodel(recent = 10)]
    pub(crate) seen: Option<u64>,
}

pub(crate) fn racer(id: u32, name: &str, points: i64, tags: &[&str]) -> Racer {
    Racer {
        id,
        name: name.into(),
        points,
        tags: tags.iter().map(|t| t.to_string()).collect(),
        seen: Some(u64::from(id)),
    }
}

/// The test's database in the cluster layout.
fn cluster_db(db: &Db) -> Db {
    db.with_key_layout(KeyLayout::Cluster)
}

async fn zscore(db: &Db, member: &str) -> Option<f64> {
    db.query(redis::cmd("ZSCORE").arg("racer:_sorted:points").arg(member))
        .await
        .unwrap()
}

async fn tag_members(db: &Db, tag: &str) -> Vec<String> {
    let key = Racer::TAGS_TAGS.key_in(db, tag).unwrap_or_default();
    let mut members: Vec<String> = db.query(redis::cmd("SMEMBERS").arg(key)).await.unwrap();
    members.sort();
    members
}

backend_tests! {
    /// A claim left pending by a writer that died before writing its
    /// object (an entry with a TTL naming an object that does not hold the
    /// value): another object is refused while the lease runs, reads do
    /// not show the claimant and do not prune the claim, and once the
    /// lease lapses the value is free.
    exclusive async fn a_pending_claim_blocks_until_its_lease_lapses(ctx) -> redmodel::Result<()> {
        let db = &cluster_db(&ctx.db);
        let entry = "racer:_unique:name:ada";
        db.query::<()>(redis::cmd("RPUSH").arg(entry).arg("racer:9")).await?;
        db.query::<()>(redis::cmd("PEXPIRE").arg(entry).arg(30_000)).await?;

        let err = racer(1, "ada", 0, &[]).insert(db).await.unwrap_err();
        assert!(
            matches!(&err, Error::Unique { holder, .. } if holder == "racer:9"),
            "{err}"
        );
        assert!(!Racer::at(1).exists(db).await?, "nothing written");
        assert_eq!(Racer::NAME_UNIQUE.find(db, "ada").await?, None);
        let still: Option<String> = db.query(redis::cmd("LINDEX").arg(entry).arg(0)).await?;
        assert_eq!(still.as_deref(), Some("racer:9"), "a read leaves a pending claim");

        db.query::<()>(redis::cmd("PEXPIRE").arg(entry).arg(1)).await?;
        tokio::time::sleep(Duration::from_millis(20)).await;
        racer(1, "ada", 0, &[]).insert(db).await?;
        assert_eq!(Racer::NAME_UNIQUE.holder(db, "ada").await?, Some(Racer::at(1)));
        let ttl: i64 = db.query(redis::cmd("PTTL").arg(entry)).await?;
        assert_eq!(ttl, -1, "the claim is confirmed: no lease left");
        Ok(())
    }

    /// A write stopped between its object's write and the confirmation of
    /// its claim (the entry names the object, which holds the value, and
    /// still has its lease): the claim would lapse and leave the value
    /// unindexed, free for another object. `check` reports it, and
    /// `repair` makes the entry permanent; a pending claim whose object
    /// does not hold the value (not written yet) is left to lapse.
    exclusive async fn a_claim_its_object_holds_but_never_confirmed_is_repaired(ctx) -> redmodel::Result<()> {
        use redmodel::model::check::{check, repair, Kind};
        let db = &cluster_db(&ctx.db);
        db.query::<()>(&redis::cmd("FLUSHALL")).await?;
        racer(1, "cy", 0, &[]).insert(db).await?;
        let held = db.key_layout().stored("racer:_unique:name:cy").into_owned();
        db.query::<()>(redis::cmd("PEXPIRE").arg(&held).arg(30_000)).await?;
        let unwritten = db.key_layout().stored("racer:_unique:name:dee").into_owned();
        db.query::<()>(redis::cmd("RPUSH").arg(&unwritten).arg("racer:2")).await?;
        db.query::<()>(redis::cmd("PEXPIRE").arg(&unwritten).arg(30_000)).await?;

        let report = check(db, |_| ()).await?;
        assert_eq!(report.count(Kind::MissingIndexEntry), 1, "{report}: {:#?}", report.examples);
        assert_eq!(report.count(Kind::StaleIndexEntry), 0, "{report}");
        let fixed = repair(db, |_| ()).await?;
        assert!(fixed.after.is_clean(), "{}", fixed.after);
        let ttl: i64 = db.query(redis::cmd("PTTL").arg(&held)).await?;
        assert_eq!(ttl, -1, "the claim its object holds is permanent");
        assert_eq!(Racer::NAME_UNIQUE.holder(db, "cy").await?, Some(Racer::at(1)));
        let ttl: i64 = db.query(redis::cmd("PTTL").arg(&unwritten)).await?;
        assert!(ttl > 0, "the claim of an object not written keeps its lease: {ttl}");
        Ok(())
    }

    /// A crash between the object's write and its index entries (the hash
    /// written, nothing else): the tag read checks the field, and
    /// `rebuild_indexes` puts every entry back.
    exclusive async fn a_crash_after_the_object_step_is_repaired_by_a_reindex(ctx) -> redmodel::Result<()> {
        let db = &cluster_db(&ctx.db);
        db.query::<()>(
            redis::cmd("HSET")
                .arg("racer:1")
                .arg("name")
                .arg("bo")
                .arg("points")
                .arg(7)
                .arg("tags")
                .arg(r#"["x"]"#),
        )
        .await?;
        assert_eq!(Racer::NAME_UNIQUE.find(db, "bo").await?, None);
        assert!(Racer::TAGS_TAGS.with(db, "x").await?.is_empty());

        let report = redmodel::model::migrate::rebuild_indexes::<Racer, _>(
            db,
            redmodel::model::migrate::PassOptions::default(),
            |_| std::ops::ControlFlow::<()>::Continue(()),
        )
        .await?;
        assert!(report.finished && report.conflicts.is_empty(), "{report:?}");
        assert_eq!(Racer::NAME_UNIQUE.holder(db, "bo").await?, Some(Racer::at(1)));
        assert_eq!(zscore(db, "racer:1").await, Some(7.0));
        assert_eq!(tag_members(db, "x").await, ["racer:1"]);
        Ok(())
    }

    /// 16 tasks on worker threads set one object's sorted and tag fields
    /// four times each, for ten objects: whatever
    /// order their steps interleave in, the sorted score and the tag sets
    /// end equal to the stored fields.
    exclusive async fn racing_writes_leave_the_entries_equal_to_the_fields(ctx) -> redmodel::Result<()> {
        let db = Arc::new(cluster_db(&ctx.db));
        // Worker threads, so that the tasks' steps really interleave (on one
        // thread, the memory engine's replies are ready at once).
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .expect("runtime");
        for id in 1..=10u32 {
            racer(id, &format!("r{id}"), 0, &["t0"]).insert(&db).await?;
            let tasks: Vec<_> = (1..=16i64)
                .map(|n| {
                    let db = Arc::clone(&db);
                    runtime.spawn(async move {
                        let handle = Racer::at(id);
                        for round in 0..4 {
                            handle.set(&db, Racer::POINTS, n * 100 + round).await?;
                            let tag = format!("t{}", (n + round) % 4);
                            handle.set(&db, Racer::TAGS, vec![tag]).await?;
                        }
                        Ok::<(), Error>(())
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("task")?;
            }
            let member = format!("racer:{id}");
            let stored = Racer::at(id).load(&db).await?.expect("the racer");
            assert_eq!(zscore(&db, &member).await, Some(stored.points as f64), "{member}");
            for tag in ["t0", "t1", "t2", "t3"] {
                let holds = stored.tags.iter().any(|t| t == tag);
                assert_eq!(
                    tag_members(&db, tag).await.contains(&member),
                    holds,
                    "{member}: tag {tag}, field {:?}",
                    stored.tags
                );
            }
        }
        runtime.shutdown_background();
        Ok(())
    }

    /// A failed write releases the claim it made: the value is free again
    /// at once.
    exclusive async fn a_failed_write_releases_its_claim(ctx) -> redmodel::Result<()> {
        let db = &cluster_db(&ctx.db);
        // racer:2 is not a hash: its write fails after the claim.
        db.query::<()>(redis::cmd("SET").arg("racer:2").arg("x")).await?;
        let err = racer(2, "dee", 0, &[]).insert(db).await.unwrap_err();
        assert!(matches!(err, Error::WrongType { .. } | Error::UnexpectedType { .. }), "{err}");
        let entry: i64 = db.query(redis::cmd("EXISTS").arg("racer:_unique:name:dee")).await?;
        assert_eq!(entry, 0, "the claim is released");
        racer(3, "dee", 0, &[]).insert(db).await?;
        Ok(())
    }

    /// Two writes of one object claim one value at once and one fails
    /// after its claim: it takes back only its own claim, so the value
    /// stays the other write's until that write confirms it, and no other
    /// object takes it meanwhile (which would leave two objects holding
    /// it). The write in flight is played by hand: its claim, then its
    /// object's write and confirmation.
    exclusive async fn a_failed_write_leaves_a_racing_write_of_its_object_its_claim(ctx) -> redmodel::Result<()> {
        let db = &cluster_db(&ctx.db);
        let entry = "racer:_unique:name:eve";
        db.query::<()>(redis::cmd("RPUSH").arg(entry).arg("racer:2")).await?;
        db.query::<()>(redis::cmd("PEXPIRE").arg(entry).arg(30_000)).await?;
        // racer:2 is not written yet: a change of it fails after its claim.
        let err = Racer::at(2).set(db, Racer::NAME, "eve".to_string()).await.unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        let ttl: i64 = db.query(redis::cmd("PTTL").arg(entry)).await?;
        assert!(ttl > 0, "the claim in flight is still pending (PTTL {ttl})");
        let err = racer(3, "eve", 0, &[]).insert(db).await.unwrap_err();
        assert!(
            matches!(&err, Error::Unique { holder, .. } if holder == "racer:2"),
            "{err}"
        );
        // The write in flight lands and confirms its claim.
        racer(2, "eve", 0, &[]).insert(db).await?;
        let holders: Vec<String> = db.query(redis::cmd("LRANGE").arg(entry).arg(0).arg(-1)).await?;
        assert_eq!(holders, ["racer:2"]);
        let ttl: i64 = db.query(redis::cmd("PTTL").arg(entry)).await?;
        assert_eq!(ttl, -1, "confirmed: no lease left");
        assert!(!Racer::at(3).exists(db).await?, "racer:3 was refused");
        Ok(())
    }
}

/// A private 3-master Redis Cluster and a `Db` on it; `None` (the test
/// skipped, as `what`) where no redis-server is installed.
async fn private_cluster(
    what: &str,
) -> redmodel::Result<Option<(redmodel_suite::RedisCluster, Arc<Db>)>> {
    if !redmodel_suite::redis_server_available(what) {
        return Ok(None);
    }
    let cluster = redmodel_suite::RedisCluster::start(3).expect("a private 3-master cluster");
    let urls = cluster.urls();
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    let db = Arc::new(Db::connect_cluster(&seeds).await?);
    Ok(Some((cluster, db)))
}

/// `redis-cli --cluster reshard` moves 1,500 slots from one master
/// to another while 4 tasks insert racers and increment their sorted field:
/// every write the Db acknowledged is there afterwards,
/// every sorted score equals its field and every tag set holds its racers;
/// the same Db goes on working. Writes refused during the move (a
/// transient error) are counted and reported, not lost: they were never
/// acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reshard_under_live_traffic_loses_no_acknowledged_write() -> redmodel::Result<()> {
    let Some((cluster, db)) = private_cluster("reshard under live traffic").await? else {
        return Ok(());
    };
    let urls = cluster.urls();
    let port = |url: &str| {
        url.rsplit(':')
            .next()
            .unwrap_or("")
            .trim_end_matches('/')
            .to_string()
    };
    let (from, to) = (port(&urls[0]), port(&urls[1]));
    let id_of = |port: &str| -> String {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", port, "CLUSTER", "MYID"])
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let (from_id, to_id) = (id_of(&from), id_of(&to));

    let writers = Writers::start(&db, 400, 0, write_racer);

    let reshard = tokio::task::spawn_blocking(move || {
        std::process::Command::new("redis-cli")
            .args([
                "--cluster",
                "reshard",
                &format!("127.0.0.1:{from}"),
                "--cluster-from",
                &from_id,
                "--cluster-to",
                &to_id,
                "--cluster-slots",
                "1500",
                "--cluster-yes",
            ])
            .output()
            .expect("redis-cli --cluster reshard")
    });
    let out = reshard.await.expect("the reshard task");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (acked, refused) = writers.stop().await?;
    let acked: Vec<u32> = acked.into_iter().map(|(id, _)| id).collect();
    println!(
        "reshard of 1500 slots under traffic: {} writes acknowledged, {refused} refused as transient",
        acked.len()
    );
    assert!(!acked.is_empty());
    for &id in &acked {
        let member = format!("racer:{id}");
        let stored = Racer::at(id)
            .load(&db)
            .await?
            .unwrap_or_else(|| panic!("{member} is gone"));
        assert_eq!(stored.points, i64::from(id), "{member}");
        assert_eq!(zscore(&db, &member).await, Some(f64::from(id)), "{member}");
        let tag = format!("t{}", id % 3);
        assert!(
            tag_members(&db, &tag).await.contains(&member),
            "{member} not in {tag}"
        );
    }
    // A write refused half-way through its steps (a transient error) may
    // have left entries behind: the repair finds them, and nothing after.
    let fixed = redmodel::model::check::repair(&db, |_| ()).await?;
    println!("after the reshard: {} -> {}", fixed.before, fixed.after);
    assert!(
        fixed.after.is_clean(),
        "{}: {:#?}",
        fixed.after,
        fixed.after.examples
    );
    // The same Db, after the move.
    racer(99_999, "after", 1, &[]).insert(&db).await?;
    assert_eq!(
        Racer::NAME_UNIQUE.holder(&db, "after").await?,
        Some(Racer::at(99_999))
    );
    drop(cluster);
    Ok(())
}

/// `{rs_shop}rs_buyer:0`: a buyer of the grouped reshard test.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rs_buyer", slot_group = "rs_shop")]
struct Buyer {
    #[redmodel(pk)]
    id: u32,
}

/// `{rs_shop}rs_stock:1`: the one stock counter every sale increments.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rs_stock", slot_group = "rs_shop")]
struct Stock {
    #[redmodel(pk)]
    id: u32,
    sold: i64,
}

/// `{rs_shop}rs_sale:7`: a sale naming its buyer, with a unique code.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rs_sale", slot_group = "rs_shop")]
struct Sale {
    #[redmodel(pk)]
    id: u32,
    buyer: Ref<Buyer>,
    #[redmodel(unique)]
    code: String,
}

/// `{rs_shop}rs_buyer:0:sales`: a buyer's sales.
#[derive(Relation)]
#[redmodel(table = "sales", owner = Buyer, member = Sale)]
struct BuyerSales;

/// The buyer of sale `id`: writer task `w` sells to buyer `w`.
fn buyer_of(id: u32) -> ObjectRef<Buyer> {
    Buyer::at(id / 100_000)
}

/// A sale as one grouped typed transaction: the stock counter
/// incremented, the sale inserted with its unique code and its reference
/// to its buyer (marked), and linked to the buyer.
fn write_sale(
    db: Arc<Db>,
    id: u32,
) -> futures_util::future::BoxFuture<'static, redmodel::Result<()>> {
    Box::pin(async move {
        db.transaction_with_attempts(10_000, |tx| async move {
            let buyer = buyer_of(id);
            tx.incr(&Stock::at(1), Stock::SOLD, 1).await?;
            let sale = Sale::at(id);
            tx.insert(
                &sale,
                &Sale {
                    id,
                    buyer: buyer.clone(),
                    code: format!("s{id}"),
                },
            );
            tx.link(&buyer.relation::<BuyerSales>(), &sale);
            Ok::<_, Error>(())
        })
        .await
    })
}

/// The one slot of a slot group moves to another master (CLUSTER SETSLOT
/// IMPORTING/MIGRATING, MIGRATE a few keys at a time, SETSLOT NODE: what
/// `redis-cli --cluster reshard` does for each slot) while 4 tasks run
/// grouped typed transactions (a sale with a unique code, naming and
/// linked to its buyer, and the one stock counter incremented). Every
/// transaction is acknowledged (the client follows the slot, and retries
/// a unit the move refused: none is refused to the caller), every
/// acknowledged sale is there whole, no sale is half written (the counter
/// equals the sales, each with its code and its link), `check` is clean,
/// and every key of the group is still in the one slot, on the new master.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_slot_moved_under_live_traffic_loses_no_grouped_write() -> redmodel::Result<()> {
    let Some((cluster, db)) = private_cluster("a group slot moved under live traffic").await?
    else {
        return Ok(());
    };
    let urls = cluster.urls();
    let slot = redmodel::memory::hash_slot(b"rs_shop");
    for w in 0..4 {
        Buyer { id: w }.insert(&db).await?;
    }
    Stock { id: 1, sold: 0 }.insert(&db).await?;

    let writers = Writers::start(&db, 2_000, 0, write_sale);
    writers.await_acked(200, Duration::from_secs(30)).await;
    let from = cluster.owner_of(slot).expect("the group slot's owner");
    let to = (from + 1) % 3;
    let cluster = Arc::new(cluster);
    let moving = Arc::clone(&cluster);
    let moved = tokio::task::spawn_blocking(move || {
        moving.move_slot(slot, to, 8, Duration::from_millis(15))
    })
    .await
    .expect("the move task")
    .expect("the slot moves");
    writers.mark();
    writers.await_after_mark(100, Duration::from_secs(30)).await;
    let (acked, refused) = writers.stop().await?;
    println!(
        "slot {slot} ({moved} keys) moved under traffic: {} grouped transactions acknowledged",
        acked.len()
    );
    assert_eq!(refused, 0, "a unit refused to its caller during the move");
    assert_eq!(cluster.owner_of(slot).expect("the owner"), to);
    assert!(
        acked.iter().any(|(_, after)| *after),
        "writes went on after the move"
    );

    for &(id, _) in &acked {
        let sale = Sale::at(id).load(&db).await?;
        assert_eq!(
            sale.map(|s| (s.buyer, s.code)),
            Some((buyer_of(id), format!("s{id}"))),
            "rs_sale:{id}"
        );
    }
    // Every sale stored, acknowledged or not, is whole: its code's entry,
    // its link, and one unit of stock.
    let sales = ObjectRef::<Sale>::scan(&db).await?;
    assert!(sales.len() >= acked.len());
    let sold = Stock::at(1).load(&db).await?.expect("the stock").sold;
    assert_eq!(sold, sales.len() as i64, "the counter and the sales");
    let mut linked = 0;
    for w in 0..4 {
        linked += Buyer::at(w)
            .relation::<BuyerSales>()
            .members(&db)
            .await?
            .len();
    }
    assert_eq!(linked, sales.len(), "every sale linked once");
    for sale in &sales {
        let id = sale.pk();
        assert_eq!(
            Sale::CODE_UNIQUE.holder(&db, format!("s{id}")).await?,
            Some(sale.clone())
        );
    }
    let report = redmodel::model::check::check(&db, |_| ()).await?;
    assert!(report.is_clean(), "{report}: {:#?}", report.examples);
    // Every key of the group is in its slot, on the master it moved to.
    let keys = db.scan_keys("*rs_*").await?;
    assert!(keys.len() > sales.len());
    for key in &keys {
        assert!(key.starts_with("{rs_shop}"), "{key}");
        assert_eq!(redmodel::memory::hash_slot(key.as_bytes()), slot, "{key}");
    }
    let target = redis::Client::open(urls[to].as_str())?;
    let mut conn = target.get_multiplexed_async_connection().await?;
    let there: usize = redis::cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(slot)
        .query_async(&mut conn)
        .await?;
    assert_eq!(there, keys.len(), "the slot's keys are on the new master");
    Ok(())
}

/// A master is SIGKILLed while 4 tasks write racers (insert, then an
/// indexed increment) and its replica takes over. Redis
/// replicates asynchronously, so a write the master acknowledged just
/// before dying may never have reached the replica: the test counts those
/// (and prints the figure) rather than pretending there are none. What it
/// asserts: every error during the failover is transient, the same `Db`
/// writes again afterwards, every acknowledged write that survived is
/// whole (its score equals its field), and the consistency repair leaves
/// nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_master_under_live_traffic_loses_only_unreplicated_writes() -> redmodel::Result<()>
{
    if !redmodel_suite::redis_server_available("a killed master under live traffic") {
        return Ok(());
    }
    let mut cluster =
        redmodel_suite::RedisCluster::start_with_replicas(3).expect("a cluster with replicas");
    let urls = cluster.urls();
    let seeds: Vec<&str> = urls[..3].iter().map(String::as_str).collect();
    let db = Arc::new(Db::connect_cluster(&seeds).await?);

    let writers = Writers::start(&db, u32::MAX, 0, write_racer);
    // Beside them, on the same `Db`, writers whose every write waits for
    // its replica (WAIT 1): none of theirs that returned Ok may be lost.
    // After the kill the promoted replica has no replica, so each WAIT on
    // its slots blocks its connection for the whole second: each waits on
    // an exclusive connection, so that the writers above, on the shared
    // connection, never queue behind those waits.
    let replicated = Writers::start(
        &Arc::new(db.with_replica_acks(1, Duration::from_secs(1))),
        u32::MAX,
        4,
        write_racer,
    );
    // The kill comes once both have acknowledged enough writes to tell
    // (counted, not waited for a fixed time: a loaded machine writes less).
    writers.await_acked(101, Duration::from_secs(30)).await;
    replicated.await_acked(51, Duration::from_secs(30)).await;
    cluster.nodes()[0].kill();
    writers.mark();
    replicated.mark();
    // The failover takes a few seconds (cluster-node-timeout 2000), then
    // traffic goes on against the promoted replica: at least 7 s, and on
    // until enough writes were acknowledged after the kill to tell.
    tokio::time::sleep(Duration::from_secs(7)).await;
    writers.await_after_mark(150, Duration::from_secs(30)).await;
    let (acked, refused) = writers.stop().await?;
    let (acked_replicated, refused_replicated) = replicated.stop().await?;
    let after_kill = acked.iter().filter(|(_, after)| *after).count();
    let acked: Vec<u32> = acked.into_iter().map(|(id, _)| id).collect();
    let lost = lost_of(&db, &acked).await?;
    let acked_replicated: Vec<u32> = acked_replicated.into_iter().map(|(id, _)| id).collect();
    let lost_replicated = lost_of(&db, &acked_replicated).await?;
    println!(
        "a master killed under traffic: {} writes acknowledged ({after_kill} after the kill), {lost} \
         of them lost with the master (asynchronous replication), {refused} refused as transient \
         during the failover; with WAIT 1: {} acknowledged, {lost_replicated} lost, \
         {refused_replicated} refused (transient or not replicated in time)",
        acked.len(),
        acked_replicated.len()
    );
    assert_eq!(
        lost_replicated, 0,
        "a write acknowledged by its replica was lost"
    );
    assert!(
        acked_replicated.len() > 50,
        "{} replicated writes",
        acked_replicated.len()
    );
    assert!(
        acked.len() > 100,
        "too little traffic to tell: {}",
        acked.len()
    );
    // Writes went on after the kill (a quarter of the keys are the dead
    // master's: its slots were served again, by the promoted replica).
    assert!(
        after_kill > 100,
        "{after_kill} writes acknowledged after the kill"
    );
    assert!(!cluster.nodes()[0].is_running(), "the master stays dead");
    let fixed = redmodel::model::check::repair(&db, |_| ()).await?;
    println!("after the failover: {} -> {}", fixed.before, fixed.after);
    assert!(
        fixed.after.is_clean(),
        "{}: {:#?}",
        fixed.after,
        fixed.after.examples
    );
    racer(99_998, "after-failover", 1, &[]).insert(&db).await?;
    drop(cluster);
    Ok(())
}

/// How many of the racers `acked` are gone, or there without their
/// increment or its score: acknowledged by a master that died before
/// replicating them.
async fn lost_of(db: &Db, acked: &[u32]) -> redmodel::Result<usize> {
    let mut lost = 0;
    for &id in acked {
        match Racer::at(id).load(db).await? {
            Some(stored) if stored.points == i64::from(id) => {
                let member = format!("racer:{id}");
                assert_eq!(zscore(db, &member).await, Some(f64::from(id)), "{member}");
            }
            _ => lost += 1,
        }
    }
    Ok(lost)
}

/// What the writers did: each acknowledged write (its id, and whether it
/// came after [`Writers::mark`]), and how many were refused as transient.
type Acknowledged = (Vec<(u32, bool)>, u32);

/// One write of the live traffic: the write of id `id`.
type Write = fn(Arc<Db>, u32) -> futures_util::future::BoxFuture<'static, redmodel::Result<()>>;

/// A racer's write: an insert with a tag, then an indexed increment.
fn write_racer(
    db: Arc<Db>,
    id: u32,
) -> futures_util::future::BoxFuture<'static, redmodel::Result<()>> {
    Box::pin(async move {
        let tag = format!("t{}", id % 3);
        racer(id, &format!("r{id}"), 0, &[&tag]).insert(&db).await?;
        Racer::at(id)
            .incr(&db, Racer::POINTS, i64::from(id))
            .await?;
        Ok(())
    })
}

/// Four tasks making writes (`write`, [`write_racer`] for the reshard
/// and failover tests), each at most `max` times, until stopped: the live
/// traffic of the reshard and failover tests. Task `w` writes the ids from
/// `(first + w) * 100_000` on. A write refused as transient, or done
/// but not replicated in time ([`Db::with_replica_acks`]), is counted as
/// refused, not acknowledged.
struct Writers {
    stop: Arc<std::sync::atomic::AtomicBool>,
    marked: Arc<std::sync::atomic::AtomicBool>,
    /// Writes acknowledged since [`mark`](Self::mark).
    after_mark: Arc<std::sync::atomic::AtomicUsize>,
    /// Writes acknowledged in all.
    acked: Arc<std::sync::atomic::AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<redmodel::Result<Acknowledged>>>,
}

impl Writers {
    fn start(db: &Arc<Db>, max: u32, first: u32, write: Write) -> Writers {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let marked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let after_mark = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let acked_in_all = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks = (0..4u32)
            .map(|w| {
                let (db, stop, marked) = (Arc::clone(db), Arc::clone(&stop), Arc::clone(&marked));
                let after_mark = Arc::clone(&after_mark);
                let acked_in_all = Arc::clone(&acked_in_all);
                tokio::spawn(async move {
                    let (mut acked, mut refused) = (Vec::new(), 0u32);
                    for n in 0..max {
                        if stop.load(std::sync::atomic::Ordering::Relaxed) {
                            break;
                        }
                        let id = (first + w) * 100_000 + n;
                        let written = write(Arc::clone(&db), id).await;
                        match written {
                            Ok(_) => {
                                let after = marked.load(std::sync::atomic::Ordering::Relaxed);
                                if after {
                                    after_mark.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                                acked_in_all.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                acked.push((id, after))
                            }
                            Err(e)
                                if e.is_transient()
                                    || matches!(e, redmodel::Error::NotReplicated { .. }) =>
                            {
                                refused += 1;
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    Ok((acked, refused))
                })
            })
            .collect();
        Writers {
            stop,
            marked,
            after_mark,
            acked: acked_in_all,
            tasks,
        }
    }

    /// Waits until `n` writes were acknowledged since [`mark`](Self::mark),
    /// for at most `limit`: on a loaded machine the failover and the
    /// writes after it take longer than on a quiet one.
    async fn await_after_mark(&self, n: usize, limit: Duration) {
        await_count(&self.after_mark, n, limit).await;
    }

    /// Waits until `n` writes were acknowledged in all, for at most `limit`.
    async fn await_acked(&self, n: usize, limit: Duration) {
        await_count(&self.acked, n, limit).await;
    }

    /// From now on, acknowledged writes are marked (as after a fault).
    fn mark(&self) {
        self.marked
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Stops the tasks: what they did.
    async fn stop(self) -> redmodel::Result<Acknowledged> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (mut acked, mut refused) = (Vec::new(), 0);
        for task in self.tasks {
            let (a, r) = task.await.expect("a writer")?;
            acked.extend(a);
            refused += r;
        }
        Ok((acked, refused))
    }
}

/// Waits until `count` reaches `n`, for at most `limit`.
async fn await_count(count: &std::sync::atomic::AtomicUsize, n: usize, limit: Duration) {
    let started = std::time::Instant::now();
    while count.load(std::sync::atomic::Ordering::Relaxed) < n && started.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

backend_tests! {
    /// The requests each indexed write sends (`db.round_trips()`), in
    /// either layout: the figures of the round-trip table in
    /// `docs/performance.md`.
    /// In the cluster layout the steps after the object's write go at
    /// once, so a write takes fewer round trips than requests. The
    /// sequence runs twice and the second is counted: on a cluster each
    /// master learns a script from its first EVALSHA's NOSCRIPT.
    exclusive async fn the_requests_of_indexed_writes(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let mut counts = Vec::new();
        for _ in 0..2 {
            counts.clear();
            let mut count = |before: u64| counts.push(db.round_trips() - before);
            let before = db.round_trips();
            racer(1, "a", 0, &["x"]).insert(db).await?;
            count(before);
            let before = db.round_trips();
            Racer::at(1).set(db, Racer::NAME, "b".to_string()).await?;
            count(before);
            let before = db.round_trips();
            Racer::at(1).set(db, Racer::TAGS, vec!["y".to_string()]).await?;
            count(before);
            let before = db.round_trips();
            Racer::at(1).incr(db, Racer::POINTS, 1).await?;
            count(before);
            let before = db.round_trips();
            assert!(Racer::delete(db, 1).await?);
            count(before);
        }
        // Insert, unique change, tag change, sorted incr, delete. In the
        // cluster layout: the claim, the object's write, then at once the
        // confirmation and the sorted, tag and recent entries, then the
        // re-read of the fields (7 requests, 4 round trips); the claim,
        // the write, then the confirmation beside the release of the old
        // value (the fence, read the field, the delete: 6 requests,
        // 5 round trips); the write, the tag sets, the re-read; the same
        // for the score; the delete, then the release beside the entries
        // and the re-read.
        let want = match db.key_layout() {
            KeyLayout::Plain => [1, 1, 1, 1, 1],
            KeyLayout::Cluster => [7, 6, 3, 3, 8],
        };
        assert_eq!(counts, want, "{:?} layout", db.key_layout());
        Ok(())
    }
}
