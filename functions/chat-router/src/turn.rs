//! One chat turn: the user's message, then LLM steps while the model asks for tools (each
//! step's calls through the tool pipeline), then the answer, streamed as it is produced.
//!
//! Everything the turn writes is written whether or not the client is still listening: the
//! user message first, each step's assistant and tool messages and state patch as soon as
//! the step ends, the answer last. A disconnect therefore never leaves half a turn.

use std::time::Instant;

use serde_json::{Value, json};
use shared::domain::chat::{Chat, MessageToolCall, NewMessage};
use shared::domain::flight::Locale;
use shared::domain::session::SessionState;
use shared::http::ApiError;
use shared::llm::{CompletionRequest, PromptMessage, ToolChoice, ToolSpec};
use shared::tools::agents::AgentProfile;
use shared::tools::pipeline::{CallOutcome, CallStatus};
use shared::tools::{Caller, ToolContext};
use shared::{Error, Result};

use crate::Deps;
use crate::events::{ChatEvent, Emitter};
use crate::history;

/// What the handler established before the stream started.
pub struct TurnInput {
    pub user_id: String,
    /// The caller's `Authorization` header, forwarded to the flight and kb functions.
    pub authorization: String,
    pub chat: Chat,
    pub created: bool,
    pub profile: AgentProfile,
    pub message: String,
    /// When the whole turn must be over (the Lambda deadline, less a margin).
    pub deadline: Instant,
}

/// Runs the turn to its end and emits `done` last, always.
pub async fn run(deps: Deps, input: TurnInput, emitter: Emitter) {
    emitter.emit(ChatEvent::Init {
        chat_id: input.chat.id.clone(),
        created: input.created,
    });
    if let Err(e) = run_steps(&deps, &input, &emitter).await {
        let api = ApiError::from(&e);
        let code = match &e {
            Error::Upstream { .. }
            | Error::UpstreamTimeout { .. }
            | Error::UpstreamRejected { .. } => "llm_error",
            _ => error_code(&api),
        };
        tracing::error!(chat_id = %input.chat.id, error = %e, "chat turn failed");
        emitter.error(code, api.message);
    }
    emitter.emit(ChatEvent::Done);
}

fn error_code(api: &ApiError) -> &'static str {
    match serde_json::to_value(api.code) {
        Ok(Value::String(s)) => match s.as_str() {
            "not_found" => "not_found",
            "conflict" => "conflict",
            "rate_limited" => "rate_limited",
            _ => "internal",
        },
        _ => "internal",
    }
}

/// The error a turn ends with when the model keeps making unusable tool calls.
struct Unrepairable(String);

