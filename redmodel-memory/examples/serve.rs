//! Serves a fresh engine over RESP on 127.0.0.1 until killed, for
//! redis-cli and Redis's own test suite (`runtest --host 127.0.0.1 --port N`).
//!
//! ```text
//! cargo run -p redmodel-memory --features server --release --example serve -- 6390
//! ```

use redmodel_memory::{serve, Engine};

// One worker, as Redis has one thread: connections are served about in the
// order their requests arrive (more workers let a PUBLISH overtake an
// UNSUBSCRIBE sent before it on another connection, which Redis's own tests
// rely on). A multi-thread runtime all the same: a script running past
// busy-reply-threshold hands the worker over (block_in_place), so that
// other connections get BUSY and may SCRIPT KILL it.
#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> std::io::Result<()> {
    let port: u16 = match std::env::args().nth(1) {
        Some(p) => p.parse().map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "usage: serve PORT")
        })?,
        None => 6390,
    };
    let server = serve(Engine::new(), ("127.0.0.1", port)).await?;
    eprintln!("serving on {}", server.local_addr());
    // Run until the process is killed.
    std::future::pending::<()>().await;
    Ok(())
}
