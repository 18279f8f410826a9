//! The school's model operations under an ACL user limited to the models'
//! key patterns (`~teacher:* ~class:* ~student:*`, `+@all -@dangerous`),
//! on a private redis-server, and the same on the memory engine served
//! over RESP (its own ACL). Every operation, the cascading delete's SCANs and transactions
//! included, stays inside those patterns, whatever the pks hold; reaching
//! another namespace is refused with `Error::NoPermission`.
//!
//! Skipped with a note if redis-server is missing (a failure under CI=true).

use crate::models::{
    Class, ClassStudents, ClassTeachers, Exam, Profile, Student, Teacher, TeacherClasses,
};
use redmodel::prelude::*;
use redmodel::{Db, Error, KeyLayout};
use redmodel_suite::private_server_or_skip;

/// Creates the user `school` (password `s3cret`) limited to the school's
/// key patterns, through the `default` user.
async fn create_school_user(admin: &Db) -> Result<(), Error> {
    admin
        .query(
            redis::cmd("ACL")
                .arg("SETUSER")
                .arg("school")
                .arg("on")
                .arg(">s3cret")
                .arg("~teacher:*")
                .arg("~class:*")
                .arg("~student:*")
                .arg("+@all")
                .arg("-@dangerous"),
        )
        .await
}

fn teacher(id: &str) -> Teacher {
    Teacher {
        id: id.into(),
        name: format!("Teacher {id}"),
        subject: "math".into(),
    }
}

fn student(id: &str, class: u32) -> Student {
    Student {
        id: id.into(),
        class: Class::at(class),
        chinese: 1,
        english: 2,
        math: 3,
    }
}

#[tokio::test]
async fn model_operations_stay_inside_the_acl_key_patterns() -> Result<(), Error> {
    let Some(server) = private_server_or_skip("model_operations_stay_inside_the_acl_key_patterns")
    else {
        return Ok(());
    };
    school_user_stays_inside(&server.url(), server.port()).await
}

/// The same against the memory engine's ACL, served over RESP.
#[tokio::test]
async fn model_operations_stay_inside_the_acl_key_patterns_on_the_engine() -> Result<(), Error> {
    let server = engine_server().await;
    school_user_stays_inside(&server.url(), server.local_addr().port()).await
}

/// A fresh memory engine served over RESP on a free port.
async fn engine_server() -> redmodel::memory::ServerHandle {
    redmodel_suite::serve_engine(redmodel::memory::Engine::new())
        .await
        .expect("the engine serves on a free port")
}

