//! The consistency check and repair (`redmodel::model::check`) on every
//! backend, in the db's own key layout and in the cluster layout: a
//! database broken in each way the check knows, found kind by kind,
//! repaired, and checked again; sound data is left as it was.

use std::ops::ControlFlow;

use redmodel::model::check::{check, check_from, repair, Kind};
use redmodel::prelude::*;
use redmodel_suite::backend_tests;

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "chkshelf")]
struct Shelf {
    #[redmodel(pk)]
    id: u32,
}

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "chkbook")]
struct Book {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    isbn: String,
    #[redmodel(sorted)]
    pages: i64,
    #[redmodel(tags)]
    genres: Vec<String>,
    shelf: Option<Ref<Shelf>>,
}

#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(table = "chknote", owner = Book)]
struct Note {
    #[redmodel(pk)]
    id: u32,
    text: String,
}

#[derive(Relation)]
#[redmodel(table = "chkbook", owner = Shelf, member = Book, inverse = BookShelves)]
struct ShelfBooks;

#[derive(Relation)]
#[redmodel(table = "chkshelf", owner = Book, member = Shelf, inverse = ShelfBooks)]
struct BookShelves;

fn book(id: u32, pages: i64) -> Book {
    Book {
        id,
        isbn: format!("isbn-{id}"),
        pages,
        genres: vec!["sf".into()],
        shelf: Some(Shelf::at(1)),
    }
}

/// Runs a raw command on `plain` keys written as `db` stores them.
async fn raw(db: &Db, args: &[&str]) -> redmodel::Result<()> {
    let layout = db.key_layout();
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        if arg.starts_with("chk") {
            cmd.arg(layout.stored(arg).as_ref());
        } else {
            cmd.arg(*arg);
        }
    }
    db.query::<redis::Value>(&cmd).await.map(drop)
}

/// Sound data: two shelves, two books on shelf 1 (linked both ways), a
/// note under book 1.
async fn sound(db: &Db) -> redmodel::Result<()> {
    db.query::<()>(&redis::cmd("FLUSHALL")).await?;
    Shelf { id: 1 }.insert(db).await?;
    Shelf { id: 2 }.insert(db).await?;
    book(1, 100).insert(db).await?;
    book(2, 200).insert(db).await?;
    Book::at(1)
        .insert_sub(
            db,
            &Note {
                id: 1,
                text: "first".into(),
            },
        )
        .await?;
    let shelf = Shelf::at(1).relation::<ShelfBooks>();
    shelf.link(db, Book::at(1)).await?;
    shelf.link(db, Book::at(2)).await?;
    Ok(())
}

