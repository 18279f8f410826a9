//! Hands the test the compiler that builds it: the cases are checked by the
//! same rustc as the `redmodel` library they link, since another one could
//! not read that library's metadata.

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    println!("cargo:rustc-env=UI_RUSTC={rustc}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