async fn school_user_stays_inside(admin_url: &str, port: u16) -> Result<(), Error> {
    let admin = Db::connect(admin_url).await?;
    create_school_user(&admin).await?;
    let url = format!("redis://school:s3cret@127.0.0.1:{port}/");
    let db = Db::connect(&url).await?;

    // Writes, reads, relations, sub-objects, scans.
    for id in ["A", "B"] {
        teacher(id).insert(&db).await?;
    }
    for id in [1, 2] {
        Class {
            id,
            name: format!("Class {id}"),
        }
        .insert(&db)
        .await?;
    }
    for (id, class) in [("a", 1), ("b", 2), ("c", 2)] {
        let handle = student(id, class).insert(&db).await?;
        handle
            .insert_sub(
                &db,
                &Exam {
                    year: 2024,
                    chinese: 1,
                    english: 2,
                    math: 3,
                },
            )
            .await?;
        Class::at(class)
            .relation::<ClassStudents>()
            .link(&db, &handle)
            .await?;
    }
    Teacher::at("A")
        .relation::<TeacherClasses>()
        .link_many(&db, [Class::at(1), Class::at(2)])
        .await?;
    Teacher::at("B")
        .relation::<TeacherClasses>()
        .link(&db, Class::at(2))
        .await?;
    assert_eq!(Teacher::load(&db, "A").await?, Some(teacher("A")));
    assert_eq!(Student::at("b").incr(&db, Student::MATH, 5).await?, 8);
    assert_eq!(Teacher::scan(&db).await?.len(), 2);
    assert_eq!(Student::at("a").scan_subs::<Exam>(&db).await?.len(), 1);
    let teachers = Class::at(2).relation::<ClassTeachers>().load(&db).await?;
    assert_eq!(teachers.len(), 2);

    // Pks that look like other keys or patterns stay in their table.
    for pk in ["../profile:x", "profile:x", "*", "a b:{c}"] {
        teacher(pk).insert(&db).await?;
        assert_eq!(Teacher::load(&db, pk).await?, Some(teacher(pk)));
        assert!(Teacher::at(pk).delete_cascade(&db).await?);
    }

    // The cascading delete: SCAN, WATCH, MULTI/EXEC, all allowed.
    assert!(Teacher::at("A").delete_cascade(&db).await?);
    // Students b and c name class 2 in a required reference: its delete
    // is refused until they name another.
    let err = Class::at(2).delete_cascade(&db).await.unwrap_err();
    assert!(matches!(err, Error::Restricted { .. }), "{err:?}");
    for id in ["b", "c"] {
        Student::at(id)
            .set(&db, Student::CLASS, Class::at(1))
            .await?;
    }
    assert!(Class::at(2).delete_cascade(&db).await?);
    assert_eq!(
        Class::at(2)
            .relation::<ClassTeachers>()
            .members(&db)
            .await?,
        vec![]
    );
    assert_eq!(
        Student::at("b").get(&db, Student::CLASS).await?,
        Some(Class::at(1))
    );

    // Another namespace is refused, through the model layer and directly.
    let err = Profile::load(&db, "x").await.unwrap_err();
    assert!(matches!(err, Error::NoPermission { .. }), "{err:?}");
    let err = db
        .query::<Option<String>>(redis::cmd("GET").arg("profile:x"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoPermission { .. }), "{err:?}");
    // The refusal comes from the ACL: the default user reads it.
    let none: Option<String> = admin.query(redis::cmd("GET").arg("profile:x")).await?;
    assert_eq!(none, None);
    Ok(())
}

/// `acl_name:1` = {name (unique), tags}: a model whose writes take the
/// checked-script path where scripts run.
#[derive(redmodel::Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "acl_name")]
struct AclName {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    name: String,
    #[redmodel(tags)]
    tags: Vec<String>,
}

/// `acl_score:1` = {points (sorted), seen (recent)}: a model whose
/// increments take the script path.
#[derive(redmodel::Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "acl_score")]
struct AclScore {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(sorted)]
    points: i64,
    #[redmodel(recent = 3)]
    seen: Option<u64>,
}

/// A user whose ACL denies scripting gets the same results from the
/// operations that use a script where it may (an indexed increment): they
/// fall back to the path without scripts. `NOPERM` is not an error the
/// caller sees.
#[tokio::test]
async fn a_user_without_scripting_gets_the_same_results() -> Result<(), Error> {
    let Some(server) = private_server_or_skip("a_user_without_scripting_gets_the_same_results")
    else {
        return Ok(());
    };
    without_scripting(&server.url(), server.port()).await
}

/// The same against the memory engine's ACL, served over RESP.
#[tokio::test]
async fn a_user_without_scripting_gets_the_same_results_on_the_engine() -> Result<(), Error> {
    let server = engine_server().await;
    without_scripting(&server.url(), server.local_addr().port()).await
}

