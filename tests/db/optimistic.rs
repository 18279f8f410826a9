//! Optimistic read-modify-write (`Db::transaction`,
//! `DedicatedConnection::transaction`) on every backend: concurrent
//! transfers that must lose no update, and each way an attempt can end.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use redmodel::{Db, Error, OptimisticConnection};
use redmodel_suite::{backend_tests, Rng};

const ACCOUNTS: usize = 64;
const START_BALANCE: i64 = 1_000;
/// As many tasks as a `Db` pools connections (WATCH needs one each):
/// more would only queue for them, a queue a loaded machine stretches
/// past the pool's wait (`Error::Busy`), which is not what these tests
/// check. Sixteen tasks on 64 accounts collide on most transfers.
const TASKS: usize = 16;
const TRANSFERS: usize = 100;
const AMOUNT: i64 = 10;

fn account(ctx_prefix: &str, i: usize) -> String {
    format!("{ctx_prefix}acct:{i}")
}

async fn balance(db: &Db, key: &str) -> Result<i64, Error> {
    Ok(db
        .query::<Option<i64>>(redis::cmd("HGET").arg(key).arg("balance"))
        .await?
        .unwrap_or(0))
}

async fn hset(
    db: &Db,
    key: &str,
    field: &str,
    value: impl redis::ToRedisArgs,
) -> Result<(), Error> {
    db.query(redis::cmd("HSET").arg(key).arg(field).arg(value))
        .await
}

/// One task's transfers: each reads both balances and writes the new
/// ones as absolute values (HSET, not HINCRBY), so that without WATCH a
/// concurrent transfer would be overwritten. Returns the (from, to) pairs
/// that committed and the number of attempts that had to be retried.
async fn transfers(
    db: Db,
    prefix: String,
    task: usize,
) -> Result<(Vec<(usize, usize)>, u32), Error> {
    let mut conn = OptimisticConnection::from(db.dedicated().await?);
    let log = format!("{prefix}log");
    let mut done = Vec::new();
    let mut retries = 0;
    let mut rng = Rng::for_task(task);
    for n in 0..TRANSFERS {
        let from = rng.below(ACCOUNTS);
        let to = (from + 1 + rng.below(ACCOUNTS - 1)) % ACCOUNTS;
        let (kf, kt) = (account(&prefix, from), account(&prefix, to));
        let (kf, kt, log) = (&kf, &kt, &log);
        let outcome = conn
            .raw_transaction(&[kf, kt], 10_000, |tx| async move {
                let mut reads = redis::pipe();
                reads.cmd("HGET").arg(kf).arg("balance");
                // Give the other tasks a chance to run between the reads
                // and the EXEC (the memory engine answers without yielding).
                tokio::task::yield_now().await;
                reads.cmd("HGET").arg(kt).arg("balance");
                let (a, b): (i64, i64) = tx.query_pipeline(&reads).await?;
                tokio::task::yield_now().await;
                let mut writes = redis::pipe();
                if a < AMOUNT {
                    return Ok((writes, (false, tx.attempt())));
                }
                writes
                    .cmd("HSET")
                    .arg(kf)
                    .arg("balance")
                    .arg(a - AMOUNT)
                    .cmd("HSET")
                    .arg(kt)
                    .arg("balance")
                    .arg(b + AMOUNT)
                    .cmd("RPUSH")
                    .arg(log)
                    .arg(format!("{task}:{n}:{from}:{to}"));
                Ok((writes, (true, tx.attempt())))
            })
            .await;
        match outcome {
            Ok((moved, attempts)) => {
                retries += attempts - 1;
                if moved {
                    done.push((from, to));
                }
            }
            Err(Error::Conflict { attempts, .. }) => retries += attempts,
            Err(e) => return Err(e),
        }
    }
    Ok((done, retries))
}

