//! Step 2: what the model reads. The profile's system prompt with today's date and the
//! session context, the offered tools, and how a tool's result reads as a tool message.

use serde_json::{Value, json};
use shared::domain::session::SessionState;

use crate::llm::ToolSpec;
use crate::pipeline::{CallOutcome, CallStatus};
use crate::profiles::{AgentProfile, ToolChoiceMode};
use crate::tools::ToolRegistry;

/// The profile's prompt plus what the model needs to know every turn: today's date (for
/// relative dates) and the parts of the session state that carry context between turns.
pub(super) fn system_prompt(profile: &AgentProfile, state: &SessionState) -> String {
    let today = time::OffsetDateTime::now_utc().date();
    let mut prompt = format!("{}\n\nToday is {today}.", profile.system_prompt);
    let mut context = serde_json::Map::new();
    if let Some(last) = &state.last_flight_request {
        context.insert("last_flight_request".into(), json!(last));
    }
    if let Some(pending) = &state.pending_gpt_query {
        context.insert("pending_gpt_query".into(), json!(pending));
    }
    if !state.preferences.is_empty() {
        context.insert("preferences".into(), json!(state.preferences));
    }
    if !context.is_empty() {
        prompt.push_str("\nSession context (JSON): ");
        prompt.push_str(&Value::Object(context).to_string());
    }
    prompt
}

/// The profile's tools this deployment has; none when the profile's choice is `none`.
pub(super) fn offered_tools(registry: &ToolRegistry, profile: &AgentProfile) -> Vec<ToolSpec> {
    if profile.tool_choice == ToolChoiceMode::None {
        Vec::new()
    } else {
        registry.specs(&profile.tools)
    }
}

/// The tool message the LLM reads: the tool's own message, with its status when not a
/// success so the model does not mistake an error text for data.
pub(super) fn tool_message(call: &CallOutcome) -> String {
    match call.status {
        CallStatus::Succeeded => call.result.message.clone(),
        other => format!("[{}] {}", other.as_str(), call.result.message),
    }
}
