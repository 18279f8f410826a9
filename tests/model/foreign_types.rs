//! An index key that another program filled with another Redis type: a
//! write that touches it is refused with [`Error::UnexpectedType`] naming
//! that key, on every backend and in both key layouts. In the plain
//! layout the write is one atomic unit, and it leaves the object and its
//! other index entries as they were. In the cluster layout the object and
//! each index are steps in different slots: a unique entry is claimed
//! before the object is written, so a foreign unique entry refuses the
//! write whole; the sorted, recent and tag entries follow the object's
//! write, so one of another type is found after it, as a crash there
//! would leave it (`docs/cluster.md`).

use redmodel::prelude::*;
use redmodel::{Error, KeyLayout};
use redmodel_suite::backend_tests;

use crate::cluster_steps::{racer, Racer};

/// Each index key a write of `racer(2, "bo", 5, &["red"])` touches, as the
/// database stores it and in plain form (as errors name it), with the
/// type it holds there.
fn index_keys(db: &Db) -> Vec<(String, String, &'static str)> {
    let unique = |db: Option<&Db>| {
        match db {
            Some(db) => Racer::NAME_UNIQUE.key_in(db, "bo"),
            None => Racer::NAME_UNIQUE.key("bo"),
        }
        .expect("a key")
        .expect("a value")
    };
    vec![
        (unique(Some(db)), unique(None), "list"),
        (
            Racer::POINTS_SORTED.key_in(db),
            Racer::POINTS_SORTED.key(),
            "zset",
        ),
        (
            Racer::TAGS_TAGS.key_in(db, "red").expect("a key"),
            Racer::TAGS_TAGS.key("red").expect("a key"),
            "set",
        ),
        (
            Racer::SEEN_RECENT.key_in(db),
            Racer::SEEN_RECENT.key(),
            "list",
        ),
    ]
}

/// Every key the test writes.
fn all_keys(db: &Db) -> Vec<String> {
    let mut keys = vec![
        Racer::at(1).key_in(db).into_owned(),
        Racer::at(2).key_in(db).into_owned(),
        Racer::NAME_UNIQUE
            .key_in(db, "al")
            .expect("a key")
            .expect("a value"),
        Racer::TAGS_TAGS.key_in(db, "blue").expect("a key"),
    ];
    keys.extend(index_keys(db).into_iter().map(|(key, _, _)| key));
    keys
}

/// What each key holds, as `DUMP`s: what "unchanged" compares.
async fn snapshot(db: &Db) -> redmodel::Result<Vec<(String, Option<Vec<u8>>)>> {
    let mut out = Vec::new();
    for key in all_keys(db) {
        let dump: Option<Vec<u8>> = db.query(redis::cmd("DUMP").arg(&key)).await?;
        out.push((key, dump));
    }
    Ok(out)
}

/// `racer:1` alone, with `key` holding a string.
async fn start(db: &Db, key: &str) -> redmodel::Result<()> {
    for key in all_keys(db) {
        db.query::<()>(redis::cmd("DEL").arg(key)).await?;
    }
    racer(1, "al", 1, &["blue"]).insert(db).await?;
    db.query::<()>(redis::cmd("SET").arg(key).arg("someone else's"))
        .await
}

/// A write of `racer:1` (or of a new `racer:2`), named.
type Write = fn(
    &Db,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = redmodel::Result<()>> + Send + '_>,
>;

/// Each write, with the index keys (as positions in [`index_keys`]) it
/// must touch: `racer:1` changed to what `racer:2` holds, field by field.
fn writes() -> Vec<(&'static str, Write, &'static [usize])> {
    vec![
        (
            "insert",
            |db| Box::pin(async move { racer(2, "bo", 5, &["red"]).insert(db).await.map(drop) }),
            &[0, 1, 2, 3],
        ),
        (
            "set name",
            |db| Box::pin(async move { Racer::at(1).set(db, Racer::NAME, "bo").await.map(drop) }),
            &[0],
        ),
        (
            "incr points",
            |db| Box::pin(async move { Racer::at(1).incr(db, Racer::POINTS, 4).await.map(drop) }),
            &[1],
        ),
        (
            "set tags",
            |db| {
                Box::pin(async move {
                    Racer::at(1)
                        .set(db, Racer::TAGS, vec!["red".to_string()])
                        .await
                        .map(drop)
                })
            },
            &[2],
        ),
        (
            "set seen",
            |db| {
                Box::pin(async move { Racer::at(1).set(db, Racer::SEEN, Some(9)).await.map(drop) })
            },
            &[3],
        ),
        (
            "delete",
            |db| Box::pin(async move { Racer::at(1).delete(db).await.map(drop) }),
            &[1, 3],
        ),
    ]
}

backend_tests! {
    /// An insert, a change of each indexed field and a delete, each with
    /// one index key it touches holding another type: refused, naming
    /// the key, with nothing written where the write is atomic.
    exclusive async fn a_write_over_an_index_key_of_another_type_writes_nothing(ctx) -> redmodel::Result<()> {
        let mut failures = Vec::new();
        for db in ctx.layouts() {
            let layout = db.key_layout();
            for (i, (key, plain, expected)) in index_keys(&db).into_iter().enumerate() {
                for (what, write, touches) in writes() {
                    if !touches.contains(&i) {
                        continue;
                    }
                    start(&db, &key).await?;
                    let before = snapshot(&db).await?;
                    let result = write(&db).await;
                    let named = matches!(
                        &result,
                        Err(Error::UnexpectedType { key: k, expected: e }) if *k == plain && *e == expected
                    );
                    if !named {
                        failures.push(format!("{what} with {key} of another type ({layout:?}): {result:?}"));
                    }
                    let whole = layout == KeyLayout::Plain || i == 0;
                    if whole && snapshot(&db).await? != before {
                        failures.push(format!("{what} over {key} ({layout:?}) wrote"));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        Ok(())
    }
}
