//! Seed 003's sorted-set score design: items scored by date and type, the
//! date and the type packed into one integer score (2 digits of year, 3 of
//! day of year, 4 of type code: `152003456` is type 3456 on day 200 of
//! 2015), so that each of the seed's queries is one ZRANGEBYSCORE:
//!
//! - the last 10 days, every type;
//! - one day;
//! - one day and a range of types (1000 to 4000).
//!
//! The packing is declared once, as a `Composite`, which refuses a part
//! wider than its digits instead of making a wrong score, and decodes a
//! score back into its parts.
//!
//! Runs on the Redis at `REDIS_URL` if set, else on the bundled memory
//! engine: `cargo run --example scores_by_date`. It first deletes the
//! items it writes.

use redmodel::model::{Composite, Dim};
use redmodel::prelude::*;
use redmodel::Error;

#[path = "common/mod.rs"]
mod common;

/// Year (2 digits), day of year (3 digits), type code (4 digits).
pub const DAY_TYPE: Composite<3> = Composite::new([
    Dim::digits("year", 2),
    Dim::digits("day", 3),
    Dim::digits("type", 4),
]);

/// `item:1` = {name, score}, and `item:1` in the sorted set
/// `item:_sorted:score`.
#[derive(Admin, Debug, Clone, PartialEq)]
pub struct Item {
    #[redmodel(pk)]
    pub id: u32,
    pub name: String,
    #[redmodel(sorted)]
    pub score: u64,
}

/// "Today", as in the seed: day 200 of (20)15.
pub const TODAY: (u64, u64) = (15, 200);

/// (id, name, year, day, type)
const ITEMS: [(u32, &str, u64, u64, u64); 8] = [
    (1, "old news", 15, 185, 1000),
    (2, "ten days ago", 15, 190, 3578),
    (3, "today, type 999", 15, 200, 999),
    (4, "today, type 1000", 15, 200, 1000),
    (5, "today, type 3578", 15, 200, 3578),
    (6, "today, type 4001", 15, 200, 4001),
    (7, "five days ago", 15, 195, 2000),
    (8, "tomorrow", 15, 201, 2000),
];

#[tokio::main]
async fn main() -> Result<(), Error> {
    let db = Db::from_env().await?;
    println!("backend: {}", db.backend_name());
    reset(&db).await?;
    run(&db).await?;
    common::print_keys(&db, &["item:*"]).await?;
    Ok(())
}

/// Deletes the demo's items, and with them their scores.
pub async fn reset(db: &Db) -> Result<(), Error> {
    for (id, ..) in ITEMS {
        Item::delete(db, id).await?;
    }
    Ok(())
}

/// The ids each query returned, for the tests.
#[derive(Debug, PartialEq)]
pub struct Shown {
    pub last_ten_days: Vec<u32>,
    pub today: Vec<u32>,
    pub today_types_1000_to_4000: Vec<u32>,
}

/// Prints what a query returned, each score decoded into its parts.
fn show(title: &str, items: &[Item]) -> Result<Vec<u32>, Error> {
    println!("\n{title}:");
    for item in items {
        let [year, day, kind] = DAY_TYPE.decode(item.score)?;
        println!(
            "  {:>9}  year {year:02}, day {day:3}, type {kind:4}  {}",
            item.score, item.name
        );
    }
    Ok(items.iter().map(|i| i.id).collect())
}

pub async fn run(db: &Db) -> Result<Shown, Error> {
    for (id, name, year, day, kind) in ITEMS {
        let score = DAY_TYPE.encode([year, day, kind])?;
        Item {
            id,
            name: name.into(),
            score,
        }
        .insert(db)
        .await?;
    }
    println!("{} items scored by date and type", ITEMS.len());

    // A part wider than its digits is an error, never a wrong score.
    match DAY_TYPE.encode([15, 200, 12_345]) {
        Err(err) => println!("type 12345 refused: {err}"),
        Ok(score) => println!("type 12345 packed as {score}?"),
    }

    let (year, day) = TODAY;
    let by_score = Item::SCORE_SORTED;
    let ten_days = DAY_TYPE.between(&[year, day - 10], &[year, day])?;
    let one_day = DAY_TYPE.span(&[year, day])?;
    let types = DAY_TYPE.between(&[year, day, 1000], &[year, day, 4000])?;
    println!(
        "\nscore ranges: last 10 days {ten_days:?}, today {one_day:?}, today with types 1000-4000 {types:?}"
    );
    Ok(Shown {
        last_ten_days: show("the last 10 days", &by_score.range(db, ten_days).await?)?,
        today: show("today", &by_score.range(db, one_day).await?)?,
        today_types_1000_to_4000: show(
            "today, types 1000 to 4000",
            &by_score.range(db, types).await?,
        )?,
    })
}