/// Runs the transfers of [`TASKS`] tasks and checks that no update was
/// lost: the total is unchanged, every committed transfer is applied
/// exactly once (the log has one entry per success) and each balance is
/// what the committed transfers make it.
async fn check_transfers(db: &Db, prefix: &str, backend: &str) -> Result<(), Error> {
    let mut init = redis::pipe();
    for i in 0..ACCOUNTS {
        init.cmd("HSET")
            .arg(account(prefix, i))
            .arg("balance")
            .arg(START_BALANCE);
    }
    db.query_pipeline::<()>(&init).await?;

    let mut tasks = Vec::new();
    for task in 0..TASKS {
        tasks.push(tokio::spawn(transfers(
            db.clone(),
            prefix.to_string(),
            task,
        )));
    }
    let mut expected = vec![START_BALANCE; ACCOUNTS];
    let mut committed = 0;
    let mut retries = 0;
    for task in tasks {
        let (done, r) = task.await.expect("task panicked")?;
        retries += r;
        committed += done.len();
        for (from, to) in done {
            expected[from] -= AMOUNT;
            expected[to] += AMOUNT;
        }
    }
    let mut actual = Vec::new();
    for i in 0..ACCOUNTS {
        actual.push(balance(db, &account(prefix, i)).await?);
    }
    let total: i64 = actual.iter().sum();
    assert_eq!(
        total,
        START_BALANCE * ACCOUNTS as i64,
        "total changed on {}",
        backend
    );
    let logged: usize = db
        .query(redis::cmd("LLEN").arg(format!("{prefix}log")))
        .await?;
    assert_eq!(logged, committed, "committed vs applied on {}", backend);
    assert_eq!(actual, expected, "balances on {}", backend);
    assert!(
        committed > TASKS * TRANSFERS / 2,
        "only {committed} transfers committed"
    );
    // The test means something only if transactions really collided.
    assert!(
        retries > 0,
        "no transaction was ever retried on {}",
        backend
    );
    eprintln!("{}: {committed} transfers, {retries} retries", backend);
    Ok(())
}

