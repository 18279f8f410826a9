//! (A module of `bench_models` and of `benches/in_process.rs`, not of the
//! examples' library: see `lib.rs`.)
//!
//! The operations that `bench_models` times against redis-server and the
//! cluster, and the criterion bench `in_process` times on the engine in
//! process: the school's `Student` and an indexed `Player` through the
//! model, the raw redis-rs code that does the same work, and raw code that
//! also keeps the model's guarantee. See `bench_models.rs` for what each
//! operation sends on each side.

use redis::Pipeline;
use redmodel::model::Ref;
use redmodel::prelude::*;

/// Students of the speed fixture; the operations cycle through them.
pub const STUDENTS: usize = 1000;
/// Students per batch operation (`load_many`, `rel.load`).
const BATCH: usize = 100;
/// Teachers, and classes, that `link` pairs up (so lists stay short).
const LINKED: usize = 10;
/// `Student`'s stored fields, as raw code names them.
const STUDENT_FIELDS: [&str; 4] = ["class", "chinese", "english", "math"];

pub type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

// The school's models (as in examples/school.rs).

/// `teacher:A` = {name, subject}
#[derive(Admin)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    name: String,
    subject: String,
}

/// `class:1` = {name}
#[derive(Admin)]
struct Class {
    #[redmodel(pk)]
    id: u32,
    name: String,
}

/// `student:s1` = {class, chinese, english, math}
#[derive(Admin)]
pub struct Student {
    #[redmodel(pk)]
    id: String,
    class: Ref<Class>,
    chinese: i64,
    english: i64,
    math: i64,
}

/// `teacher:t1:class` = [class:3, ...], kept in step with `class:3:teacher`.
#[derive(Relation)]
#[redmodel(table = "class", owner = Teacher, member = Class, inverse = ClassTeachers)]
struct TeacherClasses;

/// `class:3:teacher` = [teacher:t1, ...].
#[derive(Relation)]
#[redmodel(table = "teacher", owner = Class, member = Teacher, inverse = TeacherClasses)]
struct ClassTeachers;

/// `class:1:student` = [student:s0, ...].
#[derive(Relation)]
#[redmodel(table = "student", owner = Class, member = Student)]
struct ClassStudents;

/// `player:7` = {name, score, tags}, with a unique name, a sorted score and
/// tag sets: the indexed operations' model.
#[derive(Admin)]
struct Player {
    #[redmodel(pk)]
    id: u64,
    #[redmodel(unique)]
    name: String,
    #[redmodel(sorted)]
    score: i64,
    #[redmodel(tags)]
    tags: Vec<String>,
}

/// Players of the indexed operations' fixture, per side: the model's are
/// `0..PLAYERS`, the raw side's `PLAYERS..2 * PLAYERS`.
const PLAYERS: u64 = 1000;

/// Player number `i`, as the fixture stores it.
fn player(i: u64) -> Player {
    Player {
        id: i,
        name: format!("p{i}"),
        score: i64::try_from(i).unwrap_or(0),
        tags: vec![format!("t{}", i % 5)],
    }
}