async fn without_scripting(admin_url: &str, port: u16) -> Result<(), Error> {
    let admin = Db::connect(admin_url).await?;
    let db = user_denied(&admin, port, "noscript", "-@scripting").await?;
    let refused = db
        .query::<i64>(redis::cmd("EVAL").arg("return 1").arg(0))
        .await;
    assert!(refused.is_err(), "the ACL refuses scripts: {refused:?}");

    let score = AclScore {
        id: 1,
        points: 5,
        seen: Some(1),
    }
    .insert(&db)
    .await?;
    assert_eq!(score.incr(&db, AclScore::POINTS, 3).await?, 8);
    let zscore: Option<f64> = db
        .query(
            redis::cmd("ZSCORE")
                .arg("acl_score:_sorted:points")
                .arg("acl_score:1"),
        )
        .await?;
    assert_eq!(zscore, Some(8.0));
    db.query::<()>(redis::cmd("HSET").arg("acl_score:1").arg("points").arg("x"))
        .await?;
    let err = score.incr(&db, AclScore::POINTS, 1).await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");

    // An index key of another type refuses a write whole here too: the
    // types are read before the MULTI.
    db.query::<()>(redis::cmd("SET").arg("acl_score:_sorted:points").arg("x"))
        .await?;
    let refused = AclScore {
        id: 3,
        points: 1,
        seen: Some(3),
    };
    let err = refused.insert(&db).await.unwrap_err();
    assert!(
        matches!(&err, Error::UnexpectedType { key, expected: "zset" } if key == "acl_score:_sorted:points"),
        "{err:?}"
    );
    let written: i64 = db.query(redis::cmd("EXISTS").arg("acl_score:3")).await?;
    assert_eq!(written, 0, "nothing of the refused insert is written");
    db.query::<()>(redis::cmd("DEL").arg("acl_score:_sorted:points"))
        .await?;

    // The refusal is remembered: the writes that follow try no script
    // (the ACL log counts every refused EVAL and EVALSHA).
    let refused_before = refused_scripts(&admin).await?;
    assert!(refused_before > 0, "the first write tried a script");
    let other = AclScore {
        id: 2,
        points: 0,
        seen: None,
    }
    .insert(&db)
    .await?;
    for n in 1..=5 {
        assert_eq!(other.incr(&db, AclScore::POINTS, 1).await?, n);
    }
    assert_eq!(refused_scripts(&admin).await?, refused_before);

    // Unique and tag writes: the same decisions under WATCH, in both key
    // layouts (in the cluster layout, the steps of each write: the claim
    // and confirmation of a unique value too).
    for db in [db.clone(), db.with_key_layout(KeyLayout::Cluster)] {
        unique_and_tags_without_scripting(&db).await?;
    }

    // Locks: release and extend check the token without a script too.
    let ttl = std::time::Duration::from_secs(10);
    let mut guard = db.lock("job", ttl).await?.expect("free");
    guard.extend(ttl * 2).await?;
    let left: i64 = db.query(redis::cmd("PTTL").arg(guard.key())).await?;
    assert!(left > 10_000, "extended: {left} ms");
    guard.release().await?;
    assert!(db.lock("job", ttl).await?.is_some(), "released");
    Ok(())
}

/// A `Db` of the user `name` (password `s3cret`), created through
/// `admin`, who may run everything on every key but what `denied` takes
/// away (an ACL rule, as `-@scripting`), on the server at `port`.
async fn user_denied(admin: &Db, port: u16, name: &str, denied: &str) -> Result<Db, Error> {
    admin
        .query::<()>(
            redis::cmd("ACL")
                .arg("SETUSER")
                .arg(name)
                .arg("on")
                .arg(">s3cret")
                .arg("~*")
                .arg("+@all")
                .arg(denied),
        )
        .await?;
    Db::connect(&format!("redis://{name}:s3cret@127.0.0.1:{port}/")).await
}

