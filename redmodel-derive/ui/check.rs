//! One case type-checked by rustc, linked against the `redmodel` library
//! that Cargo built for this package.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `redmodel` library the cases are checked against, and the folder
/// holding its dependencies (the derive macros among them).
pub struct Library {
    deps: PathBuf,
    rlib: PathBuf,
}

impl Library {
    /// The newest `libredmodel-*.rlib` beside this test's binary. Cargo
    /// builds the dev-dependency before it runs the test, rebuilding it
    /// whenever anything it depends on changed, so the newest one matches
    /// the dependencies beside it; the others are builds with other
    /// features, or older ones.
    pub fn find() -> Result<Library, String> {
        let exe = std::env::current_exe().map_err(|e| format!("locating the test binary: {e}"))?;
        let deps = exe
            .parent()
            .ok_or("the test binary has no folder")?
            .to_path_buf();
        let newest = std::fs::read_dir(&deps)
            .map_err(|e| format!("reading {}: {e}", deps.display()))?
            .filter_map(Result::ok)
            .filter(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                name.starts_with("libredmodel-") && name.ends_with(".rlib")
            })
            .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
            .max();
        let (_, rlib) = newest.ok_or_else(|| {
            format!(
                "no libredmodel-*.rlib in {}: run the test through Cargo \
                 (`cargo test -p redmodel-derive-ui`), which builds it",
                deps.display()
            )
        })?;
        Ok(Library { deps, rlib })
    }
}

/// What rustc said about one case.
pub struct Outcome {
    /// Whether the case compiled (a failure for a compile-fail case).
    pub compiled: bool,
    /// rustc's messages, as printed.
    pub stderr: String,
}

/// Type-checks `case` as a binary crate, from the workspace root: the
/// spans the library recorded are relative to it, so that rustc finds the
/// library's sources and quotes their lines as it does in a build.
pub fn check(
    library: &Library,
    workspace: &Path,
    case: &Path,
    out_dir: &Path,
) -> Result<Outcome, String> {
    let name = case
        .file_stem()
        .and_then(|stem| stem.to_str())
        .ok_or_else(|| format!("{} has no name", case.display()))?;
    let relative = case.strip_prefix(workspace).unwrap_or(case);
    let output = Command::new(env!("UI_RUSTC"))
        .current_dir(workspace)
        // The workspace's edition (Cargo.toml's workspace.package).
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "bin",
            "--crate-name",
            name,
        ])
        .arg(format!(
            "--emit=metadata={}",
            out_dir.join(format!("{name}.rmeta")).display()
        ))
        .arg("-L")
        .arg(format!("dependency={}", library.deps.display()))
        .arg("--extern")
        .arg(format!("redmodel={}", library.rlib.display()))
        .args(["--color", "never", "--diagnostic-width", "140"])
        .arg(relative)
        .output()
        .map_err(|e| format!("running {}: {e}", env!("UI_RUSTC")))?;
    Ok(Outcome {
        compiled: output.status.success(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}