/// A number no operation has used yet (fresh player ids and names): the
/// timed loops restart their counters at every run.
fn fresh() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(10 * PLAYERS);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The hand-written scripts of the indexed operations (see the module
/// docs). KEYS and ARGV as each one says.
mod scripts {
    use std::sync::LazyLock;

    /// `insert` of a student whose class must exist, marking the class
    /// as referenced (`_refs`), as the model does, so that a delete of
    /// the class racing the insert sees the student. KEYS: student,
    /// class. ARGV: the fields and values.
    pub(super) static STUDENT_INSERT: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(
            r"
            if redis.call('EXISTS', KEYS[2]) == 0 then
              return redis.error_reply('NOTFOUND no class')
            end
            redis.call('HSET', KEYS[1], unpack(ARGV))
            redis.call('HINCRBY', KEYS[2], '_refs', 1)
            return redis.call('HINCRBY', KEYS[1], '_count', 1)",
        )
    });

    /// `incr` of an existing student's field. KEYS: student. ARGV: field.
    pub(super) static STUDENT_INCR: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(
            r"
            if redis.call('EXISTS', KEYS[1]) == 0 then
              return redis.error_reply('NOTFOUND no student')
            end
            return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)",
        )
    });

    /// `link` of a teacher and a class that both exist. KEYS: teacher,
    /// class, the teacher's list, the class's list.
    pub(super) static LINK: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(
            r"
            if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then
              return redis.error_reply('NOTFOUND no teacher or class')
            end
            local removed = redis.call('LREM', KEYS[3], 0, KEYS[2])
            redis.call('RPUSH', KEYS[3], KEYS[2])
            redis.call('LREM', KEYS[4], 0, KEYS[1])
            redis.call('RPUSH', KEYS[4], KEYS[1])
            return removed",
        )
    });

    /// KEYS: player, name entry, sorted set, tag set. ARGV: key, name,
    /// score, tags JSON.
    pub(super) static INSERT: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(
            r"
            if redis.call('EXISTS', KEYS[2]) == 1 then
              return redis.error_reply('UNIQUE name taken')
            end
            redis.call('HSET', KEYS[1], 'name', ARGV[2], 'score', ARGV[3], 'tags', ARGV[4])
            redis.call('HINCRBY', KEYS[1], '_count', 1)
            redis.call('RPUSH', KEYS[2], ARGV[1])
            redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
            redis.call('SADD', KEYS[4], ARGV[1])
            return 1",
        )
    });

    /// KEYS: player, new name entry. ARGV: key, new name, the entry prefix.
    pub(super) static RENAME: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(
            r"
            if redis.call('EXISTS', KEYS[2]) == 1 then
              return redis.error_reply('UNIQUE name taken')
            end
            local old = redis.call('HGET', KEYS[1], 'name')
            if not old then return redis.error_reply('NOTFOUND no player') end
            redis.call('DEL', ARGV[3] .. old)
            redis.call('RPUSH', KEYS[2], ARGV[1])
            redis.call('HSET', KEYS[1], 'name', ARGV[2])
            redis.call('HINCRBY', KEYS[1], '_count', 1)
            return 1",
        )
    });

    /// KEYS: player, sorted set. ARGV: key.
    pub(super) static INCR: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(
            r"
            if redis.call('EXISTS', KEYS[1]) == 0 then
              return redis.error_reply('NOTFOUND no player')
            end
            local score = redis.call('HINCRBY', KEYS[1], 'score', 1)
            redis.call('ZADD', KEYS[2], score, ARGV[1])
            return score",
        )
    });

    /// KEYS: player. ARGV: key, new tags JSON, the tag set prefix, the new
    /// tags.
    pub(super) static RETAG: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(
            r"
            local old = redis.call('HGET', KEYS[1], 'tags')
            if not old then return redis.error_reply('NOTFOUND no player') end
            for _, tag in ipairs(cjson.decode(old)) do
              redis.call('SREM', ARGV[3] .. tag, ARGV[1])
            end
            for i = 4, #ARGV do
              redis.call('SADD', ARGV[3] .. ARGV[i], ARGV[1])
            end
            redis.call('HSET', KEYS[1], 'tags', ARGV[2])
            redis.call('HINCRBY', KEYS[1], '_count', 1)
            return 1",
        )
    });
}

/// Student number `i`: `student:s{i}`, in one of ten classes.
pub fn student(i: usize) -> Student {
    let mark = |salt: usize| ((i * salt) % 41 + 60) as i64;
    Student {
        id: format!("s{i}"),
        class: Class::at((i % 10) as u32),
        chinese: mark(7),
        english: mark(13),
        math: mark(31),
    }
}

/// What raw code parses a student's HMGET into.
#[allow(dead_code)] // built to be measured, never read
struct RawStudent {
    id: String,
    class: String,
    chinese: i64,
    english: i64,
    math: i64,
}

