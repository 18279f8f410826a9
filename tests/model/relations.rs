//! Relations and member lists: every list operation, linking with an
//! inverse, and the cost of loading members, on every backend.

use std::time::Duration;

use crate::models::*;
use redmodel::model::{MemberList, ObjectRef, RelationRef, Ttl};
use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

/// The raw list at the model key `key` (plain form), as `db` stores it.
async fn list(db: &Db, key: &str) -> Vec<String> {
    let key = db.key_layout().stored(key);
    db.query(redis::cmd("LRANGE").arg(&*key).arg(0).arg(-1))
        .await
        .unwrap()
}

/// Makes the admins at `keys` exist (a link needs both of its objects).
async fn exist(db: &Db, keys: &[&str]) {
    for key in keys {
        db.query::<()>(redis::cmd("HSET").arg(*key).arg("name").arg(*key))
            .await
            .unwrap();
    }
}

fn class(id: u32) -> Class {
    Class {
        id,
        name: format!("Class {id}"),
    }
}

backend_tests! {
    exclusive async fn link_keeps_the_inverse_in_step(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let objects = [
            "teacher:A", "teacher:B", "class:1", "class:2", "class:3", "class:5", "class:6",
            "student:a",
        ];
        exist(db, &objects).await;
        let a = Teacher::at("A").relation::<TeacherClasses>();
        let b = Teacher::at("B").relation::<TeacherClasses>();
        assert!(a.link(db, Class::at(1)).await?);
        assert!(a.link(db, &Class::at(2)).await?);
        assert!(b.link(db, "class:2").await?);
        assert_eq!(list(db, "teacher:A:class").await, ["class:1", "class:2"]);
        assert_eq!(list(db, "teacher:B:class").await, ["class:2"]);
        assert_eq!(list(db, "class:1:teacher").await, ["teacher:A"]);
        assert_eq!(
            list(db, "class:2:teacher").await,
            ["teacher:A", "teacher:B"]
        );

        // Linking twice does not duplicate, on either side.
        assert!(!a.link(db, Class::at(2)).await?);
        assert_eq!(list(db, "teacher:A:class").await, ["class:1", "class:2"]);
        assert_eq!(
            list(db, "class:2:teacher").await,
            ["teacher:B", "teacher:A"]
        );

        // Linking from the other side updates this side.
        let c3 = Class::at(3).relation::<ClassTeachers>();
        assert!(c3.link(db, Teacher::at("A")).await?);
        assert_eq!(
            list(db, "teacher:A:class").await,
            ["class:1", "class:2", "class:3"]
        );

        // Unlinking removes both sides.
        assert!(a.unlink(db, Class::at(2)).await?);
        assert!(!a.unlink(db, Class::at(2)).await?);
        assert_eq!(list(db, "teacher:A:class").await, ["class:1", "class:3"]);
        assert_eq!(list(db, "class:2:teacher").await, ["teacher:B"]);

        // Several at once, duplicates in the call counted once.
        let n = b
            .link_many(db, [Class::at(5), Class::at(6), Class::at(5), Class::at(2)])
            .await?;
        assert_eq!(n, 2);
        // Re-linked members move to the tail.
        assert_eq!(
            list(db, "teacher:B:class").await,
            ["class:6", "class:5", "class:2"]
        );
        assert_eq!(list(db, "class:5:teacher").await, ["teacher:B"]);
        assert_eq!(b.link_many(db, Vec::<ObjectRef<Class>>::new()).await?, 0);

        // A relation without an inverse touches one list.
        let students = Class::at(1).relation::<ClassStudents>();
        students.link(db, Student::at("a")).await?;
        assert_eq!(list(db, "class:1:student").await, ["student:a"]);
        assert_eq!(redmodel::model::dbsize(db).await?, 8 + objects.len() as u64);

        // A link lands only if both objects exist, and then on both sides:
        // a missing member, or a missing owner, is refused and nothing is
        // written.
        for (got, missing) in [
            (a.link(db, Class::at(9)).await, "class:9"),
            (Teacher::at("Z").relation::<TeacherClasses>().link(db, Class::at(1)).await, "teacher:Z"),
        ] {
            assert!(matches!(&got, Err(Error::NotFound { key }) if key == missing), "{got:?}");
        }
        assert_eq!(list(db, "teacher:A:class").await, ["class:1", "class:3"]);
        assert!(list(db, "class:9:teacher").await.is_empty());
        assert!(list(db, "teacher:Z:class").await.is_empty());
        assert_eq!(list(db, "class:1:teacher").await, ["teacher:A"]);
        Ok(())
    }
}

