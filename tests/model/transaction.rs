//! Typed optimistic transactions (`Db::transaction`) on every backend, in
//! the db's own key layout and in the cluster layout forced on it (a
//! cluster backend has it already): concurrent typed transfers that must
//! lose no update and keep the leaderboard equal to the fields, and each
//! way a commit can end.

use redmodel::prelude::*;
use redmodel::redis::cluster_routing::Slot;
use redmodel::{Error, KeyLayout};
use redmodel_suite::{backend_tests, Rng};

/// `wallet:1` = {points (sorted), nick (unique), tags (tags)}.
#[derive(Admin, Debug, Clone, PartialEq)]
struct Wallet {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(sorted)]
    points: i64,
    #[redmodel(unique)]
    nick: Option<String>,
    #[redmodel(tags)]
    tags: Vec<String>,
}

fn wallet(id: u32, points: i64) -> Wallet {
    Wallet {
        id,
        points,
        nick: None,
        tags: Vec::new(),
    }
}

const WALLETS: usize = 16;
const START: i64 = 1_000;
const TASKS: usize = 64;
const TRANSFERS: usize = 100;
const AMOUNT: i64 = 10;

/// `n` wallet ids whose keys share one slot, so that a transaction over
/// any two of them can run on a Redis Cluster (WATCH and EXEC on one node).
/// In the plain layout, any ids would do; the same ones are used.
fn same_slot_ids(n: usize) -> Vec<u32> {
    let slot = |id: u32| Slot::for_key(format!("wallet:{id}"));
    let first = slot(1);
    (1..).filter(|id| slot(*id) == first).take(n).collect()
}

/// The db in each layout a test runs in: its own, and the cluster layout
/// (once, on a cluster backend).
fn layouts(db: &Db) -> Vec<Db> {
    let mut dbs = vec![db.clone()];
    if db.key_layout() == KeyLayout::Plain {
        dbs.push(db.with_key_layout(KeyLayout::Cluster));
    }
    dbs
}

async fn flush(db: &Db) -> redmodel::Result<()> {
    db.query::<()>(&redis::cmd("FLUSHALL")).await
}

async fn zscore(db: &Db, id: u32) -> redmodel::Result<Option<f64>> {
    db.query(
        redis::cmd("ZSCORE")
            .arg("wallet:_sorted:points")
            .arg(db.key_layout().stored(&format!("wallet:{id}")).as_ref()),
    )
    .await
}

/// One task's typed transfers: load both wallets, write both new totals
/// as absolute values (so that without WATCH a concurrent transfer would
/// be lost, and the leaderboard would drift from the fields).
async fn transfers(db: Db, ids: Vec<u32>, task: usize) -> redmodel::Result<u32> {
    let mut rng = Rng::for_task(task);
    let mut committed = 0;
    for _ in 0..TRANSFERS {
        let from = rng.below(ids.len());
        let to = (from + 1 + rng.below(ids.len() - 1)) % ids.len();
        let (from, to) = (Wallet::at(ids[from]), Wallet::at(ids[to]));
        let (from, to) = (&from, &to);
        let moved = db
            .transaction_with_attempts(10_000, |tx| async move {
                let a = tx.load(from).await?.ok_or(Error::Misuse("gone".into()))?;
                tokio::task::yield_now().await;
                let b = tx.load(to).await?.ok_or(Error::Misuse("gone".into()))?;
                tokio::task::yield_now().await;
                if a.points < AMOUNT {
                    return Ok(false);
                }
                tx.set(from, Wallet::POINTS, a.points - AMOUNT);
                tx.set(to, Wallet::POINTS, b.points + AMOUNT);
                Ok(true)
            })
            .await;
        let moved = match moved {
            Ok(moved) => moved,
            // On a loaded machine a transaction may wait longer than the
            // pool allows for one of its 16 connections (64 tasks contend
            // for them, each holding its own through its retries): refused
            // (`Error::Busy`) before it read or wrote anything, it is a
            // transfer not made, which the totals below must show.
            Err(e) if e.is_transient() => {
                eprintln!("task {task}: a transfer refused as transient: {e}");
                false
            }
            Err(e) => return Err(e),
        };
        committed += u32::from(moved);
    }
    Ok(committed)
}

