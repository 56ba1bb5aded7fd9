//! kb-retrieve's integration tests: search, snapshots, reloads, Bedrock backends and the
//! retrieval quality on the sample knowledge base.
//!
//! One test binary per crate (each file a module): a test binary links every dependency,
//! so one per file cost most of the build. Filter by module: `cargo test -p <crate>
//! --test integration <module>::`.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod bedrock;
mod bedrock_kb;
mod degrade;
mod quality;
mod reload;
mod sample_events;
mod search;
mod snapshots;
mod validation;
