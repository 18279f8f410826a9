//! Bulk writes (`insert_many`, `set_many`, `delete_many`): every index
//! stays equal to the fields, each item fails alone and says which it is,
//! and a batch racing single writes claims each unique value once; on
//! every backend, and on the single-node backends in both key layouts.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use redmodel::model::check::{repair, Kind};
use redmodel::prelude::*;
use redmodel::Db;
use redmodel::{Error, ItemError, KeyLayout};
use redmodel_suite::{backend_tests, Proxy, RedisCluster, TestCtx};

/// Every kind of index: unique, sorted (a composite score), tags, recent.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "bulkitem")]
struct Item {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    code: Option<String>,
    #[redmodel(sorted)]
    rank: u64,
    #[redmodel(tags)]
    tags: Vec<String>,
    #[redmodel(recent = 20)]
    seen: Option<u64>,
}

/// A sub-object, to insert in bulk under items.
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Item, table = "note")]
struct Note {
    #[redmodel(pk)]
    n: u32,
    text: String,
}

/// Year (2 digits), day (3 digits), kind (2 digits): the sorted field's
/// scores.
const RANK: redmodel::model::Composite<3> = redmodel::model::Composite::new([
    redmodel::model::Dim::digits("year", 2),
    redmodel::model::Dim::digits("day", 3),
    redmodel::model::Dim::digits("kind", 2),
]);

/// A field value that counts its encodings, in a counter its copies
/// share (not stored: a loaded value starts a counter of its own).
#[derive(Debug, Clone, Default)]
struct Counted {
    value: u32,
    encodes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl PartialEq for Counted {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl serde::Serialize for Counted {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        self.encodes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.value.serialize(to)
    }
}

impl<'de> serde::Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<Self, D::Error> {
        Ok(Counted {
            value: u32::deserialize(from)?,
            encodes: Default::default(),
        })
    }
}

/// A model with a unique field whose other field counts its encodings.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "bulkcounted")]
struct Badge {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    code: String,
    #[redmodel(json)]
    counted: Counted,
}

const TAGS: [&str; 5] = ["red", "green", "blue", "gold", "grey"];

fn item(id: u32, code: Option<&str>) -> Item {
    let rank = RANK
        .encode([u64::from(id % 100), u64::from(id % 366), u64::from(id % 7)])
        .expect("a rank");
    Item {
        id,
        code: code.map(str::to_string),
        rank,
        tags: (0..(id as usize % 3) + 1)
            .map(|k| TAGS[(id as usize + k) % TAGS.len()].to_string())
            .collect(),
        seen: (!id.is_multiple_of(4)).then_some(u64::from(id)),
    }
}

async fn flush(ctx: &TestCtx) -> redmodel::Result<()> {
    if !ctx.is_cluster_mode() {
        ctx.db.query::<()>(&redis::cmd("FLUSHDB")).await?;
    } else if ctx.is_memory() {
        // The in-process cluster is one database: its tests flush it too.
        ctx.db.query::<()>(&redis::cmd("FLUSHALL")).await?;
    }
    Ok(())
}

/// How many objects a large batch holds in `db`: 10,000 once, on the
/// memory engine in its own layout, and 2,000 elsewhere (1,000 on a real
/// cluster), where each object's write costs a debug build several times
/// as much and the same paths are taken at any size.
fn large(ctx: &TestCtx, db: &Db) -> u32 {
    if ctx.db.is_cluster() {
        1_000
    } else if ctx.kind == redmodel_suite::Backend::Memory && db.key_layout() == ctx.db.key_layout()
    {
        10_000
    } else {
        2_000
    }
}

/// The results of a batch that should all have succeeded.
fn all_ok<T>(results: Vec<Result<T, ItemError>>) -> redmodel::Result<Vec<T>> {
    results
        .into_iter()
        .map(|r| r.map_err(|e| e.error))
        .collect()
}

/// Checks that every index of `Item` holds exactly what the objects'
/// fields say: each unique entry names the object whose `code` it is (and
/// is confirmed, no pending lease), the sorted index holds each object's
/// `rank` and nothing else, each tag set the objects with that tag, and
/// the recent list only objects with a `seen`, each once. Reads the
/// objects themselves, so it checks the indexes against what was stored.
async fn assert_indexes_exact(db: &Db, why: &str) -> redmodel::Result<BTreeMap<u32, Item>> {
    assert_indexes_match(db, why, true).await
}

/// [`assert_indexes_exact`], where the recent list may hold fewer than its
/// cap if not `recent_full`: a delete takes its object out of the list
/// and brings no older one back.
async fn assert_indexes_match(
    db: &Db,
    why: &str,
    recent_full: bool,
) -> redmodel::Result<BTreeMap<u32, Item>> {
    let objects: BTreeMap<u32, Item> = Item::load_all(db)
        .await?
        .into_iter()
        .map(|i| (i.id, i))
        .collect();
    let key = |id: u32| format!("bulkitem:{id}");

    let mut codes = BTreeMap::new();
    for entry in db.scan_keys("*bulkitem:_unique:code:*").await? {
        let value = entry
            .trim_matches(['{', '}'])
            .rsplit(':')
            .next()
            .unwrap_or_default()
            .to_string();
        let mut pipe = redis::pipe();
        pipe.cmd("LRANGE")
            .arg(&entry)
            .arg(0)
            .arg(-1)
            .cmd("PTTL")
            .arg(&entry);
        let (holders, ttl): (Vec<String>, i64) = db.query_pipeline(&pipe).await?;
        if ttl != -1 {
            // A claim whose write stopped before its object's (a lost
            // connection, in the cluster layout's steps) lapses; one whose
            // object holds the value is a write stopped before its
            // confirmation, which a repair confirms.
            let held = objects
                .values()
                .any(|o| holders.contains(&key(o.id)) && o.code.as_deref() == Some(&value));
            assert!(
                db.is_cluster() && !held,
                "{why}: the entry {entry} is still pending, naming {holders:?}"
            );
            continue;
        }
        codes.insert(value, holders);
    }
    let want: BTreeMap<String, Vec<String>> = objects
        .values()
        .filter_map(|o| Some((o.code.clone()?, vec![key(o.id)])))
        .collect();
    assert_eq!(codes, want, "{why}: unique entries");

    let sorted: Vec<(String, f64)> = db
        .query(
            redis::cmd("ZRANGE")
                .arg(db.key_layout().stored(&Item::RANK_SORTED.key()).as_ref())
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES"),
        )
        .await?;
    let sorted: BTreeMap<String, f64> = sorted.into_iter().collect();
    let want: BTreeMap<String, f64> = objects
        .values()
        .map(|o| (key(o.id), o.rank as f64))
        .collect();
    assert_eq!(sorted, want, "{why}: sorted index");

    for tag in TAGS {
        let members: BTreeSet<String> = db
            .query(redis::cmd("SMEMBERS").arg(Item::TAGS_TAGS.key_in(db, tag)?))
            .await?;
        let want: BTreeSet<String> = objects
            .values()
            .filter(|o| o.tags.iter().any(|t| t == tag))
            .map(|o| key(o.id))
            .collect();
        assert_eq!(members, want, "{why}: tag {tag}");
    }

    let recent: Vec<String> = db
        .query(
            redis::cmd("LRANGE")
                .arg(db.key_layout().stored(&Item::SEEN_RECENT.key()).as_ref())
                .arg(0)
                .arg(-1),
        )
        .await?;
    let seen = objects.values().filter(|o| o.seen.is_some()).count();
    match recent_full {
        true => assert_eq!(recent.len(), seen.min(20), "{why}: recent list length"),
        false => assert!(recent.len() <= 20, "{why}: recent list length"),
    }
    let distinct: BTreeSet<&String> = recent.iter().collect();
    assert_eq!(
        distinct.len(),
        recent.len(),
        "{why}: an object twice in the recent list"
    );
    for member in &recent {
        let id: u32 = member
            .rsplit(':')
            .next()
            .unwrap_or_default()
            .parse()
            .unwrap_or(u32::MAX);
        assert!(
            objects.get(&id).is_some_and(|o| o.seen.is_some()),
            "{why}: {member} in the recent list"
        );
    }
    Ok(objects)
}