backend_tests! {
    /// 16 tasks x 100 transfers between 64 accounts lose no update and
    /// apply none twice.
    async fn concurrent_transfers_lose_no_update(ctx) {
        check_transfers(&ctx.db, &ctx.prefix, ctx.backend).await
    }

    /// A watched key changed by another client during every attempt: each
    /// EXEC writes nothing, and after `max_attempts` the call fails with
    /// `Conflict`.
    async fn a_key_changed_on_every_attempt_gives_conflict(ctx) {
        let key = ctx.key("hot");
        let calls = AtomicU32::new(0);
        let (key, calls, db) = (&key, &calls, &ctx.db);
        let out = ctx
            .db
            .raw_transaction(&[key], 3, |tx| async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let n: Option<i64> = tx.query(redis::cmd("HGET").arg(key).arg("n")).await?;
                // Another client writes the key between the read and EXEC.
                hset(db, key, "other", tx.attempt()).await?;
                let mut writes = redis::pipe();
                writes.cmd("HSET").arg(key).arg("n").arg(n.unwrap_or(0) + 1);
                Ok((writes, ()))
            })
            .await;
        match out {
            Err(Error::Conflict { attempts, .. }) => assert_eq!(attempts, 3),
            other => panic!("expected Conflict, got {other:?}"),
        }
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let n: Option<i64> = ctx.db.query(redis::cmd("HGET").arg(key).arg("n")).await?;
        assert_eq!(n, None, "an aborted EXEC wrote nothing");
        let err = Error::Conflict { attempts: 3, key: None };
        assert!(err.to_string().contains("3 attempt"), "{err}");

        // Zero attempts means one.
        let out = ctx.db.raw_transaction(&[key], 0, |tx| async move { Ok((redis::pipe(), tx.attempt())) }).await?;
        assert_eq!(out, 1);
        Ok::<(), Error>(())
    }

    /// A change during the first attempt is retried, and the value returned
    /// is the one of the attempt that committed.
    async fn a_conflict_is_retried_with_fresh_values(ctx) {
        let key = ctx.key("counter");
        hset(&ctx.db, &key, "n", 10).await?;
        let (key, db) = (&key, &ctx.db);
        let (seen, attempt) = ctx
            .db
            .raw_transaction(&[key], 5, |tx| async move {
                let n: i64 = tx.query(redis::cmd("HGET").arg(key).arg("n")).await?;
                if tx.attempt() == 1 {
                    hset(db, key, "n", 100).await?;
                }
                let mut writes = redis::pipe();
                writes.cmd("HSET").arg(key).arg("n").arg(n + 1);
                Ok((writes, (n, tx.attempt())))
            })
            .await?;
        assert_eq!((seen, attempt), (100, 2));
        assert_eq!(balance_of(&ctx.db, key, "n").await?, 101);
        Ok::<(), Error>(())
    }

    /// A read-only step (empty pipeline) still ends in EXEC, so what it
    /// returns was read from one consistent state.
    async fn a_read_only_step_returns_a_consistent_read(ctx) {
        let (a, b) = (ctx.key("a"), ctx.key("b"));
        hset(&ctx.db, &a, "v", 1).await?;
        hset(&ctx.db, &b, "v", 1).await?;
        let (a, b, db) = (&a, &b, &ctx.db);
        let (x, y, attempt) = ctx
            .db
            .raw_transaction(&[a, b], 5, |tx| async move {
                let x: i64 = tx.query(redis::cmd("HGET").arg(a).arg("v")).await?;
                if tx.attempt() == 1 {
                    // Another client moves both between our two reads.
                    hset(db, a, "v", 2).await?;
                    hset(db, b, "v", 2).await?;
                }
                let y: i64 = tx.query(redis::cmd("HGET").arg(b).arg("v")).await?;
                Ok((redis::pipe(), (x, y, tx.attempt())))
            })
            .await?;
        assert_eq!((x, y, attempt), (2, 2, 2), "the torn read (1, 2) was retried");
        Ok::<(), Error>(())
    }

    /// Keys watched during the step (found by a first read) are checked too.
    async fn keys_watched_during_the_step_are_checked(ctx) {
        let (index, target) = (ctx.key("index"), ctx.key("target"));
        hset(&ctx.db, &index, "current", &target).await?;
        let (index, db) = (&index, &ctx.db);
        let attempts = ctx
            .db
            .raw_transaction(&[index], 5, |tx| async move {
                let t: String = tx.query(redis::cmd("HGET").arg(index).arg("current")).await?;
                tx.watch(&t).await?;
                let v: Option<i64> = tx.query(redis::cmd("HGET").arg(&t).arg("v")).await?;
                if tx.attempt() == 1 {
                    hset(db, &t, "v", 7).await?;
                }
                let mut writes = redis::pipe();
                writes.cmd("HSET").arg(&t).arg("v").arg(v.unwrap_or(0) * 10);
                Ok((writes, tx.attempt()))
            })
            .await?;
        assert_eq!(attempts, 2);
        assert_eq!(balance_of(&ctx.db, &target, "v").await?, 70);
        Ok::<(), Error>(())
    }

    /// A step's error ends the transaction at once, with nothing written,
    /// and leaves no WATCH behind on a reused connection.
    async fn a_step_error_ends_it_and_leaves_no_watch(ctx) {
        let key = ctx.key("k");
        let mut conn = OptimisticConnection::from(ctx.db.dedicated().await?);
        let calls = AtomicU32::new(0);
        let calls = &calls;
        let out: Result<(), Error> = conn
            .raw_transaction(&[&key], 5, |_tx| async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(Error::Misuse("the step gave up".into()))
            })
            .await;
        assert!(matches!(out, Err(Error::Misuse(ref m)) if m == "the step gave up"), "{out:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Had the WATCH on `key` survived, this change would abort the next
        // transaction on the same connection.
        hset(&ctx.db, &key, "v", 1).await?;
        let other = ctx.key("other");
        let other = &other;
        let attempt = conn
            .raw_transaction(&[other], 1, |tx| async move {
                let mut writes = redis::pipe();
                writes.cmd("HSET").arg(other).arg("v").arg(1);
                Ok((writes, tx.attempt()))
            })
            .await?;
        assert_eq!(attempt, 1);
        Ok::<(), Error>(())
    }

    /// A command of the pipeline refused by the server fails the call (no
    /// retry); as in Redis, the other commands were applied.
    async fn a_refused_write_fails_without_retry(ctx) {
        let (list, hash) = (ctx.key("list"), ctx.key("hash"));
        ctx.db.query::<()>(redis::cmd("RPUSH").arg(&list).arg("x")).await?;
        let calls = AtomicU32::new(0);
        let (list, hash, calls) = (&list, &hash, &calls);
        let out = ctx
            .db
            .raw_transaction(&[list], 5, |_tx| async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let mut writes = redis::pipe();
                writes
                    .cmd("HSET").arg(hash).arg("f").arg(1)
                    .cmd("HSET").arg(list).arg("f").arg(1);
                Ok((writes, ()))
            })
            .await;
        assert!(out.is_err(), "{out:?}");
        assert!(!out.as_ref().is_err_and(Error::is_connection));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(balance_of(&ctx.db, hash, "f").await?, 1);
        Ok::<(), Error>(())
    }

    /// Reading with an atomic pipeline would end the WATCH early: refused.
    async fn an_atomic_read_pipeline_is_refused(ctx) {
        let key = ctx.key("k");
        let key = &key;
        let out = ctx
            .db
            .raw_transaction(&[&key], 5, |tx| async move {
                let mut reads = redis::pipe();
                reads.atomic().cmd("HGET").arg(key).arg("v");
                let v: (Option<i64>,) = tx.query_pipeline(&reads).await?;
                Ok((redis::pipe(), v))
            })
            .await;
        match out {
            Err(Error::Misuse(why)) => assert!(why.contains("plain pipeline"), "{why}"),
            other => panic!("expected Misuse, got {other:?}"),
        }
        Ok::<(), Error>(())
    }

    /// A watched key that expires before EXEC aborts it (Redis 7's rule,
    /// which the memory engine follows).
    async fn a_watched_key_expiring_aborts_the_attempt(ctx) {
        let key = ctx.key("ephemeral");
        hset(&ctx.db, &key, "v", 1).await?;
        ctx.db.query::<()>(redis::cmd("PEXPIRE").arg(&key).arg(60)).await?;
        let key = &key;
        let attempts = ctx
            .db
            .raw_transaction(&[&key], 5, |tx| async move {
                if tx.attempt() == 1 {
                    tokio::time::sleep(std::time::Duration::from_millis(120)).await;
                }
                let mut writes = redis::pipe();
                writes.cmd("HSET").arg(key).arg("v").arg(2);
                Ok((writes, tx.attempt()))
            })
            .await?;
        assert_eq!(attempts, 2);
        Ok::<(), Error>(())
    }
}

