//! Sorted index / leaderboard (seed 001: who logs in most; seed 003: age
//! 18-35): top-N, bottom-N, rank, score ranges and counts, an increment
//! that moves the field and the score together, updates and deletes that
//! leave no old entry, and scores that never lose precision.

use std::time::Duration;

use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

/// `player:1` = {name, logins, age, rating}, in `player:_sorted:logins`,
/// `player:_sorted:age` and `player:_sorted:rating`.
#[derive(Admin, Debug, Clone, PartialEq)]
struct Player {
    #[redmodel(pk)]
    id: u32,
    name: String,
    #[redmodel(sorted)]
    logins: u64,
    #[redmodel(sorted)]
    age: Option<u32>,
    #[redmodel(sorted)]
    rating: f64,
}

/// `thermometer:1` = {level}, an `f32` in `thermometer:_sorted:level`.
#[derive(Admin, Debug)]
struct Thermometer {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(sorted)]
    level: f32,
}

fn player(id: u32, name: &str, logins: u64, age: Option<u32>) -> Player {
    Player {
        id,
        name: name.into(),
        logins,
        age,
        rating: 0.0,
    }
}

/// The seed's login table.
async fn seed(db: &Db) -> Result<(), Error> {
    player(1, "ken thompson", 5, Some(40)).insert(db).await?;
    player(2, "dennis ritchie", 1, Some(30)).insert(db).await?;
    player(3, "Joe Armstrong", 2, Some(18)).insert(db).await?;
    Ok(())
}

fn names(players: &[Player]) -> Vec<&str> {
    players.iter().map(|p| p.name.as_str()).collect()
}

async fn zscore(db: &Db, key: &str, member: &str) -> Option<f64> {
    db.query(redis::cmd("ZSCORE").arg(key).arg(member))
        .await
        .unwrap()
}

