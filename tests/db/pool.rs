//! Guarded writes (here, inserts that claim a unique value: a read, then
//! one script that checks the read still holds and writes) open no
//! connection per write, and every request they send is counted by
//! `Db::round_trips` and `Db::commands_sent`, as the server counts them.

use redmodel::prelude::*;
use redmodel_suite::private_server_or_skip;

#[derive(Admin, Debug, Clone, PartialEq)]
struct Member {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    email: String,
}

fn member(id: u32) -> Member {
    Member {
        id,
        email: format!("m{id}@example.org"),
    }
}

/// A field of `INFO stats`.
async fn stat(info_db: &Db, name: &str) -> u64 {
    let info: String = info_db
        .query(redis::cmd("INFO").arg("stats"))
        .await
        .expect("INFO stats");
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in INFO stats"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_writes_reuse_pooled_connections_and_are_counted() {
    let Some(server) = private_server_or_skip("pool") else {
        return;
    };
    let db = Db::connect(&server.url()).await.expect("connect");
    // INFO through a Db of its own, so that it is not counted as ours.
    let info_db = Db::connect(&server.url()).await.expect("connect");

    // 1,000 inserts from 32 tasks at once: the pool opens at most its size.
    let connections_before = stat(&info_db, "total_connections_received").await;
    let tasks: Vec<_> = (0..32u32)
        .map(|t| {
            let db = db.clone();
            tokio::spawn(async move {
                for id in (t..1000).step_by(32) {
                    member(id).insert(&db).await?;
                }
                Ok::<(), redmodel::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task").expect("insert");
    }
    let opened = stat(&info_db, "total_connections_received").await - connections_before;
    assert!(
        opened <= 16,
        "1,000 unique-field inserts opened {opened} connections; the pool holds 16"
    );
    let stored: u64 = info_db.query(&redis::cmd("DBSIZE")).await.expect("DBSIZE");
    assert_eq!(stored, 2000, "1,000 members and their unique entries");

    // One task, in steady state: no new connection, and the server
    // processed exactly the commands the Db counted.
    let connections_before = stat(&info_db, "total_connections_received").await;
    let commands_before = stat(&info_db, "total_commands_processed").await;
    let (trips_before, sent_before) = (db.round_trips(), db.commands_sent());
    for id in 100_000..100_100 {
        member(id).insert(&db).await.expect("insert");
    }
    let trips = db.round_trips() - trips_before;
    let sent = db.commands_sent() - sent_before;
    // The INFO that reads the total counts itself once processed.
    let processed = stat(&info_db, "total_commands_processed").await - commands_before - 1;
    assert_eq!(
        stat(&info_db, "total_connections_received").await,
        connections_before,
        "no connection opened in steady state"
    );
    // Each insert of a new member: one EVALSHA of the checked write, its
    // reads guessed (a new object, a free value) and checked by the
    // script; the server also counts the commands the script calls (the
    // reads, the writes, the reads again).
    assert_eq!(trips, 100, "round trips of 100 guarded inserts");
    assert_eq!(sent, 100, "commands sent by 100 guarded inserts");
    let in_scripts = processed - sent;
    assert_eq!(
        in_scripts % 100,
        0,
        "every insert's script calls as many commands ({processed} processed, {sent} sent)"
    );
}

/// `(round trips, EVAL calls, EVALSHA calls)` of `insert` of `m`, the
/// calls as the server counts them (`INFO commandstats`, read through
/// `info_db`).
async fn script_calls(db: &Db, info_db: &Db, m: &Member) -> (u64, u64, u64) {
    let calls = redmodel_suite::command_calls;
    let info = |db: &Db| {
        let db = db.clone();
        async move {
            let info: String = db
                .query(redis::cmd("INFO").arg("commandstats"))
                .await
                .expect("INFO commandstats");
            (calls(&info, "eval"), calls(&info, "evalsha"))
        }
    };
    let (eval, evalsha) = info(info_db).await;
    let trips = db.round_trips();
    m.insert(db).await.expect("insert");
    let trips = db.round_trips() - trips;
    let (eval_after, evalsha_after) = info(info_db).await;
    (trips, eval_after - eval, evalsha_after - evalsha)
}

/// A script goes with its text (EVAL) the first time a `Db` runs it, then
/// by its SHA1 (EVALSHA); a server that lost it (SCRIPT FLUSH, a restart)
/// answers NOSCRIPT and gets the text again. No write pays for a SCRIPT
/// LOAD of its own.
async fn scripts_go_with_their_text_once(db: &Db, info_db: &Db) {
    // A unique insert runs one script (its reads guessed, none known).
    assert_eq!(script_calls(db, info_db, &member(1)).await, (1, 1, 0));
    assert_eq!(script_calls(db, info_db, &member(2)).await, (1, 0, 1));
    info_db
        .query::<()>(redis::cmd("SCRIPT").arg("FLUSH"))
        .await
        .expect("SCRIPT FLUSH");
    assert_eq!(script_calls(db, info_db, &member(3)).await, (2, 1, 1));
    assert_eq!(script_calls(db, info_db, &member(4)).await, (1, 0, 1));
    // The data is whole all along.
    for id in 1..=4 {
        assert_eq!(Member::load(db, id).await.expect("load"), Some(member(id)));
    }
}

/// In process the engine runs a checked write without its script
/// (`Engine::atomically`): one exchange, no EVAL or EVALSHA, even after
/// SCRIPT FLUSH.
#[tokio::test]
async fn in_process_a_checked_write_runs_no_script() {
    let db = Db::memory();
    assert_eq!(script_calls(&db, &db, &member(1)).await, (1, 0, 0));
    db.query::<()>(redis::cmd("SCRIPT").arg("FLUSH"))
        .await
        .expect("SCRIPT FLUSH");
    assert_eq!(script_calls(&db, &db, &member(2)).await, (1, 0, 0));
    for id in 1..=2 {
        assert_eq!(Member::load(&db, id).await.expect("load"), Some(member(id)));
    }
}

#[tokio::test]
async fn scripts_go_with_their_text_once_on_redis() {
    let Some(server) = private_server_or_skip("scripts sent once") else {
        return;
    };
    let db = Db::connect(&server.url()).await.expect("connect");
    let info_db = Db::connect(&server.url()).await.expect("connect");
    scripts_go_with_their_text_once(&db, &info_db).await;
}
