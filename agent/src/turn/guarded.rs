//! The guards' places in the turn: the user's message is scanned before the first model
//! step (flagged, or refused in `block` mode). Tool results are scanned by the pipeline as
//! each call ends (flagged in the ledger); the output guard sits in the model step; data
//! blocks in the prompt.

use serde_json::json;

use super::{Agent, TurnInput, TurnState};
use crate::guard::GuardMode;
use crate::guard::detect::{self, Finding};
use crate::guard::output::Violation;
use agent_core::events::{self, EventSink};

fn names(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.as_str()).collect()
}

impl Agent {
    /// `Some(reason)` when the profile blocks what the input guard found in the message.
    pub(super) fn guard_input(
        &self,
        input: &TurnInput,
        state: &TurnState,
        events: &dyn EventSink,
    ) -> Option<String> {
        let findings = detect::scan(input.message.as_str());
        if findings.is_empty() {
            return None;
        }
        let blocked = input.profile.guard == GuardMode::Block;
        tracing::warn!(
            chat_id = %state.chat.id,
            findings = ?names(&findings),
            blocked,
            "input guard: the message looks like an attack"
        );
        agent_core::trace_event!(
            "guard.finding",
            app.guard.findings = %names(&findings).join(","),
            app.guard.blocked = blocked
        );
        events::debug(
            events,
            "guard_input",
            || json!({ "findings": names(&findings), "blocked": blocked }),
        );
        blocked.then(|| names(&findings).join(", "))
    }

    /// The output guard over model text that reaches the client outside the answer (quick
    /// replies, a handoff's reason): what it found, if it would have cut an answer there.
    pub(super) fn guard_model_text(&self, state: &TurnState, text: &str) -> Option<Violation> {
        let mut guard = self.output_guard(state);
        guard.push(text);
        guard.finish();
        guard.violation()
    }
}
