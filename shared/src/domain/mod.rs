//! Plain domain types: flights, session state, tool calls and tool results.

pub mod alert;
pub mod chat;
pub mod flight;
pub mod flight_notes;
pub mod flight_text;
pub mod loyalty;
pub mod memory;
pub mod money;
pub mod schema;
pub mod session;
pub mod tool_args;
pub mod tool_call;
pub mod tool_output;
pub mod tool_result;
pub mod ui;
