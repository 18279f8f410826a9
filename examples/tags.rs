//! Seed 001's tag system: books and their tags, one Redis set per tag
//! (the seed's `sadd tag:ruby 1`), kept by the library in step with each
//! book's own write, and the seed's three queries answered with one set
//! operation each, returning the books:
//!
//! - ruby and web: `SINTER`;
//! - ruby but not web: `SDIFF`;
//! - ruby or web: `SUNION`.
//!
//! Runs on the Redis at `REDIS_URL` if set, else on the bundled memory
//! engine: `cargo run --example tags`. It first deletes the books it
//! writes.

use redmodel::prelude::*;
use redmodel::Error;

#[path = "common/mod.rs"]
mod common;

/// `book:1` = {name, author, tags: ["ruby"]}, and `book:1` in the set
/// `book:_tag:tags:ruby`.
#[derive(Admin, Debug, Clone, PartialEq)]
pub struct Book {
    #[redmodel(pk)]
    pub id: u32,
    pub name: String,
    pub author: String,
    #[redmodel(tags)]
    pub tags: Vec<String>,
}

/// The seed's books and tags.
const BOOKS: [(u32, &str, &str, &[&str]); 3] = [
    (
        1,
        "The Ruby Programming Language",
        "Mark Pilgrim",
        &["ruby"],
    ),
    (2, "Ruby on rail", "David Flanagan", &["ruby", "web"]),
    (3, "Programming Erlang", "Joe Armstrong", &["erlang"]),
];

#[tokio::main]
async fn main() -> Result<(), Error> {
    let db = Db::from_env().await?;
    println!("backend: {}", db.backend_name());
    reset(&db).await?;
    run(&db).await?;
    common::print_keys(&db, &["book:*"]).await?;
    Ok(())
}

/// Deletes the demo's books, and with them their tag entries.
pub async fn reset(db: &Db) -> Result<(), Error> {
    for (id, ..) in BOOKS {
        Book::delete(db, id).await?;
    }
    Ok(())
}

/// The titles each query returned, for the tests.
#[derive(Debug, PartialEq)]
pub struct Shown {
    pub ruby_and_web: Vec<String>,
    pub ruby_not_web: Vec<String>,
    pub ruby_or_web: Vec<String>,
    /// (tag, number of books)
    pub counts: Vec<(String, u64)>,
}

fn titles(books: Vec<Book>) -> Vec<String> {
    books.into_iter().map(|b| b.name).collect()
}

pub async fn run(db: &Db) -> Result<Shown, Error> {
    for (id, name, author, tags) in BOOKS {
        Book {
            id,
            name: name.into(),
            author: author.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
        .insert(db)
        .await?;
        println!("book:{id} {name:?} tagged {}", tags.join(", "));
    }

    let by_tag = Book::TAGS_TAGS;
    let shown = Shown {
        ruby_and_web: titles(by_tag.intersection(db, ["ruby", "web"]).await?),
        ruby_not_web: titles(by_tag.difference(db, "ruby", ["web"]).await?),
        ruby_or_web: titles(by_tag.union(db, ["ruby", "web"]).await?),
        counts: by_tag.counts(db).await?,
    };
    println!(
        "\nruby and web (SINTER):     {}",
        shown.ruby_and_web.join("; ")
    );
    println!(
        "ruby but not web (SDIFF):  {}",
        shown.ruby_not_web.join("; ")
    );
    println!(
        "ruby or web (SUNION):      {}",
        shown.ruby_or_web.join("; ")
    );
    let counts: Vec<String> = shown
        .counts
        .iter()
        .map(|(tag, n)| format!("{tag} {n}"))
        .collect();
    println!("books per tag:             {}", counts.join(", "));
    Ok(shown)
}