backend_tests! {
    /// An index lookup that finds more objects than a batch holds reads
    /// them a batch at a time: every object, in the index's order, in as
    /// many requests as batches after the index's own.
    exclusive async fn an_index_lookup_reads_more_than_a_batch_in_batches(ctx) -> redmodel::Result<()> {
        flush(&ctx).await?;
        let db = &ctx.db;
        let count = 2 * redmodel::model::LOAD_BATCH + 5;
        let items: Vec<Item> = (0..count as u32).map(|id| item(id, None)).collect();
        for done in Item::insert_many(db, &items).await {
            done.map_err(|e| e.error)?;
        }
        let before = db.round_trips();
        let top = Item::RANK_SORTED.top(db, count as u64).await?;
        assert_eq!(db.round_trips() - before, 1 + 3, "the range, then three batches");
        // Highest first, ties by key from the last.
        let mut want = items;
        want.sort_by(|a, b| {
            (b.rank, format!("bulkitem:{}", b.id)).cmp(&(a.rank, format!("bulkitem:{}", a.id)))
        });
        assert_eq!(top, want);
        Ok(())
    }

    /// A batch of a model with a unique index encodes each value once:
    /// the fields its duplicate check encodes are the ones it writes.
    async fn insert_many_encodes_each_value_once(ctx) -> redmodel::Result<()> {
        for (layout, db) in ctx.layouts().into_iter().enumerate() {
            let encodes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let badges: Vec<Badge> = (0..40)
                .map(|id| Badge {
                    id,
                    code: format!("{layout}-{id}"),
                    counted: Counted {
                        value: id * 3,
                        encodes: encodes.clone(),
                    },
                })
                .collect();
            all_ok(Badge::insert_many(&db, &badges).await)?;
            assert_eq!(encodes.load(std::sync::atomic::Ordering::Relaxed), badges.len());
            for badge in &badges {
                assert_eq!(Badge::at(badge.id).load(&db).await?.as_ref(), Some(badge));
                assert_eq!(Badge::CODE_UNIQUE.find(&db, &badge.code).await?, Some(badge.clone()));
            }
            all_ok(Badge::delete_many(&db, badges.iter().map(|b| b.id)).await)?;
        }
        Ok(())
    }

    /// A large batch of inserts with unique, sorted, tag and recent
    /// fields: every item succeeds, and afterwards every index equals the
    /// fields.
    exclusive async fn insert_many_keeps_every_index_equal_to_the_fields(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            let n = large(&ctx, &db);
            flush(&ctx).await?;
            let items: Vec<Item> = (0..n)
                .map(|id| {
                    let code = format!("c{id}");
                    item(id, (!id.is_multiple_of(10)).then_some(code.as_str()))
                })
                .collect();
            all_ok(Item::insert_many(&db, &items).await)?;
            let why = format!("{} objects in {:?}", n, db.key_layout());
            let stored = assert_indexes_exact(&db, &why).await?;
            assert_eq!(stored.len(), items.len(), "{why}");
            assert!(items.iter().all(|i| stored.get(&i.id) == Some(i)), "{why}");
        }
        Ok(())
    }

    /// A batch with duplicates refuses exactly the duplicates: a unique
    /// value another object holds ([`Error::Unique`]), a value or an
    /// object an earlier item of the batch already takes
    /// ([`Error::DuplicateInBatch`]); each error names its item, the
    /// refused items write nothing, and the others are written.
    exclusive async fn a_batch_reports_exactly_its_duplicates(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            item(100, Some("held")).insert(&db).await?;
            let batch = [
                item(1, Some("held")),
                item(2, Some("free")),
                item(3, Some("free")),
                item(4, Some("other")),
                Item { rank: 5, ..item(2, Some("again")) },
                item(5, None),
            ];
            let results = Item::insert_many(&db, &batch).await;
            assert_eq!(results.len(), batch.len());
            let why = format!("{:?}", db.key_layout());
            match &results[0] {
                Err(ItemError { item: 0, key, error: Error::Unique { field: "code", value, holder, .. } }) => {
                    assert_eq!((key.as_str(), value.as_str(), holder.as_str()), ("bulkitem:1", "held", "bulkitem:100"), "{why}");
                }
                other => panic!("{why}: item 0: {other:?}"),
            }
            match &results[2] {
                Err(ItemError { item: 2, key, error: Error::DuplicateInBatch { field: Some("code"), value, earlier: 1, .. } }) => {
                    assert_eq!((key.as_str(), value.as_str()), ("bulkitem:3", "free"), "{why}");
                }
                other => panic!("{why}: item 2: {other:?}"),
            }
            match &results[4] {
                Err(ItemError { item: 4, key, error: Error::DuplicateInBatch { field: None, value, earlier: 1, .. } }) => {
                    assert_eq!((key.as_str(), value.as_str()), ("bulkitem:2", "bulkitem:2"), "{why}");
                }
                other => panic!("{why}: item 4: {other:?}"),
            }
            for ok in [1, 3, 5] {
                assert!(results[ok].is_ok(), "{why}: item {ok}: {:?}", results[ok]);
            }
            let objects = assert_indexes_exact(&db, &why).await?;
            let ids: Vec<u32> = objects.keys().copied().collect();
            assert_eq!(ids, [2, 4, 5, 100], "{why}: only the accepted items are written");
            assert_eq!(objects[&2], batch[1], "{why}: the first of two items on one object wins");
        }
        Ok(())
    }

    /// `delete_many` takes every object out of every index: nothing of
    /// the model is left, and an object that was not there is `false`.
    exclusive async fn delete_many_leaves_no_index_entry_behind(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            let items: Vec<Item> = (0..300).map(|id| item(id, Some(&format!("d{id}")))).collect();
            all_ok(Item::insert_many(&db, &items).await)?;
            let existed = all_ok(Item::delete_many(&db, (0..300).chain([999])).await)?;
            assert!(existed[..300].iter().all(|e| *e), "{:?}", db.key_layout());
            assert!(!existed[300]);
            assert_eq!(db.scan_keys("*bulkitem*").await?, Vec::<String>::new(), "{:?}", db.key_layout());
        }
        Ok(())
    }

    /// `set_many` over many objects moves unique values (one object's
    /// old value claimed by another in the same batch is refused while
    /// its holder still holds it), scores, tags and recent entries, and
    /// the indexes stay equal to the fields; an item on a missing object
    /// or claiming a held value fails alone.
    exclusive async fn set_many_keeps_the_indexes_exact(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            let items: Vec<Item> = (0..200).map(|id| item(id, Some(&format!("s{id}")))).collect();
            all_ok(Item::insert_many(&db, &items).await)?;
            let changes = (0..200u32).map(|id| {
                let assigns = match id % 4 {
                    0 => vec![Item::CODE.to(Some(format!("n{id}"))), Item::RANK.to(u64::from(id) * 3)],
                    1 => vec![Item::TAGS.to(vec!["gold".to_string()]), Item::SEEN.to(None)],
                    2 => vec![Item::CODE.to(None::<String>), Item::SEEN.to(Some(7u64))],
                    _ => vec![Item::TAGS.to(Vec::<String>::new()), Item::RANK.to(1u64)],
                };
                (id, assigns)
            });
            let held = (5u32, vec![Item::CODE.to(Some("s9".to_string()))]);
            let missing = (777u32, vec![Item::RANK.to(1u64)]);
            let results = Item::set_many(&db, changes.chain([held, missing])).await;
            let why = format!("{:?}", db.key_layout());
            // Item 5's own change comes first: the later item on it is a
            // duplicate; item 777 has no object.
            assert!(results[..200].iter().all(Result::is_ok), "{why}: {results:?}");
            assert!(matches!(&results[200], Err(ItemError { item: 200, error: Error::DuplicateInBatch { earlier: 5, .. }, .. })), "{why}: {:?}", results[200]);
            assert!(matches!(&results[201], Err(ItemError { item: 201, error: Error::NotFound { .. }, .. })), "{why}: {:?}", results[201]);
            let objects = assert_indexes_exact(&db, &why).await?;
            assert_eq!(objects[&4].code.as_deref(), Some("n4"), "{why}");
            assert_eq!(objects[&6].code, None, "{why}");
            assert_eq!(objects[&5].tags, ["gold"], "{why}");

            // A value another object holds is refused, and only that item.
            let results = Item::set_many(&db, [
                (1u32, vec![Item::CODE.to(Some("s9".to_string()))]),
                (3u32, vec![Item::CODE.to(Some("fresh".to_string()))]),
            ]).await;
            assert!(matches!(&results[0], Err(ItemError { item: 0, error: Error::Unique { value, .. }, .. }) if value == "s9"), "{why}: {:?}", results[0]);
            assert!(results[1].is_ok(), "{why}: {:?}", results[1]);
            let objects = assert_indexes_exact(&db, &why).await?;
            assert_eq!(objects[&1].code.as_deref(), Some("s1"), "{why}");
            assert_eq!(objects[&3].code.as_deref(), Some("fresh"), "{why}");
        }
        Ok(())
    }

    /// Bulk inserts racing single inserts of other objects on the same
    /// unique values: each value ends with one holder, whose entry names
    /// it, and exactly the writes that lost were refused.
    exclusive async fn bulk_inserts_racing_single_inserts_claim_each_value_once(ctx) -> redmodel::Result<()> {
        const VALUES: u32 = 60;
        for db in ctx.layouts() {
            for round in 0..4 {
                flush(&ctx).await?;
                let batch: Vec<Item> = (0..VALUES).map(|v| item(v, Some(&format!("r{v}")))).collect();
                let bulk = {
                    let db = db.clone();
                    tokio::spawn(async move { Item::insert_many(&db, &batch).await })
                };
                let singles = (0..VALUES).map(|v| {
                    let db = db.clone();
                    tokio::spawn(async move { item(1000 + v, Some(&format!("r{v}"))).insert(&db).await })
                });
                let singles: Vec<_> = futures_util::future::join_all(singles).await;
                let bulk = bulk.await.expect("the bulk task");
                let why = format!("round {round} in {:?}", db.key_layout());
                let mut won = 0;
                for (v, single) in singles.into_iter().enumerate() {
                    let single = single.expect("a single task");
                    let bulk_won = bulk[v].is_ok();
                    match (&single, &bulk[v]) {
                        (Ok(_), Err(ItemError { error: Error::Unique { .. }, .. })) => {}
                        (Err(Error::Unique { .. }), Ok(())) => {}
                        other => panic!("{why}: value r{v}: {other:?}"),
                    }
                    won += usize::from(bulk_won);
                }
                let objects = assert_indexes_exact(&db, &why).await?;
                assert_eq!(objects.len(), VALUES as usize, "{why}: one object per value");
                assert_eq!(objects.keys().filter(|id| **id < VALUES).count(), won, "{why}");
            }
        }
        Ok(())
    }

    /// Bulk tag changes racing each other and single tag changes on the
    /// same objects: every tag set ends holding exactly the objects whose
    /// field names the tag (a write that read old tags another writer then
    /// changed runs again, gathered or alone).
    exclusive async fn bulk_tag_changes_racing_on_the_same_objects_leave_the_tag_sets_exact(ctx) -> redmodel::Result<()> {
        const OBJECTS: u32 = 120;
        let tags_of = |writer: u32, round: u32, id: u32| -> Vec<String> {
            let n = ((writer + round + id) % 3) as usize;
            (0..n)
                .map(|k| TAGS[(writer as usize * 2 + id as usize + k) % TAGS.len()].to_string())
                .collect()
        };
        for db in ctx.layouts() {
            flush(&ctx).await?;
            let items: Vec<Item> = (0..OBJECTS).map(|id| item(id, None)).collect();
            all_ok(Item::insert_many(&db, &items).await)?;
            for round in 0..3 {
                let bulks = (0..4u32).map(|writer| {
                    let db = db.clone();
                    tokio::spawn(async move {
                        let changes = (0..OBJECTS)
                            .map(move |id| (id, vec![Item::TAGS.to(tags_of(writer, round, id))]));
                        Item::set_many(&db, changes).await
                    })
                });
                let singles = (0..OBJECTS).step_by(5).map(|id| {
                    let db = db.clone();
                    tokio::spawn(async move {
                        Item::at(id).set(&db, Item::TAGS, tags_of(9, round, id)).await
                    })
                });
                let (bulks, singles) = futures_util::future::join(
                    futures_util::future::join_all(bulks),
                    futures_util::future::join_all(singles),
                )
                .await;
                let why = format!("round {round} in {:?}", db.key_layout());
                for bulk in bulks {
                    all_ok(bulk.expect("a bulk task"))?;
                }
                for single in singles {
                    single.expect("a single task")?;
                }
                assert_indexes_exact(&db, &why).await?;
            }
        }
        Ok(())
    }

    /// An item whose key holds another type (written by someone else)
    /// fails alone, with [`Error::UnexpectedType`], and writes nothing;
    /// the items beside it, sent in the same call on a server, are
    /// written whole.
    exclusive async fn an_item_whose_key_holds_another_type_fails_alone(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            let stored = |id: u32| db.key_layout().stored(&format!("bulkitem:{id}")).into_owned();
            db.query::<()>(redis::cmd("SET").arg(stored(5)).arg("not a hash")).await?;
            let items: Vec<Item> = (0..12).map(|id| item(id, Some(&format!("w{id}")))).collect();
            let results = Item::insert_many(&db, &items).await;
            for (id, result) in results.iter().enumerate() {
                match (id, result) {
                    (5, Err(ItemError { item: 5, error: Error::UnexpectedType { key, expected: "hash" }, .. }))
                        if key == "bulkitem:5" => {}
                    (5, other) => panic!("{:?}: item 5: {other:?}", db.key_layout()),
                    (_, Ok(())) => {}
                    (_, Err(err)) => panic!("{:?}: item {id}: {err:?}", db.key_layout()),
                }
            }
            let value: String = db.query(redis::cmd("GET").arg(stored(5))).await?;
            assert_eq!(value, "not a hash");
            assert_eq!(Item::CODE_UNIQUE.find(&db, "w5".to_string()).await?, None);
            db.query::<()>(redis::cmd("DEL").arg(stored(5))).await?;
            let written = assert_indexes_exact(&db, &format!("{:?}", db.key_layout())).await?;
            assert_eq!(written.len(), 11);
        }
        Ok(())
    }

    /// An item's index key that holds another type (a tag set's key
    /// holding a string) fails that item, which writes nothing in the
    /// plain layout (in the cluster layout a tag entry is a step after
    /// the object's write, which stays, its index lagging); the items
    /// without that tag, sent beside it in one call on a server, are
    /// written whole.
    exclusive async fn an_item_whose_command_is_refused_fails_alone(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            let gold = db.key_layout().stored("bulkitem:_tag:tags:gold").into_owned();
            db.query::<()>(redis::cmd("SET").arg(&gold).arg("not a set")).await?;
            // One shape for all (two tags each), so that on a server they
            // go in one call: every other item has the refused tag.
            let items: Vec<Item> = (0..12)
                .map(|id| {
                    let first = if id % 2 == 1 { "gold" } else { "green" };
                    Item { tags: vec![first.to_string(), "red".to_string()], ..item(id, None) }
                })
                .collect();
            let results = Item::insert_many(&db, &items).await;
            for (item, result) in items.iter().zip(&results) {
                let has_gold = item.tags.iter().any(|t| t == "gold");
                match result {
                    Ok(()) => assert!(!has_gold, "{:?}: item {} has gold", db.key_layout(), item.id),
                    Err(ItemError { error, .. }) => assert!(
                        has_gold && matches!(error, Error::WrongType { .. } | Error::UnexpectedType { .. }),
                        "{:?}: item {}: {error:?}",
                        db.key_layout(),
                        item.id
                    ),
                }
            }
            assert!(results.iter().any(Result::is_err) && results.iter().any(Result::is_ok));
            for (item, result) in items.iter().zip(&results) {
                let stored = Item::load(&db, item.id).await?;
                let expected = (result.is_ok() || db.key_layout() == KeyLayout::Cluster).then_some(item);
                assert_eq!(stored.as_ref(), expected, "{:?}: item {}", db.key_layout(), item.id);
            }
        }
        Ok(())
    }

    /// Sub-objects go in bulk too, each needing its admin: one under a
    /// missing admin fails alone with [`Error::NotFound`].
    exclusive async fn insert_many_of_sub_objects_needs_their_admins(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            item(1, None).insert(&db).await?;
            let notes: Vec<(ObjectRef<Note>, Note)> = [(1, 1), (1, 2), (2, 1)]
                .into_iter()
                .map(|(owner, n)| (Item::at(owner).sub::<Note>(n), Note { n, text: format!("{owner}.{n}") }))
                .collect();
            let results = ObjectRef::insert_many(&db, notes.iter().map(|(h, n)| (h.clone(), n))).await;
            assert!(results[0].is_ok() && results[1].is_ok(), "{results:?}");
            assert!(matches!(&results[2], Err(ItemError { item: 2, error: Error::NotFound { key }, .. }) if key == "bulkitem:2"), "{:?}", results[2]);
            assert_eq!(Item::at(1).load_subs::<Note>(&db).await?.len(), 2);
            assert!(!notes[2].0.exists(&db).await?);
        }
        Ok(())
    }
}

