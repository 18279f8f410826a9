//! Unique lookup (seed 001): find an object by a unique field, refuse a
//! taken value with the holder named and nothing stored, also when 50
//! tasks race for one value; updates release the old value, deletes leave
//! nothing behind, and entries of gone objects are pruned.

use std::sync::Arc;

use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

/// `user:1` = {name, email}; `user:_unique:name:ken%20thompson` = [`user:1`].
#[derive(Admin, Debug, Clone, PartialEq)]
struct User {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    name: String,
    #[redmodel(unique)]
    email: Option<String>,
    city: String,
}

fn user(id: u32, name: &str) -> User {
    User {
        id,
        name: name.into(),
        email: None,
        city: "Murray Hill".into(),
    }
}

/// The holder a unique entry names: the entry is a list of one element.
async fn get(db: &Db, key: &str) -> Option<String> {
    let len: u64 = db.query(redis::cmd("LLEN").arg(key)).await.unwrap();
    assert!(len <= 1, "{key} names {len} holders");
    db.query(redis::cmd("LINDEX").arg(key).arg(0))
        .await
        .unwrap()
}

async fn exists(db: &Db, key: &str) -> bool {
    db.query(redis::cmd("EXISTS").arg(key)).await.unwrap()
}

fn assert_unique_error(err: Error, value: &str, holder: &str) {
    match err {
        Error::Unique {
            model,
            field,
            value: v,
            holder: h,
        } => {
            assert_eq!(model, "user");
            assert_eq!(field, "name");
            assert_eq!(v, value);
            assert_eq!(h, holder);
        }
        other => panic!("expected Error::Unique, got {other:?}"),
    }
}

