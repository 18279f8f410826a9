//! Cascading deletes (`ObjectRef::delete_cascade`), on both backends: after
//! deleting teacher A and class 2 of the school, a full SCAN and a read of
//! every value find no key or element naming them; a `restrict` referrer
//! refuses the delete and nothing is written; a link racing the delete
//! leaves no dangling entry.

use crate::school_example as school;

use crate::models;
use redmodel::model::Ref;
use redmodel::prelude::*;
use redmodel::{Db, Error};
use redmodel_suite::backend_tests;

/// Every key with every stored string (list elements, hash fields and
/// values, set members, zset members), from a full SCAN.
async fn everything(db: &Db) -> Result<Vec<(String, Vec<String>)>, Error> {
    let mut out = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = db
            .query(redis::cmd("SCAN").arg(cursor).arg("COUNT").arg(100))
            .await?;
        for key in keys {
            let kind: String = db.query(redis::cmd("TYPE").arg(&key)).await?;
            let values: Vec<String> = match kind.as_str() {
                "string" => vec![db.query(redis::cmd("GET").arg(&key)).await?],
                "list" => {
                    db.query(redis::cmd("LRANGE").arg(&key).arg(0).arg(-1))
                        .await?
                }
                "hash" => db.query(redis::cmd("HGETALL").arg(&key)).await?,
                "set" => db.query(redis::cmd("SMEMBERS").arg(&key)).await?,
                "zset" => {
                    db.query(redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1))
                        .await?
                }
                other => panic!("unexpected type {other} at {key}"),
            };
            out.push((key, values));
        }
        if next == 0 {
            return Ok(out);
        }
        cursor = next;
    }
}

/// Whether `text` names `key` (the key itself, or a key under it).
fn names(text: &str, key: &str) -> bool {
    text == key || text.starts_with(&format!("{key}:"))
}

backend_tests! {
    exclusive async fn deleting_teacher_a_and_class_2_leaves_no_trace(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        school::reset(db).await?;
        school::build(db).await?;
        let before = everything(db).await?;
        assert!(
            before
                .iter()
                .any(|(k, v)| names(k, "class:2") || v.iter().any(|e| e == "class:2")),
            "the school mentions class:2 before the delete"
        );
        assert!(models::Teacher::at("A").delete_cascade(db).await?);
        // Students b and c name class 2 in a required reference (the
        // default rule, restrict): they move to class 1 first.
        let err = models::Class::at(2).delete_cascade(db).await.unwrap_err();
        assert!(
            matches!(&err, Error::Restricted { key, by } if key == "class:2" && (by == "student:b" || by == "student:c")),
            "{err:?}"
        );
        for id in ["b", "c"] {
            models::Student::at(id)
                .set(db, models::Student::CLASS, models::Class::at(1))
                .await?;
        }
        assert!(models::Class::at(2).delete_cascade(db).await?);
        assert!(
            !models::Class::at(2).delete_cascade(db).await?,
            "already gone"
        );
        for (key, values) in everything(db).await? {
            for gone in ["teacher:A", "class:2"] {
                assert!(!names(&key, gone), "{key} is left");
                assert!(
                    !values.iter().any(|v| v == gone),
                    "{key} still holds {gone}: {values:?}"
                );
            }
        }
        // What does not point at them is untouched.
        let b = models::Teacher::at("B").relation::<models::TeacherClasses>();
        assert_eq!(b.members(db).await?, vec![], "teacher B's only class was 2");
        let one = models::Class::at(1).relation::<models::ClassStudents>();
        assert_eq!(one.members(db).await?, vec![models::Student::at("a")]);
        assert_eq!(
            models::Student::at("b")
                .get(db, models::Student::MATH)
                .await?,
            Some(95)
        );
        Ok(())
    }
}

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "shelf")]
struct Shelf {
    #[redmodel(pk)]
    id: u32,
    name: String,
}

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "book")]
struct Book {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(on_delete = "restrict")]
    shelf: Option<Ref<Shelf>>,
}

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "author")]
struct Author {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    name: String,
}

#[derive(Relation)]
#[redmodel(table = "author", owner = Book, member = Author, on_delete = "restrict")]
struct BookAuthors;

