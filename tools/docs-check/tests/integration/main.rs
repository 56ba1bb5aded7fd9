//! docs-check's integration tests: its checks on fixtures and on the project's own docs.
//!
//! One test binary per crate (each file a module): a test binary links every dependency,
//! so one per file cost most of the build. Filter by module: `cargo test -p <crate>
//! --test integration <module>::`.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod code_tables;
mod facts;
mod generated;
mod layout;
mod markdown;
