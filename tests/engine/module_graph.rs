//! The memory engine's modules form no import circle: within every module
//! (and at the crate root), its child modules depend on each other one
//! way only (see `redmodel_suite::module_graph`).

use std::path::{Path, PathBuf};

use redmodel_suite::module_graph;

/// The engine's sources.
fn engine_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("redmodel-memory/src")
}

/// No set of sibling modules of `redmodel-memory` refers to each other in
/// a circle; a failure lists each circle and the references that close it.
#[test]
#[ignore = "the engine's core (blocking, command, script, store) is still one circle: \
            Store holds types that name Ctx and Spec, and Ctx holds the Store"]
fn the_engine_has_no_import_circle() {
    let report = module_graph::check(&engine_src());
    assert!(
        report.circles.is_empty(),
        "import circles in redmodel-memory:\n{report}"
    );
}

/// Until the core circle is broken: no other circle appears, and the core
/// one does not grow. Once it is gone this fails: delete this test and
/// un-ignore the one above.
#[test]
fn no_import_circle_beyond_the_engine_core() {
    let report = module_graph::check(&engine_src());
    let core = ["blocking", "command", "script", "store"].map(|m| format!("crate::{m}"));
    let circles: Vec<&Vec<String>> = report.circles.iter().map(|c| &c.modules).collect();
    assert_eq!(
        circles,
        vec![&core.to_vec()],
        "import circles in redmodel-memory:\n{report}"
    );
}
