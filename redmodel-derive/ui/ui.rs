//! Compile-fail tests: bad derive attributes and misuse of the typed field
//! handles are compile errors that point at the offending tokens and say
//! what to write instead. The expected messages are in `cases/*.stderr`
//! (regenerate with `TRYBUILD=overwrite` and review the diff).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("cases/*.rs");
}
