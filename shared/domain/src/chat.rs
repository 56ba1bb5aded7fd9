//! Chats and their messages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::flight::Locale;
use super::schema::DateTimeSchema;
use super::session::SessionState;
use super::ui::UiElement;

/// A chat: its owner, its session state and the version that orders changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chat {
    /// The chat's id, a ULID.
    pub id: String,
    /// The user who owns the chat; never serialised.
    #[serde(skip_serializing)]
    pub owner_id: String,
    /// What the chat's turns keep between messages.
    pub session_state: SessionState,
    /// Raised by every write of the session state; writes are conditioned on it.
    pub version: u64,
    /// How many messages the chat has: the next message's `seq`.
    #[serde(default)]
    pub message_count: u64,
    /// When the chat was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When the session state or the title last changed.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions to the model; the history a turn sends leaves stored ones out (the
    /// system prompt comes from the agent profile).
    System,
    /// The user.
    User,
    /// The model: an answer, or tool calls it requested.
    Assistant,
    /// A tool's result, answering one of the model's tool calls.
    Tool,
}

/// A tool call as the LLM requested it in an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageToolCall {
    /// The LLM's id for the call (echoed by the tool message that answers it).
    pub id: String,
    /// The tool the LLM called, by name.
    pub name: String,
    /// The arguments exactly as the LLM produced them (a JSON text).
    pub arguments: String,
}

/// A message to append to a chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its text; for a tool message, the result as the model is given it.
    pub content: String,
    /// For assistant messages: the tool calls the model requested.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageToolCall>,
    /// For tool messages: the LLM's id of the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For tool messages: the ledger's id of the tool call, linking to the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_call_id: Option<String>,
    /// For tool messages: the call finishes in the background (queued, or a retry is
    /// scheduled), so readers look up its final result in the ledger.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// For the turn's answer: what the client renders with it (quick replies, flight cards,
    /// an approval box), as the turn's `ui` events sent them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ui: Vec<UiElement>,
    /// For the turn's answer: the user stopped the turn, and this is what it had said.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// For the turn's answer: the language of the turn's texts for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Locale>,
}

impl NewMessage {
    /// A message the user wrote.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            ledger_call_id: None,
            background: false,
            ui: Vec::new(),
            stopped: false,
            language: None,
        }
    }

    /// The model's message: its text and the tool calls it requested.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<MessageToolCall>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
            ledger_call_id: None,
            background: false,
            ui: Vec::new(),
            stopped: false,
            language: None,
        }
    }

    /// A tool's result, answering the LLM's call `tool_call_id`; `ledger_call_id` links it to
    /// the call's record in the ledger.
    pub fn tool(
        tool_call_id: impl Into<String>,
        ledger_call_id: Option<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.into()),
            ledger_call_id,
            background: false,
            ui: Vec::new(),
            stopped: false,
            language: None,
        }
    }

    /// The answer with the client-rendered elements of its turn.
    pub fn with_ui(mut self, ui: Vec<UiElement>) -> Self {
        self.ui = ui;
        self
    }

    /// The answer written in `language`.
    pub fn in_language(mut self, language: Locale) -> Self {
        self.language = Some(language);
        self
    }

    /// Marks an answer cut short by the user's stop.
    pub fn stopped(mut self) -> Self {
        self.stopped = true;
        self
    }

    /// Marks a tool message whose call finishes in the background.
    pub fn in_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }
}

/// A chat as its owner's chat list shows it (`GET /chats`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatSummary {
    /// The chat's id.
    pub chat_id: String,
    /// The start of the chat's first user message (at most 80 characters); `None` before one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// How many messages the chat has, of every role.
    pub message_count: u64,
    /// When the chat was created (UTC, RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "DateTimeSchema")]
    pub created_at: OffsetDateTime,
    /// When a turn last wrote to it (UTC, RFC 3339).
    pub active_at: String,
}

/// The characters of a chat's title, taken from its first user message.
pub const TITLE_CHARS: usize = 80;

/// A stored message. `seq` is its place in the chat (0, 1, 2, … as written), assigned by
/// the write that stores it, so order never depends on a host's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// The message's id: a ULID that sorts in the order messages were written.
    pub id: String,
    /// The chat the message belongs to.
    pub chat_id: String,
    /// Its place in the chat (0, 1, 2, … as written).
    #[serde(default)]
    pub seq: u64,
    /// Who wrote it.
    pub role: Role,
    /// Its text; for a tool message, the result as the model is given it.
    pub content: String,
    /// For assistant messages: the tool calls the model requested.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageToolCall>,
    /// For tool messages: the LLM's id of the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For tool messages: the ledger's id of the tool call, linking to the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_call_id: Option<String>,
    /// For tool messages: the call finishes in the background, so its final result is in
    /// the ledger.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// For the turn's answer: what the client renders with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ui: Vec<UiElement>,
    /// An answer the user stopped: what the assistant had said until then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// An answer: the language of its turn's texts for the user (`en`, `de`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Locale>,
    /// When the message was stored (UTC, RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "DateTimeSchema")]
    pub created_at: OffsetDateTime,
}
