//! The shared crates under one name, at the paths the agent runtime, the tools and the tests
//! use: [`domain`] (plain types, the error type, clock, ids), `lambda_kit` (what a function
//! needs on Lambda), `stores` (the chat side's DynamoDB stores), `auth` (bearer tokens) and
//! `knowledge` (the knowledge base). A function that needs only some of them depends on
//! those directly: the flight and knowledge functions never compile `stores` or `auth`.

pub use ::domain::{Error, Result, clock, error, ids, provider};
pub use knowledge::{embeddings, kb};
pub use lambda_kit::{
    MAX_TRANSIENT_ROUNDS, aws, bootstrap, companion, config, layers, limits, metrics,
    observability, runtime_loop, sdk_spans, secrets, telemetry, tls, upstream,
};
pub use stores::{alerts, cache, chats, ledger, memory, support, turns, usage};

/// Plain domain types (the `domain` crate's modules).
pub mod domain {
    pub use ::domain::{
        alert, award_booking, carrier_sites, chat, flight, flight_notes, flight_text, json_len,
        loyalty, memory, money, schema, session, support, tool_args, tool_call, tool_output,
        tool_result, turn, ui,
    };
}

/// HTTP helpers (`lambda_kit::http`) and bearer-token authentication (the `auth` crate).
pub mod http {
    pub use ::auth;
    pub use lambda_kit::http::*;
}
