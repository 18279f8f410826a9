//! The memory engine's tests, one test binary: differential tests against
//! a private redis-server (random sequences in `differential`, hand-written
//! trap scripts in `traps`, read from `tests/engine/traps/*.txt`, and
//! DUMP / RESTORE both ways in `dump`, RDB files both ways in `rdb`, AOF
//! files both ways in `aof`), expiry with a manual clock
//! (`expiry`), the RESP server (`resp_server`; its arrival order across
//! connections in `resp_order`; MONITOR's stream beside a real server's in
//! `monitor`) and bad input on the engine
//! alone (`fuzz`: no panic, no hang, no unbounded growth; looping scripts
//! killed), and the engine's source itself (`module_graph`: no import
//! circle between its modules).

mod aof;
mod differential;
mod dump;
mod expiry;
mod fuzz;
mod info;
mod module_graph;
mod monitor;
mod rdb;
mod resp_order;
mod resp_server;
mod traps;

redmodel_suite::redis_server_test!();
