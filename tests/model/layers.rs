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

/// The files of `redmodel/src` outside `allowed` (relative paths),
/// each with its text up to its first `#[cfg(test)]` (unit tests may
/// build any backend they test).
fn sources_outside(allowed: &[&str]) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("redmodel/src");
    let mut found = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).expect("a source directory");
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let relative = path
                .strip_prefix(&root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            if allowed
                .iter()
                .any(|a| relative == *a || relative.starts_with(&format!("{a}/")))
            {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if relative.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                let code = text
                    .split("#[cfg(test)]")
                    .next()
                    .unwrap_or_default()
                    .to_string();
                found.push((relative, code));
            }
        }
    }
    found
}

/// Lines of `code` that are not comments and contain one of `needles`.
fn offending(files: &[(String, String)], needles: &[&str]) -> Vec<String> {
    let mut hits = Vec::new();
    for (file, code) in files {
        for (n, line) in code.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                continue;
            }
            if let Some(needle) = needles.iter().find(|needle| line.contains(*needle)) {
                hits.push(format!("{file}:{}: {needle}", n + 1));
            }
        }
    }
    hits
}

/// How a write runs on each backend (Lua scripts, WATCH transactions,
/// the engine's in-process path) is decided in `db/` alone: the model
/// layer describes reads and writes and never builds a script or a WATCH.
#[test]
fn only_the_db_layer_writes_scripts_and_watches() {
    let files = sources_outside(&["db", "db.rs"]);
    let hits = offending(
        &files,
        &[
            "\"WATCH\"",
            "Lua::new",
            "redis.call",
            "redis.pcall",
            ".atomically(",
        ],
    );
    assert!(
        hits.is_empty(),
        "scripts or WATCH outside db/:\n{}",
        hits.join("\n")
    );
}

/// The model layer never asks where it runs: no test of the backend or
/// match on the key layout outside `db/` and the key layout's own module
/// (it asks `Db` whether keys can share one atomic unit instead).
#[test]
fn the_model_layer_never_asks_where_it_runs() {
    let files = sources_outside(&["db", "db.rs", "layout.rs"]);
    let hits = offending(
        &files,
        &[
            ".engine()",
            "KeyLayout::Plain",
            "KeyLayout::Cluster",
            "key_layout()",
        ],
    );
    assert!(
        hits.is_empty(),
        "backend or layout tests outside db/:\n{}",
        hits.join("\n")
    );
}