/// How many calls of `commands` the server behind `db` has run (`INFO
/// commandstats`).
async fn calls_of(db: &Db, commands: &[&str]) -> redmodel::Result<u64> {
    let info: String = db.query(redis::cmd("INFO").arg("commandstats")).await?;
    Ok(commands
        .iter()
        .map(|c| redmodel_suite::command_calls(&info, c))
        .sum())
}

/// On one server, a bulk insert's writes run together: a few
/// transactions of native commands, no script per object, the index
/// commands of a transaction to one key merged into one (a `SADD` of
/// many members), each object still written whole.
#[tokio::test]
async fn a_bulk_insert_on_one_server_runs_its_writes_together() {
    let test = "a_bulk_insert_on_one_server_runs_its_writes_together";
    let Some(server) =
        redmodel_suite::configured_server_or_skip(test, redmodel_suite::RedisServer::builder())
    else {
        return;
    };
    let db = Db::connect(&server.url()).await.expect("connect");
    let items: Vec<Item> = (0..200)
        .map(|id| Item {
            tags: vec!["red".to_string()],
            ..item(id, Some(&format!("g{id}")))
        })
        .collect();
    let calls = async |names: &[&str]| calls_of(&db, names).await.expect("INFO");
    let names: [&[&str]; 4] = [&["eval", "evalsha"], &["exec"], &["sadd"], &["zadd"]];
    let mut before = Vec::new();
    for n in names {
        before.push(calls(n).await);
    }
    all_ok(Item::insert_many(&db, &items).await).expect("every item written");
    let mut made = [0; 4];
    for ((n, before), made) in names.into_iter().zip(before).zip(&mut made) {
        *made = calls(n).await - before;
    }
    let [scripts, execs, sadds, zadds] = made;
    assert!(
        scripts + execs <= 50,
        "{scripts} script calls and {execs} transactions for 200 objects"
    );
    assert!(execs > 0, "no transaction for 200 objects");
    // Every object's tag is `red`, and its rank goes to one sorted set:
    // one SADD and one ZADD per transaction or script.
    assert!(
        sadds <= scripts + execs && zadds <= scripts + execs,
        "{sadds} SADDs and {zadds} ZADDs for 200 objects in {execs} transactions and {scripts} scripts"
    );
    let stored = assert_indexes_exact(&db, test)
        .await
        .expect("exact indexes");
    assert_eq!(stored.len(), 200);
}

