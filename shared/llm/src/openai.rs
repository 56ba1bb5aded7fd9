//! OpenAI Chat Completions client (`POST {base_url}/chat/completions`, streamed), which also
//! serves Gemini's OpenAI-compatible endpoint, OpenRouter, vLLM and Ollama.
//!
//! Attempts go through [`upstream::send_streaming`]: 429/5xx/connection failures are retried
//! inside the deadline until response headers arrive; once the body streams, nothing is
//! retried (text may already be on its way to the user).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use reqwest::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};

use crate::stream::StreamAssembler;
use agent_core::llm::{
    Completion, CompletionRequest, LlmProvider, PromptMessage, PromptRole, TokenSink, ToolChoice,
    ToolSpec,
};
use domain::{Error, Result};
use lambda_kit::secrets::{SecretString, SecretsCache};
use lambda_kit::upstream::{self, RetryPolicy};

const SERVICE: &str = "llm";

/// Where the chat endpoint is and how to call it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// API root including its version, e.g. `https://api.openai.com/v1`,
    /// `https://generativelanguage.googleapis.com/v1beta/openai` or
    /// `http://127.0.0.1:11434/v1`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    /// Send `stream_options.include_usage` (the usage arrives in a last chunk). Some
    /// OpenAI-compatible servers reject the field.
    pub stream_usage: bool,
    /// Retries before the answer starts. `attempt_timeout` bounds the wait for response
    /// headers of one attempt; the streamed body may take until the deadline.
    pub retry: RetryPolicy,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".into(),
            stream_usage: true,
            retry: RetryPolicy::default(),
        }
    }
}

/// The bearer key for the endpoint.
#[derive(Clone)]
pub enum ApiKey {
    /// No `Authorization` header (local Ollama / vLLM).
    None,
    /// A key given at start-up.
    Static(SecretString),
    /// Read from Secrets Manager through the container's cache on each call (a memory read
    /// within the TTL); dropped from the cache when the endpoint rejects it, so a rotated
    /// key is picked up by the next call.
    Secret {
        /// The container's secrets cache.
        cache: Arc<SecretsCache>,
        /// The secret's name.
        name: String,
    },
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("ApiKey::None"),
            Self::Static(_) => f.write_str("ApiKey::Static(***)"),
            Self::Secret { name, .. } => write!(f, "ApiKey::Secret({name})"),
        }
    }
}

/// The OpenAI-compatible [`LlmProvider`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    url: String,
    config: OpenAiConfig,
    key: ApiKey,
}

impl OpenAiClient {
    /// A client over `http` with `config`, authenticating with `key`.
    pub fn new(http: reqwest::Client, config: OpenAiConfig, key: ApiKey) -> Self {
        let url = format!(
            "{}/chat/completions",
            config.base_url.trim().trim_end_matches('/')
        );
        Self {
            http,
            url,
            config,
            key,
        }
    }

    /// The full endpoint URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    async fn bearer(&self) -> Result<Option<SecretString>> {
        match &self.key {
            ApiKey::None => Ok(None),
            ApiKey::Static(key) => Ok(Some(key.clone())),
            ApiKey::Secret { cache, name } => cache.get(name).await.map(Some),
        }
    }

    async fn forget_key(&self) {
        if let ApiKey::Secret { cache, name } = &self.key {
            cache.invalidate(name).await;
        }
    }
}

#[async_trait]
impl LlmProvider for OpenAiClient {
    async fn complete(
        &self,
        request: &CompletionRequest,
        deadline: Instant,
        tokens: &mut dyn TokenSink,
    ) -> Result<Completion> {
        let started = Instant::now();
        let body = serde_json::to_vec(&wire_request(request, self.config.stream_usage))?;
        let key = self.bearer().await?;
        let mut retried = false;
        loop {
            let response = upstream::send_streaming(SERVICE, deadline, &self.config.retry, || {
                let builder = self
                    .http
                    .post(&self.url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
                match &key {
                    // Keys stored with a trailing newline are common; the header must not have it.
                    Some(key) => builder.bearer_auth(key.expose().trim()),
                    None => builder,
                }
            })
            .await
            .inspect_err(|e| {
                tracing::warn!(model = %request.model, error = %e, "llm request failed");
            })?;

            let status = response.status();
            if !status.is_success() {
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    self.forget_key().await;
                }
                tracing::warn!(model = %request.model, status = status.as_u16(), "llm rejected the request");
                return Err(rejection(response).await);
            }

            let json_answer = is_json(&response);
            let mut counted = Counted {
                inner: tokens,
                forwarded: false,
            };
            let read = if json_answer {
                read_whole(response, deadline, &mut counted, &request.model).await
            } else {
                read_stream(response, deadline, &mut counted, &request.model).await
            };
            let completion = match read {
                Ok(completion) => completion,
                // A stream that broke off before any text was forwarded (a dropped connection
                // under load): nothing was shown, so it is asked once more, within the deadline.
                Err(e @ (Error::Upstream { .. } | Error::UpstreamUnavailable { .. }))
                    if !counted.forwarded && !retried =>
                {
                    tracing::warn!(model = %request.model, error = %e, "llm stream broke off before any text; asking once more");
                    retried = true;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(model = %request.model, status = status.as_u16(), error = %e, "llm answer failed");
                    return Err(e);
                }
            };

            log_completion(&completion, status, started, !json_answer);
            return Ok(completion);
        }
    }
}

