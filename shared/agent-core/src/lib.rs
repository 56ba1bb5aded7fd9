//! The agent's core types, below the runtime and the model clients: the LLM request and
//! completion types with the [`llm::LlmProvider`] trait, the events a turn emits
//! ([`events::TurnEvent`]), how a tool call ended ([`call_status::CallStatus`]) and the stop
//! signal of a turn. The `llm` crate implements the trait; the `agent` crate runs turns on it.

#![deny(missing_docs)]

pub mod call_status;
pub mod events;
pub mod fallback;
pub mod genai;
pub mod llm;
mod providers;
pub mod stop;

pub use domain::{Error, Result};
