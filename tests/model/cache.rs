//! The near cache (`Db::with_cache`): its coherence under racing readers
//! and writers, the faults that empty it (a lost tracking connection, a
//! restarted server, FLUSHALL), and its statistics.
//!
//! The coherence checker records every read with when it began and ended,
//! and every write with when it was acknowledged; a read must return no
//! version older than the newest one acknowledged before it began, less
//! the invalidation window for another client's write ([`window`]) and
//! with no window at all for a write through the cached `Db` itself.
//!
//! It runs [`RUN`] (20 s) per backend, its 16 readers and 4 writers paced
//! ([`READ_PAUSE`], [`WRITE_PAUSE`]): about 31,000 to 35,000 reads and
//! 2,700 to 3,500 acknowledged writes per backend (printed under
//! `--nocapture`), at about a fifth of a core (3.9 s of CPU for the
//! 20 s run on the engine in process, debug build). It fails when the cache stops invalidating: with the
//! server's invalidations ignored (the tracker's and the engine feed's
//! calls of `Cache::invalidate` removed) every backend reports thousands
//! of stale reads, and with the ticket check of rule 3 removed
//! (`Cache::keep` not comparing the stripe's generation) redis-server and
//! the cluster report tens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redmodel::prelude::*;
use redmodel::{CacheConfig, CacheStats};
use redmodel_suite::{backend_tests, configured_server_or_skip, RedisServer, Rng, TestCtx};

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "cachehot")]
struct Hot {
    #[redmodel(pk)]
    id: u32,
    version: u64,
    writer: String,
}

/// The hot set.
const OBJECTS: u32 = 100;
const READERS: usize = 16;
const WRITERS: u32 = 4;
/// The writer whose writes go through the cached `Db` (read-your-writes).
const OWN_WRITER: u32 = 3;
/// How long the coherence checker runs per backend.
const RUN: Duration = Duration::from_secs(20);
/// How long a fault test's race runs (the fault comes halfway).
const FAULT_RUN: Duration = Duration::from_secs(3);
/// The pause of a reader after each read, and of a writer after each
/// write: the suite runs on two cores beside other tests, so a run uses a
/// bounded share of a core rather than both for its whole length. The
/// readers wake in groups on the timer's millisecond ticks, so reads
/// still meet writes and invalidations in flight densely (the run prints
/// its counts under `--nocapture`).
const READ_PAUSE: Duration = Duration::from_millis(10);
const WRITE_PAUSE: Duration = Duration::from_millis(20);

/// How long after another client's acknowledged write a read may still
/// return the older value: the time the server's invalidation takes to
/// arrive on the tracking connection and be applied (docs/cache.md). In
/// process the engine queues it before the writer's reply: none.
fn window(ctx: &TestCtx) -> Duration {
    if ctx.is_memory() {
        Duration::ZERO
    } else {
        Duration::from_millis(100)
    }
}

/// One acknowledged write: `version` of object `id`.
struct Write {
    id: u32,
    version: u64,
    acked: Instant,
}

/// One read: what it returned and when it began.
struct Read {
    id: u32,
    version: u64,
    began: Instant,
    how: &'static str,
}

#[derive(Default)]
struct Log {
    writes: Mutex<Vec<Write>>,
    reads: Mutex<Vec<Read>>,
}

/// The stored key of object `id`, for raw commands.
fn stored(ctx: &TestCtx, id: u32) -> String {
    ctx.stored(Hot::at(id).key())
}