async fn run_steps(deps: &Deps, input: &TurnInput, emitter: &Emitter) -> Result<()> {
    let config = &deps.config;
    let owner = &input.user_id;
    let chat_id = &input.chat.id;
    let mut history = deps
        .chats
        .recent_messages(owner, chat_id, config.history_max_messages)
        .await?;
    history::refresh_background(deps.ledger.as_ref(), owner, chat_id, &mut history).await;
    deps.chats
        .append_messages(
            owner,
            chat_id,
            vec![NewMessage::user(input.message.clone())],
        )
        .await?;

    let mut state = input.chat.session_state.clone();
    let locale = Locale::guess(&input.message);
    let model = input
        .profile
        .model
        .clone()
        .unwrap_or_else(|| config.tools.llm.model.clone());
    let mut prompt = vec![PromptMessage::system(system_prompt(&input.profile, &state))];
    prompt.extend(history::select(
        &history,
        config.history_token_budget,
        config.tool_result_max_chars,
    ));
    prompt.push(PromptMessage::user(input.message.clone()));

    let specs: Vec<ToolSpec> =
        if input.profile.tool_choice == shared::tools::agents::ToolChoiceMode::None {
            Vec::new()
        } else {
            deps.pipeline.registry.specs(&input.profile.tools)
        };
    let tool_budget = (Instant::now() + config.tool_budget).min(input.deadline);
    let mut repaired = false;
    let mut last_results: Vec<CallOutcome> = Vec::new();
    let mut answer: Option<String> = None;

    for step in 0..=config.max_tool_steps {
        // After the last tool round the model must answer in text.
        let offer_tools = step < config.max_tool_steps && !specs.is_empty();
        let request = CompletionRequest {
            model: model.clone(),
            messages: prompt.clone(),
            tools: if offer_tools {
                specs.clone()
            } else {
                Vec::new()
            },
            tool_choice: if offer_tools {
                input.profile.tool_choice.for_step(step)
            } else {
                ToolChoice::None
            },
            temperature: input.profile.temperature,
            max_tokens: None,
        };
        let token_emitter = emitter.clone();
        let mut on_token = move |text: &str| {
            token_emitter.emit(ChatEvent::AssistantToken {
                content: text.to_owned(),
            })
        };
        let completion = deps
            .llm
            .complete(&request, input.deadline, &mut on_token)
            .await?;
        if let Some(usage) = completion.usage
            && let Err(e) = deps
                .usage
                .record(owner, Some(chat_id), &completion.model, "chat", usage)
                .await
        {
            tracing::error!(error = %e, "recording chat usage failed");
        }
        emitter.debug("llm_choice", || {
            json!({
                "step": step,
                "finish_reason": completion.finish_reason,
                "tool_calls": completion.tool_calls.len(),
                "usage": completion.usage,
            })
        });
        if completion.tool_calls.is_empty() || !offer_tools {
            answer = Some(completion.content);
            break;
        }
        emitter.debug("llm_tool_call_arguments", || {
            json!(
                completion
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                    .collect::<Vec<_>>()
            )
        });

        let ctx = ToolContext {
            user_id: owner.clone(),
            chat_id: chat_id.clone(),
            caller: Caller::User {
                authorization: input.authorization.clone(),
            },
            session_state: state.clone(),
            locale,
            deadline: tool_budget,
        };
        let outcome = deps
            .pipeline
            .run_step(
                &ctx,
                input.profile.tool_policy(),
                &completion.tool_calls,
                tool_budget,
                emitter,
            )
            .await;

        // Persist the step: the assistant's calls with their results, then the state.
        let mut step_messages = vec![NewMessage::assistant(
            completion.content.clone(),
            completion
                .tool_calls
                .iter()
                .map(|c| MessageToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
        )];
        step_messages.extend(outcome.calls.iter().map(|c| {
            NewMessage::tool(c.call.id.clone(), c.job_id.clone(), tool_message(c))
                .in_background(c.background)
        }));
        deps.chats
            .append_messages(owner, chat_id, step_messages)
            .await?;
        if !outcome.state_patch.is_empty() {
            state = deps
                .chats
                .patch_state(owner, chat_id, &outcome.state_patch)
                .await?
                .session_state;
        }

        prompt.push(PromptMessage::assistant(
            completion.content.clone(),
            completion.tool_calls.clone(),
        ));
        for call in &outcome.calls {
            prompt.push(PromptMessage::tool(
                call.call.id.clone(),
                history::truncate(&tool_message(call), config.tool_result_max_chars),
            ));
        }

        if outcome.needs_repair() {
            if repaired {
                let problems: Vec<String> = outcome
                    .calls
                    .iter()
                    .filter(|c| c.status == CallStatus::Rejected)
                    .map(|c| c.result.message.clone())
                    .collect();
                return fail_unrepairable(deps, input, emitter, Unrepairable(problems.join(" ")))
                    .await;
            }
            repaired = true;
            last_results = outcome.calls;
            continue;
        }

        let direct = outcome.calls.iter().all(|c| {
            c.tool
                .and_then(|t| deps.pipeline.registry.get(t))
                .is_some_and(|t| t.tool.answers_directly())
        });
        last_results = outcome.calls;
        if direct {
            // Seed 000 §12.1: the tool formatted the answer itself; no second LLM call.
            let text = last_results
                .iter()
                .map(|c| c.result.message.as_str())
                .collect::<Vec<_>>()
                .join("\n\n");
            emitter.emit(ChatEvent::AssistantToken {
                content: text.clone(),
            });
            answer = Some(text);
            break;
        }
    }

    // A model that still wants tools when none are offered may answer with nothing.
    let content = match answer {
        Some(text) if !text.trim().is_empty() => text,
        _ => {
            let text = "Sorry, I could not finish this request. Please try again or rephrase it.";
            emitter.emit(ChatEvent::AssistantToken {
                content: text.to_owned(),
            });
            text.to_owned()
        }
    };
    deps.chats
        .append_messages(
            owner,
            chat_id,
            vec![NewMessage::assistant(content.clone(), Vec::new())],
        )
        .await?;
    emitter.emit(ChatEvent::Final {
        content,
        session_state: Box::new(state),
        tool_result: tool_result(&last_results),
        notice: deps.config.stack_notice.clone(),
    });
    Ok(())
}

/// The tool message the LLM reads: the tool's own message, with its status when not a
/// success so the model does not mistake an error text for data.
fn tool_message(call: &CallOutcome) -> String {
    match call.status {
        CallStatus::Succeeded => call.result.message.clone(),
        other => {
            let status = serde_json::to_value(other)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("[{status}] {}", call.result.message)
        }
    }
}

/// `final.tool_result`: `null` without tools, the one tool's raw result, or a list of
/// `{tool, job_id, status, raw}` when several ran.
fn tool_result(calls: &[CallOutcome]) -> Value {
    match calls {
        [] => Value::Null,
        [one] => one.result.raw.clone().unwrap_or(Value::Null),
        many => Value::Array(
            many.iter()
                .map(|c| {
                    json!({
                        "tool": c.tool,
                        "job_id": c.job_id,
                        "status": c.status,
                        "raw": c.result.raw,
                    })
                })
                .collect(),
        ),
    }
}

async fn fail_unrepairable(
    deps: &Deps,
    input: &TurnInput,
    emitter: &Emitter,
    Unrepairable(problems): Unrepairable,
) -> Result<()> {
    tracing::warn!(chat_id = %input.chat.id, problems, "model kept making invalid tool calls");
    let text = "Sorry, I could not complete that request. Please rephrase it.";
    deps.chats
        .append_messages(
            &input.user_id,
            &input.chat.id,
            vec![NewMessage::assistant(text, Vec::new())],
        )
        .await?;
    emitter.error(
        "invalid_tool_call",
        format!("The model made invalid tool calls twice: {problems}"),
    );
    Ok(())
}

/// The profile's prompt plus what the model needs to know every turn: today's date (for
/// relative dates) and the parts of the session state that carry context between turns.
fn system_prompt(profile: &AgentProfile, state: &SessionState) -> String {
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
