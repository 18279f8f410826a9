//! Shared pieces of the model tests: the school's models, and
//! [`on_every_backend!`], which runs a test body on a fresh memory engine
//! and on a private redis-server (through the suite's support library).
//!
//! Model keys have fixed names (`teacher:A`), so these tests cannot work
//! under a key prefix: they always get a database of their own
//! ([`redmodel_suite::Scope::Exclusive`]), even when `REDIS_URL` is set.

#![allow(dead_code)]

pub mod models;

/// Runs `body` (an async block with `db: &Db` in scope, returning
/// `Result<(), redmodel::Error>`) on every backend; a failure names the backend.
#[macro_export]
macro_rules! on_every_backend {
    (|$db:ident| $body:expr) => {{
        for backend in redmodel_suite::Backend::ALL {
            redmodel_suite::run_on(
                backend,
                redmodel_suite::Scope::Exclusive,
                module_path!(),
                |ctx: redmodel_suite::TestCtx| async move {
                    let $db: &redmodel::Db = &ctx.db;
                    let result: Result<(), redmodel::Error> = async { $body }.await;
                    result
                },
            )
            .await;
        }
    }};
}
