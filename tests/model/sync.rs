//! The sync hook (the seed's `syncDB`): called with the key and the write
//! count every N full writes of a model.

use std::sync::{Arc, Mutex};

use crate::models::*;
use redmodel::model::SyncEvent;
use redmodel::prelude::*;
use redmodel_suite::backend_tests;

fn recorder(db: &Db) -> Arc<Mutex<Vec<SyncEvent>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    db.on_sync(move |event| sink.lock().unwrap().push(event.clone()));
    events
}

fn teacher(id: &str) -> Teacher {
    Teacher {
        id: id.into(),
        name: "T".into(),
        subject: "s".into(),
    }
}

backend_tests! {
    exclusive async fn every_tenth_write_by_default(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let events = recorder(db);
        for _ in 0..25 {
            teacher("A").insert(db).await?;
        }
        for _ in 0..9 {
            teacher("B").insert(db).await?;
        }
        let got = events.lock().unwrap().clone();
        let want: Vec<SyncEvent> = [10, 20]
            .into_iter()
            .map(|count| SyncEvent {
                table: "teacher",
                key: "teacher:A".into(),
                count,
            })
            .collect();
        assert_eq!(got, want);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn declared_interval_and_writes_without_sync(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let events = recorder(db);
        let jo = Profile::sample("jo");
        for _ in 0..4 {
            jo.insert(db).await?;
            jo.insert_without_sync(db).await?;
        }
        // sync_every = 3: the 3rd full write; the writes without sync do
        // not count.
        let counts: Vec<u64> = events.lock().unwrap().iter().map(|e| e.count).collect();
        assert_eq!(counts, [3]);
        assert_eq!(Profile::at("jo").write_count(db).await?, 4);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn sub_objects_sync_too_and_clones_share_hooks(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let clone = db.clone();
        let events = recorder(&clone);
        let second = recorder(db);
        let exam = Exam {
            year: 2024,
            chinese: 1,
            english: 2,
            math: 3,
        };
        // The admin, written raw so that it sends no sync event of its own.
        db.query::<()>(redis::cmd("HSET").arg("student:a").arg("math").arg(1)).await?;
        for _ in 0..10 {
            Student::at("a").insert_sub(db, &exam).await?;
        }
        let got = events.lock().unwrap().clone();
        assert_eq!(
            got,
            [SyncEvent {
                table: "exam",
                key: "student:a:exam:2024".into(),
                count: 10
            }]
        );
        assert_eq!(second.lock().unwrap().len(), 1, "every hook is called");
        // A Db of its own has its own hooks.
        let other = Db::memory();
        let none = recorder(&other);
        assert!(none.lock().unwrap().is_empty());
        Ok(())
    }
}

#[tokio::test]
async fn a_hook_may_register_another() {
    let db = Db::memory();
    let inner = db.clone();
    let seen = Arc::new(Mutex::new(0));
    let seen2 = seen.clone();
    db.on_sync(move |_| {
        let seen3 = seen2.clone();
        inner.on_sync(move |_| *seen3.lock().unwrap() += 1);
    });
    for _ in 0..20 {
        teacher("A").insert(&db).await.unwrap();
    }
    // The hook added at the 10th write runs at the 20th.
    assert_eq!(*seen.lock().unwrap(), 1);
}
