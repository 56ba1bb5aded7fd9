//! The shared crate's integration tests: its stores against DynamoDB Local, moto's
//! Secrets Manager and SQS, and the HTTP pieces (auth, envelope).
//!
//! One test binary per crate (each file a module): a test binary links every dependency,
//! so one per file cost most of the build. Filter by module: `cargo test -p <crate>
//! --test integration <module>::`.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod alerts;
mod auth;
mod aws_clients;
mod cache;
mod chats;
mod companions;
mod kb;
mod ledger;
mod limits_and_usage;
mod memory;
mod retention;
mod secrets;
mod support;
mod turns;
mod upstream;