backend_tests! {
    exclusive async fn restrict_refuses_and_writes_nothing(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        Shelf {
            id: 1,
            name: "top".into(),
        }
        .insert(db)
        .await?;
        Book {
            id: 7,
            shelf: Some(Shelf::at(1)),
        }
        .insert(db)
        .await?;
        Author {
            id: 3,
            name: "knuth".into(),
        }
        .insert(db)
        .await?;
        Book::at(7)
            .relation::<BookAuthors>()
            .append(db, [Author::at(3)])
            .await?;
        let before = everything(db).await?;

        let err = Shelf::at(1).delete_cascade(db).await.unwrap_err();
        assert!(
            matches!(&err, Error::Restricted { key, by } if key == "shelf:1" && by == "book:7"),
            "{err:?}"
        );
        let err = Author::at(3).delete_cascade(db).await.unwrap_err();
        assert!(
            matches!(&err, Error::Restricted { key, by } if key == "author:3" && by == "book:7:author"),
            "{err:?}"
        );
        let mut after = everything(db).await?;
        let mut before = before;
        before.sort();
        after.sort();
        assert_eq!(before, after, "a refused delete writes nothing");

        // Once nothing points at them, they go, index entries included.
        Book::at(7).set(db, Book::SHELF, None).await?;
        Book::at(7)
            .relation::<BookAuthors>()
            .remove(db, Author::at(3), 0)
            .await?;
        assert!(Shelf::at(1).delete_cascade(db).await?);
        assert!(Author::at(3).delete_cascade(db).await?);
        for (key, values) in everything(db).await? {
            assert!(!values.iter().any(|v| v == "author:3"), "{key}: {values:?}");
            assert!(!key.contains("knuth"), "unique entry {key} is left");
        }
        Ok(())
    }
}

backend_tests! {
    exclusive async fn a_link_racing_the_delete_leaves_no_dangling_entry(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        school::reset(db).await?;
        school::build(db).await?;
        for round in 0..20u32 {
            let id = format!("T{round}");
            models::Teacher {
                id: id.clone(),
                name: "t".into(),
                subject: "x".into(),
            }
            .insert(db)
            .await?;
            let teacher = models::Teacher::at(id.as_str());
            // Odd rounds: the teacher has no list of its own yet, so the
            // racing link creates it.
            if round % 2 == 0 {
                teacher
                    .relation::<models::TeacherClasses>()
                    .link(db, models::Class::at(1))
                    .await?;
            }
            let linker = {
                let db = db.clone();
                let teacher = teacher.clone();
                tokio::spawn(async move {
                    teacher
                        .relation::<models::TeacherClasses>()
                        .link(&db, models::Class::at(2))
                        .await
                })
            };
            teacher.delete_cascade(db).await?;
            // A link after the delete is refused: the teacher is gone.
            match linker.await.expect("the linking task") {
                Ok(_) | Err(Error::NotFound { .. }) => {}
                Err(other) => return Err(other),
            }
            // A link after the delete may re-create the teacher's list,
            // with the inverse entry: both or none, never one side alone.
            let list: Vec<String> = db
                .query(redis::cmd("LRANGE").arg(ctx.stored("class:2:teacher")).arg(0).arg(-1))
                .await?;
            let own: bool = db
                .query(redis::cmd("EXISTS").arg(ctx.stored(&format!("teacher:{id}:class"))))
                .await?;
            let mut dangling_inverse = list.contains(&teacher.key().to_string()) && !own;
            if dangling_inverse && db.key_layout() == redmodel::KeyLayout::Cluster {
                // In the cluster layout the cascade and the link are steps
                // in two slots: a link whose own side the cascade deleted
                // may add its inverse entry after the cascade's sweep. That
                // entry names a gone object: reads leave it out and prune it.
                let class_teachers = models::Class::at(2).relation::<models::ClassTeachers>();
                let shown = class_teachers.load(db).await?;
                assert!(
                    shown.iter().all(|t| t.id != id),
                    "round {round}: a read shows the deleted teacher"
                );
                let left: Vec<String> = db
                    .query(redis::cmd("LRANGE").arg(ctx.stored("class:2:teacher")).arg(0).arg(-1))
                    .await?;
                dangling_inverse = left.contains(&teacher.key().to_string());
            }
            if own {
                // The link came after the delete: both sides, and only it.
                let mine = teacher.relation::<models::TeacherClasses>();
                assert_eq!(
                    mine.members(db).await?,
                    vec![models::Class::at(2)],
                    "round {round}"
                );
                assert!(list.contains(&teacher.key().to_string()), "round {round}");
            }
            assert!(
                !dangling_inverse,
                "round {round}: class:2:teacher holds a deleted teacher"
            );
            let one: Vec<String> = db
                .query(redis::cmd("LRANGE").arg(ctx.stored("class:1:teacher")).arg(0).arg(-1))
                .await?;
            assert!(
                !one.contains(&teacher.key().to_string()),
                "round {round}: class:1"
            );
        }
        Ok(())
    }
}

backend_tests! {
    /// A sub-object written while a cascade deletes its admin:
    /// whichever way the two interleave, nothing is left under the deleted
    /// admin. The insert lands before the delete (and is swept with the
    /// subtree) or is refused (`NotFound`: the admin is gone).
    exclusive async fn a_sub_object_racing_the_delete_is_not_left_behind(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let exam = models::Exam { year: 2024, chinese: 1, english: 2, math: 3 };
        for round in 0..12u32 {
            let id = format!("s{round}");
            db.query::<()>(redis::cmd("HSET").arg(format!("student:{id}")).arg("math").arg(1))
                .await?;
            let student = models::Student::at(id.as_str());
            let cascade = {
                let (db, student) = (db.clone(), student.clone());
                tokio::spawn(async move { student.delete_cascade(&db).await })
            };
            // Let the cascade run to a different point each round.
            for _ in 0..round {
                tokio::task::yield_now().await;
            }
            let inserted = student.insert_sub(db, &exam).await;
            assert!(cascade.await.expect("the cascade task")?, "round {round}");
            match inserted {
                Ok(_) | Err(Error::NotFound { .. }) => {}
                Err(other) => return Err(other),
            }
            assert!(!student.exists(db).await?, "round {round}");
            assert_eq!(
                student.tree_keys(db).await?,
                [ctx.stored(&format!("student:{id}"))],
                "round {round}: keys left under the deleted admin"
            );
        }
        Ok(())
    }
}

