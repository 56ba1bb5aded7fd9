//! The prompt's view of a chat: the newest messages that fit a token budget, kept in whole
//! exchanges (an assistant's tool calls always travel with their results, which OpenAI
//! requires), with tool results truncated so one huge result cannot crowd out the rest.

use shared::domain::chat::{Message, Role};
use shared::llm::{PromptMessage, ToolCallRequest};

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

fn to_prompt(message: &Message, tool_result_max_chars: usize) -> Option<PromptMessage> {
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
        Role::Tool => PromptMessage::tool(
            message.tool_call_id.clone()?,
            truncate(&message.content, tool_result_max_chars),
        ),
        // System prompts come from the agent profile, never from storage.
        Role::System => return None,
    })
}

/// The newest whole exchanges of `messages` (oldest first) within `token_budget`.
pub fn select(
    messages: &[Message],
    token_budget: usize,
    tool_result_max_chars: usize,
) -> Vec<PromptMessage> {
    // Group into units: an assistant message with tool calls plus the tool messages that
    // follow it; every other message alone. Orphaned tool messages are dropped.
    let mut units: Vec<Vec<PromptMessage>> = Vec::new();
    for message in messages {
        let Some(prompt) = to_prompt(message, tool_result_max_chars) else {
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
    use shared::domain::chat::MessageToolCall;
    use shared::llm::PromptRole;

    fn message(role: Role, content: &str) -> Message {
        Message {
            id: String::new(),
            chat_id: String::new(),
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            ledger_call_id: None,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
        }
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
        let prompt = select(&exchange(), 10_000, 100);
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
        assert!(prompt[2].content.len() < 200);
        assert!(prompt[2].content.contains("truncated"));
    }

    #[test]
    fn budget_keeps_the_newest_whole_units() {
        let mut messages = exchange();
        messages.push(message(Role::User, "and in first?"));
        // Room for the last two units only: the tool exchange is dropped whole.
        let prompt = select(&messages, 12, 100);
        assert_eq!(prompt.len(), 2);
        assert_eq!(prompt[1].content, "and in first?");
        assert!(prompt.iter().all(|m| m.role != PromptRole::Tool));
    }

    #[test]
    fn orphaned_tool_messages_are_dropped() {
        let messages = exchange()[2..].to_vec();
        let prompt = select(&messages, 10_000, 100);
        assert_eq!(prompt.len(), 1);
        assert_eq!(prompt[0].role, PromptRole::Assistant);
    }
}
