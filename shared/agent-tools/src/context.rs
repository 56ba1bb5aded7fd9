//! What a tool call runs with: who it is for, the chat's state, the user's date and
//! language, its deadline, and where it reports progress.

use std::sync::Arc;
use std::time::Instant;

use shared::domain::flight::Locale;
use shared::domain::memory::UserMemory;
use shared::domain::session::SessionState;

/// Who a tool runs for, and until when.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Whose call it is (the token's subject).
    pub user_id: String,
    /// The chat the call belongs to.
    pub chat_id: String,
    /// The chat's state when the turn started (the last search, pending requests, picks).
    pub session_state: SessionState,
    /// What the user asked to be remembered, as it was when the turn started.
    pub memory: Arc<UserMemory>,
    /// The user's date (in their time zone, else UTC): dates before it are in the past.
    pub today: time::Date,
    /// The language the tool answers the user in.
    pub locale: Locale,
    /// The tool must answer before this instant; the pipeline also enforces it.
    pub deadline: Instant,
    /// Where a long-running tool tells the user how far it got (`tool_progress`).
    pub progress: Progress,
    /// The X-Ray trace of the invocation this call belongs to (`X-Amzn-Trace-Id`), passed
    /// on to the functions a tool calls so one chat turn is one trace.
    pub trace_header: Option<String>,
}

/// A running tool's progress reports, in the user's language; the pipeline forwards them
/// as `tool_progress` events. The default goes nowhere (the worker has no client).
#[derive(Debug, Clone, Default)]
pub struct Progress(Option<tokio::sync::mpsc::UnboundedSender<String>>);

impl Progress {
    /// A reporter and the receiving end the pipeline reads.
    pub fn channel() -> (Self, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (Self(Some(tx)), rx)
    }

    /// Tells the user how far the call got (dropped when nobody listens).
    pub fn report(&self, message: impl Into<String>) {
        if let Some(tx) = &self.0 {
            // A closed channel means the call is over: nobody to tell.
            let _ = tx.send(message.into());
        }
    }
}
