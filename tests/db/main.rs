//! The `Db` handle's tests, one test binary: backends and connections
//! (`backends`), locks, optimistic transactions, faults (a redis-server
//! killed and restarted) and TLS/ACL against private servers.

mod backends;
mod faults;
mod lock;
mod optimistic;
mod tls_acl;

redmodel_suite::redis_server_test!();