/// Whether the provider answered with one JSON document rather than a stream.
fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// The log line of a finished completion.
fn log_completion(completion: &Completion, status: StatusCode, started: Instant, streamed: bool) {
    tracing::info!(
        model = %completion.model,
        provider = "openai",
        status = status.as_u16(),
        duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        prompt_tokens = completion.usage.map(|u| u.prompt_tokens),
        completion_tokens = completion.usage.map(|u| u.completion_tokens),
        tool_calls = completion.tool_calls.len(),
        finish_reason = ?completion.finish_reason,
        streamed,
        "llm completion"
    );
}

/// A token sink that notes whether anything went through it.
struct Counted<'a> {
    inner: &'a mut dyn TokenSink,
    forwarded: bool,
}

impl TokenSink for Counted<'_> {
    fn token(&mut self, text: &str) {
        self.forwarded |= !text.is_empty();
        self.inner.token(text);
    }
}

/// The error for a non-2xx answer that was not retried (or no longer retryable).
async fn rejection(response: reqwest::Response) -> Error {
    let status = response.status().as_u16();
    // `read_json` maps every non-2xx status (credentials, rejections with the provider's
    // message); it cannot succeed here.
    match upstream::read_json::<Value>(SERVICE, response).await {
        Err(e) => e,
        Ok(_) => Error::Upstream {
            service: SERVICE,
            message: format!("HTTP {status}"),
        },
    }
}

/// Reads the SSE body chunk by chunk, handing text deltas out as they arrive.
async fn read_stream(
    mut response: reqwest::Response,
    deadline: Instant,
    tokens: &mut dyn TokenSink,
    model: &str,
) -> Result<Completion> {
    let mut assembler = StreamAssembler::new();
    let until = tokio::time::Instant::from_std(deadline);
    loop {
        let chunk = match tokio::time::timeout_at(until, response.chunk()).await {
            Err(_) => return Err(Error::UpstreamTimeout { service: SERVICE }),
            Ok(Err(e)) if e.is_timeout() => {
                return Err(Error::UpstreamTimeout { service: SERVICE });
            }
            // A dropped connection, not an answer: another provider may give one.
            Ok(Err(e)) => {
                return Err(Error::UpstreamUnavailable {
                    service: SERVICE,
                    message: format!("the stream broke off: {e}"),
                });
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(chunk))) => chunk,
        };
        for delta in assembler.feed(&chunk)? {
            tokens.token(&delta);
        }
        // A server may keep the connection open after `[DONE]`: the answer is complete.
        if assembler.is_done() {
            break;
        }
    }
    for delta in assembler.flush()? {
        tokens.token(&delta);
    }
    assembler.finish(model)
}

/// A proxy that ignored `stream: true` answers with one completion object.
async fn read_whole(
    response: reqwest::Response,
    deadline: Instant,
    tokens: &mut dyn TokenSink,
    model: &str,
) -> Result<Completion> {
    let until = tokio::time::Instant::from_std(deadline);
    let body =
        match tokio::time::timeout_at(until, lambda_kit::upstream::read_body(SERVICE, response))
            .await
        {
            Err(_) => return Err(Error::UpstreamTimeout { service: SERVICE }),
            Ok(body) => body?,
        };
    let mut assembler = StreamAssembler::new();
    for delta in assembler.push_completion_json(&body)? {
        tokens.token(&delta);
    }
    assembler.finish(model)
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

/// A tool as OpenAI's API takes it, borrowing the spec: a turn's tools are sent with every
/// model call, and their schemas are the larger part of the request.
#[derive(Serialize)]
struct WireTool<'a> {
    r#type: &'static str,
    function: &'a ToolSpec,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// `null` for an assistant message that only calls tools.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

fn wire_request(request: &CompletionRequest, stream_usage: bool) -> WireRequest<'_> {
    let with_tools = !request.tools.is_empty();
    WireRequest {
        model: &request.model,
        messages: request.messages.iter().map(wire_message).collect(),
        stream: true,
        stream_options: stream_usage.then(|| json!({ "include_usage": true })),
        tools: request
            .tools
            .iter()
            .map(|function| WireTool {
                r#type: "function",
                function,
            })
            .collect(),
        tool_choice: with_tools.then(|| match &request.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
        }),
        parallel_tool_calls: with_tools.then_some(true),
        temperature: request.temperature,
        max_tokens: request.max_tokens,
    }
}

