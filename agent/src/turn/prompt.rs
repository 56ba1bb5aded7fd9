//! Step 2: what the model reads. The profile's system prompt with today's date and the
//! session context, the offered tools, and how a tool's result reads as a tool message.

use serde_json::{Value, json};
use shared::domain::memory::UserMemory;
use shared::domain::session::SessionState;

pub(super) use crate::system_prompt::{static_prompt, turn_prompt};

use crate::guard::fence::Fence;
use crate::llm::{PromptMessage, ToolSpec};
use crate::pipeline::{CallOutcome, CallStatus};
use crate::profiles::{AgentProfile, ToolChoiceMode};
use agent_tools::ToolRegistry;

/// The parts of the session state that carry context between turns, as a data block: they
/// hold user-supplied text (a pending question, preferences).
pub(super) fn session_context(state: &SessionState, fence: &Fence) -> Option<PromptMessage> {
    let mut context = serde_json::Map::new();
    if let Some(last) = &state.last_flight_request {
        context.insert("last_flight_request".into(), json!(last));
    }
    if let Some(pending) = &state.pending_gpt_query {
        context.insert("pending_gpt_query".into(), json!(pending));
    }
    if let Some(pending) = &state.pending_flight_request {
        context.insert("pending_flight_request".into(), json!(pending));
    }
    if !state.selected_itineraries.is_empty() {
        context.insert("selected_flights".into(), json!(state.selected_itineraries));
    }
    if !state.preferences.is_empty() {
        context.insert("preferences".into(), json!(state.preferences));
    }
    (!context.is_empty()).then(|| {
        let text = Value::Object(context).to_string();
        PromptMessage::system(fence.wrap("session context (JSON)", &text))
    })
}

/// What the user asked to be remembered (`remember`), in all their chats: their own words,
/// so a data block.
pub(super) fn remembered(memory: &UserMemory, fence: &Fence) -> Option<PromptMessage> {
    (!memory.is_empty()).then(|| {
        let notes: Vec<&str> = memory.notes.iter().map(|n| n.content.as_str()).collect();
        let text = json!({ "preferences": memory.preferences, "notes": notes }).to_string();
        PromptMessage::system(fence.wrap(
            "remembered about the user (JSON; flight searches fill gaps from the preferences)",
            &text,
        ))
    })
}

/// A tool result as the model reads it: the message, cut to `max_chars`, in a data block
/// naming the tool and the job.
pub(super) fn fenced_tool_message(call: &CallOutcome, fence: &Fence, max_chars: usize) -> String {
    let tool = call
        .tool
        .map_or_else(|| call.call.name.clone(), |t| t.to_string());
    let source = match &call.job_id {
        Some(job) => format!("tool {tool}, job {job}"),
        None => format!("tool {tool}"),
    };
    fence.wrap(
        &source,
        &super::history::truncate(&tool_message(call), max_chars),
    )
}

/// The profile's tools this deployment has, and those discovered on its external MCP
/// servers; none when the profile's choice is `none`.
pub(super) fn offered_tools(registry: &ToolRegistry, profile: &AgentProfile) -> Vec<ToolSpec> {
    if profile.tool_choice == ToolChoiceMode::None {
        Vec::new()
    } else {
        let mut specs = registry.specs(&profile.tools);
        specs.extend(registry.external_specs(&profile.mcp_servers));
        specs
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
