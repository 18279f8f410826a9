//! The `Db` handle's tests, one test binary: backends and connections
//! (`backends`), the pool of exclusive connections (`pool`), locks,
//! optimistic transactions, faults (a redis-server killed and restarted),
//! TLS/ACL against private servers, and what a `Db` knows of its server
//! (`server_info`), and Redis Sentinel (`sentinel`).

mod acks;
mod backends;
mod cluster;
mod faults;
mod lock;
mod optimistic;
mod pool;
mod pubsub;
mod sentinel;
mod server_info;
mod tls_acl;

redmodel_suite::redis_server_test!();
