//! Locks (`Db::lock`, `lock_wait`, `with_lock`, `LockGuard`) on every
//! backend: mutual exclusion under real concurrency, expiry handing the lock
//! to the next holder without letting the old one touch it, release on
//! drop, and the typed errors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redmodel::{Db, Error};
use redmodel_suite::backend_tests;

const LONG: Duration = Duration::from_secs(30);

/// Reads the hash field `n` of `key`, sleeps (the race window), writes it
/// back plus one.
async fn slow_increment(db: &Db, key: &str) -> Result<(), Error> {
    let n: Option<i64> = db.query(redis::cmd("HGET").arg(key).arg("n")).await?;
    tokio::time::sleep(Duration::from_millis(2)).await;
    db.query::<()>(redis::cmd("HSET").arg(key).arg("n").arg(n.unwrap_or(0) + 1))
        .await
}

async fn counter(db: &Db, key: &str) -> Result<i64, Error> {
    Ok(db
        .query::<Option<i64>>(redis::cmd("HGET").arg(key).arg("n"))
        .await?
        .unwrap_or(0))
}

/// The value stored in the lock key of `name`, if any.
async fn stored_token(db: &Db, name: &str) -> Result<Option<String>, Error> {
    db.query(redis::cmd("GET").arg(redmodel::lock_key(name)))
        .await
}

fn is_not_held(e: &Error, expected: &str) -> bool {
    matches!(e, Error::LockNotHeld { name } if name == expected)
}

const TASKS: usize = 8;
const ROUNDS: usize = 5;

/// [`TASKS`] tasks each increment the counter `key` [`ROUNDS`] times with
/// a read-sleep-write race window, under the lock named `key`: no update
/// may be lost and no two tasks may ever be inside at once.
async fn check_exclusive(db: &Db, key: &str, backend: &str) -> Result<(), Error> {
    let name = key;
    let inside = Arc::new(AtomicUsize::new(0));
    let most_inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let (db, key, name) = (db.clone(), key.to_string(), name.to_string());
        let (inside, most_inside) = (inside.clone(), most_inside.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let guard = db.lock_wait(&name, LONG, Duration::from_secs(20)).await?;
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most_inside.fetch_max(now, Ordering::SeqCst);
                slow_increment(&db, &key).await?;
                inside.fetch_sub(1, Ordering::SeqCst);
                guard.release().await?;
            }
            Ok::<(), Error>(())
        }));
    }
    for task in tasks {
        task.await.expect("task panicked")?;
    }
    assert_eq!(
        counter(db, key).await?,
        (TASKS * ROUNDS) as i64,
        "on {backend}"
    );
    assert_eq!(most_inside.load(Ordering::SeqCst), 1, "two holders at once");
    assert_eq!(stored_token(db, name).await?, None, "released at the end");
    Ok(())
}

