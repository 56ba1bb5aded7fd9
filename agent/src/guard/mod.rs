//! Guardrails: everything the model reads that did not come from us is untrusted (the user's
//! message, tool results, knowledge-base passages, upstream texts), and everything it writes
//! is checked before the client sees it. The checks are the `guardrails` crate's (input
//! normalisation and detection, data blocks, the stream guard, the link policy), shared with
//! kb-ingest; [`payload`] applies them to everything else a turn sends the client (tool
//! results, arguments, refusals, UI elements, the final state), string by string.

pub use guardrails::{GuardMode, detect, fence, input, links, output};

pub mod payload;

use std::thread::JoinHandle;

use crate::profiles::AgentCatalog;

/// The guards' automata, built on a thread of their own during a function's init while its
/// first thread wires the clients (Lambda runs init at full CPU): the detector's and the
/// echo index of the catalog's prompts. Each is built once per process; whatever uses one
/// first waits for it. (The output guard's link pattern is left to the first answer: here
/// it would make the thread outlast the rest of init.) The thread's allocations stay in an
/// arena of its own: mcp-server, whose first `tools/call` builds the same, peaked 0.4 MiB
/// higher with it, so only chat-router uses it.
pub struct GuardsBuilding(Option<JoinHandle<()>>);

impl GuardsBuilding {
    /// Starts building the guards of `agents`' prompts.
    pub fn start(agents: &AgentCatalog) -> Self {
        let prompts = crate::runtime::prompt_parts(agents);
        let thread = std::thread::Builder::new()
            .name("guards".into())
            .spawn(move || {
                detect::warm();
                payload::prebuild_echo_index(prompts);
            });
        // Where no thread can start, each is built at its first use instead.
        Self(thread.ok())
    }

    /// Waits until they are built.
    pub fn finish(self) {
        if let Some(thread) = self.0 {
            let _ = thread.join();
        }
    }
}
