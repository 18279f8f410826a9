//! `Db::with_replica_acks`: every request that writes is followed by WAIT
//! in the same round trip; too few acknowledgements are
//! `Error::NotReplicated`, with the write done.

use std::time::Duration;

use redis::Value;
use redmodel::{Db, Error};
use redmodel_suite::{backend_tests, redis_server_available, RedisServer};

backend_tests! {
    /// Asking for no replica changes nothing a caller sees: the same
    /// replies, one round trip per request; a write carries one command
    /// more (its WAIT), a read none.
    async fn zero_replica_acks_keep_replies_and_round_trips(ctx) {
        let db = ctx.db.with_replica_acks(0, Duration::from_millis(500));
        let (a, b) = (ctx.key("{acks}:a"), ctx.key("{acks}:b"));

        let (trips, sent) = (db.round_trips(), db.commands_sent());
        db.query::<()>(redis::cmd("SET").arg(&a).arg(41)).await?;
        assert_eq!((db.round_trips() - trips, db.commands_sent() - sent), (1, 2));

        let (trips, sent) = (db.round_trips(), db.commands_sent());
        let got: i64 = db.query(redis::cmd("GET").arg(&a)).await?;
        assert_eq!(got, 41);
        assert_eq!((db.round_trips() - trips, db.commands_sent() - sent), (1, 1));

        let mut pipe = redis::pipe();
        pipe.atomic().cmd("INCR").arg(&a).cmd("INCRBY").arg(&b).arg(5).cmd("GET").arg(&a);
        let (trips, sent) = (db.round_trips(), db.commands_sent());
        let got: (i64, i64, i64) = db.query_pipeline(&pipe).await?;
        assert_eq!(got, (42, 5, 42));
        assert_eq!((db.round_trips() - trips, db.commands_sent() - sent), (1, 6));

        let mut plain = redis::pipe();
        plain.cmd("INCR").arg(&a).cmd("GET").arg(&b);
        let got: (i64, i64) = db.query_pipeline(&plain).await?;
        assert_eq!(got, (43, 5));

        // A refused command is refused as without WAIT.
        let err = db.query::<()>(redis::cmd("LPUSH").arg(&a).arg(1)).await.unwrap_err();
        assert!(matches!(err, Error::WrongType { .. }), "{err:?}");

        // A transaction on a dedicated connection: its EXEC waits.
        db.raw_transaction(&[a.as_str()], 4, |tx| {
            let a = a.clone();
            async move {
                let n: i64 = tx.query(redis::cmd("GET").arg(&a)).await?;
                let mut pipe = redis::pipe();
                pipe.cmd("SET").arg(&a).arg(n * 2).ignore();
                Ok((pipe, ()))
            }
        })
        .await?;
        let got: i64 = ctx.db.query(redis::cmd("GET").arg(&a)).await?;
        assert_eq!(got, 86);
        Ok::<(), Error>(())
    }

    /// More replicas than there are (64: the engine and the test servers
    /// have none, a `REDIS_URL` server few): the write is done and the
    /// caller is told how many acknowledged it.
    async fn too_few_replicas_is_not_replicated_with_the_write_done(ctx) {
        let db = ctx.db.with_replica_acks(64, Duration::from_millis(30));
        let k = ctx.key("{acks}:k");
        let err = db.query::<()>(redis::cmd("SET").arg(&k).arg("v")).await.unwrap_err();
        assert!(matches!(err, Error::NotReplicated { acked, wanted: 64 } if acked < 64), "{err:?}");
        assert!(!err.is_transient());
        let got: Option<String> = ctx.db.query(redis::cmd("GET").arg(&k)).await?;
        assert_eq!(got.as_deref(), Some("v"));

        let mut pipe = redis::pipe();
        pipe.atomic().cmd("APPEND").arg(&k).arg("w");
        let err = db.query_pipeline::<Value>(&pipe).await.unwrap_err();
        assert!(matches!(err, Error::NotReplicated { .. }), "{err:?}");
        let got: Option<String> = ctx.db.query(redis::cmd("GET").arg(&k)).await?;
        assert_eq!(got.as_deref(), Some("vw"));

        // Reads are not held up.
        let got: Option<String> = db.query(redis::cmd("GET").arg(&k)).await?;
        assert_eq!(got.as_deref(), Some("vw"));
        Ok::<(), Error>(())
    }
}

