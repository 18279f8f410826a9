//! Queries over the declared indexes: results and order equal to a
//! reference computed in Rust from the objects, keyset pages that hold
//! while others write, streams, and clear errors for bad input; on every
//! backend, and on the single-node backends in both key layouts.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::TryStreamExt as _;
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::TestRunner;
use redmodel::model::query::MAX_PAGE;
use redmodel::model::{Cursor, Query};
use redmodel::prelude::*;
use redmodel::{Error, KeyLayout};
use redmodel_suite::{backend_tests, TestCtx};

/// Every kind of index: the property test's model.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "qbook")]
struct QBook {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    isbn: Option<String>,
    #[redmodel(sorted)]
    year: u16,
    #[redmodel(sorted)]
    rating: Option<i32>,
    #[redmodel(tags)]
    tags: Vec<String>,
    #[redmodel(tags)]
    langs: BTreeSet<String>,
    #[redmodel(recent = 5)]
    touched: Option<u64>,
}

async fn flush(ctx: &TestCtx) -> Result<(), Error> {
    if !ctx.is_cluster_mode() {
        ctx.db.query::<()>(&redis::cmd("FLUSHDB")).await?;
    }
    Ok(())
}

/// One random filter, or an order, as data: built into a query and
/// checked against the objects.
#[derive(Debug, Clone)]
enum F {
    Isbn(Option<String>),
    Year(u16, u16, bool),
    Rating(i32, i32),
    Has(bool, String),
    All(bool, Vec<String>),
    Any(bool, Vec<String>),
    None(bool, Vec<String>),
    Recent,
}

#[derive(Debug, Clone, Copy)]
enum O {
    Key,
    Year(bool),
    Rating(bool),
}

fn tag_pool() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "d"]).prop_map(String::from)
}

fn lang_pool() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["en", "fr", "de"]).prop_map(String::from)
}

fn tags_of(book: &QBook, langs: bool) -> Vec<String> {
    if langs {
        book.langs.iter().cloned().collect()
    } else {
        book.tags.clone()
    }
}

fn filter_strategy() -> impl Strategy<Value = F> {
    let tags = |langs: bool| {
        if langs {
            prop::collection::vec(lang_pool(), 0..3).boxed()
        } else {
            prop::collection::vec(tag_pool(), 0..3).boxed()
        }
    };
    prop_oneof![
        prop::option::of((0u32..6).prop_map(|n| format!("isbn-{n}"))).prop_map(F::Isbn),
        (2015u16..2026, 0u16..5, any::<bool>()).prop_map(|(a, w, open)| F::Year(a, a + w, open)),
        (-3i32..3, 0i32..4).prop_map(|(a, w)| F::Rating(a, a + w)),
        any::<bool>().prop_flat_map(move |l| {
            (if l {
                lang_pool().boxed()
            } else {
                tag_pool().boxed()
            })
            .prop_map(move |t| F::Has(l, t))
        }),
        any::<bool>().prop_flat_map(move |l| tags(l).prop_map(move |t| F::All(l, t))),
        any::<bool>().prop_flat_map(move |l| tags(l).prop_map(move |t| F::Any(l, t))),
        any::<bool>().prop_flat_map(move |l| tags(l).prop_map(move |t| F::None(l, t))),
        Just(F::Recent),
    ]
}

fn order_strategy() -> impl Strategy<Value = O> {
    prop_oneof![
        Just(O::Key),
        any::<bool>().prop_map(O::Year),
        any::<bool>().prop_map(O::Rating),
    ]
}

fn book_strategy() -> impl Strategy<Value = QBook> {
    (
        0u32..40,
        prop::option::of((0u32..6).prop_map(|n| format!("isbn-{n}"))),
        2015u16..2026,
        prop::option::of(-3i32..3),
        prop::collection::vec(tag_pool(), 0..3),
        prop::collection::btree_set(lang_pool(), 0..3),
        prop::option::of(0u64..100),
    )
        .prop_map(|(id, isbn, year, rating, mut tags, langs, touched)| {
            tags.sort();
            tags.dedup();
            QBook {
                id,
                isbn,
                year,
                rating,
                tags,
                langs,
                touched,
            }
        })
}

