//! Expiry (seed 004) on objects, sub-objects, relation lists and an
//! admin's whole subtree; which library writes keep a TTL and which clear
//! it, as Redis does; and expired objects leaving no trace in indexes.

use std::time::{Duration, SystemTime};

use redmodel::model::Ttl;
use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

#[derive(Admin, Debug, Clone, PartialEq)]
struct Account {
    #[redmodel(pk)]
    id: String,
    #[redmodel(unique)]
    email: String,
    #[redmodel(sorted)]
    visits: u64,
    #[redmodel(tags)]
    roles: Vec<String>,
    #[redmodel(recent = 5)]
    seen: Option<u64>,
}

#[derive(Admin, Debug, Clone, PartialEq)]
struct Group {
    #[redmodel(pk)]
    id: String,
    name: String,
}

/// `account:a:session:s1` (a hash sub-object).
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Account)]
struct Session {
    #[redmodel(pk)]
    id: String,
    agent: String,
}

/// `account:a:note:home` (a string sub-object).
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Account, single)]
struct Note {
    #[redmodel(pk)]
    topic: String,
    text: String,
}

/// `account:a:group` = [group:g, ...]
#[derive(Relation)]
#[redmodel(table = "group", owner = Account, member = Group)]
struct AccountGroups;

/// `group:g:account` = [account:a, ...]
#[derive(Relation)]
#[redmodel(table = "account", owner = Group, member = Account)]
struct GroupAccounts;

fn account(id: &str) -> Account {
    Account {
        id: id.into(),
        email: format!("{id}@example.com"),
        visits: 1,
        roles: vec!["user".into()],
        seen: Some(1),
    }
}

const HOUR: Duration = Duration::from_secs(3600);

fn expires(ttl: Ttl) -> bool {
    matches!(ttl, Ttl::Expires(d) if d > Duration::from_secs(3500) && d <= HOUR)
}

