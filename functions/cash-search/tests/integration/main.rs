//! cash-search's integration tests: the handler against fake Duffel and Amadeus, sample
//! events, upstream errors and the property tests.
//!
//! One test binary per crate (each file a module): a test binary links every dependency,
//! so one per file cost most of the build. Filter by module: `cargo test -p <crate>
//! --test integration <module>::`.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod duffel;
mod fuzz;
mod requests;
mod sample_events;
mod search;
mod token;
mod upstream_errors;
