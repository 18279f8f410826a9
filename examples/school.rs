//! The seed's school, end to end: teachers, classes and students as admin
//! objects, one exam sub-object per student, teacher <-> class as a
//! many-to-many relation kept in step on both sides, class -> students as a
//! relation plus a reference field on each student, and a hot list of the
//! good students.
//!
//! Runs on the Redis at `REDIS_URL` if set, else on the bundled memory
//! engine: `cargo run --example school`. It first removes the keys it
//! writes, so running it twice leaves the same keys and values.

use std::collections::BTreeMap;

use redmodel::model::{MemberList, Ref};
use redmodel::prelude::*;
use redmodel::Error;

/// `teacher:A` = {name, subject}
#[derive(Admin, Debug, Clone, PartialEq)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    name: String,
    subject: String,
}

/// `class:1` = {name}
#[derive(Admin, Debug, Clone, PartialEq)]
struct Class {
    #[redmodel(pk)]
    id: u32,
    name: String,
}

/// `student:a` = {class: "class:1", chinese, english, math}: the seed keeps
/// the latest marks on the student, and the class as a reference field.
#[derive(Admin, Debug, Clone, PartialEq)]
struct Student {
    #[redmodel(pk)]
    id: String,
    class: Ref<Class>,
    chinese: i64,
    english: i64,
    math: i64,
}

/// `student:a:exam:2024` = {chinese, english, math}: one exam's marks.
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Student)]
struct Exam {
    #[redmodel(pk)]
    year: u32,
    chinese: i64,
    english: i64,
    math: i64,
}

/// `teacher:A:class` = [class:1, class:2], kept in step with
/// `class:1:teacher` = [teacher:A].
#[derive(Relation)]
#[redmodel(table = "class", owner = Teacher, member = Class, inverse = ClassTeachers)]
struct TeacherClasses;

/// `class:2:teacher` = [teacher:A, teacher:B].
#[derive(Relation)]
#[redmodel(table = "teacher", owner = Class, member = Teacher, inverse = TeacherClasses)]
struct ClassTeachers;

/// `class:2:student` = [student:b, student:c] (the other direction is the
/// student's `class` reference field).
#[derive(Relation)]
#[redmodel(table = "student", owner = Class, member = Student)]
struct ClassStudents;

/// The seed's "make the good students a hot value".
const GOOD_STUDENTS: &str = "performance:good";
const EXAM_YEAR: u32 = 2024;
const TEACHERS: [(&str, &str, &str); 2] =
    [("A", "Teacher A", "math"), ("B", "Teacher B", "chinese")];
const CLASSES: [(u32, &str); 2] = [(1, "Class 1"), (2, "Class 2")];
/// (student, class, [chinese, english, math])
const STUDENTS: [(&str, u32, [i64; 3]); 3] = [
    ("a", 1, [100, 100, 50]),
    ("b", 2, [90, 80, 95]),
    ("c", 2, [70, 85, 88]),
];
const TEACHES: [(&str, u32); 3] = [("A", 1), ("A", 2), ("B", 2)];

#[tokio::main]
async fn main() -> Result<(), Error> {
    let db = Db::from_env().await?;
    println!("backend: {}", db.backend_name());
    db.on_sync(|event| println!("sync hook: {} reached {} writes", event.key, event.count));

    reset(&db).await?;
    build(&db).await?;
    read_back(&db).await?;
    print_key_tree(&db).await?;
    Ok(())
}

/// Every key the demo writes, so that a second run starts clean.
pub async fn reset(db: &Db) -> Result<(), Error> {
    // Raw commands name keys as the database stores them (`key_in`): on a
    // Redis Cluster, keys under an admin carry its hash tag.
    let mut keys: Vec<String> = vec![GOOD_STUDENTS.to_string()];
    for (id, ..) in TEACHERS {
        let teacher = Teacher::at(id);
        keys.push(teacher.key_in(db).into_owned());
        keys.push(teacher.relation::<TeacherClasses>().key_in(db).into_owned());
    }
    for (id, _) in CLASSES {
        let class = Class::at(id);
        keys.push(class.key_in(db).into_owned());
        keys.push(class.relation::<ClassTeachers>().key_in(db).into_owned());
        keys.push(class.relation::<ClassStudents>().key_in(db).into_owned());
    }
    for (id, ..) in STUDENTS {
        let student = Student::at(id);
        keys.push(student.key_in(db).into_owned());
        keys.push(student.sub::<Exam>(EXAM_YEAR).key_in(db).into_owned());
    }
    let mut pipe = redis::pipe();
    for key in &keys {
        pipe.cmd("DEL").arg(key).ignore();
    }
    db.query_pipeline::<()>(&pipe).await
}

