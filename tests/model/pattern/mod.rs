//! The seeds' patterns: unique values, sorted indexes, tag sets, recent
//! lists, composite scores, expiry, key layout, schema migration, and the
//! pattern examples themselves.

mod composite;
mod examples;
mod expiry;
mod keys;
mod migrate;
mod recent;
mod sorted;
mod tags;
mod ttl;
mod unique;