/// Checks a bulk write's outcome after its connection was cut: each item
/// has a result; an item that succeeded holds `after` (`None`: the object
/// is gone); one that failed failed with a transient error and holds
/// `before` or `after`, whole, as if it ran alone; and every index equals
/// the fields. How many items failed.
async fn assert_whole_or_not_at_all<T>(
    db: &Db,
    why: &str,
    results: &[Result<T, ItemError>],
    before: &BTreeMap<u32, Item>,
    after: &BTreeMap<u32, Option<Item>>,
) -> usize {
    assert_eq!(results.len(), after.len(), "{why}: one result per item");
    let stored = settled(db, why, after.values().any(Option::is_some)).await;
    let mut failed = 0;
    for (result, (id, after)) in results.iter().zip(after) {
        let now = stored.get(id);
        match result {
            Ok(_) => assert_eq!(now, after.as_ref(), "{why}: item {id} succeeded"),
            Err(ItemError { error, .. }) => {
                assert!(error.is_transient(), "{why}: item {id}: {error:?}");
                assert!(
                    now == after.as_ref() || now == before.get(id),
                    "{why}: item {id} failed and holds {now:?}"
                );
                failed += 1;
            }
        }
    }
    failed
}

/// The objects in `db`, every index checked equal to their fields. On
/// Redis Cluster, where a write across slots is ordered steps and a drop
/// between two may leave what the steps document (a claim not yet
/// confirmed, an index entry behind its field), `repair` first; no drop
/// leaves an object partial. The recent list as [`assert_indexes_match`]
/// takes it (`recent_full`).
async fn settled(db: &Db, why: &str, recent_full: bool) -> BTreeMap<u32, Item> {
    if db.is_cluster() {
        let fixed = repair(db, |_| ()).await.expect("repair");
        assert!(fixed.after.is_clean(), "{why}: {}", fixed.after);
        assert_eq!(
            fixed.before.count(Kind::PartialObject),
            0,
            "{why}: {}",
            fixed.before
        );
    }
    assert_indexes_match(db, why, recent_full)
        .await
        .expect("exact indexes")
}