/// Writes the school.
pub async fn build(db: &Db) -> Result<(), Error> {
    for (id, name, subject) in TEACHERS {
        Teacher {
            id: id.into(),
            name: name.into(),
            subject: subject.into(),
        }
        .insert(db)
        .await?;
    }
    for (id, name) in CLASSES {
        Class {
            id,
            name: name.into(),
        }
        .insert(db)
        .await?;
    }
    for (id, class, [chinese, english, math]) in STUDENTS {
        let student = Student {
            id: id.into(),
            class: Class::at(class),
            chinese,
            english,
            math,
        };
        let handle = student.insert(db).await?;
        handle
            .insert_sub(
                db,
                &Exam {
                    year: EXAM_YEAR,
                    chinese,
                    english,
                    math,
                },
            )
            .await?;
        Class::at(class)
            .relation::<ClassStudents>()
            .link(db, &handle)
            .await?;
    }
    // Many-to-many: linking teacher:A to class:1 also adds teacher:A to
    // class:1:teacher, in one MULTI/EXEC.
    for (teacher, class) in TEACHES {
        Teacher::at(teacher)
            .relation::<TeacherClasses>()
            .link(db, Class::at(class))
            .await?;
    }
    // The hot list: students with math >= 90, read in one batch.
    let mut students = Student::scan(db).await?;
    students.sort();
    let good: Vec<Student> = redmodel::model::ObjectRef::load_many(db, &students)
        .await?
        .into_iter()
        .flatten()
        .filter(|s| s.math >= 90)
        .collect();
    MemberList::<Student>::at(GOOD_STUDENTS)
        .append(db, good.iter())
        .await?;
    Ok(())
}

/// Reads the school back through the model API and prints it.
pub async fn read_back(db: &Db) -> Result<(), Error> {
    println!();
    let class2 = Class::at(2);
    let teachers = class2.relation::<ClassTeachers>().load(db).await?;
    println!("class:2 is taught by:");
    for t in &teachers {
        println!("  {} ({}, {})", t.id, t.name, t.subject);
    }
    let students = class2.relation::<ClassStudents>().load(db).await?;
    println!("class:2 has students:");
    for s in &students {
        println!(
            "  {} (chinese {}, english {}, math {})",
            s.id, s.chinese, s.english, s.math
        );
    }
    let classes = Teacher::at("A")
        .relation::<TeacherClasses>()
        .load(db)
        .await?;
    let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
    println!("teacher:A teaches: {}", names.join(", "));

    if let Some(a) = Student::load(db, "a").await? {
        let class = a.class.load(db).await?;
        println!(
            "student:a is in {} (through its `class` field = {})",
            class.map_or("no class".to_string(), |c| c.name),
            a.class
        );
    }
    let exam = Student::at("b").sub::<Exam>(EXAM_YEAR);
    if let Some(e) = exam.load(db).await? {
        println!(
            "{}: chinese {}, english {}, math {}",
            exam.key(),
            e.chinese,
            e.english,
            e.math
        );
    }
    let good = MemberList::<Student>::at(GOOD_STUDENTS).members(db).await?;
    let good: Vec<&str> = good.iter().map(|s| s.key()).collect();
    println!("{GOOD_STUDENTS}: {}", good.join(", "));
    Ok(())
}

/// The demo's keys like `redis-cli --scan` shows them, sorted, each with
/// its Redis type and content, read in two pipelined round trips.
pub async fn key_tree(db: &Db) -> Result<Vec<(String, String, String)>, Error> {
    let mut keys = Vec::new();
    // A leading `*` also matches the keys that start with a hash tag.
    for pattern in ["*teacher:*", "*class:*", "*student:*", "*performance:*"] {
        let mut cursor = 0u64;
        loop {
            let (next, batch): (u64, Vec<String>) = db
                .query(redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(pattern))
                .await?;
            keys.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    keys.sort();
    keys.dedup();

    let mut pipe = redis::pipe();
    for key in &keys {
        pipe.cmd("TYPE").arg(key);
    }
    let types: Vec<String> = db.query_pipeline(&pipe).await?;
    let mut pipe = redis::pipe();
    for (key, kind) in keys.iter().zip(&types) {
        match kind.as_str() {
            "hash" => pipe.cmd("HGETALL").arg(key),
            "list" => pipe.cmd("LRANGE").arg(key).arg(0).arg(-1),
            _ => pipe.cmd("GET").arg(key),
        };
    }
    let values: Vec<redis::Value> = db.query_pipeline(&pipe).await?;

    let mut tree = Vec::with_capacity(keys.len());
    for ((key, kind), value) in keys.into_iter().zip(types).zip(values) {
        let shown = match kind.as_str() {
            "hash" => {
                let map: BTreeMap<String, String> =
                    redis::from_redis_value(value).map_err(redis::RedisError::from)?;
                let fields: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{{{}}}", fields.join(", "))
            }
            "list" => {
                let items: Vec<String> =
                    redis::from_redis_value(value).map_err(redis::RedisError::from)?;
                format!("[{}]", items.join(", "))
            }
            _ => format!("{value:?}"),
        };
        tree.push((key, kind, shown));
    }
    Ok(tree)
}

/// Prints [`key_tree`] grouped by model (the key's first segment).
async fn print_key_tree(db: &Db) -> Result<(), Error> {
    let tree = key_tree(db).await?;
    println!("\nkeys ({}):", tree.len());
    let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (key, kind, shown) in &tree {
        // A key of the cluster layout starts with its hash tag: `{teacher:A}:class`.
        let model = key.trim_start_matches('{').split(':').next().unwrap_or(key);
        groups
            .entry(model)
            .or_default()
            .push(format!("  {key:<22} {kind:<5} {shown}"));
    }
    for (model, lines) in groups {
        println!("{model}");
        for line in lines {
            println!("{line}");
        }
    }
    Ok(())
}
