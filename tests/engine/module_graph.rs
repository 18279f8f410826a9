//! The memory engine's modules form no import circle: within every module
//! (and at the crate root), its child modules depend on each other one
//! way only (see `redmodel_suite::module_graph`).

use std::path::Path;

use redmodel_suite::module_graph;

/// No set of sibling modules of `redmodel-memory` refers to each other in
/// a circle; a failure lists each circle and the references that close it.
#[test]
fn the_engine_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("redmodel-memory/src");
    let report = module_graph::check(&src);
    assert!(
        report.circles.is_empty(),
        "import circles in redmodel-memory:\n{report}"
    );
}