backend_tests! {
    /// A link of many members is a write too long for a script written for
    /// its shape: it runs the general checked script, with the same
    /// results and the same refusal.
    exclusive async fn a_long_link_runs_the_general_script_alike(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let classes: Vec<String> = (1..=20).map(|i| format!("class:{i}")).collect();
        let mut objects: Vec<&str> = classes.iter().map(String::as_str).collect();
        objects.push("teacher:A");
        exist(db, &objects).await;
        let a = Teacher::at("A").relation::<TeacherClasses>();
        let members: Vec<ObjectRef<Class>> = (1..=20).map(Class::at).collect();
        assert_eq!(a.link_many(db, members.iter()).await?, 20);
        assert_eq!(list(db, "teacher:A:class").await, classes);
        for class in &classes {
            assert_eq!(list(db, &format!("{class}:teacher")).await, ["teacher:A"]);
        }
        // One missing member refuses the whole link, in the plain layout
        // atomically (the cluster layout takes back its earlier steps).
        let mut with_missing: Vec<ObjectRef<Class>> = (21..=40).map(Class::at).collect();
        with_missing.push(Class::at(99));
        let more: Vec<String> = (21..=40).map(|i| format!("class:{i}")).collect();
        exist(db, &more.iter().map(String::as_str).collect::<Vec<_>>()).await;
        let got = a.link_many(db, with_missing.iter()).await;
        assert!(matches!(&got, Err(Error::NotFound { key }) if key == "class:99"), "{got:?}");
        assert_eq!(list(db, "teacher:A:class").await, classes);
        assert!(list(db, "class:21:teacher").await.is_empty());
        Ok(())
    }
}