backend_tests! {
    /// N tasks increment a counter with a read-sleep-write race window. Under
    /// the lock no update is lost and no two tasks are ever inside at once;
    /// without it (the control) updates are lost, so the window is real.
    async fn the_lock_makes_a_racy_increment_exact(ctx) {
        check_exclusive(&ctx.db, &ctx.key("counter"), ctx.backend).await?;

        // Control: the same increments without the lock lose updates.
        let racy = ctx.key("racy");
        let mut tasks = Vec::new();
        for _ in 0..TASKS {
            let (db, racy) = (ctx.db.clone(), racy.clone());
            tasks.push(tokio::spawn(async move { slow_increment(&db, &racy).await }));
        }
        for task in tasks {
            task.await.expect("task panicked")?;
        }
        assert!(counter(&ctx.db, &racy).await? < TASKS as i64, "the race window is real");
        Ok::<(), Error>(())
    }

    /// `with_lock` serialises closures the same way and returns their value.
    async fn with_lock_runs_the_work_alone_and_releases(ctx) {
        let key = ctx.key("counter");
        let name = ctx.key("with");
        let mut tasks = Vec::new();
        for i in 0..TASKS {
            let (db, key, name) = (ctx.db.clone(), key.clone(), name.clone());
            tasks.push(tokio::spawn(async move {
                db.with_lock(&name, LONG, Duration::from_secs(20), || async {
                    slow_increment(&db, &key).await.map(|()| i)
                })
                .await
            }));
        }
        for (i, task) in tasks.into_iter().enumerate() {
            assert_eq!(task.await.expect("task panicked")??, i);
        }
        assert_eq!(counter(&ctx.db, &key).await?, TASKS as i64);
        assert_eq!(stored_token(&ctx.db, &name).await?, None);
        Ok::<(), Error>(())
    }

    /// The lock is `_lock:NAME` holding the guard's random token, with the ttl.
    async fn the_lock_key_holds_a_random_token_with_the_ttl(ctx) {
        let a = ctx.key("a");
        let b = ctx.key("b");
        let ga = ctx.db.lock(&a, Duration::from_secs(60)).await?.expect("free");
        let gb = ctx.db.lock(&b, Duration::from_secs(60)).await?.expect("free");
        assert_eq!(ga.key(), format!("_lock:{a}"));
        assert_eq!(ga.name(), a);
        assert_ne!(ga.token(), gb.token());
        assert_eq!(stored_token(&ctx.db, &a).await?.as_deref(), Some(ga.token()));
        let pttl: i64 = ctx.db.query(redis::cmd("PTTL").arg(ga.key())).await?;
        assert!((59_000..=60_000).contains(&pttl), "pttl {pttl}");
        assert!(ctx.db.lock(&a, LONG).await?.is_none(), "taken");
        ga.release().await?;
        gb.release().await?;
        assert!(ctx.db.lock(&a, LONG).await?.is_some(), "free again");
        Ok::<(), Error>(())
    }

    /// After its ttl ran out and another took the lock, the old guard can
    /// neither release nor extend it, nor delete it on drop.
    async fn an_expired_holder_cannot_touch_the_next_holders_lock(ctx) {
        let name = ctx.key("lease");
        let old = ctx.db.lock(&name, Duration::from_millis(50)).await?.expect("free");
        let mut old_again = ctx.db.lock(&name, Duration::from_millis(50)).await?;
        assert!(old_again.is_none());
        tokio::time::sleep(Duration::from_millis(120)).await;
        let new = ctx.db.lock(&name, LONG).await?.expect("free after the ttl");

        let mut old = old;
        let err = old.extend(LONG).await.unwrap_err();
        assert!(is_not_held(&err, &name), "{err:?}");
        assert!(err.to_string().contains("extend the lock while working"), "{err}");
        let err = old.release().await.unwrap_err();
        assert!(is_not_held(&err, &name), "{err:?}");
        assert_eq!(stored_token(&ctx.db, &name).await?.as_deref(), Some(new.token()));

        // A second stale guard, dropped without release: it leaves the new lock alone.
        old_again = ctx.db.lock(&ctx.key("other"), Duration::from_millis(30)).await?;
        let stale = old_again.take().expect("free");
        tokio::time::sleep(Duration::from_millis(80)).await;
        let other = ctx.db.lock(&ctx.key("other"), LONG).await?.expect("free after the ttl");
        drop(stale);
        tokio::time::sleep(Duration::from_millis(50)).await; // let a spawned release run
        assert_eq!(stored_token(&ctx.db, &ctx.key("other")).await?.as_deref(), Some(other.token()));

        new.release().await?;
        other.release().await?;
        Ok::<(), Error>(())
    }

    /// An expired lock that nobody took is not ours either: release says so.
    async fn releasing_an_expired_lock_reports_it(ctx) {
        let name = ctx.key("gone");
        let guard = ctx.db.lock(&name, Duration::from_millis(30)).await?.expect("free");
        tokio::time::sleep(Duration::from_millis(80)).await;
        let err = guard.release().await.unwrap_err();
        assert!(is_not_held(&err, &name), "{err:?}");
        Ok::<(), Error>(())
    }

    /// `extend` pushes the expiry back while the guard holds the lock.
    async fn extend_keeps_the_lock_past_its_first_ttl(ctx) {
        let name = ctx.key("long-job");
        let mut guard = ctx.db.lock(&name, Duration::from_millis(150)).await?.expect("free");
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(60)).await;
            guard.extend(Duration::from_millis(150)).await?;
        }
        // 180 ms after the lock was taken: held only thanks to extend.
        assert!(ctx.db.lock(&name, LONG).await?.is_none());
        assert_eq!(stored_token(&ctx.db, &name).await?.as_deref(), Some(guard.token()));
        guard.release().await?;
        Ok::<(), Error>(())
    }

    /// A held lock's extension and release each cost one round trip:
    /// the token is known from the acquisition, not read again. (The lock
    /// is taken twice: the first extension and release load their scripts
    /// into the lock's server.)
    async fn extending_and_releasing_a_held_lock_take_one_round_trip_each(ctx) {
        let name = ctx.key("cheap");
        let mut first = ctx.db.lock(&name, LONG).await?.expect("free");
        first.extend(LONG).await?;
        first.release().await?;
        let mut guard = ctx.db.lock(&name, LONG).await?.expect("free");
        let before = ctx.db.round_trips();
        guard.extend(LONG).await?;
        assert_eq!(ctx.db.round_trips() - before, 1, "extend");
        let before = ctx.db.round_trips();
        guard.release().await?;
        assert_eq!(ctx.db.round_trips() - before, 1, "release");
        assert_eq!(stored_token(&ctx.db, &name).await?, None);
        Ok::<(), Error>(())
    }

    /// Dropping a guard releases its lock (long before its ttl).
    async fn dropping_a_guard_releases_it(ctx) {
        let name = ctx.key("dropped");
        {
            let _guard = ctx.db.lock(&name, LONG).await?.expect("free");
        }
        let start = Instant::now();
        let again = ctx.db.lock_wait(&name, LONG, Duration::from_secs(5)).await?;
        assert!(start.elapsed() < Duration::from_secs(2), "waited {:?}", start.elapsed());
        again.release().await?;

        // A guard dropped by a panicking task releases too.
        let (db, n) = (ctx.db.clone(), name.clone());
        let task = tokio::spawn(async move {
            let _guard = db.lock(&n, LONG).await.ok().flatten().expect("free");
            panic!("work failed");
        });
        assert!(task.await.is_err());
        let again = ctx.db.lock_wait(&name, LONG, Duration::from_secs(5)).await?;
        again.release().await?;
        Ok::<(), Error>(())
    }

    /// `lock_wait` gives up after the timeout with `LockTimeout`, and gets
    /// the lock as soon as the holder releases it.
    async fn lock_wait_times_out_with_a_typed_error(ctx) {
        let name = ctx.key("busy");
        let holder = ctx.db.lock(&name, LONG).await?.expect("free");
        let start = Instant::now();
        let err = ctx
            .db
            .lock_wait(&name, LONG, Duration::from_millis(200))
            .await
            .unwrap_err();
        let elapsed = start.elapsed();
        match &err {
            Error::LockTimeout { name: n, waited } => {
                assert_eq!(n, &name);
                assert!(*waited >= Duration::from_millis(200), "waited {waited:?}");
            }
            other => panic!("expected LockTimeout, got {other:?}"),
        }
        assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
        assert!(err.to_string().contains("held by someone else"), "{err}");
        assert!(!err.is_connection());

        let with = ctx
            .db
            .with_lock(&name, LONG, Duration::from_millis(50), || async { 1 })
            .await;
        assert!(matches!(with, Err(Error::LockTimeout { .. })), "{with:?}");

        // The holder lets go after 100 ms; a patient waiter gets it then.
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            holder.release().await
        });
        let start = Instant::now();
        let got = ctx.db.lock_wait(&name, LONG, Duration::from_secs(10)).await?;
        assert!(start.elapsed() < Duration::from_secs(2));
        release.await.expect("task panicked")?;
        got.release().await?;

        // A zero timeout tries exactly once.
        let holder = ctx.db.lock(&name, LONG).await?.expect("free");
        let err = ctx.db.lock_wait(&name, LONG, Duration::ZERO).await.unwrap_err();
        assert!(matches!(err, Error::LockTimeout { .. }));
        holder.release().await?;
        Ok::<(), Error>(())
    }

    /// Work that outlives its ttl while another client takes the lock is
    /// reported by `with_lock` as `LockNotHeld`.
    async fn with_lock_reports_work_that_outlived_the_ttl(ctx) {
        let name = ctx.key("slow");
        let db = ctx.db.clone();
        let n = name.clone();
        let out = ctx
            .db
            .with_lock(&name, Duration::from_millis(50), Duration::from_secs(1), || async move {
                tokio::time::sleep(Duration::from_millis(120)).await;
                db.lock(&n, LONG).await
            })
            .await;
        match out {
            Err(Error::LockNotHeld { name: n }) => assert_eq!(n, name),
            other => panic!("expected LockNotHeld, got {other:?}"),
        }
        Ok::<(), Error>(())
    }
}

/// The same on the memory engine used from several threads at once (the
/// backend tests run every task on one thread).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_lock_is_exclusive_across_threads() -> Result<(), Error> {
    check_exclusive(&Db::memory(), "mt:counter", "memory, 4 threads").await
}

/// Outside any runtime, dropping a memory-engine guard still releases it
/// at once (the engine answers synchronously).
#[test]
fn dropping_a_memory_guard_outside_a_runtime_releases_it() {
    let db = Db::memory();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let guard = runtime
        .block_on(db.lock("x", LONG))
        .expect("lock")
        .expect("free");
    drop(runtime);
    drop(guard);
    let mut conn = db.engine().expect("memory").connection();
    assert_eq!(conn.execute(&[b"EXISTS", b"_lock:x"]), redis::Value::Int(0));
}
