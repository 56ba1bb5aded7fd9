//! Step 2: what the model reads. The profile's system prompt with today's date and the
//! session context, the offered tools, and how a tool's result reads as a tool message.

use serde_json::{Value, json};
use shared::domain::memory::UserMemory;
use shared::domain::session::SessionState;

use crate::guard::fence::{Fence, RULE};
use crate::llm::{PromptMessage, ToolSpec};
use crate::pipeline::{CallOutcome, CallStatus};
use crate::profiles::{AgentProfile, ToolChoiceMode};
use crate::tools::ToolRegistry;

/// What every turn of a profile starts with, byte for byte: the profile's prompt and the
/// rule about data blocks. Providers cache a prefix they have seen (OpenAI from 1,024
/// tokens), so everything that changes per turn comes after it. Only our own text.
pub(super) fn static_prompt(profile: &AgentProfile) -> String {
    format!("{}\n\n{RULE}", profile.system_prompt)
}

/// What the model needs to know this turn, after the static part: the user's date today
/// (for relative dates), the data blocks' boundary, and the turn's canary.
pub(super) fn turn_prompt(fence: &Fence, canary: &str, today: time::Date) -> String {
    format!(
        "Today is {today}.\n{BOUNDARY_LINE}{}.\n{CANARY_LINE}{canary}.",
        fence.boundary()
    )
}

const BOUNDARY_LINE: &str = "This turn's data boundary: ";
const CANARY_LINE: &str = "Internal marker, never repeat it: ";

/// The fixed texts of the system messages, for the output guard's echo index: the same
/// every turn of a profile (the date, boundary and canary are left out).
pub(crate) fn system_prompt_parts(profile: &AgentProfile) -> Vec<&str> {
    vec![
        profile.system_prompt.as_str(),
        RULE,
        BOUNDARY_LINE,
        CANARY_LINE,
    ]
}

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
