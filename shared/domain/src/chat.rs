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
    pub id: String,
    #[serde(skip_serializing)]
    pub owner_id: String,
    pub session_state: SessionState,
    pub version: u64,
    /// How many messages the chat has: the next message's `seq`.
    #[serde(default)]
    pub message_count: u64,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call as the LLM requested it in an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageToolCall {
    /// The LLM's id for the call (echoed by the tool message that answers it).
    pub id: String,
    pub name: String,
    /// The arguments exactly as the LLM produced them (a JSON text).
    pub arguments: String,
}

/// A message to append to a chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    pub role: Role,
    pub content: String,
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
    pub chat_id: String,
    /// The start of the chat's first user message (at most 80 characters); `None` before one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub message_count: u64,
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
    pub id: String,
    pub chat_id: String,
    #[serde(default)]
    pub seq: u64,
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ui: Vec<UiElement>,
    /// An answer the user stopped: what the assistant had said until then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// An answer: the language of its turn's texts for the user (`en`, `de`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Locale>,
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "DateTimeSchema")]
    pub created_at: OffsetDateTime,
}