/// Parses the reply of `HMGET student:ID class chinese english math`.
fn parse_student(id: &str, values: Vec<Option<String>>) -> BenchResult<RawStudent> {
    let mut values = values.into_iter();
    let mut next = || {
        values
            .next()
            .flatten()
            .ok_or_else(|| format!("student:{id} lacks a field"))
    };
    Ok(RawStudent {
        id: id.to_string(),
        class: next()?,
        chinese: next()?.parse()?,
        english: next()?.parse()?,
        math: next()?.parse()?,
    })
}

/// A pipeline of `HMGET`s of `STUDENT_FIELDS`, parsed; with `snapshot`,
/// one MULTI (the students as of one instant, as `load_many` reads them).
async fn raw_get_many<'a>(
    conn: &mut Db,
    ids: impl Iterator<Item = &'a str> + Clone,
    snapshot: bool,
) -> BenchResult<Vec<RawStudent>> {
    let mut pipe = redis::pipe();
    if snapshot {
        pipe.atomic();
    }
    for id in ids.clone() {
        pipe.cmd("HMGET")
            .arg(format!("student:{id}"))
            .arg(&STUDENT_FIELDS);
    }
    let rows: Vec<Vec<Option<String>>> = pipe.query_async(conn).await?;
    ids.zip(rows)
        .map(|(id, row)| parse_student(id, row))
        .collect()
}

/// The raw side of the batch reads (`get_many_100`, `relation_load_100`):
/// the `k`-th batch, or the relation's members (LRANGE first), read by a
/// pipeline of HMGETs; one MULTI with `snapshot`.
async fn raw_batch(
    op: Op,
    conn: &mut Db,
    students: &[Student],
    k: usize,
    snapshot: bool,
) -> BenchResult<()> {
    let got = if matches!(op, Op::LoadMembers) {
        let keys: Vec<String> = redis::cmd("LRANGE")
            .arg("class:1:student")
            .arg(0)
            .arg(-1)
            .query_async(conn)
            .await?;
        let ids = keys.iter().filter_map(|k| k.strip_prefix("student:"));
        raw_get_many(conn, ids, snapshot).await?
    } else {
        let ids = batch(students, k).iter().map(|s| s.id.as_str());
        raw_get_many(conn, ids, snapshot).await?
    };
    ensure(got.len() == BATCH, op.name())
}

/// `s`'s stored fields and their values, as HSET takes them (no text
/// made first: raw code writes the numbers straight into the command).
fn student_fields(s: &Student) -> impl redis::ToRedisArgs + '_ {
    (
        ("class", s.class.key()),
        ("chinese", s.chinese),
        ("english", s.english),
        ("math", s.math),
    )
}

/// Adds what `insert` sends for `s` (without MULTI): HSET of its fields
/// and HINCRBY of `_count`.
fn add_insert(pipe: &mut Pipeline, s: &Student) {
    let key = format!("student:{}", s.id);
    pipe.cmd("HSET").arg(&key).arg(student_fields(s)).ignore();
    pipe.cmd("HINCRBY").arg(&key).arg("_count").arg(1);
}

/// Stores `students` as `insert` stores them, in one pipeline, and the
/// teachers and classes that `link` pairs up (a link needs both objects).
pub async fn store(db: &Db, students: &[Student]) -> BenchResult<()> {
    let mut pipe = redis::pipe();
    for s in students {
        add_insert(&mut pipe, s);
    }
    for k in 0..LINKED {
        pipe.cmd("HSET")
            .arg(format!("teacher:t{k}"))
            .arg("name")
            .arg("t")
            .arg("subject")
            .arg("x")
            .ignore();
        pipe.cmd("HSET")
            .arg(format!("class:{k}"))
            .arg("name")
            .arg("c")
            .ignore();
    }
    db.query_pipeline::<()>(&pipe).await?;
    Ok(())
}

fn ensure(ok: bool, what: &str) -> BenchResult<()> {
    if ok {
        Ok(())
    } else {
        Err(what.into())
    }
}