backend_tests! {
    /// A required reference field (the default rule, restrict) set while
    /// a cascade deletes its target: whichever way they interleave, no
    /// reference to a deleted object is left. The write lands before the
    /// delete (which is then refused) or is refused (`NotFound`: the
    /// target is gone).
    exclusive async fn a_reference_racing_the_delete_is_not_left_behind(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        models::Class { id: 1, name: "c1".into() }.insert(db).await?;
        for round in 0..12u32 {
            let class = models::Class { id: 100 + round, name: "c".into() }.insert(db).await?;
            let student = models::Student {
                id: format!("s{round}"),
                class: models::Class::at(1),
                chinese: 1,
                english: 1,
                math: 1,
            };
            let student = student.insert(db).await?;
            let cascade = {
                let (db, class) = (db.clone(), class.clone());
                tokio::spawn(async move { class.delete_cascade(&db).await })
            };
            for _ in 0..round {
                tokio::task::yield_now().await;
            }
            let set = student.set(db, models::Student::CLASS, class.clone()).await;
            let deleted = match cascade.await.expect("the cascade task") {
                Ok(existed) => existed,
                Err(Error::Restricted { .. }) => false,
                Err(other) => return Err(other),
            };
            match set {
                Ok(()) => assert!(!deleted, "round {round}: both the write and the delete landed"),
                Err(Error::NotFound { .. }) => assert!(deleted, "round {round}"),
                Err(other) => return Err(other),
            }
            let held: Option<String> = db
                .query(redis::cmd("HGET").arg(student.key_in(db).as_ref()).arg("class"))
                .await?;
            if deleted {
                assert_ne!(
                    held.as_deref(),
                    Some(class.key()),
                    "round {round}: a reference to the deleted class is left"
                );
            }
        }
        Ok(())
    }
}

backend_tests! {
    /// An admin created again while its cascade is still sweeping (a race
    /// the chaos test finds): the sweeps leave the new object's
    /// links and references alone, whichever way they interleave (a
    /// reference that comes first restricts the delete). Either
    /// the cascade's own delete came after the new writes (and nothing of
    /// the class is left), or the class exists with both sides of its link
    /// and the reference to it.
    exclusive async fn an_admin_created_again_during_the_sweeps_keeps_its_links(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let teacher = models::Teacher { id: "T".into(), name: "t".into(), subject: "s".into() }.insert(db).await?;
        models::Class { id: 1, name: "c1".into() }.insert(db).await?;
        for round in 0..60u32 {
            let class = models::Class { id: 200 + round, name: "c".into() };
            let handle = class.insert(db).await?;
            teacher.relation::<models::TeacherClasses>().link(db, &handle).await?;
            let student = models::Student {
                id: format!("r{round}"),
                // Another class: a required reference to this one would
                // restrict its delete.
                class: models::Class::at(1),
                chinese: 1,
                english: 1,
                math: 1,
            }
            .insert(db)
            .await?;
            let cascade = {
                let (db, handle) = (db.clone(), handle.clone());
                tokio::spawn(async move { handle.delete_cascade(&db).await })
            };
            for _ in 0..round {
                tokio::task::yield_now().await;
            }
            // The class again, linked and referred to again.
            class.insert(db).await?;
            let linked = teacher.relation::<models::TeacherClasses>().link(db, &handle).await;
            let referred = student.set(db, models::Student::CLASS, handle.clone()).await;
            // Refused if the reference came first: the class then exists.
            match cascade.await.expect("the cascade task") {
                Ok(_) | Err(Error::Restricted { .. }) => {}
                Err(other) => return Err(other),
            }
            for outcome in [linked.map(drop), referred] {
                match outcome {
                    Ok(()) | Err(Error::NotFound { .. }) => {}
                    Err(other) => return Err(other),
                }
            }
            let exists = handle.exists(db).await?;
            let forward = teacher.relation::<models::TeacherClasses>().members(db).await?.contains(&handle);
            let back = handle.relation::<models::ClassTeachers>().members(db).await?.contains(&teacher);
            let held = student.get(db, models::Student::CLASS).await?;
            assert_eq!((forward, back), (exists, exists), "round {round}: the link, with the class existing: {exists}");
            assert_eq!(held.as_ref() == Some(&handle), exists, "round {round}: the reference, with the class existing: {exists}");
        }
        Ok(())
    }
}
