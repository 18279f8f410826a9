//! Bad data in Redis never panics a model read, and never loads as a wrong
//! value.
//!
//! Another program, a bug, or an operator with redis-cli can leave anything
//! at the keys the models read. These tests write random, hostile data with
//! raw commands into exactly those keys and fields (a "world"): wrong Redis
//! types at object, sub-object and relation keys, non-UTF-8 bytes, numbers
//! beyond every integer range, `NaN`/`inf`/`-0`/`1e999`, empty strings,
//! missing required and extra unknown fields, bad JSON, relation lists
//! holding keys of the wrong model or garbage, empty and percent-mangled
//! keys, reference fields holding another model's key, `_count` holding
//! text. Then they call every read operation of the model API and check
//! each result against an oracle written here from `docs/models.md`,
//! independently of the codec:
//!
//! - `Ok` only with the value the stored text means: `300` never loads into
//!   a `u8`, `1.5` never into an `i64`, `1e999` never into an `f64` as
//!   infinity, `class:01` never as a reference to `class:1`;
//! - otherwise a typed error naming the key, and the field where one is
//!   involved (`Decode`, `MissingField`, `UnexpectedType`, `InvalidKey`);
//! - never a panic: proptest reports a panic as a failure, and shrinks the
//!   world to the smallest one that still fails.
//!
//! Each world runs on the memory engine and on a private redis-server.
//! Sizes: `REDMODEL_BAD_INPUT_CASES` worlds per backend (default 24);
//! `REDMODEL_BAD_INPUT_SEED` replays a run (each test prints its seed).
//!
//! The key parsers get a property test of their own: parsing any text as a
//! key of any model never panics, succeeds exactly on the keys the layout
//! allows, and gives back a handle whose key is the text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::models::*;
use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use redmodel::model::key::encode_segment;
use redmodel::model::{
    Codec, Field, Incr, MemberList, ObjectRef, Plain, Ref, RelationRef, Scalar, Storage,
};
use redmodel::prelude::*;
use redmodel::{Error, Result};
use redmodel_suite::{backend_tests, make_ctx, Backend, Scope};
use serde::de::DeserializeOwned;
use serde::Serialize;

// One file per concern. The files share their items through this module:
// each starts with `use super::*`, which brings the imports above and the
// items of its siblings (re-exported below), all `pub(crate)`.
mod checks;
mod extra_models;
mod generators;
mod hostile;
mod key_oracle;
mod oracle_tests;
mod probes;
mod regressions;
mod value_oracle;
mod world;

use checks::*;
use extra_models::*;
use generators::*;
use hostile::*;
use key_oracle::*;
use probes::*;
use value_oracle::*;
use world::*;