fn build(filters: &[F], order: O) -> Query<QBook> {
    let mut q = QBook::query();
    for f in filters {
        q = match f.clone() {
            F::Isbn(v) => q.filter(QBook::ISBN_UNIQUE.equals(v)),
            F::Year(a, b, true) => q.filter(QBook::YEAR_SORTED.within(a..b)),
            F::Year(a, b, false) => q.filter(QBook::YEAR_SORTED.within(a..=b)),
            F::Rating(a, b) => q.filter(QBook::RATING_SORTED.within(a..=b)),
            F::Has(false, t) => q.filter(QBook::TAGS_TAGS.has(t)),
            F::Has(true, t) => q.filter(QBook::LANGS_TAGS.has(t)),
            F::All(false, t) => q.filter(QBook::TAGS_TAGS.has_all(t)),
            F::All(true, t) => q.filter(QBook::LANGS_TAGS.has_all(t)),
            F::Any(false, t) => q.filter(QBook::TAGS_TAGS.has_any(t)),
            F::Any(true, t) => q.filter(QBook::LANGS_TAGS.has_any(t)),
            F::None(false, t) => q.filter(QBook::TAGS_TAGS.has_none(t)),
            F::None(true, t) => q.filter(QBook::LANGS_TAGS.has_none(t)),
            F::Recent => q.filter(QBook::TOUCHED_RECENT.contains()),
        };
    }
    match order {
        O::Key => q,
        O::Year(desc) if desc => q.order_by(QBook::YEAR_SORTED.desc()),
        O::Year(_) => q.order_by(QBook::YEAR_SORTED.asc()),
        O::Rating(desc) if desc => q.order_by(QBook::RATING_SORTED.desc()),
        O::Rating(_) => q.order_by(QBook::RATING_SORTED.asc()),
    }
}

/// Whether a query of these filters and order names where to start.
fn has_source(filters: &[F], order: O) -> bool {
    !matches!(order, O::Key)
        || filters.iter().any(|f| match f {
            F::None(..) => false,
            F::All(_, t) => !t.is_empty(),
            _ => true,
        })
}

/// The reference: the ids of the objects that pass every filter, in the
/// query's order, computed from the objects and the recent list.
fn reference(books: &[QBook], recent: &[u32], filters: &[F], order: O) -> Vec<u32> {
    let pass = |b: &QBook| {
        filters.iter().all(|f| match f {
            F::Isbn(v) => v.is_some() && b.isbn == *v,
            F::Year(a, z, open) => b.year >= *a && (if *open { b.year < *z } else { b.year <= *z }),
            F::Rating(a, z) => b.rating.is_some_and(|r| r >= *a && r <= *z),
            F::Has(l, t) => tags_of(b, *l).contains(t),
            F::All(l, t) => t.iter().all(|t| tags_of(b, *l).contains(t)),
            F::Any(l, t) => t.iter().any(|t| tags_of(b, *l).contains(t)),
            F::None(l, t) => !t.iter().any(|t| tags_of(b, *l).contains(t)),
            F::Recent => recent.contains(&b.id),
        })
    };
    let key = |b: &QBook| format!("qbook:{}", b.id);
    let mut hits: Vec<(f64, String, u32)> = books
        .iter()
        .filter(|b| pass(b))
        .filter_map(|b| {
            let score = match order {
                O::Key => Some(0.0),
                O::Year(_) => Some(f64::from(b.year)),
                O::Rating(_) => b.rating.map(f64::from),
            }?;
            Some((score, key(b), b.id))
        })
        .collect();
    hits.sort_by(|x, y| x.0.total_cmp(&y.0).then_with(|| x.1.cmp(&y.1)));
    if matches!(order, O::Year(true) | O::Rating(true)) {
        hits.reverse();
    }
    hits.into_iter().map(|h| h.2).collect()
}