backend_tests! {
    /// 64 tasks x 100 typed transfers between 16 wallets: the total is
    /// unchanged and every wallet's score in the sorted index equals its
    /// field, in both layouts.
    exclusive async fn typed_transfers_keep_the_total_and_the_index(ctx) -> redmodel::Result<()> {
        let ids = same_slot_ids(WALLETS);
        for db in layouts(&ctx.db) {
            flush(&db).await?;
            let started = std::time::Instant::now();
            for id in &ids {
                wallet(*id, START).insert(&db).await?;
            }
            let tasks: Vec<_> = (0..TASKS)
                .map(|task| tokio::spawn(transfers(db.clone(), ids.clone(), task)))
                .collect();
            let mut committed = 0;
            for task in tasks {
                committed += task.await.expect("transfer task panicked")?;
            }
            let mut total = 0;
            for id in &ids {
                let w = Wallet::at(*id).load(&db).await?.expect("wallet");
                total += w.points;
                assert_eq!(
                    zscore(&db, *id).await?,
                    Some(w.points as f64),
                    "the index follows wallet {id} ({:?} layout)",
                    db.key_layout()
                );
            }
            assert_eq!(total, START * WALLETS as i64, "no update lost ({:?} layout)", db.key_layout());
            eprintln!(
                "{} ({:?} layout): {committed} transfers committed in {:?}",
                ctx.backend,
                db.key_layout(),
                started.elapsed()
            );
            assert!(committed > (TASKS * TRANSFERS / 2) as u32, "only {committed} committed");
            assert_eq!(Wallet::POINTS_SORTED.len(&db).await?, WALLETS as u64);
        }
        Ok(())
    }

    /// A write of an indexed field through a transaction keeps each kind
    /// of index (unique claim and release, tag sets, sorted score), counts
    /// a full write, and a delete takes the object out of every index.
    exclusive async fn typed_writes_keep_every_index(ctx) -> redmodel::Result<()> {
        for db in layouts(&ctx.db) {
            flush(&db).await?;
            let w = Wallet::at(1);
            let w = &w;
            db.transaction(|tx| async move {
                tx.insert(w, &Wallet { nick: Some("ada".into()), tags: vec!["red".into()], ..wallet(1, 5) });
                Ok(())
            })
            .await?;
            assert_eq!(w.write_count(&db).await?, 1);
            assert_eq!(Wallet::NICK_UNIQUE.find(&db, "ada").await?.map(|w| w.id), Some(1));
            assert_eq!(Wallet::TAGS_TAGS.with(&db, "red").await?.len(), 1);

            db.transaction(|tx| async move {
                let n = tx.get(w, Wallet::POINTS).await?.unwrap_or(0);
                tx.set_many(w, [Wallet::NICK.to(Some("bob".to_string())), Wallet::TAGS.to(vec!["blue".to_string()])]);
                tx.set(w, Wallet::POINTS, n + 1);
                Ok(())
            })
            .await?;
            assert_eq!(Wallet::NICK_UNIQUE.find(&db, "ada").await?, None, "old value released");
            assert_eq!(Wallet::NICK_UNIQUE.find(&db, "bob").await?.map(|w| w.points), Some(6));
            assert!(Wallet::TAGS_TAGS.with(&db, "red").await?.is_empty());
            assert_eq!(Wallet::TAGS_TAGS.with(&db, "blue").await?.len(), 1);
            assert_eq!(zscore(&db, 1).await?, Some(6.0));

            db.transaction(|tx| async move {
                tx.delete(w);
                Ok(())
            })
            .await?;
            assert!(!w.exists(&db).await?);
            assert_eq!(zscore(&db, 1).await?, None);
            let holder: Option<String> = db.query(redis::cmd("LINDEX").arg("wallet:_unique:nick:bob").arg(0)).await?;
            assert_eq!(holder, None, "unique entry released");
            let n: u64 = db.query(redis::cmd("SCARD").arg(Wallet::TAGS_TAGS.key_in(&db, "blue").unwrap())).await?;
            assert_eq!(n, 0, "tag entry removed");
        }
        Ok(())
    }

    /// What a commit refuses writes nothing at all, not even the
    /// transaction's other writes: a unique value another object holds,
    /// one value claimed twice in one transaction, a field write on a
    /// missing object, a score that cannot be one.
    exclusive async fn a_refused_commit_writes_nothing(ctx) -> redmodel::Result<()> {
        for db in layouts(&ctx.db) {
            flush(&db).await?;
            let ids = same_slot_ids(3);
            let ids = &ids;
            let (a, b, c) = (&Wallet::at(ids[0]), &Wallet::at(ids[1]), &Wallet::at(ids[2]));
            Wallet { nick: Some("ada".into()), ..wallet(ids[0], 1) }.insert(&db).await?;
            wallet(ids[1], 2).insert(&db).await?;

            let taken = db
                .transaction(|tx| async move {
                    tx.set(a, Wallet::POINTS, 100);
                    tx.set(b, Wallet::NICK, Some("ada".to_string()));
                    Ok(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&taken, Error::Unique { field: "nick", .. }), "{taken}");

            let twice = db
                .transaction(|tx| async move {
                    tx.set(b, Wallet::NICK, Some("cy".to_string()));
                    tx.insert(c, &Wallet { nick: Some("cy".into()), ..wallet(ids[2], 3) });
                    Ok(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&twice, Error::Unique { value, .. } if value == "cy"), "{twice}");

            let missing = db
                .transaction(|tx| async move {
                    tx.set(a, Wallet::POINTS, 100);
                    tx.set(c, Wallet::POINTS, 3);
                    Ok(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&missing, Error::NotFound { key } if *key == format!("wallet:{}", ids[2])), "{missing}");

            let overflow = db
                .transaction(|tx| async move {
                    tx.set(a, Wallet::POINTS, 100);
                    tx.set(b, Wallet::POINTS, 1 << 60);
                    Ok(())
                })
                .await
                .unwrap_err();
            assert!(matches!(overflow, Error::ScoreOverflow { .. }), "{overflow}");

            assert_eq!(a.load(&db).await?.map(|w| w.points), Some(1), "{:?} layout", db.key_layout());
            assert_eq!(b.load(&db).await?, Some(wallet(ids[1], 2)));
            assert!(!c.exists(&db).await?);
            assert_eq!(Wallet::NICK_UNIQUE.find(&db, "cy").await?, None);
            assert_eq!(zscore(&db, ids[0]).await?, Some(1.0));
        }
        Ok(())
    }

    /// A write that lands between a step's read and its commit makes the
    /// step run again, on the new value: nothing of the first attempt is
    /// written. A field write on an object the step saw missing is
    /// `NotFound`; a delete then a field write of one object too.
    exclusive async fn a_concurrent_write_reruns_the_step(ctx) -> redmodel::Result<()> {
        for db in layouts(&ctx.db) {
            flush(&db).await?;
            wallet(1, 10).insert(&db).await?;
            let (w, other) = (&Wallet::at(1), &db);
            let attempts = db
                .transaction(|tx| async move {
                    let points = tx.get(w, Wallet::POINTS).await?.unwrap_or(0);
                    if tx.attempt() == 1 {
                        // Another client's write, after the WATCH.
                        w.set(other, Wallet::POINTS, 50).await?;
                    }
                    tx.set(w, Wallet::POINTS, points + 1);
                    Ok(tx.attempt())
                })
                .await?;
            assert_eq!(attempts, 2);
            assert_eq!(w.get(&db, Wallet::POINTS).await?, Some(51));
            assert_eq!(zscore(&db, 1).await?, Some(51.0));

            let gone = Wallet::at(2);
            let gone = &gone;
            let err = db
                .transaction(|tx| async move {
                    assert_eq!(tx.load(gone).await?, None);
                    tx.set(gone, Wallet::POINTS, 1);
                    Ok(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&err, Error::NotFound { key } if key == "wallet:2"), "{err}");
            let err = db
                .transaction(|tx| async move {
                    tx.delete(w);
                    tx.set(w, Wallet::POINTS, 1);
                    Ok(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&err, Error::NotFound { .. }), "{err}");
            assert!(w.exists(&db).await?, "nothing written");
            assert!(!gone.exists(&db).await?);
        }
        Ok(())
    }

    /// In the cluster layout, a transaction's keys must share a slot: one
    /// in another slot is refused before anything is sent.
    exclusive async fn a_transaction_across_slots_is_refused(ctx) -> redmodel::Result<()> {
        let db = ctx.db.with_key_layout(KeyLayout::Cluster);
        flush(&db).await?;
        let slot = |id: u32| Slot::for_key(format!("wallet:{id}"));
        let far = (2..).find(|id| slot(*id) != slot(1)).expect("another slot");
        wallet(1, 1).insert(&db).await?;
        wallet(far, 1).insert(&db).await?;
        let (a, b) = (&Wallet::at(1), &Wallet::at(far));
        let err = db
            .transaction(|tx| async move {
                tx.load(a).await?;
                tx.set(b, Wallet::POINTS, 7);
                Ok(())
            })
            .await
            .unwrap_err();
        assert!(matches!(&err, Error::CrossSlot { keys } if keys.len() == 2), "{err}");
        assert_eq!(b.get(&db, Wallet::POINTS).await?, Some(1));
        Ok(())
    }
}