backend_tests! {
    exclusive async fn appending_members_as_keys_objects_or_handles(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let rel = Teacher::at("A").relation::<TeacherClasses>();
        assert_eq!(rel.push(db, Class::at(1)).await?, 1);
        assert_eq!(rel.append(db, [class(2), class(3)].iter()).await?, 3);
        assert_eq!(rel.append(db, ["class:4", "class:1"]).await?, 5);
        assert_eq!(rel.append(db, vec!["class:7".to_string()]).await?, 6);
        assert_eq!(rel.append(db, Vec::<&str>::new()).await?, 6);
        // LPUSH pushes one after the other at the head, as the seed did.
        assert_eq!(rel.prepend(db, [Class::at(8), Class::at(9)]).await?, 8);
        assert_eq!(
            list(db, "teacher:A:class").await,
            [
                "class:9", "class:8", "class:1", "class:2", "class:3", "class:4", "class:1",
                "class:7"
            ]
        );
        assert_eq!(rel.count(db).await?, 8);
        // Appending keeps no inverse (it is the seed's raw list append).
        assert_eq!(list(db, "class:1:teacher").await, Vec::<String>::new());

        // A text that is not a key of the member model is refused, and
        // nothing is written.
        let err = rel.append(db, ["class:10", "teacher:A"]).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidKey { key, model: "class", .. } if key == "teacher:A"),
            "{err}"
        );
        assert_eq!(rel.count(db).await?, 8);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn remove_with_lrem_count_semantics(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let rel = Teacher::at("A").relation::<TeacherClasses>();
        let m = |n| Class::at(n);
        rel.append(db, [m(1), m(2), m(1), m(3), m(1), m(2), m(1)])
            .await?;
        assert_eq!(rel.remove(db, m(1), 2).await?, 2, "from the head");
        assert_eq!(
            list(db, "teacher:A:class").await,
            ["class:2", "class:3", "class:1", "class:2", "class:1"]
        );
        assert_eq!(rel.remove(db, m(2), -1).await?, 1, "from the tail");
        assert_eq!(
            list(db, "teacher:A:class").await,
            ["class:2", "class:3", "class:1", "class:1"]
        );
        assert_eq!(rel.remove(db, m(1), 0).await?, 2, "all");
        assert_eq!(rel.remove(db, m(9), 0).await?, 0);
        assert_eq!(list(db, "teacher:A:class").await, ["class:2", "class:3"]);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn index_range_and_pages(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let rel = Teacher::at("A").relation::<TeacherClasses>();
        rel.append(db, (1..=25).map(Class::at)).await?;
        assert_eq!(rel.index(db, 0).await?, Some(Class::at(1)));
        assert_eq!(rel.index(db, -1).await?, Some(Class::at(25)));
        assert_eq!(rel.index(db, 25).await?, None);
        assert_eq!(rel.index(db, i64::MIN).await?, None);
        assert_eq!(
            rel.range(db, 1, 3).await?,
            vec![Class::at(2), Class::at(3), Class::at(4)]
        );
        assert_eq!(
            rel.range(db, -2, -1).await?,
            vec![Class::at(24), Class::at(25)]
        );
        assert_eq!(rel.range(db, 5, 1).await?, vec![]);
        assert_eq!(rel.members(db).await?.len(), 25);
        assert_eq!(rel.page(db, 0, 10).await?.len(), 10);
        assert_eq!(
            rel.page(db, 2, 10).await?,
            (21..=25).map(Class::at).collect::<Vec<_>>()
        );
        assert_eq!(rel.page(db, 3, 10).await?, vec![]);
        assert_eq!(rel.page(db, 0, 0).await?, vec![]);
        assert_eq!(rel.page(db, u64::MAX, u64::MAX).await?, vec![]);
        assert_eq!(rel.page(db, 1, u64::MAX).await?, vec![]);

        // An empty or missing relation.
        let empty = Teacher::at("Z").relation::<TeacherClasses>();
        assert_eq!(empty.count(db).await?, 0);
        assert_eq!(empty.members(db).await?, vec![]);
        assert_eq!(empty.index(db, 0).await?, None);
        assert_eq!(empty.load(db).await?, vec![]);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn member_objects_in_one_batch(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        for id in 1..=4 {
            class(id).insert(db).await?;
        }
        let rel = Teacher::at("A").relation::<TeacherClasses>();
        rel.append(db, [4, 2, 99, 1].map(Class::at)).await?;
        // Dangling members (class:99 does not exist) are left out.
        assert_eq!(
            rel.load(db).await?,
            vec![class(4), class(2), class(1)]
        );
        assert_eq!(rel.load_range(db, 0, 1).await?, vec![class(4), class(2)]);
        assert_eq!(rel.load_page(db, 1, 2).await?, vec![class(1)]);
        assert_eq!(rel.load_page(db, 0, 0).await?, vec![]);
        Ok(())
    }
}

backend_tests! {
    /// Loading 1,000 members costs the same round trips as loading 3.
    exclusive async fn loading_members_takes_a_constant_number_of_round_trips(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let mut costs = Vec::new();
        for (owner, n) in [("small", 3u32), ("big", 1000)] {
            let mut pipe = redis::pipe();
            for id in 0..n {
                let key = Teacher::at(format!("{owner}{id}")).into_key();
                pipe.cmd("HSET")
                    .arg(&key)
                    .arg("name")
                    .arg("t")
                    .arg("subject")
                    .arg("s")
                    .ignore();
            }
            db.query_pipeline::<()>(&pipe).await?;
            let rel = Class::at(n).relation::<ClassTeachers>();
            rel.append(db, (0..n).map(|id| Teacher::at(format!("{owner}{id}"))))
                .await?;

            let before = db.round_trips();
            let teachers = rel.load(db).await?;
            costs.push(db.round_trips() - before);
            assert_eq!(teachers.len(), n as usize);
            assert_eq!(teachers[0].id, format!("{owner}0"));
        }
        assert_eq!(costs, [2, 2], "one LRANGE and one pipelined batch");
        Ok(())
    }
}

backend_tests! {
    exclusive async fn standalone_member_lists(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let good = MemberList::<Student>::at("performance:good");
        good.append(db, [Student::at("b"), Student::at("c")])
            .await?;
        assert_eq!(good.key(), "performance:good");
        assert_eq!(
            good.members(db).await?,
            vec![Student::at("b"), Student::at("c")]
        );

        assert_eq!(good.ttl(db).await?, Ttl::Persistent);
        assert!(good.expire(db, Duration::from_secs(60)).await?);
        assert!(matches!(good.ttl(db).await?, Ttl::Expires(_)));
        assert!(good.persist(db).await?);
        assert!(good.delete(db).await?);
        assert_eq!(good.ttl(db).await?, Ttl::Missing);
        assert!(!good.delete(db).await?);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn bad_data_in_lists(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let rel = Teacher::at("A").relation::<TeacherClasses>();
        // A key that is not a class, stored by another program.
        db.query::<()>(
            redis::cmd("RPUSH")
                .arg(ctx.stored("teacher:A:class"))
                .arg("class:1")
                .arg("klass:2"),
        )
        .await?;
        let err = rel.members(db).await.unwrap_err();
        match &err {
            Error::InvalidKey { key, model, reason } => {
                assert_eq!((key.as_str(), *model), ("klass:2", "class"));
                assert!(reason.contains("teacher:A:class"), "{reason}");
            }
            other => panic!("{other}"),
        }
        assert!(rel.load(db).await.is_err());
        assert_eq!(rel.index(db, 0).await?, Some(Class::at(1)));

        // A hash where the list is expected.
        db.query::<()>(redis::cmd("HSET").arg(ctx.stored("teacher:B:class")).arg("f").arg("v"))
            .await?;
        exist(db, &["teacher:B", "class:1"]).await;
        let rel = Teacher::at("B").relation::<TeacherClasses>();
        for err in [
            rel.count(db).await.unwrap_err(),
            rel.members(db).await.unwrap_err(),
            rel.push(db, Class::at(1)).await.unwrap_err(),
            rel.remove(db, Class::at(1), 0).await.unwrap_err(),
            rel.index(db, 0).await.unwrap_err(),
            rel.link(db, Class::at(1)).await.unwrap_err(),
            rel.unlink(db, Class::at(1)).await.unwrap_err(),
        ] {
            assert!(
                matches!(&err, Error::UnexpectedType { key, expected: "list" } if key == "teacher:B:class"),
                "{err}"
            );
        }
        // The failed link stopped at its first command (its script, or, in
        // the cluster layout, its first step): the inverse list was never
        // written.
        assert_eq!(list(db, "class:1:teacher").await, Vec::<String>::new());
        Ok(())
    }
}

backend_tests! {
    exclusive async fn parse_relation_keys(ctx) -> redmodel::Result<()> {
        let rel = RelationRef::<ClassStudents>::parse("class:2:student")?;
        assert_eq!(rel, Class::at(2).relation::<ClassStudents>());
        assert_eq!(rel.owner(), &Class::at(2));
        let err = RelationRef::<ClassStudents>::parse("class:2:teacher").unwrap_err();
        assert!(matches!(err, Error::InvalidKey { .. }));
        assert_eq!(
            RelationRef::<ClassStudents>::scan_pattern(),
            "class:*:student"
        );
        assert_eq!(RelationRef::<ClassStudents>::of(&Class::at(2)), rel);
        Ok(())
    }
}

/// A relation that is its own inverse: friendship.
#[derive(Relation)]
#[redmodel(table = "friend", owner = Teacher, member = Teacher, inverse = Friends)]
struct Friends;

backend_tests! {
    exclusive async fn a_relation_can_be_its_own_inverse(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        exist(db, &["teacher:A", "teacher:B"]).await;
        let a = Teacher::at("A").relation::<Friends>();
        assert!(a.link(db, Teacher::at("B")).await?);
        assert_eq!(list(db, "teacher:A:friend").await, ["teacher:B"]);
        assert_eq!(list(db, "teacher:B:friend").await, ["teacher:A"]);
        assert!(
            !Teacher::at("B")
                .relation::<Friends>()
                .link(db, Teacher::at("A"))
                .await?
        );
        assert_eq!(list(db, "teacher:A:friend").await, ["teacher:B"]);
        assert!(
            Teacher::at("B")
                .relation::<Friends>()
                .unlink(db, Teacher::at("A"))
                .await?
        );
        assert_eq!(redmodel::model::dbsize(db).await?, 2, "the two teachers");
        Ok(())
    }
}
