//! The `Db` handle's tests, one test binary: backends and connections
//! (`backends`), the pool of exclusive connections (`pool`), locks,
//! optimistic transactions, faults (a redis-server killed and restarted)
//! and TLS/ACL against private servers.

mod acks;
mod backends;
mod cluster;
mod faults;
mod lock;
mod optimistic;
mod pool;
mod pubsub;
mod tls_acl;

redmodel_suite::redis_server_test!();
