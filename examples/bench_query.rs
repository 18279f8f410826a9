//! A query page through the model against the hand-written redis-rs code
//! that finds the same page, in one run.
//!
//! ```text
//! cargo run --release --example bench_query
//! cargo run --release --example bench_query -- --reps 5 --millis 2000 --objects 100000
//! cargo run --example bench_query -- --reps 1 --millis 20 --objects 2000   # smoke run
//! ```
//!
//! The data: `--objects` books (100,000 by default), each published in a
//! year from 1990 to 2024 (a sorted index) and tagged with two of six
//! tags (a tag index). The page: the first 20 books tagged both `rust`
//! and `async`, published 2015 to 2020, newest first.
//!
//! - **model**: `Book::query().filter(TAGS.has_all(..)).filter(YEAR.within(..))
//!   .order_by(YEAR.desc()).limit(20).page(&db, None)`: the walk of the
//!   index entries (one script on a server, natively in process), then
//!   one batch of reads.
//! - **hand-written**: one script that walks the sorted set from the top
//!   of the range, 100 members at a time, keeps those in both tag sets,
//!   stops at 20; then a pipeline of HMGETs, decoded by hand.
//!
//! On each backend, the engine in process and a private redis-server,
//! the two take turns run by run; each figure is the median of the runs,
//! in pages per second, with the model's round trips per page.
//!
//! Then bulk writes: a batch of 10,000 books (or `--objects`, if fewer),
//! each with its sorted year and two tags, written again and again (an
//! upsert of the same objects):
//!
//! - **model**: `Book::insert_many(&db, &books)`: each book's own write
//!   (its hash, `_count`, its score, its tag sets, as one checked unit),
//!   the writes run at once on the shared connection;
//! - **hand-written**: one redis-rs pipeline of the same writes per book,
//!   `HSET` of the fields, `HINCRBY _count`, `ZADD`, `SADD` per tag, with
//!   no check of the old tags;
//! - **same guarantee** (redis-server only): hand-written redis-rs code that
//!   keeps what the model keeps, as the model runs it: per 128 books, on one
//!   of 4 connections, WATCH them and read their old tags and the index
//!   keys' types, then one MULTI/EXEC of their writes with the `SREM` of
//!   the tags each loses, the index writes batched (one `ZADD` of every
//!   book's year, one `SADD` per tag); again if a watched book changed.
//!   Its column `model / same` is the model layer's own cost.
//!
//! The sides take turns batch by batch for `--millis` each per run, so
//! that each run's ratios compare them over the same stretch of time;
//! the ratios are the medians of the runs' ratios. Figures in objects
//! per second, with the model's requests per batch
//! (`Db::round_trips`: each write's request counts one, however many
//! travel together), for new objects and for the same objects again.
//!
//! Then a streamed pass: ten times `--objects` books (1,000,000 by
//! default), written by the hand-written pipeline, read back whole through
//! `Book::stream` (a SCAN and a batch of reads a page), with this
//! process's resident set (VmRSS) sampled every 10,000 objects: its growth
//! over the pass stays that of one page, where `Book::load_all` of the same
//! objects grows with them (measured after the stream, for contrast).
//!
//! `--only page` (or `bulk`, `stream`) runs one case; `--on e` (the
//! engine) or `s` (redis-server) one backend; `BENCH_SIDE=model` (or
//! `hand`, `same`) times that side alone: as when profiling one.

use std::process::ExitCode;

use futures_util::StreamExt as _;
use redmodel::prelude::*;
use redmodel_examples::bench::{
    fmt_rate, fmt_ratio, interleaved, median, ops_per_sec, rss_bytes, runtime, Options, Side,
};
use redmodel_suite::RedisServer;

const USAGE: &str =
    "usage: bench_query [--reps N] [--millis MS] [--objects N] [--only page|bulk|stream] [--on e|s|es]";

/// The largest batch of the bulk write case.
const BATCH: u32 = 10_000;

const TAGS: [&str; 6] = ["rust", "async", "web", "db", "cli", "gui"];

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "bbook")]
struct Book {
    #[redmodel(pk)]
    id: u32,
    title: String,
    #[redmodel(sorted)]
    year: u16,
    #[redmodel(tags)]
    tags: Vec<String>,
}

