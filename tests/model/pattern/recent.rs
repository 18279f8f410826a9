//! Recent-N list (seed 001: the N latest logins): a capped list of object
//! keys, newest first, pushed in the write's own MULTI/EXEC; and the
//! pruning of gone objects from recent lists and relation lists.

use std::time::Duration;

use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

/// `login:1` = {name, last_login, logins}; `login:_recent:last_login` is
/// the 3 users who logged in last.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "login")]
struct Login {
    #[redmodel(pk)]
    id: u32,
    name: String,
    #[redmodel(recent = 3)]
    last_login: Option<u64>,
    #[redmodel(sorted, recent = 2)]
    logins: u64,
}

#[derive(Admin, Debug, Clone, PartialEq)]
struct Team {
    #[redmodel(pk)]
    id: String,
}

/// `team:core:member` = [login:1, ...]
#[derive(Relation)]
#[redmodel(table = "member", owner = Team, member = Login)]
struct TeamMembers;

fn login(id: u32, name: &str) -> Login {
    Login {
        id,
        name: name.into(),
        last_login: None,
        logins: 0,
    }
}

/// The raw list at the model key `key` (plain form), as `db` stores it.
async fn list(db: &Db, key: &str) -> Vec<String> {
    let key = db.key_layout().stored(key);
    db.query(redis::cmd("LRANGE").arg(&*key).arg(0).arg(-1))
        .await
        .unwrap()
}

fn ids(logins: &[Login]) -> Vec<u32> {
    logins.iter().map(|l| l.id).collect()
}

backend_tests! {
    /// The seed's `lpush` + `ltrim`: newest first, capped, one entry per
    /// object.
    exclusive async fn newest_first_and_capped(ctx) {
        let db = &ctx.db;
        for (id, name) in [(1, "ken"), (2, "dennis"), (3, "joe"), (4, "rob")] {
            login(id, name).insert(db).await?;
        }
        let recent = Login::LAST_LOGIN_RECENT;
        assert_eq!(recent.key(), "login:_recent:last_login");
        assert_eq!(recent.cap(), 3);
        assert!(recent.load(db).await?.is_empty(), "no login yet: None is not pushed");

        for (id, at) in [(1, 100), (2, 200), (3, 300), (4, 400)] {
            Login::at(id).set(db, Login::LAST_LOGIN, at).await?;
        }
        assert_eq!(list(db, &recent.key()).await, ["login:4", "login:3", "login:2"]);
        assert_eq!(ids(&recent.load(db).await?), [4, 3, 2]);

        // Logging in again moves the user to the head, once.
        Login::at(2).set(db, Login::LAST_LOGIN, 500).await?;
        assert_eq!(ids(&recent.load(db).await?), [2, 4, 3]);
        assert_eq!(recent.members(db).await?, [Login::at(2), Login::at(4), Login::at(3)]);

        // A full write with a value counts as a write of the field.
        let mut ken = login(1, "ken");
        ken.last_login = Some(600);
        ken.insert(db).await?;
        assert_eq!(ids(&recent.load(db).await?), [1, 2, 4]);

        // incr pushes too (a field can be sorted and recent at once).
        Login::at(3).incr(db, Login::LOGINS, 1).await?;
        Login::at(4).incr(db, Login::LOGINS, 1).await?;
        Login::at(3).incr(db, Login::LOGINS, 1).await?;
        assert_eq!(ids(&Login::LOGINS_RECENT.load(db).await?), [3, 4]);
        assert_eq!(ids(&Login::LOGINS_SORTED.top(db, 1).await?), [3]);
        Ok::<(), Error>(())
    }

    /// Clearing the field or deleting the object takes it out of the list.
    exclusive async fn clear_and_delete(ctx) {
        let db = &ctx.db;
        for id in 1..=3 {
            let mut l = login(id, "x");
            l.last_login = Some(u64::from(id));
            l.insert(db).await?;
        }
        Login::at(2).set(db, Login::LAST_LOGIN, None).await?;
        assert_eq!(ids(&Login::LAST_LOGIN_RECENT.load(db).await?), [3, 1]);
        Login::delete(db, 3).await?;
        Login::delete(db, 1).await?;
        assert!(list(db, &Login::LAST_LOGIN_RECENT.key()).await.is_empty());
        Login::delete(db, 2).await?;
        let keys: Vec<String> = db.query(redis::cmd("KEYS").arg("*")).await?;
        assert!(keys.is_empty(), "left behind: {keys:?}");
        Ok::<(), Error>(())
    }

    /// Expired or deleted objects are not shown, and are pruned, from
    /// recent lists and from relation lists alike.
    exclusive async fn gone_objects_are_pruned(ctx) {
        let db = &ctx.db;
        for id in 1..=3 {
            let mut l = login(id, "x");
            l.last_login = Some(u64::from(id));
            l.insert(db).await?;
        }
        let team = Team::at("core").relation::<TeamMembers>();
        team.append(db, [Login::at(1), Login::at(2), Login::at(3)]).await?;
        Login::at(2).expire(db, Duration::from_millis(1)).await?;
        tokio::time::sleep(Duration::from_millis(20)).await;
        db.query::<()>(redis::cmd("DEL").arg("login:3")).await?;

        assert_eq!(ids(&Login::LAST_LOGIN_RECENT.load(db).await?), [1]);
        assert_eq!(list(db, &Login::LAST_LOGIN_RECENT.key()).await, ["login:1"]);
        assert_eq!(ids(&team.load(db).await?), [1]);
        assert_eq!(list(db, team.key()).await, ["login:1"], "relation list pruned");

        // members() checks too; prune() is a full pass.
        db.query::<()>(redis::cmd("RPUSH").arg(Login::LAST_LOGIN_RECENT.key()).arg("login:9")).await?;
        assert_eq!(Login::LAST_LOGIN_RECENT.members(db).await?, [Login::at(1)]);
        db.query::<()>(redis::cmd("RPUSH").arg(Login::LAST_LOGIN_RECENT.key()).arg("login:8")).await?;
        assert_eq!(Login::LAST_LOGIN_RECENT.prune(db).await?, 1);
        Ok::<(), Error>(())
    }
}
