//! Composite scores (seed 003): items scored by (year, day of year, type
//! code) in one sorted index, queried for a date range, one day, and one
//! day with a range of types; scores decoded back into their parts.

use redmodel::model::{Composite, Dim};
use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

/// The seed's layout: `152003456` is type 3456 on day 200 of (20)15.
const DAY_TYPE: Composite<3> = Composite::new([
    Dim::digits("year", 2),
    Dim::digits("day", 3),
    Dim::digits("type", 4),
]);

#[derive(Admin, Debug, Clone, PartialEq)]
struct Item {
    #[redmodel(pk)]
    id: u32,
    title: String,
    #[redmodel(sorted)]
    score: u64,
}

async fn add(db: &Db, id: u32, parts: [u64; 3]) -> Result<(), Error> {
    Item {
        id,
        title: format!("item {id}"),
        score: DAY_TYPE.encode(parts)?,
    }
    .insert(db)
    .await?;
    Ok(())
}

fn ids(items: &[Item]) -> Vec<u32> {
    items.iter().map(|i| i.id).collect()
}

backend_tests! {
    /// The seed's three queries, each one ZRANGE BYSCORE.
    exclusive async fn date_range_day_and_types(ctx) {
        let db = &ctx.db;
        add(db, 1, [15, 185, 1000]).await?;
        add(db, 2, [15, 190, 3578]).await?;
        add(db, 3, [15, 200, 999]).await?;
        add(db, 4, [15, 200, 1000]).await?;
        add(db, 5, [15, 200, 3578]).await?;
        add(db, 6, [15, 200, 4001]).await?;
        add(db, 7, [15, 201, 2000]).await?;
        add(db, 8, [16, 1, 2000]).await?;
        let stored: Option<f64> = db
            .query(redis::cmd("ZSCORE").arg(Item::SCORE_SORTED.key()).arg("item:5"))
            .await?;
        assert_eq!(stored, Some(152003578.0));

        let by_score = Item::SCORE_SORTED;
        let last_ten_days = DAY_TYPE.between(&[15, 190], &[15, 200])?;
        assert_eq!(ids(&by_score.range(db, last_ten_days).await?), [2, 3, 4, 5, 6]);
        let one_day = DAY_TYPE.span(&[15, 200])?;
        assert_eq!(ids(&by_score.range(db, one_day.clone()).await?), [3, 4, 5, 6]);
        assert_eq!(by_score.count(db, one_day).await?, 4);
        let day_and_types = DAY_TYPE.between(&[15, 200, 1000], &[15, 200, 4000])?;
        assert_eq!(ids(&by_score.range(db, day_and_types).await?), [4, 5]);
        let one_type = DAY_TYPE.span(&[15, 200, 3578])?;
        assert_eq!(ids(&by_score.range(db, one_type).await?), [5]);
        // Across a year boundary: the year is the major dimension.
        let new_year = DAY_TYPE.between(&[15, 201], &[16, 10])?;
        assert_eq!(ids(&by_score.range(db, new_year).await?), [7, 8]);

        // Scores decode back into their parts.
        let latest = by_score.top(db, 1).await?;
        assert_eq!(DAY_TYPE.decode(latest[0].score)?, [16, 1, 2000]);
        let score = by_score.score(db, Item::at(2)).await?.expect("in the index");
        assert_eq!(DAY_TYPE.decode_score(score)?, [15, 190, 3578]);
        Ok::<(), Error>(())
    }

    /// A part wider than its dimension is an error before anything is
    /// written: never a wrong score.
    exclusive async fn parts_that_do_not_fit(ctx) {
        let db = &ctx.db;
        let err = add(db, 1, [15, 366, 10_000]).await.unwrap_err();
        match err {
            Error::ScoreOverflow { name, value, reason } => {
                assert_eq!((name.as_str(), value.as_str()), ("type", "10000"));
                assert!(reason.contains("0 to 9999"), "{reason}");
            }
            other => panic!("expected ScoreOverflow, got {other:?}"),
        }
        assert!(!Item::exists(db, 1).await?);
        assert!(DAY_TYPE.span(&[15, 1000]).is_err());
        Ok::<(), Error>(())
    }
}
