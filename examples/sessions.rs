//! Seed 004's key expiry, on sessions: each session is an admin object
//! (`session:TOKEN`) with a cart sub-object (`session:TOKEN:cart:main`),
//! and the whole subtree expires together.
//!
//! - sessions are created with a time to live;
//! - using a session refreshes it: its fields are updated (HSET keeps the
//!   TTL, as Redis does) and its subtree gets a fresh TTL;
//! - a "remember me" session is persisted (PERSIST, no TTL at all);
//! - a session nobody uses expires, and leaves no trace: it is gone from
//!   the list of recently active sessions too (the library prunes the
//!   entries of expired objects when it reads them).
//!
//! It ends with live sessions that still have a TTL, to look at with
//! `redis-cli pttl session:alice-laptop` when run against a server.
//!
//! Runs on the Redis at `REDIS_URL` if set, else on the bundled memory
//! engine: `cargo run --example sessions`. It first deletes the sessions
//! it writes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redmodel::model::Ttl;
use redmodel::prelude::*;
use redmodel::Error;

#[path = "common/mod.rs"]
mod common;

/// `session:TOKEN` = {user, last_seen}; the 10 sessions seen last are in
/// `session:_recent:last_seen`.
#[derive(Admin, Debug, Clone, PartialEq)]
pub struct Session {
    #[redmodel(pk)]
    pub token: String,
    pub user: String,
    /// Unix milliseconds.
    #[redmodel(recent = 10)]
    pub last_seen: Option<u64>,
}

/// `session:TOKEN:cart:main` = {items}
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Session)]
pub struct Cart {
    #[redmodel(pk)]
    pub name: String,
    #[redmodel(json)]
    pub items: Vec<String>,
}

/// How long an idle session lives.
pub const IDLE: Duration = Duration::from_secs(30 * 60);
/// How long the demo's throwaway session lives.
pub const SHORT: Duration = Duration::from_millis(300);

const TOKENS: [(&str, &str); 4] = [
    ("alice-laptop", "alice"),
    ("alice-phone", "alice"),
    ("bob-laptop", "bob"),
    ("guest", "guest"),
];

#[tokio::main]
async fn main() -> Result<(), Error> {
    let db = Db::from_env().await?;
    println!("backend: {}", db.backend_name());
    reset(&db).await?;
    let shown = run(&db).await?;
    common::print_keys(&db, &["session:*"]).await?;
    println!(
        "\n{} live sessions keep a TTL: look at them with `redis-cli pttl session:{}`",
        shown.expiring.len(),
        shown.expiring.first().map_or("...", String::as_str)
    );
    Ok(())
}

/// Deletes the demo's sessions, their carts and their index entries.
pub async fn reset(db: &Db) -> Result<(), Error> {
    for (token, _) in TOKENS {
        let session = Session::at(token);
        // The library's delete takes the session out of its indexes; the
        // keys under it (the cart) are deleted with it.
        session.delete(db).await?;
        let mut pipe = redis::pipe();
        for key in session.tree_keys(db).await? {
            pipe.cmd("DEL").arg(key).ignore();
        }
        db.query_pipeline::<()>(&pipe).await?;
    }
    Ok(())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What the demo ends with, for the tests.
#[derive(Debug, PartialEq)]
pub struct Shown {
    /// Tokens of the live sessions that have a TTL.
    pub expiring: Vec<String>,
    /// Tokens of the persisted sessions.
    pub persisted: Vec<String>,
    /// Tokens in the recently-active list, newest first.
    pub recent: Vec<String>,
    /// Whether the throwaway session is gone.
    pub guest_gone: bool,
}

/// Logs in: the session and its cart, both expiring after `ttl`.
pub async fn open(db: &Db, token: &str, user: &str, ttl: Duration) -> Result<(), Error> {
    let session = Session {
        token: token.into(),
        user: user.into(),
        last_seen: Some(now_ms()),
    }
    .insert(db)
    .await?;
    session
        .insert_sub(
            db,
            &Cart {
                name: "main".into(),
                items: Vec::new(),
            },
        )
        .await?;
    session.expire_tree(db, ttl).await?;
    Ok(())
}

/// Uses a session: records the time (HSET keeps the TTL) and gives the
/// whole subtree a fresh TTL. `false` if the session has expired.
pub async fn touch(db: &Db, token: &str) -> Result<bool, Error> {
    let session = Session::at(token);
    if !session.exists(db).await? {
        return Ok(false);
    }
    session.set(db, Session::LAST_SEEN, now_ms()).await?;
    session.expire_tree(db, IDLE).await?;
    Ok(true)
}

fn show_ttl(ttl: Ttl) -> String {
    match ttl {
        Ttl::Missing => "gone".to_string(),
        Ttl::Persistent => "no TTL (persisted)".to_string(),
        Ttl::Expires(d) => format!("expires in {:.1}s", d.as_secs_f64()),
    }
}

pub async fn run(db: &Db) -> Result<Shown, Error> {
    for (token, user) in TOKENS {
        let ttl = if token == "guest" { SHORT } else { IDLE };
        open(db, token, user, ttl).await?;
        println!(
            "opened session:{token} for {user}: {}",
            show_ttl(Session::at(token).ttl(db).await?)
        );
    }

    // Alice shops on her laptop: the cart changes (HSET keeps the TTL),
    // and the use refreshes the session.
    let laptop = Session::at("alice-laptop");
    let cart = laptop.sub::<Cart>("main");
    cart.insert(
        db,
        &Cart {
            name: "main".into(),
            items: vec!["book".into()],
        },
    )
    .await?;
    println!(
        "\nalice-laptop's cart changed: cart {}",
        show_ttl(cart.ttl(db).await?)
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let before = laptop.ttl(db).await?;
    touch(db, "alice-laptop").await?;
    println!(
        "alice-laptop used: {} -> {}",
        show_ttl(before),
        show_ttl(laptop.ttl(db).await?)
    );

    // Bob ticks "remember me": the session and its cart never expire.
    let kept = Session::at("bob-laptop").persist_tree(db).await?;
    println!("bob-laptop remembered: {kept} keys persisted");

    // Nobody uses the guest session: it expires, with its cart.
    tokio::time::sleep(SHORT + Duration::from_millis(200)).await;
    let guest_gone = !Session::at("guest").exists(db).await?;
    println!(
        "\nafter {:?}: session:guest {}, its cart {}",
        SHORT + Duration::from_millis(200),
        show_ttl(Session::at("guest").ttl(db).await?),
        show_ttl(Session::at("guest").sub::<Cart>("main").ttl(db).await?)
    );
    // Using it now fails: the user must log in again.
    println!(
        "using session:guest: {}",
        if touch(db, "guest").await? {
            "ok"
        } else {
            "expired, log in again"
        }
    );

    // The recently-active list never shows the expired session.
    let recent: Vec<String> = Session::LAST_SEEN_RECENT
        .load(db)
        .await?
        .into_iter()
        .map(|s| s.token)
        .collect();
    println!("recently active sessions: {}", recent.join(", "));

    let mut shown = Shown {
        expiring: Vec::new(),
        persisted: Vec::new(),
        recent,
        guest_gone,
    };
    println!("\nsessions now:");
    for (token, _) in TOKENS {
        let ttl = Session::at(token).ttl(db).await?;
        println!("  session:{token:<13} {}", show_ttl(ttl));
        match ttl {
            Ttl::Expires(_) => shown.expiring.push(token.to_string()),
            Ttl::Persistent => shown.persisted.push(token.to_string()),
            Ttl::Missing => {}
        }
    }
    Ok(shown)
}