backend_tests! {
    /// Data written through the API checks clean.
    exclusive async fn sound_data_checks_clean(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            sound(&db).await?;
            let mut calls = 0;
            let report = check(&db, |_| calls += 1).await?;
            assert!(report.is_clean(), "{:?} layout: {report}: {:?}", db.key_layout(), report.examples);
            assert!(report.scanned >= 7, "{report}");
            assert!(calls > 0, "progress reported");
        }
        Ok(())
    }

    /// Each kind of breakage is found once, repaired by its rule, and the
    /// second check finds only what is not repaired (an undecodable
    /// object); the sound objects are as they were.
    exclusive async fn every_kind_is_found_and_repaired(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            sound(&db).await?;
            // A field write that re-created a deleted object.
            raw(&db, &["HSET", "chkbook:9", "genres", "[\"x\"]"]).await?;
            // A counted object missing required fields: needs a hand.
            raw(&db, &["HSET", "chkbook:8", "genres", "[]", "_count", "1"]).await?;
            // A note whose book is gone.
            raw(&db, &["HSET", "chkbook:77:chknote:1", "text", "lost"]).await?;
            // A reference to a shelf that does not exist.
            raw(&db, &["HSET", "chkbook:2", "shelf", "chkshelf:404"]).await?;
            // A list of a shelf that does not exist.
            raw(&db, &["RPUSH", "chkshelf:55:chkbook", "chkbook:1"]).await?;
            // A dead member, and a member without its inverse side.
            raw(&db, &["RPUSH", "chkshelf:1:chkbook", "chkbook:404"]).await?;
            raw(&db, &["RPUSH", "chkshelf:2:chkbook", "chkbook:2"]).await?;
            // Book 1 out of the leaderboard; a score naming no book.
            raw(&db, &["ZREM", "chkbook:_sorted:pages", "chkbook:1"]).await?;
            raw(&db, &["ZADD", "chkbook:_sorted:pages", "5", "chkbook:405"]).await?;

            let report = check(&db, |_| ()).await?;
            let layout = db.key_layout();
            for kind in [
                Kind::PartialObject,
                Kind::Undecodable,
                Kind::OrphanedSubObject,
                Kind::DanglingReference,
                Kind::OrphanedList,
                Kind::DeadMember,
                Kind::OneSidedLink,
                Kind::MissingIndexEntry,
                Kind::StaleIndexEntry,
            ] {
                assert_eq!(report.count(kind), 1, "{layout:?} layout, {kind}: {report}: {:#?}", report.examples);
            }

            let fixed = repair(&db, |_| ()).await?;
            assert_eq!(fixed.before, report, "the repair worked from the same findings");
            assert_eq!(fixed.repaired.get(&Kind::Undecodable), None);
            assert_eq!(fixed.after.count(Kind::Undecodable), 1, "{}", fixed.after);
            assert_eq!(fixed.after.counts.values().sum::<u64>(), 1, "{layout:?}: {}: {:#?}", fixed.after, fixed.after.examples);

            // What each rule did, and what it left alone.
            assert!(!Book::at(9).exists(&db).await?, "partial object deleted");
            assert!(Book::at(8).exists(&db).await?, "undecodable object kept");
            assert!(!Book::at(77).sub::<Note>(1).exists(&db).await?, "orphan deleted");
            assert_eq!(Book::at(2).get(&db, Book::SHELF).await?, None, "dangling reference cleared");
            let orphan_list = Shelf::at(55).relation::<ShelfBooks>();
            assert_eq!(orphan_list.count(&db).await?, 0, "orphaned list deleted");
            assert_eq!(Shelf::at(1).relation::<ShelfBooks>().members(&db).await?, vec![Book::at(1), Book::at(2)]);
            assert_eq!(
                Book::at(2).relation::<BookShelves>().members(&db).await?,
                vec![Shelf::at(1), Shelf::at(2)],
                "the missing side added"
            );
            assert_eq!(Book::PAGES_SORTED.score(&db, Book::at(1)).await?, Some(100.0));
            assert_eq!(Book::PAGES_SORTED.len(&db).await?, 2);
            assert_eq!(Book::at(1).load(&db).await?, Some(book(1, 100)));
            assert_eq!(Book::at(1).sub::<Note>(1).get(&db, Note::TEXT).await?.as_deref(), Some("first"));
        }
        Ok(())
    }

    /// A pass stopped by its callback after one batch says where it
    /// stopped; resumed there, the two parts find what one pass finds.
    exclusive async fn a_stopped_check_resumes_where_it_stopped(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            sound(&db).await?;
            raw(&db, &["HSET", "chkbook:77:chknote:1", "text", "lost"]).await?;
            raw(&db, &["RPUSH", "chkshelf:1:chkbook", "chkbook:404"]).await?;
            raw(&db, &["ZADD", "chkbook:_sorted:pages", "5", "chkbook:405"]).await?;
            let whole = check(&db, |_| ()).await?;
            assert_eq!(whole.counts.values().sum::<u64>(), 3, "{whole}");
            assert_eq!(whole.resume, None);

            let mut stops = 0;
            let mut report = check(&db, |_| ControlFlow::Break(())).await?;
            let mut total = report.counts.clone();
            let mut last = 0;
            while let Some(resume) = report.resume {
                stops += 1;
                // One stop per batch: a few per declaration (one per
                // master on a cluster), and never backwards.
                assert!(stops < 5_000, "the pass does not move on");
                assert!(resume.declaration >= last, "{resume:?} after declaration {last}");
                last = resume.declaration;
                report = check_from(&db, resume, |_| ControlFlow::Break(())).await?;
                for (kind, n) in &report.counts {
                    *total.entry(*kind).or_insert(0) += n;
                }
            }
            assert!(stops >= 3, "one stop per declaration at least: {stops}");
            assert_eq!(total, whole.counts, "{:?} layout", db.key_layout());
        }
        Ok(())
    }
}