/// The hand-written walk: the sorted set from the top of the range, 100
/// at a time, members in both tag sets, up to `ARGV[3]`.
const HAND_WALK: &str = r"
local want, out, offset = tonumber(ARGV[3]), {}, 0
while #out < want do
  local r = redis.call('ZRANGE', KEYS[1], ARGV[2], ARGV[1], 'BYSCORE', 'REV', 'LIMIT', offset, 100)
  if #r == 0 then break end
  for _, m in ipairs(r) do
    if redis.call('SISMEMBER', KEYS[2], m) == 1 and redis.call('SISMEMBER', KEYS[3], m) == 1 then
      out[#out + 1] = m
      if #out == want then break end
    end
  end
  offset = offset + 100
end
return out
";

/// Book `id` of the fixture: a year from 1990 to 2024, two of the tags.
fn book(id: u32) -> Book {
    let (a, b) = (id as usize % 6, (id as usize / 6 + 1) % 6);
    let b = if a == b { (b + 1) % 6 } else { b };
    Book {
        id,
        title: format!("book {id}"),
        year: 1990 + (id % 35) as u16,
        tags: vec![TAGS[a].to_string(), TAGS[b].to_string()],
    }
}

/// Writes the books, 64 at a time.
async fn fixture(db: &Db, objects: u32) -> redmodel::Result<()> {
    db.query::<()>(&redis::cmd("FLUSHALL")).await?;
    let mut id = 0;
    while id < objects {
        let batch: Vec<_> = (id..objects.min(id + 64))
            .map(|id| {
                let db = db.clone();
                tokio::spawn(async move { book(id).insert(&db).await })
            })
            .collect();
        for task in batch {
            task.await.expect("an insert task")?;
        }
        id += 64;
    }
    Ok(())
}

fn query() -> Query<Book> {
    Book::query()
        .filter(Book::TAGS_TAGS.has_all(["rust", "async"]))
        .filter(Book::YEAR_SORTED.within(2015..=2020))
        .order_by(Book::YEAR_SORTED.desc())
        .limit(20)
}

/// The model's page: the books' ids.
async fn model_page(db: &Db, query: &Query<Book>) -> redmodel::Result<Vec<u32>> {
    Ok(query
        .page(db, None)
        .await?
        .items
        .iter()
        .map(|b| b.id)
        .collect())
}

/// The hand-written page: the books' ids. `walk` is the SHA1 of
/// [`HAND_WALK`], loaded once.
async fn hand_page(db: &Db, walk: &str) -> redmodel::Result<Vec<u32>> {
    let keys: Vec<String> = db
        .query(
            redis::cmd("EVALSHA")
                .arg(walk)
                .arg(3)
                .arg(SORTED_KEY)
                .arg(tag_key("rust"))
                .arg(tag_key("async"))
                .arg(2015)
                .arg(2020)
                .arg(20),
        )
        .await?;
    let mut pipe = redis::pipe();
    for key in &keys {
        pipe.cmd("HMGET")
            .arg(key)
            .arg("title")
            .arg("year")
            .arg("tags");
    }
    let rows: Vec<(String, u16, String)> = db.query_pipeline(&pipe).await?;
    let books: Vec<Book> = keys
        .iter()
        .zip(rows)
        .map(|(key, (title, year, tags))| Book {
            id: key
                .rsplit(':')
                .next()
                .and_then(|id| id.parse().ok())
                .unwrap_or(0),
            title,
            year,
            // `["rust","async"]`: tags without quotes or commas inside.
            tags: tags
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(|t| t.trim_matches('"').to_string())
                .collect(),
        })
        .collect();
    Ok(books.iter().map(|b| b.id).collect())
}

async fn measure(name: &str, db: &Db, options: &Options, objects: u32) -> Result<(), String> {
    fixture(db, objects).await.map_err(|e| e.to_string())?;
    let query = query();
    let walk: String = db
        .query(redis::cmd("SCRIPT").arg("LOAD").arg(HAND_WALK))
        .await
        .map_err(|e| e.to_string())?;
    let walk = walk.as_str();
    let (model, hand) = (
        model_page(db, &query).await.map_err(|e| e.to_string())?,
        hand_page(db, walk).await.map_err(|e| e.to_string())?,
    );
    if model != hand || model.is_empty() {
        return Err(format!(
            "{name}: the model's page is {model:?}, the hand-written {hand:?}"
        ));
    }
    let before = db.round_trips();
    model_page(db, &query).await.map_err(|e| e.to_string())?;
    let trips = db.round_trips() - before;
    let (mut models, mut hands) = (Vec::new(), Vec::new());
    for _ in 0..options.reps {
        if timed("model") {
            models.push(
                ops_per_sec(options.run, async || {
                    model_page(db, &query).await.map(|_| 1)
                })
                .await
                .map_err(|e| e.to_string())?,
            );
        }
        if timed("hand") {
            hands.push(
                ops_per_sec(options.run, async || hand_page(db, walk).await.map(|_| 1))
                    .await
                    .map_err(|e| e.to_string())?,
            );
        }
    }
    print_row(name, models, hands, &trips);
    // The next backend's run shares this process: free the engine's data.
    db.query::<()>(&redis::cmd("FLUSHALL"))
        .await
        .map_err(|e| e.to_string())
}

/// Whether the side `name` is timed: `BENCH_SIDE` names it, or is unset.
fn timed(name: &str) -> bool {
    std::env::var("BENCH_SIDE").map_or(true, |side| side == name)
}

/// One backend's row: the medians of the model's and the hand-written
/// rates, their ratio, and the model's requests.
fn print_row(name: &str, models: Vec<f64>, hands: Vec<f64>, trips: &dyn std::fmt::Display) {
    let (model, hand) = (median(models), median(hands));
    println!(
        "| {name} | {} | {} | {} | {trips} |",
        fmt_rate(model),
        fmt_rate(hand),
        fmt_ratio(model, hand)
    );
}

/// The model's bulk write of `books`: how many were written.
async fn model_bulk(db: &Db, books: &[Book]) -> redmodel::Result<usize> {
    for result in Book::insert_many(db, books).await {
        result.map_err(|e| e.error)?;
    }
    Ok(books.len())
}

/// The hand-written bulk write of `books`: one pipeline of each book's
/// writes ([`add_writes`]).
async fn hand_bulk(db: &Db, books: &[Book]) -> redmodel::Result<usize> {
    let mut pipe = redis::pipe();
    for book in books {
        add_writes(&mut pipe, book);
    }
    db.query_pipeline::<()>(&pipe).await?;
    Ok(books.len())
}

/// The year index's key, as the model names it.
const SORTED_KEY: &str = "bbook:_sorted:year";

/// Book `id`'s key, as the model names it.
fn book_key(id: u32) -> String {
    format!("bbook:{id}")
}

/// The key of `tag`'s set, as the model names it.
fn tag_key(tag: &str) -> String {
    format!("bbook:_tag:tags:{tag}")
}

/// Adds `book`'s writes to `pipe`, their replies ignored: HSET of its
/// fields, HINCRBY of `_count`, ZADD of its year, SADD to each tag's set.
fn add_writes(pipe: &mut redis::Pipeline, book: &Book) {
    let key = add_object_writes(pipe, book);
    pipe.cmd("ZADD")
        .arg(SORTED_KEY)
        .arg(book.year)
        .arg(&key)
        .ignore();
    for tag in &book.tags {
        pipe.cmd("SADD").arg(tag_key(tag)).arg(&key).ignore();
    }
}

/// How many books the same-guarantee writer puts in one transaction, and
/// how many transactions it runs at once: the model's gathering (128
/// writes) and window (512 writes in flight).
const SAME_CHUNK: usize = 128;
const SAME_CONNECTIONS: usize = 4;

/// The hand-written bulk write with the model's guarantees, on redis-server
/// (`conns`: one connection per transaction in flight, as WATCH needs):
/// per [`SAME_CHUNK`] books, WATCH them and read their old tags and the
/// index keys' types in one pipeline, then one MULTI/EXEC of each book's
/// HSET, HINCRBY and SREM of the tags it loses, then one ZADD of every
/// book's year and one SADD per tag of its books; again from the start if
/// a watched book changed.
async fn same_bulk(
    conns: &[redis::aio::MultiplexedConnection],
    books: &[Book],
) -> redis::RedisResult<usize> {
    let chunks: Vec<&[Book]> = books.chunks(SAME_CHUNK).collect();
    let workers = conns.iter().enumerate().map(|(worker, conn)| {
        let mut conn = conn.clone();
        let mine: Vec<&[Book]> = chunks
            .iter()
            .skip(worker)
            .step_by(conns.len())
            .copied()
            .collect();
        async move {
            for chunk in mine {
                while !same_chunk(&mut conn, chunk).await? {}
            }
            Ok::<(), redis::RedisError>(())
        }
    });
    for done in futures_util::future::join_all(workers).await {
        done?;
    }
    Ok(books.len())
}

/// One transaction of [`same_bulk`]: whether it was applied (not: a
/// watched book changed meanwhile).
async fn same_chunk(
    conn: &mut redis::aio::MultiplexedConnection,
    books: &[Book],
) -> redis::RedisResult<bool> {
    let mut index_keys: Vec<String> = books
        .iter()
        .flat_map(|b| b.tags.iter().map(|t| tag_key(t)))
        .chain([SORTED_KEY.to_string()])
        .collect();
    index_keys.sort();
    index_keys.dedup();
    let mut reads = redis::pipe();
    reads
        .cmd("WATCH")
        .arg(books.iter().map(|b| book_key(b.id)).collect::<Vec<_>>())
        .ignore();
    for book in books {
        reads.cmd("HGET").arg(book_key(book.id)).arg("tags");
    }
    for index in &index_keys {
        reads.cmd("TYPE").arg(index);
    }
    let replies: Vec<redis::Value> = reads.query_async(conn).await?;
    let (old, types) = replies.split_at(books.len());
    let wrong = |(index, t): (&String, &redis::Value)| {
        let want = if index == SORTED_KEY { "zset" } else { "set" };
        !matches!(t, redis::Value::SimpleString(t) if t == "none" || t == want)
    };
    if let Some((index, _)) = index_keys.iter().zip(types).find(|&pair| wrong(pair)) {
        return Err(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "an index key of another type",
            index.clone(),
        )));
    }
    let mut tx = redis::pipe();
    tx.atomic();
    for (book, old) in books.iter().zip(old) {
        let old: String = redis::from_redis_value(old.clone()).unwrap_or_default();
        // The fixture's own text: `["a","b"]`.
        let old_tags = old
            .trim_matches(['[', ']'])
            .split(',')
            .map(|t| t.trim_matches('"'))
            .filter(|t| !t.is_empty() && !book.tags.iter().any(|n| n == t));
        for lost in old_tags {
            tx.cmd("SREM")
                .arg(tag_key(lost))
                .arg(book_key(book.id))
                .ignore();
        }
    }
    add_batched_writes(&mut tx, books);
    let applied: Option<()> = tx.query_async(conn).await?;
    Ok(applied.is_some())
}

