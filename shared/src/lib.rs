//! Shared crate of the tool-calling backend: domain types, DynamoDB stores (tool-call ledger,
//! chats, usage, rate limits), the Secrets Manager cache, configuration and HTTP helpers.
//!
//! Every function crate builds its clients once per container from here and hands them to
//! a handler; tests call the same handlers against the local emulators.

pub mod aws;
pub mod chats;
pub mod clock;
pub mod config;
pub mod domain;
mod dynamo;
pub mod embeddings;
pub mod error;
pub mod http;
pub mod ids;
pub mod jobs;
pub mod kb;
pub mod ledger;
pub mod limits;
pub mod llm;
pub mod observability;
pub mod secrets;
pub mod tools;
pub mod upstream;
pub mod usage;

pub use error::{Error, Result};