/// Writes `books` in order (later ones replace earlier ones of the same
/// id, some are deleted) and returns the live objects and the recent
/// list as the model keeps them.
async fn write(db: &Db, books: &[QBook], deletes: &[u32]) -> Result<(Vec<QBook>, Vec<u32>), Error> {
    let mut live: Vec<QBook> = Vec::new();
    let mut recent: Vec<u32> = Vec::new();
    for book in books {
        // A unique value another book holds: that book gives it up first.
        if let Some(isbn) = &book.isbn {
            if let Some(other) = live
                .iter_mut()
                .find(|b| b.id != book.id && b.isbn.as_ref() == Some(isbn))
            {
                other.isbn = None;
                QBook::at(other.id).set(db, QBook::ISBN, None).await?;
            }
        }
        book.insert(db).await?;
        live.retain(|b| b.id != book.id);
        live.push(book.clone());
        recent.retain(|id| *id != book.id);
        if book.touched.is_some() {
            recent.insert(0, book.id);
            recent.truncate(5);
        }
    }
    for id in deletes {
        QBook::delete(db, *id).await?;
        live.retain(|b| b.id != *id);
        recent.retain(|r| r != id);
    }
    Ok((live, recent))
}

fn ids(books: &[QBook]) -> Vec<u32> {
    books.iter().map(|b| b.id).collect()
}

