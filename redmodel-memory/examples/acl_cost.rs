//! What ACL costs per command, in process: SET/GET through a connection of
//! the default user (every permission: the fast path) and of a user with
//! rules to check (`+@all ~k* &*`).
//!
//! ```text
//! cargo run --release -p redmodel-memory --example acl_cost
//! ```

use std::time::Instant;

use redmodel_memory::Engine;

const N: u32 = 2_000_000;

fn time(label: &str, c: &mut redmodel_memory::Connection) {
    // Warm up, then the median of five runs.
    let mut runs = Vec::new();
    for _ in 0..6 {
        let start = Instant::now();
        for _ in 0..N / 2 {
            c.execute(&[b"SET", b"k1", b"v"]);
            c.execute(&[b"GET", b"k1"]);
        }
        runs.push(start.elapsed().as_nanos() as f64 / f64::from(N));
    }
    runs.remove(0);
    runs.sort_by(f64::total_cmp);
    println!("{label}: {:.1} ns/command", runs[runs.len() / 2]);
}

fn main() {
    let engine = Engine::new();
    let mut c = engine.connection();
    time("default user", &mut c);
    if std::env::args().any(|a| a == "--user") {
        c.execute(&[
            b"ACL", b"SETUSER", b"u", b"on", b"nopass", b"+@all", b"~k*", b"&*",
        ]);
        c.execute(&[b"AUTH", b"u", b"x"]);
        time("user +@all ~k*", &mut c);
    }
}
