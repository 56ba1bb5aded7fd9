//! The build script of every function (`build = "../link.rs"` in its `Cargo.toml`): it links
//! the function's binary as a position-dependent executable, so the loader has no relative
//! relocations to apply at start and no pages of relocated pointers to copy. The binary then
//! loads at a fixed address: docs/security.md "Not yet defended" has the trade-off,
//! docs/measurements.md "Release profile" the figures.
fn main() {
    // Lambda's targets only (a developer's macOS build links as the platform wants), and
    // binaries only: the package's tests and benches link as before.
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
