//! The SSE events of `POST /chat` (ARCHITECTURE.md "HTTP contracts") and the emitter that
//! queues them for the response stream.
//!
//! The turn never waits for the client: events go into an unbounded queue drained by a
//! forwarder task, so a slow or vanished client cannot stall or abort the tool pipeline.

use serde::Serialize;
use serde_json::{Map, Value, json};
use shared::domain::session::SessionState;
use shared::domain::tool_call::ToolName;
use shared::tools::pipeline::{CallStatus, EventSink, PipelineEvent};
use tokio::sync::mpsc;

#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    Init {
        chat_id: String,
        created: bool,
    },
    ToolStarted {
        tool: ToolName,
        job_id: String,
        deduped: bool,
        /// True when the call went to the tool queue (`status: "queued"`).
        queued: bool,
    },
    ToolResult {
        tool: ToolName,
        job_id: Option<String>,
        status: CallStatus,
        metadata: Map<String, Value>,
    },
    AssistantToken {
        content: String,
    },
    Final {
        content: String,
        // Boxed: the state is large and the event rare.
        session_state: Box<SessionState>,
        tool_result: Value,
        /// `STACK_NOTICE`, e.g. that the local stack answers with fakes.
        notice: Option<String>,
    },
    Error {
        code: String,
        message: String,
    },
    Debug {
        kind: String,
        payload: Value,
    },
    Done,
}

#[derive(Serialize)]
struct FinalMessage<'a> {
    role: &'static str,
    content: &'a str,
}

impl ChatEvent {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Init { .. } => "init",
            Self::ToolStarted { .. } => "tool_started",
            Self::ToolResult { .. } => "tool_result",
            Self::AssistantToken { .. } => "assistant_token",
            Self::Final { .. } => "final",
            Self::Error { .. } => "error",
            Self::Debug { .. } => "debug",
            Self::Done => "done",
        }
    }

    pub fn data(&self) -> Value {
        match self {
            Self::Init { chat_id, created } => json!({ "chat_id": chat_id, "created": created }),
            Self::ToolStarted {
                tool,
                job_id,
                deduped,
                queued,
            } => json!({
                "tool": tool,
                "job_id": job_id,
                "deduped": deduped,
                "status": if *queued { "queued" } else { "running" },
            }),
            Self::ToolResult {
                tool,
                job_id,
                status,
                metadata,
            } => json!({ "tool": tool, "job_id": job_id, "status": status, "metadata": metadata }),
            Self::AssistantToken { content } => json!({ "content": content }),
            Self::Final {
                content,
                session_state,
                tool_result,
                notice,
            } => {
                let mut data = json!({
                    "message": FinalMessage { role: "assistant", content },
                    "session_state": session_state,
                    "tool_result": tool_result,
                });
                if let Some(notice) = notice {
                    data["metadata"] = json!({ "notice": notice });
                }
                data
            }
            Self::Error { code, message } => json!({ "code": code, "message": message }),
            Self::Debug { kind, payload } => json!({ "type": kind, "payload": payload }),
            Self::Done => json!({}),
        }
    }

    /// `event: NAME\ndata: JSON\n\n`. JSON text has no raw newlines, so one data line suffices.
    pub fn to_sse(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.name(), self.data())
    }
}

/// Queues events for the client. Cloning shares the queue.
#[derive(Clone)]
pub struct Emitter {
    tx: mpsc::UnboundedSender<ChatEvent>,
    debug: bool,
}

impl Emitter {
    pub fn new(debug: bool) -> (Self, mpsc::UnboundedReceiver<ChatEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx, debug }, rx)
    }

    pub fn debug_enabled(&self) -> bool {
        self.debug
    }

    /// Queues `event`; debug events only when the request asked for them. A gone client
    /// is not an error here: the turn finishes regardless.
    pub fn emit(&self, event: ChatEvent) {
        if matches!(event, ChatEvent::Debug { .. }) && !self.debug {
            return;
        }
        let _ = self.tx.send(event);
    }

    pub fn debug(&self, kind: &str, payload: impl FnOnce() -> Value) {
        if self.debug {
            self.emit(ChatEvent::Debug {
                kind: kind.to_owned(),
                payload: payload(),
            });
        }
    }

    pub fn error(&self, code: &str, message: impl Into<String>) {
        self.emit(ChatEvent::Error {
            code: code.to_owned(),
            message: message.into(),
        });
    }
}

impl EventSink for Emitter {
    fn event(&self, event: PipelineEvent) {
        match event {
            PipelineEvent::Started {
                tool,
                job_id,
                deduped,
                queued,
            } => self.emit(ChatEvent::ToolStarted {
                tool,
                job_id,
                deduped,
                queued,
            }),
            PipelineEvent::Finished {
                tool,
                job_id,
                status,
                metadata,
            } => self.emit(ChatEvent::ToolResult {
                tool,
                job_id,
                status,
                metadata,
            }),
            PipelineEvent::Debug { kind, payload } => self.debug(kind, || payload),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_event_and_one_data_line() {
        let event = ChatEvent::AssistantToken {
            content: "line one\nline two".into(),
        };
        assert_eq!(
            event.to_sse(),
            "event: assistant_token\ndata: {\"content\":\"line one\\nline two\"}\n\n"
        );
        assert_eq!(ChatEvent::Done.to_sse(), "event: done\ndata: {}\n\n");
    }

    #[test]
    fn debug_events_only_when_asked() {
        let (quiet, mut rx) = Emitter::new(false);
        quiet.debug("x", || json!({}));
        quiet.emit(ChatEvent::Done);
        assert_eq!(rx.try_recv().ok(), Some(ChatEvent::Done));
        let (loud, mut rx) = Emitter::new(true);
        loud.debug("x", || json!({"a": 1}));
        assert_eq!(rx.try_recv().ok().map(|e| e.name()), Some("debug"));
    }
}
