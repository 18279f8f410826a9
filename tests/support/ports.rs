//! Loopback ports for the servers, engines and proxies of one test binary.
//!
//! Each port is handed out once per process. A fault test kills a server
//! and its clients go on reconnecting to that port, for seconds (a cluster
//! client waiting for the failover) or until the test restarts the server
//! there. Had the kernel given the freed port to another test's server,
//! those clients would write into that test's database, which an exclusive
//! test (one that counts every key) sees as keys from nowhere.

use std::collections::BTreeSet;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Mutex, PoisonError};

use redmodel::memory::{Engine, ServerHandle};

/// Every port this process has handed out.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// How many times a port is looked for again when someone else binds it
/// between our probe and our bind.
const BIND_ATTEMPTS: usize = 5;

/// A loopback port that nobody listens on now and that this process has
/// never handed out. Another process may take it before the caller binds
/// it: callers retry with a new one.
pub fn free_port() -> io::Result<u16> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    // Held until a new port comes, so that the kernel offers another each time.
    let mut refused = Vec::new();
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        if handed_out.insert(port) {
            return Ok(port);
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

    #[test]
    fn a_port_is_handed_out_once() {
        let ports: BTreeSet<u16> = (0..200).map(|_| free_port().expect("a port")).collect();
        assert_eq!(ports.len(), 200);
    }
}