/// The `k`-th batch of `BATCH` students.
fn batch(students: &[Student], k: usize) -> &[Student] {
    let start = k % (students.len() / BATCH).max(1) * BATCH;
    students.get(start..start + BATCH).unwrap_or_default()
}

/// The `k`-th (teacher, class) pair that `link` links.
fn pair(k: usize) -> (String, u32) {
    (format!("t{}", k % LINKED), (k / LINKED % LINKED) as u32)
}

/// The list `rel.load` reads: class 1's students, the first `BATCH`.
fn relation() -> redmodel::model::RelationRef<ClassStudents> {
    Class::at(1).relation::<ClassStudents>()
}

#[derive(Clone, Copy)]
pub enum Op {
    Insert,
    Load,
    Incr,
    GetMany,
    LoadMembers,
    Link,
    IndexedInsert,
    UniqueChange,
    SortedIncr,
    TagChange,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Model,
    /// The commands a redis-rs user would write for the same data.
    Raw,
    /// Raw code that also keeps the model's guarantee where `Raw` does not
    /// (see [`Op::guarded`]).
    Same,
    /// Beside an indexed write, the plain `Student` insert through the
    /// model: what a guarded write costs over a plain one, timed side by
    /// side (see [`Op::indexed`]).
    Plain,
}

/// Every side, in the order of a table row's entries.
pub const SIDES: [Side; 4] = [Side::Model, Side::Raw, Side::Same, Side::Plain];

impl Side {
    /// `model`, `raw`, `same` or `plain`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Model => "model",
            Side::Raw => "raw",
            Side::Same => "same",
            Side::Plain => "plain",
        }
    }

    /// Whether `BENCH_SIDE` (a side's [`name`](Self::name)) leaves this
    /// side in: every side without it.
    pub fn selected(self) -> bool {
        std::env::var("BENCH_SIDE").map_or(true, |only| only == self.name())
    }
}

impl Op {
    /// The `k`-th operation on `side`: the model's on `db`, raw code's on
    /// `conn` (`None` where there is no raw side, as on the cluster).
    pub async fn run(
        self,
        side: Side,
        db: &Db,
        conn: Option<&mut Db>,
        students: &[Student],
        k: usize,
    ) -> BenchResult<()> {
        match (side, conn) {
            (Side::Model, _) => self.model(db, students, k).await,
            (Side::Raw, Some(conn)) => self.raw(conn, students, k).await,
            (Side::Same, Some(conn)) => self.guarded(conn, students, k).await,
            (Side::Raw | Side::Same, None) => Err("no raw side".into()),
            (Side::Plain, _) => Op::Insert.model(db, students, k).await,
        }
    }

    /// Whether `side` measures something for this operation: the model and
    /// raw code always, raw code with the same guarantee where raw code
    /// lacks it ([`same_guarantee`](Self::same_guarantee)), the plain
    /// insert beside the indexed writes ([`indexed`](Self::indexed)).
    pub fn has(self, side: Side) -> bool {
        match side {
            Side::Model | Side::Raw => true,
            Side::Same => self.same_guarantee(),
            Side::Plain => self.indexed(),
        }
    }

    /// Whether this is a write that keeps a unique, sorted or tag index
    /// (timed beside a plain insert, for the `g/plain` ratio).
    pub fn indexed(self) -> bool {
        matches!(
            self,
            Op::IndexedInsert | Op::UniqueChange | Op::SortedIncr | Op::TagChange
        )
    }

