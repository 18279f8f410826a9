//! Expiry that fits models: an insert with a TTL in one step, a model's
//! declared TTL given by every insert, and fields with a TTL of their own
//! (Redis 7.4's HPEXPIRE family), refused with a typed error on servers
//! without it.

use std::time::Duration;

use redmodel::model::check::{check, repair, Kind};
use redmodel::model::Ttl;
use redmodel::prelude::*;
use redmodel::{Error, ServerName};
use redmodel_suite::backend_tests;

/// An admin with a declared TTL and an index (so that the cluster layout
/// takes its stepped path).
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "ttl_visit", ttl = "30m")]
struct Visit {
    #[redmodel(pk)]
    id: String,
    page: String,
    #[redmodel(sorted)]
    hits: u64,
}

/// `visit:v:click:1`: a hash sub-object with a TTL of its own.
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Visit, ttl = "10m")]
struct Click {
    #[redmodel(pk)]
    n: u32,
    x: i64,
}

/// `visit:v:memo:home`: a single-value sub-object with a TTL.
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Visit, single, ttl = "5m")]
struct Memo {
    #[redmodel(pk)]
    topic: String,
    text: String,
}

/// A plain admin, without a declared TTL.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "ttl_page")]
struct Page {
    #[redmodel(pk)]
    id: String,
    title: String,
}

/// `visit:v:page` = [page:p, ...]: a relation list under the admin.
#[derive(Relation)]
#[redmodel(owner = Visit, member = Page)]
struct VisitPages;

/// Fields with TTLs of their own, indexed.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "ttl_login")]
struct Login {
    #[redmodel(pk)]
    id: u32,
    name: String,
    #[redmodel(unique, ttl = "10m")]
    token: Option<String>,
    #[redmodel(sorted, ttl = "1h")]
    score: Option<u64>,
    #[redmodel(recent = 10, ttl = "1h")]
    seen: Option<u64>,
}

const MINUTE: Duration = Duration::from_secs(60);

/// Whether `ttl` is at most `max` and not much less (the test's own time
/// has passed since it was set).
fn about(ttl: Ttl, max: Duration) -> bool {
    matches!(ttl, Ttl::Expires(d) if d <= max && d + MINUTE > max)
}

fn visit(id: &str) -> Visit {
    Visit {
        id: id.into(),
        page: "/".into(),
        hits: 1,
    }
}

fn login(id: u32) -> Login {
    Login {
        id,
        name: format!("user {id}"),
        token: Some(format!("t{id}")),
        score: Some(u64::from(id)),
        seen: Some(1),
    }
}

/// The raw PTTL of a plain key.
async fn pttl(ctx: &redmodel_suite::TestCtx, key: &str) -> redmodel::Result<i64> {
    ctx.db.query(redis::cmd("PTTL").arg(ctx.stored(key))).await
}

