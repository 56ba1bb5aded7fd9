//! Guardrails: everything the model reads that did not come from us is untrusted (the user's
//! message, tool results, knowledge-base passages, upstream texts), and everything it writes
//! is checked before the client sees it.
//!
//! - [`input`]: the user's message is normalised (NFKC, invisible format characters removed)
//!   and scanned ([`detect`]) before the turn starts; a profile flags or blocks what it finds.
//!   kb-ingest scans documents with the same detector.
//! - [`fence`]: tool results, history and session context reach the model inside data
//!   blocks with a per-turn random boundary, and the system prompt says data is never an
//!   instruction.
//! - [`output`]: the streamed answer is checked as it streams (a per-turn canary from the
//!   system prompt, long verbatim pieces of the system prompt, secret-looking strings, links
//!   to hosts not on the allow-list), holding back only what the longest check needs.
//! - [`links`]: which links an answer may carry.

#![deny(missing_docs)]

pub mod detect;
pub mod fence;
pub mod input;
pub mod links;
pub mod output;

use serde::Deserialize;

/// What a profile does when the input guard finds an attack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardMode {
    /// The turn goes on; the log and a `debug` event say what was found.
    #[default]
    Flag,
    /// The turn ends with a short refusal and `error{code: "guardrail"}`.
    Block,
}
