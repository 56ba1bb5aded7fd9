//! chat-router's integration tests: whole turns through the handler against DynamoDB Local,
//! moto, the fake LLM and the real tool functions served over local fakes.
//!
//! One test binary per crate (each file a module): a test binary links every dependency,
//! so one per file cost most of the build. Filter by module: `cargo test -p <crate>
//! --test integration <module>::`.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod common;

mod alerts;
mod approval;
mod budget;
mod cash_providers;
mod chat;
mod fallback;
mod flight_rows;
mod guardrails;
mod inputs;
mod language;
mod limits;
mod mcp_client;
mod metrics;
mod models;
mod payloads;
mod sample_events;
mod session;
mod specialists;
mod traces;
mod turns;
