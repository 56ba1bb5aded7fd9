//! LLM access behind one small trait: the prompt, the completion and the tool calls in it,
//! and [`LlmProvider`]. The turn loop, `ask_gpt` and the worker see only that trait;
//! [`Providers`] sends each request to the provider it names. The clients themselves (an
//! OpenAI-compatible one and Amazon Bedrock's Converse stream) are the `llm` crate's, built
//! through [`LlmClients`], so a function that never calls a model links none.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use lambda_kit::secrets::SecretsCache;
use lambda_kit::upstream::RetryPolicy;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::fallback::{ModelHealth, ModelRef};
pub use crate::providers::{Provider, Providers};

use crate::Result;
use domain::token_usage::TokenUsage;

/// Who speaks in a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptRole {
    /// The deployment's instructions.
    System,
    /// The user's words.
    User,
    /// The model's answer or tool calls.
    Assistant,
    /// A tool call's result.
    Tool,
}

/// A tool call as the model asked for it. `arguments` is the JSON text exactly as the
/// model produced it: it may be invalid, and the pipeline decides what to do with that.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The model's id for the call; the tool message answering it echoes it.
    pub id: String,
    /// The tool's name as the model wrote it (it may name no tool).
    pub name: String,
    /// The arguments' JSON text.
    pub arguments: String,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks.
    pub role: PromptRole,
    /// Text; empty for an assistant message that only calls tools.
    pub content: String,
    /// Assistant messages: the tool calls the model made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// Tool messages: the id of the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool messages: the call failed (error, timeout, refused, not run). Providers that
    /// mark a result's status (Bedrock's `toolResult.status`) say so; OpenAI's text says it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

impl PromptMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::text(PromptRole::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::text(PromptRole::User, content)
    }

    /// An assistant message with its tool calls.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCallRequest>) -> Self {
        Self {
            role: PromptRole::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
            failed: false,
        }
    }

    /// The result of the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: PromptRole::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.into()),
            failed: false,
        }
    }

    /// The same tool message, marked as the result of a failed call.
    pub fn with_failure(mut self, failed: bool) -> Self {
        self.failed = failed;
        self
    }

    fn text(role: PromptRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            failed: false,
        }
    }
}

/// A tool offered to the model, in OpenAI function form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object, shared: every turn offers the same schemas.
    pub parameters: Arc<Value>,
}

/// How the model may use the offered tools (seed 002's AUTO / ANY / NONE, plus forcing one
/// named tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
    /// The model may not call tools.
    None,
    /// Exactly this tool.
    Tool(String),
}

/// One chat completion to make.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// Who answers; `None`: the deployment's default provider (`LLM_PROVIDER`).
    pub provider: Option<Provider>,
    /// The provider's model id.
    pub model: String,
    /// The prompt, in order. Shared with the turn, which appends to it after the call: a
    /// request does not copy the prompt.
    pub messages: Arc<Vec<PromptMessage>>,
    /// Empty: no tools are sent (and no `tool_choice`). Shared as `messages` is.
    pub tools: Arc<Vec<ToolSpec>>,
    /// How the model may use `tools`.
    pub tool_choice: ToolChoice,
    /// Left out of the request when `None` (some models reject any value).
    pub temperature: Option<f32>,
    /// The answer's limit in tokens.
    pub max_tokens: Option<u32>,
    /// Where the call goes, in order, when `model` stays unavailable before its first token
    /// ([`crate::fallback::falls_back`]); empty: nowhere.
    pub fallback: Arc<[ModelRef]>,
}

impl CompletionRequest {
    /// The same request for `to`.
    pub fn to(&self, to: &ModelRef) -> Self {
        Self {
            provider: Some(to.provider),
            model: to.model.clone(),
            fallback: Arc::default(),
            ..self.clone()
        }
    }
}

/// Why the model stopped, as far as the caller cares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It called tools.
    ToolCalls,
    /// It hit `max_tokens`.
    Length,
    /// The provider's filter stopped it.
    ContentFilter,
    /// Anything else, as the provider named it.
    Other(String),
}

/// A finished completion: the streamed text, the reassembled tool calls and the usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The model that answered, as the provider reports it (else the requested one).
    pub model: String,
    /// The text, whole.
    pub content: String,
    /// The tool calls, reassembled from the stream.
    pub tool_calls: Vec<ToolCallRequest>,
    /// Why it stopped, if the provider said.
    pub finish_reason: Option<FinishReason>,
    /// `None` when the provider reported no usage.
    pub usage: Option<TokenUsage>,
}

/// Receives text deltas as the model produces them.
pub trait TokenSink: Send {
    /// Takes the next piece of text.
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

/// A model behind one API (OpenAI-compatible, Bedrock), or several chosen per request.
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

    /// How the models behind it have been doing, for fallback: the container's
    /// [`ModelHealth`] ([`Providers`]); `None` where nothing keeps count.
    fn health(&self) -> Option<&ModelHealth> {
        None
    }
}

/// What the clients of a deployment are built with (from `LlmSettings` and the retry policy).
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// The OpenAI-compatible API's base URL, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Ask for token usage in the stream.
    pub stream_usage: bool,
    /// Secret holding the OpenAI-compatible API's key; `None` for keyless servers.
    pub key_secret: Option<String>,
    /// End Bedrock requests' system prompt with a prompt-cache point.
    pub bedrock_prompt_cache: bool,
    /// Retries before the first byte of an answer.
    pub retry: RetryPolicy,
}

/// Builds the client of a provider: the `llm` crate's `Clients` in the functions that call
/// models; [`NoClients`] in those that never do (mcp-server).
pub trait LlmClients: Send + Sync {
    /// The client of `provider`; `Error::Config` where this function has none.
    fn connect(
        &self,
        provider: Provider,
        settings: &ClientSettings,
        secrets: &Arc<SecretsCache>,
        http: &reqwest::Client,
    ) -> Result<Arc<dyn LlmProvider>>;
}

/// No model clients, for a function that never calls a model (mcp-server): each provider
/// "connects" to [`NoModel`], which refuses every call.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoClients;

impl LlmClients for NoClients {
    fn connect(
        &self,
        provider: Provider,
        _: &ClientSettings,
        _: &Arc<SecretsCache>,
        _: &reqwest::Client,
    ) -> Result<Arc<dyn LlmProvider>> {
        Ok(Arc::new(NoModel(provider)))
    }
}

/// A provider of a function built without model clients: every call is a configuration
/// error that names it.
#[derive(Debug, Clone, Copy)]
pub struct NoModel(pub Provider);

#[async_trait]
impl LlmProvider for NoModel {
    async fn complete(
        &self,
        _: &CompletionRequest,
        _: Instant,
        _: &mut dyn TokenSink,
    ) -> Result<Completion> {
        Err(crate::Error::Config(format!(
            "this function has no {} client: it does not call models",
            self.0
        )))
    }
}