/// Unique claims and releases, and tag moves, on `db` (whose user may not
/// run scripts).
async fn unique_and_tags_without_scripting(db: &Db) -> Result<(), Error> {
    AclName {
        id: 1,
        name: "ada".into(),
        tags: vec!["x".into()],
    }
    .insert(db)
    .await?;
    AclName {
        id: 2,
        name: "bob".into(),
        tags: vec![],
    }
    .insert(db)
    .await?;
    let taken = AclName::at(2)
        .set(db, AclName::NAME, "ada".to_string())
        .await
        .unwrap_err();
    assert!(
        matches!(&taken, Error::Unique { holder, .. } if holder == "acl_name:1"),
        "{taken:?}"
    );
    AclName::at(1)
        .set_many(
            db,
            [
                AclName::NAME.to("cy".to_string()),
                AclName::TAGS.to(vec!["y".to_string()]),
            ],
        )
        .await?;
    assert_eq!(
        AclName::NAME_UNIQUE.find(db, "cy").await?.map(|n| n.id),
        Some(1)
    );
    assert_eq!(AclName::NAME_UNIQUE.find(db, "ada").await?, None);
    assert!(AclName::TAGS_TAGS.with(db, "x").await?.is_empty());
    assert_eq!(AclName::TAGS_TAGS.with(db, "y").await?.len(), 1);
    Ok(())
}

/// How many times the ACL refused EVALSHA (ACL LOG, whose entries for
/// the same refusal add up in their `count`).
async fn refused_scripts(admin: &Db) -> Result<i64, Error> {
    let entries: Vec<std::collections::HashMap<String, redis::Value>> =
        admin.query(redis::cmd("ACL").arg("LOG")).await?;
    Ok(entries
        .iter()
        .filter(|e| {
            matches!(e.get("object"), Some(redis::Value::BulkString(o)) if o.as_slice() == b"evalsha" || o.as_slice() == b"eval")
        })
        .map(|e| match e.get("count") {
            Some(redis::Value::Int(n)) => *n,
            _ => 0,
        })
        .sum())
}

/// A user whose ACL denies WATCH gets every object of a bulk insert
/// written, each alone by its own script: the writes gathered on one
/// server never run a MULTI without the WATCH that guards their decisions.
#[tokio::test]
async fn a_bulk_insert_by_a_user_without_watch_writes_each_object_alone() -> Result<(), Error> {
    let test = "a_bulk_insert_by_a_user_without_watch_writes_each_object_alone";
    let Some(server) = private_server_or_skip(test) else {
        return Ok(());
    };
    bulk_without_watch(&server.url(), server.port()).await
}

/// The same against the memory engine's ACL, served over RESP.
#[tokio::test]
async fn a_bulk_insert_by_a_user_without_watch_writes_each_object_alone_on_the_engine(
) -> Result<(), Error> {
    let server = engine_server().await;
    bulk_without_watch(&server.url(), server.local_addr().port()).await
}

async fn bulk_without_watch(admin_url: &str, port: u16) -> Result<(), Error> {
    let admin = Db::connect(admin_url).await?;
    let db = user_denied(&admin, port, "nowatch", "-watch").await?;
    let names: Vec<AclName> = (0..40)
        .map(|id| AclName {
            id,
            name: format!("bulk{id}"),
            tags: vec!["t".into()],
        })
        .collect();
    let execs_before = exec_calls(&admin).await?;
    for result in AclName::insert_many(&db, &names).await {
        result.map_err(|e| e.error)?;
    }
    assert_eq!(
        exec_calls(&admin).await?,
        execs_before,
        "no MULTI without its WATCH"
    );
    for name in &names {
        let found = AclName::NAME_UNIQUE.find(&db, &name.name).await?;
        assert_eq!(found.map(|n| n.id), Some(name.id));
    }
    assert_eq!(AclName::TAGS_TAGS.with(&db, "t").await?.len(), names.len());
    Ok(())
}

/// How many EXECs the server has run (`INFO commandstats`).
async fn exec_calls(admin: &Db) -> Result<u64, Error> {
    let info: String = admin.query(redis::cmd("INFO").arg("commandstats")).await?;
    Ok(redmodel_suite::command_calls(&info, "exec"))
}
