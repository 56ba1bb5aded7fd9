//! Guardrails: everything the model reads that did not come from us is untrusted (the user's
//! message, tool results, knowledge-base passages, upstream texts), and everything it writes
//! is checked before the client sees it. The checks are the `guardrails` crate's (input
//! normalisation and detection, data blocks, the stream guard, the link policy), shared with
//! kb-ingest; [`payload`] applies them to everything else a turn sends the client (tool
//! results, arguments, refusals, UI elements, the final state), string by string.

pub use guardrails::{GuardMode, detect, fence, input, links, output};

pub mod payload;
