//! Build script of the test suite: finds out whether `redis-server` can be
//! run, so that a skipped real-Redis half shows in the test summary.
//!
//! Without a server (and outside `CI=true`), it sets the cfg
//! `redmodel_no_redis_server`, under which each test binary's
//! `redis_server_available` test is `#[ignore]`d: `cargo test` then lists
//! it as ignored, with the reason, in every binary's summary, instead of
//! the skip showing only as a note under `--nocapture`. Under `CI=true` the
//! cfg is never set, so that test runs and fails like every real-Redis test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(redmodel_no_redis_server)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=REDIS_SERVER_BIN");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=PATH");

    let bin = std::env::var("REDIS_SERVER_BIN")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "redis-server".to_string());
    let runs = Command::new(&bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    match find(&bin) {
        // Rebuild when the binary changes (or is removed).
        Some(path) if runs => println!("cargo::rerun-if-changed={}", path.display()),
        // Watching a path that does not exist makes Cargo run this script
        // again on every build, so installing redis-server later is seen.
        _ => println!("cargo::rerun-if-changed={bin}.not-installed"),
    }
    let under_ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    if !runs && !under_ci {
        println!("cargo::rustc-cfg=redmodel_no_redis_server");
    }
}

/// Where `bin` is: itself if it names a path, else its first match on `PATH`.
fn find(bin: &str) -> Option<PathBuf> {
    if bin.contains('/') {
        return Some(PathBuf::from(bin)).filter(|p| p.exists());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(bin))
        .find(|p| Path::new(p).is_file())
}