backend_tests! {
    /// Random objects and random queries: every query's results, in
    /// order, equal the reference; so do its count, its handles and its
    /// pages, whatever the page size.
    exclusive async fn results_equal_a_reference_computed_from_the_objects(ctx) {
        let mut runner = TestRunner::deterministic();
        let cases = (
            prop::collection::vec(book_strategy(), 20..45),
            prop::collection::vec(0u32..40, 0..4),
            prop::collection::vec(
                (prop::collection::vec(filter_strategy(), 0..3), order_strategy(), 1usize..7),
                8,
            ),
        );
        for db in ctx.layouts() {
            for _ in 0..8 {
                let (books, deletes, queries) = cases.new_tree(&mut runner).expect("a case").current();
                flush(&ctx).await?;
                let (live, recent) = write(&db, &books, &deletes).await?;
                for (filters, order, limit) in &queries {
                    let query = build(filters, *order).limit(*limit);
                    let why = format!("{filters:?} {order:?} limit {limit} in {:?}", db.key_layout());
                    if !has_source(filters, *order) {
                        assert!(matches!(query.count(&db).await, Err(Error::Query { .. })), "{why}");
                        continue;
                    }
                    let want = reference(&live, &recent, filters, *order);
                    assert_eq!(ids(&query.load(&db).await?), want, "{why}");
                    assert_eq!(query.count(&db).await?, want.len() as u64, "{why}");
                    let keys: Vec<u32> = query.keys(&db).await?.iter().map(|r| *r.pk()).collect();
                    assert_eq!(keys, want, "{why}");
                    let mut paged = Vec::new();
                    let mut cursor: Option<Cursor> = None;
                    loop {
                        let page = query.page(&db, cursor.as_ref()).await?;
                        assert!(page.items.len() <= *limit, "{why}");
                        paged.extend(ids(&page.items));
                        match page.next {
                            Some(next) => cursor = Some(next.to_string().parse()?),
                            None => break,
                        }
                    }
                    assert_eq!(paged, want, "pages of {why}");
                }
                for id in 0..40 {
                    QBook::delete(&db, id).await?;
                }
            }
        }
        Ok::<(), Error>(())
    }

    /// The worked example: books tagged rust and async, published 2020 to
    /// 2024, newest first, two at a time; a page is at most two round
    /// trips on the memory engine and on one server.
    exclusive async fn a_tag_and_range_query_pages_newest_first(ctx) {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            let db = &db;
            for (id, year, tags) in [
                (1, 2019, &["rust", "async"][..]),
                (2, 2020, &["rust", "async"]),
                (3, 2021, &["rust"]),
                (4, 2022, &["rust", "async", "web"]),
                (5, 2024, &["async", "rust"]),
                (6, 2025, &["rust", "async"]),
                (7, 2023, &["rust", "async"]),
            ] {
                QBook {
                    id,
                    isbn: None,
                    year,
                    rating: None,
                    tags: tags.iter().map(|t| t.to_string()).collect(),
                    langs: BTreeSet::new(),
                    touched: None,
                }
                .insert(db)
                .await?;
            }
            let query = QBook::query()
                .filter(QBook::TAGS_TAGS.has_all(["rust", "async"]))
                .filter(QBook::YEAR_SORTED.within(2020..=2024))
                .order_by(QBook::YEAR_SORTED.desc())
                .limit(2);
            let mut seen = Vec::new();
            let mut cursor = None;
            loop {
                let before = db.round_trips();
                let page = query.page(db, cursor.as_ref()).await?;
                if db.key_layout() == KeyLayout::Plain {
                    assert!(db.round_trips() - before <= 2, "{} round trips", db.round_trips() - before);
                }
                seen.extend(ids(&page.items));
                match page.next {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            assert_eq!(seen, [5, 7, 4, 2]);
            assert_eq!(query.count(db).await?, 4);
            for id in 1..=7 {
                QBook::delete(db, id).await?;
            }
        }
        Ok::<(), Error>(())
    }

    /// A page starts just past its cursor's item in the query's order,
    /// among items of equal score too, whether that item is still there,
    /// gone, or moved to another score.
    exclusive async fn a_page_resumes_past_its_cursor_item_gone_or_moved(ctx) {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            let db = &db;
            let book = |id: u32, year: u16| QBook {
                id,
                isbn: None,
                year,
                rating: None,
                tags: vec!["rust".to_string()],
                langs: BTreeSet::new(),
                touched: None,
            };
            for id in 1..=9 {
                book(id, if id > 6 { 2021 } else { 2020 }).insert(db).await?;
            }
            let query = QBook::query()
                .filter(QBook::TAGS_TAGS.has("rust"))
                .order_by(QBook::YEAR_SORTED.desc())
                .limit(2);
            let mut pages = Vec::new();
            let mut cursor = None;
            loop {
                let page = query.page(db, cursor.as_ref()).await?;
                let items = ids(&page.items);
                // The cursor's item goes (page 1) or moves ahead of the
                // cursor (page 2) before the next page is asked for.
                match pages.len() {
                    0 => {
                        QBook::delete(db, items[1]).await?;
                    }
                    1 => {
                        book(items[1], 2025).insert(db).await?;
                    }
                    _ => {}
                }
                pages.push(items);
                match page.next {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            assert_eq!(pages, [vec![9, 8], vec![7, 6], vec![5, 4], vec![3, 2], vec![1]]);
            for id in 1..=9 {
                QBook::delete(db, id).await?;
            }
        }
        Ok::<(), Error>(())
    }

    /// A reader pages through a query 20 at a time while 8 tasks insert,
    /// update and delete: every object in the result from start to finish
    /// is seen exactly once, and no object deleted before a page was asked
    /// for is in it.
    exclusive async fn pages_hold_while_eight_writers_write(ctx) {
        for db in ctx.layouts() {
            flush(&ctx).await?;
            let book = |id: u32, year: u16, tags: &[&str]| QBook {
                id,
                isbn: None,
                year,
                rating: Some(id as i32),
                tags: tags.iter().map(|t| t.to_string()).collect(),
                langs: BTreeSet::new(),
                touched: None,
            };
            // Stable: ids 0..120, in the result throughout. Doomed: 1000..1080.
            for id in 0..120 {
                book(id, 2000 + (id % 20) as u16, &["q"]).insert(&db).await?;
            }
            for id in 1000..1080 {
                book(id, 2000 + (id % 20) as u16, &["q"]).insert(&db).await?;
            }
            let deleted: Arc<Mutex<HashSet<u32>>> = Arc::default();
            let stop = Arc::new(AtomicBool::new(false));
            let mut writers = Vec::new();
            for w in 0..8u32 {
                let (db, deleted, stop) = (db.clone(), deleted.clone(), stop.clone());
                writers.push(tokio::spawn(async move {
                    let mut n = 0u32;
                    while !stop.load(Ordering::Relaxed) {
                        let doomed = 1000 + w * 10 + n % 10;
                        if n < 10 && QBook::delete(&db, doomed).await? {
                            deleted.lock().expect("not poisoned").insert(doomed);
                        }
                        let churn = 2000 + w * 100 + n % 50;
                        book(churn, 2000 + (n % 20) as u16, &["q"]).insert(&db).await?;
                        if n.is_multiple_of(3) {
                            QBook::delete(&db, churn).await?;
                        }
                        // A stable book's other field, which keeps it in the result.
                        let stable = (w * 13 + n) % 120;
                        QBook::at(stable).set(&db, QBook::LANGS, BTreeSet::from(["en".to_string()])).await?;
                        n += 1;
                        tokio::task::yield_now().await;
                    }
                    Ok::<(), Error>(())
                }));
            }
            let query = QBook::query()
                .filter(QBook::TAGS_TAGS.has("q"))
                .order_by(QBook::YEAR_SORTED.asc())
                .limit(20);
            let mut seen: Vec<u32> = Vec::new();
            let mut cursor = None;
            loop {
                let gone: HashSet<u32> = deleted.lock().expect("not poisoned").clone();
                let page = query.page(&db, cursor.as_ref()).await?;
                for b in &page.items {
                    assert!(!gone.contains(&b.id), "{} was deleted before its page", b.id);
                }
                seen.extend(ids(&page.items));
                tokio::task::yield_now().await;
                match page.next {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            stop.store(true, Ordering::Relaxed);
            for w in writers {
                w.await.expect("a writer")?;
            }
            for id in 0..120 {
                assert_eq!(seen.iter().filter(|s| **s == id).count(), 1, "book {id}");
            }
        }
        Ok::<(), Error>(())
    }

    /// The streams of a model's objects, a relation's members and a
    /// query's results hold every item once.
    exclusive async fn streams_hold_every_item_once(ctx) {
        let db = &ctx.db;
        for id in 0..250 {
            QBook {
                id,
                isbn: None,
                year: 2000 + (id % 7) as u16,
                rating: None,
                tags: vec!["s".to_string()],
                langs: BTreeSet::new(),
                touched: None,
            }
            .insert(db)
            .await?;
        }
        let all: Vec<QBook> = QBook::stream(db).try_collect().await?;
        let unique: BTreeSet<u32> = all.iter().map(|b| b.id).collect();
        assert_eq!(unique.len(), 250);
        let query = QBook::query().filter(QBook::TAGS_TAGS.has("s")).order_by(QBook::YEAR_SORTED.desc()).limit(33);
        let streamed: Vec<u32> = query.stream(db).map_ok(|b| b.id).try_collect().await?;
        assert_eq!(streamed, ids(&query.clone().limit(MAX_PAGE).page(db, None).await?.items));
        assert_eq!(streamed.len(), 250);
        let list = MemberList::<QBook>::at(ctx.key("list"));
        list.append(db, (0..40).map(QBook::at)).await?;
        QBook::delete(db, 7).await?;
        let members: Vec<u32> = list.stream(db, 6).map_ok(|b| b.id).try_collect().await?;
        assert_eq!(members, (0..40).filter(|i| *i != 7).collect::<Vec<_>>());
        Ok::<(), Error>(())
    }

    /// Bad input is a clear typed error, and reads nothing: a page limit
    /// of zero or over the cap, a cursor of another query or no cursor
    /// at all, a query with nothing to start from, a score past 2^53.
    exclusive async fn bad_input_is_a_clear_error(ctx) {
        let db = &ctx.db;
        let tagged = QBook::query().filter(QBook::TAGS_TAGS.has("x"));
        let before = db.round_trips();
        for limit in [0, MAX_PAGE + 1] {
            let err = tagged.clone().limit(limit).page(db, None).await.unwrap_err();
            assert!(matches!(&err, Error::Query { reason } if reason.contains("1 to 1000")), "{err}");
        }
        let err = QBook::query().count(db).await.unwrap_err();
        assert!(matches!(&err, Error::Query { reason } if reason.contains("needs a filter")), "{err}");
        let err = QBook::query()
            .filter(QBook::TAGS_TAGS.has_none(["x"]))
            .load(db)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Query { .. }), "{err}");
        let err = QBook::query()
            .filter(QBook::YEAR_SORTED.within(0..=u64::MAX))
            .count(db)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::ScoreOverflow { .. }), "{err}");
        assert!(matches!("not a cursor".parse::<Cursor>(), Err(Error::Query { .. })));
        assert_eq!(db.round_trips(), before, "nothing was read");

        for id in 0..3 {
            QBook { id, isbn: None, year: 2000, rating: None, tags: vec!["x".into()], langs: BTreeSet::new(), touched: None }
                .insert(db)
                .await?;
        }
        let page = tagged.clone().limit(1).page(db, None).await?;
        let cursor = page.next.expect("a second page");
        let other = QBook::query().filter(QBook::TAGS_TAGS.has("y")).limit(1);
        let err = other.page(db, Some(&cursor)).await.unwrap_err();
        assert!(matches!(&err, Error::Query { reason } if reason.contains("another query")), "{err}");
        Ok::<(), Error>(())
    }
}