/// Runs an insert, a change and a delete of 600 objects in bulk on `db`,
/// whose connections go through `proxy`, each with the connection of the
/// first reply holding `cut` dropped after the server ran its request:
/// the writes cut off fail alone, with a transient error, each object
/// stays whole or untouched, the indexes exact, and `db` goes on.
async fn bulk_writes_cut_off(why: &str, db: &Db, proxy: &Proxy, cut: &[u8]) {
    db.query::<()>(&redis::cmd("FLUSHDB"))
        .await
        .expect("FLUSHDB");
    let items: Vec<Item> = (0..600)
        .map(|id| item(id, Some(&format!("k{id}"))))
        .collect();
    let none = BTreeMap::new();
    let inserted: BTreeMap<u32, Option<Item>> =
        items.iter().map(|i| (i.id, Some(i.clone()))).collect();

    proxy.cut_reply_with(cut);
    let results = Item::insert_many(db, &items).await;
    let why_insert = format!("{why}: insert_many");
    let failed = assert_whole_or_not_at_all(db, &why_insert, &results, &none, &inserted).await;
    assert_none_waited_out(&why_insert, &results);
    // Each insert ran once at most: none was sent again after its fate
    // became unknown (its `_count` would say 2).
    let mut counts = redis::pipe();
    for i in &items {
        let key = format!("bulkitem:{}", i.id);
        counts.hget(db.key_layout().stored(&key).as_ref(), "_count");
    }
    let counts: Vec<Option<u64>> = db.query_pipeline(&counts).await.expect("the counts");
    for ((i, result), count) in items.iter().zip(&results).zip(counts) {
        let want: &[Option<u64>] = match result {
            Ok(()) => &[Some(1)],
            Err(_) => &[None, Some(1)],
        };
        assert!(
            want.contains(&count),
            "{why_insert}: item {} counted {count:?}",
            i.id
        );
    }
    assert!(failed > 0, "{why_insert}: the cut hit no item");
    // The failed items again, on the same Db: all written.
    let again: Vec<Item> = results
        .iter()
        .zip(&items)
        .filter(|(r, _)| r.is_err())
        .map(|(_, i)| i.clone())
        .collect();
    all_ok(Item::insert_many(db, &again).await).expect("the failed items written again");
    let before = settled(db, &why_insert, true).await;
    assert_eq!(before.len(), items.len(), "{why_insert}");

    let changed: BTreeMap<u32, Option<Item>> = items
        .iter()
        .map(|i| {
            let mut new = item(i.id + 1, Some(&format!("m{}", i.id)));
            new.id = i.id;
            (i.id, Some(new))
        })
        .collect();
    let changes = changed.iter().filter_map(|(id, new)| {
        let new = new.as_ref()?;
        Some((
            *id,
            vec![
                Item::CODE.to(new.code.clone()),
                Item::RANK.to(new.rank),
                Item::TAGS.to(new.tags.clone()),
                Item::SEEN.to(new.seen),
            ],
        ))
    });
    proxy.cut_reply_with(cut);
    let results = Item::set_many(db, changes).await;
    let why_set = format!("{why}: set_many");
    let failed = assert_whole_or_not_at_all(db, &why_set, &results, &before, &changed).await;
    assert_none_waited_out(&why_set, &results);
    assert!(failed > 0, "{why_set}: the cut hit no item");
    let before = settled(db, &why_set, true).await;

    let gone: BTreeMap<u32, Option<Item>> = items.iter().map(|i| (i.id, None)).collect();
    proxy.cut_reply_with(cut);
    let results = Item::delete_many(db, items.iter().map(|i| i.id)).await;
    let why_delete = format!("{why}: delete_many");
    let failed = assert_whole_or_not_at_all(db, &why_delete, &results, &before, &gone).await;
    assert_none_waited_out(&why_delete, &results);
    assert!(failed > 0, "{why_delete}: the cut hit no item");
    all_ok(Item::delete_many(db, items.iter().map(|i| i.id)).await).expect("deleted again");
    // Nothing left but, on Redis Cluster, the claims of changes cut off
    // before their objects' writes: pending, they lapse.
    for key in db.scan_keys("*bulkitem*").await.expect("SCAN") {
        let ttl: i64 = db.query(redis::cmd("PTTL").arg(&key)).await.expect("PTTL");
        // -2: the key is gone since the SCAN (a pending claim lapsed).
        if ttl == -2 {
            continue;
        }
        assert!(
            db.is_cluster() && key.contains(":_unique:") && ttl > 0,
            "{why_delete}: {key} left (PTTL {ttl})"
        );
    }
}