/// Adds the writes of `book`'s own hash to `pipe`, their replies
/// ignored: HSET of its fields and HINCRBY of `_count`. Its key.
fn add_object_writes(pipe: &mut redis::Pipeline, book: &Book) -> String {
    let key = book_key(book.id);
    pipe.cmd("HSET")
        .arg(&key)
        .arg("title")
        .arg(&book.title)
        .arg("year")
        .arg(book.year)
        .arg("tags")
        .arg(tags_text(&book.tags))
        .ignore();
    pipe.cmd("HINCRBY").arg(&key).arg("_count").arg(1).ignore();
    key
}

/// The writes of `books` as a careful hand-written batch sends them,
/// their replies ignored: each book's HSET of its fields and HINCRBY of
/// `_count`, then one ZADD of every book's year and one SADD per tag of
/// the books that have it.
fn add_batched_writes(pipe: &mut redis::Pipeline, books: &[Book]) {
    let mut zadd = redis::cmd("ZADD");
    zadd.arg(SORTED_KEY);
    let mut tagged: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for book in books {
        let key = add_object_writes(pipe, book);
        zadd.arg(book.year).arg(&key);
        for tag in &book.tags {
            tagged.entry(tag).or_default().push(key.clone());
        }
    }
    pipe.add_command(zadd).ignore();
    for (tag, keys) in tagged {
        pipe.cmd("SADD").arg(tag_key(tag)).arg(keys).ignore();
    }
}

