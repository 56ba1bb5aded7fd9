//! One `tools/call` as a one-call step of the chat's pipeline: the same validation,
//! per-user rate limits, ledger (an identical call of the same user within the dedupe
//! window is served from it), audit and output guard as a call the model makes.
//!
//! MCP calls of a user share one ledger scope, `mcp:<user>` in place of a chat id, so the
//! dedupe window works across their MCP requests but never joins a chat's calls.

use std::sync::Arc;
use std::time::Instant;

use agent::NoEvents;
use agent::llm::ToolCallRequest;
use agent::pipeline::{CallOutcome, Pipeline, StepLimits};
use agent::profiles::ToolPolicy;
use agent::tools::{Progress, ToolContext};
use serde_json::{Map, Value};
use shared::domain::flight::Locale;
use shared::domain::memory::UserMemory;
use shared::domain::session::SessionState;
use shared::domain::tool_call::ToolName;
use shared::http::auth::AuthenticatedUser;

/// The ledger scope of a user's MCP calls.
pub fn scope(user: &AuthenticatedUser) -> String {
    format!("mcp:{}", user.user_id)
}

/// Runs `name(arguments)` for `user` through `pipeline`, allowed only the `served` tools,
/// to finish by `deadline`. `None` only if the pipeline returned no outcome for the call.
pub async fn call(
    pipeline: &Pipeline,
    served: &[ToolName],
    user: &AuthenticatedUser,
    name: &str,
    arguments: Map<String, Value>,
    deadline: Instant,
) -> Option<CallOutcome> {
    let ctx = ToolContext {
        user_id: user.user_id.clone(),
        chat_id: scope(user),
        session_state: SessionState::default(),
        // No chat, no remembered preferences: the caller's arguments are the request.
        memory: Arc::new(UserMemory::default()),
        today: time::OffsetDateTime::now_utc().date(),
        locale: Locale::En,
        deadline,
        progress: Progress::default(),
        trace_header: None,
    };
    let policy = ToolPolicy {
        allowed: served,
        background: &[],
        approval: None,
        // Other servers' tools are theirs to serve.
        mcp_servers: &[],
    };
    let request = ToolCallRequest {
        id: format!("mcp-{}", ulid::Ulid::generate()),
        name: name.to_owned(),
        arguments: Value::Object(arguments).to_string(),
    };
    let limits = StepLimits {
        budget: deadline,
        calls_left: 1,
    };
    let step = pipeline
        .run_step(&ctx, policy, &[request], limits, &NoEvents)
        .await;
    step.calls.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_mcp_calls_share_a_scope_apart_from_chats() {
        let user = AuthenticatedUser {
            user_id: "u-1".into(),
            groups: Vec::new(),
        };
        assert_eq!(scope(&user), "mcp:u-1");
    }
}