fn wire_message(message: &PromptMessage) -> WireMessage<'_> {
    let role = match message.role {
        PromptRole::System => "system",
        PromptRole::User => "user",
        PromptRole::Assistant => "assistant",
        PromptRole::Tool => "tool",
    };
    let only_calls = message.role == PromptRole::Assistant
        && !message.tool_calls.is_empty()
        && message.content.is_empty();
    WireMessage {
        role,
        content: (!only_calls).then_some(message.content.as_str()),
        tool_calls: message
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": { "name": c.name, "arguments": c.arguments },
                })
            })
            .collect(),
        tool_call_id: message.tool_call_id.as_deref(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::llm::{ToolCallRequest, ToolSpec};

    fn request() -> CompletionRequest {
        CompletionRequest {
            provider: None,
            model: "gpt-4o-mini".into(),
            messages: vec![
                PromptMessage::system("be brief"),
                PromptMessage::user("flights ZRH-LHR"),
                PromptMessage::assistant(
                    "",
                    vec![ToolCallRequest {
                        id: "call_1".into(),
                        name: "search_flights".into(),
                        arguments: r#"{"origin":"ZRH"}"#.into(),
                    }],
                ),
                PromptMessage::tool("call_1", r#"{"results":[]}"#),
                PromptMessage::assistant("nothing found", vec![]),
            ]
            .into(),
            tools: vec![ToolSpec {
                name: "search_flights".into(),
                description: "Search flights".into(),
                parameters: json!({"type":"object"}).into(),
            }]
            .into(),
            tool_choice: ToolChoice::Tool("search_flights".into()),
            temperature: Some(0.25),
            max_tokens: Some(300),
            fallback: Default::default(),
        }
    }

    #[test]
    fn request_body_in_wire_form() {
        let body = serde_json::to_value(wire_request(&request(), true)).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "flights ZRH-LHR"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "search_flights", "arguments": "{\"origin\":\"ZRH\"}"}}
                    ]},
                    {"role": "tool", "content": "{\"results\":[]}", "tool_call_id": "call_1"},
                    {"role": "assistant", "content": "nothing found"},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [{"type": "function", "function": {
                    "name": "search_flights", "description": "Search flights",
                    "parameters": {"type": "object"}}}],
                "tool_choice": {"type": "function", "function": {"name": "search_flights"}},
                "parallel_tool_calls": true,
                "temperature": 0.25,
                "max_tokens": 300,
            })
        );
    }

    #[test]
    fn optional_fields_are_left_out() {
        let mut req = request();
        req.tools = Default::default();
        req.temperature = None;
        req.max_tokens = None;
        let body = serde_json::to_value(wire_request(&req, false)).unwrap();
        for absent in [
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "temperature",
            "max_tokens",
            "stream_options",
        ] {
            assert!(body.get(absent).is_none(), "{absent} should be absent");
        }
        for (choice, wire) in [
            (ToolChoice::Auto, json!("auto")),
            (ToolChoice::Required, json!("required")),
            (ToolChoice::None, json!("none")),
        ] {
            let mut req = request();
            req.tool_choice = choice;
            let body = serde_json::to_value(wire_request(&req, false)).unwrap();
            assert_eq!(body["tool_choice"], wire);
        }
    }

    #[test]
    fn endpoint_and_debug_hide_the_key() {
        let client = OpenAiClient::new(
            reqwest::Client::new(),
            OpenAiConfig {
                base_url: "http://127.0.0.1:11434/v1/".into(),
                ..OpenAiConfig::default()
            },
            ApiKey::Static(SecretString::new("sk-secret")),
        );
        assert_eq!(client.url(), "http://127.0.0.1:11434/v1/chat/completions");
        assert!(!format!("{client:?}").contains("sk-secret"));
    }
}