async fn seed(db: &Db) -> redmodel::Result<()> {
    for id in 0..OBJECTS {
        Hot {
            id,
            version: 0,
            writer: "seed".into(),
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

/// Writer `w` writes the objects `id % WRITERS == w` (so that each
/// object's versions are acknowledged in order) until `stop`: through the
/// cached `db` for [`OWN_WRITER`], else through `other` (model writes for
/// writer 0, raw HSETs for the others).
async fn writer(ctx: TestCtx, w: u32, db: Db, other: Db, log: Arc<Log>, stop: Arc<AtomicBool>) {
    let mut rng = Rng::for_task(100 + w as usize);
    let mut versions = [0u64; OBJECTS as usize];
    while !stop.load(Ordering::Relaxed) {
        let id = (rng.below((OBJECTS / WRITERS) as usize) as u32) * WRITERS + w;
        let version = versions[id as usize] + 1;
        let done = match w {
            0 => Hot::at(id).set(&other, Hot::VERSION, version).await,
            OWN_WRITER => Hot::at(id).set(&db, Hot::VERSION, version).await,
            _ => {
                other
                    .query::<()>(
                        redis::cmd("HSET")
                            .arg(stored(&ctx, id))
                            .arg("version")
                            .arg(version),
                    )
                    .await
            }
        };
        let acked = Instant::now();
        // A write that failed (a fault test's lost connection) may or may
        // not have landed: it is not counted as acknowledged, and the
        // next version replaces it.
        if done.is_ok() {
            versions[id as usize] = version;
            log.writes
                .lock()
                .unwrap()
                .push(Write { id, version, acked });
            if w == OWN_WRITER {
                // Read your write at once, before the server's own
                // invalidation of it is likely to have come.
                let began = Instant::now();
                if let Ok(Some(hot)) = Hot::load(&db, id).await {
                    log.reads.lock().unwrap().push(Read {
                        id,
                        version: hot.version,
                        began,
                        how: "load after its own write",
                    });
                }
            }
        }
        tokio::time::sleep(WRITE_PAUSE).await;
    }
}

/// Reader `r` loads, gets and batch-loads random objects through the
/// cached `db` until `stop`.
async fn reader(r: usize, db: Db, log: Arc<Log>, stop: Arc<AtomicBool>) {
    let mut rng = Rng::for_task(r);
    let mut mine = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let id = rng.below(OBJECTS as usize) as u32;
        let began = Instant::now();
        match rng.below(10) {
            0 => {
                let ids: Vec<u32> = (0..4).map(|i| (id + i * 7) % OBJECTS).collect();
                let refs: Vec<_> = ids.iter().map(|&i| Hot::at(i)).collect();
                if let Ok(got) = ObjectRef::load_many(&db, &refs).await {
                    for (i, hot) in ids.into_iter().zip(got) {
                        let version = hot.expect("a seeded object").version;
                        mine.push(Read {
                            id: i,
                            version,
                            began,
                            how: "load_many",
                        });
                    }
                }
            }
            1 | 2 => {
                if let Ok(version) = Hot::at(id).get(&db, Hot::VERSION).await {
                    mine.push(Read {
                        id,
                        version: version.expect("a seeded object"),
                        began,
                        how: "get",
                    });
                }
            }
            _ => {
                if let Ok(hot) = Hot::load(&db, id).await {
                    mine.push(Read {
                        id,
                        version: hot.expect("a seeded object").version,
                        began,
                        how: "load",
                    });
                }
            }
        }
        // A hit never waits: paced, it leaves the writers, the tracker
        // and the other tests their share.
        tokio::time::sleep(READ_PAUSE).await;
    }
    log.reads.lock().unwrap().extend(mine);
}

/// Every read that returned a version older than the newest acknowledged
/// before it began (another client's: `window` before), described.
fn stale_reads(log: &Log, window: Duration) -> (usize, Vec<String>) {
    let mut writes = log.writes.lock().unwrap();
    let reads = log.reads.lock().unwrap();
    writes.sort_by_key(|w| (w.id, w.version));
    let mut by_id: Vec<Vec<(Instant, u64)>> = vec![Vec::new(); OBJECTS as usize];
    for w in writes.iter() {
        // The cached Db's own writes are seen at once; another client's
        // once its invalidation came.
        let seen = if w.id % WRITERS == OWN_WRITER {
            w.acked
        } else {
            w.acked + window
        };
        by_id[w.id as usize].push((seen, w.version));
    }
    let mut stale = Vec::new();
    for read in reads.iter() {
        let acked = &by_id[read.id as usize];
        // Versions are acknowledged in order: the newest seen is the last
        // whose time has come.
        let n = acked.partition_point(|(seen, _)| *seen <= read.began);
        let newest = if n == 0 { 0 } else { acked[n - 1].1 };
        if read.version < newest {
            stale.push(format!(
                "{} of {} returned version {} though {} was acknowledged before it began",
                read.how, read.id, read.version, newest
            ));
        }
    }
    (reads.len(), stale)
}

/// Runs the readers and writers for `run`, `fault` halfway, then the
/// checker; returns the cache's statistics.
async fn race<F, Fut>(ctx: &TestCtx, run: Duration, fault: F) -> redmodel::Result<CacheStats>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let db = ctx.db.clone().with_cache(CacheConfig::default()).await?;
    let other = ctx.another_db().await;
    let raw = ctx.another_db().await;
    seed(&other).await?;
    let log = Arc::new(Log::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for r in 0..READERS {
        tasks.push(tokio::spawn(reader(
            r,
            db.clone(),
            Arc::clone(&log),
            Arc::clone(&stop),
        )));
    }
    for w in 0..WRITERS {
        let other = if w == 0 { other.clone() } else { raw.clone() };
        tasks.push(tokio::spawn(writer(
            ctx.clone(),
            w,
            db.clone(),
            other,
            Arc::clone(&log),
            Arc::clone(&stop),
        )));
    }
    tokio::time::sleep(run / 2).await;
    fault().await;
    tokio::time::sleep(run / 2).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.expect("a task panicked");
    }
    let writes = log.writes.lock().unwrap().len();
    let (reads, stale) = stale_reads(&log, window(ctx));
    let stats = db.cache_stats().expect("the cache is on");
    println!(
        "{}: {reads} reads and {writes} acknowledged writes in {run:?} ({stats:?})",
        ctx.backend
    );
    assert!(
        stale.is_empty(),
        "{} of {reads} reads were stale ({stats:?}), the first: {:#?}",
        stale.len(),
        &stale[..stale.len().min(10)]
    );
    assert!(reads > 1000, "only {reads} reads");
    assert!(stats.hits > 0 && stats.invalidations > 0, "{stats:?}");
    Ok(stats)
}

/// Every node's CLIENT LIST of this test's server or cluster.
fn node_urls(ctx: &TestCtx) -> Vec<String> {
    match (ctx.url(), ctx.cluster_urls()) {
        (Some(url), _) => vec![url.to_string()],
        (None, Some(urls)) => urls.to_vec(),
        (None, None) => Vec::new(),
    }
}

/// Kills every tracking connection (CLIENT KILL ID) on every node;
/// returns how many.
async fn kill_tracking(ctx: &TestCtx) -> usize {
    let mut killed = 0;
    for url in node_urls(ctx) {
        let client = redis::Client::open(url.as_str()).expect("a node URL");
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("a node");
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query_async(&mut conn)
            .await
            .expect("CLIENT LIST");
        for line in list.lines() {
            let field = |name: &str| {
                line.split(' ')
                    .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                    .unwrap_or("")
                    .to_string()
            };
            if field("flags").contains('t') {
                let _: redis::RedisResult<()> = redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("ID")
                    .arg(field("id"))
                    .query_async(&mut conn)
                    .await;
                killed += 1;
            }
        }
    }
    killed
}

/// Lets the server's invalidations of the writes so far arrive (over the
/// network they come after the writes' replies), so that they do not drop
/// what a test caches next.
async fn settle(ctx: &TestCtx) {
    if !ctx.is_memory() {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Loads object 1 twice until the second load is a hit (within 5 s): the
/// cache keeps objects again once tracking is back after `what`.
async fn until_kept_again(db: &Db, what: &str) -> redmodel::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let hits = db.cache_stats().expect("on").hits;
        Hot::load(db, 1).await?;
        Hot::load(db, 1).await?;
        if db.cache_stats().expect("on").hits > hits {
            return Ok(());
        }
        assert!(Instant::now() < deadline, "nothing is kept after {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (up to 5 s) until `db` loads version `version` of object `id`.
async fn until_loaded(db: &Db, id: u32, version: u64) -> redmodel::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // A connection error is the restart's: the next load reconnects.
        let got = match Hot::load(db, id).await {
            Ok(got) => got.map(|h| h.version),
            Err(e) if e.is_connection() => None,
            Err(e) => return Err(e),
        };
        if got == Some(version) {
            return Ok(());
        }
        assert!(
            Instant::now() < deadline,
            "object {id} still reads {got:?}, not version {version}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

backend_tests! {
    exclusive async fn cached_reads_are_never_older_than_an_acknowledged_write(ctx) -> redmodel::Result<()> {
        race(&ctx, RUN, || async {}).await?;
        Ok(())
    }
}

backend_tests! {
    exclusive async fn a_lost_tracking_connection_empties_the_cache_and_tracking_comes_back(ctx) -> redmodel::Result<()> {
        if ctx.is_memory() {
            // In process the engine's tracker has no connection to lose.
            return Ok(());
        }
        let killer = ctx.clone();
        let stats = race(&ctx, FAULT_RUN, || async move {
            assert!(kill_tracking(&killer).await > 0, "no tracking connection");
        })
        .await?;
        assert!(stats.flushes > 0, "{stats:?}");
        Ok(())
    }
}

backend_tests! {
    exclusive async fn flushall_by_another_client_empties_the_cache(ctx) -> redmodel::Result<()> {
        let db = ctx.db.clone().with_cache(CacheConfig::default()).await?;
        let other = ctx.another_db().await;
        seed(&other).await?;
        settle(&ctx).await;
        for id in 0..10 {
            Hot::load(&db, id).await?;
        }
        assert_eq!(Hot::load(&db, 1).await?.map(|h| h.version), Some(0));
        let before = db.cache_stats().expect("on");
        assert!(before.hits >= 1 && before.entries >= 10, "{before:?}");
        other.query::<()>(&redis::cmd("FLUSHALL")).await?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while Hot::load(&db, 1).await?.is_some() {
            assert!(Instant::now() < deadline, "the cache kept a flushed object");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let after = db.cache_stats().expect("on");
        assert!(after.flushes > before.flushes, "{after:?}");
        // It refills, and follows changes again.
        Hot { id: 1, version: 7, writer: "again".into() }.insert(&other).await?;
        until_loaded(&db, 1, 7).await?;
        Hot::at(1).set(&other, Hot::VERSION, 8).await?;
        until_loaded(&db, 1, 8).await?;
        Ok(())
    }
}

backend_tests! {
    /// A RESET on the tracking connection turns tracking off and leaves
    /// the connection up: the heartbeat finds tracking off, the cache
    /// empties, tracks again, refills, and sees another client's change.
    exclusive async fn a_reset_of_the_tracking_connection_empties_the_cache_and_it_refills(ctx) -> redmodel::Result<()> {
        if ctx.backend.starts_with("memory") && ctx.backend != "memory_server" {
            // In process there is no connection to reset.
            return Ok(());
        }
        let db = ctx.db.clone().with_cache(CacheConfig::default()).await?;
        let other = ctx.another_db().await;
        seed(&other).await?;
        settle(&ctx).await;
        Hot::load(&db, 1).await?;
        Hot::load(&db, 1).await?;
        let before = db.cache_stats().expect("on");
        assert!(before.hits >= 1, "{before:?}");
        assert!(db.reset_cache_tracking().await? > 0, "no tracking connection");
        let deadline = Instant::now() + Duration::from_secs(5);
        while db.cache_stats().expect("on").flushes == before.flushes {
            assert!(Instant::now() < deadline, "the cache did not notice the RESET");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Kept again once tracking is back...
        until_kept_again(&db, "the RESET").await?;
        // ... and another client's change reaches it.
        Hot::at(1).set(&other, Hot::VERSION, 8).await?;
        until_loaded(&db, 1, 8).await?;
        Ok(())
    }
}

backend_tests! {
    exclusive async fn the_cache_counts_hits_misses_invalidations_and_evictions(ctx) -> redmodel::Result<()> {
        let db = ctx
            .db
            .clone()
            .with_cache(CacheConfig::default().max_entries(3))
            .await?;
        assert!(db.clone().with_cache(CacheConfig::default()).await.is_err());
        seed(&db).await?;
        settle(&ctx).await;
        let zero = db.cache_stats().expect("on");
        for id in 0..3 {
            Hot::load(&db, id).await?;
        }
        Hot::load(&db, 0).await?;
        let s = db.cache_stats().expect("on");
        assert_eq!((s.hits - zero.hits, s.misses - zero.misses, s.entries), (1, 3, 3));
        // A fourth object pushes out the least recently used.
        Hot::load(&db, 3).await?;
        let s = db.cache_stats().expect("on");
        assert_eq!(s.evictions - zero.evictions, 1, "{s:?}");
        assert_eq!(s.entries, 3);
        // A write through the Db drops its key at once.
        let inv = s.invalidations;
        Hot::at(3).set(&db, Hot::VERSION, 5).await?;
        assert!(db.cache_stats().expect("on").invalidations > inv);
        settle(&ctx).await;
        assert_eq!(Hot::at(3).get(&db, Hot::VERSION).await?, Some(5));
        // get answers from the cached object.
        let s = db.cache_stats().expect("on");
        assert_eq!(Hot::at(3).get(&db, Hot::VERSION).await?, Some(5));
        assert_eq!(db.cache_stats().expect("on").hits, s.hits + 1);
        // load_many: the cached objects hit, the others miss.
        let refs: Vec<_> = (0..6).map(Hot::at).collect();
        let s = db.cache_stats().expect("on");
        let got = ObjectRef::load_many(&db, &refs).await?;
        assert_eq!(got.iter().flatten().count(), 6);
        let t = db.cache_stats().expect("on");
        assert_eq!(t.hits + t.misses - s.hits - s.misses, 6);
        assert!(t.hit_rate() > 0.0);
        Ok(())
    }
}

#[tokio::test]
async fn a_restarted_server_empties_the_cache_and_it_refills() -> redmodel::Result<()> {
    let Some(mut server) = configured_server_or_skip("cache restart test", RedisServer::builder())
    else {
        return Ok(());
    };
    let url = server.url();
    let db = Db::connect(&url)
        .await?
        .with_cache(CacheConfig::default())
        .await?;
    seed(&db).await?;
    Hot::load(&db, 1).await?;
    Hot::load(&db, 1).await?;
    let before = db.cache_stats().expect("on");
    assert_eq!(before.hits, 1);
    // The data goes with the server (no persistence): the cache must not
    // answer for it after the restart.
    server.restart().expect("restart");
    let other = Db::connect(&url).await?;
    // The first request after the restart may meet the dropped connection.
    let _ = db.query::<()>(&redis::cmd("PING")).await;
    Hot {
        id: 1,
        version: 9,
        writer: "after".into(),
    }
    .insert(&other)
    .await?;
    until_loaded(&db, 1, 9).await?;
    let after = db.cache_stats().expect("on");
    assert!(after.flushes > before.flushes, "{after:?}");
    // Tracking comes back: the object is kept again (once the heartbeat
    // has tracked again)...
    until_kept_again(&db, "the restart").await?;
    // ... and another client's change reaches it.
    Hot::at(1).set(&other, Hot::VERSION, 10).await?;
    until_loaded(&db, 1, 10).await?;
    Ok(())
}

backend_tests! {
    exclusive async fn a_write_queued_in_multi_is_dropped_once_exec_is_answered(ctx) -> redmodel::Result<()> {
        let db = ctx.db.clone().with_cache(CacheConfig::default()).await?;
        seed(&db).await?;
        settle(&ctx).await;
        let key = stored(&ctx, 1);
        let mut conn = db.dedicated_for(&key).await?;
        conn.query::<()>(&redis::cmd("MULTI")).await?;
        conn.query::<()>(redis::cmd("HSET").arg(&key).arg("version").arg(5))
            .await?;
        // Queued, not run: the read finds version 0, and keeps it.
        assert_eq!(Hot::load(&db, 1).await?.map(|h| h.version), Some(0));
        conn.query::<()>(&redis::cmd("EXEC")).await?;
        assert_eq!(Hot::load(&db, 1).await?.map(|h| h.version), Some(5));
        Ok(())
    }
}

/// A model with every kind of index read the cache answers, and a relation.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "cachebook")]
struct CBook {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(sorted)]
    year: u16,
    #[redmodel(tags)]
    tags: Vec<String>,
    #[redmodel(recent = 5)]
    touched: Option<u64>,
}

#[derive(Relation)]
#[redmodel(table = "cacheshelf", owner = CBook, member = CBook)]
struct Shelf;

fn cbook(id: u32, year: u16, tags: &[&str]) -> CBook {
    CBook {
        id,
        year,
        tags: tags.iter().map(|t| t.to_string()).collect(),
        touched: Some(u64::from(id)),
    }
}

/// The relation's members, the books tagged `rust`, the books of
/// 2000–2010 and the recent list, as ids (each read sorted).
async fn reads(db: &Db) -> redmodel::Result<[Vec<u32>; 4]> {
    let ids = |books: Vec<CBook>| {
        let mut ids: Vec<u32> = books.into_iter().map(|b| b.id).collect();
        ids.sort_unstable();
        ids
    };
    Ok([
        ids(CBook::at(1).relation::<Shelf>().load(db).await?),
        ids(CBook::TAGS_TAGS.with(db, "rust").await?),
        ids(CBook::YEAR_SORTED.range(db, 2000u16..=2010).await?),
        ids(CBook::TOUCHED_RECENT.load(db).await?),
    ])
}

/// Waits (up to 5 s) until `db`'s [`reads`] answer `want`.
async fn until_read(db: &Db, want: [Vec<u32>; 4]) -> redmodel::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = reads(db).await?;
        if got == want {
            return Ok(());
        }
        assert!(Instant::now() < deadline, "reads {got:?}, not {want:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

backend_tests! {
    /// Relation and index reads are kept by their request: read again,
    /// they cost no round trip; another client's change to any key they
    /// read is seen once its invalidation arrives, and this `Db`'s own
    /// writes at once.
    exclusive async fn relation_and_index_reads_answer_from_the_cache_and_follow_every_change(ctx) -> redmodel::Result<()> {
        let db = ctx.db.clone().with_cache(CacheConfig::default()).await?;
        let other = ctx.another_db().await;
        for (id, year) in [(1, 2001), (2, 2002), (3, 2003)] {
            cbook(id, year, &["rust"]).insert(&other).await?;
        }
        CBook::at(1).relation::<Shelf>().link(&other, CBook::at(2)).await?;
        settle(&ctx).await;
        let first = [vec![2], vec![1, 2, 3], vec![1, 2, 3], vec![1, 2, 3]];
        assert_eq!(reads(&db).await?, first);
        let trips = db.round_trips();
        let hits = db.cache_stats().expect("on").hits;
        assert_eq!(reads(&db).await?, first);
        assert_eq!(db.round_trips(), trips, "read again from the cache");
        assert!(db.cache_stats().expect("on").hits >= hits + 4);

        // Another client changes a key of each read.
        CBook::at(1).relation::<Shelf>().link(&other, CBook::at(3)).await?;
        CBook::at(2).set(&other, CBook::TAGS, vec!["go".to_string()]).await?;
        CBook::at(3).set(&other, CBook::YEAR, 1990).await?;
        cbook(4, 2004, &[]).insert(&other).await?;
        until_read(&db, [vec![2, 3], vec![1, 3], vec![1, 2, 4], vec![1, 2, 3, 4]]).await?;

        // This Db's own writes are read back at once.
        CBook::at(1).relation::<Shelf>().unlink(&db, CBook::at(2)).await?;
        CBook::at(1).set(&db, CBook::TAGS, Vec::<String>::new()).await?;
        CBook::at(4).set(&db, CBook::YEAR, 2010).await?;
        CBook::at(4).delete(&db).await?;
        assert_eq!(reads(&db).await?, [vec![3], vec![3], vec![1, 2], vec![1, 2, 3]]);
        Ok(())
    }
}
