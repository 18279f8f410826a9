//! What the model layer costs, in speed and memory.
//!
//! ```text
//! cargo run --release --example bench_models
//! cargo run --release --example bench_models -- --reps 3 --millis 100 --objects 10000
//! cargo run --example bench_models -- --reps 1 --millis 20 --objects 1000   # smoke run
//! ```
//!
//! On each backend — (a) the engine in process (`Db::memory()`) and (c) a
//! private redis-server (`Db::connect`, loopback) — it measures operations
//! per second of school `Student` operations through the model, and of the
//! raw redis-rs code that does the same work, and prints the ratio
//! model/raw. On (d), a private 3-master Redis Cluster (`Db::connect_cluster`,
//! the cluster key layout), it measures the model only, for the ratio of
//! the model on the cluster to the model on one server, (d)/(c). Both go through the same `Db`, so the ratio is the cost of the
//! model layer alone (building keys, encoding, decoding, the commands it
//! chooses), not of the transport:
//!
//! | operation | model | raw redis-rs |
//! |---|---|---|
//! | insert | `student.insert`: one script checking that the class exists, then HSET + HINCRBY `_count` (no HDEL: `Student` has no `Option` field) | MULTI HSET + HINCRBY `_count` |
//! | load | `Student::load`: HMGET of the fields and `_count`, decode | HMGET, parse by hand |
//! | incr | `Student::at(id).incr(MATH, 1)`: one script checking that the student exists, HINCRBY (and HGET on a server, exact past 2^53) | HINCRBY |
//! | get_many_100 | `Student::load_many` of 100: MULTI of 100 HMGETs and an EXISTS counting the keys | pipeline of 100 HMGETs, parsed |
//! | relation_load_100 | `rel.load` of a 100-student relation: LRANGE, then the MULTI above | LRANGE, then pipelined HMGETs |
//! | link | many-to-many `link`: one script checking both objects exist, then LREM + RPUSH on both lists | MULTI LREM + RPUSH on both lists (no existence check) |
//! | indexed_insert | `player.insert` of a new `Player` (unique name, sorted score, tags): the checked script | one hand-written script: refuse a taken name, HSET, claim the name, ZADD, SADD |
//! | unique_change | `set(NAME, fresh)`: claim the new name, release the old | one script: HGET the old name, refuse a taken one, move the entry, HSET |
//! | sorted_incr | `incr(SCORE, 1)`: the field and its score together | one script: HINCRBY, ZADD |
//! | tag_change | `set(TAGS, [..])`: move the player between tag sets | one script: HGET the old tags, SREM / SADD, HSET |
//!
//! Where the model keeps a guarantee that the raw code above does not (a
//! student's class, or both linked objects, must exist; an object must
//! exist to be incremented; a batch is read as of one instant), a third
//! side measures raw code that keeps it too, "same guarantee": one script
//! for `insert`, `incr` and `link` (EXISTS, then the commands above), a
//! MULTI around the batch reads' HMGETs. Its column, `m/same`, is the
//! model layer's own cost; `model/raw` adds the guarantee's.
//!
//! The hand-written side of the indexed operations is what a careful
//! redis-rs user writes for the same guarantee (no two holders of a name,
//! index entries equal to the fields, whatever runs concurrently): one Lua
//! script each, loaded once, one round trip.
//!
//! For the batch operations one operation is one call (100 students).
//! Every figure is the median of several timed runs in which the backends
//! and the two sides take turns, so a burst of load hits all alike.
//!
//! Memory: `--objects` students (100,000 by default), stored as `insert`
//! stores them, cost so many bytes each in the engine (the growth of this
//! process's resident set, VmRSS, so approximate: allocator slack
//! included) and in redis-server (the growth of `INFO memory`'s
//! `used_memory`). `--only NAME` runs one operation, or `memory`; `--on
//! a` (or `c`, `d`, `ac`...) only those backends, as when profiling one.
//!
//! `BENCH_CPU=1` prints this process's CPU time per operation of each
//! side, and how many operations ran (for per-operation profiles);
//! `BENCH_SIDE=model` (or `raw`, `same`) measures that side alone, as when
//! profiling one with perf or callgrind. `BENCH_WORKERS=N` runs on N
//! worker threads instead of 2 (0: a current-thread runtime, where no
//! request waits for another thread to wake).
//!
//! The whole run takes about 90 s with the defaults (9 runs of 150 ms).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use redis::Pipeline;
use redmodel::model::Ref;
use redmodel::prelude::*;
use redmodel_examples::bench::{fmt_rate, fmt_ratio, median, ops_per_sec, runtime, Options};
use redmodel_suite::{RedisCluster, RedisServer};

