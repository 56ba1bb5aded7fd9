//! The prompt's view of a chat: the newest messages that fit a token budget, kept in whole
//! exchanges (an assistant's tool calls always travel with their results, which OpenAI
//! requires), with tool results truncated so one huge result cannot crowd out the rest.

use crate::guard::fence::Fence;
use crate::llm::{PromptMessage, ToolCallRequest};
use futures::future::join_all;
use shared::domain::chat::{Message, Role};
use shared::domain::tool_call::{ToolCallRecord, ToolCallStatus};
use shared::domain::tool_result::ToolExecutionResult;
use shared::ledger::ToolCallLedger;

/// A rough, provider-independent token estimate: ~4 characters per token plus overhead.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count() / 4 + 4
}

/// Cuts `text` to `max_chars` characters, saying how much was left out.
pub fn truncate(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max_chars).collect();
    format!(
        "{kept}\n…[truncated: {} of {total} characters omitted]",
        total - max_chars
    )
}

fn to_prompt(
    message: &Message,
    tool_result_max_chars: usize,
    fence: &Fence,
) -> Option<PromptMessage> {
    Some(match message.role {
        Role::User => PromptMessage::user(message.content.clone()),
        Role::Assistant => PromptMessage::assistant(
            message.content.clone(),
            message
                .tool_calls
                .iter()
                .map(|c| ToolCallRequest {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
        ),
        Role::Tool => {
            let source = match &message.ledger_call_id {
                Some(job) => format!("earlier tool result, job {job}"),
                None => "earlier tool result".to_owned(),
            };
            PromptMessage::tool(
                message.tool_call_id.clone()?,
                fence.wrap(&source, &truncate(&message.content, tool_result_max_chars)),
            )
        }
        // System prompts come from the agent profile, never from storage.
        Role::System => return None,
    })
}

/// Background tool messages hold what was known when their turn ended (queued, or failed
/// with a retry scheduled); the ledger has the final word. Rewrites each with its call's
/// current state, so results the tool worker produced since reach the model. A record that
/// cannot be read leaves its message as it was.
pub async fn refresh_background(
    ledger: &dyn ToolCallLedger,
    owner_id: &str,
    chat_id: &str,
    messages: &mut [Message],
    now: time::OffsetDateTime,
) {
    let pending: Vec<(usize, String)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.background)
        .filter_map(|(i, m)| m.ledger_call_id.clone().map(|id| (i, id)))
        .collect();
    let records = join_all(
        pending
            .iter()
            .map(|(_, id)| ledger.get(owner_id, chat_id, id)),
    )
    .await;
    for ((i, id), record) in pending.iter().zip(records) {
        match record {
            Ok(record) => {
                messages[*i].content = background_update(&record, &messages[*i].content, now);
            }
            Err(e) => tracing::warn!(call_id = %id, error = %e, "reading a background call failed"),
        }
    }
}

/// The tool message for a background call in its current state.
fn background_update(record: &ToolCallRecord, stored: &str, now: time::OffsetDateTime) -> String {
    let attempts = record.attempt;
    let lease_expired = record.lease_until.is_some_and(|until| until < now);
    match record.status {
        // Its worker died; a redelivery of the job may still take it over.
        ToolCallStatus::Running if lease_expired => format!(
            "[interrupted] The call stopped before it finished (attempt {attempts}); it has no result."
        ),
        // No worker picked it up in time; an identical call now runs it afresh.
        ToolCallStatus::Queued if lease_expired => format!(
            "[not started] No worker picked the call up in time (attempt {attempts}); it has no result."
        ),
        ToolCallStatus::Succeeded => {
            let message = record
                .response
                .clone()
                .and_then(|r| serde_json::from_value::<ToolExecutionResult>(r).ok())
                .map(|r| r.message)
                .unwrap_or_else(|| "(result unavailable)".to_owned());
            format!("[completed in the background after this turn, attempt {attempts}] {message}")
        }
        ToolCallStatus::Failed | ToolCallStatus::Timeout => format!(
            "[{} in the background after {attempts} attempts] {}",
            record.status,
            record.error.as_deref().unwrap_or("no details")
        ),
        // Denied by the user: the reason they gave (their text, kept in the call's error).
        ToolCallStatus::Canceled if record.approval.is_some() => format!(
            "[denied] The user denied this call; it did not run. {}",
            record.error.as_deref().unwrap_or("")
        ),
        ToolCallStatus::Canceled => {
            "[canceled] The call was canceled before it finished.".to_owned()
        }
        ToolCallStatus::AwaitingApproval if record.approval_expired(now) => {
            "[expired] The user did not approve the call in time; it did not run.".to_owned()
        }
        ToolCallStatus::AwaitingApproval => {
            "[awaiting approval] The call waits for the user's approval; it has not run.".to_owned()
        }
        ToolCallStatus::Expired => {
            "[expired] The user did not approve the call in time; it did not run.".to_owned()
        }
        ToolCallStatus::Queued | ToolCallStatus::Running => format!(
            "{stored}\n[still {} in the background, attempt {attempts}]",
            record.status
        ),
    }
}

/// The newest whole exchanges of `messages` (oldest first) within `token_budget`.
pub fn select(
    messages: &[Message],
    token_budget: usize,
    tool_result_max_chars: usize,
    fence: &Fence,
) -> Vec<PromptMessage> {
    // Group into units: an assistant message with tool calls plus the tool messages that
    // follow it; every other message alone. Orphaned tool messages are dropped.
    let mut units: Vec<Vec<PromptMessage>> = Vec::new();
    for message in messages {
        let Some(prompt) = to_prompt(message, tool_result_max_chars, fence) else {
            continue;
        };
        let joins_previous = message.role == Role::Tool
            && units.last().and_then(|u| u.first()).is_some_and(|first| {
                !first.tool_calls.is_empty()
                    && first
                        .tool_calls
                        .iter()
                        .any(|c| Some(&c.id) == prompt.tool_call_id.as_ref())
            });
        if joins_previous {
            if let Some(unit) = units.last_mut() {
                unit.push(prompt);
            }
        } else if message.role != Role::Tool {
            units.push(vec![prompt]);
        }
    }
    // An assistant's tool calls must each be answered; drop units where some are not.
    units.retain(|unit| {
        let calls = &unit[0].tool_calls;
        calls.is_empty()
            || calls.iter().all(|c| {
                unit[1..]
                    .iter()
                    .any(|m| m.tool_call_id.as_ref() == Some(&c.id))
            })
    });
    let mut used = 0;
    let mut kept = Vec::new();
    for unit in units.into_iter().rev() {
        let cost: usize = unit
            .iter()
            .map(|m| {
                estimate_tokens(&m.content)
                    + m.tool_calls
                        .iter()
                        .map(|c| estimate_tokens(&c.arguments))
                        .sum::<usize>()
            })
            .sum();
        if used + cost > token_budget {
            break;
        }
        used += cost;
        kept.push(unit);
    }
    kept.into_iter().rev().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::PromptRole;
    use shared::domain::chat::MessageToolCall;

    fn message(role: Role, content: &str) -> Message {
        Message {
            id: String::new(),
            chat_id: String::new(),
            seq: 0,
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            ledger_call_id: None,
            background: false,
            ui: Vec::new(),
            stopped: false,
            language: None,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn record(status: ToolCallStatus, response: Option<serde_json::Value>) -> ToolCallRecord {
        let now = time::OffsetDateTime::UNIX_EPOCH;
        ToolCallRecord {
            id: "job".into(),
            chat_id: "chat".into(),
            tool: shared::domain::tool_call::ToolName::SEARCH_KNOWLEDGE_BASE,
            status,
            attempt: 2,
            request: serde_json::Value::Null,
            response,
            error: Some("kb-retrieve failed: upstream unavailable".into()),
            dedupe_key: String::new(),
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
            attempts: Vec::new(),
            flags: Vec::new(),
            approval: None,
            lease_until: None,
        }
    }

    #[test]
    fn background_messages_show_the_calls_current_state() {
        let done = ToolExecutionResult::succeeded("Found: miles expire after 36 months.");
        let succeeded = record(ToolCallStatus::Succeeded, serde_json::to_value(&done).ok());
        let text = background_update(&succeeded, "[queued] runs in the background", now());
        assert!(text.contains("completed in the background"), "{text}");
        assert!(text.contains("miles expire after 36 months"), "{text}");
        let failed = background_update(&record(ToolCallStatus::Failed, None), "x", now());
        assert!(
            failed.contains("failed in the background after 2 attempts"),
            "{failed}"
        );
        assert!(failed.contains("upstream unavailable"), "{failed}");
        let waiting =
            background_update(&record(ToolCallStatus::Queued, None), "[queued] job", now());
        assert!(waiting.starts_with("[queued] job"), "{waiting}");
        assert!(waiting.contains("still queued"), "{waiting}");
        let mut running = record(ToolCallStatus::Running, None);
        running.lease_until = Some(now() + time::Duration::seconds(5));
        let live = background_update(&running, "[queued] job", now());
        assert!(live.contains("still running"), "{live}");
        running.lease_until = Some(now() - time::Duration::seconds(5));
        let dead = background_update(&running, "[queued] job", now());
        assert!(
            dead.starts_with("[interrupted]"),
            "a call whose lease expired: {dead}"
        );
    }

    fn now() -> time::OffsetDateTime {
        time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000)
    }

    fn exchange() -> Vec<Message> {
        let mut call = message(Role::Assistant, "");
        call.tool_calls = vec![MessageToolCall {
            id: "c1".into(),
            name: "search_flights".into(),
            arguments: "{}".into(),
        }];
        let mut result = message(Role::Tool, &"x".repeat(10_000));
        result.tool_call_id = Some("c1".into());
        vec![
            message(Role::User, "flights?"),
            call,
            result,
            message(Role::Assistant, "here"),
        ]
    }

    #[test]
    fn tool_results_are_truncated_and_stay_with_their_call() {
        let prompt = select(&exchange(), 10_000, 100, &Fence::new());
        let roles: Vec<PromptRole> = prompt.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                PromptRole::User,
                PromptRole::Assistant,
                PromptRole::Tool,
                PromptRole::Assistant
            ]
        );
        assert!(prompt[2].content.len() < 300);
        assert!(prompt[2].content.contains("truncated"));
    }

    #[test]
    fn budget_keeps_the_newest_whole_units() {
        let mut messages = exchange();
        messages.push(message(Role::User, "and in first?"));
        // Room for the last two units only: the tool exchange is dropped whole.
        let prompt = select(&messages, 12, 100, &Fence::new());
        assert_eq!(prompt.len(), 2);
        assert_eq!(prompt[1].content, "and in first?");
        assert!(prompt.iter().all(|m| m.role != PromptRole::Tool));
    }

    #[test]
    fn orphaned_tool_messages_are_dropped() {
        let messages = exchange()[2..].to_vec();
        let prompt = select(&messages, 10_000, 100, &Fence::new());
        assert_eq!(prompt.len(), 1);
        assert_eq!(prompt[0].role, PromptRole::Assistant);
    }
}
