//! The hostile worlds, run on every backend with proptest, shrunk on failure.

#[allow(unused_imports)]
use super::*;

pub(crate) use redmodel_suite::env_number;

/// Runs random worlds on one backend, shrinking a failing one.
pub(crate) fn run_hostile_worlds(backend: Backend) {
    let name = format!("{}::hostile_worlds::{}", module_path!(), backend.name());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let Some(ctx) = runtime.block_on(make_ctx(backend, Scope::Exclusive, &name)) else {
        return;
    };
    let cases = env_number("REDMODEL_BAD_INPUT_CASES", 24) as u32;
    let seed = redmodel_suite::env_seed("REDMODEL_BAD_INPUT_SEED");
    eprintln!("{name}: {cases} worlds; REDMODEL_BAD_INPUT_SEED={seed}");
    let mut seed_bytes = [0u8; 32];
    for (i, chunk) in seed_bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes(),
        );
    }
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 1000,
        // Each step replays a whole world: bound the time, not only the steps.
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let result = runner.run(&case(), |case| {
        runtime
            .block_on(run_case(&ctx.db, &case))
            .map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => eprintln!("{name}: {cases} worlds read back as the oracle says"),
        // The reason comes again after the world, which can be long: a log
        // cut in the middle still shows it.
        Err(TestError::Fail(reason, case)) => panic!(
            "{name} (REDMODEL_BAD_INPUT_SEED={seed}): {reason}\nsmallest failing world:\n{case:?}\n\
             {name} (REDMODEL_BAD_INPUT_SEED={seed}) failed: {reason}"
        ),
        Err(e) => panic!("{name} (REDMODEL_BAD_INPUT_SEED={seed}): {e}"),
    }
}

backend_tests! {
    /// Random hostile worlds on each backend (`hostile_worlds::memory`, ...).
    fn hostile_worlds(backend) {
        run_hostile_worlds(backend);
    }
}