const USAGE: &str =
    "usage: bench_models [--reps N] [--millis MS] [--only OPERATION|memory] [--objects N] [--on a|c|d]";
/// Students of the speed fixture; the operations cycle through them.
const STUDENTS: usize = 1000;
/// Students per batch operation (`load_many`, `rel.load`).
const BATCH: usize = 100;
/// Teachers, and classes, that `link` pairs up (so lists stay short).
const LINKED: usize = 10;
/// Operations per timed step, so that reading the clock costs little.
const STEP: usize = 10;
/// Students per pipeline when storing many.
const CHUNK: usize = 1000;
/// `Student`'s stored fields, as raw code names them.
const STUDENT_FIELDS: [&str; 4] = ["class", "chinese", "english", "math"];

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

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
struct Student {
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

    /// `insert` of a student whose class must exist. KEYS: student,
    /// class. ARGV: the fields and values.
    pub(super) static STUDENT_INSERT: LazyLock<redis::Script> = LazyLock::new(|| {
        redis::Script::new(
            r"
            if redis.call('EXISTS', KEYS[2]) == 0 then
              return redis.error_reply('NOTFOUND no class')
            end
            redis.call('HSET', KEYS[1], unpack(ARGV))
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
fn student(i: usize) -> Student {
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
async fn store(db: &Db, students: &[Student]) -> BenchResult<()> {
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
enum Op {
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

/// Median rates of one operation on one target, by [`Side`].
type Rates = [Option<f64>; 3];

#[derive(Clone, Copy)]
enum Side {
    Model,
    /// The commands a redis-rs user would write for the same data.
    Raw,
    /// Raw code that also keeps the model's guarantee where `Raw` does not
    /// (see [`Op::guarded`]).
    Same,
}

/// Every side, in the order of a [`Rates`]' entries.
const SIDES: [Side; 3] = [Side::Model, Side::Raw, Side::Same];

impl Side {
    /// Whether `BENCH_SIDE` (`model`, `raw` or `same`) leaves this side
    /// in: every side without it.
    fn selected(self) -> bool {
        let name = match self {
            Side::Model => "model",
            Side::Raw => "raw",
            Side::Same => "same",
        };
        std::env::var("BENCH_SIDE").map_or(true, |only| only == name)
    }
}

impl Op {
    const ALL: [Op; 10] = [
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

    fn name(self) -> &'static str {
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
    async fn model(self, db: &Db, students: &[Student], k: usize) -> BenchResult<()> {
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
    fn same_guarantee(self) -> bool {
        matches!(
            self,
            Op::Insert | Op::Incr | Op::GetMany | Op::LoadMembers | Op::Link
        )
    }

    /// The `k`-th operation as [`same_guarantee`](Self::same_guarantee)
    /// describes.
    async fn guarded(self, conn: &mut Db, students: &[Student], k: usize) -> BenchResult<()> {
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
    async fn raw(self, conn: &mut Db, students: &[Student], k: usize) -> BenchResult<()> {
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

/// One backend: the `Db` the model uses, a clone of it for the raw
/// commands (none on the cluster, whose raw code would differ), and the
/// servers behind it (killed on drop).
struct Target {
    label: &'static str,
    db: Db,
    conn: Option<Db>,
    _server: Option<RedisServer>,
    _cluster: Option<RedisCluster>,
}

impl Target {
    fn new(label: &'static str, db: Db, server: Option<RedisServer>) -> Target {
        Target {
            label,
            conn: Some(db.clone()),
            db,
            _server: server,
            _cluster: None,
        }
    }

    /// Operations per second of `op` on `side` during `run`.
    async fn rate(
        &mut self,
        students: &[Student],
        op: Op,
        side: Side,
        run: Duration,
    ) -> BenchResult<f64> {
        let mut k = 0;
        let cpu = cpu_ns();
        let rate: f64 = ops_per_sec(run, async || -> BenchResult<usize> {
            for _ in 0..STEP {
                match (side, self.conn.as_mut()) {
                    (Side::Model, _) => op.model(&self.db, students, k).await?,
                    (Side::Raw, Some(conn)) => op.raw(conn, students, k).await?,
                    (Side::Same, Some(conn)) => op.guarded(conn, students, k).await?,
                    (Side::Raw | Side::Same, None) => return Err("no raw side".into()),
                }
                k += 1;
            }
            Ok(STEP)
        })
        .await?;
        if std::env::var_os("BENCH_CPU").is_some() {
            let ops = rate * run.as_secs_f64();
            let per_op = cpu_ns().saturating_sub(cpu) as f64 / ops / 1000.0;
            let side = match side {
                Side::Model => "model",
                Side::Raw => "raw",
                Side::Same => "raw, same guarantee",
            };
            eprintln!(
                "{} {} {side}: {per_op:.1} us of this process's CPU per op ({ops:.0} ops)",
                self.label,
                op.name()
            );
        }
        Ok(rate)
    }
}

/// CPU time of this process's threads so far, in nanoseconds (the sum of
/// /proc/self/task/*/schedstat's first fields); 0 without /proc.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The targets `on` names (`"acd"`: all): (a) always; (c) and (d) if
/// their servers can be started (else a note).
async fn targets(on: &str) -> Vec<Target> {
    let mut all = Vec::new();
    if on.contains('a') {
        all.push(Target::new("(a)", Db::memory(), None));
    }
    if !on.contains('c') && !on.contains('d') {
        return all;
    }
    let redis = match RedisServer::start() {
        Ok(server) => match Db::connect(&server.url()).await {
            Ok(db) => Ok(Target::new("(c)", db, Some(server))),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    };
    match redis {
        Ok(t) if on.contains('c') => all.push(t),
        Ok(_) => {}
        Err(e) => println!("note: (c) redis-server skipped: {e}"),
    }
    if !on.contains('d') {
        return all;
    }
    let cluster = match RedisCluster::start(3) {
        Ok(cluster) => {
            let seeds = cluster.urls();
            let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
            match Db::connect_cluster(&seeds).await {
                Ok(db) => Ok(Target {
                    label: "(d)",
                    db,
                    conn: None,
                    _server: None,
                    _cluster: Some(cluster),
                }),
                Err(e) => Err(e.to_string()),
            }
        }
        Err(e) => Err(e.to_string()),
    };
    match cluster {
        Ok(t) => all.push(t),
        Err(e) => println!("note: (d) Redis Cluster skipped: {e}"),
    }
    all
}

/// Median rates of `op`, `[model, raw, raw with the same guarantee]` per
/// target; `None` where it failed or does not apply.
async fn measure(
    targets: &mut [Target],
    students: &[Student],
    op: Op,
    options: &Options,
) -> Vec<Rates> {
    let mut runs: Vec<[Option<Vec<f64>>; 3]> = targets
        .iter()
        .map(|_| [Some(Vec::new()), Some(Vec::new()), Some(Vec::new())])
        .collect();
    for (target, runs) in targets.iter().zip(&mut runs) {
        if target.conn.is_none() {
            runs[1] = None;
            runs[2] = None;
        }
        if !op.same_guarantee() {
            runs[2] = None;
        }
    }
    for rep in 0..options.reps {
        for (target, runs) in targets.iter_mut().zip(&mut runs) {
            // The side that runs first after another target's runs is
            // slower (a server idle for a while, threads parked): with the
            // model always first, model/raw on redis-server read 0.80x to
            // 0.97x where the model run last read 0.94x to 0.99x. Each
            // side takes its turn at going first.
            for turn in 0..SIDES.len() {
                let i = (turn + rep) % SIDES.len();
                let (side, rates) = (SIDES[i], &mut runs[i]);
                let Some(list) = rates.as_mut() else { continue };
                if !side.selected() {
                    continue;
                }
                match target.rate(students, op, side, options.run).await {
                    Ok(rate) => list.push(rate),
                    Err(e) => {
                        println!("note: {} not measured on {}: {e}", op.name(), target.label);
                        *rates = None;
                    }
                }
            }
        }
    }
    runs.into_iter()
        .map(|sides| sides.map(|r| r.and_then(median)))
        .collect()
}

/// This process's resident set (VmRSS of /proc/self/status, the same
/// count as /proc/self/statm's, in kB rather than pages); `None` without
/// /proc.
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kb: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// `used_memory` of the server behind `db`, in bytes.
async fn used_memory(db: &Db) -> BenchResult<u64> {
    let info: String = db.query(redis::cmd("INFO").arg("memory")).await?;
    let value = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .ok_or("INFO memory has no used_memory")?;
    Ok(value.trim().parse()?)
}

/// Stores students `0..n` on `db`, in pipelines of `CHUNK`.
async fn store_many(db: &Db, n: usize) -> BenchResult<()> {
    for start in (0..n).step_by(CHUNK) {
        let chunk: Vec<Student> = (start..(start + CHUNK).min(n)).map(student).collect();
        store(db, &chunk).await?;
    }
    Ok(())
}

/// Bytes per student in a fresh engine: this process's RSS growth.
async fn engine_bytes_per_object(n: usize) -> BenchResult<f64> {
    let db = Db::memory();
    let before = rss_bytes().ok_or("no /proc/self/status")?;
    store_many(&db, n).await?;
    let after = rss_bytes().ok_or("no /proc/self/status")?;
    drop(db); // only now, after measuring
    Ok(after.saturating_sub(before) as f64 / n as f64)
}

/// Bytes per student in redis-server: `used_memory` growth. Empties the
/// (private) server afterwards.
async fn redis_bytes_per_object(db: &Db, n: usize) -> BenchResult<f64> {
    let before = used_memory(db).await?;
    store_many(db, n).await?;
    let after = used_memory(db).await?;
    db.query::<()>(&redis::cmd("FLUSHALL")).await?;
    Ok(after.saturating_sub(before) as f64 / n as f64)
}

/// Prints `label`: the figure, or why there is none.
fn show_bytes(label: &str, bytes: &BenchResult<f64>) -> Option<f64> {
    match bytes {
        Ok(b) => println!("{label:<46} {b:>7.0} bytes/student"),
        Err(e) => println!("{label:<46}     n/a ({e})"),
    }
    bytes.as_ref().ok().copied()
}

async fn memory(targets: &[Target], n: usize) {
    println!();
    println!("memory, {n} students stored as insert stores them (4 fields + _count):");
    let engine = engine_bytes_per_object(n).await;
    let redis = match targets.iter().find(|t| t.label == "(c)") {
        Some(t) => redis_bytes_per_object(&t.db, n).await,
        None => Err("no redis-server".into()),
    };
    let engine = show_bytes("(a) engine: process RSS growth (approximate)", &engine);
    let redis = show_bytes("(c) redis-server: used_memory growth", &redis);
    println!("{:<46} {:>7}", "(a)/(c)", fmt_ratio(engine, redis));
}

fn print_table(rows: &[(Op, Vec<Rates>)]) {
    println!();
    println!(
        "{:<17} {:>10} {:>10} {:>9} {:>9} {:>10} {:>10} {:>9} {:>9} {:>8} {:>10} {:>8}",
        "operation",
        "(a) model",
        "(a) raw",
        "model/raw",
        "m/same",
        "(c) model",
        "(c) raw",
        "model/raw",
        "m/same",
        "(a)/(c)",
        "(d) model",
        "(d)/(c)"
    );
    for (op, rates) in rows {
        let at = |target: usize, side: usize| rates.get(target).and_then(|r| r[side]);
        println!(
            "{:<17} {:>10} {:>10} {:>9} {:>9} {:>10} {:>10} {:>9} {:>9} {:>8} {:>10} {:>8}",
            op.name(),
            fmt_rate(at(0, 0)),
            fmt_rate(at(0, 1)),
            fmt_ratio(at(0, 0), at(0, 1)),
            fmt_ratio(at(0, 0), at(0, 2)),
            fmt_rate(at(1, 0)),
            fmt_rate(at(1, 1)),
            fmt_ratio(at(1, 0), at(1, 1)),
            fmt_ratio(at(1, 0), at(1, 2)),
            fmt_ratio(at(0, 0), at(1, 0)),
            fmt_rate(at(2, 0)),
            fmt_ratio(at(2, 0), at(1, 0)),
        );
    }
    println!();
    println!(
        "model/raw: the model's speed over raw redis-rs doing the same work on the same backend"
    );
    println!(
        "(1.00x: the model layer costs nothing; 0.80x: it takes 25% longer); m/same: over raw"
    );
    println!(
        "code that also keeps the model's guarantee (a script checking that the objects exist,"
    );
    println!("a MULTI for a batch read as of one instant), where raw does not; (a)/(c): the model");
    println!("on the in-process engine against the model on redis-server; (d)/(c): the model on");
    println!("a 3-master Redis Cluster (cluster key layout) against the model on one redis-server");
}

async fn bench(options: Options, objects: usize, on: String) -> ExitCode {
    let started = Instant::now();
    println!(
        "redmodel bench_models: ops/s, median of {} interleaved runs of {} ms",
        options.reps,
        options.run.as_millis()
    );
    println!("(a) Db::memory() in process  (c) Db::connect -> private redis-server (loopback)");
    println!("(d) Db::connect_cluster -> private 3-master Redis Cluster (loopback; model only)");
    println!(
        "model: the school's Student through redmodel; raw: redis-rs commands doing the same,"
    );
    println!("on the same Db; *_100: one op = one call for 100 students");
    let mut targets = targets(&on).await;
    if options.selects("memory") {
        memory(&targets, objects).await;
    }
    let ops: Vec<Op> = Op::ALL
        .into_iter()
        .filter(|op| options.selects(op.name()))
        .collect();
    if !ops.is_empty() {
        let students: Vec<Student> = (0..STUDENTS).map(student).collect();
        for t in &targets {
            let ready = async {
                store(&t.db, &students).await?;
                relation()
                    .append(&t.db, students.iter().take(BATCH))
                    .await?;
                for i in 0..2 * PLAYERS {
                    player(i).insert(&t.db).await?;
                }
                BenchResult::Ok(())
            };
            if let Err(e) = ready.await {
                eprintln!("cannot store the fixture on {}: {e}", t.label);
                return ExitCode::FAILURE;
            }
        }
        let mut rows = Vec::new();
        for op in ops {
            let rates = measure(&mut targets, &students, op, &options).await;
            // The table's columns are (a), (c), (d), whichever were run.
            let by_label = ["(a)", "(c)", "(d)"].map(|label| {
                targets
                    .iter()
                    .zip(&rates)
                    .find(|(t, _)| t.label == label)
                    .map_or([None; 3], |(_, r)| *r)
            });
            rows.push((op, by_label.to_vec()));
        }
        print_table(&rows);
    }
    drop(targets);
    println!("total time: {:.1} s", started.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let mut objects = 100_000;
    // `--on LABELS` is taken out before the shared options are read.
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut on = "acd".to_string();
    if let Some(at) = args.iter().position(|a| a == "--on") {
        match args.get(at + 1) {
            Some(labels) => on = labels.clone(),
            None => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
        args.drain(at..at + 2);
    }
    let options = match Options::new(9, 150).parse(args, USAGE, &mut [("--objects", &mut objects)])
    {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let objects = usize::try_from(objects).unwrap_or(usize::MAX);
    match runtime() {
        Ok(runtime) => runtime.block_on(bench(options, objects, on)),
        Err(e) => {
            eprintln!("no tokio runtime: {e}");
            ExitCode::FAILURE
        }
    }
}
