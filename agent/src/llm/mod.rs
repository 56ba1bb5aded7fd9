//! The model behind the turn: the request and completion types and the provider trait
//! (`agent_core::llm`, re-exported here), and [`metered`]: each call held against the
//! user's daily budget and its usage recorded. The clients are the `llm` crate's, built
//! through the [`LlmClients`] a function hands the runtime.

pub use agent_core::llm::*;

pub use agent_tools::metered;