/// Checks that no item of a batch whose connection dropped failed by
/// waiting out the response timeout: a dropped connection is known at
/// once, and so is a cluster connection that stops answering after it.
fn assert_none_waited_out<T>(why: &str, results: &[Result<T, ItemError>]) {
    let waited = results
        .iter()
        .filter(|r| {
            matches!(r, Err(ItemError { error: Error::Connection { source }, .. })
                if source.is_timeout())
        })
        .count();
    assert_eq!(
        waited, 0,
        "{why}: items that waited out the response timeout"
    );
}

/// On redis-server and on the engine's RESP server, a bulk write whose
/// connection drops after the server ran one of its transactions loses
/// only that transaction's replies: each of its items fails with a
/// transient error, each object is whole (as the write left it or as it
/// was), every index equals the fields, and the `Db` writes on.
#[tokio::test]
async fn a_bulk_write_cut_off_leaves_each_object_whole_or_untouched() {
    let test = "a_bulk_write_cut_off_leaves_each_object_whole_or_untouched";
    if let Some(server) =
        redmodel_suite::configured_server_or_skip(test, redmodel_suite::RedisServer::builder())
    {
        let proxy = Proxy::start(server.addr()).await.expect("a proxy");
        let db = Db::connect(&proxy.url()).await.expect("connect");
        bulk_writes_cut_off("redis-server", &db, &proxy, QUEUED).await;
    }
    let engine = redmodel_suite::serve_engine(redmodel::memory::Engine::new())
        .await
        .expect("the engine served");
    let proxy = Proxy::start(engine.local_addr()).await.expect("a proxy");
    let db = Db::connect(&proxy.url()).await.expect("connect");
    bulk_writes_cut_off("the engine over RESP", &db, &proxy, QUEUED).await;
    if let Some((_cluster, proxy)) = RedisCluster::behind_a_proxy(test).await {
        // A batch of 600 writes on a cluster keeps 256 requests in flight
        // on one node's connection: on a loaded 2-core machine the last of
        // them waits longer than the default 5 s for its reply, and the
        // batches that must succeed (the writes again) would time out. A
        // long timeout also shows that no cut request waits it out.
        let db = Db::connect_cluster_with_timeouts(
            [proxy.url()],
            Duration::from_secs(2),
            Duration::from_secs(15),
        )
        .await
        .expect("connect");
        bulk_writes_cut_off("Redis Cluster", &db, &proxy, b"*").await;
    }
}

/// The replies of a gathering's transaction start with a `+QUEUED`: its
/// EXEC has run when they leave the server.
const QUEUED: &[u8] = b"+QUEUED";

/// A bulk insert of 600 objects on `db`, whose connections through
/// `proxy` go silent (a half-open TCP connection) once the first objects
/// are written: it ends within a few response timeouts (`response`),
/// each item done or failed with a transient error, and every object
/// whole, as a `Db` made by `reader` afterwards reads them (`direct`
/// around the proxy, or new connections through it).
async fn bulk_write_gone_silent(
    why: &str,
    db: &Db,
    direct: &Db,
    reader: impl AsyncFnOnce() -> Db,
    proxy: &Proxy,
    response: Duration,
) {
    direct
        .query::<()>(&redis::cmd("FLUSHDB"))
        .await
        .expect("FLUSHDB");
    let items: Vec<Item> = (0..600)
        .map(|id| item(id, Some(&format!("q{id}"))))
        .collect();
    let watched = direct.clone();
    let freeze = async {
        // Silent once some objects are in: the batch is under way.
        while watched
            .query::<u64>(&redis::cmd("DBSIZE"))
            .await
            .expect("DBSIZE")
            == 0
        {
            tokio::task::yield_now().await;
        }
        proxy.freeze();
    };
    let started = std::time::Instant::now();
    let bound = response * 6 + Duration::from_secs(4);
    let (results, ()) = tokio::time::timeout(
        bound,
        futures_util::future::join(Item::insert_many(db, &items), freeze),
    )
    .await
    .unwrap_or_else(|_| panic!("{why}: the bulk write still runs after {bound:?}"));
    let inserted: BTreeMap<u32, Option<Item>> =
        items.iter().map(|i| (i.id, Some(i.clone()))).collect();
    let reader = reader().await;
    let failed =
        assert_whole_or_not_at_all(&reader, why, &results, &BTreeMap::new(), &inserted).await;
    eprintln!("{why}: {failed} of 600 failed, in {:?}", started.elapsed());
}

