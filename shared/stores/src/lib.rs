//! The DynamoDB stores of the chat side: the tool-call ledger (fenced claims, dedupe, audit)
//! and the result cache on it, chats and their messages, turns and their event logs, LLM
//! usage, what is remembered about a user, and fare alerts. Each is a trait with a DynamoDB
//! implementation on the kit's one table helper (`lambda_kit::dynamo`). The flight and
//! knowledge functions never compile this crate.

#![deny(missing_docs)]

pub mod alerts;
pub mod cache;
pub mod chats;
pub mod ledger;
pub mod memory;
pub mod support;
pub mod turns;
pub mod usage;

pub use domain::{Error, Result};