backend_tests! {
    /// `insert_with_ttl` writes the object and its TTL in one atomic unit:
    /// the same round trips as a plain insert, and a zero TTL is a typed
    /// error with nothing written.
    exclusive async fn insert_with_ttl_writes_the_ttl_with_the_object(ctx) {
        let db = &ctx.db;
        let page = Page::at("p");
        let before = db.round_trips();
        page.insert(db, &Page { id: "p".into(), title: "t".into() }).await?;
        let plain = db.round_trips() - before;
        let before = db.round_trips();
        page.insert_with_ttl(db, &Page { id: "p".into(), title: "t".into() }, 2 * MINUTE).await?;
        assert_eq!(db.round_trips() - before, plain, "no second call for the TTL");
        assert!(about(page.ttl(db).await?, 2 * MINUTE));
        // A plain insert keeps it (HSET), as Redis does.
        page.insert(db, &Page { id: "p".into(), title: "u".into() }).await?;
        assert!(about(page.ttl(db).await?, 2 * MINUTE));

        let other = Page::at("q");
        let zero = other.insert_with_ttl(db, &Page { id: "q".into(), title: "t".into() }, Duration::ZERO).await;
        assert!(matches!(zero, Err(Error::InvalidTtl { .. })), "{zero:?}");
        let tiny = other.insert_with_ttl(db, &Page { id: "q".into(), title: "t".into() }, Duration::from_micros(10)).await;
        assert!(matches!(tiny, Err(Error::InvalidTtl { .. })), "{tiny:?}");
        assert!(!other.exists(db).await?, "nothing written");
        assert!(matches!(page.expire(db, Duration::ZERO).await, Err(Error::InvalidTtl { .. })));
        assert!(page.exists(db).await?, "a zero TTL deletes nothing");
        Ok::<(), Error>(())
    }

    /// A model's declared TTL: every full write gives it afresh (insert,
    /// insert_without_sync, a transaction's insert, a single value's SET),
    /// field writes keep the key's (HSET, HINCRBY), and `insert_with_ttl`
    /// overrides it. Sub-objects and relation lists have their own.
    exclusive async fn a_model_ttl_on_every_full_write(ctx) {
        let db = &ctx.db;
        let v = visit("v").insert(db).await?;
        assert!(about(v.ttl(db).await?, 30 * MINUTE));
        assert!(v.persist(db).await?);
        v.set(db, Visit::PAGE, "/a").await?;
        v.incr(db, Visit::HITS, 1).await?;
        assert_eq!(v.ttl(db).await?, Ttl::Persistent, "field writes leave the key's TTL as it is");
        visit("v").insert_without_sync(db).await?;
        assert!(about(v.ttl(db).await?, 30 * MINUTE));
        v.insert_with_ttl(db, &visit("v"), 120 * MINUTE).await?;
        assert!(about(v.ttl(db).await?, 120 * MINUTE), "the TTL asked for wins");
        v.persist(db).await?;
        db.transaction(|tx| {
            let v = v.clone();
            async move {
                tx.insert(&v, &visit("v"));
                Ok::<_, Error>(())
            }
        })
        .await?;
        assert!(about(v.ttl(db).await?, 30 * MINUTE), "a transaction's insert gives it");

        // Sub-objects: their own model's TTL, not the admin's.
        let click = v.insert_sub(db, &Click { n: 1, x: 5 }).await?;
        assert!(about(click.ttl(db).await?, 10 * MINUTE));
        let memo = v.insert_sub(db, &Memo { topic: "home".into(), text: "hi".into() }).await?;
        assert!(about(memo.ttl(db).await?, 5 * MINUTE), "SET ... PX");
        memo.persist(db).await?;
        memo.set_value(db, "again").await?;
        assert!(about(memo.ttl(db).await?, 5 * MINUTE), "set_value gives it again");

        // A relation list has none of its own: `expire_tree` gives the
        // whole subtree one, and the next insert of each model gives it
        // its declared TTL again.
        Page { id: "p".into(), title: "t".into() }.insert(db).await?;
        let pages = v.relation::<VisitPages>();
        pages.append(db, [Page::at("p")]).await?;
        assert_eq!(pages.ttl(db).await?, Ttl::Persistent);
        assert_eq!(v.expire_tree(db, 240 * MINUTE).await?, 4);
        assert!(about(pages.ttl(db).await?, 240 * MINUTE));
        visit("v").insert(db).await?;
        assert!(about(v.ttl(db).await?, 30 * MINUTE), "the insert gives the model's again");
        assert!(about(click.ttl(db).await?, 240 * MINUTE), "the sub-object keeps the tree's");
        assert!(about(pages.ttl(db).await?, 240 * MINUTE));
        // So the subtree's keys may outlive the admin: `check` reports
        // them once it is gone (orphans), and `repair` deletes them.
        assert!(v.expire_at(db, std::time::SystemTime::UNIX_EPOCH).await?, "expired now");
        let report = check(db, |_| ()).await?;
        assert_eq!(report.count(Kind::OrphanedSubObject), 2, "{report}");
        assert_eq!(report.count(Kind::OrphanedList), 1, "{report}");
        assert!(repair(db, |_| ()).await?.after.is_clean());
        assert!(!click.exists(db).await?);
        Ok::<(), Error>(())
    }

    /// Inserts of 16 racing tasks, over the same objects, with deletes and
    /// field writes among them: an observer reading each key's existence
    /// and TTL atomically never sees an object without its TTL, and none
    /// is left without one.
    exclusive async fn racing_inserts_all_carry_the_ttl(ctx) {
        let db = &ctx.db;
        let ids: Vec<String> = (0..8).map(|i| format!("r{i}")).collect();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let observer = {
            let (db, ids, stop) = (db.clone(), ids.clone(), stop.clone());
            let keys: Vec<String> = ids.iter().map(|id| ctx.stored(&format!("ttl_visit:{id}"))).collect();
            tokio::spawn(async move {
                let mut seen = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for key in &keys {
                        let mut pipe = redis::pipe();
                        pipe.atomic().cmd("PTTL").arg(key);
                        let (ms,): (i64,) = db.query_pipeline(&pipe).await?;
                        assert_ne!(ms, -1, "{key} exists without a TTL");
                        seen += u64::from(ms > 0);
                    }
                    tokio::task::yield_now().await;
                }
                Ok::<u64, Error>(seen)
            })
        };
        let tasks: Vec<_> = (0..16)
            .map(|task| {
                let (db, ids) = (db.clone(), ids.clone());
                tokio::spawn(async move {
                    let mut rng = redmodel_suite::Rng::for_task(task);
                    for _ in 0..30 {
                        let id = &ids[rng.below(ids.len())];
                        match rng.below(6) {
                            0 => {
                                Visit::at(id.as_str()).delete(&db).await?;
                            }
                            1 => match Visit::at(id.as_str()).set(&db, Visit::PAGE, "/x").await {
                                Ok(()) | Err(Error::NotFound { .. }) => {}
                                Err(err) => return Err(err),
                            },
                            _ => {
                                visit(id).insert(&db).await?;
                            }
                        }
                    }
                    Ok::<(), Error>(())
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a task panicked")?;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = observer.await.expect("the observer saw an object without a TTL")?;
        // In process the tasks' writes run whole, between the observer's
        // turns; over a connection they interleave with its reads.
        assert!(seen > 0 || ctx.is_memory(), "the observer saw objects");
        for id in &ids {
            let ms = pttl(&ctx, &format!("ttl_visit:{id}")).await?;
            assert!(ms > 0 || ms == -2, "ttl_visit:{id} left with PTTL {ms}");
        }
        Ok::<(), Error>(())
    }
}

backend_tests! {
    /// Field TTLs where the server has them (Redis 7.4, Valkey 9), and
    /// [`Error::Unsupported`] naming the version needed elsewhere (Redis
    /// 7.0, Valkey 8, the memory engine), known without a round trip.
    exclusive async fn field_ttls_or_a_typed_error(ctx) {
        let db = &ctx.db;
        let server = db.server();
        let l = Login::at(1);
        if !server.has_field_expiry() {
            let before = db.round_trips();
            let refused = login(1).insert(db).await;
            match &refused {
                Err(Error::Unsupported { needs, server: named, .. }) => {
                    assert!(needs.contains("Redis 7.4") && needs.contains("Valkey 9"), "{needs}");
                    assert_eq!(*named, server.to_string());
                }
                other => panic!("{other:?}"),
            }
            assert!(refused.unwrap_err().to_string().contains(&server.to_string()));
            assert_eq!(db.round_trips(), before, "refused before any round trip");
            assert!(matches!(l.field_ttl(db, Login::TOKEN).await, Err(Error::Unsupported { .. })));
            assert!(matches!(l.persist_field(db, Login::TOKEN).await, Err(Error::Unsupported { .. })));
            assert!(matches!(
                l.expire_field(db, Login::TOKEN, MINUTE).await,
                Err(Error::Unsupported { .. })
            ));
            // A write that gives no expiring field a value needs nothing.
            Login { token: None, score: None, seen: None, ..login(1) }.insert(db).await?;
            l.set(db, Login::NAME, "x").await?;
            assert!(matches!(l.set(db, Login::TOKEN, Some("t".to_string())).await, Err(Error::Unsupported { .. })));
            assert_eq!(Login::TOKEN_UNIQUE.find(db, "t".to_string()).await?, None, "nothing written");
            return Ok(());
        }
        login(1).insert(db).await?;
        assert!(about(l.field_ttl(db, Login::TOKEN).await?, 10 * MINUTE));
        assert!(about(l.field_ttl(db, Login::SCORE).await?, 60 * MINUTE));
        assert_eq!(l.field_ttl(db, Login::NAME).await?, Ttl::Persistent);
        assert_eq!(l.ttl(db).await?, Ttl::Persistent, "the key has none");

        // Every write of the field gives its declared TTL again (HSET
        // alone would clear it); writes of other fields leave it.
        assert!(l.persist_field(db, Login::TOKEN).await?);
        assert_eq!(l.field_ttl(db, Login::TOKEN).await?, Ttl::Persistent);
        l.set(db, Login::NAME, "renamed").await?;
        assert_eq!(l.field_ttl(db, Login::TOKEN).await?, Ttl::Persistent, "another field's write");
        l.set(db, Login::TOKEN, Some("t1b".to_string())).await?;
        assert!(about(l.field_ttl(db, Login::TOKEN).await?, 10 * MINUTE), "set");
        l.persist_field(db, Login::TOKEN).await?;
        l.set_many(db, [Login::TOKEN.to(Some("t1".to_string()))]).await?;
        assert!(about(l.field_ttl(db, Login::TOKEN).await?, 10 * MINUTE), "set_many");
        l.persist_field(db, Login::SCORE).await?;
        l.incr(db, Login::SCORE, 1).await?;
        assert_eq!(l.field_ttl(db, Login::SCORE).await?, Ttl::Persistent, "incr (HINCRBY) keeps what it has");
        db.transaction(|tx| {
            let l = l.clone();
            async move {
                tx.set(&l, Login::SCORE, Some(7));
                Ok::<_, Error>(())
            }
        })
        .await?;
        assert!(about(l.field_ttl(db, Login::SCORE).await?, 60 * MINUTE), "a transaction's set");
        l.persist_field(db, Login::SEEN).await?;
        login(1).insert(db).await?;
        assert!(about(l.field_ttl(db, Login::SEEN).await?, 60 * MINUTE), "insert");

        // Bad calls: a field declared without a TTL, a zero TTL.
        assert!(matches!(l.expire_field(db, Login::NAME, MINUTE).await, Err(Error::Misuse(_))));
        assert!(matches!(l.expire_field(db, Login::TOKEN, Duration::ZERO).await, Err(Error::InvalidTtl { .. })));
        assert!(!Login::at(99).expire_field(db, Login::TOKEN, MINUTE).await?, "no such object");
        assert_eq!(Login::at(99).field_ttl(db, Login::TOKEN).await?, Ttl::Missing);

        // A field that expires is absent: `None` for an `Option`, and the
        // object's indexes no longer answer for the expired value.
        login(2).insert(db).await?;
        assert_eq!(Login::TOKEN_UNIQUE.find(db, "t1".to_string()).await?.map(|l| l.id), Some(1));
        assert!(l.expire_field(db, Login::TOKEN, Duration::from_millis(1)).await?);
        assert!(l.expire_field(db, Login::SCORE, Duration::from_millis(1)).await?);
        assert!(l.expire_field(db, Login::SEEN, Duration::from_millis(1)).await?);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let expired = l.load(db).await?.expect("the object stays");
        assert_eq!((expired.token, expired.score, expired.seen), (None, None, None));
        assert_eq!(l.get(db, Login::TOKEN).await?, None);
        assert_eq!(Login::TOKEN_UNIQUE.find(db, "t1".to_string()).await?, None);
        let top: Vec<u32> = Login::SCORE_SORTED.top(db, 10).await?.iter().map(|l| l.id).collect();
        assert_eq!(top, [2], "the sorted index leaves it out");
        let recent: Vec<u32> = Login::SEEN_RECENT.load(db).await?.iter().map(|l| l.id).collect();
        assert_eq!(recent, [2], "the recent list leaves it out");
        // The reads pruned what they met: nothing stale is left.
        let report = check(db, |_| ()).await?;
        assert!(report.is_clean(), "{report}: {:#?}", report.examples);

        // Entries no read met yet: `check` reports them, `repair` removes them.
        l.set_many(db, [Login::SCORE.to(Some(3)), Login::SEEN.to(Some(1))]).await?;
        l.expire_field(db, Login::SCORE, Duration::from_millis(1)).await?;
        l.expire_field(db, Login::SEEN, Duration::from_millis(1)).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let report = check(db, |_| ()).await?;
        assert_eq!(report.count(Kind::StaleIndexEntry), 2, "{report}");
        assert!(repair(db, |_| ()).await?.after.is_clean());

        // A required field that expires (given a TTL by another client)
        // is the missing-field error, as for any missing field.
        let key = ctx.stored("ttl_login:2");
        let reply: Vec<i64> = db
            .query(redis::cmd("HPEXPIRE").arg(&key).arg(1).arg("FIELDS").arg(1).arg("name"))
            .await?;
        assert_eq!(reply, [1]);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let missing = Login::at(2).load(db).await;
        assert!(matches!(&missing, Err(Error::MissingField { field, .. }) if field == "name"), "{missing:?}");
        assert!(server.name() == ServerName::Redis || server.name() == ServerName::Valkey);
        Ok::<(), Error>(())
    }
}
