//! Loopback ports for the servers, engines and proxies of one test binary.
//!
//! Each port is handed out once per process. A fault test kills a server
//! and its clients go on reconnecting to that port, for seconds (a cluster
//! client waiting for the failover) or until the test restarts the server
//! there. Had the kernel given the freed port to another test's server,
//! those clients would write into that test's database, which an exclusive
//! test (one that counts every key) sees as keys from nowhere.
//!
//! The claim holds across processes too: CI runs the db and model binaries
//! on three server versions side by side, each with its own servers. A
//! port is claimed by a lock on its own file in one folder that all test
//! processes share; the lock is held until the process ends, when the
//! kernel drops it, so a crashed run leaves no claim behind (only the
//! empty files, one per port ever used).

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use redmodel::memory::{Engine, ServerHandle};

/// Every port this process has handed out, with the locked file that
/// claims it from the other test processes.
static HANDED_OUT: Mutex<BTreeMap<u16, File>> = Mutex::new(BTreeMap::new());

/// The folder of the ports' claim files, shared by every test process of
/// this user on this machine.
fn claims_folder() -> io::Result<PathBuf> {
    let folder = std::env::temp_dir().join("redmodel-test-ports");
    std::fs::create_dir_all(&folder)?;
    Ok(folder)
}

/// Claims `port` for this process, unless another test process holds it.
fn claim(port: u16) -> io::Result<Option<File>> {
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(claims_folder()?.join(port.to_string()))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// How many times a port is looked for again when someone else binds it
/// between our probe and our bind.
const BIND_ATTEMPTS: usize = 5;

/// A loopback port that nobody listens on now, that this process has never
/// handed out and that no other test process has claimed. A process that
/// is not a test may take it before the caller binds it: callers retry
/// with a new one.
pub fn free_port() -> io::Result<u16> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    // Held until a new port comes, so that the kernel offers another each time.
    let mut refused = Vec::new();
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        if let Entry::Vacant(unclaimed) = handed_out.entry(port) {
            if let Some(claimed) = claim(port)? {
                unclaimed.insert(claimed);
                return Ok(port);
            }
        }
        refused.push(listener);
    }
}

/// Serves `engine` over RESP on a loopback port from [`free_port`].
pub async fn serve_engine(engine: Engine) -> io::Result<ServerHandle> {
    on_a_free_port(|port| redmodel::memory::serve(engine.clone(), (Ipv4Addr::LOCALHOST, port)))
        .await
}

/// A tokio listener on a loopback port from [`free_port`].
pub async fn listen() -> io::Result<tokio::net::TcpListener> {
    on_a_free_port(|port| tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))).await
}

/// Binds with `bind` on a port from [`free_port`], on another one while
/// someone else took the last.
async fn on_a_free_port<T, F>(mut bind: impl FnMut(u16) -> F) -> io::Result<T>
where
    F: Future<Output = io::Result<T>>,
{
    let mut taken = None;
    for _ in 0..BIND_ATTEMPTS {
        match bind(free_port()?).await {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => taken = Some(e),
            done => return done,
        }
    }
    Err(taken.unwrap_or_else(|| io::Error::other("no free port")))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeSet;

    #[test]
    fn a_port_is_handed_out_once() {
        let ports: BTreeSet<u16> = (0..200).map(|_| free_port().expect("a port")).collect();
        assert_eq!(ports.len(), 200);
    }

    #[test]
    fn a_port_claimed_by_another_process_is_not_handed_out() {
        let port = free_port().expect("a port");
        // The claim as another process sees it: a second open file
        // description of the same file finds it locked.
        assert!(claim(port).expect("the claims folder").is_none());
    }
}
