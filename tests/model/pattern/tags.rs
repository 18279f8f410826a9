//! Tags (seed 001): one set per tag value, kept in step with the objects'
//! writes; intersection, union and difference queries that return the
//! objects; tag counts; no entry left by updates, deletes or gone objects.

use std::collections::BTreeSet;

use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

/// `book:1` = {name, author, tags: ["ruby"]}; `book:_tag:tags:ruby` =
/// {book:1, book:2}.
#[derive(Admin, Debug, Clone, PartialEq)]
struct Book {
    #[redmodel(pk)]
    id: u32,
    name: String,
    author: String,
    #[redmodel(tags)]
    tags: Vec<String>,
    #[redmodel(tags, rename = "years")]
    editions: Option<BTreeSet<u16>>,
}

fn book(id: u32, name: &str, tags: &[&str]) -> Book {
    Book {
        id,
        name: name.into(),
        author: String::new(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        editions: None,
    }
}

/// The seed's three books.
async fn seed(db: &Db) -> Result<(), Error> {
    book(1, "The Ruby Programming Language", &["ruby"])
        .insert(db)
        .await?;
    book(2, "Ruby on rail", &["ruby", "web"]).insert(db).await?;
    book(3, "Programming Erlang", &["erlang"])
        .insert(db)
        .await?;
    Ok(())
}

fn names(books: &[Book]) -> Vec<&str> {
    books.iter().map(|b| b.name.as_str()).collect()
}

/// The raw set at the model key `key` (plain form), as `db` stores it.
async fn members(db: &Db, key: &str) -> BTreeSet<String> {
    let key = db.key_layout().stored(key);
    db.query(redis::cmd("SMEMBERS").arg(&*key)).await.unwrap()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

backend_tests! {
    /// A tag change of an object this `Db` wrote is one round trip: the
    /// old tags are guessed from what the `Db` saw, and checked by the
    /// write's script (`tests/model/pattern/unique.rs` has the stale case).
    exclusive async fn a_tag_change_is_one_round_trip(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        let before = db.round_trips();
        Book::at(2).set(db, Book::TAGS, vec!["rails".to_string()]).await?;
        if db.key_layout() == redmodel::KeyLayout::Plain {
            assert_eq!(db.round_trips() - before, 1);
        }
        assert_eq!(members(db, "book:_tag:tags:ruby").await, set(&["book:1"]));
        assert_eq!(members(db, "book:_tag:tags:rails").await, set(&["book:2"]));
        Ok::<(), Error>(())
    }

    /// The seed's `sinter`, `sdiff` and `sunion`, returning the books.
    exclusive async fn and_or_and_not(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        let by_tag = Book::TAGS_TAGS;
        assert_eq!(by_tag.key("ruby")?, "book:_tag:tags:ruby");
        assert_eq!(members(db, "book:_tag:tags:ruby").await, set(&["book:1", "book:2"]));
        let stored: String = db.query(redis::cmd("HGET").arg("book:2").arg("tags")).await?;
        assert_eq!(stored, r#"["ruby","web"]"#);

        assert_eq!(names(&by_tag.intersection(db, ["ruby", "web"]).await?), ["Ruby on rail"]);
        assert_eq!(names(&by_tag.difference(db, "ruby", ["web"]).await?), ["The Ruby Programming Language"]);
        assert_eq!(
            names(&by_tag.union(db, ["ruby", "web"]).await?),
            ["The Ruby Programming Language", "Ruby on rail"]
        );
        assert_eq!(names(&by_tag.with(db, "erlang").await?), ["Programming Erlang"]);
        assert!(by_tag.with(db, "cobol").await?.is_empty());
        assert!(by_tag.intersection(db, Vec::<String>::new()).await?.is_empty());
        assert_eq!(by_tag.count(db, "ruby").await?, 2);
        assert_eq!(
            by_tag.counts(db).await?,
            [("erlang".to_string(), 1), ("ruby".to_string(), 2), ("web".to_string(), 1)]
        );
        Ok::<(), Error>(())
    }

    /// Tags of another scalar type, in a renamed Option field.
    exclusive async fn typed_tags(ctx) {
        let db = &ctx.db;
        let mut b = book(1, "K&R", &["c"]);
        b.editions = Some(BTreeSet::from([1978, 1988]));
        b.insert(db).await?;
        assert_eq!(members(db, "book:_tag:years:1988").await, set(&["book:1"]));
        assert_eq!(names(&Book::EDITIONS_TAGS.with(db, 1978).await?), ["K&R"]);
        assert_eq!(Book::EDITIONS_TAGS.counts(db).await?, [(1978, 1), (1988, 1)]);
        Book::at(1).set(db, Book::EDITIONS, None).await?;
        assert!(Book::EDITIONS_TAGS.counts(db).await?.is_empty());
        Ok::<(), Error>(())
    }

    /// Changing the tags leaves the old sets and joins the new ones in the
    /// same step; deleting the book leaves no set behind.
    exclusive async fn updates_and_deletes(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        Book::at(2).set(db, Book::TAGS, vec!["rails".to_string(), "web".to_string()]).await?;
        assert_eq!(members(db, "book:_tag:tags:ruby").await, set(&["book:1"]));
        assert_eq!(members(db, "book:_tag:tags:rails").await, set(&["book:2"]));
        assert_eq!(members(db, "book:_tag:tags:web").await, set(&["book:2"]));
        book(1, "The Ruby Programming Language", &["ruby", "reference"]).insert(db).await?;
        assert_eq!(members(db, "book:_tag:tags:reference").await, set(&["book:1"]));

        for id in 1..=3 {
            assert!(Book::delete(db, id).await?);
        }
        let keys: Vec<String> = db.query(redis::cmd("KEYS").arg("*")).await?;
        assert!(keys.is_empty(), "left behind: {keys:?}");
        Ok::<(), Error>(())
    }

    /// A gone book, or one whose tags were changed outside the library, is
    /// not returned by any query, and its entries are pruned.
    exclusive async fn stale_entries_are_skipped_and_pruned(ctx) {
        let db = &ctx.db;
        seed(db).await?;
        db.query::<()>(redis::cmd("DEL").arg("book:1")).await?;
        db.query::<()>(redis::cmd("HSET").arg("book:2").arg("tags").arg(r#"["web"]"#)).await?;
        assert!(Book::TAGS_TAGS.with(db, "ruby").await?.is_empty());
        assert!(members(db, "book:_tag:tags:ruby").await.is_empty(), "pruned");
        assert_eq!(names(&Book::TAGS_TAGS.with(db, "web").await?), ["Ruby on rail"]);

        db.query::<()>(redis::cmd("DEL").arg("book:3")).await?;
        assert_eq!(Book::TAGS_TAGS.counts(db).await?, [("web".to_string(), 1)]);
        book(4, "x", &["go"]).insert(db).await?;
        db.query::<()>(redis::cmd("DEL").arg("book:4")).await?;
        assert_eq!(Book::TAGS_TAGS.prune(db).await?, 1);
        let keys: Vec<String> = db.query(redis::cmd("KEYS").arg("*book:_tag:*")).await?;
        assert_eq!(keys, [ctx.stored("book:_tag:tags:web")]);
        Ok::<(), Error>(())
    }
}
