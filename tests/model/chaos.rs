//! Chaos: many tasks of random model operations racing on a few objects
//! (colliding unique values, tag changes, sorted increments, links and
//! unlinks, sub-object inserts, reference writes, cascading deletes, typed
//! transactions, bulk inserts and changes), then the consistency check,
//! which must find nothing.
//! On a real redis-server, also with the server SIGKILLed and restarted
//! (AOF, `appendfsync always`) in the middle of the traffic: in the plain
//! layout every write is one atomic unit, so a crash image holds no half
//! write (only what an interrupted cascade had yet to sweep); in the
//! cluster layout a crash between two ordered steps may leave more; in
//! both, `repair` leaves nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redmodel::model::check::{check, repair, Kind};
use redmodel::prelude::*;
use redmodel::{ItemError, KeyLayout};
use redmodel_suite::{backend_tests, configured_server_or_skip, RedisServer, Rng};

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "chaosuser")]
struct User {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    email: String,
    #[redmodel(sorted)]
    score: i64,
    #[redmodel(tags)]
    tags: Vec<String>,
}

#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(table = "chaosnote", owner = User)]
struct Note {
    #[redmodel(pk)]
    id: u32,
    text: String,
}

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "chaosgroup")]
struct Group {
    #[redmodel(pk)]
    id: u32,
    leader: Option<Ref<User>>,
}

#[derive(Relation)]
#[redmodel(table = "chaosuser", owner = Group, member = User, inverse = UserGroups)]
struct GroupUsers;

#[derive(Relation)]
#[redmodel(table = "chaosgroup", owner = User, member = Group, inverse = GroupUsers)]
struct UserGroups;

const USERS: usize = 12;
const GROUPS: usize = 3;
const EMAILS: usize = 8;
const TAGS: [&str; 3] = ["a", "b", "c"];

/// One random operation, a bulk write of a few users among them; `Ok`
/// also where the model refused it for a reason that is the point of the
/// race ([`accepted`]). Any other error fails the test.
async fn operate(db: &Db, rng: &mut Rng) -> Result<(), String> {
    let user = rng.below(USERS) as u32;
    let group = rng.below(GROUPS) as u32;
    let email = format!("u{}@x", rng.below(EMAILS));
    let u = User::at(user);
    let op = rng.below(13);
    let outcome: redmodel::Result<()> = match op {
        0 => User {
            id: user,
            email,
            score: 0,
            tags: vec![],
        }
        .insert(db)
        .await
        .map(drop),
        1 => u.set(db, User::EMAIL, email).await,
        2 => u.incr(db, User::SCORE, 1).await.map(drop),
        3 => u.set(db, User::TAGS, some_tags(rng)).await,
        4 => Group::at(group)
            .relation::<GroupUsers>()
            .link(db, &u)
            .await
            .map(drop),
        5 => Group::at(group)
            .relation::<GroupUsers>()
            .unlink(db, &u)
            .await
            .map(drop),
        6 => u
            .insert_sub(
                db,
                &Note {
                    id: rng.below(3) as u32,
                    text: "n".into(),
                },
            )
            .await
            .map(drop),
        7 => u.delete_cascade(db).await.map(drop),
        8 => {
            Group::at(group)
                .set(db, Group::LEADER, Some(u.clone()))
                .await
        }
        9 => {
            let u = &u;
            db.transaction(|tx| async move {
                if let Some(found) = tx.load(u).await? {
                    tx.set(u, User::SCORE, found.score + 1);
                }
                Ok(())
            })
            .await
        }
        10 => Group {
            id: group,
            leader: None,
        }
        .insert(db)
        .await
        .map(drop),
        // Bulk writes of a few users, racing the single writes: each
        // item is judged as a single write's outcome is.
        11 => {
            let users: Vec<User> = (0..1 + rng.below(4))
                .map(|_| User {
                    id: rng.below(USERS) as u32,
                    email: format!("u{}@x", rng.below(EMAILS)),
                    score: 0,
                    tags: some_tags(rng),
                })
                .collect();
            return items_accepted(op, User::insert_many(db, &users).await);
        }
        _ => {
            let changes: Vec<_> = (0..1 + rng.below(4))
                .map(|_| {
                    let email = format!("u{}@x", rng.below(EMAILS));
                    let assigns = vec![User::EMAIL.to(email), User::TAGS.to(some_tags(rng))];
                    (rng.below(USERS) as u32, assigns)
                })
                .collect();
            return items_accepted(op, User::set_many(db, changes).await);
        }
    };
    accepted(outcome).map_err(|e| format!("operation {op} on user {user}, group {group}: {e:?}"))
}