backend_tests! {
    /// The seed's `set "login:ken thompson:id" 1`, kept by the library.
    exclusive async fn find_by_a_unique_field(ctx) {
        let db = &ctx.db;
        user(1, "ken thompson").insert(db).await?;
        user(2, "dennis ritchie").insert(db).await?;

        let key = User::NAME_UNIQUE.key("ken thompson")?.expect("a value");
        assert_eq!(key, "user:_unique:name:ken%20thompson");
        assert_eq!(get(db, &key).await.as_deref(), Some("user:1"));

        assert_eq!(User::NAME_UNIQUE.find(db, "ken thompson").await?, Some(user(1, "ken thompson")));
        assert_eq!(User::NAME_UNIQUE.holder(db, "dennis ritchie").await?, Some(User::at(2)));
        assert_eq!(User::NAME_UNIQUE.find(db, "Joe Armstrong").await?, None);
        assert_eq!(User::NAME_UNIQUE.holder(db, "Joe Armstrong").await?, None);
        // An Option field with None holds no value.
        assert_eq!(User::EMAIL_UNIQUE.key(None::<String>)?, None);
        assert_eq!(User::EMAIL_UNIQUE.find(db, None::<String>).await?, None);
        Ok::<(), Error>(())
    }

    /// `find`, `find_with_handle` and `holder` are one round trip (one
    /// SORT reading the entry, the holder's key and its fields), hit or
    /// miss; only a dead entry costs more, to prune it.
    exclusive async fn find_is_one_round_trip(ctx) {
        let db = &ctx.db;
        // In the cluster layout SORT cannot read another slot's hash: a
        // held value costs a second round trip there (a free one does not).
        let held = if db.key_layout() == redmodel::KeyLayout::Cluster { 2 } else { 1 };
        let mut ken = user(1, "ken");
        ken.email = Some("ken@bell-labs.com".into());
        ken.insert(db).await?;
        let before = db.round_trips();
        assert_eq!(User::NAME_UNIQUE.find(db, "ken").await?, Some(ken.clone()));
        assert_eq!(db.round_trips() - before, held, "find of a held value");

        let before = db.round_trips();
        let (handle, found) = User::EMAIL_UNIQUE
            .find_with_handle(db, "ken@bell-labs.com")
            .await?
            .expect("found");
        assert_eq!((handle, found), (User::at(1), ken.clone()));
        assert_eq!(db.round_trips() - before, held, "find_with_handle");

        let before = db.round_trips();
        assert_eq!(User::NAME_UNIQUE.holder(db, "ken").await?, Some(User::at(1)));
        assert_eq!(db.round_trips() - before, held, "holder");

        let before = db.round_trips();
        assert_eq!(User::NAME_UNIQUE.find(db, "nobody").await?, None);
        assert_eq!(db.round_trips() - before, 1, "find of a free value");

        // A dead entry: the read is still one SORT, then the prune's
        // reads and its checked script.
        db.query::<()>(redis::cmd("DEL").arg("user:1")).await?;
        let before = db.round_trips();
        assert_eq!(User::NAME_UNIQUE.find(db, "ken").await?, None);
        // In the cluster layout: the two reads, then the entry's fenced
        // delete (the fence, the check of the holder, the delete). In
        // process, in the plain layout, the compare-and-delete is one
        // exchange with the engine: its reads run under the lock.
        let in_process = db.engine().is_some();
        let dead = match (held, in_process) {
            (1, true) => 2,
            (1, false) => 3,
            _ => 5,
        };
        assert_eq!(db.round_trips() - before, dead, "the read and prune of a dead entry");
        assert!(!exists(db, "user:_unique:name:ken").await, "pruned");
        Ok::<(), Error>(())
    }

    /// The holder's fields come back from the same SORT: an object whose
    /// optional fields are all absent is found whole, and a holder whose
    /// hash is gone, or that is not a hash, is not a holder.
    exclusive async fn find_decodes_absent_fields_and_refuses_non_holders(ctx) {
        let db = &ctx.db;
        user(1, "ken").insert(db).await?;
        // Another program strips every field but the unique one.
        db.query::<()>(redis::cmd("HDEL").arg("user:1").arg("city").arg("_count")).await?;
        let err = User::NAME_UNIQUE.find(db, "ken").await.unwrap_err();
        assert!(err.to_string().contains("city"), "{err}");
        assert_eq!(User::NAME_UNIQUE.holder(db, "ken").await?, Some(User::at(1)));

        // The entry names a key that is a string, not a hash: not a holder,
        // and the prune (which sees WRONGTYPE) leaves the entry alone.
        db.query::<()>(redis::cmd("DEL").arg("user:1")).await?;
        db.query::<()>(redis::cmd("SET").arg("user:1").arg("x")).await?;
        assert_eq!(User::NAME_UNIQUE.find(db, "ken").await?, None);
        assert_eq!(User::NAME_UNIQUE.holder(db, "ken").await?, None);
        Ok::<(), Error>(())
    }

    /// A second object claiming a taken value is refused, naming the
    /// holder, and nothing of it is stored; re-writing the holder is fine.
    exclusive async fn a_taken_value_is_refused(ctx) {
        let db = &ctx.db;
        user(1, "ken").insert(db).await?;
        let err = user(2, "ken").insert(db).await.unwrap_err();
        assert_unique_error(err, "ken", "user:1");
        assert!(!exists(db, "user:2").await, "nothing of the refused insert");
        assert!(err_text_names_holder(db).await);

        // Through set and set_many too, leaving the object as it was.
        user(2, "dennis").insert(db).await?;
        let err = User::at(2).set(db, User::NAME, "ken").await.unwrap_err();
        assert_unique_error(err, "ken", "user:1");
        let err = User::at(2)
            .set_many(db, [User::NAME.to("ken"), User::CITY.to("Berkeley")])
            .await
            .unwrap_err();
        assert_unique_error(err, "ken", "user:1");
        assert_eq!(User::load(db, 2).await?, Some(user(2, "dennis")));
        assert_eq!(get(db, "user:_unique:name:dennis").await.as_deref(), Some("user:2"));

        // The holder may write its own value again.
        user(1, "ken").insert(db).await?;
        User::at(1).set(db, User::NAME, "ken").await?;
        assert_eq!(User::NAME_UNIQUE.holder(db, "ken").await?, Some(User::at(1)));
        // A unique field cannot be incremented: nothing to claim before.
        Ok::<(), Error>(())
    }

    /// A value taken through another handle is refused though this `Db`,
    /// which never saw it, guesses it free: the script finds the entry's
    /// key, reads its holder and replies it instead of writing.
    exclusive async fn a_value_taken_elsewhere_is_refused(ctx) {
        let db = &ctx.db;
        let other = ctx.another_db().await;
        user(2, "ken").insert(&other).await?;
        let err = user(1, "ken").insert(db).await.unwrap_err();
        assert_unique_error(err, "ken", "user:2");
        assert!(!exists(db, "user:1").await, "nothing of the refused insert");
        user(1, "rob").insert(db).await?;
        let err = User::at(1).set(db, User::NAME, "ken").await.unwrap_err();
        assert_unique_error(err, "ken", "user:2");
        assert_eq!(get(db, "user:_unique:name:ken").await.as_deref(), Some("user:2"));
        assert_eq!(get(db, "user:_unique:name:rob").await.as_deref(), Some("user:1"));
        Ok::<(), Error>(())
    }

    /// Changing the value releases the old one (its entry is gone), which
    /// another object may then claim; two unique fields are independent.
    exclusive async fn updates_move_the_entry(ctx) {
        let db = &ctx.db;
        user(1, "ken").insert(db).await?;
        User::at(1).set(db, User::NAME, "ken thompson").await?;
        assert!(!exists(db, "user:_unique:name:ken").await, "the old entry is gone");
        assert_eq!(get(db, "user:_unique:name:ken%20thompson").await.as_deref(), Some("user:1"));
        assert_eq!(User::NAME_UNIQUE.find(db, "ken").await?, None);

        user(2, "ken").insert(db).await?;
        assert_eq!(User::NAME_UNIQUE.holder(db, "ken").await?, Some(User::at(2)));

        // A full write with a new value, and an Option field set and cleared.
        let mut u1 = user(1, "kt");
        u1.email = Some("ken@bell-labs.com".into());
        u1.insert(db).await?;
        assert!(!exists(db, "user:_unique:name:ken%20thompson").await);
        assert_eq!(User::EMAIL_UNIQUE.holder(db, "ken@bell-labs.com").await?, Some(User::at(1)));
        User::at(1).set(db, User::EMAIL, None).await?;
        assert!(!exists(db, "user:_unique:email:ken@bell-labs.com").await);
        assert_eq!(User::EMAIL_UNIQUE.find(db, "ken@bell-labs.com").await?, None);
        Ok::<(), Error>(())
    }

    /// A `Db` remembers what its unique writes read (the old value, the
    /// entries' holders) and sends the next write at once, guessing from
    /// that: an insert of a new object, or a change of a value this `Db`
    /// wrote, is one round trip. The script checks every guess, so what
    /// another handle changed meanwhile costs a round trip more (it
    /// replies the actual values), never a wrong entry. In process, in the
    /// plain layout, the engine runs the whole write at once under its
    /// lock, reads included: nothing to guess, one exchange every time.
    exclusive async fn unique_writes_guess_their_reads_and_check_them(ctx) {
        let db = &ctx.db;
        let plain = db.key_layout() == redmodel::KeyLayout::Plain;
        let at_once = plain && db.engine().is_some();
        user(9, "warm-up").insert(db).await?; // loads the script
        if !plain {
            // Each master learns a script from its first EVALSHA's
            // NOSCRIPT (one round trip more): the entries below, on their
            // masters, first.
            user(1, "ken").insert(db).await?;
            for name in ["ken thompson", "rob"] {
                User::at(1).set(db, User::NAME, name).await?;
            }
            User::delete(db, 1).await?;
        }
        let cost = |before: u64| db.round_trips() - before;

        let before = db.round_trips();
        user(1, "ken").insert(db).await?;
        // In the cluster layout, where the entry and the object are in two
        // slots: the claim of the free value (one script), the object's
        // write, the claim's confirmation (one script).
        assert_eq!(cost(before), if plain { 1 } else { 3 }, "insert of a new object");
        let before = db.round_trips();
        User::at(1).set(db, User::NAME, "ken thompson").await?;
        // In the cluster layout: the three above and the release of the
        // old value (read the entry, read the field, its checked script), the
        // release beside the confirmation (requests, not round trips).
        assert_eq!(cost(before), if plain { 1 } else { 6 }, "change of a value this Db wrote");

        // Another process renames user 1: this Db's memory is stale.
        let other = ctx.another_db().await;
        User::at(1).set(&other, User::NAME, "dmr").await?;
        let before = db.round_trips();
        User::at(1).set(db, User::NAME, "rob").await?;
        // The guessed write (refused by its script, which replies the
        // actual name), the holder of that name's entry, the write. The
        // cluster layout guesses nothing: as any change.
        let stale = match (at_once, plain) {
            (true, _) => 1,
            (false, true) => 3,
            (false, false) => 6,
        };
        assert_eq!(cost(before), stale, "change after another handle's");
        for gone in ["ken", "ken%20thompson", "dmr"] {
            let entry = format!("user:_unique:name:{gone}");
            assert!(!exists(db, &entry).await, "{entry} left behind");
        }
        assert_eq!(get(db, "user:_unique:name:rob").await.as_deref(), Some("user:1"));
        assert_eq!(User::load(db, 1).await?.map(|u| u.name), Some("rob".to_string()));
        Ok::<(), Error>(())
    }

    /// A refusal ends a write without a script to check what it rests on,
    /// so it is never decided on what the `Db` remembers: here this `Db`
    /// last saw "x" held by user 2, another handle has freed it since, and
    /// the claim succeeds.
    exclusive async fn a_refusal_never_rests_on_a_remembered_holder(ctx) {
        let db = &ctx.db;
        user(1, "a").insert(db).await?;
        user(2, "x").insert(db).await?;
        let other = ctx.another_db().await;
        User::at(2).set(&other, User::NAME, "y").await?;
        User::at(1).set(db, User::NAME, "x").await?;
        assert_eq!(User::NAME_UNIQUE.holder(db, "x").await?, Some(User::at(1)));
        assert_eq!(User::NAME_UNIQUE.holder(db, "y").await?, Some(User::at(2)));
        Ok::<(), Error>(())
    }

    /// Deleting the object deletes its entries, and frees the values.
    exclusive async fn delete_leaves_nothing(ctx) {
        let db = &ctx.db;
        let mut u = user(1, "ken");
        u.email = Some("k@x".into());
        u.insert(db).await?;
        assert!(User::delete(db, 1).await?);
        let keys: Vec<String> = db.query(redis::cmd("KEYS").arg("*")).await?;
        assert!(keys.is_empty(), "left behind: {keys:?}");
        assert!(!User::delete(db, 1).await?);
        user(2, "ken").insert(db).await?;
        assert_eq!(User::NAME_UNIQUE.holder(db, "ken").await?, Some(User::at(2)));
        Ok::<(), Error>(())
    }

    /// An entry whose holder expired, was deleted or changed outside the
    /// library is not shown, is pruned, and the value can be claimed.
    exclusive async fn entries_of_gone_holders_are_pruned(ctx) {
        let db = &ctx.db;
        user(1, "ken").insert(db).await?;
        user(2, "rob").insert(db).await?;
        // Another program deletes user:1.
        db.query::<()>(redis::cmd("DEL").arg("user:1")).await?;
        assert_eq!(User::NAME_UNIQUE.find(db, "ken").await?, None);
        assert!(!exists(db, "user:_unique:name:ken").await, "pruned");
        // Another program renames user:2 behind the library's back.
        db.query::<()>(redis::cmd("HSET").arg("user:2").arg("name").arg("robert")).await?;
        assert_eq!(User::NAME_UNIQUE.holder(db, "rob").await?, None);
        assert!(!exists(db, "user:_unique:name:rob").await, "pruned");

        // A stale entry does not block a new claim.
        user(3, "dmr").insert(db).await?;
        db.query::<()>(redis::cmd("PEXPIRE").arg("user:3").arg(1)).await?;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        user(4, "dmr").insert(db).await?;
        assert_eq!(User::NAME_UNIQUE.find(db, "dmr").await?, Some(user(4, "dmr")));

        // A full pass prunes what no read has touched.
        user(5, "bwk").insert(db).await?;
        db.query::<()>(redis::cmd("DEL").arg("user:5")).await?;
        assert_eq!(User::NAME_UNIQUE.prune(db).await?, 1);
        assert!(!exists(db, "user:_unique:name:bwk").await);
        assert_eq!(User::NAME_UNIQUE.prune(db).await?, 0);
        Ok::<(), Error>(())
    }

    /// 50 tasks race to claim one value: exactly one wins, every other
    /// gets Error::Unique naming the winner, and none of the losers'
    /// objects is stored.
    exclusive async fn fifty_tasks_race_for_one_value(ctx) {
        let db = Arc::new(ctx.db.clone());
        let tasks: Vec<_> = (1..=50u32)
            .map(|id| {
                let db = Arc::clone(&db);
                tokio::spawn(async move { (id, user(id, "the one").insert(&db).await.map(|_| ())) })
            })
            .collect();
        let mut winners = Vec::new();
        let mut losers = Vec::new();
        for task in tasks {
            let (id, result) = task.await.expect("task");
            match result {
                Ok(()) => winners.push(id),
                Err(err) => losers.push((id, err)),
            }
        }
        assert_eq!(winners.len(), 1, "winners: {winners:?}");
        let winner = format!("user:{}", winners[0]);
        for (id, err) in losers {
            assert_unique_error(err, "the one", &winner);
            assert!(!exists(&db, &format!("user:{id}")).await, "user:{id} was stored");
        }
        assert_eq!(get(&db, "user:_unique:name:the%20one").await, Some(winner));
        let n: u64 = redmodel::model::dbsize(&db).await?;
        assert_eq!(n, 2, "the winner and its entry");
        Ok::<(), Error>(())
    }
}

/// The error's text names the holder, so a log line is enough to act.
async fn err_text_names_holder(db: &Db) -> bool {
    let err = user(3, "ken").insert(db).await.unwrap_err();
    err.to_string().contains("user:1") && err.to_string().contains("ken")
}

/// The same race on the memory engine with worker threads, so that the
/// tasks' commands really interleave (on one thread, a memory engine's
/// replies are ready at once and the tasks would run one after the other).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_threads_race_on_the_memory_engine() {
    for round in 0..5 {
        let db = Db::memory();
        let tasks: Vec<_> = (1..=50u32)
            .map(|id| {
                let db = db.clone();
                tokio::spawn(async move { user(id, "the one").insert(&db).await.is_ok() })
            })
            .collect();
        let mut won = 0;
        for task in tasks {
            won += u32::from(task.await.expect("task"));
        }
        assert_eq!(won, 1, "round {round}");
        assert_eq!(
            redmodel::model::dbsize(&db).await.unwrap(),
            2,
            "round {round}"
        );
    }
}
