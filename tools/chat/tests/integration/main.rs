//! The terminal client's integration tests against fake routers.
//!
//! One test binary per crate (each file a module): a test binary links every dependency,
//! so one per file cost most of the build. Filter by module: `cargo test -p <crate>
//! --test integration <module>::`.

mod common;

mod client;
mod retry;
mod specialists;
