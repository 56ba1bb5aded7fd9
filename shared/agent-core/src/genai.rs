//! The turn's spans as the OpenTelemetry GenAI semantic conventions name them (status
//! Development; the latest experimental names): `invoke_agent` for the turn, `chat` for each
//! model call, `execute_tool` for each tool call. They are `tracing` spans of
//! [`lambda_kit::telemetry::TARGET`]: exported as OpenTelemetry spans while traces are on,
//! free (disabled) while they are off. Message text and tool arguments go in only when an
//! operator opts in ([`lambda_kit::telemetry::capture_content`]): they are users' data.

pub use lambda_kit::telemetry::TARGET;
use lambda_kit::telemetry::{AttrValue, capture_content, enabled, set_attribute};
use tracing::Span;
use tracing::field::Empty;

use crate::llm::{Completion, FinishReason};
use domain::provider::Provider;
use domain::token_usage::TokenUsage;

/// `gen_ai.provider.name` of a provider.
pub fn provider_name(provider: Option<Provider>) -> &'static str {
    match provider {
        Some(Provider::OpenAi) => "openai",
        Some(Provider::Bedrock) => "aws.bedrock",
        None => "_OTHER",
    }
}

/// The turn: `invoke_agent <profile>`.
pub fn invoke_agent(agent: &str, chat_id: &str, turn_id: &str, language: &str) -> Span {
    if !enabled() {
        return Span::none();
    }
    tracing::trace_span!(
        target: TARGET,
        "invoke_agent",
        otel.name = %format!("invoke_agent {agent}"),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %agent,
        gen_ai.conversation.id = %chat_id,
        app.turn.id = %turn_id,
        app.turn.language = %language,
        error.type = Empty,
    )
}

/// Where `span`'s trace is, for the turn's `init` event; `None` while traces are off.
pub fn trace_of(span: &Span) -> Option<crate::events::TraceRef> {
    let id = lambda_kit::telemetry::trace_id(span)?;
    let url = lambda_kit::telemetry::view_url(&id);
    Some(crate::events::TraceRef { id, url })
}

/// One model call: `chat <model>`; `attempt` counts the fallback models tried before it.
pub fn chat(provider: Option<Provider>, model: &str, operation: &str, attempt: usize) -> Span {
    if !enabled() {
        return Span::none();
    }
    tracing::trace_span!(
        target: TARGET,
        "chat",
        otel.name = %format!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = %model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        app.llm.operation = %operation,
        app.llm.attempt = i64::try_from(attempt).unwrap_or(i64::MAX),
        app.llm.usage_estimated = Empty,
        app.llm.cost_usd = Empty,
        app.llm.time_to_first_token_ms = Empty,
        error.type = Empty,
    )
}

/// What a model call produced, on its `chat` span: the model that answered, the usage as
/// metered (the same figures the usage record holds), the cost, the finish reason and the
/// time to the first token; the answer's text and calls only with content capture on.
pub fn record_chat(
    span: &Span,
    completion: &Completion,
    usage: &TokenUsage,
    cost_usd: Option<f64>,
    first_token_ms: Option<f64>,
) {
    if span.is_none() {
        return;
    }
    span.record("gen_ai.response.model", completion.model.as_str());
    // As i64: OpenTelemetry has no unsigned integers (a u64 would arrive as text).
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(usage.cached_tokens),
    );
    span.record("app.llm.usage_estimated", usage.estimated);
    if let Some(cost) = cost_usd {
        span.record("app.llm.cost_usd", cost);
    }
    if let Some(ms) = first_token_ms {
        span.record("app.llm.time_to_first_token_ms", ms);
    }
    if let Some(reason) = &completion.finish_reason {
        let reason = match reason {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_call",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(other) => other.as_str(),
        };
        set_attribute(
            span,
            "gen_ai.response.finish_reasons",
            AttrValue::Strs(vec![reason.to_owned()]),
        );
    }
    if capture_content() {
        let calls: Vec<serde_json::Value> = completion
            .tool_calls
            .iter()
            .map(|c| serde_json::json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}))
            .collect();
        let mut parts = Vec::new();
        if !completion.content.is_empty() {
            parts.push(serde_json::json!({"type": "text", "content": completion.content}));
        }
        parts.extend(calls);
        let output = serde_json::json!([{"role": "assistant", "parts": parts}]);
        set_attribute(
            span,
            "gen_ai.output.messages",
            AttrValue::Str(output.to_string()),
        );
    }
}

/// The prompt of a model call, on its `chat` span, when content capture is on.
pub fn record_input(span: &Span, messages: &[crate::llm::PromptMessage]) {
    if span.is_none() || !capture_content() {
        return;
    }
    if let Ok(text) = serde_json::to_string(messages) {
        set_attribute(span, "gen_ai.input.messages", AttrValue::Str(text));
    }
}

/// A failed call or turn: `error.type` and the span's status.
pub fn record_error(span: &Span, kind: &str) {
    lambda_kit::telemetry::record_error(span, kind);
}

/// One tool call: `execute_tool <tool>`.
pub fn execute_tool(tool: &str, call_id: &str) -> Span {
    if !enabled() {
        return Span::none();
    }
    tracing::trace_span!(
        target: TARGET,
        "execute_tool",
        otel.name = %format!("execute_tool {tool}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        gen_ai.tool.call.id = %call_id,
        gen_ai.tool.type = "function",
        app.tool.outcome = Empty,
        app.tool.status = Empty,
        app.tool.job_id = Empty,
        error.type = Empty,
    )
}

/// How a tool call ended, on its `execute_tool` span: `outcome` is the ledger's view
/// (`executed`, `deduplicated`, `cached`, `refused`, `approval_pending`, `queued`).
pub fn record_tool(span: &Span, outcome: &str, status: &str, job_id: Option<&str>) {
    if span.is_none() {
        return;
    }
    span.record("app.tool.outcome", outcome);
    span.record("app.tool.status", status);
    if let Some(id) = job_id {
        span.record("app.tool.job_id", id);
    }
}

/// A tool call's arguments and result, when content capture is on.
pub fn record_tool_content(span: &Span, arguments: &str, result: &str) {
    if span.is_none() || !capture_content() {
        return;
    }
    let text = |s: &str| AttrValue::Str(s.to_owned());
    set_attribute(span, "gen_ai.tool.call.arguments", text(arguments));
    set_attribute(span, "gen_ai.tool.call.result", text(result));
}

/// Something that happened in the turn (a guard finding, a handoff), as an event on the
/// span it happened in.
#[macro_export]
macro_rules! trace_event {
    ($name:literal $(, $($fields:tt)*)?) => {
        tracing::event!(target: $crate::genai::TARGET, tracing::Level::TRACE, $($($fields)*,)? $name)
    };
}
