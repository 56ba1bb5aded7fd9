//! The backend's plain types, without AWS: flights and money, session state, chats, tool calls
//! and their results, fare alerts, a turn's record; the one error type every crate above this
//! one returns (each function maps it once to its HTTP error envelope); an injectable clock
//! and ULIDs. Every other crate depends on this one; it depends on none of them.

#![deny(missing_docs)]

pub mod alert;
pub mod award_booking;
pub mod carrier_sites;
pub mod chat;
pub mod flight;
pub mod flight_notes;
pub mod flight_text;
pub mod json_len;
pub mod loyalty;
pub mod memory;
pub mod money;
pub mod schema;
pub mod session;
pub mod support;
pub mod token_usage;
pub mod tool_args;
pub mod tool_call;
mod tool_call_status;
pub mod tool_output;
pub mod tool_result;
pub mod turn;
pub mod ui;

pub mod clock;
pub mod error;
pub mod ids;
pub mod provider;

pub use error::{Error, Result};