/// A book's tags as the model stores them: a JSON array of strings.
fn tags_text(tags: &[String]) -> String {
    format!(
        "[{}]",
        tags.iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// The bulk write of `books` by one side of the bulk case (`model`,
/// `hand` or `same`), as an [`interleaved`] side.
fn bulk_side<'a>(
    side: &str,
    db: &'a Db,
    books: &'a [Book],
    conns: &'a [redis::aio::MultiplexedConnection],
) -> Side<'a, String> {
    match side {
        "model" => Box::new(move || {
            Box::pin(async move { model_bulk(db, books).await.map_err(|e| e.to_string()) })
        }),
        "hand" => Box::new(move || {
            Box::pin(async move { hand_bulk(db, books).await.map_err(|e| e.to_string()) })
        }),
        _ => Box::new(move || {
            Box::pin(async move { same_bulk(conns, books).await.map_err(|e| e.to_string()) })
        }),
    }
}

/// The bulk write case on `db`: objects per second, model, hand-written
/// and, on redis-server (`url`), hand-written with the model's
/// guarantees; and the model's round trips per batch.
async fn measure_bulk(
    name: &str,
    db: &Db,
    url: Option<&str>,
    options: &Options,
    batch: u32,
) -> Result<(), String> {
    db.query::<()>(&redis::cmd("FLUSHALL"))
        .await
        .map_err(|e| e.to_string())?;
    let books: Vec<Book> = (0..batch).map(book).collect();
    let mut conns = Vec::new();
    if let Some(url) = url {
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        for _ in 0..SAME_CONNECTIONS {
            conns.push(
                client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(|e| e.to_string())?,
            );
        }
    }
    let mut trips = Vec::new();
    for _ in 0..2 {
        let before = db.round_trips();
        model_bulk(db, &books).await.map_err(|e| e.to_string())?;
        trips.push((db.round_trips() - before).to_string());
    }
    let trips = trips.join(" / ");
    // The sides take turns batch by batch (`interleaved`): each run gives
    // their rates over the same stretch of the machine's time, and so the
    // model's ratio to each.
    let sides: Vec<&str> = ["model", "hand", "same"]
        .into_iter()
        .filter(|side| timed(side) && (*side != "same" || !conns.is_empty()))
        .collect();
    let mut rates = vec![Vec::new(); sides.len()];
    let mut ratios = vec![Vec::new(); sides.len()];
    for _ in 0..options.reps {
        let mut calls: Vec<Side<'_, String>> = sides
            .iter()
            .map(|side| bulk_side(side, db, &books, &conns))
            .collect();
        let run = interleaved(options.run, &mut calls).await?;
        let model = sides.iter().position(|s| *s == "model").map(|i| run[i]);
        for (i, rate) in run.into_iter().enumerate() {
            if let Some(model) = model {
                ratios[i].push(model / rate);
            }
            rates[i].push(rate);
        }
    }
    let column = |side: &str| sides.iter().position(|s| *s == side);
    let rate = |side| column(side).and_then(|i| median(rates[i].clone()));
    let ratio = |side| column(side).and_then(|i| median(ratios[i].clone()));
    let written = Book::YEAR_SORTED.len(db).await.map_err(|e| e.to_string())?;
    if written != u64::from(batch) {
        return Err(format!(
            "{name}: {written} books in the year index after the batch of {batch}"
        ));
    }
    println!(
        "| {name} | {} | {} | {} | {trips} | {} | {} |",
        fmt_rate(rate("model")),
        fmt_rate(rate("hand")),
        fmt_ratio(ratio("hand"), Some(1.0)),
        fmt_rate(rate("same")),
        fmt_ratio(ratio("same"), Some(1.0)),
    );
    // The engine in process holds its books in this process: emptied, so
    // that the next backend's client does not run beside them.
    db.query::<()>(&redis::cmd("FLUSHALL"))
        .await
        .map_err(|e| e.to_string())
}