/// On redis-server, the engine's RESP server and Redis Cluster, a bulk
/// write whose server goes silent midway (no reply, no close) does not hang: it ends
/// within a few response timeouts, each item done or failed with a
/// transient error, each object whole.
#[tokio::test]
async fn a_bulk_write_whose_server_goes_silent_ends_with_each_item_done_or_failed() {
    let test = "a_bulk_write_whose_server_goes_silent_ends_with_each_item_done_or_failed";
    let response = Duration::from_secs(1);
    let through = async |proxy: &Proxy| {
        Db::connect_with_timeouts(&proxy.url(), Duration::from_secs(1), response)
            .await
            .expect("connect")
    };
    if let Some(server) =
        redmodel_suite::configured_server_or_skip(test, redmodel_suite::RedisServer::builder())
    {
        let proxy = Proxy::start(server.addr()).await.expect("a proxy");
        let direct = Db::connect(&server.url()).await.expect("connect");
        let db = through(&proxy).await;
        let reader = async || direct.clone();
        bulk_write_gone_silent("redis-server", &db, &direct, reader, &proxy, response).await;
    }
    let engine = redmodel::memory::Engine::new();
    let served = redmodel_suite::serve_engine(engine.clone())
        .await
        .expect("the engine served");
    let proxy = Proxy::start(served.local_addr()).await.expect("a proxy");
    let db = through(&proxy).await;
    let direct = Db::from_engine(engine);
    let reader = async || direct.clone();
    bulk_write_gone_silent(
        "the engine over RESP",
        &db,
        &direct,
        reader,
        &proxy,
        response,
    )
    .await;
    if let Some((mut cluster, proxy)) = RedisCluster::behind_a_proxy(test).await {
        // The node itself for the counts; a cluster client through the
        // proxy, on connections opened after it froze the others, reads.
        let direct = Db::connect(&cluster.nodes()[0].url())
            .await
            .expect("connect");
        let db = Db::connect_cluster_with_timeouts([proxy.url()], Duration::from_secs(1), response)
            .await
            .expect("connect");
        let url = proxy.url();
        let reader = async || Db::connect_cluster([url]).await.expect("connect");
        bulk_write_gone_silent("Redis Cluster", &db, &direct, reader, &proxy, response).await;
    }
}

/// What one write on a server that refuses writes came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CameTo {
    Done,
    Refused,
}

/// A setting that makes a server refuse writes, and the error it gives.
struct Refusal {
    /// The CONFIG parameter, its value that refuses and its value that
    /// accepts again.
    config: (&'static str, &'static str, &'static str),
    /// Whether a write's error is the refusal's.
    refused: fn(&Error) -> bool,
}

/// `maxmemory` below what the server holds (noeviction): it refuses the
/// commands that may grow the data.
const FULL: Refusal = Refusal {
    config: ("maxmemory", "1", "0"),
    refused: |e| matches!(e, Error::OutOfMemory { .. }),
};

/// `min-replicas-to-write 1` on a server without replicas: it refuses
/// every write, NOREPLICAS, a passing state.
const SHORT_OF_REPLICAS: Refusal = Refusal {
    config: ("min-replicas-to-write", "1", "0"),
    refused: |e| matches!(e, Error::Unavailable { .. }) && e.is_transient(),
};

/// On `db`, filled with 50 items, then told to refuse writes as `refusal`
/// says, a run of model writes: each one is either done whole or
/// refused whole with the refusal's error, nothing of it written; the
/// indexes stay exact throughout, reads go on (batched reads and query
/// pages too), and writes work again once the refusal is lifted. Returns
/// what each write came to, for comparing backends.
///
/// A full server refuses a script at its first write that may grow the
/// data, and lets it run to its end once it has written (an `HDEL` first
/// would let the rest through); it refuses a `MULTI` holding any such
/// command whole. Each model write that adds data leads with such a
/// command, so a full server refuses every one of them.
async fn writes_on_a_refusing_server(
    why: &str,
    db: &Db,
    refusal: &Refusal,
) -> Vec<(&'static str, CameTo)> {
    let (param, refuse, accept) = refusal.config;
    let set = async |value: &str| {
        db.query::<()>(redis::cmd("CONFIG").arg("SET").arg(param).arg(value))
            .await
            .unwrap_or_else(|e| panic!("{why}: CONFIG SET {param}: {e}"));
    };
    db.query::<()>(&redis::cmd("FLUSHALL"))
        .await
        .expect("FLUSHALL");
    let items: Vec<Item> = (0..50)
        .map(|id| item(id, Some(&format!("f{id}"))))
        .collect();
    all_ok(Item::insert_many(db, &items).await).expect("written");
    assert_indexes_exact(db, why).await.expect("exact");
    set(refuse).await;
    let mut outcomes = Vec::new();
    // A delete takes its object out of the recent list, if there (which
    // of the objects it holds depends on the order a cluster ran the bulk
    // insert's steps in), and brings no older one back.
    let mut write = async |what: &'static str, outcome: redmodel::Result<()>, before| {
        let recent_full = !what.starts_with("delete");
        let after = assert_indexes_match(db, why, recent_full)
            .await
            .expect("exact");
        let came_to = match outcome {
            Ok(()) => CameTo::Done,
            Err(e) if (refusal.refused)(&e) => {
                assert_eq!(after, before, "{why}: a refused {what} changed something");
                CameTo::Refused
            }
            Err(other) => panic!("{why}: {what} refused otherwise: {other:?}"),
        };
        outcomes.push((what, came_to));
        after
    };
    let now = assert_indexes_exact(db, why).await.expect("exact");
    // Item 100 has no `seen`: its insert also clears the field.
    let insert = item(100, Some("new")).insert(db).await.map(drop);
    let now = write("insert with a field left empty", insert, now).await;
    let insert = item(101, Some("newer")).insert(db).await.map(drop);
    let now = write("insert", insert, now).await;
    let over = Item {
        rank: 3,
        ..item(1, Some("f1"))
    };
    let now = write("insert over", over.insert(db).await.map(drop), now).await;
    let set_tags = Item::at(2)
        .set(db, Item::TAGS, vec!["gold".to_string()])
        .await;
    let now = write("set", set_tags, now).await;
    let incr = Item::at(3).incr(db, Item::RANK, 1).await.map(drop);
    let now = write("incr", incr, now).await;
    let many = Item::insert_many(db, &[item(102, Some("x")), item(4, Some("y"))])
        .await
        .into_iter()
        .find_map(Result::err)
        .map_or(Ok(()), |e| Err(e.error));
    let now = write("insert_many", many, now).await;
    let delete = Item::delete(db, 5).await.map(drop);
    let now = write("delete", delete, now).await;
    let many = Item::delete_many(db, [8, 9])
        .await
        .into_iter()
        .find_map(Result::err)
        .map_or(Ok(()), |e| Err(e.error));
    let now = write("delete_many", many, now).await;
    assert_eq!(
        Item::load(db, 6).await.expect("a read"),
        Some(items[6].clone())
    );
    let found = Item::CODE_UNIQUE.find(db, "f6".to_string()).await;
    assert_eq!(found.expect("a unique lookup"), Some(items[6].clone()));
    let loaded = Item::load_many(db, [6, 7]).await.expect("a batch read");
    assert_eq!(loaded, [Some(items[6].clone()), Some(items[7].clone())]);
    // Many keys at once: one command of the batch names them all.
    let many = Item::load_many(db, 0..9000).await.expect("a batch read");
    assert_eq!(many.iter().flatten().count(), now.len(), "{why}: the items");
    let query = Item::query()
        .filter(Item::TAGS_TAGS.has_all([TAGS[0], TAGS[1]]))
        .filter(Item::RANK_SORTED.within(0..1_u64 << 53))
        .order_by(Item::RANK_SORTED.desc())
        .limit(5);
    let page = query.page(db, None).await.expect("a query page");
    assert!(!page.items.is_empty(), "{why}: the query found nothing");
    assert!(query.count(db).await.expect("a count") > 0);
    set(accept).await;
    item(101, Some("newer"))
        .insert(db)
        .await
        .expect("written once the refusal is lifted");
    assert_indexes_match(db, why, false).await.expect("exact");
    outcomes
}