    /// Every operation, in the order of the tables.
    pub const ALL: [Op; 10] = [
        Op::Insert,
        Op::Load,
        Op::Incr,
        Op::GetMany,
        Op::LoadMembers,
        Op::Link,
        Op::IndexedInsert,
        Op::UniqueChange,
        Op::SortedIncr,
        Op::TagChange,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Load => "load",
            Op::Incr => "incr",
            Op::GetMany => "get_many_100",
            Op::LoadMembers => "relation_load_100",
            Op::Link => "link",
            Op::IndexedInsert => "indexed_insert",
            Op::UniqueChange => "unique_change",
            Op::SortedIncr => "sorted_incr",
            Op::TagChange => "tag_change",
        }
    }

    /// The `k`-th operation through the model.
    pub async fn model(self, db: &Db, students: &[Student], k: usize) -> BenchResult<()> {
        let s = &students[k % students.len()];
        match self {
            Op::Insert => {
                s.insert(db).await?;
            }
            Op::Load => ensure(Student::load(db, &s.id).await?.is_some(), "no student")?,
            Op::Incr => {
                Student::at(&s.id).incr(db, Student::MATH, 1).await?;
            }
            Op::GetMany => {
                let ids = batch(students, k).iter().map(|s| &s.id);
                let got = Student::load_many(db, ids).await?;
                ensure(got.iter().flatten().count() == BATCH, "load_many")?;
            }
            Op::LoadMembers => {
                let got = relation().load(db).await?;
                ensure(got.len() == BATCH, "rel.load")?;
            }
            Op::Link => {
                let (teacher, class) = pair(k);
                let rel = Teacher::at(teacher).relation::<TeacherClasses>();
                rel.link(db, Class::at(class)).await?;
            }
            Op::IndexedInsert => {
                let n = fresh();
                Player {
                    name: format!("n{n}"),
                    ..player(n)
                }
                .insert(db)
                .await?;
            }
            Op::UniqueChange => {
                let id = k as u64 % PLAYERS;
                Player::at(id)
                    .set(db, Player::NAME, format!("n{}", fresh()))
                    .await?;
            }
            Op::SortedIncr => {
                Player::at(k as u64 % PLAYERS)
                    .incr(db, Player::SCORE, 1)
                    .await?;
            }
            Op::TagChange => {
                let tags = vec![format!("t{}", k % 5), format!("u{}", k % 3)];
                Player::at(k as u64 % PLAYERS)
                    .set(db, Player::TAGS, tags)
                    .await?;
            }
        }
        Ok(())
    }

    /// The `k`-th operation in raw redis-rs that also keeps the model's
    /// guarantee, where [`raw`](Self::raw) does not: `insert` refuses a
    /// student whose class is gone, `incr` and `link` objects that are
    /// gone (each one script, as the model's), and the batch reads are one
    /// MULTI. `None` for the operations whose raw code already keeps it.
    pub fn same_guarantee(self) -> bool {
        matches!(
            self,
            Op::Insert | Op::Incr | Op::GetMany | Op::LoadMembers | Op::Link
        )
    }

    /// The `k`-th operation as [`same_guarantee`](Self::same_guarantee)
    /// describes.
    pub async fn guarded(self, conn: &mut Db, students: &[Student], k: usize) -> BenchResult<()> {
        let s = &students[k % students.len()];
        let key = format!("student:{}", s.id);
        match self {
            Op::Insert => {
                let _count: i64 = scripts::STUDENT_INSERT
                    .key(&key)
                    .key(s.class.key())
                    .arg(student_fields(s))
                    .invoke_async(conn)
                    .await?;
            }
            Op::Incr => {
                let _: i64 = scripts::STUDENT_INCR
                    .key(&key)
                    .arg("math")
                    .invoke_async(conn)
                    .await?;
            }
            Op::GetMany | Op::LoadMembers => raw_batch(self, conn, students, k, true).await?,
            Op::Link => {
                let (teacher, class) = pair(k);
                let (teacher, class) = (format!("teacher:{teacher}"), format!("class:{class}"));
                let _removed: i64 = scripts::LINK
                    .key(&teacher)
                    .key(&class)
                    .key(format!("{teacher}:class"))
                    .key(format!("{class}:teacher"))
                    .invoke_async(conn)
                    .await?;
            }
            _ => return self.raw(conn, students, k).await,
        }
        Ok(())
    }

    /// The `k`-th operation in raw redis-rs, on `conn`.
    pub async fn raw(self, conn: &mut Db, students: &[Student], k: usize) -> BenchResult<()> {
        let s = &students[k % students.len()];
        match self {
            Op::Insert => {
                let mut pipe = redis::pipe();
                pipe.atomic();
                add_insert(&mut pipe, s);
                let (_count,): (i64,) = pipe.query_async(conn).await?;
            }
            Op::Load => {
                let values: Vec<Option<String>> = redis::cmd("HMGET")
                    .arg(format!("student:{}", s.id))
                    .arg(&STUDENT_FIELDS)
                    .query_async(conn)
                    .await?;
                parse_student(&s.id, values)?;
            }
            Op::Incr => {
                let _: i64 = redis::cmd("HINCRBY")
                    .arg(format!("student:{}", s.id))
                    .arg("math")
                    .arg(1)
                    .query_async(conn)
                    .await?;
            }
            Op::GetMany | Op::LoadMembers => raw_batch(self, conn, students, k, false).await?,
            Op::Link => {
                let (teacher, class) = pair(k);
                let (teacher, class) = (format!("teacher:{teacher}"), format!("class:{class}"));
                let (_removed,): (i64,) = redis::pipe()
                    .atomic()
                    .cmd("LREM")
                    .arg(format!("{teacher}:class"))
                    .arg(0)
                    .arg(&class)
                    .cmd("RPUSH")
                    .arg(format!("{teacher}:class"))
                    .arg(&class)
                    .ignore()
                    .cmd("LREM")
                    .arg(format!("{class}:teacher"))
                    .arg(0)
                    .arg(&teacher)
                    .ignore()
                    .cmd("RPUSH")
                    .arg(format!("{class}:teacher"))
                    .arg(&teacher)
                    .ignore()
                    .query_async(conn)
                    .await?;
            }
            Op::IndexedInsert => {
                let n = fresh();
                let (key, name) = (format!("player:{n}"), format!("n{n}"));
                let tag = format!("t{}", n % 5);
                let _: i64 = scripts::INSERT
                    .key(&key)
                    .key(format!("player:_unique:name:{name}"))
                    .key("player:_sorted:score")
                    .key(format!("player:_tag:tags:{tag}"))
                    .arg(&key)
                    .arg(&name)
                    .arg(n)
                    .arg(format!("[\"{tag}\"]"))
                    .invoke_async(conn)
                    .await?;
            }
            Op::UniqueChange => {
                let key = format!("player:{}", PLAYERS + k as u64 % PLAYERS);
                let name = format!("n{}", fresh());
                let _: i64 = scripts::RENAME
                    .key(&key)
                    .key(format!("player:_unique:name:{name}"))
                    .arg(&key)
                    .arg(&name)
                    .arg("player:_unique:name:")
                    .invoke_async(conn)
                    .await?;
            }
            Op::SortedIncr => {
                let key = format!("player:{}", PLAYERS + k as u64 % PLAYERS);
                let _: i64 = scripts::INCR
                    .key(&key)
                    .key("player:_sorted:score")
                    .arg(&key)
                    .invoke_async(conn)
                    .await?;
            }
            Op::TagChange => {
                let key = format!("player:{}", PLAYERS + k as u64 % PLAYERS);
                let tags = [format!("t{}", k % 5), format!("u{}", k % 3)];
                let _: i64 = scripts::RETAG
                    .key(&key)
                    .arg(&key)
                    .arg(format!("[\"{}\",\"{}\"]", tags[0], tags[1]))
                    .arg("player:_tag:tags:")
                    .arg(&tags)
                    .invoke_async(conn)
                    .await?;
            }
        }
        Ok(())
    }
}

/// Stores what the operations work on in `db`: `students` (as `insert`
/// stores them) with the teachers and classes `link` pairs up, the first
/// `BATCH` of them in the list `rel.load` reads, and `2 * PLAYERS` players.
pub async fn fixture(db: &Db, students: &[Student]) -> BenchResult<()> {
    store(db, students).await?;
    relation().append(db, students.iter().take(BATCH)).await?;
    for i in 0..2 * PLAYERS {
        player(i).insert(db).await?;
    }
    Ok(())
}
