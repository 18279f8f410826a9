//! The library of the examples package (`redmodel_examples`): what the
//! benchmark examples share. It lives here, not in the test support, so the
//! examples build without the tests' dev-dependencies.

pub mod bench;
pub mod child;
// `model_ops.rs`, beside this file, is not part of the library: it is a
// module of `bench_models` and of the criterion bench `in_process`, each
// compiling its own copy. Compiled here, in another crate, its code was
// optimized apart from the loop that times it, and the in-process incr
// read 0.77x raw where the same code inside the example read 0.79x to
// 0.85x.