backend_tests! {
    /// An increment Redis refuses moves nothing: a stored value
    /// that is not a number gives `Decode`, as on a field without an index,
    /// an overflow gives Redis's own error, and the score stays put.
    exclusive async fn a_refused_increment_moves_nothing(ctx) {
        let db = &ctx.db;
        player(1, "ann", 5, None).insert(db).await?;
        db.query::<()>(redis::cmd("HSET").arg("player:1").arg("logins").arg("many")).await?;
        let err = Player::at(1).incr(db, Player::LOGINS, 1).await.unwrap_err();
        assert!(
            matches!(&err, Error::Decode { key, field, .. } if key == "player:1" && field == "logins"),
            "{err:?}"
        );
        assert_eq!(zscore(db, "player:_sorted:logins", "player:1").await, Some(5.0));

        db.query::<()>(redis::cmd("HSET").arg("player:1").arg("logins").arg(i64::MAX)).await?;
        let err = Player::at(1).incr(db, Player::LOGINS, 1).await.unwrap_err();
        assert!(matches!(&err, Error::Server(e) if e.to_string().contains("overflow")), "{err:?}");
        assert_eq!(zscore(db, "player:_sorted:logins", "player:1").await, Some(5.0));
        let raw: String = db.query(redis::cmd("HGET").arg("player:1").arg("logins")).await?;
        assert_eq!(raw, i64::MAX.to_string(), "the field is not moved either");

        db.query::<()>(redis::cmd("HSET").arg("player:1").arg("logins").arg(5)).await?;
        assert_eq!(Player::at(1).incr(db, Player::LOGINS, 2).await?, 7);
        assert_eq!(zscore(db, "player:_sorted:logins", "player:1").await, Some(7.0));
        Ok::<(), Error>(())
    }

    /// The seed's `zrevrange login:login_times 0 N-1`, ranks and scores.
    exclusive async fn leaderboard(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        let rank = Player::LOGINS_SORTED;
        assert_eq!(rank.key(), "player:_sorted:logins");
        assert_eq!(zscore(db, "player:_sorted:logins", "player:1").await, Some(5.0));
        assert_eq!(names(&rank.top(db, 2).await?), ["ken thompson", "Joe Armstrong"]);
        assert_eq!(names(&rank.top(db, 10).await?), ["ken thompson", "Joe Armstrong", "dennis ritchie"]);
        assert_eq!(names(&rank.bottom(db, 1).await?), ["dennis ritchie"]);
        assert!(rank.top(db, 0).await?.is_empty());
        assert_eq!(rank.rank_from_top(db, Player::at(1)).await?, Some(0));
        assert_eq!(rank.rank_from_top(db, Player::at(2)).await?, Some(2));
        assert_eq!(rank.rank_from_bottom(db, Player::at(1)).await?, Some(2));
        assert_eq!(rank.rank_from_top(db, Player::at(9)).await?, None);
        assert_eq!(rank.score(db, Player::at(3)).await?, Some(2.0));
        assert_eq!(rank.score(db, "player:9").await?, None);
        assert_eq!(rank.len(db).await?, 3);
        assert!(!rank.is_empty(db).await?);
        Ok::<(), Error>(())
    }

    /// Seed 003's `ZRANGEBYSCORE user 18 35`, with Rust ranges.
    exclusive async fn score_ranges(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        player(4, "no age", 0, None).insert(db).await?;
        let age = Player::AGE_SORTED;
        assert_eq!(names(&age.range(db, 18..=35).await?), ["Joe Armstrong", "dennis ritchie"]);
        assert_eq!(names(&age.range_rev(db, 18..=35).await?), ["dennis ritchie", "Joe Armstrong"]);
        assert_eq!(names(&age.range(db, 18..30).await?), ["Joe Armstrong"], "exclusive end");
        assert_eq!(names(&age.range(db, 31..).await?), ["ken thompson"]);
        assert_eq!(names(&age.range(db, ..=18).await?), ["Joe Armstrong"]);
        assert_eq!(age.count(db, 18..=35).await?, 2);
        assert_eq!(age.count(db, 100..).await?, 0);
        assert_eq!(age.len(db).await?, 3, "None is not in the index");
        let err = age.range(db, 0..=u64::MAX).await.unwrap_err();
        assert!(matches!(err, Error::ScoreOverflow { .. }), "{err:?}");
        Ok::<(), Error>(())
    }

    /// The seed's `zincrby login:login_times 1 uid`, together with the
    /// field, in one MULTI/EXEC.
    exclusive async fn increment_moves_field_and_score(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        let dennis = Player::at(2);
        assert_eq!(dennis.incr(db, Player::LOGINS, 1).await?, 2);
        assert_eq!(dennis.incr(db, Player::LOGINS, 5).await?, 7);
        assert_eq!(dennis.get(db, Player::LOGINS).await?, Some(7));
        assert_eq!(Player::LOGINS_SORTED.score(db, &dennis).await?, Some(7.0));
        assert_eq!(names(&Player::LOGINS_SORTED.top(db, 1).await?), ["dennis ritchie"]);

        // A float field: HINCRBYFLOAT computes in long double, ZINCRBY in
        // double; the score follows the field.
        dennis.incr(db, Player::RATING, 0.1).await?;
        let rating = dennis.incr(db, Player::RATING, 0.2).await?;
        assert_eq!(Player::RATING_SORTED.score(db, &dennis).await?, Some(rating));

        // An object written outside the library (no score yet) gets the
        // field's value as its score, not the increment.
        db.query::<()>(redis::cmd("HSET").arg("player:9").arg("name").arg("x").arg("logins").arg(3).arg("rating").arg(0)).await?;
        assert_eq!(Player::at(9).incr(db, Player::LOGINS, 1).await?, 4);
        assert_eq!(zscore(db, "player:_sorted:logins", "player:9").await, Some(4.0));
        Ok::<(), Error>(())
    }

    /// 8 tasks increment one object's sorted field 25 times each, at once:
    /// no increment is lost, and the score ends equal to the field, in
    /// each key layout (one atomic unit in the plain layout; in the
    /// cluster layout the field's step, then the score from the value
    /// read back).
    exclusive async fn racing_increments_lose_nothing_and_leave_the_score_equal_to_the_field(ctx) {
        const TASKS: usize = 8;
        const EACH: u64 = 25;
        for db in ctx.layouts() {
            player(1, "racer", 0, None).insert(&db).await?;
            let tasks: Vec<_> = (0..TASKS)
                .map(|_| {
                    let db = db.clone();
                    tokio::spawn(async move {
                        for _ in 0..EACH {
                            Player::at(1).incr(&db, Player::LOGINS, 1).await?;
                            tokio::task::yield_now().await;
                        }
                        Ok::<(), Error>(())
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("increment task panicked")?;
            }
            let total = TASKS as u64 * EACH;
            let layout = db.key_layout();
            assert_eq!(Player::at(1).get(&db, Player::LOGINS).await?, Some(total), "{layout:?}");
            let score = Player::LOGINS_SORTED.score(&db, &Player::at(1)).await?;
            assert_eq!(score, Some(total as f64), "{layout:?}");
        }
        Ok::<(), Error>(())
    }

    /// The score is the field's codec's, not Redis's reading of the text:
    /// an `f32` field holds "0.2", which Redis reads as the double 0.2,
    /// where the field's value is the float nearest 0.2 (0.2000000029...).
    exclusive async fn an_increment_scores_by_the_fields_codec(ctx) {
        let db = &ctx.db;
        Thermometer { id: 1, level: 0.1 }.insert(db).await?;
        let level = Thermometer::at(1).incr(db, Thermometer::LEVEL, 0.1).await?;
        assert_eq!(Thermometer::at(1).get(db, Thermometer::LEVEL).await?, Some(level));
        assert_ne!(f64::from(level), 0.2, "the float is not the double");
        assert_eq!(Thermometer::LEVEL_SORTED.score(db, Thermometer::at(1)).await?, Some(f64::from(level)));
        Ok::<(), Error>(())
    }

    /// A write moves the entry (no old score left); None and delete
    /// remove it.
    exclusive async fn updates_and_deletes(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        Player::at(2).set(db, Player::LOGINS, 10).await?;
        assert_eq!(zscore(db, "player:_sorted:logins", "player:2").await, Some(10.0));
        player(3, "Joe Armstrong", 20, Some(19)).insert(db).await?;
        assert_eq!(zscore(db, "player:_sorted:logins", "player:3").await, Some(20.0));
        assert_eq!(zscore(db, "player:_sorted:age", "player:3").await, Some(19.0));
        Player::at(3).set(db, Player::AGE, None).await?;
        assert_eq!(zscore(db, "player:_sorted:age", "player:3").await, None);
        Player::at(3).set_many(db, [Player::AGE.to(33), Player::NAME.to("joe")]).await?;
        assert_eq!(zscore(db, "player:_sorted:age", "player:3").await, Some(33.0));

        for id in 1..=3 {
            assert!(Player::delete(db, id).await?);
        }
        let keys: Vec<String> = db.query(redis::cmd("KEYS").arg("*")).await?;
        assert!(keys.is_empty(), "left behind: {keys:?}");
        Ok::<(), Error>(())
    }

    /// Integers past 2^53 would be rounded by the double score: refused,
    /// with nothing stored.
    exclusive async fn scores_never_lose_precision(ctx) {
        let db = &ctx.db;
        let max = redmodel::model::index::MAX_EXACT_SCORE;
        player(1, "max", max, None).insert(db).await?;
        assert_eq!(zscore(db, "player:_sorted:logins", "player:1").await, Some(max as f64));
        let err = player(2, "too big", max + 1, None).insert(db).await.unwrap_err();
        match &err {
            Error::ScoreOverflow { name, value, .. } => {
                assert_eq!(name, "logins");
                assert_eq!(value, "9007199254740993");
            }
            other => panic!("expected ScoreOverflow, got {other:?}"),
        }
        assert!(!Player::exists(db, 2).await?, "nothing stored");
        let mut nan = player(3, "nan", 1, None);
        nan.rating = f64::NAN;
        assert!(matches!(nan.insert(db).await, Err(Error::ScoreOverflow { .. })));
        assert!(!Player::exists(db, 3).await?);

        // An increment past 2^53: the field takes it (HINCRBY did), the
        // object leaves the index rather than get a rounded score.
        let err = Player::at(1).incr(db, Player::LOGINS, 1).await.unwrap_err();
        assert!(matches!(err, Error::ScoreOverflow { .. }), "{err:?}");
        assert_eq!(zscore(db, "player:_sorted:logins", "player:1").await, None);
        Ok::<(), Error>(())
    }

    /// Gone objects (expired, deleted by another program) are skipped by
    /// every read, not counted in ranks or counts, and pruned.
    exclusive async fn gone_objects_leave_no_trace(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        player(4, "short-lived", 100, Some(25)).insert(db).await?;
        Player::at(4).expire(db, Duration::from_millis(1)).await?;
        db.query::<()>(redis::cmd("DEL").arg("player:3")).await?;
        tokio::time::sleep(Duration::from_millis(20)).await;

        let rank = Player::LOGINS_SORTED;
        assert_eq!(rank.rank_from_top(db, Player::at(2)).await?, Some(1), "dead above are not counted");
        assert_eq!(names(&rank.top(db, 2).await?), ["ken thompson", "dennis ritchie"]);
        let members: Vec<String> = db.query(redis::cmd("ZRANGE").arg(rank.key()).arg(0).arg(-1)).await?;
        assert_eq!(members, ["player:2", "player:1"], "pruned");

        assert_eq!(Player::AGE_SORTED.count(db, 18..=35).await?, 1);
        assert_eq!(Player::AGE_SORTED.prune(db).await?, 0, "count pruned them already");
        assert_eq!(Player::RATING_SORTED.prune(db).await?, 2);
        assert_eq!(Player::RATING_SORTED.len(db).await?, 2);
        Ok::<(), Error>(())
    }
}