/// The same transfers with the memory engine used from several threads at
/// once (the backend tests run every task on one thread).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_transfers_on_several_threads_lose_no_update_on_the_memory_engine(
) -> Result<(), Error> {
    check_transfers(&Db::memory(), "mt:", "memory, 4 threads").await
}

/// A `RawTransaction` kept past its step cannot run commands any more.
#[tokio::test]
async fn a_transaction_kept_past_its_step_is_refused() {
    let db = Db::memory();
    let kept = Mutex::new(None);
    let kept_ref = &kept;
    db.raw_transaction(&["k"], 1, |tx| async move {
        *kept_ref.lock().expect("not poisoned") = Some(tx);
        Ok((redis::pipe(), ()))
    })
    .await
    .expect("commits");
    let stale = kept.lock().expect("not poisoned").take().expect("kept");
    let out: Result<Option<String>, Error> =
        stale.query(redis::cmd("HGET").arg("k").arg("f")).await;
    match out {
        Err(Error::Misuse(why)) => assert!(why.contains("already returned"), "{why}"),
        other => panic!("expected Misuse, got {other:?}"),
    }
}

async fn balance_of(db: &Db, key: &str, field: &str) -> Result<i64, Error> {
    db.query(redis::cmd("HGET").arg(key).arg(field)).await
}