/// How many objects the streamed pass reads per `--objects`.
const STREAMED_PER_OBJECT: u32 = 10;
/// How often the streamed pass samples the resident set, in objects.
const SAMPLE_EVERY: u32 = 10_000;

/// The streamed pass on `db` over `count` books (see the module docs):
/// one table row.
async fn measure_stream(name: &str, db: &Db, count: u32) -> Result<(), String> {
    let error = |e: redmodel::Error| e.to_string();
    db.query::<()>(&redis::cmd("FLUSHALL"))
        .await
        .map_err(error)?;
    let mut id = 0;
    while id < count {
        let books: Vec<Book> = (id..count.min(id + BATCH)).map(book).collect();
        hand_bulk(db, &books).await.map_err(error)?;
        id += BATCH;
    }
    let rss = || rss_bytes().ok_or("no /proc/self/status");
    let before = rss()?;
    let (mut peak, mut seen) = (before, 0u32);
    let started = std::time::Instant::now();
    let mut books = Book::stream(db);
    while let Some(book) = books.next().await {
        book.map_err(error)?;
        seen += 1;
        if seen % SAMPLE_EVERY == 0 {
            peak = peak.max(rss()?);
        }
    }
    let rate = f64::from(seen) / started.elapsed().as_secs_f64();
    peak = peak.max(rss()?);
    if seen != count {
        return Err(format!(
            "{name}: the stream returned {seen} of {count} books"
        ));
    }
    let before_all = rss()?;
    let all = Book::load_all(db).await.map_err(error)?;
    let holding_all = rss()?;
    if all.len() != count as usize {
        return Err(format!(
            "{name}: load_all returned {} of {count} books",
            all.len()
        ));
    }
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "| {name} | {count} | {} | {:.1} MiB | {:.1} MiB |",
        fmt_rate(Some(rate)),
        mib(peak.saturating_sub(before)),
        mib(holding_all.saturating_sub(before_all)),
    );
    drop(all);
    db.query::<()>(&redis::cmd("FLUSHALL")).await.map_err(error)
}