/// [`writes_on_a_refusing_server`] on redis-server, a one-master cluster
/// and the engine over RESP and in process: on each, every write that
/// adds data is refused, and the deletes come to `deletes`.
async fn refused_on_every_backend(test: &str, refusal: &Refusal, deletes: CameTo) {
    let adding = [
        "insert with a field left empty",
        "insert",
        "insert over",
        "set",
        "incr",
        "insert_many",
    ];
    let expected: Vec<(&str, CameTo)> = adding
        .into_iter()
        .map(|what| (what, CameTo::Refused))
        .chain([("delete", deletes), ("delete_many", deletes)])
        .collect();
    if let Some(server) =
        redmodel_suite::configured_server_or_skip(test, redmodel_suite::RedisServer::builder())
    {
        let db = Db::connect(&server.url()).await.expect("connect");
        let outcomes = writes_on_a_refusing_server("redis-server", &db, refusal).await;
        assert_eq!(outcomes, expected, "redis-server");
        let cluster = RedisCluster::start(1).unwrap_or_else(|e| panic!("{test}: {e}"));
        let db = Db::connect_cluster(cluster.urls()).await.expect("connect");
        let outcomes = writes_on_a_refusing_server("Redis Cluster", &db, refusal).await;
        assert_eq!(outcomes, expected, "Redis Cluster");
    }
    let served = redmodel_suite::ServedEngine::start().expect("the engine served");
    let db = Db::connect(&served.url).await.expect("connect");
    let outcomes = writes_on_a_refusing_server("the engine over RESP", &db, refusal).await;
    assert_eq!(outcomes, expected, "the engine over RESP");
    let db = Db::memory();
    let outcomes = writes_on_a_refusing_server("the engine in process", &db, refusal).await;
    assert_eq!(outcomes, expected, "the engine in process");
}

/// A server at its `maxmemory` (noeviction) refuses each model write that
/// adds data whole, with [`Error::OutOfMemory`], and runs deletes and
/// reads, on one server and on a one-master cluster; the engine, over
/// RESP and in process, does exactly what redis-server does.
#[tokio::test]
async fn a_full_server_refuses_each_write_that_adds_data_whole() {
    let test = "a_full_server_refuses_each_write_that_adds_data_whole";
    refused_on_every_backend(test, &FULL, CameTo::Done).await;
}

/// A server with fewer replicas than `min-replicas-to-write` refuses
/// every model write whole, deletes too, with the transient
/// [`Error::Unavailable`], and runs reads, on every backend.
#[tokio::test]
async fn a_server_short_of_replicas_refuses_every_write_whole() {
    let test = "a_server_short_of_replicas_refuses_every_write_whole";
    refused_on_every_backend(test, &SHORT_OF_REPLICAS, CameTo::Refused).await;
}

/// A write's future holds what every backend needs and boxes the rest
/// (a server's attempts, the cluster layout's steps): a future the size
/// of every path at once is copied whole at each await, which costs an
/// in-process write, and each item of a bulk write, more than its
/// commands. The bound is generous: a path embedded again exceeds it
/// (the three are about 5 kB then, 1.0-1.7 kB boxed).
#[test]
fn a_write_future_is_small() {
    let db = Db::memory();
    let value = item(1, Some("c"));
    let handle = value.handle();
    let sizes = [
        ("insert", std::mem::size_of_val(&value.insert(&db))),
        (
            "set_many",
            std::mem::size_of_val(&handle.set_many(&db, vec![Item::SEEN.to(Some(2))])),
        ),
        ("delete", std::mem::size_of_val(&handle.delete(&db))),
    ];
    for (write, size) in sizes {
        assert!(size <= 3072, "the future of {write} is {size} bytes");
    }
}
