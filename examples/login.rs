//! Seed 001's login system, with the patterns declared on the model
//! instead of written by hand:
//!
//! - users know their name, not their id: a unique lookup by name (the
//!   seed's `set "login:ken thompson:id" 1`), which also refuses a second
//!   user with a taken name;
//! - a login bumps the login counter and the last-login time (the seed's
//!   `incr` and `set`), and with them a leaderboard of who logs in most
//!   (`zincrby login:login_times 1 uid`) and the list of the 10 most
//!   recent logins (`lpush` + `ltrim`), all kept by the library in the
//!   same MULTI/EXEC as the user's own write.
//!
//! Runs on the Redis at `REDIS_URL` if set, else on the bundled memory
//! engine: `cargo run --example login`. It first deletes the users it
//! writes (through the library, which removes their index entries too).

use std::time::{SystemTime, UNIX_EPOCH};

use redmodel::prelude::*;
use redmodel::Error;

#[path = "common/mod.rs"]
mod common;

/// `login:1` = {name, login_times, last_login_time}, plus the indexes
/// `login:_unique:name:ken%20thompson` = \[`login:1`\] (a one-element list),
/// `login:_sorted:login_times` and `login:_recent:last_login_time`.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "login")]
pub struct User {
    #[redmodel(pk)]
    pub id: u32,
    #[redmodel(unique)]
    pub name: String,
    #[redmodel(sorted)]
    pub login_times: u64,
    /// Unix seconds.
    #[redmodel(recent = 10)]
    pub last_login_time: Option<u64>,
}

/// The seed's table: id, name, login times, last login (2011-01-01,
/// 2011-02-01, 2011-03-01).
const USERS: [(u32, &str, u64, u64); 3] = [
    (1, "ken thompson", 5, 1_293_840_000),
    (2, "dennis ritchie", 1, 1_296_518_400),
    (3, "Joe Armstrong", 2, 1_298_937_600),
];

#[tokio::main]
async fn main() -> Result<(), Error> {
    let db = Db::from_env().await?;
    println!("backend: {}", db.backend_name());
    reset(&db).await?;
    let shown = run(&db).await?;
    println!("\n10 most recent logins: {}", shown.recent.join(", "));
    common::print_keys(&db, &["login:*"]).await?;
    Ok(())
}

/// Deletes the demo's users, and with them their index entries.
pub async fn reset(db: &Db) -> Result<(), Error> {
    for (id, ..) in USERS {
        User::delete(db, id).await?;
    }
    Ok(())
}

/// What the demo ends with, for the tests.
#[derive(Debug, PartialEq)]
pub struct Shown {
    /// Names, most recent login first.
    pub recent: Vec<String>,
    /// (name, login times), most logins first.
    pub top: Vec<(String, u64)>,
    /// The error a second "ken thompson" got.
    pub refused: String,
}

/// One login (the seed's three steps): find the id by name, bump the
/// counter (and the leaderboard's score), set the last-login time (and
/// move the user to the head of the recent list). The new login count, or
/// `None` if no user has that name.
pub async fn login(db: &Db, name: &str, at: u64) -> Result<Option<u64>, Error> {
    let Some(user) = User::NAME_UNIQUE.holder(db, name).await? else {
        return Ok(None);
    };
    let times = user.incr(db, User::LOGIN_TIMES, 1).await?;
    user.set(db, User::LAST_LOGIN_TIME, at).await?;
    Ok(Some(times))
}

pub async fn run(db: &Db) -> Result<Shown, Error> {
    for (id, name, login_times, last) in USERS {
        User {
            id,
            name: name.into(),
            login_times,
            last_login_time: Some(last),
        }
        .insert(db)
        .await?;
    }
    println!("signed up: {}", USERS.map(|u| u.1).join(", "));

    // A fourth user cannot take a name that is taken; nothing is stored.
    let fourth = User {
        id: 4,
        name: "ken thompson".into(),
        login_times: 0,
        last_login_time: None,
    };
    let refused = match fourth.insert(db).await {
        Err(err @ Error::Unique { .. }) => err.to_string(),
        Err(other) => return Err(other),
        Ok(_) => "(not refused: is another program writing login:*?)".to_string(),
    };
    println!("user 4 refused: {refused}");

    // The user knows the name, not the id.
    let ken = User::NAME_UNIQUE.find(db, "ken thompson").await?;
    println!("find by name \"ken thompson\": {ken:?}");

    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let logins = [
        "dennis ritchie",
        "dennis ritchie",
        "ken thompson",
        "dennis ritchie",
        "dennis ritchie",
        "dennis ritchie",
        "dennis ritchie",
        "Joe Armstrong",
        "nobody",
    ];
    for (i, name) in (0u64..).zip(logins) {
        match login(db, name, now + i).await? {
            Some(times) => println!("login: {name} (login #{times})"),
            None => println!("login: no user is called {name:?}"),
        }
    }

    let recent: Vec<String> = User::LAST_LOGIN_TIME_RECENT
        .load(db)
        .await?
        .into_iter()
        .map(|u| u.name)
        .collect();

    println!("\nwho logs in most:");
    let mut top = Vec::new();
    for user in User::LOGIN_TIMES_SORTED.top(db, 10).await? {
        let rank = User::LOGIN_TIMES_SORTED
            .rank_from_top(db, user.handle())
            .await?
            .unwrap_or_default();
        println!(
            "  #{} {} ({} logins)",
            rank + 1,
            user.name,
            user.login_times
        );
        top.push((user.name, user.login_times));
    }
    Ok(Shown {
        recent,
        top,
        refused,
    })
}