/// Prints a case's title and the head of its table: a backend column,
/// then `columns`.
fn table_head(title: &str, columns: &[&str]) {
    println!("{title}");
    println!("| backend | {} |", columns.join(" | "));
    println!("|---|{}", "---|".repeat(columns.len()));
}

async fn run(options: &Options, objects: u32, on: &str) -> Result<(), String> {
    let mut backends = Vec::new();
    if on.contains('e') {
        backends.push(("engine in process", Db::memory(), None));
    }
    if on.contains('s') {
        let server = RedisServer::start().map_err(|e| format!("redis-server: {e}"))?;
        let db = Db::connect(&server.url())
            .await
            .map_err(|e| e.to_string())?;
        backends.push(("redis-server", db, Some(server)));
    }
    let only = options.only.as_deref();
    if only.is_none_or(|o| o == "page") {
        table_head(
            &format!(
                "a page of 20 of a tag ∩ range query over {objects} books, newest first; {} runs of {:?} each, medians",
                options.reps, options.run
            ),
            &["model pages/s", "hand-written pages/s", "model / hand", "model round trips"],
        );
        for (name, db, _) in &backends {
            measure(name, db, options, objects).await?;
        }
        println!();
    }
    if only.is_none_or(|o| o == "bulk") {
        let batch = objects.min(BATCH);
        table_head(
            &format!("insert_many of {batch} books (a sorted year, two tags) against a hand-written pipeline of the same writes"),
            &["model objects/s", "hand-written objects/s", "model / hand", "model requests per batch, new / again", "same guarantee objects/s", "model / same"],
        );
        for (name, db, server) in &backends {
            let url = server.as_ref().map(RedisServer::url);
            measure_bulk(name, db, url.as_deref(), options, batch).await?;
        }
        println!();
    }
    if only.is_none_or(|o| o == "stream") {
        let count = objects.saturating_mul(STREAMED_PER_OBJECT);
        table_head(
            &format!("a streamed pass over {count} books (Book::stream), this process's resident set sampled every {SAMPLE_EVERY} objects; load_all of the same books after it, for contrast"),
            &["books", "streamed objects/s", "resident set growth, streaming (peak)", "resident set growth, holding load_all"],
        );
        for (name, db, _) in &backends {
            measure_stream(name, db, count).await?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut objects = 100_000;
    let options = match Options::new(5, 1000).parse(
        std::env::args().skip(1),
        USAGE,
        &mut [("--objects", &mut objects)],
    ) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    let objects = u32::try_from(objects).unwrap_or(u32::MAX);
    let outcome = runtime().map_err(|e| e.to_string()).and_then(|rt| {
        let on = options.on.as_deref().unwrap_or("es");
        rt.block_on(run(&options, objects, on))
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("bench_query: {why}");
            ExitCode::FAILURE
        }
    }
}
