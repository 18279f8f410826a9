//! Serves a fresh engine over RESP on 127.0.0.1 until killed, for
//! redis-cli and Redis's own test suite (`runtest --host 127.0.0.1 --port N`).
//!
//! ```text
//! cargo run -p redmodel-memory --features server --release --example serve -- 6390
//! cargo run -p redmodel-memory --features server --release --example serve -- 6390 7.4
//! ```
//!
//! The second argument, `7.0` (the default) or `7.4`, is the Redis release
//! the engine behaves as.

use redmodel_memory::{serve, Engine, RedisVersion};

// One thread, as Redis: connections are served in the order their
// requests arrive. A multi-thread runtime, even of one worker, runs the
// connection woken last first (its LIFO slot), so a PUBLISH could overtake
// an UNSUBSCRIBE sent before it on another connection, or a BRPOPLPUSH
// block after another sent later, which Redis's own tests rely on. The
// price: a script looping past busy-reply-threshold holds the only thread,
// so other connections wait instead of getting BUSY (the BUSY replies and
// SCRIPT KILL need a multi-thread runtime: the `memory_server` example).
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let usage = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "usage: serve PORT [7.0|7.4]",
        )
    };
    let port: u16 = match std::env::args().nth(1) {
        Some(p) => p.parse().map_err(|_| usage())?,
        None => 6390,
    };
    let version: RedisVersion = match std::env::args().nth(2) {
        Some(v) => v.parse().map_err(|_| usage())?,
        None => RedisVersion::default(),
    };
    let server = serve(Engine::new().with_version(version), ("127.0.0.1", port)).await?;
    eprintln!("serving on {}", server.local_addr());
    // Run until the process is killed.
    std::future::pending::<()>().await;
    Ok(())
}
