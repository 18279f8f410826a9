//! Compile-fail tests: bad derive attributes and misuse of the typed field
//! handles are compile errors that point at the offending tokens and say
//! what to write instead. Each `cases/NAME.rs` must fail to compile with
//! the messages in `cases/NAME.stderr`, as [`normalize`] writes them.
//!
//! After a deliberate change of a message, `UI_OVERWRITE=1 cargo test -p
//! redmodel-derive-ui` rewrites the `.stderr` files; review their diff.

mod check;
mod normalize;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[test]
fn every_case_fails_to_compile_with_its_expected_messages() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = package
        .ancestors()
        .nth(2)
        .expect("the package sits two folders below the workspace root");
    let library = check::Library::find().unwrap_or_else(|e| panic!("{e}"));
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui");
    std::fs::create_dir_all(&out_dir).expect("creating the cases' output folder");
    let overwrite = std::env::var_os("UI_OVERWRITE").is_some();

    let cases = cases(&package.join("cases"));
    assert!(!cases.is_empty(), "no cases in {}", package.display());
    let failures = Mutex::new(Vec::new());
    let next = Mutex::new(cases.iter());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let Some(case) = next.lock().expect("case queue").next() else {
                    return;
                };
                if let Err(failure) = run(&library, workspace, case, &out_dir, overwrite) {
                    failures.lock().expect("failure list").push(failure);
                }
            });
        }
    });
    let failures = failures.into_inner().expect("failure list");
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// The `.rs` files of the cases folder, in name order.
fn cases(folder: &Path) -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("reading {}: {e}", folder.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    cases.sort();
    cases
}

/// Checks one case against its `.stderr` file (or writes that file).
fn run(
    library: &check::Library,
    workspace: &Path,
    case: &Path,
    out_dir: &Path,
    overwrite: bool,
) -> Result<(), String> {
    let name = case.display();
    let outcome = check::check(library, workspace, case, out_dir)?;
    if outcome.compiled {
        return Err(format!("{name} compiled; it must fail to"));
    }
    let case_folder = case
        .parent()
        .and_then(|folder| folder.strip_prefix(workspace).ok())
        .ok_or_else(|| format!("{name} is not inside {}", workspace.display()))?;
    let actual = normalize::normalize(&outcome.stderr, case_folder, workspace);
    let expected_path = case.with_extension("stderr");
    if overwrite {
        return std::fs::write(&expected_path, &actual)
            .map_err(|e| format!("writing {}: {e}", expected_path.display()));
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    if expected == actual {
        return Ok(());
    }
    Err(format!(
        "{name}: the errors differ from {}\n--- expected\n{expected}--- actual\n{actual}---",
        expected_path.display()
    ))
}
