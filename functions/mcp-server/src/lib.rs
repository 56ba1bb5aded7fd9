//! The MCP server function: the registry's tools served to any MCP client over Streamable
//! HTTP (work in progress: the framing check and the configuration).

pub mod call;
pub mod config;
pub mod convert;
pub mod deps;
pub mod handler;
pub mod jsonrpc;
pub mod listing;
pub mod protected;
pub mod server;
