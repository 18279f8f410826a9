//! Admin objects and sub-objects: every per-object operation, on every
//! backend, with its error cases.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::models::*;
use redmodel::model::{ObjectRef, Ttl};
use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

fn teacher_a() -> Teacher {
    Teacher {
        id: "A".into(),
        name: "Teacher A".into(),
        subject: "math".into(),
    }
}

fn student(id: &str, class: u32, marks: [i64; 3]) -> Student {
    Student {
        id: id.into(),
        class: Class::at(class),
        chinese: marks[0],
        english: marks[1],
        math: marks[2],
    }
}

/// Raw HGETALL of a key, sorted, for checking what redis-cli would show.
/// Inserts the classes `ids` (a student's `class` reference needs its
/// class to exist).
async fn classes(db: &Db, ids: &[u32]) -> redmodel::Result<()> {
    for &id in ids {
        Class {
            id,
            name: format!("Class {id}"),
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

/// The raw hash at the model key `key` (plain form), as `db` stores it.
async fn raw_hash(db: &Db, key: &str) -> BTreeMap<String, String> {
    let key = db.key_layout().stored(key);
    db.query(redis::cmd("HGETALL").arg(&*key)).await.unwrap()
}

backend_tests! {
    exclusive async fn insert_and_load_an_admin(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let a = teacher_a();
        let handle = a.insert(db).await?;
        assert_eq!(handle.key(), "teacher:A");
        assert_eq!(Teacher::load(db, "A").await?, Some(a.clone()));
        assert_eq!(Teacher::at("A").load(db).await?, Some(a.clone()));
        assert_eq!(Teacher::load(db, "B").await?, None);
        assert!(Teacher::exists(db, "A").await?);
        assert!(!Teacher::exists(db, "B").await?);
        // The hash is exactly the declared fields (pk in the key) and `_count`.
        let raw = raw_hash(db, "teacher:A").await;
        assert_eq!(
            raw,
            BTreeMap::from([
                ("name".to_string(), "Teacher A".to_string()),
                ("subject".to_string(), "math".to_string()),
                ("_count".to_string(), "1".to_string()),
            ])
        );
        Ok(())
    }
}

backend_tests! {
    exclusive async fn single_fields_typed(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        teacher_a().insert(db).await?;
        let a = Teacher::at("A");
        assert_eq!(
            a.get(db, Teacher::NAME).await?.as_deref(),
            Some("Teacher A")
        );
        assert_eq!(Teacher::at("Z").get(db, Teacher::NAME).await?, None);
        assert_eq!(
            Teacher::at("Z").get_or(db, Teacher::NAME, "nobody").await?,
            "nobody"
        );
        assert_eq!(a.get_or(db, Teacher::NAME, "nobody").await?, "Teacher A");

        a.set(db, Teacher::SUBJECT, "physics").await?;
        assert_eq!(
            a.get(db, Teacher::SUBJECT).await?.as_deref(),
            Some("physics")
        );

        let (name, subject) = a.get_fields(db, (Teacher::NAME, Teacher::SUBJECT)).await?;
        assert_eq!(name.as_deref(), Some("Teacher A"));
        assert_eq!(subject.as_deref(), Some("physics"));
        let (missing,) = Teacher::at("Z").get_fields(db, (Teacher::NAME,)).await?;
        assert_eq!(missing, None);

        let map = a.get_fields_map(db, &["name", "nope"]).await?;
        assert_eq!(
            map,
            BTreeMap::from([("name".to_string(), "Teacher A".to_string())])
        );
        assert!(a.get_fields_map(db, &[]).await?.is_empty());

        let map = a.load_map(db).await?.expect("exists");
        assert_eq!(map.len(), 2, "declared fields only, not _count: {map:?}");
        assert_eq!(map["subject"], "physics");
        assert_eq!(Teacher::at("Z").load_map(db).await?, None);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn set_many_and_option_fields(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        Profile::sample("jo").insert(db).await?;
        let jo = Profile::at("jo");
        jo.set_many(
            db,
            [
                Profile::AGE.to(31),
                Profile::NICKNAME.to(None),
                Profile::TAGS.to(vec!["z".to_string()]),
            ],
        )
        .await?;
        let raw = raw_hash(db, "profile:jo").await;
        assert_eq!(raw["age"], "31");
        assert!(!raw.contains_key("nickname"), "None removes the field");
        assert_eq!(raw["tags"], r#"["z"]"#);
        assert_eq!(jo.get(db, Profile::NICKNAME).await?, None);
        jo.set(db, Profile::NICKNAME, "joe").await?;
        assert_eq!(
            jo.get(db, Profile::NICKNAME).await?,
            Some(Some("joe".to_string()))
        );
        jo.set(db, Profile::NICKNAME, None).await?;
        assert_eq!(jo.get(db, Profile::NICKNAME).await?, None);
        jo.set_many(db, []).await?;
        Ok(())
    }
}

backend_tests! {
    exclusive async fn increments(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        classes(db, &[1, 2]).await?;
        student("a", 1, [100, 100, 50]).insert(db).await?;
        let a = Student::at("a");
        assert_eq!(a.incr(db, Student::MATH, 5).await?, 55);
        assert_eq!(a.incr(db, Student::MATH, -10).await?, 45);
        assert_eq!(a.get(db, Student::MATH).await?, Some(45));
        // Past 2^53 a script's Lua number would round the reply: the
        // value is the stored one, exactly, on every backend.
        a.set(db, Student::MATH, (1 << 53) - 1).await?;
        assert_eq!(a.incr(db, Student::MATH, 2).await?, (1 << 53) + 1);
        assert_eq!(a.incr(db, Student::MATH, -2).await?, (1 << 53) - 1);
        assert_eq!(a.incr(db, Student::MATH, -(1 << 54)).await?, -(1 << 53) - 1);
        a.set(db, Student::MATH, 45).await?;

        Profile::sample("jo").insert(db).await?;
        let jo = Profile::at("jo");
        // Redis adds in long double and writes the shortest text: 0.3.
        assert_eq!(jo.incr(db, Profile::SCORE, 0.2).await?, 0.3);
        assert_eq!(jo.incr(db, Profile::VISITS, 1).await?, 3);
        // u8 field: Redis goes past 255, the typed result says so.
        jo.set(db, Profile::AGE, 255).await?;
        let err = jo.incr(db, Profile::AGE, 1).await.unwrap_err();
        assert!(
            matches!(&err, Error::Decode { key, field, .. } if key == "profile:jo" && field == "age"),
            "{err}"
        );
        // A non-numeric stored value: Redis refuses the increment, which
        // is bad data in that field (tests/model_bad_input.rs).
        db.query::<()>(redis::cmd("HSET").arg("student:a").arg("math").arg("lots"))
            .await?;
        let err = a.incr(db, Student::MATH, 1).await.unwrap_err();
        assert!(
            matches!(&err, Error::Decode { key, field, .. } if key == "student:a" && field == "math"),
            "{err}"
        );
        Ok(())
    }
}

/// How many HGETs the backend has run (`INFO commandstats`, summed over
/// a real cluster's nodes): a script's calls count, as Redis counts them.
async fn hget_calls(ctx: &redmodel_suite::TestCtx) -> redmodel::Result<u64> {
    let Some(urls) = ctx.cluster_urls() else {
        let info: String = ctx.db.query(redis::cmd("INFO").arg("commandstats")).await?;
        return Ok(redmodel_suite::command_calls(&info, "hget"));
    };
    let mut total = 0;
    for url in urls {
        let mut conn = redis::Client::open(url.as_str())?
            .get_multiplexed_async_connection()
            .await?;
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await?;
        total += redmodel_suite::command_calls(&info, "hget");
    }
    Ok(total)
}

backend_tests! {
    /// An increment answers with its own reply while that is exact where
    /// the write runs: in process always, in a script while Lua holds it
    /// exactly (within 2^53). Past that a script reads the field back.
    exclusive async fn an_increment_reads_its_field_back_only_where_its_reply_is_rounded(
        ctx
    ) -> redmodel::Result<()> {
        let db = &ctx.db;
        classes(db, &[1]).await?;
        student("a", 1, [1, 2, 3]).insert(db).await?;
        let a = Student::at("a");
        let before = hget_calls(&ctx).await?;
        assert_eq!(a.incr(db, Student::MATH, 5).await?, 8);
        assert_eq!(hget_calls(&ctx).await? - before, 0, "read back within 2^53");
        a.set(db, Student::MATH, (1 << 53) - 1).await?;
        let before = hget_calls(&ctx).await?;
        assert_eq!(a.incr(db, Student::MATH, 2).await?, (1 << 53) + 1);
        let read_back = u64::from(!ctx.is_memory());
        assert_eq!(hget_calls(&ctx).await? - before, read_back, "past 2^53");
        Ok(())
    }
}

backend_tests! {
    exclusive async fn the_codec_stores_readable_text(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let jo = Profile::sample("jo");
        jo.insert(db).await?;
        let raw = raw_hash(db, "profile:jo").await;
        let expected: BTreeMap<String, String> = [
            ("age", "30"),
            ("score", "0.1"),
            ("active", "true"),
            ("nickname", "jo"),
            ("mail", "jo@example.com"),
            ("tags", r#"["a","b c"]"#),
            ("address", r#"{"city":"Paris","zip":null}"#),
            ("extra", r#"{"x":1}"#),
            ("visits", "2"),
            ("level", "3"),
            ("_count", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(raw, expected);
        let loaded = Profile::load(db, "jo").await?.expect("exists");
        assert_eq!(loaded, jo);

        // None fields are absent, and a full write removes them.
        let mut jo2 = Profile::sample("jo");
        jo2.nickname = None;
        jo2.address = None;
        jo2.cache = vec![1, 2, 3];
        jo2.insert(db).await?;
        let raw = raw_hash(db, "profile:jo").await;
        assert!(!raw.contains_key("nickname") && !raw.contains_key("address"));
        assert!(!raw.contains_key("cache"), "skipped fields are not stored");
        let loaded = Profile::load(db, "jo").await?.expect("exists");
        assert_eq!(loaded.nickname, None);
        assert_eq!(loaded.address, None);
        assert_eq!(
            loaded.cache,
            Vec::<u8>::new(),
            "skipped fields load as default"
        );
        Ok(())
    }
}

backend_tests! {
    exclusive async fn defaults_and_missing_fields(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        Profile::sample("jo").insert(db).await?;
        db.query::<()>(
            redis::cmd("HDEL")
                .arg("profile:jo")
                .arg("visits")
                .arg("level"),
        )
        .await?;
        let jo = Profile::load(db, "jo").await?.expect("exists");
        assert_eq!(jo.visits, 0, "#[redmodel(default)]");
        assert_eq!(jo.level, 1, "#[redmodel(default = \"default_level\")]");

        db.query::<()>(redis::cmd("HDEL").arg("profile:jo").arg("age"))
            .await?;
        let err = Profile::load(db, "jo").await.unwrap_err();
        assert!(
            matches!(&err, Error::MissingField { key, field } if key == "profile:jo" && field == "age"),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("profile:jo") && text.contains("`age`"),
            "{text}"
        );

        // A renamed field is missing under its stored name.
        Profile::sample("jo").insert(db).await?;
        db.query::<()>(redis::cmd("HDEL").arg("profile:jo").arg("mail"))
            .await?;
        let err = Profile::load(db, "jo").await.unwrap_err();
        assert!(
            matches!(&err, Error::MissingField { field, .. } if field == "mail"),
            "{err}"
        );

        // A hash with only `_count` exists, and lacks the required fields.
        db.query::<()>(redis::cmd("HSET").arg("teacher:only").arg("_count").arg(1))
            .await?;
        let err = Teacher::load(db, "only").await.unwrap_err();
        assert!(matches!(err, Error::MissingField { .. }), "{err}");
        Ok(())
    }
}

backend_tests! {
    /// One bad object does not sink a batch read:
    /// `load_many_each` gives each object its own result, where `load_many`
    /// fails whole.
    exclusive async fn a_batch_read_gives_each_object_its_result(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        for id in ["A", "B", "C"] {
            teacher_named(id).insert(db).await?;
        }
        // B is corrupted (a required field gone), C is another type.
        db.query::<()>(redis::cmd("HDEL").arg("teacher:B").arg("name")).await?;
        db.query::<()>(redis::cmd("DEL").arg("teacher:C")).await?;
        db.query::<()>(redis::cmd("SET").arg("teacher:C").arg("x")).await?;
        // E holds none of the fields the batch's HMGETs read (a Teacher
        // always stores one, so they do not read `_count`): the EXISTS
        // counts it, and the batch is read again whole.
        db.query::<()>(redis::cmd("HSET").arg("teacher:E").arg("_count").arg(1))
            .await?;
        assert!(Teacher::load_many(db, ["A", "B", "C", "D"]).await.is_err());
        let each = Teacher::load_many_each(db, ["A", "B", "C", "D", "E"]).await?;
        assert_eq!(each.len(), 5);
        assert!(matches!(&each[0], Ok(Some(t)) if *t == teacher_named("A")), "{:?}", each[0]);
        assert!(
            matches!(&each[1], Err(Error::MissingField { key, field }) if key == "teacher:B" && field == "name"),
            "{:?}",
            each[1]
        );
        assert!(
            matches!(&each[2], Err(Error::UnexpectedType { key, .. }) if key == "teacher:C"),
            "{:?}",
            each[2]
        );
        assert!(matches!(&each[3], Ok(None)), "{:?}", each[3]);
        assert!(
            matches!(&each[4], Err(Error::MissingField { key, field }) if key == "teacher:E" && field == "name"),
            "{:?}",
            each[4]
        );
        Ok(())
    }
}

backend_tests! {
    exclusive async fn bad_data_gives_typed_errors_naming_key_and_field(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        classes(db, &[1, 2]).await?;
        student("a", 1, [100, 100, 50]).insert(db).await?;
        let hset = |key: &str, field: &str, value: &str| {
            redis::cmd("HSET").arg(key).arg(field).arg(value).clone()
        };
        let cases = [
            ("math", "fifty", "not an integer"),
            ("class", "teacher:A", "not a key of model `class`"),
            ("class", "class:01", "canonical"),
        ];
        for (field, value, why) in cases {
            student("a", 1, [100, 100, 50]).insert(db).await?;
            db.query::<()>(&hset("student:a", field, value)).await?;
            let err = Student::load(db, "a").await.unwrap_err();
            match &err {
                Error::Decode {
                    key,
                    field: f,
                    reason,
                } => {
                    assert_eq!((key.as_str(), f.as_str()), ("student:a", field));
                    assert!(reason.contains(why), "{reason}");
                }
                other => panic!("{field}={value}: {other}"),
            }
        }
        // One field read alone fails the same way.
        let err = Student::at("a").get(db, Student::CLASS).await.unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");

        Profile::sample("jo").insert(db).await?;
        for (field, value, why) in [
            ("age", "300", "out of range"),
            ("age", "-1", "not an integer"),
            ("active", "maybe", "not a bool"),
            ("score", "high", "not a number"),
            ("tags", "[1,", "not valid JSON"),
            ("address", "{\"town\":1}", "not valid JSON"),
        ] {
            Profile::sample("jo").insert(db).await?;
            db.query::<()>(&hset("profile:jo", field, value)).await?;
            let err = Profile::load(db, "jo").await.unwrap_err();
            assert!(
                matches!(&err, Error::Decode { key, field: f, reason }
                    if key == "profile:jo" && f == field && reason.contains(why)),
                "{field}={value}: {err}"
            );
        }

        // Non-UTF-8 text in a String field.
        db.query::<()>(
            redis::cmd("HSET")
                .arg("teacher:A")
                .arg("name")
                .arg(&[0xffu8, 0xfe][..]),
        )
        .await?;
        db.query::<()>(redis::cmd("HSET").arg("teacher:A").arg("subject").arg("x"))
            .await?;
        let err = Teacher::load(db, "A").await.unwrap_err();
        assert!(
            matches!(&err, Error::Decode { field, .. } if field == "name"),
            "{err}"
        );
        let err = Teacher::at("A").load_map(db).await.unwrap_err();
        assert!(
            matches!(&err, Error::Decode { field, .. } if field == "name"),
            "{err}"
        );

        // Another Redis type where a hash is expected.
        db.query::<()>(redis::cmd("RPUSH").arg("teacher:L").arg("x"))
            .await?;
        for err in [
            Teacher::load(db, "L").await.unwrap_err(),
            Teacher::at("L").get(db, Teacher::NAME).await.unwrap_err(),
            Teacher::at("L")
                .set(db, Teacher::NAME, "x")
                .await
                .unwrap_err(),
            Teacher::at("L").load_map(db).await.unwrap_err(),
            teacher_named("L").insert(db).await.unwrap_err(),
        ] {
            assert!(
                matches!(&err, Error::UnexpectedType { key, expected: "hash" } if key == "teacher:L"),
                "{err}"
            );
        }
        teacher_named("G").insert(db).await?;
        let err = Teacher::load_many(db, ["G", "L"]).await.unwrap_err();
        assert!(
            matches!(&err, Error::UnexpectedType { key, .. } if key == "teacher:L"),
            "{err}"
        );
        Ok(())
    }
}

fn teacher_named(id: &str) -> Teacher {
    Teacher {
        id: id.into(),
        name: format!("Teacher {id}"),
        subject: "art".into(),
    }
}

backend_tests! {
    exclusive async fn references_resolve_to_the_object(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        Class {
            id: 1,
            name: "Class 1".into(),
        }
        .insert(db)
        .await?;
        student("a", 1, [100, 100, 50]).insert(db).await?;
        assert_eq!(
            db.query::<String>(redis::cmd("HGET").arg("student:a").arg("class"))
                .await?,
            "class:1"
        );
        let a = Student::load(db, "a").await?.expect("exists");
        assert_eq!(a.class, Class::at(1));
        let class = a.class.load(db).await?.expect("class exists");
        assert_eq!(class.name, "Class 1");
        // A reference to an object that does not exist is refused: nothing
        // written (no write leaves a dangling reference).
        let err = student("b", 9, [1, 2, 3]).insert(db).await.unwrap_err();
        assert!(matches!(&err, Error::NotFound { key } if key == "class:9"), "{err:?}");
        assert!(!Student::at("b").exists(db).await?);
        // One that dangles anyway (the class deleted without a cascade)
        // resolves to nothing.
        db.query::<()>(redis::cmd("DEL").arg("class:1")).await?;
        assert_eq!(a.class.load(db).await?, None);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn write_count_insert_without_sync_and_delete(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let a = teacher_a();
        a.insert(db).await?;
        a.insert(db).await?;
        assert_eq!(Teacher::at("A").write_count(db).await?, 2);
        a.insert_without_sync(db).await?;
        assert_eq!(Teacher::at("A").write_count(db).await?, 2);
        assert_eq!(Teacher::at("B").write_count(db).await?, 0);
        teacher_named("B").insert_without_sync(db).await?;
        assert!(!raw_hash(db, "teacher:B").await.contains_key("_count"));
        assert_eq!(Teacher::load(db, "B").await?, Some(teacher_named("B")));

        // Undeclared fields survive a full write.
        db.query::<()>(redis::cmd("HSET").arg("teacher:A").arg("note").arg("x"))
            .await?;
        a.insert(db).await?;
        assert_eq!(raw_hash(db, "teacher:A").await["note"], "x");

        assert!(Teacher::delete(db, "A").await?);
        assert!(!Teacher::delete(db, "A").await?);
        assert!(!Teacher::at("B").delete(db).await.map(|_| false)?);
        assert_eq!(Teacher::load(db, "A").await?, None);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn expiry(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let a = teacher_a().insert(db).await?;
        assert_eq!(a.ttl(db).await?, Ttl::Persistent);
        assert_eq!(Teacher::at("Z").ttl(db).await?, Ttl::Missing);
        assert!(a.expire(db, Duration::from_secs(100)).await?);
        match a.ttl(db).await? {
            Ttl::Expires(d) => {
                assert!(d > Duration::from_secs(90) && d <= Duration::from_secs(100))
            }
            other => panic!("{other:?}"),
        }
        // Field updates keep the TTL (HSET), as in Redis.
        a.set(db, Teacher::NAME, "x").await?;
        teacher_a().insert(db).await?;
        assert!(matches!(a.ttl(db).await?, Ttl::Expires(_)));
        assert!(a.persist(db).await?);
        assert!(!a.persist(db).await?);
        assert_eq!(a.ttl(db).await?, Ttl::Persistent);
        assert!(!Teacher::at("Z").expire(db, Duration::from_secs(1)).await?);
        Ok(())
    }
}

/// Building from a map or values needs no round trip, so no backend.
#[test]
fn build_from_map_and_values() -> redmodel::Result<()> {
    let a = Teacher::at("A");
    let t = a.build_from_map([("name", "Teacher A"), ("subject", "math"), ("other", "x")])?;
    assert_eq!(t, teacher_a());
    let t = a.build_from_values([Some("Teacher A"), Some("math")])?;
    assert_eq!(t, teacher_a());
    let err = a.build_from_values([Some("Teacher A")]).unwrap_err();
    assert!(
        matches!(&err, Error::MissingField { field, key } if field == "subject" && key == "teacher:A")
    );
    let err = a.build_from_map([("name", "x")]).unwrap_err();
    assert!(matches!(err, Error::MissingField { .. }));
    let s = Student::at("a").build_from_map([
        ("class", "class:1"),
        ("chinese", "1"),
        ("english", "2"),
        ("math", "x"),
    ]);
    assert!(matches!(s, Err(Error::Decode { .. })));
    assert_eq!(<Teacher as redmodel::Model>::FIELDS, &["name", "subject"]);
    Ok(())
}

backend_tests! {
    exclusive async fn get_many_in_one_round_trip(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        for id in ["A", "B", "C"] {
            teacher_named(id).insert(db).await?;
        }
        let before = db.round_trips();
        let got = Teacher::load_many(db, ["C", "missing", "A"]).await?;
        assert_eq!(db.round_trips() - before, 1);
        assert_eq!(
            got,
            vec![Some(teacher_named("C")), None, Some(teacher_named("A"))]
        );
        assert!(Teacher::load_many(db, Vec::<String>::new())
            .await?
            .is_empty());
        Ok(())
    }
}

backend_tests! {
    exclusive async fn scan_all_objects_of_a_model(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let ids = ["A", "B", "a*b", "x:y", "", "[z]", "é"];
        for id in ids {
            teacher_named(id).insert(db).await?;
        }
        // Keys that look alike but are not teachers.
        Teacher::at("A")
            .relation::<TeacherClasses>()
            .push(db, Class::at(1))
            .await?;
        db.query::<()>(redis::cmd("SET").arg("teacherx:1").arg("x"))
            .await?;
        db.query::<()>(redis::cmd("SET").arg("teacher:_unique:x").arg("x"))
            .await?;
        let mut expected: Vec<ObjectRef<Teacher>> = ids.iter().map(|id| Teacher::at(*id)).collect();
        expected.sort();
        assert_eq!(Teacher::scan(db).await?, expected);
        let mut objects = ObjectRef::<Teacher>::load_all(db).await?;
        objects.sort_by(|a, b| a.id.cmp(&b.id));
        let mut want: Vec<Teacher> = ids.iter().map(|id| teacher_named(id)).collect();
        want.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(objects, want);
        assert_eq!(redmodel::model::dbsize(db).await?, ids.len() as u64 + 3);
        Ok(())
    }
}

backend_tests! {
    /// `load_all` reads a model larger than one batch a batch at a time:
    /// every object, in key order, in as many requests as batches after
    /// the scan's.
    exclusive async fn load_all_reads_more_than_a_batch_in_batches_in_key_order(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let count = 2 * redmodel::model::LOAD_BATCH + 5;
        let teachers: Vec<Teacher> = (0..count).map(|i| teacher_named(&format!("t{i:05}"))).collect();
        for done in Teacher::insert_many(db, &teachers).await {
            done.map_err(|e| e.error)?;
        }
        let before = db.round_trips();
        Teacher::scan(db).await?;
        let scan = db.round_trips() - before;
        let before = db.round_trips();
        let objects = Teacher::load_all(db).await?;
        assert_eq!(db.round_trips() - before, scan + 3, "the scan, then three batches");
        assert_eq!(objects, teachers);
        Ok(())
    }
}

fn exam(year: u32, marks: [i64; 3]) -> Exam {
    Exam {
        year,
        chinese: marks[0],
        english: marks[1],
        math: marks[2],
    }
}

backend_tests! {
    exclusive async fn sub_objects(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        classes(db, &[1, 2]).await?;
        let a = Student::at("a");
        let b = Student::at("b*");
        // A sub-object is written only under an admin that exists.
        let err = a.insert_sub(db, &exam(2024, [100, 100, 50])).await.unwrap_err();
        assert!(matches!(&err, Error::NotFound { key } if key == "student:a"), "{err:?}");
        assert!(!a.sub::<Exam>(2024).exists(db).await?, "nothing written");
        student("a", 1, [1, 1, 1]).insert(db).await?;
        student("b*", 1, [1, 1, 1]).insert(db).await?;
        let handle = a.insert_sub(db, &exam(2024, [100, 100, 50])).await?;
        assert_eq!(handle.key(), "student:a:exam:2024");
        a.insert_sub(db, &exam(2023, [90, 90, 40])).await?;
        exam(2024, [1, 2, 3]).insert_at(db, &b).await?;

        assert!(a.sub::<Exam>(2024).exists(db).await?);
        assert!(!a.sub::<Exam>(2020).exists(db).await?);
        assert_eq!(
            a.sub::<Exam>(2024).load(db).await?,
            Some(exam(2024, [100, 100, 50]))
        );
        assert_eq!(a.sub::<Exam>(2020).load(db).await?, None);
        assert_eq!(a.sub::<Exam>(2024).get(db, Exam::MATH).await?, Some(50));
        let (c, m) = a
            .sub::<Exam>(2023)
            .get_fields(db, (Exam::CHINESE, Exam::MATH))
            .await?;
        assert_eq!((c, m), (Some(90), Some(40)));
        assert_eq!(
            a.sub::<Exam>(2023).load_map(db).await?.map(|m| m.len()),
            Some(3)
        );
        assert_eq!(a.sub::<Exam>(2024).incr(db, Exam::MATH, 1).await?, 51);
        assert_eq!(a.sub::<Exam>(2024).write_count(db).await?, 1);

        assert_eq!(
            a.scan_sub_keys::<Exam>(db).await?,
            vec!["student:a:exam:2023", "student:a:exam:2024"]
        );
        assert_eq!(b.scan_subs::<Exam>(db).await?, vec![b.sub::<Exam>(2024)]);
        let objects = a.load_subs::<Exam>(db).await?;
        assert_eq!(objects.len(), 2);
        // Every exam under every student.
        assert_eq!(ObjectRef::<Exam>::scan(db).await?.len(), 3);
        // Sub-objects are their own keys: the student's hash holds none.
        assert_eq!(Student::load(db, "a").await?, Some(student("a", 1, [1, 1, 1])));

        let parsed = ObjectRef::<Exam>::parse("student:b%2A:exam:2024")?;
        assert_eq!(parsed, b.sub::<Exam>(2024));
        assert!(a.sub::<Exam>(2024).delete(db).await?);
        assert_eq!(a.scan_sub_keys::<Exam>(db).await?.len(), 1);
        Ok(())
    }
}

backend_tests! {
    exclusive async fn single_value_sub_objects(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        classes(db, &[1, 2]).await?;
        let a = Student::at("a");
        let note = a.sub::<Note>("home");
        assert_eq!(note.key(), "student:a:note:home");
        let err = note.set_value(db, "no admin").await.unwrap_err();
        assert!(matches!(&err, Error::NotFound { key } if key == "student:a"), "{err:?}");
        student("a", 1, [1, 1, 1]).insert(db).await?;
        assert_eq!(note.get_value(db).await?, None);
        note.set_value(db, "call parents").await?;
        assert_eq!(
            db.query::<String>(redis::cmd("GET").arg(ctx.stored("student:a:note:home")))
                .await?,
            "call parents"
        );
        assert_eq!(note.get_value(db).await?.as_deref(), Some("call parents"));
        assert_eq!(
            note.load(db).await?,
            Some(Note {
                topic: "home".into(),
                text: "call parents".into()
            })
        );
        a.insert_sub(
            db,
            &Note {
                topic: "school".into(),
                text: "ok".into(),
            },
        )
        .await?;
        assert_eq!(a.scan_sub_keys::<Note>(db).await?.len(), 2);
        assert_eq!(
            note.load_map(db).await?,
            Some(BTreeMap::from([(
                "text".to_string(),
                "call parents".to_string()
            )]))
        );
        // A hash where the string is expected.
        db.query::<()>(redis::cmd("HSET").arg(ctx.stored("student:a:note:h")).arg("f").arg("v"))
            .await?;
        let err = a.sub::<Note>("h").get_value(db).await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::UnexpectedType {
                    expected: "string",
                    ..
                }
            ),
            "{err}"
        );
        let err = a.sub::<Note>("h").load(db).await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::UnexpectedType {
                    expected: "string",
                    ..
                }
            ),
            "{err}"
        );
        Ok(())
    }
}

backend_tests! {
    exclusive async fn parse_keys_back_into_handles(ctx) -> redmodel::Result<()> {
        let t = ObjectRef::<Teacher>::parse("teacher:A")?;
        assert_eq!(t, Teacher::at("A"));
        assert_eq!(t.pk(), "A");
        let err = ObjectRef::<Teacher>::parse("class:1").unwrap_err();
        assert!(
            matches!(&err, Error::InvalidKey { key, model: "teacher", .. } if key == "class:1"),
            "{err}"
        );
        let c = ObjectRef::<Class>::parse("class:7")?;
        assert_eq!(*c.pk(), 7);
        Ok(())
    }
}

/// Model operations run on spawned tasks: their futures are `Send`.
#[tokio::test]
async fn operations_run_on_spawned_tasks() {
    let db = Db::memory();
    let task = tokio::spawn({
        let db = db.clone();
        async move {
            teacher_a().insert(&db).await?;
            let link = Teacher::at("A")
                .relation::<TeacherClasses>()
                .link(&db, Class::at(1))
                .await;
            let loaded = Teacher::load(&db, "A").await?;
            let classes = Teacher::at("A")
                .relation::<TeacherClasses>()
                .load(&db)
                .await?;
            Ok::<_, Error>((loaded, link, classes))
        }
    });
    let (loaded, link, classes) = task.await.unwrap().unwrap();
    assert_eq!(loaded, Some(teacher_a()));
    assert!(
        matches!(&link, Err(Error::NotFound { key }) if key == "class:1"),
        "class:1 was never inserted: {link:?}"
    );
    assert!(classes.is_empty());
}

/// A JSON field whose value cannot be written (a map with non-string keys).
#[derive(Admin, Debug)]
struct Board {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(json)]
    cells: std::collections::HashMap<(u8, u8), u8>,
}

backend_tests! {
    exclusive async fn values_that_cannot_be_encoded_write_nothing(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let board = Board {
            id: 1,
            cells: [((0, 0), 1)].into_iter().collect(),
        };
        let err = board.insert(db).await.unwrap_err();
        assert!(
            matches!(&err, Error::Encode { key, field, .. } if key == "board:1" && field == "cells"),
            "{err}"
        );
        let err = Board::at(1)
            .set(db, Board::CELLS, board.cells.clone())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Encode { .. }), "{err}");
        let err = Board::at(1)
            .set_many(db, [Board::CELLS.to(board.cells.clone())])
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Encode { .. }), "{err}");
        assert!(!Board::exists(db, 1).await?);
        assert_eq!(Board::load(db, 1).await?.map(|b| b.id), None);
        Ok(())
    }
}

/// A model whose every field may be absent: a stored object may have none.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "memo")]
struct Memo {
    #[redmodel(pk)]
    id: String,
    text: Option<String>,
}

backend_tests! {
    exclusive async fn an_object_with_no_value_is_not_a_missing_one(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let blank = |id: &str| Memo { id: id.into(), text: None };
        // Stored by redmodel with no value (the hash holds `_count`).
        blank("kept").insert(db).await?;
        // Written by hand: with a declared field, and with none.
        db.query::<()>(redis::cmd("HSET").arg(ctx.stored("memo:text")).arg("text").arg("hi"))
            .await?;
        db.query::<()>(redis::cmd("HSET").arg(ctx.stored("memo:other")).arg("other").arg("1"))
            .await?;
        let before = db.round_trips();
        assert_eq!(Memo::at("kept").load(db).await?, Some(blank("kept")));
        let got = Memo::at("text").load(db).await?;
        assert_eq!(got.and_then(|n| n.text).as_deref(), Some("hi"));
        assert_eq!(Memo::at("other").load(db).await?, Some(blank("other")));
        assert_eq!(Memo::at("missing").load(db).await?, None);
        // One round trip each (the HMGET of the fields by position), but
        // for the two whose reply has no value, the hash of undeclared
        // fields only and the missing one, which are then read whole.
        assert_eq!(db.round_trips() - before, 6);
        let before = db.round_trips();
        assert_eq!(
            Memo::load_many(db, ["missing", "kept", "text"]).await?,
            vec![None, Some(blank("kept")), Some(Memo { id: "text".into(), text: Some("hi".into()) })]
        );
        assert_eq!(db.round_trips() - before, 1, "a missing object costs nothing more");
        assert_eq!(
            Memo::load_many(db, ["missing", "other", "kept", "text"]).await?,
            vec![
                None,
                Some(blank("other")),
                Some(blank("kept")),
                Some(Memo { id: "text".into(), text: Some("hi".into()) }),
            ]
        );
        let each = ObjectRef::load_many_each(db, &[Memo::at("other"), Memo::at("missing")]).await?;
        assert!(matches!(&each[..], [Ok(Some(_)), Ok(None)]));
        Ok(())
    }
}

/// Only a model whose every field may be absent reads `_count` with its
/// fields to tell an object from a missing key (checked as the tests
/// compile).
const _: () = {
    use redmodel::model::Model;
    assert!(!Memo::ALWAYS_HOLDS_A_FIELD, "Option fields only");
    assert!(Teacher::ALWAYS_HOLDS_A_FIELD, "String fields");
    assert!(Student::ALWAYS_HOLDS_A_FIELD, "a Ref and integers");
    assert!(Profile::ALWAYS_HOLDS_A_FIELD, "every kind of field");
};

/// A model with every kind of index, for the per-item batch reads.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "badge")]
struct Badge {
    #[redmodel(pk)]
    id: u32,
    name: String,
    #[redmodel(sorted)]
    points: u64,
    #[redmodel(tags)]
    kinds: Vec<String>,
    #[redmodel(recent = 10)]
    seen: Option<u64>,
}

/// `teacher:A:badge` = [badge:1, ...]
#[derive(Relation)]
#[redmodel(table = "badge", owner = Teacher, member = Badge)]
struct TeacherBadges;

backend_tests! {
    /// Every batch read through an index or a relation has a per-item
    /// form: one corrupted object is an error in its own
    /// place, where the all-or-nothing form fails whole.
    exclusive async fn index_and_relation_reads_give_each_object_its_result(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        teacher_named("A").insert(db).await?;
        for id in 1..=3u32 {
            let badge = Badge {
                id,
                name: format!("b{id}"),
                points: u64::from(id) * 10,
                kinds: vec!["x".into()],
                seen: Some(u64::from(id)),
            };
            badge.insert(db).await?;
            Teacher::at("A").relation::<TeacherBadges>().link(db, Badge::at(id)).await?;
        }
        // badge:2 loses a required field.
        db.query::<()>(redis::cmd("HDEL").arg(ctx.stored("badge:2")).arg("name")).await?;
        let ok = |r: &redmodel::Result<Badge>, id: u32| matches!(r, Ok(b) if b.id == id);
        let bad = |r: &redmodel::Result<Badge>| {
            matches!(r, Err(Error::MissingField { key, field }) if key == "badge:2" && field == "name")
        };

        assert!(Badge::POINTS_SORTED.top(db, 3).await.is_err());
        let top = Badge::POINTS_SORTED.top_each(db, 3).await?;
        assert!(top.len() == 3 && ok(&top[0], 3) && bad(&top[1]) && ok(&top[2], 1), "{top:?}");
        let bottom = Badge::POINTS_SORTED.bottom_each(db, 2).await?;
        assert!(bottom.len() == 2 && ok(&bottom[0], 1) && bad(&bottom[1]), "{bottom:?}");

        assert!(Badge::KINDS_TAGS.with(db, "x").await.is_err());
        let tagged = Badge::KINDS_TAGS.with_each(db, "x").await?;
        assert!(tagged.len() == 3 && ok(&tagged[0], 1) && bad(&tagged[1]) && ok(&tagged[2], 3), "{tagged:?}");

        assert!(Badge::SEEN_RECENT.load(db).await.is_err());
        let recent = Badge::SEEN_RECENT.load_each(db).await?;
        assert!(recent.len() == 3 && ok(&recent[0], 3) && bad(&recent[1]) && ok(&recent[2], 1), "{recent:?}");

        let badges = Teacher::at("A").relation::<TeacherBadges>();
        assert!(badges.load(db).await.is_err());
        let members = badges.load_each(db).await?;
        assert!(members.len() == 3 && ok(&members[0], 1) && bad(&members[1]) && ok(&members[2], 3), "{members:?}");
        Ok(())
    }
}

backend_tests! {
    /// One error for one mistake: an increment of a
    /// field that holds no number is a `Decode` naming the key and the
    /// field, whether the field is indexed (here `sorted`) or not, and
    /// moves nothing.
    exclusive async fn incr_of_a_non_number_is_the_same_error_on_an_indexed_field(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        Badge { id: 1, name: "b".into(), points: 10, kinds: vec![], seen: None }.insert(db).await?;
        db.query::<()>(redis::cmd("HSET").arg(ctx.stored("badge:1")).arg("points").arg("lots")).await?;
        let got = Badge::at(1).incr(db, Badge::POINTS, 5).await;
        assert!(
            matches!(&got, Err(Error::Decode { key, field, .. }) if key == "badge:1" && field == "points"),
            "{got:?}"
        );
        let raw: String = db.query(redis::cmd("HGET").arg(ctx.stored("badge:1")).arg("points")).await?;
        assert_eq!(raw, "lots");
        assert_eq!(Badge::POINTS_SORTED.score(db, Badge::at(1)).await?, Some(10.0));
        Ok(())
    }
}
