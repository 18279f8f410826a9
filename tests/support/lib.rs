//! Test support shared by the integration tests, examples and benchmarks.
