//! Shared crate of the tool-calling backend: domain types, DynamoDB stores (tool-call ledger,
//! chats, usage, rate limits, knowledge base), the Secrets Manager cache, configuration and
//! HTTP helpers. The agent runtime (LLM, tools, pipeline, turn loop) is the `agent` crate;
//! nothing here depends on it, so the flight and kb functions never compile it.
//!
//! Every function crate builds its clients once per container from here and hands them to
//! a handler; tests call the same handlers against the local emulators.

pub mod alerts;
pub mod aws;
pub mod cache;
pub mod chats;
pub mod clock;
pub mod companion;
pub mod config;
pub mod domain;
mod dynamo;
pub use dynamo::MAX_TRANSIENT_ROUNDS;
pub mod embeddings;
pub mod error;
pub mod http;
pub mod ids;
pub mod kb;
pub mod ledger;
pub mod limits;
pub mod memory;
pub mod metrics;
pub mod observability;
pub mod provider;
pub mod runtime_loop;
pub mod secrets;
pub mod tls;
pub mod turns;
pub mod upstream;
pub mod usage;

pub use error::{Error, Result};
