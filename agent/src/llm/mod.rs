//! LLM access behind one small trait, with an OpenAI Chat Completions client (streaming,
//! tools, parallel tool calls) that also speaks to Gemini's OpenAI-compatible endpoint,
//! OpenRouter, vLLM and Ollama. Other providers (e.g. Bedrock Converse) implement
//! [`LlmProvider`] and plug in the same way.

pub mod metered;
mod openai;
mod stream;

use std::time::Instant;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use openai::{ApiKey, OpenAiClient, OpenAiConfig};
pub use stream::StreamAssembler;

use crate::Result;
use shared::usage::TokenUsage;

/// Who speaks in a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptRole {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call as the model asked for it. `arguments` is the JSON text exactly as the
/// model produced it: it may be invalid, and the pipeline decides what to do with that.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The model's id for the call; the tool message answering it echoes it.
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    pub role: PromptRole,
    /// Text; empty for an assistant message that only calls tools.
    pub content: String,
    /// Assistant messages: the tool calls the model made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// Tool messages: the id of the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl PromptMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self::text(PromptRole::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::text(PromptRole::User, content)
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCallRequest>) -> Self {
        Self {
            role: PromptRole::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
        }
    }

    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: PromptRole::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.into()),
        }
    }

    fn text(role: PromptRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool offered to the model, in OpenAI function form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// How the model may use the offered tools (seed 002's AUTO / ANY / NONE, plus forcing one
/// named tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    Auto,
    Required,
    None,
    /// Exactly this tool.
    Tool(String),
}

/// One chat completion to make.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    pub model: String,
    pub messages: Vec<PromptMessage>,
    /// Empty: no tools are sent (and no `tool_choice`).
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    /// Left out of the request when `None` (some models reject any value).
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
}

/// Why the model stopped, as far as the caller cares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    Other(String),
}

/// A finished completion: the streamed text, the reassembled tool calls and the usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The model that answered, as the provider reports it (else the requested one).
    pub model: String,
    pub content: String,
    pub tool_calls: Vec<ToolCallRequest>,
    pub finish_reason: Option<FinishReason>,
    /// `None` when the provider reported no usage.
    pub usage: Option<TokenUsage>,
}

/// Receives text deltas as the model produces them.
pub trait TokenSink: Send {
    fn token(&mut self, text: &str);
}

impl<F: FnMut(&str) + Send> TokenSink for F {
    fn token(&mut self, text: &str) {
        self(text)
    }
}

/// Discards tokens: for completions whose text is only wanted whole (e.g. `ask_gpt`).
pub struct NoTokens;

impl TokenSink for NoTokens {
    fn token(&mut self, _: &str) {}
}

#[async_trait]
pub trait LlmProvider: Send + Sync {
    /// Runs one completion, streaming text deltas into `tokens` as they arrive. Retries
    /// 429/5xx/connection failures with backoff until the first byte of the answer, never
    /// after text was handed out, and never past `deadline`.
    async fn complete(
        &self,
        request: &CompletionRequest,
        deadline: Instant,
        tokens: &mut dyn TokenSink,
    ) -> Result<Completion>;
}
