//! The mapper's modules form no import circle: within every module (and
//! at the crate root), its child modules depend on each other one way
//! only (see `redmodel_suite::module_graph`). So the layers the crate's
//! module map describes stay true: `model` uses `db`, never the reverse.

use std::path::Path;

use redmodel_suite::module_graph;

/// No set of sibling modules of `redmodel` refers to each other in a
/// circle; a failure lists each circle and the references that close it.
#[test]
fn the_mapper_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("redmodel/src");
    let report = module_graph::check(&src);
    assert!(
        report.circles.is_empty(),
        "import circles in redmodel:\n{report}"
    );
}
