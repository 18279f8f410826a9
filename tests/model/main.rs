//! The model layer's tests, one test binary (linking one binary instead of
//! one per file is most of a cold build's time saved): objects, relations,
//! cascades, keys, the sync hook, hostile data, ACL-restricted users, and
//! the seed patterns (`pattern::*`). Behaviour tests run on every backend
//! through `redmodel_suite::backend_tests!`.
//!
//! All the models of these modules live in one program, so the registry of
//! referrers that delete cascades read (filled by the derives, program-wide)
//! holds them all. The modules' tests use their own tables, or the school's
//! through `models`; a referrer of another module only makes a cascade scan
//! keys that its test never wrote.

mod acl;
mod bad_input;
mod bulk;
mod cache;
mod cascade;
mod chaos;
mod check;
mod cluster_steps;
mod colocate;
mod foreign_types;
mod keys;
mod layers;
mod models;
mod objects;
mod pattern;
mod query;
mod references;
mod relations;
mod school;
// The school demo (examples/school.rs), as `school` and `cascade` use it:
// loaded once, so its models register once.
#[allow(dead_code)]
#[path = "../../examples/school.rs"]
mod school_example;
mod sync;
mod traced;
mod transaction;

redmodel_suite::redis_server_test!();
