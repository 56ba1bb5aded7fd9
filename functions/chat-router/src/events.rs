//! The SSE events of `POST /chat` (docs/api.md) and the emitter that
//! queues them for the response stream.
//!
//! The turn never waits for the client: events go into an unbounded queue drained by a
//! forwarder task, so a slow or vanished client cannot stall or abort the tool pipeline.

use agent::{EventSink, TurnEvent};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[derive(Serialize)]
struct FinalMessage<'a> {
    role: &'static str,
    content: &'a str,
}

/// The event's `data` object, as the HTTP contract spells it.
pub fn data(event: &TurnEvent) -> Value {
    match event {
        TurnEvent::Init {
            chat_id,
            created,
            turn_id,
        } => json!({ "chat_id": chat_id, "created": created, "turn_id": turn_id }),
        TurnEvent::ToolStarted {
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
        TurnEvent::ToolProgress {
            tool,
            job_id,
            message,
        } => json!({ "tool": tool, "job_id": job_id, "message": message }),
        TurnEvent::ToolResult {
            tool,
            job_id,
            status,
            metadata,
            result,
        } => json!({
            "tool": tool, "job_id": job_id, "status": status, "metadata": metadata,
            "result": result,
        }),
        TurnEvent::ToolRefused {
            tool,
            status,
            reason,
            message,
            metadata,
        } => {
            let mut metadata = metadata.clone();
            metadata.insert("reason".into(), json!(reason));
            metadata.insert("message".into(), json!(message));
            json!({ "tool": tool, "job_id": null, "status": status, "metadata": metadata })
        }
        TurnEvent::Token { content } => json!({ "content": content }),
        TurnEvent::Final {
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
        TurnEvent::Error { code, message } => json!({ "code": code, "message": message }),
        TurnEvent::Handoff { from, to, reason } => {
            json!({ "from": from, "to": to, "reason": reason })
        }
        TurnEvent::Ui(element) => json!(element),
        TurnEvent::ApprovalRequired(request) => json!(request),
        TurnEvent::Debug { kind, payload } => json!({ "type": kind, "payload": payload }),
        TurnEvent::Done => json!({}),
    }
}

/// `event: NAME\ndata: JSON\n\n`. JSON text has no raw newlines, so one data line suffices.
pub fn to_sse(event: &TurnEvent) -> String {
    format!("event: {}\ndata: {}\n\n", event.name(), data(event))
}

/// Queues a turn's events for the response stream. Cloning shares the queue.
#[derive(Clone)]
pub struct Emitter {
    tx: mpsc::UnboundedSender<TurnEvent>,
    debug: bool,
}

impl Emitter {
    pub fn new(debug: bool) -> (Self, mpsc::UnboundedReceiver<TurnEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx, debug }, rx)
    }
}

impl EventSink for Emitter {
    /// Queues `event`; debug events only when the request asked for them. A gone client
    /// is not an error here: the turn finishes regardless.
    fn emit(&self, event: TurnEvent) {
        if matches!(event, TurnEvent::Debug { .. }) && !self.debug {
            return;
        }
        let _ = self.tx.send(event);
    }

    fn wants_debug(&self) -> bool {
        self.debug
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_event_and_one_data_line() {
        let event = TurnEvent::Token {
            content: "line one\nline two".into(),
        };
        assert_eq!(
            to_sse(&event),
            "event: assistant_token\ndata: {\"content\":\"line one\\nline two\"}\n\n"
        );
        assert_eq!(to_sse(&TurnEvent::Done), "event: done\ndata: {}\n\n");
    }

    #[test]
    fn debug_events_only_when_asked() {
        let (quiet, mut rx) = Emitter::new(false);
        agent::events::debug(&quiet, "x", || json!({}));
        quiet.emit(TurnEvent::Done);
        assert_eq!(rx.try_recv().ok(), Some(TurnEvent::Done));
        let (loud, mut rx) = Emitter::new(true);
        agent::events::debug(&loud, "x", || json!({"a": 1}));
        assert_eq!(rx.try_recv().ok().map(|e| e.name()), Some("debug"));
    }
}