backend_tests! {
    /// WAIT asked for more replicas than there are (64: the engine and the
    /// test servers have none, a `REDIS_URL` server few) waits its whole
    /// timeout, then answers how many acknowledged, as Redis 7.0 does;
    /// asked for none, or inside MULTI, it answers at once (inside MULTI,
    /// `WAIT 64 0` would otherwise wait forever). On the `Db` itself in
    /// process it waits without holding the thread.
    async fn wait_for_missing_replicas_waits_its_timeout(ctx) {
        let key = ctx.key("{acks}:w");
        let mut conn = ctx.db.dedicated_for(&key).await?;
        conn.query::<()>(redis::cmd("SET").arg(&key).arg(1)).await?;
        let started = std::time::Instant::now();
        let acked: i64 = conn.query(redis::cmd("WAIT").arg(64).arg(300)).await?;
        assert!(acked < 64, "{acked}");
        assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
        let acked: i64 = conn.query(redis::cmd("WAIT").arg(0).arg(0)).await?;
        assert!(acked < 64, "{acked}");
        let mut tx = redis::pipe();
        tx.atomic().cmd("SET").arg(&key).arg(2).ignore().cmd("WAIT").arg(64).arg(0);
        let (acked,): (i64,) = conn.query_pipeline(&tx).await?;
        assert!(acked < 64, "{acked}");
        let started = std::time::Instant::now();
        let acked: i64 = ctx.db.query(redis::cmd("WAIT").arg(64).arg(100)).await?;
        assert!(acked < 64, "{acked}");
        assert!(started.elapsed() >= Duration::from_millis(100), "{:?}", started.elapsed());
        Ok::<(), Error>(())
    }
}

backend_tests! {
    /// A WAIT that would wait forever (`WAIT 64 0`) is ended by CLIENT
    /// UNBLOCK from another connection: with the count of replicas that
    /// acknowledged, as on a timeout, or with UNBLOCKED's error (Redis
    /// 7.0.15's replies). The engine in process has no client registry
    /// to unblock from; its RESP server has.
    async fn client_unblock_ends_a_wait(ctx) {
        if ctx.is_memory() {
            eprintln!("note: client_unblock_ends_a_wait: no CLIENT UNBLOCK in process");
            return Ok(());
        }
        let key = ctx.key("{acks}:unblock");
        let mut other = ctx.db.dedicated_for(&key).await?;
        for (reason, errs) in [("TIMEOUT", false), ("ERROR", true)] {
            let mut waiting = ctx.db.dedicated_for(&key).await?;
            let id: i64 = waiting.query(redis::cmd("CLIENT").arg("ID")).await?;
            let wait = tokio::spawn(async move {
                waiting.query::<i64>(redis::cmd("WAIT").arg(64).arg(0)).await
            });
            let mut unblocked = 0;
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                unblocked = other.query(redis::cmd("CLIENT").arg("UNBLOCK").arg(id).arg(reason)).await?;
                if unblocked == 1 {
                    break;
                }
            }
            assert_eq!(unblocked, 1, "the WAIT was never blocked");
            let got = wait.await.expect("the waiting task");
            if errs {
                let err = got.unwrap_err();
                assert!(err.to_string().contains("UNBLOCKED"), "{err}");
            } else {
                assert!(got? < 64);
            }
        }
        Ok::<(), Error>(())
    }
}

