//! kb-ingest's integration tests: scanning, ingesting and the command line against the
//! emulators.
//!
//! One test binary per crate (each file a module): a test binary links every dependency,
//! so one per file cost most of the build. Filter by module: `cargo test -p <crate>
//! --test integration <module>::`.

mod common;

mod bedrock;
mod cli;
mod embeddings;
mod ingest;
mod scan;
