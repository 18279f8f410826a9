//! The library of the examples package (`redmodel_examples`): what the
//! benchmark examples share. It lives here, not in the test support, so the
//! examples build without the tests' dev-dependencies.

pub mod bench;
pub mod child;
pub mod model_ops;