backend_tests! {
    /// WAIT blocks its connection until it replies: a write that waits
    /// (here for 64 replicas, more than there are, so for its whole
    /// timeout) holds up no other request, of the `Db` or of the handle.
    /// On the shared connection the requests sent after it could not
    /// return before it (replies come in order), so they would all wait.
    async fn a_write_that_waits_holds_up_no_other_request(ctx) {
        let acked = ctx.db.with_replica_acks(64, Duration::from_secs(4));
        let (slow, other) = (ctx.key("{acks}:slow"), ctx.key("{acks}:other"));
        let write = {
            let (acked, slow) = (acked.clone(), slow.clone());
            tokio::spawn(async move { acked.query::<()>(redis::cmd("SET").arg(&slow).arg(1)).await })
        };
        // The write's request goes out first.
        tokio::time::sleep(Duration::from_millis(200)).await;
        ctx.db.query::<()>(redis::cmd("SET").arg(&other).arg(2)).await?;
        let read: Option<i64> = acked.query(redis::cmd("GET").arg(&other)).await?;
        assert_eq!(read, Some(2));
        assert!(!write.is_finished(), "the other requests waited for the write's WAIT");
        let err = write.await.expect("the write's task").unwrap_err();
        assert!(matches!(err, Error::NotReplicated { wanted: 64, .. }), "{err:?}");
        let got: Option<i64> = ctx.db.query(redis::cmd("GET").arg(&slow)).await?;
        assert_eq!(got, Some(1), "the write itself was done");
        Ok::<(), Error>(())
    }

    /// A pipeline of writes on two masters, which a cluster sends command
    /// by command: each write gets a WAIT of its own (on its own node),
    /// the replies keep their order. Elsewhere the pipeline is one request
    /// with one WAIT last.
    async fn writes_across_masters_each_wait_on_their_node(ctx) {
        let db = ctx.db.with_replica_acks(0, Duration::from_millis(500));
        // Two keys of this test's own, outside its prefix's hash tag (which
        // holds a cluster test's keys in one slot): one in the first third
        // of the slots, one in the last, so on two masters of a 3-master
        // cluster. Deleted at the end.
        let tag = ctx.prefix.trim_matches(|c| c == '{' || c == '}' || c == ':');
        let slot_of = |key: &str| redmodel::memory::key_slot(&[b"GET", key.as_bytes()]).unwrap_or(0);
        let pick = |wanted: &dyn Fn(u16) -> bool| {
            (0..)
                .map(|i| format!("{{{tag}-{i}}}:k"))
                .find(|key| wanted(slot_of(key)))
                .unwrap_or_default()
        };
        let (a, b) = (pick(&|slot| slot < 5000), pick(&|slot| slot > 11_500));
        let mut pipe = redis::pipe();
        pipe.cmd("SET").arg(&a).arg(1).cmd("INCR").arg(&a).cmd("SET").arg(&b).arg(5).cmd("GET").arg(&b);
        let sent = db.commands_sent();
        let got: (String, i64, String, i64) = db.query_pipeline(&pipe).await?;
        assert_eq!(got, ("OK".to_string(), 2, "OK".to_string(), 5));
        let waits = if ctx.backend == "cluster" { 3 } else { 1 };
        assert_eq!(db.commands_sent() - sent, 4 + waits);
        ctx.db.query::<()>(redis::cmd("DEL").arg(&a)).await?;
        ctx.db.query::<()>(redis::cmd("DEL").arg(&b)).await?;
        Ok::<(), Error>(())
    }
}

/// On a master with one replica, a write that returned `Ok` is already on
/// the replica (read there right after, every time); with the replica gone
/// the same writes fail with `NotReplicated` after the timeout, done on
/// the master. Without the WAIT the second half cannot fail, and the
/// first can (replication is asynchronous).
#[tokio::test]
async fn an_acknowledged_write_is_on_the_replica() -> Result<(), Error> {
    if !redis_server_available("an_acknowledged_write_is_on_the_replica") {
        return Ok(());
    }
    let master = RedisServer::start().expect("a master");
    let replica = RedisServer::builder()
        .config(format!("replicaof 127.0.0.1 {}", master.port()))
        .start()
        .expect("a replica");
    let mut on_replica = replica.client().get_multiplexed_async_connection().await?;
    let db = Db::connect(&master.url()).await?;
    // The replica's first sync: WAIT 1 succeeds once it is online.
    for _ in 0..100 {
        let acked: i64 = db.query(redis::cmd("WAIT").arg(1).arg(100)).await?;
        if acked == 1 {
            break;
        }
    }
    let acked_db = db.with_replica_acks(1, Duration::from_secs(2));
    for i in 0..200 {
        let key = format!("acks:{i}");
        acked_db
            .query::<()>(redis::cmd("SET").arg(&key).arg(i))
            .await?;
        let seen: Option<i64> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut on_replica)
            .await?;
        assert_eq!(seen, Some(i), "{key} acknowledged but not on the replica");
    }

    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async::<()>(&mut on_replica)
        .await?;
    let lonely = db.with_replica_acks(1, Duration::from_millis(100));
    let err = lonely
        .query::<()>(redis::cmd("SET").arg("acks:alone").arg(1))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotReplicated {
                acked: 0,
                wanted: 1
            }
        ),
        "{err:?}"
    );
    let on_master: Option<i64> = db.query(redis::cmd("GET").arg("acks:alone")).await?;
    assert_eq!(on_master, Some(1));
    Ok(())
}