/// A random subset of the tags.
fn some_tags(rng: &mut Rng) -> Vec<String> {
    TAGS.iter()
        .filter(|_| rng.below(2) == 0)
        .map(|t| t.to_string())
        .collect()
}

/// `Ok` for a write that succeeded or was refused for a reason that is
/// the point of the race (a unique value taken, an object deleted
/// meanwhile, a transaction that kept colliding, an item naming what an
/// earlier item of its batch names), or that met the server away (a
/// crash test); the error otherwise.
fn accepted<T>(outcome: redmodel::Result<T>) -> Result<(), Error> {
    match outcome {
        Ok(_)
        | Err(Error::Unique { .. })
        | Err(Error::NotFound { .. })
        | Err(Error::Conflict { .. })
        | Err(Error::DuplicateInBatch { .. }) => Ok(()),
        Err(e) if e.is_transient() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Each item of bulk operation `op` [`accepted`], or the first that is not.
fn items_accepted(op: usize, results: Vec<Result<(), ItemError>>) -> Result<(), String> {
    for ItemError { item, key, error } in results.into_iter().filter_map(Result::err) {
        accepted::<()>(Err(error))
            .map_err(|e| format!("bulk operation {op}, item {item} on {key}: {e:?}"))?;
    }
    Ok(())
}

/// `tasks` tasks of at least `ops` random operations each, on `db`, and
/// on until `until` is set, if given.
async fn traffic(db: &Db, tasks: usize, ops: usize, until: Option<Arc<AtomicBool>>) {
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (db, until) = (db.clone(), until.clone());
            tokio::spawn(async move {
                let mut rng = Rng::for_task(task);
                for done in 0.. {
                    if done >= ops && until.as_ref().is_none_or(|u| u.load(Ordering::Relaxed)) {
                        break;
                    }
                    operate(&db, &mut rng).await?;
                    tokio::task::yield_now().await;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for handle in handles {
        if let Err(why) = handle.await.expect("chaos task panicked") {
            panic!("{why}");
        }
    }
}

/// Every user's email, and every email entry's holder and TTL: what a
/// failed check of the unique index is explained by.
async fn emails(db: &Db) -> redmodel::Result<String> {
    let mut out = String::new();
    for id in 0..USERS as u32 {
        let email = User::at(id).get(db, User::EMAIL).await?;
        out.push_str(&format!("chaosuser:{id} email {email:?}\n"));
    }
    for n in 0..EMAILS {
        let entry = User::EMAIL_UNIQUE
            .key(format!("u{n}@x"))?
            .unwrap_or_default();
        let stored = db.key_layout().stored(&entry).into_owned();
        let holder: Vec<String> = db
            .query(redis::cmd("LRANGE").arg(&stored).arg(0).arg(-1))
            .await?;
        let ttl: i64 = db.query(redis::cmd("PTTL").arg(&stored)).await?;
        out.push_str(&format!("{entry}: {holder:?} pttl {ttl}\n"));
    }
    Ok(out)
}

async fn assert_consistent(db: &Db, what: &str) -> redmodel::Result<()> {
    let report = check(db, |_| ()).await?;
    assert!(
        report.is_clean(),
        "{what}: {report}: {:#?}",
        report.examples
    );
    assert!(
        report.scanned > 0,
        "{what}: the traffic left nothing to check"
    );
    Ok(())
}

backend_tests! {
    /// 16 tasks x 300 random operations on 12 users and 3 groups. In the
    /// plain layout, where every write is one atomic unit, the check finds
    /// nothing afterwards. In the cluster layout a write across slots is
    /// ordered steps, and racing writes may leave what those steps document
    /// (an index entry behind its field, a link with one side, an entry
    /// naming an object a cascade deleted), never a half object or an
    /// orphan; the repair leaves nothing.
    exclusive async fn racing_operations_leave_nothing_the_check_finds(ctx) -> redmodel::Result<()> {
        let mut dbs = vec![ctx.db.clone()];
        if ctx.db.key_layout() == KeyLayout::Plain {
            dbs.push(ctx.db.with_key_layout(KeyLayout::Cluster));
        }
        for db in dbs {
            db.query::<()>(&redis::cmd("FLUSHALL")).await?;
            traffic(&db, 16, 300, None).await;
            let what = format!("{} {:?} layout", ctx.backend, db.key_layout());
            if db.key_layout() == KeyLayout::Plain {
                assert_consistent(&db, &what).await?;
                continue;
            }
            let fixed = repair(&db, |_| ()).await?;
            if !fixed.after.is_clean() {
                let state = emails(&db).await?;
                panic!("{what}: {}: {:#?}\n{state}", fixed.after, fixed.after.examples);
            }
            for kind in [
                Kind::PartialObject,
                Kind::Undecodable,
                Kind::OrphanedSubObject,
                Kind::OrphanedList,
            ] {
                assert_eq!(fixed.before.count(kind), 0, "{what}: {kind}: {:#?}", fixed.before.examples);
            }
        }
        Ok(())
    }
}

/// The traffic with the server SIGKILLed and restarted twice during it
/// (AOF, fsync on every write): `repair` leaves nothing, and in the plain
/// layout there was no half-applied write to repair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_leave_nothing_the_repair_cannot_fix() {
    let Some(server) = configured_server_or_skip(
        "chaos crash test",
        RedisServer::builder()
            .appendonly(true)
            .config("appendfsync always"),
    ) else {
        return;
    };
    let plain = Db::connect(&server.url()).await.expect("connect");
    let mut server = Some(server);
    for db in [plain.clone(), plain.with_key_layout(KeyLayout::Cluster)] {
        db.query::<()>(&redis::cmd("FLUSHALL"))
            .await
            .expect("flush");
        let mut killer_server = server.take().expect("server");
        let done = Arc::new(AtomicBool::new(false));
        let killer = {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                for _ in 0..2 {
                    std::thread::sleep(Duration::from_millis(700));
                    killer_server.kill();
                    std::thread::sleep(Duration::from_millis(200));
                    killer_server.restart().expect("restart");
                }
                // Traffic on the restarted server too.
                std::thread::sleep(Duration::from_millis(500));
                done.store(true, Ordering::Relaxed);
                killer_server
            })
        };
        traffic(&db, 16, 50, Some(done)).await;
        server = Some(killer.join().expect("killer thread"));
        // The Db may still be reconnecting: give it a moment.
        let mut ready = false;
        for _ in 0..100 {
            if db.query::<()>(&redis::cmd("PING")).await.is_ok() {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ready, "the server came back");
        let fixed = repair(&db, |_| ()).await.expect("repair");
        let layout = db.key_layout();
        eprintln!(
            "{layout:?} layout after crashes: {} -> {}",
            fixed.before, fixed.after
        );
        assert!(
            fixed.after.is_clean(),
            "{layout:?}: {}: {:#?}",
            fixed.after,
            fixed.after.examples
        );
        if layout == KeyLayout::Plain {
            // Every write is one atomic unit: no crash leaves half of one.
            // A cascading delete is several (its sweeps after the atomic
            // delete catch what raced it), so a crash may leave what they
            // had yet to remove.
            for kind in [
                Kind::PartialObject,
                Kind::Undecodable,
                Kind::OneSidedLink,
                Kind::OrphanedList,
                Kind::MissingIndexEntry,
                Kind::StaleIndexEntry,
            ] {
                assert_eq!(
                    fixed.before.count(kind),
                    0,
                    "{kind}: {:#?}",
                    fixed.before.examples
                );
            }
        }
    }
}