backend_tests! {
    /// expire / pexpire / expire-at / persist / ttl / pttl on an object,
    /// a sub-object and a relation list.
    exclusive async fn expire_persist_ttl(ctx) {
        let db = &ctx.db;
        let a = account("a").insert(db).await?;
        assert_eq!(a.ttl(db).await?, Ttl::Persistent);
        assert!(a.expire(db, HOUR).await?);
        assert!(expires(a.ttl(db).await?));
        assert_eq!(a.ttl(db).await?.secs(), 3600);
        assert!(a.persist(db).await?);
        assert!(!a.persist(db).await?, "no TTL left to remove");
        assert_eq!(a.ttl(db).await?, Ttl::Persistent);
        assert!(a.expire_at(db, SystemTime::now() + HOUR).await?);
        assert!(expires(a.ttl(db).await?));
        assert!(!Account::at("zz").expire(db, HOUR).await?, "no such object");
        assert_eq!(Account::at("zz").ttl(db).await?, Ttl::Missing);

        let s = a.insert_sub(db, &Session { id: "s1".into(), agent: "curl".into() }).await?;
        assert!(s.expire(db, Duration::from_millis(1500)).await?);
        let ttl = s.ttl(db).await?.duration().expect("a TTL");
        assert!(ttl <= Duration::from_millis(1500) && ttl > Duration::from_millis(1000), "{ttl:?}");

        let groups = a.relation::<AccountGroups>();
        groups.append(db, [Group::at("g")]).await?;
        assert!(groups.expire(db, HOUR).await?);
        assert!(expires(groups.ttl(db).await?));
        assert!(groups.persist(db).await?);

        // A time in the past deletes the key, as in Redis.
        assert!(a.expire_at(db, SystemTime::UNIX_EPOCH).await?);
        assert!(!a.exists(db).await?);
        Ok::<(), Error>(())
    }

    /// Field writes keep the TTL (HSET, HDEL, HINCRBY), also when they
    /// update indexes; SET clears it; delete + insert makes a key without.
    exclusive async fn writes_that_keep_or_clear_a_ttl(ctx) {
        let db = &ctx.db;
        let a = account("a").insert(db).await?;
        a.expire(db, HOUR).await?;
        a.set(db, Account::VISITS, 7).await?;
        assert!(expires(a.ttl(db).await?), "set (HSET) keeps it");
        a.set_many(db, [Account::SEEN.to(None), Account::ROLES.to(vec!["admin".to_string()])]).await?;
        assert!(expires(a.ttl(db).await?), "set_many (HDEL + HSET) keeps it");
        a.incr(db, Account::VISITS, 1).await?;
        assert!(expires(a.ttl(db).await?), "incr (HINCRBY) keeps it");
        let mut changed = account("a");
        changed.email = "new@example.com".into();
        changed.insert(db).await?;
        assert!(expires(a.ttl(db).await?), "insert (HDEL + HSET + HINCRBY) keeps it");
        changed.insert_without_sync(db).await?;
        assert!(expires(a.ttl(db).await?), "insert_without_sync keeps it");

        a.delete(db).await?;
        account("a").insert(db).await?;
        assert_eq!(a.ttl(db).await?, Ttl::Persistent, "a new key after delete");

        // A hash sub-object keeps it through its own insert.
        let s = a.sub::<Session>("s1");
        s.insert(db, &Session { id: "s1".into(), agent: "curl".into() }).await?;
        s.expire(db, HOUR).await?;
        s.insert(db, &Session { id: "s1".into(), agent: "wget".into() }).await?;
        assert!(expires(s.ttl(db).await?), "a sub-object's insert keeps it");

        // A single-value sub-object is a string: SET clears it.
        let note = a.sub::<Note>("home");
        note.set_value(db, "hello").await?;
        note.expire(db, HOUR).await?;
        note.set_value(db, "again").await?;
        assert_eq!(note.ttl(db).await?, Ttl::Persistent, "set_value (SET) clears it");
        note.expire(db, HOUR).await?;
        note.insert(db, &Note { topic: "home".into(), text: "x".into() }).await?;
        assert_eq!(note.ttl(db).await?, Ttl::Persistent, "a single insert (SET) clears it");

        // A relation list keeps it through pushes and removals, and loses
        // it with its last member (Redis deletes an empty list).
        let groups = a.relation::<AccountGroups>();
        for id in ["g1", "g2"] {
            Group { id: id.into(), name: id.into() }.insert(db).await?;
        }
        groups.link(db, Group::at("g1")).await?;
        groups.expire(db, HOUR).await?;
        groups.link(db, Group::at("g2")).await?;
        groups.prepend(db, [Group::at("g3")]).await?;
        groups.unlink(db, Group::at("g3")).await?;
        assert!(expires(groups.ttl(db).await?), "pushes and removals keep it");
        groups.unlink(db, Group::at("g1")).await?;
        groups.unlink(db, Group::at("g2")).await?;
        assert_eq!(groups.ttl(db).await?, Ttl::Missing);
        groups.link(db, Group::at("g1")).await?;
        assert_eq!(groups.ttl(db).await?, Ttl::Persistent, "a new list");
        Ok::<(), Error>(())
    }

    /// One call gives the admin, its sub-objects and its relation lists a
    /// TTL, and one removes it; another admin's keys are untouched.
    exclusive async fn the_whole_subtree(ctx) {
        let db = &ctx.db;
        let a = account("a").insert(db).await?;
        let ab = account("ab").insert(db).await?;
        a.insert_sub(db, &Session { id: "s1".into(), agent: "curl".into() }).await?;
        a.insert_sub(db, &Session { id: "s2".into(), agent: "wget".into() }).await?;
        a.sub::<Note>("home").set_value(db, "hi").await?;
        Group { id: "g".into(), name: "g".into() }.insert(db).await?;
        a.relation::<AccountGroups>().link(db, Group::at("g")).await?;
        ab.insert_sub(db, &Session { id: "s1".into(), agent: "curl".into() }).await?;

        assert_eq!(
            a.tree_keys(db).await?,
            ["account:a", "account:a:group", "account:a:note:home", "account:a:session:s1", "account:a:session:s2"]
                .map(|k| ctx.stored(k))
        );
        assert_eq!(a.expire_tree(db, HOUR).await?, 5);
        for key in a.tree_keys(db).await? {
            let ms: i64 = db.query(redis::cmd("PTTL").arg(&key)).await?;
            assert!(ms > 3_500_000, "{key}: {ms}");
        }
        assert_eq!(ab.ttl(db).await?, Ttl::Persistent, "account:ab is not under account:a");
        assert_eq!(ab.sub::<Session>("s1").ttl(db).await?, Ttl::Persistent);

        assert_eq!(a.persist_tree(db).await?, 5);
        assert_eq!(a.persist_tree(db).await?, 0);
        assert_eq!(a.expire_tree_at(db, SystemTime::now() + HOUR).await?, 5);
        assert!(expires(a.relation::<AccountGroups>().ttl(db).await?));
        Ok::<(), Error>(())
    }

    /// An expired admin leaves no visible trace: not in its unique, sorted,
    /// tag and recent indexes, nor in other admins' relation lists; its
    /// unique value is free again.
    exclusive async fn an_expired_subtree_leaves_no_trace(ctx) {
        let db = &ctx.db;
        let a = account("a").insert(db).await?;
        account("b").insert(db).await?;
        a.insert_sub(db, &Session { id: "s1".into(), agent: "curl".into() }).await?;
        let members = Group::at("g").relation::<GroupAccounts>();
        members.append(db, [Account::at("a"), Account::at("b")]).await?;

        a.expire_tree(db, Duration::from_millis(5)).await?;
        tokio::time::sleep(Duration::from_millis(30)).await;

        assert_eq!(Account::EMAIL_UNIQUE.find(db, "a@example.com").await?, None);
        let ids = |accounts: Vec<Account>| accounts.into_iter().map(|a| a.id).collect::<Vec<_>>();
        assert_eq!(ids(Account::VISITS_SORTED.top(db, 10).await?), ["b"]);
        assert_eq!(ids(Account::ROLES_TAGS.with(db, "user").await?), ["b"]);
        assert_eq!(ids(Account::SEEN_RECENT.load(db).await?), ["b"]);
        assert_eq!(ids(members.load(db).await?), ["b"]);
        assert_eq!(members.count(db).await?, 1, "pruned from the relation list");

        // Every index key now holds only account:b.
        let mut keys: Vec<String> = db.query(redis::cmd("KEYS").arg("*account:*")).await?;
        keys.sort_unstable();
        let mut expected = [
            "account:_recent:seen",
            "account:_sorted:visits",
            "account:_tag:roles:user",
            "account:_unique:email:b@example.com",
            "account:b",
        ]
        .map(|k| ctx.stored(k));
        expected.sort_unstable();
        assert_eq!(keys, expected);
        // The value a held is free.
        let mut c = account("c");
        c.email = "a@example.com".into();
        c.insert(db).await?;
        Ok::<(), Error>(())
    }
}
